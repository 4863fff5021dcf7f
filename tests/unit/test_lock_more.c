/* test_lock_more.c: what the other test_lock_*.c files leave of lock.c,
 * calls.c and client.c, on a client over fake masters and a stepped clock
 * (engine_fixture.h): a fenced lock's extension (its token travels with
 * it), a wait on a name too long for the channel's stack buffer, reentrant
 * holds among several leases, a call parked until the masters' first
 * connection attempts (cancelled by a close), retry timers libuv refuses,
 * a round deadline timer libuv refuses to start (the next deadline starts
 * it), the blocking calls on a loop the caller runs (EWOULDBLOCK; unlock
 * still releases), redlock_stats, every call in a forked child
 * (EFORKED), and a lock's owner label. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/client.h"
#include "engine_fixture.h"
#include "fault_timebase.h"
#include "unit_support.h"
#include "util/names.h"
#include "voters/notify.h"

#define TTL_MS 10000
#define DRIFT_MS (TTL_MS / 100 + 2)

static engine_config_t reentrant = {.reentrant = 1};
/* Lost attempts are retried (three times) after 50 ms. */
static engine_config_t retry_50ms = {.retry = 1, .retry_count = 3, .retry_delay_ms = 50};

/* Every master refuses the attempt (held by another); the attempt's value
 * is released where it was still out. */
static void refuse(fake_transport_t *f) {
  fake_reply_nil_each(f);
  fake_reply_int_all(f, 0);
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* ---- lock.c ------------------------------------------------------- */

/* A fenced lock's extension sends the lock's token with both its keys (the
 * lock's and the fence counter's), and sets the new validity. */
static void test_fenced_extend(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  lock_result_t r = {0};
  engine_lock(e, "ledger", TTL_MS, 0, &r);
  fake_reply_int_all(f, 41);
  fake_reply_int_all(f, 1); /* the write-back */
  assert_int_equal(r.status, REDLOCK_OK);
  assert_int_equal(redlock_lock_fence(r.lock), 41);
  fake_advance_ms(1000);
  done_result_t d = {0};
  engine_extend(e, r.lock, 2 * TTL_MS, &d);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++) {
    assert_int_equal(fake_outstanding(f, i), 1);
    assert_true(fake_cmd_has(f, i, 0, "EVALSHA"));
    assert_true(fake_cmd_has(f, i, 0, REDLOCK_FENCE_KEY_PREFIX "{ledger}"));
    assert_true(fake_cmd_has(f, i, 0, "$2\r\n41\r\n")); /* the token, last */
    assert_true(fake_cmd_has(f, i, 0, "$5\r\n20000\r\n"));
  }
  fake_advance_ms(2);
  fake_reply_int_all(f, 1);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.status, REDLOCK_OK);
  assert_int_equal(redlock_lock_validity_ms(r.lock), 2 * TTL_MS - 2 - (2 * TTL_MS / 100 + 2));
  assert_int_equal(redlock_lock_fence(r.lock), 41);
  engine_release(e, r.lock);
}

/* A wait on a resource whose channel name does not fit the stack buffer
 * (prefix + 300 bytes): it is still woken by that resource's release. */
static void test_wait_long_name(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  char name[301];
  memset(name, 'w', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  lock_result_t r = {0};
  engine_lock(e, name, TTL_MS, 5000, &r);
  refuse(f);
  fake_advance_ms(10);
  assert_int_equal(fake_outstanding_all(f), 0);
  /* engine_announce's buffer is too short for this channel's name */
  char channel[sizeof NOTIFY_CHANNEL_PREFIX + sizeof name + 2];
  int len = snprintf(channel, sizeof channel, "%s{%s}", NOTIFY_CHANNEL_PREFIX, name);
  assert_int_equal(len, sizeof NOTIFY_CHANNEL_PREFIX - 1 + sizeof name - 1 + 2);
  channel[len - 2] = 'x'; /* another name, as long: wakes nobody */
  notify_announce(&e->client->notify, channel, (size_t)len, NULL, 0);
  fake_pump();
  assert_int_equal(fake_outstanding_all(f), 0);
  channel[len - 2] = 'w';
  notify_announce(&e->client->notify, channel, (size_t)len, NULL, 0);
  fake_pump();
  assert_int_equal(fake_outstanding(f, 0), 1); /* at once, not at the fallback */
  fake_reply_ok_all(f);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  engine_release(e, r.lock);
}

/* With several leases held, a reentrant call finds its own among them (not
 * the first one), and shares it: nothing goes out. */
static void test_reentrant_among_leases(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_lock_t *a = engine_acquire(e, "a", TTL_MS);
  redlock_lock_t *b = engine_acquire(e, "b", TTL_MS);
  redlock_lock_t *c = engine_acquire(e, "c", TTL_MS);
  lock_result_t again = {0};
  engine_lock(e, "b", TTL_MS, 0, &again);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(again.calls, 1);
  assert_int_equal(again.status, REDLOCK_OK);
  assert_ptr_not_equal(again.lock, b);
  assert_string_equal(redlock_lock_value(again.lock), redlock_lock_value(b));
  /* the hold goes without a release; the lease stays */
  done_result_t d = {0};
  assert_int_equal(redlock_unlock_async(e->client, again.lock, on_done, &d), 0);
  fake_pump();
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(d.status, REDLOCK_OK);
  engine_release(e, a);
  engine_release(e, b);
  engine_release(e, c);
}

/* A lock call made before every master has had its first connection
 * attempt waits unsent; a close cancels it (ECANCELED, nothing sent). */
static void test_parked_call_canceled(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  e->client->voters.startup_left = 1; /* one master still connecting */
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 0, &r);
  fake_advance_ms(1000);
  assert_int_equal(fake_outstanding_all(f), 0);
  assert_int_equal(f->m[0].sends, 0);
  assert_int_equal(r.calls, 0);
  engine_fx_begin_close(e);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
  assert_int_equal(f->m[0].sends, 0);
  engine_close(e);
}

