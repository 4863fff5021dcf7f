/* fixture.h: the one test fixture of the suites that run against real
 * redis-server processes (tests/integration, safety, api, cli, tls).  It
 * stands on the server harness (redis_harness.h) and provides, by job:
 *
 *  - servers (fixture_servers.c): N masters on free loopback ports, stopped
 *    (after a resume: never leave one SIGSTOPped) by PID; what is on every
 *    master (counts of a key's value, PTTL, PUBSUB NUMSUB), with waits.
 *    Plain C, no cmocka and no redlock symbols: the CLI driver uses it too.
 *  - keys (fixture_keys.c): the same inspection for cmocka tests, asserting
 *    that every master answered.
 *  - log (fixture_log.c): a thread-safe capture of each client's log, with
 *    search, counts and waits (FX_VERBOSE=1 echoes it to stderr).
 *  - client (fixture_client.c): fx_t (masters + client slots + logs) as
 *    cmocka setup/teardown, clients opened with the usual test options
 *    (restart quarantine off: the masters are fresh), result checks,
 *    callback recorders.
 *  - wait (fixture_wait.c): counting events with a deadline, the stall
 *    monitor, a watchdog, unique names.
 *  - call (fixture_call.c): a blocking acquisition in a thread of its own,
 *    timed, with an event to wait on.
 *  - prims (fixture_prims.c): holders in child processes, holding-interval
 *    histories, pause chaos and the chaos runner of the coordination
 *    primitives.
 *
 * Nothing here waits by sleeping and looking: every wait polls a condition
 * (rh_wait_until) or takes an event, with a deadline. */
#ifndef REDLOCK_TEST_FIXTURE_H
#define REDLOCK_TEST_FIXTURE_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "redis_harness.h"
#include "redlock.h"
#include "redlock_uv.h"

#define FX_MAX_SERVERS 5
#define FX_MAX_CLIENTS 16

/* Client slot argument of the log functions: every slot. */
#define FX_ALL (-1)
/* Log level argument of fx_options: capture nothing (no log callback). */
#define FX_NO_LOG (-1)

/* Timeouts the suites configure: far above what loopback needs, even under
 * ASan; assertions on elapsed time are derived from them, never tighter.
 * The integration profile keeps connects short (its tests time dead
 * masters); the safety profile gives connects more room, because shared
 * test machines stop processes for up to ~1 s at a time. */
#define FX_IT_CONNECT_MS 500u
#define FX_IT_REQUEST_MS 500u
/* The request timeout of a test whose rounds wait for a replica's or an
 * fsync's ack (wait=, waitaof=): on a loaded machine the replica may not run
 * within FX_IT_REQUEST_MS, and such a test asserts that the ack came. */
#define FX_ACK_REQUEST_MS 5000u
#define FX_SF_CONNECT_MS 2000u
#define FX_SF_REQUEST_MS 500u

/* What fx_options sets besides the nodes (0 ms: the library's default). */
typedef struct {
  unsigned connect_ms, request_ms;
  int retry_count;
  unsigned retry_delay_ms, retry_jitter_ms;
} fx_profile_t;

extern const fx_profile_t fx_profile_integration; /* FX_IT_*, retry 2 x (20 + 20) ms */
extern const fx_profile_t fx_profile_safety;      /* FX_SF_*, retry 5 x (20 + 20) ms */
extern const fx_profile_t fx_profile_api;         /* library timeouts, retry 0 x 10 ms */
/* The profile of the fixtures set up from now on (safety by default). */
void fx_use_profile(const fx_profile_t *profile);

typedef struct fx_log fx_log_t;

typedef struct {
  rh_server_t *servers[FX_MAX_SERVERS];
  size_t n;
  redlock_t *clients[FX_MAX_CLIENTS];
  fx_log_t *logs[FX_MAX_CLIENTS];
  const fx_profile_t *profile;
} fx_t;

/* ==== servers (fixture_servers.c: no cmocka, no redlock symbols) ==== */

/* Starts n fresh masters into fx->servers (opts may be NULL); -1 (with a
 * message on stderr) when they cannot be started. */
int fx_servers_start(fx_t *fx, size_t n, const rh_options_t *opts);
/* Resumes the paused ones, then stops and frees every master. */
void fx_servers_stop(fx_t *fx);
/* SIGSTOPs (pause = 1) or SIGCONTs (0) the masters whose bit is in mask;
 * 0, or -1 when one of them failed. */
