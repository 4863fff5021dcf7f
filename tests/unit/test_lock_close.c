/* test_lock_close.c: unlock, reentrancy, bad input and close (lock.c,
 * client.c) on a client over fake masters and a stepped clock
 * (engine_fixture.h): unlock outcomes, a handle unlocked twice, reentrant
 * holds sharing one lease, close in each phase (draining with calls and
 * rounds in flight, queued, tearing down) with every callback run exactly
 * once and nothing left behind, close releasing more locks than its
 * window, close at its bound (with locks still to release), and close
 * waiting for a call still inside the client on another thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "api/client.h"
#include "engine/lock.h"
#include "engine_fixture.h"
#include "redlock_uv.h"

#define TTL_MS 10000

static engine_config_t reentrant = {.reentrant = 1};

/* The release's outcome: OK at a quorum of deletions, ELOST when a quorum
 * no longer had our value, ENOQUORUM when too few answered. */
static void test_unlock_outcomes(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  static const struct {
    long long reply;
    int errors;
    int status;
  } cases[] = {{1, 0, REDLOCK_OK}, {0, 0, REDLOCK_ELOST}, {1, 1, REDLOCK_ENOQUORUM}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
    done_result_t d = {0};
    assert_int_equal(redlock_unlock_async(e->client, lock, on_done, &d), 0);
    fake_pump();
    assert_true(fake_cmd_has(f, 0, 0, "EVALSHA"));
    for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
      if (cases[c].errors && i < 3)
        fake_reply_error(f, i, "ERR boom");
      else
        fake_reply_int(f, i, cases[c].reply);
    }
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, cases[c].status);
  }
}

/* Bad input is refused at the call (no callback ever runs): a NULL client,
 * handle or callback, a bad ttl or resource, a handle unlocked already. */
static void test_bad_input_and_double_unlock(void **state) {
  engine_fx_t *e = *state;
  redlock_t *c = e->client;
  lock_result_t r = {0};
  done_result_t d = {0};
  assert_int_equal(redlock_lock_async(NULL, "r", TTL_MS, 0, on_lock, &r), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(c, "r", TTL_MS, 0, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(c, "r", 0, 0, on_lock, &r), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(c, "", TTL_MS, 0, on_lock, &r), REDLOCK_EINVAL);
  assert_int_equal(redlock_lock_async(c, NULL, TTL_MS, 0, on_lock, &r), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock_async(c, NULL, on_done, &d), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(c, NULL, TTL_MS, on_done, &d), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(c, NULL, NULL, NULL), REDLOCK_EINVAL);
  /* blocking calls on a client whose loop is the caller's own */
  redlock_lock_t *out = NULL;
  assert_int_equal(redlock_lock(c, "r", TTL_MS, &out), REDLOCK_EWOULDBLOCK);
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  assert_int_equal(redlock_extend_async(c, lock, 0, on_done, &d), REDLOCK_EINVAL);
  engine_release(e, lock);
  /* the handle is gone: every call on it is refused */
  assert_int_equal(redlock_unlock_async(c, lock, on_done, &d), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(c, lock, TTL_MS, on_done, &d), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(c, lock, NULL, NULL), REDLOCK_EINVAL);
  fake_pump();
  assert_int_equal(r.calls + d.calls, 0);
  assert_int_equal(fake_outstanding_all(&e->fake), 0);
}

/* Reentrancy: a second lock of the same resource by the same thread is a
 * hold on the lease, granted without a round; the lease is released when
 * its last handle is unlocked, in whichever order. */
static void test_reentrant_holds(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lease = engine_acquire(e, "r", TTL_MS);
  for (int order = 0; order < 2; order++) {
    lock_result_t r = {0};
    engine_lock(e, "r", TTL_MS, 0, &r);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, REDLOCK_OK);
    assert_int_equal(fake_outstanding_all(f), 0); /* no round */
    redlock_lock_t *hold = r.lock;
    assert_ptr_not_equal(hold, lease);
    assert_string_equal(redlock_lock_value(hold), redlock_lock_value(lease));
    /* a hold extends and watches its lease */
    done_result_t x = {0};
    engine_extend(e, hold, TTL_MS, &x);
    fake_reply_int_all(f, 1);
    assert_int_equal(x.status, REDLOCK_OK);
    lost_result_t lost = {0};
    assert_int_equal(redlock_watch(e->client, hold, on_lost, &lost), 0);
    fake_pump();
    redlock_lock_t *first = order == 0 ? hold : lease;
    redlock_lock_t *last = order == 0 ? lease : hold;
    done_result_t d = {0};
    assert_int_equal(redlock_unlock_async(e->client, first, on_done, &d), 0);
    fake_pump();
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, REDLOCK_OK);
    assert_int_equal(fake_outstanding_all(f), 0); /* still held by the other */
    if (order == 0) {
      lease = last; /* the next round: a hold on the same lease again */
      continue;
    }
    engine_release(e, last);
    assert_int_equal(lost.calls, 0);
  }
}

