/* cli_conn.c: the tool's synchronous connections to servers (see
 * cli_conn.h): connect, TLS, AUTH, SELECT, each bounded by a timeout, with
 * the reason of a failure in words; and a sentinel voter's master, asked of
 * its sentinels in turn (status, run's diagnosis and doctor share it). */
#define _GNU_SOURCE

#include "cli_conn.h"

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "util/strutil.h"
#include "util/tls.h" /* the TLS connections, from the redlock_uri target */

/* The SSL_CTX of the tool's own connections to rediss:// servers; NULL when
 * none is listed.  A process-wide program global, not library state. */
static tls_client_t *g_tls;

/* --allow-discovered's patterns (cli_conn_allow); n == 0: any host. */
static const char *const *g_allow;
static size_t g_n_allow;

void cli_conn_allow(const char *const *patterns, size_t n) {
  g_allow = patterns;
  g_n_allow = n;
}

int cli_conn_discovered_ok(const char *host, int port, char *why, size_t size) {
  if (str_host_allowed(host, g_allow, g_n_allow))
    return 0;
  char at[300];
  cli_host_port(at, sizeof at, host, port);
  snprintf(why, size, "discovered address %s not allowed by --allow-discovered: not connected", at);
  return -1;
}

/* REDLOCK_ALLOW_DISCOVERED's comma-separated patterns into conn->allow,
 * when no --allow-discovered was given.  0 or EXIT_USAGE (said). */
static int allow_from_env(conn_opts_t *conn) {
  const char *env = getenv("REDLOCK_ALLOW_DISCOVERED");
  if (conn->n_allow > 0 || env == NULL || env[0] == '\0')
    return 0;
  if (strlen(env) >= sizeof conn->allow_env)
    return usage_error("REDLOCK_ALLOW_DISCOVERED: longer than %zu bytes",
                       sizeof conn->allow_env - 1);
  memcpy(conn->allow_env, env, strlen(env) + 1);
  for (char *p = conn->allow_env; p != NULL;) {
    char *comma = strchr(p, ',');
    if (comma != NULL)
      *comma = '\0';
    if (*p == '\0' || conn->n_allow == CLI_MAX_ALLOW)
      return usage_error("REDLOCK_ALLOW_DISCOVERED: an empty pattern, or more than %d, in '%s'",
                         CLI_MAX_ALLOW, env);
    conn->allow[conn->n_allow++] = p;
    p = comma != NULL ? comma + 1 : NULL;
  }
  return 0;
}

/* Room a host name takes in an owner label ("%h"): the rest is cut. */
#define OWNER_HOST_MAX 32

/* The label of a lock taken with neither --owner nor REDLOCK_OWNER: who
 * took it, as a person looking at the masters asks (host name and pid). */
#define OWNER_DEFAULT "%h:%p"

/* --owner (else REDLOCK_OWNER, else OWNER_DEFAULT; an empty one: no label)
 * with "%h" the host name (bytes a label cannot hold made '_', cut to
 * OWNER_HOST_MAX), "%p" the process id and "%%" a '%'.  0, or EXIT_USAGE
 * (said). */
static int owner_apply(const conn_opts_t *conn, redlock_options_t *opts) {
  const char *spec = conn->owner != NULL ? conn->owner : getenv("REDLOCK_OWNER");
  if (spec == NULL)
    spec = OWNER_DEFAULT;
  if (spec[0] == '\0')
    return 0;
  char label[4 * REDLOCK_MAX_OWNER], host[256];
  size_t n = 0;
  for (const char *p = spec; *p != '\0' && n < REDLOCK_MAX_OWNER + 1; p++) {
    if (p[0] != '%' || (p[1] != 'h' && p[1] != 'p' && p[1] != '%')) {
      label[n++] = *p;
      continue;
    }
    p++;
    if (*p == '%') {
      label[n++] = '%';
    } else if (*p == 'p') {
      n += (size_t)snprintf(label + n, sizeof label - n, "%ld", (long)getpid());
    } else {
      if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
      host[sizeof host - 1] = '\0';
      for (size_t i = 0; host[i] != '\0' && i < OWNER_HOST_MAX; i++) {
        unsigned char c = (unsigned char)host[i];
        label[n++] = c < 0x21 || c > 0x7e || c == '~' ? '_' : (char)c;
      }
    }
  }
  label[n < sizeof label ? n : sizeof label - 1] = '\0';
  if (redlock_options_set_owner(opts, label) != 0)
    return usage_error("--owner: expected 1 to %d bytes of printable ASCII without spaces or "
                       "'~', got '%s'",
                       REDLOCK_MAX_OWNER, spec);
  return 0;
}

