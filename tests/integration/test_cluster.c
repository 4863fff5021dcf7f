/* test_cluster.c: a whole Redis Cluster as one voter (redis-cluster://)
 * with real servers: a three-primary cluster started and joined by
 * tests/support/cluster_harness.h (no replicas), plus plain masters from the
 * fixture.  docs/deployments.md, "Cluster voters".
 *
 * Asserts:
 *  - {cluster, master, master}: locks of many resources are granted; while
 *    held, their keys are spread over all three primaries (DBSIZE of each
 *    adds up to the number of resources, none is empty); a second client
 *    is refused; unlocked, no key is left on any primary;
 *  - {cluster} alone: each ACQUIRE event's vote detail names the primary
 *    that owns the key's slot; the stats label the voter's figures with
 *    the voter's label;
 *  - {cluster} alone: the vote names the primary that answered, and a second
 *    client is refused by it; a slot holding a held lock's key is
 * migrated to another primary (SETSLOT IMPORTING / MIGRATING, MIGRATE, SETSLOT NODE); the holder
 * then extends and unlocks it (MOVED followed: the log says so), the key is gone from the new
 * owner, and a fresh lock of it works;
 *  - {cluster} alone: a wait for a lock that expires unreleased ends with
 *    it (waits never hang on a cluster voter);
 *  - {cluster} alone, fencing on: fenced locks (tokens increase), a
 *    semaphore (limit 2: a third permit refused), a read-write lock (two
 *    readers, a writer refused, then granted) and an election, over names
 *    whose keys land on every primary: no call fails (every key of one
 *    resource is in one slot, so no CROSSSLOT), and no lock key is left;
 *  - {cluster} alone: every node stopped (SIGSTOP): a lock call returns
 *    REDLOCK_ENOQUORUM (the voter votes no, with a detail), and after SIGCONT
 *    the voter votes again;
 *  - {cluster} alone, its slots interleaved over three primaries (every
 *    slot a range of its own): locks of many resources are granted, their
 *    keys on every primary;
 *  - {cluster, master, master}, five fresh clients: each one's first lock
 *    on each primary has the cluster's vote (OK, or pending and its key on
 *    the primary). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "fixture.h"

#define N_RESOURCES 48
#define TTL_MS 20000u

#define CL_TEST(f, n) cmocka_unit_test_setup_teardown(f, fx_setup_##n, cfx_teardown)

static void test_cluster_and_masters(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  const char *uris[3] = {ch_uri(c, 2), rh_server_uri(fx->servers[0]),
                         rh_server_uri(fx->servers[1])};
  redlock_t *a = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_WARN));
  redlock_t *b = fx_open(fx, 1, fx_options_uris(fx, 1, uris, 3, REDLOCK_LOG_WARN));
  redlock_lock_t *locks[N_RESOURCES];
  char res[N_RESOURCES][32];
  /* A first pass, then the locks that are held: their keys must all be on
   * the cluster, which a late vote would leave off. */
  for (int i = 0; i < N_RESOURCES; i++) {
    snprintf(res[i], sizeof res[i], "cl-res-%d", i);
    assert_int_equal(redlock_lock(a, res[i], TTL_MS, &locks[i]), REDLOCK_OK);
    assert_int_equal(redlock_unlock(a, locks[i]), REDLOCK_OK);
  }
  cfx_assert_keys(c, 0);
  for (int i = 0; i < N_RESOURCES; i++) {
    int rc = redlock_lock(a, res[i], TTL_MS, &locks[i]);
    if (rc != REDLOCK_OK) {
      char votes[1024];
      redlock_last_votes(a, votes, sizeof votes);
      fail_msg("lock %s: %d: %s\n%s", res[i], rc, votes, fx_log_text(fx, 0));
    }
  }
  /* Held: every key on the cluster, spread over all three primaries. */
  cfx_assert_keys(c, N_RESOURCES);
  for (unsigned i = 0; i < ch_count(c); i++)
    if (cfx_dbsize(ch_node(c, i)) < 1)
      fail_msg("primary %u holds none of the %d keys", i, N_RESOURCES);
  /* Exclusion: the other client gets none of them. */
  for (int i = 0; i < N_RESOURCES; i += 7) {
    redlock_lock_t *other = NULL;
    int rc = redlock_trylock(b, res[i], TTL_MS, &other);
    if (rc == REDLOCK_OK)
      fail_msg("%s granted twice", res[i]);
  }
  for (int i = 0; i < N_RESOURCES; i++)
    assert_int_equal(redlock_unlock(a, locks[i]), REDLOCK_OK);
  cfx_assert_keys(c, 0);
  /* And now the other client can. */
  redlock_lock_t *again = NULL;
  assert_int_equal(redlock_trylock(b, res[0], TTL_MS, &again), REDLOCK_OK);
  assert_int_equal(redlock_unlock(b, again), REDLOCK_OK);
}

