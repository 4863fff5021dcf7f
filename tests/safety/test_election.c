/* test_election.c: leader election (redlock_elect / redlock_resign) against
 * real redis-server processes started by the harness (tests/support).
 *
 * Every callback is recorded in a history (time, term, and for on_lost the end
 * of the term's validity from redlock_election_validity_ms); a resign records
 * the instant it was asked for.  check_history() then checks, whatever else
 * the test did:
 *  - per handle, callbacks alternate on_elected, on_lost, on_elected, ...
 *    (each at most once per term), on_lost's term is its on_elected's, and
 *    no callback starts after redlock_resign (or the client's close) returned;
 *  - terms strictly increase from one election to the next;
 *  - no two leaders at the same instant: a leader's term runs from its
 *    on_elected to the end of its validity (lost) or to its resign, and no
 *    other term starts inside it.
 * Cases:
 *  - one leader among 3 clients, kept for several ttls (lease on a quorum,
 *    fence counter = term), nobody else elected; resigns clear the key;
 *  - terms strictly increase across 6 handovers (resign, campaign again);
 *  - resign hands over via the release notification: with the fallback
 *    poll at 10 s, the waiting campaigner is elected within 2 s;
 *  - all masters SIGSTOPped: the leader's on_lost fires once (ELOST), nobody
 *    is elected while they are stopped; after SIGCONT a leader with a greater
 *    term, and the old leader campaigns again (it is elected again once the
 *    others resign), never overlapping;
 *  - partition of the leader alone (its masters stalled behind fault
 *    proxies, as if stopped, for it only): on_lost once, the other client is
 *    elected with a greater term after the old validity ended; after the
 *    stall the old leader campaigns again and takes over when it resigns;
 *  - resign from inside on_elected (returns at once, the key is released,
 *    the next campaigner elected) and from inside on_lost;
 *  - close with live elections (a leader and a campaign): no callback
 *    after close, the leadership is released and the waiting campaigner of
 *    another client elected within 2 s (fallback 10 s);
 *  - bad input: EINVAL and no callback ever; a redlock_open_uv client:
 *    callbacks inside uv_run, resign on the loop thread, ECLOSED during close.
 * Waits are events and deadlines (fx_event_wait, rh_wait_until), never
 * sleeps.  A liveness miss (an unexpected loss) is excused only when the
 * stall monitor saw this process stopped long enough; safety checks never. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fault_proxy.h"
#include "fixture.h"
#include "redlock_uv.h"

#define CHANNEL_PREFIX REDLOCK_RELEASE_CHANNEL_PREFIX
#define FENCE_PREFIX REDLOCK_FENCE_KEY_PREFIX
#define MAX_CANDS 32
#define MAX_EVENTS 512
#define WAKE_BOUND_MS 2000
#define SLOW_FALLBACK_MS 10000u
#define STALL_EXCUSE_MS 300u

/* ---- history ------------------------------------------------------------------------ */

enum { EV_ELECTED = 1, EV_LOST, EV_RESIGNED };

typedef struct {
  int kind;
  int cand;
  uint64_t term;
  uint64_t t_ms;
  int64_t end_ms; /* EV_LOST: end of the term's validity */
} ev_t;

typedef struct cand cand_t;

typedef struct {
  pthread_mutex_t mu;
  ev_t ev[MAX_EVENTS];
  size_t n;
  unsigned n_elected;
  char violation[512]; /* the first one */
  cand_t *cands[MAX_CANDS];
  int n_cands;
} history_t;

struct cand {
  history_t *h;
  int id;   /* index in h->cands */
  int slot; /* client slot */
  redlock_t *client;
  redlock_election_t *e;
  atomic_int silenced; /* resign (or close) returned: no callback may start */
  atomic_int leader;
  atomic_int elected, lost;
  atomic_ullong term;
  atomic_int reason;
  int resign_in_elected, resign_in_lost;
  atomic_int cb_resign_rc;
  atomic_ullong cb_resign_ms; /* how long redlock_resign took inside the callback */
  fx_event_t elected_ev, lost_ev;
};

