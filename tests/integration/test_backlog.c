/* test_backlog.c: work beyond the NODE_MAX_INFLIGHT (8192) requests one
 * connection may have out must wait in the master's backlog, never be
 * dropped, and a release within the queue's bound is never refused.  A client that drops that work
 * fails 11,808 of 20k unlock_async at once with ENOQUORUM (8,192 OK), the
 * keys left behind until their TTL; its redlock_close leaves keys behind,
 * and 100k acquisitions with a 60 s wait time out by thousands.
 *
 * Three real masters; far more calls at once than the pipe takes:
 *  1. 50k locks held (lock_async), then 50k unlock_async at once: every
 *     callback OK and no key left on any master;
 *  2. 50k locks held, then redlock_close at once: no key left when close
 *     returns (close waits for the releases it owes);
 *  3. 100k lock_async on distinct resources with a 60 s wait, at once: all
 *     OK (no ETIMEDOUT), then all unlocked in two bursts of 50k (100k at
 *     once passes the queue's bound of 73 728 on every master), no key left.
 * Keys are counted with DBSIZE over a plain hiredis connection of the
 * harness.  The request timeout is generous (10 s): the machine is loaded by
 * the test itself, and what is tested is that nothing is dropped, not speed.
 * Every wait is for the callbacks or for DBSIZE, with a deadline. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fixture.h"

#define N_HELD 50000u
#define N_MANY 100000u
#define TTL_MS 60000u  /* the default max TTL: no lock expires during a phase */
#define WAIT_MS 60000u /* lock_async's wait budget */
#define CONNECT_MS 2000u
#define REQUEST_MS 10000u
#define BATCH_DEADLINE_MS 150000u /* all callbacks of one batch, on a loaded machine */
#define KEYS_GONE_MS 30000u
#define N_CODES 16 /* -status of every error code fits */

/* The callbacks of one batch of async calls, counted by status. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t expected;
  size_t done;
  size_t by_code[N_CODES]; /* [0] = OK, [-status] = an error */
  redlock_lock_t **locks;  /* the granted handles */
  size_t n_locks;
} batch_t;

static void batch_init(batch_t *b, size_t expected) {
  memset(b, 0, sizeof *b);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, &attr);
  pthread_condattr_destroy(&attr);
  b->expected = expected;
  b->locks = calloc(expected, sizeof *b->locks);
  assert_non_null(b->locks);
}

static void batch_destroy(batch_t *b) {
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
  free(b->locks);
}

static void batch_count(batch_t *b, int status, redlock_lock_t *lock) {
  pthread_mutex_lock(&b->mu);
  int code = -status;
  b->by_code[code >= 0 && code < N_CODES ? code : N_CODES - 1]++;
  if (lock != NULL && b->n_locks < b->expected)
    b->locks[b->n_locks++] = lock;
  if (++b->done == b->expected)
    pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

static void on_locked(int status, redlock_lock_t *lock, void *arg) {
  batch_count(arg, status, status == REDLOCK_OK ? lock : NULL);
}

static void on_done(int status, void *arg) { batch_count(arg, status, NULL); }

/* "OK 49000, REDLOCK_ENOQUORUM 1000" */
static const char *batch_summary(batch_t *b) {
  static char text[512];
  size_t used = 0;
  text[0] = '\0';
  pthread_mutex_lock(&b->mu);
  for (int code = 0; code < N_CODES; code++)
    if (b->by_code[code] > 0 && used < sizeof text)
      used += (size_t)snprintf(text + used, sizeof text - used, "%s%s %zu", used ? ", " : "",
                               code == 0 ? "OK" : redlock_err_name(-code), b->by_code[code]);
  pthread_mutex_unlock(&b->mu);
  return text;
}

/* Waits for every callback of the batch; fails with the counts otherwise. */
static void batch_wait(batch_t *b, const char *what) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += BATCH_DEADLINE_MS / 1000;
  pthread_mutex_lock(&b->mu);
  int rc = 0;
  while (b->done < b->expected && rc == 0)
    rc = pthread_cond_timedwait(&b->cv, &b->mu, &deadline);
  size_t done = b->done;
  pthread_mutex_unlock(&b->mu);
  if (done < b->expected)
    fail_msg("%s: %zu of %zu callbacks within %u ms (%s)", what, done, b->expected,
             BATCH_DEADLINE_MS, batch_summary(b));
}

/* Asserts that every call of the batch succeeded. */
static void batch_assert_all_ok(fx_t *fx, redlock_t *client, batch_t *b, const char *what) {
  if (b->by_code[0] == b->expected)
    return;
  char votes[512] = "";
  if (client != NULL)
    redlock_last_votes(client, votes, sizeof votes);
  fail_msg("%s: %zu calls, want all OK, got %s\nlast votes: %s\nlog:\n%s", what, b->expected,
           batch_summary(b), votes, fx_log_text(fx, FX_ALL));
}

static redlock_t *open_client(fx_t *fx) {
  redlock_options_t *opts = fx_options(fx, 0, 3, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_timeouts(opts, CONNECT_MS, REQUEST_MS), REDLOCK_OK);
  return fx_open(fx, 0, opts);
}

