/* torture_worker.c: one client process of the torture test (torture.c starts
 * K of them).  It opens its own redlock_t over the given masters (in the test:
 * fault proxies in front of them) with fencing on and the restart quarantine
 * on, and runs several threads that, until a given CLOCK_MONOTONIC instant,
 * take (redlock_lock, redlock_lock_wait or redlock_trylock), hold for a short
 * random time well inside the validity (sometimes extending once, with the
 * same or a random, often shorter, ttl), and
 * release locks on a few resources.  Every call and every grant is appended
 * to the worker's history file (format in torture_common.h); the driver's
 * checker proves from those histories that nothing unsafe happened.
 *
 * The worker also checks what only it can see, records an F line and exits
 * with status 1 when:
 *  - a call returns a code its documentation does not allow;
 *  - a grant has no fencing token (fencing is on);
 *  - its max RSS (getrusage) exceeds --rss-limit-kb, or grows by more than
 *    --rss-growth-kb between the end of warm-up (a quarter of the run) and
 *    the end, or its heap in use (mallinfo2; ASan's allocator statistics
 *    under ASan) at the end of the run exceeds the level after warm-up by
 *    more than --heap-growth-kb: memory must stay bounded however long the
 *    run;
 *  - a call has not returned --hang-ms (15 s) after its documented deadline (a
 *    watchdog thread records it and aborts, so a hang is never silent).
 * A monitor thread that sleeps 1 ms at a time records the worst oversleep,
 * i.e. how long this process could not run: the checker prints it next to
 * any late call, so a loaded machine is told apart from a slow library.
 *
 *   torture_worker --id W --out FILE --log FILE --until-ns T --node URI [--tls-ca FILE]
 *                  [--node URI ...] [--threads N] [--resources R] [--seed S]
 *                  [--ttl MS] [--max-ttl MS] [--request-ms MS] [--connect-ms MS]
 *                  [--retry N] [--retry-delay MS] [--retry-jitter MS]
 *                  [--wait-ms MS] [--rss-limit-kb KB] [--rss-growth-kb KB]
 *                  [--heap-growth-kb KB] [--hang-ms MS] [--mutate-overhold-ms MS]
 *                  [--primitive lock|semaphore|rwlock|election|mixed]
 *                  [--sem-limit L] [--mutate-sem-refused 1] [--mutate-no-quarantine 1]
 *                  [--hold-max-ms MS]
 *
 * --primitive (default lock): what the threads take.  semaphore: permits of
 * semaphores s0..s<R-1> with limit L (default 2); rwlock: read and write
 * holds of rw0..rw<R-1>; election: every thread campaigns (redlock_elect) on
 * one of e0..e<R-1> for a random while and resigns, again and again,
 * recording each term from on_elected to on_lost / the resign, extended by
 * samples of redlock_election_validity_ms(); mixed: thread 0 campaigns on e0,
 * the others take a lock, a permit or a hold at random each round.
 *
 * --mutate-overhold-ms (a test of the test): every holder keeps the lock,
 * permit or hold MS past its validity and records it as still valid, and a
 * leader goes on acting MS after its on_lost or resign, as a broken
 * application would; the checker must then report overlaps, too many
 * permits, writers overlapping, two leaders.  --mutate-sem-refused: a
 * semaphore caller takes a refused permit (ELOCKED) as granted.
 * --mutate-no-quarantine: the client runs without the restart and failover
 * quarantine (the driver's --failover or --cluster run without kills: a
 * replica promoted without the keys it missed must then make two holders).
 *
 * --hold-max-ms (default TORTURE_HOLD_MAX_MS): the cap of a hold. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../support/test_io.h"
#include "redlock.h"
#include "torture_common.h"
#include "torture_opts.h"

#define MAX_THREADS 32
#define MAX_NODES 16
#define MAX_RESOURCES 64

#if defined(__SANITIZE_ADDRESS__)
#define WORKER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WORKER_ASAN 1
#endif
#endif
#ifndef WORKER_ASAN
#define WORKER_ASAN 0
#endif
#if WORKER_ASAN
/* From the sanitizer runtime (sanitizer/allocator_interface.h, which GCC
 * does not install). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

/* ---- configuration ---------------------------------------------------------- */

