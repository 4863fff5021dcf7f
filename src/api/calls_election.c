/* calls_election.c: the public election calls (redlock_elect and its bounded form,
 * redlock_resign, redlock_election_observe and redlock_observe_stop).  They check their arguments
 * and the client's state on the caller's thread and queue the ops of an election (election.h) or
 * an observer (observe.h); a call that returns an error never runs a callback. */
#include <stdlib.h>

#include "api/calls.h"
#include "api/client.h"
#include "engine/election.h"
#include "engine/observe.h"
#include "util/quorum.h"

/* Makes a new handle h (an election, an observer) live in `live` and queues
 * its start op, unless the client is closing: ST_OK, ST_ECLOSED or
 * ST_ENOMEM (nothing queued then). */
static status_t start_handle(redlock_t *client, ptrset_t *live, void *h, op_t *start) {
  uv_mutex_lock(&client->mutex);
  status_t rc = client->queue.state != CLIENT_OPEN ? ST_ECLOSED : ptrset_add(live, h);
  if (rc == ST_OK)
    client_enqueue_locked(client, start);
  uv_mutex_unlock(&client->mutex);
  return rc;
}

/* The loop thread of this client, as far as it can be told: a
 * redlock_open_uv client's loop runs on the caller's thread, which the
 * contract says resign is called from. */
static int on_loop(const redlock_t *client) {
  return !client->run.own_thread || client_on_loop_thread(client);
}

/* Stops a live handle h of `live` (resign, observe_stop): its stop op
 * (make(h, done), done NULL on the loop thread) is queued and, off the loop
 * thread, waited for until the loop has taken it. */
static status_t stop_handle(redlock_t *client, ptrset_t *live, void *h,
                            op_t *(*make)(void *h, uv_sem_t *done)) {
  if (client == NULL || h == NULL)
    return ST_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return ST_EFORKED;
  int wait = !on_loop(client);
  uv_sem_t done;
  if (wait && uv_sem_init(&done, 0) != 0)
    return ST_EIO;
  status_t rc = ST_OK;
  uv_mutex_lock(&client->mutex);
  if (client->queue.state != CLIENT_OPEN)
    rc = ST_ECLOSED;
  else if (!ptrset_remove(live, h))
    rc = ST_EINVAL; /* stopped already, or not this client's */
  if (rc == ST_OK)
    client_enqueue_locked(client, make(h, wait ? &done : NULL));
  uv_mutex_unlock(&client->mutex);
  if (wait) {
    if (rc == ST_OK)
      uv_sem_wait(&done);
    uv_sem_destroy(&done);
  }
  return rc;
}

/* redlock_elect and redlock_elect_bounded (max_hold_ms 0: unbounded). */
static status_t elect(redlock_t *client, const char *name, uint32_t ttl_ms, uint32_t max_hold_ms,
                      redlock_elected_cb on_elected, redlock_election_lost_cb on_lost, void *arg,
                      redlock_election_t **out) {
  if (out == NULL)
    return ST_EINVAL;
  *out = NULL;
  if (client == NULL || on_elected == NULL || on_lost == NULL || calls_check_name(name) != ST_OK)
    return ST_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return ST_EFORKED;
  status_t checked = calls_check_key(client, name, 1);
  if (checked != ST_OK)
    return checked;
  /* Also refused: a ttl whose drift alone leaves no validity, which could
   * never be won (it would campaign forever). */
  if (calls_check_ttl(client, ttl_ms) != ST_OK ||
      quorum_validity_ns(ttl_ms, 0, client->opts.drift_factor) < QUORUM_MIN_VALIDITY_NS)
    return ST_EINVAL;
  redlock_election_t *e;
  status_t rc = election_new(&client->engine, name, ttl_ms, on_elected, on_lost, arg, &e);
  if (rc != ST_OK)
    return rc;
  election_set_max_hold(e, max_hold_ms);
  *out = e; /* before the loop can see it: on_elected may run before we return */
  if ((rc = start_handle(client, &client->engine.live_elections, e, election_start_op(e))) !=
      ST_OK) {
    *out = NULL;
    election_free(e);
  }
  return rc;
}

int redlock_elect(redlock_t *client, const char *name, uint32_t ttl_ms,
                  redlock_elected_cb on_elected, redlock_election_lost_cb on_lost, void *arg,
                  redlock_election_t **out) {
  return elect(client, name, ttl_ms, 0, on_elected, on_lost, arg, out);
}

static op_t *resign_op_of(void *h, uv_sem_t *done) { return election_resign_op(h, done); }

int redlock_resign(redlock_t *client, redlock_election_t *e) {
  return stop_handle(client, client != NULL ? &client->engine.live_elections : NULL, e,
                     resign_op_of);
}

int redlock_elect_bounded(redlock_t *client, const char *name, uint32_t ttl_ms,
                          uint32_t max_hold_ms, redlock_elected_cb on_elected,
                          redlock_election_lost_cb on_lost, void *arg, redlock_election_t **out) {
  if (max_hold_ms == 0) {
    if (out != NULL)
      *out = NULL;
    return REDLOCK_EINVAL;
  }
  return elect(client, name, ttl_ms, max_hold_ms, on_elected, on_lost, arg, out);
}

int redlock_election_observe(redlock_t *client, const char *name, uint32_t poll_ms,
                             redlock_leader_cb on_change, void *arg, redlock_observer_t **out) {
  if (out == NULL)
    return ST_EINVAL;
  *out = NULL;
  if (client == NULL || on_change == NULL || calls_check_name(name) != ST_OK)
    return ST_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return ST_EFORKED;
  status_t rc = calls_check_key(client, name, 1);
  if (rc != ST_OK)
    return rc;
  redlock_observer_t *o;
  if ((rc = observer_new(&client->engine, name, poll_ms, on_change, arg, &o)) != ST_OK)
    return rc;
  *out = o; /* before the loop can see it: on_change may run before we return */
  if ((rc = start_handle(client, &client->engine.live_observers, o, observer_start_op(o))) !=
      ST_OK) {
    *out = NULL;
    observer_free(o);
  }
  return rc;
}

static op_t *stop_op_of(void *h, uv_sem_t *done) { return observer_stop_op(h, done); }

int redlock_observe_stop(redlock_t *client, redlock_observer_t *obs) {
  return stop_handle(client, client != NULL ? &client->engine.live_observers : NULL, obs,
                     stop_op_of);
}