/* Close while an acquisition, an extension and an unlock are in flight,
 * with a lock held and one waiting on its retry timer: the acquisition and
 * the waiter are canceled, the extension and the unlock end with their
 * rounds, the held lock is released; the client drains, then tears down.
 * Every callback runs exactly once. */
static engine_config_t retrying = {.retry = 1, .retry_count = 5, .retry_delay_ms = 1000};
static void test_close_phases(void **state) {
  engine_fx_t *e = *state; /* closed here: what the close did is checked after */
  fake_transport_t *f = &e->fake;
  redlock_lock_t *held = engine_acquire(e, "held", TTL_MS);
  redlock_lock_t *extended = engine_acquire(e, "extended", TTL_MS);
  redlock_lock_t *unlocked = engine_acquire(e, "unlocked", TTL_MS);
  lock_result_t waiting = {0}, acquiring = {0};
  engine_lock(e, "waiting", TTL_MS, 0, &waiting);
  fake_reply_nil_each(f);
  fake_reply_int_all(f, 0); /* its attempt's release; now on its retry timer */
  done_result_t x = {0}, u = {0};
  assert_int_equal(redlock_lock_async(e->client, "acquiring", TTL_MS, 0, on_lock, &acquiring), 0);
  assert_int_equal(redlock_extend_async(e->client, extended, TTL_MS, on_done, &x), 0);
  assert_int_equal(redlock_unlock_async(e->client, unlocked, on_done, &u), 0);
  fake_pump();
  assert_int_equal(fake_outstanding(f, 0), 3);

  engine_fx_begin_close(e);
  assert_int_equal(e->client->close.phase, CLOSE_DRAINING);
  assert_int_equal(waiting.calls, 1);
  assert_int_equal(waiting.status, REDLOCK_ECANCELED);
  assert_int_equal(acquiring.calls, 0); /* its round is out */
  /* calls after close are refused */
  lock_result_t late = {0};
  assert_int_equal(redlock_lock_async(e->client, "late", TTL_MS, 0, on_lock, &late),
                   REDLOCK_ECLOSED);
  assert_int_equal(redlock_unlock_async(e->client, held, on_done, &u), REDLOCK_ECLOSED);
  /* acquisition won, extension and unlock answered; releases of the two
   * held locks (held, extended) answered by some masters only */
  fake_reply_ok_all(f);
  assert_int_equal(acquiring.calls, 1);
  assert_int_equal(acquiring.status, REDLOCK_ECANCELED);
  fake_reply_int_all(f, 1); /* the extension */
  assert_int_equal(x.calls, 1);
  assert_int_equal(x.status, REDLOCK_OK);
  fake_reply_int_all(f, 1); /* the unlock */
  assert_int_equal(u.calls, 1);
  assert_int_equal(u.status, REDLOCK_OK);
  for (unsigned i = 0; i < 3; i++)
    fake_drop(f, i); /* masters 0-2 answer the releases; 3 and 4 stay silent */
  assert_int_equal(e->client->close.phase, CLOSE_DRAINING);
  fake_advance_ms(ENGINE_REQUEST_MS - 1);
  assert_int_equal(e->client->close.phase, CLOSE_DRAINING);
  assert_int_equal(e->closed, 0);
  engine_close(e); /* deadlines: queued, then torn down (requests dropped) */
  assert_int_equal(waiting.calls + acquiring.calls + x.calls + u.calls + late.calls, 4);
}

/* Close with nothing in flight goes straight through draining. */
static void test_close_idle(void **state) {
  (void)state; /* the teardown closes it, with its checks */
}

/* Close from inside a callback (the lock's): allowed, and the lock it was
 * handed is released by the close. */
static redlock_t *closing_client;
static void close_in_callback(int status, redlock_lock_t *lock, void *arg) {
  on_lock(status, lock, arg);
  redlock_close_uv(closing_client, NULL, NULL);
}

static void test_close_from_callback(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  closing_client = e->client;
  lock_result_t r = {0};
  assert_int_equal(redlock_lock_async(e->client, "r", TTL_MS, 0, close_in_callback, &r), 0);
  fake_pump();
  fake_reply_ok_all(f);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  fake_pump();
  assert_int_equal(fake_outstanding(f, 0), 1); /* the close's release of it */
  fake_reply_int_all(f, 1);
}

/* Close with a lease that has reentrant holds: every handle goes, the lease
 * is released once. */
