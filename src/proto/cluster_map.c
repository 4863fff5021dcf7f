/* cluster_map.c: slot maps from what a cluster answers (see cluster_map.h). */
#include "proto/cluster_map.h"
#include "util/alloc.h"
#include "util/strutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cluster_map_init(cluster_map_t *map) { memset(map, 0, sizeof *map); }

void cluster_map_clear(cluster_map_t *map) {
  rl_free(map->primaries);
  cluster_map_init(map);
}

void cluster_map_move(cluster_map_t *dst, cluster_map_t *src) {
  rl_free(dst->primaries);
  memcpy(dst, src, sizeof *dst);
  cluster_map_init(src);
}

/* ---- small readers ---------------------------------------------------------------- */

/* RESP3 types, when this hiredis has them (a RESP3 connection's map is a
 * flat key/value array too). */
#ifdef REDIS_REPLY_MAP
#define IS_RESP3_ARRAY(t) ((t) == REDIS_REPLY_MAP || (t) == REDIS_REPLY_SET)
#define IS_RESP3_STRING(t) ((t) == REDIS_REPLY_VERB)
#else
#define IS_RESP3_ARRAY(t) 0
#define IS_RESP3_STRING(t) 0
#endif

static int is_string(const redisReply *r) {
  return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
                       IS_RESP3_STRING(r->type));
}

static int is_array(const redisReply *r) {
  return r != NULL && (r->type == REDIS_REPLY_ARRAY || IS_RESP3_ARRAY(r->type));
}

static int str_is(const redisReply *r, const char *s) {
  size_t n = strlen(s);
  return is_string(r) && r->len == n && memcmp(r->str, s, n) == 0;
}

/* A host as a cluster names it: 1..CLUSTER_HOST_LEN-1 printable bytes, no
 * space (it goes into logs and into a connection's address). */
static int host_ok(const char *s, size_t len) { return str_host_ok(s, len, CLUSTER_HOST_LEN); }

/* A port given as an integer or as text: ST_OK with *port, or ST_EINVAL. */
static status_t port_of(const redisReply *r, int *port) {
  if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer >= 1 && r->integer <= 65535) {
    *port = (int)r->integer;
    return ST_OK;
  }
  return is_string(r) ? str_port(r->str, r->len, port) : ST_EINVAL;
}

/* A slot number given as an integer; -1 otherwise. */
static int slot_of(const redisReply *r) {
  if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer < 0 || r->integer >= KEYSLOT_COUNT)
    return -1;
  return (int)r->integer;
}

/* The host to connect to: the endpoint given, or default_host when it is
 * unknown ("?", empty or nil).  1 when usable (host set), 0 otherwise. */
static int pick_host(const redisReply *endpoint, const char *default_host, char *host) {
  const char *s = default_host;
  size_t len = default_host != NULL ? strlen(default_host) : 0;
  if (is_string(endpoint) && endpoint->len > 0 && !str_is(endpoint, "?")) {
    s = endpoint->str;
    len = endpoint->len;
  }
  if (s == NULL || !host_ok(s, len))
    return 0;
  memcpy(host, s, len);
  host[len] = '\0';
  return 1;
}

static void copy_id(char *id, const redisReply *r) {
  id[0] = '\0';
  if (is_string(r) && r->len == CLUSTER_ID_LEN) {
    memcpy(id, r->str, CLUSTER_ID_LEN);
    id[CLUSTER_ID_LEN] = '\0';
  }
}

/* ---- building a map --------------------------------------------------------------- */

int cluster_map_find(const cluster_map_t *map, const char *host, int port) {
  for (unsigned i = 0; i < map->n_primaries; i++)
    if (map->primaries[i].port == port && strcmp(map->primaries[i].host, host) == 0)
      return (int)i;
  return -1;
}

/* *at: the index of the primary at host:port, added when new.  ST_EINVAL
 * when the map holds as many primaries as it may, or ST_ENOMEM. */
