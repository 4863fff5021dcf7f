/* test_client_oom.c: opening a client (client.c) when memory or a thread
 * cannot be had, c-ares style: for k = 1, 2, ... the k-th allocation from
 * the start of redlock_open_uv / redlock_open fails (tests/support's
 * oom_alloc: the library's own allocations through link-time wrappers,
 * libuv's through its allocator hook), until a k at which the call
 * completes before its k-th allocation.
 *
 * Asserts, for each k:
 *  - the call returns REDLOCK_OK or REDLOCK_ENOMEM (OK when what failed was
 *    a connection's, which is retried), and OK when nothing failed;
 *  - refused, it leaves *out NULL and nothing on the caller's loop (no
 *    handle more than before the call);
 *  - opened, the client works once memory is back: redlock_open_uv's takes
 *    and releases a lock on the mock master (tests/support/mock_master.h) on
 *    the test's loop, within a deadline; redlock_open's, over a master that
 *    cannot exist, votes it down; then it closes, leaving the caller's loop
 *    as it was;
 *  - a failure is met at all (the sweep is not vacuous).
 * And: when the I/O thread cannot be created (its stack cannot be mapped:
 * libuv sizes it from RLIMIT_STACK, set here past the address space),
 * redlock_open returns REDLOCK_EIO, leaves *out NULL, and opens again once
 * a thread can be made.  Under ASan, nothing may leak (checked at exit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "node_fixture.h"
#include "oom_alloc.h"
#include "redlock.h"
#include "redlock_uv.h"
#include "unit_support.h"

/* A call's allocations are far fewer; beyond this the test is broken. */
#define OOM_MAX_K 1000
/* A call (and what the test waits for after it) still running after this
 * long ends the process, naming the call and k. */
#define OOM_ALARM_S 60

/* ---- the caller's loop --------------------------------------------------------------- */

static void count_handle(uv_handle_t *handle, void *arg) {
  if (!uv_is_closing(handle))
    (*(unsigned *)arg)++;
}

/* Handles on the loop not being closed. */
static unsigned loop_handles(uv_loop_t *loop) {
  unsigned n = 0;
  uv_walk(loop, count_handle, &n);
  return n;
}

static int mock_unconnected(void *arg) { return mock_master_open_conns(arg) == 0; }

/* ---- redlock_open_uv ------------------------------------------------------------------ */

/* Options over the fixture's mock master.  A connection a failed allocation
 * dropped reconnects after its backoff: the acquisition retries meanwhile
 * (within NF_WAIT_MS). */
static redlock_options_t *mock_options(nf_t *f) {
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  assert_int_equal(redlock_options_add_node(opts, mock_master_uri(f->mock, NULL, NULL)), 0);
  assert_int_equal(redlock_options_set_retry(opts, NF_WAIT_MS / 50, 50, 0), 0);
  return opts;
}

/* The client opened on the fixture's loop works: a lock is taken and
 * released on the mock; then it closes there. */
static void check_uv_client_works(nf_t *f, nf_client_t *r) {
  assert_int_equal(redlock_lock_async(r->client, "oom-uv", 10000, 0, nf_client_on_lock, r),
                   REDLOCK_OK);
  assert_true(mock_run_until(&f->loop, nf_client_locked, r, NF_WAIT_MS));
  assert_int_equal(r->lock_status, REDLOCK_OK);
  assert_non_null(r->lock);
  assert_int_equal(redlock_unlock_async(r->client, r->lock, nf_client_on_unlock, r), REDLOCK_OK);
  assert_true(mock_run_until(&f->loop, nf_client_unlocked, r, NF_WAIT_MS));
  assert_int_equal(r->unlock_status, REDLOCK_OK);
  redlock_close_uv(r->client, nf_client_on_closed, r);
  assert_true(mock_run_until(&f->loop, nf_client_closed, r, NF_WAIT_MS));
  assert_int_equal(r->closed, 1);
}

