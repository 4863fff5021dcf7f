/* cluster_map.h: reading what a Redis Cluster says of itself, for the
 * cluster voter (voter_cluster.c).  Pure functions over hiredis replies and
 * strings, so that every byte a cluster node sends about the cluster is
 * interpreted in one place the unit tests (and the fuzzer) reach:
 *   CLUSTER SHARDS (Redis >= 7.0)  -> the slot map
 *   CLUSTER SLOTS (older servers)  -> the slot map
 *   -MOVED 3999 127.0.0.1:6381 / -ASK ...  -> where a slot went
 *   a formatted command (RESP)     -> the hash slot of its key
 * A slot map says, for each of the 16384 hash slots, which primary owns it
 * (host, port, node id), or that none does.  Malformed replies are refused
 * with a reason; sizes are capped so that no reply can make us allocate
 * without bound. */
#ifndef REDLOCK_CLUSTER_MAP_H
#define REDLOCK_CLUSTER_MAP_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/keyslot.h" /* KEYSLOT_COUNT */
#include "util/status.h"

#define CLUSTER_HOST_LEN 256           /* a primary's host: an IP, or a name (announced) */
#define CLUSTER_ID_LEN 40              /* a node id: 40 hex digits */
#define CLUSTER_MAP_MAX_PRIMARIES 1024 /* more in one reply is refused (Redis: ~1000 nodes) */
#define CLUSTER_MAP_MAX_NODES 4096     /* nodes (primaries and replicas) in one reply */

/* One primary of a map. */
typedef struct {
  char host[CLUSTER_HOST_LEN];
  int port;
  char id[CLUSTER_ID_LEN + 1]; /* "" when the reply named none (CLUSTER SLOTS of old servers) */
  int user; /* the map's owner's, for its own use (the cluster voter: the primary's node);
             * -1 when the primary is added here */
} cluster_primary_t;

/* A slot map.  Owned by whoever made it; plain data, no locking. */
typedef struct {
  /* owner[slot]: the index of the slot's primary + 1; 0: no primary. */
  uint16_t owner[KEYSLOT_COUNT];
  cluster_primary_t *primaries; /* heap, n_primaries of them (cap: capacity) */
  unsigned n_primaries, cap;
  unsigned covered; /* slots with a primary */
} cluster_map_t;

/* An empty map (no primary, no memory). */
void cluster_map_init(cluster_map_t *map);
/* Frees the map's memory; it is empty again. */
void cluster_map_clear(cluster_map_t *map);
/* Moves src into dst (dst's old content freed); src is empty after. */
void cluster_map_move(cluster_map_t *dst, cluster_map_t *src);

/* The parsers below return ST_OK, ST_EINVAL for a reply we cannot use (why
 * says which part) or ST_ENOMEM.
 *
 * Parses a CLUSTER SHARDS reply into *out (emptied first).  default_host:
 * the host of the node asked, for a node whose endpoint is unknown ("?" or
 * empty).  tls: prefer a node's tls-port.  Only a shard's primary whose
 * health is not "fail" owns its slots.  On failure *out is empty. */
status_t cluster_map_parse_shards(cluster_map_t *out, const redisReply *reply,
                                  const char *default_host, int tls, char *why, size_t why_size);
/* The same for a CLUSTER SLOTS reply: [[start, end, [host, port, id, ...],
 * replicas...], ...]. */
status_t cluster_map_parse_slots(cluster_map_t *out, const redisReply *reply,
                                 const char *default_host, char *why, size_t why_size);

/* The index of slot's primary, or -1 (none, or slot out of range). */
int cluster_map_owner(const cluster_map_t *map, int slot);
/* The index of the primary at host:port, or -1. */
int cluster_map_find(const cluster_map_t *map, const char *host, int port);
/* Slot now belongs to host:port (a MOVED): the primary is added when new.
 * ST_OK with *at its index, ST_EINVAL (slot, host or port unusable), or
 * ST_ENOMEM. */
status_t cluster_map_assign(cluster_map_t *map, int slot, const char *host, int port, int *at);

typedef enum {
  CLUSTER_REDIRECT_NONE = 0, /* not a redirection */
  CLUSTER_REDIRECT_MOVED,    /* the slot lives there now */
  CLUSTER_REDIRECT_ASK,      /* this one command: ASKING there, then the command */
} cluster_redirect_t;

/* An error reply's text (without the '-'): "MOVED 3999 127.0.0.1:6381",
 * "ASK 3999 [::1]:6381", "MOVED 3999 :6381" (host unknown to the server:
 * the one that answered; *host is then "").  host: CLUSTER_HOST_LEN bytes.
 * Anything else, malformed ones included: CLUSTER_REDIRECT_NONE. */
cluster_redirect_t cluster_parse_redirect(const char *err, size_t len, int *slot, char *host,
                                          int *port);

/* The hash slot of the key of a formatted command (RESP array of bulk
 * strings): argv[3] of EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO
 * when numkeys > 0, else argv[1] of any command with one; -1 when it names
 * no key or is not a command we can read. */
int cluster_cmd_slot(const char *cmd, size_t len);

#endif
