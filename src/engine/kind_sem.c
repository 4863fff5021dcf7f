/* kind_sem.c: a counting semaphore's permit as a kind of lock handle
 * (kind.h).  Semaphore "name" with limit L: L slots, each an ordinary
 * Redlock mutex (tagged(key prefix + name) + ":sem:" + i) kept by sem_*.lua; a
 * permit is one slot won by a quorum, so at most L permits are valid at once
 * wherever the masters' votes go.  An acquisition tries the slots one after
 * another in a pass from a random slot.  Loop thread only, except the key
 * layout (the caller's thread, before the op is queued). */
#include <string.h>

#include "engine/lock.h"
#include "engine/prims.h"
#include "proto/keyname.h"
#include "proto/resp.h"
#include "voters/notify.h"

/* Room for a slot number: any uint32_t in decimal. */
#define SLOT_DIGITS_MAX 10

/* ---- keys ------------------------------------------------------------------------ */

/* The names of semaphore N with key prefix P, K = P + N (keyname.h: all in
 * K's hash slot, the one a lock named N would have):
 *   keys[0] = tagged(K) + ":sem:" + i, slot i (rewritten for every attempt),
 *   keys[1] = tagged(K) + ":sem:limit",
 *   channel = NOTIFY_CHANNEL_PREFIX + tagged(K) + ":sem",
 * then the name and the permit's resource, N + ":sem:" + i (rewritten with
 * the slot).  Fencing: fence_keys[0] = FENCE_KEY_PREFIX + the slot key
 * (which has K's tag already; rewritten with the slot). */
static status_t sem_keys(op_acquire_t *op, const char *const *names, size_t n, uint32_t limit) {
  (void)n;
  (void)limit; /* prim_op_init keeps it */
  const char *prefix = op->op.engine->opts->key_prefix;
  size_t prefix_len = op->op.engine->opts->key_prefix_len;
  const char *name = names[0];
  size_t name_len = strlen(name);
  size_t key_len = prefix_len + name_len;
  size_t stem_max = key_len + KEYNAME_TAG_LEN + sizeof PRIM_SEM_TAG - 1; /* tagged(K):sem */
  size_t slot_max = stem_max + sizeof PRIM_SEM_SLOT_SEP - 1 + SLOT_DIGITS_MAX;
  size_t resource_max =
      name_len + sizeof PRIM_SEM_TAG - 1 + sizeof PRIM_SEM_SLOT_SEP - 1 + SLOT_DIGITS_MAX;
  size_t strings = (slot_max + 1) + (stem_max + sizeof PRIM_SEM_LIMIT_SUFFIX) +
                   (sizeof NOTIFY_CHANNEL_PREFIX + stem_max) + (name_len + 1) + (resource_max + 1) +
                   (key_len + 1);
  char *w = NULL;
  if (prim_key_block(&op->op.engine->callmem, 2, strings, &op->keys, &op->key_lens, &w) != ST_OK)
    return ST_ENOMEM;
  /* K itself is kept last, as scratch to build the others from. */
  char *key = w + strings - (key_len + 1);
  char *tmp = key;
  prim_put3(&tmp, prefix, prefix_len, name, name_len, "", 0);
  /* keys[0]: the stem + separator, then room for the digits of any slot. */
  char *slot = w;
  size_t slot_len =
      keyname_build(slot, "", 0, key, key_len, PRIM_LIT(PRIM_SEM_TAG PRIM_SEM_SLOT_SEP));
  op->prim.slot_digits = slot + slot_len;
  w = slot + slot_max + 1;
  op->keys[0] = slot;
  op->key_lens[0] = slot_len;
  op->keys[1] = w;
  op->key_lens[1] =
      keyname_build(w, "", 0, key, key_len, PRIM_LIT(PRIM_SEM_TAG PRIM_SEM_LIMIT_SUFFIX));
  w += op->key_lens[1] + 1;
  op->prim.channel = w;
  op->prim.channel_len =
      keyname_build(w, PRIM_LIT(NOTIFY_CHANNEL_PREFIX), key, key_len, PRIM_LIT(PRIM_SEM_TAG));
  w += op->prim.channel_len + 1;
  op->prim.name = prim_put(&w, name, name_len);
  op->prim.resource = w;
  op->prim.resource_digits =
      prim_put3(&w, name, name_len, PRIM_LIT(PRIM_SEM_TAG PRIM_SEM_SLOT_SEP), "", 0) + name_len +
      sizeof PRIM_SEM_TAG - 1 + sizeof PRIM_SEM_SLOT_SEP - 1;
  op->n_keys = 2;

  if (op->fenced) {
    size_t fence_max = keyname_len(sizeof FENCE_KEY_PREFIX - 1, slot, slot_len, SLOT_DIGITS_MAX);
    char *f = NULL;
    if (prim_key_block(&op->op.engine->callmem, 1, fence_max + 1, &op->fence_keys,
                       &op->fence_key_lens, &f) != ST_OK)
      return ST_ENOMEM;
    op->fence_keys[0] = f;
    op->prim.fence_digits = f + keyname_build(f, PRIM_LIT(FENCE_KEY_PREFIX), slot, slot_len, "", 0);
  }
  return ST_OK;
}

