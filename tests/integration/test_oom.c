/* test_oom.c: every public call survives any one failed allocation, c-ares
 * style: for k = 1, 2, ... the k-th allocation from the moment a call starts
 * fails, with fresh state each time (a new client: the library's free lists
 * would otherwise serve the call from memory it already has), until a k at
 * which the call completes before its k-th allocation.  Each call must
 * return its usual status (REDLOCK_OK, but REDLOCK_ELOCKED
 * for a resource held by another) or REDLOCK_ENOMEM, and the client must
 * work afterwards (a trylock succeeds within a deadline: a failed
 * connection reconnects); no crash, no hang (a per-call alarm), and under
 * ASan no leak at exit (every client is closed).
 *
 * What is failed, and on which threads, is tests/support/oom_alloc.h's
 * (the library's allocator table, redlock_set_allocator, and libuv's and
 * hiredis 1.x's allocator hooks), with hiredis 1.x's
 * allocations during a SUBSCRIBE spared (below: hiredis aborts later when
 * one fails).  hiredis 0.14 allocates with plain malloc from its shared
 * library: those cannot be failed here (and it aborts on most of them:
 * docs/api.md).
 *
 * OOM_CASES=TEXT runs only the cases whose name contains TEXT.
 *
 * Counted: every allocation made while armed, on any thread but the test's
 * own (the blocking calls' work runs on the client's loop thread; the test
 * thread is exempt outside the library call itself, and its helper thread
 * always, so the fixture's helpers do not count).  Calls that start work on the loop and return
 * (redlock_watch, redlock_elect, redlock_lock_async) stay armed until that
 * work has an outcome. */
#include <unistd.h>

#include "fixture.h"
#include "oom_alloc.h"
#include <hiredis/async.h>

/* A call's allocations are far fewer; beyond this the test is broken. */
#define OOM_MAX_K 2000
/* Longest a call (and what it waits for) may take before the alarm. */
#define OOM_CALL_ALARM_S 30
/* Deadline of the checks that follow a call. */
#define OOM_CHECK_MS 10000

/* hiredis 1.x records a SUBSCRIBE's channel in a dict, and when that
 * fails for want of memory it says nothing: the server's confirmation then
 * finds no callback and hiredis aborts (__redisGetSubscribeCallback asserts
 * cb != NULL).  So hiredis' allocations during the library's SUBSCRIBE
 * calls are spared (oom_spared; counted apart).  They are told apart here:
 * this executable defines redisAsyncCommand, hiredis' variadic front of
 * redisvAsyncCommand, which every command of the library goes through; the
 * library is linked statically into it, so its calls bind to this
 * definition (an executable's symbol comes before a shared library's) with
 * no linker option.  Nothing else in the library or hiredis changes. */
int redisAsyncCommand(redisAsyncContext *ac, redisCallbackFn *fn, void *privdata,
                      const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  oom_spared = strncmp(format, "SUBSCRIBE ", 10) == 0;
  int status = redisvAsyncCommand(ac, fn, privdata, format, ap);
  oom_spared = 0;
  va_end(ap);
  return status;
}

/* ---- the cases ------------------------------------------------------------------------ */

typedef struct {
  fx_t *fx;
  redlock_t *c;
  redlock_options_t *opts;
  redlock_lock_t *lock;
  redlock_election_t *e;
  fx_lost_t lost;
  atomic_int elected;
  redlock_observer_t *obs;
  atomic_int observed;
  fx_rec_t rec;
  char res[320];
  pthread_t releaser;
  uv_loop_t loop;
  int variant; /* the case's own */
} oom_ctx_t;

typedef struct {
  const char *name;
  void (*prep)(oom_ctx_t *ctx);          /* disarmed */
  int (*call)(oom_ctx_t *ctx);           /* armed: the status */
  void (*after)(oom_ctx_t *ctx, int rc); /* disarmed: checks, clean-up */
  int variant;
  int expect; /* the call's status when no allocation fails (REDLOCK_OK but for a few) */
} oom_case_t;

static void oom_log_cb(int level, const char *msg, void *arg) {
  (void)arg;
  fprintf(stderr, "  [redlock %d] %s\n", level, msg);
}

static redlock_options_t *ctx_options(oom_ctx_t *ctx) {
  redlock_options_t *opts = fx_options(ctx->fx, 0, ctx->fx->n, FX_NO_LOG);
  if (getenv("OOM_VERBOSE") != NULL)
    redlock_options_set_log(opts, REDLOCK_LOG_DEBUG, oom_log_cb, NULL);
  return opts;
}

/* The client still works: a trylock succeeds within the deadline (a master
 * whose connection a failure dropped reconnects meanwhile). */
static void check_works(oom_ctx_t *ctx) {
  FX_NAME(res, "oom-check");
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(ctx->fx, ctx->c, fx_trylock_until(ctx->c, res, 10000, OOM_CHECK_MS, &lock),
               REDLOCK_OK);
  FX_ASSERT_RC(ctx->fx, ctx->c, redlock_unlock(ctx->c, lock), REDLOCK_OK);
}

