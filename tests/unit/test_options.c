/* test_options.c: unit tests for the public redlock_options_* setters
 * (src/util/options.c) against the struct in src/util/options.h.
 *  - redlock_options_new() has the documented defaults (docs/api.md): retry 3 times,
 *    200 ms + 200 ms jitter, connect 1000 ms, request 100 ms, drift 0.01,
 *    max TTL 60000 ms, quarantine on, fencing off, prefix "", no nodes;
 *  - every setter refuses a NULL options object and out-of-range values with
 *    REDLOCK_EINVAL and leaves the option as it was; accepts the edges;
 *  - add_node parses (and stores) valid URIs, refuses malformed ones and the
 *    (REDLOCK_MAX_NODES + 1)th node; the log callback hears why a URI was
 *    refused, at ERROR level, without the password in the message;
 *  - key prefix up to REDLOCK_MAX_PREFIX_LEN bytes, refused above;
 *  - set_log refuses bad levels; cb may be NULL;
 *  - options_copy is a deep copy that outlives the original;
 *  - the owner label: 1..REDLOCK_MAX_OWNER printable bytes without '~',
 *    cleared by NULL or "", read back by its getter;
 *  - out of memory at each allocation in turn (an allocator table that
 *    refuses the Nth): redlock_options_new says NULL, each setter that
 *    copies says REDLOCK_ENOMEM and keeps what was set, options_copy leaves
 *    nothing behind;
 *  - redlock_options_free(NULL) is harmless. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "redlock.h"
#include "util/options.h"
#include "util/strutil.h"

static int setup(void **state) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return -1;
  *state = opts;
  return 0;
}

static int teardown(void **state) {
  redlock_options_free(*state);
  return 0;
}

/* A snapshot of every scalar option, to check that a refused call changed
 * nothing. */
typedef struct {
  int retry_count;
  uint32_t delay, jitter, connect, request, max_ttl;
  double drift;
  int quarantine, fencing, log_level;
  redlock_log_cb log_cb;
  void *log_arg;
  size_t n_nodes, prefix_len;
  char prefix[REDLOCK_MAX_PREFIX_LEN + 1];
} snap_t;

static snap_t snap(const redlock_options_t *o) {
  snap_t s;
  memset(&s, 0, sizeof s);
  s.retry_count = o->retry_count;
  s.delay = o->retry_delay_ms;
  s.jitter = o->retry_jitter_ms;
  s.connect = o->connect_timeout_ms;
  s.request = o->request_timeout_ms;
  s.max_ttl = o->max_ttl_ms;
  s.drift = o->drift_factor;
  s.quarantine = o->quarantine;
  s.fencing = o->fencing;
  s.log_level = o->log_level;
  s.log_cb = o->log_cb;
  s.log_arg = o->log_arg;
  s.n_nodes = o->n_nodes;
  s.prefix_len = o->key_prefix_len;
  memcpy(s.prefix, o->key_prefix, o->key_prefix_len + 1);
  return s;
}

static void assert_unchanged(const snap_t *before, const redlock_options_t *o) {
  snap_t now = snap(o);
  assert_int_equal(now.retry_count, before->retry_count);
  assert_int_equal(now.delay, before->delay);
  assert_int_equal(now.jitter, before->jitter);
  assert_int_equal(now.connect, before->connect);
  assert_int_equal(now.request, before->request);
  assert_int_equal(now.max_ttl, before->max_ttl);
  assert_true(now.drift == before->drift);
  assert_int_equal(now.quarantine, before->quarantine);
  assert_int_equal(now.fencing, before->fencing);
  assert_int_equal(now.log_level, before->log_level);
  assert_ptr_equal(now.log_cb, before->log_cb);
  assert_ptr_equal(now.log_arg, before->log_arg);
  assert_int_equal(now.n_nodes, before->n_nodes);
  assert_int_equal(now.prefix_len, before->prefix_len);
  assert_string_equal(now.prefix, before->prefix);
}

/* Expects rc == REDLOCK_EINVAL and nothing changed. */
#define REFUSED(opts, call)                                                                        \
  do {                                                                                             \
    snap_t before_ = snap(opts);                                                                   \
    assert_int_equal((call), REDLOCK_EINVAL);                                                      \
    assert_unchanged(&before_, (opts));                                                            \
  } while (0)

/* ---- defaults ---------------------------------------------------------------- */

