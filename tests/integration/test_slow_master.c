/* test_slow_master.c: a slow but live master.  One of three masters sits
 * behind our fault proxy in pace mode: it gets one command every PACE_MS, so
 * it answers every command PACE_MS late, one at a time, and is never silent
 * long enough to count as hung.  The client drives lock + unlock at a steady
 * rate, faster than that master answers.
 *
 * Without a bound its queue grows without end (RSS in a straight line: 4 ->
 * 68 MB in 75 s) and redlock_close waits for every release queued to it
 * (180 s after 20 s of load).  Tested:
 *
 *  1. test_queue_bounded: with large commands (lock_many over KEYS resources
 *     of ~1 KiB names, ~32 KiB a command) the byte bound is reached within
 *     seconds.  Read from redlock_stats (JSON) during the run, the slow
 *     master's queue never exceeds the documented bound (MAX_QUEUED requests,
 *     MAX_QUEUED_BYTES bytes); once it is full its vote in redlock_last_votes
 *     is `busy (queue full ...)`; every lock and unlock still succeeds (the
 *     other two masters grant); close returns within the close bound.
 *  2. test_close_bounded: ordinary keys, the case: close after a few
 *     seconds of load returns within the close bound (today: the queue
 *     drained at PACE_MS a reply, tens of seconds), and the log says once
 *     that what the slow master still owed is left to expire at its TTL.
 *
 * The bounds are docs/api.md's (Limits; redlock_close).  Times asserted are
 * deadlines with slack (the close bound plus 5 s), not speed measurements;
 * every wait is for a call's return. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fault_proxy.h"
#include "fixture.h"

/* docs/api.md, Limits: one master's queue (written and awaiting a reply, or
 * waiting to be written). */
#define MAX_QUEUED 73728ll
#define MAX_QUEUED_BYTES (16ll * 1024 * 1024)
/* docs/api.md, redlock_close: max(5 s, connect timeout + 3 request timeouts). */
#define CLOSE_BOUND_MS 5000u
#define CLOSE_SLACK_MS 5000u

#define PACE_MS 50u      /* the slow master: one command per 50 ms */
#define CONNECT_MS 3000u /* its handshake is paced too: 14 commands */
#define REQUEST_MS 500u  /* connect + 3 x request < 5 s: the bound is 5 s */
#define PERIOD_US 10000u /* one lock + unlock every 10 ms */
#define TTL_MS 10000u
#define KEYS 32
#define NAME_LEN 1000

typedef struct {
  fault_proxy_t *proxy;
  redlock_t *client;
  char slow_label[64]; /* "127.0.0.1:PORT" of the proxy */
} slow_t;

static void slow_open(fx_t *fx, slow_t *s) {
  memset(s, 0, sizeof *s);
  assert_int_equal(fault_proxy_start(&s->proxy, "127.0.0.1", rh_server_port(fx->servers[0])), 0);
  /* What the client writes and the paced master has not taken yet waits in
   * the proxy: room for it, so that the proxy never resets the connection. */
  assert_int_equal(fault_proxy_set_max_buffer(s->proxy, (size_t)512 * 1024 * 1024), 0);
  assert_int_equal(fault_proxy_set_pace(s->proxy, PACE_MS), 0);
  char via[64];
  snprintf(via, sizeof via, "redis://127.0.0.1:%d", fault_proxy_port(s->proxy));
  snprintf(s->slow_label, sizeof s->slow_label, "127.0.0.1:%d", fault_proxy_port(s->proxy));
  const char *uris[3] = {via, rh_server_uri(fx->servers[1]), rh_server_uri(fx->servers[2])};
  redlock_options_t *opts = fx_options_uris(fx, 0, uris, 3, REDLOCK_LOG_WARN);
  assert_int_equal(redlock_options_set_timeouts(opts, CONNECT_MS, REQUEST_MS), REDLOCK_OK);
  s->client = fx_open(fx, 0, opts);
}

/* The value of "key":N in the slow master's element of the stats' JSON
 * "masters" array; -1 when absent. */
static long long master_figure(redlock_t *client, const char *label, const char *key) {
  static char json[65536];
  int n = redlock_stats(client, REDLOCK_STATS_JSON, json, sizeof json);
  assert_true(n > 0 && (size_t)n < sizeof json);
  char needle[96];
  snprintf(needle, sizeof needle, "\"master\":\"%s\"", label);
  const char *at = strstr(json, needle);
  assert_non_null(at);
  const char *end = strstr(at + 1, "\"master\":\"");
  snprintf(needle, sizeof needle, "\"%s\":", key);
  const char *field = strstr(at, needle);
  if (field == NULL || (end != NULL && field > end))
    return -1;
  return strtoll(field + strlen(needle), NULL, 10);
}

/* The next tick of a steady rate: the call after a slow one is not made up
 * for by a burst. */
static void next_tick(struct timespec *tick) {
  tick->tv_nsec += (long)PERIOD_US * 1000;
  if (tick->tv_nsec >= 1000000000L) {
    tick->tv_nsec -= 1000000000L;
    tick->tv_sec++;
  }
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (now.tv_sec > tick->tv_sec || (now.tv_sec == tick->tv_sec && now.tv_nsec > tick->tv_nsec))
    *tick = now;
  else
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, tick, NULL);
}

