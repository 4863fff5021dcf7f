/* test_node_requests.c: what a READY master does with requests
 * (node_pipe.c, node_hung.c, node_replay.c, node_handshake.c's quarantine)
 * against the in-process mock master: replies passed up as they come
 * (scripted, NOSCRIPT, nil), a connection closed mid-reply, the in-flight
 * cap and the backlog (queued, canceled, busy, failed when the master goes
 * down), hung-master detection, the replay of missed releases (REPLAYS_DUE,
 * SETTLED), the restart quarantine (QUARANTINE_END) and the rate-limited
 * warnings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "node_fixture.h"
#include "proto/resp.h"
#include "redlock.h"
#include "util/pool.h"

static void start_ready(nf_t *f) {
  nf_start(f);
  nf_wait_event(f, NODE_EV_UP, 1);
}

/* Quarantine on with this max TTL, the master up for uptime_s: started, up. */
static void start_quarantining(nf_t *f, uint32_t max_ttl_ms, long long uptime_s) {
  f->env.quarantine = 1;
  f->env.max_ttl_ms = max_ttl_ms;
  mock_master_set_uptime(f->mock, uptime_s);
  start_ready(f);
}

static void test_send_while_not_ready(void **state) {
  nf_t *f = *state;
  nf_req_t r;
  mock_master_on(f->mock, "INFO", MOCK_HOLD, NULL, 0);
  nf_start(f);
  assert_int_equal(nf_send(f, &r, "SET k v", 0), ST_DOWN); /* CONNECTING */
  assert_false(r.done);
  assert_false(node_owes_releases(&f->node));
  assert_int_equal(node_replays_due_ns(&f->node), 0);
  node_read_pending(&f->node); /* nothing to read while not READY */
  node_drop_if_hung(&f->node);
  assert_int_equal(f->node.state, NODE_CONNECTING);
}

/* Replies come back to the request's fn as the master sent them; the mock
 * got the exact command; the stats figures count the request. */
static void test_request_replies(void **state) {
  nf_t *f = *state;
  struct stats *stats = calloc(1, sizeof *stats + sizeof stats->masters[0]);
  assert_non_null(stats);
  for (unsigned i = 0; i <= STATS_N_BOUNDS; i++)
    stats->bound_ns[i] = UINT64_MAX; /* one bucket: enough to observe */
  stats->n_masters = 1;
  start_ready(f);
  f->node.stats = stats;
  mock_master_on(f->mock, "SET", MOCK_REPLY, "$-1\r\n", 1);
  mock_master_on(f->mock, "EVALSHA", MOCK_REPLY, "-NOSCRIPT No matching script.\r\n", 1);
  nf_req_t ok, nil, noscript, evalsha;
  assert_int_equal(nf_send(f, &nil, "SET k v NX PX 1000", 0), 0);
  assert_int_equal(nf_send(f, &ok, "SET k2 v NX PX 1000", 0), 0);
  assert_int_equal(nf_send(f, &noscript, "EVALSHA 0123 1 k v", 0), 0);
  assert_int_equal(nf_send(f, &evalsha, "EVALSHA 0123 1 k v", 0), 0);
  assert_int_equal(f->node.pipe.inflight, 4);
  assert_false(node_req_queued(&ok.req));
  assert_true(ok.req.sent_ns != 0);
  nf_wait_req(f, &evalsha);
  assert_true(nil.done && ok.done && noscript.done);
  assert_int_equal(nil.reply_type, REDIS_REPLY_NIL);
  assert_int_equal(ok.reply_type, REDIS_REPLY_STATUS);
  assert_string_equal(ok.str, "OK");
  assert_int_equal(noscript.reply_type, REDIS_REPLY_ERROR);
  assert_non_null(strstr(noscript.str, "NOSCRIPT"));
  assert_int_equal(evalsha.reply_type, REDIS_REPLY_INTEGER);
  assert_int_equal(evalsha.integer, 1);
  assert_true(ok.req.replied_ns >= ok.req.sent_ns);
  assert_int_equal(f->node.pipe.inflight, 0);
  const mock_cmd_t *set = mock_master_last(f->mock, "SET");
  assert_int_equal(set->argc, 6);
  assert_string_equal(set->argv[1], "k2");
  assert_string_equal(set->argv[5], "1000");
  assert_int_equal(stats->masters[0].sent, 4);
  assert_int_equal(stats->masters[0].done, 4);
  f->node.stats = NULL;
  free(stats);
}

/* The answers to our commands (top-level nil, status, error, integer and
 * bulk strings up to REPLY_POOL_STR_MAX bytes) come from the connection's
 * reply pool and read like any reply; a longer string, an aggregate and what
 * is in it are hiredis' own objects.  (Each is freed by hiredis after the
 * callback: ASan sees any mix-up of the two.) */
static void test_replies_pooled(void **state) {
  nf_t *f = *state;
  start_ready(f);
  char bulk47[80], bulk48[80];
  snprintf(bulk47, sizeof bulk47, "$47\r\n%.47s\r\n",
           "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstu");
  snprintf(bulk48, sizeof bulk48, "$48\r\n%.48s\r\n",
           "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuv");
  mock_master_on(f->mock, "SET", MOCK_REPLY, "$-1\r\n", 1);
  mock_master_on(f->mock, "GET", MOCK_REPLY, bulk47, 1);
  mock_master_on(f->mock, "GET", MOCK_REPLY, bulk48, 1);
  mock_master_on(f->mock, "LRANGE", MOCK_REPLY, "*2\r\n:7\r\n+x\r\n", 1);
  mock_master_on(f->mock, "EVALSHA", MOCK_REPLY, "-ERR no\r\n", 1);
  mock_master_on(f->mock, "EVALSHA", MOCK_REPLY, ":-3\r\n", 1);
  unsigned long before = conn_replies_pooled(f->node.link.ac);
  nf_req_t nil, ok, b47, b48, arr, err, num;
  assert_int_equal(nf_send(f, &nil, "SET k v NX PX 1000", 0), 0);
  assert_int_equal(nf_send(f, &ok, "SET k v", 0), 0);
  assert_int_equal(nf_send(f, &b47, "GET k", 0), 0);
  assert_int_equal(nf_send(f, &b48, "GET k", 0), 0);
  assert_int_equal(nf_send(f, &arr, "LRANGE l 0 1", 0), 0);
  assert_int_equal(nf_send(f, &err, "EVALSHA 0123 1 k v", 0), 0);
  assert_int_equal(nf_send(f, &num, "EVALSHA 0123 1 k v", 0), 0);
  nf_wait_req(f, &num);
  assert_int_equal(nil.reply_type, REDIS_REPLY_NIL);
  assert_int_equal(ok.reply_type, REDIS_REPLY_STATUS);
  assert_string_equal(ok.str, "OK");
  assert_int_equal(b47.reply_type, REDIS_REPLY_STRING);
  assert_int_equal(strlen(b47.str), 47);
  assert_int_equal(b48.reply_type, REDIS_REPLY_STRING);
  assert_int_equal(strlen(b48.str), 48);
  assert_int_equal(arr.reply_type, REDIS_REPLY_ARRAY);
  assert_int_equal(err.reply_type, REDIS_REPLY_ERROR);
  assert_string_equal(err.str, "ERR no");
  assert_int_equal(num.reply_type, REDIS_REPLY_INTEGER);
  assert_int_equal(num.integer, -3);
  /* pooled: nil, OK, the 47-byte bulk, the error, the integer */
  assert_int_equal(conn_replies_pooled(f->node.link.ac) - before, 5);
  /* many in flight at once: more blocks than the pool keeps, all read right */
  enum { MANY = REPLY_POOL_KEEP + 50 };
  static nf_req_t many[MANY];
  for (unsigned i = 0; i < MANY; i++)
    assert_int_equal(nf_send(f, &many[i], "SET k v", 0), 0);
  nf_wait_req(f, &many[MANY - 1]);
  for (unsigned i = 0; i < MANY; i++)
    assert_string_equal(many[i].str, "OK");
  assert_int_equal(conn_replies_pooled(f->node.link.ac) - before, 5 + MANY);
}

