/* inspect.c: redlock_inspect, the masters' view of one resource.  One
 * read-only round (inspect.lua) to every master, decided once each has
 * answered or timed out (ROUND_READ); each answer is kept (a copy of the
 * reply) and, at the decision, the view is written as JSON straight into
 * the caller's buffer (snprintf-style: the whole length is counted).
 *
 * A hold is a (tag, value) pair a master stores: a lock's or election's key
 * (tag ""), a semaphore's slot (tag: its number), a read-write lock's writer
 * ("w") or a reader ("r").  A hold counts as agreed when a quorum of
 * masters store the same pair.  Loop thread only, except the op's
 * construction (the caller's thread). */
#include "engine/inspect.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/prims.h"
#include "proto/direct.h"
#include "proto/keyname.h"
#include "proto/reply.h"
#include "util/alloc.h"
#include "util/quorum.h"
#include "util/random.h"
#include "util/strutil.h"
#include "util/why.h"

/* ---- keys -------------------------------------------------------------------------- */

status_t inspect_keys_make(const engine_t *engine, const char *name, int kind, inspect_keys_t *k) {
  static const char *const fence = FENCE_KEY_PREFIX;
  const size_t fence_len = sizeof FENCE_KEY_PREFIX - 1;
  *k = (inspect_keys_t){.kind = kind};
  const char *prefix = engine->opts->key_prefix;
  size_t prefix_len = engine->opts->key_prefix_len, name_len = strlen(name);
  size_t key_len = prefix_len + name_len;
  /* Room for K and for any of its names below: the longest prefix and
   * suffix plus its tag. */
  size_t room = fence_len + key_len + KEYNAME_TAG_LEN + sizeof PRIM_SEM_TAG PRIM_SEM_LIMIT_SUFFIX +
                sizeof DIRECT_FLOOR_SUFFIX + sizeof PRIM_RW_TAG PRIM_RW_WRITE_SUFFIX;
  char *block = rl_malloc((INSPECT_KEYS_MAX + 1) * room);
  if (block == NULL)
    return ST_ENOMEM;
  k->block = block;
  char *key = block + INSPECT_KEYS_MAX * room; /* K, scratch for the others */
  memcpy(key, prefix, prefix_len);
  memcpy(key + prefix_len, name, name_len + 1);
  for (size_t i = 0; i < INSPECT_KEYS_MAX; i++)
    k->keys[i] = block + i * room;
  switch (kind) {
  case REDLOCK_INSPECT_LOCK:
  case REDLOCK_INSPECT_ELECTION:
    k->n = 3;
    memcpy(k->keys[0], key, key_len + 1); /* the key itself, as the lock calls name it */
    k->lens[0] = key_len;
    k->lens[1] = keyname_build(k->keys[1], fence, fence_len, key, key_len, "", 0);
    k->lens[2] =
        keyname_build(k->keys[2], fence, fence_len, key, key_len, PRIM_LIT(DIRECT_FLOOR_SUFFIX));
    return ST_OK;
  case REDLOCK_INSPECT_SEMAPHORE:
    k->n = 2;
    k->lens[0] = keyname_build(k->keys[0], "", 0, key, key_len,
                               PRIM_LIT(PRIM_SEM_TAG PRIM_SEM_LIMIT_SUFFIX));
    k->lens[1] =
        keyname_build(k->keys[1], "", 0, key, key_len, PRIM_LIT(PRIM_SEM_TAG PRIM_SEM_SLOT_SEP));
    return ST_OK;
  case REDLOCK_INSPECT_RWLOCK:
    k->n = 3;
    k->lens[0] =
        keyname_build(k->keys[0], "", 0, key, key_len, PRIM_LIT(PRIM_RW_TAG PRIM_RW_WRITE_SUFFIX));
    k->lens[1] = keyname_build(k->keys[1], fence, fence_len, k->keys[0], k->lens[0], "", 0);
    k->lens[2] =
        keyname_build(k->keys[2], "", 0, key, key_len, PRIM_LIT(PRIM_RW_TAG PRIM_RW_READ_SUFFIX));
    return ST_OK;
  default:
    inspect_keys_free(k);
    return ST_EINVAL;
  }
}

