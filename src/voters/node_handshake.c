/* node_handshake.c: what a master's handshake checks, and the quarantine it
 * has judged (see node.h).  Behind the link's AUTH and SELECT: SCRIPT LOAD of
 * our scripts, COMMAND INFO DELIFEQ DELEX and INFO server (what the server
 * runs: its caps, taken at READY by node_take_caps), then INFO replication
 * (only a master votes; then quarantine.c judges the restart / failover
 * quarantine over the server we knew, the owner's hint and the first
 * sightings, and keeps it).  The quarantine's end is ticked by the link's
 * timer while READY. */
#include "voters/node_int.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "proto/caps.h"
#include "proto/scripts.h"
#include "redlock.h"
#include "util/sightings.h"

/* The ack that may waive a quarantine (quarantine.h): none on a cluster
 * primary (node_t.primary.sharded). */
static const ack_spec_t no_ack = {.mode = ACK_NONE};
const ack_spec_t *node_waiver_ack(const node_t *node) {
  return node->primary.sharded ? &no_ack : &node->addr.ack;
}

int node_is_quarantined(const node_t *node, uint64_t now_ns) {
  return quarantine_active(&node->server.quarantine, now_ns);
}

/* The link's timer is the node's while READY: it marks the end of a restart
 * quarantine, for the log and the QUARANTINE_END event. */
void node_quarantine_tick(node_t *node) {
  if (node->state != NODE_READY)
    return;
  uint64_t now = node_now_ns(node);
  if (node_is_quarantined(node, now)) { /* the loop's clock runs in whole ms */
    (void)link_arm(&node->link, quarantine_left_ms(&node->server.quarantine, now));
    return; /* (a timer that cannot start is logged by the link) */
  }
  log_write(node->env->log, REDLOCK_LOG_INFO, "master %s: %s over", node->addr.label,
            quarantine_state_name(&node->server.quarantine, QUARANTINE_VIEW_AS_IS));
  node_report(node, NODE_EV_QUARANTINE_END, NULL, NULL);
}

/* What the handshake learnt the server runs (caps.h): said when it differs
 * from what the last connection found, or at the first. */
void node_take_caps(node_t *node) {
  unsigned caps = node->server.caps_handshake;
  int changed = caps != node->server.caps || node->ready_ns == 0;
  node->server.caps = caps;
  if (node->env->caps_seen != NULL)
    *node->env->caps_seen |= caps;
  if (!changed)
    return;
  if (!(caps & CAP_LUA))
    log_write(node->env->log, REDLOCK_LOG_WARN,
              "master %s runs no scripts (%s): it takes plain locks%s; semaphores, read-write "
              "locks, fenced and multi-resource locks are refused there (unsupported)",
              node->addr.label, node->server.noscripts_why,
              (caps & CAPS_RELEASE) && (caps & CAP_SET_IFEQ)
                  ? ", released with DELIFEQ / DELEX and extended with SET IFEQ"
                  : " only, and cannot release them before their TTL");
  else
    log_write(node->env->log, REDLOCK_LOG_DEBUG, "master %s: releases and extensions by %s",
              node->addr.label, caps_path(caps));
}

/* SCRIPT LOAD's answer: the SHA1 of one of our scripts, or the error of a
 * server that runs no scripts (caps.h), which then takes what needs none. */
static const char *script_load_check(void *arg, const redisReply *reply) {
  node_t *node = arg;
  if (reply->type == REDIS_REPLY_ERROR) {
    if (!caps_no_scripts_error(reply->str, reply->len))
      return "SCRIPT LOAD refused";
    if (node->server.caps_handshake & CAP_LUA) {
      node->server.caps_handshake &= ~(unsigned)CAP_LUA;
      uv_mutex_lock(node->env->mutex);
      snprintf(node->server.noscripts_why, sizeof node->server.noscripts_why, "no Lua engine: %.*s",
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
      info_parse_server(reply->str, reply->len, &node->server.server_info) != ST_OK)
    return "INFO server reply lacks run_id or uptime_in_seconds";
  node->server.caps_handshake |=
      caps_from_version(node->server.server_info.is_valkey, node->server.server_info.version);
  return NULL;
}

/* COMMAND INFO DELIFEQ DELEX: which release commands the server has; an
 * error (COMMAND forbidden to this user) leaves the scripts to do it. */
static const char *command_info_check(void *arg, const redisReply *reply) {
  node_t *node = arg;
  node->server.caps_handshake |= caps_from_command_info(reply);
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
  if (env->state_dir == NULL || repl->replid2[0] == '\0' || node->server.quarantine.past.seen)
    return;
  uint64_t age_ns = 0;
  char why[NODE_DOWN_WHY_LEN];
  if (!sightings_first_seen(env->state_dir, node->server.server_info.run_id, repl->replid, &age_ns,
                            why, sizeof why)) {
    node_warn(node, "first sightings not used", why);
    return;
  }
  if (age_ns == 0 || age_ns >= now)
    return;
  uint64_t seen_ns = now - age_ns;
  int hint_usable =
      hint->master_since_ns != 0 &&
      (hint->run_id[0] == '\0' || strcmp(hint->run_id, node->server.server_info.run_id) == 0);
  if (hint_usable && hint->master_since_ns <= seen_ns)
    return;
  memcpy(hint->run_id, node->server.server_info.run_id, sizeof hint->run_id);
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
      info_parse_replication(reply->str, reply->len, &repl) != ST_OK)
    return "INFO replication reply lacks role";
  if (!repl.is_master)
    return repl.role[0] == 's' ? "it is a replica (role: slave), and only a master can vote"
                               : "it is not a master, and only a master can vote";
  const info_server_t *info = &node->server.server_info;
  uint64_t now = node_now_ns(node);
  quarantine_hint_t hint = node->server.quarantine.hint;
  if (env->quarantine)
    node_sighting_hint(node, &repl, now, &hint);
  quarantine_verdict_t v =
      quarantine_at_handshake(&node->server.quarantine, env->quarantine, info, &repl, &hint, now,
                              env->max_ttl_ms, node_waiver_ack(node));
  quarantine_t q = v.q;
  if (v.new_run_id)
    log_write(env->log, REDLOCK_LOG_WARN, "master %s %s (run_id changed; up %lld s)",
              node->addr.label,
              q.kind == QUARANTINE_MOVED ? "is another server than before" : "restarted",
              (long long)info->uptime_s);
  memcpy(node->server.run_id, info->run_id, sizeof node->server.run_id);
  if (q.kind != QUARANTINE_NONE) {
    int level = v.said ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_WARN;
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
status_t node_handshake(link_t *link, void *arg) {
  node_t *node = arg;
  node->server.caps_handshake = CAP_LUA;
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

void node_hint(node_t *node, const char *run_id, uint64_t master_since_ns) {
  quarantine_set_hint(&node->server.quarantine, run_id, master_since_ns);
}
