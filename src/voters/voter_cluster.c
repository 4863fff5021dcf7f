/* voter_cluster.c: a whole Redis Cluster as one voter (see voter_cluster.h).
 *
 *   start ──► discovery link ──► CLUSTER SHARDS (or SLOTS) ──► slot map
 *                 ▲    next seed on failure          │
 *                 └── every 10 s, MOVED, CLUSTERDOWN, a primary failing
 *
 *   send ──► slot ──► map ──► primary's node (made and started on first use;
 *                              waits parked while it connects)
 *                                  │ reply: MOVED ─► map.assign, send there
 *                                  │        ASK   ─► ASKING + send there
 *                                  │        TRYAGAIN ─► again in 25 ms
 *                                  └────────────────► the sender's fn */
#include "voters/voter_cluster.h"

#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/scripts.h"
#include "redlock.h"
#include "util/stats_core.h"
#include "util/why.h"

static void ask_start(voter_cluster_t *s);
static int in_map(const voter_cluster_t *s, const voter_cluster_node_t *cn);
static status_t to_node(voter_cluster_t *s, voter_cluster_node_t *cn, node_req_t *req, int ask);

static voter_cluster_t *of(voter_t *v) { return (voter_cluster_t *)v; }
static const voter_cluster_t *of_c(const voter_t *v) { return (const voter_cluster_t *)v; }

/* "host:port", "[v6]:port". */
static void host_port(char *buf, size_t size, const char *host, int port) {
  snprintf(buf, size, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
}

/* Why the voter cannot route (read by redlock_last_votes). */
static void set_why(voter_cluster_t *s, const char *why) {
  uv_mutex_lock(s->env.mutex);
  snprintf(s->why, sizeof s->why, "%s", why);
  uv_mutex_unlock(s->env.mutex);
}

static void said_started(voter_cluster_t *s) {
  if (s->started_said)
    return;
  s->started_said = 1;
  voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_STARTED});
}

static void closed_one(voter_cluster_t *s) {
  if (s->open > 0 && --s->open == 0)
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_CLOSED});
}

/* ---- the primaries' nodes ------------------------------------------------------------ */

static voter_cluster_node_t *node_entry(const voter_cluster_t *s, const node_t *node) {
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->node == node)
      return s->nodes[i];
  return NULL;
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

static int entry_index(const voter_cluster_t *s, const voter_cluster_node_t *cn);

/* Entry i of s->nodes counts in entry i of the voter's per-primary figures. */
_Static_assert(VOTER_CLUSTER_MAX_NODES <= STATS_MAX_PRIMARIES, "a primary without figures");

/* A retired entry whose node is closed, made anew at the same address (the
 * primary came back into the map).  0, or REDLOCK_ENOMEM (left retired). */
static int node_remake(voter_cluster_t *s, voter_cluster_node_t *cn) {
  node_t *node = cn->node;
  char host[CLUSTER_HOST_LEN];
  int port = node->addr.port;
  snprintf(host, sizeof host, "%s", node->addr.host);
  struct stats *stats = node->stats;
  node_free(node);
  memset(node, 0, sizeof *node);
  node_addr_t a = primary_addr(s, host, port, cn->label);
  if (node_init(node, &s->env, s->base.index, &a) != 0) {
    node_free(node);
    memset(node, 0, sizeof *node);
    node->state = NODE_CLOSED;
    return REDLOCK_ENOMEM;
  }
  node->stats = stats;
  node->stats_primary = entry_index(s, cn);
  node->batch_writes = 1; /* node.h: commands spread over every primary */
  cn->retired = 0;
  cn->left = 0; /* a fresh connection: its handshake judges its role */
  cn->closed = 0;
  cn->started = 0;
  cn->failing = 0;
  return 0;
}

/* The node of host:port, made when new (not started).  NULL when out of
 * memory or past VOTER_CLUSTER_MAX_NODES (logged). */
static voter_cluster_node_t *node_for(voter_cluster_t *s, const char *host, int port) {
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (entry_at(s->nodes[i], host, port))
      return s->nodes[i];
  for (unsigned i = 0; i < s->n_nodes; i++) {
    voter_cluster_node_t *cn = s->nodes[i];
    if (cn->retired && cn->closed && cn->node->addr.port == port && cn->node->addr.host != NULL &&
        strcmp(cn->node->addr.host, host) == 0)
      return node_remake(s, cn) == 0 ? cn : NULL;
  }
  if (s->n_nodes >= VOTER_CLUSTER_MAX_NODES) {
    log_write(s->env.log, REDLOCK_LOG_ERROR,
              "cluster %s: cannot connect to primary %s:%d: already %d primaries", s->addr.label,
              host, port, VOTER_CLUSTER_MAX_NODES);
    return NULL;
  }
  voter_cluster_node_t *cn = calloc(1, sizeof *cn);
  node_t *node = calloc(1, sizeof *node);
  if (cn == NULL || node == NULL) {
    free(cn);
    free(node);
    return NULL;
  }
  list_init(&cn->parked);
  cn->node = node;
  host_port(cn->label, sizeof cn->label, host, port);
  node_addr_t a = primary_addr(s, host, port, cn->label);
  if (node_init(node, &s->env, s->base.index, &a) != 0) {
    node_free(node);
    free(node);
    free(cn);
    return NULL;
  }
  node->stats = s->nodes[0]->node->stats;
  node->stats_primary = (int)s->n_nodes;
  node->batch_writes = 1;
  cn->made = 1;
  s->nodes[s->n_nodes++] = cn;
  return cn;
}

static int entry_index(const voter_cluster_t *s, const voter_cluster_node_t *cn) {
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i] == cn)
      return (int)i;
  return -1;
}

/* cn is a primary now (busy: the node whose reply is being handled, left
 * alone).  One that left a map since we connected may have been a replica
 * meanwhile, and its connection lived on: a new handshake judges it
 * (replication id changed: failover quarantine, quarantine.h). */
