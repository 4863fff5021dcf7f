/* test_client_uv.c: a whole client (client.c, calls.c) opened with
 * redlock_open_uv on the test's loop over mock masters
 * (tests/support/mock_master.h; node_fixture.h gives the loop and the first
 * mock, A), and redlock_open's own-thread client where the loop thread is
 * the point.
 *
 * Asserts:
 *  - a call made right after open waits for the masters' first attempts
 *    (parked) and then goes through; the event of its round names each
 *    master with its verdict and detail (a master down says why); in the
 *    callback, on the loop thread, redlock_last_votes reads that round;
 *  - a release whose connection drops is kept and replayed when the master
 *    is back, and close waits for the replay's reply;
 *  - with a cluster voter, lock_many refuses resources in different hash
 *    slots and a '}' without a hash tag, takes those in one slot;
 *    redlock_close on a client of the caller's loop closes it there;
 *  - TLS options: verification off is warned about once at open, a CA file
 *    that does not exist fails the open;
 *  - redlock_close from a callback on the client's own loop thread frees it
 *    when that thread ends;
 *  - in a forked child the client's calls refuse with REDLOCK_EFORKED. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "node_fixture.h"
#include "proto/keyslot.h"
#include "redlock.h"
#include "redlock_uv.h"
#include "unit_support.h"

typedef struct {
  nf_t *f;
  mock_master_t *mocks[3]; /* [0] is f->mock */
  unsigned n;
  redlock_t *client;
  char logbuf[16384];
  size_t log_len;
  /* the lock call */
  int lock_done, lock_status;
  redlock_lock_t *lock;
  char votes[512];
  int votes_rc;
  /* the acquire event */
  int acquire_events;
  int node_count;
  char verdict[3][32], detail[3][NODE_DOWN_WHY_LEN], addr[3][64];
  int done, done_status, closed;
} cu_t;

static void cu_log(int level, const char *msg, void *arg) {
  cu_t *t = arg;
  (void)level;
  int n = snprintf(t->logbuf + t->log_len, sizeof t->logbuf - t->log_len, "%s\n", msg);
  if (n > 0)
    t->log_len += (size_t)n;
  if (t->log_len >= sizeof t->logbuf)
    t->log_len = sizeof t->logbuf - 1;
}

static int cu_logged(const cu_t *t, const char *needle) {
  return strstr(t->logbuf, needle) != NULL;
}

static void cu_event(const redlock_event_t *ev, void *arg) {
  cu_t *t = arg;
  if (redlock_event_kind(ev) != REDLOCK_EVENT_ACQUIRE)
    return;
  t->acquire_events++;
  t->node_count = redlock_event_node_count(ev);
  for (int i = 0; i < t->node_count && i < 3; i++) {
    snprintf(t->verdict[i], sizeof t->verdict[i], "%s", redlock_event_node_verdict(ev, i));
    snprintf(t->detail[i], sizeof t->detail[i], "%s", redlock_event_node_detail(ev, i));
    snprintf(t->addr[i], sizeof t->addr[i], "%s", redlock_event_node_addr(ev, i));
  }
}

static void cu_lock_cb(int status, redlock_lock_t *lock, void *arg) {
  cu_t *t = arg;
  t->lock_done++;
  t->lock_status = status;
  t->lock = lock;
  /* On the loop thread: the votes of this call's round. */
  t->votes_rc = redlock_last_votes(t->client, t->votes, sizeof t->votes);
}

static void cu_done_cb(int status, void *arg) {
  cu_t *t = arg;
  t->done++;
  t->done_status = status;
}

static void cu_closed_cb(void *arg) { ((cu_t *)arg)->closed++; }

static int lock_done(void *arg) { return ((cu_t *)arg)->lock_done > 0; }
static int unlock_done(void *arg) { return ((cu_t *)arg)->done > 0; }
static int is_closed(void *arg) { return ((cu_t *)arg)->closed > 0; }

