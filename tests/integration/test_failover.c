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
  assert_true(rh_wait_replica_linked(fx->servers[A], fx->servers[R], 10000));
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

/* ---- a replicated master restarted from its own RDB ------------------------------------ */

/* M (with replica R) saved its RDB, which holds its replication id, and
 * restarted from it: it reports master_replid2, as a promoted replica does,
 * and INFO cannot tell which it is.  A fresh client quarantines it for max
 * TTL from its first sighting; with a state directory, that sighting is
 * shared: once max TTL has passed since the first client saw it, a fresh
 * client sharing the directory counts its votes at once (a CLI run from
 * cron), while one without it starts its own quarantine. */
static redlock_t *rdb_client(fx_t *fx, int slot, rh_server_t *m, const char *state_dir) {
  const char *uris[1] = {rh_server_uri(m)};
  redlock_options_t *o = fx_options_uris(fx, slot, uris, 1, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_quarantine(o, 1), 0);
  assert_int_equal(redlock_options_set_max_ttl(o, MAX_TTL), 0);
  assert_int_equal(redlock_options_set_retry(o, 0, 0, 0), 0);
  assert_int_equal(redlock_options_set_state_dir(o, state_dir), 0);
  return fx_open(fx, slot, o);
}

static void assert_failover_quarantined(fx_t *fx, int slot, redlock_t *c, const char *res) {
  redlock_lock_t *l = NULL;
  int rc = redlock_trylock(c, res, TTL, &l);
  char votes[512];
  redlock_last_votes(c, votes, sizeof votes);
  if (rc == REDLOCK_OK || strstr(votes, "failover quarantine") == NULL)
    fail_msg("want a failover quarantine: %d: %s\n%s", rc, votes, fx_log_text(fx, slot));
}

static int saved(void *arg) {
  char buf[128];
  return rh_server_command(arg, buf, sizeof buf, "SAVE") == 0 && strcmp(buf, "OK") == 0;
}

static void test_restart_from_rdb_sightings(void **state) {
  fx_t *fx = *state;
  assert_int_equal(fx_servers_start(fx, 1, NULL), 0);
  rh_server_t *m = fx->servers[0];
  char port[16], buf[256], info[4096], dir[64];
  snprintf(port, sizeof port, "%d", rh_server_port(m));
  const char *replica_args[] = {"--replicaof", "127.0.0.1", port, NULL};
  rh_server_t *r = NULL;
  assert_int_equal(rh_server_start(&r, &(rh_options_t){.extra_args = replica_args}), 0);
  fx->servers[fx->n++] = r; /* stopped by the fixture's teardown */
  assert_true(rh_wait_replica_linked(m, r, 10000));
  /* (the replica's sync may still have its child saving: SAVE then waits) */
  assert_true(rh_wait_until(saved, m, 10000));
  assert_int_equal(rh_server_kill(m), 0);
  assert_int_equal(rh_server_restart(m), 0); /* loads the RDB from its directory */
  assert_int_equal(rh_server_command(m, info, sizeof info, "INFO replication"), 0);
  const char *id2 = strstr(info, "master_replid2:");
  if (id2 == NULL || strncmp(id2 + 15, "0000000000", 10) == 0)
    skip(); /* a server that does not keep its replication id across a restart */

  snprintf(dir, sizeof dir, "/tmp/test-failover-state-XXXXXX");
  assert_non_null(mkdtemp(dir));
  char state_dir[96];
  snprintf(state_dir, sizeof state_dir, "%s/redlock", dir);
  FX_NAME(res, "rdb");
  /* The first client to see it: quarantined for max TTL from now. */
  redlock_t *first = rdb_client(fx, 0, m, state_dir);
  assert_failover_quarantined(fx, 0, first, res);
  redlock_lock_t *l = NULL;
  assert_int_equal(fx_trylock_until(first, res, TTL, (int)MAX_TTL + 10000, &l), REDLOCK_OK);
  assert_int_equal(redlock_unlock(first, l), REDLOCK_OK);
  /* A fresh client sharing the directory, once M's restart quarantine (by
   * its uptime, which every client reads) is over: its first try is
   * granted. */
  assert_true(rh_wait_until(all_aged, fx, 15000));
  redlock_t *later = rdb_client(fx, 1, m, state_dir);
  int rc = redlock_trylock(later, res, TTL, &l);
  if (rc != REDLOCK_OK) {
    redlock_last_votes(later, buf, sizeof buf);
    fail_msg("a client sharing the first sighting: %d: %s\n%s", rc, buf, fx_log_text(fx, 1));
  }
  assert_int_equal(redlock_unlock(later, l), REDLOCK_OK);
  assert_true(fx_log_contains(fx, 1, "was first seen"));
  /* A fresh client without it starts its own. */
  redlock_t *alone = rdb_client(fx, 2, m, NULL);
  assert_failover_quarantined(fx, 2, alone, res);
  rh_remove_dir(state_dir);
  rh_remove_dir(dir);
}

FX_MAIN("failover", &fx_profile_integration, FX_TEST(test_promoted_replica_lacks_key, 5),
        FX_TEST(test_acked_lock_survives, 5), FX_TEST(test_restart_from_rdb_sightings, 0))
