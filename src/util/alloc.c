/* alloc.c: the allocator table behind rl_malloc and friends (alloc.h) and
 * redlock_set_allocator.  The one process-wide mutable state of the library,
 * as hiredis' hiredisSetAllocators and libuv's uv_replace_allocator: an
 * embedding program chooses its allocator once, for every client.
 *
 * Threads: every allocation, on the loop threads and the callers', reads the
 * table through one atomic pointer (acquire), with no lock.  The table
 * changes only while no client is open (open_clients, counted by the
 * clients), so no allocation of a client ever sees two tables.  Changing it
 * concurrently with any other call of the library is the caller's race, as
 * with hiredis and libuv; docs/api.md says so. */
#include "util/alloc.h"

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"
#if HIREDIS_MAJOR >= 1
#include <hiredis/alloc.h>
#endif

static const redlock_allocator_t libc_allocator = {
    .malloc_fn = malloc, .calloc_fn = calloc, .realloc_fn = realloc, .free_fn = free};

/* The caller's table, copied (theirs may live on the stack): written by
 * redlock_set_allocator while no client is open, before current points at
 * it; read through current. */
static redlock_allocator_t custom_allocator;
/* The table in use: loaded (acquire) by every allocation, on any thread;
 * stored (release) by redlock_set_allocator only. */
static _Atomic(const redlock_allocator_t *) current = &libc_allocator;
/* Clients between alloc_hold and alloc_release, on any thread. */
static atomic_uint open_clients;

static inline const redlock_allocator_t *table(void) {
  return atomic_load_explicit(&current, memory_order_acquire);
}

void *rl_malloc(size_t size) { return table()->malloc_fn(size); }

void *rl_calloc(size_t n, size_t size) { return table()->calloc_fn(n, size); }

void *rl_realloc(void *p, size_t size) { return table()->realloc_fn(p, size); }

void rl_free(void *p) {
  if (p != NULL)
    table()->free_fn(p);
}

char *rl_strdup(const char *s) {
  size_t len = strlen(s) + 1;
  char *copy = rl_malloc(len);
  if (copy != NULL)
    memcpy(copy, s, len);
  return copy;
}

void alloc_hold(void) { atomic_fetch_add_explicit(&open_clients, 1, memory_order_acq_rel); }

void alloc_release(void) { atomic_fetch_sub_explicit(&open_clients, 1, memory_order_acq_rel); }

/* hiredis 1.x allocates through its own table: pointed at ours, so that a
 * connection's buffers and replies come from the embedder's allocator too.
 * hiredis 0.14 has no such hook and keeps libc's. */
static void hiredis_follow(int custom) {
#if HIREDIS_MAJOR >= 1
  if (custom) {
    hiredisAllocFuncs fns = {.mallocFn = rl_malloc,
                             .callocFn = rl_calloc,
                             .reallocFn = rl_realloc,
                             .strdupFn = rl_strdup,
                             .freeFn = rl_free};
    hiredisSetAllocators(&fns);
  } else {
    hiredisResetAllocators();
  }
#else
  (void)custom;
#endif
}

int redlock_set_allocator(const redlock_allocator_t *a) {
  if (a != NULL &&
      (a->malloc_fn == NULL || a->calloc_fn == NULL || a->realloc_fn == NULL || a->free_fn == NULL))
    return REDLOCK_EINVAL;
  if (atomic_load_explicit(&open_clients, memory_order_acquire) != 0)
    return REDLOCK_EINVAL;
  if (a == NULL) {
    atomic_store_explicit(&current, &libc_allocator, memory_order_release);
  } else {
    custom_allocator = *a;
    atomic_store_explicit(&current, &custom_allocator, memory_order_release);
  }
  hiredis_follow(a != NULL);
  return REDLOCK_OK;
}
