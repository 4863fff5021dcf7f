/* voter_cluster_route.h: the cluster voter's requests: each goes to the
 * primary of its key's hash slot (node_req_t.slot, or the slot of the key in
 * its command), parked while that primary's node connects, and follows the
 * redirections of its replies (MOVED: the map learns where the slot went;
 * ASK: ASKING, then the request; TRYAGAIN: sent again after
 * VOTER_CLUSTER_TRYAGAIN_MS), at most VOTER_CLUSTER_MAX_REDIRECTS of them
 * and none past its round's deadline (every hop is stamped with the
 * request's start, so its vote is due by that deadline); its final reply
 * goes to the sender's fn.  Kept releases follow their slot
 * the same way, and go to the owners of their slots when their primary
 * leaves the map.
 *
 * Under the voter (voter_cluster.c), which hands it the requests, and over
 * the primaries (voter_cluster_nodes.c) and the discovery
 * (voter_cluster_disc.c), which it asks for a map when one may be stale.
 * Everything runs on the loop thread, but for set_why (the env mutex). */
#ifndef REDLOCK_VOTER_CLUSTER_ROUTE_H
#define REDLOCK_VOTER_CLUSTER_ROUTE_H

#include "voters/voter_cluster.h"

/* Why the voter cannot route (read by redlock_last_votes). */
void voter_cluster_set_why(voter_cluster_t *s, const char *why);
/* A release announces with SPUBLISH on this cluster (else PUBLISH). */
int voter_cluster_shard_pubsub(const voter_cluster_t *s);

/* The send op: req taken over and routed.  ST_OK, or why not (req then
 * untouched). */
status_t voter_cluster_route_send(voter_cluster_t *s, node_req_t *req);
/* The cancel op: req (sent, or parked here) given back as the sender made it. */
void voter_cluster_route_cancel(voter_cluster_t *s, node_req_t *req);
/* The defer_release op: the release kept for its slot's primary. */
void voter_cluster_keep_release(voter_cluster_t *s, const char *cmd, size_t len);

/* Sends what waited for cn's connection (it is up). */
void voter_cluster_flush_parked(voter_cluster_t *s, voter_cluster_node_t *cn);
/* Fails what waited for cn's connection (its attempt failed). */
void voter_cluster_fail_parked(voter_cluster_t *s, voter_cluster_node_t *cn);
/* Whatever waits here is failed as never sent (closing). */
void voter_cluster_fail_waiting(voter_cluster_t *s);

/* A MOVED: the map learns where the slot went (a refresh is asked); the new
 * owner's entry, or NULL.  busy: the node whose reply is being handled. */
voter_cluster_node_t *voter_cluster_map_moved(voter_cluster_t *s, int slot, const char *host,
                                              int port, const node_t *busy);
/* node_env_t.replay_error of the voter's nodes (arg: the voter). */
void voter_cluster_on_replay_error(void *arg, node_t *node, const char *cmd, size_t len,
                                   const struct redisReply *reply);
/* Shuts down the primaries that left the map, once idle. */
void voter_cluster_retire_departed(voter_cluster_t *s);

#endif
