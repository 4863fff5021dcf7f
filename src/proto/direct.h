/* direct.h: fenced locks on a master that runs no scripts (caps.h), as
 * transactions: what their EXEC replies say.  Pure functions, like reply.h.
 *
 * Acquisition (DIRECT_TX_FENCED_ACQUIRE), one key K, counter C (the
 * scripts' fence counter, a string), floor F (a sorted set whose member
 * DIRECT_FLOOR_MEMBER has the highest token committed here):
 *   MULTI; SET K V NX PX ttl; GET C; ZSCORE F m; TIME; EXEC
 * yes: the SET took, and the master's token is max(C + 1, F + 1, TIME in
 * microseconds), as acquire_fenced.lua does.
 * Commit (DIRECT_TX_FENCE_COMMIT) of the granted token T:
 *   MULTI; ZADD F GT T m; SET K V IFEQ V KEEPTTL; EXEC
 * yes (1): K still holds V; the floor was raised to T either way (raising
 * is always safe), atomically with that check, as fence_commit.lua does.
 * ZADD GT raises without reading, so one command serves every master,
 * whatever its counter: docs/safety.md proves the tokens quorum-monotonic. */
#ifndef REDLOCK_DIRECT_H
#define REDLOCK_DIRECT_H

#include <stdint.h>

#include "proto/reply.h"

#define DIRECT_FLOOR_SUFFIX ":floor" /* F = C + this */
#define DIRECT_FLOOR_MEMBER "token"

typedef enum {
  DIRECT_TX_NONE = 0,
  DIRECT_TX_FENCED_ACQUIRE,
  DIRECT_TX_FENCE_COMMIT,
} direct_tx_t;

/* The vote an EXEC reply of transaction `tx` is: REPLY_YES with *integer
 * the token (an acquisition) or 1 (a commit); REPLY_REFUSED (SET refused,
 * or the key no longer ours: *integer 0); REPLY_ERROR (an error reply:
 * EXECABORT, or a queued command's error); REPLY_UNEXPECTED otherwise (a
 * nil EXEC too: no key was WATCHed, so it never is). */
reply_verdict_t direct_tx_classify(int tx, const redisReply *exec, int64_t *integer);
/* The error an EXEC reply carries (its own, or its first queued command's),
 * NULL when none. */
const char *direct_tx_error(const redisReply *exec);

#endif
