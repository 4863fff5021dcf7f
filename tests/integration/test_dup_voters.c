/* test_dup_voters.c: one physical server behind two voters of any kinds
 * casts one vote (docs/safety.md §9, docs/api.md "One server listed
 * twice"), with real servers: a Sentinel (tests/support/sentinel_harness.h)
 * and a three-primary Redis Cluster (tests/support/cluster_harness.h), plus
 * the fixture's plain masters.  Each client lists three voters, two of
 * which reach one server; the third (a plain master, C) is stopped
 * (SIGSTOP) once a lock is held, so that one physical server is left: no
 * extension and no new lock may be granted on its vote alone.
 *
 * Asserts, each time with the extension and a new lock refused
 * (REDLOCK_ENOQUORUM) and the second voter's vote
 * `duplicate (same server as ...)` naming the first:
 *  - a Sentinel voter and a plain URI of the master it names;
 *  - a Cluster voter and a plain URI of the key's primary (the plain voter
 *    is the duplicate: it is one of the servers the cluster voter uses);
 *  - a plain URI of a primary listed before the Cluster voter: the cluster
 *    voter is a duplicate for keys routed to that primary only (a key on
 *    another primary gets its OK);
 *  - two seeds of one cluster as two Cluster voters;
 *  - a duplicate that appears later: a plain URI of primary P1 before the
 *    Cluster voter, the key's slot on P2 (the cluster votes OK), then the
 *    slot migrated to P1 (a map change): the cluster voter's requests for
 *    the key now reach P1 and it is a duplicate for them. */
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

#define TTL 10000u
#define NAME "mymaster"

/* ---- what every case checks ---------------------------------------------------------- */

typedef struct {
  redlock_t *c;
  const char *res;
  const char *want; /* in the votes of the granted lock, or NULL */
} probe_t;

/* One trylock + unlock granted with no voter down (every connection the
 * voters need is up), and `want` in its votes when set. */
static int granted_all_answering(void *arg) {
  probe_t *p = arg;
  redlock_lock_t *lock = NULL;
  if (redlock_trylock(p->c, p->res, TTL, &lock) != REDLOCK_OK)
    return 0;
  char votes[1024];
  redlock_last_votes(p->c, votes, sizeof votes);
  redlock_unlock(p->c, lock);
  return strstr(votes, "=down") == NULL && (p->want == NULL || strstr(votes, p->want) != NULL);
}

static void assert_votes_contain(fx_t *fx, redlock_t *c, const char *want) {
  char votes[1024];
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  if (strstr(votes, want) == NULL)
    fail_msg("votes \"%s\" lack \"%s\"\n%s", votes, want, fx_log_text(fx, 0));
}

/* The scene every case ends with: a lock of res granted with every voter
 * answering and the duplicate's vote saying whose it is (`dup`:
 * "LABEL=duplicate (same server as FIRST"), waited for, as a round the other
 * voters decide does not wait for that vote; both voters of the one server
 * connected to it (`port`: the log says so twice, as a cluster voter
 * connects a primary at its first request; 0: both connect at open); then
 * res locked and the third voter (fixture server `third`) stopped: the two
 * voters left are one server, so neither the extension nor a new lock (of
 * res2, whose key goes where res's does) is granted, and the duplicate's
 * vote says so each time. */
static void one_server_left(fx_t *fx, redlock_t *c, const char *res, const char *res2, int port,
                            unsigned third, const char *dup) {
  probe_t p = {c, res, dup};
  if (!rh_wait_until(granted_all_answering, &p, 15000))
    fail_msg("no lock with every voter answering and \"%s\" in its votes:\n%s", dup,
             fx_log_text(fx, 0));
  char connected[64];
  snprintf(connected, sizeof connected, "master 127.0.0.1:%d: connected", port);
  if (port > 0 && !fx_wait_log_count(fx, 0, connected, 2, 10000))
    fail_msg("both voters did not connect to 127.0.0.1:%d:\n%s", port, fx_log_text(fx, 0));
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);

  /* The outcomes first, the reports after. */
  assert_int_equal(fx_pause(fx, 1u << third, 1), 0);
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, TTL), REDLOCK_ENOQUORUM);
  assert_votes_contain(fx, c, dup);
  redlock_lock_t *other = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res2, TTL, &other), REDLOCK_ENOQUORUM);
  assert_votes_contain(fx, c, dup);
  assert_int_equal(fx_pause(fx, 1u << third, 0), 0);
  redlock_unlock(c, lock);
  if (!fx_log_contains(fx, 0, "are one server"))
    fail_msg("no WARN naming the duplicate:\n%s", fx_log_text(fx, 0));
}

