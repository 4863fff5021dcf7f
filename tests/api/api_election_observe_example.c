/* api_election_observe_example.c: examples/election_observe.c run against
 * N = 3 real masters.
 *
 * Asserts: it exits 0 and says OK; the observer printed node-a's term, the
 * hand-off to node-b (after the resign), and the one read (asked once)
 * names node-b. */
#include "fixture.h"

static const char *example_path;

static void test_election_observe_example(void **state) {
  (void)state;
  static char out[16384];
  assert_int_equal(fx_run_example(fx_group, example_path, out, sizeof out), 0);
  assert_non_null(strstr(out, "observer: leader node-a, term "));
  const char *resign = strstr(out, "node-a resigns");
  assert_non_null(resign);
  assert_non_null(strstr(resign, "observer: leader node-b, term "));
  assert_non_null(strstr(resign, "the observer saw the hand-off "));
  assert_non_null(strstr(resign, "asked once: leader node-b, term "));
  assert_non_null(strstr(out, "\nOK\n"));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/example-election-observe\n", argv[0]);
    return 2;
  }
  example_path = argv[1];
  fx_use_profile(&fx_profile_api);
  fx_watchdog(120);
  const struct CMUnitTest tests[] = {fx_group_test(test_election_observe_example)};
  return cmocka_run_group_tests_name("tests", tests, fx_group_setup_3, fx_group_teardown);
}
