/* round.c: fan-out rounds and their votes, and the per-thread record of
 * decided rounds' votes behind redlock_last_votes() (see round.h). */
#include "engine/round.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/caps.h"
#include "proto/direct.h"
#include "proto/keyslot.h"
#include "proto/reply.h"
#include "proto/resp.h"
#include "proto/scripts.h"
#include "redlock.h"
#include "util/alloc.h"

_Static_assert(DIRECT_REINSTALLED == ROUND_REINSTALLED, "one value for a re-install");

void round_env_init(round_env_t *env) {
  list_init(&env->pending);
  env->n_pending = 0;
  env->deciding = NULL;
  env->skip_slots = 0;
}

void round_for_caller(round_t *round, const uv_thread_t *thread) {
  round->caller = *thread;
  round->has_caller = 1;
}

int round_env_idle(const round_env_t *env) { return list_empty(&env->pending); }

unsigned round_env_pending(const round_env_t *env) { return env->n_pending; }

/* The deadline FIFO, and its length kept beside it. */
static void pending_add(round_env_t *env, round_t *round) {
  list_insert_tail(&env->pending, &round->pending_link);
  env->n_pending++;
}

static void pending_remove(round_env_t *env, round_t *round) {
  list_remove(&round->pending_link);
  env->n_pending--;
}

/* Whether a round makes alt's script-free forms: only once some master has
 * such a command, so that a client of script-only masters formats nothing
 * more per round. */
static int round_wants_alt(const round_env_t *env, const round_alt_t *alt) {
  return alt != NULL && env->caps_seen != NULL &&
         (*env->caps_seen & (CAPS_RELEASE | CAP_SET_IFEQ)) != 0;
}

/* How many commands alt's `before` holds (argc 0 ends it). */
static unsigned before_count(const round_alt_t *alt) {
  unsigned n = 0;
  while (n < ROUND_ALT_MAX_BEFORE && alt->before[n].argc > 0)
    n++;
  return n;
}

/* The bytes alt's forms take: the node_cmd_t array of `before`, then the
 * commands (the announcement's SPUBLISH twin included). */
static size_t alt_len(const round_alt_t *alt) {
  unsigned n_before = before_count(alt);
  size_t len = n_before * sizeof(node_cmd_t);
  for (int f = NODE_FORM_SCRIPT + 1; f < NODE_FORM_COUNT; f++)
    if (alt->form[f].argc > 0)
      len += resp_command_len(alt->form[f].argc, alt->form[f].len);
  for (unsigned i = 0; i < n_before; i++)
    len += resp_command_len(alt->before[i].argc, alt->before[i].len);
  if (alt->announce.argc > 0)
    len += 2 * resp_command_len(alt->announce.argc, alt->announce.len) + 1; /* + "SPUBLISH" */
  return len;
}

/* Formats a at *w into cmd; *w moves past it. */
static void alt_put(const round_argv_t *a, node_cmd_t *cmd, char **w) {
  cmd->cmd = *w;
  cmd->len = resp_command_len(a->argc, a->len);
  resp_write_command(*w, a->argc, a->argv, a->len);
  *w += cmd->len;
}

/* Formats alt's forms at w (alt_len bytes, aligned for node_cmd_t) into
 * forms. */
static void alt_write(const round_alt_t *alt, node_forms_t *forms, char *w) {
  unsigned n_before = before_count(alt);
  node_cmd_t *before = (node_cmd_t *)(void *)w;
  w += n_before * sizeof(node_cmd_t);
  forms->nolua_only = alt->nolua_only;
  for (int f = NODE_FORM_SCRIPT + 1; f < NODE_FORM_COUNT; f++)
    if (alt->form[f].argc > 0)
      alt_put(&alt->form[f], &forms->form[f], &w);
  forms->before = before;
  forms->n_before = (uint8_t)n_before;
  for (unsigned i = 0; i < n_before; i++)
    alt_put(&alt->before[i], &before[i], &w);
  const round_argv_t *a = &alt->announce;
  if (a->argc == 0 || a->argc > 4)
    return;
  alt_put(a, &forms->announce, &w);
  const char *argv[4];
  size_t len[4];
  memcpy(argv, a->argv, (size_t)a->argc * sizeof argv[0]);
  memcpy(len, a->len, (size_t)a->argc * sizeof len[0]);
  argv[0] = "SPUBLISH";
  len[0] = 8;
  alt_put(&(round_argv_t){a->argc, argv, len}, &forms->announce_shard, &w);
}

