/* idmap.c: open-addressing id map with linear probing (see idmap.h). */
#include "util/idmap.h"
#include "util/alloc.h"

#include <stdlib.h>

static size_t hash_id(uint64_t x, size_t mask) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdu;
  x ^= x >> 33;
  return (size_t)x & mask;
}

void idmap_init(idmap_t *map) {
  map->slots = NULL;
  map->cap = map->used = 0;
}

void idmap_free(idmap_t *map) {
  rl_free(map->slots);
  idmap_init(map);
}

static status_t rehash(idmap_t *map, size_t new_cap) {
  idmap_slot_t *slots = rl_calloc(new_cap, sizeof *slots);
  if (slots == NULL)
    return ST_ENOMEM;
  for (size_t i = 0; i < map->cap; i++) {
    if (map->slots[i].id == 0)
      continue;
    size_t j = hash_id(map->slots[i].id, new_cap - 1);
    while (slots[j].id != 0)
      j = (j + 1) & (new_cap - 1);
    slots[j] = map->slots[i];
  }
  rl_free(map->slots);
  map->slots = slots;
  map->cap = new_cap;
  return ST_OK;
}

/* The slot holding id, or SIZE_MAX. */
static size_t find(const idmap_t *map, uint64_t id) {
  if (map->cap == 0 || id == 0)
    return SIZE_MAX;
  size_t mask = map->cap - 1;
  for (size_t i = hash_id(id, mask);; i = (i + 1) & mask) {
    if (map->slots[i].id == 0)
      return SIZE_MAX;
    if (map->slots[i].id == id)
      return i;
  }
}

void *idmap_get(const idmap_t *map, uint64_t id) {
  size_t i = find(map, id);
  return i == SIZE_MAX ? NULL : map->slots[i].value;
}

status_t idmap_put(idmap_t *map, uint64_t id, void *value) {
  if (id == 0 || value == NULL)
    return ST_EINVAL;
  size_t at = find(map, id);
  if (at != SIZE_MAX) {
    map->slots[at].value = value;
    return ST_OK;
  }
  if ((map->used + 1) * 4 >= map->cap * 3) {
    size_t new_cap = map->cap == 0 ? 16 : map->cap;
    while ((map->used + 1) * 2 >= new_cap)
      new_cap *= 2;
    status_t st = rehash(map, new_cap);
    if (st != ST_OK)
      return st;
  }
  size_t mask = map->cap - 1;
  size_t i = hash_id(id, mask);
  while (map->slots[i].id != 0)
    i = (i + 1) & mask;
  map->slots[i] = (idmap_slot_t){.id = id, .value = value};
  map->used++;
  return ST_OK;
}

/* Empties slot i without a tombstone (backward-shift deletion, as
 * handle.c's live set): calls come and go, and a map without tombstones never fills
 * up, so it is not rehashed in steady state. */
static void close_gap(idmap_t *map, size_t i) {
  size_t mask = map->cap - 1;
  for (size_t j = (i + 1) & mask; map->slots[j].id != 0; j = (j + 1) & mask) {
    size_t home = hash_id(map->slots[j].id, mask);
    /* Stays when its home lies cyclically in (i, j]. */
    int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays)
      continue;
    map->slots[i] = map->slots[j];
    i = j;
  }
  map->slots[i] = (idmap_slot_t){0};
}

void *idmap_remove(idmap_t *map, uint64_t id) {
  size_t i = find(map, id);
  if (i == SIZE_MAX)
    return NULL;
  void *value = map->slots[i].value;
  map->used--;
  close_gap(map, i);
  return value;
}
