/* calls.c: the public lock calls.  Validates arguments on the caller's
 * thread (a call that returns an error never runs its callback), builds an
 * op, queues it for the loop, and for the blocking forms waits on a
 * semaphore that the loop posts at the end of the turn in which it ran the
 * op's callback (client_defer_wake).  Also the lock accessors and
 * redlock_last_votes, whose text round.c makes (votes_format). */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api/calls.h"
#include "api/client.h"
#include "api/stats.h"
#include "engine/inspect.h"
#include "engine/lock.h"
#include "engine/observe.h"
#include "engine/revoke.h"
#include "proto/keyname.h"
#include "proto/keyslot.h"
#include "util/alloc.h"

/* ---- lock accessors ------------------------------------------------------------ */

/* Each accessor reads the handle behind the application's value (handle.h). */

int64_t redlock_lock_validity_ms(const redlock_lock_t *value) {
  if (value == NULL)
    return 0;
  int64_t left = lock_validity_ns(lock_of(value)->lease);
  /* Round toward zero so that a positive result is never an overstatement. */
  return left / 1000000;
}

uint64_t redlock_lock_fence(const redlock_lock_t *value) {
  return value != NULL ? lock_of(value)->lease->fence : 0;
}

const char *redlock_lock_resource(const redlock_lock_t *value) {
  return value != NULL ? lock_of(value)->lease->resource : NULL;
}

const char *redlock_lock_value(const redlock_lock_t *value) {
  return value != NULL ? lock_of(value)->lease->value : NULL;
}

const char *redlock_lock_owner(const redlock_lock_t *value) {
  if (value == NULL)
    return NULL;
  const redlock_lock_t *lease = lock_of(value)->lease;
  return lease->value_len > RANDOM_VALUE_LEN ? lease->value + RANDOM_VALUE_LEN + 1 : "";
}

int redlock_lock_is_lost(const redlock_lock_t *value) {
  if (value == NULL)
    return 1;
  return lock_is_lost(lock_of(value)->lease);
}

/* ---- the last votes ------------------------------------------------------------ */

/* Whose votes a thread reads: on the client's own loop thread (a callback),
 * the latest, which is the round of the call whose callback runs; elsewhere
 * the thread's own last call, or the latest if it has made none the book
 * still holds.  Under the mutex. */
static const votes_entry_t *votes_for_me(const redlock_t *client) {
  if (client_on_loop_thread(client))
    return &client->votes.latest;
  uv_thread_t self = uv_thread_self();
  const votes_entry_t *mine = votes_book_find(&client->votes, &self);
  return mine != NULL ? mine : &client->votes.latest;
}

int redlock_last_votes(redlock_t *client, char *buf, size_t size) {
  if (client == NULL || (buf == NULL && size > 0))
    return REDLOCK_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return REDLOCK_EFORKED;
  uv_mutex_lock(&client->mutex);
  int total =
      votes_format(votes_for_me(client), client->voters.n, client_master_label, client, buf, size);
  uv_mutex_unlock(&client->mutex);
  return total;
}

/* ---- op construction ---------------------------------------------------------- */

status_t calls_check_name(const char *resource) {
  if (resource == NULL)
    return ST_EINVAL;
  size_t len = strnlen(resource, REDLOCK_MAX_RESOURCE_LEN + 1);
  return len == 0 || len > REDLOCK_MAX_RESOURCE_LEN ? ST_EINVAL : ST_OK;
}

status_t calls_check_key(const redlock_t *client, const char *resource, int mutex) {
  int rc = calls_check_name(resource);
  if (rc != 0)
    return rc;
  const redlock_options_t *o = &client->opts;
  size_t len = strlen(resource);
  /* The key is judged whole: a prefix may spell part of a reserved name.
   * On the stack (no allocation on the lock path); most clients have no
   * prefix and judge the resource itself. */
  char buf[REDLOCK_MAX_PREFIX_LEN + REDLOCK_MAX_RESOURCE_LEN + 1];
  const char *key = resource;
  if (o->key_prefix_len > 0) {
    memcpy(buf, o->key_prefix, o->key_prefix_len);
    memcpy(buf + o->key_prefix_len, resource, len + 1);
    key = buf;
  }
  const char *why = keyname_reserved(key, o->key_prefix_len + len, mutex);
  if (why == NULL)
    return ST_OK;
  log_write(&client->log, REDLOCK_LOG_WARN, "name '%s' refused (key '%s'): %s", resource, key, why);
  return ST_EINVAL;
}

