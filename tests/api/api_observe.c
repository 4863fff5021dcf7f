/* api_observe.c: who leads an election (redlock_election_leader) and its
 * observers (redlock_election_observe / redlock_observe_stop) against three
 * real masters.
 *
 * Asserts, per include/redlock.h:
 *  - leader: NONE (term 0, ttl 0, owner "") for a free name; HELD with the
 *    term on_elected got, the leader's owner label and a ttl within its
 *    ttl; NONE for a value held on one master of three (SET directly);
 *    UNKNOWN with two masters of three paused;
 *  - an observer's first view is the one a read gives; a hand-off (A leads,
 *    B campaigns, A resigns) reaches an observer with poll_ms 60000 and
 *    leases of 30000 ms as HELD by B with B's term within 5 s: only the
 *    announcements (the release, B's grant) can tell it that soon;
 *  - a first leader after NONE reaches it through the grant's announcement
 *    alone (nothing is released);
 *  - a lease that expires without a release (a fenced lock of the name,
 *    ttl 1500 ms, never unlocked) reaches it as NONE through the lease-end
 *    timer (poll 60000);
 *  - on_change runs only for a change of state, term or owner;
 *  - stop from inside on_change (0; no further callback), from another
 *    thread (0; a second stop: EINVAL), a close with a live observer (its
 *    memory freed: ASan), and bad input: EINVAL for NULL client, name,
 *    callback or out, a reserved name, a stale observer, another client's
 *    observer; the leader call with a NULL out.
 * Waits are events and deadlines, never sleeps. */
#include <inttypes.h>
#include <pthread.h>

#include "fixture.h"

#define LONG_TTL 30000u
#define LONG_POLL 60000u
#define SEEN_MS 5000 /* far below the poll and the leases: only an announcement is that fast */
#define MAX_VIEWS 64
/* An observer's client: its retry delay is when a read that too few
 * masters answered (a starved moment) is made again, far below the poll. */
#define OBSERVER_RETRY_MS 200u

static redlock_t *open_client(const char *owner, uint32_t retry_ms, int fenced) {
  redlock_options_t *opts = fx_options_retry(fx_group, 0, FX_NO_LOG, 0, retry_ms, 0);
  if (owner != NULL)
    assert_int_equal(redlock_options_set_owner(opts, owner), REDLOCK_OK);
  if (fenced)
    assert_int_equal(redlock_options_set_fencing(opts, 1), REDLOCK_OK);
  return fx_open_free(fx_group, opts);
}

/* ---- an observer's record ------------------------------------------------------------ */

typedef struct {
  pthread_mutex_t mu;
  unsigned calls;
  redlock_leader_t views[MAX_VIEWS]; /* the first MAX_VIEWS */
  redlock_leader_t last;
  fx_event_t ev;
  redlock_t *client;  /* stop_in_cb: the client to stop it with */
  int stop_in_cb;     /* the first callback stops the observer */
  atomic_int stop_rc; /* what that stop returned */
  atomic_int late;    /* a callback after the stop returned */
  atomic_int stopped; /* the stop returned */
} rec_t;

static void rec_init(rec_t *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  fx_event_init(&r->ev);
  atomic_store(&r->stop_rc, 99);
}

static void rec_destroy(rec_t *r) {
  fx_event_destroy(&r->ev);
  pthread_mutex_destroy(&r->mu);
}

static void on_change(redlock_observer_t *obs, const redlock_leader_t *view, void *arg) {
  rec_t *r = arg;
  if (atomic_load(&r->stopped))
    atomic_store(&r->late, 1);
  pthread_mutex_lock(&r->mu);
  if (r->calls < MAX_VIEWS)
    r->views[r->calls] = *view;
  r->last = *view;
  r->calls++;
  pthread_mutex_unlock(&r->mu);
  if (fx_verbose())
    fprintf(stderr, "  view: state %d term %" PRIu64 " ttl %" PRId64 " owner '%s'\n", view->state,
            view->term, view->ttl_ms, view->owner);
  if (r->stop_in_cb) {
    atomic_store(&r->stop_rc, redlock_observe_stop(r->client, obs));
    atomic_store(&r->stopped, 1);
  }
  fx_event_post(&r->ev);
}

