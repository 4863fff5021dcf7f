/* test_round.c: the fan-out round (round.c) driven deterministically through
 * the fake masters of fake_transport.h and a stepped clock, with no loop,
 * socket or server: votes in any order, late, erroring or missing; masters
 * down, busy or backlogged; request timeouts; NOSCRIPT -> EVAL; the restart
 * quarantine; duplicate masters (one server listed twice); releases kept for replay; and what a
 * round reports to its owner (deadline, settled, decided, rounds pending). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/round.h"
#include "fake_transport.h"
#include "proto/caps.h"
#include "proto/keyslot.h"
#include "proto/scripts.h"

#define N 5
#define TIMEOUT_NS 100000000u /* the request timeout: 100 ms */

/* The rounds' environment over fake masters (fake_transport.h), and what
 * the round reported to its owner. */
typedef struct {
  round_env_t env;
  fake_transport_t fake;
  struct stats *stats; /* votes by verdict per master: outlive the rounds */
  uint64_t now;
  /* reported up */
  uint64_t armed_ns;
  unsigned arms, settled, decided_hook;
  /* on_decided */
  unsigned decisions;
  quorum_outcome_t outcome;
  const round_t *deciding_seen; /* env->deciding during on_decided */
  const round_alt_t *alt;       /* new_round's script-free forms, or NULL */
  unsigned caps;                /* env.caps_seen, when a test sets it */
  uint64_t set_mask;            /* round_set_mask at the decision */
} fake_t;

static fake_t *g; /* now_ns has no argument: the running test's fake */

static uint64_t fake_now(void) { return g->now; }
static uint64_t fake_tb_now(void *arg) {
  (void)arg;
  return g->now;
}
/* round.c reads only the clock of its timebase. */
static const timebase_ops_t fake_tb_ops = {.now_ns = fake_tb_now};
static const timebase_t fake_tb = {.ops = &fake_tb_ops};

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
  fake_transport_init(&f->fake, N, fake_now);
  round_env_init(&f->env);
  f->env.n_masters = N;
  f->env.request_timeout_ns = TIMEOUT_NS;
  f->env.transport = &fake_transport;
  f->env.transport_arg = &f->fake;
  f->env.log = &no_log;
  f->stats = calloc(1, sizeof *f->stats + N * sizeof f->stats->masters[0]);
  assert_non_null(f->stats);
  f->stats->n_masters = N;
  f->env.stats = f->stats;
  f->env.tb = &fake_tb;
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
  assert_int_equal(round_env_pending(&f->env), 0);
  assert_int_equal(fake_outstanding_all(&f->fake), 0); /* every request answered */
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

/* round_new's round (NULL when it could not make one). */
static round_t *new_round_of(round_env_t *env, const round_params_t *params) {
  round_t *round = NULL;
  (void)round_new(env, params, &round);
  return round;
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
  round_t *round =
      new_round_of(&f->env, &(round_params_t){.argc = argc,
                                              .argv = argv,
                                              .argv_len = len,
                                              .script = script,
                                              .expect_integer = expect,
                                              .kind = kind,
                                              .replay_mask = replay_mask,
                                              .alt = f->alt,
                                              .on_decided = with_cb ? on_decided : NULL,
                                              .ctx = f});
  assert_non_null(round);
  return round;
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
    assert_int_equal(f->fake.m[i].sends, 1);
  assert_int_equal(f->arms, 1);
  assert_int_equal(f->armed_ns, f->now + TIMEOUT_NS);
  assert_false(round_env_idle(&f->env));
  fake_reply_ok(&f->fake, 4);
  fake_reply_nil(&f->fake, 0);
  fake_reply_ok(&f->fake, 2);
  assert_int_equal(f->decisions, 0);
  fake_reply_ok(&f->fake, 1);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_WON);
  assert_int_equal(f->decided_hook, 1);
  assert_ptr_equal(f->deciding_seen, round); /* stats and events see the round */
  assert_null(f->env.deciding);
  assert_int_equal(why(round, 0), WHY_REFUSED);
  assert_int_equal(why(round, 3), WHY_NONE);
  assert_int_equal(round_set_mask(round), (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4));
  fake_reply_ok(&f->fake, 3); /* late: counted, no second decision */
  assert_int_equal(f->decisions, 1);
  assert_true(round_env_idle(&f->env));
}

/* Three refusals: lost, held by another; nothing deferred (not a release). */
static void test_quorum_lost_held(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  fake_reply_nil(&f->fake, 0);
  fake_reply_nil(&f->fake, 1);
  fake_reply_ok(&f->fake, 2);
  fake_reply_nil(&f->fake, 3);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_HELD);
  fake_reply_ok(&f->fake, 4);
  for (int i = 0; i < N; i++)
    assert_int_equal(f->fake.m[i].defers, 0);
}

/* Error replies and wrong types fail their vote, are logged per master, and
 * three failures lose the round for want of a quorum. */
static void test_errors_and_bad_replies(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  fake_reply_error(&f->fake, 0, "READONLY You can't write against a read only replica.");
  fake_reply_int(&f->fake, 1, 7); /* SET NX never answers an integer */
  fake_reply_status(&f->fake, 2, "QUEUED");
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_NOQUORUM);
  assert_int_equal(why(round, 0), WHY_ERROR);
  assert_int_equal(why(round, 1), WHY_BADREPLY);
  assert_int_equal(why(round, 2), WHY_BADREPLY);
  assert_int_equal(f->fake.m[0].warns + f->fake.m[1].warns + f->fake.m[2].warns, 3);
  fake_reply_ok(&f->fake, 3);
  fake_reply_ok(&f->fake, 4);
}