static void violation(history_t *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Caller holds h->mu. */
static void violation(history_t *h, const char *fmt, ...) {
  if (h->violation[0] != '\0')
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(h->violation, sizeof h->violation, fmt, ap);
  va_end(ap);
}

static void push(history_t *h, int kind, int cand, uint64_t term, uint64_t t, int64_t end) {
  if (h->n >= MAX_EVENTS) {
    violation(h, "history full");
    return;
  }
  h->ev[h->n++] = (ev_t){kind, cand, term, t, end};
}

static history_t *history_new(void) {
  history_t *h = calloc(1, sizeof *h);
  assert_non_null(h);
  pthread_mutex_init(&h->mu, NULL);
  return h;
}

static void history_free(history_t *h) {
  for (int i = 0; i < h->n_cands; i++) {
    fx_event_destroy(&h->cands[i]->elected_ev);
    fx_event_destroy(&h->cands[i]->lost_ev);
    free(h->cands[i]);
  }
  pthread_mutex_destroy(&h->mu);
  free(h);
}

static unsigned n_elected(history_t *h) {
  pthread_mutex_lock(&h->mu);
  unsigned n = h->n_elected;
  pthread_mutex_unlock(&h->mu);
  return n;
}

/* ---- callbacks ------------------------------------------------------------------------ */

static void resign_inside(cand_t *c, redlock_election_t *e, uint64_t t) {
  int rc = redlock_resign(c->client, e);
  uint64_t after = rh_now_ms();
  atomic_store(&c->cb_resign_rc, rc);
  atomic_store(&c->cb_resign_ms, after - t);
  pthread_mutex_lock(&c->h->mu);
  push(c->h, EV_RESIGNED, c->id, atomic_load(&c->term), t, 0);
  pthread_mutex_unlock(&c->h->mu);
  atomic_store(&c->leader, 0);
  atomic_store(&c->silenced, 1); /* this callback is the last one */
}

/* Checks what holds for every callback of c (the handle is c's, and c's
 * resign or close has not returned yet) and takes h->mu; what names the
 * callback. */
static history_t *callback_begin(cand_t *c, redlock_election_t *e, const char *what) {
  history_t *h = c->h;
  pthread_mutex_lock(&h->mu);
  if (atomic_load(&c->silenced))
    violation(h, "cand %d: %s after its resign/close returned", c->id, what);
  if (e != c->e)
    violation(h, "cand %d: %s with another handle", c->id, what);
  return h;
}

/* Releases h->mu, counts the callback, posts its event (after the stores
 * the test reads: the waiter sees them) and resigns from inside it when the
 * test asked for that. */
static void callback_end(cand_t *c, redlock_election_t *e, atomic_int *count, fx_event_t *ev,
                         int resign) {
  pthread_mutex_unlock(&c->h->mu);
  atomic_fetch_add(count, 1);
  fx_event_post(ev);
  if (resign)
    resign_inside(c, e, rh_now_ms());
}

static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  cand_t *c = arg;
  uint64_t now = rh_now_ms();
  int64_t validity = redlock_election_validity_ms(e);
  char what[64];
  snprintf(what, sizeof what, "on_elected (term %llu)", (unsigned long long)term);
  history_t *h = callback_begin(c, e, what);
  if (atomic_load(&c->leader))
    violation(h, "cand %d: on_elected twice without on_lost", c->id);
  if (validity <= 0)
    violation(h, "cand %d: on_elected with %lld ms of validity", c->id, (long long)validity);
  if (term == 0)
    violation(h, "cand %d: term 0", c->id);
  push(h, EV_ELECTED, c->id, term, now, 0);
  h->n_elected++;
  atomic_store(&c->term, term);
  atomic_store(&c->leader, 1);
  callback_end(c, e, &c->elected, &c->elected_ev, c->resign_in_elected);
}

static void on_lost(redlock_election_t *e, int reason, void *arg) {
  cand_t *c = arg;
  uint64_t now = rh_now_ms();
  int64_t validity = redlock_election_validity_ms(e);
  history_t *h = callback_begin(c, e, "on_lost");
  if (!atomic_load(&c->leader))
    violation(h, "cand %d: on_lost without on_elected", c->id);
  if (reason != REDLOCK_ELOST)
    violation(h, "cand %d: on_lost reason %d", c->id, reason);
  if (validity > 0)
    violation(h, "cand %d: on_lost while the accessor says %lld ms are left", c->id,
              (long long)validity);
  push(h, EV_LOST, c->id, atomic_load(&c->term), now, (int64_t)now + validity);
  atomic_store(&c->reason, reason);
  atomic_store(&c->leader, 0);
  callback_end(c, e, &c->lost, &c->lost_ev, c->resign_in_lost);
}

/* ---- candidates ------------------------------------------------------------------------ */

static cand_t *cand_new(history_t *h, redlock_t *client, int slot) {
  assert_true(h->n_cands < MAX_CANDS);
  cand_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->h = h;
  c->id = h->n_cands;
  c->slot = slot;
  c->client = client;
  fx_event_init(&c->elected_ev);
  fx_event_init(&c->lost_ev);
  pthread_mutex_lock(&h->mu);
  h->cands[h->n_cands++] = c;
  pthread_mutex_unlock(&h->mu);
  return c;
}

