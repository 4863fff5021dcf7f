/* test_link.c: one connection's life cycle (link.c) driven directly, against
 * the in-process mock master (tests/support/mock_master.h) for its I/O and
 * the stepped clock (fake_timebase(), fake_clock.h) for its time: connect
 * and handshake (AUTH, SELECT, an owner's step), a refused or failed
 * handshake step, the connect timeout, the backoff's growth and its reset
 * by a stable connection, the owner's say on retrying, a link that follows
 * another's address, hung detection, the owner's timer, and shutdown in
 * every state.  Time moves only when the test steps it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "conn/link.h"
#include "fake_clock.h"
#include "mock_master.h"
#include "redlock.h"
#include "util/backoff.h"
#include "util/options.h"

#define WAIT_MS 20000 /* bound of a wait on the loop: only a failing test reaches it */
#define TIMEOUT_MS 100
#define MAX_EVENTS 256

typedef struct {
  link_event_t ev;
  link_state_t state;
  int level;
  unsigned failures;
  char what[96];
  char detail[160];
} ev_t;

typedef struct {
  uv_loop_t loop;
  conn_flusher_t flusher;
  jitter_rng_t rng;
  log_sink_t log;
  mock_master_t *mock;
  node_addr_t addr;
  uint32_t connect_timeout_ms;
  link_cfg_t cfg;
  link_t link;
  int step;             /* the owner adds a PING step */
  const char *reject;   /* the PING step's check says this */
  int retry;            /* want_retry's answer */
  unsigned steps;       /* the owner adds this many PING steps (default 1) */
  status_t step_status; /* what the last refused link_step returned (ST_OK: none) */
  size_t ping_elements; /* the PING step's reply: its elements when an array */
  ev_t events[MAX_EVENTS];
  unsigned n_events;
} lt_t;

static void on_event(void *arg, link_t *link, link_event_t ev, int level, const char *what,
                     const char *detail) {
  lt_t *t = arg;
  assert_ptr_equal(link, &t->link);
  if (t->n_events == MAX_EVENTS)
    return;
  ev_t *e = &t->events[t->n_events++];
  e->ev = ev;
  e->state = link->state;
  e->level = level;
  e->failures = link->failures;
  snprintf(e->what, sizeof e->what, "%s", what ? what : "");
  snprintf(e->detail, sizeof e->detail, "%s", detail ? detail : "");
}

static const char *ping_check(void *arg, const redisReply *reply) {
  lt_t *t = arg;
  t->ping_elements = reply != NULL && reply->type == REDIS_REPLY_ARRAY ? reply->elements : 0;
  return t->reject;
}

static status_t handshake(link_t *link, void *arg) {
  lt_t *t = arg;
  for (unsigned i = 0; t->step && i < (t->steps > 0 ? t->steps : 1); i++) {
    status_t st = link_step(link, "PING", ping_check, "PING");
    if (st != ST_OK) {
      t->step_status = st;
      return st;
    }
  }
  return ST_OK;
}

static int want_retry(void *arg) { return ((lt_t *)arg)->retry; }

static void address(lt_t *t, const char *uri) {
  node_addr_clear(&t->addr);
  char err[128];
  assert_int_equal(uri_parse(uri, &t->addr, err, sizeof err), 0);
}

static int setup(void **state) {
  lt_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  assert_int_equal(uv_loop_init(&t->loop), 0);
  fake_clock_init(&t->loop, 1000000000u);
  assert_int_equal(conn_flusher_init(&t->flusher, &t->loop), 0);
  jitter_rng_seed(&t->rng, 7);
  t->log.level = REDLOCK_LOG_DEBUG; /* no callback: formatting paths only */
  t->mock = mock_master_start(&t->loop);
  assert_non_null(t->mock);
  address(t, mock_master_uri(t->mock, NULL, NULL));
  t->connect_timeout_ms = TIMEOUT_MS;
  t->step = 1;
  t->retry = 1;
  t->cfg = (link_cfg_t){
      .addr = &t->addr,
      .tb = fake_timebase(),
      .log = &t->log,
      .connect_timeout_ms = &t->connect_timeout_ms,
      .backoff_base_ms = 25,
      .backoff_cap_ms = 1000,
      .stable_ms = 1000,
      .select_db = 1,
      .handshake = handshake,
      .want_retry = want_retry,
      .event = on_event,
      .arg = t,
  };
  *state = t;
  return 0;
}

