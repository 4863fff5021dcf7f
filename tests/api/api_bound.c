/* api_bound.c: bounded holds (redlock_watch_bounded, redlock_elect_bounded)
 * against N = 3 real masters.
 *
 * Asserts:
 *  - a watched lock with a bound of 3 ttls is extended past its first ttl
 *    and held on a quorum until just before the bound; at the bound the
 *    lost callback runs exactly once with REDLOCK_LOST_MAX_HOLD (never
 *    before bound ms after the call that took the lock began), the key is
 *    gone on every master, and a waiter of another client (fallback poll
 *    10 s) is woken by the release within 2 s; the handle reports lost and
 *    unlock still frees it;
 *  - a bound already spent (shorter than the time since the grant) ends the
 *    hold at once, and the close frees the handle left unlocked;
 *  - an election with a bound: on_lost with REDLOCK_LOST_MAX_HOLD once per
 *    term, not before bound ms after the call, then a new (larger) term;
 *  - bad input: EINVAL (and *out NULL, no callback) for a NULL client, lock,
 *    name or callback, a bound of 0, a handle no longer live.
 * Waits are events and deadlines, never sleeps. */
#include "fixture.h"

/* As api_watch.c's: a starved machine still extends within a third of it. */
#define TTL 900u
#define BOUND (3 * TTL)
#define FALLBACK_MS 10000u
#define WAKE_BOUND_MS 2000u

static redlock_t *open_client(uint32_t retry_delay_ms) {
  redlock_options_t *opts = fx_options_retry(fx_group, 0, FX_NO_LOG, 0, retry_delay_ms, 0);
  return fx_open_free(fx_group, opts);
}

/* The lost callback's time, beside fx_lost_t's count and reason. */
typedef struct {
  fx_lost_t rec;
  atomic_ullong at_ms;
} timed_lost_t;

static void timed_lost_cb(redlock_lock_t *lock, int reason, void *arg) {
  timed_lost_t *t = arg;
  atomic_store(&t->at_ms, rh_now_ms());
  fx_lost_cb(lock, reason, &t->rec);
}

static void test_bound_releases_and_wakes(void **state) {
  (void)state;
  static timed_lost_t lost;
  fx_lost_init(&lost.rec);
  atomic_store(&lost.at_ms, 0);
  redlock_t *holder = open_client(10);
  redlock_t *waiter = open_client(FALLBACK_MS);
  FX_NAME(res, "bound");
  redlock_lock_t *lock = NULL;
  uint64_t t0 = rh_now_ms();
  assert_int_equal(redlock_trylock(holder, res, TTL, &lock), REDLOCK_OK);
  assert_int_equal(redlock_watch_bounded(holder, lock, BOUND, timed_lost_cb, &lost), REDLOCK_OK);
  fx_call_t w = {.fn = fx_call_lock_wait,
                 .client = waiter,
                 .name = res,
                 .ttl_ms = 5000,
                 .wait_ms = FALLBACK_MS + 5000};
  fx_call_start(&w);
  fx_assert_subscribed(fx_group, res, 1, 5000);
  /* Extended past its first ttl: held, with our value, on a quorum all along. */
  while (rh_now_ms() < t0 + TTL + TTL / 2)
    assert_true(fx_holding(fx_group, fx_group->n, res, redlock_lock_value(lock)) >=
                fx_group->n / 2 + 1);
  assert_int_equal(atomic_load(&lost.rec.calls), 0);

  assert_true(fx_lost_wait(&lost.rec, 1, (int)BOUND + 5000));
  assert_int_equal(atomic_load(&lost.rec.reason), REDLOCK_LOST_MAX_HOLD);
  assert_ptr_equal(atomic_load(&lost.rec.lock), lock);
  uint64_t at = atomic_load(&lost.at_ms);
  printf("  bound reached %llu ms after the lock call began (bound %u)\n",
         (unsigned long long)(at - t0), BOUND);
  assert_true(at >= t0 + BOUND); /* not before */
  assert_true(redlock_lock_is_lost(lock));

  /* The release wakes the waiter, long before its fallback poll. */
  assert_true(fx_call_join(&w, (int)FALLBACK_MS));
  assert_int_equal(w.rc, REDLOCK_OK);
  fx_assert_woken(w.t_done - at, WAKE_BOUND_MS, FALLBACK_MS, "the bound's release");
  assert_int_equal(redlock_unlock(waiter, w.lock), REDLOCK_OK);
  fx_assert_absent_everywhere(fx_group, res, 5000);
  /* The holder's handle is still its own to free; the release found nothing. */
  int rc = redlock_unlock(holder, lock);
  assert_true(rc == REDLOCK_OK || rc == REDLOCK_ELOST);
  fx_close_client(fx_group, holder);
  fx_close_client(fx_group, waiter);
  assert_int_equal(atomic_load(&lost.rec.calls), 1);
}

/* A lock of ttl 30 s watched with `bound`, after spinning spin_ms past its
 * grant: the lost callback says REDLOCK_LOST_MAX_HOLD once, and the key is
 * gone everywhere (with that ttl, only the release can have cleared it).
 * Then the handle is unlocked, or left to the close (which frees it). */
