/* test_idmap.c: unit tests for src/util/idmap.c, the id -> pointer map that
 * registers cancelable calls:
 *  - empty map: get/remove say absent; id 0 and a NULL value are refused;
 *  - put/get/remove of single ids; putting a present id replaces its value;
 *  - many ids force growth, all stay findable, absent ones are not found;
 *  - a long random put/remove run agrees with a reference model, and churn
 *    with few live entries does not grow the table without bound (no
 *    tombstones). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "util/idmap.h"

#define N_IDS 20000
static char objs[N_IDS]; /* distinct values */

static void test_empty_and_refused(void **state) {
  (void)state;
  idmap_t m;
  idmap_init(&m);
  assert_null(idmap_get(&m, 1));
  assert_null(idmap_remove(&m, 1));
  assert_int_equal(idmap_put(&m, 0, &objs[0]), ST_EINVAL);
  assert_int_equal(idmap_put(&m, 1, NULL), ST_EINVAL);
  assert_int_equal(m.used, 0);
  idmap_free(&m);
  idmap_free(&m);
}

static void test_put_get_remove(void **state) {
  (void)state;
  idmap_t m;
  idmap_init(&m);
  assert_int_equal(idmap_put(&m, 7, &objs[7]), ST_OK);
  assert_ptr_equal(idmap_get(&m, 7), &objs[7]);
  assert_int_equal(idmap_put(&m, 7, &objs[8]), ST_OK); /* replaces */
  assert_int_equal(m.used, 1);
  assert_ptr_equal(idmap_get(&m, 7), &objs[8]);
  assert_null(idmap_get(&m, 8));
  assert_ptr_equal(idmap_remove(&m, 7), &objs[8]);
  assert_null(idmap_remove(&m, 7));
  assert_null(idmap_get(&m, 7));
  assert_int_equal(m.used, 0);
  idmap_free(&m);
}

static void test_growth(void **state) {
  (void)state;
  idmap_t m;
  idmap_init(&m);
  for (uint64_t id = 1; id <= N_IDS; id++)
    assert_int_equal(idmap_put(&m, id, &objs[id - 1]), ST_OK);
  assert_int_equal(m.used, N_IDS);
  for (uint64_t id = 1; id <= N_IDS; id++)
    assert_ptr_equal(idmap_get(&m, id), &objs[id - 1]);
  assert_null(idmap_get(&m, N_IDS + 1));
  for (uint64_t id = 1; id <= N_IDS; id += 2)
    assert_ptr_equal(idmap_remove(&m, id), &objs[id - 1]);
  for (uint64_t id = 1; id <= N_IDS; id++)
    assert_true((idmap_get(&m, id) != NULL) == (id % 2 == 0));
  idmap_free(&m);
}

/* Ids as calls get them: counted up, a window of them live at a time. */
static void test_churn_model(void **state) {
  (void)state;
  idmap_t m;
  idmap_init(&m);
  static void *model[N_IDS + 1];
  memset(model, 0, sizeof model);
  uint64_t x = 88172645463325252u;
  size_t max_cap = 0, max_used = 0;
  for (uint64_t id = 1; id <= N_IDS; id++) {
    assert_int_equal(idmap_put(&m, id, &objs[id % N_IDS]), ST_OK);
    model[id] = &objs[id % N_IDS];
    /* remove a random live id of the last 64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    uint64_t victim = id > 64 ? id - (x % 64) : 1 + x % id;
    void *was = idmap_remove(&m, victim);
    assert_ptr_equal(was, model[victim]);
    model[victim] = NULL;
    if (m.cap > max_cap)
      max_cap = m.cap;
    if (m.used > max_used)
      max_used = m.used;
  }
  for (uint64_t id = 1; id <= N_IDS; id++)
    assert_ptr_equal(idmap_get(&m, id), model[id]);
  /* bounded by the live entries, not by the churn */
  assert_true(max_cap <= 4 * (max_used + 16));
  assert_true(max_used < N_IDS / 2);
  idmap_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty_and_refused),
      cmocka_unit_test(test_put_get_remove),
      cmocka_unit_test(test_growth),
      cmocka_unit_test(test_churn_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
