/* sentinel_harness.h: real Redis Sentinel processes for the integration
 * tests (tests/integration/test_sentinel.c), on free loopback ports.
 *
 * A sentinel is `redis-server FILE --sentinel` (REDLOCK_TEST_SERVER's
 * program, as redis_harness.h says) with a config file written here, in a
 * directory the caller owns (a sentinel rewrites its file).  Every sentinel
 * is a child of this process (rh_child_init: it dies with the thread that
 * started it), stopped by its PID, never by name.  Readiness is observed:
 * PING answers and INFO's process_id is our child's. */
#ifndef SENTINEL_HARNESS_H
#define SENTINEL_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

typedef struct sh_sentinel sh_sentinel_t;

typedef struct {
  const char *dir;         /* where its config and log go (exists) */
  const char *master_name; /* sentinel monitor NAME 127.0.0.1 master_port quorum */
  int master_port;
  int quorum;
  unsigned down_after_ms;       /* sentinel down-after-milliseconds */
  unsigned failover_timeout_ms; /* sentinel failover-timeout */
  const char *password;         /* requirepass (and sentinel-pass: the others have the
                                 * same), or NULL */
  const char *master_password;  /* sentinel auth-pass, or NULL */
  /* TLS: with tls_cert_file set the sentinel also listens with TLS on a port
   * of its own (sh_tls_port; the plain one stays for the harness) and talks
   * TLS to the master (tls-replication yes); no client certificates. */
  const char *tls_cert_file, *tls_key_file, *tls_ca_cert_file;
} sh_options_t;

/* Starts a sentinel (retried on another port when the one picked was
 * taken meanwhile); 0, or -1 with a message on stderr. */
int sh_start(sh_sentinel_t **out, const sh_options_t *opts);
int sh_port(const sh_sentinel_t *s);
int sh_tls_port(const sh_sentinel_t *s); /* 0 without TLS */
pid_t sh_pid(const sh_sentinel_t *s);
/* One command on a short-lived connection (AUTH first when it has a
 * password); the reply as text into buf as rh_server_command renders it
 * (arrays: elements joined by '\n').  0, or -1 when it did not answer. */
int sh_command(sh_sentinel_t *s, char *buf, size_t size, const char *fmt, ...);
/* A field of `SENTINEL MASTER name` ("num-other-sentinels", "ip", ...) into
 * buf; 0, or -1 when there is no such field or no answer. */
int sh_master_field(sh_sentinel_t *s, const char *name, const char *field, char *buf, size_t size);
/* SIGKILL + reap, then frees.  NULL is fine. */
void sh_stop(sh_sentinel_t *s);

#endif
