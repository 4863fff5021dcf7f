/* demo.c: what ./scripts/demo.sh runs.
 *
 * Starts 5 local Redis masters (real redis-server processes on free loopback
 * ports, children of this program, stopped by PID at the end), then:
 *   1. measures sequential lock+unlock latency with N=1 and with N=5 masters;
 *   2. runs 4 worker threads that take one shared lock over and over and
 *      increment a plain C counter inside the critical section, checking that
 *      no two holders ever overlap, in three phases:
 *        (a) all 5 masters up,
 *        (b) 2 masters killed mid-run: 3 of 5 is still a quorum, locks go on,
 *        (c) a third master killed: no quorum, every lock is refused with
 *            REDLOCK_ENOQUORUM.
 * Exits 0 when everything behaved; 1 if mutual exclusion was violated; 2 if
 * phase (b) or (c) misbehaved; 3 if the demo could not set itself up. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redis_harness.h"
#include "redlock.h"

#define N_MASTERS 5
#define N_WORKERS 4
#define RESOURCE "demo:counter"
#define TTL_MS 1000
#define PHASE_A_MS 5000
#define PHASE_B_MS 5000
#define PHASE_C_MS 2500
#define LATENCY_WARMUP 200
#define LATENCY_ROUNDS 2000
/* Contending workers retry quickly: 1 ms + up to 3 ms of jitter, up to 200
 * times (about half a second) before a lock call gives up. */
#define RETRY_COUNT 200
#define RETRY_DELAY_MS 1
#define RETRY_JITTER_MS 3
#define N_ERRORS 16 /* indexed by -error code */

/* ---- time and samples ---------------------------------------------------------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

typedef struct {
  uint64_t *v; /* nanoseconds */
  size_t n, cap;
} samples_t;

static void samples_push(samples_t *s, uint64_t x) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint64_t *v = realloc(s->v, cap * sizeof *v);
    if (v == NULL)
      return; /* a lost sample only makes the statistics a little poorer */
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = x;
}

static void samples_append(samples_t *dst, const samples_t *src) {
  for (size_t i = 0; i < src->n; i++)
    samples_push(dst, src->v[i]);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Percentile in milliseconds (nearest rank); the samples get sorted. */
static double percentile_ms(samples_t *s, double p) {
  if (s->n == 0)
    return 0.0;
  qsort(s->v, s->n, sizeof *s->v, cmp_u64);
  size_t rank = (size_t)(p / 100.0 * (double)s->n + 0.999999);
  if (rank < 1)
    rank = 1;
  if (rank > s->n)
    rank = s->n;
  return (double)s->v[rank - 1] / 1e6;
}

/* ---- output ---------------------------------------------------------------------- */

static pthread_mutex_t print_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t t_start_ns;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&print_mutex);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
  pthread_mutex_unlock(&print_mutex);
}

static double elapsed_s(void) { return (double)(now_ns() - t_start_ns) / 1e9; }

/* The library's log (WARN and up), from its I/O thread. */
static void log_cb(int level, const char *msg, void *arg) {
  (void)arg;
  static const char *const names[] = {"debug", "info", "warn", "error"};
  say("    [t=%5.2f s] redlock %s: %s\n", elapsed_s(), names[level & 3], msg);
}

/* ---- the workers ------------------------------------------------------------------ */

enum { PHASE_A = 0, PHASE_B, PHASE_C, N_PHASES };

typedef struct {
  long granted;
  long refused[N_ERRORS]; /* lock calls that failed, by -error code */
  long unlock_failed[N_ERRORS];
  samples_t latency; /* lock + unlock of each granted lock */
} phase_stats_t;

typedef struct {
  pthread_t thread;
  unsigned seed;
  phase_stats_t phase[N_PHASES];
  phase_stats_t spanning; /* calls under way when masters were killed mid-run */
} worker_t;

static redlock_t *client;
static atomic_int current_phase;
static atomic_int stop_workers;

/* The shared state the lock protects: a plain variable, no atomics.  Only
 * the distributed lock keeps the workers from losing increments. */
