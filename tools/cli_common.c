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

void print_version(void) { printf("redlock %s\n", redlock_version()); }

/* ---- argument parsing helpers ------------------------------------------------------- */

int parse_duration(const char *s, uint64_t bare_unit_ms, uint64_t min, uint64_t max,
                   uint64_t *out) {
  if (s == NULL || !(isdigit((unsigned char)s[0]) || (s[0] == '.' && isdigit((unsigned char)s[1]))))
    return -1;
  /* Integer part and up to 9 fraction digits, in integers: no float rounding
   * ("0.1s" is exactly 100 ms). */
  uint64_t whole = 0, frac = 0, frac_scale = 1;
  const char *p = s;
  while (isdigit((unsigned char)*p)) {
    whole = whole * 10 + (uint64_t)(*p - '0');
    if (whole > UINT32_MAX)
      return -1;
    p++;
  }
  if (*p == '.') {
    p++;
    if (!isdigit((unsigned char)*p))
      return -1;
    for (; isdigit((unsigned char)*p); p++)
      if (frac_scale < 1000000000u) {
        frac = frac * 10 + (uint64_t)(*p - '0');
        frac_scale *= 10;
      }
  }
  uint64_t mult;
  if (*p == '\0')
    mult = bare_unit_ms;
  else if (strcmp(p, "ms") == 0)
    mult = 1;
  else if (strcmp(p, "s") == 0)
    mult = 1000;
  else if (strcmp(p, "m") == 0)
    mult = 60000;
  else if (strcmp(p, "h") == 0)
    mult = 3600000;
  else
    return -1;
  /* whole < 2^32 and mult <= 3.6e6: no overflow; a fraction of a millisecond
   * is dropped. */
  uint64_t v = whole * mult + frac * mult / frac_scale;
  if (v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

int parse_ms(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
  return parse_duration(s, 1, min, max, out);
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
    {"node", required_argument, NULL, 'N'},
    {"key-prefix", required_argument, NULL, 'p'},
    {"owner", required_argument, NULL, OPT_OWNER},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"tls-server-name", required_argument, NULL, OPT_TLS_SERVER_NAME},
    {"tls-insecure", no_argument, NULL, OPT_TLS_INSECURE},
    {"allow-discovered", required_argument, NULL, OPT_ALLOW_DISCOVERED},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'}};
#define N_CONN_LONGS (sizeof CONN_LONGS / sizeof CONN_LONGS[0])
#define CONN_SHORTS "N:p:qvhV"
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
static int conn_option(conn_opts_t *c, int opt, const char *arg, int count_verbose,
                       const char *cmd_name) {
  switch (opt) {
  case 'N':
    c->nodes.from_cli = 1;
    return nodes_add(&c->nodes, arg, "--node");
  case 'p':
    c->prefix = arg;
    return 0;
  case OPT_OWNER:
    c->owner = arg;
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
  case OPT_ALLOW_DISCOVERED:
    if (c->n_allow == CLI_MAX_ALLOW)
      return usage_error("--allow-discovered: at most %d patterns", CLI_MAX_ALLOW);
    c->allow[c->n_allow++] = arg;
    return 0;
  case 'q':
    g_verbosity = -1;
    return 0;
  case 'v':
    if (count_verbose && g_verbosity >= 0 && g_verbosity < 2)
      g_verbosity++;
    return 0;
  case 'h':
    print_help(cmd_name);
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
    int rc = conn_option(conn, opt, optarg, cmd->count_verbose, argv[0]);
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
