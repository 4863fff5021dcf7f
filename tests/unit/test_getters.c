/* test_getters.c: the run-time view of the header that bindings read instead
 * of copying it (one source of truth):
 *  - redlock_err_count / redlock_err_code walk REDLOCK_ERRNO_MAP in order,
 *    0 (REDLOCK_OK) out of range, and every code has its own name/message;
 *  - redlock_constant knows every integer constant of redlock.h under its
 *    macro name, with the compiled value, and refuses unknown names / NULL
 *    without touching *value; redlock_constant_string the string ones;
 *  - redlock_options_get_* give the defaults on a fresh object (the values
 *    of src/util/options.h, which the setters' defaults come from), follow the
 *    setters, skip NULL out-pointers and refuse a NULL object. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "redlock.h"
#include "util/options.h"

static const int map_codes[] = {
#define XX(name, value, msg) REDLOCK_##name,
    REDLOCK_ERRNO_MAP(XX)
#undef XX
};
#define N_MAP ((int)(sizeof map_codes / sizeof map_codes[0]))

static void test_err_table(void **state) {
  (void)state;
  assert_int_equal(redlock_err_count(), N_MAP);
  for (int i = 0; i < N_MAP; i++) {
    int code = redlock_err_code(i);
    assert_int_equal(code, map_codes[i]);
    assert_true(code < 0);
    assert_string_not_equal(redlock_err_name(code), redlock_err_name(12345));
    assert_string_not_equal(redlock_strerror(code), redlock_strerror(12345));
    for (int j = 0; j < i; j++)
      assert_int_not_equal(code, redlock_err_code(j));
  }
  const int outside[] = {-1, N_MAP, N_MAP + 1, INT_MAX, INT_MIN};
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
    assert_int_equal(redlock_err_code(outside[i]), REDLOCK_OK);
}

static void expect_const(const char *name, int64_t want) {
  int64_t v = INT64_MIN;
  assert_int_equal(redlock_constant(name, &v), 0);
  assert_int_equal(v, want);
}

static void test_int_constants(void **state) {
  (void)state;
  expect_const("REDLOCK_VERSION_MAJOR", REDLOCK_VERSION_MAJOR);
  expect_const("REDLOCK_VERSION_MINOR", REDLOCK_VERSION_MINOR);
  expect_const("REDLOCK_VERSION_PATCH", REDLOCK_VERSION_PATCH);
  expect_const("REDLOCK_MAX_NODES", REDLOCK_MAX_NODES);
  expect_const("REDLOCK_MAX_RESOURCE_LEN", REDLOCK_MAX_RESOURCE_LEN);
  expect_const("REDLOCK_MAX_PREFIX_LEN", REDLOCK_MAX_PREFIX_LEN);
  expect_const("REDLOCK_MAX_MANY", REDLOCK_MAX_MANY);
  expect_const("REDLOCK_MAX_SEM_LIMIT", REDLOCK_MAX_SEM_LIMIT);
  expect_const("REDLOCK_MAX_OWNER", REDLOCK_MAX_OWNER);
  expect_const("REDLOCK_INSPECT_LOCK", REDLOCK_INSPECT_LOCK);
  expect_const("REDLOCK_INSPECT_SEMAPHORE", REDLOCK_INSPECT_SEMAPHORE);
  expect_const("REDLOCK_INSPECT_RWLOCK", REDLOCK_INSPECT_RWLOCK);
  expect_const("REDLOCK_INSPECT_ELECTION", REDLOCK_INSPECT_ELECTION);
  expect_const("REDLOCK_OK", REDLOCK_OK);
#define XX(name, value, msg) expect_const("REDLOCK_" #name, value);
  REDLOCK_ERRNO_MAP(XX)
#undef XX
  /* Every table code is reachable by the name redlock_err_name gives it:
   * what a binding does to map names to codes. */
  for (int i = 0; i < redlock_err_count(); i++)
    expect_const(redlock_err_name(redlock_err_code(i)), redlock_err_code(i));
  expect_const("REDLOCK_LOG_DEBUG", REDLOCK_LOG_DEBUG);
  expect_const("REDLOCK_LOG_INFO", REDLOCK_LOG_INFO);
  expect_const("REDLOCK_LOG_WARN", REDLOCK_LOG_WARN);
  expect_const("REDLOCK_LOG_ERROR", REDLOCK_LOG_ERROR);
  expect_const("REDLOCK_LOST_EXPIRED", REDLOCK_LOST_EXPIRED);
  expect_const("REDLOCK_LOST_MAX_HOLD", REDLOCK_LOST_MAX_HOLD);
  expect_const("REDLOCK_STATS_PROMETHEUS", REDLOCK_STATS_PROMETHEUS);
  expect_const("REDLOCK_STATS_JSON", REDLOCK_STATS_JSON);
  expect_const("REDLOCK_CANCEL_LATE", REDLOCK_CANCEL_LATE);
  expect_const("REDLOCK_EVENT_ACQUIRE", REDLOCK_EVENT_ACQUIRE);
  expect_const("REDLOCK_EVENT_WAIT", REDLOCK_EVENT_WAIT);
  expect_const("REDLOCK_EVENT_EXTEND", REDLOCK_EVENT_EXTEND);
  expect_const("REDLOCK_EVENT_RENEW", REDLOCK_EVENT_RENEW);
  expect_const("REDLOCK_EVENT_RELEASE", REDLOCK_EVENT_RELEASE);
  expect_const("REDLOCK_EVENT_LOST", REDLOCK_EVENT_LOST);
  expect_const("REDLOCK_EVENT_NODE_UP", REDLOCK_EVENT_NODE_UP);
  expect_const("REDLOCK_EVENT_NODE_DOWN", REDLOCK_EVENT_NODE_DOWN);
  expect_const("REDLOCK_EVENT_QUARANTINE_END", REDLOCK_EVENT_QUARANTINE_END);
  expect_const("REDLOCK_EVENT_SEMAPHORE", REDLOCK_EVENT_SEMAPHORE);
  expect_const("REDLOCK_EVENT_RWLOCK_READ", REDLOCK_EVENT_RWLOCK_READ);
  expect_const("REDLOCK_EVENT_RWLOCK_WRITE", REDLOCK_EVENT_RWLOCK_WRITE);
  expect_const("REDLOCK_EVENT_ELECTED", REDLOCK_EVENT_ELECTED);
}

