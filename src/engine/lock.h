/* lock.h: what lock.c owns: lock handles (struct redlock_lock) and the
 * structs of the four kinds of call it runs (acquire, extend, release,
 * watch), their constructors and destructor, and the loop-side entry points
 * client.c, calls.c, the kinds (kind_*.c) and election.c use.
 *
 * Ownership, as in client.h: every field names the module that writes it
 * and how it is guarded ("loop", "mutex" = engine->mutex, "const" = set by
 * the constructor or at the grant, read-only after).  An op is written by
 * its constructor on the caller's thread, then (after the submit queue's
 * mutex hand-off) only by the loop thread. */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "engine/engine.h"
#include "engine/op.h"
#include "engine/prims.h"
#include "redlock.h"
#include "util/handle.h"
#include "util/random.h"
#include "voters/notify.h"

/* A value on the masters: RANDOM_VALUE_LEN hex digits, then, with an owner
 * label, OPTIONS_OWNER_SEP and the label. */
#define LOCK_VALUE_MAX (RANDOM_VALUE_LEN + 1 + REDLOCK_MAX_OWNER)

/* Loop: a fresh value into out[LOCK_VALUE_MAX + 1] (the client's owner
 * label after its random part), its length in *len.  ST_OK or ST_EIO. */
status_t lock_value_new(engine_t *engine, char *out, size_t *len);

typedef enum {
  LOCK_MODE_TRY = 1, /* one attempt */
  LOCK_MODE_RETRY,   /* the options' retry policy */
  LOCK_MODE_WAIT,    /* until the wait budget is spent */
  LOCK_MODE_REENTER, /* already granted as a reentrant hold (op_acquire_t.hold) */
} lock_mode_t;

/* What a lease's watch (redlock_watch) keeps: the extension it has in
 * flight and whom to tell when the lease is lost.  All loop. */
typedef struct lock_watch {
  int active;              /* redlock_watch was called and the lease not yet lost or released */
  int extending;           /* an extension is in flight */
  unsigned failures;       /* extensions failed in a row */
  uint32_t ttl_ms;         /* the ttl of the extension in flight (extending) */
  tb_timer_t *timer;       /* the next extension's timer, made by the first watch */
  uint64_t seq;            /* its number among the lease's extensions (extends_sent) */
  redlock_lost_cb lost_cb; /* the application's, with lost_arg */
  void *lost_arg;
  redlock_lock_t *handle; /* the handle redlock_watch was given (a hold watches its lease) */
  uint64_t hold_end_ns;   /* a bounded watch: monotonic end of the hold (granted_ns + bound);
                           * 0: unbounded */
} lock_watch_t;

/* A lease's handles: the lease itself and, with reentrancy, its holds; it is
 * released when the last of them is unlocked.  All mutex, but owner (const). */
typedef struct lock_reentry {
  unsigned handles;  /* not yet unlocked: the lease itself and its holds */
  list_node_t holds; /* its holds (their hold_link) */
  list_node_t link;  /* in engine->reentrant_leases: a lease a thread may enter again */
  uv_thread_t owner; /* const: thread whose call acquired it */
} lock_reentry_t;

/* A handle is either a lease (the lock in Redis) or, with reentrancy, a
 * hold: a handle of its own that shares a lease.  Accessors and extend/watch
 * act on the lease; the lease is released when its last handle is unlocked.
 * A hold uses only the fields of every handle and its own; the lease's are
 * left zero in it.
 * Owner: lock.c (made by lock_create or, a hold, by acquire_op_reenter);
 * the kinds (kind_*.c) read its keys and prim_t; calls.c, stats.c and election.c
 * read the const fields and the atomics. */
