/* api_watch.c: redlock_watch (automatic extension) against N = 3 real masters.
 *
 * Asserts:
 *  - a watched lock with ttl 900 ms stays valid for 4 x ttl: polled every
 *    millisecond (rh_wait_until), redlock_lock_validity_ms() stays > 0, the
 *    handle is not lost, and a quorum of masters holds the key with our value
 *    and PTTL > 0 at every poll; the lost callback does not run;
 *  - when every master is killed, the lost callback runs exactly once, with
 *    REDLOCK_ELOST and the lock's handle, within ttl + margin; the handle then
 *    reports lost; unlock still frees it (ENOQUORUM: nobody answers);
 *  - unlock stops the watch: once unlocked, no more EVALSHA (extension)
 *    reaches the masters over 3 x ttl, the key stays gone and the lost
 *    callback never runs.
 */
#include "fixture.h"

/* Long enough that a starved machine (two tests per core beside a benchmark)
 * does not outlast the third of it the watch leaves for its extension
 * (quorum_watch_delay_ms): 100 ms did, once. */
#define TTL 900u

/* The library's warnings (failed extensions, ...) with a timestamp, so that a
 * failure here can be told apart from a starved machine. */
static void log_cb(int level, const char *msg, void *arg) {
  (void)arg;
  fprintf(stderr, "  [%llu ms] redlock %d: %s\n", (unsigned long long)rh_now_ms(), level, msg);
}

static redlock_t *open_watch_client(void) {
  redlock_options_t *opts = fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10);
  assert_int_equal(redlock_options_set_log(opts, REDLOCK_LOG_WARN, log_cb, NULL), REDLOCK_OK);
  return fx_open_free(fx_group, opts);
}

/* Polled by rh_wait_until: true once `duration_ms` passed; meanwhile counts
 * every poll where the lock looked invalid locally (validity <= 0 or lost) or
 * was not held on a quorum of masters (key with our value and PTTL > 0).  A
 * quorum, not every master: the lock is only ever promised on a quorum, and
 * on a loaded machine one master may miss an extension. */
typedef struct {
  redlock_lock_t *lock;
  const char *key;
  uint64_t start_ms, duration_ms;
  unsigned polls, bad_validity, bad_quorum;
  int64_t min_validity;
  size_t min_holding;
} keepalive_t;

static int pred_kept_alive(void *arg) {
  keepalive_t *k = arg;
  unsigned bad = k->bad_validity + k->bad_quorum;
  int64_t v = redlock_lock_validity_ms(k->lock);
  if (v < k->min_validity)
    k->min_validity = v;
  if (v <= 0 || redlock_lock_is_lost(k->lock))
    k->bad_validity++;
  size_t holding = 0;
  long long pttl[FX_MAX_SERVERS];
  for (size_t i = 0; i < fx_group->n; i++) {
    char buf[128];
    pttl[i] = fx_pttl_try(fx_group->servers[i], k->key);
    if (pttl[i] > 0 &&
        rh_server_command(fx_group->servers[i], buf, sizeof buf, "GET %s", k->key) == 0 &&
        strcmp(buf, redlock_lock_value(k->lock)) == 0)
      holding++;
  }
  if (holding < k->min_holding)
    k->min_holding = holding;
  if (holding < fx_group->n / 2 + 1)
    k->bad_quorum++;
  if (bad == 0 && k->bad_validity + k->bad_quorum > 0)
    fprintf(
        stderr,
        "  first bad poll at +%llu ms: validity %lld, lost %d, held on %zu (pttl %lld %lld %lld)\n",
        (unsigned long long)(rh_now_ms() - k->start_ms), (long long)v,
        redlock_lock_is_lost(k->lock), holding, pttl[0], pttl[1], pttl[2]);
  k->polls++;
  return rh_now_ms() - k->start_ms >= k->duration_ms;
}

static void keep_alive_for(redlock_lock_t *lock, const char *key, uint64_t duration_ms) {
  keepalive_t k = {lock, key, rh_now_ms(), duration_ms, 0, 0, 0, INT64_MAX, SIZE_MAX};
  assert_true(rh_wait_until(pred_kept_alive, &k, (int)duration_ms + 5000));
  printf("  %u polls over %llu ms, min validity %lld ms, min masters holding %zu\n", k.polls,
         (unsigned long long)duration_ms, (long long)k.min_validity, k.min_holding);
  assert_true(k.polls > 0);
  assert_int_equal(k.bad_validity, 0);
  assert_int_equal(k.bad_quorum, 0);
}

/* A watched lock on a fresh resource, its own client, its losses recorded
 * (into a static recorder: it outlives the frame if an assertion fails). */
typedef struct {
  redlock_t *client;
  char res[128];
  redlock_lock_t *lock;
} watched_t;

static void watch_start(watched_t *w, const char *what, fx_lost_t *lost) {
  w->client = open_watch_client();
  fx_name(w->res, sizeof w->res, what);
  fx_lost_init(lost);
  w->lock = NULL;
  assert_int_equal(redlock_trylock(w->client, w->res, TTL, &w->lock), REDLOCK_OK);
  assert_int_equal(redlock_watch(w->client, w->lock, fx_lost_cb, lost), REDLOCK_OK);
}

