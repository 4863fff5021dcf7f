/* api_loop.c: the callback forms and the loop thread (N = 3 real masters).
 *
 * Asserts, per include/redlock.h and include/redlock_uv.h:
 *  - a blocking call made inside a callback (on the client's loop thread)
 *    returns REDLOCK_EWOULDBLOCK (lock, trylock, lock_wait, lock_many, extend,
 *    unlock; unlock still releases the lock), while async calls from the
 *    callback are accepted and complete;
 *  - on a client opened with redlock_open_uv every blocking call returns
 *    REDLOCK_EWOULDBLOCK, from the loop's thread and from any other thread;
 *  - redlock_lock_async / extend_async / unlock_async run their callback
 *    exactly once, on the loop thread (never the caller's thread, whichever
 *    thread called), with the right status (OK, ELOCKED, ...), and the effect
 *    is visible in Redis (key value, PTTL after extend, key gone after unlock);
 *  - redlock_lock_async with wait_ms > 0 on a held resource ends with
 *    REDLOCK_ETIMEDOUT no earlier than the budget and not long after it;
 *  - redlock_open_uv on a loop run by the test thread: async lock / extend /
 *    unlock work (callbacks on the test thread), redlock_close_uv releases a
 *    lock still held, runs its closed callback once, after which uv_run()
 *    returns and uv_loop_close() == 0 (no handle leaked).
 */
#include <uv.h>

#include "fixture.h"
#include "redlock_uv.h"

#define TTL 10000u

/* ---- blocking calls inside a callback --------------------------------------------- */

typedef struct {
  redlock_t *client;
  char other[128];
  int rc_lock, rc_trylock, rc_wait, rc_many, rc_extend, rc_unlock, rc_async;
  int outs_null;
  int status;
  fx_rec_t inner; /* the async lock made from inside the callback */
  atomic_int done;
} in_cb_t;

static void blocking_inside_cb(int status, redlock_lock_t *lock, void *arg) {
  in_cb_t *t = arg;
  redlock_t *c = t->client;
  t->status = status;
  redlock_lock_t *out[4] = {(redlock_lock_t *)1, (redlock_lock_t *)1, (redlock_lock_t *)1,
                            (redlock_lock_t *)1};
  t->rc_lock = redlock_lock(c, t->other, TTL, &out[0]);
  t->rc_trylock = redlock_trylock(c, t->other, TTL, &out[1]);
  t->rc_wait = redlock_lock_wait(c, t->other, TTL, 1000, &out[2]);
  const char *many[1] = {t->other};
  t->rc_many = redlock_lock_many(c, many, 1, TTL, &out[3]);
  t->outs_null = out[0] == NULL && out[1] == NULL && out[2] == NULL && out[3] == NULL;
  if (status == REDLOCK_OK) {
    t->rc_extend = redlock_extend(c, lock, TTL);
    /* Unlock always lets go of the handle, even when it cannot wait. */
    t->rc_unlock = redlock_unlock(c, lock);
  }
  /* The callback forms are fine on the loop thread. */
  t->rc_async = redlock_lock_async(c, t->other, TTL, 0, fx_rec_lock_cb, &t->inner);
  atomic_store(&t->done, 1);
}

static int pred_done(void *arg) { return atomic_load(&((in_cb_t *)arg)->done); }

