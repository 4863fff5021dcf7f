/* cli_cases.c: see cli_cases.h. */
#include "cli_cases.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_harness.h" /* rh_now_ms */

int cli_cases_main(int argc, char **argv, const cli_case_t *cases, size_t n_cases,
                   const char *tmp_prefix, void (*cleanup)(void), const char **redlock,
                   const char **case_name, char *tmpdir, size_t tmpdir_size) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PATH-TO-redlock CASE\n", argv[0]);
    return 2;
  }
  /* Each case's masters are new: no first sighting kept by an earlier run
   * (~/.local/state/redlock) may date their quarantines. */
  setenv("REDLOCK_STATE_DIR", "", 1);
  *redlock = argv[1];
  *case_name = argv[2];
  signal(SIGPIPE, SIG_IGN);
  const char *tmp = getenv("TMPDIR");
  snprintf(tmpdir, tmpdir_size, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tmp_prefix);
  if (mkdtemp(tmpdir) == NULL) {
    fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
    return 2;
  }
  for (size_t i = 0; i < n_cases; i++) {
    if (strcmp(cases[i].name, argv[2]) == 0) {
      uint64_t t0 = rh_now_ms();
      cases[i].fn();
      printf("ok [%s] %" PRIu64 " ms\n", argv[2], rh_now_ms() - t0);
      cleanup();
      return 0;
    }
  }
  fprintf(stderr, "unknown case '%s'\n", argv[2]);
  cleanup();
  return 2;
}
