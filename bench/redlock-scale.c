/* redlock-scale.c: the cost of holding and watching many locks at once (a
 * benchmark program, not a test).
 *
 *   redlock-scale [--mode hold|watch|both] [--nodes N] [--locks K]
 *                 [--watches W] [--ttl MS] [--watch-ttl MS] [--duration S]
 *                 [--spread S] [--concurrency C] [--request-timeout MS]
 *                 [--hist] [--log] [--pause-master] [--json]
 *
 * It starts N redis-server processes itself (tests/support/redis_harness, on
 * loopback, restart quarantine off) and stops them by PID at the end.
 *
 * hold:  takes K locks on distinct resources with redlock_lock_async (at most
 *        C in flight), keeps them all, and reports the client's RSS per held
 *        lock ((RSS when all are held - RSS after open) / K, from
 *        /proc/self/statm) and the wall time of redlock_close(), which
 *        releases them all; then how many keys the masters still hold (a
 *        release that timed out leaves its key to expire by TTL), and how
 *        many warnings the library logged while closing (timeouts, masters
 *        dropped as hung).  --pause-master SIGSTOPs master 0 just before
 *        the close and resumes it after: the close is then bounded by the
 *        hung-master limit, and master 0 keeps its keys (they expire by TTL).
 * watch: takes W locks with ttl --watch-ttl and redlock_watch()es each from
 *        its lock callback (acquisitions spread evenly over --spread seconds,
 *        0 = as fast as possible), then measures for --duration seconds the
 *        client's CPU (getrusage user+sys delta / wall time = share of one
 *        core) and counts REDLOCK_EVENT_RENEW events per second (the event
 *        callback), for how renewals spread over time.
 *
 * Output: a human summary, or with --json one JSON object per mode per line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "redis_harness.h"
#include "redlock.h"

#define MAX_NODES 7
#define MAX_SECONDS 3600

typedef struct {
  const char *mode;
  unsigned nodes;
  size_t locks;
  size_t watches;
  uint32_t ttl_ms;
  uint32_t watch_ttl_ms;
  unsigned duration_s;
  double spread_s;
  size_t concurrency;
  uint32_t request_timeout_ms; /* 0 = the library's default */
  int hist;
  int log;          /* print the library's warnings to stderr */
  int pause_master; /* hold: master 0 stopped (SIGSTOP) during the close */
  int json;
} config_t;

/* Shared between the submitting thread and the client's loop thread. */
typedef struct {
  redlock_t *client;
  redlock_lock_t **handles;
  atomic_size_t in_flight;
  atomic_size_t acquired;
  atomic_size_t failed;
  atomic_size_t watch_failed;
  atomic_size_t lost;
  atomic_int watching; /* watch mode: redlock_watch each lock in its callback */
  /* watch mode: renewal events per second since t0_ms */
  atomic_uint_fast64_t t0_ms;
  atomic_uint renew_ok[MAX_SECONDS];
  atomic_uint renew_failed;
  atomic_size_t renew_total;
  atomic_uint warnings; /* library log lines at REDLOCK_LOG_WARN or above */
  int log;
} run_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s) {
  if (s <= 0)
    return;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* Resident set size in bytes (/proc/self/statm, second field). */
static long rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL)
    return -1;
  long size = 0, resident = 0;
  int n = fscanf(f, "%ld %ld", &size, &resident);
  fclose(f);
  return n == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

/* User + system CPU seconds of this process (all its threads). */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static uint64_t wall_ms(void) { return rh_now_ms(); }

static void on_log(int level, const char *msg, void *arg) {
  run_t *run = arg;
  atomic_fetch_add(&run->warnings, 1);
  if (run->log)
    fprintf(stderr, "redlock-scale: library %s: %s\n",
            level >= REDLOCK_LOG_ERROR ? "error" : "warning", msg);
}

static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)reason;
  run_t *run = arg;
  atomic_fetch_add(&run->lost, 1);
}

static void on_locked(int status, redlock_lock_t *lock, void *arg) {
  run_t *run = arg;
  if (status == REDLOCK_OK) {
    run->handles[atomic_fetch_add(&run->acquired, 1)] = lock;
    if (atomic_load(&run->watching) && redlock_watch(run->client, lock, on_lost, run) != 0)
      atomic_fetch_add(&run->watch_failed, 1);
  } else {
    atomic_fetch_add(&run->failed, 1);
  }
  atomic_fetch_sub(&run->in_flight, 1);
}

static void on_event(const redlock_event_t *ev, void *arg) {
  run_t *run = arg;
  if (redlock_event_kind(ev) != REDLOCK_EVENT_RENEW)
    return;
  uint64_t t0 = atomic_load(&run->t0_ms);
  if (t0 == 0)
    return; /* before the measured window */
  if (redlock_event_status(ev) != REDLOCK_OK) {
    atomic_fetch_add(&run->renew_failed, 1);
    return;
  }
  uint64_t sec = (wall_ms() - t0) / 1000;
  if (sec < MAX_SECONDS)
    atomic_fetch_add(&run->renew_ok[sec], 1);
  atomic_fetch_add(&run->renew_total, 1);
}

