/* client.h: the insides of redlock_t and the common header of a queued
 * call (op_t), shared by the layer-4 modules: client.c (loop, thread, queue,
 * close), calls.c (public entry points), lock.c (lock handles and the
 * lock/extend/unlock/watch state machines, lock.h), prims.c, election.c and
 * stats.c.
 *
 * Ownership.  Every field names its owner: the module that writes it (others
 * at most read it), and how it is guarded: "loop" = touched only on the loop
 * thread, "mutex" = under client->mutex, "const" = set at open, read-only
 * after.  `mutex` guards the submit queue, the client state, the live-lock
 * registry and every lock's refcount. */
#ifndef REDLOCK_CLIENT_H
#define REDLOCK_CLIENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <uv.h>

#include "callmem.h"
#include "conn.h"
#include "forkguard.h"
#include "list.h"
#include "log.h"
#include "node.h"
#include "notify.h"
#include "options.h"
#include "pool.h"
#include "ptrset.h"
#include "random.h"
#include "redlock.h"
#include "round.h"
#include "votes.h"

typedef enum { CLIENT_OPEN = 0, CLIENT_CLOSING, CLIENT_CLOSED } client_state_t;

/* The loop side of a close, in order. */
typedef enum {
  CLOSE_NONE = 0,     /* open */
  CLOSE_DRAINING,     /* calls canceled, leases released: waiting for their rounds */
  CLOSE_QUEUED,       /* drained: the teardown runs from the next wake-up callback */
  CLOSE_TEARING_DOWN, /* the modules are closing; client_module_closed counts them */
} close_phase_t;

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

/* The header every queued call starts with: what the submit queue, the
 * parked list and the in-flight list need.  The kind's constructor sets
 * `kind` and `client` once; `link` belongs to whichever list holds the op. */
typedef struct op {
  list_node_t link;       /* mutex: the submit queue (client.c); then loop: client.c's parked
                           * list or lock.c's in-flight list */
  op_kind_t kind;         /* const: which struct embeds this header */
  struct redlock *client; /* const */
  uv_thread_t thread;     /* with has_thread, client.c at submission: the calling thread, whose
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

struct redlock {
  /* ---- client.c: set at open, read-only after (any thread) ---- */
  struct redlock_options opts; /* const: snapshot */
  log_sink_t log;              /* const: from opts: what every module logs through */
  fork_guard_t fork_guard;     /* const: is this the process that opened it (forkguard.h) */
  unsigned n_nodes;            /* const */
  unsigned quorum;             /* const */
  tls_client_t *tls;           /* const: rediss:// masters: the client's SSL_CTX, else NULL */
  int own_thread;              /* const: redlock_open: 1; redlock_open_uv: 0 */

  /* ---- the modules below, composed by client.c: what they need comes down in
   * these, what they report comes up through the callbacks client.c puts in
   * them.  After open each is its module's (loop). ---- */
  node_env_t node_env; /* client.c fills it; shared by the nodes and the notifier */
  round_env_t rounds;  /* round.c: the rounds' transport (the nodes), hooks and deadline FIFO */
  pool_t round_pool;   /* loop: the rounds' memory (rounds.pool), emptied at close */
  notify_t notify;     /* notify.c: release notifications for waiting calls (client.c sets
                        * notify.closing) */
  node_t *nodes;       /* node.c: one per master (array allocated and freed by client.c) */

  /* ---- client.c: loop and thread ---- */
  uv_loop_t *loop;            /* const after open */
  timebase_t timebase;        /* const after open: the clock and timers handed down (on loop) */
  uv_loop_t own_loop;         /* own thread: the loop it runs */
  uv_thread_t thread;         /* own thread: joined by redlock_close */
  uv_thread_t loop_thread_id; /* set by the loop thread when it starts */
  uv_async_t wakeup;          /* any thread sends (under the mutex); loop handles */
  uv_check_t turn_check;      /* loop, after poll: drains what was submitted during the turn */
  uv_prepare_t turn_end;      /* loop, before poll: wakes blocked callers, may the loop sleep? */
  uv_idle_t turn_again;       /* loop: no sleep, calls arrived while the turn was ending */
  list_node_t wakes;          /* loop: blocked callers whose call ended this turn */
  uv_timer_t deadline_timer;  /* loop: the rounds' deadlines and replay checks */
  conn_flusher_t flusher;     /* loop: one write per master per loop turn */
  jitter_rng_t rng;           /* loop: client_random */
  random_pool_t value_pool;   /* loop: lock values (lock.c's attempts) */
  uint64_t deadline_armed_ns; /* loop: when deadline_timer fires, 0 = not armed */
  uv_sem_t startup_sem;       /* own thread: redlock_open waits on it */

  /* ---- client.c: under the mutex ---- */
  uv_mutex_t mutex;
  list_node_t submit_queue;   /* mutex: op_t.link, for the loop */
  _Atomic int submits_queued; /* written under the mutex: the queue is not
                               * empty (the loop's lock-free peek) */
  int loop_polling;           /* mutex: the loop drained the queue and may sleep: wake it */
  client_state_t state;       /* mutex */
  unsigned callers;           /* mutex: calls that read the client outside the mutex
                               * (redlock_stats, between client_enter and client_leave);
                               * client_free waits until there are none */
  uv_cond_t callers_left;     /* signalled (under the mutex) when the last of them leaves
                               * a client that is closing */
  votes_book_t votes; /* mutex: the last decided rounds calls waited on (redlock_last_votes) */

  /* ---- client.c: start-up and close (loop) ---- */
  list_node_t parked_ops; /* loop: acquisitions waiting for the first connection attempts */
  unsigned startup_left;  /* loop: nodes whose first attempt has not finished */
  close_phase_t close_phase;
  int close_preparing;          /* inside client_begin_close or a close-time release window */
  unsigned modules_open;        /* closing: modules (nodes, notifier, own handles) not yet closed */
  int free_on_exit;             /* own thread: close called from a callback */
  void (*closed_cb)(void *arg); /* redlock_close_uv's */
  void *closed_arg;
  op_t close_op;              /* OP_CLOSE, preallocated: closing never fails for want of memory */
  uint64_t close_deadline_ns; /* loop: the close's bound ends then (client_close_bound_ms) */
  int close_out_of_time;      /* loop: it did; the masters were dropped */

  /* ---- lock.c: handles and calls in flight (initialised and freed by client.c) ---- */
  list_node_t ops_in_flight;    /* loop: op_t.link of dispatched lock/extend/unlock/watch */
  list_node_t held_locks;       /* loop: leases held (redlock_lock.held_link), for close */
  ptrset_t live_locks;          /* mutex: handles the caller may still use (calls.c checks
                                 * and claims them; lock.c adds and removes) */
  list_node_t reentrant_leases; /* mutex: leases that reentrant calls may share */
  callmem_t callmem;            /* its own mutex: free lists of ops, key blocks and handles
                                 * (made on callers' threads, freed on the loop) */

  /* ---- election.c ---- */
  list_node_t elections;   /* loop: handles the loop has taken and not yet let go */
  ptrset_t live_elections; /* mutex: handles the caller may still resign */

  /* ---- stats.c ---- */
  struct stats *stats; /* const after open: counters and events; NULL when both are off */
};

