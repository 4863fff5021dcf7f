/* node.c: one Redis master's connection life cycle (see node.h). */
#include "node.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conn.h"
#include "quorum.h"
#include "redlock.h"
#include "scripts.h"

static void node_connect(node_t *node);
static void node_fail_backlog(node_t *node);
static void node_drain_backlog(node_t *node);
static void node_replay_releases(node_t *node);
static int node_can_write(const node_t *node);

int node_init(node_t *node, const node_env_t *env, unsigned index, const node_addr_t *addr) {
  memset(node, 0, sizeof *node);
  node->env = env;
  node->index = index;
  node->state = NODE_DOWN;
  node->dup_of = -1;
  list_init(&node->missed_releases);
  list_init(&node->backlog);
  return node_addr_copy(&node->addr, addr);
}

static void node_report(node_t *node, node_event_t ev, const char *what, const char *detail) {
  node->env->report(node->env->arg, node, ev, what, detail);
}

void node_free(node_t *node) {
  /* list_linked, not !list_empty: redlock_open frees the calloc'ed nodes it
   * never reached with node_init when it fails early (a TLS key that cannot
   * be loaded), and their zeroed list heads are not lists yet. */
  while (list_linked(&node->missed_releases)) {
    missed_release_t *missed = list_entry(node->missed_releases.next, missed_release_t, link);
    list_remove(&missed->link);
    free(missed);
  }
  node_addr_clear(&node->addr);
}

int node_is_quarantined(const node_t *node, uint64_t now_ns) {
  return node->quarantine_until_ns != 0 && now_ns < node->quarantine_until_ns;
}

int node_quarantined_now(const node_t *node) {
  return node->quarantine_until_ns != 0 && node_is_quarantined(node, clock_now_ns());
}

int node_same_server(const node_t *a, const node_t *b, char *how, size_t how_len) {
  char scratch[1];
  if (how == NULL) {
    how = scratch;
    how_len = sizeof scratch;
  }
  if (a->state != NODE_READY || b->state != NODE_READY)
    return 0;
  if (a->addr.kind == NODE_ADDR_UNIX && b->addr.kind == NODE_ADDR_UNIX &&
      strcmp(a->addr.path, b->addr.path) == 0) {
    snprintf(how, how_len, "the same socket %s", a->addr.path);
    return 1;
  }
  if (a->has_ip_key && b->has_ip_key && a->addr.port == b->addr.port &&
      resolve_key_equal(&a->ip_key, &b->ip_key)) {
    snprintf(how, how_len,
             strchr(a->ip, ':') != NULL ? "the same address [%s]:%d" : "the same address %s:%d",
             a->ip, a->addr.port);
    return 1;
  }
  if (a->run_id[0] != '\0' && strcmp(a->run_id, b->run_id) == 0) {
    snprintf(how, how_len, "the same run_id %s", a->run_id);
    return 1;
  }
  return 0;
}

void node_warn(node_t *node, const char *what, const char *detail) {
  const log_sink_t *log = node->env->log;
  if (log->cb == NULL)
    return;
  uint64_t now = clock_now_ns();
  if (now - node->last_warn_ns >= 1000000000u || node->last_warn_ns == 0) {
    if (node->suppressed_warnings > 0)
      log_write(log, REDLOCK_LOG_WARN, "master %s: %s%s%s (%u similar messages suppressed)",
                node->addr.label, what, detail ? ": " : "", detail ? detail : "",
                node->suppressed_warnings);
    else
      log_write(log, REDLOCK_LOG_WARN, "master %s: %s%s%s", node->addr.label, what,
                detail ? ": " : "", detail ? detail : "");
    node->last_warn_ns = now;
    node->suppressed_warnings = 0;
  } else {
    node->suppressed_warnings++;
    log_write(log, REDLOCK_LOG_DEBUG, "master %s: %s%s%s", node->addr.label, what,
              detail ? ": " : "", detail ? detail : "");
  }
}

/* First connection attempt over, whichever way: the client's startup counts it. */
static void node_attempt_finished(node_t *node) {
  if (!node->first_attempt_done) {
    node->first_attempt_done = 1;
    node_report(node, NODE_EV_STARTED, NULL, NULL);
  }
}

