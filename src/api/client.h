/* client.h: the insides of redlock_t (a queued call's header, op_t, is in
 * op.h), shared by the layer-4 modules: the client module (client.c: open
 * and composition; client_loop.c: loop, thread, submit queue, deadline
 * timer; client_close.c: the close), calls.c (public entry points), lock.c (lock handles and the
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

#include "api/stats.h"
#include "conn/conn.h"
#include "engine/engine.h"
#include "engine/op.h"
#include "engine/round.h"
#include "redlock.h"
#include "util/handle.h"
#include "util/list.h"
#include "util/log.h"
#include "util/options.h"
#include "util/pool.h"
#include "util/random.h"
#include "util/timebase.h"
#include "voters/notify.h"
#include "voters/voters.h"

typedef enum { CLIENT_OPEN = 0, CLIENT_CLOSING, CLIENT_CLOSED } client_state_t;

/* The loop side of a close, in order. */
typedef enum {
  CLOSE_NONE = 0,     /* open */
  CLOSE_DRAINING,     /* calls canceled, leases released: waiting for their rounds */
  CLOSE_QUEUED,       /* drained: the teardown runs from the next wake-up callback */
  CLOSE_TEARING_DOWN, /* the modules are closing; client_module_closed counts them */
} close_phase_t;

/* The loop the client runs on and its turn (client_loop.c). */
typedef struct client_run {
  uv_loop_t *loop;        /* const after open: the client's own, or the caller's */
  uv_loop_t own_loop;     /* own thread: the loop it runs */
  int own_thread;         /* const: redlock_open: 1; redlock_open_uv: 0 */
  uv_thread_t thread;     /* own thread: joined by redlock_close */
  uv_thread_t thread_id;  /* set by the loop thread when it starts */
  uv_sem_t startup_sem;   /* own thread: redlock_open waits on it */
  int free_on_exit;       /* own thread: close called from a callback */
  uv_async_t wakeup;      /* any thread sends (under the mutex); loop handles */
  uv_check_t turn_check;  /* loop, after poll: drains what was submitted during the turn */
  uv_prepare_t turn_end;  /* loop, before poll: wakes blocked callers, may the loop sleep? */
  uv_idle_t turn_again;   /* loop: no sleep, calls arrived while the turn was ending */
  list_node_t wakes;      /* loop: blocked callers whose call ended this turn */
  conn_flusher_t flusher; /* loop: one write per master per loop turn */
} client_run_t;

/* The calls on their way to the loop (client_loop.c), and the client's state. */
typedef struct client_queue {
  list_node_t ops;        /* mutex: op_t.link, for the loop */
  _Atomic int queued;     /* written under the mutex: `ops` (or the engine's cancels) is not
                           * empty (the loop's lock-free peek) */
  int loop_polling;       /* mutex: the loop drained the queue and may sleep: wake it */
  uv_thread_t poller;     /* mutex: the thread that set loop_polling, the loop's (turn_end) */
  client_state_t state;   /* mutex */
  unsigned callers;       /* mutex: calls that read the client outside the mutex
                           * (redlock_stats, between client_enter and client_leave);
                           * client_free waits until there are none */
  uv_cond_t callers_left; /* signalled (under the mutex) when the last of them leaves
                           * a client that is closing */
  list_node_t parked;     /* loop: acquisitions waiting until every voter had its first
                           * attempt (voters_started) */
} client_queue_t;

/* The close, loop side (client_close.c). */
typedef struct client_close {
  close_phase_t phase;
  int preparing;         /* inside client_begin_close or a close-time release window */
  unsigned modules_open; /* closing: modules (voters, notifier, own handles) not yet closed */
  void (*closed_cb)(void *arg); /* redlock_close_uv's */
  void *closed_arg;
  op_t op;              /* the close (close_op_ops), preallocated: closing never fails for
                         * want of memory */
  uint64_t deadline_ns; /* the close's bound ends then (client_close_bound_ms) */
  int out_of_time;      /* it did; the masters were dropped */
} client_close_t;

/* ---- client.c: the fork guard ----
 * Does this process still own the client, or is it a child forked after the
 * client was opened?  Asked by every public call, so it must be cheap:
 * getpid() is a system call since glibc 2.25.  Each client gets one page of
 * its own that the kernel hands a forked child zeroed (MADV_WIPEONFORK,
 * Linux >= 4.14, as OpenSSL's and BoringSSL's RNGs use): one memory read,
 * and no process-wide state (no pthread_atfork counter).  Where the advice
 * is not supported, the guard falls back to the pid. */
