/* api_stats.c: redlock_stats() and the event callback against N = 3 real
 * masters, with faults.
 *
 * Asserts:
 *  - every operation counter moves when it should: acquire ok / locked
 *    (contention) / expired (ttl below the drift) / noquorum (masters killed,
 *    and paused with SIGSTOP), wait ok / timeout, extend ok, release ok, watch
 *    renewals ok and lost (the key overwritten behind the watch's back), and
 *    the latency histograms count them;
 *  - the gauges (held, watched, waiters, rounds in flight, masters usable) and
 *    the per-master figures (state on kill / restart / quarantine, votes by
 *    verdict, request latency, requests in flight, reconnects) follow;
 *  - events fire once per operation with kind, resource, status, duration and
 *    each master's verdict and latency; master down / up / quarantine end;
 *    a wait canceled by close; redlock_stats() works from the callback;
 *  - the Prometheus text passes `promtool check metrics` (SKIP when promtool
 *    is not installed: scripts/deps.sh and CI install it), the JSON parses
 *    (python3 -m json.tool), truncation is snprintf's, bad arguments are
 *    EINVAL, and every metric printed is described in docs/observability.md;
 *  - with redlock_options_set_stats(opts, 0) redlock_stats is ENOTSUP and
 *    events still fire.
 */
#include "fixture.h"

#include <sys/wait.h>

#ifndef REDLOCK_SOURCE_DIR
#define REDLOCK_SOURCE_DIR "."
#endif

#define N_MASTERS 3

/* Every test starts with every master up and running (a failed test may
 * have left one killed or paused). */
static int test_setup(void **state) {
  (void)state;
  for (size_t i = 0; i < fx_group->n; i++) {
    rh_server_resume(fx_group->servers[i]);
    if (rh_server_pid(fx_group->servers[i]) == 0 && rh_server_restart(fx_group->servers[i]) != 0)
      return -1;
  }
  return 0;
}

#define stats_test(f) cmocka_unit_test_setup_teardown(f, test_setup, fx_close_clients)

/* ---- reading stats -------------------------------------------------------------------- */

/* The whole rendering, malloc'ed (measured first, like snprintf). */
static char *stats_text(redlock_t *client, int format) {
  for (;;) {
    int n = redlock_stats(client, format, NULL, 0);
    assert_true(n > 0);
    size_t size = (size_t)n + 1024; /* a counter may grow in between */
    char *buf = malloc(size);
    assert_non_null(buf);
    int m = redlock_stats(client, format, buf, size);
    assert_true(m > 0);
    if ((size_t)m < size) {
      assert_int_equal(strlen(buf), (size_t)m);
      return buf;
    }
    free(buf);
  }
}

/* The value of one sample ("name{labels}") in Prometheus text; -1 if absent. */
static double sample(const char *text, const char *series) {
  size_t len = strlen(series);
  for (const char *p = text; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, series, len) == 0 && p[len] == ' ')
      return strtod(p + len + 1, NULL);
  }
  return -1;
}

static double metric(redlock_t *client, const char *series) {
  char *text = stats_text(client, REDLOCK_STATS_PROMETHEUS);
  double v = sample(text, series);
  free(text);
  return v;
}

static double op_count(redlock_t *client, const char *op, const char *outcome) {
  char series[160];
  snprintf(series, sizeof series, "redlock_operations_total{op=\"%s\",outcome=\"%s\"}", op,
           outcome);
  return metric(client, series);
}

static double op_hist_count(redlock_t *client, const char *op) {
  char series[160];
  snprintf(series, sizeof series, "redlock_operation_duration_seconds_count{op=\"%s\"}", op);
  return metric(client, series);
}

/* A per-master series: name{master="127.0.0.1:PORT"[,k="v"]}. */
static double master_metric(redlock_t *client, const char *name, size_t i, const char *k,
                            const char *v) {
  char series[256];
  int port = rh_server_port(fx_group->servers[i]);
  if (k != NULL)
    snprintf(series, sizeof series, "%s{master=\"127.0.0.1:%d\",%s=\"%s\"}", name, port, k, v);
  else
    snprintf(series, sizeof series, "%s{master=\"127.0.0.1:%d\"}", name, port);
  return metric(client, series);
}

static double master_state(redlock_t *client, size_t i, const char *state) {
  return master_metric(client, "redlock_master_state", i, "state", state);
}

typedef struct {
  redlock_t *client;
  const char *series;
  double min, max;
} wait_metric_t;

static int pred_metric_in(void *arg) {
  wait_metric_t *w = arg;
  double v = metric(w->client, w->series);
  return v >= w->min && v <= w->max;
}

/* Waits up to FX_SETTLE_MS for min <= series <= max (replies that come
 * after a call returned still count, a little later). */
static void assert_metric_soon(redlock_t *client, const char *series, double min, double max) {
  wait_metric_t w = {client, series, min, max};
  if (!rh_wait_until(pred_metric_in, &w, FX_SETTLE_MS)) {
    char *text = stats_text(client, REDLOCK_STATS_PROMETHEUS);
    fprintf(stderr, "%s = %g, expected %g..%g\n%s", series, sample(text, series), min, max, text);
    free(text);
    fail();
  }
}

