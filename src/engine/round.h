/* round.h: one fan-out round.  A command is formatted once and the same bytes
 * go to every master at once; replies are counted as votes and the round is
 * decided (quorum_decide) as soon as the outcome is certain, so a slow or hung
 * master never delays a decision the others already made.  Votes that have
 * not arrived by the request deadline count as failed.  The round lives on,
 * refcounted, until every reply or NULL (teardown) has come back, so late
 * replies are harmless.
 *
 * A round knows nothing above it and names no master: the masters are reached
 * through a transport (round_transport_t, voters/transport.h: the voters' in the library, a fake in
 * the unit tests), and what the owner wants to hear (arm the deadline timer,
 * a round settled, a caller's round decided) goes up through callbacks.  Both
 * are handed down once, in the round_env_t the owner keeps.
 *
 * What a decided round's votes were, as redlock_last_votes() tells them,
 * is kept here too (votes_book_t, at the end): the round's outcome and
 * each master's why, per calling thread. */
#ifndef REDLOCK_ROUND_H
#define REDLOCK_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "proto/reply.h"
#include "proto/scripts.h"
#include "redlock.h"
#include "util/list.h"
#include "util/log.h"
#include "util/pool.h"
#include "util/quorum.h"
#include "util/stats_core.h"
#include "util/status.h"
#include "util/timebase.h"
#include "util/why.h"
#include "voters/node.h"
#include "voters/transport.h"

struct round;

/* One per client: the rounds' surroundings and their deadline FIFO. */
typedef struct round_env {
  unsigned n_masters;
  uint64_t request_timeout_ns;
  const round_transport_t *transport;
  void *transport_arg;
  const log_sink_t *log;
  struct stats *stats;  /* NULL when stats and events are off */
  const timebase_t *tb; /* the clock (the owner's timebase) */
  /* The rounds' memory: the owner's pool, used on the loop thread only
   * (NULL: plain malloc).  A round is one variable-size block (votes and the
   * formatted command), so the pool serves it by size class. */
  pool_t *pool;
  /* 1 when no master routes by req->slot (every voter is one connection):
   * a round then sends slot -1 and does not hash its key, which costs more
   * than the rest of round_new.  0 (round_env_init's): hashed. */
  int skip_slots;
  /* The union of the masters' caps (caps.h) at their handshakes, the
   * nodes' (node_env_t.caps_seen); NULL: none. */
  const unsigned *caps_seen;
  /* Reported up (owner_arg is their first argument): */
  void (*arm_deadline)(void *owner_arg, uint64_t deadline_ns); /* the FIFO's head is due then */
  void (*settled)(
      void *owner_arg); /* a round's votes are all in, or it was freed: close may go on */
  void (*decided)(void *owner_arg, const struct round *round); /* a caller's round was decided */
  void *owner_arg;
  /* round.c's own */
  list_node_t pending;          /* deadline FIFO of rounds with votes pending */
  unsigned n_pending;           /* its length */
  const struct round *deciding; /* the round whose on_decided is running, else NULL */
} round_env_t;

/* Fills in what round.c owns (and skip_slots = 0); the caller sets the
 * rest (all of it). */
void round_env_init(round_env_t *env);
/* No round has a vote pending: close may go on. */
int round_env_idle(const round_env_t *env);
/* How many rounds have votes pending (close paces its releases by it). */
unsigned round_env_pending(const round_env_t *env);

typedef enum {
  VOTE_PENDING = 0,
  VOTE_YES,
  VOTE_NO,
  VOTE_FAILED,
} vote_state_t;

typedef struct vote {
  node_req_t req; /* this vote's request to its master */
  struct round *round;
  uint8_t state;   /* vote_state_t */
  uint8_t why;     /* vote_why_t */
  uint8_t resent;  /* NOSCRIPT -> EVAL already tried */
  int64_t integer; /* integer reply, when there was one */
} vote_t;

/* What a round is for. */
typedef enum {
  ROUND_PLAIN = 0, /* fence commit, ...: every answer counts */
  ROUND_ACQUIRE,   /* quarantined masters' votes do not count */
  ROUND_RELEASE,   /* masters that may have missed it get it again later */
  ROUND_EXTEND,    /* every answer counts, but a quarantined master's ROUND_REINSTALLED */
  ROUND_READ,      /* a read (redlock_inspect): decided once every master has answered or
                    * timed out, each reply shown to on_reply; no durability ack */
} round_kind_t;

/* An extension script's yes when it re-installed a record that was gone on
 * that master (1: every record was there and got the new ttl; 0: refused).
 * A re-install is an acquisition on that master, so from a master in restart
 * quarantine it does not count, as no acquisition does (docs/safety.md §5,
 * §8.3). */
