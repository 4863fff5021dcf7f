/* test_discovered.c: redlock_options_allow_discovered() with real servers:
 * a Sentinel voter (one sentinel watching master M, plain master B beside
 * it) and a Cluster voter (three primaries, one seed), everything on
 * 127.0.0.1.  docs/deployments.md, "Trust model for discovered addresses".
 *
 * Asserts:
 *  - sentinel, only "10.*" allowed: the sentinel names M at 127.0.0.1; the
 *    voter never goes there: its vote is down with "discovered address
 *    127.0.0.1:PORT not allowed", the log says so at WARN, a lock fails
 *    with REDLOCK_ENOQUORUM and M holds no key;
 *  - sentinel, "10.*" and "127.0.0.*" allowed: the lock is granted through
 *    the voter and M holds it;
 *  - cluster, only "10.*" allowed: a resource whose slot the seed itself
 *    serves (its address is the URI's, not discovered) is granted; one on
 *    another primary, which only the slot map names, is not: the vote says
 *    "discovered address 127.0.0.1:PORT not allowed" and that primary
 *    holds no key;
 *  - cluster, "127.0.0.*" allowed: that resource is granted there;
 *  - cluster, only "10.*" allowed: a slot of the seed migrated to another
 *    primary is not followed there (MOVED names a refused address): the
 *    vote says so and the new owner holds no key. */
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

#include "cluster_fixture.h"
#include "fixture.h"
#include "sentinel_harness.h"

#define NAME "mymaster"
#define TTL 5000u
#define DEADLINE_MS 20000
enum { M = 0, B = 1 };

/* ---- sentinel ------------------------------------------------------------------------- */

static sh_sentinel_t *g_sentinel;
static char g_dir[PATH_MAX];

static int sn_teardown(void **state) {
  fx_t *fx = *state;
  for (int i = 0; fx != NULL && i < FX_MAX_CLIENTS; i++)
    fx_close(fx, i); /* the clients first: they must not see the sentinel go */
  if (g_sentinel != NULL)
    sh_stop(g_sentinel);
  g_sentinel = NULL;
  if (g_dir[0] != '\0')
    rh_remove_dir(g_dir);
  g_dir[0] = '\0';
  return fx_teardown(state);
}

/* The sentinel names a master. */
static int sentinel_knows(void *arg) {
  (void)arg;
  char addr[128];
  return sh_command(g_sentinel, addr, sizeof addr, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", NAME) ==
             0 &&
         strncmp(addr, "127.0.0.1\n", 10) == 0;
}

/* One sentinel watching M; a client over it and B with these patterns
 * (NULL-terminated), logging into slot 0. */
static redlock_t *sentinel_client(fx_t *fx, const char *const *patterns, char *label,
                                  size_t label_size) {
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/redlock-discovered-XXXXXX",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
  assert_non_null(mkdtemp(g_dir));
  sh_options_t o = {.dir = g_dir,
                    .master_name = NAME,
                    .master_port = rh_server_port(fx->servers[M]),
                    .quorum = 1,
                    .down_after_ms = 1000,
                    .failover_timeout_ms = 5000};
  assert_int_equal(sh_start(&g_sentinel, &o), 0);
  assert_true(rh_wait_until(sentinel_knows, NULL, DEADLINE_MS));
  char uri[128];
  snprintf(uri, sizeof uri, "redis-sentinel://127.0.0.1:%d/" NAME, sh_port(g_sentinel));
  snprintf(label, label_size, NAME "@127.0.0.1:%d", sh_port(g_sentinel));
  const char *uris[2] = {uri, rh_server_uri(fx->servers[B])};
  redlock_options_t *opts = fx_options_uris(fx, 0, uris, 2, REDLOCK_LOG_DEBUG);
  for (; *patterns != NULL; patterns++)
    assert_int_equal(redlock_options_allow_discovered(opts, *patterns), REDLOCK_OK);
  return fx_open(fx, 0, opts);
}

static void test_sentinel_refused(void **state) {
  fx_t *fx = *state;
  const char *const patterns[] = {"10.*", NULL};
  char label[128];
  redlock_t *c = sentinel_client(fx, patterns, label, sizeof label);
  char want[256];
  snprintf(want, sizeof want, "discovered address 127.0.0.1:%d not allowed (named by sentinel",
           rh_server_port(fx->servers[M]));
  if (!fx_wait_log(fx, 0, want, DEADLINE_MS))
    fail_msg("the log lacks \"%s\":\n%s", want, fx_log_text(fx, 0));
  assert_true(fx_log_contains(fx, 0, "[WARN] master"));

  FX_NAME(res, "sentinel-refused");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_ENOQUORUM);
  char votes[1024], vote[512];
  redlock_last_votes(c, votes, sizeof votes);
  snprintf(vote, sizeof vote, "%s=down (%s 127.0.0.1:%d)", label, want, sh_port(g_sentinel));
  if (strstr(votes, vote) == NULL)
    fail_msg("want \"%s\" in: %s", vote, votes);
  assert_true(fx_key_absent(fx->servers[M], res));
}

