/* cli_common.h: what every subcommand of the `redlock` tool (run, elect,
 * status, doctor) shares: the exit statuses, messages on stderr, the --help
 * text, the parsers of option values, the list of masters (--node or
 * REDLOCK_NODES), the --tls-* options, and the option parser that takes
 * these for every subcommand.
 *
 * The tool is split by job: main.c dispatches; cli_run.c, cli_elect.c,
 * cli_status.c and cli_doctor.c are the subcommands (cli_observe.c: elect
 * --observe; cli_admin.c: revoke); cli_hold.c parses the
 * options run and elect share and opens their client; cli_child.c starts
 * and watches COMMAND (signals, descriptors, environment); cli_conn.c makes
 * the tool's own synchronous connections to servers; cli_cluster.c reads a
 * cluster voter's slot map over them; cli_probe.c asks one master (a
 * cluster voter: the primary of the key's slot) about a key over one
 * (status, and run's diagnosis of "no quorum"); cli_doctor_*.c check each
 * voter (cli_doctor.h). */
#ifndef REDLOCK_CLI_COMMON_H
#define REDLOCK_CLI_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "redlock.h"
#include "util/uri.h" /* node_addr_t, uri_parse: from the redlock_uri target */

/* ---- exit statuses (documented in docs/cli.md and docs/redlock.1) ---------------------- */
enum {
  EXIT_CANNOT_VOTE = 1,   /* doctor: a voter cannot vote with the options given */
  EXIT_QUARANTINED = 2,   /* doctor: every voter can vote, some once a quarantine ends */
  EXIT_USAGE = 64,        /* EX_USAGE: bad command line */
  EXIT_NOQUORUM = 69,     /* EX_UNAVAILABLE: too few masters answered */
  EXIT_INTERNAL = 70,     /* EX_SOFTWARE: library or system error */
  EXIT_LOST = 71,         /* the lock was lost while COMMAND ran */
  EXIT_BUSY = 75,         /* EX_TEMPFAIL: held by someone else / --wait ran out */
  EXIT_MAX_HOLD = 124,    /* --max-hold ended COMMAND (timeout(1)'s status) */
  EXIT_CANNOT_EXEC = 126, /* COMMAND found but could not be executed */
  EXIT_NOT_FOUND = 127    /* COMMAND not found */
};

#define DEFAULT_TTL_MS 30000u
#define DEFAULT_ELECT_TTL_MS 10000u
#define DEFAULT_GRACE_MS 5000u
#define DEFAULT_STATUS_TIMEOUT_MS 1000u
#define LIBRARY_DEFAULT_MAX_TTL_MS 60000u /* redlock.h: max TTL 60 s */
#define DEFAULT_FENCE_ENV "REDLOCK_FENCE"

/* getopt_long codes of the options without a short form. */
enum {
  OPT_NO_QUARANTINE = 256,
  OPT_MAX_TTL,
  OPT_CONNECT_TIMEOUT,
  OPT_REQUEST_TIMEOUT,
  OPT_TIMEOUT,
  OPT_METRICS_FILE,
  OPT_METRICS_FORMAT,
  OPT_JSON,
  OPT_CLOCK_MS,
  OPT_TLS_CA = 300,
  OPT_TLS_CERT,
  OPT_TLS_KEY,
  OPT_TLS_SERVER_NAME,
  OPT_TLS_INSECURE,
  OPT_ALLOW_DISCOVERED,
  OPT_OWNER,
  OPT_KIND,
  OPT_MAX_HOLD = 400,
  OPT_OBSERVE,
  OPT_POLL
};

/* ---- the subcommands (main.c dispatches to them) -------------------------------------- */

/* Each takes argv from the subcommand's name on and returns the exit
 * status, or -1 after --help / --version (exit 0). */
