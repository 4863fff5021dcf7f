/* test_cluster_faults.c: a cluster voter (redis-cluster://) through the
 * faults of a real Redis Cluster: live resharding, failovers inside the
 * cluster, and a lock over three clusters.  Clusters are started and joined
 * by tests/support/cluster_harness.h on loopback; docs/deployments.md
 * "Cluster voters", docs/safety.md §5b.
 *
 * Asserts:
 *  - reshard, locks held: `CLI --cluster reshard` moves 1500 slots from
 *    primary 0 to primary 1 while a client holds locks whose keys are in
 *    those slots; during it and after it another client is refused every
 *    one of them, the holder extends every one (through MOVED and ASK), and
 *    unlocks them, and no key is left on any primary;
 *  - reshard under load: client threads lock and unlock a pool of resources
 *    while 1500 slots move; no two of them ever hold one resource at once
 *    (an in-process holder count per resource), they keep getting grants,
 *    and no key is left;
 *  - failover inside the cluster (one replica per primary, quarantine on):
 *    after `CLUSTER FAILOVER` on a replica, a held lock is not granted to
 *    another client, the promoted replica's votes for fresh keys do not
 *    count until the failover quarantine is over (votes say "failover
 *    quarantine"), the holder extends and unlocks; a failback to the old
 *    primary (whose connection lived on through its demotion) is
 *    quarantined too;
 *  - a primary SIGKILLed and its replica promoted by the cluster: the held
 *    lock is never granted to another client; fresh keys on the promoted
 *    replica are quarantined;
 *  - wait= on a cluster voter: with wait=1 every grant was acknowledged by
 *    the primary's replica; wait=2 (one replica each) never grants, and
 *    its votes say why;
 *  - a primary demoted and promoted again (a failover and a TAKEOVER back)
 *    while a long-lived client's connection to it stayed open and idle,
 *    without the key another client was granted meanwhile: the old client's
 *    next request is not counted (the role check after each batch);
 *  - wait=1 and a slot migrated to a shard whose replicas never got the key,
 *    that shard failing over: a fresh client with wait=1 is refused while
 *    the holder holds (no ack waives a quarantine on a cluster voter);
 *  - {cluster, cluster, cluster}: three clusters as the three voters; a
 *    second client is refused what the first holds, keys are on every
 *    cluster, and gone after unlock; with one cluster stopped the other two
 *    still decide, and still exclude. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "fixture.h"

#define TTL_MS 30000u
/* Of primary 0's 5461.  A reshard moves a slot in about 3 ms on Redis 7.0
 * and 11 ms on Redis 8 and Valkey 8/9 (measured, 4000 slots: 12 s and
 * 41-48 s): 1500 keep each reshard a few seconds to a quarter minute long,
 * hundreds of lock rounds, on every server the suite runs against. */
#define RESHARD_SLOTS 1500u
#define RESHARD_TIMEOUT_MS 120000
#define N_HELD 240

#define CF_TEST(f) cmocka_unit_test_setup_teardown(f, fx_setup_0, cfx_teardown)

static int slot_of(ch_cluster_t *c, const char *res) {
  char key[160], buf[64];
  cfx_key_of(res, key, sizeof key);
  assert_int_equal(rh_server_command(ch_node(c, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key), 0);
  return atoi(buf);
}

/* Finds a name "<what>-N" whose slot is served by node `owner`. */
static void name_on(ch_cluster_t *c, unsigned owner, const char *what, char *out, size_t size) {
  for (int i = 0; i < 10000; i++) {
    snprintf(out, size, "%s-%d", what, i);
    if (ch_owner(c, 0, slot_of(c, out)) == (int)owner)
      return;
  }
  fail_msg("no name of %s on node %u", what, owner);
}

#define CF_CHECK(fx, slot, client, call)                                                           \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != REDLOCK_OK) {                                                                       \
      char votes_[1024];                                                                           \
      redlock_last_votes((client), votes_, sizeof votes_);                                         \
      fail_msg("%s: %d: %s\n%s", #call, rc_, votes_, fx_log_text((fx), (slot)));                   \
    }                                                                                              \
  } while (0)

/* Every primary's connection is made on first use: a warm-up pass makes
 * them (until one is up, a lone cluster voter cannot vote). */
