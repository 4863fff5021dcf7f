/* client.c: redlock_t.  Owns the options snapshot, the masters, the loop (its
 * own on an I/O thread, or the caller's), the cross-thread submit queue woken
 * by a uv_async_t, the round deadline timer, and the orderly close. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/client.h"
#include "api/stats.h"
#include "engine/lock.h"
#include "redlock_uv.h"
#include "util/alloc.h"
#include "util/status.h"

static void client_arm_deadline(redlock_t *client, uint64_t deadline_ns);
static void client_module_closed(redlock_t *client);

/* ---- small services ----------------------------------------------------------------- */

uint64_t client_now_ns(const redlock_t *client) { return tb_now_ns(&client->timebase); }

status_t client_check_fork(const redlock_t *client) {
  return fork_guard_forked(&client->fork_guard) ? ST_EFORKED : ST_OK;
}

int client_on_loop_thread(const redlock_t *client) {
  if (!client->run.own_thread)
    return 0;
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &client->run.thread_id);
}

/* round_env_t.decided: a caller's round was decided (redlock_last_votes):
 * the client's latest, and the calling thread's own. */
static void client_record_votes(void *arg, const round_t *round) {
  redlock_t *client = arg;
  votes_entry_t *latest = &client->votes.latest;
  uv_mutex_lock(&client->mutex);
  for (unsigned i = 0; i < round->n_votes; i++) {
    latest->why[i] = round->votes[i].why;
    /* A down master's vote carries why it is down (TLS and AUTH failures
     * are otherwise only in the log), a duplicate's whose it is. */
    voters_why(&client->voters, i, round->votes[i].why, &round->votes[i].req, latest->detail[i],
               VOTER_WHY_LEN);
  }
  latest->outcome = (int)round->outcome;
  if (round->has_caller)
    votes_book_copy_latest_to(&client->votes, &round->caller);
  uv_mutex_unlock(&client->mutex);
}

/* Whose votes a thread reads: on the client's own loop thread (a callback),
 * the latest, which is the round of the call whose callback runs; elsewhere
 * the thread's own last call, or the latest if it has made none the book
 * still holds. */
static const votes_entry_t *client_votes_for_me(const redlock_t *client) {
  if (client_on_loop_thread(client))
    return &client->votes.latest;
  uv_thread_t self = uv_thread_self();
  const votes_entry_t *mine = votes_book_find(&client->votes, &self);
  return mine != NULL ? mine : &client->votes.latest;
}

int redlock_last_votes(redlock_t *client, char *buf, size_t size) {
  static const char *const outcomes[] = {"none", "won", "lost (held)", "lost (no quorum)"};
  if (client == NULL || (buf == NULL && size > 0))
    return REDLOCK_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return REDLOCK_EFORKED;
  char scratch[1];
  if (size == 0) {
    buf = scratch; /* measure only */
    size = sizeof scratch;
  }
  uv_mutex_lock(&client->mutex);
  const votes_entry_t *v = client_votes_for_me(client);
  int total = snprintf(buf, size, "%s:", outcomes[v->outcome]);
  for (unsigned i = 0; i < client->voters.n && total >= 0; i++) {
    size_t used = (size_t)total < size ? (size_t)total : size - 1;
    const char *detail = v->outcome ? v->detail[i] : "";
    int n = snprintf(buf + used, size - used, " %s=%s%s%s%s", voters_label(&client->voters, i),
                     v->outcome ? why_name(v->why[i]) : "-", detail[0] ? " (" : "", detail,
                     detail[0] ? ")" : "");
    total = n < 0 ? n : total + n;
  }
  uv_mutex_unlock(&client->mutex);
  return total;
}

/* ---- deadlines ---------------------------------------------------------------------- */

static void client_close_out_of_time(redlock_t *client);

static void fire_round_deadlines(void *arg) { round_deadlines_fire(arg); }

static void deadline_timer_cb(tb_timer_t *timer) {
  redlock_t *client = timer->data;
  client->deadline.armed_ns = 0;
  /* The voters catch up on their sockets around the rounds' deadlines, and
   * say when their replays are to be judged again. */
  uint64_t due_ns = voters_tick(&client->voters, fire_round_deadlines, &client->rounds);
  if (due_ns != 0)
    client_arm_deadline(client, due_ns);
  /* The close's own bound: whatever the masters' speed. */
  if (client->close.phase == CLOSE_DRAINING && !client->close.out_of_time) {
    if (client_now_ns(client) >= client->close.deadline_ns)
      client_close_out_of_time(client);
    else
      client_arm_deadline(client, client->close.deadline_ns);
  }
  client_maybe_finish_close(client);
}

