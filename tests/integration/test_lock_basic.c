/* test_lock_basic.c: integration tests of the lock life cycle against real
 * redis-server processes: lock / trylock / extend / unlock at N = 1, 3, 5,
 * what actually lands in Redis (value, PTTL, database), contention between
 * two clients, expiry, and the EVALSHA -> EVAL fallback after SCRIPT FLUSH.
 * Waits are event-driven with deadlines (rh_wait_until), never bare sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define TTL_LONG 10000u

/* Masters holding key = value right now. */
static size_t count_holding(fx_t *fx, size_t n, const char *key, const char *value) {
  size_t holding = 0;
  for (size_t i = 0; i < n; i++)
    holding += (size_t)fx_key_is(fx->servers[i], key, value);
  return holding;
}

/* For checks on every master after a call that returned once a quorum
 * answered: `ok` is the result of a wait with a deadline.  A master the
 * client gave up on (request timeout, only on a loaded machine; the log
 * says so) may legitimately have missed the command. */
static void expect_on_master(fx_t *fx, size_t i, int ok, const char *what) {
  if (ok)
    return;
  if (fx_log_master_troubled(fx, FX_ALL, fx->servers[i])) {
    print_message("note: master %zu: %s: missed after a timeout (machine loaded?)\n", i, what);
    return;
  }
  fail_msg("master %zu: %s; log:\n%s", i, what, fx_log_text(fx, FX_ALL));
}

/* A call that won returns once a quorum has answered: those masters hold
 * the value now; the others were sent the same command and apply it a
 * moment later (nobody competes in the tests that use this), unless the
 * client gave up on them (the log says so; only a loaded machine does it). */
static void assert_held_everywhere(fx_t *fx, size_t n, const char *key, const char *value,
                                   uint32_t ttl) {
  size_t holding = count_holding(fx, n, key, value);
  if (holding < n / 2 + 1)
    fail_msg("%s held on %zu of %zu masters right after the call", key, holding, n);
  for (size_t i = 0; i < n; i++)
    expect_on_master(fx, i,
                     fx_wait_pttl_in(fx->servers[i], key, 0, ttl, 2000) &&
                         fx_key_is(fx->servers[i], key, value),
                     "key missing or not ours, or PTTL out of (0, ttl]");
}

/* Same for a release: a quorum has deleted the key, the rest follow. */
static void assert_absent_everywhere(fx_t *fx, size_t n, const char *key) {
  size_t absent = 0;
  for (size_t i = 0; i < n; i++)
    absent += (size_t)fx_key_absent(fx->servers[i], key);
  if (absent < n / 2 + 1)
    fail_msg("%s still on %zu of %zu masters right after the release", key, n - absent, n);
  for (size_t i = 0; i < n; i++)
    expect_on_master(fx, i, fx_wait_key_absent(fx->servers[i], key, 2000),
                     "key still there after the release");
}

/* ---- life cycle at N = 1, 3, 5 ------------------------------------------------------ */

static void lock_cycle(fx_t *fx) {
  const char *res = "it:cycle";
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  char value[64];

  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_lock(c, res, TTL_LONG, &lock), REDLOCK_OK);
  assert_non_null(lock);
  int64_t validity = redlock_lock_validity_ms(lock);
  assert_true(validity > 0 && validity <= (int64_t)TTL_LONG);
  assert_false(redlock_lock_is_lost(lock));
  assert_string_equal(redlock_lock_resource(lock), res);
  assert_int_equal(redlock_lock_fence(lock), 0); /* fencing is off by default */
  fx_copy_value(value, sizeof value, lock);
  assert_held_everywhere(fx, fx->n, res, value, TTL_LONG);

  /* Held on every master: a second acquisition is refused by a quorum. */
  /* A non-NULL sentinel: a failed call must set *out to NULL. */
  redlock_lock_t *other = (redlock_lock_t *)&other;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL_LONG, &other), REDLOCK_ELOCKED);
  assert_null(other);
  /* The refused attempt must not have touched our key. */
  assert_held_everywhere(fx, fx->n, res, value, TTL_LONG);

  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, TTL_LONG), REDLOCK_OK);
  assert_held_everywhere(fx, fx->n, res, value, TTL_LONG);

  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_absent_everywhere(fx, fx->n, res);

  /* Free again: a single attempt wins, with a fresh value. */
  char value2[64];
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL_LONG, &lock), REDLOCK_OK);
  fx_copy_value(value2, sizeof value2, lock);
  assert_string_not_equal(value, value2);
  assert_held_everywhere(fx, fx->n, res, value2, TTL_LONG);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_absent_everywhere(fx, fx->n, res);
}