static void test_int_constants_refused(void **state) {
  (void)state;
  int64_t v = 42;
  /* One spelling only (the macro's), exact case; a string constant is not
   * an integer one; *value untouched on refusal. */
  const char *bad[] = {"",
                       "MAX_NODES",
                       "redlock_max_nodes",
                       "REDLOCK_MAX_NODES ",
                       "REDLOCK_MAX_NODE",
                       "REDLOCK_FENCE_KEY_PREFIX",
                       "REDLOCK_UNKNOWN",
                       "REDLOCK_ERRNO_MAP"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(redlock_constant(bad[i], &v), REDLOCK_EINVAL);
    assert_int_equal(v, 42);
  }
  assert_int_equal(redlock_constant(NULL, &v), REDLOCK_EINVAL);
  assert_int_equal(redlock_constant("REDLOCK_MAX_NODES", NULL), REDLOCK_EINVAL);
  assert_int_equal(v, 42);
}

static void test_string_constants(void **state) {
  (void)state;
  assert_string_equal(redlock_constant_string("REDLOCK_RELEASE_CHANNEL_PREFIX"),
                      REDLOCK_RELEASE_CHANNEL_PREFIX);
  assert_string_equal(redlock_constant_string("REDLOCK_FENCE_KEY_PREFIX"),
                      REDLOCK_FENCE_KEY_PREFIX);
  assert_string_equal(redlock_constant_string("REDLOCK_VERSION_STRING"), redlock_version());
  /* Static: the same pointer every time. */
  assert_ptr_equal(redlock_constant_string("REDLOCK_FENCE_KEY_PREFIX"),
                   redlock_constant_string("REDLOCK_FENCE_KEY_PREFIX"));
  assert_null(redlock_constant_string(NULL));
  assert_null(redlock_constant_string(""));
  assert_null(redlock_constant_string("FENCE_KEY_PREFIX"));
  assert_null(redlock_constant_string("REDLOCK_MAX_NODES"));
}