/* Masters down or busy at send time vote at once; a round whose outcome is
 * certain before any reply is decided inside round_send. */
static void test_down_and_busy_decide_in_send(void **state) {
  fake_t *f = *state;
  f->fake.m[0].mode = f->fake.m[1].mode = FAKE_SEND_DOWN;
  f->fake.m[2].mode = FAKE_SEND_BUSY;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_NOQUORUM);
  /* round is still alive: two replies are owed */
  fake_reply_ok(&f->fake, 3);
  fake_reply_ok(&f->fake, 4);
  assert_true(round_env_idle(&f->env));
}

static void test_down_and_busy_whys(void **state) {
  fake_t *f = *state;
  f->fake.m[0].mode = FAKE_SEND_DOWN;
  f->fake.m[1].mode = FAKE_SEND_BUSY;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  assert_int_equal(why(round, 0), WHY_DOWN);
  assert_int_equal(why(round, 1), WHY_BUSY);
  fake_reply_ok(&f->fake, 2);
  fake_reply_ok(&f->fake, 3);
  assert_int_equal(f->decisions, 0);
  fake_reply_ok(&f->fake, 4); /* decided, and freed: no reply is owed */
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
  fake_reply_ok(&f->fake, 0);
  fake_reply_ok(&f->fake, 1);
  fake_reply_nil(&f->fake, 2);
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
  assert_int_equal(f->fake.m[3].warns, 1);
  assert_true(f->settled > settled);
  assert_true(round_env_idle(&f->env));
  fake_reply_none(&f->fake, 3);
  fake_reply_none(&f->fake, 4); /* frees the round */
  assert_int_equal(f->decisions, 1);
}

/* A connection lost after the write: "disconnected"; a request dropped
 * before it was written (sent_ns == 0): "down". */
static void test_lost_replies(void **state) {
  fake_t *f = *state;
  f->fake.m[1].mode = FAKE_SEND_QUEUED;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  fake_reply_none(&f->fake, 0);
  fake_reply_none(&f->fake, 1);
  assert_int_equal(why(round, 0), WHY_DISCONNECTED);
  assert_int_equal(why(round, 1), WHY_DOWN);
  fake_reply_ok(&f->fake, 2);
  fake_reply_ok(&f->fake, 3);
  fake_reply_ok(&f->fake, 4);
  assert_int_equal(f->outcome, QUORUM_WON);
}

/* NOSCRIPT: the same call goes again as EVAL (once), and its answer counts. */
static void test_noscript_resent_as_eval(void **state) {
  fake_t *f = *state;
  const script_t *script = script_get(SCRIPT_RELEASE);
  round_t *round = new_round(f, ROUND_PLAIN, script, 1, 0, 1);
  round_send(round);
  assert_true(fake_cmd_has(&f->fake, 0, 0, "EVALSHA"));
  fake_reply_error(&f->fake, 0, "NOSCRIPT No matching script. Please use EVAL.");
  assert_int_equal(f->fake.m[0].sends, 2);
  assert_int_equal(fake_outstanding(&f->fake, 0), 1); /* the EVAL only */
  assert_false(fake_cmd_has(&f->fake, 0, 0, "EVALSHA"));
  assert_true(fake_cmd_has(&f->fake, 0, 0, "EVAL"));
  assert_int_equal(why(round, 0), WHY_NONE);       /* still pending */
  fake_reply_error(&f->fake, 0, "NOSCRIPT again"); /* a second NOSCRIPT is an error */
  assert_int_equal(why(round, 0), WHY_ERROR);
  assert_int_equal(f->fake.m[0].sends, 2);
  fake_reply_int(&f->fake, 1, 1);
  fake_reply_error(&f->fake, 2, "NOSCRIPT No matching script.");
  assert_int_equal(f->fake.m[2].sends, 2);
  fake_reply_int(&f->fake, 2, 1);
  fake_reply_int(&f->fake, 4, 0);
  assert_int_equal(why(round, 4), WHY_REFUSED);
  fake_reply_int(&f->fake, 3, 1); /* the last reply: decided, and the round freed */
  assert_int_equal(f->outcome, QUORUM_WON);
}

/* A plain command (no script) answering NOSCRIPT is just an error. */
static void test_noscript_without_script_is_error(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  fake_reply_error(&f->fake, 0, "NOSCRIPT x");
  assert_int_equal(f->fake.m[0].sends, 1);
  assert_int_equal(why(round, 0), WHY_ERROR);
  for (int i = 1; i < N; i++)
    fake_reply_ok(&f->fake, (unsigned)i);
  assert_int_equal(f->outcome, QUORUM_WON);
}

/* A master in restart quarantine: none of its answers to an acquisition
 * count (not even a refusal); other rounds are not affected. */
