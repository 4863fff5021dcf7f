/* cli_doctor_acl.c: the one table of every command the library sends to a
 * master, directly or from inside its Lua scripts (ACL rules apply to the
 * commands a script calls too), and the "acl" check of `redlock doctor`:
 * `ACL DRYRUN <user> <command> <sample args>` for each, with the user that
 * `ACL WHOAMI` names.  The sample keys are the doctor's own (after
 * --key-prefix), so that key and channel patterns are checked as well. */
#define _GNU_SOURCE

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "cli_doctor.h"
#include "proto/caps.h"    /* which forms the master runs */
#include "proto/scripts.h" /* the release script's SHA1 */

/* When the library sends a command. */
typedef enum {
  WHEN_ALWAYS = 0,
  WHEN_PASSWORD, /* the URI has a password */
  WHEN_DB,       /* the URI names a db */
  WHEN_WAIT,     /* wait= */
  WHEN_WAITAOF,  /* waitaof= */
  WHEN_CLUSTER,  /* a redis-cluster:// voter */
  /* What the master runs (caps.h, learnt as the handshake does): */
  WHEN_LUA,      /* it runs scripts */
  WHEN_DELIFEQ,  /* releases by DELIFEQ */
  WHEN_DELEX,    /* releases by DELEX IFEQ (no DELIFEQ) */
  WHEN_SET_IFEQ, /* extensions by SET IFEQ (with DELIFEQ or DELEX) */
  WHEN_TX,       /* transactions: extensions (SET IFEQ), fenced locks without Lua */
} when_t;

/* What a refusal means. */
enum {
  REQUIRED = 0, /* the library fails there */
  WOKEN = 1,    /* waits poll instead of being woken */
  PROBE = 2,    /* the script-free commands are taken as missing: the scripts do it */
};

#define MAX_WORDS 8

typedef struct {
  const char *name; /* as reported */
  when_t when;
  int optional;                 /* REQUIRED, or what its refusal costs (a warning) */
  const char *words[MAX_WORDS]; /* the command and sample arguments; see expand() */
} lib_command_t;

/* Every command the library sends to a master, and where.  ctest
 * cli.doctor_commands (tests/cli/check_doctor_commands.sh) reads src/ and
 * fails when this table lacks a command src/ sends, or lists one it no
 * longer sends:
 *   src/conn/conn.c          AUTH (the handshake)
 *   src/conn/link.c          SELECT
 *   src/voters/node.c          SCRIPT LOAD, COMMAND INFO DELIFEQ DELEX, INFO server,
 *                       INFO replication (a new master after a failover),
 *                       WAIT and WAITAOF (wait= / waitaof=)
 *   src/engine/kind_mutex.c    SET ... NX PX (plain lock), EVALSHA; where the
 *                       master has them (caps.h) DELIFEQ or DELEX IFEQ
 *                       and PUBLISH (releases), SET IFEQ PX (extensions),
 *                       and without Lua MULTI / SET NX PX / GET / ZSCORE /
 *                       TIME / EXEC, MULTI / ZADD GT / SET IFEQ KEEPTTL /
 *                       EXEC (fenced locks)
 *   src/engine/prims.c         EVALSHA (semaphores, read-write locks)
 *   src/proto/scripts.c       EVAL (the EVALSHA -> EVAL rewrite after NOSCRIPT)
 *   src/voters/notify.c        SUBSCRIBE, UNSUBSCRIBE (woken waits), SSUBSCRIBE,
 *                       SUNSUBSCRIBE (a cluster's shard channels)
 *   src/voters/voter_cluster_disc.c CLUSTER SHARDS, CLUSTER SLOTS (the slot map),
 *                       PING (a seed's handshake)
 *   src/voters/voter_cluster_route.c ASKING (after an -ASK)
 *   src/lua/ (scripts)  what the scripts call: grep 'redis.call("' src/lua
 * (src/voters/voter_sentinel.c speaks to sentinels, not masters: not here.)
 * In words: {key}, {fence}, {channel} are the doctor's key, its fencing
 * counter and release channel; {value} its value; {sha} the release
 * script's SHA1; {user} the ACL user; {db} the URI's db; {r}, {l}, {t} the
 * ack's replicas, local fsyncs and timeout. */
