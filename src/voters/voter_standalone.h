/* voter_standalone.h: the `standalone` voter kind: one Redis master, one
 * connection (node.c).  A thin adapter: each op is node.c's, and the node's
 * reports (node_env_t.report) become the voter's (voter_news_t). */
#ifndef REDLOCK_VOTER_STANDALONE_H
#define REDLOCK_VOTER_STANDALONE_H

#include "voters/node.h"
#include "voters/voter.h"

typedef struct voter_standalone {
  voter_t base; /* first: the ops get it */
  node_t *node; /* const: its master (voters.c's nodes[index], node_init'ed) */
} voter_standalone_t;

extern const voter_ops_t voter_standalone_ops;

/* Makes s the voter of `node` (index: node->index). */
void voter_standalone_init(voter_standalone_t *s, node_t *node);
/* node_env_t.report of the standalone voters: arg is the array of
 * voter_standalone_t, indexed by node->index. */
void voter_standalone_on_node(void *arg, node_t *node, node_event_t ev, const char *what,
                              const char *detail);

#endif