static void check_and_close(oom_ctx_t *ctx) {
  check_works(ctx);
  fx_close(ctx->fx, 0);
  ctx->c = NULL;
}

/* Releases a grant (if any), then checks and closes. */
static void unlock_check_close(oom_ctx_t *ctx, int rc) {
  if (rc == REDLOCK_OK) {
    assert_non_null(ctx->lock);
    FX_ASSERT_RC(ctx->fx, ctx->c, redlock_unlock(ctx->c, ctx->lock), REDLOCK_OK);
  } else {
    assert_null(ctx->lock);
  }
  check_and_close(ctx);
}

/* -- options -- */

static void prep_options(oom_ctx_t *ctx) {
  ctx->opts = redlock_options_new();
  assert_non_null(ctx->opts);
  if (ctx->variant == 1) /* the second node grows the array */
    assert_int_equal(redlock_options_add_node(ctx->opts, rh_server_uri(ctx->fx->servers[0])), 0);
}

static int call_options_new(oom_ctx_t *ctx) {
  OOM_CALL(ctx->opts = redlock_options_new());
  return ctx->opts != NULL ? REDLOCK_OK : REDLOCK_ENOMEM;
}

static void after_options(oom_ctx_t *ctx, int rc) {
  (void)rc;
  redlock_options_free(ctx->opts);
}

static int call_add_node(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_options_add_node(ctx->opts, rh_server_uri(ctx->fx->servers[ctx->variant])));
  return rc;
}

static void after_add_node(oom_ctx_t *ctx, int rc) {
  /* Refused: nothing was added, so the same master is not "already listed". */
  if (rc == REDLOCK_ENOMEM)
    assert_int_equal(
        redlock_options_add_node(ctx->opts, rh_server_uri(ctx->fx->servers[ctx->variant])), 0);
  redlock_options_free(ctx->opts);
}

static int call_set_key_prefix(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_options_set_key_prefix(ctx->opts, "oom-prefix:"));
  return rc;
}

static void after_set_key_prefix(oom_ctx_t *ctx, int rc) {
  const char *prefix = NULL;
  assert_int_equal(redlock_options_get_key_prefix(ctx->opts, &prefix), 0);
  assert_string_equal(prefix, rc == REDLOCK_OK ? "oom-prefix:" : "");
  redlock_options_free(ctx->opts);
}

static int call_set_tls_server_name(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_options_set_tls_server_name(ctx->opts, "redis.example"));
  return rc == REDLOCK_ENOTSUP ? REDLOCK_OK : rc; /* a build without TLS */
}

static int call_set_tls(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_options_set_tls(ctx->opts, NULL, NULL, NULL, NULL));
  return rc == REDLOCK_ENOTSUP ? REDLOCK_OK : rc;
}

/* -- open, close, stats -- */

static void prep_open(oom_ctx_t *ctx) {
  ctx->opts = ctx_options(ctx);
  if (ctx->variant == 1) {
    assert_int_equal(redlock_options_set_fencing(ctx->opts, 1), 0);
    assert_int_equal(redlock_options_set_reentrant(ctx->opts, 1), 0);
    assert_int_equal(redlock_options_set_key_prefix(ctx->opts, "oom:"), 0);
  }
}

static int call_open(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_open(&ctx->c, ctx->opts));
  return rc;
}

static void after_open(oom_ctx_t *ctx, int rc) {
  redlock_options_free(ctx->opts);
  if (rc != REDLOCK_OK) {
    assert_null(ctx->c);
    return;
  }
  assert_non_null(ctx->c);
  ctx->fx->clients[0] = ctx->c; /* closed by the teardown should a check fail */
  check_and_close(ctx);
}

/* redlock_open_uv: the call itself connects (on the caller's thread, its
 * loop not running yet); then a thread of the test runs the loop (its
 * allocations are not counted: disarmed by then), the client takes and
 * releases a lock, and the release's callback closes it. */
static void prep_open_uv(oom_ctx_t *ctx) {
  ctx->opts = ctx_options(ctx);
  assert_int_equal(uv_loop_init(&ctx->loop), 0);
}

static int call_open_uv(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_open_uv(&ctx->c, ctx->opts, &ctx->loop));
  return rc;
}

static void *loop_main(void *arg) {
  uv_run(arg, UV_RUN_DEFAULT);
  return NULL;
}

static void uv_lock_cb(int status, redlock_lock_t *lock, void *arg) {
  oom_ctx_t *ctx = arg;
  ctx->lock = lock;
  atomic_store(&ctx->rec.status, status);
  atomic_fetch_add(&ctx->rec.calls, 1);
}

static void uv_unlock_cb(int status, void *arg) {
  oom_ctx_t *ctx = arg;
  atomic_store(&ctx->rec.status, status);
  redlock_close_uv(ctx->c, NULL, NULL); /* on the loop's thread, as it must be */
  atomic_fetch_add(&ctx->rec.calls, 1);
}

