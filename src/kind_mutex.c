/* kind_mutex.c: the plain Redlock lock as a kind of lock handle (kind.h):
 * redlock_lock & co, one or several keys (prefix + resource) set to the
 * lock's random value.  One key is taken with the SET NX PX every Redlock
 * client sends; several, or any with fencing, with the acquire scripts.
 * Loop thread only, except the key layout (the caller's thread, before the
 * op is queued). */
#include <string.h>

#include "lock.h"
#include "notify.h"
#include "resp.h"
#include "scripts.h"

/* ---- argv building ---------------------------------------------------------
 * Each round's argv is built on the stack and formatted once by round_new. */

#define ARGV_MAX (2 * REDLOCK_MAX_MANY + 6)

typedef struct {
  const char *argv[ARGV_MAX];
  size_t len[ARGV_MAX];
  int argc;
  char n_keys_str[24];
  char ttl_str[24];
} argv_t;

static void argv_push(argv_t *a, const char *s, size_t len) {
  a->argv[a->argc] = s;
  a->len[a->argc] = len;
  a->argc++;
}

/* EVALSHA <sha> <n> keys... value [ttl] */
static void argv_script(argv_t *a, const script_t *script, char *const *keys,
                        const size_t *key_lens, size_t n_keys, const char *value, int with_ttl,
                        uint32_t ttl_ms) {
  a->argc = 0;
  argv_push(a, "EVALSHA", 7);
  argv_push(a, script->sha1, 40);
  size_t n = resp_u64_to_dec(n_keys, a->n_keys_str);
  argv_push(a, a->n_keys_str, n);
  for (size_t i = 0; i < n_keys; i++)
    argv_push(a, keys[i], key_lens[i]);
  argv_push(a, value, RANDOM_VALUE_LEN);
  if (with_ttl) {
    n = resp_u64_to_dec(ttl_ms, a->ttl_str);
    argv_push(a, a->ttl_str, n);
  }
}

/* EVALSHA <sha> <2n> keys... fence_keys... value arg */
static void argv_fenced(argv_t *a, const script_t *script, const op_acquire_t *op, const char *arg,
                        size_t arg_len) {
  a->argc = 0;
  argv_push(a, "EVALSHA", 7);
  argv_push(a, script->sha1, 40);
  size_t n = resp_u64_to_dec(2 * op->n_keys, a->n_keys_str);
  argv_push(a, a->n_keys_str, n);
  for (size_t i = 0; i < op->n_keys; i++)
    argv_push(a, op->keys[i], op->key_lens[i]);
  for (size_t i = 0; i < op->n_keys; i++)
    argv_push(a, op->fence_keys[i], op->fence_key_lens[i]);
  argv_push(a, op->value, RANDOM_VALUE_LEN);
  argv_push(a, arg, arg_len);
}

/* ---- keys ------------------------------------------------------------------------ */

/* One allocation holds the key pointers, their lengths and the key bytes
 * (prefix + resource, NUL-terminated); the lock handle inherits it.  The
 * release channel is named after the first key when the op first waits
 * (lock.c), the fence keys made on the loop at the first fenced attempt. */
static int mutex_init(op_acquire_t *op, const char *const *resources, size_t n, uint32_t limit) {
  (void)limit;
  const engine_t *engine = op->op.engine;
  size_t prefix_len = engine->opts->key_prefix_len;
  size_t bytes = n * (sizeof(char *) + sizeof(size_t));
  for (size_t i = 0; i < n; i++)
    bytes += prefix_len + strlen(resources[i]) + 1;
  char *block = callmem_alloc(&op->op.engine->callmem, bytes);
  if (block == NULL)
    return REDLOCK_ENOMEM;
  op->keys = (char **)(void *)block;
  op->key_lens = (size_t *)(void *)(block + n * sizeof(char *));
  char *w = block + n * (sizeof(char *) + sizeof(size_t));
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(resources[i]);
    op->keys[i] = w;
    op->key_lens[i] = prefix_len + len;
    memcpy(w, engine->opts->key_prefix, prefix_len);
    memcpy(w + prefix_len, resources[i], len + 1);
    w += prefix_len + len + 1;
  }
  op->n_keys = n;
  op->prefix_len = prefix_len;
  return 0;
}

/* ---- rounds ---------------------------------------------------------------------- */

static round_t *mutex_acquire_round(op_acquire_t *op, round_decided_fn cb) {
  engine_t *engine = op->op.engine;
  argv_t a;
  if (op->fenced) {
    const script_t *script = script_get(SCRIPT_ACQUIRE_FENCED);
    size_t n = resp_u64_to_dec(op->ttl_ms, a.ttl_str);
    argv_fenced(&a, script, op, a.ttl_str, n);
    return round_new(engine->rounds, &(round_params_t){.argc = a.argc,
                                                       .argv = a.argv,
                                                       .argv_len = a.len,
                                                       .script = script,
                                                       .expect_integer = ROUND_EXPECT_POSITIVE,
                                                       .kind = ROUND_ACQUIRE,
                                                       .on_decided = cb,
                                                       .ctx = op});
  }
  if (op->n_keys == 1) {
    /* SET key value NX PX ttl: the same command every Redlock client sends. */
    a.argc = 0;
    size_t n = resp_u64_to_dec(op->ttl_ms, a.ttl_str);
    argv_push(&a, "SET", 3);
    argv_push(&a, op->keys[0], op->key_lens[0]);
    argv_push(&a, op->value, RANDOM_VALUE_LEN);
    argv_push(&a, "NX", 2);
    argv_push(&a, "PX", 2);
    argv_push(&a, a.ttl_str, n);
    return round_new(engine->rounds, &(round_params_t){.argc = a.argc,
                                                       .argv = a.argv,
                                                       .argv_len = a.len,
                                                       .script = NULL,
                                                       .expect_integer = ROUND_EXPECT_OK,
                                                       .kind = ROUND_ACQUIRE,
                                                       .on_decided = cb,
                                                       .ctx = op});
  }
  const script_t *script = script_get(SCRIPT_ACQUIRE_MANY);
  argv_script(&a, script, op->keys, op->key_lens, op->n_keys, op->value, 1, op->ttl_ms);
  return round_new(engine->rounds, &(round_params_t){.argc = a.argc,
                                                     .argv = a.argv,
                                                     .argv_len = a.len,
                                                     .script = script,
                                                     .expect_integer = (int64_t)op->n_keys,
                                                     .kind = ROUND_ACQUIRE,
                                                     .on_decided = cb,
                                                     .ctx = op});
}

