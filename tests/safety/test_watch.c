/* test_watch.c: redlock_watch (automatic extension) against real
 * redis-server processes, N = 3, lock ttl 300 ms, request timeout 100 ms:
 *  - a watched lock survives at least 5 x its ttl: polled every 5 ms all
 *    along, the key keeps existing with our value and PTTL > 0 on a quorum of
 *    masters (on every master, as a rule; a master may miss an extension and
 *    be left behind) and the local validity stays > 0; no lost callback; then
 *    redlock_unlock removes it from every master and it stays gone;
 *  - a watched lock whose masters are all paused (SIGSTOP; always resumed in
 *    teardown), or all killed, is reported lost through the callback exactly
 *    once, with reason REDLOCK_ELOST, never while validity is left, no later
 *    than the end of its validity + 200 ms, and redlock_lock_is_lost becomes
 *    1; after the masters are back no second callback comes, extend says
 *    ELOST and unlock frees the handle.
 * The watch has ttl/3 = 100 ms of slack: on a shared machine that stops this
 * process for longer (seen: 800 ms), the timing parts (survival, lateness)
 * can miss without any fault of the library.  A stall monitor
 * (fx_stall_monitor_*) measures such stalls; a timing miss is retried (up to
 * 3 attempts) only when a stall of at least STALL_EXCUSE_MS was seen during
 * it.  Safety assertions (exactly once, never early, reason, is_lost) are
 * never excused.  Waits are event-driven with deadlines, never sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define TTL 300u
#define REQUEST_MS 100u
/* Lateness allowed for the lost report, after the end of validity. */
#define LOST_MARGIN_MS 200
#define ATTEMPTS 3
/* A stall this long eats most of the watch's slack (ttl/3 minus a round trip). */
#define STALL_EXCUSE_MS 50u

typedef struct {
  atomic_int calls;
  atomic_int reason;
  atomic_llong validity_at_cb; /* redlock_lock_validity_ms() inside the callback */
  atomic_int lost_at_cb;
  atomic_ullong t_cb; /* rh_now_ms() of the (first) callback */
} lost_record_t;

static void lost_cb(redlock_lock_t *lock, int reason, void *arg) {
  lost_record_t *rec = arg;
  if (atomic_fetch_add(&rec->calls, 1) == 0) {
    atomic_store(&rec->t_cb, rh_now_ms());
    atomic_store(&rec->reason, reason);
    atomic_store(&rec->validity_at_cb, (long long)redlock_lock_validity_ms(lock));
    atomic_store(&rec->lost_at_cb, redlock_lock_is_lost(lock));
  }
}

static void lost_record_init(lost_record_t *rec) {
  atomic_init(&rec->calls, 0);
  atomic_init(&rec->reason, 0);
  atomic_init(&rec->validity_at_cb, 0);
  atomic_init(&rec->lost_at_cb, 0);
  atomic_init(&rec->t_cb, 0);
}

static redlock_t *open_watch_client(fx_t *fx) {
  redlock_options_t *opts = fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_timeouts(opts, FX_SF_CONNECT_MS, REQUEST_MS), 0);
  return fx_open(fx, 0, opts);
}

/* Ends a test whose attempts all missed a timing bound: fails unless every
 * miss came with a stall (then the machine, not the library, is to blame). */
static int timing_miss(int attempt, const char *why, fx_t *fx) {
  unsigned stall = fx_stall_max_ms();
  print_message("attempt %d: %s (worst stall of this process meanwhile: %u ms)\n", attempt, why,
                stall);
  if (stall < STALL_EXCUSE_MS)
    fail_msg("%s, without a stall of this process to explain it (worst %u ms); log:\n%s", why,
             stall, fx_log_text(fx, 0));
  if (attempt == ATTEMPTS)
    fail_msg("all %d attempts missed their timing, each during a stall of at least %u ms: the "
             "machine is too loaded for a 300 ms ttl",
             ATTEMPTS, STALL_EXCUSE_MS);
  return 0;
}

/* ---- survival ------------------------------------------------------------------------ */

typedef struct {
  fx_t *fx;
  redisContext *conns[FX_MAX_SERVERS];
  redlock_lock_t *lock;
  lost_record_t *rec;
  const char *key;
  char value[64];
  uint64_t until;
  uint64_t last_poll;
  unsigned polls;
  char failure[512];
} survive_t;

/* One poll (every 5 ms) of the masters and the handle; true when the time
 * is up or something is wrong (then failure says what). */