static void test_cluster_moved(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  const char *uris[1] = {ch_uri(c, 1)};
  redlock_t *a = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_DEBUG));
  const char *res = "cl-moving";
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_lock(a, res, TTL_MS, &lock), REDLOCK_OK);
  char key[128], buf[64];
  cfx_key_of(res, key, sizeof key);
  assert_int_equal(rh_server_command(ch_node(c, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key), 0);
  int slot = atoi(buf);
  int from = ch_owner(c, 0, slot);
  assert_true(from >= 0);
  assert_true(fx_exists(ch_node(c, (unsigned)from), key) == 1);
  /* The voter's vote names the primary that answered. */
  char votes[1024], want[96];
  redlock_last_votes(a, votes, sizeof votes);
  snprintf(want, sizeof want, "cluster@127.0.0.1:%d=OK (primary 127.0.0.1:%d)", ch_port(c, 0),
           ch_port(c, (unsigned)from));
  if (strstr(votes, want) == NULL)
    fail_msg("want %s in: %s", want, votes);
  /* Another client of the cluster alone is refused by it. */
  redlock_t *b = fx_open(fx, 1, fx_options_uris(fx, 1, uris, 1, REDLOCK_LOG_WARN));
  redlock_lock_t *other = NULL;
  assert_int_not_equal(redlock_trylock(b, res, TTL_MS, &other), REDLOCK_OK);
  redlock_last_votes(b, votes, sizeof votes);
  if (strstr(votes, "=refused (primary") == NULL)
    fail_msg("want the cluster's refusal in: %s", votes);
  unsigned to = ((unsigned)from + 1) % 3;
  assert_int_equal(ch_migrate_slot(c, slot, (unsigned)from, to), 0);
  assert_true(fx_exists(ch_node(c, to), key) == 1);
  assert_true(ch_wait_ok(c, 10000));
  /* The holder extends and unlocks it through the MOVED. */
  fx_log_clear(fx, 0);
  int rc = redlock_extend(a, lock, TTL_MS);
  if (rc != REDLOCK_OK) {
    redlock_last_votes(a, votes, sizeof votes);
    fail_msg("extend after the slot moved: %d: %s\n%s", rc, votes, fx_log_text(fx, 0));
  }
  assert_true(fx_log_contains(fx, 0, "moved to"));
  assert_int_equal(redlock_unlock(a, lock), REDLOCK_OK);
  assert_true(fx_wait_key_absent(ch_node(c, to), key, FX_SETTLE_MS));
  /* A multi-resource lock across slots is refused with why; in one slot
   * (a hash tag) it is granted. */
  const char *apart[2] = {"cl-many-1", "cl-many-2"};
  char k1[128], k2[128], s1[32], s2[32];
  cfx_key_of(apart[0], k1, sizeof k1);
  cfx_key_of(apart[1], k2, sizeof k2);
  assert_int_equal(rh_server_command(ch_node(c, 0), s1, sizeof s1, "CLUSTER KEYSLOT %s", k1), 0);
  assert_int_equal(rh_server_command(ch_node(c, 0), s2, sizeof s2, "CLUSTER KEYSLOT %s", k2), 0);
  assert_string_not_equal(s1, s2);
  redlock_lock_t *many = NULL;
  assert_int_equal(redlock_lock_many(a, apart, 2, TTL_MS, &many), REDLOCK_EINVAL);
  assert_true(fx_log_contains(fx, 0, "must be in one slot"));
  const char *together[2] = {"{cl-tag}-1", "{cl-tag}-2"};
  assert_int_equal(redlock_lock_many(a, together, 2, TTL_MS, &many), REDLOCK_OK);
  assert_int_equal(redlock_unlock(a, many), REDLOCK_OK);
  /* A '}' without a hash tag: its fence counter could not share its slot. */
  redlock_lock_t *brace = NULL;
  assert_int_equal(redlock_lock(a, "cl-a}b", TTL_MS, &brace), REDLOCK_EINVAL);
  assert_true(fx_log_contains(fx, 0, "needs a hash tag"));
  assert_int_equal(redlock_lock(a, "{cl-t}a}b", TTL_MS, &brace), REDLOCK_OK);
  assert_int_equal(redlock_unlock(a, brace), REDLOCK_OK);
  /* A fresh lock goes straight to the new owner. */
  assert_int_equal(redlock_lock(a, res, TTL_MS, &lock), REDLOCK_OK);
  assert_true(fx_exists(ch_node(c, to), key) == 1);
  assert_int_equal(redlock_unlock(a, lock), REDLOCK_OK);
}

