/* main.c: the `redlock` command, "flock(1) across machines": dispatches to
 * its subcommands.
 *
 *   redlock run [OPTIONS] RESOURCE [--] COMMAND [ARGS...]     cli_run.c
 *   redlock elect [OPTIONS] NAME [--] COMMAND [ARGS...]       cli_elect.c
 *   redlock status [OPTIONS] RESOURCE                         cli_status.c
 *   redlock doctor [OPTIONS] URI...                           cli_doctor.c
 *   redlock revoke [OPTIONS] RESOURCE                         cli_admin.c
 *
 * docs/redlock.1 (man redlock) and docs/cli.md document the options and the exit statuses
 * (cli_common.h).  The tool uses the public API of the shared library, and
 * the library's node URI parser and TLS set-up (redlock_uri target) so that
 * it reads and checks masters exactly as the library does. */
#include <stdio.h>
#include <string.h>

#include "cli_common.h"

int main(int argc, char **argv) {
  if (argc < 2)
    return usage_error("missing command: run, elect, status, revoke or doctor");
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    /* `redlock help run`: run's options, as `redlock run --help`. */
    const char *sub = argc > 2 && strcmp(cmd, "help") == 0 ? argv[2] : NULL;
    if (sub != NULL && strcmp(sub, "run") != 0 && strcmp(sub, "elect") != 0 &&
        strcmp(sub, "status") != 0 && strcmp(sub, "doctor") != 0 && strcmp(sub, "revoke") != 0)
      return usage_error(
          "help: unknown command '%s' (expected run, elect, status, revoke or doctor)", sub);
    print_help(sub);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
    print_version();
    return 0;
  }
  int status;
  if (strcmp(cmd, "run") == 0)
    status = cmd_run(argc - 1, argv + 1);
  else if (strcmp(cmd, "elect") == 0)
    status = cmd_elect(argc - 1, argv + 1);
  else if (strcmp(cmd, "status") == 0)
    status = cmd_status(argc - 1, argv + 1);
  else if (strcmp(cmd, "doctor") == 0)
    status = cmd_doctor(argc - 1, argv + 1);
  else if (strcmp(cmd, "revoke") == 0)
    status = cmd_revoke(argc - 1, argv + 1);
  else
    return usage_error("unknown command '%s' (expected run, elect, status, revoke or doctor)", cmd);
  /* A full disk or closed pipe on stdout (the status or doctor report) is
   * an error. */
  if (fflush(stdout) != 0 && status == 0)
    status = EXIT_INTERNAL;
  return status < 0 ? 0 : status; /* -1: after --help / --version */
}
