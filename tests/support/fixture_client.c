/* fixture_client.c: the fixture as cmocka setup/teardown, and the clients
 * over its masters (see fixture.h).  Teardown always resumes paused masters,
 * closes the clients and stops the masters, even when a test failed
 * halfway. */
#include "fixture.h"

#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* fixture_log.c */
fx_log_t *fx_log_new(void);
void fx_log_free(fx_log_t *log);

/* Freshly started servers would sit in restart quarantine for the default
 * max TTL (60 s): every profile turns it off; its own tests turn it on. */
const fx_profile_t fx_profile_integration = {FX_IT_CONNECT_MS, FX_IT_REQUEST_MS, 2, 20, 20};
const fx_profile_t fx_profile_safety = {FX_SF_CONNECT_MS, FX_SF_REQUEST_MS, 5, 20, 20};
const fx_profile_t fx_profile_api = {0, 0, 0, 10, 10};

static const fx_profile_t *current_profile = &fx_profile_safety;

void fx_use_profile(const fx_profile_t *profile) { current_profile = profile; }

int fx_shard(const char *name, unsigned *k, unsigned *of) {
  const char *shard = getenv("FX_SHARD");
  *k = 1;
  *of = 1;
  if (shard != NULL && (sscanf(shard, "%u/%u", k, of) != 2 || *k == 0 || *k > *of)) {
    fprintf(stderr, "%s: FX_SHARD=%s is not k/n with 1 <= k <= n\n", name, shard);
    return -1;
  }
  return 0;
}

int fx_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                 CMFixtureFunction group_setup, CMFixtureFunction group_teardown) {
  const char *only = getenv("FX_ONLY");
  const char *shard = getenv("FX_SHARD");
  unsigned k, of;
  if (fx_shard(name, &k, &of) != 0)
    return 1;
  struct CMUnitTest *picked = calloc(n > 0 ? n : 1, sizeof *picked);
  if (picked == NULL)
    return 1;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (i % of != k - 1)
      continue;
    if (only != NULL && fnmatch(only, tests[i].name, 0) != 0)
      continue;
    picked[m++] = tests[i];
  }
  int rc = 1;
  if (m == 0)
    fprintf(stderr, "%s: FX_SHARD=%s FX_ONLY=%s select no test\n", name, shard ? shard : "",
            only ? only : "");
  else
    rc = _cmocka_run_group_tests(name, picked, m, group_setup, group_teardown);
  free(picked);
  return rc;
}

/* ---- fixtures ------------------------------------------------------------------------ */

fx_t *fx_new(size_t n, const rh_options_t *opts) {
  fx_t *fx = calloc(1, sizeof *fx);
  if (fx == NULL)
    return NULL;
  fx->profile = current_profile;
  if (fx_servers_start(fx, n, opts) != 0) {
    free(fx);
    return NULL;
  }
  return fx;
}

void fx_free(fx_t *fx) {
  if (fx == NULL)
    return;
  /* Resume before closing: a client closing against a stopped master waits
   * for its request deadlines. */
  fx_pause(fx, FX_EVERY_MASTER, 0);
  for (int i = 0; i < FX_MAX_CLIENTS; i++) {
    fx_close(fx, i);
    fx_log_free(fx->logs[i]);
  }
  fx_servers_stop(fx);
  free(fx);
}

static int setup_n(void **state, size_t n) {
  *state = fx_new(n, NULL);
  return *state != NULL ? 0 : -1;
}

int fx_setup_0(void **state) { return setup_n(state, 0); }
int fx_setup_1(void **state) { return setup_n(state, 1); }
int fx_setup_2(void **state) { return setup_n(state, 2); }
int fx_setup_3(void **state) { return setup_n(state, 3); }
int fx_setup_5(void **state) { return setup_n(state, 5); }

int fx_teardown(void **state) {
  /* What a failed test may have left running. */
  fx_stall_monitor_stop();
  fx_children_kill();
  fx_free(*state);
  *state = NULL;
  return 0;
}

fx_t *fx_group;

int fx_group_setup_3(void **state) {
  fx_group = fx_new(3, NULL);
  *state = fx_group;
  return fx_group != NULL ? 0 : -1;
}

int fx_group_teardown(void **state) {
  fx_free(fx_group);
  fx_group = NULL;
  *state = NULL;
  return 0;
}

int fx_close_clients(void **state) {
  (void)state;
  for (int i = 0; fx_group != NULL && i < FX_MAX_CLIENTS; i++)
    fx_close(fx_group, i);
  return 0;
}

/* ---- clients ------------------------------------------------------------------------ */