static const lib_command_t LIB_COMMANDS[] = {
    {"AUTH", WHEN_PASSWORD, 0, {"AUTH", "{user}", "redlock-doctor"}},
    {"SELECT", WHEN_DB, 0, {"SELECT", "{db}"}},
    {"SCRIPT LOAD", WHEN_ALWAYS, 0, {"SCRIPT", "LOAD", "return 0"}},
    {"COMMAND INFO", WHEN_ALWAYS, 2, {"COMMAND", "INFO", "DELIFEQ", "DELEX"}},
    {"INFO server", WHEN_ALWAYS, 0, {"INFO", "server"}},
    {"INFO replication", WHEN_ALWAYS, 0, {"INFO", "replication"}},
    {"SET", WHEN_ALWAYS, 0, {"SET", "{key}", "{value}", "NX", "PX", "10000"}},
    {"EVALSHA", WHEN_LUA, 0, {"EVALSHA", "{sha}", "2", "{key}", "{fence}", "{value}", "10000"}},
    {"EVAL", WHEN_LUA, 0, {"EVAL", "return 0", "2", "{key}", "{fence}", "{value}", "10000"}},
    /* the script-free forms (caps.h) */
    {"DELIFEQ", WHEN_DELIFEQ, 0, {"DELIFEQ", "{key}", "{value}"}},
    {"DELEX", WHEN_DELEX, 0, {"DELEX", "{key}", "IFEQ", "{value}"}},
    {"SET IFEQ", WHEN_SET_IFEQ, 0, {"SET", "{key}", "{value}", "IFEQ", "{value}", "PX", "10000"}},
    {"MULTI", WHEN_TX, 0, {"MULTI"}},
    {"EXEC", WHEN_TX, 0, {"EXEC"}},
    {"SUBSCRIBE", WHEN_ALWAYS, 1, {"SUBSCRIBE", "{channel}"}},
    {"UNSUBSCRIBE", WHEN_ALWAYS, 1, {"UNSUBSCRIBE", "{channel}"}},
    {"SSUBSCRIBE", WHEN_CLUSTER, 1, {"SSUBSCRIBE", "{channel}"}},
    {"SUNSUBSCRIBE", WHEN_CLUSTER, 1, {"SUNSUBSCRIBE", "{channel}"}},
    {"WAIT", WHEN_WAIT, 0, {"WAIT", "{r}", "{t}"}},
    {"WAITAOF", WHEN_WAITAOF, 0, {"WAITAOF", "{l}", "{r}", "{t}"}},
    {"CLUSTER SHARDS", WHEN_CLUSTER, 0, {"CLUSTER", "SHARDS"}},
    {"CLUSTER SLOTS", WHEN_CLUSTER, 0, {"CLUSTER", "SLOTS"}},
    {"ASKING", WHEN_CLUSTER, 0, {"ASKING"}},
    {"PING", WHEN_CLUSTER, 0, {"PING"}},
    /* from inside the scripts */
    {"GET, in scripts", WHEN_ALWAYS, 0, {"GET", "{key}"}},
    {"GET fence counter, in scripts", WHEN_ALWAYS, 0, {"GET", "{fence}"}},
    {"SET, in scripts", WHEN_ALWAYS, 0, {"SET", "{key}", "{value}", "PX", "10000"}},
    {"SET fence counter, in scripts", WHEN_ALWAYS, 0, {"SET", "{fence}", "1"}},
    {"DEL, in scripts", WHEN_ALWAYS, 0, {"DEL", "{key}"}},
    {"EXISTS, in scripts", WHEN_ALWAYS, 0, {"EXISTS", "{key}"}},
    {"PEXPIRE, in scripts", WHEN_ALWAYS, 0, {"PEXPIRE", "{key}", "10000"}},
    {"PEXPIREAT, in scripts", WHEN_ALWAYS, 0, {"PEXPIREAT", "{key}", "1"}},
    {"PTTL, in scripts", WHEN_ALWAYS, 0, {"PTTL", "{key}"}},
    {"TIME, in scripts", WHEN_ALWAYS, 0, {"TIME"}},
    /* A refused PUBLISH fails the release script itself: not optional. */
    {"PUBLISH, in scripts", WHEN_ALWAYS, 0, {"PUBLISH", "{channel}", ""}},
    /* A refused SPUBLISH falls back to PUBLISH (heard by no shard subscriber). */
    {"SPUBLISH, in scripts", WHEN_CLUSTER, 1, {"SPUBLISH", "{channel}", ""}},
    {"ZADD, in scripts", WHEN_ALWAYS, 0, {"ZADD", "{key}", "1", "{value}"}},
    {"ZCARD, in scripts", WHEN_ALWAYS, 0, {"ZCARD", "{key}"}},
    {"ZRANGE, in scripts", WHEN_ALWAYS, 0, {"ZRANGE", "{key}", "0", "-1"}},
    {"ZREM, in scripts", WHEN_ALWAYS, 0, {"ZREM", "{key}", "{value}"}},
    {"ZREMRANGEBYSCORE, in scripts", WHEN_ALWAYS, 0, {"ZREMRANGEBYSCORE", "{key}", "0", "1"}},
    {"ZSCORE, in scripts", WHEN_ALWAYS, 0, {"ZSCORE", "{key}", "{value}"}},
};
#define N_LIB_COMMANDS (sizeof LIB_COMMANDS / sizeof LIB_COMMANDS[0])