/* Options over n mocks (A and n-1 more) with `scheme` URIs. */
static redlock_options_t *cu_options(cu_t *t, nf_t *f, unsigned n, const char *scheme) {
  t->f = f;
  t->n = n;
  redlock_options_t *opts = redlock_options_new();
  assert_non_null(opts);
  for (unsigned i = 0; i < n; i++) {
    t->mocks[i] = i == 0 ? f->mock : mock_master_start(&f->loop);
    assert_non_null(t->mocks[i]);
    char run_id[41];
    memset(run_id, 'a' + (int)i, 40); /* each its own server */
    run_id[40] = '\0';
    mock_master_set_run_id(t->mocks[i], run_id);
    char uri[96];
    snprintf(uri, sizeof uri, "%s://127.0.0.1:%d", scheme, mock_master_port(t->mocks[i]));
    assert_int_equal(redlock_options_add_node(opts, uri), 0);
  }
  assert_int_equal(redlock_options_set_log(opts, REDLOCK_LOG_DEBUG, cu_log, t), 0);
  return opts;
}

static void cu_close_mocks(cu_t *t) {
  for (unsigned i = 1; i < t->n; i++)
    mock_master_close(t->mocks[i]);
}

static void cu_close(cu_t *t) {
  redlock_close_uv(t->client, cu_closed_cb, t);
  if (!mock_run_until(&t->f->loop, is_closed, t, NF_WAIT_MS))
    fail_msg("the client did not close; log:\n%s", t->logbuf);
  assert_int_equal(t->closed, 1);
  t->client = NULL;
}

/* ---- a lock and its release over three masters, one down ----------------------------- */

static void test_lock_release_replayed(void **state) {
  nf_t *f = *state;
  cu_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  redlock_options_t *opts = cu_options(t, f, 3, "redis");
  assert_int_equal(redlock_options_set_stats(opts, 1), 0);
  assert_int_equal(redlock_options_set_event_cb(opts, cu_event, t), 0);
  assert_int_equal(redlock_options_set_timeouts(opts, 2000, 2000), 0);
  /* C is down from the start. */
  mock_master_stop_listening(t->mocks[2]);
  assert_int_equal(redlock_open_uv(&t->client, opts, &f->loop), 0);
  redlock_options_free(opts);
  /* Made before any master's first attempt: it waits for them. */
  assert_int_equal(redlock_lock_async(t->client, "cu-res", 10000, 0, cu_lock_cb, t), 0);
  assert_int_equal(mock_master_count(f->mock, "SET"), 0);
  if (!mock_run_until(&f->loop, lock_done, t, NF_WAIT_MS))
    fail_msg("no lock; log:\n%s", t->logbuf);
  assert_int_equal(t->lock_status, 0);
  assert_non_null(t->lock);
  assert_int_equal(mock_master_count(f->mock, "SET"), 1);
  assert_int_equal(mock_master_count(t->mocks[1], "SET"), 1);
  /* The event: A and B voted yes, C was down and says why. */
  assert_int_equal(t->acquire_events, 1);
  assert_int_equal(t->node_count, 3);
  assert_string_equal(t->verdict[0], "OK");
  assert_string_equal(t->detail[0], "");
  assert_string_equal(t->verdict[1], "OK");
  assert_string_equal(t->verdict[2], "down");
  assert_true(strlen(t->detail[2]) > 0);
  char lc[32];
  snprintf(lc, sizeof lc, "127.0.0.1:%d", mock_master_port(t->mocks[2]));
  assert_string_equal(t->addr[2], lc);
  /* redlock_last_votes in the callback read that round. */
  assert_true(t->votes_rc > 0);
  assert_non_null(strstr(t->votes, "won"));
  assert_non_null(strstr(t->votes, lc));

  /* A drops the connection instead of answering the release: kept, then
   * replayed on the next connection, whose answer settles it. */
  mock_master_on(f->mock, "EVALSHA", MOCK_CLOSE, NULL, 1);
  assert_int_equal(redlock_unlock_async(t->client, t->lock, cu_done_cb, t), 0);
  if (!mock_run_until(&f->loop, unlock_done, t, NF_WAIT_MS))
    fail_msg("no unlock; log:\n%s", t->logbuf);
  nf_wait_received(f, "EVALSHA", 2);
  assert_true(mock_master_accepted(f->mock) >= 2);
  if (!cu_logged(t, "replaying 1 release(s) it missed"))
    fail_msg("no replay; log:\n%s", t->logbuf);
  cu_close(t);
  cu_close_mocks(t);
  free(t);
}