static void test_close_with_holds(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  (void)engine_acquire(e, "r", TTL_MS);
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 0, &r);
  assert_int_equal(r.status, REDLOCK_OK);
  engine_fx_begin_close(e);
  assert_int_equal(fake_outstanding(f, 0), 1);
  fake_reply_int_all(f, 1);
}

/* Close with more held locks than its release window: the releases go out
 * a window at a time (each settled round lets the next one go), each lock is
 * released exactly once, and a watched lock waiting for its turn is not
 * renewed meanwhile, nor reported lost. */
static engine_config_t plain = {0};
static void test_close_paces_releases(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  enum { HELD = LOCK_CLOSE_WINDOW + 50, SHORT_TTL_MS = 120 };
  char name[32];
  redlock_lock_t *last = NULL;
  for (unsigned i = 0; i < HELD; i++) {
    snprintf(name, sizeof name, "r%u", i);
    last = engine_acquire(e, name, i + 1 == HELD ? SHORT_TTL_MS : TTL_MS);
  }
  lost_result_t lost = {0};
  engine_watch(e, last, &lost); /* released last: renewal due in 64-76 ms */
  unsigned sent = f->m[0].sends;

  engine_fx_begin_close(e);
  assert_int_equal(fake_outstanding(f, 0), LOCK_CLOSE_WINDOW);
  assert_int_equal(f->m[0].sends - sent, LOCK_CLOSE_WINDOW);
  fake_advance_ms(ENGINE_REQUEST_MS - 5); /* past the renewal, short of a timeout */
  assert_int_equal(f->m[0].sends - sent, LOCK_CLOSE_WINDOW);
  fake_reply_int_all(f, 1); /* one release settled: one more goes */
  assert_int_equal(fake_outstanding(f, 0), LOCK_CLOSE_WINDOW);
  assert_int_equal(f->m[0].sends - sent, LOCK_CLOSE_WINDOW + 1);
  assert_true(fake_cmd_has(f, 0, LOCK_CLOSE_WINDOW - 1, "r4096"));
  while (fake_outstanding_all(f) > 0)
    fake_reply_int_all(f, 1);
  assert_int_equal(f->m[0].sends - sent, HELD); /* each once, renewals none */
  assert_int_equal(f->m[0].warns, 0);
  assert_int_equal(f->m[0].defers, 0);
  engine_close(e);
  assert_int_equal(lost.calls, 0);
}

/* A close that a master keeps waiting ends at its bound
 * (client_close_bound_ms: at least CLIENT_CLOSE_MIN_MS), not before: master
 * 0 owes a replayed release's reply until it is abandoned (a fake master's
 * ops with those two replaced); the masters are then abandoned, what master
 * 0 owes is given up, and the close completes, its callback run. */
static voter_ops_t owing_ops;
static int owing_abandoned;
static int owing_owes(const voter_t *v) {
  (void)v;
  return !owing_abandoned;
}
static unsigned owing_owed(const voter_t *v) {
  (void)v;
  return owing_abandoned ? 0 : 1;
}
static void owing_abandon(voter_t *v) {
  owing_abandoned = 1;
  fake_voter_ops.abandon(v);
}

static engine_config_t closing_plain = {0};
static void test_close_out_of_time(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  engine_release(e, lock);
  owing_ops = fake_voter_ops;
  owing_ops.owes_releases = owing_owes;
  owing_ops.releases_owed = owing_owed;
  owing_ops.abandon = owing_abandon;
  owing_abandoned = 0;
  f->m[0].voter.ops = &owing_ops;
  uint64_t bound_ms = client_close_bound_ms(&e->client->opts);
  assert_int_equal(bound_ms, CLIENT_CLOSE_MIN_MS);
  engine_fx_begin_close(e);
  fake_advance_ms(bound_ms - 1);
  assert_int_equal(e->closed, 0); /* still waiting for master 0 */
  assert_int_equal(owing_abandoned, 0);
  fake_advance_ms(1);
  fake_pump();
  assert_int_equal(owing_abandoned, 1);
  assert_int_equal(e->closed, 1);
  engine_close(e);
}

/* A close that its masters keep waiting while they answer other work (a
 * release then waits its turn rather than times out), with more locks held
 * than its window: at its bound the warning counts the locks whose release
 * never went out, the masters are abandoned (here: what they were sent is
 * dropped, as a real connection's teardown does), and those locks' releases
 * go at once; once answered, the close completes. */
static fake_transport_t *abandoned_set;
static voter_ops_t dropping_ops;
static void dropping_abandon(voter_t *v) { fake_drop(abandoned_set, v->index); }

typedef struct {
  char text[1024];
} last_warning_t;

static void keep_warning(int level, const char *msg, void *arg) {
  last_warning_t *w = arg;
  if (level == REDLOCK_LOG_WARN)
    snprintf(w->text, sizeof w->text, "%s", msg);
}

