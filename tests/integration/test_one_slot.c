/* test_one_slot.c: every command the library sends for one resource names
 * keys of one hash slot, and every script declares every key it touches
 * (src/proto/keyname.h).  The voter is a real redis-server started with
 * --cluster-enabled yes, a cluster of one node reached as a plain redis://
 * master.  Before each resource's calls the node is made to own that
 * resource's slot only (the slot of its lock key, key prefix + resource),
 * with full coverage not required: then it refuses a command whose keys
 * span slots (CROSSSLOT), a key of any other slot (CLUSTERDOWN: not
 * served), and a script that touches an undeclared key of any other slot
 * ("non local key").  (A node that owns every slot would let that last one
 * through: it checks undeclared keys only for being served here.)  With one
 * voter any such refusal fails the call.
 * Every primitive runs so, fenced and not, over plain keys, tagged keys, a
 * key with a lone '{' and a key prefix: lock, trylock, extend, unlock,
 * lock_many of one resource (and of several that share a tag), semaphores,
 * read-write locks (a waiting writer's intent included), an election, and
 * woken waits, whose subscriptions are found on the channels the
 * documented rule names.  The one kind of key whose names cannot share its
 * slot (no hash tag, a '}') is shown to fail exactly where a derived key
 * goes with it (fenced), which is what makes the check real. */
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
#define PREFIX "app:"

/* Keys of every shape whose names can share the lock key's slot. */
static const char *const resources[] = {
    "orders:42",    /* plain: its names get the tag {app:orders:42} */
    "{user7}:cart", /* with the prefix "app:" the key is app:{user7}:cart: its own tag */
    "a{b",          /* a '{' and no '}' */
    "x{}{y}",       /* an empty tag first: no tag, and a '}' ... */
};
/* ... "x{}{y}" is the odd one: without a tag, with a '}', it cannot share
 * its slot; it is used only where no derived key goes with it. */
#define PLACEABLE 3

static int cluster_ok(void *arg) {
  char buf[2048];
  return rh_server_command(arg, buf, sizeof buf, "CLUSTER INFO") == 0 &&
         strstr(buf, "cluster_state:ok") != NULL;
}

/* The slot the node owns: -1 all of them (the setup), else that one. */
static int owned = -1;

/* A single-node cluster that owns every slot, as the fixture's master; it
 * keeps serving when it owns fewer. */
static int setup_cluster(void **state) {
  static const char *const args[] = {"--cluster-enabled", "yes", "--cluster-require-full-coverage",
                                     "no", NULL};
  owned = -1;
  rh_options_t opts = {.extra_args = args};
  fx_t *fx = fx_new(1, &opts);
  if (fx == NULL)
    return -1;
  *state = fx;
  char buf[512];
  if (rh_server_command_slow(fx->servers[0], buf, sizeof buf, "CLUSTER ADDSLOTSRANGE 0 16383") !=
          0 ||
      strcmp(buf, "OK") != 0) {
    fprintf(stderr, "CLUSTER ADDSLOTSRANGE: %s\n", buf);
    return -1;
  }
  if (rh_wait_until(cluster_ok, fx->servers[0], 10000))
    return 0;
  fprintf(stderr, "the cluster did not come up\n");
  return -1;
}

static void command_ok(fx_t *fx, const char *what, const char *fmt, int a, int b) {
  char buf[512];
  /* A slot change saves nodes.conf with an fsync before it answers. */
  assert_int_equal(rh_server_command_slow(fx->servers[0], buf, sizeof buf, fmt, a, b), 0);
  if (strcmp(buf, "OK") != 0)
    fail_msg("%s: %s", what, buf);
}

/* Makes the node own only the slot of `key` (never none in between: a
 * cluster without slots would take a while to come back). */
static void own_only_slot_of(fx_t *fx, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(fx->servers[0], buf, sizeof buf, "CLUSTER KEYSLOT %s", key),
                   0);
  int slot = atoi(buf);
  if (slot == owned)
    return;
  if (owned < 0) {
    if (slot > 0)
      command_ok(fx, "DELSLOTSRANGE", "CLUSTER DELSLOTSRANGE %d %d", 0, slot - 1);
    if (slot < 16383)
      command_ok(fx, "DELSLOTSRANGE", "CLUSTER DELSLOTSRANGE %d %d", slot + 1, 16383);
  } else {
    command_ok(fx, "ADDSLOTS", "CLUSTER ADDSLOTSRANGE %d %d", slot, slot);
    command_ok(fx, "DELSLOTS", "CLUSTER DELSLOTSRANGE %d %d", owned, owned);
  }
  owned = slot;
  assert_true(rh_wait_until(cluster_ok, fx->servers[0], 10000));
}

