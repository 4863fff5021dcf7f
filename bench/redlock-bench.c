/* redlock-bench: throughput, latency and contention figures for redlock-c.
 * This file: the options, the set-up of masters and client, and main; the
 * modes are bench_modes.c, the figures bench_stats.c, the output
 * bench_report.c.
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
 * --ab-node URI (repeat) compares two sets of masters in one run: a second
 * client on those, taking turns with --node's in 0.5 s segments (ABBA) as
 * --ab-stats does; bench/ack-cost.sh uses it for the same masters with and
 * without ?wait=1.
 *
 * Modes:
 *   throughput  --concurrency C cycles in flight on the async API: each slot
 *               loops redlock_lock_async(wait 0) -> redlock_unlock_async on
 *               its own resource "bench:<run>:<slot>" (--resources R: round
 *               R names, "bench:<run>:<k>", each slot its share of them).
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
#define _GNU_SOURCE /* sigaction under -std=c11 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "bench.h"
#include "redis_harness.h"
#include "redlock.h"
#ifdef REDLOCK_BENCH_FAULT_PROXY
#include "fault_proxy.h"
#endif

const char *const mode_names[] = {"throughput", "latency", "contention", "slow-node"};
const char *const primitive_names[] = {"lock", "semaphore", "read", "write"};

/* ---- options -------------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f, "usage: redlock-bench [options]\n"
             "  --mode M              throughput (default) | latency | contention | slow-node\n"
             "  --start N             start N redis-server processes (default 3; quarantine off)\n"
             "  --node URI            use this master instead (repeat; loopback only)\n"
             "  --server-pids P,P,..  PIDs of those masters, for server CPU per cycle\n"
             "  --no-quarantine       with --node: turn the restart quarantine off\n"
             "  --concurrency C       cycles in flight (throughput: 128, latency/slow-node: 1)\n"
             "  --resources R         throughput: cycles go round R resource names (default C)\n"
             "  --duration S          measured seconds (default 5)\n"
             "  --warmup S            warm-up seconds before measuring (default 1)\n"
             "  --cycles N            async engine: exactly N cycles instead of --duration\n"
             "                        and --warmup (a fixed amount of work, for callgrind)\n"
             "  --ttl MS              lock TTL (default 10000)\n"
             "  --workers K           contention: threads on one resource (default 8)\n"
             "  --hold-ms MS          contention: time the lock is held (default 1)\n"
             "  --wait-ms MS          contention: lock_wait budget (default 2000)\n"
             "  --delay-ms D          slow-node: delay added to master 0 (default 20)\n"
             "  --api blocking|async  latency: blocking calls (default) or the async chain;\n"
             "                        throughput: async (default) or --threads blocking threads\n"
             "  --api hiredis         latency: a bare synchronous hiredis SET + DEL on master 0\n"
             "  --threads T           blocking threads (throughput --api blocking, --ab-api;\n"
             "                        default: --concurrency)\n"
             "  --ab-api              throughput: async engine vs --threads blocking threads;\n"
             "                        latency: bare hiredis vs blocking calls; alternating\n"
             "                        0.5 s segments (ABBA) for --duration each, one client\n"
             "  --request-timeout MS  per-round request timeout (library default 100)\n"
             "  --connect-timeout MS  connect + handshake timeout (library default 1000)\n"
             "  --retry-count N       retries after the first attempt (library default 3)\n"
             "  --retry-delay MS      retry delay (library default 200)\n"
             "  --retry-jitter MS     retry jitter (library default 200)\n"
             "  --fencing             acquire with fencing tokens\n"
             "  --no-stats            turn the client's stats off (to measure what they cost)\n"
             "  --ab-stats            throughput: two clients, stats on and off, measured in\n"
             "                        alternating 0.5 s segments (ABBA) for --duration each\n"
             "  --ab-node URI         throughput: side B's masters (repeat, as many as --node):\n"
             "                        two clients, --node's and these, in alternating 0.5 s\n"
             "                        segments (ABBA); e.g. the same masters with ?wait=1\n"
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
    } else if (strcmp(a, "--ab-api") == 0) {
      c->ab_api = 1, used = 0;
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
      bad =
          parse_u32(v, &c->sem_limit) || c->sem_limit == 0 || c->sem_limit > REDLOCK_MAX_SEM_LIMIT;
    } else if (strcmp(a, "--start") == 0) {
      bad = parse_int(v, 1, MAX_NODES, &c->start_n);
    } else if (strcmp(a, "--node") == 0) {
      if (c->n_nodes >= MAX_NODES)
        bad = 1;
      else
        c->nodes[c->n_nodes++] = v;
    } else if (strcmp(a, "--ab-node") == 0) {
      if (c->n_ab_nodes >= MAX_NODES)
        bad = 1;
      else
        c->ab_nodes[c->n_ab_nodes++] = v;
    } else if (strcmp(a, "--server-pids") == 0) {
      bad = parse_pids(v, c);
    } else if (strcmp(a, "--resources") == 0) {
      bad = parse_int(v, 1, 10000000, &c->resources);
    } else if (strcmp(a, "--concurrency") == 0) {
      bad = parse_int(v, 1, MAX_CONCURRENCY, &c->concurrency);
    } else if (strcmp(a, "--duration") == 0) {
      bad = parse_double(v, 0.1, &c->duration_s);
    } else if (strcmp(a, "--warmup") == 0) {
      bad = parse_double(v, 0, &c->warmup_s);
    } else if (strcmp(a, "--cycles") == 0) {
      uint32_t n;
      bad = parse_u32(v, &n) || n == 0;
      c->cycles_limit = n;
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
      bad = strcmp(v, "async") != 0 && strcmp(v, "blocking") != 0 && strcmp(v, "hiredis") != 0;
      c->api_async = strcmp(v, "async") == 0;
      c->api_blocking = strcmp(v, "blocking") == 0;
      c->api_hiredis = strcmp(v, "hiredis") == 0;
    } else if (strcmp(a, "--threads") == 0) {
      bad = parse_int(v, 1, MAX_WORKERS, &c->threads);
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
      c->log_level = strcmp(v, "debug") == 0  ? REDLOCK_LOG_DEBUG
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
  if (c->threads == 0)
    c->threads = c->concurrency < MAX_WORKERS ? c->concurrency : MAX_WORKERS;
  if (c->mode == MODE_THROUGHPUT && c->api_blocking)
    c->concurrency = c->threads; /* a blocking thread has one cycle in flight */
  if ((c->api_blocking && c->mode != MODE_THROUGHPUT && c->mode != MODE_LATENCY) ||
      (c->api_hiredis && c->mode != MODE_LATENCY) ||
      (c->ab_api && c->mode != MODE_THROUGHPUT && c->mode != MODE_LATENCY) ||
      (c->ab_api && c->ab_stats)) {
    fprintf(stderr, "redlock-bench: --api blocking / --ab-api: throughput or latency mode; "
                    "--api hiredis: latency mode; --ab-api and --ab-stats exclude each other\n");
    return -1;
  }
  if (c->n_ab_nodes > 0 && (c->mode != MODE_THROUGHPUT || c->n_nodes != c->n_ab_nodes ||
                            c->ab_api || c->ab_stats || c->api_blocking)) {
    fprintf(stderr, "redlock-bench: --ab-node: throughput mode (async engine, any --concurrency), "
                    "as many as --node, without --ab-api / --ab-stats\n");
    return -1;
  }
  if (c->cycles_limit > 0 &&
      (c->mode == MODE_CONTENTION || c->ab_api || c->ab_stats || c->n_ab_nodes > 0 ||
       c->api_blocking || c->api_hiredis || (c->mode == MODE_LATENCY && !c->api_async))) {
    fprintf(stderr, "redlock-bench: --cycles needs the async engine alone (throughput, slow-node, "
                    "latency --api async)\n");
    return -1;
  }
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

