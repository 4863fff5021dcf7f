/* test_fault_proxy.c: tests of the fault-injection proxy (tests/support/
 * fault_proxy.h) in front of a real redis-server, driven by a synchronous
 * hiredis client on the test thread while the proxy runs on its own: plain
 * forwarding, delay (both ways, order kept, applied to queued bytes), stall
 * and resume, blackhole, reset of open connections, refused connections,
 * the buffer cap, backpressure to a slow reader, an upstream that is down,
 * an upstream that moves to another server (fault_proxy_set_upstream),
 * the connection count, the loopback-only rule, and that waiting on a fault
 * costs no CPU.
 *
 * The timing checks are lower bounds on injected delays or timeouts that
 * must happen; none asserts that anything is fast. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "fault_proxy.h"
#include "redis_harness.h"

#define FAULT_TIMEOUT_MS 300 /* hiredis timeout where a fault must make a command fail */
#define SLOW_TIMEOUT_MS 5000 /* where a command must succeed, however loaded the machine */

static rh_server_t *server;

typedef struct {
  fault_proxy_t *proxy;
} fixture_t;

/* ---- helpers ------------------------------------------------------------------------ */

static struct timeval tv_ms(int ms) {
  struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
  return tv;
}

/* A connection through the proxy; NULL when connect() itself failed. */
static redisContext *connect_via(const fault_proxy_t *proxy, int timeout_ms) {
  redisContext *c =
      redisConnectWithTimeout("127.0.0.1", fault_proxy_port(proxy), tv_ms(SLOW_TIMEOUT_MS));
  if (c == NULL)
    return NULL;
  if (c->err != 0) {
    redisFree(c);
    return NULL;
  }
  assert_int_equal(redisSetTimeout(c, tv_ms(timeout_ms)), REDIS_OK);
  return c;
}

/* 1 when PING got PONG, 0 when the command failed (c->err is then set). */
static int ping(redisContext *c) {
  redisReply *r = redisCommand(c, "PING");
  if (r == NULL)
    return 0;
  int ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
  freeReplyObject(r);
  return ok;
}

static int ping_fresh(const fault_proxy_t *proxy) {
  redisContext *c = connect_via(proxy, SLOW_TIMEOUT_MS);
  if (c == NULL)
    return 0;
  int ok = ping(c);
  redisFree(c);
  return ok;
}

typedef struct {
  const fault_proxy_t *proxy;
  unsigned want;
} count_wait_t;

static int count_is(void *arg) {
  count_wait_t *w = arg;
  return fault_proxy_connections(w->proxy) == w->want;
}

/* Accepting and closing happen on the proxy thread, a moment after the
 * client's connect() or close(): wait for the count rather than read it. */
static int wait_connections(const fault_proxy_t *proxy, unsigned want) {
  count_wait_t w = {proxy, want};
  return rh_wait_until(count_is, &w, SLOW_TIMEOUT_MS);
}

static uint64_t cpu_ms(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)ru.ru_utime.tv_sec * 1000u + (uint64_t)ru.ru_utime.tv_usec / 1000u +
         (uint64_t)ru.ru_stime.tv_sec * 1000u + (uint64_t)ru.ru_stime.tv_usec / 1000u;
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Sends a command without reading its reply (it stays in flight). */
static void send_only(redisContext *c, const char *cmd) {
  int done = 0;
  assert_int_equal(redisAppendCommand(c, cmd), REDIS_OK);
  while (!done)
    assert_int_equal(redisBufferWrite(c, &done), REDIS_OK);
}

/* ---- fixtures ----------------------------------------------------------------------- */

static int group_setup(void **state) {
  (void)state;
  /* A write to a connection the proxy reset must fail, not kill the test. */
  signal(SIGPIPE, SIG_IGN);
  return rh_server_start(&server, NULL) == 0 ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  rh_server_free(server);
  server = NULL;
  return 0;
}

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (f == NULL || fault_proxy_start(&f->proxy, "127.0.0.1", rh_server_port(server)) != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  fault_proxy_stop(f->proxy);
  free(f);
  return 0;
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_loopback_only(void **state) {
  (void)state;
  int port = rh_server_port(server);
  const char *refused[] = {"10.0.0.1", "192.168.1.1", "8.8.8.8",    "0.0.0.0",
                           "::1",      "example.com", "127.0.0.1x", ""};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    fault_proxy_t *p = NULL;
    assert_int_not_equal(fault_proxy_start(&p, refused[i], port), 0);
    assert_null(p);
  }
  fault_proxy_t *p = NULL;
  assert_int_not_equal(fault_proxy_start(&p, NULL, port), 0);
  assert_int_not_equal(fault_proxy_start(&p, "127.0.0.1", 0), 0);
  assert_int_not_equal(fault_proxy_start(&p, "127.0.0.1", 65536), 0);
  assert_null(p);

  const char *accepted[] = {"127.0.0.1", "localhost", "127.1.2.3"};
  for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
    assert_int_equal(fault_proxy_start(&p, accepted[i], port), 0);
    assert_true(fault_proxy_port(p) > 0 && fault_proxy_port(p) < 65536);
    assert_int_not_equal(fault_proxy_port(p), port);
    fault_proxy_stop(p);
    p = NULL;
  }
  fault_proxy_stop(NULL);
}

