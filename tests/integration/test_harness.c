/* test_harness.c: tests of the redis-server harness itself (tests/support),
 * so that a failing integration test can be trusted to be about the library:
 * start/stop by PID, free ports, reply rendering, kill/restart on the same
 * port, pause/resume, credentials in the URI, unix socket, DEBUG command,
 * rh_wait_until's deadline, that the server run is the program
 * REDLOCK_TEST_SERVER names (redis-server by default), and a server without
 * Lua (no_lua: Valkey 9.1 run through rh_options_t.executable, refused by
 * older servers). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "fixture.h"

/* 1 while the process exists (zombies count: they are not reaped yet). */
static int process_exists(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

/* State letter from /proc/PID/stat: 'T' when stopped. */
static char process_state(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return '?';
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *paren = strrchr(buf, ')'); /* the command name may hold spaces */
  return paren != NULL && paren[1] == ' ' ? paren[2] : '?';
}

static int is_stopped(void *arg) { return process_state(*(pid_t *)arg) == 'T'; }

/* The value of "field:" in INFO text, copied into out ("" when absent). */
static void info_field(const char *info, const char *field, char *out, size_t size) {
  out[0] = '\0';
  size_t flen = strlen(field);
  for (const char *p = info; p != NULL && *p != '\0';) {
    if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
      const char *v = p + flen + 1;
      size_t n = strcspn(v, "\r\n");
      snprintf(out, size, "%.*s", (int)n, v);
      return;
    }
    p = strchr(p, '\n');
    if (p != NULL)
      p++;
  }
}

/* The harness runs REDLOCK_TEST_SERVER (or redis-server): the server's own
 * INFO names the same executable. */
/* One server of the harness's own (no options), asserted started. */
static rh_server_t *start_one(void) {
  rh_server_t *s = NULL;
  assert_int_equal(rh_server_start(&s, NULL), 0);
  return s;
}

static void test_server_program(void **state) {
  (void)state;
  const char *exe = rh_server_executable();
  assert_non_null(exe);
  assert_true(exe[0] == '/');
  rh_server_t *s = start_one();
  static char info[8192];
  char executable[4096], name[64], version[64];
  assert_int_equal(rh_server_command(s, info, sizeof info, "INFO server"), 0);
  info_field(info, "executable", executable, sizeof executable);
  info_field(info, "server_name", name, sizeof name); /* Valkey only */
  info_field(info, strcmp(name, "valkey") == 0 ? "valkey_version" : "redis_version", version,
             sizeof version);
  printf("harness: %s (%s %s)\n", exe, name[0] != '\0' ? name : "redis", version);
  assert_string_equal(executable, exe);
  rh_server_free(s);
}

static void test_start_command_free(void **state) {
  (void)state;
  char buf[256], expect[64];
  rh_server_t *s = start_one();
  pid_t pid = rh_server_pid(s);
  int port = rh_server_port(s);
  assert_true(pid > 0);
  assert_true(port > 0 && port < 65536);
  snprintf(expect, sizeof expect, "redis://127.0.0.1:%d", port);
  assert_string_equal(rh_server_uri(s), expect);

  assert_int_equal(rh_server_command(s, buf, sizeof buf, "PING"), 0);
  assert_string_equal(buf, "PONG");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "SET %s %s", "k", "v v"), 0);
  assert_string_equal(buf, "OK");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET k"), 0);
  assert_string_equal(buf, "v v");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "INCR n"), 0);
  assert_string_equal(buf, "1");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET missing"), 0);
  assert_string_equal(buf, "(nil)");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "RPUSH l a b"), 0);
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "LRANGE l 0 -1"), 0);
  assert_string_equal(buf, "a\nb");
  /* An error reply is a reply: 0, with the error text. */
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "NOSUCHCOMMAND"), 0);
  assert_true(strncmp(buf, "ERR", 3) == 0);
  /* Small buffers truncate, always NUL-terminated. */
  char tiny[3];
  assert_int_equal(rh_server_command(s, tiny, sizeof tiny, "GET k"), 0);
  assert_string_equal(tiny, "v ");
  /* Loopback only, as configured. */
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "CONFIG GET bind"), 0);
  assert_string_equal(buf, "bind\n127.0.0.1");

  /* A second server gets another port. */
  rh_server_t *s2 = NULL;
  assert_int_equal(rh_server_start(&s2, NULL), 0);
  assert_int_not_equal(rh_server_port(s2), port);
  rh_server_free(s2);

  rh_server_free(s);
  assert_false(process_exists(pid)); /* stopped and reaped */
  rh_server_free(NULL);
}

