/* test_resolve.c: master host names are looked up off the loop thread.
 *
 * Runs under the getaddrinfo() shim tests/support/slowdns.c: the test
 * re-executes itself with LD_PRELOAD pointing at it (argv[1]), then maps the
 * names it uses (*.redlock.test) to loopback addresses, with delays, or to
 * "no such name"; no DNS query ever leaves the machine.
 *
 * Asserts:
 *  - a master whose name takes 5 s to resolve does not stall the client:
 *    redlock_open returns within its connect timeout (plus slack), lock +
 *    unlock cycles on the two healthy masters each finish well within a
 *    second while lookups hang, and a watched lock on them is not lost;
 *  - an unresolvable name marks that master down with the reason in the log
 *    ("cannot resolve"), the other masters carry on, and it is retried;
 *  - the name is looked up again on every reconnect: a name that first
 *    points at an address where nothing listens is found again once it
 *    points at the live master;
 *  - IPv6: a literal redis://[::1]:P and a name that resolves to ::1 work;
 *  - a lookup that hangs 30 s neither starves the lookups of the healthy
 *    masters (named too) when they must reconnect -- locks are
 *    granted again within 3 s -- nor the program's own uv_getaddrinfo on
 *    libuv's thread pool, nor holds up redlock_close, which returns
 *    within its bound while the lookup still hangs; the attempt fails with
 *    "name lookup timed out after N ms";
 *  - every address of a name is tried in order: a name whose first address
 *    refuses connects through the second, and the log names the first's
 *    failure; when all refuse, the verdict names each address;
 *  - a close while a lookup hangs returns promptly (and leaks nothing under
 *    ASan: the lookup's thread frees its request when it returns).
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
#include <uv.h>

#include "fixture.h"

#define SLOW_MS 5000
#define HANG_MS 30000 /* never answers within a test */
#define CONNECT_MS 800u

typedef int (*map_fn)(const char *name, const char *ip, int delay_ms);
typedef int (*lookups_fn)(const char *name);
static map_fn dns_map;
static lookups_fn dns_lookups;

static char uri_buf[4][128];

static const char *uri_for(int i, const char *host, int port) {
  snprintf(uri_buf[i], sizeof uri_buf[i], "redis://%s:%d", host, port);
  return uri_buf[i];
}

static redlock_t *open_with(fx_t *fx, const char *const *uris, size_t n) {
  redlock_options_t *opts = fx_options_uris(fx, 0, uris, n, REDLOCK_LOG_DEBUG);
  assert_int_equal(redlock_options_set_timeouts(opts, CONNECT_MS, 200), REDLOCK_OK);
  uint64_t t0 = rh_now_ms();
  redlock_t *client = fx_open(fx, 0, opts);
  uint64_t took = rh_now_ms() - t0;
  /* Bounded by the connect timeout, not by the 5 s lookup. */
  if (took > CONNECT_MS + 1500)
    fail_msg("redlock_open took %llu ms", (unsigned long long)took);
  return client;
}

/* n lock + unlock cycles, each within max_ms (a stalled loop takes seconds). */
static void cycles(redlock_t *client, int n, uint64_t max_ms) {
  for (int i = 0; i < n; i++) {
    char res[64];
    snprintf(res, sizeof res, "resolve-%d-%d", (int)getpid(), i);
    redlock_lock_t *lock = NULL;
    uint64_t t0 = rh_now_ms();
    assert_int_equal(redlock_lock(client, res, 5000, &lock), REDLOCK_OK);
    assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
    uint64_t took = rh_now_ms() - t0;
    if (took > max_ms)
      fail_msg("cycle %d took %llu ms", i, (unsigned long long)took);
  }
}

static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)reason;
  *(int *)arg = 1;
}

