/* handle.h: the values lock handles are known by outside the library.
 *
 * A handle's memory is reused once it is freed, so its address alone cannot
 * tell a live handle from a stale one that an application passes again (a
 * double unlock on an error path): the stale pointer may equal a new, live
 * handle's, and that handle would be released.  So the application never
 * sees the address itself but a value that carries, in bits an address of
 * the handle never uses, the number of the handle among those its client
 * made (HANDLE_TAG_BITS of it).  A stale value can equal a live one only if
 * the client made a multiple of HANDLE_TAGS handles in between and the
 * address came back too: below that count, a stale handle is refused for
 * certain (calls.c finds its value in no live set).
 *
 * Layout on a 64-bit platform, for an address below 2^48 and aligned to 16
 * bytes (what malloc returns on the platforms we build for):
 *   bit 0       1: a tagged value
 *   bits 1..3   the low 3 bits of the number
 *   bits 4..47  the address
 *   bits 48..63 the next 16 bits of the number
 * Any other address, and every address on a 32-bit platform, is its own
 * value (bit 0 clear), and detection falls back to the hold-back of freed
 * handles (callmem.h).  Decoding an untagged value returns it unchanged, so
 * code that holds a real address may pass it where a value is expected.
 * Nothing dereferences a value: accessors decode it first. */
#ifndef REDLOCK_HANDLE_H
#define REDLOCK_HANDLE_H

#include <stdint.h>

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

#endif
