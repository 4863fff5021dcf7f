/* quorum.c: Redlock's arithmetic (see quorum.h). */
#include "util/quorum.h"

unsigned quorum_size(unsigned n_nodes) { return n_nodes / 2 + 1; }

quorum_outcome_t quorum_decide(unsigned n_nodes, unsigned yes, unsigned no, unsigned failed) {
  unsigned quorum = quorum_size(n_nodes);
  unsigned counted = yes + no + failed;
  unsigned pending = counted >= n_nodes ? 0 : n_nodes - counted;
  unsigned answered = yes + no;

  if (yes >= quorum)
    return QUORUM_WON;
  if (yes + pending >= quorum)
    return QUORUM_PENDING;
  if (answered >= quorum)
    return QUORUM_LOST_HELD;
  if (answered + pending < quorum)
    return QUORUM_LOST_NOQUORUM;
  /* Lost for sure, but whether because the key is held or because masters
   * are missing depends on replies still to come. */
  return QUORUM_PENDING;
}

int64_t quorum_drift_ns(uint32_t ttl_ms, double drift_factor) {
  return (int64_t)((double)ttl_ms * drift_factor * 1e6) + 2000000;
}

int64_t quorum_validity_ns(uint32_t ttl_ms, uint64_t elapsed_ns, double drift_factor) {
  int64_t ttl_ns = (int64_t)ttl_ms * 1000000;
  if (elapsed_ns > (uint64_t)INT64_MAX / 2)
    elapsed_ns = (uint64_t)INT64_MAX / 2;
  return ttl_ns - (int64_t)elapsed_ns - quorum_drift_ns(ttl_ms, drift_factor);
}

uint64_t quorum_retry_delay_ms(uint32_t delay_ms, uint32_t jitter_ms, uint32_t random32) {
  uint64_t jitter = jitter_ms == 0 ? 0 : (uint64_t)random32 % ((uint64_t)jitter_ms + 1);
  return (uint64_t)delay_ms + jitter;
}

uint32_t quorum_watch_tick_ms(uint32_t ttl_ms) {
  uint32_t tick = ttl_ms / 30;
  if (tick > QUORUM_WATCH_TICK_MAX_MS)
    tick = QUORUM_WATCH_TICK_MAX_MS;
  return tick > 0 ? tick : 1;
}

uint32_t quorum_watch_spread_ms(uint32_t ttl_ms) {
  uint32_t spread = ttl_ms / 10;
  return spread < QUORUM_WATCH_SPREAD_MAX_MS ? spread : QUORUM_WATCH_SPREAD_MAX_MS;
}

uint64_t quorum_watch_delay_ms(int64_t validity_ms, uint32_t ttl_ms, uint64_t now_ms,
                               uint32_t early_ms) {
  int64_t due = validity_ms - (int64_t)(ttl_ms / 3);
  if (due <= 0)
    return 0;
  uint32_t spread = quorum_watch_spread_ms(ttl_ms);
  due -= early_ms < spread ? early_ms : spread;
  uint64_t tick = quorum_watch_tick_ms(ttl_ms);
  uint64_t at = now_ms + (uint64_t)(due > 0 ? due : 0);
  at -= at % tick;
  return at > now_ms ? at - now_ms : 1;
}
