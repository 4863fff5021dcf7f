/* test_caps.c: unit tests for src/proto/caps.c (what a master runs for us,
 * from its handshake replies), src/proto/direct.c (the EXEC replies of
 * fenced locks on masters without scripts) and the version INFO server
 * gives (src/proto/info.c).  Replies are built by hand (hiredis structs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "proto/caps.h"
#include "proto/direct.h"
#include "proto/info.h"

static redisReply reply_of(int type) {
  redisReply r;
  memset(&r, 0, sizeof r);
  r.type = type;
  return r;
}

static redisReply text(int type, const char *s) {
  redisReply r = reply_of(type);
  r.str = (char *)s;
  r.len = strlen(s);
  return r;
}

static redisReply integer(long long v) {
  redisReply r = reply_of(REDIS_REPLY_INTEGER);
  r.integer = v;
  return r;
}

static redisReply array(redisReply **elements, size_t n) {
  redisReply r = reply_of(REDIS_REPLY_ARRAY);
  r.element = elements;
  r.elements = n;
  return r;
}

/* SET IFEQ: Valkey from 8.1, Redis from 8.4; never from Valkey's
 * redis_version (7.2.4 on every Valkey). */
static void test_version_caps(void **state) {
  (void)state;
  assert_int_equal(caps_from_version(1, CAPS_VERSION(8, 0, 9)), 0);
  assert_int_equal(caps_from_version(1, CAPS_VERSION(8, 1, 0)), CAP_SET_IFEQ);
  assert_int_equal(caps_from_version(1, CAPS_VERSION(9, 1, 2)), CAP_SET_IFEQ);
  assert_int_equal(caps_from_version(0, CAPS_VERSION(8, 0, 6)), 0);
  assert_int_equal(caps_from_version(0, CAPS_VERSION(8, 4, 0)), CAP_SET_IFEQ);
  assert_int_equal(caps_from_version(0, 0), 0);

  info_server_t info;
  const char valkey[] =
      "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n"
      "valkey_version:9.1.2\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\n"
      "uptime_in_seconds:5\r\n";
  assert_int_equal(info_parse_server(valkey, sizeof valkey - 1, &info), ST_OK);
  assert_true(info.is_valkey);
  assert_int_equal(info.version, CAPS_VERSION(9, 1, 2));
  const char redis[] = "redis_version:8.0.6\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\n"
                       "uptime_in_seconds:5\r\n";
  assert_int_equal(info_parse_server(redis, sizeof redis - 1, &info), ST_OK);
  assert_false(info.is_valkey);
  assert_int_equal(info.version, CAPS_VERSION(8, 0, 6));
  /* Not a version: unknown (0), and the rest still parses. */
  const char odd[] = "redis_version:8.x\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\n"
                     "uptime_in_seconds:5\r\n";
  assert_int_equal(info_parse_server(odd, sizeof odd - 1, &info), ST_OK);
  assert_int_equal(info.version, 0);
}

static void test_command_info(void **state) {
  (void)state;
  redisReply name = text(REDIS_REPLY_STRING, "delifeq");
  redisReply *desc_el[] = {&name};
  redisReply desc = array(desc_el, 1);
  redisReply nil = reply_of(REDIS_REPLY_NIL);
  redisReply empty = array(NULL, 0);
  redisReply *both_el[] = {&desc, &desc};
  redisReply both = array(both_el, 2);
  assert_int_equal(caps_from_command_info(&both), CAP_DELIFEQ | CAP_DELEX);
  redisReply *first_el[] = {&desc, &nil};
  redisReply first = array(first_el, 2);
  assert_int_equal(caps_from_command_info(&first), CAP_DELIFEQ);
  redisReply *second_el[] = {&empty, &desc};
  redisReply second = array(second_el, 2);
  assert_int_equal(caps_from_command_info(&second), CAP_DELEX);
  redisReply err = text(REDIS_REPLY_ERROR, "NOPERM this user has no permissions");
  assert_int_equal(caps_from_command_info(&err), 0);
  redisReply *one_el[] = {&desc};
  redisReply one = array(one_el, 1);
  assert_int_equal(caps_from_command_info(&one), 0);
}