static int open_client(run_t *run, rh_server_t **servers, const config_t *cfg) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return -1;
  for (unsigned i = 0; i < cfg->nodes; i++)
    redlock_options_add_node(opts, rh_server_uri(servers[i]));
  redlock_options_set_quarantine(opts, 0);
  redlock_options_set_retry(opts, 0, 0, 0);
  if (cfg->request_timeout_ms > 0)
    redlock_options_set_timeouts(opts, 1000, cfg->request_timeout_ms);
  redlock_options_set_event_cb(opts, on_event, run);
  run->log = cfg->log;
  redlock_options_set_log(opts, REDLOCK_LOG_WARN, on_log, run);
  int rc = redlock_open(&run->client, opts);
  redlock_options_free(opts);
  if (rc != REDLOCK_OK) {
    fprintf(stderr, "redlock-scale: redlock_open: %s\n", redlock_strerror(rc));
    return -1;
  }
  return 0;
}

/* Takes `count` locks "PREFIX:i" with at most C in flight, each started at
 * t_start + i * spread / count.  Returns the seconds it took. */
static double acquire_all(run_t *run, const config_t *cfg, const char *prefix, size_t count,
                          uint32_t ttl_ms) {
  double t_start = now_s();
  char resource[64];
  for (size_t i = 0; i < count; i++) {
    if (cfg->spread_s > 0)
      sleep_s(t_start + cfg->spread_s * (double)i / (double)count - now_s());
    while (atomic_load(&run->in_flight) >= cfg->concurrency)
      sleep_s(50e-6);
    snprintf(resource, sizeof resource, "%s:%zu", prefix, i);
    atomic_fetch_add(&run->in_flight, 1);
    int rc = redlock_lock_async(run->client, resource, ttl_ms, 0, on_locked, run);
    if (rc != REDLOCK_OK) {
      atomic_fetch_sub(&run->in_flight, 1);
      atomic_fetch_add(&run->failed, 1);
    }
  }
  while (atomic_load(&run->in_flight) > 0)
    sleep_s(1e-3);
  return now_s() - t_start;
}

static long keys_left(rh_server_t **servers, unsigned n) {
  long total = 0;
  char buf[64];
  for (unsigned i = 0; i < n; i++) {
    if (rh_server_command(servers[i], buf, sizeof buf, "DBSIZE") != 0)
      return -1;
    total += atol(buf);
  }
  return total;
}

static int flush_all(rh_server_t **servers, unsigned n) {
  char buf[64];
  for (unsigned i = 0; i < n; i++)
    if (rh_server_command(servers[i], buf, sizeof buf, "FLUSHALL") != 0)
      return -1;
  return 0;
}

static int run_hold(rh_server_t **servers, const config_t *cfg) {
  run_t *run = calloc(1, sizeof *run);
  if (run == NULL)
    return 1;
  /* The handle array is allocated and touched before the baseline, so it is
   * not counted as the library's cost. */
  run->handles = calloc(cfg->locks ? cfg->locks : 1, sizeof *run->handles);
  if (run->handles == NULL || open_client(run, servers, cfg) != 0)
    return 1;
  memset(run->handles, 0xff, cfg->locks * sizeof *run->handles);
  memset(run->handles, 0, cfg->locks * sizeof *run->handles);
  sleep_s(0.2);
  long rss0 = rss_bytes();
  double acquire_s = acquire_all(run, cfg, "scale", cfg->locks, cfg->ttl_ms);
  sleep_s(0.2);
  long rss1 = rss_bytes();
  size_t held = atomic_load(&run->acquired);
  long keys_held = keys_left(servers, cfg->nodes);
  unsigned warnings0 = atomic_load(&run->warnings);
  if (cfg->pause_master && rh_server_pause(servers[0]) != 0)
    return 1;
  double t = now_s();
  redlock_close(run->client);
  double close_s = now_s() - t;
  if (cfg->pause_master && rh_server_resume(servers[0]) != 0)
    return 1;
  long keys_after = keys_left(servers, cfg->nodes);
  unsigned close_warnings = atomic_load(&run->warnings) - warnings0;
  double per_lock = held > 0 ? (double)(rss1 - rss0) / (double)held : 0;
  if (cfg->json) {
    printf("{\"mode\":\"hold\",\"nodes\":%u,\"locks\":%zu,\"held\":%zu,\"failed\":%zu,"
           "\"ttl_ms\":%u,\"request_timeout_ms\":%u,\"acquire_s\":%.3f,\"acquire_per_s\":%.0f,"
           "\"rss_before\":%ld,\"rss_held\":%ld,\"bytes_per_lock\":%.1f,\"close_s\":%.3f,"
           "\"keys_on_masters_held\":%ld,\"keys_on_masters_after_close\":%ld,\"close_warnings\":%u,"
           "\"paused_master\":%d}\n",
           cfg->nodes, cfg->locks, held, atomic_load(&run->failed), cfg->ttl_ms,
           cfg->request_timeout_ms, acquire_s, (double)held / acquire_s, rss0, rss1, per_lock,
           close_s, keys_held, keys_after, close_warnings, cfg->pause_master);
  } else {
    printf("hold: N=%u, %zu of %zu locks held (%zu failed), acquired in %.2f s (%.0f/s)\n",
           cfg->nodes, held, cfg->locks, atomic_load(&run->failed), acquire_s,
           (double)held / acquire_s);
    printf("  RSS %.1f MiB -> %.1f MiB: %.0f bytes per held lock\n", rss0 / 1048576.0,
           rss1 / 1048576.0, per_lock);
    printf("  redlock_close (releases all): %.3f s; keys on the masters %ld -> %ld; %u warnings\n",
           close_s, keys_held, keys_after, close_warnings);
  }
  fflush(stdout);
  free(run->handles);
  free(run);
  return held == cfg->locks ? 0 : 1;
}