static void test_slow_lookup_no_stall(void **state) {
  fx_t *fx = *state;
  dns_map("slow.redlock.test", "127.0.0.1", SLOW_MS);
  const char *uris[3] = {rh_server_uri(fx->servers[0]), rh_server_uri(fx->servers[1]),
                         uri_for(0, "slow.redlock.test", rh_server_port(fx->servers[2]))};
  redlock_t *client = open_with(fx, uris, 3);
  /* A watched lock lives through lookups: its ttl, 2 s (renewed about every
   * 670 ms), is far below the 5 s lookup, so a loop stalled by it loses the
   * lock, and far above a renewal's time under ThreadSanitizer on a loaded
   * machine (600 ms was lost there). */
  int lost = 0;
  redlock_lock_t *watched = NULL;
  assert_int_equal(redlock_lock(client, "resolve-watched", 2000, &watched), REDLOCK_OK);
  assert_int_equal(redlock_watch(client, watched, on_lost, &lost), REDLOCK_OK);
  uint64_t t0 = rh_now_ms();
  cycles(client, 40, 500);
  /* Keep going until the first 5 s lookup has surely been under way. */
  while (rh_now_ms() - t0 < SLOW_MS / 2)
    cycles(client, 5, 500);
  assert_true(dns_lookups("slow.redlock.test") >= 1);
  assert_int_equal(lost, 0);
  assert_false(redlock_lock_is_lost(watched));
  assert_int_equal(redlock_unlock(client, watched), REDLOCK_OK);
  fx_close(fx, 0);
}

static int log_has_cannot_resolve(void *arg) {
  return fx_log_contains(arg, FX_ALL, "nowhere.redlock.test") &&
         fx_log_contains(arg, FX_ALL, "cannot resolve");
}

static int lookups_at_least_2(void *arg) { return dns_lookups(arg) >= 2; }

static void test_unresolvable(void **state) {
  fx_t *fx = *state;
  dns_map("nowhere.redlock.test", NULL, 0);
  const char *uris[3] = {rh_server_uri(fx->servers[0]), rh_server_uri(fx->servers[1]),
                         uri_for(0, "nowhere.redlock.test", rh_server_port(fx->servers[2]))};
  redlock_t *client = open_with(fx, uris, 3);
  assert_true(rh_wait_until(log_has_cannot_resolve, fx, 5000));
  cycles(client, 10, 1000);
  char votes[512];
  assert_true(redlock_last_votes(client, votes, sizeof votes) > 0);
  assert_non_null(strstr(votes, "nowhere.redlock.test"));
  /* Retried with backoff: looked up again. */
  assert_true(rh_wait_until(lookups_at_least_2, "nowhere.redlock.test", 5000));
  fx_close(fx, 0);
}

static void test_lookup_again_on_reconnect(void **state) {
  fx_t *fx = *state;
  /* Nothing listens on 127.0.0.2 at that port: the master is "gone". */
  dns_map("moving.redlock.test", "127.0.0.2", 0);
  const char *uris[2] = {rh_server_uri(fx->servers[0]),
                         uri_for(0, "moving.redlock.test", rh_server_port(fx->servers[1]))};
  redlock_t *client = open_with(fx, uris, 2); /* quorum: both */
  /* A trylock: with 2 masters it needs both. */
  redlock_lock_t *lock = NULL;
  assert_int_not_equal(fx_trylock_until(client, "resolve-moving", 5000, 0, &lock), REDLOCK_OK);
  /* It comes back behind the same name at another address. */
  dns_map("moving.redlock.test", "127.0.0.1", 0);
  assert_int_equal(fx_trylock_until(client, "resolve-moving", 5000, 5000, &lock), REDLOCK_OK);
  redlock_unlock(client, lock);
  assert_true(dns_lookups("moving.redlock.test") >= 2);
  fx_close(fx, 0);
}

