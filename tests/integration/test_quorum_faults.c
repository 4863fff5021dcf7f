/* test_quorum_faults.c: integration tests of the quorum under master faults,
 * with real redis-server processes killed (SIGKILL), restarted on the same
 * port, or frozen (SIGSTOP):
 *  - a minority down does not stop locking, a majority down gives
 *    REDLOCK_ENOQUORUM within a bound derived from the timeouts and the
 *    retry budget (a deadline check, not a benchmark);
 *  - a restarted master is reconnected without help;
 *  - a frozen master never holds a call past the request timeout.
 * Waits are event-driven with deadlines; paused servers are always resumed
 * by the fixture's teardown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define TTL 10000u
/* Scheduling noise allowed on top of a bound computed from the options:
 * generous, because this checks for missing deadlines, not for speed. */
#define SLACK_MS 1000u

/* ---- a minority down ------------------------------------------------------------------ */

static void test_kill2_of_5_still_locks(void **state) {
  fx_t *fx = *state;
  const char *res = "it:minority-down";
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, 5, REDLOCK_LOG_WARN));
  redlock_lock_t *lock = NULL;
  char value[64];

  /* Held while two masters die: extend and unlock still reach a quorum. */
  FX_ASSERT_RC(fx, c, redlock_lock(c, res, TTL, &lock), REDLOCK_OK);
  assert_int_equal(rh_server_kill(fx->servers[3]), 0);
  assert_int_equal(rh_server_kill(fx->servers[4]), 0);
  assert_int_equal(rh_server_pid(fx->servers[3]), 0);
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, 20000), REDLOCK_OK);
  for (size_t i = 0; i < 3; i++)
    assert_true(fx_pttl(fx->servers[i], res) > (long long)TTL);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);

  /* New acquisitions, more than once: the first may still find the dead
   * connections open, the later ones find the masters down. */
  for (int round = 0; round < 3; round++) {
    FX_ASSERT_RC(fx, c, redlock_lock(c, res, TTL, &lock), REDLOCK_OK);
    assert_true(redlock_lock_validity_ms(lock) > 0);
    fx_copy_value(value, sizeof value, lock);
    for (size_t i = 0; i < 3; i++)
      assert_true(fx_key_is(fx->servers[i], res, value));
    FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
    for (size_t i = 0; i < 3; i++)
      assert_true(fx_key_absent(fx->servers[i], res));
  }
}

/* ---- a majority down -------------------------------------------------------------------- */

typedef struct {
  fx_t *fx;
  redlock_t *client;
  const char *res;
  size_t probe; /* server that must hold the key */
} relock_wait_t;

/* One trylock; true when it won and the probe server holds our value. */
static int lock_reaches_probe(void *arg) {
  relock_wait_t *w = arg;
  redlock_lock_t *lock = NULL;
  if (redlock_trylock(w->client, w->res, TTL, &lock) != REDLOCK_OK)
    return 0;
  int there = fx_key_is(w->fx->servers[w->probe], w->res, redlock_lock_value(lock));
  assert_int_equal(redlock_unlock(w->client, lock), REDLOCK_OK);
  return there;
}