static round_t *mutex_fence_round(op_acquire_t *op, const char *token, size_t token_len,
                                  round_decided_fn cb) {
  argv_t a;
  const script_t *script = script_get(SCRIPT_FENCE_COMMIT);
  argv_fenced(&a, script, op, token, token_len);
  return round_new(op->op.engine->rounds, &(round_params_t){.argc = a.argc,
                                                            .argv = a.argv,
                                                            .argv_len = a.len,
                                                            .script = script,
                                                            .expect_integer = 1,
                                                            .kind = ROUND_PLAIN,
                                                            .on_decided = cb,
                                                            .ctx = op});
}

static round_t *mutex_extend_round(engine_t *engine, const redlock_lock_t *lock, uint32_t ttl_ms,
                                   round_decided_fn cb, void *ctx) {
  argv_t a;
  const script_t *script = script_get(SCRIPT_EXTEND);
  char token_str[24];
  if (lock->fence_keys != NULL) {
    /* EVALSHA <sha> <2n> keys... counters... value ttl token */
    a.argc = 0;
    argv_push(&a, "EVALSHA", 7);
    argv_push(&a, script->sha1, 40);
    argv_push(&a, a.n_keys_str, resp_u64_to_dec(2 * lock->n_keys, a.n_keys_str));
    for (size_t i = 0; i < lock->n_keys; i++)
      argv_push(&a, lock->keys[i], lock->key_lens[i]);
    for (size_t i = 0; i < lock->n_keys; i++)
      argv_push(&a, lock->fence_keys[i], lock->fence_key_lens[i]);
    argv_push(&a, lock->value, RANDOM_VALUE_LEN);
    argv_push(&a, a.ttl_str, resp_u64_to_dec(ttl_ms, a.ttl_str));
    argv_push(&a, token_str, resp_u64_to_dec(lock->fence, token_str));
  } else {
    argv_script(&a, script, lock->keys, lock->key_lens, lock->n_keys, lock->value, 1, ttl_ms);
  }
  return round_new(engine->rounds, &(round_params_t){.argc = a.argc,
                                                     .argv = a.argv,
                                                     .argv_len = a.len,
                                                     .script = script,
                                                     .expect_integer = ROUND_EXPECT_CODE,
                                                     .kind = ROUND_EXTEND,
                                                     .on_decided = cb,
                                                     .ctx = ctx});
}

/* Compare-and-delete on every master that may hold our value (a
 * ROUND_RELEASE: replayed to masters that miss it); announce: PUBLISH to
 * waiters (a held lock). */
static round_t *mutex_release(engine_t *engine, char *const *keys, const size_t *key_lens,
                              size_t n_keys, const char *value, int announce, uint64_t set_mask,
                              round_decided_fn cb, void *ctx) {
  argv_t a;
  const script_t *script = script_get(SCRIPT_RELEASE);
  argv_script(&a, script, keys, key_lens, n_keys, value, 0, 0);
  argv_push(&a, announce ? "1" : "0", 1);
  return round_new(engine->rounds, &(round_params_t){.argc = a.argc,
                                                     .argv = a.argv,
                                                     .argv_len = a.len,
                                                     .script = script,
                                                     .expect_integer = (int64_t)n_keys,
                                                     .kind = ROUND_RELEASE,
                                                     .replay_mask = set_mask,
                                                     .on_decided = cb,
                                                     .ctx = ctx});
}

static round_t *mutex_release_round(engine_t *engine, const redlock_lock_t *lock,
                                    round_decided_fn cb, void *ctx) {
  return mutex_release(engine, lock->keys, lock->key_lens, lock->n_keys, lock->value, 1,
                       lock->set_mask, cb, ctx);
}

static round_t *mutex_attempt_release_round(op_acquire_t *op) {
  return mutex_release(op->op.engine, op->keys, op->key_lens, op->n_keys, op->value, 0,
                       op->set_mask, NULL, NULL);
}

const lock_kind_ops_t kind_mutex = {
    .name = "lock",
    .init = mutex_init,
    .acquire_round = mutex_acquire_round,
    .fence_round = mutex_fence_round,
    .extend_round = mutex_extend_round,
    .release_round = mutex_release_round,
    .attempt_release_round = mutex_attempt_release_round,
    .wake_mode = NOTIFY_WAKE_ONE,
    .reentrant = 1,
    .stats_op = STATS_OP_ACQUIRE,
    .stats_wait_op = STATS_OP_WAIT,
};
