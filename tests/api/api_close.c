/* api_close.c: redlock_close / redlock_close_uv semantics against N = 3 real
 * masters.
 *
 * Asserts, per include/redlock.h:
 *  - close with locks still held (single and lock_many, one of them watched)
 *    deletes their keys: GET is nil on every master once fx_close_client()
 *    returned, and the handles are freed (no leak under ASan);
 *  - pending lock calls (lock_async with wait_ms on a held resource, and one
 *    with an unbounded retry policy) end with REDLOCK_ECANCELED exactly once,
 *    promptly (close does not wait out their budgets);
 *  - close while a lock call waits between retries AND a lock is held:
 *    the call gets ECANCELED once and the held lock is still released;
 *  - calls made after close started (from a racing thread while the close is
 *    held open, and from the loop thread inside a callback) get
 *    REDLOCK_ECLOSED: lock, trylock, lock_async, extend, extend_async,
 *    unlock, unlock_async, watch, inspect, revoke; none of their callbacks ever runs;
 *  - redlock_close from inside one of the client's callbacks returns at once,
 *    releases the lock held, and the client is freed by its loop thread,
 *    which exits (thread count back to where it was; ASan finds no leak);
 *  - redlock_close_uv from inside a callback on an open_uv client: the
 *    closed callback runs once, uv_run returns, uv_loop_close() == 0;
 *  - redlock_close_uv before the loop ever ran: a lock call parked until the
 *    masters answer gets ECANCELED once, the closed callback runs once, the
 *    loop closes cleanly.
 */
#include <uv.h>

#include "fixture.h"
#include "redlock_uv.h"

#define TTL 10000u

static void test_close_releases_held_locks(void **state) {
  (void)state;
  redlock_t *client = fx_client(fx_group, 0, 10, 10);
  char a[128], b[128], c[128], d[128];
  fx_name(a, sizeof a, "close-a");
  fx_name(b, sizeof b, "close-b");
  fx_name(c, sizeof c, "close-c");
  fx_name(d, sizeof d, "close-d");
  redlock_lock_t *la = NULL, *lm = NULL, *lw = NULL;
  assert_int_equal(redlock_trylock(client, a, TTL, &la), REDLOCK_OK);
  const char *many[2] = {b, c};
  assert_int_equal(redlock_lock_many(client, many, 2, TTL, &lm), REDLOCK_OK);
  assert_int_equal(redlock_trylock(client, d, 1000, &lw), REDLOCK_OK);
  assert_int_equal(redlock_watch(client, lw, NULL, NULL), REDLOCK_OK);
  assert_value_everywhere(fx_group, a, redlock_lock_value(la));
  assert_value_everywhere(fx_group, b, redlock_lock_value(lm));
  assert_value_everywhere(fx_group, c, redlock_lock_value(lm));
  assert_value_everywhere(fx_group, d, redlock_lock_value(lw));

  fx_close_client(fx_group, client);
  /* Released on every master by the time close returned. */
  const char *keys[4] = {a, b, c, d};
  for (int i = 0; i < 4; i++)
    assert_int_equal(fx_count_value(fx_group, fx_group->n, keys[i], "(nil)"), fx_group->n);
}

static void test_close_cancels_pending(void **state) {
  (void)state;
  fx_contention_t k;
  fx_contend(fx_group, &k, "cancel", TTL, -1, 20, 20); /* unbounded retries */

  fx_rec_t waiting, retrying;
  fx_rec_init(&waiting);
  fx_rec_init(&retrying);
  assert_int_equal(redlock_lock_async(k.contender, k.res, TTL, 30000, fx_rec_lock_cb, &waiting),
                   REDLOCK_OK);
  assert_int_equal(redlock_lock_async(k.contender, k.res, TTL, 0, fx_rec_lock_cb, &retrying),
                   REDLOCK_OK);
  assert_true(rh_wait_until(fx_refused_once, k.contender, 5000));
  assert_int_equal(atomic_load(&waiting.calls), 0);
  assert_int_equal(atomic_load(&retrying.calls), 0);

  uint64_t t0 = rh_now_ms();
  fx_close_client(fx_group, k.contender);
  uint64_t took = rh_now_ms() - t0;
  /* close joined the loop thread: every callback that will run has run. */
  assert_int_equal(atomic_load(&waiting.calls), 1);
  assert_int_equal(atomic_load(&waiting.status), REDLOCK_ECANCELED);
  assert_null(atomic_load(&waiting.lock));
  assert_int_equal(atomic_load(&retrying.calls), 1);
  assert_int_equal(atomic_load(&retrying.status), REDLOCK_ECANCELED);
  assert_null(atomic_load(&retrying.lock));
  assert_true(took < 3000);
  /* The holder was not disturbed. */
  assert_value_everywhere(fx_group, k.res, redlock_lock_value(k.held));
  assert_int_equal(redlock_unlock(k.holder, k.held), REDLOCK_OK);
}

