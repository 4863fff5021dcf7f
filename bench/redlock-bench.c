/* redlock-bench: throughput, latency and contention figures for redlock-c.
 *
 *   redlock-bench [--mode throughput|latency|contention|slow-node]
 *                 [--start N | --node URI ... [--server-pids PID,PID,...]]
 *                 [--tls --tls-certs DIR | --tls-ca PATH ...] [options]
 *
 * By default it starts N redis-server processes itself (tests/support
 * harness, loopback, stopped by PID at the end) and turns the client's
 * restart quarantine off, since every master it talks to has just started.
 * With --node it benchmarks the given masters instead (quarantine stays on
 * unless --no-quarantine).
 *
 * TLS: --tls starts the masters TLS-only (--port 0 --tls-port P) with the
 * server certificate of --tls-certs DIR (the layout tests/tls/make_certs.sh
 * writes: ca.crt, server.crt, server.key) and connects with rediss://,
 * trusting DIR/ca.crt.  --tls-ca/--tls-cert/--tls-key/--tls-server-name/
 * --tls-insecure set the client's TLS options (for rediss:// --node masters,
 * or to override those defaults).  bench/tls-vs-plain.sh runs plain and TLS
 * side by side.
 *
 * Modes:
 *   throughput  --concurrency C cycles in flight on the async API: each slot
 *               loops redlock_lock_async(wait 0) -> redlock_unlock_async on
 *               its own resource "bench:<run>:<slot>".
 *   latency     one cycle at a time (blocking redlock_lock / redlock_unlock,
 *               or the async chain with --api async).
 *   contention  --workers K threads on ONE resource, each looping
 *               redlock_lock_wait -> hold --hold-ms -> redlock_unlock.
 *   slow-node   as latency (or --concurrency C) with master 0 reached through
 *               the fault proxy, which delays it by --delay-ms.
 * --primitive semaphore|read|write makes the async engine's cycles acquire a
 * semaphore permit (--limit L) or a read / write hold instead of a lock, one
 * semaphore or read-write lock per slot (uncontended, like the locks).
 *
 * Figures are taken over --duration seconds after --warmup seconds: cycles/s,
 * acquire and full-cycle latency percentiles (CLOCK_MONOTONIC, samples in
 * preallocated arrays), client CPU per cycle (getrusage(RUSAGE_SELF) delta)
 * and the servers' CPU per cycle (/proc/PID/stat utime + stime). */
#define _GNU_SOURCE /* nanosleep, sigaction, getrusage under -std=c11 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "redis_harness.h"
#include "redlock.h"
#ifdef REDLOCK_BENCH_FAULT_PROXY
#include "fault_proxy.h"
#endif

#define MAX_NODES 16
#define MAX_PIDS 64
#define MAX_CONCURRENCY 65536
#define MAX_WORKERS 1024
#define N_CODES 16 /* -REDLOCK_E* codes are 1..11 */

/* ---- options -------------------------------------------------------------------- */

typedef enum { MODE_THROUGHPUT, MODE_LATENCY, MODE_CONTENTION, MODE_SLOW_NODE } mode_t_;

static const char *const mode_names[] = {"throughput", "latency", "contention", "slow-node"};

/* What the async engine's cycles acquire (coordination primitives: one
 * semaphore or read-write lock per slot, so a cycle is uncontended as for
 * locks, and the figures compare the scripts' cost). */
typedef enum { PRIMITIVE_LOCK, PRIMITIVE_SEMAPHORE, PRIMITIVE_READ, PRIMITIVE_WRITE } primitive_t;
static const char *const primitive_names[] = {"lock", "semaphore", "read", "write"};

typedef struct {
  mode_t_ mode;
  int start_n;             /* servers to start (0 with --node) */
  const char *nodes[MAX_NODES];
  int n_nodes;
  pid_t pids[MAX_PIDS];
  int n_pids;
  int concurrency;         /* -1 = mode default */
  double duration_s;
  double warmup_s;
  uint32_t ttl_ms;
  int workers;
  uint32_t hold_ms;
  uint32_t wait_ms;
  uint32_t delay_ms;
  int api_async;           /* latency mode: async chain instead of blocking calls */
  int retry_set;
  int retry_count;
  uint32_t retry_delay_ms, retry_jitter_ms;
  uint32_t request_timeout_ms, connect_timeout_ms; /* 0 = library default */
  int quarantine;          /* -1 = default for the setup */
  int fencing;
  int no_stats;            /* --no-stats: redlock_options_set_stats(opts, 0) */
  int ab_stats;            /* --ab-stats: stats on vs off, interleaved in one run */
  primitive_t primitive;
  uint32_t sem_limit;
  int json;
  const char *hist_path;
  size_t max_samples;      /* 0 = from the duration */
  int verbose;
  int log_level;
  int tls;                 /* start the masters TLS-only */
  const char *tls_certs;   /* --tls-certs DIR: ca.crt, server.crt, server.key */
  const char *tls_ca, *tls_cert, *tls_key, *tls_server_name;
  int tls_insecure;
} config_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: redlock-bench [options]\n"
          "  --mode M              throughput (default) | latency | contention | slow-node\n"
          "  --start N             start N redis-server processes (default 3; quarantine off)\n"
          "  --node URI            use this master instead (repeat; loopback only)\n"
          "  --server-pids P,P,..  PIDs of those masters, for server CPU per cycle\n"
          "  --no-quarantine       with --node: turn the restart quarantine off\n"
          "  --concurrency C       cycles in flight (throughput: 128, latency/slow-node: 1)\n"
          "  --duration S          measured seconds (default 5)\n"
          "  --warmup S            warm-up seconds before measuring (default 1)\n"
          "  --ttl MS              lock TTL (default 10000)\n"
          "  --workers K           contention: threads on one resource (default 8)\n"
          "  --hold-ms MS          contention: time the lock is held (default 1)\n"
          "  --wait-ms MS          contention: lock_wait budget (default 2000)\n"
          "  --delay-ms D          slow-node: delay added to master 0 (default 20)\n"
          "  --api blocking|async  latency: blocking calls (default) or the async chain\n"
          "  --request-timeout MS  per-round request timeout (library default 100)\n"
          "  --connect-timeout MS  connect + handshake timeout (library default 1000)\n"
          "  --retry-count N       retries after the first attempt (library default 3)\n"
          "  --retry-delay MS      retry delay (library default 200)\n"
          "  --retry-jitter MS     retry jitter (library default 200)\n"
          "  --fencing             acquire with fencing tokens\n"
          "  --no-stats            turn the client's stats off (to measure what they cost)\n"
          "  --ab-stats            throughput: two clients, stats on and off, measured in\n"
          "                        alternating 0.5 s segments (ABBA) for --duration each\n"
          "  --primitive P         async engine: lock (default) | semaphore | read | write\n"
          "                        (one semaphore / read-write lock per slot)\n"
          "  --limit L             semaphore: its limit (default 4)\n"
          "  --max-samples N       latency samples kept per series (default from duration)\n"
          "  --json                print one JSON object instead of text\n"
          "  --latency-hist FILE   write the acquire-latency histogram (ms, count)\n"
          "  --verbose             print every library warning\n"
          "  --log-level L         debug | info | warn (default; warnings are counted)\n"
          "  --tls                 with --start: masters speak TLS only (rediss://)\n"
          "  --tls-certs DIR       --tls: ca.crt, server.crt, server.key (as made by\n"
          "                        tests/tls/make_certs.sh); the client trusts DIR/ca.crt\n"
          "  --tls-ca PATH         CA file or directory the client trusts\n"
          "  --tls-cert FILE       client certificate (with --tls-key)\n"
          "  --tls-key FILE        client key\n"
          "  --tls-server-name N   name the masters' certificates must carry\n"
          "  --tls-insecure        verify neither chain nor name\n");
}

