/* bench_stats.c: latency samples, percentiles, medians and error counts
 * for redlock-bench (see bench_stats.h). */
#include "bench_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int samples_init(samples_t *s, size_t cap) {
  s->v = malloc(cap * sizeof *s->v);
  s->cap = cap;
  atomic_init(&s->n, 0);
  if (s->v == NULL)
    return -1;
  /* Touch the pages now, not during the measurement. */
  memset(s->v, 0, cap * sizeof *s->v);
  return 0;
}

void samples_add(samples_t *s, uint64_t ns) {
  size_t i = atomic_fetch_add_explicit(&s->n, 1, memory_order_relaxed);
  if (i < s->cap)
    s->v[i] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

size_t samples_count(samples_t *s) {
  size_t n = atomic_load(&s->n);
  return n < s->cap ? n : s->cap;
}

size_t samples_dropped(samples_t *s) {
  size_t n = atomic_load(&s->n);
  return n > s->cap ? n - s->cap : 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static double pct_ms(const uint32_t *v, size_t n, double p) {
  size_t rank = (size_t)ceil(p * (double)n);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return v[rank - 1] / 1e6;
}

stats_t samples_stats(samples_t *s) {
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

void errors_add(errors_t *e, int code) {
  int i = code < 0 && -code < N_CODES ? -code : 0;
  atomic_fetch_add_explicit(&e->by_code[i], 1, memory_order_relaxed);
}

unsigned long errors_total(errors_t *e) {
  unsigned long t = 0;
  for (int i = 0; i < N_CODES; i++)
    t += atomic_load(&e->by_code[i]);
  return t;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double median_double(double *v, size_t n) {
  if (n == 0)
    return 0;
  qsort(v, n, sizeof v[0], cmp_double);
  return v[(n - 1) / 2];
}
