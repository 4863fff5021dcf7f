/* node.c: one Redis master, a voter on a link (see node.h): its life cycle.
 * Init, start, free; what the link says (connecting, up, down, retry, its
 * timer, closed) and the READY transition that takes the handshake's
 * findings; retarget and reconnect; abandon and shutdown at close.  The
 * requests themselves are node_pipe.c's, the handshake's checks
 * node_handshake.c's. */
#include "voters/node_int.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"
#include "util/alloc.h"
#include "util/strutil.h"

static void node_on_link(void *arg, link_t *link, link_event_t ev, int level, const char *what,
                         const char *detail);

status_t node_init(node_t *node, const node_env_t *env, unsigned index, const node_addr_t *addr) {
  memset(node, 0, sizeof *node);
  node->env = env;
  node->index = index;
  node->primary.stats_primary = -1;
  node->state = NODE_DOWN;
  list_init(&node->replay.missed_releases);
  list_init(&node->pipe.backlog);
  list_init(&node->acks.acks_waiting);
  link_init(&node->link, &(link_cfg_t){
                             .addr = &node->addr,
                             .tb = env->tb,
                             .log = env->log,
                             .role = "master",
                             .connect_timeout_ms = &env->connect_timeout_ms,
                             .backoff_base_ms = NODE_BACKOFF_BASE_MS,
                             .backoff_cap_ms = NODE_BACKOFF_CAP_MS,
                             .stable_ms = NODE_STABLE_MS,
                             .select_db = 1,
                             .handshake = node_handshake,
                             .event = node_on_link,
                             .arg = node,
                         });
  if (node_addr_copy(&node->addr, addr) != ST_OK)
    return ST_ENOMEM;
  return node_acks_init(node);
}

void node_free(node_t *node) {
  redisFreeCommand(node->acks.ack_cmd);
  node->acks.ack_cmd = NULL;
  /* list_linked, not !list_empty: redlock_open frees the calloc'ed nodes it
   * never reached with node_init when it fails early (a TLS key that cannot
   * be loaded), and their zeroed list heads are not lists yet. */
  while (list_linked(&node->replay.missed_releases)) {
    missed_release_t *missed =
        list_entry(node->replay.missed_releases.next, missed_release_t, link);
    list_remove(&missed->link);
    rl_free(missed);
  }
  node_addr_clear(&node->addr);
}

/* First connection attempt over, whichever way: the client's startup counts it. */
static void node_attempt_finished(node_t *node) {
  if (!node->first_attempt_done) {
    node->first_attempt_done = 1;
    node_report(node, NODE_EV_STARTED, NULL, NULL);
  }
}

/* The link failed (DOWN, reported before anything changed): say so, and
 * why, for redlock_last_votes. */
static void node_link_down(node_t *node, int level, const char *what, const char *detail) {
  if (node->state == NODE_READY)
    /* the server we knew was there until now */
    quarantine_lost(&node->server.quarantine, node_now_ns(node));
  node->failures = node->link.failures;
  node_report(node, NODE_EV_DOWN, what, detail);
  uv_mutex_lock(node->env->mutex);
  snprintf(node->down_why, sizeof node->down_why, "%s%s%s", what, detail ? ": " : "",
           detail ? detail : "");
  uv_mutex_unlock(node->env->mutex);
  if (node->failures == 0 || level >= REDLOCK_LOG_ERROR)
    log_write(node->env->log, level, "master %s: %s%s%s", node->addr.label, what,
              detail ? ": " : "", detail ? detail : "");
  else
    log_write(node->env->log, REDLOCK_LOG_DEBUG, "master %s: %s%s%s (failure %u)", node->addr.label,
              what, detail ? ": " : "", detail ? detail : "", node->failures);
}

/* The link is DOWN, its context gone, a reconnect scheduled.  Order
 * matters: the node is DOWN before anything below can run a callback that
 * sends (failed requests decide rounds; the first attempt finishing starts
 * parked calls), so nothing new is queued here. */
static void node_link_retry(node_t *node) {
  node->state = NODE_DOWN;
  node->failures = node->link.failures;
  node_fail_backlog(node);
  node_attempt_finished(node);
}

