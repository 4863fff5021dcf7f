/* prims.c: counting semaphore permits and read-write lock holds as kinds of
 * lock handle (see prims.h): their keys, the rounds lock.c runs for them,
 * and what their scripts' replies mean.  Loop thread only, except
 * prim_op_init (the caller's thread, before the op is queued). */
#include "prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "notify.h"
#include "resp.h"
#include "scripts.h"

/* Room for a slot number: any uint32_t in decimal. */
#define SLOT_DIGITS_MAX 10

/* ---- keys ------------------------------------------------------------------------ */

/* Appends s (len bytes) at *w and a NUL; returns where it starts. */
static char *put(char **w, const char *s, size_t len) {
  char *start = *w;
  memcpy(start, s, len);
  start[len] = '\0';
  *w += len + 1;
  return start;
}

/* Builds "a" "b" "c" into *w (NUL-terminated); returns its start. */
static char *put3(char **w, const char *a, size_t a_len, const char *b, size_t b_len, const char *c,
                  size_t c_len) {
  char *start = *w;
  memcpy(start, a, a_len);
  memcpy(start + a_len, b, b_len);
  memcpy(start + a_len + b_len, c, c_len);
  start[a_len + b_len + c_len] = '\0';
  *w += a_len + b_len + c_len + 1;
  return start;
}

#define LIT(s) (s), (sizeof(s) - 1)

/* One allocation, as acquire_op_set_keys (lock.c) makes for a lock: key
 * pointers, their lengths, then the strings.  `strings` = bytes of every
 * string, NULs included. */
static char *key_block(callmem_t *mem, size_t n_keys, size_t strings, char ***keys, size_t **lens) {
  char *block = callmem_alloc(mem, n_keys * (sizeof(char *) + sizeof(size_t)) + strings);
  if (block == NULL)
    return NULL;
  *keys = (char **)(void *)block;
  *lens = (size_t *)(void *)(block + n_keys * sizeof(char *));
  return block + n_keys * (sizeof(char *) + sizeof(size_t));
}

/* Semaphore: keys[0] = slot (rewritten for every attempt), keys[1] = limit;
 * then the channel and the name.  Fencing: fence_keys[0] = the slot's
 * counter (rewritten with the slot). */
static int sem_keys(op_acquire_t *op, const char *prefix, size_t prefix_len, const char *name,
                    size_t name_len) {
  size_t base_len = prefix_len + name_len + sizeof PRIM_SEM_TAG - 1;
  size_t slot_len = base_len + sizeof PRIM_SEM_SLOT_SEP - 1 + SLOT_DIGITS_MAX;
  size_t strings = (slot_len + 1) + (base_len + sizeof PRIM_SEM_LIMIT_SUFFIX) +
                   (sizeof NOTIFY_CHANNEL_PREFIX + base_len) + (name_len + 1);
  char *w = key_block(&op->op.client->callmem, 2, strings, &op->keys, &op->key_lens);
  if (w == NULL)
    return REDLOCK_ENOMEM;
  /* keys[0]: base + separator, then room for the digits of any slot. */
  char *slot = w;
  char *tmp = slot;
  put3(&tmp, prefix, prefix_len, name, name_len, LIT(PRIM_SEM_TAG));
  memcpy(slot + base_len, PRIM_SEM_SLOT_SEP, sizeof PRIM_SEM_SLOT_SEP - 1);
  op->prim.slot_digits = slot + base_len + sizeof PRIM_SEM_SLOT_SEP - 1;
  op->prim.slot_digits[0] = '\0';
  w = slot + slot_len + 1;
  op->keys[0] = slot;
  op->key_lens[0] = base_len + sizeof PRIM_SEM_SLOT_SEP - 1;
  op->keys[1] = put3(&w, slot, base_len, LIT(PRIM_SEM_LIMIT_SUFFIX), "", 0);
  op->key_lens[1] = base_len + sizeof PRIM_SEM_LIMIT_SUFFIX - 1;
  op->prim.channel = put3(&w, LIT(NOTIFY_CHANNEL_PREFIX), slot, base_len, "", 0);
  op->prim.channel_len = sizeof NOTIFY_CHANNEL_PREFIX - 1 + base_len;
  op->prim.name = put(&w, name, name_len);
  op->n_keys = 2;

  if (op->fenced) {
    size_t fence_len = sizeof FENCE_KEY_PREFIX - 1 + slot_len;
    char *f =
        key_block(&op->op.client->callmem, 1, fence_len + 1, &op->fence_keys, &op->fence_key_lens);
    if (f == NULL)
      return REDLOCK_ENOMEM;
    op->fence_keys[0] = f;
    memcpy(f, FENCE_KEY_PREFIX, sizeof FENCE_KEY_PREFIX - 1);
    memcpy(f + sizeof FENCE_KEY_PREFIX - 1, slot, op->key_lens[0]);
    op->prim.fence_digits = f + sizeof FENCE_KEY_PREFIX - 1 + op->key_lens[0];
    op->prim.fence_digits[0] = '\0';
  }
  return 0;
}