static struct {
  int id;
  const char *out_path, *log_path;
  const char *nodes[MAX_NODES];
  int n_nodes;
  uint64_t until_ns;
  int threads, resources;
  uint64_t seed;
  unsigned ttl_ms, max_ttl_ms;
  torture_timing_t timing;
  long rss_limit_kb, rss_growth_kb, heap_growth_kb;
  unsigned hang_ms;
  unsigned mutate_overhold_ms;
  int mutate_sem_refused;
  int mutate_no_quarantine;
  unsigned hold_max_ms; /* a hold is random in [0, min(this, validity left / 4)] */
  int primitive;        /* PRIM_* */
  unsigned sem_limit;
  const char *tls_ca; /* rediss:// masters: the CA to trust */
} cfg;

static redlock_t *client;
static int out_fd = -1;
static FILE *log_file;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int failed;
static atomic_uint_fast64_t total_calls, total_grants, replayed_releases;
static atomic_uint stall_max_ms;
static atomic_long rss_warm_kb;
/* Heap in use (bytes the program allocated and has not freed), sampled every
 * 100 ms: the largest sample in [20 %, 30 %] of the run (warm), in
 * [80 %, 100 %] (late), and overall.  Unlike the max RSS, which keeps any
 * transient peak (a stalled master's backlog) and the allocator's
 * fragmentation, a late value well above the warm one means memory that
 * keeps growing with the number of operations. */
static long heap_warm_kb, heap_late_kb, heap_max_kb;
static atomic_int monitor_stop;

/* What each thread is doing, for the hang watchdog. */
typedef struct {
  int tid;
  uint64_t rng;
  _Atomic uint64_t call_start_ns; /* 0 = not in a call */
  _Atomic uint64_t call_bound_ms;
  const char *_Atomic call_kind;
} thread_state_t;

/* [0, threads): the worker threads; [threads]: the main thread (open, close). */
static thread_state_t states[MAX_THREADS + 1];

/* ---- history ------------------------------------------------------------------ */

/* One record = one write(2) on an O_APPEND descriptor. */
static void record(const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n > sizeof line - 2)
    n = (int)sizeof line - 2;
  line[n++] = '\n';
  (void)tio_write_all(out_fd, line, (size_t)n);
}

static void fail(const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  record("F %d %s", cfg.id, msg);
  fprintf(stderr, "torture_worker %d: %s\n", cfg.id, msg);
  atomic_store(&failed, 1);
}

static void log_cb(int level, const char *msg, void *arg) {
  (void)arg;
  static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  uint64_t now = torture_now_ns();
  /* "master H:P: replayed N release(s) it missed" (docs/algorithm.md §9):
   * counted for the summary, a measure of release traffic the masters
   * missed. */
  const char *r = strstr(msg, ": replayed ");
  if (r != NULL)
    atomic_fetch_add(&replayed_releases, strtoull(r + strlen(": replayed "), NULL, 10));
  pthread_mutex_lock(&log_mu);
  if (log_file != NULL) {
    fprintf(log_file, "%" PRIu64 ".%03" PRIu64 " %s %s\n", now / 1000000000u,
            (now / 1000000u) % 1000u, names[level & 3], msg);
    fflush(log_file);
  }
  pthread_mutex_unlock(&log_mu);
}

/* ---- calls ------------------------------------------------------------------ */

static void call_begin(thread_state_t *st, const char *kind, uint64_t start) {
  atomic_store(&st->call_kind, kind);
  atomic_store(&st->call_bound_ms, torture_bound_ms(kind, &cfg.timing));
  atomic_store(&st->call_start_ns, start);
}

static void call_end(thread_state_t *st, const char *kind, uint64_t start, uint64_t end, int rc) {
  atomic_store(&st->call_start_ns, 0);
  atomic_fetch_add(&total_calls, 1);
  record("C %s %d %d %" PRIu64 " %" PRIu64 " %d %" PRIu64, kind, cfg.id, st->tid, start, end, rc,
         torture_bound_ms(kind, &cfg.timing));
}

