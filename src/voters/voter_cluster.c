/* voter_cluster.c: a whole Redis Cluster as one voter (see voter_cluster.h):
 * the ops, the slot map applied and the nodes' news; the parts below it are
 * the discovery of the slot map (voter_cluster_disc.c), the routing of the
 * requests (voter_cluster_route.c) and the primaries' nodes
 * (voter_cluster_nodes.c).
 *
 *   start ──► discovery link ──► CLUSTER SHARDS (or SLOTS) ──► slot map
 *                 ▲    next seed on failure          │ on_disc: applied,
 *                 │                                  │ primaries bound
 *                 └── every 10 s, MOVED, CLUSTERDOWN, a primary failing
 *
 *   send ──► routed to its slot's primary, redirections followed ──► the
 *            sender's fn */
#include "voters/voter_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"
#include "util/alloc.h"
#include "util/why.h"
#include "voters/voter_cluster_disc.h"
#include "voters/voter_cluster_nodes.h"
#include "voters/voter_cluster_route.h"

static voter_cluster_t *of(voter_t *v) { return (voter_cluster_t *)v; }
static const voter_cluster_t *of_c(const voter_t *v) { return (const voter_cluster_t *)v; }

static void said_started(voter_cluster_t *s) {
  if (s->started_said)
    return;
  s->started_said = 1;
  voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_STARTED});
}

/* cn's first connection attempt is over (or it was shut down first). */
static void startup_done(voter_cluster_t *s, voter_cluster_node_t *cn) {
  if (!cn->startup_wait)
    return;
  cn->startup_wait = 0;
  if (--s->startup_left == 0)
    said_started(s);
}

/* Connects every primary of the map as the map names it, not at its first
 * request: a request that found its primary still connecting would wait
 * parked, and be withdrawn unsent once the other voters made a quorum (a
 * fresh client's first lock on each primary went without this voter).
 * Before the voter has said STARTED, it waits for each one's first
 * attempt. */
static void start_primaries(voter_cluster_t *s) {
  for (unsigned i = 0; i < s->map.n_primaries; i++) {
    int k = s->map.primaries[i].user;
    voter_cluster_node_t *cn = k >= 0 ? s->nodes[k] : NULL;
    if (cn == NULL || cn->retired)
      continue;
    voter_cluster_node_start(s, cn);
    if (!s->started_said && !cn->startup_wait && !cn->node->first_attempt_done) {
      cn->startup_wait = 1;
      s->startup_left++;
    }
  }
}

static void closed_one(voter_cluster_t *s) {
  if (s->open > 0 && --s->open == 0)
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_CLOSED});
}

/* ---- the slot map ------------------------------------------------------------------- */

/* A map read from the seeds: its primaries get nodes and are connected,
 * those that left it are marked (their role is rechecked if they come back)
 * and retired once idle; the first map makes the voter up, and started once
 * its primaries' first attempts are over. */
static void map_apply(voter_cluster_t *s, cluster_map_t *fresh) {
  unsigned old_primaries = s->map.n_primaries, old_covered = s->map.covered;
  cluster_map_move(&s->map, fresh);
  voter_cluster_bind_primaries(s, NULL);
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->started && !s->nodes[i]->retired && !voter_cluster_in_map(s, s->nodes[i]))
      s->nodes[i]->left = 1;
  voter_cluster_retire_departed(s);
  int first = !s->have_map;
  s->have_map = 1;
  s->map_ns = tb_now_ns(s->env.tb);
  int level = first || old_primaries != s->map.n_primaries || old_covered != s->map.covered
                  ? REDLOCK_LOG_INFO
                  : REDLOCK_LOG_DEBUG;
  log_write(s->env.log, level, "cluster %s: slot map from %s: %u primaries, %u of %d slots covered",
            s->addr.label, s->disc.label, s->map.n_primaries, s->map.covered, KEYSLOT_COUNT);
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
  /* Primaries may have been retired: their servers are no longer ours. */
  voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_SERVERS});
  start_primaries(s);
  if (s->startup_left == 0)
    said_started(s);
}

