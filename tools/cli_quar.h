/* cli_quar.h: whether the library counts each voter's vote now, as the
 * library itself judges it: which quarantine (restart, failover, another
 * server at this address) keeps a voter from voting, and when it ends.
 * The tool does not repeat the library's rules (uptime, replication ids,
 * what it saw before): it reads the verdict from a client's master events
 * (NODE_UP "quarantined", its detail "connected; in <quarantine> for
 * another N ms", NODE_DOWN, QUARANTINE_END).  `run` records the events of
 * its own client (the one that was refused); `status` and `doctor` open a
 * client with the same quarantine settings for the question alone
 * (cli_quar_ask). */
#ifndef REDLOCK_CLI_QUAR_H
#define REDLOCK_CLI_QUAR_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cli_common.h"

typedef struct {
  int seen;          /* a master event came */
  int quarantined;   /* its last NODE_UP said so (and no QUARANTINE_END since) */
  char name[64];     /* "restart quarantine", ... */
  uint64_t until_ns; /* CLOCK_MONOTONIC: when it ends */
} cli_quar_voter_t;

typedef struct {
  pthread_mutex_t mu; /* the events come on the client's loop thread */
  const nodes_t *nodes;
  cli_quar_voter_t *v; /* one per voter, in nodes' order */
  size_t n;
} cli_quar_t;

/* 0, or EXIT_INTERNAL (out of memory, with a message).  nodes must outlive q. */
int cli_quar_init(cli_quar_t *q, const nodes_t *nodes);
void cli_quar_free(cli_quar_t *q);
/* The event callback (redlock_options_set_event_cb, arg: the cli_quar_t). */
void cli_quar_event(const redlock_event_t *ev, void *arg);
/* When voter i is quarantined now: "restart quarantine: 41 s left" in buf
 * and 1; else 0 (buf ""). */
int cli_quar_why(cli_quar_t *q, size_t i, char *buf, size_t size);
/* The remaining time of voter i's quarantine in ms (0: none). */
uint64_t cli_quar_left_ms(cli_quar_t *q, size_t i);
/* Opens a client on conn's voters with these settings (max_ttl_ms 0: the
 * library's default), waits for every voter's first connection attempt
 * (bounded by connect_ms), records the events, closes it.  0 or an exit
 * status (with a message). */
int cli_quar_ask(cli_quar_t *q, conn_opts_t *conn, int quarantine, uint64_t max_ttl_ms,
                 uint64_t connect_ms);

#endif