/* hiredis frees its output buffer when a write takes all of it; conn.c
 * gives the fresh one the room that write needed, so that the next turn's
 * commands are appended without growing it from nothing (a realloc and a
 * copy at each doubling).  The next batch goes through that buffer intact,
 * and each write that took bytes is counted (conn_writes). */
static void test_output_room(void **state) {
  nf_t *f = *state;
  start_ready(f);
  enum { MANY = 64 };
  static nf_req_t r[2][MANY];
  size_t bytes = 0;
  for (unsigned batch = 0; batch < 2; batch++) {
    unsigned long writes = conn_writes(f->node.link.ac);
    char words[96];
    for (unsigned i = 0; i < MANY; i++) {
      snprintf(words, sizeof words, "SET key-%u-%u value-of-a-lock NX PX 10000", batch, i);
      assert_int_equal(nf_send(f, &r[batch][i], words, 0), 0);
      if (batch == 0)
        bytes += r[batch][i].req.len;
    }
    nf_wait_req(f, &r[batch][MANY - 1]); /* all written by the turn's one flush */
    assert_int_equal(conn_writes(f->node.link.ac), writes + 1);
    sds obuf = f->node.link.ac->c.obuf;
    assert_int_equal(sdslen(obuf), 0);
    assert_true(sdsavail(obuf) >= bytes);
    for (unsigned i = 0; i < MANY; i++)
      assert_string_equal(r[batch][i].str, "OK");
  }
  /* The master got every command, in order, byte for byte. */
  assert_int_equal(mock_master_count(f->mock, "SET"), 2 * MANY);
  const mock_cmd_t *last = mock_master_last(f->mock, "SET");
  assert_int_equal(last->argc, 6);
  assert_string_equal(last->argv[1], "key-1-63");
  assert_string_equal(last->argv[5], "10000");
}

/* Replies that already wait on the socket are read on demand. */
static void test_read_pending(void **state) {
  nf_t *f = *state;
  start_ready(f);
  nf_req_t r;
  assert_int_equal(nf_send(f, &r, "SET k v", 0), 0);
  nf_wait_received(f, "SET", 1);
  node_read_pending(&f->node); /* reads it if it is there already */
  nf_wait_req(f, &r);
  assert_true(r.got_reply);
}

/* An error no command asked for (a server over maxclients says so right
 * after accepting): hiredis frees the reply itself, through our reader's
 * freeObject (it is a pooled one: ASan sees a mix-up or a leak), and drops
 * the connection; the node reports why and reconnects. */
static void test_unsolicited_error(void **state) {
  nf_t *f = *state;
  start_ready(f);
  mock_master_send_raw(f->mock, "-ERR max number of clients reached\r\n");
  nf_wait_event(f, NODE_EV_DOWN, 1);
  const nf_event_t *down = nf_last(f, NODE_EV_DOWN);
  assert_int_equal(down->state, NODE_READY);
  assert_non_null(strstr(down->detail, "max number of clients reached"));
  nf_wait_event(f, NODE_EV_UP, 2);
}

/* The master closes the connection halfway through a reply: the request
 * gets NULL, the node goes DOWN (reported while READY) and reconnects. */
static void test_close_mid_reply(void **state) {
  nf_t *f = *state;
  start_ready(f);
  mock_master_on(f->mock, "SET", MOCK_CLOSE_MID, "$10\r\n0123456789\r\n", 1);
  nf_req_t r;
  assert_int_equal(nf_send(f, &r, "SET k v", 0), 0);
  nf_wait_req(f, &r);
  assert_false(r.got_reply);
  assert_int_equal(r.req.replied_ns, 0);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  const nf_event_t *down = nf_last(f, NODE_EV_DOWN);
  assert_int_equal(down->state, NODE_READY);
  assert_string_equal(down->what, "connection lost");
  nf_wait_event(f, NODE_EV_UP, 2);
}

/* Past NODE_MAX_INFLIGHT requests wait in order in the backlog; a queued
 * one can be taken back; the rest go out as replies come. */
static void test_backlog(void **state) {
  nf_t *f = *state;
  enum { EXTRA = 5, TOTAL = NODE_MAX_INFLIGHT + EXTRA };
  nf_req_t *r = calloc(TOTAL, sizeof *r);
  assert_non_null(r);
  start_ready(f);
  mock_master_on(f->mock, "SET", MOCK_HOLD, NULL, 0);
  for (unsigned i = 0; i < TOTAL; i++)
    assert_int_equal(nf_send(f, &r[i], "SET k v", 0), 0);
  assert_int_equal(f->node.pipe.inflight, NODE_MAX_INFLIGHT);
  assert_int_equal(f->node.pipe.backlog_len, EXTRA);
  assert_false(node_req_queued(&r[NODE_MAX_INFLIGHT - 1].req));
  assert_true(node_req_queued(&r[NODE_MAX_INFLIGHT].req));
  assert_int_equal(r[NODE_MAX_INFLIGHT].req.sent_ns, 0);
  node_cancel(&r[NODE_MAX_INFLIGHT + 1].req); /* taken back: its fn never runs */
  assert_int_equal(f->node.pipe.backlog_len, EXTRA - 1);
  nf_wait_received(f, "SET", NODE_MAX_INFLIGHT);
  assert_int_equal(mock_master_release(f->mock), NODE_MAX_INFLIGHT);
  nf_wait_received(f, "SET", TOTAL - 1); /* the backlog went out as replies came */
  mock_master_clear_rules(f->mock);
  assert_int_equal(mock_master_release(f->mock), EXTRA - 1);
  nf_wait_req(f, &r[TOTAL - 1]);
  for (unsigned i = 0; i < TOTAL; i++)
    if (i != NODE_MAX_INFLIGHT + 1) {
      nf_wait_req(f, &r[i]);
      assert_true(r[i].got_reply);
    }
  assert_false(r[NODE_MAX_INFLIGHT + 1].done);
  assert_int_equal(f->node.pipe.backlog_len, 0);
  assert_int_equal(f->node.pipe.inflight, 0);
  free(r);
}

