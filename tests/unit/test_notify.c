/* test_notify.c: the release-notification subscriber (notify.c) driven
 * directly, against two in-process mock masters: SUBSCRIBE on each master,
 * the wake-up a confirmation gives, waking the right waiter only (lock: the
 * longest waiter, in turn; read-write lock: all; semaphore: one per distinct
 * release), UNSUBSCRIBE when the last waiter leaves, a waiter back while an
 * UNSUBSCRIBE is unconfirmed, resubscribing after the master drops the
 * connection, refused connects, AUTH, a connect timeout, a master whose name
 * is not resolved yet, close with waiters, and shard channels (SUBSCRIBE then
 * SSUBSCRIBE at the slot's node, smessage, SUNSUBSCRIBE then UNSUBSCRIBE, the
 * slot at another node), and a watcher (an election's observer): told of
 * every announcement, a grant's (which wakes no waiter) included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "node_fixture.h"
#include "voters/notify.h"

#define CH1 NOTIFY_CHANNEL_PREFIX "k1"
#define CH2 NOTIFY_CHANNEL_PREFIX "k2"

typedef struct {
  nf_t *f;                /* loop, env, log, and the first mock master */
  mock_master_t *mock[2]; /* mock[0] is f->mock */
  node_addr_t addr2;
  node_t nodes[2];
  notify_t n;
  notify_waiter_t w[3];
  unsigned woken[3];  /* wake-ups per waiter */
  unsigned wakes;     /* in all */
  int unwait_on_wake; /* the owner unregisters a woken waiter */
  int shard_at;       /* shard_via: master 0's channels are shard channels held by nodes[this] */
  int closed;         /* notify_shutdown's callback ran */
  notify_watcher_t watcher;
  unsigned heard; /* the watcher's calls */
} nt_t;

static void on_wake(void *arg, notify_waiter_t *w) {
  nt_t *t = arg;
  ptrdiff_t i = w - t->w;
  assert_true(i >= 0 && i < 3);
  t->woken[i]++;
  t->wakes++;
  if (t->unwait_on_wake)
    notify_unwait(&t->n, w);
}

static void on_closed(void *arg) { ((nt_t *)arg)->closed++; }

static int setup(void **state) {
  void *fs;
  nf_setup(&fs);
  nt_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  t->f = fs;
  t->mock[0] = t->f->mock;
  t->mock[1] = mock_master_start(&t->f->loop);
  assert_non_null(t->mock[1]);
  char err[128];
  assert_int_equal(uri_parse(mock_master_uri(t->mock[1], NULL, NULL), &t->addr2, err, sizeof err),
                   0);
  assert_int_equal(node_init(&t->nodes[0], &t->f->env, 0, &t->f->addr), 0);
  assert_int_equal(node_init(&t->nodes[1], &t->f->env, 1, &t->addr2), 0);
  for (int i = 0; i < 2; i++) /* what the nodes' lookups would have found */
    snprintf(t->nodes[i].link.ip, sizeof t->nodes[i].link.ip, "127.0.0.1");
  notify_init(&t->n, &t->f->env, t->nodes, 2, on_wake, t);
  *state = t;
  return 0;
}

static int nt_closed(void *arg) { return ((nt_t *)arg)->closed; }

static void shutdown_notifier(nt_t *t) {
  notify_shutdown(&t->n, on_closed);
  assert_true(mock_run_until(&t->f->loop, nt_closed, t, NF_WAIT_MS));
  assert_int_equal(t->closed, 1);
}

static int teardown(void **state) {
  nt_t *t = *state;
  if (!t->closed)
    shutdown_notifier(t);
  notify_free(&t->n);
  node_free(&t->nodes[0]);
  node_free(&t->nodes[1]);
  node_addr_clear(&t->addr2);
  mock_master_close(t->mock[1]);
  void *fs = t->f;
  free(t);
  return nf_teardown(&fs);
}

typedef struct {
  nt_t *t;
  int mock;
  const char *command;
  unsigned count;
} until_t;

static int received(void *arg) {
  until_t *u = arg;
  return mock_master_count(u->t->mock[u->mock], u->command) >= u->count;
}

/* Runs the loop until mock `m` has received `count` commands named `command`. */
static void wait_received(nt_t *t, int m, const char *command, unsigned count) {
  until_t u = {t, m, command, count};
  if (!mock_run_until(&t->f->loop, received, &u, NF_WAIT_MS))
    fail_msg("mock %d: %s received %u times, waited for %u", m, command,
             mock_master_count(t->mock[m], command), count);
}