static int parse_u32(const char *s, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v > UINT32_MAX || s[0] == '-')
    return -1;
  *out = (uint32_t)v;
  return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

static int parse_double(const char *s, double lo, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= lo) || v > 86400)
    return -1;
  *out = v;
  return 0;
}

static int parse_pids(const char *s, config_t *c) {
  const char *p = s;
  while (*p != '\0') {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno != 0 || end == p || v <= 0 || c->n_pids >= MAX_PIDS)
      return -1;
    c->pids[c->n_pids++] = (pid_t)v;
    if (*end == ',')
      end++;
    else if (*end != '\0')
      return -1;
    p = end;
  }
  return c->n_pids > 0 ? 0 : -1;
}

static int parse_args(int argc, char **argv, config_t *c) {
  memset(c, 0, sizeof *c);
  c->mode = MODE_THROUGHPUT;
  c->sem_limit = 4;
  c->start_n = -1;
  c->concurrency = -1;
  c->duration_s = 5;
  c->warmup_s = 1;
  c->ttl_ms = 10000;
  c->workers = 8;
  c->hold_ms = 1;
  c->wait_ms = 2000;
  c->delay_ms = 20;
  c->retry_count = 3;
  c->retry_delay_ms = 200;
  c->retry_jitter_ms = 200;
  c->quarantine = -1;
  c->log_level = REDLOCK_LOG_WARN;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0, used = 1;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else if (strcmp(a, "--json") == 0) {
      c->json = 1, used = 0;
    } else if (strcmp(a, "--verbose") == 0) {
      c->verbose = 1, used = 0;
    } else if (strcmp(a, "--fencing") == 0) {
      c->fencing = 1, used = 0;
    } else if (strcmp(a, "--no-stats") == 0) {
      c->no_stats = 1, used = 0;
    } else if (strcmp(a, "--ab-stats") == 0) {
      c->ab_stats = 1, used = 0;
    } else if (strcmp(a, "--no-quarantine") == 0) {
      c->quarantine = 0, used = 0;
    } else if (v == NULL) {
      fprintf(stderr, "redlock-bench: %s: missing value or unknown option\n", a);
      return -1;
    } else if (strcmp(a, "--mode") == 0) {
      int found = 0;
      for (int m = 0; m < 4; m++)
        if (strcmp(v, mode_names[m]) == 0)
          c->mode = (mode_t_)m, found = 1;
      bad = !found;
    } else if (strcmp(a, "--primitive") == 0) {
      int found = 0;
      for (int p = 0; p < 4; p++)
        if (strcmp(v, primitive_names[p]) == 0)
          c->primitive = (primitive_t)p, found = 1;
      bad = !found;
    } else if (strcmp(a, "--limit") == 0) {
      bad = parse_u32(v, &c->sem_limit) || c->sem_limit == 0 ||
            c->sem_limit > REDLOCK_MAX_SEM_LIMIT;
    } else if (strcmp(a, "--start") == 0) {
      bad = parse_int(v, 1, MAX_NODES, &c->start_n);
    } else if (strcmp(a, "--node") == 0) {
      if (c->n_nodes >= MAX_NODES)
        bad = 1;
      else
        c->nodes[c->n_nodes++] = v;
    } else if (strcmp(a, "--server-pids") == 0) {
      bad = parse_pids(v, c);
    } else if (strcmp(a, "--concurrency") == 0) {
      bad = parse_int(v, 1, MAX_CONCURRENCY, &c->concurrency);
    } else if (strcmp(a, "--duration") == 0) {
      bad = parse_double(v, 0.1, &c->duration_s);
    } else if (strcmp(a, "--warmup") == 0) {
      bad = parse_double(v, 0, &c->warmup_s);
    } else if (strcmp(a, "--ttl") == 0) {
      bad = parse_u32(v, &c->ttl_ms) || c->ttl_ms == 0;
    } else if (strcmp(a, "--workers") == 0) {
      bad = parse_int(v, 1, MAX_WORKERS, &c->workers);
    } else if (strcmp(a, "--hold-ms") == 0) {
      bad = parse_u32(v, &c->hold_ms);
    } else if (strcmp(a, "--wait-ms") == 0) {
      bad = parse_u32(v, &c->wait_ms) || c->wait_ms == 0;
    } else if (strcmp(a, "--delay-ms") == 0) {
      bad = parse_u32(v, &c->delay_ms);
    } else if (strcmp(a, "--api") == 0) {
      bad = strcmp(v, "async") != 0 && strcmp(v, "blocking") != 0;
      c->api_async = strcmp(v, "async") == 0;
    } else if (strcmp(a, "--request-timeout") == 0) {
      bad = parse_u32(v, &c->request_timeout_ms) || c->request_timeout_ms == 0;
    } else if (strcmp(a, "--connect-timeout") == 0) {
      bad = parse_u32(v, &c->connect_timeout_ms) || c->connect_timeout_ms == 0;
    } else if (strcmp(a, "--retry-count") == 0) {
      bad = parse_int(v, -1, 1000000, &c->retry_count);
      c->retry_set = 1;
    } else if (strcmp(a, "--retry-delay") == 0) {
      bad = parse_u32(v, &c->retry_delay_ms);
      c->retry_set = 1;
    } else if (strcmp(a, "--retry-jitter") == 0) {
      bad = parse_u32(v, &c->retry_jitter_ms);
      c->retry_set = 1;
    } else if (strcmp(a, "--max-samples") == 0) {
      int n;
      bad = parse_int(v, 1, 200000000, &n);
      c->max_samples = (size_t)n;
    } else if (strcmp(a, "--log-level") == 0) {
      c->log_level = strcmp(v, "debug") == 0 ? REDLOCK_LOG_DEBUG
                     : strcmp(v, "info") == 0 ? REDLOCK_LOG_INFO
                     : strcmp(v, "warn") == 0 ? REDLOCK_LOG_WARN
                                              : -1;
      bad = c->log_level < 0;
    } else if (strcmp(a, "--latency-hist") == 0) {
      c->hist_path = v;
    } else if (strcmp(a, "--tls") == 0) {
      c->tls = 1, used = 0;
    } else if (strcmp(a, "--tls-insecure") == 0) {
      c->tls_insecure = 1, used = 0;
    } else if (strcmp(a, "--tls-certs") == 0) {
      c->tls_certs = v;
    } else if (strcmp(a, "--tls-ca") == 0) {
      c->tls_ca = v;
    } else if (strcmp(a, "--tls-cert") == 0) {
      c->tls_cert = v;
    } else if (strcmp(a, "--tls-key") == 0) {
      c->tls_key = v;
    } else if (strcmp(a, "--tls-server-name") == 0) {
      c->tls_server_name = v;
    } else {
      fprintf(stderr, "redlock-bench: unknown option %s\n", a);
      return -1;
    }
    if (bad) {
      fprintf(stderr, "redlock-bench: bad value for %s: %s\n", a, v);
      return -1;
    }
    i += used;
  }
  if (c->tls && (c->n_nodes > 0 || c->tls_certs == NULL)) {
    fprintf(stderr, "redlock-bench: --tls starts TLS masters: it needs --tls-certs DIR and no "
                    "--node (give rediss:// URIs for masters of your own)\n");
    return -1;
  }
  if (c->n_nodes > 0 && c->start_n > 0) {
    fprintf(stderr, "redlock-bench: --start and --node exclude each other\n");
    return -1;
  }
  if (c->n_nodes == 0 && c->start_n < 0)
    c->start_n = 3;
  if (c->n_nodes > 0)
    c->start_n = 0;
  if (c->n_pids > 0 && c->start_n > 0) {
    fprintf(stderr, "redlock-bench: --server-pids is automatic with --start\n");
    return -1;
  }
  if (c->concurrency < 0)
    c->concurrency = c->mode == MODE_THROUGHPUT ? 128 : 1;
  if (c->mode == MODE_LATENCY && c->concurrency != 1) {
    fprintf(stderr, "redlock-bench: latency mode runs one cycle at a time (C = 1)\n");
    return -1;
  }
  if (c->primitive != PRIMITIVE_LOCK &&
      (c->mode == MODE_CONTENTION || (c->mode == MODE_LATENCY && !c->api_async))) {
    fprintf(stderr, "redlock-bench: --primitive needs the async engine (throughput, slow-node, "
                    "latency --api async)\n");
    return -1;
  }
  if (c->mode == MODE_CONTENTION && c->ttl_ms <= c->hold_ms) {
    fprintf(stderr, "redlock-bench: --ttl must be longer than --hold-ms\n");
    return -1;
  }
  return 0;
}

