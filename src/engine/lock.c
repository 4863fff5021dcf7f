/* lock.c: lock handles and the loop-side state machines of lock, extend,
 * release and watch, built on rounds (round.h).  Everything here runs on the
 * client's loop thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/lock.h"
#include "proto/direct.h"
#include "proto/keyname.h"
#include "proto/resp.h"
#include "util/alloc.h"
#include "util/quorum.h"

/* ---- rounds ------------------------------------------------------------------
 * The commands of each round are the lock kind's (kind.h, kind_*.c). */

/* The counter keys of a fenced lock (a permit's or a hold's come with its
 * keys, from its kind's init), built once per call, on the loop.  Fence
 * counters live beside the lock keys under a reserved prefix,
 * FENCE_KEY_PREFIX, named in each key's hash slot (keyname.h).  After the n
 * counters, fence_keys[n..2n-1] are their floors (direct.h: the counters
 * of masters that run no scripts), counter + DIRECT_FLOOR_SUFFIX. */
static status_t op_make_fence_keys(op_acquire_t *op) {
  size_t prefix_len = sizeof FENCE_KEY_PREFIX - 1, suffix_len = sizeof DIRECT_FLOOR_SUFFIX - 1;
  size_t n = op->n_keys;
  size_t bytes = 2 * n * (sizeof(char *) + sizeof(size_t));
  for (size_t i = 0; i < n; i++)
    bytes += keyname_len(prefix_len, op->keys[i], op->key_lens[i], 0) + 1 +
             keyname_len(prefix_len, op->keys[i], op->key_lens[i], suffix_len) + 1;
  char *block = callmem_alloc(&op->op.engine->callmem, bytes);
  if (block == NULL)
    return ST_ENOMEM;
  op->fence_keys = (char **)(void *)block;
  op->fence_key_lens = (size_t *)(void *)(block + 2 * n * sizeof(char *));
  char *w = block + 2 * n * (sizeof(char *) + sizeof(size_t));
  for (size_t i = 0; i < 2 * n; i++) {
    size_t k = i % n;
    op->fence_keys[i] = w;
    op->fence_key_lens[i] =
        keyname_build(w, FENCE_KEY_PREFIX, prefix_len, op->keys[k], op->key_lens[k],
                      i < n ? "" : DIRECT_FLOOR_SUFFIX, i < n ? 0 : suffix_len);
    w += op->fence_key_lens[i] + 1;
  }
  return ST_OK;
}

/* Sends a release round (a ROUND_RELEASE: replayed to masters that miss it)
 * its builder made (built: the builder's status). */
static void release_send(engine_t *engine, status_t built, round_t *round, const char *what) {
  if (built != ST_OK) {
    engine_log(engine, REDLOCK_LOG_ERROR, "out of memory: could not release %s", what);
    return;
  }
  round_send(round);
}

/* The clean-up of the op's failed attempt (kind.h: attempt_release_round). */
static void release_attempt(engine_t *engine, op_acquire_t *op) {
  round_t *round = NULL;
  status_t built = op->prim.ops->attempt_release_round(op, &round);
  release_send(engine, built, round, op->keys[0]);
}

/* ---- lock handles ----------------------------------------------------------- */

/* A watch or retry timer, allocated apart from what it serves. */
static void timer_closed(tb_timer_t *timer) { rl_free(timer); }

void lock_free(redlock_lock_t *lock) {
  if (lock->watch.timer != NULL)
    tb_timer_close(lock->watch.timer, timer_closed);
  callmem_t *mem = &lock->engine->callmem;
  callmem_release(mem, lock->keys);
  callmem_release(mem, lock->fence_keys);
  callmem_handle_free(mem, lock);
}

void lock_unref(redlock_lock_t *lock) {
  engine_t *engine = lock->engine;
  uv_mutex_lock(engine->mutex);
  unsigned left = --lock->refs;
  uv_mutex_unlock(engine->mutex);
  if (left == 0)
    lock_free(lock);
}

/* The monotonic end of validity of a round that started at started_ns and
 * set ttl_ms on the masters. */
static int64_t lock_end_ns(const redlock_lock_t *lock, uint64_t started_ns, uint32_t ttl_ms) {
  return (int64_t)started_ns + (int64_t)ttl_ms * 1000000 -
         quorum_drift_ns(ttl_ms, lock->engine->opts->drift_factor);
}

static void lock_set_expiry(redlock_lock_t *lock, uint64_t started_ns, uint32_t ttl_ms) {
  atomic_store(&lock->expires_ns, lock_end_ns(lock, started_ns, ttl_ms));
}

/* Makes the handle for a won acquisition (*out) and registers it as live:
 * ST_OK or ST_ENOMEM. */
static status_t lock_create(redlock_lock_t **out, op_acquire_t *op, uint64_t started_ns) {
  engine_t *engine = op->op.engine;
  uint32_t n;
  *out = NULL;
  redlock_lock_t *lock = callmem_handle_new(&engine->callmem, &n);
  if (lock == NULL)
    return ST_ENOMEM;
  lock->engine = engine;
  lock->handle = handle_encode(lock, n);
  lock->n_keys = op->n_keys;
  lock->keys = op->keys;
  lock->key_lens = op->key_lens;
  lock->resource = op->prim.resource != NULL ? op->prim.resource : op->keys[0] + op->prefix_len;
  lock->prim = op->prim;
  memcpy(lock->value, op->value, op->value_len + 1);
  lock->value_len = op->value_len;
  lock->ttl_ms = op->ttl_ms;
  lock->fence = op->fence;
  lock->granted_ns = started_ns;
  lock->set_mask = op->set_mask;
  lock->refs = 1;
  lock->lease = lock;
  lock->reentry.handles = 1;
  lock->reentry.owner = op->caller;
  list_init(&lock->reentry.holds);
  list_init(&lock->reentry.link);
  atomic_init(&lock->lost, 0);
  lock_set_expiry(lock, started_ns, op->ttl_ms);
  uv_mutex_lock(engine->mutex);
  status_t rc = ptrset_add(&engine->live_locks, lock->handle);
  /* Only kinds that may be (kind.h): a thread asking for a second permit
   * must get another slot. */
  if (rc == ST_OK && engine->opts->reentrant && lock->n_keys == 1 && lock->prim.ops->reentrant)
    list_insert_tail(&engine->reentrant_leases, &lock->reentry.link);
  uv_mutex_unlock(engine->mutex);
  if (rc != ST_OK) {
    callmem_handle_free(&engine->callmem, lock);
    return rc;
  }
  op->keys = NULL; /* the lock owns them now */
  op->key_lens = NULL;
  if (lock->fence != 0) { /* its extensions raise counters where they re-install */
    lock->fence_keys = op->fence_keys;
    lock->fence_key_lens = op->fence_key_lens;
    op->fence_keys = NULL;
    op->fence_key_lens = NULL;
  }
  list_insert_tail(&engine->held_locks, &lock->held_link);
  stats_gauge(engine->stats, STATS_GAUGE_HELD, +1);
  *out = lock;
  return ST_OK;
}

