/* election.c: leader election (redlock_elect / redlock_resign) on top of the
 * lock machinery of lock.c.
 *
 * An election is a handle that lives on the client's loop thread and cycles
 * through: CAMPAIGNING (one fenced acquisition in LOCK_MODE_WAIT, woken by
 * release notifications, with the retry timer as the fallback poll) ->
 * LEADER (the lease, watched; on_elected ran with the fencing token as the
 * term) -> on loss, on_lost, release of what is left of the lease, BACKOFF
 * (timer with jitter) -> CAMPAIGNING again.  A resign or the client's close
 * ends the cycle from any state, without a callback.
 *
 * Threads.  The caller's thread only validates, allocates the handle and
 * queues it (its start op); a resignation is queued too, so all
 * state changes happen on the loop thread, in the wake-up callback's clean
 * stack frame rather than inside a hiredis reply or a user callback.  Both
 * ops are preallocated inside the handle: resigning never fails for want of
 * memory.  A resign off the loop thread waits on a semaphore until the loop
 * has taken it, which is what makes "no callback after redlock_resign
 * returns" true; on the loop thread it cannot wait (the loop is us), so it
 * sets `resigned` at once, which silences every later callback, and the
 * handle is freed when the queued op is taken, i.e. after the running
 * callback has returned (hiredis defers freeing a context from its own
 * callback the same way).
 *
 * Every election takes one fenced acquisition per campaign, whatever the
 * client's fencing option: the term must be a fencing token (op->fenced).
 *
 * Ownership: everything here is election.c's.  The acquisition of a
 * campaign is lock.c's (made by its constructor, given up with
 * acquire_abandon); the lease, once won, too (election.c only reads its
 * expiry, lost flag and fence). */
#include <stdlib.h>
#include <string.h>

#include "engine/election.h"

#include "engine/lock.h"
#include "engine/round.h"
#include "proto/resp.h"
#include "util/alloc.h"
#include "util/backoff.h"
#include "util/quorum.h"

typedef enum {
  ELECTION_QUEUED = 0,  /* the start op not taken by the loop yet */
  ELECTION_CAMPAIGNING, /* e->campaign is out */
  ELECTION_STARTING,    /* won: the watch is being started */
  ELECTION_LEADER,      /* e->lease held and watched */
  ELECTION_LOSING,      /* on_lost ran; the lease is released on the next turn */
  ELECTION_BACKOFF,     /* waiting on e->timer before campaigning again */
  ELECTION_DONE,        /* resigned or closed */
} election_state_t;

/* A term that lasted this many ttls resets the back-off after losses. */
#define STABLE_TERM_TTLS 1
/* Back-off after consecutive losses: base * 2^losses, equal jitter, capped by
 * the ttl (a leader that keeps losing its lease retries about once a ttl). */
#define BACKOFF_MIN_BASE_MS 10u
#define BACKOFF_MAX_SHIFT 16u

/* A resignation: resign waits on `done` when it can (off the loop thread). */
typedef struct {
  op_t op;
  uv_sem_t *done; /* mutex at submission, then loop: posted when taken; NULL = nobody waits */
} resign_op_t;

struct redlock_election {
  engine_t *engine;                 /* const */
  op_t start_op;                    /* elect_op_ops (by redlock_elect), no fields of its own */
  resign_op_t resign_op;            /* resign_op_ops (queued by redlock_resign) */
  list_node_t link;                 /* loop: engine->elections, from the start until done */
  char *name;                       /* const: as given, for log messages and the key */
  size_t name_len;                  /* const */
  uint32_t ttl_ms;                  /* const */
  uint32_t max_hold_ms;             /* const: each term's bound (redlock_elect_bounded); 0: none */
  redlock_elected_cb on_elected;    /* const */
  redlock_election_lost_cb on_lost; /* const */
  void *arg;                        /* const */
  /* loop */
  election_state_t state;
  int resigned;           /* no callback may run any more */
  int lost_early;         /* lost while the watch was starting: never announced */
  op_acquire_t *campaign; /* the acquisition in flight (lock.c's) */
  tb_timer_t *timer;      /* back-off and the deferred release after a loss */
  int timer_ready;        /* initialised on the loop */
  unsigned losses;        /* terms lost in a row (back-off exponent) */
  uint64_t term;
  uint64_t elected_ns;
  uint64_t campaign_ns; /* monotonic start of the campaign under way, 0 = none */
  /* mutex: read by redlock_election_validity_ms from any thread */
  redlock_lock_t *lease;
  int64_t ended_ns; /* monotonic end of the last term's validity, 0 = none */
};