static int accepted(void *arg) {
  until_t *u = arg;
  return mock_master_accepted(u->t->mock[u->mock]) >= u->count;
}

/* Runs the loop until mock `m` has accepted `count` connections in all. */
static void wait_accepted(nt_t *t, int m, unsigned count) {
  until_t u = {.t = t, .mock = m, .count = count};
  if (!mock_run_until(&t->f->loop, accepted, &u, NF_WAIT_MS))
    fail_msg("mock %d: %u connections, waited for %u", m, mock_master_accepted(t->mock[m]), count);
}

static int woken_enough(void *arg) {
  until_t *u = arg;
  return u->t->wakes >= u->count;
}

/* Runs the loop until `count` wake-ups in all. */
static void wait_wakes(nt_t *t, unsigned count) {
  until_t u = {.t = t, .count = count};
  if (!mock_run_until(&t->f->loop, woken_enough, &u, NF_WAIT_MS))
    fail_msg("%u wake-ups, waited for %u", t->wakes, count);
}

static void reset_wakes(nt_t *t) {
  memset(t->woken, 0, sizeof t->woken);
  t->wakes = 0;
}

static int wait_on(nt_t *t, int i, const char *channel, int mode) {
  return notify_wait(&t->n, &t->w[i], channel, strlen(channel), mode);
}

/* Registers waiter i on channel and waits until both masters subscribed it
 * and a confirmation woke the channel's waiters (a release may have slipped
 * in before the subscription); the wake-up counts are then reset. */
static void subscribed(nt_t *t, int i, const char *channel, int mode) {
  unsigned before[2] = {mock_master_count(t->mock[0], "SUBSCRIBE"),
                        mock_master_count(t->mock[1], "SUBSCRIBE")};
  unsigned wakes = t->wakes;
  assert_int_equal(wait_on(t, i, channel, mode), 0);
  wait_received(t, 0, "SUBSCRIBE", before[0] + 1);
  wait_received(t, 1, "SUBSCRIBE", before[1] + 1);
  assert_string_equal(mock_master_last(t->mock[0], "SUBSCRIBE")->argv[1], channel);
  wait_wakes(t, wakes + 1);
  /* the second master's confirmation is under way: a PING through the
   * same connection would be ordered after it, but the subscriber sends
   * none; its confirmation wakes nobody (the channel is confirmed) */
  reset_wakes(t);
  notify_attempt_done(&t->w[i]);
}

/* Publishes on mock m and runs the loop until `count` more wake-ups. */
static void publish(nt_t *t, int m, const char *channel, const char *payload, unsigned count) {
  unsigned wakes = t->wakes;
  /* (a connection the client just dropped may not be closed on the mock's
   * side yet: at least one) */
  assert_true(mock_master_publish(t->mock[m], channel, payload) >= 1);
  wait_wakes(t, wakes + count);
}

/* ---- subscribing and waking ------------------------------------------------------------ */

static void test_subscribe_and_wake(void **state) {
  nt_t *t = *state;
  subscribed(t, 0, CH1, NOTIFY_WAKE_ONE);
  assert_int_equal(mock_master_accepted(t->mock[0]), 1);
  assert_int_equal(mock_master_accepted(t->mock[1]), 1);
  publish(t, 0, CH1, "", 1);
  assert_int_equal(t->woken[0], 1);
  notify_attempt_done(&t->w[0]);
  publish(t, 1, CH1, "", 1); /* the other master announces too */
  assert_int_equal(t->woken[0], 2);
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0); /* registered: left as it is */
  assert_int_equal(mock_master_count(t->mock[0], "SUBSCRIBE"), 1);
}

/* A release on one channel wakes its waiter only; a message for a channel
 * nobody waits on wakes nobody. */
static void test_wake_right_waiter(void **state) {
  nt_t *t = *state;
  subscribed(t, 0, CH1, NOTIFY_WAKE_ONE);
  subscribed(t, 1, CH2, NOTIFY_WAKE_ONE);
  publish(t, 0, CH2, "", 1);
  assert_int_equal(t->woken[1], 1);
  assert_int_equal(t->woken[0], 0);
  /* an unsolicited message for another channel, then one for CH1: once
   * CH1's waiter is woken, the first was read too, and woke nobody */
  mock_master_send_raw(t->mock[0], "*3\r\n$7\r\nmessage\r\n$5\r\nother\r\n$1\r\nx\r\n");
  publish(t, 0, CH1, "", 1);
  assert_int_equal(t->woken[0], 1);
  assert_int_equal(t->woken[1], 1);
  assert_int_equal(t->wakes, 2);
}