static void lock_mark_lost(redlock_lock_t *lock, status_t reason) {
  if (atomic_exchange(&lock->lost, 1))
    return;
  if (reason == ST_MAX_HOLD)
    engine_log(lock->engine, REDLOCK_LOG_INFO, "lock on %s released: its hold reached its bound",
               lock->resource);
  else
    engine_log(lock->engine, REDLOCK_LOG_WARN, "lock on %s lost (%s)", lock->resource,
               redlock_err_name(reason));
  engine_lock_lost(lock->engine, lock, reason);
  if (lock->watch.active) {
    stats_gauge(lock->engine->stats, STATS_GAUGE_WATCHED, -1);
    lock->watch.active = 0;
    if (lock->watch.timer != NULL)
      tb_timer_stop(lock->watch.timer);
    if (lock->watch.lost_cb != NULL)
      lock->watch.lost_cb(lock->watch.handle, reason, lock->watch.lost_arg);
  }
}

/* Sends a round made for op's call: its votes are kept for the thread that
 * made the call (redlock_last_votes). */
static void send_for(const op_t *op, round_t *round) {
  if (op->has_thread)
    round_for_caller(round, &op->thread);
  round_send(round);
}

/* ---- construction (the caller's thread; the loop's for an election) ------------ */

static const op_ops_t acquire_op_ops; /* the acquisition's table, below its functions */

status_t acquire_op_new(op_acquire_t **out, engine_t *engine, const acquire_params_t *params) {
  op_acquire_t *op = callmem_calloc(&engine->callmem, sizeof *op);
  *out = op;
  if (op == NULL)
    return ST_ENOMEM;
  op->op.ops = &acquire_op_ops;
  op->op.engine = engine;
  op->prim.ops = &kind_mutex; /* a plain lock, unless prim_op_init makes it a primitive */
  op->mode = params->mode;
  op->ttl_ms = params->ttl_ms;
  op->wait_ms = params->wait_ms;
  op->fenced = params->fenced;
  /* Else zero: no thread owns the lease, so no reentrant call can share it. */
  if (params->owned)
    op->caller = uv_thread_self();
  op->lock_cb = params->cb;
  op->arg = params->arg;
  return ST_OK;
}

status_t acquire_op_set_keys(op_acquire_t *op, const char *const *resources, size_t n) {
  return op->prim.ops->init(op, resources, n, 0);
}

/* *out: a new hold on a lease this thread acquired for the same resource,
 * if it is still valid, else NULL.  ST_ENOMEM when there is one but no
 * memory for the hold. */
static status_t reentrant_hold(redlock_lock_t **out, engine_t *engine, const char *resource) {
  status_t st = ST_OK;
  size_t prefix_len = engine->opts->key_prefix_len;
  size_t len = strlen(resource);
  uv_thread_t self = uv_thread_self();
  redlock_lock_t *hold = NULL;
  uv_mutex_lock(engine->mutex);
  for (list_node_t *it = engine->reentrant_leases.next; it != &engine->reentrant_leases;
       it = it->next) {
    redlock_lock_t *lease = list_entry(it, redlock_lock_t, reentry.link);
    if (lease->n_keys != 1 || lease->key_lens[0] != prefix_len + len ||
        memcmp(lease->keys[0] + prefix_len, resource, len) != 0 ||
        !uv_thread_equal(&lease->reentry.owner, &self) || lease->reentry.handles == 0 ||
        lock_is_lost(lease))
      continue;
    uint32_t n;
    hold = callmem_handle_new(&engine->callmem, &n);
    if (hold != NULL)
      hold->handle = handle_encode(hold, n);
    if (hold == NULL || ptrset_add(&engine->live_locks, hold->handle) != ST_OK) {
      /* Not a fresh acquisition instead: it would find the key held by this
       * very lease, and wait or fail as if another holder had it. */
      callmem_handle_free(&engine->callmem, hold);
      hold = NULL;
      st = ST_ENOMEM;
      break;
    }
    hold->engine = engine;
    hold->lease = lease;
    lease->reentry.handles++;
    list_insert_tail(&lease->reentry.holds, &hold->hold_link);
    break;
  }
  uv_mutex_unlock(engine->mutex);
  *out = hold;
  return st;
}

status_t acquire_op_reenter(op_acquire_t *op, const char *resource) {
  redlock_lock_t *hold = NULL;
  status_t st = reentrant_hold(&hold, op->op.engine, resource);
  if (hold == NULL)
    return st;
  op->hold = hold;
  op->mode = LOCK_MODE_REENTER;
  return ST_OK;
}

static status_t extend_op_make(op_t **out, engine_t *engine, redlock_lock_t *lock, uint32_t ttl_ms,
                               redlock_done_cb done_cb, redlock_lost_cb lost_cb, void *arg) {
  (void)lost_cb;
  op_extend_t *ext = callmem_alloc(&engine->callmem, sizeof *ext);
  if (ext == NULL)
    return ST_ENOMEM;
  *ext = (op_extend_t){.lock = lock, .ttl_ms = ttl_ms, .done_cb = done_cb, .arg = arg};
  *out = &ext->op;
  return ST_OK;
}

static status_t release_op_make(op_t **out, engine_t *engine, redlock_lock_t *lock, uint32_t ttl_ms,
                                redlock_done_cb done_cb, redlock_lost_cb lost_cb, void *arg) {
  (void)ttl_ms;
  (void)lost_cb;
  op_release_t *rel = callmem_alloc(&engine->callmem, sizeof *rel);
  if (rel == NULL)
    return ST_ENOMEM;
  *rel = (op_release_t){.lock = lock, .done_cb = done_cb, .arg = arg};
  *out = &rel->op;
  return ST_OK;
}

static status_t watch_op_make(op_t **out, engine_t *engine, redlock_lock_t *lock, uint32_t ttl_ms,
                              redlock_done_cb done_cb, redlock_lost_cb lost_cb, void *arg) {
  (void)ttl_ms;
  (void)done_cb;
  op_watch_t *watch = callmem_alloc(&engine->callmem, sizeof *watch);
  tb_timer_t *timer = rl_malloc(sizeof *timer);
  if (watch == NULL || timer == NULL) {
    callmem_release(&engine->callmem, watch);
    rl_free(timer);
    return ST_ENOMEM;
  }
  *watch = (op_watch_t){.lock = lock,
                        .handle = lock,
                        .lost_cb = lost_cb,
                        .arg = arg,
                        .max_hold_ms = ttl_ms,
                        .timer = timer};
  *out = &watch->op;
  return ST_OK;
}

