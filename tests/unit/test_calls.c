/* test_calls.c: unit tests for argument checking of the client and lock
 * calls (src/api/client.c, src/api/calls.c), with no Redis server anywhere.
 *  - redlock_open / redlock_open_uv refuse NULL out, NULL options, zero nodes
 *    and a NULL loop with REDLOCK_EINVAL and set *out to NULL (NULL out with
 *    valid options is tried in a child process, since it may crash);
 *  - every lock call refuses a NULL client / resource / out / lock / callback
 *    with REDLOCK_EINVAL, and sets *out to NULL;
 *  - lock accessors and redlock_last_votes on NULL handles;
 *  - with a client whose only master is a unix socket that does not exist
 *    (it never connects, no network): empty / too long / duplicate resources,
 *    ttl 0 or above max TTL, lock_many with n = 0 or n > REDLOCK_MAX_MANY, and
 *    extend/unlock/watch of a handle that was never issued are refused with
 *    REDLOCK_EINVAL before anything is sent; redlock_last_votes behaves like
 *    snprintf (length needed, NUL-terminated prefix when truncated); close
 *    then frees everything. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit_support.h"

#include "redlock.h"
#include "redlock_uv.h"

#define BOGUS_LOCK ((redlock_lock_t *)(uintptr_t)0x1000) /* never dereferenced */

static void lock_cb(int status, redlock_lock_t *lock, void *arg) {
  (void)status;
  (void)lock;
  int *calls = arg;
  (*calls)++;
}

static void done_cb(int status, void *arg) {
  (void)status;
  int *calls = arg;
  (*calls)++;
}

static void lost_cb(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)reason;
  (void)arg;
}

/* ---- open ------------------------------------------------------------------------- */

