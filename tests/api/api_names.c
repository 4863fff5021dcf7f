/* api_names.c: names and TTLs the library refuses, and why it says so
 * (N = 3 real masters, the client's log captured at WARN).
 *
 * Asserts, per include/redlock.h:
 *  - a ttl above the max TTL gives EINVAL and a WARN line with both numbers
 *    and the setter that raises the limit ("ttl 120000 ms is above the max
 *    TTL 30000 ms (redlock_options_set_max_ttl)"), for lock, lock_wait,
 *    extend, semaphores, read-write locks and elections; ttl 0 says so too;
 *  - a lock key (key prefix + resource) that starts with
 *    REDLOCK_RESERVED_PREFIX is refused (EINVAL, a WARN saying why) for
 *    lock, trylock, lock_many, lock_async and elect, and as a semaphore's or
 *    read-write lock's name; nothing is written on the masters, so a fenced
 *    lock on "y" still counts its fence on "__redlock_fence__:{y}";
 *    the same name under a key prefix ("app:") is an ordinary key;
 *  - a mutex whose key is a semaphore's slot or a read-write lock's key
 *    ("{x}:sem:0", "{x}:rw:write") is refused while that primitive works;
 *    "x:sem:0" (no hash tag: no primitive has that key) is an ordinary lock;
 *  - "x" and "{x}" are two lock keys: both can be held at once.
 */
#include "fixture.h"

#define TTL 10000u
#define MAX_TTL 30000u

static redlock_t *open_logged(const char *prefix, int fenced) {
  redlock_options_t *opts = fx_options_retry(fx_group, 0, REDLOCK_LOG_WARN, 0, 10, 10);
  assert_int_equal(redlock_options_set_max_ttl(opts, MAX_TTL), REDLOCK_OK);
  if (prefix != NULL)
    assert_int_equal(redlock_options_set_key_prefix(opts, prefix), REDLOCK_OK);
  if (fenced)
    assert_int_equal(redlock_options_set_fencing(opts, 1), REDLOCK_OK);
  return fx_open(fx_group, 0, opts);
}

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e, (void)term, (void)arg;
}
static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e, (void)reason, (void)arg;
}

static void expect_logged(const char *needle) {
  if (!fx_log_contains(fx_group, 0, needle))
    fail_msg("the log lacks \"%s\"; it holds:\n%s", needle, fx_log_text(fx_group, 0));
}

static void test_ttl_above_max(void **state) {
  (void)state;
  redlock_t *client = open_logged(NULL, 0);
  FX_NAME(res, "ttl");
  redlock_lock_t *lock = NULL;
  static const char msg[] = "[WARN] ttl 120000 ms is above the max TTL 30000 ms "
                            "(redlock_options_set_max_ttl)";

  assert_int_equal(redlock_lock(client, res, 120000, &lock), REDLOCK_EINVAL);
  expect_logged(msg);
  fx_log_clear(fx_group, 0);
  assert_int_equal(redlock_lock_wait(client, res, 120000, 100, &lock), REDLOCK_EINVAL);
  expect_logged(msg);
  fx_log_clear(fx_group, 0);
  assert_int_equal(redlock_semaphore_acquire(client, res, 2, 120000, 0, &lock), REDLOCK_EINVAL);
  expect_logged(msg);
  fx_log_clear(fx_group, 0);
  assert_int_equal(redlock_rwlock_read(client, res, 120000, 0, &lock), REDLOCK_EINVAL);
  expect_logged(msg);
  fx_log_clear(fx_group, 0);
  redlock_election_t *e = NULL;
  assert_int_equal(redlock_elect(client, res, 120000, on_elected, on_lost, NULL, &e),
                   REDLOCK_EINVAL);
  expect_logged(msg);
  fx_log_clear(fx_group, 0);
  assert_int_equal(redlock_lock(client, res, 0, &lock), REDLOCK_EINVAL);
  expect_logged("ttl 0 ms refused");

  /* extend: the same message, with the number asked for. */
  assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_OK);
  fx_log_clear(fx_group, 0);
  assert_int_equal(redlock_extend(client, lock, MAX_TTL + 1), REDLOCK_EINVAL);
  expect_logged("ttl 30001 ms is above the max TTL 30000 ms (redlock_options_set_max_ttl)");
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
}

