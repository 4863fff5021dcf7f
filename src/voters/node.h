/* node.h: one Redis master.  Its connection is a link (link.h: lookup,
 * connect, handshake, connect timeout, reconnect with backoff and jitter), to
 * whose handshake it adds SCRIPT LOAD and INFO server; the node keeps what
 * is a voter's: the restart quarantine, the request queue and its cap on
 * requests in flight, replays of missed releases, and the judgement that a
 * master whose requests keep timing out is hung (the link then drops it).
 *
 * A node knows nothing above it: what it needs (loop, write flusher, TLS,
 * log, random numbers, options) comes down in a node_env_t shared by the
 * client's nodes, and what it has to say (started, up, down, closed, ...)
 * goes up through env->report.
 *
 * The module is one file per concept, node.h their one interface and
 * node_int.h what they share: node.c the life cycle (init, start, link
 * events, retarget, reconnect, close); node_pipe.c the requests (send,
 * queue and backlog, write, the form a master runs, replies, announce);
 * node_handshake.c what the handshake checks (scripts, INFO, COMMAND INFO,
 * role) and feeds the quarantine (quarantine.h: the judgement and its
 * state); node_replay.c releases kept for a
 * master and their replays; node_acks.c durability acks and the role check;
 * node_hung.c the hung-master judgement; node_why.c what a master says of
 * itself to the voters (why strings, warnings, duplicate judgement). */
#ifndef REDLOCK_NODE_H
#define REDLOCK_NODE_H

#include <stdint.h>
#include <uv.h>

#include "conn/conn.h"
#include "conn/link.h"
#include "proto/info.h"
#include "util/list.h"
#include "util/log.h"
#include "util/random.h"
#include "util/resolve.h"
#include "util/stats_core.h"
#include "util/status.h"
#include "util/timebase.h"
#include "util/uri.h"
#include "voters/quarantine.h"

struct redisAsyncContext;
struct redisReply;

typedef enum {
  NODE_DOWN = 0,   /* no connection; a reconnect timer may be running */
  NODE_CONNECTING, /* name lookup, TCP, handshake: bounded by the connect timeout */
  NODE_READY,      /* handshake done: rounds are sent here */
  NODE_CLOSED,     /* client closing: never reconnects */
} node_state_t;

#define NODE_MAX_INFLIGHT 8192 /* requests handed to hiredis on one connection */
#define NODE_MAX_BACKLOG 65536 /* further requests queued behind them, in order */
/* A master's queue: the requests written to it and awaiting a reply (at most
 * NODE_MAX_INFLIGHT) plus those waiting in the backlog to be written.  It is
 * bounded in requests and in bytes of their commands: a
 * master that answers, but more slowly than it is sent work, never counts as
 * hung, so only these bounds keep its queue from growing while the load lasts.
 *  - requests: the in-flight cap and the backlog (50 000
 *    unlocks at once must all go through a healthy master, so no less);
 *  - bytes: 16 MiB, about what 73 728 ordinary commands (~100-200 bytes:
 *    SET key value NX PX ttl, the release script) take, so that for them the
 *    request bound comes first, while large ones (lock_many of long names:
 *    up to ~140 KiB each) are held to a few hundred.
 * Each request also keeps its round alive until answered (the votes, ~100
 * bytes a master, and the command, shared by every master); docs/api.md
 * (Limits) states the resulting memory per master.
 * A master whose queue is full is "overloaded": it votes `busy` on every new
 * round (not sent) until half of each bound is free again, and a release
 * that does not fit is kept aside (node_t.replay, below), to be sent once
 * it has caught up. */
#define NODE_MAX_QUEUED (NODE_MAX_INFLIGHT + NODE_MAX_BACKLOG) /* 73 728 requests */
#define NODE_MAX_QUEUED_BYTES ((size_t)16 << 20)               /* of their commands */
#define NODE_HUNG_REQUEST_TIMEOUTS 3 /* no reply for this many request timeouts: reconnect */
#define NODE_BACKOFF_BASE_MS 25
#define NODE_BACKOFF_CAP_MS 1000
/* A connection that stayed up this long resets the backoff when it drops;
 * one that dropped sooner (say, closed right after the handshake) counts as
 * one more failure, so a flapping master is retried ever more slowly. */
#define NODE_STABLE_MS NODE_BACKOFF_CAP_MS

