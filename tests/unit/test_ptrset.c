/* test_ptrset.c: unit tests for src/util/handle.c's live set (ptrset_t), the open-addressing
 * pointer set that registers live lock handles.
 *  - empty set: contains/remove say no, free is idempotent;
 *  - add/contains/remove of single pointers; NULL is never contained (adding
 *    it is ST_EINVAL);
 *  - duplicates are a no-op (counted once, one remove takes it out);
 *  - many entries force growth, all stay findable, absent ones are not found;
 *  - removal leaves no tombstone (the probe run shifts back): the slots in
 *    use are always the entries, lookups still find every other entry, and
 *    churn of many pointers never rehashes (no allocation in steady state);
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

#include "util/handle.h"

#define N_OBJS 20000
static char objs[N_OBJS]; /* distinct addresses to store */

static void test_empty(void **state) {
  (void)state;
  ptrset_t s;
  ptrset_init(&s);
  assert_int_equal(s.used, 0);
  assert_int_equal(ptrset_contains(&s, &objs[0]), 0);
  assert_int_equal(ptrset_contains(&s, NULL), 0);
  assert_int_equal(ptrset_add(&s, NULL), ST_EINVAL);
  assert_int_equal(s.used, 0);
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
  assert_int_equal(ptrset_add(&s, NULL), ST_EINVAL);
  assert_int_equal(s.used, 1);

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
    assert_true(s.used * 4 < s.cap * 3);
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

/* Slots holding a pointer. */
static size_t slots_used(const ptrset_t *s) {
  size_t n = 0;
  for (size_t i = 0; i < s->cap; i++)
    n += s->slots[i] != NULL;
  return n;
}

static void test_remove_shifts_back(void **state) {
  (void)state;
  ptrset_t s;
  ptrset_init(&s);
  for (int i = 0; i < 8; i++)
    assert_int_equal(ptrset_add(&s, &objs[100 + i]), 0);
  size_t cap = s.cap;
  assert_int_equal(slots_used(&s), 8);
  /* Remove empties a slot: nothing is left behind. */
  assert_int_equal(ptrset_remove(&s, &objs[103]), 1);
  assert_int_equal(s.used, 7);
  assert_int_equal(slots_used(&s), 7);
  for (int i = 0; i < 8; i++)
    assert_int_equal(ptrset_contains(&s, &objs[100 + i]), i != 3);
  assert_int_equal(ptrset_add(&s, &objs[103]), 0);
  assert_int_equal(s.used, 8);
  assert_int_equal(s.cap, cap);
  /* Churn of many different pointers, a few live at a time (handles made
   * and unlocked): the table is never rehashed, so never reallocated. */
  const void **slots = s.slots;
  for (int r = 0; r < 5000; r++) {
    const void *p = &objs[200 + r % 1000];
    assert_int_equal(ptrset_add(&s, p), 0);
    assert_int_equal(ptrset_remove(&s, p), 1);
    assert_int_equal(slots_used(&s), 8);
  }
  assert_ptr_equal(s.slots, slots);
  assert_int_equal(s.cap, cap);
  for (int i = 0; i < 8; i++)
    assert_int_equal(ptrset_contains(&s, &objs[100 + i]), 1);
  ptrset_free(&s);
}

static void test_remove_absent(void **state) {
  (void)state;
  ptrset_t s;
  ptrset_init(&s);
  for (int i = 0; i < 50; i++)
    assert_int_equal(ptrset_add(&s, &objs[2 * i]), 0);
  size_t used = s.used;
  for (int i = 0; i < 50; i++)
    assert_int_equal(ptrset_remove(&s, &objs[2 * i + 1]), 0); /* neighbours */
  assert_int_equal(ptrset_remove(&s, &objs[N_OBJS - 1]), 0);
  assert_int_equal(ptrset_remove(&s, NULL), 0);
  int local;
  assert_int_equal(ptrset_remove(&s, &local), 0); /* a foreign pointer */
  assert_int_equal(s.used, used);
  assert_int_equal(slots_used(&s), used);
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
    /* No slot is held by a removed pointer (checked now and then: it scans). */
    if (step % 256 == 0)
      assert_true(s.cap == 0 || slots_used(&s) == s.used);
  }
  for (unsigned i = 0; i < M; i++)
    assert_int_equal(ptrset_contains(&s, &objs[i * 7]), model[i]);
  ptrset_free(&s);
}

static void test_churn_bounded(void **state) {
  (void)state;
  /* A few live handles, many distinct ones coming and going (as lock handles
   * do): the table must not keep growing. */
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
          cmocka_unit_test(test_remove_shifts_back), cmocka_unit_test(test_remove_absent),
          cmocka_unit_test(test_random_against_model), cmocka_unit_test(test_churn_bounded))