static void test_quarantine(void **state) {
  fake_t *f = *state;
  f->fake.m[0].quarantined = f->fake.m[1].quarantined = 1;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  fake_reply_ok(&f->fake, 0);
  fake_reply_nil(&f->fake, 1);
  assert_int_equal(why(round, 0), WHY_QUARANTINED);
  assert_int_equal(why(round, 1), WHY_QUARANTINED);
  fake_reply_ok(&f->fake, 2);
  fake_reply_ok(&f->fake, 3);
  assert_int_equal(f->decisions, 0); /* 2 yes of 5: not yet */
  fake_reply_ok(&f->fake, 4);
  assert_int_equal(f->outcome, QUORUM_WON);

  f->decisions = 0;
  round = new_round(f, ROUND_PLAIN, script_get(SCRIPT_EXTEND), 1, 0, 1);
  round_send(round);
  fake_reply_int(&f->fake, 0, 1);
  fake_reply_int(&f->fake, 1, 1);
  fake_reply_int(&f->fake, 2, 1);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(why(round, 0), WHY_OK);
  fake_reply_int(&f->fake, 3, 1);
  fake_reply_int(&f->fake, 4, 1);
}

/* One server listed twice: a duplicate master is sent no acquisition or
 * extension (its SET NX would race the voter's), and counts
 * as a master that never answered, so a round short of a quorum because of
 * it is lost for want of a quorum, not as held. */
static void test_duplicate_not_sent_not_counted(void **state) {
  fake_t *f = *state;
  f->fake.m[1].duplicate = f->fake.m[3].duplicate = 1;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  assert_int_equal(f->fake.m[1].sends, 0);
  assert_int_equal(f->fake.m[3].sends, 0);
  assert_int_equal(why(round, 1), WHY_DUPLICATE);
  assert_int_equal(why(round, 3), WHY_DUPLICATE);
  fake_reply_ok(&f->fake, 0);
  fake_reply_ok(&f->fake, 2);
  assert_int_equal(f->decisions, 0); /* 2 yes, 2 that never answer: one vote left */
  fake_reply_ok(&f->fake, 4);
  assert_int_equal(f->outcome, QUORUM_WON);
  assert_int_equal(votes(f, 1, WHY_DUPLICATE), 1);

  /* Refusals from the three voters: held (a quorum of masters answered). */
  f->decisions = 0;
  round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  fake_reply_nil(&f->fake, 0);
  fake_reply_nil(&f->fake, 2);
  assert_int_equal(f->decisions, 0);
  fake_reply_nil(&f->fake, 4);
  assert_int_equal(f->outcome, QUORUM_LOST_HELD);

  /* Two refusals and a master down: two answers of the five are no quorum. */
  f->decisions = 0;
  f->fake.m[4].mode = FAKE_SEND_DOWN;
  round = new_round(f, ROUND_PLAIN, script_get(SCRIPT_EXTEND), 1, 0, 1);
  round_send(round);
  assert_int_equal(f->fake.m[1].sends, 0);
  fake_reply_int(&f->fake, 0, 0);
  fake_reply_int(&f->fake, 2, 0);
  assert_int_equal(f->outcome, QUORUM_LOST_NOQUORUM);
}

/* A release still goes to a duplicate (it may hold our value from before it
 * was found out), but its answer does not count; it is not kept for replay
 * once it answered. */
static void test_duplicate_gets_releases(void **state) {
  fake_t *f = *state;
  f->fake.m[1].duplicate = 1;
  round_t *round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, (1u << N) - 1u, 1);
  round_send(round);
  assert_int_equal(f->fake.m[1].sends, 1);
  fake_reply_int(&f->fake, 1, 1);
  assert_int_equal(why(round, 1), WHY_DUPLICATE);
  assert_int_equal(f->fake.m[1].defers, 0);
  fake_reply_int(&f->fake, 0, 1);
  fake_reply_int(&f->fake, 2, 1);
  assert_int_equal(f->decisions, 0); /* the duplicate's yes is not the third */
  fake_reply_int(&f->fake, 3, 1);
  assert_int_equal(f->outcome, QUORUM_WON);
  fake_reply_int(&f->fake, 4, 1);
}

/* Found out while the round is out (the voter came up meanwhile): its
 * answer, yes or no, counts for nothing; the round it was sent is settled. */
static void test_duplicate_found_after_send(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  assert_int_equal(f->fake.m[1].sends, 1);
  f->fake.m[1].duplicate = f->fake.m[2].duplicate = 1;
  fake_reply_ok(&f->fake, 0);
  fake_reply_ok(&f->fake, 1);
  fake_reply_nil(&f->fake, 2);
  assert_int_equal(why(round, 1), WHY_DUPLICATE);
  assert_int_equal(why(round, 2), WHY_DUPLICATE);
  fake_reply_ok(&f->fake, 3);
  assert_int_equal(f->decisions, 0); /* 2 yes */
  fake_reply_ok(&f->fake, 4);
  assert_int_equal(f->outcome, QUORUM_WON);
  /* It was sent the SET and said yes: a release must reach it. */
  assert_true(f->set_mask >> 1 & 1);
}

/* An extension: a quarantined master's re-install (ROUND_REINSTALLED) is an
 * acquisition there and does not count; its extension of a present key (1)
 * and its refusal (0) do; other masters' re-installs count. */