status_t round_new(round_env_t *env, const round_params_t *p, round_t **out) {
  *out = NULL;
  unsigned n = env->n_masters;
  /* One allocation: the round, its votes, and the command's bytes. */
  size_t cmd_len = resp_command_len(p->argc, p->argv_len);
  size_t votes_size = n * sizeof(vote_t);
  /* A cluster voter announces a release with SPUBLISH: its copy of the
   * command is made here, once per round, not per send. */
  size_t shard_len = !env->skip_slots && p->kind == ROUND_RELEASE ? cmd_len : 0;
  const round_alt_t *alt = round_wants_alt(env, p->alt) ? p->alt : NULL;
  size_t forms_size = shard_len != 0 || alt != NULL ? sizeof(node_forms_t) : 0;
  size_t alt_size = alt != NULL ? alt_len(alt) : 0;
  /* node_forms_t first, to keep it aligned: votes_size is a multiple of
   * vote_t's alignment, which is at least a pointer's. */
  round_t *round = pool_alloc(env->pool, sizeof *round + votes_size + forms_size + alt_size +
                                             cmd_len + shard_len);
  if (round == NULL)
    return ST_ENOMEM;
  memset(round, 0, sizeof *round);
  if (forms_size != 0) {
    round->forms = (node_forms_t *)((char *)round->votes + votes_size);
    memset(round->forms, 0, sizeof *round->forms);
  }
  /* The forms' node_cmd_t arrays come right after node_forms_t, aligned
   * as it is; the command bytes after them. */
  round->cmd = (char *)round->votes + votes_size + forms_size + alt_size;
  resp_write_command(round->cmd, p->argc, p->argv, p->argv_len);
  round->env = env;
  round->cmd_len = cmd_len;
  size_t at = shard_len != 0 ? script_publish_flag_at(round->cmd, cmd_len) : 0;
  if (at != 0) {
    char *twin = round->cmd + cmd_len;
    memcpy(twin, round->cmd, cmd_len);
    twin[at] = script_announce_shard(round->cmd[at]);
    round->forms->cmd_shard = twin;
  }
  if (alt != NULL) {
    alt_write(alt, round->forms, (char *)round->votes + votes_size + forms_size);
    round->tx_reply = alt->tx_reply;
  }
  round->script = p->script;
  round->expect_integer = p->expect_integer;
  round->kind = p->kind;
  round->replay_mask = p->kind == ROUND_RELEASE ? p->replay_mask : 0;
  round->slot = !env->skip_slots && p->key_arg > 0 && p->key_arg < p->argc
                    ? keyslot(p->argv[p->key_arg], p->argv_len[p->key_arg])
                    : -1;
  round->on_decided = p->on_decided;
  round->on_reply = p->on_reply;
  round->ctx = p->ctx;
  round->n_votes = n;
  round->refs = 1;
  list_init(&round->pending_link);
  for (unsigned i = 0; i < n; i++) {
    vote_t *vote = &round->votes[i];
    memset(vote, 0, sizeof *vote);
    vote->round = round;
    vote->state = VOTE_PENDING;
    vote->why = WHY_NONE;
    vote->req.slot = (int16_t)round->slot;
  }
  *out = round;
  return ST_OK;
}

static void round_free(round_t *round) {
  round_env_t *env = round->env;
  if (list_linked(&round->pending_link))
    pending_remove(env, round);
  if (round->eval_cmd != NULL) /* only after a NOSCRIPT */
    rl_free(round->eval_cmd);
  pool_free(env->pool, round);
  env->settled(env->owner_arg);
}

static void round_unref(round_t *round) {
  if (--round->refs == 0)
    round_free(round);
}

static void vote_settle(vote_t *vote, vote_state_t state, vote_why_t why);

/* The master a vote is cast by: its place in the round. */
static unsigned vote_master(const vote_t *vote) { return (unsigned)(vote - vote->round->votes); }

/* Takes a vote's request back from its master's backlog, unsent: the vote
 * fails as "busy" (it never reached the master) and drops its reference. */
static void vote_withdraw(vote_t *vote) {
  round_env_t *env = vote->round->env;
  env->transport->cancel(env->transport_arg, vote_master(vote), &vote->req);
  vote_settle(vote, VOTE_FAILED, WHY_BUSY);
  vote->round->refs--; /* the request's reference; the caller holds another */
}