static void test_blocking_call_in_callback(void **state) {
  (void)state;
  redlock_t *client = fx_client(fx_group, 0, 10, 10);
  in_cb_t t;
  memset(&t, 0, sizeof t);
  t.client = client;
  fx_rec_init(&t.inner);
  atomic_init(&t.done, 0);
  FX_NAME(res, "incb");
  fx_name(t.other, sizeof t.other, "incb-other");

  assert_int_equal(redlock_lock_async(client, res, TTL, 0, blocking_inside_cb, &t), REDLOCK_OK);
  assert_true(rh_wait_until(pred_done, &t, 5000));
  assert_int_equal(t.status, REDLOCK_OK);
  assert_int_equal(t.rc_lock, REDLOCK_EWOULDBLOCK);
  assert_int_equal(t.rc_trylock, REDLOCK_EWOULDBLOCK);
  assert_int_equal(t.rc_wait, REDLOCK_EWOULDBLOCK);
  assert_int_equal(t.rc_many, REDLOCK_EWOULDBLOCK);
  assert_true(t.outs_null);
  assert_int_equal(t.rc_extend, REDLOCK_EWOULDBLOCK);
  assert_int_equal(t.rc_unlock, REDLOCK_EWOULDBLOCK);
  assert_int_equal(t.rc_async, REDLOCK_OK);
  /* The EWOULDBLOCK unlock still released the lock. */
  assert_true(fx_wait_nil_everywhere(fx_group, res, 5000));
  /* The async lock made from the callback completes. */
  assert_true(fx_rec_wait(&t.inner, 5000));
  assert_int_equal(atomic_load(&t.inner.status), REDLOCK_OK);
  redlock_lock_t *inner = atomic_load(&t.inner.lock);
  assert_non_null(inner);
  assert_value_everywhere(fx_group, t.other, redlock_lock_value(inner));
  assert_int_equal(redlock_unlock(client, inner), REDLOCK_OK);
  fx_close_client(fx_group, client);
  assert_int_equal(atomic_load(&t.inner.calls), 1);
  assert_nil_everywhere(fx_group, t.other);
}

/* ---- async forms on a client with its own thread ------------------------------------ */

typedef struct {
  redlock_t *client;
  const char *res;
  fx_rec_t *rec;
  int rc;
  pthread_t self;
} caller_t;

static void *call_lock_async(void *arg) {
  caller_t *c = arg;
  c->self = pthread_self();
  c->rc = redlock_lock_async(c->client, c->res, TTL, 0, fx_rec_lock_cb, c->rec);
  return NULL;
}

/* redlock_lock_async(client, res) from a thread of its own (joined): the
 * caller's thread, for checking that the callback runs elsewhere. */
static pthread_t lock_async_from_thread(redlock_t *client, const char *res, fx_rec_t *rec) {
  caller_t caller = {client, res, rec, -100, pthread_self()};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, call_lock_async, &caller), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(caller.rc, REDLOCK_OK);
  return caller.self;
}