static void client_arm_deadline(redlock_t *client, uint64_t deadline_ns) {
  /* Deadlines are created in order: an armed timer already fires no later. */
  if (client->deadline.armed_ns != 0 && client->deadline.armed_ns <= deadline_ns)
    return;
  uint64_t now = client_now_ns(client);
  uint64_t delay_ms = deadline_ns > now ? (deadline_ns - now + 999999) / 1000000 : 0;
  client->deadline.armed_ns = deadline_ns;
  if (tb_timer_start(&client->deadline.timer, deadline_timer_cb, delay_ms) != 0) {
    /* Not armed: the next deadline must try again, or no deadline would
     * ever start the timer (each is later than this one). */
    client->deadline.armed_ns = 0;
    client_log(client, REDLOCK_LOG_ERROR,
               "cannot arm the deadline timer: requests may time out late");
  }
}

/* ---- submit queue ------------------------------------------------------------------
 * Calls from other threads reach the loop through `submit_queue`.  The loop
 * drains it (CLIENT_DRAIN_MAX calls at a time) from the wake-up callback,
 * after every poll phase (turn_check) and, when calls are still queued as a
 * turn ends, in one more turn that does not sleep (turn_again).  A submitter
 * writes the wake-up (uv_async_send: a system call) only when the loop said
 * it may sleep (`loop_polling`, decided under the mutex by turn_end with the
 * queue empty), and only for the first call of a batch: while the loop is
 * busy, calls are picked up at no cost to the caller.  The loop's own thread
 * never writes it (client_must_wake). */

status_t client_submit(redlock_t *client, op_t *op) {
  uv_mutex_lock(&client->mutex);
  if (client->queue.state != CLIENT_OPEN) {
    uv_mutex_unlock(&client->mutex);
    return ST_ECLOSED;
  }
  client_enqueue_locked(client, op);
  uv_mutex_unlock(&client->mutex);
  return ST_OK;
}

status_t client_enter(redlock_t *client) {
  uv_mutex_lock(&client->mutex);
  status_t rc = client->queue.state == CLIENT_OPEN ? ST_OK : ST_ECLOSED;
  if (rc == ST_OK)
    client->queue.callers++;
  uv_mutex_unlock(&client->mutex);
  return rc;
}

void client_leave(redlock_t *client) {
  uv_mutex_lock(&client->mutex);
  if (--client->queue.callers == 0 && client->queue.state != CLIENT_OPEN)
    uv_cond_signal(&client->queue.callers_left);
  uv_mutex_unlock(&client->mutex);
}

/* Whether a submitter must write the wake-up: the loop may be asleep in
 * poll.  Not from the loop thread itself: turn_end reads `loop_polling` as it
 * goes to poll, so a call made from a callback of that poll phase (an async
 * call's callback starting the next call) finds it still set, though the loop
 * is awake and drains the queue in the same turn (turn_check); its wake-up
 * would only cost a write, a read and one more loop turn. */
static int client_must_wake(const redlock_t *client, const uv_thread_t *self) {
  return client->queue.loop_polling && !uv_thread_equal(self, &client->queue.poller);
}

void client_enqueue_locked(redlock_t *client, op_t *op) {
  op->thread = uv_thread_self(); /* the caller's thread: its rounds' votes are kept for it */
  op->has_thread = 1;
  int was_empty = list_empty(&client->queue.ops);
  list_insert_tail(&client->queue.ops, &op->link);
  atomic_store_explicit(&client->queue.queued, 1, memory_order_relaxed);
  /* Sent under the mutex so that a close cannot free the handle in between. */
  if (was_empty && client_must_wake(client, &op->thread)) {
    client->queue.loop_polling = 0; /* one wake-up per batch */
    /* Fails only on a handle being closed: the teardown closes it after the
     * state left OPEN, and nothing is enqueued after that. */
    (void)uv_async_send(&client->run.wakeup);
  }
}

void client_wake_locked(redlock_t *client) {
  atomic_store_explicit(&client->queue.queued, 1, memory_order_relaxed);
  uv_thread_t self = uv_thread_self();
  if (client_must_wake(client, &self)) {
    client->queue.loop_polling = 0;
    (void)uv_async_send(&client->run.wakeup); /* as in client_enqueue_locked */
  }
}

static void client_begin_close(redlock_t *client);
static void client_teardown(redlock_t *client);

void client_run_or_park(redlock_t *client, op_t *op) {
  if (op->ops->acquires && !voters_started(&client->voters)) {
    list_insert_tail(&client->queue.parked, &op->link);
    op->parked = 1;
    return;
  }
  op->ops->dispatch(op);
}

