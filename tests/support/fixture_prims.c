/* fixture_prims.c: helpers of the coordination-primitive tests (see
 * fixture.h): holders in child processes that can be SIGKILLed (a client
 * that dies without releasing), holding-interval histories, and pause
 * chaos.  Children are killed by PID, by the test or by fx_teardown when a
 * test failed halfway. */
#include "fixture.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- holding intervals ------------------------------------------------------------------ */

void fx_history_init(fx_history_t *h) {
  pthread_mutex_init(&h->mu, NULL);
  h->n = 0;
}

void fx_history_destroy(fx_history_t *h) { pthread_mutex_destroy(&h->mu); }

void fx_history_add(fx_history_t *h, uint64_t start_us, int64_t validity_ms, uint64_t end_us,
                    int exclusive) {
  uint64_t valid_end = start_us + (validity_ms > 0 ? (uint64_t)validity_ms * 1000u : 0);
  if (end_us > valid_end)
    end_us = valid_end;
  if (end_us <= start_us)
    return;
  pthread_mutex_lock(&h->mu);
  if (h->n < FX_MAX_INTERVALS)
    h->iv[h->n++] = (fx_interval_t){start_us, end_us, exclusive};
  pthread_mutex_unlock(&h->mu);
}

static int overlap(const fx_interval_t *a, const fx_interval_t *b) {
  return a->start_us < b->end_us && b->start_us < a->end_us;
}

int fx_history_max_depth(const fx_history_t *h) {
  int worst = 0;
  /* The deepest instant is some interval's start. */
  for (size_t i = 0; i < h->n; i++) {
    int depth = 0;
    for (size_t j = 0; j < h->n; j++)
      if (h->iv[j].start_us <= h->iv[i].start_us && h->iv[i].start_us < h->iv[j].end_us)
        depth++;
    if (depth > worst)
      worst = depth;
  }
  return worst;
}

size_t fx_history_exclusive_overlaps(const fx_history_t *h) {
  size_t bad = 0;
  for (size_t i = 0; i < h->n; i++)
    for (size_t j = i + 1; j < h->n; j++)
      if ((h->iv[i].exclusive || h->iv[j].exclusive) && overlap(&h->iv[i], &h->iv[j]))
        bad++;
  return bad;
}

void fx_pause_chaos(fx_t *fx, unsigned duration_ms, unsigned seed) {
  assert_int_equal(fx->n, 5);
  uint64_t end = rh_now_ms() + duration_ms;
  while (rh_now_ms() < end) {
    unsigned a = (unsigned)rand_r(&seed) % 5;
    unsigned b = (a + 1 + (unsigned)rand_r(&seed) % 4) % 5;
    assert_int_equal(rh_server_pause(fx->servers[a]), 0);
    assert_int_equal(rh_server_pause(fx->servers[b]), 0);
    fx_sleep_ms(100 + (unsigned)rand_r(&seed) % 500); /* the fault lasts this long */
    assert_int_equal(rh_server_resume(fx->servers[a]), 0);
    assert_int_equal(rh_server_resume(fx->servers[b]), 0);
    fx_sleep_ms(50 + (unsigned)rand_r(&seed) % 200);
  }
}

/* ---- chaos workers ------------------------------------------------------------------ */

typedef struct {
  const fx_chaos_t *chaos;
  fx_history_t *history;
  atomic_int *stop;
  redlock_t *client;
  unsigned seed;
  unsigned grants, exclusive;
  int errors; /* unexpected statuses */
  int first_error;
} chaos_worker_t;

/* One acquisition, hold and release of a chaos worker. */
static void chaos_round(chaos_worker_t *w) {
  redlock_lock_t *hold = NULL;
  int exclusive = 0;
  int rc = w->chaos->acquire(w->client, &w->seed, &hold, &exclusive);
  if (rc != REDLOCK_OK) {
    /* What chaos may legitimately cause; anything else is a finding. */
    if (rc != REDLOCK_ETIMEDOUT && rc != REDLOCK_ENOQUORUM && rc != REDLOCK_ELOCKED &&
        rc != REDLOCK_EEXPIRED && w->errors++ == 0)
      w->first_error = rc;
    return;
  }
  uint64_t start = fx_now_us();
  int64_t validity = redlock_lock_validity_ms(hold);
  /* The work done under the grant. */
  struct timespec ts = {0, (long)(rand_r(&w->seed) % w->chaos->hold_max_us) * 1000L};
  nanosleep(&ts, NULL);
  fx_history_add(w->history, start, validity, fx_now_us(), exclusive);
  redlock_unlock(w->client, hold);
  w->grants++;
  w->exclusive += (unsigned)exclusive;
}

static void *chaos_worker(void *arg) {
  chaos_worker_t *w = arg;
  while (!atomic_load(w->stop))
    chaos_round(w);
  return NULL;
}

