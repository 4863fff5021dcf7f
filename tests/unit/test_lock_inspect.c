/* test_lock_inspect.c: redlock_inspect, redlock_revoke and
 * redlock_election_leader (inspect.c, revoke.c, observe.c's one read, and
 * their public calls in calls.c) on a client over fake masters and a
 * stepped clock (engine_fixture.h).  The masters answer inspect.lua and
 * revoke.lua as Redis would (fake_reply_holds: the script's table).
 *
 * The three calls block their caller until the loop has the answer, so each
 * runs on a thread of its own while the test's thread is the client's loop
 * thread (as a redlock_open client's own thread would be): it pumps the
 * loop, answers the masters and waits, with a deadline, for the call to
 * return.  What is asserted: the JSON view in each case (held by a quorum,
 * on a minority, disagreeing masters, masters that did not answer or run no
 * Lua, semaphores and read-write locks, cut to a small buffer), revoke's
 * rounds (a counter raised above every one seen, raised again when a
 * master reports a larger one, at most REVOKE_MAX_RAISES times; the
 * unfenced write; ENOQUORUM and ENOTSUP), the leader view (held, none,
 * unknown), the calls' argument errors, calls parked until the masters'
 * first attempts and failed by a close, and an observer stopped from
 * another thread than the loop's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "api/client.h"
#include "engine_fixture.h"

#define NAME "ledger"
#define OWNER_A "0123456789abcdef0123456789abcdef~alice"
#define OWNER_B "fedcba9876543210fedcba9876543210~bob"
#define DEADLINE_S 20 /* for a call on the other thread to reach the loop or return */

/* ---- a blocking call on a thread of its own ------------------------------------------- */

typedef enum { CALL_INSPECT, CALL_REVOKE, CALL_LEADER } call_kind_t;

typedef struct {
  engine_fx_t *e;
  call_kind_t what;
  const char *name;
  int kind;    /* REDLOCK_INSPECT_* */
  size_t size; /* of buf given to redlock_inspect */
  char buf[4096];
  uint64_t fence;
  redlock_leader_t leader;
  int rc;
  atomic_int done;
  uv_thread_t thread;
} call_t;

static void call_main(void *arg) {
  call_t *c = arg;
  switch (c->what) {
  case CALL_INSPECT:
    c->rc = redlock_inspect(c->e->client, c->name, c->kind, c->size > 0 ? c->buf : NULL, c->size);
    break;
  case CALL_REVOKE:
    c->rc = redlock_revoke(c->e->client, c->name, &c->fence);
    break;
  case CALL_LEADER:
    c->rc = redlock_election_leader(c->e->client, c->name, &c->leader);
    break;
  }
  atomic_store(&c->done, 1);
}

static int past(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec - start->tv_sec > DEADLINE_S;
}

/* Starts the call and runs the loop until its first round is out on every
 * master that takes requests (`sent` of them), or it returned. */
static void call_start(call_t *c, engine_fx_t *e, unsigned sent) {
  c->e = e;
  atomic_store(&c->done, 0);
  assert_int_equal(uv_thread_create(&c->thread, call_main, c), 0);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (fake_outstanding_all(&e->fake) < sent && !atomic_load(&c->done)) {
    assert_false(past(&start));
    uv_run(&e->loop, UV_RUN_NOWAIT);
  }
}

/* Runs the loop until the call returned; its result. */
static int call_end(call_t *c) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (!atomic_load(&c->done)) {
    assert_false(past(&start));
    uv_run(&c->e->loop, UV_RUN_NOWAIT);
  }
  uv_thread_join(&c->thread);
  return c->rc;
}

/* The client as redlock_open's: the test's thread is its loop thread, so
 * the blocking calls wait on other threads (and refuse on this one). */
static int admin_setup(void **state) {
  engine_setup(state);
  engine_fx_t *e = *state;
  fake_pump(); /* the masters' first attempts are over */
  e->client->run.own_thread = 1;
  e->client->run.thread_id = uv_thread_self();
  return 0;
}

static int admin_teardown(void **state) {
  engine_fx_t *e = *state;
  if (!e->closed)                  /* else freed already */
    e->client->run.own_thread = 0; /* closed as the redlock_open_uv client it is */
  return engine_teardown(state);
}

#define ADMIN_TEST(f) cmocka_unit_test_setup_teardown(f, admin_setup, admin_teardown)