/* Waits until the last view has `state` (and, for HELD, `owner`; term too
 * when not 0); 1 when it came within timeout_ms. */
static int rec_wait(rec_t *r, int state, const char *owner, uint64_t term, int timeout_ms) {
  uint64_t end = rh_now_ms() + (uint64_t)timeout_ms;
  for (;;) {
    pthread_mutex_lock(&r->mu);
    int ok = r->calls > 0 && r->last.state == state &&
             (owner == NULL || strcmp(r->last.owner, owner) == 0) &&
             (term == 0 || r->last.term == term);
    pthread_mutex_unlock(&r->mu);
    if (ok)
      return 1;
    uint64_t now = rh_now_ms();
    if (now >= end || !fx_event_wait(&r->ev, (int)(end - now)))
      return 0;
  }
}

static unsigned rec_calls(rec_t *r) {
  pthread_mutex_lock(&r->mu);
  unsigned n = r->calls;
  pthread_mutex_unlock(&r->mu);
  return n;
}

/* ---- a candidate ----------------------------------------------------------------------- */

typedef struct {
  atomic_ullong term;
  fx_event_t elected;
} cand_t;

static void cand_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  cand_t *c = arg;
  atomic_store(&c->term, term);
  fx_event_post(&c->elected);
}

static void cand_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)reason;
  (void)arg;
}

/* ---- leader ------------------------------------------------------------------------------ */

static void test_leader_views(void **state) {
  (void)state;
  redlock_t *asker = open_client(NULL, 10, 0);
  redlock_t *leader = open_client("leader-a", 10, 0);
  FX_NAME(name, "leader-views");
  redlock_leader_t v;
  memset(&v, 0x5a, sizeof v);
  assert_int_equal(redlock_election_leader(asker, name, &v), REDLOCK_OK);
  assert_int_equal(v.state, REDLOCK_LEADER_NONE);
  assert_int_equal(v.term, 0);
  assert_int_equal(v.ttl_ms, 0);
  assert_string_equal(v.owner, "");

  static cand_t c;
  atomic_store(&c.term, 0);
  fx_event_init(&c.elected);
  redlock_election_t *e = NULL;
  assert_int_equal(redlock_elect(leader, name, 10000, cand_elected, cand_lost, &c, &e), 0);
  assert_true(fx_event_wait(&c.elected, 5000));
  assert_int_equal(redlock_election_leader(asker, name, &v), REDLOCK_OK);
  assert_int_equal(v.state, REDLOCK_LEADER_HELD);
  assert_int_equal(v.term, atomic_load(&c.term));
  assert_string_equal(v.owner, "leader-a");
  assert_true(v.ttl_ms > 0 && v.ttl_ms <= 10000);

  /* Two masters of three down: fewer than a quorum answer. */
  assert_int_equal(fx_pause(fx_group, 0x6u, 1), 0);
  int rc = redlock_election_leader(asker, name, &v);
  assert_int_equal(fx_pause(fx_group, 0x6u, 0), 0);
  assert_int_equal(rc, REDLOCK_OK);
  assert_int_equal(v.state, REDLOCK_LEADER_UNKNOWN);
  assert_int_equal(v.term, 0);
  assert_string_equal(v.owner, "");
  assert_int_equal(redlock_resign(leader, e), REDLOCK_OK);

  /* A value on one master of three only: nobody leads. */
  FX_NAME(min, "leader-minority");
  char buf[64];
  assert_int_equal(rh_server_command(fx_group->servers[0], buf, sizeof buf,
                                     "SET %s 0123456789abcdef0123456789abcdef~someone PX 10000",
                                     min),
                   0);
  assert_int_equal(redlock_election_leader(asker, min, &v), REDLOCK_OK);
  assert_int_equal(v.state, REDLOCK_LEADER_NONE);
  assert_string_equal(v.owner, "");
  fx_close_client(fx_group, leader);
  fx_close_client(fx_group, asker);
  fx_event_destroy(&c.elected);
}

