/* voter_cluster_nodes.h: the cluster voter's primaries (voter_cluster_t.nodes):
 * one entry per address, made on first use, bound to the slot map's
 * primaries, made anew when a retired primary comes back, reconnected when
 * one that left a map is a primary again.
 *
 * The bottom of the voter's own modules, under the routing
 * (voter_cluster_route.c) and the voter (voter_cluster.c), which both make
 * and find primaries: it calls neither.  Everything runs on the loop
 * thread. */
#ifndef REDLOCK_VOTER_CLUSTER_NODES_H
#define REDLOCK_VOTER_CLUSTER_NODES_H

#include "voters/voter_cluster.h"

/* The entry of node, or NULL (not one of s's). */
voter_cluster_node_t *voter_cluster_node_entry(const voter_cluster_t *s, const node_t *node);
/* 1 when host may be connected to: it matches the allowed host patterns
 * (redlock_options_allow_discovered), or none is set. */
int voter_cluster_allowed(const voter_cluster_t *s, const char *host);
/* The node of host:port in *out, made when new (not started): ST_OK, or
 * *out NULL with ST_ENOMEM (out of memory), ST_EINVAL (the address is not
 * allowed: logged) or ST_ENOTSUP (past VOTER_CLUSTER_MAX_NODES: logged). */
status_t voter_cluster_node_for(voter_cluster_t *s, const char *host, int port,
                                voter_cluster_node_t **out);
/* Starts cn's node if it was not (a primary is connected on first use),
 * unless the backoff of its address runs (cn->retry_ns): it stays down
 * until a request finds it over. */
void voter_cluster_node_start(voter_cluster_t *s, voter_cluster_node_t *cn);
/* cn is a primary now; busy: the node whose reply is being handled. */
void voter_cluster_primary_again(voter_cluster_t *s, voter_cluster_node_t *cn, const node_t *busy);
/* Gives every primary of the map a node; busy as above (NULL: none). */
void voter_cluster_bind_primaries(voter_cluster_t *s, const node_t *busy);
/* cn is the node of a primary of the map. */
int voter_cluster_in_map(const voter_cluster_t *s, const voter_cluster_node_t *cn);

#endif