static void after_open_uv(oom_ctx_t *ctx, int rc) {
  redlock_options_free(ctx->opts);
  if (rc != REDLOCK_OK) {
    assert_null(ctx->c);
    assert_int_equal(uv_loop_close(&ctx->loop), 0); /* nothing left on it */
    return;
  }
  pthread_t loop_thread;
  assert_int_equal(pthread_create(&loop_thread, NULL, loop_main, &ctx->loop), 0);
  FX_NAME(res, "oom-uv");
  uint64_t t0 = rh_now_ms();
  for (;;) { /* a master whose connection the failure dropped reconnects */
    fx_rec_init(&ctx->rec);
    assert_int_equal(redlock_lock_async(ctx->c, res, 10000, 0, uv_lock_cb, ctx), REDLOCK_OK);
    assert_true(fx_rec_wait(&ctx->rec, OOM_CHECK_MS));
    if (atomic_load(&ctx->rec.status) == REDLOCK_OK)
      break;
    assert_true(rh_now_ms() - t0 < OOM_CHECK_MS);
  }
  fx_rec_init(&ctx->rec);
  assert_int_equal(redlock_unlock_async(ctx->c, ctx->lock, uv_unlock_cb, ctx), REDLOCK_OK);
  assert_true(fx_rec_wait(&ctx->rec, OOM_CHECK_MS));
  assert_int_equal(atomic_load(&ctx->rec.status), REDLOCK_OK);
  assert_int_equal(pthread_join(loop_thread, NULL), 0); /* the loop ends with the close */
  assert_int_equal(uv_loop_close(&ctx->loop), 0);
  ctx->c = NULL;
  ctx->lock = NULL;
}

static void prep_client(oom_ctx_t *ctx) {
  redlock_options_t *opts = ctx_options(ctx);
  if (ctx->variant == 1) /* fencing */
    assert_int_equal(redlock_options_set_fencing(opts, 1), 0);
  if (ctx->variant == 2) /* reentrant */
    assert_int_equal(redlock_options_set_reentrant(opts, 1), 0);
  ctx->c = fx_open(ctx->fx, 0, opts);
}

static void prep_client_locked(oom_ctx_t *ctx) {
  prep_client(ctx);
  FX_ASSERT_RC(ctx->fx, ctx->c, redlock_lock(ctx->c, ctx->res, 10000, &ctx->lock), REDLOCK_OK);
}

/* A client over servers 0 (wait=1: each write waits for its replica's ack,
 * whose reply the node keeps meanwhile), 1 and 2: three voters, so that a
 * vote one failed allocation costs is survived, as in the other cases.  A
 * fourth server joins the fixture as server 0's replica (for good: these
 * cases come last). */
static void prep_acked(oom_ctx_t *ctx) {
  fx_t *fx = ctx->fx;
  if (fx->n == 3) {
    assert_int_equal(rh_server_start(&fx->servers[3], NULL), 0);
    fx->n = 4;
    char buf[64];
    assert_int_equal(rh_server_command(fx->servers[3], buf, sizeof buf, "REPLICAOF 127.0.0.1 %d",
                                       rh_server_port(fx->servers[0])),
                     0);
  }
  assert_true(rh_wait_replica_linked(fx->servers[0], fx->servers[3], OOM_CHECK_MS));
  char acked[256];
  snprintf(acked, sizeof acked, "%s?wait=1", rh_server_uri(fx->servers[0]));
  const char *uris[3] = {acked, rh_server_uri(fx->servers[1]), rh_server_uri(fx->servers[2])};
  ctx->c = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, FX_NO_LOG));
}

static void prep_acked_locked(oom_ctx_t *ctx) {
  prep_acked(ctx);
  FX_ASSERT_RC(ctx->fx, ctx->c, redlock_lock(ctx->c, ctx->res, 10000, &ctx->lock), REDLOCK_OK);
}

/* A fenced client and a long resource name: the acquisition's rounds carry
 * the keys twice (lock and fence counter), a release or an extension once,
 * so the free lists hold no block of their size class: the call's round is
 * allocated (and can fail) on the loop. */
static void prep_cold(oom_ctx_t *ctx) {
  size_t len = strlen(ctx->res);
  memset(ctx->res + len, 'x', 300 - len);
  ctx->res[300] = '\0';
  ctx->variant = 1;
  prep_client_locked(ctx);
}

/* The resource is held by a foreign value on every master. */
static void prep_foreign(oom_ctx_t *ctx) {
  prep_client(ctx);
  for (size_t i = 0; i < ctx->fx->n; i++) {
    redisContext *r = fx_redis(ctx->fx->servers[i], 2000);
    redisReply *reply = redisCommand(r, "SET %s foreign PX 10000", ctx->res);
    assert_non_null(reply);
    freeReplyObject(reply);
    redisFree(r);
  }
}

static void after_refused(oom_ctx_t *ctx, int rc) {
  (void)rc;
  assert_null(ctx->lock);
  check_and_close(ctx);
}

