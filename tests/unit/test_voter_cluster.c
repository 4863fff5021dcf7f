/* test_voter_cluster.c: the cluster voter (voter_cluster.c) against two
 * mock primaries (tests/support/mock_master.h) on the test's loop: A, the
 * seed, answers the slot map (CLUSTER SLOTS, after refusing CLUSTER SHARDS
 * as a Redis 6 would) that the test sets.
 *
 * Asserts:
 *  - a kept release replayed to a primary that answers -MOVED follows the
 *    slot: the new owner gets it (and the map learns the move);
 *  - the voter says STARTED once the map is read and every primary's first
 *    connection attempt is over (B's handshake held: not before);
 *  - a request for a primary still connecting waits for it, queued but
 *    marked batched (a round decided meanwhile lets it go out);
 *  - a primary that left the slot map is not reconnected forever: once the
 *    map without it is read, its node is shut down (CLOSED), and the voter
 *    still closes cleanly;
 *  - a release that announces goes with the publish command the servers
 *    take: PUBLISH ("1") on a cluster that refused CLUSTER SHARDS, SPUBLISH
 *    ("2") on one that answers it, both when sent and when replayed; and the
 *    sender's request gets its own command back when its reply comes. */
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
#include "proto/keyslot.h"
#include "voters/voter_cluster.h"

typedef struct {
  nf_t *f;
  mock_master_t *b;
  node_t home;
  voter_cluster_t *s;
  int up, closed, started;
} vc_t;

static void on_voter(void *arg, voter_t *v, const voter_news_t *news) {
  vc_t *t = arg;
  (void)v;
  t->up |= news->ev == VOTER_EV_UP;
  t->closed |= news->ev == VOTER_EV_CLOSED;
  t->started += news->ev == VOTER_EV_STARTED;
}

/* CLUSTER SHARDS refused once, then CLUSTER SLOTS: A owns 0..split-1, B the
 * rest (split 16384: A owns all). */
static void set_map(vc_t *t, int split) {
  static char reply[512];
  int pa = mock_master_port(t->f->mock), pb = mock_master_port(t->b);
  if (split >= KEYSLOT_COUNT)
    snprintf(reply, sizeof reply, "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n",
             pa);
  else
    snprintf(reply, sizeof reply,
             "*2\r\n*3\r\n:0\r\n:%d\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n"
             "*3\r\n:%d\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n",
             split - 1, pa, split, pb);
  mock_master_clear_rules(t->f->mock);
  mock_master_on(t->f->mock, "CLUSTER", MOCK_REPLY, "-ERR unknown subcommand 'SHARDS'\r\n", 1);
  mock_master_on(t->f->mock, "CLUSTER", MOCK_REPLY, reply, 0);
}

static int is_up(void *arg) { return ((vc_t *)arg)->up; }
static int is_closed(void *arg) { return ((vc_t *)arg)->closed; }

/* A voter of A and B, up (its map read); hold_b: B holds every answer. */
static vc_t *vc_start_b(nf_t *f, int hold_b) {
  vc_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  t->f = f;
  t->b = mock_master_start(&f->loop);
  assert_non_null(t->b);
  if (hold_b)
    mock_master_on(t->b, "*", MOCK_HOLD, NULL, 0);
  set_map(t, 8192);
  char uri[64], err[128];
  snprintf(uri, sizeof uri, "redis-cluster://127.0.0.1:%d", mock_master_port(f->mock));
  node_addr_t addr;
  memset(&addr, 0, sizeof addr);
  assert_int_equal(uri_parse(uri, &addr, err, sizeof err), 0);
  assert_int_equal(voter_cluster_new(&t->s, &f->env, &t->home, 0, &addr), 0);
  node_addr_clear(&addr);
  t->s->base.report = on_voter;
  t->s->base.report_arg = t;
  voter_cluster_ops.start(&t->s->base);
  if (!mock_run_until(&f->loop, is_up, t, NF_WAIT_MS))
    fail_msg("no slot map; log:\n%s", f->logbuf);
  return t;
}

static vc_t *vc_start(nf_t *f) { return vc_start_b(f, 0); }

