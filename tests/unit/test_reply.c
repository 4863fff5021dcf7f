/* test_reply.c: unit tests for src/proto/reply.c: replies classified as votes,
 * the deep copy a durability ack keeps the write's reply in, and whether a
 * WAIT / WAITAOF reply reached what was asked.  Replies are built by hand
 * (hiredis structs), no server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "proto/reply.h"

static redisReply integer(long long v) {
  redisReply r;
  memset(&r, 0, sizeof r);
  r.type = REDIS_REPLY_INTEGER;
  r.integer = v;
  return r;
}

static redisReply text(int type, const char *s) {
  redisReply r;
  memset(&r, 0, sizeof r);
  r.type = type;
  r.str = (char *)s;
  r.len = strlen(s);
  return r;
}

static void test_classify(void **state) {
  (void)state;
  int64_t n = -5;
  redisReply ok = text(REDIS_REPLY_STATUS, "OK");
  assert_int_equal(reply_classify(&ok, REPLY_EXPECT_OK, &n), REPLY_YES);
  redisReply nil;
  memset(&nil, 0, sizeof nil);
  nil.type = REDIS_REPLY_NIL;
  assert_int_equal(reply_classify(&nil, REPLY_EXPECT_OK, &n), REPLY_REFUSED);
  redisReply seven = integer(7);
  assert_int_equal(reply_classify(&seven, REPLY_EXPECT_POSITIVE, &n), REPLY_YES);
  assert_int_equal(n, 7);
  redisReply zero = integer(0);
  assert_int_equal(reply_classify(&zero, REPLY_EXPECT_CODE, &n), REPLY_REFUSED);
  redisReply err = text(REDIS_REPLY_ERROR, "NOSCRIPT No matching script");
  assert_int_equal(reply_classify(&err, 1, &n), REPLY_ERROR);
  assert_true(reply_is_noscript(&err));
  redisReply other = text(REDIS_REPLY_ERROR, "READONLY You can't write");
  assert_false(reply_is_noscript(&other));
}

static void test_clone(void **state) {
  (void)state;
  redisReply a = text(REDIS_REPLY_STRING, "abc");
  redisReply b = integer(42);
  redisReply *elems[3] = {&a, NULL, &b};
  redisReply arr;
  memset(&arr, 0, sizeof arr);
  arr.type = REDIS_REPLY_ARRAY;
  arr.element = elems;
  arr.elements = 3;
  redisReply *copy = reply_clone(&arr);
  assert_non_null(copy);
  assert_int_equal(copy->type, REDIS_REPLY_ARRAY);
  assert_int_equal(copy->elements, 3);
  assert_ptr_not_equal(copy->element, arr.element);
  assert_int_equal(copy->element[0]->type, REDIS_REPLY_STRING);
  assert_int_equal(copy->element[0]->len, 3);
  assert_ptr_not_equal(copy->element[0]->str, a.str);
  assert_string_equal(copy->element[0]->str, "abc");
  assert_null(copy->element[1]);
  assert_int_equal(copy->element[2]->integer, 42);
  reply_clone_free(copy);
  /* a string with a NUL inside is copied whole */
  redisReply bin;
  memset(&bin, 0, sizeof bin);
  bin.type = REDIS_REPLY_STRING;
  bin.str = (char *)"a\0b";
  bin.len = 3;
  copy = reply_clone(&bin);
  assert_non_null(copy);
  assert_memory_equal(copy->str, "a\0b", 3);
  reply_clone_free(copy);
  reply_clone_free(NULL);
}

static void test_ack_met(void **state) {
  (void)state;
  char why[128];
  redisReply one = integer(1), none = integer(0);
  assert_true(reply_ack_met(&one, 0, 0, 1, why, sizeof why));
  assert_false(reply_ack_met(&none, 0, 0, 1, why, sizeof why));
  assert_string_equal(why, "WAIT: 0 of 1 replica acknowledged in time");
  redisReply two = integer(2);
  assert_false(reply_ack_met(&two, 0, 0, 3, why, sizeof why));
  assert_string_equal(why, "WAIT: 2 of 3 replicas acknowledged in time");
  assert_false(reply_ack_met(NULL, 0, 0, 1, why, sizeof why));
  assert_string_equal(why, "no reply to WAIT");
  redisReply err = text(REDIS_REPLY_ERROR, "ERR unknown command 'WAITAOF'");
  assert_false(reply_ack_met(&err, 1, 1, 0, why, sizeof why));
  assert_string_equal(why, "WAITAOF: ERR unknown command 'WAITAOF'");
  /* WAITAOF: [local, replicas] */
  redisReply l1 = integer(1), l0 = integer(0), r1 = integer(1);
  redisReply *e[2] = {&l1, &r1};
  redisReply arr;
  memset(&arr, 0, sizeof arr);
  arr.type = REDIS_REPLY_ARRAY;
  arr.element = e;
  arr.elements = 2;
  assert_true(reply_ack_met(&arr, 1, 1, 1, why, sizeof why));
  e[0] = &l0;
  assert_false(reply_ack_met(&arr, 1, 1, 1, why, sizeof why));
  assert_string_equal(why, "WAITAOF: the local AOF fsync was not acknowledged in time");
  assert_true(reply_ack_met(&arr, 1, 0, 1, why, sizeof why));
  /* the wrong shape for the command */
  assert_false(reply_ack_met(&one, 1, 1, 0, why, sizeof why));
  assert_string_equal(why, "unexpected reply to WAITAOF");
  assert_false(reply_ack_met(&arr, 0, 0, 1, why, sizeof why));
  assert_string_equal(why, "unexpected reply to WAIT");
  arr.elements = 1;
  assert_false(reply_ack_met(&arr, 1, 0, 1, why, sizeof why));
}

UNIT_MAIN(cmocka_unit_test(test_classify), cmocka_unit_test(test_clone),
          cmocka_unit_test(test_ack_met))
