/* api_testing_kit.c: the test kit (include/redlock_testing.h) used as a
 * user's test would use it: public headers only, no redis-server.
 *
 * Asserts:
 *  - two clients over FakeMasters(3) exclude each other; killing two fakes
 *    gives REDLOCK_ENOQUORUM; restarted ones vote again;
 *  - virtual time: a 30 s lease lapses on the fakes after an advance, so
 *    another client wins it at once and the first one's extension is
 *    refused (REDLOCK_ELOST);
 *  - a paused fake holds up nothing (2 of 3 still decide) and answers once
 *    resumed; a slow one still counts when its replies come in time;
 *  - drop_key, has_key and key_count; a failover whose replica lags loses
 *    the key on that fake only;
 *  - "always grant" lets two clients hold at once; "always refuse" gives
 *    REDLOCK_ELOCKED;
 *  - fencing tokens rise; semaphores, read-write locks, elections and a
 *    woken wait work on the fakes;
 *  - over TCP (REDLOCK_TESTING_TCP) as over Unix sockets; a killed TCP fake
 *    keeps its port (no one else binds it) and restarts on it;
 *  - bad input: NULL kit, out-of-range index and counts, faults on a killed
 *    fake. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "redlock.h"
#include "redlock_testing.h"

#define TTL 10000u

static redlock_t *open_client(const redlock_testing_t *kit, int fencing) {
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  assert_int_equal(redlock_testing_add_nodes(kit, opts), REDLOCK_OK);
  assert_int_equal(redlock_options_set_retry(opts, 0, 10, 10), REDLOCK_OK);
  assert_int_equal(redlock_options_set_timeouts(opts, 1000, 300), REDLOCK_OK);
  /* A restarted fake is up 0 s: quarantine would keep it out for max TTL. */
  assert_int_equal(redlock_options_set_quarantine(opts, 0), REDLOCK_OK);
  assert_int_equal(redlock_options_set_fencing(opts, fencing), REDLOCK_OK);
  redlock_t *client = NULL;
  assert_int_equal(redlock_open(&client, opts), REDLOCK_OK);
  redlock_options_free(opts);
  return client;
}

/* 1 when a plain socket cannot bind the port of uri ("redis://127.0.0.1:P"). */
static int port_is_held(const char *uri) {
  const char *colon = strrchr(uri, ':');
  assert_non_null(colon);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)atoi(colon + 1));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int held = bind(fd, (const struct sockaddr *)&addr, sizeof addr) != 0 && errno == EADDRINUSE;
  close(fd);
  return held;
}

static void test_exclusion_and_quorum(void **state) {
  (void)state;
  redlock_testing_t *kit = NULL;
  assert_int_equal(redlock_testing_start(3, 0, &kit), REDLOCK_OK);
  assert_int_equal(redlock_testing_count(kit), 3);
  assert_non_null(strstr(redlock_testing_uri(kit, 0), "unix://"));
  redlock_t *a = open_client(kit, 0), *b = open_client(kit, 0);

  redlock_lock_t *la = NULL, *lb = NULL;
  assert_int_equal(redlock_lock(a, "job", TTL, &la), REDLOCK_OK);
  assert_true(redlock_lock_validity_ms(la) > 0);
  assert_int_equal(redlock_testing_key_count(kit, "job"), 3);
  assert_int_equal(redlock_trylock(b, "job", TTL, &lb), REDLOCK_ELOCKED);
  assert_int_equal(redlock_extend(a, la, TTL), REDLOCK_OK);
  assert_int_equal(redlock_unlock(a, la), REDLOCK_OK);
  assert_int_equal(redlock_testing_key_count(kit, "job"), 0);
  assert_int_equal(redlock_trylock(b, "job", TTL, &lb), REDLOCK_OK);
  assert_int_equal(redlock_unlock(b, lb), REDLOCK_OK);

  assert_int_equal(redlock_testing_kill(kit, 0), REDLOCK_OK);
  assert_int_equal(redlock_testing_kill(kit, 1), REDLOCK_OK);
  assert_int_equal(redlock_trylock(a, "job", TTL, &la), REDLOCK_ENOQUORUM);
  assert_int_equal(redlock_testing_kill(kit, 0), REDLOCK_EINVAL); /* already down */
  assert_int_equal(redlock_testing_pause(kit, 1), REDLOCK_EINVAL);

  assert_int_equal(redlock_testing_restart(kit, 0), REDLOCK_OK);
  assert_int_equal(redlock_testing_restart(kit, 1), REDLOCK_OK);
  /* Reconnection takes the client's backoff: wait for it with a deadline. */
  int rc = REDLOCK_ENOQUORUM;
  for (int i = 0; i < 100 && rc != REDLOCK_OK; i++) {
    rc = redlock_lock_wait(a, "job", TTL, 100, &la);
  }
  assert_int_equal(rc, REDLOCK_OK);
  assert_int_equal(redlock_unlock(a, la), REDLOCK_OK);
  redlock_close(a);
  redlock_close(b);
  redlock_testing_stop(kit);
}

