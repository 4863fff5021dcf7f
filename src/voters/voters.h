/* voters.h: the client's voters (master i of the rounds is voter i) and
 * their whole life: made from the options' addresses, started, the start-up
 * barrier (every voter had its first attempt), the deadline timer's work
 * (late writes, replies waiting on the sockets, hung connections, replays
 * due), duplicate judging, the votes' "why" details, and at close the
 * releases owed, abandon and shutdown.  It is also the rounds' transport
 * (voters_transport).  What it has to say goes up through voters_hooks_t;
 * its owner (client.c) never sees a kind's insides.
 *
 * Each voter is a voter_t of the kind its URI names (voter.h): `standalone`
 * (redis://, rediss://, unix://), `sentinel` (redis-sentinel://,
 * rediss-sentinel://) or `cluster` (redis-cluster://, rediss-cluster://),
 * or, in the engine's unit tests, fake voters handed in.  Every voter has
 * a node in vs->nodes (the notifier's addresses): a standalone voter's
 * master, a sentinel voter's current master, a cluster voter's home node
 * (the primary at its first seed, if any). */
#ifndef REDLOCK_VOTERS_H
#define REDLOCK_VOTERS_H

#include <stdint.h>
#include <uv.h>

#include "util/log.h"
#include "util/why.h"
#include "voters/node.h"
#include "voters/notify.h"
#include "voters/transport.h"
#include "voters/voter.h"
#include "voters/voter_cluster.h"
#include "voters/voter_sentinel.h"
#include "voters/voter_standalone.h"

/* A connection that keeps requests waiting but sends no reply for this many
 * request timeouts is dropped (hung or paused). */
#define VOTERS_HUNG_REQUEST_TIMEOUTS NODE_HUNG_REQUEST_TIMEOUTS

/* What the voters get from their owner, read-only to them; its pointers
 * outlive them. */
typedef struct voters_config {
  const timebase_t *tb;    /* the clock and timers of every connection */
  conn_flusher_t *flusher; /* one write per connection per loop turn */
  tls_client_t *tls;       /* rediss:// masters: the client's SSL_CTX, else NULL */
  const log_sink_t *log;
  jitter_rng_t *rng; /* backoff jitter (loop thread) */
  uv_mutex_t *mutex; /* guards the votes' why details, read from any thread */
  uint32_t connect_timeout_ms;
  uint32_t request_timeout_ms;
  uint32_t max_ttl_ms;   /* the restart quarantine's length */
  int quarantine;        /* restart quarantine on */
  const char *state_dir; /* first sightings (sightings.h), NULL: none; outlives the voters */
  /* Host patterns a discovered address (a sentinel's master, a cluster's
   * primary) must match (str_host_allowed); n_allow 0: any.  Outlive the
   * voters. */
  const char *const *allow;
  size_t n_allow;
} voters_config_t;

/* What the voters report to their owner, on the loop thread (arg first). */
typedef struct voters_hooks {
  /* Every voter had its first attempt (once, from voters_start on). */
  void (*started)(void *arg);
  /* A voter's news for stats and events: CONNECTING, UP (duplicate judged),
   * DOWN (before its state changes), TLS_FAILURE, QUARANTINE_END. */
  void (*news)(void *arg, unsigned index, const voter_news_t *news);
  /* Call voters_tick by then (a voter's replays would be judged hung). */
  void (*arm)(void *arg, uint64_t due_ns);
  /* A voter's last replayed release came back: close may go on. */
  void (*settled)(void *arg);
  /* After voters_shutdown: every voter is closed. */
  void (*closed)(void *arg);
  void *arg;
} voters_hooks_t;

typedef struct voters {
  unsigned n;                     /* const */
  int has_cluster;                /* const: some voter is a whole cluster (addrs' kinds; the
                                   * callers' slot checks, calls.c) */
  voter_t **voter;                /* const after init: voter i (voters.c allocates the array) */
  node_t *nodes;                  /* voters.c: each voter's master (node.c's): a standalone
                                   * voter's connection, a sentinel voter's current master;
                                   * the notifier's addresses */
  voter_standalone_t *standalone; /* voters.c: the standalone voters (NULL with fakes) */
  node_env_t node_env;            /* voters.c: what the nodes get (and the notifier) */
  unsigned caps_seen;             /* loop: the nodes' (node_env_t.caps_seen); the rounds read it */
  voters_hooks_t hooks;           /* const after init */
  const log_sink_t *log;          /* const */
  unsigned startup_left;          /* loop: voters whose first attempt has not finished */
  unsigned open;                  /* loop, after voters_shutdown: voters not yet closed */
} voters_t;

