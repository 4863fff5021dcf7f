/* pool.h: a bounded free list of memory blocks by size class, so that what
 * the hot path frees is handed out again without malloc.  Blocks
 * are sized in powers of two from 64 bytes to 8 KiB (a 16-byte header each
 * records its class); a request larger than that, or a class whose list is
 * full, goes to malloc / free.  A pool keeps no more blocks
 * than were once in use together, and per class at most POOL_KEEP_MAX
 * blocks and POOL_CLASS_BUDGET bytes: enough for 128 calls in flight (the
 * throughput benchmark's), two rounds each, while a burst beyond that is
 * given back to malloc.  A round of 5 masters is a 2 KiB block (its votes
 * carry each request's routing and ack state): 256 KiB kept only 128 of
 * them, fewer than the rounds alive at once (a decided round lives on
 * until its late votes come), and the rest went through malloc's slow
 * path: 4 % more instructions per cycle.
 * Reuse is LIFO: the block freed last, still warm in the cache, goes first.
 *
 * A pool has no lock: its owner says which thread or mutex guards it.
 * Every block given to pool_free must come from pool_alloc (of any pool, or
 * of NULL: the header says where it goes).  Under AddressSanitizer a kept
 * block is poisoned: a use after its free is reported while the block waits
 * on the list, but not once it is handed out again, which with LIFO reuse
 * can be the very next allocation of its class.  Handles, the pointers an
 * application may keep after a free, are not pooled here but FIFO, and
 * never reused before CALLMEM_HANDLES_HELD others (callmem.h). */
#ifndef REDLOCK_POOL_H
#define REDLOCK_POOL_H

#include <stddef.h>

/* Marks bytes a kept block or handle must not be touched through. */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN 1
#endif
#endif
#ifdef POOL_ASAN
#include <sanitizer/asan_interface.h>
#define POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POOL_POISON(p, n) ((void)(p), (void)(n))
#define POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define POOL_CLASSES 8                 /* 64 B .. 8 KiB, header included */
#define POOL_KEEP_MAX 256              /* blocks kept per class at most */
#define POOL_CLASS_BUDGET (512 * 1024) /* bytes kept per class at most */

typedef struct pool {
  void *head[POOL_CLASSES];     /* LIFO of free blocks (their headers) */
  unsigned count[POOL_CLASSES]; /* blocks in each list */
} pool_t;

void pool_init(pool_t *pool);
/* size bytes, aligned as malloc's; NULL when out of memory.  pool NULL:
 * plain malloc (with the header, so pool_free takes it). */
void *pool_alloc(pool_t *pool, size_t size);
/* Keeps p for reuse, or frees it (list full, too large, pool NULL).  p NULL:
 * nothing. */
void pool_free(pool_t *pool, void *p);
/* Frees every kept block (the pool is empty and usable after). */
void pool_clear(pool_t *pool);

#endif
