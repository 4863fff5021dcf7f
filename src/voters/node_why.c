/* node_why.c: what a master says of itself to the voters above (see
 * node.h), read from the state the other node files keep: the detail of a
 * vote's why (node_why: down, busy, unacked, quarantined, unsupported),
 * per-request warnings at a limited rate (node_warn), and the duplicate
 * judgement (node_same_server: two nodes connected to one server, by
 * address or run_id).  Apart from the concepts they describe, since each
 * reads several of them and none changes any. */
#include "voters/node_int.h"

#include <stdio.h>
#include <string.h>

#include "redlock.h"

int node_same_server(const node_t *a, const node_t *b, char *how, size_t how_len) {
  char scratch[1];
  if (how == NULL) {
    how = scratch;
    how_len = sizeof scratch;
  }
  if (a->state != NODE_READY || b->state != NODE_READY)
    return 0;
  if (a->addr.kind == NODE_ADDR_UNIX && b->addr.kind == NODE_ADDR_UNIX &&
      strcmp(a->addr.path, b->addr.path) == 0) {
    snprintf(how, how_len, "the same socket %s", a->addr.path);
    return 1;
  }
  const link_t *la = &a->link, *lb = &b->link;
  if (la->has_ip_key && lb->has_ip_key && a->addr.port == b->addr.port &&
      resolve_key_equal(&la->ip_key, &lb->ip_key)) {
    snprintf(how, how_len,
             strchr(la->ip, ':') != NULL ? "the same address [%s]:%d" : "the same address %s:%d",
             la->ip, a->addr.port);
    return 1;
  }
  if (a->server.run_id[0] != '\0' && strcmp(a->server.run_id, b->server.run_id) == 0) {
    snprintf(how, how_len, "the same run_id %s", a->server.run_id);
    return 1;
  }
  return 0;
}

void node_warn(node_t *node, const char *what, const char *detail) {
  if (node->env->log->cb == NULL)
    return;
  (void)log_limited(node->env->log, &node->warn_limit, node_now_ns(node), REDLOCK_LOG_WARN,
                    "master %s: %s%s%s", node->addr.label, what, detail ? ": " : "",
                    detail ? detail : "");
}

static void node_busy_why(const node_t *node, char *buf, size_t size) {
  if (!node->pipe.overloaded) {
    snprintf(buf, size, "%s", "");
    return;
  }
  snprintf(buf, size, "queue full: %u requests, %zu bytes",
           node->pipe.inflight + node->pipe.backlog_len, node->pipe.queued_bytes);
}

void node_why(const node_t *node, int why, char *buf, size_t size) {
  if (size == 0)
    return;
  if (why == WHY_DOWN) {
    size_t n = strnlen(node->down_why, sizeof node->down_why);
    n = n < size ? n : size - 1;
    memcpy(buf, node->down_why, n);
    buf[n] = '\0';
  } else if (why == WHY_BUSY)
    node_busy_why(node, buf, size);
  else if (why == WHY_UNACKED)
    snprintf(buf, size, "%s", node->acks.ack_why);
  else if (why == WHY_QUARANTINED)
    quarantine_why(&node->server.quarantine, QUARANTINE_VIEW_AS_IS, node_now_ns(node), buf, size);
  else if (why == WHY_NOTSUP)
    snprintf(buf, size, "%s", node->server.noscripts_why);
  else
    buf[0] = '\0';
}
