/* test_cluster_redirects.c: a cluster voter's redirections gone wrong,
 * through a whole client (redlock_open_uv) on the test's loop over mock
 * primaries (tests/support/mock_master.h): A, the seed, answers a slot map
 * in which it serves every slot, and then misdirects the lock commands.
 * docs/deployments.md "Cluster voters" (redirections gone wrong).
 *
 * Asserts, by counting (bounds that grow with the time the calls took, so
 * that a slow machine loosens them and never fails them):
 *  - a node answering every command with -MOVED to a dead address (D: it
 *    closes every connection it accepts), 40 calls: D's accepted
 *    connections stay within what the reconnect backoff allows over the
 *    calls' time (not one per call), and the slot map is read at most once
 *    per VOTER_CLUSTER_MAP_SPACING_MS of it (plus two);
 *  - the same storm at a closed port for 1.5 s: the WARN lines naming D
 *    stay within one a second (plus two);
 *  - a MOVED loop between two live nodes (A to B, B to A), 30 calls: each
 *    ends in an error, the map reads stay within the spacing;
 *  - the same loop for up to 2.5 s (B in the map too): the WARN lines of
 *    error replies stay
 *    within one a second, and one of them counts those left out ("N more
 *    like this in the last S s");
 *  - an ASK ping-pong between two slow nodes (each answer 60 ms late,
 *    request timeout 100 ms): the call ends with an error because of its
 *    round's deadline (its vote says "timeout", not the last -ASK), the
 *    chain is not followed past the deadline (at most 2 acquisitions in
 *    all: a hop answered after 100 ms is not followed), and the call
 *    returns within three deadlines and some slack (a hang check only).
 *    The mocks run on the client's loop: the round's deadline timer (100
 *    ms) fires before the mock's timer that releases the second answer
 *    (120 ms). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "node_fixture.h"
#include "proto/keyslot.h"
#include "redlock.h"
#include "redlock_uv.h"
#include "util/backoff.h"
#include "voters/voter_cluster.h"

#define RES "rd-res"

typedef struct {
  nf_t *f;
  mock_master_t *b; /* D (dead) or B (live) */
  redlock_t *client;
  char logbuf[65536];
  size_t log_len;
  unsigned warns_about_b; /* WARN lines naming b's address */
  unsigned error_warns;   /* WARN lines about an error reply */
  int counted_warn;       /* a WARN line said how many were left out */
  char b_label[32];
  int lock_done, lock_status;
  char votes[1024];
  int closed;
} rd_t;

/* Static: the client still logs while teardown runs the loop to its end. */
static rd_t storage;

static void rd_log(int level, const char *msg, void *arg) {
  rd_t *t = arg;
  if (level >= REDLOCK_LOG_WARN && strstr(msg, "error reply") != NULL)
    t->error_warns++;
  if (level >= REDLOCK_LOG_WARN && strstr(msg, "more like this in the last") != NULL)
    t->counted_warn = 1;
  if (level >= REDLOCK_LOG_WARN && t->b_label[0] != '\0' && strstr(msg, t->b_label) != NULL)
    t->warns_about_b++;
  int n = snprintf(t->logbuf + t->log_len, sizeof t->logbuf - t->log_len, "%d %s\n", level, msg);
  if (n > 0)
    t->log_len += (size_t)n;
  if (t->log_len >= sizeof t->logbuf)
    t->log_len = sizeof t->logbuf - 1;
}

/* Fails the test with the client's log (on stderr: too long for a message). */
#define RD_FAIL(t, ...)                                                                            \
  do {                                                                                             \
    fprintf(stderr, "%s", (t)->logbuf);                                                            \
    fail_msg(__VA_ARGS__);                                                                         \
  } while (0)

static void rd_lock_cb(int status, redlock_lock_t *lock, void *arg) {
  rd_t *t = arg;
  t->lock_done = 1;
  t->lock_status = status;
  redlock_last_votes(t->client, t->votes, sizeof t->votes);
  if (lock != NULL)
    redlock_unlock_async(t->client, lock, NULL, NULL);
}

