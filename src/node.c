/* node.c: one Redis master's connection life cycle (see node.h). */
#include "node.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "conn.h"
#include "clock.h"
#include "quorum.h"
#include "scripts.h"

static void node_connect(node_t *node);

int node_init(node_t *node, struct redlock *client, unsigned index, const node_addr_t *addr) {
  memset(node, 0, sizeof *node);
  node->client = client;
  node->index = index;
  node->state = NODE_DOWN;
  list_init(&node->missed_releases);
  return node_addr_copy(&node->addr, addr);
}

void node_free(node_t *node) {
  while (!list_empty(&node->missed_releases)) {
    missed_release_t *missed = list_entry(node->missed_releases.next, missed_release_t, link);
    list_remove(&missed->link);
    free(missed);
  }
  node_addr_clear(&node->addr);
}

int node_is_quarantined(const node_t *node, uint64_t now_ns) {
  return node->quarantine_until_ns != 0 && now_ns < node->quarantine_until_ns;
}

void node_warn(node_t *node, const char *what, const char *detail) {
  redlock_t *client = node->client;
  if (client->opts.log_cb == NULL)
    return;
  uint64_t now = clock_now_ns();
  if (now - node->last_warn_ns >= 1000000000u || node->last_warn_ns == 0) {
    if (node->suppressed_warnings > 0)
      client_log(client, REDLOCK_LOG_WARN, "master %s: %s%s%s (%u similar messages suppressed)",
                 node->addr.label, what, detail ? ": " : "", detail ? detail : "",
                 node->suppressed_warnings);
    else
      client_log(client, REDLOCK_LOG_WARN, "master %s: %s%s%s", node->addr.label, what,
                 detail ? ": " : "", detail ? detail : "");
    node->last_warn_ns = now;
    node->suppressed_warnings = 0;
  } else {
    node->suppressed_warnings++;
    client_log(client, REDLOCK_LOG_DEBUG, "master %s: %s%s%s", node->addr.label, what,
               detail ? ": " : "", detail ? detail : "");
  }
}

/* First connection attempt over, whichever way: the client's startup counts it. */
static void node_attempt_finished(node_t *node) {
  if (!node->first_attempt_done) {
    node->first_attempt_done = 1;
    client_node_started(node->client);
  }
}

static void backoff_timer_cb(uv_timer_t *timer) {
  node_t *node = timer->data;
  if (node->state == NODE_DOWN)
    node_connect(node);
}

/* Detaches and frees the hiredis context (its pending callbacks get NULL
 * replies now, or after the running callback when called from one). */
static void node_release_context(node_t *node) {
  redisAsyncContext *ac = node->ac;
  node->ac = NULL;
  conn_close(ac);
}

static void node_schedule_reconnect(node_t *node) {
  redlock_t *client = node->client;
  node->state = NODE_DOWN;
  node->handshake_left = 0;
  uint64_t delay = quorum_backoff_ms(node->failures, NODE_BACKOFF_BASE_MS, NODE_BACKOFF_CAP_MS,
                                     client_random(client));
  if (node->failures < 32)
    node->failures++;
  uv_timer_stop(&node->timer);
  uv_timer_start(&node->timer, backoff_timer_cb, delay, 0);
  client_log(client, REDLOCK_LOG_DEBUG, "master %s: reconnecting in %llu ms", node->addr.label,
             (unsigned long long)delay);
}

/* A connection attempt or a live connection failed: drop it, try again later. */
static void node_fail(node_t *node, int level, const char *what, const char *detail) {
  if (node->state == NODE_CLOSED)
    return;
  if (node->failures == 0 || level >= REDLOCK_LOG_ERROR)
    client_log(node->client, level, "master %s: %s%s%s", node->addr.label, what,
               detail ? ": " : "", detail ? detail : "");
  else
    client_log(node->client, REDLOCK_LOG_DEBUG, "master %s: %s%s%s (failure %u)",
               node->addr.label, what, detail ? ": " : "", detail ? detail : "", node->failures);
  node_release_context(node);
  node_schedule_reconnect(node);
  node_attempt_finished(node);
}

static void connect_timer_cb(uv_timer_t *timer) {
  node_t *node = timer->data;
  char detail[64];
  snprintf(detail, sizeof detail, "no answer within %u ms",
           node->client->opts.connect_timeout_ms);
  node_fail(node, REDLOCK_LOG_WARN, "connect timed out", detail);
}

static void replay_reply_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  (void)ac;
  node_request_done(privdata, reply != NULL);
}

/* Releases this master missed while it was unreachable go out now: a SET
 * that was still in its socket buffer (or applied after we gave up on it)
 * would otherwise hold the key for a whole TTL.  Compare-and-delete is safe
 * to repeat at any time: it only deletes our own value. */
