/* sha1.h: a small SHA-1 (FIPS 180-1) for test programs: the hostile master
 * answers SCRIPT LOAD with the digest the client checks, and test_scripts
 * checks the embedded digests.  Header-only, plain libc; not for security. */
#ifndef REDLOCK_TEST_SHA1_H
#define REDLOCK_TEST_SHA1_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  uint32_t h[5];
  uint64_t bytes;
  unsigned char block[64];
  size_t used;
} sha1_t;

static inline uint32_t sha1_rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static inline void sha1_block(sha1_t *s, const unsigned char *p) {
  uint32_t w[80];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
           (uint32_t)p[4 * i + 3];
  for (int i = 16; i < 80; i++)
    w[i] = sha1_rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
  for (int i = 0; i < 80; i++) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5A827999u;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ED9EBA1u;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8F1BBCDCu;
    } else {
      f = b ^ c ^ d;
      k = 0xCA62C1D6u;
    }
    uint32_t t = sha1_rol(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = sha1_rol(b, 30);
    b = a;
    a = t;
  }
  s->h[0] += a;
  s->h[1] += b;
  s->h[2] += c;
  s->h[3] += d;
  s->h[4] += e;
}

static inline void sha1_update(sha1_t *s, const unsigned char *p, size_t len) {
  s->bytes += len;
  while (len > 0) {
    size_t n = 64 - s->used < len ? 64 - s->used : len;
    memcpy(s->block + s->used, p, n);
    s->used += n;
    p += n;
    len -= n;
    if (s->used == 64) {
      sha1_block(s, s->block);
      s->used = 0;
    }
  }
}

static inline void sha1_hex(const void *data, size_t len, char out[41]) {
  sha1_t s = {{0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u}, 0, {0}, 0};
  sha1_update(&s, data, len);
  uint64_t bits = s.bytes * 8;
  unsigned char pad = 0x80;
  sha1_update(&s, &pad, 1);
  pad = 0;
  while (s.used != 56)
    sha1_update(&s, &pad, 1);
  unsigned char len_be[8];
  for (int i = 0; i < 8; i++)
    len_be[i] = (unsigned char)(bits >> (56 - 8 * i));
  sha1_update(&s, len_be, 8);
  for (int i = 0; i < 5; i++)
    snprintf(out + 8 * i, 9, "%08x", s.h[i]);
}

#endif
