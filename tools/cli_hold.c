/* cli_hold.c: the options and the client set-up of `run` and `elect` (see
 * cli_hold.h).  They were two copies that drifted apart only where the
 * subcommands really differ; those differences are the fields of hold_cmd_t.
 * The connection options (--node, --key-prefix, --tls-*) are parse_options'
 * (cli_common.c), shared with status. */
#define _GNU_SOURCE /* getopt_long */

#include "cli_hold.h"

#include "cli_child.h"
#include "cli_conn.h" /* conn_apply */

#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const hold_cmd_t HOLD_RUN = {.name = "run",
                             .operand = "RESOURCE",
                             .reserved_env = "REDLOCK_VALUE",
                             .default_ttl_ms = DEFAULT_TTL_MS,
                             .min_ttl_ms = 0,
                             .lock = 1};

const hold_cmd_t HOLD_ELECT = {.name = "elect",
                               .operand = "NAME",
                               .reserved_env = "REDLOCK_TERM",
                               .default_ttl_ms = DEFAULT_ELECT_TTL_MS,
                               .min_ttl_ms = 10,
                               .lock = 0};

/* The long options of both subcommands (after parse_options' connection
 * options: --node, --key-prefix, --tls-*, ...), then those of run alone. */
static const struct option HOLD_LONGS[] = {
    {"ttl", required_argument, NULL, 't'},
    {"fence-env", required_argument, NULL, 'f'},
    {"no-quarantine", no_argument, NULL, OPT_NO_QUARANTINE},
    {"max-ttl", required_argument, NULL, OPT_MAX_TTL},
    {"grace", required_argument, NULL, 'g'},
    {"process-group", no_argument, NULL, 'G'},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
    {"max-hold", required_argument, NULL, OPT_MAX_HOLD},
    {NULL, 0, NULL, 0}};
static const struct option LOCK_LONGS[] = {
    {"wait", required_argument, NULL, 'w'},
    {"nonblock", no_argument, NULL, 'n'},
    {"command", required_argument, NULL, 'c'},
    {"shared", no_argument, NULL, 's'},
    {"exclusive", no_argument, NULL, 'x'},
    {"conflict-exit-code", required_argument, NULL, 'E'},
    {"metrics-file", required_argument, NULL, OPT_METRICS_FILE},
    {"metrics-format", required_argument, NULL, OPT_METRICS_FORMAT},
    {NULL, 0, NULL, 0}};
static const struct option *const RUN_TABLES[] = {HOLD_LONGS, LOCK_LONGS, NULL};
static const struct option *const ELECT_TABLES[] = {HOLD_LONGS, NULL};

static void set_defaults(const hold_cmd_t *cmd, hold_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->ttl_ms = cmd->default_ttl_ms;
  o->grace_ms = DEFAULT_GRACE_MS;
  o->quarantine = 1;
  o->conflict_exit = EXIT_BUSY;
  o->fence_env = DEFAULT_FENCE_ENV;
}

/* The options that take a duration: their bounds, the unit of a bare
 * number (--wait's is flock(1)'s, seconds) and where they go. */
static const struct {
  int opt;
  const char *name;
  uint64_t min, max, bare_unit_ms;
  size_t field; /* offsetof(hold_opts_t, ...) */
} MS_OPTIONS[] = {
    {'t', "--ttl", 1, INT32_MAX, 1, offsetof(hold_opts_t, ttl_ms)},
    {'w', "--wait", 0, UINT32_MAX, 1000, offsetof(hold_opts_t, wait_ms)},
    {OPT_MAX_TTL, "--max-ttl", 1, INT32_MAX, 1, offsetof(hold_opts_t, max_ttl_ms)},
    {'g', "--grace", 0, UINT32_MAX, 1, offsetof(hold_opts_t, grace_ms)},
    {OPT_CONNECT_TIMEOUT, "--connect-timeout", 1, 3600000, 1, offsetof(hold_opts_t, connect_ms)},
    {OPT_REQUEST_TIMEOUT, "--request-timeout", 1, 3600000, 1, offsetof(hold_opts_t, request_ms)},
    {OPT_MAX_HOLD, "--max-hold", 1, UINT32_MAX, 1, offsetof(hold_opts_t, max_hold_ms)}};

/* What take_option needs besides the option. */
typedef struct {
  const hold_cmd_t *cmd;
  hold_opts_t *o;
  int ttl_given, max_ttl_given;
} hold_parse_t;

/* One option of run or elect (parse_options' take): 0 when taken, an exit
 * status, or OPT_NOT_MINE.  Options the subcommand does not list never come
 * here: getopt_long reports them as unknown. */
