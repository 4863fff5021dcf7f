/* test_kit_parity.c: the test kit's fake masters (include/redlock_testing.h)
 * against real redis-server masters: the same scenarios, step by step, on
 * three real servers (the harness: SIGKILL and restart, SIGSTOP/SIGCONT,
 * DEL) and on three fakes (their faults), must give the same transcript —
 * each call's return code, which masters hold the key, the votes' verdicts.
 *
 * Scenarios: exclusion and release; two masters killed (no quorum) and
 * restarted (restart quarantine on, then off); one master paused (the
 * quorum without it; its key after the resume); keys lost on a majority
 * (the extension re-installs them); fencing tokens; a semaphore's limit
 * mismatch; read-write exclusion; a woken wait; an election's term and its
 * leader's view.  What differs is only what the kit documents (no real
 * replication, no persistence): none of it is exercised here. */
#include <pthread.h>
#include <time.h>

#include "fixture.h"
#include "redlock_testing.h"

#define N 3
#define TTL 10000u
#define TRANSCRIPT 4096

typedef struct world world_t;
struct world {
  const char *name;
  const char *(*uri)(world_t *w, unsigned i);
  int (*kill)(world_t *w, unsigned i);
  int (*restart)(world_t *w, unsigned i);
  int (*pause)(world_t *w, unsigned i, int on);
  int (*drop_key)(world_t *w, unsigned i, const char *key);
  int (*has_key)(world_t *w, unsigned i, const char *key);
  rh_server_t *servers[N];
  redlock_testing_t *kit;
  char log[TRANSCRIPT];
};

/* ---- the two worlds ---------------------------------------------------------- */

static const char *real_uri(world_t *w, unsigned i) { return rh_server_uri(w->servers[i]); }
static int real_kill(world_t *w, unsigned i) { return rh_server_kill(w->servers[i]); }
static int real_restart(world_t *w, unsigned i) { return rh_server_restart(w->servers[i]); }
static int real_pause(world_t *w, unsigned i, int on) {
  return on ? rh_server_pause(w->servers[i]) : rh_server_resume(w->servers[i]);
}
static int real_drop_key(world_t *w, unsigned i, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(w->servers[i], buf, sizeof buf, "DEL %s", key), 0);
  return atoi(buf);
}
static int real_has_key(world_t *w, unsigned i, const char *key) {
  char buf[64];
  assert_int_equal(rh_server_command(w->servers[i], buf, sizeof buf, "EXISTS %s", key), 0);
  return atoi(buf);
}

static const char *fake_uri(world_t *w, unsigned i) { return redlock_testing_uri(w->kit, i); }
static int fake_kill(world_t *w, unsigned i) { return redlock_testing_kill(w->kit, i); }
static int fake_restart(world_t *w, unsigned i) { return redlock_testing_restart(w->kit, i); }
static int fake_pause(world_t *w, unsigned i, int on) {
  return on ? redlock_testing_pause(w->kit, i) : redlock_testing_resume(w->kit, i);
}
static int fake_drop_key(world_t *w, unsigned i, const char *key) {
  return redlock_testing_drop_key(w->kit, i, key);
}
static int fake_has_key(world_t *w, unsigned i, const char *key) {
  return redlock_testing_has_key(w->kit, i, key);
}

static void real_world(world_t *w) {
  memset(w, 0, sizeof *w);
  w->name = "redis-server";
  w->uri = real_uri;
  w->kill = real_kill;
  w->restart = real_restart;
  w->pause = real_pause;
  w->drop_key = real_drop_key;
  w->has_key = real_has_key;
  for (unsigned i = 0; i < N; i++)
    assert_int_equal(rh_server_start(&w->servers[i], NULL), 0);
}

static void fake_world(world_t *w) {
  memset(w, 0, sizeof *w);
  w->name = "fakes";
  w->uri = fake_uri;
  w->kill = fake_kill;
  w->restart = fake_restart;
  w->pause = fake_pause;
  w->drop_key = fake_drop_key;
  w->has_key = fake_has_key;
  assert_int_equal(redlock_testing_start(N, 0, &w->kit), REDLOCK_OK);
}

static void world_free(world_t *w) {
  for (unsigned i = 0; i < N; i++)
    if (w->servers[i] != NULL)
      rh_server_free(w->servers[i]);
  redlock_testing_stop(w->kit);
}

/* ---- steps ------------------------------------------------------------------- */

static void note(world_t *w, const char *fmt, ...) {
  size_t len = strlen(w->log);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->log + len, sizeof w->log - len, fmt, ap);
  va_end(ap);
}

