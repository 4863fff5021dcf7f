/* bench_blocking.c: the blocking API under load, and the baselines it is
 * judged against:
 *   throughput --api blocking --threads T  T application threads, each looping
 *       redlock_lock -> redlock_unlock on its own resource;
 *   throughput --ab-api   the async engine (C = --concurrency) and T blocking
 *       threads on one client, in alternating segments (ABBA), so that the
 *       blocking / async ratio comes from one run on a shared machine;
 *   latency --api hiredis  a bare synchronous hiredis loop on master 0
 *       (SET key value NX PX ttl, then DEL): what one round trip costs;
 *   latency --ab-api      that loop and blocking redlock_lock / redlock_unlock
 *       (C = 1) in alternating segments: the acquire p50 ratio from one run.
 * Client CPU is getrusage(RUSAGE_SELF): the masters are other processes. */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ---- blocking threads ----------------------------------------------------------------- */

typedef struct {
  bench_t *b;
  pthread_t thread;
  char resource[64];
  unsigned long cycles; /* measured; read after the join */
} blocker_t;

int blocking_cycle(bench_t *b, const char *resource, int measuring) {
  redlock_lock_t *lock = NULL;
  uint64_t t_start = now_ns();
  int rc = redlock_lock(b->client, resource, b->cfg->ttl_ms, &lock);
  uint64_t t_acq = now_ns();
  if (rc != REDLOCK_OK) {
    if (measuring)
      errors_add(&b->lock_errors, rc);
    return rc;
  }
  int unlocked = redlock_unlock(b->client, lock);
  uint64_t t_end = now_ns();
  if (measuring) {
    if (unlocked != REDLOCK_OK)
      errors_add(&b->unlock_errors, unlocked);
    samples_add(&b->acquire, t_acq - t_start);
    samples_add(&b->cycle, t_end - t_start);
  }
  return REDLOCK_OK;
}

static void *blocker_main(void *arg) {
  blocker_t *w = arg;
  bench_t *b = w->b;
  while (atomic_load_explicit(&b->phase, memory_order_relaxed) != PHASE_STOP &&
         !atomic_load(&interrupted)) {
    int measuring = atomic_load_explicit(&b->phase, memory_order_relaxed) == PHASE_MEASURE;
    int rc = blocking_cycle(b, w->resource, measuring);
    if (rc == REDLOCK_OK && measuring)
      w->cycles++;
    else if (rc == REDLOCK_ECLOSED || rc == REDLOCK_EINVAL || rc == REDLOCK_EIO)
      sleep_ms(1); /* no busy loop when the client is gone */
  }
  return NULL;
}

/* Starts T blockers; the number started. */
static int blockers_start(bench_t *b, blocker_t *w, int t) {
  int started = 0;
  for (int i = 0; i < t; i++) {
    w[i].b = b;
    w[i].cycles = 0;
    snprintf(w[i].resource, sizeof w[i].resource, "bench:%s:b%d", b->run_id, i);
    if (pthread_create(&w[i].thread, NULL, blocker_main, &w[i]) != 0)
      break;
    started++;
  }
  if (started < t)
    fprintf(stderr, "redlock-bench: only %d of %d threads started\n", started, t);
  return started;
}

static unsigned long blockers_join(blocker_t *w, int started) {
  unsigned long cycles = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(w[i].thread, NULL);
    cycles += w[i].cycles;
  }
  return cycles;
}

int run_blocking_threads(bench_t *b) {
  int t = b->cfg->threads;
  blocker_t *w = calloc((size_t)t, sizeof *w);
  if (w == NULL)
    return -1;
  atomic_store(&b->phase, PHASE_WARMUP);
  int started = blockers_start(b, w, t);
  sleep_s(b->cfg->warmup_s);
  begin_window(b);
  sleep_s(b->cfg->duration_s);
  end_window(b);
  atomic_store(&b->cycles, blockers_join(w, started));
  free(w);
  return 0;
}

/* ---- a bare synchronous hiredis loop -------------------------------------------------- */

/* A plain redis://host:port master 0 (no TLS, no password): hiredis connects
 * to it directly. */