static void test_cycle_n1(void **state) { lock_cycle(*state); }
static void test_cycle_n3(void **state) { lock_cycle(*state); }
static void test_cycle_n5(void **state) { lock_cycle(*state); }

/* ---- contention between two clients -------------------------------------------------- */

static void test_contention_n3(void **state) {
  fx_t *fx = *state;
  const char *res = "it:contended";
  redlock_t *a = fx_open(fx, 0, fx_options(fx, 0, 3, REDLOCK_LOG_WARN));
  redlock_t *b = fx_open(fx, 1, fx_options(fx, 0, 3, REDLOCK_LOG_WARN));
  char value_a[64], value_b[64];

  redlock_lock_t *la = NULL, *lb = NULL;
  la = fx_lock_ok(fx, a, res, TTL_LONG, value_a, sizeof value_a);
  /* Let A's SET reach the last master before B competes: otherwise B may
   * legitimately win that one master (Redis orders commands per connection,
   * not across connections), which is fine for Redlock but not this test. */
  assert_held_everywhere(fx, 3, res, value_a, TTL_LONG);

  FX_ASSERT_RC(fx, b, redlock_trylock(b, res, TTL_LONG, &lb), REDLOCK_ELOCKED);
  assert_null(lb);
  /* With retries (2 x 20..40 ms) it is still held by A. */
  FX_ASSERT_RC(fx, b, redlock_lock(b, res, TTL_LONG, &lb), REDLOCK_ELOCKED);
  assert_null(lb);
  /* B's lost rounds release with B's value only: A's key is intact. */
  assert_held_everywhere(fx, 3, res, value_a, TTL_LONG);

  FX_ASSERT_RC(fx, a, redlock_unlock(a, la), REDLOCK_OK);
  FX_ASSERT_RC(fx, b, redlock_trylock(b, res, TTL_LONG, &lb), REDLOCK_OK);
  fx_copy_value(value_b, sizeof value_b, lb);
  /* B raced A's release on the master that answered A last: B holds a
   * quorum, and no master keeps A's value (its release follows). */
  assert_true(count_holding(fx, 3, res, value_b) >= 2);
  for (size_t i = 0; i < 3; i++) {
    char got[128];
    assert_int_equal(rh_server_command(fx->servers[i], got, sizeof got, "GET %s", res), 0);
    if (strcmp(got, value_a) == 0)
      expect_on_master(fx, i, fx_wait_key_absent(fx->servers[i], res, 2000),
                       "A's value outlives A's unlock");
  }
  FX_ASSERT_RC(fx, b, redlock_unlock(b, lb), REDLOCK_OK);
  assert_absent_everywhere(fx, 3, res);
}

/* ---- expiry ------------------------------------------------------------------------------ */

typedef struct {
  fx_t *fx;
  const char *key;
  const redlock_lock_t *lock;
} expiry_wait_t;

static int lock_validity_gone(void *arg) {
  expiry_wait_t *w = arg;
  return redlock_lock_validity_ms(w->lock) <= 0;
}

static int key_gone_everywhere(void *arg) {
  expiry_wait_t *w = arg;
  for (size_t i = 0; i < w->fx->n; i++)
    if (!fx_key_absent(w->fx->servers[i], w->key))
      return 0;
  return 1;
}

static void test_expiry_n3(void **state) {
  fx_t *fx = *state;
  const char *res = "it:expiring";
  const uint32_t ttl = 300;
  redlock_t *a = fx_open(fx, 0, fx_options(fx, 0, 3, REDLOCK_LOG_WARN));
  redlock_t *b = fx_open(fx, 1, fx_options(fx, 0, 3, REDLOCK_LOG_WARN));

  redlock_lock_t *la = NULL, *lb = NULL;
  FX_ASSERT_RC(fx, a, redlock_lock(a, res, ttl, &la), REDLOCK_OK);
  int64_t validity = redlock_lock_validity_ms(la);
  assert_true(validity > 0 && validity <= (int64_t)ttl);

  /* Local validity ends before the masters' TTL (drift is subtracted)... */
  expiry_wait_t w = {fx, res, la};
  assert_true(rh_wait_until(lock_validity_gone, &w, 5000));
  assert_true(redlock_lock_is_lost(la));
  /* ...and the masters expire the key themselves. */
  assert_true(rh_wait_until(key_gone_everywhere, &w, 5000));

  /* An expired lock cannot be extended: it may be someone else's by now. */
  FX_ASSERT_RC(fx, a, redlock_extend(a, la, TTL_LONG), REDLOCK_ELOST);

  char value_b[64];
  FX_ASSERT_RC(fx, b, redlock_trylock(b, res, TTL_LONG, &lb), REDLOCK_OK);
  fx_copy_value(value_b, sizeof value_b, lb);

  /* A's late unlock is a compare-and-delete: it reports the loss and must
   * leave B's lock alone. */
  FX_ASSERT_RC(fx, a, redlock_unlock(a, la), REDLOCK_ELOST);
  assert_held_everywhere(fx, 3, res, value_b, TTL_LONG);
  FX_ASSERT_RC(fx, b, redlock_unlock(b, lb), REDLOCK_OK);
  assert_absent_everywhere(fx, 3, res);
}

