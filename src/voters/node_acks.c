/* node_acks.c: durability acks and the role check (see node.h).
 *
 * A write that asks for an ack is written as usual, and one ack command
 * (WAIT / WAITAOF) follows the last such write of each write of the
 * connection's output (once per loop turn: conn.c's flusher; node_queue_ack).
 * A server answers WAIT once the replicas have the connection's replication
 * offset as of its last write before the WAIT, so one ack covers every write
 * before it on its connection; and it stops reading that connection while
 * the WAIT blocks, so one ack per write would let through one write per
 * replica round trip.
 *
 * Each such request waits on node->acks.acks_waiting; its write's reply is kept
 * (req->held) until the ack's reply comes, which settles every request whose
 * reply came before it (the ack's batch: replies come in order, so those are
 * the list's head).  req->fn then runs once, with the write's reply, and its
 * vote counts only when that reply is a yes and the batch's ack reached what
 * was asked.  Its time, for the vote and for the validity, is the ack's
 * arrival, later than its own reply's: validity can only shrink
 * (docs/safety.md §5b).
 *
 * The role check (node_t.acks.check_role) rides the same batches: INFO
 * replication ahead of the ack, whose votes count only while the server is
 * the master of the handshake's replication id. */
#include "voters/node_int.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "proto/reply.h"
#include "redlock.h"

/* INFO replication, the role check after a batch (node_t.acks.check_role):
 * the same bytes for every node. */
static const char role_cmd[] = "*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n";
#define ROLE_CMD_LEN (sizeof role_cmd - 1)

/* The durability ack is formatted once, with the smaller of its wait and the
 * request timeout (node_init, node.h). */
status_t node_acks_init(node_t *node) {
  const ack_spec_t *ack = &node->addr.ack;
  if (ack->mode != ACK_NONE) {
    uint32_t t = node->env->request_timeout_ms;
    if (ack->timeout_ms != 0 && ack->timeout_ms < t)
      t = ack->timeout_ms;
    int n = ack->mode == ACK_WAIT
                ? redisFormatCommand(&node->acks.ack_cmd, "WAIT %d %u", ack->replicas, t)
                : redisFormatCommand(&node->acks.ack_cmd, "WAITAOF %d %d %u", ack->local,
                                     ack->replicas, t);
    if (n < 0)
      return ST_ENOMEM;
    node->acks.ack_cmd_len = (size_t)n;
  }
  return ST_OK;
}

void node_ack_write_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  node_req_t *req = privdata;
  int state = req->ack_state;
  if (reply == NULL || state != REQ_ACK_WRITTEN) {
    /* Final now: the connection went (lost like any request in flight), or
     * no ack will come.  An ack is queued before any write goes out, so
     * only ALONE has a reply here: hiredis refused the ack (a context it is
     * tearing down; hiredis 1.x out of memory, which then fails the
     * connection at its next write).  Such a write never counts. */
    list_remove(&req->link);
    req->ack_state = REQ_ACK_OFF;
    if (reply != NULL) {
      req->unacked = 1;
      req->nomem = state == REQ_ACK_ALONE;
    }
    node_req_reply_cb(ac, reply, privdata);
    return;
  }
  req->held = reply_clone(reply);
  req->ack_state = req->held != NULL ? REQ_ACK_HELD : REQ_ACK_NOMEM;
  node_check_role_error(req->node, reply);
}

/* Settles one request of the ack's batch, once every part of the ack came
 * (req->unacked: one fell short); reply NULL, the connection went before. */