static int lock_done(void *arg) { return ((rd_t *)arg)->lock_done; }
static int is_closed(void *arg) { return ((rd_t *)arg)->closed; }
static void rd_closed_cb(void *arg) { ((rd_t *)arg)->closed = 1; }
static int map_read(void *arg) { return strstr(((rd_t *)arg)->logbuf, "slot map from") != NULL; }

static uint64_t now_ms(void) { return uv_hrtime() / 1000000u; }

/* The slot of RES's key. */
static int res_slot(void) {
  redlock_options_t *o = redlock_options_new();
  assert_non_null(o);
  const char *prefix = NULL;
  assert_int_equal(redlock_options_get_key_prefix(o, &prefix), 0);
  char key[128];
  snprintf(key, sizeof key, "%s%s", prefix, RES);
  redlock_options_free(o);
  return keyslot(key, strlen(key));
}

/* A (f->mock) refuses CLUSTER SHARDS, then serves every slot in CLUSTER
 * SLOTS (dead 3: A and b share them); b is made (dead 1: closing every
 * connection it accepts, 2: at a closed port, 0 and 3: live); a
 * client of one cluster voter at A, one try per call, request timeout
 * request_ms, is opened and its map read. */
static rd_t *rd_open(nf_t *f, int dead, uint32_t request_ms) {
  rd_t *t = &storage;
  memset(t, 0, sizeof *t);
  t->f = f;
  t->b = mock_master_start(&f->loop);
  assert_non_null(t->b);
  mock_master_set_run_id(t->b, "cccccccccccccccccccccccccccccccccccccccc");
  if (dead == 1)
    mock_master_close_on_accept(t->b, 1);
  else if (dead == 2)
    mock_master_stop_listening(t->b);
  snprintf(t->b_label, sizeof t->b_label, "127.0.0.1:%d", mock_master_port(t->b));
  char map[256];
  if (dead == 3) /* b live, and in the map: A serves 0..8191 (RES's slot), b the rest */
    snprintf(map, sizeof map,
             "*2\r\n*3\r\n:0\r\n:8191\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n"
             "*3\r\n:8192\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n",
             mock_master_port(f->mock), mock_master_port(t->b));
  else
    snprintf(map, sizeof map, "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n",
             mock_master_port(f->mock));
  mock_master_on(f->mock, "CLUSTER", MOCK_REPLY, "-ERR unknown subcommand 'SHARDS'\r\n", 1);
  mock_master_on(f->mock, "CLUSTER", MOCK_REPLY, map, 0);
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  char uri[96];
  snprintf(uri, sizeof uri, "redis-cluster://127.0.0.1:%d", mock_master_port(f->mock));
  assert_int_equal(redlock_options_add_node(opts, uri), 0);
  assert_int_equal(redlock_options_set_retry(opts, 0, 0, 0), 0);
  assert_int_equal(redlock_options_set_timeouts(opts, 2000, request_ms), 0);
  assert_int_equal(redlock_options_set_log(opts, REDLOCK_LOG_DEBUG, rd_log, t), 0);
  assert_int_equal(redlock_open_uv(&t->client, opts, &f->loop), 0);
  redlock_options_free(opts);
  if (!mock_run_until(&f->loop, map_read, t, NF_WAIT_MS))
    RD_FAIL(t, "no slot map");
  return t;
}

static void rd_close(rd_t *t) {
  redlock_close_uv(t->client, rd_closed_cb, t);
  if (!mock_run_until(&t->f->loop, is_closed, t, NF_WAIT_MS))
    RD_FAIL(t, "the client did not close");
}

/* One lock call (one try): its status. */
static int rd_lock(rd_t *t) {
  t->lock_done = 0;
  assert_int_equal(redlock_lock_async(t->client, RES, 10000, 0, rd_lock_cb, t), 0);
  if (!mock_run_until(&t->f->loop, lock_done, t, NF_WAIT_MS))
    RD_FAIL(t, "the lock call did not end");
  return t->lock_status;
}

