/* callmem.h: a client's free lists for what a call allocates on the
 * caller's thread and the loop thread frees: ops and key blocks
 * (a size-class pool, pool.h) and lock handles (a FIFO that holds each freed
 * handle back, below).  One mutex guards both: allocations come from any
 * application thread, frees from the loop.  It is a leaf lock: held only for
 * a few pointer moves, never while taking another (the client's mutex may
 * be held around it, never the reverse).
 *
 * Handles and stale-handle detection.  calls.c refuses a handle value that
 * is not in the client's live set (ptrset), so a handle passed again after
 * its unlock gets EINVAL.  The value carries the handle's number
 * (handles_made, handle.h), which is what makes that certain for a long
 * while.  Where a value cannot carry it (handle.h: a 32-bit platform), the
 * address is all there is, and its reuse is put off: handles come back
 * FIFO, and only once more than CALLMEM_HANDLES_HELD other freed handles
 * wait (malloc makes no promise, and a LIFO free list would hand the
 * address out again on the very next lock). */
#ifndef REDLOCK_CALLMEM_H
#define REDLOCK_CALLMEM_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "util/pool.h"
#include "util/status.h"

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

#endif
