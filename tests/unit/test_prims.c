/* test_prims.c: unit tests for the kinds kind_sem.c and kind_rw.c (semaphore
 * permits and read-write lock holds, through their tables, kind.h), prims.c
 * and their public entry points, with no Redis server anywhere.
 *  - argument checks of redlock_semaphore_acquire, redlock_rwlock_read /
 *    _write and their _async forms: NULL client / name / out / callback,
 *    empty or too long names, limit 0 or above REDLOCK_MAX_SEM_LIMIT, ttl 0
 *    or above max TTL are REDLOCK_EINVAL before anything is sent, and *out is
 *    NULL after a refusal (a client whose only master is a unix socket that
 *    does not exist);
 *  - the keys and commands: over a stand-in client (no loop, no thread), the
 *    op's keys, channel, fence key and the EVALSHA argv of every round of
 *    each kind, with and without fencing and a key prefix (decoded back from
 *    the formatted RESP bytes);
 *  - a semaphore pass: from a random slot, every slot exactly once, then a
 *    new pass; it goes on only after "held" (not after ENOQUORUM, a spent
 *    wait budget or a cancellation);
 *  - votes: a negative integer from any master is a limit disagreement
 *    (EINVAL, logged with both limits); a writer refused by readers while
 *    waiting has its intent noted, and retries within the refresh period. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit_support.h"

#include "engine/lock.h"
#include "engine/prims.h"
#include "proto/keyslot.h"
#include "proto/scripts.h"
#include "redlock.h"

#define BOGUS_LOCK ((redlock_lock_t *)(uintptr_t)0x1000) /* never dereferenced */

static void lock_cb(int status, redlock_lock_t *lock, void *arg) {
  (void)status;
  (void)lock;
  (*(int *)arg)++;
}

/* ---- argument checks ------------------------------------------------------------------- */

static redlock_t *nowhere_client(void) {
  redlock_options_t *opts = unit_nowhere_options();
  assert_int_equal(redlock_options_set_max_ttl(opts, 10000), 0);
  redlock_t *c = NULL;
  assert_int_equal(redlock_open(&c, opts), 0);
  redlock_options_free(opts);
  return c;
}

typedef int (*blocking_fn)(redlock_t *, const char *, uint32_t, uint32_t, redlock_lock_t **);

static int sem3(redlock_t *c, const char *name, uint32_t ttl, uint32_t wait_ms,
                redlock_lock_t **out) {
  return redlock_semaphore_acquire(c, name, 3, ttl, wait_ms, out);
}

static void check_refused(blocking_fn fn, redlock_t *c, const char *name, uint32_t ttl) {
  redlock_lock_t *out = BOGUS_LOCK;
  assert_int_equal(fn(c, name, ttl, 0, &out), REDLOCK_EINVAL);
  assert_null(out);
  out = BOGUS_LOCK;
  assert_int_equal(fn(c, name, ttl, 100, &out), REDLOCK_EINVAL);
  assert_null(out);
}