struct redlock_lock {
  /* ---- every handle ---- */
  engine_t *engine;       /* const */
  redlock_lock_t *handle; /* const: the value the application knows it by (handle.h) */
  redlock_lock_t *lease;  /* const: itself, or the lease a hold shares */
  /* ---- a hold's ---- */
  list_node_t hold_link; /* mutex: in its lease's reentry.holds */
  /* ---- the lease's ---- */
  lock_reentry_t reentry;         /* its handles, and its owner for reentrancy */
  list_node_t held_link;          /* loop: engine->held_locks, for close and watch */
  size_t n_keys;                  /* const: from the op that won it */
  char **keys;                    /* const: prefix + resource, NUL-terminated (the op's block) */
  size_t *key_lens;               /* const */
  const char *resource;           /* const: first resource, without the prefix (into keys[0]) */
  char value[LOCK_VALUE_MAX + 1]; /* const: random hex [~owner] */
  size_t value_len;               /* const */
  uint32_t ttl_ms;                /* loop: the last ttl granted (extend changes it) */
  uint64_t extends_sent;          /* loop: extension rounds sent (extend_outcome) */
  _Atomic int64_t expires_ns;     /* loop writes, any thread reads: monotonic end of validity */
  _Atomic int lost;               /* loop writes, any thread reads */
  uint64_t fence;                 /* const */
  uint64_t granted_ns;            /* const: start of the round that won it (a bound's origin) */
  char **fence_keys;              /* const: fencing: the counter keys (the op's block), or NULL */
  size_t *fence_key_lens;         /* const */
  uint64_t set_mask;              /* loop: masters our value may be on (acquired, re-installed) */
  unsigned refs;                  /* mutex: 1 while live (registered) + 1 per call in flight */
  lock_watch_t watch;             /* loop: redlock_watch */
  prim_t prim;                    /* const: its kind (plain lock, permit, read or write hold) */
};

/* The handle behind a value the application passed (handle.h); a real
 * address passes through unchanged. */
static inline redlock_lock_t *lock_of(const redlock_lock_t *value) { return handle_decode(value); }

/* The lease's validity left, on the engine's clock (negative: spent). */
static inline int64_t lock_validity_ns(const redlock_lock_t *lease) {
  return atomic_load(&lease->expires_ns) - (int64_t)engine_now_ns(lease->engine);
}
/* Lost (a quorum said so, or a watch gave up), or its validity is spent. */
static inline int lock_is_lost(const redlock_lock_t *lease) {
  return atomic_load(&lease->lost) || lock_validity_ns(lease) < 1000000;
}

/* ---- the calls ---------------------------------------------------------------------
 * An acquisition (redlock_lock & co, the primitives, an election's
 * campaign).  The constructor fills the header and the parameters; the keys
 * come from acquire_op_set_keys (locks) or prim_op_init (primitives); the
 * rest is the loop's, from its dispatch until it ends. */
typedef struct op_acquire {
  op_t op;                 /* its table: lock.c's acquisition */
  notify_waiter_t waiter;  /* loop: a waiting acquisition: release notifications (notify.h) */
  lock_mode_t mode;        /* const (REENTER: set by acquire_op_reenter before submission) */
  uint32_t ttl_ms;         /* const */
  uint32_t wait_ms;        /* const */
  int fenced;              /* const: the client's option, or forced (election) */
  uv_thread_t caller;      /* const: thread that made the call (reentrancy owner), or zero */
  redlock_lock_cb lock_cb; /* const: except acquire_abandon, which silences it (loop) */
  void *arg;
  /* keys: the kind's init (acquire_op_set_keys or prim_op_init); handed to
   * the lock at the grant.  kind_sem.c rewrites a semaphore's slot digits. */
  size_t n_keys;
  char **keys;
  size_t *key_lens;
  size_t prefix_len;
  char **fence_keys; /* fencing: counter keys, same layout as keys (made on the loop) */
  size_t *fence_key_lens;
  prim_t prim;          /* the kind acquired (prim.ops) and its state (prims.h) */
  redlock_lock_t *hold; /* REENTER: the hold already granted, for the callback */
  /* loop: the state of the acquisition */
  unsigned attempts;
  uint64_t fence;                 /* fencing: the token of the current attempt */
  uint64_t attempt_started_ns;    /* t1 of the current attempt */
  uint64_t started_ns;            /* t1 of the first attempt (stats: duration) */
  uint64_t set_mask;              /* masters the current attempt may have set the key on */
  uint64_t wait_deadline_ns;      /* WAIT: end of the budget (0: not waiting) */
  char value[LOCK_VALUE_MAX + 1]; /* the current attempt's: random hex [~owner] */
  size_t value_len;
  tb_timer_t *retry_timer; /* allocated on the first retry */
  int canceled;            /* loop: close, an election's abandon or redlock_cancel: no more
                            * attempts, and a round still out is not granted */
  /* cancellation by id (redlock_cancel) */
  uint64_t call_id;        /* mutex at submission, then const: its id in engine->calls, or 0
                            * (not cancelable: no id asked, or granted at submission) */
  int cancel_asked;        /* mutex: redlock_cancel found it registered and asked */
  list_node_t cancel_link; /* mutex: in engine->cancels until the loop takes the cancel */
  int dispatched;          /* loop: the loop started it (a cancel before that is seen then) */
  int reported;            /* loop: its callback ran already (canceled while a round was out:
                            * the op itself ends when that round is decided) */
} op_acquire_t;