/* Writing in batches (node_t.primary.batch_writes): requests sent in the turn of
 * the first join its write; once that is written, new ones (a release too)
 * wait in the backlog, marked batched (a decided round leaves them to go
 * out), until the last reply of the batch is in; then they go out together,
 * in one write, in the order sent. */
static void test_batch_writes(void **state) {
  nf_t *f = *state;
  nf_req_t r[4];
  memset(r, 0, sizeof r);
  start_ready(f);
  f->node.primary.batch_writes = 1;
  mock_master_on(f->mock, "SET", MOCK_HOLD, NULL, 0);
  assert_int_equal(nf_send(f, &r[0], "SET k 0", 0), 0);
  assert_int_equal(nf_send(f, &r[1], "SET k 1", 0), 0); /* joins the unwritten output */
  assert_int_equal(f->node.pipe.inflight, 2);
  assert_int_equal(f->node.pipe.backlog_len, 0);
  nf_wait_received(f, "SET", 2);
  assert_int_equal(nf_send(f, &r[2], "SET k 2", 0), 0);
  assert_int_equal(nf_send(f, &r[3], "SET k 3", 1), 0); /* a release waits too */
  assert_int_equal(f->node.pipe.inflight, 2);
  assert_int_equal(f->node.pipe.backlog_len, 2);
  for (unsigned i = 2; i < 4; i++) {
    assert_true(node_req_queued(&r[i].req));
    assert_true(r[i].req.batched);
  }
  unsigned long writes = conn_writes(f->node.link.ac);
  assert_int_equal(mock_master_release(f->mock), 2);
  nf_wait_received(f, "SET", 4); /* the batch answered: the backlog went out */
  assert_int_equal(conn_writes(f->node.link.ac), writes + 1);
  assert_true(r[0].got_reply && r[1].got_reply);
  assert_int_equal(f->node.pipe.backlog_len, 0);
  for (unsigned i = 0; i < 4; i++) {
    const mock_cmd_t *cmd = mock_master_command(f->mock, mock_master_n_commands(f->mock) - 4 + i);
    char want[2] = {(char)('0' + i), '\0'};
    assert_string_equal(cmd->argv[2], want);
  }
  mock_master_clear_rules(f->mock);
  assert_int_equal(mock_master_release(f->mock), 2);
  nf_wait_req(f, &r[3]);
  assert_true(r[2].got_reply && r[3].got_reply);
  assert_int_equal(f->node.pipe.inflight, 0);
}

/* A full backlog refuses a request (BUSY) but never a release; when the
 * master goes down every request, written or queued, gets NULL. */
typedef struct {
  node_req_t req;
  unsigned *nulls;
} small_req_t;

static void small_fn(node_req_t *req, const redisReply *reply) {
  small_req_t *r = (small_req_t *)req;
  if (reply == NULL)
    (*r->nulls)++;
}

/* The queue's request bound: past NODE_MAX_QUEUED requests (in flight and
 * in the backlog) anything is refused (BUSY), a release too (its round keeps
 * it for later); the master is then overloaded.  When it goes down every
 * request, written or queued, gets NULL, and it is no longer overloaded. */
static void test_backlog_busy_then_down(void **state) {
  nf_t *f = *state;
  enum { TOTAL = NODE_MAX_QUEUED };
  static const char cmd[] = "*1\r\n$4\r\nPING\r\n";
  small_req_t *r = calloc(TOTAL, sizeof *r);
  assert_non_null(r);
  unsigned nulls = 0;
  start_ready(f);
  mock_master_on(f->mock, "PING", MOCK_HOLD, NULL, 0);
  for (unsigned i = 0; i < TOTAL; i++) {
    r[i].req.cmd = cmd;
    r[i].req.len = sizeof cmd - 1;
    r[i].req.fn = small_fn;
    r[i].req.keep = i % 2; /* releases and others alike */
    r[i].nulls = &nulls;
    assert_int_equal(node_send(&f->node, &r[i].req), 0);
  }
  assert_int_equal(f->node.pipe.inflight, NODE_MAX_INFLIGHT);
  assert_int_equal(f->node.pipe.backlog_len, NODE_MAX_BACKLOG);
  assert_int_equal(f->node.pipe.queued_bytes, (size_t)TOTAL * (sizeof cmd - 1));
  assert_int_equal(f->node.pipe.releases_queued, TOTAL / 2);
  assert_false(f->node.pipe.overloaded);
  small_req_t busy = {.req = {.cmd = cmd, .len = sizeof cmd - 1, .fn = small_fn}};
  assert_int_equal(node_send(&f->node, &busy.req), ST_BUSY);
  assert_true(f->node.pipe.overloaded);
  assert_true(nf_logged(f, "queue full (73728 requests"));
  busy.req.keep = 1; /* a release past the bound: refused too, never queued */
  assert_int_equal(node_send(&f->node, &busy.req), ST_BUSY);
  assert_int_equal(f->node.pipe.backlog_len, NODE_MAX_BACKLOG);
  char why[NODE_DOWN_WHY_LEN];
  node_why(&f->node, WHY_BUSY, why, sizeof why);
  assert_non_null(strstr(why, "queue full: 73728 requests"));
  nf_wait_received(f, "PING", 1);
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  assert_int_equal(nulls, TOTAL);
  assert_int_equal(f->node.pipe.backlog_len, 0);
  assert_int_equal(f->node.pipe.inflight, 0);
  assert_int_equal(f->node.pipe.queued_bytes, 0);
  assert_int_equal(f->node.pipe.releases_queued, 0);
  assert_false(f->node.pipe.overloaded);
  node_why(&f->node, WHY_BUSY, why, sizeof why);
  assert_string_equal(why, "");
  node_why(&f->node, WHY_DOWN, why, sizeof why); /* what the link said of the drop */
  assert_string_equal(why, f->node.down_why);
  assert_true(why[0] != '\0');
  node_why(&f->node, WHY_DOWN, why, 4); /* cut to fit, still terminated */
  assert_int_equal(strlen(why), 3);
  node_why(&f->node, WHY_ERROR, why, sizeof why); /* nothing of the node's to say */
  assert_string_equal(why, "");
  free(r);
}

