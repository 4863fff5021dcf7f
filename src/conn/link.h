/* link.h: one Redis connection's whole life, for whichever owner needs one
 * (a master's command connection, node.c; its release-notification
 * subscriber, notify.c; a Sentinel voter's connections to its sentinels,
 * voter_sentinel.c; later a cluster node's).
 *
 * A link looks its host name up off the loop (resolve.h: one lookup at a
 * time, kept across attempts however long it hangs), connects over TCP (each
 * address found, in turn) or a unix socket, sets up TLS (tls.h), runs the
 * handshake (AUTH, SELECT, then the owner's own steps) within the connect
 * timeout, and on any failure drops the connection and tries again after a
 * backoff with jitter (backoff.h) that grows with each failure in a row; a
 * connection that stayed up long enough resets it.  The owner asks it to
 * drop a connection that does not answer (link_drop_if_silent), and ends it
 * with link_shutdown.
 *
 * A link knows nothing above it: its owner hands down what it needs in a
 * link_cfg_t (and the loop's pieces at link_attach), and hears what happens
 * through cfg.event.  Everything runs on the loop thread. */
#ifndef REDLOCK_LINK_H
#define REDLOCK_LINK_H

#include <stdint.h>
#include <uv.h>

#include "conn/conn.h"
#include "util/log.h"
#include "util/random.h"
#include "util/resolve.h"
#include "util/status.h"
#include "util/timebase.h"
#include "util/uri.h"

struct link;
struct redisReply;

typedef enum {
  LINK_DOWN = 0,   /* no connection; a backoff timer may be running */
  LINK_CONNECTING, /* lookup, connect, handshake: bounded by the connect timeout */
  LINK_UP,         /* handshake done */
  LINK_CLOSED,     /* abandoned or shut down: never reconnects */
} link_state_t;

/* What a link tells its owner (cfg.event). */
typedef enum {
  LINK_EV_CONNECTING = 1, /* an attempt starts (state CONNECTING) */
  LINK_EV_UP,             /* handshake done (state UP) */
  LINK_EV_DOWN,           /* the attempt or the connection failed (level, what, detail);
                           * reported before anything changes: the state is the old one */
  LINK_EV_RETRY,          /* after DOWN: the context is gone, the state is DOWN and the
                           * backoff runs (failures counts this one) */
  LINK_EV_TLS_FAILURE,    /* the TLS set-up of an attempt failed (before its DOWN) */
  LINK_EV_TIMER,          /* the owner's timer (link_arm) fired while UP */
  LINK_EV_CLOSED,         /* after link_shutdown: its timer is closed, it may be freed */
} link_event_t;

/* An owner's handshake step checks its reply (never an error reply: the
 * link fails those as "<name> refused"): NULL when the step is done, else
 * why the attempt fails (logged at ERROR: it will not fix itself). */
typedef const char *(*link_step_fn)(void *arg, const struct redisReply *reply);

/* Set by the owner at link_init; read-only to the link afterwards. */
typedef struct link_cfg {
  const node_addr_t *addr; /* the owner's; outlives the link */
  const timebase_t *tb;    /* the clock and timers (usable from link_attach on) */
  const log_sink_t *log;
  const char *role; /* the log's "<role> <addr label>: ...": "master" when NULL */
  /* The owner's connect timeout, read at each attempt (it may change it). */
  const uint32_t *connect_timeout_ms;
  uint32_t backoff_base_ms, backoff_cap_ms;
  /* A connection up at least this long resets the backoff when it drops;
   * one that dropped sooner counts as one more failure in a row. */
  uint32_t stable_ms;
  int select_db; /* send SELECT addr->db (when not 0) in the handshake */
  /* The caps of its replies (conn.h); NULL: conn_caps_reply, a master's. */
  const conn_caps_t *reply_caps;
  /* TCP: connect where that other link last connected instead of looking
   * the name up (a subscriber follows its master's command connection);
   * NULL: look the name up. */
  const struct link *ip_from;
  /* Queues the owner's handshake steps (link_step) after AUTH and SELECT;
   * ST_OK, or link_step's failure (the attempt then fails).  NULL: none.
   * A link with no step at all is up once the owner says a reply came
   * (link_replied). */
  status_t (*handshake)(struct link *link, void *arg);
  /* The backoff ran out: whether to try again now (NULL: always); when not,
   * the link stays DOWN until link_connect. */
  int (*want_retry)(void *arg);
  /* What happens (see link_event_t): level, what and detail for DOWN only. */
  void (*event)(void *arg, struct link *link, link_event_t ev, int level, const char *what,
                const char *detail);
  void *arg;
} link_cfg_t;

/* The loop's pieces, handed at link_attach (the owner may know them only
 * after link_init). */
typedef struct link_io {
  uv_loop_t *loop;
  conn_flusher_t *flusher; /* one write per connection per loop turn */
  tls_client_t *tls;       /* rediss://: the client's SSL_CTX, else NULL */
  jitter_rng_t *rng;       /* backoff jitter */
} link_io_t;

