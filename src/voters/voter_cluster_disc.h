/* voter_cluster_disc.h: the cluster voter's slot map discovery: a link
 * (link.c) to the URI's seeds, one at a time and on to the next after a
 * failure (any one is enough), that asks `CLUSTER SHARDS`, or `CLUSTER
 * SLOTS` on a server that does not know it, and reads the answer into a
 * cluster_map_t (cluster_map.h).  It asks when told to, whenever the link
 * (re)connects, and every VOTER_CLUSTER_REFRESH_MS; never sooner than
 * VOTER_CLUSTER_MAP_SPACING_MS after the last map read.
 *
 * Kept apart from the voter (voter_cluster.c) so that the seeds' link and
 * the questions' timing are one job, which knows nothing of the primaries
 * or of the requests: what it finds goes up through the report function its
 * owner hands it (a map read, every seed failing, a TLS failure, the link
 * closed).  Everything runs on the loop thread. */
#ifndef REDLOCK_VOTER_CLUSTER_DISC_H
#define REDLOCK_VOTER_CLUSTER_DISC_H

#include <stddef.h>
#include <stdint.h>

#include "conn/link.h"
#include "proto/cluster_map.h"
#include "voters/node.h"
#include "voters/voter.h"

#define VOTER_CLUSTER_REFRESH_MS 10000 /* the slot map is asked again this often */
/* The map is read at most this often: a question asked sooner after the
 * last map (a MOVED, a CLUSTERDOWN, a primary failing, a slot without a
 * primary) waits for it, and every question asked meanwhile is answered by
 * that one read.  Redirections between nodes that disagree (a MOVED loop)
 * re-read the map at most five times a second. */
#define VOTER_CLUSTER_MAP_SPACING_MS 200
#define VOTER_CLUSTER_LABEL_LEN (CLUSTER_HOST_LEN + 8) /* "host:port", "[v6]:port" */

/* What the discovery tells its owner (voter_cluster_disc_cfg_t.report). */
typedef enum {
  VOTER_CLUSTER_DISC_MAP = 1,     /* a slot map was read: map (the owner takes it over) */
  VOTER_CLUSTER_DISC_NO_SEED,     /* every seed failed in a row: why says how */
  VOTER_CLUSTER_DISC_TLS_FAILURE, /* the TLS set-up of an attempt failed */
  VOTER_CLUSTER_DISC_CLOSED,      /* after shutdown: the link is closed */
} voter_cluster_disc_event_t;

typedef void (*voter_cluster_disc_fn)(void *arg, voter_cluster_disc_event_t ev, cluster_map_t *map,
                                      const char *why);

/* Set by the owner at init; the pointers are the owner's and outlive the
 * discovery. */
typedef struct voter_cluster_disc_cfg {
  const node_addr_t *uri; /* the seeds, credentials and TLS; its label names the cluster */
  const node_env_t *env;  /* the clock, the log, the connect and request timeouts */
  const int *closing;     /* the owner is closing: nothing more is asked */
  /* When the owner last applied a map: the asks for an uncovered slot are
   * spaced from there. */
  const uint64_t *map_ns;
  voter_cluster_disc_fn report;
  void *arg;
} voter_cluster_disc_cfg_t;

typedef struct voter_cluster_disc {
  voter_cluster_disc_cfg_t cfg;
  link_t link;      /* to the seed it is at */
  node_addr_t addr; /* the link's: that seed, the URI's credentials and TLS, no SELECT */
  char label[VOTER_CLUSTER_LABEL_LEN];
  unsigned at;                  /* the seed it is at */
  int asking;                   /* a map is wanted: asked when the link is up */
  int ask_sent;                 /* the question is out on the current connection */
  int ask_again;                /* asked for again meanwhile */
  int use_slots;                /* the seeds do not know CLUSTER SHARDS */
  unsigned ask_tries;           /* seeds that failed in a row */
  char ask_errs[VOTER_WHY_LEN]; /* "H:P: why; ..." of those */
  char fail_text[VOTER_WHY_LEN];
} voter_cluster_disc_t;

/* "host:port", "[v6]:port". */
void voter_cluster_host_port(char *buf, size_t size, const char *host, int port);

/* Points d at the first seed (cfg->uri has one at least); nothing is asked
 * before voter_cluster_disc_start. */
void voter_cluster_disc_init(voter_cluster_disc_t *d, const voter_cluster_disc_cfg_t *cfg);
/* Attaches the link to the loop and asks for a map: ST_OK, or the
 * attach's failure (nothing is asked then). */
status_t voter_cluster_disc_start(voter_cluster_disc_t *d, const link_io_t *io);
/* A map is wanted (news that the one in use may be stale): asked now, or as
 * soon as the link is up, or again after an answer on its way; in each case
 * no sooner than VOTER_CLUSTER_MAP_SPACING_MS after the last map read. */
void voter_cluster_disc_ask(voter_cluster_disc_t *d);
/* A request found no primary for its slot: asked, spaced as any question. */
void voter_cluster_disc_ask_uncovered(voter_cluster_disc_t *d);
void voter_cluster_disc_abandon(voter_cluster_disc_t *d);
/* Closes the link: VOTER_CLUSTER_DISC_CLOSED follows. */
void voter_cluster_disc_shutdown(voter_cluster_disc_t *d);

#endif