/* The lock commands of m answered with `reply` (raw RESP) for ever. */
static void misdirect(mock_master_t *m, mock_action_t action, const char *reply) {
  mock_master_on(m, "SET", action, reply, 0);
  mock_master_on(m, "EVALSHA", action, reply, 0);
  mock_master_on(m, "EVAL", action, reply, 0);
}

/* Acquisitions received (the releases that undo failed ones go too). */
static unsigned lock_commands(mock_master_t *m) { return mock_master_count(m, "SET"); }

/* Connection attempts the reconnect backoff allows at most within
 * elapsed_ms: the first at once, then each after at least half of its
 * delay (the jitter keeps half of it). */
static unsigned attempts_within(uint64_t elapsed_ms) {
  unsigned n = 1;
  uint64_t t = 0;
  for (unsigned k = 0; n < 1000; k++) {
    uint64_t full = backoff_ms(k, NODE_BACKOFF_BASE_MS, NODE_BACKOFF_CAP_MS, 0) * 2;
    t += full / 2;
    if (t > elapsed_ms)
      break;
    n++;
  }
  return n;
}

/* Map reads the spacing allows within elapsed_ms (one at once, one more for
 * a question on its way at the start). */
static unsigned map_reads_within(uint64_t elapsed_ms) {
  return 2u + (unsigned)(elapsed_ms / VOTER_CLUSTER_MAP_SPACING_MS);
}

/* ---- MOVED to a dead address ------------------------------------------------------------- */

static void moved_to_dead(rd_t *t) {
  char moved[96];
  snprintf(moved, sizeof moved, "-MOVED %d %s\r\n", res_slot(), t->b_label);
  misdirect(t->f->mock, MOCK_REPLY, moved);
}

static void test_moved_to_dead(void **state) {
  nf_t *f = *state;
  rd_t *t = rd_open(f, 1, 500);
  moved_to_dead(t);
  unsigned maps_before = mock_master_count(f->mock, "CLUSTER");
  uint64_t start = now_ms();
  for (int i = 0; i < 40; i++)
    if (rd_lock(t) == REDLOCK_OK)
      RD_FAIL(t, "granted through a dead primary");
  uint64_t elapsed = now_ms() - start;
  unsigned accepts = mock_master_accepted(t->b);
  unsigned maps = mock_master_count(f->mock, "CLUSTER") - maps_before;
  if (accepts > attempts_within(elapsed) || accepts == 0)
    RD_FAIL(t, "%u connections to the dead address in %llu ms (the backoff allows %u)", accepts,
            (unsigned long long)elapsed, attempts_within(elapsed));
  if (maps > map_reads_within(elapsed))
    RD_FAIL(t, "%u map reads in %llu ms (at most %u)", maps, (unsigned long long)elapsed,
            map_reads_within(elapsed));
  rd_close(t);
}

/* The storm, at a closed port, for over a second: its WARN lines stay
 * within one a second (the failed connects come at the backoff's pace, and
 * each is logged at WARN only as the first of its streak). */
static void test_moved_warns_limited(void **state) {
  nf_t *f = *state;
  rd_t *t = rd_open(f, 2, 500);
  moved_to_dead(t);
  uint64_t start = now_ms(), elapsed = 0;
  unsigned calls = 0;
  while ((elapsed = now_ms() - start) < 1500) {
    if (rd_lock(t) == REDLOCK_OK)
      RD_FAIL(t, "granted through a dead primary");
    calls++;
  }
  unsigned bound = 2u + (unsigned)(elapsed / 1000);
  if (t->warns_about_b > bound)
    RD_FAIL(t, "%u WARN lines about %s in %llu ms (%u calls; at most %u)", t->warns_about_b,
            t->b_label, (unsigned long long)elapsed, calls, bound);
  rd_close(t);
}

/* ---- MOVED loop between two live nodes ------------------------------------------------- */

