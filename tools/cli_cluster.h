/* cli_cluster.h: a redis-cluster:// (or rediss-cluster://) voter's slot map,
 * read by the tool over its own synchronous connections (cli_conn.h) as the
 * library reads it: CLUSTER SHARDS, else CLUSTER SLOTS (an older server),
 * parsed by the library's own proto/cluster_map.c, from the first seed that
 * answers.  `doctor` checks the map and every primary of it
 * (cli_doctor_cluster.c); `status` and run's diagnosis of "no quorum"
 * (cli_probe.c) ask the primary that owns the key's hash slot. */
#ifndef REDLOCK_CLI_CLUSTER_H
#define REDLOCK_CLI_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "cli_common.h"
#include "proto/cluster_map.h" /* the library's slot map parser, from the redlock_uri target */

/* What the seed that gave the map said besides it. */
typedef struct {
  char seed[300];       /* "host:port" of the seed that answered */
  const char *source;   /* "CLUSTER SHARDS" or "CLUSTER SLOTS" */
  char shards_why[256]; /* CLUSTER SHARDS refused (an older server): its error */
  char failed[512];     /* primaries marked failed, with their slots; "" none */
  int want_info;        /* set by the caller: also ask CLUSTER INFO (doctor) */
  char *info;           /* CLUSTER INFO (heap, NULL when refused or not asked) */
  char info_why[256];   /* CLUSTER INFO refused: its error */
} cli_cluster_answer_t;

/* What cli_cluster_read_map returns besides ST_OK and
 * ST_ENOMEM: no seed gave a map. */
#define CLI_CLUSTER_NO_MAP (-1)

/* Asks voter's seeds in turn (with the voter's credentials and TLS, each
 * step bounded by timeout_ms) until one gives the slot map, into *map (an
 * initialised map; emptied first).  ST_OK with ans filled in;
 * CLI_CLUSTER_NO_MAP with tried saying what each seed answered (never a
 * password); ST_ENOMEM.  ans->info is the caller's to free. */
int cli_cluster_read_map(const node_addr_t *voter, uint64_t timeout_ms, cluster_map_t *map,
                         cli_cluster_answer_t *ans, char *tried, size_t size);

/* The address of one primary: the voter's fields (credentials, TLS, acks,
 * label, seeds: borrowed, and voter still VOTER_KIND_CLUSTER, so that a
 * check can tell a cluster primary from a standalone master) with the
 * primary's host and port.  It must outlive neither the voter nor p. */
void cli_cluster_primary_addr(const node_addr_t *voter, const cluster_primary_t *p,
                              node_addr_t *out);

#endif
