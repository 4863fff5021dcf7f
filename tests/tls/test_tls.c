/* test_tls.c: rediss:// masters against real redis-server processes that
 * speak TLS only (--port 0 --tls-port P, tests/support/redis_harness), with
 * certificates made by tests/tls/make_certs.sh (openssl) at the start of the
 * run.  Every case asserts an outcome that a broken TLS layer would change:
 *  - a good handshake: locks land on every master (the keys are read back
 *    over the harness's plain unix socket); the DNS name "localhost" is
 *    accepted through set_tls_server_name; the system trust store (no CA
 *    set) does not trust the test CA;
 *  - a wrong CA: every master down, "certificate verify failed: unable to
 *    get local issuer certificate" in last_votes and in the log;
 *  - a certificate for another name: "IP address mismatch" for an IP URI,
 *    accepted with set_tls_server_name("redis.internal"); "hostname
 *    mismatch" for a server name the certificate lacks;
 *  - verify off: a certificate from an untrusted CA for another name works,
 *    and the client's log gets one WARN, at open (not on reconnects);
 *  - a certificate with its name in the CN alone (no subjectAltName) is
 *    refused, the reason saying so (no CN fallback);
 *  - an encrypted client key is refused, by the setter and by redlock_open,
 *    saying that passphrases are not supported (no terminal prompt);
 *  - mutual TLS (--tls-auth-clients yes): refused without a client
 *    certificate (the reason names certificates), works with one;
 *  - plain and TLS masters mixed in one client;
 *  - AUTH over TLS (requirepass and an ACL user in rediss:// URIs); a wrong
 *    password marks only that master down, with the reason;
 *  - reconnect after a TLS master is SIGKILLed and restarted on its port;
 *  - a woken wait over TLS: the subscriber connections use TLS (PUBSUB
 *    NUMSUB on every master), and a release wakes the waiter long before
 *    its 10 s fallback poll;
 *  - the handshake counts against the connect timeout: a listener that
 *    accepts TCP but never answers the TLS handshake is given up on at the
 *    connect timeout, and redlock_open returns by then;
 *  - option checks with real files: a key that does not match its
 *    certificate, a key given as CA, are refused when set, with the reason;
 *  - a Sentinel voter over TLS (rediss-sentinel://): the sentinel is asked
 *    over TLS and the master it names is reached over TLS;
 *  - a Redis Cluster over TLS (rediss-cluster://, tls-cluster yes): from
 *    one seed, the slot map's TLS ports; locks on every primary, exclusion,
 *    and no key left after the unlocks.
 * Waits are rh_wait_until deadlines, never sleeps.  Usage: test_tls
 * MAKE_CERTS_SH. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "fixture.h"
#include "sentinel_harness.h"

#define TTL 5000u
#define SLACK_MS 1500u

static char g_dir[256]; /* the certificates */

/* "<g_dir>/<name>"; a few rotating buffers, enough for one call's arguments. */
static const char *cert(const char *name) {
  static char bufs[8][320];
  static int next;
  char *b = bufs[next++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s", g_dir, name);
  return b;
}

/* Starts servers [first, first + n) of the fixture with TLS only, leaf
 * certificate `leaf` (server, other, rogue), and the given extras. */
static void start_tls(fx_t *fx, size_t first, size_t n, const char *leaf, int auth_clients,
                      const char *password) {
  char crt[64], key[64];
  snprintf(crt, sizeof crt, "%s.crt", leaf);
  snprintf(key, sizeof key, "%s.key", leaf);
  rh_options_t o;
  memset(&o, 0, sizeof o);
  o.password = password;
  o.tls_cert_file = cert(crt);
  o.tls_key_file = cert(key);
  o.tls_ca_cert_file = cert("ca.crt");
  o.tls_auth_clients = auth_clients;
  for (size_t i = first; i < first + n; i++)
    assert_int_equal(rh_server_start(&fx->servers[i], &o), 0);
  if (fx->n < first + n)
    fx->n = first + n;
}

/* Options over the fixture's first n servers, trusting ca (NULL: the system
 * store), log at INFO (connections are logged there). */
static redlock_options_t *tls_options(fx_t *fx, size_t n, const char *ca) {
  redlock_options_t *opts = fx_options(fx, 0, n, REDLOCK_LOG_INFO);
  if (ca != NULL)
    assert_int_equal(redlock_options_set_tls(opts, cert(ca), NULL, NULL, NULL), 0);
  return opts;
}

static void votes_of(redlock_t *c, char *buf, size_t size) {
  assert_true(redlock_last_votes(c, buf, size) > 0);
}

/* Takes and releases a lock; checks its value on the given servers. */
static void lock_roundtrip(fx_t *fx, redlock_t *c, const char *res, size_t n_check) {
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
  /* A master whose reply came after the quorum was reached may still be on
   * its way: wait for it, with a deadline. */
  for (size_t i = 0; i < n_check; i++)
    if (!fx_wait_key_is(fx->servers[i], res, redlock_lock_value(lock), 2000))
      fail_msg("master %zu lacks the key of %s", i, res);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  for (size_t i = 0; i < n_check; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], res, 2000));
}

