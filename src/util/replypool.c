/* replypool.c: pooled hiredis reply objects (see replypool.h). */
#include "util/replypool.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/pool.h"

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

static void pool_destroy(reply_pool_t *pool) {
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
    pool_destroy(pool);
}

/* A zeroed block tagged with its pool, of the given type. */
static redisReply *take(reply_pool_t *pool, int type) {
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
  block->reply.element = (redisReply **)pool; /* the tag: see replypool.h */
  pool->live++;
  pool->served++;
  return &block->reply;
}

void *reply_pool_integer(reply_pool_t *pool, long long value) {
  redisReply *r = take(pool, REDIS_REPLY_INTEGER);
  if (r != NULL)
    r->integer = value;
  return r;
}

void *reply_pool_nil(reply_pool_t *pool) { return take(pool, REDIS_REPLY_NIL); }

void *reply_pool_string(reply_pool_t *pool, int type, const char *str, size_t len) {
  if (len > REPLY_POOL_STR_MAX ||
      (type != REDIS_REPLY_STRING && type != REDIS_REPLY_STATUS && type != REDIS_REPLY_ERROR))
    return NULL;
  redisReply *r = take(pool, type);
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
static int is_pooled(const redisReply *r) {
  return r->element != NULL && (r->type == REDIS_REPLY_INTEGER || r->type == REDIS_REPLY_NIL ||
                                r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
                                r->type == REDIS_REPLY_ERROR);
}

void reply_pool_free(void *reply) {
  redisReply *r = reply;
  if (r == NULL)
    return;
  if (!is_pooled(r)) {
    freeReplyObject(r);
    return;
  }
  reply_pool_t *pool = (reply_pool_t *)r->element;
  pooled_reply_t *block = (pooled_reply_t *)r;
  pool->live--;
  if (pool->released || pool->kept >= REPLY_POOL_KEEP) {
    rl_free(block);
    if (pool->released && pool->live == 0)
      pool_destroy(pool);
    return;
  }
  block->next = pool->free;
  pool->free = block;
  pool->kept++;
  POOL_POISON(block, sizeof *block);
}

unsigned long reply_pool_served(const reply_pool_t *pool) { return pool->served; }

unsigned reply_pool_kept(const reply_pool_t *pool) { return pool->kept; }
