/* prims.h: coordination primitives on the lock engine (issue 11): counting
 * semaphore permits and read-write lock holds.  Each is a lock handle of
 * another kind.  This module owns, per kind, the key names, the scripts and
 * their arguments, and what their votes mean; lock.c runs the same state
 * machines (acquire, fence write-back, extend, watch, release, close) for
 * every kind and asks this module for the rounds.  docs/algorithm.md §14
 * describes the design, docs/safety.md §11 proves it.
 *
 * Semaphore "name" with limit L: L slots, each an ordinary Redlock mutex
 * (key prefix + name + ":sem:" + i).  A permit is one slot won by a quorum,
 * so at most L permits are valid at once wherever the masters' votes go.
 *
 * Read-write lock "name", per master: a writer key, a sorted set of readers
 * (score = expiry in the master's milliseconds) and a writer-intent key. */
#ifndef REDLOCK_PRIMS_H
#define REDLOCK_PRIMS_H

#include <stddef.h>
#include <stdint.h>

#include "names.h" /* FENCE_KEY_PREFIX, NOTIFY_CHANNEL_PREFIX */
#include "random.h"
#include "round.h"

struct op_acquire;
struct engine;
typedef struct engine engine_t;
struct redlock_lock;

typedef enum {
  LOCK_KIND_MUTEX = 0, /* redlock_lock & co: lock.c's own commands */
  LOCK_KIND_SEM,       /* a semaphore permit: one slot */
  LOCK_KIND_RW_READ,   /* a read hold */
  LOCK_KIND_RW_WRITE,  /* a write hold */
} lock_kind_t;

/* ---- key names: the one place they are spelled ---------------------------------
 * base = prefix + name + tag.  Semaphore: slot i = base + ":" + i (decimal),
 * limit = base + ":limit".  Read-write lock: base + ":write", ":read",
 * ":intent".  Release channel of either: NOTIFY_CHANNEL_PREFIX + base.
 * Fence counters: FENCE_KEY_PREFIX + the lock key (a permit: its slot; a
 * read-write lock: its writer key, shared by readers and writers). */
#define PRIM_SEM_TAG ":sem"
#define PRIM_SEM_SLOT_SEP ":"
#define PRIM_SEM_LIMIT_SUFFIX ":limit"
#define PRIM_RW_TAG ":rw"
#define PRIM_RW_WRITE_SUFFIX ":write"
#define PRIM_RW_READ_SUFFIX ":read"
#define PRIM_RW_INTENT_SUFFIX ":intent"

/* ---- script reason codes (refusals; also written in src/lua/<script>.lua) ------ */
#define PRIM_HELD 0          /* every acquire script: held by a writer / the slot */
#define PRIM_RW_READERS (-1) /* rw_write.lua: unexpired readers (intent set) */
#define PRIM_RW_INTENT (-1)  /* rw_read.lua: a writer waits */
/* sem_acquire.lua: -L, the limit L another client gave for the name. */

/* A waiting writer's intent lease: long enough to outlive one retry and a
 * slow round, short enough that a writer that died while waiting blocks new
 * readers only briefly.  Its lease is PRIM_RW_INTENT_TTL_MS plus two request
 * timeouts; the waiting writer refreshes it (with an attempt) at least every
 * PRIM_RW_INTENT_REFRESH_MS. */
#define PRIM_RW_INTENT_TTL_MS 2000u
#define PRIM_RW_INTENT_REFRESH_MS (PRIM_RW_INTENT_TTL_MS / 4)

/* Per-kind state of an acquisition (op) and of a held lock (copied at the
 * grant).  Pointers point into the op's / lock's key block. */
typedef struct prim {
  uint8_t kind;        /* lock_kind_t */
  uint8_t intent_set;  /* RW_WRITE op: our intent may be on some master */
  uint32_t limit;      /* SEM */
  uint32_t next_slot;  /* SEM op: the slot the next attempt tries */
  uint32_t slots_left; /* SEM op: slots this pass has not tried (0: a new pass) */
  char *slot_digits;   /* SEM: where the slot number goes in keys[0] */
  char *fence_digits;  /* SEM, fencing: where it goes in the fence key */
  const char *channel; /* release channel (NUL-terminated) */
  size_t channel_len;
  const char *name;                  /* as the caller gave it */
  const char *resource;              /* RW: the name, for redlock_lock_resource (NULL: default) */
  char intent[RANDOM_VALUE_LEN + 1]; /* RW_WRITE: the call's intent value */
} prim_t;

/* ---- calls.c ---------------------------------------------------------------------- */
/* Fills op->keys (and, when op->fenced, op->fence_keys) and op->prim for a
 * primitive of `kind` named `name` (already checked).  0 or REDLOCK_ENOMEM. */
int prim_op_init(struct op_acquire *op, lock_kind_t kind, const char *name, uint32_t limit);

/* ---- lock.c: the rounds of each kind --------------------------------------------- */
/* The acquisition of the op's next attempt (a semaphore: its next slot). */
round_t *prim_acquire_round(struct op_acquire *op, round_decided_fn cb);
/* A decided acquisition: REDLOCK_EINVAL when a master says the semaphore has
 * another limit (logged; never retried), else 0.  Notes a writer's intent. */
int prim_acquire_verdict(struct op_acquire *op, const round_t *round);
/* After a failed attempt: 1 when the semaphore pass goes on with its next
 * slot at once, 0 when the attempt's status stands (the pass is over). */
int prim_next_slot(struct op_acquire *op, int status);
/* The fencing write-back of the op's attempt. */
round_t *prim_fence_round(struct op_acquire *op, const char *token, size_t token_len,
                          round_decided_fn cb);
round_t *prim_extend_round(engine_t *engine, const struct redlock_lock *lock, uint32_t ttl_ms,
                           round_decided_fn cb, void *ctx);
/* Release of a held lock (announce: PUBLISH to waiters; a write hold also
 * drops its intent). */
round_t *prim_release_round(engine_t *engine, const struct redlock_lock *lock, round_decided_fn cb,
                            void *ctx);
/* Clean-up of a failed attempt of the op (no announcement; a waiting
 * writer's intent stays). */
round_t *prim_attempt_release_round(struct op_acquire *op);
/* The op ends (any status): a writer that gives up withdraws its intent. */
void prim_op_end(struct op_acquire *op, int status);
/* Retry delay: a waiting writer's attempts also refresh its intent. */
uint64_t prim_retry_delay_ms(const struct op_acquire *op, uint64_t delay_ms);
/* Whom a release wakes (NOTIFY_WAKE_*): a read-write lock's, all its waiters
 * (a writer's release may admit every reader); a semaphore's, one waiter per
 * release (it frees one slot, and several may be freed at once); a lock's,
 * one. */
int prim_wake_mode(const struct op_acquire *op);

#endif
