/* why.h: why a vote came out as it did, for logs, redlock_last_votes() and the
 * per-master vote counters.  A leaf: round.c decides these, stats and the
 * client only read them. */
#ifndef REDLOCK_WHY_H
#define REDLOCK_WHY_H

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
  WHY_DUPLICATE, /* the same server as a lower-numbered master that is up: not a voter */
  WHY_UNACKED,   /* a yes whose durability ack (wait= / waitaof=) fell short */
  WHY_NOTSUP,    /* not sent: it needs a script and the master runs none (caps.h) */
} vote_why_t;
#define WHY_COUNT (WHY_NOTSUP + 1)

/* The name of a vote_why_t ("OK", "timeout", ...); "?" when out of range. */
const char *why_name(unsigned why);

#endif