status_t target_op_new(op_t **out, engine_t *engine, const target_kind_t *kind,
                       redlock_lock_t *lock, uint32_t ttl_ms, redlock_done_cb done_cb,
                       redlock_lost_cb lost_cb, void *arg) {
  *out = NULL;
  status_t st = kind->make(out, engine, lock, ttl_ms, done_cb, lost_cb, arg);
  if (st == ST_OK) {
    (*out)->ops = &kind->ops;
    (*out)->engine = engine;
  }
  return st;
}

status_t lock_claim_locked(op_t *op) {
  engine_t *engine = op->engine;
  const target_kind_t *kind = container_of(op->ops, target_kind_t, ops);
  /* The handle the op acts on. */
  redlock_lock_t **lock = (redlock_lock_t **)(void *)((char *)op + kind->lock_offset);
  /* The value, not its address: a stale value is in no live set (handle.h). */
  if (!ptrset_contains(&engine->live_locks, *lock))
    return ST_EINVAL;
  if (kind->claims_handle)
    ptrset_remove(&engine->live_locks, *lock);
  *lock = lock_of(*lock);
  if (!kind->claims_handle) {
    *lock = (*lock)->lease; /* a hold extends and watches its lease */
    (*lock)->refs++;
  }
  return ST_OK;
}

/* ---- op life cycle ------------------------------------------------------------ */

static void acquire_release_memory(op_acquire_t *op) {
  callmem_t *mem = &op->op.engine->callmem;
  callmem_release(mem, op->keys);
  callmem_release(mem, op->fence_keys);
  callmem_release(mem, op);
}

static void acquire_op_free(op_t *op) {
  op_acquire_t *acq = OP_AS(op_acquire_t, op, &acquire_op_ops, op);
  /* The timer is a block of its own: it closes on its own (it cannot fire
   * any more), while the op goes back to the client's free list now, not
   * from a close callback that may run after the client is freed. */
  if (acq->retry_timer != NULL)
    tb_timer_close(acq->retry_timer, timer_closed);
  acquire_release_memory(acq);
}

static void extend_op_free(op_t *op) {
  callmem_release(&op->engine->callmem, OP_AS(op_extend_t, op, &target_extend.ops, op));
}

static void release_op_free(op_t *op) {
  callmem_release(&op->engine->callmem, OP_AS(op_release_t, op, &target_release.ops, op));
}

static void watch_op_free(op_t *op) {
  op_watch_t *watch = OP_AS(op_watch_t, op, &target_watch.ops, op);
  rl_free(watch->timer); /* not taken by the lease: never initialised */
  callmem_release(&op->engine->callmem, watch);
}

/* The end every call shares, after its callback: the call's reference on
 * its lock goes (release: the live one), the op is freed, and a close may go
 * on. */
static void op_end(op_t *op, redlock_lock_t *ref) {
  engine_t *engine = op->engine;
  if (ref != NULL)
    lock_unref(ref);
  op_free(op);
  engine->owner->op_ended(engine->owner_arg);
}

static void op_unlink(op_t *op) {
  if (list_linked(&op->link))
    list_remove(&op->link);
}

/* The `op` label of an acquisition: its kind's (a permit or a read-write
 * hold is counted apart from a lock). */
static stats_op_t acquire_stats_kind(const op_acquire_t *op) {
  return op->mode == LOCK_MODE_WAIT ? op->prim.ops->stats_wait_op : op->prim.ops->stats_op;
}

/* ---- cancellation by id --------------------------------------------------------- */

status_t acquire_register_locked(op_acquire_t *op, uint64_t *id) {
  engine_t *engine = op->op.engine;
  uint64_t next = engine->last_call_id + 1;
  if (op->mode != LOCK_MODE_REENTER) {
    if (idmap_put(&engine->calls, next, op) != ST_OK)
      return ST_ENOMEM;
    op->call_id = next;
  }
  engine->last_call_id = next;
  *id = next;
  return ST_OK;
}

status_t acquire_cancel_locked(engine_t *engine, uint64_t id, int *wake, int *late) {
  *wake = 0;
  *late = 0;
  if (id == 0 || id > engine->last_call_id)
    return ST_EINVAL;
  op_acquire_t *op = idmap_get(&engine->calls, id);
  if (op == NULL) {
    *late = 1;
    return ST_OK;
  }
  if (!op->cancel_asked) {
    op->cancel_asked = 1;
    list_insert_tail(&engine->cancels, &op->cancel_link);
    *wake = 1;
  }
  return ST_OK;
}

/* 1 when the call must stop: canceled on the loop, or asked by
 * redlock_cancel (not yet taken by the loop: it is marked canceled now, so
 * that nothing more is sent for it). */
static int acquire_stopped(op_acquire_t *op) {
  if (op->canceled || op->call_id == 0)
    return op->canceled;
  engine_t *engine = op->op.engine;
  uv_mutex_lock(engine->mutex);
  int asked = op->cancel_asked;
  uv_mutex_unlock(engine->mutex);
  if (asked)
    op->canceled = 1;
  return op->canceled;
}

/* The grant's decision point: 1 when the call is canceled (a cancel asked
 * before this is its outcome), else it leaves the registry (a cancel from
 * now on is too late) and 0. */
static int acquire_commit(op_acquire_t *op) {
  if (op->canceled || op->call_id == 0)
    return op->canceled;
  engine_t *engine = op->op.engine;
  uv_mutex_lock(engine->mutex);
  int asked = op->cancel_asked;
  if (!asked)
    idmap_remove(&engine->calls, op->call_id);
  uv_mutex_unlock(engine->mutex);
  if (asked)
    op->canceled = 1;
  return asked;
}

/* The end's decision point (any status but a grant, which acquire_commit
 * decided): the call leaves the registry and the cancel queue; 1 when a
 * cancel was asked first, which then is its outcome. */
static int acquire_settle(op_acquire_t *op) {
  if (op->call_id == 0)
    return 0;
  engine_t *engine = op->op.engine;
  uv_mutex_lock(engine->mutex);
  idmap_remove(&engine->calls, op->call_id);
  if (list_linked(&op->cancel_link))
    list_remove(&op->cancel_link);
  int asked = op->cancel_asked;
  uv_mutex_unlock(engine->mutex);
  return asked;
}

/* Tells the caller the call's outcome, once: the waiter's subscription
 * goes, the stats and the event, the callback.  Usually from
 * acquire_finish; earlier for a call canceled while its round is out. */
