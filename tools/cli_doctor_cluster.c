/* cli_doctor_cluster.c: `redlock doctor` on a redis-cluster:// voter.  The
 * slot map is read as the library reads it (CLUSTER SHARDS, else CLUSTER
 * SLOTS, parsed by the library's own proto/cluster_map.c) from the first
 * seed that answers (cli_cluster.c, which status shares); the voter's
 * report says which seed gave it, whether every one of the 16384 slots has
 * a primary (the ranges that have none), and cluster_state as that seed
 * sees it.  Each primary of the map is then
 * checked as a standalone master is (cli_doctor_checks.c), with the
 * voter's credentials, TLS and acks, the doctor's key placed in one of the
 * primary's own slots, and its own cluster_state: one report per primary,
 * each line naming it.  The voter can vote when no check of its own nor of
 * any primary failed: a lock whose key hashes to a slot with no primary, or
 * to a primary that fails, gets no vote from it. */
#define _GNU_SOURCE

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_cluster.h" /* the slot map, read from the seeds */
#include "cli_doctor.h"
#include "proto/keyslot.h"

/* Tries of a suffix that puts the doctor's key in a primary's slots: with 3
 * primaries a few do; none will when --key-prefix has a hash tag. */
#define KEY_TRIES 4096u

struct dr_cluster {
  cluster_map_t map; /* as the seed gave it */
  size_t n;          /* primaries: map.n_primaries */
  /* One of each per primary (heap, n of them; owned here).  addrs: the
   * voter's URI fields (borrowed strings) with the primary's host (in
   * map) and port; sets: the doctor's names, its key in the primary's
   * slots; reports: what v->primaries points to. */
  node_addr_t *addrs;
  dr_settings_t *sets;
  dr_master_t *masters;
  dr_voter_t *reports;
};

/* ---- reading the map ---------------------------------------------------------------- */

/* The seeds in turn until one gives a map (cli_cluster.c).  0, -1 with a
 * FAIL check, or -2 when out of memory. */
static int read_map(dr_voter_t *v, const node_addr_t *a, uint64_t timeout_ms, cluster_map_t *map,
                    cli_cluster_answer_t *ans) {
  char tried[DR_DETAIL_MAX - 128];
  ans->want_info = 1; /* the cluster-state check */
  int rc = cli_cluster_read_map(a, timeout_ms, map, ans, tried, sizeof tried);
  if (rc == ST_ENOMEM)
    return -2;
  if (rc != ST_OK) {
    dr_add(v, "slot-map", DR_FAIL, "no seed gave the slot map: %s", tried);
    return -1;
  }
  snprintf(v->address, sizeof v->address, "%s", ans->seed);
  dr_add(v, "slot-map", DR_OK, "%s answered %s%s%s%s: %u primar%s%s%s%s", ans->seed, ans->source,
         ans->shards_why[0] ? " (CLUSTER SHARDS: " : "", ans->shards_why,
         ans->shards_why[0] ? ")" : "", map->n_primaries, map->n_primaries == 1 ? "y" : "ies",
         tried[0] ? " (before it: " : "", tried, tried[0] ? ")" : "");
  return 0;
}

/* ---- coverage and state --------------------------------------------------------------- */

/* The ranges of slots whose owner index + 1 is `owner` (0: no primary),
 * "0-5460,10923", into out; their count. */
static unsigned ranges_of(const cluster_map_t *map, unsigned owner, char *out, size_t size) {
  size_t len = 0;
  unsigned count = 0, n_ranges = 0, shown = 0;
  out[0] = '\0';
  for (int s = 0; s < KEYSLOT_COUNT;) {
    if (map->owner[s] != owner) {
      s++;
      continue;
    }
    int e = s;
    while (e + 1 < KEYSLOT_COUNT && map->owner[e + 1] == owner)
      e++;
    count += (unsigned)(e - s + 1);
    n_ranges++;
    /* room kept for the "and N more" */
    if (len + 32 < size) {
      if (s == e)
        cli_append(out, size, &len, "%s%d", len ? "," : "", s);
      else
        cli_append(out, size, &len, "%s%d-%d", len ? "," : "", s, e);
      shown++;
    }
    s = e + 1;
  }
  if (shown < n_ranges)
    cli_append(out, size, &len, " and %u more range%s", n_ranges - shown,
               n_ranges - shown == 1 ? "" : "s");
  return count;
}