int fx_pause(fx_t *fx, unsigned mask, int pause);
#define FX_EVERY_MASTER (~0u)
/* "URI,URI,..." of the masters: what REDLOCK_NODES takes. */
void fx_node_list(const fx_t *fx, char *buf, size_t size);
/* Runs an example program (path) as "path --no-quarantine URI URI ..." over
 * the masters, its stdout and stderr into out (size bytes, cut to fit,
 * NUL-terminated; printed when it fails or with FX_VERBOSE); its wait
 * status. */
int fx_run_example(const fx_t *fx, const char *path, char *out, size_t size);
/* Copies the span of `from` that ends before the first of `stops` (or at
 * its end) into out, truncated to size: a value out of a "k=v k=v" line. */
void fx_copy_span(char *out, size_t size, const char *from, const char *stops);
/* "127.0.0.1:PORT", the library's label of a master. */
void fx_label(const rh_server_t *s, char *buf, size_t size);

/* Masters among the first n that are up and hold key = value ("(nil)": the
 * key is absent). */
size_t fx_count_value(const fx_t *fx, size_t n, const char *key, const char *value);
/* A call returns as soon as a quorum decided it: the other masters' replies
 * may still be on their way.  So an effect "on every master" is awaited,
 * with a deadline (FX_SETTLE_MS in assertions), instead of read once. */
#define FX_SETTLE_MS 5000
int fx_wait_value_everywhere(const fx_t *fx, const char *key, const char *value, int timeout_ms);
int fx_wait_nil_everywhere(const fx_t *fx, const char *key, int timeout_ms);
/* Waits until PTTL of key > min_pttl on every master. */
int fx_wait_pttl_above(const fx_t *fx, const char *key, long long min_pttl, int timeout_ms);
/* PTTL of key (-2 absent, -1 no expiry, -100 the master did not answer). */
long long fx_pttl_try(rh_server_t *s, const char *key);

/* Masters among the first n on which key exists (unanswered: not counted). */
size_t fx_exists_on(const fx_t *fx, size_t n, const char *key);
int fx_wait_exists_on(const fx_t *fx, size_t n, const char *key, size_t at_least, int timeout_ms);

/* Subscribers to a channel on a master (PUBSUB NUMSUB), -1 unanswered. */
long fx_numsub(rh_server_t *s, const char *channel);
/* The fewest subscribers to channel on any of the masters, -1 when one of
 * them did not answer. */
long fx_numsub_min(const fx_t *fx, const char *channel);
/* Waits until every one of the first n masters has >= at_least (or, with
 * fx_wait_subscribed_at_most, <= at_most) subscribers to channel. */
int fx_wait_subscribed(const fx_t *fx, size_t n, const char *channel, long at_least,
                       int timeout_ms);
int fx_wait_subscribed_at_most(const fx_t *fx, size_t n, const char *channel, long at_most,
                               int timeout_ms);

/* ==== keys on the masters, for cmocka tests (fixture_keys.c) ====
 * Each asserts that the master answered. */

int fx_key_is(rh_server_t *s, const char *key, const char *value);
int fx_key_absent(rh_server_t *s, const char *key);
/* EXISTS key: 1 or 0. */
long fx_exists(rh_server_t *s, const char *key);
int fx_wait_key_absent(rh_server_t *s, const char *key, int timeout_ms);
int fx_wait_key_is(rh_server_t *s, const char *key, const char *value, int timeout_ms);
/* Waits until lo_ms < PTTL of the key <= hi_ms. */
int fx_wait_pttl_in(rh_server_t *s, const char *key, long long lo_ms, long long hi_ms,
                    int timeout_ms);
long long fx_pttl(rh_server_t *s, const char *key);
/* GET as an unsigned integer; 0 when absent. */
uint64_t fx_get_u64(rh_server_t *s, const char *key);
/* Keys matching a glob pattern (KEYS: test data sets only). */
long fx_count_keys(rh_server_t *s, const char *pattern);
/* Members of a sorted set (ZCARD). */
long fx_zcard(rh_server_t *s, const char *key);
/* Masters among the first n holding key = value / on which key exists. */
size_t fx_holding(fx_t *fx, size_t n, const char *key, const char *value);
size_t fx_masters_with_key(fx_t *fx, size_t n, const char *key);
/* Waits until read(master, key) == want on every master (e.g. fx_zcard). */
int fx_wait_every_master(fx_t *fx, long (*read)(rh_server_t *s, const char *key), const char *key,
                         long want, int timeout_ms);
