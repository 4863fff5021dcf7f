/* torture_common.h: what the torture driver (torture.c) and its worker
 * processes (torture_worker.c) agree on: the history record format, the call
 * kinds, the client configuration's defaults, and the documented deadline of
 * each blocking call, derived from the options.
 *
 * History records: every worker appends one text line per event to its own
 * file with a single write(2) on an O_APPEND descriptor, so a record is on
 * disk (in the page cache) the moment it is written, whatever happens to the
 * process afterwards.  Times are CLOCK_MONOTONIC nanoseconds, a clock that all
 * processes of the machine share.  Lines:
 *
 *   C <kind> <wid> <tid> <start_ns> <end_ns> <rc> <bound_ms>
 *       one blocking call: when it started and returned, its return code and
 *       the deadline the documentation promises for it (torture_bound_ms).
 *   G <wid> <tid> <seq> <resource> <fence> <call_start_ns> <grant_ns> <ve_ns>
 *       a grant: grant_ns is read right after the lock call returned OK,
 *       ve_ns = grant_ns + redlock_lock_validity_ms() read after it (the
 *       library's expiry rounded toward zero, so ve_ns never overstates it).
 *       The resource's first letter says what was granted (--primitive):
 *       r<i> a lock, s<i> a permit of semaphore s<i> (fence: its slot's),
 *       R<i> / W<i> a read / write hold of read-write lock rw<i>, e<i> a term
 *       of election e<i> (fence: the term; grant_ns: when on_elected ran;
 *       call_start_ns: a time before the winning campaign round started,
 *       i.e. the redlock_elect call or the previous term's on_lost).
 *   E <wid> <tid> <seq> <ve_ns>
 *       a redlock_extend of grant <seq>, whatever its status: the validity
 *       end after it, computed the same way (a failed extension with a
 *       shorter ttl lowers it), or the call's start when none is left.
 *   U <wid> <tid> <seq> <unlock_start_ns> <rc>
 *       the holder stopped using grant <seq> at unlock_start_ns (read just
 *       before redlock_unlock was called) and the unlock returned rc.  For a
 *       term: just before redlock_resign (rc 0), or when on_lost ran (rc the
 *       reason).  Terms are extended by the library's watch: the worker
 *       samples redlock_election_validity_ms() and writes E lines.
 *   S <wid> <rss_warm_kb> <rss_end_kb> <stall_max_ms> <calls> <grants>
 *     <heap_warm_kb> <heap_late_kb> <heap_max_kb> <replayed>
 *       the worker finished (cleanly unless it wrote F lines): max RSS after
 *       warm-up and at the end, its worst scheduling stall, its totals, its
 *       heap in use after warm-up, near the end and at most, and how many
 *       missed releases its client replayed (from the client's log).
 *   F <wid> <text>
 *       the worker itself saw something wrong (unexpected return code, a
 *       grant without a token, memory over its limit, a call that hung).
 *
 * A holder's hold window is [grant_ns, min(unlock_start_ns, ve_ns)] (ve_ns of
 * its last successful extension, if any). */
#ifndef TORTURE_COMMON_H
#define TORTURE_COMMON_H

#include <stdint.h>
#include <string.h>
#include <time.h>

/* Call kinds, as written in C records. */
#define TK_OPEN "open"
#define TK_LOCK "lock"       /* redlock_lock: the retry policy */
#define TK_TRYLOCK "trylock" /* redlock_trylock: one attempt */
#define TK_WAIT "wait"       /* redlock_lock_wait */
#define TK_EXTEND "extend"
#define TK_UNLOCK "unlock"
#define TK_CLOSE "close"
#define TK_SEM "sem"       /* redlock_semaphore_acquire */
#define TK_READ "read"     /* redlock_rwlock_read */
#define TK_WRITE "write"   /* redlock_rwlock_write */
#define TK_ELECT "elect"   /* redlock_elect: queues the campaign, returns */
#define TK_RESIGN "resign" /* redlock_resign */

/* What the worker threads exercise (--primitive).  Mixed: thread 0 of each
 * worker campaigns in elections, the others pick a lock, a permit or a
 * read/write hold at random for each round. */
enum { PRIM_LOCK, PRIM_SEMAPHORE, PRIM_RWLOCK, PRIM_ELECTION, PRIM_MIXED, PRIM_N };
static const char *const torture_prim_names[PRIM_N] = {"lock", "semaphore", "rwlock", "election",
                                                       "mixed"};
#define TORTURE_SEM_LIMIT 2u

/* How many election names are used: in mixed mode one per run (one
 * campaigner per worker: several of them on one name make contention), else
 * one per resource. */
static inline int torture_election_names(int prim, int resources) {
  return prim == PRIM_MIXED ? 1 : resources;
}

/* The masters of a run (each behind its fault proxy). */
#define TORTURE_MASTERS 5