/* ---- helpers ---------------------------------------------------------------------- */

/* Callbacks stop at resign and as soon as a close is requested. */
static int election_silent(redlock_election_t *e) {
  if (e->resigned || e->state == ELECTION_DONE)
    return 1;
  engine_t *engine = e->engine;
  return !engine->owner->is_open(engine->owner_arg);
}

static void timer_closed(tb_timer_t *timer) { rl_free(timer); }

void election_free(redlock_election_t *e) {
  if (e->timer != NULL) {
    if (e->timer_ready)
      tb_timer_close(e->timer, timer_closed);
    else
      rl_free(e->timer);
  }
  rl_free(e->name);
  rl_free(e);
}

/* Sets or clears the lease, for the accessor on other threads. */
static void election_set_lease(redlock_election_t *e, redlock_lock_t *lease) {
  engine_t *engine = e->engine;
  uv_mutex_lock(engine->mutex);
  if (lease == NULL && e->lease != NULL) {
    int64_t end = atomic_load(&e->lease->expires_ns);
    int64_t now = (int64_t)engine_now_ns(e->engine);
    /* A lease lost before its validity ran out (a quorum said it is gone)
     * ended now, not at its validity. */
    e->ended_ns = end < now ? end : now;
  }
  e->lease = lease;
  uv_mutex_unlock(engine->mutex);
}

/* Lets go of the lease (if any): released and announced, so the next
 * campaigner of any client is woken at once. */
static void election_drop_lease(redlock_election_t *e) {
  redlock_lock_t *lease = e->lease;
  if (lease == NULL)
    return;
  election_set_lease(e, NULL);
  lock_release_lease(lease);
}

/* Cancels the campaign without telling the election: its attempt ends on its
 * own (a round in flight is waited for, then released where it may have set
 * the key) and reports to nobody. */
static void election_drop_campaign(redlock_election_t *e) {
  op_acquire_t *op = e->campaign;
  if (op == NULL)
    return;
  e->campaign = NULL;
  acquire_abandon(op);
}

static void election_stop_timer(redlock_election_t *e) {
  if (e->timer_ready)
    tb_timer_stop(e->timer);
}

/* Stops everything; the handle is then only memory. */
static void election_stop(redlock_election_t *e) {
  election_stop_timer(e);
  election_drop_campaign(e);
  election_drop_lease(e);
  if (list_linked(&e->link))
    list_remove(&e->link);
  e->state = ELECTION_DONE;
}

/* ---- campaign ------------------------------------------------------------------------ */

static void election_campaign(redlock_election_t *e);
static void election_lock_cb(int status, redlock_lock_t *lock, void *arg);

static void campaign_timer_cb(tb_timer_t *timer) { election_campaign(timer->data); }

static void election_backoff(redlock_election_t *e, uint64_t delay_ms) {
  e->state = ELECTION_BACKOFF;
  engine_log(e->engine, REDLOCK_LOG_DEBUG, "election %s: campaigning again in %llu ms", e->name,
             (unsigned long long)delay_ms);
  if (tb_timer_start(e->timer, campaign_timer_cb, delay_ms) != 0)
    engine_log(e->engine, REDLOCK_LOG_ERROR, "election %s: cannot start its timer: it stops",
               e->name);
}

/* The delay before campaigning again after a lost term (or a failure). */
static uint64_t election_backoff_ms(redlock_election_t *e) {
  engine_t *engine = e->engine;
  uint32_t base = engine->opts->retry_delay_ms;
  if (base < BACKOFF_MIN_BASE_MS)
    base = BACKOFF_MIN_BASE_MS;
  uint32_t cap = e->ttl_ms > base ? e->ttl_ms : base;
  unsigned shift = e->losses < BACKOFF_MAX_SHIFT ? e->losses : BACKOFF_MAX_SHIFT;
  if (e->losses < UINT32_MAX)
    e->losses++;
  return backoff_ms(shift, base, cap, engine_random(engine));
}

