/* prims.h: what the kinds of lock handle share (kind.h: their tables): the
 * per-kind state of an acquisition and of a held lock (prim_t), the key
 * names and script reason codes of the coordination primitives (counting
 * semaphore permits, read-write lock holds: kind_sem.c, kind_rw.c), and the
 * helpers their files build keys and commands with (prims.c).
 * docs/algorithm.md §14 describes the primitives' design, docs/safety.md
 * §11 proves it.
 *
 * Semaphore "name" with limit L: L slots, each an ordinary Redlock mutex
 * (tagged(key prefix + name) + ":sem:" + i, below).  A permit is one slot won by a quorum,
 * so at most L permits are valid at once wherever the masters' votes go.
 *
 * Read-write lock "name", per master: a writer key, a sorted set of readers
 * (score = expiry in the master's milliseconds) and a writer-intent key. */
#ifndef REDLOCK_PRIMS_H
#define REDLOCK_PRIMS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kind.h"
#include "engine/round.h"
#include "proto/scripts.h"
#include "util/names.h" /* FENCE_KEY_PREFIX, NOTIFY_CHANNEL_PREFIX */
#include "util/pool.h"
#include "util/random.h"

struct op_acquire;
struct engine;
typedef struct engine engine_t;
struct redlock_lock;

/* ---- key names: the one place they are spelled ---------------------------------
 * Every name of primitive "name" is built from K = key prefix + name with
 * keyname.h, so that all of them hash to K's cluster slot: tagged(K) is K
 * when K has a hash tag, else "{" + K + "}".  stem = tagged(K) + tag.
 * Semaphore: slot i = stem + ":" + i (decimal), limit = stem + ":limit".
 * Read-write lock: stem + ":write", ":read", ":intent".  Release channel of
 * either: NOTIFY_CHANNEL_PREFIX + stem.  Fence counters: FENCE_KEY_PREFIX +
 * the lock key (a permit: its slot; a read-write lock: its writer key,
 * shared by readers and writers), which carries K's tag already. */
#define PRIM_SEM_TAG ":sem"
#define PRIM_SEM_SLOT_SEP ":"
#define PRIM_SEM_LIMIT_SUFFIX ":limit"
#define PRIM_RW_TAG ":rw"
#define PRIM_RW_WRITE_SUFFIX ":write"
#define PRIM_RW_READ_SUFFIX ":read"
#define PRIM_RW_INTENT_SUFFIX ":intent"

/* ---- script reason codes (refusals; also written in src/lua/<script>.lua) ------ */
#define PRIM_HELD 0          /* every acquire script: held by a writer / the slot */
#define PRIM_RW_READERS (-1) /* rw_write.lua: unexpired readers (intent set) */
#define PRIM_RW_INTENT (-1)  /* rw_read.lua: a writer waits */
/* sem_acquire.lua: -L, the limit L another client gave for the name. */

/* A waiting writer's intent lease: long enough to outlive one retry and a
 * slow round, short enough that a writer that died while waiting blocks new
 * readers only briefly.  Its lease is PRIM_RW_INTENT_TTL_MS plus two request
 * timeouts; the waiting writer refreshes it (with an attempt) at least every
 * PRIM_RW_INTENT_REFRESH_MS. */
#define PRIM_RW_INTENT_TTL_MS 2000u
#define PRIM_RW_INTENT_REFRESH_MS (PRIM_RW_INTENT_TTL_MS / 4)

/* Per-kind state of an acquisition (op) and of a held lock (copied at the
 * grant).  Pointers point into the op's / lock's key block.  Written by the
 * kind's file (kind_*.c) on the op's thread as kind.h says, read by lock.c. */
