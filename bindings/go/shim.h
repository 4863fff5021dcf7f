/* shim.h: C glue between the Go package and libredlock.  The library's
 * callbacks take a `void *arg`; the Go side passes a registry id (uintptr_t)
 * through it, never a Go pointer (cgo's pointer rules), and these
 * trampolines turn it back into an integer before calling the exported Go
 * functions.  Defined in shim.c (a file with //export may only declare). */
#ifndef REDLOCK_GO_SHIM_H
#define REDLOCK_GO_SHIM_H
#include <redlock.h>
#include <stdint.h>
#include <stdlib.h>

/* The _ex forms: *id receives the call's id for redlock_cancel. */
int rlgo_lock_async_ex(redlock_t *c, const char *resource, uint32_t ttl_ms, uint32_t wait_ms,
                       uintptr_t arg, uint64_t *id);
int rlgo_lock_many_async_ex(redlock_t *c, char **resources, size_t n, uint32_t ttl_ms,
                            uintptr_t arg, uint64_t *id);
int rlgo_unlock_async_quiet(redlock_t *c, redlock_lock_t *lock);
int rlgo_watch(redlock_t *c, redlock_lock_t *lock, uintptr_t id);
int rlgo_watch_bounded(redlock_t *c, redlock_lock_t *lock, uint32_t max_hold_ms, uintptr_t id);
int rlgo_semaphore_acquire_async_ex(redlock_t *c, const char *name, uint32_t limit, uint32_t ttl_ms,
                                    uint32_t wait_ms, uintptr_t arg, uint64_t *id);
int rlgo_rwlock_read_async_ex(redlock_t *c, const char *name, uint32_t ttl_ms, uint32_t wait_ms,
                              uintptr_t arg, uint64_t *id);
int rlgo_rwlock_write_async_ex(redlock_t *c, const char *name, uint32_t ttl_ms, uint32_t wait_ms,
                               uintptr_t arg, uint64_t *id);
int rlgo_elect(redlock_t *c, const char *name, uint32_t ttl_ms, uintptr_t id,
               redlock_election_t **out);
int rlgo_elect_bounded(redlock_t *c, const char *name, uint32_t ttl_ms, uint32_t max_hold_ms,
                       uintptr_t id, redlock_election_t **out);
int rlgo_set_log(redlock_options_t *o, int min_level, uintptr_t id);
int rlgo_election_observe(redlock_t *c, const char *name, uint32_t poll_ms, uintptr_t id,
                          redlock_observer_t **out);
#endif