/* flags: RESIGN_IN_ELECTED, RESIGN_IN_LOST (set before the loop can see c). */
#define RESIGN_IN_ELECTED 1
#define RESIGN_IN_LOST 2
static cand_t *cand_elect_with(history_t *h, redlock_t *client, int slot, const char *name,
                               uint32_t ttl, int flags) {
  cand_t *c = cand_new(h, client, slot);
  c->resign_in_elected = (flags & RESIGN_IN_ELECTED) != 0;
  c->resign_in_lost = (flags & RESIGN_IN_LOST) != 0;
  assert_int_equal(redlock_elect(client, name, ttl, on_elected, on_lost, c, &c->e), REDLOCK_OK);
  assert_non_null(c->e);
  return c;
}

static cand_t *cand_elect(history_t *h, redlock_t *client, int slot, const char *name,
                          uint32_t ttl) {
  return cand_elect_with(h, client, slot, name, ttl, 0);
}

/* Resign from the test thread; the term (if leader) ends at the call. */
static void cand_resign(cand_t *c) {
  uint64_t t = rh_now_ms();
  assert_int_equal(redlock_resign(c->client, c->e), REDLOCK_OK);
  atomic_store(&c->silenced, 1);
  atomic_store(&c->leader, 0);
  pthread_mutex_lock(&c->h->mu);
  push(c->h, EV_RESIGNED, c->id, atomic_load(&c->term), t, 0);
  pthread_mutex_unlock(&c->h->mu);
  /* The handle is freed: a second resign is refused without touching it. */
  assert_int_equal(redlock_resign(c->client, c->e), REDLOCK_EINVAL);
}

/* The candidate elected in the (k+1)-th election of the history. */
static cand_t *nth_elected(history_t *h, unsigned k) {
  cand_t *c = NULL;
  unsigned seen = 0;
  pthread_mutex_lock(&h->mu);
  for (size_t i = 0; i < h->n && c == NULL; i++)
    if (h->ev[i].kind == EV_ELECTED && seen++ == k)
      c = h->cands[h->ev[i].cand];
  pthread_mutex_unlock(&h->mu);
  return c;
}

typedef struct {
  history_t *h;
  unsigned n;
} count_wait_t;

static int elected_pred(void *arg) {
  count_wait_t *w = arg;
  return n_elected(w->h) >= w->n;
}

/* Waits for the (k+1)-th election; returns its candidate. */
static cand_t *wait_nth_elected(history_t *h, unsigned k, int timeout_ms) {
  count_wait_t w = {h, k + 1};
  if (!rh_wait_until(elected_pred, &w, timeout_ms))
    fail_msg("no election #%u within %d ms", k + 1, timeout_ms);
  return nth_elected(h, k);
}

/* ---- the checker --------------------------------------------------------------------- */

typedef struct {
  int cand;
  uint64_t term;
  int64_t start, end; /* ms; end INT64_MAX while open */
} interval_t;