static void node_replay_releases(node_t *node) {
  unsigned sent = 0;
  while (!list_empty(&node->missed_releases)) {
    missed_release_t *missed = list_entry(node->missed_releases.next, missed_release_t, link);
    list_remove(&missed->link);
    if (node_send(node, missed->cmd, missed->len, replay_reply_cb, node) == 0)
      sent++;
    free(missed);
  }
  node->n_missed_releases = 0;
  if (sent > 0)
    client_log(node->client, REDLOCK_LOG_INFO, "master %s: replayed %u release(s) it missed",
               node->addr.label, sent);
}

void node_defer_release(node_t *node, const char *cmd, size_t len) {
  if (node->state == NODE_CLOSED)
    return;
  if (node->n_missed_releases >= NODE_MAX_MISSED_RELEASES) {
    missed_release_t *oldest = list_entry(node->missed_releases.next, missed_release_t, link);
    list_remove(&oldest->link);
    free(oldest);
    node->n_missed_releases--;
  }
  missed_release_t *missed = malloc(sizeof *missed + len);
  if (missed == NULL)
    return; /* best effort: the key expires at its TTL anyway */
  missed->len = len;
  memcpy(missed->cmd, cmd, len);
  list_insert_tail(&node->missed_releases, &missed->link);
  node->n_missed_releases++;
}

static void node_ready(node_t *node) {
  uv_timer_stop(&node->timer);
  node->state = NODE_READY;
  node->failures = 0;
  node_replay_releases(node);
  client_log(node->client, REDLOCK_LOG_INFO, "master %s: connected", node->addr.label);
  node_attempt_finished(node);
}

static void handshake_step_done(node_t *node) {
  if (--node->handshake_left == 0)
    node_ready(node);
}

/* A handshake reply belongs to the current attempt only if it came on the
 * current context; a reply error fails the attempt. */
static int handshake_reply_ok(redisAsyncContext *ac, redisReply *reply, node_t *node,
                              const char *step) {
  if (node == NULL || node->ac != ac || node->state != NODE_CONNECTING || reply == NULL)
    return 0;
  if (reply->type == REDIS_REPLY_ERROR) {
    char what[64];
    snprintf(what, sizeof what, "%s refused", step);
    /* Wrong credentials or a misconfigured master will not fix themselves. */
    node_fail(node, REDLOCK_LOG_ERROR, what, reply->str);
    return 0;
  }
  return 1;
}

static void auth_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  if (handshake_reply_ok(ac, r, privdata, "AUTH"))
    handshake_step_done(privdata);
}

static void select_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  if (handshake_reply_ok(ac, r, privdata, "SELECT"))
    handshake_step_done(privdata);
}

static void script_load_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  node_t *node = privdata;
  redisReply *reply = r;
  if (!handshake_reply_ok(ac, reply, node, "SCRIPT LOAD"))
    return;
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *script = script_get((script_id_t)id);
    if (reply->type == REDIS_REPLY_STRING && reply->len == 40 &&
        memcmp(reply->str, script->sha1, 40) == 0) {
      handshake_step_done(node);
      return;
    }
  }
  node_fail(node, REDLOCK_LOG_ERROR, "SCRIPT LOAD returned an unexpected SHA1", NULL);
}

static void info_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  node_t *node = privdata;
  redisReply *reply = r;
  if (!handshake_reply_ok(ac, reply, node, "INFO server"))
    return;
  redlock_t *client = node->client;
  info_server_t info;
  if ((reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) ||
      info_parse_server(reply->str, reply->len, &info) != 0) {
    node_fail(node, REDLOCK_LOG_ERROR, "INFO server reply lacks run_id or uptime_in_seconds",
              NULL);
    return;
  }
  uint64_t now = clock_now_ns();
  int restarted = node->run_id[0] != '\0' && strcmp(node->run_id, info.run_id) != 0;
  if (restarted)
    client_log(client, REDLOCK_LOG_WARN, "master %s restarted (run_id changed; up %lld s)",
               node->addr.label, (long long)info.uptime_s);
  memcpy(node->run_id, info.run_id, sizeof node->run_id);
  node->quarantine_until_ns = 0;
  if (client->opts.quarantine) {
    uint64_t max_ttl_ns = (uint64_t)client->opts.max_ttl_ms * 1000000u;
    /* Redis reports uptime as a difference of whole wall-clock seconds, so a
     * master 0.2 s old can say 1: take the age to be one second less than
     * reported, so that the quarantine can only come out longer. */
    uint64_t up_ns = info.uptime_s > 0 ? (uint64_t)(info.uptime_s - 1) * 1000000000u : 0;
    if (up_ns < max_ttl_ns) {
      node->quarantine_until_ns = now + (max_ttl_ns - up_ns);
      client_log(client, REDLOCK_LOG_WARN,
                 "master %s started %lld s ago: its votes do not count for another %llu ms "
                 "(restart quarantine = max TTL %u ms)",
                 node->addr.label, (long long)info.uptime_s,
                 (unsigned long long)((max_ttl_ns - up_ns) / 1000000u), client->opts.max_ttl_ms);
    }
  }
  handshake_step_done(node);
}

