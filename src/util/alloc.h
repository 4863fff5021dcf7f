/* alloc.h: the library's one way to the heap.  Every allocation of src/
 * goes through these, so that redlock_set_allocator() (include/redlock.h)
 * sees all of them; scripts/check_alloc.sh keeps libc's allocator out of
 * every other file.  The table is process-wide, as hiredis' and libuv's: it
 * may change only while no client is open (alloc_hold / alloc_release count
 * them), so a pointer allocated by one table is freed by the same. */
#ifndef REDLOCK_ALLOC_H
#define REDLOCK_ALLOC_H

#include <stddef.h>

/* The C functions' contracts, through the current table.  rl_free(NULL) does
 * nothing (the table's free never sees NULL). */
void *rl_malloc(size_t size);
void *rl_calloc(size_t n, size_t size);
void *rl_realloc(void *p, size_t size);
void rl_free(void *p);
/* A copy of s (NUL-terminated) from rl_malloc, or NULL. */
char *rl_strdup(const char *s);

/* A client is made / is gone: while any exists, the table is fixed
 * (redlock_set_allocator refuses).  Lock-free; not on any per-call path. */
void alloc_hold(void);
void alloc_release(void);

#endif
