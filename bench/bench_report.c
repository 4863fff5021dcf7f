/* bench_report.c: redlock-bench's output: the figures of a run as text or
 * one JSON object (scripts in bench/ read the JSON), the --ab-stats
 * comparison, and the latency histogram file. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "redis_harness.h" /* rh_server_name */

static void json_stats(const char *name, const stats_t *s, int comma) {
  if (s->n == 0)
    printf("\"%s\":null%s", name, comma ? "," : "");
  else
    printf(
        "\"%s\":{\"n\":%zu,\"p50\":%.4f,\"p99\":%.4f,\"p999\":%.4f,\"mean\":%.4f,\"max\":%.4f}%s",
        name, s->n, s->p50, s->p99, s->p999, s->mean, s->max, comma ? "," : "");
}

static void text_stats(const char *label, const stats_t *s) {
  if (s->n == 0)
    printf("%-18s (no samples)\n", label);
  else
    printf("%-18s p50 %.3f  p99 %.3f  p99.9 %.3f  mean %.3f  max %.3f  (ms, %zu samples)\n", label,
           s->p50, s->p99, s->p999, s->mean, s->max, s->n);
}

void report(bench_t *b) {
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
  const char *api = c->api_hiredis                                  ? "hiredis"
                    : c->mode == MODE_CONTENTION || c->api_blocking ? "blocking"
                    : c->mode == MODE_LATENCY && !c->api_async      ? "blocking"
                                                                    : "async";

  if (c->json) {
    printf("{\"mode\":\"%s\",\"api\":\"%s\",\"N\":%d,\"quorum\":%d,\"C\":%d,", mode_names[c->mode],
           api, b->n_nodes, quorum, conc);
    printf("\"primitive\":\"%s\",", primitive_names[c->primitive]);
    if (c->primitive == PRIMITIVE_SEMAPHORE)
      printf("\"limit\":%u,", c->sem_limit);
    printf("\"started_servers\":%s,\"quarantine\":%s,\"fencing\":%s,\"tls\":%s,\"stats\":%s,",
           c->start_n > 0 ? "true" : "false", b->quarantine ? "true" : "false",
           c->fencing ? "true" : "false", b->tls ? "true" : "false",
           c->no_stats ? "false" : "true");
    printf("\"duration\":%.3f,\"warmup\":%.3f,\"ttl_ms\":%u,", window, c->warmup_s, c->ttl_ms);
    printf("\"request_timeout_ms\":%u,\"retry\":",
           c->request_timeout_ms ? c->request_timeout_ms : 100);
    if (c->retry_set)
      printf("{\"count\":%d,\"delay_ms\":%u,\"jitter_ms\":%u},", c->retry_count, c->retry_delay_ms,
             c->retry_jitter_ms);
    else
      printf("\"default\",");
    printf("\"cycles\":%lu,\"cycles_per_s\":%.1f,\"latency_unit\":\"ms\",", cycles, per_s);
    json_stats("acquire", &acq, 1);
    json_stats("cycle", &cyc, 1);
    printf("\"client_cpu_us_per_cycle\":%.2f,", client_us);
    /* Of it, in the kernel (writes and reads, waking the servers, being
     * woken), and the context switches that go with blocking. */
    printf("\"client_sys_us_per_cycle\":%.3f,\"client_switches_per_cycle\":%.4f,",
           cycles > 0 ? (double)(b->sys1 - b->sys0) / cycles : 0,
           cycles > 0 ? (double)(b->switches1 - b->switches0) / cycles : 0);
    if (have_srv)
      printf("\"server_cpu_us_per_cycle\":%.2f,", server_us);
    else
      printf("\"server_cpu_us_per_cycle\":null,");
    printf("\"errors\":%lu,\"lock_errors\":%lu,\"unlock_errors\":%lu,\"errors_by_code\":{",
           lock_err + unlock_err, lock_err, unlock_err);
    int first = 1;
    for (int i = 0; i < N_CODES; i++) {
      unsigned long n =
          atomic_load(&b->lock_errors.by_code[i]) + atomic_load(&b->unlock_errors.by_code[i]);
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
    printf("primitive: read-write lock, %s holds, one per slot\n", primitive_names[c->primitive]);
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

/* Log-spaced histogram, 40 buckets per decade from 1 µs: "center_ms count". */
int write_hist(const char *path, samples_t *s, const char *title) {
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

/* --ab-node: side B (--ab-node's masters) against side A (--node's). */
static void report_ab_nodes(const bench_t *b, const ab_result_t *r) {
  const double rate_ratio = r->rate[0] > 0 ? r->rate[1] / r->rate[0] : 0;
  const double cpu_ratio = r->cpu[0] > 0 ? r->cpu[1] / r->cpu[0] : 0;
  if (b->cfg->json) {
    printf("{\"mode\":\"ab-node\",\"N\":%d,\"C\":%d,\"segment_s\":%.2f,"
           "\"segments_per_side\":%d,",
           b->n_nodes, b->cfg->concurrency, r->segment_s, r->per_side);
    for (int k = 0; k < 2; k++)
      printf("\"%s\":{\"cycles_per_s\":%.1f,\"client_cpu_us_per_cycle\":%.3f},", k ? "b" : "a",
             r->rate[k], r->cpu[k]);
    printf("\"rate_ratio\":%.4f,\"pair_median_rate_ratio\":%.4f,\"cpu_ratio\":%.4f,"
           "\"pair_median_cpu_ratio\":%.4f,\"errors\":%lu,\"library_warnings\":%lu}\n",
           rate_ratio, r->pair_median, cpu_ratio, r->cpu_pair_median, r->errors,
           atomic_load(&log_warnings));
  } else {
    printf("A (--node)     %10.0f cycles/s  %7.2f us client CPU/cycle\n", r->rate[0], r->cpu[0]);
    printf("B (--ab-node)  %10.0f cycles/s  %7.2f us client CPU/cycle\n", r->rate[1], r->cpu[1]);
    printf("B / A          cycles/s %.3f (pair median %.3f), client CPU per cycle %.3f (pair "
           "median %.3f); %d x %.1f s per side, ABBA; %lu errors\n",
           rate_ratio, r->pair_median, cpu_ratio, r->cpu_pair_median, r->per_side, r->segment_s,
           r->errors);
  }
}

void report_ab(const bench_t *b, const ab_result_t *r) {
  if (b->cfg->n_ab_nodes > 0) {
    report_ab_nodes(b, r);
    return;
  }
  const double throughput_cost = r->rate[0] > 0 ? (r->rate[1] / r->rate[0] - 1) * 100 : 0;
  const double cpu_cost = r->cpu[1] > 0 ? (r->cpu[0] / r->cpu[1] - 1) * 100 : 0;
  if (b->cfg->json) {
    printf("{\"mode\":\"ab-stats\",\"N\":%d,\"C\":%d,\"segment_s\":%.2f,"
           "\"segments_per_side\":%d,",
           b->n_nodes, b->cfg->concurrency, r->segment_s, r->per_side);
    printf("\"on\":{\"cycles_per_s\":%.1f,\"client_cpu_us_per_cycle\":%.3f},", r->rate[0],
           r->cpu[0]);
    printf("\"off\":{\"cycles_per_s\":%.1f,\"client_cpu_us_per_cycle\":%.3f},", r->rate[1],
           r->cpu[1]);
    printf("\"throughput_cost_pct\":%.2f,\"pair_median_cost_pct\":%.2f,"
           "\"cpu_cost_pct\":%.2f,\"errors\":%lu}\n",
           throughput_cost, (r->pair_median - 1) * 100, cpu_cost, r->errors);
  } else {
    printf("stats on   %10.0f cycles/s  %7.2f us client CPU/cycle\n", r->rate[0], r->cpu[0]);
    printf("stats off  %10.0f cycles/s  %7.2f us client CPU/cycle\n", r->rate[1], r->cpu[1]);
    printf("cost       %9.2f%% throughput (pair median %.2f%%), %.2f%% client CPU per cycle;"
           " %d x %.1f s per side, ABBA; %lu errors\n",
           throughput_cost, (r->pair_median - 1) * 100, cpu_cost, r->per_side, r->segment_s,
           r->errors);
  }
}

void report_ab_api(const bench_t *b, const ab_api_result_t *r) {
  const config_t *c = b->cfg;
  int latency = c->mode == MODE_LATENCY;
  const char *name[2] = {latency ? "hiredis" : "async", "blocking"};
  int conc[2] = {latency ? 1 : c->concurrency, latency ? 1 : c->threads};
  double ratio = r->rate[0] > 0 ? r->rate[1] / r->rate[0] : 0;
  double p50_ratio = latency && r->acq[0].p50 > 0 ? r->acq[1].p50 / r->acq[0].p50 : 0;
  if (c->json) {
    printf("{\"mode\":\"ab-api\",\"bench_mode\":\"%s\",\"N\":%d,\"segment_s\":%.2f,"
           "\"segments_per_side\":%d,",
           mode_names[c->mode], b->n_nodes, r->segment_s, r->per_side);
    for (int k = 0; k < 2; k++) {
      printf("\"%s\":{\"C\":%d,\"cycles_per_s\":%.1f,\"client_cpu_us_per_cycle\":%.3f,"
             "\"context_switches_per_cycle\":%.3f",
             name[k], conc[k], r->rate[k], r->cpu[k], r->switches[k]);
      if (latency) {
        printf(",");
        json_stats("acquire", &r->acq[k], 0);
      }
      printf("},");
    }
    printf("\"rate_ratio\":%.4f,\"pair_median_rate_ratio\":%.4f,", ratio, r->pair_median);
    if (latency)
      printf("\"acquire_p50_ratio\":%.4f,", p50_ratio);
    printf("\"errors\":%lu}\n", r->errors);
    return;
  }
  for (int k = 0; k < 2; k++) {
    printf("%-9s C=%-4d %10.0f cycles/s  %7.2f us client CPU/cycle  %5.2f switches/cycle", name[k],
           conc[k], r->rate[k], r->cpu[k], r->switches[k]);
    if (latency)
      printf("  acquire p50 %.4f ms p99 %.4f ms", r->acq[k].p50, r->acq[k].p99);
    printf("\n");
  }
  printf("blocking / %s: %.3f x cycles/s (pair median %.3f)", name[0], ratio, r->pair_median);
  if (latency)
    printf(", %.3f x acquire p50", p50_ratio);
  printf("; %d x %.1f s per side, ABBA; %lu errors\n", r->per_side, r->segment_s, r->errors);
}
