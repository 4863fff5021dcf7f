/* test_conn.c: conn.c driven directly: one hiredis async context on the
 * test's loop against the in-process mock master (tests/support/mock_master.h),
 * with the library's own timebase (conn.c only reads its clock).  What the
 * link and node tests do not reach: a command queued from the connect
 * callback (it goes out with the connect's own write), a context closed while
 * it waits for the turn's flush, a write the peer refuses, a bulk whose
 * length line comes in two reads, a reply that ends a read exactly, the
 * strings of one reply passing 1 MiB, AUTH on a context going away, and the
 * set-ups conn_open refuses (a socket libuv will not watch, TLS in a build
 * without it). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "conn/conn.h"
#include "mock_master.h"
#include "redlock.h"
#include "util/timebase.h"
#include "util/tls.h"
#include "util/uri.h"

#define WAIT_MS 20000 /* bound of a wait on the loop: only a failing test reaches it */
#define MAX_TRIES 64  /* writes to a dropped connection before one must fail */

typedef struct {
  uv_loop_t loop;
  conn_flusher_t flusher;
  timebase_t tb;
  mock_master_t *mock;
  node_addr_t addr;
  redisAsyncContext *ac; /* NULL once hiredis let go of it */
  int ping_on_connect;   /* the connect callback queues a PING */
  int connected;         /* the connect callback ran: 1 (REDIS_OK) or -1 */
  int disconnected;      /* the disconnect callback ran */
  int disconnect_status;
  char why[256];           /* conn_error() in the disconnect callback */
  unsigned replies, nulls; /* reply callbacks: with a reply, with NULL */
  int last_type;
  char last[64]; /* the last reply's string (its first bytes) */
  size_t last_len;
  uv_poll_t stale; /* test_socket_not_watched's */
} ct_t;

static void on_reply(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  ct_t *t = privdata;
  const redisReply *reply = r;
  if (reply == NULL) {
    t->nulls++;
    return;
  }
  t->replies++;
  t->last_type = reply->type;
  t->last_len = reply->type == REDIS_REPLY_INTEGER ? 0 : reply->len;
  snprintf(t->last, sizeof t->last, "%.*s", (int)(t->last_len < 63 ? t->last_len : 63),
           reply->type == REDIS_REPLY_INTEGER ? "" : reply->str);
}

static void on_connect(const redisAsyncContext *ac, int status) {
  ct_t *t = ac->data;
  if (t == NULL)
    return;
  t->connected = status == REDIS_OK ? 1 : -1;
  if (status == REDIS_OK && t->ping_on_connect)
    assert_int_equal(redisAsyncCommand((redisAsyncContext *)ac, on_reply, t, "PING"), REDIS_OK);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  ct_t *t = ac->data; /* NULL after conn_close */
  if (t == NULL)
    return;
  t->disconnected = 1;
  t->disconnect_status = status;
  snprintf(t->why, sizeof t->why, "%s", conn_error(ac));
  t->ac = NULL;
}

static int setup(void **state) {
  ct_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  assert_int_equal(uv_loop_init(&t->loop), 0);
  timebase_uv_init(&t->tb, &t->loop);
  assert_int_equal(conn_flusher_init(&t->flusher, &t->loop), 0);
  t->mock = mock_master_start(&t->loop);
  assert_non_null(t->mock);
  char err[128];
  assert_int_equal(uri_parse(mock_master_uri(t->mock, NULL, NULL), &t->addr, err, sizeof err), 0);
  *state = t;
  return 0;
}

static int no_conns(void *mock) { return mock_master_open_conns(mock) == 0; }

static int teardown(void **state) {
  ct_t *t = *state;
  if (t->ac != NULL)
    conn_close(t->ac);
  assert_true(mock_run_until(&t->loop, no_conns, t->mock, WAIT_MS));
  mock_master_close(t->mock);
  conn_flusher_close(&t->flusher, NULL);
  uv_run(&t->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&t->loop), 0);
  node_addr_clear(&t->addr);
  free(t);
  return 0;
}

