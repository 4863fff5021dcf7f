/* round.c: fan-out rounds and their votes (see round.h). */
#include "round.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "clock.h"
#include "reply.h"
#include "resp.h"

static const char *const why_names[] = {
    [WHY_NONE] = "pending",   [WHY_OK] = "OK",           [WHY_REFUSED] = "refused",
    [WHY_DOWN] = "down",      [WHY_BUSY] = "busy",       [WHY_TIMEOUT] = "timeout",
    [WHY_DISCONNECTED] = "disconnected",                 [WHY_ERROR] = "error",
    [WHY_QUARANTINED] = "quarantined",                   [WHY_BADREPLY] = "bad-reply",
};

round_t *round_new(struct redlock *client, int argc, const char **argv, const size_t *argv_len,
                   const script_t *script, int64_t expect_integer, int is_acquire,
                   round_decided_fn on_decided, void *ctx) {
  unsigned n = client->n_nodes;
  /* One allocation: the round, its votes, and the command's bytes. */
  size_t cmd_len = resp_command_len(argc, argv_len);
  size_t votes_size = n * sizeof(vote_t);
  round_t *round = malloc(sizeof *round + votes_size + cmd_len);
  if (round == NULL)
    return NULL;
  memset(round, 0, sizeof *round);
  round->cmd = (char *)round->votes + votes_size;
  resp_write_command(round->cmd, argc, argv, argv_len);
  round->client = client;
  round->cmd_len = cmd_len;
  round->script = script;
  round->expect_integer = expect_integer;
  round->is_acquire = is_acquire;
  round->on_decided = on_decided;
  round->ctx = ctx;
  round->n_votes = n;
  round->refs = 1;
  round->replay_mask = ~(uint64_t)0;
  list_init(&round->pending_link);
  for (unsigned i = 0; i < n; i++) {
    vote_t *vote = &round->votes[i];
    memset(vote, 0, sizeof *vote);
    vote->round = round;
    vote->state = VOTE_PENDING;
    vote->why = WHY_NONE;
  }
  return round;
}

static void round_free(round_t *round) {
  if (list_linked(&round->pending_link))
    list_remove(&round->pending_link);
  free(round->eval_cmd);
  redlock_t *client = round->client;
  free(round);
  client_maybe_finish_close(client);
}

static void round_unref(round_t *round) {
  if (--round->refs == 0)
    round_free(round);
}

static void vote_settle(vote_t *vote, vote_state_t state, vote_why_t why);

/* Takes a vote's request back from its master's backlog, unsent: the vote
 * fails as "busy" (it never reached the master) and drops its reference. */
static void vote_withdraw(vote_t *vote) {
  node_cancel(&vote->req);
  vote_settle(vote, VOTE_FAILED, WHY_BUSY);
  vote->round->refs--; /* the request's reference; the caller holds another */
}

/* Once a round is decided, what still waits unsent in a backlog is of no
 * use, except a release, which must reach every master that may hold it. */
static void round_withdraw_queued(round_t *round) {
  if (round->is_release)
    return;
  for (unsigned i = 0; i < round->n_votes; i++) {
    vote_t *vote = &round->votes[i];
    if (vote->state == VOTE_PENDING && node_req_queued(&vote->req))
      vote_withdraw(vote);
  }
}

static void round_check_decision(round_t *round) {
  if (round->decided)
    return;
  quorum_outcome_t outcome = quorum_decide(round->n_votes, round->yes, round->no, round->failed);
  if (outcome == QUORUM_PENDING)
    return;
  round->decided = 1;
  round->outcome = outcome;
  round->decided_ns = clock_now_ns();
  /* Diagnostics describe the rounds a caller waits on, not the background
   * releases that follow a lost attempt. */
  if (round->on_decided != NULL)
    client_record_votes(round->client, round);
  if (round->on_decided != NULL)
    round->on_decided(round, outcome, round->ctx);
  round_withdraw_queued(round);
  round_unref(round); /* the decision's reference */
}

static void vote_settle(vote_t *vote, vote_state_t state, vote_why_t why) {
  round_t *round = vote->round;
  vote->state = (uint8_t)state;
  vote->why = (uint8_t)why;
  unsigned index = (unsigned)(vote - round->votes);
  if (round->is_release && (round->replay_mask >> index & 1) &&
      (why == WHY_DOWN || why == WHY_BUSY || why == WHY_TIMEOUT || why == WHY_DISCONNECTED)) {
    /* The release may not have reached this master: send it again later. */
    node_defer_release(&round->client->nodes[index],
                       round->eval_cmd != NULL ? round->eval_cmd : round->cmd,
                       round->eval_cmd != NULL ? round->eval_cmd_len : round->cmd_len);
  }
  if (state == VOTE_YES)
    round->yes++;
  else if (state == VOTE_NO)
    round->no++;
  else
    round->failed++;
  if (--round->votes_pending == 0 && list_linked(&round->pending_link)) {
    list_remove(&round->pending_link);
    /* Close waits for every round to be settled, not freed: replies that
     * never come (a black-holed master) must not hold it up. */
    client_maybe_finish_close(round->client);
  }
}

