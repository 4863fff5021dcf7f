/* test_voters.c: the voter set (voters.c) and the standalone voter
 * (voter_standalone.c) made from addresses, against mock masters
 * (tests/support/mock_master.h) on the test's loop (node_fixture.h gives the
 * loop, clock, flusher, log and the first mock, A).
 *
 * Asserts:
 *  - two masters that are one server (the same run_id) are judged
 *    duplicates once both are up: the higher-numbered one is no voter (the
 *    transport says so, its "why" names the other, a WARN says it once),
 *    and when the lower one goes down the other votes again;
 *  - the rounds' transport reaches the standalone voter: a request sent
 *    goes out and comes back, one still queued can be cancelled (its
 *    callback never runs), the progress clock moves, warnings are logged
 *    with the master's label, and the "why" of each vote is the node's
 *    (down, busy, unacked, quarantined; nothing for the others);
 *  - a release kept for a master is replayed when it comes back: the
 *    voters ask to be ticked (arm), the tick reports when, and the reply
 *    settles it; abandon drops what is owed;
 *  - a master that never answers is dropped as hung by the tick;
 *  - a master that restarted recently is quarantined (UP says until when;
 *    QUARANTINE_END comes);
 *  - sentinel and cluster voters are made from their URIs (routing by slot
 *    only with a cluster), the notifier's hooks reach them, and a set never
 *    started frees cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "node_fixture.h"
#include "voters/voters.h"

#define VT_MAX_NEWS 256

typedef struct {
  unsigned index;
  voter_event_t ev;
  int was_up;
  int dup;
  uint64_t quarantine_until_ns;
} vt_news_t;

typedef struct {
  nf_t *f;
  mock_master_t *mocks[3]; /* [0] is f->mock */
  unsigned n;
  node_addr_t addrs[3];
  voters_t vs;
  int inited;
  int started, closed, settled;
  unsigned arms;
  uint64_t last_due_ns;
  vt_news_t news[VT_MAX_NEWS];
  unsigned n_news;
  uv_timer_t ticker; /* voters_tick every few ms while it runs */
  unsigned fired;
} vt_t;

static void h_started(void *arg) { ((vt_t *)arg)->started++; }

static void h_news(void *arg, unsigned index, const voter_news_t *news) {
  vt_t *t = arg;
  if (t->n_news == VT_MAX_NEWS)
    return;
  vt_news_t *n = &t->news[t->n_news++];
  n->index = index;
  n->ev = news->ev;
  n->was_up = news->was_up;
  n->dup = news->duplicate_why != NULL;
  n->quarantine_until_ns = news->quarantine_until_ns;
}

static void h_arm(void *arg, uint64_t due_ns) {
  vt_t *t = arg;
  t->arms++;
  t->last_due_ns = due_ns;
}

static void h_settled(void *arg) { ((vt_t *)arg)->settled++; }
static void h_closed(void *arg) { ((vt_t *)arg)->closed++; }

static unsigned vt_count(const vt_t *t, unsigned index, voter_event_t ev) {
  unsigned n = 0;
  for (unsigned i = 0; i < t->n_news; i++)
    n += t->news[i].index == index && t->news[i].ev == ev;
  return n;
}

static const vt_news_t *vt_last(const vt_t *t, unsigned index, voter_event_t ev) {
  for (unsigned i = t->n_news; i-- > 0;)
    if (t->news[i].index == index && t->news[i].ev == ev)
      return &t->news[i];
  fail_msg("voter %u never reported event %d", index, (int)ev);
  return NULL;
}

typedef struct {
  vt_t *t;
  unsigned index;
  voter_event_t ev;
  unsigned count;
} vt_wait_t;

static int saw_news(void *arg) {
  vt_wait_t *w = arg;
  return vt_count(w->t, w->index, w->ev) >= w->count;
}

static void vt_wait_news(vt_t *t, unsigned index, voter_event_t ev, unsigned count) {
  vt_wait_t w = {t, index, ev, count};
  if (!mock_run_until(&t->f->loop, saw_news, &w, NF_WAIT_MS))
    fail_msg("voter %u: event %d seen %u times, waited for %u; log:\n%s", index, (int)ev,
             vt_count(t, index, ev), count, t->f->logbuf);
}

/* Voters over `uris` (each "%d" the port of mock i; a mock made for each
 * "%d"), configured like the client would, not started. */
