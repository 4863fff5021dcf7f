/* mock_master.h: an in-process, scriptable Redis master for the unit tests
 * of node.c and notify.c (tests/unit/test_node*.c, test_notify.c), in the
 * manner of c-ares' resolver tests against a mock DNS server.
 *
 * It is a small RESP server on 127.0.0.1 (a free port) that runs on the
 * test's own libuv loop, the loop the node or notifier under test runs on:
 * it acts only while the test runs that loop, in the same thread, so a test
 * sees the client's and the server's steps interleaved deterministically,
 * with no lock and no thread for ASan/TSan to reason about, and "hold this
 * reply until I say so" is just a queue.  (A server thread would make every
 * hold and every "what did it receive" a race to synchronise.)
 *
 * By default it answers what node.c and notify.c send like a real master:
 * PING, AUTH, SELECT, CLIENT, SCRIPT LOAD (the SHA1 of our embedded script
 * whose body it is), INFO (server: a run_id and an uptime the test sets;
 * replication: a role, replication ids and a replica count),
 * SUBSCRIBE / UNSUBSCRIBE (tracked per connection, for mock_master_publish),
 * SSUBSCRIBE / SUNSUBSCRIBE (their confirmations, on the same set),
 * EVALSHA / EVAL (:1) and anything else (+OK).  Rules change that per
 * command name; every command received is recorded for the test to check.
 * A request that is not valid RESP (say, a TLS ClientHello) closes the
 * connection, as Redis does. */
#ifndef REDLOCK_TEST_MOCK_MASTER_H
#define REDLOCK_TEST_MOCK_MASTER_H

#include <stddef.h>
#include <uv.h>

typedef struct mock_master mock_master_t;

/* What a rule does with a command it matches. */
typedef enum {
  MOCK_REPLY = 1, /* write the rule's reply (raw RESP) instead of the default */
  MOCK_HOLD,      /* answer (the rule's reply, else the default) only at mock_master_release;
                   * later replies on that connection queue behind it, in order */
  MOCK_CLOSE,     /* close the connection instead of answering */
  MOCK_CLOSE_MID, /* write the first half of the reply, then close the connection */
  MOCK_DELAY,     /* answer (the rule's reply, else the default) once the master's delay
                   * (mock_master_set_delay) is over: a slow server; later replies on that
                   * connection queue behind it, and go with it */
} mock_action_t;

/* One command received. */
typedef struct {
  unsigned conn; /* which connection (1 = the first accepted) */
  int argc;
  char **argv; /* NUL-terminated copies */
  size_t *lens;
} mock_cmd_t;

/* Listens on 127.0.0.1 at a free port, on loop.  NULL on failure. */
mock_master_t *mock_master_start(uv_loop_t *loop);
int mock_master_port(const mock_master_t *m);
/* The URI of this master ("redis://127.0.0.1:PORT" + suffix, e.g. "/3"). */
const char *mock_master_uri(mock_master_t *m, const char *userinfo, const char *suffix);

/* INFO server's run_id (40 characters; default "a" * 40) and uptime_in_seconds
 * (default 3600). */
void mock_master_set_run_id(mock_master_t *m, const char *run_id);
void mock_master_set_uptime(mock_master_t *m, long long seconds);
/* INFO replication's role (default "master"), master_replid (default "b" *
 * 40), master_replid2 (default "0" * 40: none) and connected_slaves (0). */
void mock_master_set_replication(mock_master_t *m, const char *role, const char *replid,
                                 const char *replid2, long replicas);

/* Adds a rule for the command named `command` (its first word, any case;
 * "*" for every command): what to do the next `times` times (0: always).
 * reply: raw RESP ("-ERR no\r\n"), or NULL for the default answer.  The
 * first rule that matches and has uses left applies. */
void mock_master_on(mock_master_t *m, const char *command, mock_action_t action, const char *reply,
                    unsigned times);
void mock_master_clear_rules(mock_master_t *m);

/* The wait of MOCK_DELAY replies (default 50 ms), from the first reply
 * delayed while none was; then every reply held so far is written. */
void mock_master_set_delay(mock_master_t *m, unsigned ms);

/* Closes every connection from now on right after accepting it (1), or
 * serves them again (0). */
void mock_master_close_on_accept(mock_master_t *m, int on);
/* Stops listening: connects are refused until mock_master_listen. */
void mock_master_stop_listening(mock_master_t *m);
/* Listens again, on the same port; 0 or a libuv error. */
int mock_master_listen(mock_master_t *m);
/* Closes every open connection (a master restarting, a network cut). */
void mock_master_drop_all(mock_master_t *m);

/* Writes the replies held so far (MOCK_HOLD) on every connection, in order.
 * Returns how many. */
unsigned mock_master_release(mock_master_t *m);
/* Replies held, not yet written. */
unsigned mock_master_held(const mock_master_t *m);
/* Sends the pub/sub message (channel, payload) to every connection
 * subscribed to channel; returns how many. */
unsigned mock_master_publish(mock_master_t *m, const char *channel, const char *payload);
/* The same as SPUBLISH's shard message ("smessage"), to the connections
 * that subscribed the channel (SUBSCRIBE or SSUBSCRIBE). */
unsigned mock_master_spublish(mock_master_t *m, const char *channel, const char *payload);
/* Writes raw bytes to every open connection (an unsolicited push). */
void mock_master_send_raw(mock_master_t *m, const char *raw);

/* What it received. */
size_t mock_master_n_commands(const mock_master_t *m);
const mock_cmd_t *mock_master_command(const mock_master_t *m, size_t i);
/* Commands received named `command` (first word, any case). */
unsigned mock_master_count(const mock_master_t *m, const char *command);
/* The last command named `command`, or NULL. */
const mock_cmd_t *mock_master_last(const mock_master_t *m, const char *command);
unsigned mock_master_accepted(const mock_master_t *m);
unsigned mock_master_open_conns(const mock_master_t *m);

/* Closes the listener and every connection; the mock frees itself once
 * their handles are closed (the test runs the loop to its end). */
void mock_master_close(mock_master_t *m);

/* Runs loop until done(arg) returns nonzero or timeout_ms pass; returns
 * done(arg).  The deadline is only a bound for a test that fails: make it
 * generous, the wait ends as soon as the event happens. */
int mock_run_until(uv_loop_t *loop, int (*done)(void *arg), void *arg, unsigned timeout_ms);

#endif
