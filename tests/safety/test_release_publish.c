/* test_release_publish.c: releases announce themselves (src/lua/release.lua:
 * PUBLISH on "__redlock_release__:{<key>}", key = prefix + resource, in
 * braces unless it has a hash tag), checked with plain synchronous hiredis
 * subscribers (SUBSCRIBE, then redisGetReply with a read timeout as the
 * deadline) against real redis-server processes:
 *  - redlock_unlock of a lock on N = 3 produces one message, with an empty
 *    payload, on the channel of its key on every master;
 *  - the channel name includes the key prefix;
 *  - redlock_lock_many's unlock publishes on each of its keys' channels,
 *    also for keys whose braces make a hash tag, an empty one or none;
 *  - a release that deletes nothing (the key is no longer ours) publishes
 *    nothing: a sentinel PUBLISHed after it is the next message.
 * Nothing sleeps: every wait is a blocking read with a deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define CHANNEL_PREFIX REDLOCK_RELEASE_CHANNEL_PREFIX
#define READ_DEADLINE_MS 3000

/* A subscriber connection on one server, subscribed to `n` channels. */
static redisContext *subscribe(rh_server_t *s, const char *const *channels, size_t n) {
  redisContext *ctx = fx_redis(s, READ_DEADLINE_MS);
  for (size_t k = 0; k < n; k++) {
    redisReply *r = redisCommand(ctx, "SUBSCRIBE %s", channels[k]);
    assert_non_null(r);
    /* ["subscribe", channel, count] */
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, "subscribe");
    assert_string_equal(r->element[1]->str, channels[k]);
    assert_int_equal(r->element[2]->integer, (long long)k + 1);
    freeReplyObject(r);
  }
  return ctx;
}

/* Reads the next message (deadline READ_DEADLINE_MS) and checks it: channel
 * and payload.  Fails when none comes. */
static void expect_message(redisContext *ctx, const char *channel, const char *payload) {
  void *raw = NULL;
  if (redisGetReply(ctx, &raw) != REDIS_OK || raw == NULL)
    fail_msg("no message on %s within %d ms (%s)", channel, READ_DEADLINE_MS,
             ctx->err ? ctx->errstr : "no reply");
  redisReply *r = raw;
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_int_equal(r->elements, 3);
  assert_string_equal(r->element[0]->str, "message");
  assert_string_equal(r->element[1]->str, channel);
  assert_int_equal(r->element[2]->type, REDIS_REPLY_STRING);
  assert_int_equal(r->element[2]->len, strlen(payload));
  assert_memory_equal(r->element[2]->str, payload, strlen(payload));
  freeReplyObject(r);
}

static void unlock_publishes(fx_t *fx, const char *prefix) {
  const char *res = "sf:publish";
  char key[128], channel[160];
  snprintf(key, sizeof key, "%s%s", prefix, res);
  fx_channel_of(channel, sizeof channel, key);
  const char *const channels[] = {channel};
  redlock_options_t *opts = fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN);
  if (prefix[0] != '\0')
    assert_int_equal(redlock_options_set_key_prefix(opts, prefix), 0);
  redlock_t *c = fx_open(fx, 0, opts);
  redisContext *subs[FX_MAX_SERVERS];
  for (size_t i = 0; i < fx->n; i++)
    subs[i] = subscribe(fx->servers[i], channels, 1);
  redlock_lock_t *lock = NULL;

  assert_int_equal(redlock_lock(c, res, 5000, &lock), REDLOCK_OK);
  /* The lock's keys are prefixed: the channel follows the key. */
  size_t held = 0;
  for (size_t i = 0; i < fx->n; i++)
    held += (size_t)fx_key_is(fx->servers[i], key, redlock_lock_value(lock));
  assert_true(held >= fx->n / 2 + 1);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);

  /* Every master: each got our SET before the release, on one connection. */
  for (size_t i = 0; i < fx->n; i++) {
    expect_message(subs[i], channel, "");
    redisFree(subs[i]);
  }
}

static void test_unlock_publishes_on_every_master(void **state) { unlock_publishes(*state, ""); }
static void test_unlock_publishes_prefixed_key(void **state) { unlock_publishes(*state, "app:"); }