/* Waits until PTTL > min_pttl for every one of keys[0..n_keys) on every
 * master at once (each poll asserts that the masters answered). */
int fx_wait_keys_pttl_above(fx_t *fx, const char *const *keys, size_t n_keys, long long min_pttl,
                            int timeout_ms);
/* Fails the test unless key is gone from every master within timeout_ms. */
void fx_assert_absent_everywhere(fx_t *fx, const char *key, int timeout_ms);
/* Fails the test unless key holds value on at least a quorum of the masters. */
void fx_assert_on_quorum(fx_t *fx, const char *key, const char *value);
/* The library's names beside a lock key (redlock.h: in the key's hash
 * slot): prefix + key + suffix when key has a hash tag, else prefix + "{" +
 * key + "}" + suffix; written into buf (asserted to fit), returned.  A
 * semaphore's keys are fx_derived_name("", key, ":sem:3"), its channel's
 * fx_derived_name(REDLOCK_RELEASE_CHANNEL_PREFIX, key, ":sem"), with key =
 * the client's key prefix + the name. */
const char *fx_derived_name(char *buf, size_t size, const char *prefix, const char *key,
                            const char *suffix);
/* The release channel / fence counter of lock key `key`. */
const char *fx_channel_of(char *buf, size_t size, const char *key);
const char *fx_fence_key_of(char *buf, size_t size, const char *key);
/* Fails the test unless, within timeout_ms, at least at_least clients wait
 * for releases of key (its channel, fx_channel_of) on every master. */
void fx_assert_subscribed(fx_t *fx, const char *key, long at_least, int timeout_ms);
/* SIGSTOP / SIGCONT every master, asserting each. */
void fx_pause_all(fx_t *fx);
void fx_resume_all(fx_t *fx);

/* A plain synchronous hiredis connection to a master (asserts success). */
redisContext *fx_redis(const rh_server_t *s, int timeout_ms);

#define assert_value_everywhere(fx, key, value)                                                    \
  assert_true(fx_wait_value_everywhere((fx), (key), (value), FX_SETTLE_MS))
#define assert_nil_everywhere(fx, key)                                                             \
  assert_true(fx_wait_nil_everywhere((fx), (key), FX_SETTLE_MS))
#define assert_pttl_above_everywhere(fx, key, min)                                                 \
  assert_true(fx_wait_pttl_above((fx), (key), (min), FX_SETTLE_MS))

/* ==== log capture (fixture_log.c) ==== */

/* The redlock log callback; arg is an fx_log_t. */
void fx_log_cb(int level, const char *msg, void *arg);
/* slot FX_ALL: every slot's log. */
int fx_log_contains(fx_t *fx, int slot, const char *needle);
unsigned fx_log_count(fx_t *fx, int slot, const char *needle);
/* A copy for failure messages (static buffer: main thread only). */
const char *fx_log_text(fx_t *fx, int slot);
void fx_log_clear(fx_t *fx, int slot);
int fx_wait_log(fx_t *fx, int slot, const char *needle, int timeout_ms);
/* Waits until the log holds needle at least count times. */
int fx_wait_log_count(fx_t *fx, int slot, const char *needle, unsigned count, int timeout_ms);
/* Fails the test unless, within 5 s, the log of client slot reports that
 * master `server` restarted (a new run_id after a reconnect) at least
 * `restarts` times: from then on its votes are quarantined. */
void fx_assert_saw_restart(fx_t *fx, int slot, size_t server, unsigned restarts);
/* 1 when the log reports that this master missed a request deadline or lost
 * its connection.  The library promises a quorum, not every master: a
 * master it gave up on may legitimately miss a command. */
int fx_log_master_troubled(fx_t *fx, int slot, rh_server_t *s);
/* FX_VERBOSE (or the older SF_VERBOSE / IT_VERBOSE) is set: tests print
 * more, and the captured logs are echoed to stderr. */
int fx_verbose(void);

