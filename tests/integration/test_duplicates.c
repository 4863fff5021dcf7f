/* test_duplicates.c: one server listed under two spellings never gives two
 * votes.
 *
 * Masters A and B (fresh redis-server processes, A also on ::1 when the
 * machine has IPv6 loopback).  Each client lists A as redis://127.0.0.1:PA,
 * A again under another spelling, and B: three voters, two servers.  With B
 * stopped (SIGSTOP), one physical server is left, and no lock or extension
 * may be granted on it.
 *
 * Runs under the getaddrinfo() shim tests/support/slowdns.c (the test
 * re-executes itself with LD_PRELOAD, as test_resolve does), so that names
 * can resolve to the forms a DNS answer could give (::ffff:127.0.0.1, ::1)
 * without any query leaving the machine; `localhost` goes to the real
 * getaddrinfo (/etc/hosts).
 *
 * Asserts:
 *  - found once connected (resolved address, or run_id from INFO server):
 *    localhost, LOCALHOST, a name resolving to ::ffff:127.0.0.1, and
 *    [::1] beside 127.0.0.1 (one server, two addresses: only its run_id
 *    tells), and a name resolving to ::1 beside [::1]: the issue's scenario
 *    (lock on both servers, then B stopped) gives REDLOCK_ENOQUORUM for the
 *    extension and for a new lock, the WARN is logged at open, once, and
 *    redlock_last_votes names the duplicate and whose it is;
 *  - refused by redlock_options_add_node (EINVAL, with the reason in the
 *    log): 127.1, 2130706433, [::ffff:127.0.0.1] beside 127.0.0.1, and
 *    [0:0::1] beside [::1];
 *  - a restart of the server (new run_id, both voters reconnect) is judged
 *    again: still one vote;
 *  - a proxy in front of A listed beside A (one run_id, two addresses): the
 *    direct connection votes while the proxy's is down, and is a duplicate
 *    again once it is back.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fault_proxy.h"
#include "fixture.h"

#define TTL 10000u

typedef int (*map_fn)(const char *name, const char *ip, int delay_ms);
static map_fn dns_map;

/* Whether the masters also listen on ::1 (set up by setup_v6). */
static int have_v6;

static int setup_v6(void **state) {
  rh_options_t ro = {.bind_also = "::1"};
  fx_t *fx = fx_new(2, &ro);
  have_v6 = fx != NULL;
  if (fx == NULL) {
    fprintf(stderr, "note: cannot start redis-server on ::1 too; IPv6 cases will be skipped\n");
    fx = fx_new(2, NULL);
  }
  *state = fx;
  return fx != NULL ? 0 : -1;
}

static void skip_without_v6(void) {
  if (!have_v6) {
    fprintf(stderr, "SKIP: IPv6 loopback (::1) is not available\n");
    skip();
  }
}

/* "redis://HOST:PORT" of server s under another spelling of its host. */
static void uri_as(char *buf, size_t size, const char *host, const rh_server_t *s) {
  snprintf(buf, size, "redis://%s:%d", host, rh_server_port(s));
}

/* "LABEL=duplicate (same server as FIRST" must be in the votes. */
static void assert_names_duplicate(fx_t *fx, const char *votes, const char *dup_label,
                                   const char *first_label) {
  char want[256];
  snprintf(want, sizeof want, "%s=duplicate (same server as %s", dup_label, first_label);
  if (strstr(votes, want) == NULL)
    fail_msg("votes \"%s\" lack \"%s\"\n%s", votes, want, fx_log_text(fx, 0));
}

static void assert_votes_name_duplicate(fx_t *fx, redlock_t *c, const char *dup_label,
                                        const char *first_label) {
  char votes[1024];
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  assert_names_duplicate(fx, votes, dup_label, first_label);
}

/* The issue's scenario: [first, second (the same server as first), B].
 * The outcomes are asserted first, the reports after. */
