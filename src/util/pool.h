/* pool.h: the library's free lists.  What the hot path allocates and frees
 * again is handed out again without the allocator (alloc.h), in three
 * lists, one per kind of memory:
 *   - pool_t: blocks by size class (ops, key blocks, rounds);
 *   - callmem_t: a client's memory for calls, a size-class pool behind a
 *     mutex and the FIFO of freed lock handles;
 *   - reply_pool_t: hiredis' reply objects for the answers to our commands,
 *     per connection.
 * Reuse is LIFO except for handles: the block freed last, still warm in the
 * cache, goes first.  Under AddressSanitizer a kept block is poisoned: a use
 * after its free is reported while the block waits on its list, but not once
 * it is handed out again, which with LIFO reuse can be the very next
 * allocation of its kind. */
#ifndef REDLOCK_POOL_H
#define REDLOCK_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "util/status.h"

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

/* ---- blocks by size class -------------------------------------------------------------
 * A bounded free list of memory blocks by size class.  Blocks are sized in
 * powers of two from 64 bytes to 8 KiB (a 16-byte header each records its
 * class); a request larger than that, or a class whose list is full, goes to
 * malloc / free.  A pool keeps no more blocks than were once in use together,
 * and per class at most POOL_KEEP_MAX blocks and POOL_CLASS_BUDGET bytes:
 * enough for 128 calls in flight (the throughput benchmark's), two rounds
 * each, while a burst beyond that is given back to malloc.  A round of 5
 * masters is a 2 KiB block (its votes carry each request's routing and ack
 * state): 256 KiB kept only 128 of them, fewer than the rounds alive at once
 * (a decided round lives on until its late votes come), and the rest went
 * through malloc's slow path: 4 % more instructions per cycle.
 *
 * A pool has no lock: its owner says which thread or mutex guards it.
 * Every block given to pool_free must come from pool_alloc (of any pool, or
 * of NULL: the header says where it goes).  Handles, the pointers an
 * application may keep after a free, are not pooled here but FIFO, and
 * never reused before CALLMEM_HANDLES_HELD others (callmem_t below). */

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

/* ---- a client's memory for calls ------------------------------------------------------
 * What a call allocates on the caller's thread and the loop thread frees:
 * ops and key blocks (a size-class pool, above) and lock handles (a FIFO
 * that holds each freed handle back).  One mutex guards both: allocations
 * come from any application thread, frees from the loop.  It is a leaf lock:
 * held only for a few pointer moves, never while taking another (the
 * client's mutex may be held around it, never the reverse).
 *
 * Handles and stale-handle detection.  calls.c refuses a handle value that
 * is not in the client's live set (handle.h), so a handle passed again after
 * its unlock gets EINVAL.  The value carries the handle's number
 * (handles_made, handle.h), which is what makes that certain for a long
 * while.  Where a value cannot carry it (handle.h: a 32-bit platform), the
 * address is all there is, and its reuse is put off: handles come back
 * FIFO, and only once more than CALLMEM_HANDLES_HELD other freed handles
 * wait (malloc makes no promise, and a LIFO free list would hand the
 * address out again on the very next lock). */

#define CALLMEM_HANDLES_MAX 256 /* freed handles kept at most */
#define CALLMEM_HANDLES_HELD 16 /* kept back before any is reused */

typedef struct callmem {
  uv_mutex_t mutex;
  pool_t pool;                        /* mutex: ops and key blocks */
  void *handles[CALLMEM_HANDLES_MAX]; /* mutex: ring of freed handles, oldest at head */
  unsigned head, count;               /* mutex */
  uint32_t handles_made;              /* mutex: callmem_handle_new's count, wrapping */
  size_t handle_size;                 /* const: every handle's size */
} callmem_t;

/* ST_OK, or ST_ENOMEM when the mutex cannot be made. */
status_t callmem_init(callmem_t *mem, size_t handle_size);
/* Frees every kept block; nothing of it may be in use. */
void callmem_free(callmem_t *mem);
/* pool_alloc (callmem_calloc: zeroed) and pool_free, under the mutex. */
void *callmem_alloc(callmem_t *mem, size_t size);
void *callmem_calloc(callmem_t *mem, size_t size);
void callmem_release(callmem_t *mem, void *p);
/* A zeroed handle of handle_size bytes, and in *n how many handles were
 * made before it (wrapping); NULL when out of memory. */
void *callmem_handle_new(callmem_t *mem, uint32_t *n);
/* Takes back a handle from callmem_handle_new (NULL: nothing). */
void callmem_handle_free(callmem_t *mem, void *handle);

/* ---- hiredis' reply objects -----------------------------------------------------------
 * hiredis allocates every reply, and a status or bulk string's bytes apart:
 * ten replies and fifteen malloc/free pairs per lock + unlock cycle at
 * N = 5.  The answers we send commands for are top-level scalars (+OK, an
 * integer, nil, a short error), so conn.c's reader object functions build
 * those here, in blocks that return to the connection's reply pool when
 * hiredis frees them; anything else (aggregates and what is in them, long
 * strings, RESP3 types) is hiredis' own object.
 *
 * A pooled reply is a plain redisReply to every reader.  It is told apart by
 * its `element` field, which hiredis never reads for a scalar and leaves NULL
 * in its own: there it points to the pool the block returns to, so the one
 * free function (reply_pool_free, the reader's freeObject) needs no context.
 * A pool outlives its connection until its last reply is back.
 *
 * Loop thread only, like the connection.  No reply outlives its callback in
 * our code: callbacks copy what they keep (round.c's reply_classify), and
 * hiredis frees the reply after. */

#define REPLY_POOL_STR_MAX 47 /* longer strings are hiredis' own objects */
#define REPLY_POOL_KEEP 256   /* blocks kept per connection at most */

typedef struct reply_pool reply_pool_t;

/* NULL when out of memory. */
reply_pool_t *reply_pool_new(void);
/* The connection is gone: the pool is freed now, or with its last reply. */
void reply_pool_release(reply_pool_t *pool);

/* Top-level scalar replies from the pool; NULL when the reply does not fit
 * (a string longer than REPLY_POOL_STR_MAX, a type other than STRING, STATUS
 * or ERROR) or memory is short: the caller builds it the usual way. */
void *reply_pool_integer(reply_pool_t *pool, long long value);
void *reply_pool_nil(reply_pool_t *pool);
void *reply_pool_string(reply_pool_t *pool, int type, const char *str, size_t len);

/* Frees any reply object: a pooled one goes back to its pool, any other to
 * hiredis' freeReplyObject. */
void reply_pool_free(void *reply);

/* Replies the pool has served, and blocks it keeps free (for the tests). */
unsigned long reply_pool_served(const reply_pool_t *pool);
unsigned reply_pool_kept(const reply_pool_t *pool);

#endif