void inspect_keys_free(inspect_keys_t *k) {
  rl_free(k->block);
  k->block = NULL;
}

status_t inspect_round(engine_t *engine, const inspect_keys_t *k, round_decided_fn cb,
                       round_reply_fn on_reply, void *ctx, round_t **out) {
  prim_cmd_t c;
  prim_cmd_script(&c, SCRIPT_INSPECT, k->n);
  for (size_t i = 0; i < k->n; i++)
    prim_cmd_push(&c, k->keys[i], k->lens[i]);
  static const char *const modes[] = {[REDLOCK_INSPECT_LOCK] = "l",
                                      [REDLOCK_INSPECT_SEMAPHORE] = "s",
                                      [REDLOCK_INSPECT_RWLOCK] = "r",
                                      [REDLOCK_INSPECT_ELECTION] = "l"};
  prim_cmd_push(&c, modes[k->kind], 1);
  if (k->kind == REDLOCK_INSPECT_SEMAPHORE)
    prim_cmd_push(&c, PRIM_LIT(FENCE_KEY_PREFIX));
  return round_new(engine->rounds,
                   &(round_params_t){.argc = c.argc,
                                     .argv = c.argv,
                                     .argv_len = c.len,
                                     .script = script_get(SCRIPT_INSPECT),
                                     .expect_integer = ROUND_EXPECT_ANY,
                                     .kind = ROUND_READ,
                                     .key_arg = SCRIPT_FIRST_KEY_ARG,
                                     .on_decided = cb,
                                     .on_reply = on_reply,
                                     .ctx = ctx},
                   out);
}

int inspect_reply_ok(const redisReply *r, uint64_t *counter) {
  *counter = 0;
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || (r->elements - 2) % 3 != 0)
    return 0;
  for (size_t i = 2; i < r->elements; i += 3)
    if (r->element[i]->type != REDIS_REPLY_STRING ||
        r->element[i + 1]->type != REDIS_REPLY_STRING ||
        r->element[i + 2]->type != REDIS_REPLY_INTEGER)
      return 0;
  const redisReply *c = r->element[0];
  if (c->type == REDIS_REPLY_STRING) {
    char digits[24];
    size_t n = c->len < sizeof digits - 1 ? c->len : sizeof digits - 1;
    memcpy(digits, c->str, n);
    digits[n] = '\0';
    *counter = strtoull(digits, NULL, 10);
  }
  return 1;
}

status_t inspect_replies_init(inspect_replies_t *r, unsigned n) {
  *r = (inspect_replies_t){.n = n};
  /* The replies, then the counters, in one block. */
  r->replies = rl_calloc(n, sizeof *r->replies + sizeof *r->counters);
  if (r->replies == NULL)
    return ST_ENOMEM;
  r->counters = (uint64_t *)(void *)(r->replies + n);
  return ST_OK;
}

void inspect_replies_keep(inspect_replies_t *r, unsigned index, const redisReply *reply) {
  uint64_t counter = 0;
  if (index >= r->n || r->replies[index] != NULL || !inspect_reply_ok(reply, &counter))
    return;
  r->replies[index] = reply_clone(reply);
  r->counters[index] = counter;
  r->nomem |= r->replies[index] == NULL;
}

void inspect_replies_clear(inspect_replies_t *r) {
  for (unsigned m = 0; r->replies != NULL && m < r->n; m++) {
    reply_clone_free(r->replies[m]);
    r->replies[m] = NULL;
    r->counters[m] = 0;
  }
  r->nomem = 0;
}

void inspect_replies_free(inspect_replies_t *r) {
  inspect_replies_clear(r);
  rl_free(r->replies);
  r->replies = NULL;
}

/* ---- the op ---------------------------------------------------------------------- */