static vt_t *vt_make(nf_t *f, const char *const *uris, unsigned n, int quarantine,
                     uint32_t request_timeout_ms, uint32_t max_ttl_ms) {
  vt_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  t->f = f;
  t->n = n;
  for (unsigned i = 0; i < n; i++) {
    t->mocks[i] = i == 0 ? f->mock : mock_master_start(&f->loop);
    assert_non_null(t->mocks[i]);
    char uri[128], err[128];
    snprintf(uri, sizeof uri, uris[i], mock_master_port(t->mocks[i]));
    assert_int_equal(uri_parse(uri, &t->addrs[i], err, sizeof err), 0);
  }
  const voters_config_t cfg = {
      .tb = &f->tb,
      .flusher = &f->flusher,
      .log = &f->log,
      .rng = &f->rng,
      .mutex = &f->mutex,
      .connect_timeout_ms = NF_WAIT_MS,
      .request_timeout_ms = request_timeout_ms,
      .max_ttl_ms = max_ttl_ms,
      .quarantine = quarantine,
  };
  const voters_hooks_t hooks = {
      .started = h_started,
      .news = h_news,
      .arm = h_arm,
      .settled = h_settled,
      .closed = h_closed,
      .arg = t,
  };
  assert_int_equal(voters_init(&t->vs, &cfg, &hooks, t->addrs, n, NULL), 0);
  t->inited = 1;
  voters_set_loop(&t->vs, &f->loop);
  voters_set_stats(&t->vs, NULL);
  return t;
}

static int all_up(void *arg) {
  vt_t *t = arg;
  for (unsigned i = 0; i < t->n; i++)
    if (vt_count(t, i, VOTER_EV_UP) == 0)
      return 0;
  return t->started > 0;
}

static void vt_start(vt_t *t) {
  assert_false(voters_started(&t->vs));
  voters_start(&t->vs);
  if (!mock_run_until(&t->f->loop, all_up, t, NF_WAIT_MS))
    fail_msg("the voters did not all come up; log:\n%s", t->f->logbuf);
  assert_int_equal(t->started, 1);
  assert_true(voters_started(&t->vs));
}

static int is_closed(void *arg) { return ((vt_t *)arg)->closed > 0; }

static void vt_stop(vt_t *t) {
  voters_shutdown(&t->vs);
  if (!mock_run_until(&t->f->loop, is_closed, t, NF_WAIT_MS))
    fail_msg("the voters did not close; log:\n%s", t->f->logbuf);
  assert_int_equal(t->closed, 1);
  voters_free(&t->vs);
  for (unsigned i = 0; i < t->n; i++) {
    node_addr_clear(&t->addrs[i]);
    if (i > 0)
      mock_master_close(t->mocks[i]);
  }
  free(t);
}

static void fire_count(void *arg) { ((vt_t *)arg)->fired++; }

static void ticker_cb(uv_timer_t *timer) {
  vt_t *t = timer->data;
  (void)voters_tick(&t->vs, fire_count, t);
}

/* Runs voters_tick every 10 ms (the client's deadline timer, in short). */
static void vt_ticker_start(vt_t *t) {
  assert_int_equal(uv_timer_init(&t->f->loop, &t->ticker), 0);
  t->ticker.data = t;
  assert_int_equal(uv_timer_start(&t->ticker, ticker_cb, 10, 10), 0);
}

static void vt_ticker_stop(vt_t *t) { uv_close((uv_handle_t *)&t->ticker, NULL); }

/* A request through the rounds' transport, with what came back. */
typedef struct {
  node_req_t req; /* first */
  int done, got_reply;
  char *cmd;
} vt_req_t;

static void vt_req_fn(node_req_t *req, const redisReply *reply) {
  vt_req_t *r = (vt_req_t *)(void *)req;
  assert_false(r->done); /* exactly once */
  r->done = 1;
  r->got_reply = reply != NULL;
}

static void vt_req_prepare(vt_req_t *r, const char *fmt, const char *arg) {
  memset(r, 0, sizeof *r);
  int len = redisFormatCommand(&r->cmd, fmt, arg);
  assert_true(len > 0);
  r->req.cmd = r->cmd;
  r->req.len = (size_t)len;
  r->req.fn = vt_req_fn;
  r->req.slot = -1;
}

static int req_done(void *arg) { return ((vt_req_t *)arg)->done; }

