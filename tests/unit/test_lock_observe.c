/* test_lock_observe.c: observers of an election (observe.c,
 * redlock_election_observe and redlock_observe_stop in calls_election.c) on
 * a client over fake masters and a stepped clock (engine_fixture.h).  The
 * masters answer each read as Redis runs inspect.lua (fake_reply_holds);
 * a release or a grant reaches the observer as the notifier's announcement
 * on the election key's channel (engine_announce), as a PUBLISH would.
 *
 * What is asserted: the first view and each change (a hand-off from one
 * leader to the next, nobody, too few answers: unknown), no call when
 * nothing changed, the read again before telling when the holders'
 * counters differ, the next read's time (the poll, the lease's end, the
 * retry delay after an unknown view, an announcement heard during a read),
 * stops (twice, from inside on_change, with a read out, before the start
 * was taken) and closes (with a read out, with a start parked), timers
 * libuv refuses, and the calls' argument errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/client.h"
#include "engine_fixture.h"
#include "fault_timebase.h"

#define NAME "ldr"
#define OWNER_A "0123456789abcdef0123456789abcdef~alice"
#define OWNER_B "fedcba9876543210fedcba9876543210~bob"
#define POLL_MS 10000
#define RETRY_MS 100

static engine_config_t retry_100ms = {.retry = 1, .retry_count = 0, .retry_delay_ms = RETRY_MS};

static const fake_hold_t lease_a = {"", OWNER_A, 3000};
static const fake_hold_t lease_b = {"", OWNER_B, 3000};

/* What on_change was told. */
typedef struct {
  engine_fx_t *e;
  redlock_observer_t *obs;
  int changes;
  redlock_leader_t last;
  int stop_inside; /* redlock_observe_stop from inside on_change */
  int stop_rc;
} seen_t;

static void on_change(redlock_observer_t *obs, const redlock_leader_t *view, void *arg) {
  seen_t *s = arg;
  assert_ptr_equal(obs, s->obs);
  s->changes++;
  s->last = *view;
  if (s->stop_inside)
    s->stop_rc = redlock_observe_stop(s->e->client, obs);
}

/* Observes NAME (asserted accepted); the loop runs: its first read is out. */
static void observe(engine_fx_t *e, uint32_t poll_ms, seen_t *s) {
  s->e = e;
  assert_int_equal(redlock_election_observe(e->client, NAME, poll_ms, on_change, s, &s->obs), 0);
  assert_non_null(s->obs);
  fake_pump();
}

/* Every master with a read out answers the same holds. */
static void reply_all(fake_transport_t *f, const char *counter, const fake_hold_t *hold) {
  for (unsigned i = 0; i < f->n; i++)
    if (fake_outstanding(f, i) > 0)
      fake_reply_holds(f, i, counter, -1, hold, hold != NULL);
}

/* A read is out on every master, of the election's key. */
static void assert_read_out(fake_transport_t *f) {
  for (unsigned i = 0; i < f->n; i++) {
    assert_int_equal(fake_outstanding(f, i), 1);
    assert_true(fake_cmd_has(f, i, 0, "EVALSHA"));
    assert_true(fake_cmd_has(f, i, 0, NAME));
  }
}

/* A leader, the next one after a release (a hand-off), an announcement
 * that changes nothing (no call), then nobody. */
static void test_handoff_and_none(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  seen_t s = {0};
  observe(e, POLL_MS, &s);
  assert_read_out(f);
  reply_all(f, "5", &lease_a);
  assert_int_equal(s.changes, 1);
  assert_int_equal(s.last.state, REDLOCK_LEADER_HELD);
  assert_int_equal(s.last.term, 5);
  assert_int_equal(s.last.ttl_ms, 3000);
  assert_string_equal(s.last.owner, "alice");

  engine_announce(e, NAME);
  assert_read_out(f);
  reply_all(f, "6", &lease_b);
  assert_int_equal(s.changes, 2);
  assert_int_equal(s.last.term, 6);
  assert_string_equal(s.last.owner, "bob");

  engine_announce(e, NAME);
  reply_all(f, "6", &lease_b);
  assert_int_equal(s.changes, 2); /* the same leader: not told again */

  engine_announce(e, NAME);
  reply_all(f, "6", NULL);
  assert_int_equal(s.changes, 3);
  assert_int_equal(s.last.state, REDLOCK_LEADER_NONE);
  assert_int_equal(s.last.term, 0);
  assert_string_equal(s.last.owner, "");

  engine_announce(e, "other"); /* another key's channel: no read */
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), 0);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), REDLOCK_EINVAL); /* stopped already */
  engine_announce(e, NAME);
  fake_advance_ms(2 * POLL_MS);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(s.changes, 3);
}

