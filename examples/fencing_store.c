/* fencing_store.c: why a lock needs fencing tokens, and what the resource
 * has to do with them (docs/safety.md, sections 3, 6 and 7).
 *
 *   example-fencing-store [--no-quarantine] [redis://host:port ...]
 *                                        (default: redis://127.0.0.1:6379)
 *
 * A toy "storage service" (a struct behind a mutex, standing in for a
 * database or a file server) and two clients, A and B: two redlock_t, as if
 * in two processes, both with fencing on.
 *
 *   1. A takes the lock with a short ttl and writes with its token.
 *   2. A checks that its lock is still valid, and then "pauses" (a GC pause,
 *      a page fault storm, a stopped VM) for longer than the ttl.  The lock
 *      expires in Redis while A is not looking.
 *   3. B takes the lock (legitimately: it has expired) and writes.
 *   4. A resumes and writes, trusting the validity check it made before the
 *      pause.  Without fencing this stale write would overwrite B's data; the
 *      storage rejects it because A's token is smaller than one it has seen.
 *   5. An administrator revokes B's lock (redlock_revoke: B looks stuck) and
 *      tells the storage the fence the revoke raised.  B's next write is
 *      rejected at once (its token is below the fence), its extension fails
 *      (the lock is lost), and the next holder's token is above the fence.
 *
 * The storage's rule (the check and the write are atomic, under its mutex):
 *   - a write carries (token, holder id); token 0 means "no token": rejected;
 *   - token >  largest seen: accepted (a new holder); it becomes the largest;
 *   - token == largest seen: accepted only from the holder that brought it
 *     (the same holder writing again); another holder with an equal token is
 *     rejected, so that two grants can never interleave writes;
 *   - token <  largest seen: rejected (a stale holder).
 * Under the assumptions listed in docs/safety.md, a grant whose acquisition
 * began after an earlier grant was made gets a strictly larger token, so the
 * equal-token case only matters as a safety net.  The holder id here is the
 * lock's random value (redlock_lock_value).
 *
 * Restart quarantine: by default a master that started less than max TTL
 * (60 s) ago does not vote, because it may have forgotten locks it held
 * before a restart (docs/safety.md, section 5).  Masters you have
 * just started for this example are therefore quarantined for a minute and
 * the lock fails with REDLOCK_ENOQUORUM.  --no-quarantine turns the
 * quarantine off, which is only acceptable here because these masters hold
 * no locks from before their start.  Do not do that in production. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, pthread under -std=c11 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "redlock.h"

#define RESOURCE "example:fencing_store"
#define TTL_A_MS 1000u /* A's short lease */
#define TTL_B_MS 10000u

/* ---- the storage service ---------------------------------------------------- */

typedef struct {
  pthread_mutex_t mutex;
  uint64_t max_token;  /* largest token seen with an accepted write */
  char max_holder[64]; /* the holder that brought it */
  char data[128];      /* the "stored" value */
  unsigned accepted, rejected;
} store_t;

/* Accepts the write if the token is current (rule above); returns 1 if
 * accepted, 0 if rejected, and says why in *why. */
static int store_write(store_t *s, uint64_t token, const char *holder, const char *data,
                       const char **why) {
  int ok;
  pthread_mutex_lock(&s->mutex);
  if (token == 0) {
    ok = 0;
    *why = "no fencing token";
  } else if (token > s->max_token) {
    ok = 1;
    *why = s->max_token == 0 ? "first token seen" : "newer token: a new holder";
    s->max_token = token;
    snprintf(s->max_holder, sizeof s->max_holder, "%s", holder);
  } else if (token == s->max_token) {
    ok = strcmp(holder, s->max_holder) == 0;
    *why = ok ? "same token, same holder" : "same token from another holder";
  } else {
    ok = 0;
    *why = "token older than the largest seen: stale holder";
  }
  if (ok) {
    snprintf(s->data, sizeof s->data, "%s", data);
    s->accepted++;
  } else {
    s->rejected++;
  }
  pthread_mutex_unlock(&s->mutex);
  return ok;
}

/* An administrator's revoke: from now on only a token above `fence` (the
 * one redlock_revoke raised the lock's counter to) is accepted. */
static void store_revoke(store_t *s, uint64_t fence) {
  pthread_mutex_lock(&s->mutex);
  if (fence > s->max_token) {
    s->max_token = fence;
    s->max_holder[0] = '\0'; /* nobody: an equal token is refused too */
  }
  pthread_mutex_unlock(&s->mutex);
}