static void test_defaults(void **state) {
  redlock_options_t *o = *state;
  assert_int_equal(o->retry_count, 3);
  assert_int_equal(o->retry_delay_ms, 200);
  assert_int_equal(o->retry_jitter_ms, 200);
  assert_int_equal(o->connect_timeout_ms, 1000);
  assert_int_equal(o->request_timeout_ms, 100);
  assert_float_equal(o->drift_factor, 0.01, 1e-12);
  assert_int_equal(o->max_ttl_ms, 60000);
  assert_int_equal(o->quarantine, 1);
  assert_int_equal(o->fencing, 0);
  assert_non_null(o->key_prefix);
  assert_string_equal(o->key_prefix, "");
  assert_int_equal(o->key_prefix_len, 0);
  assert_int_equal(o->n_nodes, 0);
  assert_null(o->log_cb);
  /* options_set_defaults agrees with redlock_options_new. */
  struct redlock_options d;
  options_set_defaults(&d);
  assert_int_equal(d.retry_count, o->retry_count);
  assert_int_equal(d.max_ttl_ms, o->max_ttl_ms);
  assert_int_equal(d.quarantine, o->quarantine);
}

/* ---- NULL options object ---------------------------------------------------------- */

static void test_null_options(void **state) {
  (void)state;
  assert_int_equal(redlock_options_add_node(NULL, "redis://h"), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_retry(NULL, 1, 1, 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_drift_factor(NULL, 0.01), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_timeouts(NULL, 10, 10), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_max_ttl(NULL, 1000), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_quarantine(NULL, 0), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_fencing(NULL, 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_key_prefix(NULL, "p:"), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_log(NULL, REDLOCK_LOG_INFO, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_reentrant(NULL, 1), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_owner(NULL, "a"), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_stats(NULL, 0), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_event_cb(NULL, NULL, NULL), REDLOCK_EINVAL);
  const char *text = "unchanged";
  assert_int_equal(redlock_options_get_owner(NULL, &text), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_state_dir(NULL, &text), REDLOCK_EINVAL);
  assert_string_equal(text, "unchanged");
  redlock_options_free(NULL);
}

/* ---- owner label ------------------------------------------------------------------ */

static void test_owner(void **state) {
  redlock_options_t *o = *state;
  const char *label = NULL;
  assert_int_equal(redlock_options_get_owner(o, &label), 0);
  assert_string_equal(label, "");
  assert_int_equal(redlock_options_get_owner(o, NULL), 0);
  char longest[REDLOCK_MAX_OWNER + 2];
  memset(longest, 'w', sizeof longest - 1);
  longest[sizeof longest - 1] = '\0';
  assert_int_equal(redlock_options_set_owner(o, longest), REDLOCK_EINVAL); /* one byte over */
  longest[REDLOCK_MAX_OWNER] = '\0';
  assert_int_equal(redlock_options_set_owner(o, longest), 0);
  assert_int_equal(redlock_options_get_owner(o, &label), 0);
  assert_string_equal(label, longest);
  assert_int_equal(redlock_options_set_owner(o, "worker-7@host"), 0);
  /* A space, a control byte, the separator, a byte above ASCII: refused,
   * the label kept. */
  const char *const bad[] = {"a b", "a\tb", "a~b", "caf\xc3\xa9"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(redlock_options_set_owner(o, bad[i]), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_get_owner(o, &label), 0);
  assert_string_equal(label, "worker-7@host");
  assert_int_equal(o->owner_len, strlen("worker-7@host"));
  assert_int_equal(redlock_options_set_owner(o, ""), 0);
  assert_int_equal(o->owner_len, 0);
  assert_int_equal(redlock_options_set_owner(o, "x"), 0);
  assert_int_equal(redlock_options_set_owner(o, NULL), 0);
  assert_int_equal(redlock_options_get_owner(o, &label), 0);
  assert_string_equal(label, "");
}

/* ---- out of memory ---------------------------------------------------------------- */

static long oom_at;    /* the allocation to refuse (1: the first) */
static long oom_count; /* allocations asked for since the count was reset */

static int oom_refuse(void) { return ++oom_count == oom_at; }
static void *oom_malloc(size_t size) { return oom_refuse() ? NULL : malloc(size); }
static void *oom_calloc(size_t n, size_t size) { return oom_refuse() ? NULL : calloc(n, size); }
static void *oom_realloc(void *p, size_t size) { return oom_refuse() ? NULL : realloc(p, size); }

static const redlock_allocator_t refusing = {
    .malloc_fn = oom_malloc, .calloc_fn = oom_calloc, .realloc_fn = oom_realloc, .free_fn = free};

/* Every setter that copies, then a copy: 0, or the first refusal's code
 * (the options freed), after checking that the refused setter kept what
 * was set (`kept`). */
#define STEP(call, kept)                                                                           \
  do {                                                                                             \
    if ((rc = (call)) != 0) {                                                                      \
      assert_true(kept);                                                                           \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

static int options_workout(void) {
  redlock_options_t *o = redlock_options_new();
  if (o == NULL)
    return REDLOCK_ENOMEM;
  int rc;
  STEP(redlock_options_add_node(o, "redis://h1:7001"), o->n_nodes == 0);
  STEP(redlock_options_set_key_prefix(o, "app:"), strcmp(o->key_prefix, "") == 0);
  STEP(redlock_options_set_state_dir(o, "/var/lib/app"), o->state_dir == NULL);
  STEP(redlock_options_allow_discovered(o, "10.0.0.*"), o->n_allow_discovered == 0);
  if (redlock_tls_supported()) {
    STEP(redlock_options_set_tls(o, NULL, "/", NULL, NULL), o->tls_ca_dir == NULL);
    STEP(redlock_options_set_tls_server_name(o, "redis.internal"), o->tls_server_name == NULL);
  }
  struct redlock_options dst;
  STEP(options_copy(&dst, o), 1);
  assert_string_equal(dst.key_prefix, "app:");
  assert_string_equal(dst.allow_discovered[0], "10.0.0.*");
  options_clear(&dst);
out:
  redlock_options_free(o);
  return rc;
}

static void test_out_of_memory(void **state) {
  (void)state;
  assert_int_equal(redlock_set_allocator(&refusing), REDLOCK_OK);
  long refusals = 0;
  for (oom_at = 1;; oom_at++) {
    oom_count = 0;
    int rc = options_workout();
    if (rc == 0)
      break;
    assert_int_equal(rc, REDLOCK_ENOMEM);
    refusals++;
  }
  assert_int_equal(refusals, oom_at - 1); /* each allocation refused in turn was said */
  assert_true(refusals >= 8);
  assert_int_equal(redlock_set_allocator(NULL), REDLOCK_OK);
}

/* ---- retry ---------------------------------------------------------------------- */

static void test_retry(void **state) {
  redlock_options_t *o = *state;
  REFUSED(o, redlock_options_set_retry(o, -2, 100, 100));
  REFUSED(o, redlock_options_set_retry(o, -1000, 100, 100));
  REFUSED(o, redlock_options_set_retry(o, 5, OPTIONS_MAX_TIMEOUT_MS + 1, 100));
  REFUSED(o, redlock_options_set_retry(o, 5, 100, OPTIONS_MAX_TIMEOUT_MS + 1));
  REFUSED(o, redlock_options_set_retry(o, 5, UINT32_MAX, 0));
  REFUSED(o, redlock_options_set_retry(o, 5, 0, UINT32_MAX));

  assert_int_equal(redlock_options_set_retry(o, -1, 0, 0), 0); /* unbounded, no wait */
  assert_int_equal(o->retry_count, -1);
  assert_int_equal(o->retry_delay_ms, 0);
  assert_int_equal(o->retry_jitter_ms, 0);
  assert_int_equal(redlock_options_set_retry(o, 0, 50, 10), 0); /* one try */
  assert_int_equal(o->retry_count, 0);
  assert_int_equal(o->retry_delay_ms, 50);
  assert_int_equal(o->retry_jitter_ms, 10);
  assert_int_equal(
      redlock_options_set_retry(o, 1000000, OPTIONS_MAX_TIMEOUT_MS, OPTIONS_MAX_TIMEOUT_MS), 0);
  assert_int_equal(o->retry_count, 1000000);
  assert_int_equal(o->retry_delay_ms, OPTIONS_MAX_TIMEOUT_MS);
  /* A refusal after a success keeps the success. */
  REFUSED(o, redlock_options_set_retry(o, -7, 1, 1));
  assert_int_equal(o->retry_count, 1000000);
}

/* ---- drift ---------------------------------------------------------------------- */

static void test_drift(void **state) {
  redlock_options_t *o = *state;
  REFUSED(o, redlock_options_set_drift_factor(o, -0.001));
  REFUSED(o, redlock_options_set_drift_factor(o, -1.0));
  REFUSED(o, redlock_options_set_drift_factor(o, 0.5));
  REFUSED(o, redlock_options_set_drift_factor(o, 1.0));
  REFUSED(o, redlock_options_set_drift_factor(o, NAN));
  REFUSED(o, redlock_options_set_drift_factor(o, INFINITY));
  REFUSED(o, redlock_options_set_drift_factor(o, -INFINITY));
  assert_int_equal(redlock_options_set_drift_factor(o, 0.0), 0);
  assert_true(o->drift_factor == 0.0);
  assert_int_equal(redlock_options_set_drift_factor(o, 0.49), 0);
  assert_true(o->drift_factor == 0.49);
  assert_int_equal(redlock_options_set_drift_factor(o, nextafter(0.5, 0.0)), 0);
  REFUSED(o, redlock_options_set_drift_factor(o, 0.5));
}

/* ---- timeouts ---------------------------------------------------------------------- */

static void test_timeouts(void **state) {
  redlock_options_t *o = *state;
  REFUSED(o, redlock_options_set_timeouts(o, 0, 100));
  REFUSED(o, redlock_options_set_timeouts(o, 100, 0));
  REFUSED(o, redlock_options_set_timeouts(o, 0, 0));
  REFUSED(o, redlock_options_set_timeouts(o, OPTIONS_MAX_TIMEOUT_MS + 1, 100));
  REFUSED(o, redlock_options_set_timeouts(o, 100, OPTIONS_MAX_TIMEOUT_MS + 1));
  REFUSED(o, redlock_options_set_timeouts(o, UINT32_MAX, UINT32_MAX));
  assert_int_equal(redlock_options_set_timeouts(o, 1, 1), 0);
  assert_int_equal(o->connect_timeout_ms, 1);
  assert_int_equal(o->request_timeout_ms, 1);
  assert_int_equal(redlock_options_set_timeouts(o, 250, 30), 0);
  assert_int_equal(o->connect_timeout_ms, 250);
  assert_int_equal(o->request_timeout_ms, 30);
  /* One bad half refuses the whole call: the good half is not applied. */
  REFUSED(o, redlock_options_set_timeouts(o, 500, 0));
  assert_int_equal(o->connect_timeout_ms, 250);
  assert_int_equal(redlock_options_set_timeouts(o, OPTIONS_MAX_TIMEOUT_MS, OPTIONS_MAX_TIMEOUT_MS),
                   0);
}

/* ---- max TTL ---------------------------------------------------------------------- */

static void test_max_ttl(void **state) {
  redlock_options_t *o = *state;
  REFUSED(o, redlock_options_set_max_ttl(o, 0));
  REFUSED(o, redlock_options_set_max_ttl(o, OPTIONS_MAX_TTL_LIMIT_MS + 1u));
  REFUSED(o, redlock_options_set_max_ttl(o, UINT32_MAX));
  assert_int_equal(redlock_options_set_max_ttl(o, 1), 0);
  assert_int_equal(o->max_ttl_ms, 1);
  assert_int_equal(redlock_options_set_max_ttl(o, OPTIONS_MAX_TTL_LIMIT_MS), 0);
  assert_int_equal(o->max_ttl_ms, OPTIONS_MAX_TTL_LIMIT_MS);
  assert_int_equal(redlock_options_set_max_ttl(o, 5000), 0);
  assert_int_equal(o->max_ttl_ms, 5000);
}

/* ---- flags ---------------------------------------------------------------------- */

static void test_flags(void **state) {
  redlock_options_t *o = *state;
  assert_int_equal(redlock_options_set_quarantine(o, 0), 0);
  assert_int_equal(o->quarantine, 0);
  assert_int_equal(redlock_options_set_quarantine(o, 7), 0);
  assert_int_equal(o->quarantine, 1);
  assert_int_equal(redlock_options_set_quarantine(o, -1), 0);
  assert_int_equal(o->quarantine, 1);
  assert_int_equal(redlock_options_set_fencing(o, 1), 0);
  assert_int_equal(o->fencing, 1);
  assert_int_equal(redlock_options_set_fencing(o, 0), 0);
  assert_int_equal(o->fencing, 0);
  assert_int_equal(redlock_options_set_fencing(o, 42), 0);
  assert_int_equal(o->fencing, 1);
  /* The two are independent. */
  assert_int_equal(redlock_options_set_quarantine(o, 0), 0);
  assert_int_equal(o->fencing, 1);
}

/* ---- key prefix ---------------------------------------------------------------------- */

static void test_key_prefix(void **state) {
  redlock_options_t *o = *state;
  assert_int_equal(redlock_options_set_key_prefix(o, "app:locks:"), 0);
  assert_string_equal(o->key_prefix, "app:locks:");
  assert_int_equal(o->key_prefix_len, 10);

  REFUSED(o, redlock_options_set_key_prefix(o, NULL));
  char longest[REDLOCK_MAX_PREFIX_LEN + 2];
  memset(longest, 'p', REDLOCK_MAX_PREFIX_LEN + 1);
  longest[REDLOCK_MAX_PREFIX_LEN + 1] = '\0';
  REFUSED(o, redlock_options_set_key_prefix(o, longest)); /* 257 bytes */
  assert_string_equal(o->key_prefix, "app:locks:");

  longest[REDLOCK_MAX_PREFIX_LEN] = '\0'; /* exactly 256 */
  assert_int_equal(redlock_options_set_key_prefix(o, longest), 0);
  assert_int_equal(o->key_prefix_len, REDLOCK_MAX_PREFIX_LEN);
  assert_string_equal(o->key_prefix, longest);
  assert_ptr_not_equal(o->key_prefix, longest); /* copied */

  /* Much longer than the limit, too. */
  char *huge = malloc(100000);
  assert_non_null(huge);
  memset(huge, 'x', 99999);
  huge[99999] = '\0';
  REFUSED(o, redlock_options_set_key_prefix(o, huge));
  free(huge);

  assert_int_equal(redlock_options_set_key_prefix(o, ""), 0);
  assert_string_equal(o->key_prefix, "");
  assert_int_equal(o->key_prefix_len, 0);
}

/* ---- log ---------------------------------------------------------------------- */

typedef struct {
  int calls;
  int level;
  char msg[512];
} log_seen_t;

static void log_cb(int level, const char *msg, void *arg) {
  log_seen_t *seen = arg;
  seen->calls++;
  seen->level = level;
  snprintf(seen->msg, sizeof seen->msg, "%s", msg != NULL ? msg : "(null)");
}

static void test_set_log(void **state) {
  redlock_options_t *o = *state;
  log_seen_t seen = {0};
  REFUSED(o, redlock_options_set_log(o, -1, log_cb, &seen));
  REFUSED(o, redlock_options_set_log(o, REDLOCK_LOG_ERROR + 1, log_cb, &seen));
  REFUSED(o, redlock_options_set_log(o, 1000, log_cb, &seen));
  assert_null(o->log_cb);
  for (int level = REDLOCK_LOG_DEBUG; level <= REDLOCK_LOG_ERROR; level++) {
    assert_int_equal(redlock_options_set_log(o, level, log_cb, &seen), 0);
    assert_int_equal(o->log_level, level);
    assert_ptr_equal(o->log_cb, log_cb);
    assert_ptr_equal(o->log_arg, &seen);
  }
  /* cb == NULL turns logging off. */
  assert_int_equal(redlock_options_set_log(o, REDLOCK_LOG_INFO, NULL, NULL), 0);
  assert_null(o->log_cb);
  assert_int_equal(seen.calls, 0);
}

/* ---- add_node ---------------------------------------------------------------------- */

static void test_add_node(void **state) {
  redlock_options_t *o = *state;
  assert_int_equal(redlock_options_add_node(o, "redis://127.0.0.1:7001"), 0);
  assert_int_equal(redlock_options_add_node(o, "redis://:pw@[::1]:7002/3"), 0);
  assert_int_equal(redlock_options_add_node(o, "unix:///tmp/r.sock"), 0);
  assert_int_equal(o->n_nodes, 3);
  assert_string_equal(o->nodes[0].host, "127.0.0.1");
  assert_int_equal(o->nodes[0].port, 7001);
  assert_string_equal(o->nodes[1].host, "::1");
  assert_string_equal(o->nodes[1].password, "pw");
  assert_int_equal(o->nodes[1].db, 3);
  assert_int_equal(o->nodes[2].kind, NODE_ADDR_UNIX);
  assert_string_equal(o->nodes[2].path, "/tmp/r.sock");

  /* The URI string is copied, not kept. */
  char uri[] = "redis://copied-host:7003";
  assert_int_equal(redlock_options_add_node(o, uri), 0);
  memset(uri, 'Z', sizeof uri - 1);
  assert_string_equal(o->nodes[3].host, "copied-host");

  REFUSED(o, redlock_options_add_node(o, NULL));
  REFUSED(o, redlock_options_add_node(o, ""));
  REFUSED(o, redlock_options_add_node(o, "localhost:6379"));
  REFUSED(o, redlock_options_add_node(o, "redis://h:0"));
  REFUSED(o, redlock_options_add_node(o, "redis://h:65536"));
  REFUSED(o, redlock_options_add_node(o, "redis://user@h"));
  if (!redlock_tls_supported()) {
    snap_t before = snap(o);
    assert_int_equal(redlock_options_add_node(o, "rediss://h"), REDLOCK_ENOTSUP);
    assert_unchanged(&before, o);
  }
  REFUSED(o, redlock_options_add_node(o, "unix://relative.sock"));
  REFUSED(o, redlock_options_add_node(o, "redis://h?wait=0"));
  assert_int_equal(o->n_nodes, 4);
  assert_string_equal(o->nodes[3].host, "copied-host");
  /* A whole cluster is one voter. */
  assert_int_equal(redlock_options_add_node(o, "redis-cluster://h:1,h:2"), 0);
  assert_int_equal(o->n_nodes, 5);
  assert_int_equal(o->nodes[4].voter, VOTER_KIND_CLUSTER);
  assert_int_equal(o->nodes[4].n_seeds, 2);
}

static void test_add_node_limit(void **state) {
  redlock_options_t *o = *state;
  for (int i = 0; i < REDLOCK_MAX_NODES; i++) {
    char uri[64];
    snprintf(uri, sizeof uri, "redis://10.0.0.1:%d", 7000 + i);
    assert_int_equal(redlock_options_add_node(o, uri), 0);
  }
  assert_int_equal(o->n_nodes, REDLOCK_MAX_NODES);
  REFUSED(o, redlock_options_add_node(o, "redis://10.0.0.2:6379"));
  REFUSED(o, redlock_options_add_node(o, "redis://10.0.0.2:6380"));
  assert_int_equal(o->n_nodes, REDLOCK_MAX_NODES);
  for (int i = 0; i < REDLOCK_MAX_NODES; i++)
    assert_int_equal(o->nodes[i].port, 7000 + i);
}

static void test_add_node_logs_refusal(void **state) {
  redlock_options_t *o = *state;
  log_seen_t seen = {0};
  /* Without a callback a refusal is silent (and must not crash). */
  REFUSED(o, redlock_options_add_node(o, "redis://h:99999"));
  assert_int_equal(redlock_options_set_log(o, REDLOCK_LOG_DEBUG, log_cb, &seen), 0);

  REFUSED(o, redlock_options_add_node(o, "redis://:VerySecret42@h:99999"));
  assert_int_equal(seen.calls, 1);
  assert_int_equal(seen.level, REDLOCK_LOG_ERROR);
  assert_true(strlen(seen.msg) > 0);
  assert_non_null(strstr(seen.msg, "port")); /* says why */
  assert_null(strstr(seen.msg, "VerySecret42"));

  REFUSED(o, redlock_options_add_node(o, "http://h"));
  assert_int_equal(seen.calls, 2);
  assert_true(strlen(seen.msg) > 0);

  /* Logged at ERROR whatever the minimum level. */
  assert_int_equal(redlock_options_set_log(o, REDLOCK_LOG_ERROR, log_cb, &seen), 0);
  REFUSED(o, redlock_options_add_node(o, "redis://"));
  assert_int_equal(seen.calls, 3);

  /* A good URI logs nothing. */
  assert_int_equal(redlock_options_add_node(o, "redis://h"), 0);
  assert_int_equal(seen.calls, 3);
}

/* A master listed twice is refused (its two votes would make a quorum
 * alone), silently without a callback; with one, the refusal names the
 * master and, spelled otherwise, how it was listed. */
static void test_add_node_logs_duplicate(void **state) {
  redlock_options_t *o = *state;
  assert_int_equal(redlock_options_add_node(o, "redis://h1:7001"), 0);
  REFUSED(o, redlock_options_add_node(o, "redis://h1:7001"));
  log_seen_t seen = {0};
  assert_int_equal(redlock_options_set_log(o, REDLOCK_LOG_ERROR, log_cb, &seen), 0);
  REFUSED(o, redlock_options_add_node(o, "redis://h1:7001"));
  assert_int_equal(seen.calls, 1);
  assert_int_equal(seen.level, REDLOCK_LOG_ERROR);
  assert_string_equal(seen.msg, "redlock_options_add_node: master h1:7001 is already listed");
  REFUSED(o, redlock_options_add_node(o, "redis://user:pw@h1:7001/3"));
  assert_int_equal(seen.calls, 2);
  assert_null(strstr(seen.msg, "pw"));
  /* The same address spelled otherwise. */
  assert_int_equal(redlock_options_add_node(o, "redis://127.0.0.1:7002"), 0);
  REFUSED(o, redlock_options_add_node(o, "redis://127.1:7002"));
  assert_int_equal(seen.calls, 3);
  assert_string_equal(
      seen.msg, "redlock_options_add_node: master 127.1:7002 is already listed as 127.0.0.1:7002");
  assert_int_equal(o->n_nodes, 2);
}

/* ---- options_copy ---------------------------------------------------------------------- */

static void test_copy_deep(void **state) {
  (void)state;
  redlock_options_t *src = redlock_options_new();
  assert_non_null(src);
  log_seen_t seen = {0};
  assert_int_equal(redlock_options_add_node(src, "redis://alice:pw@h1:7001/2"), 0);
  assert_int_equal(redlock_options_add_node(src, "unix:///tmp/a.sock"), 0);
  assert_int_equal(redlock_options_set_key_prefix(src, "pre:"), 0);
  assert_int_equal(redlock_options_set_retry(src, 9, 11, 13), 0);
  assert_int_equal(redlock_options_set_drift_factor(src, 0.2), 0);
  assert_int_equal(redlock_options_set_timeouts(src, 17, 19), 0);
  assert_int_equal(redlock_options_set_max_ttl(src, 23), 0);
  assert_int_equal(redlock_options_set_quarantine(src, 0), 0);
  assert_int_equal(redlock_options_set_fencing(src, 1), 0);
  assert_int_equal(redlock_options_set_log(src, REDLOCK_LOG_INFO, log_cb, &seen), 0);

  struct redlock_options dst;
  assert_int_equal(options_copy(&dst, src), 0);
  /* Separate storage. */
  assert_ptr_not_equal(dst.nodes, src->nodes);
  assert_ptr_not_equal(dst.key_prefix, src->key_prefix);
  assert_ptr_not_equal(dst.nodes[0].host, src->nodes[0].host);
  assert_ptr_not_equal(dst.nodes[0].password, src->nodes[0].password);
  assert_ptr_not_equal(dst.nodes[1].path, src->nodes[1].path);

  /* The original goes away (or changes); the copy keeps everything. */
  assert_int_equal(redlock_options_set_key_prefix(src, "changed:"), 0);
  assert_int_equal(redlock_options_add_node(src, "redis://h3"), 0);
  redlock_options_free(src);

  assert_int_equal(dst.n_nodes, 2);
  assert_string_equal(dst.nodes[0].host, "h1");
  assert_int_equal(dst.nodes[0].port, 7001);
  assert_int_equal(dst.nodes[0].db, 2);
  assert_string_equal(dst.nodes[0].user, "alice");
  assert_string_equal(dst.nodes[0].password, "pw");
  assert_string_equal(dst.nodes[0].label, "h1:7001");
  assert_int_equal(dst.nodes[1].kind, NODE_ADDR_UNIX);
  assert_string_equal(dst.nodes[1].path, "/tmp/a.sock");
  assert_string_equal(dst.key_prefix, "pre:");
  assert_int_equal(dst.key_prefix_len, 4);
  assert_int_equal(dst.retry_count, 9);
  assert_int_equal(dst.retry_delay_ms, 11);
  assert_int_equal(dst.retry_jitter_ms, 13);
  assert_true(dst.drift_factor == 0.2);
  assert_int_equal(dst.connect_timeout_ms, 17);
  assert_int_equal(dst.request_timeout_ms, 19);
  assert_int_equal(dst.max_ttl_ms, 23);
  assert_int_equal(dst.quarantine, 0);
  assert_int_equal(dst.fencing, 1);
  assert_int_equal(dst.log_level, REDLOCK_LOG_INFO);
  assert_ptr_equal(dst.log_cb, log_cb);
  assert_ptr_equal(dst.log_arg, &seen);
  options_clear(&dst);
  assert_null(dst.nodes);
  assert_null(dst.key_prefix);
  assert_int_equal(dst.n_nodes, 0);
}

static void test_copy_no_nodes(void **state) {
  redlock_options_t *o = *state;
  struct redlock_options dst;
  assert_int_equal(options_copy(&dst, o), 0);
  assert_int_equal(dst.n_nodes, 0);
  assert_non_null(dst.key_prefix);
  assert_string_equal(dst.key_prefix, "");
  options_clear(&dst);
}

/* TLS setters, in either build.  Without TLS they refuse with ENOTSUP (a bad
 * path still gets EINVAL: it is named even there).  With TLS, paths and
 * names are checked when set and a refusal leaves the options unchanged;
 * tests/tls covers real certificates. */
static void test_tls_setters(void **state) {
  redlock_options_t *o = *state;
  assert_int_equal(redlock_options_set_tls(NULL, NULL, NULL, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_tls_server_name(NULL, "x"), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_tls_verify(NULL, 1), REDLOCK_EINVAL);
  assert_int_equal(o->tls_verify, 1);
  assert_null(o->tls_server_name);
  assert_int_equal(redlock_options_set_tls(o, "/nonexistent/ca.pem", NULL, NULL, NULL),
                   REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_tls(o, NULL, NULL, "/etc/hostname", NULL), REDLOCK_EINVAL);
  if (!redlock_tls_supported()) {
    assert_int_equal(redlock_options_set_tls(o, NULL, NULL, NULL, NULL), REDLOCK_ENOTSUP);
    assert_int_equal(redlock_options_set_tls_server_name(o, "x"), REDLOCK_ENOTSUP);
    assert_int_equal(redlock_options_set_tls_verify(o, 0), REDLOCK_ENOTSUP);
    assert_int_equal(o->tls_verify, 1);
    return;
  }
  assert_int_equal(redlock_options_set_tls(o, NULL, NULL, NULL, NULL), 0);
  /* Not a regular file, not a directory, no certificate in it. */
  assert_int_equal(redlock_options_set_tls(o, "/", NULL, NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_tls(o, NULL, "/etc/hostname", NULL, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_tls(o, "/etc/hostname", NULL, NULL, NULL), REDLOCK_EINVAL);
  assert_null(o->tls_ca_file);
  assert_int_equal(redlock_options_set_tls(o, NULL, "/", NULL, NULL), 0);
  assert_string_equal(o->tls_ca_dir, "/");
  /* A refused call keeps what was set. */
  assert_int_equal(redlock_options_set_tls(o, "/nonexistent", NULL, NULL, NULL), REDLOCK_EINVAL);
  assert_string_equal(o->tls_ca_dir, "/");

  char long_name[OPTIONS_MAX_TLS_SERVER_NAME + 2];
  memset(long_name, 'a', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  assert_int_equal(redlock_options_set_tls_server_name(o, long_name), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_tls_server_name(o, ""), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_tls_server_name(o, "a b"), REDLOCK_EINVAL);
  assert_null(o->tls_server_name);
  long_name[OPTIONS_MAX_TLS_SERVER_NAME] = '\0';
  assert_int_equal(redlock_options_set_tls_server_name(o, long_name), 0);
  assert_int_equal(redlock_options_set_tls_server_name(o, "redis.internal"), 0);
  assert_string_equal(o->tls_server_name, "redis.internal");
  assert_int_equal(redlock_options_set_tls_verify(o, 0), 0);
  assert_int_equal(o->tls_verify, 0);
  assert_int_equal(redlock_options_set_tls_verify(o, 7), 0);
  assert_int_equal(o->tls_verify, 1);

  /* The client's snapshot owns copies. */
  struct redlock_options dst;
  assert_int_equal(options_copy(&dst, o), 0);
  assert_true(dst.tls_server_name != o->tls_server_name && dst.tls_ca_dir != o->tls_ca_dir);
  assert_string_equal(dst.tls_server_name, "redis.internal");
  assert_string_equal(dst.tls_ca_dir, "/");
  assert_null(dst.tls_ca_file);
  options_clear(&dst);
  assert_int_equal(redlock_options_set_tls_server_name(o, NULL), 0);
  assert_null(o->tls_server_name);
}

/* redlock_options_allow_discovered: patterns kept in order, copied deep;
 * bad ones refused and the list left as it was. */
static void test_allow_discovered(void **state) {
  redlock_options_t *opts = *state;
  assert_int_equal(opts->n_allow_discovered, 0);
  assert_int_equal(redlock_options_allow_discovered(NULL, "10.*"), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_allow_discovered(opts, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_allow_discovered(opts, ""), REDLOCK_EINVAL);
  char big[300];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(redlock_options_allow_discovered(opts, big), REDLOCK_EINVAL);
  big[OPTIONS_MAX_ALLOW_PATTERN_LEN] = '\0';
  assert_int_equal(redlock_options_allow_discovered(opts, big), REDLOCK_OK);
  assert_int_equal(redlock_options_allow_discovered(opts, "10.0.0.*"), REDLOCK_OK);
  assert_int_equal(opts->n_allow_discovered, 2);
  assert_string_equal(opts->allow_discovered[1], "10.0.0.*");
  for (size_t i = 2; i < OPTIONS_MAX_ALLOW_PATTERNS; i++)
    assert_int_equal(redlock_options_allow_discovered(opts, "*.redis.internal"), REDLOCK_OK);
  assert_int_equal(redlock_options_allow_discovered(opts, "one.too.many"), REDLOCK_EINVAL);
  assert_int_equal(opts->n_allow_discovered, OPTIONS_MAX_ALLOW_PATTERNS);

  struct redlock_options copy;
  assert_int_equal(options_copy(&copy, opts), 0);
  assert_int_equal(copy.n_allow_discovered, OPTIONS_MAX_ALLOW_PATTERNS);
  assert_ptr_not_equal(copy.allow_discovered[1], opts->allow_discovered[1]);
  assert_string_equal(copy.allow_discovered[1], "10.0.0.*");
  options_clear(&copy);
  assert_int_equal(copy.n_allow_discovered, 0);
}

/* The matcher: fnmatch globs on the host, ASCII case ignored; nothing set
 * allows everything. */
static void test_host_allowed(void **state) {
  (void)state;
  assert_true(str_host_allowed("203.0.113.9", NULL, 0));
  const char *const pats[] = {"10.0.0.*", "*.redis.internal", "127.0.0.1", "fd00::*"};
  const size_t n = sizeof pats / sizeof pats[0];
  assert_true(str_host_allowed("10.0.0.7", pats, n));
  assert_true(str_host_allowed("10.0.0.250", pats, n));
  assert_false(str_host_allowed("10.0.1.7", pats, n));
  assert_false(str_host_allowed("110.0.0.7", pats, n));
  assert_true(str_host_allowed("db1.redis.internal", pats, n));
  assert_true(str_host_allowed("DB1.Redis.Internal", pats, n));
  assert_false(str_host_allowed("redis.internal", pats, n));
  assert_false(str_host_allowed("db1.redis.internal.evil.example", pats, n));
  assert_true(str_host_allowed("127.0.0.1", pats, n));
  assert_false(str_host_allowed("127.0.0.10", pats, n));
  assert_false(str_host_allowed("127.0.0.2", pats, n));
  assert_true(str_host_allowed("fd00::1", pats, n));
  assert_false(str_host_allowed("", pats, n));
  assert_false(str_host_allowed(NULL, pats, n));
  const char *const only10[] = {"10.*"};
  assert_false(str_host_allowed("127.0.0.1", only10, 1));
  assert_true(str_host_allowed("10.1.2.3", only10, 1));
  const char *const brackets[] = {"10.0.0.[1-3]"};
  assert_true(str_host_allowed("10.0.0.2", brackets, 1));
  assert_false(str_host_allowed("10.0.0.4", brackets, 1));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

UNIT_MAIN(T(test_defaults), cmocka_unit_test(test_null_options), T(test_retry), T(test_drift),
          T(test_timeouts), T(test_max_ttl), T(test_flags), T(test_key_prefix), T(test_set_log),
          T(test_add_node), T(test_add_node_limit), T(test_add_node_logs_refusal),
          T(test_add_node_logs_duplicate), cmocka_unit_test(test_copy_deep), T(test_copy_no_nodes),
          T(test_tls_setters), T(test_allow_discovered), cmocka_unit_test(test_host_allowed),
          T(test_owner), cmocka_unit_test(test_out_of_memory))
