/* test_round.c: the fan-out round (round.c) driven deterministically through
 * a fake transport and a stepped clock, with no loop, socket or server: votes
 * in any order, late, erroring or missing; masters down, busy or backlogged;
 * request timeouts; NOSCRIPT -> EVAL; the restart quarantine; releases kept
 * for replay; and what a round reports to its owner (deadline, settled,
 * decided).  Replies are hand-built hiredis replies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "round.h"
#include "scripts.h"

#define N 5
#define TIMEOUT_NS 100000000u /* the request timeout: 100 ms */

typedef enum { SEND_OK = 0, SEND_QUEUED, SEND_DOWN, SEND_BUSY } send_mode_t;

/* The fake: what each master would do, and what the round asked of it. */
typedef struct {
  round_env_t env;
  struct stats *stats; /* votes by verdict per master: outlive the rounds */
  uint64_t now;
  send_mode_t mode[N];
  int quarantined[N];
  uint64_t progress[N];
  node_req_t *req[N]; /* the last request sent to each master */
  int queued[N];      /* req[i] waits in the fake backlog */
  char last_cmd[N][4096];
  size_t last_len[N];
  unsigned sends[N], cancels[N], defers[N], warns[N];
  /* reported up */
  uint64_t armed_ns;
  unsigned arms, settled, decided_hook;
  /* on_decided */
  unsigned decisions;
  quorum_outcome_t outcome;
  const round_t *deciding_seen; /* env->deciding during on_decided */
  uint64_t set_mask;            /* round_set_mask at the decision */
} fake_t;

static fake_t *g; /* now_ns has no argument: the running test's fake */

static uint64_t fake_now(void) { return g->now; }

static int t_send(void *arg, unsigned i, node_req_t *req) {
  fake_t *f = arg;
  assert_true(i < N);
  f->sends[i]++;
  if (f->mode[i] == SEND_DOWN)
    return NODE_SEND_DOWN;
  if (f->mode[i] == SEND_BUSY)
    return NODE_SEND_BUSY;
  f->req[i] = req;
  assert_true(req->len < sizeof f->last_cmd[i]);
  memcpy(f->last_cmd[i], req->cmd, req->len);
  f->last_cmd[i][req->len] = '\0';
  f->last_len[i] = req->len;
  f->queued[i] = f->mode[i] == SEND_QUEUED;
  req->sent_ns = f->queued[i] ? 0 : f->now;
  return 0;
}

static int t_queued(void *arg, const node_req_t *req) {
  fake_t *f = arg;
  for (int i = 0; i < N; i++)
    if (f->req[i] == req)
      return f->queued[i];
  return 0;
}

static void t_cancel(void *arg, node_req_t *req) {
  fake_t *f = arg;
  for (int i = 0; i < N; i++)
    if (f->req[i] == req) {
      assert_true(f->queued[i]);
      f->queued[i] = 0;
      f->cancels[i]++;
      f->req[i] = NULL;
    }
}

static uint64_t t_progress(void *arg, unsigned i) { return ((fake_t *)arg)->progress[i]; }

static int t_quarantined(void *arg, unsigned i) { return ((fake_t *)arg)->quarantined[i]; }

static void t_defer(void *arg, unsigned i, const char *cmd, size_t len) {
  fake_t *f = arg;
  assert_non_null(cmd);
  assert_true(len > 0);
  f->defers[i]++;
}

static void t_warn(void *arg, unsigned i, const char *what, const char *detail) {
  (void)what;
  (void)detail;
  ((fake_t *)arg)->warns[i]++;
}

static const char *t_label(void *arg, unsigned i) {
  (void)arg;
  static const char *const labels[N] = {"m0", "m1", "m2", "m3", "m4"};
  return labels[i];
}

static const round_transport_t fake_transport = {
    .send = t_send,
    .queued = t_queued,
    .cancel = t_cancel,
    .progress_ns = t_progress,
    .quarantined = t_quarantined,
    .defer_release = t_defer,
    .warn = t_warn,
    .label = t_label,
};

