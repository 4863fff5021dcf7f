/* cli_doctor_checks.c: the checks `redlock doctor` runs on one master, over
 * one synchronous connection: what the server is (INFO, ROLE), whether it
 * runs the library's scripts (every one loaded, EVALSHA, EVAL, TIME inside
 * a script, the release's PUBLISH), the path its releases and extensions
 * take (caps.h: scripts, the script-free commands, both or none) and those
 * commands at work, SUBSCRIBE, the durability ack the URI
 * asks for (WAIT / WAITAOF after a write of the doctor's own key),
 * persistence, the ACL user's permissions (cli_doctor_acl.c), the round
 * trip, and its clock's rate against ours.  Each check adds one line to the
 * voter's report; a FAIL means the library would not count its vote. */
#define _GNU_SOURCE

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_doctor.h"
#include "proto/caps.h"    /* what the handshake learns a master runs */
#include "proto/direct.h"  /* the floor of a fenced lock taken without scripts */
#include "proto/info.h"    /* the version INFO server gives */
#include "proto/scripts.h" /* the embedded Lua scripts, from the redlock_uri target */

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The reply's text (error, status or string), printable, into out.  An
 * unknown command's error loses the arguments it repeats. */
static const char *reply_text(const redisReply *r, char *out, size_t size) {
  if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ERR unknown command", 19) == 0) {
    const char *args = strstr(r->str, ", with args");
    cli_term_escape(r->str, args != NULL ? (size_t)(args - r->str) : r->len, out, size);
  } else if (r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS ||
             r->type == REDIS_REPLY_STRING)
    cli_term_escape(r->str, r->len, out, size);
  else if (r->type == REDIS_REPLY_INTEGER)
    snprintf(out, size, "%lld", r->integer);
  else if (r->type == REDIS_REPLY_NIL)
    snprintf(out, size, "(nil)");
  else
    snprintf(out, size, "(a reply of type %d)", r->type);
  return out;
}

static int is_error(const redisReply *r) { return r->type == REDIS_REPLY_ERROR; }

/* An error reply that says the command does not exist (renamed away, or too
 * old a server). */
static int unknown_command(const redisReply *r) {
  return is_error(r) && strncmp(r->str, "ERR unknown command", 19) == 0;
}

/* The first 8 characters of a 40-hex id, for a line that stays short. */
static const char *short_id(const char *id, char *out, size_t size) {
  snprintf(out, size, "%.8s%s", id, strlen(id) > 8 ? "..." : "");
  return out;
}

/* ---- what the server is ------------------------------------------------------------- */

static void check_server(dr_master_t *m) {
  static const char *const sections[] = {"server", "replication", "cluster"};
  char why[512] = "";
  for (int i = 0; i < 3; i++) {
    redisReply *r = dr_command(m, "INFO %s", sections[i]);
    if (r == NULL)
      return;
    if (r->type == REDIS_REPLY_STRING)
      m->info[i] = strndup(r->str, r->len);
    else if (i == 0)
      reply_text(r, why, sizeof why);
    freeReplyObject(r);
  }
  if (m->info[0] == NULL) {
    m->denied_info = 1;
    dr_add(m->v, "server", DR_FAIL,
           "INFO server: %s (the library reads run_id and uptime_in_seconds from it)", why);
    return;
  }
  dr_voter_t *v = m->v;
  char name[32] = "", mode[32] = "", redis_version[32] = "";
  dr_info_field(m->info[0], "redis_version", redis_version, sizeof redis_version);
  if (dr_info_field(m->info[0], "server_name", name, sizeof name) && strcmp(name, "valkey") == 0 &&
      dr_info_field(m->info[0], "valkey_version", v->version, sizeof v->version)) {
    snprintf(v->server, sizeof v->server, "valkey");
  } else {
    snprintf(v->server, sizeof v->server, "%.15s", name[0] ? name : "redis");
    snprintf(v->version, sizeof v->version, "%s", redis_version);
  }
  if (!dr_info_field(m->info[0], "redis_mode", mode, sizeof mode))
    dr_info_field(m->info[0], "server_mode", mode, sizeof mode);
  char compat[64] = "";
  if (strcmp(v->server, "redis") != 0 && redis_version[0])
    snprintf(compat, sizeof compat, " (redis_version %s)", redis_version);
  dr_add(v, "server", DR_OK, "%s %s%s%s%s", v->server, v->version[0] ? v->version : "?", compat,
         mode[0] ? ", " : "", mode[0] ? mode : "");
}