static void ack_settle(node_t *node, node_req_t *req, const redisAsyncContext *ac,
                       const redisReply *reply) {
  node_request_done(node, req, ac);
  redisReply *held = req->held;
  int state = req->ack_state;
  req->held = NULL;
  req->ack_state = REQ_ACK_OFF;
  if (reply == NULL) {
    req->fn(req, NULL); /* the connection went before the ack came back */
  } else if (state == REQ_ACK_HELD) {
    req->fn(req, held);
    /* req->unacked: whether every part of its ack reached what was asked */ /* may send it
                                                                                again (NOSCRIPT)
                                                                              */
  } else {
    /* The write's reply could not be kept: nothing to count, an error the
     * round gives no vote for. */
    static const char oom_text[] = "ERR out of memory keeping the reply for its ack";
    redisReply oom;
    memset(&oom, 0, sizeof oom);
    oom.type = REDIS_REPLY_ERROR;
    oom.str = (char *)oom_text; /* hiredis' field is not const; the round only reads it */
    oom.len = sizeof oom_text - 1;
    req->nomem = 1;
    req->fn(req, &oom);
  }
  reply_clone_free(held);
}

/* Records why an ack fell short (read by redlock_last_votes), and logs it. */
static void ack_fell_short(node_t *node, const char *what, const char *why) {
  uv_mutex_lock(node->env->mutex);
  snprintf(node->acks.ack_why, sizeof node->acks.ack_why, "%s", why);
  uv_mutex_unlock(node->env->mutex);
  node_warn(node, what, why);
}

/* One reply of a batch's ack came (WAIT / WAITAOF, or INFO replication),
 * len: its command's bytes.  met: it reached what was asked.  Every request
 * of the batch (the head of acks_waiting whose write replies came: replies
 * come in order) takes it; once a batch has all of its ack's replies, each
 * of its requests is settled; reply NULL, the connection went: they are
 * settled at once, lost like any request in flight. */
static void ack_part_done(node_t *node, redisAsyncContext *ac, const redisReply *reply, size_t len,
                          int met) {
  /* Each part counts once in the queue (node_queue_ack), whatever its batch. */
  if (node->pipe.inflight > 0)
    node->pipe.inflight--;
  node->pipe.queued_bytes -= len <= node->pipe.queued_bytes ? len : node->pipe.queued_bytes;
  for (list_node_t *at = node->acks.acks_waiting.next; at != &node->acks.acks_waiting;
       at = at->next) {
    node_req_t *req = list_entry(at, node_req_t, link);
    if (req->ack_state != REQ_ACK_HELD && req->ack_state != REQ_ACK_NOMEM)
      break;
    if (reply == NULL) {
      req->ack_left = 0;
      continue;
    }
    if (!met)
      req->unacked = 1;
    if (req->ack_left > 0)
      req->ack_left--;
  }
  /* Settled apart from the pass above: a request's fn may send it again
   * (NOSCRIPT), and that joins the tail, unanswered, for a later ack. */
  while (!list_empty(&node->acks.acks_waiting)) {
    node_req_t *req = list_entry(node->acks.acks_waiting.next, node_req_t, link);
    if ((req->ack_state != REQ_ACK_HELD && req->ack_state != REQ_ACK_NOMEM) || req->ack_left > 0)
      break;
    list_remove(&req->link);
    ack_settle(node, req, reply != NULL ? ac : NULL, reply);
  }
  node_after_reply(node, reply != NULL);
}

/* hiredis' callback for a durability ack: privdata is the node. */
static void ack_reply_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  node_t *node = privdata;
  int met = 0;
  if (reply != NULL) {
    char why[NODE_DOWN_WHY_LEN];
    met = reply_ack_met(reply, node->addr.ack.mode == ACK_WAITAOF, node->addr.ack.local,
                        node->addr.ack.replicas, why, sizeof why);
    if (!met)
      ack_fell_short(node, "durability ack fell short", why);
  }
  ack_part_done(node, ac, reply, node->acks.ack_cmd_len, met);
}

/* The role check's verdict on INFO replication: 1 when the server is still
 * a master with the replication id of the handshake.  A promotion always
 * makes a new replication id (Redis and Valkey shift it at every
 * promotion), so the same id, read after the batch's writes ran, means no
 * promotion since the handshake, and a master now means no demotion that
 * was not followed by one.  Another id: the server was a replica and a
 * master again on this very connection (a cluster failover and back,
 * REPLICAOF by hand): it is judged as a reconnect would judge it
 * (quarantine_new_replid), and the id is remembered, so that the next
 * batches count once its quarantine is over. */
