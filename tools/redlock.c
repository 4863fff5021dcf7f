/* redlock.c: the `redlock` command, "flock(1) across machines".
 *
 *   redlock run [OPTIONS] RESOURCE [--] COMMAND [ARGS...]
 *   redlock elect [OPTIONS] NAME [--] COMMAND [ARGS...]
 *   redlock status [OPTIONS] RESOURCE
 *
 * `run` takes a Redlock lock (fencing on), runs COMMAND with the fencing token
 * in its environment, keeps the lock alive with redlock_watch() while COMMAND
 * runs, releases it when COMMAND exits and exits with COMMAND's status.  If the
 * lock is lost, COMMAND gets SIGTERM (SIGKILL after a grace period) and
 * redlock exits with its own "lost" status.  `status` shows, per master,
 * whether it answers, who holds the key, its PTTL and the fence counter, over
 * plain synchronous hiredis connections.  `elect` campaigns for leadership
 * (redlock_elect) and runs COMMAND while leader (see its section below).
 * docs/cli.md and docs/redlock.1
 * document the options and the exit statuses (the EXIT_* values below).
 *
 * Threads and signals: the main thread blocks SIGCHLD and the signals it
 * forwards, and waits for them with sigtimedwait(); the library's I/O thread
 * (which blocks every signal) wakes it with pthread_kill(SIGCHLD) after it has
 * set a flag (lock granted, lock lost).  COMMAND is started with posix_spawnp()
 * (no fork in a threaded process) with the original signal mask, in our
 * process group (or its own with --process-group). */
#define _GNU_SOURCE /* getopt_long, SI_KERNEL, environ, strsignal */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "names.h"   /* FENCE_KEY_PREFIX */
#include "options.h" /* struct redlock_options, for tls_client_new */
#include "redlock.h"
#include "tls.h" /* status's TLS connections, from the redlock_internal target */
#include "uri.h" /* uri_parse, from the redlock_internal target */

extern char **environ;

/* ---- exit statuses (documented in docs/cli.md and docs/redlock.1) ------------------ */
enum {
  EXIT_USAGE = 64,       /* EX_USAGE: bad command line */
  EXIT_NOQUORUM = 69,    /* EX_UNAVAILABLE: too few masters answered */
  EXIT_INTERNAL = 70,    /* EX_SOFTWARE: library or system error */
  EXIT_LOST = 71,        /* the lock was lost while COMMAND ran */
  EXIT_BUSY = 75,        /* EX_TEMPFAIL: held by someone else / --wait ran out */
  EXIT_CANNOT_EXEC = 126, /* COMMAND found but could not be executed */
  EXIT_NOT_FOUND = 127   /* COMMAND not found */
};

#define DEFAULT_TTL_MS 30000u
#define DEFAULT_GRACE_MS 5000u
#define DEFAULT_STATUS_TIMEOUT_MS 1000u
#define LIBRARY_DEFAULT_MAX_TTL_MS 60000u /* redlock.h: max TTL 60 s */
#define DEFAULT_FENCE_ENV "REDLOCK_FENCE"

static const char *g_prog = "redlock";

/* ---- messages ------------------------------------------------------------------------ */

static int g_verbosity; /* -1 quiet, 0 default, 1 -v, 2 -vv */

static void vmsg(const char *fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  fprintf(stderr, "%s: %s\n", g_prog, buf); /* one call: lines do not interleave */
}

