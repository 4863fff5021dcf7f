/* it_common.h: shared fixture for the cmocka integration tests: a set of
 * real redis-server processes (tests/support/redis_harness.h), up to a few
 * redlock clients over them, and a thread-safe capture of the clients' log.
 * Teardown always resumes paused servers, closes the clients and stops the
 * servers, even when a test failed halfway. */
#ifndef IT_COMMON_H
#define IT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "redis_harness.h"
#include "redlock.h"

#define IT_MAX_SERVERS 5
#define IT_MAX_CLIENTS 3

/* Timeouts the tests configure.  Generous for loopback, even under ASan;
 * assertions on elapsed time are derived from them, never tighter. */
#define IT_CONNECT_MS 500u
#define IT_REQUEST_MS 500u

typedef struct it_log it_log_t;

typedef struct {
  rh_server_t *servers[IT_MAX_SERVERS];
  size_t n;
  redlock_t *clients[IT_MAX_CLIENTS];
  it_log_t *log;
} it_fixture_t;

/* cmocka group/test fixtures: n fresh servers per test (no options). */
int it_setup_1(void **state);
int it_setup_2(void **state);
int it_setup_3(void **state);
int it_setup_5(void **state);
/* A fixture with no servers: the test starts its own (passwords, ACLs). */
int it_setup_0(void **state);
int it_teardown(void **state);

/* Options for the fixture's servers (or only the first n of them): quarantine
 * off (the servers are freshly started: see DESIGN.md), IT_CONNECT_MS /
 * IT_REQUEST_MS, retry 2 x (20 + up to 20) ms, log captured at min_level. */
redlock_options_t *it_options(it_fixture_t *fx, size_t n, int log_min_level);
/* Same, for explicit URIs. */
redlock_options_t *it_options_uris(it_fixture_t *fx, const char *const *uris, size_t n,
                                   int log_min_level);
/* Opens client slot `slot` with opts (which it frees); asserts success. */
redlock_t *it_open(it_fixture_t *fx, int slot, redlock_options_t *opts);
/* Closes client slot `slot` now (NULL-safe). */
void it_close(it_fixture_t *fx, int slot);

/* Log capture. */
int it_log_contains(it_fixture_t *fx, const char *needle);
/* Copy of the captured log, for failure messages (static buffer). */
const char *it_log_text(it_fixture_t *fx);
void it_log_clear(it_fixture_t *fx);
/* 1 when the log reports that this master missed a request deadline or lost
 * its connection.  The library promises a quorum, not every master: a
 * master it gave up on (a loaded machine can push a reply past the request
 * timeout) may legitimately miss a command. */
int it_log_master_troubled(it_fixture_t *fx, rh_server_t *s);

/* GET key on a server: 1 when it holds `value`, 0 when it holds something
 * else or nothing; asserts the server answered. */
int it_key_is(rh_server_t *s, const char *key, const char *value);
/* 1 when the key does not exist on the server. */
int it_key_absent(rh_server_t *s, const char *key);
/* Waits (deadline timeout_ms) until the key is gone from the server: for
 * releases the library sends without waiting (after a lost round). */
int it_wait_key_absent(rh_server_t *s, const char *key, int timeout_ms);
/* Waits (deadline timeout_ms) until the server holds key = value. */
int it_wait_key_is(rh_server_t *s, const char *key, const char *value, int timeout_ms);
/* Waits (deadline timeout_ms) until lo_ms < PTTL of the key <= hi_ms. */
int it_wait_pttl_in(rh_server_t *s, const char *key, long long lo_ms, long long hi_ms,
                    int timeout_ms);
/* PTTL of a key in ms (-2 absent, -1 no expiry). */
long long it_pttl(rh_server_t *s, const char *key);

/* Asserts that a redlock call returned `want`; on failure prints both
 * error names, the client's last votes and the captured log. */
#define IT_ASSERT_RC(fx, client, call, want)                                                       \
  it_check_rc((fx), (client), (call), (want), #call, __FILE__, __LINE__)
void it_check_rc(it_fixture_t *fx, redlock_t *client, int rc, int want, const char *what,
                 const char *file, int line);

/* Elapsed time of a call, for deadline checks. */
#define IT_TIMED(elapsed_ms, expr)                                                                 \
  do {                                                                                             \
    uint64_t it_t0_ = rh_now_ms();                                                                 \
    expr;                                                                                          \
    (elapsed_ms) = rh_now_ms() - it_t0_;                                                           \
  } while (0)

#endif
