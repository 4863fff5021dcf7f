/* torture_proof.h: the scripted step of the tests of the test (torture
 * --mutate-*, and --proof-step for its control run).  A randomized run
 * breaks exclusion only when its schedule happens to line a holder up with
 * a fault, which a loaded machine can make miss; the scripted step instead
 * builds, before the workers start, the one schedule in which the mutation
 * MUST give two holders at once, as a pseudo-worker (its own history,
 * "proof.hist", with the workers' record format, torture_common.h) whose
 * records the checker reads like any worker's:
 *  - overhold (--mutate-overhold-ms): for each group of the run's primitive,
 *    holders H take r0 / every permit of s0 / a write hold of rw0 / the term
 *    of e0 and stop renewing (a term: resign); a second client G waits to
 *    be granted the same name; the H go on acting until after G's grant and
 *    record so (the mutation: a holder acting past its validity), so every
 *    check must fire: lock overlap, semaphore limit, read-write exclusion,
 *    two leaders;
 *  - failover (--failover or --cluster with --mutate-no-quarantine): H locks
 *    r0 while the others' keys are held so that its grant rests on one
 *    server whose replica is cut off, that server fails over to its replica
 *    lacking H's key, the holds are released, and G is then granted r0
 *    while H's validity (PROOF_TTL_MS) is still positive: without the
 *    quarantine G must win, and the checker must report the overlap; with
 *    it (--proof-step alone, the control) G must be refused until H's
 *    validity ends.
 * This module is the clients' side (the library, the records); the faults
 * are the driver's (torture.c). */
#ifndef TORTURE_PROOF_H
#define TORTURE_PROOF_H

#include <stdint.h>

#include "redlock.h"
#include "torture_common.h"

/* H's and G's ttl (and max TTL) in the failover step: long enough that G's
 * grant, after a failover and a fresh client's connects, comes within H's
 * validity on any load, short enough for the control run to wait out. */
#define PROOF_TTL_MS 5000u
/* How long a step waits for a grant it needs (H's first grant; G's under
 * the overhold mutation): past it the step reports that it failed. */
#define PROOF_WAIT_MS 20000u
/* The most permits of a semaphore the overhold step holds at once. */
#define TORTURE_SEM_LIMIT_MAX 8u

typedef struct {
  const char *const *nodes; /* the workers' node URIs */
  int n_nodes;
  const char *tls_ca; /* rediss:// masters: the CA to trust, or NULL */
  torture_timing_t timing;
} tp_config_t;

/* Opens the pseudo-worker's history in run_dir as worker wid (and its
 * client log).  0, or -1 with a message. */
int tp_begin(const char *run_dir, int wid, const tp_config_t *cfg);
/* Writes its summary line and closes.  The driver reads the history from
 * tp_history_path() like a worker's. */
void tp_end(void);
const char *tp_history_path(void);

/* One client of the step: quarantine on or off, with max TTL max_ttl_ms.
 * NULL with an F record on failure. */
redlock_t *tp_open(int quarantine, unsigned max_ttl_ms);

/* One grant of a lock (r<i>) that the step made: what it knows of it. */
typedef struct {
  redlock_lock_t *lock;
  int tid;
  unsigned seq;
  uint64_t start, grant, ve;
} tp_grant_t;

/* redlock_trylock of res with ttl, tried again until granted or
 * deadline_ns; a grant is recorded (G) as thread tid's.  0 when granted, else
 * the last return code. */
int tp_lock_until(redlock_t *c, const char *res, unsigned ttl, uint64_t deadline_ns, int tid,
                  tp_grant_t *g);
/* The holder stops: U at now (read before the unlock), then the unlock. */
void tp_release(redlock_t *c, tp_grant_t *g);
/* An F record and the same line on stdout: the step could not build its
 * schedule (the run then fails without the violation the test expects). */
void tp_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The overhold step for the run's primitive (PRIM_*) on two fresh clients
 * with the workers' ttl and max TTL.  Returns the number of groups in which
 * it built two holders at once. */
int tp_overhold(int primitive, unsigned sem_limit, unsigned ttl_ms, unsigned max_ttl_ms);

#endif