static void prep_close(oom_ctx_t *ctx) {
  if (ctx->variant == 1)
    prep_cold(ctx);
  else
    prep_client_locked(ctx);
  /* Something to release and a watch to stop; another grant in the free lists. */
  redlock_lock_t *other = NULL;
  FX_NAME(res, "oom-close");
  FX_ASSERT_RC(ctx->fx, ctx->c, redlock_lock(ctx->c, res, 10000, &other), REDLOCK_OK);
  fx_lost_init(&ctx->lost);
  FX_ASSERT_RC(ctx->fx, ctx->c, redlock_watch(ctx->c, other, fx_lost_cb, &ctx->lost), REDLOCK_OK);
}

static int call_close(oom_ctx_t *ctx) {
  ctx->fx->clients[0] = NULL;
  OOM_CALL(redlock_close(ctx->c));
  ctx->c = NULL;
  return REDLOCK_OK;
}

static void after_close(oom_ctx_t *ctx, int rc) {
  (void)ctx;
  (void)rc;
}

/* variant: the format. */
static void prep_stats(oom_ctx_t *ctx) {
  int format = ctx->variant;
  ctx->variant = 0;
  prep_client(ctx);
  ctx->variant = format;
}

static int call_stats(oom_ctx_t *ctx) {
  static char buf[65536];
  int rc;
  OOM_CALL(rc = redlock_stats(ctx->c, ctx->variant, buf, sizeof buf));
  return rc >= 0 ? REDLOCK_OK : rc;
}

static void after_plain(oom_ctx_t *ctx, int rc) {
  (void)rc;
  check_and_close(ctx);
}

/* -- lock calls -- */

static int call_lock(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_lock(ctx->c, ctx->res, 10000, &ctx->lock));
  return rc;
}

static void prep_reentrant(oom_ctx_t *ctx) {
  ctx->variant = 2;
  prep_client_locked(ctx);
}

static int call_lock_again(oom_ctx_t *ctx) {
  redlock_lock_t *first = ctx->lock;
  ctx->lock = NULL;
  int rc;
  OOM_CALL(rc = redlock_lock(ctx->c, ctx->res, 10000, &ctx->lock));
  redlock_lock_t *second = ctx->lock;
  ctx->lock = first;
  if (rc == REDLOCK_OK)
    FX_ASSERT_RC(ctx->fx, ctx->c, redlock_unlock(ctx->c, second), REDLOCK_OK);
  return rc;
}

static int call_trylock(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_trylock(ctx->c, ctx->res, 10000, &ctx->lock));
  return rc;
}

/* Held by a foreign value: the call waits, subscribed to the resource's
 * release channel, until a thread of the test (exempt from the count)
 * deletes the key and announces the release once the client subscribed on
 * every master, or after OOM_RELEASE_MS (a subscription that failed: the
 * call finds the key gone on its fallback retry). */
#define OOM_RELEASE_MS 300

static void *releaser_main(void *arg) {
  oom_exempt = 1;
  oom_ctx_t *ctx = arg;
  char channel[sizeof ctx->res + 32];
  fx_channel_of(channel, sizeof channel, ctx->res);
  (void)fx_wait_subscribed(ctx->fx, ctx->fx->n, channel, 1, OOM_RELEASE_MS);
  for (size_t i = 0; i < ctx->fx->n; i++) {
    redisContext *r = fx_redis(ctx->fx->servers[i], 2000);
    redisReply *reply = redisCommand(r, "DEL %s", ctx->res);
    freeReplyObject(reply);
    reply = redisCommand(r, "PUBLISH %s foreign", channel);
    freeReplyObject(reply);
    redisFree(r);
  }
  return NULL;
}

static void prep_lock_wait_held(oom_ctx_t *ctx) {
  prep_foreign(ctx);
  assert_int_equal(pthread_create(&ctx->releaser, NULL, releaser_main, ctx), 0);
}

static int call_lock_wait(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_lock_wait(ctx->c, ctx->res, 10000, 5000, &ctx->lock));
  return rc;
}

static void after_lock_wait_held(oom_ctx_t *ctx, int rc) {
  assert_int_equal(pthread_join(ctx->releaser, NULL), 0);
  unlock_check_close(ctx, rc);
}

static int call_lock_many(oom_ctx_t *ctx) {
  char a[sizeof ctx->res + 2], b[sizeof ctx->res + 2];
  snprintf(a, sizeof a, "%s:a", ctx->res);
  snprintf(b, sizeof b, "%s:b", ctx->res);
  const char *const resources[3] = {ctx->res, a, b};
  int rc;
  OOM_CALL(rc = redlock_lock_many(ctx->c, resources, 3, 10000, &ctx->lock));
  return rc;
}

static void lock_cb(int status, redlock_lock_t *lock, void *arg) {
  oom_ctx_t *ctx = arg;
  ctx->lock = lock;
  atomic_store(&ctx->rec.status, status);
  atomic_fetch_add(&ctx->rec.calls, 1);
}

static int call_lock_async(oom_ctx_t *ctx) {
  fx_rec_init(&ctx->rec);
  int rc;
  OOM_CALL(rc = redlock_lock_async(ctx->c, ctx->res, 10000, 0, lock_cb, ctx));
  if (rc != REDLOCK_OK)
    return rc;
  assert_true(fx_rec_wait(&ctx->rec, OOM_CHECK_MS));
  return atomic_load(&ctx->rec.status);
}