/* ---- a Sentinel voter and its master listed plainly ------------------------------------ */

static sh_sentinel_t *g_sentinel;
static char g_dir[PATH_MAX];

static int sentinel_teardown(void **state) {
  fx_t *fx = *state;
  for (int i = 0; fx != NULL && i < FX_MAX_CLIENTS; i++)
    fx_close(fx, i);
  sh_stop(g_sentinel);
  g_sentinel = NULL;
  if (g_dir[0] != '\0')
    rh_remove_dir(g_dir);
  g_dir[0] = '\0';
  return fx_teardown(state);
}

/* The sentinel names M as the master. */
static int sentinel_knows(void *arg) {
  char addr[128];
  (void)arg;
  return sh_command(g_sentinel, addr, sizeof addr, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", NAME) ==
             0 &&
         strchr(addr, '\n') != NULL;
}

static void test_sentinel_and_its_master(void **state) {
  fx_t *fx = *state; /* M = 0, C = 1 */
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/redlock-dupv-XXXXXX",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
  assert_non_null(mkdtemp(g_dir));
  sh_options_t o = {.dir = g_dir,
                    .master_name = NAME,
                    .master_port = rh_server_port(fx->servers[0]),
                    .quorum = 1,
                    .down_after_ms = 5000,
                    .failover_timeout_ms = 10000};
  assert_int_equal(sh_start(&g_sentinel, &o), 0);
  assert_true(rh_wait_until(sentinel_knows, NULL, 10000));
  char uri[128], label[64], dup[256];
  snprintf(uri, sizeof uri, "redis-sentinel://127.0.0.1:%d/" NAME, sh_port(g_sentinel));
  const char *uris[3] = {uri, rh_server_uri(fx->servers[0]), rh_server_uri(fx->servers[1])};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO));
  fx_label(fx->servers[0], label, sizeof label);
  snprintf(dup, sizeof dup, "%s=duplicate (same server as " NAME "@127.0.0.1:%d", label,
           sh_port(g_sentinel));
  one_server_left(fx, c, "dupv-sentinel", "dupv-sentinel-new", 0, 1, dup);
  fx_close(fx, 0);
}

/* ---- cluster voters -------------------------------------------------------------------- */

/* The hash slot of resource res's key, and the primary (node index) that
 * owns it. */
static int slot_of(ch_cluster_t *cl, const char *res) {
  char key[160], buf[64];
  cfx_key_of(res, key, sizeof key);
  assert_int_equal(rh_server_command(ch_node(cl, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key),
                   0);
  return atoi(buf);
}

/* A resource "PREFIX-N" whose key's slot primary `p` owns. */
static void res_on(ch_cluster_t *cl, unsigned p, const char *prefix, char *res, size_t size) {
  for (unsigned n = 0; n < 1000; n++) {
    snprintf(res, size, "%s-%u", prefix, n);
    if (ch_owner(cl, 0, slot_of(cl, res)) == (int)p)
      return;
  }
  fail_msg("no resource of primary %u", p);
}

/* Voter 0 the cluster, voter 1 a plain URI of the key's primary: the plain
 * one is a duplicate (the cluster uses that server). */
static void test_cluster_then_primary(void **state) {
  fx_t *fx = *state; /* C = 0 */
  ch_cluster_t *cl = cfx_start(3, 0);
  char res[64], res2[64], dup[256];
  res_on(cl, 1, "dupv-cp", res, sizeof res);
  res_on(cl, 1, "dupv-cp-new", res2, sizeof res2);
  const char *uris[3] = {ch_uri(cl, 1), rh_server_uri(ch_node(cl, 1)),
                         rh_server_uri(fx->servers[0])};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO));
  snprintf(dup, sizeof dup,
           "127.0.0.1:%d=duplicate (same server as primary 127.0.0.1:%d of cluster@127.0.0.1:%d",
           ch_port(cl, 1), ch_port(cl, 1), ch_port(cl, 0));
  one_server_left(fx, c, res, res2, ch_port(cl, 1), 0, dup);
  fx_close(fx, 0);
}

/* Voter 0 a plain URI of primary 1, voter 1 the cluster: the cluster is a
 * duplicate for keys routed to primary 1 only. */
