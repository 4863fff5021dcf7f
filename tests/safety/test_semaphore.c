/* test_semaphore.c: the counting semaphore (redlock_semaphore_acquire,
 * src/engine/prims.c) against real redis-server processes.
 *  - admits: with limit 3, three permits (from two clients) are granted, each
 *    on its own slot key held on a quorum; a fourth is refused (ELOCKED with
 *    wait 0, ETIMEDOUT after its wait) and last_votes reports the refusal;
 *    after an unlock the fourth gets exactly the freed slot; unlocks remove
 *    every slot key.
 *  - woken: a waiter (fallback retry 10 s) on a full semaphore acquires
 *    within 2 s of a holder's unlock, once its subscription to the
 *    semaphore's channel is on every master: woken by the release PUBLISH.
 *  - burst: three permits released at once wake three waiters (one each),
 *    within 2 s, none left to the 10 s fallback.
 *  - dead holder: a child process takes the only permit and is SIGKILLed: the
 *    permit is not leaked, a waiter gets it once its ttl has run out.
 *  - limit mismatch: another limit for a held semaphore is EINVAL at once
 *    (not retried, logged with both limits), while any permit may exist;
 *    once the limit key has expired, the new limit is accepted.
 *  - bounded keys: 40 fenced cycles of 3 permits over 2 clients leave at most
 *    limit slot keys + 1 limit key and limit fence counters per master, and
 *    only the counters once ttl has passed; tokens of a slot only increase.
 *  - extend / watch / close: extend raises the slot's and the limit key's
 *    TTL; a watched permit outlives 4 ttls; close releases a client's permits.
 *  - reentrancy (set_reentrant) does not apply: one thread's second permit
 *    is another slot, a plain lock of a slot's name is refused, two reads
 *    are two holds.
 *  - the callback forms (semaphore, read, write): the callback runs once on
 *    the loop thread with the status and handle; wait 0 is one try; a
 *    blocking call made inside it is EWOULDBLOCK.
 *  - the partition schedule (N = 5, limit 2), driven with SIGSTOP: A is
 *    admitted on masters {0,1,2}, B on {2,3,4}; C, which sees {0,1,3}, must
 *    be refused (a per-master counter would admit it: no master holds more
 *    than 2), and is admitted once A releases.
 *  - chaos (N = 5, limit 2): 3 clients in threads acquire and release while
 *    pairs of masters are paused and resumed at random; the holding
 *    intervals (grant to min(unlock, end of validity)) never overlap more
 *    than 2 deep.
 * Waits are events or rh_wait_until deadlines; the timing bounds are
 * generous deadlines, not speed measurements. */
#include <pthread.h>
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

#define CHANNEL_PREFIX REDLOCK_RELEASE_CHANNEL_PREFIX
#define FALLBACK_MS 10000u
#define WAKE_BOUND_MS 2000u

/* The key of a permit's slot: its resource names the slot ("NAME:sem:3"),
 * the key is the name's derived one ("{NAME}:sem:3", redlock.h).  Four
 * rotating buffers: a few calls per expression. */
static const char *permit_key(const redlock_lock_t *p) {
  static char bufs[4][256];
  static unsigned next;
  const char *res = redlock_lock_resource(p);
  assert_non_null(res);
  const char *sep = NULL;
  for (const char *q = strstr(res, ":sem:"); q != NULL; q = strstr(q + 1, ":sem:"))
    sep = q;
  assert_non_null(sep);
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)(sep - res), res);
  char *buf = bufs[next++ % 4];
  return fx_derived_name(buf, sizeof bufs[0], "", name, sep);
}

static void slot_key(char *buf, size_t size, const char *name, unsigned slot) {
  char suffix[32];
  snprintf(suffix, sizeof suffix, ":sem:%u", slot);
  fx_derived_name(buf, size, "", name, suffix);
}