static long counter;
static atomic_int holders;      /* how many workers are inside the critical section */
static atomic_long overlaps;    /* times a worker found someone already inside */
static atomic_long no_validity; /* times a worker found its validity already spent */

static unsigned next_rand(unsigned *seed) {
  *seed = *seed * 1103515245u + 12345u;
  return *seed >> 16;
}

static void spin_us(unsigned us) {
  uint64_t end = now_ns() + (uint64_t)us * 1000u;
  while (now_ns() < end) {
  }
}

static int err_index(int rc) { return rc < 0 && -rc < N_ERRORS ? -rc : 0; }

static void *worker_main(void *arg) {
  worker_t *w = arg;
  while (!atomic_load(&stop_workers)) {
    /* A call belongs to the phase in which it started and ended; a call
     * that retried across a kill goes to a bucket of its own. */
    int started_in = atomic_load(&current_phase);
    uint64_t t0 = now_ns();
    redlock_lock_t *lock;
    int rc = redlock_lock(client, RESOURCE, TTL_MS, &lock);
    phase_stats_t *st =
        atomic_load(&current_phase) == started_in ? &w->phase[started_in] : &w->spanning;
    if (rc != REDLOCK_OK) {
      st->refused[err_index(rc)]++;
      continue;
    }

    /* ---- critical section ---- */
    if (atomic_fetch_add(&holders, 1) != 0)
      atomic_fetch_add(&overlaps, 1);
    if (redlock_lock_validity_ms(lock) <= 0)
      atomic_fetch_add(&no_validity, 1);
    long seen = counter;
    spin_us(20); /* widen the window: a second holder would lose an increment */
    counter = seen + 1;
    atomic_fetch_sub(&holders, 1);
    /* ---- end of critical section ---- */

    rc = redlock_unlock(client, lock); /* frees the handle, whatever it returns */
    uint64_t t1 = now_ns();
    st->granted++;
    if (rc != REDLOCK_OK)
      st->unlock_failed[err_index(rc)]++;
    samples_push(&st->latency, t1 - t0);
    /* Other work, outside the lock, 0-1 ms, so that every worker gets its turn. */
    struct timespec pause = {.tv_sec = 0, .tv_nsec = (long)(next_rand(&w->seed) % 1000) * 1000L};
    nanosleep(&pause, NULL);
  }
  return NULL;
}

/* ---- setup -------------------------------------------------------------------------- */

static redlock_options_t *make_options(rh_server_t **masters, size_t n) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return NULL;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = redlock_options_add_node(opts, rh_server_uri(masters[i]));
  if (rc == 0)
    rc = redlock_options_set_quarantine(opts, 0); /* the masters were just started */
  if (rc == 0)
    rc = redlock_options_set_retry(opts, RETRY_COUNT, RETRY_DELAY_MS, RETRY_JITTER_MS);
  if (rc == 0)
    rc = redlock_options_set_log(opts, REDLOCK_LOG_WARN, log_cb, NULL);
  if (rc != 0) {
    fprintf(stderr, "demo: options: %s\n", redlock_strerror(rc));
    redlock_options_free(opts);
    return NULL;
  }
  return opts;
}

static redlock_t *open_client(rh_server_t **masters, size_t n) {
  redlock_options_t *opts = make_options(masters, n);
  if (opts == NULL)
    return NULL;
  redlock_t *c = NULL;
  int rc = redlock_open(&c, opts);
  redlock_options_free(opts); /* the client keeps its own copy */
  if (rc != REDLOCK_OK) {
    fprintf(stderr, "demo: redlock_open: %s\n", redlock_strerror(rc));
    return NULL;
  }
  return c;
}