/* Too few answers: unknown, read again after the retry delay (not the
 * poll); a quorum again: told. */
static void test_unknown_then_retry(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  for (unsigned i = 0; i < 3; i++)
    f->m[i].mode = FAKE_SEND_DOWN;
  seen_t s = {0};
  observe(e, POLL_MS, &s);
  fake_reply_holds(f, 3, "5", -1, &lease_a, 1);
  fake_reply_holds(f, 4, "5", -1, &lease_a, 1);
  assert_int_equal(s.changes, 1);
  assert_int_equal(s.last.state, REDLOCK_LEADER_UNKNOWN);
  for (unsigned i = 0; i < 3; i++)
    f->m[i].mode = FAKE_SEND_OK;
  fake_advance_ms(RETRY_MS - 1);
  assert_int_equal(fake_outstanding_all(f), 0);
  fake_advance_ms(1);
  assert_read_out(f);
  reply_all(f, "5", &lease_a);
  assert_int_equal(s.changes, 2);
  assert_int_equal(s.last.state, REDLOCK_LEADER_HELD);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), 0);
}

/* The next read without an announcement: at the lease's end (its ttl and
 * 1 ms) when that comes before the poll, else at the poll. */
static void test_lease_end_and_poll(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  seen_t s = {0};
  observe(e, 500, &s);
  const fake_hold_t brief = {"", OWNER_A, 50};
  reply_all(f, "5", &brief);
  assert_int_equal(s.last.ttl_ms, 50);
  fake_advance_ms(50);
  assert_int_equal(fake_outstanding_all(f), 0);
  fake_advance_ms(1);
  assert_read_out(f);
  reply_all(f, "5", NULL); /* the lease ended: nobody */
  assert_int_equal(s.changes, 2);
  fake_advance_ms(499);
  assert_int_equal(fake_outstanding_all(f), 0);
  fake_advance_ms(1);
  assert_read_out(f);
  reply_all(f, "5", NULL);
  assert_int_equal(s.changes, 2);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), 0);
}

/* poll_ms 0: the client's retry delay is the poll. */
static void test_poll_defaults_to_retry_delay(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  seen_t s = {0};
  observe(e, 0, &s);
  reply_all(f, "1", NULL);
  fake_advance_ms(RETRY_MS - 1);
  assert_int_equal(fake_outstanding_all(f), 0);
  fake_advance_ms(1);
  assert_read_out(f);
  reply_all(f, "1", NULL);
  assert_int_equal(s.changes, 1);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), 0);
}

/* The holders' counters differ (a fence commit under way): read once more
 * before telling.  Settled then: the term told is the commit's.  Still
 * differing on the second read: told what it saw (the least counter). */
static void test_settling_read(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  seen_t s = {0};
  observe(e, POLL_MS, &s);
  fake_reply_holds(f, 0, "5", -1, &lease_a, 1);
  fake_reply_holds(f, 1, "6", -1, &lease_a, 1);
  fake_reply_holds(f, 2, "6", -1, &lease_a, 1);
  fake_reply_holds(f, 3, "5", -1, NULL, 0);
  fake_reply_holds(f, 4, "5", -1, NULL, 0);
  assert_int_equal(s.changes, 0);
  fake_pump();
  assert_read_out(f);
  reply_all(f, "6", &lease_a);
  assert_int_equal(s.changes, 1);
  assert_int_equal(s.last.term, 6);

  /* Counters that never settle: read again at once, then twice after the
   * retry delay each, then told as they are. */
  engine_announce(e, NAME);
  for (int read = 0; read < 4; read++) {
    if (read >= 2) {
      fake_advance_ms(RETRY_MS - 1);
      assert_int_equal(fake_outstanding_all(f), 0);
      fake_advance_ms(1);
    }
    assert_read_out(f);
    fake_reply_holds(f, 0, "7", -1, &lease_b, 1);
    fake_reply_holds(f, 1, "8", -1, &lease_b, 1);
    fake_reply_holds(f, 2, "8", -1, &lease_b, 1);
    fake_reply_holds(f, 3, "8", -1, NULL, 0);
    fake_reply_holds(f, 4, "8", -1, NULL, 0);
    assert_int_equal(s.changes, read < 3 ? 1 : 2);
    fake_pump();
  }
  assert_int_equal(s.last.term, 7);
  assert_string_equal(s.last.owner, "bob");
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), 0);
}

/* An announcement heard while a read is out asks for one more read after
 * it; several cost one. */