/* Runs what was submitted (loop). */
static void client_drain(redlock_t *client) {
  list_node_t batch;
  list_init(&batch);
  uv_mutex_lock(&client->mutex);
  for (unsigned n = 0; n < CLIENT_DRAIN_MAX && !list_empty(&client->queue.ops); n++) {
    list_node_t *first = client->queue.ops.next;
    list_remove(first);
    list_insert_tail(&batch, first);
  }
  int rest = !list_empty(&client->queue.ops);
  atomic_store_explicit(&client->queue.queued, rest, memory_order_relaxed);
  client->queue.loop_polling = 0;
  uv_mutex_unlock(&client->mutex);
  while (!list_empty(&batch)) {
    op_t *op = list_entry(batch.next, op_t, link);
    list_remove(&op->link);
    if (client->close.phase != CLOSE_NONE && op->ops->acquires)
      op->ops->fail(op, ST_ECANCELED);
    else
      client_run_or_park(client, op);
  }
  /* After the batch: a call canceled right after its submission was started
   * above and ends now. */
  engine_run_cancels(&client->engine);
  if (client->close.phase == CLOSE_QUEUED)
    client_teardown(client);
}

static void wakeup_cb(uv_async_t *async) { client_drain(async->data); }

/* After the poll phase: calls submitted while the loop was busy.  The peek
 * skips the mutex on turns with nothing queued. */
static void turn_check_cb(uv_check_t *check) {
  redlock_t *client = check->data;
  if (atomic_load_explicit(&client->queue.queued, memory_order_relaxed))
    client_drain(client);
}

static void turn_again_cb(uv_idle_t *idle) {
  redlock_t *client = idle->data;
  (void)uv_idle_stop(idle); /* cannot fail: it only unlinks the handle */
  client_drain(client);
}

void client_defer_wake(redlock_t *client, sync_waiter_t *w) {
  if (client->close.phase == CLOSE_TEARING_DOWN) {
    uv_sem_post(&w->sem); /* turn_end may not run again */
    return;
  }
  list_insert_tail(&client->run.wakes, &w->link);
}

/* Wakes the blocked callers whose calls ended.  Done once per turn, after the
 * turn's work and its writes (the flusher's prepare handle runs before this
 * one): a caller woken at once from a reply callback would, on a busy
 * machine, preempt the loop thread in the middle of its turn. */
static void client_wake_callers(redlock_t *client) {
  while (!list_empty(&client->run.wakes)) {
    sync_waiter_t *w = list_entry(client->run.wakes.next, sync_waiter_t, link);
    list_remove(&w->link);
    uv_sem_post(&w->sem); /* the caller may return, and w vanish, at once */
  }
}

/* Before the loop blocks in poll: wake the callers, then sleep only if
 * nothing was submitted meanwhile (callers just woken often submit their next
 * call at once); otherwise one more turn without sleeping picks it up. */
static void turn_end_cb(uv_prepare_t *prepare) {
  redlock_t *client = prepare->data;
  client_wake_callers(client);
  uv_mutex_lock(&client->mutex);
  int queued = !list_empty(&client->queue.ops) || engine_cancels_pending_locked(&client->engine);
  client->queue.loop_polling = !queued;
  client->queue.poller = uv_thread_self();
  uv_mutex_unlock(&client->mutex);
  if (queued)
    (void)uv_idle_start(&client->run.turn_again, turn_again_cb); /* cannot fail: cb is set */
}

/* voters_hooks_t.started: every voter had its first connection attempt:
 * redlock_open returns, and parked calls start. */
static void client_voters_started(void *arg) {
  redlock_t *client = arg;
  if (client->run.own_thread)
    uv_sem_post(&client->run.startup_sem);
  while (!list_empty(&client->queue.parked)) {
    op_t *op = list_entry(client->queue.parked.next, op_t, link);
    list_remove(&op->link);
    op->parked = 0;
    op->ops->dispatch(op);
  }
}

/* ---- close ----------------------------------------------------------------------------- */

/* The struct's own memory, last: from here the allocator may change again
 * (once no other client is open). */
static void client_dealloc(redlock_t *client) {
  rl_free(client);
  alloc_release();
}

static void client_free(redlock_t *client) {
  /* The client is closed (or was never handed out): no call enters any more.
   * Those still in (redlock_stats) leave before anything is freed; taking
   * the mutex also orders before the free whatever a call read before it
   * last took the mutex (the fork check, a refused call's arguments). */
  uv_mutex_lock(&client->mutex);
  while (client->queue.callers > 0)
    uv_cond_wait(&client->queue.callers_left, &client->mutex);
  uv_mutex_unlock(&client->mutex);
  notify_free(&client->notify);
  stats_free(client->stats);
  voters_free(&client->voters);
  votes_book_free(&client->votes);
  fork_guard_free(&client->fork_guard);
  tls_client_free(client->tls);
  engine_free(&client->engine);
  pool_clear(&client->round_pool);
  options_clear(&client->opts);
  uv_cond_destroy(&client->queue.callers_left);
  uv_mutex_destroy(&client->mutex);
  if (client->run.own_thread)
    uv_sem_destroy(&client->run.startup_sem);
  client_dealloc(client);
}