static void warm_up(fx_t *fx, int slot, redlock_t *c, const char *what) {
  for (int i = 0; i < 24; i++) {
    char res[64];
    redlock_lock_t *l = NULL;
    snprintf(res, sizeof res, "%s-warm-%d", what, i);
    int rc = fx_trylock_until(c, res, 2000, 10000, &l);
    if (rc != REDLOCK_OK) {
      char votes[1024];
      redlock_last_votes(c, votes, sizeof votes);
      fail_msg("warm-up %s: %d: %s\n%s", res, rc, votes, fx_log_text(fx, slot));
    }
    assert_int_equal(redlock_unlock(c, l), REDLOCK_OK);
  }
}

/* ---- reshard with locks held ----------------------------------------------------------- */

typedef struct {
  fx_t *fx;
  redlock_t *holder, *other;
  redlock_lock_t **locks;
  char (*res)[32];
  int n;
  atomic_int stop;
  unsigned extends, extend_fails, refusals, double_grants, rounds;
  char first_failure[1024];
} held_t;

/* During the reshard: the holder extends every lock, the other client tries
 * every one of them, round after round. */
static void *held_churn(void *arg) {
  held_t *h = arg;
  while (!atomic_load(&h->stop)) {
    for (int i = 0; i < h->n && !atomic_load(&h->stop); i++) {
      int rc = redlock_extend(h->holder, h->locks[i], TTL_MS);
      h->extends++;
      if (rc != REDLOCK_OK) {
        if (h->extend_fails++ == 0) {
          char votes[900];
          redlock_last_votes(h->holder, votes, sizeof votes);
          snprintf(h->first_failure, sizeof h->first_failure, "extend %s: %d: %s", h->res[i], rc,
                   votes);
        }
      }
      redlock_lock_t *got = NULL;
      if (redlock_trylock(h->other, h->res[i], TTL_MS, &got) == REDLOCK_OK) {
        h->double_grants++;
        redlock_unlock(h->other, got);
      } else {
        h->refusals++;
      }
    }
    h->rounds++;
  }
  return NULL;
}

static void test_reshard_held(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  const char *uris[1] = {ch_uri(c, 1)};
  redlock_t *a = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN));
  redlock_t *b = fx_open(fx, 1, fx_options_uris(fx, 1, uris, 1, REDLOCK_LOG_WARN));
  warm_up(fx, 0, a, "rh-a");
  warm_up(fx, 1, b, "rh-b");
  static char res[N_HELD][32];
  static redlock_lock_t *locks[N_HELD];
  /* Names in the slots the reshard moves (primary 0's first ones), and as
   * many elsewhere. */
  int n = 0;
  for (int i = 0; n < N_HELD && i < 100000; i++) {
    snprintf(res[n], sizeof res[n], "rh-held-%d", i);
    int slot = slot_of(c, res[n]);
    if ((n % 2 == 0) == (slot < (int)RESHARD_SLOTS))
      n++;
  }
  assert_int_equal(n, N_HELD);
  for (int i = 0; i < n; i++)
    CF_CHECK(fx, 0, a, redlock_lock(a, res[i], TTL_MS, &locks[i]));
  cfx_assert_keys(c, n);
  long on1 = cfx_dbsize(ch_node(c, 1));

  held_t h = {.fx = fx, .holder = a, .other = b, .locks = locks, .res = res, .n = n};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, held_churn, &h), 0);
  int pid = ch_reshard_start(c, 0, 1, RESHARD_SLOTS);
  assert_true(pid > 0);
  int reshard = ch_reshard_wait(c, pid, RESHARD_TIMEOUT_MS);
  atomic_store(&h.stop, 1);
  pthread_join(t, NULL);
  assert_int_equal(reshard, 0);
  assert_true(ch_wait_ok(c, 10000));
  if (fx_verbose())
    fprintf(stderr, "reshard held: %u rounds, %u extends (%u failed), %u refusals\n", h.rounds,
            h.extends, h.extend_fails, h.refusals);
  if (h.double_grants > 0)
    fail_msg("%u locks granted to a second client during the reshard", h.double_grants);
  if (h.extend_fails > 0)
    fail_msg("%u of %u extends failed during the reshard; first: %s\n%s", h.extend_fails, h.extends,
             h.first_failure, fx_log_text(fx, 0));
  assert_true(h.rounds >= 1);
  /* Half of the held keys moved with their slots. */
  if (cfx_dbsize(ch_node(c, 1)) < on1 + n / 2)
    fail_msg("primary 1 holds %ld keys, had %ld: the held keys did not move",
             cfx_dbsize(ch_node(c, 1)), on1);
  /* After it: still excluded, extended, unlocked, no key left. */
  for (int i = 0; i < n; i++) {
    redlock_lock_t *got = NULL;
    if (redlock_trylock(b, res[i], TTL_MS, &got) == REDLOCK_OK)
      fail_msg("%s granted twice after the reshard", res[i]);
    CF_CHECK(fx, 0, a, redlock_extend(a, locks[i], TTL_MS));
  }
  for (int i = 0; i < n; i++)
    CF_CHECK(fx, 0, a, redlock_unlock(a, locks[i]));
  cfx_assert_keys(c, 0);
  redlock_lock_t *got = NULL;
  CF_CHECK(fx, 1, b, redlock_trylock(b, res[0], TTL_MS, &got));
  CF_CHECK(fx, 1, b, redlock_unlock(b, got));
  cfx_assert_keys(c, 0);
}

