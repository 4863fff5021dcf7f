/* bench_stats.h: the figures redlock-bench measures: latency samples
 * (preallocated, stored with one atomic increment so that recording costs
 * no malloc and no lock in the measured path), their percentiles, the
 * median of a series, and error counts by code.  No I/O and no Redis. */
#ifndef REDLOCK_BENCH_STATS_H
#define REDLOCK_BENCH_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define N_CODES 16 /* -REDLOCK_E* codes are 1..11 */

/* ---- latency samples -------------------------------------------------------------
 * Preallocated; a sample is stored with one atomic increment (no malloc), in
 * nanoseconds saturated at ~4.29 s. */

typedef struct {
  uint32_t *v;
  size_t cap;
  atomic_size_t n;
} samples_t;

/* 0, or -1 when out of memory.  The pages are touched now, not during the
 * measurement. */
int samples_init(samples_t *s, size_t cap);
/* Any thread. */
void samples_add(samples_t *s, uint64_t ns);
size_t samples_count(samples_t *s);
/* Samples that did not fit (the figures leave them out). */
size_t samples_dropped(samples_t *s);

typedef struct {
  size_t n;
  double p50, p99, p999, mean, max; /* ms */
} stats_t;

/* The percentiles (nearest rank), mean and max, in ms.  Sorts the samples
 * in place (write_hist relies on it). */
stats_t samples_stats(samples_t *s);

/* The lower median of v[0..n) (sorted in place); 0 when n is 0. */
double median_double(double *v, size_t n);

/* ---- error counts ------------------------------------------------------------------ */

typedef struct {
  atomic_ulong by_code[N_CODES]; /* index -code; 0 = unknown */
} errors_t;

/* Any thread. */
void errors_add(errors_t *e, int code);
unsigned long errors_total(errors_t *e);

#endif