/* ROLE, or INFO replication's role when ROLE is refused. */
static void check_role(dr_master_t *m) {
  dr_voter_t *v = m->v;
  char role[32] = "", master[400] = "", why[512] = "";
  redisReply *r = dr_command(m, "ROLE");
  if (r == NULL)
    return;
  if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
      r->element[0]->type == REDIS_REPLY_STRING) {
    cli_term_escape(r->element[0]->str, r->element[0]->len, role, sizeof role);
    if (strcmp(role, "slave") == 0 && r->elements >= 4 &&
        r->element[1]->type == REDIS_REPLY_STRING && r->element[2]->type == REDIS_REPLY_INTEGER &&
        r->element[3]->type == REDIS_REPLY_STRING) {
      char host[256], state[64];
      cli_term_escape(r->element[1]->str, r->element[1]->len, host, sizeof host);
      cli_term_escape(r->element[3]->str, r->element[3]->len, state, sizeof state);
      snprintf(master, sizeof master, " of %s:%lld (link %s)", host, r->element[2]->integer, state);
    }
  } else {
    reply_text(r, why, sizeof why);
  }
  freeReplyObject(r);
  if (role[0] == '\0' && m->info[1] != NULL)
    dr_info_field(m->info[1], "role", role, sizeof role);
  if (role[0] == '\0') {
    dr_add(v, "role", DR_FAIL, "unknown (ROLE: %s; INFO replication refused)", why);
    return;
  }
  if (strcmp(role, "slave") == 0)
    snprintf(role, sizeof role, "replica");
  m->stop = strcmp(role, "sentinel") == 0;
  snprintf(v->role, sizeof v->role, "%.15s", role);
  if (strcmp(role, "master") == 0)
    dr_add(v, "role", DR_OK, "master");
  else if (strcmp(role, "replica") == 0 && m->addr->voter == VOTER_KIND_CLUSTER)
    dr_add(v, "role", DR_FAIL,
           "replica%s: the slot map names it a primary, but it is a replica now (a failover in "
           "progress?): run doctor again",
           master);
  else if (strcmp(role, "replica") == 0)
    dr_add(v, "role", DR_FAIL,
           "replica%s: a replica cannot vote (it refuses the writes); give its master%s", master,
           m->v->addr->voter == VOTER_KIND_SENTINEL ? "" : ", or a redis-sentinel:// voter");
  else if (strcmp(role, "sentinel") == 0)
    dr_add(v, "role", DR_FAIL,
           "a sentinel, not a master: name it in a redis-sentinel://HOST:PORT/MASTER-NAME voter "
           "(the other checks are for masters: not run)");
  else
    dr_add(v, "role", DR_FAIL, "%s: only a master can vote", role);
}

/* Connected replicas (INFO replication) and cluster mode (INFO cluster). */
static void check_topology(dr_master_t *m) {
  dr_voter_t *v = m->v;
  char buf[64], cluster[16] = "", line[DR_DETAIL_MAX] = "";
  if (m->info[1] != NULL && dr_info_field(m->info[1], "connected_slaves", buf, sizeof buf)) {
    v->replicas = strtol(buf, NULL, 10);
    size_t o = (size_t)snprintf(line, sizeof line, "%ld connected replica%s", v->replicas,
                                v->replicas == 1 ? "" : "s");
    /* slaveN:ip=...,port=...,state=online,offset=...,lag=... */
    for (long i = 0; i < v->replicas && i < 8 && o < sizeof line; i++) {
      char field[32], desc[256], ip[64] = "?", port[16] = "?", state[32] = "?", lag[32] = "";
      snprintf(field, sizeof field, "slave%ld", i);
      if (!dr_info_field(m->info[1], field, desc, sizeof desc))
        continue;
      for (char *save = NULL, *kv = strtok_r(desc, ",", &save); kv != NULL;
           kv = strtok_r(NULL, ",", &save)) {
        if (strncmp(kv, "ip=", 3) == 0)
          snprintf(ip, sizeof ip, "%s", kv + 3);
        else if (strncmp(kv, "port=", 5) == 0)
          snprintf(port, sizeof port, "%s", kv + 5);
        else if (strncmp(kv, "state=", 6) == 0)
          snprintf(state, sizeof state, "%s", kv + 6);
        else if (strncmp(kv, "lag=", 4) == 0)
          snprintf(lag, sizeof lag, "%s", kv + 4);
      }
      /* lag: seconds since the replica's last ack (it acks every second) */
      o += (size_t)snprintf(line + o, sizeof line - o, "%s%s:%s %s%s%s%s", i ? ", " : ": ", ip,
                            port, state, lag[0] ? " lag " : "", lag, lag[0] ? " s" : "");
    }
  } else {
    snprintf(line, sizeof line, "replicas unknown (INFO replication refused)");
  }
  if (m->info[2] != NULL)
    dr_info_field(m->info[2], "cluster_enabled", cluster, sizeof cluster);
  size_t o = strlen(line);
  snprintf(line + o, sizeof line - o, "; cluster_enabled %s", cluster[0] ? cluster : "unknown");
  if (m->addr->voter == VOTER_KIND_CLUSTER) {
    if (strcmp(cluster, "1") == 0)
      dr_add(v, "topology", DR_OK, "%s", line);
    else
      dr_add(v, "topology", DR_FAIL, "%s: the slot map names it, but it is not a cluster node",
             line);
  } else if (strcmp(cluster, "1") == 0)
    dr_add(v, "topology", DR_FAIL,
           "%s: a cluster node answers only for its own slots (MOVED for the others); name the "
           "cluster as a redis-cluster:// voter",
           line);
  else
    dr_add(v, "topology", DR_OK, "%s", line);
}

/* The INFO fields the library reads: run_id and uptime_in_seconds tell a
 * restart (src/voters/node.c); the replication ids and offset tell a new master
 * after a failover (docs/deployments.md). */
