/* handle.h: lock handles as the application holds them: their values,
 * made at a grant and decoded at a release, and the set of live ones, in
 * which a value must be found before it is decoded.
 *
 * Values.  A handle's memory is reused once it is freed, so its address alone
 * cannot tell a live handle from a stale one that an application passes again
 * (a double unlock on an error path): the stale pointer may equal a new, live
 * handle's, and that handle would be released.  So the application never sees
 * the address itself but a value that carries, in bits an address of the
 * handle never uses, the number of the handle among those its client made
 * (HANDLE_TAG_BITS of it).  A stale value can equal a live one only if the
 * client made a multiple of HANDLE_TAGS handles in between and the address
 * came back too: below that count, a stale handle is refused for certain
 * (calls.c finds its value in no live set).
 *
 * Layout on a 64-bit platform, for an address below 2^48 and aligned to 16
 * bytes (what malloc returns on the platforms we build for):
 *   bit 0       1: a tagged value
 *   bits 1..3   the low 3 bits of the number
 *   bits 4..47  the address
 *   bits 48..63 the next 16 bits of the number
 * Any other address, and every address on a 32-bit platform, is its own
 * value (bit 0 clear), and detection falls back to the hold-back of freed
 * handles (pool.h).  Decoding an untagged value returns it unchanged, so
 * code that holds a real address may pass it where a value is expected.
 * Nothing dereferences a value: accessors decode it first. */
#ifndef REDLOCK_HANDLE_H
#define REDLOCK_HANDLE_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#if UINTPTR_MAX > 0xFFFFFFFFu
#define HANDLE_TAG_BITS 19
#else
#define HANDLE_TAG_BITS 0
#endif
/* Handles a client makes before a value can repeat. */
#define HANDLE_TAGS (UINT32_C(1) << HANDLE_TAG_BITS)

/* The value of the handle at p, the n-th its client made. */
void *handle_encode(void *p, uint32_t n);
/* The address behind a value (a value that is an address: itself). */
void *handle_decode(const void *value);

/* ---- the live set ----------------------------------------------------------------------
 * A set of pointers (open addressing), the registry of live lock and
 * election handles: a stale or foreign value is refused with EINVAL without
 * being dereferenced. */

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
