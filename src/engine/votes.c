/* votes.c: the per-thread record behind redlock_last_votes() and its text
 * (votes.h). */
#include "engine/votes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"
#include "util/alloc.h"
#include "util/why.h"

static status_t entry_init(votes_entry_t *e, unsigned n) {
  e->outcome = 0;
  e->why = rl_calloc(n, 1);
  e->detail = rl_calloc(n, sizeof *e->detail);
  return e->why != NULL && e->detail != NULL ? ST_OK : ST_ENOMEM;
}

static void entry_free(votes_entry_t *e) {
  rl_free(e->why);
  rl_free(e->detail);
  e->why = NULL;
  e->detail = NULL;
}

status_t votes_book_init(votes_book_t *book, unsigned n_masters) {
  memset(book, 0, sizeof *book);
  book->n_masters = n_masters;
  return entry_init(&book->latest, n_masters);
}

void votes_book_free(votes_book_t *book) {
  entry_free(&book->latest);
  for (unsigned i = 0; i < VOTES_THREADS; i++)
    entry_free(&book->slots[i].entry);
}

const votes_entry_t *votes_book_find(const votes_book_t *book, const uv_thread_t *thread) {
  for (unsigned i = 0; i < VOTES_THREADS; i++)
    if (book->slots[i].written != 0 && uv_thread_equal(&book->slots[i].thread, thread))
      return &book->slots[i].entry;
  return NULL;
}

void votes_book_copy_latest_to(votes_book_t *book, const uv_thread_t *thread) {
  struct votes_slot *slot = NULL, *oldest = &book->slots[0];
  for (unsigned i = 0; i < VOTES_THREADS && slot == NULL; i++) {
    struct votes_slot *s = &book->slots[i];
    if (s->written != 0 && uv_thread_equal(&s->thread, thread))
      slot = s;
    else if (s->written < oldest->written)
      oldest = s;
  }
  if (slot == NULL) { /* a new thread: the least recently written (or an unused) entry */
    slot = oldest;
    slot->written = 0;
    slot->thread = *thread;
    if (slot->entry.why == NULL && entry_init(&slot->entry, book->n_masters) != 0) {
      entry_free(&slot->entry);
      return;
    }
  }
  slot->entry.outcome = book->latest.outcome;
  memcpy(slot->entry.why, book->latest.why, book->n_masters);
  /* "" where the vote has no detail: most have none, and the whole buffer
   * is worth copying only when there is one. */
  for (unsigned i = 0; i < book->n_masters; i++) {
    if (book->latest.detail[i][0] == '\0')
      slot->entry.detail[i][0] = '\0';
    else
      memcpy(slot->entry.detail[i], book->latest.detail[i], NODE_DOWN_WHY_LEN);
  }
  slot->written = ++book->writes;
}

int votes_format(const votes_entry_t *v, unsigned n_masters,
                 const char *(*label)(void *arg, unsigned master), void *label_arg, char *buf,
                 size_t size) {
  static const char *const outcomes[] = {"none", "won", "lost (held)", "lost (no quorum)"};
  char scratch[1];
  if (size == 0) {
    buf = scratch; /* measure only */
    size = sizeof scratch;
  }
  int total = snprintf(buf, size, "%s:", outcomes[v->outcome]);
  for (unsigned i = 0; i < n_masters && total >= 0; i++) {
    size_t used = (size_t)total < size ? (size_t)total : size - 1;
    const char *detail = v->outcome ? v->detail[i] : "";
    int n = snprintf(buf + used, size - used, " %s=%s%s%s%s", label(label_arg, i),
                     v->outcome ? why_name(v->why[i]) : "-", detail[0] ? " (" : "", detail,
                     detail[0] ? ")" : "");
    total = n < 0 ? n : total + n;
  }
  return total;
}
