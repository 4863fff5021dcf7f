/* prims.c: what the kinds of lock handle share (prims.h): a primitive
 * call's kind set on its op (prim_op_init), and the helpers the
 * semaphore and read-write files (kind_sem.c, kind_rw.c) build their keys
 * and commands with. */
#include "engine/prims.h"

#include <string.h>

#include "engine/lock.h"
#include "proto/resp.h"

/* ---- kinds ------------------------------------------------------------------------ */

status_t prim_op_init(op_acquire_t *op, const lock_kind_ops_t *kind, const char *name,
                      uint32_t limit) {
  op->prim.ops = kind;
  op->prim.limit = limit;
  op->prefix_len = op->op.engine->opts->key_prefix_len;
  const char *names[1] = {name};
  return op->prim.ops->init(op, names, 1, limit);
}

/* ---- keys ------------------------------------------------------------------------ */

char *prim_put(char **w, const char *s, size_t len) {
  char *start = *w;
  memcpy(start, s, len);
  start[len] = '\0';
  *w += len + 1;
  return start;
}

char *prim_put3(char **w, const char *a, size_t a_len, const char *b, size_t b_len, const char *c,
                size_t c_len) {
  char *start = *w;
  memcpy(start, a, a_len);
  memcpy(start + a_len, b, b_len);
  memcpy(start + a_len + b_len, c, c_len);
  start[a_len + b_len + c_len] = '\0';
  *w += a_len + b_len + c_len + 1;
  return start;
}

status_t prim_key_block(callmem_t *mem, size_t n_keys, size_t strings, char ***keys, size_t **lens,
                        char **w) {
  char *block = callmem_alloc(mem, n_keys * (sizeof(char *) + sizeof(size_t)) + strings);
  if (block == NULL)
    return ST_ENOMEM;
  *keys = (char **)(void *)block;
  *lens = (size_t *)(void *)(block + n_keys * sizeof(char *));
  *w = block + n_keys * (sizeof(char *) + sizeof(size_t));
  return ST_OK;
}

/* ---- commands ------------------------------------------------------------------- */

void prim_cmd_push_u64(prim_cmd_t *c, uint64_t v) {
  char *buf = c->nums[c->n_nums++];
  prim_cmd_push(c, buf, resp_u64_to_dec(v, buf));
}

void prim_cmd_script(prim_cmd_t *c, script_id_t id, size_t n_keys) {
  c->argc = 0;
  c->n_nums = 0;
  c->script = id;
  prim_cmd_push(c, "EVALSHA", 7);
  prim_cmd_push(c, script_get(id)->sha1, 40);
  prim_cmd_push_u64(c, n_keys);
}

status_t prim_cmd_round(engine_t *engine, prim_cmd_t *c, int64_t expect, round_kind_t kind,
                        uint64_t replay_mask, round_decided_fn cb, void *ctx, round_t **out) {
  return round_new(engine->rounds,
                   &(round_params_t){.argc = c->argc,
                                     .argv = c->argv,
                                     .argv_len = c->len,
                                     .script = script_get(c->script),
                                     .expect_integer = expect,
                                     .kind = kind,
                                     .replay_mask = replay_mask,
                                     .key_arg = SCRIPT_FIRST_KEY_ARG,
                                     .on_decided = cb,
                                     .ctx = ctx},
                   out);
}

status_t prim_release_cmd_round(engine_t *engine, prim_cmd_t *c, const prim_t *prim, int announce,
                                uint64_t set_mask, round_decided_fn cb, void *ctx, round_t **out) {
  prim_cmd_push(c, prim->channel, prim->channel_len);
  prim_cmd_push(c, announce ? SCRIPT_ANNOUNCE_PUBLISH : SCRIPT_ANNOUNCE_NONE, 1);
  return prim_cmd_round(engine, c, 1, ROUND_RELEASE, set_mask, cb, ctx, out);
}
