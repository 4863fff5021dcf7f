/* bench_modes.c: the workloads of redlock-bench and their measured
 * window: the async engine (throughput, slow-node, latency --api async),
 * --ab-stats (two clients in turns), blocking calls (latency) and
 * contention (threads on one resource).  Figures go to the bench_t; the
 * report is bench_report.c's. */
#define _GNU_SOURCE /* nanosleep, getrusage under -std=c11 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

atomic_int interrupted;

/* ---- time, CPU -------------------------------------------------------------------- */

uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_s(double seconds) {
  uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
  while (!atomic_load(&interrupted)) {
    uint64_t now = now_ns();
    if (now >= end)
      break;
    uint64_t left = end - now;
    if (left > 20000000u)
      left = 20000000u;
    struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
    nanosleep(&ts, NULL);
  }
}

void sleep_ms(uint32_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

uint64_t self_cpu_us(void) { return self_usage().cpu_us; }

usage_t self_usage(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  uint64_t sys_us = (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
  usage_t u = {(uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec + sys_us,
               (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw, sys_us};
  return u;
}

/* utime + stime of a process in µs, from /proc/PID/stat; -1 if unreadable. */
static int64_t proc_cpu_us(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* comm may contain spaces */
  if (p == NULL)
    return -1;
  /* After ") " come fields 3 (state) ... 14 (utime), 15 (stime). */
  unsigned long long utime = 0, stime = 0;
  int field = 2;
  for (char *tok = strtok(p + 1, " "); tok != NULL; tok = strtok(NULL, " ")) {
    field++;
    if (field == 14)
      utime = strtoull(tok, NULL, 10);
    else if (field == 15) {
      stime = strtoull(tok, NULL, 10);
      break;
    }
  }
  if (field < 15)
    return -1;
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0)
    hz = 100;
  return (int64_t)((utime + stime) * 1000000ull / (unsigned long long)hz);
}

/* Sum over the servers; -1 when any is unreadable. */
static int64_t servers_cpu_us(const config_t *c) {
  int64_t sum = 0;
  for (int i = 0; i < c->n_pids; i++) {
    int64_t v = proc_cpu_us(c->pids[i]);
    if (v < 0)
      return -1;
    sum += v;
  }
  return c->n_pids > 0 ? sum : -1;
}
void begin_window(bench_t *b) {
  b->srv0 = servers_cpu_us(b->cfg);
  usage_t u = self_usage();
  b->cpu0 = u.cpu_us;
  b->sys0 = u.sys_us;
  b->switches0 = u.switches;
  b->t0 = now_ns();
  atomic_store(&b->phase, PHASE_MEASURE);
  if (b->cfg->log_level < REDLOCK_LOG_WARN)
    fprintf(stderr, "[bench   %8.3f] measuring\n", (double)(b->t0 - log_epoch_ns) / 1e9);
}

void end_window(bench_t *b) {
  atomic_store(&b->phase, PHASE_STOP);
  b->t1 = now_ns();
  usage_t u = self_usage();
  b->cpu1 = u.cpu_us;
  b->sys1 = u.sys_us;
  b->switches1 = u.switches;
  b->srv1 = servers_cpu_us(b->cfg);
  if (b->cfg->log_level < REDLOCK_LOG_WARN)
    fprintf(stderr, "[bench   %8.3f] stopping\n", (double)(b->t1 - log_epoch_ns) / 1e9);
}

/* ---- async engine (throughput, latency --api async, slow-node) ------------------- */

static void slot_retire(slot_t *s) { atomic_fetch_sub(&s->b->active, 1); }

/* Whether another cycle may start: always, unless --cycles N handed out
 * all N. */
static int cycle_ticket(bench_t *b) {
  unsigned long limit = b->cfg->cycles_limit;
  return limit == 0 || atomic_fetch_add_explicit(&b->started, 1, memory_order_relaxed) < limit;
}

static void cycle_next(slot_t *s) {
  if (atomic_load_explicit(&s->b->phase, memory_order_relaxed) == PHASE_STOP || !cycle_ticket(s->b))
    slot_retire(s);
  else
    async_cycle_start(s);
}

static void on_unlocked(int status, void *arg) {
  slot_t *s = arg;
  bench_t *b = s->b;
  uint64_t now = now_ns();
  if (atomic_load_explicit(&b->phase, memory_order_relaxed) == PHASE_MEASURE) {
    if (status != REDLOCK_OK)
      errors_add(&b->unlock_errors, status);
    samples_add(&b->acquire, s->t_acquired - s->t_start);
    samples_add(&b->cycle, now - s->t_start);
    atomic_fetch_add_explicit(&b->cycles, 1, memory_order_relaxed);
  }
  cycle_next(s);
}

static void on_locked(int status, redlock_lock_t *lock, void *arg) {
  slot_t *s = arg;
  bench_t *b = s->b;
  s->t_acquired = now_ns();
  if (status != REDLOCK_OK) {
    if (atomic_load_explicit(&b->phase, memory_order_relaxed) == PHASE_MEASURE)
      errors_add(&b->lock_errors, status);
    cycle_next(s);
    return;
  }
  int rc = redlock_unlock_async(b->client, lock, on_unlocked, s);
  if (rc != REDLOCK_OK) {
    errors_add(&b->unlock_errors, rc);
    fprintf(stderr, "redlock-bench: redlock_unlock_async: %s\n", redlock_err_name(rc));
    slot_retire(s);
  }
}

/* --resources R: the slot's next name (i, i + C, i + 2C, ... < R). */
static void next_resource(slot_t *s, const config_t *c) {
  long k = (long)s->index + (long)c->concurrency * (long)s->turn;
  if (k >= c->resources) {
    s->turn = 0;
    k = s->index;
  }
  s->turn++;
  snprintf(s->resource, sizeof s->resource, "bench:%s:%ld", s->b->run_id, k);
}

void async_cycle_start(slot_t *s) {
  bench_t *b = s->b;
  const config_t *c = b->cfg;
  if (c->resources > c->concurrency)
    next_resource(s, c);
  s->t_start = now_ns();
  int rc;
  switch (c->primitive) {
  case PRIMITIVE_SEMAPHORE:
    rc = redlock_semaphore_acquire_async(b->client, s->resource, c->sem_limit, c->ttl_ms, 0,
                                         on_locked, s);
    break;
  case PRIMITIVE_READ:
    rc = redlock_rwlock_read_async(b->client, s->resource, c->ttl_ms, 0, on_locked, s);
    break;
  case PRIMITIVE_WRITE:
    rc = redlock_rwlock_write_async(b->client, s->resource, c->ttl_ms, 0, on_locked, s);
    break;
  case PRIMITIVE_LOCK:
  default:
    rc = redlock_lock_async(b->client, s->resource, c->ttl_ms, 0, on_locked, s);
    break;
  }
  if (rc != REDLOCK_OK) {
    errors_add(&b->lock_errors, rc);
    fprintf(stderr, "redlock-bench: acquire (%s): %s\n", primitive_names[c->primitive],
            redlock_err_name(rc));
    slot_retire(s);
  }
}

void async_wait_drained(bench_t *b) {
  /* The cycles in flight finish within their retries. */
  uint64_t limit = now_ns() + 30ull * 1000000000u;
  while (atomic_load(&b->active) > 0 && now_ns() < limit)
    sleep_ms(1);
  int left = atomic_load(&b->active);
  if (left > 0) {
    b->hung = left;
    fprintf(stderr, "redlock-bench: %d cycles still unfinished 30 s after the end\n", left);
  }
}

int run_async(bench_t *b) {
  config_t *c = b->cfg;
  int n = c->concurrency;
  slot_t *slots = calloc((size_t)n, sizeof *slots);
  if (slots == NULL)
    return -1;
  b->slots = slots;
  atomic_store(&b->active, n);
  for (int i = 0; i < n; i++) {
    slots[i].b = b;
    slots[i].index = i;
    snprintf(slots[i].resource, sizeof slots[i].resource, "bench:%s:%d", b->run_id, i);
  }
  if (c->cycles_limit > 0) {
    /* A fixed amount of work: the window spans the whole run, which ends
     * when the last slot has found no ticket left.  The wait polls rarely,
     * so that its own instructions stay few under callgrind. */
    begin_window(b);
    for (int i = 0; i < n; i++) {
      if (cycle_ticket(b))
        async_cycle_start(&slots[i]);
      else
        slot_retire(&slots[i]);
    }
    while (atomic_load(&b->active) > 0 && !atomic_load(&interrupted))
      sleep_ms(20);
    end_window(b);
    async_wait_drained(b);
    return 0;
  }
  for (int i = 0; i < n; i++)
    async_cycle_start(&slots[i]);
  sleep_s(c->warmup_s);
  begin_window(b);
  sleep_s(c->duration_s);
  end_window(b);
  async_wait_drained(b);
  /* redlock_close (by the caller) cancels what is left and joins the loop
   * thread; only then are the slots unreachable. */
  return 0;
}

/* ---- --ab-stats / --ab-node: two clients compared in one run ------------------------
 * Two clients, one with stats (A) and one without (B) on the same masters,
 * or (--ab-node) one on --node's masters (A) and one on --ab-node's (B),
 * take turns driving the async engine in short segments ordered ABBA ABBA...,
 * so that a shared machine whose load drifts weighs on both alike: a ratio
 * from one run is worth more than the medians of separate runs here.  Each
 * segment ramps up for 0.1 s, is measured for AB_SEGMENT_S, then drains. */
int ab_per_side(double duration_s) {
  int n = (int)(duration_s / AB_SEGMENT_S + 0.999);
  return n < 2 ? 2 : n > AB_MAX_SEGMENTS / 2 ? AB_MAX_SEGMENTS / 2 : n;
}

int ab_side(int s) { return (s % 4 == 0 || s % 4 == 3) ? 0 : 1; }

double ab_pair_median(const double *seg_rate, const int *seg_side, int segments) {
  double ratios[AB_MAX_SEGMENTS / 2];
  int n = 0;
  for (int k = 0; k + 1 < segments; k += 2) {
    double a = seg_side[k] == 0 ? seg_rate[k] : seg_rate[k + 1];
    double b = seg_side[k] == 0 ? seg_rate[k + 1] : seg_rate[k];
    if (a > 0)
      ratios[n++] = b / a;
  }
  return median_double(ratios, (size_t)n);
}

void ab_rates(const ab_acc_t acc[2], double rate[2], double cpu[2]) {
  for (int k = 0; k < 2; k++) {
    rate[k] = acc[k].ns > 0 ? (double)acc[k].cycles / ((double)acc[k].ns / 1e9) : 0;
    cpu[k] = acc[k].cycles > 0 ? (double)acc[k].cpu_us / (double)acc[k].cycles : 0;
  }
}

int run_ab(bench_t *b, redlock_t *off) {
  config_t *c = b->cfg;
  redlock_t *clients[2] = {b->client, off};
  int n = c->concurrency;
  slot_t *slots = calloc((size_t)n, sizeof *slots);
  if (slots == NULL)
    return -1;
  b->slots = slots;
  for (int i = 0; i < n; i++) {
    slots[i].b = b;
    slots[i].index = i;
    snprintf(slots[i].resource, sizeof slots[i].resource, "bench:%s:%d", b->run_id, i);
  }
  int per_side = ab_per_side(c->duration_s);
  int segments = 2 * per_side;
  ab_acc_t acc[2];
  memset(acc, 0, sizeof acc);
  double seg_rate[AB_MAX_SEGMENTS], seg_cpu[AB_MAX_SEGMENTS];
  int seg_side[AB_MAX_SEGMENTS];
  /* Warm-up: each client once. */
  for (int w = -2; w < segments && !atomic_load(&interrupted); w++) {
    int side = w < 0 ? w + 2 : ab_side(w);
    b->client = clients[side];
    atomic_store(&b->phase, PHASE_WARMUP);
    atomic_store(&b->active, n);
    for (int i = 0; i < n; i++)
      async_cycle_start(&slots[i]);
    sleep_s(w < 0 ? c->warmup_s / 2 : AB_RAMP_S);
    unsigned long cycles0 = atomic_load(&b->cycles);
    uint64_t cpu0 = self_cpu_us(), t0 = now_ns();
    atomic_store(&b->phase, w < 0 ? PHASE_WARMUP : PHASE_MEASURE);
    sleep_s(w < 0 ? 0 : AB_SEGMENT_S);
    atomic_store(&b->phase, PHASE_STOP);
    uint64_t t1 = now_ns(), cpu1 = self_cpu_us();
    unsigned long cycles1 = atomic_load(&b->cycles);
    async_wait_drained(b);
    if (b->hung > 0)
      return 0;
    if (w < 0)
      continue;
    acc[side].cycles += cycles1 - cycles0;
    acc[side].ns += t1 - t0;
    acc[side].cpu_us += cpu1 - cpu0;
    seg_rate[w] = (double)(cycles1 - cycles0) / ((double)(t1 - t0) / 1e9);
    seg_cpu[w] = cycles1 > cycles0 ? (double)(cpu1 - cpu0) / (double)(cycles1 - cycles0) : 0;
    seg_side[w] = side;
  }
  b->client = clients[0];
  /* Per pair of neighbouring segments (one of each side): side 1 / side 0. */
  ab_result_t r = {.per_side = per_side,
                   .segment_s = AB_SEGMENT_S,
                   .pair_median = ab_pair_median(seg_rate, seg_side, segments),
                   .cpu_pair_median = ab_pair_median(seg_cpu, seg_side, segments),
                   .errors = errors_total(&b->lock_errors) + errors_total(&b->unlock_errors)};
  ab_rates(acc, r.rate, r.cpu);
  report_ab(b, &r);
  return 0;
}

/* ---- latency mode: blocking calls ----------------------------------------------------- */

int run_blocking(bench_t *b) {
  config_t *c = b->cfg;
  char resource[64];
  snprintf(resource, sizeof resource, "bench:%s:0", b->run_id);
  uint64_t warm_end = now_ns() + (uint64_t)(c->warmup_s * 1e9);
  uint64_t end = 0;
  int measuring = 0;
  while (!atomic_load(&interrupted)) {
    uint64_t t = now_ns();
    if (!measuring && t >= warm_end) {
      begin_window(b);
      end = b->t0 + (uint64_t)(c->duration_s * 1e9);
      measuring = 1;
    }
    if (measuring && t >= end)
      break;
    if (blocking_cycle(b, resource, measuring) == REDLOCK_OK && measuring)
      atomic_fetch_add(&b->cycles, 1);
  }
  if (!measuring)
    begin_window(b);
  end_window(b);
  return 0;
}

/* ---- contention mode ------------------------------------------------------------------
 * Grants are numbered in order under a mutex (the lock is exclusive, so the
 * holder numbers its grant before anyone else can be granted); hand-off k is
 * grant[k] - release[k-1], computed after the run. */

typedef struct {
  bench_t *b;
  pthread_t thread;
  char resource[64];
  unsigned long acquisitions; /* in the window */
  unsigned long giveups;
} worker_t;

static pthread_mutex_t grant_mutex = PTHREAD_MUTEX_INITIALIZER;
static size_t grant_seq, grant_cap;
static uint64_t *grant_ts, *release_start_ts, *release_ts;
static uint8_t *grant_measured;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  bench_t *b = w->b;
  config_t *c = b->cfg;
  while (atomic_load(&b->phase) != PHASE_STOP && !atomic_load(&interrupted)) {
    redlock_lock_t *lock = NULL;
    uint64_t t_call = now_ns();
    int rc = redlock_lock_wait(b->client, w->resource, c->ttl_ms, c->wait_ms, &lock);
    uint64_t t_grant = now_ns();
    int measuring = atomic_load(&b->phase) == PHASE_MEASURE;
    if (rc == REDLOCK_ETIMEDOUT) {
      if (measuring)
        w->giveups++;
      continue;
    }
    if (rc != REDLOCK_OK) {
      if (measuring)
        errors_add(&b->lock_errors, rc);
      sleep_ms(1); /* no busy loop when the masters are gone */
      continue;
    }
    pthread_mutex_lock(&grant_mutex);
    size_t k = grant_seq++;
    pthread_mutex_unlock(&grant_mutex);
    if (k < grant_cap) {
      grant_ts[k] = t_grant;
      grant_measured[k] = (uint8_t)measuring;
    }
    if (c->hold_ms > 0)
      sleep_ms(c->hold_ms); /* the workload */
    uint64_t t_rs = now_ns();
    rc = redlock_unlock(b->client, lock);
    uint64_t t_re = now_ns();
    if (k < grant_cap) {
      release_start_ts[k] = t_rs;
      release_ts[k] = t_re;
    }
    if (measuring) {
      if (rc != REDLOCK_OK)
        errors_add(&b->unlock_errors, rc);
      w->acquisitions++;
      atomic_fetch_add(&b->cycles, 1);
      samples_add(&b->acquire, t_grant - t_call);
      samples_add(&b->cycle, t_re - t_call);
    }
  }
  return NULL;
}

int run_contention(bench_t *b) {
  config_t *c = b->cfg;
  int k = c->workers;
  worker_t *workers = calloc((size_t)k, sizeof *workers);
  grant_cap = b->acquire.cap + 1024;
  grant_ts = calloc(grant_cap, sizeof *grant_ts);
  release_start_ts = calloc(grant_cap, sizeof *release_start_ts);
  release_ts = calloc(grant_cap, sizeof *release_ts);
  grant_measured = calloc(grant_cap, 1);
  if (workers == NULL || grant_ts == NULL || release_start_ts == NULL || release_ts == NULL ||
      grant_measured == NULL)
    return -1;
  int started = 0;
  for (int i = 0; i < k; i++) {
    workers[i].b = b;
    snprintf(workers[i].resource, sizeof workers[i].resource, "bench:%s:contended", b->run_id);
    if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0)
      break;
    started++;
  }
  sleep_s(c->warmup_s);
  begin_window(b);
  sleep_s(c->duration_s);
  end_window(b);
  for (int i = 0; i < started; i++)
    pthread_join(workers[i].thread, NULL);
  if (started < k)
    fprintf(stderr, "redlock-bench: only %d of %d workers started\n", started, k);

  unsigned long mn = ULONG_MAX, mx = 0;
  for (int i = 0; i < started; i++) {
    b->giveups += workers[i].giveups;
    if (workers[i].acquisitions < mn)
      mn = workers[i].acquisitions;
    if (workers[i].acquisitions > mx)
      mx = workers[i].acquisitions;
  }
  b->per_worker_min = started > 0 ? mn : 0;
  b->per_worker_max = mx;
  size_t n = grant_seq < grant_cap ? grant_seq : grant_cap;
  for (size_t i = 1; i < n; i++) {
    if (!grant_measured[i] || !grant_measured[i - 1] || release_ts[i - 1] == 0)
      continue;
    int64_t h = (int64_t)(grant_ts[i] - release_ts[i - 1]);
    if (h < 0) {
      b->handoff_negative++; /* granted before the previous unlock call returned */
      h = 0;
    }
    samples_add(&b->handoff, (uint64_t)h);
    samples_add(&b->handoff_start, grant_ts[i] - release_start_ts[i - 1]);
  }
  free(workers);
  free(grant_ts);
  free(release_start_ts);
  free(release_ts);
  free(grant_measured);
  return 0;
}