/* Held by a foreign value: the wait is canceled once it waits (subscribed,
 * or polling when the subscription failed for want of memory).  A cancel
 * that came in time is the outcome; one that came too late found the call
 * ended by a failed allocation. */
static int call_lock_async_canceled(oom_ctx_t *ctx) {
  fx_rec_init(&ctx->rec);
  int rc;
  uint64_t id = 0;
  OOM_CALL(rc = redlock_lock_async_ex(ctx->c, ctx->res, 10000, 5000, lock_cb, ctx, &id));
  if (rc != REDLOCK_OK)
    return rc;
  char channel[sizeof ctx->res + 32];
  fx_channel_of(channel, sizeof channel, ctx->res);
  (void)fx_wait_subscribed(ctx->fx, ctx->fx->n, channel, 1, OOM_RELEASE_MS);
  int canceled;
  OOM_CALL(canceled = redlock_cancel(ctx->c, id));
  assert_true(fx_rec_wait(&ctx->rec, OOM_CHECK_MS));
  int status = atomic_load(&ctx->rec.status);
  if (canceled == 0)
    assert_int_equal(status, REDLOCK_ECANCELED);
  else
    assert_true(canceled == REDLOCK_CANCEL_LATE && status == REDLOCK_ENOMEM);
  return status;
}

static int call_lock_many_async(oom_ctx_t *ctx) {
  char a[sizeof ctx->res + 2];
  snprintf(a, sizeof a, "%s:a", ctx->res);
  const char *const resources[2] = {ctx->res, a};
  fx_rec_init(&ctx->rec);
  int rc;
  uint64_t id = 0;
  OOM_CALL(rc = redlock_lock_many_async_ex(ctx->c, resources, 2, 10000, lock_cb, ctx, &id));
  if (rc != REDLOCK_OK)
    return rc;
  assert_true(fx_rec_wait(&ctx->rec, OOM_CHECK_MS));
  return atomic_load(&ctx->rec.status);
}

static int call_extend(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_extend(ctx->c, ctx->lock, 20000));
  return rc;
}

static void after_held(oom_ctx_t *ctx, int rc) {
  (void)rc;
  FX_ASSERT_RC(ctx->fx, ctx->c, redlock_unlock(ctx->c, ctx->lock), REDLOCK_OK);
  check_and_close(ctx);
}

static int call_unlock(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_unlock(ctx->c, ctx->lock));
  return rc;
}

static void after_unlock(oom_ctx_t *ctx, int rc) {
  /* Refused for want of memory: the handle is still live if the call could
   * not be queued (the retry releases), gone if the loop had no memory for
   * the release round (EINVAL; the keys expire at their ttl). */
  if (rc == REDLOCK_ENOMEM) {
    int again = redlock_unlock(ctx->c, ctx->lock);
    assert_true(again == REDLOCK_OK || again == REDLOCK_EINVAL);
  }
  check_and_close(ctx);
}

/* A short ttl: the call stays armed until the watch renewed the lock (or,
 * when a renewal failed for want of memory, reported it lost). */
#define OOM_WATCH_TTL_MS 400
/* redlock_watch_bounded's bound: after a renewal or two, the bound's release
 * runs while the call is still armed (it waits for the lost callback). */
#define OOM_WATCH_BOUND_MS 600

static void prep_watch(oom_ctx_t *ctx) {
  prep_client(ctx);
  FX_ASSERT_RC(ctx->fx, ctx->c, redlock_lock(ctx->c, ctx->res, OOM_WATCH_TTL_MS, &ctx->lock),
               REDLOCK_OK);
  fx_lost_init(&ctx->lost);
}

static int call_watch(oom_ctx_t *ctx) {
  int rc;
  uint64_t t0 = rh_now_ms();
  int64_t v0 = redlock_lock_validity_ms(ctx->lock);
  if (ctx->variant)
    OOM_CALL(
        rc = redlock_watch_bounded(ctx->c, ctx->lock, OOM_WATCH_BOUND_MS, fx_lost_cb, &ctx->lost));
  else
    OOM_CALL(rc = redlock_watch(ctx->c, ctx->lock, fx_lost_cb, &ctx->lost));
  if (rc != REDLOCK_OK)
    return rc;
  /* Renewed: more validity than the first grant leaves by now; bounded: the
   * bound reached (or a loss). */
  for (;;) {
    if (atomic_load(&ctx->lost.calls) > 0)
      break;
    int64_t elapsed = (int64_t)(rh_now_ms() - t0);
    if (!ctx->variant && redlock_lock_validity_ms(ctx->lock) > v0 - elapsed + 150)
      break;
    assert_true(elapsed < OOM_CHECK_MS);
    fx_event_t ev; /* a short timed wait, not a sleep: the loop is polled */
    fx_event_init(&ev);
    (void)fx_event_wait(&ev, 5);
    fx_event_destroy(&ev);
  }
  return REDLOCK_OK;
}

