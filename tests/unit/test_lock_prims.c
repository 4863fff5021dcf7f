/* test_lock_prims.c: lock.c's state machines for the other kinds of handle
 * (semaphore permits: prims.h) on a client over fake masters and a stepped
 * clock (engine_fixture.h): the next slot after a held one, a limit
 * disagreement (never retried), a waiting permit woken by a release, fenced
 * permits, extension, release and close of a held permit, and a waiting
 * writer of a read-write lock withdrawing its intent when its budget ends. */
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
  assert_true(fake_cmd_has(f, 0, 0, "{pool}:sem:"));
  for (unsigned i = 0; i < 3; i++)
    fake_reply_int(f, i, 0); /* its first slot is held: decided */
  assert_int_equal(r.calls, 0);
  fake_reply_int(f, 3, 0);
  fake_reply_int(f, 4, 0);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
    assert_int_equal(fake_outstanding(f, i), 2); /* the release, then the other slot */
    assert_true(fake_cmd_has(f, i, 1, "{pool}:sem:"));
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
  engine_announce_channel(e, REDLOCK_RELEASE_CHANNEL_PREFIX "{pool}:sem");
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

/* A writer waiting while readers hold the lock leaves its intent on the
 * masters (new readers are refused meanwhile); when its wait budget runs
 * out (REDLOCK_ETIMEDOUT), it withdraws the intent at once: a release of
 * the intent key, announced to the readers it held back. */
static engine_config_t retry_50ms = {.retry = 1, .retry_count = 0, .retry_delay_ms = 50};

static void test_rw_writer_withdraws_intent(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  assert_int_equal(redlock_rwlock_write_async(e->client, "doc", TTL_MS, 120, on_lock, &r), 0);
  fake_pump();
  /* attempts at t = 0, 50, 100 and, the last, at the end of the budget */
  static const unsigned wait_ms[] = {50, 50, 20};
  for (unsigned a = 0; a < 4; a++) {
    for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
      assert_int_equal(fake_outstanding(f, i), 1);
      assert_true(fake_cmd_has(f, i, 0, "{doc}:rw:intent"));
    }
    fake_reply_int_all(f, -1); /* readers hold it: the intent is set */
    if (a == 3)
      break;
    assert_int_equal(r.calls, 0);
    /* the attempt's clean-up: no intent dropped, nothing announced */
    assert_true(fake_cmd_has(
        f, 0, 0, "$0\r\n\r\n$28\r\n" REDLOCK_RELEASE_CHANNEL_PREFIX "{doc}:rw\r\n$1\r\n0\r\n"));
    fake_reply_int_all(f, 0);
    fake_advance_ms(wait_ms[a] - 1);
    assert_int_equal(fake_outstanding_all(f), 0);
    fake_advance_ms(1);
  }
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ETIMEDOUT);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
    assert_int_equal(fake_outstanding(f, i), 2); /* the clean-up, then the withdrawal */
    assert_true(fake_cmd_has(
        f, i, 0, "$0\r\n\r\n$28\r\n" REDLOCK_RELEASE_CHANNEL_PREFIX "{doc}:rw\r\n$1\r\n0\r\n"));
    assert_false(fake_cmd_has(f, i, 1, "$0\r\n\r\n"));             /* our intent value, */
    assert_true(fake_cmd_has(f, i, 1, "{doc}:rw\r\n$1\r\n1\r\n")); /* announced */
  }
  fake_reply_int_all(f, 0);
  fake_reply_int_all(f, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST(test_sem_next_slot_extend_release),
      ENGINE_TEST(test_sem_limit_mismatch),
      ENGINE_TEST(test_sem_wait_woken),
      ENGINE_TEST_WITH(test_sem_fenced, &engine_fenced),
      ENGINE_TEST_WITH(test_rw_writer_withdraws_intent, &retry_50ms),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
