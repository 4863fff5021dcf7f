/* test_ptrset.c: unit tests for src/ptrset.c, the open-addressing pointer set
 * that registers live lock handles.
 *  - empty set: contains/remove say no, free is idempotent;
 *  - add/contains/remove of single pointers; NULL is never contained;
 *  - duplicates are a no-op (counted once, one remove takes it out);
 *  - many entries force growth, all stay findable, absent ones are not found;
 *  - a tombstone is reused (re-adding a removed pointer does not fill a new
 *    slot) and lookups probe past tombstones;
 *  - removing absent pointers (never added, already removed, neighbours of
 *    present ones) returns 0 and changes nothing;
 *  - a long random add/remove run agrees with a reference model, and heavy
 *    churn with few live entries does not grow the table without bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "ptrset.h"

#define N_OBJS 20000
static char objs[N_OBJS]; /* distinct addresses to store */

static void test_empty(void **state) {
  (void)state;
  ptrset_t s;
  ptrset_init(&s);
  assert_int_equal(s.used, 0);
  assert_int_equal(ptrset_contains(&s, &objs[0]), 0);
  assert_int_equal(ptrset_contains(&s, NULL), 0);
  assert_int_equal(ptrset_remove(&s, &objs[0]), 0);
  assert_int_equal(ptrset_remove(&s, NULL), 0);
  ptrset_free(&s);
  ptrset_free(&s); /* idempotent */
  assert_null(s.slots);
  assert_int_equal(s.cap, 0);
}

static void test_add_contains_remove(void **state) {
  (void)state;
  ptrset_t s;
  ptrset_init(&s);
  assert_int_equal(ptrset_add(&s, &objs[1]), 0);
  assert_int_equal(s.used, 1);
  assert_true(s.cap > 0);
  assert_int_equal(s.cap & (s.cap - 1), 0); /* power of two */
  assert_int_equal(ptrset_contains(&s, &objs[1]), 1);
  assert_int_equal(ptrset_contains(&s, &objs[2]), 0);
  assert_int_equal(ptrset_contains(&s, &objs[0]), 0);
  assert_int_equal(ptrset_contains(&s, NULL), 0);

  assert_int_equal(ptrset_add(&s, &objs[2]), 0);
  assert_int_equal(s.used, 2);
  assert_int_equal(ptrset_contains(&s, &objs[2]), 1);

  assert_int_equal(ptrset_remove(&s, &objs[1]), 1);
  assert_int_equal(s.used, 1);
  assert_int_equal(ptrset_contains(&s, &objs[1]), 0);
  assert_int_equal(ptrset_contains(&s, &objs[2]), 1);
  assert_int_equal(ptrset_remove(&s, &objs[2]), 1);
  assert_int_equal(s.used, 0);
  assert_int_equal(ptrset_contains(&s, &objs[2]), 0);
  ptrset_free(&s);
}

static void test_duplicates(void **state) {
  (void)state;
  ptrset_t s;
  ptrset_init(&s);
  for (int i = 0; i < 10; i++)
    assert_int_equal(ptrset_add(&s, &objs[5]), 0);
  assert_int_equal(s.used, 1);
  assert_int_equal(ptrset_remove(&s, &objs[5]), 1);
  assert_int_equal(ptrset_contains(&s, &objs[5]), 0);
  assert_int_equal(ptrset_remove(&s, &objs[5]), 0);
  assert_int_equal(s.used, 0);
  ptrset_free(&s);
}

static void test_many_grow(void **state) {
  (void)state;
  ptrset_t s;
  ptrset_init(&s);
  size_t prev_cap = 0, grows = 0;
  for (size_t i = 0; i < N_OBJS; i += 2) {
    assert_int_equal(ptrset_add(&s, &objs[i]), 0);
    if (s.cap != prev_cap) {
      grows++;
      prev_cap = s.cap;
    }
    /* Load factor stays below 3/4 so probes always end. */
    assert_true(s.filled * 4 < s.cap * 3);
  }
  assert_int_equal(s.used, N_OBJS / 2);
  assert_true(grows > 3);
  assert_int_equal(s.cap & (s.cap - 1), 0);
  for (size_t i = 0; i < N_OBJS; i++)
    assert_int_equal(ptrset_contains(&s, &objs[i]), i % 2 == 0);
  /* Remove half of them; the rest stay. */
  for (size_t i = 0; i < N_OBJS; i += 4)
    assert_int_equal(ptrset_remove(&s, &objs[i]), 1);
  assert_int_equal(s.used, N_OBJS / 4);
  for (size_t i = 0; i < N_OBJS; i++)
    assert_int_equal(ptrset_contains(&s, &objs[i]), i % 4 == 2);
  ptrset_free(&s);
}