/* ---- reshard under load ---------------------------------------------------------------- */

#define LOAD_WORKERS 4
#define LOAD_RESOURCES 256
#define LOAD_TTL_MS 10000u

typedef struct {
  fx_t *fx;
  redlock_t *clients[LOAD_WORKERS];
  atomic_int holders[LOAD_RESOURCES]; /* in-process holders of each resource */
  atomic_int stop;
  atomic_uint grants, overlaps, errors, unlock_fails;
  atomic_uint grants_after; /* grants once the reshard was over */
  atomic_int reshard_over;
} load_t;

typedef struct {
  load_t *l;
  int k;
} worker_t;

static void *load_worker(void *arg) {
  worker_t *w = arg;
  load_t *l = w->l;
  redlock_t *c = l->clients[w->k];
  unsigned seed = 77u + (unsigned)w->k;
  while (!atomic_load(&l->stop)) {
    int r = rand_r(&seed) % LOAD_RESOURCES;
    char res[32];
    snprintf(res, sizeof res, "rl-load-%d", r);
    redlock_lock_t *lock = NULL;
    int rc = redlock_trylock(c, res, LOAD_TTL_MS, &lock);
    if (rc == REDLOCK_OK) {
      /* A hold of far less than the TTL: two holders at once is a safety
       * violation, never a slow thread. */
      if (atomic_fetch_add(&l->holders[r], 1) != 0)
        atomic_fetch_add(&l->overlaps, 1);
      atomic_fetch_add(&l->grants, 1);
      if (atomic_load(&l->reshard_over))
        atomic_fetch_add(&l->grants_after, 1);
      atomic_fetch_sub(&l->holders[r], 1);
      if (redlock_unlock(c, lock) != REDLOCK_OK)
        atomic_fetch_add(&l->unlock_fails, 1);
    } else if (rc != REDLOCK_ELOCKED && rc != REDLOCK_ENOQUORUM && rc != REDLOCK_ETIMEDOUT) {
      atomic_fetch_add(&l->errors, 1);
    }
  }
  return NULL;
}

static int load_grants_after(void *arg) {
  load_t *l = arg;
  return atomic_load(&l->grants_after) >= 200;
}

static void test_reshard_load(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  const char *uris[1] = {ch_uri(c, 2)};
  static load_t l;
  memset(&l, 0, sizeof l);
  l.fx = fx;
  for (int k = 0; k < LOAD_WORKERS; k++) {
    l.clients[k] = fx_open(fx, k, fx_options_uris(fx, k, uris, 1, REDLOCK_LOG_WARN));
    char what[16];
    snprintf(what, sizeof what, "rl-%d", k);
    warm_up(fx, k, l.clients[k], what);
  }
  worker_t w[LOAD_WORKERS];
  pthread_t t[LOAD_WORKERS];
  for (int k = 0; k < LOAD_WORKERS; k++) {
    w[k] = (worker_t){&l, k};
    assert_int_equal(pthread_create(&t[k], NULL, load_worker, &w[k]), 0);
  }
  int pid = ch_reshard_start(c, 0, 1, RESHARD_SLOTS);
  int reshard = pid > 0 ? ch_reshard_wait(c, pid, RESHARD_TIMEOUT_MS) : -1;
  unsigned during = atomic_load(&l.grants);
  atomic_store(&l.reshard_over, 1);
  int more = rh_wait_until(load_grants_after, &l, 20000);
  atomic_store(&l.stop, 1);
  for (int k = 0; k < LOAD_WORKERS; k++)
    pthread_join(t[k], NULL);
  assert_int_equal(reshard, 0);
  if (fx_verbose())
    fprintf(stderr, "reshard load: %u grants during, %u after, %u errors, %u unlock fails\n",
            during, atomic_load(&l.grants_after), atomic_load(&l.errors),
            atomic_load(&l.unlock_fails));
  if (atomic_load(&l.overlaps) > 0)
    fail_msg("%u grants overlapped another holder of the same resource", atomic_load(&l.overlaps));
  if (atomic_load(&l.errors) > 0)
    fail_msg("%u calls failed with an unexpected status\n%s", atomic_load(&l.errors),
             fx_log_text(fx, FX_ALL));
  assert_true(during >= 100);
  if (!more)
    fail_msg("%u grants after the reshard\n%s", atomic_load(&l.grants_after),
             fx_log_text(fx, FX_ALL));
  /* Every unlock that failed left its key to its TTL: none is expected on
   * loopback, but the count of keys left is what is asserted. */
  assert_int_equal(atomic_load(&l.unlock_fails), 0);
  assert_true(ch_wait_ok(c, 10000));
  cfx_assert_keys(c, 0);
}

