/* test_lock_wait.c: waiting acquisitions (redlock_lock_async with a wait
 * budget: lock.c's WAIT mode) on a client over fake masters and a stepped
 * clock (engine_fixture.h): retries until the budget is spent, one last
 * attempt at its end (whose outcome says how the wait ended: held, or no
 * quorum), and waits woken by a release announcement (the
 * notifier's channel for the key): a retry at once, or right after the
 * attempt that was out when the release was announced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine_fixture.h"

#define TTL_MS 10000

/* Lost attempts are retried after 50 ms while the wait budget lasts. */
static engine_config_t retry_every_50ms = {.retry = 1, .retry_count = 0, .retry_delay_ms = 50};

/* Every master refuses (held by another), answers every release with 0. */
static void refuse_attempt(fake_transport_t *f) {
  fake_reply_nil_each(f);
  fake_reply_int_all(f, 0); /* the attempt's release, on the two late masters */
}

/* Held all along: retried every 50 ms, and once more at the end of the
 * budget (the last delay shortened to it), then REDLOCK_ETIMEDOUT. */
static void test_wait_deadline(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 120, &r);
  refuse_attempt(f); /* t = 0 */
  fake_advance_ms(50);
  refuse_attempt(f); /* t = 50 */
  fake_advance_ms(50);
  refuse_attempt(f); /* t = 100: 20 ms of budget left */
  fake_advance_ms(19);
  assert_int_equal(fake_outstanding_all(f), 0);
  fake_advance_ms(1);
  assert_int_equal(fake_outstanding(f, 0), 1); /* the last attempt, at t = 120 */
  assert_int_equal(r.calls, 0);
  refuse_attempt(f);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ETIMEDOUT);
}

/* Every master fails the attempt (an error reply: no vote), and answers
 * the attempt's release, if one is sent, with 0. */
static void fail_attempt(fake_transport_t *f) {
  for (unsigned i = 0; i < f->n; i++)
    fake_reply_error(f, i, "ERR unavailable");
  fake_reply_int_all(f, 0);
}

/* Too few masters answer all along: the wait ends at its budget with
 * REDLOCK_ENOQUORUM, not the REDLOCK_ETIMEDOUT of a lock held by another,
 * so a caller that skips busy locks does not skip an outage. */
static void test_wait_no_quorum(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 100, &r);
  fail_attempt(f); /* t = 0 */
  fake_advance_ms(50);
  fail_attempt(f); /* t = 50 */
  fake_advance_ms(50);
  assert_int_equal(r.calls, 0);
  fail_attempt(f); /* t = 100: the last attempt */
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ENOQUORUM);
}

/* The last attempt decides: no quorum before, held at the end is a
 * timeout; held before, no quorum at the end is no quorum. */
static void test_wait_last_round_decides(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t held_last = {0}, down_last = {0};
  engine_lock(e, "a", TTL_MS, 50, &held_last);
  fail_attempt(f);
  fake_advance_ms(50);
  refuse_attempt(f);
  assert_int_equal(held_last.calls, 1);
  assert_int_equal(held_last.status, REDLOCK_ETIMEDOUT);

  engine_lock(e, "b", TTL_MS, 50, &down_last);
  refuse_attempt(f);
  fake_advance_ms(50);
  fail_attempt(f);
  assert_int_equal(down_last.calls, 1);
  assert_int_equal(down_last.status, REDLOCK_ENOQUORUM);
}

/* A lost wait registers for the key's release announcements; the
 * announcement makes it try again at once, not at its fallback timer. */