typedef struct fork_guard {
  volatile const int *page; /* 1 in the owner; 0 in a child (wiped); NULL: use pid */
  size_t len;
  pid_t pid;
} fork_guard_t;

/* In the process that opens the client. */
void fork_guard_init(fork_guard_t *g);
/* 1 when this process forked off the one that ran fork_guard_init. */
int fork_guard_forked(const fork_guard_t *g);
/* In the owner only (a child leaves the parent's client alone). */
void fork_guard_free(fork_guard_t *g);

struct redlock {
  /* ---- client.c: set at open, read-only after (any thread) ---- */
  struct redlock_options opts; /* const: snapshot */
  log_sink_t log;              /* const: from opts: what every module logs through */
  fork_guard_t fork_guard;     /* const: is this the process that opened it (above) */
  tls_client_t *tls;           /* const: rediss:// masters: the client's SSL_CTX, else NULL */
  timebase_t timebase;         /* const: the clock and timers handed down to everything below */
  uv_mutex_t mutex;            /* guards the queue's state, the votes book, and what the engine and
                                * the voters say it guards (handed down to them) */

  /* ---- the modules below, composed by client.c: what they need comes down in
   * their envs, what they report comes up through the callbacks client.c puts
   * in them.  After open each is its module's. ---- */
  voters_t voters;       /* voters.c: one voter per master, their connections and whole life */
  round_env_t rounds;    /* round.c: the rounds' transport (the voters), hooks and deadline FIFO */
  pool_t round_pool;     /* loop: the rounds' memory (rounds.pool), emptied at close */
  notify_t notify;       /* notify.c: release notifications for waiting calls (client_close.c sets
                          * notify.closing) */
  engine_t engine;       /* engine.h: client.c fills its env at open, the engine owns the rest */
  struct stats *stats;   /* stats.c: counters and events (const after open); NULL when off */
  stats_env_t stats_env; /* const: what the stats read of the client */
  votes_book_t votes;    /* mutex: the last decided rounds calls waited on (redlock_last_votes) */
  struct {
    jitter_rng_t rng;     /* loop: jitter (retries, back-off) */
    random_pool_t values; /* loop: lock values (the engine's attempts) */
  } random;

  /* ---- the client module's own (client_loop.c, client_close.c) ---- */
  client_run_t run;
  client_queue_t queue;
  client_close_t close;
  struct {
    tb_timer_t timer;  /* loop: the rounds' deadlines and replay checks */
    uint64_t armed_ns; /* loop: when it fires, 0 = not armed */
  } deadline;
};

/* ---- client.c: open, composition, free ---- */
#define client_log(client, ...) log_write(&(client)->log, __VA_ARGS__)
#define client_log_enabled(client, level) log_enabled(&(client)->log, level)
/* Now, on the client's monotonic clock: clock_now_ns, or the unit tests'
 * stepped clock.  What the engine measures (validity, wait deadlines,
 * deadline timers) reads this one clock. */
uint64_t client_now_ns(const redlock_t *client);
/* ST_EFORKED in a child forked after the client was opened (its I/O
 * thread, sockets and locks belong to the parent), else 0.  Checked before
 * anything that could take the mutex a parent thread may have held. */
status_t client_check_fork(const redlock_t *client);
/* Frees what client_new made, whatever of it was made (the client is
 * closed, or was never handed out), then the struct itself. */
void client_free(redlock_t *client);
/* The label of master `master` (voters_label) for a module's text: arg is
 * the client. */
const char *client_master_label(void *arg, unsigned master);
/* Test seam (tests/unit/engine_fixture.c), not exported: a client composed as
 * by redlock_open_uv on `loop`, but whose voters are `fakes` (one per option
 * node: voter i is master i, voter.h) and which reads time and runs its timers through tb.  No
 * master is connected (the listed masters are never started, so the notifier
 * finds no address to subscribe at either), and calls run at once: there is
 * no first connection attempt to wait for.  Closed with redlock_close_uv,
 * which shuts the fakes down as it would real voters. */
status_t client_open_for_test(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop,
                              voter_t *const *fakes, const timebase_t *tb);

/* ---- client_loop.c: the loop, its thread, the submit queue, the deadline timer ---- */
/* The client's own uv handles on `loop` (any thread, before the loop runs
 * them): the wake-up, the turn's check, prepare and idle, the deadline timer
 * and the write flusher.  ST_OK or ST_EIO. */