#define LINK_MAX_STEPS 24 /* handshake commands of one attempt */

typedef struct link_step {
  struct link *link;
  const char *name; /* "AUTH", "SCRIPT LOAD": for "<name> refused" */
  link_step_fn check;
  int check_errors; /* link_step_any: error replies go to check too */
} link_step_t;

/* Every field is link.c's, on the loop thread, unless it says otherwise. */
typedef struct link {
  link_cfg_t cfg; /* the owner's, from link_init */
  link_io_t io;   /* the owner's, from link_attach */
  int attached;   /* link_attach ran: the timer is usable */
  link_state_t state;
  struct redisAsyncContext *ac; /* the attempt's or the live connection's, or NULL */
  tb_timer_t timer; /* connect deadline while CONNECTING, backoff while DOWN, the owner's (link_arm)
                     * while UP */
  unsigned failures; /* failed attempts in a row (the backoff's exponent, at most 32) */
  uint64_t up_ns;    /* when it came UP (the stable rule) */
  /* The host name's lookup.  Kept when an attempt gives up on it (the
   * connect timeout): the next attempt waits for it rather than start
   * another.  awaiting_lookup: the current attempt waits for it. */
  resolve_req_t *resolving;
  int awaiting_lookup;
  int named;                 /* TCP, the host is a name: its addresses are named in errors */
  resolve_list_t addrs;      /* the attempt's addresses, tried in order */
  unsigned addr_next;        /* the next one to try */
  char addr_errs[256];       /* the attempt's failed addresses: "ADDR:PORT: why; ..." */
  char ip[RESOLVE_ADDR_LEN]; /* TCP: the numeric address last connected to ("" before) */
  resolve_key_t ip_key;      /* TCP: that address, comparable (valid with has_ip_key) */
  int has_ip_key;
  link_step_t steps[LINK_MAX_STEPS]; /* the attempt's handshake steps (privdata of each) */
  unsigned n_steps;
  unsigned steps_left; /* not yet answered */
  int shut_down;       /* link_shutdown ran */
} link_t;

/* Zeroes the link and keeps cfg (nothing to free: a link that was never
 * attached needs only link_shutdown). */
void link_init(link_t *link, const link_cfg_t *cfg);
/* Takes the loop's pieces and makes the timer; ST_OK, or ST_EIO (logged)
 * when libuv cannot make the timer (the link then stays DOWN). */
status_t link_attach(link_t *link, const link_io_t *io);
/* Starts an attempt now (DOWN only: a running backoff is cut short). */
void link_connect(link_t *link);
/* 1 while DOWN with no backoff running: only link_connect brings it back. */
int link_idle(const link_t *link);
/* Queues one handshake step: the command (hiredis format) and the check of
 * its reply.  From cfg.handshake only.  ST_OK; ST_EINVAL when the attempt
 * already has LINK_MAX_STEPS steps; ST_EIO when there is no connection or
 * hiredis will not queue the command (out of memory, or the context going
 * away: it does not say which). */
status_t link_step(link_t *link, const char *name, link_step_fn check, const char *fmt, ...);
/* The same, for a step whose error reply may be an answer (a command the
 * server may lack or refuse, which only narrows what the owner uses it
 * for): check gets error replies too, and a non-NULL return from it fails
 * the attempt as link_step's error would ("<name> refused: <error>"). */
status_t link_step_any(link_t *link, const char *name, link_step_fn check, const char *fmt, ...);
/* A reply to the owner's own command came while CONNECTING: a link with no
 * handshake step left is up. */
void link_replied(link_t *link);
/* Fails the attempt or the connection (DOWN, then RETRY); outside of hiredis
 * callbacks' critical parts, like any failure. */
void link_fail(link_t *link, int level, const char *what, const char *detail);
/* While UP: fires LINK_EV_TIMER in ms (the owner's use of the link's timer).
 * ST_OK; ST_EINVAL when the link is not UP; ST_EIO (logged) when libuv
 * cannot start the timer. */
status_t link_arm(link_t *link, uint64_t ms);
/* Drops a connection that has had `waiting` requests out and sent nothing
 * since since_ns for limit_ns or more (hung or paused); 1 when it did. */
int link_drop_if_silent(link_t *link, uint64_t since_ns, uint64_t limit_ns, unsigned waiting);
/* The owner changed its address between attempts (DOWN): a lookup of the
 * old name still under way is abandoned, so that the next attempt looks the
 * new one up instead of waiting for it. */
void link_forget_lookup(link_t *link);
/* Closes the connection for good (no reconnect; CLOSED); pending callbacks
 * get NULL replies now.  The lookup under way is left to finish alone. */
void link_abandon(link_t *link);
/* link_abandon, then closes the timer: LINK_EV_CLOSED follows from the loop. */
void link_shutdown(link_t *link);
/* TCP: the numeric address last connected to ("" before any). */
static inline const char *link_ip(const link_t *link) { return link->ip; }

#endif