redlock_options_t *fx_options_uris(fx_t *fx, int slot, const char *const *uris, size_t n,
                                   int log_min_level) {
  assert_true(slot >= 0 && slot < FX_MAX_CLIENTS);
  const fx_profile_t *p = fx->profile;
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  /* The log first: add_node reports a refused URI through it. */
  if (log_min_level != FX_NO_LOG) {
    if (fx->logs[slot] == NULL)
      fx->logs[slot] = fx_log_new();
    assert_non_null(fx->logs[slot]);
    assert_int_equal(redlock_options_set_log(opts, log_min_level, fx_log_cb, fx->logs[slot]), 0);
  }
  for (size_t i = 0; i < n; i++)
    assert_int_equal(redlock_options_add_node(opts, uris[i]), 0);
  assert_int_equal(redlock_options_set_quarantine(opts, 0), 0);
  if (p->connect_ms != 0 || p->request_ms != 0)
    assert_int_equal(redlock_options_set_timeouts(opts, p->connect_ms, p->request_ms), 0);
  assert_int_equal(
      redlock_options_set_retry(opts, p->retry_count, p->retry_delay_ms, p->retry_jitter_ms), 0);
  return opts;
}

redlock_options_t *fx_options(fx_t *fx, int slot, size_t n, int log_min_level) {
  const char *uris[FX_MAX_SERVERS];
  assert_true(n <= fx->n);
  for (size_t i = 0; i < n; i++)
    uris[i] = rh_server_uri(fx->servers[i]);
  return fx_options_uris(fx, slot, uris, n, log_min_level);
}

redlock_options_t *fx_options_retry(fx_t *fx, int slot, int log_min_level, int retry_count,
                                    uint32_t delay_ms, uint32_t jitter_ms) {
  redlock_options_t *opts = fx_options(fx, slot, fx->n, log_min_level);
  assert_int_equal(redlock_options_set_retry(opts, retry_count, delay_ms, jitter_ms), 0);
  return opts;
}

redlock_options_t *fx_options_fenced(fx_t *fx, int slot) {
  redlock_options_t *opts = fx_options(fx, slot, fx->n, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_fencing(opts, 1), 0);
  return opts;
}

redlock_t *fx_open(fx_t *fx, int slot, redlock_options_t *opts) {
  assert_true(slot >= 0 && slot < FX_MAX_CLIENTS);
  assert_null(fx->clients[slot]);
  int rc = redlock_open(&fx->clients[slot], opts);
  redlock_options_free(opts);
  assert_int_equal(rc, REDLOCK_OK);
  assert_non_null(fx->clients[slot]);
  return fx->clients[slot];
}

void fx_close(fx_t *fx, int slot) {
  if (fx->clients[slot] != NULL) {
    redlock_close(fx->clients[slot]);
    fx->clients[slot] = NULL;
  }
}

redlock_t *fx_open_uv(redlock_options_t *opts, uv_loop_t *loop) {
  assert_int_equal(uv_loop_init(loop), 0);
  redlock_t *client = NULL;
  int rc = redlock_open_uv(&client, opts, loop);
  redlock_options_free(opts);
  assert_int_equal(rc, REDLOCK_OK);
  assert_non_null(client);
  return client;
}

redlock_lock_t *fx_hold(fx_t *fx, redlock_t *holder, const char *res, uint32_t ttl_ms) {
  redlock_lock_t *held = NULL;
  assert_int_equal(redlock_trylock(holder, res, ttl_ms, &held), REDLOCK_OK);
  /* The call returned on a quorum; a late SET could lose to a contender's
   * on the last master. */
  assert_true(fx_wait_value_everywhere(fx, res, redlock_lock_value(held), FX_SETTLE_MS));
  return held;
}

void fx_contend(fx_t *fx, fx_contention_t *c, const char *what, uint32_t ttl_ms, int retry_count,
                uint32_t delay_ms, uint32_t jitter_ms) {
  c->holder = fx_client(fx, 0, 10, 10);
  c->contender = fx_client(fx, retry_count, delay_ms, jitter_ms);
  fx_name(c->res, sizeof c->res, what);
  c->held = fx_hold(fx, c->holder, c->res, ttl_ms);
}

int fx_refused_once(void *client) {
  char buf[512];
  return redlock_last_votes(client, buf, sizeof buf) > 0 && strncmp(buf, "lost (held)", 11) == 0;
}

static int free_slot(fx_t *fx) {
  for (int i = 0; i < FX_MAX_CLIENTS; i++)
    if (fx->clients[i] == NULL)
      return i;
  fail_msg("fixture: all %d client slots are taken", FX_MAX_CLIENTS);
  return -1;
}