/* ---- failovers inside the cluster ------------------------------------------------------ */

#define FO_MAX_TTL_MS 6000u
#define FO_TTL_MS 5000u

static redlock_options_t *quarantined_options(fx_t *fx, int slot, const char *uri) {
  const char *uris[1] = {uri};
  redlock_options_t *o = fx_options_uris(fx, slot, uris, 1, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_quarantine(o, 1), 0);
  assert_int_equal(redlock_options_set_max_ttl(o, FO_MAX_TTL_MS), 0);
  return o;
}

/* A fresh name on node `owner` is not granted to c, and its vote says
 * that the failover quarantine is why (within a deadline: the client may
 * learn of the promotion from the map it asks for after the first try). */
static void assert_quarantined(fx_t *fx, int slot, redlock_t *c, ch_cluster_t *cl, unsigned owner,
                               const char *what) {
  char res[64], votes[1024];
  name_on(cl, owner, what, res, sizeof res);
  uint64_t until = rh_now_ms() + 3000;
  for (;;) {
    redlock_lock_t *l = NULL;
    int rc = redlock_trylock(c, res, FO_TTL_MS, &l);
    redlock_last_votes(c, votes, sizeof votes);
    if (rc == REDLOCK_OK)
      fail_msg("%s granted by the promoted node %u: %s\n%s", res, owner, votes,
               fx_log_text(fx, slot));
    if (strstr(votes, "failover quarantine") != NULL)
      return;
    if (rh_now_ms() > until)
      fail_msg("%s on the promoted node %u: %d, votes: %s\n%s", res, owner, rc, votes,
               fx_log_text(fx, slot));
    fx_sleep_ms(20); /* a pace for the attempts, not a wait for an outcome */
  }
}

/* Waits out the quarantine: a fresh name on `owner` is granted again. */
static void assert_votes_again(fx_t *fx, int slot, redlock_t *c, ch_cluster_t *cl, unsigned owner,
                               const char *what) {
  char res[64];
  name_on(cl, owner, what, res, sizeof res);
  redlock_lock_t *l = NULL;
  int rc = fx_trylock_until(c, res, FO_TTL_MS, (int)FO_MAX_TTL_MS + 10000, &l);
  if (rc != REDLOCK_OK) {
    char votes[1024];
    redlock_last_votes(c, votes, sizeof votes);
    fail_msg("%s: still no vote after the quarantine: %d: %s\n%s", res, rc, votes,
             fx_log_text(fx, slot));
  }
  assert_int_equal(redlock_unlock(c, l), REDLOCK_OK);
}

static void test_failover_graceful(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 1); /* node 3 replicates 0, 4 replicates 1 */
  redlock_t *a = fx_open(fx, 0, quarantined_options(fx, 0, ch_uri(c, 3)));
  warm_up(fx, 0, a, "fo-a");
  char res[64];
  name_on(c, 0, "fo-held", res, sizeof res);
  redlock_lock_t *held = NULL;
  CF_CHECK(fx, 0, a, redlock_lock(a, res, FO_TTL_MS, &held));
  assert_int_equal(ch_failover(c, 3, NULL, 60000), 0);

  /* A fresh client: the held lock is not granted to it. */
  redlock_t *b = fx_open(fx, 1, quarantined_options(fx, 1, ch_uri(c, 3)));
  redlock_lock_t *got = NULL;
  if (fx_trylock_until(b, res, FO_TTL_MS, 1000, &got) == REDLOCK_OK)
    fail_msg("%s granted to a second client after the failover", res);
  /* The promoted replica is a new master: quarantined for both. */
  assert_quarantined(fx, 0, a, c, 3, "fo-fresh-a");
  assert_quarantined(fx, 1, b, c, 3, "fo-fresh-b");
  /* The holder extends (an extension's vote counts) and unlocks. */
  CF_CHECK(fx, 0, a, redlock_extend(a, held, FO_TTL_MS));
  CF_CHECK(fx, 0, a, redlock_unlock(a, held));
  cfx_assert_keys(c, 0);
  assert_votes_again(fx, 0, a, c, 3, "fo-after");

  /* Failback: node 0's connection lived on through its demotion; promoted
   * again, it may lack keys node 3 granted meanwhile. */
  CF_CHECK(fx, 0, a, redlock_lock(a, res, FO_TTL_MS, &held));
  assert_int_equal(ch_failover(c, 0, NULL, 60000), 0);
  if (fx_trylock_until(b, res, FO_TTL_MS, 1000, &got) == REDLOCK_OK)
    fail_msg("%s granted to a second client after the failback", res);
  assert_quarantined(fx, 0, a, c, 0, "fo-back-a");
  CF_CHECK(fx, 0, a, redlock_unlock(a, held));
  assert_votes_again(fx, 0, a, c, 0, "fo-back-after");
  cfx_assert_keys(c, 0);
}

