/* test_lock_acquire.c: acquisition (lock.c) through the public API on a
 * client over fake masters and a stepped clock (engine_fixture.h): won and
 * lost rounds (held, no quorum), votes in any order, late or erroring,
 * per-vote timeouts, validity = ttl - elapsed - drift and "no validity left",
 * the restart quarantine, several resources at once, and the release of a
 * lost attempt (kept for replay where it may not have landed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/client.h"
#include "engine_fixture.h"

#define TTL_MS 10000
/* The default drift: ttl * 0.01 + 2 ms. */
#define DRIFT_MS (TTL_MS / 100 + 2)

/* Won at the third yes, votes out of order; validity is measured from the
 * start of the attempt; the last votes arrive late and change nothing. */
static void test_won_out_of_order_and_validity(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  assert_int_equal(redlock_lock_async(e->client, "orders:42", TTL_MS, 0, on_lock, &r), 0);
  assert_int_equal(fake_outstanding_all(f), 0); /* nothing before the loop runs */
  fake_pump();
  for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
    assert_int_equal(fake_outstanding(f, i), 1);
    assert_true(fake_cmd_has(f, i, 0, "SET"));
    assert_true(fake_cmd_has(f, i, 0, "orders:42"));
    assert_true(fake_cmd_has(f, i, 0, "NX"));
  }
  fake_reply_ok(f, 3);
  fake_advance_ms(7);
  fake_reply_nil(f, 0); /* one refusal */
  fake_reply_ok(f, 4);
  assert_int_equal(r.calls, 0);
  fake_reply_ok(f, 1);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  assert_int_equal(redlock_lock_validity_ms(r.lock), TTL_MS - 7 - DRIFT_MS);
  assert_string_equal(redlock_lock_resource(r.lock), "orders:42");
  assert_true(strlen(redlock_lock_value(r.lock)) >= 16);
  assert_int_equal(redlock_lock_fence(r.lock), 0);
  assert_false(redlock_lock_is_lost(r.lock));
  fake_reply_ok(f, 2); /* late */
  assert_int_equal(r.calls, 1);
  assert_int_equal(fake_outstanding_all(f), 0);
  char votes[256];
  assert_true(redlock_last_votes(e->client, votes, sizeof votes) > 0);
  assert_non_null(strstr(votes, "won"));
  fake_advance_ms(TTL_MS - 7 - DRIFT_MS);
  assert_true(redlock_lock_is_lost(r.lock)); /* validity spent on the stepped clock */
  engine_release(e, r.lock);
}

/* Three refusals: held by another (ELOCKED); our value is released on the
 * masters that may have set it, nothing on those that refused. */
static void test_lost_held_releases_attempt(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 0, &r);
  fake_reply_ok(f, 0);
  fake_reply_nil(f, 1);
  fake_reply_nil(f, 2);
  fake_reply_nil(f, 3);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ELOCKED);
  /* the release went out behind the acquisition, to every master */
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    assert_true(fake_cmd_has(f, i, fake_outstanding(f, i) - 1, "EVALSHA"));
  fake_reply_ok(f, 4); /* the late yes: it holds our value too */
  fake_reply_int_all(f, 1);
  fake_reply_int_all(f, 0);
  assert_int_equal(fake_outstanding_all(f), 0);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    assert_int_equal(f->m[i].defers, 0);
  char votes[256];
  assert_true(redlock_last_votes(e->client, votes, sizeof votes) > 0);
  assert_non_null(strstr(votes, "lost (held)"));
}

/* Error replies and wrong reply types fail their votes: no quorum. */
static void test_no_quorum_on_errors(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 0, &r);
  fake_reply_error(f, 2, "READONLY You can't write against a read only replica.");
  fake_reply_int(f, 0, 5);
  fake_reply_ok(f, 1);
  fake_reply_none(f, 3); /* connection lost after the write */
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ENOQUORUM);
  fake_reply_ok(f, 4);
  assert_true(f->m[2].warns > 0);
  /* the release of the attempt: answered by some, lost on the way by one */
  fake_reply_int(f, 0, 1);
  fake_reply_none(f, 1);
  fake_reply_int_all(f, 0);
  assert_int_equal(f->m[1].defers, 1); /* kept for replay */
}