static void vc_stop(vc_t *t) {
  voter_cluster_ops.shutdown(&t->s->base);
  assert_true(mock_run_until(&t->f->loop, is_closed, t, NF_WAIT_MS));
  voter_cluster_ops.free(&t->s->base);
  node_free(&t->home);
  mock_master_close(t->b);
  free(t);
}

/* A key of a slot below 8192 (A's), and the release of it. */
static size_t release_of(char *key, size_t key_size, char **cmd) {
  for (int i = 0;; i++) {
    snprintf(key, key_size, "vc-key-%d", i);
    if (keyslot(key, strlen(key)) < 8192)
      break;
  }
  int len = redisFormatCommand(cmd, "EVALSHA %s 1 %s %s %s",
                               "0123456789012345678901234567890123456789", key, "value", "0");
  assert_true(len > 0);
  return (size_t)len;
}

static int nothing_owed(void *arg) {
  vc_t *t = arg;
  return voter_cluster_ops.releases_owed(&t->s->base) == 0;
}

static void test_kept_release_follows_moved(void **state) {
  nf_t *f = *state;
  vc_t *t = vc_start(f);
  char key[32], *cmd = NULL;
  size_t len = release_of(key, sizeof key, &cmd);
  int slot = keyslot(key, strlen(key));
  /* A no longer serves the slot: its replay is answered -MOVED to B. */
  char moved[96];
  snprintf(moved, sizeof moved, "-MOVED %d 127.0.0.1:%d\r\n", slot, mock_master_port(t->b));
  mock_master_on(f->mock, "EVALSHA", MOCK_REPLY, moved, 1);
  voter_cluster_ops.defer_release(&t->s->base, cmd, len);
  nf_wait_received_at(f, t->b, "EVALSHA", 1, "B got no release");
  const mock_cmd_t *c = mock_master_last(t->b, "EVALSHA");
  assert_non_null(c);
  assert_true(c->argc >= 4);
  assert_string_equal(c->argv[3], key);
  assert_int_equal(mock_master_count(f->mock, "EVALSHA"), 1);
  assert_true(nf_logged(f, "a kept release for slot"));
  /* B's answer settles it: nothing is owed any more. */
  assert_true(mock_run_until(&f->loop, nothing_owed, t, NF_WAIT_MS));
  redisFreeCommand(cmd);
  vc_stop(t);
}

static int is_started(void *arg) { return ((vc_t *)arg)->started > 0; }
static int b_held(void *arg) { return mock_master_held(((vc_t *)arg)->b) > 0; }

/* The voter says STARTED (redlock_open returns) once its map is read and
 * each primary's first connection attempt is over: not while B's
 * handshake is held, and once it is answered, once. */
static void test_started_waits_for_primaries(void **state) {
  nf_t *f = *state;
  vc_t *t = vc_start_b(f, 1);
  if (!mock_run_until(&f->loop, b_held, t, NF_WAIT_MS))
    fail_msg("B was not connected at the map; log:\n%s", f->logbuf);
  assert_int_equal(t->started, 0);
  mock_master_clear_rules(t->b);
  mock_master_release(t->b);
  if (!mock_run_until(&f->loop, is_started, t, NF_WAIT_MS))
    fail_msg("no STARTED once B answered; log:\n%s", f->logbuf);
  assert_int_equal(t->started, 1);
  for (unsigned i = 0; i < t->s->n_nodes; i++)
    if (t->s->nodes[i]->made && t->s->nodes[i]->node->addr.port == mock_master_port(t->b))
      assert_true(t->s->nodes[i]->node->first_attempt_done);
  vc_stop(t);
}

/* A request for a primary whose connection is being made waits for it
 * (queued, so the round's deadline drops it unsent) but as `batched`: a
 * round decided meanwhile leaves it to go out (round.c takes back only
 * what waits behind a full pipe), and it does once B answers. */
typedef struct {
  node_req_t req; /* first */
  int replied;
} parked_t;

static void on_parked(node_req_t *req, const redisReply *reply) {
  (void)reply;
  ((parked_t *)(void *)req)->replied = 1;
}

static int parked_replied(void *arg) { return ((parked_t *)arg)->replied; }