typedef struct {
  ch_cluster_t *c;
  char key[128];
} gone_t;

static int key_gone(void *arg) {
  gone_t *g = arg;
  for (unsigned n = 0; n < ch_count(g->c); n++) {
    /* Only the owner answers EXISTS; the others say MOVED. */
    char buf[128];
    if (rh_server_command(ch_node(g->c, n), buf, sizeof buf, "EXISTS %s", g->key) != 0 ||
        strcmp(buf, "1") == 0)
      return 0;
  }
  return 1;
}

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  (void)term;
  fx_event_post(arg);
}

static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
}

#define CL_CHECK(fx, c, call)                                                                      \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != REDLOCK_OK) {                                                                       \
      char votes_[1024];                                                                           \
      redlock_last_votes((c), votes_, sizeof votes_);                                              \
      fail_msg("%s: %d: %s\n%s", #call, rc_, votes_, fx_log_text((fx), 0));                        \
    }                                                                                              \
  } while (0)

static void test_cluster_primitives(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  const char *uris[1] = {ch_uri(c, 0)};
  redlock_options_t *o = fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_fencing(o, 1), 0);
  redlock_t *a = fx_open(fx, 0, o);
  redlock_lock_t *l = NULL;
  /* The primaries' connections are made on first use. */
  for (int i = 0; i < 12; i++) {
    char res[32];
    snprintf(res, sizeof res, "cl-prim-warm-%d", i);
    CL_CHECK(fx, a, redlock_lock(a, res, TTL_MS, &l));
    CL_CHECK(fx, a, redlock_unlock(a, l));
  }
  for (int i = 0; i < 6; i++) {
    char name[32];
    snprintf(name, sizeof name, "cl-prim-%d", i);
    /* Fenced locks: each token larger than the last. */
    CL_CHECK(fx, a, redlock_lock(a, name, TTL_MS, &l));
    uint64_t f1 = redlock_lock_fence(l);
    CL_CHECK(fx, a, redlock_unlock(a, l));
    CL_CHECK(fx, a, redlock_lock(a, name, TTL_MS, &l));
    uint64_t f2 = redlock_lock_fence(l);
    CL_CHECK(fx, a, redlock_unlock(a, l));
    if (f1 == 0 || f2 <= f1)
      fail_msg("%s: fences %llu then %llu", name, (unsigned long long)f1, (unsigned long long)f2);
    /* A semaphore of two permits. */
    redlock_lock_t *p1 = NULL, *p2 = NULL, *p3 = NULL;
    CL_CHECK(fx, a, redlock_semaphore_acquire(a, name, 2, TTL_MS, 0, &p1));
    CL_CHECK(fx, a, redlock_semaphore_acquire(a, name, 2, TTL_MS, 0, &p2));
    assert_int_equal(redlock_semaphore_acquire(a, name, 2, TTL_MS, 0, &p3), REDLOCK_ELOCKED);
    CL_CHECK(fx, a, redlock_unlock(a, p1));
    CL_CHECK(fx, a, redlock_unlock(a, p2));
    /* Read-write: two readers exclude a writer, which then gets it. */
    redlock_lock_t *r1 = NULL, *r2 = NULL, *w = NULL;
    CL_CHECK(fx, a, redlock_rwlock_read(a, name, TTL_MS, 0, &r1));
    CL_CHECK(fx, a, redlock_rwlock_read(a, name, TTL_MS, 0, &r2));
    assert_int_equal(redlock_rwlock_write(a, name, TTL_MS, 0, &w), REDLOCK_ELOCKED);
    CL_CHECK(fx, a, redlock_unlock(a, r1));
    CL_CHECK(fx, a, redlock_unlock(a, r2));
    CL_CHECK(fx, a, redlock_rwlock_write(a, name, TTL_MS, 0, &w));
    CL_CHECK(fx, a, redlock_unlock(a, w));
    /* An election. */
    fx_event_t elected;
    fx_event_init(&elected);
    redlock_election_t *e = NULL;
    CL_CHECK(fx, a, redlock_elect(a, name, 2000, on_elected, on_lost, &elected, &e));
    if (!fx_event_wait(&elected, 10000))
      fail_msg("%s: not elected; log:\n%s", name, fx_log_text(fx, 0));
    CL_CHECK(fx, a, redlock_resign(a, e));
    fx_event_destroy(&elected);
  }
  /* Unlocked: no lock key is left on any primary (the resignation's
   * release is sent after redlock_resign returns: waited for). */
  for (int i = 0; i < 6; i++) {
    gone_t g = {c, ""};
    char name[32];
    snprintf(name, sizeof name, "cl-prim-%d", i);
    cfx_key_of(name, g.key, sizeof g.key);
    if (!rh_wait_until(key_gone, &g, FX_SETTLE_MS))
      fail_msg("key %s left on a primary", g.key);
  }
}

