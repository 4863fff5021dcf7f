/* fixture_keys.c: what is on the masters, for cmocka tests (see fixture.h).
 * Unlike fixture_servers.c every read asserts that the master answered: a
 * test that inspects a master it did not stop must not mistake an
 * unreachable server for a missing key. */
#include "fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

int fx_key_is(rh_server_t *s, const char *key, const char *value) {
  char buf[512];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET %s", key), 0);
  return strcmp(buf, value) == 0;
}

int fx_key_absent(rh_server_t *s, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "EXISTS %s", key), 0);
  return strcmp(buf, "0") == 0;
}

long fx_exists(rh_server_t *s, const char *key) { return !fx_key_absent(s, key); }

long long fx_pttl(rh_server_t *s, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "PTTL %s", key), 0);
  return strtoll(buf, NULL, 10);
}

uint64_t fx_get_u64(rh_server_t *s, const char *key) {
  char buf[128];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "GET %s", key), 0);
  if (strcmp(buf, "(nil)") == 0)
    return 0;
  return strtoull(buf, NULL, 10);
}

long fx_count_keys(rh_server_t *s, const char *pattern) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "EVAL %s 0 %s",
                                     "return #redis.call('keys', ARGV[1])", pattern),
                   0);
  return strtol(buf, NULL, 10);
}

long fx_zcard(rh_server_t *s, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "ZCARD %s", key), 0);
  return strtol(buf, NULL, 10);
}

size_t fx_holding(fx_t *fx, size_t n, const char *key, const char *value) {
  size_t on = 0;
  for (size_t i = 0; i < n; i++)
    on += (size_t)fx_key_is(fx->servers[i], key, value);
  return on;
}

size_t fx_masters_with_key(fx_t *fx, size_t n, const char *key) {
  size_t on = 0;
  for (size_t i = 0; i < n; i++)
    on += (size_t)!fx_key_absent(fx->servers[i], key);
  return on;
}

void fx_assert_on_quorum(fx_t *fx, const char *key, const char *value) {
  size_t on = fx_holding(fx, fx->n, key, value);
  if (on < fx->n / 2 + 1)
    fail_msg("%s = %s on %zu of %zu masters: not a quorum", key, value, on, fx->n);
}

void fx_pause_all(fx_t *fx) {
  for (size_t i = 0; i < fx->n; i++)
    assert_int_equal(rh_server_pause(fx->servers[i]), 0);
}

void fx_resume_all(fx_t *fx) {
  for (size_t i = 0; i < fx->n; i++)
    assert_int_equal(rh_server_resume(fx->servers[i]), 0);
}

/* ---- waits ------------------------------------------------------------------------- */

typedef struct {
  fx_t *fx;
  rh_server_t *s;
  const char *key;
  const char *value;
  long long lo, hi;
} key_wait_t;

static int key_absent_pred(void *arg) {
  key_wait_t *w = arg;
  return fx_key_absent(w->s, w->key);
}

int fx_wait_key_absent(rh_server_t *s, const char *key, int timeout_ms) {
  key_wait_t w = {NULL, s, key, NULL, 0, 0};
  return rh_wait_until(key_absent_pred, &w, timeout_ms);
}

static int key_is_pred(void *arg) {
  key_wait_t *w = arg;
  return fx_key_is(w->s, w->key, w->value);
}

int fx_wait_key_is(rh_server_t *s, const char *key, const char *value, int timeout_ms) {
  key_wait_t w = {NULL, s, key, value, 0, 0};
  return rh_wait_until(key_is_pred, &w, timeout_ms);
}

static int pttl_in_pred(void *arg) {
  key_wait_t *w = arg;
  long long pttl = fx_pttl(w->s, w->key);
  return pttl > w->lo && pttl <= w->hi;
}

int fx_wait_pttl_in(rh_server_t *s, const char *key, long long lo_ms, long long hi_ms,
                    int timeout_ms) {
  key_wait_t w = {NULL, s, key, NULL, lo_ms, hi_ms};
  return rh_wait_until(pttl_in_pred, &w, timeout_ms);
}

typedef struct {
  fx_t *fx;
  long (*read)(rh_server_t *s, const char *key);
  const char *key;
  long want;
} every_wait_t;

static int every_master_pred(void *arg) {
  every_wait_t *w = arg;
  for (size_t i = 0; i < w->fx->n; i++)
    if (w->read(w->fx->servers[i], w->key) != w->want)
      return 0;
  return 1;
}