/* What every options getter reads (each asserted to succeed), in this
 * order: retry count, delay, jitter; connect and request timeouts; max TTL;
 * drift factor; quarantine, fencing, reentrant; key prefix. */
typedef struct {
  int count;
  uint32_t delay, jitter, conn, req, max_ttl;
  double drift;
  int q, f, r;
  const char *prefix;
} getters_t;

static getters_t read_getters(const redlock_options_t *o) {
  getters_t g = {.count = 0, .drift = -1, .q = -1, .f = -1, .r = -1};
  assert_int_equal(redlock_options_get_retry(o, &g.count, &g.delay, &g.jitter), 0);
  assert_int_equal(redlock_options_get_drift_factor(o, &g.drift), 0);
  assert_int_equal(redlock_options_get_timeouts(o, &g.conn, &g.req), 0);
  assert_int_equal(redlock_options_get_max_ttl(o, &g.max_ttl), 0);
  assert_int_equal(redlock_options_get_quarantine(o, &g.q), 0);
  assert_int_equal(redlock_options_get_fencing(o, &g.f), 0);
  assert_int_equal(redlock_options_get_reentrant(o, &g.r), 0);
  assert_int_equal(redlock_options_get_key_prefix(o, &g.prefix), 0);
  assert_non_null(g.prefix);
  return g;
}

static void assert_getters(const redlock_options_t *o, const getters_t *want) {
  getters_t g = read_getters(o);
  assert_int_equal(g.count, want->count);
  assert_int_equal(g.delay, want->delay);
  assert_int_equal(g.jitter, want->jitter);
  assert_true(g.drift == want->drift);
  assert_int_equal(g.conn, want->conn);
  assert_int_equal(g.req, want->req);
  assert_int_equal(g.max_ttl, want->max_ttl);
  assert_int_equal(g.q, want->q);
  assert_int_equal(g.f, want->f);
  assert_int_equal(g.r, want->r);
  assert_string_equal(g.prefix, want->prefix);
}

static void test_option_defaults(void **state) {
  (void)state;
  redlock_options_t *o = redlock_options_new();
  assert_non_null(o);
  const getters_t defaults = {OPTIONS_DEFAULT_RETRY_COUNT,
                              OPTIONS_DEFAULT_RETRY_DELAY_MS,
                              OPTIONS_DEFAULT_RETRY_JITTER_MS,
                              OPTIONS_DEFAULT_CONNECT_MS,
                              OPTIONS_DEFAULT_REQUEST_MS,
                              OPTIONS_DEFAULT_MAX_TTL_MS,
                              OPTIONS_DEFAULT_DRIFT_FACTOR,
                              1,
                              0,
                              0,
                              ""};
  assert_getters(o, &defaults);
  /* The documented defaults (redlock.h, docs/api.md): the header's text and
   * options.h must say the same thing. */
  const getters_t documented = {3, 200, 200, 1000, 100, 60000, 0.01, 1, 0, 0, ""};
  assert_getters(o, &documented);
  redlock_options_free(o);
}