static int role_check_met(node_t *node, const redisReply *reply) {
  info_replication_t repl;
  if ((reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) ||
      info_parse_replication(reply->str, reply->len, &repl) != ST_OK) {
    ack_fell_short(node, "role check failed", "INFO replication reply lacks role");
    return 0;
  }
  if (!repl.is_master) {
    char why[NODE_DOWN_WHY_LEN];
    snprintf(why, sizeof why, "it is no longer a master (role: %s)", repl.role);
    ack_fell_short(node, "role check failed", why);
    return 0;
  }
  quarantine_state_t *qs = &node->server.quarantine;
  if (quarantine_same_history(qs, &repl))
    return 1;
  const node_env_t *env = node->env;
  uint64_t now = node_now_ns(node);
  quarantine_t q;
  int longer =
      quarantine_replid_changed(qs, &repl, now, env->max_ttl_ms, node_waiver_ack(node), &q);
  ack_fell_short(node, "role check failed",
                 "its replication id changed since the handshake: it was a replica and a "
                 "master again");
  if (longer) {
    (void)link_arm(&node->link, quarantine_left_ms(qs, now));
    log_write(env->log, REDLOCK_LOG_WARN,
              "master %s was made a replica and a master again (its replication id changed "
              "on a live connection) and may lack keys it granted: its votes do not count for "
              "another %u ms (%s = max TTL)",
              node->addr.label, env->max_ttl_ms, quarantine_name(q.kind));
  }
  return 0;
}

/* hiredis' callback for the role check: privdata is the node. */
static void role_reply_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  node_t *node = privdata;
  int met = reply != NULL && role_check_met(node, reply);
  ack_part_done(node, ac, reply, ROLE_CMD_LEN, met);
}

/* conn.c calls this right before each write of the connection's output: the
 * writes that ask an ack since the last one get theirs, after them all: the
 * role check (INFO replication), then the durability ack (WAIT / WAITAOF),
 * each as the node has them.  A part hiredis refuses (a context it is
 * tearing down, or, in hiredis 1.x, out of memory) leaves the batch short:
 * its votes never count; when no part goes, their replies are final. */
void node_queue_ack(redisAsyncContext *ac, void *arg) {
  node_t *node = arg;
  if (list_empty(&node->acks.acks_waiting) ||
      list_entry(node->acks.acks_waiting.prev, node_req_t, link)->ack_state != REQ_ACK_OPEN)
    return; /* every write that asks one has it already */
  unsigned parts = 0;
  int refused = 0;
  if (node_role_checked(node)) {
    if (redisAsyncFormattedCommand(ac, role_reply_cb, node, role_cmd, ROLE_CMD_LEN) == REDIS_OK) {
      parts++;
      node->pipe.queued_bytes += ROLE_CMD_LEN;
    } else {
      refused = 1;
    }
  }
  if (node->acks.ack_cmd != NULL) {
    if (redisAsyncFormattedCommand(ac, ack_reply_cb, node, node->acks.ack_cmd,
                                   node->acks.ack_cmd_len) == REDIS_OK) {
      parts++;
      node->pipe.queued_bytes += node->acks.ack_cmd_len;
    } else {
      refused = 1;
    }
  }
  for (list_node_t *at = node->acks.acks_waiting.prev; at != &node->acks.acks_waiting;
       at = at->prev) {
    node_req_t *req = list_entry(at, node_req_t, link);
    if (req->ack_state != REQ_ACK_OPEN)
      break; /* the OPEN ones are the tail: written since the last ack */
    req->ack_state = parts > 0 ? REQ_ACK_WRITTEN : REQ_ACK_ALONE;
    req->ack_left = (uint8_t)parts;
    if (refused)
      req->unacked = 1;
  }
  if (parts > 0) {
    node->pipe.inflight += parts;
    node_queue_changed(node);
  }
}