static void test_ipv6(void **state) {
  fx_t *fx = *state;
  rh_options_t ro = {.bind_also = "::1"};
  rh_server_t *v6 = NULL;
  if (rh_server_start(&v6, &ro) != 0) {
    fprintf(stderr, "SKIP: cannot start a redis-server on ::1\n");
    skip();
  }
  dns_map("v6.redlock.test", "::1", 0);
  char literal[128];
  snprintf(literal, sizeof literal, "redis://[::1]:%d", rh_server_port(v6));
  const char *uris[2] = {literal, uri_for(0, "v6.redlock.test", rh_server_port(v6))};
  /* One client per spelling of the master, with two v4 masters beside it. */
  for (int i = 0; i < 2; i++) {
    const char *set[3] = {uris[i], rh_server_uri(fx->servers[0]), rh_server_uri(fx->servers[1])};
    redlock_options_t *opts = fx_options_uris(fx, 0, set, 3, REDLOCK_LOG_DEBUG);
    redlock_t *client = fx_open(fx, 0, opts);
    redlock_lock_t *lock = NULL;
    assert_int_equal(redlock_lock(client, "resolve-v6", 5000, &lock), REDLOCK_OK);
    char value[128];
    assert_int_equal(rh_server_command(v6, value, sizeof value, "GET %s", "resolve-v6"), 0);
    assert_string_equal(value, redlock_lock_value(lock));
    assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
    fx_close(fx, 0);
  }
  rh_server_free(v6);
}

static void host_lookup_done(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  *(int *)req->data = status;
  uv_freeaddrinfo(res);
}

/* The case: masters named by host name, one name hanging. */
static int killed_2(void *arg) { return fx_log_count(arg, 0, "connection lost") >= 2; }

