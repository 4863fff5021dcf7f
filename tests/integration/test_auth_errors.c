/* test_auth_errors.c: integration tests of the connection handshake and of
 * masters that answer with errors, against real redis-server processes:
 * requirepass and ACL users (right and wrong credentials), a master that
 * answers -OOM, and the restart quarantine (on, with the default and with a
 * short max TTL).  Failures must show in the return code as a missing
 * quorum and in the log callback with the server's reason.
 * test_quarantine_uptime_rounding_n1 reproduces a known library bug and
 * fails until it is fixed (see the comment above it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fixture.h"

#define TTL 10000u

/* Starts one server with opts into the fixture's slot i. */
static rh_server_t *start_into(fx_t *fx, size_t i, const rh_options_t *opts) {
  assert_true(i < FX_MAX_SERVERS && fx->servers[i] == NULL);
  assert_int_equal(rh_server_start(&fx->servers[i], opts), 0);
  if (fx->n < i + 1)
    fx->n = i + 1;
  return fx->servers[i];
}

static void lock_check_unlock(fx_t *fx, redlock_t *c, rh_server_t *s, const char *res) {
  redlock_lock_t *lock = NULL;
  char value[64];
  FX_ASSERT_RC(fx, c, redlock_lock(c, res, TTL, &lock), REDLOCK_OK);
  snprintf(value, sizeof value, "%s", redlock_lock_value(lock));
  assert_true(fx_key_is(s, res, value));
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_true(fx_key_absent(s, res));
  (void)fx;
}

/* The node must stay unusable: after another failed handshake (the log
 * shows it again) a lock still finds no quorum. */
static void assert_never_usable(fx_t *fx, redlock_t *c, const char *needle) {
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, "it:auth", TTL, &lock), REDLOCK_ENOQUORUM);
  assert_null(lock);
  fx_log_clear(fx, FX_ALL);
  /* Reconnect backoff is capped at 1 s (node.h). */
  if (!fx_wait_log(fx, FX_ALL, needle, 5000))
    fail_msg("no second '%s' in the log:\n%s", needle, fx_log_text(fx, FX_ALL));
  FX_ASSERT_RC(fx, c, redlock_lock(c, "it:auth", TTL, &lock), REDLOCK_ENOQUORUM);
  assert_null(lock);
}

/* Starts a server with o and opens a client over a URI with other
 * credentials (creds: "" for none, ":PASS@" or "USER:PASS@"). */
static redlock_t *open_with_creds(fx_t *fx, const rh_options_t *o, const char *creds) {
  rh_server_t *s = start_into(fx, 0, o);
  char uri[128];
  snprintf(uri, sizeof uri, "redis://%s127.0.0.1:%d", creds, rh_server_port(s));
  const char *uris[] = {uri};
  return fx_open(fx, 0, fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN));
}

/* ---- requirepass ------------------------------------------------------------------- */

static void test_password_ok(void **state) {
  fx_t *fx = *state;
  /* ':' '@' and ' ' must survive the URI (the harness %-escapes them). */
  rh_options_t o = {.password = "s3:cr@t pw"};
  rh_server_t *s = start_into(fx, 0, &o);
  assert_non_null(strstr(rh_server_uri(s), "redis://:s3%3Acr%40t%20pw@127.0.0.1:"));
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, 1, REDLOCK_LOG_WARN));
  lock_check_unlock(fx, c, s, "it:password");
}

static void test_password_wrong_n1(void **state) {
  fx_t *fx = *state;
  rh_options_t o = {.password = "right"};
  redlock_t *c = open_with_creds(fx, &o, ":wrong@");

  if (!(fx_log_contains(fx, FX_ALL, "AUTH") &&
        (fx_log_contains(fx, FX_ALL, "WRONGPASS") || fx_log_contains(fx, FX_ALL, "invalid"))))
    fail_msg("log does not explain the AUTH failure:\n%s", fx_log_text(fx, FX_ALL));
  assert_never_usable(fx, c, "AUTH");
}

static void test_password_missing_n1(void **state) {
  fx_t *fx = *state;
  rh_options_t o = {.password = "right"};
  redlock_t *c = open_with_creds(fx, &o, "");

  /* No AUTH sent: the first handshake command is refused with -NOAUTH. */
  if (!fx_log_contains(fx, FX_ALL, "NOAUTH"))
    fail_msg("log does not mention NOAUTH:\n%s", fx_log_text(fx, FX_ALL));
  assert_never_usable(fx, c, "NOAUTH");
}

/* ---- ACL user ------------------------------------------------------------------------ */

static void test_acl_user_ok(void **state) {
  fx_t *fx = *state;
  rh_options_t o = {.acl_user = "locker", .acl_password = "pw-1"};
  rh_server_t *s = start_into(fx, 0, &o);
  char buf[64];
  assert_non_null(strstr(rh_server_uri(s), "redis://locker:pw-1@127.0.0.1:"));
  /* The harness authenticates as the ACL user too. */
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "ACL WHOAMI"), 0);
  assert_string_equal(buf, "locker");
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, 1, REDLOCK_LOG_WARN));
  lock_check_unlock(fx, c, s, "it:acl");
}

