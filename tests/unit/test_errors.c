/* test_errors.c: unit tests for src/util/errors.c and the error codes in
 * include/redlock.h.
 *  - the code values are the fixed ABI ones (-1 .. -11, in map order);
 *  - every code of REDLOCK_ERRNO_MAP has a non-empty redlock_strerror equal to
 *    the map's message, distinct from every other code's and from the
 *    unknown-code text, and redlock_err_name "REDLOCK_<NAME>";
 *  - REDLOCK_OK has its own name and message;
 *  - unknown codes (positive, just past the last, INT_MIN/INT_MAX) give
 *    non-NULL, non-empty strings that are not any known code's;
 *  - redlock_version() equals REDLOCK_VERSION_STRING and the MAJOR.MINOR.PATCH
 *    macros. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "redlock.h"

typedef struct {
  int code;
  const char *name; /* "REDLOCK_EINVAL" */
  const char *msg;
} code_t;

static const code_t codes[] = {
#define XX(name, value, msg) {REDLOCK_##name, "REDLOCK_" #name, msg},
    REDLOCK_ERRNO_MAP(XX)
#undef XX
};
#define N_CODES (sizeof codes / sizeof codes[0])

static void test_fixed_values(void **state) {
  (void)state;
  /* The codes' values are part of the ABI (docs/api.md): 0, then -1 .. -13. */
  static const int fixed[] = {
      REDLOCK_OK,          REDLOCK_EINVAL, REDLOCK_ENOMEM,    REDLOCK_ELOCKED,   REDLOCK_ENOQUORUM,
      REDLOCK_EEXPIRED,    REDLOCK_ELOST,  REDLOCK_ETIMEDOUT, REDLOCK_ECANCELED, REDLOCK_ECLOSED,
      REDLOCK_EWOULDBLOCK, REDLOCK_EIO,    REDLOCK_ENOTSUP,   REDLOCK_EFORKED};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    assert_int_equal(fixed[i], -(int)i);
  assert_int_equal(N_CODES, 13);
  /* The map lists them in order, each value once. */
  for (size_t i = 0; i < N_CODES; i++)
    assert_int_equal(codes[i].code, -(int)(i + 1));
  assert_int_equal(REDLOCK_LOST_EXPIRED, REDLOCK_ELOST);
}

static void test_strerror_all(void **state) {
  (void)state;
  const char *unknown = redlock_strerror(12345);
  assert_non_null(unknown);
  for (size_t i = 0; i < N_CODES; i++) {
    const char *s = redlock_strerror(codes[i].code);
    assert_non_null(s);
    assert_true(s[0] != '\0');
    assert_string_equal(s, codes[i].msg);
    assert_string_not_equal(s, unknown);
    assert_string_not_equal(s, redlock_strerror(REDLOCK_OK));
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(s, redlock_strerror(codes[j].code));
  }
}

static void test_err_name_all(void **state) {
  (void)state;
  for (size_t i = 0; i < N_CODES; i++) {
    const char *n = redlock_err_name(codes[i].code);
    assert_non_null(n);
    assert_string_equal(n, codes[i].name);
    assert_int_equal(strncmp(n, "REDLOCK_E", 9), 0);
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(n, redlock_err_name(codes[j].code));
  }
  /* A few spelled out, so a broken X-macro cannot agree with itself. */
  assert_string_equal(redlock_err_name(-1), "REDLOCK_EINVAL");
  assert_string_equal(redlock_err_name(-3), "REDLOCK_ELOCKED");
  assert_string_equal(redlock_err_name(-4), "REDLOCK_ENOQUORUM");
  assert_string_equal(redlock_err_name(-11), "REDLOCK_EIO");
  assert_string_equal(redlock_strerror(-1), "invalid argument");
}

static void test_ok(void **state) {
  (void)state;
  assert_string_equal(redlock_err_name(REDLOCK_OK), "REDLOCK_OK");
  const char *s = redlock_strerror(REDLOCK_OK);
  assert_non_null(s);
  assert_true(s[0] != '\0');
  assert_string_not_equal(s, redlock_strerror(12345));
}

static void test_unknown(void **state) {
  (void)state;
  static const int unknown[] = {1, 2, 100, -14, -100, INT_MIN, INT_MAX, -(int)N_CODES - 1};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    const char *s = redlock_strerror(unknown[i]);
    const char *n = redlock_err_name(unknown[i]);
    assert_non_null(s);
    assert_non_null(n);
    assert_true(s[0] != '\0');
    assert_true(n[0] != '\0');
    assert_string_not_equal(n, "REDLOCK_OK");
    for (size_t j = 0; j < N_CODES; j++) {
      assert_string_not_equal(s, codes[j].msg);
      assert_string_not_equal(n, codes[j].name);
    }
  }
}

static void test_version(void **state) {
  (void)state;
  assert_non_null(redlock_version());
  assert_string_equal(redlock_version(), REDLOCK_VERSION_STRING);
  char v[64];
  snprintf(v, sizeof v, "%d.%d.%d", REDLOCK_VERSION_MAJOR, REDLOCK_VERSION_MINOR,
           REDLOCK_VERSION_PATCH);
  assert_string_equal(redlock_version(), v);
  /* A static string: the same pointer each time. */
  assert_ptr_equal(redlock_version(), redlock_version());
}

UNIT_MAIN(cmocka_unit_test(test_fixed_values), cmocka_unit_test(test_strerror_all),
          cmocka_unit_test(test_err_name_all), cmocka_unit_test(test_ok),
          cmocka_unit_test(test_unknown), cmocka_unit_test(test_version))