static const fake_hold_t held_a = {"", OWNER_A, 5000};
static const fake_hold_t held_b = {"", OWNER_B, 4000};

/* Every master answers with the holds given (the same on each). */
static void reply_holds_all(fake_transport_t *f, const char *counter, const fake_hold_t *holds,
                            unsigned n) {
  for (unsigned i = 0; i < f->n; i++)
    if (fake_outstanding(f, i) > 0)
      fake_reply_holds(f, i, counter, -1, holds, n);
}

static void assert_has(const char *json, const char *text) {
  if (strstr(json, text) == NULL)
    fail_msg("%s\nhas no %s", json, text);
}

/* ---- redlock_inspect ------------------------------------------------------------------- */

/* Held on every master with the same value: held and agreed, the owner
 * label read from the value, the ttl range and the largest counter. */
static void test_inspect_held(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  call_t c = {.what = CALL_INSPECT, .name = NAME, .kind = REDLOCK_INSPECT_LOCK, .size = 4096};
  call_start(&c, e, ENGINE_MASTERS);
  assert_true(fake_cmd_has(f, 0, 0, "EVALSHA"));
  assert_true(fake_cmd_has(f, 0, 0, NAME));
  fake_hold_t longer = held_a;
  longer.ttl_ms = 5400;
  fake_reply_holds(f, 0, "7", -1, &held_a, 1);
  fake_reply_holds(f, 1, "9", -1, &longer, 1);
  fake_reply_holds(f, 2, "8", -1, &held_a, 1);
  fake_reply_holds(f, 3, "9", -1, &held_a, 1);
  fake_reply_holds(f, 4, NULL, -1, &held_a, 1);
  int rc = call_end(&c);
  assert_int_equal((size_t)rc, strlen(c.buf));
  assert_has(c.buf, "{\"name\":\"" NAME "\",\"kind\":\"lock\",\"held\":true,\"agreed\":true,");
  assert_has(c.buf, "\"value\":\"" OWNER_A "\",\"owner\":\"alice\"");
  assert_has(c.buf, "\"ttl_ms_min\":5000,\"ttl_ms_max\":5400,\"fence\":9,\"quorum\":3,\"count\":1");
  assert_has(c.buf, "{\"addr\":\"m1\",\"state\":\"holds\"");
  assert_has(c.buf, "\"ttl_ms\":5400,\"holds\":1}");
}

/* Held on two masters of five: not held, not agreed; the two are "other",
 * the rest "free", and no counter anywhere: fence null. */
static void test_inspect_minority(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  call_t c = {.what = CALL_INSPECT, .name = NAME, .kind = REDLOCK_INSPECT_LOCK, .size = 4096};
  call_start(&c, e, ENGINE_MASTERS);
  fake_reply_holds(f, 0, NULL, -1, &held_a, 1);
  fake_reply_holds(f, 1, NULL, -1, &held_a, 1);
  for (unsigned i = 2; i < ENGINE_MASTERS; i++)
    fake_reply_holds(f, i, NULL, -1, NULL, 0);
  assert_true(call_end(&c) > 0);
  assert_has(c.buf, "\"held\":false,\"agreed\":false,\"value\":null,\"owner\":null,"
                    "\"ttl_ms_min\":null,\"ttl_ms_max\":null,\"fence\":null");
  assert_has(c.buf, "\"count\":0,\"holders\":[]");
  assert_has(c.buf, "{\"addr\":\"m0\",\"state\":\"other\"");
  assert_has(c.buf, "{\"addr\":\"m4\",\"state\":\"free\",\"value\":null,\"owner\":null,"
                    "\"ttl_ms\":null,\"holds\":0}");
}

/* Three hold A, two hold B (another client's value, no owner label): held
 * by A, not agreed; B's masters are "other". */
static void test_inspect_disagreeing(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  call_t c = {.what = CALL_INSPECT, .name = NAME, .kind = REDLOCK_INSPECT_ELECTION, .size = 4096};
  call_start(&c, e, ENGINE_MASTERS);
  fake_hold_t foreign = {"", "not-ours", 4000};
  for (unsigned i = 0; i < 3; i++)
    fake_reply_holds(f, i, "4", -1, &held_a, 1);
  fake_reply_holds(f, 3, "5", -1, &foreign, 1);
  fake_reply_holds(f, 4, "5", -1, &foreign, 1);
  assert_true(call_end(&c) > 0);
  assert_has(c.buf, "\"kind\":\"election\",\"held\":true,\"agreed\":false,");
  assert_has(c.buf, "\"owner\":\"alice\"");
  assert_has(c.buf, "\"fence\":5");
  assert_has(c.buf, "\"holders\":[{\"value\":\"" OWNER_A "\"");
  assert_has(c.buf, "{\"addr\":\"m3\",\"state\":\"other\",\"value\":\"not-ours\",\"owner\":null");
}