/* The retry timer cannot be made, or cannot be started: the call ends with
 * REDLOCK_EIO instead of retrying. */
static void test_retry_timer_refused(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  timer_faults_t *faults = fault_timebase_install(e);
  for (int start = 0; start < 2; start++) {
    if (start)
      faults->fail_starts = 1;
    else
      faults->fail_inits = 1;
    lock_result_t r = {0};
    engine_lock(e, "r", TTL_MS, 0, &r);
    refuse(f);
    assert_int_equal(faults->fail_inits + faults->fail_starts, 0);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, REDLOCK_EIO);
    fake_advance_ms(1000);
    assert_int_equal(fake_outstanding_all(f), 0); /* no retry */
  }
  /* with the timers back, the same call retries */
  lock_result_t r = {0};
  engine_lock(e, "r", TTL_MS, 0, &r);
  refuse(f);
  fake_advance_ms(50);
  assert_int_equal(fake_outstanding(f, 0), 1);
  fake_reply_ok_all(f);
  assert_int_equal(r.status, REDLOCK_OK);
  engine_release(e, r.lock);
}

/* ---- client.c ----------------------------------------------------- */

/* Log lines that contain `needle`, counted by a log sink put in place of
 * the fixture's. */
typedef struct {
  const char *needle;
  unsigned seen;
} log_count_t;

static void count_log(int level, const char *msg, void *arg) {
  log_count_t *lc = arg;
  (void)level;
  lc->seen += strstr(msg, lc->needle) != NULL;
}

/* The round deadline timer cannot be started: that is logged, the round
 * waits on (its masters silent, nothing times it out), and the next
 * deadline armed starts the timer, whose firing times out both rounds, the
 * first late. */
static void test_deadline_timer_refused(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  log_count_t lc = {"cannot arm the deadline timer", 0};
  e->client->log = (log_sink_t){.cb = count_log, .arg = &lc, .level = REDLOCK_LOG_ERROR};
  timer_faults_t *faults = fault_timebase_install(e);
  faults->fail_deadline_starts = 1;
  lock_result_t a = {0};
  engine_lock(e, "a", TTL_MS, 0, &a);
  assert_int_equal(faults->fail_deadline_starts, 0);
  assert_int_equal(lc.seen, 1);
  assert_int_equal(fake_outstanding(f, 0), 1);
  fake_advance_ms(3 * ENGINE_REQUEST_MS);
  assert_int_equal(a.calls, 0); /* no deadline fired */
  lock_result_t b = {0};
  engine_lock(e, "b", TTL_MS, 0, &b);
  fake_advance_ms(ENGINE_REQUEST_MS + 1);
  assert_int_equal(a.calls, 1);
  assert_int_equal(a.status, REDLOCK_ENOQUORUM);
  assert_int_equal(b.calls, 1);
  assert_int_equal(b.status, REDLOCK_ENOQUORUM);
  assert_int_equal(lc.seen, 1); /* the timer ran since: no more failures */
}

/* ---- calls.c ------------------------------------------------------ */

/* On the loop the caller runs, the blocking calls would wait for
 * themselves: REDLOCK_EWOULDBLOCK, *out NULL.  Unlock still lets go of the
 * lock (released without waiting), and then refuses the stale handle. */
