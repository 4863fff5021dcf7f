/* cli_common.c: what the subcommands of the `redlock` tool share (see
 * cli_common.h): messages, the --help text, option-value parsers, the list
 * of masters, the --tls-* options and the option parser.  Kept apart from the subcommands so
 * that run, elect and status parse and report alike. */
#define _GNU_SOURCE /* getopt_long's optind, strtok_r */

#include "cli_common.h"
#include "cli_term.h"
#include "cli_warn.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- messages ------------------------------------------------------------------------ */

static const char *g_prog = "redlock";

int g_verbosity;

static void vmsg(const char *fmt, va_list ap) {
  char buf[2048], safe[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  /* Messages quote servers' replies: escaped for the terminal (cli_term.h). */
  cli_term_escape(buf, strlen(buf), safe, sizeof safe);
  fprintf(stderr, "%s: %s\n", g_prog, safe); /* one call: lines do not interleave */
}

void err_msg(const char *fmt, ...) {
  if (g_verbosity < 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

void info_msg(const char *fmt, ...) {
  if (g_verbosity < 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try '%s --help' for more information.\n", g_prog);
  return EXIT_USAGE;
}

void log_cb(int level, const char *msg, void *arg) {
  (void)arg;
  static const char *const names[] = {"debug", "info", "warn", "error"};
  const char *name = level >= 0 && level <= 3 ? names[level] : "log";
  char safe[2048];
  fprintf(stderr, "%s: [%s] %s\n", g_prog, name, cli_term_str(msg, safe, sizeof safe));
}

static const char HELP[] =
    "Usage: redlock run [OPTIONS] RESOURCE [--] COMMAND [ARGS...]\n"
    "       redlock elect [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock status [OPTIONS] RESOURCE\n"
    "       redlock doctor [OPTIONS] [URI...]\n"
    "       redlock --help | --version\n"
    "\n"
    "Like flock(1) across machines: a Redlock lock over N independent Redis masters\n"
    "(held when a majority, N/2 + 1, accepted it).\n"
    "\n"
    "run: take the lock on RESOURCE, run COMMAND with the fencing token in its\n"
    "environment, keep the lock alive while COMMAND runs, release it when COMMAND\n"
    "exits, and exit with COMMAND's status (128+N if a signal N killed it).  If the\n"
    "lock is lost, COMMAND gets SIGTERM, then SIGKILL after --grace, and redlock\n"
    "exits with 71.  SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to\n"
    "redlock are passed on to COMMAND.\n"
    "\n"
    "elect: campaign for leadership of NAME and run COMMAND while leader, with the\n"
    "term (a fencing token, larger than every earlier leader's) in REDLOCK_TERM and\n"
    "REDLOCK_FENCE.  If leadership is lost, COMMAND gets SIGTERM, then SIGKILL after\n"
    "--grace, and redlock campaigns again, running COMMAND anew when re-elected.\n"
    "When COMMAND exits by itself, redlock resigns (the next campaigner takes over at\n"
    "once) and exits with COMMAND's status.  Options as for run, except --wait,\n"
    "-E and --metrics-*; --ttl defaults to 10s.\n"
    "\n"
    "status: show, per master, whether it answers, the value holding the key, its\n"
    "PTTL, the fence counter and the master's uptime.  A sentinel voter's master is\n"
    "asked of its sentinels and shown (MASTER-NAME@SENTINEL -> HOST:PORT).  A\n"
    "cluster voter's slot map is read from its seeds, and the primary that owns the\n"
    "key's hash slot is asked and shown (cluster@SEED -> HOST:PORT).\n"
    "\n"
    "doctor: for each voter (each URI, else --node or REDLOCK_NODES), what it is\n"
    "(server, version, role, replicas) and whether it can vote with the options its\n"
    "URI gives: connection and AUTH, role master, the library's scripts (SCRIPT\n"
    "LOAD, EVALSHA, EVAL, TIME in a script, the release's PUBLISH), SUBSCRIBE, the\n"
    "INFO fields it reads, the WAIT / WAITAOF ack asked with wait= / waitaof=,\n"
    "persistence, the ACL user's permission for every command the library sends\n"
    "(ACL DRYRUN), the round-trip time and the clock's rate against ours.  One\n"
    "line per check: ok, warn, FAIL or skip, and why.  A sentinel voter's master is\n"
    "asked of its sentinels and checked.  A cluster voter's slot map is read from\n"
    "its seeds: its coverage (slots without a primary), cluster_state, and every\n"
    "primary checked as a master, each line naming it.\n"
    "\n"
    "Options (all commands):\n"
    "  -n, --node URI           a Redis master; repeat for each (usually 3 or 5):\n"
    "                           redis://[[user]:password@]host[:port][/db],\n"
    "                           rediss://... (TLS) or unix:///path/to/socket;\n"
    "                           or a voter of another kind:\n"
    "                           redis-sentinel://HOST:PORT[,...]/MASTER-NAME,\n"
    "                           redis-cluster://HOST:PORT[,...] (a whole Redis\n"
    "                           Cluster: one vote, from the primary that owns\n"
    "                           the key's slot), rediss-sentinel://,\n"
    "                           rediss-cluster:// (TLS).\n"
    "                           Without --node, the\n"
    "                           comma-separated list in REDLOCK_NODES is used\n"
    "  -p, --key-prefix PREFIX  Redis key = PREFIX + RESOURCE (default: none)\n"
    "      --tls-ca PATH        CA certificates (PEM file, or hashed directory)\n"
    "                           trusted for rediss:// masters (default: the\n"
    "                           system's store)\n"
    "      --tls-cert FILE      client certificate (PEM), for masters that require\n"
    "                           one; with --tls-key\n"
    "      --tls-key FILE       the client certificate's private key (PEM)\n"
    "      --tls-server-name NAME  name the masters' certificates must carry (and\n"
    "                           SNI), instead of each URI's host\n"
    "      --tls-insecure       check neither the certificate chain nor the name\n"
    "                           (encrypted, not authenticated: for tests only)\n"
    "                           Environment: REDLOCK_TLS_CA, REDLOCK_TLS_CERT,\n"
    "                           REDLOCK_TLS_KEY, REDLOCK_TLS_SERVER_NAME,\n"
    "                           REDLOCK_TLS_INSECURE=1 (options take precedence)\n"
    "  -q, --quiet              no messages on stderr (usage errors excepted)\n"
    "  -v, --verbose            progress and the library's log; twice for debug\n"
    "  -h, --help               this help\n"
    "  -V, --version            the library's version\n"
    "\n"
    "Options of run and elect (MS: milliseconds, or with a suffix: 500ms, 30s, 2m):\n"
    "  -t, --ttl MS             lock TTL, renewed while COMMAND runs (default 30s,\n"
    "                           or the max TTL if smaller)\n"
    "  -w, --wait MS            wait up to MS for the lock; 0 = one try (default 0)\n"
    "  -E, --conflict-exit-code N  exit status when the lock is busy or the wait\n"
    "                           ran out (default 75)\n"
    "  -f, --fence-env NAME     environment variable for the fencing token\n"
    "                           (default REDLOCK_FENCE)\n"
    "      --no-quarantine      count the votes of freshly (re)started or promoted\n"
    "                           masters at once (see Quarantines below)\n"
    "      --max-ttl MS         largest allowed TTL, also the quarantine length\n"
    "                           (default 60s); REDLOCK_STATE_DIR: where runs share\n"
    "                           first sightings of promoted masters (default\n"
    "                           ~/.local/state/redlock; empty: none)\n"
    "  -g, --grace MS           after a lost lock, SIGKILL COMMAND this long after\n"
    "                           SIGTERM (default 5s)\n"
    "  -G, --process-group      run COMMAND in its own process group and signal the\n"
    "                           whole group (COMMAND then cannot read the terminal)\n"
    "      --connect-timeout MS connect + handshake bound per master (default 1s)\n"
    "      --request-timeout MS bound on each round of requests (default 100ms)\n"
    "      --metrics-file PATH  when COMMAND exits (or the lock was not taken),\n"
    "                           write the client's stats to PATH (replaced\n"
    "                           atomically; see docs/observability.md)\n"
    "      --metrics-format F   prometheus (default) or json\n"
    "\n"
    "Options of status:\n"
    "      --timeout MS         connect and reply timeout per master (default 1s)\n"
    "      --json               one JSON object instead of the table\n"
    "      --no-quarantine, --max-ttl MS  judge the quarantines as run would\n"
    "\n"
    "Options of doctor (before the URIs; -p names the doctor's own key\n"
    "PREFIX redlock-doctor:..., so that ACL key patterns are checked):\n"
    "      --timeout MS         connect and reply timeout per server (default 1s)\n"
    "      --clock-ms MS        interval of the clock-rate measure (default 1s;\n"
    "                           0: not measured)\n"
    "      --json               one JSON object instead of the table\n"
    "      --no-quarantine, --max-ttl MS  judge the quarantines as run would\n"
    "\n"
    "Quarantines: a master without persistence that restarts has forgotten the\n"
    "locks it held, so by default a master whose uptime is below the max TTL does\n"
    "not count towards a quorum until it is that old (restart quarantine); a\n"
    "promoted replica, or another server found at a master's address, does not\n"
    "count for a max TTL after it was seen (failover quarantine).  Masters you have\n"
    "just started therefore give \"no quorum\" for up to a minute, and run, status\n"
    "and doctor name each quarantine and when it ends: wait, use --no-quarantine\n"
    "(only if no lock can have been held on them before, e.g. a test setup or\n"
    "masters with persistence), or a smaller --max-ttl (and --ttl).\n"
    "\n"
    "COMMAND's environment: REDLOCK_FENCE (or --fence-env NAME) = the fencing token,\n"
    "a number larger than any earlier holder's; REDLOCK_RESOURCE = RESOURCE;\n"
    "REDLOCK_VALUE = the lock's value in Redis.  REDLOCK_NODES (it may hold\n"
    "passwords) is removed from it, under run and elect.\n"
    "\n"
    "Exit status of elect: COMMAND's status, or 64, 70, 126, 127 as for run, or\n"
    "128+N when signal N arrived while campaigning.\n"
    "Exit status of run: COMMAND's status (0..255; 128+N if killed by signal N),\n"
    "or 64 usage error, 69 no quorum (too few masters answered), 70 internal\n"
    "error, 71 lock lost while COMMAND ran, 75 lock busy or --wait ran out (see\n"
    "-E), 126 COMMAND not executable, 127 COMMAND not found, 128+N redlock got\n"
    "signal N while waiting for the lock.  These can collide with COMMAND's own\n"
    "statuses.  status: 0 when a quorum of masters answered, 69 otherwise, 64.\n"
    "doctor: 0 when every voter can vote now, 1 when one cannot, 2 when all can but\n"
    "some only once their quarantine ends, 64.\n"
    "\n"
    "See redlock(1) and docs/cli.md.\n";

void print_help(void) { fputs(HELP, stdout); }

void print_version(void) { printf("redlock %s\n", redlock_version()); }

/* ---- argument parsing helpers ------------------------------------------------------- */

int parse_ms(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
  if (s == NULL || !isdigit((unsigned char)s[0]))
    return -1;
  uint64_t v = 0;
  const char *p = s;
  while (isdigit((unsigned char)*p)) {
    v = v * 10 + (uint64_t)(*p - '0');
    if (v > UINT32_MAX)
      return -1;
    p++;
  }
  uint64_t mult = 1;
  if (*p == '\0' || strcmp(p, "ms") == 0)
    mult = 1;
  else if (strcmp(p, "s") == 0)
    mult = 1000;
  else if (strcmp(p, "m") == 0)
    mult = 60000;
  else
    return -1;
  v *= mult;
  if (v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

int parse_int_range(const char *s, long min, long max, long *out) {
  if (s == NULL || !isdigit((unsigned char)s[0]))
    return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

int valid_env_name(const char *s) {
  if (s == NULL || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return 0;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return 0;
  return 1;
}

void json_str(const char *s) {
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      printf("\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f)
      printf("\\u%04x", *p);
    else
      putchar(*p);
  }
  putchar('"');
}

/* ---- the masters: --node, else REDLOCK_NODES ----------------------------------------- */

void nodes_free(nodes_t *nodes) {
  for (size_t i = 0; i < nodes->n; i++) {
    free(nodes->uris[i]);
    node_addr_clear(&nodes->addrs[i]);
  }
  nodes->n = 0;
}

int nodes_add(nodes_t *nodes, const char *uri, const char *source) {
  if (nodes->n >= REDLOCK_MAX_NODES)
    return usage_error("too many masters (at most %d)", REDLOCK_MAX_NODES);
  char why[256];
  node_addr_t addr;
  /* Never echo the URI itself: it may hold a password. */
  if (uri_parse(uri, &addr, why, sizeof why) != 0)
    return usage_error("invalid master URI (%s #%zu): %s", source, nodes->n + 1,
                       why[0] ? why : "out of memory");
  for (size_t i = 0; i < nodes->n; i++) {
    if (strcmp(nodes->addrs[i].label, addr.label) == 0) {
      int rc = usage_error("master %s given twice: it would be counted twice towards "
                           "the quorum",
                           addr.label);
      node_addr_clear(&addr);
      return rc;
    }
  }
  nodes->uris[nodes->n] = strdup(uri);
  if (nodes->uris[nodes->n] == NULL) {
    node_addr_clear(&addr);
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  nodes->addrs[nodes->n++] = addr;
  return 0;
}

/* s without its leading and trailing spaces (in place). */
static char *trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  size_t len = strlen(s);
  while (len > 0 && isspace((unsigned char)s[len - 1]))
    s[--len] = '\0';
  return s;
}

/* The comma-separated URIs of list (modified in place) to nodes.  A comma
 * also separates a sentinel or cluster voter's HOST:PORTs and waitaof=L,R,
 * so an item without "://" belongs to the URI before it: the commas
 * between them are put back. */
static int nodes_add_list(nodes_t *nodes, char *list) {
  char *uri = NULL;
  for (char *item = list, *next; item != NULL; item = next) {
    next = strchr(item, ',');
    if (next != NULL)
      *next++ = '\0';
    char *t = trim(item);
    if (uri != NULL && *t != '\0' && strstr(t, "://") == NULL) {
      /* t lies after uri's end: moved left, behind the comma put back */
      size_t len = strlen(uri);
      uri[len] = ',';
      memmove(uri + len + 1, t, strlen(t) + 1);
      continue;
    }
    if (uri != NULL) {
      int rc = nodes_add(nodes, uri, "REDLOCK_NODES");
      if (rc != 0)
        return rc;
    }
    uri = *t != '\0' ? t : NULL;
  }
  return uri != NULL ? nodes_add(nodes, uri, "REDLOCK_NODES") : 0;
}

int nodes_finish(nodes_t *nodes) {
  const char *env = getenv("REDLOCK_NODES");
  /* The masters there already came from the command line. */
  cli_warn_argv_password(nodes, nodes->n);
  if (nodes->n == 0 && env != NULL) {
    char *copy = strdup(env);
    if (copy == NULL) {
      err_msg("out of memory");
      return EXIT_INTERNAL;
    }
    int rc = nodes_add_list(nodes, copy);
    free(copy);
    if (rc != 0)
      return rc;
  }
  if (nodes->n == 0)
    return usage_error("no Redis masters: give --node URI (one per master) or set "
                       "REDLOCK_NODES");
  return 0;
}

/* RESOURCE and --key-prefix within the library's limits.  0 or EXIT_USAGE. */
static int check_resource(const char *resource, const char *prefix) {
  size_t len = strlen(resource);
  if (len == 0 || len > REDLOCK_MAX_RESOURCE_LEN)
    return usage_error("RESOURCE must be 1 to %d bytes", REDLOCK_MAX_RESOURCE_LEN);
  if (prefix != NULL && strlen(prefix) > REDLOCK_MAX_PREFIX_LEN)
    return usage_error("--key-prefix must be at most %d bytes", REDLOCK_MAX_PREFIX_LEN);
  return 0;
}

/* ---- TLS options (every subcommand) ----------------------------------------------- */

static const char *env_or(const char *given, const char *name) {
  if (given != NULL)
    return given;
  const char *v = getenv(name);
  return v != NULL && v[0] != '\0' ? v : NULL;
}

int state_dir_apply(redlock_options_t *opts) {
  char dir[4096];
  const char *env = getenv("REDLOCK_STATE_DIR");
  const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
  if (env != NULL) {
    if (env[0] == '\0')
      return 0; /* none */
    snprintf(dir, sizeof dir, "%s", env);
  } else if (xdg != NULL && xdg[0] == '/') {
    snprintf(dir, sizeof dir, "%s/redlock", xdg);
  } else if (home != NULL && home[0] == '/') {
    snprintf(dir, sizeof dir, "%s/.local/state/redlock", home);
  } else {
    return 0;
  }
  if (redlock_options_set_state_dir(opts, dir) != 0)
    return usage_error("REDLOCK_STATE_DIR must be an absolute path (or empty: none), got '%s'",
                       dir);
  return 0;
}

int tls_apply(tls_opts_t *t, redlock_options_t *opts) {
  t->ca = env_or(t->ca, "REDLOCK_TLS_CA");
  t->cert = env_or(t->cert, "REDLOCK_TLS_CERT");
  t->key = env_or(t->key, "REDLOCK_TLS_KEY");
  t->server_name = env_or(t->server_name, "REDLOCK_TLS_SERVER_NAME");
  if (t->insecure < 0) {
    const char *v = env_or(NULL, "REDLOCK_TLS_INSECURE");
    if (v != NULL && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
      return usage_error("REDLOCK_TLS_INSECURE must be 0 or 1, got '%s'", v);
    t->insecure = v != NULL && strcmp(v, "1") == 0;
  }
  int any = t->ca || t->cert || t->key || t->server_name || t->insecure;
  if (!any)
    return 0;
  if (!redlock_tls_supported())
    return usage_error("--tls-* options: this redlock was built without TLS");
  if ((t->cert == NULL) != (t->key == NULL))
    return usage_error("--tls-cert and --tls-key go together");
  /* --tls-ca names a file or a directory of hashed certificates. */
  struct stat st;
  int ca_is_dir = t->ca != NULL && stat(t->ca, &st) == 0 && S_ISDIR(st.st_mode);
  int rc = redlock_options_set_tls(opts, ca_is_dir ? NULL : t->ca, ca_is_dir ? t->ca : NULL,
                                   t->cert, t->key);
  if (rc == 0 && t->server_name != NULL)
    rc = redlock_options_set_tls_server_name(opts, t->server_name);
  if (rc == 0 && t->insecure) {
    rc = redlock_options_set_tls_verify(opts, 0);
    if (!t->warned)
      cli_warn_tls_insecure();
    t->warned = 1;
  }
  if (rc != 0)
    return usage_error("invalid TLS settings (%s): see the message above", redlock_strerror(rc));
  return 0;
}

void setter_log_cb(int level, const char *msg, void *arg) {
  (void)level;
  (void)arg;
  err_msg("%s", msg);
}

/* ---- the options of every subcommand, and the one parser ------------------------- */

/* The connection options: the head of every subcommand's table. */
static const struct option CONN_LONGS[] = {
    {"node", required_argument, NULL, 'n'},
    {"key-prefix", required_argument, NULL, 'p'},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"tls-server-name", required_argument, NULL, OPT_TLS_SERVER_NAME},
    {"tls-insecure", no_argument, NULL, OPT_TLS_INSECURE},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'}};
#define N_CONN_LONGS (sizeof CONN_LONGS / sizeof CONN_LONGS[0])
#define CONN_SHORTS "n:p:qvhV"
/* Room for every subcommand's table (run's is the largest). */
#define MAX_LONGS 48

static const char *describe_opt(int opt, char **argv) {
  static char buf[8];
  if (opt != 0 && isprint(opt) && opt != '?') {
    snprintf(buf, sizeof buf, "-%c", opt);
    return buf;
  }
  return argv[optind - 1];
}

/* One connection option: 0, -1 after --help / --version, an exit status,
 * or OPT_NOT_MINE. */
static int conn_option(conn_opts_t *c, int opt, const char *arg, int count_verbose) {
  switch (opt) {
  case 'n':
    c->nodes.from_cli = 1;
    return nodes_add(&c->nodes, arg, "--node");
  case 'p':
    c->prefix = arg;
    return 0;
  case OPT_TLS_CA:
    c->tls.ca = arg;
    return 0;
  case OPT_TLS_CERT:
    c->tls.cert = arg;
    return 0;
  case OPT_TLS_KEY:
    c->tls.key = arg;
    return 0;
  case OPT_TLS_SERVER_NAME:
    c->tls.server_name = arg;
    return 0;
  case OPT_TLS_INSECURE:
    c->tls.insecure = 1;
    return 0;
  case 'q':
    g_verbosity = -1;
    return 0;
  case 'v':
    if (count_verbose && g_verbosity >= 0 && g_verbosity < 2)
      g_verbosity++;
    return 0;
  case 'h':
    print_help();
    return -1;
  case 'V':
    print_version();
    return -1;
  default:
    return OPT_NOT_MINE;
  }
}

/* CONN_LONGS, then the subcommand's tables, into all (MAX_LONGS + 1
 * entries).  0, or -1 when they do not fit (a programming error). */
static int join_longs(const cmd_options_t *cmd, struct option *all) {
  size_t n = 0;
  for (size_t i = 0; i < N_CONN_LONGS; i++)
    all[n++] = CONN_LONGS[i];
  for (const struct option *const *t = cmd->longs; t != NULL && *t != NULL; t++)
    for (const struct option *o = *t; o->name != NULL; o++) {
      if (n == MAX_LONGS)
        return -1;
      all[n++] = *o;
    }
  all[n] = (struct option){NULL, 0, NULL, 0};
  return 0;
}

int parse_options(int argc, char **argv, conn_opts_t *conn, const cmd_options_t *cmd) {
  memset(conn, 0, sizeof *conn);
  conn->tls.insecure = -1;
  struct option longs[MAX_LONGS + 1];
  char shorts[64];
  int len = snprintf(shorts, sizeof shorts, "+:" CONN_SHORTS "%s", cmd->shorts);
  if (join_longs(cmd, longs) != 0 || len < 0 || (size_t)len >= sizeof shorts) {
    err_msg("internal error: too many options");
    return EXIT_INTERNAL;
  }
  optind = 1;
  opterr = 0;
  int opt;
  while ((opt = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    if (opt == ':')
      return usage_error("option %s needs a value", argv[optind - 1]);
    int rc = conn_option(conn, opt, optarg, cmd->count_verbose);
    if (rc == OPT_NOT_MINE)
      rc = cmd->take(cmd->ctx, opt, optarg);
    if (rc == OPT_NOT_MINE) /* '?': getopt_long knows it not either */
      return usage_error("unknown option %s", describe_opt(optopt, argv));
    if (rc != 0)
      return rc;
  }
  return 0;
}

int conn_finish(conn_opts_t *conn, const char *resource) {
  int rc = check_resource(resource, conn->prefix);
  if (rc == 0)
    rc = nodes_finish(&conn->nodes);
  return rc;
}