static void test_option_getters_follow_setters(void **state) {
  (void)state;
  redlock_options_t *o = redlock_options_new();
  assert_non_null(o);
  assert_int_equal(redlock_options_set_retry(o, -1, 7, 9), 0);
  assert_int_equal(redlock_options_set_drift_factor(o, 0.25), 0);
  assert_int_equal(redlock_options_set_timeouts(o, 11, 13), 0);
  assert_int_equal(redlock_options_set_max_ttl(o, 17), 0);
  assert_int_equal(redlock_options_set_quarantine(o, 0), 0);
  assert_int_equal(redlock_options_set_fencing(o, 5), 0); /* any non-zero: on */
  assert_int_equal(redlock_options_set_reentrant(o, -3), 0);
  assert_int_equal(redlock_options_set_key_prefix(o, "app:"), 0);
  /* A refused setter changes nothing the getters see. */
  assert_int_equal(redlock_options_set_timeouts(o, 0, 13), REDLOCK_EINVAL);
  const getters_t set = {-1, 7, 9, 11, 13, 17, 0.25, 0, 1, 1, "app:"};
  assert_getters(o, &set);
  uint32_t delay, req;
  /* Partial reads: a NULL out-pointer is skipped, the others still filled. */
  delay = 0;
  assert_int_equal(redlock_options_get_retry(o, NULL, &delay, NULL), 0);
  assert_int_equal(delay, 7);
  req = 0;
  assert_int_equal(redlock_options_get_timeouts(o, NULL, &req), 0);
  assert_int_equal(req, 13);
  assert_int_equal(redlock_options_get_retry(o, NULL, NULL, NULL), 0);
  assert_int_equal(redlock_options_get_drift_factor(o, NULL), 0);
  assert_int_equal(redlock_options_get_max_ttl(o, NULL), 0);
  assert_int_equal(redlock_options_get_quarantine(o, NULL), 0);
  assert_int_equal(redlock_options_get_key_prefix(o, NULL), 0);
  redlock_options_free(o);
}

static void test_option_getters_null(void **state) {
  (void)state;
  int i = 99;
  uint32_t u = 99;
  double d = 99;
  const char *s = "untouched";
  assert_int_equal(redlock_options_get_retry(NULL, &i, &u, &u), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_drift_factor(NULL, &d), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_timeouts(NULL, &u, &u), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_max_ttl(NULL, &u), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_quarantine(NULL, &i), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_fencing(NULL, &i), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_reentrant(NULL, &i), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_key_prefix(NULL, &s), REDLOCK_EINVAL);
  assert_int_equal(i, 99);
  assert_int_equal(u, 99);
  assert_true(d == 99);
  assert_string_equal(s, "untouched");
}

/* Event kind names: operations are named by their stats label (written
 * once, in STATS_OP_MAP), the others by stats.c's own table. */
static void test_event_kind_names(void **state) {
  (void)state;
  static const struct {
    int kind;
    const char *name;
  } want[] = {
      {REDLOCK_EVENT_ACQUIRE, "acquire"},
      {REDLOCK_EVENT_WAIT, "wait"},
      {REDLOCK_EVENT_EXTEND, "extend"},
      {REDLOCK_EVENT_RENEW, "renew"},
      {REDLOCK_EVENT_RELEASE, "release"},
      {REDLOCK_EVENT_LOST, "lost"},
      {REDLOCK_EVENT_NODE_UP, "node_up"},
      {REDLOCK_EVENT_NODE_DOWN, "node_down"},
      {REDLOCK_EVENT_QUARANTINE_END, "quarantine_end"},
      {REDLOCK_EVENT_SEMAPHORE, "semaphore"},
      {REDLOCK_EVENT_RWLOCK_READ, "rwlock_read"},
      {REDLOCK_EVENT_RWLOCK_WRITE, "rwlock_write"},
      {REDLOCK_EVENT_ELECTED, "election"},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    assert_string_equal(redlock_event_kind_name(want[i].kind), want[i].name);
  const int unknown[] = {0, -1, REDLOCK_EVENT_ELECTED + 1, INT_MAX, INT_MIN};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    assert_string_equal(redlock_event_kind_name(unknown[i]), "unknown");
}

UNIT_MAIN(cmocka_unit_test(test_err_table), cmocka_unit_test(test_int_constants),
          cmocka_unit_test(test_int_constants_refused), cmocka_unit_test(test_string_constants),
          cmocka_unit_test(test_option_defaults),
          cmocka_unit_test(test_option_getters_follow_setters),
          cmocka_unit_test(test_option_getters_null), cmocka_unit_test(test_event_kind_names))
