/* test_nolua.c: masters that run no Lua scripts, and the script-free
 * commands where a master has them, against real Valkey >= 9.1 servers
 * (REDLOCK_TEST_VALKEY9: the test is skipped without one).  Lua is a module
 * there: started with --enable-module-command local, `MODULE UNLOAD lua`
 * leaves a master that answers EVAL / SCRIPT LOAD with "ERR Could not find
 * scripting engine 'lua'".
 *
 * Asserts:
 *  - without Lua, a plain lock is taken (SET NX PX), extended (SET IFEQ)
 *    and released (DELIFEQ) with no key left and no script run;
 *  - with Lua too, releases and extensions use DELIFEQ and SET IFEQ;
 *  - a fenced lock without Lua (MULTI / SET NX PX / GET / ZSCORE / TIME /
 *    EXEC, then the floor raised by ZADD GT) gives tokens that grow from
 *    one holder to the next, also across masters with and without Lua, and
 *    its floor is at least the token on a quorum;
 *  - a watched lock whose key a master lost is re-installed there (the SET
 *    NX PX sent beside the SET IFEQ);
 *  - a woken wait gets the lock once it is released, and the release was
 *    announced (PUBLISH, sent beside DELIFEQ) on a quorum;
 *  - semaphores, read-write locks and multi-resource locks on too many
 *    masters without Lua fail with REDLOCK_ENOTSUP and votes "unsupported
 *    (no Lua engine: ...)", at once also when asked to wait; with enough
 *    masters that run scripts they work. */
#include <pthread.h>
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

#define TTL 10000u

/* Starts n Valkey >= 9.1 masters, the first n_nolua without Lua; 0 when
 * there is no such server here (the test then skips). */
static int start(fx_t *fx, size_t n, size_t n_nolua) {
  static const char *const args[] = {"--enable-module-command", "local", NULL};
  assert_int_equal(fx_servers_start(fx, n, &(rh_options_t){.extra_args = args}), 0);
  for (size_t i = 0; i < n_nolua; i++)
    assert_int_equal(rh_server_unload_lua(fx->servers[i]), 0);
  return 1;
}

/* How many times server s ran `cmd` (INFO commandstats). */
static long calls(rh_server_t *s, const char *cmd) {
  static char buf[16384];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "INFO commandstats"), 0);
  char needle[64];
  snprintf(needle, sizeof needle, "cmdstat_%s:calls=", cmd);
  const char *at = strstr(buf, needle);
  return at != NULL ? strtol(at + strlen(needle), NULL, 10) : 0;
}

static void reset_stats(fx_t *fx) {
  char buf[64];
  for (size_t i = 0; i < fx->n; i++)
    assert_int_equal(rh_server_command(fx->servers[i], buf, sizeof buf, "CONFIG RESETSTAT"), 0);
}

static redlock_t *open_client(fx_t *fx, int fenced) {
  redlock_options_t *opts = fx_options(fx, 0, fx->n, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_fencing(opts, fenced), 0);
  return fx_open(fx, 0, opts);
}

static void assert_votes_say(redlock_t *c, const char *needle) {
  char votes[1024];
  assert_true(redlock_last_votes(c, votes, sizeof votes) > 0);
  if (strstr(votes, needle) == NULL)
    fail_msg("want \"%s\" in the votes: %s", needle, votes);
}

static void test_plain_lock_without_lua(void **state) {
  fx_t *fx = *state;
  start(fx, 3, 3);
  redlock_t *c = open_client(fx, 0);
  reset_stats(fx);
  FX_NAME(res, "plain");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
  assert_value_everywhere(fx, res, redlock_lock_value(lock));
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, 2 * TTL), REDLOCK_OK);
  assert_pttl_above_everywhere(fx, res, TTL + 1000);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_nil_everywhere(fx, res);
  for (size_t i = 0; i < fx->n; i++) {
    assert_int_equal(calls(fx->servers[i], "evalsha"), 0);
    assert_int_equal(calls(fx->servers[i], "eval"), 0);
  }
  assert_true(fx_wait_log(fx, 0, "runs no scripts (no Lua engine", FX_SETTLE_MS));
}

