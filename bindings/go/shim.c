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

int rlgo_lock_async(redlock_t *c, const char *resource, uint32_t ttl_ms, uint32_t wait_ms,
                    uintptr_t id) {
  return redlock_lock_async(c, resource, ttl_ms, wait_ms, lock_tramp, (void *)id);
}

int rlgo_unlock_async_quiet(redlock_t *c, redlock_lock_t *lock) {
  return redlock_unlock_async(c, lock, NULL, NULL);
}

int rlgo_watch(redlock_t *c, redlock_lock_t *lock, uintptr_t id) {
  return redlock_watch(c, lock, lost_tramp, (void *)id);
}

int rlgo_set_log(redlock_options_t *o, int min_level, uintptr_t id) {
  return redlock_options_set_log(o, min_level, log_tramp, (void *)id);
}