/* conn_open on the mock master; err gets why when it fails. */
static redisAsyncContext *open_conn(ct_t *t, tls_client_t *tls, char *err, size_t err_len,
                                    int *tls_failed) {
  return conn_open(&t->addr, "127.0.0.1", tls, &t->loop, &t->flusher, &t->tb, t, on_connect,
                   on_disconnect, err, err_len, tls_failed);
}

static int is_connected(void *arg) { return ((ct_t *)arg)->connected != 0; }
static int is_disconnected(void *arg) { return ((ct_t *)arg)->disconnected; }
static int replied(void *arg) { return ((ct_t *)arg)->replies + ((ct_t *)arg)->nulls > 0; }

static void connect_conn(ct_t *t) {
  char err[128];
  int tls_failed = -1;
  t->ac = open_conn(t, NULL, err, sizeof err, &tls_failed);
  assert_non_null(t->ac);
  assert_int_equal(tls_failed, 0);
  assert_true(mock_run_until(&t->loop, is_connected, t, WAIT_MS));
  assert_int_equal(t->connected, 1);
}

static void wait_reply(ct_t *t) {
  t->replies = t->nulls = 0;
  assert_true(mock_run_until(&t->loop, replied, t, WAIT_MS));
}

/* The connection still works: a PING is answered. */
static void ping_answered(ct_t *t) {
  assert_int_equal(redisAsyncCommand(t->ac, on_reply, t, "PING"), REDIS_OK);
  wait_reply(t);
  assert_int_equal(t->replies, 1);
  assert_int_equal(t->last_type, REDIS_REPLY_STATUS);
}

/* A command queued from the connect callback goes out with the write that
 * completes the connect: the connection leaves the turn's flush list at once
 * and is answered. */
static void test_command_from_connect_callback(void **state) {
  ct_t *t = *state;
  t->ping_on_connect = 1;
  connect_conn(t);
  assert_true(list_empty(&t->flusher.dirty));
  wait_reply(t);
  assert_int_equal(t->replies, 1);
  assert_string_equal(t->last, "PONG");
  assert_int_equal(mock_master_count(t->mock, "PING"), 1);
  assert_false(t->disconnected);
}

/* A context closed while its command waits for the turn's flush: the
 * command gets NULL, the connection leaves the flush list (the flush that
 * follows touches nothing of it), and nothing is sent. */
static void test_close_while_dirty(void **state) {
  ct_t *t = *state;
  connect_conn(t);
  assert_int_equal(redisAsyncCommand(t->ac, on_reply, t, "PING"), REDIS_OK);
  assert_false(list_empty(&t->flusher.dirty));
  conn_close(t->ac);
  t->ac = NULL;
  assert_int_equal(t->nulls, 1);
  assert_int_equal(t->replies, 0);
  assert_true(list_empty(&t->flusher.dirty));
  assert_false(t->disconnected); /* conn_close detached the owner */
  assert_true(mock_run_until(&t->loop, no_conns, t->mock, WAIT_MS));
  assert_int_equal(mock_master_count(t->mock, "PING"), 0);
}

/* The master is gone: writing to it fails (the loop is not run, so no read
 * sees the close first).  The owner hears a disconnect with the socket's
 * error, and every command still out gets NULL. */
static void test_write_to_dropped_connection(void **state) {
  ct_t *t = *state;
  connect_conn(t);
  ping_answered(t);
  mock_master_drop_all(t->mock); /* the server's sockets are closed now */
  t->replies = t->nulls = 0;
  unsigned sent = 0;
  while (!t->disconnected && sent < MAX_TRIES) {
    assert_int_equal(redisAsyncCommand(t->ac, on_reply, t, "PING"), REDIS_OK);
    sent++;
    assert_int_equal(conn_write_now(t->ac), 1);
  }
  /* Else (never seen on Linux) the close is read on the next turn. */
  assert_true(mock_run_until(&t->loop, is_disconnected, t, WAIT_MS));
  assert_null(t->ac);
  assert_int_equal(t->disconnect_status, REDIS_ERR);
  assert_true(t->why[0] != '\0');
  assert_int_equal(t->nulls, sent);
  assert_int_equal(t->replies, 0);
  assert_true(list_empty(&t->flusher.dirty));
}

