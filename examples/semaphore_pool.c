/* semaphore_pool.c: a pool of PERMITS seats for a scarce resource (think: a
 * licence server that accepts 3 sessions, an API with 3 concurrent calls
 * allowed), shared by every process that runs this program against the same
 * masters.  Each of WORKERS threads takes a seat with
 * redlock_semaphore_acquire, waiting for one to be freed when all are taken:
 * it is woken by the release of any seat (a PUBLISH from the release
 * script), not by polling.  A long job keeps its seat alive with
 * redlock_watch.  Run it in several terminals at once: never more than
 * PERMITS jobs run together, across all of them.
 *
 *   example-semaphore-pool [--no-quarantine] [redis://host:port ...]
 *                          (default: redis://127.0.0.1:6379)
 *
 * --no-quarantine is for masters started moments ago (a test setup): the
 * restart quarantine would otherwise keep their votes out for max TTL. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "redlock.h"

#define WORKERS 6
#define JOBS 24
#define PERMITS 3 /* every process must use the same limit for the name */
#define NAME "example:licences"
#define TTL_MS 2000u   /* a seat left by a crashed process frees itself after this */
#define WAIT_MS 30000u /* how long a job waits for a seat */

static redlock_t *client;
static atomic_int next_job;
static atomic_int seated, most_seated; /* in this process */
static atomic_int done, failed;

static void on_seat_lost(redlock_lock_t *permit, int reason, void *arg) {
  /* The watch could not extend the seat in time (masters unreachable): the
   * job must stop using the resource.  Here we only report it. */
  (void)arg;
  fprintf(stderr, "seat %s lost: %s\n", redlock_lock_resource(permit), redlock_strerror(reason));
}

static void run_job(int job, const redlock_lock_t *permit) {
  /* Jobs last 50..350 ms: some outlive a third of the TTL, which the watch
   * takes care of. */
  struct timespec work = {0, (long)(50 + (job * 37) % 300) * 1000000L};
  printf("job %2d on %s\n", job, redlock_lock_resource(permit));
  nanosleep(&work, NULL);
}

static void *worker(void *arg) {
  (void)arg;
  for (int job; (job = atomic_fetch_add(&next_job, 1)) < JOBS;) {
    redlock_lock_t *permit;
    int rc = redlock_semaphore_acquire(client, NAME, PERMITS, TTL_MS, WAIT_MS, &permit);
    if (rc != REDLOCK_OK) {
      /* REDLOCK_EINVAL here: another process uses another limit (see the log). */
      fprintf(stderr, "job %d: %s\n", job, redlock_strerror(rc));
      atomic_fetch_add(&failed, 1);
      continue;
    }
    redlock_watch(client, permit, on_seat_lost, NULL);
    int now = atomic_fetch_add(&seated, 1) + 1;
    for (int seen = atomic_load(&most_seated);
         now > seen && !atomic_compare_exchange_weak(&most_seated, &seen, now);)
      ;
    run_job(job, permit);
    atomic_fetch_sub(&seated, 1);
    rc = redlock_unlock(client, permit); /* frees the seat; wakes a waiting job */
    if (rc != REDLOCK_OK)
      fprintf(stderr, "job %d: release: %s\n", job, redlock_strerror(rc));
    atomic_fetch_add(&done, 1);
  }
  return NULL;
}

static void log_cb(int level, const char *msg, void *arg) {
  (void)arg;
  if (level >= REDLOCK_LOG_WARN)
    fprintf(stderr, "redlock: %s\n", msg);
}

int main(int argc, char **argv) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return 1;
  int rc = redlock_options_set_log(opts, REDLOCK_LOG_WARN, log_cb, NULL), nodes = 0;
  for (int i = 1; i < argc && rc == 0; i++) {
    if (strcmp(argv[i], "--no-quarantine") == 0)
      rc = redlock_options_set_quarantine(opts, 0);
    else if ((rc = redlock_options_add_node(opts, argv[i])) == 0)
      nodes++;
  }
  if (rc == 0 && nodes == 0)
    rc = redlock_options_add_node(opts, "redis://127.0.0.1:6379");
  if (rc == 0)
    rc = redlock_open(&client, opts);
  redlock_options_free(opts);
  if (rc != 0) {
    fprintf(stderr, "cannot start: %s\n", redlock_strerror(rc));
    return 1;
  }

  pthread_t threads[WORKERS];
  for (int i = 0; i < WORKERS; i++)
    pthread_create(&threads[i], NULL, worker, NULL);
  for (int i = 0; i < WORKERS; i++)
    pthread_join(threads[i], NULL);
  redlock_close(client);

  printf("%d jobs done, %d failed; at most %d seated at once here (limit %d)\n", atomic_load(&done),
         atomic_load(&failed), atomic_load(&most_seated), PERMITS);
  return atomic_load(&failed) == 0 && atomic_load(&most_seated) <= PERMITS ? 0 : 1;
}
