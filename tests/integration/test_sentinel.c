/* test_sentinel.c: a Sentinel voter (redis-sentinel://) with real servers:
 * M (the master of "mymaster"), R (its replica), B and C (plain masters, the
 * other voters), and sentinels (tests/support/sentinel_harness.h) watching
 * M: three of them, quorum 2, down after 1 s.  Quarantine on, max TTL short;
 * the servers are fresh, so each scene waits until no restart quarantine is
 * left and the client sees it (scene_warm).  docs/deployments.md, "Sentinel
 * voters"; docs/safety.md §5b.
 *
 * Asserts:
 *  - discovery: a lock through the sentinel voter, its vote OK;
 *  - SENTINEL FAILOVER: the voter follows the new master, whose votes are in
 *    failover quarantine until max TTL has passed, then count; a client that
 *    starts once the promotion is older than max TTL counts them at once
 *    (the sentinels' role-reported-time; INFO says only that it was
 *    promoted, not when);
 *  - SIGKILL of the master: the sentinels fail over and the voter follows;
 *  - never two holders: the lock is taken on M and B while R's link is cut
 *    (R stopped, CLIENT KILL TYPE replica), so R lacks the key; M dies, R is
 *    promoted; a second client, opened after the promotion, keeps trying
 *    until the first lock's validity has run out and is never granted (R's
 *    votes are in failover quarantine; without it R and C would make a
 *    quorum);
 *  - with wait=1 the same failover keeps the lock: R holds the key, a second
 *    client is refused, the holder extends and unlocks it, and nothing was
 *    quarantined;
 *  - sentinel credentials (requirepass, given as sentinel_password=), with a
 *    dead sentinel listed first: asked in turn; a wrong password says why;
 *  - an unknown master name: the voter is down with a clear why, the lock
 *    fails with REDLOCK_ENOQUORUM, nothing crashes or leaks. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "sentinel_harness.h"

#define NAME "mymaster"
#define TTL_SHORT 4000u /* max TTL (and ttl) where the failover's timing does not matter */
#define TTL_LONG 12000u /* where a lock must outlive a failover (about 2..5 s) */
#define SENTINEL_PASSWORD "sentinel-pw-4321"
#define DEADLINE_MS                                                                                \
  40000 /* a failover: down-after 1 s, election, promotion; a failed                               \
         * election is tried again after 2 x failover-timeout */
enum { M = 0, R = 1, B = 2, C = 3 };

typedef struct {
  fx_t *fx;
  char dir[PATH_MAX];
  sh_sentinel_t *sentinels[3];
  unsigned n;
  uint32_t max_ttl;
  char uri[512];
} scene_t;

/* The scene of the running test, for the teardown of a failed one. */
static scene_t g_scene;

static void scene_cleanup(void) {
  for (unsigned i = 0; i < g_scene.n; i++)
    sh_stop(g_scene.sentinels[i]);
  if (g_scene.dir[0] != '\0')
    rh_remove_dir(g_scene.dir);
  memset(&g_scene, 0, sizeof g_scene);
}

static int sc_teardown(void **state) {
  fx_t *fx = *state;
  /* The clients first: they must not see the sentinels go. */
  for (int i = 0; fx != NULL && i < FX_MAX_CLIENTS; i++)
    fx_close(fx, i);
  scene_cleanup();
  return fx_teardown(state);
}
#define SC_TEST(f) cmocka_unit_test_setup_teardown(f, fx_setup_5, sc_teardown)

/* Every sentinel knows the others and the replica. */
static int sentinels_ready(void *arg) {
  scene_t *s = arg;
  for (unsigned i = 0; i < s->n; i++) {
    char others[32], replicas[32];
    if (sh_master_field(s->sentinels[i], NAME, "num-other-sentinels", others, sizeof others) != 0 ||
        sh_master_field(s->sentinels[i], NAME, "num-slaves", replicas, sizeof replicas) != 0 ||
        atoi(others) != (int)s->n - 1 || atoi(replicas) < 1)
      return 0;
  }
  return 1;
}

