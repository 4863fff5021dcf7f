/* api_inspect.c: redlock_inspect and redlock_revoke against three real
 * masters.
 *
 * Asserts, per include/redlock.h:
 *  - bad input: NULL client, name or buf (size > 0), an unknown kind, a
 *    reserved name: EINVAL; on the loop thread (a callback): EWOULDBLOCK;
 *    size 0 measures, a short buffer is cut and NUL-terminated, the length
 *    is the whole view's either way;
 *  - a free lock: held false, agreed true, every master "free"; a lock held
 *    by a labelled client: held, agreed, its value and owner, a ttl range
 *    within its ttl, every master "holds"; fenced: "fence" is at least its
 *    token;
 *  - another client's value on every master (SET directly): held, owner
 *    null; the same value on one master of three: held false, agreed false,
 *    that master "other";
 *  - a semaphore's two permits: count 2, each with its slot and owner; a
 *    read-write lock's two readers (mode read), then its writer (write); an
 *    election's leader: held, its label, a fence at least its term;
 *  - revoke of a fenced, watched lock: the fence it returns is above the
 *    holder's token; the holder's extension fails (ELOST); its watch's lost
 *    callback runs exactly once; the next grant's token is above the
 *    revoke's fence;
 *  - revoke of a lock without fencing: fence 0, the holder's extension
 *    fails, nobody else is granted it while the old lease lasts, inspect
 *    shows the revoker's label on it;
 *  - revoke with two masters of three paused: ENOQUORUM.
 */
#include <inttypes.h>

#include "fixture.h"

#define TTL 10000u

static char view[8192];

static redlock_t *open_client(int slot, const char *owner, int fenced) {
  redlock_options_t *opts = fenced ? fx_options_fenced(fx_group, slot)
                                   : fx_options_retry(fx_group, slot, REDLOCK_LOG_WARN, 0, 10, 10);
  if (owner != NULL)
    assert_int_equal(redlock_options_set_owner(opts, owner), REDLOCK_OK);
  return fx_open(fx_group, slot, opts);
}

static void inspect_ok(redlock_t *c, const char *name, int kind) {
  int n = redlock_inspect(c, name, kind, view, sizeof view);
  if (n < 0)
    fprintf(stderr, "inspect: %s\n", redlock_err_name(n));
  assert_true(n > 0 && (size_t)n < sizeof view);
  assert_int_equal(strlen(view), (size_t)n);
  if (fx_verbose())
    fprintf(stderr, "%s\n", view);
}

#define assert_has(s) assert_non_null(strstr(view, s))
#define assert_lacks(s) assert_null(strstr(view, s))

/* The count of `what` in the view. */
static int occurrences(const char *what) {
  int n = 0;
  for (const char *p = view; (p = strstr(p, what)) != NULL; p++)
    n++;
  return n;
}

/* The view's "fence": the largest counter a master reports, at least the
 * token granted (a master outside the winning quorum may have drawn a larger
 * one from its clock); 0 when null. */
static uint64_t view_fence(void) {
  const char *f = strstr(view, "\"fence\":");
  assert_non_null(f);
  return strtoull(f + strlen("\"fence\":"), NULL, 10);
}

