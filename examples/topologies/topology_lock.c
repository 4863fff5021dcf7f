/* topology_lock.c: the program every deployment of examples/topologies/ runs.
 *
 *   example-topology-lock URI [URI...]
 *
 * The URIs are the voters, of any kind: independent masters (redis://), a
 * master that Sentinel follows through failovers (redis-sentinel://), a whole
 * Redis Cluster (redis-cluster://).  The program is the same for all of them:
 * only the URIs say what the deployment is.  Two clients share the voters:
 * the first locks a few resources, the second is refused each of them while
 * it is held and gets it once released.  Each lock's votes are printed: a
 * Sentinel voter's name the master its sentinels gave, a Cluster voter's the
 * primary that owns the key's hash slot.  Exits 0 when every step went as
 * said. */
#include <stdio.h>

#include "redlock.h"

#define RESOURCES 4
#define TTL_MS 10000

static void log_to_stderr(int level, const char *msg, void *arg) {
  (void)level;
  (void)arg;
  fprintf(stderr, "redlock: %s\n", msg);
}

/* A client of the voters in argv labelled owner; NULL (and why on stderr)
 * when it cannot be had. */
static redlock_t *open_client(int argc, char **argv, const char *owner) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return NULL;
  int rc = 0;
  for (int i = 1; i < argc && rc == 0; i++)
    rc = redlock_options_add_node(opts, argv[i]);
  if (rc == 0)
    rc = redlock_options_set_owner(opts, owner);
  /* The run.sh scripts start their servers seconds before this runs: with
   * the restart quarantine on, a master up for less than the max TTL does
   * not vote yet.  Keep it on in a real deployment (docs/safety.md, §5). */
  if (rc == 0)
    rc = redlock_options_set_quarantine(opts, 0);
  if (rc == 0)
    rc = redlock_options_set_log(opts, REDLOCK_LOG_WARN, log_to_stderr, NULL);
  redlock_t *client = NULL;
  if (rc == 0)
    rc = redlock_open(&client, opts);
  redlock_options_free(opts); /* the client took a copy, or there is none */
  if (rc != REDLOCK_OK) {
    fprintf(stderr, "%s: %s\n", owner, redlock_strerror(rc));
    return NULL;
  }
  return client;
}

static void print_votes(redlock_t *client, const char *what) {
  char votes[1024];
  redlock_last_votes(client, votes, sizeof votes);
  printf("  %s: %s\n", what, votes);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s URI [URI...]\n", argv[0]);
    return 2;
  }
  redlock_t *a = open_client(argc, argv, "worker-a");
  redlock_t *b = a != NULL ? open_client(argc, argv, "worker-b") : NULL;
  if (b == NULL) {
    redlock_close(a); /* NULL is fine */
    return 1;
  }

  int failures = 0;
  for (int i = 0; i < RESOURCES; i++) {
    char resource[32];
    snprintf(resource, sizeof resource, "topology:orders:%d", i);
    redlock_lock_t *held, *other;
    int rc = redlock_lock(a, resource, TTL_MS, &held);
    if (rc != REDLOCK_OK) {
      printf("%s: worker-a: %s\n", resource, redlock_err_name(rc));
      print_votes(a, "votes");
      failures++;
      continue;
    }
    printf("%s: worker-a holds it for %lld ms\n", resource,
           (long long)redlock_lock_validity_ms(held));
    print_votes(a, "votes");

    /* One attempt while it is held: refused by a quorum (ELOCKED), not an
     * outage (ENOQUORUM). */
    rc = redlock_trylock(b, resource, TTL_MS, &other);
    printf("%s: worker-b while held: %s\n", resource, redlock_err_name(rc));
    if (rc == REDLOCK_OK) {
      redlock_unlock(b, other);
      failures++;
    } else if (rc != REDLOCK_ELOCKED) {
      failures++;
    }

    rc = redlock_unlock(a, held);
    if (rc != REDLOCK_OK) {
      printf("%s: worker-a unlock: %s\n", resource, redlock_err_name(rc));
      failures++;
    }
    /* Released: worker-b gets it (a wait, so a slow vote is no failure). */
    rc = redlock_lock_wait(b, resource, TTL_MS, 5000, &other);
    printf("%s: worker-b after the release: %s\n", resource, redlock_err_name(rc));
    if (rc == REDLOCK_OK)
      rc = redlock_unlock(b, other);
    if (rc != REDLOCK_OK)
      failures++;
  }
  redlock_close(b);
  redlock_close(a);
  printf("%s\n", failures == 0 ? "topology example: ok" : "topology example: FAILED");
  return failures == 0 ? 0 : 1;
}