static void test_announce_during_read(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  seen_t s = {0};
  observe(e, POLL_MS, &s);
  engine_announce(e, NAME);
  engine_announce(e, NAME);
  assert_read_out(f); /* still the one read */
  reply_all(f, "5", &lease_a);
  assert_int_equal(s.changes, 1);
  fake_pump();
  assert_read_out(f);
  reply_all(f, "6", &lease_b);
  assert_int_equal(s.changes, 2);
  fake_pump();
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), 0);
}

/* A value whose owner label is longer than an owner may be: cut to
 * REDLOCK_MAX_OWNER bytes. */
static void test_long_owner_cut(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  char value[33 + REDLOCK_MAX_OWNER + 8];
  memcpy(value, OWNER_A, 33);
  memset(value + 33, 'x', REDLOCK_MAX_OWNER + 7);
  value[sizeof value - 1] = '\0';
  const fake_hold_t hold = {"", value, 1000};
  seen_t s = {0};
  observe(e, POLL_MS, &s);
  reply_all(f, "2", &hold);
  assert_int_equal(s.changes, 1);
  assert_int_equal(strlen(s.last.owner), REDLOCK_MAX_OWNER);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), 0);
}

/* Stopped while its read is out: the answers call nobody, and nothing is
 * read again. */
static void test_stop_during_read(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  seen_t s = {0};
  observe(e, POLL_MS, &s);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), 0);
  fake_pump();
  reply_all(f, "5", &lease_a);
  engine_announce(e, NAME);
  fake_advance_ms(2 * POLL_MS);
  assert_int_equal(s.changes, 0);
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* Stopped from inside on_change: accepted, and nothing after it. */
static void test_stop_inside_callback(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  seen_t s = {.stop_inside = 1, .stop_rc = -1};
  observe(e, POLL_MS, &s);
  reply_all(f, "5", &lease_a);
  assert_int_equal(s.changes, 1);
  assert_int_equal(s.stop_rc, 0);
  fake_pump();
  engine_announce(e, NAME);
  fake_advance_ms(2 * POLL_MS);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(s.changes, 1);
}

/* Closed with one observer reading and one waiting: no call after, both
 * freed (the reading one when its read ends), stop refused (ECLOSED). */
static void test_close_with_observers(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  seen_t idle = {0}, reading = {0};
  observe(e, POLL_MS, &idle);
  reply_all(f, "5", &lease_a);
  observe(e, POLL_MS, &reading);
  assert_read_out(f);
  engine_fx_begin_close(e);
  assert_int_equal(redlock_observe_stop(e->client, idle.obs), REDLOCK_ECLOSED);
  engine_close(e);
  assert_int_equal(idle.changes, 1);
  assert_int_equal(reading.changes, 0);
}

/* Made before every master has had its first connection attempt: the start
 * is parked.  One is stopped before the start is taken (freed when it is,
 * nothing sent); another is failed by the close. */
static void test_parked_start(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  e->client->voters.startup_left = 1; /* one master still connecting */
  seen_t stopped = {0}, closed = {0};
  observe(e, POLL_MS, &stopped);
  assert_int_equal(redlock_observe_stop(e->client, stopped.obs), 0);
  fake_pump();
  e->client->voters.startup_left = 0;
  client_loop_started(e->client); /* the start taken after its stop: freed */
  fake_pump();
  assert_int_equal(fake_outstanding_all(f), 0);

  e->client->voters.startup_left = 1;
  observe(e, POLL_MS, &closed);
  engine_fx_begin_close(e);
  assert_int_equal(f->m[0].sends, 0);
  engine_close(e);
  assert_int_equal(stopped.changes + closed.changes, 0);
}

/* libuv refuses the observer's timer: never made (it never reads; a stop
 * frees it), or not started (no next read, a message logged). */
static void test_timer_refused(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  timer_faults_t *faults = fault_timebase_install(e);
  faults->fail_inits = 1;
  seen_t never = {0};
  observe(e, POLL_MS, &never);
  assert_int_equal(faults->fail_inits, 0);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(redlock_observe_stop(e->client, never.obs), 0);

  seen_t once = {0};
  observe(e, POLL_MS, &once);
  faults->fail_starts = 1;
  unsigned logged = e->log_lines;
  reply_all(f, "5", &lease_a);
  assert_int_equal(faults->fail_starts, 0);
  assert_true(e->log_lines > logged);
  assert_int_equal(once.changes, 1);
  fake_advance_ms(2 * POLL_MS);
  assert_int_equal(fake_outstanding_all(f), 0); /* no next read */
  engine_announce(e, NAME);                     /* an announcement still reads */
  assert_read_out(f);
  reply_all(f, "5", &lease_a);
  assert_int_equal(redlock_observe_stop(e->client, once.obs), 0);
}