static void test_extend_reinstall_in_quarantine(void **state) {
  fake_t *f = *state;
  f->fake.m[0].quarantined = f->fake.m[1].quarantined = f->fake.m[2].quarantined = 1;
  round_t *round = new_round(f, ROUND_EXTEND, script_get(SCRIPT_EXTEND), ROUND_EXPECT_CODE, 0, 1);
  round_send(round);
  fake_reply_int(&f->fake, 0, ROUND_REINSTALLED);
  assert_int_equal(why(round, 0), WHY_QUARANTINED);
  fake_reply_int(&f->fake, 1, 1);
  assert_int_equal(why(round, 1), WHY_OK);
  fake_reply_int(&f->fake, 2, 0);
  assert_int_equal(why(round, 2), WHY_REFUSED);
  fake_reply_int(&f->fake, 3, ROUND_REINSTALLED);
  assert_int_equal(why(round, 3), WHY_OK);
  assert_int_equal(f->decisions, 0); /* 2 yes, 1 no, 1 not counted */
  fake_reply_int(&f->fake, 4, ROUND_REINSTALLED);
  assert_int_equal(f->outcome, QUORUM_WON);

  /* Re-installs only where quarantined, one yes elsewhere: no quorum. */
  f->decisions = 0;
  round = new_round(f, ROUND_EXTEND, script_get(SCRIPT_EXTEND), ROUND_EXPECT_CODE, 0, 1);
  round_send(round);
  for (unsigned i = 0; i < 3; i++)
    fake_reply_int(&f->fake, i, ROUND_REINSTALLED);
  fake_reply_int(&f->fake, 3, 1);
  fake_reply_int(&f->fake, 4, 0);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_NOQUORUM);
}

/* A release that may not have reached a master in its replay mask (down,
 * busy, timed out, disconnected) is kept for replay; masters outside the
 * mask, or that answered, are not. */
static void test_release_replay(void **state) {
  fake_t *f = *state;
  f->fake.m[0].mode = FAKE_SEND_DOWN;
  f->fake.m[4].mode = FAKE_SEND_DOWN; /* outside the mask */
  uint64_t mask = 0x0f;
  round_t *round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, mask, 0);
  round_send(round);
  assert_int_equal(f->fake.m[0].defers, 1);
  assert_true(fake_deferred_has(&f->fake, 0, script_get(SCRIPT_RELEASE)->sha1)); /* the release */
  assert_int_equal(f->fake.m[4].defers, 0);
  fake_reply_none(&f->fake, 1);   /* disconnected */
  fake_reply_int(&f->fake, 2, 0); /* answered (not ours any more): nothing to replay */
  assert_int_equal(f->fake.m[1].defers, 1);
  assert_int_equal(f->fake.m[2].defers, 0);
  f->fake.m[3].progress_ns = f->now; /* the master went quiet after the send */
  f->now += TIMEOUT_NS;
  round_deadlines_fire(&f->env);
  assert_int_equal(why(round, 3), WHY_TIMEOUT);
  assert_int_equal(f->fake.m[3].defers, 1);
  assert_int_equal(f->decided_hook, 0); /* nobody waits: not a caller's round */
  fake_reply_none(&f->fake, 3);
  assert_int_equal(f->fake.m[3].defers, 1); /* a late NULL does not defer twice */
}

/* A release keeps waiting while its master keeps answering others (it is
 * pipelined behind them), and times out once the master stops. */
static void test_release_waits_for_a_busy_master(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, 0x1f, 1);
  round_send(round);
  for (unsigned i = 1; i < N; i++)
    fake_reply_int(&f->fake, i, 1);
  assert_int_equal(f->outcome, QUORUM_WON);
  f->now += TIMEOUT_NS;
  f->fake.m[0].progress_ns = f->now - 1000; /* it answered something just now */
  round_deadlines_fire(&f->env);
  assert_int_equal(why(round, 0), WHY_NONE);
  assert_false(round_env_idle(&f->env));
  assert_int_equal(f->armed_ns, f->now + TIMEOUT_NS); /* judged again a timeout later */
  f->now += TIMEOUT_NS;
  round_deadlines_fire(&f->env);
  assert_int_equal(why(round, 0), WHY_TIMEOUT);
  assert_int_equal(f->fake.m[0].defers, 1);
  fake_reply_none(&f->fake, 0);
}

/* Once decided, what still waits unsent in a backlog is withdrawn (it would
 * only load the master), except a release's. */
static void test_queued_votes_withdrawn_after_decision(void **state) {
  fake_t *f = *state;
  f->fake.m[3].mode = f->fake.m[4].mode = FAKE_SEND_QUEUED;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  fake_reply_ok(&f->fake, 0);
  fake_reply_ok(&f->fake, 1);
  fake_reply_ok(&f->fake, 2);
  assert_int_equal(f->outcome, QUORUM_WON);
  assert_int_equal(f->fake.m[3].cancels, 1);
  assert_int_equal(f->fake.m[4].cancels, 1);
  assert_int_equal(votes(f, 3, WHY_BUSY), 1); /* the round is freed: no request is out */
  assert_int_equal(votes(f, 4, WHY_BUSY), 1);
  assert_true(round_env_idle(&f->env));

  f->decisions = 0;
  round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, 0x1f, 1);
  round_send(round);
  fake_reply_int(&f->fake, 0, 1);
  fake_reply_int(&f->fake, 1, 1);
  fake_reply_int(&f->fake, 2, 1);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->fake.m[3].cancels, 1); /* a release stays queued */
  assert_true(fake_queued(&f->fake, 3, 0));
  fake_reply_int(&f->fake, 3, 1);
  fake_reply_int(&f->fake, 4, 1);
}

