/* test_lock_events.c: what an event tells its callback
 * (redlock_options_set_event_cb; api/stats.c's accessors) on a client over
 * the fake masters and the stepped clock of engine_fixture.h: an
 * acquisition's resource, duration, attempts and the votes of its round, a
 * release's, a lost lock's reason; and what each accessor answers for no
 * event or an entry out of range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine_fixture.h"
#include "redlock.h"

#define EV_MAX 16

typedef struct {
  int kind, status;
  char resource[64];
  int64_t duration_us;
  int attempts;
  int nodes;
  char verdict[ENGINE_MASTERS][24];
  int addrs;          /* entries with an address */
  int64_t latency_in; /* redlock_event_node_latency_us of entry 0 */
  int out_of_range_ok;
  const char *detail;
} ev_seen_t;

typedef struct {
  ev_seen_t ev[EV_MAX];
  unsigned n;
} events_t;

/* Copies what the accessors say: the event lives only during the call. */
static void record_event(const redlock_event_t *ev, void *arg) {
  events_t *log = arg;
  int kind = redlock_event_kind(ev);
  if (kind == REDLOCK_EVENT_NODE_UP || kind == REDLOCK_EVENT_NODE_DOWN || log->n == EV_MAX)
    return;
  ev_seen_t *s = &log->ev[log->n++];
  s->kind = kind;
  s->status = redlock_event_status(ev);
  const char *resource = redlock_event_resource(ev);
  snprintf(s->resource, sizeof s->resource, "%s", resource != NULL ? resource : "(none)");
  s->duration_us = redlock_event_duration_us(ev);
  s->attempts = redlock_event_attempts(ev);
  s->nodes = redlock_event_node_count(ev);
  for (int i = 0; i < s->nodes && i < ENGINE_MASTERS; i++) {
    const char *v = redlock_event_node_verdict(ev, i);
    snprintf(s->verdict[i], sizeof s->verdict[i], "%s", v != NULL ? v : "(none)");
    s->addrs += redlock_event_node_addr(ev, i) != NULL;
    assert_non_null(redlock_event_node_detail(ev, i));
  }
  s->latency_in = s->nodes > 0 ? redlock_event_node_latency_us(ev, 0) : -2;
  s->out_of_range_ok = redlock_event_node_addr(ev, s->nodes) == NULL &&
                       redlock_event_node_verdict(ev, -1) == NULL &&
                       redlock_event_node_detail(ev, s->nodes) == NULL &&
                       redlock_event_node_latency_us(ev, s->nodes) == -1;
  s->detail = redlock_event_detail(ev);
}

static engine_fx_t *open_with_events(events_t *log) {
  redlock_options_t *opts = engine_options();
  assert_int_equal(redlock_options_set_event_cb(opts, record_event, log), 0);
  return engine_open(opts);
}

/* An acquisition won at the third yes after 5 ms, then its release. */
static void test_acquire_and_release_events(void **state) {
  (void)state;
  static events_t log;
  memset(&log, 0, sizeof log);
  engine_fx_t *e = open_with_events(&log);
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "orders:42", 10000, 0, &r);
  fake_advance_ms(5);
  fake_reply_ok(f, 0);
  fake_reply_nil(f, 1);
  fake_reply_ok(f, 2);
  fake_reply_ok(f, 3);
  fake_pump();
  assert_int_equal(r.status, REDLOCK_OK);
  assert_int_equal(log.n, 1);
  ev_seen_t *a = &log.ev[0];
  assert_int_equal(a->kind, REDLOCK_EVENT_ACQUIRE);
  assert_int_equal(a->status, REDLOCK_OK);
  assert_string_equal(a->resource, "orders:42");
  assert_int_equal(a->duration_us, 5000);
  assert_int_equal(a->attempts, 1);
  assert_int_equal(a->nodes, ENGINE_MASTERS);
  assert_int_equal(a->addrs, ENGINE_MASTERS);
  assert_string_equal(a->verdict[0], "OK");
  assert_string_equal(a->verdict[1], "refused");
  assert_string_equal(a->verdict[4], "pending"); /* not in when the round was decided */
  assert_int_equal(a->latency_in, -1);           /* the fake masters stamp no reply time */
  assert_true(a->out_of_range_ok);
  fake_reply_ok(f, 4);
  engine_release(e, r.lock);
  assert_int_equal(log.n, 2);
  assert_int_equal(log.ev[1].kind, REDLOCK_EVENT_RELEASE);
  assert_int_equal(log.ev[1].status, REDLOCK_OK);
  assert_string_equal(log.ev[1].resource, "orders:42");
  assert_true(log.ev[1].out_of_range_ok);
  engine_close(e);
}

/* A watched lock found lost: the event names it and says why, and has no
 * round (no votes). */
static void test_lost_event(void **state) {
  (void)state;
  static events_t log;
  memset(&log, 0, sizeof log);
  engine_fx_t *e = open_with_events(&log);
  redlock_lock_t *lock = engine_acquire(e, "held:1", 2000);
  fake_advance_ms(2000); /* its validity spent */
  lost_result_t lost = {0};
  engine_watch(e, lock, &lost);
  assert_int_equal(lost.calls, 1);
  const ev_seen_t *l = NULL;
  for (unsigned k = 0; k < log.n; k++)
    if (log.ev[k].kind == REDLOCK_EVENT_LOST)
      l = &log.ev[k];
  assert_non_null(l);
  assert_int_equal(l->status, lost.reason);
  assert_string_equal(l->resource, "held:1");
  assert_int_equal(l->nodes, 0);
  assert_true(l->out_of_range_ok);
  engine_close(e);
}

/* No event: every accessor answers its "none". */
static void test_accessors_without_event(void **state) {
  (void)state;
  assert_null(redlock_event_resource(NULL));
  assert_int_equal(redlock_event_duration_us(NULL), 0);
  assert_int_equal(redlock_event_attempts(NULL), 0);
  assert_int_equal(redlock_event_node_count(NULL), 0);
  assert_null(redlock_event_node_addr(NULL, 0));
  assert_null(redlock_event_node_verdict(NULL, 0));
  assert_null(redlock_event_node_detail(NULL, 0));
  assert_int_equal(redlock_event_node_latency_us(NULL, 0), -1);
  assert_null(redlock_event_detail(NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_acquire_and_release_events),
      cmocka_unit_test(test_lost_event),
      cmocka_unit_test(test_accessors_without_event),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
