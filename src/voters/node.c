/* node.c: one Redis master, a voter on a link (see node.h). */
#include "voters/node.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn/conn.h"
#include "proto/caps.h"
#include "proto/reply.h"
#include "proto/scripts.h"
#include "redlock.h"
#include "util/alloc.h"
#include "util/sightings.h"
#include "util/strutil.h"

static void node_fail_backlog(node_t *node);
static void node_drain_backlog(node_t *node);
static void node_replay_releases(node_t *node);
static int node_can_write(const node_t *node);
static void node_queue_ack(redisAsyncContext *ac, void *arg);
static void node_announce(node_t *node, const node_req_t *req, const redisReply *reply);

static status_t node_handshake(link_t *link, void *arg);

/* INFO replication, the role check after a batch (node_t.check_role):
 * the same bytes for every node. */
static const char role_cmd[] = "*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n";
#define ROLE_CMD_LEN (sizeof role_cmd - 1)

/* Whether writes that ask an ack get one here: a durability ack, or the
 * role check (only with the quarantine on: without it a changed role is
 * the user's risk, as a restart is). */
static inline int node_role_checked(const node_t *node) {
  return node->check_role && node->env->quarantine;
}
static inline int node_acks(const node_t *node) {
  return node->ack_cmd != NULL || node_role_checked(node);
}

static void node_on_link(void *arg, link_t *link, link_event_t ev, int level, const char *what,
                         const char *detail);

/* The ack that may waive a quarantine (quarantine.h): none on a cluster
 * primary (node_t.sharded). */
static const ack_spec_t no_ack = {.mode = ACK_NONE};
static inline const ack_spec_t *node_waiver_ack(const node_t *node) {
  return node->sharded ? &no_ack : &node->addr.ack;
}

int node_init(node_t *node, const node_env_t *env, unsigned index, const node_addr_t *addr) {
  memset(node, 0, sizeof *node);
  node->env = env;
  node->index = index;
  node->stats_primary = -1;
  node->state = NODE_DOWN;
  list_init(&node->missed_releases);
  list_init(&node->backlog);
  list_init(&node->acks_waiting);
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
  if (node_addr_copy(&node->addr, addr) != 0)
    return REDLOCK_ENOMEM;
  const ack_spec_t *ack = &node->addr.ack;
  if (ack->mode != ACK_NONE) {
    uint32_t t = env->request_timeout_ms;
    if (ack->timeout_ms != 0 && ack->timeout_ms < t)
      t = ack->timeout_ms;
    int n =
        ack->mode == ACK_WAIT
            ? redisFormatCommand(&node->ack_cmd, "WAIT %d %u", ack->replicas, t)
            : redisFormatCommand(&node->ack_cmd, "WAITAOF %d %d %u", ack->local, ack->replicas, t);
    if (n < 0)
      return REDLOCK_ENOMEM;
    node->ack_cmd_len = (size_t)n;
  }
  return 0;
}

static void node_report(node_t *node, node_event_t ev, const char *what, const char *detail) {
  node->env->report(node->env->arg, node, ev, what, detail);
}

static uint64_t node_now_ns(const node_t *node) { return tb_now_ns(node->env->tb); }

void node_free(node_t *node) {
  redisFreeCommand(node->ack_cmd);
  node->ack_cmd = NULL;
  /* list_linked, not !list_empty: redlock_open frees the calloc'ed nodes it
   * never reached with node_init when it fails early (a TLS key that cannot
   * be loaded), and their zeroed list heads are not lists yet. */
  while (list_linked(&node->missed_releases)) {
    missed_release_t *missed = list_entry(node->missed_releases.next, missed_release_t, link);
    list_remove(&missed->link);
    rl_free(missed);
  }
  node_addr_clear(&node->addr);
}

int node_is_quarantined(const node_t *node, uint64_t now_ns) {
  return node->quarantine_until_ns != 0 && now_ns < node->quarantine_until_ns;
}

static void node_quarantine_why(const node_t *node, char *buf, size_t size) {
  uint64_t now = node_now_ns(node), until = node->quarantine_until_ns;
  if (until != 0 && now < until)
    snprintf(buf, size, "%s: %llu ms left", quarantine_name(node->quarantine_kind),
             (unsigned long long)((until - now + 999999u) / 1000000u));
  else if (size > 0)
    buf[0] = '\0';
}

int node_quarantined_now(const node_t *node) {
  return node->quarantine_until_ns != 0 && node_is_quarantined(node, node_now_ns(node));
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
  const link_t *la = &a->link, *lb = &b->link;
  if (la->has_ip_key && lb->has_ip_key && a->addr.port == b->addr.port &&
      resolve_key_equal(&la->ip_key, &lb->ip_key)) {
    snprintf(how, how_len,
             strchr(la->ip, ':') != NULL ? "the same address [%s]:%d" : "the same address %s:%d",
             la->ip, a->addr.port);
    return 1;
  }
  if (a->run_id[0] != '\0' && strcmp(a->run_id, b->run_id) == 0) {
    snprintf(how, how_len, "the same run_id %s", a->run_id);
    return 1;
  }
  return 0;
}