status_t calls_check_ttl(const redlock_t *client, uint32_t ttl_ms) {
  if (ttl_ms == 0) {
    log_write(&client->log, REDLOCK_LOG_WARN, "ttl 0 ms refused: a ttl is at least 1 ms");
    return ST_EINVAL;
  }
  if (ttl_ms > client->opts.max_ttl_ms) {
    log_write(&client->log, REDLOCK_LOG_WARN,
              "ttl %" PRIu32 " ms is above the max TTL %" PRIu32
              " ms (redlock_options_set_max_ttl)",
              ttl_ms, client->opts.max_ttl_ms);
    return ST_EINVAL;
  }
  return ST_OK;
}

/* An acquisition for the calling thread (the reentrancy owner of its
 * lease), fenced as the client's option says: ST_OK with *out, or
 * ST_ENOMEM. */
static status_t caller_acquire_op(op_acquire_t **out, redlock_t *client, lock_mode_t mode,
                                  uint32_t ttl_ms, uint32_t wait_ms, redlock_lock_cb cb,
                                  void *arg) {
  return acquire_op_new(out, &client->engine,
                        &(acquire_params_t){.mode = mode,
                                            .ttl_ms = ttl_ms,
                                            .wait_ms = wait_ms,
                                            .fenced = client->opts.fencing,
                                            .owned = 1,
                                            .cb = cb,
                                            .arg = arg});
}

/* A multi-resource lock is one script per voter, which a Redis Cluster
 * runs only when every key is in one hash slot (else -CROSSSLOT): with a
 * cluster voter, resources that hash apart are refused here, with why in
 * the log.  (A hash tag puts them together: "{order-42}:items".)  So is a
 * key whose derived names (fence counter, release channel) cannot share
 * its slot (keyname_in_slot: a '}' without a hash tag). */
static status_t check_one_slot(redlock_t *client, const char *const *resources, size_t n) {
  if (!client->voters.has_cluster)
    return ST_OK;
  const redlock_options_t *o = &client->opts;
  /* One resource with no '}' (the usual lock): nothing to hash or refuse. */
  if (n == 1 && memchr(o->key_prefix, '}', o->key_prefix_len) == NULL &&
      strchr(resources[0], '}') == NULL)
    return ST_OK;
  char *key = rl_malloc(o->key_prefix_len + REDLOCK_MAX_RESOURCE_LEN + 1);
  if (key == NULL)
    return ST_ENOMEM;
  memcpy(key, o->key_prefix, o->key_prefix_len);
  int first = -1, rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    size_t len = strlen(resources[i]);
    memcpy(key + o->key_prefix_len, resources[i], len);
    int slot = keyslot(key, o->key_prefix_len + len);
    if (!keyname_in_slot(key, o->key_prefix_len + len)) {
      log_write(&client->log, REDLOCK_LOG_ERROR,
                "'%s': with a cluster voter a key with a '}' needs a hash tag ({tag}name), or "
                "its fence counter and release channel cannot share its slot; refused",
                resources[i]);
      rc = ST_EINVAL;
    } else if (i == 0) {
      first = slot;
    } else if (slot != first) {
      log_write(&client->log, REDLOCK_LOG_ERROR,
                "redlock_lock_many: '%s' and '%s' are in hash slots %d and %d: with a cluster "
                "voter every resource of one lock must be in one slot (give them a hash tag, "
                "e.g. {tag}:name); refused",
                resources[0], resources[i], first, slot);
      rc = ST_EINVAL;
    }
  }
  rl_free(key);
  return rc;
}