static void assert_slot_of(redlock_lock_t *p, const char *name, unsigned limit) {
  char prefix[256];
  snprintf(prefix, sizeof prefix, "%s:sem:", name);
  const char *res = redlock_lock_resource(p);
  assert_non_null(res);
  assert_memory_equal(res, prefix, strlen(prefix));
  char *end = NULL;
  unsigned long slot = strtoul(res + strlen(prefix), &end, 10);
  assert_true(end != res + strlen(prefix) && *end == '\0');
  assert_true(slot < limit);
}

/* ---- limit holders admitted, the next refused -------------------------------------- */

static void test_sem_admits_limit(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:sem:admit";
  redlock_t *c0 = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *c1 = fx_open(fx, 1, fx_options(fx, 1, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *p[4] = {NULL};

  assert_int_equal(redlock_semaphore_acquire(c0, name, 3, 10000, 0, &p[0]), REDLOCK_OK);
  assert_int_equal(redlock_semaphore_acquire(c0, name, 3, 10000, 0, &p[1]), REDLOCK_OK);
  assert_int_equal(redlock_semaphore_acquire(c1, name, 3, 10000, 1000, &p[2]), REDLOCK_OK);
  for (int i = 0; i < 3; i++) {
    assert_slot_of(p[i], name, 3);
    fx_assert_on_quorum(fx, permit_key(p[i]), redlock_lock_value(p[i]));
    assert_true(redlock_lock_validity_ms(p[i]) > 0);
    assert_false(redlock_lock_is_lost(p[i]));
    assert_int_equal(redlock_lock_fence(p[i]), 0); /* fencing off */
    for (int j = 0; j < i; j++) {
      assert_string_not_equal(redlock_lock_resource(p[i]), redlock_lock_resource(p[j]));
      assert_string_not_equal(redlock_lock_value(p[i]), redlock_lock_value(p[j]));
    }
  }

  /* Full: refused, whoever asks. */
  assert_int_equal(redlock_semaphore_acquire(c1, name, 3, 10000, 0, &p[3]), REDLOCK_ELOCKED);
  assert_null(p[3]);
  assert_int_equal(redlock_semaphore_acquire(c0, name, 3, 10000, 0, &p[3]), REDLOCK_ELOCKED);
  char votes[512];
  assert_true(redlock_last_votes(c0, votes, sizeof votes) > 0);
  if (strncmp(votes, "lost (held):", 12) != 0 || strstr(votes, "=refused") == NULL)
    fail_msg("last_votes after a refusal: %s", votes);
  uint64_t t0 = rh_now_ms();
  assert_int_equal(redlock_semaphore_acquire(c1, name, 3, 10000, 300, &p[3]), REDLOCK_ETIMEDOUT);
  assert_true(rh_now_ms() - t0 >= 300);
  assert_null(p[3]);

  /* A freed slot goes to the next caller, and only that slot is free. */
  char freed[256];
  snprintf(freed, sizeof freed, "%s", redlock_lock_resource(p[1]));
  assert_int_equal(redlock_unlock(c0, p[1]), REDLOCK_OK);
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], freed, 3000));
  assert_int_equal(redlock_semaphore_acquire(c1, name, 3, 10000, 0, &p[1]), REDLOCK_OK);
  assert_string_equal(redlock_lock_resource(p[1]), freed);
  assert_true(redlock_last_votes(c1, votes, sizeof votes) > 0);
  assert_memory_equal(votes, "won:", 4);

  char keys[4][256];
  for (int i = 0; i < 3; i++)
    snprintf(keys[i], sizeof keys[i], "%s", permit_key(p[i]));
  assert_int_equal(redlock_unlock(c0, p[0]), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c1, p[1]), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c1, p[2]), REDLOCK_OK);
  for (int k = 0; k < 3; k++)
    for (size_t i = 0; i < fx->n; i++)
      assert_true(fx_wait_key_absent(fx->servers[i], keys[k], 3000));
}

/* ---- a release wakes a waiter ------------------------------------------------------------ */

