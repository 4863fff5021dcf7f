/* test_node_acks.c: durability acks (wait= / waitaof=) on one master
 * (node_acks.c) against the in-process mock master: one ack command per write of
 * the connection's output, after the last write that asks one, whose reply
 * settles every such write before it; a batch per flush; an ack's error or
 * shortfall fails its whole batch with the reason; an ack that cannot be
 * queued, or a write's reply that cannot be kept, for want of memory; a lost
 * connection; releases, which ask none; the queue's counts.
 *
 * The two failures are injected with no hook in node.c and no wrapper of a
 * function of the library or of hiredis:
 *  - the kept copy of a write's reply (reply_clone) fails in the allocator,
 *    as it would for real: main installs a table of its own
 *    (redlock_set_allocator), and a test arms "fail the next malloc of n
 *    bytes" with n a size that only that copy asks for.  The write's reply
 *    is a status string of REPLY_ODD_LEN bytes, whose copy is
 *    malloc(REPLY_ODD_LEN + 1); hiredis reads the reply into an object of
 *    its own, with libc's allocator (0.14 has no hook, and 1.x's is reset
 *    to libc's after the table is installed), where the table does not
 *    reach; the mock master allocates with realloc and calloc; the reply
 *    pool's blocks have a size of their own.
 *  - the ack command is refused through hiredis' public state: while
 *    REDIS_DISCONNECTING is set in the context's flags (redisContext.flags,
 *    hiredis.h), redisAsyncFormattedCommand returns REDIS_ERR before it
 *    allocates or queues anything (0.14 and 1.x), which is what node.c gets
 *    when hiredis is out of memory.  A failing allocator cannot give that
 *    refusal: hiredis 0.14 allocates in its shared library, out of reach of
 *    any hook, and ignores a failed allocation there (the command is queued
 *    without its callback, and REDIS_OK returned); hiredis 1.x, besides the
 *    refusal, marks the context failed (REDIS_ERR_OOM), so that the next
 *    write drops the connection, and the refusal on a live connection would
 *    go untested.  The flag is set only for the flush that queues the ack,
 *    while the mock holds every reply: hiredis also reads it as "close once
 *    the last pending reply is in". */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/async.h>
#if HIREDIS_MAJOR >= 1
#include <hiredis/alloc.h>
#endif

#include "node_fixture.h"
#include "proto/reply.h"
#include "redlock.h"

/* ---- injected failures ------------------------------------------------------------- */

/* The length of a write's reply whose kept copy is to fail: a size no other
 * malloc on the way of a reply asks for. */
#define REPLY_ODD_LEN 333

/* Armed: the next malloc of exactly this many bytes fails (0: none).  Atomic:
 * a node's name lookups run on a thread of their own. */
static atomic_size_t malloc_fail_size;
static atomic_uint mallocs_failed;

static void *fail_malloc(size_t size) {
  size_t armed = size;
  if (size != 0 && atomic_compare_exchange_strong(&malloc_fail_size, &armed, 0)) {
    atomic_fetch_add(&mallocs_failed, 1);
    return NULL;
  }
  return malloc(size);
}

/* The library allocates through fail_malloc; hiredis keeps libc's. */
static void install_allocator(void) {
  const redlock_allocator_t table = {
      .malloc_fn = fail_malloc, .calloc_fn = calloc, .realloc_fn = realloc, .free_fn = free};
  if (redlock_set_allocator(&table) != REDLOCK_OK)
    abort();
#if HIREDIS_MAJOR >= 1
  hiredisResetAllocators();
#endif
}

/* hiredis refuses every command queued from now on (on), or takes them
 * again (off).  REDIS_DISCONNECTING: the context is being closed. */
static void hiredis_refuses(nf_t *f, int on) {
  redisAsyncContext *ac = f->node.link.ac;
  assert_non_null(ac);
  if (on)
    ac->c.flags |= REDIS_DISCONNECTING;
  else
    ac->c.flags &= ~REDIS_DISCONNECTING;
}

static int setup(void **state) {
  atomic_store(&malloc_fail_size, 0);
  atomic_store(&mallocs_failed, 0);
  return nf_setup(state);
}