static void test_no_scripts_error(void **state) {
  (void)state;
  const char *engine = "ERR Could not find scripting engine 'lua'";
  assert_true(caps_no_scripts_error(engine, strlen(engine)));
  const char *renamed = "ERR unknown command 'SCRIPT', with args beginning with: 'LOAD'";
  assert_true(caps_no_scripts_error(renamed, strlen(renamed)));
  const char *noperm = "NOPERM User u has no permissions to run the 'script|load' command";
  assert_false(caps_no_scripts_error(noperm, strlen(noperm)));
  assert_false(caps_no_scripts_error(NULL, 0));
  assert_false(caps_no_scripts_error("ERR Could not", 13));
}

static void test_path(void **state) {
  (void)state;
  assert_string_equal(caps_path(CAP_LUA), "scripts");
  assert_string_equal(caps_path(CAP_LUA | CAP_DELIFEQ | CAP_SET_IFEQ), "both");
  assert_string_equal(caps_path(CAP_DELIFEQ | CAP_SET_IFEQ), "script-free commands");
  assert_string_equal(caps_path(CAP_DELEX | CAP_SET_IFEQ), "script-free commands");
  assert_string_equal(caps_path(CAP_SET_IFEQ), "none");
  assert_string_equal(caps_path(CAP_LUA | CAP_SET_IFEQ), "scripts");
}

/* MULTI; SET NX PX; GET C; ZSCORE F m; TIME; EXEC */
static void test_fenced_acquire(void **state) {
  (void)state;
  redisReply ok = text(REDIS_REPLY_STATUS, "OK");
  redisReply nil = reply_of(REDIS_REPLY_NIL);
  redisReply counter = text(REDIS_REPLY_STRING, "1700000000000005");
  redisReply floor = text(REDIS_REPLY_STRING, "1700000000000009");
  redisReply sec = text(REDIS_REPLY_STRING, "1700000000");
  redisReply usec = text(REDIS_REPLY_STRING, "000003");
  redisReply *time_el[] = {&sec, &usec};
  redisReply time = array(time_el, 2);
  int64_t token = -1;

  /* The floor is highest: floor + 1. */
  redisReply *el[] = {&ok, &counter, &floor, &time};
  redisReply exec = array(el, 4);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &exec, &token), REPLY_YES);
  assert_int_equal(token, 1700000000000010LL);
  /* No counter, no floor: the clock in microseconds. */
  redisReply *fresh_el[] = {&ok, &nil, &nil, &time};
  redisReply fresh = array(fresh_el, 4);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &fresh, &token), REPLY_YES);
  assert_int_equal(token, 1700000000000003LL);
  /* The counter is highest (the scripts wrote it): counter + 1. */
  redisReply high = text(REDIS_REPLY_STRING, "1800000000000000");
  redisReply *counter_el[] = {&ok, &high, &floor, &time};
  redisReply by_counter = array(counter_el, 4);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &by_counter, &token), REPLY_YES);
  assert_int_equal(token, 1800000000000001LL);
  /* SET refused: a no, token 0. */
  redisReply *held_el[] = {&nil, &counter, &floor, &time};
  redisReply held = array(held_el, 4);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &held, &token), REPLY_REFUSED);
  assert_int_equal(token, 0);
  /* A queued command's error, or EXECABORT: an error. */
  redisReply wrongtype = text(REDIS_REPLY_ERROR, "WRONGTYPE Operation against a key");
  redisReply *err_el[] = {&ok, &wrongtype, &floor, &time};
  redisReply with_err = array(err_el, 4);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &with_err, &token), REPLY_ERROR);
  assert_string_equal(direct_tx_error(&with_err), wrongtype.str);
  redisReply abort = text(REDIS_REPLY_ERROR, "EXECABORT Transaction discarded");
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &abort, &token), REPLY_ERROR);
  assert_string_equal(direct_tx_error(&abort), abort.str);
  /* Hostile shapes: not a vote. */
  redisReply junk = text(REDIS_REPLY_STRING, "12x");
  redisReply *junk_el[] = {&ok, &junk, &floor, &time};
  redisReply bad_counter = array(junk_el, 4);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &bad_counter, &token),
                   REPLY_UNEXPECTED);
  redisReply huge = text(REDIS_REPLY_STRING, "1e300");
  redisReply *huge_el[] = {&ok, &nil, &huge, &time};
  redisReply bad_floor = array(huge_el, 4);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &bad_floor, &token),
                   REPLY_UNEXPECTED);
  redisReply big_usec = text(REDIS_REPLY_STRING, "1000000");
  redisReply *bad_time_el[] = {&sec, &big_usec};
  redisReply bad_time = array(bad_time_el, 2);
  redisReply *bt_el[] = {&ok, &nil, &nil, &bad_time};
  redisReply with_bad_time = array(bt_el, 4);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &with_bad_time, &token),
                   REPLY_UNEXPECTED);
  redisReply *short_el[] = {&ok, &nil, &nil};
  redisReply too_short = array(short_el, 3);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &too_short, &token),
                   REPLY_UNEXPECTED);
  redisReply *null_el[] = {&ok, NULL, &nil, &time};
  redisReply with_null = array(null_el, 4);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &with_null, &token),
                   REPLY_UNEXPECTED);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCED_ACQUIRE, &nil, &token), REPLY_UNEXPECTED);
  assert_int_equal(direct_tx_classify(DIRECT_TX_NONE, &exec, &token), REPLY_UNEXPECTED);
}