/* ---- signals ------------------------------------------------------------------------ */

static void on_sigint(int sig) {
  (void)sig;
  atomic_store(&interrupted, 1);
}

/* ---- library log -------------------------------------------------------------------- */

atomic_ulong log_warnings;
static int log_verbose;
uint64_t log_epoch_ns;

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

/* The client's options for masters uris[0..n): every client setting of the
 * command line.  NULL (the reason printed) when one is refused. */
static redlock_options_t *make_options(const config_t *cfg, const char *const *uris, int n,
                                       int quarantine) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return NULL;
  for (int i = 0; i < n; i++) {
    int rc = redlock_options_add_node(opts, uris[i]);
    if (rc != 0) {
      fprintf(stderr, "redlock-bench: %s: %s\n", uris[i], redlock_strerror(rc));
      goto fail;
    }
  }
  if (!quarantine)
    redlock_options_set_quarantine(opts, 0);
  if (cfg->fencing)
    redlock_options_set_fencing(opts, 1);
  if (cfg->no_stats)
    redlock_options_set_stats(opts, 0);
  if (cfg->retry_set && redlock_options_set_retry(opts, cfg->retry_count, cfg->retry_delay_ms,
                                                  cfg->retry_jitter_ms)) {
    fprintf(stderr, "redlock-bench: retry settings refused\n");
    goto fail;
  }
  if (cfg->request_timeout_ms || cfg->connect_timeout_ms) {
    uint32_t conn = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 1000;
    uint32_t req = cfg->request_timeout_ms ? cfg->request_timeout_ms : 100;
    if (redlock_options_set_timeouts(opts, conn, req) != 0) {
      fprintf(stderr, "redlock-bench: timeouts refused\n");
      goto fail;
    }
  }
  if (cfg->ttl_ms > 60000 && redlock_options_set_max_ttl(opts, cfg->ttl_ms) != 0)
    goto fail;
  redlock_options_set_log(opts, cfg->log_level, on_log, NULL);
  if (cfg->tls_ca || cfg->tls_cert || cfg->tls_key || cfg->tls_server_name || cfg->tls_insecure) {
    /* The CA option names a file or a hashed directory. */
    struct stat st;
    int ca_dir = cfg->tls_ca != NULL && stat(cfg->tls_ca, &st) == 0 && S_ISDIR(st.st_mode);
    int trc = redlock_options_set_tls(opts, ca_dir ? NULL : cfg->tls_ca,
                                      ca_dir ? cfg->tls_ca : NULL, cfg->tls_cert, cfg->tls_key);
    if (trc == 0 && cfg->tls_server_name != NULL)
      trc = redlock_options_set_tls_server_name(opts, cfg->tls_server_name);
    if (trc == 0 && cfg->tls_insecure)
      trc = redlock_options_set_tls_verify(opts, 0);
    if (trc != 0) {
      fprintf(stderr, "redlock-bench: TLS settings refused: %s\n", redlock_strerror(trc));
      goto fail;
    }
  }
  return opts;
