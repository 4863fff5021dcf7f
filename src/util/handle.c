/* handle.c: lock handles' values and the set of live ones (see handle.h). */
#include "util/handle.h"

#include <stdint.h>
#include <stdlib.h>

#include "util/alloc.h"

/* ---- values ---- */

#define TAGGED ((uintptr_t)1)

#if HANDLE_TAG_BITS > 0
#define LOW_BITS 3
#define LOW_MASK ((uintptr_t)0xE)             /* bits 1..3 */
#define ADDR_MASK ((uintptr_t)0xFFFFFFFFFFF0) /* bits 4..47 */
#define HIGH_SHIFT 48

void *handle_encode(void *p, uint32_t n) {
  uintptr_t a = (uintptr_t)p;
  if ((a & ~ADDR_MASK) != 0)
    return p; /* an address that uses the tag's bits: not tagged */
  n &= HANDLE_TAGS - 1;
  uintptr_t low = ((uintptr_t)n << 1) & LOW_MASK;
  uintptr_t high = (uintptr_t)(n >> LOW_BITS) << HIGH_SHIFT;
  return (void *)(a | high | low | TAGGED);
}

void *handle_decode(const void *value) {
  uintptr_t v = (uintptr_t)value;
  return (void *)((v & TAGGED) != 0 ? v & ADDR_MASK : v);
}
#else
void *handle_encode(void *p, uint32_t n) {
  (void)n;
  return p;
}

void *handle_decode(const void *value) { return (void *)(uintptr_t)value; }
#endif

/* ---- the live set: open addressing with linear probing ---- */

static size_t hash_ptr(const void *p, size_t mask) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdu;
  x ^= x >> 33;
  return (size_t)x & mask;
}

void ptrset_init(ptrset_t *set) {
  set->slots = NULL;
  set->cap = set->used = 0;
}

void ptrset_free(ptrset_t *set) {
  rl_free((void *)set->slots);
  ptrset_init(set);
}

static status_t rehash(ptrset_t *set, size_t new_cap) {
  const void **slots = rl_calloc(new_cap, sizeof *slots);
  if (slots == NULL)
    return ST_ENOMEM;
  for (size_t i = 0; i < set->cap; i++) {
    const void *p = set->slots[i];
    if (p == NULL)
      continue;
    size_t j = hash_ptr(p, new_cap - 1);
    while (slots[j] != NULL)
      j = (j + 1) & (new_cap - 1);
    slots[j] = p;
  }
  rl_free((void *)set->slots);
  set->slots = slots;
  set->cap = new_cap;
  return ST_OK;
}

/* p's slot, or the table's size when p is not in the set. */
static size_t find_slot(const ptrset_t *set, const void *p) {
  if (set->cap == 0 || p == NULL)
    return set->cap;
  size_t mask = set->cap - 1;
  for (size_t i = hash_ptr(p, mask);; i = (i + 1) & mask) {
    if (set->slots[i] == NULL)
      return set->cap;
    if (set->slots[i] == p)
      return i;
  }
}

int ptrset_contains(const ptrset_t *set, const void *p) { return find_slot(set, p) != set->cap; }

status_t ptrset_add(ptrset_t *set, const void *p) {
  if (p == NULL)
    return ST_EINVAL;
  if (ptrset_contains(set, p))
    return ST_OK;
  if ((set->used + 1) * 4 >= set->cap * 3) {
    size_t new_cap = set->cap == 0 ? 16 : set->cap;
    while ((set->used + 1) * 2 >= new_cap)
      new_cap *= 2;
    status_t st = rehash(set, new_cap);
    if (st != ST_OK)
      return st;
  }
  size_t mask = set->cap - 1;
  size_t i = hash_ptr(p, mask);
  while (set->slots[i] != NULL)
    i = (i + 1) & mask;
  set->slots[i] = p;
  set->used++;
  return ST_OK;
}

/* Empties slot i without a tombstone (backward-shift deletion): each entry
 * of the probe run after it moves into the gap unless that would put it
 * before its home slot.  Without tombstones a set whose entries come and
 * go (the live handles: add at the grant, remove at unlock) never fills up,
 * so it is never rehashed, never reallocated, in steady state. */
static void close_gap(ptrset_t *set, size_t i) {
  size_t mask = set->cap - 1;
  for (size_t j = (i + 1) & mask; set->slots[j] != NULL; j = (j + 1) & mask) {
    size_t home = hash_ptr(set->slots[j], mask);
    /* Stays when its home lies cyclically in (i, j]. */
    int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays)
      continue;
    set->slots[i] = set->slots[j];
    i = j;
  }
  set->slots[i] = NULL;
}

int ptrset_remove(ptrset_t *set, const void *p) {
  size_t i = find_slot(set, p);
  if (i == set->cap)
    return 0;
  set->used--;
  close_gap(set, i);
  return 1;
}