static void one_server_one_vote(fx_t *fx, const char *first, const char *second,
                                const char *dup_label, const char *first_label) {
  const char *uris[3] = {first, second, rh_server_uri(fx->servers[1])};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO));
  /* Reported at open: the handshakes are over when redlock_open returns. */
  unsigned warned_at_open = fx_log_count(fx, 0, "are one server");

  /* Both servers up: granted on A (its first voter) and B. */
  FX_NAME(res, "dup");
  redlock_lock_t *lock = NULL;
  char votes_granted[1024];
  FX_ASSERT_RC(fx, c, redlock_lock(c, res, TTL, &lock), REDLOCK_OK);
  assert_true(redlock_last_votes(c, votes_granted, sizeof votes_granted) > 0);

  /* B stopped: one physical server left.  Counting A's two spellings as two
   * votes would make the extension return OK. */
  assert_int_equal(fx_pause(fx, 2u, 1), 0);
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, TTL), REDLOCK_ENOQUORUM);
  assert_votes_name_duplicate(fx, c, dup_label, first_label);
  FX_NAME(res2, "dup-new");
  redlock_lock_t *other = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res2, TTL, &other), REDLOCK_ENOQUORUM);
  assert_votes_name_duplicate(fx, c, dup_label, first_label);
  assert_int_equal(fx_pause(fx, 2u, 0), 0);
  assert_names_duplicate(fx, votes_granted, dup_label, first_label);
  redlock_unlock(c, lock);

  /* One WARN naming both, logged at open and not again per round. */
  if (warned_at_open != 1 || fx_log_count(fx, 0, "are one server") != 1)
    fail_msg("want one WARN naming the duplicate, at open:\n%s", fx_log_text(fx, 0));
  assert_true(fx_log_contains(fx, 0, dup_label));
  fx_close(fx, 0);
}

static void test_issue_localhost(void **state) {
  fx_t *fx = *state;
  char second[128], label[64], first_label[64];
  uri_as(second, sizeof second, "localhost", fx->servers[0]);
  snprintf(label, sizeof label, "localhost:%d", rh_server_port(fx->servers[0]));
  fx_label(fx->servers[0], first_label, sizeof first_label);
  one_server_one_vote(fx, rh_server_uri(fx->servers[0]), second, label, first_label);
}

static void test_upper_case_localhost(void **state) {
  fx_t *fx = *state;
  char second[128], label[64], first_label[64];
  uri_as(second, sizeof second, "LOCALHOST", fx->servers[0]);
  snprintf(label, sizeof label, "LOCALHOST:%d", rh_server_port(fx->servers[0]));
  fx_label(fx->servers[0], first_label, sizeof first_label);
  one_server_one_vote(fx, rh_server_uri(fx->servers[0]), second, label, first_label);
}

/* A name whose answer is an IPv4-mapped IPv6 address: the same address. */
static void test_name_to_mapped_v4(void **state) {
  fx_t *fx = *state;
  dns_map("mapped.redlock.test", "::ffff:127.0.0.1", 0);
  char second[128], label[64], first_label[64];
  uri_as(second, sizeof second, "mapped.redlock.test", fx->servers[0]);
  snprintf(label, sizeof label, "mapped.redlock.test:%d", rh_server_port(fx->servers[0]));
  fx_label(fx->servers[0], first_label, sizeof first_label);
  one_server_one_vote(fx, rh_server_uri(fx->servers[0]), second, label, first_label);
}

/* One server at two addresses (127.0.0.1 and ::1): only its run_id tells. */
static void test_v6_and_v4_same_server(void **state) {
  fx_t *fx = *state;
  skip_without_v6();
  char second[128], label[64], first_label[64];
  uri_as(second, sizeof second, "[::1]", fx->servers[0]);
  snprintf(label, sizeof label, "[::1]:%d", rh_server_port(fx->servers[0]));
  fx_label(fx->servers[0], first_label, sizeof first_label);
  one_server_one_vote(fx, rh_server_uri(fx->servers[0]), second, label, first_label);
}

/* [::1] first, then a name that resolves to ::1. */
static void test_v6_name(void **state) {
  fx_t *fx = *state;
  skip_without_v6();
  dns_map("v6.redlock.test", "0:0::1", 0);
  char first[128], second[128], label[64], first_label[64];
  uri_as(first, sizeof first, "[::1]", fx->servers[0]);
  uri_as(second, sizeof second, "v6.redlock.test", fx->servers[0]);
  snprintf(label, sizeof label, "v6.redlock.test:%d", rh_server_port(fx->servers[0]));
  snprintf(first_label, sizeof first_label, "[::1]:%d", rh_server_port(fx->servers[0]));
  one_server_one_vote(fx, first, second, label, first_label);
}