static void test_inspect_bad_input(void **state) {
  (void)state;
  redlock_t *c = open_client(0, NULL, 0);
  assert_int_equal(redlock_inspect(NULL, "x", REDLOCK_INSPECT_LOCK, view, sizeof view),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_inspect(c, NULL, REDLOCK_INSPECT_LOCK, view, sizeof view),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_inspect(c, "", REDLOCK_INSPECT_LOCK, view, sizeof view), REDLOCK_EINVAL);
  assert_int_equal(redlock_inspect(c, "x", REDLOCK_INSPECT_LOCK, NULL, 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_inspect(c, "x", 0, view, sizeof view), REDLOCK_EINVAL);
  assert_int_equal(redlock_inspect(c, "x", REDLOCK_INSPECT_ELECTION + 1, view, sizeof view),
                   REDLOCK_EINVAL);
  assert_int_equal(
      redlock_inspect(c, REDLOCK_FENCE_KEY_PREFIX "x", REDLOCK_INSPECT_LOCK, view, sizeof view),
      REDLOCK_EINVAL);
  uint64_t fence = 7;
  assert_int_equal(redlock_revoke(NULL, "x", &fence), REDLOCK_EINVAL);
  assert_int_equal(fence, 0);
  assert_int_equal(redlock_revoke(c, NULL, &fence), REDLOCK_EINVAL);
  assert_int_equal(redlock_revoke(c, "", NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_revoke(c, REDLOCK_FENCE_KEY_PREFIX "x", NULL), REDLOCK_EINVAL);

  /* Measure, then cut. */
  FX_NAME(res, "inspect-measure");
  int whole = redlock_inspect(c, res, REDLOCK_INSPECT_LOCK, NULL, 0);
  assert_true(whole > 20);
  char small[16];
  memset(small, 'x', sizeof small);
  assert_int_equal(redlock_inspect(c, res, REDLOCK_INSPECT_LOCK, small, sizeof small), whole);
  assert_int_equal(strlen(small), sizeof small - 1);
  assert_memory_equal(small, "{\"name\":", 8);
}

typedef struct {
  redlock_t *client;
  const char *res;
  int rc_inspect, rc_revoke, rc_unlock;
  atomic_int done;
  fx_rec_t unlocked; /* the unlock's callback: it runs after on_loop_cb returned */
} on_loop_t;

static void on_loop_cb(int status, redlock_lock_t *lock, void *arg) {
  (void)status;
  on_loop_t *o = arg;
  char buf[64];
  o->rc_inspect = redlock_inspect(o->client, o->res, REDLOCK_INSPECT_LOCK, buf, sizeof buf);
  o->rc_revoke = redlock_revoke(o->client, o->res, NULL);
  if (lock != NULL)
    o->rc_unlock = redlock_unlock_async(o->client, lock, fx_rec_done_cb, &o->unlocked);
  atomic_store(&o->done, 1);
}

static int on_loop_done(void *arg) { return atomic_load(&((on_loop_t *)arg)->done); }

static void test_blocking_rule(void **state) {
  (void)state;
  redlock_t *c = open_client(0, NULL, 0);
  FX_NAME(res, "inspect-on-loop");
  static on_loop_t o; /* static: outlives the frame if an assertion fails */
  o = (on_loop_t){.client = c, .res = res, .rc_unlock = -1};
  atomic_init(&o.done, 0);
  fx_rec_init(&o.unlocked);
  assert_int_equal(redlock_lock_async(c, res, TTL, 0, on_loop_cb, &o), REDLOCK_OK);
  assert_true(rh_wait_until(on_loop_done, &o, 5000));
  assert_int_equal(o.rc_inspect, REDLOCK_EWOULDBLOCK);
  assert_int_equal(o.rc_revoke, REDLOCK_EWOULDBLOCK);
  assert_int_equal(o.rc_unlock, REDLOCK_OK);
  assert_true(fx_rec_wait(&o.unlocked, 5000));
  assert_int_equal(atomic_load(&o.unlocked.status), REDLOCK_OK);
}

static void test_inspect_lock(void **state) {
  (void)state;
  redlock_t *c = open_client(0, "inspector-1", 0);
  FX_NAME(res, "inspect-lock");
  inspect_ok(c, res, REDLOCK_INSPECT_LOCK);
  assert_has("\"kind\":\"lock\",\"held\":false,\"agreed\":true,\"value\":null,\"owner\":null");
  assert_has("\"fence\":null,\"quorum\":2,\"count\":0,\"holders\":[]");
  assert_int_equal(occurrences("\"state\":\"free\""), 3);

  redlock_lock_t *lock = fx_hold(fx_group, c, res, TTL);
  inspect_ok(c, res, REDLOCK_INSPECT_LOCK);
  char want[256];
  snprintf(want, sizeof want,
           "\"held\":true,\"agreed\":true,\"value\":\"%s\",\"owner\":\"inspector-1\"",
           redlock_lock_value(lock));
  assert_has(want);
  assert_int_equal(occurrences("\"state\":\"holds\""), 3);
  const char *lo = strstr(view, "\"ttl_ms_min\":"), *hi = strstr(view, "\"ttl_ms_max\":");
  assert_non_null(lo);
  assert_non_null(hi);
  long min = atol(lo + strlen("\"ttl_ms_min\":")), max = atol(hi + strlen("\"ttl_ms_max\":"));
  assert_true(min > 0 && min <= max && max <= (long)TTL);
  assert_int_equal(redlock_unlock(c, lock), REDLOCK_OK);

  /* Fenced: the counter is the token. */
  redlock_t *f = open_client(1, NULL, 1);
  FX_NAME(fres, "inspect-fenced");
  lock = fx_hold(fx_group, f, fres, TTL);
  inspect_ok(c, fres, REDLOCK_INSPECT_LOCK);
  assert_true(view_fence() >= redlock_lock_fence(lock));
  assert_has("\"owner\":null"); /* f has no label */
  assert_int_equal(redlock_unlock(f, lock), REDLOCK_OK);
}

static void test_inspect_foreign_and_minority(void **state) {
  (void)state;
  redlock_t *c = open_client(0, NULL, 0);
  FX_NAME(res, "inspect-foreign");
  char buf[64];
  for (size_t i = 0; i < fx_group->n; i++)
    assert_int_equal(rh_server_command(fx_group->servers[i], buf, sizeof buf,
                                       "SET %s other-client-value PX 10000", res),
                     0);
  inspect_ok(c, res, REDLOCK_INSPECT_LOCK);
  assert_has("\"held\":true,\"agreed\":true,\"value\":\"other-client-value\",\"owner\":null");

  FX_NAME(min, "inspect-minority");
  assert_int_equal(rh_server_command(fx_group->servers[0], buf, sizeof buf,
                                     "SET %s 0123456789abcdef0123456789abcdef~someone PX 10000",
                                     min),
                   0);
  inspect_ok(c, min, REDLOCK_INSPECT_LOCK);
  assert_has("\"held\":false,\"agreed\":false,\"value\":null");
  assert_int_equal(occurrences("\"state\":\"other\""), 1);
  assert_int_equal(occurrences("\"state\":\"free\""), 2);
  assert_has("\"state\":\"other\",\"value\":\"0123456789abcdef0123456789abcdef~someone\","
             "\"owner\":\"someone\"");
}

static void test_inspect_prims(void **state) {
  (void)state;
  redlock_t *c = open_client(0, "prim-7", 0);
  FX_NAME(sem, "inspect-sem");
  redlock_lock_t *p1 = NULL, *p2 = NULL;
  FX_ASSERT_RC(fx_group, c, redlock_semaphore_acquire(c, sem, 3, TTL, 0, &p1), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_semaphore_acquire(c, sem, 3, TTL, 0, &p2), REDLOCK_OK);
  inspect_ok(c, sem, REDLOCK_INSPECT_SEMAPHORE);
  assert_has("\"kind\":\"semaphore\",\"held\":true");
  assert_has("\"count\":2");
  assert_int_equal(occurrences("\"owner\":\"prim-7\""), 2);
  assert_int_equal(occurrences("\"slot\":"), 2);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, p1), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, p2), REDLOCK_OK);

  FX_NAME(rw, "inspect-rw");
  redlock_lock_t *r1 = NULL, *r2 = NULL, *w = NULL;
  FX_ASSERT_RC(fx_group, c, redlock_rwlock_read(c, rw, TTL, 0, &r1), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_rwlock_read(c, rw, TTL, 0, &r2), REDLOCK_OK);
  inspect_ok(c, rw, REDLOCK_INSPECT_RWLOCK);
  assert_has("\"kind\":\"rwlock\",\"held\":true");
  assert_has("\"count\":2");
  assert_int_equal(occurrences("\"mode\":\"read\""), 2);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, r1), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, r2), REDLOCK_OK);
  FX_ASSERT_RC(fx_group, c, redlock_rwlock_write(c, rw, TTL, 0, &w), REDLOCK_OK);
  inspect_ok(c, rw, REDLOCK_INSPECT_RWLOCK);
  assert_has("\"count\":1");
  assert_has("\"mode\":\"write\"");
  assert_has("\"owner\":\"prim-7\",\"ttl_ms_min\"");
  FX_ASSERT_RC(fx_group, c, redlock_unlock(c, w), REDLOCK_OK);
  inspect_ok(c, rw, REDLOCK_INSPECT_RWLOCK);
  assert_has("\"held\":false,\"agreed\":true");
}

