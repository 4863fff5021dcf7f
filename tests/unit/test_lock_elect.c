/* test_lock_elect.c: leader election (election.c, calls_election.c) on a
 * client over fake masters and a stepped clock (engine_fixture.h): a
 * campaign won on a quorum (the term is the fencing token written back, and
 * announced on the release channel once per term), a
 * campaign refused and woken by a release announcement, the term lost when
 * its watch's extension is refused, the back-off before campaigning again
 * (growing with losses in a row, reset by a stable term), resigning and
 * closing in each state (no callback after either), the validity before,
 * during and after a term, bad arguments, and timers that libuv refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/client.h"
#include "engine_fixture.h"
#include "fault_timebase.h"
#include "redlock_uv.h"
#include "unit_support.h"

#define NAME "ldr"
#define TTL_MS 3000
#define DRIFT_MS (TTL_MS / 100 + 2) /* 32 */
#define RETRY_MS 100                /* the back-off's base and the campaign's fallback poll */

/* Lost attempts are polled again every RETRY_MS (no jitter); the back-off
 * after a lost term starts from RETRY_MS. */
static engine_config_t retry_100ms = {.retry = 1, .retry_count = 0, .retry_delay_ms = RETRY_MS};
/* The longest retry delay: one attempt an hour. */
static engine_config_t retry_hourly = {.retry = 1, .retry_count = 0, .retry_delay_ms = 3600000};

/* ---- what the callbacks saw --------------------------------------- */

typedef struct {
  engine_fx_t *fx;
  redlock_election_t *e;
  int elected, lost;
  uint64_t term;
  int reason;
  int64_t validity_elected, validity_lost; /* redlock_election_validity_ms inside each */
  int order_ok;                            /* every on_elected came after the previous on_lost */
  int resign_in_elected, resign_in_lost;   /* resign from inside the callback */
  int resign_rc;
  unsigned fail_starts_in_lost;     /* timer starts to refuse from inside on_lost */
  timer_faults_t *faults;           /* where to count them (fault_timebase.h) */
  redlock_election_t *resign_other; /* resigned from inside on_elected */
} elect_t;

static void on_elected(redlock_election_t *e, uint64_t term, void *arg);
static void on_elect_lost(redlock_election_t *e, int reason, void *arg);

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  elect_t *r = arg;
  assert_ptr_equal(e, r->e);
  if (r->elected != r->lost)
    r->order_ok = 0;
  r->elected++;
  r->term = term;
  r->validity_elected = redlock_election_validity_ms(e);
  if (r->resign_in_elected)
    r->resign_rc = redlock_resign(r->fx->client, e);
  if (r->resign_other != NULL)
    r->resign_rc = redlock_resign(r->fx->client, r->resign_other);
}

static void on_elect_lost(redlock_election_t *e, int reason, void *arg) {
  elect_t *r = arg;
  assert_ptr_equal(e, r->e);
  r->lost++;
  r->reason = reason;
  r->validity_lost = redlock_election_validity_ms(e);
  if (r->faults != NULL)
    r->faults->fail_starts += r->fail_starts_in_lost;
  if (r->resign_in_lost)
    r->resign_rc = redlock_resign(r->fx->client, e);
}

/* ---- helpers ------------------------------------------------------ */

/* Campaigns for NAME; the loop runs: the first attempt is out. */
static void elect(engine_fx_t *fx, elect_t *r) {
  r->fx = fx;
  r->order_ok = 1;
  assert_int_equal(redlock_elect(fx->client, NAME, TTL_MS, on_elected, on_elect_lost, r, &r->e), 0);
  assert_non_null(r->e);
  fake_pump();
}

/* The campaign's attempt is out on every master, fenced: a quorum grants it
 * with `token` (the others refuse), and the write-back of the token wins. */
static void grant(fake_transport_t *f, long long token) {
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    assert_int_equal(fake_outstanding(f, i), 1);
  assert_true(fake_cmd_has(f, 0, 0, REDLOCK_FENCE_KEY_PREFIX "{" NAME "}"));
  fake_reply_int(f, 0, token);
  fake_reply_int(f, 1, token);
  fake_reply_int(f, 2, token);
  fake_reply_nil(f, 3);
  fake_reply_nil(f, 4);
  assert_true(fake_cmd_has(f, 0, 0, "EVALSHA")); /* the write-back */
  fake_reply_int_all(f, 1);
}