/* R becomes M's replica; n sentinels watch M (password: theirs, or NULL);
 * the voter's URI lists `first` (a sentinel that is not there, or NULL)
 * and then them, with `params` (or NULL). */
static void scene_start(scene_t *s, fx_t *fx, unsigned n, const char *password, const char *first,
                        const char *params, uint32_t max_ttl) {
  memset(s, 0, sizeof *s);
  s->fx = fx;
  s->max_ttl = max_ttl;
  char buf[64];
  assert_int_equal(rh_server_command(fx->servers[R], buf, sizeof buf, "REPLICAOF 127.0.0.1 %d",
                                     rh_server_port(fx->servers[M])),
                   0);
  assert_true(rh_wait_replica_linked(fx->servers[M], fx->servers[R], 10000));
  const char *tmp = getenv("TMPDIR");
  snprintf(s->dir, sizeof s->dir, "%s/redlock-sentinel-XXXXXX",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
  assert_non_null(mkdtemp(s->dir));
  sh_options_t o = {.dir = s->dir,
                    .master_name = NAME,
                    .master_port = rh_server_port(fx->servers[M]),
                    .quorum = n >= 3 ? 2 : 1,
                    .down_after_ms = 1000,
                    .failover_timeout_ms = 5000,
                    .password = password};
  for (; s->n < n; s->n++)
    assert_int_equal(sh_start(&s->sentinels[s->n], &o), 0);
  assert_true(rh_wait_until(sentinels_ready, s, 30000));
  int used = snprintf(s->uri, sizeof s->uri, "redis-sentinel://%s%s", first ? first : "",
                      first ? "," : "");
  for (unsigned i = 0; i < n; i++)
    used += snprintf(s->uri + used, sizeof s->uri - (size_t)used, "%s127.0.0.1:%d", i ? "," : "",
                     sh_port(s->sentinels[i]));
  snprintf(s->uri + used, sizeof s->uri - (size_t)used, "/" NAME "%s%s", params ? "?" : "",
           params ? params : "");
}

/* The voter's label: NAME@ its first sentinel. */
static void scene_label(const scene_t *s, const char *first, char *buf, size_t size) {
  if (first != NULL)
    snprintf(buf, size, NAME "@%s", first);
  else
    snprintf(buf, size, NAME "@127.0.0.1:%d", sh_port(s->sentinels[0]));
}

/* A client over the sentinel voter (uri, or the scene's), B and C;
 * quarantine on. */
static redlock_t *scene_client(scene_t *s, int slot, const char *uri) {
  const char *uris[3] = {uri != NULL ? uri : s->uri, rh_server_uri(s->fx->servers[B]),
                         rh_server_uri(s->fx->servers[C])};
  redlock_options_t *opts = fx_options_uris(s->fx, slot, uris, 3, REDLOCK_LOG_DEBUG);
  assert_int_equal(redlock_options_set_quarantine(opts, 1), 0);
  assert_int_equal(redlock_options_set_max_ttl(opts, s->max_ttl), 0);
  assert_int_equal(redlock_options_set_retry(opts, 0, 0, 0), 0);
  return fx_open(s->fx, slot, opts);
}

typedef struct {
  void *arg; /* the fixture (all_aged) or the scene (role_older_than) */
  uint32_t ms;
} aged_t;

/* Every server reports an uptime that no longer quarantines it (INFO server). */
static int all_aged(void *arg) {
  aged_t *a = arg;
  fx_t *fx = a->arg;
  for (size_t i = 0; i < fx->n; i++) {
    char info[4096];
    if (rh_server_command(fx->servers[i], info, sizeof info, "INFO server") != 0)
      return 0;
    const char *up = strstr(info, "uptime_in_seconds:");
    if (up == NULL || atol(up + 18) < (long)(a->ms / 1000) + 2)
      return 0;
  }
  return 1;
}

/* Every sentinel has seen the master in its role for longer than a->ms. */
static int role_older_than(void *arg) {
  aged_t *a = arg;
  scene_t *s = a->arg;
  for (unsigned i = 0; i < s->n; i++) {
    char age[32];
    if (sh_master_field(s->sentinels[i], NAME, "role-reported-time", age, sizeof age) != 0 ||
        atol(age) <= (long)a->ms)
      return 0;
  }
  return 1;
}

/* The servers are fresh: wait until none is in restart quarantine (so that
 * only a failover can quarantine one), and the client sees it. */
static void scene_warm(scene_t *s, redlock_t *c) {
  aged_t a = {s->fx, s->max_ttl};
  assert_true(rh_wait_until(all_aged, &a, 30000));
  FX_NAME(res, "warm");
  redlock_lock_t *lock = NULL;
  assert_int_equal(fx_trylock_until(c, res, 1000, 10000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

/* The vote of the sentinel voter in the client's last round. */
static int voted(redlock_t *c, const char *label, const char *verdict) {
  char votes[1024], want[256];
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  snprintf(want, sizeof want, "%s=%s", label, verdict);
  return strstr(votes, want) != NULL;
}

/* Fails the test unless the sentinel voter's last vote was `verdict`. */
static void assert_voted(fx_t *fx, int slot, redlock_t *c, const char *label, const char *verdict) {
  if (voted(c, label, verdict))
    return;
  char votes[1024];
  redlock_last_votes(c, votes, sizeof votes);
  fail_msg("want %s=%s in: %s\n%s", label, verdict, votes, fx_log_text(fx, slot));
}

/* C holds res with another value while `first` takes it, so that the grant
 * rests on the sentinel voter and B; then C lets go, so that a second
 * client could use C. */
static void lock_on_m_and_b(scene_t *s, redlock_t *first, const char *res, uint32_t ttl,
                            redlock_lock_t **held) {
  char buf[64], label[128];
  rh_server_t *c = s->fx->servers[C];
  assert_int_equal(rh_server_command(c, buf, sizeof buf, "SET %s foreign PX 60000", res), 0);
  FX_ASSERT_RC(s->fx, first, redlock_trylock(first, res, ttl, held), REDLOCK_OK);
  scene_label(s, NULL, label, sizeof label);
  if (!voted(first, label, "OK")) {
    char votes[1024];
    redlock_last_votes(first, votes, sizeof votes);
    fail_msg("want the sentinel voter's OK: %s", votes);
  }
  assert_int_equal(rh_server_command(c, buf, sizeof buf, "DEL %s", res), 0);
}

/* The client's log says it followed the sentinels to R. */
static void wait_followed(scene_t *s, int slot) {
  char want[96];
  snprintf(want, sizeof want, "failover: following it to 127.0.0.1:%d",
           rh_server_port(s->fx->servers[R]));
  if (!fx_wait_log(s->fx, slot, want, DEADLINE_MS))
    fail_msg("the voter did not follow the failover to R:\n%s", fx_log_text(s->fx, slot));
}

/* Some sentinel names R as the master. */
static int sentinels_name_r(void *arg) {
  scene_t *s = arg;
  char addr[128], want[64];
  snprintf(want, sizeof want, "127.0.0.1\n%d", rh_server_port(s->fx->servers[R]));
  for (unsigned i = 0; i < s->n; i++)
    if (sh_command(s->sentinels[i], addr, sizeof addr, "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                   NAME) == 0 &&
        strcmp(addr, want) == 0)
      return 1;
  return 0;
}

/* SENTINEL FAILOVER until a sentinel takes it (one that does not know the
 * replica well enough yet says NOGOODSLAVE). */
static int failover_taken(void *arg) {
  scene_t *s = arg;
  char buf[256];
  return sh_command(s->sentinels[0], buf, sizeof buf, "SENTINEL FAILOVER %s", NAME) == 0 &&
         strcmp(buf, "OK") == 0;
}

/* ---- the tests ------------------------------------------------------------------------ */

static void test_discovery(void **state) {
  fx_t *fx = *state;
  scene_t *s = &g_scene;
  scene_start(s, fx, 3, NULL, NULL, NULL, TTL_SHORT);
  redlock_t *c = scene_client(s, 0, NULL);
  scene_warm(s, c);
  FX_NAME(res, "discovery");
  redlock_lock_t *held = NULL;
  lock_on_m_and_b(s, c, res, TTL_SHORT, &held);
  assert_true(fx_key_is(fx->servers[M], res, redlock_lock_value(held)));
  char want[96];
  snprintf(want, sizeof want, "names 127.0.0.1:%d as the master of '" NAME "'",
           rh_server_port(fx->servers[M]));
  assert_true(fx_log_contains(fx, 0, want));
  FX_ASSERT_RC(fx, c, redlock_unlock(c, held), REDLOCK_OK);
  assert_true(fx_wait_key_absent(fx->servers[M], res, FX_SETTLE_MS));
}

/* Trylock (C holding a foreign value, so that the sentinel voter's vote is
 * needed) until it is granted; counts the rounds where that voter's vote
 * was in failover quarantine. */
static unsigned lock_after_quarantine(scene_t *s, redlock_t *c, const char *res) {
  char buf[64], label[128];
  scene_label(s, NULL, label, sizeof label);
  assert_int_equal(
      rh_server_command(s->fx->servers[C], buf, sizeof buf, "SET %s foreign PX 600000", res), 0);
  unsigned quarantined = 0;
  uint64_t deadline = rh_now_ms() + s->max_ttl + DEADLINE_MS;
  for (;;) {
    redlock_lock_t *lock = NULL;
    int rc = redlock_trylock(c, res, 1000, &lock);
    if (rc == REDLOCK_OK) {
      assert_true(voted(c, label, "OK"));
      assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
      return quarantined;
    }
    quarantined += voted(c, label, "quarantined (failover quarantine");
    if (rh_now_ms() > deadline) {
      char votes[1024];
      redlock_last_votes(c, votes, sizeof votes);
      fail_msg("not granted after the failover: %s\n%s", votes, fx_log_text(s->fx, 0));
    }
    fx_sleep_ms(50); /* a pace for the attempts, not a wait for an outcome */
  }
}

static void test_manual_failover(void **state) {
  fx_t *fx = *state;
  scene_t *s = &g_scene;
  scene_start(s, fx, 3, NULL, NULL, NULL, TTL_SHORT);
  redlock_t *c = scene_client(s, 0, NULL);
  scene_warm(s, c);
  assert_true(rh_wait_until(failover_taken, s, 20000));
  wait_followed(s, 0);
  FX_NAME(res, "manual");
  unsigned quarantined = lock_after_quarantine(s, c, res);
  if (quarantined == 0)
    fail_msg("R's votes were never in failover quarantine:\n%s", fx_log_text(fx, 0));

  /* Once the promotion is older than max TTL, a client that starts then
   * sees R (master_replid2 set: promoted once) for the first time.  INFO
   * cannot say when R was promoted; the sentinels can: it votes at once. */
  aged_t a = {s, s->max_ttl + 1000};
  assert_true(rh_wait_until(role_older_than, &a, DEADLINE_MS));
  redlock_t *fresh = scene_client(s, 1, NULL);
  char buf[64], label[128];
  scene_label(s, NULL, label, sizeof label);
  FX_NAME(res2, "manual-fresh");
  assert_int_equal(
      rh_server_command(fx->servers[C], buf, sizeof buf, "SET %s foreign PX 60000", res2), 0);
  redlock_lock_t *lock = NULL;
  if (redlock_trylock(fresh, res2, 1000, &lock) != REDLOCK_OK)
    assert_voted(fx, 1, fresh, label, "OK");
  assert_voted(fx, 1, fresh, label, "OK");
  FX_ASSERT_RC(fx, fresh, redlock_unlock(fresh, lock), REDLOCK_OK);
  if (fx_log_contains(fx, 1, "was promoted from a replica"))
    fail_msg("a promotion older than max TTL was quarantined:\n%s", fx_log_text(fx, 1));
}

static void test_master_killed(void **state) {
  fx_t *fx = *state;
  scene_t *s = &g_scene;
  scene_start(s, fx, 3, NULL, NULL, NULL, TTL_SHORT);
  redlock_t *c = scene_client(s, 0, NULL);
  scene_warm(s, c);
  assert_int_equal(rh_server_kill(fx->servers[M]), 0);
  wait_followed(s, 0);
  FX_NAME(res, "killed");
  (void)lock_after_quarantine(s, c, res);
}

static void test_never_two_holders(void **state) {
  fx_t *fx = *state;
  scene_t *s = &g_scene;
  scene_start(s, fx, 3, NULL, NULL, NULL, TTL_LONG);
  redlock_t *first = scene_client(s, 0, NULL);
  scene_warm(s, first);

  /* R stops hearing from M: the lock, on M and B, never reaches it. */
  char buf[256];
  assert_int_equal(rh_server_pause(fx->servers[R]), 0);
  assert_int_equal(rh_server_command(fx->servers[M], buf, sizeof buf, "CLIENT KILL TYPE replica"),
                   0);
  FX_NAME(res, "two-holders");
  redlock_lock_t *held = NULL;
  lock_on_m_and_b(s, first, res, TTL_LONG, &held);
  uint64_t valid_until = rh_now_ms() + (uint64_t)redlock_lock_validity_ms(held);
  /* M dies before R can reconnect to it: R never gets the key. */
  assert_int_equal(rh_server_kill(fx->servers[M]), 0);
  assert_int_equal(rh_server_resume(fx->servers[R]), 0);
  assert_true(fx_key_absent(fx->servers[R], res));
  assert_true(rh_wait_until(sentinels_name_r, s, DEADLINE_MS));
  if (rh_now_ms() + 1000 > valid_until) {
    fprintf(stderr, "test_never_two_holders: the failover outlasted the lock; nothing to check\n");
    redlock_unlock(first, held);
    skip();
  }

  /* A second client, new to R, keeps trying while the first lock is valid. */
  redlock_t *second = scene_client(s, 1, NULL);
  char label[128];
  scene_label(s, NULL, label, sizeof label);
  unsigned tries = 0, quarantined = 0;
  while (rh_now_ms() < valid_until + 200) {
    redlock_lock_t *other = NULL;
    int rc = redlock_trylock(second, res, TTL_SHORT, &other);
    if (rc == REDLOCK_OK && rh_now_ms() < valid_until)
      fail_msg("two holders: granted %llu ms before the first lock's validity ends",
               (unsigned long long)(valid_until - rh_now_ms()));
    if (rc == REDLOCK_OK) {
      redlock_unlock(second, other);
      break;
    }
    quarantined += voted(second, label, "quarantined (failover quarantine");
    tries++;
    fx_sleep_ms(50);
  }
  assert_true(tries > 0);
  if (quarantined == 0)
    fail_msg("R's votes were never in failover quarantine:\n%s", fx_log_text(fx, 1));
  assert_true(fx_log_contains(fx, 1, "was promoted from a replica"));
  wait_followed(s, 0);
  redlock_unlock(first, held);
}

/* R refuses the second client: its vote is in, and is a refusal. */
typedef struct {
  redlock_t *c;
  const char *res, *label;
} refused_t;

static int refused_by_r(void *arg) {
  refused_t *w = arg;
  redlock_lock_t *other = NULL;
  int rc = redlock_trylock(w->c, w->res, TTL_SHORT, &other);
  if (rc == REDLOCK_OK)
    fail_msg("two holders: the second client was granted the lock");
  return rc == REDLOCK_ELOCKED && voted(w->c, w->label, "refused");
}

static void test_acked_lock_survives(void **state) {
  fx_t *fx = *state;
  scene_t *s = &g_scene;
  /* (wait_ms well below the request timeout: a promoted R with no replica
   * answers WAIT only when it runs out, and the vote must still count) */
  scene_start(s, fx, 3, NULL, NULL, "wait=1&wait_ms=100", TTL_LONG);
  redlock_t *first = scene_client(s, 0, NULL);
  scene_warm(s, first);
  FX_NAME(res, "acked");
  redlock_lock_t *held = NULL;
  lock_on_m_and_b(s, first, res, TTL_LONG, &held);
  assert_true(fx_key_is(fx->servers[R], res, redlock_lock_value(held)));
  fx_log_clear(fx, 0); /* (the fresh servers' restart quarantines were logged) */
  assert_int_equal(rh_server_kill(fx->servers[M]), 0);
  wait_followed(s, 0);
  assert_true(fx_key_is(fx->servers[R], res, redlock_lock_value(held)));

  redlock_t *second = scene_client(s, 1, NULL);
  char label[128];
  scene_label(s, NULL, label, sizeof label);
  refused_t w = {second, res, label};
  if (!rh_wait_until(refused_by_r, &w, 10000))
    assert_voted(fx, 1, second, label, "refused");
  FX_ASSERT_RC(fx, first, redlock_extend(first, held, TTL_LONG), REDLOCK_OK);
  assert_true(fx_pttl(fx->servers[R], res) > (long long)TTL_LONG / 2);
  FX_ASSERT_RC(fx, first, redlock_unlock(first, held), REDLOCK_OK);
  assert_true(fx_wait_key_absent(fx->servers[R], res, FX_SETTLE_MS));
  if (fx_log_contains(fx, 0, "its votes do not count"))
    fail_msg("quarantined with acks that cover every replica:\n%s", fx_log_text(fx, 0));
}

static void test_credentials(void **state) {
  fx_t *fx = *state;
  scene_t *s = &g_scene;
  /* A sentinel that is not there comes first: the voter asks the next. */
  scene_start(s, fx, 2, SENTINEL_PASSWORD, "127.0.0.1:1", "sentinel_password=" SENTINEL_PASSWORD,
              TTL_SHORT);
  redlock_t *c = scene_client(s, 0, NULL);
  scene_warm(s, c);
  char label[128], buf[64];
  scene_label(s, "127.0.0.1:1", label, sizeof label);
  FX_NAME(res, "credentials");
  redlock_lock_t *lock = NULL;
  /* (C holds it: the sentinel voter's vote is needed) */
  assert_int_equal(
      rh_server_command(fx->servers[C], buf, sizeof buf, "SET %s foreign PX 60000", res), 0);
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, 1000, &lock), REDLOCK_OK);
  assert_voted(fx, 0, c, label, "OK");
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_false(fx_log_contains(fx, 0, SENTINEL_PASSWORD));

  /* A wrong password: the voter is down, and says why. */
  char uri[512];
  snprintf(uri, sizeof uri, "%.*s?sentinel_password=wrong", (int)(strchr(s->uri, '?') - s->uri),
           s->uri);
  redlock_t *bad = scene_client(s, 1, uri);
  FX_ASSERT_RC(fx, bad, redlock_trylock(bad, res, 1000, &lock), REDLOCK_ELOCKED);
  assert_voted(fx, 1, bad, label, "down (no sentinel answered: 127.0.0.1:1: ");
  assert_true(fx_wait_log(fx, 1, "AUTH refused", 5000));
}

static void test_unknown_master(void **state) {
  fx_t *fx = *state;
  scene_t *s = &g_scene;
  scene_start(s, fx, 1, NULL, NULL, NULL, TTL_SHORT);
  char uri[256], label[128];
  snprintf(uri, sizeof uri, "redis-sentinel://127.0.0.1:%d/nosuch", sh_port(s->sentinels[0]));
  snprintf(label, sizeof label, "nosuch@127.0.0.1:%d", sh_port(s->sentinels[0]));
  const char *uris[2] = {uri, rh_server_uri(fx->servers[B])};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 2, REDLOCK_LOG_DEBUG));
  FX_NAME(res, "unknown");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, 1000, &lock), REDLOCK_ENOQUORUM);
  char want[256];
  snprintf(want, sizeof want, "%s=down (sentinels know no master named 'nosuch')", label);
  char votes[1024];
  redlock_last_votes(c, votes, sizeof votes);
  if (strstr(votes, want) == NULL)
    fail_msg("want \"%s\" in: %s", want, votes);
  assert_true(fx_log_contains(fx, 0, "sentinels know no master named 'nosuch'"));
}

FX_MAIN("sentinel", &fx_profile_integration, SC_TEST(test_discovery), SC_TEST(test_manual_failover),
        SC_TEST(test_master_killed), SC_TEST(test_never_two_holders),
        SC_TEST(test_acked_lock_survives), SC_TEST(test_credentials), SC_TEST(test_unknown_master))
