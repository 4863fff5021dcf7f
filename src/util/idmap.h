/* idmap.h: a map from nonzero 64-bit ids to pointers (open addressing), used
 * as the registry of cancelable calls: redlock_cancel finds a call by the id
 * it was given at submission, and an id whose call has ended is simply
 * absent, so a late or stray cancel never touches freed memory. */
#ifndef REDLOCK_IDMAP_H
#define REDLOCK_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef struct {
  uint64_t id; /* 0 = empty; no tombstones (removal shifts the run back) */
  void *value;
} idmap_slot_t;

typedef struct {
  idmap_slot_t *slots;
  size_t cap;  /* power of two, or 0 */
  size_t used; /* live entries */
} idmap_t;

void idmap_init(idmap_t *map);
void idmap_free(idmap_t *map);
/* ST_OK; ST_EINVAL for id 0 or a NULL value; ST_ENOMEM when out of memory.
 * Putting a present id replaces its value. */
status_t idmap_put(idmap_t *map, uint64_t id, void *value);
/* The value of id, or NULL when absent. */
void *idmap_get(const idmap_t *map, uint64_t id);
/* The value id had (now removed), or NULL when absent. */
void *idmap_remove(idmap_t *map, uint64_t id);

#endif
