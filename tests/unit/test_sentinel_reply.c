/* test_sentinel_reply.c: unit tests for src/proto/sentinel_reply.c: what a
 * sentinel answers to GET-MASTER-ADDR-BY-NAME and SENTINEL MASTER, and the
 * +switch-master message.  Replies are built by hand (hiredis structs), no
 * server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "proto/sentinel_reply.h"

#define RUN_ID "0123456789abcdef0123456789abcdef01234567"

static redisReply text(int type, const char *s) {
  redisReply r;
  memset(&r, 0, sizeof r);
  r.type = type;
  r.str = (char *)s;
  r.len = strlen(s);
  return r;
}

/* An array of bulk strings (n at most 64), in *r, its elements in items. */
static void strings(redisReply *r, redisReply *items, redisReply **ptrs, const char *const *v,
                    size_t n) {
  memset(r, 0, sizeof *r);
  r->type = REDIS_REPLY_ARRAY;
  r->elements = n;
  r->element = ptrs;
  for (size_t i = 0; i < n; i++) {
    items[i] = text(REDIS_REPLY_STRING, v[i]);
    ptrs[i] = &items[i];
  }
}

static sentinel_addr_t parse_addr(const char *const *v, size_t n, char *host, int *port,
                                  char *why) {
  redisReply r, items[4], *ptrs[4];
  strings(&r, items, ptrs, v, n);
  return sentinel_parse_addr(&r, host, port, why, 128);
}

static void test_addr(void **state) {
  (void)state;
  char host[SENTINEL_HOST_LEN], why[128];
  int port = 0;
  const char *ok[] = {"127.0.0.1", "6380"};
  assert_int_equal(parse_addr(ok, 2, host, &port, why), SENTINEL_ADDR_KNOWN);
  assert_string_equal(host, "127.0.0.1");
  assert_int_equal(port, 6380);
  const char *v6[] = {"::1", "65535"};
  assert_int_equal(parse_addr(v6, 2, host, &port, why), SENTINEL_ADDR_KNOWN);
  assert_string_equal(host, "::1");
  assert_int_equal(port, 65535);
  /* a bracketed IPv6 address: the address is the part inside, shown
   * bracketed once */
  const char *v6b[] = {"[::1]", "26379"};
  char label[SENTINEL_HOST_LEN + 16];
  assert_int_equal(parse_addr(v6b, 2, host, &port, why), SENTINEL_ADDR_KNOWN);
  assert_string_equal(host, "::1");
  sentinel_host_port(label, sizeof label, host, port);
  assert_string_equal(label, "[::1]:26379");
  sentinel_host_port(label, sizeof label, "[::1]", port);
  assert_string_equal(label, "[::1]:26379");
  sentinel_host_port(label, sizeof label, "127.0.0.1", 6379);
  assert_string_equal(label, "127.0.0.1:6379");
  /* brackets around something that is not an IPv6 address are kept */
  const char *not_v6[] = {"[host]", "6379"};
  assert_int_equal(parse_addr(not_v6, 2, host, &port, why), SENTINEL_ADDR_KNOWN);
  assert_string_equal(host, "[host]");
  /* nil: this sentinel knows no such master */
  redisReply nil;
  memset(&nil, 0, sizeof nil);
  nil.type = REDIS_REPLY_NIL;
  assert_int_equal(sentinel_parse_addr(&nil, host, &port, why, sizeof why), SENTINEL_ADDR_UNKNOWN);
  /* an error says why */
  redisReply err = text(REDIS_REPLY_ERROR, "NOAUTH Authentication required.");
  assert_int_equal(sentinel_parse_addr(&err, host, &port, why, sizeof why), SENTINEL_ADDR_BAD);
  assert_string_equal(why, "NOAUTH Authentication required.");
  assert_int_equal(sentinel_parse_addr(NULL, host, &port, why, sizeof why), SENTINEL_ADDR_BAD);
  /* what cannot be an address */
  const char *bad_port[] = {"127.0.0.1", "0"};
  assert_int_equal(parse_addr(bad_port, 2, host, &port, why), SENTINEL_ADDR_BAD);
  assert_non_null(strstr(why, "unusable"));
  const char *big_port[] = {"127.0.0.1", "65536"};
  assert_int_equal(parse_addr(big_port, 2, host, &port, why), SENTINEL_ADDR_BAD);
  const char *word_port[] = {"127.0.0.1", "63a"};
  assert_int_equal(parse_addr(word_port, 2, host, &port, why), SENTINEL_ADDR_BAD);
  const char *space[] = {"127.0.0.1 x", "6379"};
  assert_int_equal(parse_addr(space, 2, host, &port, why), SENTINEL_ADDR_BAD);
  const char *empty[] = {"", "6379"};
  assert_int_equal(parse_addr(empty, 2, host, &port, why), SENTINEL_ADDR_BAD);
  const char *one[] = {"127.0.0.1"};
  assert_int_equal(parse_addr(one, 1, host, &port, why), SENTINEL_ADDR_BAD);
  const char *three[] = {"127.0.0.1", "1", "2"};
  assert_int_equal(parse_addr(three, 3, host, &port, why), SENTINEL_ADDR_BAD);
  char long_host[SENTINEL_HOST_LEN + 1];
  memset(long_host, 'a', SENTINEL_HOST_LEN);
  long_host[SENTINEL_HOST_LEN] = '\0';
  const char *too_long[] = {long_host, "6379"};
  assert_int_equal(parse_addr(too_long, 2, host, &port, why), SENTINEL_ADDR_BAD);
  /* an integer port is not what sentinels send */
  redisReply r, items[2], *ptrs[2];
  strings(&r, items, ptrs, ok, 2);
  items[1].type = REDIS_REPLY_INTEGER;
  assert_int_equal(sentinel_parse_addr(&r, host, &port, why, sizeof why), SENTINEL_ADDR_BAD);
}

