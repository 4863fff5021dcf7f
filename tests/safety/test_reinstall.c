/* test_reinstall.c: an extension re-installs the holder's record where it is
 * gone, so that a watched hold is not eroded while a majority of masters is
 * up at every moment (docs/safety.md §8.3).  Real masters:
 *  - an eroding schedule, on 5 masters, for a watched lock, a permit, a
 *    read hold and a write hold (ttl 2 s): masters 0 and 1 SIGSTOPped for
 *    2.5 s (a stopped master expires nothing, but once resumed it finds the
 *    keys' expiry past: they are gone), resumed; then master 2 stopped for
 *    1.5 s.  The hold must stay valid all along (polled every millisecond),
 *    no lost callback, and the record must be back on masters 0 and 1 after
 *    they resume, and on all five at the end.  Extensions that renew only
 *    where the record still is let it erode to 2 of 5, and the hold is lost
 *    while master 2 is stopped;
 *  - a re-install never takes a key held by another value: another value on
 *    one master is left alone (the extension still wins on the others), and
 *    a multi-key lock is all or nothing per master; the same for a permit's
 *    slot, a writer key next to another reader, a reader next to another
 *    writer;
 *  - fencing: a re-install raises the counter to the hold's token (never
 *    lowers it), for a lock, a permit and a write hold;
 *  - quarantine: a re-install by a master in restart quarantine does not
 *    count (it is an acquisition there), an extension of a key present
 *    there does (docs/safety.md §5).
 * Waits are deadlines (rh_wait_until), never sleeps: the stops last their
 * 2.5 s and 1.5 s because the schedule is what is tested, and the hold is
 * polled all through them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define TTL_MS 2000u
#define BACK_DEADLINE_MS 5000

typedef enum { KIND_LOCK, KIND_SEMAPHORE, KIND_READ, KIND_WRITE } kind_t;

static const char *kind_name(kind_t kind) {
  static const char *const names[] = {"lock", "permit", "read hold", "write hold"};
  return names[kind];
}

static int acquire(redlock_t *c, kind_t kind, const char *name, uint32_t ttl_ms,
                   redlock_lock_t **out) {
  switch (kind) {
  case KIND_LOCK:
    return redlock_lock(c, name, ttl_ms, out);
  case KIND_SEMAPHORE:
    return redlock_semaphore_acquire(c, name, 1, ttl_ms, 0, out);
  case KIND_READ:
    return redlock_rwlock_read(c, name, ttl_ms, 0, out);
  case KIND_WRITE:
    return redlock_rwlock_write(c, name, ttl_ms, 0, out);
  }
  return REDLOCK_EINVAL;
}

/* The key that holds a hold's record (fixture masters: no key prefix). */
static void record_key(kind_t kind, const char *name, char *buf, size_t size) {
  switch (kind) {
  case KIND_LOCK:
    snprintf(buf, size, "%s", name);
    break;
  case KIND_SEMAPHORE:
    fx_derived_name(buf, size, "", name, ":sem:0"); /* limit 1: the only slot */
    break;
  case KIND_READ:
    fx_derived_name(buf, size, "", name, ":rw:read");
    break;
  case KIND_WRITE:
    fx_derived_name(buf, size, "", name, ":rw:write");
    break;
  }
}

/* 1 when master i holds the record of `value` (a reader: its member). */
static int record_on(fx_t *fx, size_t i, kind_t kind, const char *key, const char *value) {
  char buf[128];
  if (kind == KIND_READ) {
    if (rh_server_command(fx->servers[i], buf, sizeof buf, "ZSCORE %s %s", key, value) != 0)
      return 0;
    return strcmp(buf, "(nil)") != 0;
  }
  if (rh_server_command(fx->servers[i], buf, sizeof buf, "GET %s", key) != 0)
    return 0;
  return strcmp(buf, value) == 0;
}

/* ---- the schedule -------------------------------------------------------------- */

typedef struct {
  atomic_int calls;
  atomic_int reason;
} lost_t;

static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  lost_t *lost = arg;
  atomic_store(&lost->reason, reason);
  atomic_fetch_add(&lost->calls, 1);
}

typedef struct {
  fx_t *fx;
  redlock_lock_t *hold;
  lost_t *lost;
  kind_t kind;
  const char *key;
  char value[64];
  int64_t min_validity;
  uint64_t until;     /* poll_for: time's up */
  unsigned want_mask; /* poll_back: masters that must hold the record */
  uint64_t last_check;
  char failure[256];
} watch_t;

