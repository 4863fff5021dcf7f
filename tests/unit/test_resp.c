/* test_resp.c: RESP command formatting (src/proto/resp.c) produces exactly the
 * bytes of hiredis's redisFormatCommandArgv, for ordinary, empty, binary and
 * long arguments and for argument counts with several digits; the decimal
 * conversion is exact at the edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"
#include <hiredis/hiredis.h>

#include "proto/resp.h"

static void check_same_as_hiredis(int argc, const char **argv, const size_t *lens) {
  char *expected = NULL;
  long long expected_len = redisFormatCommandArgv(&expected, argc, argv, lens);
  assert_true(expected_len > 0);
  size_t len = resp_command_len(argc, lens);
  assert_int_equal(len, (size_t)expected_len);
  char *out = malloc(len + 1);
  assert_non_null(out);
  out[len] = 'X'; /* must stay untouched */
  resp_write_command(out, argc, argv, lens);
  assert_memory_equal(out, expected, len);
  assert_int_equal(out[len], 'X');
  free(out);
  redisFreeCommand(expected);
}

static void test_lock_commands(void **state) {
  (void)state;
  const char *set[] = {"SET", "orders:42", "0123456789abcdef0123456789abcdef", "NX", "PX", "30000"};
  size_t set_len[6];
  for (int i = 0; i < 6; i++)
    set_len[i] = strlen(set[i]);
  check_same_as_hiredis(6, set, set_len);
  const char *eval[] = {"EVALSHA", "aee6367e5e2f0c0cf9bade9caf2dec9437e7ac3c", "1", "k", "v"};
  size_t eval_len[5];
  for (int i = 0; i < 5; i++)
    eval_len[i] = strlen(eval[i]);
  check_same_as_hiredis(5, eval, eval_len);
}

static void test_empty_binary_and_long(void **state) {
  (void)state;
  static char big[100000];
  memset(big, 'z', sizeof big);
  const char *argv[] = {"", "a\r\nb\0c", big, "x"};
  size_t lens[] = {0, 7, sizeof big, 1};
  check_same_as_hiredis(4, argv, lens);
}

static void test_many_arguments(void **state) {
  (void)state;
  enum { N = 1234 };
  static const char *argv[N];
  static size_t lens[N];
  static char text[N][8];
  for (int i = 0; i < N; i++) {
    snprintf(text[i], sizeof text[i], "%d", i * 7);
    argv[i] = text[i];
    lens[i] = strlen(text[i]);
  }
  for (int argc = 1; argc <= N; argc = argc * 3 + 1)
    check_same_as_hiredis(argc, argv, lens);
  check_same_as_hiredis(N, argv, lens);
}

static void test_decimal(void **state) {
  (void)state;
  char buf[24], ref[24];
  const uint64_t values[] = {0, 9, 10, 99, 100, 4294967295u, 1795321296342894u, UINT64_MAX};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    snprintf(ref, sizeof ref, "%llu", (unsigned long long)values[i]);
    assert_int_equal(resp_u64_to_dec(values[i], buf), strlen(ref));
    assert_string_equal(buf, ref);
  }
}

UNIT_MAIN(cmocka_unit_test(test_lock_commands), cmocka_unit_test(test_empty_binary_and_long),
          cmocka_unit_test(test_many_arguments), cmocka_unit_test(test_decimal))
