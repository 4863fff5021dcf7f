/* test_wait_wake.c: redlock_lock_wait woken by release notifications
 * (src/voters/notify.c: the release script PUBLISHes on "__redlock_release__:{<key>}"
 * and waiters subscribe on every master), against real redis-server
 * processes, N = 3:
 *  - with the retry (fallback poll) delay at 10 s, a waiter in
 *    redlock_lock_wait(wait 15 s) acquires within 2 s after the holder
 *    unlocks from another thread, once the waiter is waiting (its
 *    subscription is visible on every master): the holder in another
 *    client, and in the waiter's own client;
 *  - a holder that lets the lock expire publishes nothing: the waiter still
 *    acquires through the fallback retry (delay 100 ms, ttl 300 ms), for a
 *    foreign holder (a plain SET PX) and for a redlock holder, whose later
 *    unlock then reports ELOST and leaves the new holder's key alone;
 *  - masters that apply a release one after another: the first one's
 *    announcement wakes the waiter, whose attempt then loses on a master that
 *    still held the key; that master's own announcement, arriving during the
 *    attempt, makes the waiter try again at once (not after the 10 s
 *    fallback);
 *  - 4 waiter threads over 2 clients (fallback 10 s), 3 acquisitions each,
 *    all acquire one after another with no overlap (each checks, inside,
 *    that its value is on a quorum of masters), long before any fallback.
 * Waits are timed events and rh_wait_until deadlines, never sleeps; the
 * bounds are generous deadlines, not speed measurements. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define CHANNEL_PREFIX REDLOCK_RELEASE_CHANNEL_PREFIX
#define FALLBACK_MS 10000u
#define WAIT_MS 15000u
#define WAKE_BOUND_MS 2000u

/* Holder `h` holds res; a waiter on client `wc` (retry delay 10 s) waits;
 * once its subscription is on every master, the main thread unlocks. */
static void woken_by_unlock(fx_t *fx, redlock_t *h, redlock_t *wc, const char *res) {
  redlock_lock_t *held = NULL;
  assert_int_equal(fx_trylock_until(h, res, 20000, 5000, &held), REDLOCK_OK);
  fx_call_t w = {
      .fn = fx_call_lock_wait, .client = wc, .name = res, .ttl_ms = 5000, .wait_ms = WAIT_MS};
  fx_call_start(&w);
  fx_assert_subscribed(fx, res, 1, 5000);
  /* Still waiting: nothing was released yet. */
  int early = fx_event_wait(&w.done, 0);

  uint64_t t_unlock = rh_now_ms();
  int unlock_rc = redlock_unlock(h, held);
  int woke = fx_call_join(&w, (int)FALLBACK_MS + 5000);

  assert_false(early);
  assert_int_equal(unlock_rc, REDLOCK_OK);
  assert_true(woke);
  assert_int_equal(w.rc, REDLOCK_OK);
  assert_non_null(w.lock);
  fx_assert_woken(w.t_done - t_unlock, WAKE_BOUND_MS, FALLBACK_MS, "the unlock");
  assert_true(w.t_done - w.t_start < FALLBACK_MS);
  assert_true(fx_holding(fx, fx->n, res, redlock_lock_value(w.lock)) >= fx->n / 2 + 1);
  assert_int_equal(redlock_unlock(wc, w.lock), REDLOCK_OK);
}

static void test_wait_woken_other_client(void **state) {
  fx_t *fx = *state;
  redlock_t *h = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *wc = fx_open(fx, 1, fx_options_retry(fx, 1, REDLOCK_LOG_WARN, -1, FALLBACK_MS, 0));
  woken_by_unlock(fx, h, wc, "sf:wait:other");
  /* Twice: the second wait reuses the client's subscriber connections. */
  woken_by_unlock(fx, h, wc, "sf:wait:other");
}

static void test_wait_woken_same_client(void **state) {
  fx_t *fx = *state;
  redlock_t *c = fx_open(fx, 0, fx_options_retry(fx, 0, REDLOCK_LOG_WARN, -1, FALLBACK_MS, 0));
  woken_by_unlock(fx, c, c, "sf:wait:same");
}