#define ROUND_REINSTALLED 2

/* Called once, when the round is decided.  The round stays valid during the
 * call; do not keep it afterwards. */
typedef void (*round_decided_fn)(struct round *round, quorum_outcome_t outcome, void *ctx);
/* A reply of master `index`, before it counts as a vote (not a NOSCRIPT
 * the round resends); valid during the call only. */
typedef void (*round_reply_fn)(void *ctx, unsigned index, const redisReply *reply);

typedef struct round {
  round_env_t *env;
  list_node_t pending_link; /* client's deadline FIFO, while votes are pending */
  uint64_t started_ns;
  uint64_t deadline_ns;
  uint64_t decided_ns;
  char *cmd; /* formatted once, in the round's allocation; the same bytes go to every master */
  size_t cmd_len;
  /* cmd's other forms (node_forms_t), in the round's allocation, or NULL:
   * on a client with a cluster voter, a release's cmd announcing with
   * SPUBLISH (scripts.h) for the voters whose servers take it; once some
   * master has them (round_env_t.caps_seen), the script-free forms of a
   * release or extension (round_params_t.alt). */
  node_forms_t *forms;
  const script_t *script; /* for the NOSCRIPT -> EVAL retry; NULL for plain commands */
  char *eval_cmd;         /* built on the first NOSCRIPT */
  size_t eval_cmd_len;
  int64_t expect_integer; /* > 0: yes = this integer; ROUND_EXPECT_* */
  round_kind_t kind;
  uint64_t replay_mask; /* release: only masters that may hold the key need that */
  int slot;             /* the key's hash slot (round_params_t.key_arg), or -1 */
  unsigned refs;        /* replies outstanding + 1 until decided */
  unsigned votes_pending;
  unsigned yes, no, failed;
  quorum_outcome_t outcome;
  int decided;
  int nomem;        /* a vote failed for want of memory here, not through its master */
  unsigned notsup;  /* votes not sent: a script to a master that runs none (WHY_NOTSUP) */
  uint8_t tx_reply; /* round_alt_t's: how a NODE_FORM_TX vote's reply reads (direct.h) */
  round_decided_fn on_decided;
  round_reply_fn on_reply; /* NULL: none */
  void *ctx;
  uv_thread_t caller; /* with has_caller: the thread whose call waits on it (round_for_caller) */
  uint8_t has_caller;
  unsigned n_votes;
  vote_t votes[];
} round_t;

#define ROUND_EXPECT_OK REPLY_EXPECT_OK             /* yes = +OK (SET NX) */
#define ROUND_EXPECT_POSITIVE REPLY_EXPECT_POSITIVE /* yes = a fencing token */
#define ROUND_EXPECT_CODE REPLY_EXPECT_CODE         /* yes > 0; no = nil or a reason <= 0 */
#define ROUND_EXPECT_ANY REPLY_EXPECT_ANY           /* yes = any reply but an error */

/* An argv, as round_params_t takes it. */
typedef struct round_argv {
  int argc; /* 0: none */
  const char *const *argv;
  const size_t *len;
} round_argv_t;

/* The script-free forms of a round's command (node.h, node_forms_t), which
 * a master that has the commands runs in its place. */
#define ROUND_ALT_MAX_BEFORE 5 /* commands ahead of a form: MULTI and what it queues */
typedef struct round_alt {
  round_argv_t form[NODE_FORM_COUNT];        /* [NODE_FORM_SCRIPT] unused */
  round_argv_t before[ROUND_ALT_MAX_BEFORE]; /* node_forms_t.before */
  round_argv_t announce;                     /* a release's PUBLISH; its SPUBLISH twin is made */
  uint8_t nolua_only;                        /* node_forms_t's */
  uint8_t tx_reply;                          /* how NODE_FORM_TX's EXEC reply reads (direct.h) */
} round_alt_t;

typedef struct round_params {
  int argc;
  const char **argv;
  const size_t *argv_len;
  const script_t
      *script; /* EVALSHA (argv[1] is its SHA), for the NOSCRIPT -> EVAL retry; or NULL */
  int64_t expect_integer; /* > 0: yes = this integer; or ROUND_EXPECT_* */
  round_kind_t kind;
  uint64_t replay_mask; /* ROUND_RELEASE: the masters that may hold the key (bit i) */
  /* argv[key_arg] is the key the round is about: its hash slot goes with
   * every request (node_req_t.slot), for a voter that routes by it (a
   * cluster).  0: none (slot -1), which a one-connection voter never needs
   * (nor is it computed with round_env_t.skip_slots). */
  int key_arg;
  /* The command's script-free forms, or NULL; made only once some master
   * has such a command (round_env_t.caps_seen). */
  const round_alt_t *alt;
  round_decided_fn on_decided; /* NULL: nobody waits (a background release) */
  round_reply_fn on_reply;     /* NULL: the replies count as votes only */
  void *ctx;
} round_params_t;

