/* voter_cluster_nodes.c: the cluster voter's primaries, one node each (see
 * voter_cluster_nodes.h). */
#include "voters/voter_cluster_nodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"
#include "util/alloc.h"
#include "util/stats_core.h"
#include "util/strutil.h"

/* A cluster node's stats_primary is its entry's index (set where entries
 * are made, below and in voter_cluster_new), so a reply or a vote finds its
 * entry without a search. */
voter_cluster_node_t *voter_cluster_node_entry(const voter_cluster_t *s, const node_t *node) {
  int i = node->primary.stats_primary;
  return i >= 0 && (unsigned)i < s->n_nodes && s->nodes[i]->node == node ? s->nodes[i] : NULL;
}

static int entry_at(const voter_cluster_node_t *cn, const char *host, int port) {
  return cn->made && !cn->retired && cn->node->addr.port == port && cn->node->addr.host != NULL &&
         strcmp(cn->node->addr.host, host) == 0;
}

/* A primary's node address: the URI's credentials, TLS and acks. */
static node_addr_t primary_addr(const voter_cluster_t *s, const char *host, int port,
                                const char *label) {
  node_addr_t a = s->addr;
  a.voter = VOTER_KIND_STANDALONE;
  a.kind = NODE_ADDR_TCP;
  a.host = (char *)host;
  a.port = port;
  a.db = 0;
  a.label = (char *)label;
  a.seeds = NULL;
  a.n_seeds = 0;
  a.master_name = NULL;
  return a;
}

static int entry_index(const voter_cluster_t *s, const voter_cluster_node_t *cn) {
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i] == cn)
      return (int)i;
  return -1;
}

/* Entry i of s->nodes counts in entry i of the voter's per-primary figures. */
_Static_assert(VOTER_CLUSTER_MAX_NODES <= STATS_MAX_PRIMARIES, "a primary without figures");

/* A node made at an address that failed (cn's record of it): its next
 * failure backs off further, and until it is connected its votes say why
 * the address failed last (down_why). */
static void inherit_backoff(voter_cluster_t *s, node_t *node, const voter_cluster_node_t *cn,
                            const char *down_why) {
  if (cn->failures == 0)
    return;
  node->link.failures = cn->failures;
  node->failures = cn->failures;
  uv_mutex_lock(s->env.mutex);
  snprintf(node->down_why, sizeof node->down_why, "%s", down_why);
  uv_mutex_unlock(s->env.mutex);
}

/* A retired entry whose node is closed, made anew at the same address (the
 * primary came back into the map).  ST_OK, or ST_ENOMEM (left retired). */
static status_t node_remake(voter_cluster_t *s, voter_cluster_node_t *cn) {
  node_t *node = cn->node;
  char host[CLUSTER_HOST_LEN], down_why[NODE_DOWN_WHY_LEN];
  int port = node->addr.port;
  snprintf(host, sizeof host, "%s", node->addr.host);
  uv_mutex_lock(s->env.mutex);
  memcpy(down_why, node->down_why, sizeof down_why);
  uv_mutex_unlock(s->env.mutex);
  struct stats *stats = node->stats;
  node_free(node);
  memset(node, 0, sizeof *node);
  node_addr_t a = primary_addr(s, host, port, cn->label);
  if (node_init(node, &s->env, s->base.index, &a) != ST_OK) {
    node_free(node);
    memset(node, 0, sizeof *node);
    node->state = NODE_CLOSED;
    return ST_ENOMEM;
  }
  node->stats = stats;
  node->primary.stats_primary = entry_index(s, cn);
  node->primary.batch_writes = 1; /* node.h: commands spread over every primary */
  node->primary.sharded = 1;      /* node.h: keys migrate between shards */
  node->acks.check_role = 1;      /* node.h: a primary is demoted without a disconnect */
  inherit_backoff(s, node, cn, down_why);
  cn->retired = 0;
  cn->left = 0; /* a fresh connection: its handshake judges its role */
  cn->closed = 0;
  cn->started = 0;
  cn->failing = 0;
  return ST_OK;
}

static int retired_at(const voter_cluster_node_t *cn, const char *host, int port) {
  return cn->retired && cn->node->addr.port == port && cn->node->addr.host != NULL &&
         strcmp(cn->node->addr.host, host) == 0;
}

int voter_cluster_allowed(const voter_cluster_t *s, const char *host) {
  return str_host_allowed(host, s->env.allow, s->env.n_allow);
}

