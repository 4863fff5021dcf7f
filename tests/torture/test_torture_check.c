/* test_torture_check.c: unit tests (cmocka) of the torture checker
 * (torture_check.h), on hand-made histories: a checker that never fails
 * proves nothing, so each rule must catch the history that breaks it, name
 * the rule, and let the clean histories pass.  No server, no files. */
#include <setjmp.h> /* cmocka.h needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "torture_cases.h"
#include "torture_check.h"
#include "torture_common.h"

/* A history of `text` (records, one a line) from worker 0 of one, which
 * exited 0; checked with primitive prim.  Returns the checker. */
static tc_history_t *check_text(int prim, const char *text) {
  tc_case_t c = {prim, "unit", text, 0};
  tc_history_t *h = tc_case_run(&c, 2000);
  assert_non_null(h);
  return h;
}

static void assert_caught(int prim, const char *text, const char *rule) {
  tc_history_t *h = check_text(prim, text);
  assert_true(tc_violations(h) > 0);
  if (strstr(tc_report(h), rule) == NULL)
    fail_msg("expected '%s' in the report:\n%s", rule, tc_report(h));
  tc_free(h);
}

static void assert_clean(int prim, const char *text) {
  tc_history_t *h = check_text(prim, text);
  if (tc_violations(h) != 0)
    fail_msg("expected no violation, got:\n%s", tc_report(h));
  assert_string_equal(tc_report(h), "");
  tc_free(h);
}

#define SUMMARY "S 0 100 100 0 4 2 10 10 10 0\n"

/* Every case of torture_cases.c (the ones `torture --selftest` runs). */
static void test_all_cases(void **state) {
  (void)state;
  for (size_t i = 0; i < tc_n_cases; i++) {
    tc_history_t *h = tc_case_run(&tc_cases[i], 2000);
    assert_non_null(h);
    if ((tc_violations(h) != 0) != tc_cases[i].must_fail)
      fail_msg("case '%s': %u violations\n%s", tc_cases[i].name, tc_violations(h), tc_report(h));
    tc_free(h);
  }
}