typedef struct op_inspect {
  op_t op;
  inspect_keys_t keys; /* const: what inspect.lua reads */
  const char *name;    /* const: the caller's, valid while it waits */
  char *buf;           /* const: the caller's buffer, written on the loop at the decision */
  size_t size;         /* const */
  size_t *len_out;     /* const: the caller's, written on the loop at the decision */
  redlock_done_cb cb;  /* const */
  void *arg;
  inspect_view_fn
      view_fn;         /* const: another view than the JSON one (inspect_view_op_new), or NULL */
  void *view;          /* const: where view_fn writes it */
  inspect_replies_t r; /* loop: each master's answer */
} op_inspect_t;

static const op_ops_t inspect_op_ops;

/* ---- the view: JSON written into the caller's buffer ---------------------------- */

typedef struct {
  char *buf;
  size_t size;
  size_t len; /* the whole length, what fits or not */
} jw_t;

static void jw_put(jw_t *w, const char *s, size_t n) {
  str_measured_put(w->buf, w->size, &w->len, s, n);
}

static void jw_lit(jw_t *w, const char *s) { jw_put(w, s, strlen(s)); }

/* A JSON string: quotes, backslashes and every byte outside printable
 * ASCII escaped, so any value another client stored reads as valid JSON. */
static void jw_str(jw_t *w, const char *s, size_t n) {
  jw_put(w, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
      continue;
    jw_put(w, s + run, i - run);
    char esc[8];
    if (ch == '"' || ch == '\\')
      snprintf(esc, sizeof esc, "\\%c", ch);
    else
      snprintf(esc, sizeof esc, "\\u%04x", ch);
    jw_lit(w, esc);
    run = i + 1;
  }
  jw_put(w, s + run, n - run);
  jw_put(w, "\"", 1);
}

static void jw_i64(jw_t *w, int64_t v) {
  char num[24];
  jw_put(w, num, (size_t)snprintf(num, sizeof num, "%" PRId64, v));
}

const char *inspect_value_owner(const char *v, size_t len, size_t *owner_len) {
  if (len <= RANDOM_VALUE_LEN + 1 || v[RANDOM_VALUE_LEN] != OPTIONS_OWNER_SEP)
    return NULL;
  for (size_t i = 0; i < RANDOM_VALUE_LEN; i++)
    if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
      return NULL;
  *owner_len = len - RANDOM_VALUE_LEN - 1;
  return v + RANDOM_VALUE_LEN + 1;
}

static void jw_value_owner(jw_t *w, const redisReply *value) {
  jw_lit(w, "\"value\":");
  if (value == NULL) {
    jw_lit(w, "null,\"owner\":null");
    return;
  }
  jw_str(w, value->str, value->len);
  size_t owner_len = 0;
  const char *owner = inspect_value_owner(value->str, value->len, &owner_len);
  jw_lit(w, ",\"owner\":");
  if (owner != NULL)
    jw_str(w, owner, owner_len);
  else
    jw_lit(w, "null");
}

/* Hold j of master m's reply: its tag, value and ttl elements. */
#define HOLDS(r) (((r)->elements - 2) / 3)
#define TAG(r, j) ((r)->element[2 + 3 * (j)])
#define VALUE(r, j) ((r)->element[3 + 3 * (j)])
#define TTL(r, j) ((r)->element[4 + 3 * (j)]->integer)

static int same_str(const redisReply *a, const redisReply *b) {
  return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
}

/* Whether master r stores the hold (tag, value); *at: its index there. */
static int find_hold(const redisReply *r, const redisReply *tag, const redisReply *value,
                     size_t *at) {
  for (size_t j = 0; r != NULL && j < HOLDS(r); j++)
    if (same_str(TAG(r, j), tag) && same_str(VALUE(r, j), value)) {
      *at = j;
      return 1;
    }
  return 0;
}

/* How many masters store the hold. */
static unsigned hold_count(const inspect_replies_t *r, const redisReply *tag,
                           const redisReply *value) {
  unsigned count = 0;
  size_t at;
  for (unsigned m = 0; m < r->n; m++)
    count += (unsigned)find_hold(r->replies[m], tag, value, &at);
  return count;
}