/* Two masters give no view: one's request times out, one answers what is
 * not inspect.lua's shape.  The three that did agree, and are a quorum:
 * held and agreed; the others say why they gave no view. */
static void test_inspect_unanswered(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  call_t c = {.what = CALL_INSPECT, .name = NAME, .kind = REDLOCK_INSPECT_LOCK, .size = 4096};
  call_start(&c, e, ENGINE_MASTERS);
  for (unsigned i = 0; i < 3; i++)
    fake_reply_holds(f, i, "3", -1, &held_a, 1);
  fake_reply_int(f, 3, 1); /* not a table */
  fake_advance_ms(ENGINE_REQUEST_MS);
  assert_true(call_end(&c) > 0);
  fake_drop(f, 4); /* its request, long decided */
  assert_has(c.buf, "\"held\":true,\"agreed\":true,");
  assert_has(c.buf, "{\"addr\":\"m3\",\"state\":\"bad-reply\",\"value\":null");
  assert_has(c.buf, "{\"addr\":\"m4\",\"state\":\"timeout\",\"value\":null,\"owner\":null,"
                    "\"ttl_ms\":null,\"holds\":null}");
}

/* Masters that run no Lua are not sent the read: "unsupported"; with too
 * few answering, nothing is agreed. */
static void test_inspect_no_lua(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  for (unsigned i = 0; i < 3; i++)
    f->m[i].mode = FAKE_SEND_NOLUA;
  call_t c = {.what = CALL_INSPECT, .name = NAME, .kind = REDLOCK_INSPECT_LOCK, .size = 4096};
  call_start(&c, e, 2);
  fake_reply_holds(f, 3, NULL, -1, &held_a, 1);
  fake_reply_holds(f, 4, NULL, -1, &held_a, 1);
  assert_true(call_end(&c) > 0);
  assert_has(c.buf, "\"held\":false,\"agreed\":false,");
  assert_has(c.buf, "{\"addr\":\"m0\",\"state\":\"unsupported\"");
  assert_has(c.buf, "{\"addr\":\"m4\",\"state\":\"other\"");
}

/* A semaphore's slots (their numbers, the counter prefix sent) and a
 * read-write lock's writer and reader. */
static void test_inspect_semaphore_and_rwlock(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  call_t c = {
      .what = CALL_INSPECT, .name = "pool", .kind = REDLOCK_INSPECT_SEMAPHORE, .size = 4096};
  call_start(&c, e, ENGINE_MASTERS);
  assert_true(fake_cmd_has(f, 0, 0, REDLOCK_FENCE_KEY_PREFIX));
  const fake_hold_t slots[] = {{"0", OWNER_A, 900}, {"1", OWNER_B, 800}};
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    fake_reply_holds(f, i, "12", 2, slots, 2);
  assert_true(call_end(&c) > 0);
  assert_has(c.buf, "\"kind\":\"semaphore\",\"held\":true,\"agreed\":true,\"value\":null");
  assert_has(c.buf, "\"count\":2");
  assert_has(c.buf, "\"owner\":\"alice\",\"ttl_ms_min\":900,\"ttl_ms_max\":900,\"slot\":0}");
  assert_has(c.buf, "\"owner\":\"bob\",\"ttl_ms_min\":800,\"ttl_ms_max\":800,\"slot\":1}");
  assert_has(c.buf, "\"ttl_ms\":null,\"holds\":2}");

  call_t rw = {.what = CALL_INSPECT, .name = "doc", .kind = REDLOCK_INSPECT_RWLOCK, .size = 4096};
  call_start(&rw, e, ENGINE_MASTERS);
  const fake_hold_t w[] = {{"w", OWNER_A, 700}};
  const fake_hold_t r[] = {{"r", OWNER_B, 600}};
  for (unsigned i = 0; i < 3; i++)
    fake_reply_holds(f, i, NULL, -1, w, 1);
  for (unsigned i = 3; i < ENGINE_MASTERS; i++)
    fake_reply_holds(f, i, NULL, -1, r, 1);
  assert_true(call_end(&rw) > 0);
  assert_has(rw.buf, "\"kind\":\"rwlock\",\"held\":true,\"agreed\":false");
  assert_has(rw.buf, "\"mode\":\"write\"}");
  assert_false(strstr(rw.buf, "\"mode\":\"read\"") != NULL); /* a minority's */

  call_t rd = {.what = CALL_INSPECT, .name = "doc", .kind = REDLOCK_INSPECT_RWLOCK, .size = 4096};
  call_start(&rd, e, ENGINE_MASTERS);
  reply_holds_all(f, NULL, r, 1);
  assert_true(call_end(&rd) > 0);
  assert_has(rd.buf, "\"mode\":\"read\"}");
}