/* A won term's announcement (PUBLISH "granted:TERM" on the key's release
 * channel) is out on every master, and nothing else: answered. */
static void granted_answered(fake_transport_t *f, long long token) {
  char payload[48];
  snprintf(payload, sizeof payload, "granted:%lld", token);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
    assert_int_equal(fake_outstanding(f, i), 1);
    assert_true(fake_cmd_has(f, i, 0, "PUBLISH"));
    assert_true(fake_cmd_has(f, i, 0, REDLOCK_RELEASE_CHANNEL_PREFIX "{" NAME "}"));
    assert_true(fake_cmd_has(f, i, 0, payload));
  }
  fake_reply_int_all(f, 0);
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* grant, and the term begins: its announcement (PUBLISH "granted:TERM" on
 * the key's release channel) goes to every master, and nothing else. */
static void win(fake_transport_t *f, long long token) {
  grant(f, token);
  granted_answered(f, token);
}

/* Every master refuses the attempt (held by another); the attempt's value
 * is released where it was still out. */
static void refuse(fake_transport_t *f) {
  fake_reply_nil_each(f);
  fake_reply_int_all(f, 0);
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* Steps the clock 1 ms at a time until master 0 has a request out (at most
 * limit_ms); returns the ms stepped. */
static unsigned step_until_sent(fake_transport_t *f, unsigned limit_ms) {
  unsigned t = 0;
  while (fake_outstanding(f, 0) == 0 && t < limit_ms) {
    fake_advance_ms(1);
    t++;
  }
  assert_int_equal(fake_outstanding(f, 0), 1);
  return t;
}

/* The lease's renewal goes out when a third of the ttl is left (a little
 * earlier at random). */
static void step_to_renewal(fake_transport_t *f) {
  unsigned t = step_until_sent(f, TTL_MS);
  assert_true(t >= TTL_MS / 2 && t <= TTL_MS - TTL_MS / 3);
  assert_true(fake_cmd_has(f, 0, 0, "EVALSHA"));
}

/* The release of the lease, announced, is out on every master: answered. */
static void release_answered(fake_transport_t *f) {
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    assert_int_equal(fake_outstanding(f, i), 1);
  assert_true(fake_cmd_has(f, 0, 0, "EVALSHA"));
  fake_reply_int_all(f, 1);
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* Leader: the renewal is refused by a quorum (our value is gone): on_lost,
 * then on the next turn the release of what is left. */
static void lose(fake_transport_t *f, elect_t *r) {
  int lost = r->lost;
  step_to_renewal(f);
  fake_reply_int_all(f, 0);
  assert_int_equal(r->lost, lost + 1);
  assert_int_equal(r->reason, REDLOCK_ELOST);
  fake_pump();
  release_answered(f);
}

/* Nothing goes out for a long while (no campaign, no renewal). */
static void silent_for(fake_transport_t *f, unsigned ms) {
  fake_advance_ms(ms);
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* ---- election ----------------------------------------------------- */

/* A quorum grants the fenced attempt: the largest token of the yes votes is
 * written back, and is the term; the validity is the lease's, counted from
 * the start of the attempt.  Resigning releases the lease (announced) and
 * runs no callback. */
static void test_elected_on_quorum(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  assert_int_equal(redlock_election_validity_ms(r.e), 0); /* never leader yet */
  assert_true(fake_cmd_has(f, 0, 0, REDLOCK_FENCE_KEY_PREFIX "{" NAME "}"));
  fake_advance_ms(3);
  fake_reply_int(f, 0, 5);
  fake_reply_nil(f, 1);
  fake_reply_int(f, 2, 7);
  fake_reply_int(f, 3, 6);
  assert_int_equal(r.elected, 0);
  fake_reply_int(f, 4, 4);
  assert_true(fake_cmd_has(f, 0, 0, "7")); /* the write-back of the largest */
  fake_reply_int_all(f, 1);
  assert_int_equal(r.elected, 1);
  assert_int_equal(r.term, 7);
  assert_int_equal(r.validity_elected, TTL_MS - 3 - DRIFT_MS);
  granted_answered(f, 7);
  fake_advance_ms(100);
  assert_int_equal(redlock_election_validity_ms(r.e), TTL_MS - 103 - DRIFT_MS);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  release_answered(f);
  silent_for(f, 2 * TTL_MS); /* no renewal of a lease let go */
  assert_int_equal(r.lost, 0);
  assert_int_equal(redlock_election_validity_ms(NULL), 0);
}

/* A campaign that is refused waits; a release announcement of NAME wakes it
 * at once (before its fallback poll), and another name's does not. */
static void test_campaign_woken_by_release(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  refuse(f);
  fake_advance_ms(RETRY_MS / 2);
  assert_int_equal(fake_outstanding_all(f), 0);
  engine_announce(fx, "other");
  assert_int_equal(fake_outstanding_all(f), 0);
  engine_announce(fx, NAME);
  assert_int_equal(fake_outstanding(f, 0), 1); /* at once, not at the poll */
  win(f, 11);
  assert_int_equal(r.elected, 1);
  assert_int_equal(r.term, 11);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  release_answered(f);
}

/* Refused, and no announcement: the fallback poll campaigns again after
 * the retry delay; won on a later attempt. */
static void test_campaign_polls(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  refuse(f);
  assert_int_equal(step_until_sent(f, 10 * RETRY_MS), RETRY_MS);
  refuse(f);
  assert_int_equal(step_until_sent(f, 10 * RETRY_MS), RETRY_MS);
  win(f, 3);
  assert_int_equal(r.elected, 1);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  release_answered(f);
}

/* The lease's renewal is answered "gone" by a quorum: on_lost (ELOST) once,
 * with no validity left; the rest of the lease is released on the next
 * turn; after the back-off (RETRY_MS with equal jitter) the election
 * campaigns again, and on_elected of the next term comes after on_lost. */
static void test_lost_then_elected_again(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  win(f, 20);
  assert_true(redlock_election_validity_ms(r.e) > 0);
  step_to_renewal(f);
  assert_true(fake_cmd_has(f, 0, 0, "20")); /* the extension carries the term */
  fake_reply_int(f, 0, 0);
  fake_reply_int(f, 1, 0);
  assert_int_equal(r.lost, 0);
  fake_reply_int(f, 2, 0);
  assert_int_equal(r.lost, 1);
  assert_int_equal(r.reason, REDLOCK_ELOST);
  assert_true(r.validity_lost <= 0);
  fake_reply_int(f, 3, 0);
  fake_reply_int(f, 4, 0);
  assert_int_equal(fake_outstanding_all(f), 0); /* the release waits for the next turn */
  fake_pump();
  release_answered(f);
  fake_advance_ms(10);
  assert_int_equal(redlock_election_validity_ms(r.e), -10); /* how long ago the term ended */
  unsigned backoff = 10 + step_until_sent(f, 10 * RETRY_MS);
  assert_true(backoff >= RETRY_MS / 2 && backoff <= RETRY_MS);
  assert_int_equal(r.elected, 1);
  win(f, 21);
  assert_int_equal(r.elected, 2);
  assert_int_equal(r.term, 21);
  assert_true(r.order_ok);
  assert_int_equal(r.lost, 1);
  assert_true(redlock_election_validity_ms(r.e) > 0);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  release_answered(f);
  assert_int_equal(r.lost, 1); /* a resign runs no callback */
}

/* Terms lost in a row double the back-off (RETRY_MS * 2^losses, half of it
 * random); a term that lasted a ttl resets it. */
static void test_backoff_grows_and_resets(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  unsigned base = RETRY_MS;
  for (unsigned loss = 0; loss < 3; loss++) {
    win(f, 30 + loss);
    lose(f, &r); /* held less than a ttl */
    unsigned backoff = step_until_sent(f, 20 * RETRY_MS);
    assert_true(backoff >= base / 2 && backoff <= base);
    base *= 2;
  }
  /* A stable term: renewed once, lost at the next renewal, more than a ttl
   * after its election. */
  win(f, 40);
  step_to_renewal(f);
  fake_reply_int_all(f, 1);
  assert_int_equal(r.lost, 3);
  lose(f, &r);
  unsigned backoff = step_until_sent(f, 20 * RETRY_MS);
  assert_true(backoff >= RETRY_MS / 2 && backoff <= RETRY_MS);
  assert_int_equal(r.elected, 4);
  assert_int_equal(r.lost, 4);
  assert_true(r.order_ok);
  refuse(f);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  silent_for(f, 10 * RETRY_MS);
}

/* The wait budget of a campaign (UINT32_MAX ms) runs out: it campaigns
 * again at once, the same campaign (no callback). */
static void test_campaign_budget_renewed(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    f->m[i].mode = FAKE_SEND_DOWN; /* every attempt fails at once */
  elect(fx, &r);
  unsigned sends = f->m[0].sends;
  assert_true(sends >= 1);
  /* one attempt an hour (the retry delay's maximum), for ~49.7 days */
  fake_advance_ms((uint64_t)UINT32_MAX + 1);
  assert_true(f->m[0].sends > sends + 1000);
  assert_int_equal(r.elected + r.lost, 0);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    f->m[i].mode = FAKE_SEND_OK;
  for (int step = 0; step < 10 && fake_outstanding(f, 0) == 0; step++)
    fake_advance_ns(fake_next_due_in_ns());
  win(f, 50);
  assert_int_equal(r.elected, 1);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  release_answered(f);
}

/* With no retry delay, the back-off still starts from 10 ms. */
static void test_backoff_minimum(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  win(f, 25);
  lose(f, &r);
  unsigned backoff = step_until_sent(f, 10 * RETRY_MS);
  assert_true(backoff >= 5 && backoff <= 10);
  win(f, 26);
  assert_int_equal(r.elected, 2);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  release_answered(f);
}

/* ---- resign ------------------------------------------------------- */

/* Resigned while its attempt is out: the attempt is won but never granted
 * (no on_elected), its value is released, and nothing more goes out.  A
 * second resign is refused. */
static void test_resign_while_campaigning(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  assert_int_equal(redlock_resign(fx->client, r.e), REDLOCK_EINVAL);
  fake_pump();
  fake_reply_int_all(f, 9); /* won */
  assert_int_equal(r.elected, 0);
  assert_false(fake_cmd_has(f, 0, 0, REDLOCK_FENCE_KEY_PREFIX)); /* no write-back: */
  assert_true(fake_cmd_has(f, 0, 0, "EVALSHA"));                 /* the release */
  fake_reply_int_all(f, 1);
  silent_for(f, 10 * RETRY_MS);
  assert_int_equal(r.elected + r.lost, 0);
}

/* Resigned while it waits between attempts: no attempt any more, even when
 * a release is announced. */
static void test_resign_while_waiting(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  refuse(f);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  engine_announce(fx, NAME);
  silent_for(f, 10 * RETRY_MS);
  assert_int_equal(r.elected + r.lost, 0);
}

/* Resigned in the back-off after a loss: it never campaigns again. */
static void test_resign_in_backoff(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  win(f, 60);
  lose(f, &r);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  silent_for(f, 10 * RETRY_MS);
  assert_int_equal(r.elected, 1);
  assert_int_equal(r.lost, 1);
}

/* Resigned from inside on_elected: the call does not block, the lease is
 * released once the callback has returned, and no on_lost follows. */
static void test_resign_inside_on_elected(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {.resign_in_elected = 1, .resign_rc = -1};
  elect(fx, &r);
  win(f, 70);
  assert_int_equal(r.elected, 1);
  assert_int_equal(r.resign_rc, 0);
  fake_pump();
  release_answered(f);
  silent_for(f, 2 * TTL_MS);
  assert_int_equal(r.lost, 0);
}

/* Resigned from inside on_lost: no back-off, no campaign; what is left of
 * the lease is released by the resignation. */
static void test_resign_inside_on_lost(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {.resign_in_lost = 1, .resign_rc = -1};
  elect(fx, &r);
  win(f, 80);
  step_to_renewal(f);
  fake_reply_int_all(f, 0);
  assert_int_equal(r.lost, 1);
  assert_int_equal(r.resign_rc, 0);
  fake_pump();
  release_answered(f);
  silent_for(f, 10 * RETRY_MS);
  assert_int_equal(r.elected, 1);
}

/* Another election resigned from inside on_elected, before the loop took
 * the resignation: its win in the same turn is silent (no on_elected), and
 * its lease goes with the resignation. */
static void test_resign_other_inside_on_elected(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t a = {.fx = fx, .order_ok = 1, .resign_rc = -1};
  elect_t b = {.fx = fx, .order_ok = 1};
  assert_int_equal(redlock_elect(fx->client, "a", TTL_MS, on_elected, on_elect_lost, &a, &a.e), 0);
  assert_int_equal(redlock_elect(fx->client, "b", TTL_MS, on_elected, on_elect_lost, &b, &b.e), 0);
  a.resign_other = b.e;
  fake_pump(); /* both attempts out, "a"'s first on every master */
  assert_int_equal(fake_outstanding(f, 0), 2);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++) { /* both granted everywhere */
    fake_reply_int(f, i, 300);
    fake_reply_int(f, i, 200);
  }
  fake_reply_int_all(f, 1); /* "a"'s write-back: elected, it resigns "b" */
  assert_int_equal(a.elected, 1);
  assert_int_equal(a.term, 300);
  assert_int_equal(a.resign_rc, 0);
  fake_reply_int_all(f, 1); /* "b"'s write-back: won, silently */
  assert_int_equal(b.elected, 0);
  /* "a"'s term was announced; "b"'s, resigned already, was not. */
  for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
    assert_int_equal(fake_outstanding(f, i), 1);
    assert_true(fake_cmd_has(f, i, 0, "granted:300"));
  }
  fake_reply_int_all(f, 0);
  assert_int_equal(fake_outstanding_all(f), 0);
  fake_pump(); /* the resignation is taken: "b"'s lease released */
  release_answered(f);
  assert_int_equal(b.elected + b.lost, 0);
  assert_int_equal(redlock_resign(fx->client, a.e), 0);
  fake_pump();
  release_answered(f);
  assert_int_equal(a.lost, 0);
}

/* A close requested (not yet taken by the loop) silences the callbacks at
 * once: a campaign won in the meantime runs no on_elected. */
static void closed_cb(void *arg) { ((engine_fx_t *)arg)->closed++; }

static void test_close_requested_silences(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  fake_reply_int_all(f, 400); /* granted: the write-back goes out */
  fx->closing = 1;
  redlock_close_uv(fx->client, closed_cb, fx); /* the loop has not run since */
  fake_reply_int_all(f, 1);
  assert_int_equal(r.elected, 0);
  fake_pump(); /* the close: the lease is released */
  release_answered(f);
  engine_close(fx);
  assert_int_equal(r.elected + r.lost, 0);
}

/* ---- close -------------------------------------------------------- */

/* Closed while its attempt is out: won, but no on_elected; elect and resign
 * are refused as closed; the close completes with nothing left. */
static void test_close_while_campaigning(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  engine_fx_begin_close(fx);
  redlock_election_t *other = (redlock_election_t *)&r;
  assert_int_equal(redlock_elect(fx->client, NAME, TTL_MS, on_elected, on_elect_lost, &r, &other),
                   REDLOCK_ECLOSED);
  assert_null(other);
  assert_int_equal(redlock_resign(fx->client, r.e), REDLOCK_ECLOSED);
  fake_reply_int_all(f, 9);
  fake_reply_int_all(f, 1);
  engine_close(fx);
  assert_int_equal(r.elected + r.lost, 0);
}

/* Closed while leader: the lease is released (announced), and no on_lost
 * runs, even though the lease is gone. */
static void test_close_while_leader(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  win(f, 90);
  engine_fx_begin_close(fx);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    assert_int_equal(fake_outstanding(f, i), 1);
  assert_true(fake_cmd_has(f, 0, 0, "EVALSHA"));
  fake_reply_int_all(f, 1);
  engine_close(fx);
  assert_int_equal(r.elected, 1);
  assert_int_equal(r.lost, 0);
}

/* Closed in the back-off after a loss: no campaign, the close completes. */
static void test_close_in_backoff(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  win(f, 95);
  lose(f, &r);
  engine_fx_begin_close(fx);
  engine_close(fx);
  assert_int_equal(r.elected, 1);
  assert_int_equal(r.lost, 1);
}

/* A campaign made before every master has had its first connection attempt
 * is parked; closing cancels it without a callback. */
static void test_close_while_parked(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  fx->client->voters.startup_left = 1; /* one master still connecting */
  elect(fx, &r);
  assert_int_equal(fake_outstanding_all(f), 0);
  engine_fx_begin_close(fx);
  engine_close(fx);
  assert_int_equal(r.elected + r.lost, 0);
}

/* ---- arguments ---------------------------------------------------- */

/* Refused at the call, *out NULL: a NULL client, name, callback or out; an
 * empty or oversized name; a ttl of 0, above the max, or too short for any
 * validity after the drift.  Resign: NULL, or not a live election. */
static void test_bad_arguments(void **state) {
  engine_fx_t *fx = *state;
  redlock_t *c = fx->client;
  elect_t r = {0};
  redlock_election_t *out;
  char *huge = malloc(REDLOCK_MAX_RESOURCE_LEN + 2);
  assert_non_null(huge);
  memset(huge, 'n', REDLOCK_MAX_RESOURCE_LEN + 1);
  huge[REDLOCK_MAX_RESOURCE_LEN + 1] = '\0';
  struct {
    redlock_t *client;
    const char *name;
    uint32_t ttl;
    redlock_elected_cb elected;
    redlock_election_lost_cb lost;
  } bad[] = {
      {NULL, NAME, TTL_MS, on_elected, on_elect_lost},
      {c, NULL, TTL_MS, on_elected, on_elect_lost},
      {c, "", TTL_MS, on_elected, on_elect_lost},
      {c, huge, TTL_MS, on_elected, on_elect_lost},
      {c, NAME, TTL_MS, NULL, on_elect_lost},
      {c, NAME, TTL_MS, on_elected, NULL},
      {c, NAME, 0, on_elected, on_elect_lost},
      {c, NAME, UINT32_MAX, on_elected, on_elect_lost},
      {c, NAME, 3, on_elected, on_elect_lost}, /* the drift leaves < 1 ms */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    out = (redlock_election_t *)&r;
    assert_int_equal(redlock_elect(bad[i].client, bad[i].name, bad[i].ttl, bad[i].elected,
                                   bad[i].lost, &r, &out),
                     REDLOCK_EINVAL);
    assert_null(out);
  }
  free(huge);
  assert_int_equal(redlock_elect(c, NAME, TTL_MS, on_elected, on_elect_lost, &r, NULL),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_resign(NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_resign(c, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_resign(c, (redlock_election_t *)&r), REDLOCK_EINVAL);
  assert_int_equal(fake_outstanding_all(&fx->fake), 0);
  /* The shortest ttl that leaves a validity is taken; resigned before the
   * loop took it, it never campaigns. */
  assert_int_equal(redlock_elect(c, NAME, 4, on_elected, on_elect_lost, &r, &out), 0);
  assert_non_null(out);
  r.e = out;
  assert_int_equal(redlock_resign(c, out), 0);
  silent_for(&fx->fake, 10 * RETRY_MS);
  assert_int_equal(r.elected, 0);
}

/* On a client with its own loop thread (redlock_open, over a master that
 * cannot exist), resign from another thread returns once the loop has taken
 * the resignation: a second one is refused, the close finds nothing, and
 * no callback ran (no attempt can win: the master does not exist). */
static void test_resign_off_the_loop(void **state) {
  (void)state;
  redlock_options_t *opts = unit_nowhere_options();
  redlock_t *client = NULL;
  assert_int_equal(redlock_open(&client, opts), 0);
  redlock_options_free(opts);
  elect_t r = {0};
  assert_int_equal(redlock_elect(client, NAME, TTL_MS, on_elected, on_elect_lost, &r, &r.e), 0);
  assert_int_equal(redlock_resign(client, r.e), 0);
  assert_int_equal(redlock_resign(client, r.e), REDLOCK_EINVAL);
  redlock_close(client);
  assert_int_equal(r.elected + r.lost, 0);
}

/* ---- timers refused ----------------------------------------------- */

/* The election's timer cannot be made: it never campaigns; a resign still
 * frees it. */
static void test_timer_init_refused(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  timer_faults_t *faults = fault_timebase_install(fx);
  faults->fail_inits = 1;
  elect_t r = {0};
  elect(fx, &r);
  assert_int_equal(faults->fail_inits, 0);
  silent_for(f, 10 * RETRY_MS);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  assert_int_equal(r.elected, 0);
}

/* Won, but the lease's watch timer cannot be made: the lease is released
 * at once (no on_elected: a leader that could not keep its lease is none)
 * and the election campaigns again after a back-off. */
static void test_watch_timer_refused(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  timer_faults_t *faults = fault_timebase_install(fx);
  faults->fail_inits = 1;
  grant(f, 100);
  assert_int_equal(faults->fail_inits, 0);
  assert_int_equal(r.elected, 0);
  release_answered(f);
  unsigned backoff = step_until_sent(f, 10 * RETRY_MS);
  assert_true(backoff >= RETRY_MS / 2 && backoff <= RETRY_MS);
  win(f, 101);
  assert_int_equal(r.elected, 1);
  assert_int_equal(r.term, 101);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  release_answered(f);
}

/* The campaign's retry timer cannot be started: the campaign fails (EIO),
 * and the election campaigns again after a back-off. */
static void test_campaign_timer_refused(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  timer_faults_t *faults = fault_timebase_install(fx);
  faults->fail_starts = 1;
  refuse(f);
  assert_int_equal(faults->fail_starts, 0);
  unsigned backoff = step_until_sent(f, 10 * RETRY_MS);
  assert_true(backoff >= RETRY_MS / 2 && backoff <= RETRY_MS);
  win(f, 110);
  assert_int_equal(r.elected, 1);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  release_answered(f);
}

/* Neither the retry timer nor the back-off's can be started: the election
 * stops campaigning (logged); a resign frees it. */
static void test_backoff_timer_refused(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {0};
  elect(fx, &r);
  timer_faults_t *faults = fault_timebase_install(fx);
  faults->fail_starts = 2;
  refuse(f);
  assert_int_equal(faults->fail_starts, 0);
  silent_for(f, 10 * TTL_MS);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
  assert_int_equal(r.elected + r.lost, 0);
}

/* Lost, and the timer that defers the release cannot be started: the lease
 * is released at once, then the back-off as usual. */
static void test_release_timer_refused(void **state) {
  engine_fx_t *fx = *state;
  fake_transport_t *f = &fx->fake;
  elect_t r = {.fail_starts_in_lost = 1};
  elect(fx, &r);
  r.faults = fault_timebase_install(fx);
  win(f, 120);
  step_to_renewal(f);
  fake_reply_int_all(f, 0);
  assert_int_equal(r.lost, 1);
  assert_int_equal(r.faults->fail_starts, 0);
  release_answered(f); /* out already, before any loop turn */
  unsigned backoff = step_until_sent(f, 10 * RETRY_MS);
  assert_true(backoff >= RETRY_MS / 2 && backoff <= RETRY_MS);
  refuse(f);
  assert_int_equal(redlock_resign(fx->client, r.e), 0);
  fake_pump();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST_WITH(test_elected_on_quorum, &retry_100ms),
      ENGINE_TEST_WITH(test_campaign_woken_by_release, &retry_100ms),
      ENGINE_TEST_WITH(test_campaign_polls, &retry_100ms),
      ENGINE_TEST_WITH(test_lost_then_elected_again, &retry_100ms),
      ENGINE_TEST_WITH(test_backoff_grows_and_resets, &retry_100ms),
      ENGINE_TEST_WITH(test_campaign_budget_renewed, &retry_hourly),
      ENGINE_TEST(test_backoff_minimum),
      ENGINE_TEST_WITH(test_resign_while_campaigning, &retry_100ms),
      ENGINE_TEST_WITH(test_resign_while_waiting, &retry_100ms),
      ENGINE_TEST_WITH(test_resign_in_backoff, &retry_100ms),
      ENGINE_TEST_WITH(test_resign_inside_on_elected, &retry_100ms),
      ENGINE_TEST_WITH(test_resign_inside_on_lost, &retry_100ms),
      ENGINE_TEST_WITH(test_resign_other_inside_on_elected, &retry_100ms),
      ENGINE_TEST_CLOSING(test_close_requested_silences, &retry_100ms),
      ENGINE_TEST_CLOSING(test_close_while_campaigning, &retry_100ms),
      ENGINE_TEST_CLOSING(test_close_while_leader, &retry_100ms),
      ENGINE_TEST_CLOSING(test_close_in_backoff, &retry_100ms),
      ENGINE_TEST_CLOSING(test_close_while_parked, &retry_100ms),
      ENGINE_TEST_WITH(test_bad_arguments, &retry_100ms),
      cmocka_unit_test(test_resign_off_the_loop),
      ENGINE_TEST_WITH(test_timer_init_refused, &retry_100ms),
      ENGINE_TEST_WITH(test_watch_timer_refused, &retry_100ms),
      ENGINE_TEST_WITH(test_campaign_timer_refused, &retry_100ms),
      ENGINE_TEST_WITH(test_backoff_timer_refused, &retry_100ms),
      ENGINE_TEST_WITH(test_release_timer_refused, &retry_100ms),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
