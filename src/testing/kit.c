/* kit.c: the test kit's public calls (include/redlock_testing.h): a thread
 * running a libuv loop with the fake masters (fake_server.h) on it, their
 * directory of Unix sockets, the kit's clock, and the hand-off by which a
 * test's call acts on the loop thread and waits until it has.
 *
 * Every fake's state lives on the loop thread, so a call from the test is
 * posted (a mutex-guarded list and a uv_async) and run there, and the
 * caller waits on a condition variable for its result: the fault is in
 * effect when the call returns, and no fake state is ever shared between
 * threads. */
#define _POSIX_C_SOURCE 200809L
#include "redlock_testing.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "testing/fake_server.h"
#include "util/alloc.h"
#include "util/status.h"
#include "util/timebase.h"

/* A call waiting to run on the loop thread. */
typedef struct kit_call {
  struct kit_call *next;
  status_t (*fn)(redlock_testing_t *kit, struct kit_call *call);
  unsigned i;
  int need_up; /* a fault on master i, which must be up (not killed) */
  uint64_t arg;
  const char *key;
  long long value; /* what a read returns (a count, a flag) */
  status_t result;
  int done;
} kit_call_t;

struct redlock_testing {
  unsigned n;
  unsigned flags;
  uv_loop_t loop;
  uv_async_t wake;
  uv_thread_t thread;
  uv_mutex_t mutex; /* guards calls and each call's done */
  uv_cond_t cond;
  kit_call_t *calls; /* posted, not yet run */
  /* The loop thread's own. */
  fake_master_t *masters[REDLOCK_TESTING_MAX];
  uint64_t epoch_us;      /* CLOCK_REALTIME at the start */
  uint64_t mono_start_us; /* CLOCK_MONOTONIC at the start */
  uint64_t advanced_us;   /* redlock_testing_advance's total */
  int stopping;
  /* Fixed once started. */
  char dir[64]; /* the Unix sockets' directory, "" with REDLOCK_TESTING_TCP */
  char *uris[REDLOCK_TESTING_MAX];
};

/* Wall-clock time in µs (the fakes' TIME starts from it). */
static uint64_t realtime_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The kit's clock, every master's before its own jumps: wall-clock time at
 * the start, moved on by the monotonic clock (not with virtual time) and by
 * redlock_testing_advance. */
static uint64_t kit_now_us(void *arg) {
  const redlock_testing_t *kit = arg;
  uint64_t now = kit->epoch_us + kit->advanced_us;
  if (!(kit->flags & REDLOCK_TESTING_VIRTUAL_TIME))
    now += clock_now_ns() / 1000u - kit->mono_start_us;
  return now;
}

/* ---- the loop thread ----------------------------------------------------- */