/* A trylock that no master can grant; its votes must contain `why`. */
static void refused_with(fx_t *fx, redlock_t *c, const char *res, const char *why) {
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ENOQUORUM);
  char votes[2048];
  votes_of(c, votes, sizeof votes);
  if (strstr(votes, why) == NULL)
    fail_msg("last votes lack \"%s\": %s\nlog:\n%s", why, votes, fx_log_text(fx, FX_ALL));
  if (!fx_log_contains(fx, FX_ALL, why))
    fail_msg("log lacks \"%s\":\n%s", why, fx_log_text(fx, FX_ALL));
}

/* ---- cases ------------------------------------------------------------------------ */

static void test_supported(void **state) {
  (void)state;
  assert_int_equal(redlock_tls_supported(), 1);
}

static void test_good_handshake(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 3, "server", 0, NULL);
  assert_string_equal(strstr(rh_server_uri(fx->servers[0]), "rediss://"),
                      rh_server_uri(fx->servers[0]));
  redlock_t *c = fx_open(fx, 0, tls_options(fx, 3, "ca.crt"));
  lock_roundtrip(fx, c, "tls:good", 3);
  char votes[1024];
  votes_of(c, votes, sizeof votes);
  assert_non_null(strstr(votes, "won:"));

  /* The DNS name in the certificate, checked instead of the URI's IP. */
  redlock_options_t *opts = tls_options(fx, 3, "ca.crt");
  assert_int_equal(redlock_options_set_tls_server_name(opts, "localhost"), 0);
  redlock_t *named = fx_open(fx, 1, opts);
  lock_roundtrip(fx, named, "tls:good-named", 3);

  /* No CA given: the system's store, which does not know the test CA. */
  fx_log_clear(fx, FX_ALL);
  redlock_t *sys = fx_open(fx, 2, tls_options(fx, 3, NULL));
  refused_with(fx, sys, "tls:good-sys", "certificate verify failed");
}

static void test_wrong_ca(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 3, "server", 0, NULL);
  redlock_t *c = fx_open(fx, 0, tls_options(fx, 3, "wrongca.crt"));
  /* OpenSSL says "unable to get local issuer certificate" or, when the
   * server sends its CA along, "self-signed certificate in certificate
   * chain": the chain is what failed, not the name. */
  refused_with(fx, c, "tls:wrongca", "certificate verify failed: ");
  char votes[2048];
  votes_of(c, votes, sizeof votes);
  assert_null(strstr(votes, "mismatch"));
  /* Nothing was written through a connection that failed verification. */
  for (size_t i = 0; i < 3; i++)
    assert_true(fx_key_absent(fx->servers[i], "tls:wrongca"));
  /* Each master's failed handshakes are counted (stats). */
  char stats[65536];
  int n = redlock_stats(c, REDLOCK_STATS_PROMETHEUS, stats, sizeof stats);
  assert_true(n > 0 && (size_t)n < sizeof stats);
  for (size_t i = 0; i < 3; i++) {
    const char *uri = rh_server_uri(fx->servers[i]);
    char want[256];
    snprintf(want, sizeof want, "redlock_master_tls_handshake_failures_total{master=\"%s\"} ",
             uri + strlen("rediss://"));
    const char *at = strstr(stats, want);
    assert_non_null(at);
    assert_true(strtol(at + strlen(want), NULL, 10) >= 1);
  }

  /* A server whose certificate comes from a CA we do not trust. */
  fx_close(fx, 0);
  rh_cluster_free(fx->servers, 3);
  fx->n = 0;
  start_tls(fx, 0, 3, "rogue", 0, NULL);
  fx_log_clear(fx, FX_ALL);
  c = fx_open(fx, 0, tls_options(fx, 3, "ca.crt"));
  refused_with(fx, c, "tls:rogue", "certificate verify failed");
}