/* What waits only for its connection's next batch (node.h, batch_writes)
 * is not withdrawn when its round is decided: it goes out and its answer is
 * still counted for the voter. */
static void test_batched_votes_kept_after_decision(void **state) {
  fake_t *f = *state;
  f->fake.m[3].mode = FAKE_SEND_BATCHED;
  f->fake.m[4].mode = FAKE_SEND_QUEUED;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  fake_reply_ok(&f->fake, 0);
  fake_reply_ok(&f->fake, 1);
  fake_reply_ok(&f->fake, 2);
  assert_int_equal(f->outcome, QUORUM_WON);
  assert_int_equal(f->fake.m[3].cancels, 0);
  assert_true(fake_queued(&f->fake, 3, 0));
  assert_int_equal(f->fake.m[4].cancels, 1); /* behind a full pipe: withdrawn */
  assert_false(round_env_idle(&f->env));
  fake_reply_ok(&f->fake, 3);
  assert_int_equal(votes(f, 3, WHY_OK), 1);
  assert_true(round_env_idle(&f->env));
}

/* A non-release still queued at its deadline is withdrawn unsent (busy); a
 * queued release waits on. */
static void test_queued_at_deadline(void **state) {
  fake_t *f = *state;
  f->fake.m[0].mode = f->fake.m[1].mode = f->fake.m[2].mode = FAKE_SEND_QUEUED;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  fake_reply_ok(&f->fake, 3);
  f->now += TIMEOUT_NS;
  round_deadlines_fire(&f->env);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_NOQUORUM);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(why(round, (unsigned)i), WHY_BUSY);
    assert_int_equal(f->fake.m[i].cancels, 1);
  }
  fake_reply_ok(&f->fake, 4);

  round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, 0x1f, 0);
  round_send(round);
  for (unsigned i = 3; i < N; i++)
    fake_reply_int(&f->fake, i, 1);
  f->now += TIMEOUT_NS;
  round_deadlines_fire(&f->env);
  assert_true(fake_queued(&f->fake, 0, 0));
  assert_int_equal(why(round, 0), WHY_NONE);
  for (unsigned i = 0; i < 3; i++)
    fake_reply_int(&f->fake, i, 1);
  assert_true(round_env_idle(&f->env));
}

/* Deadlines in a FIFO: the second round's deadline is armed once the first
 * is gone, and an early fire leaves both.  The environment counts the rounds
 * with votes pending: a round leaves the count when settled, not when freed. */
static void test_deadline_fifo(void **state) {
  fake_t *f = *state;
  assert_int_equal(round_env_pending(&f->env), 0);
  round_t *a = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  assert_int_equal(round_env_pending(&f->env), 0); /* made, not sent */
  round_send(a);
  assert_int_equal(round_env_pending(&f->env), 1);
  uint64_t first = f->armed_ns;
  f->now += TIMEOUT_NS / 2;
  round_t *b = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(b);
  assert_int_equal(round_env_pending(&f->env), 2);
  assert_true(f->armed_ns > first);
  f->now = first - TIMEOUT_NS / 4;
  round_deadlines_fire(&f->env); /* early: both wait on */
  assert_int_equal(f->decisions, 0);
  assert_int_equal(round_env_pending(&f->env), 2);
  f->now = first;
  round_deadlines_fire(&f->env);
  assert_int_equal(f->decisions, 1);                     /* a timed out */
  assert_int_equal(f->armed_ns, first + TIMEOUT_NS / 2); /* b's deadline next */
  assert_int_equal(round_env_pending(&f->env), 1);       /* a settled, still alive */
  for (unsigned i = 0; i < N; i++)
    fake_reply_ok_at(&f->fake, i, 1); /* b wins (its requests are behind a's) */
  assert_int_equal(f->decisions, 2);
  assert_int_equal(f->outcome, QUORUM_WON);
  assert_int_equal(round_env_pending(&f->env), 0);
  for (unsigned i = 0; i < N; i++)
    fake_reply_none(&f->fake, i); /* a's connections drop: a is freed */
  assert_int_equal(round_env_pending(&f->env), 0);
  assert_true(round_env_idle(&f->env));
}

/* A round kept at its deadline (a release behind a busy master) goes back
 * into the FIFO and stays counted as pending until its last vote settles. */
static void test_pending_requeued_at_deadline(void **state) {
  fake_t *f = *state;
  round_t *rel = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, 0x1f, 0);
  round_send(rel);
  round_t *acq = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(acq);
  assert_int_equal(round_env_pending(&f->env), 2);
  for (unsigned i = 1; i < N; i++)
    fake_reply_int(&f->fake, i, 1);                /* the release's, oldest on each master */
  assert_int_equal(round_env_pending(&f->env), 2); /* its vote 0 is pending */
  for (unsigned i = 1; i < N; i++)
    fake_reply_ok(&f->fake, i);
  assert_int_equal(f->outcome, QUORUM_WON);
  assert_int_equal(round_env_pending(&f->env), 2); /* decided, vote 0 pending */
  fake_reply_ok_at(&f->fake, 0, 1);                /* acq's last vote: settled and freed */
  assert_int_equal(round_env_pending(&f->env), 1);
  f->now += TIMEOUT_NS;
  f->fake.m[0].progress_ns = f->now - 1000; /* master 0 still answers others */
  round_deadlines_fire(&f->env);
  assert_int_equal(why(rel, 0), WHY_NONE);
  assert_int_equal(round_env_pending(&f->env), 1); /* back in the FIFO */
  assert_int_equal(f->armed_ns, f->now + TIMEOUT_NS);
  f->now += TIMEOUT_NS;
  round_deadlines_fire(&f->env);
  assert_int_equal(why(rel, 0), WHY_TIMEOUT);
  assert_int_equal(f->fake.m[0].defers, 1); /* kept for replay */
  assert_int_equal(round_env_pending(&f->env), 0);
  assert_true(round_env_idle(&f->env));
  fake_reply_none(&f->fake, 0); /* frees the release */
  assert_int_equal(round_env_pending(&f->env), 0);
}