static int by_start(const void *a, const void *b) {
  const interval_t *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

static void check_history(history_t *h) {
  pthread_mutex_lock(&h->mu);
  if (h->violation[0] != '\0') {
    char copy[sizeof h->violation];
    memcpy(copy, h->violation, sizeof copy);
    pthread_mutex_unlock(&h->mu);
    fail_msg("%s", copy);
  }
  interval_t iv[MAX_EVENTS];
  size_t n_iv = 0;
  int open[MAX_CANDS];
  for (int i = 0; i < MAX_CANDS; i++)
    open[i] = -1;
  uint64_t last_term = 0;
  for (size_t i = 0; i < h->n; i++) {
    const ev_t *ev = &h->ev[i];
    int c = ev->cand;
    switch (ev->kind) {
    case EV_ELECTED:
      if (ev->term <= last_term) {
        pthread_mutex_unlock(&h->mu);
        fail_msg("term %llu (cand %d) after term %llu: not strictly increasing",
                 (unsigned long long)ev->term, c, (unsigned long long)last_term);
      }
      last_term = ev->term;
      iv[n_iv] = (interval_t){c, ev->term, (int64_t)ev->t_ms, INT64_MAX};
      open[c] = (int)n_iv++;
      break;
    case EV_LOST:
      if (open[c] < 0 || iv[open[c]].term != ev->term) {
        pthread_mutex_unlock(&h->mu);
        fail_msg("cand %d: on_lost for term %llu it was not leader of", c,
                 (unsigned long long)ev->term);
      }
      iv[open[c]].end = ev->end_ms;
      open[c] = -1;
      break;
    case EV_RESIGNED:
      if (open[c] >= 0) {
        int64_t end = (int64_t)ev->t_ms;
        iv[open[c]].end = end > iv[open[c]].start ? end : iv[open[c]].start;
        open[c] = -1;
      }
      break;
    }
  }
  pthread_mutex_unlock(&h->mu);
  qsort(iv, n_iv, sizeof iv[0], by_start);
  for (size_t i = 1; i < n_iv; i++) {
    int64_t prev_end = INT64_MIN;
    size_t prev = 0;
    for (size_t j = 0; j < i; j++)
      if (iv[j].end > prev_end) {
        prev_end = iv[j].end;
        prev = j;
      }
    if (iv[i].start < prev_end)
      fail_msg("two leaders at once: cand %d (term %llu) elected at %lld ms while cand %d "
               "(term %llu, elected at %lld) was leader until %lld",
               iv[i].cand, (unsigned long long)iv[i].term, (long long)iv[i].start, iv[prev].cand,
               (unsigned long long)iv[prev].term, (long long)iv[prev].start,
               (long long)iv[prev].end);
  }
}

/* ---- fixture helpers ------------------------------------------------------------------ */

static redlock_t *open_client(fx_t *fx, int slot, uint32_t retry_delay_ms) {
  return fx_open(
      fx, slot,
      fx_options_retry(fx, slot, REDLOCK_LOG_INFO, -1, retry_delay_ms, retry_delay_ms / 2));
}

/* Three clients (slots 0..2, retry every 100 ms) campaign for name;
 * returns the first one elected. */
static cand_t *campaign3(fx_t *fx, history_t *h, cand_t **c, const char *name, uint32_t ttl) {
  for (int i = 0; i < 3; i++)
    c[i] = cand_elect(h, open_client(fx, i, 100), i, name, ttl);
  return wait_nth_elected(h, 0, 10000);
}

/* ---- one leader among 3 ------------------------------------------------------------------ */

typedef struct {
  cand_t **cands;
  int n;
  cand_t *leader;
  uint64_t until;
  char failure[256];
} steady_t;

static int steady_poll(void *arg) {
  steady_t *s = arg;
  for (int i = 0; i < s->n; i++) {
    cand_t *c = s->cands[i];
    if (c != s->leader && atomic_load(&c->elected) != 0) {
      snprintf(s->failure, sizeof s->failure, "cand %d elected too", c->id);
      return 1;
    }
  }
  if (atomic_load(&s->leader->lost) != 0 || redlock_election_validity_ms(s->leader->e) <= 0) {
    snprintf(s->failure, sizeof s->failure, "the leader lost its lease");
    return 1;
  }
  return rh_now_ms() >= s->until;
}

static void one_leader_among_3(fx_t *fx, history_t *h, const char *name, uint32_t ttl) {
  cand_t *c[3];
  cand_t *leader = campaign3(fx, h, c, name, ttl);
  uint64_t term = atomic_load(&leader->term);

  /* For 1.5 ttl (at least one extension): the same leader, nobody else. */
  fx_stall_monitor_start();
  steady_t s = {c, 3, leader, rh_now_ms() + ttl * 3 / 2, ""};
  assert_true(rh_wait_until(steady_poll, &s, (int)ttl * 3));
  fx_stall_monitor_stop();
  if (s.failure[0] != '\0') {
    check_history(h); /* safety first: never excused */
    if (fx_stall_max_ms() < STALL_EXCUSE_MS)
      fail_msg("%s (worst stall %u ms)", s.failure, fx_stall_max_ms());
    print_message("liveness miss excused by a %u ms stall: %s\n", fx_stall_max_ms(), s.failure);
  } else {
    /* The lease is on every master, and its counter is the term. */
    char fence_key[128];
    fx_fence_key_of(fence_key, sizeof fence_key, name);
    size_t equal = 0;
    for (size_t i = 0; i < fx->n; i++)
      equal += fx_get_u64(fx->servers[i], fence_key) == term;
    assert_true(equal >= 2);
    assert_true(fx_masters_with_key(fx, fx->n, name) >= 2);
  }
  for (int i = 0; i < 3; i++)
    if (c[i] != leader)
      cand_resign(c[i]);
  cand_resign(leader);
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], name, 5000));
}

/* ---- terms across handovers ---------------------------------------------------------------- */

