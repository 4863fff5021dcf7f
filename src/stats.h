/* stats.h: per-client observability: counters, gauges and latency
 * histograms rendered by redlock_stats() (Prometheus text or JSON), and the
 * per-operation event hook (redlock_options_set_event_cb).
 *
 * Threads and cost.  Every update runs on the client's loop thread, the only
 * writer of these figures, so a counter is bumped with a relaxed atomic load
 * and a relaxed atomic store: a plain load, add and store on x86-64 and
 * arm64, with no lock prefix and no fence (a read-modify-write would be
 * needed only with a second writer).  redlock_stats() reads them with relaxed
 * loads from any thread, without taking the client's mutex or waking its
 * loop, so it also works from a callback on the loop thread and while the
 * loop is busy.  A rendering is not one atomic snapshot: one counter may be a
 * request ahead of another; a histogram's count is the sum of its buckets,
 * so each histogram is self-consistent.  With stats and events both off the
 * client has no stats object and every hook below is one NULL test.
 *
 * The hooks are called by lock.c, round.c, node.c and client.c at the points
 * named in their comments; everything else about the figures lives in
 * stats.c, including the one table of metric names both formats print. */
#ifndef REDLOCK_STATS_H
#define REDLOCK_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "client.h"

/* Operation kinds, as the `op` label.  A new kind (semaphore, rwlock,
 * election, ...) is added at the end here, with a REDLOCK_EVENT_* kind in
 * redlock.h and a line in op_event_kind (stats.c); its ops are mapped in
 * stats_op_finished_() (or it calls stats_op_done() with its own numbers);
 * the tables, both renderings and the event names follow. */
#define STATS_OP_MAP(XX)                                                                           \
  XX(ACQUIRE, "acquire")                                                                           \
  XX(WAIT, "wait")                                                                                 \
  XX(EXTEND, "extend")                                                                             \
  XX(RENEW, "renew")                                                                               \
  XX(RELEASE, "release")                                                                           \
  XX(SEMAPHORE, "semaphore")                                                                       \
  XX(RWLOCK_READ, "rwlock_read")                                                                   \
  XX(RWLOCK_WRITE, "rwlock_write")                                                                 \
  XX(ELECTION, "election")

typedef enum {
#define STATS__OP_ENUM(name, label) STATS_OP_##name,
  STATS_OP_MAP(STATS__OP_ENUM)
#undef STATS__OP_ENUM
      STATS_OP_COUNT
} stats_op_t;

/* Outcomes, as the `outcome` label; see stats_outcome() for the mapping. */
#define STATS_OUTCOME_MAP(XX)                                                                      \
  XX(OK, "ok")                                                                                     \
  XX(LOCKED, "locked")                                                                             \
  XX(NOQUORUM, "noquorum")                                                                         \
  XX(EXPIRED, "expired")                                                                           \
  XX(LOST, "lost")                                                                                 \
  XX(TIMEOUT, "timeout")                                                                           \
  XX(CANCELED, "canceled")                                                                         \
  XX(OTHER, "other")

typedef enum {
#define STATS__OUTCOME_ENUM(name, label) STATS_OUTCOME_##name,
  STATS_OUTCOME_MAP(STATS__OUTCOME_ENUM)
#undef STATS__OUTCOME_ENUM
      STATS_OUTCOME_COUNT
} stats_outcome_t;

/* Client-wide gauges. */
typedef enum {
  STATS_GAUGE_HELD = 0, /* leases held (acquired, not yet released) */
  STATS_GAUGE_WATCHED,  /* of which kept alive by redlock_watch */
  STATS_GAUGE_WAITERS,  /* lock_wait calls in progress */
  STATS_GAUGE_ROUNDS,   /* rounds sent and not yet decided */
  STATS_GAUGE_COUNT
} stats_gauge_t;

/* ---- the figures ----------------------------------------------------------------------
 * Defined here so that the hooks on the hot path (a request written, a reply,
 * a vote, a gauge) inline to a load, an add and a store. */

/* Latency histograms: fixed buckets, 1-2.5-5 per decade from 25 us to 60 s
 * (the bounds are in stats.c), counted per bucket and made cumulative when
 * rendered. */
#define STATS_N_BOUNDS 20
typedef struct {
  _Atomic uint64_t bucket[STATS_N_BOUNDS + 1]; /* the last one is +Inf */
  _Atomic uint64_t sum_ns;
} stats_hist_t;

/* Votes are counted by vote_why_t, 1 .. WHY_BADREPLY. */
#define STATS_N_WHY (WHY_BADREPLY + 1)

typedef struct {
  _Atomic int state; /* stats.c's mstate_t; "quarantined" is derived when read */
  _Atomic uint64_t quarantine_until_ns;
  _Atomic uint64_t votes[STATS_N_WHY];
  stats_hist_t latency;
  _Atomic uint64_t sent, done; /* requests written / come back: in flight = the difference */
  _Atomic uint64_t reconnects, connect_failures, disconnects, tls_failures;
  /* loop only */
  uint64_t since_ns; /* last state change (up or down), for event durations */
  int ever_up;
  int reported; /* 0 none yet, else the state of the last event */
} stats_master_t;

struct stats {
  _Atomic uint64_t ops[STATS_OP_COUNT][STATS_OUTCOME_COUNT];
  stats_hist_t op_latency[STATS_OP_COUNT];
  _Atomic int64_t gauges[STATS_GAUGE_COUNT];
  _Atomic uint64_t locks_lost;
  uint64_t bound_ns[STATS_N_BOUNDS + 1]; /* a copy of the bounds, then UINT64_MAX */
  uint8_t first_bucket[65]; /* by bit length of a duration in ns: where to start looking */
  unsigned n_masters;
  stats_master_t masters[];
};