static redisContext *hiredis_connect(const char *uri) {
  char host[256];
  int port = 6379;
  if (strncmp(uri, "redis://", 8) != 0 || strchr(uri + 8, '@') != NULL ||
      sscanf(uri + 8, "%255[^:/]:%d", host, &port) < 1) {
    fprintf(stderr, "redlock-bench: the hiredis baseline needs a plain redis://host:port, not %s\n",
            uri);
    return NULL;
  }
  redisContext *ctx = redisConnect(host, port);
  if (ctx == NULL || ctx->err) {
    fprintf(stderr, "redlock-bench: hiredis: %s\n", ctx != NULL ? ctx->errstr : "no memory");
    redisFree(ctx);
    return NULL;
  }
  return ctx;
}

/* One SET NX PX + DEL; the SET's round trip to *acq_ns.  0 or -1. */
static int hiredis_cycle(redisContext *ctx, const char *key, uint32_t ttl_ms, uint64_t *acq_ns) {
  uint64_t t0 = now_ns();
  redisReply *r = redisCommand(ctx, "SET %s 1 NX PX %u", key, ttl_ms);
  *acq_ns = now_ns() - t0;
  int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
  freeReplyObject(r);
  r = redisCommand(ctx, "DEL %s", key);
  ok = ok && r != NULL;
  freeReplyObject(r);
  return ok ? 0 : -1;
}

int run_hiredis(bench_t *b) {
  redisContext *ctx = hiredis_connect(b->uri0);
  if (ctx == NULL)
    return -1;
  char key[64];
  snprintf(key, sizeof key, "bench:%s:h", b->run_id);
  uint64_t warm_end = now_ns() + (uint64_t)(b->cfg->warmup_s * 1e9), end = 0;
  int measuring = 0;
  while (!atomic_load(&interrupted)) {
    uint64_t t = now_ns();
    if (!measuring && t >= warm_end) {
      begin_window(b);
      end = b->t0 + (uint64_t)(b->cfg->duration_s * 1e9);
      measuring = 1;
    }
    if (measuring && t >= end)
      break;
    uint64_t acq;
    int rc = hiredis_cycle(ctx, key, b->cfg->ttl_ms, &acq);
    if (measuring) {
      if (rc != 0)
        errors_add(&b->lock_errors, REDLOCK_EIO);
      samples_add(&b->acquire, acq);
      samples_add(&b->cycle, now_ns() - t);
      atomic_fetch_add(&b->cycles, 1);
    }
  }
  if (!measuring)
    begin_window(b);
  end_window(b);
  redisFree(ctx);
  return 0;
}

/* ---- --ab-api: two ways of calling, in turns, in one run -------------------------------- */

/* Throughput: side 0 the async engine, side 1 the blocking threads.  One
 * measured segment of `side` (after its ramp-up); the cycles it counted. */
static unsigned long segment_throughput(bench_t *b, slot_t *slots, blocker_t *w, int side,
                                        double measure_s, ab_acc_t *acc) {
  const config_t *c = b->cfg;
  unsigned long cycles0 = atomic_load(&b->cycles);
  atomic_store(&b->phase, PHASE_WARMUP);
  int started = 0;
  if (side == 0) {
    atomic_store(&b->active, c->concurrency);
    for (int i = 0; i < c->concurrency; i++)
      async_cycle_start(&slots[i]);
  } else {
    started = blockers_start(b, w, c->threads);
  }
  sleep_s(AB_RAMP_S);
  usage_t u0 = self_usage();
  uint64_t t0 = now_ns();
  cycles0 = atomic_load(&b->cycles);
  atomic_store(&b->phase, PHASE_MEASURE);
  sleep_s(measure_s);
  atomic_store(&b->phase, PHASE_STOP);
  uint64_t t1 = now_ns();
  usage_t u1 = self_usage();
  unsigned long n = atomic_load(&b->cycles) - cycles0;
  if (side == 0)
    async_wait_drained(b);
  else
    n = blockers_join(w, started);
  acc->cycles += n;
  acc->ns += t1 - t0;
  acc->cpu_us += u1.cpu_us - u0.cpu_us;
  acc->switches += u1.switches - u0.switches;
  return n;
}

/* Latency: side 0 the hiredis loop, side 1 blocking redlock calls; samples
 * of the acquisition (SET round trip, redlock_lock) per side. */
