/* node.h: one Redis master.  Owns a hiredis async connection on the client's
 * loop, bounds connect + handshake (AUTH, SELECT, SCRIPT LOAD, INFO server)
 * with a libuv timer, reconnects with exponential backoff and jitter, keeps
 * the restart quarantine, caps requests in flight, and drops a connection
 * whose requests keep timing out (a hung or paused master). */
#ifndef REDLOCK_NODE_H
#define REDLOCK_NODE_H

#include <stdint.h>
#include <uv.h>

#include "info.h"
#include "list.h"
#include "uri.h"

struct redisAsyncContext;
struct redlock;

typedef enum {
  NODE_DOWN = 0,   /* no connection; a reconnect timer may be running */
  NODE_CONNECTING, /* TCP/handshake under way, bounded by the connect timeout */
  NODE_READY,      /* handshake done: rounds are sent here */
  NODE_CLOSED,     /* client closing: never reconnects */
} node_state_t;

#define NODE_MAX_INFLIGHT 8192     /* requests in flight on one connection */
#define NODE_HUNG_REQUEST_TIMEOUTS 3 /* no reply for this many request timeouts: reconnect */
#define NODE_BACKOFF_BASE_MS 25
#define NODE_BACKOFF_CAP_MS 1000

#define NODE_MAX_MISSED_RELEASES 16384 /* kept per unreachable master, oldest dropped */

typedef void (*node_reply_fn)(struct redisAsyncContext *ac, void *reply, void *privdata);

/* A release a master did not get (down, busy, timed out), to replay. */
typedef struct missed_release {
  list_node_t link;
  size_t len;
  char cmd[]; /* the formatted command */
} missed_release_t;

typedef struct node {
  struct redlock *client;
  unsigned index;
  node_addr_t addr;
  node_state_t state;
  struct redisAsyncContext *ac;
  uv_timer_t timer; /* connect deadline while CONNECTING, backoff while DOWN */
  unsigned handshake_left;
  unsigned failures;        /* consecutive failed connection attempts */
  unsigned inflight;
  uint64_t progress_ns;     /* last reply, or the first send after being idle */
  int first_attempt_done;   /* the client's startup waits for every node's first try */
  uint64_t quarantine_until_ns;
  char run_id[INFO_RUN_ID_LEN + 1];
  list_node_t missed_releases; /* replayed when the master is ready again */
  unsigned n_missed_releases;
  uint64_t last_warn_ns; /* rate limit for per-request warnings */
  unsigned suppressed_warnings;
} node_t;

/* Copies addr; 0 or REDLOCK_ENOMEM.  The timer is initialised on the loop. */
int node_init(node_t *node, struct redlock *client, unsigned index, const node_addr_t *addr);
/* Starts the first connection attempt (loop thread). */
void node_start(node_t *node);
#define NODE_SEND_DOWN 1 /* not connected (or handshake not done) */
#define NODE_SEND_BUSY 2 /* NODE_MAX_INFLIGHT requests already in flight */
/* Sends a preformatted command: 0 when queued, else NODE_SEND_DOWN or
 * NODE_SEND_BUSY (the caller counts a failed vote; fn will not run). */
int node_send(node_t *node, const char *cmd, size_t len, node_reply_fn fn, void *privdata);
/* Every callback of a request sent by node_send must report here once;
 * got_reply is 0 for the NULL reply of a torn-down connection. */
void node_request_done(node_t *node, int got_reply);
/* Reads replies that already wait on the socket (before deadlines are
 * judged: the loop itself may have been late). */
void node_read_pending(node_t *node);
/* Drops and reconnects a master that has had requests waiting but sent no
 * reply for NODE_HUNG_REQUEST_TIMEOUTS request timeouts (hung or paused).
 * Judged by time, not by a count of timeouts, so that pipelined rounds
 * timing out together after one stall of the client do not drop a live
 * master.  Call outside of hiredis callbacks. */
void node_drop_if_hung(node_t *node);
/* Keeps a release (a formatted compare-and-delete) that may not have reached
 * this master, to send again once it is READY. */
void node_defer_release(node_t *node, const char *cmd, size_t len);
int node_is_quarantined(const node_t *node, uint64_t now_ns);
/* Logs a per-request problem at WARN, at most once a second per node. */
void node_warn(node_t *node, const char *what, const char *detail);
/* Closes the connection for good; pending requests get NULL replies now.
 * The timer handle is closed; `closed` counts down in the client. */
void node_shutdown(node_t *node);
/* Frees what node_init allocated (after the timer handle closed). */
void node_free(node_t *node);

#endif
