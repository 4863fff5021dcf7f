/* fake_clock.h: the stepped clock and the timers of the engine's unit
 * tests, as a timebase (timebase.h).  The client is handed fake_timebase()
 * (client_open_for_test), and every module reads time and runs its timers
 * through it, so a timer fires only when the test steps the clock past its
 * due time, in due order; no linker trick takes libuv over.  Everything else
 * of the loop is real: the client's wake-up (uv_async_t) and handle closes
 * run when the test pumps the loop (one non-blocking turn at a time). */
#ifndef REDLOCK_TEST_FAKE_CLOCK_H
#define REDLOCK_TEST_FAKE_CLOCK_H

#include <stdint.h>
#include <uv.h>

#include "util/timebase.h"

/* Starts the clock at start_ns on `loop` (no timer pending). */
void fake_clock_init(uv_loop_t *loop, uint64_t start_ns);
/* The stepped clock as a timebase (timebase.h): what the engine and the
 * modules below it are handed in the unit tests. */
const timebase_t *fake_timebase(void);
/* Now, in nanoseconds: the client's clock. */
uint64_t fake_now_ns(void);
/* Runs what is due now: loop turns (wake-ups, closes) and timers due by now,
 * until neither has anything left. */
void fake_pump(void);
/* Steps the clock by ms, stopping at each timer due on the way to fire it
 * (with the clock at its due time) and pumping the loop after it. */
void fake_advance_ms(uint64_t ms);
void fake_advance_ns(uint64_t ns);
/* The same, firing the timers due on the way but running no loop turn: what
 * another thread hands the loop (a name lookup's answer) waits. */
void fake_advance_timers_only_ms(uint64_t ms);
/* Timers started and not yet fired, stopped or closed. */
unsigned fake_timers_pending(void);
/* In how many ns the earliest pending timer is due (0: due now; UINT64_MAX: none). */
uint64_t fake_next_due_in_ns(void);

#endif
