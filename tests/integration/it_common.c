/* it_common.c: the integration tests' shared fixture (see it_common.h). */
#include "it_common.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define IT_LOG_CAP (64 * 1024)

/* The log callback runs on the client's loop thread while the test reads on
 * the main thread: a mutex guards the buffer.  The first IT_LOG_CAP bytes
 * are kept; what a test looks for (the first failure) is always early. */
struct it_log {
  pthread_mutex_t mu;
  size_t len;
  char buf[IT_LOG_CAP];
};

static void it_log_cb(int level, const char *msg, void *arg) {
  it_log_t *log = arg;
  static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  const char *name = level >= 0 && level <= 3 ? names[level] : "?";
  pthread_mutex_lock(&log->mu);
  size_t room = IT_LOG_CAP - log->len;
  if (room > 1) {
    int n = snprintf(log->buf + log->len, room, "[%s] %s\n", name, msg);
    if (n > 0)
      log->len += (size_t)n < room ? (size_t)n : room - 1;
  }
  pthread_mutex_unlock(&log->mu);
  if (getenv("IT_VERBOSE") != NULL)
    fprintf(stderr, "redlock[%s] %s\n", name, msg);
}

int it_log_contains(it_fixture_t *fx, const char *needle) {
  pthread_mutex_lock(&fx->log->mu);
  int found = strstr(fx->log->buf, needle) != NULL;
  pthread_mutex_unlock(&fx->log->mu);
  return found;
}

const char *it_log_text(it_fixture_t *fx) {
  static char copy[IT_LOG_CAP];
  pthread_mutex_lock(&fx->log->mu);
  memcpy(copy, fx->log->buf, fx->log->len + 1);
  pthread_mutex_unlock(&fx->log->mu);
  return copy;
}

void it_log_clear(it_fixture_t *fx) {
  pthread_mutex_lock(&fx->log->mu);
  fx->log->len = 0;
  fx->log->buf[0] = '\0';
  pthread_mutex_unlock(&fx->log->mu);
}

int it_log_master_troubled(it_fixture_t *fx, rh_server_t *s) {
  static const char *const troubles[] = {"no reply", "master not answering", "connection",
                                         "cannot connect", "connect timed out"};
  char needle[128];
  for (size_t i = 0; i < sizeof troubles / sizeof troubles[0]; i++) {
    snprintf(needle, sizeof needle, "master 127.0.0.1:%d: %s", rh_server_port(s), troubles[i]);
    if (it_log_contains(fx, needle))
      return 1;
  }
  return 0;
}

/* ---- fixtures ------------------------------------------------------------------ */

static int setup_n(void **state, size_t n) {
  it_fixture_t *fx = calloc(1, sizeof *fx);
  if (fx == NULL)
    return -1;
  fx->log = calloc(1, sizeof *fx->log);
  if (fx->log == NULL) {
    free(fx);
    return -1;
  }
  pthread_mutex_init(&fx->log->mu, NULL);
  if (n > 0 && rh_cluster_start(fx->servers, n, NULL) != 0) {
    pthread_mutex_destroy(&fx->log->mu);
    free(fx->log);
    free(fx);
    return -1;
  }
  fx->n = n;
  *state = fx;
  return 0;
}

int it_setup_0(void **state) { return setup_n(state, 0); }
int it_setup_1(void **state) { return setup_n(state, 1); }
int it_setup_2(void **state) { return setup_n(state, 2); }
int it_setup_3(void **state) { return setup_n(state, 3); }
int it_setup_5(void **state) { return setup_n(state, 5); }

int it_teardown(void **state) {
  it_fixture_t *fx = *state;
  if (fx == NULL)
    return 0;
  /* Resume first: a client closing against a stopped master waits for its
   * request deadlines, and a stopped server delays its own SIGTERM. */
  for (size_t i = 0; i < IT_MAX_SERVERS; i++)
    if (fx->servers[i] != NULL && rh_server_pid(fx->servers[i]) != 0)
      rh_server_resume(fx->servers[i]);
  for (int i = 0; i < IT_MAX_CLIENTS; i++)
    it_close(fx, i);
  rh_cluster_free(fx->servers, IT_MAX_SERVERS);
  pthread_mutex_destroy(&fx->log->mu);
  free(fx->log);
  free(fx);
  *state = NULL;
  return 0;
}

