/* voter_sentinel.h: the `sentinel` voter kind: the master of a Sentinel
 * group (redis-sentinel://, rediss-sentinel://), followed through failovers,
 * as ONE voter (docs/deployments.md "Sentinel voters").
 *
 * The master is a node (node.h: its queue, acks, replays, hung detection,
 * quarantine), which this voter points wherever the sentinels say the master
 * is (node_retarget).  Besides it, two connections to the sentinels (link.c,
 * the sentinels' credentials, the URI's TLS), each to one sentinel at a time
 * and on to the next after a failure:
 *  - the query link asks `SENTINEL GET-MASTER-ADDR-BY-NAME name` and
 *    `SENTINEL MASTER name` (for since when the master is one: the failover
 *    quarantine's hint, docs/safety.md §5b): at start, when the failover
 *    news link (re)subscribes, on a +switch-master, and whenever the node
 *    goes down (a lost connection, a failed attempt, a handshake that finds
 *    no master) or answers -READONLY / -LOADING;
 *  - the events link is subscribed to +switch-master.
 * While no master is known the voter is down, and its `why` says so. */
#ifndef REDLOCK_VOTER_SENTINEL_H
#define REDLOCK_VOTER_SENTINEL_H

#include "conn/link.h"
#include "proto/sentinel_reply.h"
#include "voters/node.h"
#include "voters/voter.h"

#define VOTER_SENTINEL_LABEL_LEN (RESOLVE_ADDR_LEN + 8) /* "[v6]:port" of a sentinel */
#define VOTER_SENTINEL_MASTER_LEN (SENTINEL_HOST_LEN + 8)

typedef struct voter_sentinel {
  voter_t base;               /* first: the ops get it */
  node_t *node;               /* const: the master (voters.c's nodes[index], node_init'ed here) */
  const node_env_t *base_env; /* const: voters.c's, whose loop comes only before start */
  node_env_t env;             /* the node's: base_env, reporting to this voter */
  node_addr_t addr;           /* const: the URI (sentinels, master name, credentials) */
  /* The sentinel links and the sentinel each is at (an index into
   * addr.seeds; the link's address borrows that seed's strings). */
  link_t query, events;
  node_addr_t query_addr, events_addr;
  char query_label[VOTER_SENTINEL_LABEL_LEN], events_label[VOTER_SENTINEL_LABEL_LEN];
  unsigned query_at, events_at;
  /* The ask under way (loop thread). */
  int asking;                    /* an answer is wanted: the query link connects and asks */
  int ask_again;                 /* asked for again meanwhile: ask once more after the answer */
  int ask_sent;                  /* the question is out on the current connection */
  unsigned ask_tries;            /* sentinels that failed in this round of them */
  unsigned ask_unknown;          /* of those, the ones that know no such master */
  char ask_errs[VOTER_WHY_LEN];  /* "H:P: why; ..." of this round */
  char fail_text[VOTER_WHY_LEN]; /* why the current sentinel's answer failed */
  int fail_unknown;              /* ... because it knows no such master */
  sentinel_addr_t answer;        /* the address part of the current answer */
  char answer_host[SENTINEL_HOST_LEN];
  int answer_port;
  char last_cycle_why[VOTER_WHY_LEN]; /* logged at WARN once, then DEBUG */
  /* The master (loop thread). */
  int known;        /* a sentinel named one */
  int node_started; /* node_start ran */
  int retargeting;  /* node_retarget is running: its DOWN is ours */
  /* For redlock_last_votes (env mutex): the master "host:port" ("" while
   * none is known), and why none is. */
  char master_label[VOTER_SENTINEL_MASTER_LEN];
  char why[VOTER_WHY_LEN];
  /* Why the master a sentinel named last was not followed ("" when it
   * was): outside the allowed host patterns. */
  char refused[VOTER_WHY_LEN];
  int started_said; /* VOTER_EV_STARTED reported */
  int closing;      /* abandon or shutdown ran: ask nothing more */
  unsigned open;    /* after shutdown: the node and links not yet closed */
} voter_sentinel_t;

extern const voter_ops_t voter_sentinel_ops;

/* Makes the Sentinel voter of addr (copied) at index, whose master is node
 * (zeroed memory of voters.c's; node_init'ed here with this voter's own
 * env, a copy of base_env).  ST_OK, or ST_ENOMEM (*out may then be set:
 * its free op frees it). */
status_t voter_sentinel_new(voter_sentinel_t **out, const node_env_t *base_env, node_t *node,
                            unsigned index, const node_addr_t *addr);

#endif
