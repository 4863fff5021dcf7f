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

#include "lock.h"
#include "redlock_uv.h"
#include "stats.h"
#include "transport.h"

static void client_arm_deadline(redlock_t *client, uint64_t deadline_ns);
static void client_module_closed(redlock_t *client);

/* ---- small services ----------------------------------------------------------------- */

uint32_t client_random(redlock_t *client) { return jitter_rng_next(&client->rng); }

uint64_t client_now_ns(const redlock_t *client) { return client->rounds.now_ns(); }

int client_check_fork(const redlock_t *client) {
  return fork_guard_forked(&client->fork_guard) ? REDLOCK_EFORKED : 0;
}

int client_on_loop_thread(const redlock_t *client) {
  if (!client->own_thread)
    return 0;
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &client->loop_thread_id);
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
    if (round->votes[i].why == WHY_DOWN)
      memcpy(latest->detail[i], client->nodes[i].down_why, NODE_DOWN_WHY_LEN);
    else if (round->votes[i].why == WHY_DUPLICATE)
      memcpy(latest->detail[i], client->nodes[i].dup_why, NODE_DOWN_WHY_LEN);
    else if (round->votes[i].why == WHY_BUSY)
      node_busy_why(&client->nodes[i], latest->detail[i], NODE_DOWN_WHY_LEN);
    else
      latest->detail[i][0] = '\0';
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
  if (client_check_fork(client) != 0)
    return REDLOCK_EFORKED;
  char scratch[1];
  if (size == 0) {
    buf = scratch; /* measure only */
    size = sizeof scratch;
  }
  uv_mutex_lock(&client->mutex);
  const votes_entry_t *v = client_votes_for_me(client);
  int total = snprintf(buf, size, "%s:", outcomes[v->outcome]);
  for (unsigned i = 0; i < client->n_nodes && total >= 0; i++) {
    size_t used = (size_t)total < size ? (size_t)total : size - 1;
    const char *detail = v->outcome ? v->detail[i] : "";
    int n = snprintf(buf + used, size - used, " %s=%s%s%s%s", client->nodes[i].addr.label,
                     v->outcome ? why_name(v->why[i]) : "-", detail[0] ? " (" : "", detail,
                     detail[0] ? ")" : "");
    total = n < 0 ? n : total + n;
  }
  uv_mutex_unlock(&client->mutex);
  return total;
}

/* ---- deadlines ---------------------------------------------------------------------- */

static void client_close_out_of_time(redlock_t *client);

static void deadline_timer_cb(uv_timer_t *timer) {
  redlock_t *client = timer->data;
  client->deadline_armed_ns = 0;
  /* Timers run before the loop reads sockets: replies that arrived in time
   * may be waiting unread, above all when this thread was slow to run. */
  for (unsigned i = 0; i < client->n_nodes; i++) {
    node_write_late(&client->nodes[i]);
    node_read_pending(&client->nodes[i]);
  }
  round_deadlines_fire(&client->rounds);
  /* Hung masters are dropped after the FIFO walk: dropping runs the NULL
   * callbacks of their requests, which may free rounds.  Replies that came
   * in during a long walk are read first, so that only a master is blamed. */
  for (unsigned i = 0; i < client->n_nodes; i++) {
    node_read_pending(&client->nodes[i]);
    node_drop_if_hung(&client->nodes[i]);
  }
  /* Replayed releases are in no round: judge their master again when it
   * would be hung, or close could wait forever for a silent one. */
  for (unsigned i = 0; i < client->n_nodes; i++) {
    uint64_t due_ns = node_replays_due_ns(&client->nodes[i]);
    if (due_ns != 0)
      client_arm_deadline(client, due_ns);
  }
  /* The close's own bound: whatever the masters' speed. */
  if (client->close_phase == CLOSE_DRAINING && !client->close_out_of_time) {
    if (client_now_ns(client) >= client->close_deadline_ns)
      client_close_out_of_time(client);
    else
      client_arm_deadline(client, client->close_deadline_ns);
  }
  client_maybe_finish_close(client);
}

static void client_arm_deadline(redlock_t *client, uint64_t deadline_ns) {
  /* Deadlines are created in order: an armed timer already fires no later. */
  if (client->deadline_armed_ns != 0 && client->deadline_armed_ns <= deadline_ns)
    return;
  uint64_t now = client_now_ns(client);
  uint64_t delay_ms = deadline_ns > now ? (deadline_ns - now + 999999) / 1000000 : 0;
  client->deadline_armed_ns = deadline_ns;
  uv_timer_start(&client->deadline_timer, deadline_timer_cb, delay_ms, 0);
}

