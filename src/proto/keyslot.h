/* keyslot.h: a key's Redis Cluster hash slot: CRC16 (XMODEM) of the key, or
 * of its hash tag (the bytes between the first '{' and the next '}', when
 * not empty), modulo 16384.  What a voter of many connections (a cluster)
 * routes a request by. */
#ifndef REDLOCK_KEYSLOT_H
#define REDLOCK_KEYSLOT_H

#include <stddef.h>

#define KEYSLOT_COUNT 16384

/* 0 .. KEYSLOT_COUNT - 1. */
int keyslot(const char *key, size_t len);

#endif