static void primary_again(voter_cluster_t *s, voter_cluster_node_t *cn, const node_t *busy) {
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
static void bind_primaries(voter_cluster_t *s, const node_t *busy) {
  for (unsigned i = 0; i < s->map.n_primaries; i++) {
    cluster_primary_t *p = &s->map.primaries[i];
    if (p->user < 0) {
      voter_cluster_node_t *cn = node_for(s, p->host, p->port);
      p->user = cn != NULL ? entry_index(s, cn) : -1;
      if (cn != NULL)
        primary_again(s, cn, busy);
    }
  }
}

/* Sends what waited for cn's connection (it is up). */
static void flush_parked(voter_cluster_t *s, voter_cluster_node_t *cn);
/* Fails what waited for cn's connection (its attempt failed). */
static void fail_parked(voter_cluster_t *s, voter_cluster_node_t *cn);

/* ---- releases announced on the shard channel ---------------------------------------- */

/* A release announces with SPUBLISH on this cluster: its servers know
 * CLUSTER SHARDS, so they are Redis >= 7.0 (or Valkey) and know SPUBLISH,
 * which stays inside the slot's shard, where a PUBLISH would cross the
 * cluster bus to every node (every primary would handle every release).
 * The subscribers follow with SSUBSCRIBE at the slot's primary (c_sub_shard;
 * notify.c).  Older servers: PUBLISH, heard at any node. */
static int shard_pubsub(const voter_cluster_t *s) { return s->have_map && !s->use_slots; }

/* ---- a request's routing state (node_req_t.route) ------------------------------------ */

static voter_cluster_route_t *rt_of(const node_req_t *req) { return req->route; }

/* Takes req over: its fn becomes the voter's (on_reply), the sender's is
 * kept.  ST_ENOMEM when no state could be had (req untouched). */
static status_t route_begin(voter_cluster_t *s, node_req_t *req, node_reply_fn own_fn) {
  voter_cluster_route_t *rt = s->free_routes;
  if (rt != NULL) {
    s->free_routes = rt->next_free;
    s->n_free_routes--;
  } else if ((rt = malloc(sizeof *rt)) == NULL) {
    return ST_ENOMEM;
  }
  rt->next_free = NULL;
  rt->fn = req->fn;
  rt->orig = NULL;
  rt->own = NULL;
  /* The sender's stamp (a round's start) if it gave one: the request
   * timeout that bounds TRYAGAIN's retries runs from there. */
  rt->started_ns = req->sent_ns != 0 ? req->sent_ns : tb_now_ns(s->env.tb);
  rt->redirects = 0;
  rt->ask = 0;
  req->route = rt;
  req->fn = own_fn;
  return ST_OK;
}

/* Gives req back as the sender made it (its fn and cmd); the state goes to
 * the free list (bounded: a burst's worth is freed). */
static void route_end(voter_cluster_t *s, node_req_t *req) {
  voter_cluster_route_t *rt = rt_of(req);
  req->route = NULL;
  req->fn = rt->fn;
  if (rt->orig != NULL)
    req->cmd = rt->orig;
  free(rt->own);
  if (s->n_free_routes < VOTER_CLUSTER_FREE_ROUTES) {
    rt->next_free = s->free_routes;
    s->free_routes = rt;
    s->n_free_routes++;
  } else {
    free(rt);
  }
}

/* A release that announces with PUBLISH sent as SPUBLISH instead: req->cmd
 * becomes the sender's SPUBLISH twin (cmd_shard: a round's), or else the
 * voter's own copy (an EVAL after NOSCRIPT); route_end puts the sender's
 * back.  Out of memory, it goes as it is. */
static void route_shard_announce(voter_cluster_t *s, node_req_t *req) {
  if (!req->keep || !shard_pubsub(s))
    return;
  voter_cluster_route_t *rt = rt_of(req);
  if (req->cmd_shard != NULL) {
    rt->orig = req->cmd;
    req->cmd = req->cmd_shard;
    return;
  }
  size_t at = script_publish_flag_at(req->cmd, req->len);
  char *copy = at != 0 ? malloc(req->len) : NULL;
  if (copy == NULL)
    return;
  memcpy(copy, req->cmd, req->len);
  copy[at] = script_announce_shard(copy[at]);
  rt->orig = req->cmd;
  rt->own = copy;
  req->cmd = copy;
}

/* ---- finishing a request ------------------------------------------------------------- */

/* Hands the final reply (or NULL) to the sender.  Nothing of req is
 * touched after: the sender may free it, or send it again. */
static void finish(voter_cluster_t *s, node_t *node, node_req_t *req, const redisReply *reply) {
  route_end(s, req);
  node_reply_fn fn = req->fn;
  req->node = node;
  node_t *outer = s->answering;
  s->answering = node;
  fn(req, reply);
  s->answering = outer;
}

/* A request that could not go on (its target down or full): finished as
 * never sent. */
static void finish_unsent(voter_cluster_t *s, node_t *node, node_req_t *req) {
  req->sent_ns = 0;
  finish(s, node, req, NULL);
}

/* ---- ASKING -------------------------------------------------------------------------- */

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";

typedef struct {
  node_req_t req;
} asking_req_t;

static void asking_done(node_req_t *req, const redisReply *reply) {
  (void)reply; /* an error shows in the command's own reply */
  free(container_of(req, asking_req_t, req));
}

/* ASKING on node, right before the next request written there. */
static status_t send_asking(node_t *node) {
  asking_req_t *a = calloc(1, sizeof *a);
  if (a == NULL)
    return ST_DOWN;
  a->req.cmd = asking_cmd;
  a->req.len = sizeof asking_cmd - 1;
  a->req.fn = asking_done;
  a->req.slot = -1;
  status_t st = node_send(node, &a->req);
  if (st != ST_OK)
    free(a);
  return st;
}

/* ---- routing ------------------------------------------------------------------------- */

/* Sends req to cn's primary: at once when it is up, parked while it
 * connects (started here on first use), refused while it is down. */
static status_t to_node(voter_cluster_t *s, voter_cluster_node_t *cn, node_req_t *req, int ask) {
  node_t *node = cn->node;
  if (!cn->started) {
    cn->started = 1;
    node->stats = s->nodes[0]->node->stats;
    node_start(node);
  }
  if (node->state == NODE_READY) {
    if (ask && send_asking(node) != ST_OK) {
      req->node = node;
      return ST_DOWN;
    }
    status_t st = node_send(node, req);
    if (st != ST_OK)
      req->node = node; /* for its vote's detail */
    return st;
  }
  if (node->state == NODE_CONNECTING && !cn->failing) {
    req->node = NULL;
    req->sent_ns = 0;
    rt_of(req)->ask = (uint8_t)ask;
    list_insert_tail(&cn->parked, &req->link);
    return ST_OK;
  }
  req->node = node;
  return ST_DOWN;
}

/* A request found no primary for its slot: a primary failed and its
 * replica may be promoted by now.  The map is asked again, at most every
 * VOTER_CLUSTER_UNCOVERED_MS (the link's timer brings the question forward),
 * so that a failover is followed in about that time, not at the slow
 * refresh. */
static void ask_uncovered(voter_cluster_t *s) {
  if (s->asking || s->closing)
    return;
  uint64_t now = tb_now_ns(s->env.tb);
  uint64_t next = s->map_ns + (uint64_t)VOTER_CLUSTER_UNCOVERED_MS * 1000000u;
  if (now >= next)
    ask_start(s);
  else if (s->disc.state == LINK_UP)
    (void)link_arm(&s->disc, (next - now + 999999u) / 1000000u);
}

/* The slot's primary, or NULL (why set). */
static voter_cluster_node_t *route_of(voter_cluster_t *s, int slot) {
  if (!s->have_map)
    return NULL; /* s->why says why */
  int p = slot >= 0 ? cluster_map_owner(&s->map, slot) : (s->map.n_primaries > 0 ? 0 : -1);
  int k = p >= 0 ? s->map.primaries[p].user : -1;
  if (k < 0) {
    if (p < 0)
      ask_uncovered(s);
    char why[64];
    snprintf(why, sizeof why,
             p < 0 ? "no primary for slot %d" : "no connection for the primary of slot %d", slot);
    set_why(s, why);
    return NULL;
  }
  return s->nodes[k];
}

static status_t route(voter_cluster_t *s, node_req_t *req) {
  if (s->closing)
    return ST_DOWN;
  if (req->slot < 0)
    req->slot = cluster_cmd_slot(req->cmd, req->len);
  voter_cluster_node_t *cn = route_of(s, req->slot);
  if (cn == NULL) {
    req->node = NULL;
    return ST_DOWN;
  }
  return to_node(s, cn, req, 0);
}

static void flush_parked(voter_cluster_t *s, voter_cluster_node_t *cn) {
  list_node_t batch;
  list_move_all(&cn->parked, &batch);
  while (!list_empty(&batch)) {
    node_req_t *req = list_entry(batch.next, node_req_t, link);
    list_remove(&req->link);
    if (to_node(s, cn, req, rt_of(req)->ask) != ST_OK)
      finish_unsent(s, cn->node, req);
  }
}

static void fail_parked(voter_cluster_t *s, voter_cluster_node_t *cn) {
  list_node_t batch;
  list_move_all(&cn->parked, &batch);
  while (!list_empty(&batch)) {
    node_req_t *req = list_entry(batch.next, node_req_t, link);
    list_remove(&req->link);
    finish_unsent(s, cn->node, req);
  }
}

/* ---- replies: redirections ----------------------------------------------------------- */

static int error_is(const redisReply *r, const char *prefix) {
  size_t n = strlen(prefix);
  return r->len >= n && memcmp(r->str, prefix, n) == 0;
}

static void retry_fire(tb_timer_t *timer);

/* A MOVED: the map learns where the slot went (a refresh is asked: more
 * may have moved); the new owner's entry, or NULL.  busy: the node whose
 * reply is being handled (bind_primaries). */
static voter_cluster_node_t *map_moved(voter_cluster_t *s, int slot, const char *host, int port,
                                       const node_t *busy) {
  voter_cluster_node_t *cn = NULL;
  int at = cluster_map_assign(&s->map, slot, host, port);
  if (at >= 0) {
    bind_primaries(s, busy);
    int k = s->map.primaries[at].user;
    cn = k >= 0 ? s->nodes[k] : NULL;
  }
  log_write(s->env.log, REDLOCK_LOG_DEBUG, "cluster %s: slot %d moved to %s:%d", s->addr.label,
            slot, host, port);
  ask_start(s);
  return cn;
}

/* A redirection: the request goes on to host:port (MOVED: the slot's new
 * primary; ASK: this once, after ASKING).  0 when it went on (or finished). */
static void follow(voter_cluster_t *s, node_t *from, node_req_t *req, cluster_redirect_t kind,
                   int slot, const char *host, int port) {
  voter_cluster_node_t *cn = NULL;
  if (kind == CLUSTER_REDIRECT_MOVED) {
    cn = map_moved(s, slot, host, port, from);
  } else {
    cn = node_for(s, host, port);
    if (cn != NULL)
      primary_again(s, cn, from);
  }
  if (cn == NULL || to_node(s, cn, req, kind == CLUSTER_REDIRECT_ASK) != ST_OK)
    finish_unsent(s, cn != NULL ? cn->node : from, req);
}

/* node_req_t.fn of every request this voter routes. */
static void on_reply(node_req_t *req, const redisReply *reply) {
  node_t *node = req->node;
  voter_cluster_t *s = node->env->arg;
  voter_cluster_node_t *cn = node_entry(s, node);
  if (reply != NULL && reply->type == REDIS_REPLY_ERROR && reply->str != NULL && !s->closing) {
    char host[CLUSTER_HOST_LEN];
    int slot = -1, port = 0;
    cluster_redirect_t kind = cluster_parse_redirect(reply->str, reply->len, &slot, host, &port);
    voter_cluster_route_t *rt = rt_of(req);
    int more = rt->redirects < VOTER_CLUSTER_MAX_REDIRECTS;
    if (kind != CLUSTER_REDIRECT_NONE && more) {
      rt->redirects++;
      if (host[0] == '\0') /* the server does not know its endpoint: the one that answered */
        snprintf(host, sizeof host, "%s", node->addr.host);
      req->sent_ns = 0; /* written again later: node_send reads the clock */
      follow(s, node, req, kind, slot, host, port);
      return;
    }
    uint64_t now = tb_now_ns(s->env.tb);
    uint64_t left_until = rt->started_ns + (uint64_t)s->env.request_timeout_ms * 1000000u;
    if (error_is(reply, "TRYAGAIN") && more && s->retry_timer_ok &&
        now + (uint64_t)VOTER_CLUSTER_TRYAGAIN_MS * 1000000u < left_until) {
      rt->redirects++;
      req->node = NULL;
      req->sent_ns = 0;
      list_insert_tail(&s->retrying, &req->link);
      if (!tb_timer_active(&s->retry_timer))
        (void)tb_timer_start(&s->retry_timer, retry_fire, VOTER_CLUSTER_TRYAGAIN_MS);
      return;
    }
    if (error_is(reply, "CLUSTERDOWN") || kind != CLUSTER_REDIRECT_NONE)
      ask_start(s);
    if (cn != NULL) {
      uv_mutex_lock(s->env.mutex);
      size_t n = reply->len < sizeof cn->last_error - 1 ? reply->len : sizeof cn->last_error - 1;
      memcpy(cn->last_error, reply->str, n);
      cn->last_error[n] = '\0';
      uv_mutex_unlock(s->env.mutex);
    }
  }
  finish(s, node, req, reply);
}

/* TRYAGAIN's wait is over: every request waiting goes again. */
static void retry_fire(tb_timer_t *timer) {
  voter_cluster_t *s = timer->data;
  list_node_t batch;
  list_move_all(&s->retrying, &batch);
  while (!list_empty(&batch)) {
    node_req_t *req = list_entry(batch.next, node_req_t, link);
    list_remove(&req->link);
    if (route(s, req) != ST_OK)
      finish_unsent(s, req->node, req);
  }
}

/* ---- kept releases that follow their slot ------------------------------------------------ */

static void c_defer_release(voter_t *v, const char *cmd, size_t len);

/* A kept release sent on through the routing (redirections followed). */
typedef struct {
  node_req_t req;
  voter_cluster_t *s;
  size_t len;
  char cmd[];
} cluster_replay_t;

/* Its outcome: without a reply it is kept again, for its slot's owner. */
static void replay_routed(node_req_t *req, const redisReply *reply) {
  cluster_replay_t *r = container_of(req, cluster_replay_t, req);
  if (reply == NULL)
    c_defer_release(&r->s->base, r->cmd, r->len);
  free(r);
}

/* Sends a release on to its slot's owner now (through MOVED / ASK), or
 * keeps it for that owner when it cannot go now. */
static void release_onward(voter_cluster_t *s, const char *cmd, size_t len) {
  cluster_replay_t *r = s->closing ? NULL : malloc(sizeof *r + len);
  if (r == NULL) {
    c_defer_release(&s->base, cmd, len);
    return;
  }
  memset(&r->req, 0, sizeof r->req);
  r->s = s;
  r->len = len;
  memcpy(r->cmd, cmd, len);
  r->req.cmd = r->cmd;
  r->req.len = len;
  r->req.fn = replay_routed;
  r->req.keep = 1;
  r->req.slot = -1;
  if (voter_cluster_ops.send(&s->base, &r->req) != ST_OK) {
    c_defer_release(&s->base, cmd, len);
    free(r);
  }
}

/* node_env_t.replay_error: a kept release replayed to a primary that
 * no longer serves its slot follows the slot (MOVED: the map learns it). */
static void on_replay_error(void *arg, node_t *node, const char *cmd, size_t len,
                            const redisReply *reply) {
  voter_cluster_t *s = arg;
  char host[CLUSTER_HOST_LEN];
  int slot = -1, port = 0;
  if (s->closing || reply->str == NULL)
    return;
  cluster_redirect_t kind = cluster_parse_redirect(reply->str, reply->len, &slot, host, &port);
  if (kind == CLUSTER_REDIRECT_NONE)
    return; /* another error: as on any voter, that release is done with */
  if (host[0] == '\0')
    snprintf(host, sizeof host, "%s", node->addr.host);
  log_write(s->env.log, REDLOCK_LOG_INFO,
            "cluster %s: a kept release for slot %d follows it from %s to %s:%d", s->addr.label,
            slot, node->addr.label, host, port);
  if (kind == CLUSTER_REDIRECT_MOVED)
    (void)map_moved(s, slot, host, port, node);
  release_onward(s, cmd, len);
}

static void kept_onward(void *arg, const char *cmd, size_t len) { release_onward(arg, cmd, len); }

static int in_map(const voter_cluster_t *s, const voter_cluster_node_t *cn);

/* Primaries that left the map (they serve no slot) are shut down once idle,
 * so that a removed node is not reconnected forever; what was kept for them
 * goes to the owners of its slots.  One still busy is judged again at the
 * next map. */
static void retire_departed(voter_cluster_t *s) {
  for (unsigned i = 0; i < s->n_nodes; i++) {
    voter_cluster_node_t *cn = s->nodes[i];
    node_t *node = cn->node;
    if (!cn->made || cn->retired || in_map(s, cn) || !list_empty(&cn->parked))
      continue;
    if (node->state == NODE_READY &&
        (node->inflight > 0 || node->backlog_len > 0 || node->replays_out > 0))
      continue;
    log_write(s->env.log, cn->started ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
              "cluster %s: %s serves no slot any more: its connection is closed", s->addr.label,
              cn->label);
    cn->retired = 1;
    if (s->sub_at == i)
      s->sub_at = 0;
    node_take_kept(node, kept_onward, s);
    node_shutdown(node);
  }
}

/* ---- the slot map ------------------------------------------------------------------- */

static void map_apply(voter_cluster_t *s, cluster_map_t *fresh) {
  unsigned old_primaries = s->map.n_primaries, old_covered = s->map.covered;
  cluster_map_move(&s->map, fresh);
  bind_primaries(s, NULL);
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->started && !s->nodes[i]->retired && !in_map(s, s->nodes[i]))
      s->nodes[i]->left = 1;
  retire_departed(s);
  int first = !s->have_map;
  s->have_map = 1;
  s->map_ns = tb_now_ns(s->env.tb);
  int level = first || old_primaries != s->map.n_primaries || old_covered != s->map.covered
                  ? REDLOCK_LOG_INFO
                  : REDLOCK_LOG_DEBUG;
  log_write(s->env.log, level, "cluster %s: slot map from %s: %u primaries, %u of %d slots covered",
            s->addr.label, s->disc_label, s->map.n_primaries, s->map.covered, KEYSLOT_COUNT);
  if (s->map.covered < KEYSLOT_COUNT && level == REDLOCK_LOG_INFO)
    log_write(s->env.log, REDLOCK_LOG_WARN,
              "cluster %s: %d slots have no primary: locks of their keys cannot get this "
              "voter's vote",
              s->addr.label, KEYSLOT_COUNT - (int)s->map.covered);
  if (!s->up_said) {
    s->up_said = 1;
    uv_mutex_lock(s->env.mutex);
    s->why[0] = '\0';
    uv_mutex_unlock(s->env.mutex);
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_UP, .ready_ns = tb_now_ns(s->env.tb)});
  }
  said_started(s);
}