static void test_woken_by_release(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "jobs", TTL_MS, 5000, &r);
  refuse_attempt(f);
  fake_advance_ms(10);
  assert_int_equal(fake_outstanding_all(f), 0);
  engine_announce(e, "other"); /* another key's release wakes nobody */
  assert_int_equal(fake_outstanding_all(f), 0);
  engine_announce(e, "jobs");
  assert_int_equal(fake_outstanding(f, 0), 1); /* retried at once, at t = 10 */
  assert_true(fake_cmd_has(f, 0, 0, "SET"));
  fake_reply_ok_all(f);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  engine_announce(e, "jobs"); /* nobody waits any more */
  assert_int_equal(fake_outstanding_all(f), 0);
  engine_release(e, r.lock);
}

/* A release announced while the woken attempt is out (another master's copy
 * of the same release) marks it woken: when that attempt loses, the next
 * starts at once instead of after the retry delay. */
static void test_woken_during_attempt(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "jobs", TTL_MS, 5000, &r);
  refuse_attempt(f);
  engine_announce(e, "jobs"); /* attempt 2 goes out */
  assert_int_equal(f->m[0].sends, 3);
  engine_announce(e, "jobs"); /* during attempt 2 */
  assert_int_equal(f->m[0].sends, 3);
  refuse_attempt(f);
  assert_int_equal(f->m[0].sends, 4);
  fake_pump();                        /* the next loop turn */
  assert_int_equal(f->m[0].sends, 5); /* attempt 3 at once, no time passed */
  assert_int_equal(fake_outstanding(f, 0), 1);
  fake_reply_ok_all(f);
  assert_int_equal(r.status, REDLOCK_OK);
  engine_release(e, r.lock);
}

/* Two waiters on one key: a release wakes one of them (the longest
 * waiting), not both; the other keeps its fallback timer. */
static void test_release_wakes_one_waiter(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t a = {0}, b = {0};
  assert_int_equal(redlock_lock_async(e->client, "k", TTL_MS, 5000, on_lock, &a), 0);
  engine_lock(e, "k", TTL_MS, 5000, &b);
  assert_int_equal(fake_outstanding(f, 0), 2);
  for (int both = 0; both < 2; both++)
    fake_reply_nil_each(f);
  fake_reply_int_all(f, 0); /* the two attempts' releases */
  fake_reply_int_all(f, 0);
  engine_announce(e, "k");
  assert_int_equal(fake_outstanding(f, 0), 1);
  fake_reply_ok_all(f);
  assert_int_equal(a.calls + b.calls, 1);
  lock_result_t *won = a.calls ? &a : &b;
  lock_result_t *waiting = a.calls ? &b : &a;
  assert_int_equal(won->status, REDLOCK_OK);
  /* the other retries at its timer, and is refused again */
  fake_advance_ms(50);
  assert_int_equal(fake_outstanding(f, 0), 1);
  refuse_attempt(f);
  /* the winner unlocks; its release wakes the other one */
  engine_release(e, won->lock);
  engine_announce(e, "k");
  fake_reply_ok_all(f);
  assert_int_equal(waiting->calls, 1);
  assert_int_equal(waiting->status, REDLOCK_OK);
  engine_release(e, waiting->lock);
}

/* Closing cancels a wait that sits on its retry timer: ECANCELED at once. */
static void test_close_cancels_waiter(void **state) {
  engine_fx_t *e = *state; /* closed here, not by a teardown: what close did is checked after */
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "k", TTL_MS, 5000, &r);
  refuse_attempt(f);
  assert_int_equal(r.calls, 0);
  engine_close(e);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST_WITH(test_wait_deadline, &retry_every_50ms),
      ENGINE_TEST_WITH(test_wait_no_quorum, &retry_every_50ms),
      ENGINE_TEST_WITH(test_wait_last_round_decides, &retry_every_50ms),
      ENGINE_TEST_WITH(test_woken_by_release, &retry_every_50ms),
      ENGINE_TEST_WITH(test_woken_during_attempt, &retry_every_50ms),
      ENGINE_TEST_WITH(test_release_wakes_one_waiter, &retry_every_50ms),
      ENGINE_TEST_CLOSING(test_close_cancels_waiter, &retry_every_50ms),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