static void check_info(dr_master_t *m) {
  dr_voter_t *v = m->v;
  if (m->denied_info) {
    dr_add(v, "info", DR_FAIL, "INFO server refused: see server");
    return;
  }
  char run_id[64] = "", uptime[32] = "", role[32] = "", replid[64] = "", replid2[64] = "",
       second[32] = "", s1[16], s2[16], s3[16];
  int has_run_id = dr_info_field(m->info[0], "run_id", run_id, sizeof run_id);
  int has_uptime = dr_info_field(m->info[0], "uptime_in_seconds", uptime, sizeof uptime);
  int n_repl = 0;
  if (m->info[1] != NULL) {
    n_repl += dr_info_field(m->info[1], "role", role, sizeof role);
    n_repl += dr_info_field(m->info[1], "master_replid", replid, sizeof replid);
    n_repl += dr_info_field(m->info[1], "master_replid2", replid2, sizeof replid2);
    n_repl += dr_info_field(m->info[1], "second_repl_offset", second, sizeof second);
  }
  char line[DR_DETAIL_MAX];
  snprintf(
      line, sizeof line,
      "run_id %s, uptime_in_seconds %s; role %s, master_replid %s, master_replid2 %s, "
      "second_repl_offset %s",
      has_run_id ? short_id(run_id, s1, sizeof s1) : "MISSING", has_uptime ? uptime : "MISSING",
      role[0] ? role : "missing", replid[0] ? short_id(replid, s2, sizeof s2) : "missing",
      replid2[0] ? short_id(replid2, s3, sizeof s3) : "missing", second[0] ? second : "missing");
  if (!has_run_id || !has_uptime || strlen(run_id) != 40)
    dr_add(v, "info", DR_FAIL, "%s: the library needs run_id and uptime_in_seconds", line);
  else if (n_repl < 4)
    dr_add(v, "info", DR_WARN, "%s: without the replication fields a failover is not noticed",
           line);
  else
    dr_add(v, "info", DR_OK, "%s", line);
}

/* CONFIG GET appendonly, appendfsync, save. */
static void check_persistence(dr_master_t *m) {
  static const char *const names[] = {"appendonly", "appendfsync", "save"};
  char values[3][128], why[512];
  for (int i = 0; i < 3; i++) {
    redisReply *r = dr_command(m, "CONFIG GET %s", names[i]);
    if (r == NULL)
      return;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
      cli_term_escape(r->element[1]->str, r->element[1]->len, values[i], sizeof values[i]);
      freeReplyObject(r);
      continue;
    }
    reply_text(r, why, sizeof why);
    freeReplyObject(r);
    dr_add(m->v, "persistence", DR_SKIP, "unknown (CONFIG not allowed: %s)", why);
    return;
  }
  int aof = strcmp(values[0], "yes") == 0;
  dr_add(m->v, "persistence", DR_OK, "appendonly %s, appendfsync %s, save \"%s\"%s", values[0],
         values[1], values[2],
         !aof && values[2][0] == '\0'
             ? ": none, a restart forgets the locks (keep the restart quarantine on)"
             : "");
}

/* ---- scripts ---------------------------------------------------------------------------- */

/* A script command's failure, in words: an unknown command (renamed away)
 * means a server without Lua. */
static const char *script_error(const redisReply *r, const char *cmd, char *out, size_t size) {
  if (unknown_command(r)) {
    snprintf(out, size, "%s is not a command of this server: it runs no Lua scripts", cmd);
    return out;
  }
  char text[512];
  snprintf(out, size, "%s: %s", cmd, reply_text(r, text, sizeof text));
  return out;
}

/* What the library's handshake reads besides SCRIPT LOAD (caps.h): the
 * version in INFO server (SET IFEQ) and COMMAND INFO DELIFEQ DELEX.  Adds
 * no line: check_path says what they add up to. */
static void probe_caps(dr_master_t *m) {
  m->caps = CAP_LUA; /* until SCRIPT LOAD says otherwise, as the handshake */
  if (m->info[0] != NULL) {
    info_server_t is;
    (void)info_parse_server(m->info[0], strlen(m->info[0]), &is); /* the version is optional */
    m->caps |= caps_from_version(is.is_valkey, is.version);
  }
  redisReply *r = dr_command(m, "COMMAND INFO DELIFEQ DELEX");
  if (r == NULL)
    return;
  if (is_error(r))
    reply_text(r, m->command_info_why, sizeof m->command_info_why);
  m->caps |= caps_from_command_info(r);
  freeReplyObject(r);
}

/* SCRIPT LOAD of every script the library runs: each SHA1 must be ours.
 * The error of a server that runs no scripts (caps.h) is no failure here:
 * the library takes what needs none there, and check_path judges it. */
static void check_scripts(dr_master_t *m) {
  char why[512];
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *s = script_get((script_id_t)id);
    redisReply *r = dr_command(m, "SCRIPT LOAD %b", s->body, s->body_len);
    if (r == NULL)
      return;
    if (is_error(r) && caps_no_scripts_error(r->str, r->len)) {
      m->no_lua = 1;
      m->caps &= ~(unsigned)CAP_LUA;
      reply_text(r, m->no_lua_why, sizeof m->no_lua_why);
      dr_add(m->v, "scripts", DR_SKIP, "no Lua engine (SCRIPT LOAD: %s): see path", m->no_lua_why);
      freeReplyObject(r);
      return;
    }
    if (r->type != REDIS_REPLY_STRING || r->len != 40 || memcmp(r->str, s->sha1, 40) != 0) {
      if (is_error(r))
        dr_add(m->v, "scripts", DR_FAIL, "the %s script: %s", s->name,
               script_error(r, "SCRIPT LOAD", why, sizeof why));
      else
        dr_add(m->v, "scripts", DR_FAIL, "SCRIPT LOAD %s: %s, not its SHA1", s->name,
               reply_text(r, why, sizeof why));
      freeReplyObject(r);
      return;
    }
    freeReplyObject(r);
  }
  m->lua_ok = 1;
  dr_add(m->v, "scripts", DR_OK, "SCRIPT LOAD of all %d scripts", SCRIPT_COUNT);
}

