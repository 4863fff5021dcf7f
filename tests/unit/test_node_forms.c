/* test_node_forms.c: a master without Lua, through a whole client
 * (redlock_open_uv on the test's loop) over the mock master of
 * tests/support/mock_master.h: SCRIPT LOAD refused as an unknown command,
 * COMMAND INFO describing DELIFEQ only.  The client warns that the master
 * runs no scripts; a lock is taken with SET NX PX and released with
 * DELIFEQ, the release's script-free form, followed by the PUBLISH the
 * script would have sent; no EVALSHA or EVAL reaches the master. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "node_fixture.h"
#include "redlock.h"
#include "redlock_uv.h"

/* The no-scripts warnings the client logged. */
static unsigned noscripts_warned;

static void on_log(int level, const char *msg, void *arg) {
  (void)arg;
  if (level >= REDLOCK_LOG_WARN && strstr(msg, "runs no scripts") != NULL)
    noscripts_warned++;
}

static void test_release_by_delifeq(void **state) {
  nf_t *f = *state;
  mock_master_on(f->mock, "SCRIPT", MOCK_REPLY, "-ERR unknown command 'SCRIPT'\r\n", 0);
  mock_master_on(f->mock, "COMMAND", MOCK_REPLY, "*2\r\n*1\r\n$7\r\ndelifeq\r\n*-1\r\n", 0);
  mock_master_on(f->mock, "DELIFEQ", MOCK_REPLY, ":1\r\n", 0);
  static nf_client_t r;
  memset(&r, 0, sizeof r);
  noscripts_warned = 0;
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  assert_int_equal(redlock_options_add_node(opts, mock_master_uri(f->mock, NULL, NULL)), 0);
  assert_int_equal(redlock_options_set_log(opts, REDLOCK_LOG_WARN, on_log, NULL), 0);
  assert_int_equal(redlock_open_uv(&r.client, opts, &f->loop), REDLOCK_OK);
  redlock_options_free(opts);

  assert_int_equal(redlock_lock_async(r.client, "forms", 10000, 0, nf_client_on_lock, &r),
                   REDLOCK_OK);
  assert_true(mock_run_until(&f->loop, nf_client_locked, &r, NF_WAIT_MS));
  assert_int_equal(r.lock_status, REDLOCK_OK);
  assert_int_equal(noscripts_warned, 1);
  const mock_cmd_t *set = mock_master_last(f->mock, "SET");
  assert_non_null(set);
  assert_true(set->argc >= 4);
  assert_string_equal(set->argv[3], "NX");

  assert_int_equal(redlock_unlock_async(r.client, r.lock, nf_client_on_unlock, &r), REDLOCK_OK);
  assert_true(mock_run_until(&f->loop, nf_client_unlocked, &r, NF_WAIT_MS));
  assert_int_equal(r.unlock_status, REDLOCK_OK);
  const mock_cmd_t *del = mock_master_last(f->mock, "DELIFEQ");
  assert_non_null(del);
  assert_int_equal(del->argc, 3);
  assert_string_equal(del->argv[2], set->argv[2]); /* our value */
  assert_int_equal(mock_master_count(f->mock, "EVALSHA"), 0);
  assert_int_equal(mock_master_count(f->mock, "EVAL"), 0);

  redlock_close_uv(r.client, nf_client_on_closed, &r);
  assert_true(mock_run_until(&f->loop, nf_client_closed, &r, NF_WAIT_MS));
  /* The announcement, written once the release's reply said it deleted,
   * has reached the mock by the time the client is closed. */
  assert_int_equal(mock_master_count(f->mock, "PUBLISH"), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_release_by_delifeq, nf_setup, nf_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