static void check_coverage(dr_voter_t *v, const cluster_map_t *map,
                           const cli_cluster_answer_t *ans) {
  char per[DR_DETAIL_MAX / 2] = "", holes[DR_DETAIL_MAX / 4];
  size_t len = 0;
  for (unsigned i = 0; i < map->n_primaries; i++) {
    char at[300], unused[8];
    cli_host_port(at, sizeof at, map->primaries[i].host, map->primaries[i].port);
    cli_append(per, sizeof per, &len, "%s%s %u", i ? ", " : "", at,
               ranges_of(map, i + 1, unused, sizeof unused));
  }
  v->slots_covered = (long)map->covered;
  if (map->covered == KEYSLOT_COUNT) {
    dr_add(v, "coverage", DR_OK, "all %d slots have a primary (slots per primary: %s)",
           KEYSLOT_COUNT, per);
    return;
  }
  unsigned missing = ranges_of(map, 0, holes, sizeof holes);
  dr_add(v, "coverage", DR_FAIL,
         "%u of %d slots have no primary: %s%s%s: a lock whose key hashes there gets no vote "
         "from this voter (slots per primary: %s)",
         missing, KEYSLOT_COUNT, holes, ans->failed[0] ? "; the cluster marks failed: " : "",
         ans->failed, per[0] ? per : "none");
}

/* cluster_state and the slot counts of a CLUSTER INFO, into check `name`
 * of v: ok, FAIL (state fail: every node refuses the keys' commands with
 * CLUSTERDOWN), or skip (refused). */
static void check_state(dr_voter_t *v, const char *info, const char *refused, const char *who) {
  if (info == NULL) {
    dr_add(v, "cluster-state", DR_SKIP, "CLUSTER INFO: %s", refused);
    return;
  }
  char state[32] = "", assigned[16] = "?", ok[16] = "?", pfail[16] = "?", fail[16] = "?",
       known[16] = "?", size[16] = "?";
  dr_info_field(info, "cluster_state", state, sizeof state);
  dr_info_field(info, "cluster_slots_assigned", assigned, sizeof assigned);
  dr_info_field(info, "cluster_slots_ok", ok, sizeof ok);
  dr_info_field(info, "cluster_slots_pfail", pfail, sizeof pfail);
  dr_info_field(info, "cluster_slots_fail", fail, sizeof fail);
  dr_info_field(info, "cluster_known_nodes", known, sizeof known);
  dr_info_field(info, "cluster_size", size, sizeof size);
  char figures[256];
  snprintf(figures, sizeof figures,
           "slots assigned %s, ok %s, pfail %s, fail %s; %s known nodes, %s serving slots",
           assigned, ok, pfail, fail, known, size);
  if (strcmp(state, "ok") == 0)
    dr_add(v, "cluster-state", DR_OK, "ok, as %s says (%s)", who, figures);
  else
    dr_add(v, "cluster-state", DR_FAIL,
           "%s, as %s says (%s): the cluster refuses the locks' commands (CLUSTERDOWN)",
           state[0] ? state : "unknown", who, figures);
}

void dr_cluster_check_primary(dr_master_t *m) {
  if (!m->up || m->stop)
    return;
  redisReply *r = dr_command(m, "CLUSTER INFO");
  if (r == NULL)
    return;
  char why[256] = "";
  char *info = r->type == REDIS_REPLY_STRING ? strndup(r->str, r->len) : NULL;
  if (r->type == REDIS_REPLY_ERROR)
    cli_term_escape(r->str, r->len, why, sizeof why);
  else if (info == NULL)
    snprintf(why, sizeof why, "no text");
  freeReplyObject(r);
  check_state(m->v, info, why, "it");
  free(info);
}

/* ---- one master per primary ------------------------------------------------------------ */

/* The doctor's key for primary i: a suffix that puts it in one of its
 * slots.  1, or 0 when none of KEY_TRIES does. */