/* One acquisition with an unbounded wait (re-made if its budget ever runs
 * out): same layout of keys as calls.c, so that the lease inherits them. */
static void election_campaign(redlock_election_t *e) {
  engine_t *engine = e->engine;
  if (e->campaign_ns == 0)
    e->campaign_ns = engine_now_ns(e->engine); /* a wait budget renewed is the same campaign */
  /* ~49 days of waiting; then campaign_done starts another.  Fenced: a term
   * is a fencing token.  Not owned: no thread owns the lease, so a reentrant
   * lock call can never share it. */
  op_acquire_t *op = NULL;
  (void)acquire_op_new(&op, engine,
                       &(acquire_params_t){.mode = LOCK_MODE_WAIT,
                                           .ttl_ms = e->ttl_ms,
                                           .wait_ms = UINT32_MAX,
                                           .fenced = 1,
                                           .owned = 0,
                                           .cb = election_lock_cb,
                                           .arg = e});
  const char *resources[1] = {e->name};
  if (op == NULL || acquire_op_set_keys(op, resources, 1) != ST_OK) {
    if (op != NULL)
      op_free(&op->op);
    engine_log(engine, REDLOCK_LOG_ERROR, "election %s: out of memory", e->name);
    election_backoff(e, election_backoff_ms(e));
    return;
  }
  e->campaign = op;
  e->state = ELECTION_CAMPAIGNING;
  engine->owner->run(engine->owner_arg, &op->op);
}

/* ---- leadership -------------------------------------------------------------------- */

/* Announces the grant of a term on the release channel of the election's
 * key (PUBLISH, payload NOTIFY_GRANT_PAYLOAD and the term), once per term,
 * so that observers (observe.c) read the new leader at once instead of at
 * their next poll.  Waiters of this library ignore such a payload (notify.c:
 * a grant frees nothing); an older client's waiter takes it for a release
 * and retries once.  A cluster's subscribers hear a PUBLISH too (their
 * plain SUBSCRIBE, notify.c).  Fire and forget: a master that misses it
 * leaves the observers to their poll. */
static void election_announce_grant(redlock_election_t *e, const redlock_lock_t *lock) {
  if (lock->prim.channels == NULL)
    return;
  char payload[sizeof NOTIFY_GRANT_PAYLOAD + 20];
  size_t prefix_len = sizeof NOTIFY_GRANT_PAYLOAD - 1;
  memcpy(payload, NOTIFY_GRANT_PAYLOAD, prefix_len);
  size_t payload_len = prefix_len + resp_u64_to_dec(lock->fence, payload + prefix_len);
  const char *argv[] = {"PUBLISH", lock->prim.channels[0], payload};
  const size_t len[] = {7, lock->prim.channel_lens[0], payload_len};
  round_t *round = NULL;
  /* A read's rules: no durability ack to wait for, nobody waits. */
  if (round_new(e->engine->rounds,
                &(round_params_t){.argc = 3,
                                  .argv = argv,
                                  .argv_len = len,
                                  .expect_integer = ROUND_EXPECT_ANY,
                                  .kind = ROUND_READ,
                                  .key_arg = 1},
                &round) == ST_OK)
    round_send(round);
}

static void release_timer_cb(tb_timer_t *timer) {
  redlock_election_t *e = timer->data;
  /* What is left of the lost lease (our value, wherever it survives) goes,
   * from a clean stack frame rather than from inside the watch. */
  election_drop_lease(e);
  election_backoff(e, election_backoff_ms(e));
}