/* ---- extend -------------------------------------------------------------------------------- */

static void test_extend_sets_pttl_n3(void **state) {
  fx_t *fx = *state;
  const char *res = "it:extend";
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, 3, REDLOCK_LOG_WARN));
  char value[64];
  redlock_lock_t *lock = fx_lock_ok(fx, c, res, 2000, value, sizeof value);
  assert_true(redlock_lock_validity_ms(lock) <= 2000);

  /* Longer: both the local validity and every master's PTTL move past the
   * old TTL. */
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, 20000), REDLOCK_OK);
  int64_t validity = redlock_lock_validity_ms(lock);
  assert_true(validity > 2000 && validity <= 20000);
  for (size_t i = 0; i < 3; i++) {
    expect_on_master(fx, i, fx_wait_pttl_in(fx->servers[i], res, 2000, 20000, 2000),
                     "PTTL not in (2000, 20000] after extend to 20000");
    expect_on_master(fx, i, fx_key_is(fx->servers[i], res, value), "value changed");
  }

  /* Shorter: "sets the TTL to ttl_ms from now", not "adds". */
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, 1000), REDLOCK_OK);
  validity = redlock_lock_validity_ms(lock);
  assert_true(validity > 0 && validity <= 1000);
  for (size_t i = 0; i < 3; i++)
    expect_on_master(fx, i, fx_wait_pttl_in(fx->servers[i], res, 0, 1000, 2000),
                     "PTTL not in (0, 1000] after extend to 1000");

  /* Out of range TTLs are refused before anything is sent. */
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, 0), REDLOCK_EINVAL);

  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_absent_everywhere(fx, 3, res);
}

/* ---- SCRIPT FLUSH: NOSCRIPT -> EVAL ------------------------------------------------------ */

static void flush_scripts(fx_t *fx) {
  char buf[64];
  for (size_t i = 0; i < fx->n; i++) {
    assert_int_equal(rh_server_command(fx->servers[i], buf, sizeof buf, "SCRIPT FLUSH"), 0);
    assert_string_equal(buf, "OK");
  }
}