static void backoff_timer_cb(uv_timer_t *timer) {
  node_t *node = timer->data;
  if (node->state == NODE_DOWN)
    node_connect(node);
}

/* Stops waiting for a name lookup under way (it goes on: the next attempt
 * waits for it), detaches and frees the hiredis context (its pending
 * callbacks get NULL replies now, or after the running callback when called
 * from one). */
static void node_release_context(node_t *node) {
  node->awaiting_lookup = 0;
  redisAsyncContext *ac = node->ac;
  node->ac = NULL;
  conn_close(ac);
}

static void node_schedule_reconnect(node_t *node) {
  node->state = NODE_DOWN;
  node->handshake_left = 0;
  uint64_t delay = quorum_backoff_ms(node->failures, NODE_BACKOFF_BASE_MS, NODE_BACKOFF_CAP_MS,
                                     jitter_rng_next(node->env->rng));
  if (node->failures < 32)
    node->failures++;
  uv_timer_stop(&node->timer);
  uv_timer_start(&node->timer, backoff_timer_cb, delay, 0);
  log_write(node->env->log, REDLOCK_LOG_DEBUG, "master %s: reconnecting in %llu ms",
            node->addr.label, (unsigned long long)delay);
}

/* A connection attempt or a live connection failed: drop it, try again later. */
static void node_fail(node_t *node, int level, const char *what, const char *detail) {
  if (node->state == NODE_CLOSED)
    return;
  node_report(node, NODE_EV_DOWN, what, detail);
  if (node->state == NODE_READY &&
      clock_now_ns() - node->ready_ns >= (uint64_t)NODE_STABLE_MS * 1000000u)
    node->failures = 0; /* it was up long enough: not part of a flapping streak */
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
  node_release_context(node);
  node_schedule_reconnect(node);
  /* Order matters: the node is DOWN before anything below can run a
   * callback that sends (failed requests decide rounds; the first attempt
   * finishing starts parked calls), so nothing new is queued here. */
  node_fail_backlog(node);
  node_attempt_finished(node);
}

/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6) of the address being tried. */
static void node_addr_port(const node_t *node, char *buf, size_t len) {
  snprintf(buf, len, strchr(node->ip, ':') != NULL ? "[%s]:%d" : "%s:%d", node->ip,
           node->addr.port);
}

/* detail, after the addresses of this attempt that failed before it and
 * prefixed with the address being tried when the master is named by host
 * name: "10.0.0.2:6379: Connection refused; 10.0.0.1:6379: <detail>". */
static void node_attempt_detail(const node_t *node, const char *detail, char *buf, size_t len) {
  if (!node->named) {
    snprintf(buf, len, "%s", detail);
    return;
  }
  char where[RESOLVE_ADDR_LEN + 16];
  node_addr_port(node, where, sizeof where);
  snprintf(buf, len, "%s%s%s: %s", node->addr_errs, node->addr_errs[0] != '\0' ? "; " : "", where,
           detail);
}

static void connect_timer_cb(uv_timer_t *timer) {
  node_t *node = timer->data;
  if (node->awaiting_lookup) {
    /* The lookup goes on; the next attempt waits for it. */
    char what[64];
    snprintf(what, sizeof what, "name lookup timed out after %u ms", node->env->connect_timeout_ms);
    node_fail(node, REDLOCK_LOG_WARN, what, NULL);
    return;
  }
  char no_answer[64], detail[sizeof node->addr_errs + 96];
  snprintf(no_answer, sizeof no_answer, "no answer within %u ms", node->env->connect_timeout_ms);
  node_attempt_detail(node, no_answer, detail, sizeof detail);
  /* A master that took the TCP connection but never finished TLS is a
   * failed handshake, counted as one, not a connect that timed out. */
  int tls_stalled = node->ac != NULL && conn_tls_handshaking(node->ac);
  if (tls_stalled)
    node_report(node, NODE_EV_TLS_FAILURE, NULL, NULL);
  node_fail(node, REDLOCK_LOG_WARN, tls_stalled ? "TLS handshake timed out" : "connect timed out",
            detail);
}

/* A replayed release came back.  Without a reply it is kept again for the
 * next connection (node_defer_release ignores it once the client closes). */