static void election_lost_cb(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  redlock_election_t *e = arg;
  if (e->state == ELECTION_STARTING) {
    e->lost_early = 1; /* never announced: election_lock_cb tidies up */
    return;
  }
  if (e->state != ELECTION_LEADER)
    return;
  e->state = ELECTION_LOSING;
  uint64_t held_ns = engine_now_ns(e->engine) - e->elected_ns;
  /* A term that reached its bound is no failure: the back-off starts over. */
  if (reason == ST_MAX_HOLD || held_ns >= (uint64_t)e->ttl_ms * 1000000u * STABLE_TERM_TTLS)
    e->losses = 0;
  if (reason == ST_MAX_HOLD)
    engine_log(e->engine, REDLOCK_LOG_INFO, "election %s: term %llu reached its bound: resigned",
               e->name, (unsigned long long)e->term);
  else
    engine_log(e->engine, REDLOCK_LOG_WARN, "election %s: leadership of term %llu lost (%s)",
               e->name, (unsigned long long)e->term, redlock_err_name(reason));
  if (!election_silent(e))
    e->on_lost(e, reason, e->arg);
  /* A resign from inside on_lost has taken over (its op is queued). */
  if (e->resigned || e->state != ELECTION_LOSING)
    return;
  if (tb_timer_start(e->timer, release_timer_cb, 0) != 0) {
    election_drop_lease(e); /* at once, then: no timer to defer it with */
    election_backoff(e, election_backoff_ms(e));
  }
}

static void election_lock_cb(int status, redlock_lock_t *handle, void *arg) {
  redlock_lock_t *lock = handle != NULL ? lock_of(handle) : NULL;
  redlock_election_t *e = arg;
  engine_t *engine = e->engine;
  e->campaign = NULL;
  if (status != ST_OK) {
    if (status == ST_ETIMEDOUT || status == ST_ENOQUORUM) {
      election_campaign(e); /* the wait budget of one campaign ran out */
      return;
    }
    engine_log(engine, REDLOCK_LOG_WARN, "election %s: campaign failed (%s)", e->name,
               redlock_err_name(status));
    election_backoff(e, election_backoff_ms(e));
    return;
  }
  e->state = ELECTION_STARTING;
  e->lost_early = 0;
  election_set_lease(e, lock);
  status_t rc = lock_watch_begin(lock, lock, election_lost_cb, e, e->max_hold_ms, NULL);
  if (rc != ST_OK || e->lost_early) {
    engine_log(engine, REDLOCK_LOG_WARN, "election %s: won term %llu but %s; campaigning again",
               e->name, (unsigned long long)lock->fence,
               rc != ST_OK ? "cannot watch it (out of memory)" : "it expired at once");
    election_drop_lease(e);
    election_backoff(e, election_backoff_ms(e));
    return;
  }
  e->state = ELECTION_LEADER;
  e->term = lock->fence;
  e->elected_ns = engine_now_ns(e->engine);
  engine_op_done(engine, STATS_OP_ELECTION, ST_OK, e->elected_ns - e->campaign_ns, e->name, NULL,
                 0);
  e->campaign_ns = 0;
  engine_log(engine, REDLOCK_LOG_INFO, "election %s: elected, term %llu", e->name,
             (unsigned long long)e->term);
  if (!election_silent(e)) { /* not for a term resigned or closed already */
    election_announce_grant(e, lock);
    e->on_elected(e, e->term, e->arg);
  }
  /* A resign from inside on_elected is queued: the lease goes with it. */
}

/* ---- loop side of the calls ------------------------------------------------------------ */

static const op_ops_t elect_op_ops;
static const op_ops_t resign_op_ops;

/* The start (redlock_elect's op): the loop takes the new handle and
 * campaigns. */
static void elect_op_dispatch(op_t *op) {
  engine_t *engine = op->engine;
  redlock_election_t *e = OP_AS(redlock_election_t, op, &elect_op_ops, start_op);
  if (e->resigned) {
    /* Resigned from the loop thread before the loop took it: its
     * resignation, queued behind this op, frees it. */
    e->state = ELECTION_DONE;
    return;
  }
  /* Cannot happen: ops queued before the close come first. */
  if (engine->closing) {
    election_free(e);
    return;
  }
  list_insert_tail(&engine->elections, &e->link);
  if (tb_timer_init(engine->tb, e->timer, e) != 0) {
    /* It never campaigns; a resign or the close frees it. */
    engine_log(engine, REDLOCK_LOG_ERROR, "election %s: cannot make its timer", e->name);
    e->state = ELECTION_DONE;
    return;
  }
  e->timer_ready = 1;
  election_campaign(e);
}