static void test_sem_release_wakes_waiter(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:sem:wake";
  char channel[128];
  fx_derived_name(channel, sizeof channel, CHANNEL_PREFIX, name, ":sem");
  redlock_t *h = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *wc = fx_open(fx, 1, fx_options_retry(fx, 1, REDLOCK_LOG_WARN, -1, FALLBACK_MS, 0));
  redlock_lock_t *p[2] = {NULL};
  assert_int_equal(redlock_semaphore_acquire(h, name, 2, 20000, 0, &p[0]), REDLOCK_OK);
  assert_int_equal(redlock_semaphore_acquire(h, name, 2, 20000, 0, &p[1]), REDLOCK_OK);

  fx_call_t w = {.fn = fx_call_semaphore,
                 .client = wc,
                 .name = name,
                 .limit = 2,
                 .ttl_ms = 5000,
                 .wait_ms = FALLBACK_MS + 5000};
  fx_call_start(&w);
  int subscribed = fx_wait_subscribed(fx, fx->n, channel, 1, 5000);
  int early = fx_event_wait(&w.done, 0);
  uint64_t t_unlock = rh_now_ms();
  int unlock_rc = redlock_unlock(h, p[0]);
  int woke = fx_call_join(&w, (int)FALLBACK_MS + 5000);

  assert_true(subscribed);
  assert_false(early);
  assert_int_equal(unlock_rc, REDLOCK_OK);
  assert_true(woke);
  assert_int_equal(w.rc, REDLOCK_OK);
  fx_assert_woken(w.t_done - t_unlock, WAKE_BOUND_MS, FALLBACK_MS, "the release");
  fx_assert_on_quorum(fx, permit_key(w.lock), redlock_lock_value(w.lock));
  assert_int_equal(redlock_unlock(wc, w.lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(h, p[1]), REDLOCK_OK);
  /* The waiter left the channel on every master. */
  assert_true(fx_wait_subscribed_at_most(fx, fx->n, channel, 0, 5000));
}

/* Several permits released together: each release wakes its own waiter (a
 * burst must not leave waiters to the fallback timer). */
#define BURST 3

static void test_sem_burst_wakes_each_waiter(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:sem:burst";
  char channel[128];
  fx_derived_name(channel, sizeof channel, CHANNEL_PREFIX, name, ":sem");
  redlock_t *h = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *wc = fx_open(fx, 1, fx_options_retry(fx, 1, REDLOCK_LOG_WARN, -1, FALLBACK_MS, 0));
  redlock_lock_t *p[BURST] = {NULL};
  for (int i = 0; i < BURST; i++)
    assert_int_equal(redlock_semaphore_acquire(h, name, BURST, 20000, 0, &p[i]), REDLOCK_OK);

  fx_call_t w[BURST];
  for (int i = 0; i < BURST; i++) {
    w[i] = (fx_call_t){.fn = fx_call_semaphore,
                       .client = wc,
                       .name = name,
                       .limit = BURST,
                       .ttl_ms = 5000,
                       .wait_ms = FALLBACK_MS + 5000};
    fx_call_start(&w[i]);
  }
  int subscribed = fx_wait_subscribed(fx, fx->n, channel, 1, 5000);
  /* Every waiter has failed its first pass (and waits) once the
   * subscription is up; give the last ones a moment to get there too. */
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
  uint64_t t_unlock = rh_now_ms();
  for (int i = 0; i < BURST; i++)
    assert_int_equal(redlock_unlock_async(h, p[i], NULL, NULL), REDLOCK_OK);
  int all = 1;
  uint64_t worst = 0;
  for (int i = 0; i < BURST; i++) {
    int done = fx_call_join(&w[i], (int)FALLBACK_MS + 5000);
    all = all && done && w[i].rc == REDLOCK_OK;
    if (w[i].t_done - t_unlock > worst)
      worst = w[i].t_done - t_unlock;
  }
  assert_true(subscribed);
  assert_true(all);
  if (fx_verbose())
    print_message("last of %d waiters got its permit %llu ms after the burst\n", BURST,
                  (unsigned long long)worst);
  if (worst >= WAKE_BOUND_MS)
    fail_msg("a waiter got its permit %llu ms after a burst of %d releases (fallback %u ms): "
             "not every release woke a waiter",
             (unsigned long long)worst, BURST, FALLBACK_MS);
  for (int i = 0; i < BURST; i++)
    assert_int_equal(redlock_unlock(wc, w[i].lock), REDLOCK_OK);
}

/* ---- a dead holder's permit expires ----------------------------------------------------- */

static void test_sem_dead_holder_expires(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:sem:dead";
  /* Forked before this process has any client thread. */
  pid_t child = fx_child_start(fx, fx->n, FX_CHILD_SEM, name, 1, 2000, 0);
  assert_int_equal(fx_child_status(child, 10000), REDLOCK_OK);
  fx_child_kill(child); /* dies holding the only permit */
  uint64_t t_dead = rh_now_ms();

  redlock_t *c = fx_open(fx, 0, fx_options_retry(fx, 0, REDLOCK_LOG_WARN, -1, 100, 0));
  redlock_lock_t *p = NULL;
  char key[128];
  slot_key(key, sizeof key, name, 0);
  if (rh_now_ms() - t_dead < 1000) /* certainly still valid (ttl 2000): refused */
    assert_int_equal(redlock_semaphore_acquire(c, name, 1, 5000, 0, &p), REDLOCK_ELOCKED);
  assert_int_equal(redlock_semaphore_acquire(c, name, 1, 5000, 8000, &p), REDLOCK_OK);
  assert_true(rh_now_ms() - t_dead < 6000);
  assert_string_equal(permit_key(p), key);
  fx_assert_on_quorum(fx, permit_key(p), redlock_lock_value(p));
  assert_int_equal(redlock_unlock(c, p), REDLOCK_OK);
}

/* ---- every client must pass the same limit ------------------------------------------------ */

static void test_sem_limit_mismatch(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:sem:mismatch";
  char limit_key[128];
  fx_derived_name(limit_key, sizeof limit_key, "", name, ":sem:limit");
  redlock_t *c0 = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *c1 = fx_open(fx, 1, fx_options_retry(fx, 1, REDLOCK_LOG_WARN, -1, 50, 0));
  redlock_lock_t *p = NULL, *q = NULL;

  assert_int_equal(redlock_semaphore_acquire(c0, name, 3, 1000, 0, &p), REDLOCK_OK);
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_key_is(fx->servers[i], limit_key, "3"));
  assert_int_equal(redlock_semaphore_acquire(c1, name, 2, 1000, 0, &q), REDLOCK_EINVAL);
  assert_null(q);
  /* Not retried: a wait does not turn a configuration error into a timeout. */
  uint64_t t0 = rh_now_ms();
  assert_int_equal(redlock_semaphore_acquire(c1, name, 2, 1000, 5000, &q), REDLOCK_EINVAL);
  assert_true(rh_now_ms() - t0 < 2000);
  if (!fx_log_contains(fx, 1, "limit 2") || !fx_log_contains(fx, 1, "limit 3"))
    fail_msg("the refusal's log does not name both limits:\n%s", fx_log_text(fx, 1));
  assert_int_equal(redlock_semaphore_acquire(c0, name, 4, 1000, 0, &q), REDLOCK_EINVAL);
  /* The same limit still works beside the held permit. */
  assert_int_equal(redlock_semaphore_acquire(c1, name, 3, 1000, 0, &q), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c1, q), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c0, p), REDLOCK_OK);

  /* The limit key outlives the permits by at most their ttl; then the name
   * is free for another limit. */
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], limit_key, 3000));
  assert_int_equal(redlock_semaphore_acquire(c1, name, 2, 1000, 0, &q), REDLOCK_OK);
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_key_is(fx->servers[i], limit_key, "2"));
  assert_int_equal(redlock_unlock(c1, q), REDLOCK_OK);
}

