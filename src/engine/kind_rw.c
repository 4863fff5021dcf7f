/* kind_rw.c: a read-write lock's read and write holds as two kinds of lock
 * handle (kind.h).  Read-write lock "name", per master: a writer key, a
 * sorted set of readers (score = expiry in the master's milliseconds) and a
 * writer-intent key, kept by rw_*.lua.  A waiting writer sets its intent,
 * which holds new readers back until it gets in or gives up.  Loop thread
 * only, except the key layout (the caller's thread, before the op is
 * queued). */
#include <string.h>

#include "engine/lock.h"
#include "engine/prims.h"
#include "proto/keyname.h"
#include "voters/notify.h"

/* ---- keys ------------------------------------------------------------------------ */

/* keys[0..2] = writer, readers, intent, each tagged(K) + ":rw" + suffix
 * with K = key prefix + name (prims.h, keyname.h: all in K's hash slot);
 * then the channel and the name.  Fencing: fence_keys[0] = the writer
 * key's counter (shared by readers and writers). */
static status_t rw_keys(op_acquire_t *op, const char *name) {
  const char *prefix = op->op.engine->opts->key_prefix;
  size_t prefix_len = op->op.engine->opts->key_prefix_len;
  size_t name_len = strlen(name);
  size_t key_len = prefix_len + name_len;
  size_t stem_max = key_len + KEYNAME_TAG_LEN + sizeof PRIM_RW_TAG - 1; /* tagged(K):rw */
  size_t strings = (stem_max + sizeof PRIM_RW_WRITE_SUFFIX) +
                   (stem_max + sizeof PRIM_RW_READ_SUFFIX) +
                   (stem_max + sizeof PRIM_RW_INTENT_SUFFIX) +
                   (sizeof NOTIFY_CHANNEL_PREFIX + stem_max) + (name_len + 1) + (key_len + 1);
  char *w = NULL;
  if (prim_key_block(&op->op.engine->callmem, 3, strings, &op->keys, &op->key_lens, &w) != ST_OK)
    return ST_ENOMEM;
  /* K itself is kept last, as scratch to build the others from. */
  char *key = w + strings - (key_len + 1);
  char *tmp = key;
  prim_put3(&tmp, prefix, prefix_len, name, name_len, "", 0);
  static const struct {
    const char *suffix;
    size_t len;
  } suffixes[3] = {{PRIM_LIT(PRIM_RW_TAG PRIM_RW_WRITE_SUFFIX)},
                   {PRIM_LIT(PRIM_RW_TAG PRIM_RW_READ_SUFFIX)},
                   {PRIM_LIT(PRIM_RW_TAG PRIM_RW_INTENT_SUFFIX)}};
  for (int i = 0; i < 3; i++) {
    op->keys[i] = w;
    op->key_lens[i] = keyname_build(w, "", 0, key, key_len, suffixes[i].suffix, suffixes[i].len);
    w += op->key_lens[i] + 1;
  }
  op->prim.channel = w;
  op->prim.channel_len =
      keyname_build(w, PRIM_LIT(NOTIFY_CHANNEL_PREFIX), key, key_len, PRIM_LIT(PRIM_RW_TAG));
  w += op->prim.channel_len + 1;
  op->prim.name = prim_put(&w, name, name_len);
  op->prim.resource = op->prim.name;
  op->n_keys = 3;

  if (op->fenced) {
    size_t fence_len = keyname_len(sizeof FENCE_KEY_PREFIX - 1, op->keys[0], op->key_lens[0], 0);
    char *f = NULL;
    if (prim_key_block(&op->op.engine->callmem, 1, fence_len + 1, &op->fence_keys,
                       &op->fence_key_lens, &f) != ST_OK)
      return ST_ENOMEM;
    op->fence_keys[0] = f;
    op->fence_key_lens[0] =
        keyname_build(f, PRIM_LIT(FENCE_KEY_PREFIX), op->keys[0], op->key_lens[0], "", 0);
  }
  return ST_OK;
}

static status_t rw_read_init(op_acquire_t *op, const char *const *names, size_t n, uint32_t limit) {
  (void)n;
  (void)limit;
  return rw_keys(op, names[0]);
}

/* A writer also draws the value of its intent. */
static status_t rw_write_init(op_acquire_t *op, const char *const *names, size_t n,
                              uint32_t limit) {
  (void)n;
  (void)limit;
  status_t rc = rw_keys(op, names[0]);
  if (rc == ST_OK)
    rc = random_lock_value(op->prim.intent);
  return rc;
}

/* The keys of a read-write lock's scripts: writer, readers (and intent). */
static void cmd_rw_keys(prim_cmd_t *c, char *const *keys, const size_t *lens, int n) {
  for (int i = 0; i < n; i++)
    prim_cmd_push(c, keys[i], lens[i]);
}