/* ---- helpers --------------------------------------------------------------------- */

static void log_to_stderr(int level, const char *msg, void *arg) {
  (void)level;
  (void)arg;
  fprintf(stderr, "  redlock: %s\n", msg);
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ; /* a signal woke us early: sleep the rest */
}

static int open_client(redlock_t **out, int argc, char **argv, int first_uri, int no_quarantine) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return REDLOCK_ENOMEM;
  int rc = 0;
  if (first_uri >= argc)
    rc = redlock_options_add_node(opts, "redis://127.0.0.1:6379");
  for (int i = first_uri; i < argc && rc == 0; i++)
    rc = redlock_options_add_node(opts, argv[i]);
  if (rc == 0)
    rc = redlock_options_set_fencing(opts, 1);
  /* Only on request.  Freshly started masters are quarantined for max TTL
   * (60 s): they may have forgotten locks from before a restart, so their
   * votes do not count yet.  Masters started for this example hold no such
   * locks; production code keeps the quarantine on. */
  if (rc == 0 && no_quarantine)
    rc = redlock_options_set_quarantine(opts, 0);
  if (rc == 0)
    rc = redlock_options_set_log(opts, REDLOCK_LOG_WARN, log_to_stderr, NULL);
  if (rc == 0)
    rc = redlock_open(out, opts);
  redlock_options_free(opts); /* redlock_open took a copy */
  return rc;
}

static void report_lock_failure(redlock_t *client, const char *who, int rc) {
  char votes[512];
  redlock_last_votes(client, votes, sizeof votes);
  fprintf(stderr, "%s: lock failed: %s (%s)\n  votes: %s\n", who, redlock_err_name(rc),
          redlock_strerror(rc), votes);
  if (strstr(votes, "quarantined") != NULL)
    fprintf(stderr, "  (masters started less than max TTL ago do not vote yet: wait a minute, "
                    "or pass --no-quarantine for freshly started test masters)\n");
}

static int write_as(store_t *store, const char *who, const redlock_lock_t *lock, uint64_t token,
                    const char *data) {
  const char *why;
  int ok = store_write(store, token, redlock_lock_value(lock), data, &why);
  printf("%s: write \"%s\" with token %" PRIu64 " -> %s (%s)\n", who, data, token,
         ok ? "ACCEPTED" : "REJECTED", why);
  return ok;
}

/* ---- the demonstration ----------------------------------------------------------- */