/* ---- keys stay bounded ---------------------------------------------------------------- */

#define BOUNDED_LIMIT 3u
#define BOUNDED_CYCLES 40

static void test_sem_keys_bounded(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:sem:bounded";
  redlock_t *c[2];
  c[0] = fx_open(fx, 0, fx_options_fenced(fx, 0));
  c[1] = fx_open(fx, 1, fx_options_fenced(fx, 1));
  uint64_t last_token[BOUNDED_LIMIT] = {0};

  for (int cycle = 0; cycle < BOUNDED_CYCLES; cycle++) {
    redlock_lock_t *p[BOUNDED_LIMIT] = {NULL};
    for (unsigned k = 0; k < BOUNDED_LIMIT; k++) {
      assert_int_equal(redlock_semaphore_acquire(c[k % 2], name, BOUNDED_LIMIT, 1000, 2000, &p[k]),
                       REDLOCK_OK);
      const char *res = redlock_lock_resource(p[k]);
      unsigned slot = (unsigned)strtoul(strrchr(res, ':') + 1, NULL, 10);
      assert_true(slot < BOUNDED_LIMIT);
      /* Each slot's successive holders get increasing tokens. */
      uint64_t token = redlock_lock_fence(p[k]);
      assert_true(token > last_token[slot]);
      last_token[slot] = token;
    }
    if (cycle % 10 == 0) {
      redlock_lock_t *extra = NULL;
      assert_int_equal(redlock_semaphore_acquire(c[1], name, BOUNDED_LIMIT, 1000, 0, &extra),
                       REDLOCK_ELOCKED);
    }
    for (size_t i = 0; i < fx->n; i++) {
      long data = fx_count_keys(fx->servers[i], "{sf:sem:bounded}*");
      long fences = fx_count_keys(fx->servers[i], REDLOCK_FENCE_KEY_PREFIX "{sf:sem:bounded}*");
      if (data > (long)BOUNDED_LIMIT + 1 || fences > (long)BOUNDED_LIMIT)
        fail_msg("cycle %d, master %zu: %ld keys, %ld fence counters (limit %u)", cycle, i, data,
                 fences, BOUNDED_LIMIT);
    }
    for (unsigned k = 0; k < BOUNDED_LIMIT; k++)
      assert_int_equal(redlock_unlock(c[k % 2], p[k]), REDLOCK_OK);
  }
  /* Released slots are gone at once; the limit key after its ttl. */
  for (size_t i = 0; i < fx->n; i++) {
    char limit_key[128];
    fx_derived_name(limit_key, sizeof limit_key, "", name, ":sem:limit");
    assert_true(fx_wait_key_absent(fx->servers[i], limit_key, 3000));
    assert_int_equal(fx_count_keys(fx->servers[i], "{sf:sem:bounded}*"), 0);
    assert_true(fx_count_keys(fx->servers[i], REDLOCK_FENCE_KEY_PREFIX "{sf:sem:bounded}*") <=
                (long)BOUNDED_LIMIT);
  }
}