/* ---- observe ----------------------------------------------------------------------------- */

/* A leads, B campaigns, an observer (poll 60 s) sees A; A resigns: the
 * observer sees B within SEEN_MS. */
static void test_observe_handoff(void **state) {
  (void)state;
  static rec_t r;
  static cand_t a, b;
  rec_init(&r);
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  fx_event_init(&a.elected);
  fx_event_init(&b.elected);
  redlock_t *ca = open_client("cand-a", LONG_POLL, 0);
  redlock_t *cb = open_client("cand-b", LONG_POLL, 0);
  redlock_t *co = open_client(NULL, OBSERVER_RETRY_MS, 0);
  FX_NAME(name, "observe-handoff");
  redlock_election_t *ea = NULL, *eb = NULL;
  assert_int_equal(redlock_elect(ca, name, LONG_TTL, cand_elected, cand_lost, &a, &ea), 0);
  assert_true(fx_event_wait(&a.elected, 5000));
  assert_int_equal(redlock_elect(cb, name, LONG_TTL, cand_elected, cand_lost, &b, &eb), 0);
  redlock_observer_t *obs = NULL;
  assert_int_equal(redlock_election_observe(co, name, LONG_POLL, on_change, &r, &obs), 0);
  assert_non_null(obs);
  assert_true(rec_wait(&r, REDLOCK_LEADER_HELD, "cand-a", atomic_load(&a.term), SEEN_MS));
  /* B's campaign and the observer both listen on the release channel. */
  fx_assert_subscribed(fx_group, name, 2, 5000);
  unsigned before = rec_calls(&r);
  uint64_t t0 = rh_now_ms();
  assert_int_equal(redlock_resign(ca, ea), REDLOCK_OK);
  assert_true(fx_event_wait(&b.elected, SEEN_MS));
  assert_true(rec_wait(&r, REDLOCK_LEADER_HELD, "cand-b", atomic_load(&b.term), SEEN_MS));
  printf("  hand-off seen %llu ms after the resign\n", (unsigned long long)(rh_now_ms() - t0));
  assert_true(atomic_load(&b.term) > atomic_load(&a.term));
  /* One callback per change: A -> (NONE ->) B. */
  unsigned changes = rec_calls(&r) - before;
  assert_true(changes >= 1 && changes <= 2);
  assert_int_equal(redlock_observe_stop(co, obs), REDLOCK_OK);
  assert_int_equal(redlock_observe_stop(co, obs), REDLOCK_EINVAL); /* stale */
  assert_int_equal(redlock_resign(cb, eb), REDLOCK_OK);
  fx_close_client(fx_group, co);
  fx_close_client(fx_group, ca);
  fx_close_client(fx_group, cb);
  /* The views in order: each differs from the one before it. */
  for (unsigned i = 1; i < r.calls && i < MAX_VIEWS; i++)
    assert_true(r.views[i].state != r.views[i - 1].state ||
                r.views[i].term != r.views[i - 1].term ||
                strcmp(r.views[i].owner, r.views[i - 1].owner) != 0);
  fx_event_destroy(&a.elected);
  fx_event_destroy(&b.elected);
  rec_destroy(&r);
}