static void test_watch_keeps_lock(void **state) {
  (void)state;
  static fx_lost_t lost;
  watched_t w;
  watch_start(&w, "watch-keep", &lost);
  keep_alive_for(w.lock, w.res, 4 * TTL);
  assert_int_equal(atomic_load(&lost.calls), 0);
  assert_int_equal(redlock_unlock(w.client, w.lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, w.res);
  fx_close_client(fx_group, w.client);
  assert_int_equal(atomic_load(&lost.calls), 0);
}

static void test_watch_lost_when_masters_die(void **state) {
  (void)state;
  static fx_lost_t lost;
  watched_t w;
  watch_start(&w, "watch-lost", &lost);
  keep_alive_for(w.lock, w.res, TTL + TTL / 2); /* at least one extension went through */

  printf("  killing every master\n");
  for (size_t i = 0; i < fx_group->n; i++)
    assert_int_equal(rh_server_kill(fx_group->servers[i]), 0);
  uint64_t t0 = rh_now_ms();
  /* Validity is at most ttl now: lost by then, plus a margin. */
  assert_true(fx_lost_wait(&lost, 1, (int)TTL + 1500));
  uint64_t took = rh_now_ms() - t0;
  printf("  lost callback %llu ms after the masters were killed\n", (unsigned long long)took);
  assert_int_equal(atomic_load(&lost.reason), REDLOCK_ELOST);
  assert_ptr_equal(atomic_load(&lost.lock), w.lock);
  assert_true(redlock_lock_is_lost(w.lock));
  assert_true(redlock_lock_validity_ms(w.lock) <= (int64_t)TTL);
  /* Nobody answers the release, but the handle is freed all the same. */
  printf("  unlocking with every master down\n");
  assert_int_equal(redlock_unlock(w.client, w.lock), REDLOCK_ENOQUORUM);
  printf("  closing\n");
  fx_close_client(fx_group, w.client);
  assert_int_equal(atomic_load(&lost.calls), 1);

  printf("  restarting the masters\n");
  for (size_t i = 0; i < fx_group->n; i++)
    assert_int_equal(rh_server_restart(fx_group->servers[i]), 0);
}

/* EVALSHA calls a master has served so far (INFO commandstats). */
/* How many times s ran cmd (INFO commandstats). */
static long long calls_of(const char *stats, const char *cmd) {
  char needle[64];
  snprintf(needle, sizeof needle, "cmdstat_%s:calls=", cmd);
  const char *p = strstr(stats, needle);
  return p != NULL ? strtoll(p + strlen(needle), NULL, 10) : 0;
}

/* Extensions s ran: EVALSHA of the extend script, or EXEC of the
 * script-free extension (a master with SET IFEQ). */
static long long evalsha_calls(rh_server_t *s) {
  char buf[8192];
  if (rh_server_command(s, buf, sizeof buf, "INFO commandstats") != 0)
    return -1;
  return calls_of(buf, "evalsha") + calls_of(buf, "exec");
}

typedef struct {
  long long base[FX_MAX_SERVERS];
  const char *key;
  fx_lost_t *lost;
} quiet_t;

/* True as soon as anything happens that should not: an EVALSHA reaches a
 * master, the key reappears, or the lost callback runs. */
static int pred_watch_still_active(void *arg) {
  quiet_t *q = arg;
  for (size_t i = 0; i < fx_group->n; i++)
    if (evalsha_calls(fx_group->servers[i]) != q->base[i])
      return 1;
  return fx_count_value(fx_group, fx_group->n, q->key, "(nil)") != fx_group->n ||
         atomic_load(&q->lost->calls) != 0;
}

static void test_unlock_stops_watch(void **state) {
  (void)state;
  redlock_t *client = open_watch_client();
  FX_NAME(res, "watch-stop");
  static fx_lost_t lost; /* static: outlives the frame if an assertion fails */
  fx_lost_init(&lost);
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(client, res, TTL, &lock), REDLOCK_OK);
  long long before = evalsha_calls(fx_group->servers[0]);
  assert_int_equal(redlock_watch(client, lock, fx_lost_cb, &lost), REDLOCK_OK);
  keep_alive_for(lock, res, TTL + TTL / 2);
  /* The watch did extend (EVALSHA of the extend script). */
  assert_true(evalsha_calls(fx_group->servers[0]) > before);

  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
  assert_nil_everywhere(fx_group, res);
  quiet_t q;
  q.key = res;
  q.lost = &lost;
  for (size_t i = 0; i < fx_group->n; i++)
    q.base[i] = evalsha_calls(fx_group->servers[i]);
  /* Observation window of 3 x ttl: no extension, no key, no lost callback. */
  assert_false(rh_wait_until(pred_watch_still_active, &q, 3 * (int)TTL));
  fx_close_client(fx_group, client);
  assert_int_equal(atomic_load(&lost.calls), 0);
}

FX_GROUP_MAIN(120, fx_group_test(test_watch_keeps_lock), fx_group_test(test_unlock_stops_watch),
              fx_group_test(test_watch_lost_when_masters_die))