/* ---- extend, watch, close -------------------------------------------------------------- */

typedef struct {
  fx_t *fx;
  redlock_lock_t *p;
  uint64_t until;
  int broken;
} survive_t;

/* True once `until` is reached; records whether the permit was ever off a
 * quorum or locally expired meanwhile. */
static int survive_poll(void *arg) {
  survive_t *s = arg;
  if (redlock_lock_is_lost(s->p) ||
      fx_holding(s->fx, s->fx->n, permit_key(s->p), redlock_lock_value(s->p)) < s->fx->n / 2 + 1)
    s->broken = 1;
  return s->broken || rh_now_ms() >= s->until;
}

static void test_sem_extend_watch_close(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:sem:extend";
  char limit_key[128];
  fx_derived_name(limit_key, sizeof limit_key, "", name, ":sem:limit");
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *p = NULL, *q = NULL;

  assert_int_equal(redlock_semaphore_acquire(c, name, 2, 1000, 0, &p), REDLOCK_OK);
  assert_int_equal(redlock_extend(c, p, 8000), REDLOCK_OK);
  assert_true(redlock_lock_validity_ms(p) > 5000);
  /* On every master (the last one's reply may still be on its way). */
  const char *const extended[] = {permit_key(p), limit_key};
  assert_true(fx_wait_keys_pttl_above(fx, extended, 2, 5000, 3000));
  assert_int_equal(redlock_extend(c, p, 400), REDLOCK_OK);

  /* Watched: alive well past its ttl. */
  assert_int_equal(redlock_watch(c, p, NULL, NULL), REDLOCK_OK);
  survive_t s = {fx, p, rh_now_ms() + 1600, 0};
  assert_true(rh_wait_until(survive_poll, &s, 10000));
  assert_false(s.broken);
  assert_int_equal(redlock_unlock(c, p), REDLOCK_OK);

  /* close releases the permits still held, everywhere. */
  redlock_t *d = fx_open(fx, 1, fx_options(fx, 1, fx->n, REDLOCK_LOG_WARN));
  assert_int_equal(redlock_semaphore_acquire(d, name, 2, 20000, 0, &q), REDLOCK_OK);
  char key[128];
  snprintf(key, sizeof key, "%s", permit_key(q));
  fx_close(fx, 1);
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], key, 3000));
}