static atomic_uint_least64_t elected_term;
static void on_elected(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e, (void)arg;
  atomic_store(&elected_term, term);
}
static void on_lost(redlock_election_t *e, int reason, void *arg) {
  (void)e, (void)reason, (void)arg;
}
static int was_elected(void *arg) {
  (void)arg;
  return atomic_load(&elected_term) != 0;
}

static void test_inspect_election(void **state) {
  (void)state;
  redlock_t *c = open_client(0, "leader-host:1", 0);
  FX_NAME(name, "inspect-elect");
  atomic_store(&elected_term, 0);
  redlock_election_t *e = NULL;
  assert_int_equal(redlock_elect(c, name, TTL, on_elected, on_lost, NULL, &e), REDLOCK_OK);
  assert_true(rh_wait_until(was_elected, NULL, 5000));
  assert_true(fx_wait_exists_on(fx_group, fx_group->n, name, fx_group->n, 5000));
  inspect_ok(c, name, REDLOCK_INSPECT_ELECTION);
  assert_has("\"kind\":\"election\",\"held\":true,\"agreed\":true");
  assert_has("\"owner\":\"leader-host:1\"");
  assert_true(view_fence() >= (uint64_t)atomic_load(&elected_term));
  assert_int_equal(redlock_resign(c, e), REDLOCK_OK);
}