/* The resignation.  FIFO: the start was taken before, the close comes after. */
static void resign_op_dispatch(op_t *op) {
  engine_t *engine = op->engine;
  redlock_election_t *e = OP_AS(redlock_election_t, op, &resign_op_ops, resign_op.op);
  uv_sem_t *done = e->resign_op.done;
  e->resigned = 1;
  if (e->state == ELECTION_LEADER || e->state == ELECTION_LOSING)
    engine_log(engine, REDLOCK_LOG_INFO, "election %s: resigned term %llu", e->name,
               (unsigned long long)e->term);
  election_stop(e);
  election_free(e);
  if (done != NULL)
    uv_sem_post(done);
}

/* Both ops live in the handle, which frees them, and neither is an
 * acquisition, so neither is ever failed: a call here is a bug of the
 * library. */
static void election_op_fail(op_t *op, status_t status) {
  (void)op;
  (void)status;
  abort();
}

static void election_op_free(op_t *op) {
  (void)op;
  abort();
}

static const op_ops_t elect_op_ops = {.name = "elect",
                                      .acquires = 0,
                                      .dispatch = elect_op_dispatch,
                                      .fail = election_op_fail,
                                      .free = election_op_free};
static const op_ops_t resign_op_ops = {.name = "resign",
                                       .acquires = 0,
                                       .dispatch = resign_op_dispatch,
                                       .fail = election_op_fail,
                                       .free = election_op_free};

void election_close_all(engine_t *engine) {
  uv_mutex_lock(engine->mutex);
  ptrset_free(&engine->live_elections); /* resign now gets ECLOSED */
  ptrset_init(&engine->live_elections);
  uv_mutex_unlock(engine->mutex);
  while (!list_empty(&engine->elections)) {
    redlock_election_t *e = list_entry(engine->elections.next, redlock_election_t, link);
    e->resigned = 1;
    election_stop(e);
    election_free(e);
  }
}

/* ---- what the public calls (calls_election.c) build on ------------------------------ */

status_t election_new(engine_t *engine, const char *name, uint32_t ttl_ms,
                      redlock_elected_cb on_elected, redlock_election_lost_cb on_lost, void *arg,
                      redlock_election_t **out) {
  redlock_election_t *e = rl_calloc(1, sizeof *e);
  if (e == NULL)
    return ST_ENOMEM;
  e->name_len = strlen(name);
  e->name = rl_malloc(e->name_len + 1);
  e->timer = rl_malloc(sizeof *e->timer);
  if (e->name == NULL || e->timer == NULL) {
    election_free(e);
    return ST_ENOMEM;
  }
  memcpy(e->name, name, e->name_len + 1);
  e->engine = engine;
  e->ttl_ms = ttl_ms;
  e->on_elected = on_elected;
  e->on_lost = on_lost;
  e->arg = arg;
  e->start_op.ops = &elect_op_ops;
  e->start_op.engine = engine;
  e->resign_op.op.ops = &resign_op_ops;
  e->resign_op.op.engine = engine;
  list_init(&e->link);
  *out = e;
  return ST_OK;
}

op_t *election_start_op(redlock_election_t *e) { return &e->start_op; }

void election_set_max_hold(redlock_election_t *e, uint32_t max_hold_ms) {
  e->max_hold_ms = max_hold_ms;
}

op_t *election_resign_op(redlock_election_t *e, uv_sem_t *done) {
  if (done != NULL)
    e->resign_op.done = done;
  else
    e->resigned = 1; /* we are the loop: no callback of this election runs from now on */
  return &e->resign_op.op;
}

int64_t redlock_election_validity_ms(const redlock_election_t *e) {
  if (e == NULL)
    return 0;
  engine_t *engine = e->engine;
  uv_mutex_lock(engine->mutex);
  int64_t end = e->ended_ns;
  if (e->lease != NULL) {
    end = atomic_load(&e->lease->expires_ns);
    if (atomic_load(&e->lease->lost)) {
      int64_t now = (int64_t)engine_now_ns(e->engine);
      end = end < now ? end : now; /* a lease lost early ended when it was lost */
    }
  }
  uv_mutex_unlock(engine->mutex);
  if (end == 0)
    return 0; /* never leader */
  return (end - (int64_t)engine_now_ns(e->engine)) / 1000000;
}
