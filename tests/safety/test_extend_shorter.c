/* test_extend_shorter.c: an extension that sets a shorter ttl and fails
 * still shortens the keys on every master that ran it, so the holder's
 * validity must shrink with them (docs/safety.md §8.3).  Two schedules, for
 * each kind that extends (a lock, a semaphore permit of limit 1, a read hold
 * against a writer, a write hold against a reader), on three real masters:
 *  - A, no fault: H holds with ttl 10 s; extend(H, 2 ms) is decided with no
 *    validity left (EEXPIRED).  The masters expire H's keys 2 ms later.
 *  - B, two masters SIGSTOPped: extend(H, 500 ms) gets no quorum
 *    (ENOQUORUM); the masters resume and run the queued extension.
 * In both, a contender C2 retries a one-shot acquisition until it is
 * granted (it must be, within seconds: the keys are gone); at that moment H
 * must report no validity left; a holder that still reports ~9 s (its old
 * ttl) is a second holder.  Waits are deadlines (rh_wait_until), never sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define HOLD_TTL_MS 10000u
#define GRANT_DEADLINE_MS 5000

typedef enum { KIND_LOCK, KIND_SEMAPHORE, KIND_READ, KIND_WRITE } kind_t;

/* One-shot acquisition of kind (H's own) or of what excludes it (C2's). */
static int acquire(redlock_t *c, kind_t kind, int contender, const char *name, uint32_t ttl_ms,
                   redlock_lock_t **out) {
  switch (kind) {
  case KIND_LOCK:
    return redlock_trylock(c, name, ttl_ms, out);
  case KIND_SEMAPHORE:
    return redlock_semaphore_acquire(c, name, 1, ttl_ms, 0, out);
  case KIND_READ: /* H reads, C2 writes */
    return contender ? redlock_rwlock_write(c, name, ttl_ms, 0, out)
                     : redlock_rwlock_read(c, name, ttl_ms, 0, out);
  case KIND_WRITE: /* H writes, C2 reads */
    return contender ? redlock_rwlock_read(c, name, ttl_ms, 0, out)
                     : redlock_rwlock_write(c, name, ttl_ms, 0, out);
  }
  return REDLOCK_EINVAL;
}

typedef struct {
  redlock_t *client;
  kind_t kind;
  const char *name;
  redlock_lock_t *lock;
  int rc;
} contender_t;

static int contender_granted(void *arg) {
  contender_t *c = arg;
  c->rc = acquire(c->client, c->kind, 1, c->name, 1000, &c->lock);
  return c->rc == REDLOCK_OK;
}

/* C2 retries until granted; then H must have no validity left. */
static void assert_one_holder(fx_t *fx, redlock_t *c2, kind_t kind, const char *name,
                              redlock_lock_t *held) {
  contender_t c = {c2, kind, name, NULL, REDLOCK_EINVAL};
  if (!rh_wait_until(contender_granted, &c, GRANT_DEADLINE_MS))
    fail_msg("the contender was never granted %s (last %s): the keys did not expire", name,
             redlock_err_name(c.rc));
  int64_t left = redlock_lock_validity_ms(held);
  if (left > 0)
    fail_msg("two holders of %s: the contender was granted while H reports %lld ms of validity\n%s",
             name, (long long)left, fx_log_text(fx, FX_ALL));
  assert_int_equal(redlock_unlock(c2, c.lock), REDLOCK_OK);
}

static void schedule_a(fx_t *fx, kind_t kind, const char *what) {
  FX_NAME(name, what);
  redlock_t *h = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *c2 = fx_open(fx, 1, fx_options(fx, 1, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *held = NULL;
  FX_ASSERT_RC(fx, h, acquire(h, kind, 0, name, HOLD_TTL_MS, &held), REDLOCK_OK);
  /* 2 ms is below the drift allowance: won or not, no validity is left. */
  int rc = redlock_extend(h, held, 2);
  assert_true(rc == REDLOCK_EEXPIRED || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_ELOST);
  assert_true(redlock_lock_validity_ms(held) <= 0);
  assert_one_holder(fx, c2, kind, name, held);
  redlock_unlock(h, held); /* may find the keys gone: any status, the handle is freed */
}

static void schedule_b(fx_t *fx, kind_t kind, const char *what) {
  FX_NAME(name, what);
  redlock_t *h = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redlock_t *c2 = fx_open(fx, 1, fx_options(fx, 1, fx->n, REDLOCK_LOG_WARN));
  redlock_lock_t *held = NULL;
  FX_ASSERT_RC(fx, h, acquire(h, kind, 0, name, HOLD_TTL_MS, &held), REDLOCK_OK);
  assert_int_equal(fx_pause(fx, 0x6, 1), 0); /* masters 1 and 2 */
  int rc = redlock_extend(h, held, 500);
  int resumed = fx_pause(fx, 0x6, 0); /* they run the queued extension */
  assert_int_equal(resumed, 0);
  FX_ASSERT_RC(fx, h, rc, REDLOCK_ENOQUORUM);
  assert_one_holder(fx, c2, kind, name, held);
  redlock_unlock(h, held);
}

static void test_lock_a(void **state) { schedule_a(*state, KIND_LOCK, "shorter:lock:a"); }
static void test_lock_b(void **state) { schedule_b(*state, KIND_LOCK, "shorter:lock:b"); }
static void test_semaphore_a(void **state) { schedule_a(*state, KIND_SEMAPHORE, "shorter:sem:a"); }
static void test_semaphore_b(void **state) { schedule_b(*state, KIND_SEMAPHORE, "shorter:sem:b"); }
static void test_read_a(void **state) { schedule_a(*state, KIND_READ, "shorter:read:a"); }
static void test_read_b(void **state) { schedule_b(*state, KIND_READ, "shorter:read:b"); }
static void test_write_a(void **state) { schedule_a(*state, KIND_WRITE, "shorter:write:a"); }
static void test_write_b(void **state) { schedule_b(*state, KIND_WRITE, "shorter:write:b"); }

FX_MAIN("extend_shorter", &fx_profile_safety, FX_TEST(test_lock_a, 3), FX_TEST(test_lock_b, 3),
        FX_TEST(test_semaphore_a, 3), FX_TEST(test_semaphore_b, 3), FX_TEST(test_read_a, 3),
        FX_TEST(test_read_b, 3), FX_TEST(test_write_a, 3), FX_TEST(test_write_b, 3))
