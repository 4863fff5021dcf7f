/* round.h: one fan-out round.  A command is formatted once and the same bytes
 * go to every master at once; replies are counted as votes and the round is
 * decided (quorum_decide) as soon as the outcome is certain, so a slow or hung
 * master never delays a decision the others already made.  Votes that have
 * not arrived by the request deadline count as failed.  The round lives on,
 * refcounted, until every reply or NULL (teardown) has come back, so late
 * replies are harmless. */
#ifndef REDLOCK_ROUND_H
#define REDLOCK_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "list.h"
#include "node.h"
#include "quorum.h"
#include "reply.h"
#include "scripts.h"

struct redlock;
struct round;

typedef enum {
  VOTE_PENDING = 0,
  VOTE_YES,
  VOTE_NO,
  VOTE_FAILED,
} vote_state_t;

/* Why a vote came out as it did, for logs and redlock_last_votes(). */
typedef enum {
  WHY_NONE = 0,
  WHY_OK,
  WHY_REFUSED, /* nil / 0: key held by another, or our value absent */
  WHY_DOWN,    /* not connected */
  WHY_BUSY,    /* too many requests in flight */
  WHY_TIMEOUT,
  WHY_DISCONNECTED, /* connection lost before the reply */
  WHY_ERROR,        /* error reply (-READONLY, -OOM, ...) */
  WHY_QUARANTINED,
  WHY_BADREPLY,
} vote_why_t;

typedef struct vote {
  node_req_t req; /* this vote's request to its master */
  struct round *round;
  uint8_t state;  /* vote_state_t */
  uint8_t why;    /* vote_why_t */
  uint8_t resent; /* NOSCRIPT -> EVAL already tried */
  int64_t integer; /* integer reply, when there was one */
} vote_t;

/* Called once, when the round is decided.  The round stays valid during the
 * call; do not keep it afterwards. */
typedef void (*round_decided_fn)(struct round *round, quorum_outcome_t outcome, void *ctx);

typedef struct round {
  struct redlock *client;
  list_node_t pending_link; /* client's deadline FIFO, while votes are pending */
  uint64_t started_ns;
  uint64_t deadline_ns;
  uint64_t decided_ns;
  char *cmd; /* formatted once, in the round's allocation; the same bytes go to every master */
  size_t cmd_len;
  const script_t *script; /* for the NOSCRIPT -> EVAL retry; NULL for plain commands */
  char *eval_cmd;         /* built on the first NOSCRIPT */
  size_t eval_cmd_len;
  int64_t expect_integer; /* > 0: yes = this integer; ROUND_EXPECT_* */
  int is_acquire;         /* quarantined masters' votes do not count */
  int is_release;         /* masters that may have missed it get it again later */
  uint64_t replay_mask;   /* release: only masters that may hold the key need that */
  unsigned refs;          /* replies outstanding + 1 until decided */
  unsigned votes_pending;
  unsigned yes, no, failed;
  quorum_outcome_t outcome;
  int decided;
  round_decided_fn on_decided;
  void *ctx;
  unsigned n_votes;
  vote_t votes[];
} round_t;

#define ROUND_EXPECT_OK REPLY_EXPECT_OK             /* yes = +OK (SET NX) */
#define ROUND_EXPECT_POSITIVE REPLY_EXPECT_POSITIVE /* yes = a fencing token */
#define ROUND_EXPECT_CODE REPLY_EXPECT_CODE         /* yes > 0; no = nil or a reason <= 0 */

/* Formats argv once into a new round.  A script round is EVALSHA (argv[1] is
 * the SHA).  NULL when out of memory. */
round_t *round_new(struct redlock *client, int argc, const char **argv, const size_t *argv_len,
                   const script_t *script, int64_t expect_integer, int is_acquire,
                   round_decided_fn on_decided, void *ctx);
/* Sends to every master and arms the deadline.  May decide (and call
 * on_decided) before it returns, e.g. when masters are down.  The caller must
 * not touch the round after this returns. */
void round_send(round_t *round);
/* The masters (bit i = master i) that may hold the key after an acquire
 * round: every vote but an explicit refusal or a command never sent. */
uint64_t round_set_mask(const round_t *round);

/* Client-wide deadline FIFO (all rounds share the request timeout, so
 * deadlines are in creation order and one timer serves them all). */
void round_deadlines_fire(struct redlock *client);

/* The name of a vote_why_t ("OK", "timeout", ...). */
const char *round_why_name(unsigned why);

#endif