static void replay_done(node_req_t *req, const redisReply *reply) {
  missed_release_t *missed = container_of(req, missed_release_t, req);
  node_t *node = req->node;
  node->replays_out--;
  if (reply == NULL)
    node_defer_release(node, missed->cmd, missed->len);
  free(missed);
  if (node->replays_out == 0)
    node_report(node, NODE_EV_SETTLED, NULL, NULL);
}

/* Releases this master missed while it was unreachable go out now: a SET
 * that was still in its socket buffer (or applied after we gave up on it)
 * would otherwise hold the key for a whole TTL.  Compare-and-delete is safe
 * to repeat at any time: it only deletes our own value. */
static void node_replay_releases(node_t *node) {
  unsigned sent = 0;
  while (!list_empty(&node->missed_releases)) {
    missed_release_t *missed = list_entry(node->missed_releases.next, missed_release_t, link);
    missed->req.cmd = missed->cmd;
    missed->req.len = missed->len;
    missed->req.fn = replay_done;
    missed->req.keep = 1;
    missed->req.now_ns = 0; /* node_send reads the clock */
    /* Full (busy), or the connection is going (down): the rest stay kept,
     * in order, until it has drained or is back. */
    if (node_send(node, &missed->req) != 0)
      break;
    list_remove(&missed->link);
    node->n_missed_releases--;
    node->missed_bytes -= missed->len;
    node->replays_out++;
    sent++;
  }
  stats_master_kept(node->stats, node->index, node->n_missed_releases);
  if (sent > 0)
    log_write(node->env->log, REDLOCK_LOG_INFO, "master %s: replaying %u release(s) it missed",
              node->addr.label, sent);
  /* Close waits for these replies: a master that never sends them must
   * still be dropped, even when no round is running to fire a deadline. */
  if (node->replays_out > 0)
    node_report(node, NODE_EV_REPLAYS_DUE, NULL, NULL);
}

/* Drops the oldest kept release: its key expires at its TTL. */
static void node_drop_oldest_kept(node_t *node) {
  missed_release_t *oldest = list_entry(node->missed_releases.next, missed_release_t, link);
  list_remove(&oldest->link);
  node->n_missed_releases--;
  node->missed_bytes -= oldest->len;
  free(oldest);
  stats_master_abandoned(node->stats, node->index, 1);
}

void node_defer_release(node_t *node, const char *cmd, size_t len) {
  if (node->state == NODE_CLOSED) {
    stats_master_abandoned(node->stats, node->index, 1); /* the client is closing */
    return;
  }
  while (node->n_missed_releases > 0 && (node->n_missed_releases >= NODE_MAX_MISSED_RELEASES ||
                                         node->missed_bytes + len > NODE_MAX_MISSED_BYTES))
    node_drop_oldest_kept(node);
  missed_release_t *missed = calloc(1, sizeof *missed + len);
  if (missed == NULL) {
    /* best effort: the key expires at its TTL anyway */
    stats_master_abandoned(node->stats, node->index, 1);
    return;
  }
  missed->len = len;
  memcpy(missed->cmd, cmd, len);
  list_insert_tail(&node->missed_releases, &missed->link);
  node->n_missed_releases++;
  node->missed_bytes += len;
  stats_master_kept(node->stats, node->index, node->n_missed_releases);
}

unsigned node_releases_owed(const node_t *node) {
  return node->releases_queued + node->n_missed_releases;
}

void node_busy_why(const node_t *node, char *buf, size_t size) {
  if (!node->overloaded) {
    snprintf(buf, size, "%s", "");
    return;
  }
  snprintf(buf, size, "queue full: %u requests, %zu bytes", node->inflight + node->backlog_len,
           node->queued_bytes);
}

/* The node timer is idle while READY: it marks the end of a restart
 * quarantine, for the log and the QUARANTINE_END event. */
