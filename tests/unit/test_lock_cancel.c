/* test_lock_cancel.c: redlock_cancel and the _ex acquisitions (lock.c's
 * cancellation by id, calls.c, client.c's cancel queue) on a client over
 * fake masters and a stepped clock (engine_fixture.h):
 *  - a wait between attempts ends at once with ECANCELED, its release
 *    subscription is dropped, and no master is sent anything more;
 *  - with a round out, the callback runs at once; the round, won after the
 *    cancel, is not granted: what it set is released, nothing else is sent;
 *  - a cancel asked before the loop decides a won round (the race with the
 *    grant) wins it: ECANCELED and a release, never a handle;
 *  - a grant decided before the cancel: REDLOCK_CANCEL_LATE, the lock is the
 *    caller's;
 *  - canceled before the loop took the call, or while it is parked until
 *    the masters' first connection attempts: nothing is ever sent;
 *  - a retry timer due before the loop takes the cancel sends nothing;
 *  - a fenced acquisition canceled during its write-back is released;
 *  - lock_many, a semaphore permit and a waiting writer (its intent
 *    withdrawn) are canceled the same way;
 *  - bad ids (0, never given, NULL client), a reentrant grant (late at
 *    once), cancel twice, close after a cancel: every callback exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/client.h"
#include "engine_fixture.h"

#define TTL_MS 10000

static engine_config_t retry_every_50ms = {.retry = 1, .retry_count = 0, .retry_delay_ms = 50};
static engine_config_t retry_5_every_50ms = {.retry = 1, .retry_count = 5, .retry_delay_ms = 50};
static engine_config_t reentrant = {.reentrant = 1};

/* Requests sent to every master so far. */
static unsigned sends_all(const fake_transport_t *f) {
  unsigned n = 0;
  for (unsigned i = 0; i < f->n; i++)
    n += f->m[i].sends;
  return n;
}

/* redlock_lock_async_ex, asserted accepted, then the loop runs; the id. */
static uint64_t lock_ex(engine_fx_t *e, const char *resource, uint32_t wait_ms, lock_result_t *r) {
  uint64_t id = 0;
  assert_int_equal(redlock_lock_async_ex(e->client, resource, TTL_MS, wait_ms, on_lock, r, &id), 0);
  assert_true(id != 0);
  fake_pump();
  return id;
}

/* Every master refuses; the attempt's release is answered. */
static void refuse_attempt(fake_transport_t *f) {
  fake_reply_nil_each(f);
  fake_reply_int_all(f, 0);
}

/* A wait that lost its first attempt waits for a release (subscribed) or
 * its retry timer; the cancel ends it at once, drops the subscription, and
 * nothing more goes out, whatever is announced or however long it lasts. */
static void test_cancel_waiting(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = lock_ex(e, "jobs", 5000, &r);
  refuse_attempt(f);
  assert_false(list_empty(&e->client->notify.channels)); /* subscribed */
  unsigned sent = sends_all(f);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  assert_int_equal(redlock_cancel(e->client, id), 0); /* again: the same outcome */
  assert_int_equal(r.calls, 0);                       /* the loop takes it */
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  assert_true(list_empty(&e->client->notify.channels));
  engine_announce(e, "jobs");
  fake_advance_ms(6000);
  assert_int_equal(sends_all(f), sent);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(redlock_cancel(e->client, id), REDLOCK_CANCEL_LATE); /* ended */
  assert_int_equal(r.calls, 1);
}

/* The round is out: the callback runs when the loop takes the cancel; the
 * round, won afterwards, is released where it set the key and not granted;
 * no retry follows. */
static void test_cancel_round_out_then_won(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = lock_ex(e, "r", 0, &r);
  assert_int_equal(fake_outstanding_all(f), ENGINE_MASTERS);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  assert_int_equal(redlock_cancel(e->client, id), 0); /* the op lives on with its round */
  unsigned sent = sends_all(f);
  fake_reply_ok_all(f); /* a quorum: won, but canceled */
  assert_int_equal(r.calls, 1);
  assert_int_equal(sends_all(f), sent + ENGINE_MASTERS); /* the release, nothing else */
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    assert_true(fake_cmd_has(f, i, 0, "EVALSHA"));
  fake_reply_int_all(f, 1);
  fake_advance_ms(1000);
  assert_int_equal(sends_all(f), sent + ENGINE_MASTERS);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(redlock_cancel(e->client, id), REDLOCK_CANCEL_LATE);
  assert_int_equal(r.calls, 1);
}