/* Waiters 0 and 1 on CH1 in this wake mode, subscribed on master 0 (the
 * second waiter sends nothing: the channel is subscribed already). */
static void two_waiters(nt_t *t, int mode) {
  subscribed(t, 0, CH1, mode);
  assert_int_equal(wait_on(t, 1, CH1, mode), 0);
}

/* A lock's release wakes the longest waiter only; announcements during its
 * attempt wake it again; once its attempt is over the next waiter's turn. */
static void test_wake_one_in_turn(void **state) {
  nt_t *t = *state;
  two_waiters(t, NOTIFY_WAKE_ONE);
  assert_int_equal(mock_master_count(t->mock[0], "SUBSCRIBE"), 1);
  publish(t, 0, CH1, "", 1);
  assert_int_equal(t->woken[0], 1);
  publish(t, 1, CH1, "", 1); /* w0's attempt is out: w0 again */
  assert_int_equal(t->woken[0], 2);
  assert_int_equal(t->woken[1], 0);
  notify_attempt_done(&t->w[0]);
  publish(t, 0, CH1, "", 1);
  assert_int_equal(t->woken[1], 1);
}

static void on_heard(notify_watcher_t *w) {
  nt_t *t = (nt_t *)(void *)((char *)w - offsetof(nt_t, watcher));
  t->heard++;
}

static int heard_enough(void *arg) {
  until_t *u = arg;
  return u->t->heard >= u->count;
}

/* A watcher subscribes the channel by itself; with a lock's waiter beside
 * it, a grant's announcement ("granted:" TERM) is told to the watcher and
 * wakes no waiter, a release is told to both; the watcher's leaving
 * unsubscribes once nobody else listens. */
static void test_watcher_hears_grants(void **state) {
  nt_t *t = *state;
  t->watcher.heard = on_heard;
  assert_int_equal(notify_watch(&t->n, &t->watcher, CH1, strlen(CH1)), 0);
  wait_received(t, 0, "SUBSCRIBE", 1);
  wait_received(t, 1, "SUBSCRIBE", 1);
  until_t u = {.t = t, .count = 1}; /* the confirmation: a read in case one was missed */
  assert_true(mock_run_until(&t->f->loop, heard_enough, &u, NF_WAIT_MS));
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0);
  unsigned heard = t->heard;
  assert_true(mock_master_publish(t->mock[0], CH1, NOTIFY_GRANT_PAYLOAD "42") >= 1);
  u.count = heard + 1;
  assert_true(mock_run_until(&t->f->loop, heard_enough, &u, NF_WAIT_MS));
  publish(t, 1, CH1, "", 1); /* a release: the waiter's turn (the grant, read before, woke none) */
  assert_int_equal(t->woken[0], 1);
  assert_int_equal(t->wakes, 1);
  assert_int_equal(t->heard, heard + 2);
  notify_unwait(&t->n, &t->w[0]);
  assert_int_equal(mock_master_count(t->mock[0], "UNSUBSCRIBE"), 0); /* the watcher listens */
  notify_unwatch(&t->n, &t->watcher);
  assert_null(t->watcher.channel);
  wait_received(t, 0, "UNSUBSCRIBE", 1);
}

/* A read-write lock's release wakes every waiter. */
static void test_wake_all(void **state) {
  nt_t *t = *state;
  two_waiters(t, NOTIFY_WAKE_ALL);
  publish(t, 0, CH1, "", 2);
  assert_int_equal(t->woken[0], 1);
  assert_int_equal(t->woken[1], 1);
}

/* A semaphore: each distinct release wakes one waiter of its own; another
 * master's copy of a release wakes the waiter the first copy woke. */