static void test_name_mismatch(void **state) {
  fx_t *fx = *state;
  /* other.crt is for DNS redis.internal only; the URIs say 127.0.0.1. */
  start_tls(fx, 0, 3, "other", 0, NULL);
  redlock_t *c = fx_open(fx, 0, tls_options(fx, 3, "ca.crt"));
  refused_with(fx, c, "tls:mismatch-ip", "certificate verify failed: IP address mismatch");

  /* The name the certificate carries, given as the server name. */
  redlock_options_t *opts = tls_options(fx, 3, "ca.crt");
  assert_int_equal(redlock_options_set_tls_server_name(opts, "redis.internal"), 0);
  redlock_t *named = fx_open(fx, 1, opts);
  lock_roundtrip(fx, named, "tls:mismatch-override", 3);

  /* A server name the certificate lacks: hostname mismatch, naming it. */
  fx_log_clear(fx, FX_ALL);
  opts = tls_options(fx, 3, "ca.crt");
  assert_int_equal(redlock_options_set_tls_server_name(opts, "wrong.example"), 0);
  redlock_t *wrong = fx_open(fx, 2, opts);
  refused_with(fx, wrong, "tls:mismatch-name", "certificate verify failed: hostname mismatch");
  refused_with(fx, wrong, "tls:mismatch-name", "wrong.example");
}

#define VERIFY_OFF_WARNING "[WARN] redlock_open: TLS certificate verification is off"

/* The WARN of a client with verify off, counted in the whole log. */
static void expect_verify_warnings(fx_t *fx, unsigned n) {
  unsigned got = fx_log_count(fx, FX_ALL, VERIFY_OFF_WARNING);
  if (got != n)
    fail_msg("%u verify-off warnings, expected %u:\n%s", got, n, fx_log_text(fx, FX_ALL));
}

