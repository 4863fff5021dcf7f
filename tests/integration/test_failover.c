/* test_failover.c: a master replaced by its promoted replica behind the same
 * address (a virtual IP: our fault proxy, restarted on its port towards the
 * replica), with real servers: A (the master), R (A's replica), B and C.
 * The voters are the proxy (A, then R), B and C; quarantine on, max TTL
 * short.  docs/safety.md §5b.
 *
 * Asserts:
 *  - the case that must never give two holders: the lock is taken on A and
 *    B while R's link is cut (R stopped, CLIENT KILL TYPE replica) and C is
 *    stopped, so R lacks the key; A dies, R is promoted and takes the
 *    address, C comes back.  A second client keeps trying until the first
 *    lock's validity has run out: it is never granted (R's votes are in
 *    failover quarantine; without it R and C would make a quorum), and
 *    redlock_last_votes says why;
 *  - with wait=1 on A, the same failover keeps the lock: R holds the key
 *    with the holder's value, a second client is refused, and the holder
 *    extends and unlocks it (R is a promoted replica of A whose acks covered
 *    every replica: no quarantine).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fault_proxy.h"
#include "fixture.h"

#define MAX_TTL 3000u
#define TTL 3000u
enum { A = 0, R = 1, B = 2, C = 3 };

typedef struct {
  rh_server_t *master, *replica;
} pair_t;

static int replica_attached(void *arg) {
  pair_t *p = arg;
  char info[4096];
  return rh_server_command(p->replica, info, sizeof info, "INFO replication") == 0 &&
         strstr(info, "master_link_status:up") != NULL &&
         rh_server_command(p->master, info, sizeof info, "INFO replication") == 0 &&
         strstr(info, "connected_slaves:1") != NULL;
}

typedef struct {
  fx_t *fx;
  fault_proxy_t *proxy;
  int port; /* the address the voter names */
  char uri[160];
} scene_t;

/* R becomes A's replica; the proxy stands for A. */
static void scene_start(scene_t *s, fx_t *fx, const char *params) {
  memset(s, 0, sizeof *s);
  s->fx = fx;
  char buf[64];
  assert_int_equal(rh_server_command(fx->servers[R], buf, sizeof buf, "REPLICAOF 127.0.0.1 %d",
                                     rh_server_port(fx->servers[A])),
                   0);
  pair_t p = {fx->servers[A], fx->servers[R]};
  assert_true(rh_wait_until(replica_attached, &p, 10000));
  assert_int_equal(fault_proxy_start(&s->proxy, "127.0.0.1", rh_server_port(fx->servers[A])), 0);
  s->port = fault_proxy_port(s->proxy);
  snprintf(s->uri, sizeof s->uri, "redis://127.0.0.1:%d%s%s", s->port, params ? "?" : "",
           params ? params : "");
}

static redlock_t *scene_client(scene_t *s, int slot) {
  const char *uris[3] = {s->uri, rh_server_uri(s->fx->servers[B]),
                         rh_server_uri(s->fx->servers[C])};
  redlock_options_t *opts = fx_options_uris(s->fx, slot, uris, 3, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_quarantine(opts, 1), 0);
  assert_int_equal(redlock_options_set_max_ttl(opts, MAX_TTL), 0);
  assert_int_equal(redlock_options_set_retry(opts, 0, 0, 0), 0);
  return fx_open(s->fx, slot, opts);
}

/* Every server reports an uptime that no longer quarantines it (INFO server). */
static int all_aged(void *arg) {
  fx_t *fx = arg;
  for (size_t i = 0; i < fx->n; i++) {
    char info[4096];
    if (rh_server_command(fx->servers[i], info, sizeof info, "INFO server") != 0)
      return 0;
    const char *up = strstr(info, "uptime_in_seconds:");
    if (up == NULL || atol(up + 18) < (long)(MAX_TTL / 1000) + 2)
      return 0;
  }
  return 1;
}

/* The servers are fresh: wait until none is in restart quarantine (so that
 * only a failover can quarantine one), and the client sees it. */
