/* torture_schedule.c: the torture driver's seeded fault schedule (see
 * torture_schedule.h).  No I/O but the out-of-memory exit. */
#define _GNU_SOURCE /* clock_gettime in torture_common.h under -std=c11 */
#include "torture_schedule.h"

#include <stdio.h>
#include <stdlib.h>

const char *const fault_names[F_N_KINDS] = {"kill",         "sigstop",         "iptables",
                                            "client-pause", "debug-sleep",     "proxy-delay",
                                            "proxy-stall",  "proxy-blackhole", "proxy-refuse",
                                            "script-flush", "client-kill",     "client-kill-pubsub",
                                            "proxy-reset"};

static void push(schedule_t *s, uint64_t at, int master, int kind, int end, unsigned param,
                 int window) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->ev = realloc(s->ev, s->cap * sizeof *s->ev);
    if (s->ev == NULL) {
      fprintf(stderr, "torture: out of memory\n");
      exit(2);
    }
  }
  s->ev[s->n] = (event_t){at, (unsigned)s->n, master, kind, end, param, window};
  s->n++;
}

static int event_cmp(const void *a, const void *b) {
  const event_t *x = a, *y = b;
  if (x->at_ms != y->at_ms)
    return x->at_ms < y->at_ms ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* A persistent fault's duration range (ms) and its parameter's (proxy
 * delay: the added latency, ms; {0, 0}: none). */
static const struct {
  unsigned lo, hi, param_lo, param_hi;
} fault_ranges[F_N_PERSISTENT] = {
    [F_KILL] = {0, 800, 0, 0}, /* time down */
    [F_SIGSTOP] = {100, 1500, 0, 0},
    [F_IPTABLES] = {200, 1500, 0, 0},
    [F_CLIENT_PAUSE] = {100, 1000, 0, 0},
    [F_DEBUG_SLEEP] = {100, 600, 0, 0},
    [F_PROXY_DELAY] = {500, 3000, 20, 250},
    [F_PROXY_STALL] = {100, 1500, 0, 0},
    [F_PROXY_BLACKHOLE] = {200, 1500, 0, 0},
    [F_PROXY_REFUSE] = {200, 1000, 0, 0},
};

/* A persistent fault's duration (ms) and parameter; the parameter is drawn
 * first (the schedule of a seed must not change). */
static unsigned fault_duration(uint64_t *rng, int kind, unsigned *param) {
  if (kind < 0 || kind >= F_N_PERSISTENT)
    kind = F_PROXY_REFUSE;
  *param =
      fault_ranges[kind].param_hi == 0
          ? 0
          : (unsigned)torture_range(rng, fault_ranges[kind].param_lo, fault_ranges[kind].param_hi);
  return (unsigned)torture_range(rng, fault_ranges[kind].lo, fault_ranges[kind].hi);
}

void make_schedule(schedule_t *s, uint64_t seed, unsigned duration_ms, int with_iptables,
                   unsigned max_ttl_ms, int end_faults) {
  uint64_t rng = seed ^ 0x746f727475726500ull;
  uint64_t busy_until[TORTURE_MASTERS] = {0};
  uint64_t t = 500;
  uint64_t t_final = duration_ms > 1000 ? duration_ms - 1000u : 0;
  uint64_t window_next = torture_range(&rng, 6000, 12000);
  static const int window_kinds[] = {F_SIGSTOP, F_IPTABLES, F_PROXY_BLACKHOLE, F_PROXY_STALL,
                                     F_CLIENT_PAUSE};
  static const int final_kinds[] = {F_SIGSTOP, F_IPTABLES, F_PROXY_BLACKHOLE, F_PROXY_STALL};
  while (t + 300 < duration_ms) {
    int free_m[TORTURE_MASTERS], n_free = 0;
    for (int m = 0; m < TORTURE_MASTERS; m++)
      if (busy_until[m] <= t)
        free_m[n_free++] = m;
    int busy = TORTURE_MASTERS - n_free;
    unsigned w = (unsigned)torture_range(&rng, 400, 1200);
    if (t >= window_next && busy < 3 && t + w <= t_final) {
      /* No-quorum window: 3 masters faulted at once for a short while. */
      for (int k = busy; k < 3; k++) {
        int pick = (int)torture_range(&rng, 0, (uint64_t)n_free - 1);
        int m = free_m[pick];
        free_m[pick] = free_m[--n_free];
        int kind;
        do
          kind = window_kinds[torture_range(&rng, 0, 4)];
        while (kind == F_IPTABLES && !with_iptables);
        push(s, t, m, kind, 0, w, 1);
        if (kind != F_CLIENT_PAUSE)
          push(s, t + w, m, kind, 1, w, 1);
        busy_until[m] = t + w;
      }
      s->windows++;
      window_next = t + torture_range(&rng, 10000, 18000);
      t += w + torture_range(&rng, 100, 400);
      continue;
    }
    unsigned r = (unsigned)torture_range(&rng, 0, 99);
    if (r < 30 && n_free > 0) {
      int m = free_m[torture_range(&rng, 0, (uint64_t)n_free - 1)];
      int kind = F_N_PERSISTENT + (int)torture_range(&rng, 0, F_N_KINDS - F_N_PERSISTENT - 1);
      push(s, t, m, kind, 0, 0, 0);
    } else if (busy < 2 && n_free > 0) {
      int m = free_m[torture_range(&rng, 0, (uint64_t)n_free - 1)];
      int kind;
      do
        kind = (int)torture_range(&rng, 0, F_N_PERSISTENT - 1);
      while (kind == F_IPTABLES && !with_iptables);
      unsigned param;
      unsigned dur = fault_duration(&rng, kind, &param);
      uint64_t busy_end = t + dur + (kind == F_KILL ? max_ttl_ms + 1000u + 500u : 0u);
      if (busy_end <= t_final) {
        push(s, t, m, kind, 0, kind == F_PROXY_DELAY ? param : dur, 0);
        /* CLIENT PAUSE and DEBUG SLEEP end by themselves; their end event
         * only collects the reply / marks the time. */
        push(s, t + dur, m, kind, 1, kind == F_PROXY_DELAY ? param : dur, 0);
        busy_until[m] = busy_end;
      }
    }
    t += torture_range(&rng, 150, 700);
  }
  /* The end of the run: at the instant the workers stop starting calls, two
   * masters stop answering.  Every earlier fault ended by t_final (see the
   * clipping above), so these two are the only ones. */
  for (int k = 0; k < (end_faults ? 2 : 0); k++) {
    int m;
    do
      m = (int)torture_range(&rng, 0, TORTURE_MASTERS - 1);
    while (busy_until[m] == UINT64_MAX);
    int kind;
    do
      kind = final_kinds[torture_range(&rng, 0, 3)];
    while (kind == F_IPTABLES && !with_iptables);
    push(s, duration_ms, m, kind, 0, 0, 2);
    busy_until[m] = UINT64_MAX;
  }
  qsort(s->ev, s->n, sizeof *s->ev, event_cmp);
}