static void on_arm(void *arg, uint64_t ns) {
  fake_t *f = arg;
  f->armed_ns = ns;
  f->arms++;
}
static void on_settled(void *arg) { ((fake_t *)arg)->settled++; }
static void on_decided_hook(void *arg, const round_t *round) {
  (void)round;
  ((fake_t *)arg)->decided_hook++;
}

static const log_sink_t no_log = {0};

static int setup(void **state) {
  fake_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->now = 1000000000u;
  round_env_init(&f->env);
  f->env.n_masters = N;
  f->env.request_timeout_ns = TIMEOUT_NS;
  f->env.transport = &fake_transport;
  f->env.transport_arg = f;
  f->env.log = &no_log;
  f->stats = calloc(1, sizeof *f->stats + N * sizeof f->stats->masters[0]);
  assert_non_null(f->stats);
  f->stats->n_masters = N;
  f->env.stats = f->stats;
  f->env.now_ns = fake_now;
  f->env.arm_deadline = on_arm;
  f->env.settled = on_settled;
  f->env.decided = on_decided_hook;
  f->env.owner_arg = f;
  g = f;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fake_t *f = *state;
  assert_true(round_env_idle(&f->env));
  /* every round sent was decided */
  assert_int_equal(atomic_load(&f->stats->gauges[STATS_GAUGE_ROUNDS]), 0);
  free(f->stats);
  free(f);
  return 0;
}

static void on_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  fake_t *f = ctx;
  f->decisions++;
  f->outcome = outcome;
  f->deciding_seen = f->env.deciding;
  f->set_mask = round_set_mask(round);
  assert_ptr_equal(round->ctx, f);
}

/* A round of `kind` over "SET k v NX PX 1000" (or EVALSHA of the release
 * script when script != NULL). */
static round_t *new_round(fake_t *f, round_kind_t kind, const script_t *script, int64_t expect,
                          uint64_t replay_mask, int with_cb) {
  const char *argv[6];
  size_t len[6];
  int argc;
  if (script == NULL) {
    const char *a[] = {"SET", "k", "v", "NX", "PX", "1000"};
    argc = 6;
    for (int i = 0; i < argc; i++)
      argv[i] = a[i];
  } else {
    argv[0] = "EVALSHA";
    argv[1] = script->sha1;
    argv[2] = "1";
    argv[3] = "k";
    argv[4] = "v";
    argc = 5;
  }
  for (int i = 0; i < argc; i++)
    len[i] = strlen(argv[i]);
  round_t *round = round_new(&f->env, &(round_params_t){.argc = argc,
                                                        .argv = argv,
                                                        .argv_len = len,
                                                        .script = script,
                                                        .expect_integer = expect,
                                                        .kind = kind,
                                                        .replay_mask = replay_mask,
                                                        .on_decided = with_cb ? on_decided : NULL,
                                                        .ctx = f});
  assert_non_null(round);
  return round;
}

/* ---- replies ---- */

static void reply_status(fake_t *f, unsigned i, const char *text) {
  redisReply r = {.type = REDIS_REPLY_STATUS, .str = (char *)text, .len = strlen(text)};
  node_req_t *req = f->req[i];
  f->req[i] = NULL;
  req->fn(req, &r);
}
static void reply_nil(fake_t *f, unsigned i) {
  redisReply r = {.type = REDIS_REPLY_NIL};
  node_req_t *req = f->req[i];
  f->req[i] = NULL;
  req->fn(req, &r);
}
static void reply_int(fake_t *f, unsigned i, long long v) {
  redisReply r = {.type = REDIS_REPLY_INTEGER, .integer = v};
  node_req_t *req = f->req[i];
  f->req[i] = NULL;
  req->fn(req, &r);
}
static void reply_error(fake_t *f, unsigned i, const char *text) {
  redisReply r = {.type = REDIS_REPLY_ERROR, .str = (char *)text, .len = strlen(text)};
  node_req_t *req = f->req[i];
  f->req[i] = NULL;
  req->fn(req, &r);
}
static void reply_none(fake_t *f, unsigned i) { /* connection lost, or dropped unsent */
  node_req_t *req = f->req[i];
  f->req[i] = NULL;
  f->queued[i] = 0;
  req->fn(req, NULL);
}

