/* voter.h: the voter interface.  A voter is whatever casts one vote in a
 * round: master i of the rounds is voter i.  The kinds: `standalone`
 * (voter_standalone.c: one master, node.c), `sentinel` (voter_sentinel.c:
 * the master of a Sentinel group, which moves on failover) and `cluster`
 * (voter_cluster.c: one connection per primary, routed by the key's hash
 * slot), behind one small ops table (docs/architecture.md, "Voter
 * interface").
 *
 * voters.c owns the set and calls these ops; a kind knows nothing above it:
 * what it has to say goes up through voter_t.report. */
#ifndef REDLOCK_VOTER_H
#define REDLOCK_VOTER_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"
#include "voters/node.h" /* node_req_t, NODE_DOWN_WHY_LEN */

struct voter;

#define VOTER_WHY_LEN NODE_DOWN_WHY_LEN /* bytes of a vote's "why" detail */

/* What a voter reports (voter_t.report), on the loop thread. */
typedef enum {
  VOTER_EV_CONNECTING = 1, /* a connection attempt starts */
  VOTER_EV_UP,             /* it can take rounds */
  VOTER_EV_DOWN,           /* an attempt or a live connection failed; before the state changes */
  VOTER_EV_TLS_FAILURE,    /* the TLS set-up of an attempt failed */
  VOTER_EV_QUARANTINE_END, /* its restart quarantine is over */
  VOTER_EV_STARTED,        /* its first attempt is over, either way (once) */
  VOTER_EV_REPLAYS_DUE,    /* replays are out: tick it by news.due_ns */
  VOTER_EV_SETTLED,        /* its last replayed release came back: close may go on */
  VOTER_EV_CLOSED,         /* after shutdown: its handles are closed, it may be freed */
  VOTER_EV_SERVERS,        /* a kind of many servers: one of them connected, or is going
                            * (news.leaving): duplicates are judged again */
} voter_event_t;

/* One report.  Only the fields of its event are set. */
typedef struct voter_news {
  voter_event_t ev;
  const char *what;             /* DOWN: what failed (its log line) */
  const char *detail;           /* DOWN: why, or NULL */
  int was_up;                   /* DOWN: a live connection dropped (else an attempt failed) */
  uint64_t ready_ns;            /* UP, QUARANTINE_END: when it came up (0: unknown) */
  uint64_t quarantine_until_ns; /* UP: its quarantine ends then (0: none) */
  const char *quarantine_name;  /* UP: which one (quarantine_name()), "" or NULL for none */
  const char *duplicate_why;    /* UP: set by voters.c when it is a duplicate, else NULL */
  uint64_t due_ns;              /* REPLAYS_DUE: when to tick it */
  const node_t *leaving;        /* SERVERS: the server going (still up while it reports), or NULL */
} voter_news_t;

/* A kind's ops.  "Loop" for all but why (any thread, under the env mutex).
 * A kind of many connections routes each request by req->slot (the key's
 * hash slot, or -1: the kind's default connection). */