/* MULTI; ZADD F GT T m; SET K V IFEQ V KEEPTTL; EXEC */
static void test_fence_commit(void **state) {
  (void)state;
  redisReply added = integer(1), kept = integer(0);
  redisReply ok = text(REDIS_REPLY_STATUS, "OK");
  redisReply nil = reply_of(REDIS_REPLY_NIL);
  int64_t n = -1;
  redisReply *yes_el[] = {&kept, &ok};
  redisReply yes = array(yes_el, 2);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCE_COMMIT, &yes, &n), REPLY_YES);
  assert_int_equal(n, 1);
  redisReply *gone_el[] = {&added, &nil};
  redisReply gone = array(gone_el, 2);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCE_COMMIT, &gone, &n), REPLY_REFUSED);
  assert_int_equal(n, 0);
  redisReply *odd_el[] = {&ok, &ok};
  redisReply odd = array(odd_el, 2);
  assert_int_equal(direct_tx_classify(DIRECT_TX_FENCE_COMMIT, &odd, &n), REPLY_UNEXPECTED);
  assert_null(direct_tx_error(&yes));
}

/* MULTI; SET K V IFEQ V PX; [ZADD F GT T m;] SET K V NX PX; EXEC */
static void test_extend(void **state) {
  (void)state;
  redisReply ok = text(REDIS_REPLY_STATUS, "OK");
  redisReply nil = reply_of(REDIS_REPLY_NIL);
  redisReply raised = integer(0);
  int64_t n = -1;
  redisReply *kept_el[] = {&ok, &nil};
  redisReply kept = array(kept_el, 2);
  assert_int_equal(direct_tx_classify(DIRECT_TX_EXTEND, &kept, &n), REPLY_YES);
  assert_int_equal(n, 1);
  redisReply *back_el[] = {&nil, &raised, &ok};
  redisReply back = array(back_el, 3);
  assert_int_equal(direct_tx_classify(DIRECT_TX_EXTEND, &back, &n), REPLY_YES);
  assert_int_equal(n, DIRECT_REINSTALLED);
  redisReply *other_el[] = {&nil, &nil};
  redisReply other = array(other_el, 2);
  assert_int_equal(direct_tx_classify(DIRECT_TX_EXTEND, &other, &n), REPLY_REFUSED);
  assert_int_equal(n, 0);
  /* Both took: impossible (the key exists after the SET IFEQ). */
  redisReply *both_el[] = {&ok, &ok};
  redisReply both = array(both_el, 2);
  assert_int_equal(direct_tx_classify(DIRECT_TX_EXTEND, &both, &n), REPLY_UNEXPECTED);
  redisReply *mid_el[] = {&nil, &ok, &ok};
  redisReply bad_mid = array(mid_el, 3);
  assert_int_equal(direct_tx_classify(DIRECT_TX_EXTEND, &bad_mid, &n), REPLY_UNEXPECTED);
  redisReply *one_el[] = {&ok};
  redisReply one = array(one_el, 1);
  assert_int_equal(direct_tx_classify(DIRECT_TX_EXTEND, &one, &n), REPLY_UNEXPECTED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_caps),     cmocka_unit_test(test_command_info),
      cmocka_unit_test(test_no_scripts_error), cmocka_unit_test(test_path),
      cmocka_unit_test(test_fenced_acquire),   cmocka_unit_test(test_fence_commit),
      cmocka_unit_test(test_extend),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