static void after_watch(oom_ctx_t *ctx, int rc) {
  (void)rc;
  int status = redlock_unlock(ctx->c, ctx->lock);
  if (atomic_load(&ctx->lost.calls) > 0)
    assert_true(status == REDLOCK_OK || status == REDLOCK_ELOST);
  else
    FX_ASSERT_RC(ctx->fx, ctx->c, status, REDLOCK_OK);
  check_and_close(ctx);
}

/* -- semaphore, read-write lock -- */

static int call_semaphore(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_semaphore_acquire(ctx->c, ctx->res, 3, 10000, ctx->variant ? 2000 : 0,
                                          &ctx->lock));
  return rc;
}

static int call_rwlock_read(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_rwlock_read(ctx->c, ctx->res, 10000, 0, &ctx->lock));
  return rc;
}

static int call_rwlock_write(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_rwlock_write(ctx->c, ctx->res, 10000, 0, &ctx->lock));
  return rc;
}

/* -- election -- */

static void elected_cb(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  (void)term;
  oom_ctx_t *ctx = arg;
  atomic_fetch_add(&ctx->elected, 1);
}

static void election_lost_cb(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
}

static int is_elected(void *arg) { return atomic_load(&((oom_ctx_t *)arg)->elected) > 0; }

static int call_elect(oom_ctx_t *ctx) {
  atomic_init(&ctx->elected, 0);
  int rc;
  if (ctx->variant) /* a term of 300 ms: it ends (and campaigns again) while armed */
    OOM_CALL(rc = redlock_elect_bounded(ctx->c, ctx->res, 2000, 300, elected_cb, election_lost_cb,
                                        ctx, &ctx->e));
  else
    OOM_CALL(rc =
                 redlock_elect(ctx->c, ctx->res, 2000, elected_cb, election_lost_cb, ctx, &ctx->e));
  if (rc != REDLOCK_OK)
    return rc;
  /* What failed on the loop is retried: the campaign must still win. */
  assert_true(rh_wait_until(is_elected, ctx, OOM_CHECK_MS));
  return rc;
}

static void after_elect(oom_ctx_t *ctx, int rc) {
  if (rc == REDLOCK_OK)
    FX_ASSERT_RC(ctx->fx, ctx->c, redlock_resign(ctx->c, ctx->e), REDLOCK_OK);
  else
    assert_null(ctx->e);
  check_and_close(ctx);
}

static void prep_elected(oom_ctx_t *ctx) {
  prep_client(ctx);
  atomic_init(&ctx->elected, 0);
  FX_ASSERT_RC(ctx->fx, ctx->c,
               redlock_elect(ctx->c, ctx->res, 2000, elected_cb, election_lost_cb, ctx, &ctx->e),
               REDLOCK_OK);
  assert_true(rh_wait_until(is_elected, ctx, OOM_CHECK_MS));
}

static int call_resign(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_resign(ctx->c, ctx->e));
  return rc;
}

static void after_resign(oom_ctx_t *ctx, int rc) {
  if (rc == REDLOCK_ENOMEM)
    FX_ASSERT_RC(ctx->fx, ctx->c, redlock_resign(ctx->c, ctx->e), REDLOCK_OK);
  check_and_close(ctx);
}

/* -- who leads -- */

static int call_leader(oom_ctx_t *ctx) {
  redlock_leader_t v;
  int rc;
  OOM_CALL(rc = redlock_election_leader(ctx->c, ctx->res, &v));
  if (rc == REDLOCK_OK)
    assert_int_equal(v.state, REDLOCK_LEADER_NONE);
  return rc;
}

static void observed_cb(redlock_observer_t *obs, const redlock_leader_t *view, void *arg) {
  (void)obs;
  (void)view;
  atomic_fetch_add(&((oom_ctx_t *)arg)->observed, 1);
}

static int is_observed(void *arg) { return atomic_load(&((oom_ctx_t *)arg)->observed) > 0; }

/* A poll of 50 ms: a read that failed for want of memory is made again. */
static int call_observe(oom_ctx_t *ctx) {
  atomic_init(&ctx->observed, 0);
  int rc;
  OOM_CALL(rc = redlock_election_observe(ctx->c, ctx->res, 50, observed_cb, ctx, &ctx->obs));
  if (rc != REDLOCK_OK)
    return rc;
  /* What failed on the loop is retried: the first view must still come. */
  assert_true(rh_wait_until(is_observed, ctx, OOM_CHECK_MS));
  return rc;
}

static void after_observe(oom_ctx_t *ctx, int rc) {
  if (rc == REDLOCK_OK)
    FX_ASSERT_RC(ctx->fx, ctx->c, redlock_observe_stop(ctx->c, ctx->obs), REDLOCK_OK);
  else
    assert_null(ctx->obs);
  check_and_close(ctx);
}