static status_t primary_add(cluster_map_t *map, const char *host, int port, const char *id,
                            int *at) {
  *at = cluster_map_find(map, host, port);
  if (*at >= 0) {
    if (id != NULL && id[0] != '\0')
      memcpy(map->primaries[*at].id, id, CLUSTER_ID_LEN + 1);
    return ST_OK;
  }
  if (map->n_primaries >= CLUSTER_MAP_MAX_PRIMARIES)
    return ST_EINVAL;
  if (map->n_primaries == map->cap) {
    unsigned cap = map->cap == 0 ? 4 : map->cap * 2;
    if (cap > CLUSTER_MAP_MAX_PRIMARIES)
      cap = CLUSTER_MAP_MAX_PRIMARIES;
    cluster_primary_t *grown = rl_realloc(map->primaries, cap * sizeof *grown);
    if (grown == NULL)
      return ST_ENOMEM;
    map->primaries = grown;
    map->cap = cap;
  }
  cluster_primary_t *p = &map->primaries[map->n_primaries];
  memset(p, 0, sizeof *p);
  snprintf(p->host, sizeof p->host, "%s", host);
  p->port = port;
  p->user = -1;
  if (id != NULL)
    memcpy(p->id, id, strnlen(id, CLUSTER_ID_LEN));
  *at = (int)map->n_primaries++;
  return ST_OK;
}

/* Slots start..end belong to primary `at`; a slot another primary of the
 * same reply already claims makes the reply unusable. */
static status_t claim(cluster_map_t *map, int start, int end, int at, char *why, size_t why_size) {
  if (start < 0 || end < start) {
    snprintf(why, why_size, "a slot range that is not start <= end within 0..%d",
             KEYSLOT_COUNT - 1);
    return ST_EINVAL;
  }
  for (int s = start; s <= end; s++) {
    uint16_t owner = map->owner[s];
    if (owner != 0 && owner != (uint16_t)(at + 1)) {
      snprintf(why, why_size, "slot %d is claimed by two primaries (%s:%d and %s:%d)", s,
               map->primaries[owner - 1].host, map->primaries[owner - 1].port,
               map->primaries[at].host, map->primaries[at].port);
      return ST_EINVAL;
    }
    if (owner == 0)
      map->covered++;
    map->owner[s] = (uint16_t)(at + 1);
  }
  return ST_OK;
}

/* A failed parse leaves an empty map. */
static status_t failed(cluster_map_t *out, status_t st) {
  cluster_map_clear(out);
  return st == ST_ENOMEM ? ST_ENOMEM : ST_EINVAL;
}

static status_t refuse(cluster_map_t *out, char *why, size_t why_size, const char *text) {
  snprintf(why, why_size, "%s", text);
  return failed(out, ST_EINVAL);
}

/* An error reply's text, printable, as the reason. */
static status_t refuse_error(cluster_map_t *out, const redisReply *reply, char *why,
                             size_t why_size) {
  size_t n = reply->len < why_size - 1 ? reply->len : why_size - 1;
  for (size_t i = 0; i < n; i++)
    why[i] = (unsigned char)reply->str[i] < ' ' || (unsigned char)reply->str[i] >= 0x7f
                 ? '?'
                 : reply->str[i];
  why[n] = '\0';
  return failed(out, ST_EINVAL);
}

/* ---- CLUSTER SHARDS --------------------------------------------------------------- */

/* The value of field `name` of a map given as a flat key/value array, or NULL. */
static const redisReply *field(const redisReply *m, const char *name) {
  for (size_t i = 0; i + 1 < m->elements; i += 2)
    if (str_is(m->element[i], name))
      return m->element[i + 1];
  return NULL;
}

/* A shard's primary: *found 1 with its address (host, port) and id, or 0
 * when the shard names no usable one (none, or a failed one).  ST_EINVAL:
 * a malformed node (why). */
