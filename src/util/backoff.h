/* backoff.h: how long to wait before trying a connection again.  A leaf:
 * pure arithmetic, shared by every connection (link.c) and by anything else
 * that retries with the same growth (an election's campaign). */
#ifndef REDLOCK_BACKOFF_H
#define REDLOCK_BACKOFF_H

#include <stdint.h>

/* Reconnect delay after `failures` consecutive failed attempts (0 = first
 * retry): min(cap, base * 2^failures), then "equal jitter": half of it fixed,
 * half random, so that clients restarting together spread out. */
uint64_t backoff_ms(unsigned failures, uint32_t base_ms, uint32_t cap_ms, uint32_t random32);

#endif