/* Read-write lock: keys[0..2] = writer, readers, intent; then the channel
 * and the name.  Fencing: fence_keys[0] = the writer key's counter. */
static int rw_keys(op_acquire_t *op, const char *prefix, size_t prefix_len, const char *name,
                   size_t name_len) {
  size_t base_len = prefix_len + name_len + sizeof PRIM_RW_TAG - 1;
  size_t strings = (base_len + sizeof PRIM_RW_WRITE_SUFFIX) +
                   (base_len + sizeof PRIM_RW_READ_SUFFIX) +
                   (base_len + sizeof PRIM_RW_INTENT_SUFFIX) +
                   (sizeof NOTIFY_CHANNEL_PREFIX + base_len) + (name_len + 1) + (base_len + 1);
  char *w = key_block(&op->op.client->callmem, 3, strings, &op->keys, &op->key_lens);
  if (w == NULL)
    return REDLOCK_ENOMEM;
  /* The base itself is kept last, as scratch to build the others from. */
  char *base = w + strings - (base_len + 1);
  char *tmp = base;
  put3(&tmp, prefix, prefix_len, name, name_len, LIT(PRIM_RW_TAG));
  static const struct {
    const char *suffix;
    size_t len;
  } suffixes[3] = {
      {LIT(PRIM_RW_WRITE_SUFFIX)}, {LIT(PRIM_RW_READ_SUFFIX)}, {LIT(PRIM_RW_INTENT_SUFFIX)}};
  for (int i = 0; i < 3; i++) {
    op->keys[i] = put3(&w, base, base_len, suffixes[i].suffix, suffixes[i].len, "", 0);
    op->key_lens[i] = base_len + suffixes[i].len;
  }
  op->prim.channel = put3(&w, LIT(NOTIFY_CHANNEL_PREFIX), base, base_len, "", 0);
  op->prim.channel_len = sizeof NOTIFY_CHANNEL_PREFIX - 1 + base_len;
  op->prim.name = put(&w, name, name_len);
  op->prim.resource = op->prim.name;
  op->n_keys = 3;

  if (op->fenced) {
    size_t fence_len = sizeof FENCE_KEY_PREFIX - 1 + op->key_lens[0];
    char *f =
        key_block(&op->op.client->callmem, 1, fence_len + 1, &op->fence_keys, &op->fence_key_lens);
    if (f == NULL)
      return REDLOCK_ENOMEM;
    op->fence_keys[0] = put3(&f, LIT(FENCE_KEY_PREFIX), op->keys[0], op->key_lens[0], "", 0);
    op->fence_key_lens[0] = fence_len;
  }
  return 0;
}

int prim_op_init(op_acquire_t *op, lock_kind_t kind, const char *name, uint32_t limit) {
  const redlock_t *client = op->op.client;
  const char *prefix = client->opts.key_prefix;
  size_t prefix_len = client->opts.key_prefix_len;
  size_t name_len = strlen(name);
  op->prim.kind = (uint8_t)kind;
  op->prim.limit = limit;
  op->prefix_len = prefix_len;
  int rc = kind == LOCK_KIND_SEM ? sem_keys(op, prefix, prefix_len, name, name_len)
                                 : rw_keys(op, prefix, prefix_len, name, name_len);
  if (rc == 0 && kind == LOCK_KIND_RW_WRITE)
    rc = random_lock_value(op->prim.intent);
  return rc;
}

