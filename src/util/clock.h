/* clock.h: the monotonic clock every elapsed time and validity is measured
 * on.  Never the wall clock: a clock step must not stretch a lock. */
#ifndef REDLOCK_CLOCK_H
#define REDLOCK_CLOCK_H

#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC (the same clock as uv_hrtime()). */
uint64_t clock_now_ns(void);

#endif
