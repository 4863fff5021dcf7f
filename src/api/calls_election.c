/* calls_election.c: the public election calls (redlock_elect and its bounded form,
 * redlock_resign, redlock_election_observe and redlock_observe_stop).  They check their arguments
 * and the client's state on the caller's thread and queue the election's ops (election.h); a call
 * that returns an error never runs a callback. */
#include <stdlib.h>

#include "api/calls.h"
#include "api/client.h"
#include "engine/election.h"
#include "engine/observe.h"
#include "util/quorum.h"

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
  uv_mutex_lock(&client->mutex);
  if (client->queue.state != CLIENT_OPEN)
    rc = ST_ECLOSED;
  else
    rc = ptrset_add(&client->engine.live_elections, e); /* e is not NULL: ST_ENOMEM at worst */
  if (rc == ST_OK) {
    /* Before the loop can see it: on_elected may run before we return. */
    *out = e;
    client_enqueue_locked(client, election_start_op(e));
  }
  uv_mutex_unlock(&client->mutex);
  if (rc != ST_OK)
    election_free(e);
  return rc;
}

int redlock_elect(redlock_t *client, const char *name, uint32_t ttl_ms,
                  redlock_elected_cb on_elected, redlock_election_lost_cb on_lost, void *arg,
                  redlock_election_t **out) {
  return elect(client, name, ttl_ms, 0, on_elected, on_lost, arg, out);
}

/* The loop thread of this client, as far as it can be told: a
 * redlock_open_uv client's loop runs on the caller's thread, which the
 * contract says resign is called from. */
static int on_loop(const redlock_t *client) {
  return !client->run.own_thread || client_on_loop_thread(client);
}

int redlock_resign(redlock_t *client, redlock_election_t *e) {
  if (client == NULL || e == NULL)
    return REDLOCK_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return REDLOCK_EFORKED;
  int wait = !on_loop(client);
  uv_sem_t done;
  if (wait && uv_sem_init(&done, 0) != 0)
    return REDLOCK_EIO;
  int rc = 0;
  uv_mutex_lock(&client->mutex);
  if (client->queue.state != CLIENT_OPEN)
    rc = REDLOCK_ECLOSED;
  else if (!ptrset_remove(&client->engine.live_elections, e))
    rc = REDLOCK_EINVAL; /* resigned already, or not this client's */
  if (rc == 0)
    client_enqueue_locked(client, election_resign_op(e, wait ? &done : NULL));
  uv_mutex_unlock(&client->mutex);
  if (wait) {
    if (rc == 0)
      uv_sem_wait(&done);
    uv_sem_destroy(&done);
  }
  return rc;
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
  uv_mutex_lock(&client->mutex);
  if (client->queue.state != CLIENT_OPEN)
    rc = ST_ECLOSED;
  else
    rc = ptrset_add(&client->engine.live_observers, o);
  if (rc == ST_OK) {
    /* Before the loop can see it: on_change may run before we return. */
    *out = o;
    client_enqueue_locked(client, observer_start_op(o));
  }
  uv_mutex_unlock(&client->mutex);
  if (rc != ST_OK)
    observer_free(o);
  return rc;
}

int redlock_observe_stop(redlock_t *client, redlock_observer_t *obs) {
  if (client == NULL || obs == NULL)
    return REDLOCK_EINVAL;
  if (client_check_fork(client) != ST_OK)
    return REDLOCK_EFORKED;
  int wait = !on_loop(client);
  uv_sem_t done;
  if (wait && uv_sem_init(&done, 0) != 0)
    return REDLOCK_EIO;
  int rc = 0;
  uv_mutex_lock(&client->mutex);
  if (client->queue.state != CLIENT_OPEN)
    rc = REDLOCK_ECLOSED;
  else if (!ptrset_remove(&client->engine.live_observers, obs))
    rc = REDLOCK_EINVAL; /* stopped already, or not this client's */
  if (rc == 0)
    client_enqueue_locked(client, observer_stop_op(obs, wait ? &done : NULL));
  uv_mutex_unlock(&client->mutex);
  if (wait) {
    if (rc == 0)
      uv_sem_wait(&done);
    uv_sem_destroy(&done);
  }
  return rc;
}