static int held(void *mock) { return mock_master_held(mock) > 0; }

static int has_buffered(void *arg) {
  const ct_t *t = arg;
  const redisReader *r = t->ac->c.reader;
  return r->len - r->pos > 0;
}

/* A bulk whose length line arrives cut ("$10", then the rest): the reader
 * waits for the line (not a violation), then the reply is whole. */
static void test_bulk_length_line_in_two_reads(void **state) {
  ct_t *t = *state;
  connect_conn(t);
  mock_master_on(t->mock, "GET", MOCK_HOLD, NULL, 1); /* its own answer never goes out */
  assert_int_equal(redisAsyncCommand(t->ac, on_reply, t, "GET k"), REDIS_OK);
  assert_true(mock_run_until(&t->loop, held, t->mock, WAIT_MS));
  mock_master_send_raw(t->mock, "$10");
  assert_true(mock_run_until(&t->loop, has_buffered, t, WAIT_MS));
  assert_int_equal(t->replies + t->nulls, 0);
  mock_master_send_raw(t->mock, "\r\n0123456789\r\n");
  wait_reply(t);
  assert_int_equal(t->replies, 1);
  assert_int_equal(t->last_type, REDIS_REPLY_STRING);
  assert_string_equal(t->last, "0123456789");
  assert_false(t->disconnected);
}

/* A reply of more than the 1 KiB hiredis keeps of a consumed buffer ends a
 * read exactly: the reader is left with no item at all, which is not a
 * violation either. */
static void test_reply_ends_the_read(void **state) {
  ct_t *t = *state;
  connect_conn(t);
  enum { LEN = 2000 };
  char raw[LEN + 16];
  int n = snprintf(raw, sizeof raw, "$%d\r\n", LEN);
  memset(raw + n, 'x', LEN);
  memcpy(raw + n + LEN, "\r\n", 3);
  mock_master_on(t->mock, "GET", MOCK_REPLY, raw, 1);
  assert_int_equal(redisAsyncCommand(t->ac, on_reply, t, "GET k"), REDIS_OK);
  wait_reply(t);
  assert_int_equal(t->replies, 1);
  assert_int_equal(t->last_len, LEN);
  assert_int_equal(t->ac->c.reader->len, 0);
  ping_answered(t);
}

/* The strings of one reply, counted as they are made, pass 1 MiB: the
 * connection is dropped with the cap in conn_error().  Each string is short
 * enough that none is refused while buffered: only the count catches it. */
static void test_strings_past_one_mib(void **state) {
  ct_t *t = *state;
  connect_conn(t);
  enum { N = 1024, EACH = 1024, LAST = EACH + 10 }; /* 1023 x 1024 + 1034 > 1 MiB */
  size_t size = 16 + (size_t)(N - 1) * (EACH + 3) + LAST + 3 + 1;
  char *raw = malloc(size);
  assert_non_null(raw);
  char *w = raw + sprintf(raw, "*%d\r\n", N);
  for (int i = 0; i < N; i++) {
    size_t len = i < N - 1 ? EACH : LAST;
    *w++ = '+';
    memset(w, 'a', len);
    w += len;
    memcpy(w, "\r\n", 2);
    w += 2;
  }
  *w = '\0';
  mock_master_on(t->mock, "GET", MOCK_REPLY, raw, 1);
  free(raw);
  assert_int_equal(redisAsyncCommand(t->ac, on_reply, t, "GET k"), REDIS_OK);
  assert_true(mock_run_until(&t->loop, is_disconnected, t, WAIT_MS));
  assert_string_equal(t->why, "protocol error: reply longer than 1 MiB");
  assert_int_equal(t->nulls, 1);
  assert_int_equal(t->replies, 0);
}

/* AUTH is queued only for an address with credentials, with the user when
 * there is one; a context going away (a disconnect waiting for its last
 * reply) takes nothing more. */
