/* voter_cluster_route.c: the cluster voter's requests, routed by hash slot
 * (see voter_cluster_route.h).
 *
 *   send ──► slot ──► map ──► primary's node (made and started on first use;
 *                              waits parked while it connects)
 *                                  │ reply: MOVED ─► map.assign, send there
 *                                  │        ASK   ─► ASKING + send there
 *                                  │        TRYAGAIN ─► again in 25 ms
 *                                  └────────────────► the sender's fn */
#include "voters/voter_cluster_route.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/scripts.h"
#include "redlock.h"
#include "util/alloc.h"
#include "util/backoff.h"
#include "util/stats_core.h"
#include "voters/voter_cluster_disc.h"
#include "voters/voter_cluster_nodes.h"

void voter_cluster_set_why(voter_cluster_t *s, const char *why) {
  uv_mutex_lock(s->env.mutex);
  snprintf(s->why, sizeof s->why, "%s", why);
  uv_mutex_unlock(s->env.mutex);
}

/* ---- releases announced on the shard channel ---------------------------------------- */

/* A release announces with SPUBLISH on this cluster: its servers know
 * CLUSTER SHARDS, so they are Redis >= 7.0 (or Valkey) and know SPUBLISH,
 * which stays inside the slot's shard, where a PUBLISH would cross the
 * cluster bus to every node (every primary would handle every release).
 * The subscribers follow with SSUBSCRIBE at the slot's primary (c_sub_shard;
 * notify.c).  Older servers: PUBLISH, heard at any node. */
int voter_cluster_shard_pubsub(const voter_cluster_t *s) {
  return s->have_map && !s->disc.use_slots;
}

/* ---- a request's routing state (node_req_t.route) ------------------------------------ */

static voter_cluster_route_t *rt_of(const node_req_t *req) { return req->route; }

/* Takes req over: its fn becomes the voter's (on_reply), the sender's is
 * kept.  ST_ENOMEM when no state could be had (req untouched). */