static unsigned why(const round_t *round, unsigned i) { return round->votes[i].why; }

/* Votes master i cast with verdict w, over the test (counted by stats_vote). */
static uint64_t votes(const fake_t *f, unsigned i, unsigned w) {
  return atomic_load(&f->stats->masters[i].votes[w]);
}

/* ---- tests ---- */

/* Decided at the third yes of five, once; the last two votes still count
 * when they come late, and the round is freed after the last reply. */
static void test_quorum_won_then_late_votes(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  for (int i = 0; i < N; i++)
    assert_int_equal(f->sends[i], 1);
  assert_int_equal(f->arms, 1);
  assert_int_equal(f->armed_ns, f->now + TIMEOUT_NS);
  assert_false(round_env_idle(&f->env));
  reply_status(f, 4, "OK");
  reply_nil(f, 0);
  reply_status(f, 2, "OK");
  assert_int_equal(f->decisions, 0);
  reply_status(f, 1, "OK");
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_WON);
  assert_int_equal(f->decided_hook, 1);
  assert_ptr_equal(f->deciding_seen, round); /* stats and events see the round */
  assert_null(f->env.deciding);
  assert_int_equal(why(round, 0), WHY_REFUSED);
  assert_int_equal(why(round, 3), WHY_NONE);
  assert_int_equal(round_set_mask(round), (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4));
  reply_status(f, 3, "OK"); /* late: counted, no second decision */
  assert_int_equal(f->decisions, 1);
  assert_true(round_env_idle(&f->env));
}

/* Three refusals: lost, held by another; nothing deferred (not a release). */
static void test_quorum_lost_held(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  reply_nil(f, 0);
  reply_nil(f, 1);
  reply_status(f, 2, "OK");
  reply_nil(f, 3);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_HELD);
  reply_status(f, 4, "OK");
  for (int i = 0; i < N; i++)
    assert_int_equal(f->defers[i], 0);
}

/* Error replies and wrong types fail their vote, are logged per master, and
 * three failures lose the round for want of a quorum. */
static void test_errors_and_bad_replies(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  reply_error(f, 0, "READONLY You can't write against a read only replica.");
  reply_int(f, 1, 7); /* SET NX never answers an integer */
  reply_status(f, 2, "QUEUED");
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_NOQUORUM);
  assert_int_equal(why(round, 0), WHY_ERROR);
  assert_int_equal(why(round, 1), WHY_BADREPLY);
  assert_int_equal(why(round, 2), WHY_BADREPLY);
  assert_int_equal(f->warns[0] + f->warns[1] + f->warns[2], 3);
  reply_status(f, 3, "OK");
  reply_status(f, 4, "OK");
}

/* Masters down or busy at send time vote at once; a round whose outcome is
 * certain before any reply is decided inside round_send. */
static void test_down_and_busy_decide_in_send(void **state) {
  fake_t *f = *state;
  f->mode[0] = f->mode[1] = SEND_DOWN;
  f->mode[2] = SEND_BUSY;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_NOQUORUM);
  /* round is still alive: two replies are owed */
  reply_status(f, 3, "OK");
  reply_status(f, 4, "OK");
  assert_true(round_env_idle(&f->env));
}

static void test_down_and_busy_whys(void **state) {
  fake_t *f = *state;
  f->mode[0] = SEND_DOWN;
  f->mode[1] = SEND_BUSY;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  assert_int_equal(why(round, 0), WHY_DOWN);
  assert_int_equal(why(round, 1), WHY_BUSY);
  reply_status(f, 2, "OK");
  reply_status(f, 3, "OK");
  assert_int_equal(f->decisions, 0);
  reply_status(f, 4, "OK"); /* decided, and freed: no reply is owed */
  assert_int_equal(f->outcome, QUORUM_WON);
  /* neither a down master nor a busy one may hold the key */
  assert_int_equal(f->set_mask, (1u << 2) | (1u << 3) | (1u << 4));
}