/* The race with the grant, as the loop sees it: the cancel is asked (under
 * the mutex) before the won round is decided, and the loop has not taken it
 * yet.  The decision sees it: ECANCELED, and the keys released. */
static void test_cancel_asked_before_decision(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = lock_ex(e, "r", 0, &r);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_reply_ok_all(f); /* decided before any loop turn took the cancel */
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
    assert_int_equal(fake_outstanding(f, i), 1);
    assert_true(fake_cmd_has(f, i, 0, "EVALSHA"));
  }
  fake_reply_int_all(f, 1);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* A quorum won too late to leave validity is a failed attempt, not a
 * decision: the call retries, and a cancel then still takes effect. */
static void test_cancel_after_expired_win(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = 0;
  assert_int_equal(redlock_lock_async_ex(e->client, "r", 50, 0, on_lock, &r, &id), 0);
  fake_pump();
  fake_advance_ns(60 * 1000000u); /* past the 50 ms ttl, within the request timeout */
  fake_reply_ok_all(f);           /* won, with no validity left: EEXPIRED, released */
  assert_int_equal(r.calls, 0);
  fake_reply_int_all(f, 1);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  unsigned sent = sends_all(f);
  fake_advance_ms(1000);
  assert_int_equal(sends_all(f), sent);
}

/* Decided first: the cancel is too late and the lock stays the caller's. */
static void test_cancel_after_grant(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = lock_ex(e, "r", 0, &r);
  fake_reply_ok_all(f);
  assert_int_equal(r.status, REDLOCK_OK);
  assert_int_equal(redlock_cancel(e->client, id), REDLOCK_CANCEL_LATE);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_false(redlock_lock_is_lost(r.lock));
  engine_release(e, r.lock);
}

/* Canceled before the loop took the call: it never sends anything. */
static void test_cancel_before_start(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = 0;
  assert_int_equal(redlock_lock_async_ex(e->client, "r", TTL_MS, 1000, on_lock, &r, &id), 0);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  assert_int_equal(sends_all(f), 0);
}

/* Parked until every master had its first connection attempt: the cancel
 * ends it at once, and nothing is sent when the masters come. */
static void test_cancel_parked(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  e->client->voters.startup_left = 1; /* one master still connecting */
  lock_result_t r = {0};
  uint64_t id = lock_ex(e, "r", 1000, &r);
  assert_int_equal(r.calls, 0);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  assert_true(list_empty(&e->client->queue.parked));
  e->client->voters.startup_left = 0;
  fake_advance_ms(2000);
  assert_int_equal(sends_all(f), 0);
  assert_int_equal(r.calls, 1);
}

/* The retry timer fires before the loop takes the cancel (the timers run
 * first in a loop turn): the attempt it would start is not sent. */
static void test_cancel_before_due_retry(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = lock_ex(e, "r", 0, &r);
  refuse_attempt(f); /* retried in 50 ms */
  unsigned sent = sends_all(f);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_advance_timers_only_ms(50);
  assert_int_equal(sends_all(f), sent);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(sends_all(f), sent);
}

/* Fenced: canceled while the token's write-back is out; it is won, but the
 * lock is released, not granted. */
static void test_cancel_during_fence_commit(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = lock_ex(e, "ledger", 0, &r);
  fake_reply_int_all(f, 3); /* the tokens: the write-back goes out */
  assert_int_equal(fake_outstanding(f, 0), 1);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  fake_reply_int_all(f, 1); /* written back: the lock's release follows */
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    assert_int_equal(fake_outstanding(f, i), 1);
  fake_reply_int_all(f, 1);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(r.calls, 1);
}