static void quarantine_timer_cb(uv_timer_t *timer) {
  node_t *node = timer->data;
  if (node->state != NODE_READY)
    return;
  uint64_t now = clock_now_ns();
  if (node_is_quarantined(node, now)) { /* the loop's clock runs in whole ms */
    uv_timer_start(&node->timer, quarantine_timer_cb,
                   (node->quarantine_until_ns - now + 999999u) / 1000000u, 0);
    return;
  }
  log_write(node->env->log, REDLOCK_LOG_INFO, "master %s: restart quarantine over",
            node->addr.label);
  node_report(node, NODE_EV_QUARANTINE_END, NULL, NULL);
}

static void node_ready(node_t *node) {
  uv_timer_stop(&node->timer);
  node->state = NODE_READY;
  node->ready_ns = clock_now_ns();
  uv_mutex_lock(node->env->mutex);
  node->down_why[0] = '\0';
  uv_mutex_unlock(node->env->mutex);
  if (node_is_quarantined(node, node->ready_ns))
    uv_timer_start(&node->timer, quarantine_timer_cb,
                   (node->quarantine_until_ns - node->ready_ns + 999999u) / 1000000u, 0);
  node_report(node, NODE_EV_UP, NULL, NULL);
  node_replay_releases(node);
  log_write(node->env->log, REDLOCK_LOG_INFO, "master %s: connected", node->addr.label);
  node_attempt_finished(node);
}

static void handshake_step_done(node_t *node) {
  if (--node->handshake_left == 0)
    node_ready(node);
}

/* A handshake reply belongs to the current attempt only if it came on the
 * current context; a reply error fails the attempt. */
static int handshake_reply_ok(redisAsyncContext *ac, redisReply *reply, node_t *node,
                              const char *step) {
  if (node == NULL || node->ac != ac || node->state != NODE_CONNECTING || reply == NULL)
    return 0;
  if (reply->type == REDIS_REPLY_ERROR) {
    char what[64];
    snprintf(what, sizeof what, "%s refused", step);
    /* Wrong credentials or a misconfigured master will not fix themselves. */
    node_fail(node, REDLOCK_LOG_ERROR, what, reply->str);
    return 0;
  }
  return 1;
}

static void auth_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  if (handshake_reply_ok(ac, r, privdata, "AUTH"))
    handshake_step_done(privdata);
}

static void select_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  if (handshake_reply_ok(ac, r, privdata, "SELECT"))
    handshake_step_done(privdata);
}

static void script_load_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  node_t *node = privdata;
  redisReply *reply = r;
  if (!handshake_reply_ok(ac, reply, node, "SCRIPT LOAD"))
    return;
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *script = script_get((script_id_t)id);
    if (reply->type == REDIS_REPLY_STRING && reply->len == 40 &&
        memcmp(reply->str, script->sha1, 40) == 0) {
      handshake_step_done(node);
      return;
    }
  }
  node_fail(node, REDLOCK_LOG_ERROR, "SCRIPT LOAD returned an unexpected SHA1", NULL);
}

static void info_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  node_t *node = privdata;
  redisReply *reply = r;
  if (!handshake_reply_ok(ac, reply, node, "INFO server"))
    return;
  const node_env_t *env = node->env;
  info_server_t info;
  if ((reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) ||
      info_parse_server(reply->str, reply->len, &info) != 0) {
    node_fail(node, REDLOCK_LOG_ERROR, "INFO server reply lacks run_id or uptime_in_seconds", NULL);
    return;
  }
  uint64_t now = clock_now_ns();
  int restarted = node->run_id[0] != '\0' && strcmp(node->run_id, info.run_id) != 0;
  if (restarted)
    log_write(env->log, REDLOCK_LOG_WARN, "master %s restarted (run_id changed; up %lld s)",
              node->addr.label, (long long)info.uptime_s);
  memcpy(node->run_id, info.run_id, sizeof node->run_id);
  node->quarantine_until_ns = 0;
  if (env->quarantine) {
    uint64_t max_ttl_ns = (uint64_t)env->max_ttl_ms * 1000000u;
    /* Redis reports uptime as a difference of whole wall-clock seconds, so a
     * master 0.2 s old can say 1: take the age to be one second less than
     * reported, so that the quarantine can only come out longer. */
    uint64_t up_ns = info.uptime_s > 0 ? (uint64_t)(info.uptime_s - 1) * 1000000000u : 0;
    if (up_ns < max_ttl_ns) {
      node->quarantine_until_ns = now + (max_ttl_ns - up_ns);
      log_write(env->log, REDLOCK_LOG_WARN,
                "master %s started %lld s ago: its votes do not count for another %llu ms "
                "(restart quarantine = max TTL %u ms)",
                node->addr.label, (long long)info.uptime_s,
                (unsigned long long)((max_ttl_ns - up_ns) / 1000000u), env->max_ttl_ms);
    }
  }
  handshake_step_done(node);
}