static long long dbsize(rh_server_t *s) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "DBSIZE"), 0);
  return strtoll(buf, NULL, 10);
}

static int all_empty(void *arg) {
  fx_t *fx = arg;
  for (size_t i = 0; i < fx->n; i++)
    if (dbsize(fx->servers[i]) != 0)
      return 0;
  return 1;
}

static void assert_no_keys_left(fx_t *fx, const char *what) {
  if (rh_wait_until(all_empty, fx, KEYS_GONE_MS))
    return;
  fail_msg("%s: keys left after %u ms: %lld, %lld, %lld", what, KEYS_GONE_MS,
           dbsize(fx->servers[0]), dbsize(fx->servers[1]), dbsize(fx->servers[2]));
}

/* Takes n locks at once (lock_async, wait budget WAIT_MS) and waits for all
 * of them: every one must be granted. */
static void lock_all(fx_t *fx, redlock_t *client, batch_t *b, const char *tag, size_t n) {
  batch_init(b, n);
  uint64_t t0 = rh_now_ms();
  for (size_t i = 0; i < n; i++) {
    char resource[64];
    snprintf(resource, sizeof resource, "backlog:%s:%zu", tag, i);
    FX_ASSERT_RC(fx, client, redlock_lock_async(client, resource, TTL_MS, WAIT_MS, on_locked, b),
                 REDLOCK_OK);
  }
  batch_wait(b, "lock_async");
  printf("  %zu lock_async at once (%s): %s in %llu ms; keys: %lld, %lld, %lld\n", n, tag,
         batch_summary(b), (unsigned long long)(rh_now_ms() - t0), dbsize(fx->servers[0]),
         dbsize(fx->servers[1]), dbsize(fx->servers[2]));
  batch_assert_all_ok(fx, client, b, "lock_async");
}

/* Releases every lock of the batch, at most at_once calls at a time (each
 * group waited for): every release must be OK.  A burst must fit the
 * masters' queues (NODE_MAX_QUEUED, 73 728 requests): past it, on every
 * master at once, a release is kept for later and its unlock reports
 * ENOQUORUM (api.md, Limits), which is not what this checks. */
static void unlock_all(fx_t *fx, redlock_t *client, batch_t *held, size_t at_once) {
  for (size_t from = 0; from < held->n_locks; from += at_once) {
    size_t n = held->n_locks - from < at_once ? held->n_locks - from : at_once;
    batch_t b;
    batch_init(&b, n);
    uint64_t t0 = rh_now_ms();
    for (size_t i = from; i < from + n; i++)
      FX_ASSERT_RC(fx, client, redlock_unlock_async(client, held->locks[i], on_done, &b),
                   REDLOCK_OK);
    batch_wait(&b, "unlock_async");
    printf("  %zu unlock_async at once: %s in %llu ms\n", n, batch_summary(&b),
           (unsigned long long)(rh_now_ms() - t0));
    batch_assert_all_ok(fx, client, &b, "unlock_async");
    batch_destroy(&b);
  }
}

static void test_unlock_burst(void **state) {
  fx_t *fx = *state;
  redlock_t *client = open_client(fx);
  batch_t held;
  lock_all(fx, client, &held, "held", N_HELD);
  unlock_all(fx, client, &held, N_HELD);
  assert_no_keys_left(fx, "50k unlock_async");
  batch_destroy(&held);
}

static void test_close_with_held(void **state) {
  fx_t *fx = *state;
  redlock_t *client = open_client(fx);
  batch_t held;
  lock_all(fx, client, &held, "close", N_HELD);
  uint64_t t0 = rh_now_ms();
  fx_close(fx, 0); /* releases all 50k, frees their handles */
  uint64_t took = rh_now_ms() - t0;
  long long left[3] = {dbsize(fx->servers[0]), dbsize(fx->servers[1]), dbsize(fx->servers[2])};
  printf("  redlock_close with %zu held took %llu ms; keys left: %lld, %lld, %lld\n", held.n_locks,
         (unsigned long long)took, left[0], left[1], left[2]);
  /* Not eventually: close returns once every release it owes was answered. */
  if (left[0] != 0 || left[1] != 0 || left[2] != 0)
    fail_msg("keys left after redlock_close returned: %lld, %lld, %lld\nlog:\n%s", left[0], left[1],
             left[2], fx_log_text(fx, FX_ALL));
  batch_destroy(&held);
}

static void test_many_waiting(void **state) {
  fx_t *fx = *state;
  redlock_t *client = open_client(fx);
  batch_t held;
  lock_all(fx, client, &held, "many", N_MANY);
  assert_int_equal(held.by_code[-REDLOCK_ETIMEDOUT], 0);
  unlock_all(fx, client, &held, N_HELD); /* two bursts of 50k */
  assert_no_keys_left(fx, "100k unlock_async");
  batch_destroy(&held);
}

FX_MAIN("tests", &fx_profile_integration, FX_TEST(test_unlock_burst, 3),
        FX_TEST(test_close_with_held, 3), FX_TEST(test_many_waiting, 3))