static void test_kill_restart(void **state) {
  (void)state;
  char buf[256], run_id[64];
  rh_server_t *s = start_one();
  pid_t pid = rh_server_pid(s);
  int port = rh_server_port(s);
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "SET k v"), 0);
  assert_int_equal(rh_server_command(s, run_id, sizeof run_id, "EVAL %s 0",
                                     "return redis.call('info','server'):match('run_id:(%w+)')"),
                   0);

  assert_int_equal(rh_server_kill(s), 0);
  assert_int_equal(rh_server_pid(s), 0);
  assert_false(process_exists(pid));
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "PING"), -1);
  assert_int_equal(rh_server_kill(s), -1); /* already down */

  assert_int_equal(rh_server_restart(s), 0);
  assert_int_equal(rh_server_port(s), port);
  assert_true(rh_server_pid(s) > 0 && rh_server_pid(s) != pid);
  /* Empty (no persistence) and a new run_id. */
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET k"), 0);
  assert_string_equal(buf, "(nil)");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "EVAL %s 0",
                                     "return redis.call('info','server'):match('run_id:(%w+)')"),
                   0);
  assert_string_not_equal(buf, run_id);

  /* Restart of a running server replaces it. */
  pid = rh_server_pid(s);
  assert_int_equal(rh_server_restart(s), 0);
  assert_false(process_exists(pid));
  rh_server_free(s);
}

static void test_pause_resume(void **state) {
  (void)state;
  char buf[64];
  rh_server_t *s = start_one();
  pid_t pid = rh_server_pid(s);
  assert_int_equal(rh_server_pause(s), 0);
  /* SIGSTOP is asynchronous: wait for the kernel to stop it. */
  assert_true(rh_wait_until(is_stopped, &pid, 2000));
  assert_int_equal(rh_server_resume(s), 0);
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "PING"), 0);
  assert_string_equal(buf, "PONG");

  /* Freeing a paused server does not wait for the SIGKILL deadline. */
  assert_int_equal(rh_server_pause(s), 0);
  uint64_t t0 = rh_now_ms();
  rh_server_free(s);
  assert_true(rh_now_ms() - t0 < 1500);
  assert_false(process_exists(pid));
}

static void test_credentials_unix_debug(void **state) {
  (void)state;
  char sock[128], buf[256], expect[128];
  snprintf(sock, sizeof sock, "%s/rh-test-%d.sock",
           getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp", (int)getpid());
  rh_options_t o = {.password = "pw", .enable_debug = 1, .unix_socket = sock};
  rh_server_t *s = NULL;
  assert_int_equal(rh_server_start(&s, &o), 0);
  snprintf(expect, sizeof expect, "redis://:pw@127.0.0.1:%d", rh_server_port(s));
  assert_string_equal(rh_server_uri(s), expect);
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "DEBUG SLEEP 0"), 0);
  assert_string_equal(buf, "OK");

  /* The unix socket answers, and wants the password as well. */
  redisContext *c = redisConnectUnix(sock);
  assert_non_null(c);
  assert_int_equal(c->err, 0);
  redisReply *r = redisCommand(c, "PING");
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_ERROR);
  freeReplyObject(r);
  r = redisCommand(c, "AUTH pw");
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_STATUS);
  freeReplyObject(r);
  redisFree(c);
  rh_server_free(s);
  unlink(sock);

  /* ACL user: the URI carries the user; the default user is untouched. */
  rh_options_t acl = {.acl_user = "u", .acl_password = "p"};
  assert_int_equal(rh_server_start(&s, &acl), 0);
  snprintf(expect, sizeof expect, "redis://u:p@127.0.0.1:%d", rh_server_port(s));
  assert_string_equal(rh_server_uri(s), expect);
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "ACL WHOAMI"), 0);
  assert_string_equal(buf, "u");
  rh_server_free(s);
}

static void test_cluster(void **state) {
  (void)state;
  rh_server_t *servers[3];
  char buf[32];
  assert_int_equal(rh_cluster_start(servers, 3, NULL), 0);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(rh_server_command(servers[i], buf, sizeof buf, "PING"), 0);
    for (int j = 0; j < i; j++)
      assert_int_not_equal(rh_server_port(servers[i]), rh_server_port(servers[j]));
  }
  rh_cluster_free(servers, 3);
  for (int i = 0; i < 3; i++)
    assert_null(servers[i]);
}

static int counter_reaches_5(void *arg) { return ++*(int *)arg >= 5; }
static int never(void *arg) {
  (void)arg;
  return 0;
}