/* The hold must stay valid, unlost, at every poll. */
static int hold_broken(watch_t *w) {
  if (w->failure[0] != '\0')
    return 1;
  int64_t validity = redlock_lock_validity_ms(w->hold);
  if (validity < w->min_validity)
    w->min_validity = validity;
  if (validity <= 0 || redlock_lock_is_lost(w->hold) || atomic_load(&w->lost->calls) != 0) {
    snprintf(w->failure, sizeof w->failure,
             "%s not held: validity %lld ms, is_lost %d, lost callbacks %d (reason %s)",
             kind_name(w->kind), (long long)validity, redlock_lock_is_lost(w->hold),
             atomic_load(&w->lost->calls), redlock_err_name(atomic_load(&w->lost->reason)));
    return 1;
  }
  return 0;
}

static int poll_for(void *arg) {
  watch_t *w = arg;
  return hold_broken(w) || rh_now_ms() >= w->until;
}

/* Holds, and (every 20 ms) the record is on every master of want_mask. */
static int poll_back(void *arg) {
  watch_t *w = arg;
  if (hold_broken(w))
    return 1;
  uint64_t now = rh_now_ms();
  if (now - w->last_check < 20)
    return 0;
  w->last_check = now;
  for (size_t i = 0; i < w->fx->n; i++)
    if ((w->want_mask >> i & 1) && !record_on(w->fx, i, w->kind, w->key, w->value))
      return 0;
  return 1;
}

static void hold_for(watch_t *w, unsigned ms) {
  w->until = rh_now_ms() + ms;
  assert_true(rh_wait_until(poll_for, w, (int)ms + 5000));
}

/* 1 when the record came back on every master of mask in time. */
static int back_on(watch_t *w, unsigned mask) {
  w->want_mask = mask;
  w->last_check = 0;
  return rh_wait_until(poll_back, w, BACK_DEADLINE_MS) && w->failure[0] == '\0';
}

static void rolling_stops(fx_t *fx, kind_t kind, const char *name) {
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  char key[128];
  record_key(kind, name, key, sizeof key);
  lost_t lost;
  atomic_init(&lost.calls, 0);
  atomic_init(&lost.reason, 0);
  watch_t w;
  memset(&w, 0, sizeof w);
  w.fx = fx;
  w.lost = &lost;
  w.kind = kind;
  w.key = key;
  w.min_validity = TTL_MS;
  assert_int_equal(acquire(c, kind, name, TTL_MS, &w.hold), REDLOCK_OK);
  snprintf(w.value, sizeof w.value, "%s", redlock_lock_value(w.hold));
  assert_int_equal(redlock_watch(c, w.hold, on_lost, &lost), REDLOCK_OK);
  if (!back_on(&w, 0x1fu))
    fail_msg("%s: not on all 5 masters after the grant (%s)", kind_name(kind), w.failure);

  /* Masters 0 and 1 stop for 2.5 s, longer than the ttl: their records
   * expire (they find so when they resume). */
  assert_int_equal(fx_pause(fx, 0x3u, 1), 0);
  hold_for(&w, 2500);
  assert_int_equal(fx_pause(fx, 0x3u, 0), 0);
  int back01 = w.failure[0] == '\0' && back_on(&w, 0x3u);
  char after_resume[256];
  snprintf(after_resume, sizeof after_resume, "%s", w.failure);

  /* Then master 2 stops for 1.5 s: only 0, 1, 3, 4 are up. */
  if (w.failure[0] == '\0') {
    assert_int_equal(fx_pause(fx, 0x4u, 1), 0);
    hold_for(&w, 1500);
    assert_int_equal(fx_pause(fx, 0x4u, 0), 0);
  }
  int back_all = w.failure[0] == '\0' && back_on(&w, 0x1fu);
  print_message("%s: lowest validity seen %lld ms; back on masters 0 and 1 after the resume: %s; "
                "on all five at the end: %s\n",
                kind_name(kind), (long long)w.min_validity, back01 ? "yes" : "no",
                back_all ? "yes" : "no");
  if (w.failure[0] != '\0')
    fail_msg("%s lost while a majority of masters was up at every moment: %s (record back on "
             "masters 0 and 1 after they resumed: %s%s%s); log:\n%s",
             kind_name(kind), w.failure, back01 ? "yes" : "no", after_resume[0] ? ", " : "",
             after_resume, fx_log_text(fx, 0));
  if (!back01 || !back_all)
    fail_msg("%s: the extensions did not re-install the record (masters 0 and 1 after the "
             "resume: %s; all five at the end: %s)",
             kind_name(kind), back01 ? "yes" : "no", back_all ? "yes" : "no");
  assert_int_equal(atomic_load(&lost.calls), 0);
  assert_int_equal(redlock_unlock(c, w.hold), REDLOCK_OK);
  for (size_t i = 0; i < fx->n; i++)
    assert_false(record_on(fx, i, kind, key, w.value));
}