/* Counts a reply as a vote. */
static void vote_classify(vote_t *vote, node_t *node, const redisReply *reply) {
  round_t *round = vote->round;
  reply_verdict_t verdict = reply_classify(reply, round->expect_integer, &vote->integer);
  switch (verdict) {
  case REPLY_YES:
  case REPLY_REFUSED:
    /* A master in restart quarantine may have forgotten keys: none of its
     * answers to an acquisition count, not even as an answer. */
    if (round->is_acquire && node->quarantine_until_ns != 0 &&
        node_is_quarantined(node, clock_now_ns())) {
      vote_settle(vote, VOTE_FAILED, WHY_QUARANTINED);
      return;
    }
    if (verdict == REPLY_YES)
      vote_settle(vote, VOTE_YES, WHY_OK);
    else
      vote_settle(vote, VOTE_NO, WHY_REFUSED);
    return;
  case REPLY_ERROR:
    node_warn(node, "error reply", reply->str);
    vote_settle(vote, VOTE_FAILED, WHY_ERROR);
    return;
  case REPLY_UNEXPECTED:
    node_warn(node, "unexpected reply type", NULL);
    vote_settle(vote, VOTE_FAILED, WHY_BADREPLY);
    return;
  }
}

static void vote_reply(node_req_t *req, const redisReply *reply);

/* Points the vote's request at cmd and sends it; 0 or NODE_SEND_*. */
static int vote_send(vote_t *vote, node_t *node, const char *cmd, size_t len) {
  vote->req.cmd = cmd;
  vote->req.len = len;
  vote->req.fn = vote_reply;
  vote->req.keep = vote->round->is_release;
  return node_send(node, &vote->req);
}

/* The master lost its script cache: send the same call as EVAL, which also
 * caches the script again.  Returns 1 when resent. */
static int vote_resend_as_eval(vote_t *vote, node_t *node) {
  round_t *round = vote->round;
  if (round->script == NULL || vote->resent)
    return 0;
  if (round->eval_cmd == NULL &&
      script_evalsha_to_eval(round->cmd, round->cmd_len, round->script, &round->eval_cmd,
                             &round->eval_cmd_len) != 0)
    return 0;
  vote->resent = 1;
  if (vote_send(vote, node, round->eval_cmd, round->eval_cmd_len) != 0)
    return 0;
  client_log(round->client, REDLOCK_LOG_INFO,
             "master %s: script cache was flushed; sent the %s script with EVAL",
             node->addr.label, round->script->name);
  round->refs++;
  return 1;
}

static void vote_reply(node_req_t *req, const redisReply *reply) {
  vote_t *vote = container_of(req, vote_t, req);
  round_t *round = vote->round;
  node_t *node = req->node;

  if (vote->state == VOTE_PENDING) {
    if (reply == NULL) {
      /* Unsent (queued when the master went down) or lost on the way. */
      vote_settle(vote, VOTE_FAILED, req->sent_ns == 0 ? WHY_DOWN : WHY_DISCONNECTED);
    } else if (reply_is_noscript(reply) && vote_resend_as_eval(vote, node)) {
      round_unref(round); /* this reply's reference; the resend took another */
      return;
    } else {
      vote_classify(vote, node, reply);
    }
    round_check_decision(round);
  }
  round_unref(round);
}

void round_send(round_t *round) {
  redlock_t *client = round->client;
  round->refs++; /* hold the round while sending: it may be decided midway */
  round->started_ns = clock_now_ns();
  round->deadline_ns = round->started_ns + (uint64_t)client->opts.request_timeout_ms * 1000000u;
  round->votes_pending = round->n_votes;
  list_insert_tail(&client->rounds_pending, &round->pending_link);
  client_arm_deadline(client, round->deadline_ns);
  for (unsigned i = 0; i < round->n_votes; i++) {
    vote_t *vote = &round->votes[i];
    int rc = vote_send(vote, &client->nodes[i], round->cmd, round->cmd_len);
    if (rc == 0)
      round->refs++;
    else
      vote_settle(vote, VOTE_FAILED, rc == NODE_SEND_BUSY ? WHY_BUSY : WHY_DOWN);
  }
  round_check_decision(round);
  round_unref(round);
}