/* The queue's byte bound, and an overloaded master catching up: large
 * commands fill NODE_MAX_QUEUED_BYTES long before the request bound; the
 * next is refused and the master is overloaded: it refuses what is not a
 * release even with room left, takes a release while it fits, and keeps a
 * release deferred to it.  As replies come, once half of the bytes are
 * answered it votes again and the release kept for it goes out.  The stats
 * figures follow. */
typedef struct {
  node_req_t req;
  unsigned *replies;
} big_req_t;

static void big_fn(node_req_t *req, const redisReply *reply) {
  big_req_t *r = (big_req_t *)req;
  if (reply != NULL)
    (*r->replies)++;
}

static void test_queue_bytes_bound(void **state) {
  nf_t *f = *state;
  enum { VALUE = 1 << 20, SLOTS = 32 };
  char *cmd = malloc(VALUE + 64);
  char *value = malloc(VALUE);
  assert_non_null(cmd);
  assert_non_null(value);
  memset(value, 'v', VALUE);
  const char *argv[3] = {"SET", "big", value};
  size_t lens[3] = {3, 3, VALUE};
  size_t len = resp_command_len(3, lens);
  resp_write_command(cmd, 3, argv, lens);
  const unsigned fit = (unsigned)(NODE_MAX_QUEUED_BYTES / len);
  assert_true(fit < SLOTS);
  struct stats *stats = calloc(1, sizeof *stats + sizeof stats->masters[0]);
  assert_non_null(stats);
  stats->n_masters = 1;
  for (unsigned i = 0; i <= STATS_N_BOUNDS; i++)
    stats->bound_ns[i] = UINT64_MAX;
  big_req_t r[SLOTS];
  unsigned replies = 0;
  start_ready(f);
  f->node.stats = stats;
  mock_master_on(f->mock, "SET", MOCK_HOLD, NULL, 0);
  unsigned sent = 0;
  for (; sent < SLOTS; sent++) {
    r[sent] = (big_req_t){.req = {.cmd = cmd, .len = len, .fn = big_fn}, .replies = &replies};
    if (node_send(&f->node, &r[sent].req) != 0)
      break;
  }
  assert_int_equal(sent, fit);
  assert_true(f->node.pipe.overloaded);
  assert_true(f->node.pipe.queued_bytes <= NODE_MAX_QUEUED_BYTES);
  assert_int_equal(stats->masters[0].queued, fit);
  assert_int_equal(stats->masters[0].queued_bytes, (uint64_t)fit * len);
  /* Overloaded: what is not a release is refused, room or not ... */
  nf_req_t set, rel, replay_me;
  assert_int_equal(nf_send(f, &set, "SET k v NX PX 1000", 0), ST_BUSY);
  /* ... a release is taken while it fits ... */
  assert_int_equal(nf_send(f, &rel, "EVALSHA 0123 1 k v", 1), 0);
  assert_int_equal(f->node.pipe.releases_queued, 1);
  /* ... and one deferred to it is kept, not sent yet. */
  nf_send(f, &replay_me, "EVALSHA 0123 1 kept v", 1); /* formats it (and queues it: fine) */
  node_defer_release(&f->node, replay_me.cmd, replay_me.req.len);
  assert_int_equal(f->node.replay.n_missed_releases, 1);
  assert_int_equal(stats->masters[0].releases_kept, 1);
  nf_wait_received(f, "SET", fit);
  assert_true(mock_master_release(f->mock) >= fit);
  nf_wait_event(f, NODE_EV_SETTLED, 1); /* caught up: the kept release went out, answered */
  assert_false(f->node.pipe.overloaded);
  assert_true(nf_logged(f, "caught up"));
  assert_true(nf_logged(f, "replaying 1 release(s)"));
  nf_wait_req(f, &rel);
  nf_wait_req(f, &replay_me);
  assert_int_equal(replies, fit);
  assert_int_equal(f->node.replay.n_missed_releases, 0);
  assert_int_equal(stats->masters[0].releases_kept, 0);
  assert_string_equal(mock_master_last(f->mock, "EVALSHA")->argv[3], "kept");
  assert_int_equal(mock_master_count(f->mock, "EVALSHA"), 3);
  assert_int_equal(f->node.pipe.queued_bytes, 0);
  assert_int_equal(stats->masters[0].queued, 0);
  assert_int_equal(stats->masters[0].queued_bytes, 0);
  /* Usable again. */
  assert_int_equal(nf_send(f, &set, "GET k", 0), 0);
  nf_wait_req(f, &set);
  f->node.stats = NULL;
  free(stats);
  free(value);
  free(cmd);
}

/* Kept releases are bounded in bytes too: the oldest go, counted as
 * abandoned; at close (node_abandon) every one left is abandoned. */
static void test_missed_releases_bytes_capped(void **state) {
  nf_t *f = *state;
  enum { LEN = 1 << 20 };
  char *cmd = calloc(1, LEN);
  assert_non_null(cmd);
  struct stats *stats = calloc(1, sizeof *stats + sizeof stats->masters[0]);
  assert_non_null(stats);
  stats->n_masters = 1;
  assert_int_equal(node_init(&f->node, &f->env, 0, &f->addr), 0);
  f->node.stats = stats;
  const unsigned fit = (unsigned)(NODE_MAX_MISSED_BYTES / LEN);
  for (unsigned i = 0; i < fit + 3; i++)
    node_defer_release(&f->node, cmd, LEN);
  assert_int_equal(f->node.replay.n_missed_releases, fit);
  assert_true(f->node.replay.missed_bytes <= NODE_MAX_MISSED_BYTES);
  assert_int_equal(stats->masters[0].releases_kept, fit);
  assert_int_equal(stats->masters[0].releases_abandoned, 3);
  assert_int_equal(node_releases_owed(&f->node), fit);
  f->started = 1;
  node_start(&f->node); /* so that it has a timer to stop */
  node_abandon(&f->node);
  assert_int_equal(f->node.state, NODE_CLOSED);
  assert_int_equal(f->node.replay.n_missed_releases, 0);
  assert_int_equal(stats->masters[0].releases_abandoned, fit + 3);
  node_defer_release(&f->node, cmd, 10); /* closing: abandoned at once */
  assert_int_equal(f->node.replay.n_missed_releases, 0);
  assert_int_equal(stats->masters[0].releases_abandoned, fit + 4);
  f->node.stats = NULL;
  free(stats);
  free(cmd);
}

