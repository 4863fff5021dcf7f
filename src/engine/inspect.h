/* inspect.h: redlock_inspect's op (inspect.c): one read-only round to every
 * master (inspect.lua) that waits for each answer, and the JSON view of what
 * they hold; and the parts redlock_revoke (revoke.c) reads a lock with. */
#ifndef REDLOCK_INSPECT_H
#define REDLOCK_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/op.h"
#include "engine/round.h"
#include "redlock.h"

/* The names inspect.lua reads for one resource of one kind, in one
 * allocation (block). */
#define INSPECT_KEYS_MAX 3
typedef struct inspect_keys {
  int kind; /* REDLOCK_INSPECT_* */
  size_t n;
  char *keys[INSPECT_KEYS_MAX];
  size_t lens[INSPECT_KEYS_MAX];
  char *block;
} inspect_keys_t;

/* The names of `name` (checked by the caller) for kind: ST_OK, ST_EINVAL
 * (an unknown kind) or ST_ENOMEM.  A lock's or an election's: the key, its
 * fence counter, its floor. */
status_t inspect_keys_make(const engine_t *engine, const char *name, int kind, inspect_keys_t *k);
void inspect_keys_free(inspect_keys_t *k);

/* The read of k on every master (a ROUND_READ: decided once each master
 * has answered or timed out; on_reply sees each answer). */
status_t inspect_round(engine_t *engine, const inspect_keys_t *k, round_decided_fn cb,
                       round_reply_fn on_reply, void *ctx, round_t **out);

/* 1 when reply has inspect.lua's shape; *counter: its fence counter, 0 when
 * none. */
int inspect_reply_ok(const redisReply *reply, uint64_t *counter);

/* Each master's answer to one inspect_round, what a view is made of (the
 * JSON view here, the leader view of observe.c). */
typedef struct inspect_replies {
  unsigned n;           /* masters */
  redisReply **replies; /* [n] a copy of its answer of inspect.lua's shape, or NULL */
  uint64_t *counters;   /* [n] its fence counter (0: none) */
  int nomem;            /* an answer could not be kept */
} inspect_replies_t;

/* For n masters, none answered yet: ST_OK or ST_ENOMEM. */
status_t inspect_replies_init(inspect_replies_t *r, unsigned n);
/* Keeps master index's answer, when it has inspect.lua's shape (a round's
 * on_reply). */
void inspect_replies_keep(inspect_replies_t *r, unsigned index, const redisReply *reply);
/* Forgets every answer (before the next read). */
void inspect_replies_clear(inspect_replies_t *r);
void inspect_replies_free(inspect_replies_t *r);

/* What a quorum of the answers agrees on: the one rule that says whether
 * a resource is held (a hold counts when a quorum stores the same tag and
 * value). */
typedef struct inspect_agreed {
  unsigned answered;       /* masters that answered */
  unsigned count;          /* holds a quorum agrees on */
  const redisReply *value; /* the last of them (valid while the answers are), or NULL */
  int64_t lo, hi;          /* ttl range over the masters that store them, -1: none */
  uint64_t fence;          /* the least counter (but 0) of the masters that store `value` */
  uint64_t fence_hi;       /* their largest */
} inspect_agreed_t;
void inspect_agree(const inspect_replies_t *r, inspect_agreed_t *a);

/* The owner label in a value written by a client with one (32 lowercase
 * hex digits, '~', the label): its start and *owner_len, or NULL (another
 * client's value, or none). */
const char *inspect_value_owner(const char *v, size_t len, size_t *owner_len);

/* redlock_inspect's op: the view is written into buf (size bytes, cut to
 * fit, NUL-terminated when size > 0) and its whole length into *len_out
 * before cb(status, arg) runs on the loop.  ST_OK or ST_ENOMEM / ST_EINVAL
 * (nothing queued). */
status_t inspect_op_new(op_t **out, engine_t *engine, const char *name, int kind, char *buf,
                        size_t size, size_t *len_out, redlock_done_cb cb, void *arg);

/* The same op with another view: view_fn(answers, view) writes it on the
 * loop before cb(ST_OK, arg) runs (ST_ENOMEM when an answer could not be
 * kept).  ST_OK or ST_ENOMEM / ST_EINVAL (nothing queued). */
typedef void (*inspect_view_fn)(const inspect_replies_t *r, void *view);
status_t inspect_view_op_new(op_t **out, engine_t *engine, const char *name, int kind,
                             inspect_view_fn view_fn, void *view, redlock_done_cb cb, void *arg);

#endif