static void test_sentinel_allowed(void **state) {
  fx_t *fx = *state;
  const char *const patterns[] = {"10.*", "127.0.0.*", NULL};
  char label[128];
  redlock_t *c = sentinel_client(fx, patterns, label, sizeof label);
  FX_NAME(res, "sentinel-allowed");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, fx_trylock_until(c, res, TTL, DEADLINE_MS, &lock), REDLOCK_OK);
  assert_true(fx_key_is(fx->servers[M], res, redlock_lock_value(lock)));
  char votes[1024], vote[256];
  redlock_last_votes(c, votes, sizeof votes);
  snprintf(vote, sizeof vote, "%s=OK", label);
  if (strstr(votes, vote) == NULL)
    fail_msg("want \"%s\" in: %s", vote, votes);
  assert_false(fx_log_contains(fx, 0, "not allowed"));
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
}

/* ---- cluster -------------------------------------------------------------------------- */

/* A resource ("disc-N") whose key's slot primary `owner` serves (want_seed:
 * node 0, the seed; else another). */
static void resource_on(ch_cluster_t *c, int want_seed, char *res, size_t size, int *owner) {
  for (int i = 0; i < 1000; i++) {
    char key[128], buf[64];
    snprintf(res, size, "disc-%d-%d", (int)getpid(), i);
    cfx_key_of(res, key, sizeof key);
    assert_int_equal(rh_server_command(ch_node(c, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key),
                     0);
    *owner = ch_owner(c, 0, atoi(buf));
    if (*owner >= 0 && (*owner == 0) == want_seed)
      return;
  }
  fail_msg("no resource found");
}

typedef struct {
  redlock_t *c;
  const char *res;
  const char *want; /* in the votes */
  char votes[1024];
} refused_t;

/* A trylock of res is refused with `want` in the votes (the first rounds
 * may come before the slot map). */
static int refused_with(void *arg) {
  refused_t *r = arg;
  redlock_lock_t *lock = NULL;
  int rc = redlock_trylock(r->c, r->res, TTL, &lock);
  if (rc == REDLOCK_OK) {
    redlock_unlock(r->c, lock);
    fail_msg("%s was granted", r->res);
  }
  redlock_last_votes(r->c, r->votes, sizeof r->votes);
  return rc == REDLOCK_ENOQUORUM && strstr(r->votes, r->want) != NULL;
}

static redlock_t *cluster_client(fx_t *fx, ch_cluster_t *c, const char *pattern) {
  const char *uris[1] = {ch_uri(c, 1)};
  redlock_options_t *opts = fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_DEBUG);
  assert_int_equal(redlock_options_allow_discovered(opts, pattern), REDLOCK_OK);
  return fx_open(fx, 0, opts);
}