redlock_t *fx_open_free(fx_t *fx, redlock_options_t *opts) {
  return fx_open(fx, free_slot(fx), opts);
}

redlock_t *fx_client(fx_t *fx, int retry_count, uint32_t delay_ms, uint32_t jitter_ms) {
  return fx_open_free(fx, fx_options_retry(fx, 0, FX_NO_LOG, retry_count, delay_ms, jitter_ms));
}

void fx_forget(fx_t *fx, redlock_t *client) {
  for (int i = 0; i < FX_MAX_CLIENTS; i++)
    if (fx->clients[i] == client)
      fx->clients[i] = NULL;
}

void fx_close_client(fx_t *fx, redlock_t *client) {
  fx_forget(fx, client);
  redlock_close(client);
}

void fx_check_rc(fx_t *fx, redlock_t *client, int rc, int want, const char *what, const char *file,
                 int line) {
  if (rc == want)
    return;
  char votes[1024] = "";
  if (client != NULL)
    redlock_last_votes(client, votes, sizeof votes);
  print_error("%s returned %s, want %s\nlast votes: %s\nlog:\n%s\n", what, redlock_err_name(rc),
              redlock_err_name(want), votes, fx != NULL ? fx_log_text(fx, FX_ALL) : "");
  _fail(file, line);
}

/* ---- locking helpers ------------------------------------------------------------------ */

void fx_copy_value(char *dst, size_t size, const redlock_lock_t *lock) {
  const char *v = redlock_lock_value(lock);
  assert_non_null(v);
  assert_true(strlen(v) >= 32); /* at least 128 bits, as hex */
  snprintf(dst, size, "%s", v);
}

redlock_lock_t *fx_lock_ok(fx_t *fx, redlock_t *client, const char *resource, uint32_t ttl_ms,
                           char *value, size_t size) {
  redlock_lock_t *lock = NULL;
  FX_ASSERT_RC(fx, client, redlock_lock(client, resource, ttl_ms, &lock), REDLOCK_OK);
  fx_copy_value(value, size, lock);
  return lock;
}

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

int fx_trylock_until(redlock_t *c, const char *res, uint32_t ttl_ms, int timeout_ms,
                     redlock_lock_t **out) {
  trylock_wait_t w = {c, res, ttl_ms, NULL, REDLOCK_EINVAL};
  *out = NULL;
  if (rh_wait_until(trylock_pred, &w, timeout_ms))
    *out = w.lock;
  return w.rc;
}

int fx_wait_votes_count(fx_t *fx, redlock_t *c, size_t n, unsigned mask, int timeout_ms) {
  size_t q = n / 2 + 1;
  size_t members[FX_MAX_SERVERS];
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
    if (fx_trylock_until(c, probe, 500, left, &lock) != REDLOCK_OK)
      return 0;
    assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
    if (start + q >= m)
      return 1;
  }
}

/* ---- callback recorders ---------------------------------------------------------------- */

void fx_rec_init(fx_rec_t *r) {
  atomic_init(&r->calls, 0);
  atomic_init(&r->status, 1);
  atomic_init(&r->lock, NULL);
  atomic_init(&r->thread_set, 0);
  atomic_init(&r->other_thread, 0);
}

static void rec_note(fx_rec_t *r, int status, redlock_lock_t *lock) {
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

void fx_rec_lock_cb(int status, redlock_lock_t *lock, void *arg) { rec_note(arg, status, lock); }

void fx_rec_done_cb(int status, void *arg) { rec_note(arg, status, NULL); }

int fx_rec_called(void *arg) { return atomic_load(&((fx_rec_t *)arg)->calls) > 0; }

int fx_rec_wait(fx_rec_t *r, int timeout_ms) { return rh_wait_until(fx_rec_called, r, timeout_ms); }

void fx_lost_init(fx_lost_t *r) {
  atomic_init(&r->calls, 0);
  atomic_init(&r->reason, 0);
  atomic_init(&r->lock, NULL);
}

void fx_lost_cb(redlock_lock_t *lock, int reason, void *arg) {
  fx_lost_t *r = arg;
  atomic_store(&r->lock, lock);
  atomic_store(&r->reason, reason);
  atomic_fetch_add(&r->calls, 1);
}

/* The recorder's calls reached the count fx_lost_wait awaits. */
static int lost_enough(void *arg) {
  fx_lost_t *r = arg;
  return atomic_load(&r->calls) >= r->awaited;
}

int fx_lost_wait(fx_lost_t *r, int calls, int timeout_ms) {
  r->awaited = calls;
  return rh_wait_until(lost_enough, r, timeout_ms);
}
