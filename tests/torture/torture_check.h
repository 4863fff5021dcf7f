/* torture_check.h: the checker of the torture test, as a pure module: it is
 * given the records the workers wrote (torture_common.h has their format)
 * and how each worker process ended, and it finds the violations.  No I/O,
 * no libuv, no Redis: the driver (torture.c) reads the history files and
 * prints what this returns, and test_torture_check.c feeds it hand-made
 * histories.  The checks (torture.c's header says why each holds):
 *  1. mutual exclusion (locks) / one leader at a time (elections);
 *  2. fencing tokens (terms) rise in grant order, and above every token
 *     seen before the call started;
 *     semaphores: never more than the limit of permits at one instant;
 *     read-write locks: no write overlaps any other hold, write tokens rise;
 *  3. every call returned within its documented bound + slack;
 *  4. every worker exited 0 after writing its summary;
 *  5. progress: every name in use was granted. */
#ifndef TORTURE_CHECK_H
#define TORTURE_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TC_MAX_WORKERS 32
#define TC_MAX_RESOURCES 64
#define TC_N_CALL_KINDS 12
#define TC_N_RC 13 /* return codes 0 .. -11, and "other" */

/* What a grant is of (the first letter of its resource): names of
 * different groups are independent. */
enum { GRP_LOCK, GRP_SEM, GRP_RW, GRP_ELECT, GRP_N };
extern const char *const tc_grp_prefix[GRP_N];
extern const char *const tc_grp_title[GRP_N];
extern const char *const tc_call_kinds[TC_N_CALL_KINDS];

typedef struct {
  int workers, threads, resources;
  int primitive;      /* PRIM_*: which groups must make progress */
  unsigned sem_limit; /* permits of a semaphore at one instant */
  unsigned slack_ms;  /* allowed beyond a call's documented bound */
  uint64_t t0_ns;     /* times in the report are relative to it */
} tc_config_t;

/* A worker's S record. */
typedef struct {
  int present;
  long rss_warm, rss_end;
  unsigned stall_ms;
  uint64_t calls, grants;
  long heap_warm, heap_late, heap_max;
  uint64_t replayed;
} tc_worker_summary_t;

/* What tc_check found besides the violations, for the driver's summary. */
typedef struct {
  size_t grants;
  unsigned nonempty, extended; /* grants with a non-empty window, extended ones */
  unsigned grants_per_res[GRP_N][TC_MAX_RESOURCES];
  unsigned nonempty_per_res[GRP_N][TC_MAX_RESOURCES];
  unsigned sem_peak[TC_MAX_RESOURCES];   /* most permits held at one instant */
  unsigned rw_writes[TC_MAX_RESOURCES];  /* write holds among the rw grants */
  unsigned terms_lost[TC_MAX_RESOURCES]; /* terms ended by on_lost, not a resign */
  unsigned rc_counts[TC_N_CALL_KINDS][TC_N_RC];
  int worst_kind;  /* the call slowest relative to its bound; -1: none */
  double worst_ms; /* how long it took */
  uint64_t worst_bound_ms;
  double worst_over; /* ms beyond its bound */
  tc_worker_summary_t workers[TC_MAX_WORKERS];
} tc_stats_t;

typedef struct tc_history tc_history_t;

/* NULL when out of memory. */
tc_history_t *tc_new(const tc_config_t *cfg);
void tc_free(tc_history_t *h);

/* One record (a line without its newline) of worker `worker`'s history. */
void tc_add_record(tc_history_t *h, int worker, const char *line);
/* The worker left no history (where it should have been, for the report). */
void tc_no_history(tc_history_t *h, int worker, const char *where);
/* How the worker process ended: its waitpid status, and whether the driver
 * had to kill it (a hang).  A worker never reported counts as exited 0. */
void tc_worker_exit(tc_history_t *h, int worker, pid_t pid, int wait_status, int killed);

/* Runs every check once the histories are in.  Returns the number of
 * violations, or -1 when out of memory. */
int tc_check(tc_history_t *h);

unsigned tc_violations(const tc_history_t *h);
/* The report of the violations, as the driver prints it: one "VIOLATION: "
 * line each, followed by the offending records.  Never NULL. */
const char *tc_report(const tc_history_t *h);
const tc_stats_t *tc_stats(const tc_history_t *h);

#endif