static void test_watched_lock_survives_rolling_stops(void **state) {
  rolling_stops(*state, KIND_LOCK, "sf:reinstall:lock");
}

static void test_watched_permit_survives_rolling_stops(void **state) {
  rolling_stops(*state, KIND_SEMAPHORE, "sf:reinstall:sem");
}

static void test_watched_read_hold_survives_rolling_stops(void **state) {
  rolling_stops(*state, KIND_READ, "sf:reinstall:rr");
}

static void test_watched_write_hold_survives_rolling_stops(void **state) {
  rolling_stops(*state, KIND_WRITE, "sf:reinstall:rw");
}

/* ---- a re-install never takes what another holds ----------------------------------------- */

/* Runs a command on master i; fails the test on an error reply. */
#define ON(fx, i, ...)                                                                             \
  do {                                                                                             \
    char on_buf_[128];                                                                             \
    assert_int_equal(rh_server_command((fx)->servers[i], on_buf_, sizeof on_buf_, __VA_ARGS__),    \
                     0);                                                                           \
    if (strncmp(on_buf_, "ERR", 3) == 0)                                                           \
      fail_msg("master %zu: %s", (size_t)(i), on_buf_);                                            \
  } while (0)

typedef struct {
  fx_t *fx;
  size_t i;
  kind_t kind;
  const char *key;
  const char *value;
} record_wait_t;

static int record_there(void *arg) {
  record_wait_t *r = arg;
  return record_on(r->fx, r->i, r->kind, r->key, r->value);
}

/* A call returns once a quorum decided: the other masters' effects are
 * awaited with a deadline. */
static int wait_record(fx_t *fx, size_t i, kind_t kind, const char *key, const char *value) {
  record_wait_t r = {fx, i, kind, key, value};
  return rh_wait_until(record_there, &r, FX_SETTLE_MS);
}

static void wait_record_everywhere(fx_t *fx, kind_t kind, const char *key, const char *value) {
  for (size_t i = 0; i < fx->n; i++)
    if (!wait_record(fx, i, kind, key, value))
      fail_msg("%s: record not on master %zu", kind_name(kind), i);
}