static void test_wake_each(void **state) {
  nt_t *t = *state;
  two_waiters(t, NOTIFY_WAKE_EACH);
  publish(t, 0, CH1, "permit-1", 1);
  assert_int_equal(t->woken[0], 1);
  t->w[0].in_attempt = 1;
  publish(t, 1, CH1, "permit-1", 1); /* the same release from the other master */
  assert_int_equal(t->woken[0], 2);
  assert_int_equal(t->woken[1], 0);
  publish(t, 0, CH1, "permit-2", 1); /* another release: the idle waiter */
  assert_int_equal(t->woken[1], 1);
  /* both attempts out, w1 already woken: w0 (not yet due to retry) */
  t->w[1].in_attempt = 1;
  t->w[1].woken = 1;
  publish(t, 0, CH1, "permit-3", 1);
  assert_int_equal(t->woken[0], 3);
  /* everyone due to retry anyway: nobody is woken; a release without a
   * payload cannot be told apart (then w0 is due too) */
  t->w[0].woken = 1;
  subscribed(t, 2, CH2, NOTIFY_WAKE_ONE); /* a fence: read after permit-4 */
  assert_int_equal(mock_master_publish(t->mock[0], CH1, "permit-4"), 1);
  publish(t, 0, CH2, "", 1);
  assert_int_equal(t->woken[2], 1);
  assert_int_equal(t->wakes, 1); /* permit-4 woke nobody */
  t->w[0].in_attempt = 0;
  publish(t, 0, CH1, "", 1);
  assert_int_equal(t->woken[0], 1);
  assert_int_equal(t->woken[1], 0);
}

/* A waiter that the owner unregisters from inside its wake-up. */
static void test_unwait_from_wake(void **state) {
  nt_t *t = *state;
  subscribed(t, 0, CH1, NOTIFY_WAKE_ALL);
  t->unwait_on_wake = 1;
  publish(t, 0, CH1, "", 1);
  assert_null(t->w[0].channel);
  wait_received(t, 0, "UNSUBSCRIBE", 1); /* the last waiter left */
  wait_received(t, 1, "UNSUBSCRIBE", 1);
}

/* ---- unsubscribing ----------------------------------------------------------------------- */

static int no_channels(void *arg) { return list_empty(&((nt_t *)arg)->n.channels); }

static void test_unsubscribe_when_last_leaves(void **state) {
  nt_t *t = *state;
  two_waiters(t, NOTIFY_WAKE_ONE);
  notify_unwait(&t->n, &t->w[0]);
  assert_null(t->w[0].channel);
  notify_unwait(&t->n, &t->w[0]); /* not registered: no-op */
  assert_int_equal(mock_master_count(t->mock[0], "UNSUBSCRIBE"), 0);
  notify_unwait(&t->n, &t->w[1]);
  wait_received(t, 0, "UNSUBSCRIBE", 1);
  wait_received(t, 1, "UNSUBSCRIBE", 1);
  assert_string_equal(mock_master_last(t->mock[1], "UNSUBSCRIBE")->argv[1], CH1);
  assert_true(mock_run_until(&t->f->loop, no_channels, t, NF_WAIT_MS)); /* freed when confirmed */
}

/* A waiter comes back while the UNSUBSCRIBE is unconfirmed: SUBSCRIBE again
 * only once it is confirmed (hiredis would drop the new callback). */
static void test_wait_again_while_unsubscribing(void **state) {
  nt_t *t = *state;
  subscribed(t, 0, CH1, NOTIFY_WAKE_ONE);
  mock_master_on(t->mock[0], "UNSUBSCRIBE", MOCK_HOLD, NULL, 1);
  notify_unwait(&t->n, &t->w[0]);
  wait_received(t, 0, "UNSUBSCRIBE", 1);
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0);
  assert_int_equal(mock_master_count(t->mock[0], "SUBSCRIBE"), 1);
  assert_int_equal(mock_master_release(t->mock[0]), 1);
  wait_received(t, 0, "SUBSCRIBE", 2);
  /* and the second master, confirmed at once, was subscribed again too */
  wait_received(t, 1, "SUBSCRIBE", 2);
  wait_wakes(t, 1); /* the new subscription's confirmation */
  notify_attempt_done(&t->w[0]);
  publish(t, 0, CH1, "", 1);
}

/* The last waiter leaves before the subscription is confirmed: the
 * confirmation is answered with an UNSUBSCRIBE. */
static void test_leave_while_subscribing(void **state) {
  nt_t *t = *state;
  mock_master_on(t->mock[0], "SUBSCRIBE", MOCK_HOLD, NULL, 1);
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0);
  wait_received(t, 0, "SUBSCRIBE", 1);
  notify_unwait(&t->n, &t->w[0]);
  assert_int_equal(mock_master_release(t->mock[0]), 1);
  wait_received(t, 0, "UNSUBSCRIBE", 1);
  assert_true(mock_run_until(&t->f->loop, no_channels, t, NF_WAIT_MS));
}

/* ---- shard channels (a cluster voter's SPUBLISH) ------------------------------------ */

/* notify_t.shard_via: master 0 announces on shard channels, held by
 * nodes[shard_at] (its server owns every slot here); master 1 plainly. */
