/* torture_proof.c: the clients' side of the scripted step of the tests of
 * the test (torture_proof.h says what the step builds and why): its clients
 * (the library's public API, as the workers use it), its history in the
 * workers' record format (torture_common.h), and the overhold step, which
 * needs no fault.  The failover step's faults are the driver's
 * (torture.c). */
#define _GNU_SOURCE
#include "torture_proof.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int out_fd = -1;
static int wid;
static FILE *log_file;
static char hist_path[600];
static tp_config_t cfg;
static unsigned n_grants;

static void record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void record(const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0 || out_fd < 0)
    return;
  if ((size_t)n > sizeof line - 2)
    n = (int)sizeof line - 2;
  line[n++] = '\n';
  ssize_t w = write(out_fd, line, (size_t)n);
  (void)w;
}

void tp_fail(const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  printf("torture: proof step: %s\n", msg);
  record("F %d proof step: %s", wid, msg);
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void log_cb(int level, const char *msg, void *arg) {
  (void)arg;
  if (log_file != NULL) {
    fprintf(log_file, "%" PRIu64 " [%d] %s\n", torture_now_ns(), level, msg);
    fflush(log_file);
  }
}

int tp_begin(const char *run_dir, int id, const tp_config_t *c) {
  cfg = *c;
  wid = id;
  snprintf(hist_path, sizeof hist_path, "%s/proof.hist", run_dir);
  out_fd = open(hist_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) {
    fprintf(stderr, "torture: %s: %s\n", hist_path, strerror(errno));
    return -1;
  }
  char log_path[600];
  snprintf(log_path, sizeof log_path, "%s/proof.log", run_dir);
  log_file = fopen(log_path, "a");
  return 0;
}

void tp_end(void) {
  /* The summary line a worker writes: the checker requires one. */
  record("S %d 0 0 0 %u %u 0 0 0 0", wid, n_grants, n_grants);
  if (log_file != NULL)
    fclose(log_file);
  log_file = NULL;
  if (out_fd >= 0)
    close(out_fd);
  out_fd = -1;
}

const char *tp_history_path(void) { return hist_path; }

redlock_t *tp_open(int quarantine, unsigned max_ttl_ms) {
  redlock_options_t *o = redlock_options_new();
  if (o == NULL) {
    tp_fail("out of memory");
    return NULL;
  }
  int rc = 0;
  for (int i = 0; i < cfg.n_nodes && rc == 0; i++)
    rc = redlock_options_add_node(o, cfg.nodes[i]);
  if (rc == 0)
    rc = redlock_options_set_fencing(o, 1);
  if (rc == 0 && cfg.tls_ca != NULL)
    rc = redlock_options_set_tls(o, cfg.tls_ca, NULL, NULL, NULL);
  if (rc == 0)
    rc = redlock_options_set_quarantine(o, quarantine);
  if (rc == 0)
    rc = redlock_options_set_max_ttl(o, max_ttl_ms);
  /* The workers' timeouts: the step's waits are its own loops. */
  if (rc == 0)
    rc = redlock_options_set_timeouts(o, cfg.timing.connect_ms, cfg.timing.request_ms);
  if (rc == 0)
    rc = redlock_options_set_key_prefix(o, TORTURE_KEY_PREFIX);
  if (rc == 0)
    rc = redlock_options_set_log(o, REDLOCK_LOG_INFO, log_cb, NULL);
  redlock_t *c = NULL;
  if (rc == 0)
    rc = redlock_open(&c, o);
  redlock_options_free(o);
  if (rc != REDLOCK_OK) {
    tp_fail("a client could not be opened: %s", redlock_err_name(rc));
    return NULL;
  }
  return c;
}

/* Now, and the validity end of a live handle read after it (as the workers
 * read it: never overstated). */
static uint64_t validity_end(const redlock_lock_t *lock, uint64_t *now_out) {
  uint64_t now = torture_now_ns();
  int64_t v = redlock_lock_validity_ms(lock);
  *now_out = now;
  return v > 0 ? now + (uint64_t)v * 1000000u : now;
}

/* Records a grant; its seq is the step's grant count (a grant's key is
 * worker, thread and seq: unique across the step's names). */
static void grant_record(const char *res, uint64_t fence, tp_grant_t *g) {
  g->seq = n_grants++;
  record("G %d %d %u %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, wid, g->tid, g->seq, res,
         fence, g->start, g->grant, g->ve);
}

int tp_lock_until(redlock_t *c, const char *res, unsigned ttl, uint64_t deadline_ns, int tid,
                  tp_grant_t *g) {
  int rc;
  do {
    g->start = torture_now_ns();
    rc = redlock_trylock(c, res, ttl, &g->lock);
    if (rc == REDLOCK_OK) {
      g->ve = validity_end(g->lock, &g->grant);
      g->tid = tid;
      grant_record(res, redlock_lock_fence(g->lock), g);
      return 0;
    }
    sleep_ms(5);
  } while (torture_now_ns() < deadline_ns);
  g->lock = NULL;
  return rc;
}

void tp_release(redlock_t *c, tp_grant_t *g) {
  if (g->lock == NULL)
    return;
  record("U %d %d %u %" PRIu64 " %d", wid, g->tid, g->seq, torture_now_ns(), 0);
  (void)redlock_unlock(c, g->lock);
  g->lock = NULL;
}

/* ---- the overhold step ------------------------------------------------------------ */

/* H keeps acting past its validity until after G's grant: an E record
 * moves its validity end past now, and its U record says it stopped now. */
static void overhold_end(redlock_t *c, tp_grant_t *g) {
  uint64_t now = torture_now_ns();
  record("E %d %d %u %" PRIu64, wid, g->tid, g->seq, now + 1000000u);
  record("U %d %d %u %" PRIu64 " %d", wid, g->tid, g->seq, now, 0);
  if (g->lock != NULL)
    (void)redlock_unlock(c, g->lock);
  g->lock = NULL;
}

typedef int (*acquire_fn)(redlock_t *c, const char *name, unsigned ttl, uint32_t wait,
                          unsigned limit, redlock_lock_t **out);

static int acq_lock(redlock_t *c, const char *name, unsigned ttl, uint32_t wait, unsigned limit,
                    redlock_lock_t **out) {
  (void)limit;
  return wait > 0 ? redlock_lock_wait(c, name, ttl, wait, out) : redlock_trylock(c, name, ttl, out);
}
static int acq_sem(redlock_t *c, const char *name, unsigned ttl, uint32_t wait, unsigned limit,
                   redlock_lock_t **out) {
  return redlock_semaphore_acquire(c, name, limit, ttl, wait, out);
}
static int acq_write(redlock_t *c, const char *name, unsigned ttl, uint32_t wait, unsigned limit,
                     redlock_lock_t **out) {
  (void)limit;
  return redlock_rwlock_write(c, name, ttl, wait, out);
}
static int acq_read(redlock_t *c, const char *name, unsigned ttl, uint32_t wait, unsigned limit,
                    redlock_lock_t **out) {
  (void)limit;
  return redlock_rwlock_read(c, name, ttl, wait, out);
}

/* One acquisition by thread tid, tried again (one try each, then a short
 * pause) until granted or PROOF_WAIT_MS: res is the record's name. */
static int acquire(redlock_t *c, acquire_fn fn, const char *name, const char *res, unsigned ttl,
                   unsigned limit, int tid, tp_grant_t *g) {
  uint64_t deadline = torture_now_ns() + (uint64_t)PROOF_WAIT_MS * 1000000u;
  int rc;
  do {
    g->start = torture_now_ns();
    rc = fn(c, name, ttl, 0, limit, &g->lock);
    if (rc == REDLOCK_OK) {
      g->ve = validity_end(g->lock, &g->grant);
      g->tid = tid;
      grant_record(res, redlock_lock_fence(g->lock), g);
      return 0;
    }
    sleep_ms(5);
  } while (torture_now_ns() < deadline);
  g->lock = NULL;
  tp_fail("%s: not granted in %u ms (last: %s)", res, PROOF_WAIT_MS, redlock_err_name(rc));
  return -1;
}

/* holders (tids 0..n-1 of client h) take name, none renews; G (tid n of
 * client g) is granted it once they expired; then the holders record that
 * they were still acting.  1 when the overlap was built. */
static int overhold_group(redlock_t *h, redlock_t *gc, acquire_fn hfn, acquire_fn gfn,
                          const char *name, const char *hres, const char *gres, unsigned n,
                          unsigned ttl, unsigned limit) {
  tp_grant_t held[TORTURE_SEM_LIMIT_MAX];
  unsigned got = 0;
  for (; got < n; got++)
    if (acquire(h, hfn, name, hres, ttl, limit, (int)got, &held[got]) != 0)
      break;
  int built = 0;
  tp_grant_t g;
  if (got == n && acquire(gc, gfn, name, gres, ttl, limit, (int)n, &g) == 0) {
    sleep_ms(20); /* all hold a while: the report's overlap is not a sliver */
    for (unsigned i = 0; i < got; i++)
      overhold_end(h, &held[i]);
    got = 0;
    tp_release(gc, &g);
    built = 1;
  }
  for (unsigned i = 0; i < got; i++)
    tp_release(h, &held[i]);
  return built;
}

/* An election's term, seen from the loop thread. */
typedef struct {
  atomic_int elected;
  atomic_uint_fast64_t term, at_ns, ve;
  redlock_election_t *e;
  unsigned seq; /* its grant record's */
} term_t;

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  term_t *t = arg;
  uint64_t now = torture_now_ns();
  int64_t v = redlock_election_validity_ms(e);
  atomic_store(&t->at_ns, now);
  atomic_store(&t->ve, v > 0 ? now + (uint64_t)v * 1000000u : now);
  atomic_store(&t->term, term);
  atomic_store(&t->elected, 1);
}