/* ==== fixtures and clients (fixture_client.c) ==== */

/* n fresh masters (with the current profile), no client yet; NULL on error. */
fx_t *fx_new(size_t n, const rh_options_t *opts);
/* Resumes paused masters, closes the clients, stops the masters, frees. */
void fx_free(fx_t *fx);
/* cmocka per-test setup (n fresh masters) and teardown (which also kills
 * child holders, stops the stall monitor and tolerates a failed test). */
int fx_setup_0(void **state);
int fx_setup_1(void **state);
int fx_setup_2(void **state);
int fx_setup_3(void **state);
int fx_setup_5(void **state);
int fx_teardown(void **state);
/* A cmocka test on a fresh fixture of n masters (n: 0, 1, 2, 3 or 5). */
#define FX_TEST(f, n) cmocka_unit_test_setup_teardown(f, fx_setup_##n, fx_teardown)

/* Runs a file's tests as a cmocka group: all of them, or the share of one
 * ctest entry when CMake split the file into shards (FX_SHARD=k/n, set by
 * redlock_fixture_test's SHARDS: the tests whose index i has i % n == k - 1,
 * so the n entries together run every test once and a test added to the
 * file joins a shard by itself), or those matching FX_ONLY (a glob on the
 * test's name, for a developer).  A selection of no test fails: a run that
 * ran nothing must not pass. */
int fx_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                 CMFixtureFunction group_setup, CMFixtureFunction group_teardown);
/* This entry's shard, k of n (1 of 1 without FX_SHARD), for a file that
 * shards something other than its cmocka tests (test_oom: its cases, by the
 * same rule: index i with i % n == k - 1); -1 (after a message naming
 * `name`) when FX_SHARD is malformed. */
int fx_shard(const char *name, unsigned *k, unsigned *of);

/* main() of a file of FX_TEST tests: the profile, then the tests (a group
 * named `name`). */
#define FX_MAIN(name, profile, ...)                                                                \
  int main(void) {                                                                                 \
    fx_use_profile(profile);                                                                       \
    const struct CMUnitTest tests[] = {__VA_ARGS__};                                               \
    return fx_run_group(name, tests, sizeof tests / sizeof tests[0], NULL, NULL);                  \
  }

/* Options over the first n masters (the fixture's profile: quarantine off,
 * timeouts, retry), logging at log_min_level into slot's capture
 * (FX_NO_LOG: no log callback). */
redlock_options_t *fx_options(fx_t *fx, int slot, size_t n, int log_min_level);
/* Same over every master, with another retry policy. */
redlock_options_t *fx_options_retry(fx_t *fx, int slot, int log_min_level, int retry_count,
                                    uint32_t delay_ms, uint32_t jitter_ms);
/* Over every master, logging at WARN, with fencing tokens on. */
redlock_options_t *fx_options_fenced(fx_t *fx, int slot);
/* Same, for explicit URIs. */
redlock_options_t *fx_options_uris(fx_t *fx, int slot, const char *const *uris, size_t n,
                                   int log_min_level);
/* Opens slot with opts (which it frees); asserts success. */
redlock_t *fx_open(fx_t *fx, int slot, redlock_options_t *opts);
/* Closes slot now (NULL-safe). */
void fx_close(fx_t *fx, int slot);
/* Opens a client over every master with the profile and this retry policy,
 * in the first free slot (no log capture). */
redlock_t *fx_client(fx_t *fx, int retry_count, uint32_t delay_ms, uint32_t jitter_ms);
/* Opens a client with opts (which it frees) in the first free slot;
 * asserts success.  Like every slot's client, teardown closes it when the
 * test fails halfway: a failed assertion leaves the test at once, and the
 * client would live on, its callbacks writing into a dead stack frame. */
redlock_t *fx_open_free(fx_t *fx, redlock_options_t *opts);
/* Initializes loop and opens a client on it with opts (which it frees);
 * asserts both.  The caller runs the loop, closes the client (fx_free does
 * not) and closes the loop. */
redlock_t *fx_open_uv(redlock_options_t *opts, uv_loop_t *loop);
/* holder takes res (trylock, asserted) and the fixture waits until the key
 * is settled on every master, so that nobody contends with a late SET. */
