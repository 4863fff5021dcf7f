/* op.h: the common header of a queued call (op_t) and the table every kind
 * of call carries (op_ops_t): what the submit queue, the parked list and the
 * in-flight list need, and how the loop runs, fails and frees an op without
 * knowing its kind.  The kinds: lock.c's acquisition and its calls on a held
 * lock (extend, release, watch; lock.h), client_close.c's close, election.c's
 * start and resignation. */
#ifndef REDLOCK_OP_H
#define REDLOCK_OP_H

#include <stddef.h>
#include <stdlib.h>
#include <uv.h>

#include "util/list.h"
#include "util/status.h"

struct engine;
typedef struct op op_t;

/* What a kind of op does on the loop; one const table per kind, in the
 * module that owns the kind (which makes and frees its ops). */
typedef struct op_ops {
  const char *name; /* for logs: "lock", "extend", "release", ... */
  /* 1: an acquisition.  It waits (parked) for every master's first
   * connection attempt, which it would fail against; once the close has
   * begun, it is failed with REDLOCK_ECANCELED instead of run.  0: run as
   * soon as the loop takes it. */
  int acquires;
  /* Loop: runs the op taken from the submit queue or the parked list. */
  void (*dispatch)(op_t *op);
  /* Loop: ends an op that never started (close, parked): status to its
   * callback; the op is freed. */
  void (*fail)(op_t *op, status_t status);
  /* Frees an op that was refused at submission or has ended. */
  void (*free)(op_t *op);
} op_ops_t;

/* The header every queued call starts with.  The kind's constructor sets
 * `ops` and `client` once; `link` belongs to whichever list holds the op. */
struct op {
  list_node_t link;      /* mutex: the submit queue (client_loop.c); then loop: its parked
                          * list or lock.c's in-flight list */
  const op_ops_t *ops;   /* const: its kind: which struct embeds this header, what runs it */
  struct engine *engine; /* const: the engine it runs on */
  uv_thread_t thread;    /* with has_thread, client_loop.c at submission: the calling thread, whose
                          * rounds redlock_last_votes keeps (ops made on the loop: none) */
  int has_thread;
  int parked; /* loop, client_loop.c: `link` is in the parked list (an acquisition waiting for
               * the masters' first connection attempts); a cancel may take it out */
};

/* The struct of the kind whose table is `table` that embeds `op` as its
 * member `member`: checked, because reading an op as another kind's struct
 * would be a memory error.  A mismatch is a bug of the library: abort rather
 * than corrupt memory. */
#define OP_AS(type, op, table, member) ((type *)op_as_((op), (table), offsetof(type, member)))
static inline void *op_as_(op_t *op, const op_ops_t *ops, size_t offset) {
  if (__builtin_expect(op->ops != ops, 0))
    abort();
  return (char *)op - offset;
}

/* Frees an op of any kind (one refused at submission, or one that ended). */
static inline void op_free(op_t *op) { op->ops->free(op); }

/* A blocking caller's wait (calls.c): the loop posts `sem` once per call,
 * at the end of the loop turn in which the call's callback ran (see
 * client_defer_wake). */
typedef struct sync_waiter {
  list_node_t link; /* loop: the client's wakes */
  uv_sem_t sem;
} sync_waiter_t;

#endif
