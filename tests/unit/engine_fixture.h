/* engine_fixture.h: a whole client over fake masters, for the engine's unit
 * tests (test_lock_*.c).  The client is made by the internal seam
 * client_open_for_test on a loop of the test's own: its rounds go to a
 * fake_transport_t, it reads the stepped clock of fake_clock.h, and its
 * timers fire only when the test steps that clock.  The tests use the public
 * API on it, pump the loop, answer the fake masters and step the clock: no
 * socket, no server, no thread, no sleep.
 *
 * Closing checks what a close must leave: every request answered or dropped
 * (the client's masters drop their connections when it shuts them down, as
 * hiredis does), no timer pending, every loop handle closed (uv_loop_close
 * succeeds); ASan checks that nothing leaked. */
#ifndef REDLOCK_TEST_ENGINE_FIXTURE_H
#define REDLOCK_TEST_ENGINE_FIXTURE_H

#include <stdint.h>
#include <uv.h>

#include "fake_clock.h"
#include "fake_transport.h"
#include "redlock.h"

#define ENGINE_MASTERS 5
#define ENGINE_REQUEST_MS 100 /* the request timeout */
#define ENGINE_START_NS 1000000000000u

typedef struct {
  uv_loop_t loop;
  fake_transport_t fake;
  redlock_t *client;
  int closing; /* redlock_close_uv was called */
  int closed;  /* its callback ran */
  unsigned log_lines;
} engine_fx_t;

/* Options for the fixture's client: five masters on loopback (never
 * connected), request timeout ENGINE_REQUEST_MS, one try (no retry), debug
 * logging into the fixture.  The test may change them, then engine_open. */
redlock_options_t *engine_options(void);
/* Opens the client (frees opts); asserts success. */
engine_fx_t *engine_open(redlock_options_t *opts);
engine_fx_t *engine_open_default(void);
/* What a test's client differs in from engine_options(): the data a
 * cmocka fixture opens it with. */
typedef struct {
  int fencing;
  int reentrant;
  int retry; /* 1: retry_count, retry_delay_ms and retry_jitter_ms apply */
  int retry_count;
  uint32_t retry_delay_ms, retry_jitter_ms;
  uint32_t request_ms; /* 0: ENGINE_REQUEST_MS */
} engine_config_t;
extern engine_config_t engine_fenced; /* fencing on */

/* cmocka fixtures: engine_setup opens a client into *state, with the
 * engine_config_t *state points to when it is not NULL (cmocka's prestate);
 * engine_teardown closes it with engine_close's checks. */
int engine_setup(void **state);
int engine_teardown(void **state);
/* A test between engine_setup (a default client) and engine_teardown. */
#define ENGINE_TEST(f) cmocka_unit_test_setup_teardown(f, engine_setup, engine_teardown)
/* The same with the client configured by *cfg (an engine_config_t). */
#define ENGINE_TEST_WITH(f, cfg)                                                                   \
  cmocka_unit_test_prestate_setup_teardown(f, engine_setup, engine_teardown, cfg)
/* Opened by engine_setup, closed by the test itself (to check what the close did). */
#define ENGINE_TEST_CLOSING(f, cfg)                                                                \
  cmocka_unit_test_prestate_setup_teardown(f, engine_setup, NULL, cfg)

/* Starts closing the client (redlock_close_uv) and runs the loop once. */
void engine_fx_begin_close(engine_fx_t *e);
/* Closes the client (if not begun), steps the clock until it is closed and
 * checks what a close must leave; frees e. */
void engine_close(engine_fx_t *e);

/* A master announces the release of resource `resource` (the notifier's
 * channel for its key, with the client's key prefix "": keyname.h). */
void engine_announce(engine_fx_t *e, const char *resource);
/* ... a release on the channel `channel` (NUL-terminated). */
void engine_announce_channel(engine_fx_t *e, const char *channel);

/* What a callback was told, and how often (each must run exactly once). */
typedef struct {
  int calls;
  int status;
  redlock_lock_t *lock;
} lock_result_t;
typedef struct {
  int calls;
  int status;
} done_result_t;
typedef struct {
  int calls;
  int reason;
  redlock_lock_t *lock;
} lost_result_t;

void on_lock(int status, redlock_lock_t *lock, void *arg); /* arg: lock_result_t */
void on_done(int status, void *arg);                       /* arg: done_result_t */
void on_lost(redlock_lock_t *lock, int reason, void *arg); /* arg: lost_result_t */

/* redlock_lock_async (asserted accepted), then the loop runs: its first
 * round is out. */
void engine_lock(engine_fx_t *e, const char *resource, uint32_t ttl_ms, uint32_t wait_ms,
                 lock_result_t *r);
/* redlock_semaphore_acquire_async (asserted accepted), then the loop runs. */
void engine_sem(engine_fx_t *e, const char *name, uint32_t limit, uint32_t ttl_ms, uint32_t wait_ms,
                lock_result_t *r);
/* redlock_watch (asserted accepted), then the loop runs. */
void engine_watch(engine_fx_t *e, redlock_lock_t *lock, lost_result_t *lost);
/* redlock_extend_async (asserted accepted), then the loop runs. */
void engine_extend(engine_fx_t *e, redlock_lock_t *lock, uint32_t ttl_ms, done_result_t *d);
/* Takes resource for ttl_ms: every master says OK at once.  Returns the
 * handle (asserts the grant). */
redlock_lock_t *engine_acquire(engine_fx_t *e, const char *resource, uint32_t ttl_ms);
/* Unlocks, every master answers the release with `reply` (1: deleted, 0:
 * not ours); the callback must run once with `status`. */
void engine_unlock(engine_fx_t *e, redlock_lock_t *lock, long long reply, int status);
/* engine_unlock answered 1 everywhere: REDLOCK_OK expected. */
void engine_release(engine_fx_t *e, redlock_lock_t *lock);

#endif
