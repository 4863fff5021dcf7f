/* api_common.h: helpers shared by the API contract tests in tests/api.
 *
 * Header-only (static functions) so that each test can link either the static
 * or the shared library.  Every test runs against real redis-server processes
 * started by tests/support (redis_harness); the servers are fresh, so the
 * clients made here turn the restart quarantine off (set_quarantine(opts, 0)).
 *
 * Waiting: nothing here sleeps to wait.  Events are awaited with
 * rh_wait_until() and a deadline; callbacks record into cb_rec_t (atomics).
 */
#ifndef API_COMMON_H
#define API_COMMON_H

#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "redis_harness.h"
#include "redlock.h"

#define API_MAX_SERVERS 5

#define API_UNUSED __attribute__((unused))

typedef struct {
  rh_server_t *s[API_MAX_SERVERS];
  size_t n;
} api_cluster_t;

/* Starts n fresh masters; fails the test (or the group setup) on error. */
static API_UNUSED int api_cluster_start(api_cluster_t *c, size_t n) {
  memset(c, 0, sizeof *c);
  if (n > API_MAX_SERVERS)
    return -1;
  if (rh_cluster_start(c->s, n, NULL) != 0) {
    fprintf(stderr, "api: cannot start %zu redis-server processes\n", n);
    return -1;
  }
  c->n = n;
  return 0;
}

static API_UNUSED void api_cluster_stop(api_cluster_t *c) {
  if (c->n > 0)
    rh_cluster_free(c->s, c->n);
  c->n = 0;
}

/* Options for a fresh cluster: every node, quarantine off (the servers were
 * just started by this test), the given retry policy. */
static API_UNUSED redlock_options_t *api_options(const api_cluster_t *c, int retry_count,
                                                 uint32_t delay_ms, uint32_t jitter_ms) {
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  for (size_t i = 0; i < c->n; i++)
    assert_int_equal(redlock_options_add_node(opts, rh_server_uri(c->s[i])), REDLOCK_OK);
  assert_int_equal(redlock_options_set_quarantine(opts, 0), REDLOCK_OK);
  assert_int_equal(redlock_options_set_retry(opts, retry_count, delay_ms, jitter_ms), REDLOCK_OK);
  return opts;
}

/* ---- clients a failed test leaves open -------------------------------------------------
 * A failed assertion leaves the test function at once (longjmp): a client it
 * had open would live on, its callbacks writing into a dead stack frame and
 * its rounds disturbing the next test.  Clients opened by the tests are
 * tracked here and closed by api_teardown (cmocka's per-test teardown). */
#define API_MAX_TRACKED 16
static redlock_t *api_tracked[API_MAX_TRACKED];

static API_UNUSED void api_track(redlock_t *client) {
  for (size_t i = 0; i < API_MAX_TRACKED; i++)
    if (api_tracked[i] == NULL) {
      api_tracked[i] = client;
      return;
    }
}

static API_UNUSED void api_untrack(redlock_t *client) {
  for (size_t i = 0; i < API_MAX_TRACKED; i++)
    if (api_tracked[i] == client)
      api_tracked[i] = NULL;
}

/* redlock_close() for a tracked client. */
static API_UNUSED void api_close_client(redlock_t *client) {
  api_untrack(client);
  redlock_close(client);
}

static API_UNUSED int api_teardown(void **state) {
  (void)state;
  for (size_t i = 0; i < API_MAX_TRACKED; i++)
    if (api_tracked[i] != NULL) {
      redlock_t *client = api_tracked[i];
      api_tracked[i] = NULL;
      redlock_close(client);
    }
  return 0;
}

#define api_test(f) cmocka_unit_test_teardown(f, api_teardown)

/* A client on its own I/O thread (tracked). */
static API_UNUSED redlock_t *api_open(const api_cluster_t *c, int retry_count, uint32_t delay_ms,
                                      uint32_t jitter_ms) {
  redlock_options_t *opts = api_options(c, retry_count, delay_ms, jitter_ms);
  redlock_t *client = NULL;
  assert_int_equal(redlock_open(&client, opts), REDLOCK_OK);
  assert_non_null(client);
  api_track(client);
  redlock_options_free(opts);
  return client;
}

/* GET key on one master into buf ("(nil)" when absent); -1 when unreachable. */
static API_UNUSED int api_get(rh_server_t *s, const char *key, char *buf, size_t size) {
  return rh_server_command(s, buf, size, "GET %s", key);
}

/* Number of masters on which key holds exactly value. */
static API_UNUSED size_t api_count_value(const api_cluster_t *c, const char *key,
                                         const char *value) {
  size_t n = 0;
  char buf[2048];
  for (size_t i = 0; i < c->n; i++)
    if (api_get(c->s[i], key, buf, sizeof buf) == 0 && strcmp(buf, value) == 0)
      n++;
  return n;
}

/* Number of masters on which key is absent (GET returns nil). */
static API_UNUSED size_t api_count_nil(const api_cluster_t *c, const char *key) {
  return api_count_value(c, key, "(nil)");
}

/* PTTL of key on one master (-2 absent, -1 no expiry, -100 unreachable). */
static API_UNUSED long long api_pttl(rh_server_t *s, const char *key) {
  char buf[64];
  if (rh_server_command(s, buf, sizeof buf, "PTTL %s", key) != 0)
    return -100;
  return strtoll(buf, NULL, 10);
}

