/* client_loop.c: the client's loop side.  The loop's own handles (the
 * wake-up, the turn's check, prepare and idle), the I/O thread of
 * redlock_open, the cross-thread submit queue those handles drain, the
 * parked calls that wait for the voters' first attempts, and the deadline
 * timer the rounds, the voters and the close share. */
#include <pthread.h>
#include <signal.h>

#include "api/client.h"
#include "util/status.h"

int client_on_loop_thread(const redlock_t *client) {
  if (!client->run.own_thread)
    return 0;
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &client->run.thread_id);
}

/* ---- deadlines ---------------------------------------------------------------------- */

static void fire_round_deadlines(void *arg) { round_deadlines_fire(arg); }

static void deadline_timer_cb(tb_timer_t *timer) {
  redlock_t *client = timer->data;
  client->deadline.armed_ns = 0;
  /* The voters catch up on their sockets around the rounds' deadlines, and
   * say when their replays are to be judged again. */
  uint64_t due_ns = voters_tick(&client->voters, fire_round_deadlines, &client->rounds);
  if (due_ns != 0)
    client_arm_deadline(client, due_ns);
  client_close_on_timer(client);
}

void client_arm_deadline(redlock_t *client, uint64_t deadline_ns) {
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
  int cancels = engine_cancels_pending_locked(&client->engine);
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
   * above and ends now.  A cancel asked while the batch ran is seen by
   * turn_end_cb, which turns the loop again. */
  if (cancels)
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

/* Once per turn, after the turn's work and its writes (the flusher's prepare
 * handle runs before this one): a caller woken at once from a reply callback
 * would, on a busy machine, preempt the loop thread in the middle of its
 * turn. */
void client_wake_callers(redlock_t *client) {
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

void client_loop_started(redlock_t *client) {
  if (client->run.own_thread)
    uv_sem_post(&client->run.startup_sem);
  while (!list_empty(&client->queue.parked)) {
    op_t *op = list_entry(client->queue.parked.next, op_t, link);
    list_remove(&op->link);
    op->parked = 0;
    op->ops->dispatch(op);
  }
}

/* ---- the loop's handles and thread ---------------------------------------------------- */

status_t client_loop_init(redlock_t *client, uv_loop_t *loop) {
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

status_t client_loop_start_thread(redlock_t *client) {
  /* The I/O thread takes no asynchronous signals: they belong to the
   * application's threads, and a write to a master that just died must give
   * EPIPE, not a process-killing SIGPIPE.  The new thread inherits the mask. */
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  int rc = uv_thread_create(&client->run.thread, loop_thread_main, client);
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  if (rc == 0)
    return ST_OK;
  uv_close((uv_handle_t *)&client->run.wakeup, NULL);
  uv_close((uv_handle_t *)&client->run.turn_check, NULL);
  uv_close((uv_handle_t *)&client->run.turn_end, NULL);
  uv_close((uv_handle_t *)&client->run.turn_again, NULL);
  tb_timer_close(&client->deadline.timer, NULL);
  uv_close((uv_handle_t *)&client->run.flusher.prepare, NULL);
  uv_run(&client->run.own_loop, UV_RUN_DEFAULT);
  uv_loop_close(&client->run.own_loop);
  return ST_EIO;
}