/* Every seed failed in a row. */
static void ask_round_failed(voter_cluster_t *s) {
  char why[VOTER_WHY_LEN];
  snprintf(why, sizeof why, "no seed answered: %.*s",
           (int)(sizeof why - sizeof "no seed answered: "), s->ask_errs);
  log_write(s->env.log, s->have_map ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_WARN, "cluster %s: %s%s",
            s->addr.label, why,
            s->have_map ? " (the slot map read before still routes)" : " (it cannot vote)");
  s->ask_tries = 0;
  s->ask_errs[0] = '\0';
  if (!s->have_map) {
    uv_mutex_lock(s->env.mutex);
    memcpy(s->why, why, sizeof why);
    uv_mutex_unlock(s->env.mutex);
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_DOWN, .what = why});
    said_started(s);
  }
}

static void ask_failed_here(voter_cluster_t *s, const char *what, const char *detail) {
  size_t used = strlen(s->ask_errs);
  snprintf(s->ask_errs + used, sizeof s->ask_errs - used, "%s%s: %s%s%s", used > 0 ? "; " : "",
           s->disc_label, what, detail != NULL ? ": " : "", detail != NULL ? detail : "");
  if (++s->ask_tries >= s->addr.n_seeds)
    ask_round_failed(s);
}

static void ask_send(voter_cluster_t *s);