/* ---- a release applied by the masters one after another ---------------------------------- */

/* What the release script does on one master: delete, then announce. */
static void release_on(rh_server_t *s, const char *key) {
  char buf[64], channel[128];
  fx_channel_of(channel, sizeof channel, key);
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "EVAL %s 1 %s %s",
                                     "redis.call('del', KEYS[1]) "
                                     "return redis.call('publish', ARGV[1], '')",
                                     key, channel),
                   0);
}

/* Calls of SET a master has executed (INFO commandstats). */
static long set_calls(rh_server_t *s) {
  static char buf[16384];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "INFO commandstats"), 0);
  const char *p = strstr(buf, "cmdstat_set:calls=");
  return p != NULL ? strtol(p + strlen("cmdstat_set:calls="), NULL, 10) : 0;
}

typedef struct {
  rh_server_t *server;
  const char *key;
  long after; /* set_calls above this */
} staggered_probe_t;

static int attempt_set_on_m0(void *arg) { /* M0 holds some value other than "foreign" */
  staggered_probe_t *p = arg;
  char buf[64];
  return rh_server_command(p->server, buf, sizeof buf, "GET %s", p->key) == 0 &&
         strcmp(buf, "(nil)") != 0 && strcmp(buf, "foreign") != 0;
}

static int attempt_reached_m1(void *arg) {
  staggered_probe_t *p = arg;
  return set_calls(p->server) > p->after;
}

static void test_wait_rewoken_by_later_release(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:wait:staggered";
  char buf[64];
  enum { PAUSE_MS = 1500, BOUND_MS = 5000 };
  /* M2 is paused for writes during the attempt: the request timeout must
   * outlast the pause, so that M2's vote is a late "no", not a failure. */
  redlock_options_t *opts = fx_options_retry(fx, 0, REDLOCK_LOG_WARN, -1, FALLBACK_MS, 0);
  assert_int_equal(redlock_options_set_timeouts(opts, FX_SF_CONNECT_MS, 3 * PAUSE_MS), 0);
  redlock_t *c = fx_open(fx, 0, opts);

  /* A foreign holder on every master. */
  for (size_t i = 0; i < fx->n; i++)
    assert_int_equal(
        rh_server_command(fx->servers[i], buf, sizeof buf, "SET %s foreign PX 60000", res), 0);
  fx_call_t w = {
      .fn = fx_call_lock_wait, .client = c, .name = res, .ttl_ms = 5000, .wait_ms = WAIT_MS};
  fx_call_start(&w);
  fx_assert_subscribed(fx, res, 1, 5000);
  long m1_sets = set_calls(fx->servers[1]);

  /* M2 holds its writes back; M0 applies the release and announces it: the
   * waiter wakes, its attempt wins M0, loses M1 (still held) and waits for
   * M2. */
  assert_int_equal(
      rh_server_command(fx->servers[2], buf, sizeof buf, "CLIENT PAUSE %d WRITE", PAUSE_MS), 0);
  assert_string_equal(buf, "OK");
  release_on(fx->servers[0], res);
  staggered_probe_t m0 = {fx->servers[0], res, 0}, m1 = {fx->servers[1], res, m1_sets};
  int attempt_out = rh_wait_until(attempt_set_on_m0, &m0, PAUSE_MS) &&
                    rh_wait_until(attempt_reached_m1, &m1, PAUSE_MS);
  /* M1 applies the release while that attempt is still undecided. */
  uint64_t t_release = rh_now_ms();
  release_on(fx->servers[1], res);
  int woke = fx_call_join(&w, (int)FALLBACK_MS + 5000);

  if (!attempt_out)
    print_message("note: the woken attempt was not seen on M0 and M1 in time; "
                  "the scenario may not have been reproduced\n");
  assert_true(woke);
  assert_int_equal(w.rc, REDLOCK_OK);
  /* Later: its announcement during the attempt was lost. */
  fx_assert_woken(w.t_done - t_release, BOUND_MS, FALLBACK_MS, "the second master's release");
  assert_true(fx_holding(fx, fx->n, res, redlock_lock_value(w.lock)) >= fx->n / 2 + 1);
  assert_int_equal(redlock_unlock(c, w.lock), REDLOCK_OK);
}