/* Integer expectations: a fencing token (positive), a multi-key count (n),
 * a code (> 0 yes, <= 0 refused). */
static void test_integer_expectations(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, script_get(SCRIPT_ACQUIRE_MANY), 3, 0, 1);
  round_send(round);
  fake_reply_int(&f->fake, 0, 3);
  fake_reply_int(&f->fake, 1, 2); /* some keys held by others: refused */
  fake_reply_int(&f->fake, 2, 4); /* more keys than asked for: nonsense */
  assert_int_equal(why(round, 0), WHY_OK);
  assert_int_equal(why(round, 1), WHY_REFUSED);
  assert_int_equal(why(round, 2), WHY_BADREPLY);
  fake_reply_int(&f->fake, 3, 3);
  fake_reply_int(&f->fake, 4, 3);
  assert_int_equal(f->outcome, QUORUM_WON);

  f->decisions = 0;
  round =
      new_round(f, ROUND_ACQUIRE, script_get(SCRIPT_ACQUIRE_FENCED), ROUND_EXPECT_POSITIVE, 0, 1);
  round_send(round);
  fake_reply_int(&f->fake, 0, 41);
  fake_reply_int(&f->fake, 1, 42);
  fake_reply_int(&f->fake, 2, -1);
  assert_int_equal(round->votes[1].integer, 42);
  assert_int_equal(why(round, 2), WHY_BADREPLY);
  fake_reply_nil(&f->fake, 3);
  fake_reply_int(&f->fake, 4, 40);
  assert_int_equal(f->outcome, QUORUM_WON);

  f->decisions = 0;
  round = new_round(f, ROUND_ACQUIRE, script_get(SCRIPT_SEM_ACQUIRE), ROUND_EXPECT_CODE, 0, 1);
  round_send(round);
  fake_reply_int(&f->fake, 0, -2);
  fake_reply_nil(&f->fake, 1);
  fake_reply_int(&f->fake, 2, 1);
  assert_int_equal(why(round, 0), WHY_REFUSED);
  assert_int_equal(why(round, 1), WHY_REFUSED);
  fake_reply_int(&f->fake, 3, 0);
  assert_int_equal(f->outcome, QUORUM_LOST_HELD);
  fake_reply_int(&f->fake, 4, 1);
}

/* A round decided from inside another's on_decided (nested decisions)
 * restores the outer round as the one deciding. */
static round_t *nested_inner;
static void on_decided_nested(round_t *round, quorum_outcome_t outcome, void *ctx) {
  fake_t *f = ctx;
  (void)outcome;
  assert_ptr_equal(f->env.deciding, round);
  /* decided inside round_send */
  f->fake.m[0].mode = f->fake.m[1].mode = f->fake.m[2].mode = FAKE_SEND_DOWN;
  nested_inner = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(nested_inner);
  assert_ptr_equal(f->deciding_seen, nested_inner);
  assert_ptr_equal(f->env.deciding, round);
  f->fake.m[0].mode = f->fake.m[1].mode = f->fake.m[2].mode = FAKE_SEND_OK;
}

static void test_nested_decisions(void **state) {
  fake_t *f = *state;
  const char *argv[] = {"PING"};
  size_t len[] = {4};
  round_t *outer = new_round_of(&f->env, &(round_params_t){.argc = 1,
                                                           .argv = argv,
                                                           .argv_len = len,
                                                           .expect_integer = ROUND_EXPECT_OK,
                                                           .kind = ROUND_PLAIN,
                                                           .on_decided = on_decided_nested,
                                                           .ctx = f});
  assert_non_null(outer);
  round_send(outer);
  for (unsigned i = 0; i < 3; i++)
    fake_reply_ok(&f->fake, i); /* the third decides outer: inner is sent */
  assert_null(f->env.deciding);
  assert_int_equal(f->decisions, 1); /* the inner one */
  for (unsigned i = 3; i < N; i++)
    fake_reply_ok_at(&f->fake, i, 1); /* the inner round's two live requests */
  for (unsigned i = 3; i < N; i++)
    fake_reply_none(&f->fake, i); /* the outer round's */
  assert_true(round_env_idle(&f->env));
}

static void test_why_names(void **state) {
  (void)state;
  assert_string_equal(why_name(WHY_OK), "OK");
  assert_string_equal(why_name(WHY_TIMEOUT), "timeout");
  assert_string_equal(why_name(WHY_QUARANTINED), "quarantined");
  assert_string_equal(why_name(WHY_DUPLICATE), "duplicate");
  assert_string_equal(why_name(WHY_COUNT), "?");
  assert_string_equal(why_name(999), "?");
}

/* A round that names its key sends that key's hash slot with every request
 * (a cluster voter routes by it); one that does not sends -1. */