/* ---- helpers ---------------------------------------------------------------------- */

/* A master asking `suffix`'s ack ("?wait=1"), up. */
static void start_acked(nf_t *f, const char *suffix) {
  nf_address(f, NULL, suffix, 0);
  nf_start(f);
  nf_wait_event(f, NODE_EV_UP, 1);
  assert_non_null(f->node.acks.ack_cmd);
}

/* The names of the commands the mock received from `from` on, one space
 * between ("SET SET WAIT"). */
static const char *names_since(const nf_t *f, size_t from) {
  static char buf[512];
  buf[0] = '\0';
  size_t n = mock_master_n_commands(f->mock);
  for (size_t i = from; i < n; i++) {
    const mock_cmd_t *cmd = mock_master_command(f->mock, i);
    size_t used = strlen(buf);
    snprintf(buf + used, sizeof buf - used, "%s%s", used > 0 ? " " : "", cmd->argv[0]);
  }
  return buf;
}

typedef struct {
  nf_req_t *r;
  unsigned n;
} reqs_t;

/* Every request's write reply is in and kept, waiting for its ack. */
static int all_held(void *arg) {
  const reqs_t *reqs = arg;
  for (unsigned i = 0; i < reqs->n; i++)
    if (reqs->r[i].req.held == NULL)
      return 0;
  return 1;
}

static int all_done(void *arg) {
  const reqs_t *reqs = arg;
  for (unsigned i = 0; i < reqs->n; i++)
    if (!reqs->r[i].done)
      return 0;
  return 1;
}

static void wait_all(nf_t *f, int (*done)(void *), nf_req_t *r, unsigned n) {
  reqs_t reqs = {r, n};
  assert_true(mock_run_until(&f->loop, done, &reqs, NF_WAIT_MS));
}

/* Sends n writes that ask an ack ("SET k<i> v"), in one loop turn. */
static void send_writes(nf_t *f, nf_req_t *r, unsigned n, unsigned first) {
  for (unsigned i = 0; i < n; i++) {
    char words[32];
    snprintf(words, sizeof words, "SET k%u v", first + i);
    assert_int_equal(nf_send_ack(f, &r[i], words), ST_OK);
  }
}

/* ---- tests ------------------------------------------------------------------------ */

/* N writes handed over in one loop turn go out with exactly one WAIT, after
 * the last of them; their own replies are kept and none is settled until the
 * WAIT's reply comes, which settles them all.  The queue counts the WAIT
 * once. */
static void test_one_wait_per_flush(void **state) {
  nf_t *f = *state;
  start_acked(f, "?wait=1");
  enum { N = 5 };
  nf_req_t r[N];
  mock_master_on(f->mock, "WAIT", MOCK_HOLD, ":1\r\n", 1);
  size_t base = mock_master_n_commands(f->mock);
  size_t bytes = 0;
  send_writes(f, r, N, 0);
  for (unsigned i = 0; i < N; i++)
    bytes += r[i].req.len;
  assert_int_equal(f->node.pipe.inflight, N); /* the WAIT is not queued before the write */
  nf_wait_received(f, "WAIT", 1);
  assert_string_equal(names_since(f, base), "SET SET SET SET SET WAIT");
  assert_int_equal(f->node.pipe.inflight, N + 1);
  assert_int_equal(f->node.pipe.queued_bytes, bytes + f->node.acks.ack_cmd_len);
  wait_all(f, all_held, r, N); /* every SET answered, none settled */
  for (unsigned i = 0; i < N; i++)
    assert_false(r[i].done);
  assert_int_equal(mock_master_release(f->mock), 1);
  wait_all(f, all_done, r, N);
  for (unsigned i = 0; i < N; i++) {
    assert_true(r[i].got_reply);
    assert_string_equal(r[i].str, "OK");
    assert_false(r[i].req.unacked);
    assert_false(r[i].req.nomem);
    assert_null(r[i].req.held);
  }
  assert_int_equal(mock_master_count(f->mock, "WAIT"), 1);
  assert_int_equal(f->node.pipe.inflight, 0);
  assert_int_equal(f->node.pipe.queued_bytes, 0);
}