static int allowed(const char *kind, int rc) {
  if (rc == REDLOCK_OK)
    return 1;
  if (strcmp(kind, TK_WAIT) == 0)
    return rc == REDLOCK_ETIMEDOUT || rc == REDLOCK_ENOQUORUM; /* held / masters down */
  if (strcmp(kind, TK_SEM) == 0 || strcmp(kind, TK_READ) == 0 || strcmp(kind, TK_WRITE) == 0)
    return rc == REDLOCK_ELOCKED || rc == REDLOCK_ETIMEDOUT || rc == REDLOCK_ENOQUORUM ||
           rc == REDLOCK_EEXPIRED;
  if (strcmp(kind, TK_ELECT) == 0 || strcmp(kind, TK_RESIGN) == 0)
    return 0;
  if (strcmp(kind, TK_LOCK) == 0 || strcmp(kind, TK_TRYLOCK) == 0)
    return rc == REDLOCK_ELOCKED || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EEXPIRED;
  if (strcmp(kind, TK_EXTEND) == 0)
    return rc == REDLOCK_ELOST || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EEXPIRED;
  if (strcmp(kind, TK_UNLOCK) == 0)
    return rc == REDLOCK_ELOST || rc == REDLOCK_ENOQUORUM;
  return 0;
}

static void check_rc(const char *kind, int tid, int rc) {
  if (!allowed(kind, rc))
    fail("thread %d: %s returned %s (%d), which its documentation does not allow", tid, kind,
         redlock_err_name(rc), rc);
}

