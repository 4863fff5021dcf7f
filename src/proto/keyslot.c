/* keyslot.c: a key's cluster hash slot (see keyslot.h), as the Redis
 * Cluster specification computes it. */
#include "proto/keyslot.h"

#include <stdint.h>
#include <string.h>

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, bit by bit; a
 * key is hashed once per round that names one, so no table is kept. */
static uint16_t crc16(const char *buf, size_t len) {
  uint16_t crc = 0;
  for (size_t i = 0; i < len; i++) {
    crc ^= (uint16_t)((uint16_t)(unsigned char)buf[i] << 8);
    for (int bit = 0; bit < 8; bit++)
      crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
  }
  return crc;
}

int keyslot(const char *key, size_t len) {
  const char *open = memchr(key, '{', len);
  if (open != NULL) {
    size_t start = (size_t)(open - key) + 1;
    const char *close = memchr(key + start, '}', len - start);
    if (close != NULL && close > key + start) /* a tag of at least one byte */
      return crc16(key + start, (size_t)(close - (key + start))) & (KEYSLOT_COUNT - 1);
  }
  return crc16(key, len) & (KEYSLOT_COUNT - 1);
}