static void terms_increase(fx_t *fx, history_t *h, const char *name, uint32_t ttl) {
  redlock_t *clients[3];
  cand_t *live[3];
  for (int i = 0; i < 3; i++) {
    clients[i] = open_client(fx, i, 100);
    live[i] = cand_elect(h, clients[i], i, name, ttl);
  }
  uint64_t last = 0;
  for (unsigned k = 0; k < 6; k++) {
    cand_t *leader = wait_nth_elected(h, k, 10000);
    uint64_t term = atomic_load(&leader->term);
    assert_true(term > last);
    last = term;
    /* Hand over, and campaign again with a new handle. */
    int slot = leader->slot;
    cand_resign(leader);
    live[slot] = cand_elect(h, clients[slot], slot, name, ttl);
  }
  wait_nth_elected(h, 6, 10000);
  for (int i = 0; i < 3; i++)
    cand_resign(live[i]);
}

/* ---- resign wakes the next campaigner ------------------------------------------------------- */

static void resign_hands_over_via_wake(fx_t *fx, history_t *h, const char *name, uint32_t ttl) {
  cand_t *a = cand_elect(h, open_client(fx, 0, SLOW_FALLBACK_MS), 0, name, ttl);
  assert_true(fx_event_wait(&a->elected_ev, 10000));
  cand_t *b = cand_elect(h, open_client(fx, 1, SLOW_FALLBACK_MS), 1, name, ttl);
  fx_assert_subscribed(fx, name, 1, 10000); /* b campaigns, waiting for a release */
  uint64_t t0 = rh_now_ms();
  cand_resign(a);
  if (!fx_event_wait(&b->elected_ev, WAKE_BOUND_MS))
    fail_msg("not handed over within %d ms of the resign (fallback poll %u ms); log:\n%s",
             WAKE_BOUND_MS, SLOW_FALLBACK_MS, fx_log_text(fx, 1));
  print_message("handed over in %llu ms\n", (unsigned long long)(rh_now_ms() - t0));
  assert_true(atomic_load(&b->term) > atomic_load(&a->term));
  cand_resign(b);
}

/* ---- all masters stopped --------------------------------------------------------------------- */

static void leader_loss_sigstop(fx_t *fx, history_t *h, const char *name, uint32_t ttl) {
  cand_t *c[3];
  cand_t *old = campaign3(fx, h, c, name, ttl);
  uint64_t old_term = atomic_load(&old->term);

  fx_pause_all(fx);
  if (!fx_event_wait(&old->lost_ev, (int)ttl + 10000)) {
    fx_resume_all(fx);
    fail_msg("the leader did not report the loss");
  }
  /* Still stopped: nobody can be elected. */
  assert_int_equal(n_elected(h), 1);
  assert_int_equal(atomic_load(&old->reason), REDLOCK_ELOST);
  fx_resume_all(fx);

  cand_t *next = wait_nth_elected(h, 1, 15000);
  assert_true(atomic_load(&next->term) > old_term);
  /* The old leader campaigns again: once the others step down it is elected. */
  unsigned k = 1;
  while (next != old) {
    cand_resign(next);
    next = wait_nth_elected(h, ++k, 15000);
  }
  assert_int_equal(atomic_load(&old->elected), 2);
  assert_int_equal(atomic_load(&old->lost), 1); /* once for its first term */
  for (int i = 0; i < 3; i++)
    if (!atomic_load(&c[i]->silenced))
      cand_resign(c[i]);
}

/* ---- the leader alone partitioned ------------------------------------------------------------ */