static void test_cluster_unreachable(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  const char *uris[1] = {ch_uri(c, 0)};
  redlock_t *a = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN));
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_lock(a, "cl-first", TTL_MS, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(a, lock), REDLOCK_OK);
  /* A wait on a cluster voter ends: the holder's lock expires unreleased
   * (nothing is published), and the waiter takes it. */
  redlock_t *b = fx_open(fx, 1, fx_options_uris(fx, 1, uris, 1, REDLOCK_LOG_WARN));
  redlock_lock_t *held = NULL, *waited = NULL;
  assert_int_equal(redlock_lock(a, "cl-wait", 1000, &held), REDLOCK_OK);
  assert_int_equal(redlock_lock_wait(b, "cl-wait", TTL_MS, 10000, &waited), REDLOCK_OK);
  assert_int_equal(redlock_unlock(b, waited), REDLOCK_OK);
  assert_int_not_equal(redlock_extend(a, held, 1000), REDLOCK_OK);
  redlock_unlock(a, held);
  for (unsigned i = 0; i < ch_count(c); i++)
    assert_int_equal(rh_server_pause(ch_node(c, i)), 0);
  int rc = redlock_trylock(a, "cl-second", TTL_MS, &lock);
  assert_int_equal(rc, REDLOCK_ENOQUORUM);
  char votes[1024];
  redlock_last_votes(a, votes, sizeof votes);
  if (strstr(votes, "=OK") != NULL)
    fail_msg("a stopped cluster voted yes: %s", votes);
  for (unsigned i = 0; i < ch_count(c); i++)
    assert_int_equal(rh_server_resume(ch_node(c, i)), 0);
  assert_true(ch_wait_ok(c, 20000));
  /* Back: it votes again (its connections recover within their backoff). */
  uint64_t until = rh_now_ms() + 20000;
  for (;;) {
    rc = redlock_trylock(a, "cl-second", TTL_MS, &lock);
    if (rc == REDLOCK_OK)
      break;
    if (rh_now_ms() > until) {
      redlock_last_votes(a, votes, sizeof votes);
      fail_msg("no vote after SIGCONT: %d: %s\n%s", rc, votes, fx_log_text(fx, 0));
    }
    fx_sleep_ms(50); /* a pace for the attempts, not a wait for an outcome */
  }
  assert_int_equal(redlock_unlock(a, lock), REDLOCK_OK);
}

/* What the event callback saw of the ACQUIRE events (written on the loop
 * thread before each blocking call returns, read after it). */
typedef struct {
  unsigned n;
  char addr[8][96];
  char verdict[8][32];
  char detail[8][128];
} seen_t;

static void record_acquire(const redlock_event_t *ev, void *arg) {
  seen_t *seen = arg;
  if (redlock_event_kind(ev) != REDLOCK_EVENT_ACQUIRE || seen->n == 8 ||
      redlock_event_node_count(ev) != 1)
    return;
  const char *detail = redlock_event_node_detail(ev, 0);
  snprintf(seen->addr[seen->n], sizeof seen->addr[0], "%s", redlock_event_node_addr(ev, 0));
  snprintf(seen->verdict[seen->n], sizeof seen->verdict[0], "%s",
           redlock_event_node_verdict(ev, 0));
  snprintf(seen->detail[seen->n], sizeof seen->detail[0], "%s", detail ? detail : "(null)");
  seen->n++;
}

