/* random.c: kernel randomness for lock values, xorshift for jitter. */
#define _GNU_SOURCE
#include "util/random.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "util/status.h"

status_t random_bytes(void *buf, size_t len) {
  unsigned char *p = buf;
  while (len > 0) {
    ssize_t got = getrandom(p, len, 0);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return ST_EIO;
    }
    p += got;
    len -= (size_t)got;
  }
  return ST_OK;
}

static void to_hex(const unsigned char raw[RANDOM_VALUE_BYTES], char *out) {
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < RANDOM_VALUE_BYTES; i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[RANDOM_VALUE_LEN] = '\0';
}

status_t random_lock_value(char *out) {
  unsigned char raw[RANDOM_VALUE_BYTES];
  status_t st = random_bytes(raw, sizeof raw);
  if (st != ST_OK)
    return st;
  to_hex(raw, out);
  return ST_OK;
}

status_t random_pool_lock_value(random_pool_t *pool, char *out) {
  if (pool->left < RANDOM_VALUE_BYTES) {
    status_t st = random_bytes(pool->bytes, sizeof pool->bytes);
    if (st != ST_OK)
      return st;
    pool->left = sizeof pool->bytes;
  }
  pool->left -= RANDOM_VALUE_BYTES;
  unsigned char *raw = pool->bytes + pool->left;
  to_hex(raw, out);
  memset(raw, 0, RANDOM_VALUE_BYTES); /* used once: not kept in memory */
  return ST_OK;
}

void jitter_rng_seed(jitter_rng_t *rng, uint64_t seed) {
  rng->state = seed != 0 ? seed : 0x9e3779b97f4a7c15u;
}

uint32_t jitter_rng_next(jitter_rng_t *rng) {
  uint64_t x = rng->state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  rng->state = x;
  return (uint32_t)((x * 0x2545f4914f6cdd1du) >> 32);
}
