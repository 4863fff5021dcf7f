/* election_observe.c: who leads an election, asked and followed without
 * campaigning (redlock_election_leader, redlock_election_observe).
 *
 *   example-election-observe [--no-quarantine] [redis://host:port ...]
 *                                        (default: redis://127.0.0.1:6379)
 *
 * Two candidates, "node-a" and "node-b" (two clients, each with its owner
 * label, as if they were two processes), campaign for "example:observed";
 * a third client, which never campaigns, observes it and prints every
 * change: the first leader, then, once that one resigns, the other.  The
 * observer polls only once a minute: what it sees sooner it learns from the
 * announcements on the election's release channel (the resign's release,
 * then the new leader's grant), so the hand-off shows within a round trip
 * or so.  At the end the example asks once (redlock_election_leader) and
 * prints what a quorum says.
 *
 * Freshly started masters are quarantined for max TTL (docs/safety.md);
 * --no-quarantine turns that off, which is only acceptable because these
 * masters hold no locks from before their start. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, pthread under -std=c11 */

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "redlock.h"

#define NAME "example:observed"
#define TTL_MS 10000u
#define POLL_MS 60000u

/* What the observer saw, for the main thread. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static redlock_leader_t g_view;
static unsigned g_changes;

static const char *state_name(int state) {
  return state == REDLOCK_LEADER_HELD ? "held" : state == REDLOCK_LEADER_NONE ? "none" : "unknown";
}

static void print_view(const char *who, const redlock_leader_t *v) {
  if (v->state == REDLOCK_LEADER_HELD)
    printf("%s: leader %s, term %" PRIu64 ", %" PRId64 " ms of lease left\n", who,
           v->owner[0] != '\0' ? v->owner : "(no label)", v->term, v->ttl_ms);
  else
    printf("%s: %s\n", who, state_name(v->state));
  fflush(stdout);
}

/* The loop thread: print, record, tell the main thread. */
static void on_change(redlock_observer_t *obs, const redlock_leader_t *view, void *arg) {
  (void)obs;
  (void)arg;
  print_view("observer", view);
  pthread_mutex_lock(&g_mu);
  g_view = *view;
  g_changes++;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_mu);
}

/* Waits (10 s at most) until the observer's view is HELD by `owner`. */
static int wait_leader(const char *owner) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  pthread_mutex_lock(&g_mu);
  int ok = 0, rc = 0;
  while (!(ok = g_view.state == REDLOCK_LEADER_HELD && strcmp(g_view.owner, owner) == 0) && rc == 0)
    rc = pthread_cond_timedwait(&g_cond, &g_mu, &until);
  pthread_mutex_unlock(&g_mu);
  return ok;
}

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  printf("%s: elected, term %" PRIu64 "\n", (const char *)arg, term);
  fflush(stdout);
}

static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  printf("%s: lost its term (%d)\n", (const char *)arg, reason);
  fflush(stdout);
}

static int open_client(redlock_t **out, int argc, char **argv, int first_uri, int no_quarantine,
                       const char *owner) {
  static char *const local[] = {"redis://127.0.0.1:6379"};
  char *const *uris = argc > first_uri ? argv + first_uri : local;
  int n = argc > first_uri ? argc - first_uri : 1;
  redlock_options_t *opts = redlock_options_new();
  int rc = opts != NULL ? 0 : REDLOCK_ENOMEM;
  for (int i = 0; i < n && rc == 0; i++)
    rc = redlock_options_add_node(opts, uris[i]);
  if (rc == 0 && owner != NULL)
    rc = redlock_options_set_owner(opts, owner);
  if (rc == 0 && no_quarantine)
    rc = redlock_options_set_quarantine(opts, 0);
  if (rc == 0)
    rc = redlock_open(out, opts);
  redlock_options_free(opts);
  if (rc != 0)
    fprintf(stderr, "open: %s\n", redlock_strerror(rc));
  return rc;
}

int main(int argc, char **argv) {
  int no_quarantine = argc > 1 && strcmp(argv[1], "--no-quarantine") == 0;
  int first = no_quarantine ? 2 : 1;
  redlock_t *a = NULL, *b = NULL, *watcher = NULL;
  if (open_client(&a, argc, argv, first, no_quarantine, "node-a") != 0 ||
      open_client(&b, argc, argv, first, no_quarantine, "node-b") != 0 ||
      open_client(&watcher, argc, argv, first, no_quarantine, NULL) != 0)
    return 1;
  int status = 1;
  redlock_observer_t *obs = NULL;
  redlock_election_t *ea = NULL, *eb = NULL;
  int rc = redlock_election_observe(watcher, NAME, POLL_MS, on_change, NULL, &obs);
  if (rc != 0) {
    fprintf(stderr, "observe: %s\n", redlock_strerror(rc));
    goto out;
  }
  /* a first: it wins; then b, which waits for a's release. */
  rc = redlock_elect(a, NAME, TTL_MS, on_elected, on_lost, (void *)"node-a", &ea);
  if (rc == 0 && !wait_leader("node-a")) {
    fprintf(stderr, "the observer did not see node-a lead\n");
    goto out;
  }
  if (rc == 0)
    rc = redlock_elect(b, NAME, TTL_MS, on_elected, on_lost, (void *)"node-b", &eb);
  if (rc != 0) {
    fprintf(stderr, "elect: %s\n", redlock_strerror(rc));
    goto out;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  printf("node-a resigns\n");
  redlock_resign(a, ea); /* its release wakes b's campaign and the observer */
  ea = NULL;
  if (!wait_leader("node-b")) {
    fprintf(stderr, "the observer did not see node-b lead\n");
    goto out;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("the observer saw the hand-off %ld ms after the resign (its poll: %u ms)\n",
         (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000), POLL_MS);
  redlock_leader_t now;
  rc = redlock_election_leader(watcher, NAME, &now);
  if (rc != 0) {
    fprintf(stderr, "leader: %s\n", redlock_strerror(rc));
    goto out;
  }
  print_view("asked once", &now);
  status = now.state == REDLOCK_LEADER_HELD && strcmp(now.owner, "node-b") == 0 ? 0 : 1;
out:
  if (obs != NULL)
    redlock_observe_stop(watcher, obs); /* no callback after this */
  if (ea != NULL)
    redlock_resign(a, ea);
  if (eb != NULL)
    redlock_resign(b, eb);
  redlock_close(watcher);
  redlock_close(a);
  redlock_close(b);
  printf("%s\n", status == 0 ? "OK" : "FAILED");
  return status;
}