static int survive_poll(void *arg) {
  survive_t *s = arg;
  uint64_t now = rh_now_ms();
  if (now - s->last_poll < 5 && now < s->until)
    return 0;
  s->last_poll = now;
  s->polls++;
  int64_t validity = redlock_lock_validity_ms(s->lock);
  if (validity <= 0 || redlock_lock_is_lost(s->lock)) {
    snprintf(s->failure, sizeof s->failure, "validity %lld ms, is_lost %d at poll %u",
             (long long)validity, redlock_lock_is_lost(s->lock), s->polls);
    return 1;
  }
  if (atomic_load(&s->rec->calls) != 0) {
    snprintf(s->failure, sizeof s->failure, "lost callback ran (reason %d)",
             atomic_load(&s->rec->reason));
    return 1;
  }
  /* Held means held on a quorum: a master may miss an extension (its reply
   * late, its key expired first) while the others carry the lock. */
  size_t held = 0;
  char states[128];
  size_t used = 0;
  states[0] = '\0';
  for (size_t i = 0; i < s->fx->n; i++) {
    redisReply *r = redisCommand(s->conns[i], "EVAL %s 1 %s %s",
                                 "if redis.call('get', KEYS[1]) == ARGV[1] then "
                                 "return redis.call('pttl', KEYS[1]) else return -3 end",
                                 s->key, s->value);
    long long pttl = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -4;
    if (r != NULL)
      freeReplyObject(r);
    if (pttl > 0)
      held++;
    if (used < sizeof states)
      used += (size_t)snprintf(states + used, sizeof states - used, " m%zu=%lld", i, pttl);
  }
  if (held < s->fx->n / 2 + 1) {
    snprintf(s->failure, sizeof s->failure,
             "held on %zu masters only (PTTL of our value, -3 = not ours:%s) at poll %u, "
             "validity %lld ms",
             held, states, s->polls, (long long)validity);
    return 1;
  }
  return now >= s->until;
}

/* One try: 1 when the lock survived 5 x ttl, else 0 with s->failure set.
 * The lock is unlocked either way (which stops the watch: rec is not used
 * after this returns). */
static int survive_attempt(survive_t *s, redlock_t *c, const char *res) {
  s->failure[0] = '\0';
  s->polls = 0;
  s->last_poll = 0;
  lost_record_init(s->rec);
  assert_int_equal(redlock_lock(c, res, TTL, &s->lock), REDLOCK_OK);
  snprintf(s->value, sizeof s->value, "%s", redlock_lock_value(s->lock));
  uint64_t t0 = rh_now_ms();
  assert_int_equal(redlock_watch(c, s->lock, lost_cb, s->rec), REDLOCK_OK);
  s->until = t0 + 6 * TTL; /* at least 5 x ttl */
  assert_true(rh_wait_until(survive_poll, s, (int)(6 * TTL) + 5000));
  if (s->failure[0] != '\0') {
    char why[sizeof s->failure];
    snprintf(why, sizeof why,
             "watched lock failed after %llu ms: ", (unsigned long long)(rh_now_ms() - t0));
    size_t len = strlen(why);
    memmove(s->failure + len, s->failure, sizeof s->failure - len - 1);
    s->failure[sizeof s->failure - 1] = '\0';
    memcpy(s->failure, why, len);
    redlock_unlock(c, s->lock); /* whatever is left; frees the handle */
    return 0;
  }
  assert_true(rh_now_ms() - t0 >= 5 * TTL);
  assert_true(s->polls > 10);
  assert_int_equal(atomic_load(&s->rec->calls), 0);
  /* Unlock stops the watch and removes the key everywhere. */
  assert_int_equal(redlock_unlock(c, s->lock), REDLOCK_OK);
  return 1;
}