/* Numeric spellings are compared without any lookup: refused at once. */
static void assert_refused(fx_t *fx, const char *first_host, const char *second_host) {
  char first[128], second[128];
  uri_as(first, sizeof first, first_host, fx->servers[0]);
  uri_as(second, sizeof second, second_host, fx->servers[0]);
  fx_log_clear(fx, 0);
  redlock_options_t *opts =
      fx_options_uris(fx, 0, (const char *const[]){first}, 1, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_add_node(opts, rh_server_uri(fx->servers[1])), REDLOCK_OK);
  int rc = redlock_options_add_node(opts, second);
  redlock_options_free(opts);
  if (rc != REDLOCK_EINVAL)
    fail_msg("%s beside %s: add_node returned %d, want EINVAL", second, first, rc);
  if (!fx_log_contains(fx, 0, "already listed"))
    fail_msg("%s beside %s: no reason logged:\n%s", second, first, fx_log_text(fx, 0));
}

static void test_numeric_spellings_refused(void **state) {
  fx_t *fx = *state;
  assert_refused(fx, "127.0.0.1", "127.1");
  assert_refused(fx, "127.0.0.1", "2130706433");
  assert_refused(fx, "127.0.0.1", "[::ffff:127.0.0.1]");
  assert_refused(fx, "[::ffff:127.0.0.1]", "127.0.0.1");
  assert_refused(fx, "127.0.0.1", "0x7f.0.0.1");
  assert_refused(fx, "[::1]", "[0:0::1]");
  assert_refused(fx, "[::1]", "[0000:0000:0000:0000:0000:0000:0000:0001]");
  assert_refused(fx, "localhost", "LOCALHOST");
}

/* A restart changes the run_id: the voters are judged again when they
 * reconnect, and the one server still has one vote. */
typedef struct {
  fx_t *fx;
  redlock_t *c;
  const char *res;
  const char *want;
} relock_t;

/* One trylock + unlock that won with the duplicate reported as such (both
 * voters of A reconnected, A's first one voting). */
static int won_with_duplicate(void *arg) {
  relock_t *r = arg;
  redlock_lock_t *lock = NULL;
  if (redlock_trylock(r->c, r->res, TTL, &lock) != REDLOCK_OK)
    return 0;
  char votes[1024];
  redlock_last_votes(r->c, votes, sizeof votes);
  redlock_unlock(r->c, lock);
  return strstr(votes, r->want) != NULL;
}

static void test_restart_judged_again(void **state) {
  fx_t *fx = *state;
  skip_without_v6();
  char second[128], label[64], first_label[64], want[256];
  uri_as(second, sizeof second, "[::1]", fx->servers[0]);
  snprintf(label, sizeof label, "[::1]:%d", rh_server_port(fx->servers[0]));
  fx_label(fx->servers[0], first_label, sizeof first_label);
  const char *uris[3] = {rh_server_uri(fx->servers[0]), second, rh_server_uri(fx->servers[1])};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO));
  assert_int_equal(fx_log_count(fx, 0, "are one server"), 1);

  assert_int_equal(rh_server_kill(fx->servers[0]), 0);
  assert_int_equal(rh_server_restart(fx->servers[0]), 0);
  FX_NAME(res, "dup-restart");
  snprintf(want, sizeof want, "%s=OK %s=duplicate (same server as %s", first_label, label,
           first_label);
  relock_t r = {fx, c, res, want};
  if (!rh_wait_until(won_with_duplicate, &r, 10000))
    fail_msg("no lock with the duplicate reported after the restart:\n%s", fx_log_text(fx, 0));

  assert_int_equal(fx_pause(fx, 2u, 1), 0);
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ENOQUORUM);
  assert_votes_name_duplicate(fx, c, label, first_label);
  assert_int_equal(fx_pause(fx, 2u, 0), 0);
  fx_close(fx, 0);
}

/* A proxy in front of A, listed before A itself: two addresses, one run_id.
 * While the proxy's connection is down A's direct one votes; when it is back
 * the direct one is a duplicate again. */
static int won_plain(void *arg) {
  relock_t *r = arg;
  redlock_lock_t *lock = NULL;
  if (redlock_trylock(r->c, r->res, TTL, &lock) != REDLOCK_OK)
    return 0;
  char votes[1024];
  redlock_last_votes(r->c, votes, sizeof votes);
  redlock_unlock(r->c, lock);
  return strstr(votes, r->want) != NULL;
}