static void test_verify_off(void **state) {
  fx_t *fx = *state;
  /* Untrusted CA and a name that matches nothing: only verify 0 connects. */
  start_tls(fx, 0, 3, "rogue", 0, NULL);
  redlock_options_t *opts = tls_options(fx, 3, "ca.crt");
  assert_int_equal(redlock_options_set_tls_server_name(opts, "wrong.example"), 0);
  assert_int_equal(redlock_options_set_tls_verify(opts, 0), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  lock_roundtrip(fx, c, "tls:noverify", 3);
  /* Said once, at open: not again for each connection, nor on a reconnect. */
  expect_verify_warnings(fx, 1);
  assert_int_equal(rh_server_kill(fx->servers[0]), 0);
  fx_log_clear(fx, FX_ALL);
  assert_int_equal(rh_server_restart(fx->servers[0]), 0);
  char needle[96];
  snprintf(needle, sizeof needle, "master 127.0.0.1:%d: connected", rh_server_port(fx->servers[0]));
  if (!fx_wait_log(fx, FX_ALL, needle, 5000))
    fail_msg("no reconnect to the restarted master:\n%s", fx_log_text(fx, FX_ALL));
  lock_roundtrip(fx, c, "tls:noverify-again", 3);
  expect_verify_warnings(fx, 0);

  opts = tls_options(fx, 3, "ca.crt");
  assert_int_equal(redlock_options_set_tls_server_name(opts, "wrong.example"), 0);
  redlock_t *strict = fx_open(fx, 1, opts);
  refused_with(fx, strict, "tls:verify", "certificate verify failed");
  expect_verify_warnings(fx, 0); /* verify on: no warning */
}

/* A certificate whose only name is its subject's CN (no subjectAltName) is
 * not for any host: OpenSSL's CN fallback is off. */
static void test_cn_only(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 3, "cnonly", 0, NULL);
  redlock_options_t *opts = tls_options(fx, 3, "ca.crt");
  assert_int_equal(redlock_options_set_tls_server_name(opts, "localhost"), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  refused_with(fx, c, "tls:cnonly",
               "certificate verify failed: hostname mismatch (the certificate is not for "
               "localhost); it names no host in a subjectAltName");
  for (size_t i = 0; i < 3; i++)
    assert_true(fx_key_absent(fx->servers[i], "tls:cnonly"));
}

/* An encrypted client key: refused when set and at redlock_open, with the
 * reason, and OpenSSL never asks for a passphrase on the terminal. */
static void test_encrypted_key(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 1, "server", 1, NULL);
  const char *why = "encrypted: passphrases are not supported";
  redlock_options_t *opts = fx_options(fx, 0, 1, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_tls(opts, cert("ca.crt"), NULL, cert("client.crt"),
                                           cert("encrypted.key")),
                   REDLOCK_EINVAL);
  if (!fx_log_contains(fx, FX_ALL, why))
    fail_msg("the setter does not say why:\n%s", fx_log_text(fx, FX_ALL));

  /* Accepted plain, then encrypted in place before redlock_open. */
  char swap[320], cmd[1024];
  snprintf(swap, sizeof swap, "%s", cert("swap.key"));
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", cert("client.key"), swap);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(redlock_options_set_tls(opts, cert("ca.crt"), NULL, cert("client.crt"), swap),
                   0);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", cert("encrypted.key"), swap);
  assert_int_equal(system(cmd), 0);
  fx_log_clear(fx, FX_ALL);
  redlock_t *c = NULL;
  assert_int_equal(redlock_open(&c, opts), REDLOCK_EINVAL);
  assert_null(c);
  redlock_options_free(opts);
  if (!fx_log_contains(fx, FX_ALL, "[ERROR] redlock_open: TLS: the key in") ||
      !fx_log_contains(fx, FX_ALL, why))
    fail_msg("redlock_open does not say why:\n%s", fx_log_text(fx, FX_ALL));
}

static void test_mutual_tls(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 3, "server", 1, NULL);
  redlock_t *anon = fx_open(fx, 0, tls_options(fx, 3, "ca.crt"));
  /* The server's alert ("tlsv13 alert certificate required") races with
   * its reset of the connection; either way the reason names certificates. */
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, anon, redlock_trylock(anon, "tls:mtls-anon", TTL, &lock), REDLOCK_ENOQUORUM);
  char votes[2048];
  votes_of(anon, votes, sizeof votes);
  if (strstr(votes, "certificate required") == NULL && strstr(votes, "client certificate") == NULL)
    fail_msg("the votes do not say why: %s", votes);

  redlock_options_t *opts = fx_options(fx, 0, 3, REDLOCK_LOG_INFO);
  assert_int_equal(
      redlock_options_set_tls(opts, cert("ca.crt"), NULL, cert("client.crt"), cert("client.key")),
      0);
  redlock_t *c = fx_open(fx, 1, opts);
  lock_roundtrip(fx, c, "tls:mtls", 3);
}

static void test_mixed_plain_tls(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 2, "server", 0, NULL);
  assert_int_equal(rh_server_start(&fx->servers[2], NULL), 0);
  fx->n = 3;
  assert_non_null(strstr(rh_server_uri(fx->servers[2]), "redis://"));
  redlock_t *c = fx_open(fx, 0, tls_options(fx, 3, "ca.crt"));
  /* The key reaches all three, plain and TLS (lock_roundtrip checks). */
  lock_roundtrip(fx, c, "tls:mixed", 3);
  /* Two masters are a quorum of three: the plain one with either TLS one. */
  assert_int_equal(rh_server_kill(fx->servers[1]), 0);
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, "tls:mixed-2", TTL, &lock), REDLOCK_OK);
  assert_true(fx_key_is(fx->servers[0], "tls:mixed-2", redlock_lock_value(lock)));
  assert_true(fx_key_is(fx->servers[2], "tls:mixed-2", redlock_lock_value(lock)));
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
}