/* All or nothing, canceled with its round out; the keys it set go. */
static void test_cancel_lock_many(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  const char *names[] = {"a", "b", "c"};
  uint64_t id = 0;
  assert_int_equal(redlock_lock_many_async_ex(e->client, names, 3, TTL_MS, on_lock, &r, &id), 0);
  fake_pump();
  assert_int_equal(fake_outstanding_all(f), ENGINE_MASTERS);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  fake_reply_int_all(f, 3); /* every master set all three */
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    assert_int_equal(fake_outstanding(f, i), 1); /* their release */
  fake_reply_int_all(f, 3);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(r.calls, 1);
  /* the plain form, not cancelable, still works */
  lock_result_t g = {0};
  assert_int_equal(redlock_lock_many_async(e->client, names, 3, TTL_MS, on_lock, &g), 0);
  fake_pump();
  fake_reply_int_all(f, 3);
  assert_int_equal(g.status, REDLOCK_OK);
  engine_unlock(e, g.lock, 3, REDLOCK_OK);
}

/* A waiting permit, canceled between its passes over the slots. */
static void test_cancel_semaphore(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = 0;
  assert_int_equal(
      redlock_semaphore_acquire_async_ex(e->client, "pool", 1, TTL_MS, 5000, on_lock, &r, &id), 0);
  fake_pump();
  fake_reply_int_all(f, 0); /* its one slot is held */
  fake_reply_int_all(f, 0); /* the attempt's release */
  unsigned sent = sends_all(f);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  fake_advance_ms(6000);
  assert_int_equal(sends_all(f), sent);
}

/* A waiting writer left an intent: canceled, it withdraws it (what it set),
 * and nothing else goes out. */
static void test_cancel_waiting_writer(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = 0;
  assert_int_equal(redlock_rwlock_write_async_ex(e->client, "doc", TTL_MS, 5000, on_lock, &r, &id),
                   0);
  fake_pump();
  fake_reply_int_all(f, 0); /* readers hold it: refused, intent left */
  fake_reply_int_all(f, 0); /* the attempt's release */
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  unsigned sent = sends_all(f);
  while (fake_outstanding_all(f) > 0) /* the intent's withdrawal, if any */
    fake_reply_int_all(f, 1);
  fake_advance_ms(6000);
  assert_int_equal(sends_all(f), sent);
  /* the read form has an id too */
  lock_result_t g = {0};
  assert_int_equal(redlock_rwlock_read_async_ex(e->client, "doc", TTL_MS, 0, on_lock, &g, &id), 0);
  assert_true(id != 0);
  fake_pump();
  fake_reply_int_all(f, 1);
  assert_int_equal(g.status, REDLOCK_OK);
  engine_release(e, g.lock);
}