/* An extension (target_extend).  lock: the caller's handle until submission, then its lease
 * (lock_claim_locked: the call holds a reference on it until it ends). */
typedef struct {
  op_t op;
  redlock_lock_t *lock; /* mutex at submission, then loop */
  uint32_t ttl_ms;      /* const */
  uint64_t seq;         /* loop: its number among the lock's extensions (extends_sent) */
  redlock_done_cb done_cb;
  void *arg;
} op_extend_t;

/* A release (target_release): redlock_unlock & co.  lock: the caller's handle (claimed: out of the
 * live registry at submission), then on the loop its lease, or NULL when other handles still share
 * it; the call ends with the lease's last reference. */
typedef struct {
  op_t op;
  redlock_lock_t *lock; /* mutex at submission, then loop */
  redlock_done_cb done_cb;
  void *arg;
} op_release_t;

/* A watch (target_watch).  lock as for extend; handle: the one the caller passed (a hold
 * watches its lease, and lost_cb names the hold). */
typedef struct {
  op_t op;
  redlock_lock_t *lock;   /* mutex at submission, then loop */
  redlock_lock_t *handle; /* const */
  redlock_lost_cb lost_cb;
  void *arg;
  /* const: redlock_watch_bounded's bound (target_op_new's ttl_ms); 0: none */
  uint32_t max_hold_ms;
  tb_timer_t *timer; /* made with the op, on the caller's thread, so that the loop side
                      * cannot run out of memory (it has no way to report it): the
                      * lease's watch timer if it has none yet, else freed with the op */
} op_watch_t;

/* What an acquisition is asked to do (acquire_op_new). */
typedef struct {
  lock_mode_t mode;
  uint32_t ttl_ms;
  uint32_t wait_ms;
  int fenced;
  int owned; /* 1: the calling thread owns the lease (reentrancy), 0: nobody */
  redlock_lock_cb cb;
  void *arg;
} acquire_params_t;

/* ---- constructors (any thread; the op is not queued yet) ---- */
/* ST_OK with *out, or ST_ENOMEM.  The keys come next (below, or
 * prim_op_init). */
status_t acquire_op_new(op_acquire_t **out, engine_t *engine, const acquire_params_t *params);
/* One allocation holds the key pointers, their lengths and the key bytes
 * (prefix + resource, NUL-terminated); the lock handle inherits it.  ST_OK
 * or ST_ENOMEM. */
status_t acquire_op_set_keys(op_acquire_t *op, const char *const *resources, size_t n);
/* Reentrancy: when this thread holds a valid lease on `resource` (alone),
 * makes a new hold on it and turns the op into its grant (REENTER).  No
 * such lease: the op acquires as usual (ST_OK).  ST_ENOMEM when there is
 * one but no memory for the hold (acquiring instead would find the key held
 * by that very lease). */
status_t acquire_op_reenter(op_acquire_t *op, const char *resource);

/* A kind of call on a held lock (extend, release, watch): its op table and
 * what target_op_new and lock_claim_locked need to know of it. */
typedef struct target_kind {
  op_ops_t ops; /* the op's table (op->ops points here) */
  /* Makes the op (*out); the arguments the kind has no use for are
   * ignored.  ST_OK or ST_ENOMEM. */
  status_t (*make)(op_t **out, engine_t *engine, redlock_lock_t *lock, uint32_t ttl_ms,
                   redlock_done_cb done_cb, redlock_lost_cb lost_cb, void *arg);
  size_t lock_offset; /* where its op keeps the handle it acts on (`lock`) */
  int claims_handle;  /* 1: the handle leaves the live registry at submission
                       * (release); 0: the call takes a reference on its lease */
} target_kind_t;

extern const target_kind_t target_extend;  /* redlock_extend & co: op_extend_t */
extern const target_kind_t target_release; /* redlock_unlock & co: op_release_t */
extern const target_kind_t target_watch;   /* redlock_watch: op_watch_t */

/* An extend, release or watch of `lock` in *out: ST_OK or ST_ENOMEM.  Freed
 * with op_free (op.h), like every op. */
