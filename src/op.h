/* op.h: a queued call.  Every call the loop runs (lock, extend, release,
 * watch, an election's start and resignation, the close) is an op: a header
 * (op_t) embedded in its kind's struct, handed from the caller's thread to
 * the loop through the client's submit queue. */
#ifndef REDLOCK_OP_H
#define REDLOCK_OP_H

#include <stddef.h>
#include <stdlib.h>
#include <uv.h>

#include "list.h"

struct engine;

/* What a queued call is; each kind has its own struct embedding op_t (the
 * module that owns the kind makes and frees it):
 *   OP_LOCK, OP_EXTEND, OP_UNLOCK, OP_WATCH: lock.h (op_acquire_t,
 *     op_extend_t, op_release_t, op_watch_t), made by lock.c's constructors;
 *   OP_CLOSE: the bare op_t in struct redlock (client.c), no fields of its own;
 *   OP_ELECT, OP_RESIGN: election.c's own, inside its election handle. */
typedef enum {
  OP_LOCK = 1,
  OP_EXTEND,
  OP_UNLOCK,
  OP_WATCH,
  OP_CLOSE,
  OP_ELECT,  /* election.c: a new election handle for the loop */
  OP_RESIGN, /* election.c: its resignation */
} op_kind_t;

/* A blocking caller's wait (calls.c): the loop posts `sem` once per call,
 * at the end of the loop turn in which the call's callback ran (see
 * client_defer_wake). */
typedef struct sync_waiter {
  list_node_t link; /* loop: client->wakes */
  uv_sem_t sem;
} sync_waiter_t;

struct op;
/* What each kind of op does: the loop runs it (dispatch), ends it unstarted
 * with a status to its callback (fail: the close, a parked call), or frees
 * it (refused at submission, or ended). */
typedef struct op_ops {
  void (*dispatch)(struct op *op);
  void (*fail)(struct op *op, int status);
  void (*free)(struct op *op);
} op_ops_t;

/* The header every queued call starts with: what the submit queue, the
 * parked list and the in-flight list need.  The kind's constructor sets
 * `kind` and `engine` once; `link` belongs to whichever list holds the op. */
typedef struct op {
  list_node_t link;      /* mutex: the submit queue (client.c); then loop: client.c's parked
                          * list or lock.c's in-flight list */
  op_kind_t kind;        /* const: which struct embeds this header */
  const op_ops_t *ops;   /* const: what it does */
  struct engine *engine; /* const */
  uv_thread_t thread;    /* with has_thread, client.c at submission: the calling thread, whose
                          * rounds redlock_last_votes keeps (ops made on the loop: none) */
  int has_thread;
} op_t;

/* The struct of kind `k` that embeds `op` as its member `member`: checked,
 * because reading an op as another kind's struct would be a memory error.  A
 * mismatch is a bug of the library: abort rather than corrupt memory. */
#define OP_AS(type, op, k, member) ((type *)op_as_((op), (k), offsetof(type, member)))
static inline void *op_as_(op_t *op, op_kind_t kind, size_t offset) {
  if (__builtin_expect(op->kind != kind, 0))
    abort();
  return (char *)op - offset;
}

#endif