/* ---- a cluster voter: one slot per lock -------------------------------------------------- */

static void test_cluster_one_slot(void **state) {
  nf_t *f = *state;
  /* Static: the client still logs while teardown runs the loop to its end. */
  static cu_t storage;
  memset(&storage, 0, sizeof storage);
  cu_t *t = &storage;
  redlock_options_t *opts = cu_options(t, f, 1, "redis-cluster");
  /* A refuses CLUSTER SHARDS, then serves every slot. */
  char map[128];
  snprintf(map, sizeof map, "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n",
           mock_master_port(f->mock));
  mock_master_on(f->mock, "CLUSTER", MOCK_REPLY, "-ERR unknown subcommand 'SHARDS'\r\n", 1);
  mock_master_on(f->mock, "CLUSTER", MOCK_REPLY, map, 0);
  assert_int_equal(redlock_open_uv(&t->client, opts, &f->loop), 0);
  redlock_options_free(opts);
  /* Two slots: refused before anything is sent. */
  const char *apart[] = {"cu-a", "cu-b"};
  assert_int_not_equal(keyslot("cu-a", 4), keyslot("cu-b", 4));
  assert_int_equal(redlock_lock_many_async(t->client, apart, 2, 10000, cu_lock_cb, t),
                   REDLOCK_EINVAL);
  assert_true(cu_logged(t, "are in hash slots"));
  /* A '}' with no hash tag: its derived names could not share its slot. */
  const char *untagged[] = {"cu}x"};
  assert_int_equal(redlock_lock_many_async(t->client, untagged, 1, 10000, cu_lock_cb, t),
                   REDLOCK_EINVAL);
  assert_true(cu_logged(t, "needs a hash tag"));
  assert_int_equal(t->lock_done, 0);
  /* One hash tag: one slot, taken. */
  const char *tagged[] = {"{cu}a", "{cu}b"};
  mock_master_on(f->mock, "EVALSHA", MOCK_REPLY, ":2\r\n", 1); /* both keys set */
  assert_int_equal(redlock_lock_many_async(t->client, tagged, 2, 10000, cu_lock_cb, t), 0);
  if (!mock_run_until(&f->loop, lock_done, t, NF_WAIT_MS))
    fail_msg("no lock; log:\n%s", t->logbuf);
  assert_int_equal(t->lock_status, 0);
  /* One resource without '}': nothing to check. */
  t->lock_done = 0;
  assert_int_equal(redlock_lock_async(t->client, "cu-one", 10000, 0, cu_lock_cb, t), 0);
  if (!mock_run_until(&f->loop, lock_done, t, NF_WAIT_MS))
    fail_msg("no lock; log:\n%s", t->logbuf);
  assert_int_equal(t->lock_status, 0);
  /* redlock_close on a client of the caller's loop: it closes there (the
   * held locks released), and the loop ends clean (teardown checks). */
  redlock_close(t->client);
  nf_wait_received(f, "EVALSHA", 3); /* the acquisition, then both releases */
}

/* ---- TLS options at open ----------------------------------------------------------------- */