/* ---- client.c ---- */
int client_on_loop_thread(const redlock_t *client);
/* REDLOCK_EFORKED in a child forked after the client was opened (its I/O
 * thread, sockets and locks belong to the parent), else 0.  Checked before
 * anything that could take the mutex a parent thread may have held. */
int client_check_fork(const redlock_t *client);
/* At most this many submitted calls run per drain of the submit queue:
 * 100 000 calls queued at once made one loop callback of a second, with no
 * reply read and no request written meanwhile; the rest wait for the next
 * loop turn, which does not sleep. */
#define CLIENT_DRAIN_MAX 1024
/* A public call that reads the client outside the mutex and queues nothing
 * (redlock_stats): client_enter, under the mutex, refuses it with
 * REDLOCK_ECLOSED once the close has begun (as client_submit refuses an op),
 * else counts it in `callers` (0); client_leave counts it out.  The client is
 * not freed while a call is in: client_free waits for the last to leave, so
 * that what the call reads is ordered before the free.  Not for the lock
 * calls' hot path (they hand an op to the loop under the mutex instead). */
int client_enter(redlock_t *client);
void client_leave(redlock_t *client);
/* Queues an op for the loop; 0 or REDLOCK_ECLOSED (op untouched). */
int client_submit(redlock_t *client, op_t *op);
/* Appends to the submit queue and wakes the loop; caller holds the mutex and
 * has checked that the client is open. */
void client_enqueue_locked(redlock_t *client, op_t *op);
/* Loop: a blocking caller's call has ended; `w->sem` is posted at the end of
 * this loop turn, with the others that ended in it (the waiter must stay
 * valid until then: the caller is blocked on it). */
void client_defer_wake(redlock_t *client, sync_waiter_t *w);
#define client_log(client, ...) log_write(&(client)->log, __VA_ARGS__)
#define client_log_enabled(client, level) log_enabled(&(client)->log, level)
uint32_t client_random(redlock_t *client);
/* An op finished: during close, see whether shutdown can proceed. */
void client_maybe_finish_close(redlock_t *client);
/* The close's bound (redlock.h, docs/api.md): what the close has not sent,
 * or has not had answered, this long after it began is given up, the
 * masters' connections are dropped and the keys expire at their TTL.  Long
 * enough for what a close normally waits for: a master that stops answering
 * is dropped after NODE_HUNG_REQUEST_TIMEOUTS request timeouts and one that
 * was down may come back within a connect timeout to be sent its replays;
 * and at least CLIENT_CLOSE_MIN_MS, in which healthy masters take tens of
 * thousands of releases (100 000 in 0.7 s).  A master that answers, but
 * slowly, no longer holds the close for as long as its queue takes (issue
 * 23: 180 s). */
#define CLIENT_CLOSE_MIN_MS 5000u
uint64_t client_close_bound_ms(const redlock_options_t *opts);
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

/* Loop: dispatches an op taken from the submit queue (or made on the loop),
 * or parks an acquisition until every master has had its first connection
 * attempt (it would fail against masters not yet connected). */
void client_run_or_park(redlock_t *client, op_t *op);

/* ---- election.c: loop side ---- */
/* Takes an OP_ELECT or OP_RESIGN op from the submit queue. */
void election_dispatch(op_t *op);
/* Close: every election stops (no callback runs any more), leaders release. */
void election_close_all(redlock_t *client);

#endif