__attribute__((format(printf, 1, 2))) static void err_msg(const char *fmt, ...) {
  if (g_verbosity < 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

__attribute__((format(printf, 1, 2))) static void info_msg(const char *fmt, ...) {
  if (g_verbosity < 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

/* Usage errors are printed even with --quiet. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try '%s --help' for more information.\n", g_prog);
  return EXIT_USAGE;
}

static void log_cb(int level, const char *msg, void *arg) {
  (void)arg;
  static const char *const names[] = {"debug", "info", "warn", "error"};
  const char *name = level >= 0 && level <= 3 ? names[level] : "log";
  fprintf(stderr, "%s: [%s] %s\n", g_prog, name, msg);
}

static const char HELP[] =
    "Usage: redlock run [OPTIONS] RESOURCE [--] COMMAND [ARGS...]\n"
    "       redlock elect [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock status [OPTIONS] RESOURCE\n"
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
    "once) and exits with COMMAND's status.  Options as for run, except --wait and\n"
    "-E; --ttl defaults to 10s.\n"
    "\n"
    "status: show, per master, whether it answers, the value holding the key, its\n"
    "PTTL, the fence counter and the master's uptime.\n"
    "\n"
    "Options (all commands):\n"
    "  -n, --node URI           a Redis master; repeat for each (usually 3 or 5):\n"
    "                           redis://[[user]:password@]host[:port][/db],\n"
    "                           rediss://... (TLS) or unix:///path/to/socket.\n"
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
    "      --no-quarantine      count the votes of freshly (re)started masters at\n"
    "                           once (see Restart quarantine below)\n"
    "      --max-ttl MS         largest allowed TTL, also the quarantine length\n"
    "                           (default 60s)\n"
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
    "\n"
    "Restart quarantine: a master without persistence that restarts has forgotten\n"
    "the locks it held, so by default a master whose uptime is below the max TTL\n"
    "does not count towards a quorum until it is that old.  Masters you have just\n"
    "started therefore give \"no quorum\" for up to a minute: use --no-quarantine\n"
    "(only if no lock can have been held on them before, e.g. a test setup or\n"
    "masters with persistence), or a smaller --max-ttl (and --ttl).\n"
    "\n"
    "COMMAND's environment: REDLOCK_FENCE (or --fence-env NAME) = the fencing token,\n"
    "a number larger than any earlier holder's; REDLOCK_RESOURCE = RESOURCE;\n"
    "REDLOCK_VALUE = the lock's value in Redis.\n"
    "\n"
    "Exit status of elect: COMMAND's status, or 64, 70, 126, 127 as for run, or\n"
    "128+N when signal N arrived while campaigning.\n"
    "Exit status of run: COMMAND's status (0..255; 128+N if killed by signal N),\n"
    "or 64 usage error, 69 no quorum (too few masters answered), 70 internal\n"
    "error, 71 lock lost while COMMAND ran, 75 lock busy or --wait ran out (see\n"
    "-E), 126 COMMAND not executable, 127 COMMAND not found, 128+N redlock got\n"
    "signal N while waiting for the lock.  These can collide with COMMAND's own\n"
    "statuses.  status: 0 when a quorum of masters answered, 69 otherwise, 64.\n"
    "\n"
    "See redlock(1) and docs/cli.md.\n";

/* ---- argument parsing helpers ------------------------------------------------------- */

/* "1500", "1500ms", "30s", "2m" -> milliseconds in [min, max].  0 or -1. */
static int parse_ms(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
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

static int parse_int_range(const char *s, long min, long max, long *out) {
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

static int valid_env_name(const char *s) {
  if (s == NULL || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return 0;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return 0;
  return 1;
}

/* ---- common options: nodes, prefix, verbosity ----------------------------------- */

typedef struct {
  char *uris[REDLOCK_MAX_NODES];
  node_addr_t addrs[REDLOCK_MAX_NODES];
  size_t n;
  int from_cli; /* at least one --node */
} nodes_t;

static void nodes_free(nodes_t *nodes) {
  for (size_t i = 0; i < nodes->n; i++) {
    free(nodes->uris[i]);
    node_addr_clear(&nodes->addrs[i]);
  }
  nodes->n = 0;
}

/* Parses and adds one URI (source names it in messages).  0 or EXIT_USAGE. */
static int nodes_add(nodes_t *nodes, const char *uri, const char *source) {
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

/* Without --node: the comma-separated REDLOCK_NODES.  0 or an exit status. */
static int nodes_finish(nodes_t *nodes) {
  if (nodes->n == 0) {
    const char *env = getenv("REDLOCK_NODES");
    if (env != NULL) {
      char *copy = strdup(env);
      if (copy == NULL) {
        err_msg("out of memory");
        return EXIT_INTERNAL;
      }
      char *save = NULL;
      for (char *tok = strtok_r(copy, ",", &save); tok != NULL;
           tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
          tok++;
        size_t len = strlen(tok);
        while (len > 0 && isspace((unsigned char)tok[len - 1]))
          tok[--len] = '\0';
        if (len == 0)
          continue;
        int rc = nodes_add(nodes, tok, "REDLOCK_NODES");
        if (rc != 0) {
          free(copy);
          return rc;
        }
      }
      free(copy);
    }
  }
  if (nodes->n == 0)
    return usage_error("no Redis masters: give --node URI (one per master) or set "
                       "REDLOCK_NODES");
  return 0;
}

static int check_resource(const char *resource, const char *prefix) {
  size_t len = strlen(resource);
  if (len == 0 || len > REDLOCK_MAX_RESOURCE_LEN)
    return usage_error("RESOURCE must be 1 to %d bytes", REDLOCK_MAX_RESOURCE_LEN);
  if (prefix != NULL && strlen(prefix) > REDLOCK_MAX_PREFIX_LEN)
    return usage_error("--key-prefix must be at most %d bytes", REDLOCK_MAX_PREFIX_LEN);
  return 0;
}

/* ---- TLS options (both commands) -------------------------------------------------- */

/* --tls-* options; each falls back to its REDLOCK_TLS_* variable. */
typedef struct {
  const char *ca, *cert, *key, *server_name;
  int insecure; /* -1: not given */
} tls_opts_t;

enum { OPT_TLS_CA = 300, OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_SERVER_NAME, OPT_TLS_INSECURE };

#define TLS_LONG_OPTIONS                                                                       \
  {"tls-ca", required_argument, NULL, OPT_TLS_CA},                                             \
      {"tls-cert", required_argument, NULL, OPT_TLS_CERT},                                     \
      {"tls-key", required_argument, NULL, OPT_TLS_KEY},                                       \
      {"tls-server-name", required_argument, NULL, OPT_TLS_SERVER_NAME},                       \
      {"tls-insecure", no_argument, NULL, OPT_TLS_INSECURE}

/* 1 when opt was a --tls-* option (stored), else 0. */
static int tls_opt(tls_opts_t *t, int opt, const char *arg) {
  switch (opt) {
  case OPT_TLS_CA: t->ca = arg; return 1;
  case OPT_TLS_CERT: t->cert = arg; return 1;
  case OPT_TLS_KEY: t->key = arg; return 1;
  case OPT_TLS_SERVER_NAME: t->server_name = arg; return 1;
  case OPT_TLS_INSECURE: t->insecure = 1; return 1;
  default: return 0;
  }
}

static const char *env_or(const char *given, const char *name) {
  if (given != NULL)
    return given;
  const char *v = getenv(name);
  return v != NULL && v[0] != '\0' ? v : NULL;
}

/* Fills in the environment's values and applies them to opts.  0 or an
 * exit status (with the reason on stderr). */
static int tls_apply(tls_opts_t *t, redlock_options_t *opts) {
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
  if (rc == 0 && t->insecure)
    rc = redlock_options_set_tls_verify(opts, 0);
  if (rc != 0)
    return usage_error("invalid TLS settings (%s): see the message above", redlock_strerror(rc));
  return 0;
}

/* The log callback the TLS setters report through before any client exists. */
static void setter_log_cb(int level, const char *msg, void *arg) {
  (void)level;
  (void)arg;
  err_msg("%s", msg);
}

static const char *describe_opt(int opt, char **argv) {
  static char buf[8];
  if (opt != 0 && isprint(opt) && opt != '?') {
    snprintf(buf, sizeof buf, "-%c", opt);
    return buf;
  }
  return argv[optind - 1];
}

/* ---- one master, synchronously (status, and diagnosis of a failed lock) ------------- */

typedef struct {
  char state[320]; /* "up", or why not */
  int up;
  char *value; /* NULL: no key */
  long long pttl;
  char fence[32];  /* "" when no counter */
  char uptime[32]; /* "" when unknown */
  long long uptime_s; /* -1 when unknown */
} master_report_t;

/* A printable copy of s (len bytes): other bytes and '\\' as \xNN.  NULL
 * when out of memory. */
static char *escape_value(const char *s, size_t len) {
  char *out = malloc(len * 4 + 1);
  if (out == NULL)
    return NULL;
  char *p = out;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      *p++ = (char)c;
    } else {
      sprintf(p, "\\x%02x", c);
      p += 4;
    }
  }
  *p = '\0';
  return out;
}

static int reply_error(redisReply *r, char *why, size_t size, const char *what) {
  if (r == NULL)
    return -1;
  if (r->type == REDIS_REPLY_ERROR) {
    snprintf(why, size, "%s: %.*s", what, (int)r->len, r->str);
    return 1;
  }
  return 0;
}

/* The SSL_CTX of status's (and run's diagnostic) connections to rediss://
 * masters; NULL when none is listed.  A process-wide program global, not
 * library state. */
static tls_client_t *g_tls;

static int tls_for_probes(const redlock_options_t *opts, const nodes_t *nodes) {
  int any = 0;
  for (size_t i = 0; i < nodes->n; i++)
    any |= nodes->addrs[i].tls;
  if (!any || g_tls != NULL)
    return 0;
  char why[384];
  if (tls_client_new(&g_tls, opts, why, sizeof why) != 0) {
    err_msg("TLS: %s", why);
    return EXIT_USAGE;
  }
  return 0;
}

static void probe_master(const node_addr_t *addr, const char *key, const char *fence_key,
                         uint64_t timeout_ms, master_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  rep->pttl = -2;
  rep->uptime_s = -1;
  struct timeval tv = {(time_t)(timeout_ms / 1000), (suseconds_t)(timeout_ms % 1000) * 1000};
  redisContext *c = addr->kind == NODE_ADDR_UNIX
                        ? redisConnectUnixWithTimeout(addr->path, tv)
                        : redisConnectWithTimeout(addr->host, addr->port, tv);
  if (c == NULL) {
    snprintf(rep->state, sizeof rep->state, "down (out of memory)");
    return;
  }
  if (c->err) {
    snprintf(rep->state, sizeof rep->state, "down (%s)", c->errstr);
    redisFree(c);
    return;
  }
  redisSetTimeout(c, tv);
  redisReply *r = NULL;
  char why[256], io_why[256];
  void *ssl = NULL;
  int got_reply = 0;
/* Why the connection failed: TLS's reason when it has one, else hiredis'. */
#define IO_WHY()                                                                               \
  (ssl != NULL && tls_explain(ssl, !got_reply, c->errstr, io_why, sizeof io_why) ? io_why      \
                                                                                  : c->errstr)
  if (addr->tls) {
    /* The same checks as the library's connections (tls.c), done here
     * synchronously within the timeout set above. */
    if (g_tls == NULL) {
      snprintf(rep->state, sizeof rep->state, "down (TLS is not set up)");
      redisFree(c);
      return;
    }
    if ((ssl = tls_attach(g_tls, c, addr->host, why, sizeof why)) == NULL) {
      snprintf(rep->state, sizeof rep->state, "down (%s)", why);
      redisFree(c);
      return;
    }
  }
  if (addr->password != NULL) {
    if (addr->user != NULL)
      r = redisCommand(c, "AUTH %s %s", addr->user, addr->password);
    else
      r = redisCommand(c, "AUTH %s", addr->password);
    if (reply_error(r, why, sizeof why, "AUTH") != 0) {
      snprintf(rep->state, sizeof rep->state, "%s (%s)", r ? "error" : "down", r ? why : IO_WHY());
      goto done;
    }
    got_reply = 1;
    freeReplyObject(r);
    r = NULL;
  }
  if (addr->db != 0) {
    r = redisCommand(c, "SELECT %d", addr->db);
    if (reply_error(r, why, sizeof why, "SELECT") != 0) {
      snprintf(rep->state, sizeof rep->state, "%s (%s)", r ? "error" : "down",
               r ? why : IO_WHY());
      goto done;
    }
    got_reply = 1;
    freeReplyObject(r);
    r = NULL;
  }
  /* One round trip: the four commands pipelined. */
  redisAppendCommand(c, "GET %s", key);
  redisAppendCommand(c, "PTTL %s", key);
  redisAppendCommand(c, "GET %s", fence_key);
  redisAppendCommand(c, "INFO server");
  redisReply *replies[4] = {NULL, NULL, NULL, NULL};
  for (int i = 0; i < 4; i++) {
    void *p = NULL;
    if (redisGetReply(c, &p) != REDIS_OK) {
      snprintf(rep->state, sizeof rep->state, "down (%s)", IO_WHY());
      for (int j = 0; j < i; j++)
        freeReplyObject(replies[j]);
      goto done;
    }
    replies[i] = p;
  }
  rep->up = 1;
  snprintf(rep->state, sizeof rep->state, "up");
  if (replies[0]->type == REDIS_REPLY_STRING) {
    rep->value = escape_value(replies[0]->str, replies[0]->len);
  } else if (replies[0]->type == REDIS_REPLY_ERROR) {
    /* WRONGTYPE: the master answers, the key is not a lock.  NOAUTH, NOPERM
     * and the like: it does not answer for us. */
    int answers = strncmp(replies[0]->str, "WRONGTYPE", 9) == 0;
    rep->up = answers;
    snprintf(rep->state, sizeof rep->state, "%s (GET: %.*s)", answers ? "up" : "error",
             (int)replies[0]->len, replies[0]->str);
  }
  if (replies[1]->type == REDIS_REPLY_INTEGER)
    rep->pttl = replies[1]->integer;
  if (replies[2]->type == REDIS_REPLY_STRING)
    snprintf(rep->fence, sizeof rep->fence, "%.*s", (int)replies[2]->len, replies[2]->str);
  if (replies[3]->type == REDIS_REPLY_STRING) {
    const char *u = strstr(replies[3]->str, "uptime_in_seconds:");
    if (u != NULL) {
      long long secs = strtoll(u + strlen("uptime_in_seconds:"), NULL, 10);
      snprintf(rep->uptime, sizeof rep->uptime, "%llds", secs);
      rep->uptime_s = secs;
    }
  }
  for (int i = 0; i < 4; i++)
    freeReplyObject(replies[i]);
done:
#undef IO_WHY
  if (r != NULL)
    freeReplyObject(r);
  redisFree(c);
}

/* ---- run: signals and wake-ups ------------------------------------------------------ */

/* Signals passed on to COMMAND (and that abort a wait for the lock). */
static const int FORWARDED[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define N_FORWARDED (sizeof FORWARDED / sizeof FORWARDED[0])

static pthread_t g_main_thread;
static sigset_t g_waitset;     /* blocked on the main thread and waited for */
static sigset_t g_orig_mask;   /* restored for COMMAND */
static sigset_t g_child_dfl;   /* dispositions reset to default for COMMAND */

/* Set on the library's loop thread, read by the main thread. */
static atomic_int g_lock_done;
static atomic_int g_lock_status;
static _Atomic(redlock_lock_t *) g_lock_result;
static atomic_int g_lost;

static void wake_main(void) { pthread_kill(g_main_thread, SIGCHLD); }

static void lock_cb(int status, redlock_lock_t *lock, void *arg) {
  (void)arg;
  atomic_store(&g_lock_result, lock);
  atomic_store(&g_lock_status, status);
  atomic_store(&g_lock_done, 1);
  wake_main();
}

static void lost_cb(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)reason;
  (void)arg;
  atomic_store(&g_lost, 1);
  wake_main();
}

/* Blocks SIGCHLD and the forwarded signals (those not ignored at start: a
 * `nohup` or a background job keeps ignoring them, and so does COMMAND).
 * SIGPIPE is ignored by redlock (a closed stderr must not kill it while it
 * holds a lock) and reset for COMMAND.  0 or -1. */
static int setup_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sigemptyset(&g_waitset);
  sigemptyset(&g_child_dfl);
  /* SIGCHLD must not be SIG_IGN (children would be reaped for us). */
  sa.sa_handler = SIG_DFL;
  if (sigaction(SIGCHLD, &sa, NULL) != 0)
    return -1;
  sigaddset(&g_waitset, SIGCHLD);
  for (size_t i = 0; i < N_FORWARDED; i++) {
    struct sigaction old;
    if (sigaction(FORWARDED[i], NULL, &old) != 0)
      return -1;
    if (old.sa_handler != SIG_IGN)
      sigaddset(&g_waitset, FORWARDED[i]);
  }
  struct sigaction old_pipe;
  if (sigaction(SIGPIPE, NULL, &old_pipe) != 0)
    return -1;
  if (old_pipe.sa_handler == SIG_DFL) {
    sa.sa_handler = SIG_IGN;
    if (sigaction(SIGPIPE, &sa, NULL) != 0)
      return -1;
    sigaddset(&g_child_dfl, SIGPIPE);
  }
  g_main_thread = pthread_self();
  /* Before redlock_open: threads started later inherit the mask. */
  return pthread_sigmask(SIG_BLOCK, &g_waitset, &g_orig_mask) == 0 ? 0 : -1;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits for a signal of g_waitset, at most timeout_ms (< 0: no limit).
 * Returns the signal, or 0 on timeout. */
static int wait_signal(int64_t timeout_ms, siginfo_t *info) {
  for (;;) {
    int sig;
    if (timeout_ms < 0) {
      sig = sigwaitinfo(&g_waitset, info);
    } else {
      struct timespec ts = {(time_t)(timeout_ms / 1000), (long)(timeout_ms % 1000) * 1000000L};
      sig = sigtimedwait(&g_waitset, info, &ts);
    }
    if (sig > 0)
      return sig;
    if (errno == EAGAIN)
      return 0;
    if (errno != EINTR)
      return 0; /* should not happen; the caller re-checks its state */
  }
}

static int is_forwarded(int sig) {
  for (size_t i = 0; i < N_FORWARDED; i++)
    if (FORWARDED[i] == sig)
      return 1;
  return 0;
}

static const char *sig_name(int sig) {
  switch (sig) {
  case SIGINT: return "SIGINT";
  case SIGTERM: return "SIGTERM";
  case SIGHUP: return "SIGHUP";
  case SIGQUIT: return "SIGQUIT";
  case SIGUSR1: return "SIGUSR1";
  case SIGUSR2: return "SIGUSR2";
  case SIGKILL: return "SIGKILL";
  default: return "a signal";
  }
}

/* ---- run: file descriptors passed to COMMAND --------------------------------------- */

/* Descriptors open when redlock started belong to COMMAND (as with flock(1),
 * `redlock run ... 3>file` works); those the library opened since (hiredis
 * sockets) are marked close-on-exec before COMMAND starts. */
typedef struct {
  int *fds;
  size_t n, cap;
} fdset_t;

static int fdset_add(fdset_t *set, int fd) {
  if (set->n == set->cap) {
    size_t cap = set->cap ? set->cap * 2 : 16;
    int *p = realloc(set->fds, cap * sizeof *p);
    if (p == NULL)
      return -1;
    set->fds = p;
    set->cap = cap;
  }
  set->fds[set->n++] = fd;
  return 0;
}

static int fdset_has(const fdset_t *set, int fd) {
  for (size_t i = 0; i < set->n; i++)
    if (set->fds[i] == fd)
      return 1;
  return 0;
}

/* Open descriptors >= 3 into set.  0 or -1. */
static int list_open_fds(fdset_t *set) {
  DIR *dir = opendir("/proc/self/fd");
  if (dir != NULL) {
    int self = dirfd(dir);
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(dir)) != NULL) {
      if (!isdigit((unsigned char)de->d_name[0]))
        continue;
      long fd = strtol(de->d_name, NULL, 10);
      if (fd >= 3 && fd != self && fd <= INT_MAX && fdset_add(set, (int)fd) != 0)
        rc = -1;
    }
    closedir(dir);
    return rc;
  }
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536)
    max = 65536;
  for (int fd = 3; fd < max; fd++)
    if (fcntl(fd, F_GETFD) != -1 && fdset_add(set, fd) != 0)
      return -1;
  return 0;
}

static void cloexec_new_fds(const fdset_t *inherited) {
  fdset_t now = {0};
  list_open_fds(&now);
  for (size_t i = 0; i < now.n; i++) {
    if (fdset_has(inherited, now.fds[i]))
      continue;
    int flags = fcntl(now.fds[i], F_GETFD);
    if (flags != -1 && !(flags & FD_CLOEXEC))
      fcntl(now.fds[i], F_SETFD, flags | FD_CLOEXEC);
  }
  free(now.fds);
}

/* ---- run: COMMAND's environment ------------------------------------------------------ */

static int env_has_name(const char *entry, const char *name) {
  size_t len = strlen(name);
  return strncmp(entry, name, len) == 0 && entry[len] == '=';
}

static char *env_entry(const char *name, const char *value) {
  size_t len = strlen(name) + strlen(value) + 2;
  char *s = malloc(len);
  if (s != NULL)
    snprintf(s, len, "%s=%s", name, value);
  return s;
}

/* environ without NAME, REDLOCK_RESOURCE, REDLOCK_VALUE, then those three.
 * *owned gets the three malloc'ed entries.  NULL when out of memory. */
static char **build_env(const char *fence_name, uint64_t fence, const char *resource,
                        const char *value, char *owned[3]) {
  size_t n = 0;
  for (char **e = environ; *e != NULL; e++)
    n++;
  char **env = calloc(n + 4, sizeof *env);
  if (env == NULL)
    return NULL;
  size_t k = 0;
  for (char **e = environ; *e != NULL; e++) {
    if (env_has_name(*e, fence_name) || env_has_name(*e, "REDLOCK_RESOURCE") ||
        env_has_name(*e, "REDLOCK_VALUE"))
      continue;
    env[k++] = *e;
  }
  char fence_text[32];
  snprintf(fence_text, sizeof fence_text, "%" PRIu64, fence);
  owned[0] = env_entry(fence_name, fence_text);
  owned[1] = env_entry("REDLOCK_RESOURCE", resource);
  owned[2] = env_entry("REDLOCK_VALUE", value);
  if (owned[0] == NULL || owned[1] == NULL || owned[2] == NULL) {
    for (int i = 0; i < 3; i++) {
      free(owned[i]);
      owned[i] = NULL;
    }
    free(env);
    return NULL;
  }
  env[k++] = owned[0];
  env[k++] = owned[1];
  env[k++] = owned[2];
  env[k] = NULL;
  return env;
}

/* ---- run -------------------------------------------------------------------------------- */

typedef struct {
  nodes_t nodes;
  const char *prefix;
  uint64_t ttl_ms, wait_ms, max_ttl_ms, grace_ms, connect_ms, request_ms;
  int quarantine;
  int process_group;
  int conflict_exit;
  const char *fence_env;
  const char *resource;
  char **command;
  tls_opts_t tls;
  const char *metrics_file; /* --metrics-file: stats written at the end */
  int metrics_format;       /* REDLOCK_STATS_PROMETHEUS or REDLOCK_STATS_JSON */
} run_opts_t;

enum {
  OPT_NO_QUARANTINE = 256,
  OPT_MAX_TTL,
  OPT_CONNECT_TIMEOUT,
  OPT_REQUEST_TIMEOUT,
  OPT_TIMEOUT,
  OPT_METRICS_FILE,
  OPT_METRICS_FORMAT,
  OPT_JSON
};

static int parse_run(int argc, char **argv, run_opts_t *o) {
  static const struct option longs[] = {
      {"node", required_argument, NULL, 'n'},
      {"key-prefix", required_argument, NULL, 'p'},
      {"ttl", required_argument, NULL, 't'},
      {"wait", required_argument, NULL, 'w'},
      {"conflict-exit-code", required_argument, NULL, 'E'},
      {"fence-env", required_argument, NULL, 'f'},
      {"no-quarantine", no_argument, NULL, OPT_NO_QUARANTINE},
      {"max-ttl", required_argument, NULL, OPT_MAX_TTL},
      {"grace", required_argument, NULL, 'g'},
      {"process-group", no_argument, NULL, 'G'},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
      {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
      TLS_LONG_OPTIONS,
      {"metrics-file", required_argument, NULL, OPT_METRICS_FILE},
      {"metrics-format", required_argument, NULL, OPT_METRICS_FORMAT},
      {"quiet", no_argument, NULL, 'q'},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  int opt;
  long l;
  int ttl_given = 0;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, "+:n:p:t:w:E:f:g:GqvhV", longs, NULL)) != -1) {
    switch (opt) {
    case 'n': {
      o->nodes.from_cli = 1;
      int rc = nodes_add(&o->nodes, optarg, "--node");
      if (rc != 0)
        return rc;
      break;
    }
    case 'p': o->prefix = optarg; break;
    case 't':
      if (parse_ms(optarg, 1, INT32_MAX, &o->ttl_ms) != 0)
        return usage_error("--ttl: expected 1 to %d milliseconds, got '%s'", INT32_MAX, optarg);
      ttl_given = 1;
      break;
    case 'w':
      if (parse_ms(optarg, 0, UINT32_MAX, &o->wait_ms) != 0)
        return usage_error("--wait: expected 0 to %u milliseconds, got '%s'", UINT32_MAX,
                           optarg);
      break;
    case 'E':
      if (parse_int_range(optarg, 0, 255, &l) != 0)
        return usage_error("--conflict-exit-code: expected 0 to 255, got '%s'", optarg);
      o->conflict_exit = (int)l;
      break;
    case 'f':
      if (!valid_env_name(optarg))
        return usage_error("--fence-env: '%s' is not a valid environment variable name",
                           optarg);
      if (strcmp(optarg, "REDLOCK_RESOURCE") == 0 || strcmp(optarg, "REDLOCK_VALUE") == 0)
        return usage_error("--fence-env: %s is already set to something else", optarg);
      o->fence_env = optarg;
      break;
    case OPT_NO_QUARANTINE: o->quarantine = 0; break;
    case OPT_MAX_TTL:
      if (parse_ms(optarg, 1, INT32_MAX, &o->max_ttl_ms) != 0)
        return usage_error("--max-ttl: expected 1 to %d milliseconds, got '%s'", INT32_MAX,
                           optarg);
      break;
    case 'g':
      if (parse_ms(optarg, 0, UINT32_MAX, &o->grace_ms) != 0)
        return usage_error("--grace: expected 0 to %u milliseconds, got '%s'", UINT32_MAX,
                           optarg);
      break;
    case 'G': o->process_group = 1; break;
    case OPT_CONNECT_TIMEOUT:
      if (parse_ms(optarg, 1, 3600000, &o->connect_ms) != 0)
        return usage_error("--connect-timeout: expected 1 to 3600000 milliseconds, got '%s'",
                           optarg);
      break;
    case OPT_REQUEST_TIMEOUT:
      if (parse_ms(optarg, 1, 3600000, &o->request_ms) != 0)
        return usage_error("--request-timeout: expected 1 to 3600000 milliseconds, got '%s'",
                           optarg);
      break;
    case OPT_METRICS_FILE:
      if (optarg[0] == '\0')
        return usage_error("--metrics-file: expected a path");
      o->metrics_file = optarg;
      break;
    case OPT_METRICS_FORMAT:
      if (strcmp(optarg, "prometheus") == 0)
        o->metrics_format = REDLOCK_STATS_PROMETHEUS;
      else if (strcmp(optarg, "json") == 0)
        o->metrics_format = REDLOCK_STATS_JSON;
      else
        return usage_error("--metrics-format: expected prometheus or json, got '%s'", optarg);
      break;
    case 'q': g_verbosity = -1; break;
    case 'v':
      if (g_verbosity >= 0 && g_verbosity < 2)
        g_verbosity++;
      break;
    case 'h': fputs(HELP, stdout); return -1;
    case 'V': printf("redlock %s\n", redlock_version()); return -1;
    case ':': return usage_error("option %s needs a value", argv[optind - 1]);
    default:
      if (tls_opt(&o->tls, opt, optarg))
        break;
      return usage_error("unknown option %s", describe_opt(optopt, argv));
    }
  }
  if (optind >= argc)
    return usage_error("run: missing RESOURCE");
  o->resource = argv[optind++];
  if (optind < argc && strcmp(argv[optind], "--") == 0)
    optind++;
  else if (optind < argc && argv[optind][0] == '-')
    return usage_error("run: options go before RESOURCE ('%s' after it); put -- before a "
                       "COMMAND that starts with '-'",
                       argv[optind]);
  if (optind >= argc)
    return usage_error("run: missing COMMAND");
  o->command = argv + optind;
  int rc = check_resource(o->resource, o->prefix);
  if (rc != 0)
    return rc;
  uint64_t max_ttl = o->max_ttl_ms ? o->max_ttl_ms : LIBRARY_DEFAULT_MAX_TTL_MS;
  if (!ttl_given && o->ttl_ms > max_ttl)
    o->ttl_ms = max_ttl; /* the default TTL, capped by a small --max-ttl */
  if (o->ttl_ms > max_ttl)
    return usage_error("--ttl %" PRIu64 " ms is above the max TTL (%" PRIu64
                       " ms): raise --max-ttl (it is also the restart quarantine)",
                       o->ttl_ms, max_ttl);
  return nodes_finish(&o->nodes);
}

/* After "no quorum": what each master looks like now, over a plain
 * connection (redlock_last_votes describes the client's latest round, which
 * after a failed attempt may be the release that followed it). */
static void diagnose_masters(const run_opts_t *o) {
  size_t klen = (o->prefix ? strlen(o->prefix) : 0) + strlen(o->resource) + 1;
  size_t flen = klen + strlen(FENCE_KEY_PREFIX);
  char *key = malloc(klen), *fence_key = malloc(flen);
  if (key == NULL || fence_key == NULL) {
    free(key);
    free(fence_key);
    return;
  }
  snprintf(key, klen, "%s%s", o->prefix ? o->prefix : "", o->resource);
  snprintf(fence_key, flen, "%s%s", FENCE_KEY_PREFIX, key);
  uint64_t max_ttl = o->max_ttl_ms ? o->max_ttl_ms : LIBRARY_DEFAULT_MAX_TTL_MS;
  uint64_t timeout = o->connect_ms ? o->connect_ms : 1000;
  int quarantined = 0;
  for (size_t i = 0; i < o->nodes.n; i++) {
    master_report_t rep;
    probe_master(&o->nodes.addrs[i], key, fence_key, timeout, &rep);
    const char *label = o->nodes.addrs[i].label;
    if (!rep.up) {
      err_msg("  %s: %s", label, rep.state);
    } else if (o->quarantine && rep.uptime_s >= 0 &&
               (uint64_t)rep.uptime_s * 1000 < max_ttl + 1000) {
      /* The library's rule: quarantined until max TTL - (uptime - 1 s). */
      err_msg("  %s: up %llds, below the max TTL (%" PRIu64 " ms): in restart quarantine",
              label, rep.uptime_s, max_ttl);
      quarantined++;
    } else {
      err_msg("  %s: %s (answers now)", label, rep.state);
    }
    free(rep.value);
  }
  if (quarantined > 0)
    err_msg("masters that (re)started less than the max TTL ago do not count yet: wait, or "
            "see --no-quarantine and --max-ttl in redlock --help");
  free(key);
  free(fence_key);
}

/* The lock attempt's failure -> exit status, with a message. */
static int lock_failure(redlock_t *client, const run_opts_t *o, int status) {
  char votes[1024];
  votes[0] = '\0';
  redlock_last_votes(client, votes, sizeof votes);
  switch (status) {
  case REDLOCK_ELOCKED:
  case REDLOCK_ETIMEDOUT:
    if (status == REDLOCK_ETIMEDOUT)
      err_msg("cannot lock '%s': waited %" PRIu64 " ms; it is held by another holder",
              o->resource, o->wait_ms);
    else
      err_msg("cannot lock '%s': %s", o->resource, redlock_strerror(status));
    info_msg("last round: %s", votes);
    return o->conflict_exit;
  case REDLOCK_ENOQUORUM:
  case REDLOCK_EEXPIRED:
    err_msg("cannot lock '%s': %s", o->resource, redlock_strerror(status));
    info_msg("last round: %s", votes);
    if (status == REDLOCK_ENOQUORUM && g_verbosity >= 0)
      diagnose_masters(o);
    return EXIT_NOQUORUM;
  default:
    err_msg("cannot lock '%s': %s (%s)", o->resource, redlock_strerror(status),
            redlock_err_name(status));
    return EXIT_INTERNAL;
  }
}

/* Waits for the lock.  Returns 0 with *out set, an exit status, or 128+N
 * when signal N arrived first. */
static int acquire(redlock_t *client, const run_opts_t *o, redlock_lock_t **out) {
  *out = NULL;
  int rc = redlock_lock_async(client, o->resource, (uint32_t)o->ttl_ms, (uint32_t)o->wait_ms,
                              lock_cb, NULL);
  if (rc != 0) {
    err_msg("cannot lock '%s': %s", o->resource, redlock_strerror(rc));
    return rc == REDLOCK_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
  }
  if (o->wait_ms > 0)
    info_msg("waiting up to %" PRIu64 " ms for '%s'", o->wait_ms, o->resource);
  while (!atomic_load(&g_lock_done)) {
    siginfo_t info;
    int sig = wait_signal(-1, &info);
    if (sig > 0 && is_forwarded(sig)) {
      /* Even if the lock was granted meanwhile: the caller's redlock_close
       * cancels the call or releases the lock. */
      err_msg("got %s while waiting for '%s'; giving up", sig_name(sig), o->resource);
      return 128 + sig;
    }
  }
  int status = atomic_load(&g_lock_status);
  if (status == REDLOCK_OK) {
    *out = atomic_load(&g_lock_result);
    return 0;
  }
  if (status == REDLOCK_ETIMEDOUT) {
    /* lock_wait reports only that the budget ran out: one more attempt tells
     * a held lock from masters that do not answer (and may still win). */
    redlock_lock_t *lock = NULL;
    int again = redlock_trylock(client, o->resource, (uint32_t)o->ttl_ms, &lock);
    if (again == REDLOCK_OK) {
      *out = lock;
      return 0;
    }
    if (again != REDLOCK_ELOCKED)
      status = again;
  }
  return lock_failure(client, o, status);
}

static int spawn_command(const run_opts_t *o, char **env, pid_t *pid) {
  posix_spawnattr_t attr;
  int rc = posix_spawnattr_init(&attr);
  if (rc != 0)
    return rc;
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (o->process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);
  posix_spawnattr_setsigmask(&attr, &g_orig_mask);
  sigset_t dfl = g_child_dfl;
  sigaddset(&dfl, SIGCHLD);
  posix_spawnattr_setsigdefault(&attr, &dfl);
  rc = posix_spawnp(pid, o->command[0], NULL, &attr, o->command, env);
  posix_spawnattr_destroy(&attr);
  return rc;
}

static void signal_command(const run_opts_t *o, pid_t pid, int sig) {
  if (o->process_group)
    kill(-pid, sig); /* the group, whose id is COMMAND's pid */
  else
    kill(pid, sig);
}

/* A signal the kernel sent to our whole process group (the terminal's ^C,
 * ^\, or SIGHUP when the session ends: SI_KERNEL) reached COMMAND too when it
 * shares our group, so it is not sent twice.  A session leader's SIGHUP on
 * hangup is its alone: passed on. */
static int should_forward(const run_opts_t *o, const siginfo_t *info) {
  if (o->process_group)
    return 1;
#ifdef SI_KERNEL
  if (info->si_code == SI_KERNEL && !(info->si_signo == SIGHUP && getsid(0) == getpid()))
    return 0;
#else
  (void)info;
#endif
  return 1;
}

/* Runs COMMAND under the held lock; returns the exit status. */
static int run_locked(redlock_t *client, const run_opts_t *o, redlock_lock_t *lock,
                      const fdset_t *inherited) {
  uint64_t fence = redlock_lock_fence(lock);
  info_msg("locked '%s' (fence %" PRIu64 ", valid for %" PRId64 " ms)", o->resource, fence,
           redlock_lock_validity_ms(lock));
  int rc = redlock_watch(client, lock, lost_cb, NULL);
  if (rc != 0) {
    err_msg("cannot keep '%s' alive: %s", o->resource, redlock_strerror(rc));
    redlock_unlock(client, lock);
    return EXIT_INTERNAL;
  }
  char *owned[3] = {NULL, NULL, NULL};
  char **env = build_env(o->fence_env, fence, o->resource, redlock_lock_value(lock), owned);
  if (env == NULL) {
    err_msg("out of memory");
    redlock_unlock(client, lock);
    return EXIT_INTERNAL;
  }
  cloexec_new_fds(inherited);
  pid_t pid;
  rc = spawn_command(o, env, &pid);
  for (int i = 0; i < 3; i++)
    free(owned[i]);
  free(env);
  if (rc != 0) {
    err_msg("cannot run '%s': %s", o->command[0], strerror(rc));
    redlock_unlock(client, lock);
    return rc == ENOENT || rc == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
  }
  info_msg("running '%s' (pid %ld)", o->command[0], (long)pid);

  int wstatus = 0;
  int term_sent = 0, kill_sent = 0;
  uint64_t kill_at = 0;
  for (;;) {
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid)
      break;
    if (r < 0 && errno != EINTR) {
      err_msg("waitpid: %s", strerror(errno));
      wstatus = -1;
      break;
    }
    if (atomic_load(&g_lost) && !term_sent) {
      err_msg("lock on '%s' lost; sending SIGTERM to '%s' (pid %ld)", o->resource,
              o->command[0], (long)pid);
      signal_command(o, pid, SIGTERM);
      term_sent = 1;
      kill_at = now_ms() + o->grace_ms;
    }
    int64_t timeout = -1;
    if (term_sent && !kill_sent) {
      uint64_t now = now_ms();
      if (now >= kill_at) {
        err_msg("'%s' (pid %ld) still running %" PRIu64 " ms after SIGTERM; sending SIGKILL",
                o->command[0], (long)pid, o->grace_ms);
        signal_command(o, pid, SIGKILL);
        kill_sent = 1;
      } else {
        timeout = (int64_t)(kill_at - now);
      }
    }
    siginfo_t info;
    int sig = wait_signal(timeout, &info);
    if (sig > 0 && sig != SIGCHLD && should_forward(o, &info)) {
      info_msg("passing %s on to '%s'", sig_name(sig), o->command[0]);
      signal_command(o, pid, sig);
    }
  }

  int status;
  if (wstatus == -1)
    status = EXIT_INTERNAL;
  else if (WIFEXITED(wstatus))
    status = WEXITSTATUS(wstatus);
  else if (WIFSIGNALED(wstatus))
    status = 128 + WTERMSIG(wstatus);
  else
    status = EXIT_INTERNAL;

  int lost = atomic_load(&g_lost) || redlock_lock_is_lost(lock);
  rc = redlock_unlock(client, lock); /* frees the handle */
  if (lost) {
    err_msg("the lock on '%s' was lost while '%s' ran (its exit status: %d)", o->resource,
            o->command[0], status);
    return EXIT_LOST;
  }
  if (rc == REDLOCK_ELOST) {
    err_msg("the lock on '%s' was no longer held on a quorum when '%s' finished (its exit "
            "status: %d)",
            o->resource, o->command[0], status);
    return EXIT_LOST;
  }
  if (rc != REDLOCK_OK)
    err_msg("release of '%s' not confirmed (%s); it expires within %" PRIu64 " ms", o->resource,
            redlock_strerror(rc), o->ttl_ms);
  else
    info_msg("released '%s'; '%s' exited with status %d", o->resource, o->command[0], status);
  return status;
}

/* --metrics-file: the client's stats, written to PATH.tmp.PID and renamed
 * over PATH, so that a reader (node_exporter's textfile collector, say)
 * never sees half a file.  A failure is reported and does not change the
 * exit status: COMMAND's own matters more. */
static void write_metrics(redlock_t *client, const run_opts_t *o) {
  int format = o->metrics_format ? o->metrics_format : REDLOCK_STATS_PROMETHEUS;
  char *text = NULL;
  int len = redlock_stats(client, format, NULL, 0);
  while (len >= 0) {
    size_t size = (size_t)len + 4096; /* counters may grow while we render */
    free(text);
    text = malloc(size);
    if (text == NULL) {
      len = REDLOCK_ENOMEM;
      break;
    }
    int got = redlock_stats(client, format, text, size);
    if (got >= 0 && (size_t)got < size) {
      len = got;
      break;
    }
    len = got;
  }
  if (len < 0) {
    err_msg("cannot write the metrics: %s", redlock_strerror(len));
    free(text);
    return;
  }
  size_t plen = strlen(o->metrics_file) + 32;
  char *tmp = malloc(plen);
  if (tmp == NULL) {
    err_msg("cannot write the metrics: out of memory");
    free(text);
    return;
  }
  snprintf(tmp, plen, "%s.tmp.%ld", o->metrics_file, (long)getpid());
  FILE *f = fopen(tmp, "w");
  int ok = f != NULL && fwrite(text, 1, (size_t)len, f) == (size_t)len;
  if (f != NULL && fclose(f) != 0)
    ok = 0;
  if (ok && rename(tmp, o->metrics_file) != 0)
    ok = 0;
  if (!ok) {
    err_msg("cannot write the metrics to '%s': %s", o->metrics_file, strerror(errno));
    unlink(tmp);
  } else {
    info_msg("metrics written to '%s'", o->metrics_file);
  }
  free(tmp);
  free(text);
}

static int cmd_run(int argc, char **argv) {
  run_opts_t o;
  memset(&o, 0, sizeof o);
  o.ttl_ms = DEFAULT_TTL_MS;
  o.grace_ms = DEFAULT_GRACE_MS;
  o.quarantine = 1;
  o.conflict_exit = EXIT_BUSY;
  o.fence_env = DEFAULT_FENCE_ENV;
  o.tls.insecure = -1;
  fdset_t inherited = {0};
  redlock_options_t *opts = NULL;
  redlock_t *client = NULL;
  int status = parse_run(argc, argv, &o);
  if (status != 0)
    goto out;

  if (list_open_fds(&inherited) != 0 || setup_signals() != 0) {
    err_msg("cannot set up: %s", strerror(errno));
    status = EXIT_INTERNAL;
    goto out;
  }
  opts = redlock_options_new();
  if (opts == NULL) {
    err_msg("out of memory");
    status = EXIT_INTERNAL;
    goto out;
  }
  int rc = 0;
  if (g_verbosity >= 0)
    rc = redlock_options_set_log(opts, g_verbosity >= 2   ? REDLOCK_LOG_DEBUG
                                       : g_verbosity == 1 ? REDLOCK_LOG_INFO
                                                          : REDLOCK_LOG_ERROR,
                                 log_cb, NULL);
  for (size_t i = 0; rc == 0 && i < o.nodes.n; i++)
    rc = redlock_options_add_node(opts, o.nodes.uris[i]);
  if (rc == 0)
    rc = redlock_options_set_fencing(opts, 1);
  if (rc == 0)
    rc = redlock_options_set_quarantine(opts, o.quarantine);
  if (rc == 0 && o.max_ttl_ms)
    rc = redlock_options_set_max_ttl(opts, (uint32_t)o.max_ttl_ms);
  if (rc == 0 && o.prefix != NULL)
    rc = redlock_options_set_key_prefix(opts, o.prefix);
  if (rc == 0)
    rc = redlock_options_set_retry(opts, 0, 200, 200); /* --wait 0: one attempt */
  if (rc == 0 && (o.connect_ms || o.request_ms))
    rc = redlock_options_set_timeouts(opts, o.connect_ms ? (uint32_t)o.connect_ms : 1000,
                                      o.request_ms ? (uint32_t)o.request_ms : 100);
  if (rc != 0) {
    err_msg("invalid settings: %s", redlock_strerror(rc));
    status = rc == REDLOCK_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
    goto out;
  }
  if ((status = tls_apply(&o.tls, opts)) != 0 || (status = tls_for_probes(opts, &o.nodes)) != 0)
    goto out;
  rc = redlock_open(&client, opts);
  if (rc != 0) {
    err_msg("cannot start the client: %s", redlock_strerror(rc));
    status = EXIT_INTERNAL;
    goto out;
  }
  redlock_lock_t *lock = NULL;
  status = acquire(client, &o, &lock);
  if (status == 0)
    status = run_locked(client, &o, lock, &inherited);
  if (o.metrics_file != NULL)
    write_metrics(client, &o);

out:
  redlock_close(client); /* NULL is ignored; cancels a wait, releases what is held */
  redlock_options_free(opts);
  tls_client_free(g_tls);
  g_tls = NULL;
  nodes_free(&o.nodes);
  free(inherited.fds);
  return status;
}

/* ---- elect ---------------------------------------------------------------------------
 * `redlock elect NAME -- COMMAND`: campaigns for leadership of NAME
 * (redlock_elect) and runs COMMAND while leader, with the term (a fencing
 * token) in REDLOCK_TERM and in the fence variable.  On a lost term COMMAND
 * gets SIGTERM, then SIGKILL after --grace, and once it is gone redlock
 * waits to be elected again (the library campaigns by itself) and runs
 * COMMAND anew.  When COMMAND exits by itself, redlock resigns (handing over
 * at once) and exits with COMMAND's status: a supervisor decides whether to
 * run it again.  Signals, descriptors and spawning are run's. */

#define DEFAULT_ELECT_TTL_MS 10000u

/* Set on the library's loop thread, read by the main thread.  on_elected
 * and on_lost strictly alternate, so "leader" is elected > lost. */
static pthread_mutex_t g_elect_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_elect_elected, g_elect_lost;
static uint64_t g_elect_term;

static void elect_elected_cb(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  (void)arg;
  pthread_mutex_lock(&g_elect_mu);
  g_elect_elected++;
  g_elect_term = term;
  pthread_mutex_unlock(&g_elect_mu);
  wake_main();
}

static void elect_lost_cb(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
  pthread_mutex_lock(&g_elect_mu);
  g_elect_lost++;
  pthread_mutex_unlock(&g_elect_mu);
  wake_main();
}

static int parse_elect(int argc, char **argv, run_opts_t *o) {
  static const struct option longs[] = {
      {"node", required_argument, NULL, 'n'},
      {"key-prefix", required_argument, NULL, 'p'},
      {"ttl", required_argument, NULL, 't'},
      {"fence-env", required_argument, NULL, 'f'},
      {"no-quarantine", no_argument, NULL, OPT_NO_QUARANTINE},
      {"max-ttl", required_argument, NULL, OPT_MAX_TTL},
      {"grace", required_argument, NULL, 'g'},
      {"process-group", no_argument, NULL, 'G'},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
      {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
      {"quiet", no_argument, NULL, 'q'},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  int opt;
  int ttl_given = 0;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, "+:n:p:t:f:g:GqvhV", longs, NULL)) != -1) {
    switch (opt) {
    case 'n': {
      o->nodes.from_cli = 1;
      int rc = nodes_add(&o->nodes, optarg, "--node");
      if (rc != 0)
        return rc;
      break;
    }
    case 'p': o->prefix = optarg; break;
    case 't':
      if (parse_ms(optarg, 1, INT32_MAX, &o->ttl_ms) != 0)
        return usage_error("--ttl: expected 1 to %d milliseconds, got '%s'", INT32_MAX, optarg);
      ttl_given = 1;
      break;
    case 'f':
      if (!valid_env_name(optarg))
        return usage_error("--fence-env: '%s' is not a valid environment variable name",
                           optarg);
      if (strcmp(optarg, "REDLOCK_RESOURCE") == 0 || strcmp(optarg, "REDLOCK_TERM") == 0)
        return usage_error("--fence-env: %s is already set to something else", optarg);
      o->fence_env = optarg;
      break;
    case OPT_NO_QUARANTINE: o->quarantine = 0; break;
    case OPT_MAX_TTL:
      if (parse_ms(optarg, 1, INT32_MAX, &o->max_ttl_ms) != 0)
        return usage_error("--max-ttl: expected 1 to %d milliseconds, got '%s'", INT32_MAX,
                           optarg);
      break;
    case 'g':
      if (parse_ms(optarg, 0, UINT32_MAX, &o->grace_ms) != 0)
        return usage_error("--grace: expected 0 to %u milliseconds, got '%s'", UINT32_MAX,
                           optarg);
      break;
    case 'G': o->process_group = 1; break;
    case OPT_CONNECT_TIMEOUT:
      if (parse_ms(optarg, 1, 3600000, &o->connect_ms) != 0)
        return usage_error("--connect-timeout: expected 1 to 3600000 milliseconds, got '%s'",
                           optarg);
      break;
    case OPT_REQUEST_TIMEOUT:
      if (parse_ms(optarg, 1, 3600000, &o->request_ms) != 0)
        return usage_error("--request-timeout: expected 1 to 3600000 milliseconds, got '%s'",
                           optarg);
      break;
    case 'q': g_verbosity = -1; break;
    case 'v':
      if (g_verbosity >= 0 && g_verbosity < 2)
        g_verbosity++;
      break;
    case 'h': fputs(HELP, stdout); return -1;
    case 'V': printf("redlock %s\n", redlock_version()); return -1;
    case ':': return usage_error("option %s needs a value", argv[optind - 1]);
    default: return usage_error("unknown option %s", describe_opt(optopt, argv));
    }
  }
  if (optind >= argc)
    return usage_error("elect: missing NAME");
  o->resource = argv[optind++];
  if (optind < argc && strcmp(argv[optind], "--") == 0)
    optind++;
  else if (optind < argc && argv[optind][0] == '-')
    return usage_error("elect: options go before NAME ('%s' after it); put -- before a "
                       "COMMAND that starts with '-'",
                       argv[optind]);
  if (optind >= argc)
    return usage_error("elect: missing COMMAND");
  o->command = argv + optind;
  int rc = check_resource(o->resource, o->prefix);
  if (rc != 0)
    return rc;
  uint64_t max_ttl = o->max_ttl_ms ? o->max_ttl_ms : LIBRARY_DEFAULT_MAX_TTL_MS;
  if (!ttl_given && o->ttl_ms > max_ttl)
    o->ttl_ms = max_ttl;
  if (o->ttl_ms > max_ttl)
    return usage_error("--ttl %" PRIu64 " ms is above the max TTL (%" PRIu64
                       " ms): raise --max-ttl (it is also the restart quarantine)",
                       o->ttl_ms, max_ttl);
  if (o->ttl_ms < 10)
    return usage_error("--ttl %" PRIu64 " ms is too short for a leader's lease (at least 10 ms)",
                       o->ttl_ms);
  return nodes_finish(&o->nodes);
}