/* A reply that never comes: at the deadline the vote fails as timed out,
 * the master is warned about, and the round is decided; the transport's NULL
 * reply that follows (connection dropped) changes nothing. */
static void test_timeout_at_deadline(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  reply_status(f, 0, "OK");
  reply_status(f, 1, "OK");
  reply_nil(f, 2);
  f->now += TIMEOUT_NS / 2;
  round_deadlines_fire(&f->env); /* early: nothing happens */
  assert_int_equal(f->decisions, 0);
  f->now += TIMEOUT_NS / 2;
  unsigned settled = f->settled;
  round_deadlines_fire(&f->env);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_HELD); /* a refusal among the votes */
  assert_int_equal(why(round, 3), WHY_TIMEOUT);
  assert_int_equal(why(round, 4), WHY_TIMEOUT);
  assert_int_equal(f->warns[3], 1);
  assert_true(f->settled > settled);
  assert_true(round_env_idle(&f->env));
  reply_none(f, 3);
  reply_none(f, 4); /* frees the round */
  assert_int_equal(f->decisions, 1);
}

/* A connection lost after the write: "disconnected"; a request dropped
 * before it was written (sent_ns == 0): "down". */
static void test_lost_replies(void **state) {
  fake_t *f = *state;
  f->mode[1] = SEND_QUEUED;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  reply_none(f, 0);
  reply_none(f, 1);
  assert_int_equal(why(round, 0), WHY_DISCONNECTED);
  assert_int_equal(why(round, 1), WHY_DOWN);
  reply_status(f, 2, "OK");
  reply_status(f, 3, "OK");
  reply_status(f, 4, "OK");
  assert_int_equal(f->outcome, QUORUM_WON);
}

/* NOSCRIPT: the same call goes again as EVAL (once), and its answer counts. */
static void test_noscript_resent_as_eval(void **state) {
  fake_t *f = *state;
  const script_t *script = script_get(SCRIPT_RELEASE);
  round_t *round = new_round(f, ROUND_PLAIN, script, 1, 0, 1);
  round_send(round);
  assert_non_null(strstr(f->last_cmd[0], "EVALSHA"));
  reply_error(f, 0, "NOSCRIPT No matching script. Please use EVAL.");
  assert_int_equal(f->sends[0], 2);
  assert_null(strstr(f->last_cmd[0], "EVALSHA"));
  assert_non_null(strstr(f->last_cmd[0], "EVAL"));
  assert_int_equal(why(round, 0), WHY_NONE); /* still pending */
  reply_error(f, 0, "NOSCRIPT again");       /* a second NOSCRIPT is an error */
  assert_int_equal(why(round, 0), WHY_ERROR);
  assert_int_equal(f->sends[0], 2);
  reply_int(f, 1, 1);
  reply_error(f, 2, "NOSCRIPT No matching script.");
  assert_int_equal(f->sends[2], 2);
  reply_int(f, 2, 1);
  reply_int(f, 4, 0);
  assert_int_equal(why(round, 4), WHY_REFUSED);
  reply_int(f, 3, 1); /* the last reply: decided, and the round freed */
  assert_int_equal(f->outcome, QUORUM_WON);
}

/* A plain command (no script) answering NOSCRIPT is just an error. */
static void test_noscript_without_script_is_error(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  reply_error(f, 0, "NOSCRIPT x");
  assert_int_equal(f->sends[0], 1);
  assert_int_equal(why(round, 0), WHY_ERROR);
  for (int i = 1; i < N; i++)
    reply_status(f, (unsigned)i, "OK");
  assert_int_equal(f->outcome, QUORUM_WON);
}

