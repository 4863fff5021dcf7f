/* voters.c: the client's voters and the rounds' transport over them (see
 * voters.h). */
#include "voters/voters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"
#include "util/alloc.h"
#include "util/why.h"

/* ---- the rounds' transport: master i is voter i ------------------------------------- */

static voter_t *voter_at(void *arg, unsigned i) { return ((voters_t *)arg)->voter[i]; }

static status_t t_send(void *arg, unsigned i, node_req_t *req) {
  voter_t *v = voter_at(arg, i);
  return v->ops->send(v, req);
}

static int t_queued(void *arg, unsigned i, const node_req_t *req) {
  voter_t *v = voter_at(arg, i);
  return v->ops->queued(v, req);
}

static void t_cancel(void *arg, unsigned i, node_req_t *req) {
  voter_t *v = voter_at(arg, i);
  v->ops->cancel(v, req);
}

static uint64_t t_progress_ns(void *arg, unsigned i) {
  voter_t *v = voter_at(arg, i);
  return v->ops->progress_ns(v);
}

static int t_quarantined(void *arg, unsigned i) {
  voter_t *v = voter_at(arg, i);
  return v->ops->quarantined(v);
}

/* A one-server voter's verdict is kept; a cluster voter with a duplicate
 * among its primaries judges the request by its primary.  Sets of one-server
 * voters pay one test of dup_some. */
static int t_duplicate(void *arg, unsigned i, node_req_t *req) {
  voter_t *v = voter_at(arg, i);
  return v->dup_of >= 0 || (v->dup_some && v->ops->dup_for(v, req));
}

static void t_defer_release(void *arg, unsigned i, const char *cmd, size_t len) {
  voter_t *v = voter_at(arg, i);
  v->ops->defer_release(v, cmd, len);
}

static void t_warn(void *arg, unsigned i, const char *what, const char *detail) {
  voter_t *v = voter_at(arg, i);
  v->ops->warn(v, what, detail);
}

static const char *t_label(void *arg, unsigned i) {
  voter_t *v = voter_at(arg, i);
  return v->ops->label(v);
}

const round_transport_t voters_transport = {
    .send = t_send,
    .queued = t_queued,
    .cancel = t_cancel,
    .progress_ns = t_progress_ns,
    .quarantined = t_quarantined,
    .duplicate = t_duplicate,
    .defer_release = t_defer_release,
    .warn = t_warn,
    .label = t_label,
};

/* ---- duplicates ---------------------------------------------------------------------- */

/* One server listed twice, whatever its spellings and the voters' kinds:
 * judged again whenever a voter learns a new server (a connection comes up:
 * a new address, perhaps a new run_id after a restart, a Sentinel voter's
 * new master, a cluster voter's primary) or loses one (`leaving`, still up
 * while it reports).  The rule (safety.md §9): a server of voter b is a
 * duplicate when it is one of the servers some lower-numbered voter a uses
 * now (node_same_server: resolved address, socket path or run_id), whatever
 * a's own verdicts.  A one-server voter (standalone, Sentinel) that is one
 * is no voter (dup_of); a cluster voter marks that primary (server_dup) and
 * the rounds judge each request by the primary it goes to (dup_for): round.c
 * sends a duplicate no acquisition and counts none of its answers.  A
 * cluster voter also learns which of its primaries any other voter uses,
 * higher-numbered too (`shared`): an acquisition it would write there after
 * the round was sent (parked for a connection that came up, redirected) is
 * held back, since the other voter may have counted that server's answer in
 * this round already.  Logged at WARN once per pair of voters. */

/* 1 when voter a uses a server (not `leaving`) that is the same as nb; `how`
 * says why and `which` names a's server when a is a kind of many. */
static int uses_server(const voter_t *a, const node_t *nb, const node_t *leaving, char *how,
                       size_t how_len, const node_t **which) {
  unsigned n = a->ops->servers(a);
  for (unsigned k = 0; k < n; k++) {
    const node_t *na = a->ops->server(a, k);
    if (na != NULL && na != leaving && na != nb && node_same_server(na, nb, how, how_len)) {
      *which = na;
      return 1;
    }
  }
  return 0;
}

/* The voter other than j that uses nb's server, lower-numbered ones first
 * (only those when `lower_only`), or -1; its verdict text in why.  A pair
 * whose lower voter is found is logged once. */
