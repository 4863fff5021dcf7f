/* test_alloc_cycle.c: how many heap allocations the library makes per
 * steady-state lock + unlock cycle, counted by the library's allocator table
 * (redlock_set_allocator: every allocation of the library goes through the
 * counters below), while hiredis, libuv and libc keep their own allocators
 * (hiredis 1.x's, which redlock_set_allocator points at the table, is reset
 * to libc's: hiredis' allocations per command are not the library's).  Only
 * the library runs during the counted
 * window: the test thread just calls redlock_lock / redlock_unlock (no log
 * callback), and the loop thread runs library code.
 *
 * The steady state makes none: the client keeps free lists (pool.h) of what a cycle would allocate,
 * ops, their key blocks, rounds and handles, and the live-handle set does not rehash once grown.
 * The median cycle is judged, not the mean: on a loaded machine a cycle may retry, whose timer is
 * allocated, or have two rounds out where one would do (a pool may be short of a block once); the
 * mean is printed. */
#include <hiredis/hiredis.h>
#if HIREDIS_MAJOR >= 1
#include <hiredis/alloc.h>
#endif

#include "fixture.h"

/* Before the free lists: 6 (acquire op, its key block, the acquisition
 * round, the handle, the release op, the release round). */
#define ALLOCS_PER_CYCLE_MAX 0
#define WARMUP_CYCLES 200
#define COUNTED_CYCLES 200

static atomic_ulong allocs;
static atomic_ulong frees;

static void *count_malloc(size_t size) {
  atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
  return malloc(size);
}

static void *count_calloc(size_t n, size_t size) {
  atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
  return calloc(n, size);
}

static void *count_realloc(void *p, size_t size) {
  atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
  return realloc(p, size);
}

static void count_free(void *p) {
  atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
  free(p);
}

/* n cycles; per_cycle (if not NULL): the allocations of each. */
static void cycles(redlock_t *c, const char *res, int n, unsigned long *per_cycle) {
  for (int i = 0; i < n; i++) {
    unsigned long before = atomic_load(&allocs);
    redlock_lock_t *lock = NULL;
    assert_int_equal(redlock_lock(c, res, 10000, &lock), REDLOCK_OK);
    assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
    if (per_cycle != NULL)
      per_cycle[i] = atomic_load(&allocs) - before;
  }
}

static int cmp_ulong(const void *a, const void *b) {
  unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
  return (x > y) - (x < y);
}

static void test_steady_state_allocations(void **state) {
  fx_t *fx = *state;
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, FX_NO_LOG));
  char res[128];
  fx_name(res, sizeof res, "alloc");
  cycles(c, res, WARMUP_CYCLES, NULL);
  static unsigned long per_cycle[COUNTED_CYCLES];
  unsigned long a0 = atomic_load(&allocs), f0 = atomic_load(&frees);
  cycles(c, res, COUNTED_CYCLES, per_cycle);
  unsigned long a = atomic_load(&allocs) - a0, f = atomic_load(&frees) - f0;
  qsort(per_cycle, COUNTED_CYCLES, sizeof per_cycle[0], cmp_ulong);
  unsigned long median = per_cycle[COUNTED_CYCLES / 2];
  fprintf(stderr,
          "steady state: %.2f allocations (median %lu), %.2f frees per lock + unlock cycle\n",
          (double)a / COUNTED_CYCLES, median, (double)f / COUNTED_CYCLES);
  assert_true(median <= ALLOCS_PER_CYCLE_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      FX_TEST(test_steady_state_allocations, 3),
  };
  const redlock_allocator_t table = {.malloc_fn = count_malloc,
                                     .calloc_fn = count_calloc,
                                     .realloc_fn = count_realloc,
                                     .free_fn = count_free};
  if (redlock_set_allocator(&table) != REDLOCK_OK)
    abort();
#if HIREDIS_MAJOR >= 1
  hiredisResetAllocators();
#endif
  return cmocka_run_group_tests(tests, NULL, NULL);
}