static void scene_warm(fx_t *fx, redlock_t *c) {
  assert_true(rh_wait_until(all_aged, fx, 15000));
  FX_NAME(res, "warm");
  redlock_lock_t *lock = NULL;
  assert_int_equal(fx_trylock_until(c, res, 1000, 10000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

/* C holds res with another value while `first` takes it, so that the grant
 * rests on A and B (A's vote, acked or not, is needed); then C lets go, so
 * that a second client could use C. */
static void lock_on_a_and_b(scene_t *s, redlock_t *first, const char *res, redlock_lock_t **held) {
  char buf[64];
  rh_server_t *c = s->fx->servers[C];
  assert_int_equal(rh_server_command(c, buf, sizeof buf, "SET %s foreign PX 60000", res), 0);
  FX_ASSERT_RC(s->fx, first, redlock_trylock(first, res, TTL, held), REDLOCK_OK);
  char votes[512], want[64];
  assert_true(redlock_last_votes(first, votes, sizeof votes) > 0);
  snprintf(want, sizeof want, "127.0.0.1:%d=OK", s->port);
  if (strstr(votes, want) == NULL) /* (C's refusal may still be pending) */
    fail_msg("want A's OK: %s", votes);
  assert_int_equal(rh_server_command(c, buf, sizeof buf, "DEL %s", res), 0);
}

/* R (A already dead) is promoted and takes A's address. */
static void scene_promote(scene_t *s) {
  char buf[64];
  assert_int_equal(rh_server_command(s->fx->servers[R], buf, sizeof buf, "REPLICAOF NO ONE"), 0);
  assert_string_equal(buf, "OK");
  fault_proxy_stop(s->proxy);
  s->proxy = NULL;
  assert_int_equal(
      fault_proxy_start_on(&s->proxy, s->port, "127.0.0.1", rh_server_port(s->fx->servers[R])), 0);
}

/* A dies, R is promoted and takes A's address. */
static void scene_failover(scene_t *s) {
  assert_int_equal(rh_server_kill(s->fx->servers[A]), 0);
  scene_promote(s);
}

static void scene_stop(scene_t *s) {
  if (s->proxy != NULL)
    fault_proxy_stop(s->proxy);
}

static void pause_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_promoted_replica_lacks_key(void **state) {
  fx_t *fx = *state;
  scene_t s;
  scene_start(&s, fx, NULL);
  redlock_t *first = scene_client(&s, 0);
  scene_warm(fx, first);

  /* R stops hearing from A: the lock, on A and B, never reaches it. */
  char buf[256];
  assert_int_equal(rh_server_pause(fx->servers[R]), 0);
  assert_int_equal(rh_server_command(fx->servers[A], buf, sizeof buf, "CLIENT KILL TYPE replica"),
                   0);
  FX_NAME(res, "failover");
  redlock_lock_t *held = NULL;
  lock_on_a_and_b(&s, first, res, &held);
  uint64_t valid_until = rh_now_ms() + (uint64_t)redlock_lock_validity_ms(held);

  /* A dies before R runs again: R could otherwise re-sync from A (and get
   * the key) before it is promoted. */
  assert_int_equal(rh_server_kill(fx->servers[A]), 0);
  assert_int_equal(rh_server_resume(fx->servers[R]), 0);
  scene_promote(&s);
  assert_true(fx_key_absent(fx->servers[R], res)); /* the promoted replica lacks it */

  /* A second client keeps trying while the first lock is valid. */
  redlock_t *second = scene_client(&s, 1);
  unsigned tries = 0, quarantined = 0;
  while (rh_now_ms() < valid_until + 200) {
    redlock_lock_t *other = NULL;
    int rc = redlock_trylock(second, res, TTL, &other);
    if (rc == REDLOCK_OK && rh_now_ms() < valid_until)
      fail_msg("two holders: granted %llu ms before the first lock's validity ends",
               (unsigned long long)(valid_until - rh_now_ms()));
    if (rc == REDLOCK_OK) {
      redlock_unlock(second, other);
      break;
    }
    char votes[512];
    redlock_last_votes(second, votes, sizeof votes);
    quarantined += strstr(votes, "quarantined (failover quarantine") != NULL;
    tries++;
    pause_ms(50);
  }
  assert_true(tries > 0);
  if (quarantined == 0)
    fail_msg("R's votes were never reported in failover quarantine:\n%s", fx_log_text(fx, 1));
  assert_true(fx_log_contains(fx, 1, "was promoted from a replica"));
  /* the first client saw another server behind the address */
  assert_true(fx_wait_log(fx, 0, "is another server than before", 5000));
  redlock_unlock(first, held);
  scene_stop(&s);
}

static void test_acked_lock_survives(void **state) {
  fx_t *fx = *state;
  scene_t s;
  scene_start(&s, fx, "wait=1");
  redlock_t *first = scene_client(&s, 0);
  scene_warm(fx, first);
  FX_NAME(res, "acked-failover");
  redlock_lock_t *held = NULL;
  lock_on_a_and_b(&s, first, res, &held);
  scene_failover(&s);
  assert_true(fx_key_is(fx->servers[R], res, redlock_lock_value(held)));

  redlock_t *second = scene_client(&s, 1);
  redlock_lock_t *other = NULL;
  FX_ASSERT_RC(fx, second, redlock_trylock(second, res, TTL, &other), REDLOCK_ELOCKED);
  FX_ASSERT_RC(fx, first, redlock_extend(first, held, TTL), REDLOCK_OK);
  assert_true(fx_pttl(fx->servers[R], res) > (long long)TTL / 2);
  FX_ASSERT_RC(fx, first, redlock_unlock(first, held), REDLOCK_OK);
  assert_true(fx_wait_key_absent(fx->servers[R], res, FX_SETTLE_MS));
  assert_false(fx_log_contains(fx, 0, "failover quarantine ="));
  scene_stop(&s);
}

FX_MAIN("failover", &fx_profile_integration, FX_TEST(test_promoted_replica_lacks_key, 5),
        FX_TEST(test_acked_lock_survives, 5))