/* Writes of two loop turns go out with a WAIT each, and each batch is
 * settled by its own: the first WAIT reached its replica, the second did
 * not, and only the second batch is unacked, with the reason. */
static void test_wait_per_turn(void **state) {
  nf_t *f = *state;
  start_acked(f, "?wait=1");
  nf_req_t a[2], b[3];
  mock_master_on(f->mock, "WAIT", MOCK_HOLD, ":1\r\n", 1);
  mock_master_on(f->mock, "WAIT", MOCK_REPLY, ":0\r\n", 1); /* queued behind the held one */
  size_t base = mock_master_n_commands(f->mock);
  send_writes(f, a, 2, 0);
  nf_wait_received(f, "WAIT", 1);
  send_writes(f, b, 3, 2);
  nf_wait_received(f, "WAIT", 2);
  assert_string_equal(names_since(f, base), "SET SET WAIT SET SET SET WAIT");
  assert_int_equal(f->node.pipe.inflight, 7); /* five writes and two WAITs */
  assert_false(a[0].done || a[1].done);
  mock_master_release(f->mock);
  wait_all(f, all_done, b, 3);
  for (unsigned i = 0; i < 2; i++) {
    assert_string_equal(a[i].str, "OK");
    assert_false(a[i].req.unacked);
  }
  for (unsigned i = 0; i < 3; i++) {
    assert_string_equal(b[i].str, "OK"); /* the write's reply, short of its ack */
    assert_true(b[i].req.unacked);
    assert_false(b[i].req.nomem);
  }
  assert_string_equal(f->node.acks.ack_why, "WAIT: 0 of 1 replica acknowledged in time");
  assert_true(nf_logged(f, "durability ack fell short"));
  assert_int_equal(f->node.pipe.inflight, 0);
  assert_int_equal(f->node.pipe.queued_bytes, 0);
}

/* An error reply to the ack (WAITAOF on a server without it) fails every
 * write of its batch, whatever each write's own reply, with that reason;
 * the next batch is judged by its own ack. */
static void test_ack_error_fails_batch(void **state) {
  nf_t *f = *state;
  start_acked(f, "?waitaof=0,1");
  mock_master_on(f->mock, "WAITAOF", MOCK_REPLY,
                 "-ERR unknown command 'WAITAOF', with args beginning with: \r\n", 1);
  mock_master_on(f->mock, "SET", MOCK_REPLY, "$-1\r\n", 1); /* one write refused */
  nf_req_t r[3];
  size_t base = mock_master_n_commands(f->mock);
  send_writes(f, r, 3, 0);
  wait_all(f, all_done, r, 3);
  assert_string_equal(names_since(f, base), "SET SET SET WAITAOF");
  assert_int_equal(r[0].reply_type, REDIS_REPLY_NIL);
  for (unsigned i = 0; i < 3; i++) {
    assert_true(r[i].got_reply);
    assert_true(r[i].req.unacked);
    assert_false(r[i].req.nomem);
  }
  assert_string_equal(f->node.acks.ack_why,
                      "WAITAOF: ERR unknown command 'WAITAOF', with args beginning with: ");
  /* the next batch: its ack met */
  mock_master_on(f->mock, "WAITAOF", MOCK_REPLY, "*2\r\n:0\r\n:1\r\n", 1);
  send_writes(f, r, 2, 3);
  wait_all(f, all_done, r, 2);
  assert_false(r[0].req.unacked || r[1].req.unacked);
}

/* A write's reply that cannot be kept until its ack comes is an error for
 * want of memory here (nomem): it never counts; the others of its batch
 * settle as usual. */
