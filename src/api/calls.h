/* calls.h: the argument checks every public call shares (calls.c), so that
 * a resource, a primitive's name and an election's name are judged alike. */
#ifndef REDLOCK_CALLS_H
#define REDLOCK_CALLS_H

#include <stdint.h>

#include "redlock.h"

/* A resource or name: not NULL, 1 to REDLOCK_MAX_RESOURCE_LEN bytes.  0 or
 * REDLOCK_EINVAL. */
int calls_check_name(const char *name);
/* A ttl: 1 ms to the client's max TTL.  0 or REDLOCK_EINVAL. */
int calls_check_ttl(const redlock_t *client, uint32_t ttl_ms);

#endif