static void acquire_report(op_acquire_t *op, status_t status, redlock_lock_t *lock) {
  engine_t *engine = op->op.engine;
  if (op->reported)
    return;
  op->reported = 1;
  if (op->waiter.channel != NULL) /* most calls never waited for a release */
    notify_unwait(engine->notify, &op->waiter);
  if (engine->stats != NULL) {
    if (op->wait_deadline_ns != 0) /* set by acquire_start, with the gauge */
      stats_gauge(engine->stats, STATS_GAUGE_WAITERS, -1);
    /* Before the callback: the event may name the lock. */
    const char *resource = lock != NULL       ? lock->lease->resource
                           : op->keys != NULL ? op->keys[0] + op->prefix_len
                                              : NULL;
    engine_call_finished(engine, acquire_stats_kind(op), status, op, op->started_ns, resource,
                         (int)op->attempts);
  }
  redlock_lock_cb cb = op->lock_cb;
  op->lock_cb = NULL;
  if (cb != NULL)
    cb(status, lock != NULL ? lock->handle : NULL, op->arg);
}

/* Takes the acquisition out of the in-flight list, runs its callback once
 * (unless it ran already), frees it. */
static void acquire_finish(op_acquire_t *op, status_t status, redlock_lock_t *lock) {
  if (acquire_settle(op) && lock == NULL)
    status = ST_ECANCELED;
  if (op->prim.ops->op_end != NULL)
    op->prim.ops->op_end(op, status); /* e.g. a writer that gives up withdraws its intent */
  op_unlink(&op->op);
  acquire_report(op, status, lock);
  op_end(&op->op, NULL);
}

static void extend_finish(op_extend_t *op, status_t status) {
  op_unlink(&op->op);
  engine_call_finished(op->op.engine, STATS_OP_EXTEND, status, op, 0,
                       op->lock != NULL ? op->lock->resource : NULL, -1);
  if (op->done_cb != NULL)
    op->done_cb(status, op->arg);
  op_end(&op->op, op->lock);
}

static void release_finish(op_release_t *op, status_t status) {
  op_unlink(&op->op);
  engine_call_finished(op->op.engine, STATS_OP_RELEASE, status, op, 0,
                       op->lock != NULL ? op->lock->resource : NULL, -1);
  if (op->done_cb != NULL)
    op->done_cb(status, op->arg);
  op_end(&op->op, op->lock);
}

static void watch_finish(op_watch_t *op) {
  op_unlink(&op->op);
  op_end(&op->op, op->lock);
}

/* Ends an op that never started (close, parked): status to its callback. */
static void acquire_op_fail(op_t *op, status_t status) {
  acquire_finish(OP_AS(op_acquire_t, op, &acquire_op_ops, op), status, NULL);
}

static void extend_op_fail(op_t *op, status_t status) {
  extend_finish(OP_AS(op_extend_t, op, &target_extend.ops, op), status);
}

static void release_op_fail(op_t *op, status_t status) {
  release_finish(OP_AS(op_release_t, op, &target_release.ops, op), status);
}

static void watch_op_fail(op_t *op, status_t status) {
  (void)status; /* redlock_watch has no callback to tell */
  watch_finish(OP_AS(op_watch_t, op, &target_watch.ops, op));
}

/* ---- lock ------------------------------------------------------------------------ */

static void lock_attempt(op_acquire_t *op);

static void retry_timer_cb(tb_timer_t *timer) { lock_attempt(timer->data); }

void lock_wake(notify_waiter_t *waiter) {
  op_acquire_t *op = container_of(waiter, op_acquire_t, waiter);
  stats_wakeup(op->op.engine->stats);
  if (op->waiter.in_attempt) {
    op->waiter.woken = 1;
    return;
  }
  if (op->retry_timer != NULL)
    tb_timer_stop(op->retry_timer);
  lock_attempt(op);
}

/* Registers a waiting op for the release announcements of what it waits on:
 * the channel its kind named when its op was made (a lock: its first key's;
 * prims.h).  Out of memory, the op just polls on its fallback timer. */
static void lock_wait_for_release(op_acquire_t *op) {
  notify_wait(op->op.engine->notify, &op->waiter, op->prim.channel, op->prim.channel_len,
              op->prim.ops->wake_mode);
}

static status_t lock_wait_end_status(status_t last_attempt) {
  if (last_attempt == ST_ENOQUORUM || last_attempt == ST_ENOMEM)
    return last_attempt;
  return ST_ETIMEDOUT;
}

static void lock_retry_or_finish(op_acquire_t *op, status_t status) {
  engine_t *engine = op->op.engine;
  if (acquire_stopped(op)) {
    acquire_finish(op, ST_ECANCELED, NULL);
    return;
  }
  /* Too many masters run no scripts for this kind of lock: no retry can
   * change that (a master gains Lua only at a new handshake). */
  if (status == ST_ENOTSUP) {
    acquire_finish(op, status, NULL);
    return;
  }
  uint64_t delay = quorum_retry_delay_ms(engine->opts->retry_delay_ms,
                                         engine->opts->retry_jitter_ms, engine_random(engine));
  if (op->prim.ops->retry_delay_ms != NULL)
    delay = op->prim.ops->retry_delay_ms(op, delay);
  switch (op->mode) {
  case LOCK_MODE_TRY:
  case LOCK_MODE_REENTER:
    acquire_finish(op, status, NULL);
    return;
  case LOCK_MODE_RETRY:
    if (engine->opts->retry_count >= 0 && op->attempts > (unsigned)engine->opts->retry_count) {
      acquire_finish(op, status, NULL);
      return;
    }
    break;
  case LOCK_MODE_WAIT: {
    uint64_t now = engine_now_ns(engine);
    if (now >= op->wait_deadline_ns) {
      /* The last attempt says why the wait ended: held by another is a
       * timeout; too few masters answering is an outage, which a caller
       * that skips busy locks must not mistake for busy. */
      acquire_finish(op, lock_wait_end_status(status), NULL);
      return;
    }
    /* Held by someone: be woken by its release rather than poll for it.
     * The timer stays as the fallback for expiry and foreign releases. */
    if (status == ST_ELOCKED && op->waiter.channel == NULL)
      lock_wait_for_release(op);
    if (op->waiter.woken) {
      op->waiter.woken = 0;
      delay = 0; /* a release was announced while this attempt was out */
    }
    uint64_t left_ms = (op->wait_deadline_ns - now + 999999) / 1000000;
    if (delay > left_ms)
      delay = left_ms; /* one last attempt at the end of the budget */
    break;
  }
  }
  if (op->retry_timer == NULL) {
    op->retry_timer = rl_malloc(sizeof *op->retry_timer);
    if (op->retry_timer == NULL) {
      acquire_finish(op, ST_ENOMEM, NULL);
      return;
    }
    if (tb_timer_init(engine->tb, op->retry_timer, op) != 0) {
      rl_free(op->retry_timer);
      op->retry_timer = NULL;
      acquire_finish(op, ST_EIO, NULL);
      return;
    }
  }
  if (tb_timer_start(op->retry_timer, retry_timer_cb, delay) != 0)
    acquire_finish(op, ST_EIO, NULL);
}