/* Sequential lock+unlock from one thread, no contention. */
static int measure_latency(redlock_t *c, const char *resource, samples_t *out) {
  for (int i = 0; i < LATENCY_WARMUP + LATENCY_ROUNDS; i++) {
    uint64_t t0 = now_ns();
    redlock_lock_t *lock;
    int rc = redlock_lock(c, resource, TTL_MS, &lock);
    if (rc == REDLOCK_OK)
      rc = redlock_unlock(c, lock);
    if (rc != REDLOCK_OK) {
      fprintf(stderr, "demo: sequential lock+unlock failed: %s\n", redlock_strerror(rc));
      return -1;
    }
    if (i >= LATENCY_WARMUP)
      samples_push(out, now_ns() - t0);
  }
  return 0;
}

static void kill_master(rh_server_t **masters, int i) {
  pid_t pid = rh_server_pid(masters[i]);
  rh_server_kill(masters[i]);
  say("    [t=%5.2f s] killed master %d (port %d, pid %ld)\n", elapsed_s(), i + 1,
      rh_server_port(masters[i]), (long)pid);
}

static void print_refusals(const long *refused, const char *what) {
  for (int e = 1; e < N_ERRORS; e++)
    if (refused[e] > 0)
      say("        %s: %ld x %s (\"%s\")\n", what, refused[e], redlock_err_name(-e),
          redlock_strerror(-e));
}

static int workers_running;

static int start_workers(worker_t *workers) {
  atomic_store(&stop_workers, 0);
  for (workers_running = 0; workers_running < N_WORKERS; workers_running++) {
    worker_t *w = &workers[workers_running];
    w->seed = (unsigned)(workers_running * 7919 + 17) ^ (unsigned)now_ns();
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
      fprintf(stderr, "demo: pthread_create failed\n");
      return -1;
    }
  }
  return 0;
}

/* Each worker finishes the lock call it is in, then exits. */
static void stop_all_workers(worker_t *workers) {
  atomic_store(&stop_workers, 1);
  for (int i = 0; i < workers_running; i++)
    pthread_join(workers[i].thread, NULL);
  workers_running = 0;
}

/* ---- main ----------------------------------------------------------------------------- */