unsigned fx_chaos_run(fx_t *fx, const fx_chaos_t *chaos, fx_history_t *history,
                      unsigned *exclusive) {
  enum { MAX_WORKERS = 8 };
  assert_true(chaos->workers > 0 && chaos->workers <= MAX_WORKERS);
  atomic_int stop;
  atomic_init(&stop, 0);
  chaos_worker_t workers[MAX_WORKERS];
  pthread_t threads[MAX_WORKERS];
  for (int i = 0; i < chaos->workers; i++) {
    redlock_t *client = fx_open(fx, i, fx_options_retry(fx, i, REDLOCK_LOG_ERROR, -1, 30, 30));
    workers[i] = (chaos_worker_t){chaos, history, &stop, client, chaos->worker_seed + (unsigned)i,
                                  0,     0,       0,     0};
  }
  for (int i = 0; i < chaos->workers; i++)
    assert_int_equal(pthread_create(&threads[i], NULL, chaos_worker, &workers[i]), 0);
  fx_pause_chaos(fx, chaos->duration_ms, chaos->chaos_seed);
  atomic_store(&stop, 1);
  for (int i = 0; i < chaos->workers; i++)
    pthread_join(threads[i], NULL);

  unsigned grants = 0, excl = 0;
  for (int i = 0; i < chaos->workers; i++) {
    grants += workers[i].grants;
    excl += workers[i].exclusive;
    if (workers[i].errors != 0)
      fail_msg("worker %d: %d unexpected statuses, first %s", i, workers[i].errors,
               redlock_err_name(workers[i].first_error));
  }
  if (exclusive != NULL)
    *exclusive = excl;
  return grants;
}

/* ---- holders in child processes ------------------------------------------------------ */

#define MAX_CHILDREN 8

static struct {
  pid_t pid;
  int fd; /* read end of the child's status pipe */
} children[MAX_CHILDREN];

/* The child: no cmocka (its failures must not unwind into the parent's
 * test runner), plain exits. */
static void child_main(fx_t *fx, size_t n, fx_child_kind_t kind, const char *name, uint32_t limit,
                       uint32_t ttl_ms, uint32_t wait_ms, int fd) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    _exit(10);
  for (size_t i = 0; i < n; i++)
    if (redlock_options_add_node(opts, rh_server_uri(fx->servers[i])) != 0)
      _exit(11);
  if (redlock_options_set_quarantine(opts, 0) != 0 ||
      redlock_options_set_timeouts(opts, FX_SF_CONNECT_MS, FX_SF_REQUEST_MS) != 0 ||
      redlock_options_set_retry(opts, 0, 50, 50) != 0)
    _exit(12);
  redlock_t *client = NULL;
  if (redlock_open(&client, opts) != 0)
    _exit(13);
  redlock_options_free(opts);
  redlock_lock_t *lock = NULL;
  int rc;
  switch (kind) {
  case FX_CHILD_SEM:
    rc = redlock_semaphore_acquire(client, name, limit, ttl_ms, wait_ms, &lock);
    break;
  case FX_CHILD_READ:
    rc = redlock_rwlock_read(client, name, ttl_ms, wait_ms, &lock);
    break;
  case FX_CHILD_WRITE:
  default:
    rc = redlock_rwlock_write(client, name, ttl_ms, wait_ms, &lock);
    break;
  }
  ssize_t w = write(fd, &rc, sizeof rc);
  (void)w;
  for (;;)
    pause(); /* holding it until SIGKILL: a holder that dies, never releasing */
}

pid_t fx_child_start(fx_t *fx, size_t n, fx_child_kind_t kind, const char *name, uint32_t limit,
                     uint32_t ttl_ms, uint32_t wait_ms) {
  size_t slot = 0;
  while (slot < MAX_CHILDREN && children[slot].pid != 0)
    slot++;
  assert_true(slot < MAX_CHILDREN);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    child_main(fx, n, kind, name, limit, ttl_ms, wait_ms, fds[1]);
  }
  close(fds[1]);
  children[slot].pid = pid;
  children[slot].fd = fds[0];
  return pid;
}

int fx_child_status(pid_t pid, int timeout_ms) {
  for (size_t i = 0; i < MAX_CHILDREN; i++) {
    if (children[i].pid != pid)
      continue;
    struct pollfd p = {children[i].fd, POLLIN, 0};
    int rc = 1;
    if (poll(&p, 1, timeout_ms) == 1 && read(children[i].fd, &rc, sizeof rc) != sizeof rc)
      rc = 1;
    return rc;
  }
  return 1;
}

void fx_child_kill(pid_t pid) {
  for (size_t i = 0; i < MAX_CHILDREN; i++) {
    if (children[i].pid != pid || pid == 0)
      continue;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    close(children[i].fd);
    children[i].pid = 0;
  }
}

void fx_children_kill(void) {
  for (size_t i = 0; i < MAX_CHILDREN; i++)
    if (children[i].pid != 0)
      fx_child_kill(children[i].pid);
}