static void map_cb(redisAsyncContext *ac, void *r, void *privdata) {
  voter_cluster_t *s = privdata;
  const redisReply *reply = r;
  if (reply == NULL || ac != s->disc.ac || !s->ask_sent || s->closing)
    return;
  s->ask_sent = 0;
  if (!s->use_slots && reply->type == REDIS_REPLY_ERROR && reply->str != NULL &&
      (strstr(reply->str, "nknown subcommand") != NULL ||
       strstr(reply->str, "nknown command") != NULL)) {
    /* Older than Redis 7.0: the older command. */
    s->use_slots = 1;
    ask_send(s);
    return;
  }
  cluster_map_t fresh;
  cluster_map_init(&fresh);
  cluster_map_status_t rc =
      s->use_slots ? cluster_map_parse_slots(&fresh, reply, s->disc_addr.host, s->fail_text,
                                             sizeof s->fail_text)
                   : cluster_map_parse_shards(&fresh, reply, s->disc_addr.host, s->addr.tls,
                                              s->fail_text, sizeof s->fail_text);
  if (rc == CLUSTER_MAP_OK && fresh.n_primaries == 0) {
    snprintf(s->fail_text, sizeof s->fail_text, "a slot map without a primary");
    rc = CLUSTER_MAP_BAD;
  }
  if (rc == CLUSTER_MAP_NOMEM)
    snprintf(s->fail_text, sizeof s->fail_text, "out of memory reading the slot map");
  if (rc != CLUSTER_MAP_OK) {
    cluster_map_clear(&fresh);
    link_fail(&s->disc, REDLOCK_LOG_WARN, "unusable slot map", s->fail_text);
    return;
  }
  s->asking = 0;
  s->ask_tries = 0;
  s->ask_errs[0] = '\0';
  map_apply(s, &fresh);
  if (s->ask_again && !s->closing) {
    s->ask_again = 0;
    ask_start(s);
    return;
  }
  (void)link_arm(&s->disc, VOTER_CLUSTER_REFRESH_MS);
}

