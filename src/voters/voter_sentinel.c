/* voter_sentinel.c: the master of a Sentinel group as one voter (see
 * voter_sentinel.h).
 *
 *   start ──► ask ──► answer ──► node at the master (node_retarget, node_start)
 *              ▲        │ none: next sentinel; after all of them, "no sentinel
 *              │        │ answered" / "sentinels know no master named X"
 *              └────────┴── +switch-master, events link up, node down,
 *                           -READONLY / -LOADING */
#include "voters/voter_sentinel.h"

#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/reply.h"
#include "redlock.h"
#include "util/alloc.h"
#include "util/strutil.h"
#include "util/why.h"

#define SWITCH_CHANNEL "+switch-master"

static void ask_start(voter_sentinel_t *s);

static voter_sentinel_t *of(voter_t *v) { return (voter_sentinel_t *)v; }
static const voter_sentinel_t *of_c(const voter_t *v) { return (const voter_sentinel_t *)v; }

static const char *name_of(const voter_sentinel_t *s) { return s->addr.master_name; }

/* Points a link's address at seed k (its strings are the URI's). */
static void at_seed(voter_sentinel_t *s, node_addr_t *a, char *label, size_t size, unsigned k) {
  const uri_seed_t *seed = &s->addr.seeds[k];
  a->host = seed->host;
  a->port = seed->port;
  sentinel_host_port(label, size, seed->host, seed->port);
}

/* The voter's first attempt is over (once): the client's start-up counts it. */
static void said_started(voter_sentinel_t *s) {
  if (s->started_said)
    return;
  s->started_said = 1;
  voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_STARTED});
}

static void closed_one(voter_sentinel_t *s) {
  if (s->open > 0 && --s->open == 0)
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_CLOSED});
}

/* ---- the answer ---------------------------------------------------------------------- */

/* The hint for the quarantine (docs/safety.md §5b): the sentinel that named
 * the master says it has been one for role-reported-time ms, which it
 * measured before we read our clock at now_ns.  A millisecond off for the
 * sentinel's truncation to whole ms.  Only when that sentinel's record is
 * of this very address and sound (sentinel_master_t.settled).  Its run_id
 * is the one the sentinel last read (none for a while after a failover, until
 * its next INFO): the quarantine judgement ignores a hint that names
 * another run_id, or a role older than the server. */
static void set_hint(voter_sentinel_t *s, const sentinel_master_t *m, uint64_t now_ns) {
  uint64_t age_ns = m != NULL && m->role_age_ms >= 2 ? (m->role_age_ms - 1) * 1000000u : 0;
  const char *unusable = m == NULL     ? "no SENTINEL MASTER answer"
                         : !m->settled ? "not a settled master to it"
                         : strcmp(m->ip, s->answer_host) != 0 || m->port != s->answer_port
                             ? "another address"
                         : age_ns == 0 || age_ns >= now_ns ? "too short a time"
                                                           : NULL;
  if (unusable != NULL) {
    log_write(s->env.log, REDLOCK_LOG_DEBUG,
              "master %s: sentinel %s does not say since when the master is one (%s)",
              s->addr.label, s->query_label, unusable);
    node_hint(s->node, NULL, 0);
    return;
  }
  log_write(s->env.log, REDLOCK_LOG_DEBUG,
            "master %s: sentinel %s says the master has been one for %llu ms", s->addr.label,
            s->query_label, (unsigned long long)m->role_age_ms);
  node_hint(s->node, m->run_id, now_ns - age_ns);
}

/* A sentinel named a master outside the allowed host patterns
 * (redlock_options_allow_discovered): no connection goes there, so that
 * neither the credentials nor a vote do.  The voter is down until a
 * sentinel names an allowed one; a master it followed before stays its
 * node (a demoted one answers as a replica, and is down for that). */