/* A client over the cluster node, with the key prefix, fenced or not. */
static redlock_t *open_client(fx_t *fx, int slot, int fenced) {
  redlock_options_t *opts = fx_options(fx, slot, 1, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_key_prefix(opts, PREFIX), REDLOCK_OK);
  assert_int_equal(redlock_options_set_fencing(opts, fenced), REDLOCK_OK);
  return fx_open(fx, slot, opts);
}

static void key_of(char *buf, size_t size, const char *resource) {
  snprintf(buf, size, "%s%s", PREFIX, resource);
}

/* The node refuses commands across slots, keys of other slots and a
 * script's undeclared key of another slot: the checks the rest of this
 * file relies on. */
static void test_node_refuses_cross_slot(void **state) {
  fx_t *fx = *state;
  char buf[512];
  own_only_slot_of(fx, "a");
  assert_int_equal(rh_server_command(fx->servers[0], buf, sizeof buf, "MSET a 1 {a}b 2"), 0);
  assert_string_equal(buf, "OK");
  assert_int_equal(rh_server_command(fx->servers[0], buf, sizeof buf, "MSET a 1 b 2"), 0);
  assert_non_null(strstr(buf, "CROSSSLOT"));
  assert_int_equal(rh_server_command(fx->servers[0], buf, sizeof buf, "GET b"), 0);
  assert_non_null(strstr(buf, "CLUSTERDOWN"));
  assert_int_equal(rh_server_command(fx->servers[0], buf, sizeof buf, "EVAL %s 1 a",
                                     "return redis.call('get', 'b')"),
                   0);
  /* Redis 7.0: "non local key" / "same slot"; Valkey 8: "a slot not served". */
  if (strstr(buf, "non local key") == NULL && strstr(buf, "same slot") == NULL &&
      strstr(buf, "slot not served") == NULL)
    fail_msg("EVAL of an undeclared key answered: %s", buf);
}

/* lock, trylock, extend, watch-free unlock, fenced and not; the fence
 * counter is where redlock.h says. */
static void test_locks(void **state) {
  fx_t *fx = *state;
  for (int fenced = 0; fenced <= 1; fenced++) {
    redlock_t *c = open_client(fx, fenced, fenced);
    for (size_t i = 0; i < PLACEABLE; i++) {
      char key[128], fence_key[192];
      key_of(key, sizeof key, resources[i]);
      own_only_slot_of(fx, key);
      redlock_lock_t *lock = NULL;
      FX_ASSERT_RC(fx, c, redlock_lock(c, resources[i], TTL, &lock), REDLOCK_OK);
      FX_ASSERT_RC(fx, c, redlock_extend(c, lock, TTL), REDLOCK_OK);
      if (fenced) {
        assert_true(redlock_lock_fence(lock) > 0);
        assert_int_equal(
            fx_get_u64(fx->servers[0], fx_fence_key_of(fence_key, sizeof fence_key, key)),
            redlock_lock_fence(lock));
      }
      FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
      lock = NULL;
      FX_ASSERT_RC(fx, c, redlock_trylock(c, resources[i], TTL, &lock), REDLOCK_OK);
      FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
      /* lock_many of one resource takes the script path */
      const char *one[1] = {resources[i]};
      lock = NULL;
      FX_ASSERT_RC(fx, c, redlock_lock_many(c, one, 1, TTL, &lock), REDLOCK_OK);
      FX_ASSERT_RC(fx, c, redlock_extend(c, lock, TTL), REDLOCK_OK);
      FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
      assert_true(fx_key_absent(fx->servers[0], key));
    }
    /* several resources of one tag are one slot: one script */
    const char *group[3] = {"{grp}:a", "{grp}:b", "{grp}:c"};
    own_only_slot_of(fx, "grp");
    redlock_lock_t *lock = NULL;
    FX_ASSERT_RC(fx, c, redlock_lock_many(c, group, 3, TTL, &lock), REDLOCK_OK);
    FX_ASSERT_RC(fx, c, redlock_extend(c, lock, TTL), REDLOCK_OK);
    FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
    fx_close(fx, fenced);
  }
}

/* Semaphore permits: acquire (a pass over the slots), extend, release,
 * fenced and not; the keys are where redlock.h says. */