static void test_proxy_in_front(void **state) {
  fx_t *fx = *state;
  fault_proxy_t *proxy = NULL;
  assert_int_equal(fault_proxy_start(&proxy, "127.0.0.1", rh_server_port(fx->servers[0])), 0);
  char via[128], via_label[64], direct_label[64], want[256];
  snprintf(via, sizeof via, "redis://127.0.0.1:%d", fault_proxy_port(proxy));
  snprintf(via_label, sizeof via_label, "127.0.0.1:%d", fault_proxy_port(proxy));
  fx_label(fx->servers[0], direct_label, sizeof direct_label);
  const char *uris[3] = {via, rh_server_uri(fx->servers[0]), rh_server_uri(fx->servers[1])};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO));
  assert_int_equal(fx_log_count(fx, 0, "are one server"), 1);
  assert_true(fx_log_contains(fx, 0, "the same run_id"));
  FX_NAME(res, "dup-proxy");
  snprintf(want, sizeof want, "%s=OK %s=duplicate (same server as %s", via_label, direct_label,
           via_label);
  relock_t r = {fx, c, res, want};
  assert_true(rh_wait_until(won_with_duplicate, &r, 5000));

  /* The proxy's connection gone: A's direct connection is its voter. */
  assert_int_equal(fault_proxy_set_refuse(proxy, 1), 0);
  assert_int_equal(fault_proxy_reset_all(proxy), 0);
  snprintf(want, sizeof want, "%s=OK", direct_label);
  if (!rh_wait_until(won_plain, &r, 5000))
    fail_msg("A's direct connection did not vote with the proxy down:\n%s", fx_log_text(fx, 0));

  /* Back: the direct one is a duplicate again, and one server is no quorum. */
  assert_int_equal(fault_proxy_set_refuse(proxy, 0), 0);
  snprintf(want, sizeof want, "%s=OK %s=duplicate (same server as %s", via_label, direct_label,
           via_label);
  if (!rh_wait_until(won_with_duplicate, &r, 10000))
    fail_msg("no duplicate after the proxy came back:\n%s", fx_log_text(fx, 0));
  assert_int_equal(fx_pause(fx, 2u, 1), 0);
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ENOQUORUM);
  assert_int_equal(fx_pause(fx, 2u, 0), 0);
  assert_int_equal(fx_log_count(fx, 0, "are one server"), 1); /* once per pair */
  fx_close(fx, 0);
  fault_proxy_stop(proxy);
}

int main(int argc, char **argv) {
  fx_use_profile(&fx_profile_integration);
  if (getenv("REDLOCK_SLOWDNS_ACTIVE") == NULL) {
    if (argc < 2) {
      fprintf(stderr, "usage: %s PATH/slowdns.so\n", argv[0]);
      return 2;
    }
    /* Again, under the shim (see test_resolve.c). */
    setenv("LD_PRELOAD", argv[1], 1);
    setenv("REDLOCK_SLOWDNS_ACTIVE", "1", 1);
    char asan[1024];
    const char *old = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "%s%sverify_asan_link_order=0", old ? old : "", old ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
    execv("/proc/self/exe", argv);
    perror("execv");
    return 2;
  }
  dns_map = (map_fn)dlsym(RTLD_DEFAULT, "slowdns_map");
  if (dns_map == NULL) {
    fprintf(stderr, "the slowdns shim is not loaded\n");
    return 2;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_issue_localhost, setup_v6, fx_teardown),
      cmocka_unit_test_setup_teardown(test_upper_case_localhost, setup_v6, fx_teardown),
      cmocka_unit_test_setup_teardown(test_name_to_mapped_v4, setup_v6, fx_teardown),
      cmocka_unit_test_setup_teardown(test_v6_and_v4_same_server, setup_v6, fx_teardown),
      cmocka_unit_test_setup_teardown(test_v6_name, setup_v6, fx_teardown),
      cmocka_unit_test_setup_teardown(test_numeric_spellings_refused, setup_v6, fx_teardown),
      cmocka_unit_test_setup_teardown(test_restart_judged_again, setup_v6, fx_teardown),
      cmocka_unit_test_setup_teardown(test_proxy_in_front, setup_v6, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