#define NODE_DOWN_WHY_LEN 160 /* bytes kept of why a master is down */

/* Releases kept for a master that was down, hung or overloaded when they
 * were sent (node_t.replay), to send again once it is up and has room: at
 * most this many and this many bytes, the oldest dropped (their keys expire
 * at their TTL; counted as abandoned in the stats). */
#define NODE_MAX_MISSED_RELEASES 16384
#define NODE_MAX_MISSED_BYTES ((size_t)8 << 20)

struct node;
struct node_req;

/* What a node reports to its owner (node_env_t.report), on the loop thread,
 * never from inside a hiredis callback's critical part: the owner may send
 * from there (the node is already in its new state). */
typedef enum {
  NODE_EV_CONNECTING = 1, /* a connection attempt starts */
  NODE_EV_UP,             /* handshake done: READY */
  NODE_EV_DOWN,           /* an attempt or a live connection failed (what, detail: why);
                           * reported before the state changes */
  NODE_EV_TLS_FAILURE,    /* the TLS set-up of an attempt failed */
  NODE_EV_QUARANTINE_END, /* its restart quarantine is over */
  NODE_EV_STARTED,        /* its first connection attempt is over, either way */
  NODE_EV_REPLAYS_DUE,    /* replays are out: call node_drop_if_hung at node_replays_due_ns */
  NODE_EV_SETTLED,        /* its last replayed release came back: close may go on */
  NODE_EV_CLOSED,         /* after node_shutdown: its handles are closed, it may be freed */
  NODE_EV_NOT_MASTER,     /* a reply said it no longer takes writes as a master (-READONLY,
                           * -LOADING; detail: the error): once per connection */
} node_event_t;

/* Handed down by the owner (client.c), shared by all its nodes, read-only to
 * them; it outlives them. */
typedef struct node_env {
  const timebase_t *tb; /* the clock and timers */
  uv_loop_t *loop;
  conn_flusher_t *flusher; /* one write per master per loop turn */
  tls_client_t *tls;       /* rediss:// masters: the client's SSL_CTX, else NULL */
  const log_sink_t *log;
  jitter_rng_t *rng; /* backoff jitter (loop thread) */
  uv_mutex_t *mutex; /* guards down_why, which other threads read */
  uint32_t connect_timeout_ms;
  uint32_t request_timeout_ms;
  uint32_t max_ttl_ms; /* the restart quarantine's length */
  int quarantine;      /* restart quarantine on */
  /* First sightings shared with other clients (sightings.h), NULL: none;
   * read at a handshake that finds master_replid2 (loop thread, file I/O). */
  const char *state_dir;
  /* The union of the caps (caps.h) of every master at its handshakes,
   * which the nodes add to (loop thread): rounds make script-free forms
   * only once some master has them.  The one thing nodes write here. */
  unsigned *caps_seen;
  /* Host patterns the addresses a voter discovers must match (voters.h);
   * n_allow 0: any. */
  const char *const *allow;
  size_t n_allow;
  void (*report)(void *arg, struct node *node, node_event_t ev, const char *what,
                 const char *detail);
  void *arg;
  /* Optional: a replayed release was answered with an error (a cluster
   * primary's -MOVED / -ASK: the key's slot is served elsewhere now); the
   * owner may send it on (cmd, len: the release, valid during the call).
   * NULL: such a release is done with. */
  void (*replay_error)(void *arg, struct node *node, const char *cmd, size_t len,
                       const struct redisReply *reply);
} node_env_t;

/* The script-free forms of a request (caps.h), which a master that has the
 * commands runs in place of the request's script:
 *  - NODE_FORM_DELIFEQ / NODE_FORM_DELEX: a release of one key (integer 1
 *    or 0, as the script's); once the reply says 1 (deleted), `announce`
 *    follows on the same connection, its reply unread: the release's PUBLISH
 *    to waiters (announce_shard, SPUBLISH, for a voter that announces on
 *    shard channels), sent where the script would have sent it;
 *  - NODE_FORM_SET_IFEQ: an extension of one key, a transaction (before:
 *    MULTI, SET IFEQ PX, the re-install SET NX PX; form: EXEC), read as the
 *    script's 1 / 2 / 0 (direct.h);
 *  - NODE_FORM_TX: a fenced lock's transaction, for a master without Lua
 *    only (direct.h).
 * `before` is written ahead of the form's command, replies unread (a NULL
 * callback: hiredis skips each in order), so the form's reply (EXEC's) is
 * the vote's.  The first form the master can run is used (node_req_t.form
 * says which); a form in nolua_only only where the master runs no
 * scripts.  All the sender's, as long-lived as the request's cmd. */
