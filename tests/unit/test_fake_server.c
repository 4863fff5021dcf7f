/* test_fake_server.c: the test kit's fake master as a client sees it on its
 * socket (src/testing/fake_server.c): what a connection may send besides
 * the data commands and scripts (test_fake_exec has those), asked with
 * hiredis' blocking API.  Pub/sub (SUBSCRIBE, SSUBSCRIBE, their UNs, the
 * subscriber mode's PING and refusals, a PUBLISH delivered, the bound on a
 * connection's channels), PING, QUIT,
 * INFO's sections, AUTH / SELECT / CLIENT / READONLY, COMMAND INFO, WAIT and
 * WAITAOF (answered at once, or after their timeout when a replica is asked
 * for), requests that are not arrays of strings, and a connection accepted
 * only when a paused master resumes.  Each reply is the one redis-server
 * 7.0 gives, but for the fake's own refusals (its "fake master:" errors). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "redlock.h"
#include "redlock_testing.h"

typedef struct {
  redlock_testing_t *kit;
  char path[256];
} fx_t;

static int setup(void **state) {
  static fx_t fx;
  memset(&fx, 0, sizeof fx);
  if (redlock_testing_start(1, 0, &fx.kit) != REDLOCK_OK)
    return -1;
  const char *uri = redlock_testing_uri(fx.kit, 0);
  if (uri == NULL || strncmp(uri, "unix://", 7) != 0)
    return -1;
  snprintf(fx.path, sizeof fx.path, "%s", uri + 7);
  *state = &fx;
  return 0;
}

static int teardown(void **state) {
  fx_t *fx = *state;
  redlock_testing_stop(fx->kit);
  return 0;
}

static redisContext *connect_to(const fx_t *fx) {
  struct timeval tv = {5, 0};
  redisContext *r = redisConnectUnixWithTimeout(fx->path, tv);
  assert_non_null(r);
  assert_int_equal(r->err, 0);
  assert_int_equal(redisSetTimeout(r, tv), REDIS_OK);
  return r;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The reply as one line: +s, -e, :n, $s, (nil), [a, b, ...]. */
static void show(const redisReply *r, char *buf, size_t size) {
  size_t n = strlen(buf);
  switch (r->type) {
  case REDIS_REPLY_STATUS:
    snprintf(buf + n, size - n, "+%s", r->str);
    break;
  case REDIS_REPLY_ERROR:
    snprintf(buf + n, size - n, "-%s", r->str);
    break;
  case REDIS_REPLY_INTEGER:
    snprintf(buf + n, size - n, ":%lld", r->integer);
    break;
  case REDIS_REPLY_STRING:
    snprintf(buf + n, size - n, "$%s", r->str);
    break;
  case REDIS_REPLY_NIL:
    snprintf(buf + n, size - n, "(nil)");
    break;
  case REDIS_REPLY_ARRAY:
    snprintf(buf + n, size - n, "[");
    for (size_t i = 0; i < r->elements; i++) {
      if (i > 0)
        snprintf(buf + strlen(buf), size - strlen(buf), ", ");
      show(r->element[i], buf, size);
    }
    snprintf(buf + strlen(buf), size - strlen(buf), "]");
    break;
  default:
    snprintf(buf + n, size - n, "?%d", r->type);
  }
}

static char shown[4096];

/* The next reply on r (after a command sent or none), shown. */
static const char *next(redisContext *r) {
  void *reply = NULL;
  assert_int_equal(redisGetReply(r, &reply), REDIS_OK);
  shown[0] = '\0';
  show(reply, shown, sizeof shown);
  freeReplyObject(reply);
  return shown;
}

static const char *cmd(redisContext *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  assert_int_equal(redisvAppendCommand(r, fmt, ap), REDIS_OK);
  va_end(ap);
  return next(r);
}

#define EXPECT(call, want) assert_string_equal((call), (want))

/* A script of requests over one or two connections: conn 0 or 1 sends
 * command (NULL: reads its next reply without sending), and the reply
 * must read `want`. */
typedef struct {
  int conn;
  const char *command, *want;
} step_t;

/* Sends line, its words split at spaces, and reads the reply. */
static const char *send_line(redisContext *r, const char *line) {
  char copy[256];
  const char *argv[16];
  size_t argc = 0;
  snprintf(copy, sizeof copy, "%s", line);
  for (char *save = NULL, *w = strtok_r(copy, " ", &save); w != NULL && argc < 16;
       w = strtok_r(NULL, " ", &save))
    argv[argc++] = w;
  assert_int_equal(redisAppendCommandArgv(r, (int)argc, argv, NULL), REDIS_OK);
  return next(r);
}

static void run_steps(redisContext *const *conns, const step_t *steps, size_t n) {
  for (size_t i = 0; i < n; i++) {
    redisContext *r = conns[steps[i].conn];
    EXPECT(steps[i].command ? send_line(r, steps[i].command) : next(r), steps[i].want);
  }
}
#define RUN_STEPS(conns, steps) run_steps((conns), (steps), sizeof(steps) / sizeof(steps)[0])

