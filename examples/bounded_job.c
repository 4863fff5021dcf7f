/* bounded_job.c: a job whose lock may not outlive a time limit
 * (redlock_watch_bounded).
 *
 *   example-bounded-job [redis://host:port ...]   (default: redis://127.0.0.1:6379)
 *
 * Takes "example:job" with a 2 s TTL, has the watch extend it while the job
 * works, and bounds the whole hold at 5 s: a job that hangs cannot keep the
 * lock from the next worker for ever.  The job here "works" longer than the
 * bound, so the lost callback runs with REDLOCK_LOST_MAX_HOLD: the lock was
 * released (waking the next worker's redlock_lock_wait), and the job stops.
 * A loss (REDLOCK_LOST_EXPIRED) would stop it the same way; only the message
 * differs, since a bound reached is not a failure.  Masters must be past
 * their restart quarantine, as in basic.c. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "redlock.h"

static atomic_int g_ended; /* 0 while held, else the lost callback's reason */

static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)arg;
  atomic_store(&g_ended, reason); /* the loop thread: keep it short */
}

/* One step of the job's work: 100 ms. */
static void work_a_little(void) {
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* A client over the masters named on the command line (or the local one);
 * NULL after saying why. */
static redlock_t *open_client(int argc, char **argv) {
  static char *const local[] = {"redis://127.0.0.1:6379"};
  char *const *uris = argc > 1 ? argv + 1 : local;
  int n = argc > 1 ? argc - 1 : 1;
  redlock_options_t *opts = redlock_options_new();
  int rc = opts != NULL ? 0 : REDLOCK_ENOMEM;
  for (int i = 0; i < n && rc == 0; i++)
    rc = redlock_options_add_node(opts, uris[i]);
  redlock_t *client = NULL;
  if (rc == 0)
    rc = redlock_open(&client, opts);
  redlock_options_free(opts); /* NULL is fine; the client took a copy */
  if (rc != 0)
    fprintf(stderr, "open: %s\n", redlock_strerror(rc));
  return rc == 0 ? client : NULL;
}

int main(int argc, char **argv) {
  redlock_t *client = open_client(argc, argv);
  if (client == NULL)
    return 1;

  redlock_lock_t *lock;
  int rc = redlock_lock(client, "example:job", 2000, &lock);
  if (rc == REDLOCK_OK)
    rc = redlock_watch_bounded(client, lock, 5000, on_lost, NULL);
  if (rc != REDLOCK_OK) {
    fprintf(stderr, "lock: %s\n", redlock_strerror(rc));
    redlock_close(client);
    return 1;
  }
  printf("locked %s: working, for 5 s at most\n", redlock_lock_resource(lock));

  int steps = 0;
  while (atomic_load(&g_ended) == 0 && steps < 100) { /* 10 s of work: longer than the bound */
    work_a_little();
    steps++;
  }
  int reason = atomic_load(&g_ended);
  if (reason == REDLOCK_LOST_MAX_HOLD)
    printf("stopped after %d steps: the 5 s bound was reached and the lock released\n", steps);
  else if (reason != 0)
    printf("stopped after %d steps: the lock was lost (%s)\n", steps, redlock_err_name(reason));
  else
    printf("done in %d steps\n", steps);
  rc = redlock_unlock(client, lock); /* frees the handle; after the bound there is nothing left */
  redlock_close(client);
  return reason == 0 || reason == REDLOCK_LOST_MAX_HOLD ? 0 : 1;
}
