/* cluster_fixture.h: real clusters (cluster_harness.h) under an integration
 * test of the fixture (fixture.h).  A test starts up to CFX_MAX clusters;
 * cfx_teardown, its teardown, closes the fixture's clients first (their
 * connections go before the servers do), then resumes every node (a test
 * may leave one SIGSTOPped) and stops each cluster, also after a failed
 * assertion. */
#ifndef REDLOCK_TEST_CLUSTER_FIXTURE_H
#define REDLOCK_TEST_CLUSTER_FIXTURE_H

#include <stddef.h>

#include "cluster_harness.h"

#define CFX_MAX 3

/* Starts a cluster of `primaries` primaries with `replicas` replicas each,
 * stopped by cfx_teardown; asserts that it started. */
ch_cluster_t *cfx_start(unsigned primaries, unsigned replicas);
/* The same with every option of ch_start (a TLS cluster). */
ch_cluster_t *cfx_start_opts(const ch_options_t *o);

/* A cmocka teardown: the clusters, then fx_teardown. */
int cfx_teardown(void **state);

/* A server's DBSIZE; -1 when it is stopped or does not answer. */
long cfx_dbsize(rh_server_t *s);

/* Keys on the cluster's primaries (a replica's copies are not counted). */
long cfx_keys(ch_cluster_t *c);

/* Waits (FX_SETTLE_MS) until the primaries hold `want` keys in all; fails
 * the test, saying how many they hold, when they do not. */
void cfx_assert_keys(ch_cluster_t *c, long want);

/* The key of resource `res` as a client of default options names it. */
void cfx_key_of(const char *res, char *key, size_t size);

#endif
