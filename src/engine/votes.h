/* votes.h: what redlock_last_votes() reports, kept per calling thread.
 *
 * Each decided round a call waited on is recorded twice: as the client's
 * latest, and in the entry of the application thread that made the call
 * (when it came through the submit queue).  A thread then reads its own last
 * call's votes, not whatever a concurrent call decided since.  The
 * book keeps VOTES_THREADS threads; the least recently written entry is
 * reused.  All of it is guarded by the client's mutex (client.c). */
#ifndef REDLOCK_VOTES_H
#define REDLOCK_VOTES_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "util/status.h"
#include "voters/node.h" /* NODE_DOWN_WHY_LEN */

#define VOTES_THREADS 32

/* One decided round: outcome 0 = none yet (quorum_outcome_t otherwise). */
typedef struct votes_entry {
  int outcome;
  uint8_t *why; /* vote_why_t per master */
  /* per master: why it was down (WHY_DOWN), whose duplicate it is
   * (WHY_DUPLICATE), how full (WHY_BUSY), how long its quarantine has left
   * (WHY_QUARANTINED), why its ack fell short (WHY_UNACKED), or "" */
  char (*detail)[NODE_DOWN_WHY_LEN];
} votes_entry_t;

typedef struct votes_book {
  unsigned n_masters;
  votes_entry_t latest; /* the client's most recent */
  struct votes_slot {
    uv_thread_t thread;
    uint64_t written; /* 0 = unused; else the book's write count when last written */
    votes_entry_t entry;
  } slots[VOTES_THREADS];
  uint64_t writes;
} votes_book_t;

/* ST_OK or ST_ENOMEM (then votes_book_free is still safe). */
status_t votes_book_init(votes_book_t *book, unsigned n_masters);
void votes_book_free(votes_book_t *book);
/* Copies `latest` into the entry of `thread` (finding, or taking the least
 * recently written): after the caller has filled `latest`.  Out of memory:
 * the thread keeps no entry and reads the latest. */
void votes_book_copy_latest_to(votes_book_t *book, const uv_thread_t *thread);
/* The entry of `thread`, or NULL when it has none. */
const votes_entry_t *votes_book_find(const votes_book_t *book, const uv_thread_t *thread);
/* redlock_last_votes' text of `entry` into buf (size bytes, NUL-terminated
 * when size > 0; size 0: measures only, buf unused): "OUTCOME: LABEL=WHY
 * (DETAIL) ..." for masters 0 to n_masters - 1, each named by label(label_arg,
 * master).  Returns the length of the whole text, as snprintf does, or a
 * negative value if formatting fails. */
int votes_format(const votes_entry_t *entry, unsigned n_masters,
                 const char *(*label)(void *arg, unsigned master), void *label_arg, char *buf,
                 size_t size);

#endif