typedef struct {
  redlock_t *c;
  const char *res;
  uint64_t until_ms;
  unsigned grants;
} never_t;

/* The other client tries the held name until the holder's TTL is over. */
static int never_granted(void *arg) {
  never_t *n = arg;
  redlock_lock_t *got = NULL;
  if (redlock_trylock(n->c, n->res, FO_TTL_MS, &got) == REDLOCK_OK) {
    n->grants++;
    redlock_unlock(n->c, got);
  }
  return rh_now_ms() >= n->until_ms;
}

static void test_failover_kill(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 1); /* node 4 replicates 1 */
  redlock_t *a = fx_open(fx, 0, quarantined_options(fx, 0, ch_uri(c, 1)));
  redlock_t *b = fx_open(fx, 1, quarantined_options(fx, 1, ch_uri(c, 1)));
  warm_up(fx, 0, a, "fk-a");
  warm_up(fx, 1, b, "fk-b");
  char res[64];
  name_on(c, 1, "fk-held", res, sizeof res);
  redlock_lock_t *held = NULL;
  uint64_t t0 = rh_now_ms();
  CF_CHECK(fx, 0, a, redlock_lock(a, res, FO_TTL_MS, &held));
  assert_int_equal(rh_server_kill(ch_node(c, 1)), 0);
  assert_int_equal(ch_wait_master(c, 4, 90000), 0);
  /* Until the holder's lock is over, nobody else gets it. */
  never_t n = {b, res, t0 + FO_TTL_MS, 0};
  assert_true(rh_wait_until(never_granted, &n, (int)FO_TTL_MS + 30000));
  if (n.grants > 0)
    fail_msg("%s granted %u times to a second client while held", res, n.grants);
  assert_quarantined(fx, 0, a, c, 4, "fk-fresh");
  redlock_unlock(a, held); /* may be over already */
  assert_votes_again(fx, 1, b, c, 4, "fk-after");
}

static void test_cluster_wait(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 1);
  char uri1[700], uri2[700];
  snprintf(uri1, sizeof uri1, "%s?wait=1", ch_uri(c, 0));
  snprintf(uri2, sizeof uri2, "%s?wait=2", ch_uri(c, 0));
  const char *u1[1] = {uri1}, *u2[1] = {uri2};
  redlock_t *a = fx_open(fx, 0, fx_options_uris(fx, 0, u1, 1, REDLOCK_LOG_WARN));
  redlock_t *b = fx_open(fx, 1, fx_options_uris(fx, 1, u2, 1, REDLOCK_LOG_WARN));
  warm_up(fx, 0, a, "cw-a");
  for (unsigned p = 0; p < 3; p++) {
    char res[64];
    name_on(c, p, "cw-held", res, sizeof res);
    redlock_lock_t *l = NULL;
    CF_CHECK(fx, 0, a, redlock_lock(a, res, TTL_MS, &l));
    /* Acknowledged: the replica (node 3 + p) has the key when granted. */
    char key[160];
    cfx_key_of(res, key, sizeof key);
    redisContext *rc = fx_redis(ch_node(c, 3 + p), 2000);
    redisReply *r = redisCommand(rc, "READONLY");
    assert_non_null(r);
    freeReplyObject(r);
    r = redisCommand(rc, "EXISTS %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    redisFree(rc);
    CF_CHECK(fx, 0, a, redlock_unlock(a, l));
    /* wait=2 with one replica: never acknowledged, never granted. */
    redlock_lock_t *no = NULL;
    int rc2 = fx_trylock_until(b, res, TTL_MS, 300, &no);
    char votes[1024];
    redlock_last_votes(b, votes, sizeof votes);
    if (rc2 == REDLOCK_OK || strstr(votes, "primary") == NULL || strstr(votes, "=OK") != NULL)
      fail_msg("wait=2 with one replica: %d: %s", rc2, votes);
  }
  cfx_assert_keys(c, 0);
}

