/* fault_timebase.h: timers libuv refuses, for the engine's unit tests.  The
 * engine's timers go through the client's timebase; this one is put in its
 * place and forwards to it, except that the next inits or starts of any
 * timer but the client's round deadline and the connections' own timers
 * fail, as libuv's calls can (uv_timer_init: UV_ENOMEM, uv_timer_start:
 * UV_EINVAL).  The engine's reaction to those failures is the point: the
 * deadline timer is spared so that rounds still end (its starts fail only
 * when fail_deadline_starts says so), and a link's timer (the notifier's
 * subscribers run theirs on the same timebase) is link.c's own concern,
 * tested in test_link.c. */
#ifndef REDLOCK_TEST_FAULT_TIMEBASE_H
#define REDLOCK_TEST_FAULT_TIMEBASE_H

#include "engine_fixture.h"

/* How many of the next timer calls fail; each failure takes one off, so a
 * test reads 0 once they have all been met. */
typedef struct {
  unsigned fail_inits;           /* tb_timer_init */
  unsigned fail_starts;          /* tb_timer_start */
  unsigned fail_deadline_starts; /* tb_timer_start of the client's round deadline */
} timer_faults_t;

/* Puts the faulty timebase in place of the client's (every count 0) and
 * returns the counts, for the test to set and read (one client at a time;
 * installing it again on the same client resets the counts). */
timer_faults_t *fault_timebase_install(engine_fx_t *fx);

#endif