static void test_kept_reply_nomem(void **state) {
  nf_t *f = *state;
  start_acked(f, "?wait=1");
  mock_master_on(f->mock, "WAIT", MOCK_REPLY, ":1\r\n", 1);
  /* The second write's reply is the odd one, whose copy fails. */
  char odd[1 + REPLY_ODD_LEN + sizeof "\r\n"];
  odd[0] = '+';
  memset(odd + 1, 'x', REPLY_ODD_LEN);
  memcpy(odd + 1 + REPLY_ODD_LEN, "\r\n", sizeof "\r\n");
  mock_master_on(f->mock, "SET", MOCK_REPLY, "+OK\r\n", 1);
  mock_master_on(f->mock, "SET", MOCK_REPLY, odd, 1);
  atomic_store(&malloc_fail_size, REPLY_ODD_LEN + 1);
  nf_req_t r[3];
  send_writes(f, r, 3, 0);
  wait_all(f, all_done, r, 3);
  assert_int_equal(atomic_load(&mallocs_failed), 1); /* that copy, and nothing else */
  assert_int_equal(mock_master_count(f->mock, "WAIT"), 1);
  assert_int_equal(r[1].reply_type, REDIS_REPLY_ERROR);
  assert_string_equal(r[1].str, "ERR out of memory keeping the reply for its ack");
  assert_true(r[1].req.nomem);
  for (unsigned i = 0; i < 3; i += 2) {
    assert_string_equal(r[i].str, "OK");
    assert_false(r[i].req.unacked);
    assert_false(r[i].req.nomem);
  }
  assert_int_equal(f->node.pipe.inflight, 0);
}

/* An ack that cannot be queued (out of memory) leaves its batch without
 * one: each write comes back with its own reply, unacked for want of memory
 * (nomem), and never counts; nothing waits for an ack that was never sent,
 * and the next batch has its WAIT and counts. */
static void test_ack_not_queued(void **state) {
  nf_t *f = *state;
  start_acked(f, "?wait=1");
  nf_req_t r[3];
  size_t base = mock_master_n_commands(f->mock);
  /* No reply comes while hiredis refuses (the mock holds them), and the
   * writes are queued before it does: only the flush's ack is refused. */
  mock_master_on(f->mock, "SET", MOCK_HOLD, NULL, 1);
  send_writes(f, r, 3, 0);
  hiredis_refuses(f, 1);
  nf_wait_received(f, "SET", 3); /* the flush, and its ack's refusal, are over */
  hiredis_refuses(f, 0);
  assert_int_equal(mock_master_release(f->mock), 3);
  wait_all(f, all_done, r, 3);
  assert_string_equal(names_since(f, base), "SET SET SET");
  for (unsigned i = 0; i < 3; i++) {
    assert_string_equal(r[i].str, "OK");
    assert_true(r[i].req.unacked);
    assert_true(r[i].req.nomem);
  }
  assert_int_equal(f->node.pipe.inflight, 0);
  assert_int_equal(f->node.pipe.queued_bytes, 0);
  mock_master_on(f->mock, "WAIT", MOCK_REPLY, ":1\r\n", 1);
  send_writes(f, r, 2, 3);
  wait_all(f, all_done, r, 2);
  assert_string_equal(names_since(f, base), "SET SET SET SET SET WAIT");
  assert_false(r[0].req.unacked || r[1].req.unacked);
  assert_false(r[0].req.nomem || r[1].req.nomem);
  assert_int_equal(nf_count(f, NODE_EV_DOWN), 0); /* one connection throughout */
}

/* Releases ask no ack: alone in a flush they send no WAIT; beside writes
 * that ask one, the flush still has one WAIT, and a release's reply is
 * final when it comes, not held for the WAIT. */
static void test_releases_no_wait(void **state) {
  nf_t *f = *state;
  start_acked(f, "?wait=1");
  size_t base = mock_master_n_commands(f->mock);
  nf_req_t rel[2];
  assert_int_equal(nf_send(f, &rel[0], "EVALSHA 0123 1 k v", 1), ST_OK);
  assert_int_equal(nf_send(f, &rel[1], "EVALSHA 0123 1 k2 v", 1), ST_OK);
  wait_all(f, all_done, rel, 2);
  assert_string_equal(names_since(f, base), "EVALSHA EVALSHA");
  assert_int_equal(rel[0].integer, 1);
  /* a write, a release and a write, in one turn: one WAIT, at the end */
  mock_master_on(f->mock, "WAIT", MOCK_HOLD, ":1\r\n", 1);
  base = mock_master_n_commands(f->mock);
  nf_req_t w[2], mixed_rel;
  assert_int_equal(nf_send_ack(f, &w[0], "SET a v"), ST_OK);
  assert_int_equal(nf_send(f, &mixed_rel, "EVALSHA 0123 1 k v", 1), ST_OK);
  assert_int_equal(nf_send_ack(f, &w[1], "SET b v"), ST_OK);
  nf_wait_received(f, "WAIT", 1);
  assert_string_equal(names_since(f, base), "SET EVALSHA SET WAIT");
  nf_wait_req(f, &mixed_rel); /* answered while the WAIT is held */
  assert_false(w[0].done || w[1].done);
  mock_master_release(f->mock);
  wait_all(f, all_done, w, 2);
  assert_false(w[0].req.unacked || w[1].req.unacked);
  assert_int_equal(mock_master_count(f->mock, "WAIT"), 1);
}