static int applies(const lib_command_t *c, const node_addr_t *a, unsigned caps) {
  int direct = (caps & CAPS_RELEASE) && (caps & CAP_SET_IFEQ);
  switch (c->when) {
  case WHEN_LUA:
    return (caps & CAP_LUA) != 0;
  case WHEN_DELIFEQ:
    return (caps & CAP_DELIFEQ) != 0;
  case WHEN_DELEX:
    return (caps & CAP_DELEX) && !(caps & CAP_DELIFEQ);
  case WHEN_SET_IFEQ:
    return direct;
  case WHEN_TX:
    return direct;
  case WHEN_PASSWORD:
    return a->password != NULL;
  case WHEN_DB:
    return a->db != 0;
  case WHEN_WAIT:
    return a->ack.mode == ACK_WAIT;
  case WHEN_WAITAOF:
    return a->ack.mode == ACK_WAITAOF;
  case WHEN_CLUSTER:
    return a->voter == VOTER_KIND_CLUSTER;
  default:
    return 1;
  }
}

/* A word of the table with its placeholder filled in (into buf when it
 * needs one). */
static const char *expand(const dr_master_t *m, const char *user, const char *w, char *buf,
                          size_t size) {
  const dr_settings_t *set = m->set;
  const node_addr_t *a = m->addr;
  unsigned t = a->ack.timeout_ms ? a->ack.timeout_ms : DR_DEFAULT_ACK_MS;
  if (strcmp(w, "{key}") == 0)
    return set->key;
  if (strcmp(w, "{fence}") == 0)
    return set->fence_key;
  if (strcmp(w, "{channel}") == 0)
    return set->channel;
  if (strcmp(w, "{value}") == 0)
    return set->value;
  if (strcmp(w, "{sha}") == 0)
    return script_get(SCRIPT_RELEASE)->sha1;
  if (strcmp(w, "{user}") == 0)
    return user;
  if (strcmp(w, "{db}") == 0)
    snprintf(buf, size, "%d", a->db);
  else if (strcmp(w, "{r}") == 0)
    snprintf(buf, size, "%d", a->ack.replicas);
  else if (strcmp(w, "{l}") == 0)
    snprintf(buf, size, "%d", a->ack.local);
  else if (strcmp(w, "{t}") == 0)
    snprintf(buf, size, "%u", t);
  else
    return w;
  return buf;
}

