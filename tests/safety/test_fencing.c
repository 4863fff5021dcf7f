/* test_fencing.c: fencing tokens (docs/safety.md §6) against real
 * redis-server processes.  The property under test: the tokens of successive
 * grants of one resource strictly increase, whoever takes them and whichever
 * quorum grants them:
 *  (a) successive grants of one client, including a grant after the previous
 *      lock simply expired;
 *  (b) two clients alternating, and three clients contending from threads
 *      (tokens recorded inside the critical section, in grant order);
 *  (c) across different quorums of N = 5: two masters killed, then restarted
 *      empty while two others are killed, then a quorum made only of masters
 *      that lost their counters (the TIME floor);
 *  (d) with restart quarantine on (max TTL 1000 ms): masters killed and
 *      restarted empty, one, two and all three, waiting out the quarantine;
 *  (e) redlock_lock_many with fencing returns a token, writes the counters
 *      "__redlock_fence__:{<key>}" to the masters, and shares them with single
 *      locks of the same resources;
 *  (f) without fencing the token is 0 and no counter is written.
 * After every grant the test also checks the write-back: at least a quorum of
 * the live masters hold a counter >= the token when the grant returns.
 * Waits are event-driven with deadlines (rh_wait_until), never sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define FENCE_PREFIX REDLOCK_FENCE_KEY_PREFIX
#define TTL 5000u

/* The fixture's servers that are up, as a bit mask. */
static unsigned alive_mask(fx_t *fx) {
  unsigned mask = 0;
  for (size_t i = 0; i < fx->n; i++)
    if (rh_server_pid(fx->servers[i]) != 0)
      mask |= 1u << i;
  return mask;
}

/* Live masters whose counter for res is at least token. */
static size_t counters_at_least(fx_t *fx, const char *res, uint64_t token) {
  char key[256];
  fx_fence_key_of(key, sizeof key, res);
  unsigned alive = alive_mask(fx);
  size_t count = 0;
  for (size_t i = 0; i < fx->n; i++)
    if ((alive & (1u << i)) && fx_get_u64(fx->servers[i], key) >= token)
      count++;
  return count;
}

/* One grant (trylock until it wins, within deadline_ms): its token must be
 * above *prev, and a quorum must already hold the written-back counter.
 * Releases the lock and updates *prev. */
static void grant_and_check(fx_t *fx, redlock_t *c, int slot, const char *res, uint32_t ttl,
                            int deadline_ms, uint64_t *prev, const char *what) {
  redlock_lock_t *lock = NULL;
  int rc = fx_trylock_until(c, res, ttl, deadline_ms, &lock);
  if (rc != REDLOCK_OK)
    fail_msg("%s: no grant within %d ms (%s); log:\n%s", what, deadline_ms, redlock_err_name(rc),
             fx_log_text(fx, slot));
  uint64_t token = redlock_lock_fence(lock);
  if (token <= *prev)
    fail_msg("%s: token %llu is not above the previous %llu", what, (unsigned long long)token,
             (unsigned long long)*prev);
  size_t q = fx->n / 2 + 1;
  size_t acked = counters_at_least(fx, res, token);
  if (acked < q)
    fail_msg("%s: token %llu granted but only %zu masters hold a counter >= it (quorum %zu)", what,
             (unsigned long long)token, acked, q);
  *prev = token;
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

/* ---- (a) one client ------------------------------------------------------------------ */

static void test_fence_one_client(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:fence:one";
  redlock_t *c = fx_open(fx, 0, fx_options_fenced(fx, 0));
  uint64_t prev = 0;
  char what[64];

  for (int i = 0; i < 20; i++) {
    snprintf(what, sizeof what, "grant %d", i);
    grant_and_check(fx, c, 0, res, TTL, 2000, &prev, what);
  }

  /* A lock that is not released but expires: the counter outlives it. */
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_lock(c, res, 250, &lock), REDLOCK_OK);
  assert_true(redlock_lock_fence(lock) > prev);
  prev = redlock_lock_fence(lock);
  assert_true(fx_wait_every_master(fx, fx_exists, res, 0, 3000));
  grant_and_check(fx, c, 0, res, TTL, 2000, &prev, "grant after an expiry");
  /* The expired handle is still ours to free: the release finds nothing. */
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_ELOST);
}

/* ---- (b) several clients -------------------------------------------------------------------- */

