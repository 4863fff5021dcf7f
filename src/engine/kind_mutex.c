/* kind_mutex.c: the plain Redlock lock as a kind of lock handle (kind.h):
 * redlock_lock & co, one or several keys (prefix + resource) set to the
 * lock's random value.  One key is taken with the SET NX PX every Redlock
 * client sends; several, or any with fencing, with the acquire scripts.
 * Loop thread only, except the key layout (the caller's thread, before the
 * op is queued). */
#include <string.h>

#include "engine/lock.h"
#include "engine/prims.h"
#include "proto/direct.h"
#include "proto/keyname.h"
#include "proto/resp.h"
#include "proto/scripts.h"
#include "voters/notify.h"

/* ---- argv building ---------------------------------------------------------
 * Each round's argv is built on the stack and formatted once by round_new. */

#define ARGV_MAX (3 * REDLOCK_MAX_MANY + 6)

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
                        const size_t *key_lens, size_t n_keys, const char *value, size_t value_len,
                        int with_ttl, uint32_t ttl_ms) {
  a->argc = 0;
  argv_push(a, "EVALSHA", 7);
  argv_push(a, script->sha1, 40);
  size_t n = resp_u64_to_dec(n_keys, a->n_keys_str);
  argv_push(a, a->n_keys_str, n);
  for (size_t i = 0; i < n_keys; i++)
    argv_push(a, keys[i], key_lens[i]);
  argv_push(a, value, value_len);
  if (with_ttl) {
    n = resp_u64_to_dec(ttl_ms, a->ttl_str);
    argv_push(a, a->ttl_str, n);
  }
}

/* EVALSHA <sha> <2n> keys... fence_keys... value arg; with floors (the
 * acquisition), <3n> keys... fence_keys... floors... (lock.c: after the
 * counters in the op's fence key block) */
static void argv_fenced(argv_t *a, const script_t *script, const op_acquire_t *op, int floors,
                        const char *arg, size_t arg_len) {
  a->argc = 0;
  argv_push(a, "EVALSHA", 7);
  argv_push(a, script->sha1, 40);
  size_t n = resp_u64_to_dec((floors ? 3 : 2) * op->n_keys, a->n_keys_str);
  argv_push(a, a->n_keys_str, n);
  for (size_t i = 0; i < op->n_keys; i++)
    argv_push(a, op->keys[i], op->key_lens[i]);
  for (size_t i = 0; i < (floors ? 2 : 1) * op->n_keys; i++)
    argv_push(a, op->fence_keys[i], op->fence_key_lens[i]);
  argv_push(a, op->value, op->value_len);
  argv_push(a, arg, arg_len);
}

/* ---- keys ------------------------------------------------------------------------ */

/* One allocation holds the key pointers, their lengths and the key bytes
 * (prefix + resource, NUL-terminated), then each key's release channel
 * (keyname.h: in the key's slot), which waiters subscribe to and the
 * release script announces on; the lock handle inherits it.  The fence keys
 * are made on the loop at the first fenced attempt (lock.c). */
static status_t mutex_init(op_acquire_t *op, const char *const *resources, size_t n,
                           uint32_t limit) {
  (void)limit;
  const engine_t *engine = op->op.engine;
  const char *prefix = engine->opts->key_prefix;
  size_t prefix_len = engine->opts->key_prefix_len;
  size_t strings = 0;
  for (size_t i = 0; i < n; i++) {
    size_t key_len = prefix_len + strlen(resources[i]);
    /* The key, then its channel: at most the key with its tag added. */
    strings += (key_len + 1) + (sizeof NOTIFY_CHANNEL_PREFIX + key_len + KEYNAME_TAG_LEN);
  }
  /* keys[0..n-1]: the keys; keys[n..2n-1]: their channels (prim.channels). */
  char *w = NULL;
  if (prim_key_block(&op->op.engine->callmem, 2 * n, strings, &op->keys, &op->key_lens, &w) !=
      ST_OK)
    return ST_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    op->keys[i] = prim_put3(&w, prefix, prefix_len, resources[i], strlen(resources[i]), "", 0);
    op->key_lens[i] = (size_t)(w - op->keys[i]) - 1;
  }
  op->prim.channels = op->keys + n;
  op->prim.channel_lens = op->key_lens + n;
  for (size_t i = 0; i < n; i++) {
    op->prim.channels[i] = w;
    op->prim.channel_lens[i] =
        keyname_build(w, PRIM_LIT(NOTIFY_CHANNEL_PREFIX), op->keys[i], op->key_lens[i], "", 0);
    w += op->prim.channel_lens[i] + 1;
  }
  op->prim.channel = op->prim.channels[0];
  op->prim.channel_len = op->prim.channel_lens[0];
  op->n_keys = n;
  op->prefix_len = prefix_len;
  return ST_OK;
}

