/* api_extend.c: redlock_extend semantics against N = 3 real masters.
 *
 * Asserts, per include/redlock.h ("Sets the lock's TTL to ttl_ms from now on
 * a quorum.  A lock whose local validity has run out is not extended:
 * REDLOCK_ELOST"):
 *  - extend sets the TTL from now, shorter or longer: PTTL on the masters and
 *    the handle's validity follow (both bounded by the new ttl);
 *  - once the local validity ran out and another client took the resource,
 *    extend returns REDLOCK_ELOST, the handle reports lost, the other
 *    client's key (value and PTTL) is untouched, and our unlock (ELOST) frees
 *    the handle without deleting their key;
 *  - when someone else's value replaced ours on every master (validity still
 *    positive locally), extend returns REDLOCK_ELOST and marks the handle
 *    lost; watching that lost handle reports it lost (lost callback once,
 *    with ELOST) or refuses with ELOST; unlock leaves their key alone.
 */
#include "fixture.h"

static void test_extend_sets_ttl_from_now(void **state) {
  (void)state;
  redlock_t *client = fx_client(fx_group, 0, 10, 10);
  FX_NAME(res, "extend-ttl");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(client, res, 10000, &lock), REDLOCK_OK);
  assert_value_everywhere(fx_group, res, redlock_lock_value(lock));

  /* Shorter. */
  assert_int_equal(redlock_extend(client, lock, 2000), REDLOCK_OK);
  int64_t v = redlock_lock_validity_ms(lock);
  assert_true(v > 0 && v <= 2000);
  size_t shortened = 0;
  for (size_t i = 0; i < fx_group->n; i++) {
    long long pttl = fx_pttl_try(fx_group->servers[i], res);
    if (pttl > 0 && pttl <= 2000)
      shortened++;
  }
  assert_true(shortened >= 2); /* at least the quorum that answered */

  /* Longer. */
  assert_int_equal(redlock_extend(client, lock, 30000), REDLOCK_OK);
  v = redlock_lock_validity_ms(lock);
  assert_true(v > 20000 && v <= 30000);
  assert_pttl_above_everywhere(fx_group, res, 20000);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);
}

static int pred_expired(void *arg) { return redlock_lock_validity_ms(arg) <= 0; }

static void test_extend_after_expiry(void **state) {
  (void)state;
  redlock_t *a = fx_client(fx_group, 0, 10, 10);
  redlock_t *b = fx_client(fx_group, 0, 10, 10);
  FX_NAME(res, "extend-expired");
  redlock_lock_t *mine = NULL, *theirs = NULL;
  assert_int_equal(redlock_trylock(a, res, 100, &mine), REDLOCK_OK);
  assert_true(rh_wait_until(pred_expired, mine, 2000));
  assert_true(redlock_lock_is_lost(mine));
  assert_nil_everywhere(fx_group, res); /* expired in Redis too */
  assert_int_equal(redlock_trylock(b, res, 10000, &theirs), REDLOCK_OK);
  assert_value_everywhere(fx_group, res, redlock_lock_value(theirs));

  assert_int_equal(redlock_extend(a, mine, 30000), REDLOCK_ELOST);
  assert_true(redlock_lock_is_lost(mine));
  /* Their key is untouched: same value, not extended to our 30 s. */
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, redlock_lock_value(theirs)),
                   fx_group->n);
  for (size_t i = 0; i < fx_group->n; i++)
    assert_true(fx_pttl_try(fx_group->servers[i], res) <= 10000);
  /* Our unlock frees our handle and leaves their key alone. */
  assert_int_equal(redlock_unlock(a, mine), REDLOCK_ELOST);
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, redlock_lock_value(theirs)),
                   fx_group->n);
  assert_true(redlock_lock_validity_ms(theirs) > 0);
  assert_int_equal(redlock_unlock(b, theirs), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);
}

static void test_extend_when_taken_over(void **state) {
  (void)state;
  redlock_t *client = fx_client(fx_group, 0, 10, 10);
  char res[128], buf[128];
  fx_name(res, sizeof res, "extend-taken");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(client, res, 10000, &lock), REDLOCK_OK);
  assert_value_everywhere(fx_group, res, redlock_lock_value(lock));
  /* Someone else's value replaces ours everywhere (as after an expiry we
   * did not notice, or a buggy peer). */
  for (size_t i = 0; i < fx_group->n; i++) {
    assert_int_equal(rh_server_command(fx_group->servers[i], buf, sizeof buf,
                                       "SET %s someone-else PX 10000", res),
                     0);
    assert_string_equal(buf, "OK");
  }
  assert_true(redlock_lock_validity_ms(lock) > 0);
  assert_int_equal(redlock_extend(client, lock, 30000), REDLOCK_ELOST);
  assert_true(redlock_lock_is_lost(lock));
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, "someone-else"), fx_group->n);
  for (size_t i = 0; i < fx_group->n; i++)
    assert_true(fx_pttl_try(fx_group->servers[i], res) <= 10000);

  /* Watching a lost handle: told at once, one way or the other. */
  static fx_lost_t lost; /* static: outlives the frame if an assertion fails */
  atomic_store(&lost.calls, 0);
  atomic_store(&lost.reason, 0);
  int rc = redlock_watch(client, lock, fx_lost_cb, &lost);
  if (rc == REDLOCK_OK) {
    assert_true(fx_lost_wait(&lost, 1, 2000));
    assert_int_equal(atomic_load(&lost.reason), REDLOCK_ELOST);
  } else {
    assert_int_equal(rc, REDLOCK_ELOST);
  }

  assert_int_equal(redlock_unlock(client, lock), REDLOCK_ELOST);
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, "someone-else"), fx_group->n);
  fx_close_client(fx_group, client);
  assert_true(atomic_load(&lost.calls) <= 1);
  if (rc == REDLOCK_OK)
    assert_int_equal(atomic_load(&lost.calls), 1);
  for (size_t i = 0; i < fx_group->n; i++)
    assert_int_equal(rh_server_command(fx_group->servers[i], buf, sizeof buf, "DEL %s", res), 0);
}

FX_GROUP_MAIN(120, fx_group_test(test_extend_sets_ttl_from_now),
              fx_group_test(test_extend_after_expiry), fx_group_test(test_extend_when_taken_over))