/* Values any client may have stored read as valid JSON: quotes,
 * backslashes and control bytes escaped.  A buffer too small gets what fits
 * (NUL-terminated) and the whole length; size 0 only measures. */
static void test_inspect_escapes_and_cut(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  const fake_hold_t odd = {"", "a\"b\\c\x01", 100};
  call_t c = {.what = CALL_INSPECT, .name = NAME, .kind = REDLOCK_INSPECT_LOCK, .size = 4096};
  call_start(&c, e, ENGINE_MASTERS);
  reply_holds_all(f, NULL, &odd, 1);
  int whole = call_end(&c);
  assert_has(c.buf, "\"value\":\"a\\\"b\\\\c\\u0001\",\"owner\":null");

  call_t cut = {.what = CALL_INSPECT, .name = NAME, .kind = REDLOCK_INSPECT_LOCK, .size = 16};
  call_start(&cut, e, ENGINE_MASTERS);
  reply_holds_all(f, NULL, &odd, 1);
  assert_int_equal(call_end(&cut), whole);
  assert_int_equal(strlen(cut.buf), 15);
  assert_memory_equal(cut.buf, c.buf, 15);

  call_t measure = {.what = CALL_INSPECT, .name = NAME, .kind = REDLOCK_INSPECT_LOCK, .size = 0};
  call_start(&measure, e, ENGINE_MASTERS);
  reply_holds_all(f, NULL, &odd, 1);
  assert_int_equal(call_end(&measure), whole);
}

/* ---- redlock_revoke -------------------------------------------------------------------- */

/* Answers master i's revoke.lua write (asserting it is one, raising to
 * `fence`) with the counter after it. */
static void reply_write(fake_transport_t *f, unsigned i, const char *fence, long long after) {
  assert_true(fake_cmd_has(f, i, 0, "EVALSHA"));
  char arg[32];
  snprintf(arg, sizeof arg, "\r\n%s\r\n", fence);
  assert_true(fake_cmd_has(f, i, 0, arg));
  fake_reply_int(f, i, after);
}

/* Counters 7, 9, 8 seen by the read: the write raises every counter to 10;
 * a master that missed the read reports 12 after it, among the quorum's
 * answers: the write goes again with 13, which every master then reports.
 * The fence is 13. */
static void test_revoke_raises(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  call_t c = {.what = CALL_REVOKE, .name = NAME};
  call_start(&c, e, ENGINE_MASTERS);
  fake_reply_holds(f, 0, "7", -1, &held_a, 1);
  fake_reply_holds(f, 1, "9", -1, &held_a, 1);
  fake_reply_holds(f, 2, "8", -1, &held_a, 1);
  fake_reply_holds(f, 3, NULL, -1, NULL, 0);
  fake_reply_error(f, 4, "ERR busy");
  reply_write(f, 4, "10", 12);
  reply_write(f, 0, "10", 10);
  reply_write(f, 1, "10", 10); /* a quorum: decided, the second write out */
  assert_int_equal(fake_outstanding(f, 2), 2);
  reply_write(f, 2, "10", 10); /* late: the first write's */
  reply_write(f, 3, "10", 10);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    reply_write(f, i, "13", 13);
  assert_int_equal(call_end(&c), REDLOCK_OK);
  assert_int_equal(c.fence, 13);
}

/* No counter anywhere: the write is unfenced (fence 0, the key left its
 * ttl under the revoker's value) and the fence reported is 0. */
static void test_revoke_unfenced(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  call_t c = {.what = CALL_REVOKE, .name = NAME, .fence = 99};
  call_start(&c, e, ENGINE_MASTERS);
  reply_holds_all(f, NULL, &held_a, 1);
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    reply_write(f, i, "0", 1);
  assert_int_equal(call_end(&c), REDLOCK_OK);
  assert_int_equal(c.fence, 0);
}

