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
  F_N_CLASSIC, /* the kinds of every run; the ones below only with SCHED_FAILOVER */
  /* Persistent: the master is SIGKILLed, its replica promoted (REPLICAOF NO
   * ONE) and put behind the master's proxy (fault_proxy_set_upstream); at
   * the end, param ms later, the old master is restarted empty as the new
   * master's replica: the two swap roles. */
  F_FAILOVER = F_N_CLASSIC,
  /* Persistent: the master's replica is SIGSTOPped and its link killed
   * (CLIENT KILL TYPE replica), so that it misses what the master writes
   * meanwhile; at the end SIGCONT (it resyncs), unless a failover at the
   * same instant promoted it first: then it is promoted lacking those keys. */
  F_REPLICA_CUT,
  /* Persistent: the driver, as another client that won only a minority,
   * takes every lock key r<i> on this master (SET NX PX, retried while the
   * key is held) and releases them at the end (compare and delete). */
  F_FOREIGN_HOLD,
  /* The cluster voter's faults (SCHED_CLUSTER; torture_cluster.c executes
   * them on the cluster, master index TORTURE_CLUSTER_VOTER).  Persistent:
   * `CLI --cluster reshard` moves the slot of a lock key r<pick % R> (and
   * every slot of its primary below it) to another primary as a child
   * process; the end waits for it. */
  F_RESHARD,
  /* Instant: CLUSTER FAILOVER on the replica of shard pick % 3 (graceful:
   * the two swap roles, no write lost). */
  F_CLUSTER_FAILOVER,
  /* Persistent: SIGKILL of shard pick % 3's primary; the cluster promotes
   * its replica by itself (after the node timeout); at the end the old
   * primary restarts empty and rejoins as the new one's replica.  Preceded
   * by a replica cut (F_REPLICA_CUT on the cluster) of that shard when the
   * promoted replica is to lack the writes of the cut. */
  F_PRIMARY_KILL,
  F_N_KINDS
};
/* The first of the cluster voter's own kinds. */
#define F_FIRST_CLUSTER F_RESHARD

/* With SCHED_CLUSTER, the voters are masters 0 and 1 (behind their proxies)
 * and a cluster, which takes this master index's place. */
#define TORTURE_CLUSTER_VOTER 2

extern const char *const fault_names[F_N_KINDS];

typedef struct {
  uint64_t at_ms; /* offset from t0 */
  unsigned order; /* creation order: a stable tie-break */
  int master, kind, end;
  unsigned param; /* duration (ms), or the proxy delay */
  int window;     /* 1: a no-quorum window, 2: the end of the run, 3: a failover window */
  unsigned pick;  /* the cluster's faults: a seeded choice (shard, resource, slots) */
} event_t;

typedef struct {
  event_t *ev;
  size_t n, cap;
  unsigned windows;     /* no-quorum windows */
  unsigned fo_windows;  /* failover windows (SCHED_FAILOVER) */
  unsigned lossy_kills; /* SCHED_CLUSTER: primary kills after a replica cut */
} schedule_t;

/* make_schedule's flags. */
enum {
  /* Failover faults too: failovers (some after a replica cut), replica cuts
   * alone, and failover windows: a replica cut on one master while the
   * driver holds every lock key on two others (F_FOREIGN_HOLD), so that the
   * locks granted meanwhile rest on the cut master and exactly two more; at
   * the window's end the cut master fails over to its replica, which lacks
   * them; the two holds are released 50 ms later (the clients have
   * reconnected to the promoted replica by then), waking the waiters.
   * Without the failover quarantine a second holder could then win on the
   * promoted replica and the two released masters while the first still
   * holds. */
  SCHED_FAILOVER = 1,
  /* No kill faults (the only other way keys are lost): with the quarantine
   * off, only a failover can then break mutual exclusion. */
  SCHED_NO_KILL = 2,
  /* A cluster in master TORTURE_CLUSTER_VOTER's place, masters 3 and 4
   * absent: the classic schedule of the seed is drawn as ever, then its
   * events on masters 3 and 4 are dropped, and so are those on the
   * cluster's index but the instant ones (script-flush, client-kill,
   * client-kill-pubsub: torture_cluster.c sends them to a primary).  The
   * cluster's own faults are drawn from a generator of their own, one at a
   * time (a reshard needs a cluster that agrees on its map): reshards,
   * graceful failovers, and primary kills (some after a replica cut, so
   * that the promoted replica lacks writes); each is followed by a pause
   * that covers the promoted primary's failover quarantine. */
  SCHED_CLUSTER = 4,
  /* With SCHED_CLUSTER (--takeovers): every one of the cluster's own faults
   * is a primary kill after a replica cut (a takeover by a replica lacking
   * the keys granted during the cut, under a foreign hold on one master),
   * the one fault whose lost keys only the failover quarantine covers.  The
   * cut outlasts the max TTL (no key of before it lives on the replica to
   * refuse a second holder), the old primary restarts 1 s after the kill
   * (no node timeout to wait out), and the classic faults of masters 0 and
   * 1 keep clear of the cuts (the grants and the second holder need them).
   * The test of the test (--cluster --mutate-no-quarantine) uses it: some 7
   * such takeovers in 50 s, rather than the 0 to 2 of a seed's mix, each a
   * chance of two holders; with the quarantine on, the run must pass. */
  SCHED_CLUSTER_TAKEOVERS = 8
};

/* The schedule is a pure function of (seed, duration, iptables usable): it
 * is simulated on its own virtual timeline, where a master counts as faulted
 * from a fault's start to its end, and a killed one until its restart
 * quarantine is surely over (restart + max TTL + 1 s of uptime rounding
 * + margin).  Every fault of the main part ends by duration - 1 s; then, at
 * the end (when the workers stop starting calls), two masters are made
 * unresponsive (SIGSTOP, a stalled or black-holed proxy, an iptables DROP)
 * and stay so until every worker has exited: the workers' last unlocks and
 * their redlock_close run with two masters hung, and must still return
 * within their bounds (end_faults 0, --no-end-faults: no such two).
 * flags: SCHED_*.  A failed-over master counts as faulted, like a killed
 * one, until its failover quarantine is surely over (failover + the old
 * master's time down + max TTL + 1.5 s), so that its old master is back as
 * its replica before the pair fails over again.  Without SCHED_FAILOVER the
 * schedule of a seed is what it always was.  Exits with status 2 when out
 * of memory. */
void make_schedule(schedule_t *s, uint64_t seed, unsigned duration_ms, int with_iptables,
                   unsigned max_ttl_ms, int end_faults, int flags);

#endif