static void test_clean_history_passes(void **state) {
  (void)state;
  assert_clean(PRIM_LOCK, "C lock 0 0 0 1000 0 980\nC unlock 0 0 2000 2100 0 100\n"
                          "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n"
                          "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY);
}

static void test_overlapping_holds(void **state) {
  (void)state;
  assert_caught(PRIM_LOCK,
                "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 3500 0\n"
                "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
                "mutual exclusion broken");
}

static void test_validity_end_bounds_the_window(void **state) {
  (void)state;
  /* The first holder unlocks late (5000), but its validity ended at 2000:
   * its window is [1000, 2000] and the second hold does not overlap it. */
  assert_clean(PRIM_LOCK, "G 0 0 0 r0 10 0 1000 2000\nU 0 0 0 5000 0\n"
                          "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY);
}

static void test_non_increasing_fences(void **state) {
  (void)state;
  assert_caught(PRIM_LOCK,
                "G 0 0 0 r0 11 0 1000 900000\nU 0 0 0 2000 0\n"
                "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
                "is not above");
}

static void test_token_below_one_seen_before_the_call(void **state) {
  (void)state;
  /* The first grant's window is empty (validity 900 < grant 1000), but the
   * second call started after it was seen: its token must be larger. */
  assert_caught(PRIM_LOCK,
                "G 0 0 0 r0 11 0 1000 900\nU 0 0 0 1100 0\n"
                "G 0 1 0 r0 10 1500 1600 900000\nU 0 1 0 1700 0\n" SUMMARY,
                "not a larger one");
}

static void test_semaphore_over_its_limit(void **state) {
  (void)state;
  assert_caught(PRIM_SEMAPHORE,
                "G 0 0 0 s0 5 0 1000 900000\nU 0 0 0 2000 0\n"
                "G 0 1 0 s0 6 0 1500 900000\nU 0 1 0 2500 0\n"
                "G 0 2 0 s0 7 0 1800 900000\nU 0 2 0 3000 0\n" SUMMARY,
                "semaphore limit broken");
}

static void test_writer_overlapping_reader(void **state) {
  (void)state;
  assert_caught(PRIM_RWLOCK,
                "G 0 0 0 R0 5 0 1000 900000\nU 0 0 0 2000 0\n"
                "G 0 1 0 W0 6 0 1500 900000\nU 0 1 0 2500 0\n" SUMMARY,
                "read-write exclusion broken");
}

static void test_two_leaders(void **state) {
  (void)state;
  assert_caught(PRIM_ELECTION,
                "G 0 0 0 e0 5 0 1000 900000\nU 0 0 0 2000 0\n"
                "G 0 1 0 e0 6 0 1500 900000\nU 0 1 0 2500 0\n" SUMMARY,
                "election broken");
}

static void test_late_call(void **state) {
  (void)state;
  assert_caught(PRIM_LOCK,
                "C unlock 0 0 0 999000000000 0 100\n"
                "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n" SUMMARY,
                "beyond its documented bound");
}

static void test_no_progress(void **state) {
  (void)state;
  assert_caught(PRIM_LOCK, SUMMARY, "was never granted");
}

static void test_no_summary_and_bad_exit(void **state) {
  (void)state;
  assert_caught(PRIM_LOCK, "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n",
                "wrote no summary line");
  tc_config_t cfg = {.workers = 1,
                     .threads = 1,
                     .resources = 1,
                     .primitive = PRIM_LOCK,
                     .sem_limit = 2,
                     .slack_ms = 2000};
  tc_history_t *h = tc_new(&cfg);
  assert_non_null(h);
  tc_add_record(h, 0, "G 0 0 0 r0 10 0 1000 900000");
  tc_add_record(h, 0, SUMMARY);
  tc_worker_exit(h, 0, 1234, 3 << 8, 0); /* exited with status 3 */
  assert_int_equal(tc_check(h), 1);
  assert_non_null(strstr(tc_report(h), "worker 0 (pid 1234) exited with status 3"));
  tc_free(h);
}

static void test_unreadable_and_unknown_records(void **state) {
  (void)state;
  assert_caught(PRIM_LOCK, "G 0 0 0 r0 10 0 1000 900000\nX what\n" SUMMARY,
                "unreadable record: X what");
  assert_caught(PRIM_LOCK, "E 0 9 9 5000\nG 0 0 0 r0 10 0 1000 900000\n" SUMMARY,
                "extension of an unknown grant");
  assert_caught(PRIM_LOCK, "G 0 0 0 r0 10 0 1000 900000\nF 0 unexpected rc\n" SUMMARY,
                "worker 0 reported: unexpected rc");
}

static void test_stats(void **state) {
  (void)state;
  tc_history_t *h = check_text(PRIM_LOCK, "C lock 0 0 0 1000 0 980\nC lock 0 1 0 1000 -3 980\n"
                                          "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n" SUMMARY);
  const tc_stats_t *st = tc_stats(h);
  assert_int_equal(st->grants, 1);
  assert_int_equal(st->nonempty, 1);
  assert_int_equal(st->grants_per_res[GRP_LOCK][0], 1);
  assert_int_equal(st->rc_counts[1][0], 1); /* lock: OK */
  assert_int_equal(st->rc_counts[1][3], 1); /* lock: -3 */
  assert_true(st->workers[0].present);
  tc_free(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_cases),
      cmocka_unit_test(test_clean_history_passes),
      cmocka_unit_test(test_overlapping_holds),
      cmocka_unit_test(test_validity_end_bounds_the_window),
      cmocka_unit_test(test_non_increasing_fences),
      cmocka_unit_test(test_token_below_one_seen_before_the_call),
      cmocka_unit_test(test_semaphore_over_its_limit),
      cmocka_unit_test(test_writer_overlapping_reader),
      cmocka_unit_test(test_two_leaders),
      cmocka_unit_test(test_late_call),
      cmocka_unit_test(test_no_progress),
      cmocka_unit_test(test_no_summary_and_bad_exit),
      cmocka_unit_test(test_unreadable_and_unknown_records),
      cmocka_unit_test(test_stats),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
