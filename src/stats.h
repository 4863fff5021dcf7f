/* stats.h: per-client observability: counters, gauges and latency
 * histograms rendered by redlock_stats() (Prometheus text or JSON), and the
 * per-operation event hook (redlock_options_set_event_cb).
 *
 * Threads and cost.  Every update runs on the client's loop thread, the only
 * writer of these figures, so a counter is bumped with a relaxed atomic load
 * and a relaxed atomic store: a plain load, add and store on x86-64 and
 * arm64, with no lock prefix and no fence (a read-modify-write would be
 * needed only with a second writer).  redlock_stats() reads them with relaxed
 * loads from any thread, without waking the client's loop, so it also works
 * from a callback on the loop thread and while the loop is busy.  It takes
 * the client's mutex only to enter the client and to leave it (client_enter,
 * client_leave: a close waits for a call in progress before it frees the
 * figures; a call made once the close began gets REDLOCK_ECLOSED), never
 * while rendering.  A rendering is not one atomic snapshot: one counter may be a
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

#include "lock.h"
#include "stats_core.h"

/* Allocates client->stats unless stats and events are both off (then it
 * stays NULL).  After the nodes are initialised; 0 or REDLOCK_ENOMEM. */
int stats_new(redlock_t *client);
void stats_free(redlock_t *client);
stats_outcome_t stats_outcome(int status);

/* ---- out-of-line parts of the hooks (stats.c) ---- */
void stats_call_finished_(redlock_t *client, stats_op_t kind, int status, const void *ctx,
                          uint64_t started_ns, const char *resource, int attempts);
void stats_renewed_(redlock_t *client, redlock_lock_t *lock, const round_t *round, int status);
void stats_op_done_(redlock_t *client, stats_op_t kind, int status, uint64_t ns,
                    const char *resource, const round_t *round, int attempts);
void stats_lock_lost_(redlock_t *client, redlock_lock_t *lock, int reason);
/* client.c, from the voters' news (voters_hooks_t.news): connection
 * attempts and state changes of master `index` (CONNECTING, UP, DOWN before
 * its state changes, TLS_FAILURE, QUARANTINE_END). */
void stats_voter_news_(redlock_t *client, unsigned index, const voter_news_t *news);

/* ---- hooks: one NULL test when off ---- */

/* lock.c, when a lock, extend or unlock call ends, before its callback:
 * counts it and emits its event.  ctx: the ctx of the call's rounds (the
 * round being decided, if it is the call's, gives the times); started_ns:
 * the first attempt's start (0: that round's); attempts < 0: 1 when the call
 * ended in a round, else 0. */
static inline void stats_call_finished(redlock_t *client, stats_op_t kind, int status,
                                       const void *ctx, uint64_t started_ns, const char *resource,
                                       int attempts) {
  if (client->stats != NULL)
    stats_call_finished_(client, kind, status, ctx, started_ns, resource, attempts);
}
/* Any operation that does not end through stats_call_finished (an election's
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
#endif
