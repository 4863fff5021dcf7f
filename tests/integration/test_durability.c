/* test_durability.c: the voters' durability acks (docs/deployments.md: wait=R,
 * waitaof=L,R, wait_ms=T), against real servers: masters A and B, and R, a
 * server the tests make A's replica (REPLICAOF) when they need one.
 *
 * Asserts:
 *  - wait=1 with R attached: the lock is won, and R holds the key the
 *    moment the call returns (the vote counted only once R acknowledged);
 *    extend and unlock go through;
 *  - wait=1 with no replica: A's yes does not count (ENOQUORUM over A and B),
 *    redlock_last_votes says "unacked" and why ("0 of 1"), the stats count
 *    the verdict, the log says it, and the key A was given is released;
 *  - a refusal is a refusal, acked or not: a held key gives ELOCKED;
 *  - waitaof=1,0: refused with the server's reason where WAITAOF is unknown
 *    (Redis 7.0) or the AOF is off; won where the AOF is on (Redis >= 7.2,
 *    Valkey).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define TTL 10000u

/* "redis://127.0.0.1:P?PARAMS" of server s. */
static void uri_with(char *buf, size_t size, const rh_server_t *s, const char *params) {
  snprintf(buf, size, "%s?%s", rh_server_uri(s), params);
}

static void attach_replica(fx_t *fx) {
  char buf[256];
  assert_int_equal(rh_server_command(fx->servers[2], buf, sizeof buf, "REPLICAOF 127.0.0.1 %d",
                                     rh_server_port(fx->servers[0])),
                   0);
  assert_string_equal(buf, "OK");
  assert_true(rh_wait_replica_linked(fx->servers[0], fx->servers[2], 10000));
}

/* A client of A (with a_params) and B.  Unless wait_ms is given, the rounds
 * wait for the acks FX_ACK_REQUEST_MS: those tests assert that an ack came,
 * not how soon. */
static redlock_t *open_ab(fx_t *fx, const char *a_params) {
  char a[256];
  uri_with(a, sizeof a, fx->servers[0], a_params);
  const char *uris[2] = {a, rh_server_uri(fx->servers[1])};
  redlock_options_t *opts = fx_options_uris(fx, 0, uris, 2, REDLOCK_LOG_INFO);
  if (strstr(a_params, "wait_ms=") == NULL)
    assert_int_equal(redlock_options_set_timeouts(opts, FX_IT_CONNECT_MS, FX_ACK_REQUEST_MS), 0);
  return fx_open(fx, 0, opts);
}

static void test_wait_acked_by_replica(void **state) {
  fx_t *fx = *state;
  attach_replica(fx);
  redlock_t *c = open_ab(fx, "wait=1");
  FX_NAME(res, "acked");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
  /* No wait here: the ack came before the vote counted. */
  assert_true(fx_key_is(fx->servers[2], res, redlock_lock_value(lock)));
  char votes[512];
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  assert_non_null(strstr(votes, "won:"));
  assert_null(strstr(votes, "unacked"));
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, 2 * TTL), REDLOCK_OK);
  assert_true(fx_pttl(fx->servers[2], res) > (long long)TTL);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  fx_assert_absent_everywhere(fx, res, FX_SETTLE_MS);
}

static void test_wait_without_replica(void **state) {
  fx_t *fx = *state;
  redlock_t *c = open_ab(fx, "wait=1&wait_ms=50");
  FX_NAME(res, "unacked");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ENOQUORUM);
  char votes[512];
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  char want[160];
  snprintf(want, sizeof want, "%s:%d=unacked (WAIT: 0 of 1 replica acknowledged in time)",
           "127.0.0.1", rh_server_port(fx->servers[0]));
  if (strstr(votes, want) == NULL)
    fail_msg("want \"%s\" in the votes: %s", want, votes);
  snprintf(want, sizeof want, "127.0.0.1:%d=OK", rh_server_port(fx->servers[1]));
  assert_non_null(strstr(votes, want));
  assert_true(fx_wait_log(fx, 0, "durability ack fell short", 5000));
  char stats[65536];
  assert_true(redlock_stats(c, REDLOCK_STATS_PROMETHEUS, stats, sizeof stats) > 0);
  assert_non_null(strstr(stats, "verdict=\"unacked\"} 1"));
  /* The key A was given, and B's, are released after the lost round. */
  assert_true(fx_wait_key_absent(fx->servers[0], res, FX_SETTLE_MS));
  assert_true(fx_wait_key_absent(fx->servers[1], res, FX_SETTLE_MS));
}