static void ask_send(voter_cluster_t *s) {
  if (s->ask_sent || s->disc.state != LINK_UP)
    return;
  const char *cmd = s->use_slots ? "CLUSTER SLOTS" : "CLUSTER SHARDS";
  if (redisAsyncCommand(s->disc.ac, map_cb, s, cmd) != REDIS_OK) {
    link_fail(&s->disc, REDLOCK_LOG_WARN, "cannot ask", "hiredis refused the command");
    return;
  }
  s->ask_sent = 1;
  (void)link_arm(&s->disc, s->env.request_timeout_ms); /* the answer's deadline */
}

static void ask_start(voter_cluster_t *s) {
  if (s->closing || !s->disc.attached)
    return;
  if (s->asking) {
    s->ask_again |= s->ask_sent; /* the answer on its way may predate the news */
    return;
  }
  s->asking = 1;
  s->ask_again = 0;
  if (s->disc.state == LINK_UP)
    ask_send(s);
  else if (link_idle(&s->disc))
    link_connect(&s->disc);
  /* else an attempt, or its backoff, is under way: UP asks */
}

/* Points the discovery link at seed k (its strings are the URI's). */
static void at_seed(voter_cluster_t *s, unsigned k) {
  const uri_seed_t *seed = &s->addr.seeds[k];
  s->disc_addr.host = seed->host;
  s->disc_addr.port = seed->port;
  host_port(s->disc_label, sizeof s->disc_label, seed->host, seed->port);
}

static status_t disc_handshake(link_t *link, void *arg) {
  (void)arg;
  return link_step(link, "PING", NULL, "PING");
}

static int disc_want_retry(void *arg) { return !((voter_cluster_t *)arg)->closing; }