static void test_parked_waits_for_connection(void **state) {
  nf_t *f = *state;
  vc_t *t = vc_start_b(f, 1);
  if (!mock_run_until(&f->loop, b_held, t, NF_WAIT_MS))
    fail_msg("B was not connected at the map; log:\n%s", f->logbuf);
  char key[32];
  int i = 0;
  do
    snprintf(key, sizeof key, "vc-p-%d", i++);
  while (keyslot(key, strlen(key)) < 8192);
  char *cmd = NULL;
  int len = redisFormatCommand(&cmd, "SET %s v", key);
  assert_true(len > 0);
  parked_t p;
  memset(&p, 0, sizeof p);
  p.req.cmd = cmd;
  p.req.len = (size_t)len;
  p.req.fn = on_parked;
  p.req.slot = -1;
  assert_int_equal(voter_cluster_ops.send(&t->s->base, &p.req), ST_OK);
  assert_true(voter_cluster_ops.queued(&t->s->base, &p.req));
  assert_true(p.req.batched);
  mock_master_clear_rules(t->b);
  mock_master_release(t->b);
  if (!mock_run_until(&f->loop, parked_replied, &p, NF_WAIT_MS))
    fail_msg("the parked request got no reply; log:\n%s", f->logbuf);
  assert_int_equal(mock_master_count(t->b, "SET"), 1);
  redisFreeCommand(cmd);
  vc_stop(t);
}

typedef struct {
  voter_cluster_t *s;
  int port;
} gone_t;

static int b_closed(void *arg) {
  gone_t *g = arg;
  for (unsigned i = 0; i < g->s->n_nodes; i++) {
    voter_cluster_node_t *cn = g->s->nodes[i];
    if (cn->node->addr.port == g->port)
      return cn->retired && cn->closed && cn->node->state == NODE_CLOSED;
  }
  return 0;
}

static void test_departed_primary_closed(void **state) {
  nf_t *f = *state;
  vc_t *t = vc_start(f);
  /* B gets a release of one of its slots (its connection made at the map). */
  char key[32];
  int i = 0;
  do
    snprintf(key, sizeof key, "vc-b-%d", i++);
  while (keyslot(key, strlen(key)) < 8192);
  char *cmd = NULL;
  int len = redisFormatCommand(&cmd, "EVALSHA %s 1 %s %s %s",
                               "0123456789012345678901234567890123456789", key, "v", "0");
  assert_true(len > 0);
  voter_cluster_ops.defer_release(&t->s->base, cmd, (size_t)len);
  nf_wait_received_at(f, t->b, "EVALSHA", 1, "B got no release");
  redisFreeCommand(cmd);
  /* B leaves the cluster (A now serves every slot) and goes away: its
   * failure asks the map again, which no longer names it. */
  set_map(t, KEYSLOT_COUNT);
  mock_master_stop_listening(t->b);
  mock_master_drop_all(t->b);
  gone_t gone = {t->s, mock_master_port(t->b)};
  if (!mock_run_until(&f->loop, b_closed, &gone, NF_WAIT_MS))
    fail_msg("B's node not closed; log:\n%s", f->logbuf);
  assert_true(nf_logged(f, "serves no slot any more"));
  vc_stop(t);
}

typedef struct {
  node_req_t req; /* first */
  int replied;
} sent_t;

static void on_sent(node_req_t *req, const redisReply *reply) {
  (void)reply;
  ((sent_t *)(void *)req)->replied = 1;
}

static int replied(void *arg) { return ((sent_t *)arg)->replied; }

typedef struct {
  voter_cluster_t *s;
  int port;
  int ready; /* wait for it READY (1) or not READY (0) */
} node_wait_t;

static int node_is(void *arg) {
  node_wait_t *w = arg;
  for (unsigned i = 0; i < w->s->n_nodes; i++) {
    const node_t *node = w->s->nodes[i]->node;
    if (w->s->nodes[i]->made && node->addr.port == w->port)
      return (node->state == NODE_READY) == w->ready;
  }
  return 0;
}

/* The primary behind mock m loses its connection: the voter connected it
 * when the map named it; the test waits until its node is down. */