static status_t shard_primary(const redisReply *nodes, const char *default_host, int tls,
                              char *host, int *port, char *id, int *found, unsigned *n_nodes,
                              char *why, size_t why_size) {
  *found = 0;
  for (size_t i = 0; i < nodes->elements; i++) {
    const redisReply *n = nodes->element[i];
    if (++*n_nodes > CLUSTER_MAP_MAX_NODES) {
      snprintf(why, why_size, "more than %d nodes", CLUSTER_MAP_MAX_NODES);
      return ST_EINVAL;
    }
    if (!is_array(n) || n->elements % 2 != 0) {
      snprintf(why, why_size, "a node that is not a field/value map");
      return ST_EINVAL;
    }
    const redisReply *role = field(n, "role"), *health = field(n, "health");
    if (!str_is(role, "master") && !str_is(role, "primary"))
      continue;
    if (health != NULL && str_is(health, "fail"))
      continue; /* failed: its slots have no primary until one is promoted */
    if (*found) {
      snprintf(why, why_size, "a shard with two primaries");
      return ST_EINVAL;
    }
    const redisReply *endpoint = field(n, "endpoint");
    if (endpoint == NULL)
      endpoint = field(n, "ip");
    int p = 0;
    const redisReply *port_field =
        tls && field(n, "tls-port") != NULL ? field(n, "tls-port") : field(n, "port");
    if (port_of(port_field, &p) != ST_OK || !pick_host(endpoint, default_host, host)) {
      snprintf(why, why_size, "a primary without a usable address");
      return ST_EINVAL;
    }
    *port = p;
    copy_id(id, field(n, "id"));
    *found = 1;
  }
  return ST_OK;
}

/* What both answers are checked for first (the map cleared): an array of
 * at most KEYSLOT_COUNT elements, `what` ("shards", "slot ranges"). */
static status_t check_top(cluster_map_t *out, const redisReply *reply, const char *what, char *why,
                          size_t why_size) {
  cluster_map_clear(out);
  if (reply == NULL)
    return refuse(out, why, why_size, "no reply");
  if (reply->type == REDIS_REPLY_ERROR)
    return refuse_error(out, reply, why, why_size);
  if (!is_array(reply)) {
    snprintf(why, why_size, "an answer that is not an array of %s", what);
    return failed(out, ST_EINVAL);
  }
  if (reply->elements > KEYSLOT_COUNT) {
    snprintf(why, why_size, "more %s than slots", what);
    return failed(out, ST_EINVAL);
  }
  return ST_OK;
}

status_t cluster_map_parse_shards(cluster_map_t *out, const redisReply *reply,
                                  const char *default_host, int tls, char *why, size_t why_size) {
  status_t st = check_top(out, reply, "shards", why, why_size);
  if (st != ST_OK)
    return st;
  unsigned n_nodes = 0;
  for (size_t i = 0; i < reply->elements; i++) {
    const redisReply *shard = reply->element[i];
    if (!is_array(shard) || shard->elements % 2 != 0)
      return refuse(out, why, why_size, "a shard that is not a field/value map");
    const redisReply *slots = field(shard, "slots"), *nodes = field(shard, "nodes");
    if (!is_array(slots) || slots->elements % 2 != 0 || !is_array(nodes))
      return refuse(out, why, why_size, "a shard without slots [start, end, ...] and nodes");
    char host[CLUSTER_HOST_LEN], id[CLUSTER_ID_LEN + 1];
    int port = 0;
    int found = 0, at = 0;
    if (shard_primary(nodes, default_host, tls, host, &port, id, &found, &n_nodes, why, why_size) !=
        ST_OK)
      return failed(out, ST_EINVAL);
    if (slots->elements == 0 || !found)
      continue; /* no slots (a new primary), or no primary for them now */
    status_t st_add = primary_add(out, host, port, id, &at);
    if (st_add != ST_OK) {
      if (st_add == ST_EINVAL)
        snprintf(why, why_size, "more than %d primaries", CLUSTER_MAP_MAX_PRIMARIES);
      return failed(out, st_add);
    }
    for (size_t k = 0; k + 1 < slots->elements; k += 2) {
      int start = slot_of(slots->element[k]), end = slot_of(slots->element[k + 1]);
      if (start < 0 || end < 0)
        return refuse(out, why, why_size, "a slot that is not an integer in 0..16383");
      status_t st_claim = claim(out, start, end, at, why, why_size);
      if (st_claim != ST_OK)
        return failed(out, st_claim);
    }
  }
  return ST_OK;
}