static void test_virtual_time(void **state) {
  (void)state;
  redlock_testing_t *kit = NULL;
  assert_int_equal(redlock_testing_start(3, REDLOCK_TESTING_VIRTUAL_TIME, &kit), REDLOCK_OK);
  redlock_t *a = open_client(kit, 0), *b = open_client(kit, 0);
  redlock_lock_t *la = NULL, *lb = NULL;
  assert_int_equal(redlock_lock(a, "lease", 30000, &la), REDLOCK_OK);
  assert_int_equal(redlock_trylock(b, "lease", 30000, &lb), REDLOCK_ELOCKED);
  assert_int_equal(redlock_testing_advance(kit, 29000), REDLOCK_OK);
  assert_int_equal(redlock_testing_key_count(kit, "lease"), 3);
  assert_int_equal(redlock_testing_advance(kit, 1001), REDLOCK_OK);
  assert_int_equal(redlock_testing_key_count(kit, "lease"), 0);
  assert_int_equal(redlock_trylock(b, "lease", 30000, &lb), REDLOCK_OK);
  /* a's own clock still gives it time, but the masters say b holds it. */
  assert_int_equal(redlock_extend(a, la, 30000), REDLOCK_ELOST);
  redlock_unlock(a, la);
  assert_int_equal(redlock_unlock(b, lb), REDLOCK_OK);
  redlock_close(a);
  redlock_close(b);
  redlock_testing_stop(kit);
}

static void test_pause_slow_drop_failover(void **state) {
  (void)state;
  redlock_testing_t *kit = NULL;
  assert_int_equal(redlock_testing_start(3, 0, &kit), REDLOCK_OK);
  redlock_t *a = open_client(kit, 0);
  redlock_lock_t *la = NULL;

  assert_int_equal(redlock_testing_pause(kit, 2), REDLOCK_OK);
  assert_int_equal(redlock_lock(a, "p", TTL, &la), REDLOCK_OK);
  assert_int_equal(redlock_testing_has_key(kit, 0, "p"), 1);
  assert_int_equal(redlock_testing_has_key(kit, 1, "p"), 1);
  assert_int_equal(redlock_unlock(a, la), REDLOCK_OK);
  assert_int_equal(redlock_testing_resume(kit, 2), REDLOCK_OK);

  assert_int_equal(redlock_testing_slow(kit, 1, 20), REDLOCK_OK);
  assert_int_equal(redlock_lock(a, "s", TTL, &la), REDLOCK_OK);
  assert_int_equal(redlock_testing_key_count(kit, "s"), 3);
  assert_int_equal(redlock_testing_slow(kit, 1, 0), REDLOCK_OK);

  assert_int_equal(redlock_testing_drop_key(kit, 0, "s"), 1);
  assert_int_equal(redlock_testing_drop_key(kit, 0, "s"), 0);
  assert_int_equal(redlock_testing_key_count(kit, "s"), 2);
  /* A replica 60 s behind lacks the key; one with no lag keeps it. */
  assert_int_equal(redlock_testing_failover(kit, 2, 0), REDLOCK_OK);
  assert_int_equal(redlock_testing_has_key(kit, 2, "s"), 1);
  assert_int_equal(redlock_testing_failover(kit, 2, 60000), REDLOCK_OK);
  assert_int_equal(redlock_testing_has_key(kit, 2, "s"), 0);
  assert_int_equal(redlock_testing_key_count(kit, "s"), 1);
  redlock_unlock(a, la);

  assert_int_equal(redlock_testing_clock_jump(kit, 1, 1000), REDLOCK_OK);
  assert_int_equal(redlock_lock(a, "j", 1500, &la), REDLOCK_OK);
  assert_int_equal(redlock_testing_clock_jump(kit, 1, 2000), REDLOCK_OK);
  assert_int_equal(redlock_testing_has_key(kit, 1, "j"), 0);
  assert_int_equal(redlock_testing_has_key(kit, 0, "j"), 1);
  redlock_unlock(a, la);
  assert_true(redlock_testing_commands(kit, 0) > 0);
  redlock_close(a);
  redlock_testing_stop(kit);
}