static void sleep_ms(uint64_t ms) {
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Validity end of a live handle: now first, then the remaining validity (the
 * library reads its clock after ours, and rounds toward zero, so the sum
 * never overstates the library's own expiry). */
static uint64_t validity_end(const redlock_lock_t *lock, uint64_t *now_out) {
  uint64_t now = torture_now_ns();
  int64_t v = redlock_lock_validity_ms(lock);
  if (now_out != NULL)
    *now_out = now;
  return v > 0 ? now + (uint64_t)v * 1000000u : now;
}

static uint64_t hold_time_ms(thread_state_t *st, uint64_t ve) {
  uint64_t now = torture_now_ns();
  uint64_t left_ms = ve > now ? (ve - now) / 1000000u : 0;
  uint64_t cap = left_ms / 4 < cfg.hold_max_ms ? left_ms / 4 : cfg.hold_max_ms;
  return torture_range(&st->rng, 0, cap);
}

/* One acquisition of the thread's primitive for this round (a lock, a
 * semaphore permit, a read or a write hold), then a short hold, sometimes
 * an extension, and the release. */
static void one_round(thread_state_t *st, unsigned seq) {
  int prim = cfg.primitive;
  if (prim == PRIM_MIXED) /* thread 0 campaigns instead (election_main) */
    prim = (int)torture_range(&st->rng, PRIM_LOCK, PRIM_RWLOCK);
  unsigned idx = (unsigned)torture_range(&st->rng, 0, (uint64_t)cfg.resources - 1);
  unsigned pick = (unsigned)torture_range(&st->rng, 0, 99);
  char res[32], name[32];
  const char *kind;
  int mode = 0; /* lock: 0 lock, 1 lock_wait, 2 trylock; others: 1 wait, 2 one try */
  int write = 0;
  if (prim == PRIM_LOCK) {
    snprintf(res, sizeof res, "r%u", idx);
    mode = pick < 45 ? 0 : pick < 85 ? 1 : 2;
    kind = mode == 0 ? TK_LOCK : mode == 1 ? TK_WAIT : TK_TRYLOCK;
  } else if (prim == PRIM_SEMAPHORE) {
    snprintf(name, sizeof name, "s%u", idx);
    snprintf(res, sizeof res, "s%u", idx);
    mode = pick < 70 ? 1 : 2;
    kind = TK_SEM;
  } else {
    /* Writers and readers about evenly: enough writers to contend with the
     * readers, enough readers to share. */
    write = torture_range(&st->rng, 0, 99) < 45;
    snprintf(name, sizeof name, "rw%u", idx);
    snprintf(res, sizeof res, "%c%u", write ? 'W' : 'R', idx);
    mode = pick < 70 ? 1 : 2;
    kind = write ? TK_WRITE : TK_READ;
  }
  uint32_t wait = mode == 1 ? cfg.timing.wait_ms : 0;
  redlock_lock_t *lock = NULL;

  uint64_t start = torture_now_ns();
  call_begin(st, kind, start);
  int rc;
  if (prim == PRIM_LOCK) {
    if (mode == 0)
      rc = redlock_lock(client, res, cfg.ttl_ms, &lock);
    else if (mode == 1)
      rc = redlock_lock_wait(client, res, cfg.ttl_ms, cfg.timing.wait_ms, &lock);
    else
      rc = redlock_trylock(client, res, cfg.ttl_ms, &lock);
  } else if (prim == PRIM_SEMAPHORE) {
    rc = redlock_semaphore_acquire(client, name, cfg.sem_limit, cfg.ttl_ms, wait, &lock);
  } else if (write) {
    rc = redlock_rwlock_write(client, name, cfg.ttl_ms, wait, &lock);
  } else {
    rc = redlock_rwlock_read(client, name, cfg.ttl_ms, wait, &lock);
  }
  uint64_t grant = 0;
  uint64_t ve = rc == REDLOCK_OK ? validity_end(lock, &grant) : 0;
  call_end(st, kind, start, rc == REDLOCK_OK ? grant : torture_now_ns(), rc);
  check_rc(kind, st->tid, rc);
  if (rc != REDLOCK_OK) {
    if (cfg.mutate_sem_refused && prim == PRIM_SEMAPHORE && rc == REDLOCK_ELOCKED) {
      /* Test of the test (--mutate-sem-refused): a broken application that
       * takes a refused permit as granted and uses it for a while.  With
       * every slot held, the checker must see more than `limit` holders. */
      uint64_t now = torture_now_ns();
      uint64_t pve = now + (uint64_t)cfg.ttl_ms / 2 * 1000000u;
      atomic_fetch_add(&total_grants, 1);
      record("G %d %d %u %s %d %" PRIu64 " %" PRIu64 " %" PRIu64, cfg.id, st->tid, seq, res, 1,
             start, now, pve);
      sleep_ms(cfg.ttl_ms / 2);
      record("U %d %d %u %" PRIu64 " %d", cfg.id, st->tid, seq, torture_now_ns(), 0);
      return;
    }
    if (rc != REDLOCK_ETIMEDOUT)
      sleep_ms(torture_range(&st->rng, 0, 10));
    return;
  }
  uint64_t fence = redlock_lock_fence(lock);
  atomic_fetch_add(&total_grants, 1);
  record("G %d %d %u %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, cfg.id, st->tid, seq, res,
         fence, start, grant, ve);
  if (fence == 0)
    fail("thread %d: grant %u of %s has no fencing token", st->tid, seq, res);

  if (cfg.mutate_overhold_ms > 0) {
    /* Test of the test (--mutate-overhold-ms): a broken holder that keeps
     * using the lock past its validity and records it as valid.  The
     * checker must report overlaps. */
    uint64_t now = torture_now_ns();
    sleep_ms((ve > now ? (ve - now) / 1000000u : 0) + cfg.mutate_overhold_ms);
    ve = torture_now_ns() + 1000000u;
    record("E %d %d %u %" PRIu64, cfg.id, st->tid, seq, ve);
  }
  sleep_ms(hold_time_ms(st, ve));
  if (torture_range(&st->rng, 0, 99) < 15) {
    /* A third of the extensions ask for the grant's ttl, a third for a
     * random one, often shorter than what is left, and a third for 1..10 ms,
     * which leaves no validity (EEXPIRED): won or failed, the masters that
     * ran one keep its ttl, and the validity must follow it down. */
    uint64_t choice = torture_range(&st->rng, 0, 2);
    uint32_t ttl = choice == 0   ? cfg.ttl_ms
                   : choice == 1 ? (uint32_t)torture_range(&st->rng, 1, cfg.ttl_ms)
                                 : (uint32_t)torture_range(&st->rng, 1, 10);
    uint64_t es = torture_now_ns();
    call_begin(st, TK_EXTEND, es);
    int erc = redlock_extend(client, lock, ttl);
    uint64_t ee = 0;
    uint64_t nve = validity_end(lock, &ee);
    call_end(st, TK_EXTEND, es, erc == REDLOCK_OK ? ee : torture_now_ns(), erc);
    check_rc(TK_EXTEND, st->tid, erc);
    if (nve <= ee)
      nve = es; /* no validity left: the holder stopped acting when it called */
    record("E %d %d %u %" PRIu64, cfg.id, st->tid, seq, nve);
    ve = nve;
    sleep_ms(hold_time_ms(st, ve));
  }

  uint64_t us = torture_now_ns();
  call_begin(st, TK_UNLOCK, us);
  int urc = redlock_unlock(client, lock);
  uint64_t ue = torture_now_ns();
  record("U %d %d %u %" PRIu64 " %d", cfg.id, st->tid, seq, us, urc);
  call_end(st, TK_UNLOCK, us, ue, urc);
  check_rc(TK_UNLOCK, st->tid, urc);
}

/* ---- elections -------------------------------------------------------------------
 * A campaigning thread: redlock_elect on a name, stay in the race for a
 * random while (sampling the validity of the current term, which the
 * library's watch extends), then redlock_resign; again until the end.  The
 * callbacks run on the client's loop thread; `mu` orders them against the
 * sampling, so that an E line is never written for a term that has ended
 * (the sample and the term it belongs to are read under the same lock). */
typedef struct {
  thread_state_t *st;
  redlock_election_t *e;
  char res[32];
  pthread_mutex_t mu;
  int leader;             /* a term is running: `seq` is its grant */
  unsigned seq, next_seq; /* grant numbers of this thread */
  uint64_t campaign_ns;   /* before the next winning round can start */
} election_ctx_t;

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  election_ctx_t *c = arg;
  pthread_mutex_lock(&c->mu);
  uint64_t now = torture_now_ns();
  int64_t v = redlock_election_validity_ms(e);
  uint64_t ve = v > 0 ? now + (uint64_t)v * 1000000u : now;
  c->seq = c->next_seq++;
  c->leader = 1;
  atomic_fetch_add(&total_grants, 1);
  record("G %d %d %u %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, cfg.id, c->st->tid, c->seq,
         c->res, term, c->campaign_ns, now, ve);
  if (term == 0)
    fail("thread %d: term %u of %s is 0 (not a fencing token)", c->st->tid, c->seq, c->res);
  pthread_mutex_unlock(&c->mu);
}

static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  election_ctx_t *c = arg;
  pthread_mutex_lock(&c->mu);
  uint64_t now = torture_now_ns();
  if (!c->leader) {
    fail("thread %d: on_lost of %s without a term", c->st->tid, c->res);
  } else {
    uint64_t end = now;
    if (cfg.mutate_overhold_ms > 0) {
      /* Test of the test: a leader that goes on acting MS after the loss. */
      end = now + (uint64_t)cfg.mutate_overhold_ms * 1000000u;
      record("E %d %d %u %" PRIu64, cfg.id, c->st->tid, c->seq, end);
    }
    record("U %d %d %u %" PRIu64 " %d", cfg.id, c->st->tid, c->seq, end, reason);
  }
  c->leader = 0;
  c->campaign_ns = now; /* the next campaign starts after this callback */
  pthread_mutex_unlock(&c->mu);
}