static void test_bad_arguments(void **state) {
  (void)state;
  char too_long[REDLOCK_MAX_RESOURCE_LEN + 2];
  memset(too_long, 'x', sizeof too_long - 1);
  too_long[sizeof too_long - 1] = '\0';
  blocking_fn fns[] = {sem3, redlock_rwlock_read, redlock_rwlock_write};

  /* No client at all. */
  for (size_t i = 0; i < 3; i++) {
    check_refused(fns[i], NULL, "r", 1000);
    assert_int_equal(fns[i](NULL, "r", 1000, 0, NULL), REDLOCK_EINVAL);
  }

  redlock_t *c = nowhere_client();
  for (size_t i = 0; i < 3; i++) {
    check_refused(fns[i], c, NULL, 1000);
    check_refused(fns[i], c, "", 1000);
    check_refused(fns[i], c, too_long, 1000);
    check_refused(fns[i], c, "r", 0);
    check_refused(fns[i], c, "r", 10001); /* above max TTL */
    assert_int_equal(fns[i](c, "r", 1000, 0, NULL), REDLOCK_EINVAL);
  }
  redlock_lock_t *out = BOGUS_LOCK;
  assert_int_equal(redlock_semaphore_acquire(c, "r", 0, 1000, 0, &out), REDLOCK_EINVAL);
  assert_null(out);
  out = BOGUS_LOCK;
  assert_int_equal(redlock_semaphore_acquire(c, "r", REDLOCK_MAX_SEM_LIMIT + 1, 1000, 0, &out),
                   REDLOCK_EINVAL);
  assert_null(out);
  out = BOGUS_LOCK;
  assert_int_equal(redlock_semaphore_acquire(c, "r", UINT32_MAX, 1000, 0, &out), REDLOCK_EINVAL);
  assert_null(out);

  /* The callback forms: the same checks, and a callback is required. */
  int calls = 0;
  assert_int_equal(redlock_semaphore_acquire_async(c, "r", 3, 1000, 0, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_rwlock_read_async(c, "r", 1000, 0, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_rwlock_write_async(c, "r", 1000, 0, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_semaphore_acquire_async(NULL, "r", 3, 1000, 0, lock_cb, &calls),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_semaphore_acquire_async(c, "r", 0, 1000, 0, lock_cb, &calls),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_semaphore_acquire_async(c, "", 3, 1000, 0, lock_cb, &calls),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_rwlock_read_async(c, too_long, 1000, 0, lock_cb, &calls),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_rwlock_write_async(c, "r", 0, 0, lock_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(redlock_rwlock_write_async(NULL, "r", 1000, 0, lock_cb, &calls), REDLOCK_EINVAL);
  assert_int_equal(calls, 0);

  /* A valid call against a master that is not there: no quorum, no crash,
   * no leak (the limit and every argument were fine). */
  out = BOGUS_LOCK;
  assert_int_equal(redlock_semaphore_acquire(c, "r", REDLOCK_MAX_SEM_LIMIT, 1000, 0, &out),
                   REDLOCK_ENOQUORUM);
  assert_null(out);
  assert_int_equal(redlock_rwlock_write(c, "r", 1000, 0, &out), REDLOCK_ENOQUORUM);
  assert_int_equal(redlock_rwlock_read(c, "r", 1000, 50, &out), REDLOCK_ENOQUORUM);
  redlock_close(c);
}

/* ---- a stand-in client: keys and commands ------------------------------------------------ */

#define N_NODES 3

/* The engine alone: what prims.c and the kinds read from it (options, log,
 * rounds, random numbers, memory); no client, no loop.  The transport only
 * names the masters (error messages). */
typedef struct {
  engine_t engine;
  redlock_options_t opts;
  log_sink_t log_sink;
  round_env_t rounds;
  jitter_rng_t rng;
  char labels[N_NODES][32];
  char log[1024];
} fake_t;

static void capture_log(int level, const char *msg, void *arg) {
  (void)level;
  fake_t *f = arg;
  snprintf(f->log, sizeof f->log, "%s", msg);
}

static const char *fake_label(void *arg, unsigned master) {
  fake_t *f = arg;
  return f->labels[master];
}
static const round_transport_t labels_only = {.label = fake_label};

/* The clock only: no timer runs here. */
static uint64_t clock_only_now(void *arg) {
  (void)arg;
  return clock_now_ns();
}
static const timebase_ops_t clock_only_ops = {.now_ns = clock_only_now};
static const timebase_t clock_only = {.ops = &clock_only_ops};

static fake_t *fake_new(const char *prefix, int fencing) {
  fake_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  options_set_defaults(&f->opts);
  f->opts.key_prefix = (char *)prefix;
  f->opts.key_prefix_len = strlen(prefix);
  f->opts.fencing = fencing;
  f->log_sink = (log_sink_t){.cb = capture_log, .arg = f, .level = REDLOCK_LOG_DEBUG};
  round_env_init(&f->rounds);
  f->rounds.n_masters = N_NODES;
  f->rounds.transport = &labels_only;
  f->rounds.transport_arg = f;
  for (int i = 0; i < N_NODES; i++)
    snprintf(f->labels[i], sizeof f->labels[i], "m%d:6379", i);
  jitter_rng_seed(&f->rng, 12345);
  f->engine.opts = &f->opts;
  f->engine.log = &f->log_sink;
  f->engine.rounds = &f->rounds;
  f->engine.tb = &clock_only;
  f->rounds.tb = &clock_only;
  f->engine.rng = &f->rng;
  assert_int_equal(engine_init(&f->engine), 0);
  return f;
}

/* A round made and never sent: round_new's block, from the env's pool
 * (none here: pool_free takes it back to malloc). */
static void round_discard(round_t *round) { pool_free(NULL, round); }

static void fake_free(fake_t *f) {
  engine_free(&f->engine);
  free(f);
}

static op_acquire_t *fake_op(fake_t *f, const lock_kind_ops_t *kind, const char *name,
                             uint32_t limit) {
  op_acquire_t *op = calloc(1, sizeof *op);
  assert_non_null(op);
  op->op.engine = &f->engine;
  op->mode = LOCK_MODE_WAIT;
  op->wait_deadline_ns = UINT64_MAX; /* waiting, with budget left */
  op->ttl_ms = 5000;
  op->fenced = f->opts.fencing;
  memset(op->value, 'v', RANDOM_VALUE_LEN);
  op->value_len = RANDOM_VALUE_LEN;
  assert_int_equal(prim_op_init(op, kind, name, limit), 0);
  return op;
}

static void fake_op_free(op_acquire_t *op) {
  callmem_release(&op->op.engine->callmem, op->keys);
  callmem_release(&op->op.engine->callmem, op->fence_keys);
  free(op);
}

/* The round builders of a kind's table (kind.h), each round (NULL when
 * it could not be made). */
static round_t *acquire_round_of(op_acquire_t *op) {
  round_t *round = NULL;
  (void)op->prim.ops->acquire_round(op, NULL, &round);
  return round;
}

static round_t *fence_round_of(op_acquire_t *op, const char *token, size_t len) {
  round_t *round = NULL;
  (void)op->prim.ops->fence_round(op, token, len, NULL, &round);
  return round;
}

static round_t *extend_round_of(engine_t *engine, const redlock_lock_t *lock, uint32_t ttl_ms) {
  round_t *round = NULL;
  (void)lock->prim.ops->extend_round(engine, lock, ttl_ms, NULL, NULL, &round);
  return round;
}

static round_t *release_round_of(engine_t *engine, const redlock_lock_t *lock) {
  round_t *round = NULL;
  (void)lock->prim.ops->release_round(engine, lock, NULL, NULL, &round);
  return round;
}

static round_t *attempt_release_round_of(op_acquire_t *op) {
  round_t *round = NULL;
  (void)op->prim.ops->attempt_release_round(op, &round);
  return round;
}

/* The optional hooks of a kind's table (kind.h), as lock.c calls them. */
static int kind_verdict(op_acquire_t *op, const round_t *round) {
  return op->prim.ops->acquire_verdict != NULL ? op->prim.ops->acquire_verdict(op, round) : 0;
}

static int kind_next_slot(op_acquire_t *op, int status) {
  return op->prim.ops->next_slot != NULL && op->prim.ops->next_slot(op, status);
}

static uint64_t kind_retry_delay_ms(op_acquire_t *op, uint64_t delay_ms) {
  return op->prim.ops->retry_delay_ms != NULL ? op->prim.ops->retry_delay_ms(op, delay_ms)
                                              : delay_ms;
}

/* The argv of a formatted command, each NUL-terminated (test strings only). */
typedef struct {
  int argc;
  char argv[16][256];
} decoded_t;

static decoded_t decode(const round_t *round) {
  decoded_t d;
  memset(&d, 0, sizeof d);
  const char *p = round->cmd;
  assert_int_equal(*p, '*');
  d.argc = atoi(p + 1);
  assert_true(d.argc > 0 && d.argc <= 16);
  p = strchr(p, '\n') + 1;
  for (int i = 0; i < d.argc; i++) {
    assert_int_equal(*p, '$');
    int len = atoi(p + 1);
    p = strchr(p, '\n') + 1;
    assert_true(len < 256);
    memcpy(d.argv[i], p, (size_t)len);
    p += len + 2;
  }
  assert_ptr_equal(p, round->cmd + round->cmd_len);
  /* Every script's keys hash to one cluster slot, the one its requests
   * carry (node_req_t.slot): a cluster voter routes them there, and no
   * script spans slots.  A channel in ARGV hashes there too. */
  if (strcmp(d.argv[0], "EVALSHA") == 0) {
    int n_keys = atoi(d.argv[2]);
    assert_true(n_keys >= 1);
    assert_int_not_equal(round->slot, -1);
    for (int i = 3; i < d.argc; i++) {
      int is_name = i < 3 + n_keys || strncmp(d.argv[i], REDLOCK_RELEASE_CHANNEL_PREFIX,
                                              strlen(REDLOCK_RELEASE_CHANNEL_PREFIX)) == 0;
      if (is_name)
        assert_int_equal(keyslot(d.argv[i], strlen(d.argv[i])), round->slot);
    }
  }
  return d;
}

static void assert_script(const decoded_t *d, script_id_t id, int n_keys) {
  assert_string_equal(d->argv[0], "EVALSHA");
  assert_string_equal(d->argv[1], script_get(id)->sha1);
  assert_int_equal(atoi(d->argv[2]), n_keys);
}

static void test_sem_keys_and_rounds(void **state) {
  (void)state;
  for (int fencing = 0; fencing <= 1; fencing++) {
    fake_t *f = fake_new("p:", fencing);
    op_acquire_t *op = fake_op(f, &kind_sem, "jobs", 12);
    assert_int_equal(op->n_keys, 2);
    assert_string_equal(op->keys[1], "{p:jobs}:sem:limit");
    assert_int_equal(op->key_lens[1], strlen("{p:jobs}:sem:limit"));
    assert_string_equal(op->prim.channel, REDLOCK_RELEASE_CHANNEL_PREFIX "{p:jobs}:sem");
    assert_int_equal(op->prim.channel_len, strlen(op->prim.channel));
    assert_string_equal(op->prim.name, "jobs");
    assert_string_equal(op->prim.resource, "jobs:sem:"); /* the slot's, once it has one */
    assert_int_equal(op->fence_keys != NULL, fencing);

    /* One pass: 12 rounds, every slot once, consecutive from a random one. */
    int seen[12] = {0};
    unsigned first = 0;
    for (int i = 0; i < 12; i++) {
      round_t *round = acquire_round_of(op);
      assert_non_null(round);
      assert_int_equal(round->expect_integer, ROUND_EXPECT_CODE);
      assert_int_equal(round->kind, ROUND_ACQUIRE);
      decoded_t d = decode(round);
      unsigned slot = (unsigned)atoi(op->keys[0] + strlen("{p:jobs}:sem:"));
      char want[64];
      snprintf(want, sizeof want, "{p:jobs}:sem:%u", slot);
      assert_string_equal(op->keys[0], want);
      assert_int_equal(op->key_lens[0], strlen(want));
      snprintf(want, sizeof want, "jobs:sem:%u", slot); /* what redlock_lock_resource says */
      assert_string_equal(op->prim.resource, want);
      snprintf(want, sizeof want, "{p:jobs}:sem:%u", slot);
      assert_int_equal(round->slot, keyslot("p:jobs", 6)); /* the slot a lock "jobs" has */
      if (i == 0)
        first = slot;
      assert_int_equal(slot, (first + (unsigned)i) % 12);
      seen[slot]++;
      assert_script(&d, SCRIPT_SEM_ACQUIRE, fencing ? 3 : 2);
      assert_string_equal(d.argv[3], want);
      assert_string_equal(d.argv[4], "{p:jobs}:sem:limit");
      int a = 5;
      if (fencing) {
        char fence[96];
        snprintf(fence, sizeof fence, "%s%s", FENCE_KEY_PREFIX, want);
        assert_string_equal(d.argv[a++], fence);
        assert_string_equal(op->fence_keys[0], fence);
        assert_int_equal(op->fence_key_lens[0], strlen(fence));
      }
      assert_int_equal(strlen(d.argv[a]), RANDOM_VALUE_LEN); /* value */
      assert_string_equal(d.argv[a + 1], "5000");            /* ttl */
      assert_string_equal(d.argv[a + 2], "12");              /* limit */
      assert_int_equal(d.argc, a + 3);
      round_discard(round);
      /* "held" goes on to the next slot while the pass has slots left. */
      assert_int_equal(kind_next_slot(op, REDLOCK_ELOCKED), i < 11);
    }
    for (int s = 0; s < 12; s++)
      assert_int_equal(seen[s], 1);
    assert_int_equal(op->prim.slots_left, 0);

    /* A new pass; no quorum ends it at once. */
    round_t *round = acquire_round_of(op);
    round_discard(round);
    assert_int_equal(op->prim.slots_left, 11);
    assert_int_equal(kind_next_slot(op, REDLOCK_ENOQUORUM), 0);
    assert_int_equal(op->prim.slots_left, 0);
    /* Nor does a spent wait budget or a cancellation go on. */
    round = acquire_round_of(op);
    round_discard(round);
    op->wait_deadline_ns = 1;
    assert_int_equal(kind_next_slot(op, REDLOCK_ELOCKED), 0);
    op->wait_deadline_ns = UINT64_MAX;
    round = acquire_round_of(op);
    round_discard(round);
    op->canceled = 1;
    assert_int_equal(kind_next_slot(op, REDLOCK_ELOCKED), 0);

    /* Fence write-back: the plain lock's script over the slot. */
    if (fencing) {
      round = fence_round_of(op, "777", 3);
      decoded_t d = decode(round);
      assert_script(&d, SCRIPT_FENCE_COMMIT, 2);
      assert_string_equal(d.argv[3], op->keys[0]);
      assert_string_equal(d.argv[4], op->fence_keys[0]);
      assert_string_equal(d.argv[6], "777");
      round_discard(round);
    }

    /* As a held permit: extend carries the limit, release the channel. */
    redlock_lock_t lock;
    memset(&lock, 0, sizeof lock);
    lock.keys = op->keys;
    lock.key_lens = op->key_lens;
    lock.n_keys = op->n_keys;
    memcpy(lock.value, op->value, sizeof lock.value);
    lock.value_len = op->value_len;
    lock.prim = op->prim;
    round = extend_round_of(&f->engine, &lock, 9000);
    decoded_t d = decode(round);
    assert_script(&d, SCRIPT_SEM_EXTEND, 2);
    assert_string_equal(d.argv[3], op->keys[0]);
    assert_string_equal(d.argv[4], "{p:jobs}:sem:limit");
    assert_string_equal(d.argv[6], "9000");
    assert_string_equal(d.argv[7], "12");
    assert_int_equal(d.argc, 8);
    /* yes: 1, or ROUND_REINSTALLED (which a quarantined master's does not count) */
    assert_int_equal(round->expect_integer, ROUND_EXPECT_CODE);
    assert_int_equal(round->kind, ROUND_EXTEND);
    round_discard(round);
    if (fencing) {
      /* A fenced permit's extension: the slot's counter and the token, for
       * a re-install to raise the counter. */
      lock.fence_keys = op->fence_keys;
      lock.fence_key_lens = op->fence_key_lens;
      lock.fence = 777;
      round = extend_round_of(&f->engine, &lock, 9000);
      d = decode(round);
      assert_script(&d, SCRIPT_SEM_EXTEND, 3);
      assert_string_equal(d.argv[5], op->fence_keys[0]);
      assert_string_equal(d.argv[7], "9000");
      assert_string_equal(d.argv[8], "12");
      assert_string_equal(d.argv[9], "777");
      assert_int_equal(d.argc, 10);
      round_discard(round);
      lock.fence_keys = NULL;
      lock.fence_key_lens = NULL;
    }
    round = release_round_of(&f->engine, &lock);
    d = decode(round);
    assert_script(&d, SCRIPT_SEM_RELEASE, 1);
    assert_string_equal(d.argv[3], op->keys[0]);
    assert_string_equal(d.argv[5], REDLOCK_RELEASE_CHANNEL_PREFIX "{p:jobs}:sem");
    assert_string_equal(d.argv[6], "1"); /* last: a cluster voter rewrites it (scripts.h) */
    round_discard(round);
    round = attempt_release_round_of(op);
    d = decode(round);
    assert_string_equal(d.argv[6], "0"); /* a failed attempt is not announced */
    round_discard(round);

    assert_int_equal(op->prim.ops->wake_mode, NOTIFY_WAKE_EACH);
    fake_op_free(op);
    fake_free(f);
  }
}

static void test_rw_keys_and_rounds(void **state) {
  (void)state;
  for (int fencing = 0; fencing <= 1; fencing++) {
    for (int write = 0; write <= 1; write++) {
      fake_t *f = fake_new("", fencing);
      op_acquire_t *op = fake_op(f, write ? &kind_rw_write : &kind_rw_read, "cfg", 0);
      assert_int_equal(op->n_keys, 3);
      assert_string_equal(op->keys[0], "{cfg}:rw:write");
      assert_string_equal(op->keys[1], "{cfg}:rw:read");
      assert_string_equal(op->keys[2], "{cfg}:rw:intent");
      for (int i = 0; i < 3; i++)
        assert_int_equal(op->key_lens[i], strlen(op->keys[i]));
      assert_string_equal(op->prim.channel, REDLOCK_RELEASE_CHANNEL_PREFIX "{cfg}:rw");
      assert_string_equal(op->prim.resource, "cfg");
      if (fencing)
        assert_string_equal(op->fence_keys[0], FENCE_KEY_PREFIX "{cfg}:rw:write");
      assert_int_equal(strlen(op->prim.intent), write ? RANDOM_VALUE_LEN : 0);
      assert_int_equal(op->prim.ops->wake_mode, NOTIFY_WAKE_ALL);

      round_t *round = acquire_round_of(op);
      decoded_t d = decode(round);
      assert_script(&d, write ? SCRIPT_RW_WRITE : SCRIPT_RW_READ, fencing ? 4 : 3);
      assert_string_equal(d.argv[3], "{cfg}:rw:write");
      assert_string_equal(d.argv[4], "{cfg}:rw:read");
      assert_string_equal(d.argv[5], "{cfg}:rw:intent");
      int a = fencing ? 7 : 6;
      assert_string_equal(d.argv[a + 1], "5000");
      if (write) {
        assert_string_equal(d.argv[a + 2], op->prim.intent);
        /* A waiting writer's intent lease: 2 s + two request timeouts. */
        char lease[16];
        snprintf(lease, sizeof lease, "%u", PRIM_RW_INTENT_TTL_MS + 2 * f->opts.request_timeout_ms);
        assert_string_equal(d.argv[a + 3], lease);
        assert_int_equal(d.argc, a + 4);
      } else {
        assert_int_equal(d.argc, a + 2);
      }
      round_discard(round);
      if (write) {
        /* A one-shot writer sets no intent. */
        op->mode = LOCK_MODE_TRY;
        round = acquire_round_of(op);
        d = decode(round);
        assert_string_equal(d.argv[d.argc - 1], "0");
        round_discard(round);
        op->mode = LOCK_MODE_WAIT;
      }
      assert_int_equal(kind_next_slot(op, REDLOCK_ELOCKED), 0);

      redlock_lock_t lock;
      memset(&lock, 0, sizeof lock);
      lock.keys = op->keys;
      lock.key_lens = op->key_lens;
      memcpy(lock.value, op->value, sizeof lock.value);
      lock.value_len = op->value_len;
      lock.value_len = op->value_len;
      lock.prim = op->prim;
      round = release_round_of(&f->engine, &lock);
      d = decode(round);
      assert_script(&d, SCRIPT_RW_RELEASE, 3);
      /* A write hold's release also drops its intent. */
      assert_string_equal(d.argv[7], write ? op->prim.intent : "");
      assert_string_equal(d.argv[8], REDLOCK_RELEASE_CHANNEL_PREFIX "{cfg}:rw");
      assert_string_equal(d.argv[9], "1");
      round_discard(round);
      round = extend_round_of(&f->engine, &lock, 700);
      d = decode(round);
      assert_script(&d, SCRIPT_RW_EXTEND, 2);
      assert_string_equal(d.argv[6], "700");
      assert_string_equal(d.argv[7], write ? "w" : "r"); /* what a re-install must check */
      assert_int_equal(d.argc, 8);
      assert_int_equal(round->expect_integer, ROUND_EXPECT_CODE);
      assert_int_equal(round->kind, ROUND_EXTEND);
      round_discard(round);
      if (fencing) {
        lock.fence_keys = op->fence_keys;
        lock.fence_key_lens = op->fence_key_lens;
        lock.fence = 42;
        round = extend_round_of(&f->engine, &lock, 700);
        d = decode(round);
        assert_script(&d, SCRIPT_RW_EXTEND, 3);
        assert_string_equal(d.argv[5], FENCE_KEY_PREFIX "{cfg}:rw:write");
        assert_string_equal(d.argv[7], "700");
        assert_string_equal(d.argv[8], write ? "w" : "r");
        assert_string_equal(d.argv[9], "42");
        assert_int_equal(d.argc, 10);
        round_discard(round);
      }
      if (fencing) {
        round = fence_round_of(op, "42", 2);
        d = decode(round);
        assert_script(&d, SCRIPT_RW_FENCE_COMMIT, 3);
        assert_string_equal(d.argv[5], FENCE_KEY_PREFIX "{cfg}:rw:write");
        assert_string_equal(d.argv[7], "42");
        round_discard(round);
      }
      fake_op_free(op);
      fake_free(f);
    }
  }
}

/* ---- votes ----------------------------------------------------------------------------- */

static round_t *voted_round(fake_t *f, op_acquire_t *op, const int64_t *integers,
                            const vote_state_t *states) {
  round_t *round = acquire_round_of(op);
  assert_non_null(round);
  (void)f;
  for (unsigned i = 0; i < round->n_votes; i++) {
    round->votes[i].state = (uint8_t)states[i];
    round->votes[i].integer = integers[i];
  }
  return round;
}

static void test_votes(void **state) {
  (void)state;
  fake_t *f = fake_new("", 0);
  op_acquire_t *op = fake_op(f, &kind_sem, "s", 2);
  /* Held here, yes there: nothing to say. */
  int64_t ints[N_NODES] = {0, 1, 1};
  vote_state_t states[N_NODES] = {VOTE_NO, VOTE_YES, VOTE_YES};
  round_t *round = voted_round(f, op, ints, states);
  assert_int_equal(kind_verdict(op, round), 0);
  round_discard(round);
  /* One master holds limit 5 for it: EINVAL, whatever the others said. */
  ints[2] = -5;
  states[2] = VOTE_NO;
  round = voted_round(f, op, ints, states);
  f->log[0] = '\0';
  assert_int_equal(kind_verdict(op, round), REDLOCK_EINVAL);
  assert_non_null(strstr(f->log, "limit 2"));
  assert_non_null(strstr(f->log, "limit 5"));
  assert_non_null(strstr(f->log, "m2:6379"));
  round_discard(round);
  /* A quarantined master's word counts too (its answer was still read). */
  states[2] = VOTE_FAILED;
  round = voted_round(f, op, ints, states);
  assert_int_equal(kind_verdict(op, round), REDLOCK_EINVAL);
  round_discard(round);
  /* A vote still pending says nothing. */
  states[2] = VOTE_PENDING;
  ints[2] = 0;
  round = voted_round(f, op, ints, states);
  assert_int_equal(kind_verdict(op, round), 0);
  round_discard(round);
  fake_op_free(op);

  /* A writer refused by readers while it waits: its intent is out there,
   * its retries refresh it, and its end withdraws it. */
  op = fake_op(f, &kind_rw_write, "w", 0);
  int64_t w_ints[N_NODES] = {PRIM_RW_READERS, 0, 1};
  vote_state_t w_states[N_NODES] = {VOTE_NO, VOTE_NO, VOTE_YES};
  assert_int_equal(kind_retry_delay_ms(op, 5000), 5000);
  round = voted_round(f, op, w_ints, w_states);
  assert_int_equal(kind_verdict(op, round), 0);
  round_discard(round);
  assert_int_equal(op->prim.intent_set, 1);
  assert_int_equal(kind_retry_delay_ms(op, 5000), PRIM_RW_INTENT_REFRESH_MS);
  assert_int_equal(kind_retry_delay_ms(op, 10), 10);
  fake_op_free(op);
  /* ... but not a one-shot writer (it set none). */
  op = fake_op(f, &kind_rw_write, "w", 0);
  op->mode = LOCK_MODE_TRY;
  round = voted_round(f, op, w_ints, w_states);
  assert_int_equal(kind_verdict(op, round), 0);
  round_discard(round);
  assert_int_equal(op->prim.intent_set, 0);
  fake_op_free(op);
  /* A reader's -1 (a writer waits) is just a refusal. */
  op = fake_op(f, &kind_rw_read, "w", 0);
  round = voted_round(f, op, w_ints, w_states);
  assert_int_equal(kind_verdict(op, round), 0);
  round_discard(round);
  fake_op_free(op);
  fake_free(f);
}

UNIT_MAIN(cmocka_unit_test(test_bad_arguments), cmocka_unit_test(test_sem_keys_and_rounds),
          cmocka_unit_test(test_rw_keys_and_rounds), cmocka_unit_test(test_votes))