static void kit_close_walk(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void kit_wake(uv_async_t *async) {
  redlock_testing_t *kit = async->data;
  uv_mutex_lock(&kit->mutex);
  kit_call_t *calls = kit->calls;
  kit->calls = NULL;
  uv_mutex_unlock(&kit->mutex);
  /* Posted newest first: run them oldest first. */
  kit_call_t *ordered = NULL;
  while (calls != NULL) {
    kit_call_t *next = calls->next;
    calls->next = ordered;
    ordered = calls;
    calls = next;
  }
  for (kit_call_t *call = ordered; call != NULL;) {
    kit_call_t *next = call->next;
    status_t result = call->need_up && fake_master_is_down(kit->masters[call->i])
                          ? ST_EINVAL
                          : call->fn(kit, call);
    uv_mutex_lock(&kit->mutex);
    call->result = result;
    call->done = 1;
    uv_cond_broadcast(&kit->cond);
    uv_mutex_unlock(&kit->mutex);
    call = next;
  }
  if (kit->stopping)
    uv_close((uv_handle_t *)&kit->wake, NULL);
}

static void kit_thread(void *arg) {
  redlock_testing_t *kit = arg;
  uv_run(&kit->loop, UV_RUN_DEFAULT);
  /* Anything left (a master's handles): close and run to the end. */
  uv_walk(&kit->loop, kit_close_walk, NULL);
  uv_run(&kit->loop, UV_RUN_DEFAULT);
}

typedef status_t (*kit_fn)(redlock_testing_t *kit, kit_call_t *call);

/* Hands call to the loop thread and waits until it has run there: its
 * status. */
static status_t kit_post(redlock_testing_t *kit, kit_call_t *call) {
  uv_mutex_lock(&kit->mutex);
  call->next = kit->calls;
  kit->calls = call;
  uv_mutex_unlock(&kit->mutex);
  uv_async_send(&kit->wake);
  uv_mutex_lock(&kit->mutex);
  while (!call->done)
    uv_cond_wait(&kit->cond, &kit->mutex);
  uv_mutex_unlock(&kit->mutex);
  return call->result;
}

/* Runs fn on the loop thread: its status; *value (when not NULL) gets what
 * it read. */
static status_t kit_run(redlock_testing_t *kit, kit_fn fn, unsigned i, uint64_t arg,
                        const char *key, long long *value) {
  kit_call_t call = {.fn = fn, .i = i, .arg = arg, .key = key};
  status_t st = kit_post(kit, &call);
  if (value != NULL)
    *value = call.value;
  return st;
}

/* The faults and reads, on the loop thread. */
static status_t do_start(redlock_testing_t *kit, kit_call_t *call) {
  (void)call;
  for (unsigned i = 0; i < kit->n; i++) {
    char path[96];
    fake_where_t where = {.loop = &kit->loop, .now_us = kit_now_us, .clock_arg = kit, .index = i};
    if (!(kit->flags & REDLOCK_TESTING_TCP)) {
      snprintf(path, sizeof path, "%s/%u.sock", kit->dir, i);
      where.path = path;
    }
    status_t st = fake_master_new(&where, &kit->masters[i]);
    if (st != ST_OK)
      return st;
  }
  return ST_OK;
}

static status_t do_stop(redlock_testing_t *kit, kit_call_t *call) {
  (void)call;
  for (unsigned i = 0; i < kit->n; i++)
    if (kit->masters[i] != NULL)
      fake_master_close(kit->masters[i]);
  kit->stopping = 1;
  return ST_OK;
}

static status_t do_port(redlock_testing_t *kit, kit_call_t *call) {
  call->value = fake_master_port(kit->masters[call->i]);
  return ST_OK;
}

static status_t do_kill(redlock_testing_t *kit, kit_call_t *call) {
  fake_master_kill(kit->masters[call->i]);
  return ST_OK;
}

static status_t do_restart(redlock_testing_t *kit, kit_call_t *call) {
  return fake_master_restart(kit->masters[call->i]);
}

static status_t do_pause(redlock_testing_t *kit, kit_call_t *call) {
  fake_master_pause(kit->masters[call->i], call->arg != 0);
  return ST_OK;
}

static status_t do_slow(redlock_testing_t *kit, kit_call_t *call) {
  fake_master_slow(kit->masters[call->i], (uint32_t)call->arg);
  return ST_OK;
}

static status_t do_drop_key(redlock_testing_t *kit, kit_call_t *call) {
  call->value = fake_master_drop_key(kit->masters[call->i], call->key, strlen(call->key));
  return ST_OK;
}

static status_t do_clock_jump(redlock_testing_t *kit, kit_call_t *call) {
  fake_master_clock_jump(kit->masters[call->i], call->arg);
  return ST_OK;
}

static status_t do_failover(redlock_testing_t *kit, kit_call_t *call) {
  return fake_master_failover(kit->masters[call->i], call->arg);
}

static status_t do_set_mode(redlock_testing_t *kit, kit_call_t *call) {
  for (unsigned i = 0; i < kit->n; i++)
    if (call->i == REDLOCK_TESTING_ALL || call->i == i)
      fake_master_set_mode(kit->masters[i], (fake_mode_t)call->arg);
  return ST_OK;
}

static status_t do_advance(redlock_testing_t *kit, kit_call_t *call) {
  kit->advanced_us += call->arg * 1000u;
  return ST_OK;
}

static status_t do_has_key(redlock_testing_t *kit, kit_call_t *call) {
  fake_master_t *m = kit->masters[call->i];
  call->value = !fake_master_is_down(m) && fake_master_has_key(m, call->key, strlen(call->key));
  return ST_OK;
}

static status_t do_key_count(redlock_testing_t *kit, kit_call_t *call) {
  int count = 0;
  for (unsigned i = 0; i < kit->n; i++) {
    fake_master_t *m = kit->masters[i];
    count += !fake_master_is_down(m) && fake_master_has_key(m, call->key, strlen(call->key));
  }
  call->value = count;
  return ST_OK;
}

static status_t do_commands(redlock_testing_t *kit, kit_call_t *call) {
  call->value = fake_master_commands(kit->masters[call->i]);
  return ST_OK;
}

/* ---- the public calls ---------------------------------------------------- */

static void kit_free(redlock_testing_t *kit) {
  for (unsigned i = 0; i < REDLOCK_TESTING_MAX; i++)
    rl_free(kit->uris[i]);
  if (kit->dir[0] != '\0') {
    for (unsigned i = 0; i < kit->n; i++) {
      char path[96];
      snprintf(path, sizeof path, "%s/%u.sock", kit->dir, i);
      unlink(path); /* gone with its listener already, unless killed mid-way */
    }
    rmdir(kit->dir);
  }
  uv_cond_destroy(&kit->cond);
  uv_mutex_destroy(&kit->mutex);
  rl_free(kit);
}

void redlock_testing_stop(redlock_testing_t *kit) {
  if (kit == NULL)
    return;
  kit_run(kit, do_stop, 0, 0, NULL, NULL);
  uv_thread_join(&kit->thread);
  uv_loop_close(&kit->loop);
  kit_free(kit);
}

/* The kit's thread and loop, with nothing on it yet. */
static status_t kit_thread_start(redlock_testing_t *kit) {
  if (uv_loop_init(&kit->loop) != 0)
    return ST_EIO;
  kit->wake.data = kit;
  /* The kit's thread takes no asynchronous signals (they are the
   * application's), so that a reply written to a client that just went
   * away gives EPIPE, not a process-killing SIGPIPE.  It inherits the mask. */
  sigset_t all, saved;
  sigfillset(&all);
  int rc = uv_async_init(&kit->loop, &kit->wake, kit_wake);
  if (rc == 0) {
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    rc = uv_thread_create(&kit->thread, kit_thread, kit);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
  }
  if (rc == 0)
    return ST_OK;
  uv_walk(&kit->loop, kit_close_walk, NULL);
  uv_run(&kit->loop, UV_RUN_DEFAULT);
  uv_loop_close(&kit->loop);
  return ST_EIO;
}

/* The Unix sockets' directory, private to this kit. */
static status_t kit_make_dir(redlock_testing_t *kit) {
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 40)
    tmp = "/tmp";
  snprintf(kit->dir, sizeof kit->dir, "%s/redlock-testing-XXXXXX", tmp);
  if (mkdtemp(kit->dir) != NULL)
    return ST_OK;
  kit->dir[0] = '\0';
  return ST_EIO;
}