static void leader_partitioned(fx_t *fx, history_t *h, const char *name, uint32_t ttl) {
  fault_proxy_t *proxies[FX_MAX_SERVERS] = {NULL};
  redlock_options_t *opts = fx_options(fx, 0, 0, REDLOCK_LOG_INFO);
  assert_int_equal(redlock_options_set_retry(opts, -1, 100, 50), 0);
  for (size_t i = 0; i < fx->n; i++) {
    assert_int_equal(fault_proxy_start(&proxies[i], "127.0.0.1", rh_server_port(fx->servers[i])),
                     0);
    char uri[64];
    snprintf(uri, sizeof uri, "redis://127.0.0.1:%d", fault_proxy_port(proxies[i]));
    assert_int_equal(redlock_options_add_node(opts, uri), 0);
  }
  cand_t *a = cand_elect(h, fx_open(fx, 0, opts), 0, name, ttl);
  assert_true(fx_event_wait(&a->elected_ev, 10000));
  cand_t *b = cand_elect(h, open_client(fx, 1, 100), 1, name, ttl);

  for (size_t i = 0; i < fx->n; i++)
    assert_int_equal(fault_proxy_set_stall(proxies[i], 1), 0);
  int lost = fx_event_wait(&a->lost_ev, (int)ttl + 10000);
  int elected = lost && fx_event_wait(&b->elected_ev, (int)ttl + 10000);
  assert_int_equal(n_elected(h), 2); /* nobody else while a is cut off */
  for (size_t i = 0; i < fx->n; i++)
    assert_int_equal(fault_proxy_set_stall(proxies[i], 0), 0);
  assert_true(lost);
  assert_true(elected);
  assert_true(atomic_load(&b->term) > atomic_load(&a->term));
  uint64_t b_term = atomic_load(&b->term);

  /* a campaigns again; b's resign hands over to it. */
  fx_assert_subscribed(fx, name, 1, 10000);
  cand_resign(b);
  assert_true(fx_event_wait(&a->elected_ev, 10000));
  assert_true(atomic_load(&a->term) > b_term);
  assert_int_equal(atomic_load(&a->lost), 1);
  cand_resign(a);
  fx_close(fx, 0);
  for (size_t i = 0; i < fx->n; i++)
    fault_proxy_stop(proxies[i]);
}

/* ---- resign from inside the callbacks -------------------------------------------------------- */

static void resign_inside_callbacks(fx_t *fx, history_t *h, const char *name, uint32_t ttl) {
  redlock_t *c0 = open_client(fx, 0, 100);
  redlock_t *c1 = open_client(fx, 1, 100);

  /* From on_elected: returns at once (the loop cannot wait for itself), the
   * lease is released, nothing more is heard of the handle. */
  cand_t *a = cand_elect_with(h, c0, 0, name, ttl, RESIGN_IN_ELECTED);
  assert_true(fx_event_wait(&a->elected_ev, 10000));
  for (size_t i = 0; i < fx->n; i++)
    assert_true(fx_wait_key_absent(fx->servers[i], name, 5000));
  assert_int_equal(atomic_load(&a->cb_resign_rc), REDLOCK_OK);
  assert_true(atomic_load(&a->cb_resign_ms) < 1000);
  assert_int_equal(redlock_resign(c0, a->e), REDLOCK_EINVAL); /* freed */

  /* The next campaigner is elected. */
  cand_t *b = cand_elect_with(h, c1, 1, name, ttl, RESIGN_IN_LOST);
  assert_true(fx_event_wait(&b->elected_ev, 10000));
  assert_true(atomic_load(&b->term) > atomic_load(&a->term));

  /* From on_lost: the masters stop, b resigns inside on_lost. */
  cand_t *d = cand_elect(h, c0, 0, name, ttl);
  fx_pause_all(fx);
  int lost = fx_event_wait(&b->lost_ev, (int)ttl + 10000);
  fx_resume_all(fx);
  assert_true(lost);
  assert_int_equal(atomic_load(&b->cb_resign_rc), REDLOCK_OK);
  assert_true(atomic_load(&b->cb_resign_ms) < 1000);
  assert_true(fx_event_wait(&d->elected_ev, 15000));
  assert_true(atomic_load(&d->term) > atomic_load(&b->term));
  assert_int_equal(atomic_load(&b->elected), 1);
  assert_int_equal(redlock_resign(c1, b->e), REDLOCK_EINVAL);
  cand_resign(d);
}

/* ---- close with live elections -------------------------------------------------------------- */