static void test_queue_auth(void **state) {
  ct_t *t = *state;
  connect_conn(t);
  unsigned queued = 9;
  assert_int_equal(conn_queue_auth(t->ac, &t->addr, on_reply, t, &queued), ST_OK);
  assert_int_equal(queued, 0);
  node_addr_t creds = {0};
  char err[128];
  assert_int_equal(
      uri_parse(mock_master_uri(t->mock, "alice:s3cret", NULL), &creds, err, sizeof err), 0);
  assert_int_equal(conn_queue_auth(t->ac, &creds, on_reply, t, &queued), ST_OK);
  assert_int_equal(queued, 1);
  wait_reply(t);
  const mock_cmd_t *auth = mock_master_last(t->mock, "AUTH");
  assert_non_null(auth);
  assert_int_equal(auth->argc, 3);
  assert_string_equal(auth->argv[1], "alice");
  assert_string_equal(auth->argv[2], "s3cret");

  mock_master_on(t->mock, "PING", MOCK_HOLD, NULL, 1);
  assert_int_equal(redisAsyncCommand(t->ac, on_reply, t, "PING"), REDIS_OK);
  redisAsyncDisconnect(t->ac); /* waits for the PING's reply */
  queued = 9;
  assert_int_equal(conn_queue_auth(t->ac, &creds, on_reply, t, &queued), ST_EIO);
  assert_int_equal(queued, 0);
  assert_true(mock_run_until(&t->loop, held, t->mock, WAIT_MS));
  assert_int_equal(mock_master_release(t->mock), 1);
  assert_true(mock_run_until(&t->loop, is_disconnected, t, WAIT_MS));
  assert_int_equal(t->disconnect_status, REDIS_OK);
  assert_int_equal(mock_master_count(t->mock, "AUTH"), 1);
  node_addr_clear(&creds);
}

/* A socket libuv will not watch: conn_open fails, says so, and frees what
 * it made (the socket is closed).  libuv refuses a descriptor that one of
 * its poll handles still watches: a poll is left started on a descriptor
 * closed behind its back, whose number the next socket gets. */
static void never_polled(uv_poll_t *handle, int status, int events) {
  (void)handle;
  (void)status;
  (void)events;
  fail_msg("the stale poll ran");
}

static void test_socket_not_watched(void **state) {
  ct_t *t = *state;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  assert_int_equal(uv_poll_init(&t->loop, &t->stale, fd), 0);
  assert_int_equal(uv_poll_start(&t->stale, UV_READABLE, never_polled), 0);
  assert_int_equal(close(fd), 0); /* the lowest free number: the next socket's */
  char err[128] = "";
  int tls_failed = -1;
  assert_null(open_conn(t, NULL, err, sizeof err, &tls_failed));
  assert_string_equal(err, "cannot watch the socket");
  assert_int_equal(tls_failed, 0);
  assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed again */
  assert_int_equal(errno, EBADF);
  assert_int_equal(uv_poll_stop(&t->stale), 0);
  uv_close((uv_handle_t *)&t->stale, NULL); /* closed by teardown's loop run */
}

/* A rediss:// address in a build without TLS: the TLS set-up is what
 * fails, and conn_open says so (*tls_failed) with the build's reason. */
static void test_tls_setup_fails(void **state) {
  ct_t *t = *state;
  const char *reason = tls_unsupported_reason();
  if (reason == NULL)
    skip(); /* a TLS build sets TLS up: tests/tls covers its failures */
  char fake_ctx;
  t->addr.tls = 1;
  char err[256] = "";
  int tls_failed = 0;
  assert_null(open_conn(t, (tls_client_t *)(void *)&fake_ctx, err, sizeof err, &tls_failed));
  assert_int_equal(tls_failed, 1);
  assert_string_equal(err, reason);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_command_from_connect_callback),
      T(test_close_while_dirty),
      T(test_write_to_dropped_connection),
      T(test_bulk_length_line_in_two_reads),
      T(test_reply_ends_the_read),
      T(test_strings_past_one_mib),
      T(test_queue_auth),
      T(test_socket_not_watched),
      T(test_tls_setup_fails),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
