/* sf_common.c: the safety tests' shared fixture (see sf_common.h). */
#include "sf_common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define SF_LOG_CAP (64 * 1024)

/* The log callback runs on a client's loop thread while the test reads on
 * the main thread: a mutex guards the buffer.  The first SF_LOG_CAP bytes
 * are kept; what a test looks for is early. */
struct sf_log {
  pthread_mutex_t mu;
  size_t len;
  char buf[SF_LOG_CAP];
};

static void sf_log_cb(int level, const char *msg, void *arg) {
  sf_log_t *log = arg;
  static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  const char *name = level >= 0 && level <= 3 ? names[level] : "?";
  pthread_mutex_lock(&log->mu);
  size_t room = SF_LOG_CAP - log->len;
  if (room > 1) {
    int n = snprintf(log->buf + log->len, room, "[%s] %s\n", name, msg);
    if (n > 0)
      log->len += (size_t)n < room ? (size_t)n : room - 1;
  }
  pthread_mutex_unlock(&log->mu);
  if (getenv("SF_VERBOSE") != NULL)
    fprintf(stderr, "redlock[%p][%s] %s\n", arg, name, msg);
}

int sf_log_contains(sf_fixture_t *fx, int slot, const char *needle) {
  sf_log_t *log = fx->logs[slot];
  pthread_mutex_lock(&log->mu);
  int found = strstr(log->buf, needle) != NULL;
  pthread_mutex_unlock(&log->mu);
  return found;
}

void sf_log_clear(sf_fixture_t *fx, int slot) {
  sf_log_t *log = fx->logs[slot];
  pthread_mutex_lock(&log->mu);
  log->len = 0;
  log->buf[0] = '\0';
  pthread_mutex_unlock(&log->mu);
}

unsigned sf_log_count(sf_fixture_t *fx, int slot, const char *needle) {
  sf_log_t *log = fx->logs[slot];
  unsigned count = 0;
  pthread_mutex_lock(&log->mu);
  for (const char *p = strstr(log->buf, needle); p != NULL; p = strstr(p + 1, needle))
    count++;
  pthread_mutex_unlock(&log->mu);
  return count;
}

const char *sf_log_text(sf_fixture_t *fx, int slot) {
  static char copy[SF_LOG_CAP];
  sf_log_t *log = fx->logs[slot];
  pthread_mutex_lock(&log->mu);
  memcpy(copy, log->buf, log->len + 1);
  pthread_mutex_unlock(&log->mu);
  return copy;
}

typedef struct {
  sf_fixture_t *fx;
  int slot;
  const char *needle;
} log_wait_t;

static int log_pred(void *arg) {
  log_wait_t *w = arg;
  return sf_log_contains(w->fx, w->slot, w->needle);
}

int sf_wait_log(sf_fixture_t *fx, int slot, const char *needle, int timeout_ms) {
  log_wait_t w = {fx, slot, needle};
  return rh_wait_until(log_pred, &w, timeout_ms);
}

void sf_label(const rh_server_t *s, char *buf, size_t size) {
  snprintf(buf, size, "127.0.0.1:%d", rh_server_port(s));
}

/* The stall monitor (below) is stopped by teardown if a test failed with it running. */
static atomic_int stall_running;

/* ---- fixtures ----------------------------------------------------------------------- */

static void fixture_free(sf_fixture_t *fx) {
  for (int i = 0; i < SF_MAX_CLIENTS; i++) {
    if (fx->logs[i] != NULL) {
      pthread_mutex_destroy(&fx->logs[i]->mu);
      free(fx->logs[i]);
    }
  }
  free(fx);
}

static int setup_n(void **state, size_t n) {
  sf_fixture_t *fx = calloc(1, sizeof *fx);
  if (fx == NULL)
    return -1;
  for (int i = 0; i < SF_MAX_CLIENTS; i++) {
    fx->logs[i] = calloc(1, sizeof *fx->logs[i]);
    if (fx->logs[i] == NULL) {
      fixture_free(fx);
      return -1;
    }
    pthread_mutex_init(&fx->logs[i]->mu, NULL);
  }
  if (rh_cluster_start(fx->servers, n, NULL) != 0) {
    fixture_free(fx);
    return -1;
  }
  fx->n = n;
  *state = fx;
  return 0;
}