/* ---- acquisition ------------------------------------------------------------------- */

static uint32_t intent_ttl_ms(const engine_t *engine) {
  return PRIM_RW_INTENT_TTL_MS + 2 * engine->opts->request_timeout_ms;
}

static status_t rw_acquire_round(op_acquire_t *op, round_decided_fn cb, int write, round_t **out) {
  engine_t *engine = op->op.engine;
  int fenced = op->fenced;
  prim_cmd_t c;
  prim_cmd_script(&c, write ? SCRIPT_RW_WRITE : SCRIPT_RW_READ, fenced ? 4 : 3);
  cmd_rw_keys(&c, op->keys, op->key_lens, 3);
  if (fenced)
    prim_cmd_push(&c, op->fence_keys[0], op->fence_key_lens[0]);
  prim_cmd_push(&c, op->value, op->value_len);
  prim_cmd_push_u64(&c, op->ttl_ms);
  if (write) {
    prim_cmd_push(&c, op->prim.intent, RANDOM_VALUE_LEN);
    /* Only a writer that will try again announces its intent: a one-shot
     * attempt would block readers for nothing. */
    prim_cmd_push_u64(&c, op->mode == LOCK_MODE_WAIT ? intent_ttl_ms(engine) : 0);
  }
  return prim_cmd_round(engine, &c, ROUND_EXPECT_CODE, ROUND_ACQUIRE, 0, cb, op, out);
}

static status_t rw_read_acquire_round(op_acquire_t *op, round_decided_fn cb, round_t **out) {
  return rw_acquire_round(op, cb, 0, out);
}

static status_t rw_write_acquire_round(op_acquire_t *op, round_decided_fn cb, round_t **out) {
  return rw_acquire_round(op, cb, 1, out);
}

/* A waiting writer refused because of readers has set its intent (rw_write.lua). */
static status_t rw_write_acquire_verdict(op_acquire_t *op, const round_t *round) {
  for (unsigned i = 0; i < round->n_votes; i++) {
    const vote_t *vote = &round->votes[i];
    if (vote->state == VOTE_PENDING || vote->state == VOTE_YES)
      continue;
    if (vote->integer == PRIM_RW_READERS && op->mode == LOCK_MODE_WAIT)
      op->prim.intent_set = 1;
  }
  return ST_OK;
}

static status_t rw_fence_round(op_acquire_t *op, const char *token, size_t token_len,
                               round_decided_fn cb, round_t **out) {
  prim_cmd_t c;
  prim_cmd_script(&c, SCRIPT_RW_FENCE_COMMIT, 3);
  cmd_rw_keys(&c, op->keys, op->key_lens, 2);
  prim_cmd_push(&c, op->fence_keys[0], op->fence_key_lens[0]);
  prim_cmd_push(&c, op->value, op->value_len);
  prim_cmd_push(&c, token, token_len);
  return prim_cmd_round(op->op.engine, &c, 1, ROUND_PLAIN, 0, cb, op, out);
}

/* ---- extension and release ------------------------------------------------------ */

/* Re-installs a hold that is gone where its kind's acquisition would admit
 * it (ROUND_REINSTALLED); with fencing it raises the counter to the hold's
 * token there.  mode: "r" or "w". */
static status_t rw_extend_round(engine_t *engine, const redlock_lock_t *lock, uint32_t ttl_ms,
                                round_decided_fn cb, void *ctx, const char *mode, round_t **out) {
  prim_cmd_t c;
  int fenced = lock->fence_keys != NULL;
  prim_cmd_script(&c, SCRIPT_RW_EXTEND, fenced ? 3 : 2);
  cmd_rw_keys(&c, lock->keys, lock->key_lens, 2);
  if (fenced)
    prim_cmd_push(&c, lock->fence_keys[0], lock->fence_key_lens[0]);
  prim_cmd_push(&c, lock->value, lock->value_len);
  prim_cmd_push_u64(&c, ttl_ms);
  prim_cmd_push(&c, mode, 1);
  if (fenced)
    prim_cmd_push_u64(&c, lock->fence);
  return prim_cmd_round(engine, &c, ROUND_EXPECT_CODE, ROUND_EXTEND, 0, cb, ctx, out);
}

static status_t rw_read_extend_round(engine_t *engine, const redlock_lock_t *lock, uint32_t ttl_ms,
                                     round_decided_fn cb, void *ctx, round_t **out) {
  return rw_extend_round(engine, lock, ttl_ms, cb, ctx, "r", out);
}

