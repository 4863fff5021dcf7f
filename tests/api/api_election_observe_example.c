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
  char nodes[1024], cmd[2048];
  fx_node_list(fx_group, nodes, sizeof nodes);
  for (char *p = nodes; (p = strchr(p, ',')) != NULL;)
    *p = ' ';
  snprintf(cmd, sizeof cmd, "%s --no-quarantine %s 2>&1", example_path, nodes);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  static char out[16384];
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  int st = pclose(f);
  if (st != 0 || fx_verbose())
    fprintf(stderr, "%s\n", out);
  assert_int_equal(st, 0);
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