/* Ids: never 0, counted up, refused when never given; errors leave *id 0. */
static void test_cancel_bad_ids(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  assert_int_equal(redlock_cancel(NULL, 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_cancel(e->client, 0), REDLOCK_EINVAL);
  assert_int_equal(redlock_cancel(e->client, 1), REDLOCK_EINVAL); /* none given yet */
  lock_result_t r = {0};
  uint64_t id = 77;
  assert_int_equal(redlock_lock_async_ex(e->client, "", TTL_MS, 0, on_lock, &r, &id),
                   REDLOCK_EINVAL);
  assert_int_equal(id, 0);
  id = 77;
  assert_int_equal(redlock_lock_async_ex(e->client, "r", TTL_MS, 0, NULL, NULL, &id),
                   REDLOCK_EINVAL);
  assert_int_equal(id, 0);
  uint64_t first = lock_ex(e, "r", 0, &r);
  assert_int_equal(redlock_cancel(e->client, first + 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_cancel(e->client, UINT64_MAX), REDLOCK_EINVAL);
  fake_reply_ok_all(f);
  lock_result_t s = {0};
  uint64_t second = lock_ex(e, "s", 0, &s);
  assert_true(second > first);
  fake_reply_ok_all(f);
  assert_int_equal(redlock_cancel(e->client, first), REDLOCK_CANCEL_LATE);
  engine_release(e, r.lock);
  engine_release(e, s.lock);
  /* without an id pointer: the plain form */
  lock_result_t t = {0};
  assert_int_equal(redlock_lock_async_ex(e->client, "t", TTL_MS, 0, on_lock, &t, NULL), 0);
  fake_pump();
  fake_reply_ok_all(f);
  assert_int_equal(t.status, REDLOCK_OK);
  engine_release(e, t.lock);
}

/* A reentrant acquisition is granted at submission: an id, but late. */
static void test_cancel_reentrant_is_late(void **state) {
  engine_fx_t *e = *state;
  redlock_lock_t *lease = engine_acquire(e, "r", TTL_MS);
  lock_result_t r = {0};
  uint64_t id = 0;
  assert_int_equal(redlock_lock_async_ex(e->client, "r", TTL_MS, 0, on_lock, &r, &id), 0);
  assert_true(id != 0);
  assert_int_equal(redlock_cancel(e->client, id), REDLOCK_CANCEL_LATE);
  fake_pump();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  engine_unlock(e, r.lock, 1, REDLOCK_OK);
  engine_release(e, lease);
}

/* Canceled with its round out, then the client closes before the round is
 * decided: the callback ran once (at the cancel), the close still waits for
 * the round and releases what it set. */
static void test_cancel_then_close(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = lock_ex(e, "r", 0, &r);
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(r.calls, 1);
  engine_fx_begin_close(e);
  assert_int_equal(redlock_cancel(e->client, id), REDLOCK_ECLOSED);
  fake_reply_ok_all(f);
  assert_int_equal(r.calls, 1);
  engine_close(e); /* answers the release; checks what the close leaves */
  assert_int_equal(r.calls, 1);
}

typedef struct {
  int acquire, canceled, other;
} events_t;

static void count_event(const redlock_event_t *ev, void *arg) {
  events_t *n = arg;
  int kind = redlock_event_kind(ev);
  if (kind == REDLOCK_EVENT_ACQUIRE || kind == REDLOCK_EVENT_WAIT) {
    n->acquire++;
    n->canceled += redlock_event_status(ev) == REDLOCK_ECANCELED;
  } else if (kind != REDLOCK_EVENT_NODE_UP && kind != REDLOCK_EVENT_NODE_DOWN) {
    n->other++;
  }
}

/* Events and stats count a canceled call once, as canceled, though its op
 * outlives the callback (a round was out); the waiters gauge goes back. */
static void test_cancel_counted_once(void **state) {
  (void)state;
  events_t n = {0};
  redlock_options_t *opts = engine_options();
  assert_int_equal(redlock_options_set_event_cb(opts, count_event, &n), 0);
  engine_fx_t *e = engine_open(opts);
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  uint64_t id = lock_ex(e, "r", 5000, &r); /* a wait: the waiters gauge counts it */
  assert_int_equal(redlock_cancel(e->client, id), 0);
  fake_pump();
  assert_int_equal(n.acquire, 1);
  assert_int_equal(n.canceled, 1);
  fake_reply_ok_all(f);     /* won after the cancel */
  fake_reply_int_all(f, 1); /* its release */
  assert_int_equal(n.acquire, 1);
  assert_int_equal(n.other, 0);
  char json[8192];
  assert_true(redlock_stats(e->client, REDLOCK_STATS_JSON, json, sizeof json) > 0);
  assert_non_null(strstr(json, "\"waiters\":0"));
  engine_close(e);
  assert_int_equal(r.calls, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST_WITH(test_cancel_waiting, &retry_every_50ms),
      ENGINE_TEST(test_cancel_round_out_then_won),
      ENGINE_TEST(test_cancel_asked_before_decision),
      ENGINE_TEST(test_cancel_after_grant),
      ENGINE_TEST_WITH(test_cancel_after_expired_win, &retry_5_every_50ms),
      ENGINE_TEST(test_cancel_before_start),
      ENGINE_TEST(test_cancel_parked),
      ENGINE_TEST_WITH(test_cancel_before_due_retry, &retry_5_every_50ms),
      ENGINE_TEST_WITH(test_cancel_during_fence_commit, &engine_fenced),
      ENGINE_TEST(test_cancel_lock_many),
      ENGINE_TEST_WITH(test_cancel_semaphore, &retry_every_50ms),
      ENGINE_TEST_WITH(test_cancel_waiting_writer, &retry_every_50ms),
      ENGINE_TEST(test_cancel_bad_ids),
      ENGINE_TEST_WITH(test_cancel_reentrant_is_late, &reentrant),
      ENGINE_TEST_CLOSING(test_cancel_then_close, NULL),
      cmocka_unit_test(test_cancel_counted_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
