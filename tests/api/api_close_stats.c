/* api_close_stats.c: redlock_stats racing the close, against N = 3 real
 * masters, on a redlock_open client (redlock_close from the owning thread)
 * and on a redlock_open_uv client (redlock_close_uv from the owning thread,
 * which runs the loop).
 *
 * Two threads call redlock_stats while the owner closes the client:
 *  - the looper calls it in a loop, JSON then Prometheus, until a call
 *    returns REDLOCK_ECLOSED (it makes no call after that one);
 *  - the paused thread's call is held inside redlock_stats, after it has
 *    entered the client, until the looper has stopped: it started before the
 *    close began, and is still in progress while the close runs.  The hold is
 *    this executable's own clock_gettime (below: the static library's
 *    calls bind to it), armed for one call of that thread.
 *
 * Every call is legal by the contract (include/redlock.h, docs/api.md): each
 * starts before the close began, or while a call in progress still holds
 * the close open (the paused call is released only after the looper's last
 * call returned).  Asserts, per that contract:
 *  - a call made once the close has begun returns REDLOCK_ECLOSED;
 *  - the call in progress renders the whole text (it entered before the
 *    close began), and the close waits for it: redlock_close does not return
 *    (the closed callback does not run) while the call is held, however
 *    long (HOLD_MS), and only after it went on;
 *  - under ThreadSanitizer (REDLOCK_SANITIZE=thread) no race is reported
 *    between the rendering and the client's free (stats_free, the nodes'
 *    addresses, the fork guard): a redlock_stats that took no lock would
 *    let the close free the client under the paused call. */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "fixture.h"
#include "redlock_uv.h"

#define BUF_SIZE (256 * 1024)
#define MIN_RENDERS 20
/* How long the paused call stays in after the looper stopped, when the close
 * does not finish first (it must not: it waits for the call). */
#define HOLD_MS 300

typedef struct {
  redlock_t *client;
  int format;                         /* of the paused call */
  atomic_int renders;                 /* the looper's full renderings, both formats */
  atomic_int inside;                  /* the paused call is held inside redlock_stats */
  atomic_int looper_done;             /* the looper made its last call */
  atomic_int closed;                  /* redlock_close returned / the closed callback ran */
  int looper_rc_json, looper_rc_prom; /* the looper's last results */
  int looper_in_time;                 /* it stopped while the paused call held */
  int closed_while_held;              /* the close finished under the paused call */
  int paused_rc;
  int paused_text_ok;         /* the paused call wrote a whole rendering */
  uint64_t released_ms;       /* when the hold let the paused call go on */
  _Atomic uint64_t closed_ms; /* when the close finished (closed set) */
  uint64_t close_started_ms;
  uv_timer_t poll; /* open_uv: closes once both threads are under way */
} race_t;

/* ---- the hold: this executable's clock_gettime ----------------------------------- */

/* The executable defines clock_gettime, so the calls of the library linked
 * into it (and of the shared libraries it loads) bind to this one, with no
 * linker option; it reads the clock with the system call itself.  Every
 * call but the armed one goes straight through. */
int clock_gettime(clockid_t id, struct timespec *ts);

/* Armed by the paused thread for its next clock_gettime: the one redlock_stats
 * makes for its rendering, once it has entered the client. */
static _Thread_local race_t *hold_next_clock;

static int pred_looper_done(void *arg) { return atomic_load(&((race_t *)arg)->looper_done); }
static int pred_closed(void *arg) { return atomic_load(&((race_t *)arg)->closed); }

int clock_gettime(clockid_t id, struct timespec *ts) {
  race_t *r = hold_next_clock;
  if (r != NULL) {
    hold_next_clock = NULL; /* the waits below read the clock too */
    atomic_store(&r->inside, 1);
    r->looper_in_time = rh_wait_until(pred_looper_done, r, 10000);
    /* Stay in a while, so that the close reaches the client's free: it
     * must wait for this call. */
    r->closed_while_held = rh_wait_until(pred_closed, r, HOLD_MS);
    r->released_ms = rh_now_ms();
  }
  return (int)syscall(SYS_clock_gettime, id, ts);
}

/* ---- the two threads -------------------------------------------------------------- */

static int text_ok(int format, const char *buf, int rc) {
  if (rc <= 0 || rc >= BUF_SIZE || (size_t)rc != strlen(buf))
    return 0;
  if (format == REDLOCK_STATS_JSON)
    return buf[0] == '{' && strcmp(buf + rc - 2, "}\n") == 0;
  return strncmp(buf, "# HELP redlock_", 14) == 0 && buf[rc - 1] == '\n';
}

static void *looper_main(void *arg) {
  race_t *r = arg;
  char *buf = malloc(BUF_SIZE);
  if (buf == NULL)
    abort();
  for (;;) {
    int rc_json = redlock_stats(r->client, REDLOCK_STATS_JSON, buf, BUF_SIZE);
    int json_ok = rc_json == REDLOCK_ECLOSED || text_ok(REDLOCK_STATS_JSON, buf, rc_json);
    int rc_prom = redlock_stats(r->client, REDLOCK_STATS_PROMETHEUS, buf, BUF_SIZE);
    int prom_ok = rc_prom == REDLOCK_ECLOSED || text_ok(REDLOCK_STATS_PROMETHEUS, buf, rc_prom);
    r->looper_rc_json = rc_json;
    r->looper_rc_prom = rc_prom;
    if (rc_json == REDLOCK_ECLOSED || rc_prom == REDLOCK_ECLOSED || !json_ok || !prom_ok)
      break;
    atomic_fetch_add(&r->renders, 1);
    /* Only where the close does not answer ECLOSED (the library before the
     * fix): the client is gone, stop. */
    if (atomic_load(&r->closed))
      break;
  }
  free(buf);
  atomic_store(&r->looper_done, 1);
  return NULL;
}