static void test_reserved_prefix(void **state) {
  (void)state;
  redlock_t *client = open_logged(NULL, 1);
  FX_NAME(y, "fenced");
  char fence_name[200], release_name[200], bare[200];
  snprintf(fence_name, sizeof fence_name, REDLOCK_FENCE_KEY_PREFIX "{%s}", y);
  snprintf(release_name, sizeof release_name, REDLOCK_RELEASE_CHANNEL_PREFIX "{%s}", y);
  snprintf(bare, sizeof bare, REDLOCK_RESERVED_PREFIX "%s", y);
  const char *const names[] = {fence_name, release_name, bare};
  fx_rec_t rec;
  fx_rec_init(&rec);
  redlock_lock_t *lock = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    fx_log_clear(fx_group, 0);
    assert_int_equal(redlock_lock(client, names[i], TTL, &lock), REDLOCK_EINVAL);
    assert_null(lock);
    expect_logged("[WARN] name '");
    expect_logged("reserved prefix " REDLOCK_RESERVED_PREFIX);
    assert_int_equal(redlock_trylock(client, names[i], TTL, &lock), REDLOCK_EINVAL);
    assert_int_equal(redlock_lock_wait(client, names[i], TTL, 100, &lock), REDLOCK_EINVAL);
    FX_NAME(other, "many");
    const char *many[2] = {other, names[i]};
    assert_int_equal(redlock_lock_many(client, many, 2, TTL, &lock), REDLOCK_EINVAL);
    assert_int_equal(redlock_lock_async(client, names[i], TTL, 0, fx_rec_lock_cb, &rec),
                     REDLOCK_EINVAL);
    redlock_election_t *e = NULL;
    assert_int_equal(redlock_elect(client, names[i], TTL, on_elected, on_lost, NULL, &e),
                     REDLOCK_EINVAL);
    assert_null(e);
    assert_int_equal(redlock_semaphore_acquire(client, names[i], 2, TTL, 0, &lock), REDLOCK_EINVAL);
    assert_int_equal(redlock_rwlock_write(client, names[i], TTL, 0, &lock), REDLOCK_EINVAL);
    assert_nil_everywhere(fx_group, other);
  }
  assert_nil_everywhere(fx_group, fence_name);

  /* The fenced lock on y owns its counter, which nobody could take. */
  assert_int_equal(redlock_trylock(client, y, TTL, &lock), REDLOCK_OK);
  uint64_t fence = redlock_lock_fence(lock);
  assert_true(fence > 0);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_int_equal(redlock_trylock(client, y, TTL, &lock), REDLOCK_OK);
  assert_true(redlock_lock_fence(lock) > fence);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);

  /* Under a key prefix the same name is an ordinary key. */
  fx_close(fx_group, 0);
  client = open_logged("app:", 0);
  assert_int_equal(redlock_trylock(client, fence_name, TTL, &lock), REDLOCK_OK);
  char key[256];
  snprintf(key, sizeof key, "app:%s", fence_name);
  assert_value_everywhere(fx_group, key, redlock_lock_value(lock));
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  /* A prefix that starts the reserved one reserves every key. */
  fx_close(fx_group, 0);
  client = open_logged(REDLOCK_RESERVED_PREFIX, 0);
  assert_int_equal(redlock_trylock(client, y, TTL, &lock), REDLOCK_EINVAL);
  expect_logged("reserved prefix");
  assert_int_equal(atomic_load(&rec.calls), 0);
}

static void test_primitive_aliases(void **state) {
  (void)state;
  redlock_t *client = open_logged(NULL, 0);
  FX_NAME(x, "prim");
  char tagged[160], slot0[200], rw_write[200], plain_slot[200];
  snprintf(tagged, sizeof tagged, "{%s}", x);
  snprintf(slot0, sizeof slot0, "{%s}:sem:0", x);
  snprintf(rw_write, sizeof rw_write, "{%s}:rw:write", x);
  snprintf(plain_slot, sizeof plain_slot, "%s:sem:0", x);

  redlock_lock_t *permit = NULL, *lock = NULL;
  assert_int_equal(redlock_semaphore_acquire(client, x, 1, TTL, 0, &permit), REDLOCK_OK);
  assert_value_everywhere(fx_group, slot0, redlock_lock_value(permit));
  fx_log_clear(fx_group, 0);
  assert_int_equal(redlock_trylock(client, slot0, TTL, &lock), REDLOCK_EINVAL);
  expect_logged("semaphore's or read-write lock's key");
  assert_int_equal(redlock_unlock(client, permit), REDLOCK_OK);
  assert_int_equal(redlock_trylock(client, slot0, TTL, &lock), REDLOCK_EINVAL);

  assert_int_equal(redlock_rwlock_write(client, x, TTL, 0, &permit), REDLOCK_OK);
  assert_int_equal(redlock_trylock(client, rw_write, TTL, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock(client, permit), REDLOCK_OK);

  /* No hash tag: no primitive makes that key. */
  assert_int_equal(redlock_trylock(client, plain_slot, TTL, &lock), REDLOCK_OK);
  assert_value_everywhere(fx_group, plain_slot, redlock_lock_value(lock));
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);

  /* "x" and "{x}": two lock keys, held at once. */
  redlock_lock_t *a = NULL, *b = NULL;
  assert_int_equal(redlock_trylock(client, x, TTL, &a), REDLOCK_OK);
  assert_int_equal(redlock_trylock(client, tagged, TTL, &b), REDLOCK_OK);
  assert_value_everywhere(fx_group, x, redlock_lock_value(a));
  assert_value_everywhere(fx_group, tagged, redlock_lock_value(b));
  assert_int_equal(redlock_unlock(client, a), REDLOCK_OK);
  assert_int_equal(redlock_unlock(client, b), REDLOCK_OK);
}

FX_GROUP_MAIN(120, fx_group_test(test_ttl_above_max), fx_group_test(test_reserved_prefix),
              fx_group_test(test_primitive_aliases))