/* Points the op's slot key (and fence key, and resource) at slot i. */
static void sem_set_slot(op_acquire_t *op, uint32_t slot) {
  char digits[24]; /* resp_u64_to_dec wants 21 bytes; a slot number has at most 10 digits */
  size_t n = resp_u64_to_dec(slot, digits);
  memcpy(op->prim.slot_digits, digits, n);
  op->prim.slot_digits[n] = '\0';
  op->key_lens[0] = (size_t)(op->prim.slot_digits - op->keys[0]) + n;
  memcpy(op->prim.resource_digits, digits, n);
  op->prim.resource_digits[n] = '\0';
  if (op->prim.fence_digits != NULL) {
    memcpy(op->prim.fence_digits, digits, n);
    op->prim.fence_digits[n] = '\0';
    op->fence_key_lens[0] = (size_t)(op->prim.fence_digits - op->fence_keys[0]) + n;
  }
}

/* ---- acquisition ------------------------------------------------------------------- */

static status_t sem_acquire_round(op_acquire_t *op, round_decided_fn cb, round_t **out) {
  engine_t *engine = op->op.engine;
  int fenced = op->fenced;
  prim_cmd_t c;
  if (op->prim.slots_left == 0) {
    /* A new pass, from a random slot: contenders spread over the slots
     * instead of all fighting for slot 0. */
    op->prim.next_slot = engine_random(engine) % op->prim.limit;
    op->prim.slots_left = op->prim.limit;
  }
  sem_set_slot(op, op->prim.next_slot);
  op->prim.next_slot = (op->prim.next_slot + 1) % op->prim.limit;
  op->prim.slots_left--;
  prim_cmd_script(&c, SCRIPT_SEM_ACQUIRE, fenced ? 3 : 2);
  prim_cmd_push(&c, op->keys[0], op->key_lens[0]);
  prim_cmd_push(&c, op->keys[1], op->key_lens[1]);
  if (fenced)
    prim_cmd_push(&c, op->fence_keys[0], op->fence_key_lens[0]);
  prim_cmd_push(&c, op->value, op->value_len);
  prim_cmd_push_u64(&c, op->ttl_ms);
  prim_cmd_push_u64(&c, op->prim.limit);
  return prim_cmd_round(engine, &c, ROUND_EXPECT_CODE, ROUND_ACQUIRE, 0, cb, op, out);
}

/* sem_acquire.lua refuses with -L, the limit L another client gave for the
 * name. */
static status_t sem_acquire_verdict(op_acquire_t *op, const round_t *round) {
  engine_t *engine = op->op.engine;
  for (unsigned i = 0; i < round->n_votes; i++) {
    const vote_t *vote = &round->votes[i];
    if (vote->state == VOTE_PENDING || vote->state == VOTE_YES)
      continue;
    if (vote->integer < 0) {
      /* Clients disagree on the limit: a configuration error that waiting
       * cannot fix.  (With limits L1 < L2, at most L2 permits are held.) */
      engine_log(engine, REDLOCK_LOG_ERROR,
                 "semaphore %s: called with limit %u, but master %s holds limit %lld for it "
                 "(every client must pass the same limit; the old one is forgotten when its "
                 "permits are gone and their longest ttl has passed)",
                 op->prim.name, op->prim.limit,
                 engine->rounds->transport->label(engine->rounds->transport_arg, i),
                 (long long)-vote->integer);
      return ST_EINVAL;
    }
  }
  return ST_OK;
}