static int run_watch(rh_server_t **servers, const config_t *cfg) {
  run_t *run = calloc(1, sizeof *run);
  if (run == NULL)
    return 1;
  run->handles = calloc(cfg->watches ? cfg->watches : 1, sizeof *run->handles);
  if (run->handles == NULL || open_client(run, servers, cfg) != 0)
    return 1;
  atomic_store(&run->watching, 1);
  double acquire_s = acquire_all(run, cfg, "watch", cfg->watches, cfg->watch_ttl_ms);
  size_t held = atomic_load(&run->acquired);
  /* The measured window starts once every watch is set up. */
  sleep_s(0.1);
  atomic_store(&run->t0_ms, wall_ms());
  double c0 = cpu_s(), w0 = now_s();
  sleep_s(cfg->duration_s);
  double cpu = cpu_s() - c0, wall = now_s() - w0;
  atomic_store(&run->t0_ms, 0);
  size_t renewals = atomic_load(&run->renew_total);
  unsigned secs = cfg->duration_s < MAX_SECONDS ? cfg->duration_s : MAX_SECONDS;
  unsigned peak = 0, busy = 0;
  for (unsigned s = 0; s < secs; s++) {
    unsigned v = atomic_load(&run->renew_ok[s]);
    if (v > peak)
      peak = v;
    if (v > 0)
      busy++;
  }
  double mean = secs > 0 ? (double)renewals / secs : 0;
  /* Evenly spread renewals would be W / (ttl * 2/3) per second. */
  double even = (double)held / (cfg->watch_ttl_ms * 2.0 / 3.0 / 1000.0);
  double share = cpu / wall;
  if (cfg->json) {
    printf("{\"mode\":\"watch\",\"nodes\":%u,\"watches\":%zu,\"held\":%zu,\"ttl_ms\":%u,"
           "\"spread_s\":%.1f,\"acquire_s\":%.3f,\"duration_s\":%.2f,\"cpu_s\":%.4f,"
           "\"core_share_pct\":%.3f,\"renewals\":%zu,\"renew_failed\":%u,\"lost\":%zu,"
           "\"renew_per_s_mean\":%.1f,\"renew_per_s_even\":%.1f,\"renew_per_s_peak\":%u,"
           "\"peak_over_mean\":%.2f,\"seconds_with_renewals\":%u,\"cpu_us_per_renewal\":%.2f,"
           "\"hist\":[",
           cfg->nodes, cfg->watches, held, cfg->watch_ttl_ms, cfg->spread_s, acquire_s, wall, cpu,
           share * 100, renewals, atomic_load(&run->renew_failed), atomic_load(&run->lost), mean,
           even, peak, mean > 0 ? peak / mean : 0, busy,
           renewals > 0 ? cpu * 1e6 / (double)renewals : 0);
    for (unsigned s = 0; s < secs; s++)
      printf("%s%u", s ? "," : "", atomic_load(&run->renew_ok[s]));
    printf("]}\n");
  } else {
    printf("watch: N=%u, %zu of %zu locks watched (ttl %u ms), acquired over %.2f s\n", cfg->nodes,
           held, cfg->watches, cfg->watch_ttl_ms, acquire_s);
    printf("  client CPU %.3f s over %.1f s wall = %.3f%% of a core (%.2f us per renewal)\n", cpu,
           wall, share * 100, renewals > 0 ? cpu * 1e6 / (double)renewals : 0);
    printf("  renewals %zu (%u failed, %zu lost): mean %.1f/s (evenly spread: %.1f/s), "
           "peak %u/s (%.1fx mean), %u of %u seconds with renewals\n",
           renewals, atomic_load(&run->renew_failed), atomic_load(&run->lost), mean, even, peak,
           mean > 0 ? peak / mean : 0, busy, secs);
    if (cfg->hist)
      for (unsigned s = 0; s < secs; s++)
        printf("  %4u s %6u\n", s, atomic_load(&run->renew_ok[s]));
  }
  fflush(stdout);
  redlock_close(run->client);
  int rc = held == cfg->watches && atomic_load(&run->lost) == 0 ? 0 : 1;
  free(run->handles);
  free(run);
  return rc;
}