static void bound_ends_hold(const char *what, uint32_t bound, unsigned spin_ms, int unlock) {
  static fx_lost_t lost;
  fx_lost_init(&lost);
  redlock_t *holder = open_client(10);
  FX_NAME(res, what);
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(holder, res, 30000, &lock), REDLOCK_OK);
  uint64_t t = rh_now_ms();
  while (rh_now_ms() < t + spin_ms)
    ;
  assert_int_equal(redlock_watch_bounded(holder, lock, bound, fx_lost_cb, &lost), REDLOCK_OK);
  assert_true(fx_lost_wait(&lost, 1, 5000));
  assert_int_equal(atomic_load(&lost.reason), REDLOCK_LOST_MAX_HOLD);
  fx_assert_absent_everywhere(fx_group, res, 5000);
  if (unlock) {
    int rc = redlock_unlock(holder, lock);
    assert_true(rc == REDLOCK_OK || rc == REDLOCK_ELOST);
  }
  fx_close_client(fx_group, holder);
  assert_int_equal(atomic_load(&lost.calls), 1);
}

static void test_bound_alone_releases_everywhere(void **state) {
  (void)state;
  bound_ends_hold("bound-alone", 300, 0, 1);
}

/* A bound of 1 ms, spent before the watch starts (it counts from the grant):
 * the hold ends at once; the handle is left to the close. */
static void test_bound_already_spent(void **state) {
  (void)state;
  bound_ends_hold("bound-spent", 1, 2, 0);
}

/* ---- elections ---------------------------------------------------------------------- */

typedef struct {
  atomic_int elected, lost, reason;
  atomic_ullong term;
  atomic_ullong lost_ms;
  fx_event_t elected_ev, lost_ev;
} bounded_cand_t;

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  bounded_cand_t *c = arg;
  atomic_store(&c->term, term);
  atomic_fetch_add(&c->elected, 1);
  fx_event_post(&c->elected_ev);
}

static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  bounded_cand_t *c = arg;
  atomic_store(&c->reason, reason);
  atomic_store(&c->lost_ms, rh_now_ms());
  atomic_fetch_add(&c->lost, 1);
  fx_event_post(&c->lost_ev);
}

static void test_election_bound(void **state) {
  (void)state;
  static bounded_cand_t c;
  memset(&c, 0, sizeof c);
  fx_event_init(&c.elected_ev);
  fx_event_init(&c.lost_ev);
  redlock_t *client = open_client(10);
  FX_NAME(name, "bound-elect");
  redlock_election_t *e = NULL;
  uint64_t t0 = rh_now_ms();
  assert_int_equal(redlock_elect_bounded(client, name, TTL, BOUND, on_elected, on_lost, &c, &e),
                   REDLOCK_OK);
  assert_true(fx_event_wait(&c.elected_ev, 5000));
  uint64_t first = atomic_load(&c.term);
  assert_true(fx_event_wait(&c.lost_ev, (int)BOUND + 5000));
  assert_int_equal(atomic_load(&c.reason), REDLOCK_LOST_MAX_HOLD);
  /* Not before: the first term was granted after the call began. */
  assert_true(atomic_load(&c.lost_ms) >= t0 + BOUND);
  /* It campaigns again after its back-off, and wins a later term. */
  assert_true(fx_event_wait(&c.elected_ev, 5000));
  assert_true(atomic_load(&c.term) > first);
  assert_int_equal(redlock_resign(client, e), REDLOCK_OK);
  fx_assert_absent_everywhere(fx_group, name, 5000);
  fx_close_client(fx_group, client);
  assert_int_equal(atomic_load(&c.lost), 1);
  fx_event_destroy(&c.elected_ev);
  fx_event_destroy(&c.lost_ev);
}

/* ---- bad input ---------------------------------------------------------------------- */

static void never_lost(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)reason;
  (void)arg;
  fail_msg("a refused call ran its callback");
}

static void never_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  (void)term;
  (void)arg;
  fail_msg("a refused call ran its callback");
}

static void never_lost_term(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
  fail_msg("a refused call ran its callback");
}

static void test_bound_bad_input(void **state) {
  (void)state;
  redlock_t *client = open_client(10);
  FX_NAME(res, "bound-bad");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(client, res, 5000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_watch_bounded(NULL, lock, 100, never_lost, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch_bounded(client, NULL, 100, never_lost, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch_bounded(client, lock, 0, never_lost, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  /* A handle no longer live. */
  assert_int_equal(redlock_watch_bounded(client, lock, 100, never_lost, NULL), REDLOCK_EINVAL);

  redlock_election_t *const junk = (redlock_election_t *)(uintptr_t)1;
  redlock_election_t *e = junk;
  assert_int_equal(
      redlock_elect_bounded(client, res, 5000, 0, never_elected, never_lost_term, NULL, &e),
      REDLOCK_EINVAL);
  assert_null(e);
  e = junk;
  assert_int_equal(
      redlock_elect_bounded(NULL, res, 5000, 100, never_elected, never_lost_term, NULL, &e),
      REDLOCK_EINVAL);
  assert_null(e);
  assert_int_equal(
      redlock_elect_bounded(client, NULL, 5000, 100, never_elected, never_lost_term, NULL, &e),
      REDLOCK_EINVAL);
  assert_int_equal(redlock_elect_bounded(client, res, 5000, 100, NULL, never_lost_term, NULL, &e),
                   REDLOCK_EINVAL);
  assert_int_equal(
      redlock_elect_bounded(client, res, 5000, 0, never_elected, never_lost_term, NULL, NULL),
      REDLOCK_EINVAL);
  fx_close_client(fx_group, client);
}

FX_GROUP_MAIN(300, fx_group_test(test_bound_releases_and_wakes),
              fx_group_test(test_bound_alone_releases_everywhere),
              fx_group_test(test_bound_already_spent), fx_group_test(test_election_bound),
              fx_group_test(test_bound_bad_input))
