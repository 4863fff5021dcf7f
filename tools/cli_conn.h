/* cli_conn.h: one synchronous hiredis connection to a server named by a
 * node_addr_t, as the tool's own checks make them (status's and run's
 * probes, cli_probe.c; doctor's checks, cli_doctor_*.c): TCP or unix
 * socket, TLS with the library's certificate checks (tls.c) for rediss://,
 * then AUTH and SELECT as the URI asks; and the master of a sentinel voter,
 * asked of its sentinels over such connections.  The tool talks to servers
 * this way, not through the library, so that it can say what a server is
 * and why it is refused even when the library would not count it. */
#ifndef REDLOCK_CLI_CONN_H
#define REDLOCK_CLI_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "cli_common.h"
#include "cli_term.h" /* cli_term_escape: what servers say, on a terminal */

struct redisContext;

typedef struct {
  struct redisContext *c;
  void *ssl;     /* the TLS session, NULL over plain TCP or a unix socket */
  int got_reply; /* a reply came: a later TLS failure is not the handshake's */
  char io_why[256];
} cli_conn_t;

/* What cli_conn_open returns. */
enum {
  CLI_CONN_OK = 0,
  CLI_CONN_DOWN,   /* no connection, or it broke: why has the reason */
  CLI_CONN_AUTH,   /* AUTH refused: why is "AUTH: <the server's error>" */
  CLI_CONN_SELECT, /* SELECT refused: why is "SELECT: <the server's error>" */
};

/* Applies what a client connects with beyond the masters to opts: the TLS
 * options (tls_apply) and the host patterns that addresses a sentinel or a
 * cluster node names must match (redlock_options_allow_discovered), which
 * the tool's own connections follow too (cli_conn_allow).  0 or an exit
 * status (with the reason on stderr). */
int conn_apply(conn_opts_t *conn, redlock_options_t *opts);
/* Opens *client with opts, which the caller filled with status rc (the
 * first setter that failed, or 0), after conn_apply; frees opts.  0, or an
 * exit status (said; *client NULL). */
int conn_open_client(conn_opts_t *conn, redlock_options_t *opts, int rc, redlock_t **client);
/* The host patterns (fnmatch, ASCII case ignored) that an address a
 * sentinel or a cluster node names must match before these connections go
 * there; none: any.  The patterns are borrowed for the process's life. */
void cli_conn_allow(const char *const *patterns, size_t n);
/* 0 when host may be connected to, else -1 with why saying it is not. */
int cli_conn_discovered_ok(const char *host, int port, char *why, size_t size);

/* Sets up the TLS context of these connections when a voter is rediss://
 * (once per process; opts carries the --tls-* settings).  0 or
 * EXIT_USAGE. */
int tls_for_probes(const redlock_options_t *opts, const nodes_t *nodes);
void tls_for_probes_free(void);

/* tls_for_probes from the command line's --tls-* settings (conn->tls),
 * checked as the library checks them (an options object made for that
 * alone).  0, EXIT_USAGE or EXIT_INTERNAL (out of memory). */
int tls_for_probes_from(conn_opts_t *conn);

/* Connects to addr (host and port, or path; TLS when addr->tls), then AUTH
 * (addr->user, addr->password) and SELECT addr->db when the URI has them.
 * Connecting and each reply are bounded by timeout_ms.  Returns CLI_CONN_*;
 * on anything but CLI_CONN_OK, why says why (never with the password) and
 * cc holds nothing.  cli_conn_close in every case. */
int cli_conn_open(cli_conn_t *cc, const node_addr_t *addr, uint64_t timeout_ms, char *why,
                  size_t size);

/* Bounds each later reply by timeout_ms (a WAIT needs its own timeout on
 * top of the usual one). */
void cli_conn_set_timeout(cli_conn_t *cc, uint64_t timeout_ms);

/* Why the last command failed on the connection itself (no reply): TLS's
 * reason when it has one, else hiredis'. */
const char *cli_conn_io_why(cli_conn_t *cc);

void cli_conn_close(cli_conn_t *cc);

/* What the sentinels of a redis-sentinel:// voter name as its master
 * (cli_conn_ask_sentinels).  Written by that call, read by its caller. */
typedef struct {
  /* The voter's own fields (credentials, db, TLS, acks, label) with the
   * master's host and port, as one standalone address: it borrows the
   * voter's strings and `host` below, so it must not outlive the voter nor
   * be copied elsewhere. */
  node_addr_t master;
  char host[256];     /* the master's host as the sentinel gave it (printable) */
  char addr[300];     /* "host:port" of the master ("[v6]:port") */
  char sentinel[300]; /* "host:port" of the sentinel that named it */
  char tried[1024];   /* the sentinels asked before it and why each did not say; "" */
} cli_sentinel_master_t;

/* Asks voter's sentinels in turn (with sentinel_user / sentinel_password,
 * over TLS for rediss-sentinel://, each step bounded by timeout_ms) for the
 * master of voter->master_name.  0 with *out filled in, or -1 with why
 * saying what each sentinel answered (never a password). */
int cli_conn_ask_sentinels(const node_addr_t *voter, uint64_t timeout_ms,
                           cli_sentinel_master_t *out, char *why, size_t size);

/* Appends printf output to buf (len bytes used of size), cut to fit. */
__attribute__((format(printf, 4, 5))) void cli_append(char *buf, size_t size, size_t *len,
                                                      const char *fmt, ...);

/* "host:port", with brackets around an IPv6 host. */
void cli_host_port(char *out, size_t size, const char *host, int port);

#endif