/* A master in restart quarantine: none of its answers to an acquisition
 * count (not even a refusal); other rounds are not affected. */
static void test_quarantine(void **state) {
  fake_t *f = *state;
  f->quarantined[0] = f->quarantined[1] = 1;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  reply_status(f, 0, "OK");
  reply_nil(f, 1);
  assert_int_equal(why(round, 0), WHY_QUARANTINED);
  assert_int_equal(why(round, 1), WHY_QUARANTINED);
  reply_status(f, 2, "OK");
  reply_status(f, 3, "OK");
  assert_int_equal(f->decisions, 0); /* 2 yes of 5: not yet */
  reply_status(f, 4, "OK");
  assert_int_equal(f->outcome, QUORUM_WON);

  f->decisions = 0;
  round = new_round(f, ROUND_PLAIN, script_get(SCRIPT_EXTEND), 1, 0, 1);
  round_send(round);
  reply_int(f, 0, 1);
  reply_int(f, 1, 1);
  reply_int(f, 2, 1);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(why(round, 0), WHY_OK);
  reply_int(f, 3, 1);
  reply_int(f, 4, 1);
}

/* A release that may not have reached a master in its replay mask (down,
 * busy, timed out, disconnected) is kept for replay; masters outside the
 * mask, or that answered, are not. */
static void test_release_replay(void **state) {
  fake_t *f = *state;
  f->mode[0] = SEND_DOWN;
  f->mode[4] = SEND_DOWN; /* outside the mask */
  uint64_t mask = 0x0f;
  round_t *round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, mask, 0);
  round_send(round);
  assert_int_equal(f->defers[0], 1);
  assert_int_equal(f->defers[4], 0);
  reply_none(f, 1);   /* disconnected */
  reply_int(f, 2, 0); /* answered (not ours any more): nothing to replay */
  assert_int_equal(f->defers[1], 1);
  assert_int_equal(f->defers[2], 0);
  f->progress[3] = f->now; /* the master went quiet after the send */
  f->now += TIMEOUT_NS;
  round_deadlines_fire(&f->env);
  assert_int_equal(why(round, 3), WHY_TIMEOUT);
  assert_int_equal(f->defers[3], 1);
  assert_int_equal(f->decided_hook, 0); /* nobody waits: not a caller's round */
  reply_none(f, 3);
  assert_int_equal(f->defers[3], 1); /* a late NULL does not defer twice */
}

/* A release keeps waiting while its master keeps answering others (it is
 * pipelined behind them), and times out once the master stops. */
static void test_release_waits_for_a_busy_master(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, 0x1f, 1);
  round_send(round);
  for (unsigned i = 1; i < N; i++)
    reply_int(f, i, 1);
  assert_int_equal(f->outcome, QUORUM_WON);
  f->now += TIMEOUT_NS;
  f->progress[0] = f->now - 1000; /* it answered something just now */
  round_deadlines_fire(&f->env);
  assert_int_equal(why(round, 0), WHY_NONE);
  assert_false(round_env_idle(&f->env));
  assert_int_equal(f->armed_ns, f->now + TIMEOUT_NS); /* judged again a timeout later */
  f->now += TIMEOUT_NS;
  round_deadlines_fire(&f->env);
  assert_int_equal(why(round, 0), WHY_TIMEOUT);
  assert_int_equal(f->defers[0], 1);
  reply_none(f, 0);
}

/* Once decided, what still waits unsent in a backlog is withdrawn (it would
 * only load the master), except a release's. */