static void test_script_flush_n3(void **state) {
  fx_t *fx = *state;
  const char *res = "it:flushed";
  /* Fenced: its extension runs extend.lua on a master with Lua even where
   * the master has SET IFEQ (a plain lock's would go script-free there). */
  redlock_options_t *opts = fx_options(fx, 0, 3, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_fencing(opts, 1), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  char value[64];
  redlock_lock_t *lock = fx_lock_ok(fx, c, res, TTL_LONG, value, sizeof value);

  /* Masters lose their script cache (SCRIPT FLUSH, or a restart the
   * connection did not notice): extend must fall back to EVAL. */
  /* The call returns once a quorum answered; the last master's NOSCRIPT
   * and its EVAL may come later, hence the waits below. */
  flush_scripts(fx);
  FX_ASSERT_RC(fx, c, redlock_extend(c, lock, 20000), REDLOCK_OK);
  for (size_t i = 0; i < 3; i++)
    expect_on_master(fx, i, fx_wait_pttl_in(fx->servers[i], res, TTL_LONG, 20000, 2000),
                     "extend after SCRIPT FLUSH not applied");
  assert_true(fx_log_contains(fx, FX_ALL, "script cache was flushed"));

  /* And again for the release script (DELIFEQ where the master has it). */
  flush_scripts(fx);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  for (size_t i = 0; i < 3; i++)
    expect_on_master(fx, i, fx_wait_key_absent(fx->servers[i], res, 2000),
                     "unlock after SCRIPT FLUSH not applied");

  /* The multi-key acquire script, too. */
  flush_scripts(fx);
  const char *many[] = {"it:flushed:a", "it:flushed:b"};
  FX_ASSERT_RC(fx, c, redlock_lock_many(c, many, 2, TTL_LONG, &lock), REDLOCK_OK);
  fx_copy_value(value, sizeof value, lock);
  for (size_t k = 0; k < 2; k++)
    for (size_t i = 0; i < 3; i++)
      expect_on_master(fx, i, fx_wait_key_is(fx->servers[i], many[k], value, 2000),
                       "lock_many after SCRIPT FLUSH not applied");
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  for (size_t k = 0; k < 2; k++)
    for (size_t i = 0; i < 3; i++)
      expect_on_master(fx, i, fx_wait_key_absent(fx->servers[i], many[k], 2000),
                       "unlock of lock_many not applied");
}

/* ---- lock_many ------------------------------------------------------------------------------ */

static void test_lock_many_n3(void **state) {
  fx_t *fx = *state;
  const char *many[] = {"it:many:a", "it:many:b", "it:many:c"};
  redlock_t *a = fx_open(fx, 0, fx_options(fx, 0, 3, REDLOCK_LOG_WARN));
  redlock_t *b = fx_open(fx, 1, fx_options(fx, 0, 3, REDLOCK_LOG_WARN));
  redlock_lock_t *la = NULL, *lb = NULL;
  char value[64];

  FX_ASSERT_RC(fx, a, redlock_lock_many(a, many, 3, TTL_LONG, &la), REDLOCK_OK);
  fx_copy_value(value, sizeof value, la);
  /* Everywhere before B competes (see test_contention_n3). */
  for (size_t k = 0; k < 3; k++)
    assert_held_everywhere(fx, 3, many[k], value, TTL_LONG);

  /* One of A's resources is enough to refuse B, and all-or-nothing means B
   * leaves no key of its own behind. */
  const char *overlap[] = {"it:many:x", "it:many:c"};
  FX_ASSERT_RC(fx, b, redlock_trylock(b, "it:many:b", TTL_LONG, &lb), REDLOCK_ELOCKED);
  FX_ASSERT_RC(fx, b, redlock_lock_many(b, overlap, 2, TTL_LONG, &lb), REDLOCK_ELOCKED);
  assert_null(lb);
  assert_absent_everywhere(fx, 3, "it:many:x");

  FX_ASSERT_RC(fx, a, redlock_extend(a, la, 20000), REDLOCK_OK);
  for (size_t k = 0; k < 3; k++)
    for (size_t i = 0; i < 3; i++)
      expect_on_master(fx, i, fx_wait_pttl_in(fx->servers[i], many[k], TTL_LONG, 20000, 2000),
                       "extend of lock_many not applied");

  FX_ASSERT_RC(fx, a, redlock_unlock(a, la), REDLOCK_OK);
  for (size_t k = 0; k < 3; k++)
    assert_absent_everywhere(fx, 3, many[k]);
}

/* ---- database selection ---------------------------------------------------------------------- */

static void test_db_selection_n1(void **state) {
  fx_t *fx = *state;
  const char *res = "it:db3";
  char uri[600];
  snprintf(uri, sizeof uri, "%s/3", rh_server_uri(fx->servers[0]));
  const char *uris[] = {uri};
  redlock_t *c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 1, REDLOCK_LOG_WARN));
  redlock_lock_t *lock = NULL;
  char value[64], buf[128];

  lock = fx_lock_ok(fx, c, res, TTL_LONG, value, sizeof value);

  /* The harness connection is on db 0; a script can look into db 3 without
   * changing the connection's database. */
  static const char get_db3[] = "redis.call('select', 3) return redis.call('get', KEYS[1])";
  assert_int_equal(rh_server_command(fx->servers[0], buf, sizeof buf, "EVAL %s 1 %s", get_db3, res),
                   0);
  assert_string_equal(buf, value);
  assert_true(fx_key_absent(fx->servers[0], res)); /* not in db 0 */

  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  assert_int_equal(rh_server_command(fx->servers[0], buf, sizeof buf, "EVAL %s 1 %s", get_db3, res),
                   0);
  assert_string_equal(buf, "(nil)");
}

FX_MAIN("integration: lock basics", &fx_profile_integration, FX_TEST(test_cycle_n1, 1),
        FX_TEST(test_cycle_n3, 3), FX_TEST(test_cycle_n5, 5), FX_TEST(test_contention_n3, 3),
        FX_TEST(test_expiry_n3, 3), FX_TEST(test_extend_sets_pttl_n3, 3),
        FX_TEST(test_script_flush_n3, 3), FX_TEST(test_lock_many_n3, 3),
        FX_TEST(test_db_selection_n1, 1))
