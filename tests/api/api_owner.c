/* api_owner.c: owner labels (redlock_options_set_owner) against three real
 * masters.
 *
 * Asserts, per include/redlock.h:
 *  - the setter's validation: NULL and "" clear; 1..REDLOCK_MAX_OWNER bytes
 *    of 0x21..0x7e are taken; one byte more, a space, a control byte, a
 *    byte above 0x7e or the separator '~' give EINVAL and leave the label
 *    as it was; the getter reads it back ("" on a fresh object);
 *  - the value layout on the masters: without a label, 32 lowercase hex
 *    digits exactly (as before labels existed); with one, those digits, '~'
 *    and the label, and redlock_lock_owner() gives the label;
 *  - a labelled lock extends and unlocks (the whole value is compared), and
 *    excludes a client without a label and is excluded by it;
 *  - semaphore permits, read and write holds carry the label too.
 */
#include <ctype.h>

#include "fixture.h"

#define TTL 10000u

static void test_owner_validation(void **state) {
  (void)state;
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  const char *got = NULL;
  assert_int_equal(redlock_options_get_owner(opts, &got), REDLOCK_OK);
  assert_string_equal(got, "");
  assert_int_equal(redlock_options_set_owner(NULL, "x"), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_owner(NULL, &got), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_owner(opts, NULL), REDLOCK_OK);

  assert_int_equal(redlock_options_set_owner(opts, "host-1:4242"), REDLOCK_OK);
  assert_int_equal(redlock_options_get_owner(opts, &got), REDLOCK_OK);
  assert_string_equal(got, "host-1:4242");

  char longest[REDLOCK_MAX_OWNER + 2];
  memset(longest, 'a', REDLOCK_MAX_OWNER);
  longest[REDLOCK_MAX_OWNER] = '\0';
  assert_int_equal(redlock_options_set_owner(opts, longest), REDLOCK_OK);
  assert_int_equal(redlock_options_get_owner(opts, &got), REDLOCK_OK);
  assert_string_equal(got, longest);
  assert_int_equal(redlock_options_set_owner(opts, "!}"), REDLOCK_OK); /* 0x21, 0x7d */

  longest[REDLOCK_MAX_OWNER] = 'a';
  longest[REDLOCK_MAX_OWNER + 1] = '\0';
  const char *bad[] = {longest, "a b", "tab\there", "nl\n", "del\x7f", "hi\xc3\xa9", "a~b", "~"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(redlock_options_set_owner(opts, bad[i]), REDLOCK_EINVAL);
    assert_int_equal(redlock_options_get_owner(opts, &got), REDLOCK_OK);
    assert_string_equal(got, "!}"); /* unchanged */
  }
  assert_int_equal(redlock_options_set_owner(opts, ""), REDLOCK_OK);
  assert_int_equal(redlock_options_get_owner(opts, &got), REDLOCK_OK);
  assert_string_equal(got, "");
  assert_int_equal(redlock_options_set_owner(opts, "x"), REDLOCK_OK);
  assert_int_equal(redlock_options_set_owner(opts, NULL), REDLOCK_OK);
  assert_int_equal(redlock_options_get_owner(opts, &got), REDLOCK_OK);
  assert_string_equal(got, "");
  redlock_options_free(opts);
  assert_null(redlock_lock_owner(NULL));
}

static redlock_t *open_owner(int slot, const char *owner) {
  redlock_options_t *opts = fx_options_retry(fx_group, slot, REDLOCK_LOG_WARN, 0, 10, 10);
  if (owner != NULL)
    assert_int_equal(redlock_options_set_owner(opts, owner), REDLOCK_OK);
  return fx_open(fx_group, slot, opts);
}

static void assert_hex32(const char *v) {
  for (int i = 0; i < 32; i++)
    assert_true(isxdigit((unsigned char)v[i]) && !isupper((unsigned char)v[i]));
}

