/* api_many_wait.c: redlock_lock_many and redlock_lock_wait against N = 3
 * real masters.
 *
 * Asserts:
 *  - lock_many is all-or-nothing: when one of the resources is held by another
 *    client it fails with REDLOCK_ELOCKED and none of the other keys is left
 *    set on any master (GET is nil); once free, it sets every key to the one
 *    lock value on every master, the handle's resource is the first one,
 *    another client cannot take any of them, extend extends every key (PTTL
 *    above the original ttl on every master) and unlock deletes every key;
 *  - lock_wait waits and succeeds once the holder (another client, unlocking
 *    from another thread after the waiter's first attempt was refused)
 *    releases, well within its budget;
 *  - lock_wait returns REDLOCK_ETIMEDOUT (and no handle) when the budget runs
 *    out, no earlier than the budget and not long after it.
 */
#include "fixture.h"

#define TTL 10000u

static void test_lock_many_all_or_nothing(void **state) {
  (void)state;
  redlock_t *other = fx_client(fx_group, 0, 10, 10);
  redlock_t *client = fx_client(fx_group, 1, 10, 10);
  char m[4][128];
  for (int i = 0; i < 4; i++)
    fx_name(m[i], sizeof m[i], "many");
  const char *res[4] = {m[0], m[1], m[2], m[3]};

  /* Another client holds the third resource. */
  redlock_lock_t *held = NULL;
  assert_int_equal(redlock_trylock(other, res[2], TTL, &held), REDLOCK_OK);
  /* Settled on every master before anyone contends (the call returned on a
   * quorum; a late SET could lose to a contender's on the last master). */
  assert_value_everywhere(fx_group, res[2], redlock_lock_value(held));
  redlock_lock_t *lock = (redlock_lock_t *)1;
  assert_int_equal(redlock_lock_many(client, res, 4, TTL, &lock), REDLOCK_ELOCKED);
  assert_null(lock);
  for (int i = 0; i < 4; i++) {
    if (i == 2)
      assert_value_everywhere(fx_group, res[i], redlock_lock_value(held));
    else
      assert_nil_everywhere(fx_group, res[i]);
  }
  /* Also when the held one comes first. */
  const char *first_held[2] = {res[2], res[0]};
  assert_int_equal(redlock_lock_many(client, first_held, 2, TTL, &lock), REDLOCK_ELOCKED);
  assert_nil_everywhere(fx_group, res[0]);
  assert_int_equal(redlock_unlock(other, held), REDLOCK_OK);
  /* unlock returned once a quorum released; wait for the last master too, so
   * that the next lock_many can set every key everywhere. */
  assert_nil_everywhere(fx_group, res[2]);

  /* Free now: all of them, with one value. */
  assert_int_equal(redlock_lock_many(client, res, 4, TTL, &lock), REDLOCK_OK);
  assert_non_null(lock);
  assert_string_equal(redlock_lock_resource(lock), res[0]);
  assert_true(redlock_lock_validity_ms(lock) > 0);
  const char *value = redlock_lock_value(lock);
  for (int i = 0; i < 4; i++) {
    assert_value_everywhere(fx_group, res[i], value);
    redlock_lock_t *x = (redlock_lock_t *)1;
    assert_int_equal(redlock_trylock(other, res[i], TTL, &x), REDLOCK_ELOCKED);
    assert_null(x);
  }

  /* extend extends every key on every master. */
  assert_int_equal(redlock_extend(client, lock, 40000), REDLOCK_OK);
  assert_true(redlock_lock_validity_ms(lock) > (int64_t)TTL);
  for (int i = 0; i < 4; i++)
    assert_pttl_above_everywhere(fx_group, res[i], (long long)TTL);

  /* unlock releases every key. */
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  for (int i = 0; i < 4; i++)
    assert_nil_everywhere(fx_group, res[i]);
}

typedef struct {
  redlock_t *client;
  const char *res;
  uint32_t wait_ms;
  int rc;
  redlock_lock_t *lock;
  uint64_t elapsed_ms;
  atomic_int done;
} waiter_t;

static void *waiter_main(void *arg) {
  waiter_t *w = arg;
  uint64_t t0 = rh_now_ms();
  w->rc = redlock_lock_wait(w->client, w->res, TTL, w->wait_ms, &w->lock);
  w->elapsed_ms = rh_now_ms() - t0;
  atomic_store(&w->done, 1);
  return NULL;
}

static int pred_waiter_done(void *arg) { return atomic_load(&((waiter_t *)arg)->done); }

static void test_lock_wait_succeeds_after_release(void **state) {
  (void)state;
  fx_contention_t k;
  fx_contend(fx_group, &k, "wait-ok", TTL, 0, 20, 20);

  waiter_t w = {k.contender, k.res, 8000, -100, NULL, 0, 0};
  atomic_init(&w.done, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
  /* The waiter has started and been refused at least once... */
  assert_true(rh_wait_until(fx_refused_once, k.contender, 5000));
  assert_false(atomic_load(&w.done));
  /* ... now the holder lets go (from this thread, not the waiter's). */
  assert_int_equal(redlock_unlock(k.holder, k.held), REDLOCK_OK);
  assert_true(rh_wait_until(pred_waiter_done, &w, 8000 + 3000));
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(w.rc, REDLOCK_OK);
  assert_non_null(w.lock);
  assert_true(w.elapsed_ms < 8000);
  /* On a quorum at least: a master that got our SET before the holder's
   * release refused it, and rightly so. */
  assert_true(fx_count_value(fx_group, fx_group->n, k.res, redlock_lock_value(w.lock)) >= 2);
  assert_int_equal(redlock_unlock(k.contender, w.lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, k.res);
}

static void test_lock_wait_times_out(void **state) {
  (void)state;
  fx_contention_t k;
  fx_contend(fx_group, &k, "wait-timeout", TTL, 0, 20, 20);

  const uint32_t budget = 300;
  waiter_t w = {k.contender, k.res, budget, -100, (redlock_lock_t *)1, 0, 0};
  atomic_init(&w.done, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
  assert_true(rh_wait_until(pred_waiter_done, &w, (int)budget + 5000));
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(w.rc, REDLOCK_ETIMEDOUT);
  assert_null(w.lock);
  assert_true(w.elapsed_ms + 2 >= budget);
  assert_true(w.elapsed_ms <= budget + 3000);
  assert_value_everywhere(fx_group, k.res, redlock_lock_value(k.held));
  assert_int_equal(redlock_unlock(k.holder, k.held), REDLOCK_OK);
}

FX_GROUP_MAIN(120, fx_group_test(test_lock_many_all_or_nothing),
              fx_group_test(test_lock_wait_succeeds_after_release),
              fx_group_test(test_lock_wait_times_out))