/* ---- hung masters -------------------------------------------------------------------- */

static void hung_tick(uv_timer_t *timer) { node_drop_if_hung(timer->data); }

/* Requests out and no reply for NODE_HUNG_REQUEST_TIMEOUTS request timeouts:
 * the connection is dropped and the node reconnects. */
static void test_hung_master(void **state) {
  nf_t *f = *state;
  start_ready(f);
  mock_master_on(f->mock, "SET", MOCK_HOLD, NULL, 0);
  nf_req_t r;
  assert_int_equal(nf_send(f, &r, "SET k v", 0), 0);
  nf_wait_received(f, "SET", 1);
  node_drop_if_hung(&f->node); /* a minute per timeout: not hung */
  assert_int_equal(f->node.state, NODE_READY);
  /* now the request timeout is 5 ms: the watch (ticking as a round's
   * deadline would) drops it soon */
  f->env.request_timeout_ms = 5;
  uv_timer_t tick;
  uv_timer_init(&f->loop, &tick);
  tick.data = &f->node;
  uv_timer_start(&tick, hung_tick, 5, 5);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  uv_close((uv_handle_t *)&tick, NULL);
  const nf_event_t *down = nf_last(f, NODE_EV_DOWN);
  assert_string_equal(down->what, "master not answering; reconnecting");
  assert_int_equal(down->state, NODE_READY);
  assert_non_null(strstr(down->detail, "with 1 requests waiting"));
  assert_true(r.done);
  assert_false(r.got_reply);
  mock_master_clear_rules(f->mock);
  nf_wait_event(f, NODE_EV_UP, 2);
}

/* A request handed over while the loop was kept busy (by a long callback of
 * the application's, or 100 000 calls drained at once) is not written until
 * the turn's flush.  Judged before that, the master is blamed for our own
 * delay: node_write_late writes it and starts the master's clock now. */
static void test_unwritten_not_hung(void **state) {
  nf_t *f = *state;
  start_ready(f);
  f->env.request_timeout_ms = 5; /* hung after 15 ms without a reply */
  nf_req_t r;
  assert_int_equal(nf_send(f, &r, "SET k v", 0), 0);
  /* The stall itself: no loop turn while more than the hung limit passes. */
  uint64_t handed_ns = clock_now_ns();
  while (clock_now_ns() - handed_ns < 20 * 1000000u)
    ;
  node_write_late(&f->node);
  node_drop_if_hung(&f->node);
  assert_int_equal(f->node.state, NODE_READY);
  nf_wait_req(f, &r);
  assert_true(r.got_reply);
  assert_int_equal(nf_count(f, NODE_EV_DOWN), 0);
  node_write_late(&f->node); /* nothing left to write: no effect */
  assert_int_equal(f->node.state, NODE_READY);
}

/* The master holds a first request that was written, by node_write_late
 * (a deadline check) or by the loop's own flush; a later one is handed over
 * and the loop stalls past the hung limit.  Writing the later one late does
 * not restart the master's clock: the wait began with a written send. */
static void check_written_then_silent_hung(nf_t *f, int written_by_loop) {
  start_ready(f);
  mock_master_on(f->mock, "SET", MOCK_HOLD, NULL, 0);
  f->env.request_timeout_ms = 5; /* hung after 15 ms without a reply */
  nf_req_t first, later;
  assert_int_equal(nf_send(f, &first, "SET k v", 0), 0);
  if (written_by_loop)
    nf_wait_received(f, "SET", 1);
  else
    node_write_late(&f->node);
  uint64_t written_ns = clock_now_ns();
  assert_int_equal(nf_send(f, &later, "SET k2 v", 0), 0);
  while (clock_now_ns() - written_ns < 20 * 1000000u)
    ;
  node_write_late(&f->node); /* writes the later one only */
  node_drop_if_hung(&f->node);
  assert_int_equal(f->node.state, NODE_DOWN);
  const nf_event_t *down = nf_last(f, NODE_EV_DOWN);
  assert_string_equal(down->what, "master not answering; reconnecting");
  assert_true(first.done && later.done);
  mock_master_clear_rules(f->mock);
  nf_wait_event(f, NODE_EV_UP, 2);
}

/* Two deadline checks due together run before any flush, and the first
 * one's work queues output. */
static void test_written_then_silent_hung(void **state) {
  check_written_then_silent_hung(*state, 0);
}

/* The turn's flush wrote the first request long before the stall. */
static void test_flushed_then_silent_hung(void **state) {
  check_written_then_silent_hung(*state, 1);
}

/* Idle (nothing out): never hung, however long. */
static void test_idle_not_hung(void **state) {
  nf_t *f = *state;
  start_ready(f);
  f->env.request_timeout_ms = 0;
  node_drop_if_hung(&f->node);
  assert_int_equal(f->node.state, NODE_READY);
}

/* ---- replayed releases --------------------------------------------------------------- */

static void format_release(char *out, size_t *len, const char *key) {
  const char *argv[] = {"EVALSHA", "0123456789", "1", key, "value"};
  size_t lens[5];
  for (int i = 0; i < 5; i++)
    lens[i] = strlen(argv[i]);
  *len = resp_command_len(5, lens);
  resp_write_command(out, 5, argv, lens);
}

/* Releases kept while the master was unreachable go out once it is READY:
 * REPLAYS_DUE after UP, SETTLED when the last one is answered. */
static void test_replays(void **state) {
  nf_t *f = *state;
  char cmd[128];
  size_t len;
  mock_master_stop_listening(f->mock);
  nf_start(f);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  format_release(cmd, &len, "k1");
  node_defer_release(&f->node, cmd, len);
  format_release(cmd, &len, "k2");
  node_defer_release(&f->node, cmd, len);
  assert_int_equal(f->node.replay.n_missed_releases, 2);
  mock_master_on(f->mock, "EVALSHA", MOCK_HOLD, NULL, 0);
  assert_int_equal(mock_master_listen(f->mock), 0);
  nf_wait_event(f, NODE_EV_REPLAYS_DUE, 1);
  assert_true(nf_index(f, NODE_EV_UP, 1) < nf_index(f, NODE_EV_REPLAYS_DUE, 1));
  assert_int_equal(f->node.replay.n_missed_releases, 0);
  assert_int_equal(f->node.replay.replays_out, 2);
  assert_true(node_owes_releases(&f->node));
  assert_true(node_replays_due_ns(&f->node) > f->node.hung.progress_ns);
  assert_true(nf_logged(f, "replaying 2 release(s)"));
  nf_wait_received(f, "EVALSHA", 2);
  assert_string_equal(mock_master_command(f->mock, mock_master_n_commands(f->mock) - 2)->argv[3],
                      "k1"); /* in order */
  assert_string_equal(mock_master_last(f->mock, "EVALSHA")->argv[3], "k2");
  assert_int_equal(nf_count(f, NODE_EV_SETTLED), 0);
  mock_master_release(f->mock);
  nf_wait_event(f, NODE_EV_SETTLED, 1);
  assert_false(node_owes_releases(&f->node));
  assert_int_equal(node_replays_due_ns(&f->node), 0);
}