static void disc_on_link(void *arg, link_t *link, link_event_t ev, int level, const char *what,
                         const char *detail) {
  voter_cluster_t *s = arg;
  (void)level;
  switch (ev) {
  case LINK_EV_UP:
    s->asking = 0; /* a fresh connection asks afresh */
    ask_start(s);
    break;
  case LINK_EV_DOWN:
    log_write(s->env.log, link->failures == 0 ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
              "cluster %s: seed %s: %s%s%s", s->addr.label, s->disc_label, what,
              detail != NULL ? ": " : "", detail != NULL ? detail : "");
    s->ask_sent = 0;
    ask_failed_here(s, what, detail);
    s->disc_at = (s->disc_at + 1) % s->addr.n_seeds;
    at_seed(s, s->disc_at);
    link_forget_lookup(link);
    break;
  case LINK_EV_TIMER:
    if (s->ask_sent) {
      char buf[64];
      snprintf(buf, sizeof buf, "no answer within %u ms", s->env.request_timeout_ms);
      link_fail(link, REDLOCK_LOG_WARN, "not answering", buf);
    } else {
      ask_start(s); /* the slow refresh */
    }
    break;
  case LINK_EV_TLS_FAILURE:
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_TLS_FAILURE});
    break;
  case LINK_EV_CLOSED:
    closed_one(s);
    break;
  case LINK_EV_CONNECTING:
  case LINK_EV_RETRY:
    break;
  }
}

/* ---- the nodes' news ------------------------------------------------------------------- */

static uint64_t replays_due(const voter_cluster_t *s) {
  uint64_t due_ns = 0;
  for (unsigned i = 0; i < s->n_nodes; i++) {
    uint64_t due = s->nodes[i]->made ? node_replays_due_ns(s->nodes[i]->node) : 0;
    if (due != 0 && (due_ns == 0 || due < due_ns))
      due_ns = due;
  }
  return due_ns;
}

static int in_map(const voter_cluster_t *s, const voter_cluster_node_t *cn) {
  for (unsigned i = 0; i < s->map.n_primaries; i++) {
    int k = s->map.primaries[i].user;
    if (k >= 0 && s->nodes[k] == cn)
      return 1;
  }
  return 0;
}

static void on_node(void *arg, node_t *node, node_event_t ev, const char *what,
                    const char *detail) {
  voter_cluster_t *s = arg;
  voter_cluster_node_t *cn = node_entry(s, node);
  (void)what;
  (void)detail;
  switch (ev) {
  case NODE_EV_UP:
    if (cn != NULL)
      flush_parked(s, cn);
    break;
  case NODE_EV_DOWN:
    if (cn != NULL) {
      cn->failing = 1;
      fail_parked(s, cn);
      cn->failing = 0;
      if (in_map(s, cn))
        ask_start(s); /* failed over? */
    }
    break;
  case NODE_EV_NOT_MASTER:
    log_write(s->env.log, REDLOCK_LOG_WARN, "cluster %s: primary %s: %s (%s): reading the slot map",
              s->addr.label, node->addr.label, what, detail != NULL ? detail : "");
    ask_start(s);
    break;
  case NODE_EV_QUARANTINE_END:
    voter_report(&s->base,
                 &(voter_news_t){.ev = VOTER_EV_QUARANTINE_END, .ready_ns = node->ready_ns});
    break;
  case NODE_EV_TLS_FAILURE:
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_TLS_FAILURE});
    break;
  case NODE_EV_REPLAYS_DUE:
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_REPLAYS_DUE, .due_ns = replays_due(s)});
    break;
  case NODE_EV_SETTLED:
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_SETTLED});
    break;
  case NODE_EV_CLOSED:
    if (cn != NULL)
      cn->closed = 1;
    if (cn == NULL || !cn->retired || s->closing)
      closed_one(s); /* a retired node's own close is no part of the voter's */
    break;
  case NODE_EV_CONNECTING:
  case NODE_EV_STARTED:
    break;
  }
}

/* ---- the ops ----------------------------------------------------------------------------- */

static status_t c_send(voter_t *v, node_req_t *req) {
  voter_cluster_t *s = of(v);
  status_t st = route_begin(s, req, on_reply);
  if (st != ST_OK)
    return st;
  route_shard_announce(s, req);
  st = route(s, req);
  if (st != ST_OK)
    route_end(s, req);
  return st;
}

/* Parked (here) or in a node's backlog: queued either way. */
static int c_queued(voter_t *v, const node_req_t *req) {
  (void)v;
  return node_req_queued(req);
}

static void c_cancel(voter_t *v, node_req_t *req) {
  if (req->node == NULL) /* parked here */
    list_remove(&req->link);
  else
    node_cancel(req);
  route_end(of(v), req);
}

static uint64_t c_progress_ns(voter_t *v) {
  voter_cluster_t *s = of(v);
  uint64_t p = 0;
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->started && s->nodes[i]->node->progress_ns > p)
      p = s->nodes[i]->node->progress_ns;
  return p;
}

static int c_quarantined(voter_t *v) {
  voter_cluster_t *s = of(v);
  return s->answering != NULL && node_quarantined_now(s->answering);
}

static void c_defer_release(voter_t *v, const char *cmd, size_t len) {
  voter_cluster_t *s = of(v);
  voter_cluster_node_t *cn = s->closing ? NULL : route_of(s, cluster_cmd_slot(cmd, len));
  if (cn == NULL) {
    /* Nowhere to keep it: its key expires at its TTL. */
    stats_master_abandoned(s->nodes[0]->node->stats, s->base.index, 1);
    return;
  }
  if (!cn->started) {
    cn->started = 1;
    cn->node->stats = s->nodes[0]->node->stats;
    node_start(cn->node);
  }
  /* Replayed, it announces as a release sent now would. */
  size_t at = shard_pubsub(s) ? script_publish_flag_at(cmd, len) : 0;
  char *copy = at != 0 ? malloc(len) : NULL;
  if (copy != NULL) {
    memcpy(copy, cmd, len);
    copy[at] = script_announce_shard(copy[at]);
    cmd = copy;
  }
  node_defer_release(cn->node, cmd, len);
  free(copy);
}

static void c_warn(voter_t *v, const char *what, const char *detail) {
  voter_cluster_t *s = of(v);
  node_warn(s->answering != NULL ? s->answering : s->nodes[0]->node, what, detail);
}