uint64_t client_close_bound_ms(const redlock_options_t *opts) {
  uint64_t ms = (uint64_t)opts->connect_timeout_ms +
                (uint64_t)VOTERS_HUNG_REQUEST_TIMEOUTS * opts->request_timeout_ms;
  return ms > CLIENT_CLOSE_MIN_MS ? ms : CLIENT_CLOSE_MIN_MS;
}

/* The close's bound is over (deadline timer, outside hiredis callbacks):
 * says once what is left, drops every master's connection for good (what
 * they were sent and did not answer, and what is kept for them, is given
 * up: counted as abandoned), and releases the leases not yet released
 * without sending anything, which frees their handles.  The keys expire at
 * their TTL. */
static void client_close_out_of_time(redlock_t *client) {
  client->close.out_of_time = 1;
  unsigned held = 0, owed = 0;
  for (list_node_t *h = client->engine.held_locks.next; h != &client->engine.held_locks;
       h = h->next)
    held++;
  char masters[256] = "";
  size_t used = 0;
  for (unsigned i = 0; i < client->voters.n; i++) {
    unsigned n = voters_releases_owed(&client->voters, i);
    owed += n;
    if (n > 0 && used < sizeof masters) {
      int w = snprintf(masters + used, sizeof masters - used, "%s%s: %u", used > 0 ? ", " : "",
                       voters_label(&client->voters, i), n);
      used += w > 0 ? (size_t)w : 0;
    }
  }
  client_log(
      client, REDLOCK_LOG_WARN,
      "close: not done within its bound of %llu ms: %u release(s) unanswered or unsent%s%s%s, "
      "%u lock(s) not yet released; the masters' connections are dropped and what they "
      "still hold is left to expire at their TTL",
      (unsigned long long)client_close_bound_ms(&client->opts), owed, owed ? " (" : "", masters,
      owed ? ")" : "", held);
  client->close.preparing = 1; /* rounds settling below do not recurse into the close */
  voters_abandon(&client->voters);
  /* No master takes anything now: each release round is decided at once
   * (what a round still waits on, if anything, lets the rest go as it
   * settles, through client_maybe_finish_close). */
  while (engine_release_held(&client->engine) &&
         round_env_pending(&client->rounds) < LOCK_CLOSE_WINDOW) {
  }
  client->close.preparing = 0;
}

static void client_begin_close(redlock_t *client) {
  if (client->close.phase != CLOSE_NONE)
    return;
  client->close.phase = CLOSE_DRAINING;
  client->close.deadline_ns =
      client_now_ns(client) + client_close_bound_ms(&client->opts) * 1000000u;
  client_arm_deadline(client, client->close.deadline_ns);
  client->notify.closing = 1;  /* no more reconnects of subscribers */
  client->close.preparing = 1; /* no teardown until the releases below are out */
  client_log(client, REDLOCK_LOG_DEBUG, "closing");
  /* Parked calls never started: they fail as canceled, with the others
   * the engine cancels. */
  while (!list_empty(&client->queue.parked)) {
    op_t *op = list_entry(client->queue.parked.next, op_t, link);
    list_remove(&op->link);
    op->parked = 0;
    list_insert_tail(&client->engine.ops_in_flight, &op->link);
    op->ops->fail(op, ST_ECANCELED);
  }
  engine_begin_close(&client->engine);
  client->close.preparing = 0;
  client_maybe_finish_close(client);
}

/* The close's op (close_op in struct redlock): taken from the submit queue
 * in order, after the calls queued before it. */
static void close_op_dispatch(op_t *op) {
  client_begin_close(container_of(op, redlock_t, close.op));
}

/* Never failed (it is not an acquisition) nor freed (struct redlock holds
 * it): a call here is a bug of the library. */
static void close_op_fail(op_t *op, status_t status) {
  (void)op;
  (void)status;
  abort();
}

static void close_op_free(op_t *op) {
  (void)op;
  abort();
}

static const op_ops_t close_op_ops = {.name = "close",
                                      .acquires = 0,
                                      .dispatch = close_op_dispatch,
                                      .fail = close_op_fail,
                                      .free = close_op_free};