static void one_campaign(election_ctx_t *c) {
  thread_state_t *st = c->st;
  int names = torture_election_names(cfg.primitive, cfg.resources);
  snprintf(c->res, sizeof c->res, "e%u", (unsigned)torture_range(&st->rng, 0, (uint64_t)names - 1));
  uint64_t start = torture_now_ns();
  pthread_mutex_lock(&c->mu);
  c->campaign_ns = start;
  c->leader = 0;
  pthread_mutex_unlock(&c->mu);
  call_begin(st, TK_ELECT, start);
  int rc = redlock_elect(client, c->res, cfg.ttl_ms, on_elected, on_lost, c, &c->e);
  call_end(st, TK_ELECT, start, torture_now_ns(), rc);
  check_rc(TK_ELECT, st->tid, rc);
  if (rc != REDLOCK_OK) {
    sleep_ms(10);
    return;
  }
  /* Stay in the race long enough to win, be extended a few times by the
   * watch and sometimes lose to a fault. */
  uint64_t stay_until = start + torture_range(&st->rng, 200, 2500) * 1000000u;
  if (stay_until > cfg.until_ns)
    stay_until = cfg.until_ns;
  while (torture_now_ns() < stay_until && !atomic_load(&failed)) {
    sleep_ms(torture_range(&st->rng, 5, 40));
    pthread_mutex_lock(&c->mu);
    if (c->leader) {
      uint64_t now = torture_now_ns();
      int64_t v = redlock_election_validity_ms(c->e);
      if (v > 0)
        record("E %d %d %u %" PRIu64, cfg.id, st->tid, c->seq, now + (uint64_t)v * 1000000u);
    }
    pthread_mutex_unlock(&c->mu);
  }
  /* Not under `mu`: resign waits for the loop, whose callbacks take it. */
  uint64_t rs = torture_now_ns();
  call_begin(st, TK_RESIGN, rs);
  rc = redlock_resign(client, c->e);
  call_end(st, TK_RESIGN, rs, torture_now_ns(), rc);
  check_rc(TK_RESIGN, st->tid, rc);
  /* No callback runs any more.  A term still running ended at the resign
   * (rs: a term elected between rs and the resign gets an empty window,
   * which is the conservative reading). */
  pthread_mutex_lock(&c->mu);
  if (c->leader) {
    uint64_t end = rs;
    if (cfg.mutate_overhold_ms > 0) {
      /* Test of the test: a leader that goes on acting MS after resigning,
       * while the next campaigner (woken by the release) takes over. */
      end = rs + (uint64_t)cfg.mutate_overhold_ms * 1000000u;
      record("E %d %d %u %" PRIu64, cfg.id, st->tid, c->seq, end);
    }
    record("U %d %d %u %" PRIu64 " %d", cfg.id, st->tid, c->seq, end, 0);
    c->leader = 0;
  }
  pthread_mutex_unlock(&c->mu);
  c->e = NULL;
  sleep_ms(torture_range(&st->rng, 0, 50));
}