static void test_refusal_needs_no_ack(void **state) {
  fx_t *fx = *state;
  redlock_t *holder = fx_open(fx, 1, fx_options(fx, 1, 2, FX_NO_LOG));
  FX_NAME(res, "held");
  redlock_lock_t *held = fx_hold(fx, holder, res, TTL);
  redlock_t *c = open_ab(fx, "wait=1&wait_ms=50");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ELOCKED);
  char votes[512];
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  assert_non_null(strstr(votes, "lost (held):"));
  assert_null(strstr(votes, "unacked"));
  redlock_unlock(holder, held);
}

/* WAITAOF 0 0 0 answers on servers that know it. */
static int knows_waitaof(rh_server_t *s) {
  char buf[256];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "WAITAOF 0 0 0"), 0);
  return strncmp(buf, "ERR", 3) != 0;
}

static int aof_on(void *arg) {
  char info[4096];
  if (rh_server_command(arg, info, sizeof info, "INFO persistence") != 0)
    return 0;
  return strstr(info, "aof_enabled:1") != NULL && strstr(info, "aof_rewrite_in_progress:0") &&
         strstr(info, "aof_rewrite_scheduled:0");
}

static void test_waitaof(void **state) {
  fx_t *fx = *state;
  rh_server_t *a = fx->servers[0];
  int known = knows_waitaof(a);
  char buf[256];
  if (known) {
    /* appendfsync always: the local fsync is done when the write is.  With
     * everysec Redis (8.0) answers WAITAOF 1 0 only at its next once-a-second
     * fsync, after the fixture's 500 ms request timeout; Valkey fsyncs for
     * WAITAOF at once. */
    assert_int_equal(rh_server_command(a, buf, sizeof buf, "CONFIG SET appendfsync always"), 0);
    assert_string_equal(buf, "OK");
    assert_int_equal(rh_server_command(a, buf, sizeof buf, "CONFIG SET appendonly yes"), 0);
    assert_string_equal(buf, "OK");
    assert_true(rh_wait_until(aof_on, a, 10000));
  }
  redlock_t *c = open_ab(fx, "waitaof=1,0");
  FX_NAME(res, "aof");
  redlock_lock_t *lock = NULL;
  char votes[512];
  if (!known) {
    /* Redis < 7.2: a clear refusal, with the server's words. */
    FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ENOQUORUM);
    assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
    if (strstr(votes, "unacked (WAITAOF: ERR unknown command") == NULL)
      fail_msg("want WAITAOF's refusal in the votes: %s", votes);
    return;
  }
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  /* The AOF off: the local fsync cannot be acknowledged. */
  assert_int_equal(rh_server_command(a, buf, sizeof buf, "CONFIG SET appendonly no"), 0);
  FX_NAME(res2, "aof-off");
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res2, TTL, &lock), REDLOCK_ENOQUORUM);
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  if (strstr(votes, "unacked (WAITAOF: ERR") == NULL || strstr(votes, "appendonly") == NULL)
    fail_msg("want WAITAOF's refusal naming appendonly in the votes: %s", votes);
}

FX_MAIN("durability", &fx_profile_integration, FX_TEST(test_wait_acked_by_replica, 3),
        FX_TEST(test_wait_without_replica, 2), FX_TEST(test_refusal_needs_no_ack, 2),
        FX_TEST(test_waitaof, 2))