int sf_setup_1(void **state) { return setup_n(state, 1); }
int sf_setup_3(void **state) { return setup_n(state, 3); }
int sf_setup_5(void **state) { return setup_n(state, 5); }

int sf_teardown(void **state) {
  sf_fixture_t *fx = *state;
  if (fx == NULL)
    return 0;
  if (atomic_load(&stall_running))
    sf_stall_monitor_stop();
  /* Resume first: a client closing against a stopped master waits for its
   * request deadlines, and a stopped server delays its own SIGTERM. */
  for (size_t i = 0; i < SF_MAX_SERVERS; i++)
    if (fx->servers[i] != NULL && rh_server_pid(fx->servers[i]) != 0)
      rh_server_resume(fx->servers[i]);
  for (int i = 0; i < SF_MAX_CLIENTS; i++)
    sf_close(fx, i);
  rh_cluster_free(fx->servers, SF_MAX_SERVERS);
  fixture_free(fx);
  *state = NULL;
  return 0;
}

/* ---- clients ------------------------------------------------------------------------- */

redlock_options_t *sf_options(sf_fixture_t *fx, int slot, size_t n, int log_min_level) {
  assert_true(slot >= 0 && slot < SF_MAX_CLIENTS);
  assert_true(n <= fx->n);
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  assert_int_equal(redlock_options_set_log(opts, log_min_level, sf_log_cb, fx->logs[slot]), 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(redlock_options_add_node(opts, rh_server_uri(fx->servers[i])), 0);
  /* Freshly started servers would sit in restart quarantine for the default
   * max TTL (60 s); tests of the quarantine turn it on themselves. */
  assert_int_equal(redlock_options_set_quarantine(opts, 0), 0);
  assert_int_equal(redlock_options_set_timeouts(opts, SF_CONNECT_MS, SF_REQUEST_MS), 0);
  assert_int_equal(redlock_options_set_retry(opts, 5, 20, 20), 0);
  return opts;
}

redlock_t *sf_open(sf_fixture_t *fx, int slot, redlock_options_t *opts) {
  assert_true(slot >= 0 && slot < SF_MAX_CLIENTS);
  assert_null(fx->clients[slot]);
  int rc = redlock_open(&fx->clients[slot], opts);
  redlock_options_free(opts);
  assert_int_equal(rc, REDLOCK_OK);
  assert_non_null(fx->clients[slot]);
  return fx->clients[slot];
}

void sf_close(sf_fixture_t *fx, int slot) {
  if (fx->clients[slot] != NULL) {
    redlock_close(fx->clients[slot]);
    fx->clients[slot] = NULL;
  }
}

/* ---- server state ------------------------------------------------------------------------ */

int sf_key_is(rh_server_t *s, const char *key, const char *value) {
  char buf[512];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET %s", key), 0);
  return strcmp(buf, value) == 0;
}

int sf_key_absent(rh_server_t *s, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "EXISTS %s", key), 0);
  return strcmp(buf, "0") == 0;
}

typedef struct {
  rh_server_t *s;
  const char *key;
} key_wait_t;

static int key_absent_pred(void *arg) {
  key_wait_t *w = arg;
  return sf_key_absent(w->s, w->key);
}

int sf_wait_key_absent(rh_server_t *s, const char *key, int timeout_ms) {
  key_wait_t w = {s, key};
  return rh_wait_until(key_absent_pred, &w, timeout_ms);
}

long long sf_pttl(rh_server_t *s, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "PTTL %s", key), 0);
  return strtoll(buf, NULL, 10);
}

uint64_t sf_get_u64(rh_server_t *s, const char *key) {
  char buf[128];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET %s", key), 0);
  if (strcmp(buf, "(nil)") == 0)
    return 0;
  return strtoull(buf, NULL, 10);
}

/* ---- locking helpers ------------------------------------------------------------------------ */

typedef struct {
  redlock_t *c;
  const char *res;
  uint32_t ttl;
  redlock_lock_t *lock;
  int rc;
} trylock_wait_t;

static int trylock_pred(void *arg) {
  trylock_wait_t *w = arg;
  w->rc = redlock_trylock(w->c, w->res, w->ttl, &w->lock);
  return w->rc == REDLOCK_OK;
}

