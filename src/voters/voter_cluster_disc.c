/* voter_cluster_disc.c: the cluster voter's slot map, read from the seeds
 * (see voter_cluster_disc.h).
 *
 *   ask ──► link to seed k ──► CLUSTER SHARDS (or SLOTS) ──► map: report up
 *              ▲   next seed on failure
 *              └── every 10 s, when the link (re)connects; never sooner than
 *                  200 ms after the last map (the asks between: one read) */
#include "voters/voter_cluster_disc.h"

#include <hiredis/async.h>
#include <stdio.h>
#include <string.h>

#include "redlock.h"

void voter_cluster_host_port(char *buf, size_t size, const char *host, int port) {
  snprintf(buf, size, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
}

/* Every seed failed in a row. */
static void ask_round_failed(voter_cluster_disc_t *d) {
  char why[VOTER_WHY_LEN];
  snprintf(why, sizeof why, "no seed answered: %.*s",
           (int)(sizeof why - sizeof "no seed answered: "), d->ask_errs);
  d->ask_tries = 0;
  d->ask_errs[0] = '\0';
  d->cfg.report(d->cfg.arg, VOTER_CLUSTER_DISC_NO_SEED, NULL, why);
}

static void ask_failed_here(voter_cluster_disc_t *d, const char *what, const char *detail) {
  size_t used = strlen(d->ask_errs);
  snprintf(d->ask_errs + used, sizeof d->ask_errs - used, "%s%s: %s%s%s", used > 0 ? "; " : "",
           d->label, what, detail != NULL ? ": " : "", detail != NULL ? detail : "");
  if (++d->ask_tries >= d->cfg.uri->n_seeds)
    ask_round_failed(d);
}

static void ask_send(voter_cluster_disc_t *d);

static void map_cb(redisAsyncContext *ac, void *r, void *privdata) {
  voter_cluster_disc_t *d = privdata;
  const redisReply *reply = r;
  if (reply == NULL || ac != d->link.ac || !d->ask_sent || *d->cfg.closing)
    return;
  d->ask_sent = 0;
  if (!d->use_slots && reply->type == REDIS_REPLY_ERROR && reply->str != NULL &&
      (strstr(reply->str, "nknown subcommand") != NULL ||
       strstr(reply->str, "nknown command") != NULL)) {
    /* Older than Redis 7.0: the older command. */
    d->use_slots = 1;
    ask_send(d);
    return;
  }
  cluster_map_t fresh;
  cluster_map_init(&fresh);
  status_t st =
      d->use_slots
          ? cluster_map_parse_slots(&fresh, reply, d->addr.host, d->fail_text, sizeof d->fail_text)
          : cluster_map_parse_shards(&fresh, reply, d->addr.host, d->cfg.uri->tls, d->fail_text,
                                     sizeof d->fail_text);
  if (st == ST_OK && fresh.n_primaries == 0) {
    snprintf(d->fail_text, sizeof d->fail_text, "a slot map without a primary");
    st = ST_EINVAL;
  }
  if (st == ST_ENOMEM)
    snprintf(d->fail_text, sizeof d->fail_text, "out of memory reading the slot map");
  if (st != ST_OK) {
    cluster_map_clear(&fresh);
    link_fail(&d->link, REDLOCK_LOG_WARN, "unusable slot map", d->fail_text);
    return;
  }
  d->asking = 0;
  d->ask_tries = 0;
  d->ask_errs[0] = '\0';
  d->cfg.report(d->cfg.arg, VOTER_CLUSTER_DISC_MAP, &fresh, NULL);
  if (d->ask_again && !*d->cfg.closing) {
    d->ask_again = 0;
    voter_cluster_disc_ask(d);
    return;
  }
  (void)link_arm(&d->link, VOTER_CLUSTER_REFRESH_MS);
}

/* Sends the question now, or arms the link's timer for when the spacing
 * from the last map read is over (LINK_EV_TIMER sends it then): the news
 * that comes meanwhile is all answered by that one read. */
static void ask_send(voter_cluster_disc_t *d) {
  if (d->ask_sent || d->link.state != LINK_UP)
    return;
  uint64_t now = tb_now_ns(d->cfg.env->tb);
  uint64_t next = *d->cfg.map_ns + (uint64_t)VOTER_CLUSTER_MAP_SPACING_MS * 1000000u;
  if (*d->cfg.map_ns != 0 && now < next) {
    (void)link_arm(&d->link, (next - now + 999999u) / 1000000u);
    return;
  }
  const char *cmd = d->use_slots ? "CLUSTER SLOTS" : "CLUSTER SHARDS";
  if (redisAsyncCommand(d->link.ac, map_cb, d, cmd) != REDIS_OK) {
    link_fail(&d->link, REDLOCK_LOG_WARN, "cannot ask", "hiredis refused the command");
    return;
  }
  d->ask_sent = 1;
  (void)link_arm(&d->link, d->cfg.env->request_timeout_ms); /* the answer's deadline */
}

void voter_cluster_disc_ask(voter_cluster_disc_t *d) {
  if (*d->cfg.closing || !d->link.attached)
    return;
  if (d->asking) {
    d->ask_again |= d->ask_sent; /* the answer on its way may predate the news */
    return;
  }
  d->asking = 1;
  d->ask_again = 0;
  if (d->link.state == LINK_UP)
    ask_send(d);
  else if (link_idle(&d->link))
    link_connect(&d->link);
  /* else an attempt, or its backoff, is under way: UP asks */
}

/* A request found no primary for its slot: a primary failed and its
 * replica may be promoted by now.  The map is asked again (spaced as every
 * question, VOTER_CLUSTER_MAP_SPACING_MS after the last read), so that a
 * failover is followed in about that time, not at the slow refresh. */
void voter_cluster_disc_ask_uncovered(voter_cluster_disc_t *d) {
  if (d->asking || *d->cfg.closing)
    return;
  voter_cluster_disc_ask(d);
}

/* Points the discovery link at seed k (its strings are the URI's). */
static void at_seed(voter_cluster_disc_t *d, unsigned k) {
  const uri_seed_t *seed = &d->cfg.uri->seeds[k];
  d->addr.host = seed->host;
  d->addr.port = seed->port;
  voter_cluster_host_port(d->label, sizeof d->label, seed->host, seed->port);
}

static status_t disc_handshake(link_t *link, void *arg) {
  (void)arg;
  return link_step(link, "PING", NULL, "PING");
}

static int disc_want_retry(void *arg) { return !*((voter_cluster_disc_t *)arg)->cfg.closing; }

static void disc_on_link(void *arg, link_t *link, link_event_t ev, int level, const char *what,
                         const char *detail) {
  voter_cluster_disc_t *d = arg;
  (void)level;
  switch (ev) {
  case LINK_EV_UP:
    d->asking = 0; /* a fresh connection asks afresh */
    voter_cluster_disc_ask(d);
    break;
  case LINK_EV_DOWN:
    log_write(d->cfg.env->log, link->failures == 0 ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
              "cluster %s: seed %s: %s%s%s", d->cfg.uri->label, d->label, what,
              detail != NULL ? ": " : "", detail != NULL ? detail : "");
    d->ask_sent = 0;
    ask_failed_here(d, what, detail);
    d->at = (d->at + 1) % d->cfg.uri->n_seeds;
    at_seed(d, d->at);
    link_forget_lookup(link);
    break;
  case LINK_EV_TIMER:
    if (d->ask_sent) {
      char buf[64];
      snprintf(buf, sizeof buf, "no answer within %u ms", d->cfg.env->request_timeout_ms);
      link_fail(link, REDLOCK_LOG_WARN, "not answering", buf);
    } else if (d->asking) {
      ask_send(d); /* the spacing is over */
    } else {
      voter_cluster_disc_ask(d); /* the slow refresh */
    }
    break;
  case LINK_EV_TLS_FAILURE:
    d->cfg.report(d->cfg.arg, VOTER_CLUSTER_DISC_TLS_FAILURE, NULL, NULL);
    break;
  case LINK_EV_CLOSED:
    d->cfg.report(d->cfg.arg, VOTER_CLUSTER_DISC_CLOSED, NULL, NULL);
    break;
  case LINK_EV_CONNECTING:
  case LINK_EV_RETRY:
    break;
  }
}

void voter_cluster_disc_init(voter_cluster_disc_t *d, const voter_cluster_disc_cfg_t *cfg) {
  d->cfg = *cfg;
  const node_addr_t *uri = cfg->uri;
  /* The discovery link: the URI's credentials and TLS, no SELECT. */
  d->addr.voter = VOTER_KIND_STANDALONE;
  d->addr.kind = NODE_ADDR_TCP;
  d->addr.user = uri->user;
  d->addr.password = uri->password;
  d->addr.tls = uri->tls;
  d->addr.label = d->label;
  at_seed(d, 0);
  link_init(&d->link, &(link_cfg_t){
                          .addr = &d->addr,
                          .tb = cfg->env->tb,
                          .log = cfg->env->log,
                          .role = "cluster seed",
                          .connect_timeout_ms = &cfg->env->connect_timeout_ms,
                          .backoff_base_ms = NODE_BACKOFF_BASE_MS,
                          .backoff_cap_ms = NODE_BACKOFF_CAP_MS,
                          .stable_ms = NODE_STABLE_MS,
                          .reply_caps = &conn_caps_map, /* slot maps: conn.h */
                          .handshake = disc_handshake,
                          .want_retry = disc_want_retry,
                          .event = disc_on_link,
                          .arg = d,
                      });
}

status_t voter_cluster_disc_start(voter_cluster_disc_t *d, const link_io_t *io) {
  status_t st = link_attach(&d->link, io);
  if (st != ST_OK)
    return st;
  voter_cluster_disc_ask(d);
  return ST_OK;
}

void voter_cluster_disc_abandon(voter_cluster_disc_t *d) { link_abandon(&d->link); }

void voter_cluster_disc_shutdown(voter_cluster_disc_t *d) { link_shutdown(&d->link); }