static void test_key_slot_goes_with_requests(void **state) {
  fake_t *f = *state;
  const char *argv[] = {"SET", "foo", "v"};
  const size_t len[] = {3, 3, 1};
  for (int key_arg = 0; key_arg <= 1; key_arg++) {
    round_t *round = new_round_of(&f->env, &(round_params_t){.argc = 3,
                                                             .argv = argv,
                                                             .argv_len = len,
                                                             .expect_integer = ROUND_EXPECT_OK,
                                                             .key_arg = key_arg,
                                                             .on_decided = on_decided,
                                                             .ctx = f});
    assert_non_null(round);
    round_send(round);
    for (unsigned i = 0; i < N; i++)
      assert_int_equal(f->fake.m[i].out[f->fake.m[i].head].req->slot,
                       key_arg ? keyslot("foo", 3) : -1);
    fake_reply_ok_all(&f->fake);
  }
  assert_int_equal(f->decisions, 2);
}

/* ---- script-free forms (round_alt_t) ---- */

/* "DELIFEQ k v", MULTI ahead of it, the announcement "PUBLISH ch m". */
static const char *const alt_form_argv[] = {"DELIFEQ", "k", "v"};
static const size_t alt_form_len[] = {7, 1, 1};
static const char *const alt_before_argv[] = {"MULTI"};
static const size_t alt_before_len[] = {5};
static const char *const alt_announce_argv[] = {"PUBLISH", "ch", "m"};
static const size_t alt_announce_len[] = {7, 2, 1};

static round_alt_t release_alt(void) {
  round_alt_t alt = {0};
  alt.form[NODE_FORM_DELIFEQ] = (round_argv_t){3, alt_form_argv, alt_form_len};
  alt.before[0] = (round_argv_t){1, alt_before_argv, alt_before_len};
  alt.announce = (round_argv_t){3, alt_announce_argv, alt_announce_len};
  alt.nolua_only = 1u << NODE_FORM_TX;
  return alt;
}

/* A release of "k" with the release script, its script-free forms alt. */
static round_t *new_release_alt(fake_t *f, const round_alt_t *alt, uint64_t mask) {
  f->alt = alt;
  round_t *round = new_round(f, ROUND_RELEASE, script_get(SCRIPT_RELEASE), 1, mask, 1);
  f->alt = NULL;
  return round;
}

/* The request out at master i (its oldest). */
static node_req_t *out_req(fake_t *f, unsigned i) {
  fake_master_t *m = &f->fake.m[i];
  assert_true(m->n_out > 0);
  return m->out[m->head % FAKE_OUT_MAX].req;
}

static void assert_cmd(const node_cmd_t *cmd, const char *resp) {
  assert_non_null(cmd->cmd);
  assert_int_equal(cmd->len, strlen(resp));
  assert_memory_equal(cmd->cmd, resp, cmd->len);
}

/* Some master has `caps` (caps_seen); a release with release_alt()'s forms
 * is sent. */
static round_t *send_release_alt(fake_t *f, unsigned caps, uint64_t mask) {
  f->caps = caps;
  f->env.caps_seen = &f->caps;
  round_alt_t alt = release_alt();
  round_t *round = new_release_alt(f, &alt, mask);
  round_send(round);
  return round;
}

/* Once some master has a script-free release (caps_seen), the round
 * formats the forms once, after its votes: the form, the commands ahead of
 * it, the announcement and its SPUBLISH twin; every vote points at them.
 * A vote read in a form counts as the script's would. */
static void test_alt_forms_formatted_once_caps_seen(void **state) {
  fake_t *f = *state;
  send_release_alt(f, CAP_DELIFEQ, 0);
  const node_forms_t *forms = out_req(f, 0)->forms;
  assert_non_null(forms);
  for (unsigned i = 1; i < N; i++)
    assert_ptr_equal(out_req(f, i)->forms, forms);
  assert_cmd(&forms->form[NODE_FORM_DELIFEQ], "*3\r\n$7\r\nDELIFEQ\r\n$1\r\nk\r\n$1\r\nv\r\n");
  assert_null(forms->form[NODE_FORM_DELEX].cmd);
  assert_null(forms->form[NODE_FORM_TX].cmd);
  assert_int_equal(forms->n_before, 1);
  assert_cmd(&forms->before[0], "*1\r\n$5\r\nMULTI\r\n");
  assert_cmd(&forms->announce, "*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$1\r\nm\r\n");
  assert_cmd(&forms->announce_shard, "*3\r\n$8\r\nSPUBLISH\r\n$2\r\nch\r\n$1\r\nm\r\n");
  assert_int_equal(forms->nolua_only, 1u << NODE_FORM_TX);
  for (unsigned i = 0; i < N; i++)
    out_req(f, i)->form = NODE_FORM_DELIFEQ; /* as node_pick_form would on such a master */
  fake_reply_int(&f->fake, 0, 1);
  fake_reply_int(&f->fake, 1, 1);
  fake_reply_int(&f->fake, 2, 0);
  assert_int_equal(f->decisions, 0);
  fake_reply_int(&f->fake, 3, 1);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_WON);
  fake_reply_int(&f->fake, 4, 1);
  assert_int_equal(votes(f, 2, WHY_REFUSED), 1);
}