typedef enum {
  NODE_FORM_SCRIPT = 0, /* the request's cmd as it is */
  NODE_FORM_DELIFEQ,
  NODE_FORM_DELEX,
  NODE_FORM_SET_IFEQ,
  NODE_FORM_TX,
  NODE_FORM_COUNT
} node_form_t;

typedef struct node_cmd {
  const char *cmd; /* formatted; NULL: none */
  size_t len;
} node_cmd_t;

typedef struct node_forms {
  /* The same command announcing with SPUBLISH (a release; scripts.h), for
   * a voter whose servers take it; or NULL (a voter of many connections then
   * makes its own copy). */
  const char *cmd_shard;
  node_cmd_t form[NODE_FORM_COUNT]; /* [NODE_FORM_SCRIPT] unused */
  const node_cmd_t *before;         /* ahead of a form's command (MULTI ...) */
  node_cmd_t announce;              /* after a release form that deleted */
  node_cmd_t announce_shard;        /* announce as SPUBLISH, or none */
  uint8_t n_before;
  uint8_t nolua_only; /* bit f: form f only on a master without Lua */
} node_forms_t;

/* The outcome of a request: reply is NULL when none came (connection lost,
 * or the request was dropped before it was written: req->sent_ns == 0). */
typedef void (*node_reply_fn)(struct node_req *req, const struct redisReply *reply);

/* One request to one master, embedded by its owner (a vote, a replayed
 * release): no allocation per request.  The owner fills cmd, len, fn, keep,
 * slot and ack (and sent_ns, optionally); node*.c own the rest while the
 * request is out.  Kept small: a round carries one per master in one
 * allocation (round.h), which at five masters must stay within the pool's
 * 1 KiB class (pool.h). */
typedef struct node_req {
  list_node_t link; /* node_pipe.c: the backlog while queued; once written,
                     * node->acks.acks_waiting
                     * if it asks an ack, until its fn runs */
  struct node *node;
  const char *cmd; /* formatted command; must live until fn has run */
  /* The sender's: cmd's other forms (SPUBLISH twin, script-free forms), or
   * NULL: none. */
  const node_forms_t *forms;
  size_t len;
  node_reply_fn fn;
  /* In: the sender's clock reading at this send (a round's start), which
   * node_send stamps the request with, to save a clock read per master; 0:
   * none (node_send reads the clock).  node_pipe.c: when written to hiredis; 0
   * while queued. */
  uint64_t sent_ns;
  uint64_t replied_ns;     /* node_pipe.c: when its reply came, if stats or events are on; else 0 */
  struct redisReply *held; /* node_acks.c: the write's reply, kept until its ack comes */
  /* A voter of many connections (voter_cluster.c): its state for this
   * request while it routes it (redirections, the sender's fn); the
   * sender's value is ignored. */
  void *route;
  int16_t slot;    /* the sender's: the hash slot of the key the request is about, which a voter of
                    * many connections routes by (keyslot.h); -1: none.  A node ignores it. */
  uint8_t keep;    /* the sender's: a release: queued however long the backlog */
  uint8_t ack;     /* the sender's: a write that waits for the master's durability ack
                    * (wait= / waitaof=), when the master asks one */
  uint8_t unacked; /* node_acks.c, when fn runs: the ack fell short (the reply is the write's) */
  uint8_t nomem;   /* node_acks.c, when fn runs: the error reply is ours: out of memory here */
  uint8_t ack_state; /* node_acks.c: where the write and its ack are (node_int.h) */
  uint8_t ack_left;  /* node_acks.c: replies of its batch's ack still to come (WAIT, INFO) */
  /* node_pipe.c, while queued: it waits for the connection's next batch
   * (node_t.primary.batch_writes), not behind a full pipe, so a round decided
   * meanwhile leaves it to go out (round.c: only requests behind a full pipe
   * are taken back when their round is decided). */
  uint8_t batched;
  uint8_t script; /* the sender's: cmd runs a script (a master without Lua refuses it) */
  uint8_t shard;  /* a voter's: cmd announces with SPUBLISH (so does a form: announce_shard) */
  uint8_t form;   /* node_pipe.c, from node_send on: the node_form_t written */
} node_req_t;