/* The loop thread is the only writer: a relaxed load and store, no
 * read-modify-write (no lock prefix). */
static inline void stats_bump(_Atomic uint64_t *c, uint64_t by) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                        memory_order_relaxed);
}

static inline void stats_hist_observe(const struct stats *stats, stats_hist_t *h, uint64_t ns) {
  unsigned bits = ns == 0 ? 0 : 64u - (unsigned)__builtin_clzll(ns);
  unsigned i = stats->first_bucket[bits];
  while (ns > stats->bound_ns[i]) /* stops at the +Inf sentinel */
    i++;
  stats_bump(&h->bucket[i], 1);
  stats_bump(&h->sum_ns, ns);
}

/* Allocates client->stats unless stats and events are both off (then it
 * stays NULL).  After the nodes are initialised; 0 or REDLOCK_ENOMEM. */
int stats_new(redlock_t *client);
void stats_free(redlock_t *client);
stats_outcome_t stats_outcome(int status);

/* ---- out-of-line parts of the hooks (stats.c) ---- */
void stats_op_finished_(redlock_t *client, op_t *op, int status, redlock_lock_t *lock);
void stats_renewed_(redlock_t *client, redlock_lock_t *lock, const round_t *round, int status);
void stats_op_done_(redlock_t *client, stats_op_t kind, int status, uint64_t ns,
                    const char *resource, const round_t *round, int attempts);
void stats_lock_lost_(redlock_t *client, redlock_lock_t *lock, int reason);
void stats_node_connecting_(node_t *node);
void stats_node_up_(node_t *node);
void stats_node_down_(node_t *node, const char *what, const char *detail);
void stats_node_quarantine_end_(node_t *node);
void stats_node_tls_failure_(node_t *node);

/* ---- hooks: one NULL test when off ---- */

/* lock.c, op_finish: an acquire/wait/extend/release op ends (counts it,
 * times it, emits its event).  Other op kinds are ignored. */
static inline void stats_op_finished(op_t *op, int status, redlock_lock_t *lock) {
  if (op->client->stats != NULL)
    stats_op_finished_(op->client, op, status, lock);
}
/* Any operation that does not end through op_finish (an election's
 * campaign round, say): counts it and emits its event.  ns: its duration;
 * round: the last round it waited on (NULL: none), valid during the call. */
static inline void stats_op_done(redlock_t *client, stats_op_t kind, int status, uint64_t ns,
                                 const char *resource, const round_t *round, int attempts) {
  if (client->stats != NULL)
    stats_op_done_(client, kind, status, ns, resource, round, attempts);
}
/* lock.c: a watch's automatic extension was decided (status as extend's). */
static inline void stats_renewed(redlock_lock_t *lock, const round_t *round, int status) {
  if (lock->client->stats != NULL)
    stats_renewed_(lock->client, lock, round, status);
}
/* lock.c, lock_mark_lost: a held lock is lost (once per lock). */
static inline void stats_lock_lost(redlock_lock_t *lock, int reason) {
  if (lock->client->stats != NULL)
    stats_lock_lost_(lock->client, lock, reason);
}
static inline void stats_gauge(redlock_t *client, stats_gauge_t gauge, int64_t delta) {
  if (client->stats != NULL) {
    _Atomic int64_t *g = &client->stats->gauges[gauge];
    atomic_store_explicit(g, atomic_load_explicit(g, memory_order_relaxed) + delta,
                          memory_order_relaxed);
  }
}
/* round.c, vote_settle: master `master` voted (every vote, also late ones). */
static inline void stats_vote(redlock_t *client, unsigned master, unsigned why) {
  if (client->stats != NULL && why < STATS_N_WHY)
    stats_bump(&client->stats->masters[master].votes[why], 1);
}
/* node.c: connection attempts and state changes. */
static inline void stats_node_connecting(node_t *node) {
  if (node->client->stats != NULL)
    stats_node_connecting_(node);
}
static inline void stats_node_up(node_t *node) {
  if (node->client->stats != NULL)
    stats_node_up_(node);
}
/* Before node_fail changes the state: `what`/`detail` as in its log line. */
static inline void stats_node_down(node_t *node, const char *what, const char *detail) {
  if (node->client->stats != NULL)
    stats_node_down_(node, what, detail);
}
static inline void stats_node_quarantine_end(node_t *node) {
  if (node->client->stats != NULL)
    stats_node_quarantine_end_(node);
}
/* node.c: a request was written; a written request came back (reply or not). */
static inline void stats_node_sent(node_t *node) {
  if (node->client->stats != NULL)
    stats_bump(&node->client->stats->masters[node->index].sent, 1);
}
/* 1 when node_request_done must read the clock for us. */
static inline int stats_wants_reply_time(const node_t *node) { return node->client->stats != NULL; }
static inline void stats_node_done(node_t *node, node_req_t *req, int got_reply, uint64_t now_ns) {
  struct stats *stats = node->client->stats;
  if (stats == NULL)
    return;
  stats_master_t *m = &stats->masters[node->index];
  stats_bump(&m->done, 1);
  if (got_reply && req->sent_ns != 0 && now_ns >= req->sent_ns) {
    req->replied_ns = now_ns; /* for the event of the round it belongs to */
    stats_hist_observe(stats, &m->latency, now_ns - req->sent_ns);
  }
}
/* For the TLS transport: a TLS handshake with this master failed. */
static inline void stats_node_tls_failure(node_t *node) {
  if (node->client->stats != NULL)
    stats_node_tls_failure_(node);
}

#endif