static void node_open_next(node_t *node);

/* The address being tried failed to connect (why): on to the next one of
 * the name's, if any is left.  1 when another is being tried. */
static int node_try_next(node_t *node, const char *why) {
  if (node->addr_next >= node->addrs.n)
    return 0;
  char detail[sizeof node->addr_errs];
  node_attempt_detail(node, why, detail, sizeof detail);
  memcpy(node->addr_errs, detail, sizeof detail);
  log_write(node->env->log, node->failures == 0 ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
            "master %s: cannot connect: %s; trying its next address", node->addr.label, detail);
  node_open_next(node);
  return 1;
}

static void on_connect(const redisAsyncContext *ac, int status) {
  node_t *node = ac->data;
  if (node == NULL || node->ac != ac)
    return;
  if (status != REDIS_OK) {
    /* hiredis frees the context after this callback returns. */
    char why[256], detail[sizeof why + sizeof node->addr_errs];
    snprintf(why, sizeof why, "%s", conn_error(ac));
    int tls_failed = conn_tls_unfinished(ac);
    if (tls_failed)
      node_report(node, NODE_EV_TLS_FAILURE, NULL, NULL);
    ((redisAsyncContext *)ac)->data = NULL;
    node->ac = NULL;
    if (!tls_failed && node_try_next(node, why))
      return;
    node_attempt_detail(node, why, detail, sizeof detail);
    node_fail(node, REDLOCK_LOG_WARN, "cannot connect", detail);
  }
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  node_t *node = ac->data;
  (void)status;
  if (node == NULL || node->ac != ac)
    return;
  /* hiredis frees the context after this callback returns. */
  char detail[256];
  snprintf(detail, sizeof detail, "%s", conn_error(ac));
  if (node->state != NODE_READY && conn_tls_unfinished(ac))
    node_report(node, NODE_EV_TLS_FAILURE, NULL, NULL);
  node->ac = NULL;
  node_fail(node, REDLOCK_LOG_WARN,
            node->state == NODE_READY ? "connection lost" : "connection closed during handshake",
            detail);
}

/* Looked up (or numeric from the start): connect to the next address of
 * node->addrs, queue the handshake. */
static void node_open_next(node_t *node) {
  const node_env_t *env = node->env;
  char err[256], detail[sizeof err + sizeof node->addr_errs];
  int tls_failed;
  node->handshake_left = 0;
  snprintf(node->ip, sizeof node->ip, "%s", node->addrs.addr[node->addr_next++]);
  node->has_ip_key =
      node->addr.kind == NODE_ADDR_TCP && resolve_key(node->ip, 0, &node->ip_key) == 0;
  redisAsyncContext *ac = conn_open(&node->addr, node->ip, env->tls, env->loop, env->flusher, node,
                                    on_connect, on_disconnect, err, sizeof err, &tls_failed);
  if (ac == NULL) {
    if (tls_failed)
      node_report(node, NODE_EV_TLS_FAILURE, NULL, NULL);
    else if (node_try_next(node, err))
      return;
    node_attempt_detail(node, err, detail, sizeof detail);
    node_fail(node, REDLOCK_LOG_WARN, "cannot connect", detail);
    return;
  }
  node->ac = ac;

  /* The handshake is pipelined behind the TCP connect: one round trip. */
  const node_addr_t *addr = &node->addr;
  int ok = 1;
  int auth = conn_queue_auth(ac, addr, auth_reply_cb, node);
  ok &= auth >= 0;
  node->handshake_left += auth > 0 ? (unsigned)auth : 0;
  if (addr->db != 0) {
    ok &= redisAsyncCommand(ac, select_reply_cb, node, "SELECT %d", addr->db) == REDIS_OK;
    node->handshake_left++;
  }
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *script = script_get((script_id_t)id);
    ok &= redisAsyncCommand(ac, script_load_reply_cb, node, "SCRIPT LOAD %b", script->body,
                            script->body_len) == REDIS_OK;
    node->handshake_left++;
  }
  ok &= redisAsyncCommand(ac, info_reply_cb, node, "INFO server") == REDIS_OK;
  node->handshake_left++;
  if (!ok)
    node_fail(node, REDLOCK_LOG_ERROR, "cannot connect", "cannot queue the handshake");
}

