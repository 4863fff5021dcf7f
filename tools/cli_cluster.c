/* cli_cluster.c: a cluster voter's slot map, read from its seeds (see
 * cli_cluster.h).  One reader for the subcommands, so that doctor's checks
 * and status's answer come from the same map, read the way the library reads
 * it. */
#define _GNU_SOURCE /* strndup */

#include "cli_cluster.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_conn.h"

/* The value of `name` in a RESP2 flat [key, value, ...] array or a RESP3
 * map; NULL when absent. */
static const redisReply *field(const redisReply *m, const char *name) {
  if (m == NULL)
    return NULL;
#ifdef REDIS_REPLY_MAP /* hiredis >= 1.0 */
  if (m->type != REDIS_REPLY_ARRAY && m->type != REDIS_REPLY_MAP)
    return NULL;
#else
  if (m->type != REDIS_REPLY_ARRAY)
    return NULL;
#endif
  for (size_t i = 0; i + 1 < m->elements; i += 2) {
    const redisReply *k = m->element[i];
    if ((k->type == REDIS_REPLY_STRING || k->type == REDIS_REPLY_STATUS) &&
        strcmp(k->str, name) == 0)
      return m->element[i + 1];
  }
  return NULL;
}

static int str_is(const redisReply *r, const char *s) {
  return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
         strcmp(r->str, s) == 0;
}

/* CLUSTER SHARDS names a primary the cluster marked failed, with the slots
 * of its shard (which the map leaves without a primary): "127.0.0.1:7002
 * (slots 10923-16383)", for doctor's coverage check to name it.  Redis 8.0
 * lists no slots for such a shard: then the address alone. */
static void failed_primaries(const redisReply *shards, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t s = 0; shards != NULL && s < shards->elements; s++) {
    const redisReply *nodes = field(shards->element[s], "nodes");
    const redisReply *slots = field(shards->element[s], "slots");
    for (size_t k = 0; nodes != NULL && k < nodes->elements; k++) {
      const redisReply *n = nodes->element[k];
      if (!str_is(field(n, "role"), "master") || !str_is(field(n, "health"), "fail"))
        continue;
      const redisReply *ip = field(n, "ip"), *port = field(n, "port");
      char host[CLUSTER_HOST_LEN] = "?";
      if (ip != NULL && ip->type == REDIS_REPLY_STRING)
        cli_term_escape(ip->str, ip->len, host, sizeof host);
      cli_append(out, size, &len, "%s%s:%lld", len ? ", " : "", host,
                 port != NULL && port->type == REDIS_REPLY_INTEGER ? port->integer : 0);
      const char *sep = " (slots ";
      for (size_t i = 0; slots != NULL && i + 1 < slots->elements; i += 2)
        if (slots->element[i]->type == REDIS_REPLY_INTEGER) {
          cli_append(out, size, &len, "%s%lld-%lld", sep, slots->element[i]->integer,
                     slots->element[i + 1]->integer);
          sep = ",";
        }
      if (sep[0] == ',')
        cli_append(out, size, &len, ")");
    }
  }
}

/* CLUSTER SLOTS, after CLUSTER SHARDS was refused (an older server: the
 * library falls back to it too).  The reply (NULL: the connection failed). */
static redisReply *ask_slots(cli_conn_t *cc, const node_addr_t *seed, cluster_map_t *map,
                             cli_cluster_answer_t *ans, int *rc, char *why, size_t size) {
  redisReply *r = redisCommand(cc->c, "CLUSTER SLOTS");
  ans->source = "CLUSTER SLOTS";
  if (r != NULL && r->type == REDIS_REPLY_ARRAY)
    *rc = cluster_map_parse_slots(map, r, seed->host, why, size);
  else if (r != NULL && r->type == REDIS_REPLY_ERROR) {
    char said[256];
    cli_term_escape(r->str, r->len < 200 ? r->len : 200, said, sizeof said);
    snprintf(why, size, "CLUSTER SLOTS: %s", said);
  } else if (r != NULL)
    snprintf(why, size, "CLUSTER SLOTS: a reply of type %d", r->type);
  return r;
}

