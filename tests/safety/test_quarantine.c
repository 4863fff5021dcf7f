/* test_quarantine.c: the restart quarantine (docs/safety.md §5) against
 * real redis-server processes, N = 5.
 *
 * The scenario it guards against: a master that restarts without persistence
 * forgets the keys it held.  Client A holds a lock whose keys live on exactly
 * 3 of the 5 masters (0, 1, 2: masters 3 and 4 were held by a foreign holder
 * when A locked, and that holder has let go since).  Master 0 is killed and
 * restarted empty: A's lock now survives on 2 masters only, a minority, while
 * A still believes (rightly, by its validity) that it holds it.  Masters 0, 3
 * and 4 would now grant the same resource to someone else.
 *  - B, with quarantine ON (same max TTL), must not get the lock while A's is
 *    valid: master 0's vote does not count until max TTL after its start.
 *    Checked for B connected before the restart (it notices the new run_id
 *    on reconnect) and for B2 opened after the restart (uptime < max TTL).
 *  - C, with quarantine OFF, does get it in the same situation, while A's
 *    validity is still positive: the scenario is real, two holders at once.
 *  - Once max TTL has passed since master 0's restart, B's votes from it
 *    count again; never earlier.
 *  - A lock with ttl > max TTL is refused with REDLOCK_EINVAL.
 * Clients with quarantine on wait out the initial quarantine of the freshly
 * started masters (max TTL 5000 ms) with probe locks and rh_wait_until;
 * nothing sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fixture.h"

#define MAX_TTL 5000u
#define TTL MAX_TTL
#define ALL5 0x1fu
#define SLOT_A 0
#define SLOT_B 1
#define SLOT_C 2
#define SLOT_B2 3

static redlock_options_t *quarantined_options(fx_t *fx, int slot, int log_level) {
  redlock_options_t *opts = fx_options(fx, slot, fx->n, log_level);
  assert_int_equal(redlock_options_set_quarantine(opts, 1), 0);
  assert_int_equal(redlock_options_set_max_ttl(opts, MAX_TTL), 0);
  return opts;
}

static void set_foreign(fx_t *fx, size_t i, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(fx->servers[i], buf, sizeof buf, "SET %s other PX 60000", key),
                   0);
  assert_string_equal(buf, "OK");
}

static void del_key(fx_t *fx, size_t i, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(fx->servers[i], buf, sizeof buf, "DEL %s", key), 0);
}

static void wait_absent(fx_t *fx, const size_t *servers, size_t n, const char *key) {
  for (size_t k = 0; k < n; k++)
    if (!fx_wait_key_absent(fx->servers[servers[k]], key, 3000))
      fail_msg("key %s still on master %zu", key, servers[k]);
}

static void test_quarantine_blocks_forgetful_master(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:quarantine";
  const char *const many[] = {"sf:quarantine:x", "sf:quarantine:y"};
  redlock_t *a = fx_open(fx, SLOT_A, quarantined_options(fx, SLOT_A, REDLOCK_LOG_WARN));
  redlock_t *b = fx_open(fx, SLOT_B, quarantined_options(fx, SLOT_B, REDLOCK_LOG_WARN));
  redlock_t *c = fx_open(fx, SLOT_C, fx_options(fx, SLOT_C, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *lock_a = NULL, *lock_b = NULL, *lock_c = NULL;
  const size_t free_now[] = {0, 3, 4};

  /* ttl above max TTL: refused before anything is sent. */
  assert_int_equal(redlock_trylock(a, res, MAX_TTL + 1, &lock_a), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock(a, res, MAX_TTL + 1, &lock_a), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_wait(a, res, MAX_TTL + 1, 100, &lock_a), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_many(a, many, 2, MAX_TTL + 1, &lock_a), REDLOCK_EINVAL);
  assert_null(lock_a);

  /* The masters are fresh: wait until B's votes count on all five (the
   * initial quarantine, max TTL), so that what B sees later is the restart. */
  if (!fx_wait_votes_count(fx, b, fx->n, ALL5, 10000))
    fail_msg("B's initial quarantine did not end; log:\n%s", fx_log_text(fx, SLOT_B));
  fx_log_clear(fx, SLOT_B); /* from here on, only what the restart causes */

  /* A locks on exactly masters 0, 1, 2: a foreign holder has 3 and 4. */
  set_foreign(fx, 3, res);
  set_foreign(fx, 4, res);
  int rc = fx_trylock_until(a, res, TTL, 10000, &lock_a);
  if (rc != REDLOCK_OK)
    fail_msg("A could not lock (%s); log:\n%s", redlock_err_name(rc), fx_log_text(fx, SLOT_A));
  char value_a[64];
  snprintf(value_a, sizeof value_a, "%s", redlock_lock_value(lock_a));
  for (size_t i = 0; i < 3; i++)
    assert_true(fx_key_is(fx->servers[i], res, value_a));
  assert_true(fx_key_is(fx->servers[3], res, "other"));
  assert_true(fx_key_is(fx->servers[4], res, "other"));

  /* The foreign holder lets go; master 0 restarts and forgets A's key. */
  del_key(fx, 3, res);
  del_key(fx, 4, res);
  uint64_t t_restart = rh_now_ms();
  assert_int_equal(rh_server_restart(fx->servers[0]), 0);
  assert_true(fx_key_absent(fx->servers[0], res));
  fx_assert_saw_restart(fx, SLOT_B, 0, 1);
  fx_assert_saw_restart(fx, SLOT_C, 0, 1);

  /* B (connected before the restart) may not take it: masters 3 and 4 say
   * yes, 1 and 2 no, and master 0's yes does not count. */
  rc = redlock_trylock(b, res, TTL, &lock_b);
  if (rc == REDLOCK_OK)
    fail_msg("B got the lock while A's (validity %lld ms) lives on 2 of 5 masters: the "
             "restarted master's vote counted; log:\n%s",
             (long long)redlock_lock_validity_ms(lock_a), fx_log_text(fx, SLOT_B));
  assert_int_equal(rc, REDLOCK_ELOCKED);
  assert_null(lock_b);
  /* (Which votes the round had when it was decided depends on the order the
   * replies came in: it is decided as soon as it is lost.  C below, identical
   * but for the quarantine, is the contrast.) */
  assert_true(redlock_lock_validity_ms(lock_a) > 0);
  wait_absent(fx, free_now, 3, res); /* B's failed attempt is released */

  /* B2, opened after the restart: master 0's uptime is below max TTL. */
  redlock_t *b2 = fx_open(fx, SLOT_B2, quarantined_options(fx, SLOT_B2, REDLOCK_LOG_WARN));
  if (!fx_wait_votes_count(fx, b2, fx->n, ALL5 & ~1u, 3000))
    fail_msg("B2's votes from masters 1-4 do not count; log:\n%s", fx_log_text(fx, SLOT_B2));
  char label0[64], needle[128];
  fx_label(fx->servers[0], label0, sizeof label0);
  snprintf(needle, sizeof needle, "master %s started ", label0); /* "... s ago: ..." */
  if (!fx_log_contains(fx, SLOT_B2, needle))
    fail_msg("B2 did not put the restarted master in quarantine; log:\n%s",
             fx_log_text(fx, SLOT_B2));
  rc = redlock_trylock(b2, res, TTL, &lock_b);
  if (rc == REDLOCK_OK)
    fail_msg("B2 got the lock while A's (validity %lld ms) lives on 2 of 5 masters",
             (long long)redlock_lock_validity_ms(lock_a));
  assert_int_equal(rc, REDLOCK_ELOCKED);
  assert_true(redlock_lock_validity_ms(lock_a) > 0);
  wait_absent(fx, free_now, 3, res);

  /* C, quarantine off, same situation: it gets the lock, while A's is still
   * valid.  This is the double grant the quarantine prevents. */
  rc = fx_trylock_until(c, res, TTL, 2000, &lock_c);
  int64_t validity_a = redlock_lock_validity_ms(lock_a);
  if (rc != REDLOCK_OK)
    fail_msg("C (quarantine off) did not get the lock (%s): the scenario is not what it should "
             "be; log:\n%s",
             redlock_err_name(rc), fx_log_text(fx, SLOT_C));
  if (validity_a <= 0)
    fail_msg("A's lock expired (%lld ms) before C's grant: the scenario took too long",
             (long long)validity_a);
  for (size_t k = 0; k < 3; k++)
    assert_true(fx_key_is(fx->servers[free_now[k]], res, redlock_lock_value(lock_c)));
  assert_true(fx_key_is(fx->servers[1], res, value_a));
  assert_true(fx_key_is(fx->servers[2], res, value_a));
  assert_int_equal(redlock_unlock(c, lock_c), REDLOCK_OK);
  /* A's lock is on 2 of 5: its release reaches no quorum. */
  assert_int_equal(redlock_unlock(a, lock_a), REDLOCK_ELOST);

  /* The quarantine ends: with a foreign holder on 3 and 4, B can only win
   * with master 0's vote, and gets it back after max TTL.  (That it is not
   * back *before* max TTL since the restart is the next test's subject.) */
  set_foreign(fx, 3, res);
  set_foreign(fx, 4, res);
  rc = fx_trylock_until(b, res, TTL, 10000, &lock_b);
  uint64_t t_won = rh_now_ms();
  if (rc != REDLOCK_OK)
    fail_msg("B never got master 0's vote back (%s); log:\n%s", redlock_err_name(rc),
             fx_log_text(fx, SLOT_B));
  assert_true(t_won > t_restart);
  assert_true(fx_key_is(fx->servers[0], res, redlock_lock_value(lock_b)));
  assert_int_equal(redlock_unlock(b, lock_b), REDLOCK_OK);
}