static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
}

/* Campaigns on name until elected (PROOF_WAIT_MS) and records the term as
 * thread tid's. */
static int campaign(redlock_t *c, const char *name, unsigned ttl, int tid, term_t *t) {
  uint64_t start = torture_now_ns();
  atomic_store(&t->elected, 0);
  int rc = redlock_elect(c, name, ttl, on_elected, on_lost, t, &t->e);
  if (rc != REDLOCK_OK) {
    tp_fail("%s: redlock_elect: %s", name, redlock_err_name(rc));
    t->e = NULL;
    return -1;
  }
  while (!atomic_load(&t->elected) && torture_now_ns() < start + PROOF_WAIT_MS * 1000000ull)
    sleep_ms(2);
  if (!atomic_load(&t->elected)) {
    tp_fail("%s: not elected in %u ms", name, PROOF_WAIT_MS);
    return -1;
  }
  t->seq = n_grants++;
  record("G %d %d %u %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, wid, tid, t->seq, name,
         (uint64_t)atomic_load(&t->term), start, (uint64_t)atomic_load(&t->at_ns),
         (uint64_t)atomic_load(&t->ve));
  return 0;
}

/* H is elected and resigns (its lease released: G's campaign wins at once),
 * G is elected, and H records that it acted as leader until after. */
