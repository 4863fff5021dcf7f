/* cli_cases.h: the main() of the CLI test drivers (tests/cli/test_cli*.c),
 * each a table of cases run one per process as `DRIVER PATH-TO-redlock
 * CASE` (ctest: cli.<case>).  The driver keeps its own globals (the binary,
 * the case's name, its temporary directory), which its checks and its
 * cleanup use; cli_cases_main() fills them in. */
#ifndef REDLOCK_TEST_CLI_CASES_H
#define REDLOCK_TEST_CLI_CASES_H

#include <stddef.h>

typedef struct {
  const char *name;
  void (*fn)(void); /* fails by exiting (the driver's CHECK) */
} cli_case_t;

/* Checks the arguments (2 with a usage message unless argc is 3), empties
 * REDLOCK_STATE_DIR, sets *redlock to argv[1] (the binary under test) and
 * *case_name to argv[2], ignores SIGPIPE (a write to a child that exited
 * is an EPIPE the case reports, not the driver's death), makes the
 * temporary directory <$TMPDIR or /tmp>/<tmp_prefix>-XXXXXX in tmpdir and
 * runs the named case of cases[0..n_cases), timed.  cleanup runs after the
 * case, and when the case is unknown; it removes the directory.  Returns
 * main()'s status: 0 when the case passed, 2 for bad usage, an unknown
 * case or no directory. */
int cli_cases_main(int argc, char **argv, const cli_case_t *cases, size_t n_cases,
                   const char *tmp_prefix, void (*cleanup)(void), const char **redlock,
                   const char **case_name, char *tmpdir, size_t tmpdir_size);

#endif