/* A long request timeout: the releases waiting are judged again only a few
 * times before the bound. */
static engine_config_t closing_slow = {.request_ms = 2000};
static void test_close_out_of_time_holding(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  enum { HELD = LOCK_CLOSE_WINDOW + 3 };
  char name[32];
  for (unsigned i = 0; i < HELD; i++) {
    snprintf(name, sizeof name, "r%u", i);
    (void)engine_acquire(e, name, TTL_MS);
  }
  abandoned_set = f;
  dropping_ops = fake_voter_ops;
  dropping_ops.abandon = dropping_abandon;
  for (unsigned i = 0; i < f->n; i++)
    f->m[i].voter.ops = &dropping_ops;
  last_warning_t warning = {""};
  e->client->log = (log_sink_t){.cb = keep_warning, .arg = &warning, .level = REDLOCK_LOG_WARN};
  uint64_t bound_ms = client_close_bound_ms(&e->client->opts);
  engine_fx_begin_close(e);
  assert_int_equal(fake_outstanding(f, 0), LOCK_CLOSE_WINDOW);
  /* The masters answer something every 500 ms, never the releases. */
  for (uint64_t ms = 0; ms + 500 < bound_ms; ms += 500) {
    for (unsigned i = 0; i < f->n; i++)
      f->m[i].progress_ns = fake_now_ns();
    fake_advance_ms(500);
  }
  assert_int_equal(e->closed, 0);
  assert_string_equal(warning.text, "");
  assert_int_equal(fake_outstanding(f, 0), LOCK_CLOSE_WINDOW);
  for (unsigned i = 0; i < f->n; i++)
    f->m[i].progress_ns = fake_now_ns();
  fake_advance_ms(500);
  if (strstr(warning.text, "not done within its bound") == NULL ||
      strstr(warning.text, ", 3 lock(s) not yet released") == NULL)
    fail_msg("close's warning: \"%s\"", warning.text);
  /* The window's releases dropped; the last three sent at once. */
  assert_int_equal(fake_outstanding_all(f), 3 * f->n);
  assert_int_equal(e->closed, 0);
  while (fake_outstanding_all(f) > 0)
    fake_reply_int_all(f, 1);
  fake_pump(); /* the teardown runs from the loop's wake-up */
  assert_int_equal(e->closed, 1);
  engine_close(e);
}

/* A call inside the client on another thread (redlock_stats, between
 * client_enter and client_leave) when the close ends: the client is closed
 * to new calls, but neither freed nor reported closed until that call has
 * left.  The close runs on a thread of its own (it blocks there). */
static void closer_main(void *arg) {
  engine_fx_t *e = arg;
  engine_fx_begin_close(e);
  for (int step = 0; step < 1000 && !e->closed; step++)
    fake_advance_ms(10);
}

static int client_state(redlock_t *c) {
  uv_mutex_lock(&c->mutex);
  int state = c->queue.state;
  uv_mutex_unlock(&c->mutex);
  return state;
}

static void test_close_waits_for_caller(void **state) {
  engine_fx_t *e = *state;
  redlock_t *c = e->client;
  (void)engine_acquire(e, "r", TTL_MS); /* the close has a release to make first */
  assert_int_equal(client_enter(c), 0);
  uv_thread_t closer;
  assert_int_equal(uv_thread_create(&closer, closer_main, e), 0);
  /* The close's last step marks the client closed, then waits for us. */
  struct timespec pause = {0, 1000000};
  for (int ms = 0; ms < 20000 && client_state(c) != CLIENT_CLOSED; ms++)
    nanosleep(&pause, NULL);
  assert_int_equal(client_state(c), CLIENT_CLOSED);
  char buf[64];
  assert_int_equal(redlock_stats(c, REDLOCK_STATS_JSON, buf, sizeof buf), REDLOCK_ECLOSED);
  assert_int_equal(e->closed, 0);
  client_leave(c);
  assert_int_equal(uv_thread_join(&closer), 0);
  assert_int_equal(e->closed, 1);
  engine_close(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST(test_unlock_outcomes),
      ENGINE_TEST(test_bad_input_and_double_unlock),
      ENGINE_TEST_WITH(test_reentrant_holds, &reentrant),
      ENGINE_TEST_CLOSING(test_close_phases, &retrying),
      ENGINE_TEST(test_close_idle),
      ENGINE_TEST_WITH(test_close_with_holds, &reentrant),
      ENGINE_TEST(test_close_from_callback),
      ENGINE_TEST_CLOSING(test_close_paces_releases, &plain),
      ENGINE_TEST_CLOSING(test_close_out_of_time, &closing_plain),
      ENGINE_TEST_CLOSING(test_close_out_of_time_holding, &closing_slow),
      ENGINE_TEST_CLOSING(test_close_waits_for_caller, &closing_plain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