static unsigned count(const lt_t *t, link_event_t ev) {
  unsigned n = 0;
  for (unsigned i = 0; i < t->n_events; i++)
    n += t->events[i].ev == ev;
  return n;
}

static const ev_t *last(const lt_t *t, link_event_t ev) {
  for (unsigned i = t->n_events; i-- > 0;)
    if (t->events[i].ev == ev)
      return &t->events[i];
  fail_msg("event %d never came", (int)ev);
  return NULL;
}

typedef struct {
  lt_t *t;
  link_event_t ev;
  unsigned n;
} wait_t;

static int seen(void *arg) {
  wait_t *w = arg;
  return count(w->t, w->ev) >= w->n;
}

static void wait_event(lt_t *t, link_event_t ev, unsigned n) {
  wait_t w = {t, ev, n};
  if (!mock_run_until(&t->loop, seen, &w, WAIT_MS))
    fail_msg("event %d: seen %u times, waited for %u", (int)ev, count(t, ev), n);
}

static int held(void *mock) { return mock_master_held(mock) > 0; }
static int accepted(void *mock) { return mock_master_accepted(mock) > 0; }

static void start(lt_t *t) {
  link_init(&t->link, &t->cfg);
  link_io_t io = {.loop = &t->loop, .flusher = &t->flusher, .tls = NULL, .rng = &t->rng};
  assert_int_equal(link_attach(&t->link, &io), ST_OK);
  link_connect(&t->link);
}

static void shutdown_link(lt_t *t) {
  unsigned closed = count(t, LINK_EV_CLOSED);
  link_shutdown(&t->link);
  link_shutdown(&t->link);                            /* twice: nothing more */
  assert_int_equal(count(t, LINK_EV_CLOSED), closed); /* from the loop, not from inside */
  fake_pump();
  wait_event(t, LINK_EV_CLOSED, closed + 1);
  assert_int_equal(t->link.state, LINK_CLOSED);
  assert_null(t->link.ac);
}

static int teardown(void **state) {
  lt_t *t = *state;
  if (count(t, LINK_EV_CLOSED) == 0)
    shutdown_link(t);
  unsigned events = t->n_events;
  fake_advance_ms(10000); /* nothing of the link is left to fire */
  assert_int_equal(t->n_events, events);
  assert_int_equal(count(t, LINK_EV_CLOSED), 1);
  mock_master_close(t->mock);
  conn_flusher_close(&t->flusher, NULL);
  uv_run(&t->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&t->loop), 0);
  node_addr_clear(&t->addr);
  free(t);
  return 0;
}

/* AUTH, SELECT and the owner's step, pipelined; UP once all are answered. */
static void test_connect_and_handshake(void **state) {
  lt_t *t = *state;
  address(t, mock_master_uri(t->mock, "alice:s3cret", "/3"));
  start(t);
  assert_int_equal(t->link.state, LINK_CONNECTING);
  assert_true(tb_timer_active(&t->link.timer)); /* the connect deadline */
  wait_event(t, LINK_EV_UP, 1);
  assert_int_equal(t->events[0].ev, LINK_EV_CONNECTING);
  assert_int_equal(t->link.state, LINK_UP);
  assert_false(tb_timer_active(&t->link.timer));
  assert_int_equal(t->link.up_ns, fake_now_ns());
  assert_string_equal(link_ip(&t->link), "127.0.0.1");
  assert_true(t->link.has_ip_key);
  assert_string_equal(mock_master_command(t->mock, 0)->argv[0], "AUTH");
  assert_string_equal(mock_master_command(t->mock, 1)->argv[0], "SELECT");
  assert_string_equal(mock_master_command(t->mock, 2)->argv[0], "PING");
  assert_int_equal(link_idle(&t->link), 0);
  link_connect(&t->link); /* only from DOWN: no-op */
  assert_int_equal(count(t, LINK_EV_CONNECTING), 1);
}

/* A step answered with an error, or whose check fails: DOWN (while still
 * CONNECTING, at ERROR) then RETRY (DOWN, no context, backoff running). */