static status_t lock_op_new(redlock_t *client, const char *const *resources, size_t n,
                            uint32_t ttl_ms, lock_mode_t mode, uint32_t wait_ms, redlock_lock_cb cb,
                            void *arg, op_acquire_t **out) {
  *out = NULL;
  if (client == NULL || resources == NULL || n == 0 || n > REDLOCK_MAX_MANY)
    return ST_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return ST_EFORKED;
  for (size_t i = 0; i < n; i++) {
    int checked = calls_check_key(client, resources[i], 1);
    if (checked != 0)
      return checked;
    for (size_t j = 0; j < i; j++)
      if (strcmp(resources[i], resources[j]) == 0)
        return ST_EINVAL; /* a key twice would never be all-or-nothing */
  }
  if (calls_check_ttl(client, ttl_ms) != ST_OK)
    return ST_EINVAL;
  int rc = check_one_slot(client, resources, n);
  if (rc != 0)
    return rc;
  op_acquire_t *op = NULL;
  if (caller_acquire_op(&op, client, mode, ttl_ms, wait_ms, cb, arg) != ST_OK)
    return ST_ENOMEM;
  rc = acquire_op_set_keys(op, resources, n);
  if (rc != 0) {
    op_free(&op->op);
    return rc;
  }
  *out = op;
  return ST_OK;
}

/* Queues an op that targets a live lock (lock_claim_locked says how it
 * claims the handle). */
static status_t submit_lock_op(redlock_t *client, op_t *op) {
  int rc = 0;
  uv_mutex_lock(&client->mutex);
  if (client->queue.state != CLIENT_OPEN)
    rc = ST_ECLOSED;
  else
    rc = lock_claim_locked(op);
  if (rc == 0)
    client_enqueue_locked(client, op);
  uv_mutex_unlock(&client->mutex);
  return rc;
}

/* Builds and queues an extend, release or watch op for `lock`. */
static status_t lock_target_op_full(redlock_t *client, redlock_lock_t *lock,
                                    const target_kind_t *kind, uint32_t ttl_ms, redlock_done_cb cb,
                                    redlock_lost_cb lost_cb, void *arg) {
  if (client == NULL || lock == NULL)
    return ST_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return ST_EFORKED;
  if (kind == &target_extend && calls_check_ttl(client, ttl_ms) != ST_OK)
    return ST_EINVAL;
  op_t *op = NULL;
  if (target_op_new(&op, &client->engine, kind, lock, ttl_ms, cb, lost_cb, arg) != ST_OK)
    return ST_ENOMEM;
  int rc = submit_lock_op(client, op);
  if (rc != 0)
    op_free(op);
  return rc;
}

static status_t lock_target_op(redlock_t *client, redlock_lock_t *lock, const target_kind_t *kind,
                               uint32_t ttl_ms, redlock_done_cb cb, void *arg) {
  return lock_target_op_full(client, lock, kind, ttl_ms, cb, NULL, arg);
}

/* ---- async forms ------------------------------------------------------------------ */

/* Queues an acquisition.  With id (an _ex form) it is registered first, in
 * the same hold of the mutex, so that redlock_cancel finds it as soon as
 * *id is written, which is before the loop can see the op (and so before
 * any callback). */
static status_t submit_acquire(redlock_t *client, op_acquire_t *op, uint64_t *id) {
  if (id == NULL)
    return client_submit(client, &op->op);
  uv_mutex_lock(&client->mutex);
  int rc = client->queue.state != CLIENT_OPEN ? ST_ECLOSED : acquire_register_locked(op, id);
  if (rc == 0)
    client_enqueue_locked(client, &op->op);
  uv_mutex_unlock(&client->mutex);
  return rc;
}

static status_t lock_async_many(redlock_t *client, const char *const *resources, size_t n,
                                uint32_t ttl_ms, lock_mode_t mode, uint32_t wait_ms,
                                redlock_lock_cb cb, void *arg, uint64_t *id) {
  if (id != NULL)
    *id = 0;
  if (cb == NULL)
    return ST_EINVAL;
  op_acquire_t *op;
  int rc = lock_op_new(client, resources, n, ttl_ms, mode, wait_ms, cb, arg, &op);
  if (rc != 0)
    return rc;
  if (client->opts.reentrant && n == 1)
    rc = acquire_op_reenter(op, resources[0]);
  if (rc == 0)
    rc = submit_acquire(client, op, id);
  if (rc != 0)
    op_free(&op->op);
  return rc;
}