/* Close while a lock call is pending (waiting between retries) and a lock is
 * held: the pending call is canceled AND the held lock is still released. */
static void test_close_with_pending_and_held(void **state) {
  (void)state;
  redlock_t *holder = fx_client(fx_group, 0, 10, 10);
  redlock_t *client = fx_client(fx_group, -1, 50, 0);
  char res[128], own[128];
  fx_name(res, sizeof res, "pending-held");
  fx_name(own, sizeof own, "pending-held-own");
  redlock_lock_t *held = fx_hold(fx_group, holder, res, TTL);
  redlock_lock_t *mine = NULL;
  assert_int_equal(redlock_trylock(client, own, TTL, &mine), REDLOCK_OK);
  fx_rec_t pending;
  fx_rec_init(&pending);
  assert_int_equal(redlock_lock_async(client, res, TTL, 0, fx_rec_lock_cb, &pending), REDLOCK_OK);
  assert_true(rh_wait_until(fx_refused_once, client, 5000));

  fx_close_client(fx_group, client);
  assert_int_equal(atomic_load(&pending.calls), 1);
  assert_int_equal(atomic_load(&pending.status), REDLOCK_ECANCELED);
  size_t nil = fx_count_value(fx_group, fx_group->n, own, "(nil)");
  if (nil != fx_group->n)
    fprintf(stderr, "lock held at close still set on %zu of %zu masters after close\n",
            fx_group->n - nil, fx_group->n);
  assert_int_equal(nil, fx_group->n);
  assert_int_equal(redlock_unlock(holder, held), REDLOCK_OK);
}

/* ---- calls after close started ----------------------------------------------------- */

/* The calls the racing thread makes once close has begun. */
#define RACE_CALLS 10

typedef struct {
  redlock_t *client;
  redlock_lock_t *own; /* a lock the closing client still holds */
  char other[128];
  atomic_int closing;   /* set by the canceled callback (close has begun) */
  atomic_int race_done; /* set by the racing thread */
  int race_finished_in_time;
  int cancel_status;
  atomic_int cancel_calls;
  int rc_race[RACE_CALLS];
  int rc_loop[3];
  fx_rec_t never; /* callbacks of refused calls: must never run */
} race_t;

static int pred_closing(void *arg) { return atomic_load(&((race_t *)arg)->closing); }
static int pred_race_done(void *arg) { return atomic_load(&((race_t *)arg)->race_done); }

static void noop_lost(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)reason;
  (void)arg;
}

static void *racer_main(void *arg) {
  race_t *r = arg;
  if (!rh_wait_until(pred_closing, r, 10000))
    return NULL; /* the main thread reports the missing callback */
  redlock_t *c = r->client;
  redlock_lock_t *out = (redlock_lock_t *)1;
  r->rc_race[0] = redlock_trylock(c, r->other, TTL, &out);
  r->rc_race[1] = redlock_lock(c, r->other, TTL, &out);
  r->rc_race[2] = redlock_lock_async(c, r->other, TTL, 0, fx_rec_lock_cb, &r->never);
  r->rc_race[3] = redlock_extend(c, r->own, TTL);
  r->rc_race[4] = redlock_extend_async(c, r->own, TTL, fx_rec_done_cb, &r->never);
  r->rc_race[5] = redlock_watch(c, r->own, noop_lost, NULL);
  r->rc_race[6] = redlock_unlock_async(c, r->own, fx_rec_done_cb, &r->never);
  r->rc_race[7] = redlock_unlock(c, r->own);
  char view[256];
  r->rc_race[8] = redlock_inspect(c, r->other, REDLOCK_INSPECT_LOCK, view, sizeof view);
  r->rc_race[9] = redlock_revoke(c, r->other, NULL);
  if (out != NULL)
    r->rc_race[0] = 1; /* a failed call must leave *out NULL */
  atomic_store(&r->race_done, 1);
  return NULL;
}

