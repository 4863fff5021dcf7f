/* test_lock_fence.c: fenced acquisitions (fencing on: lock.c's token
 * write-back) on a client over fake masters and a stepped clock
 * (engine_fixture.h): the token is the largest a yes returned, written back
 * to every master before the grant; a write-back that loses fails the
 * attempt (its value released); close during either round cancels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine_fixture.h"

#define TTL_MS 10000
#define DRIFT_MS (TTL_MS / 100 + 2)

/* Tokens 5, 7, 6 from the yeses: 7 is written back, then granted; validity
 * counts from the start of the acquisition, across both rounds. */
static void test_fence_written_back(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "ledger", TTL_MS, 0, &r);
  assert_true(fake_cmd_has(f, 0, 0, "EVALSHA"));
  assert_true(fake_cmd_has(f, 0, 0, REDLOCK_FENCE_KEY_PREFIX "{ledger}"));
  fake_advance_ms(3);
  fake_reply_int(f, 0, 5);
  fake_reply_nil(f, 1);
  fake_reply_int(f, 2, 7);
  fake_reply_int(f, 3, 6);
  assert_int_equal(r.calls, 0);
  /* the write-back went out behind the acquisition's last vote */
  assert_int_equal(fake_outstanding(f, 4), 2);
  assert_true(fake_cmd_has(f, 0, 0, "7"));
  fake_reply_int(f, 4, 4); /* late */
  fake_advance_ms(2);
  fake_reply_int_all(f, 1);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  assert_int_equal(redlock_lock_fence(r.lock), 7);
  assert_int_equal(redlock_lock_validity_ms(r.lock), TTL_MS - 5 - DRIFT_MS);
  engine_release(e, r.lock);
}

/* The write-back refused by a quorum (a higher token got there first): the
 * attempt fails as held, and the acquisition's value is released. */
static void test_fence_commit_lost(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "ledger", TTL_MS, 0, &r);
  fake_reply_int_all(f, 9); /* won on all five */
  assert_int_equal(fake_outstanding(f, 0), 1);
  fake_reply_int(f, 0, 0);
  fake_reply_int(f, 1, 0);
  fake_reply_int(f, 2, 0);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ELOCKED);
  fake_reply_int(f, 3, 1);
  fake_reply_int(f, 4, 1);
  assert_int_equal(fake_outstanding(f, 0), 1); /* the release of our value */
  fake_reply_int_all(f, 1);
}

/* Close while the acquisition is out: it is won, but not granted, and not
 * fenced (no write-back): ECANCELED, our value released. */
static void test_close_during_fenced_acquisition(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "ledger", TTL_MS, 0, &r);
  engine_fx_begin_close(e);
  assert_int_equal(r.calls, 0); /* its round is out: it ends when decided */
  assert_int_equal(redlock_lock_async(e->client, "x", TTL_MS, 0, on_lock, &r), REDLOCK_ECLOSED);
  fake_reply_int_all(f, 3);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  assert_true(fake_cmd_has(f, 0, 0, "EVALSHA")); /* the release, not a write-back */
  assert_false(fake_cmd_has(f, 0, 0, REDLOCK_FENCE_KEY_PREFIX));
}

/* Close while the write-back is out: ECANCELED when it is decided. */
static void test_close_during_fence_commit(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "ledger", TTL_MS, 0, &r);
  fake_reply_int_all(f, 3);
  engine_fx_begin_close(e);
  assert_int_equal(r.calls, 0);
  fake_reply_int_all(f, 1);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST_WITH(test_fence_written_back, &engine_fenced),
      ENGINE_TEST_WITH(test_fence_commit_lost, &engine_fenced),
      ENGINE_TEST_WITH(test_close_during_fenced_acquisition, &engine_fenced),
      ENGINE_TEST_WITH(test_close_during_fence_commit, &engine_fenced),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