/* The "path" check: how the library releases and extends on this master
 * (caps_path()) and the commands found; what a master without Lua refuses
 * ("limits").  Without Lua and without the script-free commands a lock
 * could not be released before its TTL: that master fails. */
static void check_path(dr_master_t *m) {
  dr_voter_t *v = m->v;
  unsigned caps = m->caps;
  const char *path = caps_path(caps);
  snprintf(v->path, sizeof v->path, "%s", path);
  char found[128] = "";
  size_t o = 0;
  static const struct {
    unsigned cap;
    const char *name;
  } cmds[] = {{CAP_DELIFEQ, "DELIFEQ"}, {CAP_DELEX, "DELEX IFEQ"}, {CAP_SET_IFEQ, "SET IFEQ"}};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (caps & cmds[i].cap)
      o += (size_t)snprintf(found + o, sizeof found - o, "%s%s", o ? ", " : "", cmds[i].name);
  char note[256] = "";
  if (m->command_info_why[0])
    snprintf(note, sizeof note,
             " (COMMAND INFO: %s: DELIFEQ and DELEX taken as missing, as the "
             "library does)",
             m->command_info_why);
  const char *lua = (caps & CAP_LUA) ? "Lua scripts" : "no Lua engine";
  int direct = (caps & CAPS_RELEASE) && (caps & CAP_SET_IFEQ);
  if (caps & CAP_LUA)
    dr_add(v, "path", DR_OK, "%s: %s; %s%s: %s", path, found[0] ? found : "no script-free commands",
           lua, note,
           direct ? "a lock of one resource is released and extended without a script, the rest by "
                    "scripts"
                  : "every release and extension by a script");
  else if (direct) {
    v->limited = 1;
    dr_add(v, "path", DR_OK,
           "%s: %s; %s%s: plain and fenced locks of one resource (fenced ones as MULTI/EXEC "
           "transactions)",
           path, found, lua, note);
    dr_add(v, "limits", DR_WARN,
           "semaphores, read-write locks and multi-resource locks need Lua: refused here "
           "(unsupported); where too many masters run no scripts the library refuses them "
           "(REDLOCK_ENOTSUP)");
  } else
    dr_add(v, "path", DR_FAIL,
           "%s: %s; %s%s: the library takes only plain locks here and cannot release them before "
           "their TTL (it needs Lua, or DELIFEQ / DELEX IFEQ and SET IFEQ: Valkey >= 9.0, Redis "
           ">= 8.4)",
           path, found[0] ? found : "no script-free commands", lua, note);
}

/* The release script on the doctor's key (never set here): deletes nothing.
 * With EVALSHA (every call) and EVAL (after NOSCRIPT). */
static void check_eval(dr_master_t *m, int sha) {
  const dr_settings_t *set = m->set;
  const script_t *s = script_get(SCRIPT_RELEASE);
  const char *name = sha ? "evalsha" : "eval";
  if (m->no_lua) {
    dr_add(m->v, name, DR_SKIP, "no Lua engine (see path)");
    return;
  }
  if (m->no_key) {
    dr_add(m->v, name, DR_SKIP, "no key of the doctor's in this primary's slots (see key)");
    return;
  }
  redisReply *r =
      sha ? dr_command(m, "EVALSHA %s 1 %s %s 0", s->sha1, set->key, set->value)
          : dr_command(m, "EVAL %b 1 %s %s 0", s->body, s->body_len, set->key, set->value);
  if (r == NULL)
    return;
  char why[512];
  if (r->type == REDIS_REPLY_INTEGER)
    dr_add(m->v, name, DR_OK, "%s of the release script works",
           sha ? "EVALSHA" : "EVAL (after NOSCRIPT)");
  else
    dr_add(m->v, name, DR_FAIL, "%s", script_error(r, sha ? "EVALSHA" : "EVAL", why, sizeof why));
  if (sha && r->type != REDIS_REPLY_INTEGER)
    m->lua_ok = 0;
  freeReplyObject(r);
}

static void check_evalsha(dr_master_t *m) { check_eval(m, 1); }
static void check_eval_body(dr_master_t *m) { check_eval(m, 0); }

/* A fenced acquisition on the doctor's key: the script reads TIME, then
 * writes (which servers before effects replication refused), and the
 * release that follows PUBLISHes on the key's channel, as every release of
 * a held lock does. */