redlock_lock_t *fx_hold(fx_t *fx, redlock_t *holder, const char *res, uint32_t ttl_ms);
/* A contention scene: a fresh resource (fx_name(what)) that a holder client
 * (no retry) holds on every master (fx_hold), and a contender client with
 * its own retry policy; both in the fixture's slots. */
typedef struct {
  redlock_t *holder, *contender;
  char res[128];
  redlock_lock_t *held;
} fx_contention_t;
void fx_contend(fx_t *fx, fx_contention_t *c, const char *what, uint32_t ttl_ms, int retry_count,
                uint32_t delay_ms, uint32_t jitter_ms);
/* Predicate (rh_wait_until, arg: a redlock_t): the client's last decided
 * round was lost because the key is held. */
int fx_refused_once(void *client);
/* Drops a client from its slot without closing it (one that closes itself). */
void fx_forget(fx_t *fx, redlock_t *client);
/* redlock_close() of a client in a slot (fx_client, fx_open_free). */
void fx_close_client(fx_t *fx, redlock_t *client);

/* The group fixture (tests that share masters across a file, tests/api):
 * fx_group_setup_N starts it, fx_group_teardown stops it, and
 * fx_close_clients (a per-test teardown) closes the clients a test left. */
extern fx_t *fx_group;
int fx_group_setup_3(void **state);
int fx_group_teardown(void **state);
int fx_close_clients(void **state);
#define fx_group_test(f) cmocka_unit_test_teardown(f, fx_close_clients)
/* main() of a file of group tests (tests/api): the api profile, a watchdog
 * of watchdog_s seconds, the tests on the group fixture of three masters. */
#define FX_GROUP_MAIN(watchdog_s, ...)                                                             \
  int main(void) {                                                                                 \
    fx_use_profile(&fx_profile_api);                                                               \
    fx_watchdog(watchdog_s);                                                                       \
    const struct CMUnitTest tests[] = {__VA_ARGS__};                                               \
    return fx_run_group("tests", tests, sizeof tests / sizeof tests[0], fx_group_setup_3,          \
                        fx_group_teardown);                                                        \
  }

/* Asserts that a redlock call returned `want`; on failure prints both error
 * names, the client's last votes and the captured logs. */