/* A won round (the acquisition, or with fencing its write-back): grant the
 * lock if validity is left, measured from the start of the acquisition.
 * Returns 0 when the call ended (granted, or a cancelable call that could
 * not be granted after its commit), else the status of the failed attempt. */
static status_t lock_grant(op_acquire_t *op, uint64_t decided_ns) {
  engine_t *engine = op->op.engine;
  if (acquire_stopped(op))
    return ST_ECANCELED;
  uint64_t elapsed = decided_ns - op->attempt_started_ns;
  if (quorum_validity_ns(op->ttl_ms, elapsed, engine->opts->drift_factor) <
      QUORUM_MIN_VALIDITY_NS) {
    engine_log(engine, REDLOCK_LOG_WARN,
               "lock %s: quorum won but it took %llu us of a %u ms ttl: no validity left",
               op->keys[0], (unsigned long long)(elapsed / 1000), op->ttl_ms);
    return ST_EEXPIRED;
  }
  /* Only now, right before the grant: a cancel is too late from here on. */
  if (acquire_commit(op))
    return ST_ECANCELED;
  redlock_lock_t *lock = NULL;
  if (lock_create(&lock, op, op->attempt_started_ns) != ST_OK) {
    if (op->call_id == 0)
      return ST_ENOMEM; /* a failed attempt: retried by the call's policy */
    /* Committed: a cancel was told it is too late, so the call cannot go on
     * to another attempt (which that cancel would not stop).  It ends here,
     * after releasing what the round set. */
    op->waiter.in_attempt = 0;
    if (op->set_mask != 0)
      release_attempt(engine, op);
    acquire_finish(op, ST_ENOMEM, NULL);
    return ST_OK;
  }
  acquire_finish(op, ST_OK, lock);
  return ST_OK;
}

/* The attempt failed: release wherever our value may be, then retry or end. */
static void lock_attempt_failed(op_acquire_t *op, const round_t *round, status_t status) {
  engine_t *engine = op->op.engine;
  op->waiter.in_attempt = 0;
  notify_attempt_done(&op->waiter);
  /* A master whose reply was lost may still have applied the SET. */
  if (op->set_mask != 0)
    release_attempt(engine, op);
  if (round != NULL && engine_log_enabled(engine, REDLOCK_LOG_DEBUG))
    engine_log(engine, REDLOCK_LOG_DEBUG,
               "lock %s: attempt %u failed: %s (%u yes, %u no, %u failed)", op->keys[0],
               op->attempts, redlock_err_name(status), round->yes, round->no, round->failed);
  if (status == ST_EINVAL) {
    acquire_finish(op, status, NULL); /* e.g. a semaphore's limit disagreement: never retried */
    return;
  }
  /* A semaphore tries its slots one after another within a pass.  (Never a
   * deep recursion: "held" needs a quorum of replies, which come from the
   * network, so the next slot's round is decided in a later callback.) */
  if (op->prim.ops->next_slot != NULL && op->prim.ops->next_slot(op, status)) {
    lock_attempt(op);
    return;
  }
  lock_retry_or_finish(op, status);
}

static status_t lost_status(const round_t *round, quorum_outcome_t outcome) {
  return outcome == QUORUM_LOST_HELD ? ST_ELOCKED : round_noquorum_status(round);
}

static void on_fence_commit_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  op_acquire_t *op = ctx;
  status_t status = lost_status(round, outcome);
  if (outcome == QUORUM_WON && (status = lock_grant(op, round->decided_ns)) == 0)
    return;
  /* The write-back round touched no lock key; the acquisition did. */
  lock_attempt_failed(op, NULL, status);
}

/* Fencing: write the token back to every master before granting, so that
 * every later grant, on any quorum, sees a counter at least this high. */
static status_t fence_commit(op_acquire_t *op, const round_t *acquired) {
  uint64_t token = 0;
  for (unsigned i = 0; i < acquired->n_votes; i++)
    if (acquired->votes[i].state == VOTE_YES && (uint64_t)acquired->votes[i].integer > token)
      token = (uint64_t)acquired->votes[i].integer;
  op->fence = token;
  char token_str[24];
  size_t n = resp_u64_to_dec(token, token_str);
  round_t *round = NULL;
  status_t st = op->prim.ops->fence_round(op, token_str, n, on_fence_commit_decided, &round);
  if (st != ST_OK)
    return st;
  send_for(&op->op, round);
  return ST_OK;
}

static void on_acquire_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  op_acquire_t *op = ctx;
  status_t status = lost_status(round, outcome);
  op->set_mask = round_set_mask(round);
  /* A permit's or a hold's script may refuse with a reason (kind.h). */
  status_t verdict =
      op->prim.ops->acquire_verdict != NULL ? op->prim.ops->acquire_verdict(op, round) : ST_OK;
  if (verdict != ST_OK) {
    lock_attempt_failed(op, round, verdict);
    return;
  }
  if (outcome == QUORUM_WON) {
    if (op->fenced && !acquire_stopped(op)) {
      status = fence_commit(op, round);
      if (status == ST_OK)
        return;
    } else if ((status = lock_grant(op, round->decided_ns)) == ST_OK) {
      return;
    }
  }
  lock_attempt_failed(op, round, status);
}

status_t lock_value_new(engine_t *engine, char *out, size_t *len) {
  status_t rc = random_pool_lock_value(engine->values, out);
  *len = RANDOM_VALUE_LEN;
  const struct redlock_options *o = engine->opts;
  if (o->owner_len > 0) { /* the owner label after the random part */
    out[RANDOM_VALUE_LEN] = OPTIONS_OWNER_SEP;
    memcpy(out + RANDOM_VALUE_LEN + 1, o->owner, o->owner_len + 1);
    *len = RANDOM_VALUE_LEN + 1 + o->owner_len;
  }
  return rc;
}

static void lock_attempt(op_acquire_t *op) {
  if (acquire_stopped(op)) {
    acquire_finish(op, ST_ECANCELED, NULL);
    return;
  }
  op->attempts++;
  status_t rc = lock_value_new(op->op.engine, op->value, &op->value_len);
  if (rc == ST_OK && op->fenced && op->fence_keys == NULL)
    rc = op_make_fence_keys(op);
  if (rc != ST_OK) {
    acquire_finish(op, rc, NULL);
    return;
  }
  round_t *round = NULL;
  status_t st = op->prim.ops->acquire_round(op, on_acquire_decided, &round);
  if (st != ST_OK) {
    acquire_finish(op, st, NULL);
    return;
  }
  op->waiter.in_attempt = 1;
  op->attempt_started_ns = engine_now_ns(op->op.engine);
  if (op->attempts == 1)
    op->started_ns = op->attempt_started_ns;
  send_for(&op->op, round);
}

