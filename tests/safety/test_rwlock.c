/* test_rwlock.c: the read-write lock (redlock_rwlock_read / _write,
 * src/engine/prims.c) against real redis-server processes.
 *  - readers share: three read holds (two clients) at once, one member each
 *    in the readers set on every master; a writer is refused (ELOCKED with
 *    wait 0, which leaves no intent; ETIMEDOUT after a wait, whose intent is
 *    then withdrawn at once, long before its lease would end); unlocks empty
 *    the set.
 *  - a writer excludes readers and writers; its unlock frees the name.
 *  - a waiting writer blocks new readers (its intent is on every master, a
 *    new reader is refused), gets the lock soon after the last reader
 *    leaves, and its intent is gone; then a reader waiting on the writer
 *    (fallback retry 10 s) is woken by the writer's release within 2 s.
 *  - a stream of overlapping readers (two threads) does not starve a writer.
 *  - a writer that dies while waiting (a child process, SIGKILLed) leaves its
 *    intent, which refuses readers only until its short lease ends.
 *  - extend / watch / unlock of both kinds: extension raises the readers
 *    set's and the writer key's TTL, watched holds outlive 4 ttls, unlock of
 *    an expired hold says ELOST and extend refuses it; close releases.
 *  - fencing: a write hold's token is above every earlier hold's; a read
 *    hold's is at least the last write hold's (the write epoch).
 *  - restart quarantine: a read hold kept on exactly {0,1,2} of 5 masters;
 *    master 0 restarts empty.  A writer with quarantine off is then granted
 *    beside the valid reader (the danger is real); a writer with quarantine
 *    on is not.
 *  - chaos (N = 5): 3 clients take random read and write holds while pairs of
 *    masters are paused; no write interval overlaps any other hold.
 * Waits are events or rh_wait_until deadlines; the bounds are generous. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fixture.h"

#define CHANNEL_PREFIX REDLOCK_RELEASE_CHANNEL_PREFIX
#define FALLBACK_MS 10000u
#define WAKE_BOUND_MS 2000u
/* The intent's lease in these tests: PRIM_RW_INTENT_TTL_MS (2 s) + 2 request
 * timeouts (FX_SF_REQUEST_MS). */
#define INTENT_LEASE_MS (2000u + 2 * FX_SF_REQUEST_MS)

typedef struct {
  char write[160], read[160], intent[160], channel[192];
} rw_keys_t;

static rw_keys_t keys_of(const char *name) {
  rw_keys_t k;
  fx_derived_name(k.write, sizeof k.write, "", name, ":rw:write");
  fx_derived_name(k.read, sizeof k.read, "", name, ":rw:read");
  fx_derived_name(k.intent, sizeof k.intent, "", name, ":rw:intent");
  fx_derived_name(k.channel, sizeof k.channel, CHANNEL_PREFIX, name, ":rw");
  return k;
}

static long zscore_present(rh_server_t *s, const char *key, const char *member) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "ZSCORE %s %s", key, member), 0);
  return strcmp(buf, "(nil)") != 0;
}

/* Masters (of the first n) on which the hold is recorded. */
static size_t hold_on(fx_t *fx, size_t n, const char *name, redlock_lock_t *h, int write) {
  rw_keys_t k = keys_of(name);
  size_t on = 0;
  for (size_t i = 0; i < n; i++)
    on += write ? (size_t)fx_key_is(fx->servers[i], k.write, redlock_lock_value(h))
                : (size_t)zscore_present(fx->servers[i], k.read, redlock_lock_value(h));
  return on;
}

static void assert_hold(fx_t *fx, const char *name, redlock_lock_t *h, int write) {
  if (hold_on(fx, fx->n, name, h, write) < fx->n / 2 + 1)
    fail_msg("%s hold on %s is not on a quorum", write ? "write" : "read", name);
}

static void assert_zcard_everywhere(fx_t *fx, const char *key, long want) {
  if (!fx_wait_every_master(fx, fx_zcard, key, want, 5000))
    fail_msg("%s does not have %ld members on every master", key, want);
}