/* The fake closed r: a request on it meets no reply. */
static void assert_closed(redisContext *r) {
  void *after = NULL;
  if (redisAppendCommand(r, "PING") == REDIS_OK)
    assert_int_not_equal(redisGetReply(r, &after), REDIS_OK);
}

enum { SUB, PUB };
static const step_t pubsub[] = {
    {SUB, "SUBSCRIBE", "-ERR wrong number of arguments for 'subscribe' command"},
    {SUB, "UNSUBSCRIBE", "[$unsubscribe, (nil), :0]"},
    {SUB, "SUBSCRIBE a b", "[$subscribe, $a, :1]"},
    {SUB, NULL, "[$subscribe, $b, :2]"},
    {SUB, "SUBSCRIBE a", "[$subscribe, $a, :2]"}, /* once per channel */
    {SUB, "PING", "[$pong, $]"},
    {SUB, "PING hi", "[$pong, $hi]"},
    {SUB, "GET k",
     "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
     "are allowed in this context"},
    {PUB, "PUBLISH a hello", ":1"},
    {PUB, "PUBLISH nobody hello", ":0"},
    {SUB, NULL, "[$message, $a, $hello]"},
    {SUB, "UNSUBSCRIBE a", "[$unsubscribe, $a, :1]"},
    {PUB, "PUBLISH a again", ":0"},
    {SUB, "UNSUBSCRIBE", "[$unsubscribe, $b, :0]"}, /* all that are left */
    {SUB, "SSUBSCRIBE s", "[$ssubscribe, $s, :1]"},
    {SUB, "SUNSUBSCRIBE s", "[$sunsubscribe, $s, :0]"},
    {SUB, "GET k", "(nil)"}, /* out of subscriber mode */
};

static void test_pubsub(void **state) {
  fx_t *fx = *state;
  redisContext *conns[2] = {connect_to(fx), connect_to(fx)};
  RUN_STEPS(conns, pubsub);
  /* A connection's channels are bounded (the library subscribes to one per
   * waited-for name): past the bound, an error, the others kept. */
  char want[64];
  for (int i = 1; i <= 64; i++) {
    snprintf(want, sizeof want, "[$subscribe, $c%d, :%d]", i, i);
    EXPECT(cmd(conns[SUB], "SUBSCRIBE c%d", i), want);
  }
  static const step_t bound[] = {
      {SUB, "SUBSCRIBE c65", "-ERR fake master: too many channels on one connection"},
      {PUB, "PUBLISH c64 m", ":1"},
      {SUB, NULL, "[$message, $c64, $m]"},
  };
  RUN_STEPS(conns, bound);
  /* killed with its subscribers connected: they see the connection end */
  assert_int_equal(redlock_testing_kill(fx->kit, 0), REDLOCK_OK);
  assert_closed(conns[SUB]);
  redisFree(conns[SUB]);
  redisFree(conns[PUB]);
}

static const step_t connection_commands[] = {
    {0, "PING", "+PONG"},
    {0, "PING hi", "$hi"},
    {0, "AUTH", "-ERR wrong number of arguments for 'auth' command"},
    {0, "AUTH secret", "+OK"},
    {0, "SELECT 0", "+OK"},
    {0, "CLIENT SETNAME t", "+OK"},
    {0, "READONLY", "+OK"},
    {0, "COMMAND INFO delifeq delex", "[(nil), (nil)]"},
    {0, "COMMAND DOCS", "-ERR fake master: only COMMAND INFO is answered"},
    {0, "COMMAND", "-ERR fake master: only COMMAND INFO is answered"},
};

/* INFO's sections: each line in `has` is in the reply to `command`, `lacks` is not. */
static void assert_info(redisContext *r, const char *command, const char *const *has,
                        const char *lacks) {
  void *reply = redisCommand(r, command);
  assert_non_null(reply);
  const redisReply *info = reply;
  assert_int_equal(info->type, REDIS_REPLY_STRING);
  for (size_t i = 0; has[i] != NULL; i++)
    assert_non_null(strstr(info->str, has[i]));
  if (lacks != NULL)
    assert_null(strstr(info->str, lacks));
  freeReplyObject(reply);
}

static void test_connection_commands(void **state) {
  fx_t *fx = *state;
  redisContext *r = connect_to(fx);
  RUN_STEPS(&r, connection_commands);
  assert_info(r, "INFO server",
              (const char *const[]){"redis_version:7.0.15", "run_id:", "uptime_in_seconds:", NULL},
              "# Replication");
  assert_info(r, "INFO replication",
              (const char *const[]){"role:master", "master_replid:", "second_repl_offset:-1", NULL},
              "# Server");
  assert_info(r, "INFO", (const char *const[]){"# Server", "# Replication", NULL}, NULL);
  EXPECT(cmd(r, "QUIT"), "+OK");
  assert_closed(r);
  redisFree(r);
}