/* A master reports a larger counter after every write: after
 * REVOKE_MAX_RAISES raises the revoke gives up with ENOQUORUM. */
static void test_revoke_max_raises(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  call_t c = {.what = CALL_REVOKE, .name = NAME};
  call_start(&c, e, ENGINE_MASTERS);
  reply_holds_all(f, "1", &held_a, 1);
  long long fence = 2;
  for (int write = 0; write < 4; write++) {
    char arg[24];
    snprintf(arg, sizeof arg, "%lld", fence);
    reply_write(f, 4, arg, fence + 10);
    for (unsigned i = 0; i < 4; i++)
      reply_write(f, i, arg, fence);
    fence += 11;
  }
  assert_int_equal(fake_outstanding_all(f), 0); /* no fifth write */
  assert_int_equal(call_end(&c), REDLOCK_ENOQUORUM);
}

/* The read answered by two of five: ENOQUORUM, nothing written.  The write
 * refused by a quorum: ENOQUORUM too. */
static void test_revoke_no_quorum(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  for (unsigned i = 0; i < 3; i++)
    f->m[i].mode = FAKE_SEND_DOWN;
  call_t c = {.what = CALL_REVOKE, .name = NAME};
  call_start(&c, e, 2);
  fake_reply_holds(f, 3, "4", -1, &held_a, 1);
  fake_reply_holds(f, 4, "4", -1, &held_a, 1);
  assert_int_equal(call_end(&c), REDLOCK_ENOQUORUM);
  assert_int_equal(fake_outstanding_all(f), 0);

  for (unsigned i = 0; i < 3; i++)
    f->m[i].mode = FAKE_SEND_OK;
  call_t w = {.what = CALL_REVOKE, .name = NAME};
  call_start(&w, e, ENGINE_MASTERS);
  reply_holds_all(f, "4", &held_a, 1);
  for (unsigned i = 0; i < 3; i++)
    fake_reply_error(f, i, "ERR no");
  reply_write(f, 3, "5", 5);
  reply_write(f, 4, "5", 5);
  assert_int_equal(call_end(&w), REDLOCK_ENOQUORUM);
  assert_int_equal(w.fence, 0);
}

/* Three masters of five run no Lua: revoke cannot be done (ENOTSUP), as
 * neither can the inspection's quorum. */
static void test_revoke_no_lua(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  for (unsigned i = 0; i < 3; i++)
    f->m[i].mode = FAKE_SEND_NOLUA;
  call_t c = {.what = CALL_REVOKE, .name = NAME};
  call_start(&c, e, 2);
  fake_reply_holds(f, 3, "4", -1, &held_a, 1);
  fake_reply_holds(f, 4, "4", -1, &held_a, 1);
  assert_int_equal(call_end(&c), REDLOCK_ENOTSUP);
}

/* ---- redlock_election_leader ---------------------------------------------------------- */

/* Held by a quorum: the owner label, the term (the least counter of the
 * masters that hold the leader's value: another value's counter does not
 * count) and the least ttl. */
static void test_leader_views(void **state) {
  engine_fx_t *e = *state;
  fake_transport_t *f = &e->fake;
  call_t c = {.what = CALL_LEADER, .name = NAME};
  call_start(&c, e, ENGINE_MASTERS);
  fake_reply_holds(f, 0, "6", -1, &held_a, 1);
  fake_reply_holds(f, 1, "6", -1, &held_a, 1);
  fake_reply_holds(f, 2, "7", -1, &held_a, 1);
  fake_reply_holds(f, 3, "8", -1, &held_b, 1); /* a minority's value: not the term */
  fake_reply_holds(f, 4, NULL, -1, NULL, 0);
  assert_int_equal(call_end(&c), REDLOCK_OK);
  assert_int_equal(c.leader.state, REDLOCK_LEADER_HELD);
  assert_int_equal(c.leader.term, 6);
  assert_int_equal(c.leader.ttl_ms, 5000);
  assert_string_equal(c.leader.owner, "alice");

  /* Held by a quorum with a value of no owner label: held, owner "". */
  call_t anon = {.what = CALL_LEADER, .name = NAME};
  call_start(&anon, e, ENGINE_MASTERS);
  const fake_hold_t plain = {"", "plain", 0};
  reply_holds_all(f, "3", &plain, 1);
  assert_int_equal(call_end(&anon), REDLOCK_OK);
  assert_int_equal(anon.leader.state, REDLOCK_LEADER_HELD);
  assert_int_equal(anon.leader.ttl_ms, 0);
  assert_string_equal(anon.leader.owner, "");

  /* Free everywhere: nobody leads. */
  call_t none = {.what = CALL_LEADER, .name = NAME};
  call_start(&none, e, ENGINE_MASTERS);
  reply_holds_all(f, "6", NULL, 0);
  assert_int_equal(call_end(&none), REDLOCK_OK);
  assert_int_equal(none.leader.state, REDLOCK_LEADER_NONE);
  assert_int_equal(none.leader.term, 0);

  /* Two answers of five: unknown. */
  for (unsigned i = 0; i < 3; i++)
    f->m[i].mode = FAKE_SEND_DOWN;
  call_t unknown = {.what = CALL_LEADER, .name = NAME};
  call_start(&unknown, e, 2);
  fake_reply_holds(f, 3, "6", -1, &held_a, 1);
  fake_reply_holds(f, 4, "6", -1, &held_a, 1);
  assert_int_equal(call_end(&unknown), REDLOCK_OK);
  assert_int_equal(unknown.leader.state, REDLOCK_LEADER_UNKNOWN);
}