static void test_queued_votes_withdrawn_after_decision(void **state) {
  fake_t *f = *state;
  f->mode[3] = f->mode[4] = SEND_QUEUED;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  reply_status(f, 0, "OK");
  reply_status(f, 1, "OK");
  reply_status(f, 2, "OK");
  assert_int_equal(f->outcome, QUORUM_WON);
  assert_int_equal(f->cancels[3], 1);
  assert_int_equal(f->cancels[4], 1);
  assert_int_equal(votes(f, 3, WHY_BUSY), 1); /* the round is freed: no request is out */
  assert_int_equal(votes(f, 4, WHY_BUSY), 1);
  assert_true(round_env_idle(&f->env));

  f->decisions = 0;
  round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, 0x1f, 1);
  round_send(round);
  reply_int(f, 0, 1);
  reply_int(f, 1, 1);
  reply_int(f, 2, 1);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->cancels[3], 1); /* a release stays queued */
  assert_true(f->queued[3]);
  reply_int(f, 3, 1);
  reply_int(f, 4, 1);
}

/* A non-release still queued at its deadline is withdrawn unsent (busy); a
 * queued release waits on. */
static void test_queued_at_deadline(void **state) {
  fake_t *f = *state;
  f->mode[0] = f->mode[1] = f->mode[2] = SEND_QUEUED;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  reply_status(f, 3, "OK");
  f->now += TIMEOUT_NS;
  round_deadlines_fire(&f->env);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_NOQUORUM);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(why(round, (unsigned)i), WHY_BUSY);
    assert_int_equal(f->cancels[i], 1);
  }
  reply_status(f, 4, "OK");

  round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, 0x1f, 0);
  round_send(round);
  for (unsigned i = 3; i < N; i++)
    reply_int(f, i, 1);
  f->now += TIMEOUT_NS;
  round_deadlines_fire(&f->env);
  assert_true(f->queued[0]);
  assert_int_equal(why(round, 0), WHY_NONE);
  for (unsigned i = 0; i < 3; i++)
    reply_int(f, i, 1);
  assert_true(round_env_idle(&f->env));
}

/* Deadlines in a FIFO: the second round's deadline is armed once the first
 * is gone, and an early fire leaves both. */
static void test_deadline_fifo(void **state) {
  fake_t *f = *state;
  round_t *a = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(a);
  uint64_t first = f->armed_ns;
  f->now += TIMEOUT_NS / 2;
  round_t *b = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  node_req_t *a_reqs[N];
  memcpy(a_reqs, f->req, sizeof a_reqs);
  round_send(b);
  assert_true(f->armed_ns > first);
  f->now = first;
  round_deadlines_fire(&f->env);
  assert_int_equal(f->decisions, 1);                     /* a timed out */
  assert_int_equal(f->armed_ns, first + TIMEOUT_NS / 2); /* b's deadline next */
  for (unsigned i = 0; i < N; i++)
    reply_status(f, i, "OK"); /* b wins */
  assert_int_equal(f->decisions, 2);
  assert_int_equal(f->outcome, QUORUM_WON);
  for (unsigned i = 0; i < N; i++)
    a_reqs[i]->fn(a_reqs[i], NULL); /* a's connections drop */
  assert_true(round_env_idle(&f->env));
}

/* Integer expectations: a fencing token (positive), a multi-key count (n),
 * a code (> 0 yes, <= 0 refused). */
static void test_integer_expectations(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, script_get(SCRIPT_ACQUIRE_MANY), 3, 0, 1);
  round_send(round);
  reply_int(f, 0, 3);
  reply_int(f, 1, 2); /* some keys held by others: refused */
  reply_int(f, 2, 4); /* more keys than asked for: nonsense */
  assert_int_equal(why(round, 0), WHY_OK);
  assert_int_equal(why(round, 1), WHY_REFUSED);
  assert_int_equal(why(round, 2), WHY_BADREPLY);
  reply_int(f, 3, 3);
  reply_int(f, 4, 3);
  assert_int_equal(f->outcome, QUORUM_WON);

  f->decisions = 0;
  round =
      new_round(f, ROUND_ACQUIRE, script_get(SCRIPT_ACQUIRE_FENCED), ROUND_EXPECT_POSITIVE, 0, 1);
  round_send(round);
  reply_int(f, 0, 41);
  reply_int(f, 1, 42);
  reply_int(f, 2, -1);
  assert_int_equal(round->votes[1].integer, 42);
  assert_int_equal(why(round, 2), WHY_BADREPLY);
  reply_nil(f, 3);
  reply_int(f, 4, 40);
  assert_int_equal(f->outcome, QUORUM_WON);

  f->decisions = 0;
  round = new_round(f, ROUND_ACQUIRE, script_get(SCRIPT_SEM_ACQUIRE), ROUND_EXPECT_CODE, 0, 1);
  round_send(round);
  reply_int(f, 0, -2);
  reply_nil(f, 1);
  reply_int(f, 2, 1);
  assert_int_equal(why(round, 0), WHY_REFUSED);
  assert_int_equal(why(round, 1), WHY_REFUSED);
  reply_int(f, 3, 0);
  assert_int_equal(f->outcome, QUORUM_LOST_HELD);
  reply_int(f, 4, 1);
}