/* environ without REDLOCK_TERM, the fence variable, REDLOCK_RESOURCE and
 * REDLOCK_VALUE (an outer `redlock run`'s), then the first three.  *owned
 * gets the malloc'ed entries.  NULL when out of memory. */
static char **build_elect_env(const char *fence_name, uint64_t term, const char *name,
                              char *owned[3]) {
  size_t n = 0;
  for (char **e = environ; *e != NULL; e++)
    n++;
  char **env = calloc(n + 4, sizeof *env);
  if (env == NULL)
    return NULL;
  size_t k = 0;
  for (char **e = environ; *e != NULL; e++) {
    if (env_has_name(*e, "REDLOCK_TERM") || env_has_name(*e, fence_name) ||
        env_has_name(*e, "REDLOCK_RESOURCE") || env_has_name(*e, "REDLOCK_VALUE"))
      continue;
    env[k++] = *e;
  }
  char term_text[32];
  snprintf(term_text, sizeof term_text, "%" PRIu64, term);
  owned[0] = env_entry("REDLOCK_TERM", term_text);
  owned[1] = env_entry(fence_name, term_text);
  owned[2] = env_entry("REDLOCK_RESOURCE", name);
  if (owned[0] == NULL || owned[1] == NULL || owned[2] == NULL) {
    for (int i = 0; i < 3; i++) {
      free(owned[i]);
      owned[i] = NULL;
    }
    free(env);
    return NULL;
  }
  for (int i = 0; i < 3; i++)
    env[k++] = owned[i];
  env[k] = NULL;
  return env;
}