status_t target_op_new(op_t **out, engine_t *engine, const target_kind_t *kind,
                       redlock_lock_t *lock, uint32_t ttl_ms, redlock_done_cb done_cb,
                       redlock_lost_cb lost_cb, void *arg);
/* Submission, under the mutex, of a target op: its handle must be live.
 * A release claims the handle (it leaves the registry at once, so a second
 * unlock gets EINVAL); the others take a reference on its lease so that it
 * outlives the call.  ST_OK or ST_EINVAL. */
status_t lock_claim_locked(op_t *op);

/* ---- cancellation (redlock_cancel) ----
 * A cancelable acquisition is registered in engine->calls under its id from
 * its submission until its outcome is decided: the grant, or its end with
 * any other status (acquire_commit in lock.c, under the mutex).  A cancel
 * that finds it registered is certain to be its outcome (REDLOCK_ECANCELED:
 * a round won after it is released, not granted); one that does not find it
 * is too late and changes nothing. */
/* Submission, under the mutex: gives the op the engine's next call id (into
 * *id) and registers it, unless it was granted already (a reentrant hold:
 * it keeps the id, and a cancel of it is too late).  ST_OK or ST_ENOMEM
 * (nothing registered, *id untouched). */
status_t acquire_register_locked(op_acquire_t *op, uint64_t *id);
/* redlock_cancel, under the mutex.  ST_OK: the call's outcome is ECANCELED
 * (asked now, or by an earlier cancel), or with *late = 1 its outcome was
 * decided before; *wake = 1 when it was queued for the loop now
 * (engine->cancels: the loop must be woken).  ST_EINVAL: no call of this
 * engine had that id. */
status_t acquire_cancel_locked(engine_t *engine, uint64_t id, int *wake, int *late);
/* Loop: carries out the cancels queued on engine->cancels: a call waiting
 * for its next attempt (a retry, a release) ends at once; one whose round
 * is out has its callback run at once and ends when the round is decided
 * (a grant is then released); one the loop has not started yet ends when
 * it starts. */
void lock_run_cancels(engine_t *engine);

/* ---- loop side ---- */
/* Cancels an acquisition without telling its caller (an election that stops
 * campaigning): its attempt ends on its own, and a lease it might still win
 * is released. */
void acquire_abandon(op_acquire_t *op);
/* At most this many rounds pending while close releases held locks.  All at
 * once, 100 000 releases made one loop callback of half a second (no reply
 * read, no byte written meanwhile) and requests that timed out before they
 * were ever written; a window keeps every turn short, the pipes full (half
 * of what NODE_MAX_INFLIGHT lets out on a connection) and each round's clock
 * starting when it can actually be sent. */
#define LOCK_CLOSE_WINDOW (NODE_MAX_INFLIGHT / 2)
/* Close: cancel acquisitions, stop every watch, and start releasing the
 * held locks (lock_release_held). */
void lock_cancel_all(engine_t *engine);
/* Close: releases held locks while fewer than LOCK_CLOSE_WINDOW rounds are
 * pending; 1 while some are still held (call again when a round settles). */
int lock_release_held(engine_t *engine);
/* notify_t.wake: a release was announced for what a WAIT op waits on: retry now. */
void lock_wake(notify_waiter_t *waiter);
/* Drops one reference (loop); frees the handle at zero. */
void lock_unref(redlock_lock_t *lock);
void lock_free(redlock_lock_t *lock);
/* Loop side of redlock_watch: lost_cb(handle, reason, arg) runs when the
 * lease is lost, possibly before this returns (already expired).  spare (may
 * be NULL): a timer block made beforehand, taken (*spare = NULL) if the lease
 * needs one.  max_hold_ms > 0 bounds the hold: that long after the grant the
 * lease is released and lost_cb runs with ST_MAX_HOLD.  ST_OK or ST_ENOMEM. */
status_t lock_watch_begin(redlock_lock_t *lock, redlock_lock_t *handle, redlock_lost_cb lost_cb,
                          void *arg, uint32_t max_hold_ms, tb_timer_t **spare);
/* Lets go of a lease nobody waits on (close; an election's resignation or
 * loss): stops its watch, frees its handles, sends the release (announced, so
 * waiters are woken) to every master that may hold it, drops the live
 * reference. */
void lock_release_lease(redlock_lock_t *lock);

#endif
