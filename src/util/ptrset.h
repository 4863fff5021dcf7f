/* ptrset.h: a set of pointers (open addressing), used as the registry of live
 * lock handles so that a stale or foreign handle is refused with EINVAL
 * without being dereferenced. */
#ifndef REDLOCK_PTRSET_H
#define REDLOCK_PTRSET_H

#include <stddef.h>

#include "util/status.h"

typedef struct {
  const void **slots; /* NULL = empty; no tombstones (removal shifts the run back) */
  size_t cap;         /* power of two, or 0 */
  size_t used;        /* live entries */
} ptrset_t;

void ptrset_init(ptrset_t *set);
void ptrset_free(ptrset_t *set);
/* ST_OK; ST_EINVAL when p is NULL; ST_ENOMEM when out of memory.  Adding a
 * present pointer is a no-op. */
status_t ptrset_add(ptrset_t *set, const void *p);
int ptrset_contains(const ptrset_t *set, const void *p);
/* 1 when p was present and is now removed, 0 when absent. */
int ptrset_remove(ptrset_t *set, const void *p);

#endif
