/* test_kit_oom.c: the test kit (include/redlock_testing.h) when memory
 * cannot be had, c-ares style: for k = 1, 2, ... the k-th allocation fails
 * (tests/support's oom_alloc: the library's own through its allocator
 * table, libuv's and hiredis 1.x's through their hooks), on the caller's
 * thread or the kit's, until a k at which the call under test completes
 * before its k-th allocation.
 *
 * Asserts, for each k:
 *  - redlock_testing_start returns REDLOCK_OK or REDLOCK_ENOMEM (or
 *    REDLOCK_EIO: a socket or thread that could not be made), leaves *out
 *    NULL when it fails, and OK when nothing failed; started, its fakes
 *    grant a lock once memory is back;
 *  - a lock round over a started kit whose allocations fail (the kit's
 *    thread parsing and answering) returns OK, or an error of the round
 *    (no quorum, locked, expired), never hangs past the alarm; once memory
 *    is back the fakes grant again (a connection the fake dropped is
 *    reconnected by the client);
 *  - a connection accepted while the kit's thread cannot allocate is
 *    answered or closed at once, never left hanging, and the next one is
 *    served once memory is back; at least one was closed;
 *  - a failure is met at all (the sweep is not vacuous).
 * Under ASan nothing may leak (checked at exit). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "oom_alloc.h"
#include "redlock.h"
#include "redlock_testing.h"

#define OOM_MAX_K 3000
#define OOM_ALARM_S 60
#define TTL 10000u
#define ROUND_TTL 1000u /* what a lost release leaves lapses soon */

static redlock_t *open_client(const redlock_testing_t *kit) {
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  assert_int_equal(redlock_testing_add_nodes(kit, opts), REDLOCK_OK);
  assert_int_equal(redlock_options_set_quarantine(opts, 0), REDLOCK_OK);
  assert_int_equal(redlock_options_set_retry(opts, 0, 10, 10), REDLOCK_OK);
  assert_int_equal(redlock_options_set_timeouts(opts, 1000, 500), REDLOCK_OK);
  redlock_t *c = NULL;
  assert_int_equal(redlock_open(&c, opts), REDLOCK_OK);
  redlock_options_free(opts);
  return c;
}

/* The fakes grant a lock within a deadline (connections dropped under
 * memory pressure are made again by the client's backoff). */
static void assert_grants(redlock_t *c, const char *resource) {
  redlock_lock_t *lock = NULL;
  int rc = REDLOCK_ENOQUORUM;
  for (int i = 0; i < 50 && rc != REDLOCK_OK; i++)
    rc = redlock_lock_wait(c, resource, TTL, 200, &lock);
  assert_int_equal(rc, REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
}

static void test_start_oom(void **state) {
  (void)state;
  int failed_any = 0;
  for (unsigned k = 1; k <= OOM_MAX_K; k++) {
    redlock_testing_t *kit = (redlock_testing_t *)1;
    int rc;
    oom_arm(k, "redlock_testing_start");
    OOM_CALL(rc = redlock_testing_start(3, 0, &kit));
    int failed = oom_disarm();
    failed_any |= failed;
    if (!failed) {
      assert_int_equal(rc, REDLOCK_OK);
    } else {
      assert_true(rc == REDLOCK_OK || rc == REDLOCK_ENOMEM || rc == REDLOCK_EIO);
    }
    if (rc != REDLOCK_OK) {
      assert_null(kit);
      continue;
    }
    redlock_t *c = open_client(kit);
    assert_grants(c, "start");
    redlock_close(c);
    redlock_testing_stop(kit);
    if (!failed)
      break;
  }
  assert_true(failed_any);
}

static void test_round_oom(void **state) {
  (void)state;
  redlock_testing_t *kit = NULL;
  assert_int_equal(redlock_testing_start(3, 0, &kit), REDLOCK_OK);
  redlock_t *c = open_client(kit);
  assert_grants(c, "warm");
  int failed_any = 0;
  for (unsigned k = 1; k <= OOM_MAX_K; k++) {
    redlock_lock_t *lock = NULL;
    int rc;
    oom_arm(k, "a lock round over the kit");
    OOM_CALL(rc = redlock_trylock(c, "round", ROUND_TTL, &lock));
    int failed = oom_disarm();
    failed_any |= failed;
    if (rc == REDLOCK_OK) {
      redlock_unlock(c, lock);
    } else {
      assert_true(failed);
      assert_true(rc == REDLOCK_ENOMEM || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_ELOCKED ||
                  rc == REDLOCK_EEXPIRED);
    }
    /* Whatever was lost (a reply, a connection, a release), the fakes
     * grant again once memory is back: keys of a failed release lapse. */
    redlock_lock_t *again = NULL;
    int rc2 = REDLOCK_ELOCKED;
    for (int i = 0; i < 50 && rc2 != REDLOCK_OK; i++)
      rc2 = redlock_lock_wait(c, "round", ROUND_TTL, ROUND_TTL + 200, &again);
    assert_int_equal(rc2, REDLOCK_OK);
    assert_int_equal(redlock_unlock(c, again), REDLOCK_OK);
    if (!failed)
      break;
  }
  assert_true(failed_any);
  redlock_close(c);
  redlock_testing_stop(kit);
}

/* One request on a new connection to the fake at path: 1 when it was
 * answered +PONG, 0 when the fake closed the connection instead (what a
 * server does with a connection it has no memory for); a hang fails. */
static int ping_once(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct timeval tv = {5, 0};
  assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
  assert_int_equal(connect(fd, (const struct sockaddr *)&addr, sizeof addr), 0);
  const char ping[] = "*1\r\n$4\r\nPING\r\n";
  ssize_t w = send(fd, ping, sizeof ping - 1, MSG_NOSIGNAL);
  char buf[16] = {0};
  size_t got = 0;
  while (w > 0 && got < 7) {
    ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
      break;
    assert_true(n > 0); /* EAGAIN: neither answered nor closed in 5 s */
    got += (size_t)n;
  }
  close(fd);
  if (got == 0)
    return 0;
  assert_string_equal(buf, "+PONG\r\n");
  return 1;
}

/* Connections accepted while the fake's thread cannot allocate: each is
 * answered or closed, never left hanging, and the next one, with memory
 * back, is served. */
static void test_accept_oom(void **state) {
  (void)state;
  redlock_testing_t *kit = NULL;
  assert_int_equal(redlock_testing_start(1, 0, &kit), REDLOCK_OK);
  const char *uri = redlock_testing_uri(kit, 0);
  assert_non_null(uri);
  assert_memory_equal(uri, "unix://", 7);
  const char *path = uri + 7;
  assert_int_equal(ping_once(path), 1);
  int failed_any = 0, refused_any = 0;
  for (unsigned k = 1; k <= OOM_MAX_K; k++) {
    oom_arm(k, "a connection accepted by the kit");
    int served = ping_once(path);
    int failed = oom_disarm();
    failed_any |= failed;
    refused_any |= !served;
    assert_true(served || failed);
    assert_int_equal(ping_once(path), 1);
    if (!failed)
      break;
  }
  assert_true(failed_any);
  assert_true(refused_any);
  redlock_testing_stop(kit);
}

int main(void) {
  oom_install(OOM_ALARM_S);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_start_oom),
      cmocka_unit_test(test_round_oom),
      cmocka_unit_test(test_accept_oom),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
