/* node_fixture.h: what the unit tests of node.c (test_node*.c) share: a
 * libuv loop, a node_env_t built by the test (its report callback records
 * every event with the node's state at that moment, its log sink keeps the
 * messages), one node, and a mock master (tests/support/mock_master.h) on
 * the same loop.  Waits run the loop until an event has been seen, with a
 * generous deadline: no sleeps, no timing assertions. */
#ifndef REDLOCK_TEST_NODE_FIXTURE_H
#define REDLOCK_TEST_NODE_FIXTURE_H

#include <hiredis/hiredis.h>
#include <uv.h>

#include "conn/conn.h"
#include "mock_master.h"
#include "redlock.h"
#include "voters/node.h"

#define NF_MAX_EVENTS 512
#define NF_WAIT_MS 20000 /* the bound of every wait: only a failing test reaches it */

typedef struct {
  node_event_t ev;
  node_state_t state; /* the node's state when it reported */
  char what[96];
  char detail[160];
  /* the node as it was then (a backoff may have run by the time a wait
   * returns on a loaded machine: tests check the moment itself) */
  int has_context;  /* node->link.ac != NULL */
  int timer_active; /* its timer runs (connect deadline or backoff) */
  unsigned failures;
  char down_why[NODE_DOWN_WHY_LEN];
} nf_event_t;

/* A request the test sends, with what came back. */
typedef struct {
  node_req_t req;
  int done;      /* fn ran */
  int got_reply; /* with a reply */
  int reply_type;
  long long integer;
  char str[64];
  char cmd[256]; /* the formatted command (must live while out) */
} nf_req_t;

typedef struct {
  uv_loop_t loop;
  timebase_t tb; /* libuv's, on loop */
  conn_flusher_t flusher;
  uv_mutex_t mutex;
  jitter_rng_t rng;
  log_sink_t log;
  node_env_t env;
  mock_master_t *mock;
  node_addr_t addr;
  node_t node;
  int started, closed;
  nf_event_t events[NF_MAX_EVENTS];
  unsigned n_events;
  char logbuf[16384]; /* log messages, one a line (the first 16 KiB) */
  size_t log_len;
} nf_t;

/* cmocka setup / teardown: the fixture with the mock listening and the node
 * addressed at it (not started).  Teardown shuts the node down if needed,
 * waits for CLOSED, closes the mock and requires the loop to end clean. */
/* A whole client on the fixture's loop (redlock_open_uv) and what its
 * calls' callbacks were told, each call counted. */
typedef struct {
  redlock_t *client;
  int lock_done, lock_status;
  redlock_lock_t *lock;
  int unlock_done, unlock_status;
  int closed;
} nf_client_t;
/* The callbacks (arg: the nf_client_t), and waits for them (mock_run_until). */
void nf_client_on_lock(int status, redlock_lock_t *lock, void *arg);
void nf_client_on_unlock(int status, void *arg);
void nf_client_on_closed(void *arg);
int nf_client_locked(void *arg);
int nf_client_unlocked(void *arg);
int nf_client_closed(void *arg);

int nf_setup(void **state);
int nf_teardown(void **state);

/* Re-addresses the node (before nf_start): userinfo "user:pw" or NULL,
 * suffix "/3" or NULL; tls: a rediss:// address. */
void nf_address(nf_t *f, const char *userinfo, const char *suffix, int tls);
/* node_init + node_start. */
void nf_start(nf_t *f);
void nf_shutdown(nf_t *f);

/* How many times ev was reported; the index of its n-th report (1 = first)
 * or -1. */
unsigned nf_count(const nf_t *f, node_event_t ev);
int nf_index(const nf_t *f, node_event_t ev, unsigned nth);
/* Runs the loop until ev has been reported `count` times in all; asserts it was. */
void nf_wait_event(nf_t *f, node_event_t ev, unsigned count);
/* Runs the loop until the node is in `state` (after some loop turn). */
void nf_wait_state(nf_t *f, node_state_t state);
/* Runs the loop until the mock has received `count` commands named `command`. */
void nf_wait_received(nf_t *f, const char *command, unsigned count);
/* The same on mock m (one of several: a cluster's primaries); fails with
 * `what` and the fixture's log. */
void nf_wait_received_at(nf_t *f, mock_master_t *m, const char *command, unsigned count,
                         const char *what);
/* Runs the loop until r's fn has run. */
void nf_wait_req(nf_t *f, nf_req_t *r);
/* The last report of ev (asserts there was one). */
const nf_event_t *nf_last(const nf_t *f, node_event_t ev);
int nf_logged(const nf_t *f, const char *needle);

/* Sends a command (words separated by spaces, formatted into r->cmd)
 * through node_send; keep: a release.  Returns node_send's result. */
int nf_send(nf_t *f, nf_req_t *r, const char *words, int keep);
/* The same for a write that asks the master's durability ack (req.ack). */
int nf_send_ack(nf_t *f, nf_req_t *r, const char *words);

#endif