static void assert_master_state_soon(redlock_t *client, size_t i, const char *state) {
  char series[256];
  snprintf(series, sizeof series, "redlock_master_state{master=\"127.0.0.1:%d\",state=\"%s\"}",
           rh_server_port(fx_group->servers[i]), state);
  assert_metric_soon(client, series, 1, 1);
}

/* ---- recording events ----------------------------------------------------------------- */

#define MAX_EVENTS 256

typedef struct {
  int kind, status, attempts, n;
  char resource[128];
  int has_resource;
  int64_t duration_us;
  char addr[N_MASTERS][64];
  char verdict[N_MASTERS][16];
  int64_t latency_us[N_MASTERS];
  char detail[200];
  int stats_len; /* redlock_stats() called from the callback */
} ev_rec_t;

typedef struct {
  pthread_mutex_t mu;
  ev_rec_t ev[MAX_EVENTS];
  int n;
  redlock_t *_Atomic client; /* for redlock_stats from the callback */
} ev_log_t;

static ev_log_t evlog = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void ev_reset(void) {
  pthread_mutex_lock(&evlog.mu);
  evlog.n = 0;
  pthread_mutex_unlock(&evlog.mu);
  atomic_store(&evlog.client, NULL);
}

static void event_cb(const redlock_event_t *ev, void *arg) {
  ev_log_t *log = arg;
  ev_rec_t r;
  memset(&r, 0, sizeof r);
  r.kind = redlock_event_kind(ev);
  r.status = redlock_event_status(ev);
  r.attempts = redlock_event_attempts(ev);
  r.duration_us = redlock_event_duration_us(ev);
  const char *res = redlock_event_resource(ev);
  if (res != NULL) {
    r.has_resource = 1;
    snprintf(r.resource, sizeof r.resource, "%s", res);
  }
  r.n = redlock_event_node_count(ev);
  for (int i = 0; i < r.n && i < N_MASTERS; i++) {
    snprintf(r.addr[i], sizeof r.addr[i], "%s", redlock_event_node_addr(ev, i));
    const char *v = redlock_event_node_verdict(ev, i);
    snprintf(r.verdict[i], sizeof r.verdict[i], "%s", v ? v : "(null)");
    r.latency_us[i] = redlock_event_node_latency_us(ev, i);
  }
  /* Out of range: NULL / -1, never a crash. */
  if (redlock_event_node_addr(ev, r.n) != NULL || redlock_event_node_addr(ev, -1) != NULL ||
      redlock_event_node_latency_us(ev, r.n) != -1)
    r.n = -100;
  const char *detail = redlock_event_detail(ev);
  if (detail != NULL)
    snprintf(r.detail, sizeof r.detail, "%s", detail);
  redlock_t *client = atomic_load(&log->client);
  r.stats_len = client != NULL ? redlock_stats(client, REDLOCK_STATS_JSON, NULL, 0) : 0;
  pthread_mutex_lock(&log->mu);
  if (log->n < MAX_EVENTS)
    log->ev[log->n++] = r;
  pthread_mutex_unlock(&log->mu);
}

/* Index of the first event of `kind` (and resource, when given) from index
 * `from` on, or -1. */
static int ev_find(int kind, const char *resource, int from) {
  int found = -1;
  pthread_mutex_lock(&evlog.mu);
  for (int i = from; i < evlog.n; i++)
    if (evlog.ev[i].kind == kind &&
        (resource == NULL || strcmp(evlog.ev[i].resource, resource) == 0)) {
      found = i;
      break;
    }
  pthread_mutex_unlock(&evlog.mu);
  return found;
}

static ev_rec_t ev_get(int i) {
  pthread_mutex_lock(&evlog.mu);
  ev_rec_t r = evlog.ev[i];
  pthread_mutex_unlock(&evlog.mu);
  return r;
}

typedef struct {
  int kind;
  const char *resource;
} ev_want_t;

static int pred_event(void *arg) {
  ev_want_t *w = arg;
  return ev_find(w->kind, w->resource, 0) >= 0;
}

typedef struct {
  int kind;
  char addr[64];
  int nth;
  ev_rec_t found;
} master_ev_want_t;

static int pred_master_event(void *arg) {
  master_ev_want_t *w = arg;
  int seen = 0;
  pthread_mutex_lock(&evlog.mu);
  for (int i = 0; i < evlog.n && seen < w->nth; i++)
    if (evlog.ev[i].kind == w->kind && evlog.ev[i].n == 1 &&
        strcmp(evlog.ev[i].addr[0], w->addr) == 0 && ++seen == w->nth)
      w->found = evlog.ev[i];
  pthread_mutex_unlock(&evlog.mu);
  return seen == w->nth;
}

/* The nth (from 1) master event of `kind` for master i, waited for. */
static ev_rec_t wait_master_event(int kind, size_t i, int nth, int timeout_ms) {
  master_ev_want_t w;
  memset(&w, 0, sizeof w);
  w.kind = kind;
  w.nth = nth;
  snprintf(w.addr, sizeof w.addr, "127.0.0.1:%d", rh_server_port(fx_group->servers[i]));
  if (!rh_wait_until(pred_master_event, &w, timeout_ms))
    fail_msg("no %s event #%d for master %s", redlock_event_kind_name(kind), nth, w.addr);
  return w.found;
}

