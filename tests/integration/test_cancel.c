/* test_cancel.c: redlock_cancel against real masters (three redis-server
 * processes):
 *  - a wait on a held lock, canceled: ECANCELED at once, its subscription
 *    to the release channel dropped on every master, no lock command (SET,
 *    EVAL, EVALSHA: INFO commandstats) reaches any master after the cancel,
 *    the holder's lock is untouched, and its release is not taken by the
 *    canceled waiter;
 *  - an acquisition whose round is out (two masters SIGSTOPped with the SET
 *    unread): ECANCELED while they are still stopped; once they run, the
 *    round wins a quorum, which is released, not granted: no key is left on
 *    any master, and nothing but that release follows;
 *  - a cancel after the grant: REDLOCK_CANCEL_LATE, the lock is the
 *    caller's; unknown ids: EINVAL;
 *  - a cancel racing with completion from another thread, many times: the
 *    cancel's answer and the callback's status always agree (0 <=>
 *    ECANCELED), every callback runs once, no key is left (run it under the
 *    TSan build for the data races);
 *  - a waiting semaphore permit and lock_many, canceled. */
#include "fixture.h"

#define TTL_MS 30000
#define QUIET_MS 1000 /* how long the masters are watched for a stray command */

/* Lock commands a master has run (INFO commandstats: SET, EVAL, EVALSHA;
 * commands run by scripts count too). */
static long long lock_commands(rh_server_t *s) {
  static const char *const names[] = {
      "cmdstat_set:calls=", "cmdstat_evalsha:calls=", "cmdstat_eval:calls="};
  char buf[16384];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "INFO commandstats"), 0);
  long long n = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *p = strstr(buf, names[i]);
    if (p != NULL)
      n += strtoll(p + strlen(names[i]), NULL, 10);
  }
  return n;
}

static long long set_calls(rh_server_t *s) {
  char buf[16384];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "INFO commandstats"), 0);
  const char *p = strstr(buf, "cmdstat_set:calls=");
  return p != NULL ? strtoll(p + strlen("cmdstat_set:calls="), NULL, 10) : 0;
}

/* Predicate (arg: a NULL-terminated array of clients): no client has a
 * request queued or unanswered on any master (its stats), so that what a
 * quorum decided before does not trail into a quiet window: a round is
 * decided by a quorum, and the last master's request (and the release that
 * follows it there) may still be on its way. */
static int pred_clients_idle(void *arg) {
  redlock_t *const *clients = arg;
  static char text[65536];
  for (; *clients != NULL; clients++) {
    int n = redlock_stats(*clients, REDLOCK_STATS_PROMETHEUS, text, sizeof text);
    assert_true(n > 0 && (size_t)n < sizeof text);
    for (const char *p = strstr(text, "\nredlock_master_queued_requests{"); p != NULL;
         p = strstr(p + 1, "\nredlock_master_queued_requests{")) {
      const char *v = strchr(p, '}');
      if (v == NULL || strtoll(v + 1, NULL, 10) != 0)
        return 0;
    }
  }
  return 1;
}

#define assert_clients_idle(...)                                                                   \
  do {                                                                                             \
    redlock_t *idle_clients_[] = {__VA_ARGS__, NULL};                                              \
    assert_true(rh_wait_until(pred_clients_idle, idle_clients_, FX_SETTLE_MS));                    \
  } while (0)

typedef struct {
  fx_t *fx;
  long long base[FX_MAX_SERVERS];
} quiet_t;

static void quiet_mark(quiet_t *q, fx_t *fx) {
  q->fx = fx;
  for (size_t i = 0; i < fx->n; i++)
    q->base[i] = lock_commands(fx->servers[i]);
}

/* Predicate: some master ran a lock command since quiet_mark. */
static int pred_not_quiet(void *arg) {
  quiet_t *q = arg;
  for (size_t i = 0; i < q->fx->n; i++)
    if (lock_commands(q->fx->servers[i]) != q->base[i])
      return 1;
  return 0;
}

/* Fails the test if a master runs a lock command within QUIET_MS (the
 * bound of the observation, not a wait for an outcome). */
static void assert_quiet(quiet_t *q, const char *what) {
  if (rh_wait_until(pred_not_quiet, q, QUIET_MS))
    fail_msg("%s: a master ran a lock command after the cancel", what);
}

/* A client that waits by release notices, with a fallback retry far beyond
 * the test (10 s), so that a waiter sits still between attempts. */