/* ---- role changes no map read saw; acks of another shard ------------------------------- */

/* Longer than FO_*: these schedules take a few seconds while the holder's
 * lock must stay valid (checked: assert_refused_for). */
#define RC_MAX_TTL_MS 20000u
#define RC_TTL_MS 18000u

/* quarantined_options with RC_MAX_TTL_MS, after waiting out the cluster's
 * restart quarantine for that max TTL (a first grant through c). */
static redlock_t *rc_open(fx_t *fx, int slot, ch_cluster_t *cl, const char *uri, int quarantine) {
  redlock_options_t *o = quarantined_options(fx, slot, uri);
  assert_int_equal(redlock_options_set_max_ttl(o, RC_MAX_TTL_MS), 0);
  assert_int_equal(redlock_options_set_quarantine(o, quarantine), 0);
  /* WAIT's bound is the request timeout: room for a loaded machine. */
  assert_int_equal(redlock_options_set_timeouts(o, 2000, 1000), 0);
  redlock_t *c = fx_open(fx, slot, o);
  char res[64];
  for (unsigned p = 0; p < 2; p++) {
    name_on(cl, p, "rc-first", res, sizeof res);
    redlock_lock_t *l = NULL;
    CF_CHECK(fx, slot, c, fx_trylock_until(c, res, 1000, (int)RC_MAX_TTL_MS + 20000, &l));
    CF_CHECK(fx, slot, c, redlock_unlock(c, l));
  }
  return c;
}

/* Node i, a replica (or a primary about to be demoted), cannot replicate:
 * it authenticates to its primary as a user that does not exist, so every
 * sync attempt fails and its data set stays as it is.  Its current link, if
 * any, is cut on its primary `primary` (-1: none). */
static void cut_replication(ch_cluster_t *c, unsigned i, int primary) {
  char buf[256];
  assert_int_equal(rh_server_command(ch_node(c, i), buf, sizeof buf, "CONFIG SET masteruser ghost"),
                   0);
  assert_int_equal(rh_server_command(ch_node(c, i), buf, sizeof buf, "CONFIG SET masterauth nope"),
                   0);
  if (primary >= 0)
    assert_int_equal(rh_server_command(ch_node(c, (unsigned)primary), buf, sizeof buf,
                                       "CLIENT KILL TYPE replica"),
                     0);
}

/* c must not be granted res while `holder` holds it: tries until its vote
 * on the cluster says `why` (the client may first learn of the change from
 * a map read, and a replica started after the primaries may still be in
 * its restart quarantine, which proves nothing here), as long as the
 * holder's validity leaves a second; fails on a grant, and when the
 * schedule ran too long to tell. */
static void assert_refused_for(fx_t *fx, int slot, redlock_t *c, const char *res,
                               const redlock_lock_t *holder, const char *why) {
  char votes[1024];
  for (;;) {
    redlock_lock_t *l = NULL;
    int rc = redlock_trylock(c, res, RC_TTL_MS, &l);
    redlock_last_votes(c, votes, sizeof votes);
    if (rc == REDLOCK_OK)
      fail_msg("%s granted while held (holder's validity %lld ms): %s\n%s", res,
               (long long)redlock_lock_validity_ms(holder), votes, fx_log_text(fx, slot));
    if (strstr(votes, why) != NULL)
      break;
    if (redlock_lock_validity_ms(holder) < 1000) {
      /* Exclusion held to the end (no grant).  A client that had not yet
       * read a slot map naming the slot's new primary could not say why
       * it was refused: on a loaded machine the failover's news may come
       * later than the holder's lock ends, and nothing more can be told. */
      if (strstr(votes, "no primary for slot") != NULL) {
        print_message("inconclusive: %s refused to the end, the new primary not yet in the "
                      "client's slot map: %s\n",
                      res, votes);
        skip();
      }
      fail_msg("%s: %d, votes: %s (expected %s before the holder's lock ends)\n%s", res, rc, votes,
               why, fx_log_text(fx, slot));
    }
    fx_sleep_ms(20); /* a pace for the attempts, not a wait for an outcome */
  }
  /* Not vacuous: the holder still held it when it was refused. */
  assert_true(redlock_lock_validity_ms(holder) > 0);
}