static void test_tls_open(void **state) {
  nf_t *f = *state;
  if (!redlock_tls_supported())
    skip();
  cu_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  redlock_options_t *opts = cu_options(t, f, 1, "rediss");
  assert_int_equal(redlock_options_set_tls_verify(opts, 0), 0);
  assert_int_equal(redlock_open_uv(&t->client, opts, &f->loop), 0);
  assert_true(cu_logged(t, "TLS certificate verification is off"));
  cu_close(t);
  /* A trust store that does not exist, or that holds no certificate: the
   * setter refuses it (a configuration error, seen when it is made), and
   * says why. */
  assert_int_not_equal(
      redlock_options_set_tls(opts, "/nonexistent-redlock-unit/ca.pem", NULL, NULL, NULL), 0);
  char ca[] = "/tmp/redlock-unit-ca-XXXXXX";
  int fd = mkstemp(ca);
  assert_true(fd >= 0);
  static const char junk[] = "not a certificate\n";
  assert_int_equal(write(fd, junk, sizeof junk - 1), (ssize_t)(sizeof junk - 1));
  close(fd);
  int rc = redlock_options_set_tls(opts, ca, NULL, NULL, NULL);
  unlink(ca);
  assert_int_not_equal(rc, 0);
  assert_true(cu_logged(t, "redlock_options_set_tls"));
  redlock_options_free(opts);
  free(t);
}

/* ---- redlock_close in a callback of the client's own thread ------------------------------ */

/* The process's threads, read through one directory stream opened before
 * the client exists: a descriptor opened and closed at each reading would
 * take the number of one the client's thread has just closed, which
 * ThreadSanitizer reports as a race with that thread. */
