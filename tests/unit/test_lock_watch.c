/* test_lock_watch.c: extension and watching (lock.c) on a client over fake
 * masters and a stepped clock (engine_fixture.h): an extension's new
 * validity, its failures (held by another: lost; no quorum; too slow; the
 * validity already spent), a shorter ttl capping the validity as it is sent
 * and after a failure, an earlier round won after a later one, a round won after the validity
 * ran out (lost, not revived), and the watch: renewal when a third
 * of the ttl is left, retries after failures, and the lost callback, exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine_fixture.h"
#include "util/quorum.h"

#define TTL_MS 3000
#define DRIFT_MS (TTL_MS / 100 + 2) /* 32 */

/* The watch renews when a third of the ttl is left (nominal_ms from now),
 * or up to the spread and a tick earlier (quorum_watch_delay_ms): steps the
 * clock 1 ms at a time until the renewal is out, asserts that it went out in
 * that window, and returns the ms stepped. */
static unsigned step_to_renewal(fake_transport_t *f, unsigned nominal_ms) {
  unsigned window = quorum_watch_spread_ms(TTL_MS) + quorum_watch_tick_ms(TTL_MS);
  unsigned t = 0;
  while (fake_outstanding(f, 0) == 0 && t < nominal_ms) {
    fake_advance_ms(1);
    t++;
  }
  assert_int_equal(fake_outstanding(f, 0), 1);
  assert_true(t + window >= nominal_ms);
  return t;
}

/* A lock taken for TTL_MS and watched. */
static redlock_lock_t *watched_lock(engine_fx_t *e, lost_result_t *lost) {
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  engine_watch(e, lock, lost);
  return lock;
}

/* An extension sets the ttl from the start of its round. */
static void test_extend_ok(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  fake_advance_ms(1000);
  done_result_t d = {0};
  engine_extend(e, lock, 6000, &d);
  assert_true(fake_cmd_has(f, 0, 0, "EVALSHA"));
  fake_advance_ms(4);
  fake_reply_int(f, 0, 1);
  fake_reply_int(f, 1, 1);
  assert_int_equal(d.calls, 0);
  fake_reply_int(f, 2, 1);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.status, REDLOCK_OK);
  assert_int_equal(redlock_lock_validity_ms(lock), 6000 - 4 - (6000 / 100 + 2));
  fake_reply_int(f, 3, 1);
  fake_reply_int(f, 4, 1);
  engine_release(e, lock);
}

/* A quorum answers that our value is gone: REDLOCK_ELOST, and the lock is
 * marked lost; unlocking it still releases (and reports it lost). */
static void test_extend_lost(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  done_result_t d = {0};
  engine_extend(e, lock, TTL_MS, &d);
  fake_reply_int_all(f, 0);
  assert_int_equal(d.status, REDLOCK_ELOST);
  assert_true(redlock_lock_is_lost(lock));
  engine_unlock(e, lock, 0, REDLOCK_ELOST);
}

/* No quorum (errors, silence): REDLOCK_ENOQUORUM, the lock is not lost. */
static void test_extend_no_quorum(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  done_result_t d = {0};
  engine_extend(e, lock, TTL_MS, &d);
  fake_reply_error(f, 0, "ERR boom");
  fake_reply_int(f, 1, 1);
  fake_reply_error(f, 2, "ERR boom");
  fake_advance_ms(ENGINE_REQUEST_MS);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.status, REDLOCK_ENOQUORUM);
  assert_false(redlock_lock_is_lost(lock));
  fake_drop(f, 3);
  fake_drop(f, 4);
  engine_release(e, lock);
}

/* Won, but too slowly to leave any validity: REDLOCK_EEXPIRED. */
static void test_extend_too_slow(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  done_result_t d = {0};
  engine_extend(e, lock, 50, &d);
  fake_advance_ms(48);
  fake_reply_int_all(f, 1);
  assert_int_equal(d.status, REDLOCK_EEXPIRED);
  engine_release(e, lock);
}

/* A shorter extension lowers the validity as it is sent, to what its ttl
 * leaves (a master may run it at once), and a failure leaves it there: the
 * masters that ran it keep the shorter ttl. */
static void test_extend_shorter_failed(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  done_result_t d = {0};
  engine_extend(e, lock, 100, &d);
  assert_int_equal(redlock_lock_validity_ms(lock), 100 - (100 / 100 + 2));
  fake_reply_int(f, 0, 1);
  fake_reply_error(f, 1, "ERR boom");
  fake_reply_error(f, 2, "ERR boom");
  fake_reply_error(f, 3, "ERR boom");
  assert_int_equal(d.status, REDLOCK_ENOQUORUM);
  assert_int_equal(redlock_lock_validity_ms(lock), 100 - 3);
  fake_reply_int(f, 4, 1);
  engine_release(e, lock);
}