int main(int argc, char **argv) {
  int first_uri = 1, no_quarantine = 0;
  if (argc > 1 && strcmp(argv[1], "--no-quarantine") == 0) {
    no_quarantine = 1;
    first_uri = 2;
  } else if (argc > 1 && argv[1][0] == '-') {
    fprintf(stderr, "usage: %s [--no-quarantine] [redis://host:port ...]\n", argv[0]);
    return 2;
  }

  store_t store;
  memset(&store, 0, sizeof store);
  pthread_mutex_init(&store.mutex, NULL);

  redlock_t *a = NULL, *b = NULL;
  int rc = open_client(&a, argc, argv, first_uri, no_quarantine);
  if (rc == 0)
    rc = open_client(&b, argc, argv, first_uri, no_quarantine);
  if (rc != 0) {
    fprintf(stderr, "cannot open a client: %s\n", redlock_strerror(rc));
    redlock_close(a);
    return 1;
  }
  if (no_quarantine)
    printf("restart quarantine OFF (--no-quarantine): for freshly started test masters only\n");

  int status = 1;
  redlock_lock_t *lock_a = NULL, *lock_b = NULL;

  /* 1. A takes the lock with a short ttl and writes. */
  rc = redlock_lock(a, RESOURCE, TTL_A_MS, &lock_a);
  if (rc != REDLOCK_OK) {
    report_lock_failure(a, "A", rc);
    goto out;
  }
  uint64_t token_a = redlock_lock_fence(lock_a);
  printf("A: locked %s for %u ms: token %" PRIu64 ", valid for %" PRId64 " ms\n", RESOURCE,
         TTL_A_MS, token_a, redlock_lock_validity_ms(lock_a));
  write_as(&store, "A", lock_a, token_a, "written by A (1)");

  /* 2. A checks its validity, then pauses past the expiry.  The check was
   *    true when made; nothing can keep it true across a pause. */
  if (redlock_lock_validity_ms(lock_a) > 0) {
    printf("A: validity %" PRId64 " ms left: about to write again... (pauses for %u ms)\n",
           redlock_lock_validity_ms(lock_a), TTL_A_MS + 500);
    sleep_ms(TTL_A_MS + 500);
  }

  /* 3. Meanwhile the lock expired in Redis; B takes it and writes. */
  rc = redlock_lock(b, RESOURCE, TTL_B_MS, &lock_b);
  if (rc != REDLOCK_OK) {
    report_lock_failure(b, "B", rc);
    goto out;
  }
  uint64_t token_b = redlock_lock_fence(lock_b);
  printf("B: locked %s for %u ms: token %" PRIu64 " (%s A's %" PRIu64 ")\n", RESOURCE, TTL_B_MS,
         token_b, token_b > token_a ? ">" : "NOT >", token_a);
  write_as(&store, "B", lock_b, token_b, "written by B (1)");

  /* 4. A resumes and makes the write it had decided on before its pause. */
  printf("A: resumes; its lock's validity is now %" PRId64 " ms (it does not look)\n",
         redlock_lock_validity_ms(lock_a));
  int stale_accepted = write_as(&store, "A", lock_a, token_a, "written by A (2, stale)");

  /* B, still the holder, keeps writing with its token. */
  int b_again = write_as(&store, "B", lock_b, token_b, "written by B (2)");

  /* 5. An administrator takes the lock back from B and tells the storage. */
  uint64_t fence = 0;
  rc = redlock_revoke(a, RESOURCE, &fence);
  printf("admin: revoke %s: %s, fence raised to %" PRIu64 " (%s B's %" PRIu64 ")\n", RESOURCE,
         redlock_err_name(rc), fence, fence > token_b ? ">" : "NOT >", token_b);
  store_revoke(&store, fence);
  int revoked_accepted = write_as(&store, "B", lock_b, token_b, "written by B (3, revoked)");
  int extend_rc = redlock_extend(b, lock_b, TTL_B_MS);
  printf("B: extend: %s (the revoke took the lock back)\n", redlock_err_name(extend_rc));
  redlock_lock_t *lock_c = NULL;
  int next_ok = 0;
  uint64_t token_c = 0;
  if (redlock_lock(a, RESOURCE, TTL_B_MS, &lock_c) == REDLOCK_OK) {
    token_c = redlock_lock_fence(lock_c);
    printf("A: locked %s again: token %" PRIu64 " (%s the fence)\n", RESOURCE, token_c,
           token_c > fence ? ">" : "NOT >");
    next_ok = write_as(&store, "A", lock_c, token_c, "written by A (3, after the revoke)");
    redlock_unlock(a, lock_c);
  }
  int revoke_ok = rc == REDLOCK_OK && fence > token_b && !revoked_accepted &&
                  extend_rc == REDLOCK_ELOST && token_c > fence && next_ok;

  pthread_mutex_lock(&store.mutex);
  printf("storage: \"%s\" (largest token %" PRIu64 "; %u writes accepted, %u rejected)\n",
         store.data, store.max_token, store.accepted, store.rejected);
  pthread_mutex_unlock(&store.mutex);

  /* A's unlock finds its value gone (the key expired, B's is there now):
   * compare-and-delete leaves B's lock alone.  Unlock frees the handle. */
  rc = redlock_unlock(a, lock_a);
  lock_a = NULL;
  printf("A: unlock: %s (its value is long gone from the masters)\n", redlock_err_name(rc));
  rc = redlock_unlock(b, lock_b);
  lock_b = NULL;
  printf("B: unlock: %s (revoked)\n", redlock_err_name(rc));

  if (token_b > token_a && !stale_accepted && b_again && revoke_ok) {
    printf("OK: the stale holder's write and the revoked holder's write were rejected by the "
           "storage\n");
    status = 0;
  } else {
    printf("UNEXPECTED: fencing did not behave as documented\n");
  }

out:
  if (lock_a != NULL)
    redlock_unlock(a, lock_a);
  if (lock_b != NULL)
    redlock_unlock(b, lock_b);
  redlock_close(a);
  redlock_close(b);
  pthread_mutex_destroy(&store.mutex);
  return status;
}