static int take_option(void *ctx, int opt, const char *arg) {
  hold_parse_t *p = ctx;
  hold_opts_t *o = p->o;
  for (size_t i = 0; i < sizeof MS_OPTIONS / sizeof MS_OPTIONS[0]; i++) {
    if (MS_OPTIONS[i].opt != opt)
      continue;
    uint64_t *field = (uint64_t *)((char *)o + MS_OPTIONS[i].field);
    if (parse_duration(arg, MS_OPTIONS[i].bare_unit_ms, MS_OPTIONS[i].min, MS_OPTIONS[i].max,
                       field) != 0)
      return usage_error("%s: expected a duration from %" PRIu64 " to %" PRIu64
                         " ms (250ms, 1.5s, 2m; a bare number is in %s), got '%s'",
                         MS_OPTIONS[i].name, MS_OPTIONS[i].min, MS_OPTIONS[i].max,
                         MS_OPTIONS[i].bare_unit_ms == 1000 ? "seconds" : "milliseconds", arg);
    p->ttl_given |= opt == 't';
    p->max_ttl_given |= opt == OPT_MAX_TTL;
    return 0;
  }
  long l;
  switch (opt) {
  case 'n': /* flock -n: one attempt */
    o->wait_ms = 0;
    return 0;
  case 'c':
    if (arg[0] == '\0')
      return usage_error("-c: expected a shell command");
    o->shell_command = arg;
    return 0;
  case 's':
  case 'x':
    if (o->mode != HOLD_MUTEX && o->mode != (opt == 's' ? HOLD_SHARED : HOLD_EXCLUSIVE))
      return usage_error("-s (--shared) and -x (--exclusive) exclude each other");
    o->mode = opt == 's' ? HOLD_SHARED : HOLD_EXCLUSIVE;
    return 0;
  case 'E':
    if (parse_int_range(arg, 0, 255, &l) != 0)
      return usage_error("--conflict-exit-code: expected 0 to 255, got '%s'", arg);
    o->conflict_exit = (int)l;
    return 0;
  case 'f':
    if (!valid_env_name(arg))
      return usage_error("--fence-env: '%s' is not a valid environment variable name", arg);
    if (strcmp(arg, "REDLOCK_RESOURCE") == 0 || strcmp(arg, p->cmd->reserved_env) == 0)
      return usage_error("--fence-env: %s is already set to something else", arg);
    o->fence_env = arg;
    return 0;
  case OPT_NO_QUARANTINE:
    o->quarantine = 0;
    return 0;
  case 'G':
    o->process_group = 1;
    return 0;
  case OPT_METRICS_FILE:
    if (arg[0] == '\0')
      return usage_error("--metrics-file: expected a path");
    o->metrics_file = arg;
    return 0;
  case OPT_METRICS_FORMAT:
    if (strcmp(arg, "prometheus") == 0)
      o->metrics_format = REDLOCK_STATS_PROMETHEUS;
    else if (strcmp(arg, "json") == 0)
      o->metrics_format = REDLOCK_STATS_JSON;
    else
      return usage_error("--metrics-format: expected prometheus or json, got '%s'", arg);
    return 0;
  default:
    return OPT_NOT_MINE;
  }
}