/* ---- extend ------------------------------------------------------------------------ */

/* Lowers the lock's end of validity to what an extension round that started
 * at started_ns with ttl_ms could have left on the masters; never raises it. */
static void lock_cap_expiry(redlock_lock_t *lock, uint64_t started_ns, uint32_t ttl_ms) {
  int64_t cap = lock_end_ns(lock, started_ns, ttl_ms);
  if (cap < atomic_load(&lock->expires_ns))
    atomic_store(&lock->expires_ns, cap);
}

/* Called right before an extension round of the lock is sent: caps the
 * validity at what ttl_ms leaves from now (from the moment it is written, a
 * master may run it, and a shorter ttl shortens the keys whatever the
 * round's outcome; now is before the round's own start, so this errs
 * short), and numbers the round (extend_outcome). */
static uint64_t extend_sent(redlock_lock_t *lock, uint32_t ttl_ms) {
  lock_cap_expiry(lock, engine_now_ns(lock->engine), ttl_ms);
  return ++lock->extends_sent;
}

/* Applies an extension round's outcome to the lock; returns the status.
 * Every master that ran the script set the new ttl, shorter or longer than
 * what was left, whatever the round's outcome, so extend_sent capped the
 * validity before the round went out (docs/safety.md §8.3) and a round that
 * fails leaves it there.  A won round raises it only if no later extension
 * of the lock was sent: a master runs one connection's requests in order,
 * so the last round sent is the last to set the ttl wherever it ran, but an
 * earlier round decided after it (its votes came late) may not be (seq:
 * extend_sent's number of this round). */
static status_t extend_outcome(redlock_lock_t *lock, const round_t *round, quorum_outcome_t outcome,
                               uint32_t ttl_ms, uint64_t seq) {
  /* Where the script re-installed our value the key is ours again, whatever
   * the outcome: the release must reach those masters too. */
  lock->set_mask |= round_set_mask(round);
  if (outcome == QUORUM_WON) {
    int64_t validity = quorum_validity_ns(ttl_ms, round->decided_ns - round->started_ns,
                                          lock->engine->opts->drift_factor);
    if (validity < QUORUM_MIN_VALIDITY_NS)
      return ST_EEXPIRED;
    if (seq == lock->extends_sent) {
      if (atomic_load(&lock->expires_ns) <= (int64_t)round->decided_ns) {
        /* The validity ran out while the round was in flight.  A won round
         * does not say that the key stayed ours meanwhile: its yes votes
         * may be re-installs after another client held the lock and let go
         * of it (docs/safety.md §8.3).  Never revived, as never extended
         * once expired. */
        lock_mark_lost(lock, ST_ELOST);
        return ST_ELOST;
      }
      lock->ttl_ms = ttl_ms;
      lock_set_expiry(lock, round->started_ns, ttl_ms);
    }
    return ST_OK;
  }
  if (outcome == QUORUM_LOST_HELD) {
    /* A quorum answered, too few yes: the others found another value (or,
     * for a hold, what its acquisition script would refuse), so someone
     * else may hold it. */
    lock_mark_lost(lock, ST_ELOST);
    return ST_ELOST;
  }
  return round_noquorum_status(round);
}

static void on_extend_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  op_extend_t *op = ctx;
  extend_finish(op, extend_outcome(op->lock, round, outcome, op->ttl_ms, op->seq));
}

static void extend_start(op_extend_t *op) {
  redlock_lock_t *lock = op->lock;
  if (atomic_load(&lock->lost) || lock_validity_ns(lock) <= 0) {
    /* Possibly held by another by now: extending could overlap its hold. */
    lock_mark_lost(lock, ST_ELOST);
    extend_finish(op, ST_ELOST);
    return;
  }
  round_t *round = NULL;
  status_t st =
      lock->prim.ops->extend_round(op->op.engine, lock, op->ttl_ms, on_extend_decided, op, &round);
  if (st != ST_OK) {
    extend_finish(op, st);
    return;
  }
  op->seq = extend_sent(lock, op->ttl_ms);
  send_for(&op->op, round);
}

/* ---- release ----------------------------------------------------------------------- */

static void lock_stop_watch(redlock_lock_t *lock) {
  if (lock->watch.active)
    stats_gauge(lock->engine->stats, STATS_GAUGE_WATCHED, -1);
  lock->watch.active = 0;
  if (lock->watch.timer != NULL)
    tb_timer_stop(lock->watch.timer);
}

static void on_release_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  op_release_t *op = ctx;
  status_t status = outcome == QUORUM_WON         ? ST_OK
                    : outcome == QUORUM_LOST_HELD ? ST_ELOST
                                                  : round_noquorum_status(round);
  release_finish(op, status);
}

/* Lets go of one handle; returns how many handles its lease still has. */
static unsigned lock_drop_handle(redlock_lock_t *handle) {
  engine_t *engine = handle->engine;
  redlock_lock_t *lease = handle->lease;
  uv_mutex_lock(engine->mutex);
  unsigned remaining = --lease->reentry.handles;
  if (handle != lease)
    list_remove(&handle->hold_link);
  if (remaining == 0 && list_linked(&lease->reentry.link))
    list_remove(&lease->reentry.link);
  uv_mutex_unlock(engine->mutex);
  if (handle != lease)
    callmem_handle_free(&engine->callmem, handle);
  return remaining;
}

static void release_start(op_release_t *op) {
  engine_t *engine = op->op.engine;
  redlock_lock_t *lock = op->lock->lease;
  if (lock->watch.handle == op->lock->handle)
    lock_stop_watch(lock); /* releasing the watched handle ends the watch */
  if (lock_drop_handle(op->lock) > 0) {
    /* Other handles still share the lock: it stays held. */
    op->lock = NULL;
    release_finish(op, ST_OK);
    return;
  }
  op->lock = lock; /* the release ends with the lease's last reference */
  if (list_linked(&lock->held_link)) {
    list_remove(&lock->held_link);
    stats_gauge(engine->stats, STATS_GAUGE_HELD, -1);
  }
  lock_stop_watch(lock);
  round_t *round = NULL;
  status_t st = lock->prim.ops->release_round(engine, lock, on_release_decided, op, &round);
  if (st != ST_OK) {
    release_finish(op, st);
    return;
  }
  send_for(&op->op, round);
}

/* ---- watch (automatic extension) -------------------------------------------------- */

static void watch_schedule(redlock_lock_t *lock);