static void test_open_uv_each_allocation(void **state) {
  nf_t *f = *state;
  unsigned enomem = 0, k;
  for (k = 1; k <= OOM_MAX_K; k++) {
    redlock_options_t *opts = mock_options(f);
    unsigned before = loop_handles(&f->loop);
    nf_client_t r;
    memset(&r, 0, sizeof r);
    r.client = (redlock_t *)&r; /* not NULL: the call must write *out */
    int rc;
    oom_arm(k, "redlock_open_uv");
    /* On this thread, the loop not running: every allocation of the call,
     * and no other, is counted. */
    OOM_CALL(rc = redlock_open_uv(&r.client, opts, &f->loop));
    int failed = oom_disarm();
    redlock_options_free(opts);
    if (rc != REDLOCK_OK && rc != REDLOCK_ENOMEM)
      fail_msg("redlock_open_uv, allocation %u failed: %s", k, redlock_err_name(rc));
    if (!failed && rc != REDLOCK_OK)
      fail_msg("redlock_open_uv: %s with no allocation failed", redlock_err_name(rc));
    if (rc == REDLOCK_ENOMEM) {
      enomem++;
      assert_null(r.client);
    } else {
      assert_non_null(r.client);
      check_uv_client_works(f, &r);
    }
    /* Refused: the caller's loop holds what it held before, at once.
     * Closed: once the mock has seen the connection go. */
    if (rc == REDLOCK_OK)
      assert_true(mock_run_until(&f->loop, mock_unconnected, f->mock, NF_WAIT_MS));
    assert_int_equal(loop_handles(&f->loop), before);
    if (!failed)
      break;
  }
  assert_true(k <= OOM_MAX_K);
  /* The client itself, its options and its figures are allocated: the
   * first allocations cannot be survived. */
  assert_true(enomem >= 3);
  print_message("redlock_open_uv: %u allocations, %u refused with ENOMEM\n", k - 1, enomem);
}

/* ---- redlock_open ---------------------------------------------------------------------- */

/* The client's own loop thread allocates too (its first connection
 * attempt, before redlock_open returns): counted as well, so the point at
 * which the sweep ends can vary from run to run; each k still gets one
 * fresh client. */
static void test_open_each_allocation(void **state) {
  (void)state;
  unsigned enomem = 0, k;
  for (k = 1; k <= OOM_MAX_K; k++) {
    redlock_options_t *opts = unit_nowhere_options();
    redlock_t *client = (redlock_t *)&client; /* not NULL: the call must write *out */
    int rc;
    oom_arm(k, "redlock_open");
    OOM_CALL(rc = redlock_open(&client, opts));
    int failed = oom_disarm();
    redlock_options_free(opts);
    if (rc != REDLOCK_OK && rc != REDLOCK_ENOMEM)
      fail_msg("redlock_open, allocation %u failed: %s", k, redlock_err_name(rc));
    if (!failed && rc != REDLOCK_OK)
      fail_msg("redlock_open: %s with no allocation failed", redlock_err_name(rc));
    if (rc == REDLOCK_ENOMEM) {
      enomem++;
      assert_null(client);
    } else {
      /* Its loop thread runs: the call goes through it, and its only
       * master, which cannot exist, votes it down. */
      assert_non_null(client);
      redlock_lock_t *lock = NULL;
      assert_int_equal(redlock_trylock(client, "oom-own", 10000, &lock), REDLOCK_ENOQUORUM);
      assert_null(lock);
      redlock_close(client);
    }
    if (!failed)
      break;
  }
  assert_true(k <= OOM_MAX_K);
  /* The client, its options, its figures and libuv's loop are allocated. */
  assert_true(enomem >= 4);
  print_message("redlock_open: %u allocations, %u refused with ENOMEM\n", k - 1, enomem);
}

/* ---- no thread ------------------------------------------------------------------------ */

static void test_open_without_thread(void **state) {
  (void)state;
  struct rlimit saved;
  assert_int_equal(getrlimit(RLIMIT_STACK, &saved), 0);
  /* libuv gives a new thread a stack of RLIMIT_STACK (when finite); one of
   * 2^50 bytes is past any address space, so no thread can be made. */
  const rlim_t huge = (rlim_t)1 << 50;
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < huge)
    skip();
  struct rlimit limit = {.rlim_cur = huge, .rlim_max = saved.rlim_max};
  assert_int_equal(setrlimit(RLIMIT_STACK, &limit), 0);
  redlock_options_t *opts = unit_nowhere_options();
  redlock_t *client = (redlock_t *)&client;
  int rc = redlock_open(&client, opts);
  assert_int_equal(setrlimit(RLIMIT_STACK, &saved), 0);
  assert_int_equal(rc, REDLOCK_EIO);
  assert_null(client);
  /* A thread can be made again: so can a client. */
  assert_int_equal(redlock_open(&client, opts), REDLOCK_OK);
  assert_non_null(client);
  redlock_close(client);
  redlock_options_free(opts);
}

int main(void) {
  oom_install(OOM_ALARM_S);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_open_uv_each_allocation, nf_setup, nf_teardown),
      cmocka_unit_test(test_open_each_allocation),
      cmocka_unit_test(test_open_without_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