/* SENTINEL MASTER of a sound master, with flags and role as given. */
static status_t parse_master(const char *flags, const char *role, const char *age,
                             const char *run_id, sentinel_master_t *m) {
  const char *v[] = {"name",
                     "mymaster",
                     "ip",
                     "127.0.0.1",
                     "port",
                     "6380",
                     "runid",
                     run_id,
                     "flags",
                     flags,
                     "link-pending-commands",
                     "0",
                     "role-reported",
                     role,
                     "role-reported-time",
                     age,
                     "config-epoch",
                     "1"};
  size_t n = sizeof v / sizeof v[0];
  redisReply r, items[32], *ptrs[32];
  strings(&r, items, ptrs, v, n);
  return sentinel_parse_master(&r, m);
}

static void test_master(void **state) {
  (void)state;
  sentinel_master_t m;
  assert_int_equal(parse_master("master", "master", "123456", RUN_ID, &m), ST_OK);
  assert_string_equal(m.ip, "127.0.0.1");
  assert_int_equal(m.port, 6380);
  assert_string_equal(m.run_id, RUN_ID);
  assert_true(m.settled);
  assert_int_equal(m.role_age_ms, 123456);
  /* not sound: down, failing over, disconnected, or a role that differs */
  const char *unsound[] = {"s_down,master", "master,o_down", "master,failover_in_progress",
                           "master,disconnected", "slave"};
  for (size_t i = 0; i < sizeof unsound / sizeof unsound[0]; i++) {
    assert_int_equal(parse_master(unsound[i], "master", "123456", RUN_ID, &m), ST_OK);
    assert_false(m.settled);
  }
  assert_int_equal(parse_master("master", "slave", "123456", RUN_ID, &m), ST_OK);
  assert_false(m.settled);
  /* a sentinel that has not read the master's INFO yet: no run_id */
  assert_int_equal(parse_master("master", "master", "5", "", &m), ST_OK);
  assert_string_equal(m.run_id, "");
  /* no usable age: not parsed */
  assert_int_equal(parse_master("master", "master", "-1", RUN_ID, &m), ST_EINVAL);
  assert_int_equal(parse_master("master", "master", "12x", RUN_ID, &m), ST_EINVAL);
  assert_int_equal(m.port, 0);
  /* an error (an ACL that refuses SENTINEL MASTER), an odd array */
  redisReply err = text(REDIS_REPLY_ERROR, "NOPERM");
  assert_int_equal(sentinel_parse_master(&err, &m), ST_EINVAL);
  assert_int_equal(sentinel_parse_master(NULL, &m), ST_EINVAL);
  const char *odd[] = {"ip", "127.0.0.1", "port"};
  redisReply r, items[4], *ptrs[4];
  strings(&r, items, ptrs, odd, 3);
  assert_int_equal(sentinel_parse_master(&r, &m), ST_EINVAL);
  /* fields missing */
  const char *partial[] = {"ip", "127.0.0.1", "port", "6380"};
  strings(&r, items, ptrs, partial, 4);
  assert_int_equal(sentinel_parse_master(&r, &m), ST_EINVAL);
  /* SENTINEL MASTER's ip, bracketed */
  const char *v6[] = {"ip",   "[::1]", "port",  "6380", "role-reported-time",
                      "1000", "flags", "master"};
  redisReply r6, items6[8], *ptrs6[8];
  strings(&r6, items6, ptrs6, v6, 8);
  assert_int_equal(sentinel_parse_master(&r6, &m), ST_OK);
  assert_string_equal(m.ip, "::1");
}

static void test_switch(void **state) {
  (void)state;
  char host[SENTINEL_HOST_LEN];
  int port = 0, ours = 0;
  const char msg[] = "mymaster 127.0.0.1 6379 127.0.0.1 6380";
  assert_int_equal(sentinel_parse_switch(msg, sizeof msg - 1, "mymaster", host, &port, &ours),
                   ST_OK);
  assert_int_equal(ours, 1);
  assert_string_equal(host, "127.0.0.1");
  assert_int_equal(port, 6380);
  /* another master of the same sentinels */
  assert_int_equal(sentinel_parse_switch(msg, sizeof msg - 1, "other", host, &port, &ours), ST_OK);
  assert_int_equal(ours, 0);
  assert_int_equal(sentinel_parse_switch(msg, sizeof msg - 1, "mymaste", host, &port, &ours),
                   ST_OK);
  assert_int_equal(ours, 0);
  /* malformed: too few words, too many, bad ports */
  const char *bad[] = {"mymaster 127.0.0.1 6379 127.0.0.1",
                       "mymaster 127.0.0.1 6379 127.0.0.1 6380 extra",
                       "mymaster 127.0.0.1 x 127.0.0.1 6380", "mymaster 127.0.0.1 6379 ::1 0", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(sentinel_parse_switch(bad[i], strlen(bad[i]), "mymaster", host, &port, &ours),
                     ST_EINVAL);
  /* a bracketed IPv6 address: unbracketed */
  const char v6[] = "mymaster ::1 6379 [::1] 6380";
  assert_int_equal(sentinel_parse_switch(v6, sizeof v6 - 1, "mymaster", host, &port, &ours), ST_OK);
  assert_int_equal(ours, 1);
  assert_string_equal(host, "::1");
  /* bounded by len */
  assert_int_equal(sentinel_parse_switch(msg, 10, "mymaster", host, &port, &ours), ST_EINVAL);
}

UNIT_MAIN(cmocka_unit_test(test_addr), cmocka_unit_test(test_master), cmocka_unit_test(test_switch))