int hold_parse(const hold_cmd_t *cmd, int argc, char **argv, hold_opts_t *o) {
  set_defaults(cmd, o);
  hold_parse_t p = {.cmd = cmd, .o = o};
  const cmd_options_t opts = {.shorts = cmd->lock ? "t:w:E:f:g:Gnc:sx" : "t:f:g:G",
                              .longs = cmd->lock ? RUN_TABLES : ELECT_TABLES,
                              .take = take_option,
                              .ctx = &p,
                              .count_verbose = 1};
  int rc = parse_options(argc, argv, &o->conn, &opts);
  if (rc != 0)
    return rc;
  if (optind >= argc)
    return usage_error("%s: missing %s", cmd->name, cmd->operand);
  o->resource = argv[optind++];
  /* flock(1)'s order: `redlock run RESOURCE -c 'COMMAND'`. */
  if (cmd->lock && optind < argc &&
      (strcmp(argv[optind], "-c") == 0 || strcmp(argv[optind], "--command") == 0)) {
    if (optind + 1 >= argc)
      return usage_error("option %s needs a value", argv[optind]);
    if (argv[optind + 1][0] == '\0')
      return usage_error("-c: expected a shell command");
    if (optind + 2 < argc)
      return usage_error("%s: -c takes one shell command ('%s' after it): quote it", cmd->name,
                         argv[optind + 2]);
    o->shell_command = argv[optind + 1];
    optind = argc;
  }
  if (o->shell_command != NULL) {
    if (optind < argc)
      return usage_error("%s: -c and a COMMAND ('%s') exclude each other", cmd->name, argv[optind]);
    o->shell_argv[0] = "sh";
    o->shell_argv[1] = "-c";
    o->shell_argv[2] = (char *)o->shell_command;
    o->shell_argv[3] = NULL;
    o->command = o->shell_argv;
  } else {
    if (optind < argc && strcmp(argv[optind], "--") == 0)
      optind++;
    else if (optind < argc && argv[optind][0] == '-')
      return usage_error("%s: options go before %s ('%s' after it); put -- before a "
                         "COMMAND that starts with '-'",
                         cmd->name, cmd->operand, argv[optind]);
    if (optind >= argc)
      return usage_error("%s: missing COMMAND (or -c 'COMMAND')", cmd->name);
    o->command = argv + optind;
  }
  /* A --ttl above the library's default max TTL raises the max TTL (and with
   * it the quarantine, which must cover a TTL) unless --max-ttl says
   * otherwise: `--ttl 2m` works as written. */
  if (p.ttl_given && !p.max_ttl_given && o->ttl_ms > LIBRARY_DEFAULT_MAX_TTL_MS)
    o->max_ttl_ms = o->ttl_ms;
  uint64_t max_ttl = o->max_ttl_ms ? o->max_ttl_ms : LIBRARY_DEFAULT_MAX_TTL_MS;
  if (!p.ttl_given && o->ttl_ms > max_ttl)
    o->ttl_ms = max_ttl; /* the default TTL, capped by a small --max-ttl */
  if (o->ttl_ms > max_ttl)
    return usage_error("--ttl %" PRIu64 " ms is above the max TTL (%" PRIu64
                       " ms): raise --max-ttl (it is also the restart quarantine)",
                       o->ttl_ms, max_ttl);
  if (o->ttl_ms < cmd->min_ttl_ms)
    return usage_error("--ttl %" PRIu64 " ms is too short for a leader's lease (at least %" PRIu64
                       " ms)",
                       o->ttl_ms, cmd->min_ttl_ms);
  return conn_finish(&o->conn, o->resource);
}

int hold_options(const hold_cmd_t *cmd, const hold_opts_t *o, redlock_options_t **out) {
  redlock_options_t *opts = *out = redlock_options_new();
  if (opts == NULL) {
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  int rc = 0;
  if (g_verbosity >= 0)
    rc = redlock_options_set_log(opts,
                                 g_verbosity >= 2   ? REDLOCK_LOG_DEBUG
                                 : g_verbosity == 1 ? REDLOCK_LOG_INFO
                                                    : REDLOCK_LOG_ERROR,
                                 log_cb, NULL);
  for (size_t i = 0; rc == 0 && i < o->conn.nodes.n; i++)
    rc = redlock_options_add_node(opts, o->conn.nodes.uris[i]);
  if (rc == 0 && cmd->lock)
    rc = redlock_options_set_fencing(opts, 1);
  if (rc == 0)
    rc = redlock_options_set_quarantine(opts, o->quarantine);
  if (rc == 0 && o->max_ttl_ms)
    rc = redlock_options_set_max_ttl(opts, (uint32_t)o->max_ttl_ms);
  if (rc == 0 && state_dir_apply(opts) != 0)
    return EXIT_USAGE;
  if (rc == 0 && o->conn.prefix != NULL)
    rc = redlock_options_set_key_prefix(opts, o->conn.prefix);
  if (rc == 0 && cmd->lock)
    rc = redlock_options_set_retry(opts, 0, 200, 200); /* --wait 0: one attempt */
  if (rc == 0 && (o->connect_ms || o->request_ms))
    rc = redlock_options_set_timeouts(opts, o->connect_ms ? (uint32_t)o->connect_ms : 1000,
                                      o->request_ms ? (uint32_t)o->request_ms : 100);
  if (rc != 0) {
    err_msg("invalid settings: %s", redlock_strerror(rc));
    return rc == REDLOCK_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
  }
  return 0;
}

int hold_open(redlock_t **client, const redlock_options_t *opts) {
  int rc = redlock_open(client, opts);
  if (rc != 0) {
    err_msg("cannot start the client: %s", redlock_strerror(rc));
    return EXIT_INTERNAL;
  }
  return 0;
}

int hold_prepare(const hold_cmd_t *cmd, int argc, char **argv, hold_opts_t *o, fdset_t *inherited,
                 redlock_options_t **opts) {
  *opts = NULL;
  int status = hold_parse(cmd, argc, argv, o);
  if (status == 0)
    status = child_setup(inherited);
  if (status == 0)
    status = hold_options(cmd, o, opts);
  if (status == 0) /* both subcommands: elect once had no TLS at all */
    status = conn_apply(&o->conn, *opts);
  return status;
}