static void test_kill3_of_5_noquorum_bounded(void **state) {
  fx_t *fx = *state;
  const char *res = "it:majority-down";
  const int retries = 1;
  const uint32_t delay = 50, jitter = 50;
  redlock_options_t *opts = fx_options(fx, 0, 5, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_retry(opts, retries, delay, jitter), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  redlock_lock_t *lock = NULL;
  uint64_t elapsed;
  char votes[512];

  for (size_t i = 0; i < 3; i++)
    assert_int_equal(rh_server_kill(fx->servers[i]), 0);

  /* Every attempt ends by its request deadline at the latest (dead
   * connections either fail at once or time out), plus the retry waits. */
  const uint64_t lock_bound =
      (uint64_t)(retries + 1) * FX_IT_REQUEST_MS + (uint64_t)retries * (delay + jitter) + SLACK_MS;
  FX_TIMED(elapsed, FX_ASSERT_RC(fx, c, redlock_lock(c, res, TTL, &lock), REDLOCK_ENOQUORUM));
  assert_null(lock);
  if (elapsed >= lock_bound)
    fail_msg("redlock_lock took %llu ms; bound %llu ms", (unsigned long long)elapsed,
             (unsigned long long)lock_bound);
  FX_TIMED(elapsed, FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ENOQUORUM));
  assert_true(elapsed < FX_IT_REQUEST_MS + SLACK_MS);

  /* The diagnostics say why: the dead masters did not vote. */
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  assert_non_null(strstr(votes, "no quorum"));
  assert_true(strstr(votes, "down") != NULL || strstr(votes, "disconnected") != NULL ||
              strstr(votes, "timeout") != NULL);
  /* The two live masters' OK votes were released. */
  assert_true(fx_wait_key_absent(fx->servers[3], res, 2000));
  assert_true(fx_wait_key_absent(fx->servers[4], res, 2000));

  /* A client opened now returns within its connect timeout even though a
   * majority is down, and finds no quorum. */
  FX_TIMED(elapsed, c = fx_open(fx, 1, fx_options(fx, 0, 5, REDLOCK_LOG_WARN)));
  assert_true(elapsed < FX_IT_CONNECT_MS + SLACK_MS);
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ENOQUORUM);

  /* Masters back: the quorum is back, without reopening the client. */
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(rh_server_restart(fx->servers[i]), 0);
  relock_wait_t w = {fx, fx->clients[0], res, 0};
  assert_true(rh_wait_until(lock_reaches_probe, &w, 5000));
}

/* ---- restart -------------------------------------------------------------------------------- */

static void restart_reconnects(fx_t *fx) {
  const char *res = "it:restart";
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  relock_wait_t w = {fx, c, res, 0};
  redlock_lock_t *lock = NULL;
  assert_true(lock_reaches_probe(&w));

  pid_t old_pid = rh_server_pid(fx->servers[0]);
  int old_port = rh_server_port(fx->servers[0]);
  assert_int_equal(rh_server_kill(fx->servers[0]), 0);
  if (fx->n == 1) {
    FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ENOQUORUM);
  } else {
    FX_ASSERT_RC(fx, c, redlock_lock(c, res, TTL, &lock), REDLOCK_OK);
    FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  }

  /* Same port, new process, empty: the client finds it by itself (backoff
   * is capped at 1 s, so 5 s is plenty). */
  assert_int_equal(rh_server_restart(fx->servers[0]), 0);
  assert_int_equal(rh_server_port(fx->servers[0]), old_port);
  assert_true(rh_server_pid(fx->servers[0]) != old_pid);
  if (!rh_wait_until(lock_reaches_probe, &w, 5000))
    fail_msg("the restarted master is not used again:\n%s", fx_log_text(fx, FX_ALL));
  /* The handshake noticed the new run_id. */
  if (!fx_log_contains(fx, FX_ALL, "restarted"))
    fail_msg("the log does not report the restart:\n%s", fx_log_text(fx, FX_ALL));
}

static void test_restart_reconnects_n1(void **state) { restart_reconnects(*state); }
static void test_restart_reconnects_n3(void **state) { restart_reconnects(*state); }

/* ---- a frozen master ----------------------------------------------------------------------- */

/* SIGSTOP keeps the TCP connection open and silent: the worst case, since
 * nothing tells the client the master is gone.  The quorum of the others
 * decides; the frozen one must not add latency.  A client that waited for
 * the frozen master would take the whole request timeout, so every call is
 * asserted to take less than the request timeout itself (no slack: what is
 * measured is "decided without waiting", and the timeout is set long,
 * 500 ms, so that a slow machine has room). */
#define PAUSE_REQUEST_MS 500u