/* ---- arguments and the client's state ------------------------------------------------ */

static void test_arguments(void **state) {
  engine_fx_t *e = *state;
  redlock_t *client = e->client;
  char buf[64];
  uint64_t fence = 5;
  redlock_leader_t leader = {.state = REDLOCK_LEADER_HELD};
  assert_int_equal(redlock_inspect(client, NAME, REDLOCK_INSPECT_LOCK, NULL, 10), REDLOCK_EINVAL);
  assert_int_equal(redlock_inspect(NULL, NAME, REDLOCK_INSPECT_LOCK, buf, sizeof buf),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_election_leader(client, NAME, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_election_leader(NULL, NAME, &leader), REDLOCK_EINVAL);
  assert_int_equal(leader.state, REDLOCK_LEADER_NONE); /* cleared */
  assert_int_equal(redlock_revoke(NULL, NAME, &fence), REDLOCK_EINVAL);
  assert_int_equal(fence, 0);
  /* On the loop thread: they would wait for themselves. */
  assert_int_equal(redlock_inspect(client, NAME, REDLOCK_INSPECT_LOCK, buf, sizeof buf),
                   REDLOCK_EWOULDBLOCK);
  assert_int_equal(redlock_election_leader(client, NAME, &leader), REDLOCK_EWOULDBLOCK);
  assert_int_equal(redlock_revoke(client, NAME, NULL), REDLOCK_EWOULDBLOCK);

  /* From another thread: bad kinds and names, nothing sent. */
  call_t bad_kind = {.what = CALL_INSPECT, .name = NAME, .kind = 0, .size = 64};
  call_start(&bad_kind, e, 1);
  assert_int_equal(call_end(&bad_kind), REDLOCK_EINVAL);
  bad_kind.kind = REDLOCK_INSPECT_ELECTION + 1;
  call_start(&bad_kind, e, 1);
  assert_int_equal(call_end(&bad_kind), REDLOCK_EINVAL);
  const call_kind_t kinds[] = {CALL_INSPECT, CALL_REVOKE, CALL_LEADER};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    call_t c = {.what = kinds[k], .name = "", .kind = REDLOCK_INSPECT_LOCK, .size = 64};
    call_start(&c, e, 1);
    assert_int_equal(call_end(&c), REDLOCK_EINVAL);
    call_t null_name = {.what = kinds[k], .name = NULL, .kind = REDLOCK_INSPECT_LOCK, .size = 64};
    call_start(&null_name, e, 1);
    assert_int_equal(call_end(&null_name), REDLOCK_EINVAL);
  }
  assert_int_equal(fake_outstanding_all(&e->fake), 0);
}

/* Closing (kept from finishing by a lock's round out): a call made after
 * the close began is refused (ECLOSED). */
static void test_closed(void **state) {
  engine_fx_t *e = *state;
  lock_result_t r = {0};
  engine_lock(e, "other", 1000, 0, &r);
  e->client->run.own_thread = 0; /* redlock_close_uv's client */
  engine_fx_begin_close(e);
  e->client->run.own_thread = 1;
  const call_kind_t kinds[] = {CALL_INSPECT, CALL_REVOKE, CALL_LEADER};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    call_t c = {.what = kinds[k], .name = NAME, .kind = REDLOCK_INSPECT_LOCK, .size = 64};
    call_start(&c, e, 1);
    assert_int_equal(call_end(&c), REDLOCK_ECLOSED);
  }
  fake_reply_ok_all(&e->fake);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_ECANCELED);
}