static redlock_t *waiter_client(fx_t *fx, int slot) {
  return fx_open(fx, slot, fx_options_retry(fx, slot, REDLOCK_LOG_WARN, -1, 10000, 0));
}

static void test_cancel_wait_on_held_lock(void **state) {
  fx_t *fx = *state;
  FX_NAME(res, "cancel:wait");
  char channel[256];
  fx_channel_of(channel, sizeof channel, res);
  redlock_t *holder = fx_client(fx, 0, 10, 0);
  redlock_lock_t *held = fx_hold(fx, holder, res, TTL_MS);
  char value[128];
  fx_copy_value(value, sizeof value, held);
  redlock_t *w = waiter_client(fx, 1);
  fx_rec_t rec;
  fx_rec_init(&rec);
  uint64_t id = 0;
  FX_ASSERT_RC(fx, w, redlock_lock_async_ex(w, res, TTL_MS, 60000, fx_rec_lock_cb, &rec, &id),
               REDLOCK_OK);
  assert_true(id != 0);
  /* Its first attempt was refused: it waits, subscribed on every master. */
  assert_true(fx_wait_subscribed(fx, fx->n, channel, 1, FX_SETTLE_MS));
  assert_clients_idle(holder, w);
  quiet_t q;
  quiet_mark(&q, fx);
  uint64_t t0 = rh_now_ms();
  FX_ASSERT_RC(fx, w, redlock_cancel(w, id), 0);
  assert_true(fx_rec_wait(&rec, 2000));
  printf("  canceled wait ended in %llu ms\n", (unsigned long long)(rh_now_ms() - t0));
  assert_int_equal(atomic_load(&rec.status), REDLOCK_ECANCELED);
  assert_null(atomic_load(&rec.lock));
  assert_true(fx_wait_subscribed_at_most(fx, fx->n, channel, 0, FX_SETTLE_MS));
  assert_quiet(&q, "canceled wait");
  FX_ASSERT_RC(fx, w, redlock_cancel(w, id), REDLOCK_CANCEL_LATE);
  /* The holder is untouched, and its release is not taken by the waiter. */
  assert_int_equal(fx_holding(fx, fx->n, res, value), fx->n);
  assert_true(redlock_lock_validity_ms(held) > 0);
  assert_false(redlock_lock_is_lost(held));
  FX_ASSERT_RC(fx, holder, redlock_unlock(holder, held), REDLOCK_OK);
  fx_assert_absent_everywhere(fx, res, FX_SETTLE_MS);
  assert_int_equal(atomic_load(&rec.calls), 1);
}

typedef struct {
  rh_server_t *server;
  const char *key;
} key_on_t;

static int pred_key_on(void *arg) {
  key_on_t *k = arg;
  return fx_exists(k->server, k->key) == 1;
}

static void test_cancel_round_in_flight(void **state) {
  fx_t *fx = *state;
  FX_NAME(res, "cancel:inflight");
  /* The round must outlast the masters' stop, so that their replies are
   * late yes votes, not timeouts. */
  redlock_options_t *opts = fx_options_retry(fx, 0, REDLOCK_LOG_WARN, 3, 10, 0);
  assert_int_equal(redlock_options_set_timeouts(opts, FX_IT_CONNECT_MS, 5000), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  long long sets0[FX_MAX_SERVERS];
  for (size_t i = 0; i < fx->n; i++)
    sets0[i] = set_calls(fx->servers[i]);
  assert_int_equal(fx_pause(fx, 0x3, 1), 0); /* masters 0 and 1 read nothing */
  fx_rec_t rec;
  fx_rec_init(&rec);
  uint64_t id = 0;
  FX_ASSERT_RC(fx, c, redlock_lock_async_ex(c, res, TTL_MS, 0, fx_rec_lock_cb, &rec, &id),
               REDLOCK_OK);
  /* The round is out: master 2 took the key; 0 and 1 have it unread. */
  key_on_t on2 = {fx->servers[2], res};
  assert_true(rh_wait_until(pred_key_on, &on2, FX_SETTLE_MS));
  FX_ASSERT_RC(fx, c, redlock_cancel(c, id), 0);
  int told = fx_rec_wait(&rec, 2000); /* while the round is still out */
  assert_int_equal(fx_pause(fx, 0x3, 0), 0);
  assert_true(told);
  assert_int_equal(atomic_load(&rec.status), REDLOCK_ECANCELED);
  /* The stopped masters run the SET (a quorum: won after the cancel), and
   * the release that follows; then no key is left anywhere. */
  fx_assert_absent_everywhere(fx, res, FX_SETTLE_MS);
  assert_clients_idle(c);
  for (size_t i = 0; i < fx->n; i++) {
    long long sets = set_calls(fx->servers[i]);
    if (sets != sets0[i] + 1)
      fail_msg("master %zu ran %lld SETs for one attempt", i, sets - sets0[i]);
  }
  quiet_t q;
  quiet_mark(&q, fx);
  assert_quiet(&q, "canceled round");
  assert_int_equal(atomic_load(&rec.calls), 1);
  FX_ASSERT_RC(fx, c, redlock_cancel(c, id), REDLOCK_CANCEL_LATE);
  /* The client still works, and the resource is free. */
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, c, redlock_trylock(c, res, TTL_MS, &lock), REDLOCK_OK);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
}