static void prep_observing(oom_ctx_t *ctx) {
  prep_client(ctx);
  atomic_init(&ctx->observed, 0);
  FX_ASSERT_RC(ctx->fx, ctx->c,
               redlock_election_observe(ctx->c, ctx->res, 50, observed_cb, ctx, &ctx->obs),
               REDLOCK_OK);
  assert_true(rh_wait_until(is_observed, ctx, OOM_CHECK_MS));
}

static int call_observe_stop(oom_ctx_t *ctx) {
  int rc;
  OOM_CALL(rc = redlock_observe_stop(ctx->c, ctx->obs));
  return rc;
}

static void after_observe_stop(oom_ctx_t *ctx, int rc) {
  assert_int_equal(rc, REDLOCK_OK); /* nothing to allocate: the stop is in the handle */
  check_and_close(ctx);
}

/* ---- the runner ----------------------------------------------------------------------- */

/* -- inspect and revoke -- */

static int call_inspect(oom_ctx_t *ctx) {
  static char buf[4096];
  static const int kinds[] = {REDLOCK_INSPECT_LOCK, REDLOCK_INSPECT_SEMAPHORE,
                              REDLOCK_INSPECT_RWLOCK};
  int rc;
  OOM_CALL(rc = redlock_inspect(ctx->c, ctx->res, kinds[ctx->variant], buf, sizeof buf));
  return rc >= 0 ? REDLOCK_OK : rc;
}

static void prep_fenced_locked(oom_ctx_t *ctx) {
  ctx->variant = 1; /* fencing */
  prep_client_locked(ctx);
}

static int call_revoke(oom_ctx_t *ctx) {
  int rc;
  uint64_t fence = 0;
  OOM_CALL(rc = redlock_revoke(ctx->c, ctx->res, &fence));
  return rc;
}

/* Revoked, or not (out of memory before its write reached a quorum): the
 * holder's unlock finds its value or not. */
static void after_revoke(oom_ctx_t *ctx, int rc) {
  (void)rc;
  int unlocked = redlock_unlock(ctx->c, ctx->lock);
  assert_true(unlocked == REDLOCK_OK || unlocked == REDLOCK_ELOST);
  check_and_close(ctx);
}

static const oom_case_t oom_cases[] = {
    {"options_new", NULL, call_options_new, after_options, 0},
    {"options_add_node", prep_options, call_add_node, after_add_node, 0},
    {"options_add_node (second)", prep_options, call_add_node, after_add_node, 1},
    {"options_set_key_prefix", prep_options, call_set_key_prefix, after_set_key_prefix, 0},
    {"options_set_tls_server_name", prep_options, call_set_tls_server_name, after_options, 0},
    {"options_set_tls", prep_options, call_set_tls, after_options, 0},
    {"open", prep_open, call_open, after_open, 0},
    {"open (fencing, reentrant, prefix)", prep_open, call_open, after_open, 1},
    {"open_uv", prep_open_uv, call_open_uv, after_open_uv, 0},
    {"stats (Prometheus)", prep_stats, call_stats, after_plain, REDLOCK_STATS_PROMETHEUS},
    {"stats (JSON)", prep_stats, call_stats, after_plain, REDLOCK_STATS_JSON},
    {"lock", prep_client, call_lock, unlock_check_close, 0},
    {"lock (fenced)", prep_client, call_lock, unlock_check_close, 1},
    {"lock (reentrant, held)", prep_reentrant, call_lock_again, after_held, 2},
    {"trylock", prep_client, call_trylock, unlock_check_close, 0},
    {"lock_wait (free)", prep_client, call_lock_wait, unlock_check_close, 0},
    {"lock_wait (held)", prep_lock_wait_held, call_lock_wait, after_lock_wait_held, 0},
    {"lock_many", prep_client, call_lock_many, unlock_check_close, 0},
    {"lock_async", prep_client, call_lock_async, unlock_check_close, 0},
    {"lock_async_ex (held: canceled)", prep_foreign, call_lock_async_canceled, after_refused, 0,
     REDLOCK_ECANCELED},
    {"lock_many_async_ex", prep_client, call_lock_many_async, unlock_check_close, 0},
    {"trylock (held)", prep_foreign, call_trylock, after_refused, 0, REDLOCK_ELOCKED},
    {"lock (held: retries)", prep_foreign, call_lock, after_refused, 0, REDLOCK_ELOCKED},
    {"extend", prep_client_locked, call_extend, after_held, 0},
    {"extend (round not pooled)", prep_cold, call_extend, after_held, 1},
    {"watch", prep_watch, call_watch, after_watch, 0},
    {"watch_bounded", prep_watch, call_watch, after_watch, 1},
    {"unlock", prep_client_locked, call_unlock, after_unlock, 0},
    {"unlock (round not pooled)", prep_cold, call_unlock, after_unlock, 1},
    {"semaphore_acquire", prep_client, call_semaphore, unlock_check_close, 0},
    {"semaphore_acquire (wait)", prep_client, call_semaphore, unlock_check_close, 1},
    {"rwlock_read", prep_client, call_rwlock_read, unlock_check_close, 0},
    {"rwlock_write", prep_client, call_rwlock_write, unlock_check_close, 0},
    {"elect", prep_client, call_elect, after_elect, 0},
    {"elect_bounded", prep_client, call_elect, after_elect, 1},
    {"resign", prep_elected, call_resign, after_resign, 0},
    {"inspect (lock, held)", prep_client_locked, call_inspect, after_held, 0},
    {"inspect (semaphore)", prep_client, call_inspect, after_plain, 1},
    {"inspect (rwlock)", prep_client, call_inspect, after_plain, 2},
    {"revoke (fenced)", prep_fenced_locked, call_revoke, after_revoke, 0},
    {"revoke", prep_client_locked, call_revoke, after_revoke, 0},
    {"election_leader", prep_client, call_leader, after_plain, 0},
    {"election_observe", prep_client, call_observe, after_observe, 0},
    {"observe_stop", prep_observing, call_observe_stop, after_observe_stop, 0},
    {"close (an observer left)", prep_observing, call_close, after_close, 0},
    {"close", prep_close, call_close, after_close, 0},
    {"close (rounds not pooled)", prep_close, call_close, after_close, 1},
    /* last: they add server 0's replica */
    {"lock (wait=1)", prep_acked, call_lock, unlock_check_close, 0},
    {"extend (wait=1)", prep_acked_locked, call_extend, after_held, 0},
};
#define N_CASES (sizeof oom_cases / sizeof oom_cases[0])