static void on_connect(const redisAsyncContext *ac, int status) {
  node_t *node = ac->data;
  if (node == NULL || node->ac != ac)
    return;
  if (status != REDIS_OK) {
    /* hiredis frees the context after this callback returns. */
    char detail[128];
    snprintf(detail, sizeof detail, "%s", ac->errstr[0] ? ac->errstr : "connection failed");
    ((redisAsyncContext *)ac)->data = NULL;
    node->ac = NULL;
    node_fail(node, REDLOCK_LOG_WARN, "cannot connect", detail);
  }
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  node_t *node = ac->data;
  (void)status;
  if (node == NULL || node->ac != ac)
    return;
  /* hiredis frees the context after this callback returns. */
  char detail[128];
  snprintf(detail, sizeof detail, "%s", ac->errstr[0] ? ac->errstr : "closed by the server");
  node->ac = NULL;
  node_fail(node, REDLOCK_LOG_WARN,
            node->state == NODE_READY ? "connection lost" : "connection closed during handshake",
            detail);
}

static void node_connect(node_t *node) {
  redlock_t *client = node->client;
  char err[128];
  redisAsyncContext *ac =
      conn_open(&node->addr, client->loop, &client->flusher, node, on_connect, on_disconnect, err,
                sizeof err);
  if (ac == NULL) {
    node_fail(node, REDLOCK_LOG_WARN, "cannot connect", err);
    return;
  }
  node->ac = ac;
  node->state = NODE_CONNECTING;
  node->handshake_left = 0;

  /* The handshake is pipelined behind the TCP connect: one round trip. */
  const node_addr_t *addr = &node->addr;
  int ok = 1;
  int auth = conn_queue_auth(ac, addr, auth_reply_cb, node);
  ok &= auth >= 0;
  node->handshake_left += auth > 0 ? (unsigned)auth : 0;
  if (addr->db != 0) {
    ok &= redisAsyncCommand(ac, select_reply_cb, node, "SELECT %d", addr->db) == REDIS_OK;
    node->handshake_left++;
  }
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *script = script_get((script_id_t)id);
    ok &= redisAsyncCommand(ac, script_load_reply_cb, node, "SCRIPT LOAD %b", script->body,
                            script->body_len) == REDIS_OK;
    node->handshake_left++;
  }
  ok &= redisAsyncCommand(ac, info_reply_cb, node, "INFO server") == REDIS_OK;
  node->handshake_left++;
  if (!ok) {
    node_fail(node, REDLOCK_LOG_ERROR, "cannot connect", "cannot queue the handshake");
    return;
  }
  uv_timer_stop(&node->timer);
  uv_timer_start(&node->timer, connect_timer_cb, client->opts.connect_timeout_ms, 0);
}

void node_start(node_t *node) {
  uv_timer_init(node->client->loop, &node->timer);
  node->timer.data = node;
  node->client->handles_open++;
  node_connect(node);
}

int node_send(node_t *node, const char *cmd, size_t len, node_reply_fn fn, void *privdata) {
  if (node->state != NODE_READY || node->ac == NULL)
    return NODE_SEND_DOWN;
  if (node->inflight >= NODE_MAX_INFLIGHT)
    return NODE_SEND_BUSY;
  if (redisAsyncFormattedCommand(node->ac, fn, privdata, cmd, len) != REDIS_OK)
    return NODE_SEND_DOWN;
  if (node->inflight++ == 0)
    node->progress_ns = clock_now_ns(); /* idle until now: the wait starts here */
  return 0;
}

void node_request_done(node_t *node, int got_reply) {
  if (node->inflight > 0)
    node->inflight--;
  if (got_reply && node->inflight > 0)
    node->progress_ns = clock_now_ns();
}

void node_read_pending(node_t *node) {
  if (node->state == NODE_READY && node->inflight > 0)
    conn_read_now(node->ac);
}

void node_drop_if_hung(node_t *node) {
  uint64_t limit_ns =
      (uint64_t)NODE_HUNG_REQUEST_TIMEOUTS * node->client->opts.request_timeout_ms * 1000000u;
  uint64_t now_ns = clock_now_ns(); /* progress_ns may have been set moments ago */
  if (node->state != NODE_READY || node->inflight == 0 || now_ns < node->progress_ns ||
      now_ns - node->progress_ns < limit_ns)
    return;
  char detail[96];
  snprintf(detail, sizeof detail, "no reply for %llu ms with %u requests waiting",
           (unsigned long long)((now_ns - node->progress_ns) / 1000000u), node->inflight);
  node->failures = 0;
  node_fail(node, REDLOCK_LOG_WARN, "master not answering; reconnecting", detail);
}

static void node_timer_closed(uv_handle_t *handle) {
  node_t *node = handle->data;
  client_handle_closed(node->client);
}

void node_shutdown(node_t *node) {
  if (node->state == NODE_CLOSED)
    return;
  node->state = NODE_CLOSED;
  node_release_context(node);
  uv_timer_stop(&node->timer);
  uv_close((uv_handle_t *)&node->timer, node_timer_closed);
}
