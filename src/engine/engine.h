/* engine.h: the lock engine's surroundings.  The engine is lock.c (lock
 * handles and the acquire, extend, release and watch state machines), the
 * lock kinds (kind_*.c), prims.c and election.c.  Everything they need from
 * the rest of the library comes down once, from client.c (the composition
 * root), in the engine_t it embeds: the rounds, the notifier, the clock and
 * timers, random numbers, the stats hooks, and the owner's callbacks ("an op
 * ended", "run this op", "is the client still open").  Nothing in the engine
 * includes client.h or calls the public API; what it must tell the client
 * goes up through those callbacks.
 *
 * Ownership, as everywhere: each field names who writes it and what guards
 * it.  "const" = set by engine_init's caller before the loop starts, read-only
 * after; "loop" = loop thread only; "mutex" = under *engine->mutex. */
#ifndef REDLOCK_ENGINE_H
#define REDLOCK_ENGINE_H

#include <stdint.h>
#include <uv.h>

#include "engine/round.h"
#include "util/handle.h"
#include "util/idmap.h"
#include "util/list.h"
#include "util/log.h"
#include "util/options.h"
#include "util/pool.h"
#include "util/random.h"
#include "util/stats_core.h"
#include "util/timebase.h"
#include "voters/notify.h"

struct op;
struct redlock_lock;

/* What the engine reports to stats (stats.c implements them; client.c hands
 * them down only when stats or events are on: engine_t.hooks is NULL
 * otherwise, and each hook below costs one NULL test). */
typedef struct engine_hooks {
  /* A lock, extend or release call ends, before its callback.  ctx: the ctx
   * of the call's rounds (the round being decided, if it is the call's, gives
   * the times); started_ns: the first attempt's start (0: that round's);
   * attempts < 0: 1 when the call ended in a round, else 0. */
  void (*call_finished)(void *arg, stats_op_t kind, int status, const void *ctx,
                        uint64_t started_ns, const char *resource, int attempts);
  /* Any operation that does not end through call_finished (an election's
   * campaign): ns its duration, round the last one it waited on (or NULL). */
  void (*op_done)(void *arg, stats_op_t kind, int status, uint64_t ns, const char *resource,
                  const round_t *round, int attempts);
  /* A watch's automatic extension was decided (status as extend's). */
  void (*renewed)(void *arg, const struct redlock_lock *lock, const round_t *round, int status);
  /* A held lock is lost (once per lock). */
  void (*lock_lost)(void *arg, const struct redlock_lock *lock, int reason);
} engine_hooks_t;

/* What the engine asks of its owner (client.c).  `arg` is engine_t.owner_arg. */
typedef struct engine_owner {
  /* An op ended, a lease was let go: a close in progress may go on. */
  void (*op_ended)(void *arg);
  /* Runs an op made on the loop (an election's campaign), or parks it until
   * every master has had its first connection attempt. */
  void (*run)(void *arg, struct op *op);
  /* 1 while no close has been asked for (any thread; the owner takes its
   * mutex): callbacks of elections stop as soon as a close is requested. */
  int (*is_open)(void *arg);
} engine_owner_t;