/* ---- submit queue ------------------------------------------------------------------
 * Calls from other threads reach the loop through `submit_queue`.  The loop
 * drains it (CLIENT_DRAIN_MAX calls at a time) from the wake-up callback,
 * after every poll phase (turn_check) and, when calls are still queued as a
 * turn ends, in one more turn that does not sleep (turn_again).  A submitter
 * writes the wake-up (uv_async_send: a system call) only when the loop said
 * it may sleep (`loop_polling`, decided under the mutex by turn_end with the
 * queue empty), and only for the first call of a batch: while the loop is
 * busy, calls are picked up at no cost to the caller. */

int client_submit(redlock_t *client, op_t *op) {
  uv_mutex_lock(&client->mutex);
  if (client->state != CLIENT_OPEN) {
    uv_mutex_unlock(&client->mutex);
    return REDLOCK_ECLOSED;
  }
  client_enqueue_locked(client, op);
  uv_mutex_unlock(&client->mutex);
  return 0;
}

int client_enter(redlock_t *client) {
  uv_mutex_lock(&client->mutex);
  int rc = client->state == CLIENT_OPEN ? 0 : REDLOCK_ECLOSED;
  if (rc == 0)
    client->callers++;
  uv_mutex_unlock(&client->mutex);
  return rc;
}

void client_leave(redlock_t *client) {
  uv_mutex_lock(&client->mutex);
  if (--client->callers == 0 && client->state != CLIENT_OPEN)
    uv_cond_signal(&client->callers_left);
  uv_mutex_unlock(&client->mutex);
}

void client_enqueue_locked(redlock_t *client, op_t *op) {
  op->thread = uv_thread_self(); /* the caller's thread: its rounds' votes are kept for it */
  op->has_thread = 1;
  int was_empty = list_empty(&client->submit_queue);
  list_insert_tail(&client->submit_queue, &op->link);
  atomic_store_explicit(&client->submits_queued, 1, memory_order_relaxed);
  /* Sent under the mutex so that a close cannot free the handle in between. */
  if (was_empty && client->loop_polling) {
    client->loop_polling = 0; /* one wake-up per batch */
    uv_async_send(&client->wakeup);
  }
}

static void client_begin_close(redlock_t *client);
static void client_teardown(redlock_t *client);

void client_run_or_park(redlock_t *client, op_t *op) {
  if (client->startup_left > 0 && op->kind == OP_LOCK) {
    list_insert_tail(&client->parked_ops, &op->link);
    return;
  }
  op_dispatch(op);
}

/* Runs what was submitted (loop). */
static void client_drain(redlock_t *client) {
  list_node_t batch;
  list_init(&batch);
  uv_mutex_lock(&client->mutex);
  for (unsigned n = 0; n < CLIENT_DRAIN_MAX && !list_empty(&client->submit_queue); n++) {
    list_node_t *first = client->submit_queue.next;
    list_remove(first);
    list_insert_tail(&batch, first);
  }
  int rest = !list_empty(&client->submit_queue);
  atomic_store_explicit(&client->submits_queued, rest, memory_order_relaxed);
  client->loop_polling = 0;
  uv_mutex_unlock(&client->mutex);
  while (!list_empty(&batch)) {
    op_t *op = list_entry(batch.next, op_t, link);
    list_remove(&op->link);
    if (op->kind == OP_CLOSE) {
      client_begin_close(client);
    } else if (op->kind == OP_ELECT || op->kind == OP_RESIGN) {
      election_dispatch(op);
    } else if (client->close_phase != CLOSE_NONE && op->kind == OP_LOCK) {
      op_fail(op, REDLOCK_ECANCELED);
    } else {
      client_run_or_park(client, op);
    }
  }
  if (client->close_phase == CLOSE_QUEUED)
    client_teardown(client);
}

static void wakeup_cb(uv_async_t *async) { client_drain(async->data); }

/* After the poll phase: calls submitted while the loop was busy.  The peek
 * skips the mutex on turns with nothing queued. */
static void turn_check_cb(uv_check_t *check) {
  redlock_t *client = check->data;
  if (atomic_load_explicit(&client->submits_queued, memory_order_relaxed))
    client_drain(client);
}