/* ---- time, CPU -------------------------------------------------------------------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static atomic_int interrupted;

static void on_sigint(int sig) {
  (void)sig;
  atomic_store(&interrupted, 1);
}

/* Sleeps up to `seconds`, returning early on SIGINT / SIGTERM. */
static void sleep_s(double seconds) {
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

static void sleep_ms(uint32_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static uint64_t self_cpu_us(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
         (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
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

/* ---- latency samples ---------------------------------------------------------------
 * Preallocated; a sample is stored with one atomic increment (no malloc), in
 * nanoseconds saturated at ~4.29 s. */

typedef struct {
  uint32_t *v;
  size_t cap;
  atomic_size_t n;
} samples_t;

static int samples_init(samples_t *s, size_t cap) {
  s->v = malloc(cap * sizeof *s->v);
  s->cap = cap;
  atomic_init(&s->n, 0);
  if (s->v == NULL)
    return -1;
  /* Touch the pages now, not during the measurement. */
  memset(s->v, 0, cap * sizeof *s->v);
  return 0;
}

static void samples_add(samples_t *s, uint64_t ns) {
  size_t i = atomic_fetch_add_explicit(&s->n, 1, memory_order_relaxed);
  if (i < s->cap)
    s->v[i] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static size_t samples_count(samples_t *s) {
  size_t n = atomic_load(&s->n);
  return n < s->cap ? n : s->cap;
}

static size_t samples_dropped(samples_t *s) {
  size_t n = atomic_load(&s->n);
  return n > s->cap ? n - s->cap : 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

typedef struct {
  size_t n;
  double p50, p99, p999, mean, max; /* ms */
} stats_t;

static double pct_ms(const uint32_t *v, size_t n, double p) {
  size_t rank = (size_t)ceil(p * (double)n);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return v[rank - 1] / 1e6;
}

/* Sorts in place. */
static stats_t samples_stats(samples_t *s) {
  stats_t st = {0};
  st.n = samples_count(s);
  if (st.n == 0)
    return st;
  qsort(s->v, st.n, sizeof *s->v, cmp_u32);
  double sum = 0;
  for (size_t i = 0; i < st.n; i++)
    sum += s->v[i];
  st.mean = sum / (double)st.n / 1e6;
  st.p50 = pct_ms(s->v, st.n, 0.50);
  st.p99 = pct_ms(s->v, st.n, 0.99);
  st.p999 = pct_ms(s->v, st.n, 0.999);
  st.max = s->v[st.n - 1] / 1e6;
  return st;
}

/* Log-spaced histogram, 40 buckets per decade from 1 µs: "center_ms count". */
static int write_hist(const char *path, samples_t *s, const char *title) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "redlock-bench: %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t n = samples_count(s); /* sorted by samples_stats */
  fprintf(f, "# redlock-bench acquire latency histogram: %s\n", title);
  fprintf(f, "# %zu samples; log-spaced buckets (40 per decade)\n", n);
  fprintf(f, "# latency_ms count\n");
  const double per_decade = 40;
  size_t i = 0;
  if (n > 0) {
    double lo_us = s->v[0] / 1e3 < 1 ? 1 : s->v[0] / 1e3;
    int b = (int)floor(log10(lo_us) * per_decade);
    while (i < n) {
      double upper_ns = pow(10, (b + 1) / per_decade) * 1e3;
      size_t count = 0;
      while (i < n && (double)s->v[i] < upper_ns)
        i++, count++;
      double center_ms = pow(10, (b + 0.5) / per_decade) / 1e3;
      fprintf(f, "%.6f %zu\n", center_ms, count);
      b++;
    }
  }
  fclose(f);
  return 0;
}

/* ---- error counts ------------------------------------------------------------------ */

typedef struct {
  atomic_ulong by_code[N_CODES]; /* index -code; 0 = unknown */
} errors_t;

static void errors_add(errors_t *e, int code) {
  int i = code < 0 && -code < N_CODES ? -code : 0;
  atomic_fetch_add_explicit(&e->by_code[i], 1, memory_order_relaxed);
}

static unsigned long errors_total(errors_t *e) {
  unsigned long t = 0;
  for (int i = 0; i < N_CODES; i++)
    t += atomic_load(&e->by_code[i]);
  return t;
}

/* ---- library log -------------------------------------------------------------------- */

static atomic_ulong log_warnings;
static int log_verbose;
static uint64_t log_epoch_ns;

static uint64_t now_ns(void);

static void on_log(int level, const char *msg, void *arg) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  (void)arg;
  double t = (double)(now_ns() - log_epoch_ns) / 1e9;
  const char *name = level >= 0 && level <= 3 ? names[level] : "?";
  if (level < REDLOCK_LOG_WARN) { /* only with --log-level below warn */
    fprintf(stderr, "[redlock %8.3f %s] %s\n", t, name, msg);
    return;
  }
  unsigned long n = atomic_fetch_add(&log_warnings, 1);
  if (log_verbose || n < 5)
    fprintf(stderr, "[redlock %8.3f %s] %s\n", t, name, msg);
  else if (n == 5)
    fprintf(stderr, "[redlock] further warnings counted, not printed (--verbose prints them)\n");
}

/* ---- run state ------------------------------------------------------------------------ */

enum { PHASE_WARMUP = 0, PHASE_MEASURE, PHASE_STOP };

typedef struct bench bench_t;

typedef struct {
  bench_t *b;
  char resource[64];
  uint64_t t_start;
  uint64_t t_acquired;
} slot_t;

struct bench {
  config_t *cfg;
  redlock_t *client;
  char run_id[32];
  atomic_int phase;
  atomic_int active; /* async slots still cycling */
  atomic_ulong cycles; /* completed in the measured window */
  samples_t acquire, cycle;
  errors_t lock_errors, unlock_errors;
  /* window */
  uint64_t t0, t1;
  uint64_t cpu0, cpu1;
  int64_t srv0, srv1;
  /* contention */
  samples_t handoff, handoff_start;
  unsigned long handoff_negative;
  unsigned long giveups;
  unsigned long per_worker_min, per_worker_max;
  /* outcome */
  int hung;
  int n_nodes;
  int quarantine;
  int tls; /* some master is rediss:// */
  slot_t *slots; /* async engine; freed after redlock_close */
};

static void begin_window(bench_t *b) {
  b->srv0 = servers_cpu_us(b->cfg);
  b->cpu0 = self_cpu_us();
  b->t0 = now_ns();
  atomic_store(&b->phase, PHASE_MEASURE);
  if (b->cfg->log_level < REDLOCK_LOG_WARN)
    fprintf(stderr, "[bench   %8.3f] measuring\n", (double)(b->t0 - log_epoch_ns) / 1e9);
}

static void end_window(bench_t *b) {
  atomic_store(&b->phase, PHASE_STOP);
  b->t1 = now_ns();
  b->cpu1 = self_cpu_us();
  b->srv1 = servers_cpu_us(b->cfg);
  if (b->cfg->log_level < REDLOCK_LOG_WARN)
    fprintf(stderr, "[bench   %8.3f] stopping\n", (double)(b->t1 - log_epoch_ns) / 1e9);
}

/* ---- async engine (throughput, latency --api async, slow-node) ------------------- */

static void cycle_start(slot_t *s);

static void slot_retire(slot_t *s) { atomic_fetch_sub(&s->b->active, 1); }

static void cycle_next(slot_t *s) {
  if (atomic_load_explicit(&s->b->phase, memory_order_relaxed) == PHASE_STOP)
    slot_retire(s);
  else
    cycle_start(s);
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

static void cycle_start(slot_t *s) {
  bench_t *b = s->b;
  const config_t *c = b->cfg;
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

static int run_async(bench_t *b) {
  config_t *c = b->cfg;
  int n = c->concurrency;
  slot_t *slots = calloc((size_t)n, sizeof *slots);
  if (slots == NULL)
    return -1;
  b->slots = slots;
  atomic_store(&b->active, n);
  for (int i = 0; i < n; i++) {
    slots[i].b = b;
    snprintf(slots[i].resource, sizeof slots[i].resource, "bench:%s:%d", b->run_id, i);
  }
  for (int i = 0; i < n; i++)
    cycle_start(&slots[i]);
  sleep_s(c->warmup_s);
  begin_window(b);
  sleep_s(c->duration_s);
  end_window(b);
  /* Let the cycles in flight finish (each ends within its retries). */
  uint64_t limit = now_ns() + 30ull * 1000000000u;
  while (atomic_load(&b->active) > 0 && now_ns() < limit)
    sleep_ms(1);
  int left = atomic_load(&b->active);
  if (left > 0) {
    b->hung = left;
    fprintf(stderr, "redlock-bench: %d cycles still unfinished 30 s after the end\n", left);
  }
  /* redlock_close (by the caller) cancels what is left and joins the loop
   * thread; only then are the slots unreachable. */
  return 0;
}

/* ---- --ab-stats: what the stats cost, in one run ------------------------------------
 * Two clients on the same masters, one with stats (A) and one without (B),
 * take turns driving the async engine in short segments ordered ABBA ABBA...,
 * so that a shared machine whose load drifts weighs on both alike: a ratio
 * from one run is worth more than the medians of separate runs here.  Each
 * segment ramps up for 0.1 s, is measured for AB_SEGMENT_S, then drains. */
#define AB_SEGMENT_S 0.5
#define AB_RAMP_S 0.1
#define AB_MAX_SEGMENTS 512

typedef struct {
  unsigned long cycles;
  uint64_t ns, cpu_us;
} ab_acc_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int run_ab(bench_t *b, redlock_t *off) {
  config_t *c = b->cfg;
  redlock_t *clients[2] = {b->client, off};
  int n = c->concurrency;
  slot_t *slots = calloc((size_t)n, sizeof *slots);
  if (slots == NULL)
    return -1;
  b->slots = slots;
  for (int i = 0; i < n; i++) {
    slots[i].b = b;
    snprintf(slots[i].resource, sizeof slots[i].resource, "bench:%s:%d", b->run_id, i);
  }
  int per_side = (int)(c->duration_s / AB_SEGMENT_S + 0.999);
  if (per_side < 2)
    per_side = 2;
  if (per_side > AB_MAX_SEGMENTS / 2)
    per_side = AB_MAX_SEGMENTS / 2;
  int segments = 2 * per_side;
  ab_acc_t acc[2];
  memset(acc, 0, sizeof acc);
  double seg_rate[AB_MAX_SEGMENTS];
  int seg_side[AB_MAX_SEGMENTS];
  /* Warm-up: each client once. */
  for (int w = -2; w < segments && !atomic_load(&interrupted); w++) {
    int side = w < 0 ? w + 2 : ((w % 4 == 0 || w % 4 == 3) ? 0 : 1); /* ABBA */
    b->client = clients[side];
    atomic_store(&b->phase, PHASE_WARMUP);
    atomic_store(&b->active, n);
    for (int i = 0; i < n; i++)
      cycle_start(&slots[i]);
    sleep_s(w < 0 ? c->warmup_s / 2 : AB_RAMP_S);
    unsigned long cycles0 = atomic_load(&b->cycles);
    uint64_t cpu0 = self_cpu_us(), t0 = now_ns();
    atomic_store(&b->phase, w < 0 ? PHASE_WARMUP : PHASE_MEASURE);
    sleep_s(w < 0 ? 0 : AB_SEGMENT_S);
    atomic_store(&b->phase, PHASE_STOP);
    uint64_t t1 = now_ns(), cpu1 = self_cpu_us();
    unsigned long cycles1 = atomic_load(&b->cycles);
    uint64_t limit = now_ns() + 30ull * 1000000000u;
    while (atomic_load(&b->active) > 0 && now_ns() < limit)
      sleep_ms(1);
    if (atomic_load(&b->active) > 0) {
      b->hung = atomic_load(&b->active);
      fprintf(stderr, "redlock-bench: %d cycles still unfinished 30 s after a segment\n", b->hung);
      return 0;
    }
    if (w < 0)
      continue;
    acc[side].cycles += cycles1 - cycles0;
    acc[side].ns += t1 - t0;
    acc[side].cpu_us += cpu1 - cpu0;
    seg_rate[w] = (double)(cycles1 - cycles0) / ((double)(t1 - t0) / 1e9);
    seg_side[w] = side;
  }
  b->client = clients[0];
  /* Per pair of neighbouring segments (one of each side): off / on. */
  double ratios[AB_MAX_SEGMENTS / 2];
  int n_ratios = 0;
  for (int k = 0; k + 1 < segments; k += 2) {
    double on = seg_side[k] == 0 ? seg_rate[k] : seg_rate[k + 1];
    double offr = seg_side[k] == 0 ? seg_rate[k + 1] : seg_rate[k];
    if (on > 0)
      ratios[n_ratios++] = offr / on;
  }
  qsort(ratios, (size_t)n_ratios, sizeof ratios[0], cmp_double);
  double pair_median = n_ratios > 0 ? ratios[(n_ratios - 1) / 2] : 0;
  double rate[2], cpu[2];
  for (int k = 0; k < 2; k++) {
    rate[k] = acc[k].ns > 0 ? (double)acc[k].cycles / ((double)acc[k].ns / 1e9) : 0;
    cpu[k] = acc[k].cycles > 0 ? (double)acc[k].cpu_us / (double)acc[k].cycles : 0;
  }
  unsigned long errors = errors_total(&b->lock_errors) + errors_total(&b->unlock_errors);
  if (c->json) {
    printf("{\"mode\":\"ab-stats\",\"N\":%d,\"C\":%d,\"segment_s\":%.2f,"
           "\"segments_per_side\":%d,",
           b->n_nodes, n, AB_SEGMENT_S, per_side);
    printf("\"on\":{\"cycles_per_s\":%.1f,\"client_cpu_us_per_cycle\":%.3f},", rate[0], cpu[0]);
    printf("\"off\":{\"cycles_per_s\":%.1f,\"client_cpu_us_per_cycle\":%.3f},", rate[1], cpu[1]);
    printf("\"throughput_cost_pct\":%.2f,\"pair_median_cost_pct\":%.2f,"
           "\"cpu_cost_pct\":%.2f,\"errors\":%lu}\n",
           rate[0] > 0 ? (rate[1] / rate[0] - 1) * 100 : 0, (pair_median - 1) * 100,
           cpu[1] > 0 ? (cpu[0] / cpu[1] - 1) * 100 : 0, errors);
  } else {
    printf("stats on   %10.0f cycles/s  %7.2f us client CPU/cycle\n", rate[0], cpu[0]);
    printf("stats off  %10.0f cycles/s  %7.2f us client CPU/cycle\n", rate[1], cpu[1]);
    printf("cost       %9.2f%% throughput (pair median %.2f%%), %.2f%% client CPU per cycle;"
           " %d x %.1f s per side, ABBA; %lu errors\n",
           rate[0] > 0 ? (rate[1] / rate[0] - 1) * 100 : 0, (pair_median - 1) * 100,
           cpu[1] > 0 ? (cpu[0] / cpu[1] - 1) * 100 : 0, per_side, AB_SEGMENT_S, errors);
  }
  return 0;
}

/* ---- latency mode: blocking calls ----------------------------------------------------- */

static int run_blocking(bench_t *b) {
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
    redlock_lock_t *lock = NULL;
    uint64_t t_start = now_ns();
    int rc = redlock_lock(b->client, resource, c->ttl_ms, &lock);
    uint64_t t_acq = now_ns();
    if (rc != REDLOCK_OK) {
      if (measuring)
        errors_add(&b->lock_errors, rc);
      continue;
    }
    rc = redlock_unlock(b->client, lock);
    uint64_t t_end = now_ns();
    if (measuring) {
      if (rc != REDLOCK_OK)
        errors_add(&b->unlock_errors, rc);
      samples_add(&b->acquire, t_acq - t_start);
      samples_add(&b->cycle, t_end - t_start);
      atomic_fetch_add(&b->cycles, 1);
    }
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

static int run_contention(bench_t *b) {
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

/* ---- output ------------------------------------------------------------------------------ */

static void json_stats(const char *name, const stats_t *s, int comma) {
  if (s->n == 0)
    printf("\"%s\":null%s", name, comma ? "," : "");
  else
    printf("\"%s\":{\"n\":%zu,\"p50\":%.4f,\"p99\":%.4f,\"p999\":%.4f,\"mean\":%.4f,\"max\":%.4f}%s",
           name, s->n, s->p50, s->p99, s->p999, s->mean, s->max, comma ? "," : "");
}

static void text_stats(const char *label, const stats_t *s) {
  if (s->n == 0)
    printf("%-18s (no samples)\n", label);
  else
    printf("%-18s p50 %.3f  p99 %.3f  p99.9 %.3f  mean %.3f  max %.3f  (ms, %zu samples)\n",
           label, s->p50, s->p99, s->p999, s->mean, s->max, s->n);
}

static void report(bench_t *b) {
  config_t *c = b->cfg;
  double window = (double)(b->t1 - b->t0) / 1e9;
  unsigned long cycles = atomic_load(&b->cycles);
  double per_s = window > 0 ? cycles / window : 0;
  double client_us = cycles > 0 ? (double)(b->cpu1 - b->cpu0) / cycles : 0;
  int have_srv = b->srv0 >= 0 && b->srv1 >= 0 && cycles > 0;
  double server_us = have_srv ? (double)(b->srv1 - b->srv0) / cycles : 0;
  unsigned long lock_err = errors_total(&b->lock_errors);
  unsigned long unlock_err = errors_total(&b->unlock_errors);
  size_t dropped = samples_dropped(&b->acquire) + samples_dropped(&b->cycle);
  stats_t acq = samples_stats(&b->acquire);
  stats_t cyc = samples_stats(&b->cycle);
  stats_t ho = {0}, hos = {0};
  if (c->mode == MODE_CONTENTION) {
    ho = samples_stats(&b->handoff);
    hos = samples_stats(&b->handoff_start);
  }
  int quorum = b->n_nodes / 2 + 1;
  int conc = c->mode == MODE_CONTENTION ? c->workers : c->concurrency;
  double fairness = b->per_worker_min > 0 ? (double)b->per_worker_max / b->per_worker_min : -1;
  const char *api = c->mode == MODE_CONTENTION                      ? "blocking"
                    : c->mode == MODE_LATENCY && !c->api_async ? "blocking"
                                                                    : "async";

  if (c->json) {
    printf("{\"mode\":\"%s\",\"api\":\"%s\",\"N\":%d,\"quorum\":%d,\"C\":%d,", mode_names[c->mode],
           api, b->n_nodes, quorum, conc);
    printf("\"primitive\":\"%s\",", primitive_names[c->primitive]);
    if (c->primitive == PRIMITIVE_SEMAPHORE)
      printf("\"limit\":%u,", c->sem_limit);
    printf("\"started_servers\":%s,\"quarantine\":%s,\"fencing\":%s,\"tls\":%s,\"stats\":%s,",
           c->start_n > 0 ? "true" : "false", b->quarantine ? "true" : "false",
           c->fencing ? "true" : "false", b->tls ? "true" : "false", c->no_stats ? "false" : "true");
    printf("\"duration\":%.3f,\"warmup\":%.3f,\"ttl_ms\":%u,", window, c->warmup_s, c->ttl_ms);
    printf("\"request_timeout_ms\":%u,\"retry\":", c->request_timeout_ms ? c->request_timeout_ms : 100);
    if (c->retry_set)
      printf("{\"count\":%d,\"delay_ms\":%u,\"jitter_ms\":%u},", c->retry_count,
             c->retry_delay_ms, c->retry_jitter_ms);
    else
      printf("\"default\",");
    printf("\"cycles\":%lu,\"cycles_per_s\":%.1f,\"latency_unit\":\"ms\",", cycles, per_s);
    json_stats("acquire", &acq, 1);
    json_stats("cycle", &cyc, 1);
    printf("\"client_cpu_us_per_cycle\":%.2f,", client_us);
    if (have_srv)
      printf("\"server_cpu_us_per_cycle\":%.2f,", server_us);
    else
      printf("\"server_cpu_us_per_cycle\":null,");
    printf("\"errors\":%lu,\"lock_errors\":%lu,\"unlock_errors\":%lu,\"errors_by_code\":{",
           lock_err + unlock_err, lock_err, unlock_err);
    int first = 1;
    for (int i = 0; i < N_CODES; i++) {
      unsigned long n = atomic_load(&b->lock_errors.by_code[i]) +
                        atomic_load(&b->unlock_errors.by_code[i]);
      if (n > 0) {
        printf("%s\"%s\":%lu", first ? "" : ",", i == 0 ? "other" : redlock_err_name(-i), n);
        first = 0;
      }
    }
    printf("},\"library_warnings\":%lu,\"samples_dropped\":%zu,\"unfinished\":%d",
           atomic_load(&log_warnings), dropped, b->hung);
    if (c->mode == MODE_CONTENTION) {
      printf(",\"workers\":%d,\"hold_ms\":%u,\"wait_ms\":%u,\"acquisitions\":%lu,"
             "\"acquisitions_per_s\":%.1f,",
             c->workers, c->hold_ms, c->wait_ms, cycles, per_s);
      json_stats("handoff", &ho, 1);
      json_stats("handoff_from_unlock_call", &hos, 1);
      printf("\"handoff_before_unlock_returned\":%lu,", b->handoff_negative);
      printf("\"per_worker_min\":%lu,\"per_worker_max\":%lu,\"fairness\":", b->per_worker_min,
             b->per_worker_max);
      if (fairness >= 0)
        printf("%.3f,", fairness);
      else
        printf("null,");
      printf("\"give_ups\":%lu,\"retry_delay_ms\":%u", b->giveups,
             c->retry_set ? c->retry_delay_ms : 200);
    }
    if (c->mode == MODE_SLOW_NODE)
      printf(",\"slow_master\":0,\"delay_ms\":%u", c->delay_ms);
    printf("}\n");
    return;
  }

  printf("redlock-bench %s: mode %s (%s API), N=%d (quorum %d)\n", redlock_version(),
         mode_names[c->mode], api, b->n_nodes, quorum);
  if (c->start_n > 0)
    printf("masters: %d %s started by this program; quarantine DISABLED "
           "(every master has just started)\n",
           c->start_n, rh_server_name());
  else
    printf("masters: given with --node; quarantine %s\n", b->quarantine ? "on" : "off");
  if (b->tls)
    printf("TLS: rediss:// masters\n");
  if (c->mode == MODE_SLOW_NODE)
    printf("slow master: #0 through the fault proxy, +%u ms each way; acquire latency should "
           "be set by the fastest %d of %d masters%s\n",
           c->delay_ms, quorum, b->n_nodes,
           quorum == b->n_nodes ? " (here: all of them, the slow one included)" : "");
  printf("%s %d, ttl %u ms, request timeout %u ms, retry ", 
         c->mode == MODE_CONTENTION ? "workers" : "concurrency", conc, c->ttl_ms,
         c->request_timeout_ms ? c->request_timeout_ms : 100);
  if (c->retry_set)
    printf("%d x (%u + 0..%u ms)", c->retry_count, c->retry_delay_ms, c->retry_jitter_ms);
  else
    printf("default (3 x (200 + 0..200 ms))");
  printf(", warm-up %.1f s, measured %.2f s%s\n", c->warmup_s, window,
         c->fencing ? ", fencing" : "");
  if (c->primitive == PRIMITIVE_SEMAPHORE)
    printf("primitive: semaphore (limit %u), one per slot\n", c->sem_limit);
  else if (c->primitive != PRIMITIVE_LOCK)
    printf("primitive: read-write lock, %s holds, one per slot\n",
           primitive_names[c->primitive]);
  if (c->mode == MODE_CONTENTION) {
    printf("acquisitions       %lu  (%.1f /s), hold %u ms, wait budget %u ms\n", cycles, per_s,
           c->hold_ms, c->wait_ms);
    text_stats("lock_wait ms", &acq);
    text_stats("cycle ms", &cyc);
    text_stats("hand-off ms", &ho);
    text_stats("hand-off(start) ms", &hos);
    printf("%-18s %lu hand-offs granted before the previous unlock call returned\n", "",
           b->handoff_negative);
    printf("per worker         min %lu  max %lu  fairness max/min ", b->per_worker_min,
           b->per_worker_max);
    if (fairness >= 0)
      printf("%.2f\n", fairness);
    else
      printf("inf\n");
    printf("give-ups           %lu (wait budget spent)\n", b->giveups);
  } else {
    printf("cycles             %lu  (%.1f cycles/s)\n", cycles, per_s);
    text_stats("acquire ms", &acq);
    text_stats("cycle ms", &cyc);
  }
  printf("client CPU         %.2f us/cycle%s\n", client_us,
         c->mode == MODE_SLOW_NODE ? " (includes the fault proxy thread)" : "");
  if (have_srv)
    printf("server CPU         %.2f us/cycle (%d servers, summed)\n", server_us, c->n_pids);
  else
    printf("server CPU         n/a (give --server-pids)\n");
  printf("errors             %lu (lock %lu, unlock %lu)", lock_err + unlock_err, lock_err,
         unlock_err);
  for (int i = 0; i < N_CODES; i++) {
    unsigned long n =
        atomic_load(&b->lock_errors.by_code[i]) + atomic_load(&b->unlock_errors.by_code[i]);
    if (n > 0)
      printf(" %s=%lu", i == 0 ? "other" : redlock_err_name(-i), n);
  }
  printf("\n");
  if (atomic_load(&log_warnings) > 0)
    printf("library warnings   %lu\n", atomic_load(&log_warnings));
  if (b->quarantine && atomic_load(&b->lock_errors.by_code[-REDLOCK_ENOQUORUM]) > 0)
    printf("hint               quarantine is on: a master that started less than max TTL ago "
           "does not vote (--no-quarantine)\n");
  if (dropped > 0)
    printf("samples dropped    %zu (raise --max-samples)\n", dropped);
  if (b->hung > 0)
    printf("UNFINISHED         %d cycles never completed\n", b->hung);
}

/* ---- setup ---------------------------------------------------------------------------------- */

#ifdef REDLOCK_BENCH_FAULT_PROXY
/* The port of "redis://[cred@]host[:port][/db]". */
static int uri_port(const char *uri, int *port) {
  const char *p = strstr(uri, "://");
  if (p == NULL || (strncmp(uri, "redis://", 8) != 0 && strncmp(uri, "rediss://", 9) != 0))
    return -1;
  p += 3;
  const char *slash = strchr(p, '/');
  const char *at = NULL;
  for (const char *q = p; *q && (slash == NULL || q < slash); q++)
    if (*q == '@')
      at = q;
  if (at != NULL)
    p = at + 1;
  const char *colon = strchr(p, ':');
  if (colon == NULL || (slash != NULL && colon > slash))
    *port = 6379;
  else
    *port = atoi(colon + 1);
  return *port > 0 && *port < 65536 ? 0 : -1;
}

/* The same URI with host:port replaced by 127.0.0.1:port. */
static int uri_with_port(const char *uri, int port, char *out, size_t size) {
  const char *p = strstr(uri, "://") + 3;
  const char *slash = strchr(p, '/');
  const char *at = NULL;
  for (const char *q = p; *q && (slash == NULL || q < slash); q++)
    if (*q == '@')
      at = q;
  size_t cred_len = at != NULL ? (size_t)(at + 1 - p) : 0;
  /* The proxy relays bytes: a TLS master stays rediss:// behind it. */
  int n = snprintf(out, size, "%s://%.*s127.0.0.1:%d%s",
                   strncmp(uri, "rediss://", 9) == 0 ? "rediss" : "redis", (int)cred_len, p, port,
                   slash != NULL ? slash : "");
  return n > 0 && (size_t)n < size ? 0 : -1;
}
#endif

int main(int argc, char **argv) {
  config_t cfg;
  if (parse_args(argc, argv, &cfg) != 0) {
    usage(stderr);
    return 2;
  }
  log_verbose = cfg.verbose;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

#ifndef REDLOCK_BENCH_FAULT_PROXY
  if (cfg.mode == MODE_SLOW_NODE) {
    fprintf(stderr, "redlock-bench: slow-node mode needs tests/support/fault_proxy.c "
                    "(not present at build time)\n");
    return 2;
  }
#endif

  static bench_t bench;
  bench_t *b = &bench;
  b->cfg = &cfg;
  snprintf(b->run_id, sizeof b->run_id, "%ld-%llx", (long)getpid(),
           (unsigned long long)(now_ns() & 0xffffffffu));

  size_t cap = cfg.max_samples;
  if (cap == 0) {
    /* Generous for a 2-core machine; --max-samples when it is not. */
    double rate = cfg.mode == MODE_THROUGHPUT ? 200000 : 50000;
    cap = (size_t)((cfg.duration_s + 1) * rate);
  }
  if (samples_init(&b->acquire, cap) != 0 || samples_init(&b->cycle, cap) != 0) {
    fprintf(stderr, "redlock-bench: out of memory for %zu samples\n", cap);
    return 1;
  }
  if (cfg.mode == MODE_CONTENTION &&
      (samples_init(&b->handoff, cap) != 0 || samples_init(&b->handoff_start, cap) != 0)) {
    fprintf(stderr, "redlock-bench: out of memory for %zu samples\n", cap);
    return 1;
  }

  int status = 1;
  rh_server_t *servers[MAX_NODES] = {0};
  char uris[MAX_NODES][512];
  int n_nodes = cfg.start_n > 0 ? cfg.start_n : cfg.n_nodes;
#ifdef REDLOCK_BENCH_FAULT_PROXY
  fault_proxy_t *proxy = NULL;
#endif
  redlock_options_t *opts = NULL;

  rh_options_t tls_server;
  memset(&tls_server, 0, sizeof tls_server);
  char tls_files[3][PATH_MAX];
  if (cfg.tls) {
    snprintf(tls_files[0], sizeof tls_files[0], "%s/server.crt", cfg.tls_certs);
    snprintf(tls_files[1], sizeof tls_files[1], "%s/server.key", cfg.tls_certs);
    snprintf(tls_files[2], sizeof tls_files[2], "%s/ca.crt", cfg.tls_certs);
    tls_server.tls_cert_file = tls_files[0];
    tls_server.tls_key_file = tls_files[1];
    tls_server.tls_ca_cert_file = tls_files[2];
    if (cfg.tls_ca == NULL)
      cfg.tls_ca = tls_files[2];
  }
  if (cfg.start_n > 0) {
    if (rh_cluster_start(servers, (size_t)cfg.start_n, cfg.tls ? &tls_server : NULL) != 0) {
      fprintf(stderr, "redlock-bench: could not start %d %s\n", cfg.start_n, rh_server_name());
      return 1;
    }
    for (int i = 0; i < cfg.start_n; i++) {
      snprintf(uris[i], sizeof uris[i], "%s", rh_server_uri(servers[i]));
      cfg.pids[cfg.n_pids++] = rh_server_pid(servers[i]);
    }
  } else {
    for (int i = 0; i < cfg.n_nodes; i++)
      snprintf(uris[i], sizeof uris[i], "%s", cfg.nodes[i]);
  }
  b->n_nodes = n_nodes;

  if (cfg.mode == MODE_SLOW_NODE) {
#ifdef REDLOCK_BENCH_FAULT_PROXY
    int port;
    if (uri_port(uris[0], &port) != 0) {
      fprintf(stderr, "redlock-bench: slow-node needs a redis:// or rediss:// URI for master 0\n");
      goto out;
    }
    if (fault_proxy_start(&proxy, "127.0.0.1", port) != 0) {
      fprintf(stderr, "redlock-bench: could not start the fault proxy\n");
      goto out;
    }
    fault_proxy_set_delay(proxy, cfg.delay_ms);
    char via[512];
    if (uri_with_port(uris[0], fault_proxy_port(proxy), via, sizeof via) != 0)
      goto out;
    snprintf(uris[0], sizeof uris[0], "%s", via);
#endif
  }

  opts = redlock_options_new();
  if (opts == NULL)
    goto out;
  for (int i = 0; i < n_nodes; i++) {
    int rc = redlock_options_add_node(opts, uris[i]);
    if (rc != 0) {
      fprintf(stderr, "redlock-bench: %s: %s\n", uris[i], redlock_strerror(rc));
      goto out;
    }
  }
  b->quarantine = cfg.start_n > 0 ? 0 : (cfg.quarantine != 0);
  if (!b->quarantine)
    redlock_options_set_quarantine(opts, 0);
  if (cfg.fencing)
    redlock_options_set_fencing(opts, 1);
  if (cfg.no_stats)
    redlock_options_set_stats(opts, 0);
  if (cfg.retry_set &&
      redlock_options_set_retry(opts, cfg.retry_count, cfg.retry_delay_ms, cfg.retry_jitter_ms)) {
    fprintf(stderr, "redlock-bench: retry settings refused\n");
    goto out;
  }
  if (cfg.request_timeout_ms || cfg.connect_timeout_ms) {
    uint32_t conn = cfg.connect_timeout_ms ? cfg.connect_timeout_ms : 1000;
    uint32_t req = cfg.request_timeout_ms ? cfg.request_timeout_ms : 100;
    if (redlock_options_set_timeouts(opts, conn, req) != 0) {
      fprintf(stderr, "redlock-bench: timeouts refused\n");
      goto out;
    }
  }
  if (cfg.ttl_ms > 60000 && redlock_options_set_max_ttl(opts, cfg.ttl_ms) != 0)
    goto out;
  log_epoch_ns = now_ns();
  redlock_options_set_log(opts, cfg.log_level, on_log, NULL);
  for (int i = 0; i < n_nodes; i++)
    b->tls |= strncmp(uris[i], "rediss://", 9) == 0;
  if (cfg.tls_ca || cfg.tls_cert || cfg.tls_key || cfg.tls_server_name || cfg.tls_insecure) {
    /* The CA option names a file or a hashed directory. */
    struct stat st;
    int ca_dir = cfg.tls_ca != NULL && stat(cfg.tls_ca, &st) == 0 && S_ISDIR(st.st_mode);
    int trc = redlock_options_set_tls(opts, ca_dir ? NULL : cfg.tls_ca, ca_dir ? cfg.tls_ca : NULL,
                                      cfg.tls_cert, cfg.tls_key);
    if (trc == 0 && cfg.tls_server_name != NULL)
      trc = redlock_options_set_tls_server_name(opts, cfg.tls_server_name);
    if (trc == 0 && cfg.tls_insecure)
      trc = redlock_options_set_tls_verify(opts, 0);
    if (trc != 0) {
      fprintf(stderr, "redlock-bench: TLS settings refused: %s\n", redlock_strerror(trc));
      goto out;
    }
  }

  int rc = redlock_open(&b->client, opts);
  if (rc != 0) {
    fprintf(stderr, "redlock-bench: redlock_open: %s\n", redlock_strerror(rc));
    goto out;
  }

  redlock_t *client_off = NULL; /* --ab-stats: the same options, stats off */
  if (cfg.ab_stats) {
    redlock_options_set_stats(opts, 0);
    rc = cfg.mode == MODE_THROUGHPUT ? redlock_open(&client_off, opts) : REDLOCK_EINVAL;
    if (rc != 0) {
      fprintf(stderr, "redlock-bench: --ab-stats (throughput mode only): %s\n",
              redlock_strerror(rc));
      redlock_close(b->client);
      b->client = NULL;
      goto out;
    }
  }
  switch (cfg.mode) {
  case MODE_THROUGHPUT:
  case MODE_SLOW_NODE:
    rc = cfg.ab_stats ? run_ab(b, client_off) : run_async(b);
    break;
  case MODE_LATENCY:
    rc = cfg.api_async ? run_async(b) : run_blocking(b);
    break;
  case MODE_CONTENTION:
    rc = run_contention(b);
    break;
  }
  uint64_t close_start = now_ns();
  redlock_close(client_off);
  redlock_close(b->client);
  double close_ms = (double)(now_ns() - close_start) / 1e6;
  if (close_ms > 1000)
    fprintf(stderr, "redlock-bench: redlock_close took %.0f ms\n", close_ms);
  b->client = NULL;
  free(b->slots); /* no callback can reach them after close */
  b->slots = NULL;
  if (rc == 0 && cfg.ab_stats) {
    status = b->hung > 0 ? 1 : 0; /* run_ab printed its own report */
  } else if (rc == 0) {
    report(b);
    if (cfg.hist_path != NULL) {
      char title[128];
      snprintf(title, sizeof title, "mode %s, N=%d, C=%d", mode_names[cfg.mode], n_nodes,
               cfg.mode == MODE_CONTENTION ? cfg.workers : cfg.concurrency);
      write_hist(cfg.hist_path, &b->acquire, title); /* sorted by report() */
    }
    status = b->hung > 0 ? 1 : 0;
  }

out:
  redlock_options_free(opts);
#ifdef REDLOCK_BENCH_FAULT_PROXY
  if (proxy != NULL)
    fault_proxy_stop(proxy);
#endif
  if (cfg.start_n > 0)
    rh_cluster_free(servers, (size_t)cfg.start_n);
  free(b->acquire.v);
  free(b->cycle.v);
  free(b->handoff.v);
  free(b->handoff_start.v);
  return status;
}