/* Every seed failed in a row: without a map, the voter cannot vote. */
static void no_seed(voter_cluster_t *s, const char *why) {
  log_write(s->env.log, s->have_map ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_WARN, "cluster %s: %s%s",
            s->addr.label, why,
            s->have_map ? " (the slot map read before still routes)" : " (it cannot vote)");
  if (!s->have_map) {
    voter_cluster_set_why(s, why);
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_DOWN, .what = why});
    said_started(s);
  }
}

/* voter_cluster_disc_cfg_t.report: what the discovery found. */
static void on_disc(void *arg, voter_cluster_disc_event_t ev, cluster_map_t *map, const char *why) {
  voter_cluster_t *s = arg;
  switch (ev) {
  case VOTER_CLUSTER_DISC_MAP:
    map_apply(s, map);
    break;
  case VOTER_CLUSTER_DISC_NO_SEED:
    no_seed(s, why);
    break;
  case VOTER_CLUSTER_DISC_TLS_FAILURE:
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_TLS_FAILURE});
    break;
  case VOTER_CLUSTER_DISC_CLOSED:
    closed_one(s);
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

static void on_node(void *arg, node_t *node, node_event_t ev, const char *what,
                    const char *detail) {
  voter_cluster_t *s = arg;
  voter_cluster_node_t *cn = voter_cluster_node_entry(s, node);
  (void)what;
  (void)detail;
  switch (ev) {
  case NODE_EV_UP:
    /* A new server (or a new run_id at an old address): judged against
     * the other voters' before what waited for it is sent. */
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_SERVERS});
    if (cn != NULL)
      voter_cluster_flush_parked(s, cn);
    break;
  case NODE_EV_DOWN:
    if (node->state == NODE_READY)
      voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_SERVERS, .leaving = node});
    if (cn != NULL) {
      cn->failing = 1;
      voter_cluster_fail_parked(s, cn);
      cn->failing = 0;
      if (voter_cluster_in_map(s, cn))
        voter_cluster_disc_ask(&s->disc); /* failed over? */
    }
    break;
  case NODE_EV_NOT_MASTER:
    log_write(s->env.log, REDLOCK_LOG_WARN, "cluster %s: primary %s: %s (%s): reading the slot map",
              s->addr.label, node->addr.label, what, detail != NULL ? detail : "");
    voter_cluster_disc_ask(&s->disc);
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
  case NODE_EV_STARTED:
    if (cn != NULL)
      startup_done(s, cn);
    break;
  case NODE_EV_CLOSED:
    if (cn != NULL) {
      cn->closed = 1;
      startup_done(s, cn);
    }
    if (cn == NULL || !cn->retired || s->closing)
      closed_one(s); /* a retired node's own close is no part of the voter's */
    break;
  case NODE_EV_CONNECTING:
    break;
  }
}

/* ---- the ops ----------------------------------------------------------------------------- */

static status_t c_send(voter_t *v, node_req_t *req) { return voter_cluster_route_send(of(v), req); }

/* Parked (here) or in a node's backlog: queued either way. */
static int c_queued(voter_t *v, const node_req_t *req) {
  (void)v;
  return node_req_queued(req);
}

static void c_cancel(voter_t *v, node_req_t *req) { voter_cluster_route_cancel(of(v), req); }

static uint64_t c_progress_ns(voter_t *v) {
  voter_cluster_t *s = of(v);
  uint64_t p = 0;
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->started && s->nodes[i]->node->hung.progress_ns > p)
      p = s->nodes[i]->node->hung.progress_ns;
  return p;
}

static int c_quarantined(voter_t *v) {
  voter_cluster_t *s = of(v);
  return s->answering != NULL && node_quarantined_now(s->answering);
}

static void c_defer_release(voter_t *v, const char *cmd, size_t len) {
  voter_cluster_keep_release(of(v), cmd, len);
}

static void c_warn(voter_t *v, const char *what, const char *detail) {
  voter_cluster_t *s = of(v);
  const node_t *node = s->answering != NULL ? s->answering : s->nodes[0]->node;
  (void)log_limited(s->env.log, &s->warn_limit, tb_now_ns(s->env.tb), REDLOCK_LOG_WARN,
                    "master %s: %s%s%s", node->addr.label, what, detail ? ": " : "",
                    detail ? detail : "");
}

