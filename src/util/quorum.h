/* quorum.h: the pure arithmetic of Redlock: quorum size, deciding a round from
 * its vote counts, validity and drift, and retry jitter.
 * No I/O, no clocks, no allocation: every function here is unit-tested. */
#ifndef REDLOCK_QUORUM_H
#define REDLOCK_QUORUM_H

#include <stdint.h>

/* How a round stands after a vote.  LOST_HELD: a quorum answered but too few
 * said yes (someone else holds the key, or our value is gone).  LOST_NOQUORUM:
 * fewer than a quorum answered and the missing masters cannot change that. */
typedef enum {
  QUORUM_PENDING = 0,
  QUORUM_WON,
  QUORUM_LOST_HELD,
  QUORUM_LOST_NOQUORUM,
} quorum_outcome_t;

unsigned quorum_size(unsigned n_nodes);

/* yes: masters that did what we asked; no: masters that answered but refused
 * (key held, value absent); failed: down, timed out, error replies and
 * quarantined masters.  The rest are still pending.  A round is WON as soon as
 * a quorum said yes.  It is lost when the pending masters can no longer make
 * a quorum of yes; the kind of loss is settled as soon as it is certain:
 * HELD once a quorum answered, NOQUORUM once a quorum can no longer answer. */
quorum_outcome_t quorum_decide(unsigned n_nodes, unsigned yes, unsigned no, unsigned failed);

/* drift = ttl * factor + 2 ms, in nanoseconds. */
int64_t quorum_drift_ns(uint32_t ttl_ms, double drift_factor);

/* Validity is reported in whole milliseconds (redlock_lock_validity_ms), so
 * less than one left is none: such a grant would read 0, i.e. expired. */
#define QUORUM_MIN_VALIDITY_NS 1000000

/* validity = ttl - elapsed - drift, in nanoseconds (may be <= 0). */
int64_t quorum_validity_ns(uint32_t ttl_ms, uint64_t elapsed_ns, double drift_factor);

/* Retry delay: delay_ms + (random32 % (jitter_ms + 1)). */
uint64_t quorum_retry_delay_ms(uint32_t delay_ms, uint32_t jitter_ms, uint32_t random32);

/* When a watch renews (lock.c).  Nominally when a third of the ttl is left;
 * two adjustments, both earlier, never later, so safety is unchanged:
 * - a random `early_ms`, drawn by the caller in [0, quorum_watch_spread_ms],
 *   so locks taken in a burst do not renew in a burst for ever: each renewal
 *   restarts its lock's period from its own (jittered) time;
 * - the due time is rounded down to a multiple of quorum_watch_tick_ms in
 *   loop time (`now_ms`, uv_now), so renewals due close together expire in
 *   the same timer pass and share a loop turn and one write per master, where
 *   otherwise each costs its own wake-up (docs/performance.md).
 * Returns the delay from now_ms in ms, at least 1; 0 when a third of the ttl
 * is already gone (the caller's retry schedule applies). */
uint64_t quorum_watch_delay_ms(int64_t validity_ms, uint32_t ttl_ms, uint64_t now_ms,
                               uint32_t early_ms);
/* The renewal tick: ttl / 30 (a tenth of the third that is left) capped at
 * QUORUM_WATCH_TICK_MAX_MS, at least 1. */
uint32_t quorum_watch_tick_ms(uint32_t ttl_ms);
/* The bound of early_ms: ttl / 10 capped at QUORUM_WATCH_SPREAD_MAX_MS. */
uint32_t quorum_watch_spread_ms(uint32_t ttl_ms);
#define QUORUM_WATCH_TICK_MAX_MS 100
#define QUORUM_WATCH_SPREAD_MAX_MS 2000

#endif