/* ---- the quarantine lasts max TTL since the master's start ------------------------------ */

#define SHORT_MAX_TTL 3000u

static long wall_frac_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_nsec / 1000000L;
}

static int late_in_a_second(void *arg) {
  (void)arg;
  long ms = wall_frac_ms();
  return ms >= 800 && ms < 880;
}

static int wall_second_reached(void *arg) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec >= *(const time_t *)arg;
}

/* Redis reports uptime_in_seconds as (wall second now) - (wall second of its
 * start), both truncated: a master started at x.85 s reports an uptime of
 * 1 s at (x+1).05 s, when it is 0.2 s old.  The quarantine must still last
 * max TTL from the start (docs/safety.md §5: its votes do not count until max
 * TTL has passed since its start), whatever the rounding.  The test makes
 * that case happen on purpose: it restarts the master late in a wall-clock
 * second and opens the client just after the next second began. */
static void test_quarantine_lasts_max_ttl_since_start(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:quarantine:rounding";
  uint64_t t_restart = 0;
  time_t start_second = 0;
  int placed = 0;

  for (int attempt = 0; attempt < 5 && !placed; attempt++) {
    assert_true(rh_wait_until(late_in_a_second, NULL, 2000));
    struct timespec before, after;
    clock_gettime(CLOCK_REALTIME, &before);
    t_restart = rh_now_ms();
    assert_int_equal(rh_server_restart(fx->servers[0]), 0);
    clock_gettime(CLOCK_REALTIME, &after);
    /* Started and ready within the same wall second: its start second is known. */
    placed = before.tv_sec == after.tv_sec;
    start_second = before.tv_sec;
  }
  if (!placed)
    skip(); /* the restart never fit in 120 ms of a wall second: a very slow machine */
  time_t next = start_second + 1;
  assert_true(rh_wait_until(wall_second_reached, &next, 2000));
  char info[4096];
  assert_int_equal(rh_server_command(fx->servers[0], info, sizeof info, "INFO server"), 0);
  const char *up = strstr(info, "uptime_in_seconds:");
  assert_non_null(up);
  long reported = strtol(up + strlen("uptime_in_seconds:"), NULL, 10);
  uint64_t real_ms = rh_now_ms() - t_restart;

  /* A client over this master only: it wins iff the master's vote counts. */
  redlock_options_t *opts = fx_options(fx, 0, 1, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_quarantine(opts, 1), 0);
  assert_int_equal(redlock_options_set_max_ttl(opts, SHORT_MAX_TTL), 0);
  redlock_t *d = fx_open(fx, 0, opts);
  redlock_lock_t *lock = NULL;
  int rc = fx_trylock_until(d, res, SHORT_MAX_TTL, 3 * (int)SHORT_MAX_TTL, &lock);
  uint64_t t_won = rh_now_ms();
  assert_int_equal(rc, REDLOCK_OK);
  assert_int_equal(redlock_unlock(d, lock), REDLOCK_OK);
  if (t_won - t_restart < SHORT_MAX_TTL)
    fail_msg("the restarted master's vote counted %llu ms after its restart, before max TTL "
             "(%u ms): INFO said uptime_in_seconds:%ld when it was at most %llu ms old, and the "
             "quarantine was cut by that much; log:\n%s",
             (unsigned long long)(t_won - t_restart), SHORT_MAX_TTL, reported,
             (unsigned long long)real_ms, fx_log_text(fx, 0));
}

FX_MAIN("safety: restart quarantine", &fx_profile_safety,
        FX_TEST(test_quarantine_blocks_forgetful_master, 5),
        FX_TEST(test_quarantine_lasts_max_ttl_since_start, 1))