static void usage(FILE *f) {
  fprintf(f, "usage: redlock-scale [options]\n"
             "  --mode hold|watch|both  (both)\n"
             "  --nodes N               masters started on loopback (3)\n"
             "  --locks K               hold: locks held at once (100000)\n"
             "  --ttl MS                hold: lock ttl (60000)\n"
             "  --watches W             watch: locks watched (10000)\n"
             "  --watch-ttl MS          watch: lock ttl (30000)\n"
             "  --duration S            watch: measured seconds (60)\n"
             "  --spread S              watch: spread acquisitions over S seconds (0)\n"
             "  --concurrency C         acquisitions in flight (256)\n"
             "  --request-timeout MS    per-round timeout (library default when 0)\n"
             "  --hist                  watch: print renewals per second\n"
             "  --log                   print the library's warnings to stderr\n"
             "  --pause-master          hold: SIGSTOP master 0 during the close\n"
             "  --json                  one JSON object per mode per line\n");
}

static int parse(config_t *c, int argc, char **argv) {
  *c = (config_t){"both", 3, 100000, 10000, 60000, 30000, 60, 0, 256, 0, 0, 0, 0, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--json") == 0) {
      c->json = 1;
      continue;
    }
    if (strcmp(a, "--hist") == 0) {
      c->hist = 1;
      continue;
    }
    if (strcmp(a, "--log") == 0) {
      c->log = 1;
      continue;
    }
    if (strcmp(a, "--pause-master") == 0) {
      c->pause_master = 1;
      continue;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (v == NULL) {
      fprintf(stderr, "redlock-scale: %s: unknown option or missing value\n", a);
      return -1;
    }
    i++;
    if (strcmp(a, "--mode") == 0)
      c->mode = v;
    else if (strcmp(a, "--nodes") == 0)
      c->nodes = (unsigned)atoi(v);
    else if (strcmp(a, "--locks") == 0)
      c->locks = (size_t)atol(v);
    else if (strcmp(a, "--watches") == 0)
      c->watches = (size_t)atol(v);
    else if (strcmp(a, "--ttl") == 0)
      c->ttl_ms = (uint32_t)atol(v);
    else if (strcmp(a, "--watch-ttl") == 0)
      c->watch_ttl_ms = (uint32_t)atol(v);
    else if (strcmp(a, "--duration") == 0)
      c->duration_s = (unsigned)atoi(v);
    else if (strcmp(a, "--spread") == 0)
      c->spread_s = atof(v);
    else if (strcmp(a, "--concurrency") == 0)
      c->concurrency = (size_t)atol(v);
    else if (strcmp(a, "--request-timeout") == 0)
      c->request_timeout_ms = (uint32_t)atol(v);
    else {
      fprintf(stderr, "redlock-scale: %s: unknown option\n", a);
      return -1;
    }
  }
  if (c->nodes < 1 || c->nodes > MAX_NODES || c->concurrency < 1 || c->ttl_ms < 1 ||
      c->watch_ttl_ms < 1 || c->duration_s > MAX_SECONDS ||
      (strcmp(c->mode, "hold") != 0 && strcmp(c->mode, "watch") != 0 &&
       strcmp(c->mode, "both") != 0)) {
    fprintf(stderr, "redlock-scale: bad option value\n");
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  config_t cfg;
  if (parse(&cfg, argc, argv) != 0) {
    usage(stderr);
    return 2;
  }
  rh_server_t *servers[MAX_NODES] = {0};
  if (rh_cluster_start(servers, cfg.nodes, NULL) != 0) {
    fprintf(stderr, "redlock-scale: could not start %u %s processes\n", cfg.nodes,
            rh_server_name());
    return 1;
  }
  int rc = 0;
  if (strcmp(cfg.mode, "watch") != 0)
    rc |= run_hold(servers, &cfg);
  if (strcmp(cfg.mode, "both") == 0 && flush_all(servers, cfg.nodes) != 0)
    rc = 1;
  if (strcmp(cfg.mode, "hold") != 0)
    rc |= run_watch(servers, &cfg);
  rh_cluster_free(servers, cfg.nodes);
  return rc;
}
