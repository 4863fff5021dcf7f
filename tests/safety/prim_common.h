/* prim_common.h: helpers of the coordination-primitive tests
 * (test_semaphore.c, test_rwlock.c) on top of the safety fixture
 * (sf_common.h): counting keys on the masters, waiting for a condition on a
 * quorum of them, and a holder in a child process that can be SIGKILLed (a
 * client that dies without releasing).  Children are killed by PID, by the
 * test or by prim_teardown when a test failed halfway. */
#ifndef PRIM_COMMON_H
#define PRIM_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sf_common.h"

/* Keys matching a glob pattern on a server (KEYS: test data sets only). */
long prim_count_keys(rh_server_t *s, const char *pattern);
/* Members of a sorted set on a server (ZCARD). */
long prim_zcard(rh_server_t *s, const char *key);
/* Masters (of the fixture's first n) on which key exists. */
size_t prim_exists_on(sf_fixture_t *fx, size_t n, const char *key);
/* Waits until key exists on at least `at_least` of the first n masters. */
int prim_wait_exists_on(sf_fixture_t *fx, size_t n, const char *key, size_t at_least,
                        int timeout_ms);
/* Subscribers to a channel on a server (PUBSUB NUMSUB). */
long prim_numsub(rh_server_t *s, const char *channel);
/* Waits until every one of the first n masters has >= at_least subscribers. */
int prim_wait_subscribed(sf_fixture_t *fx, size_t n, const char *channel, long at_least,
                         int timeout_ms);
/* Waits until every one of the first n masters has <= at_most subscribers. */
int prim_wait_subscribed_at_most(sf_fixture_t *fx, size_t n, const char *channel, long at_most,
                                 int timeout_ms);

/* What a child holder does. */
typedef enum {
  PRIM_CHILD_SEM = 1, /* redlock_semaphore_acquire(name, limit, ttl, wait) */
  PRIM_CHILD_READ,    /* redlock_rwlock_read(name, ttl, wait) */
  PRIM_CHILD_WRITE,   /* redlock_rwlock_write(name, ttl, wait) */
} prim_child_kind_t;

/* Forks a child that opens its own client over the fixture's first n
 * masters (quarantine off, request timeout SF_REQUEST_MS), makes the call,
 * writes its status to a pipe (read it with prim_child_status), and then
 * sleeps, holding whatever it got, until it is killed.  Call it before this
 * process opens a client or starts a thread: a child forked from a threaded
 * process could inherit a lock (malloc's) held by another thread.  Returns
 * the child's PID (> 0). */
pid_t prim_child_start(sf_fixture_t *fx, size_t n, prim_child_kind_t kind, const char *name,
                       uint32_t limit, uint32_t ttl_ms, uint32_t wait_ms);
/* The child's call status, or 1 when it has not answered within timeout_ms. */
int prim_child_status(pid_t pid, int timeout_ms);
/* SIGKILL + reap. */
void prim_child_kill(pid_t pid);

/* ---- holding intervals, for the chaos tests ----------------------------------------
 * A holder records [grant, min(unlock, end of validity)] on the monotonic
 * clock (all clients are in this process); the checks look for overlaps. */
#define PRIM_MAX_INTERVALS 8192

typedef struct {
  uint64_t start_us, end_us;
  int exclusive; /* a write hold: overlaps nothing */
} prim_interval_t;

typedef struct {
  pthread_mutex_t mu;
  size_t n;
  prim_interval_t iv[PRIM_MAX_INTERVALS];
} prim_history_t;

uint64_t prim_now_us(void);
void prim_history_init(prim_history_t *h);
void prim_history_destroy(prim_history_t *h);
/* Records a hold granted at start_us (read after the grant) whose validity
 * was validity_ms then, released (or about to be) at end_us. */
void prim_history_add(prim_history_t *h, uint64_t start_us, int64_t validity_ms, uint64_t end_us,
                      int exclusive);
/* Most intervals that contain one instant. */
int prim_history_max_depth(const prim_history_t *h);
/* Pairs of overlapping intervals of which one is exclusive. */
size_t prim_history_exclusive_overlaps(const prim_history_t *h);

/* For duration_ms: again and again, SIGSTOPs two random masters of the
 * fixture's five (a majority keeps running) for 100..600 ms, then resumes
 * them for 50..250 ms. */
void prim_pause_chaos(sf_fixture_t *fx, unsigned duration_ms, unsigned seed);

/* cmocka teardown: kills children left running, then sf_teardown. */
int prim_teardown(void **state);

#endif