static void test_unlock_many_publishes_each_key(void **state) {
  fx_t *fx = *state;
  const char *const res[] = {"sf:publish:a", "sf:publish:b"};
  const char *const channels[] = {CHANNEL_PREFIX "{sf:publish:a}", CHANNEL_PREFIX "{sf:publish:b}"};
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redisContext *sub = subscribe(fx->servers[0], channels, 2);
  redlock_lock_t *lock = NULL;

  assert_int_equal(redlock_lock_many(c, res, 2, 5000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  /* In key order: the script deletes and publishes key by key. */
  expect_message(sub, channels[0], "");
  expect_message(sub, channels[1], "");
  redisFree(sub);
}

/* release.lua names each key's channel itself (keyname.h's rule, written
 * again in Lua): keys with a hash tag, an empty one, a '}' alone, a '{'
 * alone, a '}' before the tag and a '}' after an empty one each announce on
 * the channel the client's
 * subscribers name (fx_channel_of: the rule as keyname.h states it). */
static void test_unlock_publishes_braced_keys(void **state) {
  fx_t *fx = *state;
  const char *const res[] = {"sf:{t}a", "sf:{}b", "sf:{}h}", "sf:c}d", "sf:{e", "sf:}{f}g"};
  enum { N_RES = sizeof res / sizeof res[0] };
  char names[N_RES][96];
  const char *channels[N_RES];
  for (size_t i = 0; i < N_RES; i++)
    channels[i] = fx_channel_of(names[i], sizeof names[i], res[i]);
  assert_string_equal(channels[0], CHANNEL_PREFIX "sf:{t}a"); /* the oracle, spot-checked */
  assert_string_equal(channels[1], CHANNEL_PREFIX "{sf:{}b}");
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, fx->n, REDLOCK_LOG_WARN));
  redisContext *sub = subscribe(fx->servers[0], channels, N_RES);
  redlock_lock_t *lock = NULL;

  assert_int_equal(redlock_lock_many(c, res, N_RES, 5000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  /* One message on each channel (in the order the lock keeps its keys). */
  int seen[N_RES] = {0};
  for (size_t k = 0; k < N_RES; k++) {
    void *raw = NULL;
    if (redisGetReply(sub, &raw) != REDIS_OK || raw == NULL)
      fail_msg("%zu of %d release messages within %d ms", k, (int)N_RES, READ_DEADLINE_MS);
    redisReply *r = raw;
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    size_t i = 0;
    while (i < N_RES && strcmp(r->element[1]->str, channels[i]) != 0)
      i++;
    if (i == N_RES || seen[i]++)
      fail_msg("a release message on %s: not one of the keys' channels, or twice",
               r->element[1]->str);
    freeReplyObject(r);
  }
  redisFree(sub);
}

/* One master only, so that the unlock's answer means its release ran there:
 * a sentinel published afterwards must be the next message. */
static void test_release_of_foreign_key_is_silent(void **state) {
  fx_t *fx = *state;
  const char *res = "sf:publish:silent";
  const char *const channels[] = {CHANNEL_PREFIX "{sf:publish:silent}"};
  redlock_t *c = fx_open(fx, 0, fx_options(fx, 0, 1, REDLOCK_LOG_WARN));
  redisContext *sub = subscribe(fx->servers[0], channels, 1);
  redlock_lock_t *lock = NULL;
  char buf[64];

  assert_int_equal(redlock_lock(c, res, 5000, &lock), REDLOCK_OK);
  /* Someone else's now (our lock expired and was retaken, say). */
  assert_int_equal(
      rh_server_command(fx->servers[0], buf, sizeof buf, "SET %s someone-else PX 60000", res), 0);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_ELOST);
  assert_true(fx_key_is(fx->servers[0], res, "someone-else"));
  assert_int_equal(
      rh_server_command(fx->servers[0], buf, sizeof buf, "PUBLISH %s sentinel", channels[0]), 0);
  expect_message(sub, channels[0], "sentinel");

  /* And a real release after that does publish. */
  assert_int_equal(rh_server_command(fx->servers[0], buf, sizeof buf, "DEL %s", res), 0);
  assert_int_equal(redlock_lock(c, res, 5000, &lock), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);
  expect_message(sub, channels[0], "");
  redisFree(sub);
}

FX_MAIN("safety: release notifications", &fx_profile_safety,
        FX_TEST(test_unlock_publishes_on_every_master, 3),
        FX_TEST(test_unlock_publishes_prefixed_key, 3),
        FX_TEST(test_unlock_many_publishes_each_key, 3),
        FX_TEST(test_unlock_publishes_braced_keys, 3),
        FX_TEST(test_release_of_foreign_key_is_silent, 1))