/* ---- rounds ---------------------------------------------------------------------- */

/* argv formatted into a new round: a script's (its keys from argv[3]), or
 * a plain SET (its key argv[1]). */
static status_t argv_round(engine_t *engine, argv_t *a, const script_t *script, int64_t expect,
                           round_kind_t kind, uint64_t replay_mask, const round_alt_t *alt,
                           round_decided_fn cb, void *ctx, round_t **out) {
  return round_new(engine->rounds,
                   &(round_params_t){.argc = a->argc,
                                     .alt = alt,
                                     .argv = a->argv,
                                     .argv_len = a->len,
                                     .script = script,
                                     .key_arg = script != NULL ? SCRIPT_FIRST_KEY_ARG : 1,
                                     .expect_integer = expect,
                                     .kind = kind,
                                     .replay_mask = replay_mask,
                                     .on_decided = cb,
                                     .ctx = ctx},
                   out);
}

/* ---- fencing where no script runs (direct.h) ---------------------------------------
 * One key only; several take the scripts.  The argvs live in the caller's
 * frame until round_new has formatted them. */

static const char *const multi_argv[] = {"MULTI"};
static const size_t multi_len[] = {5};
static const char *const exec_argv[] = {"EXEC"};
static const size_t exec_len[] = {4};
static const char *const time_argv[] = {"TIME"};
static const size_t time_len[] = {4};

/* MULTI; SET K V NX PX ttl; GET C; ZSCORE F m; TIME; EXEC */
typedef struct {
  const char *set[6], *get[2], *zscore[3];
  size_t set_len[6], get_len[2], zscore_len[3];
} tx_acquire_t;

static void tx_acquire(tx_acquire_t *t, round_alt_t *alt, const op_acquire_t *op, const char *ttl,
                       size_t ttl_len) {
  const char *key = op->keys[0], *counter = op->fence_keys[0], *floor = op->fence_keys[1];
  *t = (tx_acquire_t){
      .set = {"SET", key, op->value, "NX", "PX", ttl},
      .set_len = {3, op->key_lens[0], op->value_len, 2, 2, ttl_len},
      .get = {"GET", counter},
      .get_len = {3, op->fence_key_lens[0]},
      .zscore = {"ZSCORE", floor, DIRECT_FLOOR_MEMBER},
      .zscore_len = {6, op->fence_key_lens[1], sizeof DIRECT_FLOOR_MEMBER - 1},
  };
  *alt = (round_alt_t){.nolua_only = 1u << NODE_FORM_TX, .tx_reply = DIRECT_TX_FENCED_ACQUIRE};
  alt->before[0] = (round_argv_t){1, multi_argv, multi_len};
  alt->before[1] = (round_argv_t){6, t->set, t->set_len};
  alt->before[2] = (round_argv_t){2, t->get, t->get_len};
  alt->before[3] = (round_argv_t){3, t->zscore, t->zscore_len};
  alt->before[4] = (round_argv_t){1, time_argv, time_len};
  alt->form[NODE_FORM_TX] = (round_argv_t){1, exec_argv, exec_len};
}

/* ZADD F GT T m: the floor raised to the token (never lowered). */
typedef struct {
  const char *zadd[5];
  size_t zadd_len[5];
} tx_raise_t;

static round_argv_t tx_raise(tx_raise_t *t, const char *floor, size_t floor_len, const char *token,
                             size_t token_len) {
  *t = (tx_raise_t){.zadd = {"ZADD", floor, "GT", token, DIRECT_FLOOR_MEMBER},
                    .zadd_len = {4, floor_len, 2, token_len, sizeof DIRECT_FLOOR_MEMBER - 1}};
  return (round_argv_t){5, t->zadd, t->zadd_len};
}

static status_t mutex_acquire_round(op_acquire_t *op, round_decided_fn cb, round_t **out) {
  engine_t *engine = op->op.engine;
  argv_t a;
  if (op->fenced) {
    const script_t *script = script_get(SCRIPT_ACQUIRE_FENCED);
    size_t n = resp_u64_to_dec(op->ttl_ms, a.ttl_str);
    argv_fenced(&a, script, op, 1, a.ttl_str, n);
    tx_acquire_t t;
    round_alt_t alt;
    if (op->n_keys == 1)
      tx_acquire(&t, &alt, op, a.ttl_str, n);
    return argv_round(engine, &a, script, ROUND_EXPECT_POSITIVE, ROUND_ACQUIRE, 0,
                      op->n_keys == 1 ? &alt : NULL, cb, op, out);
  }
  if (op->n_keys == 1) {
    /* SET key value NX PX ttl: the same command every Redlock client sends. */
    a.argc = 0;
    size_t n = resp_u64_to_dec(op->ttl_ms, a.ttl_str);
    argv_push(&a, "SET", 3);
    argv_push(&a, op->keys[0], op->key_lens[0]);
    argv_push(&a, op->value, op->value_len);
    argv_push(&a, "NX", 2);
    argv_push(&a, "PX", 2);
    argv_push(&a, a.ttl_str, n);
    return argv_round(engine, &a, NULL, ROUND_EXPECT_OK, ROUND_ACQUIRE, 0, NULL, cb, op, out);
  }
  const script_t *script = script_get(SCRIPT_ACQUIRE_MANY);
  argv_script(&a, script, op->keys, op->key_lens, op->n_keys, op->value, op->value_len, 1,
              op->ttl_ms);
  return argv_round(engine, &a, script, (int64_t)op->n_keys, ROUND_ACQUIRE, 0, NULL, cb, op, out);
}