static void test_semaphores(void **state) {
  fx_t *fx = *state;
  for (int fenced = 0; fenced <= 1; fenced++) {
    redlock_t *c = open_client(fx, fenced, fenced);
    for (size_t i = 0; i < PLACEABLE; i++) {
      char key[128], limit_key[192];
      key_of(key, sizeof key, resources[i]);
      own_only_slot_of(fx, key);
      redlock_lock_t *p[3] = {NULL, NULL, NULL};
      for (int k = 0; k < 2; k++)
        FX_ASSERT_RC(fx, c, redlock_semaphore_acquire(c, resources[i], 2, TTL, 0, &p[k]),
                     REDLOCK_OK);
      FX_ASSERT_RC(fx, c, redlock_semaphore_acquire(c, resources[i], 2, TTL, 0, &p[2]),
                   REDLOCK_ELOCKED); /* every slot tried: all refused, none failed */
      assert_true(fx_key_is(fx->servers[0],
                            fx_derived_name(limit_key, sizeof limit_key, "", key, ":sem:limit"),
                            "2"));
      for (int k = 0; k < 2; k++) {
        FX_ASSERT_RC(fx, c, redlock_extend(c, p[k], TTL), REDLOCK_OK);
        FX_ASSERT_RC(fx, c, redlock_unlock(c, p[k]), REDLOCK_OK);
      }
    }
    fx_close(fx, fenced);
  }
}

/* Read-write locks: two readers, a waiting writer (its intent set while
 * the readers hold), extensions, releases, fenced and not. */
static void test_rwlocks(void **state) {
  fx_t *fx = *state;
  for (int fenced = 0; fenced <= 1; fenced++) {
    redlock_t *c = open_client(fx, fenced, fenced);
    for (size_t i = 0; i < PLACEABLE; i++) {
      char key[128], read_key[192];
      key_of(key, sizeof key, resources[i]);
      own_only_slot_of(fx, key);
      redlock_lock_t *r[2] = {NULL, NULL};
      for (int k = 0; k < 2; k++)
        FX_ASSERT_RC(fx, c, redlock_rwlock_read(c, resources[i], TTL, 0, &r[k]), REDLOCK_OK);
      assert_int_equal(
          fx_zcard(fx->servers[0], fx_derived_name(read_key, sizeof read_key, "", key, ":rw:read")),
          2);
      fx_call_t w = {.fn = fx_call_rwlock,
                     .client = c,
                     .name = resources[i],
                     .ttl_ms = TTL,
                     .wait_ms = 10000,
                     .write = 1};
      fx_call_start(&w);
      char intent[192];
      fx_derived_name(intent, sizeof intent, "", key, ":rw:intent");
      assert_true(fx_wait_exists_on(fx, 1, intent, 1, FX_SETTLE_MS)); /* the writer waits */
      for (int k = 0; k < 2; k++) {
        FX_ASSERT_RC(fx, c, redlock_extend(c, r[k], TTL), REDLOCK_OK);
        FX_ASSERT_RC(fx, c, redlock_unlock(c, r[k]), REDLOCK_OK);
      }
      assert_true(fx_call_join(&w, 15000));
      FX_ASSERT_RC(fx, c, w.rc, REDLOCK_OK);
      FX_ASSERT_RC(fx, c, redlock_extend(c, w.lock, TTL), REDLOCK_OK);
      FX_ASSERT_RC(fx, c, redlock_unlock(c, w.lock), REDLOCK_OK);
    }
    fx_close(fx, fenced);
  }
}

/* An election: elected (a fenced campaign, its lease watched), resigned. */
static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  if (term > 0)
    fx_event_post(arg);
}
static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
}

static void test_election(void **state) {
  fx_t *fx = *state;
  redlock_t *c = open_client(fx, 0, 0);
  for (size_t i = 0; i < PLACEABLE; i++) {
    char key[128];
    key_of(key, sizeof key, resources[i]);
    own_only_slot_of(fx, key);
    fx_event_t elected;
    fx_event_init(&elected);
    redlock_election_t *e = NULL;
    FX_ASSERT_RC(fx, c, redlock_elect(c, resources[i], 1000, on_elected, on_lost, &elected, &e),
                 REDLOCK_OK);
    if (!fx_event_wait(&elected, 10000))
      fail_msg("%s: never elected; log:\n%s", resources[i], fx_log_text(fx, 0));
    FX_ASSERT_RC(fx, c, redlock_resign(c, e), REDLOCK_OK);
    fx_event_destroy(&elected);
  }
}

