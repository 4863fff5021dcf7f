/* stats_core.h: the figures behind redlock_stats() and the hooks on the hot
 * path (a request written, a reply, a vote, a gauge), which inline to a load,
 * an add and a store.  Kept apart from stats.h so that the I/O modules
 * (node.c, round.c) can count without knowing the client: they are handed a
 * pointer to the figures (NULL when stats and events are off).  Threads: the
 * loop thread is the only writer (stats.h says why relaxed atomics do). */
#ifndef REDLOCK_STATS_CORE_H
#define REDLOCK_STATS_CORE_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "util/why.h"

/* Operation kinds, as the `op` label.  A new kind (semaphore, rwlock,
 * election, ...) is added at the end here, with a REDLOCK_EVENT_* kind in
 * redlock.h and a line in op_event_kind (stats.c); its ops are mapped in
 * lock.c (acquire_stats_kind, or a stats_call_finished of its own; else it
 * calls stats_op_done() with its own numbers);
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
#define STATS_N_WHY WHY_COUNT

/* One primary of a cluster voter.  Entry p is the voter's p-th primary
 * address (voter_cluster.c keeps an address in one entry for the client's
 * life: a primary that leaves the map and comes back counts on, so that a
 * rate never sees a counter go back).  `used` is stored (release) once
 * label is written, by the loop thread; a reader loads it (acquire) before
 * reading label. */
#define STATS_MAX_PRIMARIES 1024 /* VOTER_CLUSTER_MAX_NODES */
#define STATS_PRIMARY_LABEL_LEN 64
typedef struct stats_primary {
  _Atomic int used;
  char label[STATS_PRIMARY_LABEL_LEN];
  _Atomic uint64_t sent, done;
  stats_hist_t latency;
} stats_primary_t;

typedef struct {
  _Atomic int state; /* stats_mstate_t (api/stats.h); "quarantined" is derived when read */
  _Atomic uint64_t quarantine_until_ns;
  _Atomic uint64_t votes[STATS_N_WHY];
  stats_hist_t latency;
  _Atomic uint64_t sent, done; /* requests written / come back: in flight = the difference */
  _Atomic uint64_t reconnects, connect_failures, disconnects, tls_failures;
  /* node.c: its queue now (requests in flight or in the backlog, their
   * commands' bytes), the releases kept for it now, and those it never got
   * (dropped past the bound, or given up by the close) */
  _Atomic uint64_t queued, queued_bytes, releases_kept, releases_abandoned;
  /* A cluster voter's primaries, each also counted apart (the `primary`
   * label): STATS_MAX_PRIMARIES entries, allocated by stats_new, never
   * moved or freed before the figures; NULL for any other voter. */
  struct stats_primary *primaries;
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
  _Atomic uint64_t wakeups;              /* lock.c: waiting calls woken by an announced release */
  uint64_t bound_ns[STATS_N_BOUNDS + 1]; /* a copy of the bounds, then UINT64_MAX */
  uint8_t first_bucket[65]; /* by bit length of a duration in ns: where to start looking */
  unsigned n_masters;
  const struct stats_env *env; /* const: what stats.c reads of its surroundings (stats.h) */
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

/* round.c, vote_settle: master `master` voted (every vote, also late ones). */
static inline void stats_vote(struct stats *stats, unsigned master, unsigned why) {
  if (stats != NULL && why < STATS_N_WHY)
    stats_bump(&stats->masters[master].votes[why], 1);
}
static inline void stats_gauge(struct stats *stats, stats_gauge_t gauge, int64_t delta) {
  if (stats != NULL) {
    _Atomic int64_t *g = &stats->gauges[gauge];
    atomic_store_explicit(g, atomic_load_explicit(g, memory_order_relaxed) + delta,
                          memory_order_relaxed);
  }
}
/* lock.c: a waiting call was woken by an announced release. */
static inline void stats_wakeup(struct stats *stats) {
  if (stats != NULL)
    stats_bump(&stats->wakeups, 1);
}
/* node.c: a request to master i was written (stats NULL: off). */
static inline void stats_master_sent(struct stats *stats, unsigned i) {
  if (stats != NULL)
    stats_bump(&stats->masters[i].sent, 1);
}
/* node.c: master i's queue changed (absolute figures). */
static inline void stats_master_queue(struct stats *stats, unsigned i, uint64_t requests,
                                      uint64_t bytes) {
  if (stats != NULL) {
    atomic_store_explicit(&stats->masters[i].queued, requests, memory_order_relaxed);
    atomic_store_explicit(&stats->masters[i].queued_bytes, bytes, memory_order_relaxed);
  }
}
/* node.c: releases kept for master i now. */
static inline void stats_master_kept(struct stats *stats, unsigned i, uint64_t kept) {
  if (stats != NULL)
    atomic_store_explicit(&stats->masters[i].releases_kept, kept, memory_order_relaxed);
}
/* node.c: n releases master i will never get (their keys expire at their TTL). */
static inline void stats_master_abandoned(struct stats *stats, unsigned i, uint64_t n) {
  if (stats != NULL)
    stats_bump(&stats->masters[i].releases_abandoned, n);
}
/* node.c: a written request to master i came back, with a reply or without;
 * latency is observed for replies (now_ns read by the caller). */
static inline void stats_master_done(struct stats *stats, unsigned i, uint64_t sent_ns,
                                     int got_reply, uint64_t now_ns) {
  if (stats == NULL)
    return;
  stats_master_t *m = &stats->masters[i];
  stats_bump(&m->done, 1);
  if (got_reply && sent_ns != 0 && now_ns >= sent_ns)
    stats_hist_observe(stats, &m->latency, now_ns - sent_ns);
}

/* node.c: a request to master i, a cluster voter, was written to its
 * primary p (-1: not a cluster voter's node), whose address is label. */
static inline void stats_primary_sent(struct stats *stats, unsigned i, int p, const char *label) {
  if (stats == NULL || p < 0 || p >= STATS_MAX_PRIMARIES || stats->masters[i].primaries == NULL)
    return;
  stats_primary_t *e = &stats->masters[i].primaries[p];
  if (!atomic_load_explicit(&e->used, memory_order_relaxed)) {
    size_t n = strnlen(label, STATS_PRIMARY_LABEL_LEN - 1);
    memcpy(e->label, label, n);
    e->label[n] = '\0';
    atomic_store_explicit(&e->used, 1, memory_order_release);
  }
  stats_bump(&e->sent, 1);
}
/* node.c: a request to primary p of master i came back (as stats_master_done). */
static inline void stats_primary_done(struct stats *stats, unsigned i, int p, uint64_t sent_ns,
                                      int got_reply, uint64_t now_ns) {
  if (stats == NULL || p < 0 || p >= STATS_MAX_PRIMARIES || stats->masters[i].primaries == NULL)
    return;
  stats_primary_t *e = &stats->masters[i].primaries[p];
  stats_bump(&e->done, 1);
  if (got_reply && sent_ns != 0 && now_ns >= sent_ns)
    stats_hist_observe(stats, &e->latency, now_ns - sent_ns);
}

#endif
