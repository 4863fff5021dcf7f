/* test_walk.c: one redlock_lock + redlock_unlock on a warm client, the call
 * docs/architecture.md walks ("One lock call, top to bottom").
 *
 * A client with its own I/O thread (redlock_open) over three mock masters
 * (tests/support/mock_master.h), which a thread of the test serves on its own
 * loop: no redis-server.  A few lock + unlock cycles warm the client (every
 * connection up, the pools and free lists filled, the scripts loaded), then
 * one more cycle is the walk.  Each cycle must succeed.
 *
 * In a --coverage build, `scripts/coverage.sh --walk` runs it with
 * REDLOCK_WALK_GCOV set: gcov's counters are reset (__gcov_reset) just before
 * the walk's cycle and written (__gcov_dump) once its votes are all in, so the
 * .gcda files hold the lines of that one cycle and what the I/O thread did
 * meanwhile.  Without coverage the two hooks do not exist (weak symbols) and
 * the test only checks the cycles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <uv.h>

#include "mock_master.h"
#include "redlock.h"
#include "unit_support.h"

/* libgcov's, in a --coverage build whose link pulls them in from the
 * libgcov archive (scripts/coverage.sh: -Wl,-u,__gcov_reset). */
extern void __gcov_reset(void) __attribute__((weak));
extern void __gcov_dump(void) __attribute__((weak));

#define WALK_MASTERS 3
#define WALK_WARM_CYCLES 20
/* After the walk's unlock returns (at its quorum), the time the last vote
 * takes to come in: every mock answers at once on loopback. */
#define WALK_SETTLE_MS 50

typedef struct {
  uv_loop_t loop;
  uv_thread_t thread;
  uv_async_t stop;
  mock_master_t *mocks[WALK_MASTERS];
  char uris[WALK_MASTERS][64];
} walk_servers_t;

/* On the servers' thread: closes the mocks and the async, so the loop ends. */
static void walk_stop_cb(uv_async_t *async) {
  walk_servers_t *s = async->data;
  for (int i = 0; i < WALK_MASTERS; i++)
    mock_master_close(s->mocks[i]);
  uv_close((uv_handle_t *)async, NULL);
}

static void walk_serve(void *arg) {
  walk_servers_t *s = arg;
  uv_run(&s->loop, UV_RUN_DEFAULT);
}

/* Three mocks of distinct servers (run ids), served on their own thread. */
static void walk_servers_start(walk_servers_t *s) {
  assert_int_equal(uv_loop_init(&s->loop), 0);
  for (int i = 0; i < WALK_MASTERS; i++) {
    s->mocks[i] = mock_master_start(&s->loop);
    assert_non_null(s->mocks[i]);
    char run_id[41];
    snprintf(run_id, sizeof run_id, "%040d", i + 1);
    mock_master_set_run_id(s->mocks[i], run_id);
    snprintf(s->uris[i], sizeof s->uris[i], "%s", mock_master_uri(s->mocks[i], NULL, NULL));
  }
  assert_int_equal(uv_async_init(&s->loop, &s->stop, walk_stop_cb), 0);
  s->stop.data = s;
  assert_int_equal(uv_thread_create(&s->thread, walk_serve, s), 0);
}

static void walk_servers_stop(walk_servers_t *s) {
  assert_int_equal(uv_async_send(&s->stop), 0);
  assert_int_equal(uv_thread_join(&s->thread), 0);
  assert_int_equal(uv_loop_close(&s->loop), 0);
}

/* One lock + unlock of resource. */
static void walk_cycle(redlock_t *client, const char *resource) {
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_lock(client, resource, 10000, &lock), REDLOCK_OK);
  assert_non_null(lock);
  assert_int_equal(redlock_unlock(client, lock), REDLOCK_OK);
}

static void test_walk_one_lock(void **state) {
  (void)state;
  walk_servers_t s;
  walk_servers_start(&s);

  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  for (int i = 0; i < WALK_MASTERS; i++)
    assert_int_equal(redlock_options_add_node(opts, s.uris[i]), 0);
  redlock_t *client = NULL;
  assert_int_equal(redlock_open(&client, opts), REDLOCK_OK);
  redlock_options_free(opts);

  for (int i = 0; i < WALK_WARM_CYCLES; i++)
    walk_cycle(client, "orders:42");

  int gcov = getenv("REDLOCK_WALK_GCOV") != NULL;
  if (gcov && (__gcov_reset == NULL || __gcov_dump == NULL))
    fail_msg("REDLOCK_WALK_GCOV: not a --coverage build linked with __gcov_reset and __gcov_dump");
  if (gcov)
    __gcov_reset();
  walk_cycle(client, "orders:42");
  uv_sleep(WALK_SETTLE_MS);
  if (gcov)
    __gcov_dump();

  redlock_close(client);
  walk_servers_stop(&s);
}

UNIT_MAIN(cmocka_unit_test(test_walk_one_lock))