static void c_start(voter_t *v) {
  voter_cluster_t *s = of(v);
  s->env.loop = s->base_env->loop; /* given to voters.c after init */
  s->retry_timer_ok = tb_timer_init(s->env.tb, &s->retry_timer, s) == 0;
  link_io_t io = {
      .loop = s->env.loop, .flusher = s->env.flusher, .tls = s->env.tls, .rng = s->env.rng};
  if (voter_cluster_disc_start(&s->disc, &io) != ST_OK) {
    voter_cluster_set_why(s, "cannot read the slot map: no timer");
    voter_report(&s->base,
                 &(voter_news_t){.ev = VOTER_EV_DOWN, .what = "cannot read the slot map"});
    said_started(s);
  }
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

static void c_abandon(voter_t *v) {
  voter_cluster_t *s = of(v);
  s->closing = 1;
  voter_cluster_fail_waiting(s);
  for (unsigned i = 0; i < s->n_nodes; i++)
    node_abandon(s->nodes[i]->node);
  voter_cluster_disc_abandon(&s->disc);
  if (s->retry_timer_ok)
    tb_timer_stop(&s->retry_timer);
}

static void retry_timer_closed(tb_timer_t *timer) { closed_one(timer->data); }

static void c_shutdown(voter_t *v) {
  voter_cluster_t *s = of(v);
  s->closing = 1;
  voter_cluster_fail_waiting(s);
  unsigned nodes_open = 0;
  for (unsigned i = 0; i < s->n_nodes; i++)
    nodes_open += !s->nodes[i]->closed;
  s->open = nodes_open + 1 + (s->retry_timer_ok ? 1u : 0u);
  for (unsigned i = 0; i < s->n_nodes; i++)
    if (!s->nodes[i]->retired) /* a retired node's close is under way already */
      node_shutdown(s->nodes[i]->node);
  voter_cluster_disc_shutdown(&s->disc);
  if (s->retry_timer_ok)
    tb_timer_close(&s->retry_timer, retry_timer_closed);
}

static void c_free(voter_t *v) {
  voter_cluster_t *s = of(v);
  for (unsigned i = 0; i < s->n_nodes; i++) {
    voter_cluster_node_t *cn = s->nodes[i];
    if (!cn->home) { /* the home node is voters.c's */
      node_free(cn->node);
      rl_free(cn->node);
    }
    rl_free(cn);
  }
  while (s->free_routes != NULL) {
    voter_cluster_route_t *rt = s->free_routes;
    s->free_routes = rt->next_free;
    rl_free(rt);
  }
  cluster_map_clear(&s->map);
  node_addr_clear(&s->addr);
  rl_free(s);
}

/* Its primaries' places: nodes[k], a server while connected and not retired. */
static unsigned c_servers(const voter_t *v) { return of_c(v)->n_nodes; }

static const node_t *c_server(const voter_t *v, unsigned k) {
  const voter_cluster_t *s = of_c(v);
  const voter_cluster_node_t *cn = k < s->n_nodes ? s->nodes[k] : NULL;
  return cn != NULL && cn->started && !cn->retired && cn->node->state == NODE_READY ? cn->node
                                                                                    : NULL;
}

static void c_server_dup(voter_t *v, unsigned k, int dup_of, int other, const char *why) {
  voter_cluster_t *s = of(v);
  if (k >= s->n_nodes)
    return;
  voter_cluster_node_t *cn = s->nodes[k];
  cn->dup = dup_of >= 0;
  cn->shared = other >= 0;
  snprintf(cn->dup_why, sizeof cn->dup_why, "%s", why);
}

/* The request's primary: where it went (or was held back), or before it is
 * sent where its slot goes. */
static int c_dup_for(voter_t *v, node_req_t *req) {
  voter_cluster_t *s = of(v);
  const voter_cluster_node_t *cn = NULL;
  if (req->node != NULL) {
    cn = voter_cluster_node_entry(s, req->node);
  } else if (s->have_map) {
    int p = req->slot >= 0 ? cluster_map_owner(&s->map, req->slot) : -1;
    int k = p >= 0 ? s->map.primaries[p].user : -1;
    cn = k >= 0 ? s->nodes[k] : NULL;
  }
  if (cn == NULL || !(req->node != NULL && req->sent_ns == 0 ? cn->shared : cn->dup))
    return 0;
  req->node = cn->node; /* never sent: its vote's detail names the primary */
  return 1;
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
  const voter_cluster_node_t *cn = node != NULL ? voter_cluster_node_entry(s, node) : NULL;
  if (size == 0)
    return;
  buf[0] = '\0';
  if (why == WHY_DUPLICATE) { /* "same server as ..., via primary P" */
    snprintf(buf, size, "%s", cn != NULL ? cn->dup_why : "");
    return;
  }
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
  if (!voter_cluster_shard_pubsub(s))
    return 0;
  int p = slot >= 0 ? cluster_map_owner(&s->map, slot) : -1;
  int k = p >= 0 ? s->map.primaries[p].user : -1;
  voter_cluster_node_t *cn = k >= 0 ? s->nodes[k] : NULL;
  if (cn == NULL || cn->retired || s->closing)
    return 1;
  voter_cluster_node_start(s, cn);
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
  (void)voter_cluster_map_moved(s, slot, host, port, NULL);
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
    .servers = c_servers,
    .server = c_server,
    .server_dup = c_server_dup,
    .dup_for = c_dup_for,
    .why = c_why,
    .label = c_label,
    .sub_node = c_sub_node,
    .sub_shard = c_sub_shard,
    .sub_refused = c_sub_refused,
};

status_t voter_cluster_new(voter_cluster_t **out, const node_env_t *base_env, node_t *home,
                           unsigned index, const node_addr_t *addr) {
  voter_cluster_t *s = rl_calloc(1, sizeof *s);
  *out = s;
  if (s == NULL)
    return ST_ENOMEM;
  voter_base_init(&s->base, &voter_cluster_ops, index);
  s->base_env = base_env;
  s->env = *base_env;
  s->env.report = on_node;
  s->env.replay_error = voter_cluster_on_replay_error;
  s->env.arg = s;
  list_init(&s->retrying);
  if (node_addr_copy(&s->addr, addr) != ST_OK || s->addr.n_seeds == 0)
    return ST_ENOMEM;
  /* The home node, at the first seed: voters.c's memory, always made (the
   * notifier reads its address). */
  voter_cluster_node_t *cn = rl_calloc(1, sizeof *cn);
  if (cn == NULL)
    return ST_ENOMEM;
  list_init(&cn->parked);
  cn->node = home;
  cn->home = 1;
  s->nodes[s->n_nodes++] = cn;
  voter_cluster_host_port(cn->label, sizeof cn->label, s->addr.seeds[0].host,
                          s->addr.seeds[0].port);
  node_addr_t a = s->addr;
  a.voter = VOTER_KIND_STANDALONE;
  a.db = 0;
  a.label = cn->label;
  a.seeds = NULL;
  a.n_seeds = 0;
  a.master_name = NULL;
  if (node_init(home, &s->env, index, &a) != ST_OK)
    return ST_ENOMEM;
  home->primary.stats_primary = 0; /* entry i of the voter's per-primary figures: nodes[i] */
  home->primary.batch_writes = 1;
  home->primary.sharded = 1; /* node.h: keys migrate between shards */
  home->acks.check_role = 1; /* node.h: a primary is demoted without a disconnect */
  cn->made = 1;
  voter_cluster_disc_init(&s->disc, &(voter_cluster_disc_cfg_t){
                                        .uri = &s->addr,
                                        .env = &s->env,
                                        .closing = &s->closing,
                                        .map_ns = &s->map_ns,
                                        .report = on_disc,
                                        .arg = s,
                                    });
  snprintf(s->why, sizeof s->why, "reading the slot map");
  return ST_OK;
}