typedef struct {
  const api_cluster_t *c;
  const char *key;
} api_key_ref_t;

static API_UNUSED int api_pred_nil_everywhere(void *arg) {
  const api_key_ref_t *k = arg;
  return api_count_nil(k->c, k->key) == k->c->n;
}

/* Waits (up to timeout_ms) until key is absent on every master. */
static API_UNUSED int api_wait_nil_everywhere(const api_cluster_t *c, const char *key,
                                              int timeout_ms) {
  api_key_ref_t k = {c, key};
  return rh_wait_until(api_pred_nil_everywhere, &k, timeout_ms);
}

typedef struct {
  const api_cluster_t *c;
  const char *key;
  const char *value;
  long long min_pttl;
} api_expect_t;

static API_UNUSED int api_pred_value_everywhere(void *arg) {
  const api_expect_t *e = arg;
  return api_count_value(e->c, e->key, e->value) == e->c->n;
}

static API_UNUSED int api_pred_pttl_above(void *arg) {
  const api_expect_t *e = arg;
  for (size_t i = 0; i < e->c->n; i++)
    if (api_pttl(e->c->s[i], e->key) <= e->min_pttl)
      return 0;
  return 1;
}

/* A call returns as soon as a quorum decided it: the other masters' replies
 * may still be on their way.  So the effect "on every master" is awaited,
 * with a deadline, instead of read once. */
#define API_SETTLE_MS 5000

static API_UNUSED int api_wait_value_everywhere(const api_cluster_t *c, const char *key,
                                                const char *value, int timeout_ms) {
  api_expect_t e = {c, key, value, 0};
  return rh_wait_until(api_pred_value_everywhere, &e, timeout_ms);
}

static API_UNUSED int api_wait_pttl_above(const api_cluster_t *c, const char *key,
                                          long long min_pttl, int timeout_ms) {
  api_expect_t e = {c, key, NULL, min_pttl};
  return rh_wait_until(api_pred_pttl_above, &e, timeout_ms);
}

#define assert_value_everywhere(c, key, value)                                                     \
  assert_true(api_wait_value_everywhere((c), (key), (value), API_SETTLE_MS))
#define assert_nil_everywhere(c, key)                                                              \
  assert_true(api_wait_nil_everywhere((c), (key), API_SETTLE_MS))
#define assert_pttl_above_everywhere(c, key, min)                                                  \
  assert_true(api_wait_pttl_above((c), (key), (min), API_SETTLE_MS))

/* ---- callback recorders ------------------------------------------------------------ */

typedef struct {
  atomic_int calls;
  atomic_int status;
  redlock_lock_t *_Atomic lock;
  pthread_t thread; /* published by the increment of calls */
  atomic_int thread_set;
  atomic_int other_thread; /* set when two calls ran on different threads */
} cb_rec_t;

static API_UNUSED void cb_rec_init(cb_rec_t *r) {
  atomic_init(&r->calls, 0);
  atomic_init(&r->status, 1);
  atomic_init(&r->lock, NULL);
  atomic_init(&r->thread_set, 0);
  atomic_init(&r->other_thread, 0);
}

static API_UNUSED void cb_rec_note(cb_rec_t *r, int status, redlock_lock_t *lock) {
  pthread_t self = pthread_self();
  if (!atomic_load(&r->thread_set)) {
    r->thread = self;
    atomic_store(&r->thread_set, 1);
  } else if (!pthread_equal(r->thread, self)) {
    atomic_store(&r->other_thread, 1);
  }
  atomic_store(&r->status, status);
  atomic_store(&r->lock, lock);
  atomic_fetch_add(&r->calls, 1);
}

static API_UNUSED void rec_lock_cb(int status, redlock_lock_t *lock, void *arg) {
  cb_rec_note(arg, status, lock);
}

static API_UNUSED void rec_done_cb(int status, void *arg) { cb_rec_note(arg, status, NULL); }

static API_UNUSED int pred_called(void *arg) { return atomic_load(&((cb_rec_t *)arg)->calls) > 0; }

/* Waits up to timeout_ms for the first call of the recorder's callback. */
static API_UNUSED int cb_rec_wait(cb_rec_t *r, int timeout_ms) {
  return rh_wait_until(pred_called, r, timeout_ms);
}

/* ---- misc ----------------------------------------------------------------------------- */

/* Threads of this process (entries of /proc/self/task). */
static API_UNUSED int api_thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  if (d == NULL)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

/* A unique key per call site: tests never share resources. */
static API_UNUSED void api_name(char *buf, size_t size, const char *what) {
  static atomic_uint seq;
  snprintf(buf, size, "api:%s:%ld:%u", what, (long)getpid(), atomic_fetch_add(&seq, 1));
}

/* Last resort against a hang: a test that stops making progress is killed
 * with a message instead of waiting for the ctest timeout. */
static API_UNUSED void api_watchdog_fired(int sig) {
  (void)sig;
  static const char msg[] = "api test: watchdog fired (a wait did not end)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(3);
}

static API_UNUSED void api_watchdog(unsigned seconds) {
  setvbuf(stdout, NULL, _IONBF, 0); /* progress lines survive a watchdog _exit */
  signal(SIGALRM, api_watchdog_fired);
  alarm(seconds);
}

#endif