/* The connection goes after the writes' replies, before their WAIT's: every
 * write of the batch is lost, like any request in flight (fn without a
 * reply); the master reconnects and the next batch counts. */
static void test_lost_before_ack(void **state) {
  nf_t *f = *state;
  start_acked(f, "?wait=1");
  mock_master_on(f->mock, "WAIT", MOCK_CLOSE, NULL, 1);
  nf_req_t r[3];
  send_writes(f, r, 3, 0);
  wait_all(f, all_done, r, 3);
  for (unsigned i = 0; i < 3; i++) {
    assert_false(r[i].got_reply);
    assert_null(r[i].req.held);
  }
  assert_int_equal(f->node.pipe.inflight, 0);
  assert_int_equal(f->node.pipe.queued_bytes, 0);
  nf_wait_event(f, NODE_EV_UP, 2);
  mock_master_on(f->mock, "WAIT", MOCK_REPLY, ":1\r\n", 1);
  send_writes(f, r, 2, 3);
  wait_all(f, all_done, r, 2);
  assert_true(r[0].got_reply && r[1].got_reply);
  assert_false(r[0].req.unacked || r[1].req.unacked);
}

/* A NOSCRIPT reply is resent from the settling fn: the resend joins a later
 * batch with its own WAIT, and is settled by that one. */
static void resend_fn(node_req_t *req, const redisReply *reply);
static int resends;
static nf_req_t *resent_done;

static void resend_fn(node_req_t *req, const redisReply *reply) {
  nf_req_t *r = (nf_req_t *)req;
  if (reply != NULL && reply_is_noscript(reply) && resends == 0) {
    resends++;
    assert_int_equal(node_send(req->node, req), ST_OK);
    return;
  }
  r->done = 1;
  r->got_reply = reply != NULL;
  if (reply != NULL)
    r->reply_type = reply->type;
  resent_done = r;
}

static void test_resend_joins_next_batch(void **state) {
  nf_t *f = *state;
  start_acked(f, "?wait=1");
  resends = 0;
  resent_done = NULL;
  mock_master_on(f->mock, "EVALSHA", MOCK_REPLY, "-NOSCRIPT No matching script.\r\n", 1);
  mock_master_on(f->mock, "WAIT", MOCK_REPLY, ":1\r\n", 2);
  size_t base = mock_master_n_commands(f->mock);
  nf_req_t r;
  assert_int_equal(nf_send_ack(f, &r, "EVALSHA 0123 1 k v"), ST_OK);
  r.req.fn = resend_fn;
  nf_wait_req(f, &r);
  assert_int_equal(resends, 1);
  assert_ptr_equal(resent_done, &r);
  assert_int_equal(r.reply_type, REDIS_REPLY_INTEGER);
  assert_false(r.req.unacked);
  assert_string_equal(names_since(f, base), "EVALSHA WAIT EVALSHA WAIT");
  assert_int_equal(f->node.pipe.inflight, 0);
}

/* ---- the role check (node_t.acks.check_role) -------------------------------------------- */

/* A master whose role may change under the connection (a cluster primary,
 * a Sentinel group's master), the quarantine on, with `suffix`'s ack. */