static void refuse_master(voter_sentinel_t *s, const char *master) {
  char full[VOTER_SENTINEL_MASTER_LEN + VOTER_SENTINEL_LABEL_LEN + 64], why[VOTER_WHY_LEN];
  snprintf(full, sizeof full, "discovered address %s not allowed (named by sentinel %s)", master,
           s->query_label);
  size_t len = strnlen(full, sizeof why - 1); /* cut to the votes' detail */
  memcpy(why, full, len);
  why[len] = '\0';
  int again = strcmp(why, s->refused) == 0;
  log_write(s->env.log, again ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_WARN,
            "master %s: %s: no host pattern of redlock_options_allow_discovered matches it",
            s->addr.label, full);
  uv_mutex_lock(s->env.mutex);
  memcpy(s->refused, why, sizeof why);
  memcpy(s->why, why, sizeof why);
  uv_mutex_unlock(s->env.mutex);
  if (!s->known) {
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_DOWN, .what = why});
    said_started(s);
  }
}

/* A sentinel named the master: the node goes there. */
static void ask_answered(voter_sentinel_t *s, const sentinel_master_t *m, uint64_t now_ns) {
  s->asking = 0;
  s->ask_tries = 0;
  s->ask_unknown = 0;
  s->ask_errs[0] = '\0';
  s->last_cycle_why[0] = '\0';
  char master[VOTER_SENTINEL_MASTER_LEN];
  char why[VOTER_SENTINEL_MASTER_LEN + VOTER_SENTINEL_LABEL_LEN + 32];
  sentinel_host_port(master, sizeof master, s->answer_host, s->answer_port);
  int moved = s->known && strcmp(master, s->master_label) != 0;
  int there = 1; /* the node is at the address named */
  int allowed = str_host_allowed(s->answer_host, s->env.allow, s->env.n_allow);
  if (allowed && s->refused[0] != '\0') {
    /* Named again where it was (a refused move undone), or anew below. */
    uv_mutex_lock(s->env.mutex);
    s->refused[0] = '\0';
    uv_mutex_unlock(s->env.mutex);
  }
  if ((!s->known || moved) && !allowed) {
    refuse_master(s, master);
    there = 0;
  } else if (!s->known || moved) {
    snprintf(why, sizeof why, "sentinel %s names %s as the master", s->query_label, master);
    s->retargeting = 1;
    status_t rc = node_retarget(s->node, s->answer_host, s->answer_port, why);
    s->retargeting = 0;
    if (rc != ST_OK) {
      there = 0;
      log_write(s->env.log, REDLOCK_LOG_ERROR,
                "master %s: cannot follow the sentinels to %s: out of memory", s->addr.label,
                master);
    } else {
      log_write(s->env.log, moved ? REDLOCK_LOG_WARN : REDLOCK_LOG_INFO,
                "master %s: sentinel %s names %s as the master of '%s'%s%s%s", s->addr.label,
                s->query_label, master, name_of(s), moved ? " (was " : "",
                moved ? s->master_label : "", moved ? ")" : "");
      if (moved)
        log_write(s->env.log, REDLOCK_LOG_WARN, "master %s: failover: following it to %s",
                  s->addr.label, master);
      uv_mutex_lock(s->env.mutex);
      memcpy(s->master_label, master, sizeof master);
      s->why[0] = '\0';
      uv_mutex_unlock(s->env.mutex);
      s->known = 1;
    }
  }
  /* After the retarget, whose DOWN forgets the old server's hint; before
   * any handshake at the new address.  (Never for another address.) */
  if (there)
    set_hint(s, m, now_ns);
  else
    node_hint(s->node, NULL, 0);
  if (s->known && !s->node_started) {
    s->node_started = 1;
    node_start(s->node);
  }
  if (s->ask_again && !s->closing) {
    s->ask_again = 0;
    ask_start(s);
  }
}