static int threads_now(DIR *d) {
  rewinddir(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.';
  return n;
}

typedef struct {
  redlock_t *client;
  int calls, status, votes_rc;
} own_t;

static void own_lock_cb(int status, redlock_lock_t *lock, void *arg) {
  own_t *o = arg;
  (void)lock;
  o->status = status;
  /* On the loop thread: the votes of this call's round (its one master). */
  char votes[256];
  o->votes_rc = redlock_last_votes(o->client, votes, sizeof votes);
  /* On the client's loop thread: the thread frees the client as it ends. */
  redlock_close(o->client);
  __atomic_store_n(&o->calls, 1, __ATOMIC_RELEASE);
}

static void no_work(void *arg) { (void)arg; }

static void test_close_from_callback(void **state) {
  (void)state;
  DIR *task = opendir("/proc/self/task");
  if (task == NULL)
    skip();
  /* A thread made and joined first: a tool's own thread that starts with a
   * process's first thread (ThreadSanitizer's) is then counted in before. */
  uv_thread_t first;
  assert_int_equal(uv_thread_create(&first, no_work, NULL), 0);
  assert_int_equal(uv_thread_join(&first), 0);
  int before = threads_now(task);
  redlock_options_t *opts = unit_nowhere_options();
  static own_t o; /* read by the client's thread after this test could fail */
  memset(&o, 0, sizeof o);
  assert_int_equal(redlock_open(&o.client, opts), 0);
  redlock_options_free(opts);
  assert_true(threads_now(task) > before);
  /* Its only master never connects: the call fails, and its callback
   * closes the client. */
  assert_int_equal(redlock_lock_async(o.client, "cu-own", 10000, 0, own_lock_cb, &o), 0);
  /* The client's thread ends once it has freed the client. */
  struct timespec pause = {0, 1000000};
  for (int ms = 0; ms < NF_WAIT_MS; ms++) {
    if (__atomic_load_n(&o.calls, __ATOMIC_ACQUIRE) && threads_now(task) == before)
      break;
    nanosleep(&pause, NULL);
  }
  assert_int_equal(__atomic_load_n(&o.calls, __ATOMIC_ACQUIRE), 1);
  assert_int_not_equal(o.status, 0);
  assert_true(o.votes_rc > 0);
  assert_int_equal(threads_now(task), before);
  closedir(task);
}

/* ---- redlock_cancel from a thread that is not the loop's ------------------------------- */

typedef struct {
  uv_sem_t done;
  int status;
} cancel_wait_t;

static void cancel_lock_cb(int status, redlock_lock_t *lock, void *arg) {
  cancel_wait_t *w = arg;
  (void)lock;
  w->status = status;
  uv_sem_post(&w->done);
}

/* Whether the client's master has cast a "down" vote. */
static int voted_down(redlock_t *c) {
  static char text[1 << 18];
  int n = redlock_stats(c, REDLOCK_STATS_PROMETHEUS, text, sizeof text);
  assert_true(n > 0 && (size_t)n < sizeof text);
  const char *at = strstr(text, "\nredlock_master_votes_total{");
  for (; at != NULL; at = strstr(at + 1, "\nredlock_master_votes_total{")) {
    const char *end = strchr(at + 1, '\n');
    const char *down = strstr(at, "verdict=\"down\"}");
    if (down != NULL && (end == NULL || down < end))
      return strtoll(strchr(down, '}') + 1, NULL, 10) > 0;
  }
  return 0;
}

/* An own-thread client whose only master never connects: a waiting
 * acquisition retries until its budget; redlock_cancel from this thread
 * (not the loop's, which may be asleep in poll) wakes the loop, and the
 * call ends with REDLOCK_ECANCELED long before its wait is over. */
static void test_cancel_from_another_thread(void **state) {
  (void)state;
  redlock_options_t *opts = unit_nowhere_options();
  assert_int_equal(redlock_options_set_retry(opts, -1, 2000, 0), 0);
  redlock_t *c = NULL;
  assert_int_equal(redlock_open(&c, opts), 0);
  redlock_options_free(opts);
  cancel_wait_t w = {.status = 1};
  assert_int_equal(uv_sem_init(&w.done, 0), 0);
  uint64_t id = 0;
  assert_int_equal(redlock_lock_async_ex(c, "cu-cancel", 10000, 60000, cancel_lock_cb, &w, &id), 0);
  assert_int_not_equal(id, 0);
  /* Its first attempt voted (down): the loop now sleeps through the retry
   * delay, so the cancel is what wakes it. */
  struct timespec pause = {0, 1000000};
  int voted = 0;
  for (int ms = 0; ms < NF_WAIT_MS && !voted; ms++) {
    voted = voted_down(c);
    if (!voted)
      nanosleep(&pause, NULL);
  }
  assert_true(voted);
  assert_int_equal(redlock_cancel(c, id), 0);
  uv_sem_wait(&w.done); /* the test's own timeout bounds it; 60 s without the cancel */
  assert_int_equal(w.status, REDLOCK_ECANCELED);
  uv_sem_destroy(&w.done);
  redlock_close(c);
}

/* ---- a forked child ---------------------------------------------------------------------- */

static void test_forked_child_refused(void **state) {
  (void)state;
  redlock_options_t *opts = unit_nowhere_options();
  redlock_t *c = NULL;
  assert_int_equal(redlock_open(&c, opts), 0);
  redlock_options_free(opts);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char buf[64];
    int ok = redlock_last_votes(c, buf, sizeof buf) == REDLOCK_EFORKED &&
             redlock_cancel(c, 1) == REDLOCK_EFORKED;
#ifdef __SANITIZE_ADDRESS__
    _exit(ok ? 0 : 1); /* no leak check here: the parent's thread is not in the child */
#else
    exit(ok ? 0 : 1); /* exit handlers run: a --coverage build records the child's lines */
#endif
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  /* The parent's client is unaffected. */
  char buf[64];
  assert_true(redlock_last_votes(c, buf, sizeof buf) >= 0);
  redlock_close(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lock_release_replayed, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_cluster_one_slot, nf_setup, nf_teardown),
      cmocka_unit_test_setup_teardown(test_tls_open, nf_setup, nf_teardown),
      cmocka_unit_test(test_close_from_callback),
      cmocka_unit_test(test_forked_child_refused),
      cmocka_unit_test(test_cancel_from_another_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