typedef struct prim {
  const lock_kind_ops_t *ops; /* const: its kind (acquire_op_new or prim_op_init) */
  uint8_t intent_set;         /* RW_WRITE op: our intent may be on some master */
  uint32_t limit;             /* SEM */
  uint32_t next_slot;         /* SEM op: the slot the next attempt tries */
  uint32_t slots_left;        /* SEM op: slots this pass has not tried (0: a new pass) */
  char *slot_digits;          /* SEM: where the slot number goes in keys[0] */
  char *fence_digits;         /* SEM, fencing: where it goes in the fence key */
  char *resource_digits;      /* SEM: where it goes in the resource ("NAME:sem:3") */
  const char *channel;        /* release channel waiters subscribe to (NUL-terminated) */
  size_t channel_len;
  char **channels;                   /* MUTEX: each key's release channel (its key block) */
  size_t *channel_lens;              /* MUTEX */
  const char *name;                  /* as the caller gave it */
  const char *resource;              /* SEM: name + ":sem:" + slot; RW: the name (for
                                      * redlock_lock_resource; NULL: the first key past the prefix) */
  char intent[RANDOM_VALUE_LEN + 1]; /* RW_WRITE: the call's intent value */
} prim_t;

/* ---- calls.c ---------------------------------------------------------------------- */
/* Sets the op's kind and fills op->keys (and, when op->fenced,
 * op->fence_keys) and op->prim for a primitive of `kind` named `name`
 * (already checked).  ST_OK or ST_ENOMEM. */
status_t prim_op_init(struct op_acquire *op, const lock_kind_ops_t *kind, const char *name,
                      uint32_t limit);

/* ---- kind_sem.c, kind_rw.c: keys ------------------------------------------------ */
/* Appends s (len bytes) at *w and a NUL; returns where it starts. */
char *prim_put(char **w, const char *s, size_t len);
/* Builds "a" "b" "c" into *w (NUL-terminated); returns its start. */
char *prim_put3(char **w, const char *a, size_t a_len, const char *b, size_t b_len, const char *c,
                size_t c_len);
#define PRIM_LIT(s) (s), (sizeof(s) - 1)
/* One allocation, as a lock's (kind_mutex.c): key pointers, their lengths,
 * then the strings; *w: where the strings go.  ST_OK or ST_ENOMEM.
 * `strings` = bytes of every string, NULs included. */
status_t prim_key_block(callmem_t *mem, size_t n_keys, size_t strings, char ***keys, size_t **lens,
                        char **w);

/* ---- kind_sem.c, kind_rw.c: commands -------------------------------------------- */
#define PRIM_CMD_ARGV_MAX 12

/* EVALSHA <sha> <n_keys> keys... args..., built on the stack and formatted
 * once by round_new. */
typedef struct {
  const char *argv[PRIM_CMD_ARGV_MAX];
  size_t len[PRIM_CMD_ARGV_MAX];
  int argc;
  int n_nums;
  char nums[4][24];
  script_id_t script;
} prim_cmd_t;

static inline void prim_cmd_push(prim_cmd_t *c, const char *s, size_t len) {
  c->argv[c->argc] = s;
  c->len[c->argc] = len;
  c->argc++;
}
void prim_cmd_push_u64(prim_cmd_t *c, uint64_t v);
/* Starts EVALSHA of script `id` with n_keys keys. */
void prim_cmd_script(prim_cmd_t *c, script_id_t id, size_t n_keys);
/* The command's round, in *out: ST_OK, or ST_ENOMEM (*out NULL).
 * replay_mask: a release's masters that may hold its keys (else unused). */
status_t prim_cmd_round(engine_t *engine, prim_cmd_t *c, int64_t expect, round_kind_t kind,
                        uint64_t replay_mask, round_decided_fn cb, void *ctx, round_t **out);
/* Ends a release command (announce: PUBLISH on the prim's channel) and makes
 * its round, as prim_cmd_round. */
status_t prim_release_cmd_round(engine_t *engine, prim_cmd_t *c, const prim_t *prim, int announce,
                                uint64_t set_mask, round_decided_fn cb, void *ctx, round_t **out);

#endif