static int dup_verdict(voters_t *vs, unsigned j, const node_t *nb, const voter_t *leaving_voter,
                       const node_t *leaving, int lower_only, char *why, size_t why_len) {
  voter_t *b = vs->voter[j];
  for (unsigned i = 0; i < (lower_only ? j : vs->n); i++) {
    const voter_t *a = vs->voter[i];
    const node_t *na = NULL;
    char how[96];
    if (i == j || a == leaving_voter || !uses_server(a, nb, leaving, how, sizeof how, &na))
      continue;
    const char *la = a->ops->label(a), *lb = b->ops->label(b);
    int a_many = a->ops->server_dup != NULL, b_many = b->ops->server_dup != NULL;
    /* "same server as [primary P of ]A[, via primary Q]": which of a's
     * servers, and which of b's, when either has many. */
    snprintf(why, why_len, "same server as %s%s%s%s%s%s", a_many ? "primary " : "",
             a_many ? na->addr.label : "", a_many ? " of " : "", la, b_many ? ", via primary " : "",
             b_many ? nb->addr.label : "");
    if (i < j && !(b->dup_warned >> i & 1)) {
      b->dup_warned |= (uint64_t)1 << i;
      log_write(vs->log, REDLOCK_LOG_WARN,
                "masters %s and %s are one server (%s%s%s%s%s): while both are up only %s "
                "votes there, and %s counts as a master that never answers (list each master "
                "once: Redlock needs independent masters)",
                la, lb, how, a_many ? ", " : "", a_many ? na->addr.label : "", b_many ? ", " : "",
                b_many ? nb->addr.label : "", la, lb);
    }
    return (int)i;
  }
  return -1;
}

static void judge_duplicates(voters_t *vs, const voter_t *leaving_voter, const node_t *leaving) {
  for (unsigned j = 0; j < vs->n; j++) {
    voter_t *b = vs->voter[j];
    unsigned n = b->ops->servers(b);
    int many = b->ops->server_dup != NULL;
    b->dup_of = -1;
    b->dup_some = 0;
    for (unsigned k = 0; k < n; k++) {
      const node_t *nb = b == leaving_voter ? NULL : b->ops->server(b, k);
      char why[VOTER_WHY_LEN];
      int other = nb != NULL && nb != leaving
                      ? dup_verdict(vs, j, nb, leaving_voter, leaving, !many, why, sizeof why)
                      : -1;
      if (many) {
        b->ops->server_dup(b, k, other >= 0 && (unsigned)other < j ? other : -1, other,
                           other >= 0 ? why : "");
        b->dup_some |= other >= 0;
      } else if (other >= 0) {
        b->dup_of = other;
        memcpy(b->dup_why, why, sizeof b->dup_why);
      }
    }
  }
}

/* ---- what the voters report ---------------------------------------------------------- */

static void voter_started(voters_t *vs) {
  if (vs->startup_left == 0 || --vs->startup_left > 0)
    return;
  vs->hooks.started(vs->hooks.arg);
}

/* voter_t.report of every voter of the set. */
static void on_voter(void *arg, voter_t *v, const voter_news_t *news) {
  voters_t *vs = arg;
  switch (news->ev) {
  case VOTER_EV_UP: {
    judge_duplicates(vs, NULL, NULL);
    voter_news_t up = *news;
    up.duplicate_why = v->dup_of >= 0 ? v->dup_why : NULL;
    vs->hooks.news(vs->hooks.arg, v->index, &up);
    break;
  }
  case VOTER_EV_DOWN:
    if (news->was_up)
      judge_duplicates(vs, v, NULL);
    vs->hooks.news(vs->hooks.arg, v->index, news);
    break;
  case VOTER_EV_CONNECTING:
  case VOTER_EV_TLS_FAILURE:
  case VOTER_EV_QUARANTINE_END:
    vs->hooks.news(vs->hooks.arg, v->index, news);
    break;
  case VOTER_EV_STARTED:
    voter_started(vs);
    break;
  case VOTER_EV_REPLAYS_DUE:
    vs->hooks.arm(vs->hooks.arg, news->due_ns);
    break;
  case VOTER_EV_SETTLED:
    vs->hooks.settled(vs->hooks.arg);
    break;
  case VOTER_EV_SERVERS:
    judge_duplicates(vs, NULL, news->leaving);
    break;
  case VOTER_EV_CLOSED:
    if (vs->open > 0 && --vs->open == 0)
      vs->hooks.closed(vs->hooks.arg);
    break;
  }
}