static status_t mutex_fence_round(op_acquire_t *op, const char *token, size_t token_len,
                                  round_decided_fn cb, round_t **out) {
  argv_t a;
  const script_t *script = script_get(SCRIPT_FENCE_COMMIT);
  argv_fenced(&a, script, op, 0, token, token_len);
  if (op->n_keys != 1)
    return argv_round(op->op.engine, &a, script, 1, ROUND_PLAIN, 0, NULL, cb, op, out);
  /* MULTI; ZADD F GT T m; SET K V IFEQ V KEEPTTL; EXEC where no script runs */
  tx_raise_t raise;
  const char *set[] = {"SET", op->keys[0], op->value, "IFEQ", op->value, "KEEPTTL"};
  const size_t set_len[] = {3, op->key_lens[0], op->value_len, 4, op->value_len, 7};
  round_alt_t alt = {.nolua_only = 1u << NODE_FORM_TX, .tx_reply = DIRECT_TX_FENCE_COMMIT};
  alt.before[0] = (round_argv_t){1, multi_argv, multi_len};
  alt.before[1] = tx_raise(&raise, op->fence_keys[1], op->fence_key_lens[1], token, token_len);
  alt.before[2] = (round_argv_t){6, set, set_len};
  alt.form[NODE_FORM_TX] = (round_argv_t){1, exec_argv, exec_len};
  return argv_round(op->op.engine, &a, script, 1, ROUND_PLAIN, 0, &alt, cb, op, out);
}

static status_t mutex_extend_round(engine_t *engine, const redlock_lock_t *lock, uint32_t ttl_ms,
                                   round_decided_fn cb, void *ctx, round_t **out) {
  argv_t a;
  const script_t *script = script_get(SCRIPT_EXTEND);
  char token_str[24];
  if (lock->fence_keys != NULL) {
    /* EVALSHA <sha> <2n> keys... counters... value ttl token floor-suffix */
    a.argc = 0;
    argv_push(&a, "EVALSHA", 7);
    argv_push(&a, script->sha1, 40);
    argv_push(&a, a.n_keys_str, resp_u64_to_dec(2 * lock->n_keys, a.n_keys_str));
    for (size_t i = 0; i < lock->n_keys; i++)
      argv_push(&a, lock->keys[i], lock->key_lens[i]);
    for (size_t i = 0; i < lock->n_keys; i++)
      argv_push(&a, lock->fence_keys[i], lock->fence_key_lens[i]);
    argv_push(&a, lock->value, lock->value_len);
    argv_push(&a, a.ttl_str, resp_u64_to_dec(ttl_ms, a.ttl_str));
    argv_push(&a, token_str, resp_u64_to_dec(lock->fence, token_str));
    argv_push(&a, DIRECT_FLOOR_SUFFIX, sizeof DIRECT_FLOOR_SUFFIX - 1);
  } else {
    argv_script(&a, script, lock->keys, lock->key_lens, lock->n_keys, lock->value, lock->value_len,
                1, ttl_ms);
  }
  if (lock->n_keys != 1)
    return argv_round(engine, &a, script, ROUND_EXPECT_CODE, ROUND_EXTEND, 0, NULL, cb, ctx, out);
  /* One key, script-free where a master has SET IFEQ, as extend.lua, in one
   * transaction: MULTI; SET K V IFEQ V PX ttl (compare-and-pexpire); SET K
   * V NX PX ttl (the re-install of a key the master lost: a yes of its own,
   * ROUND_REINSTALLED, which a quarantined master's does not count); EXEC.
   * Fenced, ZADD F GT token m comes before the re-install, as the script
   * raises the counter; and only where no script runs: elsewhere the
   * script keeps its counter. */
  const char *key = lock->keys[0], *ttl = a.ttl_str;
  size_t key_len = lock->key_lens[0], ttl_len = resp_u64_to_dec(ttl_ms, a.ttl_str);
  const char *set_argv[] = {"SET", key, lock->value, "IFEQ", lock->value, "PX", ttl};
  const size_t set_len[] = {3, key_len, lock->value_len, 4, lock->value_len, 2, ttl_len};
  const char *nx_argv[] = {"SET", key, lock->value, "NX", "PX", ttl};
  const size_t nx_len[] = {3, key_len, lock->value_len, 2, 2, ttl_len};
  round_alt_t alt = {0};
  alt.before[0] = (round_argv_t){1, multi_argv, multi_len};
  alt.before[1] = (round_argv_t){7, set_argv, set_len};
  tx_raise_t raise;
  if (lock->fence_keys != NULL) {
    alt.nolua_only = 1u << NODE_FORM_SET_IFEQ;
    alt.before[2] = tx_raise(&raise, lock->fence_keys[1], lock->fence_key_lens[1], token_str,
                             resp_u64_to_dec(lock->fence, token_str));
  }
  alt.before[lock->fence_keys != NULL ? 3 : 2] = (round_argv_t){6, nx_argv, nx_len};
  alt.form[NODE_FORM_SET_IFEQ] = (round_argv_t){1, exec_argv, exec_len};
  return argv_round(engine, &a, script, ROUND_EXPECT_CODE, ROUND_EXTEND, 0, &alt, cb, ctx, out);
}

