/* pool.c: bounded free lists by size class (see pool.h). */
#include "util/pool.h"
#include "util/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MIN_SHIFT 6 /* the smallest class: 64 bytes */
#define POOL_OVERSIZE POOL_CLASSES

/* Before each block's bytes: its class, and while kept the next free block.
 * Aligned as malloc's blocks, so the bytes after it are too (16 bytes on
 * x86-64: max_align_t's alignment, not its size, which is 32). */
typedef struct header {
  _Alignas(max_align_t) struct header *next;
  size_t cls; /* 0 .. POOL_CLASSES - 1, or POOL_OVERSIZE (plain malloc) */
} header_t;
_Static_assert(sizeof(header_t) % _Alignof(max_align_t) == 0, "header keeps blocks aligned");

static size_t class_bytes(size_t cls) { return (size_t)1 << (cls + POOL_MIN_SHIFT); }

/* The smallest class that holds size bytes and the header, or POOL_OVERSIZE. */
static size_t class_of(size_t size) {
  if (size > class_bytes(POOL_CLASSES - 1) - sizeof(header_t))
    return POOL_OVERSIZE;
  size_t total = size + sizeof(header_t);
  size_t cls = 0;
  while (class_bytes(cls) < total)
    cls++;
  return cls;
}

static unsigned class_keep(size_t cls) {
  size_t by_budget = POOL_CLASS_BUDGET / class_bytes(cls);
  return by_budget < POOL_KEEP_MAX ? (unsigned)by_budget : POOL_KEEP_MAX;
}

void pool_init(pool_t *pool) { memset(pool, 0, sizeof *pool); }

void *pool_alloc(pool_t *pool, size_t size) {
  size_t cls = class_of(size);
  header_t *h;
  if (cls != POOL_OVERSIZE && pool != NULL && pool->head[cls] != NULL) {
    h = pool->head[cls];
    pool->head[cls] = h->next;
    pool->count[cls]--;
    POOL_UNPOISON(h + 1, class_bytes(cls) - sizeof *h);
    return h + 1;
  }
  h = rl_malloc(cls == POOL_OVERSIZE ? sizeof *h + size : class_bytes(cls));
  if (h == NULL)
    return NULL;
  h->cls = cls;
  h->next = NULL;
  return h + 1;
}

void pool_free(pool_t *pool, void *p) {
  if (p == NULL)
    return;
  header_t *h = (header_t *)p - 1;
  size_t cls = h->cls;
  if (cls == POOL_OVERSIZE || pool == NULL || pool->count[cls] >= class_keep(cls)) {
    rl_free(h);
    return;
  }
  POOL_POISON(p, class_bytes(cls) - sizeof *h);
  h->next = pool->head[cls];
  pool->head[cls] = h;
  pool->count[cls]++;
}

void pool_clear(pool_t *pool) {
  for (size_t cls = 0; cls < POOL_CLASSES; cls++) {
    while (pool->head[cls] != NULL) {
      header_t *h = pool->head[cls];
      pool->head[cls] = h->next;
      POOL_UNPOISON(h + 1, class_bytes(cls) - sizeof *h);
      rl_free(h);
    }
    pool->count[cls] = 0;
  }
}