/* Every sentinel of this round failed to name the master. */
static void ask_round_failed(voter_sentinel_t *s) {
  char why[VOTER_WHY_LEN];
  if (s->ask_unknown == s->addr.n_seeds)
    snprintf(why, sizeof why, "sentinels know no master named '%s'", name_of(s));
  else
    snprintf(why, sizeof why, "no sentinel answered: %.*s",
             (int)(sizeof why - sizeof "no sentinel answered: "), s->ask_errs);
  int level = strcmp(why, s->last_cycle_why) != 0 ? REDLOCK_LOG_WARN : REDLOCK_LOG_DEBUG;
  memcpy(s->last_cycle_why, why, sizeof why);
  log_write(s->env.log, level, "master %s: %s%s", s->addr.label, why,
            s->known ? "" : " (it cannot vote until one does)");
  s->ask_tries = 0;
  s->ask_unknown = 0;
  s->ask_errs[0] = '\0';
  if (!s->known) {
    uv_mutex_lock(s->env.mutex);
    memcpy(s->why, why, sizeof why);
    uv_mutex_unlock(s->env.mutex);
    voter_report(&s->base, &(voter_news_t){.ev = VOTER_EV_DOWN, .what = why});
    said_started(s);
    return; /* asking goes on, after the link's backoff */
  }
  if (s->node->state == NODE_READY) {
    /* The master we know is up: nothing to follow until the next news. */
    s->asking = 0;
    s->ask_again = 0;
  }
}

/* The current sentinel did not name the master (what, detail: why). */
static void ask_failed_here(voter_sentinel_t *s, const char *what, const char *detail) {
  size_t used = strlen(s->ask_errs);
  snprintf(s->ask_errs + used, sizeof s->ask_errs - used, "%s%s: %s%s%s", used > 0 ? "; " : "",
           s->query_label, what, detail != NULL ? ": " : "", detail != NULL ? detail : "");
  s->ask_tries++;
  s->ask_unknown += s->fail_unknown != 0;
  if (s->ask_tries >= s->addr.n_seeds)
    ask_round_failed(s);
}

/* ---- the query link ------------------------------------------------------------------ */

static int query_ours(const voter_sentinel_t *s, const redisAsyncContext *ac, const void *r) {
  return r != NULL && ac == s->query.ac && s->asking && s->ask_sent;
}

static void addr_cb(redisAsyncContext *ac, void *r, void *privdata) {
  voter_sentinel_t *s = privdata;
  if (!query_ours(s, ac, r))
    return;
  s->answer =
      sentinel_parse_addr(r, s->answer_host, &s->answer_port, s->fail_text, sizeof s->fail_text);
}

/* SENTINEL MASTER's reply, the second of the pair: the answer is complete. */
static void master_cb(redisAsyncContext *ac, void *r, void *privdata) {
  voter_sentinel_t *s = privdata;
  if (!query_ours(s, ac, r))
    return;
  s->ask_sent = 0;
  if (s->answer == SENTINEL_ADDR_KNOWN) {
    sentinel_master_t m;
    int have = sentinel_parse_master(r, &m) == ST_OK; /* (an ACL may refuse it: no hint then) */
    ask_answered(s, have ? &m : NULL, tb_now_ns(s->env.tb));
    return;
  }
  /* On to the next sentinel: this one's connection goes (its DOWN says why). */
  if (s->answer == SENTINEL_ADDR_UNKNOWN) {
    s->fail_unknown = 1;
    snprintf(s->fail_text, sizeof s->fail_text, "knows no master named '%s'", name_of(s));
  }
  link_fail(&s->query, REDLOCK_LOG_WARN, s->fail_text, NULL);
}