static void primary_drops(vc_t *t, mock_master_t *m) {
  node_wait_t w = {t->s, mock_master_port(m), 1};
  if (!mock_run_until(&t->f->loop, node_is, &w, NF_WAIT_MS))
    fail_msg("the primary at %d never came up; log:\n%s", w.port, t->f->logbuf);
  mock_master_drop_all(m);
  w.ready = 0;
  if (!mock_run_until(&t->f->loop, node_is, &w, NF_WAIT_MS))
    fail_msg("the primary at %d stayed up; log:\n%s", w.port, t->f->logbuf);
}

/* A release that announces (flag `how`, "1" or "3", last), of a key of A's
 * (b: of B's), on a primary whose connection is down: kept (it is replayed
 * once the primary is up again), then sent; what the primary gets as the
 * last argument of each. */
static void announce_as(vc_t *t, int b, int shard, const char *how, const char *want) {
  nf_t *f = t->f;
  mock_master_t *m = b ? t->b : f->mock;
  t->s->disc.use_slots = !shard; /* as if the seed had (not) answered CLUSTER SHARDS */
  char key[32];
  int i = 0;
  do
    snprintf(key, sizeof key, "vc-%d-%d", b, i++);
  while ((keyslot(key, strlen(key)) >= 8192) != b);
  char *cmd = NULL;
  int len = redisFormatCommand(&cmd, "EVALSHA %s 1 %s %s %s %s",
                               "0123456789012345678901234567890123456789", key, "v", "ch", how);
  assert_true(len > 0);
  mock_master_on(m, "EVALSHA", MOCK_REPLY, ":1\r\n", 0);
  primary_drops(t, m);
  voter_cluster_ops.defer_release(&t->s->base, cmd, (size_t)len);
  nf_wait_received_at(f, m, "EVALSHA", 1, "the kept release was not replayed");
  const mock_cmd_t *c = mock_master_last(m, "EVALSHA");
  assert_string_equal(c->argv[c->argc - 1], want);
  assert_true(mock_run_until(&f->loop, nothing_owed, t, NF_WAIT_MS));
  sent_t sent;
  memset(&sent, 0, sizeof sent);
  node_req_t *req = &sent.req;
  req->cmd = cmd;
  req->len = (size_t)len;
  req->fn = on_sent;
  req->keep = 1;
  req->slot = -1;
  assert_int_equal(voter_cluster_ops.send(&t->s->base, req), ST_OK);
  if (!mock_run_until(&f->loop, replied, &sent, NF_WAIT_MS))
    fail_msg("the release got no reply; log:\n%s", f->logbuf);
  assert_ptr_equal(req->cmd, cmd); /* the sender's own bytes again */
  assert_null(req->route);         /* the routing state given back */
  assert_ptr_equal(req->fn, on_sent);
  assert_int_equal(cmd[len - 3], how[0]); /* and untouched */
  c = mock_master_last(m, "EVALSHA");
  assert_int_equal(mock_master_count(m, "EVALSHA"), 2);
  assert_string_equal(c->argv[c->argc - 1], want);
  redisFreeCommand(cmd);
}

/* A release announcing with flag `how` goes as it is to A, whose seed did
 * not answer CLUSTER SHARDS, and as `shard` (SPUBLISH) to B, whose did: a
 * fresh voter for each flag. */
static void announce_both(nf_t *f, const char *how, const char *shard) {
  vc_t *t = vc_start(f);
  announce_as(t, 0, 0, how, how);
  announce_as(t, 1, 1, how, shard);
  vc_stop(t);
}

static void test_release_announces_as_servers_take(void **state) {
  announce_both(*state, "1", "2");
}

/* The flag of a release with a key that contains a '{' (the script looks for
 * a tag): "3", rewritten to "4" for SPUBLISH. */
static void test_release_announces_tagged(void **state) { announce_both(*state, "3", "4"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_kept_release_follows_moved, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_departed_primary_closed, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_started_waits_for_primaries, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_parked_waits_for_connection, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_release_announces_as_servers_take, nf_setup,
                                      nf_teardown),
      cmocka_unit_test_setup_teardown(test_release_announces_tagged, nf_setup, nf_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