/* A longer extension that fails changes nothing: the keys still have at
 * least the old ttl wherever it did not run. */
static void test_extend_longer_failed(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  done_result_t d = {0};
  engine_extend(e, lock, 2 * TTL_MS, &d);
  fake_reply_error(f, 0, "ERR boom");
  fake_reply_error(f, 1, "ERR boom");
  fake_reply_error(f, 2, "ERR boom");
  assert_int_equal(d.status, REDLOCK_ENOQUORUM);
  assert_int_equal(redlock_lock_validity_ms(lock), TTL_MS - DRIFT_MS);
  fake_reply_int(f, 3, 1);
  fake_reply_int(f, 4, 1);
  engine_release(e, lock);
}

/* Two extensions in flight, the later one shorter and decided first: the
 * earlier one, won after it, must not raise the validity again, since on
 * every master the later one ran after it. */
static void test_extend_overtaken(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  done_result_t longer = {0}, shorter = {0};
  engine_extend(e, lock, 2 * TTL_MS, &longer);
  engine_extend(e, lock, 200, &shorter);
  for (unsigned i = 0; i < 2; i++) { /* each master answers in order */
    fake_reply_int(f, i, 1);
    fake_reply_int(f, i, 1);
  }
  fake_reply_error(f, 2, "ERR boom"); /* the longer one's third vote */
  fake_reply_int(f, 2, 1);            /* the shorter one wins */
  assert_int_equal(shorter.status, REDLOCK_OK);
  assert_int_equal(longer.calls, 0);
  fake_reply_int(f, 3, 1); /* the longer one wins after it */
  assert_int_equal(longer.status, REDLOCK_OK);
  assert_int_equal(redlock_lock_validity_ms(lock), 200 - (200 / 100 + 2));
  fake_reply_int(f, 3, 1);
  fake_reply_int_all(f, 1);
  engine_release(e, lock);
}

/* The validity runs out while an extension is in flight: its win does not
 * revive the lock.  A won round does not say that the key stayed ours all
 * along (its yes votes may be re-installs after another client held the
 * lock and let go of it), so the lock is lost: REDLOCK_ELOST. */
static void test_extend_won_after_expiry(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  fake_advance_ms(TTL_MS - DRIFT_MS - 40); /* 40 ms left */
  done_result_t d = {0};
  engine_extend(e, lock, TTL_MS, &d);
  fake_advance_ms(50); /* within the request timeout; the validity is spent */
  assert_true(redlock_lock_validity_ms(lock) <= 0);
  fake_reply_int(f, 0, ROUND_REINSTALLED);
  fake_reply_int(f, 1, ROUND_REINSTALLED);
  fake_reply_int(f, 2, 1);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.status, REDLOCK_ELOST);
  assert_true(redlock_lock_is_lost(lock));
  assert_true(redlock_lock_validity_ms(lock) <= 0);
  fake_reply_int(f, 3, 1);
  fake_reply_int(f, 4, 1);
  engine_unlock(e, lock, 0, REDLOCK_ELOST);
}

/* A lock whose validity is spent is not extended (it may be someone
 * else's by now): REDLOCK_ELOST without a round. */
static void test_extend_after_expiry(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  fake_advance_ms(TTL_MS);
  done_result_t d = {0};
  engine_extend(e, lock, TTL_MS, &d);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.status, REDLOCK_ELOST);
  assert_int_equal(fake_outstanding_all(f), 0);
  /* extend without a callback: runs all the same */
  assert_int_equal(redlock_extend_async(e->client, lock, TTL_MS, NULL, NULL), 0);
  fake_pump();
  /* the teardown's close releases it */
}

/* The watch extends when a third of the ttl is left, again and again. */
static void test_watch_renews(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lost_result_t lost = {0};
  redlock_lock_t *lock = watched_lock(e, &lost);
  /* validity 2968 ms: renewed at 2968 - 1000, or a little earlier */
  step_to_renewal(f, 1968);
  fake_reply_int_all(f, 1);
  assert_int_equal(redlock_lock_validity_ms(lock), TTL_MS - DRIFT_MS);
  step_to_renewal(f, 1968); /* the second renewal */
  fake_reply_int_all(f, 1);
  assert_int_equal(lost.calls, 0);
  engine_release(e, lock); /* ends the watch */
  fake_advance_ms(10000);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(lost.calls, 0);
}

/* Renewals that fail for want of a quorum are retried once per request
 * timeout while validity is left; when it runs out the lock is lost, and
 * the lost callback runs exactly once. */