static void c_start(voter_t *v) {
  voter_cluster_t *s = of(v);
  s->env.loop = s->base_env->loop; /* given to voters.c after init */
  s->retry_timer_ok = tb_timer_init(s->env.tb, &s->retry_timer, s) == 0;
  link_io_t io = {
      .loop = s->env.loop, .flusher = s->env.flusher, .tls = s->env.tls, .rng = s->env.rng};
  if (link_attach(&s->disc, &io) != ST_OK) {
    set_why(s, "cannot read the slot map: no timer");
    voter_report(&s->base,
                 &(voter_news_t){.ev = VOTER_EV_DOWN, .what = "cannot read the slot map"});
    said_started(s);
    return;
  }
  ask_start(s);
}

static void c_catch_up(voter_t *v) {
  voter_cluster_t *s = of(v);
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->started && !s->nodes[i]->retired) {
      node_write_late(s->nodes[i]->node);
      node_read_pending(s->nodes[i]->node);
    }
}

static uint64_t c_tick(voter_t *v) {
  voter_cluster_t *s = of(v);
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->started && !s->nodes[i]->retired) {
      node_read_pending(s->nodes[i]->node);
      node_drop_if_hung(s->nodes[i]->node);
    }
  return replays_due(s);
}

static unsigned parked_releases(const list_node_t *list) {
  unsigned n = 0;
  for (const list_node_t *it = list->next; it != list; it = it->next)
    n += list_entry(it, node_req_t, link)->keep != 0;
  return n;
}

static unsigned c_releases_owed(const voter_t *v) {
  const voter_cluster_t *s = of_c(v);
  unsigned n = parked_releases(&s->retrying);
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->made)
      n += node_releases_owed(s->nodes[i]->node) + parked_releases(&s->nodes[i]->parked);
  return n;
}

static int c_owes_releases(const voter_t *v) {
  const voter_cluster_t *s = of_c(v);
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->started && node_owes_releases(s->nodes[i]->node))
      return 1;
  return 0;
}

/* Whatever waits here is failed as never sent (closing). */
static void fail_all_waiting(voter_cluster_t *s) {
  for (unsigned i = 0; i < s->n_nodes; i++)
    fail_parked(s, s->nodes[i]);
  list_node_t batch;
  list_move_all(&s->retrying, &batch);
  while (!list_empty(&batch)) {
    node_req_t *req = list_entry(batch.next, node_req_t, link);
    list_remove(&req->link);
    finish_unsent(s, s->nodes[0]->node, req);
  }
}

static void c_abandon(voter_t *v) {
  voter_cluster_t *s = of(v);
  s->closing = 1;
  fail_all_waiting(s);
  for (unsigned i = 0; i < s->n_nodes; i++)
    node_abandon(s->nodes[i]->node);
  link_abandon(&s->disc);
  if (s->retry_timer_ok)
    tb_timer_stop(&s->retry_timer);
}

static void retry_timer_closed(tb_timer_t *timer) { closed_one(timer->data); }

static void c_shutdown(voter_t *v) {
  voter_cluster_t *s = of(v);
  s->closing = 1;
  fail_all_waiting(s);
  unsigned nodes_open = 0;
  for (unsigned i = 0; i < s->n_nodes; i++)
    nodes_open += !s->nodes[i]->closed;
  s->open = nodes_open + 1 + (s->retry_timer_ok ? 1u : 0u);
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (!s->nodes[i]->retired) /* a retired node's close is under way already */
      node_shutdown(s->nodes[i]->node);
  link_shutdown(&s->disc);
  if (s->retry_timer_ok)
    tb_timer_close(&s->retry_timer, retry_timer_closed);
}

static void c_free(voter_t *v) {
  voter_cluster_t *s = of(v);
  for (unsigned i = 0; i < s->n_nodes; i++) {
    voter_cluster_node_t *cn = s->nodes[i];
    if (!cn->home) { /* the home node is voters.c's */
      node_free(cn->node);
      free(cn->node);
    }
    free(cn);
  }
  while (s->free_routes != NULL) {
    voter_cluster_route_t *rt = s->free_routes;
    s->free_routes = rt->next_free;
    free(rt);
  }
  cluster_map_clear(&s->map);
  node_addr_clear(&s->addr);
  free(s);
}

/* Two cluster voters reach one server when any of their primaries do. */
static int c_same_server(const voter_t *a, const voter_t *b, char *how, size_t how_len) {
  const voter_cluster_t *x = of_c(a), *y = of_c(b);
  for (unsigned i = 0; i < x->n_nodes; i++)
    for (unsigned j = 0; j < y->n_nodes; j++)
      if (x->nodes[i]->started && y->nodes[j]->started &&
          node_same_server(x->nodes[i]->node, y->nodes[j]->node, how, how_len))
        return 1;
  return 0;
}

/* Appends len bytes of text to buf (size bytes, *used so far), cut to
 * what fits, NUL-terminated. */
static void put(char *buf, size_t size, size_t *used, const char *text, size_t len) {
  size_t room = size - 1 - *used;
  if (len > room)
    len = room;
  memcpy(buf + *used, text, len);
  *used += len;
  buf[*used] = '\0';
}

/* The detail of a vote: the primary it went to, and why it came out so. */
static void c_why(const voter_t *v, int why, const node_req_t *req, char *buf, size_t size) {
  const voter_cluster_t *s = of_c(v);
  const node_t *node = req != NULL ? req->node : NULL;
  const voter_cluster_node_t *cn = node != NULL ? node_entry(s, node) : NULL;
  if (size == 0)
    return;
  buf[0] = '\0';
  if (cn == NULL) {
    if (why == WHY_DOWN)
      snprintf(buf, size, "%s", s->why[0] != '\0' ? s->why : "reading the slot map");
    return;
  }
  char detail[VOTER_WHY_LEN];
  detail[0] = '\0';
  if (why == WHY_ERROR)
    snprintf(detail, sizeof detail, "%s", cn->last_error);
  else if (why == WHY_DOWN && node->down_why[0] == '\0')
    snprintf(detail, sizeof detail, "%s", "not connected yet");
  else if (why != WHY_OK) /* a yes (most votes) has no detail of the node's */
    node_why(node, why, detail, sizeof detail);
  /* Every vote asks (a yes names its primary too): built by hand, not
   * with snprintf, which would cost more than the rest of the vote. */
  size_t used = 0;
  put(buf, size, &used, "primary ", 8);
  put(buf, size, &used, cn->label, strnlen(cn->label, sizeof cn->label));
  if (detail[0] != '\0') {
    put(buf, size, &used, ": ", 2);
    put(buf, size, &used, detail, strnlen(detail, VOTER_WHY_LEN - 32));
  }
}