int cmd_run(int argc, char **argv);
int cmd_elect(int argc, char **argv);
/* `redlock elect --observe NAME` (cli_observe.c; cmd_elect hands it over). */
int cmd_elect_observe(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_revoke(int argc, char **argv);

/* ---- messages ----------------------------------------------------------------------------- */

extern int g_verbosity; /* -1 quiet, 0 default, 1 -v, 2 -vv */

__attribute__((format(printf, 1, 2))) void err_msg(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void info_msg(const char *fmt, ...);
/* Usage errors are printed even with --quiet.  Returns EXIT_USAGE. */
__attribute__((format(printf, 1, 2))) int usage_error(const char *fmt, ...);

/* The library's log (redlock_options_set_log), on stderr. */
void log_cb(int level, const char *msg, void *arg);
/* The log callback the TLS setters report through before any client exists. */
void setter_log_cb(int level, const char *msg, void *arg);

/* --help (cli_help.c) and --version, on stdout.  cmd: the subcommand whose
 * options to list, NULL for the overview. */
void print_help(const char *cmd);
void print_version(void);

/* ---- argument parsing helpers --------------------------------------------------------- */

/* A duration -> milliseconds in [min, max]: a number, fractions allowed
 * ("1.5"), with a unit ("250ms", "1.5s", "2m", "1h") or bare, in units of
 * bare_unit_ms (1 for most options, 1000 for run's -w/--wait as in
 * flock(1)).  Fractions of a millisecond are dropped.  0 or -1. */
int parse_duration(const char *s, uint64_t bare_unit_ms, uint64_t min, uint64_t max, uint64_t *out);
/* parse_duration with bare numbers in milliseconds. */
int parse_ms(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int parse_int_range(const char *s, long min, long max, long *out);
int valid_env_name(const char *s);

/* A JSON string literal of s on stdout (status --json, doctor --json);
 * bytes outside printable ASCII as \u00XX. */
void json_str(const char *s);

/* ---- the masters: --node, else REDLOCK_NODES ---------------------------------------------- */

typedef struct {
  char *uris[REDLOCK_MAX_NODES];
  node_addr_t addrs[REDLOCK_MAX_NODES];
  size_t n;
  int from_cli; /* at least one --node */
} nodes_t;

void nodes_free(nodes_t *nodes);
/* Parses and adds one URI (source names it in messages).  0 or an exit status. */
int nodes_add(nodes_t *nodes, const char *uri, const char *source);
/* Without --node: the comma-separated REDLOCK_NODES.  0 or an exit status. */
int nodes_finish(nodes_t *nodes);

/* ---- TLS options (every subcommand) ------------------------------------------------- */

/* --tls-* options; each falls back to its REDLOCK_TLS_* variable. */
typedef struct {
  const char *ca, *cert, *key, *server_name;
  int insecure; /* -1: not given */
  int warned;   /* the insecure warning was given (tls_apply runs once per client) */
} tls_opts_t;

/* Fills in the environment's values and applies them to opts.  0 or an
 * exit status (with the reason on stderr). */
int tls_apply(tls_opts_t *t, redlock_options_t *opts);
/* The directory where this user's runs share the first sightings of the
 * masters' replication histories (redlock_options_set_state_dir):
 * REDLOCK_STATE_DIR ("" for none), else $XDG_STATE_HOME/redlock, else
 * ~/.local/state/redlock.  0, or EXIT_USAGE (said). */
int state_dir_apply(redlock_options_t *opts);

/* ---- the options of every subcommand, and the one parser --------------------------- */

/* What every subcommand connects with ("All commands" in docs/cli.md):
 * --node, --key-prefix, --owner and the --tls-* options.  parse_options takes them
 * (and -q, -v, -h, -V) for all subcommands from one table, so that a new
 * connection option reaches run, elect and status alike. */
/* Most --allow-discovered patterns (the library takes up to 64). */
#define CLI_MAX_ALLOW 64

typedef struct {
  nodes_t nodes;
  const char *prefix;
  const char *owner; /* --owner, else REDLOCK_OWNER, else NULL: no label */
  tls_opts_t tls;
  /* --allow-discovered host patterns, else REDLOCK_ALLOW_DISCOVERED's
   * (split in allow_env, filled in by conn_apply). */
  const char *allow[CLI_MAX_ALLOW];
  size_t n_allow;
  char allow_env[1024];
} conn_opts_t;

struct option; /* getopt.h */

/* Returned by a subcommand's take function for an option that is not its. */
#define OPT_NOT_MINE (-2)

/* A subcommand's own options. */
typedef struct {
  const char *shorts; /* getopt syntax, e.g. "t:w:G" */
  /* Its long option tables (each ending with a zeroed entry), NULL after
   * the last. */
  const struct option *const *longs;
  /* Takes one of them: 0, an exit status, or OPT_NOT_MINE. */
  int (*take)(void *ctx, int opt, const char *arg);
  void *ctx;
  int count_verbose; /* -v raises g_verbosity (status has no progress to tell) */
} cmd_options_t;

/* getopt_long over argv (from the subcommand's name on), conn's defaults
 * first: the connection options and the subcommand's.  0 with optind at the
 * first operand, an exit status, or -1 after --help / --version. */
int parse_options(int argc, char **argv, conn_opts_t *conn, const cmd_options_t *cmd);

/* After the operands: the key's size (RESOURCE and --key-prefix), and the
 * masters from REDLOCK_NODES when no --node was given.  0 or an exit
 * status. */
int conn_finish(conn_opts_t *conn, const char *resource);

#endif