/* ACL DRYRUN of one entry: 1 allowed, 0 refused (why says why), -1 ACL
 * DRYRUN itself did not answer (why says why), -2 connection lost. */
static int dryrun(dr_master_t *m, const char *user, const lib_command_t *c, char *why,
                  size_t size) {
  const char *argv[MAX_WORDS + 3];
  char bufs[MAX_WORDS][32];
  int argc = 0;
  argv[argc++] = "ACL";
  argv[argc++] = "DRYRUN";
  argv[argc++] = user;
  for (int i = 0; i < MAX_WORDS && c->words[i] != NULL; i++)
    argv[argc++] = expand(m, user, c->words[i], bufs[i], sizeof bufs[i]);
  redisReply *r = dr_command_argv(m, argc, argv, NULL);
  if (r == NULL)
    return -2;
  int rc;
  if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) {
    rc = 1;
  } else if (r->type == REDIS_REPLY_STRING) { /* the reason it would be refused */
    cli_term_escape(r->str, r->len, why, size);
    rc = 0;
  } else if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "Command '") != NULL &&
             strstr(r->str, "not found") != NULL) {
    snprintf(why, size, "unknown command"); /* renamed away, or too old a server */
    rc = 0;
  } else {
    if (r->type == REDIS_REPLY_ERROR)
      cli_term_escape(r->str, r->len, why, size);
    else
      snprintf(why, size, "unexpected reply");
    rc = -1;
  }
  freeReplyObject(r);
  return rc;
}

/* The user the connection runs as: ACL WHOAMI, else the URI's. */
static void whoami(dr_master_t *m, char *user, size_t size) {
  snprintf(user, size, "%s", m->addr->user ? m->addr->user : "default");
  redisReply *r = dr_command(m, "ACL WHOAMI");
  if (r == NULL)
    return;
  /* Raw: ACL DRYRUN needs the name as it is; dr_add escapes what it shows. */
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
    snprintf(user, size, "%.*s", (int)r->len, r->str);
  freeReplyObject(r);
}

void dr_check_acl(dr_master_t *m) {
  char user[256], why[512], refused[DR_DETAIL_MAX] = "", optional[DR_DETAIL_MAX] = "",
                            probe[DR_DETAIL_MAX] = "";
  whoami(m, user, sizeof user);
  if (!m->up)
    return;
  size_t checked = 0;
  for (size_t i = 0; i < N_LIB_COMMANDS; i++) {
    const lib_command_t *c = &LIB_COMMANDS[i];
    if (!applies(c, m->addr, m->caps))
      continue;
    int rc = dryrun(m, user, c, why, sizeof why);
    if (rc == -2)
      return;
    if (rc == -1) { /* not allowed, or a server before Redis 7: no verdict */
      dr_add(m->v, "acl", DR_SKIP, "user '%s': unknown (ACL DRYRUN: %s%s)", user, why,
             strncmp(why, "NOPERM", 6) == 0 ? "" : "; it needs Redis >= 7");
      return;
    }
    checked++;
    if (rc == 1)
      continue;
    char *list = c->optional == PROBE ? probe : c->optional == WOKEN ? optional : refused;
    size_t o = strlen(list);
    snprintf(list + o, DR_DETAIL_MAX - o, "%s%s: %s", o ? "; " : "", c->name, why);
  }
  if (refused[0])
    dr_add(m->v, "acl", DR_FAIL, "user '%s' may not run: %s%s%s%s%s", user, refused,
           optional[0] ? "; and, for woken waits, " : "", optional,
           probe[0] ? "; and, to find the script-free commands, " : "", probe);
  else if (optional[0] || probe[0])
    dr_add(m->v, "acl", DR_WARN, "user '%s' may not run: %s%s%s%s%s", user, optional,
           optional[0] ? ": waiters poll instead of being woken" : "",
           optional[0] && probe[0] ? "; " : "", probe,
           probe[0] ? ": the library takes DELIFEQ and DELEX as missing (see path)" : "");
  else
    dr_add(m->v, "acl", DR_OK, "user '%s' may run all %zu commands the library sends", user,
           checked);
}
