/* clock-count.c: an LD_PRELOAD shim that counts clock_gettime() calls per
 * clock and prints the counts to stderr when the program exits (a
 * benchmark tool, not part of the library; docs/performance.md, "Fewer clock
 * reads").  On this VM a vdso clock read costs tens of nanoseconds, so reads
 * per lock + unlock cycle are worth counting:
 *
 *   LD_PRELOAD=build/bench/libredlock-clock-count.so \
 *     build/bench/redlock-bench --mode throughput --start 5 --duration 3 --warmup 0 --json
 *
 * and divide the CLOCK_MONOTONIC (1) count by the run's "cycles". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define CLOCKS_COUNTED 16

/* The shim's own counters: it stands in for libc in a process of its own. */
static atomic_ulong calls[CLOCKS_COUNTED];

int clock_gettime(clockid_t id, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (real == NULL)
    *(void **)&real = dlsym(RTLD_NEXT, "clock_gettime");
  if (id >= 0 && id < CLOCKS_COUNTED)
    atomic_fetch_add_explicit(&calls[id], 1, memory_order_relaxed);
  return real(id, ts);
}

__attribute__((destructor)) static void report(void) {
  for (int id = 0; id < CLOCKS_COUNTED; id++)
    if (atomic_load(&calls[id]) > 0)
      fprintf(stderr, "clock-count: clock %d: %lu clock_gettime calls\n", id,
              atomic_load(&calls[id]));
}