static void check_time_and_publish(dr_master_t *m) {
  const dr_settings_t *set = m->set;
  int users = 0;
  for (int id = 0; id < SCRIPT_COUNT; id++)
    users += strstr(script_get((script_id_t)id)->body, "redis.call(\"time\")") != NULL;
  if (m->no_key) {
    dr_add(m->v, "time-in-script", DR_SKIP, "no key of the doctor's in this primary's slots");
    dr_add(m->v, "publish", DR_SKIP, "no key of the doctor's in this primary's slots");
    return;
  }
  if (m->no_lua) {
    dr_add(m->v, "time-in-script", DR_SKIP,
           "no Lua engine: a fenced lock of one resource is a transaction here (see fenced-tx)");
    dr_add(m->v, "publish", DR_SKIP,
           "no Lua engine: a release PUBLISHes beside its DELIFEQ / DELEX (see direct)");
    return;
  }
  if (!m->lua_ok) {
    if (users)
      dr_add(m->v, "time-in-script", DR_SKIP, "needs the scripts (see above)");
    dr_add(m->v, "publish", DR_SKIP, "needs the scripts (see above)");
    return;
  }
  char why[512];
  if (users == 0) {
    dr_add(m->v, "time-in-script", DR_SKIP, "none of the library's scripts calls TIME");
  } else {
    const script_t *s = script_get(SCRIPT_ACQUIRE_FENCED);
    /* KEYS: the lock key, its fence counter and the counter's floor. */
    redisReply *r = dr_command(m, "EVALSHA %s 3 %s %s %s" DIRECT_FLOOR_SUFFIX " %s %u", s->sha1,
                               set->key, set->fence_key, set->fence_key, set->value, DR_KEY_TTL_MS);
    if (r == NULL)
      return;
    if (r->type == REDIS_REPLY_INTEGER)
      dr_add(m->v, "time-in-script", DR_OK,
             "TIME, then writes, in a script (%d of the %d scripts call TIME): fencing token %lld",
             users, SCRIPT_COUNT, r->integer);
    else
      dr_add(m->v, "time-in-script", DR_FAIL, "%d of the %d scripts call TIME, then write: %s",
             users, SCRIPT_COUNT, reply_text(r, why, sizeof why));
    freeReplyObject(r);
  }
  /* The release of a held lock: compare, delete, PUBLISH. */
  redisReply *r = dr_command(m, "SET %s %s PX %u", set->key, set->value, DR_KEY_TTL_MS);
  if (r == NULL)
    return;
  int set_ok = !is_error(r);
  if (!set_ok)
    dr_add(m->v, "publish", DR_FAIL, "a lock to release: SET: %s", reply_text(r, why, sizeof why));
  freeReplyObject(r);
  if (!set_ok)
    return;
  const script_t *rel = script_get(SCRIPT_RELEASE);
  r = dr_command(m, "EVALSHA %s 1 %s %s 1 %s", rel->sha1, set->key, set->value, set->channel);
  if (r == NULL)
    return;
  if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
    dr_add(m->v, "publish", DR_OK, "the release script's PUBLISH on %s{<key>} works",
           REDLOCK_RELEASE_CHANNEL_PREFIX);
  else
    dr_add(m->v, "publish", DR_FAIL, "the release script (it PUBLISHes on %s{<key>}): %s",
           REDLOCK_RELEASE_CHANNEL_PREFIX, reply_text(r, why, sizeof why));
  freeReplyObject(r);
  r = dr_command(m, "DEL %s %s", set->key, set->fence_key);
  if (r != NULL)
    freeReplyObject(r);
}

/* One step of a script-free check: 1 when the reply is what ok() accepts,
 * else 0 with the check failed (name, what the step is, the reply); -1
 * when the connection was lost. */
static int direct_step(dr_master_t *m, const char *name, const char *what, redisReply *r,
                       int (*ok)(const redisReply *)) {
  if (r == NULL)
    return -1;
  char why[512];
  int good = ok(r);
  if (!good)
    dr_add(m->v, name, DR_FAIL, "%s: %s", what, reply_text(r, why, sizeof why));
  freeReplyObject(r);
  return good;
}

static int is_ok_status(const redisReply *r) {
  return r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
}
static int is_one(const redisReply *r) { return r->type == REDIS_REPLY_INTEGER && r->integer == 1; }
static int is_integer(const redisReply *r) { return r->type == REDIS_REPLY_INTEGER; }
static int is_queued(const redisReply *r) { return r->type == REDIS_REPLY_STATUS; }
/* EXEC of the fenced acquisition: SET's +OK, then GET, ZSCORE, TIME. */
static int is_acquire_exec(const redisReply *r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements == 4 && is_ok_status(r->element[0]) &&
         r->element[3]->type == REDIS_REPLY_ARRAY;
}
/* EXEC of the commit: ZADD GT's count, then SET IFEQ's +OK. */
static int is_commit_exec(const redisReply *r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements == 2 && is_integer(r->element[0]) &&
         is_ok_status(r->element[1]);
}

/* The "direct" check: where the master has them (caps.h), the library
 * releases a lock of one resource with DELIFEQ (or DELEX IFEQ) and a PUBLISH
 * beside, and extends it with SET IFEQ PX, instead of the scripts: the same
 * commands on the doctor's key. */