static int place_key(const cluster_map_t *map, unsigned i, dr_settings_t *set) {
  for (unsigned n = 0; n < KEY_TRIES; n++) {
    char suffix[16];
    snprintf(suffix, sizeof suffix, ":%u", n);
    dr_name_key(set, suffix);
    if (cluster_map_owner(map, keyslot(set->key, strlen(set->key))) == (int)i)
      return 1;
  }
  return 0;
}

/* 0, or -2 when out of memory. */
static int make_primaries(dr_cluster_t *cl, dr_voter_t *v, const node_addr_t *a,
                          const dr_settings_t *set) {
  size_t n = cl->map.n_primaries;
  if (n == 0)
    return 0;
  cl->addrs = calloc(n, sizeof *cl->addrs);
  cl->sets = calloc(n, sizeof *cl->sets);
  cl->masters = calloc(n, sizeof *cl->masters);
  cl->reports = calloc(n, sizeof *cl->reports);
  if (cl->addrs == NULL || cl->sets == NULL || cl->masters == NULL || cl->reports == NULL)
    return -2;
  cl->n = n;
  for (size_t i = 0; i < n; i++) {
    const cluster_primary_t *p = &cl->map.primaries[i];
    node_addr_t *pa = &cl->addrs[i];
    cli_cluster_primary_addr(a, p, pa);
    dr_voter_t *r = &cl->reports[i];
    *r = (dr_voter_t){.addr = pa, .replicas = -1, .rtt_us = -1, .slots_covered = -1};
    cli_host_port(r->address, sizeof r->address, p->host, p->port);
    r->slots = (long)ranges_of(&cl->map, (unsigned)i + 1, r->ranges, sizeof r->ranges);
    dr_add(r, "slots", DR_OK, "%ld slot%s: %s%s%s", r->slots, r->slots == 1 ? "" : "s", r->ranges,
           p->id[0] ? "; node id " : "", p->id);
    cl->sets[i] = *set;
    int placed = place_key(&cl->map, (unsigned)i, &cl->sets[i]);
    if (!placed) {
      dr_name_key(&cl->sets[i], "");
      dr_add(r, "key", DR_SKIP,
             "no doctor's key hashes to this primary's slots (a hash tag in --key-prefix "
             "'%s' puts every key in one slot): the checks that write a key are skipped",
             set->prefix);
    }
    cl->masters[i] = (dr_master_t){.v = r, .set = &cl->sets[i], .addr = pa, .no_key = !placed};
    char why[400];
    if (cli_conn_discovered_ok(pa->host, pa->port, why, sizeof why) != 0) {
      dr_add(r, "connect", DR_FAIL, "%s", why);
      cl->masters[i].stop = 1; /* none of its checks: they would connect */
    }
  }
  v->primaries = cl->reports;
  v->n_primaries = n;
  return 0;
}

void dr_cluster_open(dr_voter_t *v, const node_addr_t *a, const dr_settings_t *set,
                     dr_cluster_t **out) {
  dr_cluster_t *cl = calloc(1, sizeof *cl);
  cli_cluster_answer_t *ans = calloc(1, sizeof *ans);
  *out = NULL;
  if (cl == NULL || ans == NULL) {
    free(cl);
    free(ans);
    dr_add(v, "slot-map", DR_FAIL, "out of memory");
    return;
  }
  cluster_map_init(&cl->map);
  int rc = read_map(v, a, set->timeout_ms, &cl->map, ans);
  if (rc == 0) {
    check_coverage(v, &cl->map, ans);
    check_state(v, ans->info, ans->info_why, ans->seed);
    rc = make_primaries(cl, v, a, set);
  }
  free(ans->info);
  free(ans);
  if (rc == -2) {
    dr_add(v, "slot-map", DR_FAIL, "out of memory");
    v->primaries = NULL;
    v->n_primaries = 0;
    dr_cluster_free(cl);
    return;
  }
  *out = cl;
}

dr_master_t *dr_cluster_masters(dr_cluster_t *cl, size_t *n) {
  *n = cl->n;
  return cl->masters;
}

void dr_cluster_free(dr_cluster_t *cl) {
  if (cl == NULL)
    return;
  cluster_map_clear(&cl->map);
  free(cl->addrs); /* borrowed strings only */
  free(cl->sets);
  free(cl->masters);
  free(cl->reports);
  free(cl);
}
