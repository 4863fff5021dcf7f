/* test_keyname.c: a resource's derived names (keyname.h) hash to its lock
 * key's cluster slot (keyslot.h) whenever keyname_in_slot() says so, and it
 * says so for every key but those whose names cannot: over hand-picked keys
 * (plain, tagged, empty tags, braces in odd places, binary bytes), every
 * short string over the bytes that matter, random binary keys and keys of
 * the largest size, with the library's real prefixes and suffixes.  The
 * lengths stay within the bound the callers size their buffers by. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "engine/prims.h"
#include "proto/keyname.h"
#include "proto/keyslot.h"
#include "util/names.h"

/* The prefixes and suffixes the library builds names with (kind_*.c,
 * lock.c). */
static const char *const prefixes[] = {"", FENCE_KEY_PREFIX, NOTIFY_CHANNEL_PREFIX};
static const char *const suffixes[] = {
    "",
    PRIM_SEM_TAG,
    PRIM_SEM_TAG PRIM_SEM_SLOT_SEP "0",
    PRIM_SEM_TAG PRIM_SEM_SLOT_SEP "4294967295",
    PRIM_SEM_TAG PRIM_SEM_LIMIT_SUFFIX,
    PRIM_RW_TAG,
    PRIM_RW_TAG PRIM_RW_WRITE_SUFFIX,
    PRIM_RW_TAG PRIM_RW_READ_SUFFIX,
    PRIM_RW_TAG PRIM_RW_INTENT_SUFFIX,
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define KEY_MAX (REDLOCK_MAX_PREFIX_LEN + REDLOCK_MAX_RESOURCE_LEN)
#define NAME_MAX_LEN (sizeof NOTIFY_CHANNEL_PREFIX + KEY_MAX + KEYNAME_TAG_LEN + 32)

/* Builds every derived name of key; returns how many did not hash to the
 * key's slot.  Asserts the lengths and, for a key in_slot, that a derived
 * key has the tag already (FENCE_KEY_PREFIX + a permit's slot key stays in
 * the slot). */
static unsigned check_key(const char *key, size_t len) {
  static char name[NAME_MAX_LEN];
  static char inner[NAME_MAX_LEN];
  int want = keyslot(key, len);
  int in_slot = keyname_in_slot(key, len);
  unsigned off = 0;
  int family = -1;
  for (size_t p = 0; p < COUNT(prefixes); p++) {
    for (size_t s = 0; s < COUNT(suffixes); s++) {
      size_t pl = strlen(prefixes[p]), sl = strlen(suffixes[s]);
      size_t n = keyname_build(name, prefixes[p], pl, key, len, suffixes[s], sl);
      assert_int_equal(n, keyname_len(pl, key, len, sl));
      assert_true(n == pl + len + sl || n == pl + len + KEYNAME_TAG_LEN + sl);
      assert_int_equal(name[n], '\0');
      assert_memory_equal(name, prefixes[p], pl);
      assert_memory_equal(name + n - sl, suffixes[s], sl);
      int slot = keyslot(name, n);
      if (slot != want)
        off++;
      /* A derived key named again (a fence counter of a permit's slot)
       * keeps the family's slot. */
      if (p == 0 && s != 0 && in_slot) {
        size_t m =
            keyname_build(inner, FENCE_KEY_PREFIX, sizeof FENCE_KEY_PREFIX - 1, name, n, "", 0);
        assert_int_equal(m, sizeof FENCE_KEY_PREFIX - 1 + n); /* it has a tag already */
        assert_int_equal(keyslot(inner, m), slot);
      }
      if (s != 0 && in_slot) {
        if (family < 0)
          family = slot;
        assert_int_equal(slot, family);
      }
    }
  }
  return off;
}

/* in_slot: every name hashes like the key; otherwise at least one does not
 * (a coincidence of CRC16 would fail here: none occurs in these keys). */
static void expect(const char *key, size_t len, int in_slot) {
  assert_int_equal(keyname_in_slot(key, len), in_slot);
  unsigned off = check_key(key, len);
  if (in_slot)
    assert_int_equal(off, 0);
  else
    assert_true(off > 0);
}

static void expect_str(const char *key, int in_slot) { expect(key, strlen(key), in_slot); }

static void test_known_keys(void **state) {
  (void)state;
  /* plain: the tag added is the key itself */
  expect_str("a", 1);
  expect_str("orders:42", 1);
  expect_str("lock with spaces", 1);
  /* with a tag: the key's own */
  expect_str("{user1000}:cart", 1);
  expect_str("a{b}c", 1);
  expect_str("{a}", 1);
  expect_str("x{y}z{w}", 1);
  expect_str("}{a}", 1);    /* a '}' before the first '{' */
  expect_str("{{a}}", 1);   /* the tag "{a" */
  expect_str("a{}b{c}", 0); /* the first '{' ... next '}' is empty: no tag */
  /* a '{' and no '}': no tag, and the added '}' closes the added '{' */
  expect_str("a{b", 1);
  expect_str("{", 1);
  expect_str("{{", 1);
  expect_str("x{y{z", 1);
  /* empty tags, and '}' without a tag: cannot share the slot */
  expect_str("{}", 0);
  expect_str("a{}b", 0);
  expect_str("x{}y}", 0);
  expect_str("a}b", 0);
  expect_str("}", 0);
  expect_str("}{", 0);
  /* binary bytes */
  const char nul_tag[] = {'\0', '{', '\0', '}'};
  expect(nul_tag, sizeof nul_tag, 1);
  const char nuls[] = {'\0', '\0', '\xff'};
  expect(nuls, sizeof nuls, 1);
  const char binary_close[] = {'\x01', '}', '\x80'};
  expect(binary_close, sizeof binary_close, 0);
}

/* Every string of up to 5 bytes over '{', '}', 'a' and NUL: in_slot says
 * exactly whether the names hash like the key. */
static void test_all_short_keys(void **state) {
  (void)state;
  static const char alphabet[] = {'{', '}', 'a', '\0'};
  char key[5];
  unsigned placed = 0, refused = 0;
  for (size_t len = 1; len <= sizeof key; len++) {
    size_t total = 1;
    for (size_t i = 0; i < len; i++)
      total *= sizeof alphabet;
    for (size_t code = 0; code < total; code++) {
      size_t c = code;
      for (size_t i = 0; i < len; i++, c /= sizeof alphabet)
        key[i] = alphabet[c % sizeof alphabet];
      int in_slot = keyname_in_slot(key, len);
      expect(key, len, in_slot);
      in_slot ? placed++ : refused++;
    }
  }
  assert_true(placed > 0 && refused > 0);
}

/* Random binary keys, braces frequent, up to the largest prefix + resource. */
static void test_random_and_largest_keys(void **state) {
  (void)state;
  static char key[KEY_MAX];
  srand(26);
  for (int round = 0; round < 2000; round++) {
    size_t len = 1 + (size_t)rand() % (round < 1900 ? 40 : KEY_MAX);
    for (size_t i = 0; i < len; i++) {
      int r = rand() % 8;
      key[i] = r == 0 ? '{' : r == 1 ? '}' : (char)(rand() & 0xff);
    }
    unsigned off = check_key(key, len);
    if (keyname_in_slot(key, len))
      assert_int_equal(off, 0);
    else
      assert_true(off > 0);
  }
  /* The largest key, plain and tagged: the names' bound holds. */
  memset(key, 'k', sizeof key);
  expect(key, sizeof key, 1);
  key[10] = '{';
  key[sizeof key - 1] = '}';
  expect(key, sizeof key, 1);
  assert_int_equal(keyname_len(0, key, sizeof key, 0), sizeof key);
  key[sizeof key - 1] = 'k';
  assert_int_equal(keyname_len(0, key, sizeof key, 0), sizeof key + KEYNAME_TAG_LEN);
}

#define RESERVED(key, mutex) keyname_reserved((key), strlen(key), (mutex))

/* Keys the library owns, or a primitive's, are refused as lock keys; the
 * rest (plain names of other Redlock clients included) are not. */
static void test_reserved_names(void **state) {
  (void)state;
  /* The library's own names all share the reserved prefix. */
  assert_memory_equal(FENCE_KEY_PREFIX, REDLOCK_RESERVED_PREFIX,
                      sizeof REDLOCK_RESERVED_PREFIX - 1);
  assert_memory_equal(NOTIFY_CHANNEL_PREFIX, REDLOCK_RESERVED_PREFIX,
                      sizeof REDLOCK_RESERVED_PREFIX - 1);
  for (int mutex = 0; mutex <= 1; mutex++) {
    assert_non_null(RESERVED("__redlock_fence__:{y}", mutex));
    assert_non_null(RESERVED("__redlock_release__:{y}", mutex));
    assert_non_null(RESERVED("__redlock_", mutex));
    assert_non_null(RESERVED("__redlock_anything", mutex));
    assert_null(RESERVED("__redlock", mutex));
    assert_null(RESERVED("app:__redlock_fence__:{y}", mutex));
    assert_null(RESERVED("__REDLOCK_fence__:{y}", mutex));
  }
  /* Every key a semaphore or read-write lock makes, from plain and tagged
   * names, is refused as a mutex (and only as a mutex). */
  static const char *const stems[] = {"y", "{y}", "app:{user7}:cart", "a}b", "{}x"};
  static char key[256];
  for (size_t i = 0; i < COUNT(stems); i++) {
    for (size_t j = 2; j < COUNT(suffixes); j++) {
      if (strstr(suffixes[j], "4294967295") != NULL)
        continue; /* not a slot a semaphore can have */
      if (strcmp(suffixes[j], PRIM_RW_TAG) == 0)
        continue; /* the read-write lock's channel suffix, not a key */
      size_t len =
          keyname_build(key, "", 0, stems[i], strlen(stems[i]), suffixes[j], strlen(suffixes[j]));
      assert_non_null(keyname_reserved(key, len, 1));
      assert_null(keyname_reserved(key, len, 0));
    }
    char slot[64];
    snprintf(slot, sizeof slot, PRIM_SEM_TAG PRIM_SEM_SLOT_SEP "%d", REDLOCK_MAX_SEM_LIMIT - 1);
    size_t len = keyname_build(key, "", 0, stems[i], strlen(stems[i]), slot, strlen(slot));
    assert_non_null(keyname_reserved(key, len, 1));
  }
  /* Not a primitive's key: no hash tag, a slot out of range or not written
   * as the library writes it, another suffix. */
  assert_null(RESERVED("y:sem:0", 1));
  assert_null(RESERVED("y:rw:write", 1));
  assert_null(RESERVED("{}:sem:0", 1));
  assert_null(RESERVED("{y}:sem:01", 1));
  assert_null(RESERVED("{y}:sem:1024", 1));
  assert_null(RESERVED("{y}:sem:99999", 1));
  assert_null(RESERVED("{y}:sem:", 1));
  assert_null(RESERVED("{y}:sem", 1));
  assert_null(RESERVED("{y}:rw", 1));
  assert_null(RESERVED("{y}:rw:writer", 1));
  assert_null(RESERVED("{y}:sem:limits", 1));
  assert_null(RESERVED("{y}", 1));
  assert_null(RESERVED("y", 1));
  assert_null(RESERVED("orders:42", 1));
  assert_non_null(RESERVED("{y}:sem:0", 1));
  assert_non_null(RESERVED("{y}:sem:1023", 1));
  assert_non_null(RESERVED("pre{y}post:rw:intent", 1));
}

UNIT_MAIN(cmocka_unit_test(test_known_keys), cmocka_unit_test(test_all_short_keys),
          cmocka_unit_test(test_random_and_largest_keys), cmocka_unit_test(test_reserved_names))