static void check_direct(dr_master_t *m) {
  const dr_settings_t *set = m->set;
  unsigned caps = m->caps;
  if (!((caps & CAPS_RELEASE) && (caps & CAP_SET_IFEQ))) {
    dr_add(m->v, "direct", DR_SKIP, "no script-free commands (see path)");
    return;
  }
  if (m->no_key) {
    dr_add(m->v, "direct", DR_SKIP, "no key of the doctor's in this primary's slots (see key)");
    return;
  }
  int del = (caps & CAP_DELIFEQ) != 0;
  int rc = direct_step(m, "direct", "a lock to release: SET NX PX",
                       dr_command(m, "SET %s %s NX PX %u", set->key, set->value, DR_KEY_TTL_MS),
                       is_ok_status);
  if (rc == 1)
    rc = direct_step(
        m, "direct", "the extension: SET IFEQ PX",
        dr_command(m, "SET %s %s IFEQ %s PX %u", set->key, set->value, set->value, DR_KEY_TTL_MS),
        is_ok_status);
  if (rc == 1)
    rc = direct_step(m, "direct", del ? "the release: DELIFEQ" : "the release: DELEX IFEQ",
                     del ? dr_command(m, "DELIFEQ %s %s", set->key, set->value)
                         : dr_command(m, "DELEX %s IFEQ %s", set->key, set->value),
                     is_one);
  if (rc == 1)
    rc = direct_step(m, "direct", "the release's PUBLISH",
                     dr_command(m, "PUBLISH %s %s", set->channel, ""), is_integer);
  if (rc == 1)
    dr_add(m->v, "direct", DR_OK,
           "SET IFEQ PX (an extension), %s and PUBLISH on %s{<key>} (a release) work",
           del ? "DELIFEQ" : "DELEX IFEQ", REDLOCK_RELEASE_CHANNEL_PREFIX);
  redisReply *r = dr_command(m, "DEL %s", set->key);
  if (r != NULL)
    freeReplyObject(r);
}

/* The "fenced-tx" check, on a master without Lua that has SET IFEQ: a
 * fenced lock of one resource is taken there as two transactions (direct.h),
 * run here on the doctor's key, counter and floor. */
static void check_fenced_tx(dr_master_t *m) {
  const dr_settings_t *set = m->set;
  if (!m->no_lua)
    return; /* the scripts take fenced locks (time-in-script) */
  if (!(m->caps & CAP_SET_IFEQ) || !(m->caps & CAPS_RELEASE)) {
    dr_add(m->v, "fenced-tx", DR_SKIP, "no SET IFEQ: fenced locks are refused here (see path)");
    return;
  }
  if (m->no_key) {
    dr_add(m->v, "fenced-tx", DR_SKIP, "no key of the doctor's in this primary's slots (see key)");
    return;
  }
  char floor[sizeof set->fence_key + sizeof DIRECT_FLOOR_SUFFIX];
  snprintf(floor, sizeof floor, "%s" DIRECT_FLOOR_SUFFIX, set->fence_key);
  static const char *const what = "MULTI; SET NX PX; GET; ZSCORE; TIME; EXEC";
  int rc = direct_step(m, "fenced-tx", what, dr_command(m, "MULTI"), is_ok_status);
  if (rc == 1)
    rc = direct_step(m, "fenced-tx", what,
                     dr_command(m, "SET %s %s NX PX %u", set->key, set->value, DR_KEY_TTL_MS),
                     is_queued);
  if (rc == 1)
    rc = direct_step(m, "fenced-tx", what, dr_command(m, "GET %s", set->fence_key), is_queued);
  if (rc == 1)
    rc = direct_step(m, "fenced-tx", what,
                     dr_command(m, "ZSCORE %s %s", floor, DIRECT_FLOOR_MEMBER), is_queued);
  if (rc == 1)
    rc = direct_step(m, "fenced-tx", what, dr_command(m, "TIME"), is_queued);
  if (rc == 1)
    rc = direct_step(m, "fenced-tx", what, dr_command(m, "EXEC"), is_acquire_exec);
  static const char *const commit = "MULTI; ZADD GT; SET IFEQ KEEPTTL; EXEC";
  if (rc == 1)
    rc = direct_step(m, "fenced-tx", commit, dr_command(m, "MULTI"), is_ok_status);
  if (rc == 1)
    rc = direct_step(m, "fenced-tx", commit,
                     dr_command(m, "ZADD %s GT 1 %s", floor, DIRECT_FLOOR_MEMBER), is_queued);
  if (rc == 1)
    rc = direct_step(m, "fenced-tx", commit,
                     dr_command(m, "SET %s %s IFEQ %s KEEPTTL", set->key, set->value, set->value),
                     is_queued);
  if (rc == 1)
    rc = direct_step(m, "fenced-tx", commit, dr_command(m, "EXEC"), is_commit_exec);
  if (rc == 1)
    dr_add(m->v, "fenced-tx", DR_OK, "the acquisition (%s) and the commit (%s) work", what, commit);
  if (rc == 0) { /* a transaction left open by a refused step */
    redisReply *r = dr_command(m, "DISCARD");
    if (r != NULL)
      freeReplyObject(r);
  }
  redisReply *r = dr_command(m, "DEL %s %s %s", set->key, set->fence_key, floor);
  if (r != NULL)
    freeReplyObject(r);
}

/* SUBSCRIBE and UNSUBSCRIBE on the doctor's release channel: waiters
 * subscribe to be woken by a release; without, they poll. */
static void check_subscribe(dr_master_t *m) {
  const dr_settings_t *set = m->set;
  redisReply *r = dr_command(m, "SUBSCRIBE %s", set->channel);
  if (r == NULL)
    return;
  char why[512];
  int ok = r->type == REDIS_REPLY_ARRAY;
  if (!ok)
    reply_text(r, why, sizeof why);
  freeReplyObject(r);
  if (!ok) {
    dr_add(m->v, "subscribe", DR_WARN,
           "SUBSCRIBE %s: %s: waiters are not woken by releases, they poll (every 200 to 400 ms)",
           REDLOCK_RELEASE_CHANNEL_PREFIX "...", why);
    return;
  }
  r = dr_command(m, "UNSUBSCRIBE %s", set->channel); /* back out of subscribed mode */
  if (r == NULL)
    return;
  freeReplyObject(r);
  dr_add(m->v, "subscribe", DR_OK, "SUBSCRIBE to release channels works");
}