/* A release's forms hold at most its SPUBLISH twin (cmd_shard). */
static void assert_no_alt_forms(const node_forms_t *forms) {
  if (forms == NULL)
    return;
  for (int k = NODE_FORM_SCRIPT + 1; k < NODE_FORM_COUNT; k++)
    assert_null(forms->form[k].cmd);
  assert_int_equal(forms->n_before, 0);
  assert_null(forms->announce.cmd);
}

/* Without caps_seen, or when no master has such a command, the forms are
 * not made: a client of script-only masters formats nothing more. */
static void test_alt_forms_not_made_without_caps(void **state) {
  fake_t *f = *state;
  round_alt_t alt = release_alt();
  round_t *round = new_release_alt(f, &alt, 0);
  round_send(round);
  assert_no_alt_forms(out_req(f, 0)->forms);
  fake_reply_int_all(&f->fake, 1);
  assert_int_equal(f->outcome, QUORUM_WON);
  unsigned caps = CAP_LUA; /* scripts only */
  f->env.caps_seen = &caps;
  round = new_release_alt(f, &alt, 0);
  round_send(round);
  assert_no_alt_forms(out_req(f, 0)->forms);
  fake_reply_int_all(&f->fake, 1);
  assert_int_equal(f->decisions, 2);
}

/* An announcement of more than four words is not made (a release's
 * PUBLISH has three): the forms go without one. */
static void test_alt_forms_long_announce_no_shard_twin(void **state) {
  fake_t *f = *state;
  unsigned caps = CAP_DELEX;
  f->env.caps_seen = &caps;
  static const char *const long_argv[] = {"PUBLISH", "ch", "m", "x", "y"};
  static const size_t long_len[] = {7, 2, 1, 1, 1};
  round_alt_t alt = release_alt();
  alt.announce = (round_argv_t){5, long_argv, long_len};
  round_t *round = new_release_alt(f, &alt, 0);
  round_send(round);
  const node_forms_t *forms = out_req(f, 0)->forms;
  assert_non_null(forms);
  assert_non_null(forms->form[NODE_FORM_DELIFEQ].cmd);
  assert_null(forms->announce.cmd);
  assert_null(forms->announce_shard.cmd);
  fake_reply_int_all(&f->fake, 1);
  assert_int_equal(f->outcome, QUORUM_WON);
}

/* A release sent in a script-free form that may not have reached its
 * master is kept for replay in that form, not as the script. */
static void test_alt_release_replayed_in_its_form(void **state) {
  fake_t *f = *state;
  send_release_alt(f, CAP_DELIFEQ, 0x1f);
  out_req(f, 1)->form = NODE_FORM_DELIFEQ;
  fake_reply_none(&f->fake, 1); /* disconnected */
  assert_int_equal(f->fake.m[1].defers, 1);
  assert_true(fake_deferred_has(&f->fake, 1, "DELIFEQ"));
  assert_false(fake_deferred_has(&f->fake, 1, script_get(SCRIPT_RELEASE)->sha1));
  fake_reply_none(&f->fake, 0); /* sent as the script: replayed as the script */
  assert_true(fake_deferred_has(&f->fake, 0, script_get(SCRIPT_RELEASE)->sha1));
  fake_reply_int_all(&f->fake, 1);
  assert_int_equal(f->outcome, QUORUM_WON);
}

/* A transaction's EXEC reply is read by direct.h, not as the script's: an
 * error or a reply that is no array is no yes, whatever it says. */
static void test_alt_tx_replies_read_as_exec(void **state) {
  fake_t *f = *state;
  round_t *round = new_round(f, ROUND_ACQUIRE, NULL, ROUND_EXPECT_OK, 0, 1);
  round_send(round);
  out_req(f, 0)->form = NODE_FORM_TX;
  out_req(f, 1)->form = NODE_FORM_SET_IFEQ;
  out_req(f, 2)->form = NODE_FORM_TX;
  fake_reply_ok(&f->fake, 0); /* +OK is no EXEC reply */
  fake_reply_ok(&f->fake, 1); /* nor for an extension's transaction */
  fake_reply_error(&f->fake, 2, "EXECABORT Transaction discarded");
  assert_int_equal(why(round, 0), WHY_BADREPLY);
  assert_int_equal(why(round, 1), WHY_BADREPLY);
  assert_int_equal(why(round, 2), WHY_ERROR);
  assert_int_equal(f->decisions, 1);
  assert_int_equal(f->outcome, QUORUM_LOST_NOQUORUM);
  fake_reply_ok_all(&f->fake);
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
      T(test_duplicate_not_sent_not_counted),
      T(test_duplicate_gets_releases),
      T(test_duplicate_found_after_send),
      T(test_extend_reinstall_in_quarantine),
      T(test_release_replay),
      T(test_release_waits_for_a_busy_master),
      T(test_queued_votes_withdrawn_after_decision),
      T(test_batched_votes_kept_after_decision),
      T(test_queued_at_deadline),
      T(test_deadline_fifo),
      T(test_pending_requeued_at_deadline),
      T(test_integer_expectations),
      T(test_nested_decisions),
      T(test_key_slot_goes_with_requests),
      T(test_alt_forms_formatted_once_caps_seen),
      T(test_alt_forms_not_made_without_caps),
      T(test_alt_forms_long_announce_no_shard_twin),
      T(test_alt_release_replayed_in_its_form),
      T(test_alt_tx_replies_read_as_exec),
      cmocka_unit_test(test_why_names),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
