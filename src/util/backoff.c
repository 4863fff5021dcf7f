/* backoff.c: reconnect delays (see backoff.h). */
#include "util/backoff.h"

uint64_t backoff_ms(unsigned failures, uint32_t base_ms, uint32_t cap_ms, uint32_t random32) {
  uint64_t delay = base_ms;
  for (unsigned i = 0; i < failures && delay < cap_ms; i++)
    delay *= 2;
  if (delay > cap_ms)
    delay = cap_ms;
  uint64_t half = delay / 2;
  return delay - half + (half == 0 ? 0 : (uint64_t)random32 % (half + 1));
}
