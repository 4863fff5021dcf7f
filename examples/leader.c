/* leader.c: leader election with redlock_elect.  Three "nodes" (three
 * clients, as three processes would have) campaign for the same name; the
 * leader does the work, every write carrying its term to a store that
 * rejects terms older than the newest it has seen (what a real database
 * would do with a conditional write).  Each leader steps down after about a
 * second (redlock_resign), which hands over at once to a waiting campaigner
 * (woken by the release), and campaigns again a little later: campaigning
 * again at once could win the name straight back before the others hear of
 * the release.
 *
 *   example-leader [--no-quarantine] [--seconds N] [redis://host:port ...]
 *                  (default: redis://127.0.0.1:6379, 5 seconds)
 *
 * What a leader must do, shown below:
 *  - act only between on_elected and on_lost, and only while
 *    redlock_election_validity_ms() > 0 (on_lost comes after the fact);
 *  - pass the term to every resource it writes; the resource keeps the
 *    largest term seen and refuses smaller ones (docs/safety.md).
 * --no-quarantine is for masters started moments ago (a test setup). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redlock.h"

#define NODES 3
#define NAME "example:leader"
#define TTL_MS 3000u
#define TERM_MS 1000  /* a leader steps down after this long */
#define REJOIN_MS 200 /* and campaigns again this long after */

/* The protected resource: accepts a write only with the newest term. */
typedef struct {
  pthread_mutex_t mu;
  uint64_t newest_term;
  unsigned writes, rejected;
} store_t;

static int store_write(store_t *store, uint64_t term) {
  pthread_mutex_lock(&store->mu);
  int ok = term >= store->newest_term;
  if (ok) {
    store->newest_term = term;
    store->writes++;
  } else {
    store->rejected++;
  }
  pthread_mutex_unlock(&store->mu);
  return ok;
}

typedef struct {
  int id;
  redlock_t *client;
  redlock_election_t *election;
  pthread_mutex_t mu; /* the callbacks run on the client's loop thread */
  int leader;
  uint64_t term;
  unsigned terms;
} node_t;

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  node_t *node = arg;
  pthread_mutex_lock(&node->mu);
  node->leader = 1;
  node->term = term;
  node->terms++;
  pthread_mutex_unlock(&node->mu);
  printf("node %d: elected, term %llu\n", node->id, (unsigned long long)term);
  fflush(stdout);
}

static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  node_t *node = arg;
  pthread_mutex_lock(&node->mu);
  node->leader = 0;
  pthread_mutex_unlock(&node->mu);
  printf("node %d: leadership lost (%s); campaigning again\n", node->id, redlock_err_name(reason));
  fflush(stdout);
}

static int campaign(node_t *node) {
  int rc = redlock_elect(node->client, NAME, TTL_MS, on_elected, on_lost, node, &node->election);
  if (rc != REDLOCK_OK)
    fprintf(stderr, "node %d: redlock_elect: %s\n", node->id, redlock_strerror(rc));
  return rc;
}

int main(int argc, char **argv) {
  int no_quarantine = 0, seconds = 5, n_nodes = 0;
  const char *uris[16];
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--no-quarantine") == 0)
      no_quarantine = 1;
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atoi(argv[++i]);
    else if (n_nodes < 16)
      uris[n_nodes++] = argv[i];
  }
  if (n_nodes == 0)
    uris[n_nodes++] = "redis://127.0.0.1:6379";

  store_t store = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
  node_t nodes[NODES];
  memset(nodes, 0, sizeof nodes);
  int status = 0;
  for (int i = 0; i < NODES; i++) {
    nodes[i].id = i;
    pthread_mutex_init(&nodes[i].mu, NULL);
    redlock_options_t *opts = redlock_options_new();
    if (opts == NULL)
      return 1;
    for (int k = 0; k < n_nodes; k++)
      if (redlock_options_add_node(opts, uris[k]) != REDLOCK_OK) {
        fprintf(stderr, "bad master URI: %s\n", uris[k]);
        return 1;
      }
    if (no_quarantine)
      redlock_options_set_quarantine(opts, 0);
    int rc = redlock_open(&nodes[i].client, opts);
    redlock_options_free(opts);
    if (rc != REDLOCK_OK || campaign(&nodes[i]) != REDLOCK_OK) {
      fprintf(stderr, "node %d: %s\n", i, redlock_strerror(rc));
      return 1;
    }
  }

  /* The work: every 50 ms, the leader writes with its term. */
  uint64_t end = now_ms() + (uint64_t)seconds * 1000u;
  uint64_t leader_since[NODES] = {0};
  uint64_t rejoin_at[NODES] = {0}; /* a node that stepped down campaigns again then */
  while (now_ms() < end) {
    struct timespec tick = {0, 50 * 1000000L};
    nanosleep(&tick, NULL);
    for (int i = 0; i < NODES; i++) {
      node_t *node = &nodes[i];
      if (rejoin_at[i] != 0) {
        if (now_ms() >= rejoin_at[i]) {
          rejoin_at[i] = 0;
          if (campaign(node) != REDLOCK_OK)
            status = 1;
        }
        continue;
      }
      pthread_mutex_lock(&node->mu);
      int leader = node->leader;
      uint64_t term = node->term;
      pthread_mutex_unlock(&node->mu);
      /* on_lost is after the fact: check the validity before acting. */
      if (!leader || redlock_election_validity_ms(node->election) <= 0) {
        leader_since[i] = 0;
        continue;
      }
      if (!store_write(&store, term))
        printf("node %d: write with term %llu rejected: no longer leader\n", i,
               (unsigned long long)term);
      if (leader_since[i] == 0)
        leader_since[i] = now_ms();
      if (now_ms() - leader_since[i] >= TERM_MS) {
        /* Step down: the release wakes the next campaigner at once. */
        printf("node %d: resigning term %llu\n", i, (unsigned long long)term);
        fflush(stdout);
        pthread_mutex_lock(&node->mu);
        node->leader = 0;
        pthread_mutex_unlock(&node->mu);
        redlock_resign(node->client, node->election); /* no callback after this */
        node->election = NULL;
        leader_since[i] = 0;
        rejoin_at[i] = now_ms() + REJOIN_MS;
      }
    }
  }

  unsigned terms = 0;
  for (int i = 0; i < NODES; i++) {
    if (nodes[i].election != NULL)
      redlock_resign(nodes[i].client, nodes[i].election);
    redlock_close(nodes[i].client);
    terms += nodes[i].terms;
    pthread_mutex_destroy(&nodes[i].mu);
  }
  printf("%u terms, %u writes, %u rejected\n", terms, store.writes, store.rejected);
  if (terms == 0) {
    fprintf(stderr, "nobody was elected: are the masters up (and out of quarantine)?\n");
    status = 1;
  }
  return status;
}