/* A release a master did not get (down, timed out), to replay. */
typedef struct missed_release {
  list_node_t link;
  node_req_t req; /* while being replayed */
  size_t len;
  char cmd[]; /* the formatted command */
} missed_release_t;

/* A node_t's state, grouped by concept: each group names the file that owns
 * it (node.h's functions are spread over node*.c by the same concepts). */

/* The request pipe (node_pipe.c): requests in flight and the backlog. */
typedef struct node_pipe {
  unsigned inflight;   /* requests handed to hiredis, awaiting replies */
  list_node_t backlog; /* node_req_t queued while NODE_MAX_INFLIGHT are out */
  unsigned backlog_len;
  size_t queued_bytes;      /* the commands of those (in flight or in the backlog) */
  unsigned releases_queued; /* of those, releases (keep) */
  int overloaded;           /* the queue reached its bound; cleared at half of it */
} node_pipe_t;

/* The hung-master watch (node_hung.c; stamped by node_pipe.c as requests
 * go out and replies come in). */
typedef struct node_hung {
  uint64_t progress_ns;          /* last reply, or the first send after being idle */
  int progress_unwritten;        /* progress_ns dates a first send, not a reply */
  unsigned long progress_writes; /* conn_writes() at that send: unchanged, it is unwritten */
} node_hung_t;

/* What the handshakes learnt of the server (node_handshake.c): its
 * quarantine and what it runs for us. */
typedef struct node_server {
  quarantine_state_t quarantine; /* in force, and the server it was judged over (quarantine.h) */
  info_server_t server_info;     /* the handshake's INFO server, until INFO replication */
  char run_id[INFO_RUN_ID_LEN + 1];
  /* What the server runs for us (caps.h): learnt by the handshake
   * (caps_handshake, then caps once READY); loop thread.  A script sent to
   * a master without CAP_LUA, and with no script-free form it has, is
   * refused (ST_ENOTSUP) and votes "unsupported" with noscripts_why (the
   * server's answer to SCRIPT LOAD; env->mutex, read by redlock_last_votes). */
  unsigned caps;
  unsigned caps_handshake;
  char noscripts_why[NODE_DOWN_WHY_LEN];
} node_server_t;

/* Releases kept for the master and their replays (node_replay.c). */
typedef struct node_replay {
  list_node_t missed_releases; /* replayed when the master is ready again */
  unsigned n_missed_releases;
  size_t missed_bytes;
  unsigned replays_out; /* replayed releases not yet answered (close waits) */
} node_replay_t;

/* Durability acks and the role check (node_acks.c). */
typedef struct node_acks {
  /* The owner's, set after node_init: a master whose role can change
   * under a live connection (a cluster primary, a Sentinel group's master:
   * a failover or REPLICAOF demotes it without closing client connections,
   * and a later promotion gives it a data set that may lack keys it
   * granted).  With the quarantine on, each batch of writes that asks an ack
   * is followed by INFO replication, and its votes count only when the
   * server is still a master with the replication id of the handshake
   * (node_acks.c; docs/safety.md §5b). */
  int check_role;
  /* The durability ack (node_addr_t.ack): the command formatted once (NULL:
   * none; node_init, read-only after), and why the last one fell short (""
   * before any; env->mutex, read by redlock_last_votes). */
  char *ack_cmd;
  size_t ack_cmd_len;
  char ack_why[NODE_DOWN_WHY_LEN];
  /* Loop thread, node_acks.c: the written requests that ask an ack, in the
   * order written, until their fn runs.  One ack command goes out per write
   * of the connection's output, after the last of them (conn_before_write),
   * and its reply settles every one of them whose own reply came before it. */
  list_node_t acks_waiting;
} node_acks_t;

/* What only a cluster voter's primaries use, set by that voter after
 * node_init (voter_cluster_nodes.c); node_init's defaults suit every other
 * master. */
typedef struct node_primary {
  int stats_primary; /* a cluster voter's: its entry in masters[index].primaries (stats_core.h),
                      * set by the voter; -1 (node_init): none */
  /* Write in batches.  While requests are out and the connection's output
   * is written, new ones wait in the backlog and go out together once the
   * last reply is in (node_pipe_open).  A cluster voter's primaries: each
   * loop turn's commands spread over all of them, and one write per primary
   * per turn cost each a third of the batch per write syscall (and per
   * server wakeup); a primary works through what it has in order anyway,
   * so a command held until its batch is answered starts about when it
   * would have. */
  int batch_writes;
  /* A cluster primary.  Keys move between shards (slot migrations), so an
   * ack proves only the shard a key was written to: no ack waives a
   * quarantine here (quarantine.h). */
  int sharded;
} node_primary_t;

