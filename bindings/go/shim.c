/* shim.c: see shim.h. */
#include "shim.h"
#include "_cgo_export.h"

static void lock_tramp(int status, redlock_lock_t *lock, void *arg) {
  goLockCallback(status, lock, (uintptr_t)arg);
}

static void lost_tramp(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  goLostCallback(reason, (uintptr_t)arg);
}

static void log_tramp(int level, const char *msg, void *arg) {
  goLogCallback(level, (char *)msg, (uintptr_t)arg);
}

static void elected_tramp(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  goElectedCallback(term, (uintptr_t)arg);
}

static void election_lost_tramp(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  goElectionLostCallback(reason, (uintptr_t)arg);
}

static void leader_tramp(redlock_observer_t *obs, const redlock_leader_t *view, void *arg) {
  (void)obs;
  goLeaderCallback(view->state, view->term, view->ttl_ms, (char *)view->owner, (uintptr_t)arg);
}

int rlgo_lock_async_ex(redlock_t *c, const char *resource, uint32_t ttl_ms, uint32_t wait_ms,
                       uintptr_t arg, uint64_t *id) {
  return redlock_lock_async_ex(c, resource, ttl_ms, wait_ms, lock_tramp, (void *)arg, id);
}

int rlgo_lock_many_async_ex(redlock_t *c, char **resources, size_t n, uint32_t ttl_ms,
                            uintptr_t arg, uint64_t *id) {
  return redlock_lock_many_async_ex(c, (const char *const *)resources, n, ttl_ms, lock_tramp,
                                    (void *)arg, id);
}

int rlgo_semaphore_acquire_async_ex(redlock_t *c, const char *name, uint32_t limit, uint32_t ttl_ms,
                                    uint32_t wait_ms, uintptr_t arg, uint64_t *id) {
  return redlock_semaphore_acquire_async_ex(c, name, limit, ttl_ms, wait_ms, lock_tramp,
                                            (void *)arg, id);
}

int rlgo_rwlock_read_async_ex(redlock_t *c, const char *name, uint32_t ttl_ms, uint32_t wait_ms,
                              uintptr_t arg, uint64_t *id) {
  return redlock_rwlock_read_async_ex(c, name, ttl_ms, wait_ms, lock_tramp, (void *)arg, id);
}

int rlgo_rwlock_write_async_ex(redlock_t *c, const char *name, uint32_t ttl_ms, uint32_t wait_ms,
                               uintptr_t arg, uint64_t *id) {
  return redlock_rwlock_write_async_ex(c, name, ttl_ms, wait_ms, lock_tramp, (void *)arg, id);
}

int rlgo_elect(redlock_t *c, const char *name, uint32_t ttl_ms, uintptr_t id,
               redlock_election_t **out) {
  return redlock_elect(c, name, ttl_ms, elected_tramp, election_lost_tramp, (void *)id, out);
}

int rlgo_elect_bounded(redlock_t *c, const char *name, uint32_t ttl_ms, uint32_t max_hold_ms,
                       uintptr_t id, redlock_election_t **out) {
  return redlock_elect_bounded(c, name, ttl_ms, max_hold_ms, elected_tramp, election_lost_tramp,
                               (void *)id, out);
}

int rlgo_unlock_async_quiet(redlock_t *c, redlock_lock_t *lock) {
  return redlock_unlock_async(c, lock, NULL, NULL);
}

int rlgo_watch(redlock_t *c, redlock_lock_t *lock, uintptr_t id) {
  return redlock_watch(c, lock, lost_tramp, (void *)id);
}

int rlgo_watch_bounded(redlock_t *c, redlock_lock_t *lock, uint32_t max_hold_ms, uintptr_t id) {
  return redlock_watch_bounded(c, lock, max_hold_ms, lost_tramp, (void *)id);
}

int rlgo_set_log(redlock_options_t *o, int min_level, uintptr_t id) {
  return redlock_options_set_log(o, min_level, log_tramp, (void *)id);
}

int rlgo_election_observe(redlock_t *c, const char *name, uint32_t poll_ms, uintptr_t id,
                          redlock_observer_t **out) {
  return redlock_election_observe(c, name, poll_ms, leader_tramp, (void *)id, out);
}
