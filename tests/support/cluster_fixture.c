/* cluster_fixture.c: clusters started by a fixture test, stopped by its
 * teardown (see cluster_fixture.h). */
#include "cluster_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "fixture.h"

/* The running test's clusters (one test at a time in a test process). */
static ch_cluster_t *g_clusters[CFX_MAX];

ch_cluster_t *cfx_start(unsigned primaries, unsigned replicas) {
  ch_options_t o = {.primaries = primaries, .replicas_per_primary = replicas};
  return cfx_start_opts(&o);
}

ch_cluster_t *cfx_start_opts(const ch_options_t *o) {
  for (int k = 0; k < CFX_MAX; k++) {
    if (g_clusters[k] != NULL)
      continue;
    assert_int_equal(ch_start(&g_clusters[k], o), 0);
    return g_clusters[k];
  }
  fail_msg("cfx_start: more than %d clusters in one test", CFX_MAX);
  return NULL;
}

int cfx_teardown(void **state) {
  fx_t *fx = *state;
  for (int i = 0; fx != NULL && i < FX_MAX_CLIENTS; i++)
    fx_close(fx, i);
  for (int k = 0; k < CFX_MAX; k++) {
    for (unsigned i = 0; g_clusters[k] != NULL && i < ch_count(g_clusters[k]); i++)
      (void)rh_server_resume(ch_node(g_clusters[k], i));
    ch_stop(g_clusters[k]);
    g_clusters[k] = NULL;
  }
  return fx_teardown(state);
}

long cfx_dbsize(rh_server_t *s) {
  char buf[64];
  if (rh_server_pid(s) == 0 || rh_server_command(s, buf, sizeof buf, "DBSIZE") != 0)
    return -1;
  return atol(buf);
}

long cfx_keys(ch_cluster_t *c) {
  long sum = 0;
  for (unsigned i = 0; i < ch_count(c); i++)
    if (ch_is_master(c, i))
      sum += cfx_dbsize(ch_node(c, i));
  return sum;
}

typedef struct {
  ch_cluster_t *c;
  long want;
} keys_t;

static int keys_are(void *arg) {
  keys_t *k = arg;
  return cfx_keys(k->c) == k->want;
}

void cfx_assert_keys(ch_cluster_t *c, long want) {
  keys_t k = {c, want};
  if (!rh_wait_until(keys_are, &k, FX_SETTLE_MS))
    fail_msg("%ld keys on the cluster's primaries, want %ld", cfx_keys(c), want);
}

void cfx_key_of(const char *res, char *key, size_t size) {
  const char *prefix = NULL;
  redlock_options_t *o = redlock_options_new();
  assert_non_null(o);
  assert_int_equal(redlock_options_get_key_prefix(o, &prefix), 0);
  snprintf(key, size, "%s%s", prefix, res);
  redlock_options_free(o);
}
