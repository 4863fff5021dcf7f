/* cli_args.h: the "--name value" loop shared by the test helper programs
 * (fault_proxy_main.c, hostile_server.c).  cli_value() is called with argv[*i]
 * an option name: -h / --help prints the usage to stdout and exits 0; a name
 * without a value prints it to stderr and exits 2; otherwise it steps *i to
 * the value and returns it. */
#ifndef REDLOCK_TEST_CLI_ARGS_H
#define REDLOCK_TEST_CLI_ARGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline const char *cli_value(int argc, char **argv, int *i, void (*usage)(FILE *)) {
  if (strcmp(argv[*i], "-h") == 0 || strcmp(argv[*i], "--help") == 0) {
    usage(stdout);
    exit(0);
  }
  if (*i + 1 >= argc) {
    usage(stderr);
    exit(2);
  }
  return argv[++*i];
}

#endif
