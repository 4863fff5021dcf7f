/* test_node.c: a master's connection state machine (node.c, node_handshake.c;
 * node_why.c's duplicate judgement) against the
 * in-process mock master: connect and handshake (AUTH, SELECT, SCRIPT LOAD,
 * INFO server), each handshake step refused or malformed, the order of the
 * reports (DOWN before the state changes), reconnect with backoff after a
 * refused connect, a close right after accept, a timeout and a lost
 * connection, TLS failures, name lookup, close in every state, and when two
 * nodes are one server.
 * Requests, hung detection, replays and the quarantine: test_node_requests.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "node_fixture.h"
#include "proto/scripts.h"
#include "redlock.h"
#include "util/options.h"
#include "util/tls.h"

/* Connects and checks the handshake the mock saw. */
static void test_up(void **state) {
  nf_t *f = *state;
  nf_start(f);
  assert_int_equal(f->node.state, NODE_CONNECTING);
  nf_wait_event(f, NODE_EV_STARTED, 1);
  assert_int_equal(f->node.state, NODE_READY);
  /* CONNECTING, UP, STARTED: in that order, nothing else */
  assert_int_equal(f->n_events, 3);
  assert_int_equal(f->events[0].ev, NODE_EV_CONNECTING);
  assert_int_equal(f->events[0].state, NODE_CONNECTING);
  assert_int_equal(f->events[1].ev, NODE_EV_UP);
  assert_int_equal(f->events[1].state, NODE_READY);
  assert_int_equal(f->events[2].ev, NODE_EV_STARTED);
  /* the handshake: every script loaded, INFO server and replication, no
   * AUTH or SELECT */
  assert_int_equal(mock_master_count(f->mock, "SCRIPT"), SCRIPT_COUNT);
  assert_int_equal(mock_master_count(f->mock, "INFO"), 2);
  assert_string_equal(mock_master_last(f->mock, "INFO")->argv[1], "replication");
  assert_int_equal(mock_master_count(f->mock, "AUTH"), 0);
  assert_int_equal(mock_master_count(f->mock, "SELECT"), 0);
  assert_string_equal(node_ip(&f->node), "127.0.0.1");
  assert_string_equal(f->node.down_why, "");
  assert_string_equal(f->node.server.run_id, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  assert_int_equal(f->node.server.quarantine.until_ns, 0);
  assert_true(nf_logged(f, "connected"));
  assert_int_equal(mock_master_accepted(f->mock), 1);
}

/* Credentials and a database: AUTH user pw, then SELECT db, then the rest. */
static void test_auth_and_select(void **state) {
  nf_t *f = *state;
  nf_address(f, "alice:s3cret", "/3", 0);
  nf_start(f);
  nf_wait_event(f, NODE_EV_UP, 1);
  const mock_cmd_t *auth = mock_master_command(f->mock, 0);
  assert_string_equal(auth->argv[0], "AUTH");
  assert_int_equal(auth->argc, 3);
  assert_string_equal(auth->argv[1], "alice");
  assert_string_equal(auth->argv[2], "s3cret");
  const mock_cmd_t *select = mock_master_command(f->mock, 1);
  assert_string_equal(select->argv[0], "SELECT");
  assert_string_equal(select->argv[1], "3");
}

/* A handshake step answered with `reply`: the attempt fails, DOWN (while
 * still CONNECTING) with `what`, then STARTED; the node is DOWN with a
 * reconnect timer; down_why says why. */
static void handshake_fails(nf_t *f, const char *command, const char *reply, const char *what,
                            const char *detail) {
  mock_master_on(f->mock, command, MOCK_REPLY, reply, 1);
  nf_start(f);
  nf_wait_event(f, NODE_EV_STARTED, 1);
  assert_int_equal(nf_count(f, NODE_EV_UP), 0);
  const nf_event_t *down = &f->events[nf_index(f, NODE_EV_DOWN, 1)];
  assert_int_equal(down->state, NODE_CONNECTING); /* reported before the state changed */
  assert_string_equal(down->what, what);
  if (detail != NULL)
    assert_non_null(strstr(down->detail, detail));
  assert_true(nf_index(f, NODE_EV_DOWN, 1) < nf_index(f, NODE_EV_STARTED, 1));
  /* when the first attempt was over: DOWN, no context, the backoff running */
  const nf_event_t *started = nf_last(f, NODE_EV_STARTED);
  assert_int_equal(started->state, NODE_DOWN);
  assert_false(started->has_context);
  assert_true(started->timer_active);
  assert_non_null(strstr(started->down_why, what));
  assert_int_equal(started->failures, 1);
  /* and it tries again, this time with success (the rule was used up) */
  nf_wait_event(f, NODE_EV_UP, 1);
  assert_int_equal(nf_count(f, NODE_EV_CONNECTING), 2);
  assert_int_equal(nf_count(f, NODE_EV_STARTED), 1); /* the first attempt only */
  assert_string_equal(f->node.down_why, "");
}

static void test_auth_refused(void **state) {
  nf_t *f = *state;
  nf_address(f, ":wrong", NULL, 0);
  handshake_fails(f, "AUTH", "-WRONGPASS invalid username-password pair\r\n", "AUTH refused",
                  "WRONGPASS");
  assert_int_equal(mock_master_last(f->mock, "AUTH")->argc, 2); /* no user: AUTH pw */
  assert_true(nf_logged(f, "AUTH refused"));
}

static void test_select_refused(void **state) {
  nf_t *f = *state;
  nf_address(f, NULL, "/7", 0);
  handshake_fails(f, "SELECT", "-ERR DB index is out of range\r\n", "SELECT refused",
                  "out of range");
}

static void test_script_load_refused(void **state) {
  handshake_fails(*state, "SCRIPT", "-NOPERM this user has no permissions\r\n",
                  "SCRIPT LOAD refused", "NOPERM");
}

static void test_script_load_wrong_sha(void **state) {
  handshake_fails(*state, "SCRIPT", "$40\r\n0000000000000000000000000000000000000000\r\n",
                  "SCRIPT LOAD returned an unexpected SHA1", NULL);
}

static void test_info_refused(void **state) {
  handshake_fails(*state, "INFO", "-ERR unknown command 'INFO'\r\n", "INFO server refused",
                  "unknown command");
}

static void test_info_malformed(void **state) {
  handshake_fails(*state, "INFO", "$19\r\n# Server\r\nfoo:bar\r\n\r\n",
                  "INFO server reply lacks run_id or uptime_in_seconds", NULL);
}

static void test_info_wrong_type(void **state) {
  handshake_fails(*state, "INFO", ":42\r\n", "INFO server reply lacks run_id or uptime_in_seconds",
                  NULL);
}

/* The master closes the connection mid-handshake (after accepting it). */
static void test_closed_during_handshake(void **state) {
  nf_t *f = *state;
  mock_master_on(f->mock, "INFO", MOCK_CLOSE_MID, NULL, 1);
  nf_start(f);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  const nf_event_t *down = &f->events[nf_index(f, NODE_EV_DOWN, 1)];
  assert_string_equal(down->what, "connection closed during handshake");
  assert_int_equal(down->state, NODE_CONNECTING);
  nf_wait_event(f, NODE_EV_UP, 1);
}

/* Every connection closed right after accept, several times: each attempt
 * fails, the backoff grows (failures counts them), and once the master
 * serves again the node comes up. */
static void test_close_on_accept_then_backoff(void **state) {
  nf_t *f = *state;
  mock_master_close_on_accept(f->mock, 1);
  nf_start(f);
  nf_wait_event(f, NODE_EV_DOWN, 3);
  assert_int_equal(nf_count(f, NODE_EV_STARTED), 1);
  assert_true(f->node.failures >= 3);
  assert_true(nf_logged(f, "reconnecting in"));
  assert_true(nf_logged(f, "(failure ")); /* repeated failures are logged at DEBUG */
  for (unsigned i = 1; i <= 3; i++) {
    const nf_event_t *down = &f->events[nf_index(f, NODE_EV_DOWN, i)];
    assert_int_equal(down->state, NODE_CONNECTING);
  }
  mock_master_close_on_accept(f->mock, 0);
  nf_wait_event(f, NODE_EV_UP, 1);
  assert_true(mock_master_accepted(f->mock) >= 4);
}

/* Nothing listens: the connect is refused (on_connect's error path). */
static void test_refused_then_listening(void **state) {
  nf_t *f = *state;
  mock_master_stop_listening(f->mock);
  nf_start(f);
  nf_wait_event(f, NODE_EV_DOWN, 2);
  const nf_event_t *down = nf_last(f, NODE_EV_DOWN);
  assert_string_equal(down->what, "cannot connect");
  assert_int_equal(down->state, NODE_CONNECTING);
  assert_int_equal(nf_count(f, NODE_EV_TLS_FAILURE), 0);
  assert_int_equal(mock_master_listen(f->mock), 0);
  nf_wait_event(f, NODE_EV_UP, 1);
}

/* The connect timeout bounds the handshake: INFO held, never answered. */
static void test_connect_timeout(void **state) {
  nf_t *f = *state;
  f->env.connect_timeout_ms = 50;
  mock_master_on(f->mock, "INFO", MOCK_HOLD, NULL, 0);
  nf_start(f);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  const nf_event_t *down = &f->events[nf_index(f, NODE_EV_DOWN, 1)];
  assert_string_equal(down->what, "connect timed out");
  assert_string_equal(down->detail, "no answer within 50 ms");
  assert_int_equal(down->state, NODE_CONNECTING);
  /* answered from now on, and in time: the late answers to abandoned
   * attempts change nothing (an attempt may have started meanwhile, with
   * the short timeout: on a loaded machine it may time out too) */
  mock_master_clear_rules(f->mock);
  mock_master_release(f->mock);
  f->env.connect_timeout_ms = NF_WAIT_MS;
  nf_wait_event(f, NODE_EV_UP, 1);
  for (unsigned i = 1; i <= nf_count(f, NODE_EV_DOWN); i++)
    assert_string_equal(f->events[nf_index(f, NODE_EV_DOWN, i)].what, "connect timed out");
}

/* A READY master's connection drops: DOWN is reported while still READY
 * (the ordering rule), then the node reconnects. */
static void test_connection_lost(void **state) {
  nf_t *f = *state;
  nf_start(f);
  nf_wait_event(f, NODE_EV_UP, 1);
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  const nf_event_t *down = nf_last(f, NODE_EV_DOWN);
  assert_string_equal(down->what, "connection lost");
  assert_int_equal(down->state, NODE_READY);
  assert_int_equal(f->node.failures, 1); /* up only moments: part of a flapping streak */
  nf_wait_event(f, NODE_EV_UP, 2);
  assert_int_equal(nf_count(f, NODE_EV_STARTED), 1);
  assert_int_equal(mock_master_count(f->mock, "INFO"), 4); /* two handshakes */
}

/* A connection that stayed up NODE_STABLE_MS resets the backoff when it drops. */
static void test_stable_connection_resets_backoff(void **state) {
  nf_t *f = *state;
  mock_master_close_on_accept(f->mock, 1);
  nf_start(f);
  nf_wait_event(f, NODE_EV_DOWN, 2);
  mock_master_close_on_accept(f->mock, 0);
  nf_wait_event(f, NODE_EV_UP, 1);
  assert_true(f->node.failures >= 2);
  f->node.link.up_ns -= (uint64_t)NODE_STABLE_MS * 1000000u; /* as if up that long */
  unsigned downs = nf_count(f, NODE_EV_DOWN);
  mock_master_drop_all(f->mock);
  nf_wait_event(f, NODE_EV_DOWN, downs + 1);
  assert_int_equal(f->node.failures, 1); /* reset, then this failure */
}

/* rediss:// without a TLS context: the attempt fails, and it is not a TLS
 * failure (nothing was set up). */
static void test_tls_without_context(void **state) {
  nf_t *f = *state;
  nf_address(f, NULL, NULL, 1);
  nf_start(f);
  nf_wait_event(f, NODE_EV_STARTED, 1);
  const nf_event_t *down = nf_last(f, NODE_EV_DOWN);
  assert_string_equal(down->what, "cannot connect");
  assert_string_equal(down->detail, "TLS is not set up for this client");
  assert_int_equal(nf_count(f, NODE_EV_TLS_FAILURE), 0);
}

/* rediss:// to the mock, which speaks no TLS: the handshake fails (the mock
 * drops a connection whose first bytes are not RESP), reported as
 * TLS_FAILURE before the DOWN of the same attempt. */
static void test_tls_failure(void **state) {
  nf_t *f = *state;
  struct redlock_options opts;
  options_set_defaults(&opts);
  tls_client_t *tls = NULL;
  char why[256];
  if (tls_client_new(&tls, &opts, why, sizeof why) != 0) {
    options_clear(&opts);
    print_message("skipped: %s\n", why);
    skip();
  }
  options_clear(&opts);
  f->env.tls = tls;
  nf_address(f, NULL, NULL, 1);
  nf_start(f);
  nf_wait_event(f, NODE_EV_STARTED, 1);
  int tls_at = nf_index(f, NODE_EV_TLS_FAILURE, 1);
  int down_at = nf_index(f, NODE_EV_DOWN, 1);
  assert_true(tls_at >= 0);
  assert_true(tls_at < down_at);
  assert_int_equal(f->events[down_at].state, NODE_CONNECTING);
  assert_int_equal(nf_count(f, NODE_EV_UP), 0);
  nf_shutdown(f);
  tls_client_free(tls);
}

/* Addresses the master by a host name (looked up off the loop before each
 * attempt) and starts the node. */
static void start_at_localhost(nf_t *f) {
  char uri[64], err[128];
  snprintf(uri, sizeof uri, "redis://localhost:%d", mock_master_port(f->mock));
  node_addr_clear(&f->addr);
  assert_int_equal(uri_parse(uri, &f->addr, err, sizeof err), 0);
  nf_start(f);
}

/* A host name is looked up (off the loop) before each attempt. */
static void test_host_name(void **state) {
  nf_t *f = *state;
  start_at_localhost(f);
  assert_non_null(f->node.link.resolving);
  nf_wait_event(f, NODE_EV_STARTED, 1);
  assert_null(f->node.link.resolving);
  /* localhost may be ::1 first, where the mock does not listen: either way
   * the lookup ran and gave the address connected to */
  if (strcmp(node_ip(&f->node), "127.0.0.1") == 0)
    assert_int_equal(nf_count(f, NODE_EV_UP), 1);
  else if (node_ip(&f->node)[0] == '\0')
    assert_string_equal(nf_last(f, NODE_EV_DOWN)->what, "cannot resolve its host name");
}

/* ---- close in every state ---------------------------------------------------------- */

/* Closed while the name lookup runs: the lookup is abandoned. */
static void test_close_while_resolving(void **state) {
  nf_t *f = *state;
  start_at_localhost(f);
  assert_non_null(f->node.link.resolving);
  nf_shutdown(f);
  assert_null(f->node.link.resolving);
  assert_int_equal(f->node.state, NODE_CLOSED);
  assert_int_equal(nf_count(f, NODE_EV_DOWN), 0);
  assert_int_equal(nf_count(f, NODE_EV_CLOSED), 1);
}

/* Closed mid-handshake: no DOWN, no STARTED, one CLOSED. */
static void test_close_while_connecting(void **state) {
  nf_t *f = *state;
  mock_master_on(f->mock, "INFO", MOCK_HOLD, NULL, 0);
  nf_start(f);
  nf_wait_received(f, "INFO", 1);
  assert_int_equal(f->node.state, NODE_CONNECTING);
  nf_shutdown(f);
  assert_int_equal(f->node.state, NODE_CLOSED);
  assert_int_equal(nf_count(f, NODE_EV_DOWN), 0);
  assert_int_equal(nf_count(f, NODE_EV_UP), 0);
  assert_int_equal(nf_count(f, NODE_EV_CLOSED), 1);
  node_shutdown(&f->node); /* a second close is a no-op */
  uv_run(&f->loop, UV_RUN_NOWAIT);
  assert_int_equal(nf_count(f, NODE_EV_CLOSED), 1);
}

/* Closed while READY with a request out: it gets NULL, no DOWN. */
static void test_close_while_ready(void **state) {
  nf_t *f = *state;
  nf_start(f);
  nf_wait_event(f, NODE_EV_UP, 1);
  mock_master_on(f->mock, "SET", MOCK_HOLD, NULL, 0);
  nf_req_t r;
  assert_int_equal(nf_send(f, &r, "SET k v NX PX 1000", 0), 0);
  nf_wait_received(f, "SET", 1);
  nf_shutdown(f);
  assert_true(r.done);
  assert_false(r.got_reply);
  assert_int_equal(nf_count(f, NODE_EV_DOWN), 0);
  assert_int_equal(nf_last(f, NODE_EV_CLOSED)->state, NODE_CLOSED);
  /* closed: nothing is sent, kept or reconnected any more */
  nf_req_t late;
  assert_int_equal(nf_send(f, &late, "SET k v", 0), ST_DOWN);
  node_defer_release(&f->node, "x", 1);
  assert_int_equal(f->node.replay.n_missed_releases, 0);
}

/* Closed while DOWN, its reconnect timer running. */
static void test_close_while_down(void **state) {
  nf_t *f = *state;
  mock_master_stop_listening(f->mock);
  nf_start(f);
  nf_wait_event(f, NODE_EV_DOWN, 1);
  nf_wait_state(f, NODE_DOWN); /* between attempts (one may be under way on a loaded machine) */
  assert_true(tb_timer_active(&f->node.link.timer));
  unsigned connecting = nf_count(f, NODE_EV_CONNECTING);
  nf_shutdown(f);
  assert_int_equal(nf_count(f, NODE_EV_CONNECTING), connecting);
  assert_int_equal(nf_count(f, NODE_EV_CLOSED), 1);
}

/* Closed before it was ever started (the client failed to start). */
static void test_close_unstarted(void **state) {
  nf_t *f = *state;
  assert_int_equal(node_init(&f->node, &f->env, 0, &f->addr), 0);
  f->started = 1;
  /* (its link was never attached: shutdown makes the timer it closes) */
  nf_shutdown(f);
  assert_int_equal(f->n_events, 1);
  assert_int_equal(f->events[0].ev, NODE_EV_CLOSED);
}

/* A READY node at uri, connected to ip (TCP), with run_id. */
static void same_server_node(node_t *node, const char *uri, const char *ip, char run_id_char) {
  static const node_env_t env = {0};
  node_addr_t addr;
  assert_int_equal(uri_parse(uri, &addr, NULL, 0), 0);
  assert_int_equal(node_init(node, &env, 0, &addr), 0);
  node_addr_clear(&addr);
  node->state = NODE_READY;
  if (ip != NULL) {
    snprintf(node->link.ip, sizeof node->link.ip, "%s", ip);
    assert_int_equal(resolve_key(ip, 0, &node->link.ip_key), ST_OK);
    node->link.has_ip_key = 1;
  }
  memset(node->server.run_id, run_id_char, INFO_RUN_ID_LEN);
  node->server.run_id[INFO_RUN_ID_LEN] = '\0';
}

/* One server behind two masters of a client: the same resolved address and
 * port, the same socket path, or the same run_id; only while both are
 * READY. */
static void test_same_server(void **state) {
  (void)state;
  node_t a, b;
  char how[96];
  same_server_node(&a, "redis://127.0.0.1:7450", "127.0.0.1", 'a');
  same_server_node(&b, "redis://localhost:7450", "::ffff:127.0.0.1", 'b');
  assert_true(node_same_server(&a, &b, how, sizeof how));
  assert_string_equal(how, "the same address 127.0.0.1:7450");
  assert_true(node_same_server(&b, &a, NULL, 0));
  b.state = NODE_CONNECTING; /* not connected: nothing known */
  assert_false(node_same_server(&a, &b, how, sizeof how));
  node_free(&b);

  same_server_node(&b, "redis://127.0.0.1:7451", "127.0.0.1", 'b'); /* another port */
  assert_false(node_same_server(&a, &b, how, sizeof how));
  memcpy(b.server.run_id, a.server.run_id, sizeof b.server.run_id); /* ... but the same process */
  assert_true(node_same_server(&a, &b, how, sizeof how));
  assert_string_equal(how, "the same run_id aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  node_free(&b);

  same_server_node(&b, "redis://[::1]:7450", "::1", 'b');
  assert_false(node_same_server(&a, &b, how, sizeof how));
  node_free(&b);
  same_server_node(&b, "unix:///tmp/r.sock", NULL, 'a'); /* a's run_id */
  assert_true(node_same_server(&a, &b, how, sizeof how));
  node_free(&a);
  same_server_node(&a, "unix:///tmp/r.sock", NULL, 'c');
  assert_true(node_same_server(&a, &b, how, sizeof how));
  assert_string_equal(how, "the same socket /tmp/r.sock");
  node_free(&a);
  node_free(&b);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, nf_setup, nf_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_up),
      T(test_auth_and_select),
      T(test_auth_refused),
      T(test_select_refused),
      T(test_script_load_refused),
      T(test_script_load_wrong_sha),
      T(test_info_refused),
      T(test_info_malformed),
      T(test_info_wrong_type),
      T(test_closed_during_handshake),
      T(test_close_on_accept_then_backoff),
      T(test_refused_then_listening),
      T(test_connect_timeout),
      T(test_connection_lost),
      T(test_stable_connection_resets_backoff),
      T(test_tls_without_context),
      T(test_tls_failure),
      T(test_host_name),
      T(test_close_while_resolving),
      T(test_close_while_connecting),
      T(test_close_while_ready),
      T(test_close_while_down),
      T(test_close_unstarted),
      cmocka_unit_test(test_same_server),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