/* Masters that never answer: at the request timeout their votes fail, the
 * attempt is lost for want of a quorum; its release is kept for replay on
 * the silent masters (they may have set the key), and late replies to the
 * timed-out votes change nothing. */
static void test_per_vote_timeouts_and_release_replay(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 0, &r);
  fake_reply_ok(f, 0);
  fake_reply_ok(f, 1);
  fake_advance_ms(ENGINE_REQUEST_MS - 1);
  assert_int_equal(r.calls, 0);
  fake_advance_ms(1);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ENOQUORUM);
  for (unsigned i = 2; i < ENGINE_MASTERS; i++)
    assert_true(f->m[i].warns > 0);
  /* late answers to the timed-out votes: OK, as if they took the key */
  fake_reply_ok(f, 2);
  fake_reply_ok(f, 3);
  fake_reply_ok(f, 4);
  assert_int_equal(r.calls, 1);
  /* the release: masters 0 and 1 answer, the others stay silent */
  fake_reply_int(f, 0, 1);
  fake_reply_int(f, 1, 1);
  fake_advance_ms(ENGINE_REQUEST_MS);
  /* a release waits while its master shows progress; these showed none since */
  fake_advance_ms(ENGINE_REQUEST_MS);
  for (unsigned i = 2; i < ENGINE_MASTERS; i++)
    assert_int_equal(f->m[i].defers, 1);
  assert_int_equal(f->m[0].defers + f->m[1].defers, 0);
  fake_drop(f, 2);
  fake_drop(f, 3);
  fake_drop(f, 4);
}

/* Won, but the round took longer than the ttl minus the drift: no validity
 * is left, the lock is not granted (EEXPIRED) and our value is released. */
static void test_validity_too_short(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "r", 50, 0, &r);
  fake_reply_ok(f, 0);
  fake_reply_ok(f, 1);
  fake_advance_ns(47u * 1000000u); /* 50 - 47 = 3 ms; the drift is 2.5 ms */
  fake_reply_ok(f, 2);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_EEXPIRED);
  fake_reply_ok(f, 3);
  fake_reply_ok(f, 4);
  fake_reply_int_all(f, 1); /* the attempt's release, on every master */
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* One yes short of the validity limit: still granted, with what is left. */
static void test_validity_just_enough(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "r", 50, 0, &r);
  fake_advance_ns(46u * 1000000u); /* 50 - 46 - 2.5 = 1.5 ms left */
  fake_reply_ok_all(f);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  assert_int_equal(redlock_lock_validity_ms(r.lock), 1);
  /* the teardown's close releases the lock still held */
}

/* Masters in restart quarantine: none of their answers counts, so three
 * other yeses are needed; with three quarantined there is no quorum. */
static void test_restart_quarantine(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  f->m[0].quarantined = f->m[1].quarantined = 1;
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 0, &r);
  fake_reply_ok(f, 0);
  fake_reply_ok(f, 1);
  fake_reply_ok(f, 2);
  fake_reply_ok(f, 3);
  assert_int_equal(r.calls, 0);
  fake_reply_ok(f, 4);
  assert_int_equal(r.status, REDLOCK_OK);
  engine_release(e, r.lock);

  f->m[2].quarantined = 1;
  lock_result_t r2 = {0};
  engine_lock(e, "r", TTL_MS, 0, &r2);
  fake_reply_ok_all(f);
  assert_int_equal(r2.calls, 1);
  assert_int_equal(r2.status, REDLOCK_ENOQUORUM);
  fake_reply_int_all(f, 1); /* the attempt's release (not an acquisition: counted) */
}

/* Masters down or busy at send time vote at once: no quorum without a
 * reply; nothing is released on them (they cannot hold the key). */
static void test_masters_down(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  f->m[0].mode = f->m[1].mode = FAKE_SEND_DOWN;
  f->m[2].mode = FAKE_SEND_BUSY;
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 0, &r);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ENOQUORUM);
  f->m[0].mode = f->m[1].mode = f->m[2].mode = FAKE_SEND_OK;
  fake_reply_ok(f, 3);
  fake_reply_ok(f, 4);
  fake_reply_int_all(f, 1); /* released on 3 and 4 */
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* The retry policy: a lost attempt is retried after the delay (plus a
 * jitter), each with a fresh round, until the retries are spent. */