static void test_reinstall_never_overwrites(void **state) {
  fx_t *fx = *state;
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  const uint32_t ttl = 10000;
  redlock_lock_t *lock;
  char value[64];

  /* One key: another value on master 0, ours gone from master 1. */
  const char *res = "sf:reinstall:own";
  assert_int_equal(redlock_lock(c, res, ttl, &lock), REDLOCK_OK);
  snprintf(value, sizeof value, "%s", redlock_lock_value(lock));
  wait_record_everywhere(fx, KIND_LOCK, res, value);
  ON(fx, 0, "SET %s other PX 60000", res);
  ON(fx, 1, "DEL %s", res);
  assert_int_equal(redlock_extend(c, lock, ttl), REDLOCK_OK);
  assert_true(wait_record(fx, 1, KIND_LOCK, res, value));
  assert_true(fx_key_is(fx->servers[0], res, "other"));
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  assert_true(fx_key_is(fx->servers[0], res, "other"));

  /* Several keys, all or nothing per master: on master 0 x is gone and y is
   * another's, so x is not re-installed there; on master 1 only x is gone. */
  const char *const many[] = {"sf:reinstall:x", "sf:reinstall:y"};
  assert_int_equal(redlock_lock_many(c, many, 2, ttl, &lock), REDLOCK_OK);
  snprintf(value, sizeof value, "%s", redlock_lock_value(lock));
  wait_record_everywhere(fx, KIND_LOCK, many[0], value);
  wait_record_everywhere(fx, KIND_LOCK, many[1], value);
  ON(fx, 0, "DEL %s", many[0]);
  ON(fx, 0, "SET %s other PX 60000", many[1]);
  ON(fx, 1, "DEL %s", many[0]);
  assert_int_equal(redlock_extend(c, lock, ttl), REDLOCK_OK);
  assert_true(wait_record(fx, 1, KIND_LOCK, many[0], value));
  assert_true(fx_key_absent(fx->servers[0], many[0]));
  assert_true(fx_key_is(fx->servers[0], many[1], "other"));
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);

  /* A permit: another value in the slot on master 0, ours gone on 1. */
  const char *slot = "{sf:reinstall:sem}:sem:0";
  assert_int_equal(redlock_semaphore_acquire(c, "sf:reinstall:sem", 1, ttl, 0, &lock), REDLOCK_OK);
  snprintf(value, sizeof value, "%s", redlock_lock_value(lock));
  wait_record_everywhere(fx, KIND_SEMAPHORE, slot, value);
  ON(fx, 0, "SET %s other PX 60000", slot);
  ON(fx, 1, "DEL %s", slot);
  assert_int_equal(redlock_extend(c, lock, ttl), REDLOCK_OK);
  assert_true(wait_record(fx, 1, KIND_SEMAPHORE, slot, value));
  assert_true(fx_key_is(fx->servers[0], slot, "other"));
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);

  /* A write hold: gone on masters 0 and 1; another reader on master 0. */
  const char *wkey = "{sf:reinstall:rw}:rw:write", *rkey = "{sf:reinstall:rw}:rw:read";
  assert_int_equal(redlock_rwlock_write(c, "sf:reinstall:rw", ttl, 0, &lock), REDLOCK_OK);
  snprintf(value, sizeof value, "%s", redlock_lock_value(lock));
  wait_record_everywhere(fx, KIND_WRITE, wkey, value);
  ON(fx, 0, "DEL %s", wkey);
  ON(fx, 0, "ZADD %s 99999999999999 reader", rkey);
  ON(fx, 1, "DEL %s", wkey);
  assert_int_equal(redlock_extend(c, lock, ttl), REDLOCK_OK);
  assert_true(wait_record(fx, 1, KIND_WRITE, wkey, value));
  assert_true(fx_key_absent(fx->servers[0], wkey));
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  ON(fx, 0, "DEL %s", rkey);

  /* A read hold: gone on masters 0 and 1; another writer on master 0. */
  assert_int_equal(redlock_rwlock_read(c, "sf:reinstall:rw", ttl, 0, &lock), REDLOCK_OK);
  snprintf(value, sizeof value, "%s", redlock_lock_value(lock));
  wait_record_everywhere(fx, KIND_READ, rkey, value);
  ON(fx, 0, "ZREM %s %s", rkey, value);
  ON(fx, 0, "SET %s other PX 60000", wkey);
  ON(fx, 1, "ZREM %s %s", rkey, value);
  assert_int_equal(redlock_extend(c, lock, ttl), REDLOCK_OK);
  assert_true(wait_record(fx, 1, KIND_READ, rkey, value));
  assert_false(record_on(fx, 0, KIND_READ, rkey, value));
  assert_true(fx_key_is(fx->servers[0], wkey, "other"));
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

/* ---- fencing: a re-install raises the counter to the token --------------------------------- */