static const char *c_label(const voter_t *v) { return of_c(v)->addr.label; }

/* The release subscriber's node when releases are PUBLISHed (servers
 * before Redis 7.0): a primary that is up (the cluster bus carries a
 * PUBLISH to every node, so any of them hears every release),
 * the one it was at while that stays up; NULL (the home node) when none
 * is. */
static const node_t *c_sub_node(const voter_t *v) {
  voter_cluster_t *s = of((voter_t *)v);
  if (s->sub_at < s->n_nodes && s->nodes[s->sub_at]->started &&
      s->nodes[s->sub_at]->node->state == NODE_READY)
    return s->nodes[s->sub_at]->node;
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->started && s->nodes[i]->node->state == NODE_READY) {
      s->sub_at = i;
      return s->nodes[i]->node;
    }
  return NULL;
}

/* Where a subscriber hears the releases of a channel in `slot`: shard
 * channels (SPUBLISH) are heard only at the slot's primary, whose node is
 * started if it was not (the subscriber follows its address and IP, and
 * retries while it connects); NULL while no primary is known. */
static int c_sub_shard(const voter_t *v, int slot, const node_t **node) {
  voter_cluster_t *s = of((voter_t *)v);
  *node = NULL;
  if (!shard_pubsub(s))
    return 0;
  int p = slot >= 0 ? cluster_map_owner(&s->map, slot) : -1;
  int k = p >= 0 ? s->map.primaries[p].user : -1;
  voter_cluster_node_t *cn = k >= 0 ? s->nodes[k] : NULL;
  if (cn == NULL || cn->retired || s->closing)
    return 1;
  if (!cn->started) {
    cn->started = 1;
    cn->node->stats = s->nodes[0]->node->stats;
    node_start(cn->node);
  }
  *node = cn->node;
  return 1;
}

/* A shard subscription was refused: a MOVED teaches the map where the
 * slot went, so that the subscription goes there next. */
static void c_sub_refused(voter_t *v, const char *error, size_t len) {
  voter_cluster_t *s = of(v);
  char host[CLUSTER_HOST_LEN];
  int slot = -1, port = 0;
  if (s->closing ||
      cluster_parse_redirect(error, len, &slot, host, &port) != CLUSTER_REDIRECT_MOVED)
    return;
  if (host[0] == '\0')
    return; /* the server does not know its endpoint: the next map will say */
  (void)map_moved(s, slot, host, port, NULL);
}

const voter_ops_t voter_cluster_ops = {
    .kind = "cluster",
    .send = c_send,
    .queued = c_queued,
    .cancel = c_cancel,
    .progress_ns = c_progress_ns,
    .quarantined = c_quarantined,
    .defer_release = c_defer_release,
    .warn = c_warn,
    .start = c_start,
    .catch_up = c_catch_up,
    .tick = c_tick,
    .releases_owed = c_releases_owed,
    .owes_releases = c_owes_releases,
    .abandon = c_abandon,
    .shutdown = c_shutdown,
    .free = c_free,
    .same_server = c_same_server,
    .why = c_why,
    .label = c_label,
    .sub_node = c_sub_node,
    .sub_shard = c_sub_shard,
    .sub_refused = c_sub_refused,
};

int voter_cluster_new(voter_cluster_t **out, const node_env_t *base_env, node_t *home,
                      unsigned index, const node_addr_t *addr) {
  voter_cluster_t *s = calloc(1, sizeof *s);
  *out = s;
  if (s == NULL)
    return REDLOCK_ENOMEM;
  voter_base_init(&s->base, &voter_cluster_ops, index);
  s->base_env = base_env;
  s->env = *base_env;
  s->env.report = on_node;
  s->env.replay_error = on_replay_error;
  s->env.arg = s;
  list_init(&s->retrying);
  if (node_addr_copy(&s->addr, addr) != 0 || s->addr.n_seeds == 0)
    return REDLOCK_ENOMEM;
  /* The home node, at the first seed: voters.c's memory, always made (the
   * notifier reads its address). */
  voter_cluster_node_t *cn = calloc(1, sizeof *cn);
  if (cn == NULL)
    return REDLOCK_ENOMEM;
  list_init(&cn->parked);
  cn->node = home;
  cn->home = 1;
  s->nodes[s->n_nodes++] = cn;
  host_port(cn->label, sizeof cn->label, s->addr.seeds[0].host, s->addr.seeds[0].port);
  node_addr_t a = s->addr;
  a.voter = VOTER_KIND_STANDALONE;
  a.db = 0;
  a.label = cn->label;
  a.seeds = NULL;
  a.n_seeds = 0;
  a.master_name = NULL;
  if (node_init(home, &s->env, index, &a) != 0)
    return REDLOCK_ENOMEM;
  home->stats_primary = 0; /* entry i of the voter's per-primary figures: nodes[i] */
  home->batch_writes = 1;
  cn->made = 1;
  /* The discovery link: the URI's credentials and TLS, no SELECT. */
  s->disc_addr.voter = VOTER_KIND_STANDALONE;
  s->disc_addr.kind = NODE_ADDR_TCP;
  s->disc_addr.user = s->addr.user;
  s->disc_addr.password = s->addr.password;
  s->disc_addr.tls = s->addr.tls;
  s->disc_addr.label = s->disc_label;
  at_seed(s, 0);
  link_init(&s->disc, &(link_cfg_t){
                          .addr = &s->disc_addr,
                          .tb = s->env.tb,
                          .log = s->env.log,
                          .role = "cluster seed",
                          .connect_timeout_ms = &s->env.connect_timeout_ms,
                          .backoff_base_ms = NODE_BACKOFF_BASE_MS,
                          .backoff_cap_ms = NODE_BACKOFF_CAP_MS,
                          .stable_ms = NODE_STABLE_MS,
                          .handshake = disc_handshake,
                          .want_retry = disc_want_retry,
                          .event = disc_on_link,
                          .arg = s,
                      });
  snprintf(s->why, sizeof s->why, "reading the slot map");
  return 0;
}