int redlock_lock_async(redlock_t *client, const char *resource, uint32_t ttl_ms, uint32_t wait_ms,
                       redlock_lock_cb cb, void *arg) {
  return redlock_lock_async_ex(client, resource, ttl_ms, wait_ms, cb, arg, NULL);
}

int redlock_lock_async_ex(redlock_t *client, const char *resource, uint32_t ttl_ms,
                          uint32_t wait_ms, redlock_lock_cb cb, void *arg, uint64_t *id) {
  const char *resources[1] = {resource};
  return lock_async_many(client, resources, 1, ttl_ms,
                         wait_ms > 0 ? LOCK_MODE_WAIT : LOCK_MODE_RETRY, wait_ms, cb, arg, id);
}

int redlock_lock_many_async(redlock_t *client, const char *const *resources, size_t n,
                            uint32_t ttl_ms, redlock_lock_cb cb, void *arg) {
  return redlock_lock_many_async_ex(client, resources, n, ttl_ms, cb, arg, NULL);
}

int redlock_lock_many_async_ex(redlock_t *client, const char *const *resources, size_t n,
                               uint32_t ttl_ms, redlock_lock_cb cb, void *arg, uint64_t *id) {
  return lock_async_many(client, resources, n, ttl_ms, LOCK_MODE_RETRY, 0, cb, arg, id);
}

int redlock_cancel(redlock_t *client, uint64_t id) {
  if (client == NULL)
    return REDLOCK_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return REDLOCK_EFORKED;
  int rc, wake = 0, late = 0;
  uv_mutex_lock(&client->mutex);
  if (client->queue.state != CLIENT_OPEN) {
    rc = REDLOCK_ECLOSED; /* the close ends every call (ECANCELED for those it cancels) */
  } else {
    rc = acquire_cancel_locked(&client->engine, id, &wake, &late);
    if (wake)
      client_wake_locked(client);
  }
  uv_mutex_unlock(&client->mutex);
  return rc == REDLOCK_OK && late ? REDLOCK_CANCEL_LATE : rc;
}

int redlock_extend_async(redlock_t *client, redlock_lock_t *lock, uint32_t ttl_ms,
                         redlock_done_cb cb, void *arg) {
  return lock_target_op(client, lock, &target_extend, ttl_ms, cb, arg);
}

int redlock_unlock_async(redlock_t *client, redlock_lock_t *lock, redlock_done_cb cb, void *arg) {
  return lock_target_op(client, lock, &target_release, 0, cb, arg);
}

int redlock_watch(redlock_t *client, redlock_lock_t *lock, redlock_lost_cb lost_cb, void *arg) {
  return lock_target_op_full(client, lock, &target_watch, 0, NULL, lost_cb, arg);
}

/* ---- blocking forms ------------------------------------------------------------- */

typedef struct {
  sync_waiter_t waiter; /* posted by the loop at the end of the turn (client_loop.c) */
  redlock_t *client;
  int status;
  redlock_lock_t *lock;
} sync_call_t;

static void sync_lock_cb(int status, redlock_lock_t *lock, void *arg) {
  sync_call_t *call = arg;
  call->status = status;
  call->lock = lock;
  client_defer_wake(call->client, &call->waiter);
}

static void sync_done_cb(int status, void *arg) {
  sync_call_t *call = arg;
  call->status = status;
  client_defer_wake(call->client, &call->waiter);
}

/* Ready for a sync_* callback; REDLOCK_EIO when no semaphore can be made. */
static status_t sync_start(sync_call_t *call, redlock_t *client) {
  call->client = client;
  call->lock = NULL;
  return uv_sem_init(&call->waiter.sem, 0) == 0 ? ST_OK : ST_EIO;
}

/* Waits for the call submitted with a sync_* callback; submitted is what the
 * submission returned (a call that was refused never calls back). */
static status_t sync_wait(sync_call_t *call, int submitted) {
  int rc = submitted;
  if (rc == 0) {
    uv_sem_wait(&call->waiter.sem);
    rc = call->status;
  }
  uv_sem_destroy(&call->waiter.sem);
  return rc;
}