/* Points the op's slot key (and fence key) at slot i. */
static void sem_set_slot(op_acquire_t *op, uint32_t slot) {
  char digits[24]; /* resp_u64_to_dec wants 21 bytes; a slot number has at most 10 digits */
  size_t n = resp_u64_to_dec(slot, digits);
  memcpy(op->prim.slot_digits, digits, n);
  op->prim.slot_digits[n] = '\0';
  op->key_lens[0] = (size_t)(op->prim.slot_digits - op->keys[0]) + n;
  if (op->prim.fence_digits != NULL) {
    memcpy(op->prim.fence_digits, digits, n);
    op->prim.fence_digits[n] = '\0';
    op->fence_key_lens[0] = (size_t)(op->prim.fence_digits - op->fence_keys[0]) + n;
  }
}

/* ---- commands ------------------------------------------------------------------- */

#define CMD_ARGV_MAX 12

/* EVALSHA <sha> <n_keys> keys... args..., built on the stack and formatted
 * once by round_new. */
typedef struct {
  const char *argv[CMD_ARGV_MAX];
  size_t len[CMD_ARGV_MAX];
  int argc;
  int n_nums;
  char nums[4][24];
  script_id_t script;
} cmd_t;

static void cmd_push(cmd_t *c, const char *s, size_t len) {
  c->argv[c->argc] = s;
  c->len[c->argc] = len;
  c->argc++;
}

static void cmd_push_u64(cmd_t *c, uint64_t v) {
  char *buf = c->nums[c->n_nums++];
  cmd_push(c, buf, resp_u64_to_dec(v, buf));
}

static void cmd_script(cmd_t *c, script_id_t id, size_t n_keys) {
  c->argc = 0;
  c->n_nums = 0;
  c->script = id;
  cmd_push(c, "EVALSHA", 7);
  cmd_push(c, script_get(id)->sha1, 40);
  cmd_push_u64(c, n_keys);
}

/* replay_mask: a release's masters that may hold its keys (else unused). */
static round_t *cmd_round(redlock_t *client, cmd_t *c, int64_t expect, round_kind_t kind,
                          uint64_t replay_mask, round_decided_fn cb, void *ctx) {
  return round_new(&client->rounds, &(round_params_t){.argc = c->argc,
                                                      .argv = c->argv,
                                                      .argv_len = c->len,
                                                      .script = script_get(c->script),
                                                      .expect_integer = expect,
                                                      .kind = kind,
                                                      .replay_mask = replay_mask,
                                                      .on_decided = cb,
                                                      .ctx = ctx});
}

/* The keys of a read-write lock's scripts: writer, readers (and intent). */
static void cmd_rw_keys(cmd_t *c, char *const *keys, const size_t *lens, int n) {
  for (int i = 0; i < n; i++)
    cmd_push(c, keys[i], lens[i]);
}

/* ---- acquisition ------------------------------------------------------------------- */

static uint32_t intent_ttl_ms(const redlock_t *client) {
  return PRIM_RW_INTENT_TTL_MS + 2 * client->opts.request_timeout_ms;
}

round_t *prim_acquire_round(op_acquire_t *op, round_decided_fn cb) {
  redlock_t *client = op->op.client;
  int fenced = op->fenced;
  cmd_t c;
  switch ((lock_kind_t)op->prim.kind) {
  case LOCK_KIND_SEM:
    if (op->prim.slots_left == 0) {
      /* A new pass, from a random slot: contenders spread over the slots
       * instead of all fighting for slot 0. */
      op->prim.next_slot = client_random(client) % op->prim.limit;
      op->prim.slots_left = op->prim.limit;
    }
    sem_set_slot(op, op->prim.next_slot);
    op->prim.next_slot = (op->prim.next_slot + 1) % op->prim.limit;
    op->prim.slots_left--;
    cmd_script(&c, SCRIPT_SEM_ACQUIRE, fenced ? 3 : 2);
    cmd_push(&c, op->keys[0], op->key_lens[0]);
    cmd_push(&c, op->keys[1], op->key_lens[1]);
    if (fenced)
      cmd_push(&c, op->fence_keys[0], op->fence_key_lens[0]);
    cmd_push(&c, op->value, RANDOM_VALUE_LEN);
    cmd_push_u64(&c, op->ttl_ms);
    cmd_push_u64(&c, op->prim.limit);
    break;
  case LOCK_KIND_RW_READ:
  case LOCK_KIND_RW_WRITE: {
    int write = op->prim.kind == LOCK_KIND_RW_WRITE;
    cmd_script(&c, write ? SCRIPT_RW_WRITE : SCRIPT_RW_READ, fenced ? 4 : 3);
    cmd_rw_keys(&c, op->keys, op->key_lens, 3);
    if (fenced)
      cmd_push(&c, op->fence_keys[0], op->fence_key_lens[0]);
    cmd_push(&c, op->value, RANDOM_VALUE_LEN);
    cmd_push_u64(&c, op->ttl_ms);
    if (write) {
      cmd_push(&c, op->prim.intent, RANDOM_VALUE_LEN);
      /* Only a writer that will try again announces its intent: a one-shot
       * attempt would block readers for nothing. */
      cmd_push_u64(&c, op->mode == LOCK_MODE_WAIT ? intent_ttl_ms(client) : 0);
    }
    break;
  }
  case LOCK_KIND_MUTEX:
  default:
    return NULL;
  }
  return cmd_round(client, &c, ROUND_EXPECT_CODE, ROUND_ACQUIRE, 0, cb, op);
}

