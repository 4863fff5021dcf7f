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
    round->votes[i].round = round;
    round->votes[i].state = VOTE_PENDING;
    round->votes[i].why = WHY_NONE;
    round->votes[i].resent = 0;
    round->votes[i].integer = 0;
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

static void vote_reply_cb(redisAsyncContext *ac, void *r, void *privdata);

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
  if (node_send(node, round->eval_cmd, round->eval_cmd_len, vote_reply_cb, vote) != 0)
    return 0;
  client_log(round->client, REDLOCK_LOG_INFO,
             "master %s: script cache was flushed; sent the %s script with EVAL",
             node->addr.label, round->script->name);
  round->refs++;
  return 1;
}

static void vote_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  vote_t *vote = privdata;
  round_t *round = vote->round;
  const redisReply *reply = r;
  node_t *node = &round->client->nodes[vote - round->votes];

  node_request_done(node, reply != NULL);
  if (vote->state == VOTE_PENDING) {
    if (reply == NULL) {
      vote_settle(vote, VOTE_FAILED, WHY_DISCONNECTED);
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
    int rc = node_send(&client->nodes[i], round->cmd, round->cmd_len, vote_reply_cb, vote);
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

void round_deadlines_fire(struct redlock *client) {
  /* Timers run before the loop reads sockets: replies that arrived in time
   * may be waiting unread, above all when this thread was slow to run. */
  for (unsigned i = 0; i < client->n_nodes; i++)
    node_read_pending(&client->nodes[i]);
  uint64_t now = clock_now_ns();
  while (!list_empty(&client->rounds_pending)) {
    round_t *round = list_entry(client->rounds_pending.next, round_t, pending_link);
    if (round->deadline_ns > now)
      break;
    list_remove(&round->pending_link);
    round->refs++;
    for (unsigned i = 0; i < round->n_votes; i++) {
      vote_t *vote = &round->votes[i];
      if (vote->state != VOTE_PENDING)
        continue;
      node_t *node = &client->nodes[i];
      node_warn(node, "no reply within the request timeout", NULL);
      vote_settle(vote, VOTE_FAILED, WHY_TIMEOUT);
    }
    round_check_decision(round);
    round_unref(round);
  }
  /* Hung masters are dropped after the FIFO walk: dropping runs the NULL
   * callbacks of their requests, which may free rounds. */
  for (unsigned i = 0; i < client->n_nodes; i++)
    node_drop_if_hung(&client->nodes[i]);
  if (!list_empty(&client->rounds_pending)) {
    round_t *head = list_entry(client->rounds_pending.next, round_t, pending_link);
    client_arm_deadline(client, head->deadline_ns);
  }
  client_maybe_finish_close(client);
}

const char *round_why_name(unsigned why) {
  return why < sizeof why_names / sizeof why_names[0] ? why_names[why] : "?";
}