/* NONE, then a first leader: only its grant's announcement tells. */
static void test_observe_new_leader(void **state) {
  (void)state;
  static rec_t r;
  static cand_t c;
  rec_init(&r);
  memset(&c, 0, sizeof c);
  fx_event_init(&c.elected);
  redlock_t *co = open_client(NULL, OBSERVER_RETRY_MS, 0);
  redlock_t *cl = open_client("first", LONG_POLL, 0);
  FX_NAME(name, "observe-new");
  redlock_observer_t *obs = NULL;
  assert_int_equal(redlock_election_observe(co, name, LONG_POLL, on_change, &r, &obs), 0);
  assert_true(rec_wait(&r, REDLOCK_LEADER_NONE, NULL, 0, SEEN_MS));
  fx_assert_subscribed(fx_group, name, 1, 5000);
  redlock_election_t *e = NULL;
  assert_int_equal(redlock_elect(cl, name, LONG_TTL, cand_elected, cand_lost, &c, &e), 0);
  assert_true(fx_event_wait(&c.elected, SEEN_MS));
  assert_true(rec_wait(&r, REDLOCK_LEADER_HELD, "first", atomic_load(&c.term), SEEN_MS));
  assert_int_equal(rec_calls(&r), 2); /* NONE, HELD */
  /* The close stops the observer left. */
  fx_close_client(fx_group, co);
  assert_int_equal(redlock_resign(cl, e), REDLOCK_OK);
  fx_close_client(fx_group, cl);
  fx_event_destroy(&c.elected);
  rec_destroy(&r);
}

/* A lease that runs out with nobody releasing it: the lease-end timer. */
static void test_observe_lease_expiry(void **state) {
  (void)state;
  static rec_t r;
  rec_init(&r);
  redlock_t *co = open_client(NULL, OBSERVER_RETRY_MS, 0);
  redlock_t *holder = open_client("short", LONG_POLL, 1);
  FX_NAME(name, "observe-expiry");
  redlock_lock_t *lock = NULL;
  assert_int_equal(redlock_trylock(holder, name, 1500, &lock), REDLOCK_OK);
  redlock_observer_t *obs = NULL;
  assert_int_equal(redlock_election_observe(co, name, LONG_POLL, on_change, &r, &obs), 0);
  assert_true(rec_wait(&r, REDLOCK_LEADER_HELD, "short", redlock_lock_fence(lock), SEEN_MS));
  assert_true(rec_wait(&r, REDLOCK_LEADER_NONE, NULL, 0, 1500 + SEEN_MS));
  assert_int_equal(redlock_observe_stop(co, obs), REDLOCK_OK);
  int rc = redlock_unlock(holder, lock);
  assert_true(rc == REDLOCK_OK || rc == REDLOCK_ELOST);
  fx_close_client(fx_group, co);
  fx_close_client(fx_group, holder);
  rec_destroy(&r);
}

/* An observer stopped from inside its first on_change (in_callback) or
 * from this thread once it saw NONE; then a leader is elected, which a
 * second observer (the witness) sees: the first never runs again. */
static void stop_then_change(int in_callback) {
  static rec_t r, witness;
  static cand_t c;
  rec_init(&r);
  rec_init(&witness);
  memset(&c, 0, sizeof c);
  fx_event_init(&c.elected);
  redlock_t *co = open_client(NULL, 10, 0);
  redlock_t *cl = open_client("x", 10, 0);
  FX_NAME(name, in_callback ? "observe-stop-cb" : "observe-stop-thread");
  r.client = co;
  r.stop_in_cb = in_callback;
  redlock_observer_t *obs = NULL, *w = NULL;
  assert_int_equal(redlock_election_observe(co, name, 5, on_change, &r, &obs), 0);
  assert_true(rec_wait(&r, REDLOCK_LEADER_NONE, NULL, 0, SEEN_MS));
  if (in_callback) {
    assert_int_equal(atomic_load(&r.stop_rc), REDLOCK_OK);
  } else {
    assert_int_equal(redlock_observe_stop(co, obs), REDLOCK_OK);
    atomic_store(&r.stopped, 1);
  }
  assert_int_equal(redlock_election_observe(co, name, 5, on_change, &witness, &w), 0);
  redlock_election_t *e = NULL;
  assert_int_equal(redlock_elect(cl, name, 5000, cand_elected, cand_lost, &c, &e), 0);
  assert_true(rec_wait(&witness, REDLOCK_LEADER_HELD, "x", 0, SEEN_MS));
  /* The stopped observer is no longer live; the witness is left to the close. */
  assert_int_equal(redlock_observe_stop(co, obs), REDLOCK_EINVAL);
  assert_int_equal(redlock_resign(cl, e), REDLOCK_OK);
  fx_close_client(fx_group, co);
  fx_close_client(fx_group, cl);
  assert_int_equal(rec_calls(&r), 1);
  assert_int_equal(atomic_load(&r.late), 0);
  fx_event_destroy(&c.elected);
  rec_destroy(&r);
  rec_destroy(&witness);
}