/* The pending lock's callback: runs on the loop thread once close began.
 * It holds the close open until the racing thread has made its calls, so
 * those calls certainly fall between "close started" and "client freed". */
static void canceled_cb(int status, redlock_lock_t *lock, void *arg) {
  (void)lock;
  race_t *r = arg;
  r->cancel_status = status;
  atomic_fetch_add(&r->cancel_calls, 1);
  atomic_store(&r->closing, 1);
  r->race_finished_in_time = rh_wait_until(pred_race_done, r, 10000);
  /* From the loop thread too. */
  r->rc_loop[0] = redlock_lock_async(r->client, r->other, TTL, 0, fx_rec_lock_cb, &r->never);
  r->rc_loop[1] = redlock_extend_async(r->client, r->own, TTL, fx_rec_done_cb, &r->never);
  r->rc_loop[2] = redlock_unlock_async(r->client, r->own, fx_rec_done_cb, &r->never);
}

static void test_calls_after_close_started(void **state) {
  (void)state;
  redlock_t *holder = fx_client(fx_group, 0, 10, 10);
  redlock_t *client = fx_client(fx_group, -1, 20, 20);
  char res[128], own[128];
  fx_name(res, sizeof res, "race");
  fx_name(own, sizeof own, "race-own");
  race_t r;
  memset(&r, 0, sizeof r);
  r.client = client;
  fx_name(r.other, sizeof r.other, "race-other");
  atomic_init(&r.closing, 0);
  atomic_init(&r.race_done, 0);
  atomic_init(&r.cancel_calls, 0);
  fx_rec_init(&r.never);
  for (int i = 0; i < RACE_CALLS; i++)
    r.rc_race[i] = -100;

  redlock_lock_t *held = fx_hold(fx_group, holder, res, TTL);
  assert_int_equal(redlock_trylock(client, own, TTL, &r.own), REDLOCK_OK);
  assert_int_equal(redlock_lock_async(client, res, TTL, 0, canceled_cb, &r), REDLOCK_OK);
  assert_true(rh_wait_until(fx_refused_once, client, 5000));

  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, racer_main, &r), 0);
  fx_close_client(fx_group, client);
  assert_int_equal(pthread_join(th, NULL), 0);

  assert_int_equal(atomic_load(&r.cancel_calls), 1);
  assert_int_equal(r.cancel_status, REDLOCK_ECANCELED);
  assert_true(r.race_finished_in_time);
  for (int i = 0; i < RACE_CALLS; i++) {
    if (r.rc_race[i] != REDLOCK_ECLOSED)
      fprintf(stderr, "racing call %d returned %d (%s)\n", i, r.rc_race[i],
              redlock_err_name(r.rc_race[i]));
    assert_int_equal(r.rc_race[i], REDLOCK_ECLOSED);
  }
  for (int i = 0; i < 3; i++)
    assert_int_equal(r.rc_loop[i], REDLOCK_ECLOSED);
  assert_int_equal(atomic_load(&r.never.calls), 0);
  /* The racing calls took nothing.  (That the client's own lock is released
   * by this close is test_close_with_pending_and_held's business.) */
  assert_nil_everywhere(fx_group, r.other);
  assert_int_equal(redlock_unlock(holder, held), REDLOCK_OK);
}

/* ---- close from inside a callback --------------------------------------------------- */

typedef struct {
  redlock_t *client;
  int status;
  int rc_after;
  fx_rec_t never;
  atomic_int done;
} self_close_t;

static void close_in_cb(int status, redlock_lock_t *lock, void *arg) {
  (void)lock;
  self_close_t *s = arg;
  s->status = status;
  redlock_close(s->client); /* returns at once; lock is still held here */
  s->rc_after = redlock_lock_async(s->client, "api:after-close", TTL, 0, fx_rec_lock_cb, &s->never);
  atomic_store(&s->done, 1);
}