/* A sends the lock commands to B, B to A. */
static void moved_loop(rd_t *t) {
  char to_b[96], to_a[96];
  snprintf(to_b, sizeof to_b, "-MOVED %d %s\r\n", res_slot(), t->b_label);
  snprintf(to_a, sizeof to_a, "-MOVED %d 127.0.0.1:%d\r\n", res_slot(),
           mock_master_port(t->f->mock));
  misdirect(t->f->mock, MOCK_REPLY, to_b);
  misdirect(t->b, MOCK_REPLY, to_a);
}

static void test_moved_loop(void **state) {
  nf_t *f = *state;
  rd_t *t = rd_open(f, 0, 500);
  moved_loop(t);
  unsigned maps_before = mock_master_count(f->mock, "CLUSTER");
  uint64_t start = now_ms();
  for (int i = 0; i < 30; i++)
    if (rd_lock(t) == REDLOCK_OK)
      RD_FAIL(t, "granted in a MOVED loop");
  uint64_t elapsed = now_ms() - start;
  unsigned maps = mock_master_count(f->mock, "CLUSTER") - maps_before;
  if (maps > map_reads_within(elapsed))
    RD_FAIL(t, "%u map reads for 30 calls in %llu ms (at most %u)", maps,
            (unsigned long long)elapsed, map_reads_within(elapsed));
  /* The loop was followed (both took lock commands), within its bound. */
  assert_true(lock_commands(t->b) > 0);
  assert_true(lock_commands(f->mock) + lock_commands(t->b) <=
              30u * (VOTER_CLUSTER_MAX_REDIRECTS + 1u));
  rd_close(t);
}

/* The same loop for over a second, B in the map too (so that it is never
 * dropped to check its role: every call ends with the last -MOVED): the
 * calls' error replies are warned about once a second for the voter, and
 * the line after the quiet spell counts the ones left out. */
static void test_moved_loop_warns_counted(void **state) {
  nf_t *f = *state;
  assert_true(res_slot() < 8192);
  rd_t *t = rd_open(f, 3, 500);
  moved_loop(t);
  uint64_t start = now_ms(), elapsed = 0;
  unsigned calls = 0;
  while ((elapsed = now_ms() - start) < 2500 && !t->counted_warn) {
    if (rd_lock(t) == REDLOCK_OK)
      RD_FAIL(t, "granted in a MOVED loop");
    calls++;
  }
  unsigned bound = 2u + (unsigned)(elapsed / 1000);
  if (t->error_warns > bound)
    RD_FAIL(t, "%u WARN lines of error replies in %llu ms (%u calls; at most %u)", t->error_warns,
            (unsigned long long)elapsed, calls, bound);
  if (!t->counted_warn)
    RD_FAIL(t, "no WARN line counts the ones left out (%u calls in %llu ms)", calls,
            (unsigned long long)elapsed);
  rd_close(t);
}

/* ---- ASK ping-pong between two slow nodes ----------------------------------------------- */

#define PINGPONG_REQUEST_MS 100u
#define PINGPONG_DELAY_MS 60u

