/* engine_fixture.c: a client over fake masters and a stepped clock (see
 * engine_fixture.h). */
#include "engine_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/client.h"
#include "proto/keyname.h"
#include "redlock_uv.h"
#include "util/names.h"

static void log_cb(int level, const char *msg, void *arg) {
  (void)level;
  (void)msg;
  ((engine_fx_t *)arg)->log_lines++;
}

redlock_options_t *engine_options(void) {
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  for (int i = 0; i < ENGINE_MASTERS; i++) {
    char uri[64];
    snprintf(uri, sizeof uri, "redis://127.0.0.1:%d", 7001 + i);
    assert_int_equal(redlock_options_add_node(opts, uri), 0);
  }
  assert_int_equal(redlock_options_set_timeouts(opts, 1000, ENGINE_REQUEST_MS), 0);
  assert_int_equal(redlock_options_set_retry(opts, 0, 0, 0), 0);
  return opts;
}

engine_fx_t *engine_open(redlock_options_t *opts) {
  engine_fx_t *e = calloc(1, sizeof *e);
  assert_non_null(e);
  assert_int_equal(uv_loop_init(&e->loop), 0);
  fake_clock_init(&e->loop, ENGINE_START_NS);
  fake_transport_init(&e->fake, ENGINE_MASTERS, fake_now_ns);
  e->fake.check_slots = 1;
  assert_int_equal(redlock_options_set_log(opts, REDLOCK_LOG_DEBUG, log_cb, e), 0);
  /* The fake masters are the client's voters: its teardown shuts them down,
   * and they drop what is still out, as a real connection's does. */
  int rc = client_open_for_test(&e->client, opts, &e->loop, e->fake.voters, fake_timebase());
  redlock_options_free(opts);
  assert_int_equal(rc, 0);
  return e;
}

engine_fx_t *engine_open_default(void) { return engine_open(engine_options()); }

engine_config_t engine_fenced = {.fencing = 1};

int engine_setup(void **state) {
  const engine_config_t *cfg = *state;
  redlock_options_t *opts = engine_options();
  if (cfg != NULL) {
    assert_int_equal(redlock_options_set_fencing(opts, cfg->fencing), 0);
    assert_int_equal(redlock_options_set_reentrant(opts, cfg->reentrant), 0);
    if (cfg->retry)
      assert_int_equal(redlock_options_set_retry(opts, cfg->retry_count, cfg->retry_delay_ms,
                                                 cfg->retry_jitter_ms),
                       0);
    if (cfg->request_ms != 0)
      assert_int_equal(redlock_options_set_timeouts(opts, 1000, cfg->request_ms), 0);
  }
  *state = engine_open(opts);
  return 0;
}

int engine_teardown(void **state) {
  engine_close(*state);
  return 0;
}

static void closed_cb(void *arg) { ((engine_fx_t *)arg)->closed++; }

void engine_fx_begin_close(engine_fx_t *e) {
  assert_false(e->closing);
  e->closing = 1;
  redlock_close_uv(e->client, closed_cb, e);
  fake_pump();
}

void engine_close(engine_fx_t *e) {
  if (!e->closing)
    engine_fx_begin_close(e);
  /* Draining may wait for round deadlines: step the clock until closed. */
  for (int step = 0; step < 1000 && !e->closed; step++)
    fake_advance_ms(10);
  assert_int_equal(e->closed, 1);
  assert_int_equal(fake_outstanding_all(&e->fake), 0);
  assert_int_equal(fake_timers_pending(), 0);
  uv_run(&e->loop, UV_RUN_NOWAIT);
  assert_int_equal(uv_loop_close(&e->loop), 0);
  free(e);
}

void engine_announce_channel(engine_fx_t *e, const char *channel) {
  notify_announce(&e->client->notify, channel, strlen(channel), NULL, 0);
  fake_pump();
}

void engine_announce(engine_fx_t *e, const char *resource) {
  char name[256];
  size_t key_len = strlen(resource);
  assert_true(keyname_len(sizeof NOTIFY_CHANNEL_PREFIX - 1, resource, key_len, 0) < sizeof name);
  keyname_build(name, NOTIFY_CHANNEL_PREFIX, sizeof NOTIFY_CHANNEL_PREFIX - 1, resource, key_len,
                "", 0);
  engine_announce_channel(e, name);
}

void on_lock(int status, redlock_lock_t *lock, void *arg) {
  lock_result_t *r = arg;
  r->calls++;
  r->status = status;
  r->lock = lock;
  assert_true(status == REDLOCK_OK ? lock != NULL : lock == NULL);
}

void on_done(int status, void *arg) {
  done_result_t *r = arg;
  r->calls++;
  r->status = status;
}

void on_lost(redlock_lock_t *lock, int reason, void *arg) {
  lost_result_t *r = arg;
  r->calls++;
  r->reason = reason;
  r->lock = lock;
}

void engine_lock(engine_fx_t *e, const char *resource, uint32_t ttl_ms, uint32_t wait_ms,
                 lock_result_t *r) {
  assert_int_equal(redlock_lock_async(e->client, resource, ttl_ms, wait_ms, on_lock, r), 0);
  fake_pump();
}

void engine_sem(engine_fx_t *e, const char *name, uint32_t limit, uint32_t ttl_ms, uint32_t wait_ms,
                lock_result_t *r) {
  assert_int_equal(
      redlock_semaphore_acquire_async(e->client, name, limit, ttl_ms, wait_ms, on_lock, r), 0);
  fake_pump();
}

void engine_watch(engine_fx_t *e, redlock_lock_t *lock, lost_result_t *lost) {
  assert_int_equal(redlock_watch(e->client, lock, on_lost, lost), 0);
  fake_pump();
}

void engine_extend(engine_fx_t *e, redlock_lock_t *lock, uint32_t ttl_ms, done_result_t *d) {
  assert_int_equal(redlock_extend_async(e->client, lock, ttl_ms, on_done, d), 0);
  fake_pump();
}

redlock_lock_t *engine_acquire(engine_fx_t *e, const char *resource, uint32_t ttl_ms) {
  lock_result_t r = {0};
  engine_lock(e, resource, ttl_ms, 0, &r);
  for (unsigned i = 0; i < e->fake.n; i++)
    assert_int_equal(fake_outstanding(&e->fake, i), 1);
  fake_reply_ok_all(&e->fake);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.status, REDLOCK_OK);
  return r.lock;
}

void engine_unlock(engine_fx_t *e, redlock_lock_t *lock, long long reply, int status) {
  done_result_t d = {0};
  assert_int_equal(redlock_unlock_async(e->client, lock, on_done, &d), 0);
  fake_pump();
  fake_reply_int_all(&e->fake, reply);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.status, status);
}

void engine_release(engine_fx_t *e, redlock_lock_t *lock) { engine_unlock(e, lock, 1, REDLOCK_OK); }