/* Closes the client; returns how long it took (ms). */
static uint64_t timed_close(fx_t *fx, const slow_t *s) {
  uint64_t t0 = rh_now_ms();
  fx_close(fx, 0);
  uint64_t took = rh_now_ms() - t0;
  printf("  redlock_close took %llu ms (bound %u ms)\n", (unsigned long long)took, CLOSE_BOUND_MS);
  (void)s;
  return took;
}

static void test_queue_bounded(void **state) {
  fx_t *fx = *state;
  slow_t s;
  slow_open(fx, &s);
  enum { CYCLES = 600 };
  static char names[KEYS][NAME_LEN + 1];
  const char *resources[KEYS];
  long long max_requests = 0, max_bytes = 0, missing = 0;
  unsigned busy = 0, queue_full = 0, failed = 0;
  char votes[1024], first_busy[1100] = "";
  char busy_needle[96];
  snprintf(busy_needle, sizeof busy_needle, "%s=busy", s.slow_label);
  struct timespec tick;
  clock_gettime(CLOCK_MONOTONIC, &tick);
  for (unsigned cycle = 0; cycle < CYCLES; cycle++) {
    for (int k = 0; k < KEYS; k++) {
      memset(names[k], 'a' + k % 26, NAME_LEN);
      snprintf(names[k], NAME_LEN, "slow:%u:%d:", cycle, k);
      names[k][strlen(names[k])] = 'x'; /* the rest of the 1000 bytes */
      resources[k] = names[k];
    }
    redlock_lock_t *lock = NULL;
    int rc = redlock_lock_many(s.client, resources, KEYS, TTL_MS, &lock);
    redlock_last_votes(s.client, votes, sizeof votes);
    if (rc != REDLOCK_OK) {
      if (failed++ == 0)
        printf("  cycle %u: %s (%s)\n", cycle, redlock_err_name(rc), votes);
    } else {
      if (strstr(votes, busy_needle) != NULL) {
        if (busy++ == 0)
          snprintf(first_busy, sizeof first_busy, "cycle %u: %s", cycle, votes);
        queue_full += strstr(votes, "queue full") != NULL;
      }
      if (redlock_unlock(s.client, lock) != REDLOCK_OK)
        failed++;
    }
    if (cycle % 10 == 0) {
      long long requests = master_figure(s.client, s.slow_label, "queued_requests");
      long long bytes = master_figure(s.client, s.slow_label, "queued_bytes");
      missing += requests < 0 || bytes < 0;
      max_requests = requests > max_requests ? requests : max_requests;
      max_bytes = bytes > max_bytes ? bytes : max_bytes;
    }
    next_tick(&tick);
  }
  printf("  %u cycles: %u failed, slow master busy in %u (%u 'queue full'); its queue at most "
         "%lld requests, %lld bytes\n  first busy: %s\n",
         CYCLES, failed, busy, queue_full, max_requests, max_bytes, first_busy);
  uint64_t took = timed_close(fx, &s);
  fault_proxy_stop(s.proxy);
  if (took >= CLOSE_BOUND_MS + CLOSE_SLACK_MS)
    fail_msg("redlock_close took %llu ms, bound %u ms\nlog:\n%s", (unsigned long long)took,
             CLOSE_BOUND_MS, fx_log_text(fx, 0));
  assert_int_equal(missing, 0); /* the gauges are there */
  assert_true(max_requests <= MAX_QUEUED);
  assert_true(max_bytes <= MAX_QUEUED_BYTES);
  assert_true(max_bytes > MAX_QUEUED_BYTES / 2); /* the load did reach the bound */
  assert_int_equal(failed, 0);                   /* the other masters kept granting */
  assert_true(busy > 0);
  assert_true(queue_full > 0);
}

static void test_close_bounded(void **state) {
  fx_t *fx = *state;
  slow_t s;
  slow_open(fx, &s);
  enum { CYCLES = 300 };
  unsigned failed = 0;
  struct timespec tick;
  clock_gettime(CLOCK_MONOTONIC, &tick);
  for (unsigned cycle = 0; cycle < CYCLES; cycle++) {
    char resource[64];
    snprintf(resource, sizeof resource, "slow:close:%u", cycle);
    redlock_lock_t *lock = NULL;
    if (redlock_lock(s.client, resource, TTL_MS, &lock) != REDLOCK_OK ||
        redlock_unlock(s.client, lock) != REDLOCK_OK)
      failed++;
    next_tick(&tick);
  }
  long long queued = master_figure(s.client, s.slow_label, "queued_requests");
  printf("  %u cycles, %u failed; the slow master has %lld requests queued\n", CYCLES, failed,
         queued);
  uint64_t took = timed_close(fx, &s);
  fault_proxy_stop(s.proxy);
  if (took >= CLOSE_BOUND_MS + CLOSE_SLACK_MS)
    fail_msg("redlock_close took %llu ms, bound %u ms\nlog:\n%s", (unsigned long long)took,
             CLOSE_BOUND_MS, fx_log_text(fx, 0));
  assert_int_equal(failed, 0);
  unsigned said = fx_log_count(fx, 0, "left to expire at their TTL");
  if (said != 1)
    fail_msg("the close's give-up logged %u times, want once\nlog:\n%s", said, fx_log_text(fx, 0));
}

FX_MAIN("tests", &fx_profile_integration, FX_TEST(test_queue_bounded, 3),
        FX_TEST(test_close_bounded, 3))
