/* prim_common.c: helpers of the coordination-primitive tests (see
 * prim_common.h). */
#include "prim_common.h"

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

long prim_count_keys(rh_server_t *s, const char *pattern) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "EVAL %s 0 %s",
                                     "return #redis.call('keys', ARGV[1])", pattern),
                   0);
  return strtol(buf, NULL, 10);
}

long prim_zcard(rh_server_t *s, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(s, buf, sizeof buf, "ZCARD %s", key), 0);
  return strtol(buf, NULL, 10);
}

size_t prim_exists_on(sf_fixture_t *fx, size_t n, const char *key) {
  size_t on = 0;
  char buf[64];
  for (size_t i = 0; i < n; i++)
    if (rh_server_command(fx->servers[i], buf, sizeof buf, "EXISTS %s", key) == 0 &&
        strcmp(buf, "1") == 0)
      on++;
  return on;
}

typedef struct {
  sf_fixture_t *fx;
  size_t n;
  const char *key;
  size_t at_least;
} exists_wait_t;

static int exists_pred(void *arg) {
  exists_wait_t *w = arg;
  return prim_exists_on(w->fx, w->n, w->key) >= w->at_least;
}

int prim_wait_exists_on(sf_fixture_t *fx, size_t n, const char *key, size_t at_least,
                        int timeout_ms) {
  exists_wait_t w = {fx, n, key, at_least};
  return rh_wait_until(exists_pred, &w, timeout_ms);
}

long prim_numsub(rh_server_t *s, const char *channel) {
  char buf[512];
  if (rh_server_command(s, buf, sizeof buf, "PUBSUB NUMSUB %s", channel) != 0)
    return -1;
  const char *nl = strchr(buf, '\n'); /* "channel\nN" */
  return nl != NULL ? strtol(nl + 1, NULL, 10) : -1;
}

typedef struct {
  sf_fixture_t *fx;
  size_t n;
  const char *channel;
  long bound;
  int at_most;
} sub_wait_t;

static int subscribed_pred(void *arg) {
  sub_wait_t *w = arg;
  for (size_t i = 0; i < w->n; i++) {
    long subs = prim_numsub(w->fx->servers[i], w->channel);
    if (subs < 0 || (w->at_most ? subs > w->bound : subs < w->bound))
      return 0;
  }
  return 1;
}

int prim_wait_subscribed(sf_fixture_t *fx, size_t n, const char *channel, long at_least,
                         int timeout_ms) {
  sub_wait_t w = {fx, n, channel, at_least, 0};
  return rh_wait_until(subscribed_pred, &w, timeout_ms);
}

int prim_wait_subscribed_at_most(sf_fixture_t *fx, size_t n, const char *channel, long at_most,
                                 int timeout_ms) {
  sub_wait_t w = {fx, n, channel, at_most, 1};
  return rh_wait_until(subscribed_pred, &w, timeout_ms);
}

/* ---- holding intervals ----------------------------------------------------------------- */

uint64_t prim_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void prim_history_init(prim_history_t *h) {
  pthread_mutex_init(&h->mu, NULL);
  h->n = 0;
}

void prim_history_destroy(prim_history_t *h) { pthread_mutex_destroy(&h->mu); }

void prim_history_add(prim_history_t *h, uint64_t start_us, int64_t validity_ms, uint64_t end_us,
                      int exclusive) {
  uint64_t valid_end = start_us + (validity_ms > 0 ? (uint64_t)validity_ms * 1000u : 0);
  if (end_us > valid_end)
    end_us = valid_end;
  if (end_us <= start_us)
    return;
  pthread_mutex_lock(&h->mu);
  if (h->n < PRIM_MAX_INTERVALS)
    h->iv[h->n++] = (prim_interval_t){start_us, end_us, exclusive};
  pthread_mutex_unlock(&h->mu);
}

static int overlap(const prim_interval_t *a, const prim_interval_t *b) {
  return a->start_us < b->end_us && b->start_us < a->end_us;
}

int prim_history_max_depth(const prim_history_t *h) {
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

size_t prim_history_exclusive_overlaps(const prim_history_t *h) {
  size_t bad = 0;
  for (size_t i = 0; i < h->n; i++)
    for (size_t j = i + 1; j < h->n; j++)
      if ((h->iv[i].exclusive || h->iv[j].exclusive) && overlap(&h->iv[i], &h->iv[j]))
        bad++;
  return bad;
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void prim_pause_chaos(sf_fixture_t *fx, unsigned duration_ms, unsigned seed) {
  assert_int_equal(fx->n, 5);
  uint64_t end = rh_now_ms() + duration_ms;
  while (rh_now_ms() < end) {
    unsigned a = (unsigned)rand_r(&seed) % 5;
    unsigned b = (a + 1 + (unsigned)rand_r(&seed) % 4) % 5;
    assert_int_equal(rh_server_pause(fx->servers[a]), 0);
    assert_int_equal(rh_server_pause(fx->servers[b]), 0);
    sleep_ms(100 + (unsigned)rand_r(&seed) % 500); /* the fault lasts this long */
    assert_int_equal(rh_server_resume(fx->servers[a]), 0);
    assert_int_equal(rh_server_resume(fx->servers[b]), 0);
    sleep_ms(50 + (unsigned)rand_r(&seed) % 200);
  }
}

/* ---- holders in child processes ------------------------------------------------------ */

#define MAX_CHILDREN 8

static struct {
  pid_t pid;
  int fd; /* read end of the child's status pipe */
} children[MAX_CHILDREN];

/* The child: no cmocka (its failures must not unwind into the parent's
 * test runner), plain exits. */
static void child_main(sf_fixture_t *fx, size_t n, prim_child_kind_t kind, const char *name,
                       uint32_t limit, uint32_t ttl_ms, uint32_t wait_ms, int fd) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    _exit(10);
  for (size_t i = 0; i < n; i++)
    if (redlock_options_add_node(opts, rh_server_uri(fx->servers[i])) != 0)
      _exit(11);
  if (redlock_options_set_quarantine(opts, 0) != 0 ||
      redlock_options_set_timeouts(opts, SF_CONNECT_MS, SF_REQUEST_MS) != 0 ||
      redlock_options_set_retry(opts, 0, 50, 50) != 0)
    _exit(12);
  redlock_t *client = NULL;
  if (redlock_open(&client, opts) != 0)
    _exit(13);
  redlock_options_free(opts);
  redlock_lock_t *lock = NULL;
  int rc;
  switch (kind) {
  case PRIM_CHILD_SEM:
    rc = redlock_semaphore_acquire(client, name, limit, ttl_ms, wait_ms, &lock);
    break;
  case PRIM_CHILD_READ:
    rc = redlock_rwlock_read(client, name, ttl_ms, wait_ms, &lock);
    break;
  case PRIM_CHILD_WRITE:
  default:
    rc = redlock_rwlock_write(client, name, ttl_ms, wait_ms, &lock);
    break;
  }
  ssize_t w = write(fd, &rc, sizeof rc);
  (void)w;
  for (;;)
    pause(); /* holding it until SIGKILL: a holder that dies, never releasing */
}

pid_t prim_child_start(sf_fixture_t *fx, size_t n, prim_child_kind_t kind, const char *name,
                       uint32_t limit, uint32_t ttl_ms, uint32_t wait_ms) {
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

int prim_child_status(pid_t pid, int timeout_ms) {
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

void prim_child_kill(pid_t pid) {
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

int prim_teardown(void **state) {
  for (size_t i = 0; i < MAX_CHILDREN; i++)
    if (children[i].pid != 0)
      prim_child_kill(children[i].pid);
  return sf_teardown(state);
}