static status_t check_blocking(const redlock_t *client) {
  if (client == NULL)
    return ST_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return ST_EFORKED;
  if (!client->run.own_thread || client_on_loop_thread(client))
    return ST_EWOULDBLOCK;
  return ST_OK;
}

/* A blocking acquisition's start: *out cleared, the client checked
 * (check_blocking), the call's wait made ready.  0, or the error to return
 * (nothing to undo). */
static status_t blocking_begin(redlock_t *client, redlock_lock_t **out, sync_call_t *call) {
  if (out == NULL)
    return ST_EINVAL;
  *out = NULL;
  int rc = check_blocking(client);
  return rc != 0 ? rc : sync_start(call, client);
}

static status_t lock_blocking(redlock_t *client, const char *const *resources, size_t n,
                              uint32_t ttl_ms, lock_mode_t mode, uint32_t wait_ms,
                              redlock_lock_t **out) {
  sync_call_t call;
  int rc = blocking_begin(client, out, &call);
  if (rc != 0)
    return rc;
  rc = sync_wait(&call, lock_async_many(client, resources, n, ttl_ms, mode, wait_ms, sync_lock_cb,
                                        &call, NULL));
  *out = call.lock;
  return rc;
}

int redlock_lock(redlock_t *client, const char *resource, uint32_t ttl_ms, redlock_lock_t **out) {
  const char *resources[1] = {resource};
  return lock_blocking(client, resources, 1, ttl_ms, LOCK_MODE_RETRY, 0, out);
}

int redlock_trylock(redlock_t *client, const char *resource, uint32_t ttl_ms,
                    redlock_lock_t **out) {
  const char *resources[1] = {resource};
  return lock_blocking(client, resources, 1, ttl_ms, LOCK_MODE_TRY, 0, out);
}

int redlock_lock_wait(redlock_t *client, const char *resource, uint32_t ttl_ms, uint32_t wait_ms,
                      redlock_lock_t **out) {
  const char *resources[1] = {resource};
  return lock_blocking(client, resources, 1, ttl_ms, LOCK_MODE_WAIT, wait_ms, out);
}

int redlock_lock_many(redlock_t *client, const char *const *resources, size_t n, uint32_t ttl_ms,
                      redlock_lock_t **out) {
  return lock_blocking(client, resources, n, ttl_ms, LOCK_MODE_RETRY, 0, out);
}

static status_t target_blocking(redlock_t *client, redlock_lock_t *lock, const target_kind_t *kind,
                                uint32_t ttl_ms) {
  int rc = check_blocking(client);
  if (rc != 0) {
    /* Unlock always lets go of the handle: on the loop thread it still
     * releases, just without waiting for the masters. */
    if (rc == ST_EWOULDBLOCK && kind == &target_release) {
      int queued = lock_target_op(client, lock, &target_release, 0, NULL, NULL);
      if (queued != 0)
        return queued; /* e.g. a stale handle: EINVAL, as anywhere else */
    }
    return rc;
  }
  sync_call_t call;
  if ((rc = sync_start(&call, client)) != 0)
    return rc;
  return sync_wait(&call, lock_target_op(client, lock, kind, ttl_ms, sync_done_cb, &call));
}

int redlock_extend(redlock_t *client, redlock_lock_t *lock, uint32_t ttl_ms) {
  return target_blocking(client, lock, &target_extend, ttl_ms);
}

int redlock_unlock(redlock_t *client, redlock_lock_t *lock) {
  return target_blocking(client, lock, &target_release, 0);
}

/* ---- coordination primitives: semaphore, read-write lock (prims.h) ---------------- */