static void test_auth_over_tls(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 1, "server", 0, "tls pass@1");
  rh_options_t acl;
  memset(&acl, 0, sizeof acl);
  acl.acl_user = "alice";
  acl.acl_password = "wonder:land";
  acl.tls_cert_file = cert("server.crt");
  acl.tls_key_file = cert("server.key");
  acl.tls_ca_cert_file = cert("ca.crt");
  assert_int_equal(rh_server_start(&fx->servers[1], &acl), 0);
  start_tls(fx, 2, 1, "server", 0, NULL);
  /* "rediss://:tls%20pass%401@..." and "rediss://alice:wonder%3Aland@...". */
  assert_non_null(strstr(rh_server_uri(fx->servers[0]), "rediss://:"));
  assert_non_null(strstr(rh_server_uri(fx->servers[1]), "rediss://alice:"));
  redlock_t *c = fx_open(fx, 0, tls_options(fx, 3, "ca.crt"));
  lock_roundtrip(fx, c, "tls:auth", 3);

  /* A wrong password: that master alone is down, and the votes say why. */
  char bad[128];
  snprintf(bad, sizeof bad, "rediss://:wrong@127.0.0.1:%d", rh_server_port(fx->servers[0]));
  const char *uris[3] = {bad, rh_server_uri(fx->servers[1]), rh_server_uri(fx->servers[2])};
  redlock_options_t *opts = fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_tls(opts, cert("ca.crt"), NULL, NULL, NULL), 0);
  redlock_t *w = fx_open(fx, 1, opts);
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, w, redlock_trylock(w, "tls:auth-bad", TTL, &lock), REDLOCK_OK);
  char votes[1024];
  votes_of(w, votes, sizeof votes);
  if (strstr(votes, "down (AUTH refused") == NULL)
    fail_msg("the wrong password is not in the votes: %s", votes);
  assert_true(fx_key_absent(fx->servers[0], "tls:auth-bad"));
  FX_ASSERT_RC(fx, w, redlock_unlock(w, lock), REDLOCK_OK);
}

static void test_restart_reconnect(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 3, "server", 0, NULL);
  redlock_t *c = fx_open(fx, 0, tls_options(fx, 3, "ca.crt"));
  lock_roundtrip(fx, c, "tls:restart-before", 3);

  assert_int_equal(rh_server_kill(fx->servers[0]), 0);
  fx_log_clear(fx, FX_ALL); /* before the restart: the reconnect cannot precede it */
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, "tls:restart-during", TTL, &lock), REDLOCK_OK);
  /* A dead master is down for a plain reason, not blamed on certificates. */
  char votes[1024];
  votes_of(c, votes, sizeof votes);
  if ((strstr(votes, "=down") == NULL && strstr(votes, "=disconnected") == NULL) ||
      strstr(votes, "certificate") != NULL)
    fail_msg("the killed master's vote: %s", votes);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);

  assert_int_equal(rh_server_restart(fx->servers[0]), 0);
  char needle[96];
  snprintf(needle, sizeof needle, "master 127.0.0.1:%d: connected", rh_server_port(fx->servers[0]));
  if (!fx_wait_log(fx, FX_ALL, needle, 5000))
    fail_msg("no TLS reconnect to the restarted master:\n%s", fx_log_text(fx, FX_ALL));
  /* The new connection carries locks (TLS session and handshake redone). */
  lock_roundtrip(fx, c, "tls:restart-after", 3);
}

/* ---- woken wait ------------------------------------------------------------------- */

#define FALLBACK_MS 10000u
#define WAIT_MS 15000u
#define WAKE_BOUND_MS 2000u