static void on_resolved(void *arg, const char *error, const resolve_list_t *list) {
  node_t *node = arg;
  node->resolving = NULL;
  /* An answer that comes between attempts is dropped: the next attempt
   * looks the name up afresh. */
  if (node->state != NODE_CONNECTING || !node->awaiting_lookup)
    return;
  node->awaiting_lookup = 0;
  if (error != NULL) {
    node_fail(node, REDLOCK_LOG_WARN, "cannot resolve its host name", error);
    return;
  }
  node->addrs = *list;
  node_open_next(node);
}

/* One connection attempt: name lookup (every time: a master may come back
 * at a new address; a lookup still under way from an earlier attempt is
 * waited for instead), connect to each address in turn and handshake, all
 * within the connect timeout. */
static void node_connect(node_t *node) {
  const node_env_t *env = node->env;
  const node_addr_t *addr = &node->addr;
  node->state = NODE_CONNECTING;
  node->handshake_left = 0;
  node->addrs.n = 0;
  node->addr_next = 0;
  node->addr_errs[0] = '\0';
  node_report(node, NODE_EV_CONNECTING, NULL, NULL);
  uv_timer_stop(&node->timer);
  uv_timer_start(&node->timer, connect_timer_cb, env->connect_timeout_ms, 0);
  node->named = addr->kind == NODE_ADDR_TCP && !resolve_is_numeric(addr->host);
  if (node->named) {
    node->awaiting_lookup = 1;
    if (node->resolving != NULL)
      return;
    char err[128];
    node->resolving = resolve_start(env->loop, addr->host, on_resolved, node, err, sizeof err);
    if (node->resolving == NULL)
      node_fail(node, REDLOCK_LOG_WARN, "cannot resolve its host name", err);
    return;
  }
  node->addrs.n = 1;
  snprintf(node->addrs.addr[0], sizeof node->addrs.addr[0], "%s",
           addr->kind == NODE_ADDR_TCP ? addr->host : "");
  node_open_next(node);
}

const char *node_ip(const node_t *node) { return node->ip; }

void node_start(node_t *node) {
  uv_timer_init(node->env->loop, &node->timer);
  node->timer.data = node;
  node_connect(node);
}

/* The queue's figures, for the stats. */
static void node_queue_changed(const node_t *node) {
  stats_master_queue(node->stats, node->index, node->inflight + node->backlog_len,
                     node->queued_bytes);
}

/* A request leaves the queue (answered, failed or taken back). */
static void node_dequeued(node_t *node, const node_req_t *req) {
  node->queued_bytes -= req->len <= node->queued_bytes ? req->len : node->queued_bytes;
  if (req->keep && node->releases_queued > 0)
    node->releases_queued--;
}

static void node_request_done(node_t *node, node_req_t *req, int got_reply) {
  if (node->inflight > 0)
    node->inflight--;
  node_dequeued(node, req);
  /* The read's time serves both the hung-master watch and the stats. */
  uint64_t now = 0;
  if (got_reply && (node->inflight > 0 || node->stats != NULL))
    now = conn_read_ns(node->ac);
  if (got_reply && node->inflight > 0) {
    node->progress_ns = now;
    node->progress_unwritten = 0;
  }
  if (node->stats != NULL) {
    if (got_reply)
      req->replied_ns = now; /* for the event of the round it belongs to */
    stats_master_done(node->stats, node->index, req->sent_ns, got_reply, now);
  }
}

/* Half of each bound free again: an overloaded master votes again. */
static int node_caught_up(const node_t *node) {
  return node->inflight + node->backlog_len <= NODE_MAX_QUEUED / 2 &&
         node->queued_bytes <= NODE_MAX_QUEUED_BYTES / 2;
}