static void test_revoke_fenced(void **state) {
  (void)state;
  redlock_t *holder = open_client(0, "holder", 1);
  redlock_t *admin = open_client(1, "admin", 0);
  FX_NAME(res, "revoke-fenced");
  redlock_lock_t *lock = fx_hold(fx_group, holder, res, TTL);
  uint64_t token = redlock_lock_fence(lock);
  assert_true(token > 0);
  static fx_lost_t lost; /* static: outlives the frame if an assertion fails */
  fx_lost_init(&lost);
  assert_int_equal(redlock_watch(holder, lock, fx_lost_cb, &lost), REDLOCK_OK);

  uint64_t fence = 0;
  FX_ASSERT_RC(fx_group, admin, redlock_revoke(admin, res, &fence), REDLOCK_OK);
  assert_true(fence > token);
  inspect_ok(admin, res, REDLOCK_INSPECT_LOCK);
  assert_has("\"held\":false");
  char want[64];
  snprintf(want, sizeof want, "\"fence\":%" PRIu64 ",", fence);
  assert_has(want);

  assert_int_equal(redlock_extend(holder, lock, TTL), REDLOCK_ELOST);
  assert_true(fx_lost_wait(&lost, 1, 5000));
  assert_int_equal(atomic_load(&lost.reason), REDLOCK_ELOST);
  assert_true(redlock_lock_is_lost(lock));
  assert_nil_everywhere(fx_group, res); /* not re-installed */

  redlock_lock_t *next = NULL;
  FX_ASSERT_RC(fx_group, holder, redlock_trylock(holder, res, TTL, &next), REDLOCK_OK);
  assert_true(redlock_lock_fence(next) > fence);
  assert_int_equal(redlock_unlock(holder, lock), REDLOCK_ELOST);
  assert_int_equal(redlock_unlock(holder, next), REDLOCK_OK);
  fx_close_client(fx_group, holder);
  assert_int_equal(atomic_load(&lost.calls), 1);
}

static void test_revoke_unfenced(void **state) {
  (void)state;
  redlock_t *holder = open_client(0, "holder", 0);
  redlock_t *admin = open_client(1, "admin", 0);
  FX_NAME(res, "revoke-plain");
  redlock_lock_t *lock = fx_hold(fx_group, holder, res, TTL);
  uint64_t fence = 99;
  FX_ASSERT_RC(fx_group, admin, redlock_revoke(admin, res, &fence), REDLOCK_OK);
  assert_int_equal(fence, 0);
  assert_int_equal(redlock_extend(holder, lock, TTL), REDLOCK_ELOST);
  redlock_lock_t *other = NULL;
  FX_ASSERT_RC(fx_group, admin, redlock_trylock(admin, res, TTL, &other), REDLOCK_ELOCKED);
  inspect_ok(admin, res, REDLOCK_INSPECT_LOCK);
  assert_has("\"held\":true,\"agreed\":true");
  assert_has("\"owner\":\"admin\"");
  assert_int_equal(redlock_unlock(holder, lock), REDLOCK_ELOST);
}

static void test_revoke_no_quorum(void **state) {
  (void)state;
  redlock_t *admin = open_client(0, NULL, 0);
  FX_NAME(res, "revoke-down");
  assert_int_equal(fx_pause(fx_group, 0x6u, 1), 0);
  uint64_t fence = 5;
  int rc = redlock_revoke(admin, res, &fence);
  assert_int_equal(fx_pause(fx_group, 0x6u, 0), 0);
  assert_int_equal(rc, REDLOCK_ENOQUORUM);
  assert_int_equal(fence, 0);
  /* Inspect still answers, and says so. */
  assert_int_equal(fx_pause(fx_group, 0x6u, 1), 0);
  int n = redlock_inspect(admin, res, REDLOCK_INSPECT_LOCK, view, sizeof view);
  assert_int_equal(fx_pause(fx_group, 0x6u, 0), 0);
  assert_true(n > 0);
  assert_has("\"held\":false,\"agreed\":false");
  assert_int_equal(occurrences("\"state\":\"free\""), 1);
}

FX_GROUP_MAIN(180, fx_group_test(test_inspect_bad_input), fx_group_test(test_blocking_rule),
              fx_group_test(test_inspect_lock), fx_group_test(test_inspect_foreign_and_minority),
              fx_group_test(test_inspect_prims), fx_group_test(test_inspect_election),
              fx_group_test(test_revoke_fenced), fx_group_test(test_revoke_unfenced),
              fx_group_test(test_revoke_no_quorum))