static void test_script_free_with_lua(void **state) {
  fx_t *fx = *state;
  start(fx, 3, 0);
  redlock_t *c = open_client(fx, 0);
  reset_stats(fx);
  FX_NAME(res, "with-lua");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, 2 * TTL), REDLOCK_OK);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_nil_everywhere(fx, res);
  long delifeq = 0;
  for (size_t i = 0; i < fx->n; i++) {
    assert_int_equal(calls(fx->servers[i], "evalsha"), 0);
    delifeq += calls(fx->servers[i], "delifeq");
  }
  assert_true(delifeq >= 2); /* a quorum at least; the third may not have answered yet */
}

/* The floor of key's fence counter on s (ZSCORE), 0 when none. */
static uint64_t floor_on(rh_server_t *s, const char *key) {
  char counter[256], buf[64];
  fx_fence_key_of(counter, sizeof counter, key);
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "ZSCORE %s:floor token", counter), 0);
  return strtoull(buf, NULL, 10);
}

static void test_fenced_without_lua(void **state) {
  fx_t *fx = *state;
  /* Two masters without Lua, one with: both paths in each grant. */
  start(fx, 3, 2);
  redlock_t *c = open_client(fx, 1);
  FX_NAME(res, "fenced");
  uint64_t last = 0;
  for (int i = 0; i < 3; i++) {
    redlock_lock_t *lock = NULL;
    FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL, &lock), REDLOCK_OK);
    uint64_t fence = redlock_lock_fence(lock);
    if (fence <= last)
      fail_msg("token %llu after %llu", (unsigned long long)fence, (unsigned long long)last);
    last = fence;
    /* The commit raised the floor (masters 0, 1) or the counter (master 2)
     * to the token on a quorum before the call returned. */
    size_t raised =
        (floor_on(fx->servers[0], res) >= fence) + (floor_on(fx->servers[1], res) >= fence);
    char counter[256];
    raised += fx_get_u64(fx->servers[2], fx_fence_key_of(counter, sizeof counter, res)) >= fence;
    assert_true(raised >= 2);
    FX_ASSERT_RC(fx, c, redlock_extend(c, lock, TTL), REDLOCK_OK);
    FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
    assert_nil_everywhere(fx, res);
  }
  /* Fenced several resources at once need the scripts: refused. */
  FX_NAME(other, "fenced-other");
  const char *const both[] = {res, other};
  redlock_lock_t *many = NULL;
  FX_ASSERT_RC(fx, c, redlock_lock_many(c, both, 2, TTL, &many), REDLOCK_ENOTSUP);
  assert_votes_say(c, "unsupported (no Lua engine: ERR Could not find scripting engine");
}

static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)reason;
  (void)arg;
  fail_msg("the watched lock was lost");
}

static int key_back(void *arg) {
  void **a = arg;
  return fx_key_is(a[0], a[1], a[2]);
}

static void test_watch_reinstalls(void **state) {
  fx_t *fx = *state;
  start(fx, 3, 3);
  redlock_t *c = open_client(fx, 1);
  FX_NAME(res, "watched");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, 1000, &lock), REDLOCK_OK);
  FX_ASSERT_RC(fx, c, redlock_watch(c, lock, on_lost, NULL), REDLOCK_OK);
  assert_value_everywhere(fx, res, redlock_lock_value(lock));
  char buf[64];
  assert_int_equal(rh_server_command(fx->servers[0], buf, sizeof buf, "DEL %s", res), 0);
  void *arg[3] = {fx->servers[0], res, (void *)redlock_lock_value(lock)};
  assert_true(rh_wait_until(key_back, arg, 5000));
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_nil_everywhere(fx, res);
}

typedef struct {
  redlock_t *client;
  const char *res;
  int rc;
  redlock_lock_t *lock;
} waiter_t;

static void *wait_for_lock(void *arg) {
  waiter_t *w = arg;
  w->rc = redlock_lock_wait(w->client, w->res, TTL, 8000, &w->lock);
  return NULL;
}