static void test_primary_then_cluster(void **state) {
  fx_t *fx = *state; /* C = 0 */
  ch_cluster_t *cl = cfx_start(3, 0);
  char res[64], res2[64], elsewhere[64], dup[256], ok[128];
  res_on(cl, 1, "dupv-pc", res, sizeof res);
  res_on(cl, 1, "dupv-pc-new", res2, sizeof res2);
  res_on(cl, 2, "dupv-pc-other", elsewhere, sizeof elsewhere);
  const char *uris[3] = {rh_server_uri(ch_node(cl, 1)), ch_uri(cl, 1),
                         rh_server_uri(fx->servers[0])};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO));
  /* A key on primary 2: the cluster's vote counts (the plain master, which
   * serves other slots, answers MOVED: an error). */
  snprintf(ok, sizeof ok, "cluster@127.0.0.1:%d=OK (primary 127.0.0.1:%d)", ch_port(cl, 0),
           ch_port(cl, 2));
  probe_t p = {c, elsewhere, ok};
  if (!rh_wait_until(granted_all_answering, &p, 15000))
    fail_msg("no lock of a primary-2 key with the cluster's OK:\n%s", fx_log_text(fx, 0));
  snprintf(dup, sizeof dup,
           "cluster@127.0.0.1:%d=duplicate (same server as 127.0.0.1:%d, via primary "
           "127.0.0.1:%d)",
           ch_port(cl, 0), ch_port(cl, 1), ch_port(cl, 1));
  one_server_left(fx, c, res, res2, ch_port(cl, 1), 0, dup);
  fx_close(fx, 0);
}

/* Two seeds of one cluster listed as two Cluster voters. */
static void test_two_seeds_two_voters(void **state) {
  fx_t *fx = *state; /* C = 0 */
  ch_cluster_t *cl = cfx_start(3, 0);
  char res[64], res2[64], seed0[64], seed1[64], dup[256];
  res_on(cl, 2, "dupv-ss", res, sizeof res);
  res_on(cl, 2, "dupv-ss-new", res2, sizeof res2);
  snprintf(seed0, sizeof seed0, "redis-cluster://127.0.0.1:%d", ch_port(cl, 0));
  snprintf(seed1, sizeof seed1, "redis-cluster://127.0.0.1:%d", ch_port(cl, 1));
  const char *uris[3] = {seed0, seed1, rh_server_uri(fx->servers[0])};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO));
  snprintf(dup, sizeof dup,
           "cluster@127.0.0.1:%d=duplicate (same server as primary 127.0.0.1:%d of "
           "cluster@127.0.0.1:%d, via primary 127.0.0.1:%d)",
           ch_port(cl, 1), ch_port(cl, 2), ch_port(cl, 0), ch_port(cl, 2));
  one_server_left(fx, c, res, res2, ch_port(cl, 2), 0, dup);
  fx_close(fx, 0);
}

/* The duplicate comes with a map change: the key's slot moves from primary
 * 2 to primary 1, which voter 0 (a plain URI) is. */
static void test_migration_makes_duplicate(void **state) {
  fx_t *fx = *state; /* C = 0 */
  ch_cluster_t *cl = cfx_start(3, 0);
  char res[64], res2[64], dup[256], ok[128];
  res_on(cl, 2, "dupv-mig", res, sizeof res);
  const char *uris[3] = {rh_server_uri(ch_node(cl, 1)), ch_uri(cl, 1),
                         rh_server_uri(fx->servers[0])};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_INFO));
  /* Before: the key is primary 2's, and the cluster votes for it. */
  snprintf(ok, sizeof ok, "cluster@127.0.0.1:%d=OK (primary 127.0.0.1:%d)", ch_port(cl, 0),
           ch_port(cl, 2));
  probe_t p = {c, res, ok};
  if (!rh_wait_until(granted_all_answering, &p, 15000))
    fail_msg("no lock with the cluster's OK from primary 2:\n%s", fx_log_text(fx, 0));
  assert_int_equal(ch_migrate_slot(cl, slot_of(cl, res), 2, 1), 0);
  res_on(cl, 1, "dupv-mig-new", res2, sizeof res2);
  snprintf(dup, sizeof dup,
           "cluster@127.0.0.1:%d=duplicate (same server as 127.0.0.1:%d, via primary "
           "127.0.0.1:%d)",
           ch_port(cl, 0), ch_port(cl, 1), ch_port(cl, 1));
  one_server_left(fx, c, res, res2, ch_port(cl, 1), 0, dup);
  fx_close(fx, 0);
}

int main(void) {
  fx_use_profile(&fx_profile_integration);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_sentinel_and_its_master, fx_setup_2, sentinel_teardown),
      cmocka_unit_test_setup_teardown(test_cluster_then_primary, fx_setup_1, cfx_teardown),
      cmocka_unit_test_setup_teardown(test_primary_then_cluster, fx_setup_1, cfx_teardown),
      cmocka_unit_test_setup_teardown(test_two_seeds_two_voters, fx_setup_1, cfx_teardown),
      cmocka_unit_test_setup_teardown(test_migration_makes_duplicate, fx_setup_1, cfx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