/* ---- readers share, writers wait ------------------------------------------------------ */

static void test_rw_readers_share(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:rw:share";
  rw_keys_t k = keys_of(name);
  redlock_t *c0 = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *c1 = fx_open(fx, 1, fx_options(fx, 1, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *r[4] = {NULL}, *w = NULL;

  assert_int_equal(redlock_rwlock_read(c0, name, 10000, 0, &r[0]), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_read(c0, name, 10000, 0, &r[1]), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_read(c1, name, 10000, 1000, &r[2]), REDLOCK_OK);
  for (int i = 0; i < 3; i++) {
    assert_string_equal(redlock_lock_resource(r[i]), name);
    assert_true(redlock_lock_validity_ms(r[i]) > 0);
    assert_hold(fx, name, r[i], 0);
  }
  assert_zcard_everywhere(fx, k.read, 3);

  /* A one-shot writer is refused and leaves no intent behind. */
  assert_int_equal(redlock_rwlock_write(c1, name, 10000, 0, &w), REDLOCK_ELOCKED);
  assert_null(w);
  assert_int_equal(fx_exists_on(fx, fx->n, k.intent), 0);
  /* A waiting one times out, and withdraws its intent at once. */
  assert_int_equal(redlock_rwlock_write(c1, name, 10000, 400, &w), REDLOCK_ETIMEDOUT);
  uint64_t t_gave_up = rh_now_ms();
  fx_assert_absent_everywhere(fx, k.intent, 5000);
  if (rh_now_ms() - t_gave_up >= INTENT_LEASE_MS - 500)
    fail_msg("the intent went only when its lease ended: not withdrawn");
  /* So readers are welcome again. */
  assert_int_equal(redlock_rwlock_read(c1, name, 10000, 0, &r[3]), REDLOCK_OK);
  for (int i = 0; i < 4; i++)
    assert_int_equal(redlock_unlock(i < 2 ? c0 : c1, r[i]), REDLOCK_OK);
  fx_assert_absent_everywhere(fx, k.read, 3000);
}

static void test_rw_writer_excludes(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:rw:excl";
  rw_keys_t k = keys_of(name);
  redlock_t *c0 = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *c1 = fx_open(fx, 1, fx_options(fx, 1, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *w = NULL, *x = NULL;

  assert_int_equal(redlock_rwlock_write(c0, name, 10000, 0, &w), REDLOCK_OK);
  assert_string_equal(redlock_lock_resource(w), name);
  assert_int_equal(redlock_lock_fence(w), 0);
  assert_hold(fx, name, w, 1);
  assert_int_equal(redlock_rwlock_read(c1, name, 10000, 0, &x), REDLOCK_ELOCKED);
  assert_int_equal(redlock_rwlock_write(c1, name, 10000, 0, &x), REDLOCK_ELOCKED);
  assert_int_equal(redlock_rwlock_write(c0, name, 10000, 0, &x), REDLOCK_ELOCKED);
  assert_int_equal(redlock_rwlock_read(c1, name, 10000, 300, &x), REDLOCK_ETIMEDOUT);
  assert_null(x);
  /* A plain lock of the same name is another thing altogether. */
  assert_int_equal(redlock_trylock(c1, name, 1000, &x), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c1, x), REDLOCK_OK);

  assert_int_equal(redlock_unlock(c0, w), REDLOCK_OK);
  fx_assert_absent_everywhere(fx, k.write, 3000);
  assert_int_equal(redlock_rwlock_read(c1, name, 10000, 0, &x), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c1, x), REDLOCK_OK);
}

/* ---- a waiting writer is not starved ---------------------------------------------------- */

static void test_rw_waiting_writer_blocks_readers(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:rw:intent";
  rw_keys_t k = keys_of(name);
  redlock_t *c0 = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *c1 = fx_open(fx, 1, fx_options_retry(fx, 1, REDLOCK_LOG_WARN, -1, FALLBACK_MS, 0));
  redlock_t *c2 = fx_open(fx, 2, fx_options_retry(fx, 2, REDLOCK_LOG_WARN, -1, FALLBACK_MS, 0));
  redlock_lock_t *r = NULL, *x = NULL;

  assert_int_equal(redlock_rwlock_read(c0, name, 20000, 0, &r), REDLOCK_OK);
  fx_call_t writer = {.fn = fx_call_rwlock,
                      .client = c1,
                      .name = name,
                      .write = 1,
                      .ttl_ms = 20000,
                      .wait_ms = 15000};
  fx_call_start(&writer);
  /* The writer waits: its intent is on every master, and new readers are
   * refused while it waits. */
  int intent_everywhere = fx_wait_exists_on(fx, fx->n, k.intent, fx->n, 5000);
  int reader_rc = redlock_rwlock_read(c2, name, 10000, 0, &x);
  char votes[512];
  redlock_last_votes(c2, votes, sizeof votes);
  int early = fx_event_wait(&writer.done, 0);
  uint64_t t_unlock = rh_now_ms();
  int unlock_rc = redlock_unlock(c0, r);
  int done = fx_call_join(&writer, 10000);

  assert_true(intent_everywhere);
  assert_int_equal(reader_rc, REDLOCK_ELOCKED);
  if (strstr(votes, "=refused") == NULL)
    fail_msg("last_votes of the refused reader: %s", votes);
  assert_false(early);
  assert_int_equal(unlock_rc, REDLOCK_OK);
  assert_true(done);
  assert_int_equal(writer.rc, REDLOCK_OK);
  /* The waiting writer retries at least every 500 ms (refreshing its
   * intent), and is woken by the reader's release. */
  assert_true(writer.t_done - t_unlock < WAKE_BOUND_MS);
  assert_hold(fx, name, writer.lock, 1);
  fx_assert_absent_everywhere(fx, k.intent, 3000); /* dropped by the grant */

  /* A reader waiting on the writer is woken by its release. */
  fx_call_t reader = {.fn = fx_call_rwlock,
                      .client = c2,
                      .name = name,
                      .write = 0,
                      .ttl_ms = 10000,
                      .wait_ms = 15000};
  fx_call_start(&reader);
  int subscribed = fx_wait_subscribed(fx, fx->n, k.channel, 1, 5000);
  early = fx_event_wait(&reader.done, 0);
  t_unlock = rh_now_ms();
  unlock_rc = redlock_unlock(c1, writer.lock);
  done = fx_call_join(&reader, (int)FALLBACK_MS + 5000);
  assert_true(subscribed);
  assert_false(early);
  assert_int_equal(unlock_rc, REDLOCK_OK);
  assert_true(done);
  assert_int_equal(reader.rc, REDLOCK_OK);
  uint64_t after = reader.t_done - t_unlock;
  if (after >= WAKE_BOUND_MS)
    fail_msg("the reader got in %llu ms after the writer's release (fallback %u ms): not woken",
             (unsigned long long)after, FALLBACK_MS);
  if (fx_verbose())
    print_message("reader woken %llu ms after the release\n", (unsigned long long)after);
  assert_int_equal(redlock_unlock(c2, reader.lock), REDLOCK_OK);
}

/* Readers keep coming, always overlapping: STREAMS threads, started
 * STREAM_HOLD_MS / STREAMS apart, each holding STREAM_HOLD_MS and asking
 * again at once, so that at every instant at least STREAMS - 1 read holds
 * exist.  Without the writer's intent there is never a moment without
 * readers, and a writer waits in vain (checked: with the intent disabled in
 * rw_write.lua's caller, this test fails). */
#define STREAMS 3
#define STREAM_HOLD_MS 300

typedef struct {
  redlock_t *client;
  const char *name;
  atomic_int *stop;
  unsigned holds;
} stream_t;

static void *reader_stream(void *arg) {
  stream_t *s = arg;
  while (!atomic_load(s->stop)) {
    redlock_lock_t *r = NULL;
    if (redlock_rwlock_read(s->client, s->name, 3000, 2000, &r) != REDLOCK_OK)
      continue;
    s->holds++;
    struct timespec ts = {0, STREAM_HOLD_MS * 1000000L};
    nanosleep(&ts, NULL);
    redlock_unlock(s->client, r);
  }
  return NULL;
}

static void test_rw_writer_not_starved(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:rw:stream";
  rw_keys_t k = keys_of(name);
  atomic_int stop;
  atomic_init(&stop, 0);
  stream_t streams[STREAMS];
  pthread_t threads[STREAMS];
  for (int i = 0; i < STREAMS; i++)
    streams[i] = (stream_t){fx_open(fx, i, fx_options_retry(fx, i, REDLOCK_LOG_WARN, -1, 20, 0)),
                            name, &stop, 0};
  redlock_t *wc = fx_open(fx, STREAMS, fx_options_retry(fx, STREAMS, REDLOCK_LOG_WARN, -1, 50, 0));
  for (int i = 0; i < STREAMS; i++) {
    assert_int_equal(pthread_create(&threads[i], NULL, reader_stream, &streams[i]), 0);
    struct timespec ts = {0, STREAM_HOLD_MS / STREAMS * 1000000L};
    nanosleep(&ts, NULL); /* staggered: the holds overlap */
  }
  int flowing = fx_wait_exists_on(fx, fx->n, k.read, fx->n, 5000);
  redlock_lock_t *w = NULL;
  uint64_t t0 = rh_now_ms();
  int rc = redlock_rwlock_write(wc, name, 5000, 10000, &w);
  uint64_t took = rh_now_ms() - t0;
  if (rc == REDLOCK_OK)
    assert_int_equal(redlock_unlock(wc, w), REDLOCK_OK);
  atomic_store(&stop, 1);
  for (int i = 0; i < STREAMS; i++)
    pthread_join(threads[i], NULL);
  assert_true(flowing);
  unsigned holds = 0;
  for (int i = 0; i < STREAMS; i++)
    holds += streams[i].holds;
  assert_true(holds > STREAMS);
  if (rc != REDLOCK_OK)
    fail_msg("the writer was starved by the readers: %s after %llu ms", redlock_err_name(rc),
             (unsigned long long)took);
  if (fx_verbose())
    print_message("writer admitted after %llu ms of readers (%u read holds)\n",
                  (unsigned long long)took, holds);
}

/* ---- a writer that dies while waiting ------------------------------------------------ */

static void test_rw_crashed_writer_intent_expires(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:rw:crashed";
  rw_keys_t k = keys_of(name);
  /* Children first, before this process has client threads: a reader that
   * holds, and a writer that waits for it. */
  pid_t reader = fx_child_start(fx, fx->n, FX_CHILD_READ, name, 0, 30000, 0);
  assert_int_equal(fx_child_status(reader, 10000), REDLOCK_OK);
  pid_t writer = fx_child_start(fx, fx->n, FX_CHILD_WRITE, name, 0, 30000, 60000);
  assert_true(fx_wait_exists_on(fx, fx->n, k.intent, fx->n, 10000));
  fx_child_kill(writer); /* dies waiting: nobody withdraws its intent */
  uint64_t t_dead = rh_now_ms();

  redlock_t *c = fx_open(fx, 0, fx_options_retry(fx, 0, REDLOCK_LOG_WARN, -1, 100, 0));
  redlock_lock_t *r = NULL;
  if (rh_now_ms() - t_dead < 1000) /* the intent is certainly still there */
    assert_int_equal(redlock_rwlock_read(c, name, 10000, 0, &r), REDLOCK_ELOCKED);
  assert_int_equal(redlock_rwlock_read(c, name, 10000, 10000, &r), REDLOCK_OK);
  uint64_t took = rh_now_ms() - t_dead;
  if (took > INTENT_LEASE_MS + 3000)
    fail_msg("readers were blocked %llu ms by a dead writer's intent (lease %u ms)",
             (unsigned long long)took, INTENT_LEASE_MS);
  assert_hold(fx, name, r, 0);
  assert_int_equal(fx_exists_on(fx, fx->n, k.intent), 0);
  assert_int_equal(redlock_unlock(c, r), REDLOCK_OK);
  fx_child_kill(reader);
}

/* ---- extend, watch, unlock, close -------------------------------------------------------- */

typedef struct {
  fx_t *fx;
  const char *name;
  redlock_lock_t *r, *w;
  uint64_t until;
  int broken;
} survive_t;

static int survive_poll(void *arg) {
  survive_t *s = arg;
  if (redlock_lock_is_lost(s->r) || redlock_lock_is_lost(s->w) ||
      hold_on(s->fx, s->fx->n, s->name, s->r, 0) < s->fx->n / 2 + 1)
    s->broken = 1;
  char wname[96];
  snprintf(wname, sizeof wname, "%s:w", s->name);
  if (hold_on(s->fx, s->fx->n, wname, s->w, 1) < s->fx->n / 2 + 1)
    s->broken = 1;
  return s->broken || rh_now_ms() >= s->until;
}

static void test_rw_extend_watch_unlock(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:rw:ext";
  char wname[96];
  snprintf(wname, sizeof wname, "%s:w", name);
  rw_keys_t k = keys_of(name), kw = keys_of(wname);
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *r = NULL, *w = NULL, *x = NULL;

  assert_int_equal(redlock_rwlock_read(c, name, 1000, 0, &r), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_write(c, wname, 1000, 0, &w), REDLOCK_OK);
  assert_int_equal(redlock_extend(c, r, 8000), REDLOCK_OK);
  assert_int_equal(redlock_extend(c, w, 8000), REDLOCK_OK);
  assert_true(redlock_lock_validity_ms(r) > 5000 && redlock_lock_validity_ms(w) > 5000);
  assert_true(fx_wait_keys_pttl_above(fx, (const char *const[]){k.read}, 1, 5000, 3000));
  assert_true(fx_wait_keys_pttl_above(fx, (const char *const[]){kw.write}, 1, 5000, 3000));

  /* Watched with a short ttl: both outlive it several times over. */
  assert_int_equal(redlock_extend(c, r, 400), REDLOCK_OK);
  assert_int_equal(redlock_extend(c, w, 400), REDLOCK_OK);
  assert_int_equal(redlock_watch(c, r, NULL, NULL), REDLOCK_OK);
  assert_int_equal(redlock_watch(c, w, NULL, NULL), REDLOCK_OK);
  survive_t s = {fx, name, r, w, rh_now_ms() + 1600, 0};
  assert_true(rh_wait_until(survive_poll, &s, 10000));
  assert_false(s.broken);
  assert_int_equal(redlock_unlock(c, r), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, w), REDLOCK_OK);
  fx_assert_absent_everywhere(fx, k.read, 3000);
  fx_assert_absent_everywhere(fx, kw.write, 3000);

  /* Expired holds: extend refuses them, unlock reports they were gone. */
  assert_int_equal(redlock_rwlock_read(c, name, 200, 0, &r), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_write(c, wname, 200, 0, &w), REDLOCK_OK);
  struct timespec ts = {0, 400 * 1000000L};
  nanosleep(&ts, NULL); /* let both leases run out */
  assert_true(redlock_lock_is_lost(r));
  assert_int_equal(redlock_extend(c, r, 1000), REDLOCK_ELOST);
  assert_int_equal(redlock_extend(c, w, 1000), REDLOCK_ELOST);
  assert_int_equal(redlock_unlock(c, r), REDLOCK_ELOST);
  assert_int_equal(redlock_unlock(c, w), REDLOCK_ELOST);

  /* close releases what is held. */
  redlock_t *d = fx_open(fx, 1, fx_options(fx, 1, fx->n, REDLOCK_LOG_WARN));
  assert_int_equal(redlock_rwlock_read(d, name, 20000, 0, &x), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_write(d, wname, 20000, 0, &x), REDLOCK_OK);
  fx_close(fx, 1);
  fx_assert_absent_everywhere(fx, k.read, 3000);
  fx_assert_absent_everywhere(fx, kw.write, 3000);
}

/* ---- fencing ------------------------------------------------------------------------- */

static void test_rw_fencing(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:rw:fence";
  redlock_t *c[2];
  for (int i = 0; i < 2; i++) {
    redlock_options_t *opts = fx_options(fx, i, fx->n, REDLOCK_LOG_WARN);
    assert_int_equal(redlock_options_set_fencing(opts, 1), 0);
    c[i] = fx_open(fx, i, opts);
  }
  redlock_lock_t *w = NULL, *r1 = NULL, *r2 = NULL;
  uint64_t last_write = 0;
  for (int round = 0; round < 3; round++) {
    assert_int_equal(redlock_rwlock_write(c[round % 2], name, 5000, 0, &w), REDLOCK_OK);
    uint64_t tw = redlock_lock_fence(w);
    assert_true(tw > last_write);
    last_write = tw;
    assert_int_equal(redlock_unlock(c[round % 2], w), REDLOCK_OK);

    assert_int_equal(redlock_rwlock_read(c[0], name, 5000, 0, &r1), REDLOCK_OK);
    assert_int_equal(redlock_rwlock_read(c[1], name, 5000, 0, &r2), REDLOCK_OK);
    /* Readers carry the write epoch: at least the last writer's token (not
     * always equal among readers: a master that answered the writer late
     * may hold a larger counter) ... */
    assert_true(redlock_lock_fence(r1) >= tw);
    assert_true(redlock_lock_fence(r2) >= tw);
    /* ... and the next writer's token is above theirs. */
    last_write = redlock_lock_fence(r1) > redlock_lock_fence(r2) ? redlock_lock_fence(r1)
                                                                 : redlock_lock_fence(r2);
    assert_int_equal(redlock_unlock(c[0], r1), REDLOCK_OK);
    assert_int_equal(redlock_unlock(c[1], r2), REDLOCK_OK);
  }
}

/* ---- restart quarantine ------------------------------------------------------------- */

/* Also the reader's ttl: long enough to outlast a restart and both clients'
 * reconnections on a loaded machine. */
#define Q_MAX_TTL 8000u

static redlock_options_t *quarantine_options(fx_t *fx, int slot, int on) {
  redlock_options_t *opts = fx_options(fx, slot, fx->n, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_quarantine(opts, on), 0);
  assert_int_equal(redlock_options_set_max_ttl(opts, Q_MAX_TTL), 0);
  return opts;
}

static void test_rw_quarantine(void **state) {
  fx_t *fx = *state;
  const char *name = "sf:rw:quarantine";
  rw_keys_t k = keys_of(name);
  char buf[64];
  redlock_t *a = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *b = fx_open(fx, 1, quarantine_options(fx, 1, 1));
  redlock_t *c = fx_open(fx, 2, quarantine_options(fx, 2, 0));
  /* B waits out the fresh masters' initial quarantine. */
  assert_true(fx_wait_votes_count(fx, b, fx->n, 0x1f, 3 * (int)Q_MAX_TTL));

  /* A's read hold lands on {0,1,2} only: a foreign writer holds 3 and 4. */
  for (size_t i = 3; i < 5; i++)
    assert_int_equal(
        rh_server_command(fx->servers[i], buf, sizeof buf, "SET %s foreign PX 60000", k.write), 0);
  redlock_lock_t *r = NULL, *w = NULL;
  assert_int_equal(redlock_rwlock_read(a, name, Q_MAX_TTL, 0, &r), REDLOCK_OK);
  for (size_t i = 3; i < 5; i++)
    assert_int_equal(rh_server_command(fx->servers[i], buf, sizeof buf, "DEL %s", k.write), 0);
  assert_int_equal(hold_on(fx, 3, name, r, 0), 3);

  /* Master 0 restarts empty: the hold is left on {1,2}, a minority. */
  assert_int_equal(rh_server_kill(fx->servers[0]), 0);
  assert_int_equal(rh_server_restart(fx->servers[0]), 0);
  char label[64], needle[96];
  fx_label(fx->servers[0], label, sizeof label);
  snprintf(needle, sizeof needle, "master %s restarted", label);
  if (!fx_wait_log(fx, 1, needle, 5000))
    fail_msg("B did not see the restart; log:\n%s", fx_log_text(fx, 1));
  if (!fx_wait_log(fx, 2, needle, 5000))
    fail_msg("C did not see the restart; log:\n%s", fx_log_text(fx, 2));

  /* B (quarantine on) must not get the write lock while A's read is valid. */
  int b_rc = redlock_rwlock_write(b, name, 1000, 0, &w);
  int64_t a_validity = redlock_lock_validity_ms(r);
  assert_true(a_validity > 0);
  if (b_rc == REDLOCK_OK)
    fail_msg("a writer was admitted beside a valid reader through a restarted master");
  /* B's failed attempt wrote its writer key where it was not refused (the
   * quarantined master executes commands; only its vote does not count) and
   * its clean-up is on its way on B's connections: let it land, or C's
   * attempt may find B's leftovers. */
  fx_assert_absent_everywhere(fx, k.write, 5000);
  /* C (quarantine off) is: the danger the quarantine exists for. */
  int c_rc = redlock_rwlock_write(c, name, 1000, 0, &w);
  a_validity = redlock_lock_validity_ms(r);
  assert_int_equal(c_rc, REDLOCK_OK);
  if (fx_verbose())
    print_message("writer without quarantine admitted with the reader's validity at %lld ms\n",
                  (long long)a_validity);
  assert_int_equal(redlock_unlock(c, w), REDLOCK_OK);
  redlock_unlock(a, r);
}

/* ---- chaos: no writer overlaps another hold --------------------------------------------- */

#define CHAOS_WORKERS 3
#define CHAOS_MS 8000u

/* A write one time in three. */
static int rw_acquire(redlock_t *client, unsigned *seed, redlock_lock_t **hold, int *exclusive) {
  *exclusive = rand_r(seed) % 3 == 0;
  return *exclusive ? redlock_rwlock_write(client, "sf:rw:chaos", 1500, 1000, hold)
                    : redlock_rwlock_read(client, "sf:rw:chaos", 1500, 1000, hold);
}

static void test_rw_chaos(void **state) {
  fx_t *fx = *state;
  static fx_history_t history;
  fx_history_init(&history);
  const fx_chaos_t chaos = {CHAOS_WORKERS, rw_acquire, 80000u, 99u, 7, CHAOS_MS};
  unsigned writes = 0;
  unsigned reads = fx_chaos_run(fx, &chaos, &history, &writes);
  reads -= writes;
  size_t bad = fx_history_exclusive_overlaps(&history);
  if (fx_verbose())
    print_message("chaos: %u reads, %u writes, deepest overlap %d\n", reads, writes,
                  fx_history_max_depth(&history));
  assert_true(reads > 0 && writes > 0);
  if (bad != 0)
    fail_msg("%zu overlaps of a write hold with another hold", bad);
  fx_history_destroy(&history);
}

FX_MAIN("tests", &fx_profile_safety, FX_TEST(test_rw_readers_share, 3),
        FX_TEST(test_rw_writer_excludes, 3), FX_TEST(test_rw_waiting_writer_blocks_readers, 3),
        FX_TEST(test_rw_writer_not_starved, 3), FX_TEST(test_rw_crashed_writer_intent_expires, 3),
        FX_TEST(test_rw_extend_watch_unlock, 3), FX_TEST(test_rw_fencing, 3),
        FX_TEST(test_rw_quarantine, 5), FX_TEST(test_rw_chaos, 5))
