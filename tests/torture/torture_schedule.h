/* torture_schedule.h: the torture driver's fault schedule, a pure
 * function of (seed, duration, whether iptables is usable): which fault
 * hits which master when, and for how long.  torture.c executes it. */
#ifndef TORTURE_SCHEDULE_H
#define TORTURE_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "torture_common.h"

/* Fault kinds: the persistent ones have a start and an end event, the
 * instant ones (from F_N_PERSISTENT on) only a start. */
enum {
  F_KILL,
  F_SIGSTOP,
  F_IPTABLES,
  F_CLIENT_PAUSE,
  F_DEBUG_SLEEP,
  F_PROXY_DELAY,
  F_PROXY_STALL,
  F_PROXY_BLACKHOLE,
  F_PROXY_REFUSE,
  F_N_PERSISTENT,
  F_SCRIPT_FLUSH = F_N_PERSISTENT,
  F_CLIENT_KILL,
  F_CLIENT_KILL_PUBSUB,
  F_PROXY_RESET,
  F_N_KINDS
};

extern const char *const fault_names[F_N_KINDS];

typedef struct {
  uint64_t at_ms; /* offset from t0 */
  unsigned order; /* creation order: a stable tie-break */
  int master, kind, end;
  unsigned param; /* duration (ms), or the proxy delay */
  int window;     /* part of a no-quorum window */
} event_t;

typedef struct {
  event_t *ev;
  size_t n, cap;
  unsigned windows;
} schedule_t;

/* The schedule is a pure function of (seed, duration, iptables usable): it
 * is simulated on its own virtual timeline, where a master counts as faulted
 * from a fault's start to its end, and a killed one until its restart
 * quarantine is surely over (restart + max TTL + 1 s of uptime rounding
 * + margin).  Every fault of the main part ends by duration - 1 s; then, at
 * the end (when the workers stop starting calls), two masters are made
 * unresponsive (SIGSTOP, a stalled or black-holed proxy, an iptables DROP)
 * and stay so until every worker has exited: the workers' last unlocks and
 * their redlock_close run with two masters hung, and must still return
 * within their bounds (end_faults 0, --no-end-faults: no such two).  Exits
 * with status 2 when out of memory. */
void make_schedule(schedule_t *s, uint64_t seed, unsigned duration_ms, int with_iptables,
                   unsigned max_ttl_ms, int end_faults);

#endif
