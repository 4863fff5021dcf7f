/* oom_alloc.c: the failing allocator of the out-of-memory tests
 * (oom_alloc.h): the library's allocator table (redlock_set_allocator),
 * the libuv and hiredis 1.x allocator hooks, one countdown for all of them,
 * and the per-call alarm. */
#include "oom_alloc.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>
#if HIREDIS_MAJOR >= 1
#include <hiredis/alloc.h>
#endif

#include "redlock.h"

_Thread_local int oom_exempt;
_Thread_local int oom_spared;

static atomic_long oom_left;       /* > 0: armed; the allocation that takes it to 0 fails */
static atomic_int oom_failed;      /* an allocation was failed since arming */
static atomic_ulong n_counted;     /* allocations counted since arming */
static atomic_ulong n_uv_reallocs; /* libuv reallocs while armed (never failed) */
static atomic_ulong n_spared;      /* hiredis allocations spared while armed */
static unsigned oom_alarm_s;       /* the per-call alarm (0: none) */
static char oom_where[160];        /* the case armed, for the alarm's message */

/* 1: fail this allocation. */
static int oom_take(void) {
  if (oom_exempt)
    return 0;
  long left = atomic_load(&oom_left);
  while (left > 0) {
    if (atomic_compare_exchange_weak(&oom_left, &left, left - 1)) {
      atomic_fetch_add(&n_counted, 1);
      if (left > 1)
        return 0;
      atomic_store(&oom_failed, 1);
      return 1;
    }
  }
  return 0;
}

static void *oom_malloc(size_t size) { return oom_take() ? NULL : malloc(size); }

static void *oom_calloc(size_t n, size_t size) { return oom_take() ? NULL : calloc(n, size); }

static void *oom_realloc(void *p, size_t size) { return oom_take() ? NULL : realloc(p, size); }

static void *uv_malloc_hook(size_t size) { return oom_malloc(size); }
static void *uv_calloc_hook(size_t n, size_t size) { return oom_calloc(n, size); }
static void uv_free_hook(void *p) { free(p); }
/* Never failed: libuv aborts when growing its watcher table fails. */
static void *uv_realloc_hook(void *p, size_t size) {
  if (!oom_exempt && atomic_load(&oom_left) > 0)
    atomic_fetch_add(&n_uv_reallocs, 1);
  return realloc(p, size);
}

#if HIREDIS_MAJOR >= 1
/* hiredis' own allocations: as the library's, but for spared ones. */
static int hi_spared(void) {
  if (!oom_spared)
    return 0;
  if (atomic_load(&oom_left) > 0)
    atomic_fetch_add(&n_spared, 1);
  return 1;
}

static void *hi_malloc_hook(size_t size) { return hi_spared() ? malloc(size) : oom_malloc(size); }

static void *hi_calloc_hook(size_t n, size_t size) {
  return hi_spared() ? calloc(n, size) : oom_calloc(n, size);
}

static void *hi_realloc_hook(void *p, size_t size) {
  return hi_spared() ? realloc(p, size) : oom_realloc(p, size);
}

static char *hi_strdup_hook(const char *s) {
  size_t len = strlen(s) + 1;
  char *copy = hi_malloc_hook(len);
  if (copy != NULL)
    memcpy(copy, s, len);
  return copy;
}
#endif

static void oom_alarm(int sig) {
  (void)sig;
  static const char msg[] = "out-of-memory test: call hung: ";
  ssize_t w = write(2, msg, sizeof msg - 1);
  w = write(2, oom_where, strlen(oom_where));
  w = write(2, "\n", 1);
  (void)w;
  _exit(3);
}

void oom_install(unsigned alarm_s) {
  oom_exempt = 1;
  redlock_allocator_t table = {
      .malloc_fn = oom_malloc, .calloc_fn = oom_calloc, .realloc_fn = oom_realloc, .free_fn = free};
  if (redlock_set_allocator(&table) != REDLOCK_OK) {
    fprintf(stderr, "redlock_set_allocator failed\n");
    exit(1);
  }
  if (uv_replace_allocator(uv_malloc_hook, uv_realloc_hook, uv_calloc_hook, uv_free_hook) != 0) {
    fprintf(stderr, "uv_replace_allocator failed\n");
    exit(1);
  }
#if HIREDIS_MAJOR >= 1
  hiredisAllocFuncs fns = {.mallocFn = hi_malloc_hook,
                           .callocFn = hi_calloc_hook,
                           .reallocFn = hi_realloc_hook,
                           .strdupFn = hi_strdup_hook,
                           .freeFn = free};
  /* After redlock_set_allocator, which pointed hiredis at the library's
   * table: hiredis' own allocations are told apart (spared). */
  hiredisSetAllocators(&fns);
#endif
  oom_alarm_s = alarm_s;
  if (alarm_s > 0)
    signal(SIGALRM, oom_alarm);
}

void oom_arm(unsigned k, const char *where) {
  snprintf(oom_where, sizeof oom_where, "%s k=%u", where, k);
  atomic_store(&oom_failed, 0);
  atomic_store(&n_counted, 0);
  atomic_store(&n_uv_reallocs, 0);
  atomic_store(&n_spared, 0);
  if (oom_alarm_s > 0)
    alarm(oom_alarm_s);
  atomic_store(&oom_left, (long)k);
}

int oom_disarm(void) {
  atomic_store(&oom_left, 0);
  if (oom_alarm_s > 0)
    alarm(0);
  return atomic_load(&oom_failed);
}

unsigned long oom_counted(void) { return atomic_load(&n_counted); }
unsigned long oom_uv_reallocs(void) { return atomic_load(&n_uv_reallocs); }
unsigned long oom_spared_allocs(void) { return atomic_load(&n_spared); }