/* Once a round is decided, what still waits unsent behind a full pipe is of
 * no use, except a release, which must reach every master that may hold it.
 * What waits only for its connection's next batch (node.h, batch_writes)
 * still goes out: it is not late, and a lock left off a voter that answers
 * would be held by fewer voters than it could be. */
static void round_withdraw_queued(round_t *round) {
  if (round->kind == ROUND_RELEASE)
    return;
  round_env_t *env = round->env;
  for (unsigned i = 0; i < round->n_votes; i++) {
    vote_t *vote = &round->votes[i];
    if (vote->state == VOTE_PENDING && !vote->req.batched &&
        env->transport->queued(env->transport_arg, i, &vote->req))
      vote_withdraw(vote);
  }
}

static void round_check_decision(round_t *round) {
  if (round->decided)
    return;
  quorum_outcome_t outcome = quorum_decide(round->n_votes, round->yes, round->no, round->failed);
  if (outcome == QUORUM_PENDING || (round->kind == ROUND_READ && round->votes_pending > 0))
    return;
  round_env_t *env = round->env;
  round->decided = 1;
  round->outcome = outcome;
  round->decided_ns = tb_now_ns(env->tb);
  stats_gauge(env->stats, STATS_GAUGE_ROUNDS, -1);
  if (round->on_decided != NULL) {
    /* Diagnostics describe the rounds a caller waits on, not the background
     * releases that follow a lost attempt. */
    env->decided(env->owner_arg, round);
    /* Stats and events name the round an op ends in (decisions can nest:
     * a round sent from a callback may be decided before it returns). */
    const round_t *outer = env->deciding;
    env->deciding = round;
    round->on_decided(round, outcome, round->ctx);
    env->deciding = outer;
  }
  round_withdraw_queued(round);
  round_unref(round); /* the decision's reference */
}

