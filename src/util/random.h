/* random.h: lock values from the kernel CSPRNG, and a cheap per-client
 * generator for jitter (which needs no secrecy). */
#ifndef REDLOCK_RANDOM_H
#define REDLOCK_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define RANDOM_VALUE_BYTES 16                     /* 128 bits */
#define RANDOM_VALUE_LEN (RANDOM_VALUE_BYTES * 2) /* as hex */

/* Fills out[RANDOM_VALUE_LEN + 1] with 128 bits from getrandom() as lowercase
 * hex.  ST_OK or ST_EIO. */
status_t random_lock_value(char *out);

/* Kernel randomness fetched in blocks, for the lock values of one client's
 * loop: one getrandom() per RANDOM_POOL_VALUES values instead of one per
 * attempt (a system call was ~3 % of the client's CPU at C = 128).  The
 * bytes are the kernel CSPRNG's, each used once and wiped once used.  One
 * thread (the owner's loop); zero-initialise. */
#define RANDOM_POOL_VALUES 32
typedef struct {
  unsigned char bytes[RANDOM_POOL_VALUES * RANDOM_VALUE_BYTES];
  size_t left; /* unused bytes, at the start of `bytes` */
} random_pool_t;

/* random_lock_value from the pool (refilled when empty). */
status_t random_pool_lock_value(random_pool_t *pool, char *out);

/* Fills buf with bytes from getrandom(); ST_OK or ST_EIO. */
status_t random_bytes(void *buf, size_t len);

/* xorshift64* state for jitter; seed with random_bytes. */
typedef struct {
  uint64_t state;
} jitter_rng_t;

void jitter_rng_seed(jitter_rng_t *rng, uint64_t seed);
uint32_t jitter_rng_next(jitter_rng_t *rng);

#endif