static void test_watch_failures_then_lost(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lost_result_t lost = {0};
  redlock_lock_t *lock = watched_lock(e, &lost);
  unsigned first = step_to_renewal(f, 1968);
  unsigned tries = 0;
  while (lost.calls == 0 && tries < 100) {
    if (fake_outstanding(f, 0) > 0) {
      tries++;
      for (unsigned i = 0; i < ENGINE_MASTERS; i++)
        fake_reply_error(f, i, "ERR boom");
    }
    fake_advance_ms(7); /* answers off the timers' grid: the last try is short */
  }
  assert_int_equal(lost.calls, 1);
  assert_int_equal(lost.reason, REDLOCK_ELOST);
  assert_ptr_equal(lost.lock, lock);
  assert_true(redlock_lock_is_lost(lock));
  /* one try per request timeout from the first until the validity (2968 ms)
   * runs out, the last at the end */
  unsigned expected = (2968 - first) / ENGINE_REQUEST_MS + 1;
  assert_true(tries + 2 >= expected && tries <= expected + 1);
  fake_advance_ms(10000);
  assert_int_equal(lost.calls, 1);
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* A renewal answered "not ours" by a quorum: lost at once, callback once. */
static void test_watch_lost_held(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lost_result_t lost = {0};
  redlock_lock_t *lock = watched_lock(e, &lost);
  step_to_renewal(f, 1968);
  fake_reply_int_all(f, 0);
  assert_int_equal(lost.calls, 1);
  assert_int_equal(lost.reason, REDLOCK_ELOST);
  fake_advance_ms(10000);
  assert_int_equal(lost.calls, 1);
  assert_int_equal(fake_outstanding_all(f), 0);
  engine_unlock(e, lock, 0, REDLOCK_ELOST);
}

/* Watching a lock whose validity is already spent: lost at once. */
static void test_watch_expired(void **state) {
  engine_fx_t *e = *state;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  fake_advance_ms(TTL_MS);
  lost_result_t lost = {0};
  engine_watch(e, lock, &lost);
  assert_int_equal(lost.calls, 1);
  assert_int_equal(fake_outstanding_all(&e->fake), 0);
}

/* Unlocked while a renewal is out: the renewal's outcome is ignored and no
 * lost callback runs. */
static void test_unlock_during_renewal(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lost_result_t lost = {0};
  redlock_lock_t *lock = watched_lock(e, &lost);
  step_to_renewal(f, 1968);
  done_result_t u = {0};
  assert_int_equal(redlock_unlock_async(e->client, lock, on_done, &u), 0);
  fake_pump();
  fake_reply_int_all(f, 0); /* the renewal: refused */
  fake_reply_int_all(f, 1); /* the release */
  assert_int_equal(u.status, REDLOCK_OK);
  assert_int_equal(lost.calls, 0);
}

/* Closing with a watched lock: the watch stops, the lock is released,
 * nobody is told it was lost. */
static void test_close_with_watched_lock(void **state) {
  engine_fx_t *e = *state; /* closed here: what close did is checked after */
  fake_transport_t *f = &e->fake;
  lost_result_t lost = {0};
  (void)watched_lock(e, &lost);
  engine_fx_begin_close(e);
  assert_int_equal(fake_outstanding(f, 0), 1); /* the release */
  fake_reply_int_all(f, 1);
  engine_close(e);
  assert_int_equal(lost.calls, 0);
}

/* Watching again while the renewal is out: the new watch's timer, which
 * fires while that renewal is still out (a request timeout longer than the
 * rest of the period keeps it out), sends no second renewal. */
static engine_config_t slow_requests = {.request_ms = 2000};
static void test_rewatch_timer_during_renewal(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lost_result_t lost = {0};
  redlock_lock_t *lock = watched_lock(e, &lost);
  unsigned t = step_to_renewal(f, 1968);
  assert_int_equal(redlock_watch(e->client, lock, on_lost, &lost), 0);
  fake_advance_ms(1968 - t + 1);               /* past the new timer's due time */
  assert_int_equal(fake_outstanding(f, 0), 1); /* still the one renewal */
  fake_reply_int_all(f, 1);
  assert_int_equal(lost.calls, 0);
  engine_release(e, lock);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST(test_extend_ok),
      ENGINE_TEST(test_extend_lost),
      ENGINE_TEST(test_extend_no_quorum),
      ENGINE_TEST(test_extend_too_slow),
      ENGINE_TEST(test_extend_after_expiry),
      ENGINE_TEST(test_extend_shorter_failed),
      ENGINE_TEST(test_extend_longer_failed),
      ENGINE_TEST(test_extend_overtaken),
      ENGINE_TEST(test_extend_won_after_expiry),
      ENGINE_TEST(test_watch_renews),
      ENGINE_TEST(test_watch_failures_then_lost),
      ENGINE_TEST(test_watch_lost_held),
      ENGINE_TEST(test_watch_expired),
      ENGINE_TEST(test_unlock_during_renewal),
      ENGINE_TEST_CLOSING(test_close_with_watched_lock, NULL),
      ENGINE_TEST_WITH(test_rewatch_timer_during_renewal, &slow_requests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
