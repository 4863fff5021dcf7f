/* test_replypool.c: hiredis reply objects from a connection's free list
 * (util/pool.h): the scalars it serves, what it leaves to hiredis, the
 * blocks it keeps (at most REPLY_POOL_KEEP), and a pool released while
 * replies are out, freed with the last. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "unit_support.h"
#include "util/pool.h"

static void test_scalars(void **state) {
  (void)state;
  reply_pool_t *pool = reply_pool_new();
  assert_non_null(pool);
  redisReply *i = reply_pool_integer(pool, -42);
  redisReply *n = reply_pool_nil(pool);
  redisReply *s = reply_pool_string(pool, REDIS_REPLY_STATUS, "OK", 2);
  redisReply *e = reply_pool_string(pool, REDIS_REPLY_ERROR, "ERR no", 6);
  assert_non_null(i);
  assert_non_null(n);
  assert_non_null(s);
  assert_non_null(e);
  assert_int_equal(i->type, REDIS_REPLY_INTEGER);
  assert_int_equal(i->integer, -42);
  assert_int_equal(n->type, REDIS_REPLY_NIL);
  assert_int_equal(s->type, REDIS_REPLY_STATUS);
  assert_string_equal(s->str, "OK");
  assert_int_equal(s->len, 2);
  assert_string_equal(e->str, "ERR no");
  assert_int_equal(reply_pool_served(pool), 4);
  assert_int_equal(reply_pool_kept(pool), 0);
  reply_pool_free(i);
  reply_pool_free(n);
  reply_pool_free(s);
  reply_pool_free(e);
  reply_pool_free(NULL); /* as freeReplyObject(NULL) */
  assert_int_equal(reply_pool_kept(pool), 4);
  /* A kept block serves the next reply: no allocation. */
  redisReply *again = reply_pool_integer(pool, 1);
  assert_int_equal(reply_pool_kept(pool), 3);
  assert_int_equal(reply_pool_served(pool), 5);
  reply_pool_free(again);
  reply_pool_release(pool);
}

/* Longer strings and other types are hiredis' own objects: NULL here. */
static void test_not_pooled(void **state) {
  (void)state;
  reply_pool_t *pool = reply_pool_new();
  assert_non_null(pool);
  char long_str[REPLY_POOL_STR_MAX + 1];
  memset(long_str, 'a', sizeof long_str);
  assert_null(reply_pool_string(pool, REDIS_REPLY_STRING, long_str, sizeof long_str));
  redisReply *max = reply_pool_string(pool, REDIS_REPLY_STRING, long_str, REPLY_POOL_STR_MAX);
  assert_non_null(max);
  assert_int_equal(max->len, REPLY_POOL_STR_MAX);
  assert_null(reply_pool_string(pool, REDIS_REPLY_ARRAY, "x", 1));
  assert_int_equal(reply_pool_served(pool), 1);
  reply_pool_free(max);
  reply_pool_release(pool);
}

/* At most REPLY_POOL_KEEP blocks are kept; the rest go back to the heap. */
static void test_keeps_at_most(void **state) {
  (void)state;
  enum { MANY = REPLY_POOL_KEEP + 10 };
  static void *out[MANY];
  reply_pool_t *pool = reply_pool_new();
  assert_non_null(pool);
  for (int k = 0; k < MANY; k++) {
    out[k] = reply_pool_integer(pool, k);
    assert_non_null(out[k]);
  }
  for (int k = 0; k < MANY; k++)
    reply_pool_free(out[k]);
  assert_int_equal(reply_pool_kept(pool), REPLY_POOL_KEEP);
  reply_pool_release(pool);
}

/* Released while replies are out (the connection went first): the replies
 * still read, and the pool goes with the last (a leak fails under ASan). */
static void test_released_with_replies_out(void **state) {
  (void)state;
  reply_pool_t *pool = reply_pool_new();
  assert_non_null(pool);
  redisReply *a = reply_pool_string(pool, REDIS_REPLY_STRING, "v", 1);
  redisReply *b = reply_pool_integer(pool, 7);
  reply_pool_release(pool);
  assert_string_equal(a->str, "v");
  assert_int_equal(b->integer, 7);
  reply_pool_free(a);
  reply_pool_free(b);
}

UNIT_MAIN(cmocka_unit_test(test_scalars), cmocka_unit_test(test_not_pooled),
          cmocka_unit_test(test_keeps_at_most), cmocka_unit_test(test_released_with_replies_out))