static void *thread_main(void *arg) {
  thread_state_t *st = arg;
  unsigned seq = 0;
  /* Mixed: one campaigner per worker, when there is another thread left for
   * the rest (the driver's checker expects the same). */
  if (cfg.primitive == PRIM_ELECTION ||
      (cfg.primitive == PRIM_MIXED && st->tid == 0 && cfg.threads >= 2)) {
    election_ctx_t c = {.st = st};
    pthread_mutex_init(&c.mu, NULL);
    while (torture_now_ns() < cfg.until_ns && !atomic_load(&failed))
      one_campaign(&c);
    pthread_mutex_destroy(&c.mu);
    return NULL;
  }
  while (torture_now_ns() < cfg.until_ns && !atomic_load(&failed))
    one_round(st, seq++);
  return NULL;
}

/* ---- monitor: stalls, warm-up RSS, hangs -------------------------------------- */

static long heap_in_use_kb(void) {
#if WORKER_ASAN
  return (long)(__sanitizer_get_current_allocated_bytes() / 1024);
#else
  struct mallinfo2 mi = mallinfo2();
  return (long)((mi.uordblks + mi.hblkhd) / 1024);
#endif
}

static long max_rss_kb(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

static void *monitor_main(void *arg) {
  uint64_t start = *(const uint64_t *)arg;
  uint64_t warm_at = start + (cfg.until_ns > start ? (cfg.until_ns - start) / 4 : 0);
  int warm_done = 0;
  uint64_t span = cfg.until_ns > start ? cfg.until_ns - start : 1;
  uint64_t prev = torture_now_ns(), next_sample = prev;
  while (!atomic_load(&monitor_stop)) {
    sleep_ms(1);
    uint64_t now = torture_now_ns();
    if (now >= next_sample && now < cfg.until_ns) {
      next_sample = now + 100000000u;
      long heap = heap_in_use_kb();
      uint64_t pct = (now - start) * 100u / span;
      if (pct >= 20 && pct < 30 && heap > heap_warm_kb)
        heap_warm_kb = heap;
      if (pct >= 80 && heap > heap_late_kb)
        heap_late_kb = heap;
      if (heap > heap_max_kb)
        heap_max_kb = heap;
    }
    uint64_t over = now - prev > 1000000u ? (now - prev - 1000000u) / 1000000u : 0;
    if (over > atomic_load(&stall_max_ms))
      atomic_store(&stall_max_ms, (unsigned)over);
    prev = now;
    if (!warm_done && now >= warm_at) {
      atomic_store(&rss_warm_kb, max_rss_kb());
      warm_done = 1;
    }
    for (int i = 0; i <= cfg.threads; i++) {
      uint64_t cs = atomic_load(&states[i].call_start_ns);
      if (cs == 0 || now <= cs)
        continue;
      uint64_t limit = atomic_load(&states[i].call_bound_ms) + cfg.hang_ms;
      if ((now - cs) / 1000000u > limit) {
        fail("thread %d: %s started at %" PRIu64 " has not returned after %" PRIu64
             " ms (documented bound %" PRIu64 " ms): hang; aborting",
             states[i].tid, atomic_load(&states[i].call_kind), cs, (now - cs) / 1000000u,
             atomic_load(&states[i].call_bound_ms));
        abort();
      }
    }
  }
  if (!warm_done)
    atomic_store(&rss_warm_kb, max_rss_kb());
  return NULL;
}

/* ---- main ------------------------------------------------------------------------ */

static int parse_args(int argc, char **argv) {
  cfg.threads = 3;
  cfg.resources = 3;
  cfg.seed = 1;
  torture_defaults(&cfg.timing, &cfg.ttl_ms, &cfg.max_ttl_ms);
  cfg.sem_limit = cfg.timing.sem_limit;
  cfg.rss_limit_kb = WORKER_ASAN ? 1024 * 1024 : 64 * 1024;
  cfg.rss_growth_kb = WORKER_ASAN ? 512 * 1024 : 16 * 1024;
  cfg.heap_growth_kb = 8 * 1024;
  cfg.hang_ms = 15000;
  cfg.hold_max_ms = TORTURE_HOLD_MAX_MS;
  const torture_opt_t table[] = {
      {"--id", TO_INT, &cfg.id},
      {"--out", TO_STR, &cfg.out_path},
      {"--log", TO_STR, &cfg.log_path},
      {"--node", TO_STRS, cfg.nodes, &cfg.n_nodes, MAX_NODES},
      {"--until-ns", TO_U64, &cfg.until_ns},
      {"--threads", TO_INT, &cfg.threads},
      {"--resources", TO_INT, &cfg.resources},
      {"--seed", TO_U64, &cfg.seed},
      {"--ttl", TO_UNSIGNED, &cfg.ttl_ms},
      {"--max-ttl", TO_UNSIGNED, &cfg.max_ttl_ms},
      {"--request-ms", TO_UNSIGNED, &cfg.timing.request_ms},
      {"--connect-ms", TO_UNSIGNED, &cfg.timing.connect_ms},
      {"--retry", TO_INT, &cfg.timing.retry},
      {"--retry-delay", TO_UNSIGNED, &cfg.timing.retry_delay_ms},
      {"--retry-jitter", TO_UNSIGNED, &cfg.timing.retry_jitter_ms},
      {"--wait-ms", TO_UNSIGNED, &cfg.timing.wait_ms},
      {"--rss-limit-kb", TO_LONG, &cfg.rss_limit_kb},
      {"--rss-growth-kb", TO_LONG, &cfg.rss_growth_kb},
      {"--heap-growth-kb", TO_LONG, &cfg.heap_growth_kb},
      {"--mutate-overhold-ms", TO_UNSIGNED, &cfg.mutate_overhold_ms},
      {"--mutate-sem-refused", TO_INT, &cfg.mutate_sem_refused},
      {"--mutate-no-quarantine", TO_INT, &cfg.mutate_no_quarantine},
      {"--hold-max-ms", TO_UNSIGNED, &cfg.hold_max_ms},
      {"--sem-limit", TO_UNSIGNED, &cfg.sem_limit},
      {"--primitive", TO_PRIM, &cfg.primitive},
      {"--hang-ms", TO_UNSIGNED, &cfg.hang_ms},
      {"--tls-ca", TO_STR, &cfg.tls_ca},
  };
  if (torture_parse_opts(argc, argv, table, sizeof table / sizeof table[0], "torture_worker") != 0)
    return -1;
  if (cfg.out_path == NULL || cfg.n_nodes == 0 || cfg.until_ns == 0 || cfg.threads < 1 ||
      cfg.threads > MAX_THREADS || cfg.resources < 1 || cfg.resources > MAX_RESOURCES ||
      cfg.timing.retry < 0 || cfg.primitive < 0 || cfg.sem_limit < 1 ||
      cfg.sem_limit > REDLOCK_MAX_SEM_LIMIT) {
    fprintf(stderr,
            "torture_worker: missing or bad options (see the header of torture_worker.c)\n");
    return -1;
  }
  cfg.timing.sem_limit = cfg.sem_limit; /* the semaphore's call bound depends on it */
  return 0;
}

static redlock_options_t *make_options(void) {
  redlock_options_t *o = redlock_options_new();
  if (o == NULL)
    return NULL;
  int rc = 0;
  for (int i = 0; i < cfg.n_nodes && rc == 0; i++)
    rc = redlock_options_add_node(o, cfg.nodes[i]);
  if (rc == 0)
    rc = redlock_options_set_fencing(o, 1);
  if (rc == 0 && cfg.tls_ca != NULL)
    rc = redlock_options_set_tls(o, cfg.tls_ca, NULL, NULL, NULL);
  /* On by default; said explicitly: the test depends on it.  Off only as a
   * test of the test (--mutate-no-quarantine), with failovers and no kills:
   * a promoted replica lacking keys then votes at once. */
  if (rc == 0)
    rc = redlock_options_set_quarantine(o, cfg.mutate_no_quarantine ? 0 : 1);
  if (rc == 0)
    rc = redlock_options_set_max_ttl(o, cfg.max_ttl_ms);
  if (rc == 0)
    rc = redlock_options_set_timeouts(o, cfg.timing.connect_ms, cfg.timing.request_ms);
  if (rc == 0)
    rc = redlock_options_set_retry(o, cfg.timing.retry, cfg.timing.retry_delay_ms,
                                   cfg.timing.retry_jitter_ms);
  if (rc == 0)
    rc = redlock_options_set_key_prefix(o, TORTURE_KEY_PREFIX);
  if (rc == 0)
    rc = redlock_options_set_log(o, REDLOCK_LOG_INFO, log_cb, NULL);
  if (rc != 0) {
    fprintf(stderr, "torture_worker %d: options: %s\n", cfg.id, redlock_err_name(rc));
    redlock_options_free(o);
    return NULL;
  }
  return o;
}

int main(int argc, char **argv) {
  if (parse_args(argc, argv) != 0)
    return 2;
  out_fd = open(cfg.out_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) {
    fprintf(stderr, "torture_worker %d: %s: %s\n", cfg.id, cfg.out_path, strerror(errno));
    return 2;
  }
  if (cfg.log_path != NULL)
    log_file = fopen(cfg.log_path, "a");

  redlock_options_t *opts = make_options();
  if (opts == NULL)
    return 2;
  thread_state_t *main_state = &states[cfg.threads];
  main_state->tid = -1;
  uint64_t t0 = torture_now_ns();
  call_begin(main_state, TK_OPEN, t0);
  int rc = redlock_open(&client, opts);
  call_end(main_state, TK_OPEN, t0, torture_now_ns(), rc);
  redlock_options_free(opts);
  if (rc != REDLOCK_OK) {
    fail("redlock_open: %s", redlock_err_name(rc));
    return 1;
  }

  pthread_t monitor;
  int monitor_ok = pthread_create(&monitor, NULL, monitor_main, &t0) == 0;
  pthread_t threads[MAX_THREADS];
  int started = 0;
  for (int i = 0; i < cfg.threads; i++) {
    states[i].tid = i;
    states[i].rng = cfg.seed * 1000003u + (uint64_t)cfg.id * 7919u + (uint64_t)i;
    if (pthread_create(&threads[i], NULL, thread_main, &states[i]) != 0) {
      fail("pthread_create failed");
      break;
    }
    started++;
  }
  for (int i = 0; i < started; i++)
    pthread_join(threads[i], NULL);

  uint64_t c0 = torture_now_ns();
  call_begin(main_state, TK_CLOSE, c0);
  redlock_close(client);
  call_end(main_state, TK_CLOSE, c0, torture_now_ns(), 0);
  client = NULL;

  atomic_store(&monitor_stop, 1);
  if (monitor_ok)
    pthread_join(monitor, NULL);

  long warm = atomic_load(&rss_warm_kb);
  long end = max_rss_kb();
  if (end > cfg.rss_limit_kb)
    fail("max RSS %ld kB is above the limit of %ld kB", end, cfg.rss_limit_kb);
  if (warm > 0 && end - warm > cfg.rss_growth_kb)
    fail("max RSS grew by %ld kB after warm-up (%ld -> %ld kB), limit %ld kB", end - warm, warm,
         end, cfg.rss_growth_kb);
  if (heap_warm_kb > 0 && heap_late_kb - heap_warm_kb > cfg.heap_growth_kb)
    fail("heap in use grew by %ld kB between warm-up and the end of the run (%ld -> %ld kB), "
         "limit %ld kB",
         heap_late_kb - heap_warm_kb, heap_warm_kb, heap_late_kb, cfg.heap_growth_kb);
  int ok = !atomic_load(&failed);
  /* Written after a failure too (its F lines say what failed): the
   * measurements help explain it. */
  record("S %d %ld %ld %u %" PRIu64 " %" PRIu64 " %ld %ld %ld %" PRIu64, cfg.id, warm, end,
         atomic_load(&stall_max_ms), (uint64_t)atomic_load(&total_calls),
         (uint64_t)atomic_load(&total_grants), heap_warm_kb, heap_late_kb, heap_max_kb,
         (uint64_t)atomic_load(&replayed_releases));
  if (log_file != NULL)
    fclose(log_file);
  close(out_fd);
  return ok ? 0 : 1;
}
