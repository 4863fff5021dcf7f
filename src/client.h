/* client.h: the insides of redlock_t, of a queued call (op_t) and of a lock
 * handle, shared by client.c (loop, thread, queue, close), calls.c (public
 * entry points), lock.c (the lock/extend/unlock state machines) and node.c /
 * round.c (I/O).
 *
 * Threads: everything marked "loop" is touched only on the loop thread.
 * `mutex` guards the submit queue, the client state, the live-lock registry
 * and every lock's refcount. */
#ifndef REDLOCK_CLIENT_H
#define REDLOCK_CLIENT_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "conn.h"
#include "list.h"
#include "log.h"
#include "node.h"
#include "notify.h"
#include "options.h"
#include "prims.h"
#include "ptrset.h"
#include "random.h"
#include "redlock.h"
#include "round.h"

typedef enum { CLIENT_OPEN = 0, CLIENT_CLOSING, CLIENT_CLOSED } client_state_t;

/* The loop side of a close, in order. */
typedef enum {
  CLOSE_NONE = 0,     /* open */
  CLOSE_DRAINING,     /* calls canceled, leases released: waiting for their rounds */
  CLOSE_QUEUED,       /* drained: the teardown runs from the next wake-up callback */
  CLOSE_TEARING_DOWN, /* the modules are closing; client_module_closed counts them */
} close_phase_t;

typedef enum {
  OP_LOCK = 1,
  OP_EXTEND,
  OP_UNLOCK,
  OP_WATCH,
  OP_CLOSE,
  OP_ELECT,  /* election.c: a new election handle for the loop */
  OP_RESIGN, /* election.c: its resignation */
} op_kind_t;

typedef enum {
  LOCK_MODE_TRY = 1, /* one attempt */
  LOCK_MODE_RETRY,   /* the options' retry policy */
  LOCK_MODE_WAIT,    /* until the wait budget is spent */
  LOCK_MODE_REENTER, /* already granted as a reentrant hold (op->lock) */
} lock_mode_t;

/* A handle is either a lease (the lock in Redis) or, with reentrancy, a
 * hold: a handle of its own that shares a lease.  Accessors and extend/watch
 * act on the lease; the lease is released when its last handle is unlocked. */
struct redlock_lock {
  struct redlock *client;
  redlock_lock_t *lease;      /* itself, or the lease a hold shares */
  unsigned holds;             /* lease, mutex: its handles not yet unlocked */
  list_node_t holds_list;     /* lease, mutex: its reentrant holds */
  list_node_t hold_link;      /* hold, mutex: in its lease's holds_list */
  list_node_t reentrant_link; /* lease, mutex: client->reentrant_leases */
  uv_thread_t owner;          /* lease: thread whose call acquired it */
  list_node_t held_link;      /* loop: client's held leases, for close and watch */
  size_t n_keys;
  char **keys; /* prefix + resource, NUL-terminated */
  size_t *key_lens;
  const char *resource; /* first resource, without the prefix (points into keys[0]) */
  char value[RANDOM_VALUE_LEN + 1];
  uint32_t ttl_ms;
  _Atomic int64_t expires_ns; /* monotonic end of validity */
  _Atomic int lost;
  uint64_t fence;
  uint64_t set_mask; /* masters the acquisition may have set the key on */
  unsigned refs;     /* mutex: 1 while live (registered) + 1 per call in flight */
  /* watch (loop) */
  int watched;
  uv_timer_t *watch_timer;
  int watch_extending;
  unsigned watch_failures; /* extensions failed in a row */
  redlock_lost_cb lost_cb;
  void *lost_arg;
  redlock_lock_t *watch_handle; /* the handle redlock_watch was given */
  prim_t prim;                  /* its kind (plain lock, permit, read or write hold): prims.h */
};

typedef struct op {
  list_node_t link;       /* submit queue, then the client's in-flight list */
  notify_waiter_t waiter; /* a waiting acquisition: release notifications (notify.h) */
  op_kind_t kind;
  struct redlock *client;
  lock_mode_t mode;
  uint32_t ttl_ms;
  uint32_t wait_ms;
  size_t n_keys;
  char **keys; /* OP_LOCK: owned until handed to the lock */
  size_t *key_lens;
  size_t prefix_len;
  char **fence_keys; /* fencing: counter keys, same layout as keys */
  size_t *fence_key_lens;
  uint64_t fence;              /* fencing: the token of the current attempt */
  uint64_t attempt_started_ns; /* t1 of the current attempt */
  uint64_t started_ns;         /* t1 of the first attempt (stats: duration) */
  uint64_t set_mask;           /* masters the current attempt may have set the key on */
  redlock_lock_t *lock;        /* extend / unlock / watch target; REENTER: the hold */
  redlock_lock_t *handle;      /* the handle the caller passed (a hold, or the lease) */
  uv_thread_t caller;          /* thread that made the call (reentrancy owner) */
  redlock_lock_cb lock_cb;
  redlock_done_cb done_cb;
  redlock_lost_cb lost_cb;
  void *arg;
  /* loop-side state of a lock acquisition */
  unsigned attempts;
  uint64_t wait_deadline_ns;
  char value[RANDOM_VALUE_LEN + 1];
  uv_timer_t *retry_timer; /* allocated on the first retry */
  int canceled;
  int fenced;  /* fencing for this acquisition: the client's option, or forced (election) */
  prim_t prim; /* OP_LOCK: the kind acquired and its state (prims.h) */
} op_t;