static void handshake_fails(lt_t *t, const char *what, const char *detail) {
  wait_event(t, LINK_EV_RETRY, 1);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_int_equal(down->state, LINK_CONNECTING);
  assert_int_equal(down->level, REDLOCK_LOG_ERROR);
  assert_string_equal(down->what, what);
  assert_string_equal(down->detail, detail);
  const ev_t *retry = last(t, LINK_EV_RETRY);
  assert_int_equal(retry->state, LINK_DOWN);
  assert_int_equal(retry->failures, 1);
  assert_null(t->link.ac);
  assert_true(tb_timer_active(&t->link.timer));
  assert_int_equal(count(t, LINK_EV_UP), 0);
}

static void test_step_refused(void **state) {
  lt_t *t = *state;
  mock_master_on(t->mock, "PING", MOCK_REPLY, "-NOPERM no\r\n", 1);
  start(t);
  handshake_fails(t, "PING refused", "NOPERM no");
  /* the backoff runs out: tried again, and up (the rule was used up) */
  fake_advance_ns(fake_next_due_in_ns());
  wait_event(t, LINK_EV_UP, 1);
  assert_int_equal(count(t, LINK_EV_CONNECTING), 2);
}

static void test_step_check_fails(void **state) {
  lt_t *t = *state;
  t->reject = "PING said the wrong thing";
  start(t);
  handshake_fails(t, "PING said the wrong thing", "");
}

static void test_auth_refused(void **state) {
  lt_t *t = *state;
  address(t, mock_master_uri(t->mock, ":wrong", NULL));
  mock_master_on(t->mock, "AUTH", MOCK_REPLY, "-WRONGPASS bad\r\n", 1);
  start(t);
  handshake_fails(t, "AUTH refused", "WRONGPASS bad");
}

/* The handshake is never answered: the connect timeout fails the attempt. */
static void test_connect_timeout(void **state) {
  lt_t *t = *state;
  mock_master_on(t->mock, "PING", MOCK_HOLD, NULL, 0);
  start(t);
  assert_true(mock_run_until(&t->loop, held, t->mock, WAIT_MS));
  assert_int_equal(count(t, LINK_EV_DOWN), 0);
  fake_advance_ms(TIMEOUT_MS - 1);
  assert_int_equal(count(t, LINK_EV_DOWN), 0);
  fake_advance_ms(1);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_string_equal(down->what, "connect timed out");
  assert_string_equal(down->detail, "no answer within 100 ms");
  assert_int_equal(down->state, LINK_CONNECTING);
  assert_int_equal(count(t, LINK_EV_RETRY), 1);
  /* the held answer to the abandoned attempt changes nothing */
  mock_master_clear_rules(t->mock);
  mock_master_release(t->mock);
  fake_advance_ns(fake_next_due_in_ns());
  wait_event(t, LINK_EV_UP, 1);
}

/* Nothing listens: each attempt is refused, and the backoff doubles from
 * its base up to its cap, half of it jitter; a connection up for less than
 * stable_ms is one more failure, one up longer resets the count. */
static void test_backoff_growth_and_reset(void **state) {
  lt_t *t = *state;
  mock_master_stop_listening(t->mock);
  start(t);
  for (unsigned i = 0; i < 8; i++) {
    wait_event(t, LINK_EV_RETRY, i + 1);
    assert_string_equal(last(t, LINK_EV_DOWN)->what, "cannot connect");
    assert_int_equal(t->link.failures, i + 1);
    uint64_t full = 25u << i < 1000 ? 25u << i : 1000;
    uint64_t due_ms = fake_next_due_in_ns() / 1000000u;
    assert_in_range(due_ms, full - full / 2, full);
    if (i == 7)
      assert_int_equal(mock_master_listen(t->mock), 0); /* the next attempt succeeds */
    fake_advance_ms(due_ms);
  }
  wait_event(t, LINK_EV_UP, 1);
  assert_int_equal(t->link.failures, 8); /* up: not reset yet */
  /* up only moments: one more failure */
  mock_master_drop_all(t->mock);
  wait_event(t, LINK_EV_RETRY, 9);
  assert_string_equal(last(t, LINK_EV_DOWN)->what, "connection lost");
  assert_int_equal(t->link.failures, 9);
  assert_in_range(fake_next_due_in_ns() / 1000000u, 500, 1000);
  fake_advance_ns(fake_next_due_in_ns());
  wait_event(t, LINK_EV_UP, 2);
  /* up stable_ms: the drop resets the count */
  fake_advance_ms(1000);
  mock_master_drop_all(t->mock);
  wait_event(t, LINK_EV_RETRY, 10);
  assert_int_equal(last(t, LINK_EV_DOWN)->failures, 0);
  assert_int_equal(t->link.failures, 1);
  assert_in_range(fake_next_due_in_ns() / 1000000u, 12, 25);
}