static void turn_again_cb(uv_idle_t *idle) {
  redlock_t *client = idle->data;
  uv_idle_stop(idle);
  client_drain(client);
}

void client_defer_wake(redlock_t *client, sync_waiter_t *w) {
  if (client->close_phase == CLOSE_TEARING_DOWN) {
    uv_sem_post(&w->sem); /* turn_end may not run again */
    return;
  }
  list_insert_tail(&client->wakes, &w->link);
}

/* Wakes the blocked callers whose calls ended.  Done once per turn, after the
 * turn's work and its writes (the flusher's prepare handle runs before this
 * one): a caller woken at once from a reply callback would, on a busy
 * machine, preempt the loop thread in the middle of its turn. */
static void client_wake_callers(redlock_t *client) {
  while (!list_empty(&client->wakes)) {
    sync_waiter_t *w = list_entry(client->wakes.next, sync_waiter_t, link);
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
  int queued = !list_empty(&client->submit_queue);
  client->loop_polling = !queued;
  uv_mutex_unlock(&client->mutex);
  if (queued)
    uv_idle_start(&client->turn_again, turn_again_cb);
}

/* A node's first connection attempt is over: redlock_open returns, and
 * parked calls start, once every node's is. */
static void client_node_started(redlock_t *client) {
  if (client->startup_left == 0 || --client->startup_left > 0)
    return;
  if (client->own_thread)
    uv_sem_post(&client->startup_sem);
  while (!list_empty(&client->parked_ops)) {
    op_t *op = list_entry(client->parked_ops.next, op_t, link);
    list_remove(&op->link);
    op_dispatch(op);
  }
}

/* ---- close ----------------------------------------------------------------------------- */

static void client_free(redlock_t *client) {
  /* The client is closed (or was never handed out): no call enters any more.
   * Those still in (redlock_stats) leave before anything is freed; taking
   * the mutex also orders before the free whatever a call read before it
   * last took the mutex (the fork check, a refused call's arguments). */
  uv_mutex_lock(&client->mutex);
  while (client->callers > 0)
    uv_cond_wait(&client->callers_left, &client->mutex);
  uv_mutex_unlock(&client->mutex);
  notify_free(&client->notify);
  stats_free(client);
  /* A failed open may free a client whose nodes array it could not allocate. */
  for (unsigned i = 0; client->nodes != NULL && i < client->n_nodes; i++)
    node_free(&client->nodes[i]);
  free(client->nodes);
  votes_book_free(&client->votes);
  fork_guard_free(&client->fork_guard);
  tls_client_free(client->tls);
  ptrset_free(&client->live_locks);
  callmem_free(&client->callmem);
  pool_clear(&client->round_pool);
  ptrset_free(&client->live_elections);
  options_clear(&client->opts);
  uv_cond_destroy(&client->callers_left);
  uv_mutex_destroy(&client->mutex);
  if (client->own_thread)
    uv_sem_destroy(&client->startup_sem);
  free(client);
}

uint64_t client_close_bound_ms(const redlock_options_t *opts) {
  uint64_t ms = (uint64_t)opts->connect_timeout_ms +
                (uint64_t)NODE_HUNG_REQUEST_TIMEOUTS * opts->request_timeout_ms;
  return ms > CLIENT_CLOSE_MIN_MS ? ms : CLIENT_CLOSE_MIN_MS;
}

/* The close's bound is over (deadline timer, outside hiredis callbacks):
 * says once what is left, drops every master's connection for good (what
 * they were sent and did not answer, and what is kept for them, is given
 * up: counted as abandoned), and releases the leases not yet released
 * without sending anything, which frees their handles.  The keys expire at
 * their TTL. */
static void client_close_out_of_time(redlock_t *client) {
  client->close_out_of_time = 1;
  unsigned held = 0, owed = 0;
  for (list_node_t *h = client->held_locks.next; h != &client->held_locks; h = h->next)
    held++;
  char masters[256] = "";
  size_t used = 0;
  for (unsigned i = 0; i < client->n_nodes; i++) {
    unsigned n = node_releases_owed(&client->nodes[i]);
    owed += n;
    if (n > 0 && used < sizeof masters) {
      int w = snprintf(masters + used, sizeof masters - used, "%s%s: %u", used > 0 ? ", " : "",
                       client->nodes[i].addr.label, n);
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
  client->close_preparing = 1; /* rounds settling below do not recurse into the close */
  for (unsigned i = 0; i < client->n_nodes; i++)
    node_abandon(&client->nodes[i]);
  /* No master takes anything now: each release round is decided at once
   * (what a round still waits on, if anything, lets the rest go as it
   * settles, through client_maybe_finish_close). */
  while (lock_release_held(client) && round_env_pending(&client->rounds) < LOCK_CLOSE_WINDOW) {
  }
  client->close_preparing = 0;
}

static void client_begin_close(redlock_t *client) {
  if (client->close_phase != CLOSE_NONE)
    return;
  client->close_phase = CLOSE_DRAINING;
  client->close_deadline_ns =
      client_now_ns(client) + client_close_bound_ms(&client->opts) * 1000000u;
  client_arm_deadline(client, client->close_deadline_ns);
  client->notify.closing = 1;  /* no more reconnects of subscribers */
  client->close_preparing = 1; /* no teardown until the releases below are out */
  client_log(client, REDLOCK_LOG_DEBUG, "closing");
  /* Elections first: their campaigns are cancelled without a callback and
   * their leases released before the generic clean-up below sees them. */
  election_close_all(client);
  while (!list_empty(&client->parked_ops)) {
    op_t *op = list_entry(client->parked_ops.next, op_t, link);
    list_remove(&op->link);
    list_insert_tail(&client->ops_in_flight, &op->link);
    op_fail(op, REDLOCK_ECANCELED);
  }
  lock_cancel_all(client);
  client->close_preparing = 0;
  client_maybe_finish_close(client);
}

void client_maybe_finish_close(redlock_t *client) {
  if (client->close_phase != CLOSE_DRAINING || client->close_preparing)
    return;
  /* Held locks are released a window at a time; each round that settles
   * lets the next ones go.  Flagged, so that rounds settling inside (masters
   * down) do not recurse back here. */
  client->close_preparing = 1;
  int holding = lock_release_held(client);
  client->close_preparing = 0;
  if (holding || !list_empty(&client->ops_in_flight) || !round_env_idle(&client->rounds) ||
      !list_empty(&client->parked_ops))
    return;
  /* Releases replayed to a master that came back are owed too. */
  for (unsigned i = 0; i < client->n_nodes; i++)
    if (node_owes_releases(&client->nodes[i]))
      return;
  /* Tear down from the wake-up callback, never from inside a hiredis one. */
  client->close_phase = CLOSE_QUEUED;
  uv_async_send(&client->wakeup);
}

static void client_handle_closed_cb(uv_handle_t *handle) { client_module_closed(handle->data); }

static void flusher_closed_cb(uv_handle_t *handle) {
  conn_flusher_t *flusher = handle->data;
  client_module_closed(container_of(flusher, redlock_t, flusher));
}

static void notify_closed_cb(void *arg) { client_module_closed(arg); }

/* One module (a node, the notifier, one of the client's own handles) is
 * closed; the last one frees the client (or lets its thread end). */
static void client_module_closed(redlock_t *client) {
  if (--client->modules_open > 0)
    return;
  uv_mutex_lock(&client->mutex);
  client->state = CLIENT_CLOSED;
  uv_mutex_unlock(&client->mutex);
  if (!client->own_thread) {
    void (*closed)(void *) = client->closed_cb;
    void *arg = client->closed_arg;
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
  client->close_phase = CLOSE_TEARING_DOWN;
  client->modules_open = client->n_nodes + 1 /* notifier */ + CLIENT_OWN_HANDLES;
  /* Submitters send their wake-up under the mutex while the state is OPEN;
   * it is CLOSING now, so none can touch `wakeup` once we hold the mutex. */
  uv_mutex_lock(&client->mutex);
  uv_mutex_unlock(&client->mutex);
  for (unsigned i = 0; i < client->n_nodes; i++)
    node_shutdown(&client->nodes[i]);
  notify_shutdown(&client->notify, notify_closed_cb);
  uv_timer_stop(&client->deadline_timer);
  uv_close((uv_handle_t *)&client->deadline_timer, client_handle_closed_cb);
  uv_close((uv_handle_t *)&client->wakeup, client_handle_closed_cb);
  uv_close((uv_handle_t *)&client->turn_check, client_handle_closed_cb);
  uv_close((uv_handle_t *)&client->turn_end, client_handle_closed_cb);
  uv_close((uv_handle_t *)&client->turn_again, client_handle_closed_cb);
  conn_flusher_close(&client->flusher, flusher_closed_cb);
}

/* ---- open ----------------------------------------------------------------------------- */

/* ---- composition: what the modules below get from the client ------------------------ */

/* One server listed twice: judged again whenever a master comes
 * up (a new connection: a new address, perhaps a new run_id after a
 * restart) or goes down (`leaving`, still READY while it reports).  Of the
 * masters up that are one server, the lowest-numbered votes; each other is
 * its duplicate: round.c sends it no acquisition and counts none of its
 * answers.  Logged at WARN once per pair (at open, when both connect then).
 * Loop thread. */
static void client_judge_duplicates(redlock_t *client, const node_t *leaving) {
  for (unsigned j = 0; j < client->n_nodes; j++) {
    node_t *b = &client->nodes[j];
    b->dup_of = -1;
    if (b == leaving)
      continue;
    for (unsigned i = 0; i < j; i++) {
      node_t *a = &client->nodes[i];
      char how[96];
      if (a == leaving || !node_same_server(a, b, how, sizeof how))
        continue;
      b->dup_of = (int)i;
      snprintf(b->dup_why, sizeof b->dup_why, "same server as %s", a->addr.label);
      if (!(b->dup_warned >> i & 1)) {
        b->dup_warned |= (uint64_t)1 << i;
        client_log(client, REDLOCK_LOG_WARN,
                   "masters %s and %s are one server (%s): while both are up only %s votes, "
                   "and %s counts as a master that never answers (list each master once: "
                   "Redlock needs independent masters)",
                   a->addr.label, b->addr.label, how, a->addr.label, b->addr.label);
      }
      break;
    }
  }
}

/* node_env_t.report: a node's news. */
static void client_on_node(void *arg, node_t *node, node_event_t ev, const char *what,
                           const char *detail) {
  redlock_t *client = arg;
  struct stats *stats = client->stats;
  switch (ev) {
  case NODE_EV_CONNECTING:
    if (stats != NULL)
      stats_node_connecting_(client, node);
    break;
  case NODE_EV_UP:
    client_judge_duplicates(client, NULL);
    if (stats != NULL)
      stats_node_up_(client, node);
    break;
  case NODE_EV_DOWN:
    if (node->state == NODE_READY)
      client_judge_duplicates(client, node);
    if (stats != NULL)
      stats_node_down_(client, node, what, detail);
    break;
  case NODE_EV_TLS_FAILURE:
    if (stats != NULL)
      stats_node_tls_failure_(client, node);
    break;
  case NODE_EV_QUARANTINE_END:
    if (stats != NULL)
      stats_node_quarantine_end_(client, node);
    break;
  case NODE_EV_STARTED:
    client_node_started(client);
    break;
  case NODE_EV_REPLAYS_DUE:
    client_arm_deadline(client, node_replays_due_ns(node));
    break;
  case NODE_EV_SETTLED:
    client_maybe_finish_close(client);
    break;
  case NODE_EV_CLOSED:
    client_module_closed(client);
    break;
  }
}

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
static void client_compose(redlock_t *client) {
  const redlock_options_t *opts = &client->opts;
  client->node_env = (node_env_t){
      .tb = &client->timebase,
      .flusher = &client->flusher,
      .tls = client->tls,
      .log = &client->log,
      .rng = &client->rng,
      .mutex = &client->mutex,
      .connect_timeout_ms = opts->connect_timeout_ms,
      .request_timeout_ms = opts->request_timeout_ms,
      .max_ttl_ms = opts->max_ttl_ms,
      .quarantine = opts->quarantine,
      .report = client_on_node,
      .arg = client,
  };
  round_env_init(&client->rounds);
  client->rounds.n_masters = client->n_nodes;
  client->rounds.request_timeout_ns = (uint64_t)opts->request_timeout_ms * 1000000u;
  client->rounds.transport = &transport_nodes;
  client->rounds.transport_arg = client->nodes;
  client->rounds.log = &client->log;
  client->rounds.pool = &client->round_pool;
  client->rounds.arm_deadline = rounds_arm_deadline;
  client->rounds.settled = rounds_settled;
  client->rounds.decided = client_record_votes;
  client->rounds.owner_arg = client;
  notify_init(&client->notify, &client->node_env, client->nodes, client->n_nodes,
              client_wake_waiter, client);
}

static int client_new(redlock_t **out, const redlock_options_t *opts) {
  if (out == NULL)
    return REDLOCK_EINVAL;
  *out = NULL;
  if (opts == NULL || opts->n_nodes == 0)
    return REDLOCK_EINVAL;
  redlock_t *client = calloc(1, sizeof *client);
  if (client == NULL)
    return REDLOCK_ENOMEM;
  if (uv_cond_init(&client->callers_left) != 0) {
    free(client);
    return REDLOCK_ENOMEM;
  }
  if (options_copy(&client->opts, opts) != 0) {
    uv_cond_destroy(&client->callers_left);
    free(client);
    return REDLOCK_ENOMEM;
  }
  client->log = (log_sink_t){.cb = opts->log_cb, .arg = opts->log_arg, .level = opts->log_level};
  fork_guard_init(&client->fork_guard);
  client->n_nodes = (unsigned)opts->n_nodes;
  client->quorum = quorum_size(client->n_nodes);
  client->nodes = calloc(client->n_nodes, sizeof *client->nodes);
  int votes_rc = votes_book_init(&client->votes, client->n_nodes);
  uv_mutex_init(&client->mutex);
  ptrset_init(&client->live_locks);
  int mem_rc = callmem_init(&client->callmem, sizeof(struct redlock_lock));
  pool_init(&client->round_pool);
  list_init(&client->submit_queue);
  list_init(&client->ops_in_flight);
  list_init(&client->held_locks);
  list_init(&client->parked_ops);
  list_init(&client->wakes);
  list_init(&client->reentrant_leases);
  list_init(&client->elections);
  ptrset_init(&client->live_elections);
  int rc = client->nodes != NULL && votes_rc == 0 && mem_rc == 0 ? 0 : REDLOCK_ENOMEM;
  for (unsigned i = 0; rc == 0 && i < client->n_nodes; i++) {
    if (client->opts.nodes[i].tls) {
      /* One SSL_CTX for the client: trust store and client key loaded once,
       * shared by every TLS connection (all on the loop thread). */
      char why[384];
      rc = tls_client_new(&client->tls, &client->opts, why, sizeof why);
      if (rc != 0)
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
  client_compose(client);
  for (unsigned i = 0; rc == 0 && i < client->n_nodes; i++)
    rc = node_init(&client->nodes[i], &client->node_env, i, &client->opts.nodes[i]);
  if (rc == 0)
    rc = stats_new(client);
  if (rc == 0 && client->stats != NULL) {
    client->rounds.stats = client->stats;
    for (unsigned i = 0; i < client->n_nodes; i++)
      client->nodes[i].stats = client->stats;
  }
  uint64_t seed = 0;
  if (rc == 0)
    rc = random_bytes(&seed, sizeof seed);
  if (rc != 0) {
    client_free(client);
    return rc;
  }
  jitter_rng_seed(&client->rng, seed);
  client->startup_left = client->n_nodes;
  *out = client;
  return 0;
}

/* The client's own uv handles on `loop` (any thread, before the loop runs
 * them). */
static int client_init_handles(redlock_t *client, uv_loop_t *loop) {
  client->loop = loop;
  timebase_uv_init(&client->timebase, loop);
  client->node_env.loop = loop;
  if (uv_async_init(loop, &client->wakeup, wakeup_cb) != 0)
    return REDLOCK_EIO;
  client->wakeup.data = client;
  /* Until its first turn ends the loop may be asleep on other work: the
   * first call wakes it (a spare wake-up is harmless). */
  client->loop_polling = 1;
  uv_check_init(loop, &client->turn_check);
  client->turn_check.data = client;
  uv_check_start(&client->turn_check, turn_check_cb);
  uv_prepare_init(loop, &client->turn_end);
  client->turn_end.data = client;
  uv_prepare_start(&client->turn_end, turn_end_cb);
  uv_idle_init(loop, &client->turn_again);
  client->turn_again.data = client;
  /* As before these three: the wake-up alone keeps a caller's loop alive. */
  uv_unref((uv_handle_t *)&client->turn_check);
  uv_unref((uv_handle_t *)&client->turn_end);
  uv_unref((uv_handle_t *)&client->turn_again);
  uv_timer_init(loop, &client->deadline_timer);
  client->deadline_timer.data = client;
  conn_flusher_init(&client->flusher, loop);
  return 0;
}

static void client_start_nodes(redlock_t *client) {
  for (unsigned i = 0; i < client->n_nodes; i++)
    node_start(&client->nodes[i]);
}

static void loop_thread_main(void *arg) {
  redlock_t *client = arg;
  client->loop_thread_id = uv_thread_self();
  client_start_nodes(client);
  uv_run(&client->own_loop, UV_RUN_DEFAULT);
  /* Every handle is closed: the loop has nothing left. */
  uv_loop_close(&client->own_loop);
  if (client->free_on_exit) {
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
  int rc = client_new(&client, opts);
  if (rc != 0)
    return rc;
  client->own_thread = 1;
  if (uv_sem_init(&client->startup_sem, 0) != 0) {
    client->own_thread = 0;
    client_free(client);
    return REDLOCK_EIO;
  }
  /* libuv's allocation failing is ENOMEM; anything else (no descriptor
   * left for its pipes, ...) is EIO. */
  rc = uv_loop_init(&client->own_loop);
  if (rc != 0) {
    client_free(client);
    return rc == UV_ENOMEM ? REDLOCK_ENOMEM : REDLOCK_EIO;
  }
  if (client_init_handles(client, &client->own_loop) != 0) {
    uv_loop_close(&client->own_loop);
    client_free(client);
    return REDLOCK_EIO;
  }
  /* The I/O thread takes no asynchronous signals: they belong to the
   * application's threads, and a write to a master that just died must give
   * EPIPE, not a process-killing SIGPIPE.  The new thread inherits the mask. */
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  rc = uv_thread_create(&client->thread, loop_thread_main, client);
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  if (rc != 0) {
    uv_close((uv_handle_t *)&client->wakeup, NULL);
    uv_close((uv_handle_t *)&client->turn_check, NULL);
    uv_close((uv_handle_t *)&client->turn_end, NULL);
    uv_close((uv_handle_t *)&client->turn_again, NULL);
    uv_close((uv_handle_t *)&client->deadline_timer, NULL);
    uv_close((uv_handle_t *)&client->flusher.prepare, NULL);
    uv_run(&client->own_loop, UV_RUN_DEFAULT);
    uv_loop_close(&client->own_loop);
    client_free(client);
    return REDLOCK_EIO;
  }
  /* Bounded by the connect timeout: every node's first attempt has a timer. */
  uv_sem_wait(&client->startup_sem);
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
  int rc = client_new(&client, opts);
  if (rc != 0)
    return rc;
  rc = client_init_handles(client, loop);
  if (rc != 0) {
    client_free(client);
    return rc;
  }
  client_start_nodes(client);
  *out = client;
  return 0;
}

int client_open_for_test(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop,
                         const round_transport_t *transport, void *transport_arg,
                         uint64_t (*now_ns)(void)) {
  redlock_t *client;
  int rc = client_new(out, opts);
  if (rc != 0)
    return rc;
  client = *out;
  client->rounds.transport = transport;
  client->rounds.transport_arg = transport_arg;
  client->rounds.now_ns = now_ns;
  rc = client_init_handles(client, loop);
  if (rc != 0) {
    *out = NULL;
    client_free(client);
    return rc;
  }
  client->startup_left = 0;
  return 0;
}

/* Marks the client closing and queues the close for the loop. */
static int client_request_close(redlock_t *client) {
  op_t *op = &client->close_op;
  uv_mutex_lock(&client->mutex);
  if (client->state != CLIENT_OPEN) {
    uv_mutex_unlock(&client->mutex);
    return -1;
  }
  client->state = CLIENT_CLOSING;
  op->kind = OP_CLOSE;
  op->client = client;
  client_enqueue_locked(client, op);
  uv_mutex_unlock(&client->mutex);
  return 0;
}

void redlock_close_uv(redlock_t *client, void (*closed)(void *arg), void *arg) {
  if (client == NULL || client->own_thread || client_check_fork(client) != 0)
    return;
  client->closed_cb = closed;
  client->closed_arg = arg;
  client_request_close(client);
}

void redlock_close(redlock_t *client) {
  /* In a forked child the parent's client is left alone: its thread does not
   * exist here, and freeing it could touch a mutex held at the fork. */
  if (client == NULL || client_check_fork(client) != 0)
    return;
  if (!client->own_thread) {
    redlock_close_uv(client, NULL, NULL);
    return;
  }
  if (client_on_loop_thread(client)) {
    /* From one of our callbacks: the loop thread frees the client on exit. */
    client->free_on_exit = 1;
    client_request_close(client);
    return;
  }
  client_request_close(client);
  uv_thread_join(&client->thread);
  client_free(client);
}