/* Client configuration defaults (the driver passes them on explicitly). */
#define TORTURE_MAX_TTL_MS 1500u /* also the restart quarantine */
#define TORTURE_TTL_MS 1000u     /* <= max TTL */
#define TORTURE_REQUEST_MS 100u
#define TORTURE_CONNECT_MS 1000u
#define TORTURE_RETRY 3
#define TORTURE_RETRY_DELAY_MS 30u
#define TORTURE_RETRY_JITTER_MS 30u
#define TORTURE_WAIT_MS 400u
#define TORTURE_HOLD_MAX_MS 40u /* a hold is random in [0, min(this, validity/4)] */
/* With --failover or --cluster: holds long enough to outlast a failover (a
 * cluster's takeover) and the reconnects after it (some 20-50 ms), so that
 * a holder whose key the promoted replica lacks is often still holding when
 * others can vote. */
#define TORTURE_FAILOVER_HOLD_MS 200u
#define TORTURE_KEY_PREFIX "torture:"

typedef struct {
  unsigned request_ms, connect_ms;
  int retry;
  unsigned retry_delay_ms, retry_jitter_ms;
  unsigned wait_ms;
  unsigned sem_limit;
} torture_timing_t;

/* The defaults above, for the driver's options and the worker's (which the
 * driver passes on explicitly). */
static inline void torture_defaults(torture_timing_t *t, unsigned *ttl_ms, unsigned *max_ttl_ms) {
  *ttl_ms = TORTURE_TTL_MS;
  *max_ttl_ms = TORTURE_MAX_TTL_MS;
  t->request_ms = TORTURE_REQUEST_MS;
  t->connect_ms = TORTURE_CONNECT_MS;
  t->retry = TORTURE_RETRY;
  t->retry_delay_ms = TORTURE_RETRY_DELAY_MS;
  t->retry_jitter_ms = TORTURE_RETRY_JITTER_MS;
  t->wait_ms = TORTURE_WAIT_MS;
  t->sem_limit = TORTURE_SEM_LIMIT;
}

/* The documented upper bound of one call's duration (docs/api.md,
 * docs/algorithm.md §2-§5, §9), in ms:
 *  - a round ends by its deadline, request_ms after it started; a fenced
 *    attempt is two rounds (acquire, write-back);
 *  - redlock_lock: 1 + retry attempts and retry waits of at most
 *    delay + jitter each;
 *  - redlock_trylock: one attempt;
 *  - redlock_lock_wait: attempts start only while the wait budget lasts (the
 *    last one at its end), so the budget plus one attempt;
 *  - redlock_extend, redlock_unlock: one round;
 *  - redlock_open: returns once every master's first connection attempt has
 *    finished, bounded by the connect timeout;
 *  - redlock_close: the releases of held locks are bounded by the request
 *    timeout (the workers hold none when they close);
 *  - redlock_semaphore_acquire: with a wait, slot attempts start only while
 *    the budget lasts; without, each of the limit slots is tried once, so
 *    at most the budget plus limit attempts;
 *  - redlock_rwlock_read / _write: as redlock_lock_wait (the workers pass
 *    wait_ms or 0);
 *  - redlock_elect only queues the campaign and redlock_resign waits until
 *    the loop has taken the resignation: a request timeout is generous.
 * Returns 0 for an unknown kind. */
static inline uint64_t torture_bound_ms(const char *kind, const torture_timing_t *t) {
  uint64_t attempt = 2u * (uint64_t)t->request_ms;
  /* The newer kinds first: their first letters collide with older ones. */
  if (strcmp(kind, TK_SEM) == 0)
    return (uint64_t)t->wait_ms + (uint64_t)(t->sem_limit ? t->sem_limit : 1) * attempt;
  if (strcmp(kind, TK_READ) == 0 || strcmp(kind, TK_WRITE) == 0)
    return (uint64_t)t->wait_ms + attempt;
  if (strcmp(kind, TK_ELECT) == 0 || strcmp(kind, TK_RESIGN) == 0)
    return t->request_ms;
  switch (kind[0]) {
  case 'o':
    return t->connect_ms;
  case 'l':
    return (uint64_t)(1 + t->retry) * attempt +
           (uint64_t)t->retry * (t->retry_delay_ms + t->retry_jitter_ms);
  case 't':
    return attempt;
  case 'w':
    return (uint64_t)t->wait_ms + attempt;
  case 'e':
  case 'u':
  case 'c':
    return t->request_ms;
  default:
    return 0;
  }
}

static inline uint64_t torture_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: the seeded generator of the fault schedule and the workers. */
static inline uint64_t torture_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline uint64_t torture_range(uint64_t *state, uint64_t lo, uint64_t hi) {
  return hi <= lo ? lo : lo + torture_rand(state) % (hi - lo + 1);
}

#endif