/* The masters, on the kit's thread, and their URIs. */
static status_t kit_start_masters(redlock_testing_t *kit) {
  status_t st = kit_run(kit, do_start, 0, 0, NULL, NULL);
  for (unsigned i = 0; st == ST_OK && i < kit->n; i++) {
    char uri[128];
    long long port = 0;
    if (kit->flags & REDLOCK_TESTING_TCP) {
      kit_run(kit, do_port, i, 0, NULL, &port);
      snprintf(uri, sizeof uri, "redis://127.0.0.1:%lld", port);
    } else {
      snprintf(uri, sizeof uri, "unix://%s/%u.sock", kit->dir, i);
    }
    kit->uris[i] = rl_strdup(uri);
    if (kit->uris[i] == NULL)
      st = ST_ENOMEM;
  }
  return st;
}

int redlock_testing_start(unsigned n, unsigned flags, redlock_testing_t **out) {
  if (out == NULL || n == 0 || n > REDLOCK_TESTING_MAX ||
      (flags & ~(REDLOCK_TESTING_TCP | REDLOCK_TESTING_VIRTUAL_TIME)) != 0)
    return REDLOCK_EINVAL;
  *out = NULL;
  redlock_testing_t *kit = rl_calloc(1, sizeof *kit);
  if (kit == NULL)
    return REDLOCK_ENOMEM;
  kit->n = n;
  kit->flags = flags;
  kit->epoch_us = realtime_us();
  kit->mono_start_us = clock_now_ns() / 1000u;
  if (uv_mutex_init(&kit->mutex) != 0) {
    rl_free(kit);
    return REDLOCK_EIO;
  }
  if (uv_cond_init(&kit->cond) != 0) {
    uv_mutex_destroy(&kit->mutex);
    rl_free(kit);
    return REDLOCK_EIO;
  }
  status_t st = (flags & REDLOCK_TESTING_TCP) ? ST_OK : kit_make_dir(kit);
  if (st == ST_OK)
    st = kit_thread_start(kit);
  if (st != ST_OK) {
    kit_free(kit);
    return (int)st;
  }
  st = kit_start_masters(kit);
  if (st != ST_OK) {
    redlock_testing_stop(kit);
    return (int)st;
  }
  *out = kit;
  return REDLOCK_OK;
}

