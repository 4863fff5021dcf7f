/* cluster_harness.h: real Redis Cluster processes for the integration
 * tests (tests/integration/test_cluster.c), on free loopback ports.
 *
 * Each node is REDLOCK_TEST_SERVER's program (redis-server or valkey-server,
 * as redis_harness.h says: rh_server_start, so a child of this process
 * stopped by its PID) with --cluster-enabled yes, its config file in a
 * temporary directory of the cluster's, a bus port of its own picked free
 * (--cluster-port: Redis >= 7.0, Valkey), node timeout 2 s, no persistence.
 * The cluster is joined over hiredis, without any cli: CLUSTER MEET from
 * the first node to every other, CLUSTER ADDSLOTSRANGE on each primary (an
 * equal share of the 16384 slots each; or interleaved: ch_options_t),
 * CLUSTER REPLICATE on each replica;
 * then ch_start waits (with a deadline) until every node says cluster_state
 * ok with all 16384 slots assigned and knows every other node. */
#ifndef CLUSTER_HARNESS_H
#define CLUSTER_HARNESS_H

#include <stddef.h>

#include "redis_harness.h"

#define CH_MAX_NODES 12

typedef struct ch_cluster ch_cluster_t;

typedef struct {
  unsigned primaries;            /* 1..CH_MAX_NODES */
  unsigned replicas_per_primary; /* primaries * (1 + this) <= CH_MAX_NODES */
  /* Slot s goes to primary s % primaries (CLUSTER ADDSLOTS), every slot a
   * range of its own, as after many reshards; 0: an equal range each. */
  int interleaved;
  /* TLS (all five set, or none): each node also listens with TLS on a port
   * of its own (ch_tls_port) and the cluster bus speaks TLS (--tls-cluster
   * yes; the bus's outgoing side shows the client certificate), so that
   * CLUSTER SHARDS gives each node's tls-port and a -MOVED to a TLS client
   * names the TLS port, as in a managed cluster.  The harness itself keeps
   * to the plain ports. */
  const char *tls_cert_file, *tls_key_file;               /* the nodes' server certificate */
  const char *tls_client_cert_file, *tls_client_key_file; /* the bus's outgoing side */
  const char *tls_ca_cert_file;
} ch_options_t;

/* Starts, joins and waits for the cluster; 0, or -1 with a message on
 * stderr (nothing left running). */
int ch_start(ch_cluster_t **out, const ch_options_t *opts);
/* Nodes: 0 .. primaries-1 are the primaries as started, then the replicas
 * (replica r of primary p is primaries + p * replicas_per_primary + r). */
unsigned ch_count(const ch_cluster_t *c);
rh_server_t *ch_node(const ch_cluster_t *c, unsigned i);
int ch_port(const ch_cluster_t *c, unsigned i);
/* "redis-cluster://127.0.0.1:P0,127.0.0.1:P1,..." over the first n nodes
 * (0: all) as seeds. */
const char *ch_uri(ch_cluster_t *c, unsigned n);
/* A TLS cluster's (ch_options_t): node i's TLS port, and
 * "rediss-cluster://127.0.0.1:T0,..." over the first n nodes' TLS ports. */
int ch_tls_port(const ch_cluster_t *c, unsigned i);
const char *ch_uri_tls(ch_cluster_t *c, unsigned n);
/* The line of a CLUSTER NODES reply (nodes, cut after it) that describes
 * the node that answered ("myself"), or NULL. */
char *ch_myself_line(char *nodes);
/* Calls fn(a, b, arg) for each slot range ("a-b" or "a": a == b) of a
 * CLUSTER NODES line, fields 9 on; a slot being migrated ("[...]") is not
 * one.  Cuts line at its spaces. */
void ch_line_ranges(char *line, void (*fn)(long a, long b, void *arg), void *arg);
/* The node (index) that owns slot now, as node `asked` says; -1 when unknown. */
int ch_owner(ch_cluster_t *c, unsigned asked, int slot);
/* Moves slot (and its keys) from node `from` to node `to`, both primaries:
 * SETSLOT IMPORTING / MIGRATING, MIGRATE of every key, SETSLOT NODE on
 * every primary, then waits until every running node names `to` as the
 * slot's owner (claimed again if an older claim won it back).  0 or -1
 * (what failed on stderr). */
int ch_migrate_slot(ch_cluster_t *c, int slot, unsigned from, unsigned to);
/* The node's cluster id (40 hex digits). */
const char *ch_id(const ch_cluster_t *c, unsigned i);
/* 1 when node i answers ROLE as a master, 0 otherwise (down: 0). */
int ch_is_master(ch_cluster_t *c, unsigned i);
/* Runs `CLUSTER FAILOVER [how]` on replica i ("" or NULL: the graceful
 * one; "FORCE", "TAKEOVER") and waits until it is a master and every
 * running node says cluster_state:ok.  0, or -1 (on stderr). */
int ch_failover(ch_cluster_t *c, unsigned i, const char *how, int timeout_ms);
/* Waits until node i is a master (e.g. a replica promoted by the cluster
 * after its primary was killed) and every running node is ok; 0 or -1. */
int ch_wait_master(ch_cluster_t *c, unsigned i, int timeout_ms);
/* The cli beside the server program (redis-cli / valkey-cli), absolute, or
 * NULL when there is none. */
const char *ch_cli(void);
/* Starts `CLI --cluster reshard` moving `slots` slots from primary `from`
 * to primary `to` (--cluster-yes) as a child process (stopped by PID, output
 * to a file in the cluster's directory); its PID, or -1. */
int ch_reshard_start(ch_cluster_t *c, unsigned from, unsigned to, unsigned slots);
/* Waits for that child: 0 when it exited 0 within timeout_ms; -1 otherwise
 * (killed at the deadline; its output on stderr). */
int ch_reshard_wait(ch_cluster_t *c, int pid, int timeout_ms);
/* Waits until every node not paused says cluster_state:ok; 1, or 0. */
int ch_wait_ok(ch_cluster_t *c, int timeout_ms);
/* Stops every node by PID, removes the directory, frees.  NULL is fine. */
void ch_stop(ch_cluster_t *c);

#endif