static int exit_status_of(int wstatus) {
  if (WIFEXITED(wstatus))
    return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus))
    return 128 + WTERMSIG(wstatus);
  return EXIT_INTERNAL;
}

/* Starts COMMAND for `term`.  0, or an exit status when it cannot run. */
static int elect_spawn(const run_opts_t *o, uint64_t term, const fdset_t *inherited, pid_t *pid) {
  char *owned[3] = {NULL, NULL, NULL};
  char **env = build_elect_env(o->fence_env, term, o->resource, owned);
  if (env == NULL) {
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  cloexec_new_fds(inherited); /* reconnects may have opened new sockets */
  int rc = spawn_command(o, env, pid);
  for (int i = 0; i < 3; i++)
    free(owned[i]);
  free(env);
  if (rc != 0) {
    err_msg("cannot run '%s': %s", o->command[0], strerror(rc));
    return rc == ENOENT || rc == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
  }
  return 0;
}

/* The main loop: returns the exit status. */
static int elect_loop(const run_opts_t *o, const fdset_t *inherited) {
  pid_t pid = 0;
  unsigned spawned_for = 0; /* the election (count) COMMAND runs for */
  int term_sent = 0, kill_sent = 0, stopping = 0;
  uint64_t kill_at = 0;
  for (;;) {
    pthread_mutex_lock(&g_elect_mu);
    unsigned elected = g_elect_elected, lost = g_elect_lost;
    uint64_t term = g_elect_term;
    pthread_mutex_unlock(&g_elect_mu);
    if (pid != 0) {
      int wstatus;
      pid_t r = waitpid(pid, &wstatus, WNOHANG);
      if (r < 0 && errno != EINTR) {
        err_msg("waitpid: %s", strerror(errno));
        return EXIT_INTERNAL;
      }
      if (r == pid) {
        pid = 0;
        int status = exit_status_of(wstatus);
        if (!term_sent || stopping) {
          info_msg("'%s' exited with status %d; resigning '%s'", o->command[0], status,
                   o->resource);
          return status;
        }
        info_msg("'%s' stopped (status %d) after the loss; campaigning again for '%s'",
                 o->command[0], status, o->resource);
        term_sent = kill_sent = 0;
        continue; /* perhaps elected again meanwhile */
      }
      if (lost >= spawned_for && !term_sent) {
        err_msg("leadership of '%s' lost; sending SIGTERM to '%s' (pid %ld)", o->resource,
                o->command[0], (long)pid);
        signal_command(o, pid, SIGTERM);
        term_sent = 1;
        kill_at = now_ms() + o->grace_ms;
      }
      if (term_sent && !kill_sent && now_ms() >= kill_at) {
        err_msg("'%s' (pid %ld) still running %" PRIu64 " ms after SIGTERM; sending SIGKILL",
                o->command[0], (long)pid, o->grace_ms);
        signal_command(o, pid, SIGKILL);
        kill_sent = 1;
      }
    } else if (elected > lost && elected != spawned_for) {
      info_msg("elected leader of '%s' (term %" PRIu64 "); running '%s'", o->resource, term,
               o->command[0]);
      int rc = elect_spawn(o, term, inherited, &pid);
      if (rc != 0)
        return rc;
      spawned_for = elected;
      continue; /* the loss may already be known */
    }
    int64_t timeout = -1;
    if (pid != 0 && term_sent && !kill_sent) {
      uint64_t now = now_ms();
      timeout = kill_at > now ? (int64_t)(kill_at - now) : 0;
    }
    siginfo_t info;
    int sig = wait_signal(timeout, &info);
    if (sig > 0 && is_forwarded(sig)) {
      if (pid == 0) {
        err_msg("got %s while campaigning for '%s'; giving up", sig_name(sig), o->resource);
        return 128 + sig;
      }
      stopping = 1; /* COMMAND's exit now ends redlock, even after a loss */
      if (should_forward(o, &info)) {
        info_msg("passing %s on to '%s'", sig_name(sig), o->command[0]);
        signal_command(o, pid, sig);
      }
    }
  }
}

static int cmd_elect(int argc, char **argv) {
  run_opts_t o;
  memset(&o, 0, sizeof o);
  o.ttl_ms = DEFAULT_ELECT_TTL_MS;
  o.grace_ms = DEFAULT_GRACE_MS;
  o.quarantine = 1;
  o.fence_env = DEFAULT_FENCE_ENV;
  fdset_t inherited = {0};
  redlock_options_t *opts = NULL;
  redlock_t *client = NULL;
  redlock_election_t *election = NULL;
  int status = parse_elect(argc, argv, &o);
  if (status != 0)
    goto out;
  if (list_open_fds(&inherited) != 0 || setup_signals() != 0) {
    err_msg("cannot set up: %s", strerror(errno));
    status = EXIT_INTERNAL;
    goto out;
  }
  opts = redlock_options_new();
  if (opts == NULL) {
    err_msg("out of memory");
    status = EXIT_INTERNAL;
    goto out;
  }
  int rc = 0;
  if (g_verbosity >= 0)
    rc = redlock_options_set_log(opts, g_verbosity >= 2   ? REDLOCK_LOG_DEBUG
                                       : g_verbosity == 1 ? REDLOCK_LOG_INFO
                                                          : REDLOCK_LOG_ERROR,
                                 log_cb, NULL);
  for (size_t i = 0; rc == 0 && i < o.nodes.n; i++)
    rc = redlock_options_add_node(opts, o.nodes.uris[i]);
  if (rc == 0)
    rc = redlock_options_set_quarantine(opts, o.quarantine);
  if (rc == 0 && o.max_ttl_ms)
    rc = redlock_options_set_max_ttl(opts, (uint32_t)o.max_ttl_ms);
  if (rc == 0 && o.prefix != NULL)
    rc = redlock_options_set_key_prefix(opts, o.prefix);
  if (rc == 0 && (o.connect_ms || o.request_ms))
    rc = redlock_options_set_timeouts(opts, o.connect_ms ? (uint32_t)o.connect_ms : 1000,
                                      o.request_ms ? (uint32_t)o.request_ms : 100);
  if (rc != 0) {
    err_msg("invalid settings: %s", redlock_strerror(rc));
    status = rc == REDLOCK_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
    goto out;
  }
  rc = redlock_open(&client, opts);
  if (rc != 0) {
    err_msg("cannot start the client: %s", redlock_strerror(rc));
    status = EXIT_INTERNAL;
    goto out;
  }
  rc = redlock_elect(client, o.resource, (uint32_t)o.ttl_ms, elect_elected_cb, elect_lost_cb, NULL,
                     &election);
  if (rc != 0) {
    err_msg("cannot campaign for '%s': %s", o.resource, redlock_strerror(rc));
    status = rc == REDLOCK_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
    goto out;
  }
  info_msg("campaigning for '%s'", o.resource);
  status = elect_loop(&o, &inherited);

out:
  if (election != NULL)
    redlock_resign(client, election); /* hands over at once (close would too, later) */
  redlock_close(client);
  redlock_options_free(opts);
  nodes_free(&o.nodes);
  free(inherited.fds);
  return status;
}

/* ---- status ----------------------------------------------------------------------------- */

/* A JSON string literal of s (already printable: escape_value). */
static void json_str(const char *s) {
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

/* status --json: the same report as the table, as one JSON object.  The exit
 * status is the table's. */
static int print_status_json(const nodes_t *nodes, const char *key, const master_report_t *reps) {
  size_t quorum = nodes->n / 2 + 1, reachable = 0, held = 0, best_n = 0;
  const char *best = NULL;
  for (size_t i = 0; i < nodes->n; i++) {
    reachable += reps[i].up;
    if (reps[i].value == NULL)
      continue;
    held++;
    size_t n = 0;
    for (size_t j = 0; j < nodes->n; j++)
      n += reps[j].value != NULL && strcmp(reps[j].value, reps[i].value) == 0;
    if (n > best_n) {
      best_n = n;
      best = reps[i].value;
    }
  }
  const char *verdict = best != NULL && best_n >= quorum ? "locked"
                        : best != NULL                   ? "not_locked_on_quorum"
                        : reachable == 0                 ? "unknown"
                                                         : "free";
  char *esc_key = escape_value(key, strlen(key));
  printf("{\"key\":");
  json_str(esc_key ? esc_key : key);
  free(esc_key);
  printf(",\"masters_total\":%zu,\"quorum\":%zu,\"answered\":%zu,\"status\":\"%s\",", nodes->n,
         quorum, reachable, verdict);
  printf("\"holder\":");
  if (best != NULL)
    json_str(best);
  else
    printf("null");
  printf(",\"held_on\":%zu,\"set_on\":%zu,\"masters\":[", best_n, held);
  for (size_t i = 0; i < nodes->n; i++) {
    const master_report_t *m = &reps[i];
    printf("%s{\"master\":", i ? "," : "");
    json_str(nodes->addrs[i].label);
    printf(",\"up\":%s,\"state\":", m->up ? "true" : "false");
    json_str(m->state);
    printf(",\"value\":");
    if (m->value != NULL)
      json_str(m->value);
    else
      printf("null");
    if (m->value != NULL && m->pttl >= 0)
      printf(",\"pttl_ms\":%lld", m->pttl);
    else
      printf(",\"pttl_ms\":null");
    printf(",\"fence\":");
    if (m->fence[0])
      json_str(m->fence);
    else
      printf("null");
    if (m->uptime_s >= 0)
      printf(",\"uptime_s\":%lld}", m->uptime_s);
    else
      printf(",\"uptime_s\":null}");
  }
  printf("]}\n");
  return reachable < quorum ? EXIT_NOQUORUM : 0;
}

static int cmd_status(int argc, char **argv) {
  static const struct option longs[] = {{"node", required_argument, NULL, 'n'},
                                        {"key-prefix", required_argument, NULL, 'p'},
                                        {"timeout", required_argument, NULL, OPT_TIMEOUT},
                                        TLS_LONG_OPTIONS,
                                        {"json", no_argument, NULL, OPT_JSON},
                                        {"quiet", no_argument, NULL, 'q'},
                                        {"verbose", no_argument, NULL, 'v'},
                                        {"help", no_argument, NULL, 'h'},
                                        {"version", no_argument, NULL, 'V'},
                                        {NULL, 0, NULL, 0}};
  nodes_t nodes;
  memset(&nodes, 0, sizeof nodes);
  const char *prefix = "";
  uint64_t timeout_ms = DEFAULT_STATUS_TIMEOUT_MS;
  tls_opts_t tls = {NULL, NULL, NULL, NULL, -1};
  redlock_options_t *tls_settings = NULL;
  int json = 0;
  int status = 0;
  int opt;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, "+:n:p:qvhV", longs, NULL)) != -1) {
    switch (opt) {
    case 'n':
      nodes.from_cli = 1;
      status = nodes_add(&nodes, optarg, "--node");
      if (status != 0)
        goto out;
      break;
    case 'p': prefix = optarg; break;
    case OPT_TIMEOUT:
      if (parse_ms(optarg, 1, 3600000, &timeout_ms) != 0) {
        status = usage_error("--timeout: expected 1 to 3600000 milliseconds, got '%s'", optarg);
        goto out;
      }
      break;
    case OPT_JSON: json = 1; break;
    case 'q': g_verbosity = -1; break;
    case 'v': break;
    case 'h': fputs(HELP, stdout); goto out;
    case 'V': printf("redlock %s\n", redlock_version()); goto out;
    case ':':
      status = usage_error("option %s needs a value", argv[optind - 1]);
      goto out;
    default:
      if (tls_opt(&tls, opt, optarg))
        break;
      status = usage_error("unknown option %s", describe_opt(optopt, argv));
      goto out;
    }
  }
  if (optind >= argc) {
    status = usage_error("status: missing RESOURCE");
    goto out;
  }
  if (optind + 1 < argc) {
    status = usage_error("status: unexpected argument '%s'", argv[optind + 1]);
    goto out;
  }
  const char *resource = argv[optind];
  if ((status = check_resource(resource, prefix)) != 0 || (status = nodes_finish(&nodes)) != 0)
    goto out;
  /* status speaks to the masters itself; the TLS settings go through an
   * options object only to be checked and turned into its SSL_CTX. */
  tls_settings = redlock_options_new();
  if (tls_settings == NULL) {
    err_msg("out of memory");
    status = EXIT_INTERNAL;
    goto out;
  }
  if (g_verbosity >= 0)
    redlock_options_set_log(tls_settings, REDLOCK_LOG_ERROR, setter_log_cb, NULL);
  if ((status = tls_apply(&tls, tls_settings)) != 0 ||
      (status = tls_for_probes(tls_settings, &nodes)) != 0)
    goto out;

  size_t klen = strlen(prefix) + strlen(resource) + 1;
  char *key = malloc(klen);
  char *fence_key = malloc(klen + strlen(FENCE_KEY_PREFIX));
  master_report_t *reps = calloc(nodes.n, sizeof *reps);
  if (key == NULL || fence_key == NULL || reps == NULL) {
    free(key);
    free(fence_key);
    free(reps);
    err_msg("out of memory");
    status = EXIT_INTERNAL;
    goto out;
  }
  snprintf(key, klen, "%s%s", prefix, resource);
  snprintf(fence_key, klen + strlen(FENCE_KEY_PREFIX), "%s%s", FENCE_KEY_PREFIX, key);
  for (size_t i = 0; i < nodes.n; i++)
    probe_master(&nodes.addrs[i], key, fence_key, timeout_ms, &reps[i]);
  if (json) {
    status = print_status_json(&nodes, key, reps);
    goto free_reports;
  }

  size_t quorum = nodes.n / 2 + 1;
  int wlabel = (int)strlen("MASTER"), wvalue = (int)strlen("VALUE");
  size_t reachable = 0;
  for (size_t i = 0; i < nodes.n; i++) {
    int l = (int)strlen(nodes.addrs[i].label);
    if (l > wlabel)
      wlabel = l;
    if (reps[i].value != NULL && (int)strlen(reps[i].value) > wvalue)
      wvalue = (int)strlen(reps[i].value);
    reachable += reps[i].up;
  }
  char *esc_key = escape_value(key, strlen(key));
  printf("key %s, %zu masters, quorum %zu\n", esc_key ? esc_key : key, nodes.n, quorum);
  free(esc_key);
  printf("%-*s  %-5s  %-*s  %9s  %-20s  %s\n", wlabel, "MASTER", "STATE", wvalue, "VALUE",
         "PTTL_MS", "FENCE", "UPTIME");
  for (size_t i = 0; i < nodes.n; i++) {
    const master_report_t *m = &reps[i];
    if (!m->up) {
      printf("%-*s  %s\n", wlabel, nodes.addrs[i].label, m->state);
      continue;
    }
    char pttl[32];
    if (m->value == NULL || m->pttl == -2)
      snprintf(pttl, sizeof pttl, "-");
    else if (m->pttl == -1)
      snprintf(pttl, sizeof pttl, "none");
    else
      snprintf(pttl, sizeof pttl, "%lld", m->pttl);
    printf("%-*s  %-5s  %-*s  %9s  %-20s  %s\n", wlabel, nodes.addrs[i].label, m->state, wvalue,
           m->value ? m->value : "-", pttl, m->fence[0] ? m->fence : "-",
           m->uptime[0] ? m->uptime : "-");
  }
  /* The value held on the most masters. */
  const char *best = NULL;
  size_t best_n = 0, held = 0;
  for (size_t i = 0; i < nodes.n; i++) {
    if (reps[i].value == NULL)
      continue;
    held++;
    size_t n = 0;
    for (size_t j = 0; j < nodes.n; j++)
      n += reps[j].value != NULL && strcmp(reps[j].value, reps[i].value) == 0;
    if (n > best_n) {
      best_n = n;
      best = reps[i].value;
    }
  }
  if (best != NULL && best_n >= quorum)
    printf("locked: held by %s on %zu of %zu masters (quorum %zu)\n", best, best_n, nodes.n,
           quorum);
  else if (best != NULL)
    printf("not locked on a quorum: the key is set on %zu of %zu masters (%s on %zu; quorum "
           "%zu)\n",
           held, nodes.n, best, best_n, quorum);
  else if (reachable == 0)
    printf("unknown: no master answered\n");
  else
    printf("free: none of the %zu masters that answered has the key\n", reachable);
  if (reachable < quorum) {
    printf("only %zu of %zu masters answered (quorum %zu)\n", reachable, nodes.n, quorum);
    status = EXIT_NOQUORUM;
  }
free_reports:
  for (size_t i = 0; i < nodes.n; i++)
    free(reps[i].value);
  free(reps);
  free(key);
  free(fence_key);
out:
  redlock_options_free(tls_settings);
  tls_client_free(g_tls);
  g_tls = NULL;
  nodes_free(&nodes);
  return status;
}

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  if (argc < 2)
    return usage_error("missing command: run, elect or status");
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    fputs(HELP, stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
    printf("redlock %s\n", redlock_version());
    return 0;
  }
  int status;
  if (strcmp(cmd, "run") == 0)
    status = cmd_run(argc - 1, argv + 1);
  else if (strcmp(cmd, "elect") == 0)
    status = cmd_elect(argc - 1, argv + 1);
  else if (strcmp(cmd, "status") == 0)
    status = cmd_status(argc - 1, argv + 1);
  else
    return usage_error("unknown command '%s' (expected run, elect or status)", cmd);
  if (fflush(stdout) != 0 && status == 0)
    status = EXIT_INTERNAL;
  return status < 0 ? 0 : status; /* -1: --help / --version from parse_run */
}