static void test_wait_until(void **state) {
  (void)state;
  int n = 0;
  assert_int_equal(rh_wait_until(counter_reaches_5, &n, 1000), 1);
  assert_int_equal(n, 5);
  uint64_t t0 = rh_now_ms();
  assert_int_equal(rh_wait_until(never, NULL, 50), 0);
  uint64_t elapsed = rh_now_ms() - t0;
  assert_true(elapsed >= 50 && elapsed < 1000);
}

/* 1 when the server is Valkey >= 9.1 (Lua is a module it can unload), asked
 * of the server itself. */
static int has_unloadable_lua(rh_server_t *s) {
  static char info[8192];
  char name[64], version[64];
  assert_int_equal(rh_server_command(s, info, sizeof info, "INFO server"), 0);
  info_field(info, "server_name", name, sizeof name); /* Valkey only */
  info_field(info, "valkey_version", version, sizeof version);
  int major = 0, minor = 0;
  return strcmp(name, "valkey") == 0 && sscanf(version, "%d.%d", &major, &minor) == 2 &&
         (major > 9 || (major == 9 && minor >= 1));
}

/* EVAL and SCRIPT LOAD fail; DELIFEQ (Valkey >= 9.0, no Lua) works. */
static void check_no_lua(rh_server_t *s) {
  char buf[256];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "EVAL %s 0", "return 1"), 0);
  printf("no_lua: EVAL answers: %s\n", buf);
  assert_true(strncmp(buf, "ERR", 3) == 0);
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "SCRIPT LOAD %s", "return 1"), 0);
  assert_true(strncmp(buf, "ERR", 3) == 0);
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "SET k v"), 0);
  assert_string_equal(buf, "OK");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "DELIFEQ k other"), 0);
  assert_string_equal(buf, "0");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET k"), 0);
  assert_string_equal(buf, "v");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "DELIFEQ k v"), 0);
  assert_string_equal(buf, "1");
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET k"), 0);
  assert_string_equal(buf, "(nil)");
}

/* Valkey 9.1 (REDLOCK_TEST_VALKEY9) without Lua, also after a restart.  The
 * server is the one rh_options_t.executable names, whatever
 * REDLOCK_TEST_SERVER is. */
static void test_no_lua_valkey9(void **state) {
  (void)state;
  const char *exe = rh_valkey9_executable();
  if (exe == NULL) {
    printf("SKIP: no Valkey 9.1 (REDLOCK_TEST_VALKEY9; scripts/fetch-extra.sh puts it in "
           "build-extra/sid)\n");
    skip();
  }
  rh_options_t o = {.executable = exe, .no_lua = 1};
  rh_server_t *s = NULL;
  assert_int_equal(rh_server_start(&s, &o), 0);
  static char info[8192];
  char executable[4096];
  assert_int_equal(rh_server_command(s, info, sizeof info, "INFO server"), 0);
  info_field(info, "executable", executable, sizeof executable);
  assert_string_equal(executable, exe);
  assert_true(has_unloadable_lua(s));
  check_no_lua(s);
  pid_t pid = rh_server_pid(s);
  assert_int_equal(rh_server_restart(s), 0);
  assert_int_not_equal(rh_server_pid(s), pid);
  check_no_lua(s);
  rh_server_free(s);
}

/* The default server: no_lua works when it is Valkey >= 9.1 and is refused
 * with RH_ERR_NO_LUA, leaving no server behind, otherwise. */
static void test_no_lua_default(void **state) {
  (void)state;
  rh_server_t *probe = start_one();
  int can = has_unloadable_lua(probe);
  rh_server_free(probe);
  rh_options_t o = {.no_lua = 1};
  rh_server_t *s = NULL;
  int rc = rh_server_start(&s, &o);
  printf("no_lua on %s: %d\n", rh_server_name(), rc);
  if (can) {
    assert_int_equal(rc, 0);
    check_no_lua(s);
    rh_server_free(s);
  } else {
    assert_int_equal(rc, RH_ERR_NO_LUA);
    assert_null(s);
  }
}

FX_MAIN("redis harness", &fx_profile_safety, cmocka_unit_test(test_server_program),
        cmocka_unit_test(test_start_command_free), cmocka_unit_test(test_kill_restart),
        cmocka_unit_test(test_pause_resume), cmocka_unit_test(test_credentials_unix_debug),
        cmocka_unit_test(test_cluster), cmocka_unit_test(test_wait_until),
        cmocka_unit_test(test_no_lua_valkey9), cmocka_unit_test(test_no_lua_default))