static void test_watch_survives_many_ttls(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:watch:survive";
  redlock_t *c = open_watch_client(fx);
  lost_record_t rec;
  survive_t s;
  memset(&s, 0, sizeof s);
  s.fx = fx;
  s.rec = &rec;
  s.key = res;
  for (size_t i = 0; i < fx->n; i++)
    s.conns[i] = fx_redis(fx->servers[i], 2000);

  fx_stall_monitor_start();
  for (int attempt = 1;; attempt++) {
    fx_stall_reset();
    if (survive_attempt(&s, c, res))
      break;
    timing_miss(attempt, s.failure, fx);
  }
  fx_stall_monitor_stop();
  for (size_t i = 0; i < fx->n; i++)
    redisFree(s.conns[i]);

  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], res, 2000));
  /* The watch does not bring it back: someone else can take it. */
  redlock_t *other = fx_open(fx, 1, fx_options(fx, 1, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *lock = NULL;
  assert_int_equal(fx_trylock_until(other, res, 5000, 5000, &lock), REDLOCK_OK);
  assert_int_equal(atomic_load(&rec.calls), 0);
  assert_int_equal(redlock_unlock(other, lock), REDLOCK_OK);
}

/* ---- loss ------------------------------------------------------------------------------ */

static int lost_reported(void *arg) { return atomic_load(&((lost_record_t *)arg)->calls) > 0; }
static int lost_twice(void *arg) { return atomic_load(&((lost_record_t *)arg)->calls) > 1; }

typedef struct {
  redlock_lock_t *lock;
  uint64_t first_end; /* rh_now_ms() at which the first validity ended */
} extended_t;

/* The end of validity moved forward by a good part of the ttl. */
static int was_extended(void *arg) {
  extended_t *e = arg;
  int64_t validity = redlock_lock_validity_ms(e->lock);
  return validity > 0 && rh_now_ms() + (uint64_t)validity > e->first_end + TTL / 4;
}

typedef enum { FAULT_PAUSE, FAULT_KILL } fault_t;

/* One try.  Safety is asserted outright; a missed timing bound returns 0
 * with `why` set. */
static int loss_attempt(fx_t *fx, redlock_t *c, fault_t fault, const char *res, lost_record_t *rec,
                        char *why, size_t why_size) {
  redlock_lock_t *lock = NULL;
  int timing_ok = 1;
  why[0] = '\0';
  lost_record_init(rec);

  assert_int_equal(redlock_lock(c, res, TTL, &lock), REDLOCK_OK);
  assert_int_equal(redlock_watch(c, lock, lost_cb, rec), REDLOCK_OK);
  /* Let the watch extend at least once before the fault. */
  extended_t ext = {lock, rh_now_ms() + (uint64_t)redlock_lock_validity_ms(lock)};
  if (!rh_wait_until(was_extended, &ext, 2000)) {
    snprintf(why, why_size, "the watch did not extend the lock before the fault (lost: %d)",
             atomic_load(&rec->calls));
    redlock_unlock(c, lock);
    return 0;
  }

  uint64_t t_fault = rh_now_ms();
  for (size_t i = 0; i < fx->n; i++) {
    if (fault == FAULT_PAUSE)
      assert_int_equal(rh_server_pause(fx->servers[i]), 0);
    else
      assert_int_equal(rh_server_kill(fx->servers[i]), 0);
  }
  /* Whatever extension was in flight, validity ends by t_fault + TTL. */
  if (!rh_wait_until(lost_reported, rec, (int)TTL + 5000))
    fail_msg("no lost callback %llu ms after the fault; log:\n%s",
             (unsigned long long)(rh_now_ms() - t_fault), fx_log_text(fx, 0));
  uint64_t t_cb = atomic_load(&rec->t_cb);
  long long validity_at_cb = atomic_load(&rec->validity_at_cb);
  assert_int_equal(atomic_load(&rec->reason), REDLOCK_ELOST);
  assert_int_equal(atomic_load(&rec->lost_at_cb), 1);
  assert_int_equal(redlock_lock_is_lost(lock), 1);
  assert_true(redlock_lock_validity_ms(lock) <= 0);
  /* Never while validity is left: nothing but time said it was lost. */
  if (validity_at_cb > 0)
    fail_msg("reported lost with %lld ms of validity left", validity_at_cb);
  /* And not later than the end of validity + the margin. */
  if (validity_at_cb < -LOST_MARGIN_MS) {
    snprintf(why, why_size, "reported lost %lld ms after the end of validity (margin %d ms)",
             -validity_at_cb, LOST_MARGIN_MS);
    timing_ok = 0;
  } else if (t_cb > t_fault + TTL + LOST_MARGIN_MS) {
    snprintf(why, why_size, "reported lost %llu ms after the fault (ttl %u ms + margin %d ms)",
             (unsigned long long)(t_cb - t_fault), TTL, LOST_MARGIN_MS);
    timing_ok = 0;
  }

  /* Masters back: no second report, even as the client reconnects. */
  for (size_t i = 0; i < fx->n; i++) {
    if (fault == FAULT_PAUSE)
      assert_int_equal(rh_server_resume(fx->servers[i]), 0);
    else
      assert_int_equal(rh_server_restart(fx->servers[i]), 0);
  }
  redlock_lock_t *probe = NULL;
  assert_int_equal(fx_trylock_until(c, "sf:watch:probe", 1000, 5000, &probe), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, probe), REDLOCK_OK);
  /* A negative check needs some time: two extension periods. */
  assert_false(rh_wait_until(lost_twice, rec, (int)TTL * 2));
  assert_int_equal(redlock_extend(c, lock, TTL), REDLOCK_ELOST);
  /* Unlock frees the handle; nothing of ours is left to release. */
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_ELOST);
  assert_int_equal(atomic_load(&rec->calls), 1);
  return timing_ok;
}

static void watched_lock_lost(fx_t *fx, fault_t fault) {
  const char *res = fault == FAULT_PAUSE ? "sf:watch:paused" : "sf:watch:killed";
  redlock_t *c = open_watch_client(fx);
  lost_record_t rec;
  char why[256];

  fx_stall_monitor_start();
  for (int attempt = 1;; attempt++) {
    fx_stall_reset();
    if (loss_attempt(fx, c, fault, res, &rec, why, sizeof why))
      break;
    timing_miss(attempt, why, fx);
  }
  fx_stall_monitor_stop();
}

static void test_watch_lost_all_paused(void **state) { watched_lock_lost(*state, FAULT_PAUSE); }
static void test_watch_lost_all_killed(void **state) { watched_lock_lost(*state, FAULT_KILL); }

FX_MAIN("safety: watch", &fx_profile_safety, FX_TEST(test_watch_survives_many_ttls, 3),
        FX_TEST(test_watch_lost_all_paused, 3), FX_TEST(test_watch_lost_all_killed, 3))