uint64_t round_set_mask(const round_t *round) {
  uint64_t mask = 0;
  for (unsigned i = 0; i < round->n_votes; i++) {
    const vote_t *vote = &round->votes[i];
    if (vote->why != WHY_REFUSED && vote->why != WHY_DOWN && vote->why != WHY_BUSY)
      mask |= (uint64_t)1 << i;
  }
  return mask;
}

/* Deadlines are judged per vote: a master has the request timeout from when
 * its request was written, not from when it waited in our own backlog behind
 * a full pipe.  A release waits as long as its master keeps answering (it is
 * our queue, not the master, that is slow), so that it is neither lost nor
 * misreported; any other request still unsent at the round's deadline is
 * dropped, so a lock call's latency stays bounded by the request timeout
 * under overload.  Timers fire on millisecond ticks, hence the slack. */
#define DEADLINE_SLACK_NS 1000000u

static uint64_t vote_due_ns(const vote_t *vote, const round_t *round, uint64_t now,
                            uint64_t timeout_ns) {
  if (node_req_queued(&vote->req))
    return round->is_release ? now + timeout_ns : round->deadline_ns;
  uint64_t due_ns = vote->req.sent_ns + timeout_ns;
  if (round->is_release) {
    /* Pipelined behind thousands of others, a release waits its turn at the
     * master: it is late only once the master stops answering altogether. */
    uint64_t progress_due_ns = vote->req.node->progress_ns + timeout_ns;
    if (progress_due_ns > due_ns)
      due_ns = progress_due_ns;
  }
  return due_ns > round->deadline_ns ? due_ns : round->deadline_ns;
}

void round_deadlines_fire(struct redlock *client) {
  /* Timers run before the loop reads sockets: replies that arrived in time
   * may be waiting unread, above all when this thread was slow to run. */
  for (unsigned i = 0; i < client->n_nodes; i++)
    node_read_pending(&client->nodes[i]);
  uint64_t now = clock_now_ns();
  uint64_t timeout_ns = (uint64_t)client->opts.request_timeout_ms * 1000000u;
  while (!list_empty(&client->rounds_pending)) {
    round_t *round = list_entry(client->rounds_pending.next, round_t, pending_link);
    if (round->deadline_ns > now)
      break;
    list_remove(&round->pending_link);
    round->refs++;
    int keep = 0;
    for (unsigned i = 0; i < round->n_votes; i++) {
      vote_t *vote = &round->votes[i];
      if (vote->state != VOTE_PENDING)
        continue;
      if (vote_due_ns(vote, round, now, timeout_ns) > now + DEADLINE_SLACK_NS) {
        keep = 1;
      } else if (node_req_queued(&vote->req)) {
        vote_withdraw(vote);
      } else {
        node_warn(&client->nodes[i], "no reply within the request timeout", NULL);
        vote_settle(vote, VOTE_FAILED, WHY_TIMEOUT);
      }
    }
    if (keep && round->votes_pending > 0) {
      /* Judged again one request timeout from now: no other deadline in the
       * FIFO is later, so it goes to the tail and the FIFO stays in order
       * (a late vote is noticed at most one timeout after it was due). */
      round->deadline_ns = now + timeout_ns;
      list_insert_tail(&client->rounds_pending, &round->pending_link);
    }
    round_check_decision(round);
    round_unref(round);
  }
  /* Hung masters are dropped after the FIFO walk: dropping runs the NULL
   * callbacks of their requests, which may free rounds.  Replies that came
   * in during a long walk are read first, so that only a master is blamed. */
  for (unsigned i = 0; i < client->n_nodes; i++) {
    node_read_pending(&client->nodes[i]);
    node_drop_if_hung(&client->nodes[i]);
  }
  if (!list_empty(&client->rounds_pending)) {
    round_t *head = list_entry(client->rounds_pending.next, round_t, pending_link);
    client_arm_deadline(client, head->deadline_ns);
  }
  /* Replayed releases are in no round: judge their master again when it
   * would be hung, or close could wait forever for a silent one. */
  for (unsigned i = 0; i < client->n_nodes; i++) {
    uint64_t due_ns = node_replays_due_ns(&client->nodes[i]);
    if (due_ns != 0)
      client_arm_deadline(client, due_ns);
  }
  client_maybe_finish_close(client);
}

const char *round_why_name(unsigned why) {
  return why < sizeof why_names / sizeof why_names[0] ? why_names[why] : "?";
}