/* CLUSTER INFO of the seed that gave the map, into ans (doctor's
 * cluster-state check). */
static void ask_info(cli_conn_t *cc, cli_cluster_answer_t *ans) {
  redisReply *r = redisCommand(cc->c, "CLUSTER INFO");
  if (r != NULL && r->type == REDIS_REPLY_STRING)
    ans->info = strndup(r->str, r->len);
  else if (r != NULL && r->type == REDIS_REPLY_ERROR)
    cli_term_escape(r->str, r->len, ans->info_why, sizeof ans->info_why);
  else
    snprintf(ans->info_why, sizeof ans->info_why, "no answer");
  if (r != NULL)
    freeReplyObject(r);
}

/* Asks one seed for the map.  ST_OK, ST_ENOMEM, or
 * ST_EINVAL with why saying what the seed answered. */
static int ask_seed(const node_addr_t *seed, uint64_t timeout_ms, cluster_map_t *map,
                    cli_cluster_answer_t *ans, char *why, size_t size) {
  cli_conn_t cc;
  if (cli_conn_open(&cc, seed, timeout_ms, why, size) != CLI_CONN_OK) {
    cli_conn_close(&cc);
    return ST_EINVAL;
  }
  int rc = ST_EINVAL;
  redisReply *r = redisCommand(cc.c, "CLUSTER SHARDS");
  if (r != NULL && r->type == REDIS_REPLY_ARRAY) {
    rc = cluster_map_parse_shards(map, r, seed->host, seed->tls, why, size);
    ans->source = "CLUSTER SHARDS";
    if (rc == ST_OK)
      failed_primaries(r, ans->failed, sizeof ans->failed);
  } else if (r != NULL) {
    if (r->type == REDIS_REPLY_ERROR)
      cli_term_escape(r->str, r->len, ans->shards_why, sizeof ans->shards_why);
    freeReplyObject(r);
    r = ask_slots(&cc, seed, map, ans, &rc, why, size);
  }
  if (r == NULL)
    snprintf(why, size, "lost: %s", cli_conn_io_why(&cc));
  else
    freeReplyObject(r);
  if (rc == ST_OK && ans->want_info)
    ask_info(&cc, ans);
  cli_conn_close(&cc);
  return rc;
}

int cli_cluster_read_map(const node_addr_t *voter, uint64_t timeout_ms, cluster_map_t *map,
                         cli_cluster_answer_t *ans, char *tried, size_t size) {
  char why[512];
  size_t len = 0;
  tried[0] = '\0';
  for (unsigned k = 0; k < voter->n_seeds; k++) {
    node_addr_t seed = *voter; /* the voter's credentials and TLS, borrowed */
    seed.kind = NODE_ADDR_TCP;
    seed.host = voter->seeds[k].host;
    seed.port = voter->seeds[k].port;
    char at[300];
    cli_host_port(at, sizeof at, seed.host, seed.port);
    why[0] = '\0';
    int rc = ask_seed(&seed, timeout_ms, map, ans, why, sizeof why);
    if (rc == ST_ENOMEM)
      return ST_ENOMEM;
    if (rc == ST_OK) {
      snprintf(ans->seed, sizeof ans->seed, "%s", at);
      return ST_OK;
    }
    cli_append(tried, size, &len, "%s%s: %s", len ? "; " : "", at, why);
  }
  return CLI_CLUSTER_NO_MAP;
}

void cli_cluster_primary_addr(const node_addr_t *voter, const cluster_primary_t *p,
                              node_addr_t *out) {
  *out = *voter; /* voter stays VOTER_KIND_CLUSTER: doctor's checks tell a primary by it */
  out->kind = NODE_ADDR_TCP;
  out->host = (char *)p->host;
  out->port = p->port;
}