static status_t prim_async(redlock_t *client, const lock_kind_ops_t *kind, const char *name,
                           uint32_t limit, uint32_t ttl_ms, uint32_t wait_ms, redlock_lock_cb cb,
                           void *arg, uint64_t *id) {
  if (id != NULL)
    *id = 0;
  if (client == NULL || cb == NULL)
    return ST_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return ST_EFORKED;
  int checked = calls_check_key(client, name, 0);
  if (checked != 0)
    return checked;
  if (calls_check_ttl(client, ttl_ms) != ST_OK)
    return ST_EINVAL;
  if (kind == &kind_sem && (limit == 0 || limit > REDLOCK_MAX_SEM_LIMIT))
    return ST_EINVAL;
  /* No reentrancy and no retry policy: one try (a semaphore: one pass over
   * its slots), or waiting woken by releases. */
  op_acquire_t *op = NULL;
  if (caller_acquire_op(&op, client, wait_ms > 0 ? LOCK_MODE_WAIT : LOCK_MODE_TRY, ttl_ms, wait_ms,
                        cb, arg) != ST_OK)
    return ST_ENOMEM;
  int rc = prim_op_init(op, kind, name, limit);
  if (rc == 0)
    rc = submit_acquire(client, op, id);
  if (rc != 0)
    op_free(&op->op);
  return rc;
}

static status_t prim_blocking(redlock_t *client, const lock_kind_ops_t *kind, const char *name,
                              uint32_t limit, uint32_t ttl_ms, uint32_t wait_ms,
                              redlock_lock_t **out) {
  sync_call_t call;
  int rc = blocking_begin(client, out, &call);
  if (rc != 0)
    return rc;
  rc = sync_wait(&call,
                 prim_async(client, kind, name, limit, ttl_ms, wait_ms, sync_lock_cb, &call, NULL));
  *out = call.lock;
  return rc;
}

int redlock_semaphore_acquire(redlock_t *client, const char *name, uint32_t limit, uint32_t ttl_ms,
                              uint32_t wait_ms, redlock_lock_t **out) {
  return prim_blocking(client, &kind_sem, name, limit, ttl_ms, wait_ms, out);
}

int redlock_rwlock_read(redlock_t *client, const char *name, uint32_t ttl_ms, uint32_t wait_ms,
                        redlock_lock_t **out) {
  return prim_blocking(client, &kind_rw_read, name, 0, ttl_ms, wait_ms, out);
}

int redlock_rwlock_write(redlock_t *client, const char *name, uint32_t ttl_ms, uint32_t wait_ms,
                         redlock_lock_t **out) {
  return prim_blocking(client, &kind_rw_write, name, 0, ttl_ms, wait_ms, out);
}

int redlock_semaphore_acquire_async(redlock_t *client, const char *name, uint32_t limit,
                                    uint32_t ttl_ms, uint32_t wait_ms, redlock_lock_cb cb,
                                    void *arg) {
  return prim_async(client, &kind_sem, name, limit, ttl_ms, wait_ms, cb, arg, NULL);
}

int redlock_rwlock_read_async(redlock_t *client, const char *name, uint32_t ttl_ms,
                              uint32_t wait_ms, redlock_lock_cb cb, void *arg) {
  return prim_async(client, &kind_rw_read, name, 0, ttl_ms, wait_ms, cb, arg, NULL);
}

int redlock_rwlock_write_async(redlock_t *client, const char *name, uint32_t ttl_ms,
                               uint32_t wait_ms, redlock_lock_cb cb, void *arg) {
  return prim_async(client, &kind_rw_write, name, 0, ttl_ms, wait_ms, cb, arg, NULL);
}

int redlock_semaphore_acquire_async_ex(redlock_t *client, const char *name, uint32_t limit,
                                       uint32_t ttl_ms, uint32_t wait_ms, redlock_lock_cb cb,
                                       void *arg, uint64_t *id) {
  return prim_async(client, &kind_sem, name, limit, ttl_ms, wait_ms, cb, arg, id);
}

int redlock_rwlock_read_async_ex(redlock_t *client, const char *name, uint32_t ttl_ms,
                                 uint32_t wait_ms, redlock_lock_cb cb, void *arg, uint64_t *id) {
  return prim_async(client, &kind_rw_read, name, 0, ttl_ms, wait_ms, cb, arg, id);
}

int redlock_rwlock_write_async_ex(redlock_t *client, const char *name, uint32_t ttl_ms,
                                  uint32_t wait_ms, redlock_lock_cb cb, void *arg, uint64_t *id) {
  return prim_async(client, &kind_rw_write, name, 0, ttl_ms, wait_ms, cb, arg, id);
}