/* A round decided from inside another's on_decided (nested decisions)
 * restores the outer round as the one deciding. */
static round_t *nested_inner;
static void on_decided_nested(round_t *round, quorum_outcome_t outcome, void *ctx) {
  fake_t *f = ctx;
  (void)outcome;
  assert_ptr_equal(f->env.deciding, round);
  f->mode[0] = f->mode[1] = f->mode[2] = SEND_DOWN; /* decided inside round_send */
  nested_inner = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(nested_inner);
  assert_ptr_equal(f->deciding_seen, nested_inner);
  assert_ptr_equal(f->env.deciding, round);
  f->mode[0] = f->mode[1] = f->mode[2] = SEND_OK;
}

static void test_nested_decisions(void **state) {
  fake_t *f = *state;
  const char *argv[] = {"PING"};
  size_t len[] = {4};
  round_t *outer = round_new(&f->env, &(round_params_t){.argc = 1,
                                                        .argv = argv,
                                                        .argv_len = len,
                                                        .expect_integer = ROUND_EXPECT_OK,
                                                        .kind = ROUND_PLAIN,
                                                        .on_decided = on_decided_nested,
                                                        .ctx = f});
  assert_non_null(outer);
  round_send(outer);
  node_req_t *outer_reqs[N];
  memcpy(outer_reqs, f->req, sizeof outer_reqs);
  for (unsigned i = 0; i < 3; i++) {
    node_req_t *req = outer_reqs[i];
    f->req[i] = NULL;
    redisReply r = {.type = REDIS_REPLY_STATUS, .str = "OK", .len = 2};
    req->fn(req, &r);
  }
  assert_null(f->env.deciding);
  assert_int_equal(f->decisions, 1); /* the inner one */
  for (unsigned i = 3; i < N; i++) {
    reply_status(f, i, "OK"); /* the inner round's two live requests */
  }
  for (unsigned i = 3; i < N; i++)
    outer_reqs[i]->fn(outer_reqs[i], NULL);
  assert_true(round_env_idle(&f->env));
}

static void test_why_names(void **state) {
  (void)state;
  assert_string_equal(why_name(WHY_OK), "OK");
  assert_string_equal(why_name(WHY_TIMEOUT), "timeout");
  assert_string_equal(why_name(WHY_QUARANTINED), "quarantined");
  assert_string_equal(why_name(999), "?");
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_quorum_won_then_late_votes),
      T(test_quorum_lost_held),
      T(test_errors_and_bad_replies),
      T(test_down_and_busy_decide_in_send),
      T(test_down_and_busy_whys),
      T(test_timeout_at_deadline),
      T(test_lost_replies),
      T(test_noscript_resent_as_eval),
      T(test_noscript_without_script_is_error),
      T(test_quarantine),
      T(test_release_replay),
      T(test_release_waits_for_a_busy_master),
      T(test_queued_votes_withdrawn_after_decision),
      T(test_queued_at_deadline),
      T(test_deadline_fifo),
      T(test_integer_expectations),
      T(test_nested_decisions),
      cmocka_unit_test(test_why_names),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