/* A primary demoted and promoted again while a long-lived client's
 * connection to it stayed open and idle: node 0 is demoted by a failover to
 * its replica 3 and cannot sync from it (cut_replication), another client
 * is granted res by node 3, node 0 takes its slots back (TAKEOVER) without
 * that key.  The old client's next request goes down its old connection to
 * node 0, which answers OK: it must not count (the role check after the
 * batch sees node 0's new replication id: failover quarantine). */
static void test_demoted_promoted_idle(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 1); /* node 3 replicates 0 */
  redlock_t *a = rc_open(fx, 0, c, ch_uri(c, 0), 1);
  /* Another client, without quarantine: node 3's grant to it, once node 3
   * is promoted, is what this test needs. */
  redlock_t *b = rc_open(fx, 1, c, ch_uri(c, 0), 0);
  warm_up(fx, 0, a, "dp-a");
  char res[64];
  name_on(c, 0, "dp-held", res, sizeof res);
  redlock_lock_t *l = NULL;
  CF_CHECK(fx, 0, a, redlock_trylock(a, res, RC_TTL_MS, &l));
  CF_CHECK(fx, 0, a, redlock_unlock(a, l));

  cut_replication(c, 0, -1); /* once demoted, node 0 cannot take node 3's data */
  assert_int_equal(ch_failover(c, 3, NULL, 60000), 0);
  /* b takes res from node 3; node 0 never gets it. */
  redlock_lock_t *held = NULL;
  CF_CHECK(fx, 1, b, fx_trylock_until(b, res, RC_TTL_MS, 5000, &held));
  assert_int_equal(ch_failover(c, 0, "TAKEOVER", 60000), 0);
  char key[160];
  cfx_key_of(res, key, sizeof key);
  assert_int_equal(fx_exists(ch_node(c, 0), key), 0); /* node 0 lacks b's key */

  assert_refused_for(fx, 0, a, res, held, "failover quarantine");
  redlock_unlock(b, held);
}

/* wait=1 on a cluster voter proves a key on the replicas of the shard it
 * was written to, not of the shard it moves to.  Two primaries with two
 * replicas each (nodes 2 and 3 replicate 0; 4 and 5 replicate 1).  H's key
 * is acknowledged by a replica of node 0; node 1's replicas cannot sync
 * (cut_replication); the key's slot moves to node 1; node 1 dies and node
 * 4 takes over without the key; node 5, able to sync again, follows node 4
 * and acknowledges its writes.  A fresh client with wait=1 would find node
 * 4's acks covering its one replica: it must not count node 4's yes all
 * the same (a key it never had was acknowledged elsewhere). */
static void test_wait_migrated_failover(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(2, 2);
  char uri[700], buf[256];
  snprintf(uri, sizeof uri, "%s?wait=1", ch_uri(c, 0));
  redlock_t *h = rc_open(fx, 0, c, uri, 1);
  redlock_t *b = rc_open(fx, 1, c, uri, 1); /* it has never seen node 4 */
  warm_up(fx, 0, h, "wm-h");
  cut_replication(c, 4, -1);
  cut_replication(c, 5, 1);
  char res[64];
  name_on(c, 0, "wm-held", res, sizeof res);
  redlock_lock_t *held = NULL;
  CF_CHECK(fx, 0, h, redlock_lock(h, res, RC_TTL_MS, &held));
  assert_int_equal(ch_migrate_slot(c, slot_of(c, res), 0, 1), 0);
  assert_int_equal(rh_server_kill(ch_node(c, 1)), 0);
  assert_int_equal(ch_failover(c, 4, "TAKEOVER", 60000), 0);
  char key[160];
  cfx_key_of(res, key, sizeof key);
  if (fx_exists(ch_node(c, 4), key) != 0) {
    /* The key reached node 4 before its replication was cut (a loaded
     * machine's schedule): the case this test is about, a new owner
     * without H's key, was not made.  Inconclusive, not a failure. */
    print_message("inconclusive: node 4 got %s before the cut; nothing to check\n", key);
    redlock_unlock(h, held);
    skip();
  }
  /* Node 5 follows node 4 and may sync again: node 4's WAIT 1 is met.
   * (Asked outright and with no diskless delay: the cluster would get
   * there by itself, seconds later, while H's lock runs out.) */
  assert_int_equal(
      rh_server_command(ch_node(c, 4), buf, sizeof buf, "CONFIG SET repl-diskless-sync-delay 0"),
      0);
  assert_int_equal(
      rh_server_command(ch_node(c, 5), buf, sizeof buf, "CONFIG SET masteruser %s", ""), 0);
  assert_int_equal(
      rh_server_command(ch_node(c, 5), buf, sizeof buf, "CONFIG SET masterauth %s", ""), 0);
  assert_int_equal(
      rh_server_command(ch_node(c, 5), buf, sizeof buf, "CLUSTER REPLICATE %s", ch_id(c, 4)), 0);
  assert_true(rh_wait_replica_linked(ch_node(c, 4), ch_node(c, 5), 20000));
  assert_true(ch_wait_ok(c, 20000)); /* every node sees node 4 own the slot */

  assert_refused_for(fx, 1, b, res, held, "failover quarantine");
  redlock_unlock(h, held);
}