/* Calls parked (made before every master had its first connection
 * attempt: they wait unsent) are failed by the close: ECANCELED, nothing
 * sent. */
static void test_parked_then_closed(void **state) {
  engine_fx_t *e = *state;
  e->client->voters.startup_left = 1; /* one master still connecting */
  call_t calls[] = {
      {.what = CALL_INSPECT, .name = NAME, .kind = REDLOCK_INSPECT_LOCK, .size = 64},
      {.what = CALL_REVOKE, .name = NAME},
      {.what = CALL_LEADER, .name = NAME},
  };
  const size_t n = sizeof calls / sizeof calls[0];
  for (size_t k = 0; k < n; k++)
    call_start(&calls[k], e, 0);
  /* Every one parked: the loop took them. */
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    size_t parked = 0;
    for (list_node_t *l = e->client->queue.parked.next; l != &e->client->queue.parked; l = l->next)
      parked++;
    if (parked == n)
      break;
    assert_false(past(&start));
    uv_run(&e->loop, UV_RUN_NOWAIT);
  }
  assert_int_equal(fake_outstanding_all(&e->fake), 0);
  e->client->run.own_thread = 0; /* redlock_close_uv's client */
  engine_fx_begin_close(e);      /* nothing else out: closed, and freed */
  for (size_t k = 0; k < n; k++)
    assert_int_equal(call_end(&calls[k]), REDLOCK_ECANCELED);
  assert_true(e->closed);
  assert_int_equal(e->fake.m[0].sends, 0);
}

/* ---- an observer stopped from another thread ------------------------------------------ */

typedef struct {
  engine_fx_t *e;
  redlock_observer_t *obs;
  int changes;
  int rc;
  atomic_int done;
} stopper_t;

static void stopper_change(redlock_observer_t *obs, const redlock_leader_t *view, void *arg) {
  (void)view;
  stopper_t *s = arg;
  assert_ptr_equal(obs, s->obs);
  s->changes++;
}

static void stopper_main(void *arg) {
  stopper_t *s = arg;
  s->rc = redlock_observe_stop(s->e->client, s->obs);
  atomic_store(&s->done, 1);
}

/* Off the loop thread redlock_observe_stop returns once the loop has taken
 * the stop: no callback runs after it, even for the read that was out. */
static void test_observer_stopped_off_loop(void **state) {
  engine_fx_t *e = *state;
  stopper_t s = {.e = e};
  assert_int_equal(redlock_election_observe(e->client, NAME, 1000, stopper_change, &s, &s.obs), 0);
  fake_pump();
  assert_int_equal(fake_outstanding_all(&e->fake), ENGINE_MASTERS);
  uv_thread_t thread;
  assert_int_equal(uv_thread_create(&thread, stopper_main, &s), 0);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (!atomic_load(&s.done)) {
    assert_false(past(&start));
    uv_run(&e->loop, UV_RUN_NOWAIT);
  }
  uv_thread_join(&thread);
  assert_int_equal(s.rc, 0);
  reply_holds_all(&e->fake, "3", &held_a, 1);
  assert_int_equal(s.changes, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ADMIN_TEST(test_inspect_held),
      ADMIN_TEST(test_inspect_minority),
      ADMIN_TEST(test_inspect_disagreeing),
      ADMIN_TEST(test_inspect_unanswered),
      ADMIN_TEST(test_inspect_no_lua),
      ADMIN_TEST(test_inspect_semaphore_and_rwlock),
      ADMIN_TEST(test_inspect_escapes_and_cut),
      ADMIN_TEST(test_revoke_raises),
      ADMIN_TEST(test_revoke_unfenced),
      ADMIN_TEST(test_revoke_max_raises),
      ADMIN_TEST(test_revoke_no_quorum),
      ADMIN_TEST(test_revoke_no_lua),
      ADMIN_TEST(test_leader_views),
      ADMIN_TEST(test_arguments),
      ADMIN_TEST(test_closed),
      ADMIN_TEST(test_parked_then_closed),
      ADMIN_TEST(test_observer_stopped_off_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