static const char *why_of(vt_t *t, unsigned i, int why) {
  static char buf[VOTER_WHY_LEN];
  memset(buf, 'x', sizeof buf);
  uv_mutex_lock(&t->f->mutex);
  voters_why(&t->vs, i, why, NULL, buf, sizeof buf);
  uv_mutex_unlock(&t->f->mutex);
  return buf;
}

/* ---- duplicates ---------------------------------------------------------------------- */

static void test_duplicates_judged(void **state) {
  nf_t *f = *state;
  const char *uris[] = {"redis://127.0.0.1:%d", "redis://127.0.0.1:%d", "redis://127.0.0.1:%d"};
  vt_t *t = vt_make(f, uris, 3, 0, 60000, 30000);
  /* A and B are one server (one run_id); C another. */
  const char *same = "1111111111111111111111111111111111111111";
  mock_master_set_run_id(t->mocks[0], same);
  mock_master_set_run_id(t->mocks[1], same);
  mock_master_set_run_id(t->mocks[2], "2222222222222222222222222222222222222222");
  assert_int_equal(voters_route_by_slot(&t->vs), 0);
  vt_start(t);

  char la[32], lb[32], lc[32];
  snprintf(la, sizeof la, "127.0.0.1:%d", mock_master_port(t->mocks[0]));
  snprintf(lb, sizeof lb, "127.0.0.1:%d", mock_master_port(t->mocks[1]));
  snprintf(lc, sizeof lc, "127.0.0.1:%d", mock_master_port(t->mocks[2]));
  assert_string_equal(voters_label(&t->vs, 0), la);
  assert_string_equal(voters_transport.label(&t->vs, 1), lb);
  assert_string_equal(voters_label(&t->vs, 2), lc);

  /* B, the higher-numbered, is no voter while both are up; A and C are. */
  node_req_t unsent = {.slot = -1};
  assert_int_equal(voters_transport.duplicate(&t->vs, 0, &unsent), 0);
  assert_int_equal(voters_transport.duplicate(&t->vs, 1, &unsent), 1);
  assert_int_equal(voters_transport.duplicate(&t->vs, 2, &unsent), 0);
  char want[64];
  snprintf(want, sizeof want, "same server as %s", la);
  assert_string_equal(why_of(t, 1, WHY_DUPLICATE), want);
  assert_false(vt_last(t, 2, VOTER_EV_UP)->dup);
  char warn[160];
  snprintf(warn, sizeof warn, "masters %s and %s are one server (the same run_id %s)", la, lb,
           same);
  if (!nf_logged(f, warn))
    fail_msg("no duplicate warning; log:\n%s", f->logbuf);
  const char *first = strstr(f->logbuf, "are one server");
  assert_null(strstr(first + 1, "are one server")); /* once */

  /* A goes away (and stays away): B is a voter again. */
  mock_master_stop_listening(t->mocks[0]);
  mock_master_drop_all(t->mocks[0]);
  vt_wait_news(t, 0, VOTER_EV_DOWN, 1);
  const vt_news_t *down = vt_last(t, 0, VOTER_EV_DOWN);
  assert_true(down->was_up);
  assert_int_equal(voters_transport.duplicate(&t->vs, 1, &unsent), 0);
  assert_int_equal(t->vs.voter[1]->dup_of, -1);
  /* A's vote while down says why. */
  assert_true(strlen(why_of(t, 0, WHY_DOWN)) > 0);
  vt_stop(t);
}

/* ---- the transport's ops on a standalone voter --------------------------------------- */

