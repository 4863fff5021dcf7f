/* test_lock_prims.c: lock.c's state machines for the other kinds of handle
 * (semaphore permits: prims.h) on a client over fake masters and a stepped
 * clock (engine_fixture.h): the next slot after a held one, a limit
 * disagreement (never retried), a waiting permit woken by a release, fenced
 * permits, extension, release and close of a held permit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine_fixture.h"

#define TTL_MS 10000

/* The first slot tried is held: the attempt's value is released where it
 * may have landed and the other slot is tried at once; it is won.  The
 * permit extends and releases like a lock. */
static void test_sem_next_slot_extend_release(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_sem(e, "pool", 2, TTL_MS, 0, &r);
  assert_true(fake_cmd_has(f, 0, 0, "pool:sem:"));
  for (unsigned i = 0; i < 3; i++)
    fake_reply_int(f, i, 0); /* its first slot is held: decided */
  assert_int_equal(r.calls, 0);
  fake_reply_int(f, 3, 0);
  fake_reply_int(f, 4, 0);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
    assert_int_equal(fake_outstanding(f, i), 2); /* the release, then the other slot */
    assert_true(fake_cmd_has(f, i, 1, "pool:sem:"));
  }
  fake_reply_int_all(f, 0);
  fake_reply_int_all(f, 1);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  done_result_t x = {0};
  engine_extend(e, r.lock, TTL_MS, &x);
  fake_reply_int_all(f, 1);
  assert_int_equal(x.status, REDLOCK_OK);
  engine_release(e, r.lock);
}

/* A master says the semaphore has another limit: REDLOCK_EINVAL, not
 * retried on another slot. */
static void test_sem_limit_mismatch(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_sem(e, "pool", 2, TTL_MS, 0, &r);
  fake_reply_int_all(f, -3);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_EINVAL);
  fake_reply_int_all(f, 0); /* the release of the attempt, if any went out */
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* A waiting permit: both slots held, it registers on the semaphore's
 * release channel and is woken by a release there. */
static void test_sem_wait_woken(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_sem(e, "pool", 1, TTL_MS, 5000, &r);
  fake_reply_int_all(f, 0); /* slot 0 held */
  fake_reply_int_all(f, 0); /* its release */
  assert_int_equal(fake_outstanding_all(f), 0);
  engine_announce(e, "pool:sem");
  assert_int_equal(fake_outstanding(f, 0), 1);
  fake_reply_int_all(f, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  /* the teardown's close releases the permit */
}

/* Fenced permits: the slot's token is written back before the grant. */
static void test_sem_fenced(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_sem(e, "pool", 2, TTL_MS, 0, &r);
  fake_reply_int_all(f, 12);
  assert_int_equal(r.calls, 0);
  fake_reply_int_all(f, 1); /* the write-back */
  assert_int_equal(r.status, REDLOCK_OK);
  assert_int_equal(redlock_lock_fence(r.lock), 12);
  engine_release(e, r.lock);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST(test_sem_next_slot_extend_release),
      ENGINE_TEST(test_sem_limit_mismatch),
      ENGINE_TEST(test_sem_wait_woken),
      ENGINE_TEST_WITH(test_sem_fenced, &engine_fenced),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