static redlock_t *open_client(world_t *w, int quarantine, int fencing) {
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  for (unsigned i = 0; i < N; i++)
    assert_int_equal(redlock_options_add_node(opts, w->uri(w, i)), REDLOCK_OK);
  assert_int_equal(redlock_options_set_quarantine(opts, quarantine), REDLOCK_OK);
  assert_int_equal(redlock_options_set_fencing(opts, fencing), REDLOCK_OK);
  assert_int_equal(redlock_options_set_retry(opts, 0, 10, 10), REDLOCK_OK);
  assert_int_equal(redlock_options_set_timeouts(opts, FX_IT_CONNECT_MS, FX_IT_REQUEST_MS),
                   REDLOCK_OK);
  redlock_t *c = NULL;
  assert_int_equal(redlock_open(&c, opts), REDLOCK_OK);
  redlock_options_free(opts);
  return c;
}

/* Which masters hold key, as "101". */
static void holders(world_t *w, const char *step, const char *key) {
  note(w, "%s:", step);
  for (unsigned i = 0; i < N; i++)
    note(w, "%d", w->has_key(w, i, key));
  note(w, "\n");
}

/* How many masters of the last round said `verdict` (a round decides
 * without waiting for the last answer: which one is pending is timing). */
static void verdict_count(world_t *w, redlock_t *c, const char *verdict) {
  char votes[1024];
  assert_true(redlock_last_votes(c, votes, sizeof votes) >= 0);
  unsigned n = 0;
  size_t len = strlen(verdict);
  for (const char *p = strchr(votes, '='); p != NULL; p = strchr(p + 1, '='))
    n += strncmp(p + 1, verdict, len) == 0;
  note(w, "  %s: at least 2 of 3: %d\n", verdict, n >= 2);
}

static void code(world_t *w, const char *step, int rc) {
  note(w, "%s=%s\n", step, rc <= 0 ? redlock_err_name(rc) : "positive");
}

typedef struct {
  redlock_t *c;
  int rc;
  redlock_lock_t *lock;
} waiter_t;

static void *wait_thread(void *arg) {
  waiter_t *wt = arg;
  wt->rc = redlock_lock_wait(wt->c, "woken", TTL, 20000, &wt->lock);
  return NULL;
}

static int elected;
static uint64_t elected_term;
static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  (void)arg;
  elected_term = term;
  __atomic_store_n(&elected, 1, __ATOMIC_RELEASE);
}
static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
}
static int is_elected(void *arg) {
  (void)arg;
  return __atomic_load_n(&elected, __ATOMIC_ACQUIRE);
}

