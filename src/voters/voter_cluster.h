/* voter_cluster.h: the `cluster` voter kind: a whole Redis Cluster
 * (redis-cluster://, rediss-cluster://) as ONE voter
 * (docs/deployments.md "Cluster voters").
 *
 * The slot map (cluster_map.h) comes from a discovery link (link.c) to the
 * URI's seeds, one at a time and on to the next after a failure (any one is
 * enough): `CLUSTER SHARDS`, or `CLUSTER SLOTS` on a server that does not
 * know it.  It is asked at start, every VOTER_CLUSTER_REFRESH_MS, whenever
 * the discovery link (re)connects, and after a MOVED, a CLUSTERDOWN, a
 * -READONLY / -LOADING, or a primary's connection failing, and while a
 * request finds no primary for its slot (a failover under way); never
 * sooner than VOTER_CLUSTER_MAP_SPACING_MS after the last map read (the
 * questions asked meanwhile are answered by one read).
 *
 * Each primary is a node (node.h: its queue, acks, replays, hung detection,
 * restart and failover quarantine), keyed by its address, made and
 * connected on first use; a request routed to a primary still connecting
 * waits for it (its round's deadline bounds that).  A request goes to the
 * primary of its key's hash slot (node_req_t.slot, or the slot of the key in
 * its command); then:
 *  - MOVED: the map learns where the slot went (a refresh is asked) and the
 *    request goes there;
 *  - ASK: ASKING, then the request, pipelined on the target's connection;
 *  - TRYAGAIN: sent again after VOTER_CLUSTER_TRYAGAIN_MS, while its
 *    request timeout lasts;
 *  - CLUSTERDOWN, or no primary for the slot: the vote is lost, and its
 *    detail says why.
 * At most VOTER_CLUSTER_MAX_REDIRECTS redirections per request, and none
 * once its request timeout, run from its round's start, is over (a release
 * excepted): a chain bouncing between nodes ends by the round's deadline.
 * A redirection target that keeps failing is connected with the backoff of
 * a master's reconnects, also when it left the map and is made anew
 * (voter_cluster_node_t.failures); the rounds' warnings are one a second
 * for the voter (log_limited).
 *
 * A promoted replica is a new primary at a new address: a new node, whose
 * first handshake finds master_replid2 set and quarantines it (quarantine.h)
 * unless the acks cover its replicas; a primary that comes back at an
 * address we knew is judged against the server we knew there.  A primary
 * missing from a map (demoted, or gone) whose connection lived on is
 * reconnected when it is a primary again (in a map, or the target of a
 * redirection), so that its handshake sees the promotion: a failback.  A
 * demotion and a promotion that both fall between two maps are not seen.
 *
 * Woken waits: on servers that know CLUSTER SHARDS (Redis >= 7.0, Valkey)
 * a release that announces goes with SPUBLISH (its command's last argument
 * rewritten in the voter's copy, proto/scripts.h), which stays in the slot's
 * shard, and the notifier subscribes each channel at its slot's primary
 * (sub_shard; a refused shard subscription's -MOVED teaches the map,
 * sub_refused).  Older servers: PUBLISH, heard at any primary (sub_node).
 *
 * Four files, each calling only those below it: voter_cluster.c (the ops,
 * the map applied, the nodes' news), voter_cluster_route.c (the requests'
 * routing and redirections), voter_cluster_nodes.c (the primaries' nodes)
 * and voter_cluster_disc.c (the seeds' link and the slot map it reads,
 * reported up through a callback). */
#ifndef REDLOCK_VOTER_CLUSTER_H
#define REDLOCK_VOTER_CLUSTER_H

#include "proto/cluster_map.h"
#include "util/list.h"
#include "voters/node.h"
#include "voters/voter.h"
#include "voters/voter_cluster_disc.h" /* VOTER_CLUSTER_REFRESH_MS, _MAP_SPACING_MS, _LABEL_LEN */

#define VOTER_CLUSTER_TRYAGAIN_MS 25  /* a TRYAGAIN is sent again after this long */
#define VOTER_CLUSTER_MAX_REDIRECTS 5 /* MOVED / ASK / TRYAGAIN followed per request */
/* Primaries (addresses) one voter connects to over its life: Redis Cluster's
 * largest, about 1000 nodes (docs/api.md, "Cluster sizes"). */
#define VOTER_CLUSTER_MAX_NODES 1024

/* A request's routing state while the voter routes it (node_req_t.route):
 * kept apart so that the requests of one-connection voters, which never
 * route, carry none of it.  Recycled through the voter's free list. */
typedef struct voter_cluster_route {
  struct voter_cluster_route *next_free; /* on the free list */
  node_reply_fn fn;                      /* the sender's (req->fn is the voter's meanwhile) */
  /* The sender's cmd while req->cmd is another (its SPUBLISH twin, or own:
   * the voter's copy, freed at the end), else NULL. */
  const char *orig;
  char *own;
  uint64_t started_ns; /* when the voter took it: the request timeout runs from there
                        * (expired: when its redirection was cut) */
  uint8_t redirects;   /* MOVED / ASK / TRYAGAIN followed */
  uint8_t ask;         /* an ASKING is owed before it (parked while connecting) */
  uint8_t expired;     /* a redirection came past its deadline: waits on retrying to end */
} voter_cluster_route_t;

