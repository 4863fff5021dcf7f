/* node_int.h: what the files of the node module (node.c, node_pipe.c,
 * node_handshake.c, node_replay.c, node_acks.c, node_hung.c, node_why.c)
 * share, and no voter above may use: node.h stays the module's interface.
 * The helpers the hot path crosses files for (a reply's bookkeeping, the
 * write's checks) are static inline here, so the split adds no call. */
#ifndef REDLOCK_NODE_INT_H
#define REDLOCK_NODE_INT_H

#include <hiredis/async.h>

#include "voters/node.h"

/* Where a request that asks an ack is (node_req_t.ack_state; node_acks.c). */
enum {
  REQ_ACK_OFF = 0, /* a plain request: one reply */
  REQ_ACK_OPEN,    /* written; no ack queued behind it yet */
  REQ_ACK_WRITTEN, /* its batch's ack is queued behind it */
  REQ_ACK_HELD,    /* the write's reply is kept (req->held) */
  REQ_ACK_NOMEM,   /* the write's reply could not be kept */
  REQ_ACK_ALONE,   /* its batch's ack could not be queued: the write's reply is final, unacked */
};

/* Tells the owner (env->report). */
static inline void node_report(node_t *node, node_event_t ev, const char *what,
                               const char *detail) {
  node->env->report(node->env->arg, node, ev, what, detail);
}

/* The clock (env->tb). */
static inline uint64_t node_now_ns(const node_t *node) { return tb_now_ns(node->env->tb); }

/* Whether writes that ask an ack get one here: a durability ack, or the
 * role check (only with the quarantine on: without it a changed role is
 * the user's risk, as a restart is). */
static inline int node_role_checked(const node_t *node) {
  return node->acks.check_role && node->env->quarantine;
}
static inline int node_acks(const node_t *node) {
  return node->acks.ack_cmd != NULL || node_role_checked(node);
}

/* READY, and its context still there: a request may go out now. */
static inline int node_can_write(const node_t *node) {
  return node->state == NODE_READY && node->link.ac != NULL;
}

/* The queue's figures, for the stats. */
static inline void node_queue_changed(const node_t *node) {
  stats_master_queue(node->stats, node->index, node->pipe.inflight + node->pipe.backlog_len,
                     node->pipe.queued_bytes);
}

/* ---- node_pipe.c ---- */
/* A reply's rarer work: the backlog, the end of an overload, replays. */
void node_after_reply_work(node_t *node, int got_reply);

/* Most replies find no backlog, no overload and nothing kept: that test
 * stays inline in the reply callbacks. */
static inline void node_after_reply(node_t *node, int got_reply) {
  if (!list_empty(&node->pipe.backlog) || node->pipe.overloaded ||
      (got_reply && node->replay.n_missed_releases > 0))
    node_after_reply_work(node, got_reply);
  node_queue_changed(node);
}

/* hiredis' callback for every request node_send wrote. */
void node_req_reply_cb(redisAsyncContext *ac, void *reply, void *privdata);
/* ac: the context the reply came on (NULL: none came). */
void node_request_done(node_t *node, node_req_t *req, const redisAsyncContext *ac);
/* A -READONLY / -LOADING reply: NODE_EV_NOT_MASTER, once per connection. */
void node_check_role_error(node_t *node, const redisReply *reply);
/* The connection is gone: queued requests will never be written. */
void node_fail_backlog(node_t *node);

/* ---- node_handshake.c ---- */
/* The link's handshake (after AUTH and SELECT). */
status_t node_handshake(link_t *link, void *arg);
/* At READY: what the handshake learnt the server runs. */
void node_take_caps(node_t *node);
/* The link's timer while READY: the end of a quarantine. */
void node_quarantine_tick(node_t *node);
/* The ack that may waive a quarantine: none on a cluster primary. */
const ack_spec_t *node_waiver_ack(const node_t *node);

/* ---- node_replay.c ---- */
/* Sends the kept releases while the master takes them. */
void node_replay_releases(node_t *node);
/* Drops the oldest kept release (counted as abandoned). */
void node_drop_oldest_kept(node_t *node);

/* ---- node_acks.c ---- */
/* Formats the durability ack of node->addr.ack; 0 or REDLOCK_ENOMEM. */
status_t node_acks_init(node_t *node);
/* hiredis' callback for a written request that asks an ack. */
void node_ack_write_cb(redisAsyncContext *ac, void *reply, void *privdata);
/* conn.c's before-write hook: the ack behind this write's requests. */
void node_queue_ack(redisAsyncContext *ac, void *arg);

#endif