static void test_forwarding_and_count(void **state) {
  fixture_t *f = *state;
  assert_int_equal(fault_proxy_connections(f->proxy), 0);

  redisContext *c[3];
  for (int i = 0; i < 3; i++) {
    c[i] = connect_via(f->proxy, SLOW_TIMEOUT_MS);
    assert_non_null(c[i]);
  }
  assert_true(wait_connections(f->proxy, 3));
  assert_true(ping(c[0]));

  redisReply *r = redisCommand(c[1], "SET %s %s", "fp:key", "some value");
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_STATUS);
  freeReplyObject(r);
  /* A value larger than one read, both ways. */
  size_t big_len = 1u << 20;
  char *big = malloc(big_len);
  assert_non_null(big);
  for (size_t i = 0; i < big_len; i++)
    big[i] = (char)('a' + i % 26);
  r = redisCommand(c[2], "SET fp:big %b", big, big_len);
  assert_non_null(r);
  freeReplyObject(r);
  r = redisCommand(c[0], "GET fp:big");
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  assert_int_equal(r->len, big_len);
  assert_memory_equal(r->str, big, big_len);
  freeReplyObject(r);
  free(big);

  redisFree(c[1]);
  assert_true(wait_connections(f->proxy, 2));
  redisFree(c[0]);
  redisFree(c[2]);
  assert_true(wait_connections(f->proxy, 0));
}

static void test_delay(void **state) {
  fixture_t *f = *state;
  redisContext *c = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(c);
  assert_true(ping(c));

  assert_int_equal(fault_proxy_set_delay(f->proxy, 50), 0);
  for (int i = 0; i < 3; i++) {
    uint64_t t0 = rh_now_ms();
    assert_true(ping(c));
    uint64_t took = rh_now_ms() - t0;
    assert_true(took >= 100); /* 50 ms there + 50 ms back */
  }

  /* Pipelined commands come back in order through the delay queues. */
  assert_int_equal(fault_proxy_set_delay(f->proxy, 5), 0);
  redisReply *r = redisCommand(c, "DEL fp:counter");
  assert_non_null(r);
  freeReplyObject(r);
  enum { N = 200 };
  for (int i = 0; i < N; i++)
    assert_int_equal(redisAppendCommand(c, "INCR fp:counter"), REDIS_OK);
  for (long long i = 1; i <= N; i++) {
    void *reply = NULL;
    assert_int_equal(redisGetReply(c, &reply), REDIS_OK);
    r = reply;
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, i);
    freeReplyObject(r);
  }

  /* A delay change applies to what is already queued: with 3 s the reply
   * would miss the 1 s timeout, after going back to 0 it does not. */
  assert_int_equal(fault_proxy_set_delay(f->proxy, 3000), 0);
  assert_int_equal(redisSetTimeout(c, tv_ms(1000)), REDIS_OK);
  send_only(c, "PING");
  sleep_ms(50); /* let the command reach the proxy's queue */
  assert_int_equal(fault_proxy_set_delay(f->proxy, 0), 0);
  void *reply = NULL;
  assert_int_equal(redisGetReply(c, &reply), REDIS_OK);
  r = reply;
  assert_int_equal(r->type, REDIS_REPLY_STATUS);
  assert_string_equal(r->str, "PONG");
  freeReplyObject(r);
  redisFree(c);
}

/* Pace: the server gets one command per pace, so pipelined commands are
 * answered one at a time, pace apart, in order; the framing holds across
 * reads (a 256 KiB bulk string arrives in several). */