/* ---- CLUSTER SLOTS ---------------------------------------------------------------- */

status_t cluster_map_parse_slots(cluster_map_t *out, const redisReply *reply,
                                 const char *default_host, char *why, size_t why_size) {
  status_t st = check_top(out, reply, "slot ranges", why, why_size);
  if (st != ST_OK)
    return st;
  for (size_t i = 0; i < reply->elements; i++) {
    const redisReply *range = reply->element[i];
    if (!is_array(range) || range->elements < 3)
      return refuse(out, why, why_size, "a slot range that is not [start, end, primary, ...]");
    if (range->elements - 2 > CLUSTER_MAP_MAX_NODES)
      return refuse(out, why, why_size, "a slot range with too many nodes");
    int start = slot_of(range->element[0]), end = slot_of(range->element[1]);
    if (start < 0 || end < 0)
      return refuse(out, why, why_size, "a slot that is not an integer in 0..16383");
    const redisReply *node = range->element[2];
    if (!is_array(node) || node->elements < 2)
      return refuse(out, why, why_size, "a primary that is not [host, port, ...]");
    char host[CLUSTER_HOST_LEN], id[CLUSTER_ID_LEN + 1];
    int port = 0;
    if (port_of(node->element[1], &port) != ST_OK ||
        !pick_host(node->element[0], default_host, host))
      return refuse(out, why, why_size, "a primary without a usable address");
    copy_id(id, node->elements >= 3 ? node->element[2] : NULL);
    int at = 0;
    status_t st_add = primary_add(out, host, port, id, &at);
    if (st_add != ST_OK) {
      if (st_add == ST_EINVAL)
        snprintf(why, why_size, "more than %d primaries", CLUSTER_MAP_MAX_PRIMARIES);
      return failed(out, st_add);
    }
    status_t st_claim = claim(out, start, end, at, why, why_size);
    if (st_claim != ST_OK)
      return failed(out, st_claim);
  }
  return ST_OK;
}

/* ---- lookups and MOVED ------------------------------------------------------------ */

int cluster_map_owner(const cluster_map_t *map, int slot) {
  if (slot < 0 || slot >= KEYSLOT_COUNT || map->owner[slot] == 0)
    return -1;
  return map->owner[slot] - 1;
}

status_t cluster_map_assign(cluster_map_t *map, int slot, const char *host, int port, int *at) {
  if (slot < 0 || slot >= KEYSLOT_COUNT || port < 1 || port > 65535 || host == NULL ||
      !host_ok(host, strlen(host)))
    return ST_EINVAL;
  status_t st = primary_add(map, host, port, NULL, at);
  if (st != ST_OK)
    return st;
  if (map->owner[slot] == 0)
    map->covered++;
  map->owner[slot] = (uint16_t)(*at + 1);
  return ST_OK;
}

/* ---- redirections ----------------------------------------------------------------- */