typedef struct {
  unsigned points;         /* allocations the call made (failed one at a time) */
  unsigned enomem;         /* of which the call returned REDLOCK_ENOMEM */
  unsigned long uv_re;     /* excluded: libuv reallocs (the most in one run) */
  unsigned long subscribe; /* excluded: hiredis 1.x's during SUBSCRIBE (the most) */
} oom_result_t;

static void keep_max(unsigned long *max, unsigned long v) {
  if (v > *max)
    *max = v;
}

/* Runs one case for k = 1, 2, ... until the call needs fewer than k
 * allocations. */
static oom_result_t run_case(fx_t *fx, const oom_case_t *cs) {
  oom_result_t r = {0, 0, 0, 0};
  for (unsigned k = 1; k <= OOM_MAX_K; k++) {
    oom_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.fx = fx;
    ctx.variant = cs->variant;
    fx_name(ctx.res, sizeof ctx.res, "oom");
    if (cs->prep != NULL)
      cs->prep(&ctx);
    oom_arm(k, cs->name);
    int rc = cs->call(&ctx);
    int failed = oom_disarm();
    keep_max(&r.uv_re, oom_uv_reallocs());
    keep_max(&r.subscribe, oom_spared_allocs());
    if (fx_verbose())
      fprintf(stderr, "  %s k=%u: %s%s\n", cs->name, k, redlock_err_name(rc),
              failed ? "" : " (no allocation failed)");
    if (rc != cs->expect && rc != REDLOCK_ENOMEM)
      fail_msg("%s, allocation %u failed: %s", cs->name, k, redlock_err_name(rc));
    if (!failed && rc != cs->expect)
      fail_msg("%s: %s with no allocation failed", cs->name, redlock_err_name(rc));
    if (rc == REDLOCK_ENOMEM)
      r.enomem++;
    cs->after(&ctx, rc);
    if (!failed) {
      r.points = (unsigned)oom_counted();
      return r;
    }
  }
  fail_msg("%s: more than %u allocations", cs->name, OOM_MAX_K);
  return r;
}

static void test_every_allocation(void **state) {
  fx_t *fx = *state;
  unsigned total = 0, ran = 0;
  fprintf(stderr, "%-36s %6s %6s %9s %9s %8s\n", "call", "points", "ENOMEM", "uv-realloc",
          "subscribe", "ms");
  const char *only = getenv("OOM_CASES"); /* a substring of the names of the cases to run */
  unsigned shard, shards;                 /* CMake's SHARDS: this entry runs every shards-th case */
  assert_int_equal(fx_shard("test_oom", &shard, &shards), 0);
  for (size_t i = 0; i < N_CASES; i++) {
    if (i % shards != shard - 1)
      continue;
    if (only != NULL && strstr(oom_cases[i].name, only) == NULL)
      continue;
    uint64_t t0 = rh_now_ms();
    ran++;
    oom_result_t r = run_case(fx, &oom_cases[i]);
    total += r.points;
    fprintf(stderr, "%-36s %6u %6u %9lu %9lu %8llu\n", oom_cases[i].name, r.points, r.enomem,
            r.uv_re, r.subscribe, (unsigned long long)(rh_now_ms() - t0));
  }
  fprintf(stderr, "%u calls, %u allocation points in all (each failed once)\n", ran, total);
  assert_true(ran > 0); /* a shard or OOM_CASES that selects nothing must not pass */
}

static int oom_teardown(void **state) {
  oom_disarm();
  return fx_teardown(state);
}

int main(void) {
  oom_install(OOM_CALL_ALARM_S);
  setvbuf(stdout, NULL, _IONBF, 0);
  fx_use_profile(&fx_profile_integration);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_every_allocation, fx_setup_3, oom_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