static status_t rw_write_extend_round(engine_t *engine, const redlock_lock_t *lock, uint32_t ttl_ms,
                                      round_decided_fn cb, void *ctx, round_t **out) {
  return rw_extend_round(engine, lock, ttl_ms, cb, ctx, "w", out);
}

/* The release script over keys/value; intent: a writer's intent value to
 * drop too, or NULL. */
static status_t rw_release(engine_t *engine, const prim_t *prim, char *const *keys,
                           const size_t *key_lens, const char *value, size_t value_len,
                           const char *intent, int announce, uint64_t set_mask, round_decided_fn cb,
                           void *ctx, round_t **out) {
  prim_cmd_t c;
  prim_cmd_script(&c, SCRIPT_RW_RELEASE, 3);
  cmd_rw_keys(&c, keys, key_lens, 3);
  prim_cmd_push(&c, value, value_len);
  if (intent != NULL)
    prim_cmd_push(&c, intent, RANDOM_VALUE_LEN);
  else
    prim_cmd_push(&c, "", 0);
  return prim_release_cmd_round(engine, &c, prim, announce, set_mask, cb, ctx, out);
}

static status_t rw_read_release_round(engine_t *engine, const redlock_lock_t *lock,
                                      round_decided_fn cb, void *ctx, round_t **out) {
  return rw_release(engine, &lock->prim, lock->keys, lock->key_lens, lock->value, lock->value_len,
                    NULL, 1, lock->set_mask, cb, ctx, out);
}

/* A writer may have left its intent on masters that refused it in the round
 * it won (readers were still there): the release drops it. */
static status_t rw_write_release_round(engine_t *engine, const redlock_lock_t *lock,
                                       round_decided_fn cb, void *ctx, round_t **out) {
  return rw_release(engine, &lock->prim, lock->keys, lock->key_lens, lock->value, lock->value_len,
                    lock->prim.intent, 1, lock->set_mask, cb, ctx, out);
}

/* A failed attempt's clean-up: a waiting writer's intent stays. */
static status_t rw_attempt_release_round(op_acquire_t *op, round_t **out) {
  return rw_release(op->op.engine, &op->prim, op->keys, op->key_lens, op->value, op->value_len,
                    NULL, 0, op->set_mask, NULL, NULL, out);
}

/* A writer that stops waiting withdraws its intent at once, and tells the
 * readers it held back. */
static void rw_write_op_end(op_acquire_t *op, status_t status) {
  if (status == ST_OK || !op->prim.intent_set)
    return;
  op->prim.intent_set = 0;
  round_t *round = NULL;
  if (rw_release(op->op.engine, &op->prim, op->keys, op->key_lens, op->value, op->value_len,
                 op->prim.intent, 1, 0 /* not replayed: it expires */, NULL, NULL,
                 &round) != ST_OK) {
    engine_log(op->op.engine, REDLOCK_LOG_WARN,
               "out of memory: the intent on %s stays until it expires", op->keys[0]);
    return;
  }
  round_send(round);
}

/* A waiting writer's attempts also refresh its intent. */
static uint64_t rw_write_retry_delay_ms(const op_acquire_t *op, uint64_t delay_ms) {
  if (op->prim.intent_set && delay_ms > PRIM_RW_INTENT_REFRESH_MS)
    return PRIM_RW_INTENT_REFRESH_MS;
  return delay_ms;
}

/* Whom a release wakes: every waiter (a writer's release may admit every
 * reader).  Never shared reentrantly (reentrancy is a plain lock's).
 * Counted apart from locks, waits included. */
const lock_kind_ops_t kind_rw_read = {
    .name = "read",
    .init = rw_read_init,
    .acquire_round = rw_read_acquire_round,
    .fence_round = rw_fence_round,
    .extend_round = rw_read_extend_round,
    .release_round = rw_read_release_round,
    .attempt_release_round = rw_attempt_release_round,
    .wake_mode = NOTIFY_WAKE_ALL,
    .reentrant = 0,
    .stats_op = STATS_OP_RWLOCK_READ,
    .stats_wait_op = STATS_OP_RWLOCK_READ,
};

const lock_kind_ops_t kind_rw_write = {
    .name = "write",
    .init = rw_write_init,
    .acquire_round = rw_write_acquire_round,
    .acquire_verdict = rw_write_acquire_verdict,
    .fence_round = rw_fence_round,
    .extend_round = rw_write_extend_round,
    .release_round = rw_write_release_round,
    .attempt_release_round = rw_attempt_release_round,
    .op_end = rw_write_op_end,
    .retry_delay_ms = rw_write_retry_delay_ms,
    .wake_mode = NOTIFY_WAKE_ALL,
    .reentrant = 0,
    .stats_op = STATS_OP_RWLOCK_WRITE,
    .stats_wait_op = STATS_OP_RWLOCK_WRITE,
};