int fx_wait_every_master(fx_t *fx, long (*read)(rh_server_t *s, const char *key), const char *key,
                         long want, int timeout_ms) {
  every_wait_t w = {fx, read, key, want};
  return rh_wait_until(every_master_pred, &w, timeout_ms);
}

typedef struct {
  fx_t *fx;
  const char *const *keys;
  size_t n_keys;
  long long min_pttl;
} pttls_wait_t;

static int pttls_above_pred(void *arg) {
  pttls_wait_t *w = arg;
  for (size_t i = 0; i < w->fx->n; i++)
    for (size_t k = 0; k < w->n_keys; k++)
      if (fx_pttl(w->fx->servers[i], w->keys[k]) <= w->min_pttl)
        return 0;
  return 1;
}

int fx_wait_keys_pttl_above(fx_t *fx, const char *const *keys, size_t n_keys, long long min_pttl,
                            int timeout_ms) {
  pttls_wait_t w = {fx, keys, n_keys, min_pttl};
  return rh_wait_until(pttls_above_pred, &w, timeout_ms);
}

void fx_assert_absent_everywhere(fx_t *fx, const char *key, int timeout_ms) {
  for (size_t i = 0; i < fx->n; i++)
    if (!fx_wait_key_absent(fx->servers[i], key, timeout_ms))
      fail_msg("%s still on master %zu after %d ms", key, i, timeout_ms);
}

/* Subscribers to a channel, asserting the master answered. */
static long numsub_answered(rh_server_t *s, const char *channel) {
  char buf[256];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "PUBSUB NUMSUB %s", channel), 0);
  const char *nl = strchr(buf, '\n'); /* "channel\nN" */
  return nl != NULL ? strtol(nl + 1, NULL, 10) : -1;
}

static int subscribed_everywhere(void *arg) {
  key_wait_t *w = arg;
  for (size_t i = 0; i < w->fx->n; i++)
    if (numsub_answered(w->fx->servers[i], w->key) < w->lo)
      return 0;
  return 1;
}

/* The documented rule (redlock.h), spelled here apart from the library's
 * src/proto/keyname.c so that the tests check it: a key with a hash tag (a '{',
 * then a '}' after at least one byte) is used as it is, any other key in
 * braces. */
static int has_tag(const char *key) {
  const char *open = strchr(key, '{');
  return open != NULL && open[1] != '\0' && open[1] != '}' && strchr(open + 2, '}') != NULL;
}

const char *fx_derived_name(char *buf, size_t size, const char *prefix, const char *key,
                            const char *suffix) {
  int n = has_tag(key) ? snprintf(buf, size, "%s%s%s", prefix, key, suffix)
                       : snprintf(buf, size, "%s{%s}%s", prefix, key, suffix);
  assert_true(n > 0 && (size_t)n < size);
  return buf;
}

const char *fx_channel_of(char *buf, size_t size, const char *key) {
  return fx_derived_name(buf, size, REDLOCK_RELEASE_CHANNEL_PREFIX, key, "");
}

const char *fx_fence_key_of(char *buf, size_t size, const char *key) {
  return fx_derived_name(buf, size, REDLOCK_FENCE_KEY_PREFIX, key, "");
}

void fx_assert_subscribed(fx_t *fx, const char *key, long at_least, int timeout_ms) {
  char channel[256];
  fx_channel_of(channel, sizeof channel, key);
  key_wait_t w = {fx, NULL, channel, NULL, at_least, 0};
  if (!rh_wait_until(subscribed_everywhere, &w, timeout_ms))
    fail_msg("fewer than %ld subscribers to %s on some master", at_least, channel);
}

redisContext *fx_redis(const rh_server_t *s, int timeout_ms) {
  struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
  redisContext *ctx = redisConnectWithTimeout("127.0.0.1", rh_server_port(s), tv);
  assert_non_null(ctx);
  if (ctx->err)
    fail_msg("cannot connect to 127.0.0.1:%d: %s", rh_server_port(s), ctx->errstr);
  assert_int_equal(redisSetTimeout(ctx, tv), REDIS_OK);
  return ctx;
}

void fx_assert_woken(uint64_t after_ms, unsigned bound_ms, unsigned fallback_ms, const char *what) {
  if (after_ms >= bound_ms)
    fail_msg("the waiter got through %llu ms after %s (bound %u ms, fallback retry %u ms): "
             "not woken by it",
             (unsigned long long)after_ms, what, bound_ms, fallback_ms);
  if (fx_verbose())
    print_message("woken %llu ms after %s\n", (unsigned long long)after_ms, what);
}