static void test_transport_ops(void **state) {
  nf_t *f = *state;
  const char *uris[] = {"redis://127.0.0.1:%d"};
  vt_t *t = vt_make(f, uris, 1, 0, 60000, 30000);
  vt_start(t);
  assert_ptr_equal(t->vs.voter[0]->ops, &voter_standalone_ops);
  assert_int_equal(voters_transport.quarantined(&t->vs, 0), 0);

  /* A request goes out and comes back; the progress clock moves. */
  uint64_t before = voters_transport.progress_ns(&t->vs, 0);
  vt_req_t r;
  vt_req_prepare(&r, "GET %s", "vt-key");
  assert_int_equal(voters_transport.send(&t->vs, 0, &r.req), ST_OK);
  assert_false(voters_transport.queued(&t->vs, 0, &r.req)); /* written at once */
  assert_true(mock_run_until(&f->loop, req_done, &r, NF_WAIT_MS));
  assert_true(r.got_reply);
  assert_true(voters_transport.progress_ns(&t->vs, 0) > before);
  redisFreeCommand(r.cmd);

  /* Past the in-flight cap requests wait queued; one taken back never goes
   * out and never calls back. */
  enum { TOTAL = NODE_MAX_INFLIGHT + 2 };
  vt_req_t *many = calloc(TOTAL, sizeof *many);
  assert_non_null(many);
  mock_master_on(f->mock, "GET", MOCK_HOLD, NULL, 0);
  for (unsigned i = 0; i < TOTAL; i++) {
    vt_req_prepare(&many[i], "GET %s", i == NODE_MAX_INFLIGHT ? "vt-cancelled" : "vt-many");
    assert_int_equal(voters_transport.send(&t->vs, 0, &many[i].req), ST_OK);
  }
  assert_false(voters_transport.queued(&t->vs, 0, &many[NODE_MAX_INFLIGHT - 1].req));
  assert_true(voters_transport.queued(&t->vs, 0, &many[NODE_MAX_INFLIGHT].req));
  voters_transport.cancel(&t->vs, 0, &many[NODE_MAX_INFLIGHT].req);
  nf_wait_received(f, "GET", 1 + NODE_MAX_INFLIGHT);
  mock_master_clear_rules(f->mock);
  assert_int_equal(mock_master_release(f->mock), NODE_MAX_INFLIGHT);
  assert_true(mock_run_until(&f->loop, req_done, &many[TOTAL - 1], NF_WAIT_MS));
  for (unsigned i = 0; i < TOTAL; i++) {
    assert_int_equal(many[i].done, i != NODE_MAX_INFLIGHT);
    redisFreeCommand(many[i].cmd);
  }
  free(many);
  assert_int_equal(mock_master_count(f->mock, "GET"), TOTAL); /* 1 + TOTAL - 1 */
  for (size_t i = 0; i < mock_master_n_commands(f->mock); i++) {
    const mock_cmd_t *cmd = mock_master_command(f->mock, i);
    assert_false(cmd->argc == 2 && strcmp(cmd->argv[1], "vt-cancelled") == 0);
  }

  /* Warnings carry the master's label. */
  voters_transport.warn(&t->vs, 0, "vt warning", "its detail");
  char want[128];
  snprintf(want, sizeof want, "master %s: vt warning: its detail", voters_label(&t->vs, 0));
  if (!nf_logged(f, want))
    fail_msg("no warning; log:\n%s", f->logbuf);

  /* The whys of a healthy master: no detail (not overloaded, acked, not
   * quarantined); the others are never asked of it. */
  assert_string_equal(why_of(t, 0, WHY_BUSY), "");
  assert_string_equal(why_of(t, 0, WHY_UNACKED), "");
  assert_string_equal(why_of(t, 0, WHY_QUARANTINED), "");
  assert_string_equal(why_of(t, 0, WHY_TIMEOUT), "");
  char buf[8] = "xxxxxxx";
  voters_why_asked(&t->vs, 0, WHY_TIMEOUT, NULL, buf, sizeof buf);
  assert_string_equal(buf, "");
  /* A short buffer still gets a NUL-terminated prefix of the down reason. */
  mock_master_stop_listening(f->mock);
  mock_master_drop_all(f->mock);
  vt_wait_news(t, 0, VOTER_EV_DOWN, 1);
  const char *down = why_of(t, 0, WHY_DOWN);
  assert_true(strlen(down) > 0);
  char shortbuf[5];
  voters_why_asked(&t->vs, 0, WHY_DOWN, NULL, shortbuf, sizeof shortbuf);
  assert_int_equal(strlen(shortbuf), 4);
  assert_memory_equal(shortbuf, down, 4);
  vt_stop(t);
}

/* ---- replays of kept releases --------------------------------------------------------- */

static int is_settled(void *arg) { return ((vt_t *)arg)->settled > 0; }