/* Compare-and-delete on every master that may hold our value (a
 * ROUND_RELEASE: replayed to masters that miss it); announce: PUBLISH to
 * waiters (a held lock), on each key's channel, which the script names by
 * keyname.h's rule (release.lua: not sent, to keep the command short). */
/* channels: each key's release channel, to announce the release on (a
 * held lock), or NULL (the clean-up after a failed attempt). */
static status_t mutex_release(engine_t *engine, char *const *keys, const size_t *key_lens,
                              size_t n_keys, const char *value, size_t value_len,
                              char *const *channels, const size_t *channel_lens, uint64_t set_mask,
                              round_decided_fn cb, void *ctx, round_t **out) {
  argv_t a;
  const script_t *script = script_get(SCRIPT_RELEASE);
  argv_script(&a, script, keys, key_lens, n_keys, value, value_len, 0, 0);
  const char *how = SCRIPT_ANNOUNCE_NONE;
  if (channels != NULL) {
    how = SCRIPT_ANNOUNCE_PUBLISH;
    for (size_t i = 0; i < n_keys; i++)
      if (memchr(keys[i], '{', key_lens[i]) != NULL)
        how = SCRIPT_ANNOUNCE_PUBLISH_TAGGED;
  }
  argv_push(&a, how, 1);
  if (n_keys != 1)
    return argv_round(engine, &a, script, (int64_t)n_keys, ROUND_RELEASE, set_mask, NULL, cb, ctx,
                      out);
  /* One key, script-free where a master has the command: DELIFEQ k v or
   * DELEX k IFEQ v; where it deleted, the announcement follows, PUBLISH
   * channel "" (SPUBLISH for a voter that announces on shard channels), as
   * the script's. */
  const char *del_argv[] = {"DELIFEQ", keys[0], value};
  const size_t del_len[] = {7, key_lens[0], value_len};
  const char *delex_argv[] = {"DELEX", keys[0], "IFEQ", value};
  const size_t delex_len[] = {5, key_lens[0], 4, value_len};
  const char *pub_argv[] = {"PUBLISH", channels != NULL ? channels[0] : "", ""};
  const size_t pub_len[] = {7, channels != NULL ? channel_lens[0] : 0, 0};
  round_alt_t alt = {0};
  alt.form[NODE_FORM_DELIFEQ] = (round_argv_t){3, del_argv, del_len};
  alt.form[NODE_FORM_DELEX] = (round_argv_t){4, delex_argv, delex_len};
  if (channels != NULL)
    alt.announce = (round_argv_t){3, pub_argv, pub_len};
  return argv_round(engine, &a, script, 1, ROUND_RELEASE, set_mask, &alt, cb, ctx, out);
}

static status_t mutex_release_round(engine_t *engine, const redlock_lock_t *lock,
                                    round_decided_fn cb, void *ctx, round_t **out) {
  return mutex_release(engine, lock->keys, lock->key_lens, lock->n_keys, lock->value,
                       lock->value_len, lock->prim.channels, lock->prim.channel_lens,
                       lock->set_mask, cb, ctx, out);
}

static status_t mutex_attempt_release_round(op_acquire_t *op, round_t **out) {
  return mutex_release(op->op.engine, op->keys, op->key_lens, op->n_keys, op->value, op->value_len,
                       NULL, NULL, op->set_mask, NULL, NULL, out);
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