/* A woken wait: the waiter subscribes to the channel redlock.h names, and
 * the holder's release wakes it (lock, semaphore). */
static void test_woken_wait(void **state) {
  fx_t *fx = *state;
  redlock_t *holder = open_client(fx, 0, 1);
  redlock_t *waiter = open_client(fx, 1, 1);
  for (size_t i = 0; i < PLACEABLE; i++) {
    char key[128], channel[192];
    key_of(key, sizeof key, resources[i]);
    own_only_slot_of(fx, key);
    redlock_lock_t *held = NULL;
    FX_ASSERT_RC(fx, holder, redlock_lock(holder, resources[i], TTL, &held), REDLOCK_OK);
    fx_call_t w = {.fn = fx_call_lock_wait,
                   .client = waiter,
                   .name = resources[i],
                   .ttl_ms = TTL,
                   .wait_ms = 10000};
    fx_call_start(&w);
    fx_channel_of(channel, sizeof channel, key);
    assert_true(fx_wait_subscribed(fx, 1, channel, 1, FX_SETTLE_MS));
    FX_ASSERT_RC(fx, holder, redlock_unlock(holder, held), REDLOCK_OK);
    assert_true(fx_call_join(&w, 15000));
    FX_ASSERT_RC(fx, waiter, w.rc, REDLOCK_OK);
    FX_ASSERT_RC(fx, waiter, redlock_unlock(waiter, w.lock), REDLOCK_OK);

    /* a semaphore of one slot */
    FX_ASSERT_RC(fx, holder, redlock_semaphore_acquire(holder, resources[i], 1, TTL, 0, &held),
                 REDLOCK_OK);
    fx_call_t s = {.fn = fx_call_semaphore,
                   .client = waiter,
                   .name = resources[i],
                   .limit = 1,
                   .ttl_ms = TTL,
                   .wait_ms = 10000};
    fx_call_start(&s);
    fx_derived_name(channel, sizeof channel, REDLOCK_RELEASE_CHANNEL_PREFIX, key, ":sem");
    assert_true(fx_wait_subscribed(fx, 1, channel, 1, FX_SETTLE_MS));
    FX_ASSERT_RC(fx, holder, redlock_unlock(holder, held), REDLOCK_OK);
    assert_true(fx_call_join(&s, 15000));
    FX_ASSERT_RC(fx, waiter, s.rc, REDLOCK_OK);
    FX_ASSERT_RC(fx, waiter, redlock_unlock(waiter, s.lock), REDLOCK_OK);
  }
}

/* "x{}{y}": no hash tag and a '}', so its fence counter cannot share its
 * slot.  Unfenced, nothing derived is a key (its release channel goes in
 * ARGV), and it works; fenced, the node refuses the script. */
static void test_unplaceable_key(void **state) {
  fx_t *fx = *state;
  const char *res = resources[PLACEABLE];
  char key[128];
  key_of(key, sizeof key, res);
  own_only_slot_of(fx, key);
  redlock_t *plain = open_client(fx, 0, 0);
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, plain, redlock_lock(plain, res, TTL, &lock), REDLOCK_OK);
  FX_ASSERT_RC(fx, plain, redlock_extend(plain, lock, TTL), REDLOCK_OK);
  FX_ASSERT_RC(fx, plain, redlock_unlock(plain, lock), REDLOCK_OK);
  redlock_t *fenced = open_client(fx, 1, 1);
  lock = NULL;
  int rc = redlock_trylock(fenced, res, TTL, &lock);
  assert_int_not_equal(rc, REDLOCK_OK);
  assert_true(fx_log_contains(fx, 1, "slot")); /* the node's refusal, logged */
}

int main(void) {
  fx_use_profile(&fx_profile_integration);
  fx_watchdog(240);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_node_refuses_cross_slot, setup_cluster, fx_teardown),
      cmocka_unit_test_setup_teardown(test_locks, setup_cluster, fx_teardown),
      cmocka_unit_test_setup_teardown(test_semaphores, setup_cluster, fx_teardown),
      cmocka_unit_test_setup_teardown(test_rwlocks, setup_cluster, fx_teardown),
      cmocka_unit_test_setup_teardown(test_election, setup_cluster, fx_teardown),
      cmocka_unit_test_setup_teardown(test_woken_wait, setup_cluster, fx_teardown),
      cmocka_unit_test_setup_teardown(test_unplaceable_key, setup_cluster, fx_teardown),
  };
  return cmocka_run_group_tests_name("one_slot", tests, NULL, NULL);
}
