/* ptrset.c: open-addressing pointer set with linear probing (see ptrset.h). */
#include "ptrset.h"

#include <stdint.h>
#include <stdlib.h>

static const char tombstone_byte;
#define PTRSET_TOMBSTONE ((const void *)&tombstone_byte)

static size_t hash_ptr(const void *p, size_t mask) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdu;
  x ^= x >> 33;
  return (size_t)x & mask;
}

void ptrset_init(ptrset_t *set) {
  set->slots = NULL;
  set->cap = set->used = set->filled = 0;
}

void ptrset_free(ptrset_t *set) {
  free((void *)set->slots);
  ptrset_init(set);
}

static int rehash(ptrset_t *set, size_t new_cap) {
  const void **slots = calloc(new_cap, sizeof *slots);
  if (slots == NULL)
    return -1;
  for (size_t i = 0; i < set->cap; i++) {
    const void *p = set->slots[i];
    if (p == NULL || p == PTRSET_TOMBSTONE)
      continue;
    size_t j = hash_ptr(p, new_cap - 1);
    while (slots[j] != NULL)
      j = (j + 1) & (new_cap - 1);
    slots[j] = p;
  }
  free((void *)set->slots);
  set->slots = slots;
  set->cap = new_cap;
  set->filled = set->used;
  return 0;
}

int ptrset_contains(const ptrset_t *set, const void *p) {
  if (set->cap == 0 || p == NULL)
    return 0;
  size_t mask = set->cap - 1;
  for (size_t i = hash_ptr(p, mask);; i = (i + 1) & mask) {
    if (set->slots[i] == NULL)
      return 0;
    if (set->slots[i] == p)
      return 1;
  }
}

int ptrset_add(ptrset_t *set, const void *p) {
  if (p == NULL)
    return -1;
  if (ptrset_contains(set, p))
    return 0;
  if ((set->filled + 1) * 4 >= set->cap * 3) {
    size_t new_cap = set->cap == 0 ? 16 : set->cap;
    while ((set->used + 1) * 2 >= new_cap)
      new_cap *= 2;
    if (rehash(set, new_cap) != 0)
      return -1;
  }
  size_t mask = set->cap - 1;
  size_t i = hash_ptr(p, mask);
  while (set->slots[i] != NULL && set->slots[i] != PTRSET_TOMBSTONE)
    i = (i + 1) & mask;
  if (set->slots[i] == NULL)
    set->filled++;
  set->slots[i] = p;
  set->used++;
  return 0;
}

int ptrset_remove(ptrset_t *set, const void *p) {
  if (set->cap == 0 || p == NULL)
    return 0;
  size_t mask = set->cap - 1;
  for (size_t i = hash_ptr(p, mask);; i = (i + 1) & mask) {
    if (set->slots[i] == NULL)
      return 0;
    if (set->slots[i] == p) {
      set->slots[i] = PTRSET_TOMBSTONE;
      set->used--;
      return 1;
    }
  }
}
