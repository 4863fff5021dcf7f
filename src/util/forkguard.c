/* forkguard.c: fork detection per client (forkguard.h says why this way). */
#define _DEFAULT_SOURCE /* madvise, MADV_WIPEONFORK, MAP_ANONYMOUS */
#include "util/forkguard.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void fork_guard_init(fork_guard_t *g) {
  g->page = NULL;
  g->len = 0;
  g->pid = getpid();
#ifdef MADV_WIPEONFORK
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0)
    return;
  void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return;
  if (madvise(p, (size_t)page, MADV_WIPEONFORK) != 0) { /* kernel older than 4.14 */
    munmap(p, (size_t)page);
    return;
  }
  *(int *)p = 1;
  g->page = p;
  g->len = (size_t)page;
#endif
}

int fork_guard_forked(const fork_guard_t *g) {
  if (g->page != NULL)
    return *g->page == 0;
  return getpid() != g->pid;
}

void fork_guard_free(fork_guard_t *g) {
  if (g->page != NULL)
    munmap((void *)(uintptr_t)g->page, g->len);
  g->page = NULL;
}