/* Routing states kept for reuse at most (a burst of requests in flight). */
#define VOTER_CLUSTER_FREE_ROUTES 1024

/* One primary's connection. */
typedef struct voter_cluster_node {
  node_t *node;       /* its own (calloc), or the voter's home node: const after made */
  int home;           /* const: node is voters.c's nodes[index] (voters.c frees it) */
  int made;           /* loop: node_init ran (the home node's waits for a primary at the seed) */
  int started;        /* loop: node_start ran */
  int failing;        /* loop: its failed attempt is being reported: nothing new waits for it */
  int left;           /* loop: started, and missing from a map since: its role is rechecked */
  int retired;        /* loop: it left the slot map and was shut down: never routed to again */
  int closed;         /* loop: its NODE_EV_CLOSED came (its node may be freed or made anew) */
  int startup_wait;   /* loop: the voter's VOTER_EV_STARTED waits for its first attempt */
  list_node_t parked; /* loop: requests waiting for its connection (node_req_t.link) */
  /* loop: its address's failed connection attempts in a row when it was
   * retired, and when the next attempt may start (0: at once), kept for the
   * node made anew at that address: a redirection to an address that keeps
   * failing waits for the backoff as a master's reconnect does. */
  unsigned failures;
  uint64_t retry_ns;
  char label[VOTER_CLUSTER_LABEL_LEN]; /* const once made: "host:port" */
  char last_error[96];                 /* env mutex: the last error reply it gave a vote */
  /* loop: voters.c's verdict (voter_ops_t.server_dup).  dup: a
   * lower-numbered voter uses this server too, so requests routed here are
   * no votes; shared: some other voter does (dup, or a higher-numbered one),
   * so no acquisition is written here late (voter_cluster_route.c). */
  int dup;
  int shared;
  char dup_why[VOTER_WHY_LEN];
} voter_cluster_node_t;

typedef struct voter_cluster {
  voter_t base;               /* first: the ops get it */
  const node_env_t *base_env; /* const: voters.c's, whose loop comes only before start */
  node_env_t env;             /* the nodes': base_env, reporting to this voter */
  node_addr_t addr;           /* const: the URI (seeds, credentials, TLS, acks) */
  /* The primaries' connections: nodes[0] is the home node (voters.c's),
   * bound to the primary at the first seed's address if the map names one.
   * A primary that leaves the map (serves no slot) is retired once idle:
   * its node is shut down (no reconnecting forever), its kept releases go
   * to their slots' owners.  Entries are never freed before the voter: a
   * primary that comes back at that address gets its node made anew. */
  voter_cluster_node_t *nodes[VOTER_CLUSTER_MAX_NODES];
  unsigned n_nodes;
  /* The slot map (loop); each primary's `user` field is its nodes[] index,
   * or -1 while it has none. */
  cluster_map_t map;
  int have_map;    /* a map was read (loop) */
  uint64_t map_ns; /* when the last map was read (loop) */
  /* Discovery (loop): the link to the seeds, and the questions asked on it
   * (voter_cluster_disc.c), reporting to this voter. */
  voter_cluster_disc_t disc;
  /* TRYAGAIN (loop): requests to send again when the timer fires, and
   * those whose redirection came past their deadline, finished then. */
  tb_timer_t retry_timer;
  int retry_timer_ok;
  list_node_t retrying;
  /* Routing states for reuse (loop), n_free_routes of them. */
  voter_cluster_route_t *free_routes;
  unsigned n_free_routes;
  /* The rounds' warnings about its primaries (the warn op), one limit for
   * the voter: a storm spreads over primaries, some of them made anew. */
  log_limit_t warn_limit;
  /* Discovered addresses not connected to (voter_cluster_node_for). */
  log_limit_t refused_log;
  /* The node whose reply the round is judging now (loop): quarantined asks. */
  node_t *answering;
  /* Why the voter cannot route (env mutex): no map yet, no primary for a slot. */
  char why[VOTER_WHY_LEN];
  unsigned sub_at;  /* loop: the nodes[] entry the release subscriber was last sent to */
  int started_said; /* VOTER_EV_STARTED reported */
  int up_said;      /* VOTER_EV_UP reported (a map is known) */
  int closing;      /* abandon or shutdown ran */
  unsigned open;    /* after shutdown: nodes, link and timer not yet closed */
  /* loop: primaries of the first map whose first connection attempt is not
   * over yet; VOTER_EV_STARTED waits for them (each bounded by the connect
   * timeout), so that redlock_open returns with the primaries connected. */
  unsigned startup_left;
} voter_cluster_t;

extern const voter_ops_t voter_cluster_ops;

/* Makes the cluster voter of addr (copied) at index; home: zeroed memory of
 * voters.c's (node_init'ed here, at the first seed's address, with this
 * voter's own env, a copy of base_env).  ST_OK, or ST_ENOMEM (*out may
 * then be set: its free op frees it). */
status_t voter_cluster_new(voter_cluster_t **out, const node_env_t *base_env, node_t *home,
                           unsigned index, const node_addr_t *addr);

#endif