static void on_watch_extend_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  redlock_lock_t *lock = ctx;
  lock->watch.extending = 0;
  if (lock->watch.active) {
    status_t status = extend_outcome(lock, round, outcome, lock->watch.ttl_ms, lock->watch.seq);
    engine_renewed(lock->engine, lock, round, status);
    if (status == ST_OK)
      lock->watch.failures = 0;
    else if (status != ST_ELOST)
      engine_log(lock->engine, lock->watch.failures++ == 0 ? REDLOCK_LOG_WARN : REDLOCK_LOG_DEBUG,
                 "watch %s: extension failed (%s); retrying while %lld ms of validity remain",
                 lock->resource, redlock_err_name(status),
                 (long long)(lock_validity_ns(lock) / 1000000));
    if (lock->watch.active)
      watch_schedule(lock);
  }
  lock_unref(lock); /* the extension's reference */
}

/* A bounded watch at its bound: the release goes out first (announced, so
 * waiters are woken), then the lease is marked lost, which stops the watch
 * and tells its owner why.  The handles stay live and the lease stays among
 * the held ones, as a lost lease does: the holder still unlocks (or an
 * election drops) it, or close releases and frees it. */
static void lock_end_hold(redlock_lock_t *lock) {
  engine_t *engine = lock->engine;
  round_t *round = NULL;
  status_t built = lock->prim.ops->release_round(engine, lock, NULL, NULL, &round);
  release_send(engine, built, round, lock->keys[0]);
  lock_mark_lost(lock, ST_MAX_HOLD);
}

/* 1 when a bounded watch has reached its bound. */
static int watch_hold_spent(const redlock_lock_t *lock) {
  return lock->watch.hold_end_ns != 0 && engine_now_ns(lock->engine) >= lock->watch.hold_end_ns;
}

static void watch_timer_cb(tb_timer_t *timer) {
  redlock_lock_t *lock = timer->data;
  engine_t *engine = lock->engine;
  if (!lock->watch.active)
    return;
  if (watch_hold_spent(lock)) {
    lock_end_hold(lock); /* an extension still out finds the watch stopped */
    return;
  }
  if (lock->watch.extending)
    return;
  if (lock_validity_ns(lock) <= 0) {
    lock_mark_lost(lock, ST_ELOST);
    return;
  }
  round_t *round = NULL;
  if (lock->prim.ops->extend_round(engine, lock, lock->ttl_ms, on_watch_extend_decided, lock,
                                   &round) != ST_OK) {
    watch_schedule(lock);
    return;
  }
  lock->watch.ttl_ms = lock->ttl_ms;
  lock->watch.seq = extend_sent(lock, lock->watch.ttl_ms);
  uv_mutex_lock(engine->mutex);
  lock->refs++;
  uv_mutex_unlock(engine->mutex);
  lock->watch.extending = 1;
  round_send(round);
}

/* Next extension when a third of the ttl is left, a little earlier at random
 * and on the client's renewal tick (quorum_watch_delay_ms says why); after a
 * failure, retry once per request timeout (not on the tick: a retry drawn
 * early could fire at once, again and again) but never later than the end of
 * validity (where it is declared lost). */
static void watch_schedule(redlock_lock_t *lock) {
  int64_t validity_ns = lock_validity_ns(lock);
  int64_t delay = 0;
  if (lock->watch.failures == 0) { /* after a failure: the retry schedule below */
    uint32_t early = engine_random(lock->engine) % (quorum_watch_spread_ms(lock->ttl_ms) + 1);
    delay = (int64_t)quorum_watch_delay_ms(validity_ns / 1000000, lock->ttl_ms,
                                           tb_timer_now_ms(lock->engine->tb), early);
  }
  if (delay <= 0) {
    /* Retrying: once per request timeout, and last at the end of validity,
     * where the timer finds it spent and declares the lock lost. */
    int64_t until_end = validity_ns > 0 ? (validity_ns + 999999) / 1000000 : 0;
    delay = (int64_t)lock->engine->opts->request_timeout_ms;
    if (delay > until_end)
      delay = until_end;
  }
  if (lock->watch.hold_end_ns != 0) { /* never past the bound */
    uint64_t now = engine_now_ns(lock->engine);
    int64_t to_end = lock->watch.hold_end_ns > now
                         ? (int64_t)((lock->watch.hold_end_ns - now + 999999) / 1000000)
                         : 0;
    if (delay > to_end)
      delay = to_end;
  }
  tb_timer_start(lock->watch.timer, watch_timer_cb, (uint64_t)(delay > 0 ? delay : 1));
}

status_t lock_watch_begin(redlock_lock_t *lock, redlock_lock_t *handle, redlock_lost_cb lost_cb,
                          void *arg, uint32_t max_hold_ms, tb_timer_t **spare) {
  engine_t *engine = lock->engine;
  if (lock->watch.timer == NULL) {
    if (spare != NULL && *spare != NULL) {
      lock->watch.timer = *spare;
      *spare = NULL;
    } else {
      lock->watch.timer = rl_malloc(sizeof *lock->watch.timer);
    }
    if (lock->watch.timer == NULL)
      return ST_ENOMEM;
    if (tb_timer_init(engine->tb, lock->watch.timer, lock) != 0) {
      rl_free(lock->watch.timer);
      lock->watch.timer = NULL;
      return ST_EIO;
    }
  }
  lock->watch.lost_cb = lost_cb;
  lock->watch.lost_arg = arg;
  lock->watch.handle = handle;
  lock->watch.hold_end_ns =
      max_hold_ms != 0 ? lock->granted_ns + (uint64_t)max_hold_ms * 1000000u : 0;
  if (!lock->watch.active)
    stats_gauge(engine->stats, STATS_GAUGE_WATCHED, +1);
  lock->watch.active = 1;
  if (atomic_load(&lock->lost) || lock_validity_ns(lock) <= 0) {
    atomic_store(&lock->lost, 0);
    lock_mark_lost(lock, ST_ELOST);
  } else if (watch_hold_spent(lock)) {
    lock_end_hold(lock);
  } else {
    watch_schedule(lock);
  }
  return ST_OK;
}

static void watch_start(op_watch_t *op) {
  /* Cannot fail: the timer came with the op (redlock_watch has no done
   * callback to report a failure to). */
  (void)lock_watch_begin(op->lock, op->handle, op->lost_cb, op->arg, op->max_hold_ms, &op->timer);
  watch_finish(op);
}

/* ---- dispatch and close -------------------------------------------------------- */

static void acquire_start(op_acquire_t *op) {
  op->dispatched = 1;
  if (acquire_stopped(op)) { /* canceled before the loop took it */
    acquire_finish(op, ST_ECANCELED, NULL);
    return;
  }
  if (op->mode == LOCK_MODE_REENTER) {
    redlock_lock_t *hold = op->hold;
    op->hold = NULL;
    acquire_finish(op, ST_OK, hold);
    return;
  }
  if (op->mode == LOCK_MODE_WAIT) {
    op->wait_deadline_ns = engine_now_ns(op->op.engine) + (uint64_t)op->wait_ms * 1000000u;
    stats_gauge(op->op.engine->stats, STATS_GAUGE_WAITERS, +1); /* until acquire_finish */
  }
  lock_attempt(op);
}