/* The rounds' transport over the voters; its argument is the voters_t. */
extern const round_transport_t voters_transport;

/* One voter per address (copied), of the kind it names; 0 or REDLOCK_ENOMEM
 * (then voters_free).  With `fakes` (the engine's unit tests: n voters already
 * made) those are the voters instead, and the start-up barrier is open. */
int voters_init(voters_t *vs, const voters_config_t *cfg, const voters_hooks_t *hooks,
                const node_addr_t *addrs, unsigned n, voter_t *const *fakes);
/* The loop the connections live on (before voters_start). */
void voters_set_loop(voters_t *vs, uv_loop_t *loop);
/* The client's figures (NULL: off), before voters_start. */
void voters_set_stats(voters_t *vs, struct stats *stats);
/* Composes the notifier over the voters' masters (their addresses and the
 * IPs their lookups found). */
void voters_notify_init(voters_t *vs, notify_t *notify, void (*wake)(void *arg, notify_waiter_t *w),
                        void *arg);
/* Starts every voter's first attempt (loop thread). */
void voters_start(voters_t *vs);
/* 1 once every voter had its first attempt. */
int voters_started(const voters_t *vs);
/* The deadline timer: every voter catches up (late writes, replies already
 * waiting), then fire(arg) judges the rounds' deadlines, then hung
 * connections are dropped.  Returns the earliest time a voter's replays
 * must be judged again, or 0. */
uint64_t voters_tick(voters_t *vs, void (*fire)(void *arg), void *arg);
/* Releases voter i is still owed (close's report). */
unsigned voters_releases_owed(const voters_t *vs, unsigned i);
/* 1 while some voter owes replies to releases: close waits. */
int voters_owe_releases(const voters_t *vs);
/* The close is out of time: every voter drops its connections for good. */
void voters_abandon(voters_t *vs);
/* Closes every voter; hooks.closed runs once all are. */
void voters_shutdown(voters_t *vs);
/* Frees what voters_init made (after closed, or when never started). */
void voters_free(voters_t *vs);
/* 1 when some voter may route its requests by node_req_t.slot: any kind
 * but the one-connection ones (standalone, sentinel), fakes included. */
int voters_route_by_slot(const voters_t *vs);
/* Voter i's label ("host:port"). */
const char *voters_label(const voters_t *vs, unsigned i);
/* voters_why's call when the vote may have a detail: a duplicate's, or
 * what the voter says. */
void voters_why_asked(const voters_t *vs, unsigned i, int why, const node_req_t *req, char *buf,
                      size_t size);
/* The whys that may have a detail with voter_ops_t.why_trouble_only. */
#define VOTERS_WHY_TROUBLE                                                                         \
  (1u << WHY_DOWN | 1u << WHY_BUSY | 1u << WHY_UNACKED | 1u << WHY_QUARANTINED |                   \
   1u << WHY_DUPLICATE | 1u << WHY_NOTSUP)
/* The detail of voter i's vote `why` (WHY_DOWN, WHY_DUPLICATE, WHY_BUSY)
 * into buf (VOTER_WHY_LEN bytes), "" for the others; under cfg->mutex.
 * req: the vote's request (a cluster voter names the primary it went to).
 * Inline: it runs for every vote of every round, and most have no detail. */
static inline void voters_why(const voters_t *vs, unsigned i, int why, const node_req_t *req,
                              char *buf, size_t size) {
  if (vs->voter[i]->ops->why_trouble_only && !(VOTERS_WHY_TROUBLE >> why & 1u)) {
    if (size > 0)
      buf[0] = '\0';
    return;
  }
  voters_why_asked(vs, i, why, req, buf, size);
}

#endif
