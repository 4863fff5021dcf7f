/* cli_probe.c: one master over a plain synchronous hiredis connection
 * (see cli_probe.h).  `status` reports what it finds; `run` uses it to say
 * why a lock found no quorum.  It does not go through the library on
 * purpose: it must show a master's state even when the library would not
 * count it (down, quarantined, refusing our scripts). */
#define _GNU_SOURCE

#include "cli_probe.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_cluster.h"
#include "cli_common.h"
#include "cli_conn.h"
#include "proto/caps.h"    /* the path, as the library's handshake learns it */
#include "proto/info.h"    /* the version in INFO server */
#include "proto/keyname.h" /* the library's names, from the redlock_uri target */
#include "proto/keyslot.h" /* the key's cluster slot, as the library routes it */
#include "proto/scripts.h" /* the release script, loaded as the handshake does */

/* A printable copy of s (len bytes): other bytes and '\\' as \xNN.  NULL
 * when out of memory. */
char *escape_value(const char *s, size_t len) {
  char *out = malloc(len * 4 + 1);
  if (out == NULL)
    return NULL;
  char *p = out;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      *p++ = (char)c;
    } else {
      sprintf(p, "\\x%02x", c);
      p += 4;
    }
  }
  *p = '\0';
  return out;
}

/* The pipelined replies: GET key, PTTL key, GET fence_key, INFO server,
 * SCRIPT LOAD of the release script (what the library's handshake loads
 * anyway: it leaves the script cache as a client would) and COMMAND INFO
 * DELIFEQ DELEX, then ROLE when asked. */
enum { R_GET, R_PTTL, R_FENCE, R_INFO, R_SCRIPT, R_CMDINFO, R_ROLE, N_REPLIES };

/* The path from the handshake's replies, as node.c reads them (caps.h). */
static void read_path(redisReply **replies, master_report_t *rep) {
  const redisReply *load = replies[R_SCRIPT];
  unsigned caps = 0;
  if (load->type == REDIS_REPLY_STRING)
    caps |= CAP_LUA;
  else if (load->type != REDIS_REPLY_ERROR || !caps_no_scripts_error(load->str, load->len))
    return; /* refused to this user: the library's handshake fails there */
  if (replies[R_INFO]->type == REDIS_REPLY_STRING) {
    info_server_t is;
    (void)info_parse_server(replies[R_INFO]->str, replies[R_INFO]->len, &is);
    caps |= caps_from_version(is.is_valkey, is.version);
  }
  caps |= caps_from_command_info(replies[R_CMDINFO]);
  snprintf(rep->path, sizeof rep->path, "%s", caps_path(caps));
  rep->no_lua = !(caps & CAP_LUA);
}

/* GET's error: WRONGTYPE means the master answers but the key is not a lock;
 * NOAUTH, NOPERM and the like that it does not answer for us. */
static void read_get_error(const redisReply *get, master_report_t *rep) {
  int answers = strncmp(get->str, "WRONGTYPE", 9) == 0;
  rep->up = answers;
  char said[256];
  cli_term_escape(get->str, get->len, said, sizeof said);
  snprintf(rep->state, sizeof rep->state, "%s (GET: %s)", answers ? "up" : "error", said);
}

/* The replies' values into rep (up). */
static void read_replies(redisReply **replies, master_report_t *rep) {
  rep->up = 1;
  snprintf(rep->state, sizeof rep->state, "up");
  if (replies[R_GET]->type == REDIS_REPLY_STRING)
    rep->value = escape_value(replies[R_GET]->str, replies[R_GET]->len);
  else if (replies[R_GET]->type == REDIS_REPLY_ERROR)
    read_get_error(replies[R_GET], rep);
  if (replies[R_PTTL]->type == REDIS_REPLY_INTEGER)
    rep->pttl = replies[R_PTTL]->integer;
  if (replies[R_FENCE]->type == REDIS_REPLY_STRING)
    cli_term_escape(replies[R_FENCE]->str, replies[R_FENCE]->len, rep->fence, sizeof rep->fence);
  if (replies[R_INFO]->type == REDIS_REPLY_STRING) {
    const char *u = strstr(replies[R_INFO]->str, "uptime_in_seconds:");
    if (u != NULL) {
      long long secs = strtoll(u + strlen("uptime_in_seconds:"), NULL, 10);
      snprintf(rep->uptime, sizeof rep->uptime, "%llds", secs);
      rep->uptime_s = secs;
    }
  }
  read_path(replies, rep);
}

/* A sentinel voter's master must say it is one (its sentinels may lag
 * behind a failover), as the library requires. */