/* After a request came back: fill the pipe from the backlog; a master that
 * was overloaded and has caught up votes again, and, after a reply (not on
 * a connection going down), what was kept for it goes out first. */
static void node_after_reply(node_t *node, int got_reply) {
  node_drain_backlog(node);
  if (node->overloaded && node_caught_up(node)) {
    node->overloaded = 0;
    log_write(node->env->log, REDLOCK_LOG_INFO,
              "master %s: caught up (%u requests, %zu bytes queued): it votes again",
              node->addr.label, node->inflight + node->backlog_len, node->queued_bytes);
  }
  if (got_reply && !node->overloaded && node->n_missed_releases > 0 && node_can_write(node))
    node_replay_releases(node);
  node_queue_changed(node);
}

/* hiredis' callback for every request node_send wrote. */
static void req_reply_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  (void)ac;
  node_req_t *req = privdata;
  node_t *node = req->node;
  node_request_done(node, req, reply != NULL);
  req->fn(req, reply); /* may free req, or send it again (NOSCRIPT) */
  node_after_reply(node, reply != NULL);
}

/* Hands req to hiredis; now_ns: the time to stamp it with. */
static int node_write(node_t *node, node_req_t *req, uint64_t now_ns) {
  if (redisAsyncFormattedCommand(node->ac, req_reply_cb, req, req->cmd, req->len) != REDIS_OK)
    return NODE_SEND_DOWN;
  req->sent_ns = now_ns;
  stats_master_sent(node->stats, node->index);
  if (node->inflight++ == 0) {
    node->progress_ns = req->sent_ns; /* idle until now: the wait starts here */
    node->progress_unwritten = 1;
    node->progress_writes = conn_writes(node->ac);
  }
  return 0;
}

static int node_can_write(const node_t *node) {
  return node->state == NODE_READY && node->ac != NULL;
}

static void node_drain_backlog(node_t *node) {
  uint64_t now_ns = 0; /* read once, for every request written here */
  while (!list_empty(&node->backlog) && node->inflight < NODE_MAX_INFLIGHT &&
         node_can_write(node)) {
    node_req_t *req = list_entry(node->backlog.next, node_req_t, link);
    list_remove(&req->link);
    node->backlog_len--;
    if (now_ns == 0)
      now_ns = clock_now_ns();
    if (node_write(node, req, now_ns) != 0) {
      /* hiredis is tearing the connection down: node_fail will fail it. */
      list_insert_head(&node->backlog, &req->link);
      node->backlog_len++;
      return;
    }
  }
}

/* The connection is gone: queued requests will never be written. */
static void node_fail_backlog(node_t *node) {
  node->overloaded = 0; /* what is queued is about to go */
  while (!list_empty(&node->backlog)) {
    node_req_t *req = list_entry(node->backlog.next, node_req_t, link);
    list_remove(&req->link);
    node->backlog_len--;
    node_dequeued(node, req);
    req->fn(req, NULL);
  }
  node_queue_changed(node);
}

/* Whether req fits in the queue (see NODE_MAX_QUEUED).  An empty queue takes
 * any one request, however long. */
static int node_queue_admits(node_t *node, const node_req_t *req) {
  if (node->overloaded && !req->keep)
    return 0;
  unsigned queued = node->inflight + node->backlog_len;
  if (queued == 0 ||
      (queued < NODE_MAX_QUEUED && node->queued_bytes + req->len <= NODE_MAX_QUEUED_BYTES))
    return 1;
  if (!node->overloaded) {
    node->overloaded = 1;
    char detail[128];
    snprintf(detail, sizeof detail, "%u requests, %zu bytes queued (bound: %u, %zu)", queued,
             node->queued_bytes, (unsigned)NODE_MAX_QUEUED, NODE_MAX_QUEUED_BYTES);
    log_write(node->env->log, REDLOCK_LOG_WARN,
              "master %s: queue full (%s): it answers more slowly than it is sent work; it "
              "votes busy on new rounds until half of that is answered, releases are kept for "
              "it meanwhile",
              node->addr.label, detail);
  }
  return 0;
}

