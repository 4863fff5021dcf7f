/* sf_common.h: shared fixture of the safety tests (tests/safety): real
 * redis-server processes (tests/support/redis_harness.h), up to SF_MAX_CLIENTS
 * redlock clients over them, each with its own thread-safe log capture, plain
 * hiredis connections for looking at the masters, and timed events for
 * synchronizing with worker threads.  Waits are event-driven with deadlines
 * (rh_wait_until, sf_event_wait), never sleeps.  Teardown always resumes
 * paused servers, closes the clients and stops the servers, even when a test
 * failed halfway. */
#ifndef SF_COMMON_H
#define SF_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "redis_harness.h"
#include "redlock.h"

#define SF_MAX_SERVERS 5
#define SF_MAX_CLIENTS 6

/* Timeouts the tests configure: far above what loopback needs, even under
 * ASan, because shared test machines stop processes for up to ~1 s at a
 * time.  (The watch test sets its own, short, request timeout.) */
#define SF_CONNECT_MS 2000u
#define SF_REQUEST_MS 500u

typedef struct sf_log sf_log_t;

typedef struct {
  rh_server_t *servers[SF_MAX_SERVERS];
  size_t n;
  redlock_t *clients[SF_MAX_CLIENTS];
  sf_log_t *logs[SF_MAX_CLIENTS];
} sf_fixture_t;

/* cmocka setup/teardown: n fresh servers per test. */
int sf_setup_1(void **state);
int sf_setup_3(void **state);
int sf_setup_5(void **state);
int sf_teardown(void **state);

/* Options over the first n servers, logging (at min_level) into client slot
 * `slot`'s capture: quarantine OFF (the servers are freshly started; tests of
 * the quarantine turn it on explicitly), SF_CONNECT_MS / SF_REQUEST_MS,
 * retry 5 x (20 + up to 20) ms. */
redlock_options_t *sf_options(sf_fixture_t *fx, int slot, size_t n, int log_min_level);
/* Opens client slot `slot` with opts (which it frees); asserts success. */
redlock_t *sf_open(sf_fixture_t *fx, int slot, redlock_options_t *opts);
void sf_close(sf_fixture_t *fx, int slot);

/* Log capture of one client slot. */
int sf_log_contains(sf_fixture_t *fx, int slot, const char *needle);
const char *sf_log_text(sf_fixture_t *fx, int slot); /* static copy, main thread only */
void sf_log_clear(sf_fixture_t *fx, int slot);
/* Occurrences of needle in the slot's log. */
unsigned sf_log_count(sf_fixture_t *fx, int slot, const char *needle);
/* Waits (deadline) until the slot's log contains needle. */
int sf_wait_log(sf_fixture_t *fx, int slot, const char *needle, int timeout_ms);

/* Writes "127.0.0.1:PORT", the library's label of a master, into buf. */
void sf_label(const rh_server_t *s, char *buf, size_t size);

/* Server state through the harness (asserts the server answered). */
int sf_key_is(rh_server_t *s, const char *key, const char *value);
int sf_key_absent(rh_server_t *s, const char *key);
int sf_wait_key_absent(rh_server_t *s, const char *key, int timeout_ms);
long long sf_pttl(rh_server_t *s, const char *key);
/* GET as an unsigned integer; 0 when absent. */
uint64_t sf_get_u64(rh_server_t *s, const char *key);

/* Trylock until it succeeds or timeout_ms passes; returns the last status. */
int sf_trylock_until(redlock_t *c, const char *res, uint32_t ttl_ms, int timeout_ms,
                     redlock_lock_t **out);

/* Waits until the votes of every master in `mask` (bit i = server i) count
 * for client c, a client over the fixture's first n masters (no restart
 * quarantine left for them), by winning probe locks: for each window of Q of
 * those masters, a probe key is pre-set with a foreign value on all the other
 * masters, so the probe can only be won with the votes of that window.
 * Returns 1, or 0 at the deadline. */
int sf_wait_votes_count(sf_fixture_t *fx, redlock_t *c, size_t n, unsigned mask, int timeout_ms);

/* A plain synchronous hiredis connection to a server (asserts success). */
redisContext *sf_redis(const rh_server_t *s, int timeout_ms);

/* Stall monitor: a thread that sleeps 1 ms at a time and records the worst
 * oversleep, i.e. how long this process could not run when it should have.
 * On a shared, overloaded machine the client's loop thread can be held up as
 * long; a timing deadline missed during such a stall says nothing about the
 * library.  Tests retry a timing-sensitive scenario only when the monitor
 * saw a stall at least as long as the scenario's slack; safety assertions
 * are never excused. */
void sf_stall_monitor_start(void);
void sf_stall_monitor_stop(void);
void sf_stall_reset(void);
/* Worst oversleep (ms) since the last reset. */
unsigned sf_stall_max_ms(void);

/* A counting event with a monotonic timed wait, for worker threads. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  unsigned count;
} sf_event_t;
void sf_event_init(sf_event_t *ev);
void sf_event_destroy(sf_event_t *ev);
void sf_event_post(sf_event_t *ev);
/* Takes one post; 1 when there was one within timeout_ms, 0 on timeout. */
int sf_event_wait(sf_event_t *ev, int timeout_ms);

#endif