static void start_role_checked(nf_t *f, const char *suffix, int quarantine) {
  f->env.quarantine = quarantine;
  nf_address(f, NULL, suffix, 0);
  assert_int_equal(node_init(&f->node, &f->env, 0, &f->addr), 0); /* nf_start, with the flag */
  f->node.acks.check_role = 1;
  f->started = 1;
  node_start(&f->node);
  nf_wait_event(f, NODE_EV_UP, 1);
}
static void start_checked(nf_t *f, const char *suffix) { start_role_checked(f, suffix, 1); }

/* Each batch ends with INFO replication (before the WAIT, when there is
 * one); a batch counts when the server is still the master of the
 * handshake's replication id; the queue counts both parts. */
static void test_role_check_per_batch(void **state) {
  nf_t *f = *state;
  start_checked(f, "?wait=1");
  mock_master_on(f->mock, "WAIT", MOCK_REPLY, ":1\r\n", 2);
  nf_req_t r[3];
  size_t base = mock_master_n_commands(f->mock);
  send_writes(f, r, 3, 0);
  wait_all(f, all_done, r, 3);
  send_writes(f, r, 1, 3);
  wait_all(f, all_done, r, 1);
  assert_string_equal(names_since(f, base), "SET SET SET INFO WAIT SET INFO WAIT");
  for (unsigned i = 0; i < 3; i++)
    assert_false(r[i].req.unacked);
  assert_int_equal(f->node.pipe.inflight, 0);
  assert_int_equal(f->node.pipe.queued_bytes, 0);
}

/* The server was made a replica and a master again under the open
 * connection: INFO replication gives another replication id.  The batch
 * does not count, the failover quarantine starts (max TTL from now), the
 * new id is remembered: the next batch counts (the quarantine is the
 * round's to apply). */
static void test_role_check_new_replid(void **state) {
  nf_t *f = *state;
  start_checked(f, "");
  mock_master_set_replication(f->mock, "master", "cccccccccccccccccccccccccccccccccccccccc",
                              "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 0);
  uint64_t before = tb_now_ns(&f->tb);
  nf_req_t r[2];
  send_writes(f, r, 2, 0);
  wait_all(f, all_done, r, 2);
  for (unsigned i = 0; i < 2; i++) {
    assert_string_equal(r[i].str, "OK");
    assert_true(r[i].req.unacked);
  }
  assert_non_null(strstr(f->node.acks.ack_why, "replication id changed"));
  assert_int_equal(f->node.server.quarantine.kind, QUARANTINE_FAILOVER);
  assert_true(f->node.server.quarantine.until_ns >= before + 30000ull * 1000000u);
  assert_true(nf_logged(f, "was made a replica and a master again"));
  send_writes(f, r, 1, 2);
  wait_all(f, all_done, r, 1);
  assert_false(r[0].req.unacked);
}

/* Demoted (role: slave): the batch does not count, and says why. */
static void test_role_check_demoted(void **state) {
  nf_t *f = *state;
  start_checked(f, "");
  mock_master_set_replication(f->mock, "slave", NULL, NULL, 0);
  nf_req_t r[1];
  send_writes(f, r, 1, 0);
  wait_all(f, all_done, r, 1);
  assert_true(r[0].req.unacked);
  assert_string_equal(f->node.acks.ack_why, "it is no longer a master (role: slave)");
}

/* Without the quarantine, and on a master not asked for it, no check. */
static void test_role_check_off(void **state) {
  nf_t *f = *state;
  start_role_checked(f, "", 0);
  nf_req_t r[1];
  size_t base = mock_master_n_commands(f->mock);
  send_writes(f, r, 1, 0);
  wait_all(f, all_done, r, 1);
  assert_string_equal(names_since(f, base), "SET");
  assert_false(r[0].req.unacked);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, nf_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_one_wait_per_flush),    T(test_wait_per_turn),           T(test_ack_error_fails_batch),
      T(test_kept_reply_nomem),      T(test_ack_not_queued),          T(test_releases_no_wait),
      T(test_lost_before_ack),       T(test_resend_joins_next_batch), T(test_role_check_per_batch),
      T(test_role_check_new_replid), T(test_role_check_demoted),      T(test_role_check_off),
  };
  install_allocator();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