int node_send(node_t *node, node_req_t *req) {
  if (!node_can_write(node))
    return NODE_SEND_DOWN;
  /* Past the queue's bound, or overloaded, a request is refused and counts
   * as a "busy" vote: back-pressure the caller sees.  A release is refused
   * only past the bound itself; the round keeps it for this master
   * (node_defer_release) until it has caught up. */
  if (!node_queue_admits(node, req))
    return NODE_SEND_BUSY;
  req->node = node;
  req->sent_ns = 0;
  req->replied_ns = 0;
  list_init(&req->link);
  node->queued_bytes += req->len;
  node->releases_queued += req->keep != 0;
  if (node->inflight < NODE_MAX_INFLIGHT && list_empty(&node->backlog)) {
    int rc = node_write(node, req, req->now_ns != 0 ? req->now_ns : clock_now_ns());
    if (rc != 0)
      node_dequeued(node, req);
    node_queue_changed(node);
    return rc;
  }
  /* The pipe is full: wait in order behind it. */
  list_insert_tail(&node->backlog, &req->link);
  node->backlog_len++;
  node_queue_changed(node);
  return 0;
}

int node_req_queued(const node_req_t *req) { return req->sent_ns == 0 && list_linked(&req->link); }

void node_cancel(node_req_t *req) {
  list_remove(&req->link);
  req->node->backlog_len--;
  node_dequeued(req->node, req);
  node_queue_changed(req->node);
}

int node_owes_releases(const node_t *node) { return node_can_write(node) && node->replays_out > 0; }

void node_read_pending(node_t *node) {
  if (node->state == NODE_READY && node->inflight > 0)
    conn_read_now(node->ac);
}

void node_write_late(node_t *node) {
  if (node->state != NODE_READY)
    return;
  /* Only the wait that began with a send still unwritten starts again: a
   * master already sitting on written requests is not let off by newer ones
   * (timers due together run before any flush, each with fresh output; and
   * a turn's own flush may have written the first send long ago). */
  int first_unwritten = node->progress_unwritten && conn_writes(node->ac) == node->progress_writes;
  if (conn_write_now(node->ac) && first_unwritten)
    node->progress_ns = clock_now_ns();
  node->progress_unwritten = 0;
}

static uint64_t node_hung_limit_ns(const node_t *node) {
  return (uint64_t)NODE_HUNG_REQUEST_TIMEOUTS * node->env->request_timeout_ms * 1000000u;
}

uint64_t node_replays_due_ns(const node_t *node) {
  return node_owes_releases(node) ? node->progress_ns + node_hung_limit_ns(node) : 0;
}

void node_drop_if_hung(node_t *node) {
  uint64_t limit_ns = node_hung_limit_ns(node);
  uint64_t now_ns = clock_now_ns(); /* progress_ns may have been set moments ago */
  if (node->state != NODE_READY || node->inflight == 0 || now_ns < node->progress_ns ||
      now_ns - node->progress_ns < limit_ns)
    return;
  char detail[96];
  snprintf(detail, sizeof detail, "no reply for %llu ms with %u requests waiting",
           (unsigned long long)((now_ns - node->progress_ns) / 1000000u), node->inflight);
  node_fail(node, REDLOCK_LOG_WARN, "master not answering; reconnecting", detail);
}

static void node_timer_closed(uv_handle_t *handle) {
  node_report(handle->data, NODE_EV_CLOSED, NULL, NULL);
}

void node_abandon(node_t *node) {
  if (node->state == NODE_CLOSED)
    return;
  node->state = NODE_CLOSED; /* from here on, releases deferred are abandoned */
  if (node->resolving != NULL) {
    /* Not waited for: its thread frees the request whenever it returns. */
    resolve_abandon(node->resolving);
    node->resolving = NULL;
  }
  uv_timer_stop(&node->timer);
  node_release_context(node);
  node_fail_backlog(node);
  while (node->n_missed_releases > 0)
    node_drop_oldest_kept(node);
  stats_master_kept(node->stats, node->index, 0);
}

void node_shutdown(node_t *node) {
  if (node->shut_down)
    return;
  node->shut_down = 1;
  node_abandon(node);
  uv_close((uv_handle_t *)&node->timer, node_timer_closed);
}
