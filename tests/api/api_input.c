/* api_input.c: argument checking of the public API on a live client (N = 3
 * real redis-server masters).
 *
 * Asserts, per include/redlock.h:
 *  - redlock_open / open_uv with NULL out, NULL options, no masters or a
 *    NULL loop give EINVAL (*out NULL); closing NULL is harmless;
 *  - NULL client / resource / out / lock / resources array give REDLOCK_EINVAL
 *    (and *out is NULL afterwards when out is given);
 *  - resource "" and REDLOCK_MAX_RESOURCE_LEN + 1 bytes give EINVAL, exactly
 *    REDLOCK_MAX_RESOURCE_LEN bytes works (the key is set in Redis);
 *  - ttl 0 and ttl > max TTL give EINVAL (lock, extend, async forms), ttl ==
 *    max TTL works;
 *  - lock_many with n = 0, n > REDLOCK_MAX_MANY, duplicate resources or a NULL
 *    entry gives EINVAL; n == REDLOCK_MAX_MANY works;
 *  - redlock_lock_async with a NULL callback gives EINVAL (and takes
 *    nothing); extend_async / unlock_async accept a NULL callback and still
 *    act (PTTL extended on every master, then the key deleted);
 *  - a second unlock of the same handle gives EINVAL (no use-after-free under
 *    ASan), extend / extend_async / unlock_async / watch after unlock give
 *    EINVAL, and a handle of another client gives EINVAL;
 *  - the same master listed twice (same host and port, whatever the
 *    credentials, db or letter case; the same unix socket path) gives EINVAL;
 *  - a ttl that leaves less than 1 ms of validity (ttl 1..3 ms: the drift
 *    alone is 2 ms) gives EEXPIRED, never OK with validity_ms() == 0;
 *  - in a child forked after open, every call on the parent's client gives
 *    REDLOCK_EFORKED at once (no hang) and redlock_close returns; the parent
 *    keeps using the client and its lock;
 *  - a call that returns an error never runs its callback: callback counters
 *    are still 0 after fx_close_client() (which joins the loop thread, so every
 *    callback that will ever run has run).
 */
#include <sys/wait.h>

#include "fixture.h"
#include "redlock_uv.h"

#define TTL 10000u
#define MAX_TTL 30000u

static redlock_t *open_client(void) {
  redlock_options_t *opts = fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10);
  assert_int_equal(redlock_options_set_max_ttl(opts, MAX_TTL), REDLOCK_OK);
  return fx_open_free(fx_group, opts);
}

/* A non-NULL value that must be overwritten with NULL by a failing call. */
#define JUNK ((redlock_lock_t *)(uintptr_t)0x1)

/* A call that must fail with EINVAL and set its out-parameter `lock` (reset
 * to JUNK first) to NULL. */
#define EXPECT_EINVAL_NULL(call)                                                                   \
  do {                                                                                             \
    lock = JUNK;                                                                                   \
    assert_int_equal((call), REDLOCK_EINVAL);                                                      \
    assert_null(lock);                                                                             \
  } while (0)