/* The ttl range of a hold over the masters that store it, and the range of
 * their counters (fence: the least but 0; fence_hi: the largest). */
static void hold_ttls(const inspect_replies_t *r, const redisReply *tag, const redisReply *value,
                      int64_t *lo, int64_t *hi, uint64_t *fence, uint64_t *fence_hi) {
  for (unsigned m = 0; m < r->n; m++) {
    size_t j;
    if (!find_hold(r->replies[m], tag, value, &j))
      continue;
    int64_t ttl = (int64_t)TTL(r->replies[m], j);
    if (*lo < 0 || ttl < *lo)
      *lo = ttl;
    if (ttl > *hi)
      *hi = ttl;
    if (*fence == 0 || r->counters[m] < *fence)
      *fence = r->counters[m];
    if (r->counters[m] > *fence_hi)
      *fence_hi = r->counters[m];
  }
}

/* Calls fn for each agreed hold once (at the first master that stores it). */
typedef void (*hold_fn)(const inspect_replies_t *r, const redisReply *tag, const redisReply *value,
                        void *arg);
static void each_agreed(const inspect_replies_t *r, hold_fn fn, void *arg) {
  unsigned q = quorum_size(r->n);
  for (unsigned m = 0; m < r->n; m++) {
    const redisReply *rm = r->replies[m];
    if (rm == NULL)
      continue;
    for (size_t j = 0; j < HOLDS(rm); j++) {
      int seen = 0;
      size_t at;
      for (unsigned e = 0; e < m && !seen; e++)
        seen = find_hold(r->replies[e], TAG(rm, j), VALUE(rm, j), &at);
      if (!seen && hold_count(r, TAG(rm, j), VALUE(rm, j)) >= q)
        fn(r, TAG(rm, j), VALUE(rm, j), arg);
    }
  }
}

static void tally(const inspect_replies_t *r, const redisReply *tag, const redisReply *value,
                  void *arg) {
  inspect_agreed_t *a = arg;
  a->count++;
  a->value = value;
  a->fence = a->fence_hi = 0; /* the last hold's */
  hold_ttls(r, tag, value, &a->lo, &a->hi, &a->fence, &a->fence_hi);
}

void inspect_agree(const inspect_replies_t *r, inspect_agreed_t *a) {
  *a = (inspect_agreed_t){.lo = -1, .hi = -1};
  for (unsigned m = 0; m < r->n; m++)
    a->answered += r->replies[m] != NULL;
  each_agreed(r, tally, a);
}

typedef struct {
  jw_t *w;
  int first;
  int kind;
} holders_t;

static void holder(const inspect_replies_t *r, const redisReply *tag, const redisReply *value,
                   void *arg) {
  holders_t *h = arg;
  jw_lit(h->w, h->first ? "{" : ",{");
  h->first = 0;
  jw_value_owner(h->w, value);
  int64_t lo = -1, hi = -1;
  uint64_t fence = 0, fence_hi = 0;
  hold_ttls(r, tag, value, &lo, &hi, &fence, &fence_hi);
  jw_lit(h->w, ",\"ttl_ms_min\":");
  jw_i64(h->w, lo);
  jw_lit(h->w, ",\"ttl_ms_max\":");
  jw_i64(h->w, hi);
  if (h->kind == REDLOCK_INSPECT_SEMAPHORE) {
    jw_lit(h->w, ",\"slot\":");
    jw_put(h->w, tag->str, tag->len); /* digits (inspect.lua) */
  } else if (h->kind == REDLOCK_INSPECT_RWLOCK) {
    jw_lit(h->w,
           tag->len == 1 && tag->str[0] == 'w' ? ",\"mode\":\"write\"" : ",\"mode\":\"read\"");
  }
  jw_lit(h->w, "}");
}

