/* test_quarantine.c: unit tests for src/voters/quarantine.c (when a master's votes
 * must not count) and info_parse_replication (what it reads from INFO
 * replication).  Pure: facts in, a judgement out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "proto/info.h"
#include "voters/quarantine.h"

#define S 1000000000ull
#define MAX_TTL_MS 60000u
#define MAX_NS (60 * S)
#define NOW (1000 * S)
#define RUN_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define RUN_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define REPL_1 "1111111111111111111111111111111111111111"
#define REPL_2 "2222222222222222222222222222222222222222"

static info_server_t server(const char *run_id, int64_t uptime_s) {
  info_server_t s;
  memset(&s, 0, sizeof s);
  strcpy(s.run_id, run_id);
  s.uptime_s = uptime_s;
  return s;
}

static info_replication_t repl(const char *replid, const char *replid2, long replicas) {
  info_replication_t r;
  memset(&r, 0, sizeof r);
  r.is_master = 1;
  strcpy(r.role, "master");
  strcpy(r.replid, replid);
  strcpy(r.replid2, replid2);
  r.connected_replicas = replicas;
  return r;
}

static const ack_spec_t no_ack = {ACK_NONE, 0, 0, 0};

static quarantine_t judge(const quarantine_past_t *past, info_server_t s, info_replication_t r,
                          const ack_spec_t *ack) {
  return quarantine_judge(past, &s, &r, NULL, NOW, MAX_TTL_MS, ack);
}

static quarantine_past_t past_of(const char *run_id, const char *replid, uint64_t lost_ns) {
  quarantine_past_t p;
  memset(&p, 0, sizeof p);
  info_server_t s = server(run_id, 100);
  info_replication_t r = repl(replid, "", 0);
  quarantine_remember(&p, &s, &r);
  p.lost_ns = lost_ns;
  return p;
}

static void test_restart(void **state) {
  (void)state;
  quarantine_past_t none;
  memset(&none, 0, sizeof none);
  /* old enough: nothing */
  quarantine_t q = judge(&none, server(RUN_A, 61), repl(REPL_1, "", 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_NONE);
  assert_int_equal(q.until_ns, 0);
  /* 10 s old: taken as 9 s, quarantined 51 s more */
  q = judge(&none, server(RUN_A, 10), repl(REPL_1, "", 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_RESTART);
  assert_int_equal(q.until_ns, NOW + MAX_NS - 9 * S);
  /* 0 s: the whole max TTL */
  q = judge(&none, server(RUN_A, 0), repl(REPL_1, "", 0), &no_ack);
  assert_int_equal(q.until_ns, NOW + MAX_NS);
  /* waitaof=1,R: every counted write is in the AOF: no restart quarantine */
  ack_spec_t aof = {ACK_WAITAOF, 1, 0, 0};
  q = judge(&none, server(RUN_A, 0), repl(REPL_1, "", 0), &aof);
  assert_int_equal(q.kind, QUARANTINE_NONE);
  /* waitaof=0,1 proves nothing about the master's own disk */
  ack_spec_t replicas_only = {ACK_WAITAOF, 0, 1, 0};
  q = judge(&none, server(RUN_A, 0), repl(REPL_1, "", 1), &replicas_only);
  assert_int_equal(q.kind, QUARANTINE_RESTART);
}

static void test_first_sight_promoted(void **state) {
  (void)state;
  quarantine_past_t none;
  memset(&none, 0, sizeof none);
  quarantine_t q = judge(&none, server(RUN_A, 3600), repl(REPL_2, REPL_1, 1), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  assert_int_equal(q.until_ns, NOW + MAX_NS);
  /* wait=1 with one replica: covered */
  ack_spec_t wait1 = {ACK_WAIT, 0, 1, 0};
  q = judge(&none, server(RUN_A, 3600), repl(REPL_2, REPL_1, 1), &wait1);
  assert_int_equal(q.kind, QUARANTINE_NONE);
  /* wait=1 with two replicas: not covered */
  q = judge(&none, server(RUN_A, 3600), repl(REPL_2, REPL_1, 2), &wait1);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  /* replica count unknown: not covered */
  q = judge(&none, server(RUN_A, 3600), repl(REPL_2, REPL_1, -1), &wait1);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  /* young and promoted: whichever ends last (the failover's) */
  q = judge(&none, server(RUN_A, 5), repl(REPL_2, REPL_1, 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  assert_int_equal(q.until_ns, NOW + MAX_NS);
}

static void test_same_server(void **state) {
  (void)state;
  quarantine_past_t p = past_of(RUN_A, REPL_1, NOW - S);
  quarantine_t q = judge(&p, server(RUN_A, 3600), repl(REPL_1, "", 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_NONE);
  /* its replication id changed: failover */
  q = judge(&p, server(RUN_A, 3600), repl(REPL_2, REPL_1, 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  assert_int_equal(q.until_ns, NOW + MAX_NS);
  ack_spec_t wait2 = {ACK_WAIT, 0, 2, 0};
  q = judge(&p, server(RUN_A, 3600), repl(REPL_2, REPL_1, 2), &wait2);
  assert_int_equal(q.kind, QUARANTINE_NONE);
  /* no replication ids (an old server): nothing to compare */
  q = judge(&p, server(RUN_A, 3600), repl("", "", 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_NONE);
}

static void test_new_run_id(void **state) {
  (void)state;
  /* lost 30 s ago; the new one is 20 s old: a restart */
  quarantine_past_t p = past_of(RUN_A, REPL_1, NOW - 30 * S);
  quarantine_t q = judge(&p, server(RUN_B, 20), repl(REPL_2, "", 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_RESTART);
  assert_int_equal(q.until_ns, NOW + MAX_NS - 19 * S);
  /* 31 s (taken as 30: may have started at the loss): a restart, whose
   * quarantine still ends max TTL after the loss; 32 s: up before the loss,
   * another server */
  q = judge(&p, server(RUN_B, 31), repl(REPL_2, "", 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_RESTART);
  assert_int_equal(q.until_ns, (NOW - 30 * S) + MAX_NS);
  q = judge(&p, server(RUN_B, 32), repl(REPL_2, "", 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_MOVED);
  assert_int_equal(q.until_ns, NOW + MAX_NS);
  /* up an hour: another server */
  q = judge(&p, server(RUN_B, 3600), repl(REPL_2, "", 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_MOVED);
  /* ... even with acks, unless it is a promoted replica of the old one */
  ack_spec_t wait1 = {ACK_WAIT, 0, 1, 0};
  q = judge(&p, server(RUN_B, 3600), repl(REPL_2, "", 1), &wait1);
  assert_int_equal(q.kind, QUARANTINE_MOVED);
  q = judge(&p, server(RUN_B, 3600), repl(REPL_2, REPL_1, 0), &wait1);
  assert_int_equal(q.kind, QUARANTINE_NONE);
  q = judge(&p, server(RUN_B, 3600), repl(REPL_2, REPL_1, 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_MOVED);
  /* a restart of a server promoted since it started: failover too */
  q = judge(&p, server(RUN_B, 20), repl(REPL_2, REPL_1, 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  /* the loss time unknown: another server */
  p.lost_ns = 0;
  q = judge(&p, server(RUN_B, 1), repl(REPL_2, "", 0), &no_ack);
  assert_int_equal(q.kind, QUARANTINE_MOVED);
}

/* A hint (a Sentinel voter's: the sentinels say since when this server is
 * a master) dates a failover or a move; it never shortens a restart's
 * quarantine, and it is ignored for another server or when it claims a
 * role older than the process. */
static void test_hint(void **state) {
  (void)state;
  quarantine_past_t none;
  memset(&none, 0, sizeof none);
  info_server_t s = server(RUN_A, 3600);
  info_replication_t r = repl(REPL_2, REPL_1, 0);
  quarantine_hint_t hint = {RUN_A, NOW - 20 * S};
  /* master for 20 s: 40 s left */
  quarantine_t q = quarantine_judge(&none, &s, &r, &hint, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  assert_int_equal(q.until_ns, NOW - 20 * S + MAX_NS);
  /* master for longer than max TTL: nothing */
  hint.master_since_ns = NOW - MAX_NS - S;
  q = quarantine_judge(&none, &s, &r, &hint, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(q.kind, QUARANTINE_NONE);
  assert_int_equal(q.until_ns, 0);
  /* about another server: max TTL from now */
  quarantine_hint_t other = {RUN_B, NOW - MAX_NS - S};
  q = quarantine_judge(&none, &s, &r, &other, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(q.until_ns, NOW + MAX_NS);
  /* a hint that names no run_id (the sentinels had not read it yet) */
  quarantine_hint_t unnamed = {"", NOW - 20 * S};
  q = quarantine_judge(&none, &s, &r, &unnamed, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(q.until_ns, NOW - 20 * S + MAX_NS);
  /* a role older than the process (up 10 s, "master for 100 s"): ignored */
  info_server_t young = server(RUN_A, 10);
  hint.master_since_ns = NOW - 100 * S;
  q = quarantine_judge(&none, &young, &r, &hint, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  assert_int_equal(q.until_ns, NOW + MAX_NS);
  /* a young server, master since its start: its restart quarantine stays */
  hint.master_since_ns = NOW - 9 * S;
  q = quarantine_judge(&none, &young, &r, &hint, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(q.until_ns, NOW + MAX_NS - 9 * S);
  /* a move (the voter followed the sentinels to another server) is dated too */
  quarantine_past_t p = past_of(RUN_B, REPL_1, 0);
  hint.master_since_ns = NOW - 30 * S;
  q = quarantine_judge(&p, &s, &r, &hint, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(q.kind, QUARANTINE_MOVED);
  assert_int_equal(q.until_ns, NOW - 30 * S + MAX_NS);
  /* a replication id that changed under the same run_id: seen here first,
   * the hint may predate it */
  quarantine_past_t same = past_of(RUN_A, REPL_1, NOW - S);
  hint.master_since_ns = NOW - MAX_NS - S;
  q = quarantine_judge(&same, &s, &r, &hint, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  assert_int_equal(q.until_ns, NOW + MAX_NS);
  /* a hint from the future (a clock read after ours): now */
  hint.master_since_ns = NOW + S;
  q = quarantine_judge(&none, &s, &r, &hint, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(q.until_ns, NOW + MAX_NS);
}

static void test_names(void **state) {
  (void)state;
  assert_string_equal(quarantine_name(QUARANTINE_RESTART), "restart quarantine");
  assert_string_equal(quarantine_name(QUARANTINE_FAILOVER), "failover quarantine");
  assert_non_null(strstr(quarantine_name(QUARANTINE_MOVED), "another server"));
  assert_string_equal(quarantine_name(QUARANTINE_NONE), "");
}

static void test_parse_replication(void **state) {
  (void)state;
  static const char master[] = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n"
                               "slave0:ip=127.0.0.1,port=1,state=online\r\n"
                               "master_replid:" REPL_1 "\r\nmaster_replid2:"
                               "0000000000000000000000000000000000000000\r\n"
                               "master_repl_offset:100\r\nsecond_repl_offset:-1\r\n";
  info_replication_t r;
  assert_int_equal(info_parse_replication(master, sizeof master - 1, &r), ST_OK);
  assert_true(r.is_master);
  assert_string_equal(r.role, "master");
  assert_int_equal(r.connected_replicas, 2);
  assert_string_equal(r.replid, REPL_1);
  assert_string_equal(r.replid2, ""); /* all zeros: none */
  static const char promoted[] = "role:master\nmaster_replid:" REPL_2 "\nmaster_replid2:" REPL_1;
  assert_int_equal(info_parse_replication(promoted, sizeof promoted - 1, &r), ST_OK);
  assert_string_equal(r.replid2, REPL_1);
  assert_int_equal(r.connected_replicas, -1);
  static const char replica[] = "role:slave\r\nmaster_host:127.0.0.1\r\n";
  assert_int_equal(info_parse_replication(replica, sizeof replica - 1, &r), ST_OK);
  assert_false(r.is_master);
  assert_string_equal(r.role, "slave");
  static const char bad[] = "master_replid:xyz\r\nconnected_slaves:x\r\n";
  assert_int_equal(info_parse_replication(bad, sizeof bad - 1, &r), ST_EINVAL);
  assert_string_equal(r.replid, "");
  assert_int_equal(r.connected_replicas, -1);
  /* bounded by len, not by a NUL */
  assert_int_equal(info_parse_replication("role:master", 4, &r), ST_EINVAL);
}

/* The state a node keeps: a reconnect to the same server inside a
 * failover's quarantine keeps its end; a restart's is judged anew. */
static void test_state_handshake(void **state) {
  (void)state;
  quarantine_state_t qs = {0};
  info_server_t s = server(RUN_A, 1000);
  info_replication_t r = repl(REPL_1, REPL_2, 0);
  quarantine_verdict_t v = quarantine_at_handshake(&qs, 1, &s, &r, NULL, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(v.q.kind, QUARANTINE_FAILOVER);
  assert_int_equal(v.said, 0);
  assert_int_equal(v.new_run_id, 0);
  assert_int_equal(qs.until_ns, NOW + MAX_NS);
  assert_true(quarantine_active(&qs, NOW));
  assert_int_equal(quarantine_left_ms(&qs, NOW + 1), MAX_TTL_MS);
  assert_int_equal(quarantine_left_ms(&qs, NOW + MAX_NS), 0);

  /* Later, the same server again: still the first sighting's end. */
  v = quarantine_at_handshake(&qs, 1, &s, &r, NULL, NOW + 10 * S, MAX_TTL_MS, &no_ack);
  assert_int_equal(v.said, 1);
  assert_int_equal(v.q.kind, QUARANTINE_FAILOVER);
  assert_int_equal(qs.until_ns, NOW + MAX_NS);

  /* Another run_id, up long before the loss: another server. */
  quarantine_lost(&qs, NOW + 20 * S);
  info_server_t b = server(RUN_B, 1000);
  v = quarantine_at_handshake(&qs, 1, &b, &r, NULL, NOW + 30 * S, MAX_TTL_MS, &no_ack);
  assert_int_equal(v.new_run_id, 1);
  assert_int_equal(v.said, 0);
  assert_int_equal(qs.kind, QUARANTINE_MOVED);
  assert_int_equal(qs.past.lost_ns, 0);

  /* Quarantine off: none starts, the server is remembered all the same. */
  memset(&qs, 0, sizeof qs);
  v = quarantine_at_handshake(&qs, 0, &s, &r, NULL, NOW, MAX_TTL_MS, &no_ack);
  assert_int_equal(v.q.kind, QUARANTINE_NONE);
  assert_int_equal(qs.until_ns, 0);
  assert_true(qs.past.seen);
  assert_false(quarantine_active(&qs, NOW));
}

/* The role check's news: a replication id that changed on a live
 * connection is remembered and makes the quarantine longer. */
static void test_state_replid(void **state) {
  (void)state;
  quarantine_state_t qs = {0};
  info_server_t s = server(RUN_A, 1000);
  info_replication_t r1 = repl(REPL_1, "", 0), r2 = repl(REPL_2, REPL_1, 0);
  (void)quarantine_at_handshake(&qs, 1, &s, &r1, NULL, NOW, MAX_TTL_MS, &no_ack);
  assert_true(quarantine_same_history(&qs, &r1));
  assert_false(quarantine_same_history(&qs, &r2));
  quarantine_t q;
  assert_int_equal(quarantine_replid_changed(&qs, &r2, NOW, MAX_TTL_MS, &no_ack, &q), 1);
  assert_int_equal(q.kind, QUARANTINE_FAILOVER);
  assert_int_equal(qs.until_ns, NOW + MAX_NS);
  assert_true(quarantine_same_history(&qs, &r2));
  /* One that ends sooner leaves the one in force. */
  assert_int_equal(quarantine_replid_changed(&qs, &r1, NOW - S, MAX_TTL_MS, &no_ack, &q), 0);
  assert_int_equal(qs.until_ns, NOW + MAX_NS);
  /* Acks that cover every replica waive it. */
  const ack_spec_t wait1 = {ACK_WAIT, 0, 1, 0};
  info_replication_t r3 = repl(REPL_1, REPL_2, 1);
  assert_int_equal(quarantine_replid_changed(&qs, &r3, NOW + S, MAX_TTL_MS, &wait1, &q), 0);
  assert_int_equal(q.kind, QUARANTINE_NONE);
}

/* The hint, and how voters name the quarantine in force. */
static void test_state_hint_and_why(void **state) {
  (void)state;
  quarantine_state_t qs = {0};
  quarantine_set_hint(&qs, RUN_A, NOW - S);
  assert_string_equal(qs.hint.run_id, RUN_A);
  assert_int_equal(qs.hint.master_since_ns, NOW - S);
  quarantine_set_hint(&qs, "short", NOW);
  assert_string_equal(qs.hint.run_id, "");
  quarantine_set_hint(&qs, NULL, 0);
  assert_int_equal(qs.hint.master_since_ns, 0);

  char buf[80];
  quarantine_why(&qs, QUARANTINE_VIEW_AS_IS, NOW, buf, sizeof buf);
  assert_string_equal(buf, "");
  assert_string_equal(quarantine_state_name(&qs, QUARANTINE_VIEW_AS_IS), "");
  qs.kind = QUARANTINE_MOVED;
  qs.until_ns = NOW + 1500000u;
  quarantine_why(&qs, QUARANTINE_VIEW_AS_IS, NOW, buf, sizeof buf);
  assert_string_equal(buf, "quarantine (another server at this address): 2 ms left");
  quarantine_why(&qs, QUARANTINE_VIEW_MOVE_IS_FAILOVER, NOW, buf, sizeof buf);
  assert_string_equal(buf, "failover quarantine: 2 ms left");
  assert_string_equal(quarantine_state_name(&qs, QUARANTINE_VIEW_MOVE_IS_FAILOVER),
                      "failover quarantine");
  qs.kind = QUARANTINE_RESTART;
  assert_string_equal(quarantine_state_name(&qs, QUARANTINE_VIEW_MOVE_IS_FAILOVER),
                      "restart quarantine");
  quarantine_why(&qs, QUARANTINE_VIEW_AS_IS, NOW + 2 * S, buf, sizeof buf);
  assert_string_equal(buf, "");
}

UNIT_MAIN(cmocka_unit_test(test_restart), cmocka_unit_test(test_first_sight_promoted),
          cmocka_unit_test(test_same_server), cmocka_unit_test(test_new_run_id),
          cmocka_unit_test(test_hint), cmocka_unit_test(test_names),
          cmocka_unit_test(test_parse_replication), cmocka_unit_test(test_state_handshake),
          cmocka_unit_test(test_state_replid), cmocka_unit_test(test_state_hint_and_why))