static void test_blocking_calls_on_the_loop(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_t *c = e->client;
  redlock_lock_t *out = (redlock_lock_t *)c;
  assert_int_equal(redlock_lock(c, "r", TTL_MS, &out), REDLOCK_EWOULDBLOCK);
  assert_null(out);
  out = (redlock_lock_t *)c;
  assert_int_equal(redlock_semaphore_acquire(c, "s", 2, TTL_MS, 0, &out), REDLOCK_EWOULDBLOCK);
  assert_null(out);
  assert_int_equal(redlock_semaphore_acquire(c, "s", 2, TTL_MS, 0, NULL), REDLOCK_EINVAL);
  assert_int_equal(fake_outstanding_all(f), 0);
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  assert_int_equal(redlock_extend(c, lock, TTL_MS), REDLOCK_EWOULDBLOCK);
  fake_pump();
  assert_int_equal(fake_outstanding_all(f), 0); /* no extension */
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_EWOULDBLOCK);
  fake_pump();
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    assert_true(fake_cmd_has(f, i, 0, "EVALSHA")); /* released all the same */
  fake_reply_int_all(f, 1);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_EINVAL); /* a stale handle */
  assert_int_equal(redlock_unlock(NULL, lock), REDLOCK_EINVAL);
  fake_pump();
  assert_int_equal(fake_outstanding_all(f), 0);
}

/* redlock_stats: measures, then renders what it measured, in both formats;
 * refuses bad arguments; and once a close has begun, ECLOSED. */
static void test_stats(void **state) {
  engine_fx_t *e = *state;
  redlock_t *c = e->client;
  engine_acquire(e, "r", TTL_MS); /* held: the close below releases it */
  static const int formats[] = {REDLOCK_STATS_PROMETHEUS, REDLOCK_STATS_JSON};
  for (size_t i = 0; i < 2; i++) {
    int len = redlock_stats(c, formats[i], NULL, 0);
    assert_true(len > 0);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(redlock_stats(c, formats[i], buf, (size_t)len + 1), len);
    assert_int_equal(strlen(buf), len);
    assert_non_null(strstr(buf, "acquire"));
    if (formats[i] == REDLOCK_STATS_JSON)
      assert_true(buf[0] == '{' && buf[len - 1] != ',');
    free(buf);
  }
  char small[8];
  assert_int_equal(redlock_stats(NULL, REDLOCK_STATS_JSON, small, sizeof small), REDLOCK_EINVAL);
  assert_int_equal(redlock_stats(c, REDLOCK_STATS_JSON, NULL, 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_stats(c, 0, small, sizeof small), REDLOCK_EINVAL);
  assert_int_equal(redlock_stats(c, 3, small, sizeof small), REDLOCK_EINVAL);
  /* The close releases the lock and waits for the masters: meanwhile the
   * client is still there, and refuses. */
  engine_fx_begin_close(e);
  assert_int_equal(e->closed, 0);
  assert_int_equal(redlock_stats(c, REDLOCK_STATS_JSON, small, sizeof small), REDLOCK_ECLOSED);
  fake_reply_int_all(&e->fake, 1);
  engine_close(e);
}

/* With stats turned off (and no events), redlock_stats is not supported. */
static void test_stats_off(void **state) {
  (void)state;
  redlock_options_t *opts = engine_options();
  assert_int_equal(redlock_options_set_stats(opts, 0), 0);
  engine_fx_t *e = engine_open(opts);
  char buf[64];
  assert_int_equal(redlock_stats(e->client, REDLOCK_STATS_JSON, buf, sizeof buf), REDLOCK_ENOTSUP);
  assert_int_equal(redlock_stats(e->client, REDLOCK_STATS_PROMETHEUS, NULL, 0), REDLOCK_ENOTSUP);
  engine_close(e);
}

static void never_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  (void)term;
  (void)arg;
  fail();
}

static void never_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
  fail();
}

static void never_changed(redlock_observer_t *obs, const redlock_leader_t *view, void *arg) {
  (void)obs;
  (void)view;
  (void)arg;
  fail_msg("an observer's callback in a forked child");
}

/* In a child forked after the client was opened, every call on it refuses
 * with REDLOCK_EFORKED and touches nothing (the parent's client goes on). */