static void test_acl_user_wrong_password_n1(void **state) {
  fx_t *fx = *state;
  rh_options_t o = {.acl_user = "locker", .acl_password = "pw-1"};
  redlock_t *c = open_with_creds(fx, &o, "locker:nope@");
  if (!fx_log_contains(fx, FX_ALL, "WRONGPASS"))
    fail_msg("log does not mention WRONGPASS:\n%s", fx_log_text(fx, FX_ALL));
  assert_never_usable(fx, c, "AUTH");
}

/* ---- a master answering errors ---------------------------------------------------------- */

/* Makes server i refuse writes with -OOM (the client is already connected:
 * the point is the vote's error reply, not a failed handshake). */
static void make_oom(fx_t *fx, size_t i) {
  char buf[256];
  rh_server_t *s = fx->servers[i];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "CONFIG SET maxmemory-policy noeviction"),
                   0);
  assert_string_equal(buf, "OK");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "CONFIG SET maxmemory 1"), 0);
  assert_string_equal(buf, "OK");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "SET it:probe x"), 0);
  assert_true(strncmp(buf, "OOM", 3) == 0);
}

static void oom_minority(fx_t *fx, int log_level) {
  const char *res = "it:oom";
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, 3, log_level));
  make_oom(fx, 0);

  redlock_lock_t *lock = NULL;
  char value[64], votes[512];
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
  snprintf(value, sizeof value, "%s", redlock_lock_value(lock));
  assert_true(fx_key_absent(fx->servers[0], res));
  assert_true(fx_key_is(fx->servers[1], res, value));
  assert_true(fx_key_is(fx->servers[2], res, value));
  /* The round was decided by the two OKs: the OOM master's vote is an
   * error, or still pending if its reply came after the decision. */
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  assert_true(strstr(votes, "error") != NULL || strstr(votes, "pending") != NULL);
  /* Logged when its reply arrives, which may be after the call returned. */
  if (!fx_wait_log(fx, FX_ALL, "OOM", 2000))
    fail_msg("the -OOM reply is not in the log (min level %d):\n%s", log_level,
             fx_log_text(fx, FX_ALL));
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_true(fx_key_absent(fx->servers[1], res));
  assert_true(fx_key_absent(fx->servers[2], res));
}

static void test_oom_master_minority_n3(void **state) { oom_minority(*state, REDLOCK_LOG_DEBUG); }

/* Same with the log at WARN, the level a production program would use.
 * node_warn() documents per-request problems as logged at WARN. */
static void test_oom_master_logged_at_warn_n3(void **state) {
  oom_minority(*state, REDLOCK_LOG_WARN);
}

static void test_oom_master_majority_n3(void **state) {
  fx_t *fx = *state;
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, 3, REDLOCK_LOG_DEBUG));
  make_oom(fx, 0);
  make_oom(fx, 1);
  redlock_lock_t *lock = NULL;
  /* Errors are failed answers, not refusals: no quorum, not "locked". */
  FX_ASSERT_RC(fx, c, redlock_trylock(c, "it:oom2", TTL, &lock), REDLOCK_ENOQUORUM);
  assert_null(lock);
  /* Only the two errors can decide this round, so both were logged. */
  assert_true(fx_log_contains(fx, FX_ALL, "OOM"));
  /* redlock_last_votes() shows the most recent round, which may already be
   * the background release of the lone OK vote; when it is still the
   * acquisition, both errors are in it. */
  char votes[512];
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  if (strncmp(votes, "lost (no quorum):", 17) == 0) {
    char port0[32], port1[32];
    snprintf(port0, sizeof port0, ":%d=error", rh_server_port(fx->servers[0]));
    snprintf(port1, sizeof port1, ":%d=error", rh_server_port(fx->servers[1]));
    if (strstr(votes, port0) == NULL || strstr(votes, port1) == NULL)
      fail_msg("unexpected votes: %s", votes);
  }
  /* The lone OK vote is released (sent after the decision: wait for it). */
  assert_true(fx_wait_key_absent(fx->servers[2], "it:oom2", 2000));
}

/* ---- restart quarantine ------------------------------------------------------------------- */