static void test_modes(void **state) {
  (void)state;
  redlock_testing_t *kit = NULL;
  assert_int_equal(redlock_testing_start(3, REDLOCK_TESTING_TCP, &kit), REDLOCK_OK);
  assert_non_null(strstr(redlock_testing_uri(kit, 2), "redis://127.0.0.1:"));
  redlock_t *a = open_client(kit, 0), *b = open_client(kit, 0);
  redlock_lock_t *la = NULL, *lb = NULL;
  assert_int_equal(redlock_testing_set_mode(kit, REDLOCK_TESTING_ALL, REDLOCK_TESTING_GRANT),
                   REDLOCK_OK);
  assert_int_equal(redlock_lock(a, "m", TTL, &la), REDLOCK_OK);
  assert_int_equal(redlock_trylock(b, "m", TTL, &lb), REDLOCK_OK);
  assert_int_equal(redlock_extend(a, la, TTL), REDLOCK_OK);
  assert_int_equal(redlock_unlock(a, la), REDLOCK_OK); /* every release succeeds too */
  assert_int_equal(redlock_unlock(b, lb), REDLOCK_OK);
  assert_int_equal(redlock_testing_set_mode(kit, REDLOCK_TESTING_ALL, REDLOCK_TESTING_REFUSE),
                   REDLOCK_OK);
  assert_int_equal(redlock_trylock(a, "m2", TTL, &la), REDLOCK_ELOCKED);
  assert_int_equal(redlock_testing_set_mode(kit, REDLOCK_TESTING_ALL, REDLOCK_TESTING_NORMAL),
                   REDLOCK_OK);
  assert_int_equal(redlock_trylock(a, "m2", TTL, &la), REDLOCK_OK);
  redlock_unlock(a, la);
  /* A TCP fake restarts on its port: the same URI works again. */
  assert_int_equal(redlock_testing_kill(kit, 0), REDLOCK_OK);
  assert_int_equal(redlock_testing_kill(kit, 1), REDLOCK_OK);
  assert_int_equal(redlock_trylock(a, "m3", TTL, &la), REDLOCK_ENOQUORUM);
  assert_int_equal(redlock_testing_restart(kit, 0), REDLOCK_OK);
  assert_int_equal(redlock_testing_restart(kit, 1), REDLOCK_OK);
  int rc = REDLOCK_ENOQUORUM;
  for (int i = 0; i < 100 && rc != REDLOCK_OK; i++)
    rc = redlock_lock_wait(a, "m3", TTL, 100, &la);
  assert_int_equal(rc, REDLOCK_OK);
  redlock_unlock(a, la);
  assert_int_equal(redlock_testing_set_mode(kit, 3, REDLOCK_TESTING_GRANT), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_set_mode(kit, 0, (redlock_testing_mode_t)7), REDLOCK_EINVAL);
  redlock_close(a);
  redlock_close(b);
  redlock_testing_stop(kit);
}

typedef struct {
  int elected;
  uint64_t term;
} elect_state_t;

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  elect_state_t *s = arg;
  s->term = term;
  __atomic_store_n(&s->elected, 1, __ATOMIC_RELEASE);
}

static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
}