static unsigned long segment_latency(bench_t *b, redisContext *ctx, int side, double seconds,
                                     samples_t *acq, ab_acc_t *acc) {
  char key[64];
  snprintf(key, sizeof key, "bench:%s:%s", b->run_id, side == 0 ? "h" : "0");
  unsigned long n = 0;
  usage_t u0 = self_usage();
  uint64_t t0 = now_ns(), end = t0 + (uint64_t)(seconds * 1e9), t;
  while ((t = now_ns()) < end && !atomic_load(&interrupted)) {
    uint64_t ns;
    int rc;
    if (side == 0) {
      rc = hiredis_cycle(ctx, key, b->cfg->ttl_ms, &ns);
    } else {
      redlock_lock_t *lock = NULL;
      rc = redlock_lock(b->client, key, b->cfg->ttl_ms, &lock);
      ns = now_ns() - t;
      if (rc == REDLOCK_OK)
        rc = redlock_unlock(b->client, lock);
    }
    if (rc != 0) {
      errors_add(&b->lock_errors, side == 0 ? REDLOCK_EIO : rc);
      continue;
    }
    if (acq != NULL)
      samples_add(acq, ns);
    n++;
  }
  acc->cycles += n;
  acc->ns += now_ns() - t0;
  usage_t u1 = self_usage();
  acc->cpu_us += u1.cpu_us - u0.cpu_us;
  acc->switches += u1.switches - u0.switches;
  return n;
}

int run_ab_api(bench_t *b) {
  config_t *c = b->cfg;
  int latency = c->mode == MODE_LATENCY;
  redisContext *ctx = NULL;
  slot_t *slots = NULL;
  blocker_t *w = NULL;
  samples_t acq[2] = {0};
  int rc = -1;
  if (latency) {
    ctx = hiredis_connect(b->uri0);
    if (ctx == NULL || samples_init(&acq[0], b->acquire.cap) != 0 ||
        samples_init(&acq[1], b->acquire.cap) != 0)
      goto out;
  } else {
    slots = calloc((size_t)c->concurrency, sizeof *slots);
    w = calloc((size_t)c->threads, sizeof *w);
    if (slots == NULL || w == NULL)
      goto out;
    b->slots = slots; /* freed by main after redlock_close */
    for (int i = 0; i < c->concurrency; i++) {
      slots[i].b = b;
      snprintf(slots[i].resource, sizeof slots[i].resource, "bench:%s:%d", b->run_id, i);
    }
  }
  int per_side = ab_per_side(c->duration_s);
  int segments = 2 * per_side;
  ab_acc_t acc[2], scratch;
  memset(acc, 0, sizeof acc);
  double seg_rate[AB_MAX_SEGMENTS];
  int seg_side[AB_MAX_SEGMENTS];
  for (int s = -2; s < segments && !atomic_load(&interrupted); s++) {
    int side = s < 0 ? s + 2 : ab_side(s); /* warm-up: each side once */
    ab_acc_t *into = s < 0 ? &scratch : &acc[side];
    double len = s < 0 ? c->warmup_s / 2 : AB_SEGMENT_S;
    uint64_t ns0 = into->ns;
    unsigned long n = latency ? segment_latency(b, ctx, side, len, s < 0 ? NULL : &acq[side], into)
                              : segment_throughput(b, slots, w, side, len, into);
    if (!latency && b->hung > 0)
      goto out;
    if (s >= 0) {
      seg_rate[s] = (double)n / ((double)(into->ns - ns0) / 1e9);
      seg_side[s] = side;
    }
  }
  ab_api_result_t r = {.per_side = per_side,
                       .segment_s = AB_SEGMENT_S,
                       .pair_median = ab_pair_median(seg_rate, seg_side, segments),
                       .errors = errors_total(&b->lock_errors) + errors_total(&b->unlock_errors)};
  ab_rates(acc, r.rate, r.cpu);
  for (int k = 0; k < 2; k++) {
    r.switches[k] = acc[k].cycles > 0 ? (double)acc[k].switches / (double)acc[k].cycles : 0;
    if (latency)
      r.acq[k] = samples_stats(&acq[k]);
  }
  report_ab_api(b, &r);
  rc = 0;
out:
  if (ctx != NULL)
    redisFree(ctx);
  free(w);
  free(acq[0].v);
  free(acq[1].v);
  return rc;
}