static void close_with_live_elections(fx_t *fx, history_t *h, const char *name, uint32_t ttl) {
  /* h: the history of name ("close") */
  history_t *h2 = history_new(); /* "close2": one history per name */
  redlock_t *c0 = open_client(fx, 0, SLOW_FALLBACK_MS);
  redlock_t *c1 = open_client(fx, 1, SLOW_FALLBACK_MS);
  /* c0 leads "close" and campaigns for "close2", led by c1. */
  cand_t *a1 = cand_elect(h, c0, 0, name, ttl);
  assert_true(fx_event_wait(&a1->elected_ev, 10000));
  cand_t *b2 = cand_elect(h2, c1, 1, "sf:elect:close2", ttl);
  assert_true(fx_event_wait(&b2->elected_ev, 10000));
  cand_t *b1 = cand_elect(h, c1, 1, name, ttl);
  cand_t *a2 = cand_elect(h2, c0, 0, "sf:elect:close2", ttl);
  fx_assert_subscribed(fx, name, 1, 10000);
  fx_assert_subscribed(fx, "sf:elect:close2", 1, 10000);

  /* No callback of c0's elections from now on. */
  atomic_store(&a1->silenced, 1);
  atomic_store(&a2->silenced, 1);
  uint64_t t0 = rh_now_ms();
  pthread_mutex_lock(&h->mu);
  push(h, EV_RESIGNED, a1->id, atomic_load(&a1->term), t0, 0);
  pthread_mutex_unlock(&h->mu);
  fx_close(fx, 0);
  uint64_t closed_in = rh_now_ms() - t0;
  /* The close released the leadership: b1 is woken (fallback 10 s). */
  if (!fx_event_wait(&b1->elected_ev, WAKE_BOUND_MS))
    fail_msg("not handed over within %d ms of the close; log:\n%s", WAKE_BOUND_MS,
             fx_log_text(fx, 1));
  assert_true(closed_in < 5000);
  assert_true(atomic_load(&b1->term) > atomic_load(&a1->term));
  assert_int_equal(atomic_load(&b2->lost), 0); /* close2 still b2's */
  assert_int_equal(atomic_load(&a2->elected), 0);
  assert_true(fx_masters_with_key(fx, fx->n, "sf:elect:close2") >= 2);
  cand_resign(b1);
  cand_resign(b2);
  check_history(h2);
  history_free(h2);
}

/* ---- bad input, and a client on the caller's loop -------------------------------------------- */