/* ---- reentrancy does not apply ------------------------------------------------------------ */

static void test_sem_not_reentrant(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:sem:reent";
  redlock_options_t *opts = fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_reentrant(opts, 1), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  redlock_lock_t *p[3] = {NULL}, *x = NULL;
  /* One thread, one client, reentrancy on: two permits are two slots. */
  assert_int_equal(redlock_semaphore_acquire(c, name, 2, 10000, 0, &p[0]), REDLOCK_OK);
  assert_int_equal(redlock_semaphore_acquire(c, name, 2, 10000, 0, &p[1]), REDLOCK_OK);
  assert_string_not_equal(redlock_lock_resource(p[0]), redlock_lock_resource(p[1]));
  assert_string_not_equal(redlock_lock_value(p[0]), redlock_lock_value(p[1]));
  assert_int_equal(redlock_semaphore_acquire(c, name, 2, 10000, 0, &p[2]), REDLOCK_ELOCKED);
  /* A plain lock named like a slot is no reentrant hold on the permit: its
   * key is the slot's, which a plain lock may not take (EINVAL). */
  assert_int_equal(redlock_trylock(c, permit_key(p[0]), 1000, &x), REDLOCK_EINVAL);
  /* Nor are read-write holds shared: two reads are two members. */
  redlock_lock_t *r[2] = {NULL};
  assert_int_equal(redlock_rwlock_read(c, "sf:rw:reent", 10000, 0, &r[0]), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_read(c, "sf:rw:reent", 10000, 0, &r[1]), REDLOCK_OK);
  assert_string_not_equal(redlock_lock_value(r[0]), redlock_lock_value(r[1]));
  assert_int_equal(fx_zcard(fx->servers[0], "{sf:rw:reent}:rw:read"), 2);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(redlock_unlock(c, p[i]), REDLOCK_OK);
    assert_int_equal(redlock_unlock(c, r[i]), REDLOCK_OK);
  }
}

/* ---- the callback forms ------------------------------------------------------------------ */

typedef struct {
  redlock_t *client;
  fx_event_t done;
  atomic_int calls;
  int status;
  redlock_lock_t *lock;
  pthread_t thread;
  int nested_rc; /* a blocking call made inside the callback */
} async_rec_t;

static void async_cb(int status, redlock_lock_t *lock, void *arg) {
  async_rec_t *r = arg;
  r->status = status;
  r->lock = lock;
  r->thread = pthread_self();
  redlock_lock_t *nested = NULL;
  /* On the loop thread a blocking call would wait for itself. */
  r->nested_rc = redlock_semaphore_acquire(r->client, "sf:sem:async:nested", 1, 1000, 0, &nested);
  atomic_fetch_add(&r->calls, 1);
  fx_event_post(&r->done);
}