void client_maybe_finish_close(redlock_t *client) {
  if (client->close.phase != CLOSE_DRAINING || client->close.preparing)
    return;
  /* Held locks are released a window at a time; each round that settles
   * lets the next ones go.  Flagged, so that rounds settling inside (masters
   * down) do not recurse back here. */
  client->close.preparing = 1;
  int holding = engine_release_held(&client->engine);
  client->close.preparing = 0;
  if (holding || engine_busy(&client->engine) || !round_env_idle(&client->rounds) ||
      !list_empty(&client->queue.parked))
    return;
  /* Releases replayed to a master that came back are owed too. */
  if (voters_owe_releases(&client->voters))
    return;
  /* Tear down from the wake-up callback, never from inside a hiredis one. */
  client->close.phase = CLOSE_QUEUED;
  (void)uv_async_send(&client->run.wakeup); /* not closed before the teardown it queues */
}

static void client_handle_closed_cb(uv_handle_t *handle) { client_module_closed(handle->data); }

static void deadline_timer_closed(tb_timer_t *timer) { client_module_closed(timer->data); }

static void flusher_closed_cb(uv_handle_t *handle) {
  conn_flusher_t *flusher = handle->data;
  client_module_closed(container_of(flusher, redlock_t, run.flusher));
}

static void notify_closed_cb(void *arg) { client_module_closed(arg); }

/* One module (the voters, the notifier, one of the client's own handles) is
 * closed; the last one frees the client (or lets its thread end). */
static void client_module_closed(redlock_t *client) {
  if (--client->close.modules_open > 0)
    return;
  uv_mutex_lock(&client->mutex);
  client->queue.state = CLIENT_CLOSED;
  uv_mutex_unlock(&client->mutex);
  if (!client->run.own_thread) {
    void (*closed)(void *) = client->close.closed_cb;
    void *arg = client->close.closed_arg;
    client_free(client);
    if (closed != NULL)
      closed(arg);
  }
}

/* The client's own handles: deadline timer, wake-up, the turn's check,
 * prepare and idle, write flusher. */
#define CLIENT_OWN_HANDLES 6

static void client_teardown(redlock_t *client) {
  client_wake_callers(client);
  client->close.phase = CLOSE_TEARING_DOWN;
  client->close.modules_open = 1 /* voters */ + 1 /* notifier */ + CLIENT_OWN_HANDLES;
  /* Submitters send their wake-up under the mutex while the state is OPEN;
   * it is CLOSING now, so none can touch `wakeup` once we hold the mutex. */
  uv_mutex_lock(&client->mutex);
  uv_mutex_unlock(&client->mutex);
  voters_shutdown(&client->voters);
  notify_shutdown(&client->notify, notify_closed_cb);
  tb_timer_close(&client->deadline.timer, deadline_timer_closed);
  uv_close((uv_handle_t *)&client->run.wakeup, client_handle_closed_cb);
  uv_close((uv_handle_t *)&client->run.turn_check, client_handle_closed_cb);
  uv_close((uv_handle_t *)&client->run.turn_end, client_handle_closed_cb);
  uv_close((uv_handle_t *)&client->run.turn_again, client_handle_closed_cb);
  conn_flusher_close(&client->run.flusher, flusher_closed_cb);
}

/* ---- open ----------------------------------------------------------------------------- */

/* ---- composition: what the modules below get from the client ------------------------ */

/* voters_hooks_t.news: a voter's news, for stats and events. */
static void client_on_voter(void *arg, unsigned index, const voter_news_t *news) {
  redlock_t *client = arg;
  if (client->stats != NULL)
    stats_voter_news_(client->stats, index, news);
}

static void client_voters_arm(void *arg, uint64_t due_ns) { client_arm_deadline(arg, due_ns); }

static void client_voters_settled(void *arg) { client_maybe_finish_close(arg); }

static void client_voters_closed(void *arg) { client_module_closed(arg); }

static void rounds_arm_deadline(void *arg, uint64_t deadline_ns) {
  client_arm_deadline(arg, deadline_ns);
}

static void rounds_settled(void *arg) { client_maybe_finish_close(arg); }

/* notify_t.wake: a release was announced for what a waiting call waits on. */
static void client_wake_waiter(void *arg, notify_waiter_t *w) {
  (void)arg;
  lock_wake(w);
}

/* Fills in what the modules get from the client (the loop comes with
 * client_init_handles, the stats after stats_new). */