/* Refused at the call, *out NULL and nothing sent. */
static void test_bad_arguments(void **state) {
  engine_fx_t *e = *state;
  redlock_t *c = e->client;
  seen_t s = {0};
  redlock_observer_t *out = (redlock_observer_t *)&s;
  assert_int_equal(redlock_election_observe(c, NAME, 0, on_change, &s, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_election_observe(NULL, NAME, 0, on_change, &s, &out), REDLOCK_EINVAL);
  assert_null(out);
  out = (redlock_observer_t *)&s;
  assert_int_equal(redlock_election_observe(c, NAME, 0, NULL, &s, &out), REDLOCK_EINVAL);
  assert_null(out);
  assert_int_equal(redlock_election_observe(c, NULL, 0, on_change, &s, &out), REDLOCK_EINVAL);
  assert_int_equal(redlock_election_observe(c, "", 0, on_change, &s, &out), REDLOCK_EINVAL);
  assert_int_equal(redlock_election_observe(c, REDLOCK_RESERVED_PREFIX "x", 0, on_change, &s, &out),
                   REDLOCK_EINVAL);
  assert_null(out);
  assert_int_equal(redlock_observe_stop(NULL, (redlock_observer_t *)&s), REDLOCK_EINVAL);
  assert_int_equal(redlock_observe_stop(c, NULL), REDLOCK_EINVAL);
  assert_int_equal(fake_outstanding_all(&e->fake), 0);
}

/* With a key prefix: the observer reads, and listens on, the prefixed key;
 * a name the prefix makes reserved is refused. */
static void test_key_prefix(void **state) {
  (void)state;
  redlock_options_t *opts = engine_options();
  assert_int_equal(redlock_options_set_key_prefix(opts, "__redlock"), 0);
  engine_fx_t *bad = engine_open(opts);
  seen_t s = {.e = bad};
  assert_int_equal(redlock_election_observe(bad->client, "_x", 0, on_change, &s, &s.obs),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_election_observe(bad->client, "x", 0, on_change, &s, &s.obs), 0);
  fake_pump();
  assert_true(fake_cmd_has(&bad->fake, 0, 0, "__redlockx"));
  engine_announce(bad, "__redlockx"); /* during the read: one more after it */
  reply_all(&bad->fake, NULL, NULL);
  fake_pump();
  assert_int_equal(fake_outstanding(&bad->fake, 0), 1);
  reply_all(&bad->fake, NULL, NULL);
  assert_int_equal(s.changes, 1);
  engine_close(bad);
}

/* A new leader read while a master did not answer: the holders' counters
 * agree, but on a term the missing master may have drawn above them (its
 * fence commit under way elsewhere), so the observer reads once more before
 * it tells, and tells the term of the complete read.  A later read missing
 * a master tells nothing new (the leader was seen): no extra read. */
static void test_fresh_leader_incomplete_read(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  seen_t s = {0};
  observe(e, POLL_MS, &s);
  for (unsigned i = 0; i < 4; i++)
    fake_reply_holds(f, i, "5", -1, &lease_a, 1);
  fake_reply_error(f, 4, "ERR busy");
  assert_int_equal(s.changes, 0);
  fake_pump();
  assert_read_out(f);
  for (unsigned i = 0; i < 5; i++)
    fake_reply_holds(f, i, "6", -1, &lease_a, 1);
  assert_int_equal(s.changes, 1);
  assert_int_equal(s.last.term, 6);

  engine_announce(e, NAME);
  assert_read_out(f);
  for (unsigned i = 0; i < 4; i++)
    fake_reply_holds(f, i, "6", -1, &lease_a, 1);
  fake_reply_error(f, 4, "ERR busy");
  fake_pump();
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(s.changes, 1);
  assert_int_equal(redlock_observe_stop(e->client, s.obs), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST_WITH(test_handoff_and_none, &retry_100ms),
      ENGINE_TEST_WITH(test_unknown_then_retry, &retry_100ms),
      ENGINE_TEST_WITH(test_lease_end_and_poll, &retry_100ms),
      ENGINE_TEST_WITH(test_poll_defaults_to_retry_delay, &retry_100ms),
      ENGINE_TEST_WITH(test_settling_read, &retry_100ms),
      ENGINE_TEST_WITH(test_fresh_leader_incomplete_read, &retry_100ms),
      ENGINE_TEST_WITH(test_announce_during_read, &retry_100ms),
      ENGINE_TEST(test_long_owner_cut),
      ENGINE_TEST(test_stop_during_read),
      ENGINE_TEST(test_stop_inside_callback),
      ENGINE_TEST_CLOSING(test_close_with_observers, NULL),
      ENGINE_TEST_CLOSING(test_parked_start, NULL),
      ENGINE_TEST(test_timer_refused),
      ENGINE_TEST(test_bad_arguments),
      cmocka_unit_test(test_key_prefix),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