static void test_quarantine_n1(void **state) {
  fx_t *fx = *state;
  uint64_t t_start = rh_now_ms(); /* before the server starts: its uptime is shorter */
  rh_server_t *s = start_into(fx, 0, NULL);
  const char *uris[] = {rh_server_uri(s)};

  /* Quarantine on, default max TTL (60 s): a master up for less than that
   * may have forgotten keys, its votes do not count, not even as answers. */
  redlock_options_t *opts = fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_quarantine(opts, 1), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, "it:quarantine", 500, &lock), REDLOCK_ENOQUORUM);
  assert_null(lock);
  if (!fx_log_contains(fx, FX_ALL, "quarantine"))
    fail_msg("log does not mention the quarantine:\n%s", fx_log_text(fx, FX_ALL));
  /* The uncounted SET was applied by the master: it must be released
   * (sent after the decision: wait for it). */
  assert_true(fx_wait_key_absent(s, "it:quarantine", 2000));
  fx_close(fx, 0);

  /* Max TTL 1000 ms: the votes count once the master has been up 1 s. */
  opts = fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_quarantine(opts, 1), 0);
  assert_int_equal(redlock_options_set_max_ttl(opts, 1000), 0);
  c = fx_open(fx, 0, opts);
  /* TTLs above max TTL are refused. */
  FX_ASSERT_RC(fx, c, redlock_trylock(c, "it:quarantine", 1001, &lock), REDLOCK_EINVAL);
  int rc = fx_trylock_until(c, "it:quarantine", 500, 0, &lock); /* one attempt */
  if (rh_now_ms() - t_start < 1000) {
    /* Decided before the server could have been up 1 s.  (Fails now and
     * then while the uptime rounding bug exists: see
     * test_quarantine_uptime_rounding_n1.) */
    assert_int_equal(rc, REDLOCK_ENOQUORUM);
  }
  if (rc != REDLOCK_OK &&
      (rc = fx_trylock_until(c, "it:quarantine", 500, 5000, &lock)) != REDLOCK_OK)
    fail_msg("still quarantined after 5 s (last: %s)", redlock_err_name(rc));
  /* Never earlier than max TTL after the start (small slack: Redis counts
   * uptime on its wall clock, we on the monotonic one). */
  assert_true(rh_now_ms() - t_start >= 900);
  assert_true(fx_key_is(s, "it:quarantine", redlock_lock_value(lock)));
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
}

/* KNOWN LIBRARY BUG (this test fails until src/voters/node.c is fixed): Redis
 * reports uptime_in_seconds as the difference of two floored wall-clock
 * seconds (unixtime - starttime), so a server started at x.85 s reports
 * uptime 1 at (x+1).0 s after only ~150 ms.  info_reply_cb in src/voters/node.c
 * takes start = now - uptime ("uptime is rounded down, so start = now -
 * uptime is never early") and so ends the quarantine up to 1 s early; with
 * max TTL 1000 ms there is no quarantine at all.  The test starts the
 * server late in a wall-clock second to make that deterministic. */
static long wall_ms_in_second(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_nsec / 1000000;
}

static int late_in_second(void *arg) {
  (void)arg;
  long ms = wall_ms_in_second();
  return ms >= 800 && ms < 860;
}

static int reports_uptime_1(void *arg) {
  char buf[32];
  assert_int_equal(rh_server_command(arg, buf, sizeof buf, "EVAL %s 0",
                                     "return redis.call('info', 'server')"
                                     ":match('uptime_in_seconds:(%d+)')"),
                   0);
  return atoi(buf) >= 1;
}

static void test_quarantine_uptime_rounding_n1(void **state) {
  fx_t *fx = *state;
  for (int attempt = 0; attempt < 3; attempt++) {
    assert_true(rh_wait_until(late_in_second, NULL, 2500));
    uint64_t t_start = rh_now_ms();
    rh_server_t *s = start_into(fx, 0, NULL);
    /* The server claims a second of uptime well before it has one. */
    assert_true(rh_wait_until(reports_uptime_1, s, 2000));
    if (rh_now_ms() - t_start < 700) {
      const char *uris[] = {rh_server_uri(s)};
      redlock_options_t *opts = fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN);
      assert_int_equal(redlock_options_set_quarantine(opts, 1), 0);
      assert_int_equal(redlock_options_set_max_ttl(opts, 1000), 0);
      redlock_t *c = fx_open(fx, 0, opts);
      redlock_lock_t *lock = NULL;
      int rc = redlock_trylock(c, "it:uptime", 500, &lock);
      uint64_t up_ms = rh_now_ms() - t_start;
      if (up_ms < 1000) {
        if (rc == REDLOCK_OK)
          redlock_unlock(c, lock);
        if (rc != REDLOCK_ENOQUORUM)
          fail_msg("a master up for less than %llu ms (max TTL 1000 ms) had its vote "
                   "counted: trylock returned %s, want REDLOCK_ENOQUORUM",
                   (unsigned long long)up_ms, redlock_err_name(rc));
        return;
      }
      if (rc == REDLOCK_OK)
        redlock_unlock(c, lock);
      fx_close(fx, 0);
    }
    /* Too slow to hit the window (loaded machine): try again. */
    print_message("uptime window missed (attempt %d, %llu ms after start)\n", attempt + 1,
                  (unsigned long long)(rh_now_ms() - t_start));
    rh_server_free(fx->servers[0]);
    fx->servers[0] = NULL;
  }
  skip();
}

FX_MAIN("integration: auth and error replies", &fx_profile_integration,
        FX_TEST(test_password_ok, 0), FX_TEST(test_password_wrong_n1, 0),
        FX_TEST(test_password_missing_n1, 0), FX_TEST(test_acl_user_ok, 0),
        FX_TEST(test_acl_user_wrong_password_n1, 0), FX_TEST(test_oom_master_minority_n3, 3),
        FX_TEST(test_oom_master_logged_at_warn_n3, 3), FX_TEST(test_oom_master_majority_n3, 3),
        FX_TEST(test_quarantine_n1, 0), FX_TEST(test_quarantine_uptime_rounding_n1, 0))
