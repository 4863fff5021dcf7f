/* voter_standalone.c: one master as a voter (see voter_standalone.h). */
#include "voters/voter_standalone.h"

#include <stdio.h>
#include <string.h>

#include "util/why.h"

/* A node's report is the voter's of the same name. */
_Static_assert(VOTER_EV_CONNECTING == (int)NODE_EV_CONNECTING && VOTER_EV_UP == (int)NODE_EV_UP &&
                   VOTER_EV_DOWN == (int)NODE_EV_DOWN &&
                   VOTER_EV_TLS_FAILURE == (int)NODE_EV_TLS_FAILURE &&
                   VOTER_EV_QUARANTINE_END == (int)NODE_EV_QUARANTINE_END &&
                   VOTER_EV_STARTED == (int)NODE_EV_STARTED &&
                   VOTER_EV_REPLAYS_DUE == (int)NODE_EV_REPLAYS_DUE &&
                   VOTER_EV_SETTLED == (int)NODE_EV_SETTLED &&
                   VOTER_EV_CLOSED == (int)NODE_EV_CLOSED,
               "voter and node events differ");

static node_t *node_of(const voter_t *v) { return ((const voter_standalone_t *)v)->node; }

static status_t s_send(voter_t *v, node_req_t *req) { return node_send(node_of(v), req); }

static int s_queued(voter_t *v, const node_req_t *req) {
  (void)v;
  return node_req_queued(req);
}

static void s_cancel(voter_t *v, node_req_t *req) {
  (void)v;
  node_cancel(req);
}

static uint64_t s_progress_ns(voter_t *v) { return node_of(v)->hung.progress_ns; }

static int s_quarantined(voter_t *v) { return node_quarantined_now(node_of(v)); }

static void s_defer_release(voter_t *v, const char *cmd, size_t len) {
  node_defer_release(node_of(v), cmd, len);
}

static void s_warn(voter_t *v, const char *what, const char *detail) {
  node_warn(node_of(v), what, detail);
}

static void s_start(voter_t *v) { node_start(node_of(v)); }

static void s_catch_up(voter_t *v) {
  node_write_late(node_of(v));
  node_read_pending(node_of(v));
}

static uint64_t s_tick(voter_t *v) {
  node_read_pending(node_of(v));
  node_drop_if_hung(node_of(v));
  return node_replays_due_ns(node_of(v));
}

static unsigned s_releases_owed(const voter_t *v) { return node_releases_owed(node_of(v)); }

static int s_owes_releases(const voter_t *v) { return node_owes_releases(node_of(v)); }

static void s_abandon(voter_t *v) { node_abandon(node_of(v)); }

static void s_shutdown(voter_t *v) { node_shutdown(node_of(v)); }

/* The node is voters.c's (the notifier reads it too): it frees it. */
static void s_free(voter_t *v) { (void)v; }

static unsigned s_servers(const voter_t *v) {
  (void)v;
  return 1;
}

/* Its master, once connected. */
static const node_t *s_server(const voter_t *v, unsigned k) {
  (void)k;
  return node_of(v)->state == NODE_READY ? node_of(v) : NULL;
}

static void s_why(const voter_t *v, int why, const node_req_t *req, char *buf, size_t size) {
  (void)req;
  node_why(node_of(v), why, buf, size);
}

static const char *s_label(const voter_t *v) { return node_of(v)->addr.label; }

const voter_ops_t voter_standalone_ops = {
    .kind = "standalone",
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

void voter_standalone_init(voter_standalone_t *s, node_t *node) {
  voter_base_init(&s->base, &voter_standalone_ops, node->index);
  s->node = node;
}

void voter_standalone_on_node(void *arg, node_t *node, node_event_t ev, const char *what,
                              const char *detail) {
  voter_standalone_t *s = &((voter_standalone_t *)arg)[node->index];
  if (ev == NODE_EV_NOT_MASTER)
    return; /* one address, one server: nowhere else to look */
  voter_news_t news = {.ev = (voter_event_t)ev};
  switch (ev) {
  case NODE_EV_UP:
  case NODE_EV_QUARANTINE_END:
    news.ready_ns = node->ready_ns;
    news.quarantine_until_ns = node->server.quarantine.until_ns;
    news.quarantine_name = quarantine_state_name(&node->server.quarantine, QUARANTINE_VIEW_AS_IS);
    break;
  case NODE_EV_DOWN:
    news.what = what;
    news.detail = detail;
    news.was_up = node->state == NODE_READY;
    break;
  case NODE_EV_REPLAYS_DUE:
    news.due_ns = node_replays_due_ns(node);
    break;
  default:
    break;
  }
  voter_report(&s->base, &news);
}
