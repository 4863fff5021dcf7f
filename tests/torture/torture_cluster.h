/* torture_cluster.h: the torture driver's cluster voter (torture --cluster):
 * a Redis Cluster of 3 primaries with a replica each, started on loopback by
 * tests/support/cluster_harness.h, and the execution of its faults
 * (torture_schedule.h: F_RESHARD, F_CLUSTER_FAILOVER, F_PRIMARY_KILL, a
 * replica cut before a kill, and the instant classic faults sent to a
 * primary).  The workers reach the nodes directly: a cluster redirects
 * (MOVED, ASK) to its nodes' real addresses, which a proxy would not
 * rewrite. */
#ifndef TORTURE_CLUSTER_H
#define TORTURE_CLUSTER_H

#include "torture_schedule.h"

/* What the driver's fault log and warnings go through (torture.c). */
typedef void (*tcl_log_fn)(const char *fmt, ...);

/* Counts for the summary; written by tcl_execute and tcl_heal only. */
typedef struct {
  unsigned reshards, reshards_failed, slots_moved;
  unsigned lock_slot_moves;       /* reshards that moved the slot of a lock key */
  unsigned failovers;             /* graceful ones */
  unsigned kills, takeovers;      /* takeovers: kills after a replica cut, promoted at once */
  unsigned lacking, lacking_keys; /* kills whose promoted replica lacked lock keys */
  unsigned skipped;               /* faults not injected (the reason is in the fault log) */
  unsigned warnings;              /* faults that failed to inject */
} tcl_stats_t;

/* Starts the cluster and waits until it is ok; 0, or -1 with a message on
 * stderr (nothing left running).  log is kept for every later call. */
int tcl_start(tcl_log_fn log, int resources);
/* "redis-cluster://..." with every node as a seed. */
const char *tcl_uri(void);
/* Executes one event whose master is TORTURE_CLUSTER_VOTER. */
void tcl_execute(const event_t *e);
/* Ends whatever is in force: waits for a reshard, resumes a cut replica,
 * restarts a killed primary. */
void tcl_heal(void);
/* Stops every node by PID and removes the cluster's directory. */
void tcl_stop(void);
const tcl_stats_t *tcl_stats(void);

#endif