static int sem_next_slot(op_acquire_t *op, status_t status) {
  /* Only "held" says another slot may be free; a missing quorum or a slow
   * round would fail the same way on every slot. */
  if (status == ST_ELOCKED && op->prim.slots_left > 0 && !op->canceled &&
      (op->mode != LOCK_MODE_WAIT || engine_now_ns(op->op.engine) < op->wait_deadline_ns))
    return 1;
  op->prim.slots_left = 0;
  return 0;
}

/* A slot is a plain lock key: the lock's own write-back. */
static status_t sem_fence_round(op_acquire_t *op, const char *token, size_t token_len,
                                round_decided_fn cb, round_t **out) {
  prim_cmd_t c;
  prim_cmd_script(&c, SCRIPT_FENCE_COMMIT, 2);
  prim_cmd_push(&c, op->keys[0], op->key_lens[0]);
  prim_cmd_push(&c, op->fence_keys[0], op->fence_key_lens[0]);
  prim_cmd_push(&c, op->value, op->value_len);
  prim_cmd_push(&c, token, token_len);
  return prim_cmd_round(op->op.engine, &c, 1, ROUND_PLAIN, 0, cb, op, out);
}

/* ---- extension and release ------------------------------------------------------ */

/* Re-installs a slot that is gone where the limit admits it
 * (ROUND_REINSTALLED); with fencing it raises the counter to the permit's
 * token there. */
static status_t sem_extend_round(engine_t *engine, const redlock_lock_t *lock, uint32_t ttl_ms,
                                 round_decided_fn cb, void *ctx, round_t **out) {
  prim_cmd_t c;
  int fenced = lock->fence_keys != NULL;
  prim_cmd_script(&c, SCRIPT_SEM_EXTEND, fenced ? 3 : 2);
  prim_cmd_push(&c, lock->keys[0], lock->key_lens[0]);
  prim_cmd_push(&c, lock->keys[1], lock->key_lens[1]);
  if (fenced)
    prim_cmd_push(&c, lock->fence_keys[0], lock->fence_key_lens[0]);
  prim_cmd_push(&c, lock->value, lock->value_len);
  prim_cmd_push_u64(&c, ttl_ms);
  prim_cmd_push_u64(&c, lock->prim.limit);
  if (fenced)
    prim_cmd_push_u64(&c, lock->fence);
  return prim_cmd_round(engine, &c, ROUND_EXPECT_CODE, ROUND_EXTEND, 0, cb, ctx, out);
}

/* The release script over keys/value. */
static status_t sem_release(engine_t *engine, const prim_t *prim, char *const *keys,
                            const size_t *key_lens, const char *value, size_t value_len,
                            int announce, uint64_t set_mask, round_decided_fn cb, void *ctx,
                            round_t **out) {
  prim_cmd_t c;
  prim_cmd_script(&c, SCRIPT_SEM_RELEASE, 1);
  prim_cmd_push(&c, keys[0], key_lens[0]);
  prim_cmd_push(&c, value, value_len);
  return prim_release_cmd_round(engine, &c, prim, announce, set_mask, cb, ctx, out);
}

static status_t sem_release_round(engine_t *engine, const redlock_lock_t *lock, round_decided_fn cb,
                                  void *ctx, round_t **out) {
  return sem_release(engine, &lock->prim, lock->keys, lock->key_lens, lock->value, lock->value_len,
                     1, lock->set_mask, cb, ctx, out);
}

static status_t sem_attempt_release_round(op_acquire_t *op, round_t **out) {
  return sem_release(op->op.engine, &op->prim, op->keys, op->key_lens, op->value, op->value_len, 0,
                     op->set_mask, NULL, NULL, out);
}

const lock_kind_ops_t kind_sem = {
    .name = "semaphore",
    .init = sem_keys,
    .acquire_round = sem_acquire_round,
    .acquire_verdict = sem_acquire_verdict,
    .next_slot = sem_next_slot,
    .fence_round = sem_fence_round,
    .extend_round = sem_extend_round,
    .release_round = sem_release_round,
    .attempt_release_round = sem_attempt_release_round,
    /* One waiter per release: it frees one slot (and several may be freed
     * at once). */
    .wake_mode = NOTIFY_WAKE_EACH,
    /* Never shared reentrantly: a thread asking for a second permit must
     * get another slot. */
    .reentrant = 0,
    /* Counted apart from locks (waits included: the wait budget is part of
     * the call). */
    .stats_op = STATS_OP_SEMAPHORE,
    .stats_wait_op = STATS_OP_SEMAPHORE,
};