/* Every scenario on one world, written into its transcript. */
static void run_scenarios(world_t *w) {
  redlock_t *a = open_client(w, 0, 1), *b = open_client(w, 0, 1);
  redlock_lock_t *la = NULL, *lb = NULL;

  /* Exclusion and release. */
  code(w, "a.lock", redlock_lock(a, "excl", TTL, &la));
  holders(w, "held", "excl");
  code(w, "b.trylock", redlock_trylock(b, "excl", TTL, &lb));
  verdict_count(w, b, "refused");
  code(w, "a.unlock", redlock_unlock(a, la));
  holders(w, "released", "excl");
  code(w, "b.trylock", redlock_trylock(b, "excl", TTL, &lb));
  code(w, "b.unlock", redlock_unlock(b, lb));

  /* Fencing: a later holder's token is larger. */
  code(w, "fence1", redlock_lock(a, "fenced", TTL, &la));
  uint64_t f1 = redlock_lock_fence(la);
  redlock_unlock(a, la);
  code(w, "fence2", redlock_lock(b, "fenced", TTL, &lb));
  note(w, "fence rises: %d\n", redlock_lock_fence(lb) > f1 && f1 > 0);
  redlock_unlock(b, lb);

  /* Keys lost on a majority: the extension re-installs them. */
  code(w, "lost.lock", redlock_lock(a, "lost", TTL, &la));
  note(w, "dropped: %d %d\n", w->drop_key(w, 0, "lost"), w->drop_key(w, 1, "lost"));
  holders(w, "after drop", "lost");
  code(w, "lost.extend", redlock_extend(a, la, TTL));
  holders(w, "after extend", "lost");
  code(w, "lost.unlock", redlock_unlock(a, la));

  /* A semaphore of 2, and a client that says 3. */
  redlock_lock_t *p1 = NULL, *p2 = NULL, *p3 = NULL;
  code(w, "sem1", redlock_semaphore_acquire(a, "pool", 2, TTL, 0, &p1));
  code(w, "sem2", redlock_semaphore_acquire(b, "pool", 2, TTL, 0, &p2));
  code(w, "sem3", redlock_semaphore_acquire(b, "pool", 2, TTL, 0, &p3));
  code(w, "sem-limit-3", redlock_semaphore_acquire(b, "pool", 3, TTL, 0, &p3));
  redlock_unlock(a, p1);
  redlock_unlock(b, p2);

  /* Read-write. */
  code(w, "read1", redlock_rwlock_read(a, "rw", TTL, 0, &p1));
  code(w, "read2", redlock_rwlock_read(b, "rw", TTL, 0, &p2));
  code(w, "write", redlock_rwlock_write(b, "rw", TTL, 0, &p3));
  redlock_unlock(a, p1);
  redlock_unlock(b, p2);
  code(w, "write-after", redlock_rwlock_write(b, "rw", TTL, 0, &p3));
  code(w, "read-under-write", redlock_rwlock_read(a, "rw", TTL, 0, &p1));
  redlock_unlock(b, p3);

  /* A woken wait: b waits (20 s budget); a's release wakes it. */
  code(w, "woken.a", redlock_lock(a, "woken", TTL, &la));
  waiter_t wt = {.c = b};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, wait_thread, &wt), 0);
  code(w, "woken.unlock", redlock_unlock(a, la));
  assert_int_equal(pthread_join(th, NULL), 0);
  code(w, "woken.b", wt.rc);
  if (wt.rc == REDLOCK_OK)
    redlock_unlock(b, wt.lock);

  /* An election and the leader's view from another client. */
  elected = 0;
  redlock_election_t *e = NULL;
  code(w, "elect", redlock_elect(a, "leader", TTL, on_elected, on_lost, NULL, &e));
  note(w, "elected: %d\n", rh_wait_until(is_elected, NULL, 10000));
  redlock_leader_t view;
  code(w, "leader", redlock_election_leader(b, "leader", &view));
  note(w, "view: state %d, term matches %d\n", view.state, view.term == elected_term);
  code(w, "resign", redlock_resign(a, e));

  /* One master paused: the quorum without it; its key once resumed. */
  assert_int_equal(w->pause(w, 2, 1), 0);
  code(w, "paused.lock", redlock_lock(a, "paused", TTL, &la));
  note(w, "paused holders: %d%d\n", w->has_key(w, 0, "paused"), w->has_key(w, 1, "paused"));
  assert_int_equal(w->pause(w, 2, 0), 0);
  code(w, "paused.unlock", redlock_unlock(a, la));

  /* Two masters killed: no quorum.  Restarted: quarantined, then not. */
  assert_int_equal(w->kill(w, 0), 0);
  assert_int_equal(w->kill(w, 1), 0);
  code(w, "two-down", redlock_trylock(a, "down", TTL, &la));
  assert_int_equal(w->restart(w, 0), 0);
  assert_int_equal(w->restart(w, 1), 0);
  holders(w, "restarted empty", "excl");
  redlock_t *q = open_client(w, 1, 0); /* quarantine on: the restarted two do not count */
  int rc = REDLOCK_ENOQUORUM;
  for (int i = 0; i < 20 && rc == REDLOCK_ENOQUORUM; i++) {
    rc = redlock_trylock(q, "down", TTL, &la);
    if (rc == REDLOCK_ENOQUORUM) {
      char votes[1024];
      redlock_last_votes(q, votes, sizeof votes);
      if (strstr(votes, "quarantined") != NULL)
        break; /* both restarted masters answered, and were not counted */
    }
  }
  code(w, "quarantined", rc);
  rc = REDLOCK_ENOQUORUM;
  for (int i = 0; i < 100 && rc != REDLOCK_OK; i++) /* quarantine off: they vote once connected */
    rc = redlock_lock_wait(a, "down", TTL, 100, &la);
  code(w, "after-restart", rc);
  if (rc == REDLOCK_OK)
    redlock_unlock(a, la);
  redlock_close(q);
  redlock_close(a);
  redlock_close(b);
}

static void test_parity(void **state) {
  (void)state;
  world_t *real = calloc(1, sizeof *real), *fake = calloc(1, sizeof *fake);
  assert_non_null(real);
  assert_non_null(fake);
  real_world(real);
  run_scenarios(real);
  world_free(real);
  fake_world(fake);
  run_scenarios(fake);
  world_free(fake);
  if (strcmp(real->log, fake->log) != 0 || fx_verbose()) {
    fprintf(stderr, "---- redis-server:\n%s---- fakes:\n%s", real->log, fake->log);
  }
  assert_string_equal(real->log, fake->log);
  free(real);
  free(fake);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