static void test_woken_wait(void **state) {
  fx_t *fx = *state;
  start(fx, 3, 3);
  redlock_t *holder = open_client(fx, 0);
  redlock_t *waiter = fx_open(fx, 1, fx_options(fx, 1, fx->n, REDLOCK_LOG_WARN));
  FX_NAME(res, "woken");
  /* Held for 30 s: the waiter's 8 s budget ends long before it expires. */
  redlock_lock_t *held = fx_hold(fx, holder, res, 30000);
  waiter_t w = {.client = waiter, .res = res};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, wait_for_lock, &w), 0);
  fx_assert_subscribed(fx, res, 1, FX_SETTLE_MS);
  reset_stats(fx);
  FX_ASSERT_RC(fx, holder, redlock_unlock(holder, held), REDLOCK_OK);
  assert_int_equal(pthread_join(t, NULL), 0);
  FX_ASSERT_RC(fx, waiter, w.rc, REDLOCK_OK);
  /* Woken by the announcements (the waiter's retries would find it too:
   * the masters count what was sent). */
  long published = 0;
  for (size_t i = 0; i < fx->n; i++)
    published += calls(fx->servers[i], "publish");
  assert_true(published >= 2);
  FX_ASSERT_RC(fx, waiter, redlock_unlock(waiter, w.lock), REDLOCK_OK);
}

static void test_unsupported(void **state) {
  fx_t *fx = *state;
  start(fx, 3, 2);
  redlock_t *c = open_client(fx, 0);
  redlock_lock_t *lock = NULL;
  FX_NAME(sem, "sem");
  FX_ASSERT_RC(fx, c, redlock_semaphore_acquire(c, sem, 2, TTL, 0, &lock), REDLOCK_ENOTSUP);
  assert_votes_say(c, "=unsupported (no Lua engine: ERR Could not find scripting engine 'lua')");
  /* Waited for: no wait can change it (it would end in ETIMEDOUT). */
  FX_ASSERT_RC(fx, c, redlock_semaphore_acquire(c, sem, 2, TTL, 5000, &lock), REDLOCK_ENOTSUP);
  FX_NAME(rw, "rw");
  FX_ASSERT_RC(fx, c, redlock_rwlock_read(c, rw, TTL, 0, &lock), REDLOCK_ENOTSUP);
  FX_ASSERT_RC(fx, c, redlock_rwlock_write(c, rw, TTL, 5000, &lock), REDLOCK_ENOTSUP);
  FX_NAME(a, "many-a");
  FX_NAME(b, "many-b");
  const char *const both[] = {a, b};
  FX_ASSERT_RC(fx, c, redlock_lock_many(c, both, 2, TTL, &lock), REDLOCK_ENOTSUP);
  assert_nil_everywhere(fx, a);
}

/* One master without Lua of three: the two that run scripts are a quorum. */
static void test_enough_scripts(void **state) {
  fx_t *fx = *state;
  start(fx, 3, 1);
  redlock_t *c = open_client(fx, 0);
  redlock_lock_t *lock = NULL;
  FX_NAME(sem, "sem");
  FX_ASSERT_RC(fx, c, redlock_semaphore_acquire(c, sem, 2, TTL, 0, &lock), REDLOCK_OK);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  FX_NAME(rw, "rw");
  FX_ASSERT_RC(fx, c, redlock_rwlock_write(c, rw, TTL, 0, &lock), REDLOCK_OK);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  FX_NAME(a, "many-a");
  FX_NAME(b, "many-b");
  const char *const both[] = {a, b};
  FX_ASSERT_RC(fx, c, redlock_lock_many(c, both, 2, TTL, &lock), REDLOCK_OK);
  assert_votes_say(c, "=unsupported (no Lua engine");
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_nil_everywhere(fx, a);
}

static int have_valkey9(void) {
  const char *path = rh_valkey9_executable();
  if (path == NULL) {
    printf("[  SKIPPED ] no Valkey >= 9.1 (REDLOCK_TEST_VALKEY9)\n");
    return 0;
  }
  setenv("REDLOCK_TEST_SERVER", path, 1);
  return 1;
}

int main(void) {
  if (!have_valkey9())
    return 0;
  fx_use_profile(&fx_profile_integration);
  if (getenv("FX_ONLY") != NULL)
    cmocka_set_test_filter(getenv("FX_ONLY"));
  const struct CMUnitTest tests[] = {
      FX_TEST(test_plain_lock_without_lua, 0),
      FX_TEST(test_script_free_with_lua, 0),
      FX_TEST(test_fenced_without_lua, 0),
      FX_TEST(test_watch_reinstalls, 0),
      FX_TEST(test_woken_wait, 0),
      FX_TEST(test_unsupported, 0),
      FX_TEST(test_enough_scripts, 0),
  };
  return cmocka_run_group_tests_name("nolua", tests, NULL, NULL);
}