/* ---- clients --------------------------------------------------------------------- */

redlock_options_t *it_options_uris(it_fixture_t *fx, const char *const *uris, size_t n,
                                   int log_min_level) {
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  /* Set the log first: add_node reports a refused URI through it. */
  assert_int_equal(redlock_options_set_log(opts, log_min_level, it_log_cb, fx->log), 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(redlock_options_add_node(opts, uris[i]), 0);
  /* Freshly started servers would sit in restart quarantine for the
   * default max TTL (60 s); the quarantine has its own test. */
  assert_int_equal(redlock_options_set_quarantine(opts, 0), 0);
  assert_int_equal(redlock_options_set_timeouts(opts, IT_CONNECT_MS, IT_REQUEST_MS), 0);
  assert_int_equal(redlock_options_set_retry(opts, 2, 20, 20), 0);
  return opts;
}

redlock_options_t *it_options(it_fixture_t *fx, size_t n, int log_min_level) {
  const char *uris[IT_MAX_SERVERS];
  assert_true(n <= fx->n);
  for (size_t i = 0; i < n; i++)
    uris[i] = rh_server_uri(fx->servers[i]);
  return it_options_uris(fx, uris, n, log_min_level);
}

redlock_t *it_open(it_fixture_t *fx, int slot, redlock_options_t *opts) {
  assert_true(slot >= 0 && slot < IT_MAX_CLIENTS);
  assert_null(fx->clients[slot]);
  int rc = redlock_open(&fx->clients[slot], opts);
  redlock_options_free(opts);
  assert_int_equal(rc, REDLOCK_OK);
  assert_non_null(fx->clients[slot]);
  return fx->clients[slot];
}

void it_close(it_fixture_t *fx, int slot) {
  if (fx->clients[slot] != NULL) {
    redlock_close(fx->clients[slot]);
    fx->clients[slot] = NULL;
  }
}

void it_check_rc(it_fixture_t *fx, redlock_t *client, int rc, int want, const char *what,
                 const char *file, int line) {
  if (rc == want)
    return;
  char votes[1024] = "";
  if (client != NULL)
    redlock_last_votes(client, votes, sizeof votes);
  print_error("%s returned %s, want %s\nlast votes: %s\nlog:\n%s\n", what, redlock_err_name(rc),
              redlock_err_name(want), votes, fx != NULL ? it_log_text(fx) : "");
  _fail(file, line);
}

/* ---- server state ------------------------------------------------------------------- */

int it_key_is(rh_server_t *s, const char *key, const char *value) {
  char buf[512];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET %s", key), 0);
  return strcmp(buf, value) == 0;
}

int it_key_absent(rh_server_t *s, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "EXISTS %s", key), 0);
  return strcmp(buf, "0") == 0;
}

typedef struct {
  rh_server_t *s;
  const char *key;
  const char *value;
  long long lo_pttl, hi_pttl;
} key_wait_t;

static int key_absent_pred(void *arg) {
  key_wait_t *w = arg;
  return it_key_absent(w->s, w->key);
}

int it_wait_key_absent(rh_server_t *s, const char *key, int timeout_ms) {
  key_wait_t w = {s, key, NULL, 0, 0};
  return rh_wait_until(key_absent_pred, &w, timeout_ms);
}

static int key_is_pred(void *arg) {
  key_wait_t *w = arg;
  return it_key_is(w->s, w->key, w->value);
}

int it_wait_key_is(rh_server_t *s, const char *key, const char *value, int timeout_ms) {
  key_wait_t w = {s, key, value, 0, 0};
  return rh_wait_until(key_is_pred, &w, timeout_ms);
}

static int pttl_in_pred(void *arg) {
  key_wait_t *w = arg;
  long long pttl = it_pttl(w->s, w->key);
  return pttl > w->lo_pttl && pttl <= w->hi_pttl;
}

int it_wait_pttl_in(rh_server_t *s, const char *key, long long lo_ms, long long hi_ms,
                    int timeout_ms) {
  key_wait_t w = {s, key, NULL, lo_ms, hi_ms};
  return rh_wait_until(pttl_in_pred, &w, timeout_ms);
}

long long it_pttl(rh_server_t *s, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "PTTL %s", key), 0);
  return strtoll(buf, NULL, 10);
}