/* The events of a cluster voter name the primary each vote came from
 * (redlock_event_node_detail, as redlock_last_votes does); the stats label
 * the voter's figures with the voter's label, and count each primary's
 * requests apart too (docs/observability.md). */
static void test_cluster_labels(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  const char *uris[1] = {ch_uri(c, 1)};
  static seen_t seen;
  memset(&seen, 0, sizeof seen);
  redlock_options_t *o = fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_event_cb(o, record_acquire, &seen), 0);
  redlock_t *a = fx_open(fx, 0, o);
  char label[64];
  snprintf(label, sizeof label, "cluster@127.0.0.1:%d", ch_port(c, 0));
  unsigned primaries_seen = 0;
  for (unsigned i = 0; i < 8; i++) {
    char res[32], key[128], buf[64], want[96];
    snprintf(res, sizeof res, "cl-label-%u", i);
    redlock_lock_t *lock = NULL;
    assert_int_equal(redlock_lock(a, res, TTL_MS, &lock), REDLOCK_OK);
    assert_int_equal(redlock_unlock(a, lock), REDLOCK_OK);
    cfx_key_of(res, key, sizeof key);
    assert_int_equal(rh_server_command(ch_node(c, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key),
                     0);
    int owner = ch_owner(c, 0, atoi(buf));
    assert_true(owner >= 0);
    primaries_seen |= 1u << owner;
    assert_int_equal(seen.n, i + 1);
    assert_string_equal(seen.addr[i], label);
    assert_string_equal(seen.verdict[i], "OK");
    snprintf(want, sizeof want, "primary 127.0.0.1:%d", ch_port(c, (unsigned)owner));
    assert_string_equal(seen.detail[i], want);
  }
  assert_true(__builtin_popcount(primaries_seen) >= 2); /* the names spread over primaries */
  char *text = malloc(1 << 20);
  assert_non_null(text);
  assert_true(redlock_stats(a, REDLOCK_STATS_PROMETHEUS, text, 1 << 20) > 0);
  char series[160];
  snprintf(series, sizeof series, "redlock_master_requests_total{master=\"%s\"} ", label);
  const char *at = strstr(text, series);
  if (at == NULL)
    fail_msg("want %s in the stats", series);
  long long voter_requests = atoll(at + strlen(series));
  /* Each primary's own series: the primaries that got the keys have some,
   * and together they are the voter's. */
  long long sum = 0;
  for (unsigned p = 0; p < ch_count(c); p++) {
    snprintf(series, sizeof series,
             "redlock_primary_requests_total{master=\"%s\",primary=\"127.0.0.1:%d\"} ", label,
             ch_port(c, p));
    at = strstr(text, series);
    if (at == NULL && (primaries_seen & (1u << p)))
      fail_msg("want %s in the stats:\n%s", series, text);
    long long n = at != NULL ? atoll(at + strlen(series)) : 0;
    if ((primaries_seen & (1u << p)) && n < 2)
      fail_msg("%s%lld: want a lock and an unlock at least", series, n);
    sum += n;
  }
  if (sum != voter_requests)
    fail_msg("the primaries' requests sum to %lld, the voter's are %lld", sum, voter_requests);
  assert_non_null(strstr(text, "redlock_primary_request_duration_seconds_count{master=\""));
  assert_true(redlock_stats(a, REDLOCK_STATS_JSON, text, 1 << 20) > 0);
  snprintf(series, sizeof series, "\"primaries\":[{\"primary\":\"127.0.0.1:");
  if (strstr(text, series) == NULL)
    fail_msg("want %s in the JSON stats:\n%s", series, text);
  free(text);
}

/* A cluster whose three primaries own interleaved slots (slot s is primary
 * s % 3's, 16384 ranges of one slot: a map as many reshards leave it, whose
 * CLUSTER SHARDS reply has 10922 elements in a shard's slots and ~33 000
 * values in all).  The voter reads it and locks keys on every primary. */