static void test_kept_release_replayed(void **state) {
  nf_t *f = *state;
  const char *uris[] = {"redis://127.0.0.1:%d"};
  vt_t *t = vt_make(f, uris, 1, 0, 60000, 30000);
  vt_start(t);
  char *cmd = NULL;
  int len = redisFormatCommand(&cmd, "EVALSHA %s 1 %s %s",
                               "0123456789012345678901234567890123456789", "vt-release", "value");
  assert_true(len > 0);
  /* Kept while the master is up: owed, replayed only on a new connection. */
  voters_transport.defer_release(&t->vs, 0, cmd, (size_t)len);
  assert_int_equal(voters_releases_owed(&t->vs, 0), 1);
  assert_int_equal(voters_owe_releases(&t->vs), 0); /* none out yet */
  /* The replay's reply is held: close would wait for it. */
  mock_master_on(f->mock, "EVALSHA", MOCK_HOLD, NULL, 1);
  mock_master_drop_all(f->mock);
  nf_wait_received_at(f, f->mock, "EVALSHA", 1, "the kept release was not replayed");
  const mock_cmd_t *c = mock_master_last(f->mock, "EVALSHA");
  assert_string_equal(c->argv[3], "vt-release");
  /* Out: the voters asked to be ticked by then, and the tick says when. */
  assert_true(voters_owe_releases(&t->vs));
  assert_true(t->arms >= 1);
  assert_true(t->last_due_ns > 0);
  unsigned fired = t->fired;
  uint64_t due = voters_tick(&t->vs, fire_count, t);
  assert_int_equal(t->fired, fired + 1);
  assert_int_equal(due, t->last_due_ns);
  assert_int_equal(t->settled, 0);
  /* Its reply settles it. */
  assert_int_equal(mock_master_release(f->mock), 1);
  assert_true(mock_run_until(&f->loop, is_settled, t, NF_WAIT_MS));
  assert_int_equal(voters_owe_releases(&t->vs), 0);
  assert_int_equal(voters_releases_owed(&t->vs, 0), 0);
  assert_int_equal(voters_tick(&t->vs, fire_count, t), 0);

  /* Abandon (close out of time) gives up what is kept. */
  voters_transport.defer_release(&t->vs, 0, cmd, (size_t)len);
  assert_int_equal(voters_releases_owed(&t->vs, 0), 1);
  voters_abandon(&t->vs);
  assert_int_equal(voters_releases_owed(&t->vs, 0), 0);
  assert_int_equal(voters_owe_releases(&t->vs), 0);
  redisFreeCommand(cmd);
  vt_stop(t);
}

/* ---- hung masters ---------------------------------------------------------------------- */

static void test_hung_master_dropped(void **state) {
  nf_t *f = *state;
  const char *uris[] = {"redis://127.0.0.1:%d"};
  vt_t *t = vt_make(f, uris, 1, 0, 50, 30000);
  vt_start(t);
  /* It takes the request and never answers. */
  mock_master_on(f->mock, "GET", MOCK_HOLD, NULL, 0);
  vt_req_t r;
  vt_req_prepare(&r, "GET %s", "vt-hung");
  assert_int_equal(voters_transport.send(&t->vs, 0, &r.req), ST_OK);
  vt_ticker_start(t);
  /* The tick drops it after a few request timeouts: the request fails. */
  if (!mock_run_until(&f->loop, req_done, &r, NF_WAIT_MS))
    fail_msg("the hung master was not dropped; log:\n%s", f->logbuf);
  vt_ticker_stop(t);
  assert_false(r.got_reply);
  assert_true(vt_count(t, 0, VOTER_EV_DOWN) >= 1);
  assert_true(vt_last(t, 0, VOTER_EV_DOWN)->was_up);
  assert_true(t->fired > 0);
  redisFreeCommand(r.cmd);
  mock_master_clear_rules(f->mock);
  vt_stop(t);
}

/* ---- quarantine ------------------------------------------------------------------------ */

static void test_quarantine(void **state) {
  nf_t *f = *state;
  const char *uris[] = {"redis://127.0.0.1:%d"};
  /* Up 0 s, max TTL 300 ms: it may have lost locks it held less than a
   * TTL ago, so it is quarantined for that long. */
  mock_master_set_uptime(f->mock, 0);
  vt_t *t = vt_make(f, uris, 1, 1, 60000, 300);
  vt_start(t);
  const vt_news_t *up = vt_last(t, 0, VOTER_EV_UP);
  if (up->quarantine_until_ns == 0)
    fail_msg("not quarantined; log:\n%s", f->logbuf);
  assert_int_equal(voters_transport.quarantined(&t->vs, 0), 1);
  assert_true(strlen(why_of(t, 0, WHY_QUARANTINED)) > 0);
  vt_wait_news(t, 0, VOTER_EV_QUARANTINE_END, 1);
  assert_int_equal(voters_transport.quarantined(&t->vs, 0), 0);
  vt_stop(t);
}