static void test_async_callbacks(void **state) {
  (void)state;
  redlock_t *client = fx_client(fx_group, 1, 10, 10);
  pthread_t self = pthread_self();
  char res[128], res2[128];
  fx_name(res, sizeof res, "async");
  fx_name(res2, sizeof res2, "async2");
  fx_rec_t locked, extended, unlocked, refused, from_thread, unlocked2;
  fx_rec_init(&locked);
  fx_rec_init(&extended);
  fx_rec_init(&unlocked);
  fx_rec_init(&refused);
  fx_rec_init(&from_thread);
  fx_rec_init(&unlocked2);

  /* lock */
  assert_int_equal(redlock_lock_async(client, res, 5000, 0, fx_rec_lock_cb, &locked), REDLOCK_OK);
  assert_true(fx_rec_wait(&locked, 5000));
  assert_int_equal(atomic_load(&locked.status), REDLOCK_OK);
  redlock_lock_t *lock = atomic_load(&locked.lock);
  assert_non_null(lock);
  pthread_t loop_thread = locked.thread;
  assert_false(pthread_equal(loop_thread, self));
  assert_value_everywhere(fx_group, res, redlock_lock_value(lock));
  assert_true(redlock_lock_validity_ms(lock) > 0);

  /* a second lock on the held resource: ELOCKED after the retries */
  assert_int_equal(redlock_lock_async(client, res, 5000, 0, fx_rec_lock_cb, &refused), REDLOCK_OK);
  assert_true(fx_rec_wait(&refused, 5000));
  assert_int_equal(atomic_load(&refused.status), REDLOCK_ELOCKED);
  assert_null(atomic_load(&refused.lock));
  assert_true(pthread_equal(refused.thread, loop_thread));

  /* extend: PTTL goes past the original ttl on every master */
  assert_int_equal(redlock_extend_async(client, lock, 30000, fx_rec_done_cb, &extended),
                   REDLOCK_OK);
  assert_true(fx_rec_wait(&extended, 5000));
  assert_int_equal(atomic_load(&extended.status), REDLOCK_OK);
  assert_true(pthread_equal(extended.thread, loop_thread));
  assert_pttl_above_everywhere(fx_group, res, 5000);
  assert_true(redlock_lock_validity_ms(lock) > 5000);

  /* unlock */
  assert_int_equal(redlock_unlock_async(client, lock, fx_rec_done_cb, &unlocked), REDLOCK_OK);
  assert_true(fx_rec_wait(&unlocked, 5000));
  assert_int_equal(atomic_load(&unlocked.status), REDLOCK_OK);
  assert_true(pthread_equal(unlocked.thread, loop_thread));
  assert_nil_everywhere(fx_group, res);

  /* called from another thread: the callback still runs on the loop thread */
  pthread_t caller = lock_async_from_thread(client, res2, &from_thread);
  assert_true(fx_rec_wait(&from_thread, 5000));
  assert_int_equal(atomic_load(&from_thread.status), REDLOCK_OK);
  assert_true(pthread_equal(from_thread.thread, loop_thread));
  assert_false(pthread_equal(from_thread.thread, caller));
  redlock_lock_t *lock2 = atomic_load(&from_thread.lock);
  assert_int_equal(redlock_unlock_async(client, lock2, fx_rec_done_cb, &unlocked2), REDLOCK_OK);
  assert_true(fx_rec_wait(&unlocked2, 5000));
  assert_int_equal(atomic_load(&unlocked2.status), REDLOCK_OK);

  /* After close no callback runs any more: each ran exactly once. */
  fx_close_client(fx_group, client);
  fx_rec_t *all[] = {&locked, &extended, &unlocked, &refused, &from_thread, &unlocked2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    assert_int_equal(atomic_load(&all[i]->calls), 1);
    assert_int_equal(atomic_load(&all[i]->other_thread), 0);
  }
  assert_nil_everywhere(fx_group, res2);
}

static void test_lock_async_wait_times_out(void **state) {
  (void)state;
  fx_contention_t k;
  fx_contend(fx_group, &k, "async-wait", TTL, 0, 20, 20);

  const uint32_t budget = 400;
  fx_rec_t rec;
  fx_rec_init(&rec);
  uint64_t t0 = rh_now_ms();
  assert_int_equal(redlock_lock_async(k.contender, k.res, TTL, budget, fx_rec_lock_cb, &rec),
                   REDLOCK_OK);
  assert_true(fx_rec_wait(&rec, (int)budget + 5000));
  uint64_t elapsed = rh_now_ms() - t0;
  assert_int_equal(atomic_load(&rec.status), REDLOCK_ETIMEDOUT);
  assert_null(atomic_load(&rec.lock));
  /* Deadline-bounded: not before the budget, and not long after it. */
  assert_true(elapsed + 2 >= budget);
  assert_true(elapsed <= budget + 3000);
  /* The holder still holds. */
  assert_value_everywhere(fx_group, k.res, redlock_lock_value(k.held));
  assert_int_equal(redlock_unlock(k.holder, k.held), REDLOCK_OK);
  fx_close_client(fx_group, k.contender);
  fx_close_client(fx_group, k.holder);
  assert_int_equal(atomic_load(&rec.calls), 1);
}

/* ---- redlock_open_uv on the test thread's loop ---------------------------------------- */

static void tick_cb(uv_timer_t *timer) { (void)timer; }

/* Runs the loop until pred(arg) or timeout_ms; a 1 ms ticker makes every
 * UV_RUN_ONCE return promptly.  Returns 1 when pred came true. */