static void *paused_main(void *arg) {
  race_t *r = arg;
  char *buf = malloc(BUF_SIZE);
  if (buf == NULL)
    abort();
  hold_next_clock = r;
  r->paused_rc = redlock_stats(r->client, r->format, buf, BUF_SIZE);
  r->paused_text_ok = text_ok(r->format, buf, r->paused_rc);
  free(buf);
  return NULL;
}

static int pred_under_way(void *arg) {
  race_t *r = arg;
  return atomic_load(&r->inside) && atomic_load(&r->renders) >= MIN_RENDERS;
}

static void race_init(race_t *r, redlock_t *client, int format) {
  memset(r, 0, sizeof *r);
  r->client = client;
  r->format = format;
  atomic_init(&r->renders, 0);
  atomic_init(&r->inside, 0);
  atomic_init(&r->looper_done, 0);
  atomic_init(&r->closed, 0);
  r->paused_rc = r->looper_rc_json = r->looper_rc_prom = -100;
  atomic_init(&r->closed_ms, 0);
}

static void race_start(race_t *r, pthread_t *looper, pthread_t *paused) {
  assert_int_equal(pthread_create(looper, NULL, looper_main, r), 0);
  assert_int_equal(pthread_create(paused, NULL, paused_main, r), 0);
}

static void race_check(const race_t *r) {
  fprintf(stderr,
          "renders %d, looper's last json=%d prom=%d, paused call %d, close took %llu ms "
          "(%lld ms after the paused call went on)\n",
          atomic_load(&r->renders), r->looper_rc_json, r->looper_rc_prom, r->paused_rc,
          (unsigned long long)(atomic_load(&r->closed_ms) - r->close_started_ms),
          (long long)(atomic_load(&r->closed_ms) - r->released_ms));
  assert_true(atomic_load(&r->inside));
  assert_true(atomic_load(&r->renders) >= MIN_RENDERS);
  /* The looper stopped on ECLOSED (the first call it made once the close
   * had begun), while the close was still held open by the paused call. */
  assert_true(r->looper_rc_json == REDLOCK_ECLOSED || r->looper_rc_prom == REDLOCK_ECLOSED);
  assert_true(r->looper_in_time);
  /* The paused call entered before the close began: it renders in full, and
   * the close waited for it. */
  assert_true(r->paused_text_ok);
  assert_false(r->closed_while_held);
  assert_true(atomic_load(&r->closed_ms) >= r->released_ms);
}

/* ---- redlock_open: redlock_close from the owning thread -------------------------- */

static void stats_racing_close(int format) {
  redlock_t *client = fx_client(fx_group, 0, 10, 10);
  race_t r;
  race_init(&r, client, format);
  pthread_t looper, paused;
  race_start(&r, &looper, &paused);
  assert_true(rh_wait_until(pred_under_way, &r, 10000));
  r.close_started_ms = rh_now_ms();
  fx_close_client(fx_group, client);
  atomic_store(&r.closed_ms, rh_now_ms());
  atomic_store(&r.closed, 1);
  assert_int_equal(pthread_join(paused, NULL), 0);
  assert_int_equal(pthread_join(looper, NULL), 0);
  race_check(&r);
}

static void test_stats_racing_close_json(void **state) {
  (void)state;
  stats_racing_close(REDLOCK_STATS_JSON);
}

static void test_stats_racing_close_prometheus(void **state) {
  (void)state;
  stats_racing_close(REDLOCK_STATS_PROMETHEUS);
}

/* ---- redlock_open_uv: redlock_close_uv from the owning thread (the loop's) ------- */

static void uv_closed_cb(void *arg) {
  race_t *r = arg;
  atomic_store(&r->closed_ms, rh_now_ms());
  atomic_store(&r->closed, 1);
}

static void poll_cb(uv_timer_t *timer) {
  race_t *r = timer->data;
  if (!pred_under_way(r) && rh_now_ms() - r->close_started_ms < 10000)
    return;
  uv_close((uv_handle_t *)timer, NULL);
  r->close_started_ms = rh_now_ms();
  redlock_close_uv(r->client, uv_closed_cb, r);
}

static void stats_racing_close_uv(int format) {
  uv_loop_t loop;
  redlock_t *client = fx_open_uv(fx_options_retry(fx_group, 0, FX_NO_LOG, 0, 10, 10), &loop);
  race_t r;
  race_init(&r, client, format);
  r.close_started_ms = rh_now_ms(); /* until the close: when the poll began */
  uv_timer_init(&loop, &r.poll);
  r.poll.data = &r;
  uv_timer_start(&r.poll, poll_cb, 1, 1);
  pthread_t looper, paused;
  race_start(&r, &looper, &paused);
  /* Runs until the client is closed and freed (the closed callback ran). */
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(pthread_join(paused, NULL), 0);
  assert_int_equal(pthread_join(looper, NULL), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
  race_check(&r);
}

static void test_stats_racing_close_uv_json(void **state) {
  (void)state;
  stats_racing_close_uv(REDLOCK_STATS_JSON);
}

static void test_stats_racing_close_uv_prometheus(void **state) {
  (void)state;
  stats_racing_close_uv(REDLOCK_STATS_PROMETHEUS);
}

FX_GROUP_MAIN(120, fx_group_test(test_stats_racing_close_json),
              fx_group_test(test_stats_racing_close_prometheus),
              fx_group_test(test_stats_racing_close_uv_json),
              fx_group_test(test_stats_racing_close_uv_prometheus))
