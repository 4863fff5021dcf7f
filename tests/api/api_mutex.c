/* api_mutex.c: mutual exclusion under contention, against real masters.
 *
 *  - 8 threads hammer ONE client (N = 5 masters) on one shared resource:
 *    half with redlock_lock_wait, half with redlock_lock (retry policy);
 *  - 8 threads split over TWO clients (two redlock_t, N = 3 masters) on one
 *    shared resource, same pattern.
 * Inside each critical section a non-atomic shared counter is incremented
 * with read / yield / write (lost updates show up if two hold at once) and an
 * atomic "holders" counter must never exceed 1.  Asserts: no overlap was seen,
 * every acquisition had positive validity, every unlock returned OK, the only
 * failures are the documented ones (ELOCKED for redlock_lock when its retries
 * run out; none for lock_wait, whose budget is generous), the counter equals
 * the number of successful acquisitions, and the key is gone afterwards.
 * Iteration counts are bounded; the whole file runs in a few seconds.
 */
#include <sched.h>

#include "fixture.h"

#define THREADS 8
#define ITERS 100
#define TTL 10000u
#define WAIT_MS 15000u

/* Five masters besides the group's three (fx_group). */
static fx_t *cluster5;

static int group_setup(void **state) {
  cluster5 = fx_new(5, NULL);
  return cluster5 != NULL ? fx_group_setup_3(state) : -1;
}

static int group_teardown(void **state) {
  fx_free(cluster5);
  return fx_group_teardown(state);
}

/* Closes the clients a failed test left open, on both sets of masters. */
static int close_clients(void **state) {
  for (int i = 0; i < FX_MAX_CLIENTS; i++)
    fx_close(cluster5, i);
  return fx_close_clients(state);
}

typedef struct {
  volatile long counter; /* guarded only by the distributed lock */
  atomic_int holders;
  atomic_int overlaps;
  atomic_int successes;
} shared_t;

typedef struct {
  shared_t *shared;
  redlock_t *client;
  const char *res;
  int use_wait;
  /* results, read after join */
  int successes;
  int busy;          /* ELOCKED from redlock_lock: allowed */
  int wait_failures; /* any failure of lock_wait */
  int other_errors;
  int last_error;
  int no_validity;
  int unlock_errors;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  shared_t *s = w->shared;
  for (int i = 0; i < ITERS; i++) {
    redlock_lock_t *lock = NULL;
    int rc = w->use_wait ? redlock_lock_wait(w->client, w->res, TTL, WAIT_MS, &lock)
                         : redlock_lock(w->client, w->res, TTL, &lock);
    if (rc != REDLOCK_OK) {
      if (lock != NULL)
        w->other_errors++;
      if (w->use_wait)
        w->wait_failures++;
      else if (rc == REDLOCK_ELOCKED)
        w->busy++;
      else
        w->other_errors++;
      if (!(rc == REDLOCK_ELOCKED && !w->use_wait))
        w->last_error = rc;
      continue;
    }
    if (redlock_lock_validity_ms(lock) <= 0)
      w->no_validity++;
    /* critical section */
    if (atomic_fetch_add(&s->holders, 1) != 0)
      atomic_fetch_add(&s->overlaps, 1);
    long v = s->counter;
    sched_yield();
    s->counter = v + 1;
    sched_yield();
    atomic_fetch_sub(&s->holders, 1);
    atomic_fetch_add(&s->successes, 1);
    w->successes++;
    if (redlock_unlock(w->client, lock) != REDLOCK_OK)
      w->unlock_errors++;
  }
  return NULL;
}

static void run_workers(redlock_t **clients, size_t n_clients, fx_t *c, const char *res) {
  shared_t shared;
  shared.counter = 0;
  atomic_init(&shared.holders, 0);
  atomic_init(&shared.overlaps, 0);
  atomic_init(&shared.successes, 0);
  worker_t workers[THREADS];
  pthread_t threads[THREADS];
  memset(workers, 0, sizeof workers);
  uint64_t t0 = rh_now_ms();
  for (int i = 0; i < THREADS; i++) {
    workers[i].shared = &shared;
    workers[i].client = clients[(size_t)i % n_clients];
    workers[i].res = res;
    workers[i].use_wait = (i / (int)n_clients) % 2 == 0;
    assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
  }
  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_join(threads[i], NULL), 0);
  uint64_t elapsed = rh_now_ms() - t0;

  int successes = 0, busy = 0;
  for (int i = 0; i < THREADS; i++) {
    worker_t *w = &workers[i];
    if (w->wait_failures || w->other_errors || w->unlock_errors || w->no_validity)
      fprintf(stderr,
              "worker %d (%s): wait failures %d, other errors %d (last %s), unlock errors %d, "
              "no validity %d\n",
              i, w->use_wait ? "lock_wait" : "lock", w->wait_failures, w->other_errors,
              redlock_err_name(w->last_error), w->unlock_errors, w->no_validity);
    assert_int_equal(w->wait_failures, 0);
    assert_int_equal(w->other_errors, 0);
    assert_int_equal(w->unlock_errors, 0);
    assert_int_equal(w->no_validity, 0);
    successes += w->successes;
    busy += w->busy;
  }
  printf("  %d threads on %zu client(s), %zu masters: %d acquisitions, %d ELOCKED, %llu ms\n",
         THREADS, n_clients, c->n, successes, busy, (unsigned long long)elapsed);
  assert_int_equal(atomic_load(&shared.overlaps), 0);
  assert_int_equal(atomic_load(&shared.holders), 0);
  assert_int_equal(atomic_load(&shared.successes), successes);
  assert_int_equal(shared.counter, successes);
  assert_int_equal(successes + busy, THREADS * ITERS);
  /* The lock_wait threads never fail, so at least half the work got done. */
  assert_true(successes >= THREADS * ITERS / 2);
  assert_nil_everywhere(c, res);
}

static redlock_t *open_hammer_client(fx_t *c) {
  /* Short retries so that waiting threads pick up a released lock quickly;
   * a generous request timeout so that a loaded (sanitized) build does not
   * turn slow replies into ENOQUORUM. */
  redlock_options_t *opts = fx_options_retry(c, 0, FX_NO_LOG, 100, 2, 3);
  assert_int_equal(redlock_options_set_timeouts(opts, 2000, 1000), REDLOCK_OK);
  return fx_open_free(c, opts);
}

static void test_threads_one_client(void **state) {
  (void)state;
  redlock_t *client = open_hammer_client(cluster5);
  FX_NAME(res, "mutex-one");
  run_workers(&client, 1, cluster5, res);
  fx_close_client(cluster5, client);
}

static void test_two_clients(void **state) {
  (void)state;
  redlock_t *clients[2] = {open_hammer_client(fx_group), open_hammer_client(fx_group)};
  FX_NAME(res, "mutex-two");
  run_workers(clients, 2, fx_group, res);
  fx_close_client(fx_group, clients[0]);
  fx_close_client(fx_group, clients[1]);
}

#define MUTEX_TEST(f) cmocka_unit_test_teardown(f, close_clients)

int main(void) {
  fx_use_profile(&fx_profile_api);
  fx_watchdog(120);
  const struct CMUnitTest tests[] = {
      MUTEX_TEST(test_threads_one_client),
      MUTEX_TEST(test_two_clients),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