static void test_fence_two_clients_alternating(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:fence:two";
  redlock_t *a = fx_open(fx, 0, fx_options_fenced(fx, 0));
  redlock_t *b = fx_open(fx, 1, fx_options_fenced(fx, 1));
  uint64_t prev = 0;
  char what[64];

  for (int i = 0; i < 20; i++) {
    snprintf(what, sizeof what, "grant %d (client %c)", i, i % 2 ? 'B' : 'A');
    grant_and_check(fx, i % 2 ? b : a, i % 2, res, TTL, 2000, &prev, what);
  }
}

#define CONTENDERS 3
#define GRANTS_EACH 8

typedef struct {
  pthread_mutex_t mu;
  uint64_t tokens[CONTENDERS * GRANTS_EACH];
  int who[CONTENDERS * GRANTS_EACH];
  size_t n_tokens;
  int inside;
  int overlaps;
  int failures;
  int first_error;
} contention_t;

typedef struct {
  contention_t *shared;
  redlock_t *client;
  int id;
} contender_t;

static void *contender_main(void *arg) {
  contender_t *me = arg;
  contention_t *sh = me->shared;
  for (int i = 0; i < GRANTS_EACH; i++) {
    redlock_lock_t *lock = NULL;
    int rc = redlock_lock_wait(me->client, "sf:fence:contended", TTL, 10000, &lock);
    pthread_mutex_lock(&sh->mu);
    if (rc != REDLOCK_OK) {
      if (sh->failures++ == 0)
        sh->first_error = rc;
      pthread_mutex_unlock(&sh->mu);
      continue;
    }
    if (sh->inside++ != 0)
      sh->overlaps++;
    sh->who[sh->n_tokens] = me->id;
    sh->tokens[sh->n_tokens++] = redlock_lock_fence(lock);
    pthread_mutex_unlock(&sh->mu);
    /* Hand the lock on: the next holder is granted only after this release,
     * so the record order is the grant order. */
    pthread_mutex_lock(&sh->mu);
    sh->inside--;
    pthread_mutex_unlock(&sh->mu);
    if (redlock_unlock(me->client, lock) != REDLOCK_OK) {
      pthread_mutex_lock(&sh->mu);
      if (sh->failures++ == 0)
        sh->first_error = -100;
      pthread_mutex_unlock(&sh->mu);
    }
  }
  return NULL;
}

static void test_fence_contended_threads(void **state) {
  fx_t *fx = *state;
  contention_t sh;
  memset(&sh, 0, sizeof sh);
  pthread_mutex_init(&sh.mu, NULL);
  contender_t me[CONTENDERS];
  pthread_t threads[CONTENDERS];
  for (int i = 0; i < CONTENDERS; i++) {
    me[i].shared = &sh;
    me[i].client = fx_open(fx, i, fx_options_fenced(fx, i));
    me[i].id = i;
  }
  for (int i = 0; i < CONTENDERS; i++)
    assert_int_equal(pthread_create(&threads[i], NULL, contender_main, &me[i]), 0);
  for (int i = 0; i < CONTENDERS; i++)
    pthread_join(threads[i], NULL);
  pthread_mutex_destroy(&sh.mu);

  if (sh.failures != 0)
    fail_msg("%d lock/unlock calls failed, the first with %d (%s)", sh.failures, sh.first_error,
             redlock_err_name(sh.first_error));
  assert_int_equal(sh.overlaps, 0);
  assert_int_equal(sh.n_tokens, CONTENDERS * GRANTS_EACH);
  for (size_t i = 1; i < sh.n_tokens; i++)
    if (sh.tokens[i] <= sh.tokens[i - 1])
      fail_msg("grant %zu (client %d) got token %llu, not above grant %zu's (client %d) %llu", i,
               sh.who[i], (unsigned long long)sh.tokens[i], i - 1, sh.who[i - 1],
               (unsigned long long)sh.tokens[i - 1]);
}

/* ---- (c) different quorums ------------------------------------------------------------------ */