static void test_null_arguments(void **state) {
  (void)state;
  redlock_t *client = open_client();
  FX_NAME(res, "null");
  redlock_lock_t *lock = JUNK;
  fx_rec_t rec;
  fx_rec_init(&rec);

  /* NULL client */
  EXPECT_EINVAL_NULL(redlock_lock(NULL, res, TTL, &lock));
  EXPECT_EINVAL_NULL(redlock_trylock(NULL, res, TTL, &lock));
  EXPECT_EINVAL_NULL(redlock_lock_wait(NULL, res, TTL, 100, &lock));
  const char *one[1] = {res};
  EXPECT_EINVAL_NULL(redlock_lock_many(NULL, one, 1, TTL, &lock));
  assert_int_equal(redlock_lock_async(NULL, res, TTL, 0, fx_rec_lock_cb, &rec), REDLOCK_EINVAL);

  /* NULL resource / resources */
  EXPECT_EINVAL_NULL(redlock_lock(client, NULL, TTL, &lock));
  EXPECT_EINVAL_NULL(redlock_trylock(client, NULL, TTL, &lock));
  EXPECT_EINVAL_NULL(redlock_lock_wait(client, NULL, TTL, 100, &lock));
  EXPECT_EINVAL_NULL(redlock_lock_many(client, NULL, 1, TTL, &lock));
  const char *with_null[2] = {res, NULL};
  EXPECT_EINVAL_NULL(redlock_lock_many(client, with_null, 2, TTL, &lock));
  assert_int_equal(redlock_lock_async(client, NULL, TTL, 0, fx_rec_lock_cb, &rec), REDLOCK_EINVAL);

  /* NULL out */
  assert_int_equal(redlock_lock(client, res, TTL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_trylock(client, res, TTL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_wait(client, res, TTL, 100, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_many(client, one, 1, TTL, NULL), REDLOCK_EINVAL);
  /* ... and none of them took the lock behind our back. */
  assert_nil_everywhere(fx_group, res);

  /* NULL lock */
  assert_int_equal(redlock_extend(client, NULL, TTL), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock(client, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(client, NULL, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(client, NULL, TTL, fx_rec_done_cb, &rec), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock_async(client, NULL, fx_rec_done_cb, &rec), REDLOCK_EINVAL);

  /* NULL client with a live lock: refused, and the lock stays usable. */
  assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_OK);
  assert_non_null(lock);
  assert_int_equal(redlock_extend(NULL, lock, TTL), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(NULL, lock, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(NULL, lock, TTL, fx_rec_done_cb, &rec), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock_async(NULL, lock, fx_rec_done_cb, &rec), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock(NULL, lock), REDLOCK_EINVAL);
  assert_true(redlock_lock_validity_ms(lock) > 0);
  assert_string_equal(redlock_lock_resource(lock), res);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);

  /* Accessors and diagnostics on NULL: no crash, "not held". */
  assert_true(redlock_lock_validity_ms(NULL) <= 0);
  assert_true(redlock_lock_is_lost(NULL) != 0);
  assert_int_equal(redlock_lock_fence(NULL), 0);
  char buf[16];
  assert_true(redlock_last_votes(NULL, buf, sizeof buf) < 0);

  fx_close_client(fx_group, client);
  /* Every call above returned an error: the callback never ran. */
  assert_int_equal(atomic_load(&rec.calls), 0);
}

static void test_open_close_arguments(void **state) {
  (void)state;
  redlock_options_t *opts = fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10);
  redlock_t *client = (redlock_t *)1;
  assert_int_equal(redlock_open(NULL, opts), REDLOCK_EINVAL);
  assert_int_equal(redlock_open(&client, NULL), REDLOCK_EINVAL);
  assert_null(client);
  client = (redlock_t *)1;
  assert_int_equal(redlock_open_uv(&client, opts, NULL), REDLOCK_EINVAL);
  assert_null(client);
  redlock_options_t *empty = redlock_options_new();
  assert_non_null(empty);
  client = (redlock_t *)1;
  assert_int_equal(redlock_open(&client, empty), REDLOCK_EINVAL); /* no masters */
  assert_null(client);
  redlock_options_free(empty);
  redlock_options_free(opts);
  /* Closing nothing is harmless. */
  redlock_close(NULL);
  redlock_close_uv(NULL, NULL, NULL);
  redlock_options_free(NULL);
}

static void test_resource_length(void **state) {
  (void)state;
  redlock_t *client = open_client();
  fx_rec_t rec;
  fx_rec_init(&rec);
  redlock_lock_t *lock = JUNK;

  /* Empty resource. */
  assert_int_equal(redlock_lock(client, "", TTL, &lock), REDLOCK_EINVAL);
  assert_null(lock);
  assert_int_equal(redlock_trylock(client, "", TTL, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_wait(client, "", TTL, 100, &lock), REDLOCK_EINVAL);
  const char *empty[1] = {""};
  assert_int_equal(redlock_lock_many(client, empty, 1, TTL, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(client, "", TTL, 0, fx_rec_lock_cb, &rec), REDLOCK_EINVAL);

  /* One byte too long. */
  char *big = malloc(REDLOCK_MAX_RESOURCE_LEN + 2);
  assert_non_null(big);
  memset(big, 'r', REDLOCK_MAX_RESOURCE_LEN + 1);
  memcpy(big, "api:len:", 8);
  big[REDLOCK_MAX_RESOURCE_LEN + 1] = '\0';
  assert_int_equal(strlen(big), REDLOCK_MAX_RESOURCE_LEN + 1);
  EXPECT_EINVAL_NULL(redlock_trylock(client, big, TTL, &lock));
  assert_int_equal(redlock_lock(client, big, TTL, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_wait(client, big, TTL, 100, &lock), REDLOCK_EINVAL);
  const char *bigs[1] = {big};
  assert_int_equal(redlock_lock_many(client, bigs, 1, TTL, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(client, big, TTL, 0, fx_rec_lock_cb, &rec), REDLOCK_EINVAL);
  assert_nil_everywhere(fx_group, big);

  /* Exactly the limit: accepted, and the whole name is the key. */
  big[REDLOCK_MAX_RESOURCE_LEN] = '\0';
  assert_int_equal(redlock_trylock(client, big, TTL, &lock), REDLOCK_OK);
  assert_non_null(lock);
  assert_string_equal(redlock_lock_resource(lock), big);
  assert_value_everywhere(fx_group, big, redlock_lock_value(lock));
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, big);

  fx_close_client(fx_group, client);
  free(big);
  assert_int_equal(atomic_load(&rec.calls), 0);
}

static void test_ttl_limits(void **state) {
  (void)state;
  redlock_t *client = open_client();
  fx_rec_t rec;
  fx_rec_init(&rec);
  FX_NAME(res, "ttl");
  redlock_lock_t *lock = JUNK;
  const char *one[1] = {res};

  assert_int_equal(redlock_lock(client, res, 0, &lock), REDLOCK_EINVAL);
  assert_null(lock);
  assert_int_equal(redlock_trylock(client, res, 0, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_wait(client, res, 0, 100, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_many(client, one, 1, 0, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(client, res, 0, 0, fx_rec_lock_cb, &rec), REDLOCK_EINVAL);

  assert_int_equal(redlock_lock(client, res, MAX_TTL + 1, &lock), REDLOCK_EINVAL);
  assert_null(lock);
  assert_int_equal(redlock_trylock(client, res, MAX_TTL + 1, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_wait(client, res, MAX_TTL + 1, 100, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_many(client, one, 1, MAX_TTL + 1, &lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(client, res, MAX_TTL + 1, 0, fx_rec_lock_cb, &rec),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(client, res, UINT32_MAX, 0, fx_rec_lock_cb, &rec),
                   REDLOCK_EINVAL);
  assert_nil_everywhere(fx_group, res);

  /* ttl == max TTL is fine; so is extending to it. */
  assert_int_equal(redlock_trylock(client, res, MAX_TTL, &lock), REDLOCK_OK);
  assert_non_null(lock);
  assert_int_equal(redlock_extend(client, lock, 0), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend(client, lock, MAX_TTL + 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(client, lock, 0, fx_rec_done_cb, &rec), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(client, lock, MAX_TTL + 1, fx_rec_done_cb, &rec),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_extend(client, lock, MAX_TTL), REDLOCK_OK);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);

  fx_close_client(fx_group, client);
  assert_int_equal(atomic_load(&rec.calls), 0);
}

static void test_lock_many_limits(void **state) {
  (void)state;
  redlock_t *client = open_client();
  enum { N = REDLOCK_MAX_MANY + 1 };
  static char names[N][64];
  const char *res[N];
  for (int i = 0; i < N; i++) {
    fx_name(names[i], sizeof names[i], "many");
    res[i] = names[i];
  }
  redlock_lock_t *lock = JUNK;
  assert_int_equal(redlock_lock_many(client, res, 0, TTL, &lock), REDLOCK_EINVAL);
  assert_null(lock);
  EXPECT_EINVAL_NULL(redlock_lock_many(client, res, N, TTL, &lock));
  const char *dup[3] = {res[0], res[1], res[0]};
  EXPECT_EINVAL_NULL(redlock_lock_many(client, dup, 3, TTL, &lock));
  /* A duplicate by content, not by pointer. */
  char copy[64];
  strcpy(copy, res[1]);
  const char *dup2[2] = {res[1], copy};
  assert_int_equal(redlock_lock_many(client, dup2, 2, TTL, &lock), REDLOCK_EINVAL);
  for (int i = 0; i < N; i++)
    assert_nil_everywhere(fx_group, res[i]);

  /* Exactly REDLOCK_MAX_MANY is accepted and sets every key. */
  assert_int_equal(redlock_lock_many(client, res, REDLOCK_MAX_MANY, TTL, &lock), REDLOCK_OK);
  assert_non_null(lock);
  for (int i = 0; i < REDLOCK_MAX_MANY; i++)
    assert_value_everywhere(fx_group, res[i], redlock_lock_value(lock));
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  for (int i = 0; i < REDLOCK_MAX_MANY; i++)
    assert_nil_everywhere(fx_group, res[i]);
}

static void test_async_null_callback(void **state) {
  (void)state;
  redlock_t *client = open_client();
  FX_NAME(res, "nullcb");
  assert_int_equal(redlock_lock_async(client, res, TTL, 0, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(client, res, TTL, 100, NULL, NULL), REDLOCK_EINVAL);
  assert_nil_everywhere(fx_group, res);

  /* extend/unlock may go without a callback (redlock.h): they still act. */
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(client, res, 2000, &lock), REDLOCK_OK);
  assert_value_everywhere(fx_group, res, redlock_lock_value(lock));
  assert_int_equal(redlock_extend_async(client, lock, 30000, NULL, NULL), REDLOCK_OK);
  assert_pttl_above_everywhere(fx_group, res, 20000);
  assert_int_equal(redlock_unlock_async(client, lock, NULL, NULL), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);
  /* The handle is gone with the unlock. */
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_EINVAL);
}

static void test_double_unlock(void **state) {
  (void)state;
  redlock_t *client = open_client();
  fx_rec_t rec;
  fx_rec_init(&rec);
  FX_NAME(res, "double");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);

  /* The handle is freed: every call with it is refused without touching it. */
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock_async(client, lock, fx_rec_done_cb, &rec), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend(client, lock, TTL), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(client, lock, TTL, fx_rec_done_cb, &rec), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(client, lock, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_EINVAL);

  /* Same after an async unlock (the handle goes when its callback returns). */
  fx_rec_t unlocked;
  fx_rec_init(&unlocked);
  assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock_async(client, lock, fx_rec_done_cb, &unlocked), REDLOCK_OK);
  assert_int_equal(redlock_unlock_async(client, lock, fx_rec_done_cb, &rec), REDLOCK_EINVAL);
  assert_true(fx_rec_wait(&unlocked, 5000));
  assert_int_equal(atomic_load(&unlocked.status), REDLOCK_OK);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend(client, lock, TTL), REDLOCK_EINVAL);

  fx_close_client(fx_group, client);
  assert_int_equal(atomic_load(&rec.calls), 0);
  assert_int_equal(atomic_load(&unlocked.calls), 1);
}

static void test_foreign_handle(void **state) {
  (void)state;
  redlock_t *a = open_client();
  redlock_t *b = open_client();
  fx_rec_t rec;
  fx_rec_init(&rec);
  FX_NAME(res, "foreign");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(a, res, TTL, &lock), REDLOCK_OK);
  /* A handle of client a is not live in client b. */
  assert_int_equal(redlock_extend(b, lock, TTL), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(b, lock, TTL, fx_rec_done_cb, &rec), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(b, lock, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock_async(b, lock, fx_rec_done_cb, &rec), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock(b, lock), REDLOCK_EINVAL);
  /* ... and it is untouched: still held, still ours to release. */
  assert_value_everywhere(fx_group, res, redlock_lock_value(lock));
  assert_true(redlock_lock_validity_ms(lock) > 0);
  assert_int_equal(redlock_unlock(a, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);
  fx_close_client(fx_group, b);
  fx_close_client(fx_group, a);
  assert_int_equal(atomic_load(&rec.calls), 0);
}

static void test_duplicate_master(void **state) {
  (void)state;
  int port = rh_server_port(fx_group->servers[0]);
  char uri[128], same[128];
  redlock_options_t *opts = redlock_options_new();
  snprintf(uri, sizeof uri, "redis://127.0.0.1:%d", port);
  assert_int_equal(redlock_options_add_node(opts, uri), REDLOCK_OK);
  assert_int_equal(redlock_options_add_node(opts, uri), REDLOCK_EINVAL);
  snprintf(same, sizeof same, "redis://user:pw@127.0.0.1:%d/3", port);
  assert_int_equal(redlock_options_add_node(opts, same), REDLOCK_EINVAL);
  snprintf(same, sizeof same, "redis://LocalHost:%d", port);
  assert_int_equal(redlock_options_add_node(opts, same), REDLOCK_OK);
  snprintf(same, sizeof same, "redis://localhost:%d", port);
  assert_int_equal(redlock_options_add_node(opts, same), REDLOCK_EINVAL);
  snprintf(same, sizeof same, "redis://127.0.0.1:%d", rh_server_port(fx_group->servers[1]));
  assert_int_equal(redlock_options_add_node(opts, same), REDLOCK_OK);
  assert_int_equal(redlock_options_add_node(opts, "unix:///tmp/redlock-dup.sock"), REDLOCK_OK);
  assert_int_equal(redlock_options_add_node(opts, "unix:///tmp/redlock-dup.sock"), REDLOCK_EINVAL);
  redlock_options_free(opts);
}

static void test_validity_below_1ms(void **state) {
  (void)state;
  redlock_t *client = open_client();
  for (uint32_t ttl = 1; ttl <= 3; ttl++) {
    for (int i = 0; i < 20; i++) {
      FX_NAME(res, "tiny");
      redlock_lock_t *lock = JUNK;
      int rc = redlock_trylock(client, res, ttl, &lock);
      if (rc == REDLOCK_OK)
        fail_msg("ttl %u: granted with %lld ms of validity", ttl,
                 (long long)redlock_lock_validity_ms(lock));
      assert_int_equal(rc, REDLOCK_EEXPIRED);
      assert_null(lock);
    }
  }
}

/* What the child checks; its exit status is the number of failed checks. */
static int child_checks(redlock_t *client, redlock_lock_t *lock) {
  int failed = 0;
  redlock_lock_t *out = JUNK;
  char buf[64];
  failed += redlock_lock(client, "forked", TTL, &out) != REDLOCK_EFORKED;
  failed += redlock_trylock(client, "forked", TTL, &out) != REDLOCK_EFORKED;
  failed += out != NULL;
  failed += redlock_lock_wait(client, "forked", TTL, 100, &out) != REDLOCK_EFORKED;
  failed += redlock_lock_async(client, "forked", TTL, 0, fx_rec_lock_cb, NULL) != REDLOCK_EFORKED;
  failed += redlock_extend(client, lock, TTL) != REDLOCK_EFORKED;
  failed += redlock_extend_async(client, lock, TTL, NULL, NULL) != REDLOCK_EFORKED;
  failed += redlock_watch(client, lock, NULL, NULL) != REDLOCK_EFORKED;
  failed += redlock_unlock_async(client, lock, NULL, NULL) != REDLOCK_EFORKED;
  failed += redlock_unlock(client, lock) != REDLOCK_EFORKED;
  failed += redlock_last_votes(client, buf, sizeof buf) != REDLOCK_EFORKED;
  redlock_close(client); /* returns: the parent's thread is not ours to join */
  return failed;
}

typedef struct {
  pid_t pid;
  int status;
} child_t;

static int child_exited(void *arg) {
  child_t *child = arg;
  return waitpid(child->pid, &child->status, WNOHANG) == child->pid;
}

static void test_fork_child(void **state) {
  (void)state;
  redlock_t *client = open_client();
  FX_NAME(res, "fork");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_OK);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(10); /* a hang fails by signal instead of blocking the test */
    _exit(child_checks(client, lock));
  }
  child_t child = {.pid = pid};
  if (!rh_wait_until(child_exited, &child, 15000)) {
    kill(pid, SIGKILL);
    waitpid(pid, &child.status, 0);
    fail_msg("the forked child hung");
  }
  int status = child.status;
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  /* The parent's client and lock are untouched. */
  assert_value_everywhere(fx_group, res, redlock_lock_value(lock));
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);
}

FX_GROUP_MAIN(120, fx_group_test(test_null_arguments), fx_group_test(test_open_close_arguments),
              fx_group_test(test_resource_length), fx_group_test(test_ttl_limits),
              fx_group_test(test_lock_many_limits), fx_group_test(test_async_null_callback),
              fx_group_test(test_double_unlock), fx_group_test(test_foreign_handle),
              fx_group_test(test_duplicate_master), fx_group_test(test_validity_below_1ms),
              fx_group_test(test_fork_child))
