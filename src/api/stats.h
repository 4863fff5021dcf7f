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
 * The engine reports through stats_engine_hooks (engine.h); round.c and
 * node.c bump the counters of stats_core.h; client.c calls the node hooks
 * below.  stats.c collects the figures and emits the events;
 * stats_render.c prints them (stats_render), from the one table of metric
 * names both formats walk. */
#ifndef REDLOCK_STATS_H
#define REDLOCK_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/round.h"
#include "util/options.h"
#include "util/stats_core.h"
#include "util/timebase.h"
#include "voters/voter.h"

/* What the figures and events read of their surroundings, handed down by
 * client.c (which owns it; it outlives the stats). */
typedef struct stats_env {
  const redlock_options_t *opts; /* event callback, stats_off */
  const round_env_t *rounds;     /* the round being decided: a call's times */
  const timebase_t *tb;
  unsigned n_masters;
  unsigned quorum;
  const char *(*label)(void *arg, unsigned master); /* master i's "host:port" */
  /* The detail of master i's vote `why` on req, as redlock_last_votes gives
   * it (a cluster voter's names the primary the request went to); loop
   * thread.  NULL: none. */
  void (*vote_detail)(void *arg, unsigned master, int why, const node_req_t *req, char *buf,
                      size_t size);
  void *label_arg; /* both callbacks' */
} stats_env_t;

/* *out = new figures, or NULL when stats and events are both off.  0 or
 * REDLOCK_ENOMEM. */
int stats_new(const stats_env_t *env, struct stats **out);
void stats_free(struct stats *stats);
/* redlock_stats' text (format REDLOCK_STATS_*; stats_render.c), written while no close
 * frees the figures (the caller sees to it). */
int stats_render(const struct stats *stats, int format, char *buf, size_t size);
stats_outcome_t stats_outcome(int status);

/* ---- what the renderings (stats_render.c) share with the collection ---- */

/* A master's state as stats_master_t.state keeps it; a rendering shows an
 * up master as quarantined while its quarantine lasts. */
typedef enum {
  STATS_MSTATE_CONNECTING = 0,
  STATS_MSTATE_UP,
  STATS_MSTATE_QUARANTINED,
  STATS_MSTATE_DOWN
} stats_mstate_t;

/* Each operation kind's label (STATS_OP_MAP): its events' kind name and the
 * "op" label of its figures. */
extern const char *const stats_op_names[STATS_OP_COUNT];

/* Master i's "host:port" (stats_env_t.label). */
const char *stats_label(const struct stats *stats, unsigned i);

/* A counter as any thread reads it (the loop thread is its one writer). */
static inline uint64_t stats_get(const _Atomic uint64_t *c) {
  return atomic_load_explicit((_Atomic uint64_t *)c, memory_order_relaxed);
}

/* What the engine reports (engine.h), handed down by client.c when stats
 * or events are on. */
extern const engine_hooks_t stats_engine_hooks;
/* client.c, from the voters' news (voters_hooks_t.news): connection
 * attempts and state changes of master `index` (CONNECTING, UP, DOWN before
 * its state changes, TLS_FAILURE, QUARANTINE_END). */
void stats_voter_news_(struct stats *stats, unsigned index, const voter_news_t *news);

#endif
