/* test_cluster_waits.c: woken waits on a cluster voter (redis-cluster://),
 * with a real three-primary cluster (tests/support/cluster_harness.h; the
 * server program is REDLOCK_TEST_SERVER's: Redis >= 7.0 or Valkey 8).
 * docs/deployments.md, "Cluster voters": the release script SPUBLISHes on
 * the key's release channel, a shard channel in the key's slot, heard only
 * at the primary that holds the slot; the waiter SSUBSCRIBEs there.
 *
 * Asserts, with the waiter's fallback timer far longer than the test's
 * bounds (so only an announced release can end its wait in time):
 *  - a waiter for a lock whose key lives on a primary that is not the
 *    first seed has a shard subscription at that primary (PUBSUB
 *    SHARDNUMSUB), is granted the lock when the holder unlocks, and
 *    redlock_wait_wakeups_total says a release woke it;
 *  - with the first seed stopped (SIGSTOP), the same holds;
 *  - the key's slot moved to another primary while the waiter waits (the
 *    server ends the shard subscription): the subscription follows the
 *    slot, and the release, made at the new primary, still wakes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "fixture.h"

#define TTL_MS 30000u
#define WAIT_MS 60000u
#define FALLBACK_MS 50000u /* the waiter's retry delay: beyond every bound below */

#define CW_TEST(f, n) cmocka_unit_test_setup_teardown(f, fx_setup_##n, cfx_teardown)

/* A resource whose key's slot is owned by a node other than `not_at`;
 * its key and release channel in key / channel. */
