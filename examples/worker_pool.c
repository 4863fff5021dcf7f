/* worker_pool.c: several threads share one client and one in-process job
 * queue; each job names a resource, and a worker holds
 * that resource's lock while it "processes" the job.  Workers that find a
 * resource busy wait for it with redlock_lock_wait: they are woken by the
 * holder's release (a PUBLISH from the release script), not by polling.
 *
 *   example-worker-pool [--no-quarantine] [redis://host:port ...]
 *                       (default: redis://127.0.0.1:6379)
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

#define WORKERS 4
#define JOBS 40
#define RESOURCES 3 /* jobs on the same resource must not run at once */

static redlock_t *client;
static atomic_int next_job;
static atomic_int running[RESOURCES]; /* workers inside each resource's lock */
static atomic_int done, failed, overlaps;

static void process(int job) {
  struct timespec work = {0, 2000000}; /* 2 ms of "work" */
  (void)job;
  nanosleep(&work, NULL);
}

static void *worker(void *arg) {
  (void)arg;
  for (int job; (job = atomic_fetch_add(&next_job, 1)) < JOBS;) {
    int r = job % RESOURCES;
    char resource[32];
    snprintf(resource, sizeof resource, "example:pool:%d", r);
    redlock_lock_t *lock;
    /* Hold for up to 5 s; wait up to 10 s for the resource to be free. */
    int rc = redlock_lock_wait(client, resource, 5000, 10000, &lock);
    if (rc != REDLOCK_OK) {
      fprintf(stderr, "job %d: %s\n", job, redlock_strerror(rc));
      atomic_fetch_add(&failed, 1);
      continue;
    }
    if (atomic_fetch_add(&running[r], 1) != 0)
      atomic_fetch_add(&overlaps, 1);
    process(job);
    atomic_fetch_sub(&running[r], 1);
    rc = redlock_unlock(client, lock); /* frees the handle; wakes a waiter */
    if (rc != REDLOCK_OK)
      fprintf(stderr, "job %d: unlock: %s\n", job, redlock_strerror(rc));
    atomic_fetch_add(&done, 1);
  }
  return NULL;
}

int main(int argc, char **argv) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return 1;
  int rc = 0, nodes = 0;
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

  printf("%d jobs done, %d failed, %d overlapping holders\n", atomic_load(&done),
         atomic_load(&failed), atomic_load(&overlaps));
  return atomic_load(&failed) == 0 && atomic_load(&overlaps) == 0 ? 0 : 1;
}