static status_t client_compose(redlock_t *client, voter_t *const *fakes) {
  const redlock_options_t *opts = &client->opts;
  const voters_config_t cfg = {
      .tb = &client->timebase,
      .flusher = &client->run.flusher,
      .tls = client->tls,
      .log = &client->log,
      .rng = &client->random.rng,
      .mutex = &client->mutex,
      .connect_timeout_ms = opts->connect_timeout_ms,
      .request_timeout_ms = opts->request_timeout_ms,
      .max_ttl_ms = opts->max_ttl_ms,
      .quarantine = opts->quarantine,
      .state_dir = opts->state_dir,
      .allow = (const char *const *)opts->allow_discovered,
      .n_allow = opts->n_allow_discovered,
  };
  const voters_hooks_t hooks = {
      .started = client_voters_started,
      .news = client_on_voter,
      .arm = client_voters_arm,
      .settled = client_voters_settled,
      .closed = client_voters_closed,
      .arg = client,
  };
  int rc = voters_init(&client->voters, &cfg, &hooks, opts->nodes, (unsigned)opts->n_nodes, fakes);
  round_env_init(&client->rounds);
  client->rounds.n_masters = (unsigned)opts->n_nodes;
  client->rounds.request_timeout_ns = (uint64_t)opts->request_timeout_ms * 1000000u;
  client->rounds.transport = &voters_transport;
  client->rounds.transport_arg = &client->voters;
  client->rounds.log = &client->log;
  client->rounds.pool = &client->round_pool;
  client->rounds.skip_slots = rc == 0 && !voters_route_by_slot(&client->voters);
  client->rounds.caps_seen = &client->voters.caps_seen;
  client->rounds.arm_deadline = rounds_arm_deadline;
  client->rounds.settled = rounds_settled;
  client->rounds.decided = client_record_votes;
  client->rounds.owner_arg = client;
  client->rounds.tb = &client->timebase;
  voters_notify_init(&client->voters, &client->notify, client_wake_waiter, client);
  return rc;
}

/* engine_owner_t: what the engine asks of the client. */
static void engine_op_ended(void *arg) { client_maybe_finish_close(arg); }
static void engine_run(void *arg, op_t *op) { client_run_or_park(arg, op); }
static int engine_is_open(void *arg) {
  redlock_t *client = arg;
  uv_mutex_lock(&client->mutex);
  int open = client->queue.state == CLIENT_OPEN;
  uv_mutex_unlock(&client->mutex);
  return open;
}
static const engine_owner_t engine_owner = {
    .op_ended = engine_op_ended,
    .run = engine_run,
    .is_open = engine_is_open,
};

/* What the engine gets from the client (the stats and their hooks come
 * after stats_new, the clock with the loop). */
static void client_compose_engine(redlock_t *client) {
  engine_t *engine = &client->engine;
  engine->opts = &client->opts;
  engine->log = &client->log;
  engine->tb = &client->timebase;
  engine->rounds = &client->rounds;
  engine->notify = &client->notify;
  engine->owner = &engine_owner;
  engine->owner_arg = client;
  engine->rng = &client->random.rng;
  engine->values = &client->random.values;
  engine->mutex = &client->mutex;
}

static const char *client_master_label(void *arg, unsigned master) {
  redlock_t *client = arg;
  return voters_label(&client->voters, master);
}

/* On the loop thread, the only writer of what a voter's detail reads: no
 * lock is needed (and the event callback may take the client's). */
static void client_vote_detail(void *arg, unsigned master, int why, const node_req_t *req,
                               char *buf, size_t size) {
  redlock_t *client = arg;
  voters_why(&client->voters, master, why, req, buf, size);
}

/* What the stats read (their figures come after the nodes, in client_new). */
static void client_compose_stats(redlock_t *client) {
  client->stats_env = (stats_env_t){
      .opts = &client->opts,
      .rounds = &client->rounds,
      .tb = &client->timebase,
      .n_masters = (unsigned)client->opts.n_nodes,
      .quorum = quorum_size((unsigned)client->opts.n_nodes),
      .label = client_master_label,
      .vote_detail = client_vote_detail,
      .label_arg = client,
  };
}

/* loop: the caller's (redlock_open_uv), or NULL for the client's own; tb:
 * the clock and timers, or NULL for libuv's on that loop; fakes: the unit
 * tests' voters, or NULL for the options' masters. */