static redlock_options_t *options_with_events(int retry) {
  redlock_options_t *opts = fx_options_retry(fx_group, 0, FX_NO_LOG, retry, 10, 10);
  assert_int_equal(redlock_options_set_event_cb(opts, event_cb, &evlog), REDLOCK_OK);
  return opts;
}

/* ---- tests ---------------------------------------------------------------------------- */

/* acquire / extend / renew / release ok; gauges; per-master votes and latency. */
static void test_ok_counters_and_gauges(void **state) {
  (void)state;
  redlock_t *c = fx_client(fx_group, 0, 10, 10);
  FX_NAME(res, "ok");
  assert_int_equal(op_count(c, "acquire", "ok"), 0);
  assert_int_equal(metric(c, "redlock_quorum"), 2);
  assert_int_equal(metric(c, "redlock_masters"), 3);
  assert_int_equal(metric(c, "redlock_masters_usable"), 3);
  for (size_t i = 0; i < N_MASTERS; i++)
    assert_int_equal(master_state(c, i, "up"), 1);

  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_lock(c, res, 10000, &lock), REDLOCK_OK);
  assert_int_equal(op_count(c, "acquire", "ok"), 1);
  assert_int_equal(op_hist_count(c, "acquire"), 1);
  assert_int_equal(metric(c, "redlock_held_locks"), 1);
  assert_int_equal(redlock_extend(c, lock, 10000), REDLOCK_OK);
  assert_int_equal(op_count(c, "extend", "ok"), 1);
  assert_int_equal(op_hist_count(c, "extend"), 1);
  assert_int_equal(redlock_watch(c, lock, NULL, NULL), REDLOCK_OK);
  assert_metric_soon(c, "redlock_watched_locks", 1, 1);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  assert_int_equal(op_count(c, "release", "ok"), 1);
  assert_int_equal(op_hist_count(c, "release"), 1);
  assert_int_equal(metric(c, "redlock_held_locks"), 0);
  assert_int_equal(metric(c, "redlock_watched_locks"), 0);
  assert_int_equal(
      metric(c, "redlock_operation_duration_seconds_bucket{op=\"acquire\",le=\"+Inf\"}"), 1);
  /* Every master answered all three rounds (some after the decision). */
  for (size_t i = 0; i < N_MASTERS; i++) {
    char series[256];
    int port = rh_server_port(fx_group->servers[i]);
    snprintf(series, sizeof series,
             "redlock_master_votes_total{master=\"127.0.0.1:%d\",verdict=\"OK\"}", port);
    assert_metric_soon(c, series, 3, 3);
    snprintf(series, sizeof series,
             "redlock_master_request_duration_seconds_count{master=\"127.0.0.1:%d\"}", port);
    assert_metric_soon(c, series, 3, 1e9);
    snprintf(series, sizeof series, "redlock_master_requests_in_flight{master=\"127.0.0.1:%d\"}",
             port);
    assert_metric_soon(c, series, 0, 0);
    assert_true(master_metric(c, "redlock_master_requests_total", i, NULL, NULL) >= 3);
    assert_int_equal(master_metric(c, "redlock_master_reconnects_total", i, NULL, NULL), 0);
    assert_int_equal(master_metric(c, "redlock_master_tls_handshake_failures_total", i, NULL, NULL),
                     0);
  }
  assert_metric_soon(c, "redlock_rounds_in_flight", 0, 0);
  /* Nothing else moved. */
  assert_int_equal(op_count(c, "acquire", "locked"), 0);
  assert_int_equal(op_count(c, "acquire", "noquorum"), 0);
  assert_int_equal(metric(c, "redlock_locks_lost_total"), 0);
}

typedef struct {
  redlock_t *client;
  const char *series;
} gauge_probe_t;

/* locked (contention), wait timeout, wait ok woken by a release, waiters gauge. */
static void test_locked_and_wait(void **state) {
  (void)state;
  redlock_t *holder = fx_client(fx_group, 0, 10, 10);
  redlock_t *c = fx_client(fx_group, 0, 10, 10);
  FX_NAME(res, "locked");
  redlock_lock_t *held = NULL, *lock = NULL;
  assert_int_equal(redlock_lock(holder, res, 10000, &held), REDLOCK_OK);

  assert_int_equal(redlock_trylock(c, res, 10000, &lock), REDLOCK_ELOCKED);
  assert_int_equal(op_count(c, "acquire", "locked"), 1);
  double refused = 0;
  for (size_t i = 0; i < N_MASTERS; i++)
    refused += master_metric(c, "redlock_master_votes_total", i, "verdict", "refused");
  assert_true(refused >= 2);

  /* A wait that runs out: the waiters gauge is 1 meanwhile. */
  fx_rec_t rec;
  fx_rec_init(&rec);
  assert_int_equal(redlock_lock_async(c, res, 10000, 600, fx_rec_lock_cb, &rec), REDLOCK_OK);
  assert_metric_soon(c, "redlock_waiters", 1, 1);
  assert_true(fx_rec_wait(&rec, 5000));
  assert_int_equal(atomic_load(&rec.status), REDLOCK_ETIMEDOUT);
  assert_int_equal(op_count(c, "wait", "timeout"), 1);
  assert_int_equal(metric(c, "redlock_waiters"), 0);
  assert_true(metric(c, "redlock_operation_duration_seconds_sum{op=\"wait\"}") >= 0.5);

  /* A wait that a release ends. */
  fx_rec_init(&rec);
  assert_int_equal(redlock_lock_async(c, res, 10000, 5000, fx_rec_lock_cb, &rec), REDLOCK_OK);
  assert_metric_soon(c, "redlock_waiters", 1, 1);
  assert_int_equal(redlock_unlock(holder, held), REDLOCK_OK);
  assert_true(fx_rec_wait(&rec, 5000));
  assert_int_equal(atomic_load(&rec.status), REDLOCK_OK);
  assert_int_equal(op_count(c, "wait", "ok"), 1);
  assert_int_equal(op_hist_count(c, "wait"), 2);
  assert_int_equal(metric(c, "redlock_waiters"), 0);
  assert_int_equal(metric(c, "redlock_held_locks"), 1);
  assert_int_equal(redlock_unlock(c, atomic_load(&rec.lock)), REDLOCK_OK);
}

