/* api_keys.c: what a lock looks like in Redis, and interoperation with other
 * Redlock clients (N = 3 real masters).  Linked against the SHARED library
 * (libredlock.so), so it also checks that the public API is exported and
 * usable through the ABI.
 *
 * Asserts:
 *  - key prefix: with set_key_prefix("app:") the key in Redis is
 *    "app:<resource>" (also for lock_many), "<resource>" itself is untouched,
 *    and redlock_lock_resource() returns "<resource>"; a client without the
 *    prefix contends on "app:<resource>" but not on "<resource>";
 *  - a key set by someone else (SET res someone-else NX PX 10000) on a quorum
 *    of masters makes trylock return REDLOCK_ELOCKED, leaves their key as it
 *    was and leaves none of ours behind; on a minority only, trylock wins, and
 *    unlock deletes only our keys (compare-and-delete);
 *  - a lock's value is a 32-character lowercase hex string, every master's
 *    key holds exactly that value, and each acquisition gets a new value;
 *  - the error-name / message / version functions answer through the ABI.
 */
#include <ctype.h>

#include "fixture.h"

#define TTL 10000u

static void test_key_prefix(void **state) {
  (void)state;
  redlock_options_t *opts = fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10);
  assert_int_equal(redlock_options_set_key_prefix(opts, "app:"), REDLOCK_OK);
  redlock_t *client = fx_open_free(fx_group, opts);
  redlock_t *plain = fx_client(fx_group, 0, 10, 10);

  char res[128], key[160];
  fx_name(res, sizeof res, "prefix");
  snprintf(key, sizeof key, "app:%s", res);
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_OK);
  assert_string_equal(redlock_lock_resource(lock), res);
  assert_value_everywhere(fx_group, key, redlock_lock_value(lock));
  assert_nil_everywhere(fx_group, res);

  /* Same key for a client without the prefix; the bare name is free. */
  redlock_lock_t *other = (redlock_lock_t *)1;
  assert_int_equal(redlock_trylock(plain, key, TTL, &other), REDLOCK_ELOCKED);
  assert_null(other);
  assert_int_equal(redlock_trylock(plain, res, TTL, &other), REDLOCK_OK);
  assert_value_everywhere(fx_group, res, redlock_lock_value(other));
  assert_int_equal(redlock_unlock(plain, other), REDLOCK_OK);

  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, key);

  /* lock_many: every key gets the prefix; the handle names the first resource. */
  char m1[128], m2[128], k1[160], k2[160];
  fx_name(m1, sizeof m1, "prefix-many");
  fx_name(m2, sizeof m2, "prefix-many");
  snprintf(k1, sizeof k1, "app:%s", m1);
  snprintf(k2, sizeof k2, "app:%s", m2);
  const char *many[2] = {m1, m2};
  assert_int_equal(redlock_lock_many(client, many, 2, TTL, &lock), REDLOCK_OK);
  assert_string_equal(redlock_lock_resource(lock), m1);
  assert_value_everywhere(fx_group, k1, redlock_lock_value(lock));
  assert_value_everywhere(fx_group, k2, redlock_lock_value(lock));
  assert_nil_everywhere(fx_group, m1);
  assert_nil_everywhere(fx_group, m2);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, k1);
  assert_nil_everywhere(fx_group, k2);
}

static void test_external_holder(void **state) {
  (void)state;
  redlock_t *client = fx_client(fx_group, 0, 10, 10);
  char res[128], buf[128];
  fx_name(res, sizeof res, "interop");

  /* Someone else holds it on a quorum (masters 0 and 1). */
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(rh_server_command(fx_group->servers[i], buf, sizeof buf,
                                       "SET %s someone-else NX PX 10000", res),
                     0);
    assert_string_equal(buf, "OK");
  }
  redlock_lock_t *lock = (redlock_lock_t *)1;
  assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_ELOCKED);
  assert_null(lock);
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, "someone-else"), 2);
  /* Our SET on the third master is released (the failed attempt cleans up). */
  fx_t third = {.servers = {fx_group->servers[2]}, .n = 1};
  assert_true(fx_wait_nil_everywhere(&third, res, 5000));

  /* On a minority only (master 0): we win on the other two. */
  assert_int_equal(rh_server_command(fx_group->servers[1], buf, sizeof buf, "DEL %s", res), 0);
  assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_OK);
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, redlock_lock_value(lock)), 2);
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, "someone-else"), 1);
  /* Unlock deletes only our keys. */
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, "someone-else"), 1);
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, "(nil)"), 2);
  assert_int_equal(rh_server_command(fx_group->servers[0], buf, sizeof buf, "DEL %s", res), 0);
}

static void test_value_shape(void **state) {
  (void)state;
  redlock_t *client = fx_client(fx_group, 0, 10, 10);
  FX_NAME(res, "value");
  char seen[8][64];
  for (int n = 0; n < 8; n++) {
    redlock_lock_t *lock = NULL;
    assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_OK);
    const char *value = redlock_lock_value(lock);
    assert_non_null(value);
    assert_int_equal(strlen(value), 32);
    for (size_t i = 0; i < 32; i++)
      assert_true(isdigit((unsigned char)value[i]) || (value[i] >= 'a' && value[i] <= 'f'));
    for (size_t i = 0; i < fx_group->n; i++) {
      char buf[128];
      assert_int_equal(rh_server_command(fx_group->servers[i], buf, sizeof buf, "GET %s", res), 0);
      assert_string_equal(buf, value);
    }
    for (int j = 0; j < n; j++)
      assert_string_not_equal(seen[j], value);
    snprintf(seen[n], sizeof seen[n], "%s", value);
    assert_int_equal(redlock_lock_fence(lock), 0); /* fencing is off */
    assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  }
}

static void test_error_strings(void **state) {
  (void)state;
#define CHECK_ERR(name, value, msg)                                                                \
  assert_int_equal(REDLOCK_##name, value);                                                         \
  assert_string_equal(redlock_err_name(value), "REDLOCK_" #name);                                  \
  assert_string_equal(redlock_strerror(value), msg);
  REDLOCK_ERRNO_MAP(CHECK_ERR)
#undef CHECK_ERR
  assert_non_null(redlock_strerror(0));
  assert_non_null(redlock_err_name(0));
  assert_non_null(redlock_strerror(-1000));
  assert_non_null(redlock_err_name(-1000));
  assert_non_null(redlock_strerror(12345));
  assert_string_equal(redlock_version(), REDLOCK_VERSION_STRING);
}

FX_GROUP_MAIN(120, fx_group_test(test_key_prefix), fx_group_test(test_external_holder),
              fx_group_test(test_value_shape), fx_group_test(test_error_strings))