/* ---- expiry: no publication, the fallback retry ------------------------------------------ */

static void test_wait_fallback_after_foreign_expiry(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:wait:foreign-expiry";
  redlock_t *c = fx_open(fx, 0, fx_options_retry(fx, 0, REDLOCK_LOG_WARN, -1, 100, 0));
  redlock_lock_t *lock = NULL;
  char buf[64];

  /* A holder that crashes: its keys expire, nobody publishes. */
  for (size_t i = 0; i < fx->n; i++)
    assert_int_equal(
        rh_server_command(fx->servers[i], buf, sizeof buf, "SET %s crashed-holder PX 300", res), 0);
  uint64_t t0 = rh_now_ms();
  assert_int_equal(redlock_trylock(c, res, 1000, &lock), REDLOCK_ELOCKED);
  assert_int_equal(redlock_lock_wait(c, res, 1000, 5000, &lock), REDLOCK_OK);
  uint64_t elapsed = rh_now_ms() - t0;
  assert_true(elapsed < 3000);
  /* A quorum (the foreign keys expired a little apart: the last master may
   * still have refused). */
  assert_true(fx_holding(fx, fx->n, res, redlock_lock_value(lock)) >= fx->n / 2 + 1);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

static void test_wait_fallback_after_holder_expiry(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:wait:holder-expiry";
  redlock_t *h = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *c = fx_open(fx, 1, fx_options_retry(fx, 1, REDLOCK_LOG_WARN, -1, 100, 0));
  redlock_lock_t *held = NULL, *lock = NULL;

  assert_int_equal(fx_trylock_until(h, res, 300, 5000, &held), REDLOCK_OK);
  uint64_t t0 = rh_now_ms();
  assert_int_equal(redlock_lock_wait(c, res, 5000, 5000, &lock), REDLOCK_OK);
  assert_true(rh_now_ms() - t0 < 3000);
  assert_true(redlock_lock_is_lost(held));
  size_t on = fx_holding(fx, fx->n, res, redlock_lock_value(lock));
  assert_true(on >= fx->n / 2 + 1);
  /* The old holder's late unlock finds nothing of its own and leaves the
   * new holder's keys in place. */
  assert_int_equal(redlock_unlock(h, held), REDLOCK_ELOST);
  assert_int_equal(fx_holding(fx, fx->n, res, redlock_lock_value(lock)), on);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

/* ---- many waiters ------------------------------------------------------------------------------
 */

#define N_WAITERS 4
#define ROUNDS_EACH 3

typedef struct {
  fx_t *fx;
  const char *res;
  pthread_mutex_t mu;
  int inside;
  int overlaps;
  int failures;
  int first_error;
  int not_on_quorum;
  unsigned acquisitions;
  int order[N_WAITERS * ROUNDS_EACH];
  fx_event_t done;
} crowd_t;

typedef struct {
  crowd_t *crowd;
  redlock_t *client;
  int id;
} crowd_member_t;

static void crowd_error(crowd_t *crowd, int rc) {
  pthread_mutex_lock(&crowd->mu);
  if (crowd->failures++ == 0)
    crowd->first_error = rc;
  pthread_mutex_unlock(&crowd->mu);
}

static void *crowd_main(void *arg) {
  crowd_member_t *me = arg;
  crowd_t *crowd = me->crowd;
  for (int round = 0; round < ROUNDS_EACH; round++) {
    redlock_lock_t *lock = NULL;
    int rc = redlock_lock_wait(me->client, crowd->res, 5000, WAIT_MS, &lock);
    if (rc != REDLOCK_OK) {
      crowd_error(crowd, rc);
      continue;
    }
    pthread_mutex_lock(&crowd->mu);
    if (crowd->inside++ != 0)
      crowd->overlaps++;
    crowd->order[crowd->acquisitions++] = me->id;
    pthread_mutex_unlock(&crowd->mu);

    /* Inside: our value is on a quorum of masters (no cmocka asserts off
     * the main thread: record, check later). */
    size_t on = 0;
    for (size_t i = 0; i < crowd->fx->n; i++) {
      char buf[128];
      if (rh_server_command(crowd->fx->servers[i], buf, sizeof buf, "GET %s", crowd->res) == 0 &&
          strcmp(buf, redlock_lock_value(lock)) == 0)
        on++;
    }
    pthread_mutex_lock(&crowd->mu);
    if (on < crowd->fx->n / 2 + 1)
      crowd->not_on_quorum++;
    crowd->inside--;
    pthread_mutex_unlock(&crowd->mu);
    rc = redlock_unlock(me->client, lock);
    if (rc != REDLOCK_OK)
      crowd_error(crowd, rc);
  }
  fx_event_post(&crowd->done);
  return NULL;
}

static void test_wait_many_waiters(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:wait:crowd";
  redlock_t *h = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *w1 = fx_open(fx, 1, fx_options_retry(fx, 1, REDLOCK_LOG_WARN, -1, FALLBACK_MS, 0));
  redlock_t *w2 = fx_open(fx, 2, fx_options_retry(fx, 2, REDLOCK_LOG_WARN, -1, FALLBACK_MS, 0));
  redlock_lock_t *held = NULL;
  crowd_t crowd;
  memset(&crowd, 0, sizeof crowd);
  crowd.fx = fx;
  crowd.res = res;
  pthread_mutex_init(&crowd.mu, NULL);
  fx_event_init(&crowd.done);
  crowd_member_t members[N_WAITERS];
  pthread_t threads[N_WAITERS];

  assert_int_equal(fx_trylock_until(h, res, 20000, 5000, &held), REDLOCK_OK);
  for (int i = 0; i < N_WAITERS; i++) {
    members[i].crowd = &crowd;
    members[i].client = i % 2 ? w2 : w1;
    members[i].id = i;
    assert_int_equal(pthread_create(&threads[i], NULL, crowd_main, &members[i]), 0);
  }
  /* Both clients wait (one subscriber connection per client and master). */
  fx_assert_subscribed(fx, res, 2, 5000);
  uint64_t t_unlock = rh_now_ms();
  assert_int_equal(redlock_unlock(h, held), REDLOCK_OK);

  /* All done well before a single fallback retry would have fired. */
  const uint64_t bound = FALLBACK_MS - 1000;
  int finished = 0;
  for (; finished < N_WAITERS; finished++) {
    uint64_t spent = rh_now_ms() - t_unlock;
    if (spent >= bound || !fx_event_wait(&crowd.done, (int)(bound - spent)))
      break;
  }
  uint64_t elapsed = rh_now_ms() - t_unlock;
  for (int i = 0; i < N_WAITERS; i++)
    pthread_join(threads[i], NULL); /* bounded by the wait budget */
  fx_event_destroy(&crowd.done);
  pthread_mutex_destroy(&crowd.mu);

  if (fx_verbose())
    print_message("crowd: all done %llu ms after the unlock\n", (unsigned long long)elapsed);
  if (crowd.failures != 0)
    fail_msg("%d calls failed, the first with %s", crowd.failures,
             redlock_err_name(crowd.first_error));
  assert_int_equal(crowd.overlaps, 0);
  assert_int_equal(crowd.not_on_quorum, 0);
  assert_int_equal(crowd.acquisitions, N_WAITERS * ROUNDS_EACH);
  if (finished < N_WAITERS) {
    print_message("client 1 log:\n%s", fx_log_text(fx, 1));
    print_message("client 2 log:\n%s", fx_log_text(fx, 2));
    fail_msg("only %d of %d waiters were done %llu ms after the unlock: a release did not "
             "wake a waiter (the fallback retry is %u ms)",
             finished, N_WAITERS, (unsigned long long)elapsed, FALLBACK_MS);
  }
}

FX_MAIN("safety: waits woken by releases", &fx_profile_safety,
        FX_TEST(test_wait_woken_other_client, 3), FX_TEST(test_wait_woken_same_client, 3),
        FX_TEST(test_wait_rewoken_by_later_release, 3),
        FX_TEST(test_wait_fallback_after_foreign_expiry, 3),
        FX_TEST(test_wait_fallback_after_holder_expiry, 3), FX_TEST(test_wait_many_waiters, 3))