static void node_ready(node_t *node) {
  node_take_caps(node);
  node->state = NODE_READY;
  node->ready_ns = node->link.up_ns;
  node->failures = node->link.failures;
  node->not_master_said = 0;
  uv_mutex_lock(node->env->mutex);
  node->down_why[0] = '\0';
  uv_mutex_unlock(node->env->mutex);
  if (node_acks(node))
    conn_before_write(node->link.ac, node_queue_ack, node);
  if (quarantine_active(&node->server.quarantine, node->ready_ns))
    (void)link_arm(&node->link, quarantine_left_ms(&node->server.quarantine, node->ready_ns));
  node_report(node, NODE_EV_UP, NULL, NULL);
  node_replay_releases(node);
  log_write(node->env->log, REDLOCK_LOG_INFO, "master %s: connected", node->addr.label);
  node_attempt_finished(node);
}

/* What the link says. */
static void node_on_link(void *arg, link_t *link, link_event_t ev, int level, const char *what,
                         const char *detail) {
  node_t *node = arg;
  (void)link;
  switch (ev) {
  case LINK_EV_CONNECTING:
    node->state = NODE_CONNECTING;
    node_report(node, NODE_EV_CONNECTING, NULL, NULL);
    break;
  case LINK_EV_UP:
    node_ready(node);
    break;
  case LINK_EV_DOWN:
    node_link_down(node, level, what, detail);
    break;
  case LINK_EV_RETRY:
    node_link_retry(node);
    break;
  case LINK_EV_TLS_FAILURE:
    node_report(node, NODE_EV_TLS_FAILURE, NULL, NULL);
    break;
  case LINK_EV_TIMER:
    node_quarantine_tick(node);
    break;
  case LINK_EV_CLOSED:
    node_report(node, NODE_EV_CLOSED, NULL, NULL);
    break;
  }
}

const char *node_ip(const node_t *node) { return link_ip(&node->link); }

status_t node_retarget(node_t *node, const char *host, int port, const char *why) {
  if (node->addr.kind != NODE_ADDR_TCP)
    return ST_OK;
  if (node->addr.host != NULL && strcmp(node->addr.host, host) == 0 && node->addr.port == port)
    return ST_OK;
  char *copy = str_dup(host);
  if (copy == NULL)
    return ST_ENOMEM;
  uv_mutex_lock(node->env->mutex);
  char *old = node->addr.host;
  node->addr.host = copy;
  node->addr.port = port;
  uv_mutex_unlock(node->env->mutex);
  rl_free(old);
  node_reconnect(node, "master moved", why);
  return ST_OK;
}

void node_reconnect(node_t *node, const char *what, const char *why) {
  if (!node->link.attached || node->state == NODE_CLOSED)
    return;
  if (node->state != NODE_READY) {
    /* No connection lived on: the next handshake judges the server, and a
     * backoff running is not cut short (a redirection to an address that
     * keeps failing must not reconnect at the rate of the redirections). */
    quarantine_lost(&node->server.quarantine, 0);
    if (link_idle(&node->link)) {
      link_forget_lookup(&node->link);
      link_connect(&node->link);
    }
    return;
  }
  /* At once after a connection that was up long enough to reset the
   * backoff; after a short one (dropped again and again), the backoff runs,
   * as for any flapping master. */
  int stable =
      tb_now_ns(node->env->tb) - node->link.up_ns >= (uint64_t)node->link.cfg.stable_ms * 1000000u;
  int at_once = stable || node->link.failures == 0;
  link_fail(&node->link, REDLOCK_LOG_WARN, what, why);
  /* A lookup of an old name must not answer for a new one. */
  link_forget_lookup(&node->link);
  /* The server we knew may live on (a demoted master): a new run_id is
   * another server, whatever its uptime. */
  quarantine_lost(&node->server.quarantine, 0);
  if (at_once)
    link_connect(&node->link);
}

void node_start(node_t *node) {
  const node_env_t *env = node->env;
  link_io_t io = {.loop = env->loop, .flusher = env->flusher, .tls = env->tls, .rng = env->rng};
  if (link_attach(&node->link, &io) != ST_OK) {
    /* No timer: no attempt can be bounded.  The master stays down. */
    const char *what = "cannot connect", *detail = "cannot make its timer";
    node_link_down(node, REDLOCK_LOG_ERROR, what, detail);
    node_link_retry(node);
    return;
  }
  link_connect(&node->link);
}

void node_abandon(node_t *node) {
  if (node->state == NODE_CLOSED)
    return;
  node->state = NODE_CLOSED; /* from here on, releases deferred are abandoned */
  link_abandon(&node->link);
  node_fail_backlog(node);
  while (node->replay.n_missed_releases > 0)
    node_drop_oldest_kept(node);
  stats_master_kept(node->stats, node->index, 0);
}

void node_shutdown(node_t *node) {
  if (node->shut_down)
    return;
  node->shut_down = 1;
  node_abandon(node);
  link_shutdown(&node->link);
}
