/* api_example.c: an example program of examples/ run against N = 3 real
 * masters, its output checked.
 *
 *   api_example PATH EXPECTED...
 *
 * Asserts: PATH (given --no-quarantine and the masters' URIs) exits 0, its
 * output holds each EXPECTED text in the order given, and its last line
 * is "OK". */
#include "fixture.h"

static const char *example_path;
static char **expected;
static int n_expected;

static void test_example(void **state) {
  (void)state;
  static char out[65536];
  assert_int_equal(fx_run_example(fx_group, example_path, out, sizeof out), 0);
  const char *at = out;
  for (int i = 0; i < n_expected; i++) {
    const char *found = strstr(at, expected[i]);
    if (found == NULL)
      fail_msg("'%s' is not in the output (after what came before it):\n%s", expected[i], out);
    at = found + strlen(expected[i]);
  }
  size_t len = strlen(out);
  assert_true(len >= 3 && strcmp(out + len - 3, "OK\n") == 0);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/example EXPECTED...\n", argv[0]);
    return 2;
  }
  example_path = argv[1];
  expected = argv + 2;
  n_expected = argc - 2;
  fx_use_profile(&fx_profile_api);
  fx_watchdog(120);
  const struct CMUnitTest tests[] = {fx_group_test(test_example)};
  return cmocka_run_group_tests_name("tests", tests, fx_group_setup_3, fx_group_teardown);
}
