/* random.h: lock values from the kernel CSPRNG, and a cheap per-client
 * generator for jitter (which needs no secrecy). */
#ifndef REDLOCK_RANDOM_H
#define REDLOCK_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#define RANDOM_VALUE_BYTES 16                     /* 128 bits */
#define RANDOM_VALUE_LEN (RANDOM_VALUE_BYTES * 2) /* as hex */

/* Fills out[RANDOM_VALUE_LEN + 1] with 128 bits from getrandom() as lowercase
 * hex.  Returns 0 or a REDLOCK_E* code. */
int random_lock_value(char *out);

/* Fills buf with bytes from getrandom(); 0 or REDLOCK_EIO. */
int random_bytes(void *buf, size_t len);

/* xorshift64* state for jitter; seed with random_bytes. */
typedef struct {
  uint64_t state;
} jitter_rng_t;

void jitter_rng_seed(jitter_rng_t *rng, uint64_t seed);
uint32_t jitter_rng_next(jitter_rng_t *rng);

#endif
