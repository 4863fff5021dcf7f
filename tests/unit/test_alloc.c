/* test_alloc.c: redlock_set_allocator (util/alloc.c) and the library's
 * allocations through it: a counting table sees the allocations of an
 * options object and of a client's open and close (its own loop thread's
 * included), and every block is freed by the close; a table with a NULL
 * function, or any table while a client is open, is refused and the table
 * in use kept; NULL restores libc's; on hiredis 1.x, hiredis' allocations
 * follow the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#if HIREDIS_MAJOR >= 1
#include <hiredis/alloc.h>
#endif

#include "redlock.h"
#include "unit_support.h"
#include "util/alloc.h"

static atomic_long allocs; /* blocks handed out */
static atomic_long frees;  /* blocks given back */

static void *count_malloc(size_t size) {
  void *p = malloc(size);
  if (p != NULL)
    atomic_fetch_add(&allocs, 1);
  return p;
}

static void *count_calloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (p != NULL)
    atomic_fetch_add(&allocs, 1);
  return p;
}

/* A move is a free and an allocation; realloc(NULL, n) only the latter. */
static void *count_realloc(void *old, size_t size) {
  void *p = realloc(old, size);
  if (p != NULL) {
    atomic_fetch_add(&allocs, 1);
    if (old != NULL)
      atomic_fetch_add(&frees, 1);
  }
  return p;
}

static void count_free(void *p) {
  assert_non_null(p); /* the library never hands free_fn NULL */
  atomic_fetch_add(&frees, 1);
  free(p);
}

static const redlock_allocator_t counting = {.malloc_fn = count_malloc,
                                             .calloc_fn = count_calloc,
                                             .realloc_fn = count_realloc,
                                             .free_fn = count_free};

static int reset(void **state) {
  (void)state;
  atomic_store(&allocs, 0);
  atomic_store(&frees, 0);
  return redlock_set_allocator(NULL) == REDLOCK_OK ? 0 : -1;
}

static void test_options_through_table(void **state) {
  (void)state;
  assert_int_equal(redlock_set_allocator(&counting), REDLOCK_OK);
  redlock_options_t *opts = unit_nowhere_options();
  assert_true(atomic_load(&allocs) > 0);
  redlock_options_free(opts);
  assert_int_equal(atomic_load(&frees), atomic_load(&allocs));
}

/* A client over a master that cannot exist: opened, a round run on its
 * loop thread, closed.  hiredis 0.14 and libuv keep libc's allocator, so
 * what the table sees is the library's alone, and balances. */
static void test_client_balances(void **state) {
  (void)state;
  assert_int_equal(redlock_set_allocator(&counting), REDLOCK_OK);
  redlock_options_t *opts = unit_nowhere_options();
  redlock_t *client = NULL;
  assert_int_equal(redlock_open(&client, opts), REDLOCK_OK);
  long opened = atomic_load(&allocs);
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(client, "alloc-hook", 10000, &lock), REDLOCK_ENOQUORUM);
  redlock_close(client);
  redlock_options_free(opts);
  assert_true(opened > 10); /* the client, its options, figures, pools... */
  assert_int_equal(atomic_load(&frees), atomic_load(&allocs));
  print_message("client open + round + close: %ld allocations, all freed\n", atomic_load(&allocs));
}

static void test_refusals(void **state) {
  (void)state;
  redlock_allocator_t partial = counting;
  partial.realloc_fn = NULL;
  assert_int_equal(redlock_set_allocator(&partial), REDLOCK_EINVAL);
  partial = counting;
  partial.free_fn = NULL;
  assert_int_equal(redlock_set_allocator(&partial), REDLOCK_EINVAL);

  /* While a client is open the table stays, whatever is asked. */
  assert_int_equal(redlock_set_allocator(&counting), REDLOCK_OK);
  redlock_options_t *opts = unit_nowhere_options();
  redlock_t *client = NULL;
  assert_int_equal(redlock_open(&client, opts), REDLOCK_OK);
  assert_int_equal(redlock_set_allocator(NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_set_allocator(&counting), REDLOCK_EINVAL);
  long before = atomic_load(&allocs);
  void *p = rl_malloc(16);
  assert_non_null(p);
  assert_int_equal(atomic_load(&allocs), before + 1);
  rl_free(p);
  rl_free(NULL); /* no call of free_fn (count_free asserts) */
  redlock_close(client);
  redlock_options_free(opts);
  assert_int_equal(atomic_load(&frees), atomic_load(&allocs));

  /* Closed: it may change again; NULL is libc's, and counts nothing. */
  assert_int_equal(redlock_set_allocator(NULL), REDLOCK_OK);
  long after = atomic_load(&allocs);
  char *s = rl_strdup("libc");
  assert_string_equal(s, "libc");
  rl_free(s);
  assert_int_equal(atomic_load(&allocs), after);
}

/* hiredis 1.x's own allocations follow the table, and return to libc's. */
static void test_hiredis_follows(void **state) {
  (void)state;
#if HIREDIS_MAJOR >= 1
  assert_int_equal(redlock_set_allocator(&counting), REDLOCK_OK);
  long before = atomic_load(&allocs);
  void *p = hi_malloc(8);
  assert_non_null(p);
  assert_int_equal(atomic_load(&allocs), before + 1);
  hi_free(p);
  assert_int_equal(atomic_load(&frees), atomic_load(&allocs));
  assert_int_equal(redlock_set_allocator(NULL), REDLOCK_OK);
  before = atomic_load(&allocs);
  p = hi_malloc(8);
  hi_free(p);
  assert_int_equal(atomic_load(&allocs), before);
#else
  skip(); /* hiredis 0.14 has no allocator hook */
#endif
}

UNIT_MAIN(cmocka_unit_test_setup_teardown(test_options_through_table, reset, reset),
          cmocka_unit_test_setup_teardown(test_client_balances, reset, reset),
          cmocka_unit_test_setup_teardown(test_refusals, reset, reset),
          cmocka_unit_test_setup_teardown(test_hiredis_follows, reset, reset))