int conn_apply(conn_opts_t *conn, redlock_options_t *opts) {
  int rc = owner_apply(conn, opts);
  if (rc == 0)
    rc = tls_apply(&conn->tls, opts);
  if (rc == 0)
    rc = allow_from_env(conn);
  for (size_t i = 0; i < conn->n_allow && rc == 0; i++)
    if (redlock_options_allow_discovered(opts, conn->allow[i]) != 0)
      rc = usage_error("invalid --allow-discovered pattern '%s' (1..255 bytes)", conn->allow[i]);
  if (rc == 0)
    cli_conn_allow(conn->allow, conn->n_allow);
  return rc;
}

int conn_open_client(conn_opts_t *conn, redlock_options_t *opts, int rc, redlock_t **client) {
  *client = NULL;
  int status = 0;
  if (rc != 0) {
    err_msg("invalid settings: %s", redlock_strerror(rc));
    status = rc == REDLOCK_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
  }
  if (status == 0)
    status = conn_apply(conn, opts);
  if (status == 0 && (rc = redlock_open(client, opts)) != 0) {
    err_msg("cannot start the client: %s", redlock_strerror(rc));
    status = EXIT_INTERNAL;
  }
  redlock_options_free(opts);
  return status;
}

int tls_for_probes(const redlock_options_t *opts, const nodes_t *nodes) {
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

int tls_for_probes_from(conn_opts_t *conn) {
  redlock_options_t *settings = redlock_options_new();
  if (settings == NULL) {
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  if (g_verbosity >= 0)
    redlock_options_set_log(settings, REDLOCK_LOG_ERROR, setter_log_cb, NULL);
  int status = conn_apply(conn, settings);
  if (status == 0)
    status = tls_for_probes(settings, &conn->nodes);
  redlock_options_free(settings); /* the TLS context copied what it needs */
  return status;
}

void tls_for_probes_free(void) {
  tls_client_free(g_tls);
  g_tls = NULL;
}

static struct timeval to_timeval(uint64_t ms) {
  return (struct timeval){(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
}

void cli_conn_set_timeout(cli_conn_t *cc, uint64_t timeout_ms) {
  if (cc->c != NULL)
    redisSetTimeout(cc->c, to_timeval(timeout_ms));
}

const char *cli_conn_io_why(cli_conn_t *cc) {
  if (cc->c == NULL)
    return "not connected";
  if (cc->ssl != NULL &&
      tls_explain(cc->ssl, !cc->got_reply, cc->c->errstr, cc->io_why, sizeof cc->io_why))
    return cc->io_why;
  return cc->c->errstr[0] ? cc->c->errstr : "connection lost";
}

void cli_conn_close(cli_conn_t *cc) {
  if (cc->c != NULL)
    redisFree(cc->c); /* frees the SSL too */
  cc->c = NULL;
  cc->ssl = NULL;
}

/* AUTH, then SELECT, when the URI asks for them: each must succeed. */
static int handshake(cli_conn_t *cc, const node_addr_t *addr, char *why, size_t size) {
  for (int step = 0; step < 2; step++) {
    if (step == 0 ? addr->password == NULL : addr->db == 0)
      continue;
    redisReply *r;
    if (step == 1)
      r = redisCommand(cc->c, "SELECT %d", addr->db);
    else if (addr->user != NULL)
      r = redisCommand(cc->c, "AUTH %s %s", addr->user, addr->password);
    else
      r = redisCommand(cc->c, "AUTH %s", addr->password);
    if (r == NULL) {
      snprintf(why, size, "%s", cli_conn_io_why(cc));
      return CLI_CONN_DOWN;
    }
    cc->got_reply = 1;
    if (r->type == REDIS_REPLY_ERROR) {
      /* The server's message: it never repeats the password. */
      char said[256];
      cli_term_escape(r->str, r->len, said, sizeof said);
      snprintf(why, size, "%s: %s", step == 0 ? "AUTH" : "SELECT", said);
      freeReplyObject(r);
      return step == 0 ? CLI_CONN_AUTH : CLI_CONN_SELECT;
    }
    freeReplyObject(r);
  }
  return CLI_CONN_OK;
}

int cli_conn_open(cli_conn_t *cc, const node_addr_t *addr, uint64_t timeout_ms, char *why,
                  size_t size) {
  memset(cc, 0, sizeof *cc);
  struct timeval tv = to_timeval(timeout_ms);
  redisContext *c = addr->kind == NODE_ADDR_UNIX
                        ? redisConnectUnixWithTimeout(addr->path, tv)
                        : redisConnectWithTimeout(addr->host, addr->port, tv);
  if (c == NULL) {
    snprintf(why, size, "out of memory");
    return CLI_CONN_DOWN;
  }
  if (c->err) {
    snprintf(why, size, "%s", c->errstr);
    redisFree(c);
    return CLI_CONN_DOWN;
  }
  cc->c = c;
  redisSetTimeout(c, tv);
  if (addr->tls) {
    /* The same checks as the library's connections (tls.c), done here
     * synchronously within the timeout set above. */
    if (g_tls == NULL) {
      snprintf(why, size, "TLS is not set up");
      cli_conn_close(cc);
      return CLI_CONN_DOWN;
    }
    if (tls_attach(g_tls, c, addr->host, &cc->ssl, why, size) != ST_OK) {
      cli_conn_close(cc);
      return CLI_CONN_DOWN;
    }
  }
  int rc = handshake(cc, addr, why, size);
  if (rc != CLI_CONN_OK)
    cli_conn_close(cc);
  return rc;
}

void cli_append(char *buf, size_t size, size_t *len, const char *fmt, ...) {
  if (*len >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, size - *len, fmt, ap);
  va_end(ap);
  if (n > 0)
    *len = *len + (size_t)n < size ? *len + (size_t)n : size;
}

void cli_host_port(char *out, size_t size, const char *host, int port) {
  if (size < 2)
    return;
  int v6 = strchr(host, ':') != NULL;
  /* Sentinels, cluster maps and MOVED replies choose the host: shown escaped. */
  size_t o = 0;
  if (v6)
    out[o++] = '[';
  cli_term_escape(host, strlen(host), out + o, size - o);
  o = strlen(out);
  snprintf(out + o, size - o, "%s:%d", v6 ? "]" : "", port);
}

/* One sentinel's answer to SENTINEL GET-MASTER-ADDR-BY-NAME: 1 with the
 * master in *out, else 0 with why. */
static int ask_one(const node_addr_t *voter, const node_addr_t *sentinel, uint64_t timeout_ms,
                   cli_sentinel_master_t *out, char *why, size_t size) {
  cli_conn_t cc;
  int found = 0;
  if (cli_conn_open(&cc, sentinel, timeout_ms, why, size) == CLI_CONN_OK) {
    redisReply *r = redisCommand(cc.c, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", voter->master_name);
    if (r == NULL) {
      snprintf(why, size, "%s", cli_conn_io_why(&cc));
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               r->element[1]->type == REDIS_REPLY_STRING) {
      cli_term_escape(r->element[0]->str, r->element[0]->len, out->host, sizeof out->host);
      out->master = *voter;
      out->master.voter = VOTER_KIND_STANDALONE;
      out->master.kind = NODE_ADDR_TCP;
      out->master.host = out->host;
      out->master.port = atoi(r->element[1]->str);
      out->master.seeds = NULL;
      out->master.n_seeds = 0;
      found = out->master.port > 0 && out->master.port < 65536;
      if (found)
        cli_host_port(out->addr, sizeof out->addr, out->host, out->master.port);
      else {
        char port[64];
        cli_term_escape(r->element[1]->str, r->element[1]->len, port, sizeof port);
        snprintf(why, size, "an invalid port '%s'", port);
      }
    } else if (r->type == REDIS_REPLY_NIL) {
      snprintf(why, size, "does not know '%s'", voter->master_name);
    } else if (r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STRING) {
      cli_term_escape(r->str, r->len, why, size);
    } else {
      snprintf(why, size, "an unexpected reply");
    }
    if (r != NULL)
      freeReplyObject(r);
  }
  cli_conn_close(&cc);
  return found;
}

int cli_conn_ask_sentinels(const node_addr_t *voter, uint64_t timeout_ms,
                           cli_sentinel_master_t *out, char *why, size_t size) {
  memset(out, 0, sizeof *out);
  for (unsigned k = 0; k < voter->n_seeds; k++) {
    char err[512] = "";
    cli_host_port(out->sentinel, sizeof out->sentinel, voter->seeds[k].host, voter->seeds[k].port);
    /* The sentinels have their own credentials, never the master's, and no
     * db; TLS as the scheme says (rediss-sentinel://: both). */
    node_addr_t s = {.voter = VOTER_KIND_STANDALONE,
                     .kind = NODE_ADDR_TCP,
                     .host = voter->seeds[k].host,
                     .port = voter->seeds[k].port,
                     .user = voter->sentinel_user,
                     .password = voter->sentinel_password,
                     .tls = voter->tls,
                     .label = out->sentinel};
    if (ask_one(voter, &s, timeout_ms, out, err, sizeof err)) {
      if (cli_conn_discovered_ok(out->master.host, out->master.port, why, size) == 0)
        return 0;
      size_t n = strlen(why);
      snprintf(why + n, size - n, " (named by sentinel %s)", out->sentinel);
      out->sentinel[0] = '\0';
      return -1;
    }
    size_t o = strlen(out->tried);
    snprintf(out->tried + o, sizeof out->tried - o, "%s%s: %s", o ? "; " : "", out->sentinel, err);
  }
  snprintf(why, size, "no sentinel named the master of '%s': %s", voter->master_name,
           out->tried[0] ? out->tried : "no sentinels");
  out->sentinel[0] = '\0';
  return -1;
}