static void test_woken_wait(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 3, "server", 0, NULL);
  redlock_t *holder = fx_open(fx, 0, tls_options(fx, 3, "ca.crt"));
  redlock_options_t *opts = tls_options(fx, 3, "ca.crt");
  assert_int_equal(redlock_options_set_retry(opts, -1, FALLBACK_MS, 0), 0);
  redlock_t *waiting = fx_open(fx, 1, opts);

  redlock_lock_t *held = NULL;
  FX_ASSERT_RC(fx, holder, redlock_trylock(holder, "tls:wake", TTL, &held), REDLOCK_OK);
  fx_call_t w = {.fn = fx_call_lock_wait,
                 .client = waiting,
                 .name = "tls:wake",
                 .ttl_ms = TTL,
                 .wait_ms = WAIT_MS};
  fx_call_start(&w);
  /* Every master has one subscriber to the channel: the waiter's, over TLS. */
  const char *channel = REDLOCK_RELEASE_CHANNEL_PREFIX "{tls:wake}";
  if (!fx_wait_subscribed(fx, fx->n, channel, 1, 5000) ||
      !fx_wait_subscribed_at_most(fx, fx->n, channel, 1, 0))
    fail_msg("the waiter's TLS subscriber connections did not subscribe:\n%s",
             fx_log_text(fx, FX_ALL));
  uint64_t t0 = rh_now_ms();
  FX_ASSERT_RC(fx, holder, redlock_unlock(holder, held), REDLOCK_OK);
  fx_call_join(&w, (int)WAIT_MS); /* the status below tells */
  FX_ASSERT_RC(fx, waiting, w.rc, REDLOCK_OK);
  if (w.t_done - t0 > WAKE_BOUND_MS)
    fail_msg("woken after %llu ms (fallback %u ms)", (unsigned long long)(w.t_done - t0),
             FALLBACK_MS);
  /* On a quorum: a master the release had not reached yet when the woken
   * attempt got there refused it, legitimately. */
  assert_true(fx_holding(fx, 3, "tls:wake", redlock_lock_value(w.lock)) >= 2);
  FX_ASSERT_RC(fx, waiting, redlock_unlock(waiting, w.lock), REDLOCK_OK);
}

/* ---- handshake within the connect timeout ----------------------------------------- */

/* A loopback listener that never accepts: the kernel completes TCP
 * connects to it, but no TLS byte ever comes back. */
static int silent_listener(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  assert_int_equal(listen(fd, 64), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
  *port = ntohs(addr.sin_port);
  return fd;
}

static void test_handshake_timeout(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 2, "server", 0, NULL);
  int port;
  int fd = silent_listener(&port);
  char silent[64];
  snprintf(silent, sizeof silent, "rediss://127.0.0.1:%d", port);
  const char *uris[3] = {rh_server_uri(fx->servers[0]), rh_server_uri(fx->servers[1]), silent};
  redlock_options_t *opts = fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_tls(opts, cert("ca.crt"), NULL, NULL, NULL), 0);
  uint64_t elapsed;
  redlock_t *c;
  /* redlock_open waits for every master's first attempt: the silent one's
   * ends at the connect timeout, not later. */
  FX_TIMED(elapsed, c = fx_open(fx, 0, opts));
  if (elapsed + 50 < FX_IT_CONNECT_MS || elapsed > FX_IT_CONNECT_MS + SLACK_MS)
    fail_msg("redlock_open took %llu ms (connect timeout %u ms)", (unsigned long long)elapsed,
             FX_IT_CONNECT_MS);
  char needle[96];
  snprintf(needle, sizeof needle, "master 127.0.0.1:%d: TLS handshake timed out", port);
  if (!fx_log_contains(fx, FX_ALL, needle))
    fail_msg("no handshake timeout for the silent master:\n%s", fx_log_text(fx, FX_ALL));
  /* Counted as a failed handshake. */
  char stats[65536];
  int n = redlock_stats(c, REDLOCK_STATS_PROMETHEUS, stats, sizeof stats);
  assert_true(n > 0 && (size_t)n < sizeof stats);
  char want[128];
  snprintf(want, sizeof want,
           "redlock_master_tls_handshake_failures_total{master=\"127.0.0.1:%d\"} ", port);
  const char *at = strstr(stats, want);
  if (at == NULL || strtol(at + strlen(want), NULL, 10) < 1)
    fail_msg("the stalled handshake is not counted:\n%s", stats);
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, "tls:silent", TTL, &lock), REDLOCK_OK);
  char votes[1024];
  votes_of(c, votes, sizeof votes);
  if (strstr(votes, "=down (TLS handshake timed out") == NULL)
    fail_msg("the silent master's vote: %s", votes);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  fx_close(fx, 0);
  close(fd);
}