status_t voter_cluster_node_for(voter_cluster_t *s, const char *host, int port,
                                voter_cluster_node_t **out) {
  *out = NULL;
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (entry_at(s->nodes[i], host, port)) {
      *out = s->nodes[i];
      return ST_OK;
    }
  if (!voter_cluster_allowed(s, host)) {
    /* No connection, so neither the credentials nor a vote go there. */
    log_limited(s->env.log, &s->refused_log, tb_now_ns(s->env.tb), REDLOCK_LOG_WARN,
                "cluster %s: discovered address %s:%d not allowed: no host pattern of "
                "redlock_options_allow_discovered matches it",
                s->addr.label, host, port);
    return ST_EINVAL;
  }
  const voter_cluster_node_t *closing = NULL; /* retired there, its node not closed yet */
  for (unsigned i = 0; i < s->n_nodes; i++) {
    voter_cluster_node_t *cn = s->nodes[i];
    if (retired_at(cn, host, port) && cn->closed) {
      status_t st = node_remake(s, cn);
      if (st == ST_OK)
        *out = cn;
      return st;
    }
    if (retired_at(cn, host, port))
      closing = cn;
  }
  if (s->n_nodes >= VOTER_CLUSTER_MAX_NODES) {
    log_write(s->env.log, REDLOCK_LOG_ERROR,
              "cluster %s: cannot connect to primary %s:%d: already %d primaries", s->addr.label,
              host, port, VOTER_CLUSTER_MAX_NODES);
    return ST_ENOTSUP;
  }
  voter_cluster_node_t *cn = rl_calloc(1, sizeof *cn);
  node_t *node = rl_calloc(1, sizeof *node);
  if (cn == NULL || node == NULL) {
    rl_free(cn);
    rl_free(node);
    return ST_ENOMEM;
  }
  list_init(&cn->parked);
  cn->node = node;
  voter_cluster_host_port(cn->label, sizeof cn->label, host, port);
  node_addr_t a = primary_addr(s, host, port, cn->label);
  status_t st = node_init(node, &s->env, s->base.index, &a);
  if (st != ST_OK) {
    node_free(node);
    rl_free(node);
    rl_free(cn);
    return st;
  }
  node->stats = s->nodes[0]->node->stats;
  node->primary.stats_primary = (int)s->n_nodes;
  node->primary.batch_writes = 1;
  node->primary.sharded = 1; /* node.h: keys migrate between shards */
  node->acks.check_role = 1; /* node.h: a primary is demoted without a disconnect */
  if (closing != NULL) {
    cn->failures = closing->failures;
    cn->retry_ns = closing->retry_ns;
    inherit_backoff(s, node, cn, closing->node->down_why);
  }
  cn->made = 1;
  s->nodes[s->n_nodes++] = cn;
  *out = cn;
  return ST_OK;
}

void voter_cluster_node_start(voter_cluster_t *s, voter_cluster_node_t *cn) {
  if (cn->started)
    return;
  if (cn->retry_ns != 0 && tb_now_ns(s->env.tb) < cn->retry_ns)
    return; /* its address's backoff runs: not connected before it is over */
  cn->retry_ns = 0;
  cn->started = 1;
  cn->node->stats = s->nodes[0]->node->stats;
  node_start(cn->node);
}

/* cn is a primary now (busy: the node whose reply is being handled, left
 * alone).  One that left a map since we connected may have been a replica
 * meanwhile, and its connection lived on: a new handshake judges it
 * (replication id changed: failover quarantine, quarantine.h). */
void voter_cluster_primary_again(voter_cluster_t *s, voter_cluster_node_t *cn, const node_t *busy) {
  if (!cn->left || cn->node == busy)
    return;
  cn->left = 0;
  log_write(s->env.log, REDLOCK_LOG_INFO,
            "cluster %s: %s is a primary again: reconnecting to check its role", s->addr.label,
            cn->label);
  node_reconnect(cn->node, "primary again", "it left the slot map and is back");
}

/* Gives every primary of the map a node: the one at its address (the home
 * node for the first seed's), made when new. */
void voter_cluster_bind_primaries(voter_cluster_t *s, const node_t *busy) {
  for (unsigned i = 0; i < s->map.n_primaries; i++) {
    cluster_primary_t *p = &s->map.primaries[i];
    if (p->user < 0) {
      voter_cluster_node_t *cn = NULL;
      (void)voter_cluster_node_for(s, p->host, p->port, &cn); /* NULL: none for now */
      p->user = cn != NULL ? entry_index(s, cn) : -1;
      if (cn != NULL)
        voter_cluster_primary_again(s, cn, busy);
    }
  }
}

int voter_cluster_in_map(const voter_cluster_t *s, const voter_cluster_node_t *cn) {
  for (unsigned i = 0; i < s->map.n_primaries; i++) {
    int k = s->map.primaries[i].user;
    if (k >= 0 && s->nodes[k] == cn)
      return 1;
  }
  return 0;
}