static int run_until(uv_loop_t *loop, int (*pred)(void *), void *arg, int timeout_ms) {
  uv_timer_t tick;
  uv_timer_init(loop, &tick);
  uv_timer_start(&tick, tick_cb, 1, 1);
  uint64_t end = rh_now_ms() + (uint64_t)timeout_ms;
  int ok;
  while (!(ok = pred(arg)) && rh_now_ms() < end)
    uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&tick, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
  return ok;
}

static void print_handle(uv_handle_t *handle, void *arg) {
  (void)arg;
  fprintf(stderr, "leaked handle: %s active=%d closing=%d\n", uv_handle_type_name(handle->type),
          uv_is_active(handle), uv_is_closing(handle));
}

typedef struct {
  redlock_t *client;
  redlock_lock_t *lock;
  int rc[6];
  pthread_t self;
} uv_blocking_t;

/* Every blocking call on an open_uv client: EWOULDBLOCK (any thread). */
/* The key (arg) is gone from every master. */
static int nil_everywhere(void *arg) {
  return fx_count_value(fx_group, fx_group->n, arg, "(nil)") == fx_group->n;
}

static void *uv_blocking_calls(void *arg) {
  uv_blocking_t *b = arg;
  redlock_lock_t *out = NULL;
  const char *many[1] = {"api:uv-blocking"};
  b->rc[0] = redlock_lock(b->client, "api:uv-blocking", TTL, &out);
  b->rc[1] = redlock_trylock(b->client, "api:uv-blocking", TTL, &out);
  b->rc[2] = redlock_lock_wait(b->client, "api:uv-blocking", TTL, 100, &out);
  b->rc[3] = redlock_lock_many(b->client, many, 1, TTL, &out);
  b->rc[4] = b->lock != NULL ? redlock_extend(b->client, b->lock, TTL) : REDLOCK_EWOULDBLOCK;
  b->rc[5] = out == NULL ? REDLOCK_EWOULDBLOCK : 0;
  return NULL;
}

static void test_open_uv_blocking_calls(void **state) {
  (void)state;
  uv_loop_t loop;
  redlock_t *client = fx_open_uv(fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10), &loop);
  FX_NAME(res, "uv-block");

  /* From the loop's own thread, and from another thread, before any lock. */
  uv_blocking_t b = {client, NULL, {0}, pthread_self()};
  uv_blocking_calls(&b);
  for (int i = 0; i < 6; i++)
    assert_int_equal(b.rc[i], REDLOCK_EWOULDBLOCK);
  memset(b.rc, 0, sizeof b.rc);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, uv_blocking_calls, &b), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  for (int i = 0; i < 6; i++)
    assert_int_equal(b.rc[i], REDLOCK_EWOULDBLOCK);
  assert_nil_everywhere(fx_group, "api:uv-blocking");

  /* With a live lock: extend and unlock would block too. */
  fx_rec_t locked;
  fx_rec_init(&locked);
  assert_int_equal(redlock_lock_async(client, res, TTL, 0, fx_rec_lock_cb, &locked), REDLOCK_OK);
  assert_true(run_until(&loop, fx_rec_called, &locked, 5000));
  assert_int_equal(atomic_load(&locked.status), REDLOCK_OK);
  b.lock = atomic_load(&locked.lock);
  memset(b.rc, 0, sizeof b.rc);
  assert_int_equal(pthread_create(&th, NULL, uv_blocking_calls, &b), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  for (int i = 0; i < 6; i++)
    assert_int_equal(b.rc[i], REDLOCK_EWOULDBLOCK);
  assert_int_equal(redlock_extend(client, b.lock, TTL), REDLOCK_EWOULDBLOCK);
  /* unlock: EWOULDBLOCK, but the lock is still released (handle freed). */
  assert_int_equal(redlock_unlock(client, b.lock), REDLOCK_EWOULDBLOCK);
  assert_true(run_until(&loop, nil_everywhere, res, 5000));

  redlock_close(client); /* on an open_uv client: starts an orderly close */
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  int rc = uv_loop_close(&loop);
  if (rc != 0)
    uv_walk(&loop, print_handle, NULL);
  assert_int_equal(rc, 0);
  assert_int_equal(atomic_load(&locked.calls), 1);
}