/* ---- options with real files ------------------------------------------------------ */

static void test_option_files(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 1, "server", 0, NULL);
  redlock_options_t *opts = fx_options(fx, 0, 1, REDLOCK_LOG_INFO);
  assert_int_equal(
      redlock_options_set_tls(opts, cert("ca.crt"), NULL, cert("client.crt"), cert("mismatch.key")),
      REDLOCK_EINVAL);
  assert_true(fx_log_contains(fx, FX_ALL, "does not match the certificate"));
  assert_int_equal(redlock_options_set_tls(opts, cert("ca.key"), NULL, NULL, NULL), REDLOCK_EINVAL);
  assert_true(fx_log_contains(fx, FX_ALL, "cannot load the CA file"));
  assert_int_equal(
      redlock_options_set_tls(opts, cert("ca.crt"), NULL, cert("client.key"), cert("client.key")),
      REDLOCK_EINVAL);
  assert_true(fx_log_contains(fx, FX_ALL, "cannot load the certificate file"));
  assert_int_equal(redlock_options_set_tls(opts, cert("nothere.crt"), NULL, NULL, NULL),
                   REDLOCK_EINVAL);
  assert_true(fx_log_contains(fx, FX_ALL, "No such file or directory"));
  assert_int_equal(
      redlock_options_set_tls(opts, cert("ca.crt"), g_dir, cert("client.crt"), cert("client.key")),
      0);
  redlock_t *c = fx_open(fx, 0, opts);
  lock_roundtrip(fx, c, "tls:files", 1);
}

/* rediss-sentinel://: a sentinel (TLS port, tls-replication) watching a TLS
 * master; the voter asks it over TLS and locks on the master over TLS (the
 * key is read back there). */
static void test_sentinel_tls(void **state) {
  fx_t *fx = *state;
  start_tls(fx, 0, 3, "server", 0, NULL);
  char dir[320];
  snprintf(dir, sizeof dir, "%s/sentinel", g_dir); /* removed with the certificates */
  assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
  sh_options_t o = {.dir = dir,
                    .master_name = "mymaster",
                    .master_port = rh_server_port(fx->servers[0]),
                    .quorum = 1,
                    .down_after_ms = 5000,
                    .failover_timeout_ms = 10000,
                    .tls_cert_file = cert("server.crt"),
                    .tls_key_file = cert("server.key"),
                    .tls_ca_cert_file = cert("ca.crt")};
  sh_sentinel_t *s = NULL;
  assert_int_equal(sh_start(&s, &o), 0);
  char uri[128];
  snprintf(uri, sizeof uri, "rediss-sentinel://127.0.0.1:%d/mymaster", sh_tls_port(s));
  const char *uris[3] = {uri, rh_server_uri(fx->servers[1]), rh_server_uri(fx->servers[2])};
  redlock_options_t *opts = fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_DEBUG);
  assert_int_equal(redlock_options_set_tls(opts, cert("ca.crt"), NULL, NULL, NULL), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  lock_roundtrip(fx, c, "tls:sentinel", 3);
  char want[96];
  snprintf(want, sizeof want, "names 127.0.0.1:%d as the master of 'mymaster'",
           rh_server_port(fx->servers[0]));
  assert_true(fx_log_contains(fx, 0, want));
  fx_close(fx, 0);
  sh_stop(s);
}

/* A cluster of 3 primaries whose clients and bus speak TLS (cluster_harness:
 * tls-cluster yes), seen through one TLS seed: the voter reads the slot
 * map over TLS and reaches every primary at the TLS port the map gives. */