static int shard_via(void *arg, unsigned i, int slot, const node_t **node) {
  nt_t *t = arg;
  (void)slot;
  if (i != 0)
    return 0;
  *node = &t->nodes[t->shard_at];
  return 1;
}

/* Master 0's subscription is made in two steps at the slot's node (a plain
 * SUBSCRIBE, then SSUBSCRIBE), one step in flight; an SPUBLISH's smessage
 * wakes the waiter; the last waiter's leaving ends it in two steps too
 * (SUNSUBSCRIBE, then UNSUBSCRIBE).  Master 1 stays plain.  Then the slot
 * is at the other node: a new waiter's shard subscription goes there. */
static void test_shard_channel(void **state) {
  nt_t *t = *state;
  t->n.shard_via = shard_via;
  t->n.via_arg = t;
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0);
  wait_received(t, 0, "SSUBSCRIBE", 1);
  wait_received(t, 1, "SUBSCRIBE", 1);
  assert_int_equal(mock_master_count(t->mock[0], "SUBSCRIBE"), 1); /* the first step */
  assert_string_equal(mock_master_last(t->mock[0], "SSUBSCRIBE")->argv[1], CH1);
  assert_int_equal(mock_master_count(t->mock[1], "SSUBSCRIBE"), 0);
  wait_wakes(t, 1); /* a confirmation wakes the channel's waiters */
  reset_wakes(t);
  notify_attempt_done(&t->w[0]);
  unsigned wakes = t->wakes;
  assert_true(mock_master_spublish(t->mock[0], CH1, "") >= 1);
  wait_wakes(t, wakes + 1);
  assert_int_equal(t->woken[0], 1);
  notify_attempt_done(&t->w[0]);
  notify_unwait(&t->n, &t->w[0]);
  wait_received(t, 0, "SUNSUBSCRIBE", 1);
  wait_received(t, 0, "UNSUBSCRIBE", 1);
  wait_received(t, 1, "UNSUBSCRIBE", 1);
  assert_true(mock_run_until(&t->f->loop, no_channels, t, NF_WAIT_MS));
  /* The slot now at node 1: master 0's next shard subscription is made
   * there, on a connection of its own beside master 1's plain one. */
  t->shard_at = 1;
  assert_int_equal(wait_on(t, 0, CH2, NOTIFY_WAKE_ONE), 0);
  wait_received(t, 1, "SSUBSCRIBE", 1);
  assert_string_equal(mock_master_last(t->mock[1], "SSUBSCRIBE")->argv[1], CH2);
  assert_int_equal(mock_master_count(t->mock[0], "SSUBSCRIBE"), 1);
  wait_wakes(t, 1);
  reset_wakes(t);
  notify_attempt_done(&t->w[0]);
  wakes = t->wakes;
  assert_true(mock_master_spublish(t->mock[1], CH2, "") >= 1);
  wait_wakes(t, wakes + 1);
  notify_unwait(&t->n, &t->w[0]);
}

/* ---- the subscriber connection ------------------------------------------------------------ */

/* The master drops the connection: the subscriber reconnects with backoff
 * and subscribes again; releases wake the waiter again. */
static void test_resubscribe_after_drop(void **state) {
  nt_t *t = *state;
  subscribed(t, 0, CH1, NOTIFY_WAKE_ONE);
  mock_master_drop_all(t->mock[0]);
  wait_received(t, 0, "SUBSCRIBE", 2);
  assert_int_equal(mock_master_accepted(t->mock[0]), 2);
  assert_int_equal(mock_master_open_conns(t->mock[0]), 1);
  assert_true(nf_logged(t->f, "release notifications unavailable"));
  /* its confirmation wakes nobody: the channel was confirmed (by master 1) */
  publish(t, 0, CH1, "", 1);
  assert_int_equal(t->woken[0], 1);
  /* dropped again and again: the backoff grows, and it still comes back */
  mock_master_close_on_accept(t->mock[0], 1);
  mock_master_drop_all(t->mock[0]);
  wait_accepted(t, 0, 5);
  mock_master_close_on_accept(t->mock[0], 0);
  wait_received(t, 0, "SUBSCRIBE", 3);
}

/* Nothing listens at first: connects are refused and retried. */
static void test_refused_then_listening(void **state) {
  nt_t *t = *state;
  mock_master_stop_listening(t->mock[0]);
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0);
  wait_received(t, 1, "SUBSCRIBE", 1);
  wait_wakes(t, 1); /* master 1 confirmed */
  assert_int_equal(mock_master_listen(t->mock[0]), 0);
  wait_received(t, 0, "SUBSCRIBE", 1);
}