static void check_role(const redisReply *role, master_report_t *rep) {
  if (role->type == REDIS_REPLY_ARRAY && role->elements >= 1 &&
      role->element[0]->type == REDIS_REPLY_STRING && strcmp(role->element[0]->str, "master") == 0)
    return;
  char said[64] = "no answer";
  if (role->type == REDIS_REPLY_ARRAY && role->elements >= 1 &&
      role->element[0]->type == REDIS_REPLY_STRING)
    cli_term_escape(role->element[0]->str, role->element[0]->len, said, sizeof said);
  else if (role->type == REDIS_REPLY_ERROR)
    cli_term_escape(role->str, role->len, said, sizeof said);
  rep->up = 0;
  snprintf(rep->state, sizeof rep->state,
           "error (%s names it, but its ROLE is '%s', not master: it cannot vote)", rep->sentinel,
           said);
}

/* Where a cluster primary's GET says the key went: -MOVED (the map we read
 * is older than a resharding), or -ASK (its slot is being migrated and the
 * key has already left: it is at the importing primary, which answers for
 * it only after ASKING). */
typedef struct {
  int moved; /* either redirection */
  int ask;   /* it was an -ASK */
  char host[CLUSTER_HOST_LEN];
  int port;
} moved_t;

/* Sets to->moved (and to->ask) when GET's reply is a redirection. */
static void read_moved(const redisReply *get, moved_t *to) {
  int slot;
  if (get->type != REDIS_REPLY_ERROR)
    return;
  cluster_redirect_t r = cluster_parse_redirect(get->str, get->len, &slot, to->host, &to->port);
  to->moved = r == CLUSTER_REDIRECT_MOVED || r == CLUSTER_REDIRECT_ASK;
  to->ask = r == CLUSTER_REDIRECT_ASK;
}

/* Appends one command about a key; after an -ASK, ASKING before it (the
 * permission lasts one command).  Returns how many replies it adds. */
static int append_key_command(redisContext *c, int asking, const char *fmt, const char *key) {
  if (asking)
    redisAppendCommand(c, "ASKING");
  redisAppendCommand(c, fmt, key);
  return asking ? 2 : 1;
}

/* Asks one master (addr) about the keys over one connection, in one round
 * trip; ROLE too when role.  A cluster primary's redirection is put in
 * *moved (NULL: not a cluster primary) instead of rep; asking: the key's
 * slot is importing there (an -ASK was followed). */
static void probe_at(const node_addr_t *addr, const char *key, const char *fence_key,
                     uint64_t timeout_ms, int role, int asking, moved_t *moved,
                     master_report_t *rep) {
  char why[1200];
  cli_conn_t cc;
  int rc = cli_conn_open(&cc, addr, timeout_ms, why, sizeof why);
  if (rc != CLI_CONN_OK) {
    /* "error": the master answers, but refuses our credentials or db. */
    snprintf(rep->state, sizeof rep->state, "%s (%s)", rc == CLI_CONN_DOWN ? "down" : "error", why);
    cli_conn_close(&cc);
    return;
  }
  redisContext *c = cc.c;
  int sent = append_key_command(c, asking, "GET %s", key);
  sent += append_key_command(c, asking, "PTTL %s", key);
  sent += append_key_command(c, asking, "GET %s", fence_key);
  redisAppendCommand(c, "INFO server");
  const script_t *release = script_get(SCRIPT_RELEASE);
  redisAppendCommand(c, "SCRIPT LOAD %b", release->body, release->body_len);
  redisAppendCommand(c, "COMMAND INFO DELIFEQ DELEX");
  int n = role ? N_REPLIES : R_ROLE;
  sent += n - R_INFO;
  if (role)
    redisAppendCommand(c, "ROLE");
  redisReply *replies[N_REPLIES] = {NULL};
  int got = 0, read = 0;
  for (void *p = NULL; read < sent && redisGetReply(c, &p) == REDIS_OK; p = NULL) {
    /* ASKING's +OK comes before each key command's reply (the R_INFO
     * commands before INFO): not kept. */
    if (asking && read < 2 * R_INFO && read % 2 == 0)
      freeReplyObject(p);
    else
      replies[got++] = p;
    read++;
  }
  if (got < n)
    snprintf(rep->state, sizeof rep->state, "down (%s)", cli_conn_io_why(&cc));
  else if (moved != NULL)
    read_moved(replies[R_GET], moved);
  if (got == n && (moved == NULL || !moved->moved)) /* else the caller asks where it went */
    read_replies(replies, rep);
  if (got == n && role && rep->up)
    check_role(replies[R_ROLE], rep);
  for (int i = 0; i < got; i++)
    freeReplyObject(replies[i]);
  cli_conn_close(&cc);
}

/* Asks primary p of a cluster voter.  When it says the key went elsewhere
 * (-MOVED: a resharding since the map was read; -ASK: a migration under
 * way, the key already at the importing primary), the primary it names is
 * asked instead, once (after ASKING for an -ASK). */
