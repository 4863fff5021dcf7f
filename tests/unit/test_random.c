/* test_random.c: unit tests for src/util/random.c.
 *  - random_lock_value: 32 lowercase hex characters then NUL, nothing written
 *    past that; 1000 calls give 1000 distinct values; every hex digit shows
 *    up in every position (no constant or truncated part);
 *  - random_bytes fills the whole buffer (large and odd sizes);
 *  - jitter_rng: deterministic per seed, consecutive outputs differ, different
 *    seeds give different sequences, seed 0 does not get stuck, outputs use
 *    both halves of the range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "util/random.h"

#define N_VALUES 1000

static void test_lock_value_format(void **state) {
  (void)state;
  assert_int_equal(RANDOM_VALUE_LEN, 32);
  assert_true(RANDOM_VALUE_BYTES * 8 >= 128);
  char buf[RANDOM_VALUE_LEN + 8];
  memset(buf, '#', sizeof buf);
  assert_int_equal(random_lock_value(buf), 0);
  assert_int_equal(strlen(buf), RANDOM_VALUE_LEN);
  for (size_t i = 0; i < RANDOM_VALUE_LEN; i++)
    if (!((buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f')))
      fail_msg("value \"%s\" has a non-lowercase-hex character at %zu", buf, i);
  for (size_t i = RANDOM_VALUE_LEN + 1; i < sizeof buf; i++)
    assert_int_equal(buf[i], '#');
}

static int cmp_values(const void *a, const void *b) { return memcmp(a, b, RANDOM_VALUE_LEN + 1); }

/* A lock value from the kernel per call, or from a client's pool. */
typedef status_t (*value_fn)(random_pool_t *pool, char *out);
static status_t direct_value(random_pool_t *pool, char *out) {
  (void)pool;
  return random_lock_value(out);
}

static void check_distinct(value_fn gen, random_pool_t *pool) {
  char(*values)[RANDOM_VALUE_LEN + 1] = malloc(N_VALUES * sizeof *values);
  assert_non_null(values);
  unsigned seen[RANDOM_VALUE_LEN] = {0}; /* bit set of hex digits per position */
  for (size_t i = 0; i < N_VALUES; i++) {
    assert_int_equal(gen(pool, values[i]), 0);
    assert_int_equal(values[i][RANDOM_VALUE_LEN], '\0');
    for (size_t k = 0; k < RANDOM_VALUE_LEN; k++) {
      char c = values[i][k];
      unsigned d = (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
      assert_true(d < 16);
      seen[k] |= 1u << d;
    }
  }
  qsort(values, N_VALUES, sizeof *values, cmp_values);
  for (size_t i = 1; i < N_VALUES; i++)
    if (memcmp(values[i - 1], values[i], RANDOM_VALUE_LEN) == 0)
      fail_msg("random_lock_value repeated \"%s\"", values[i]);
  /* With 1000 samples each of the 16 digits appears in each position
   * (missing one by chance: about 16 * (15/16)^1000, i.e. never). */
  for (size_t k = 0; k < RANDOM_VALUE_LEN; k++)
    if (seen[k] != 0xffffu)
      fail_msg("position %zu only ever had digits 0x%04x", k, seen[k]);
  free(values);
}

static void test_lock_value_distinct(void **state) {
  (void)state;
  check_distinct(direct_value, NULL);
}

/* The pool gives the same kind of values (N_VALUES spans many refills), and
 * wipes the bytes it hands out. */
static void test_pool_values(void **state) {
  (void)state;
  random_pool_t *pool = calloc(1, sizeof *pool);
  assert_non_null(pool);
  check_distinct(random_pool_lock_value, pool);
  char out[RANDOM_VALUE_LEN + 1];
  for (int i = 0; i < RANDOM_POOL_VALUES + 1; i++) {
    assert_int_equal(random_pool_lock_value(pool, out), 0);
    static const unsigned char zero[RANDOM_VALUE_BYTES];
    assert_memory_equal(pool->bytes + pool->left, zero, RANDOM_VALUE_BYTES);
    assert_true(pool->left % RANDOM_VALUE_BYTES == 0 && pool->left < sizeof pool->bytes);
  }
  free(pool);
}

static void test_random_bytes(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 7, 16, 255, 256, 4096, 100000};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    unsigned char *a = calloc(n + 1, 1), *b = calloc(n + 1, 1);
    assert_non_null(a);
    assert_non_null(b);
    a[n] = 0xA5;
    assert_int_equal(random_bytes(a, n), 0);
    assert_int_equal(random_bytes(b, n), 0);
    assert_int_equal(a[n], 0xA5); /* nothing written past n */
    if (n >= 16) {
      assert_memory_not_equal(a, b, n);
      /* The end of the buffer is filled too (all-zero 8 bytes: 2^-64). */
      unsigned char zero[8] = {0};
      assert_memory_not_equal(a + n - 8, zero, 8);
    }
    free(a);
    free(b);
  }
  assert_int_equal(random_bytes(NULL, 0), 0);
}

static void test_jitter_deterministic(void **state) {
  (void)state;
  jitter_rng_t a, b;
  jitter_rng_seed(&a, 42);
  jitter_rng_seed(&b, 42);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(jitter_rng_next(&a), jitter_rng_next(&b));
}

static void test_jitter_varies(void **state) {
  (void)state;
  jitter_rng_t r;
  jitter_rng_seed(&r, 12345);
  uint32_t prev = jitter_rng_next(&r);
  unsigned repeats = 0, high = 0, odd = 0;
  for (int i = 0; i < 10000; i++) {
    uint32_t v = jitter_rng_next(&r);
    repeats += v == prev;
    high += v >= 0x80000000u;
    odd += v & 1;
    prev = v;
  }
  assert_int_equal(repeats, 0);
  assert_in_range(high, 4500, 5500);
  assert_in_range(odd, 4500, 5500);
}

static void test_jitter_seeds_differ(void **state) {
  (void)state;
  static const uint64_t seeds[] = {1, 2, 3, 42, 0xdeadbeefULL, UINT64_MAX, 0};
  enum { NS = sizeof seeds / sizeof seeds[0], LEN = 8 };
  uint32_t seq[NS][LEN];
  for (size_t s = 0; s < NS; s++) {
    jitter_rng_t r;
    jitter_rng_seed(&r, seeds[s]);
    for (size_t i = 0; i < LEN; i++)
      seq[s][i] = jitter_rng_next(&r);
  }
  for (size_t s = 0; s < NS; s++)
    for (size_t t = 0; t < s; t++)
      assert_memory_not_equal(seq[s], seq[t], sizeof seq[s]);
}

static void test_jitter_seed_zero(void **state) {
  (void)state;
  /* xorshift has an all-zero fixed point; seed 0 must not land on it. */
  jitter_rng_t r;
  jitter_rng_seed(&r, 0);
  assert_true(r.state != 0);
  unsigned zeros = 0;
  for (int i = 0; i < 100; i++)
    zeros += jitter_rng_next(&r) == 0;
  assert_true(zeros < 2);
  assert_true(r.state != 0);
}

UNIT_MAIN(cmocka_unit_test(test_lock_value_format), cmocka_unit_test(test_lock_value_distinct),
          cmocka_unit_test(test_pool_values), cmocka_unit_test(test_random_bytes),
          cmocka_unit_test(test_jitter_deterministic), cmocka_unit_test(test_jitter_varies),
          cmocka_unit_test(test_jitter_seeds_differ), cmocka_unit_test(test_jitter_seed_zero))