static status_t client_new(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop,
                           const timebase_t *tb, voter_t *const *fakes) {
  if (out == NULL)
    return ST_EINVAL;
  *out = NULL;
  if (opts == NULL || opts->n_nodes == 0)
    return ST_EINVAL;
  alloc_hold(); /* the allocator stays until client_dealloc */
  redlock_t *client = rl_calloc(1, sizeof *client);
  if (client == NULL) {
    alloc_release();
    return ST_ENOMEM;
  }
  if (uv_cond_init(&client->queue.callers_left) != 0) {
    client_dealloc(client);
    return ST_ENOMEM;
  }
  if (uv_mutex_init(&client->mutex) != 0) {
    uv_cond_destroy(&client->queue.callers_left);
    client_dealloc(client);
    return ST_ENOMEM;
  }
  if (options_copy(&client->opts, opts) != ST_OK) {
    uv_mutex_destroy(&client->mutex);
    uv_cond_destroy(&client->queue.callers_left);
    client_dealloc(client);
    return ST_ENOMEM;
  }
  if (tb != NULL)
    client->timebase = *tb;
  else
    timebase_uv_init(&client->timebase, loop != NULL ? loop : &client->run.own_loop);
  client->log = (log_sink_t){.cb = opts->log_cb, .arg = opts->log_arg, .level = opts->log_level};
  fork_guard_init(&client->fork_guard);
  const unsigned n_nodes = (unsigned)opts->n_nodes;
  status_t votes_rc = votes_book_init(&client->votes, n_nodes);
  pool_init(&client->round_pool);
  list_init(&client->queue.ops);
  list_init(&client->queue.parked);
  list_init(&client->run.wakes);
  client_compose_engine(client);
  client_compose_stats(client);
  status_t mem_rc = engine_init(&client->engine);
  status_t rc = votes_rc == ST_OK && mem_rc == ST_OK ? ST_OK : ST_ENOMEM;
  for (unsigned i = 0; rc == ST_OK && i < n_nodes; i++) {
    if (client->opts.nodes[i].tls) {
      /* One SSL_CTX for the client: trust store and client key loaded once,
       * shared by every TLS connection (all on the loop thread). */
      char why[384];
      rc = tls_client_new(&client->tls, &client->opts, why, sizeof why);
      if (rc != ST_OK)
        client_log(client, REDLOCK_LOG_ERROR, "redlock_open: TLS: %s", why);
      else if (!client->opts.tls_verify)
        /* Once per client, here: a per-connection warning would repeat on
         * every reconnect and drown the log. */
        client_log(client, REDLOCK_LOG_WARN,
                   "redlock_open: TLS certificate verification is off "
                   "(redlock_options_set_tls_verify 0): rediss:// connections are encrypted but "
                   "any server can pose as a master");
      break;
    }
  }
  status_t compose_rc = client_compose(client, fakes);
  if (rc == ST_OK)
    rc = compose_rc;
  if (rc == ST_OK)
    rc = stats_new(&client->stats_env, &client->stats);
  if (rc == ST_OK && client->stats != NULL) {
    client->rounds.stats = client->stats;
    client->engine.stats = client->stats;
    client->engine.hooks = &stats_engine_hooks;
    client->engine.hooks_arg = client->stats;
    voters_set_stats(&client->voters, client->stats);
  }
  uint64_t seed = 0;
  if (rc == ST_OK)
    rc = random_bytes(&seed, sizeof seed);
  if (rc != ST_OK) {
    client_free(client);
    return rc;
  }
  jitter_rng_seed(&client->random.rng, seed);
  *out = client;
  return ST_OK;
}

/* The client's own uv handles on `loop` (any thread, before the loop runs
 * them). */
static status_t client_init_handles(redlock_t *client, uv_loop_t *loop) {
  client->run.loop = loop;
  voters_set_loop(&client->voters, loop);
  if (uv_async_init(loop, &client->run.wakeup, wakeup_cb) != 0)
    return ST_EIO;
  client->run.wakeup.data = client;
  /* Until its first turn ends the loop may be asleep on other work: the
   * first call wakes it (a spare wake-up is harmless). */
  client->queue.loop_polling = 1;
  /* libuv's check, prepare, idle and timer inits and starts return 0 on an
   * initialised loop (they only link the handle in); a nonzero return would
   * come from a libuv we do not know, and is refused before the loop runs
   * any of them. */
  if (uv_check_init(loop, &client->run.turn_check) != 0 ||
      uv_prepare_init(loop, &client->run.turn_end) != 0 ||
      uv_idle_init(loop, &client->run.turn_again) != 0 ||
      uv_check_start(&client->run.turn_check, turn_check_cb) != 0 ||
      uv_prepare_start(&client->run.turn_end, turn_end_cb) != 0)
    return ST_EIO;
  client->run.turn_check.data = client;
  client->run.turn_end.data = client;
  client->run.turn_again.data = client;
  /* Not these three: the wake-up alone keeps a caller's loop alive. */
  uv_unref((uv_handle_t *)&client->run.turn_check);
  uv_unref((uv_handle_t *)&client->run.turn_end);
  uv_unref((uv_handle_t *)&client->run.turn_again);
  if (tb_timer_init(&client->timebase, &client->deadline.timer, client) != 0)
    return ST_EIO;
  if (conn_flusher_init(&client->run.flusher, loop) != 0)
    return ST_EIO;
  return ST_OK;
}

static void loop_thread_main(void *arg) {
  redlock_t *client = arg;
  client->run.thread_id = uv_thread_self();
  voters_start(&client->voters);
  uv_run(&client->run.own_loop, UV_RUN_DEFAULT);
  /* Every handle is closed: the loop has nothing left. */
  uv_loop_close(&client->run.own_loop);
  if (client->run.free_on_exit) {
    uv_thread_t self = uv_thread_self();
    client_free(client);
    pthread_detach(self);
  }
}