struct redlock {
  struct redlock_options opts; /* snapshot */
  log_sink_t log;              /* from opts: what every module logs through */
  /* The modules below, composed here: what they need comes down in these, what
   * they report comes up through the callbacks client.c puts in them. */
  node_env_t node_env; /* shared by the nodes and the notifier */
  round_env_t rounds;  /* the rounds' transport (the nodes), hooks and deadline FIFO */
  notify_t notify;     /* release notifications for waiting calls */
  pid_t pid;           /* the process that opened it: a forked child must not use it */
  unsigned n_nodes;
  unsigned quorum;
  node_t *nodes;

  uv_loop_t *loop;
  uv_loop_t own_loop;
  int own_thread; /* redlock_open: 1; redlock_open_uv: 0 */
  uv_thread_t thread;
  uv_thread_t loop_thread_id; /* set by the loop thread when it starts */
  uv_async_t wakeup;
  uv_timer_t deadline_timer;
  conn_flusher_t flusher; /* one write per master per loop turn */

  uv_mutex_t mutex;
  list_node_t submit_queue;     /* mutex */
  client_state_t state;         /* mutex */
  ptrset_t live_locks;          /* mutex: handles the caller may still use */
  list_node_t reentrant_leases; /* mutex: leases that reentrant calls may share */
  uint8_t *last_votes;          /* mutex: vote_why_t per master of the last decided round */
  char (*last_down_why)[NODE_DOWN_WHY_LEN]; /* mutex: for its down votes, why (or "") */
  tls_client_t *tls;                        /* rediss:// masters: the client's SSL_CTX, else NULL */
  int last_outcome; /* mutex: quorum_outcome_t of that round, 0 = none yet */

  /* loop */
  list_node_t ops_in_flight;
  list_node_t held_locks;
  list_node_t parked_ops; /* waiting for the first connection attempts */
  unsigned startup_left;  /* nodes whose first attempt has not finished */
  jitter_rng_t rng;
  uint64_t deadline_armed_ns;
  close_phase_t close_phase;
  int close_preparing;   /* inside client_begin_close */
  unsigned modules_open; /* closing: modules (nodes, notifier, own handles) not yet closed */
  uv_sem_t startup_sem;  /* own thread: redlock_open waits on it */
  int free_on_exit;      /* own thread: close called from a callback */
  void (*closed_cb)(void *arg);
  void *closed_arg;
  op_t close_op; /* preallocated: closing never fails for want of memory */
  /* elections (election.c) */
  list_node_t elections;   /* loop: handles the loop has taken and not yet let go */
  ptrset_t live_elections; /* mutex: handles the caller may still resign */
  struct stats *stats;     /* stats.c: counters and events; NULL when both are off */
};

/* ---- client.c ---- */
int client_on_loop_thread(const redlock_t *client);
/* REDLOCK_EFORKED in a child forked after the client was opened (its I/O
 * thread, sockets and locks belong to the parent), else 0.  Checked before
 * anything that could take the mutex a parent thread may have held. */
int client_check_fork(const redlock_t *client);
/* Queues an op for the loop; 0 or REDLOCK_ECLOSED (op untouched). */
int client_submit(redlock_t *client, op_t *op);
/* Appends to the submit queue and wakes the loop; caller holds the mutex and
 * has checked that the client is open. */
void client_enqueue_locked(redlock_t *client, op_t *op);
#define client_log(client, ...) log_write(&(client)->log, __VA_ARGS__)
#define client_log_enabled(client, level) log_enabled(&(client)->log, level)
uint32_t client_random(redlock_t *client);
/* An op finished: during close, see whether shutdown can proceed. */
void client_maybe_finish_close(redlock_t *client);
/* Now, on the client's monotonic clock: clock_now_ns, or the unit tests'
 * stepped clock.  What the engine measures (validity, wait deadlines,
 * deadline timers) reads this one clock. */
uint64_t client_now_ns(const redlock_t *client);
/* Test seam (tests/unit/engine_fixture.c), not exported: a client composed as
 * by redlock_open_uv on `loop`, but whose rounds reach the masters through
 * `transport` (master i = the options' node i) and read time from now_ns.
 * No master is connected (the nodes are never started, so the notifier finds
 * no address to subscribe at either), and calls run at once: there is no
 * first connection attempt to wait for.  Closed with redlock_close_uv. */
int client_open_for_test(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop,
                         const round_transport_t *transport, void *transport_arg,
                         uint64_t (*now_ns)(void));

/* ---- lock.c: loop side ---- */
void op_dispatch(op_t *op);
/* Ends an op that never started (close, parked): status to its callback. */
void op_fail(op_t *op, int status);
void op_free(op_t *op);
/* Close: cancel acquisitions, release every held lock. */
void lock_cancel_all(redlock_t *client);
/* A release was announced for the key a WAIT op waits on: retry now. */
void lock_wake(op_t *op);
/* Drops one reference (loop); frees the handle at zero. */
void lock_unref(redlock_lock_t *lock);
void lock_free(redlock_lock_t *lock);
/* Loop side of redlock_watch: lost_cb(handle, reason, arg) runs when the
 * lease is lost, possibly before this returns (already expired).  0 or
 * REDLOCK_ENOMEM. */
int lock_watch_begin(redlock_lock_t *lock, redlock_lock_t *handle, redlock_lost_cb lost_cb,
                     void *arg);
/* Lets go of a lease nobody waits on (close; an election's resignation or
 * loss): stops its watch, frees its handles, sends the release (announced, so
 * waiters are woken) to every master that may hold it, drops the live
 * reference. */
void lock_release_lease(redlock_lock_t *lock);

/* ---- election.c: loop side ---- */
/* Takes an OP_ELECT or OP_RESIGN op from the submit queue. */
void election_dispatch(op_t *op);
/* Close: every election stops (no callback runs any more), leaders release. */
void election_close_all(redlock_t *client);

#endif