/* ---- life ---------------------------------------------------------------------------- */

/* Voter i of the kind its URI names (the one place that tells kinds
 * apart), with its master's node in vs->nodes[i].  0, or an error (the
 * voter, when made, is in vs->voter[i] for voters_free). */
static status_t voter_make(voters_t *vs, unsigned i, const node_addr_t *addr) {
  switch (addr->voter) {
  case VOTER_KIND_STANDALONE:
    if (node_init(&vs->nodes[i], &vs->node_env, i, addr) != ST_OK)
      return ST_ENOMEM;
    voter_standalone_init(&vs->standalone[i], &vs->nodes[i]);
    vs->voter[i] = &vs->standalone[i].base;
    return ST_OK;
  case VOTER_KIND_SENTINEL: {
    voter_sentinel_t *s = NULL;
    status_t rc = voter_sentinel_new(&s, &vs->node_env, &vs->nodes[i], i, addr);
    if (s != NULL)
      vs->voter[i] = &s->base;
    return rc;
  }
  case VOTER_KIND_CLUSTER: {
    voter_cluster_t *c = NULL;
    status_t rc = voter_cluster_new(&c, &vs->node_env, &vs->nodes[i], i, addr);
    if (c != NULL)
      vs->voter[i] = &c->base;
    return rc;
  }
  }
  return ST_ENOTSUP;
}

status_t voters_init(voters_t *vs, const voters_config_t *cfg, const voters_hooks_t *hooks,
                     const node_addr_t *addrs, unsigned n, voter_t *const *fakes) {
  memset(vs, 0, sizeof *vs);
  vs->n = n;
  for (unsigned i = 0; i < n; i++)
    vs->has_cluster |= addrs[i].voter == VOTER_KIND_CLUSTER;
  vs->hooks = *hooks;
  vs->log = cfg->log;
  vs->node_env = (node_env_t){
      .tb = cfg->tb,
      .flusher = cfg->flusher,
      .tls = cfg->tls,
      .log = cfg->log,
      .rng = cfg->rng,
      .mutex = cfg->mutex,
      .connect_timeout_ms = cfg->connect_timeout_ms,
      .request_timeout_ms = cfg->request_timeout_ms,
      .max_ttl_ms = cfg->max_ttl_ms,
      .quarantine = cfg->quarantine,
      .state_dir = cfg->state_dir,
      .allow = cfg->allow,
      .n_allow = cfg->n_allow,
      .caps_seen = &vs->caps_seen,
      .report = voter_standalone_on_node,
  };
  vs->voter = rl_calloc(n, sizeof *vs->voter);
  vs->nodes = rl_calloc(n, sizeof *vs->nodes);
  if (fakes == NULL)
    vs->standalone = rl_calloc(n, sizeof *vs->standalone);
  if (vs->voter == NULL || vs->nodes == NULL || (fakes == NULL && vs->standalone == NULL))
    return ST_ENOMEM;
  vs->node_env.arg = vs->standalone;
  for (unsigned i = 0; i < n; i++) {
    status_t rc = fakes == NULL ? voter_make(vs, i, &addrs[i])
                                : node_init(&vs->nodes[i], &vs->node_env, i, &addrs[i]);
    if (rc != ST_OK)
      return rc;
    if (fakes != NULL)
      vs->voter[i] = fakes[i];
    vs->voter[i]->report = on_voter;
    vs->voter[i]->report_arg = vs;
  }
  vs->startup_left = fakes == NULL ? n : 0;
  return ST_OK;
}

void voters_set_loop(voters_t *vs, uv_loop_t *loop) { vs->node_env.loop = loop; }

void voters_set_stats(voters_t *vs, struct stats *stats) {
  for (unsigned i = 0; i < vs->n; i++)
    vs->nodes[i].stats = stats;
}

/* notify_t.via: the node voter i's subscriber follows. */
static const node_t *sub_via(void *arg, unsigned i) {
  voters_t *vs = arg;
  const voter_t *v = vs->voter != NULL ? vs->voter[i] : NULL;
  return v == NULL ? NULL : v->ops->sub_node != NULL ? v->ops->sub_node(v) : NULL;
}

/* notify_t.shard_via: whether voter i announces on shard channels, and where. */
static int sub_shard_via(void *arg, unsigned i, int slot, const node_t **node) {
  voters_t *vs = arg;
  const voter_t *v = vs->voter != NULL ? vs->voter[i] : NULL;
  *node = NULL;
  return v != NULL && v->ops->sub_shard != NULL ? v->ops->sub_shard(v, slot, node) : 0;
}