static void test_pace(void **state) {
  fixture_t *f = *state;
  enum { PACE_MS = 20, N = 8, BIG = 256 * 1024 };
  assert_int_equal(fault_proxy_set_pace(f->proxy, PACE_MS), 0);
  redisContext *c = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(c);
  char *big = malloc(BIG);
  assert_non_null(big);
  memset(big, 'x', BIG);
  assert_int_equal(redisAppendCommand(c, "DEL fp:pace"), REDIS_OK);
  assert_int_equal(redisAppendCommand(c, "SET fp:big %b", big, (size_t)BIG), REDIS_OK);
  for (int i = 0; i < N; i++)
    assert_int_equal(redisAppendCommand(c, "INCR fp:pace"), REDIS_OK);
  uint64_t t0 = rh_now_ms();
  for (int i = 0; i < 2 + N; i++) {
    void *reply = NULL;
    assert_int_equal(redisGetReply(c, &reply), REDIS_OK);
    redisReply *r = reply;
    if (i >= 2) {
      assert_int_equal(r->type, REDIS_REPLY_INTEGER);
      assert_int_equal(r->integer, i - 1);
    }
    freeReplyObject(r);
  }
  /* The first command left at once, each later one PACE_MS after the one
   * before it (a lower bound: a loaded machine only makes it later). */
  uint64_t took = rh_now_ms() - t0;
  printf("  %d paced commands answered in %llu ms\n", 2 + N, (unsigned long long)took);
  assert_true(took >= (uint64_t)(1 + N) * PACE_MS - 2);
  /* Off again: nothing more waits. */
  assert_int_equal(fault_proxy_set_pace(f->proxy, 0), 0);
  assert_true(ping(c));
  free(big);
  redisFree(c);
}

static void test_stall(void **state) {
  fixture_t *f = *state;
  redisContext *c = connect_via(f->proxy, FAULT_TIMEOUT_MS);
  assert_non_null(c);
  assert_true(ping(c));

  assert_int_equal(fault_proxy_set_stall(f->proxy, 1), 0);
  uint64_t t0 = rh_now_ms();
  assert_false(ping(c));
  assert_int_not_equal(c->err, 0);
  assert_true(rh_now_ms() - t0 >= FAULT_TIMEOUT_MS - 10); /* it timed out, not failed fast */
  redisFree(c);

  /* Bytes sent during the stall are held, not lost: they arrive on resume. */
  redisContext *c2 = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(c2);
  send_only(c2, "SET fp:stalled yes");
  sleep_ms(50);
  char buf[64];
  assert_int_equal(rh_server_command(server, buf, sizeof buf, "EXISTS fp:stalled"), 0);
  assert_string_equal(buf, "0");

  assert_int_equal(fault_proxy_set_stall(f->proxy, 0), 0);
  void *reply = NULL;
  assert_int_equal(redisGetReply(c2, &reply), REDIS_OK);
  redisReply *r = reply;
  assert_int_equal(r->type, REDIS_REPLY_STATUS);
  assert_string_equal(r->str, "OK");
  freeReplyObject(r);
  redisFree(c2);
  assert_int_equal(rh_server_command(server, buf, sizeof buf, "GET fp:stalled"), 0);
  assert_string_equal(buf, "yes");

  assert_true(ping_fresh(f->proxy));
  assert_true(wait_connections(f->proxy, 0));
}

static void test_blackhole(void **state) {
  fixture_t *f = *state;
  redisContext *c = connect_via(f->proxy, FAULT_TIMEOUT_MS);
  redisContext *c2 = connect_via(f->proxy, FAULT_TIMEOUT_MS);
  assert_non_null(c);
  assert_non_null(c2);
  assert_true(ping(c));
  assert_true(ping(c2));

  assert_int_equal(fault_proxy_set_blackhole(f->proxy, 1), 0);
  send_only(c2, "SET fp:blackholed yes");
  /* Sent after the SET, so by the time it has timed out the proxy has long
   * read (and dropped) the SET. */
  assert_false(ping(c));
  assert_int_not_equal(c->err, 0);
  assert_int_equal(fault_proxy_connections(f->proxy), 2); /* kept open */
  redisFree(c);

  /* Dropped, not buffered: nothing comes once the black hole is gone. */
  assert_int_equal(fault_proxy_set_blackhole(f->proxy, 0), 0);
  void *reply = NULL;
  assert_int_not_equal(redisGetReply(c2, &reply), REDIS_OK);
  assert_null(reply);
  redisFree(c2);
  char buf[64];
  assert_int_equal(rh_server_command(server, buf, sizeof buf, "EXISTS fp:blackholed"), 0);
  assert_string_equal(buf, "0");

  assert_true(ping_fresh(f->proxy));
  assert_true(wait_connections(f->proxy, 0)); /* closes still went through */
}