static void test_tombstone_reuse(void **state) {
  (void)state;
  ptrset_t s;
  ptrset_init(&s);
  for (int i = 0; i < 8; i++)
    assert_int_equal(ptrset_add(&s, &objs[100 + i]), 0);
  size_t cap = s.cap, filled = s.filled;
  assert_int_equal(filled, 8);
  /* Remove leaves a tombstone: used drops, filled does not. */
  assert_int_equal(ptrset_remove(&s, &objs[103]), 1);
  assert_int_equal(s.used, 7);
  assert_int_equal(s.filled, filled);
  /* The others are still found past the tombstone. */
  for (int i = 0; i < 8; i++)
    assert_int_equal(ptrset_contains(&s, &objs[100 + i]), i != 3);
  /* Re-adding lands on the tombstone: no new slot is filled. */
  assert_int_equal(ptrset_add(&s, &objs[103]), 0);
  assert_int_equal(s.used, 8);
  assert_int_equal(s.filled, filled);
  assert_int_equal(s.cap, cap);
  assert_int_equal(ptrset_contains(&s, &objs[103]), 1);
  /* Add/remove of the same pointer a thousand times does not fill the table. */
  for (int r = 0; r < 1000; r++) {
    assert_int_equal(ptrset_remove(&s, &objs[103]), 1);
    assert_int_equal(ptrset_add(&s, &objs[103]), 0);
  }
  assert_int_equal(s.filled, filled);
  assert_int_equal(s.cap, cap);
  ptrset_free(&s);
}

static void test_remove_absent(void **state) {
  (void)state;
  ptrset_t s;
  ptrset_init(&s);
  for (int i = 0; i < 50; i++)
    assert_int_equal(ptrset_add(&s, &objs[2 * i]), 0);
  size_t used = s.used, filled = s.filled;
  for (int i = 0; i < 50; i++)
    assert_int_equal(ptrset_remove(&s, &objs[2 * i + 1]), 0); /* neighbours */
  assert_int_equal(ptrset_remove(&s, &objs[N_OBJS - 1]), 0);
  assert_int_equal(ptrset_remove(&s, NULL), 0);
  int local;
  assert_int_equal(ptrset_remove(&s, &local), 0); /* a foreign pointer */
  assert_int_equal(s.used, used);
  assert_int_equal(s.filled, filled);
  for (int i = 0; i < 50; i++)
    assert_int_equal(ptrset_contains(&s, &objs[2 * i]), 1);
  /* Removed twice: the second time is absent. */
  assert_int_equal(ptrset_remove(&s, &objs[0]), 1);
  assert_int_equal(ptrset_remove(&s, &objs[0]), 0);
  assert_int_equal(s.used, used - 1);
  ptrset_free(&s);
}

static void test_random_against_model(void **state) {
  (void)state;
  enum { M = 512, STEPS = 200000 };
  static unsigned char model[M];
  memset(model, 0, sizeof model);
  size_t live = 0;
  ptrset_t s;
  ptrset_init(&s);
  uint64_t x = 0x2545f4914f6cdd1dULL;
  for (int step = 0; step < STEPS; step++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    unsigned idx = (unsigned)(x % M);
    const void *p = &objs[idx * 7];
    switch ((x >> 20) % 3) {
    case 0:
      assert_int_equal(ptrset_add(&s, p), 0);
      live += !model[idx];
      model[idx] = 1;
      break;
    case 1:
      assert_int_equal(ptrset_remove(&s, p), model[idx]);
      live -= model[idx];
      model[idx] = 0;
      break;
    default:
      assert_int_equal(ptrset_contains(&s, p), model[idx]);
      break;
    }
    assert_int_equal(s.used, live);
    assert_true(s.cap == 0 || s.filled < s.cap); /* an empty slot always ends a probe */
  }
  for (unsigned i = 0; i < M; i++)
    assert_int_equal(ptrset_contains(&s, &objs[i * 7]), model[i]);
  ptrset_free(&s);
}

static void test_churn_bounded(void **state) {
  (void)state;
  /* A few live handles, many distinct ones coming and going (as lock handles
   * do): tombstones must be swept, the table must not keep growing. */
  ptrset_t s;
  ptrset_init(&s);
  for (size_t i = 0; i < N_OBJS; i++) {
    assert_int_equal(ptrset_add(&s, &objs[i]), 0);
    if (i >= 4)
      assert_int_equal(ptrset_remove(&s, &objs[i - 4]), 1);
    assert_true(s.used <= 5);
  }
  assert_true(s.cap <= 64);
  for (size_t i = N_OBJS - 4; i < N_OBJS; i++)
    assert_int_equal(ptrset_contains(&s, &objs[i]), 1);
  assert_int_equal(ptrset_contains(&s, &objs[N_OBJS - 5]), 0);
  ptrset_free(&s);
}

UNIT_MAIN(cmocka_unit_test(test_empty), cmocka_unit_test(test_add_contains_remove),
          cmocka_unit_test(test_duplicates), cmocka_unit_test(test_many_grow),
          cmocka_unit_test(test_tombstone_reuse), cmocka_unit_test(test_remove_absent),
          cmocka_unit_test(test_random_against_model), cmocka_unit_test(test_churn_bounded))