static void test_value_without_label(void **state) {
  (void)state;
  redlock_t *c = open_owner(0, NULL);
  FX_NAME(res, "owner-none");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx_group, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
  const char *v = redlock_lock_value(lock);
  assert_int_equal(strlen(v), 32);
  assert_hex32(v);
  assert_string_equal(redlock_lock_owner(lock), "");
  assert_value_everywhere(fx_group, res, v);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, lock), REDLOCK_OK);
}

static void test_value_with_label(void **state) {
  (void)state;
  redlock_t *c = open_owner(0, "worker-7@host:99");
  redlock_t *plain = open_owner(1, NULL);
  FX_NAME(res, "owner-label");
  redlock_lock_t *lock = NULL, *other = NULL;
  FX_ASSERT_RC(fx_group, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
  const char *v = redlock_lock_value(lock);
  assert_int_equal(strlen(v), 32 + 1 + strlen("worker-7@host:99"));
  assert_hex32(v);
  assert_int_equal(v[32], '~');
  assert_string_equal(v + 33, "worker-7@host:99");
  assert_string_equal(redlock_lock_owner(lock), "worker-7@host:99");
  assert_value_everywhere(fx_group, res, v);

  /* It excludes a client without a label, extends and unlocks whole. */
  FX_ASSERT_RC(fx_group, plain, redlock_trylock(plain, res, TTL, &other), REDLOCK_ELOCKED);
  FX_ASSERT_RC(fx_group, c, redlock_extend(c, lock, 2 * TTL), REDLOCK_OK);
  assert_pttl_above_everywhere(fx_group, res, TTL);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);

  /* And is excluded by it. */
  FX_ASSERT_RC(fx_group, plain, redlock_trylock(plain, res, TTL, &other), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ELOCKED);
  FX_ASSERT_RC(fx_group, plain, redlock_unlock(plain, other), REDLOCK_OK);
}

static void test_label_fenced_and_prims(void **state) {
  (void)state;
  redlock_options_t *opts = fx_options_fenced(fx_group, 0);
  assert_int_equal(redlock_options_set_owner(opts, "prim-owner"), REDLOCK_OK);
  redlock_t *c = fx_open(fx_group, 0, opts);
  FX_NAME(res, "owner-fenced");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx_group, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
  assert_true(redlock_lock_fence(lock) > 0);
  assert_string_equal(redlock_lock_owner(lock), "prim-owner");
  assert_value_everywhere(fx_group, res, redlock_lock_value(lock));
  FX_ASSERT_RC(fx_group, c, redlock_extend(c, lock, TTL), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);

  FX_NAME(sem, "owner-sem");
  redlock_lock_t *permit = NULL;
  FX_ASSERT_RC(fx_group, c, redlock_semaphore_acquire(c, sem, 2, TTL, 0, &permit), REDLOCK_OK);
  assert_string_equal(redlock_lock_owner(permit), "prim-owner");
  FX_ASSERT_RC(fx_group, c, redlock_extend(c, permit, TTL), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, permit), REDLOCK_OK);

  FX_NAME(rw, "owner-rw");
  redlock_lock_t *r = NULL, *w = NULL;
  FX_ASSERT_RC(fx_group, c, redlock_rwlock_read(c, rw, TTL, 0, &r), REDLOCK_OK);
  assert_string_equal(redlock_lock_owner(r), "prim-owner");
  FX_ASSERT_RC(fx_group, c, redlock_extend(c, r, TTL), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, r), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_rwlock_write(c, rw, TTL, 0, &w), REDLOCK_OK);
  assert_string_equal(redlock_lock_owner(w), "prim-owner");
  FX_ASSERT_RC(fx_group, c, redlock_extend(c, w, TTL), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, w), REDLOCK_OK);
  /* Released for real: a fresh read hold is granted at once. */
  FX_ASSERT_RC(fx_group, c, redlock_rwlock_read(c, rw, TTL, 0, &r), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, r), REDLOCK_OK);
}

FX_GROUP_MAIN(120, fx_group_test(test_owner_validation), fx_group_test(test_value_without_label),
              fx_group_test(test_value_with_label), fx_group_test(test_label_fenced_and_prims))