status_t client_loop_init(redlock_t *client, uv_loop_t *loop);
/* redlock_open: starts the I/O thread that runs the client's own loop
 * (client_loop_init done).  ST_EIO when it cannot: the handles are closed and
 * the loop too; the client is left for client_free. */
status_t client_loop_start_thread(redlock_t *client);
/* 1 on the client's own I/O thread (redlock_open's), else 0 (always 0 on a
 * caller's loop: redlock_open_uv). */
int client_on_loop_thread(const redlock_t *client);
/* voters_hooks_t.started: every voter had its first connection attempt:
 * redlock_open returns, and parked calls start. */
void client_loop_started(redlock_t *client);
/* At most this many submitted calls run per drain of the submit queue:
 * 100 000 calls queued at once made one loop callback of a second, with no
 * reply read and no request written meanwhile; the rest wait for the next
 * loop turn, which does not sleep. */
#define CLIENT_DRAIN_MAX 1024
/* A public call that reads the client outside the mutex and queues nothing
 * (redlock_stats): client_enter, under the mutex, refuses it with
 * ST_ECLOSED once the close has begun (as client_submit refuses an op),
 * else counts it in `callers` (0); client_leave counts it out.  The client is
 * not freed while a call is in: client_free waits for the last to leave, so
 * that what the call reads is ordered before the free.  Not for the lock
 * calls' hot path (they hand an op to the loop under the mutex instead). */
status_t client_enter(redlock_t *client);
void client_leave(redlock_t *client);
/* Queues an op for the loop; ST_OK or ST_ECLOSED (op untouched). */
status_t client_submit(redlock_t *client, op_t *op);
/* Appends to the submit queue and wakes the loop; caller holds the mutex and
 * has checked that the client is open. */
void client_enqueue_locked(redlock_t *client, op_t *op);
/* Wakes the loop for work that is not an op (a cancel queued on the
 * engine); caller holds the mutex and has checked that the client is open. */
void client_wake_locked(redlock_t *client);
/* Loop: dispatches an op taken from the submit queue (or made on the loop),
 * or parks an acquisition until every master has had its first connection
 * attempt (it would fail against masters not yet connected). */
void client_run_or_park(redlock_t *client, op_t *op);
/* Loop: a blocking caller's call has ended; `w->sem` is posted at the end of
 * this loop turn, with the others that ended in it (the waiter must stay
 * valid until then: the caller is blocked on it). */
void client_defer_wake(redlock_t *client, sync_waiter_t *w);
/* Loop: wakes the blocked callers whose calls ended (client_defer_wake). */
void client_wake_callers(redlock_t *client);
/* Loop: the deadline timer fires at deadline_ns at the latest (the rounds',
 * the voters' and the close's deadlines share it). */
void client_arm_deadline(redlock_t *client, uint64_t deadline_ns);

/* ---- client_close.c: the close ---- */
/* An op finished: during close, see whether shutdown can proceed. */
void client_maybe_finish_close(redlock_t *client);
/* The close's bound (redlock.h, docs/api.md): what the close has not sent,
 * or has not had answered, this long after it began is given up, the
 * masters' connections are dropped and the keys expire at their TTL.  Long
 * enough for what a close normally waits for: a master that stops answering
 * is dropped after VOTERS_HUNG_REQUEST_TIMEOUTS request timeouts and one that
 * was down may come back within a connect timeout to be sent its replays;
 * and at least CLIENT_CLOSE_MIN_MS, in which healthy masters take tens of
 * thousands of releases (100 000 in 0.7 s).  A master that answers, but
 * slowly, does not hold the close for as long as its queue takes (180 s at
 * the queue's bound). */
#define CLIENT_CLOSE_MIN_MS 5000u
uint64_t client_close_bound_ms(const redlock_options_t *opts);
/* The deadline timer fired: the close's bound is checked (and the timer
 * armed for it again), and the close goes on if it can. */
void client_close_on_timer(redlock_t *client);
/* Loop, CLOSE_QUEUED: closes the modules and the client's own handles;
 * client_module_closed counts them back. */
void client_teardown(redlock_t *client);
/* One module (the voters, the notifier, one of the client's own handles) is
 * closed; the last one frees the client (or lets its thread end). */
void client_module_closed(redlock_t *client);

#endif