/* The owner declines the retry: the link stays DOWN, idle, until asked. */
static void test_owner_declines_retry(void **state) {
  lt_t *t = *state;
  t->retry = 0;
  mock_master_stop_listening(t->mock);
  start(t);
  wait_event(t, LINK_EV_RETRY, 1);
  assert_false(link_idle(&t->link));
  fake_advance_ms(1000);
  assert_int_equal(count(t, LINK_EV_CONNECTING), 1);
  assert_true(link_idle(&t->link));
  assert_int_equal(mock_master_listen(t->mock), 0);
  link_connect(&t->link);
  wait_event(t, LINK_EV_UP, 1);
}

/* No step of its own: up at the owner's first reply (link_replied). */
static void test_up_at_first_reply(void **state) {
  lt_t *t = *state;
  t->step = 0;
  start(t);
  fake_pump();
  assert_true(mock_run_until(&t->loop, accepted, t->mock, WAIT_MS));
  fake_pump();
  assert_int_equal(t->link.state, LINK_CONNECTING);
  link_replied(&t->link);
  assert_int_equal(t->link.state, LINK_UP);
  assert_int_equal(count(t, LINK_EV_UP), 1);
  link_replied(&t->link); /* once */
  assert_int_equal(count(t, LINK_EV_UP), 1);
}

/* A link that follows another's address: none yet, then the other's. */
static void test_ip_from(void **state) {
  lt_t *t = *state;
  link_t other;
  memset(&other, 0, sizeof other);
  t->cfg.ip_from = &other;
  start(t);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_string_equal(down->what, "cannot connect");
  assert_string_equal(down->detail, "the master's host name is not resolved yet");
  snprintf(other.ip, sizeof other.ip, "127.0.0.1");
  fake_advance_ns(fake_next_due_in_ns());
  wait_event(t, LINK_EV_UP, 1);
  assert_string_equal(link_ip(&t->link), "127.0.0.1");
}

/* Requests wait with no reply for the limit: dropped, and reconnected. */
static void test_hung(void **state) {
  lt_t *t = *state;
  start(t);
  wait_event(t, LINK_EV_UP, 1);
  uint64_t since = fake_now_ns();
  assert_int_equal(link_drop_if_silent(&t->link, since, 300 * 1000000u, 2), 0);
  fake_advance_ms(299);
  assert_int_equal(link_drop_if_silent(&t->link, since, 300 * 1000000u, 2), 0);
  fake_advance_ms(1);
  assert_int_equal(link_drop_if_silent(&t->link, since, 300 * 1000000u, 0), 0); /* none wait */
  assert_int_equal(link_drop_if_silent(&t->link, fake_now_ns() + 1, 1, 2), 0);  /* in the future */
  assert_int_equal(link_drop_if_silent(&t->link, since, 300 * 1000000u, 2), 1);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_string_equal(down->what, "master not answering; reconnecting");
  assert_string_equal(down->detail, "no reply for 300 ms with 2 requests waiting");
  assert_int_equal(down->state, LINK_UP);
  assert_int_equal(link_drop_if_silent(&t->link, since, 1, 2), 0); /* not UP */
  fake_advance_ns(fake_next_due_in_ns());
  wait_event(t, LINK_EV_UP, 2);
}

/* The owner's timer runs while UP only. */
static void test_owner_timer(void **state) {
  lt_t *t = *state;
  assert_int_equal(link_arm(&t->link, 5), ST_EINVAL); /* not UP */
  start(t);
  assert_int_equal(link_arm(&t->link, 5), ST_EINVAL);
  wait_event(t, LINK_EV_UP, 1);
  assert_int_equal(link_arm(&t->link, 50), ST_OK);
  fake_advance_ms(49);
  assert_int_equal(count(t, LINK_EV_TIMER), 0);
  fake_advance_ms(1);
  assert_int_equal(count(t, LINK_EV_TIMER), 1);
}