static void vote_settle(vote_t *vote, vote_state_t state, vote_why_t why) {
  round_t *round = vote->round;
  round_env_t *env = round->env;
  vote->state = (uint8_t)state;
  vote->why = (uint8_t)why;
  unsigned index = (unsigned)(vote - round->votes);
  stats_vote(env->stats, index, why);
  if (round->kind == ROUND_RELEASE && (round->replay_mask >> index & 1) &&
      (why == WHY_DOWN || why == WHY_BUSY || why == WHY_TIMEOUT || why == WHY_DISCONNECTED)) {
    /* The release may not have reached this master: send it again later,
     * in the form it was sent in (a master without scripts refuses the
     * script's). */
    uint8_t form = vote->req.form;
    if (form != NODE_FORM_SCRIPT && vote->req.forms != NULL)
      env->transport->defer_release(env->transport_arg, index, vote->req.forms->form[form].cmd,
                                    vote->req.forms->form[form].len);
    else
      env->transport->defer_release(env->transport_arg, index,
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
    pending_remove(env, round);
    /* Close waits for every round to be settled, not freed: replies that
     * never come (a black-holed master) must not hold it up. */
    env->settled(env->owner_arg);
  }
}

/* Counts a reply as a vote. */
static void vote_classify(vote_t *vote, const redisReply *reply) {
  round_t *round = vote->round;
  round_env_t *env = round->env;
  unsigned index = (unsigned)(vote - round->votes);
  /* A transaction's EXEC reply reads as the script's would (direct.h). */
  int form = vote->req.form;
  reply_verdict_t verdict =
      form == NODE_FORM_TX         ? direct_tx_classify(round->tx_reply, reply, &vote->integer)
      : form == NODE_FORM_SET_IFEQ ? direct_tx_classify(DIRECT_TX_EXTEND, reply, &vote->integer)
                                   : reply_classify(reply, round->expect_integer, &vote->integer);
  switch (verdict) {
  case REPLY_YES:
  case REPLY_REFUSED:
    /* A second name of a server that already votes (found since this was
     * sent): its answer is that server's again, so it counts for nothing,
     * not even as an answer (safety.md §9). */
    if (env->transport->duplicate(env->transport_arg, index, &vote->req)) {
      vote_settle(vote, VOTE_FAILED, WHY_DUPLICATE);
      return;
    }
    /* A master in restart quarantine may have forgotten keys: none of its
     * answers to an acquisition count, not even as an answer, and neither
     * does an extension's re-install there (an acquisition of that key). */
    if ((round->kind == ROUND_ACQUIRE || (round->kind == ROUND_EXTEND && verdict == REPLY_YES &&
                                          vote->integer == ROUND_REINSTALLED)) &&
        env->transport->quarantined(env->transport_arg, index)) {
      vote_settle(vote, VOTE_FAILED, WHY_QUARANTINED);
      return;
    }
    /* A yes whose durability ack fell short is not a vote: the write may
     * be lost in a failover (the node says why, voter why()). */
    if (verdict == REPLY_YES && vote->req.unacked) {
      round->nomem |= vote->req.nomem;
      vote_settle(vote, VOTE_FAILED, WHY_UNACKED);
      return;
    }
    if (verdict == REPLY_YES)
      vote_settle(vote, VOTE_YES, WHY_OK);
    else
      vote_settle(vote, VOTE_NO, WHY_REFUSED);
    return;
  case REPLY_ERROR:
    round->nomem |= vote->req.nomem;
    env->transport->warn(env->transport_arg, index, "error reply",
                         form == NODE_FORM_TX || form == NODE_FORM_SET_IFEQ ? direct_tx_error(reply)
                                                                            : reply->str);
    vote_settle(vote, VOTE_FAILED, WHY_ERROR);
    return;
  case REPLY_UNEXPECTED:
    env->transport->warn(env->transport_arg, index, "unexpected reply type", NULL);
    vote_settle(vote, VOTE_FAILED, WHY_BADREPLY);
    return;
  }
}

static void vote_reply(node_req_t *req, const redisReply *reply);

/* Points the vote's request at cmd and sends it; ST_OK, ST_DOWN, ST_BUSY or
 * ST_ENOMEM. */
/* now_ns: the round's start, read once for all its masters; 0 for a later
 * resend (the transport reads the clock). */
static status_t vote_send(vote_t *vote, const char *cmd, size_t len, uint64_t now_ns) {
  round_t *round = vote->round;
  round_env_t *env = round->env;
  vote->req.cmd = cmd;
  vote->req.forms = cmd == round->cmd ? round->forms : NULL;
  vote->req.script = round->script != NULL;
  vote->req.shard = 0;
  vote->req.form = NODE_FORM_SCRIPT;
  vote->req.len = len;
  vote->req.sent_ns = now_ns;
  vote->req.fn = vote_reply;
  vote->req.keep = round->kind == ROUND_RELEASE;
  /* Every write but a release waits for the voter's durability ack, if it
   * asks one: a release a promoted replica missed only leaves a key that
   * expires, which blocks others and never lets two hold. */
  vote->req.ack = round->kind != ROUND_RELEASE && round->kind != ROUND_READ;
  vote->req.unacked = 0;
  vote->req.nomem = 0;
  return env->transport->send(env->transport_arg, (unsigned)(vote - round->votes), &vote->req);
}

/* The master lost its script cache: send the same call as EVAL, which also
 * caches the script again.  Returns 1 when resent. */
static int vote_resend_as_eval(vote_t *vote) {
  round_t *round = vote->round;
  if (round->script == NULL || vote->resent || vote->req.form != NODE_FORM_SCRIPT)
    return 0;
  if (round->eval_cmd == NULL &&
      script_evalsha_to_eval(round->cmd, round->cmd_len, round->script, &round->eval_cmd,
                             &round->eval_cmd_len) != ST_OK)
    return 0;
  vote->resent = 1;
  if (vote_send(vote, round->eval_cmd, round->eval_cmd_len, 0) != ST_OK)
    return 0;
  round_env_t *env = round->env;
  log_write(env->log, REDLOCK_LOG_INFO,
            "master %s: script cache was flushed; sent the %s script with EVAL",
            env->transport->label(env->transport_arg, (unsigned)(vote - round->votes)),
            round->script->name);
  round->refs++;
  return 1;
}

static void vote_reply(node_req_t *req, const redisReply *reply) {
  vote_t *vote = container_of(req, vote_t, req);
  round_t *round = vote->round;

  if (vote->state == VOTE_PENDING) {
    if (reply == NULL) {
      /* Unsent (queued when the master went down, or held back by a voter
       * of many servers at one found to be another voter's since it was
       * sent: a redirection, a connection that came up) or lost on the
       * way. */
      round_env_t *env = round->env;
      vote_settle(vote, VOTE_FAILED,
                  req->sent_ns != 0 ? WHY_DISCONNECTED
                  : round->kind != ROUND_RELEASE &&
                          env->transport->duplicate(env->transport_arg,
                                                    (unsigned)(vote - round->votes), req)
                      ? WHY_DUPLICATE
                      : WHY_DOWN);
    } else if (reply_is_noscript(reply) && vote_resend_as_eval(vote)) {
      round_unref(round); /* this reply's reference; the resend took another */
      return;
    } else {
      if (round->on_reply != NULL)
        round->on_reply(round->ctx, (unsigned)(vote - round->votes), reply);
      vote_classify(vote, reply);
    }
    round_check_decision(round);
  }
  round_unref(round);
}

void round_send(round_t *round) {
  round_env_t *env = round->env;
  round->refs++; /* hold the round while sending: it may be decided midway */
  round->started_ns = tb_now_ns(env->tb);
  round->deadline_ns = round->started_ns + env->request_timeout_ns;
  round->votes_pending = round->n_votes;
  pending_add(env, round);
  env->arm_deadline(env->owner_arg, round->deadline_ns);
  stats_gauge(env->stats, STATS_GAUGE_ROUNDS, +1);
  for (unsigned i = 0; i < round->n_votes; i++) {
    vote_t *vote = &round->votes[i];
    /* A second name of a server that already votes is not sent the round:
     * its SET NX would race the voter's on the same key (and a fence
     * counter would be raised twice).  A release still goes: it may hold
     * our value from before it was found out, and deleting is idempotent. */
    if (round->kind != ROUND_RELEASE &&
        env->transport->duplicate(env->transport_arg, i, &vote->req)) {
      vote_settle(vote, VOTE_FAILED, WHY_DUPLICATE);
      continue;
    }
    status_t rc = vote_send(vote, round->cmd, round->cmd_len, round->started_ns);
    if (rc == ST_OK) {
      round->refs++;
    } else if (rc == ST_ENOMEM) { /* a voter's own memory for the request (a cluster's) */
      round->nomem = 1;
      vote_settle(vote, VOTE_FAILED, WHY_ERROR);
    } else if (rc == ST_ENOTSUP) { /* a script, and the master runs none */
      round->notsup++;
      vote_settle(vote, VOTE_FAILED, WHY_NOTSUP);
    } else {
      vote_settle(vote, VOTE_FAILED, rc == ST_BUSY ? WHY_BUSY : WHY_DOWN);
    }
  }
  round_check_decision(round);
  round_unref(round);
}

uint64_t round_set_mask(const round_t *round) {
  uint64_t mask = 0;
  for (unsigned i = 0; i < round->n_votes; i++) {
    const vote_t *vote = &round->votes[i];
    if (vote->why != WHY_REFUSED && vote->why != WHY_DOWN && vote->why != WHY_BUSY &&
        vote->why != WHY_NOTSUP)
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
  const round_env_t *env = round->env;
  int is_release = round->kind == ROUND_RELEASE;
  if (env->transport->queued(env->transport_arg, vote_master(vote), &vote->req))
    return is_release ? now + timeout_ns : round->deadline_ns;
  uint64_t due_ns = vote->req.sent_ns + timeout_ns;
  if (is_release) {
    /* Pipelined behind thousands of others, a release waits its turn at the
     * master: it is late only once the master stops answering altogether. */
    unsigned index = (unsigned)(vote - round->votes);
    uint64_t progress_due_ns = env->transport->progress_ns(env->transport_arg, index) + timeout_ns;
    if (progress_due_ns > due_ns)
      due_ns = progress_due_ns;
  }
  return due_ns > round->deadline_ns ? due_ns : round->deadline_ns;
}

void round_deadlines_fire(round_env_t *env) {
  uint64_t now = tb_now_ns(env->tb);
  uint64_t timeout_ns = env->request_timeout_ns;
  while (!list_empty(&env->pending)) {
    round_t *round = list_entry(env->pending.next, round_t, pending_link);
    if (round->deadline_ns > now)
      break;
    pending_remove(env, round);
    round->refs++;
    int keep = 0;
    for (unsigned i = 0; i < round->n_votes; i++) {
      vote_t *vote = &round->votes[i];
      if (vote->state != VOTE_PENDING)
        continue;
      if (vote_due_ns(vote, round, now, timeout_ns) > now + DEADLINE_SLACK_NS) {
        keep = 1;
      } else if (env->transport->queued(env->transport_arg, i, &vote->req)) {
        vote_withdraw(vote);
      } else {
        env->transport->warn(env->transport_arg, i, "no reply within the request timeout", NULL);
        vote_settle(vote, VOTE_FAILED, WHY_TIMEOUT);
      }
    }
    if (keep && round->votes_pending > 0) {
      /* Judged again one request timeout from now: no other deadline in the
       * FIFO is later, so it goes to the tail and the FIFO stays in order
       * (a late vote is noticed at most one timeout after it was due). */
      round->deadline_ns = now + timeout_ns;
      pending_add(env, round);
    }
    round_check_decision(round);
    round_unref(round);
  }
  if (!list_empty(&env->pending)) {
    round_t *head = list_entry(env->pending.next, round_t, pending_link);
    env->arm_deadline(env->owner_arg, head->deadline_ns);
  }
  /* Rounds taken off the FIFO above settled their last votes unlinked. */
  env->settled(env->owner_arg);
}

/* ---- the votes of decided rounds (redlock_last_votes) ---- */

static status_t votes_entry_init(votes_entry_t *e, unsigned n) {
  e->outcome = 0;
  e->why = rl_calloc(n, 1);
  e->detail = rl_calloc(n, sizeof *e->detail);
  return e->why != NULL && e->detail != NULL ? ST_OK : ST_ENOMEM;
}

static void votes_entry_free(votes_entry_t *e) {
  rl_free(e->why);
  rl_free(e->detail);
  e->why = NULL;
  e->detail = NULL;
}

status_t votes_book_init(votes_book_t *book, unsigned n_masters) {
  memset(book, 0, sizeof *book);
  book->n_masters = n_masters;
  return votes_entry_init(&book->latest, n_masters);
}

void votes_book_free(votes_book_t *book) {
  votes_entry_free(&book->latest);
  for (unsigned i = 0; i < VOTES_THREADS; i++)
    votes_entry_free(&book->slots[i].entry);
}

const votes_entry_t *votes_book_find(const votes_book_t *book, const uv_thread_t *thread) {
  for (unsigned i = 0; i < VOTES_THREADS; i++)
    if (book->slots[i].written != 0 && uv_thread_equal(&book->slots[i].thread, thread))
      return &book->slots[i].entry;
  return NULL;
}

void votes_book_copy_latest_to(votes_book_t *book, const uv_thread_t *thread) {
  struct votes_slot *slot = NULL, *oldest = &book->slots[0];
  for (unsigned i = 0; i < VOTES_THREADS && slot == NULL; i++) {
    struct votes_slot *s = &book->slots[i];
    if (s->written != 0 && uv_thread_equal(&s->thread, thread))
      slot = s;
    else if (s->written < oldest->written)
      oldest = s;
  }
  if (slot == NULL) { /* a new thread: the least recently written (or an unused) entry */
    slot = oldest;
    slot->written = 0;
    slot->thread = *thread;
    if (slot->entry.why == NULL && votes_entry_init(&slot->entry, book->n_masters) != 0) {
      votes_entry_free(&slot->entry);
      return;
    }
  }
  slot->entry.outcome = book->latest.outcome;
  memcpy(slot->entry.why, book->latest.why, book->n_masters);
  /* "" where the vote has no detail: most have none, and the whole buffer
   * is worth copying only when there is one. */
  for (unsigned i = 0; i < book->n_masters; i++) {
    if (book->latest.detail[i][0] == '\0')
      slot->entry.detail[i][0] = '\0';
    else
      memcpy(slot->entry.detail[i], book->latest.detail[i], NODE_DOWN_WHY_LEN);
  }
  slot->written = ++book->writes;
}

int votes_format(const votes_entry_t *v, unsigned n_masters,
                 const char *(*label)(void *arg, unsigned master), void *label_arg, char *buf,
                 size_t size) {
  static const char *const outcomes[] = {"none", "won", "lost (held)", "lost (no quorum)"};
  char scratch[1];
  if (size == 0) {
    buf = scratch; /* measure only */
    size = sizeof scratch;
  }
  int total = snprintf(buf, size, "%s:", outcomes[v->outcome]);
  for (unsigned i = 0; i < n_masters && total >= 0; i++) {
    size_t used = (size_t)total < size ? (size_t)total : size - 1;
    const char *detail = v->outcome ? v->detail[i] : "";
    int n = snprintf(buf + used, size - used, " %s=%s%s%s%s", label(label_arg, i),
                     v->outcome ? why_name(v->why[i]) : "-", detail[0] ? " (" : "", detail,
                     detail[0] ? ")" : "");
    total = n < 0 ? n : total + n;
  }
  return total;
}