static void test_primitives(void **state) {
  (void)state;
  redlock_testing_t *kit = NULL;
  assert_int_equal(redlock_testing_start(3, 0, &kit), REDLOCK_OK);
  redlock_t *a = open_client(kit, 1), *b = open_client(kit, 1);

  redlock_lock_t *l1 = NULL, *l2 = NULL, *l3 = NULL;
  assert_int_equal(redlock_lock(a, "f", TTL, &l1), REDLOCK_OK);
  uint64_t f1 = redlock_lock_fence(l1);
  assert_true(f1 > 0);
  assert_int_equal(redlock_unlock(a, l1), REDLOCK_OK);
  assert_int_equal(redlock_lock(b, "f", TTL, &l2), REDLOCK_OK);
  assert_true(redlock_lock_fence(l2) > f1);
  assert_int_equal(redlock_unlock(b, l2), REDLOCK_OK);

  /* Semaphore of 2. */
  assert_int_equal(redlock_semaphore_acquire(a, "pool", 2, TTL, 0, &l1), REDLOCK_OK);
  assert_int_equal(redlock_semaphore_acquire(b, "pool", 2, TTL, 0, &l2), REDLOCK_OK);
  assert_int_equal(redlock_semaphore_acquire(b, "pool", 2, TTL, 0, &l3), REDLOCK_ELOCKED);
  assert_int_equal(redlock_unlock(a, l1), REDLOCK_OK);
  assert_int_equal(redlock_semaphore_acquire(b, "pool", 2, TTL, 0, &l3), REDLOCK_OK);
  redlock_unlock(b, l2);
  redlock_unlock(b, l3);

  /* Read-write: two readers, then no writer; the writer after them. */
  assert_int_equal(redlock_rwlock_read(a, "rw", TTL, 0, &l1), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_read(b, "rw", TTL, 0, &l2), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_write(b, "rw", TTL, 0, &l3), REDLOCK_ELOCKED);
  redlock_unlock(a, l1);
  redlock_unlock(b, l2);
  assert_int_equal(redlock_rwlock_write(b, "rw", TTL, 0, &l3), REDLOCK_OK);
  assert_int_equal(redlock_rwlock_read(a, "rw", TTL, 0, &l1), REDLOCK_ELOCKED);
  redlock_unlock(b, l3);

  /* A woken wait: b waits; a's release wakes it long before its retries would. */
  assert_int_equal(redlock_lock(a, "w", TTL, &l1), REDLOCK_OK);
  assert_int_equal(redlock_unlock(a, l1), REDLOCK_OK);
  assert_int_equal(redlock_lock_wait(b, "w", TTL, 5000, &l2), REDLOCK_OK);
  redlock_unlock(b, l2);

  /* An election. */
  elect_state_t s = {0};
  redlock_election_t *e = NULL;
  assert_int_equal(redlock_elect(a, "leader", TTL, on_elected, on_lost, &s, &e), REDLOCK_OK);
  for (int i = 0; i < 500 && !__atomic_load_n(&s.elected, __ATOMIC_ACQUIRE); i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  assert_int_equal(__atomic_load_n(&s.elected, __ATOMIC_ACQUIRE), 1);
  assert_true(s.term > 0);
  redlock_leader_t view;
  assert_int_equal(redlock_election_leader(b, "leader", &view), REDLOCK_OK);
  assert_int_equal(view.state, REDLOCK_LEADER_HELD);
  assert_int_equal(view.term, s.term);
  assert_int_equal(redlock_resign(a, e), REDLOCK_OK);

  redlock_close(a);
  redlock_close(b);
  redlock_testing_stop(kit);
}

/* A killed TCP fake keeps its port while down (a socket bound, not
 * listening): no other program binds it before the restart.  No client
 * ever connected, so no TIME_WAIT holds the port instead. */
static void test_tcp_port_held(void **state) {
  (void)state;
  redlock_testing_t *kit = NULL;
  assert_int_equal(redlock_testing_start(1, REDLOCK_TESTING_TCP, &kit), REDLOCK_OK);
  assert_int_equal(redlock_testing_kill(kit, 0), REDLOCK_OK);
  assert_true(port_is_held(redlock_testing_uri(kit, 0)));
  assert_int_equal(redlock_testing_restart(kit, 0), REDLOCK_OK);
  redlock_t *c = open_client(kit, 0);
  redlock_lock_t *l = NULL;
  assert_int_equal(redlock_lock(c, "after", TTL, &l), REDLOCK_OK);
  redlock_unlock(c, l);
  redlock_close(c);
  redlock_testing_stop(kit);
}

static void test_bad_input(void **state) {
  (void)state;
  redlock_testing_t *kit = NULL;
  assert_int_equal(redlock_testing_start(0, 0, &kit), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_start(REDLOCK_TESTING_MAX + 1, 0, &kit), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_start(1, 0x80, &kit), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_start(1, 0, NULL), REDLOCK_EINVAL);
  assert_null(kit);
  redlock_testing_stop(NULL);
  assert_int_equal(redlock_testing_count(NULL), 0);
  assert_null(redlock_testing_uri(NULL, 0));
  assert_int_equal(redlock_testing_kill(NULL, 0), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_advance(NULL, 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_key_count(NULL, "k"), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_add_nodes(NULL, NULL), REDLOCK_EINVAL);

  assert_int_equal(redlock_testing_start(1, 0, &kit), REDLOCK_OK);
  assert_null(redlock_testing_uri(kit, 1));
  assert_int_equal(redlock_testing_kill(kit, 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_drop_key(kit, 0, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_has_key(kit, 0, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_testing_has_key(kit, 0, "nothing"), 0);
  assert_int_equal(redlock_testing_add_nodes(kit, NULL), REDLOCK_EINVAL);
  redlock_testing_stop(kit);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exclusion_and_quorum),
      cmocka_unit_test(test_virtual_time),
      cmocka_unit_test(test_pause_slow_drop_failover),
      cmocka_unit_test(test_modes),
      cmocka_unit_test(test_primitives),
      cmocka_unit_test(test_tcp_port_held),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