static void test_fence_across_quorums(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:fence:quorums";
  redlock_t *c = fx_open(fx, 0, fx_options_fenced(fx, 0));
  uint64_t prev = 0;
  char what[96], key[128];
  fx_fence_key_of(key, sizeof key, res);
  /* Each phase restarts (empty), then kills, the masters of its masks and
   * makes three grants on the quorum left. */
  static const struct {
    unsigned restart, kill;
    int deadline_ms;
    const char *phase;
  } phases[] = {
      {0, 0, 2000, "all five up"},
      /* Quorum {0,1,2}. */
      {0, 0x18, 5000, "masters 3,4 down"},
      /* Quorum {2,3,4}: 3 and 4 came back empty (no counter); 2 remembers. */
      {0x18, 0x03, 5000, "masters 0,1 down, 3,4 restarted empty"},
      /* Quorum {0,1,2} again, but all three restarted empty: no master of
       * the quorum remembers any counter; only the TIME floor is left. */
      {0x07, 0x18, 5000, "quorum of masters that lost their counters"},
  };
  for (size_t p = 0; p < sizeof phases / sizeof phases[0]; p++) {
    for (size_t i = 0; i < fx->n; i++)
      if (phases[p].restart & (1u << i)) {
        assert_int_equal(rh_server_restart(fx->servers[i]), 0);
        assert_int_equal(fx_get_u64(fx->servers[i], key), 0); /* empty */
      }
    for (size_t i = 0; i < fx->n; i++)
      if (phases[p].kill & (1u << i))
        assert_int_equal(rh_server_kill(fx->servers[i]), 0);
    for (int i = 0; i < 3; i++) {
      snprintf(what, sizeof what, "%s, grant %d", phases[p].phase, i);
      grant_and_check(fx, c, 0, res, TTL, phases[p].deadline_ms, &prev, what);
    }
  }
}

/* ---- (d) quarantine on ----------------------------------------------------------------------- */

#define QMAX_TTL 1000u

static void test_fence_quarantine_restarts(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:fence:quarantine";
  redlock_options_t *opts = fx_options_fenced(fx, 0);
  assert_int_equal(redlock_options_set_quarantine(opts, 1), 0);
  assert_int_equal(redlock_options_set_max_ttl(opts, QMAX_TTL), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  redlock_lock_t *lock = NULL;
  uint64_t prev = 0;
  /* Quarantine (1 s) + reconnect backoff (capped at 1 s) + slack. */
  const int deadline = 5000;

  assert_int_equal(redlock_trylock(c, res, QMAX_TTL + 1, &lock), REDLOCK_EINVAL);
  assert_null(lock);

  /* The masters are fresh: the first grant waits out their quarantine. */
  grant_and_check(fx, c, 0, res, QMAX_TTL, deadline, &prev, "first grant");
  grant_and_check(fx, c, 0, res, QMAX_TTL, deadline, &prev, "second grant");

  /* Master 0 restarted empty: quarantined, the other two decide. */
  assert_int_equal(rh_server_restart(fx->servers[0]), 0);
  fx_assert_saw_restart(fx, 0, 0, 1);
  grant_and_check(fx, c, 0, res, QMAX_TTL, deadline, &prev, "master 0 restarted");

  /* Masters 1 and 2 restarted empty: no quorum until their quarantine
   * ends; then master 0 (which remembers) or only they decide. */
  assert_int_equal(rh_server_restart(fx->servers[1]), 0);
  assert_int_equal(rh_server_restart(fx->servers[2]), 0);
  fx_assert_saw_restart(fx, 0, 1, 1);
  fx_assert_saw_restart(fx, 0, 2, 1);
  grant_and_check(fx, c, 0, res, QMAX_TTL, deadline, &prev, "masters 1,2 restarted");
  grant_and_check(fx, c, 0, res, QMAX_TTL, deadline, &prev, "masters 1,2 restarted, again");

  /* All three restarted empty: every counter is gone; the quarantine is
   * waited out and the TIME floor keeps the tokens rising. */
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(rh_server_restart(fx->servers[i]), 0);
  fx_assert_saw_restart(fx, 0, 0, 2);
  fx_assert_saw_restart(fx, 0, 1, 2);
  fx_assert_saw_restart(fx, 0, 2, 2);
  grant_and_check(fx, c, 0, res, QMAX_TTL, deadline, &prev, "all three restarted");
  grant_and_check(fx, c, 0, res, QMAX_TTL, deadline, &prev, "all three restarted, again");
}

/* ---- (e) lock_many ------------------------------------------------------------------------------
 */

typedef struct {
  fx_t *fx;
  const char *const *res;
  size_t n;
  uint64_t token;
} counters_wait_t;

/* Every master holds every resource's counter, at least the token.  (Not
 * always equal: a master whose acquisition vote came after the round was
 * decided set its counter from its own, later, TIME; the write-back only ever
 * raises counters.) */
static int counters_at_least_everywhere(void *arg) {
  counters_wait_t *w = arg;
  for (size_t i = 0; i < w->fx->n; i++)
    for (size_t k = 0; k < w->n; k++) {
      char key[128];
      fx_fence_key_of(key, sizeof key, w->res[k]);
      if (fx_get_u64(w->fx->servers[i], key) < w->token)
        return 0;
    }
  return 1;
}

static void check_counters_everywhere(fx_t *fx, const char *const *res, size_t n, uint64_t token,
                                      const char *what) {
  counters_wait_t w = {fx, res, n, token};
  if (rh_wait_until(counters_at_least_everywhere, &w, 3000))
    return;
  char msg[1024];
  size_t used = 0;
  for (size_t i = 0; i < fx->n; i++)
    for (size_t k = 0; k < n && used < sizeof msg; k++) {
      char key[128];
      fx_fence_key_of(key, sizeof key, res[k]);
      used += (size_t)snprintf(msg + used, sizeof msg - used, "\n  master %zu %s = %llu", i, key,
                               (unsigned long long)fx_get_u64(fx->servers[i], key));
    }
  fail_msg("%s: token %llu, but not every counter is at least that:%s", what,
           (unsigned long long)token, msg);
}

static void test_fence_lock_many(void **state) {
  fx_t *fx = *state;
  const char *const res[] = {"sf:many:a", "sf:many:b", "sf:many:c"};
  const char *const pair[] = {"sf:many:c", "sf:many:a"};
  redlock_t *c = fx_open(fx, 0, fx_options_fenced(fx, 0));
  redlock_lock_t *lock = NULL;

  assert_int_equal(redlock_lock_many(c, res, 3, TTL, &lock), REDLOCK_OK);
  uint64_t t1 = redlock_lock_fence(lock);
  assert_true(t1 > 0);
  /* The write-back reaches every master, for every key. */
  check_counters_everywhere(fx, res, 3, t1, "first lock_many");
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);

  /* Again: higher. */
  assert_int_equal(redlock_lock_many(c, res, 3, TTL, &lock), REDLOCK_OK);
  uint64_t t2 = redlock_lock_fence(lock);
  assert_true(t2 > t1);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);

  /* A single lock of one of the resources shares its counter. */
  uint64_t t3 = t2;
  grant_and_check(fx, c, 0, "sf:many:b", TTL, 2000, &t3, "single lock after lock_many");

  /* And a lock_many over a subset: above everything its keys have seen. */
  assert_int_equal(redlock_lock_many(c, pair, 2, TTL, &lock), REDLOCK_OK);
  uint64_t t4 = redlock_lock_fence(lock);
  assert_true(t4 > t3);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  /* And a lock_many over all three after that: above the single lock of b
   * and the pair. */
  assert_int_equal(redlock_lock_many(c, res, 3, TTL, &lock), REDLOCK_OK);
  assert_true(redlock_lock_fence(lock) > t4);
  check_counters_everywhere(fx, res, 3, redlock_lock_fence(lock), "lock_many after the pair");
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