/* Master m's state: why it did not answer, or what it stores. */
static const char *master_state(const op_inspect_t *op, const round_t *round, unsigned m) {
  const redisReply *r = op->r.replies[m];
  if (r == NULL)
    return round->votes[m].why == WHY_OK ? why_name(WHY_BADREPLY) : why_name(round->votes[m].why);
  if (HOLDS(r) == 0)
    return "free";
  unsigned q = quorum_size(op->r.n);
  for (size_t j = 0; j < HOLDS(r); j++)
    if (hold_count(&op->r, TAG(r, j), VALUE(r, j)) < q)
      return "other";
  return "holds";
}

static void render(op_inspect_t *op, const round_t *round, jw_t *w) {
  static const char *const kinds[] = {[REDLOCK_INSPECT_LOCK] = "lock",
                                      [REDLOCK_INSPECT_SEMAPHORE] = "semaphore",
                                      [REDLOCK_INSPECT_RWLOCK] = "rwlock",
                                      [REDLOCK_INSPECT_ELECTION] = "election"};
  unsigned q = quorum_size(op->r.n);
  inspect_agreed_t a;
  inspect_agree(&op->r, &a);
  int agreed = a.answered >= q, has_fence = 0;
  uint64_t fence = 0;
  for (unsigned m = 0; m < op->r.n; m++) {
    const redisReply *r = op->r.replies[m];
    if (r == NULL)
      continue;
    if (op->r.counters[m] > 0)
      has_fence = 1;
    if (op->r.counters[m] > fence)
      fence = op->r.counters[m];
    if (strcmp(master_state(op, round, m), "other") == 0 || HOLDS(r) != a.count)
      agreed = 0;
  }
  jw_lit(w, "{\"name\":");
  jw_str(w, op->name, strlen(op->name));
  jw_lit(w, ",\"kind\":\"");
  jw_lit(w, kinds[op->keys.kind]);
  jw_lit(w, a.count > 0 ? "\",\"held\":true" : "\",\"held\":false");
  jw_lit(w, agreed ? ",\"agreed\":true," : ",\"agreed\":false,");
  jw_value_owner(w, a.count == 1 ? a.value : NULL);
  jw_lit(w, ",\"ttl_ms_min\":");
  if (a.count > 0)
    jw_i64(w, a.lo);
  else
    jw_lit(w, "null");
  jw_lit(w, ",\"ttl_ms_max\":");
  if (a.count > 0)
    jw_i64(w, a.hi);
  else
    jw_lit(w, "null");
  jw_lit(w, ",\"fence\":");
  if (has_fence)
    jw_i64(w, (int64_t)fence);
  else
    jw_lit(w, "null");
  jw_lit(w, ",\"quorum\":");
  jw_i64(w, q);
  jw_lit(w, ",\"count\":");
  jw_i64(w, a.count);
  jw_lit(w, ",\"holders\":[");
  holders_t h = {w, 1, op->keys.kind};
  each_agreed(&op->r, holder, &h);
  jw_lit(w, "],\"masters\":[");
  const round_env_t *env = op->op.engine->rounds;
  for (unsigned m = 0; m < op->r.n; m++) {
    const redisReply *r = op->r.replies[m];
    jw_lit(w, m == 0 ? "{\"addr\":" : ",{\"addr\":");
    const char *addr = env->transport->label(env->transport_arg, m);
    jw_str(w, addr, strlen(addr));
    jw_lit(w, ",\"state\":\"");
    jw_lit(w, master_state(op, round, m));
    jw_lit(w, "\",");
    int one = r != NULL && HOLDS(r) == 1;
    jw_value_owner(w, one ? VALUE(r, 0) : NULL);
    jw_lit(w, ",\"ttl_ms\":");
    if (one)
      jw_i64(w, (int64_t)TTL(r, 0));
    else
      jw_lit(w, "null");
    jw_lit(w, ",\"holds\":");
    if (r != NULL)
      jw_i64(w, (int64_t)HOLDS(r));
    else
      jw_lit(w, "null");
    jw_lit(w, "}");
  }
  jw_lit(w, "]}");
}

/* ---- its life -------------------------------------------------------------------- */

