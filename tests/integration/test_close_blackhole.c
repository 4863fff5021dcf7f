/* test_close_blackhole.c: redlock_close stays bounded when a master stops
 * answering without closing its connection (black-holed by our fault proxy):
 * the client holds a lock, one of three masters goes silent, and close must
 * release on the others and return within the request timeout plus slack,
 * although the silent master's replies never come.  (A regression: close used
 * to wait for every reply, i.e. forever, found by the torture test.)  Also
 * checks that the lock is released on the live masters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "fault_proxy.h"
#include "fixture.h"

static void test_close_with_blackholed_master(void **state) {
  fx_t *fx = *state;
  fault_proxy_t *proxy = NULL;
  assert_int_equal(fault_proxy_start(&proxy, "127.0.0.1", rh_server_port(fx->servers[0])), 0);

  char via_proxy[64];
  snprintf(via_proxy, sizeof via_proxy, "redis://127.0.0.1:%d", fault_proxy_port(proxy));
  const char *uris[3] = {via_proxy, rh_server_uri(fx->servers[1]), rh_server_uri(fx->servers[2])};
  redlock_t *client = fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_WARN));

  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_lock(client, "close:blackhole", 30000, &lock), REDLOCK_OK);
  /* A round whose reply from the silent master never comes, in flight at close. */
  assert_int_equal(fault_proxy_set_blackhole(proxy, 1), 0);
  assert_int_equal(redlock_extend(client, lock, 30000), REDLOCK_OK);

  uint64_t start = rh_now_ms();
  fx_close(fx, 0); /* releases the held lock */
  uint64_t took = rh_now_ms() - start;
  printf("  close took %llu ms (request timeout %u ms)\n", (unsigned long long)took,
         FX_IT_REQUEST_MS);
  assert_true(took < FX_IT_REQUEST_MS + 2000);
  assert_true(fx_wait_key_absent(fx->servers[1], "close:blackhole", 5000));
  assert_true(fx_wait_key_absent(fx->servers[2], "close:blackhole", 5000));
  fault_proxy_stop(proxy);
}

FX_MAIN("tests", &fx_profile_integration, FX_TEST(test_close_with_blackholed_master, 3))