static void ask_send(voter_sentinel_t *s) {
  if (s->ask_sent || s->query.state != LINK_UP)
    return;
  redisAsyncContext *ac = s->query.ac;
  s->answer = SENTINEL_ADDR_BAD;
  snprintf(s->fail_text, sizeof s->fail_text, "no answer");
  s->fail_unknown = 0;
  if (redisAsyncCommand(ac, addr_cb, s, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", name_of(s)) !=
          REDIS_OK ||
      redisAsyncCommand(ac, master_cb, s, "SENTINEL MASTER %s", name_of(s)) != REDIS_OK) {
    link_fail(&s->query, REDLOCK_LOG_WARN, "cannot ask", "hiredis refused the command");
    return;
  }
  s->ask_sent = 1;
  (void)link_arm(&s->query, s->env.request_timeout_ms); /* the answer's deadline */
}

/* The query link connects, or asks at once when it is up. */
static void ask_go(voter_sentinel_t *s) {
  if (s->query.state == LINK_UP)
    ask_send(s);
  else if (link_idle(&s->query))
    link_connect(&s->query);
  /* else an attempt, or the backoff before one, is under way: UP asks */
}

static void ask_start(voter_sentinel_t *s) {
  if (s->closing || !s->query.attached)
    return;
  if (s->asking) {
    s->ask_again |= s->ask_sent; /* an answer on its way may predate the news */
    return;
  }
  s->asking = 1;
  s->ask_again = 0;
  s->ask_tries = 0;
  s->ask_unknown = 0;
  s->ask_errs[0] = '\0';
  ask_go(s);
}

/* A sentinel up, with nothing sent: PING makes the handshake end with a
 * reply even when there is no AUTH. */
static status_t query_handshake(link_t *link, void *arg) {
  (void)arg;
  return link_step(link, "PING", NULL, "PING");
}

static int query_want_retry(void *arg) {
  voter_sentinel_t *s = arg;
  return !s->closing && s->asking;
}

static void query_on_link(void *arg, link_t *link, link_event_t ev, int level, const char *what,
                          const char *detail) {
  voter_sentinel_t *s = arg;
  (void)level;
  switch (ev) {
  case LINK_EV_UP:
    if (s->asking)
      ask_send(s);
    break;
  case LINK_EV_DOWN: {
    int was_out = s->asking;
    s->ask_sent = 0;
    log_write(s->env.log, link->failures == 0 ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
              "master %s: sentinel %s: %s%s%s", s->addr.label, s->query_label, what,
              detail != NULL ? ": " : "", detail != NULL ? detail : "");
    if (was_out)
      ask_failed_here(s, what, detail);
    s->fail_unknown = 0;
    /* The next attempt goes to the next sentinel. */
    s->query_at = (s->query_at + 1) % s->addr.n_seeds;
    at_seed(s, &s->query_addr, s->query_label, sizeof s->query_label, s->query_at);
    link_forget_lookup(link);
    break;
  }
  case LINK_EV_TIMER:
    if (s->ask_sent) {
      char detail_buf[64];
      snprintf(detail_buf, sizeof detail_buf, "no answer within %u ms", s->env.request_timeout_ms);
      link_fail(link, REDLOCK_LOG_WARN, "not answering", detail_buf);
    }
    break;
  case LINK_EV_CLOSED:
    closed_one(s);
    break;
  case LINK_EV_CONNECTING:
  case LINK_EV_RETRY:
  case LINK_EV_TLS_FAILURE:
    break;
  }
}

/* ---- the events link (+switch-master) ------------------------------------------------- */

static void events_cb(redisAsyncContext *ac, void *r, void *privdata) {
  voter_sentinel_t *s = privdata;
  const redisReply *reply = r;
  const char *channel, *payload;
  size_t channel_len, payload_len;
  if (reply == NULL || ac != s->events.ac)
    return;
  pubsub_kind_t kind = reply_pubsub(reply, &channel, &channel_len);
  if (kind == PUBSUB_OTHER)
    return;
  link_replied(&s->events);
  if (kind != PUBSUB_MESSAGE || !reply_pubsub_payload(reply, &payload, &payload_len))
    return;
  char host[SENTINEL_HOST_LEN], to[VOTER_SENTINEL_MASTER_LEN];
  int port, ours = 0;
  if (sentinel_parse_switch(payload, payload_len, name_of(s), host, &port, &ours) != ST_OK || !ours)
    return;
  sentinel_host_port(to, sizeof to, host, port);
  log_write(s->env.log, REDLOCK_LOG_INFO, "master %s: sentinel %s: +switch-master to %s",
            s->addr.label, s->events_label, to);
  ask_start(s);
}

static status_t events_handshake(link_t *link, void *arg) {
  return redisAsyncCommand(link->ac, events_cb, arg, "SUBSCRIBE %s", SWITCH_CHANNEL) == REDIS_OK
             ? ST_OK
             : ST_EIO;
}

static int events_want_retry(void *arg) { return !((voter_sentinel_t *)arg)->closing; }

static void events_on_link(void *arg, link_t *link, link_event_t ev, int level, const char *what,
                           const char *detail) {
  voter_sentinel_t *s = arg;
  (void)level;
  switch (ev) {
  case LINK_EV_UP:
    /* A switch may have come while no sentinel told us: ask. */
    log_write(s->env.log, REDLOCK_LOG_DEBUG, "master %s: sentinel %s: following its failovers",
              s->addr.label, s->events_label);
    ask_start(s);
    break;
  case LINK_EV_DOWN:
    log_write(s->env.log, link->failures == 0 ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
              "master %s: sentinel %s: failover news unavailable (%s%s%s)", s->addr.label,
              s->events_label, what, detail != NULL ? ": " : "", detail != NULL ? detail : "");
    s->events_at = (s->events_at + 1) % s->addr.n_seeds;
    at_seed(s, &s->events_addr, s->events_label, sizeof s->events_label, s->events_at);
    link_forget_lookup(link);
    break;
  case LINK_EV_CLOSED:
    closed_one(s);
    break;
  default:
    break;
  }
}

/* ---- the node's news ------------------------------------------------------------------ */

static void on_node(void *arg, node_t *node, node_event_t ev, const char *what,
                    const char *detail) {
  voter_sentinel_t *s = arg;
  voter_news_t news = {.ev = (voter_event_t)ev};
  switch (ev) {
  case NODE_EV_UP:
  case NODE_EV_QUARANTINE_END:
    news.ready_ns = node->ready_ns;
    news.quarantine_until_ns = node->server.quarantine.until_ns;
    /* For this voter a move is a failover (as its votes say). */
    news.quarantine_name =
        quarantine_state_name(&node->server.quarantine, QUARANTINE_VIEW_MOVE_IS_FAILOVER);
    break;
  case NODE_EV_DOWN:
    news.what = what;
    news.detail = detail;
    news.was_up = node->state == NODE_READY;
    voter_report(&s->base, &news);
    if (s->retargeting)
      return;
    /* What the sentinels said of this server's role is old news now. */
    node_hint(node, NULL, 0);
    ask_start(s); /* lost, refused, or no master there: where is it now? */
    return;
  case NODE_EV_REPLAYS_DUE:
    news.due_ns = node_replays_due_ns(node);
    break;
  case NODE_EV_STARTED:
    said_started(s);
    return;
  case NODE_EV_CLOSED:
    closed_one(s);
    return;
  case NODE_EV_NOT_MASTER:
    log_write(s->env.log, REDLOCK_LOG_WARN, "master %s: %s (%s): asking the sentinels",
              s->addr.label, what, detail != NULL ? detail : "");
    ask_start(s);
    return;
  default:
    break;
  }
  voter_report(&s->base, &news);
}

/* ---- the ops ---------------------------------------------------------------------------- */

static status_t s_send(voter_t *v, node_req_t *req) { return node_send(of(v)->node, req); }

static int s_queued(voter_t *v, const node_req_t *req) {
  (void)v;
  return node_req_queued(req);
}

static void s_cancel(voter_t *v, node_req_t *req) {
  (void)v;
  node_cancel(req);
}

static uint64_t s_progress_ns(voter_t *v) { return of(v)->node->hung.progress_ns; }

static int s_quarantined(voter_t *v) { return node_quarantined_now(of(v)->node); }

static void s_defer_release(voter_t *v, const char *cmd, size_t len) {
  node_defer_release(of(v)->node, cmd, len);
}

static void s_warn(voter_t *v, const char *what, const char *detail) {
  node_warn(of(v)->node, what, detail);
}

static void s_start(voter_t *v) {
  voter_sentinel_t *s = of(v);
  s->env.loop = s->base_env->loop; /* given to voters.c after init */
  link_io_t io = {
      .loop = s->env.loop, .flusher = s->env.flusher, .tls = s->env.tls, .rng = s->env.rng};
  if (link_attach(&s->query, &io) != ST_OK) {
    /* Logged by the link.  Without a timer nothing can be asked. */
    uv_mutex_lock(s->env.mutex);
    snprintf(s->why, sizeof s->why, "cannot ask the sentinels: no timer");
    uv_mutex_unlock(s->env.mutex);
    voter_report(&s->base,
                 &(voter_news_t){.ev = VOTER_EV_DOWN, .what = "cannot ask the sentinels"});
    said_started(s);
    return;
  }
  ask_start(s);
  if (link_attach(&s->events, &io) == ST_OK)
    link_connect(&s->events); /* (without it, asks still follow the node's failures) */
}

static void s_catch_up(voter_t *v) {
  node_write_late(of(v)->node);
  node_read_pending(of(v)->node);
}

static uint64_t s_tick(voter_t *v) {
  node_t *node = of(v)->node;
  node_read_pending(node);
  node_drop_if_hung(node);
  return node_replays_due_ns(node);
}

static unsigned s_releases_owed(const voter_t *v) { return node_releases_owed(of_c(v)->node); }

static int s_owes_releases(const voter_t *v) { return node_owes_releases(of_c(v)->node); }

static void s_abandon(voter_t *v) {
  voter_sentinel_t *s = of(v);
  s->closing = 1;
  node_abandon(s->node);
  link_abandon(&s->query);
  link_abandon(&s->events);
}

static void s_shutdown(voter_t *v) {
  voter_sentinel_t *s = of(v);
  s->closing = 1;
  s->open = 3; /* the node and both links */
  node_shutdown(s->node);
  link_shutdown(&s->query);
  link_shutdown(&s->events);
}

/* The node is voters.c's (the notifier reads it too): it frees it. */
static void s_free(voter_t *v) {
  voter_sentinel_t *s = of(v);
  node_addr_clear(&s->addr);
  rl_free(s);
}

static unsigned s_servers(const voter_t *v) {
  (void)v;
  return 1;
}

/* The master the sentinels named, once connected (a failover's new master
 * comes up anew: its handshake's UP has it judged again). */
static const node_t *s_server(const voter_t *v, unsigned k) {
  const node_t *node = of_c(v)->node;
  (void)k;
  return node->state == NODE_READY ? node : NULL;
}

/* A failover's quarantine, or a move's (for this voter, a move is a
 * failover: the sentinels named another server), with the master's address. */
static void sentinel_quarantine_why(const voter_sentinel_t *s, char *buf, size_t size) {
  char left[NODE_DOWN_WHY_LEN];
  quarantine_why(&s->node->server.quarantine, QUARANTINE_VIEW_MOVE_IS_FAILOVER,
                 tb_now_ns(s->env.tb), left, sizeof left);
  if (left[0] == '\0')
    snprintf(buf, size, "%s", "");
  else
    snprintf(buf, size, "%s (master %s)", left, s->master_label);
}

static void s_why(const voter_t *v, int why, const node_req_t *req, char *buf, size_t size) {
  (void)req;
  const voter_sentinel_t *s = of_c(v);
  const node_t *node = s->node;
  if (why == WHY_DOWN && s->refused[0] != '\0') {
    snprintf(buf, size, "%s", s->refused);
  } else if (why == WHY_DOWN) {
    if (s->master_label[0] == '\0')
      snprintf(buf, size, "%s", s->why[0] != '\0' ? s->why : "asking the sentinels");
    else
      snprintf(buf, size, "master %s: %s", s->master_label,
               node->down_why[0] != '\0' ? node->down_why : "not connected yet");
  } else if (why == WHY_QUARANTINED) {
    sentinel_quarantine_why(s, buf, size);
  } else {
    node_why(node, why, buf, size);
  }
}

static const char *s_label(const voter_t *v) { return of_c(v)->addr.label; }

const voter_ops_t voter_sentinel_ops = {
    .kind = "sentinel",
    .send = s_send,
    .queued = s_queued,
    .cancel = s_cancel,
    .progress_ns = s_progress_ns,
    .quarantined = s_quarantined,
    .defer_release = s_defer_release,
    .warn = s_warn,
    .start = s_start,
    .catch_up = s_catch_up,
    .tick = s_tick,
    .releases_owed = s_releases_owed,
    .owes_releases = s_owes_releases,
    .abandon = s_abandon,
    .shutdown = s_shutdown,
    .free = s_free,
    .servers = s_servers,
    .server = s_server,
    .why = s_why,
    .why_trouble_only = 1,
    .label = s_label,
};

/* A link to the sentinels: their credentials, the URI's TLS, no SELECT. */
static void
sentinel_link_init(voter_sentinel_t *s, link_t *link, node_addr_t *a, char *label, const char *role,
                   status_t (*handshake)(link_t *, void *), int (*want_retry)(void *),
                   void (*event)(void *, link_t *, link_event_t, int, const char *, const char *)) {
  a->voter = VOTER_KIND_STANDALONE;
  a->kind = NODE_ADDR_TCP;
  a->user = s->addr.sentinel_user;
  a->password = s->addr.sentinel_password;
  a->tls = s->addr.tls;
  a->label = label;
  at_seed(s, a, label, VOTER_SENTINEL_LABEL_LEN, 0);
  link_init(link, &(link_cfg_t){
                      .addr = a,
                      .tb = s->env.tb,
                      .log = s->env.log,
                      .role = role,
                      .connect_timeout_ms = &s->env.connect_timeout_ms,
                      .backoff_base_ms = NODE_BACKOFF_BASE_MS,
                      .backoff_cap_ms = NODE_BACKOFF_CAP_MS,
                      .stable_ms = NODE_STABLE_MS,
                      .handshake = handshake,
                      .want_retry = want_retry,
                      .event = event,
                      .arg = s,
                  });
}

status_t voter_sentinel_new(voter_sentinel_t **out, const node_env_t *base_env, node_t *node,
                            unsigned index, const node_addr_t *addr) {
  voter_sentinel_t *s = rl_calloc(1, sizeof *s);
  *out = s;
  if (s == NULL)
    return ST_ENOMEM;
  voter_base_init(&s->base, &voter_sentinel_ops, index);
  s->node = node;
  s->base_env = base_env;
  s->env = *base_env;
  s->env.report = on_node;
  s->env.arg = s;
  if (node_addr_copy(&s->addr, addr) != ST_OK || s->addr.n_seeds == 0 ||
      node_init(node, &s->env, index, addr) != ST_OK)
    return ST_ENOMEM;
  node->acks.check_role = 1; /* node.h: a failover or REPLICAOF demotes it without a disconnect */
  sentinel_link_init(s, &s->query, &s->query_addr, s->query_label, "sentinel", query_handshake,
                     query_want_retry, query_on_link);
  sentinel_link_init(s, &s->events, &s->events_addr, s->events_label, "sentinel", events_handshake,
                     events_want_retry, events_on_link);
  snprintf(s->why, sizeof s->why, "asking the sentinels");
  return ST_OK;
}