/* A ttl below the drift (2 ms + 1%) leaves no validity: EEXPIRED. */
static void test_expired(void **state) {
  (void)state;
  redlock_t *c = fx_client(fx_group, 0, 10, 10);
  FX_NAME(res, "expired");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(c, res, 1, &lock), REDLOCK_EEXPIRED);
  assert_int_equal(op_count(c, "acquire", "expired"), 1);
  assert_int_equal(op_count(c, "acquire", "ok"), 0);
}

/* Two masters killed: noquorum, states down, usable 1, events; restarted:
 * up again, reconnects counted, events. */
static void test_noquorum_kill_restart(void **state) {
  (void)state;
  ev_reset();
  redlock_t *c = fx_open_free(fx_group, options_with_events(0));
  FX_NAME(res, "kill");
  assert_int_equal(rh_server_kill(fx_group->servers[1]), 0);
  assert_int_equal(rh_server_kill(fx_group->servers[2]), 0);
  assert_master_state_soon(c, 1, "down");
  assert_master_state_soon(c, 2, "down");
  assert_int_equal(master_state(c, 0, "up"), 1);
  assert_int_equal(metric(c, "redlock_masters_usable"), 1);
  ev_rec_t down = wait_master_event(REDLOCK_EVENT_NODE_DOWN, 1, 1, 5000);
  assert_int_equal(down.status, REDLOCK_EIO);
  assert_string_equal(down.verdict[0], "down");
  assert_false(down.has_resource);
  assert_true(strlen(down.detail) > 0);
  assert_true(down.duration_us > 0); /* it had been up */
  wait_master_event(REDLOCK_EVENT_NODE_DOWN, 2, 1, 5000);
  /* Each master came up once at open. */
  assert_string_equal(wait_master_event(REDLOCK_EVENT_NODE_UP, 1, 1, 5000).verdict[0], "up");
  assert_true(master_metric(c, "redlock_master_disconnects_total", 1, NULL, NULL) >= 1);

  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(c, res, 10000, &lock), REDLOCK_ENOQUORUM);
  assert_int_equal(op_count(c, "acquire", "noquorum"), 1);
  assert_true(master_metric(c, "redlock_master_votes_total", 1, "verdict", "down") >= 1);
  int at = ev_find(REDLOCK_EVENT_ACQUIRE, res, 0);
  assert_true(at >= 0);
  ev_rec_t acq = ev_get(at);
  assert_int_equal(acq.status, REDLOCK_ENOQUORUM);
  assert_int_equal(acq.n, N_MASTERS);
  assert_string_equal(acq.verdict[1], "down");
  assert_string_equal(acq.verdict[2], "down");
  assert_int_equal(acq.latency_us[1], -1);

  assert_int_equal(rh_server_restart(fx_group->servers[1]), 0);
  assert_int_equal(rh_server_restart(fx_group->servers[2]), 0);
  assert_master_state_soon(c, 1, "up");
  assert_master_state_soon(c, 2, "up");
  assert_metric_soon(c, "redlock_masters_usable", 3, 3);
  assert_int_equal(master_metric(c, "redlock_master_reconnects_total", 1, NULL, NULL), 1);
  assert_int_equal(master_metric(c, "redlock_master_reconnects_total", 0, NULL, NULL), 0);
  ev_rec_t up = wait_master_event(REDLOCK_EVENT_NODE_UP, 1, 2, 5000);
  assert_int_equal(up.status, REDLOCK_OK);
  assert_string_equal(up.verdict[0], "up"); /* quarantine is off */
  assert_true(up.duration_us > 0);          /* it had been down */
  assert_int_equal(redlock_trylock(c, res, 10000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

/* Two masters paused (SIGSTOP): their votes time out, noquorum. */
static void test_noquorum_sigstop(void **state) {
  (void)state;
  redlock_t *c = fx_client(fx_group, 0, 10, 10);
  FX_NAME(res, "stop");
  assert_int_equal(rh_server_pause(fx_group->servers[0]), 0);
  assert_int_equal(rh_server_pause(fx_group->servers[1]), 0);
  redlock_lock_t *lock = NULL;
  int rc = redlock_trylock(c, res, 10000, &lock);
  assert_int_equal(rc, REDLOCK_ENOQUORUM);
  assert_int_equal(op_count(c, "acquire", "noquorum"), 1);
  /* (The release that follows the failed attempt may add a vote each.) */
  assert_true(master_metric(c, "redlock_master_votes_total", 0, "verdict", "timeout") >= 1);
  assert_true(master_metric(c, "redlock_master_votes_total", 1, "verdict", "timeout") >= 1);
  assert_true(master_metric(c, "redlock_master_votes_total", 2, "verdict", "OK") >= 1);
  assert_int_equal(master_metric(c, "redlock_master_votes_total", 2, "verdict", "timeout"), 0);
  /* The requests stay written and unanswered while the masters sleep. */
  assert_true(master_metric(c, "redlock_master_requests_in_flight", 0, NULL, NULL) >= 1);
  assert_int_equal(rh_server_resume(fx_group->servers[0]), 0);
  assert_int_equal(rh_server_resume(fx_group->servers[1]), 0);
  assert_metric_soon(c, "redlock_masters_usable", 3, 3);
}

/* A watched lock whose key is overwritten: the renewal is refused by every
 * master, the lock is lost; renew ok before, renew lost, locks lost, events. */
static void test_watch_renew_and_lost(void **state) {
  (void)state;
  ev_reset();
  redlock_t *c = fx_open_free(fx_group, options_with_events(0));
  FX_NAME(res, "lost");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_lock(c, res, 600, &lock), REDLOCK_OK);
  fx_lost_t lost;
  fx_lost_init(&lost);
  assert_int_equal(redlock_watch(c, lock, fx_lost_cb, &lost), REDLOCK_OK);
  /* One renewal goes through (at a third of the ttl left: ~400 ms). */
  assert_metric_soon(c, "redlock_operations_total{op=\"renew\",outcome=\"ok\"}", 1, 1e9);
  ev_want_t w = {REDLOCK_EVENT_RENEW, res};
  assert_true(rh_wait_until(pred_event, &w, FX_SETTLE_MS));
  ev_rec_t renew = ev_get(ev_find(REDLOCK_EVENT_RENEW, res, 0));
  assert_int_equal(renew.status, REDLOCK_OK);
  assert_int_equal(renew.attempts, 1);
  /* Someone else's value everywhere: the next renewal finds ours gone. */
  char buf[64];
  for (size_t i = 0; i < N_MASTERS; i++)
    assert_int_equal(
        rh_server_command(fx_group->servers[i], buf, sizeof buf, "SET %s intruder PX 5000", res),
        0);
  assert_true(fx_lost_wait(&lost, 1, 5000));
  assert_int_equal(atomic_load(&lost.reason), REDLOCK_ELOST);
  assert_int_equal(op_count(c, "renew", "lost"), 1);
  assert_int_equal(metric(c, "redlock_locks_lost_total"), 1);
  assert_int_equal(metric(c, "redlock_watched_locks"), 0);
  int at = ev_find(REDLOCK_EVENT_LOST, res, 0);
  assert_true(at >= 0);
  ev_rec_t lostev = ev_get(at);
  assert_int_equal(lostev.status, REDLOCK_ELOST);
  assert_int_equal(lostev.n, 0);
  /* The failed renewal's event (right after the LOST event it caused)
   * shows the refusals. */
  int r2 = -1;
  for (int from = 0; (from = ev_find(REDLOCK_EVENT_RENEW, res, from)) >= 0; from++)
    if (ev_get(from).status == REDLOCK_ELOST)
      r2 = from;
  assert_true(r2 > at);
  ev_rec_t failed = ev_get(r2);
  int refusals = 0;
  for (int i = 0; i < N_MASTERS; i++)
    refusals += strcmp(failed.verdict[i], "refused") == 0;
  assert_true(refusals >= 2);
  /* Releasing a lost lock: the masters no longer have our value. */
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_ELOST);
  assert_int_equal(op_count(c, "release", "lost"), 1);
  assert_int_equal(metric(c, "redlock_held_locks"), 0);
  for (size_t i = 0; i < N_MASTERS; i++)
    rh_server_command(fx_group->servers[i], buf, sizeof buf, "DEL %s", res);
}

