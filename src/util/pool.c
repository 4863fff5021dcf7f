/* pool.c: the library's free lists (see pool.h): blocks by size class, a
 * client's memory for calls, hiredis' reply objects. */
#include "util/pool.h"

#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

/* ---- blocks by size class ---- */

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

/* ---- a client's memory for calls ---- */

status_t callmem_init(callmem_t *mem, size_t handle_size) {
  memset(mem, 0, sizeof *mem);
  pool_init(&mem->pool);
  mem->handle_size = handle_size;
  return uv_mutex_init(&mem->mutex) == 0 ? ST_OK : ST_ENOMEM;
}

void callmem_free(callmem_t *mem) {
  pool_clear(&mem->pool);
  while (mem->count > 0) {
    POOL_UNPOISON(mem->handles[mem->head], mem->handle_size);
    rl_free(mem->handles[mem->head]);
    mem->head = (mem->head + 1) % CALLMEM_HANDLES_MAX;
    mem->count--;
  }
  uv_mutex_destroy(&mem->mutex);
}

void *callmem_alloc(callmem_t *mem, size_t size) {
  uv_mutex_lock(&mem->mutex);
  void *p = pool_alloc(&mem->pool, size);
  uv_mutex_unlock(&mem->mutex);
  return p;
}

void *callmem_calloc(callmem_t *mem, size_t size) {
  void *p = callmem_alloc(mem, size);
  if (p != NULL)
    memset(p, 0, size);
  return p;
}

void callmem_release(callmem_t *mem, void *p) {
  if (p == NULL)
    return;
  uv_mutex_lock(&mem->mutex);
  pool_free(&mem->pool, p);
  uv_mutex_unlock(&mem->mutex);
}

void *callmem_handle_new(callmem_t *mem, uint32_t *n) {
  void *handle = NULL;
  uv_mutex_lock(&mem->mutex);
  *n = mem->handles_made++;
  if (mem->count > CALLMEM_HANDLES_HELD) {
    handle = mem->handles[mem->head];
    mem->head = (mem->head + 1) % CALLMEM_HANDLES_MAX;
    mem->count--;
  }
  uv_mutex_unlock(&mem->mutex);
  if (handle == NULL)
    return rl_calloc(1, mem->handle_size);
  POOL_UNPOISON(handle, mem->handle_size);
  memset(handle, 0, mem->handle_size);
  return handle;
}

void callmem_handle_free(callmem_t *mem, void *handle) {
  if (handle == NULL)
    return;
  uv_mutex_lock(&mem->mutex);
  int kept = mem->count < CALLMEM_HANDLES_MAX;
  if (kept) {
    /* Poisoned while held back: a use of the stale handle is still reported. */
    POOL_POISON(handle, mem->handle_size);
    mem->handles[(mem->head + mem->count) % CALLMEM_HANDLES_MAX] = handle;
    mem->count++;
  }
  uv_mutex_unlock(&mem->mutex);
  if (!kept)
    rl_free(handle);
}

/* ---- hiredis' reply objects ---- */

typedef struct pooled_reply {
  redisReply reply;          /* first: the object hiredis and we see */
  struct pooled_reply *next; /* on the pool's free list */
  char str[REPLY_POOL_STR_MAX + 1];
} pooled_reply_t;

struct reply_pool {
  pooled_reply_t *free; /* LIFO of kept blocks */
  unsigned kept;
  unsigned live; /* blocks handed out, not back yet */
  int released;  /* the connection is gone */
  unsigned long served;
};

reply_pool_t *reply_pool_new(void) { return rl_calloc(1, sizeof(reply_pool_t)); }

static void reply_pool_destroy(reply_pool_t *pool) {
  while (pool->free != NULL) {
    pooled_reply_t *block = pool->free;
    POOL_UNPOISON(block, sizeof *block);
    pool->free = block->next;
    rl_free(block);
  }
  rl_free(pool);
}

void reply_pool_release(reply_pool_t *pool) {
  if (pool == NULL)
    return;
  pool->released = 1;
  if (pool->live == 0)
    reply_pool_destroy(pool);
}

/* A zeroed block tagged with its pool, of the given type. */
static redisReply *reply_take(reply_pool_t *pool, int type) {
  pooled_reply_t *block = pool->free;
  if (block != NULL) {
    POOL_UNPOISON(block, sizeof *block);
    pool->free = block->next;
    pool->kept--;
  } else if ((block = rl_malloc(sizeof *block)) == NULL) {
    return NULL;
  }
  memset(&block->reply, 0, sizeof block->reply);
  block->reply.type = type;
  block->reply.element = (redisReply **)pool; /* the tag: see pool.h */
  pool->live++;
  pool->served++;
  return &block->reply;
}

void *reply_pool_integer(reply_pool_t *pool, long long value) {
  redisReply *r = reply_take(pool, REDIS_REPLY_INTEGER);
  if (r != NULL)
    r->integer = value;
  return r;
}

void *reply_pool_nil(reply_pool_t *pool) { return reply_take(pool, REDIS_REPLY_NIL); }

void *reply_pool_string(reply_pool_t *pool, int type, const char *str, size_t len) {
  if (len > REPLY_POOL_STR_MAX ||
      (type != REDIS_REPLY_STRING && type != REDIS_REPLY_STATUS && type != REDIS_REPLY_ERROR))
    return NULL;
  redisReply *r = reply_take(pool, type);
  if (r == NULL)
    return NULL;
  pooled_reply_t *block = (pooled_reply_t *)r;
  memcpy(block->str, str, len);
  block->str[len] = '\0';
  r->str = block->str;
  r->len = len;
  return r;
}

/* A scalar type with its element set is ours: hiredis' scalars leave it NULL. */
static int reply_is_pooled(const redisReply *r) {
  return r->element != NULL && (r->type == REDIS_REPLY_INTEGER || r->type == REDIS_REPLY_NIL ||
                                r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
                                r->type == REDIS_REPLY_ERROR);
}

void reply_pool_free(void *reply) {
  redisReply *r = reply;
  if (r == NULL)
    return;
  if (!reply_is_pooled(r)) {
    freeReplyObject(r);
    return;
  }
  reply_pool_t *pool = (reply_pool_t *)r->element;
  pooled_reply_t *block = (pooled_reply_t *)r;
  pool->live--;
  if (pool->released || pool->kept >= REPLY_POOL_KEEP) {
    rl_free(block);
    if (pool->released && pool->live == 0)
      reply_pool_destroy(pool);
    return;
  }
  block->next = pool->free;
  pool->free = block;
  pool->kept++;
  POOL_POISON(block, sizeof *block);
}

unsigned long reply_pool_served(const reply_pool_t *pool) { return pool->served; }

unsigned reply_pool_kept(const reply_pool_t *pool) { return pool->kept; }