/* ---- stats ------------------------------------------------------------------------ */

/* ---- inspect, revoke, who leads (inspect.c, revoke.c, observe.c) ------------------ */

/* Submits op, when it was made (made: ST_OK, or the error that left nothing
 * to queue), and waits for it; its status. */
static status_t admin_blocking(redlock_t *client, sync_call_t *call, status_t made, op_t *op) {
  if (made == ST_OK) {
    made = client_submit(client, op);
    if (made != ST_OK)
      op_free(op);
  }
  return sync_wait(call, made);
}

int redlock_inspect(redlock_t *client, const char *name, int kind, char *buf, size_t size) {
  if (buf == NULL && size > 0)
    return REDLOCK_EINVAL;
  int rc = check_blocking(client);
  if (rc != 0)
    return rc;
  if (kind < REDLOCK_INSPECT_LOCK || kind > REDLOCK_INSPECT_ELECTION)
    return REDLOCK_EINVAL;
  rc = calls_check_key(client, name,
                       kind == REDLOCK_INSPECT_LOCK || kind == REDLOCK_INSPECT_ELECTION);
  sync_call_t call;
  if (rc != 0 || (rc = sync_start(&call, client)) != 0)
    return rc;
  op_t *op = NULL;
  size_t len = 0;
  rc = inspect_op_new(&op, &client->engine, name, kind, buf, size, &len, sync_done_cb, &call);
  rc = admin_blocking(client, &call, rc, op);
  if (rc == 0 && len > INT_MAX)
    return REDLOCK_ENOMEM; /* a view longer than an int can say */
  return rc == 0 ? (int)len : rc;
}

int redlock_election_leader(redlock_t *client, const char *name, redlock_leader_t *out) {
  if (out == NULL)
    return REDLOCK_EINVAL;
  memset(out, 0, sizeof *out);
  int rc = check_blocking(client);
  if (rc != 0)
    return rc;
  sync_call_t call;
  if ((rc = calls_check_key(client, name, 1)) != 0 || (rc = sync_start(&call, client)) != 0)
    return rc;
  op_t *op = NULL;
  rc = leader_op_new(&op, &client->engine, name, out, sync_done_cb, &call);
  return admin_blocking(client, &call, rc, op);
}

int redlock_revoke(redlock_t *client, const char *resource, uint64_t *fence_out) {
  if (fence_out != NULL)
    *fence_out = 0;
  int rc = check_blocking(client);
  if (rc != 0)
    return rc;
  sync_call_t call;
  if ((rc = calls_check_key(client, resource, 1)) != 0 || (rc = sync_start(&call, client)) != 0)
    return rc;
  op_t *op = NULL;
  rc = revoke_op_new(&op, &client->engine, resource, fence_out, sync_done_cb, &call);
  return admin_blocking(client, &call, rc, op);
}

int redlock_stats(redlock_t *client, int format, char *buf, size_t size) {
  if (client == NULL || (buf == NULL && size > 0) ||
      (format != REDLOCK_STATS_PROMETHEUS && format != REDLOCK_STATS_JSON))
    return REDLOCK_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return REDLOCK_EFORKED;
  /* In the client until the text is written: a close waits for this call
   * before it frees the figures and the masters' names they read. */
  int rc = client_enter(client);
  if (rc != 0)
    return rc;
  if (client->stats == NULL || client->opts.stats_off)
    rc = REDLOCK_ENOTSUP;
  else
    rc = stats_render(client->stats, format, buf, size);
  client_leave(client);
  return rc;
}

int redlock_watch_bounded(redlock_t *client, redlock_lock_t *lock, uint32_t max_hold_ms,
                          redlock_lost_cb lost_cb, void *arg) {
  if (max_hold_ms == 0)
    return REDLOCK_EINVAL;
  /* The watch's op keeps its bound where the other kinds keep a ttl. */
  return lock_target_op_full(client, lock, &target_watch, max_hold_ms, NULL, lost_cb, arg);
}