int redlock_open(redlock_t **out, const redlock_options_t *opts) {
  if (out == NULL)
    return REDLOCK_EINVAL;
  *out = NULL;
  redlock_t *client;
  int rc = client_new(&client, opts, NULL, NULL, NULL);
  if (rc != 0)
    return rc;
  client->run.own_thread = 1;
  if (uv_sem_init(&client->run.startup_sem, 0) != 0) {
    client->run.own_thread = 0;
    client_free(client);
    return REDLOCK_EIO;
  }
  /* libuv's allocation failing is ENOMEM; anything else (no descriptor
   * left for its pipes, ...) is EIO. */
  rc = uv_loop_init(&client->run.own_loop);
  if (rc != 0) {
    client_free(client);
    return rc == UV_ENOMEM ? REDLOCK_ENOMEM : REDLOCK_EIO;
  }
  if (client_init_handles(client, &client->run.own_loop) != 0) {
    uv_loop_close(&client->run.own_loop);
    client_free(client);
    return REDLOCK_EIO;
  }
  /* The I/O thread takes no asynchronous signals: they belong to the
   * application's threads, and a write to a master that just died must give
   * EPIPE, not a process-killing SIGPIPE.  The new thread inherits the mask. */
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  rc = uv_thread_create(&client->run.thread, loop_thread_main, client);
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  if (rc != 0) {
    uv_close((uv_handle_t *)&client->run.wakeup, NULL);
    uv_close((uv_handle_t *)&client->run.turn_check, NULL);
    uv_close((uv_handle_t *)&client->run.turn_end, NULL);
    uv_close((uv_handle_t *)&client->run.turn_again, NULL);
    tb_timer_close(&client->deadline.timer, NULL);
    uv_close((uv_handle_t *)&client->run.flusher.prepare, NULL);
    uv_run(&client->run.own_loop, UV_RUN_DEFAULT);
    uv_loop_close(&client->run.own_loop);
    client_free(client);
    return REDLOCK_EIO;
  }
  /* Bounded by the connect timeout: every voter's first attempt has a timer. */
  uv_sem_wait(&client->run.startup_sem);
  *out = client;
  return 0;
}

int redlock_open_uv(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop) {
  if (out == NULL)
    return REDLOCK_EINVAL;
  *out = NULL;
  if (loop == NULL)
    return REDLOCK_EINVAL;
  redlock_t *client;
  int rc = client_new(&client, opts, loop, NULL, NULL);
  if (rc != 0)
    return rc;
  rc = client_init_handles(client, loop);
  if (rc != 0) {
    client_free(client);
    return rc;
  }
  voters_start(&client->voters);
  *out = client;
  return 0;
}

status_t client_open_for_test(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop,
                              voter_t *const *fakes, const timebase_t *tb) {
  redlock_t *client;
  if (fakes == NULL || tb == NULL)
    return ST_EINVAL;
  int rc = client_new(out, opts, loop, tb, fakes);
  if (rc != 0)
    return rc;
  client = *out;
  rc = client_init_handles(client, loop);
  if (rc != 0) {
    *out = NULL;
    client_free(client);
    return rc;
  }
  return ST_OK;
}

/* Marks the client closing and queues the close for the loop: ST_OK, or
 * ST_ECLOSED when a close was already asked for (that one goes on). */
static status_t client_request_close(redlock_t *client) {
  op_t *op = &client->close.op;
  uv_mutex_lock(&client->mutex);
  if (client->queue.state != CLIENT_OPEN) {
    uv_mutex_unlock(&client->mutex);
    return ST_ECLOSED;
  }
  client->queue.state = CLIENT_CLOSING;
  op->ops = &close_op_ops;
  op->engine = &client->engine;
  client_enqueue_locked(client, op);
  uv_mutex_unlock(&client->mutex);
  return ST_OK;
}

void redlock_close_uv(redlock_t *client, void (*closed)(void *arg), void *arg) {
  if (client == NULL || client->run.own_thread || client_check_fork(client) != ST_OK)
    return;
  client->close.closed_cb = closed;
  client->close.closed_arg = arg;
  client_request_close(client);
}

void redlock_close(redlock_t *client) {
  /* In a forked child the parent's client is left alone: its thread does not
   * exist here, and freeing it could touch a mutex held at the fork. */
  if (client == NULL || client_check_fork(client) != ST_OK)
    return;
  if (!client->run.own_thread) {
    redlock_close_uv(client, NULL, NULL);
    return;
  }
  if (client_on_loop_thread(client)) {
    /* From one of our callbacks: the loop thread frees the client on exit. */
    client->run.free_on_exit = 1;
    client_request_close(client);
    return;
  }
  client_request_close(client);
  uv_thread_join(&client->run.thread);
  client_free(client);
}