static void test_cancel_after_completion_and_bad_ids(void **state) {
  fx_t *fx = *state;
  FX_NAME(res, "cancel:late");
  redlock_t *c = fx_client(fx, 0, 10, 0);
  fx_rec_t rec;
  fx_rec_init(&rec);
  uint64_t id = 0;
  FX_ASSERT_RC(fx, c, redlock_lock_async_ex(c, res, TTL_MS, 0, fx_rec_lock_cb, &rec, &id),
               REDLOCK_OK);
  assert_true(fx_rec_wait(&rec, FX_SETTLE_MS));
  assert_int_equal(atomic_load(&rec.status), REDLOCK_OK);
  FX_ASSERT_RC(fx, c, redlock_cancel(c, id), REDLOCK_CANCEL_LATE);
  redlock_lock_t *lock = atomic_load(&rec.lock);
  assert_true(redlock_lock_validity_ms(lock) > 0);
  assert_value_everywhere(fx, res, redlock_lock_value(lock));
  FX_ASSERT_RC(fx, c, redlock_cancel(c, 0), REDLOCK_EINVAL);
  FX_ASSERT_RC(fx, c, redlock_cancel(c, id + 1000), REDLOCK_EINVAL);
  FX_ASSERT_RC(fx, c, redlock_cancel(NULL, id), REDLOCK_EINVAL);
  FX_ASSERT_RC(fx, c, redlock_unlock(c, lock), REDLOCK_OK);
  fx_assert_absent_everywhere(fx, res, FX_SETTLE_MS);
  assert_int_equal(atomic_load(&rec.calls), 1);
}

/* ---- a cancel racing with completion, from another thread ---- */

#define RACE_ROUNDS 200

typedef struct {
  redlock_t *client;
  _Atomic uint64_t id; /* published by the submitter; 0: none */
  atomic_int rc;       /* the cancel's answer */
  atomic_uint spin;    /* how long the canceler waits before it cancels */
  fx_event_t go, done;
  atomic_int stop;
} race_t;

static void *canceler_main(void *arg) {
  race_t *r = arg;
  for (;;) {
    if (!fx_event_wait(&r->go, 20000) || atomic_load(&r->stop))
      return NULL;
    for (volatile unsigned i = 0; i < atomic_load(&r->spin); i++) {
    }
    atomic_store(&r->rc, redlock_cancel(r->client, atomic_load(&r->id)));
    fx_event_post(&r->done);
  }
}