/* The calls' dispatch: each goes in the in-flight list (for close) and
 * starts. */
static void acquire_op_dispatch(op_t *op) {
  list_insert_tail(&op->engine->ops_in_flight, &op->link);
  acquire_start(OP_AS(op_acquire_t, op, &acquire_op_ops, op));
}

static void extend_op_dispatch(op_t *op) {
  list_insert_tail(&op->engine->ops_in_flight, &op->link);
  extend_start(OP_AS(op_extend_t, op, &target_extend.ops, op));
}

static void release_op_dispatch(op_t *op) {
  list_insert_tail(&op->engine->ops_in_flight, &op->link);
  release_start(OP_AS(op_release_t, op, &target_release.ops, op));
}

static void watch_op_dispatch(op_t *op) {
  list_insert_tail(&op->engine->ops_in_flight, &op->link);
  watch_start(OP_AS(op_watch_t, op, &target_watch.ops, op));
}

static const op_ops_t acquire_op_ops = {.name = "lock",
                                        .acquires = 1,
                                        .dispatch = acquire_op_dispatch,
                                        .fail = acquire_op_fail,
                                        .free = acquire_op_free};

const target_kind_t target_extend = {.ops = {.name = "extend",
                                             .acquires = 0,
                                             .dispatch = extend_op_dispatch,
                                             .fail = extend_op_fail,
                                             .free = extend_op_free},
                                     .make = extend_op_make,
                                     .lock_offset = offsetof(op_extend_t, lock),
                                     .claims_handle = 0};

const target_kind_t target_release = {.ops = {.name = "release",
                                              .acquires = 0,
                                              .dispatch = release_op_dispatch,
                                              .fail = release_op_fail,
                                              .free = release_op_free},
                                      .make = release_op_make,
                                      .lock_offset = offsetof(op_release_t, lock),
                                      .claims_handle = 1};

const target_kind_t target_watch = {.ops = {.name = "watch",
                                            .acquires = 0,
                                            .dispatch = watch_op_dispatch,
                                            .fail = watch_op_fail,
                                            .free = watch_op_free},
                                    .make = watch_op_make,
                                    .lock_offset = offsetof(op_watch_t, lock),
                                    .claims_handle = 0};

static void orphan_lock_cb(int status, redlock_lock_t *handle, void *arg) {
  (void)status;
  (void)arg;
  if (handle != NULL) /* cannot happen: a cancelled attempt is never granted */
    lock_release_lease(lock_of(handle));
}

void acquire_abandon(op_acquire_t *op) {
  op->lock_cb = orphan_lock_cb;
  op->arg = NULL;
  op->canceled = 1;
  if (!op->waiter.in_attempt) /* parked, or waiting for a retry: end it now */
    acquire_finish(op, ST_ECANCELED, NULL);
}

/* A cancel the loop takes (lock_run_cancels). */
static void acquire_cancel_now(op_acquire_t *op) {
  if (op->op.parked) { /* waiting for the masters' first connection attempts */
    list_remove(&op->op.link);
    op->op.parked = 0;
    acquire_finish(op, ST_ECANCELED, NULL);
    return;
  }
  if (!op->dispatched || op->reported)
    return; /* still queued: acquire_start ends it; reported: its round ends it */
  op->canceled = 1;
  if (!op->waiter.in_attempt) { /* waiting for a retry or a release: end it now */
    acquire_finish(op, ST_ECANCELED, NULL);
    return;
  }
  /* A round is out: the caller is told now; the round, once decided, is not
   * granted, what it set is released, and the op ends (lock_attempt_failed). */
  acquire_report(op, ST_ECANCELED, NULL);
}

void lock_run_cancels(engine_t *engine) {
  /* One at a time, each taken under the mutex: ending one call may end
   * another (its op then leaves the queue, under the mutex, as it ends). */
  for (;;) {
    uv_mutex_lock(engine->mutex);
    op_acquire_t *op = NULL;
    if (!list_empty(&engine->cancels)) {
      op = list_entry(engine->cancels.next, op_acquire_t, cancel_link);
      list_remove(&op->cancel_link);
    }
    uv_mutex_unlock(engine->mutex);
    if (op == NULL)
      return;
    acquire_cancel_now(op);
  }
}

void lock_cancel_all(engine_t *engine) {
  list_node_t *it = engine->ops_in_flight.next;
  while (it != &engine->ops_in_flight) {
    op_t *op = list_entry(it, op_t, link);
    it = it->next;
    if (op->ops != &acquire_op_ops)
      continue;
    op_acquire_t *acq = OP_AS(op_acquire_t, op, &acquire_op_ops, op);
    acq->canceled = 1;
    if (!acq->waiter.in_attempt) /* waiting for a retry: end it now */
      acquire_finish(acq, ST_ECANCELED, NULL);
  }
  /* No renewal from here on: a lease waiting for its release turn below
   * must not be extended meanwhile. */
  for (list_node_t *h = engine->held_locks.next; h != &engine->held_locks; h = h->next)
    lock_stop_watch(list_entry(h, redlock_lock_t, held_link));
  lock_release_held(engine);
}

int lock_release_held(engine_t *engine) {
  while (!list_empty(&engine->held_locks) && round_env_pending(engine->rounds) < LOCK_CLOSE_WINDOW)
    lock_release_lease(list_entry(engine->held_locks.next, redlock_lock_t, held_link));
  return !list_empty(&engine->held_locks);
}

void lock_release_lease(redlock_lock_t *lock) {
  engine_t *engine = lock->engine;
  if (list_linked(&lock->held_link)) {
    list_remove(&lock->held_link);
    stats_gauge(engine->stats, STATS_GAUGE_HELD, -1);
  }
  lock_stop_watch(lock);
  /* Every handle of the lease goes: the lease itself and its holds. */
  uv_mutex_lock(engine->mutex);
  ptrset_remove(&engine->live_locks, lock->handle);
  while (!list_empty(&lock->reentry.holds)) {
    redlock_lock_t *hold = list_entry(lock->reentry.holds.next, redlock_lock_t, hold_link);
    list_remove(&hold->hold_link);
    ptrset_remove(&engine->live_locks, hold->handle);
    callmem_handle_free(&engine->callmem, hold);
  }
  lock->reentry.handles = 0;
  if (list_linked(&lock->reentry.link))
    list_remove(&lock->reentry.link);
  uv_mutex_unlock(engine->mutex);
  round_t *round = NULL;
  status_t built = lock->prim.ops->release_round(engine, lock, NULL, NULL, &round);
  release_send(engine, built, round, lock->keys[0]);
  lock_unref(lock); /* its live reference */
}
