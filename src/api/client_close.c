/* client_close.c: the client's orderly close, in its phases (close_phase_t):
 * redlock_close and redlock_close_uv queue it behind the calls already
 * submitted; on the loop it cancels the calls, releases the held locks a
 * window at a time within the close's bound, then tears the modules and the
 * client's own handles down and frees the client when the last is closed. */
#include <stdio.h>
#include <stdlib.h>

#include "api/client.h"
#include "engine/lock.h"
#include "redlock_uv.h"
#include "util/status.h"

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

void client_close_on_timer(redlock_t *client) {
  /* The close's own bound: whatever the masters' speed. */
  if (client->close.phase == CLOSE_DRAINING && !client->close.out_of_time) {
    if (client_now_ns(client) >= client->close.deadline_ns)
      client_close_out_of_time(client);
    else
      client_arm_deadline(client, client->close.deadline_ns);
  }
  client_maybe_finish_close(client);
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

void client_module_closed(redlock_t *client) {
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

void client_teardown(redlock_t *client) {
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