static void test_reset_all(void **state) {
  fixture_t *f = *state;
  redisContext *c1 = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  redisContext *c2 = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(c1);
  assert_non_null(c2);
  assert_true(ping(c1));
  assert_true(ping(c2));
  assert_int_equal(fault_proxy_connections(f->proxy), 2);

  assert_int_equal(fault_proxy_reset_all(f->proxy), 0);
  assert_int_equal(fault_proxy_connections(f->proxy), 0); /* applied when it returns */
  assert_false(ping(c1));
  assert_int_not_equal(c1->err, 0);
  assert_false(ping(c2));
  assert_int_not_equal(c2->err, 0);
  redisFree(c1);
  redisFree(c2);

  /* Only the connections open at the time: new ones work. */
  assert_true(ping_fresh(f->proxy));
}

/* A moved upstream: open connections are reset, new ones reach the new
 * server (its own keys, not the old one's), other settings are kept, and a
 * bad address changes nothing. */
static void test_set_upstream(void **state) {
  fixture_t *f = *state;
  rh_server_t *other = NULL;
  assert_int_equal(rh_server_start(&other, NULL), 0);
  char buf[64];
  assert_int_equal(rh_server_command(server, buf, sizeof buf, "SET fp:where old"), 0);
  assert_int_equal(rh_server_command(other, buf, sizeof buf, "SET fp:where new"), 0);

  redisContext *c = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(c);
  assert_true(ping(c));
  assert_int_equal(fault_proxy_set_delay(f->proxy, 30), 0);
  assert_int_not_equal(fault_proxy_set_upstream(f->proxy, "10.0.0.1", rh_server_port(other)), 0);
  assert_int_not_equal(fault_proxy_set_upstream(f->proxy, "127.0.0.1", 0), 0);
  assert_true(ping(c)); /* nothing changed */

  assert_int_equal(fault_proxy_set_upstream(f->proxy, "127.0.0.1", rh_server_port(other)), 0);
  assert_int_equal(fault_proxy_connections(f->proxy), 0); /* applied when it returns */
  assert_false(ping(c));
  assert_int_not_equal(c->err, 0);
  redisFree(c);

  c = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(c);
  uint64_t t0 = rh_now_ms();
  redisReply *r = redisCommand(c, "GET fp:where");
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  assert_string_equal(r->str, "new");
  freeReplyObject(r);
  assert_true(rh_now_ms() - t0 >= 55); /* the delay still applies, both ways */
  redisFree(c);

  /* And back. */
  assert_int_equal(fault_proxy_set_delay(f->proxy, 0), 0);
  assert_int_equal(fault_proxy_set_upstream(f->proxy, "localhost", rh_server_port(server)), 0);
  c = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(c);
  r = redisCommand(c, "GET fp:where");
  assert_non_null(r);
  assert_string_equal(r->str, "old");
  freeReplyObject(r);
  redisFree(c);
  assert_true(wait_connections(f->proxy, 0));
  rh_server_free(other);
}

static void test_refuse(void **state) {
  fixture_t *f = *state;
  redisContext *old = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(old);
  assert_true(ping(old));

  assert_int_equal(fault_proxy_set_refuse(f->proxy, 1), 0);
  for (int i = 0; i < 3; i++) {
    /* The kernel may complete the handshake: then the first command fails. */
    redisContext *c = connect_via(f->proxy, SLOW_TIMEOUT_MS);
    if (c != NULL) {
      assert_false(ping(c));
      redisFree(c);
    }
  }
  assert_int_equal(fault_proxy_connections(f->proxy), 1);
  assert_true(ping(old)); /* refusing is about new connections */

  assert_int_equal(fault_proxy_set_refuse(f->proxy, 0), 0);
  assert_true(ping_fresh(f->proxy));
  redisFree(old);
  assert_true(wait_connections(f->proxy, 0));
}

static void test_buffer_cap(void **state) {
  fixture_t *f = *state;
  assert_int_equal(fault_proxy_set_max_buffer(f->proxy, 64 * 1024), 0);
  assert_int_equal(fault_proxy_set_stall(f->proxy, 1), 0);

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct timeval tv = tv_ms(SLOW_TIMEOUT_MS); /* a bug must fail the test, not hang it */
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in addr = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)fault_proxy_port(f->proxy))};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  assert_true(wait_connections(f->proxy, 1));

  static char junk[1 << 16];
  memset(junk, 'x', sizeof junk);
  size_t sent = 0;
  int err = 0;
  while (sent < (64u << 20)) { /* far past the cap and any socket buffers */
    ssize_t n = send(fd, junk, sizeof junk, MSG_NOSIGNAL);
    if (n < 0) {
      err = errno;
      break;
    }
    sent += (size_t)n;
  }
  assert_true(err == ECONNRESET || err == EPIPE);
  assert_true(sent > 64 * 1024);
  close(fd);
  assert_true(wait_connections(f->proxy, 0));

  assert_int_equal(fault_proxy_set_stall(f->proxy, 0), 0);
  assert_int_equal(fault_proxy_set_max_buffer(f->proxy, 0), 0);
  assert_true(ping_fresh(f->proxy));
}