/* ---- (f) fencing off ----------------------------------------------------------------------------
 */

static void test_fence_off_returns_zero(void **state) {
  fx_t *fx = *state;
  const char *const res[] = {"sf:nofence:a", "sf:nofence:b"};
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *lock = NULL;

  assert_int_equal(redlock_lock(c, res[0], TTL, &lock), REDLOCK_OK);
  assert_int_equal(redlock_lock_fence(lock), 0);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  assert_int_equal(redlock_trylock(c, res[0], TTL, &lock), REDLOCK_OK);
  assert_int_equal(redlock_lock_fence(lock), 0);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  assert_int_equal(redlock_lock_many(c, res, 2, TTL, &lock), REDLOCK_OK);
  assert_int_equal(redlock_lock_fence(lock), 0);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);

  /* No counter was written anywhere. */
  for (size_t i = 0; i < fx->n; i++)
    for (size_t k = 0; k < 2; k++) {
      char key[128];
      fx_fence_key_of(key, sizeof key, res[k]);
      assert_true(fx_key_absent(fx->servers[i], key));
    }
}

FX_MAIN("safety: fencing tokens", &fx_profile_safety, FX_TEST(test_fence_one_client, 3),
        FX_TEST(test_fence_two_clients_alternating, 3), FX_TEST(test_fence_contended_threads, 3),
        FX_TEST(test_fence_across_quorums, 5), FX_TEST(test_fence_quarantine_restarts, 3),
        FX_TEST(test_fence_lock_many, 3), FX_TEST(test_fence_off_returns_zero, 3))
