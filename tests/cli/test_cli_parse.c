/* test_cli_parse.c: unit tests (cmocka) of the `redlock` tool's duration
 * parser (tools/cli_common.c, parse_duration / parse_ms): units, fractions,
 * flock(1)'s seconds for --wait, bounds, and what is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli_common.h"

static uint64_t ms_of(const char *s, uint64_t bare_unit) {
  uint64_t v = 12345;
  assert_int_equal(parse_duration(s, bare_unit, 0, UINT64_MAX, &v), 0);
  return v;
}

static void refused(const char *s, uint64_t bare_unit) {
  uint64_t v = 12345;
  assert_int_equal(parse_duration(s, bare_unit, 0, UINT64_MAX, &v), -1);
  assert_int_equal(v, 12345); /* untouched */
}

static void test_units(void **state) {
  (void)state;
  assert_int_equal(ms_of("250ms", 1), 250);
  assert_int_equal(ms_of("1.5s", 1), 1500);
  assert_int_equal(ms_of("2m", 1), 120000);
  assert_int_equal(ms_of("1h", 1), 3600000);
  assert_int_equal(ms_of("0.1s", 1), 100);
  assert_int_equal(ms_of(".5s", 1), 500);
  assert_int_equal(ms_of("0.25m", 1), 15000);
  assert_int_equal(ms_of("1.0005s", 1), 1000); /* below a millisecond: dropped */
  assert_int_equal(ms_of("2.5ms", 1), 2);
}

static void test_bare_numbers(void **state) {
  (void)state;
  /* Every option but --wait: milliseconds, as documented before. */
  assert_int_equal(ms_of("1500", 1), 1500);
  assert_int_equal(ms_of("0", 1), 0);
  /* --wait: seconds, as flock -w, fractions allowed. */
  assert_int_equal(ms_of("10", 1000), 10000);
  assert_int_equal(ms_of("1.5", 1000), 1500);
  assert_int_equal(ms_of("0.001", 1000), 1);
  assert_int_equal(ms_of("250ms", 1000), 250); /* a unit wins */
}

static void test_refused(void **state) {
  (void)state;
  const char *bad[] = {"",   "-1",  "+1", "5x",  "1.",  ".",    "1..5", "1.5.s",       "s",
                       "ms", "1 s", " 1", "1s ", "1e3", "0x10", "1,5",  "99999999999", "1.5sec"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    refused(bad[i], 1);
  refused(NULL, 1);
}

static void test_bounds(void **state) {
  (void)state;
  uint64_t v = 7;
  assert_int_equal(parse_duration("2m", 1, 1, 60000, &v), -1); /* above max */
  assert_int_equal(parse_duration("0", 1, 1, 60000, &v), -1);  /* below min */
  assert_int_equal(v, 7);
  assert_int_equal(parse_duration("60s", 1, 1, 60000, &v), 0);
  assert_int_equal(v, 60000);
  /* parse_ms: bare milliseconds. */
  assert_int_equal(parse_ms("1.5s", 0, UINT32_MAX, &v), 0);
  assert_int_equal(v, 1500);
  assert_int_equal(parse_ms("700", 0, UINT32_MAX, &v), 0);
  assert_int_equal(v, 700);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_units),
      cmocka_unit_test(test_bare_numbers),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_bounds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