static void inspect_finish(op_inspect_t *op, status_t status) {
  if (list_linked(&op->op.link))
    list_remove(&op->op.link);
  engine_t *engine = op->op.engine;
  op->cb(status, op->arg);
  op_free(&op->op);
  engine->owner->op_ended(engine->owner_arg);
}

static void on_inspect_reply(void *ctx, unsigned index, const redisReply *reply) {
  op_inspect_t *op = ctx;
  inspect_replies_keep(&op->r, index, reply);
}

static void on_inspect_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  (void)outcome; /* the view says what a quorum agrees on */
  op_inspect_t *op = ctx;
  if (op->r.nomem) {
    inspect_finish(op, ST_ENOMEM);
    return;
  }
  if (op->view_fn != NULL) {
    op->view_fn(&op->r, op->view);
    inspect_finish(op, ST_OK);
    return;
  }
  jw_t w = {op->buf, op->size, 0};
  render(op, round, &w);
  if (op->size > 0)
    op->buf[w.len < op->size ? w.len : op->size - 1] = '\0';
  *op->len_out = w.len;
  inspect_finish(op, ST_OK);
}

static void inspect_dispatch(op_t *o) {
  op_inspect_t *op = OP_AS(op_inspect_t, o, &inspect_op_ops, op);
  list_insert_tail(&o->engine->ops_in_flight, &o->link);
  round_t *round = NULL;
  status_t st =
      inspect_round(o->engine, &op->keys, on_inspect_decided, on_inspect_reply, op, &round);
  if (st != ST_OK) {
    inspect_finish(op, st);
    return;
  }
  if (o->has_thread)
    round_for_caller(round, &o->thread);
  round_send(round);
}

static void inspect_fail(op_t *o, status_t status) {
  inspect_finish(OP_AS(op_inspect_t, o, &inspect_op_ops, op), status);
}

static void inspect_free(op_t *o) {
  op_inspect_t *op = OP_AS(op_inspect_t, o, &inspect_op_ops, op);
  inspect_replies_free(&op->r);
  inspect_keys_free(&op->keys);
  rl_free(op);
}

/* An acquisition's rules (acquires = 1): it waits for the masters' first
 * connection attempts, and a close fails it instead of running it. */
static const op_ops_t inspect_op_ops = {.name = "inspect",
                                        .acquires = 1,
                                        .dispatch = inspect_dispatch,
                                        .fail = inspect_fail,
                                        .free = inspect_free};

/* The op, its JSON view's fields or view_fn and view set by the caller. */
static status_t op_make(op_t **out, engine_t *engine, const char *name, int kind,
                        const op_inspect_t *init) {
  *out = NULL;
  op_inspect_t *op = rl_malloc(sizeof *op);
  if (op == NULL)
    return ST_ENOMEM;
  *op = *init;
  op->op = (op_t){.ops = &inspect_op_ops, .engine = engine};
  op->name = name;
  status_t st = inspect_keys_make(engine, name, kind, &op->keys);
  if (st != ST_OK) {
    rl_free(op);
    return st;
  }
  if (inspect_replies_init(&op->r, engine->rounds->n_masters) != ST_OK) {
    inspect_free(&op->op);
    return ST_ENOMEM;
  }
  *out = &op->op;
  return ST_OK;
}

status_t inspect_op_new(op_t **out, engine_t *engine, const char *name, int kind, char *buf,
                        size_t size, size_t *len_out, redlock_done_cb cb, void *arg) {
  return op_make(
      out, engine, name, kind,
      &(op_inspect_t){.buf = buf, .size = size, .len_out = len_out, .cb = cb, .arg = arg});
}

status_t inspect_view_op_new(op_t **out, engine_t *engine, const char *name, int kind,
                             inspect_view_fn view_fn, void *view, redlock_done_cb cb, void *arg) {
  return op_make(out, engine, name, kind,
                 &(op_inspect_t){.view_fn = view_fn, .view = view, .cb = cb, .arg = arg});
}