/* notify_t.shard_refused: voter i's shard subscription got an error reply. */
static void sub_shard_refused(void *arg, unsigned i, const char *error, size_t len) {
  voters_t *vs = arg;
  voter_t *v = vs->voter != NULL ? vs->voter[i] : NULL;
  if (v != NULL && v->ops->sub_refused != NULL)
    v->ops->sub_refused(v, error, len);
}

void voters_notify_init(voters_t *vs, notify_t *notify, void (*wake)(void *arg, notify_waiter_t *w),
                        void *arg) {
  notify_init(notify, &vs->node_env, vs->nodes, vs->n, wake, arg);
  notify->via = sub_via;
  notify->shard_via = sub_shard_via;
  notify->shard_refused = sub_shard_refused;
  notify->via_arg = vs;
}

void voters_start(voters_t *vs) {
  for (unsigned i = 0; i < vs->n; i++)
    vs->voter[i]->ops->start(vs->voter[i]);
}

int voters_started(const voters_t *vs) { return vs->startup_left == 0; }

uint64_t voters_tick(voters_t *vs, void (*fire)(void *arg), void *arg) {
  /* Timers run before the loop reads sockets: replies that arrived in time
   * may be waiting unread, above all when this thread was slow to run. */
  for (unsigned i = 0; i < vs->n; i++)
    vs->voter[i]->ops->catch_up(vs->voter[i]);
  fire(arg);
  /* Hung connections are dropped after the deadlines: dropping runs the
   * NULL callbacks of their requests, which may free rounds.  Replies that
   * came in during a long walk are read first, so that only a silent
   * master is blamed.  Replayed releases are in no round: their voter is
   * judged again when it would be hung, or close could wait forever for a
   * silent one. */
  uint64_t due_ns = 0;
  for (unsigned i = 0; i < vs->n; i++) {
    uint64_t due = vs->voter[i]->ops->tick(vs->voter[i]);
    if (due != 0 && (due_ns == 0 || due < due_ns))
      due_ns = due;
  }
  return due_ns;
}

unsigned voters_releases_owed(const voters_t *vs, unsigned i) {
  return vs->voter[i]->ops->releases_owed(vs->voter[i]);
}

int voters_owe_releases(const voters_t *vs) {
  for (unsigned i = 0; i < vs->n; i++)
    if (vs->voter[i]->ops->owes_releases(vs->voter[i]))
      return 1;
  return 0;
}

void voters_abandon(voters_t *vs) {
  for (unsigned i = 0; i < vs->n; i++)
    vs->voter[i]->ops->abandon(vs->voter[i]);
}

void voters_shutdown(voters_t *vs) {
  vs->open = vs->n;
  for (unsigned i = 0; i < vs->n; i++)
    vs->voter[i]->ops->shutdown(vs->voter[i]);
}

void voters_free(voters_t *vs) {
  for (unsigned i = 0; vs->voter != NULL && i < vs->n; i++)
    if (vs->voter[i] != NULL)
      vs->voter[i]->ops->free(vs->voter[i]);
  /* A failed open may free voters whose arrays it could not allocate, or
   * nodes it never reached with node_init (node_free copes). */
  for (unsigned i = 0; vs->nodes != NULL && i < vs->n; i++)
    node_free(&vs->nodes[i]);
  rl_free(vs->nodes);
  rl_free(vs->standalone);
  rl_free(vs->voter);
  memset(vs, 0, sizeof *vs);
}

int voters_route_by_slot(const voters_t *vs) {
  for (unsigned i = 0; i < vs->n; i++) {
    const voter_ops_t *ops = vs->voter[i]->ops;
    if (ops != &voter_standalone_ops && ops != &voter_sentinel_ops)
      return 1;
  }
  return 0;
}

/* ---- labels and the votes book ------------------------------------------------------- */

const char *voters_label(const voters_t *vs, unsigned i) {
  return vs->voter[i]->ops->label(vs->voter[i]);
}

void voters_why_asked(const voters_t *vs, unsigned i, int why, const node_req_t *req, char *buf,
                      size_t size) {
  const voter_t *v = vs->voter[i];
  if (why == WHY_DUPLICATE && v->ops->server_dup == NULL) {
    snprintf(buf, size, "%s", v->dup_why);
    return;
  }
  v->ops->why(v, why, req, buf, size);
}