typedef struct node {
  const node_env_t *env;
  struct stats *stats; /* the client's figures (stats_core.h; its own: masters[index]),
                        * NULL when off; set by the owner */
  unsigned index;
  node_addr_t addr;
  node_state_t state;
  /* The connection (link.c's; its timer is the restart quarantine's while
   * READY).  One lookup thread per master, however long it hangs. */
  link_t link;
  unsigned failures;      /* consecutive failed connection attempts (the link's count, copied
                           * at each of its events) */
  uint64_t ready_ns;      /* when the current connection became READY */
  int first_attempt_done; /* the client's startup waits for every node's first try */
  int not_master_said;    /* NODE_EV_NOT_MASTER reported on this connection */
  int shut_down;          /* node_shutdown ran */
  /* Why the master is down (the last failed attempt: "cannot connect:
   * certificate verify failed: ..."), "" while up; client->mutex, since
   * redlock_last_votes() reads it from any thread. */
  char down_why[NODE_DOWN_WHY_LEN];
  log_limit_t warn_limit; /* node_warn's: per-request warnings, one a second */
  node_pipe_t pipe;
  node_hung_t hung;
  node_server_t server;
  node_replay_t replay;
  node_acks_t acks;
  node_primary_t primary; /* a cluster voter's (voter_cluster_nodes.c) */
} node_t;

/* Copies addr and formats its durability ack (WAIT / WAITAOF, with the
 * smaller of wait_ms and the request timeout: a later ack would find its
 * vote timed out); 0 or REDLOCK_ENOMEM.  env must outlive the node; its loop
 * and timebase are used from node_start on. */
status_t node_init(node_t *node, const node_env_t *env, unsigned index, const node_addr_t *addr);
/* Starts the first connection attempt (loop thread). */
void node_start(node_t *node);
/* TCP: the numeric address of the master's last lookup ("" before the
 * first); the subscriber connection connects there too. */
const char *node_ip(const node_t *node);
/* Sends req (cmd, len, fn and keep filled in): written at once while fewer
 * than NODE_MAX_INFLIGHT requests are out (with batch_writes: while none is
 * out, or this turn's output is not yet written), else queued in order
 * behind them, so that a burst is never dropped: it waits for the pipe.  Returns ST_OK
 * (then req->fn runs exactly once), or ST_DOWN / ST_BUSY (it never runs):
 * down when not connected (or the handshake is not done); busy when the
 * queue would pass NODE_MAX_QUEUED requests or NODE_MAX_QUEUED_BYTES, and
 * for anything but a release (keep) while the master is overloaded.  A
 * master that goes down runs fn with NULL for every request. */
status_t node_send(node_t *node, node_req_t *req);
/* 1 while req is queued, not yet written. */
int node_req_queued(const node_req_t *req);
/* Takes a queued request back (its fn will not run).  Only while queued. */
void node_cancel(node_req_t *req);
/* Reads replies that already wait on the socket (before deadlines are
 * judged: the loop itself may have been late). */
void node_read_pending(node_t *node);
/* Writes requests handed over but not yet written (the loop was kept busy
 * since); when the master was idle before them, its hung-master clock starts
 * now: it is judged from when it could first have answered them.  Before
 * deadlines are judged. */
void node_write_late(node_t *node);
/* Drops and reconnects a master that has had requests waiting but sent no
 * reply for NODE_HUNG_REQUEST_TIMEOUTS request timeouts (hung or paused).
 * Judged by time, not by a count of timeouts, so that pipelined rounds
 * timing out together after one stall of the client do not drop a live
 * master.  Call outside of hiredis callbacks. */
void node_drop_if_hung(node_t *node);
/* When node_drop_if_hung would drop this master if no reply comes meanwhile,
 * while it owes replies to replayed releases; 0 otherwise.  Replays belong to
 * no round, so no round deadline would otherwise judge them. */
