/* torture_schedule.c: the torture driver's seeded fault schedule (see
 * torture_schedule.h).  No I/O but the out-of-memory exit. */
#define _GNU_SOURCE /* clock_gettime in torture_common.h under -std=c11 */
#include "torture_schedule.h"

#include <stdio.h>
#include <stdlib.h>

const char *const fault_names[F_N_KINDS] = {
    "kill",         "sigstop",          "iptables",    "client-pause",
    "debug-sleep",  "proxy-delay",      "proxy-stall", "proxy-blackhole",
    "proxy-refuse", "script-flush",     "client-kill", "client-kill-pubsub",
    "proxy-reset",  "failover",         "replica-cut", "foreign-hold",
    "reshard",      "cluster-failover", "primary-kill"};

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

static void push_pick(schedule_t *s, uint64_t at, int kind, int end, unsigned param,
                      unsigned pick) {
  push(s, at, TORTURE_CLUSTER_VOTER, kind, end, param, 0);
  s->ev[s->n - 1].pick = pick;
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

/* The failover faults (SCHED_FAILOVER), drawn from their own generator so
 * that the classic part keeps its draws. */
enum { FO_WINDOW, FO_CUT_FAILOVER, FO_FAILOVER, FO_CUT, FO_N };
/* A failover window's foreign holds end this long after its failover. */
#define FO_RELEASE_MS 50u

typedef struct {
  uint64_t rng, next_at; /* the next one is due then */
  int type;              /* FO_*: what it will be */
} fo_plan_t;

static void fo_plan_next(fo_plan_t *f, uint64_t after) {
  unsigned pick = (unsigned)torture_range(&f->rng, 0, 99);
  f->type = pick < 60 ? FO_WINDOW : pick < 85 ? FO_CUT_FAILOVER : pick < 95 ? FO_FAILOVER : FO_CUT;
  f->next_at = after + torture_range(&f->rng, 1500, 4000);
}

/* Tries to schedule the planned failover fault at t (with the masters free
 * at t); returns the instant the next one is planned from (its failover, or
 * the end of a cut alone), or 0: not now, try again later. */
static uint64_t fo_try(schedule_t *s, fo_plan_t *f, uint64_t t, uint64_t t_final,
                       uint64_t *busy_until, const int *free_m, int n_free, unsigned max_ttl_ms) {
  int busy = TORTURE_MASTERS - n_free;
  /* The quarantine of the promoted replica: as a restart's (see kill). */
  uint64_t quarantine = (uint64_t)max_ttl_ms + 1000u + 500u;
  unsigned down = (unsigned)torture_range(&f->rng, 100, 800); /* the old master's */
  int pick[3], cand[TORTURE_MASTERS], n = n_free;
  for (int i = 0; i < n_free; i++)
    cand[i] = free_m[i];
  int want = f->type == FO_WINDOW ? 3 : 1;
  if (f->type == FO_WINDOW ? busy != 0 : busy >= 2 || n_free == 0)
    return 0;
  for (int k = 0; k < want; k++) {
    int i = (int)torture_range(&f->rng, 0, (uint64_t)n - 1);
    pick[k] = cand[i];
    cand[i] = cand[--n];
  }
  int m = pick[0];
  if (f->type == FO_WINDOW) {
    unsigned w = (unsigned)torture_range(&f->rng, 400, 1200);
    uint64_t at = t + w;
    if (at + down + quarantine > t_final)
      return 0;
    push(s, t, m, F_REPLICA_CUT, 0, w, 3);
    push(s, t, pick[1], F_FOREIGN_HOLD, 0, w, 3);
    push(s, t, pick[2], F_FOREIGN_HOLD, 0, w, 3);
    /* The failover, then the cut's end (a no-op: the failover resumed the
     * replica); the holds are released FO_RELEASE_MS later, when the
     * clients have reconnected to the promoted replica, and the release
     * wakes the waiters at once. */
    push(s, at, m, F_FAILOVER, 0, down, 3);
    push(s, at, m, F_REPLICA_CUT, 1, w, 3);
    push(s, at + FO_RELEASE_MS, pick[1], F_FOREIGN_HOLD, 1, w, 3);
    push(s, at + FO_RELEASE_MS, pick[2], F_FOREIGN_HOLD, 1, w, 3);
    push(s, at + down, m, F_FAILOVER, 1, down, 3);
    busy_until[m] = at + down + quarantine;
    busy_until[pick[1]] = busy_until[pick[2]] = at + FO_RELEASE_MS;
    s->fo_windows++;
    return at;
  }
  if (f->type == FO_CUT) {
    unsigned dur = (unsigned)torture_range(&f->rng, 100, 1500);
    if (t + dur > t_final)
      return 0;
    push(s, t, m, F_REPLICA_CUT, 0, dur, 0);
    push(s, t + dur, m, F_REPLICA_CUT, 1, dur, 0);
    busy_until[m] = t + dur;
    return t + dur;
  }
  unsigned cut = f->type == FO_CUT_FAILOVER ? (unsigned)torture_range(&f->rng, 200, 1000) : 0;
  uint64_t at = t + cut;
  if (at + down + quarantine > t_final)
    return 0;
  if (cut > 0)
    push(s, t, m, F_REPLICA_CUT, 0, cut, 0);
  push(s, at, m, F_FAILOVER, 0, down, 0);
  if (cut > 0)
    push(s, at, m, F_REPLICA_CUT, 1, cut, 0);
  push(s, at + down, m, F_FAILOVER, 1, down, 0);
  busy_until[m] = at + down + quarantine;
  return at;
}

/* SCHED_CLUSTER: keeps the classic events that apply (torture_schedule.h). */
static void keep_cluster_events(schedule_t *s) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) {
    const event_t *e = &s->ev[i];
    if (e->master < TORTURE_CLUSTER_VOTER ||
        (e->master == TORTURE_CLUSTER_VOTER && e->kind >= F_N_PERSISTENT && e->kind < F_N_CLASSIC &&
         e->kind != F_PROXY_RESET))
      s->ev[k++] = *e;
  }
  s->n = k;
}

