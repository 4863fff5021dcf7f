/* consumer.c: the smallest program against an installed redlock-c, for
 * tests/install/deb_test.sh: takes a lock on one master and releases it.
 *
 *   deb-consumer redis://127.0.0.1:PORT
 *
 * The restart quarantine is turned off: the test's master has just started,
 * and the point is that the installed headers and libraries link and run,
 * not the quarantine (examples/basic.c, which keeps it, needs a master up
 * for a minute).  Prints "locked <resource>" and exits 0 on success. */
#include <stdio.h>

#include <redlock.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s redis://host:port\n", argv[0]);
    return 2;
  }
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return 1;
  int rc = redlock_options_add_node(opts, argv[1]);
  if (rc == REDLOCK_OK)
    rc = redlock_options_set_quarantine(opts, 0);
  if (rc != REDLOCK_OK) {
    fprintf(stderr, "options: %s\n", redlock_strerror(rc));
    redlock_options_free(opts);
    return 1;
  }
  redlock_t *client;
  rc = redlock_open(&client, opts);
  redlock_options_free(opts);
  if (rc != REDLOCK_OK) {
    fprintf(stderr, "redlock_open: %s\n", redlock_strerror(rc));
    return 1;
  }
  redlock_lock_t *lock;
  rc = redlock_lock(client, "deb-consumer:resource", 5000, &lock);
  if (rc != REDLOCK_OK) {
    char votes[512];
    redlock_last_votes(client, votes, sizeof votes);
    fprintf(stderr, "lock: %s (%s)\n", redlock_strerror(rc), votes);
    redlock_close(client);
    return 1;
  }
  printf("locked %s (library %s)\n", redlock_lock_resource(lock), redlock_version());
  rc = redlock_unlock(client, lock);
  printf("unlock: %s\n", redlock_strerror(rc));
  redlock_close(client);
  return rc == REDLOCK_OK ? 0 : 1;
}