static void resource_away_from(ch_cluster_t *c, unsigned not_at, const char *form, char *res,
                               size_t res_size, char *key, size_t key_size, char *channel,
                               size_t ch_size) {
  for (int i = 0; i < 64; i++) {
    char buf[32];
    snprintf(res, res_size, form, i);
    cfx_key_of(res, key, key_size);
    assert_int_equal(rh_server_command(ch_node(c, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key),
                     0);
    int owner = ch_owner(c, 0, atoi(buf));
    assert_true(owner >= 0);
    if ((unsigned)owner != not_at) {
      fx_channel_of(channel, ch_size, key);
      return;
    }
  }
  fail_msg("no resource away from node %u", not_at);
}

static long long wakeups(redlock_t *client) {
  static char text[65536];
  assert_true(redlock_stats(client, REDLOCK_STATS_PROMETHEUS, text, sizeof text) > 0);
  const char *at = strstr(text, "\nredlock_wait_wakeups_total ");
  assert_non_null(at);
  return atoll(at + strlen("\nredlock_wait_wakeups_total "));
}

typedef struct {
  fx_event_t done;
  int status;
  redlock_lock_t *lock;
} waited_t;

static void on_granted(int status, redlock_lock_t *lock, void *arg) {
  waited_t *w = arg;
  w->status = status;
  w->lock = lock;
  fx_event_post(&w->done);
}

/* Node `at` of the cluster has a shard subscriber to channel. */
typedef struct {
  ch_cluster_t *c;
  unsigned at;
  const char *channel;
} subscribed_t;

static int shard_subscribed(void *arg) {
  subscribed_t *s = arg;
  char buf[512];
  if (rh_server_command(ch_node(s->c, s->at), buf, sizeof buf, "PUBSUB SHARDNUMSUB %s",
                        s->channel) != 0)
    return 0;
  const char *nl = strchr(buf, '\n'); /* "channel\nN" */
  return nl != NULL && strtol(nl + 1, NULL, 10) > 0;
}

/* Client 1 waits for a lock client 0 holds; client 0 unlocks; the waiter
 * must get it through the announcement (its fallback timer is 50 s away).
 * move: the key's slot moves to another primary before the unlock. */
static void wait_woken(fx_t *fx, ch_cluster_t *c, const char *uri, int stopped, int move,
                       const char *form) {
  char res[32], key[128], channel[192], buf[64];
  resource_away_from(c, 0, form, res, sizeof res, key, sizeof key, channel, sizeof channel);
  assert_int_equal(rh_server_command(ch_node(c, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key), 0);
  int slot = atoi(buf);
  int owner = ch_owner(c, 0, slot);
  assert_true(owner > 0);
  if (stopped >= 0) {
    /* The others keep serving their slots while it is stopped. */
    for (unsigned i = 0; i < ch_count(c); i++)
      if ((int)i != stopped)
        assert_int_equal(rh_server_command(ch_node(c, i), buf, sizeof buf,
                                           "CONFIG SET cluster-require-full-coverage no"),
                         0);
    assert_int_equal(rh_server_pause(ch_node(c, (unsigned)stopped)), 0);
  }
  const char *uris[1] = {uri};
  redlock_t *a = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN));
  redlock_options_t *ob = fx_options_uris(fx, 1, uris, 1, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_retry(ob, -1, FALLBACK_MS, 0), 0);
  redlock_t *b = fx_open(fx, 1, ob);
  redlock_lock_t *held = NULL;
  assert_int_equal(redlock_lock(a, res, TTL_MS, &held), REDLOCK_OK);
  waited_t w = {.status = -1};
  fx_event_init(&w.done);
  long long before = wakeups(b);
  assert_int_equal(redlock_lock_async(b, res, TTL_MS, WAIT_MS, on_granted, &w), REDLOCK_OK);
  /* The waiter's subscription is made once its first attempt lost, at
   * the primary that holds the key's slot. */
  subscribed_t sub = {c, (unsigned)owner, channel};
  if (!rh_wait_until(shard_subscribed, &sub, 20000))
    fail_msg("no shard subscription to %s at node %d; log:\n%s", channel, owner,
             fx_log_text(fx, 1));
  if (move) {
    /* To the other primary that is not the first seed (node 0 is never
     * the owner here). */
    unsigned to = owner == 1 ? 2u : 1u;
    assert_int_equal(ch_migrate_slot(c, slot, (unsigned)owner, to), 0);
    sub.at = to;
    if (!rh_wait_until(shard_subscribed, &sub, 30000))
      fail_msg("the shard subscription to %s did not follow slot %d to node %u; log:\n%s", channel,
               slot, to, fx_log_text(fx, 1));
  }
  assert_int_equal(redlock_unlock(a, held), REDLOCK_OK);
  if (!fx_event_wait(&w.done, 20000))
    fail_msg("the waiter was not woken by the release; log:\n%s", fx_log_text(fx, 1));
  assert_int_equal(w.status, REDLOCK_OK);
  if (wakeups(b) <= before)
    fail_msg("granted, but no wake-up counted; log:\n%s", fx_log_text(fx, 1));
  assert_int_equal(redlock_unlock(b, w.lock), REDLOCK_OK);
  fx_event_destroy(&w.done);
}

static void test_cluster_wait_woken(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  wait_woken(fx, c, ch_uri(c, 1), -1, 0, "cw-res-%d");
}

static void test_cluster_wait_woken_slot_moved(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  /* A resource with a hash tag of its own: the release script names its
   * channel after the key as it is (flag "4", scripts.h). */
  wait_woken(fx, c, ch_uri(c, 1), -1, 1, "cw-{tag%d}-res");
}

static void test_cluster_wait_woken_seed_stopped(void **state) {
  fx_t *fx = *state;
  ch_cluster_t *c = cfx_start(3, 0);
  /* Every node a seed, the first one stopped: discovery and the
   * subscription go on to the others. */
  char uri[512];
  snprintf(uri, sizeof uri, "%s", ch_uri(c, 0));
  wait_woken(fx, c, uri, 0, 0, "cw-res-%d");
}

int main(void) {
  fx_use_profile(&fx_profile_integration);
  const struct CMUnitTest tests[] = {
      CW_TEST(test_cluster_wait_woken, 0),
      CW_TEST(test_cluster_wait_woken_seed_stopped, 0),
      CW_TEST(test_cluster_wait_woken_slot_moved, 0),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