int main(void) {
  static const char *const phase_names[N_PHASES] = {
      "(a) 5 of 5 masters up", "(b) 3 of 5 up (2 killed)", "(c) 2 of 5 up (3 killed)"};
  rh_server_t *masters[N_MASTERS] = {0};
  worker_t workers[N_WORKERS];
  phase_stats_t sum[N_PHASES];
  samples_t lat1 = {0}, lat5 = {0};
  redlock_t *single = NULL;
  int status = 0;

  setvbuf(stdout, NULL, _IOLBF, 0);
  t_start_ns = now_ns();
  memset(workers, 0, sizeof workers);
  memset(sum, 0, sizeof sum);

  say("redlock-c %s demo: a lock over %d independent Redis masters (quorum %d)\n\n",
      redlock_version(), N_MASTERS, N_MASTERS / 2 + 1);
  /* The server is redis-server, or the one REDLOCK_TEST_SERVER names (as in the tests). */
  say("Starting %d local masters (%s on free 127.0.0.1 ports, no persistence)...\n", N_MASTERS,
      rh_server_name());
  if (rh_cluster_start(masters, N_MASTERS, NULL) != 0) {
    fprintf(stderr,
            "demo: could not start %d %s processes (is it installed? ./scripts/demo.sh "
            "installs redis-server)\n",
            N_MASTERS, rh_server_name());
    return 3;
  }
  for (int i = 0; i < N_MASTERS; i++)
    say("    master %d: %s  (pid %ld)\n", i + 1, rh_server_uri(masters[i]),
        (long)rh_server_pid(masters[i]));
  say("\nRestart quarantine: OFF for this demo.  By default a master that started less than\n"
      "max TTL (60 s) ago does not vote, because it may have lost keys in a restart; these\n"
      "masters were started a moment ago by the demo itself, so the quarantine is turned off\n"
      "explicitly (redlock_options_set_quarantine(opts, 0)).  Keep it on in production.\n\n");

  /* ---- 1. latency, N=1 vs N=5 ---- */
  single = open_client(masters, 1);
  client = open_client(masters, N_MASTERS);
  if (single == NULL || client == NULL) {
    status = 3;
    goto out;
  }
  say("1. Sequential lock+unlock latency: one thread, no contention, %d rounds, ttl %d ms\n",
      LATENCY_ROUNDS, TTL_MS);
  if (measure_latency(single, "demo:latency", &lat1) != 0 ||
      measure_latency(client, "demo:latency", &lat5) != 0) {
    status = 3;
    goto out;
  }
  redlock_close(single);
  single = NULL;
  say("    N=1 master : p50 %.3f ms   p99 %.3f ms\n", percentile_ms(&lat1, 50),
      percentile_ms(&lat1, 99));
  say("    N=5 masters: p50 %.3f ms   p99 %.3f ms\n", percentile_ms(&lat5, 50),
      percentile_ms(&lat5, 99));
  say("    (a lock is one round trip to all masters at once, an unlock another)\n\n");

  /* ---- 2. contending workers, killing masters ---- */
  say("2. %d worker threads share one lock on \"%s\" (ttl %d ms).  Each one: lock, check\n"
      "   that nobody else is inside, increment a plain C counter, unlock, then do 0-1 ms of\n"
      "   other work.  A worker that finds the lock taken retries after 1-4 ms, up to %d times.\n",
      N_WORKERS, RESOURCE, TTL_MS, RETRY_COUNT);
  uint64_t phase_begin[N_PHASES], phase_end[N_PHASES];
  atomic_store(&current_phase, PHASE_A);
  phase_begin[PHASE_A] = now_ns();
  say("    [t=%5.2f s] phase (a): all %d masters up; workers start\n", elapsed_s(), N_MASTERS);
  if (start_workers(workers) != 0) {
    status = 3;
    goto out;
  }
  sleep_ms(PHASE_A_MS);
  kill_master(masters, 0);
  kill_master(masters, 1);
  atomic_store(&current_phase, PHASE_B);
  phase_end[PHASE_A] = phase_begin[PHASE_B] = now_ns();
  say("    [t=%5.2f s] phase (b): 3 of %d masters up, still a quorum; workers carry on\n",
      elapsed_s(), N_MASTERS);
  sleep_ms(PHASE_B_MS);
  stop_all_workers(workers);
  phase_end[PHASE_B] = now_ns();
  say("    [t=%5.2f s] workers stopped\n", elapsed_s());
  kill_master(masters, 2);
  atomic_store(&current_phase, PHASE_C);
  phase_begin[PHASE_C] = now_ns();
  say("    [t=%5.2f s] phase (c): 2 of %d masters up, below the quorum of %d; workers start\n",
      elapsed_s(), N_MASTERS, N_MASTERS / 2 + 1);
  if (start_workers(workers) != 0) {
    status = 3;
    goto out;
  }
  sleep_ms(PHASE_C_MS);
  stop_all_workers(workers);
  phase_end[PHASE_C] = now_ns();
  say("    [t=%5.2f s] workers stopped\n\n", elapsed_s());

  /* One more try from here, to show what a refused lock looks like. */
  redlock_lock_t *lock = NULL;
  int rc = redlock_trylock(client, RESOURCE, TTL_MS, &lock);
  char votes[512];
  redlock_last_votes(client, votes, sizeof votes);
  say("   One more try from the main thread: redlock_trylock(\"%s\")\n", RESOURCE);
  say("     -> %s: %s\n", redlock_err_name(rc), redlock_strerror(rc));
  say("   redlock_last_votes():\n     %s\n", votes);
  say("   (3 masters down leave no quorum, so the round is decided at once: the live masters'\n"
      "   answers are still \"pending\" when it is)\n\n");
  if (rc == REDLOCK_OK)
    redlock_unlock(client, lock);

  /* ---- results ---- */
  say("3. Results (lock+unlock time includes the retries while another worker holds the lock)\n");
  say("   phase                        locks   locks/s   lock+unlock p50      p99\n");
  long total_granted = 0;
  for (int p = 0; p < N_PHASES; p++) {
    for (int i = 0; i < N_WORKERS; i++) {
      const phase_stats_t *st = &workers[i].phase[p];
      sum[p].granted += st->granted;
      for (int e = 0; e < N_ERRORS; e++) {
        sum[p].refused[e] += st->refused[e];
        sum[p].unlock_failed[e] += st->unlock_failed[e];
      }
      samples_append(&sum[p].latency, &st->latency);
    }
    total_granted += sum[p].granted;
    double secs = (double)(phase_end[p] - phase_begin[p]) / 1e9;
    if (sum[p].granted > 0)
      say("   %-26s %7ld %9.0f %13.2f ms %8.2f ms\n", phase_names[p], sum[p].granted,
          (double)sum[p].granted / secs, percentile_ms(&sum[p].latency, 50),
          percentile_ms(&sum[p].latency, 99));
    else
      say("   %-26s %7ld %9.0f %16s %11s\n", phase_names[p], sum[p].granted, 0.0, "-", "-");
    print_refusals(sum[p].refused, "lock refused");
    print_refusals(sum[p].unlock_failed, "unlock returned");
  }

  phase_stats_t span;
  memset(&span, 0, sizeof span);
  long span_refused = 0;
  for (int i = 0; i < N_WORKERS; i++) {
    span.granted += workers[i].spanning.granted;
    for (int e = 0; e < N_ERRORS; e++) {
      span.refused[e] += workers[i].spanning.refused[e];
      span_refused += workers[i].spanning.refused[e];
    }
  }
  total_granted += span.granted;
  if (span.granted + span_refused > 0) {
    say("   %ld lock calls were under way when masters were killed (counted apart):\n"
        "        %ld granted\n",
        span.granted + span_refused, span.granted);
    print_refusals(span.refused, "refused");
  }

  /* ---- verdict ---- */
  long refused_c = 0;
  for (int e = 0; e < N_ERRORS; e++)
    refused_c += sum[PHASE_C].refused[e];
  say("\n   counter = %ld, locks granted = %ld, overlapping holders seen = %ld\n", counter,
      total_granted, (long)atomic_load(&overlaps));
  if (counter != total_granted || atomic_load(&overlaps) != 0) {
    say("FAIL: mutual exclusion was violated\n");
    status = 1;
  } else {
    say("   mutual exclusion held: every increment made under the lock is in the counter\n");
  }
  if (atomic_load(&no_validity) != 0)
    say("   note: %ld times a worker found its lock's validity already spent when it entered the\n"
        "   critical section: the thread was descheduled for longer than the TTL, the limit of\n"
        "   Redlock that docs/algorithm.md describes (fencing tokens are the answer to it)\n",
        (long)atomic_load(&no_validity));
  if (sum[PHASE_A].granted == 0 || sum[PHASE_B].granted == 0) {
    say("FAIL: phase %s granted no locks\n", sum[PHASE_A].granted == 0 ? "(a)" : "(b)");
    status = status ? status : 2;
  }
  if (sum[PHASE_C].granted != 0 || refused_c == 0 ||
      sum[PHASE_C].refused[-REDLOCK_ENOQUORUM] != refused_c || rc != REDLOCK_ENOQUORUM) {
    say("FAIL: phase (c) should refuse every lock with REDLOCK_ENOQUORUM\n");
    status = status ? status : 2;
  }

out:
  stop_all_workers(workers);
  if (single != NULL)
    redlock_close(single);
  if (client != NULL)
    redlock_close(client);
  say("\nStopping the masters (by PID)...\n");
  rh_cluster_free(masters, N_MASTERS);
  for (int p = 0; p < N_PHASES; p++) {
    free(sum[p].latency.v);
    for (int i = 0; i < N_WORKERS; i++)
      free(workers[i].phase[p].latency.v);
  }
  for (int i = 0; i < N_WORKERS; i++)
    free(workers[i].spanning.latency.v);
  free(lat1.v);
  free(lat5.v);
  say("%s (%.1f s)\n", status == 0 ? "Demo OK" : "Demo FAILED", elapsed_s());
  return status;
}