static void lock_extend_unlock_fast(fx_t *fx, redlock_t *c, size_t n_paused, const char *phase) {
  const char *res = "it:paused";
  redlock_lock_t *lock = NULL;
  uint64_t elapsed;
  FX_TIMED(elapsed, FX_ASSERT_RC(fx, c, redlock_lock(c, res, TTL, &lock), REDLOCK_OK));
  if (elapsed >= PAUSE_REQUEST_MS)
    fail_msg("%s: lock took %llu ms with %zu master(s) paused", phase, (unsigned long long)elapsed,
             n_paused);
  for (size_t i = n_paused; i < fx->n; i++)
    assert_true(fx_key_is(fx->servers[i], res, redlock_lock_value(lock)));
  FX_TIMED(elapsed, FX_ASSERT_RC(fx, c, redlock_extend(c, lock, TTL), REDLOCK_OK));
  if (elapsed >= PAUSE_REQUEST_MS)
    fail_msg("%s: extend took %llu ms", phase, (unsigned long long)elapsed);
  FX_TIMED(elapsed, FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK));
  if (elapsed >= PAUSE_REQUEST_MS)
    fail_msg("%s: unlock took %llu ms", phase, (unsigned long long)elapsed);
}

typedef struct {
  fx_t *fx;
  redlock_t *client;
  uint64_t next_call_ms;
} hung_wait_t;

/* The hung check runs when request deadlines fire, so the wait keeps a
 * little traffic going (a lock round every 50 ms) until the log shows the
 * frozen connection dropped. */
static int hung_master_dropped(void *arg) {
  hung_wait_t *w = arg;
  if (fx_log_contains(w->fx, FX_ALL, "not answering"))
    return 1;
  if (rh_now_ms() >= w->next_call_ms) {
    redlock_lock_t *lock = NULL;
    FX_ASSERT_RC(w->fx, w->client, redlock_trylock(w->client, "it:paused:tick", TTL, &lock),
                 REDLOCK_OK);
    FX_ASSERT_RC(w->fx, w->client, redlock_unlock(w->client, lock), REDLOCK_OK);
    w->next_call_ms = rh_now_ms() + 50;
  }
  return 0;
}

static void paused_minority(fx_t *fx, size_t n_paused) {
  redlock_options_t *opts = fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_timeouts(opts, FX_IT_CONNECT_MS, PAUSE_REQUEST_MS), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  uint64_t elapsed;

  lock_extend_unlock_fast(fx, c, 0, "before pause");
  for (size_t i = 0; i < n_paused; i++)
    assert_int_equal(rh_server_pause(fx->servers[i]), 0);

  /* Connected to the frozen master(s): requests go out, replies never come. */
  lock_extend_unlock_fast(fx, c, n_paused, "connected to the paused master");
  lock_extend_unlock_fast(fx, c, n_paused, "connected to the paused master, again");

  /* No reply for NODE_HUNG_REQUEST_TIMEOUTS (3) request timeouts and the
   * connection is dropped (src/voters/node.h); reconnecting to a frozen master then
   * hangs in the handshake until the connect timeout. */
  hung_wait_t w = {fx, c, 0};
  if (!rh_wait_until(hung_master_dropped, &w, (int)(3 * PAUSE_REQUEST_MS + 3000)))
    fail_msg("the frozen master was never dropped:\n%s", fx_log_text(fx, FX_ALL));
  lock_extend_unlock_fast(fx, c, n_paused, "reconnecting to the paused master");

  /* Close is bounded too: pending requests end at their deadline. */
  FX_TIMED(elapsed, fx_close(fx, 0));
  if (elapsed >= PAUSE_REQUEST_MS + SLACK_MS)
    fail_msg("close took %llu ms", (unsigned long long)elapsed);
}

static void test_paused_master_n3(void **state) { paused_minority(*state, 1); }
static void test_paused_masters_n5(void **state) { paused_minority(*state, 2); }

FX_MAIN("integration: quorum under faults", &fx_profile_integration,
        FX_TEST(test_kill2_of_5_still_locks, 5), FX_TEST(test_kill3_of_5_noquorum_bounded, 5),
        FX_TEST(test_restart_reconnects_n1, 1), FX_TEST(test_restart_reconnects_n3, 3),
        FX_TEST(test_paused_master_n3, 3), FX_TEST(test_paused_masters_n5, 5))