/* Stop from inside on_change: no callback after it. */
static void test_observe_stop_in_callback(void **state) {
  (void)state;
  stop_then_change(1);
}

/* Stop from another thread (this one): no callback after it returns. */
static void test_observe_stop_off_loop(void **state) {
  (void)state;
  stop_then_change(0);
}

static void never_called(redlock_observer_t *obs, const redlock_leader_t *view, void *arg) {
  (void)obs;
  (void)view;
  (void)arg;
  fail_msg("a refused call ran its callback");
}

static void test_observe_bad_input(void **state) {
  (void)state;
  redlock_t *c1 = open_client(NULL, 10, 0);
  redlock_t *c2 = open_client(NULL, 10, 0);
  FX_NAME(name, "observe-bad");
  redlock_observer_t *const junk = (redlock_observer_t *)(uintptr_t)1;
  redlock_observer_t *o = junk;
  assert_int_equal(redlock_election_observe(NULL, name, 0, never_called, NULL, &o), REDLOCK_EINVAL);
  assert_null(o);
  o = junk;
  assert_int_equal(redlock_election_observe(c1, NULL, 0, never_called, NULL, &o), REDLOCK_EINVAL);
  assert_null(o);
  assert_int_equal(redlock_election_observe(c1, "", 0, never_called, NULL, &o), REDLOCK_EINVAL);
  assert_int_equal(redlock_election_observe(c1, name, 0, NULL, NULL, &o), REDLOCK_EINVAL);
  assert_int_equal(redlock_election_observe(c1, name, 0, never_called, NULL, NULL), REDLOCK_EINVAL);
  char reserved[128];
  snprintf(reserved, sizeof reserved, "%sx", REDLOCK_RESERVED_PREFIX);
  assert_int_equal(redlock_election_observe(c1, reserved, 0, never_called, NULL, &o),
                   REDLOCK_EINVAL);
  assert_null(o);
  assert_int_equal(redlock_observe_stop(NULL, junk), REDLOCK_EINVAL);
  assert_int_equal(redlock_observe_stop(c1, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_observe_stop(c1, junk), REDLOCK_EINVAL);

  static rec_t r;
  rec_init(&r);
  assert_int_equal(redlock_election_observe(c1, name, 0, on_change, &r, &o), REDLOCK_OK);
  assert_int_equal(redlock_observe_stop(c2, o), REDLOCK_EINVAL); /* another client's */
  assert_int_equal(redlock_observe_stop(c1, o), REDLOCK_OK);
  assert_int_equal(redlock_observe_stop(c1, o), REDLOCK_EINVAL); /* stale */

  assert_int_equal(redlock_election_leader(c1, name, NULL), REDLOCK_EINVAL);
  redlock_leader_t v;
  assert_int_equal(redlock_election_leader(NULL, name, &v), REDLOCK_EINVAL);
  assert_int_equal(redlock_election_leader(c1, NULL, &v), REDLOCK_EINVAL);
  fx_close_client(fx_group, c1);
  fx_close_client(fx_group, c2);
  rec_destroy(&r);
}

FX_GROUP_MAIN(300, fx_group_test(test_leader_views), fx_group_test(test_observe_handoff),
              fx_group_test(test_observe_new_leader), fx_group_test(test_observe_lease_expiry),
              fx_group_test(test_observe_stop_in_callback),
              fx_group_test(test_observe_stop_off_loop), fx_group_test(test_observe_bad_input))