int prim_acquire_verdict(op_acquire_t *op, const round_t *round) {
  redlock_t *client = op->op.client;
  for (unsigned i = 0; i < round->n_votes; i++) {
    const vote_t *vote = &round->votes[i];
    if (vote->state == VOTE_PENDING || vote->state == VOTE_YES)
      continue;
    if (op->prim.kind == LOCK_KIND_SEM && vote->integer < 0) {
      /* Clients disagree on the limit: a configuration error that waiting
       * cannot fix.  (With limits L1 < L2, at most L2 permits are held.) */
      client_log(client, REDLOCK_LOG_ERROR,
                 "semaphore %s: called with limit %u, but master %s holds limit %lld for it "
                 "(every client must pass the same limit; the old one is forgotten when its "
                 "permits are gone and their longest ttl has passed)",
                 op->prim.name, op->prim.limit, voters_label(&client->voters, i),
                 (long long)-vote->integer);
      return REDLOCK_EINVAL;
    }
    if (op->prim.kind == LOCK_KIND_RW_WRITE && vote->integer == PRIM_RW_READERS &&
        op->mode == LOCK_MODE_WAIT)
      op->prim.intent_set = 1;
  }
  return 0;
}

int prim_next_slot(op_acquire_t *op, int status) {
  if (op->prim.kind != LOCK_KIND_SEM)
    return 0;
  /* Only "held" says another slot may be free; a missing quorum or a slow
   * round would fail the same way on every slot. */
  if (status == REDLOCK_ELOCKED && op->prim.slots_left > 0 && !op->canceled &&
      (op->mode != LOCK_MODE_WAIT || client_now_ns(op->op.client) < op->wait_deadline_ns))
    return 1;
  op->prim.slots_left = 0;
  return 0;
}

round_t *prim_fence_round(op_acquire_t *op, const char *token, size_t token_len,
                          round_decided_fn cb) {
  cmd_t c;
  if (op->prim.kind == LOCK_KIND_SEM) {
    /* A slot is a plain lock key: the lock's own write-back. */
    cmd_script(&c, SCRIPT_FENCE_COMMIT, 2);
    cmd_push(&c, op->keys[0], op->key_lens[0]);
  } else {
    cmd_script(&c, SCRIPT_RW_FENCE_COMMIT, 3);
    cmd_rw_keys(&c, op->keys, op->key_lens, 2);
  }
  cmd_push(&c, op->fence_keys[0], op->fence_key_lens[0]);
  cmd_push(&c, op->value, RANDOM_VALUE_LEN);
  cmd_push(&c, token, token_len);
  return cmd_round(op->op.client, &c, 1, ROUND_PLAIN, 0, cb, op);
}

/* ---- extension and release ------------------------------------------------------ */

/* Both scripts re-install a record that is gone where their kind's
 * acquisition would admit it (ROUND_REINSTALLED); with fencing they raise the
 * counter to the hold's token there. */