/* A client that reads slowly is backpressure, not a fault: far more than
 * the buffer cap flows to it, intact, on a connection never reset. */
static void test_slow_reader_backpressure(void **state) {
  fixture_t *f = *state;
  redisContext *c = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(c);
  size_t big_len = 1u << 20;
  char *big = malloc(big_len);
  assert_non_null(big);
  memset(big, 'b', big_len);
  redisReply *r = redisCommand(c, "SET fp:big %b", big, big_len);
  assert_non_null(r);
  freeReplyObject(r);

  enum { GETS = 48 }; /* 48 MiB of replies against a 16 MiB cap */
  for (int i = 0; i < GETS; i++)
    assert_int_equal(redisAppendCommand(c, "GET fp:big"), REDIS_OK);
  int done = 0;
  while (!done)
    assert_int_equal(redisBufferWrite(c, &done), REDIS_OK);
  sleep_ms(300); /* the client reads nothing: everything backs up */
  assert_int_equal(fault_proxy_connections(f->proxy), 1);

  for (int i = 0; i < GETS; i++) {
    void *reply = NULL;
    assert_int_equal(redisGetReply(c, &reply), REDIS_OK);
    r = reply;
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, big_len);
    assert_memory_equal(r->str, big, big_len);
    freeReplyObject(r);
  }
  free(big);
  assert_true(ping(c));
  redisFree(c);
}

static void test_upstream_down(void **state) {
  fixture_t *f = *state;
  assert_int_equal(rh_server_kill(server), 0);
  redisContext *c = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  if (c != NULL) {
    assert_false(ping(c)); /* reset, not a hang until the timeout */
    redisFree(c);
  }
  assert_true(wait_connections(f->proxy, 0));
  assert_int_equal(rh_server_restart(server), 0);
  assert_true(ping_fresh(f->proxy));
}

static void test_waiting_costs_no_cpu(void **state) {
  fixture_t *f = *state;
  redisContext *delayed = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(delayed);
  assert_int_equal(fault_proxy_set_delay(f->proxy, 2000), 0);
  send_only(delayed, "PING"); /* a timer is pending for it */
  redisContext *stalled = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(stalled);
  assert_true(wait_connections(f->proxy, 2));

  uint64_t cpu0 = cpu_ms(), t0 = rh_now_ms();
  sleep_ms(400);
  uint64_t cpu = cpu_ms() - cpu0, wall = rh_now_ms() - t0;
  /* A spinning proxy thread would burn about the whole wall time. */
  assert_true(cpu * 4 < wall);

  assert_int_equal(fault_proxy_set_stall(f->proxy, 1), 0);
  send_only(stalled, "PING");
  cpu0 = cpu_ms();
  t0 = rh_now_ms();
  sleep_ms(400);
  cpu = cpu_ms() - cpu0;
  wall = rh_now_ms() - t0;
  assert_true(cpu * 4 < wall);

  redisFree(delayed);
  redisFree(stalled);
}

static void test_stop_with_traffic_in_flight(void **state) {
  fixture_t *f = *state;
  redisContext *c = connect_via(f->proxy, SLOW_TIMEOUT_MS);
  assert_non_null(c);
  assert_int_equal(fault_proxy_set_delay(f->proxy, 10000), 0);
  send_only(c, "PING");
  assert_true(wait_connections(f->proxy, 1));
  sleep_ms(20);

  /* Queued chunks, a pending timer and an open connection: all freed (the
   * sanitizer build checks), and the client sees the connection end. */
  fault_proxy_stop(f->proxy);
  f->proxy = NULL;
  void *reply = NULL;
  assert_int_not_equal(redisGetReply(c, &reply), REDIS_OK);
  assert_null(reply);
  redisFree(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loopback_only),
      cmocka_unit_test_setup_teardown(test_forwarding_and_count, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delay, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stall, setup, teardown),
      cmocka_unit_test_setup_teardown(test_blackhole, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reset_all, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_set_upstream, setup, teardown),
      cmocka_unit_test_setup_teardown(test_buffer_cap, setup, teardown),
      cmocka_unit_test_setup_teardown(test_slow_reader_backpressure, setup, teardown),
      cmocka_unit_test_setup_teardown(test_upstream_down, setup, teardown),
      cmocka_unit_test_setup_teardown(test_waiting_costs_no_cpu, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_with_traffic_in_flight, setup, teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
