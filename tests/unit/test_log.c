/* test_log.c: the log sink (util/log.h): messages only at enabled levels,
 * cut at 511 bytes; a rate-limited message once a period at its level, the
 * ones between at DEBUG (or dropped when DEBUG is off) and counted, and the
 * next line at its level saying how many it stands for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "redlock.h"
#include "unit_support.h"
#include "util/log.h"

/* The last line the sink passed on, and how many it passed. */
static unsigned calls;
static int last_level;
static char last_msg[600];

static void record(int level, const char *msg, void *arg) {
  (void)arg;
  calls++;
  last_level = level;
  snprintf(last_msg, sizeof last_msg, "%s", msg);
}

static void reset(void) {
  calls = 0;
  last_level = -1;
  last_msg[0] = '\0';
}

#define SEC 1000000000ull

static void test_write_levels(void **state) {
  (void)state;
  reset();
  log_sink_t off = {0};
  log_write(&off, REDLOCK_LOG_ERROR, "nobody hears %d", 1); /* no callback: nothing */
  log_sink_t log = {.cb = record, .arg = NULL, .level = REDLOCK_LOG_WARN};
  log_write(&log, REDLOCK_LOG_INFO, "below the level");
  assert_int_equal(calls, 0);
  log_write(&log, REDLOCK_LOG_WARN, "master %s: %d", "m1", 42);
  assert_int_equal(calls, 1);
  assert_int_equal(last_level, REDLOCK_LOG_WARN);
  assert_string_equal(last_msg, "master m1: 42");
  char big[700];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  log_write(&log, REDLOCK_LOG_ERROR, "%s", big);
  assert_int_equal(strlen(last_msg), 511);
}

static void test_limited_once_a_period(void **state) {
  (void)state;
  reset();
  log_sink_t log = {.cb = record, .arg = NULL, .level = REDLOCK_LOG_DEBUG};
  log_limit_t limit = {0};
  uint64_t t0 = 5 * SEC;
  assert_int_equal(log_limited(&log, &limit, t0, REDLOCK_LOG_WARN, "moved %d", 1), 1);
  assert_int_equal(last_level, REDLOCK_LOG_WARN);
  assert_string_equal(last_msg, "moved 1");
  /* Within the period: at DEBUG, counted. */
  assert_int_equal(log_limited(&log, &limit, t0 + SEC / 2, REDLOCK_LOG_WARN, "moved %d", 2), 0);
  assert_int_equal(last_level, REDLOCK_LOG_DEBUG);
  assert_string_equal(last_msg, "moved 2");
  assert_int_equal(log_limited(&log, &limit, t0 + SEC / 2, REDLOCK_LOG_WARN, "moved %d", 3), 0);
  assert_int_equal(limit.left_out, 2);
  assert_int_equal(calls, 3);
  /* A period on: at its level again, saying what it stands for. */
  assert_int_equal(log_limited(&log, &limit, t0 + 3 * SEC, REDLOCK_LOG_WARN, "moved %d", 4), 1);
  assert_int_equal(last_level, REDLOCK_LOG_WARN);
  assert_string_equal(last_msg, "moved 4 (2 more like this in the last 3 s)");
  assert_int_equal(limit.left_out, 0);
  assert_int_equal(limit.last_ns, t0 + 3 * SEC);
}

static void test_limited_debug_off(void **state) {
  (void)state;
  reset();
  log_limit_t limit = {0};
  log_sink_t off = {0};
  assert_int_equal(log_limited(&off, &limit, SEC, REDLOCK_LOG_WARN, "x"), 0);
  assert_int_equal(limit.last_ns, 0); /* logging off: nothing written, nothing counted */
  log_sink_t log = {.cb = record, .arg = NULL, .level = REDLOCK_LOG_INFO};
  assert_int_equal(log_limited(&log, &limit, SEC, REDLOCK_LOG_WARN, "x"), 1);
  /* DEBUG is off: the lines between are not written, still counted. */
  assert_int_equal(log_limited(&log, &limit, SEC + 1, REDLOCK_LOG_WARN, "x"), 0);
  assert_int_equal(log_limited(&log, &limit, SEC + 2, REDLOCK_LOG_WARN, "x"), 0);
  assert_int_equal(calls, 1);
  assert_int_equal(limit.left_out, 2);
  /* A level below the sink's is not written even when due. */
  log_limit_t quiet = {0};
  assert_int_equal(log_limited(&log, &quiet, SEC, REDLOCK_LOG_DEBUG, "y"), 0);
  assert_int_equal(calls, 1);
  assert_int_equal(log_limited(&log, &limit, 3 * SEC, REDLOCK_LOG_WARN, "x"), 1);
  assert_string_equal(last_msg, "x (2 more like this in the last 2 s)");
}

UNIT_MAIN(cmocka_unit_test(test_write_levels), cmocka_unit_test(test_limited_once_a_period),
          cmocka_unit_test(test_limited_debug_off))