static void test_open_refuses(void **state) {
  (void)state;
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  redlock_t *c = NULL;
  /* Zero nodes, NULL options, both NULL. */
  assert_int_equal(redlock_open(&c, opts), REDLOCK_EINVAL);
  assert_int_equal(redlock_open(&c, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_open(NULL, NULL), REDLOCK_EINVAL);
  assert_null(c);

  /* The uv form: NULL loop, NULL options, zero nodes. */
  redlock_options_t *one = unit_nowhere_options();
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(redlock_open_uv(&c, one, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_open_uv(&c, NULL, &loop), REDLOCK_EINVAL);
  assert_int_equal(redlock_open_uv(&c, opts, &loop), REDLOCK_EINVAL);
  assert_null(c);
  /* Nothing was left on the loop. */
  assert_int_equal(uv_loop_alive(&loop), 0);
  assert_int_equal(uv_loop_close(&loop), 0);

  redlock_options_free(one);
  redlock_options_free(opts);
  /* Closing NULL is harmless. */
  redlock_close(NULL);
  redlock_close_uv(NULL, NULL, NULL);
}

static void test_open_failure_sets_out_null(void **state) {
  (void)state;
  /* Like every other call with an out parameter (redlock_lock* and
   * redlock_open_uv with a NULL loop), a refused open leaves *out NULL so
   * that the caller never holds a stale pointer. */
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  void *const stale = (void *)(uintptr_t)0x1234;
  redlock_t *c1 = stale, *c2 = stale, *c3 = stale, *c4 = stale;
  assert_int_equal(redlock_open(&c1, opts), REDLOCK_EINVAL); /* zero nodes */
  assert_int_equal(redlock_open(&c2, NULL), REDLOCK_EINVAL);
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(redlock_open_uv(&c3, NULL, &loop), REDLOCK_EINVAL);
  assert_int_equal(redlock_open_uv(&c4, opts, &loop), REDLOCK_EINVAL);
  assert_int_equal(uv_loop_close(&loop), 0);
  redlock_options_free(opts);
  if (c1 != NULL || c2 != NULL || c3 != NULL || c4 != NULL)
    fail_msg("refused opens left *out unchanged: open(no nodes) %p, open(NULL opts) %p, "
             "open_uv(NULL opts) %p, open_uv(no nodes) %p (expected all NULL)",
             (void *)c1, (void *)c2, (void *)c3, (void *)c4);
}

/* Runs fn in a child process (it may crash) and returns its exit code, or
 * 128 + signal when it was killed. */
static int run_in_child(int (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* Default signal handling: cmocka's handlers would resume its runner in
     * the child. */
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    signal(SIGILL, SIG_DFL);
    signal(SIGFPE, SIG_DFL);
    signal(SIGABRT, SIG_DFL);
    int code = fn();
#ifdef __SANITIZE_ADDRESS__
    _exit(code); /* no leak check here: the parent's test state is in the child */
#else
    exit(code); /* exit handlers run: a --coverage build records the child's lines */
#endif
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

static int child_open_null_out(void) {
  redlock_options_t *opts = unit_nowhere_options();
  int rc = redlock_open(NULL, opts);
  redlock_options_free(opts);
  return rc == REDLOCK_EINVAL ? 0 : 1;
}

static int child_open_uv_null_out(void) {
  redlock_options_t *opts = unit_nowhere_options();
  uv_loop_t loop;
  if (uv_loop_init(&loop) != 0)
    return 2;
  int rc = redlock_open_uv(NULL, opts, &loop);
  redlock_options_free(opts);
  if (uv_loop_close(&loop) != 0) /* nothing was left on it */
    return 3;
  return rc == REDLOCK_EINVAL ? 0 : 1;
}

static void test_open_null_out(void **state) {
  (void)state;
  /* With valid options and out == NULL the open must be refused, not
   * started (it would have nowhere to put the client).  Run in a child:
   * a crash here must not take the other tests down. */
  int code = run_in_child(child_open_null_out);
  int code_uv = run_in_child(child_open_uv_null_out);
  if (code != 0 || code_uv != 0)
    fail_msg("out == NULL with valid options: redlock_open child %s %d, redlock_open_uv child "
             "%s %d (expected both to return REDLOCK_EINVAL: exit 0)",
             code > 128 ? "died of signal" : "exited with", code > 128 ? code - 128 : code,
             code_uv > 128 ? "died of signal" : "exited with",
             code_uv > 128 ? code_uv - 128 : code_uv);
}

/* ---- NULL client ---------------------------------------------------------------------- */

static void test_null_client(void **state) {
  (void)state;
  redlock_lock_t *out = BOGUS_LOCK;
  assert_int_equal(redlock_lock(NULL, "r", 1000, &out), REDLOCK_EINVAL);
  assert_null(out);
  out = BOGUS_LOCK;
  assert_int_equal(redlock_trylock(NULL, "r", 1000, &out), REDLOCK_EINVAL);
  assert_null(out);
  out = BOGUS_LOCK;
  assert_int_equal(redlock_lock_wait(NULL, "r", 1000, 100, &out), REDLOCK_EINVAL);
  assert_null(out);
  const char *const res[] = {"a", "b"};
  out = BOGUS_LOCK;
  assert_int_equal(redlock_lock_many(NULL, res, 2, 1000, &out), REDLOCK_EINVAL);
  assert_null(out);

  /* NULL out as well. */
  assert_int_equal(redlock_lock(NULL, "r", 1000, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_trylock(NULL, NULL, 1000, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_wait(NULL, "r", 1000, 0, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_many(NULL, NULL, 0, 1000, NULL), REDLOCK_EINVAL);

  assert_int_equal(redlock_extend(NULL, BOGUS_LOCK, 1000), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend(NULL, NULL, 1000), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock(NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(NULL, BOGUS_LOCK, lost_cb, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(NULL, NULL, NULL, NULL), REDLOCK_EINVAL);

  int calls = 0;
  assert_int_equal(redlock_lock_async(NULL, "r", 1000, 0, lock_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(NULL, BOGUS_LOCK, 1000, done_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock_async(NULL, BOGUS_LOCK, done_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(calls, 0); /* an error return never runs the callback */

  char buf[64];
  assert_true(redlock_last_votes(NULL, buf, sizeof buf) < 0);
}

static void test_null_accessors(void **state) {
  (void)state;
  assert_true(redlock_lock_validity_ms(NULL) <= 0);
  assert_int_equal(redlock_lock_fence(NULL), 0);
  assert_null(redlock_lock_resource(NULL));
  assert_null(redlock_lock_value(NULL));
  assert_true(redlock_lock_is_lost(NULL));
}

/* ---- a client that can never connect ------------------------------------------------- */

static int client_setup(void **state) {
  redlock_options_t *opts = unit_nowhere_options();
  if (redlock_options_set_max_ttl(opts, 10000) != 0 ||
      redlock_options_set_retry(opts, 0, 0, 0) != 0) {
    redlock_options_free(opts);
    return -1;
  }
  redlock_t *c = NULL;
  int rc = redlock_open(&c, opts);
  redlock_options_free(opts); /* the client keeps its own copy */
  if (rc != 0 || c == NULL)
    return -1;
  *state = c;
  return 0;
}

static int client_teardown(void **state) {
  redlock_close(*state);
  return 0;
}

static void test_bad_resource(void **state) {
  redlock_t *c = *state;
  redlock_lock_t *out = BOGUS_LOCK;
  assert_int_equal(redlock_lock(c, NULL, 1000, &out), REDLOCK_EINVAL);
  assert_null(out);
  out = BOGUS_LOCK;
  assert_int_equal(redlock_trylock(c, "", 1000, &out), REDLOCK_EINVAL);
  assert_null(out);

  char *too_long = malloc(REDLOCK_MAX_RESOURCE_LEN + 2);
  assert_non_null(too_long);
  memset(too_long, 'r', REDLOCK_MAX_RESOURCE_LEN + 1);
  too_long[REDLOCK_MAX_RESOURCE_LEN + 1] = '\0';
  out = BOGUS_LOCK;
  assert_int_equal(redlock_trylock(c, too_long, 1000, &out), REDLOCK_EINVAL);
  assert_null(out);
  assert_int_equal(redlock_lock_wait(c, too_long, 1000, 10, &out), REDLOCK_EINVAL);
  free(too_long);

  int calls = 0;
  assert_int_equal(redlock_lock_async(c, NULL, 1000, 0, lock_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(c, "", 1000, 0, lock_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(calls, 0);
}

static void test_null_out_and_cb(void **state) {
  redlock_t *c = *state;
  assert_int_equal(redlock_lock(c, "r", 1000, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_trylock(c, "r", 1000, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_wait(c, "r", 1000, 10, NULL), REDLOCK_EINVAL);
  const char *const res[] = {"a"};
  assert_int_equal(redlock_lock_many(c, res, 1, 1000, NULL), REDLOCK_EINVAL);
  /* The async lock needs a callback. */
  assert_int_equal(redlock_lock_async(c, "r", 1000, 0, NULL, NULL), REDLOCK_EINVAL);
}

static void test_bad_ttl(void **state) {
  redlock_t *c = *state;
  redlock_lock_t *out = BOGUS_LOCK;
  assert_int_equal(redlock_trylock(c, "r", 0, &out), REDLOCK_EINVAL);
  assert_null(out);
  /* Above the configured max TTL (10000 here). */
  assert_int_equal(redlock_trylock(c, "r", 10001, &out), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock(c, "r", UINT32_MAX, &out), REDLOCK_EINVAL);
  int calls = 0;
  assert_int_equal(redlock_lock_async(c, "r", 0, 0, lock_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(c, "r", 10001, 5, lock_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(calls, 0);
}

static void test_bad_many(void **state) {
  redlock_t *c = *state;
  redlock_lock_t *out = BOGUS_LOCK;
  const char *const two[] = {"a", "b"};
  assert_int_equal(redlock_lock_many(c, NULL, 2, 1000, &out), REDLOCK_EINVAL);
  assert_null(out);
  assert_int_equal(redlock_lock_many(c, two, 0, 1000, &out), REDLOCK_EINVAL);
  /* The same resource twice could never be all-or-nothing. */
  const char *const dup[] = {"a", "b", "a"};
  assert_int_equal(redlock_lock_many(c, dup, 3, 1000, &out), REDLOCK_EINVAL);
  /* One bad entry spoils the lot. */
  const char *const with_null[] = {"a", NULL};
  assert_int_equal(redlock_lock_many(c, with_null, 2, 1000, &out), REDLOCK_EINVAL);
  const char *const with_empty[] = {"a", ""};
  assert_int_equal(redlock_lock_many(c, with_empty, 2, 1000, &out), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_many(c, two, 2, 0, &out), REDLOCK_EINVAL);
  /* More than REDLOCK_MAX_MANY. */
  const char *many[REDLOCK_MAX_MANY + 1];
  char names[REDLOCK_MAX_MANY + 1][16];
  for (int i = 0; i <= REDLOCK_MAX_MANY; i++) {
    snprintf(names[i], sizeof names[i], "res-%d", i);
    many[i] = names[i];
  }
  out = BOGUS_LOCK;
  assert_int_equal(redlock_lock_many(c, many, REDLOCK_MAX_MANY + 1, 1000, &out), REDLOCK_EINVAL);
  assert_null(out);
}

static void test_foreign_handle(void **state) {
  redlock_t *c = *state;
  /* A handle this client never issued is refused without being touched. */
  assert_int_equal(redlock_extend(c, BOGUS_LOCK, 1000), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend(c, NULL, 1000), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(c, BOGUS_LOCK, lost_cb, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(c, NULL, lost_cb, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock(c, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock(c, BOGUS_LOCK), REDLOCK_EINVAL);
  int calls = 0;
  assert_int_equal(redlock_extend_async(c, BOGUS_LOCK, 1000, done_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock_async(c, BOGUS_LOCK, done_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock_async(c, NULL, done_cb, &calls), REDLOCK_EINVAL);
  /* extend with a bad ttl is refused too. */
  assert_int_equal(redlock_extend(c, BOGUS_LOCK, 0), REDLOCK_EINVAL);
  assert_int_equal(calls, 0);
}

static void test_last_votes_buffer(void **state) {
  redlock_t *c = *state;
  /* Like snprintf: the length needed, whatever the buffer. */
  int need = redlock_last_votes(c, NULL, 0);
  assert_true(need > 0);
  assert_int_equal(redlock_last_votes(c, NULL, 5), REDLOCK_EINVAL);
  char *full = malloc((size_t)need + 1);
  assert_non_null(full);
  assert_int_equal(redlock_last_votes(c, full, (size_t)need + 1), need);
  assert_int_equal(strlen(full), need);
  /* One entry per master, named by its label (here the socket path). */
  assert_non_null(strstr(full, "/nonexistent-redlock-unit-"));
  /* Truncated: always NUL-terminated, a prefix of the full text, no overrun. */
  for (size_t size = 1; size <= (size_t)need; size++) {
    char *small = malloc(size + 1);
    assert_non_null(small);
    small[size] = '#';
    assert_int_equal(redlock_last_votes(c, small, size), need);
    assert_int_equal(strlen(small), size - 1);
    assert_memory_equal(small, full, size - 1);
    assert_int_equal(small[size], '#');
    free(small);
  }
  free(full);
}

#define TC(fn) cmocka_unit_test_setup_teardown(fn, client_setup, client_teardown)

UNIT_MAIN(cmocka_unit_test(test_open_refuses), cmocka_unit_test(test_open_failure_sets_out_null),
          cmocka_unit_test(test_open_null_out), cmocka_unit_test(test_null_client),
          cmocka_unit_test(test_null_accessors), TC(test_bad_resource), TC(test_null_out_and_cb),
          TC(test_bad_ttl), TC(test_bad_many), TC(test_foreign_handle), TC(test_last_votes_buffer))