static int up_or_failed(void *arg) {
  const lt_t *t = arg;
  return count(t, LINK_EV_UP) > 0 || count(t, LINK_EV_DOWN) > 1;
}

/* A host name: looked up off the loop; the connect timeout while the lookup
 * is out fails the attempt, and the lookup is kept for the next. */
static void test_host_name(void **state) {
  lt_t *t = *state;
  char uri[64];
  snprintf(uri, sizeof uri, "redis://localhost:%d", mock_master_port(t->mock));
  address(t, uri);
  start(t);
  assert_true(t->link.named);
  assert_non_null(t->link.resolving);
  /* No loop turn: the lookup's answer, even if its thread has one, waits. */
  fake_advance_timers_only_ms(TIMEOUT_MS);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_string_equal(down->what, "name lookup timed out after 100 ms");
  t->connect_timeout_ms = WAIT_MS;
  fake_advance_ns(fake_next_due_in_ns());
  assert_int_equal(count(t, LINK_EV_CONNECTING), 2);
  /* localhost may be ::1 first, where the mock does not listen: it goes on
   * to the next address; either way the lookup came back and it connects */
  assert_true(mock_run_until(&t->loop, up_or_failed, t, WAIT_MS));
  assert_null(t->link.resolving);
}

/* A link with no handshake step at all (no credentials, no database, no
 * step of the owner's) is up once its owner says a reply came; a step
 * queued with no attempt under way is refused. */
static void test_no_handshake_step(void **state) {
  lt_t *t = *state;
  t->cfg.handshake = NULL;
  link_init(&t->link, &t->cfg);
  assert_int_equal(link_step(&t->link, "PING", ping_check, "PING"), ST_EIO);
  start(t);
  assert_true(mock_run_until(&t->loop, accepted, t->mock, WAIT_MS));
  assert_int_equal(t->link.state, LINK_CONNECTING);
  assert_non_null(t->link.ac);
  assert_int_equal(t->link.n_steps, 0);
  assert_int_equal(count(t, LINK_EV_UP), 0);
  link_replied(&t->link);
  assert_int_equal(t->link.state, LINK_UP);
  assert_int_equal(count(t, LINK_EV_UP), 1);
  assert_int_equal(mock_master_n_commands(t->mock), 0);
}

/* More steps than an attempt may have: the handshake cannot be queued. */
static void test_too_many_steps(void **state) {
  lt_t *t = *state;
  t->steps = LINK_MAX_STEPS + 1;
  start(t);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_string_equal(down->what, "cannot connect");
  assert_string_equal(down->detail, "cannot queue the handshake");
  assert_int_equal(down->level, REDLOCK_LOG_ERROR);
  assert_int_equal(t->step_status, ST_EINVAL); /* the step past LINK_MAX_STEPS */
}

/* A name that does not resolve fails the attempt. */
static void test_name_not_found(void **state) {
  lt_t *t = *state;
  address(t, "redis://no-such-host.invalid:6379");
  t->connect_timeout_ms = WAIT_MS;
  start(t);
  wait_event(t, LINK_EV_DOWN, 1);
  assert_string_equal(last(t, LINK_EV_DOWN)->what, "cannot resolve its host name");
  assert_null(t->link.resolving);
}

/* The lookup answers after its attempt timed out: the answer is dropped,
 * the next attempt looks the name up afresh. */
static int lookup_back(void *arg) { return ((lt_t *)arg)->link.resolving == NULL; }

static void test_lookup_answers_late(void **state) {
  lt_t *t = *state;
  char uri[64];
  snprintf(uri, sizeof uri, "redis://localhost:%d", mock_master_port(t->mock));
  address(t, uri);
  start(t);
  /* No loop turn before the timeout: a fast lookup would otherwise answer
   * first and the attempt would connect. */
  fake_advance_timers_only_ms(TIMEOUT_MS);
  assert_int_equal(count(t, LINK_EV_RETRY), 1);
  assert_true(mock_run_until(&t->loop, lookup_back, t, WAIT_MS));
  assert_int_equal(t->link.state, LINK_DOWN);
  assert_int_equal(count(t, LINK_EV_CONNECTING), 1);
}

