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

/* The definition, bit by bit: the oracle for the tables keyslot.c uses. */
static int reference_slot(const unsigned char *buf, size_t len) {
  uint16_t crc = 0;
  for (size_t i = 0; i < len; i++) {
    crc ^= (uint16_t)(buf[i] << 8);
    for (int bit = 0; bit < 8; bit++)
      crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
  }
  return crc & 16383;
}

/* Every key of one and two bytes (too short for a hash tag; each table
 * entry, all 16 bits of it, is reached), and longer keys of pseudo-random bytes without braces. */
static void test_table_matches_definition(void **state) {
  (void)state;
  unsigned char key[64];
  for (unsigned a = 0; a < 256; a++) {
    key[0] = (unsigned char)a;
    assert_int_equal(keyslot((const char *)key, 1), reference_slot(key, 1));
    for (unsigned b = 0; b < 256; b++) {
      key[1] = (unsigned char)b;
      if (keyslot((const char *)key, 2) != reference_slot(key, 2))
        fail_msg("key %02x %02x: %d, want %d", a, b, keyslot((const char *)key, 2),
                 reference_slot(key, 2));
    }
  }
  /* Four bytes, three of them zero: the byte at position p indexes table
   * 3 - p of the four-byte step alone, so every entry of every table is
   * checked (a lone '{' is no hash tag). */
  for (size_t p = 0; p < 4; p++)
    for (unsigned v = 0; v < 256; v++) {
      memset(key, 0, 4);
      key[p] = (unsigned char)v;
      if (keyslot((const char *)key, 4) != reference_slot(key, 4))
        fail_msg("byte %02x at %zu of 4: %d, want %d", v, p, keyslot((const char *)key, 4),
                 reference_slot(key, 4));
    }
  uint32_t x = 2463534242u; /* xorshift32 */
  for (int n = 0; n < 2000; n++) {
    size_t len = 3 + (size_t)n % (sizeof key - 3);
    for (size_t i = 0; i < len; i++) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      key[i] = (unsigned char)(x % 255 == '{' ? 'a' : x % 255);
    }
    assert_int_equal(keyslot((const char *)key, len), reference_slot(key, len));
  }
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

UNIT_MAIN(cmocka_unit_test(test_known_slots), cmocka_unit_test(test_table_matches_definition),
          cmocka_unit_test(test_hash_tags))