static void bad_input(fx_t *fx, history_t *h, const char *name, uint32_t ttl) {
  (void)name;
  (void)ttl;
  redlock_t *c = open_client(fx, 0, 100);
  cand_t *bad = cand_new(h, c, 0);
  char long_name[REDLOCK_MAX_RESOURCE_LEN + 2];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  redlock_election_t *e = (redlock_election_t *)(void *)&bad; /* garbage: must be reset */
  struct {
    redlock_t *client;
    const char *name;
    uint32_t ttl;
    int with_elected, with_lost;
  } cases[] = {
      {NULL, "n", 1000, 1, 1},    {c, NULL, 1000, 1, 1}, {c, "", 1000, 1, 1},
      {c, long_name, 1000, 1, 1}, {c, "n", 0, 1, 1},     {c, "n", 60001, 1, 1},
      {c, "n", 3, 1, 1},          {c, "n", 1000, 0, 1},  {c, "n", 1000, 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    e = (redlock_election_t *)(void *)&bad;
    int rc = redlock_elect(cases[i].client, cases[i].name, cases[i].ttl,
                           cases[i].with_elected ? on_elected : NULL,
                           cases[i].with_lost ? on_lost : NULL, bad, &e);
    if (rc != REDLOCK_EINVAL)
      fail_msg("case %zu: %d, expected EINVAL", i, rc);
    assert_null(e);
  }
  assert_int_equal(redlock_elect(c, "n", 1000, on_elected, on_lost, bad, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_resign(NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_resign(c, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_resign(c, (redlock_election_t *)(void *)&bad), REDLOCK_EINVAL);
  assert_int_equal(redlock_election_validity_ms(NULL), 0);
  long_name[REDLOCK_MAX_RESOURCE_LEN] = '\0'; /* the longest name is fine */

  /* A good one runs to completion; the bad calls never call back. */
  cand_t *good = cand_elect(h, c, 0, long_name, 60000);
  assert_int_equal(redlock_resign(c, (redlock_election_t *)(void *)&bad), REDLOCK_EINVAL);
  assert_true(fx_event_wait(&good->elected_ev, 10000));
  assert_true(redlock_election_validity_ms(good->e) > 0);
  cand_resign(good);
  /* Another round trip through the loop after the resign. */
  cand_t *again = cand_elect(h, c, 0, long_name, 1000);
  assert_true(fx_event_wait(&again->elected_ev, 10000));
  cand_resign(again);
  assert_int_equal(atomic_load(&bad->elected) + atomic_load(&bad->lost), 0);
}

typedef struct {
  uv_loop_t *loop;
  int closed;
} uv_ctx_t;

static void uv_closed_cb(void *arg) { ((uv_ctx_t *)arg)->closed++; }

static void run_until(uv_loop_t *loop, atomic_int *flag, int timeout_ms) {
  uint64_t deadline = rh_now_ms() + (uint64_t)timeout_ms;
  while (!atomic_load(flag) && rh_now_ms() < deadline)
    uv_run(loop, UV_RUN_ONCE);
}

static void uv_client(fx_t *fx, history_t *h, const char *name, uint32_t ttl) {
  (void)name;
  (void)ttl;
  uv_loop_t loop;
  redlock_t *client = fx_open_uv(fx_options(fx, 0, fx->n, REDLOCK_LOG_INFO), &loop);

  /* Callbacks inside uv_run on this thread; resign on this thread. */
  cand_t *a = cand_elect_with(h, client, 0, "sf:elect:uv", 1000, RESIGN_IN_ELECTED);
  run_until(&loop, &a->elected, 10000);
  assert_int_equal(atomic_load(&a->elected), 1);
  assert_int_equal(atomic_load(&a->cb_resign_rc), REDLOCK_OK);

  cand_t *b = cand_elect(h, client, 0, "sf:elect:uv", 1000);
  run_until(&loop, &b->elected, 10000);
  assert_int_equal(atomic_load(&b->elected), 1);
  /* Another election: a history of its own, for the checker rightly finds
   * two leaders at once when b and d share one (they lead different names). */
  history_t *h2 = history_new();
  cand_t *d = cand_elect(h2, client, 0, "sf:elect:uv2", 1000);
  run_until(&loop, &d->elected, 10000);

  /* Close with b and d live: nothing more is heard of them; new calls get
   * ECLOSED while the close runs. */
  atomic_store(&b->silenced, 1);
  atomic_store(&d->silenced, 1);
  uv_ctx_t ctx = {&loop, 0};
  pthread_mutex_lock(&h->mu);
  push(h, EV_RESIGNED, b->id, atomic_load(&b->term), rh_now_ms(), 0);
  pthread_mutex_unlock(&h->mu);
  pthread_mutex_lock(&h2->mu);
  push(h2, EV_RESIGNED, d->id, atomic_load(&d->term), rh_now_ms(), 0);
  pthread_mutex_unlock(&h2->mu);
  redlock_close_uv(client, uv_closed_cb, &ctx);
  redlock_election_t *e = NULL;
  assert_int_equal(redlock_elect(client, "sf:elect:uv", 1000, on_elected, on_lost, b, &e),
                   REDLOCK_ECLOSED);
  assert_null(e);
  assert_int_equal(redlock_resign(client, b->e), REDLOCK_ECLOSED);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(ctx.closed, 1);
  assert_int_equal(uv_loop_close(&loop), 0);
  for (size_t i = 0; i < fx->n; i++) {
    assert_true(fx_key_absent(fx->servers[i], "sf:elect:uv"));
    assert_true(fx_key_absent(fx->servers[i], "sf:elect:uv2"));
  }
  check_history(h2);
  history_free(h2);
}

/* ---- the tests: one table ------------------------------------------------------------------- */

/* A test: its scenario, run on `masters` fresh masters with a history of
 * its own (checked once the scenario ended), for the election `name` with
 * the candidates' lease `ttl` ms. */
typedef struct {
  const char *test; /* cmocka's name */
  void (*run)(fx_t *fx, history_t *h, const char *name, uint32_t ttl);
  size_t masters;
  const char *name;
  uint32_t ttl;
} el_case_t;

static const el_case_t cases[] = {
    {"test_bad_input", bad_input, 1, NULL, 0},
    {"test_uv_client", uv_client, 3, NULL, 0},
    {"test_one_leader_among_3", one_leader_among_3, 3, "sf:elect:one", 2000},
    {"test_terms_increase", terms_increase, 3, "sf:elect:terms", 2000},
    {"test_resign_hands_over_via_wake", resign_hands_over_via_wake, 3, "sf:elect:wake", 5000},
    {"test_resign_inside_callbacks", resign_inside_callbacks, 3, "sf:elect:inside", 1500},
    {"test_close_with_live_elections", close_with_live_elections, 3, "sf:elect:close", 5000},
    {"test_leader_loss_sigstop", leader_loss_sigstop, 3, "sf:elect:sigstop", 1500},
    {"test_leader_partitioned", leader_partitioned, 3, "sf:elect:partition", 1500},
};

/* The running case: its setup gets it as cmocka's initial state. */
static const el_case_t *current;

static int case_setup(void **state) {
  current = *state;
  return current->masters == 1 ? fx_setup_1(state) : fx_setup_3(state);
}

static void test_case(void **state) {
  history_t *h = history_new();
  current->run(*state, h, current->name, current->ttl);
  check_history(h);
  history_free(h);
}

int main(void) {
  enum { N_CASES = sizeof cases / sizeof cases[0] };
  struct CMUnitTest tests[N_CASES];
  for (size_t i = 0; i < N_CASES; i++)
    tests[i] =
        (struct CMUnitTest){cases[i].test, test_case, case_setup, fx_teardown, (void *)&cases[i]};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