static void test_ask_pingpong_deadline(void **state) {
  nf_t *f = *state;
  rd_t *t = rd_open(f, 0, PINGPONG_REQUEST_MS);
  char to_b[96], to_a[96];
  snprintf(to_b, sizeof to_b, "-ASK %d %s\r\n", res_slot(), t->b_label);
  snprintf(to_a, sizeof to_a, "-ASK %d 127.0.0.1:%d\r\n", res_slot(), mock_master_port(f->mock));
  /* B is connected first (one ASK), so that the chain's hops are replies,
   * not connects. */
  mock_master_on(f->mock, "SET", MOCK_REPLY, to_b, 1);
  mock_master_on(t->b, "SET", MOCK_REPLY, "-ERR warm-up\r\n", 1);
  assert_int_not_equal(rd_lock(t), REDLOCK_OK);
  assert_int_equal(lock_commands(t->b), 1);
  mock_master_set_delay(f->mock, PINGPONG_DELAY_MS);
  mock_master_set_delay(t->b, PINGPONG_DELAY_MS);
  /* The acquisitions only: the releases that undo failed ones are
   * answered, and never hold a connection's next batch back. */
  mock_master_on(f->mock, "SET", MOCK_DELAY, to_b, 0);
  mock_master_on(t->b, "SET", MOCK_DELAY, to_a, 0);
  unsigned before = lock_commands(f->mock) + lock_commands(t->b);
  uint64_t start = now_ms();
  int rc = rd_lock(t);
  uint64_t took = now_ms() - start;
  assert_int_not_equal(rc, REDLOCK_OK);
  if (strstr(t->votes, "timeout") == NULL)
    RD_FAIL(t, "the call did not end by its deadline (votes: %s)", t->votes);
  if (took > 3u * PINGPONG_REQUEST_MS + 2000u) /* a hang check only: loaded machines are slow */
    RD_FAIL(t, "the call took %llu ms", (unsigned long long)took);
  /* The chain is not followed past the deadline: one acquisition per hop
   * begun within the 100 ms (counted once the client is closed: nothing is
   * sent after that). */
  rd_close(t);
  unsigned sent = lock_commands(f->mock) + lock_commands(t->b) - before;
  if (sent > PINGPONG_REQUEST_MS / PINGPONG_DELAY_MS + 1u)
    RD_FAIL(t, "%u lock commands in the chain (at most %u)", sent,
            PINGPONG_REQUEST_MS / PINGPONG_DELAY_MS + 1u);
}

/* The stats of a cluster voter name each primary its requests went to:
 * their count, those in flight and their durations, in Prometheus' text
 * and in JSON. */
static void test_primaries_in_stats(void **state) {
  nf_t *f = *state;
  rd_t *t = rd_open(f, 3, 1000);
  if (rd_lock(t) != REDLOCK_OK)
    RD_FAIL(t, "the lock was not granted: %s", t->votes);
  char primary[64], want[128];
  snprintf(primary, sizeof primary, "127.0.0.1:%d", mock_master_port(f->mock));
  static char text[65536];
  int n = redlock_stats(t->client, REDLOCK_STATS_PROMETHEUS, text, sizeof text);
  assert_true(n > 0 && (size_t)n < sizeof text);
  snprintf(want, sizeof want, "primary=\"%s\"", primary);
  assert_non_null(strstr(text, want));
  assert_non_null(strstr(text, "\nredlock_primary_requests_total{"));
  assert_non_null(strstr(text, "\nredlock_primary_requests_in_flight{"));
  assert_non_null(strstr(text, "\nredlock_primary_request_duration_seconds_bucket{"));
  n = redlock_stats(t->client, REDLOCK_STATS_JSON, text, sizeof text);
  assert_true(n > 0 && (size_t)n < sizeof text);
  snprintf(want, sizeof want, "\"primaries\":[{\"primary\":\"%s\"", primary);
  assert_non_null(strstr(text, want));
  assert_non_null(strstr(text, "\"requests_total\":"));
  assert_non_null(strstr(text, "\"request_duration_seconds\":"));
  rd_close(t);
}

/* Teardown: b closed too (after its counts were read). */
static int rd_teardown(void **state) {
  if (storage.client != NULL && !storage.closed) /* a failed test: the loop must end */
    rd_close(&storage);
  if (storage.b != NULL)
    mock_master_close(storage.b);
  storage.b = NULL;
  return nf_teardown(state);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_moved_to_dead, nf_setup, rd_teardown),
      cmocka_unit_test_setup_teardown(test_moved_warns_limited, nf_setup, rd_teardown),
      cmocka_unit_test_setup_teardown(test_moved_loop, nf_setup, rd_teardown),
      cmocka_unit_test_setup_teardown(test_moved_loop_warns_counted, nf_setup, rd_teardown),
      cmocka_unit_test_setup_teardown(test_ask_pingpong_deadline, nf_setup, rd_teardown),
      cmocka_unit_test_setup_teardown(test_primaries_in_stats, nf_setup, rd_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