/* Events of ordinary operations: fields, order, stats from the callback, and
 * a wait canceled by close. */
static void test_events(void **state) {
  (void)state;
  ev_reset();
  redlock_t *holder = fx_client(fx_group, 0, 10, 10);
  redlock_t *c = fx_open_free(fx_group, options_with_events(0));
  atomic_store(&evlog.client, c);
  char res[64], busy[64];
  fx_name(res, sizeof res, "ev");
  fx_name(busy, sizeof busy, "evbusy");
  redlock_lock_t *lock = NULL, *held = NULL;
  assert_int_equal(redlock_lock(c, res, 10000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_extend(c, lock, 10000), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  assert_int_equal(redlock_lock(holder, busy, 10000, &held), REDLOCK_OK);
  assert_int_equal(redlock_trylock(c, busy, 10000, &lock), REDLOCK_ELOCKED);

  int a = ev_find(REDLOCK_EVENT_ACQUIRE, res, 0);
  int e = ev_find(REDLOCK_EVENT_EXTEND, res, 0);
  int r = ev_find(REDLOCK_EVENT_RELEASE, res, 0);
  int l = ev_find(REDLOCK_EVENT_ACQUIRE, busy, 0);
  assert_true(a >= 0 && a < e && e < r && r < l);
  ev_rec_t acq = ev_get(a);
  assert_int_equal(acq.status, REDLOCK_OK);
  assert_int_equal(acq.attempts, 1);
  assert_int_equal(acq.n, N_MASTERS);
  assert_true(acq.duration_us >= 0 && acq.duration_us < 10000000);
  assert_true(acq.stats_len > 0); /* redlock_stats worked on the loop thread */
  int ok = 0;
  for (int i = 0; i < N_MASTERS; i++) {
    char want[64];
    snprintf(want, sizeof want, "127.0.0.1:%d", rh_server_port(fx_group->servers[i]));
    assert_string_equal(acq.addr[i], want);
    if (strcmp(acq.verdict[i], "OK") == 0) {
      ok++;
      assert_true(acq.latency_us[i] >= 0 && acq.latency_us[i] <= acq.duration_us + 1000);
    } else {
      assert_string_equal(acq.verdict[i], "pending"); /* not in when the quorum decided */
      assert_int_equal(acq.latency_us[i], -1);
    }
  }
  assert_true(ok >= 2);
  assert_int_equal(ev_get(e).status, REDLOCK_OK);
  assert_int_equal(ev_get(e).attempts, 1);
  assert_int_equal(ev_get(r).status, REDLOCK_OK);
  ev_rec_t lk = ev_get(l);
  assert_int_equal(lk.status, REDLOCK_ELOCKED);
  int refused = 0;
  for (int i = 0; i < N_MASTERS; i++)
    refused += strcmp(lk.verdict[i], "refused") == 0;
  assert_true(refused >= 2);
  assert_string_equal(redlock_event_kind_name(REDLOCK_EVENT_ACQUIRE), "acquire");
  assert_string_equal(redlock_event_kind_name(REDLOCK_EVENT_QUARANTINE_END), "quarantine_end");
  assert_string_equal(redlock_event_kind_name(999), "unknown");
  assert_string_equal(redlock_event_kind_name(0), "unknown");

  /* A wait in progress when the client closes ends canceled, with its event. */
  fx_rec_t rec;
  fx_rec_init(&rec);
  assert_int_equal(redlock_lock_async(c, busy, 10000, 10000, fx_rec_lock_cb, &rec), REDLOCK_OK);
  assert_metric_soon(c, "redlock_waiters", 1, 1);
  atomic_store(&evlog.client, NULL);
  fx_close_client(fx_group, c);
  assert_int_equal(atomic_load(&rec.status), REDLOCK_ECANCELED);
  int w = ev_find(REDLOCK_EVENT_WAIT, busy, 0);
  assert_true(w >= 0);
  assert_int_equal(ev_get(w).status, REDLOCK_ECANCELED);
  assert_int_equal(redlock_unlock(holder, held), REDLOCK_OK);
}

/* Restart quarantine: a restarted master is up but quarantined (not usable),
 * then its quarantine ends (event). */
static void test_quarantine(void **state) {
  (void)state;
  ev_reset();
  redlock_options_t *opts = options_with_events(0);
  assert_int_equal(redlock_options_set_quarantine(opts, 1), REDLOCK_OK);
  assert_int_equal(redlock_options_set_max_ttl(opts, 2000), REDLOCK_OK);
  redlock_t *c = fx_open_free(fx_group, opts);
  assert_int_equal(rh_server_kill(fx_group->servers[0]), 0);
  assert_master_state_soon(c, 0, "down");
  assert_int_equal(rh_server_restart(fx_group->servers[0]), 0);
  assert_master_state_soon(c, 0, "quarantined");
  double left = master_metric(c, "redlock_master_quarantine_remaining_seconds", 0, NULL, NULL);
  assert_true(left > 0 && left <= 2.0);
  assert_true(metric(c, "redlock_masters_usable") <= 2);
  ev_rec_t up = wait_master_event(REDLOCK_EVENT_NODE_UP, 0, 2, 5000);
  assert_string_equal(up.verdict[0], "quarantined");
  ev_rec_t end = wait_master_event(REDLOCK_EVENT_QUARANTINE_END, 0, 1, 5000);
  assert_int_equal(end.status, REDLOCK_OK);
  assert_string_equal(end.verdict[0], "up");
  assert_true(end.duration_us >= 500000); /* at least the quarantine it announced, roughly */
  assert_master_state_soon(c, 0, "up");
  assert_int_equal(master_metric(c, "redlock_master_quarantine_remaining_seconds", 0, NULL, NULL),
                   0);
}

/* ---- formats --------------------------------------------------------------------------- */

static int have_program(const char *name) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
  return system(cmd) == 0;
}

/* Runs `cmd < file`, prints its output on failure; returns its exit status. */
static int run_on_file(const char *cmd, const char *text) {
  char path[] = "/tmp/api_stats_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  size_t len = strlen(text);
  assert_int_equal(write(fd, text, len), (ssize_t)len);
  close(fd);
  char line[512];
  snprintf(line, sizeof line, "%s < %s > %s.out 2>&1", cmd, path, path);
  int st = system(line);
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (rc != 0) {
    snprintf(line, sizeof line, "cat %s.out >&2", path);
    fprintf(stderr, "`%s` failed (%d) on:\n%s\n", cmd, rc, text);
    if (system(line) != 0)
      fprintf(stderr, "(no output)\n");
  }
  snprintf(line, sizeof line, "%s.out", path);
  unlink(line);
  unlink(path);
  return rc;
}

static void test_formats(void **state) {
  (void)state;
  redlock_t *c = fx_client(fx_group, 0, 10, 10);
  FX_NAME(res, "fmt");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_lock(c, res, 10000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  assert_int_equal(redlock_trylock(c, res, 1, &lock), REDLOCK_EEXPIRED);
  /* Settled (the release after the expired attempt answered): the text
   * stays the same from one call to the next. */
  assert_metric_soon(c, "redlock_rounds_in_flight", 0, 0);
  for (size_t i = 0; i < N_MASTERS; i++) {
    char series[256];
    snprintf(series, sizeof series, "redlock_master_requests_in_flight{master=\"127.0.0.1:%d\"}",
             rh_server_port(fx_group->servers[i]));
    assert_metric_soon(c, series, 0, 0);
  }

  /* Bad arguments. */
  char small[16];
  assert_int_equal(redlock_stats(NULL, REDLOCK_STATS_JSON, small, sizeof small), REDLOCK_EINVAL);
  assert_int_equal(redlock_stats(c, 0, small, sizeof small), REDLOCK_EINVAL);
  assert_int_equal(redlock_stats(c, 3, small, sizeof small), REDLOCK_EINVAL);
  assert_int_equal(redlock_stats(c, REDLOCK_STATS_JSON, NULL, 10), REDLOCK_EINVAL);

  for (int format = REDLOCK_STATS_PROMETHEUS; format <= REDLOCK_STATS_JSON; format++) {
    char *full = stats_text(c, format);
    size_t n = strlen(full);
    /* Measuring with size 0 (buf NULL or not) writes nothing. */
    assert_int_equal(redlock_stats(c, format, NULL, 0), (int)n);
    small[0] = 'x';
    assert_int_equal(redlock_stats(c, format, small, 0), (int)n);
    assert_int_equal(small[0], 'x');
    /* Truncated like snprintf: size - 1 bytes and a NUL, full length returned. */
    memset(small, 'x', sizeof small);
    assert_int_equal(redlock_stats(c, format, small, sizeof small), (int)n);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, full, sizeof small - 1);
    assert_int_equal(redlock_stats(c, format, small, 1), (int)n);
    assert_int_equal(small[0], '\0');
    /* Exactly the size needed. */
    char *exact = malloc(n + 1);
    assert_non_null(exact);
    assert_int_equal(redlock_stats(c, format, exact, n + 1), (int)n);
    assert_string_equal(exact, full);
    free(exact);
    free(full);
  }

  char *prom = stats_text(c, REDLOCK_STATS_PROMETHEUS);
  assert_non_null(strstr(prom, "# TYPE redlock_operations_total counter\n"));
  assert_non_null(strstr(prom, "# TYPE redlock_operation_duration_seconds histogram\n"));
  assert_non_null(strstr(prom, "redlock_build_info{version=\""));
  assert_int_equal(sample(prom, "redlock_operations_total{op=\"acquire\",outcome=\"expired\"}"), 1);
  if (have_program("promtool"))
    assert_int_equal(run_on_file("promtool check metrics", prom), 0);
  else
    printf("SKIP: promtool not installed (Debian package `prometheus`; scripts/deps.sh installs "
           "it): the Prometheus text was not checked by promtool\n");

  /* Every metric family printed is described in docs/observability.md. */
  FILE *f = fopen(REDLOCK_SOURCE_DIR "/docs/observability.md", "r");
  assert_non_null(f);
  static char doc[1 << 17];
  size_t doc_len = fread(doc, 1, sizeof doc - 1, f);
  doc[doc_len] = '\0';
  fclose(f);
  int families = 0;
  for (const char *p = strstr(prom, "# TYPE "); p != NULL; p = strstr(p + 1, "# TYPE ")) {
    char name[128];
    assert_int_equal(sscanf(p, "# TYPE %127s", name), 1);
    char quoted[140];
    snprintf(quoted, sizeof quoted, "`%s`", name);
    if (strstr(doc, quoted) == NULL)
      fail_msg("metric %s is not described in docs/observability.md", name);
    families++;
  }
  assert_true(families >= 15);
  free(prom);
  /* The example alerts on that page are valid rules. */
  const char *yaml = strstr(doc, "```yaml\n");
  assert_non_null(yaml);
  yaml += strlen("```yaml\n");
  const char *yaml_end = strstr(yaml, "```");
  assert_non_null(yaml_end);
  if (have_program("promtool")) {
    char *rules = strndup(yaml, (size_t)(yaml_end - yaml));
    assert_non_null(rules);
    assert_int_equal(run_on_file("promtool check rules /dev/stdin", rules), 0);
    free(rules);
  }

  char *json = stats_text(c, REDLOCK_STATS_JSON);
  assert_non_null(strstr(json, "\"operations_total\":{\"acquire\":{\"ok\":1,"));
  assert_non_null(strstr(json, "\"masters\":[{\"master\":\"127.0.0.1:"));
  if (have_program("python3"))
    assert_int_equal(run_on_file("python3 -m json.tool", json), 0);
  else
    printf("SKIP: python3 not installed: the JSON was not parsed\n");
  free(json);
}

/* Stats off: redlock_stats is ENOTSUP; events still come. */
static void test_stats_off(void **state) {
  (void)state;
  ev_reset();
  redlock_options_t *opts = options_with_events(0);
  assert_int_equal(redlock_options_set_stats(opts, 0), REDLOCK_OK);
  assert_int_equal(redlock_options_set_stats(NULL, 0), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_event_cb(NULL, event_cb, NULL), REDLOCK_EINVAL);
  redlock_t *c = fx_open_free(fx_group, opts);
  char buf[64];
  assert_int_equal(redlock_stats(c, REDLOCK_STATS_PROMETHEUS, buf, sizeof buf), REDLOCK_ENOTSUP);
  assert_int_equal(redlock_stats(c, REDLOCK_STATS_JSON, NULL, 0), REDLOCK_ENOTSUP);
  FX_NAME(res, "off");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_lock(c, res, 10000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  assert_true(ev_find(REDLOCK_EVENT_ACQUIRE, res, 0) >= 0);
  assert_true(ev_find(REDLOCK_EVENT_RELEASE, res, 0) >= 0);
  fx_close_client(fx_group, c);

  /* Both off: no stats object at all. */
  opts = fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10);
  assert_int_equal(redlock_options_set_stats(opts, 0), REDLOCK_OK);
  c = fx_open_free(fx_group, opts);
  assert_int_equal(redlock_stats(c, REDLOCK_STATS_JSON, NULL, 0), REDLOCK_ENOTSUP);
  assert_int_equal(redlock_lock(c, res, 10000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

/* Permits, read-write holds and won terms are counted under their own op
 * label (and event kind), not as plain acquisitions. */
typedef struct {
  _Atomic int terms;
} elect_rec_t;

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  (void)term;
  atomic_fetch_add(&((elect_rec_t *)arg)->terms, 1);
}

static void on_lost_term(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
}

static int pred_elected(void *arg) { return atomic_load(&((elect_rec_t *)arg)->terms) > 0; }

static void test_primitives(void **state) {
  (void)state;
  ev_reset();
  redlock_t *c = fx_open_free(fx_group, options_with_events(0));
  FX_NAME(res, "prim");
  redlock_lock_t *p1 = NULL, *p2 = NULL;
  assert_int_equal(redlock_semaphore_acquire(c, res, 1, 10000, 0, &p1), REDLOCK_OK);
  assert_int_equal(redlock_semaphore_acquire(c, res, 1, 10000, 0, &p2), REDLOCK_ELOCKED);
  assert_int_equal(op_count(c, "semaphore", "ok"), 1);
  assert_int_equal(op_count(c, "semaphore", "locked"), 1);
  assert_int_equal(op_hist_count(c, "semaphore"), 2);
  assert_int_equal(op_count(c, "acquire", "ok"), 0); /* not counted as a lock */
  assert_true(ev_find(REDLOCK_EVENT_SEMAPHORE, NULL, 0) >= 0);
  assert_int_equal(redlock_unlock(c, p1), REDLOCK_OK);
  assert_int_equal(op_count(c, "release", "ok"), 1);

  FX_NAME(rw, "prim-rw");
  redlock_lock_t *r = NULL, *w = NULL;
  assert_int_equal(redlock_rwlock_read(c, rw, 10000, 0, &r), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_write(c, rw, 10000, 0, &w), REDLOCK_ELOCKED);
  assert_int_equal(op_count(c, "rwlock_read", "ok"), 1);
  assert_int_equal(op_count(c, "rwlock_write", "locked"), 1);
  assert_true(ev_find(REDLOCK_EVENT_RWLOCK_READ, NULL, 0) >= 0);
  assert_true(ev_find(REDLOCK_EVENT_RWLOCK_WRITE, NULL, 0) >= 0);
  assert_int_equal(redlock_unlock(c, r), REDLOCK_OK);

  FX_NAME(el, "prim-el");
  elect_rec_t rec = {0};
  redlock_election_t *e = NULL;
  assert_int_equal(redlock_elect(c, el, 5000, on_elected, on_lost_term, &rec, &e), REDLOCK_OK);
  assert_true(rh_wait_until(pred_elected, &rec, 20000));
  assert_int_equal(op_count(c, "election", "ok"), 1);
  assert_int_equal(op_hist_count(c, "election"), 1);
  assert_true(ev_find(REDLOCK_EVENT_ELECTED, el, 0) >= 0);
  assert_string_equal(redlock_event_kind_name(REDLOCK_EVENT_ELECTED), "election");
  assert_int_equal(redlock_resign(c, e), REDLOCK_OK);
}

FX_GROUP_MAIN(240, stats_test(test_ok_counters_and_gauges), stats_test(test_locked_and_wait),
              stats_test(test_expired), stats_test(test_noquorum_kill_restart),
              stats_test(test_noquorum_sigstop), stats_test(test_watch_renew_and_lost),
              stats_test(test_events), stats_test(test_quarantine), stats_test(test_formats),
              stats_test(test_stats_off), stats_test(test_primitives))