static void test_cluster_interleaved(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start_opts(&(ch_options_t){.primaries = 3, .interleaved = 1});
  assert_int_equal(ch_owner(c, 0, 0), 0);
  assert_int_equal(ch_owner(c, 0, 1), 1);
  assert_int_equal(ch_owner(c, 0, 16383), 16383 % 3);
  const char *uris[1] = {ch_uri(c, 1)};
  redlock_t *a = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN));
  redlock_lock_t *locks[N_RESOURCES];
  for (int i = 0; i < N_RESOURCES; i++) {
    char res[32];
    snprintf(res, sizeof res, "cl-il-%d", i);
    int rc = redlock_lock(a, res, TTL_MS, &locks[i]);
    if (rc != REDLOCK_OK) {
      char votes[1024];
      redlock_last_votes(a, votes, sizeof votes);
      fail_msg("lock %s: %d: %s\n%s", res, rc, votes, fx_log_text(fx, 0));
    }
  }
  cfx_assert_keys(c, N_RESOURCES);
  for (unsigned i = 0; i < ch_count(c); i++)
    if (cfx_dbsize(ch_node(c, i)) < 1)
      fail_msg("primary %u holds none of the %d keys", i, N_RESOURCES);
  for (int i = 0; i < N_RESOURCES; i++)
    assert_int_equal(redlock_unlock(a, locks[i]), REDLOCK_OK);
  cfx_assert_keys(c, 0);
}

typedef struct {
  rh_server_t *server;
  const char *key;
} key_on_t;

static int key_there(void *arg) {
  key_on_t *k = arg;
  return fx_exists(k->server, k->key) == 1;
}

/* A fresh client's first lock on each primary gets the cluster's vote:
 * redlock_open returns with the voter's slot map read and its primaries
 * connected, so the first request to each goes out at once (it used to
 * wait for its connection, parked, and be withdrawn unsent once the two
 * masters made a quorum: the lock held on the masters only).  Several fresh
 * clients, each locking first one resource per primary. */
static void test_cluster_first_locks(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  char res[3][32], key[3][128];
  unsigned found = 0;
  for (int i = 0; found != 7 && i < 1000; i++) {
    char name[32], k[128], buf[64];
    snprintf(name, sizeof name, "cl-first-%d", i);
    cfx_key_of(name, k, sizeof k);
    assert_int_equal(rh_server_command(ch_node(c, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", k), 0);
    int owner = ch_owner(c, 0, atoi(buf));
    assert_true(owner >= 0 && owner < 3);
    if (found & (1u << owner))
      continue;
    found |= 1u << owner;
    snprintf(res[owner], sizeof res[owner], "%s", name);
    snprintf(key[owner], sizeof key[owner], "%s", k);
  }
  assert_int_equal(found, 7);
  const char *uris[3] = {ch_uri(c, 1), rh_server_uri(fx->servers[0]),
                         rh_server_uri(fx->servers[1])};
  for (int client = 0; client < 5; client++) {
    redlock_t *a = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_WARN));
    for (unsigned p = 0; p < 3; p++) {
      redlock_lock_t *lock = NULL;
      char votes[1024], ok[96], pending[96];
      assert_int_equal(redlock_lock(a, res[p], TTL_MS, &lock), REDLOCK_OK);
      redlock_last_votes(a, votes, sizeof votes);
      /* OK, or still out when the masters made the quorum first: then its
       * key lands on the primary */
      snprintf(ok, sizeof ok, "cluster@127.0.0.1:%d=OK (primary 127.0.0.1:%d)", ch_port(c, 0),
               ch_port(c, p));
      snprintf(pending, sizeof pending, "cluster@127.0.0.1:%d=pending", ch_port(c, 0));
      if (strstr(votes, ok) == NULL && strstr(votes, pending) == NULL)
        fail_msg("client %d, first lock on primary %u: want the cluster's vote in: %s", client, p,
                 votes);
      key_on_t k = {ch_node(c, p), key[p]};
      if (!rh_wait_until(key_there, &k, FX_SETTLE_MS))
        fail_msg("client %d: %s is not on primary %u: %s", client, key[p], p, votes);
      assert_int_equal(redlock_unlock(a, lock), REDLOCK_OK);
      assert_true(fx_wait_key_absent(ch_node(c, p), key[p], FX_SETTLE_MS));
    }
    fx_close(fx, 0);
  }
}

FX_MAIN("cluster", &fx_profile_integration, CL_TEST(test_cluster_and_masters, 2),
        CL_TEST(test_cluster_moved, 0), CL_TEST(test_cluster_primitives, 0),
        CL_TEST(test_cluster_unreachable, 0), CL_TEST(test_cluster_labels, 0),
        CL_TEST(test_cluster_interleaved, 0), CL_TEST(test_cluster_first_locks, 2))
