/* who_holds.c: who holds a lock, asked by anyone (owner labels and
 * redlock_inspect).
 *
 *   example-who-holds [--no-quarantine] [redis://host:port ...]
 *                                        (default: redis://127.0.0.1:6379)
 *
 * A worker whose client carries the owner label "report-worker-7" takes
 * "example:report" for 30 s.  An operator's client, with no label of its
 * own, asks the masters who holds it (one read round, nothing written) and
 * prints the quorum's view: held or not, the holder's label, the TTL left
 * on the masters that hold it and the per-master detail.  Once the worker
 * has released, the same question says nobody holds it.  The label is in
 * the lock's value ("<32 hex digits>~report-worker-7"), so anyone who can
 * read the masters can read it: a name, never a secret.
 *
 * Freshly started masters are quarantined for max TTL (docs/safety.md);
 * --no-quarantine turns that off, which is only acceptable because these
 * masters hold no locks from before their start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"

#define RESOURCE "example:report"
#define TTL_MS 30000u

/* The worker's client and the operator's, from one set of options: the
 * label is the worker's alone ("" takes it off again). */
static int open_clients(redlock_t **worker, redlock_t **operator_, int argc, char **argv,
                        int first_uri, int no_quarantine) {
  redlock_options_t *opts = redlock_options_new();
  int rc = opts != NULL ? 0 : REDLOCK_ENOMEM;
  if (argc <= first_uri && rc == 0)
    rc = redlock_options_add_node(opts, "redis://127.0.0.1:6379");
  for (int i = first_uri; i < argc && rc == 0; i++)
    rc = redlock_options_add_node(opts, argv[i]);
  if (rc == 0 && no_quarantine)
    rc = redlock_options_set_quarantine(opts, 0);
  if (rc == 0)
    rc = redlock_options_set_owner(opts, "report-worker-7");
  if (rc == 0)
    rc = redlock_open(worker, opts); /* the client keeps a copy of the options */
  if (rc == 0)
    rc = redlock_options_set_owner(opts, "");
  if (rc == 0)
    rc = redlock_open(operator_, opts);
  redlock_options_free(opts); /* also when redlock_open failed: the options stay ours */
  if (rc != 0)
    fprintf(stderr, "open: %s\n", redlock_strerror(rc));
  return rc;
}

/* Asks the masters about RESOURCE and prints their view: the JSON object
 * redlock_inspect writes, measured first (size 0), then read whole.
 * Returns it (the caller frees it), or NULL. */
static char *ask(redlock_t *client) {
  int need = redlock_inspect(client, RESOURCE, REDLOCK_INSPECT_LOCK, NULL, 0);
  if (need < 0) {
    fprintf(stderr, "inspect: %s\n", redlock_strerror(need));
    return NULL;
  }
  /* The second read may see a little more (a TTL with more digits): room. */
  size_t size = (size_t)need + 256;
  char *view = malloc(size);
  int got = view != NULL ? redlock_inspect(client, RESOURCE, REDLOCK_INSPECT_LOCK, view, size)
                         : REDLOCK_ENOMEM;
  if (got < 0 || (size_t)got >= size) {
    fprintf(stderr, "inspect: %s\n", got < 0 ? redlock_strerror(got) : "the view grew");
    free(view);
    return NULL;
  }
  printf("the masters say: %s\n", view);
  return view;
}

int main(int argc, char **argv) {
  int no_quarantine = argc > 1 && strcmp(argv[1], "--no-quarantine") == 0;
  int first = no_quarantine ? 2 : 1;
  redlock_t *worker = NULL, *operator_ = NULL;
  if (open_clients(&worker, &operator_, argc, argv, first, no_quarantine) != 0) {
    redlock_close(worker);
    return 1;
  }
  int status = 1;
  redlock_lock_t *lock = NULL;
  int rc = redlock_lock(worker, RESOURCE, TTL_MS, &lock);
  if (rc != 0) {
    fprintf(stderr, "lock: %s\n", redlock_strerror(rc));
    goto out;
  }
  printf("the worker holds %s as %s (value %s)\n", RESOURCE, redlock_lock_owner(lock),
         redlock_lock_value(lock));
  char *held = ask(operator_);
  int saw_holder = held != NULL && strstr(held, "\"held\":true") != NULL &&
                   strstr(held, "\"owner\":\"report-worker-7\"") != NULL;
  free(held);
  rc = redlock_unlock(worker, lock);
  if (rc != 0)
    fprintf(stderr, "unlock: %s\n", redlock_strerror(rc));
  printf("the worker released it\n");
  char *free_view = ask(operator_);
  int saw_free = free_view != NULL && strstr(free_view, "\"held\":false") != NULL;
  free(free_view);
  if (saw_holder && saw_free && rc == 0) {
    printf("OK\n");
    status = 0;
  }
out:
  redlock_close(operator_);
  redlock_close(worker);
  return status;
}