int sf_trylock_until(redlock_t *c, const char *res, uint32_t ttl_ms, int timeout_ms,
                     redlock_lock_t **out) {
  trylock_wait_t w = {c, res, ttl_ms, NULL, REDLOCK_EINVAL};
  *out = NULL;
  if (rh_wait_until(trylock_pred, &w, timeout_ms))
    *out = w.lock;
  return w.rc;
}

int sf_wait_votes_count(sf_fixture_t *fx, redlock_t *c, size_t n, unsigned mask, int timeout_ms) {
  size_t q = n / 2 + 1;
  size_t members[SF_MAX_SERVERS];
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (mask & (1u << i))
      members[m++] = i;
  assert_true(m >= q);
  uint64_t deadline = rh_now_ms() + (uint64_t)timeout_ms;
  for (size_t start = 0;; start += q) {
    if (start + q > m)
      start = m - q;
    unsigned window = 0;
    for (size_t k = start; k < start + q; k++)
      window |= 1u << members[k];
    char probe[64];
    snprintf(probe, sizeof probe, "__sf_probe__:%x", window);
    for (size_t i = 0; i < n; i++) {
      char buf[64];
      if (window & (1u << i))
        assert_int_equal(rh_server_command(fx->servers[i], buf, sizeof buf, "DEL %s", probe), 0);
      else
        assert_int_equal(
            rh_server_command(fx->servers[i], buf, sizeof buf, "SET %s foreign PX 60000", probe),
            0);
    }
    uint64_t now = rh_now_ms();
    int left = now < deadline ? (int)(deadline - now) : 0;
    redlock_lock_t *lock = NULL;
    if (sf_trylock_until(c, probe, 500, left, &lock) != REDLOCK_OK)
      return 0;
    assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
    if (start + q >= m)
      return 1;
  }
}

redisContext *sf_redis(const rh_server_t *s, int timeout_ms) {
  struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
  redisContext *ctx = redisConnectWithTimeout("127.0.0.1", rh_server_port(s), tv);
  assert_non_null(ctx);
  if (ctx->err)
    fail_msg("cannot connect to 127.0.0.1:%d: %s", rh_server_port(s), ctx->errstr);
  assert_int_equal(redisSetTimeout(ctx, tv), REDIS_OK);
  return ctx;
}

/* ---- stall monitor ------------------------------------------------------------------------- */

static pthread_t stall_thread;
static atomic_uint stall_worst_ms;

static void *stall_main(void *arg) {
  (void)arg;
  while (atomic_load(&stall_running)) {
    uint64_t before = rh_now_ms();
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 1000000L};
    nanosleep(&ts, NULL);
    uint64_t late = rh_now_ms() - before;
    late = late > 1 ? late - 1 : 0;
    unsigned worst = atomic_load(&stall_worst_ms);
    while (late > worst && !atomic_compare_exchange_weak(&stall_worst_ms, &worst, (unsigned)late)) {
    }
  }
  return NULL;
}

void sf_stall_monitor_start(void) {
  atomic_store(&stall_worst_ms, 0);
  atomic_store(&stall_running, 1);
  assert_int_equal(pthread_create(&stall_thread, NULL, stall_main, NULL), 0);
}

void sf_stall_monitor_stop(void) {
  atomic_store(&stall_running, 0);
  pthread_join(stall_thread, NULL);
}

void sf_stall_reset(void) { atomic_store(&stall_worst_ms, 0); }

unsigned sf_stall_max_ms(void) { return atomic_load(&stall_worst_ms); }

/* ---- events ------------------------------------------------------------------------------------
 */

void sf_event_init(sf_event_t *ev) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&ev->cond, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&ev->mu, NULL);
  ev->count = 0;
}

void sf_event_destroy(sf_event_t *ev) {
  pthread_cond_destroy(&ev->cond);
  pthread_mutex_destroy(&ev->mu);
}

void sf_event_post(sf_event_t *ev) {
  pthread_mutex_lock(&ev->mu);
  ev->count++;
  pthread_cond_broadcast(&ev->cond);
  pthread_mutex_unlock(&ev->mu);
}

int sf_event_wait(sf_event_t *ev, int timeout_ms) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&ev->mu);
  int rc = 0;
  while (ev->count == 0 && rc == 0)
    rc = pthread_cond_timedwait(&ev->cond, &ev->mu, &deadline);
  int got = ev->count > 0;
  if (got)
    ev->count--;
  pthread_mutex_unlock(&ev->mu);
  return got;
}