fail:
  redlock_options_free(opts);
  return NULL;
}

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
    if (cfg.cycles_limit > 0)
      cap = cfg.cycles_limit;
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
  b->uri0 = uris[0];

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

  b->quarantine = cfg.start_n > 0 ? 0 : (cfg.quarantine != 0);
  log_epoch_ns = now_ns();
  for (int i = 0; i < n_nodes; i++)
    b->tls |= strncmp(uris[i], "rediss://", 9) == 0;
  const char *uri_list[MAX_NODES];
  for (int i = 0; i < n_nodes; i++)
    uri_list[i] = uris[i];
  opts = make_options(&cfg, uri_list, n_nodes, b->quarantine);
  if (opts == NULL)
    goto out;

  int rc = redlock_open(&b->client, opts);
  if (rc != 0) {
    fprintf(stderr, "redlock-bench: redlock_open: %s\n", redlock_strerror(rc));
    goto out;
  }

  /* Side B of an in-run A/B: --ab-stats: the same options, stats off;
   * --ab-node: the same settings, other masters. */
  redlock_t *client_off = NULL;
  if (cfg.n_ab_nodes > 0) {
    redlock_options_t *opts_b = make_options(&cfg, cfg.ab_nodes, cfg.n_ab_nodes, b->quarantine);
    rc = opts_b != NULL ? redlock_open(&client_off, opts_b) : REDLOCK_EINVAL;
    redlock_options_free(opts_b);
    if (rc != 0) {
      fprintf(stderr, "redlock-bench: --ab-node: %s\n", redlock_strerror(rc));
      redlock_close(b->client);
      b->client = NULL;
      goto out;
    }
  } else if (cfg.ab_stats) {
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
    rc = client_off != NULL ? run_ab(b, client_off)
         : cfg.ab_api       ? run_ab_api(b)
         : cfg.api_blocking ? run_blocking_threads(b)
                            : run_async(b);
    break;
  case MODE_LATENCY:
    rc = cfg.ab_api        ? run_ab_api(b)
         : cfg.api_async   ? run_async(b)
         : cfg.api_hiredis ? run_hiredis(b)
                           : run_blocking(b);
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
  if (rc == 0 && (cfg.ab_stats || cfg.n_ab_nodes > 0 || cfg.ab_api)) {
    status = b->hung > 0 ? 1 : 0; /* run_ab / run_ab_api printed their own report */
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