cluster_redirect_t cluster_parse_redirect(const char *err, size_t len, int *slot, char *host,
                                          int *port) {
  cluster_redirect_t kind;
  size_t at;
  if (err == NULL)
    return CLUSTER_REDIRECT_NONE;
  if (len > 6 && memcmp(err, "MOVED ", 6) == 0) {
    kind = CLUSTER_REDIRECT_MOVED;
    at = 6;
  } else if (len > 4 && memcmp(err, "ASK ", 4) == 0) {
    kind = CLUSTER_REDIRECT_ASK;
    at = 4;
  } else {
    return CLUSTER_REDIRECT_NONE;
  }
  /* the slot */
  long s = 0;
  size_t digits = 0;
  while (at < len && err[at] >= '0' && err[at] <= '9' && digits < 6) {
    s = s * 10 + (err[at++] - '0');
    digits++;
  }
  if (digits == 0 || s >= KEYSLOT_COUNT || at >= len || err[at] != ' ')
    return CLUSTER_REDIRECT_NONE;
  at++;
  /* host:port, the port after the last ':'; an IPv6 host may be bracketed */
  size_t end = at;
  while (end < len && err[end] != ' ' && err[end] != '\r' && err[end] != '\n')
    end++;
  size_t colon = end;
  while (colon > at && err[colon - 1] != ':')
    colon--;
  if (colon == at)
    return CLUSTER_REDIRECT_NONE; /* no ':' */
  int p = 0;
  status_t port_st = str_port(err + colon, end - colon, &p);
  size_t h = at, hl = colon - 1 - at;
  if (hl >= 2 && err[h] == '[' && err[h + hl - 1] == ']') {
    h++;
    hl -= 2;
  }
  if (port_st != ST_OK || (hl > 0 && !host_ok(err + h, hl)))
    return CLUSTER_REDIRECT_NONE;
  memcpy(host, err + h, hl);
  host[hl] = '\0';
  *slot = (int)s;
  *port = p;
  return kind;
}

/* ---- a command's key ---------------------------------------------------------------- */

/* Reads "<c><digits>\r\n" at *at: the number, or -1. */
static long resp_number(const char *cmd, size_t len, size_t *at, char c) {
  if (*at >= len || cmd[*at] != c)
    return -1;
  (*at)++;
  long v = 0;
  size_t digits = 0;
  while (*at < len && cmd[*at] >= '0' && cmd[*at] <= '9' && digits < 10) {
    v = v * 10 + (cmd[(*at)++] - '0');
    digits++;
  }
  if (digits == 0 || *at + 1 >= len || cmd[*at] != '\r' || cmd[*at + 1] != '\n')
    return -1;
  *at += 2;
  return v;
}

/* The next bulk string at *at: its bytes and length, or 0. */
static int resp_bulk(const char *cmd, size_t len, size_t *at, const char **s, size_t *n) {
  long l = resp_number(cmd, len, at, '$');
  if (l < 0 || (size_t)l > len - *at || len - *at - (size_t)l < 2)
    return 0;
  *s = cmd + *at;
  *n = (size_t)l;
  *at += (size_t)l + 2;
  return 1;
}

static int name_is(const char *s, size_t n, const char *name) {
  size_t l = strlen(name);
  if (n != l)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i] >= 'a' && s[i] <= 'z' ? (char)(s[i] - 'a' + 'A') : s[i];
    if (c != name[i])
      return 0;
  }
  return 1;
}

int cluster_cmd_slot(const char *cmd, size_t len) {
  size_t at = 0;
  long argc = resp_number(cmd, len, &at, '*');
  if (argc < 2)
    return -1;
  const char *name, *arg;
  size_t name_len, arg_len;
  if (!resp_bulk(cmd, len, &at, &name, &name_len) || !resp_bulk(cmd, len, &at, &arg, &arg_len))
    return -1;
  int scripted = name_is(name, name_len, "EVALSHA") || name_is(name, name_len, "EVAL") ||
                 name_is(name, name_len, "EVALSHA_RO") || name_is(name, name_len, "EVAL_RO") ||
                 name_is(name, name_len, "FCALL") || name_is(name, name_len, "FCALL_RO");
  if (!scripted)
    return keyslot(arg, arg_len);
  const char *nk;
  size_t nk_len;
  if (argc < 4 || !resp_bulk(cmd, len, &at, &nk, &nk_len) || nk_len == 0 || nk[0] == '0' ||
      nk[0] < '1' || nk[0] > '9' || !resp_bulk(cmd, len, &at, &arg, &arg_len))
    return -1;
  return keyslot(arg, arg_len);
}
