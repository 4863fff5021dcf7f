/* transport.h: the nodes as the rounds' transport.  round.c reaches masters
 * only through a round_transport_t; this one maps master i to node i of an
 * array (node.c).  The unit tests plug in a fake one instead. */
#ifndef REDLOCK_TRANSPORT_H
#define REDLOCK_TRANSPORT_H

#include "node.h"
#include "round.h"

/* Its argument (round_env_t.transport_arg) is the node_t array. */
extern const round_transport_t transport_nodes;

#endif