static void test_forked_child(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  redlock_t *c = e->client;
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  fflush(NULL); /* the child exits through exit(), which flushes stdio (and
                 * writes a coverage build's counters) */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    lock_result_t r = {0};
    done_result_t d = {0};
    const char *many[2] = {"x", "y"};
    redlock_lock_t *out;
    redlock_election_t *el;
    int bad = 0;
    bad |= redlock_lock_async(c, "r2", TTL_MS, 0, on_lock, &r) != REDLOCK_EFORKED;
    bad |= redlock_extend_async(c, lock, TTL_MS, on_done, &d) != REDLOCK_EFORKED;
    bad |= redlock_unlock_async(c, lock, on_done, &d) != REDLOCK_EFORKED;
    bad |= redlock_watch(c, lock, on_lost, NULL) != REDLOCK_EFORKED;
    bad |= redlock_lock(c, "r2", TTL_MS, &out) != REDLOCK_EFORKED;
    bad |= redlock_lock_many(c, many, 2, TTL_MS, &out) != REDLOCK_EFORKED;
    bad |= redlock_unlock(c, lock) != REDLOCK_EFORKED;
    bad |= redlock_extend(c, lock, TTL_MS) != REDLOCK_EFORKED;
    bad |= redlock_semaphore_acquire_async(c, "s", 2, TTL_MS, 0, on_lock, &r) != REDLOCK_EFORKED;
    bad |= redlock_rwlock_read(c, "rw", TTL_MS, 0, &out) != REDLOCK_EFORKED;
    bad |= redlock_stats(c, REDLOCK_STATS_JSON, NULL, 0) != REDLOCK_EFORKED;
    bad |= redlock_elect(c, "ldr", TTL_MS, never_elected, never_lost, NULL, &el) != REDLOCK_EFORKED;
    bad |= redlock_resign(c, (redlock_election_t *)&r) != REDLOCK_EFORKED;
    redlock_observer_t *obs;
    redlock_leader_t leader;
    bad |= redlock_election_observe(c, "ldr", 0, never_changed, NULL, &obs) != REDLOCK_EFORKED;
    bad |= redlock_observe_stop(c, (redlock_observer_t *)&r) != REDLOCK_EFORKED;
    bad |= redlock_inspect(c, "r", REDLOCK_INSPECT_LOCK, NULL, 0) != REDLOCK_EFORKED;
    bad |= redlock_revoke(c, "r", NULL) != REDLOCK_EFORKED;
    bad |= redlock_election_leader(c, "ldr", &leader) != REDLOCK_EFORKED;
    bad |= r.calls + d.calls != 0;
    exit(bad ? 1 : 0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(fake_outstanding_all(f), 0);
  engine_release(e, lock); /* the parent's client is untouched */
}

/* The owner label a lock's value carries (redlock_options_set_owner), ""
 * without one; a bounded watch needs a bound. */
static void test_owner_and_bounded_watch(void **state) {
  (void)state;
  redlock_options_t *opts = engine_options();
  assert_int_equal(redlock_options_set_owner(opts, "svc-1"), 0);
  engine_fx_t *e = engine_open(opts);
  redlock_lock_t *lock = engine_acquire(e, "r", TTL_MS);
  assert_string_equal(redlock_lock_owner(lock), "svc-1");
  assert_true(strstr(redlock_lock_value(lock), "~svc-1") != NULL);
  assert_null(redlock_lock_owner(NULL));
  lost_result_t lost = {0};
  assert_int_equal(redlock_watch_bounded(e->client, lock, 0, on_lost, &lost), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch_bounded(e->client, NULL, TTL_MS, on_lost, &lost), REDLOCK_EINVAL);
  assert_int_equal(fake_outstanding_all(&e->fake), 0);
  engine_release(e, lock);
  engine_close(e);

  engine_fx_t *plain = engine_open_default();
  lock = engine_acquire(plain, "r", TTL_MS);
  assert_string_equal(redlock_lock_owner(lock), "");
  engine_release(plain, lock);
  engine_close(plain);
  assert_int_equal(lost.calls, 0);
}

/* A lock on several resources at once (their own script) on a client with
 * its own loop thread, over a master that cannot exist: refused for want
 * of a quorum, *out NULL. */
static void test_lock_many_nowhere(void **state) {
  (void)state;
  redlock_options_t *opts = unit_nowhere_options();
  assert_int_equal(redlock_options_set_retry(opts, 0, 0, 0), 0);
  redlock_t *client = NULL;
  assert_int_equal(redlock_open(&client, opts), 0);
  redlock_options_free(opts);
  const char *many[3] = {"x", "y", "z"};
  redlock_lock_t *out = (redlock_lock_t *)client;
  assert_int_equal(redlock_lock_many(client, many, 3, TTL_MS, &out), REDLOCK_ENOQUORUM);
  assert_null(out);
  redlock_close(client);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ENGINE_TEST_WITH(test_fenced_extend, &engine_fenced),
      ENGINE_TEST_WITH(test_wait_long_name, &retry_50ms),
      ENGINE_TEST_WITH(test_reentrant_among_leases, &reentrant),
      ENGINE_TEST_CLOSING(test_parked_call_canceled, NULL),
      ENGINE_TEST_WITH(test_retry_timer_refused, &retry_50ms),
      ENGINE_TEST(test_deadline_timer_refused),
      ENGINE_TEST(test_blocking_calls_on_the_loop),
      ENGINE_TEST_CLOSING(test_stats, NULL),
      cmocka_unit_test(test_stats_off),
      ENGINE_TEST(test_forked_child),
      cmocka_unit_test(test_lock_many_nowhere),
      cmocka_unit_test(test_owner_and_bounded_watch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
