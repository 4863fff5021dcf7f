/* test_keyslot.c: keyslot() gives the slots Redis Cluster gives
 * (CLUSTER KEYSLOT), hash tags included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "proto/keyslot.h"

static int slot_of(const char *key) { return keyslot(key, strlen(key)); }

static void test_known_slots(void **state) {
  (void)state;
  assert_int_equal(slot_of("123456789"), 0x31C3 & 16383); /* the CRC16 check value */
  assert_int_equal(slot_of("foo"), 12182);
  assert_int_equal(slot_of("somekey"), 11058);
  assert_int_equal(slot_of("hello"), 866);
  assert_int_equal(slot_of(""), 0);
}

static void test_hash_tags(void **state) {
  (void)state;
  assert_int_equal(slot_of("{user1000}.following"), slot_of("user1000"));
  assert_int_equal(slot_of("a{foo}b{bar}"), slot_of("foo")); /* the first tag */
  assert_int_equal(slot_of("{}foo"), keyslot("{}foo", 5));   /* empty tag: the whole key */
  assert_int_not_equal(slot_of("{}foo"), slot_of(""));
  assert_int_equal(slot_of("foo{"), keyslot("foo{", 4)); /* no closing brace */
  assert_int_equal(slot_of("{a}"), slot_of("a"));
  const char binary[] = {'x', '{', 0, '}'};
  assert_int_equal(keyslot(binary, sizeof binary), keyslot("\0", 1));
}

UNIT_MAIN(cmocka_unit_test(test_known_slots), cmocka_unit_test(test_hash_tags))
