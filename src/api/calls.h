/* calls.h: the argument checks every public call shares (calls.c), so that
 * a resource, a primitive's name and an election's name are judged alike. */
#ifndef REDLOCK_CALLS_H
#define REDLOCK_CALLS_H

#include <stdint.h>

#include "redlock.h"
#include "util/status.h"

/* A resource or name: not NULL, 1 to REDLOCK_MAX_RESOURCE_LEN bytes.  ST_OK
 * or ST_EINVAL. */
status_t calls_check_name(const char *name);
/* As calls_check_name, and key prefix + name is not one of the library's
 * own keys (keyname_reserved; mutex: name is a lock key, a resource or an
 * election's name, not a semaphore's or read-write lock's).  A refused name
 * is logged at WARN with why.  ST_OK or ST_EINVAL. */
status_t calls_check_key(const redlock_t *client, const char *name, int mutex);
/* A ttl: 1 ms to the client's max TTL.  ST_OK or ST_EINVAL; a refused ttl
 * is logged at WARN with the limit and how to raise it. */
status_t calls_check_ttl(const redlock_t *client, uint32_t ttl_ms);

#endif
