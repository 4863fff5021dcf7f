/* test_reentrant.c: client-local reentrancy (redlock_options_set_reentrant).
 * Against 3 real masters: a thread that holds a resource and locks it again
 * gets a second handle at once that shares the lock (same value, fence and
 * validity; extend through either); the key stays in Redis until the last
 * handle is unlocked; another thread of the same client, and another client,
 * are still excluded; a double unlock of either handle is refused; close
 * frees every handle and releases the key; without the option a second lock
 * by the same thread is refused like anyone else's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define TTL 10000u

static redlock_t *open_client(fx_t *fx, int slot, int reentrant, int fencing) {
  redlock_options_t *opts = fx_options(fx, slot, fx->n, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_reentrant(opts, reentrant), REDLOCK_OK);
  assert_int_equal(redlock_options_set_fencing(opts, fencing), REDLOCK_OK);
  return fx_open(fx, slot, opts);
}

typedef struct {
  redlock_t *client;
  const char *resource;
  int status;
} other_thread_t;

static void *other_thread_trylock(void *arg) {
  other_thread_t *t = arg;
  redlock_lock_t *lock = NULL;
  t->status = redlock_trylock(t->client, t->resource, TTL, &lock);
  if (lock != NULL)
    redlock_unlock(t->client, lock);
  return NULL;
}

static void test_reentrant_holds_share_the_lock(void **state) {
  fx_t *fx = *state;
  redlock_t *c = open_client(fx, 0, 1, 1);
  redlock_t *other = open_client(fx, 1, 0, 1);
  const char *res = "reentrant:shared";

  redlock_lock_t *first = NULL, *second = NULL, *third = NULL;
  assert_int_equal(redlock_lock(c, res, TTL, &first), REDLOCK_OK);
  assert_int_equal(redlock_trylock(c, res, TTL, &second), REDLOCK_OK);
  assert_int_equal(redlock_lock_wait(c, res, TTL, 100, &third), REDLOCK_OK);
  assert_ptr_not_equal(first, second);
  assert_ptr_not_equal(second, third);
  assert_string_equal(redlock_lock_value(first), redlock_lock_value(second));
  assert_string_equal(redlock_lock_value(first), redlock_lock_value(third));
  assert_string_equal(redlock_lock_resource(second), res);
  assert_true(redlock_lock_fence(first) > 0);
  assert_true(redlock_lock_fence(second) == redlock_lock_fence(first));
  fx_assert_on_quorum(fx, res, redlock_lock_value(first));

  /* Another thread of the same client is not the owner: excluded. */
  other_thread_t t = {c, res, 0};
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, other_thread_trylock, &t), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(t.status, REDLOCK_ELOCKED);
  /* Another client: excluded. */
  redlock_lock_t *foreign = NULL;
  assert_int_equal(redlock_trylock(other, res, TTL, &foreign), REDLOCK_ELOCKED);
  assert_null(foreign);

  /* Extending through a hold extends the shared lock. */
  assert_int_equal(redlock_extend(c, second, 2 * TTL), REDLOCK_OK);
  assert_true(redlock_lock_validity_ms(first) > (int64_t)TTL);
  assert_true(fx_pttl(fx->servers[0], res) > (long long)TTL ||
              fx_pttl(fx->servers[1], res) > (long long)TTL);

  /* Unlocking the first handle leaves the lock held by the others. */
  assert_int_equal(redlock_unlock(c, first), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, first), REDLOCK_EINVAL); /* double unlock */
  fx_assert_on_quorum(fx, res, redlock_lock_value(second));
  assert_int_equal(redlock_trylock(other, res, TTL, &foreign), REDLOCK_ELOCKED);
  assert_int_equal(redlock_unlock(c, third), REDLOCK_OK);
  fx_assert_on_quorum(fx, res, redlock_lock_value(second));
  assert_false(redlock_lock_is_lost(second));

  /* The last unlock releases it in Redis. */
  char value[64];
  snprintf(value, sizeof value, "%s", redlock_lock_value(second));
  assert_int_equal(redlock_unlock(c, second), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, second), REDLOCK_EINVAL);
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], res, 5000));
  assert_int_equal(redlock_trylock(other, res, TTL, &foreign), REDLOCK_OK);
  assert_int_equal(redlock_unlock(other, foreign), REDLOCK_OK);

  /* After a full release, locking again is a fresh acquisition. */
  assert_int_equal(redlock_lock(c, res, TTL, &first), REDLOCK_OK);
  assert_string_not_equal(redlock_lock_value(first), value);
  assert_int_equal(redlock_unlock(c, first), REDLOCK_OK);
}

static void test_close_releases_every_hold(void **state) {
  fx_t *fx = *state;
  redlock_t *c = open_client(fx, 0, 1, 0);
  const char *res = "reentrant:close";
  redlock_lock_t *a = NULL, *b = NULL;
  assert_int_equal(redlock_lock(c, res, TTL, &a), REDLOCK_OK);
  assert_int_equal(redlock_lock(c, res, TTL, &b), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, a), REDLOCK_OK); /* b still holds it */
  fx_assert_on_quorum(fx, res, redlock_lock_value(b));
  fx_close(fx, 0); /* frees b too (ASan would see a leak otherwise) */
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], res, 5000));
}

static void test_off_by_default(void **state) {
  fx_t *fx = *state;
  redlock_t *c = open_client(fx, 0, 0, 0);
  const char *res = "reentrant:off";
  redlock_lock_t *a = NULL, *b = NULL;
  assert_int_equal(redlock_lock(c, res, TTL, &a), REDLOCK_OK);
  assert_int_equal(redlock_trylock(c, res, TTL, &b), REDLOCK_ELOCKED);
  assert_null(b);
  assert_int_equal(redlock_unlock(c, a), REDLOCK_OK);
}

static void test_expired_lock_is_not_reentered(void **state) {
  fx_t *fx = *state;
  redlock_t *c = open_client(fx, 0, 1, 0);
  const char *res = "reentrant:expired";
  redlock_lock_t *a = NULL, *b = NULL;
  assert_int_equal(redlock_lock(c, res, 300, &a), REDLOCK_OK);
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], res, 5000));
  assert_true(redlock_lock_is_lost(a));
  /* A lock past its validity is not shared: this is a new acquisition. */
  assert_int_equal(redlock_lock(c, res, TTL, &b), REDLOCK_OK);
  assert_string_not_equal(redlock_lock_value(a), redlock_lock_value(b));
  assert_int_equal(redlock_unlock(c, a), REDLOCK_ELOST);
  fx_assert_on_quorum(fx, res, redlock_lock_value(b));
  assert_int_equal(redlock_unlock(c, b), REDLOCK_OK);
}

FX_MAIN("tests", &fx_profile_safety, FX_TEST(test_reentrant_holds_share_the_lock, 3),
        FX_TEST(test_close_releases_every_hold, 3), FX_TEST(test_off_by_default, 3),
        FX_TEST(test_expired_lock_is_not_reentered, 3))