static status_t route_begin(voter_cluster_t *s, node_req_t *req, node_reply_fn own_fn) {
  voter_cluster_route_t *rt = s->free_routes;
  if (rt != NULL) {
    s->free_routes = rt->next_free;
    s->n_free_routes--;
  } else if ((rt = rl_malloc(sizeof *rt)) == NULL) {
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
  rt->expired = 0;
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
  req->shard = 0;
  if (rt->orig != NULL)
    req->cmd = rt->orig;
  rl_free(rt->own);
  if (s->n_free_routes < VOTER_CLUSTER_FREE_ROUTES) {
    rt->next_free = s->free_routes;
    s->free_routes = rt;
    s->n_free_routes++;
  } else {
    rl_free(rt);
  }
}

/* A release that announces with PUBLISH sent as SPUBLISH instead: req->cmd
 * becomes the sender's SPUBLISH twin (forms->cmd_shard: a round's), or else the
 * voter's own copy (an EVAL after NOSCRIPT); route_end puts the sender's
 * back.  Out of memory, it goes as it is. */
static void route_shard_announce(voter_cluster_t *s, node_req_t *req) {
  if (!req->keep || !voter_cluster_shard_pubsub(s))
    return;
  voter_cluster_route_t *rt = rt_of(req);
  req->shard = 1; /* a script-free form's announcement too (node_forms_t.announce_shard) */
  if (req->forms != NULL && req->forms->cmd_shard != NULL) {
    rt->orig = req->cmd;
    req->cmd = req->forms->cmd_shard;
    return;
  }
  size_t at = script_publish_flag_at(req->cmd, req->len);
  char *copy = at != 0 ? rl_malloc(req->len) : NULL;
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
  rl_free(container_of(req, asking_req_t, req));
}

/* ASKING on node, right before the next request written there. */
static status_t send_asking(node_t *node) {
  asking_req_t *a = rl_calloc(1, sizeof *a);
  if (a == NULL)
    return ST_DOWN;
  a->req.cmd = asking_cmd;
  a->req.len = sizeof asking_cmd - 1;
  a->req.fn = asking_done;
  a->req.slot = -1;
  status_t st = node_send(node, &a->req);
  if (st != ST_OK)
    rl_free(a);
  return st;
}

/* ---- routing ------------------------------------------------------------------------- */

/* Sends req to cn's primary: at once when it is up, parked while it
 * connects (started here on first use), refused while it is down. */
static status_t to_node(voter_cluster_t *s, voter_cluster_node_t *cn, node_req_t *req, int ask) {
  node_t *node = cn->node;
  voter_cluster_node_start(s, cn);
  req->batched = 0;
  if (node->state == NODE_READY) {
    /* Stamped with the request's start (its round's), however it got here
     * (parked while its primary connected, redirected, sent again after
     * TRYAGAIN): its vote is due by the round's deadline.  A release: the
     * clock at its write (node_send's), as on any voter. */
    if (req->sent_ns == 0 && !req->keep)
      req->sent_ns = rt_of(req)->started_ns;
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
    /* Not behind a full pipe: a round decided meanwhile leaves it to go out
     * once connected (round.c), its deadline still drops it unsent. */
    req->batched = 1;
    rt_of(req)->ask = (uint8_t)ask;
    list_insert_tail(&cn->parked, &req->link);
    return ST_OK;
  }
  req->node = node;
  return ST_DOWN;
}

/* The slot's primary, or NULL (why set). */
static voter_cluster_node_t *route_of(voter_cluster_t *s, int slot) {
  if (!s->have_map)
    return NULL; /* s->why says why */
  int p = slot >= 0 ? cluster_map_owner(&s->map, slot) : (s->map.n_primaries > 0 ? 0 : -1);
  int k = p >= 0 ? s->map.primaries[p].user : -1;
  if (k < 0) {
    if (p < 0)
      voter_cluster_disc_ask_uncovered(&s->disc);
    char why[VOTER_WHY_LEN];
    if (p >= 0 && !voter_cluster_allowed(s, s->map.primaries[p].host))
      snprintf(why, sizeof why, "discovered address %.*s:%d not allowed (primary of slot %d)",
               (int)(sizeof why - 64), s->map.primaries[p].host, s->map.primaries[p].port, slot);
    else
      snprintf(why, sizeof why,
               p < 0 ? "no primary for slot %d" : "no connection for the primary of slot %d", slot);
    voter_cluster_set_why(s, why);
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

/* A request but a release written late (redirected, or parked for the
 * connection) to a primary that another voter uses too, lower- or
 * higher-numbered (voters.c's verdict, cn->shared), is not sent: that voter
 * may have counted the server's answer in this round already, and its own
 * would race it on the same key.  Finished as never sent; round.c counts
 * it as a duplicate.  1 when so. */
static int dup_unsent(voter_cluster_t *s, voter_cluster_node_t *cn, node_req_t *req) {
  if (!cn->shared || req->keep)
    return 0;
  finish_unsent(s, cn->node, req);
  return 1;
}

void voter_cluster_flush_parked(voter_cluster_t *s, voter_cluster_node_t *cn) {
  list_node_t batch;
  list_move_all(&cn->parked, &batch);
  while (!list_empty(&batch)) {
    node_req_t *req = list_entry(batch.next, node_req_t, link);
    list_remove(&req->link);
    if (dup_unsent(s, cn, req))
      continue;
    if (to_node(s, cn, req, rt_of(req)->ask) != ST_OK)
      finish_unsent(s, cn->node, req);
  }
}

/* Every request waiting on list finished as never sent, named as node's. */
static void fail_list(voter_cluster_t *s, list_node_t *list, node_t *node) {
  list_node_t batch;
  list_move_all(list, &batch);
  while (!list_empty(&batch)) {
    node_req_t *req = list_entry(batch.next, node_req_t, link);
    list_remove(&req->link);
    finish_unsent(s, node, req);
  }
}

void voter_cluster_fail_parked(voter_cluster_t *s, voter_cluster_node_t *cn) {
  fail_list(s, &cn->parked, cn->node);
}

void voter_cluster_fail_waiting(voter_cluster_t *s) {
  for (unsigned i = 0; i < s->n_nodes; i++)
    voter_cluster_fail_parked(s, s->nodes[i]);
  fail_list(s, &s->retrying, s->nodes[0]->node);
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
voter_cluster_node_t *voter_cluster_map_moved(voter_cluster_t *s, int slot, const char *host,
                                              int port, const node_t *busy) {
  voter_cluster_node_t *cn = NULL;
  int at = 0;
  if (cluster_map_assign(&s->map, slot, host, port, &at) == ST_OK) {
    voter_cluster_bind_primaries(s, busy);
    int k = s->map.primaries[at].user;
    cn = k >= 0 ? s->nodes[k] : NULL;
  }
  log_write(s->env.log, REDLOCK_LOG_DEBUG, "cluster %s: slot %d moved to %s:%d", s->addr.label,
            slot, host, port);
  voter_cluster_disc_ask(&s->disc);
  return cn;
}

/* A redirection: the request goes on to host:port (MOVED: the slot's new
 * primary; ASK: this once, after ASKING).  0 when it went on (or finished). */
static void follow(voter_cluster_t *s, node_t *from, node_req_t *req, cluster_redirect_t kind,
                   int slot, const char *host, int port) {
  voter_cluster_node_t *cn = NULL;
  if (kind == CLUSTER_REDIRECT_MOVED) {
    cn = voter_cluster_map_moved(s, slot, host, port, from);
  } else {
    (void)voter_cluster_node_for(s, host, port, &cn); /* NULL: below, as for MOVED */
    if (cn != NULL)
      voter_cluster_primary_again(s, cn, from);
  }
  if (cn == NULL && !req->keep && !voter_cluster_allowed(s, host)) {
    /* Unsent with no node, so that its vote's detail is why (a release
     * keeps the usual path: its owner reads the node). */
    char why[VOTER_WHY_LEN];
    snprintf(why, sizeof why, "discovered address %.*s:%d not allowed (%s for slot %d)",
             (int)(sizeof why - 64), host, port, kind == CLUSTER_REDIRECT_ASK ? "ASK" : "MOVED",
             slot);
    voter_cluster_set_why(s, why);
    finish_unsent(s, NULL, req);
    return;
  }
  if (cn != NULL && dup_unsent(s, cn, req))
    return;
  if (cn == NULL || to_node(s, cn, req, kind == CLUSTER_REDIRECT_ASK) != ST_OK)
    finish_unsent(s, cn != NULL ? cn->node : from, req);
}

/* node_req_t.fn of every request this voter routes. */
static void on_reply(node_req_t *req, const redisReply *reply) {
  node_t *node = req->node;
  voter_cluster_t *s = node->env->arg;
  if (reply != NULL && reply->type == REDIS_REPLY_ERROR && reply->str != NULL && !s->closing) {
    char host[CLUSTER_HOST_LEN];
    int slot = -1, port = 0;
    cluster_redirect_t kind = cluster_parse_redirect(reply->str, reply->len, &slot, host, &port);
    voter_cluster_route_t *rt = rt_of(req);
    int more = rt->redirects < VOTER_CLUSTER_MAX_REDIRECTS;
    uint64_t now = tb_now_ns(s->env.tb);
    uint64_t left_until = rt->started_ns + (uint64_t)s->env.request_timeout_ms * 1000000u;
    /* A redirection is followed while the request timeout, run from when
     * the voter took the request (its round's start), lasts: a chain
     * bouncing between nodes ends by the round's deadline.  A release
     * waits its turn however long (its key would stay until its TTL). */
    int in_time = req->keep || now < left_until;
    if (kind != CLUSTER_REDIRECT_NONE && more && in_time) {
      rt->redirects++;
      if (host[0] == '\0') /* the server does not know its endpoint: the one that answered */
        snprintf(host, sizeof host, "%s", node->addr.host);
      req->sent_ns = 0; /* to_node stamps it */
      follow(s, node, req, kind, slot, host, port);
      return;
    }
    if (kind != CLUSTER_REDIRECT_NONE && more && s->retry_timer_ok) {
      /* Cut by the deadline.  Its vote is judged by the round's deadline
       * (timed out, as a request unanswered), due by now: each hop was
       * stamped with the request's start, but one that waited for its
       * connection's next batch was stamped at its write, and the round
       * then judges it again within one request timeout.  The request is
       * finished (without a reply) once that is over (retry_fire). */
      rt->expired = 1;
      rt->started_ns = now; /* from now on: when it was cut */
      req->sent_ns = left_until - (uint64_t)s->env.request_timeout_ms * 1000000u;
      req->node = node;
      list_insert_tail(&s->retrying, &req->link);
      if (!tb_timer_active(&s->retry_timer))
        (void)tb_timer_start(&s->retry_timer, retry_fire, VOTER_CLUSTER_TRYAGAIN_MS);
      voter_cluster_disc_ask(&s->disc);
      return;
    }
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
      voter_cluster_disc_ask(&s->disc);
    voter_cluster_node_t *cn = voter_cluster_node_entry(s, node);
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

/* TRYAGAIN's wait is over: every request waiting goes again; those cut by
 * their deadline are finished once their round has judged them (a request
 * timeout after the cut, and a tick), and wait for a later tick before. */
static void retry_fire(tb_timer_t *timer) {
  voter_cluster_t *s = timer->data;
  uint64_t now = tb_now_ns(s->env.tb);
  uint64_t judged_ns = ((uint64_t)s->env.request_timeout_ms + VOTER_CLUSTER_TRYAGAIN_MS) * 1000000u;
  list_node_t batch, later;
  list_move_all(&s->retrying, &batch);
  list_init(&later);
  while (!list_empty(&batch)) {
    node_req_t *req = list_entry(batch.next, node_req_t, link);
    list_remove(&req->link);
    if (!rt_of(req)->expired) {
      if (route(s, req) != ST_OK)
        finish_unsent(s, req->node, req);
    } else if (now - rt_of(req)->started_ns >= judged_ns) {
      finish(s, req->node, req, NULL); /* its vote timed out meanwhile */
    } else {
      list_insert_tail(&later, &req->link);
    }
  }
  while (!list_empty(&later)) {
    node_req_t *req = list_entry(later.next, node_req_t, link);
    list_remove(&req->link);
    list_insert_tail(&s->retrying, &req->link);
  }
  if (!list_empty(&s->retrying) && !tb_timer_active(&s->retry_timer))
    (void)tb_timer_start(&s->retry_timer, retry_fire, VOTER_CLUSTER_TRYAGAIN_MS);
}

status_t voter_cluster_route_send(voter_cluster_t *s, node_req_t *req) {
  status_t st = route_begin(s, req, on_reply);
  if (st != ST_OK)
    return st;
  route_shard_announce(s, req);
  st = route(s, req);
  if (st != ST_OK)
    route_end(s, req);
  return st;
}

void voter_cluster_route_cancel(voter_cluster_t *s, node_req_t *req) {
  if (req->node == NULL || rt_of(req)->expired) /* parked here */
    list_remove(&req->link);
  else
    node_cancel(req);
  route_end(s, req);
}

/* ---- kept releases that follow their slot ------------------------------------------------ */

void voter_cluster_keep_release(voter_cluster_t *s, const char *cmd, size_t len) {
  voter_cluster_node_t *cn = s->closing ? NULL : route_of(s, cluster_cmd_slot(cmd, len));
  if (cn == NULL) {
    /* Nowhere to keep it: its key expires at its TTL. */
    stats_master_abandoned(s->nodes[0]->node->stats, s->base.index, 1);
    return;
  }
  voter_cluster_node_start(s, cn);
  /* Replayed, it announces as a release sent now would. */
  size_t at = voter_cluster_shard_pubsub(s) ? script_publish_flag_at(cmd, len) : 0;
  char *copy = at != 0 ? rl_malloc(len) : NULL;
  if (copy != NULL) {
    memcpy(copy, cmd, len);
    copy[at] = script_announce_shard(copy[at]);
    cmd = copy;
  }
  node_defer_release(cn->node, cmd, len);
  rl_free(copy);
}

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
    voter_cluster_keep_release(r->s, r->cmd, r->len);
  rl_free(r);
}

/* Sends a release on to its slot's owner now (through MOVED / ASK), or
 * keeps it for that owner when it cannot go now. */
static void release_onward(voter_cluster_t *s, const char *cmd, size_t len) {
  cluster_replay_t *r = s->closing ? NULL : rl_malloc(sizeof *r + len);
  if (r == NULL) {
    voter_cluster_keep_release(s, cmd, len);
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
  if (voter_cluster_route_send(s, &r->req) != ST_OK) {
    voter_cluster_keep_release(s, cmd, len);
    rl_free(r);
  }
}

/* node_env_t.replay_error: a kept release replayed to a primary that
 * no longer serves its slot follows the slot (MOVED: the map learns it). */
void voter_cluster_on_replay_error(void *arg, node_t *node, const char *cmd, size_t len,
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
    (void)voter_cluster_map_moved(s, slot, host, port, node);
  release_onward(s, cmd, len);
}

static void kept_onward(void *arg, const char *cmd, size_t len) { release_onward(arg, cmd, len); }

/* Primaries that left the map (they serve no slot) are shut down once idle,
 * so that a removed node is not reconnected forever; what was kept for them
 * goes to the owners of its slots.  One still busy is judged again at the
 * next map. */
void voter_cluster_retire_departed(voter_cluster_t *s) {
  for (unsigned i = 0; i < s->n_nodes; i++) {
    voter_cluster_node_t *cn = s->nodes[i];
    node_t *node = cn->node;
    if (!cn->made || cn->retired || voter_cluster_in_map(s, cn) || !list_empty(&cn->parked))
      continue;
    if (node->state == NODE_READY &&
        (node->pipe.inflight > 0 || node->pipe.backlog_len > 0 || node->replay.replays_out > 0))
      continue;
    log_write(s->env.log, cn->started ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
              "cluster %s: %s serves no slot any more: its connection is closed", s->addr.label,
              cn->label);
    /* Its failures in a row are kept for a node made anew at that address
     * (a redirection there): it waits for the backoff the link was in. */
    cn->failures = node->state == NODE_READY ? 0 : node->link.failures;
    cn->retry_ns = 0;
    if (cn->failures > 0)
      cn->retry_ns =
          tb_now_ns(s->env.tb) + backoff_ms(cn->failures - 1, NODE_BACKOFF_BASE_MS,
                                            NODE_BACKOFF_CAP_MS, jitter_rng_next(s->env.rng)) *
                                     1000000u;
    cn->retired = 1;
    if (s->sub_at == i)
      s->sub_at = 0;
    node_take_kept(node, kept_onward, s);
    node_shutdown(node);
  }
}
