/* unit_support.h: what the cmocka unit tests of tests/unit share: their
 * main() and a client over a master that cannot exist (for argument checks
 * that never reach the network).  Header-only: each test is one file. */
#ifndef REDLOCK_UNIT_SUPPORT_H
#define REDLOCK_UNIT_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "redlock.h"

/* main() of a file of cmocka tests, without group setup. */
#define UNIT_MAIN(...)                                                                             \
  int main(void) {                                                                                 \
    const struct CMUnitTest tests[] = {__VA_ARGS__};                                               \
    return cmocka_run_group_tests(tests, NULL, NULL);                                              \
  }

/* Options over one unix-socket master that does not exist (a path under a
 * directory that does not either), with short timeouts: opening succeeds,
 * every round fails fast.  Asserts; the caller frees them. */
static inline redlock_options_t *unit_nowhere_options(void) {
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  char uri[128];
  snprintf(uri, sizeof uri, "unix:///nonexistent-redlock-unit-%ld/redis.sock", (long)getpid());
  assert_int_equal(redlock_options_add_node(opts, uri), 0);
  assert_int_equal(redlock_options_set_timeouts(opts, 200, 50), 0);
  return opts;
}

#endif