/* A primary kill's end comes this long after the kill: the cluster marks
 * the primary failed after its node timeout (2 s, tests/support/
 * cluster_harness.c), then the replica's election takes up to some 2 s. */
#define CL_KILL_DOWN_MS 5000u
/* SCHED_CLUSTER_TAKEOVERS: a kill after a cut is taken over at once, so its
 * end (the old primary's restart) need not wait out a node timeout: more
 * takeovers fit in a run. */
#define CL_TAKEOVER_DOWN_MS 1000u
/* SCHED_CLUSTER_TAKEOVERS: masters 0 and 1 have no classic fault from this
 * long before a cut (reconnect backoffs after a fault reach 1 s) to this
 * long after its foreign hold is released (a hold of up to 250 ms, the
 * reconnects to the promoted replica): the grants during the cut must rest
 * on the cut primary and the other master, and the second holder must
 * reach the released master. */
#define CL_QUIET_BEFORE_MS 1000u
#define CL_QUIET_AFTER_MS 600u
/* A reshard's expected length, for the schedule: up to 800 slots
 * (torture_cluster.c's RESHARD_MAX_SLOTS) at 3 ms (Redis 7.0) to 11 ms
 * (Redis 8, Valkey) a slot; the next cluster fault waits for it, however
 * long it takes. */
#define CL_RESHARD_MS 5000u

/* SCHED_CLUSTER: the cluster's own faults, one at a time, until the last
 * one that fits before duration - 1 s. */
static void cluster_schedule(schedule_t *s, uint64_t seed, unsigned duration_ms,
                             unsigned max_ttl_ms, int takeovers_only) {
  uint64_t rng = seed ^ 0x636c757374657200ull;
  uint64_t t_final = duration_ms > 1000 ? duration_ms - 1000u : 0;
  /* A promoted primary's failover quarantine, as a restart's (see kill). */
  uint64_t quarantine = (uint64_t)max_ttl_ms + 1000u + 500u;
  uint64_t t = torture_range(&rng, 1000, 2500);
  for (;;) {
    unsigned what = (unsigned)torture_range(&rng, 0, 99);
    /* SCHED_CLUSTER_TAKEOVERS: the same draws, each one made a kill after a
     * cut (what in [70, 90)). */
    if (takeovers_only)
      what = 70u + what % 20u;
    unsigned pick = (unsigned)torture_range(&rng, 0, UINT32_MAX);
    uint64_t next;
    if (what < 45) {
      if (t + CL_RESHARD_MS > t_final)
        break;
      push_pick(s, t, F_RESHARD, 0, CL_RESHARD_MS, pick);
      push_pick(s, t + CL_RESHARD_MS, F_RESHARD, 1, CL_RESHARD_MS, pick);
      next = t + CL_RESHARD_MS;
    } else if (what < 70) {
      if (t + quarantine > t_final)
        break;
      push_pick(s, t, F_CLUSTER_FAILOVER, 0, 0, pick);
      next = t + quarantine;
    } else {
      /* Most kills follow a replica cut: the promoted replica then lacks
       * what the primary granted meanwhile. */
      unsigned cut = what < 90 ? (unsigned)torture_range(&rng, 300, 1000) : 0;
      /* SCHED_CLUSTER_TAKEOVERS: a cut longer than the max TTL, so that no
       * lock key the replica had before it still lives when it takes over
       * (one granted just before the cut, and released during it, would
       * refuse the second holder there): it is then without any, and a
       * second holder wins there at once. */
      if (takeovers_only)
        cut = max_ttl_ms + cut / 4u;
      uint64_t at = t + cut;
      unsigned down = takeovers_only ? CL_TAKEOVER_DOWN_MS : CL_KILL_DOWN_MS;
      if (at + down + quarantine > t_final)
        break;
      /* During the cut, the driver holds every lock key on one master (a
       * foreign hold), so that the grants meanwhile rest on the cut
       * primary and the other master; it lets go FO_RELEASE_MS after the
       * takeover: without the failover quarantine a second holder then
       * wins on the promoted replica and the released master. */
      int held = (int)((pick / 1024u) % TORTURE_CLUSTER_VOTER);
      if (cut > 0) {
        push_pick(s, t, F_REPLICA_CUT, 0, cut, pick);
        push(s, t, held, F_FOREIGN_HOLD, 0, cut, 3);
      }
      push_pick(s, at, F_PRIMARY_KILL, 0, down, pick);
      if (cut > 0) {
        push_pick(s, at, F_REPLICA_CUT, 1, cut, pick);
        push(s, at + FO_RELEASE_MS, held, F_FOREIGN_HOLD, 1, cut, 3);
        s->lossy_kills++;
      }
      push_pick(s, at + down, F_PRIMARY_KILL, 1, down, pick);
      next = at + down + quarantine;
    }
    t = next + torture_range(&rng, 300, 1500);
  }
}