static void test_cluster_refused(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  redlock_t *cl = cluster_client(fx, c, "10.*");
  char home[64], other[64], key[128];
  int home_owner, other_owner;
  resource_on(c, 1, home, sizeof home, &home_owner);
  resource_on(c, 0, other, sizeof other, &other_owner);

  /* The seed is the URI's: its slots work. */
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, cl, fx_trylock_until(cl, home, TTL, DEADLINE_MS, &lock), REDLOCK_OK);
  FX_ASSERT_RC(fx, cl, redlock_unlock(cl, lock), REDLOCK_OK);

  /* Another primary is only named by the map. */
  char want[128];
  snprintf(want, sizeof want, "discovered address 127.0.0.1:%d not allowed",
           ch_port(c, (unsigned)other_owner));
  refused_t r = {.c = cl, .res = other, .want = want};
  if (!rh_wait_until(refused_with, &r, DEADLINE_MS))
    fail_msg("want \"%s\" in: %s\n%s", want, r.votes, fx_log_text(fx, 0));
  assert_true(fx_log_contains(fx, 0, want));
  cfx_key_of(other, key, sizeof key);
  assert_true(fx_key_absent(ch_node(c, (unsigned)other_owner), key));
}

static void test_cluster_allowed(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  redlock_t *cl = cluster_client(fx, c, "127.0.0.*");
  char other[64], key[128];
  int owner;
  resource_on(c, 0, other, sizeof other, &owner);
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, cl, fx_trylock_until(cl, other, TTL, DEADLINE_MS, &lock), REDLOCK_OK);
  cfx_key_of(other, key, sizeof key);
  assert_true(fx_key_is(ch_node(c, (unsigned)owner), key, redlock_lock_value(lock)));
  FX_ASSERT_RC(fx, cl, redlock_unlock(cl, lock), REDLOCK_OK);
  assert_false(fx_log_contains(fx, 0, "not allowed"));
}

/* A slot the seed served migrates to another primary: its MOVED names an
 * address only "10.*" would allow, which is not followed. */
static void test_cluster_moved_refused(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  redlock_t *cl = cluster_client(fx, c, "10.*");
  char home[64], key[128], buf[64];
  int owner;
  resource_on(c, 1, home, sizeof home, &owner);
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, cl, fx_trylock_until(cl, home, TTL, DEADLINE_MS, &lock), REDLOCK_OK);
  FX_ASSERT_RC(fx, cl, redlock_unlock(cl, lock), REDLOCK_OK);
  cfx_key_of(home, key, sizeof key);
  assert_true(fx_wait_key_absent(ch_node(c, 0), key, FX_SETTLE_MS));

  assert_int_equal(rh_server_command(ch_node(c, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key), 0);
  assert_int_equal(ch_migrate_slot(c, atoi(buf), 0, 1), 0);
  assert_true(ch_wait_ok(c, 10000));
  char want[128];
  snprintf(want, sizeof want, "discovered address 127.0.0.1:%d not allowed", ch_port(c, 1));
  refused_t r = {.c = cl, .res = home, .want = want};
  if (!rh_wait_until(refused_with, &r, DEADLINE_MS))
    fail_msg("want \"%s\" in: %s\n%s", want, r.votes, fx_log_text(fx, 0));
  assert_true(fx_key_absent(ch_node(c, 1), key));
}

#define SN_TEST(f) cmocka_unit_test_setup_teardown(f, fx_setup_2, sn_teardown)
#define CL_TEST(f) cmocka_unit_test_setup_teardown(f, fx_setup_0, cfx_teardown)

FX_MAIN("discovered", &fx_profile_integration, SN_TEST(test_sentinel_refused),
        SN_TEST(test_sentinel_allowed), CL_TEST(test_cluster_refused),
        CL_TEST(test_cluster_allowed), CL_TEST(test_cluster_moved_refused))