round_t *prim_extend_round(redlock_t *client, const redlock_lock_t *lock, uint32_t ttl_ms,
                           round_decided_fn cb, void *ctx) {
  cmd_t c;
  int fenced = lock->fence_keys != NULL;
  if (lock->prim.kind == LOCK_KIND_SEM) {
    cmd_script(&c, SCRIPT_SEM_EXTEND, fenced ? 3 : 2);
    cmd_push(&c, lock->keys[0], lock->key_lens[0]);
    cmd_push(&c, lock->keys[1], lock->key_lens[1]);
    if (fenced)
      cmd_push(&c, lock->fence_keys[0], lock->fence_key_lens[0]);
    cmd_push(&c, lock->value, RANDOM_VALUE_LEN);
    cmd_push_u64(&c, ttl_ms);
    cmd_push_u64(&c, lock->prim.limit);
  } else {
    cmd_script(&c, SCRIPT_RW_EXTEND, fenced ? 3 : 2);
    cmd_rw_keys(&c, lock->keys, lock->key_lens, 2);
    if (fenced)
      cmd_push(&c, lock->fence_keys[0], lock->fence_key_lens[0]);
    cmd_push(&c, lock->value, RANDOM_VALUE_LEN);
    cmd_push_u64(&c, ttl_ms);
    cmd_push(&c, lock->prim.kind == LOCK_KIND_RW_WRITE ? "w" : "r", 1);
  }
  if (fenced)
    cmd_push_u64(&c, lock->fence);
  return cmd_round(client, &c, ROUND_EXPECT_CODE, ROUND_EXTEND, 0, cb, ctx);
}

/* The release script of a kind over keys/value; intent: a writer's intent
 * value to drop too, or NULL. */
static round_t *release_round(redlock_t *client, const prim_t *prim, char *const *keys,
                              const size_t *key_lens, const char *value, const char *intent,
                              int announce, uint64_t set_mask, round_decided_fn cb, void *ctx) {
  cmd_t c;
  if (prim->kind == LOCK_KIND_SEM) {
    cmd_script(&c, SCRIPT_SEM_RELEASE, 1);
    cmd_push(&c, keys[0], key_lens[0]);
    cmd_push(&c, value, RANDOM_VALUE_LEN);
  } else {
    cmd_script(&c, SCRIPT_RW_RELEASE, 3);
    cmd_rw_keys(&c, keys, key_lens, 3);
    cmd_push(&c, value, RANDOM_VALUE_LEN);
    if (intent != NULL)
      cmd_push(&c, intent, RANDOM_VALUE_LEN);
    else
      cmd_push(&c, "", 0);
  }
  cmd_push(&c, announce ? "1" : "0", 1);
  cmd_push(&c, prim->channel, prim->channel_len);
  return cmd_round(client, &c, 1, ROUND_RELEASE, set_mask, cb, ctx);
}

round_t *prim_release_round(redlock_t *client, const redlock_lock_t *lock, round_decided_fn cb,
                            void *ctx) {
  /* A writer may have left its intent on masters that refused it in the
   * round it won (readers were still there): the release drops it. */
  const char *intent = lock->prim.kind == LOCK_KIND_RW_WRITE ? lock->prim.intent : NULL;
  return release_round(client, &lock->prim, lock->keys, lock->key_lens, lock->value, intent, 1,
                       lock->set_mask, cb, ctx);
}

round_t *prim_attempt_release_round(op_acquire_t *op) {
  return release_round(op->op.client, &op->prim, op->keys, op->key_lens, op->value, NULL, 0,
                       op->set_mask, NULL, NULL);
}

void prim_op_end(op_acquire_t *op, int status) {
  if (op->prim.kind != LOCK_KIND_RW_WRITE || status == REDLOCK_OK || !op->prim.intent_set)
    return;
  /* A writer that stops waiting withdraws its intent at once, and tells the
   * readers it held back. */
  op->prim.intent_set = 0;
  round_t *round = release_round(op->op.client, &op->prim, op->keys, op->key_lens, op->value,
                                 op->prim.intent, 1, 0 /* not replayed: it expires */, NULL, NULL);
  if (round == NULL) {
    client_log(op->op.client, REDLOCK_LOG_WARN,
               "out of memory: the intent on %s stays until it expires", op->keys[0]);
    return;
  }
  round_send(round);
}

uint64_t prim_retry_delay_ms(const op_acquire_t *op, uint64_t delay_ms) {
  if (op->prim.kind == LOCK_KIND_RW_WRITE && op->prim.intent_set &&
      delay_ms > PRIM_RW_INTENT_REFRESH_MS)
    return PRIM_RW_INTENT_REFRESH_MS;
  return delay_ms;
}

int prim_wake_mode(const op_acquire_t *op) {
  switch ((lock_kind_t)op->prim.kind) {
  case LOCK_KIND_SEM:
    return NOTIFY_WAKE_EACH;
  case LOCK_KIND_RW_READ:
  case LOCK_KIND_RW_WRITE:
    return NOTIFY_WAKE_ALL;
  case LOCK_KIND_MUTEX:
  default:
    return NOTIFY_WAKE_ONE;
  }
}
