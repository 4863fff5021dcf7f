/* kind.h: the table of a kind of lock handle (lock_kind_ops_t).  lock.c runs
 * the same state machines (acquire, fence write-back, extend, watch,
 * release, close) for every kind; what differs between a plain lock, a
 * semaphore permit and a read or write hold (their keys, the commands of
 * each round, what a reply means, whom a release wakes) is here, one const
 * table per kind, in a file of its own: kind_mutex.c, kind_sem.c,
 * kind_rw.c.  An acquisition's table is set when its op is made (lock.c's
 * acquire_op_new: a plain lock; prims.c's prim_op_init: the others) and
 * handed to the lock at the grant (prim_t.ops, prims.h).
 *
 * The hooks marked "NULL:" are optional: a kind with nothing to do there
 * leaves them out, and lock.c does what the comment says instead. */
#ifndef REDLOCK_KIND_H
#define REDLOCK_KIND_H

#include <stddef.h>
#include <stdint.h>

#include "engine/round.h"
#include "util/stats_core.h"
#include "util/status.h"

struct op_acquire;
struct engine;
typedef struct engine engine_t;
struct redlock_lock;

/* Each *_round builder formats its command into a new round (round_new),
 * not sent yet: ST_OK with the round in *out, or ST_ENOMEM (*out NULL). */
typedef struct lock_kind_ops {
  const char *name; /* for logs: "lock", "semaphore", "read", "write" */
  /* Key layout (any thread, before the op is queued): fills op->keys and
   * its prim_t (and, for the primitives, their fence keys when op->fenced)
   * from `n` names: a lock's resources, or a primitive's one name, with
   * `limit` a semaphore's.  ST_OK or ST_ENOMEM. */
  status_t (*init)(struct op_acquire *op, const char *const *names, size_t n, uint32_t limit);
  /* The acquisition of the op's next attempt (a semaphore: its next slot). */
  status_t (*acquire_round)(struct op_acquire *op, round_decided_fn cb, round_t **out);
  /* A decided acquisition: a status that ends the attempt whatever the
   * outcome (ST_EINVAL: never retried), else ST_OK; may note state (a
   * writer's intent).  NULL: ST_OK. */
  status_t (*acquire_verdict)(struct op_acquire *op, const round_t *round);
  /* After a failed attempt: 1 when the next attempt follows at once (a
   * semaphore's pass goes on with its next slot), 0 when the attempt's
   * status stands.  NULL: 0. */
  int (*next_slot)(struct op_acquire *op, status_t status);
  /* The fencing write-back of the op's attempt (token: its decimal). */
  status_t (*fence_round)(struct op_acquire *op, const char *token, size_t token_len,
                          round_decided_fn cb, round_t **out);
  /* The extension of a held lock to ttl_ms (re-installs where it is gone
   * and the kind's acquisition would admit it). */
  status_t (*extend_round)(engine_t *engine, const struct redlock_lock *lock, uint32_t ttl_ms,
                           round_decided_fn cb, void *ctx, round_t **out);
  /* The release of a held lock, announced (PUBLISH to waiters), replayed to
   * every master that may hold it (cb may be NULL: nobody waits). */
  status_t (*release_round)(engine_t *engine, const struct redlock_lock *lock, round_decided_fn cb,
                            void *ctx, round_t **out);
  /* The clean-up of a failed attempt of the op: not announced, nobody waits. */
  status_t (*attempt_release_round)(struct op_acquire *op, round_t **out);
  /* The op ends with status (any), before its callback.  NULL: nothing. */
  void (*op_end)(struct op_acquire *op, status_t status);
  /* The delay before the op's next attempt, given the options' delay_ms.
   * NULL: delay_ms. */
  uint64_t (*retry_delay_ms)(const struct op_acquire *op, uint64_t delay_ms);
  int wake_mode;       /* whom one release wakes among the waiters (NOTIFY_WAKE_*) */
  int reentrant;       /* a lease of one key may be shared by reentrant holds (with the option) */
  stats_op_t stats_op; /* the `op` label of its acquisitions */
  stats_op_t stats_wait_op; /* the same, for a waiting acquisition (LOCK_MODE_WAIT) */
} lock_kind_ops_t;

/* The kinds. */
extern const lock_kind_ops_t kind_mutex;    /* redlock_lock & co (kind_mutex.c) */
extern const lock_kind_ops_t kind_sem;      /* a semaphore permit: one slot (kind_sem.c) */
extern const lock_kind_ops_t kind_rw_read;  /* a read hold (kind_rw.c) */
extern const lock_kind_ops_t kind_rw_write; /* a write hold (kind_rw.c) */

#endif