static void test_cluster_tls(void **state) {
  fx_t *fx = *state;
  ch_options_t co = {.primaries = 3,
                     .tls_cert_file = cert("server.crt"),
                     .tls_key_file = cert("server.key"),
                     .tls_client_cert_file = cert("client.crt"),
                     .tls_client_key_file = cert("client.key"),
                     .tls_ca_cert_file = cert("ca.crt")};
  ch_cluster_t *cl = cfx_start_opts(&co);
  char uri[96];
  snprintf(uri, sizeof uri, "rediss-cluster://127.0.0.1:%d", ch_tls_port(cl, 0));
  const char *uris[1] = {uri};
  redlock_t *c[2];
  for (int k = 0; k < 2; k++) {
    redlock_options_t *opts = fx_options_uris(fx, k, uris, 1, REDLOCK_LOG_INFO);
    assert_int_equal(redlock_options_set_tls(opts, cert("ca.crt"), NULL, NULL, NULL), 0);
    c[k] = fx_open(fx, k, opts);
  }
  enum { N_RES = 24 };
  redlock_lock_t *locks[N_RES];
  unsigned owners = 0;
  for (int i = 0; i < N_RES; i++) {
    char res[32], key[96], buf[32];
    snprintf(res, sizeof res, "tls:cluster:%d", i);
    /* A primary's connection is made on first use: a first try may find
     * it still connecting (its vote then down), so wait with a deadline. */
    assert_int_equal(fx_trylock_until(c[0], res, TTL, 10000, &locks[i]), REDLOCK_OK);
    cfx_key_of(res, key, sizeof key);
    assert_int_equal(rh_server_command(ch_node(cl, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key),
                     0);
    int owner = ch_owner(cl, 0, atoi(buf));
    assert_true(owner >= 0);
    owners |= 1u << owner;
    if (!fx_wait_key_is(ch_node(cl, (unsigned)owner), res, redlock_lock_value(locks[i]), 2000))
      fail_msg("%s: not on its primary %d", key, owner);
    redlock_lock_t *other = NULL;
    assert_int_equal(redlock_trylock(c[1], res, TTL, &other), REDLOCK_ELOCKED);
  }
  assert_int_equal(owners, 7u); /* keys on all three primaries, each reached over TLS */
  for (int i = 0; i < N_RES; i++)
    FX_ASSERT_RC(fx, c[0], redlock_unlock(c[0], locks[i]), REDLOCK_OK);
  cfx_assert_keys(cl, 0);
  char votes[256];
  votes_of(c[0], votes, sizeof votes);
  char want[64];
  snprintf(want, sizeof want, "cluster@127.0.0.1:%d=OK", ch_tls_port(cl, 0));
  if (strstr(votes, want) == NULL)
    fail_msg("want %s in %s", want, votes);
}

/* ---- main ---------------------------------------------------------------------------- */

#define TC(fn) FX_TEST(fn, 0)

int main(int argc, char **argv) {
  fx_use_profile(&fx_profile_integration);
  if (argc < 2) {
    fprintf(stderr, "usage: %s MAKE_CERTS_SH\n", argv[0]);
    return 2;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/redlock-tls-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (mkdtemp(g_dir) == NULL) {
    perror("mkdtemp");
    return 2;
  }
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "sh '%s' '%s'", argv[1], g_dir);
  if (system(cmd) != 0) {
    fprintf(stderr, "test_tls: %s failed\n", cmd);
    return 2;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_supported),
      TC(test_good_handshake),
      TC(test_wrong_ca),
      TC(test_name_mismatch),
      TC(test_verify_off),
      TC(test_cn_only),
      TC(test_encrypted_key),
      TC(test_mutual_tls),
      TC(test_mixed_plain_tls),
      TC(test_auth_over_tls),
      TC(test_restart_reconnect),
      TC(test_woken_wait),
      TC(test_handshake_timeout),
      TC(test_option_files),
      TC(test_sentinel_tls),
      cmocka_unit_test_setup_teardown(test_cluster_tls, fx_setup_0, cfx_teardown),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "test_tls: could not remove %s\n", g_dir);
  return failed;
}