/* A replay lost with the connection is kept again, and replayed on the
 * next connection. */
static void test_replay_lost_then_again(void **state) {
  nf_t *f = *state;
  char cmd[128];
  size_t len;
  format_release(cmd, &len, "k");
  assert_int_equal(node_init(&f->node, &f->env, 0, &f->addr), 0);
  node_defer_release(&f->node, cmd, len); /* before the first attempt */
  f->started = 1;
  node_start(&f->node);
  mock_master_on(f->mock, "EVALSHA", MOCK_CLOSE, NULL, 1);
  nf_wait_event(f, NODE_EV_SETTLED, 1); /* the replay came back without a reply */
  assert_int_equal(f->node.replay.n_missed_releases, 1);
  nf_wait_event(f, NODE_EV_SETTLED, 2); /* replayed on the next connection, answered */
  assert_int_equal(nf_count(f, NODE_EV_REPLAYS_DUE), 2);
  assert_int_equal(f->node.replay.n_missed_releases, 0);
  assert_int_equal(mock_master_count(f->mock, "EVALSHA"), 2);
}

/* At most NODE_MAX_MISSED_RELEASES are kept: the oldest goes. */
static void test_missed_releases_capped(void **state) {
  nf_t *f = *state;
  assert_int_equal(node_init(&f->node, &f->env, 0, &f->addr), 0);
  for (unsigned i = 0; i <= NODE_MAX_MISSED_RELEASES; i++)
    node_defer_release(&f->node, i == 0 ? "first" : "later", 5);
  assert_int_equal(f->node.replay.n_missed_releases, NODE_MAX_MISSED_RELEASES);
  missed_release_t *oldest =
      list_entry(f->node.replay.missed_releases.next, missed_release_t, link);
  assert_memory_equal(oldest->cmd, "later", 5);
  node_free(&f->node); /* frees them (never started) */
}

/* ---- restart quarantine -------------------------------------------------------------- */

/* A master that reports a small uptime is quarantined for max TTL minus its
 * age; QUARANTINE_END when that is over. */
static void test_quarantine_small_uptime(void **state) {
  nf_t *f = *state;
  start_quarantining(f, 300, 0);
  assert_true(f->node.server.quarantine.until_ns != 0);
  assert_true(node_is_quarantined(&f->node, f->node.ready_ns));
  assert_true(nf_logged(f, "its votes do not count"));
  nf_wait_event(f, NODE_EV_QUARANTINE_END, 1);
  assert_true(nf_index(f, NODE_EV_UP, 1) < nf_index(f, NODE_EV_QUARANTINE_END, 1));
  assert_false(node_quarantined_now(&f->node));
  assert_true(nf_logged(f, "restart quarantine over"));
}

/* Up longer than the max TTL: no quarantine. */
static void test_quarantine_long_uptime(void **state) {
  nf_t *f = *state;
  start_quarantining(f, 30000, 3600);
  assert_int_equal(f->node.server.quarantine.until_ns, 0);
  assert_false(node_quarantined_now(&f->node));
  assert_false(node_is_quarantined(&f->node, clock_now_ns()));
}

/* Quarantine off: even a master just started counts at once. */
static void test_quarantine_off(void **state) {
  nf_t *f = *state;
  f->env.quarantine = 0;
  mock_master_set_uptime(f->mock, 0);
  start_ready(f);
  assert_int_equal(f->node.server.quarantine.until_ns, 0);
}

/* The master restarted while we were away (its run_id changed, it is
 * young): logged as a restart and quarantined until it has been up max TTL. */