/* rediss:// to the mock, which speaks no TLS: TLS_FAILURE, then DOWN. */
static void test_tls_failure(void **state) {
  lt_t *t = *state;
  link_init(&t->link, &t->cfg); /* (for the teardown, if skipped) */
  struct redlock_options opts;
  options_set_defaults(&opts);
  tls_client_t *tls = NULL;
  char why[256];
  if (tls_client_new(&tls, &opts, why, sizeof why) != 0) {
    options_clear(&opts);
    print_message("skipped: %s\n", why);
    skip();
  }
  options_clear(&opts);
  t->addr.tls = 1;
  link_init(&t->link, &t->cfg);
  link_io_t io = {.loop = &t->loop, .flusher = &t->flusher, .tls = tls, .rng = &t->rng};
  assert_int_equal(link_attach(&t->link, &io), ST_OK);
  link_connect(&t->link);
  wait_event(t, LINK_EV_RETRY, 1);
  assert_true(count(t, LINK_EV_TLS_FAILURE) >= 1);
  assert_int_equal(t->events[1].ev, LINK_EV_TLS_FAILURE);
  shutdown_link(t);
  tls_client_free(tls);
}

/* rediss:// with no TLS context: a failed attempt, not a TLS failure. */
static void test_tls_without_context(void **state) {
  lt_t *t = *state;
  t->addr.tls = 1;
  start(t);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_string_equal(down->detail, "TLS is not set up for this client");
  assert_int_equal(count(t, LINK_EV_TLS_FAILURE), 0);
}

/* A reply past one of conn.h's caps drops the connection, conn_error()
 * saying which (why: a part of it); the link reconnects. */
static void hostile_reply(const char *raw, const char *why) {
  lt_t *t;
  setup((void **)&t);
  start(t);
  wait_event(t, LINK_EV_UP, 1);
  mock_master_send_raw(t->mock, raw);
  wait_event(t, LINK_EV_RETRY, 1);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_string_equal(down->what, "connection lost");
  assert_non_null(strstr(down->detail, why));
  teardown((void **)&t);
}

static void test_hostile_replies(void **state) {
  (void)state;
  hostile_reply("*1025\r\n",
                "protocol error: reply has too many elements (more than 1024 in an aggregate)");
  hostile_reply("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
                "nested" /* hiredis 0.14 refuses depth 8 itself */);
  hostile_reply("*1024\r\n*1024\r\n*1024\r\n*1024\r\n*1024\r\n",
                "protocol error: reply has too many values (more than 4096 in all)");
  hostile_reply("$1048577\r\n", "protocol error: reply longer than 1 MiB");
}

/* A buffer of text, grown as it is written (the test fails when out of memory). */
typedef struct {
  char *s;
  size_t len, cap;
} text_t;

