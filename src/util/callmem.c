/* callmem.c: a client's free lists for calls (see callmem.h). */
#include "util/callmem.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/pool.h"

status_t callmem_init(callmem_t *mem, size_t handle_size) {
  memset(mem, 0, sizeof *mem);
  pool_init(&mem->pool);
  mem->handle_size = handle_size;
  return uv_mutex_init(&mem->mutex) == 0 ? ST_OK : ST_ENOMEM;
}

void callmem_free(callmem_t *mem) {
  pool_clear(&mem->pool);
  while (mem->count > 0) {
    POOL_UNPOISON(mem->handles[mem->head], mem->handle_size);
    rl_free(mem->handles[mem->head]);
    mem->head = (mem->head + 1) % CALLMEM_HANDLES_MAX;
    mem->count--;
  }
  uv_mutex_destroy(&mem->mutex);
}

void *callmem_alloc(callmem_t *mem, size_t size) {
  uv_mutex_lock(&mem->mutex);
  void *p = pool_alloc(&mem->pool, size);
  uv_mutex_unlock(&mem->mutex);
  return p;
}

void *callmem_calloc(callmem_t *mem, size_t size) {
  void *p = callmem_alloc(mem, size);
  if (p != NULL)
    memset(p, 0, size);
  return p;
}

void callmem_release(callmem_t *mem, void *p) {
  if (p == NULL)
    return;
  uv_mutex_lock(&mem->mutex);
  pool_free(&mem->pool, p);
  uv_mutex_unlock(&mem->mutex);
}

void *callmem_handle_new(callmem_t *mem, uint32_t *n) {
  void *handle = NULL;
  uv_mutex_lock(&mem->mutex);
  *n = mem->handles_made++;
  if (mem->count > CALLMEM_HANDLES_HELD) {
    handle = mem->handles[mem->head];
    mem->head = (mem->head + 1) % CALLMEM_HANDLES_MAX;
    mem->count--;
  }
  uv_mutex_unlock(&mem->mutex);
  if (handle == NULL)
    return rl_calloc(1, mem->handle_size);
  POOL_UNPOISON(handle, mem->handle_size);
  memset(handle, 0, mem->handle_size);
  return handle;
}

void callmem_handle_free(callmem_t *mem, void *handle) {
  if (handle == NULL)
    return;
  uv_mutex_lock(&mem->mutex);
  int kept = mem->count < CALLMEM_HANDLES_MAX;
  if (kept) {
    /* Poisoned while held back: a use of the stale handle is still reported. */
    POOL_POISON(handle, mem->handle_size);
    mem->handles[(mem->head + mem->count) % CALLMEM_HANDLES_MAX] = handle;
    mem->count++;
  }
  uv_mutex_unlock(&mem->mutex);
  if (!kept)
    rl_free(handle);
}