void node_warn(node_t *node, const char *what, const char *detail) {
  if (node->env->log->cb == NULL)
    return;
  (void)log_limited(node->env->log, &node->warn_limit, node_now_ns(node), REDLOCK_LOG_WARN,
                    "master %s: %s%s%s", node->addr.label, what, detail ? ": " : "",
                    detail ? detail : "");
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
    node->past.lost_ns = node_now_ns(node); /* the server we knew was there until now */
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

/* A replayed release came back.  Without a reply it is kept again for the
 * next connection (node_defer_release ignores it once the client closes). */
static void replay_done(node_req_t *req, const redisReply *reply) {
  missed_release_t *missed = container_of(req, missed_release_t, req);
  node_t *node = req->node;
  node->replays_out--;
  if (reply == NULL)
    node_defer_release(node, missed->cmd, missed->len);
  else if (reply->type == REDIS_REPLY_ERROR && node->env->replay_error != NULL)
    node->env->replay_error(node->env->arg, node, missed->cmd, missed->len, reply);
  rl_free(missed);
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
    missed->req.sent_ns = 0; /* node_send reads the clock */
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
  rl_free(oldest);
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
  missed_release_t *missed = rl_calloc(1, sizeof *missed + len);
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

void node_take_kept(node_t *node, void (*fn)(void *arg, const char *cmd, size_t len), void *arg) {
  list_node_t batch;
  list_move_all(&node->missed_releases, &batch);
  node->n_missed_releases = 0;
  node->missed_bytes = 0;
  stats_master_kept(node->stats, node->index, 0);
  while (!list_empty(&batch)) {
    missed_release_t *missed = list_entry(batch.next, missed_release_t, link);
    list_remove(&missed->link);
    fn(arg, missed->cmd, missed->len);
    rl_free(missed);
  }
}

unsigned node_releases_owed(const node_t *node) {
  return node->releases_queued + node->n_missed_releases;
}

static void node_busy_why(const node_t *node, char *buf, size_t size) {
  if (!node->overloaded) {
    snprintf(buf, size, "%s", "");
    return;
  }
  snprintf(buf, size, "queue full: %u requests, %zu bytes", node->inflight + node->backlog_len,
           node->queued_bytes);
}

void node_why(const node_t *node, int why, char *buf, size_t size) {
  if (size == 0)
    return;
  if (why == WHY_DOWN) {
    size_t n = strnlen(node->down_why, sizeof node->down_why);
    n = n < size ? n : size - 1;
    memcpy(buf, node->down_why, n);
    buf[n] = '\0';
  } else if (why == WHY_BUSY)
    node_busy_why(node, buf, size);
  else if (why == WHY_UNACKED)
    snprintf(buf, size, "%s", node->ack_why);
  else if (why == WHY_QUARANTINED)
    node_quarantine_why(node, buf, size);
  else if (why == WHY_NOTSUP)
    snprintf(buf, size, "%s", node->noscripts_why);
  else
    buf[0] = '\0';
}

/* The link's timer is the node's while READY: it marks the end of a restart
 * quarantine, for the log and the QUARANTINE_END event. */
static void node_quarantine_tick(node_t *node) {
  if (node->state != NODE_READY)
    return;
  uint64_t now = node_now_ns(node);
  if (node_is_quarantined(node, now)) { /* the loop's clock runs in whole ms */
    (void)link_arm(&node->link, (node->quarantine_until_ns - now + 999999u) / 1000000u);
    return; /* (a timer that cannot start is logged by the link) */
  }
  log_write(node->env->log, REDLOCK_LOG_INFO, "master %s: %s over", node->addr.label,
            quarantine_name(node->quarantine_kind));
  node_report(node, NODE_EV_QUARANTINE_END, NULL, NULL);
}

/* What the handshake learnt the server runs (caps.h): said when it differs
 * from what the last connection found, or at the first. */
static void node_take_caps(node_t *node) {
  unsigned caps = node->caps_handshake;
  int changed = caps != node->caps || node->ready_ns == 0;
  node->caps = caps;
  if (node->env->caps_seen != NULL)
    *node->env->caps_seen |= caps;
  if (!changed)
    return;
  if (!(caps & CAP_LUA))
    log_write(node->env->log, REDLOCK_LOG_WARN,
              "master %s runs no scripts (%s): it takes plain locks%s; semaphores, read-write "
              "locks, fenced and multi-resource locks are refused there (unsupported)",
              node->addr.label, node->noscripts_why,
              (caps & CAPS_RELEASE) && (caps & CAP_SET_IFEQ)
                  ? ", released with DELIFEQ / DELEX and extended with SET IFEQ"
                  : " only, and cannot release them before their TTL");
  else
    log_write(node->env->log, REDLOCK_LOG_DEBUG, "master %s: releases and extensions by %s",
              node->addr.label, caps_path(caps));
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
  if (node_is_quarantined(node, node->ready_ns))
    (void)link_arm(&node->link, (node->quarantine_until_ns - node->ready_ns + 999999u) / 1000000u);
  node_report(node, NODE_EV_UP, NULL, NULL);
  node_replay_releases(node);
  log_write(node->env->log, REDLOCK_LOG_INFO, "master %s: connected", node->addr.label);
  node_attempt_finished(node);
}

/* SCRIPT LOAD's answer: the SHA1 of one of our scripts, or the error of a
 * server that runs no scripts (caps.h), which then takes what needs none. */
static const char *script_load_check(void *arg, const redisReply *reply) {
  node_t *node = arg;
  if (reply->type == REDIS_REPLY_ERROR) {
    if (!caps_no_scripts_error(reply->str, reply->len))
      return "SCRIPT LOAD refused";
    if (node->caps_handshake & CAP_LUA) {
      node->caps_handshake &= ~(unsigned)CAP_LUA;
      uv_mutex_lock(node->env->mutex);
      snprintf(node->noscripts_why, sizeof node->noscripts_why, "no Lua engine: %.*s",
               (int)(reply->len < 120 ? reply->len : 120), reply->str);
      uv_mutex_unlock(node->env->mutex);
    }
    return NULL;
  }
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *script = script_get((script_id_t)id);
    if (reply->type == REDIS_REPLY_STRING && reply->len == 40 &&
        memcmp(reply->str, script->sha1, 40) == 0)
      return NULL;
  }
  return "SCRIPT LOAD returned an unexpected SHA1";
}

/* INFO server: the run_id (a restart, or another server, shows as a new
 * one) and the uptime, kept for the judgement after INFO replication. */
static const char *info_check(void *arg, const redisReply *reply) {
  node_t *node = arg;
  if ((reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) ||
      info_parse_server(reply->str, reply->len, &node->server_info) != 0)
    return "INFO server reply lacks run_id or uptime_in_seconds";
  node->caps_handshake |= caps_from_version(node->server_info.is_valkey, node->server_info.version);
  return NULL;
}

/* COMMAND INFO DELIFEQ DELEX: which release commands the server has; an
 * error (COMMAND forbidden to this user) leaves the scripts to do it. */
static const char *command_info_check(void *arg, const redisReply *reply) {
  node_t *node = arg;
  node->caps_handshake |= caps_from_command_info(reply);
  return NULL;
}

/* A promotion at a time INFO does not give (master_replid2 set): the
 * first sighting of this replication history by any client sharing the
 * state directory dates it (sightings.h), when that is earlier than what
 * the owner's hint says.  Recorded now when none was. */
static void node_sighting_hint(node_t *node, const info_replication_t *repl, uint64_t now,
                               quarantine_hint_t *hint) {
  const node_env_t *env = node->env;
  /* Only at a first sight: a server that replaced the one we knew at this
   * address may have been a master for long while the old one still granted
   * keys here, so its own history dates nothing (quarantine.h, "moved"). */
  if (env->state_dir == NULL || repl->replid2[0] == '\0' || node->past.seen)
    return;
  uint64_t age_ns = 0;
  char why[NODE_DOWN_WHY_LEN];
  if (!sightings_first_seen(env->state_dir, node->server_info.run_id, repl->replid, &age_ns, why,
                            sizeof why)) {
    node_warn(node, "first sightings not used", why);
    return;
  }
  if (age_ns == 0 || age_ns >= now)
    return;
  uint64_t seen_ns = now - age_ns;
  int hint_usable =
      hint->master_since_ns != 0 &&
      (hint->run_id[0] == '\0' || strcmp(hint->run_id, node->server_info.run_id) == 0);
  if (hint_usable && hint->master_since_ns <= seen_ns)
    return;
  memcpy(hint->run_id, node->server_info.run_id, sizeof hint->run_id);
  hint->master_since_ns = seen_ns;
  log_write(env->log, REDLOCK_LOG_INFO,
            "master %s: its replication history was first seen %llu ms ago (%s)", node->addr.label,
            (unsigned long long)(age_ns / 1000000u), env->state_dir);
}

/* INFO replication: only a master votes; then the quarantine judgement
 * (quarantine.h) over what both INFO sections said and the server we knew. */
static const char *replication_check(void *arg, const redisReply *reply) {
  node_t *node = arg;
  const node_env_t *env = node->env;
  info_replication_t repl;
  if ((reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) ||
      info_parse_replication(reply->str, reply->len, &repl) != 0)
    return "INFO replication reply lacks role";
  if (!repl.is_master)
    return repl.role[0] == 's' ? "it is a replica (role: slave), and only a master can vote"
                               : "it is not a master, and only a master can vote";
  const info_server_t *info = &node->server_info;
  uint64_t now = node_now_ns(node);
  /* A reconnect to the same server inside its quarantine: said already. */
  int said = node->past.seen && strcmp(node->past.run_id, info->run_id) == 0 &&
             node->quarantine_until_ns > now;
  quarantine_t q = {QUARANTINE_NONE, 0};
  if (env->quarantine) {
    quarantine_hint_t hint = node->hint;
    node_sighting_hint(node, &repl, now, &hint);
    q = quarantine_judge(&node->past, info, &repl, &hint, now, env->max_ttl_ms,
                         node_waiver_ack(node));
  }
  /* A failover's or a move's quarantine runs from when it was seen, which
   * the server does not tell again: a reconnect keeps it.  (A restart's is
   * judged anew from the uptime, which gives the same end.) */
  if (said && node->quarantine_kind != QUARANTINE_RESTART &&
      q.until_ns < node->quarantine_until_ns) {
    q.until_ns = node->quarantine_until_ns;
    q.kind = node->quarantine_kind;
  }
  if (node->past.seen && strcmp(node->past.run_id, info->run_id) != 0)
    log_write(env->log, REDLOCK_LOG_WARN, "master %s %s (run_id changed; up %lld s)",
              node->addr.label,
              q.kind == QUARANTINE_MOVED ? "is another server than before" : "restarted",
              (long long)info->uptime_s);
  quarantine_remember(&node->past, info, &repl);
  memcpy(node->run_id, info->run_id, sizeof node->run_id);
  node->quarantine_until_ns = q.until_ns;
  node->quarantine_kind = q.kind;
  if (q.kind != QUARANTINE_NONE) {
    int level = said ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_WARN;
    unsigned long long left_ms = (q.until_ns - now) / 1000000u;
    if (q.kind == QUARANTINE_RESTART)
      log_write(env->log, level,
                "master %s started %lld s ago: its votes do not count for another %llu ms "
                "(restart quarantine = max TTL %u ms)",
                node->addr.label, (long long)info->uptime_s, left_ms, env->max_ttl_ms);
    else
      log_write(env->log, level,
                "master %s %s: its votes do not count for another %llu ms (%s = max TTL %u ms)",
                node->addr.label,
                q.kind == QUARANTINE_FAILOVER
                    ? "was promoted from a replica (its replication id changed, or "
                      "master_replid2 is set) and may lack keys its old master granted"
                    : "is another server than before and may lack keys the old one granted",
                left_ms, quarantine_name(q.kind), env->max_ttl_ms);
  }
  return NULL;
}

/* The link's handshake (after AUTH and SELECT): the scripts, then INFO
 * server, pipelined behind them. */
static status_t node_handshake(link_t *link, void *arg) {
  node_t *node = arg;
  node->caps_handshake = CAP_LUA;
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *script = script_get((script_id_t)id);
    status_t st = link_step_any(link, "SCRIPT LOAD", script_load_check, "SCRIPT LOAD %b",
                                script->body, script->body_len);
    if (st != ST_OK)
      return st;
  }
  status_t st =
      link_step_any(link, "COMMAND INFO", command_info_check, "COMMAND INFO DELIFEQ DELEX");
  if (st != ST_OK)
    return st;
  st = link_step(link, "INFO server", info_check, "INFO server");
  if (st != ST_OK)
    return st;
  return link_step(link, "INFO replication", replication_check, "INFO replication");
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

int node_retarget(node_t *node, const char *host, int port, const char *why) {
  if (node->addr.kind != NODE_ADDR_TCP)
    return 0;
  if (node->addr.host != NULL && strcmp(node->addr.host, host) == 0 && node->addr.port == port)
    return 0;
  char *copy = str_dup(host);
  if (copy == NULL)
    return REDLOCK_ENOMEM;
  uv_mutex_lock(node->env->mutex);
  char *old = node->addr.host;
  node->addr.host = copy;
  node->addr.port = port;
  uv_mutex_unlock(node->env->mutex);
  rl_free(old);
  node_reconnect(node, "master moved", why);
  return 0;
}

void node_reconnect(node_t *node, const char *what, const char *why) {
  if (!node->link.attached || node->state == NODE_CLOSED)
    return;
  if (node->state != NODE_READY) {
    /* No connection lived on: the next handshake judges the server, and a
     * backoff running is not cut short (a redirection to an address that
     * keeps failing must not reconnect at the rate of the redirections). */
    node->past.lost_ns = 0;
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
  node->past.lost_ns = 0;
  if (at_once)
    link_connect(&node->link);
}

void node_hint(node_t *node, const char *run_id, uint64_t master_since_ns) {
  memset(&node->hint, 0, sizeof node->hint);
  if (run_id != NULL && strlen(run_id) == INFO_RUN_ID_LEN)
    memcpy(node->hint.run_id, run_id, INFO_RUN_ID_LEN);
  node->hint.master_since_ns = master_since_ns;
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

/* ac: the context the reply came on (NULL: none came). */
static void node_request_done(node_t *node, node_req_t *req, const redisAsyncContext *ac) {
  int got_reply = ac != NULL;
  if (node->inflight > 0)
    node->inflight--;
  node_dequeued(node, req);
  /* The read's time serves both the hung-master watch and the stats. */
  uint64_t now = 0;
  if (got_reply && (node->inflight > 0 || node->stats != NULL))
    now = conn_read_ns(ac);
  if (got_reply && node->inflight > 0) {
    node->progress_ns = now;
    node->progress_unwritten = 0;
  }
  if (node->stats != NULL) {
    if (got_reply)
      req->replied_ns = now; /* for the event of the round it belongs to */
    stats_master_done(node->stats, node->index, req->sent_ns, got_reply, now);
    stats_primary_done(node->stats, node->index, node->stats_primary, req->sent_ns, got_reply, now);
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
static void node_after_reply_work(node_t *node, int got_reply) {
  node_drain_backlog(node);
  if (node->overloaded && node_caught_up(node)) {
    node->overloaded = 0;
    log_write(node->env->log, REDLOCK_LOG_INFO,
              "master %s: caught up (%u requests, %zu bytes queued): it votes again",
              node->addr.label, node->inflight + node->backlog_len, node->queued_bytes);
  }
  if (got_reply && !node->overloaded && node->n_missed_releases > 0 && node_can_write(node))
    node_replay_releases(node);
}

/* Most replies find no backlog, no overload and nothing kept: that test
 * stays inline in the reply callbacks. */
static inline void node_after_reply(node_t *node, int got_reply) {
  if (!list_empty(&node->backlog) || node->overloaded || (got_reply && node->n_missed_releases > 0))
    node_after_reply_work(node, got_reply);
  node_queue_changed(node);
}

/* A reply saying the server no longer takes writes as a master (-READONLY:
 * it was made a replica; -LOADING: it restarted and loads its data): told to
 * the owner once per connection (a Sentinel voter asks its sentinels where
 * the master went).  The vote itself is an error either way. */
static void node_check_role_error(node_t *node, const redisReply *reply) {
  if (reply == NULL || reply->type != REDIS_REPLY_ERROR || reply->str == NULL ||
      node->not_master_said || node->state != NODE_READY)
    return;
  if (!(reply->len >= 8 && memcmp(reply->str, "READONLY", 8) == 0) &&
      !(reply->len >= 7 && memcmp(reply->str, "LOADING", 7) == 0))
    return;
  node->not_master_said = 1;
  node_report(node, NODE_EV_NOT_MASTER, "it answers as no master", reply->str);
}

/* hiredis' callback for every request node_send wrote. */
static void req_reply_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  node_req_t *req = privdata;
  node_t *node = req->node;
  node_request_done(node, req, reply != NULL ? ac : NULL);
  if (reply != NULL && (req->form == NODE_FORM_DELIFEQ || req->form == NODE_FORM_DELEX))
    node_announce(node, req, reply);
  req->fn(req, reply); /* may free req, or send it again (NOSCRIPT) */
  node_after_reply(node, reply != NULL);
  node_check_role_error(node, reply);
}

/* ---- durability acks ----------------------------------------------------------------
 * A write that asks for an ack is written as usual, and one ack command
 * (WAIT / WAITAOF) follows the last such write of each write of the
 * connection's output (once per loop turn: conn.c's flusher; node_queue_ack).
 * A server answers WAIT once the replicas have the connection's replication
 * offset as of its last write before the WAIT, so one ack covers every write
 * before it on its connection; and it stops reading that connection while
 * the WAIT blocks, so one ack per write would let through one write per
 * replica round trip.
 *
 * Each such request waits on node->acks_waiting; its write's reply is kept
 * (req->held) until the ack's reply comes, which settles every request whose
 * reply came before it (the ack's batch: replies come in order, so those are
 * the list's head).  req->fn then runs once, with the write's reply, and its
 * vote counts only when that reply is a yes and the batch's ack reached what
 * was asked.  Its time, for the vote and for the validity, is the ack's
 * arrival, later than its own reply's: validity can only shrink
 * (docs/safety.md §5b). */
enum {
  REQ_ACK_OFF = 0, /* a plain request: one reply */
  REQ_ACK_OPEN,    /* written; no ack queued behind it yet */
  REQ_ACK_WRITTEN, /* its batch's ack is queued behind it */
  REQ_ACK_HELD,    /* the write's reply is kept (req->held) */
  REQ_ACK_NOMEM,   /* the write's reply could not be kept */
  REQ_ACK_ALONE,   /* its batch's ack could not be queued: the write's reply is final, unacked */
};

static void ack_write_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  node_req_t *req = privdata;
  int state = req->ack_state;
  if (reply == NULL || state != REQ_ACK_WRITTEN) {
    /* Final now: the connection went (lost like any request in flight), or
     * no ack will come.  An ack is queued before any write goes out, so
     * only ALONE has a reply here: hiredis refused the ack (a context it is
     * tearing down; hiredis 1.x out of memory, which then fails the
     * connection at its next write).  Such a write never counts. */
    list_remove(&req->link);
    req->ack_state = REQ_ACK_OFF;
    if (reply != NULL) {
      req->unacked = 1;
      req->nomem = state == REQ_ACK_ALONE;
    }
    req_reply_cb(ac, reply, privdata);
    return;
  }
  req->held = reply_clone(reply);
  req->ack_state = req->held != NULL ? REQ_ACK_HELD : REQ_ACK_NOMEM;
  node_check_role_error(req->node, reply);
}

/* Settles one request of the ack's batch, once every part of the ack came
 * (req->unacked: one fell short); reply NULL, the connection went before. */
static void ack_settle(node_t *node, node_req_t *req, const redisAsyncContext *ac,
                       const redisReply *reply) {
  node_request_done(node, req, ac);
  redisReply *held = req->held;
  int state = req->ack_state;
  req->held = NULL;
  req->ack_state = REQ_ACK_OFF;
  if (reply == NULL) {
    req->fn(req, NULL); /* the connection went before the ack came back */
  } else if (state == REQ_ACK_HELD) {
    req->fn(req, held);
    /* req->unacked: whether every part of its ack reached what was asked */ /* may send it
                                                                                again (NOSCRIPT)
                                                                              */
  } else {
    /* The write's reply could not be kept: nothing to count, an error the
     * round gives no vote for. */
    static const char oom_text[] = "ERR out of memory keeping the reply for its ack";
    redisReply oom;
    memset(&oom, 0, sizeof oom);
    oom.type = REDIS_REPLY_ERROR;
    oom.str = (char *)oom_text; /* hiredis' field is not const; the round only reads it */
    oom.len = sizeof oom_text - 1;
    req->nomem = 1;
    req->fn(req, &oom);
  }
  reply_clone_free(held);
}

/* Records why an ack fell short (read by redlock_last_votes), and logs it. */
static void ack_fell_short(node_t *node, const char *what, const char *why) {
  uv_mutex_lock(node->env->mutex);
  snprintf(node->ack_why, sizeof node->ack_why, "%s", why);
  uv_mutex_unlock(node->env->mutex);
  node_warn(node, what, why);
}

/* One reply of a batch's ack came (WAIT / WAITAOF, or INFO replication),
 * len: its command's bytes.  met: it reached what was asked.  Every request
 * of the batch (the head of acks_waiting whose write replies came: replies
 * come in order) takes it; once a batch has all of its ack's replies, each
 * of its requests is settled; reply NULL, the connection went: they are
 * settled at once, lost like any request in flight. */
static void ack_part_done(node_t *node, redisAsyncContext *ac, const redisReply *reply, size_t len,
                          int met) {
  /* Each part counts once in the queue (node_queue_ack), whatever its batch. */
  if (node->inflight > 0)
    node->inflight--;
  node->queued_bytes -= len <= node->queued_bytes ? len : node->queued_bytes;
  for (list_node_t *at = node->acks_waiting.next; at != &node->acks_waiting; at = at->next) {
    node_req_t *req = list_entry(at, node_req_t, link);
    if (req->ack_state != REQ_ACK_HELD && req->ack_state != REQ_ACK_NOMEM)
      break;
    if (reply == NULL) {
      req->ack_left = 0;
      continue;
    }
    if (!met)
      req->unacked = 1;
    if (req->ack_left > 0)
      req->ack_left--;
  }
  /* Settled apart from the pass above: a request's fn may send it again
   * (NOSCRIPT), and that joins the tail, unanswered, for a later ack. */
  while (!list_empty(&node->acks_waiting)) {
    node_req_t *req = list_entry(node->acks_waiting.next, node_req_t, link);
    if ((req->ack_state != REQ_ACK_HELD && req->ack_state != REQ_ACK_NOMEM) || req->ack_left > 0)
      break;
    list_remove(&req->link);
    ack_settle(node, req, reply != NULL ? ac : NULL, reply);
  }
  node_after_reply(node, reply != NULL);
}

/* hiredis' callback for a durability ack: privdata is the node. */
static void ack_reply_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  node_t *node = privdata;
  int met = 0;
  if (reply != NULL) {
    char why[NODE_DOWN_WHY_LEN];
    met = reply_ack_met(reply, node->addr.ack.mode == ACK_WAITAOF, node->addr.ack.local,
                        node->addr.ack.replicas, why, sizeof why);
    if (!met)
      ack_fell_short(node, "durability ack fell short", why);
  }
  ack_part_done(node, ac, reply, node->ack_cmd_len, met);
}

/* The role check's verdict on INFO replication: 1 when the server is still
 * a master with the replication id of the handshake.  A promotion always
 * makes a new replication id (Redis and Valkey shift it at every
 * promotion), so the same id, read after the batch's writes ran, means no
 * promotion since the handshake, and a master now means no demotion that
 * was not followed by one.  Another id: the server was a replica and a
 * master again on this very connection (a cluster failover and back,
 * REPLICAOF by hand): it is judged as a reconnect would judge it
 * (quarantine_new_replid), and the id is remembered, so that the next
 * batches count once its quarantine is over. */
static int role_check_met(node_t *node, const redisReply *reply) {
  info_replication_t repl;
  if ((reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) ||
      info_parse_replication(reply->str, reply->len, &repl) != 0) {
    ack_fell_short(node, "role check failed", "INFO replication reply lacks role");
    return 0;
  }
  if (!repl.is_master) {
    char why[NODE_DOWN_WHY_LEN];
    snprintf(why, sizeof why, "it is no longer a master (role: %s)", repl.role);
    ack_fell_short(node, "role check failed", why);
    return 0;
  }
  if (strcmp(repl.replid, node->past.replid) == 0)
    return 1;
  const node_env_t *env = node->env;
  uint64_t now = node_now_ns(node);
  quarantine_t q = quarantine_new_replid(&repl, now, env->max_ttl_ms, node_waiver_ack(node));
  memcpy(node->past.replid, repl.replid, sizeof node->past.replid);
  ack_fell_short(node, "role check failed",
                 "its replication id changed since the handshake: it was a replica and a "
                 "master again");
  if (q.kind != QUARANTINE_NONE && q.until_ns > node->quarantine_until_ns) {
    node->quarantine_until_ns = q.until_ns;
    node->quarantine_kind = q.kind;
    (void)link_arm(&node->link, (q.until_ns - now + 999999u) / 1000000u);
    log_write(env->log, REDLOCK_LOG_WARN,
              "master %s was made a replica and a master again (its replication id changed "
              "on a live connection) and may lack keys it granted: its votes do not count for "
              "another %u ms (%s = max TTL)",
              node->addr.label, env->max_ttl_ms, quarantine_name(q.kind));
  }
  return 0;
}

/* hiredis' callback for the role check: privdata is the node. */
static void role_reply_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  node_t *node = privdata;
  int met = reply != NULL && role_check_met(node, reply);
  ack_part_done(node, ac, reply, ROLE_CMD_LEN, met);
}

/* conn.c calls this right before each write of the connection's output: the
 * writes that ask an ack since the last one get theirs, after them all: the
 * role check (INFO replication), then the durability ack (WAIT / WAITAOF),
 * each as the node has them.  A part hiredis refuses (a context it is
 * tearing down, or, in hiredis 1.x, out of memory) leaves the batch short:
 * its votes never count; when no part goes, their replies are final. */
static void node_queue_ack(redisAsyncContext *ac, void *arg) {
  node_t *node = arg;
  if (list_empty(&node->acks_waiting) ||
      list_entry(node->acks_waiting.prev, node_req_t, link)->ack_state != REQ_ACK_OPEN)
    return; /* every write that asks one has it already */
  unsigned parts = 0;
  int refused = 0;
  if (node_role_checked(node)) {
    if (redisAsyncFormattedCommand(ac, role_reply_cb, node, role_cmd, ROLE_CMD_LEN) == REDIS_OK) {
      parts++;
      node->queued_bytes += ROLE_CMD_LEN;
    } else {
      refused = 1;
    }
  }
  if (node->ack_cmd != NULL) {
    if (redisAsyncFormattedCommand(ac, ack_reply_cb, node, node->ack_cmd, node->ack_cmd_len) ==
        REDIS_OK) {
      parts++;
      node->queued_bytes += node->ack_cmd_len;
    } else {
      refused = 1;
    }
  }
  for (list_node_t *at = node->acks_waiting.prev; at != &node->acks_waiting; at = at->prev) {
    node_req_t *req = list_entry(at, node_req_t, link);
    if (req->ack_state != REQ_ACK_OPEN)
      break; /* the OPEN ones are the tail: written since the last ack */
    req->ack_state = parts > 0 ? REQ_ACK_WRITTEN : REQ_ACK_ALONE;
    req->ack_left = (uint8_t)parts;
    if (refused)
      req->unacked = 1;
  }
  if (parts > 0) {
    node->inflight += parts;
    node_queue_changed(node);
  }
}

/* The form of req this master runs (node_forms_t): the first script-free
 * one it has the commands for, else the script (or plain command) itself. */
static node_form_t node_pick_form(const node_t *node, const node_req_t *req) {
  const node_forms_t *f = req->forms;
  if (f == NULL || !(node->caps & (CAPS_RELEASE | CAP_SET_IFEQ)))
    return NODE_FORM_SCRIPT;
  static const unsigned needs[NODE_FORM_COUNT] = {
      [NODE_FORM_DELIFEQ] = CAP_DELIFEQ,
      [NODE_FORM_DELEX] = CAP_DELEX,
      [NODE_FORM_SET_IFEQ] = CAP_SET_IFEQ,
      [NODE_FORM_TX] = CAP_SET_IFEQ, /* a fence commit's SET IFEQ KEEPTTL */
  };
  int lua = (node->caps & CAP_LUA) != 0;
  for (int form = NODE_FORM_SCRIPT + 1; form < NODE_FORM_COUNT; form++) {
    /* A cluster primary answers a key whose slot moved with -MOVED / -ASK,
     * which a transaction hides behind EXECABORT (the queued command's
     * reply is not read): where Lua runs, its script keeps redirections
     * working.  Without Lua, a transaction during a migration fails its
     * vote (docs/api.md, Masters without Lua). */
    int transaction = form == NODE_FORM_SET_IFEQ || form == NODE_FORM_TX;
    if (f->form[form].cmd != NULL && (node->caps & needs[form]) == needs[form] &&
        !(lua && (f->nolua_only >> form & 1u)) && !(lua && transaction && node->sharded))
      return (node_form_t)form;
  }
  return NODE_FORM_SCRIPT;
}

/* Commands written ahead of a script-free form, replies unread (a NULL
 * callback: hiredis skips each reply in order). */
static void node_write_unread(node_t *node, const node_cmd_t *cmds, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    (void)redisAsyncFormattedCommand(node->link.ac, NULL, NULL, cmds[i].cmd, cmds[i].len);
}

/* A script-free release that deleted our key announces it, as the script
 * does (and only then: a release that found the key gone or another's
 * wakes nobody). */
static void node_announce(node_t *node, const node_req_t *req, const redisReply *reply) {
  const node_forms_t *f = req->forms;
  if (reply->type != REDIS_REPLY_INTEGER || reply->integer != 1 || f->announce.cmd == NULL ||
      node->link.ac == NULL)
    return;
  node_write_unread(
      node, req->shard && f->announce_shard.cmd != NULL ? &f->announce_shard : &f->announce, 1);
}

/* Hands req to hiredis; now_ns: the time to stamp it with. */
static inline status_t node_write(node_t *node, node_req_t *req, uint64_t now_ns) {
  req->unacked = 0;
  req->nomem = 0;
  const char *cmd = req->cmd;
  size_t len = req->len;
  if (req->form != NODE_FORM_SCRIPT) {
    cmd = req->forms->form[req->form].cmd;
    len = req->forms->form[req->form].len;
    node_write_unread(node, req->forms->before, req->forms->n_before);
  }
  if (req->ack && node_acks(node)) {
    if (redisAsyncFormattedCommand(node->link.ac, ack_write_cb, req, cmd, len) != REDIS_OK)
      return ST_DOWN;              /* hiredis is tearing the connection down */
    req->ack_state = REQ_ACK_OPEN; /* its ack follows at the write (node_queue_ack) */
    list_insert_tail(&node->acks_waiting, &req->link);
  } else if (redisAsyncFormattedCommand(node->link.ac, req_reply_cb, req, cmd, len) != REDIS_OK) {
    return ST_DOWN; /* hiredis is tearing the connection down */
  }
  req->sent_ns = now_ns;
  stats_master_sent(node->stats, node->index);
  stats_primary_sent(node->stats, node->index, node->stats_primary, node->addr.label);
  if (node->inflight++ == 0) {
    node->progress_ns = req->sent_ns; /* idle until now: the wait starts here */
    node->progress_unwritten = 1;
    node->progress_writes = conn_writes(node->link.ac);
  }
  return ST_OK;
}

static int node_can_write(const node_t *node) {
  return node->state == NODE_READY && node->link.ac != NULL;
}

/* Whether a request may be written now (the connection can write): fewer
 * than NODE_MAX_INFLIGHT are out and, for a node writing in batches, none
 * is, or this turn's output is still unwritten (the request joins it). */
static inline int node_pipe_open(const node_t *node) {
  if (node->inflight >= NODE_MAX_INFLIGHT)
    return 0;
  return !node->batch_writes || node->inflight == 0 || conn_output_pending(node->link.ac);
}

static void node_drain_backlog(node_t *node) {
  uint64_t now_ns = 0; /* read once, for every request written here */
  while (!list_empty(&node->backlog) && node_can_write(node) && node_pipe_open(node)) {
    node_req_t *req = list_entry(node->backlog.next, node_req_t, link);
    list_remove(&req->link);
    node->backlog_len--;
    if (now_ns == 0)
      now_ns = node_now_ns(node);
    if (node_write(node, req, now_ns) != ST_OK) {
      /* hiredis is tearing the connection down: the link will fail it. */
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

status_t node_send(node_t *node, node_req_t *req) {
  uint64_t stamp = req->sent_ns; /* the sender's clock reading, or 0 */
  req->sent_ns = 0;              /* not written (yet) */
  if (!node_can_write(node))
    return ST_DOWN;
  req->form = (uint8_t)node_pick_form(node, req);
  if (req->script && req->form == NODE_FORM_SCRIPT && !(node->caps & CAP_LUA))
    return ST_ENOTSUP; /* votes "unsupported", with noscripts_why */
  /* Past the queue's bound, or overloaded, a request is refused and counts
   * as a "busy" vote: back-pressure the caller sees.  A release is refused
   * only past the bound itself; the round keeps it for this master
   * (node_defer_release) until it has caught up. */
  if (!node_queue_admits(node, req))
    return ST_BUSY;
  req->node = node;
  req->replied_ns = 0;
  list_init(&req->link);
  node->queued_bytes += req->len;
  node->releases_queued += req->keep != 0;
  if (list_empty(&node->backlog) && node_pipe_open(node)) {
    status_t rc = node_write(node, req, stamp != 0 ? stamp : node_now_ns(node));
    if (rc != ST_OK)
      node_dequeued(node, req);
    node_queue_changed(node);
    return rc;
  }
  /* The pipe is full, or a batch is out: wait in order behind it. */
  req->batched = node->inflight < NODE_MAX_INFLIGHT;
  list_insert_tail(&node->backlog, &req->link);
  node->backlog_len++;
  node_queue_changed(node);
  return ST_OK;
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
    conn_read_now(node->link.ac);
}

void node_write_late(node_t *node) {
  if (node->state != NODE_READY)
    return;
  /* Only the wait that began with a send still unwritten starts again: a
   * master already sitting on written requests is not let off by newer ones
   * (timers due together run before any flush, each with fresh output; and
   * a turn's own flush may have written the first send long ago). */
  int first_unwritten =
      node->progress_unwritten && conn_writes(node->link.ac) == node->progress_writes;
  if (conn_write_now(node->link.ac) && first_unwritten)
    node->progress_ns = node_now_ns(node);
  node->progress_unwritten = 0;
}

static uint64_t node_hung_limit_ns(const node_t *node) {
  return (uint64_t)NODE_HUNG_REQUEST_TIMEOUTS * node->env->request_timeout_ms * 1000000u;
}

uint64_t node_replays_due_ns(const node_t *node) {
  return node_owes_releases(node) ? node->progress_ns + node_hung_limit_ns(node) : 0;
}

void node_drop_if_hung(node_t *node) {
  if (node->state == NODE_READY)
    (void)link_drop_if_silent(&node->link, node->progress_ns, node_hung_limit_ns(node),
                              node->inflight);
}

void node_abandon(node_t *node) {
  if (node->state == NODE_CLOSED)
    return;
  node->state = NODE_CLOSED; /* from here on, releases deferred are abandoned */
  link_abandon(&node->link);
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
  link_shutdown(&node->link);
}