typedef struct engine {
  /* ---- handed down by client.c (const) ---- */
  const redlock_options_t *opts; /* the client's snapshot */
  const log_sink_t *log;
  const timebase_t *tb; /* the one clock, and every timer of the engine */
  round_env_t *rounds;  /* rounds go out through it */
  notify_t *notify;     /* release notifications for waiting calls */
  struct stats *stats;  /* counters and gauges (stats_core.h), NULL when off */
  const engine_hooks_t *hooks;
  void *hooks_arg;
  const engine_owner_t *owner;
  void *owner_arg;
  jitter_rng_t *rng;     /* loop: retry and back-off jitter */
  random_pool_t *values; /* loop: lock values */
  uv_mutex_t *mutex;     /* the client's: guards the registries below and the refcounts */
  /* ---- the engine's own ---- */
  list_node_t ops_in_flight;    /* loop: op_t.link of dispatched lock/extend/release/watch */
  list_node_t held_locks;       /* loop: leases held (redlock_lock.held_link), for close */
  ptrset_t live_locks;          /* mutex: handles the caller may still use */
  list_node_t reentrant_leases; /* mutex: leases that reentrant calls may share */
  callmem_t callmem;            /* its own mutex: free lists of ops, key blocks and handles */
  list_node_t elections;        /* loop: election handles the loop has taken */
  ptrset_t live_elections;      /* mutex: election handles the caller may still resign */
  list_node_t observers;        /* loop: observers the loop has taken (observe.c) */
  ptrset_t live_observers;      /* mutex: observers the caller may still stop */
  /* Cancelable calls (redlock_cancel): an acquisition submitted with an id
   * is in `calls` from its submission until its outcome is decided (lock.c:
   * acquire_commit); a cancel asked for meanwhile marks it and queues it
   * on `cancels` for the loop. */
  idmap_t calls;         /* mutex: call id -> op_acquire_t */
  uint64_t last_call_id; /* mutex: the last id given (ids count up from 1, never reused) */
  list_node_t cancels;   /* mutex: op_acquire_t.cancel_link, cancels the loop has not taken */
  int closing;           /* loop: engine_begin_close ran */
} engine_t;

/* Initialises the engine's own part; the caller has set the rest.  ST_OK
 * or ST_ENOMEM. */
status_t engine_init(engine_t *engine);
/* Frees the engine's own part (after close, or on a failed open). */
void engine_free(engine_t *engine);
/* Close, loop side: elections and observers stop (no callback runs any
 * more, leaders release), acquisitions are canceled, watches stop, and the held locks
 * start to be released (engine_release_held). */
void engine_begin_close(engine_t *engine);
/* Loop: carries out the cancels redlock_cancel queued (engine->cancels). */
void engine_run_cancels(engine_t *engine);
/* Releases held locks while fewer than LOCK_CLOSE_WINDOW rounds are pending;
 * 1 while some are still held (call again when a round settles). */
int engine_release_held(engine_t *engine);
/* 1 while calls are in flight. */
int engine_busy(const engine_t *engine);
/* 1 while a cancel waits for the loop (caller holds the mutex). */
static inline int engine_cancels_pending_locked(const engine_t *engine) {
  return !list_empty(&engine->cancels);
}

static inline uint64_t engine_now_ns(const engine_t *engine) { return tb_now_ns(engine->tb); }
static inline uint32_t engine_random(engine_t *engine) { return jitter_rng_next(engine->rng); }
#define engine_log(engine, ...) log_write((engine)->log, __VA_ARGS__)
#define engine_log_enabled(engine, level) log_enabled((engine)->log, level)

static inline void engine_call_finished(engine_t *engine, stats_op_t kind, int status,
                                        const void *ctx, uint64_t started_ns, const char *resource,
                                        int attempts) {
  if (engine->hooks != NULL)
    engine->hooks->call_finished(engine->hooks_arg, kind, status, ctx, started_ns, resource,
                                 attempts);
}
static inline void engine_op_done(engine_t *engine, stats_op_t kind, int status, uint64_t ns,
                                  const char *resource, const round_t *round, int attempts) {
  if (engine->hooks != NULL)
    engine->hooks->op_done(engine->hooks_arg, kind, status, ns, resource, round, attempts);
}
static inline void engine_renewed(engine_t *engine, const struct redlock_lock *lock,
                                  const round_t *round, int status) {
  if (engine->hooks != NULL)
    engine->hooks->renewed(engine->hooks_arg, lock, round, status);
}
static inline void engine_lock_lost(engine_t *engine, const struct redlock_lock *lock, int reason) {
  if (engine->hooks != NULL)
    engine->hooks->lock_lost(engine->hooks_arg, lock, reason);
}

#endif