static void test_async_forms(void **state) {
  fx_t *fx = *state;
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  async_rec_t r[4];
  for (int i = 0; i < 4; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].client = c;
    r[i].status = 1;
    fx_event_init(&r[i].done);
  }
  assert_int_equal(redlock_semaphore_acquire_async(c, "sf:sem:async", 1, 5000, 0, async_cb, &r[0]),
                   REDLOCK_OK);
  assert_true(fx_event_wait(&r[0].done, 10000));
  /* Full now: one try (wait 0) is refused through the callback. */
  assert_int_equal(redlock_semaphore_acquire_async(c, "sf:sem:async", 1, 5000, 0, async_cb, &r[1]),
                   REDLOCK_OK);
  assert_true(fx_event_wait(&r[1].done, 10000));
  assert_int_equal(redlock_rwlock_read_async(c, "sf:rw:async", 5000, 0, async_cb, &r[2]),
                   REDLOCK_OK);
  assert_true(fx_event_wait(&r[2].done, 10000));
  assert_int_equal(redlock_rwlock_write_async(c, "sf:rw:async", 5000, 300, async_cb, &r[3]),
                   REDLOCK_OK);
  assert_true(fx_event_wait(&r[3].done, 10000));

  pthread_t self = pthread_self();
  int expect[4] = {REDLOCK_OK, REDLOCK_ELOCKED, REDLOCK_OK, REDLOCK_ETIMEDOUT};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(atomic_load(&r[i].calls), 1);
    assert_int_equal(r[i].status, expect[i]);
    assert_true(expect[i] == REDLOCK_OK ? r[i].lock != NULL : r[i].lock == NULL);
    assert_false(pthread_equal(r[i].thread, self)); /* the client's loop thread */
    assert_int_equal(r[i].nested_rc, REDLOCK_EWOULDBLOCK);
  }
  assert_string_equal(redlock_lock_resource(r[0].lock), "sf:sem:async:sem:0");
  assert_string_equal(redlock_lock_resource(r[2].lock), "sf:rw:async");
  assert_int_equal(redlock_unlock(c, r[0].lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, r[2].lock), REDLOCK_OK);
  for (int i = 0; i < 4; i++)
    fx_event_destroy(&r[i].done);
}

/* ---- the partition schedule ---------------------------------------------------------------- */

/* Valid permits among the handles (a NULL handle is none). */
static int valid_count(redlock_lock_t *const *p, int n) {
  int valid = 0;
  for (int i = 0; i < n; i++)
    valid += p[i] != NULL && redlock_lock_validity_ms(p[i]) > 0;
  return valid;
}

static void pause_set(fx_t *fx, unsigned mask, int pause) {
  for (size_t i = 0; i < fx->n; i++)
    if (mask >> i & 1)
      assert_int_equal(pause ? rh_server_pause(fx->servers[i]) : rh_server_resume(fx->servers[i]),
                       0);
}

/* Bit i set when master i holds the permit's value (all must be running). */
static unsigned held_mask(fx_t *fx, redlock_lock_t *p) {
  unsigned mask = 0;
  for (size_t i = 0; i < fx->n; i++)
    if (fx_key_is(fx->servers[i], permit_key(p), redlock_lock_value(p)))
      mask |= 1u << i;
  return mask;
}

/* A client opened while the masters in `stopped` are SIGSTOPped: it sees
 * only the others (its connections to the stopped ones time out). */
static redlock_t *open_seeing(fx_t *fx, int slot, unsigned stopped) {
  pause_set(fx, stopped, 1);
  redlock_options_t *opts = fx_options(fx, slot, fx->n, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_timeouts(opts, 300, FX_SF_REQUEST_MS), 0);
  return fx_open(fx, slot, opts);
}

