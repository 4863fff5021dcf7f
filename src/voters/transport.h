/* transport.h: what a round needs from the masters it fans out to, declared
 * here, in the layer that implements it: voters.c's voters_transport in the
 * library, tests/unit/fake_transport.h's in the engine's unit tests.  A round
 * (engine/round.c) only ever reaches a master through these calls, by its
 * index; it never sees a voter or a connection. */
#ifndef REDLOCK_TRANSPORT_H
#define REDLOCK_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"
#include "voters/node.h"

/* The masters, as a round sees them: master i is the i-th of the env. */
typedef struct round_transport {
  /* Sends req (cmd, len, fn, keep filled in) to master i: ST_OK, and req->fn
   * then runs exactly once (NULL reply when none came; req->sent_ns == 0 when
   * it was never written), or ST_DOWN / ST_BUSY / ST_ENOMEM (the voter's
   * own memory for it) and it never runs. */
  status_t (*send)(void *arg, unsigned master, node_req_t *req);
  /* 1 while req (sent to master i) waits unsent behind a full pipe. */
  int (*queued)(void *arg, unsigned master, const node_req_t *req);
  /* Takes back a queued request of master i: its fn will not run. */
  void (*cancel)(void *arg, unsigned master, node_req_t *req);
  /* When master i last showed progress (a reply, or the first send after
   * being idle): a release waits while its master keeps answering. */
  uint64_t (*progress_ns)(void *arg, unsigned master);
  /* 1 while master i is in restart quarantine (asked for each yes or no to
   * an acquisition: cheap when it has none). */
  int (*quarantined)(void *arg, unsigned master);
  /* 1 while req on master i goes to a server that a lower-numbered master
   * uses too (one server listed under two names, or behind two voters):
   * not a vote.  It is sent only releases, and none of its answers count.
   * Asked at each send (req unsent: its slot says where it would go; a
   * voter may then set req->node to name that server) and each answer
   * (req->node: where it went); cheap unless some voter has many servers. */
  int (*duplicate)(void *arg, unsigned master, node_req_t *req);
  /* Keeps a release master i may have missed, to send again once it is up. */
  void (*defer_release)(void *arg, unsigned master, const char *cmd, size_t len);
  /* A per-request problem with master i, for the (rate-limited) log. */
  void (*warn)(void *arg, unsigned master, const char *what, const char *detail);
  /* Master i's label ("host:port"), for log lines. */
  const char *(*label)(void *arg, unsigned master);
} round_transport_t;

#endif