/* ---- sentinel and cluster voters ------------------------------------------------------- */

static void test_kinds_made(void **state) {
  nf_t *f = *state;
  const char *uris[] = {"redis-cluster://127.0.0.1:%d", "redis-sentinel://127.0.0.1:%d/mymaster",
                        "redis://127.0.0.1:%d"};
  vt_t *t = vt_make(f, uris, 3, 0, 60000, 30000);
  assert_ptr_equal(t->vs.voter[0]->ops, &voter_cluster_ops);
  assert_ptr_equal(t->vs.voter[1]->ops, &voter_sentinel_ops);
  assert_ptr_equal(t->vs.voter[2]->ops, &voter_standalone_ops);
  assert_string_equal(t->vs.voter[0]->ops->kind, "cluster");
  assert_string_equal(t->vs.voter[1]->ops->kind, "sentinel");
  assert_int_equal(voters_route_by_slot(&t->vs), 1);
  /* Never started: freed as they are. */
  voters_free(&t->vs);
  assert_null(t->vs.voter);
  assert_int_equal(t->vs.n, 0);
  for (unsigned i = 0; i < t->n; i++) {
    node_addr_clear(&t->addrs[i]);
    if (i > 0)
      mock_master_close(t->mocks[i]);
  }
  free(t);
}

/* The notifier's hooks on a started cluster voter: where a shard channel of
 * a slot is followed, and a refused subscription (MOVED) teaching it where
 * the slot went; a standalone voter follows its own node on plain
 * channels and ignores a refusal. */
static void test_cluster_notify_hooks(void **state) {
  nf_t *f = *state;
  const char *uris[] = {"redis-cluster://127.0.0.1:%d", "redis://127.0.0.1:%d"};
  vt_t *t = vt_make(f, uris, 2, 0, 60000, 30000);
  /* A, the seed, refuses CLUSTER SHARDS then maps every slot to itself. */
  char map[128];
  snprintf(map, sizeof map, "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n",
           mock_master_port(t->mocks[0]));
  mock_master_on(t->mocks[0], "CLUSTER", MOCK_REPLY, "-ERR unknown subcommand 'SHARDS'\r\n", 1);
  mock_master_on(t->mocks[0], "CLUSTER", MOCK_REPLY, map, 0);
  vt_start(t);
  notify_t notify;
  voters_notify_init(&t->vs, &notify, NULL, NULL);
  const node_t *node = (const node_t *)1;
  assert_int_equal(notify.shard_via(notify.via_arg, 1, 0, &node), 0);
  assert_null(node);
  assert_null(notify.via(notify.via_arg, 1)); /* no sub_node: the notifier's own node */
  /* As if it had answered CLUSTER SHARDS (Redis >= 7: shard channels). */
  voter_cluster_t *c = (voter_cluster_t *)t->vs.voter[0];
  c->disc.use_slots = 0;
  assert_int_equal(notify.shard_via(notify.via_arg, 0, 0, &node), 1);
  assert_non_null(node);
  assert_int_equal(node->addr.port, mock_master_port(t->mocks[0]));
  /* Refused with a MOVED to B: slot 0's channel is followed at B now. */
  char moved[64];
  snprintf(moved, sizeof moved, "MOVED 0 127.0.0.1:%d", mock_master_port(t->mocks[1]));
  notify.shard_refused(notify.via_arg, 0, moved, strlen(moved));
  notify.shard_refused(notify.via_arg, 1, moved, strlen(moved)); /* standalone: nothing */
  assert_int_equal(notify.shard_via(notify.via_arg, 0, 0, &node), 1);
  assert_non_null(node);
  assert_int_equal(node->addr.port, mock_master_port(t->mocks[1]));
  /* The other slots stay at A. */
  assert_int_equal(notify.shard_via(notify.via_arg, 0, 1, &node), 1);
  assert_int_equal(node->addr.port, mock_master_port(t->mocks[0]));
  notify_free(&notify);
  vt_stop(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_duplicates_judged, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_transport_ops, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_kept_release_replayed, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_hung_master_dropped, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_quarantine, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_kinds_made, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_cluster_notify_hooks, nf_setup, nf_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