static int pred_self_close_done(void *arg) { return atomic_load(&((self_close_t *)arg)->done); }

typedef struct {
  int baseline;
} threads_t;

static int pred_threads_back(void *arg) {
  int n = fx_thread_count();
  return n > 0 && n <= ((threads_t *)arg)->baseline;
}

static void test_close_from_callback(void **state) {
  (void)state;
  threads_t t = {fx_thread_count()};
  assert_true(t.baseline > 0);
  redlock_t *client = fx_client(fx_group, 0, 10, 10);
  fx_forget(fx_group, client);                 /* it closes itself */
  assert_true(fx_thread_count() > t.baseline); /* the client's loop thread */
  FX_NAME(res, "self-close");
  self_close_t s;
  memset(&s, 0, sizeof s);
  s.client = client;
  s.rc_after = -100;
  fx_rec_init(&s.never);
  atomic_init(&s.done, 0);
  assert_int_equal(redlock_lock_async(client, res, TTL, 0, close_in_cb, &s), REDLOCK_OK);
  assert_true(rh_wait_until(pred_self_close_done, &s, 5000));
  assert_int_equal(s.status, REDLOCK_OK);
  assert_int_equal(s.rc_after, REDLOCK_ECLOSED);
  /* The held lock is released, and the loop thread frees the client and exits. */
  assert_true(fx_wait_nil_everywhere(fx_group, res, 5000));
  assert_true(rh_wait_until(pred_threads_back, &t, 5000));
  assert_int_equal(atomic_load(&s.never.calls), 0);
}

typedef struct {
  redlock_t *client;
  atomic_int closed;
  int status;
} uv_self_close_t;

static void count_closed(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void uv_closed_cb(void *arg) { atomic_fetch_add(&((uv_self_close_t *)arg)->closed, 1); }

static void close_uv_in_cb(int status, redlock_lock_t *lock, void *arg) {
  (void)lock;
  uv_self_close_t *s = arg;
  s->status = status;
  redlock_close_uv(s->client, uv_closed_cb, s);
}

static void test_close_uv_from_callback(void **state) {
  (void)state;
  uv_loop_t loop;
  redlock_t *client = fx_open_uv(fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10), &loop);
  FX_NAME(res, "uv-self-close");
  uv_self_close_t s;
  s.client = client;
  s.status = -100;
  atomic_init(&s.closed, 0);
  assert_int_equal(redlock_lock_async(client, res, TTL, 0, close_uv_in_cb, &s), REDLOCK_OK);
  /* The loop runs until the client is gone: lock, close in the callback,
   * release, handles closed. */
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(s.status, REDLOCK_OK);
  assert_int_equal(atomic_load(&s.closed), 1);
  assert_int_equal(uv_loop_close(&loop), 0);
  /* Released on every master by the time the closed callback ran. */
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, "(nil)"), fx_group->n);
}

/* close_uv before the loop ever ran: the lock call made meanwhile (parked
 * until the masters answer) is canceled once, and nothing leaks. */
static void test_close_uv_before_connected(void **state) {
  (void)state;
  uv_loop_t loop;
  redlock_t *client = fx_open_uv(fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10), &loop);
  FX_NAME(res, "uv-early-close");
  fx_rec_t parked;
  fx_rec_init(&parked);
  atomic_int closed;
  atomic_init(&closed, 0);
  assert_int_equal(redlock_lock_async(client, res, TTL, 0, fx_rec_lock_cb, &parked), REDLOCK_OK);
  redlock_close_uv(client, count_closed, &closed);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(atomic_load(&parked.calls), 1);
  assert_int_equal(atomic_load(&parked.status), REDLOCK_ECANCELED);
  assert_null(atomic_load(&parked.lock));
  assert_int_equal(atomic_load(&closed), 1);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_int_equal(fx_count_value(fx_group, fx_group->n, res, "(nil)"), fx_group->n);
}

FX_GROUP_MAIN(120, fx_group_test(test_close_releases_held_locks),
              fx_group_test(test_close_cancels_pending),
              fx_group_test(test_close_with_pending_and_held),
              fx_group_test(test_calls_after_close_started),
              fx_group_test(test_close_from_callback), fx_group_test(test_close_uv_from_callback),
              fx_group_test(test_close_uv_before_connected))
