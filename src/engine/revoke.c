/* revoke.c: redlock_revoke, an administrator taking a lock (or an
 * election's lease) back from whoever holds it.
 *
 * Two rounds.  The read (inspect.c's, of the lock's key and counter) finds
 * the largest fence counter any master reports, C.  With C > 0 the key is
 * fenced and the write (revoke.lua) raises every counter it reaches to F =
 * C + 1 and deletes the key; a master that reports a counter above F then
 * (it did not answer the read) makes the write go again with F = that
 * counter + 1, so that every master of the quorum ends at one F above every
 * counter seen, and marks the floor (its "revoked" member, F).  With C = 0 the
 * write leaves the key its ttl under a value of our own.  Either way the
 * holder's extension is refused where the write went (extend.lua: a key
 * revoked above its token is not re-installed), so a quorum of them makes
 * it lost.  Loop thread only,
 * except the op's construction (the caller's thread). */
#include "engine/revoke.h"

#include <string.h>

#include "engine/inspect.h"
#include "engine/lock.h"
#include "engine/prims.h"
#include "util/alloc.h"

/* Writes after the first, when masters report counters the read missed. */
#define REVOKE_MAX_RAISES 3

typedef struct op_revoke {
  op_t op;
  inspect_keys_t keys; /* const: the lock's key, its counter, its floor */
  uint64_t *fence_out; /* const: the caller's, or NULL; written on the loop at the end */
  redlock_done_cb cb;  /* const */
  void *arg;
  uint64_t counter;               /* loop: the largest counter a master reported */
  uint64_t fence;                 /* loop: F of the current write, 0: not fenced */
  unsigned writes;                /* loop: write rounds sent */
  char value[LOCK_VALUE_MAX + 1]; /* loop: the revoker's value (unfenced keys keep it) */
  size_t value_len;
} op_revoke_t;

static const op_ops_t revoke_op_ops;

static void revoke_finish(op_revoke_t *op, status_t status) {
  if (list_linked(&op->op.link))
    list_remove(&op->op.link);
  if (status == ST_OK && op->fence_out != NULL)
    *op->fence_out = op->fence;
  engine_t *engine = op->op.engine;
  op->cb(status, op->arg);
  op_free(&op->op);
  engine->owner->op_ended(engine->owner_arg);
}

static void send_round(op_revoke_t *op, round_t *round) {
  if (op->op.has_thread)
    round_for_caller(round, &op->op.thread);
  round_send(round);
}

static void on_write_decided(round_t *round, quorum_outcome_t outcome, void *ctx);

static void revoke_write(op_revoke_t *op) {
  prim_cmd_t c;
  prim_cmd_script(&c, SCRIPT_REVOKE, 3);
  for (size_t i = 0; i < 3; i++)
    prim_cmd_push(&c, op->keys.keys[i], op->keys.lens[i]);
  prim_cmd_push_u64(&c, op->fence);
  prim_cmd_push(&c, op->value, op->value_len);
  round_t *round = NULL;
  status_t st = prim_cmd_round(op->op.engine, &c, ROUND_EXPECT_POSITIVE, ROUND_PLAIN, 0,
                               on_write_decided, op, &round);
  if (st != ST_OK) {
    revoke_finish(op, st);
    return;
  }
  op->writes++;
  send_round(op, round);
}

static void on_write_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  op_revoke_t *op = ctx;
  if (outcome != QUORUM_WON) {
    revoke_finish(op, round_noquorum_status(round));
    return;
  }
  /* A fenced write answers each master's counter after it: one above F is
   * a counter the read did not see. */
  uint64_t above = 0;
  for (unsigned i = 0; op->fence > 0 && i < round->n_votes; i++)
    if (round->votes[i].state == VOTE_YES && (uint64_t)round->votes[i].integer > op->fence &&
        (uint64_t)round->votes[i].integer > above)
      above = (uint64_t)round->votes[i].integer;
  if (above == 0 || op->writes > REVOKE_MAX_RAISES) {
    revoke_finish(op, above == 0 ? ST_OK : ST_ENOQUORUM);
    return;
  }
  op->fence = above + 1;
  revoke_write(op);
}

static void on_read_reply(void *ctx, unsigned index, const redisReply *reply) {
  (void)index;
  op_revoke_t *op = ctx;
  uint64_t counter = 0;
  if (inspect_reply_ok(reply, &counter) && counter > op->counter)
    op->counter = counter;
}

static void on_read_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  op_revoke_t *op = ctx;
  if (outcome != QUORUM_WON) {
    revoke_finish(op, round_noquorum_status(round));
    return;
  }
  op->fence = op->counter > 0 ? op->counter + 1 : 0;
  revoke_write(op);
}

static void revoke_dispatch(op_t *o) {
  op_revoke_t *op = OP_AS(op_revoke_t, o, &revoke_op_ops, op);
  list_insert_tail(&o->engine->ops_in_flight, &o->link);
  status_t st = lock_value_new(o->engine, op->value, &op->value_len);
  round_t *round = NULL;
  if (st == ST_OK)
    st = inspect_round(o->engine, &op->keys, on_read_decided, on_read_reply, op, &round);
  if (st != ST_OK) {
    revoke_finish(op, st);
    return;
  }
  send_round(op, round);
}

static void revoke_fail(op_t *o, status_t status) {
  revoke_finish(OP_AS(op_revoke_t, o, &revoke_op_ops, op), status);
}

static void revoke_free(op_t *o) {
  op_revoke_t *op = OP_AS(op_revoke_t, o, &revoke_op_ops, op);
  inspect_keys_free(&op->keys);
  rl_free(op);
}

/* An acquisition's rules (acquires = 1): it waits for the masters' first
 * connection attempts, and a close fails it instead of running it. */
static const op_ops_t revoke_op_ops = {.name = "revoke",
                                       .acquires = 1,
                                       .dispatch = revoke_dispatch,
                                       .fail = revoke_fail,
                                       .free = revoke_free};

status_t revoke_op_new(op_t **out, engine_t *engine, const char *resource, uint64_t *fence_out,
                       redlock_done_cb cb, void *arg) {
  *out = NULL;
  op_revoke_t *op = rl_malloc(sizeof *op);
  if (op == NULL)
    return ST_ENOMEM;
  *op = (op_revoke_t){.op = {.ops = &revoke_op_ops, .engine = engine},
                      .fence_out = fence_out,
                      .cb = cb,
                      .arg = arg};
  status_t st = inspect_keys_make(engine, resource, REDLOCK_INSPECT_LOCK, &op->keys);
  if (st == ST_OK)
    *out = &op->op;
  else
    rl_free(op);
  return st;
}
