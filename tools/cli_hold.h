/* cli_hold.h: the options of the two subcommands that hold something while
 * COMMAND runs, `run` (a lock) and `elect` (a leader's term), and the client
 * they open.  elect takes run's options minus --wait, -n, -E, -c, -s, -x and
 * --metrics-*,
 * so both go through one parser: a hold_cmd_t says what differs.  The
 * connection options (--node, --key-prefix, --tls-*) are every
 * subcommand's (conn_opts_t, cli_common.h). */
#ifndef REDLOCK_CLI_HOLD_H
#define REDLOCK_CLI_HOLD_H

#include <stdint.h>

#include "cli_common.h"

typedef struct {
  conn_opts_t conn; /* masters, key prefix, TLS */
  uint64_t ttl_ms, wait_ms, max_ttl_ms, grace_ms, connect_ms, request_ms;
  uint64_t max_hold_ms; /* --max-hold: the hold's (each term's) bound; 0: none */
  int quarantine;
  int process_group;
  int conflict_exit;
  const char *fence_env;
  const char *resource; /* run's RESOURCE, elect's NAME */
  char **command;
  const char *metrics_file;  /* --metrics-file: stats written at the end */
  int metrics_format;        /* REDLOCK_STATS_PROMETHEUS or REDLOCK_STATS_JSON */
  int mode;                  /* run: HOLD_MUTEX, HOLD_SHARED (-s) or HOLD_EXCLUSIVE (-x) */
  const char *shell_command; /* -c: COMMAND is sh -c this */
  char *shell_argv[4];       /* COMMAND's argv for -c */
} hold_opts_t;

/* What run holds: a plain lock, or a hold of the read-write lock of the
 * same name (whose keys differ: a plain run and a -s/-x run do not exclude
 * each other). */
enum { HOLD_MUTEX = 0, HOLD_SHARED, HOLD_EXCLUSIVE };

/* What run and elect differ in. */
typedef struct {
  const char *name;         /* "run", "elect": in messages */
  const char *operand;      /* "RESOURCE", "NAME": in messages */
  const char *reserved_env; /* besides REDLOCK_RESOURCE, what --fence-env may not name */
  uint64_t default_ttl_ms;
  uint64_t min_ttl_ms; /* 0: none (a leader's lease needs a few ms) */
  int lock;            /* run: --wait, -E, --metrics-*, fencing, one attempt */
} hold_cmd_t;

extern const hold_cmd_t HOLD_RUN, HOLD_ELECT;

/* Parses argv (from the subcommand's name on) into o, defaults first.
 * 0, an exit status, or -1 after --help / --version. */
int hold_parse(const hold_cmd_t *cmd, int argc, char **argv, hold_opts_t *o);

/* The client's options from o.  0 or an exit status (with a message); *out
 * is set either way (NULL or to be freed). */
int hold_options(const hold_cmd_t *cmd, const hold_opts_t *o, redlock_options_t **out);

/* hold_parse, child_setup (cli_child.h), hold_options and tls_apply: what
 * run and elect do before they open their client.  0, an exit status, or -1 after
 * --help / --version; o and *opts are to be freed either way. */
struct fdset;
int hold_prepare(const hold_cmd_t *cmd, int argc, char **argv, hold_opts_t *o,
                 struct fdset *inherited, redlock_options_t **opts);

/* redlock_open, with the message when it fails.  0 or an exit status. */
int hold_open(redlock_t **client, const redlock_options_t *opts);

#endif