static void count_closed(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void test_open_uv_lifecycle(void **state) {
  (void)state;
  uv_loop_t *loop = malloc(sizeof *loop);
  assert_non_null(loop);
  redlock_t *client = fx_open_uv(fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10), loop);
  pthread_t self = pthread_self();
  char res[128], res2[128];
  fx_name(res, sizeof res, "uv");
  fx_name(res2, sizeof res2, "uv2");
  fx_rec_t locked, extended, unlocked, locked2;
  fx_rec_init(&locked);
  fx_rec_init(&extended);
  fx_rec_init(&unlocked);
  fx_rec_init(&locked2);

  /* Called before the loop ever ran: parked until the masters answered. */
  assert_int_equal(redlock_lock_async(client, res, 5000, 0, fx_rec_lock_cb, &locked), REDLOCK_OK);
  assert_true(run_until(loop, fx_rec_called, &locked, 5000));
  assert_int_equal(atomic_load(&locked.status), REDLOCK_OK);
  assert_true(pthread_equal(locked.thread, self));
  redlock_lock_t *lock = atomic_load(&locked.lock);
  assert_non_null(lock);
  assert_value_everywhere(fx_group, res, redlock_lock_value(lock));

  assert_int_equal(redlock_extend_async(client, lock, 30000, fx_rec_done_cb, &extended),
                   REDLOCK_OK);
  assert_true(run_until(loop, fx_rec_called, &extended, 5000));
  assert_int_equal(atomic_load(&extended.status), REDLOCK_OK);
  assert_true(pthread_equal(extended.thread, self));
  assert_pttl_above_everywhere(fx_group, res, 5000);

  assert_int_equal(redlock_unlock_async(client, lock, fx_rec_done_cb, &unlocked), REDLOCK_OK);
  assert_true(run_until(loop, fx_rec_called, &unlocked, 5000));
  assert_int_equal(atomic_load(&unlocked.status), REDLOCK_OK);
  assert_true(pthread_equal(unlocked.thread, self));
  assert_nil_everywhere(fx_group, res);

  /* An async call from another thread; its callback runs on the loop (here). */
  lock_async_from_thread(client, res2, &locked2);
  assert_true(run_until(loop, fx_rec_called, &locked2, 5000));
  assert_int_equal(atomic_load(&locked2.status), REDLOCK_OK);
  assert_true(pthread_equal(locked2.thread, self));
  redlock_lock_t *lock2 = atomic_load(&locked2.lock);
  assert_value_everywhere(fx_group, res2, redlock_lock_value(lock2));

  /* Close with lock2 still held: released, closed callback once, loop empty. */
  atomic_int closed;
  atomic_init(&closed, 0);
  redlock_close_uv(client, count_closed, &closed);
  assert_int_equal(atomic_load(&closed), 0); /* runs on the loop, later */
  assert_int_equal(uv_run(loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(atomic_load(&closed), 1);
  int rc = uv_loop_close(loop);
  if (rc != 0)
    uv_walk(loop, print_handle, NULL);
  assert_int_equal(rc, 0);
  free(loop);
  assert_nil_everywhere(fx_group, res2);
  fx_rec_t *all[] = {&locked, &extended, &unlocked, &locked2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    assert_int_equal(atomic_load(&all[i]->calls), 1);
}

FX_GROUP_MAIN(120, fx_group_test(test_blocking_call_in_callback),
              fx_group_test(test_async_callbacks), fx_group_test(test_lock_async_wait_times_out),
              fx_group_test(test_open_uv_blocking_calls), fx_group_test(test_open_uv_lifecycle))