uint64_t node_replays_due_ns(const node_t *node);
/* Keeps a release (a formatted compare-and-delete) that may not have reached
 * this master, to send again once it is READY and not overloaded.  Once the
 * client is closing (the node CLOSED) it is counted as abandoned instead. */
void node_defer_release(node_t *node, const char *cmd, size_t len);
/* Hands every kept release (not yet replayed) to fn, oldest first, and
 * forgets them here: the owner sends them elsewhere (a cluster primary that
 * no longer serves their slots). */
void node_take_kept(node_t *node, void (*fn)(void *arg, const char *cmd, size_t len), void *arg);
/* Releases this master is still owed: queued or in flight, or kept. */
unsigned node_releases_owed(const node_t *node);
/* Releases this master still owes an answer to (queued, in flight, or
 * replayed); close waits for them while the master is up. */
int node_owes_releases(const node_t *node);
int node_is_quarantined(const node_t *node, uint64_t now_ns);
/* The same, now: the clock is read only for a master that has a quarantine
 * (asked for every answer to an acquisition). */
int node_quarantined_now(const node_t *node);
/* 1 when a and b, both READY, are connected to one server: the same
 * resolved address and port (or unix socket path), or the same run_id in
 * their handshakes' INFO server (each redis-server process has its own; a
 * restart makes a new one, and both connections are then made again).  `how`
 * (when not NULL) gets which ("the same address 127.0.0.1:6379", "the same
 * run_id 0123..."). */
int node_same_server(const node_t *a, const node_t *b, char *how, size_t how_len);
/* Logs a per-request problem at WARN, at most once a second per node (log.h:
 * the others at DEBUG, counted in the next line at WARN). */
void node_warn(node_t *node, const char *what, const char *detail);
/* A vote's why detail from this master's state, for the voters' `why`
 * (loop thread): WHY_DOWN its down_why; WHY_BUSY "queue full: N requests,
 * B bytes" ("" when not overloaded); WHY_UNACKED its ack_why;
 * WHY_QUARANTINED "restart quarantine: 41234 ms left" (or "failover
 * quarantine: ...", "" when none); "" for any other why.  A voter
 * wraps it with what it knows besides (its sentinels, its primary). */
void node_why(const node_t *node, int why, char *buf, size_t size);
/* The close is out of time: drops the connection for good (no reconnect);
 * pending requests get NULL replies now, kept releases are dropped, and
 * every release among them is counted as abandoned.  Outside of hiredis
 * callbacks.  node_shutdown still closes its handles. */
void node_abandon(node_t *node);
/* Closes the connection for good (node_abandon); NODE_EV_CLOSED is reported
 * once its link's timer is closed (also for a node never started). */
void node_shutdown(node_t *node);
/* The master moved to host:port (a Sentinel voter's news; why: for the log
 * and the DOWN report).  A connection or an attempt to the old address is
 * dropped (NODE_EV_DOWN "master moved") and an attempt at the new one starts
 * at once; a node not started yet only takes the address.  The server of the
 * last handshake is kept, and a new run_id at the new address is judged as
 * another server, never as a restart (the old one may live on).  Under
 * env->mutex for the address.  0, or REDLOCK_ENOMEM (nothing changed).
 * Outside of this node's hiredis callbacks. */
status_t node_retarget(node_t *node, const char *host, int port, const char *why);
/* Drops the connection (what, why: for the log and the DOWN report) and
 * starts a new attempt, whose handshake judges the server again
 * (quarantine.h): a cluster primary that was demoted and promoted again
 * over a connection that lived on.  The new attempt starts at once after a
 * connection that was up for NODE_STABLE_MS (or had no failure before it),
 * else after the backoff, as after any other drop; a node not connected
 * (down in its backoff, or connecting) keeps its attempt or its backoff:
 * its next handshake judges the server anyway.  The server of the last
 * handshake is kept; a new run_id is judged as another server.  Nothing for
 * a node not started or closed.  Outside of this node's hiredis callbacks. */
void node_reconnect(node_t *node, const char *what, const char *why);
/* The owner's hint for the quarantine judgement of the next handshakes at
 * the current address: the server there (run_id, or NULL / "" when not
 * known) has been a master since master_since_ns at the latest
 * (quarantine.h); master_since_ns 0 clears it. */
void node_hint(node_t *node, const char *run_id, uint64_t master_since_ns);
/* Frees what node_init allocated (after NODE_EV_CLOSED). */
void node_free(node_t *node);

#endif