static int overhold_election(redlock_t *h, redlock_t *gc, unsigned ttl) {
  term_t th = {0}, tg = {0};
  int built = 0;
  if (campaign(h, "e0", ttl, 0, &th) == 0) {
    (void)redlock_resign(h, th.e);
    th.e = NULL;
    if (campaign(gc, "e0", ttl, 1, &tg) == 0) {
      sleep_ms(20);
      uint64_t now = torture_now_ns();
      record("E %d 0 %u %" PRIu64, wid, th.seq, now + 1000000u);
      record("U %d 0 %u %" PRIu64 " 0", wid, th.seq, now);
      record("U %d 1 %u %" PRIu64 " 0", wid, tg.seq, torture_now_ns());
      built = 1;
    }
  }
  if (th.e != NULL)
    (void)redlock_resign(h, th.e);
  if (tg.e != NULL)
    (void)redlock_resign(gc, tg.e);
  return built;
}

int tp_overhold(int primitive, unsigned sem_limit, unsigned ttl_ms, unsigned max_ttl_ms) {
  int built = 0;
  redlock_t *h = tp_open(1, max_ttl_ms), *g = h != NULL ? tp_open(1, max_ttl_ms) : NULL;
  if (g == NULL) {
    if (h != NULL)
      redlock_close(h);
    return 0;
  }
  int all = primitive == PRIM_MIXED;
  if (all || primitive == PRIM_LOCK)
    built += overhold_group(h, g, acq_lock, acq_lock, "r0", "r0", "r0", 1, ttl_ms, 1);
  if ((all || primitive == PRIM_SEMAPHORE) && sem_limit <= TORTURE_SEM_LIMIT_MAX)
    built += overhold_group(h, g, acq_sem, acq_sem, "s0", "s0", "s0", sem_limit, ttl_ms, sem_limit);
  if (all || primitive == PRIM_RWLOCK)
    built += overhold_group(h, g, acq_write, acq_read, "rw0", "W0", "R0", 1, ttl_ms, 1);
  if (all || primitive == PRIM_ELECTION)
    built += overhold_election(h, g, ttl_ms);
  redlock_close(g);
  redlock_close(h);
  return built;
}