static void fenced_kind(fx_t *fx, redlock_t *c, kind_t kind, const char *name) {
  const uint32_t ttl = 10000;
  char key[128], counter[160];
  record_key(kind, name, key, sizeof key);
  fx_fence_key_of(counter, sizeof counter, key);
  redlock_lock_t *lock;
  assert_int_equal(acquire(c, kind, name, ttl, &lock), REDLOCK_OK);
  char value[64];
  snprintf(value, sizeof value, "%s", redlock_lock_value(lock));
  uint64_t token = redlock_lock_fence(lock);
  assert_true(token > 1000);
  wait_record_everywhere(fx, kind, key, value);
  /* Master 0 lost the record and its counter; master 1 the record, with a
   * counter below the token; master 2 the record, with a counter above. */
  ON(fx, 0, "DEL %s %s", key, counter);
  ON(fx, 1, "DEL %s", key);
  ON(fx, 1, "SET %s 1000", counter);
  ON(fx, 2, "DEL %s", key);
  char above[32];
  snprintf(above, sizeof above, "%llu", (unsigned long long)(token + 1000));
  ON(fx, 2, "SET %s %s", counter, above);
  assert_int_equal(redlock_extend(c, lock, ttl), REDLOCK_OK);
  for (size_t i = 0; i < 3; i++)
    if (!wait_record(fx, i, kind, key, value))
      fail_msg("%s: not re-installed on master %zu", kind_name(kind), i);
  assert_int_equal(fx_get_u64(fx->servers[0], counter), token);
  assert_int_equal(fx_get_u64(fx->servers[1], counter), token);
  assert_int_equal(fx_get_u64(fx->servers[2], counter), token + 1000);
  assert_int_equal(redlock_lock_fence(lock), token); /* an extension keeps the token */
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

static void test_reinstall_raises_fence(void **state) {
  fx_t *fx = *state;
  redlock_t *c = fx_open(fx, 0, fx_options_fenced(fx, 0));
  fenced_kind(fx, c, KIND_LOCK, "sf:reinstall:fenced");
  fenced_kind(fx, c, KIND_SEMAPHORE, "sf:reinstall:fsem");
  fenced_kind(fx, c, KIND_WRITE, "sf:reinstall:frw");
}

/* ---- quarantine: a re-install there is an acquisition ------------------------------------- */

#define MAX_TTL 3000u

static void test_reinstall_in_quarantine_does_not_count(void **state) {
  fx_t *fx = *state;
  redlock_options_t *opts = fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_quarantine(opts, 1), 0);
  assert_int_equal(redlock_options_set_max_ttl(opts, MAX_TTL), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  if (!fx_wait_votes_count(fx, c, fx->n, 0x7u, 10000))
    fail_msg("the initial quarantine did not end; log:\n%s", fx_log_text(fx, 0));
  const char *res = "sf:reinstall:quarantine";
  redlock_lock_t *lock;
  assert_int_equal(redlock_lock(c, res, MAX_TTL, &lock), REDLOCK_OK);
  char value[64];
  snprintf(value, sizeof value, "%s", redlock_lock_value(lock));
  wait_record_everywhere(fx, KIND_LOCK, res, value);

  /* Masters 0 and 1 restart and forget the key: the lock lives on master 2
   * only.  Re-installs there would make a quorum with master 2's yes, but
   * both masters are in quarantine: an acquisition there does not count. */
  assert_int_equal(rh_server_restart(fx->servers[0]), 0);
  assert_int_equal(rh_server_restart(fx->servers[1]), 0);
  fx_assert_saw_restart(fx, 0, 0, 1);
  fx_assert_saw_restart(fx, 0, 1, 1);
  int rc = redlock_extend(c, lock, MAX_TTL);
  char votes[512];
  redlock_last_votes(c, votes, sizeof votes);
  if (rc == REDLOCK_OK)
    fail_msg("extension won with re-installs by masters in quarantine: %s", votes);
  assert_int_equal(rc, REDLOCK_ENOQUORUM);
  assert_non_null(strstr(votes, "quarantined"));
  /* The script still ran there: the key is back (the release must reach it). */
  assert_true(wait_record(fx, 0, KIND_LOCK, res, value));
  assert_true(wait_record(fx, 1, KIND_LOCK, res, value));
  /* Now the key is there, put there by us after the restart: extending it
   * counts (docs/safety.md §5), quarantine or not. */
  if (redlock_lock_validity_ms(lock) > 500) {
    rc = redlock_extend(c, lock, MAX_TTL);
    redlock_last_votes(c, votes, sizeof votes);
    if (rc != REDLOCK_OK)
      fail_msg("extension of keys present on masters in quarantine: %s (%s)", redlock_err_name(rc),
               votes);
  }
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  fx_assert_absent_everywhere(fx, res, FX_SETTLE_MS);
}

FX_MAIN("safety_reinstall", &fx_profile_safety,
        FX_TEST(test_watched_lock_survives_rolling_stops, 5),
        FX_TEST(test_watched_permit_survives_rolling_stops, 5),
        FX_TEST(test_watched_read_hold_survives_rolling_stops, 5),
        FX_TEST(test_watched_write_hold_survives_rolling_stops, 5),
        FX_TEST(test_reinstall_never_overwrites, 3), FX_TEST(test_reinstall_raises_fence, 3),
        FX_TEST(test_reinstall_in_quarantine_does_not_count, 3))