/* WAIT and WAITAOF: no replica and no AOF, so 0 acks; asked for a replica,
 * the reply comes when the timeout ends (the connection's later replies
 * wait behind it, in order). */
static const step_t wait_errors[] = {
    {0, "WAIT 0 0", ":0"},
    {0, "WAITAOF 0 0 0", "[:0, :0]"},
    {0, "WAIT 1", "-ERR wrong number of arguments for 'wait' command"},
    {0, "WAITAOF 0 1", "-ERR wrong number of arguments for 'waitaof' command"},
    {0, "WAIT x 0", "-ERR value is not an integer or out of range"},
    {0, "WAIT 0 x", "-ERR timeout is not an integer or out of range"},
    {0, "WAIT 0 -1", "-ERR timeout is not an integer or out of range"},
    {0, "WAITAOF 1 0 0",
     "-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."},
};

static void test_wait(void **state) {
  fx_t *fx = *state;
  redisContext *r = connect_to(fx);
  RUN_STEPS(&r, wait_errors);
  EXPECT(cmd(r, "WAIT %s 0", ""), "-ERR value is not an integer or out of range");
  uint64_t t0 = now_ms();
  assert_int_equal(redisAppendCommand(r, "WAIT 1 80"), REDIS_OK);
  assert_int_equal(redisAppendCommand(r, "PING"), REDIS_OK);
  EXPECT(next(r), ":0");
  assert_true(now_ms() - t0 >= 80);
  EXPECT(next(r), "+PONG");
  t0 = now_ms();
  EXPECT(cmd(r, "WAITAOF 0 1 50"), "[:0, :0]");
  assert_true(now_ms() - t0 >= 50);
  redisFree(r);
}

/* Bytes that are not a request: an error, and for a malformed array the
 * connection closed (Redis' "Protocol error" does the same). */
static void test_not_a_request(void **state) {
  fx_t *fx = *state;
  redisContext *r = connect_to(fx);
  const char status[] = "+OK\r\n";
  assert_int_equal(write(r->fd, status, sizeof status - 1), (ssize_t)(sizeof status - 1));
  EXPECT(next(r), "-ERR fake master: a request must be an array of 1 to 256 strings");
  const char empty[] = "*0\r\n";
  assert_int_equal(write(r->fd, empty, sizeof empty - 1), (ssize_t)(sizeof empty - 1));
  EXPECT(next(r), "-ERR fake master: a request must be an array of 1 to 256 strings");
  EXPECT(cmd(r, "PING"), "+PONG"); /* still open */
  const char ints[] = "*1\r\n:1\r\n";
  assert_int_equal(write(r->fd, ints, sizeof ints - 1), (ssize_t)(sizeof ints - 1));
  EXPECT(next(r), "-ERR Protocol error: expected '$'");
  assert_closed(r);
  redisFree(r);
}

/* A connection made while the master is paused is accepted when it resumes
 * (the kernel holds it meanwhile, as for a stopped process); a request sent
 * meanwhile is answered then.  A killed master closes its connections. */
static void test_paused_accept_and_kill(void **state) {
  fx_t *fx = *state;
  redisContext *before = connect_to(fx);
  EXPECT(cmd(before, "PING"), "+PONG");
  assert_int_equal(redlock_testing_pause(fx->kit, 0), REDLOCK_OK);
  redisContext *r = connect_to(fx); /* the kernel's backlog accepts it */
  assert_int_equal(redisAppendCommand(r, "SET k v"), REDIS_OK);
  int done = 0;
  assert_int_equal(redisBufferWrite(r, &done), REDIS_OK);
  assert_int_equal(redlock_testing_resume(fx->kit, 0), REDLOCK_OK);
  EXPECT(next(r), "+OK");
  EXPECT(cmd(before, "GET k"), "$v");
  assert_int_equal(redlock_testing_kill(fx->kit, 0), REDLOCK_OK);
  assert_closed(before);
  redisFree(before);
  redisFree(r);
  assert_int_equal(redlock_testing_restart(fx->kit, 0), REDLOCK_OK);
  r = connect_to(fx);
  EXPECT(cmd(r, "GET k"), "(nil)"); /* a restart is empty */
  EXPECT(cmd(r, "SET k v"), "+OK");
  /* restarted while up: killed first (its connections end), then empty */
  assert_int_equal(redlock_testing_restart(fx->kit, 0), REDLOCK_OK);
  assert_closed(r);
  redisFree(r);
  r = connect_to(fx);
  EXPECT(cmd(r, "GET k"), "(nil)");
  redisFree(r);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN); /* writes to connections the fake closed */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pubsub, setup, teardown),
      cmocka_unit_test_setup_teardown(test_connection_commands, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wait, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_a_request, setup, teardown),
      cmocka_unit_test_setup_teardown(test_paused_accept_and_kill, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