/* ---- the durability ack -------------------------------------------------------------- */

/* WAIT R T or WAITAOF L R T, as the URI asks, after a write of the doctor's
 * key: the library counts a vote only once this ack came. */
static void check_ack(dr_master_t *m) {
  const dr_settings_t *set = m->set;
  const ack_spec_t *ack = &m->addr->ack;
  dr_voter_t *v = m->v;
  if (ack->mode == ACK_NONE) {
    dr_add(v, "ack", DR_SKIP, "none asked (no wait= or waitaof= in the URI)");
    return;
  }
  if (m->no_key) {
    dr_add(v, "ack", DR_SKIP, "no key of the doctor's in this primary's slots (see key)");
    return;
  }
  unsigned t = ack->timeout_ms ? ack->timeout_ms : DR_DEFAULT_ACK_MS;
  redisReply *r = dr_command(m, "SET %s %s PX %u", set->key, set->value, DR_KEY_TTL_MS);
  if (r == NULL)
    return;
  freeReplyObject(r);
  cli_conn_set_timeout(&m->cc, set->timeout_ms + t);
  r = ack->mode == ACK_WAIT ? dr_command(m, "WAIT %d %u", ack->replicas, t)
                            : dr_command(m, "WAITAOF %d %d %u", ack->local, ack->replicas, t);
  cli_conn_set_timeout(&m->cc, set->timeout_ms);
  if (r == NULL)
    return;
  char why[512], asked[64];
  if (ack->mode == ACK_WAIT)
    snprintf(asked, sizeof asked, "wait=%d", ack->replicas);
  else
    snprintf(asked, sizeof asked, "waitaof=%d,%d", ack->local, ack->replicas);
  if (ack->mode == ACK_WAIT && r->type == REDIS_REPLY_INTEGER) {
    if (r->integer >= ack->replicas)
      dr_add(v, "ack", DR_OK, "%s: WAIT %d %u: %lld of %d replicas acknowledged a write", asked,
             ack->replicas, t, r->integer, ack->replicas);
    else
      dr_add(v, "ack", DR_FAIL,
             "%s: WAIT %d %u: %lld of %d replicas acknowledged a write within %u ms", asked,
             ack->replicas, t, r->integer, ack->replicas, t);
  } else if (ack->mode == ACK_WAITAOF && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[0]->type == REDIS_REPLY_INTEGER &&
             r->element[1]->type == REDIS_REPLY_INTEGER) {
    long long local = r->element[0]->integer, replicas = r->element[1]->integer;
    int ok = local >= ack->local && replicas >= ack->replicas;
    dr_add(v, "ack", ok ? DR_OK : DR_FAIL,
           "%s: WAITAOF %d %d %u: local fsync %s, %lld of %d replicas acknowledged a write%s",
           asked, ack->local, ack->replicas, t, local ? "done" : "not done", replicas,
           ack->replicas, ok ? "" : " in time");
  } else if (unknown_command(r)) {
    dr_add(v, "ack", DR_FAIL, "%s: %s is not a command of this server (%s %s)%s", asked,
           ack->mode == ACK_WAIT ? "WAIT" : "WAITAOF", v->server[0] ? v->server : "?",
           v->version[0] ? v->version : "?",
           ack->mode == ACK_WAITAOF ? ": WAITAOF needs Redis >= 7.2 or Valkey" : "");
  } else if (is_error(r) && strstr(r->str, "appendonly is disabled") != NULL) {
    dr_add(v, "ack", DR_FAIL,
           "%s: AOF is off (appendonly no): WAITAOF with a local fsync needs appendonly yes (%s)",
           asked, reply_text(r, why, sizeof why));
  } else {
    dr_add(v, "ack", DR_FAIL, "%s: %s", asked, reply_text(r, why, sizeof why));
  }
  freeReplyObject(r);
  r = dr_command(m, "DEL %s", set->key);
  if (r != NULL)
    freeReplyObject(r);
}

/* ---- time ------------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The median of DR_PINGS round trips. */
static void check_rtt(dr_master_t *m) {
  uint64_t rtt[DR_PINGS];
  for (int i = 0; i < DR_PINGS; i++) {
    uint64_t t0 = mono_ns();
    redisReply *r = dr_command(m, "PING");
    if (r == NULL)
      return;
    rtt[i] = mono_ns() - t0;
    int pong = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    if (!pong) {
      dr_add(m->v, "rtt", DR_SKIP, "PING refused: not measured");
      return;
    }
  }
  qsort(rtt, DR_PINGS, sizeof rtt[0], cmp_u64);
  m->v->rtt_us = (long long)(rtt[DR_PINGS / 2] / 1000);
  dr_add(m->v, "rtt", DR_OK, "%lld us (median of %d PINGs; %llu to %llu us)", m->v->rtt_us,
         DR_PINGS, (unsigned long long)(rtt[0] / 1000),
         (unsigned long long)(rtt[DR_PINGS - 1] / 1000));
}

/* One clock sample: TIME, with our monotonic time halfway through its
 * round trip.  0, or -1 (with the check added) when TIME is refused. */