/* ---- three clusters ------------------------------------------------------------------------ */

#define N_THREE 60

static void test_three_clusters(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *cl[3];
  char uri[3][700];
  const char *uris[3];
  for (int k = 0; k < 3; k++) {
    cl[k] = cfx_start(3, 0);
    snprintf(uri[k], sizeof uri[k], "%s", ch_uri(cl[k], 1));
    uris[k] = uri[k];
  }
  redlock_t *a = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_WARN));
  redlock_t *b = fx_open(fx, 1, fx_options_uris(fx, 1, uris, 3, REDLOCK_LOG_WARN));
  warm_up(fx, 0, a, "c3-a");
  warm_up(fx, 1, b, "c3-b");
  for (int k = 0; k < 3; k++)
    cfx_assert_keys(cl[k], 0);
  static redlock_lock_t *locks[N_THREE];
  char res[N_THREE][32];
  for (int i = 0; i < N_THREE; i++) {
    snprintf(res[i], sizeof res[i], "c3-res-%d", i);
    CF_CHECK(fx, 0, a, redlock_lock(a, res[i], TTL_MS, &locks[i]));
  }
  /* Every cluster holds every key, spread over its primaries. */
  for (int k = 0; k < 3; k++) {
    cfx_assert_keys(cl[k], N_THREE);
    for (unsigned p = 0; p < 3; p++)
      if (cfx_dbsize(ch_node(cl[k], p)) < 1)
        fail_msg("cluster %d: primary %u holds none of the keys", k, p);
  }
  for (int i = 0; i < N_THREE; i++) {
    redlock_lock_t *got = NULL;
    if (redlock_trylock(b, res[i], TTL_MS, &got) == REDLOCK_OK)
      fail_msg("%s granted twice", res[i]);
  }
  /* One cluster stopped: the other two are a quorum, and still exclude. */
  for (unsigned i = 0; i < ch_count(cl[2]); i++)
    assert_int_equal(rh_server_pause(ch_node(cl[2], i)), 0);
  for (int i = 0; i < N_THREE; i += 5) {
    redlock_lock_t *got = NULL;
    if (redlock_trylock(b, res[i], TTL_MS, &got) == REDLOCK_OK)
      fail_msg("%s granted twice with a cluster stopped", res[i]);
    CF_CHECK(fx, 0, a, redlock_extend(a, locks[i], TTL_MS));
  }
  redlock_lock_t *two = NULL;
  CF_CHECK(fx, 1, b, redlock_lock(b, "c3-two-of-three", TTL_MS, &two));
  CF_CHECK(fx, 1, b, redlock_unlock(b, two));
  for (unsigned i = 0; i < ch_count(cl[2]); i++)
    assert_int_equal(rh_server_resume(ch_node(cl[2], i)), 0);
  assert_true(ch_wait_ok(cl[2], 20000));
  for (int i = 0; i < N_THREE; i++)
    CF_CHECK(fx, 0, a, redlock_unlock(a, locks[i]));
  for (int k = 0; k < 3; k++)
    cfx_assert_keys(cl[k], 0);
  redlock_lock_t *again = NULL;
  CF_CHECK(fx, 1, b, redlock_trylock(b, res[0], TTL_MS, &again));
  CF_CHECK(fx, 1, b, redlock_unlock(b, again));
}

/* Run as four ctest shards, every fourth test each (tests/integration/
 * CMakeLists.txt): the order puts both reshards, which load both cores, in
 * the first shard, the one kept apart from the other heavy tests. */
FX_MAIN("cluster_faults", &fx_profile_integration, CF_TEST(test_reshard_held),
        CF_TEST(test_failover_graceful), CF_TEST(test_failover_kill), CF_TEST(test_cluster_wait),
        CF_TEST(test_reshard_load), CF_TEST(test_demoted_promoted_idle),
        CF_TEST(test_wait_migrated_failover), CF_TEST(test_three_clusters))