/* What a round lost for want of a quorum means to its caller: ST_ENOMEM
 * when a vote failed for want of memory in this process (round_t.nomem);
 * ST_ENOTSUP when too many masters run no scripts for a quorum to run this
 * one, even had every other said yes (the votes say which: "unsupported");
 * else ST_ENOQUORUM. */
static inline status_t round_noquorum_status(const round_t *round) {
  if (round->nomem)
    return ST_ENOMEM;
  if (round->notsup > 0 && round->n_votes - round->notsup < quorum_size(round->n_votes))
    return ST_ENOTSUP;
  return ST_ENOQUORUM;
}

/* Formats argv once into a new round, in *out: ST_OK, or ST_ENOMEM (*out
 * NULL). */
status_t round_new(round_env_t *env, const round_params_t *params, round_t **out);
/* The round is made for a call of application thread `thread`: the owner's
 * `decided` hook finds it in round->caller (redlock_last_votes keeps each
 * thread's own).  Before round_send. */
void round_for_caller(round_t *round, const uv_thread_t *thread);
/* Sends to every master and arms the deadline.  May decide (and call
 * on_decided) before it returns, e.g. when masters are down.  The caller must
 * not touch the round after this returns. */
void round_send(round_t *round);
/* The masters (bit i = master i) that may hold the key after an acquire
 * round: every vote but an explicit refusal or a command never sent (down,
 * busy, unsupported). */
uint64_t round_set_mask(const round_t *round);

/* The owner's deadline timer fired: votes past their deadline fail as
 * timed out (a release's waits while its master answers).  Deadlines are in
 * creation order (all rounds share the request timeout), so one timer serves
 * the FIFO; arm_deadline is called for the new head.  The owner reads replies
 * already waiting on the sockets first, and judges hung masters after. */
void round_deadlines_fire(round_env_t *env);

/* ---- the votes of decided rounds ---------------------------------------------------------
 * What redlock_last_votes() reports, kept per calling thread.
 *
 * Each decided round a call waited on is recorded twice: as the client's
 * latest, and in the entry of the application thread that made the call
 * (when it came through the submit queue).  A thread then reads its own last
 * call's votes, not whatever a concurrent call decided since.  The
 * book keeps VOTES_THREADS threads; the least recently written entry is
 * reused.  All of it is guarded by the client's mutex (client.c). */

#define VOTES_THREADS 32

/* One decided round: outcome 0 = none yet (quorum_outcome_t otherwise). */
typedef struct votes_entry {
  int outcome;
  uint8_t *why; /* vote_why_t per master */
  /* per master: why it was down (WHY_DOWN), whose duplicate it is
   * (WHY_DUPLICATE), how full (WHY_BUSY), how long its quarantine has left
   * (WHY_QUARANTINED), why its ack fell short (WHY_UNACKED), or "" */
  char (*detail)[NODE_DOWN_WHY_LEN];
} votes_entry_t;

typedef struct votes_book {
  unsigned n_masters;
  votes_entry_t latest; /* the client's most recent */
  struct votes_slot {
    uv_thread_t thread;
    uint64_t written; /* 0 = unused; else the book's write count when last written */
    votes_entry_t entry;
  } slots[VOTES_THREADS];
  uint64_t writes;
} votes_book_t;

/* ST_OK or ST_ENOMEM (then votes_book_free is still safe). */
status_t votes_book_init(votes_book_t *book, unsigned n_masters);
void votes_book_free(votes_book_t *book);
/* Copies `latest` into the entry of `thread` (finding, or taking the least
 * recently written): after the caller has filled `latest`.  Out of memory:
 * the thread keeps no entry and reads the latest. */
void votes_book_copy_latest_to(votes_book_t *book, const uv_thread_t *thread);
/* The entry of `thread`, or NULL when it has none. */
const votes_entry_t *votes_book_find(const votes_book_t *book, const uv_thread_t *thread);
/* redlock_last_votes' text of `entry` into buf (size bytes, NUL-terminated
 * when size > 0; size 0: measures only, buf unused): "OUTCOME: LABEL=WHY
 * (DETAIL) ..." for masters 0 to n_masters - 1, each named by label(label_arg,
 * master).  Returns the length of the whole text, as snprintf does, or a
 * negative value if formatting fails. */
int votes_format(const votes_entry_t *entry, unsigned n_masters,
                 const char *(*label)(void *arg, unsigned master), void *label_arg, char *buf,
                 size_t size);

#endif