static void test_hung_lookup_starves_nobody(void **state) {
  fx_t *fx = *state;
  dns_map("a.redlock.test", "127.0.0.1", 0);
  dns_map("b.redlock.test", "127.0.0.1", 0);
  dns_map("hang.redlock.test", "127.0.0.1", HANG_MS);
  const char *uris[3] = {uri_for(0, "a.redlock.test", rh_server_port(fx->servers[0])),
                         uri_for(1, "b.redlock.test", rh_server_port(fx->servers[1])),
                         uri_for(2, "hang.redlock.test", rh_server_port(fx->servers[2]))};
  uint64_t t_start = rh_now_ms();
  redlock_t *client = open_with(fx, uris, 3);
  redlock_lock_t *lock = NULL;
  assert_int_equal(fx_trylock_until(client, "resolve-hung", 5000, 3000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  /* Five attempts of the hung master time out: more than libuv's 4 pool
   * threads' worth of lookups, had each attempt started one of its own. */
  if (!fx_wait_log_count(fx, 0, "timed out", 5, 15000))
    fail_msg("the hung master's attempts did not time out:\n%s", fx_log_text(fx, 0));
  /* Nor is the host program's own lookup on libuv's thread pool held up
   * (libuv gives lookups, "slow I/O", at most 2 of its 4 threads). */
  uv_loop_t loop;
  uv_getaddrinfo_t host_req;
  int host_status = 1;
  host_req.data = &host_status;
  assert_int_equal(uv_loop_init(&loop), 0);
  uint64_t h0 = rh_now_ms();
  assert_int_equal(uv_getaddrinfo(&loop, &host_req, host_lookup_done, "a.redlock.test", NULL, NULL),
                   0);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  uint64_t host_ms = rh_now_ms() - h0;
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_int_equal(host_status, 0);
  if (host_ms > 1000)
    fail_msg("the program's own uv_getaddrinfo waited %llu ms", (unsigned long long)host_ms);
  /* The healthy masters must look their names up again to reconnect. */
  char buf[64];
  for (int i = 0; i < 2; i++)
    assert_int_equal(rh_server_command(fx->servers[i], buf, sizeof buf, "CLIENT KILL TYPE normal"),
                     0);
  assert_true(rh_wait_until(killed_2, fx, 3000));
  uint64_t t0 = rh_now_ms();
  int rc = fx_trylock_until(client, "resolve-hung", 5000, 3000, &lock);
  if (rc != REDLOCK_OK)
    fail_msg("no lock %llu ms after the healthy masters dropped: %s\n%s",
             (unsigned long long)(rh_now_ms() - t0), redlock_strerror(rc), fx_log_text(fx, 0));
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_true(fx_log_contains(fx, 0, "name lookup timed out after 800 ms"));
  /* Only one lookup of the hung name at a time: its attempts wait for it. */
  assert_int_equal(dns_lookups("hang.redlock.test"), 1);
  uint64_t closed_ms;
  FX_TIMED(closed_ms, fx_close(fx, 0));
  if (closed_ms > CONNECT_MS + 1000)
    fail_msg("redlock_close took %llu ms", (unsigned long long)closed_ms);
  /* Else the lookup answered meanwhile and the close proved nothing. */
  assert_true(rh_now_ms() - t_start < HANG_MS);
}

static void test_every_address(void **state) {
  fx_t *fx = *state;
  int port = rh_server_port(fx->servers[1]);
  /* Nothing listens on 127.0.0.2 (the servers bind 127.0.0.1 only). */
  dns_map("two.redlock.test", "127.0.0.2,127.0.0.1", 0);
  dns_map("dead.redlock.test", "127.0.0.2,127.0.0.3", 0);
  const char *uris[3] = {rh_server_uri(fx->servers[0]), uri_for(0, "two.redlock.test", port),
                         uri_for(1, "dead.redlock.test", rh_server_port(fx->servers[2]))};
  redlock_t *client = open_with(fx, uris, 3); /* quorum 2: two.redlock.test must vote */
  redlock_lock_t *lock = NULL;
  assert_int_equal(fx_trylock_until(client, "resolve-every", 5000, 3000, &lock), REDLOCK_OK);
  char value[128];
  assert_int_equal(
      rh_server_command(fx->servers[1], value, sizeof value, "GET %s", "resolve-every"), 0);
  assert_string_equal(value, redlock_lock_value(lock));
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  char first[64];
  snprintf(first, sizeof first, "127.0.0.2:%d: Connection refused", port);
  if (!fx_log_contains(fx, 0, first))
    fail_msg("no \"%s\" in the log:\n%s", first, fx_log_text(fx, 0));
  /* Every address refused: each is named. */
  char votes[1024], second[64];
  int dead_port = rh_server_port(fx->servers[2]);
  snprintf(first, sizeof first, "127.0.0.2:%d: Connection refused", dead_port);
  snprintf(second, sizeof second, "127.0.0.3:%d: Connection refused", dead_port);
  assert_true(redlock_last_votes(client, votes, sizeof votes) > 0);
  if (strstr(votes, first) == NULL || strstr(votes, second) == NULL)
    fail_msg("the verdict does not name both addresses: %s", votes);
  fx_close(fx, 0);
}

static void test_close_during_hung_lookup(void **state) {
  fx_t *fx = *state;
  dns_map("stuck.redlock.test", "127.0.0.1", HANG_MS);
  const char *uris[2] = {rh_server_uri(fx->servers[0]),
                         uri_for(0, "stuck.redlock.test", rh_server_port(fx->servers[1]))};
  for (int round = 0; round < 2; round++) {
    open_with(fx, uris, 2);
    uint64_t closed_ms;
    FX_TIMED(closed_ms, fx_close(fx, 0));
    if (closed_ms > CONNECT_MS + 1000)
      fail_msg("redlock_close took %llu ms", (unsigned long long)closed_ms);
  }
  /* Each client looked the name up once; both lookups still hang. */
  assert_int_equal(dns_lookups("stuck.redlock.test"), 2);
}

int main(int argc, char **argv) {
  fx_use_profile(&fx_profile_integration);
  if (getenv("REDLOCK_SLOWDNS_ACTIVE") == NULL) {
    if (argc < 2) {
      fprintf(stderr, "usage: %s PATH/slowdns.so\n", argv[0]);
      return 2;
    }
    /* Again, under the shim.  ASan wants to be first in the preload list;
     * the shim is not instrumented, so that check is turned off. */
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
  dns_lookups = (lookups_fn)dlsym(RTLD_DEFAULT, "slowdns_lookups");
  if (dns_map == NULL || dns_lookups == NULL) {
    fprintf(stderr, "the slowdns shim is not loaded\n");
    return 2;
  }
  const struct CMUnitTest tests[] = {
      FX_TEST(test_slow_lookup_no_stall, 3),
      FX_TEST(test_unresolvable, 3),
      FX_TEST(test_lookup_again_on_reconnect, 3),
      FX_TEST(test_ipv6, 3),
      FX_TEST(test_every_address, 3),
      FX_TEST(test_hung_lookup_starves_nobody, 3),
      FX_TEST(test_close_during_hung_lookup, 3),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