static void probe_primary(const node_addr_t *voter, const cluster_primary_t *p, const char *key,
                          const char *fence_key, uint64_t timeout_ms, master_report_t *rep) {
  node_addr_t primary;
  cli_cluster_primary_addr(voter, p, &primary);
  cli_host_port(rep->master, sizeof rep->master, p->host, p->port);
  char why[400];
  if (cli_conn_discovered_ok(primary.host, primary.port, why, sizeof why) != 0) {
    snprintf(rep->state, sizeof rep->state, "down (%s)", why);
    return;
  }
  moved_t moved = {0};
  probe_at(&primary, key, fence_key, timeout_ms, 0, 0, &moved, rep);
  if (!moved.moved)
    return;
  if (moved.host[0] != '\0') /* "": the server does not know its name: the one asked */
    primary.host = moved.host;
  primary.port = moved.port;
  cli_host_port(rep->master, sizeof rep->master, primary.host, primary.port);
  if (cli_conn_discovered_ok(primary.host, primary.port, why, sizeof why) != 0) {
    snprintf(rep->state, sizeof rep->state, "down (%s)", why);
    return;
  }
  moved_t again = {0};
  probe_at(&primary, key, fence_key, timeout_ms, 0, moved.ask, &again, rep);
  if (again.moved)
    snprintf(rep->state, sizeof rep->state,
             "error (slot %d moved again: a resharding is under way)", rep->slot);
}

/* A cluster voter: the primary that owns the key's slot, from the slot map
 * of the first seed that answers, then asked as a standalone master is. */
static void probe_cluster(const node_addr_t *voter, const char *key, const char *fence_key,
                          uint64_t timeout_ms, master_report_t *rep) {
  rep->slot = keyslot(key, strlen(key));
  cluster_map_t map;
  cluster_map_init(&map);
  cli_cluster_answer_t ans = {0};
  char tried[1000];
  int rc = cli_cluster_read_map(voter, timeout_ms, &map, &ans, tried, sizeof tried);
  int owner = rc == ST_OK ? cluster_map_owner(&map, rep->slot) : -1;
  if (rc != ST_OK) {
    snprintf(rep->state, sizeof rep->state, "down (%s%s)",
             rc == ST_ENOMEM ? "out of memory" : "no seed gave the slot map: ",
             rc == ST_ENOMEM ? "" : tried);
  } else if (owner < 0) {
    snprintf(rep->seed, sizeof rep->seed, "%s", ans.seed);
    snprintf(rep->state, sizeof rep->state,
             "down (slot %d has no primary in the map %s gave: the cluster cannot vote for this "
             "key)",
             rep->slot, ans.seed);
  } else {
    snprintf(rep->seed, sizeof rep->seed, "%s", ans.seed);
    probe_primary(voter, &map.primaries[owner], key, fence_key, timeout_ms, rep);
  }
  free(ans.info);
  cluster_map_clear(&map);
}

void probe_master(const node_addr_t *addr, const char *key, const char *fence_key,
                  uint64_t timeout_ms, master_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  rep->pttl = -2;
  rep->uptime_s = -1;
  rep->slot = -1;
  if (addr->voter == VOTER_KIND_CLUSTER) {
    probe_cluster(addr, key, fence_key, timeout_ms, rep);
    return;
  }
  if (addr->voter != VOTER_KIND_SENTINEL) {
    probe_at(addr, key, fence_key, timeout_ms, 0, 0, NULL, rep);
    return;
  }
  char why[1200];
  cli_sentinel_master_t found;
  if (cli_conn_ask_sentinels(addr, timeout_ms, &found, why, sizeof why) != 0) {
    snprintf(rep->state, sizeof rep->state, "down (%s)", why);
    return;
  }
  snprintf(rep->master, sizeof rep->master, "%s", found.addr);
  snprintf(rep->sentinel, sizeof rep->sentinel, "%s", found.sentinel);
  probe_at(&found.master, key, fence_key, timeout_ms, 1, 0, NULL, rep);
}

int probe_keys(const char *prefix, const char *resource, char **key, char **fence_key) {
  size_t klen = (prefix != NULL ? strlen(prefix) : 0) + strlen(resource) + 1;
  size_t flen = klen + strlen(REDLOCK_FENCE_KEY_PREFIX) + KEYNAME_TAG_LEN;
  *key = malloc(klen);
  *fence_key = malloc(flen);
  if (*key == NULL || *fence_key == NULL) {
    free(*key);
    free(*fence_key);
    *key = *fence_key = NULL;
    return -1;
  }
  snprintf(*key, klen, "%s%s", prefix != NULL ? prefix : "", resource);
  keyname_build(*fence_key, REDLOCK_FENCE_KEY_PREFIX, strlen(REDLOCK_FENCE_KEY_PREFIX), *key,
                klen - 1, "", 0);
  return 0;
}