static int sample_time(dr_master_t *m, uint64_t *mid_ns, uint64_t *rtt_ns, int64_t *server_us) {
  uint64_t t0 = mono_ns();
  redisReply *r = dr_command(m, "TIME");
  uint64_t t1 = mono_ns();
  if (r == NULL)
    return -1;
  int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
           r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING;
  if (ok) {
    *server_us =
        strtoll(r->element[0]->str, NULL, 10) * 1000000 + strtoll(r->element[1]->str, NULL, 10);
    *mid_ns = t0 + (t1 - t0) / 2;
    *rtt_ns = t1 - t0;
  } else {
    char why[512];
    dr_add(m->v, "clock", DR_SKIP, "TIME: %s: not measured", reply_text(r, why, sizeof why));
  }
  freeReplyObject(r);
  return ok ? 0 : -1;
}

static void clock_start(dr_master_t *m) {
  if (m->set->clock_ms == 0)
    return;
  m->has_t0 = sample_time(m, &m->t0_ns, &m->rtt0_ns, &m->server0_us) == 0;
}

static void clock_finish(dr_master_t *m) {
  dr_voter_t *v = m->v;
  if (m->set->clock_ms == 0) {
    dr_add(v, "clock", DR_SKIP, "not measured (--clock-ms 0)");
    return;
  }
  uint64_t t1_ns, rtt1_ns;
  int64_t server1_us;
  if (!m->has_t0 || sample_time(m, &t1_ns, &rtt1_ns, &server1_us) != 0)
    return;
  double ours_us = (double)(t1_ns - m->t0_ns) / 1000.0;
  double theirs_us = (double)(server1_us - m->server0_us);
  if (theirs_us <= 0) {
    dr_add(v, "clock", DR_WARN, "the server's TIME went back or stood still over %.0f ms",
           ours_us / 1000.0);
    return;
  }
  /* Each sample is off by up to half its round trip. */
  double uncertainty = ((double)(m->rtt0_ns + rtt1_ns) / 2000.0) / theirs_us * 1e6;
  v->drift_ppm = (ours_us - theirs_us) / theirs_us * 1e6;
  v->has_drift = 1;
  double limit = 0.01 * 1e6; /* the library's default drift factor, 0.01 (redlock.h) */
  int fast = v->drift_ppm > limit || v->drift_ppm < -limit;
  dr_add(v, "clock", fast ? DR_WARN : DR_OK,
         "ours %+.0f ppm against the server's over %.0f ms (+-%.0f ppm)%s", v->drift_ppm,
         theirs_us / 1000.0, uncertainty,
         fast ? ": above the default drift factor's 1 %, a validity may be overestimated" : "");
}

/* ---- the whole ---------------------------------------------------------------------- */

static void connect_master(dr_master_t *m) {
  dr_voter_t *v = m->v;
  const node_addr_t *a = m->addr;
  if (a->kind == NODE_ADDR_UNIX)
    snprintf(v->address, sizeof v->address, "%s", a->path);
  else
    snprintf(v->address, sizeof v->address, "%s%s%s:%d", strchr(a->host, ':') ? "[" : "", a->host,
             strchr(a->host, ':') ? "]" : "", a->port);
  char why[512];
  int rc = cli_conn_open(&m->cc, a, m->set->timeout_ms, why, sizeof why);
  const char *how = a->kind == NODE_ADDR_UNIX ? "unix socket" : a->tls ? "TLS" : "TCP";
  if (rc == CLI_CONN_DOWN) {
    dr_add(v, "connect", DR_FAIL, "%s over %s: %s", v->address, how, why);
    return;
  }
  dr_add(v, "connect", DR_OK, "%s over %s", v->address, how);
  if (rc == CLI_CONN_AUTH)
    dr_add(v, "auth", DR_FAIL, "%s", why);
  else if (a->password == NULL)
    dr_add(v, "auth", DR_SKIP, "no password in the URI");
  else
    dr_add(v, "auth", DR_OK, "as %s%s%s", a->user ? "user '" : "the default user",
           a->user ? a->user : "", a->user ? "'" : "");
  if (rc == CLI_CONN_AUTH)
    return;
  if (rc == CLI_CONN_SELECT)
    dr_add(v, "select", DR_FAIL, "%s", why);
  else if (a->db != 0)
    dr_add(v, "select", DR_OK, "db %d", a->db);
  if (rc == CLI_CONN_OK)
    m->up = 1;
}

void dr_master_check(dr_master_t *m) {
  static void (*const checks[])(dr_master_t *) = {
      check_server,      check_role,      check_topology,  check_info,
      check_persistence, probe_caps,      check_scripts,   check_path,
      dr_check_acl,      check_evalsha,   check_eval_body, check_time_and_publish,
      check_direct,      check_fenced_tx, check_subscribe, check_ack,
      check_rtt,         clock_start};
  if (m->stop)
    return; /* ruled out before any connection (a discovered address not allowed) */
  connect_master(m);
  for (size_t i = 0; i < sizeof checks / sizeof checks[0] && m->up && !m->stop; i++)
    checks[i](m);
}

void dr_master_finish(dr_master_t *m) {
  if (m->up && !m->stop)
    clock_finish(m);
  if (m->up && !m->stop) { /* what a failed check may have left behind */
    redisReply *r = dr_command(m, "DEL %s %s %s" DIRECT_FLOOR_SUFFIX, m->set->key,
                               m->set->fence_key, m->set->fence_key);
    if (r != NULL)
      freeReplyObject(r);
  }
  cli_conn_close(&m->cc);
  for (int i = 0; i < 3; i++) {
    free(m->info[i]);
    m->info[i] = NULL;
  }
}