typedef struct voter_ops {
  const char *kind; /* "standalone", "sentinel", "cluster" */
  /* ---- the rounds' side (round_transport_t, per voter) ---- */
  /* ST_OK (req->fn then runs exactly once), or ST_DOWN / ST_BUSY / ST_ENOMEM
   * (it never runs).  req->sent_ns in: the sender's clock reading, or 0. */
  status_t (*send)(struct voter *v, node_req_t *req);
  int (*queued)(struct voter *v, const node_req_t *req); /* 1 while req waits unsent */
  void (*cancel)(struct voter *v, node_req_t *req);      /* takes back a queued request */
  uint64_t (*progress_ns)(struct voter *v);              /* last sign of life */
  int (*quarantined)(struct voter *v);                   /* in restart quarantine now */
  void (*defer_release)(struct voter *v, const char *cmd, size_t len); /* replay once up */
  void (*warn)(struct voter *v, const char *what, const char *detail); /* rate-limited log */
  /* ---- life ---- */
  void (*start)(struct voter *v); /* first connection attempt(s); STARTED when over */
  /* The deadline timer, before the rounds' deadlines are judged: writes
   * what waits unwritten and reads replies already on the sockets. */
  void (*catch_up)(struct voter *v);
  /* After the rounds' deadlines: reads again, drops hung connections;
   * returns when replays would be judged hung (0: none owed). */
  uint64_t (*tick)(struct voter *v);
  unsigned (*releases_owed)(const struct voter *v); /* queued, in flight or kept */
  int (*owes_releases)(const struct voter *v);      /* close waits while it does */
  void (*abandon)(struct voter *v);                 /* close out of time: drop for good */
  void (*shutdown)(struct voter *v);                /* CLOSED once its handles are */
  void (*free)(struct voter *v);                    /* after CLOSED (or never started) */
  /* ---- duplicates (voters.c judges them across every kind) ---- */
  /* The servers the voter uses now: k < servers(v) names the k-th place, and
   * server(v, k) its node while connected (handshake over), else NULL.  A
   * standalone or Sentinel voter has one (its master); a cluster voter one
   * per primary it has connected to. */
  unsigned (*servers)(const struct voter *v);
  const node_t *(*server)(const struct voter *v, unsigned k);
  /* A kind of many servers only (NULL for one-server kinds, whose verdict
   * is voter_t.dup_of): voters.c's verdict on its k-th server: the
   * lower-numbered voter that uses the same server (dup_of, -1: none), any
   * other voter that does (other: dup_of if set, else a higher-numbered
   * one, or -1), and why (of `other`).  An acquisition is not written late
   * (after a redirection, or parked for a connection) to a server `other`
   * uses: its answer may count there in the same round. */
  void (*server_dup)(struct voter *v, unsigned k, int dup_of, int other, const char *why);
  /* With server_dup: 1 when req is a duplicate: sent, or before it is sent
   * (req->node NULL: the primary of req->slot, then named in req->node for
   * the vote's detail), at a primary a lower-numbered voter uses; held back
   * unsent (req->node set, req->sent_ns 0) at one any other voter uses. */
  int (*dup_for)(struct voter *v, node_req_t *req);
  /* ---- votes book, logs ---- */
  /* The detail of a vote `why` (WHY_DOWN, WHY_BUSY) for redlock_last_votes,
   * "" when none; under the env mutex, any thread.  req: the vote's request
   * (a kind of many connections names the one it went to), or NULL. */
  void (*why)(const struct voter *v, int why, const node_req_t *req, char *buf, size_t size);
  /* 1 when why gives "" for every why but WHY_DOWN, WHY_BUSY, WHY_UNACKED
   * and WHY_QUARANTINED: voters_why then answers the others (most votes)
   * without the call.  0: why is asked for every vote. */
  uint8_t why_trouble_only;
  const char *(*label)(const struct voter *v); /* "host:port", for logs and stats */
  /* ---- release notifications (optional; NULL: the voter's own node) ---- */
  /* The node whose connection the voter's release subscriber follows, asked
   * before each of its connection attempts (loop). */
  const node_t *(*sub_node)(const struct voter *v);
  /* Whether releases are announced on shard channels (SPUBLISH; a cluster
   * of Redis >= 7.0): 1, *node set to the node whose server holds `slot`
   * (the channel's; started if it was not), or NULL while none is known;
   * 0 (and NULL: no op): plain channels, followed at sub_node. */
  int (*sub_shard)(const struct voter *v, int slot, const node_t **node);
  /* A shard subscription got an error reply (a MOVED: the slot went
   * elsewhere), len bytes; optional. */
  void (*sub_refused)(struct voter *v, const char *error, size_t len);
} voter_ops_t;

/* The part every kind embeds first. */
typedef struct voter {
  const voter_ops_t *ops; /* const: its kind */
  unsigned index;         /* const: master `index` of the rounds */
  /* const, set by voters.c before start: where the kind reports */
  void (*report)(void *arg, struct voter *v, const voter_news_t *news);
  void *report_arg;
  /* voters.c (loop): one server listed twice.  dup_of: the lower-numbered
   * voter that uses the server this one-server voter uses, or -1: while >= 0
   * it is not a voter.  dup_why: the last such finding (read under the env
   * mutex by redlock_last_votes).  dup_some: a kind of many servers has a
   * duplicate among them (its server_dup): each request is judged by the
   * server it goes to (dup_for).  dup_warned: bit i, logged once. */
  int dup_of;
  uint8_t dup_some;
  char dup_why[VOTER_WHY_LEN];
  uint64_t dup_warned;
} voter_t;

/* Sets the base fields (no duplicate); voters.c sets report. */
static inline void voter_base_init(voter_t *v, const voter_ops_t *ops, unsigned index) {
  v->ops = ops;
  v->index = index;
  v->report = NULL;
  v->report_arg = NULL;
  v->dup_of = -1;
  v->dup_some = 0;
  v->dup_why[0] = '\0';
  v->dup_warned = 0;
}
/* A kind's report, up to voters.c. */
static inline void voter_report(voter_t *v, const voter_news_t *news) {
  v->report(v->report_arg, v, news);
}

#endif
