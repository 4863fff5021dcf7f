/* basic.c: the smallest blocking use of redlock-c.
 *
 *   example-basic [redis://host:port ...]      (default: redis://127.0.0.1:6379)
 *
 * Takes a lock on "example:resource" for 10 s over the given masters, does
 * its "work", and releases it.  With the default restart quarantine a master
 * that started less than 60 s ago does not vote yet: run this against
 * masters that have been up for a minute (redlock_last_votes shows
 * "quarantined" otherwise). */
#include <stdio.h>

#include "redlock.h"

static void log_to_stderr(int level, const char *msg, void *arg) {
  (void)level;
  (void)arg;
  fprintf(stderr, "redlock: %s\n", msg);
}

int main(int argc, char **argv) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return 1;
  int rc = 0;
  if (argc < 2)
    rc = redlock_options_add_node(opts, "redis://127.0.0.1:6379");
  for (int i = 1; i < argc && rc == 0; i++)
    rc = redlock_options_add_node(opts, argv[i]);
  if (rc == 0)
    rc = redlock_options_set_log(opts, REDLOCK_LOG_WARN, log_to_stderr, NULL);
  if (rc != 0) {
    fprintf(stderr, "bad option: %s\n", redlock_strerror(rc));
    redlock_options_free(opts);
    return 1;
  }

  redlock_t *client;
  rc = redlock_open(&client, opts); /* connects; returns within the connect timeout */
  redlock_options_free(opts);       /* the client took a copy */
  if (rc != 0) {
    fprintf(stderr, "redlock_open: %s\n", redlock_strerror(rc));
    return 1;
  }

  redlock_lock_t *lock;
  rc = redlock_lock(client, "example:resource", 10000, &lock);
  if (rc != REDLOCK_OK) {
    char votes[512];
    redlock_last_votes(client, votes, sizeof votes);
    fprintf(stderr, "lock: %s: %s\n  votes: %s\n", redlock_err_name(rc), redlock_strerror(rc),
            votes);
    redlock_close(client);
    return 1;
  }
  printf("locked %s (value %s), valid for %lld ms\n", redlock_lock_resource(lock),
         redlock_lock_value(lock), (long long)redlock_lock_validity_ms(lock));

  /* ... work on the resource; stop if redlock_lock_validity_ms(lock) <= 0 ... */

  rc = redlock_unlock(client, lock); /* frees the handle, whatever it returns */
  printf("unlock: %s\n", redlock_strerror(rc));
  redlock_close(client);
  return rc == REDLOCK_OK ? 0 : 1;
}