static void test_cancel_races_completion(void **state) {
  fx_t *fx = *state;
  FX_NAME(res, "cancel:race");
  race_t r;
  memset(&r, 0, sizeof r);
  r.client = fx_client(fx, 0, 10, 0);
  fx_event_init(&r.go);
  fx_event_init(&r.done);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, canceler_main, &r), 0);
  unsigned canceled = 0, late = 0;
  for (unsigned round = 0; round < RACE_ROUNDS; round++) {
    fx_rec_t rec;
    fx_rec_init(&rec);
    uint64_t id = 0;
    /* From at once to a few milliseconds later: both sides of the race. */
    atomic_store(&r.spin, (round * 7919u) % (round % 2 ? 3000000u : 20000u));
    FX_ASSERT_RC(fx, r.client,
                 redlock_lock_async_ex(r.client, res, TTL_MS, 0, fx_rec_lock_cb, &rec, &id),
                 REDLOCK_OK);
    atomic_store(&r.id, id);
    fx_event_post(&r.go);
    assert_true(fx_event_wait(&r.done, FX_SETTLE_MS));
    assert_true(fx_rec_wait(&rec, FX_SETTLE_MS));
    int rc = atomic_load(&r.rc);
    int status = atomic_load(&rec.status);
    if (rc == 0) {
      canceled++;
      assert_int_equal(status, REDLOCK_ECANCELED);
    } else {
      late++;
      assert_int_equal(rc, REDLOCK_CANCEL_LATE);
      assert_int_not_equal(status, REDLOCK_ECANCELED);
    }
    if (status == REDLOCK_OK)
      FX_ASSERT_RC(fx, r.client, redlock_unlock(r.client, atomic_load(&rec.lock)), REDLOCK_OK);
    /* A canceled round may still be out: its release clears the key. */
    fx_assert_absent_everywhere(fx, res, FX_SETTLE_MS);
    assert_int_equal(atomic_load(&rec.calls), 1);
  }
  atomic_store(&r.stop, 1);
  fx_event_post(&r.go);
  assert_int_equal(pthread_join(t, NULL), 0);
  fx_event_destroy(&r.go);
  fx_event_destroy(&r.done);
  printf("  %u canceled, %u too late\n", canceled, late);
  assert_true(canceled > 0);
}

/* A permit that waits for a full semaphore, and a lock_many, canceled. */
static void test_cancel_semaphore_and_many(void **state) {
  fx_t *fx = *state;
  FX_NAME(name, "cancel:sem");
  redlock_t *holder = fx_client(fx, 0, 10, 0);
  redlock_lock_t *permit = NULL;
  FX_ASSERT_RC(fx, holder, redlock_semaphore_acquire(holder, name, 1, TTL_MS, 0, &permit),
               REDLOCK_OK);
  redlock_t *w = waiter_client(fx, 1);
  fx_rec_t rec;
  fx_rec_init(&rec);
  uint64_t id = 0;
  FX_ASSERT_RC(
      fx, w,
      redlock_semaphore_acquire_async_ex(w, name, 1, TTL_MS, 60000, fx_rec_lock_cb, &rec, &id),
      REDLOCK_OK);
  char channel[256];
  fx_derived_name(channel, sizeof channel, REDLOCK_RELEASE_CHANNEL_PREFIX, name, ":sem");
  assert_true(fx_wait_subscribed(fx, fx->n, channel, 1, FX_SETTLE_MS));
  assert_clients_idle(holder, w);
  quiet_t q;
  quiet_mark(&q, fx);
  FX_ASSERT_RC(fx, w, redlock_cancel(w, id), 0);
  assert_true(fx_rec_wait(&rec, 2000));
  assert_int_equal(atomic_load(&rec.status), REDLOCK_ECANCELED);
  assert_quiet(&q, "canceled permit");
  FX_ASSERT_RC(fx, holder, redlock_unlock(holder, permit), REDLOCK_OK);

  FX_NAME(a, "cancel:many:a");
  FX_NAME(b, "cancel:many:b");
  const char *const both[] = {a, b};
  fx_rec_t many;
  fx_rec_init(&many);
  FX_ASSERT_RC(fx, w, redlock_lock_many_async_ex(w, both, 2, TTL_MS, fx_rec_lock_cb, &many, &id),
               REDLOCK_OK);
  int rc = redlock_cancel(w, id);
  assert_true(rc == 0 || rc == REDLOCK_CANCEL_LATE);
  assert_true(fx_rec_wait(&many, FX_SETTLE_MS));
  int status = atomic_load(&many.status);
  assert_true(rc == 0 ? status == REDLOCK_ECANCELED : status == REDLOCK_OK);
  if (status == REDLOCK_OK)
    FX_ASSERT_RC(fx, w, redlock_unlock(w, atomic_load(&many.lock)), REDLOCK_OK);
  fx_assert_absent_everywhere(fx, a, FX_SETTLE_MS);
  fx_assert_absent_everywhere(fx, b, FX_SETTLE_MS);
}

FX_MAIN("cancel", &fx_profile_integration, FX_TEST(test_cancel_wait_on_held_lock, 3),
        FX_TEST(test_cancel_round_in_flight, 3),
        FX_TEST(test_cancel_after_completion_and_bad_ids, 3),
        FX_TEST(test_cancel_races_completion, 3), FX_TEST(test_cancel_semaphore_and_many, 3))