static void put(text_t *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    if ((size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    b->cap = b->cap * 2 + (size_t)n + 1;
    b->s = realloc(b->s, b->cap);
    assert_non_null(b->s);
  }
}

/* CLUSTER SHARDS (RESP2) of three shards, slot s shard s % 3's, every slot a
 * range of its own: 10924 elements in a shard's slots, ~33 000 values. */
static char *interleaved_shards_resp(void) {
  text_t b = {0};
  put(&b, "*3\r\n");
  for (unsigned k = 0; k < 3; k++) {
    unsigned n = (16384 - k + 2) / 3;
    put(&b, "*4\r\n$5\r\nslots\r\n*%u\r\n", 2 * n);
    for (unsigned j = 0; j < n; j++)
      put(&b, ":%u\r\n:%u\r\n", k + 3 * j, k + 3 * j);
    put(&b,
        "$5\r\nnodes\r\n*1\r\n*10\r\n$2\r\nid\r\n$40\r\n%040u\r\n$4\r\nport\r\n:%u\r\n"
        "$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$6\r\nhealth\r\n"
        "$6\r\nonline\r\n",
        k + 1, 7000 + k);
  }
  return b.s;
}

/* A slot map's link (conn_caps_map, as the cluster voter's discovery link
 * has) reads a map of the largest cluster's shape that a master's caps
 * refuse; the master's link refuses it. */
static void test_map_caps(void **state) {
  (void)state;
  char *map = interleaved_shards_resp();
  lt_t *t;
  setup((void **)&t);
  t->cfg.reply_caps = &conn_caps_map;
  mock_master_on(t->mock, "PING", MOCK_REPLY, map, 0);
  start(t);
  wait_event(t, LINK_EV_UP, 1);
  assert_int_equal(count(t, LINK_EV_DOWN), 0);
  assert_int_equal(t->ping_elements, 3);
  teardown((void **)&t);
  setup((void **)&t);
  mock_master_on(t->mock, "PING", MOCK_REPLY, map, 0);
  start(t);
  wait_event(t, LINK_EV_DOWN, 1);
  assert_non_null(strstr(last(t, LINK_EV_DOWN)->detail, "more than 1024 in an aggregate"));
  assert_int_equal(count(t, LINK_EV_UP), 0);
  teardown((void **)&t);
  free(map);
}

/* A hostile slot map is refused by the map caps as a master's reply is by
 * its own (the connection dropped, conn_error() naming the cap). */
static void hostile_map(const char *raw, const char *why) {
  lt_t *t;
  setup((void **)&t);
  t->cfg.reply_caps = &conn_caps_map;
  start(t);
  wait_event(t, LINK_EV_UP, 1);
  mock_master_send_raw(t->mock, raw);
  wait_event(t, LINK_EV_RETRY, 1);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_string_equal(down->what, "connection lost");
  if (strstr(down->detail, why) == NULL)
    fail_msg("want %s in: %s", why, down->detail);
  teardown((void **)&t);
}

static void test_hostile_maps(void **state) {
  (void)state;
  hostile_map("*32769\r\n", "slot map has too many elements (more than 32768 in an aggregate)");
  hostile_map("$8388609\r\n", "slot map longer than 8 MiB");
  hostile_map("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "nested");
  /* 32768 arrays of 32768: refused at the 15th array's header (1 + 32768 +
   * 15 x 32768 values), each array before it full */
  text_t b = {0};
  put(&b, "*32768\r\n");
  for (int a = 0; a < 15; a++) {
    put(&b, "*32768\r\n");
    for (int i = 0; a < 14 && i < 32768; i++)
      put(&b, ":1\r\n");
  }
  hostile_map(b.s, "slot map has too many values (more than 524288 in all)");
  free(b.s);
}

/* ---- a timebase whose timers fail ---- */
static int fail_init, fail_start;
static timebase_ops_t failing_ops;
static timebase_t failing_tb;

static int failing_init(void *arg, tb_timer_t *timer) {
  return fail_init ? UV_ENOMEM : fake_timebase()->ops->init(arg, timer);
}
static int failing_start(void *arg, tb_timer_t *timer, uint64_t ms) {
  return fail_start > 0 && --fail_start == 0 ? UV_EINVAL
                                             : fake_timebase()->ops->start(arg, timer, ms);
}

static void use_failing_timebase(lt_t *t, int init, int start_nth) {
  failing_ops = *fake_timebase()->ops;
  failing_ops.init = failing_init;
  failing_ops.start = failing_start;
  failing_tb = (timebase_t){.ops = &failing_ops, .arg = fake_timebase()->arg};
  fail_init = init;
  fail_start = start_nth;
  t->cfg.tb = &failing_tb;
}

static void test_timer_cannot_be_made(void **state) {
  lt_t *t = *state;
  use_failing_timebase(t, 1, 0);
  link_init(&t->link, &t->cfg);
  link_io_t io = {.loop = &t->loop, .flusher = &t->flusher, .tls = NULL, .rng = &t->rng};
  assert_int_equal(link_attach(&t->link, &io), ST_EIO);
  link_connect(&t->link); /* not attached: nothing */
  assert_int_equal(t->n_events, 0);
  link_shutdown(&t->link); /* no timer to close: CLOSED at once */
  assert_int_equal(count(t, LINK_EV_CLOSED), 1);
}

static void test_connect_timer_cannot_start(void **state) {
  lt_t *t = *state;
  use_failing_timebase(t, 0, 1); /* the connect deadline */
  start(t);
  const ev_t *down = last(t, LINK_EV_DOWN);
  assert_string_equal(down->what, "cannot start the connect timer");
  assert_true(tb_timer_active(&t->link.timer)); /* the backoff runs */
  link_io_t io = {.loop = &t->loop, .flusher = &t->flusher, .tls = NULL, .rng = &t->rng};
  assert_int_equal(link_attach(&t->link, &io), ST_OK); /* again: already attached */
}

static void test_backoff_timer_cannot_start(void **state) {
  lt_t *t = *state;
  use_failing_timebase(t, 0, 2); /* the connect deadline starts, the backoff does not */
  mock_master_stop_listening(t->mock);
  start(t);
  wait_event(t, LINK_EV_RETRY, 1);
  assert_true(link_idle(&t->link)); /* it stays down until asked */
}

static void test_owner_timer_cannot_start(void **state) {
  lt_t *t = *state;
  use_failing_timebase(t, 0, 0);
  start(t);
  wait_event(t, LINK_EV_UP, 1);
  fail_start = 1;
  assert_int_equal(link_arm(&t->link, 5), ST_EIO);
}

/* ---- shutdown in each state: one CLOSED, from the loop, nothing after ---- */

static void test_shutdown_unattached(void **state) {
  lt_t *t = *state;
  link_init(&t->link, &t->cfg);
  shutdown_link(t);
  assert_int_equal(t->n_events, 1);
}

static void test_shutdown_down(void **state) {
  lt_t *t = *state;
  mock_master_stop_listening(t->mock);
  start(t);
  wait_event(t, LINK_EV_RETRY, 1);
  assert_true(tb_timer_active(&t->link.timer));
  shutdown_link(t);
}

static void test_shutdown_connecting(void **state) {
  lt_t *t = *state;
  mock_master_on(t->mock, "PING", MOCK_HOLD, NULL, 0);
  start(t);
  assert_true(mock_run_until(&t->loop, held, t->mock, WAIT_MS));
  assert_non_null(t->link.ac);
  shutdown_link(t);
  assert_int_equal(count(t, LINK_EV_DOWN), 0);
  mock_master_release(t->mock);
}

static void test_shutdown_resolving(void **state) {
  lt_t *t = *state;
  address(t, "redis://localhost:1");
  start(t);
  assert_non_null(t->link.resolving);
  shutdown_link(t);
  assert_null(t->link.resolving);
}

static void test_shutdown_up(void **state) {
  lt_t *t = *state;
  start(t);
  wait_event(t, LINK_EV_UP, 1);
  assert_int_equal(link_arm(&t->link, 50), ST_OK);
  shutdown_link(t);
  link_fail(&t->link, REDLOCK_LOG_WARN, "late", NULL); /* closed: ignored */
  assert_int_equal(count(t, LINK_EV_DOWN), 0);
}

/* link_abandon, then shutdown: still one CLOSED. */
static void test_abandon_then_shutdown(void **state) {
  lt_t *t = *state;
  start(t);
  wait_event(t, LINK_EV_UP, 1);
  link_abandon(&t->link);
  link_abandon(&t->link);
  assert_int_equal(t->link.state, LINK_CLOSED);
  link_connect(&t->link); /* closed: never again */
  assert_int_equal(count(t, LINK_EV_CONNECTING), 1);
  shutdown_link(t);
}

static void test_backoff_ms(void **state) {
  (void)state;
  assert_int_equal(backoff_ms(0, 25, 1000, 0), 13);
  assert_int_equal(backoff_ms(0, 25, 1000, 12), 25);
  assert_int_equal(backoff_ms(10, 25, 1000, 0), 500);
  assert_int_equal(backoff_ms(0, 1, 1000, 99), 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_connect_and_handshake),
      T(test_step_refused),
      T(test_step_check_fails),
      T(test_auth_refused),
      T(test_connect_timeout),
      T(test_backoff_growth_and_reset),
      T(test_owner_declines_retry),
      T(test_up_at_first_reply),
      T(test_ip_from),
      T(test_hung),
      T(test_owner_timer),
      T(test_host_name),
      T(test_no_handshake_step),
      T(test_too_many_steps),
      T(test_name_not_found),
      T(test_lookup_answers_late),
      T(test_tls_failure),
      T(test_tls_without_context),
      cmocka_unit_test(test_hostile_replies),
      cmocka_unit_test(test_map_caps),
      cmocka_unit_test(test_hostile_maps),
      T(test_timer_cannot_be_made),
      T(test_connect_timer_cannot_start),
      T(test_backoff_timer_cannot_start),
      T(test_owner_timer_cannot_start),
      T(test_shutdown_unattached),
      T(test_shutdown_down),
      T(test_shutdown_connecting),
      T(test_shutdown_resolving),
      T(test_shutdown_up),
      T(test_abandon_then_shutdown),
      cmocka_unit_test(test_backoff_ms),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