/* SCHED_CLUSTER_TAKEOVERS: whether [from, to] meets the quiet time around a
 * cut of the cluster's schedule cl (its foreign holds: at the cut's start,
 * for the cut's length). */
static int near_cut(const schedule_t *cl, uint64_t from, uint64_t to) {
  for (size_t i = 0; i < cl->n; i++) {
    const event_t *e = &cl->ev[i];
    if (e->kind == F_FOREIGN_HOLD && !e->end && to + CL_QUIET_BEFORE_MS >= e->at_ms &&
        from <= e->at_ms + e->param + FO_RELEASE_MS + CL_QUIET_AFTER_MS)
      return 1;
  }
  return 0;
}

void make_schedule(schedule_t *s, uint64_t seed, unsigned duration_ms, int with_iptables,
                   unsigned max_ttl_ms, int end_faults, int flags) {
  uint64_t rng = seed ^ 0x746f727475726500ull;
  fo_plan_t fo = {.rng = seed ^ 0x6661696c6f766572ull};
  fo_plan_next(&fo, 1500);
  int no_kill = (flags & SCHED_NO_KILL) != 0;
  /* The cluster's own faults come from a generator of their own: drawn
   * first, so that with SCHED_CLUSTER_TAKEOVERS the classic faults keep
   * clear of their cuts (near_cut); appended at the end. */
  schedule_t cl = {0};
  int takeovers = (flags & SCHED_CLUSTER) && (flags & SCHED_CLUSTER_TAKEOVERS);
  if (flags & SCHED_CLUSTER)
    cluster_schedule(&cl, seed, duration_ms, max_ttl_ms, takeovers);
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
    /* A failover window waits for every master to be free: no persistent
     * fault starts meanwhile. */
    int fo_waiting = 0;
    if ((flags & SCHED_FAILOVER) && t >= fo.next_at) {
      uint64_t after = fo_try(s, &fo, t, t_final, busy_until, free_m, n_free, max_ttl_ms);
      if (after != 0) {
        fo_plan_next(&fo, after);
        t += torture_range(&fo.rng, 150, 700);
        continue;
      }
      fo_waiting = fo.type == FO_WINDOW;
    }
    unsigned w = (unsigned)torture_range(&rng, 400, 1200);
    if (t >= window_next && busy < 3 && t + w <= t_final && !fo_waiting &&
        !(takeovers && near_cut(&cl, t, t + w))) {
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
      int kind = F_N_PERSISTENT + (int)torture_range(&rng, 0, F_N_CLASSIC - F_N_PERSISTENT - 1);
      if (!(takeovers && near_cut(&cl, t, t)))
        push(s, t, m, kind, 0, 0, 0);
    } else if (busy < 2 && n_free > 0 && !fo_waiting) {
      int m = free_m[torture_range(&rng, 0, (uint64_t)n_free - 1)];
      int kind;
      do
        kind = (int)torture_range(&rng, 0, F_N_PERSISTENT - 1);
      while ((kind == F_IPTABLES && !with_iptables) || (kind == F_KILL && no_kill));
      unsigned param;
      unsigned dur = fault_duration(&rng, kind, &param);
      uint64_t busy_end = t + dur + (kind == F_KILL ? max_ttl_ms + 1000u + 500u : 0u);
      if (busy_end <= t_final && !(takeovers && near_cut(&cl, t, busy_end))) {
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
  if (flags & SCHED_CLUSTER) {
    keep_cluster_events(s);
    for (size_t i = 0; i < cl.n; i++) {
      const event_t *e = &cl.ev[i];
      push(s, e->at_ms, e->master, e->kind, e->end, e->param, e->window);
      s->ev[s->n - 1].pick = e->pick;
    }
    s->lossy_kills = cl.lossy_kills;
    free(cl.ev);
  }
  qsort(s->ev, s->n, sizeof *s->ev, event_cmp);
}