static void test_restart_changed_run_id(void **state) {
  nf_t *f = *state;
  f->env.quarantine = 1;
  f->env.max_ttl_ms = 200;
  start_ready(f);
  assert_false(node_quarantined_now(&f->node));
  mock_master_set_run_id(f->mock, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  mock_master_set_uptime(f->mock, 1);
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_string_equal(f->node.server.run_id, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  assert_true(nf_logged(f, "restarted (run_id changed; up 1 s)"));
  assert_true(f->node.server.quarantine.until_ns != 0);
  nf_wait_event(f, NODE_EV_QUARANTINE_END, 1);
  assert_false(node_quarantined_now(&f->node));
}

/* A quarantined master that goes down before the end: no QUARANTINE_END
 * (the timer is the backoff's now); it comes back and is judged anew. */
static void test_quarantine_interrupted(void **state) {
  nf_t *f = *state;
  start_quarantining(f, 30000, 0);
  assert_true(node_quarantined_now(&f->node));
  mock_master_set_uptime(f->mock, 3600);
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_false(node_quarantined_now(&f->node));
  assert_int_equal(nf_count(f, NODE_EV_QUARANTINE_END), 0);
}

/* ---- warnings -------------------------------------------------------------------------- */

static void test_warn_rate_limited(void **state) {
  nf_t *f = *state;
  assert_int_equal(node_init(&f->node, &f->env, 0, &f->addr), 0);
  node_warn(&f->node, "request timed out", "after 10 ms");
  assert_true(nf_logged(f, "request timed out: after 10 ms"));
  node_warn(&f->node, "second", NULL); /* within the second: DEBUG, counted */
  assert_int_equal(f->node.warn_limit.left_out, 1);
  f->node.warn_limit.last_ns -= 2000000000u; /* as if two seconds had passed */
  node_warn(&f->node, "third", NULL);
  assert_true(nf_logged(f, "third (1 more like this in the last 2 s)"));
  assert_int_equal(f->node.warn_limit.left_out, 0);
  f->log.cb = NULL; /* logging off: nothing at all */
  node_warn(&f->node, "fourth", NULL);
  assert_false(nf_logged(f, "fourth"));
  node_free(&f->node);
}

/* ---- failover-aware quarantine and durability acks (quarantine.h) --------------------- */

#define REPLID_A "1111111111111111111111111111111111111111"
#define REPLID_B "2222222222222222222222222222222222222222"
#define NO_REPLID "0000000000000000000000000000000000000000"

/* A replica given as a master never comes up: its handshake fails, and why
 * is what redlock_last_votes shows for it. */
static void test_replica_refused(void **state) {
  nf_t *f = *state;
  mock_master_set_replication(f->mock, "slave", REPLID_A, NO_REPLID, 0);
  nf_start(f);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  assert_int_not_equal(f->node.state, NODE_READY);
  assert_non_null(strstr(f->node.down_why, "it is a replica (role: slave)"));
  assert_int_equal(nf_count(f, NODE_EV_UP), 0);
}

/* First sight of a master promoted at a time INFO does not give
 * (master_replid2 set): max TTL from now, said once, named in the votes. */
static void test_failover_first_sight(void **state) {
  nf_t *f = *state;
  mock_master_set_replication(f->mock, "master", REPLID_B, REPLID_A, 1);
  start_quarantining(f, 30000, 3600);
  assert_true(node_quarantined_now(&f->node));
  assert_int_equal(f->node.server.quarantine.kind, QUARANTINE_FAILOVER);
  assert_true(nf_logged(f, "was promoted from a replica"));
  char why[128];
  node_why(&f->node, WHY_QUARANTINED, why, sizeof why);
  assert_non_null(strstr(why, "failover quarantine: "));
  assert_non_null(strstr(why, " ms left"));
  /* kept across a reconnect to the same server, which does not tell again */
  uint64_t until = f->node.server.quarantine.until_ns;
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_int_equal(f->node.server.quarantine.until_ns, until);
  assert_int_equal(f->node.server.quarantine.kind, QUARANTINE_FAILOVER);
}

/* The same server's replication id changes (it was demoted and promoted):
 * failover quarantine from when it is seen. */
static void test_failover_replid_changed(void **state) {
  nf_t *f = *state;
  mock_master_set_replication(f->mock, "master", REPLID_A, NO_REPLID, 0);
  start_quarantining(f, 30000, 3600);
  assert_false(node_quarantined_now(&f->node));
  mock_master_set_replication(f->mock, "master", REPLID_B, NO_REPLID, 0);
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_true(node_quarantined_now(&f->node));
  assert_int_equal(f->node.server.quarantine.kind, QUARANTINE_FAILOVER);
}

/* Another server behind the address: a new run_id from a server already up
 * long before the old connection was lost. */
static void test_moved_server(void **state) {
  nf_t *f = *state;
  start_quarantining(f, 30000, 3600);
  assert_false(node_quarantined_now(&f->node));
  mock_master_set_run_id(f->mock, "cccccccccccccccccccccccccccccccccccccccc");
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_true(node_quarantined_now(&f->node));
  assert_int_equal(f->node.server.quarantine.kind, QUARANTINE_MOVED);
  assert_true(nf_logged(f, "is another server than before (run_id changed; up 3600 s)"));
}

/* wait=R covering every replica waives the failover quarantine; a restart
 * is still one. */
static void test_acks_cover_failover(void **state) {
  nf_t *f = *state;
  nf_address(f, NULL, "?wait=1", 0);
  mock_master_set_replication(f->mock, "master", REPLID_B, REPLID_A, 1);
  start_quarantining(f, 30000, 3600);
  assert_false(node_quarantined_now(&f->node));
  mock_master_set_run_id(f->mock, "dddddddddddddddddddddddddddddddddddddddd");
  mock_master_set_uptime(f->mock, 1);
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_true(node_quarantined_now(&f->node));
  assert_int_equal(f->node.server.quarantine.kind, QUARANTINE_RESTART);
}

/* ---- a master that moves (node_retarget, node_hint: the Sentinel voter's) ------------ */

/* The node follows its master to another address: the old connection goes
 * (DOWN "master moved"), a new one comes up there at once, and the server
 * found there is another server, never a restart, however young: it may
 * lack what the old one granted while the old one lives on. */
static void test_retarget(void **state) {
  nf_t *f = *state;
  mock_master_set_replication(f->mock, "master", REPLID_A, NO_REPLID, 1);
  start_quarantining(f, 30000, 3600);
  assert_false(node_quarantined_now(&f->node));
  mock_master_t *other = mock_master_start(&f->loop);
  assert_non_null(other);
  mock_master_set_run_id(other, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
  mock_master_set_uptime(other, 1); /* started "after the loss": still not a restart */
  mock_master_set_replication(other, "master", REPLID_B, REPLID_A, 0);
  /* the same address: nothing to do */
  assert_int_equal(node_retarget(&f->node, "127.0.0.1", mock_master_port(f->mock), "same"), 0);
  assert_int_equal(nf_count(f, NODE_EV_DOWN), 0);
  assert_int_equal(node_retarget(&f->node, "127.0.0.1", mock_master_port(other), "moved"), 0);
  int down = nf_index(f, NODE_EV_DOWN, 1);
  assert_true(down >= 0);
  assert_string_equal(f->events[down].what, "master moved");
  assert_string_equal(f->events[down].detail, "moved");
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_int_equal(f->node.addr.port, mock_master_port(other));
  assert_true(mock_master_count(other, "INFO") >= 2);
  assert_true(node_quarantined_now(&f->node));
  assert_int_equal(f->node.server.quarantine.kind, QUARANTINE_MOVED);
  nf_shutdown(f);
  mock_master_close(other);
}

/* Acks that covered every replica of the old master waive a move to its
 * promoted replica (its master_replid2 is the old one's replication id). */
static void test_retarget_acked(void **state) {
  nf_t *f = *state;
  nf_address(f, NULL, "?wait=1", 0);
  mock_master_set_replication(f->mock, "master", REPLID_A, NO_REPLID, 1);
  start_quarantining(f, 30000, 3600);
  mock_master_t *other = mock_master_start(&f->loop);
  assert_non_null(other);
  mock_master_set_run_id(other, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
  mock_master_set_replication(other, "master", REPLID_B, REPLID_A, 0);
  assert_int_equal(node_retarget(&f->node, "127.0.0.1", mock_master_port(other), "moved"), 0);
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_false(node_quarantined_now(&f->node));
  nf_shutdown(f);
  mock_master_close(other);
}

/* A node not started yet only takes the address. */
static void test_retarget_unstarted(void **state) {
  nf_t *f = *state;
  assert_int_equal(node_init(&f->node, &f->env, 0, &f->addr), 0);
  f->started = 1;
  assert_int_equal(node_retarget(&f->node, "127.0.0.2", 7777, "moved"), 0);
  assert_string_equal(f->node.addr.host, "127.0.0.2");
  assert_int_equal(f->node.addr.port, 7777);
  assert_int_equal(f->n_events, 0);
}

/* The hint dates a first-sight promotion: one older than max TTL costs
 * nothing, a recent one the rest of max TTL; a hint about another run_id
 * is ignored. */
static void test_hint(void **state) {
  nf_t *f = *state;
  mock_master_set_replication(f->mock, "master", REPLID_B, REPLID_A, 0);
  f->env.quarantine = 1;
  f->env.max_ttl_ms = 30000;
  assert_int_equal(node_init(&f->node, &f->env, 0, &f->addr), 0);
  f->started = 1;
  uint64_t now = tb_now_ns(&f->tb);
  node_hint(&f->node, NULL, now - 40ull * 1000000000u); /* run_id not known: any */
  node_start(&f->node);
  nf_wait_event(f, NODE_EV_UP, 1);
  assert_false(node_quarantined_now(&f->node));
  /* recent, for this run_id: quarantined the rest of max TTL */
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  f->node.server.quarantine.past.seen = 0; /* (as a client that sees it first now) */
  now = tb_now_ns(&f->tb);
  node_hint(&f->node, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", now - 20ull * 1000000000u);
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_true(node_quarantined_now(&f->node));
  assert_true(f->node.server.quarantine.until_ns <= now + 10ull * 1000000000u);
  /* about another server: max TTL from the handshake */
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_DOWN, 2);
  f->node.server.quarantine.past.seen = 0;
  now = tb_now_ns(&f->tb);
  node_hint(&f->node, "cccccccccccccccccccccccccccccccccccccccc", now - 40ull * 1000000000u);
  nf_wait_event(f, NODE_EV_UP, 3);
  assert_true(f->node.server.quarantine.until_ns >= now + 30ull * 1000000000u);
}

/* -READONLY and -LOADING say the server is no master now: reported once per
 * connection (a Sentinel voter asks where the master went). */
static void test_not_master_reply(void **state) {
  nf_t *f = *state;
  mock_master_on(f->mock, "SET", MOCK_REPLY,
                 "-READONLY You can't write against a read only "
                 "replica.\r\n",
                 0);
  start_ready(f);
  nf_req_t a, b;
  assert_int_equal(nf_send(f, &a, "SET k v", 0), 0);
  assert_int_equal(nf_send(f, &b, "SET k v", 0), 0);
  nf_wait_req(f, &a);
  nf_wait_req(f, &b);
  assert_int_equal(nf_count(f, NODE_EV_NOT_MASTER), 1);
  int i = nf_index(f, NODE_EV_NOT_MASTER, 1);
  assert_non_null(strstr(f->events[i].detail, "READONLY"));
  /* a new connection may say it again; other errors say nothing */
  mock_master_clear_rules(f->mock);
  mock_master_on(f->mock, "SET", MOCK_REPLY, "-LOADING Redis is loading the dataset\r\n", 0);
  mock_master_on(f->mock, "GET", MOCK_REPLY, "-ERR other\r\n", 0);
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_UP, 2);
  nf_req_t c, d;
  assert_int_equal(nf_send(f, &c, "GET k", 0), 0);
  assert_int_equal(nf_send(f, &d, "SET k v", 0), 0);
  nf_wait_req(f, &c);
  nf_wait_req(f, &d);
  assert_int_equal(nf_count(f, NODE_EV_NOT_MASTER), 2);
}

/* waitaof=1,R: every counted write was fsynced first, so a restart loses
 * none of them: no restart quarantine. */
static void test_aof_acks_waive_restart(void **state) {
  nf_t *f = *state;
  nf_address(f, NULL, "?waitaof=1,0", 0);
  start_quarantining(f, 30000, 0);
  assert_false(node_quarantined_now(&f->node));
}

/* A write that asks an ack goes out with WAIT behind it; fn runs once, with
 * the write's reply, when the ack is in; short of it, unacked and why. */
static void test_ack_pipelined(void **state) {
  nf_t *f = *state;
  nf_address(f, NULL, "?wait=2&wait_ms=40", 0);
  start_ready(f);
  assert_non_null(f->node.acks.ack_cmd);
  mock_master_on(f->mock, "WAIT", MOCK_REPLY, ":2\r\n", 1);
  nf_req_t r;
  assert_int_equal(nf_send_ack(f, &r, "SET k v"), ST_OK);
  nf_wait_req(f, &r);
  assert_true(r.got_reply);
  assert_string_equal(r.str, "OK");
  assert_false(r.req.unacked);
  const mock_cmd_t *wait = mock_master_last(f->mock, "WAIT");
  assert_non_null(wait);
  assert_string_equal(wait->argv[1], "2");
  assert_string_equal(wait->argv[2], "40");
  /* one replica only: unacked, with the reason kept for the votes */
  mock_master_on(f->mock, "WAIT", MOCK_REPLY, ":1\r\n", 1);
  assert_int_equal(nf_send_ack(f, &r, "SET k v"), ST_OK);
  nf_wait_req(f, &r);
  assert_true(r.req.unacked);
  assert_string_equal(f->node.acks.ack_why, "WAIT: 1 of 2 replicas acknowledged in time");
  assert_true(nf_logged(f, "durability ack fell short"));
  /* a request that asks none: no WAIT */
  unsigned waits = mock_master_count(f->mock, "WAIT");
  assert_int_equal(nf_send(f, &r, "SET k v", 0), ST_OK);
  nf_wait_req(f, &r);
  assert_int_equal(mock_master_count(f->mock, "WAIT"), waits);
  /* the connection goes before the ack: fn runs once, without a reply */
  mock_master_on(f->mock, "WAIT", MOCK_CLOSE, NULL, 1);
  assert_int_equal(nf_send_ack(f, &r, "SET k v"), ST_OK);
  nf_wait_req(f, &r);
  assert_false(r.got_reply);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, nf_setup, nf_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_send_while_not_ready),
      T(test_request_replies),
      T(test_output_room),
      T(test_read_pending),
      T(test_unsolicited_error),
      T(test_close_mid_reply),
      T(test_backlog),
      T(test_batch_writes),
      T(test_backlog_busy_then_down),
      T(test_queue_bytes_bound),
      T(test_missed_releases_bytes_capped),
      T(test_hung_master),
      T(test_idle_not_hung),
      T(test_unwritten_not_hung),
      T(test_replies_pooled),
      T(test_written_then_silent_hung),
      T(test_flushed_then_silent_hung),
      T(test_replays),
      T(test_replay_lost_then_again),
      T(test_missed_releases_capped),
      T(test_replica_refused),
      T(test_failover_first_sight),
      T(test_failover_replid_changed),
      T(test_moved_server),
      T(test_acks_cover_failover),
      T(test_retarget),
      T(test_retarget_acked),
      T(test_retarget_unstarted),
      T(test_hint),
      T(test_not_master_reply),
      T(test_aof_acks_waive_restart),
      T(test_ack_pipelined),
      T(test_quarantine_small_uptime),
      T(test_quarantine_long_uptime),
      T(test_quarantine_off),
      T(test_restart_changed_run_id),
      T(test_quarantine_interrupted),
      T(test_warn_rate_limited),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