static void test_sem_partition_schedule(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:sem:partition";
  redlock_lock_t *p[3] = {NULL}; /* A, B, C */
  const uint32_t ttl = 30000;

  /* A sees {0,1,2}. */
  redlock_t *a = open_seeing(fx, 0, 0x18);
  assert_int_equal(redlock_semaphore_acquire(a, name, 2, ttl, 0, &p[0]), REDLOCK_OK);
  pause_set(fx, 0x18, 0);
  assert_int_equal(held_mask(fx, p[0]), 0x07); /* never sent to the stopped ones */
  assert_true(valid_count(p, 3) <= 2);

  /* B sees {2,3,4}: A's slot is held on 2, so B wins the other slot. */
  redlock_t *b = open_seeing(fx, 1, 0x03);
  assert_int_equal(redlock_semaphore_acquire(b, name, 2, ttl, 0, &p[1]), REDLOCK_OK);
  assert_string_not_equal(redlock_lock_resource(p[0]), redlock_lock_resource(p[1]));
  pause_set(fx, 0x03, 0);
  assert_int_equal(held_mask(fx, p[1]), 0x1c);
  assert_true(valid_count(p, 3) <= 2);

  /* C sees {0,1,3}: no master holds more than 2 permits, and a per-master
   * count would admit C on all three.  Here both slots are refused. */
  redlock_t *c = open_seeing(fx, 2, 0x14);
  assert_int_equal(redlock_semaphore_acquire(c, name, 2, ttl, 0, &p[2]), REDLOCK_ELOCKED);
  assert_int_equal(redlock_semaphore_acquire(c, name, 2, ttl, 1500, &p[2]), REDLOCK_ETIMEDOUT);
  assert_null(p[2]);
  pause_set(fx, 0x14, 0);
  assert_int_equal(valid_count(p, 3), 2);

  /* A releases: now C gets A's slot. */
  char slot_a[128];
  snprintf(slot_a, sizeof slot_a, "%s", redlock_lock_resource(p[0]));
  assert_int_equal(redlock_unlock(a, p[0]), REDLOCK_OK);
  p[0] = NULL;
  assert_int_equal(redlock_semaphore_acquire(c, name, 2, ttl, 5000, &p[2]), REDLOCK_OK);
  assert_string_equal(redlock_lock_resource(p[2]), slot_a);
  assert_true(valid_count(p, 3) <= 2);
  assert_int_equal(redlock_unlock(b, p[1]), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, p[2]), REDLOCK_OK);
}

/* ---- chaos: random pauses, never more than limit holders ---------------------------------- */

#define CHAOS_LIMIT 2
#define CHAOS_WORKERS 3
#define CHAOS_MS 8000u

static int sem_acquire(redlock_t *client, unsigned *seed, redlock_lock_t **hold, int *exclusive) {
  (void)seed;
  *exclusive = 0;
  return redlock_semaphore_acquire(client, "sf:sem:chaos", CHAOS_LIMIT, 1500, 1000, hold);
}

static void test_sem_chaos(void **state) {
  fx_t *fx = *state;
  static fx_history_t history;
  fx_history_init(&history);
  const fx_chaos_t chaos = {CHAOS_WORKERS, sem_acquire, 100000u, 1234u, 42, CHAOS_MS};
  unsigned grants = fx_chaos_run(fx, &chaos, &history, NULL);
  int worst = fx_history_max_depth(&history);
  if (fx_verbose())
    print_message("chaos: %u grants, deepest overlap %d\n", grants, worst);
  assert_true(grants > 0);
  if (worst > CHAOS_LIMIT)
    fail_msg("%d permits held at once (limit %d)", worst, CHAOS_LIMIT);
  fx_history_destroy(&history);
}

FX_MAIN("tests", &fx_profile_safety, FX_TEST(test_sem_admits_limit, 3),
        FX_TEST(test_sem_release_wakes_waiter, 3), FX_TEST(test_sem_burst_wakes_each_waiter, 3),
        FX_TEST(test_sem_dead_holder_expires, 3), FX_TEST(test_sem_limit_mismatch, 3),
        FX_TEST(test_sem_keys_bounded, 3), FX_TEST(test_sem_extend_watch_close, 3),
        FX_TEST(test_sem_not_reentrant, 3), FX_TEST(test_async_forms, 3),
        FX_TEST(test_sem_partition_schedule, 5), FX_TEST(test_sem_chaos, 5))