static engine_config_t retrying = {
    .retry = 1, .retry_count = 2, .retry_delay_ms = 50, .retry_jitter_ms = 10};
static void test_retries_with_backoff(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 0, &r);
  for (int attempt = 1; attempt <= 3; attempt++) {
    assert_int_equal(f->m[0].sends, (unsigned)(2 * attempt - 1)); /* acquisitions + releases */
    fake_reply_nil_each(f);
    /* decided at the third refusal: the two votes then pending may have
     * set the key, so the release goes out (to every master) */
    assert_int_equal(fake_outstanding(f, 4), 1);
    fake_reply_int_all(f, 0);
    assert_int_equal(fake_outstanding_all(f), 0);
    if (attempt < 3) {
      assert_int_equal(r.calls, 0);
      fake_advance_ms(49); /* the delay is 50 ms plus 0..10 of jitter */
      assert_int_equal(fake_outstanding_all(f), 0);
      fake_advance_ms(11);
      assert_int_equal(fake_outstanding(f, 0), 1);
    }
  }
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ELOCKED);
}

/* Calls submitted from another thread faster than the loop runs them are
 * run CLIENT_DRAIN_MAX at a time: a loop turn stays short (its writes and
 * reads come between batches), and every call still runs, in order. */
#define MANY_CALLS (3 * CLIENT_DRAIN_MAX + 7)
typedef struct {
  engine_fx_t *e;
  lock_result_t results[MANY_CALLS];
  unsigned refused;
} many_t;

static void submit_many(void *arg) {
  many_t *m = arg;
  char name[32];
  for (unsigned i = 0; i < MANY_CALLS; i++) {
    snprintf(name, sizeof name, "many:%u", i);
    if (redlock_lock_async(m->e->client, name, TTL_MS, 0, on_lock, &m->results[i]) != 0)
      m->refused++;
  }
}

static void test_drain_in_batches(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  many_t *m = calloc(1, sizeof *m);
  assert_non_null(m);
  m->e = e;
  uv_thread_t thread;
  assert_int_equal(uv_thread_create(&thread, submit_many, m), 0);
  uv_thread_join(&thread);
  assert_int_equal(m->refused, 0);
  uv_run(&e->loop, UV_RUN_NOWAIT); /* one turn: its wake-up and check phase drain */
  unsigned first = fake_outstanding(f, 0);
  assert_true(first >= CLIENT_DRAIN_MAX);
  assert_true(first <= 2 * CLIENT_DRAIN_MAX);
  for (unsigned turn = 0; turn < MANY_CALLS && fake_outstanding(f, 0) < MANY_CALLS; turn++)
    uv_run(&e->loop, UV_RUN_NOWAIT); /* the rest, in turns that do not sleep */
  assert_int_equal(fake_outstanding(f, 0), MANY_CALLS);
  assert_true(fake_cmd_has(f, 0, 0, "many:0"));
  char last[32];
  snprintf(last, sizeof last, "many:%u", MANY_CALLS - 1);
  assert_true(fake_cmd_has(f, 0, MANY_CALLS - 1, last));
  for (unsigned i = 0; i < MANY_CALLS; i++)
    fake_reply_nil_each(f); /* held elsewhere: each ends, and releases its attempt */
  while (fake_outstanding_all(f) > 0)
    fake_reply_int_all(f, 0);
  for (unsigned i = 0; i < MANY_CALLS; i++) {
    assert_int_equal(m->results[i].calls, 1);
    assert_int_equal(m->results[i].status, REDLOCK_ELOCKED);
  }
  free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST(test_won_out_of_order_and_validity),
      ENGINE_TEST(test_lost_held_releases_attempt),
      ENGINE_TEST(test_no_quorum_on_errors),
      ENGINE_TEST(test_per_vote_timeouts_and_release_replay),
      ENGINE_TEST(test_validity_too_short),
      ENGINE_TEST(test_validity_just_enough),
      ENGINE_TEST(test_restart_quarantine),
      ENGINE_TEST(test_masters_down),
      ENGINE_TEST_WITH(test_retries_with_backoff, &retrying),
      ENGINE_TEST(test_drain_in_batches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