/* Credentials: AUTH first; refused, the subscriber retries. */
static void test_auth(void **state) {
  nt_t *t = *state;
  nf_address(t->f, "bob:pw", NULL, 0);
  node_free(&t->nodes[0]);
  assert_int_equal(node_init(&t->nodes[0], &t->f->env, 0, &t->f->addr), 0);
  snprintf(t->nodes[0].link.ip, sizeof t->nodes[0].link.ip, "127.0.0.1");
  mock_master_on(t->mock[0], "AUTH", MOCK_REPLY, "-WRONGPASS invalid password\r\n", 1);
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0);
  wait_received(t, 0, "AUTH", 2);
  wait_received(t, 0, "SUBSCRIBE", 2);
  const mock_cmd_t *first = mock_master_command(t->mock[0], 0);
  assert_string_equal(first->argv[0], "AUTH");
  assert_string_equal(first->argv[1], "bob");
  assert_true(nf_logged(t->f, "WRONGPASS"));
  wait_wakes(t, 1);
  notify_attempt_done(&t->w[0]);
  publish(t, 0, CH1, "", 1);
}

/* No confirmation within the connect timeout: dropped, tried again. */
static void test_connect_timeout(void **state) {
  nt_t *t = *state;
  t->f->env.connect_timeout_ms = 50;
  mock_master_on(t->mock[0], "SUBSCRIBE", MOCK_HOLD, NULL, 1);
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0);
  wait_received(t, 0, "SUBSCRIBE", 2);
  assert_true(nf_logged(t->f, "(connect timed out"));
  assert_true(mock_master_accepted(t->mock[0]) >= 2);
}

/* The master's name has not been looked up yet: no connection, retried. */
static void test_unresolved_master(void **state) {
  nt_t *t = *state;
  t->nodes[0].link.ip[0] = '\0';
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0);
  assert_int_equal(mock_master_accepted(t->mock[0]), 0);
  assert_true(nf_logged(t->f, "not resolved yet"));
  snprintf(t->nodes[0].link.ip, sizeof t->nodes[0].link.ip, "127.0.0.1");
  wait_received(t, 0, "SUBSCRIBE", 1);
}

/* ---- close ------------------------------------------------------------------------------- */

/* Closed with waiters and live subscriptions: closed() once the handles
 * are, nothing reconnects; notify_free frees what is left. */
static void test_close_with_waiters(void **state) {
  nt_t *t = *state;
  subscribed(t, 0, CH1, NOTIFY_WAKE_ONE);
  assert_int_equal(wait_on(t, 1, CH2, NOTIFY_WAKE_ALL), 0);
  wait_received(t, 0, "SUBSCRIBE", 2);
  shutdown_notifier(t);
  assert_int_equal(t->n.timers_open, 0);
  unsigned accepted = mock_master_accepted(t->mock[0]);
  uv_run(&t->f->loop, UV_RUN_NOWAIT);
  assert_int_equal(mock_master_accepted(t->mock[0]), accepted);
}

/* Closed while connecting (no answer yet) and while a drop's backoff runs. */
static void test_close_while_connecting(void **state) {
  nt_t *t = *state;
  mock_master_on(t->mock[0], "SUBSCRIBE", MOCK_HOLD, NULL, 0);
  mock_master_stop_listening(t->mock[1]);
  assert_int_equal(wait_on(t, 0, CH1, NOTIFY_WAKE_ONE), 0);
  wait_received(t, 0, "SUBSCRIBE", 1);
  shutdown_notifier(t);
}

/* Never used: closed() at once, from inside notify_shutdown. */
static void test_close_unused(void **state) {
  nt_t *t = *state;
  notify_shutdown(&t->n, on_closed);
  assert_int_equal(t->closed, 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_subscribe_and_wake),
      T(test_wake_right_waiter),
      T(test_wake_one_in_turn),
      T(test_wake_all),
      T(test_watcher_hears_grants),
      T(test_wake_each),
      T(test_unwait_from_wake),
      T(test_unsubscribe_when_last_leaves),
      T(test_wait_again_while_unsubscribing),
      T(test_leave_while_subscribing),
      T(test_shard_channel),
      T(test_resubscribe_after_drop),
      T(test_refused_then_listening),
      T(test_auth),
      T(test_connect_timeout),
      T(test_unresolved_master),
      T(test_close_with_waiters),
      T(test_close_while_connecting),
      T(test_close_unused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
