/* api_fencing_store.c: examples/fencing_store.c run against N = 3 real
 * masters (restart quarantine off: the fixture's masters are fresh).
 *
 *   api_fencing_store path/to/example-fencing-store
 *
 * Asserts: it exits 0 and says so ("OK: ..."); the stale holder's write and
 * the revoked holder's write are REJECTED by its store, the revoke returns
 * REDLOCK_OK with a fence above the holder's token, the revoked holder's
 * extension fails with REDLOCK_ELOST, and the next holder's token is above
 * the fence. */
#include "fixture.h"

static const char *example_path;

static void test_fencing_store_example(void **state) {
  (void)state;
  static char out[16384];
  assert_int_equal(fx_run_example(fx_group, example_path, out, sizeof out), 0);
  assert_non_null(strstr(out, "OK: the stale holder's write and the revoked holder's write"));
  assert_non_null(strstr(out, "(2, stale)\" with token"));
  assert_non_null(strstr(out, "written by A (2, stale)"));
  assert_non_null(strstr(out, "admin: revoke example:fencing_store: REDLOCK_OK"));
  assert_non_null(strstr(out, "(3, revoked)"));
  assert_non_null(strstr(out, "B: extend: REDLOCK_ELOST"));
  const char *revoked = strstr(out, "written by B (3, revoked)");
  assert_non_null(revoked);
  assert_non_null(strstr(revoked, "-> REJECTED"));
  assert_null(strstr(out, "NOT >"));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/example-fencing-store\n", argv[0]);
    return 2;
  }
  example_path = argv[1];
  fx_use_profile(&fx_profile_api);
  fx_watchdog(120);
  const struct CMUnitTest tests[] = {fx_group_test(test_fencing_store_example)};
  return cmocka_run_group_tests_name("tests", tests, fx_group_setup_3, fx_group_teardown);
}