#define FX_ASSERT_RC(fx, client, call, want)                                                       \
  fx_check_rc((fx), (client), (call), (want), #call, __FILE__, __LINE__)
void fx_check_rc(fx_t *fx, redlock_t *client, int rc, int want, const char *what, const char *file,
                 int line);

/* The lock's value (asserted: 128 bits or more, as hex), copied: the
 * checks after an unlock still need it. */
void fx_copy_value(char *dst, size_t size, const redlock_lock_t *lock);
/* redlock_lock must succeed (FX_ASSERT_RC); copies the lock's value into
 * value[size] and returns the lock. */
redlock_lock_t *fx_lock_ok(fx_t *fx, redlock_t *client, const char *resource, uint32_t ttl_ms,
                           char *value, size_t size);

/* Elapsed time of a statement, for deadline checks. */
#define FX_TIMED(elapsed_ms, expr)                                                                 \
  do {                                                                                             \
    uint64_t fx_t0_ = rh_now_ms();                                                                 \
    expr;                                                                                          \
    (elapsed_ms) = rh_now_ms() - fx_t0_;                                                           \
  } while (0)

/* Trylock until it succeeds or timeout_ms passes; returns the last status. */
int fx_trylock_until(redlock_t *c, const char *res, uint32_t ttl_ms, int timeout_ms,
                     redlock_lock_t **out);
/* Waits until the votes of every master in `mask` (bit i = server i) count
 * for client c, a client over the fixture's first n masters, by winning
 * probe locks: for each window of Q of those masters, a probe key is
 * pre-set with a foreign value on all the other masters, so the probe can
 * only be won with the votes of that window.  1, or 0 at the deadline. */
int fx_wait_votes_count(fx_t *fx, redlock_t *c, size_t n, unsigned mask, int timeout_ms);

/* A callback recorder: calls, last status and lock, and whether calls ran on
 * different threads. */
typedef struct {
  atomic_int calls;
  atomic_int status;
  redlock_lock_t *_Atomic lock;
  pthread_t thread; /* published by the increment of calls */
  atomic_int thread_set;
  atomic_int other_thread;
} fx_rec_t;
void fx_rec_init(fx_rec_t *r);
void fx_rec_lock_cb(int status, redlock_lock_t *lock, void *arg); /* arg: fx_rec_t */
void fx_rec_done_cb(int status, void *arg);
/* Predicate (rh_wait_until): the recorder was called. */
int fx_rec_called(void *arg);
/* Waits for the first call. */
int fx_rec_wait(fx_rec_t *r, int timeout_ms);

/* A lost-callback recorder (watch): calls and the last reason. */
typedef struct {
  atomic_int calls;
  atomic_int reason;
  redlock_lock_t *_Atomic lock;
  int awaited; /* fx_lost_wait's count (test thread only) */
} fx_lost_t;
void fx_lost_init(fx_lost_t *r);
void fx_lost_cb(redlock_lock_t *lock, int reason, void *arg); /* arg: fx_lost_t */
/* Waits until it was called at least `calls` times. */
int fx_lost_wait(fx_lost_t *r, int calls, int timeout_ms);

/* ==== waiting (fixture_wait.c) ==== */

/* A counting event with a monotonic timed wait, for worker threads. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  unsigned count;
} fx_event_t;
void fx_event_init(fx_event_t *ev);
void fx_event_destroy(fx_event_t *ev);
void fx_event_post(fx_event_t *ev);
/* Takes one post; 1 when there was one within timeout_ms, 0 on timeout. */
int fx_event_wait(fx_event_t *ev, int timeout_ms);

/* Stall monitor: a thread that sleeps 1 ms at a time and records the worst
 * oversleep, i.e. how long this process could not run when it should have.
 * Tests retry a timing-sensitive scenario only when it saw a stall at least
 * as long as the scenario's slack; safety assertions are never excused.
 * fx_teardown stops it when a failed test left it running. */
void fx_stall_monitor_start(void);
void fx_stall_monitor_stop(void);
void fx_stall_reset(void);
unsigned fx_stall_max_ms(void);

/* Fails the test unless a waiter got through within bound_ms after `what`
 * (the release that should have woken it): with its fallback retry of
 * fallback_ms, a later success means the release notification was lost.
 * Prints the delay with FX_VERBOSE. */
void fx_assert_woken(uint64_t after_ms, unsigned bound_ms, unsigned fallback_ms, const char *what);

/* Monotonic microseconds. */
uint64_t fx_now_us(void);
/* Sleeps ms (EINTR resumed): only to shape a fault's duration, never to wait
 * for an outcome. */
void fx_sleep_ms(unsigned ms);
/* "DIR/name", DIR being this executable's directory (a helper program or
 * shim built beside the test); just name when /proc/self/exe is unreadable. */
void fx_beside_self(char *buf, size_t size, const char *name);
/* Threads of this process (entries of /proc/self/task). */
int fx_thread_count(void);
/* A unique name per call ("api:WHAT:PID:SEQ"): tests never share resources. */
void fx_name(char *buf, size_t size, const char *what);
/* Declares char var[128] holding a unique name (fx_name). */
#define FX_NAME(var, what)                                                                         \
  char var[128];                                                                                   \
  fx_name(var, sizeof var, what)
/* Last resort against a hang: after `seconds` the process exits with a
 * message instead of waiting for the ctest timeout. */
void fx_watchdog(unsigned seconds);

/* ==== a blocking call in a thread (fixture_call.c) ==== */

typedef struct fx_call fx_call_t;
/* The call fx_call_start makes: its status; what it was granted into c->lock. */
typedef int (*fx_call_fn)(fx_call_t *c);
struct fx_call {
  /* Set by the test. */
  fx_call_fn fn;
  redlock_t *client;
  const char *name;
  uint32_t limit; /* fx_call_semaphore */
  uint32_t ttl_ms, wait_ms;
  int write; /* fx_call_rwlock: a write hold */
  /* Set by the thread: rh_now_ms() around the call, its status (1 until it
   * returned), the grant; `done` is posted when it returned. */
  uint64_t t_start, t_done;
  int rc;
  redlock_lock_t *lock;
  fx_event_t started, done;
  pthread_t thread;
};
/* Runs c->fn in a thread of its own; returns once that thread runs. */
void fx_call_start(fx_call_t *c);
/* 1 when the call returned within timeout_ms; joins the thread either way
 * (after waiting out the call's wait budget). */
int fx_call_join(fx_call_t *c, int timeout_ms);
/* Calls for fn: redlock_lock_wait, redlock_semaphore_acquire,
 * redlock_rwlock_read / _write. */
int fx_call_lock_wait(fx_call_t *c);
int fx_call_semaphore(fx_call_t *c);
int fx_call_rwlock(fx_call_t *c);

/* ==== coordination primitives (fixture_prims.c) ==== */

/* What a child holder does. */
typedef enum {
  FX_CHILD_SEM = 1, /* redlock_semaphore_acquire(name, limit, ttl, wait) */
  FX_CHILD_READ,    /* redlock_rwlock_read(name, ttl, wait) */
  FX_CHILD_WRITE,   /* redlock_rwlock_write(name, ttl, wait) */
} fx_child_kind_t;

/* Forks a child that opens its own client over the fixture's first n
 * masters (quarantine off, FX_SF_* timeouts, no retry), makes the call,
 * reports its status (fx_child_status), and then holds whatever it got
 * until it is killed.  Call it before this process opens a client or starts
 * a thread: a child forked from a threaded process could inherit a lock
 * (malloc's) held by another thread.  Returns the child's PID. */
pid_t fx_child_start(fx_t *fx, size_t n, fx_child_kind_t kind, const char *name, uint32_t limit,
                     uint32_t ttl_ms, uint32_t wait_ms);
/* The child's call status, or 1 when it has not answered within timeout_ms. */
int fx_child_status(pid_t pid, int timeout_ms);
/* SIGKILL + reap (by PID). */
void fx_child_kill(pid_t pid);
/* Kills every child still running (fx_teardown does). */
void fx_children_kill(void);

/* Holding intervals, for the chaos tests: a holder records [grant,
 * min(unlock, end of validity)] on the monotonic clock (all clients are in
 * this process); the checks look for overlaps. */
#define FX_MAX_INTERVALS 8192
typedef struct {
  uint64_t start_us, end_us;
  int exclusive; /* a write hold: overlaps nothing */
} fx_interval_t;
typedef struct {
  pthread_mutex_t mu;
  size_t n;
  fx_interval_t iv[FX_MAX_INTERVALS];
} fx_history_t;
void fx_history_init(fx_history_t *h);
void fx_history_destroy(fx_history_t *h);
void fx_history_add(fx_history_t *h, uint64_t start_us, int64_t validity_ms, uint64_t end_us,
                    int exclusive);
/* Most intervals that contain one instant. */
int fx_history_max_depth(const fx_history_t *h);
/* Pairs of overlapping intervals of which one is exclusive. */
size_t fx_history_exclusive_overlaps(const fx_history_t *h);

/* For duration_ms: again and again, SIGSTOPs two random masters of the
 * fixture's five (a majority keeps running) for 100..600 ms, then resumes
 * them for 50..250 ms. */
void fx_pause_chaos(fx_t *fx, unsigned duration_ms, unsigned seed);

/* One acquisition of a chaos worker (fx_chaos_run), on its own client and
 * random stream: the call's status; on REDLOCK_OK *hold is the grant and
 * *exclusive whether it must overlap no other hold. */
typedef int (*fx_chaos_acquire_fn)(redlock_t *client, unsigned *seed, redlock_lock_t **hold,
                                   int *exclusive);

typedef struct {
  int workers; /* clients (slots 0..workers-1), each in a thread */
  fx_chaos_acquire_fn acquire;
  unsigned hold_max_us; /* each grant is held for a random time below this */
  unsigned worker_seed; /* worker i's random stream starts at worker_seed + i */
  unsigned chaos_seed;  /* of fx_pause_chaos */
  unsigned duration_ms; /* of fx_pause_chaos */
} fx_chaos_t;

/* Runs the workers (retry forever every 30 + up to 30 ms; errors logged)
 * against fx_pause_chaos on the fixture's five masters, recording every
 * grant's holding interval into history.  Fails the test when a worker saw
 * a status other than OK, ETIMEDOUT, ENOQUORUM, ELOCKED or EEXPIRED.
 * Returns the grants; *exclusive (may be NULL) gets the exclusive ones. */
unsigned fx_chaos_run(fx_t *fx, const fx_chaos_t *chaos, fx_history_t *history,
                      unsigned *exclusive);

#endif