unsigned redlock_testing_count(const redlock_testing_t *kit) { return kit == NULL ? 0 : kit->n; }

const char *redlock_testing_uri(const redlock_testing_t *kit, unsigned i) {
  return kit == NULL || i >= kit->n ? NULL : kit->uris[i];
}

int redlock_testing_add_nodes(const redlock_testing_t *kit, redlock_options_t *opts) {
  if (kit == NULL || opts == NULL)
    return REDLOCK_EINVAL;
  for (unsigned i = 0; i < kit->n; i++) {
    int rc = redlock_options_add_node(opts, kit->uris[i]);
    if (rc != REDLOCK_OK)
      return rc;
  }
  return REDLOCK_OK;
}

/* A call on master i (need_up: a fault, refused on a killed master): its
 * status, or (reads) the value it read. */
static long long on_master(redlock_testing_t *kit, unsigned i, int need_up, kit_fn fn, uint64_t arg,
                           const char *key) {
  if (kit == NULL || i >= kit->n)
    return REDLOCK_EINVAL;
  kit_call_t call = {.fn = fn, .i = i, .need_up = need_up, .arg = arg, .key = key};
  status_t st = kit_post(kit, &call);
  return st != ST_OK ? (long long)st : call.value;
}

int redlock_testing_kill(redlock_testing_t *kit, unsigned i) {
  return (int)on_master(kit, i, 1, do_kill, 0, NULL);
}

int redlock_testing_restart(redlock_testing_t *kit, unsigned i) {
  return (int)on_master(kit, i, 0, do_restart, 0, NULL);
}

int redlock_testing_pause(redlock_testing_t *kit, unsigned i) {
  return (int)on_master(kit, i, 1, do_pause, 1, NULL);
}

int redlock_testing_resume(redlock_testing_t *kit, unsigned i) {
  return (int)on_master(kit, i, 1, do_pause, 0, NULL);
}

int redlock_testing_slow(redlock_testing_t *kit, unsigned i, uint32_t delay_ms) {
  return (int)on_master(kit, i, 1, do_slow, delay_ms, NULL);
}

int redlock_testing_drop_key(redlock_testing_t *kit, unsigned i, const char *key) {
  return key == NULL ? REDLOCK_EINVAL : (int)on_master(kit, i, 1, do_drop_key, 0, key);
}

int redlock_testing_clock_jump(redlock_testing_t *kit, unsigned i, uint64_t ms) {
  return (int)on_master(kit, i, 1, do_clock_jump, ms, NULL);
}

int redlock_testing_failover(redlock_testing_t *kit, unsigned i, uint64_t lag_ms) {
  return (int)on_master(kit, i, 1, do_failover, lag_ms, NULL);
}

int redlock_testing_set_mode(redlock_testing_t *kit, unsigned i, redlock_testing_mode_t mode) {
  if (kit == NULL || (i >= kit->n && i != REDLOCK_TESTING_ALL) ||
      (mode != REDLOCK_TESTING_NORMAL && mode != REDLOCK_TESTING_GRANT &&
       mode != REDLOCK_TESTING_REFUSE))
    return REDLOCK_EINVAL;
  return (int)kit_run(kit, do_set_mode, i, (uint64_t)mode, NULL, NULL);
}

int redlock_testing_advance(redlock_testing_t *kit, uint64_t ms) {
  return kit == NULL ? REDLOCK_EINVAL : (int)kit_run(kit, do_advance, 0, ms, NULL, NULL);
}

int redlock_testing_has_key(redlock_testing_t *kit, unsigned i, const char *key) {
  return key == NULL ? REDLOCK_EINVAL : (int)on_master(kit, i, 0, do_has_key, 0, key);
}

int redlock_testing_key_count(redlock_testing_t *kit, const char *key) {
  if (kit == NULL || key == NULL)
    return REDLOCK_EINVAL;
  long long count = 0;
  kit_run(kit, do_key_count, 0, 0, key, &count);
  return (int)count;
}

long long redlock_testing_commands(redlock_testing_t *kit, unsigned i) {
  return on_master(kit, i, 0, do_commands, 0, NULL);
}
