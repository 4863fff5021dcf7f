/* cli_doctor.c: `redlock doctor [OPTIONS] URI...`: its options, the voters
 * (a sentinel voter's master asked of its sentinels in turn; a cluster
 * voter's primaries read from its slot map, cli_doctor_cluster.c), the
 * checks of each master (cli_doctor_checks.c) with one clock interval for
 * all of them, and the report (cli_doctor_report.c).
 * Exit 0 when every voter can vote, 1 when one cannot, 2 when every voter
 * can but some only once the quarantine the library keeps them in ends
 * (cli_quar.h), 64 on bad usage. */
#define _GNU_SOURCE /* getopt_long */

#include "cli_doctor.h"
#include "cli_quar.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  conn_opts_t conn; /* voters, key prefix, TLS */
  uint64_t timeout_ms;
  uint64_t clock_ms;
  int json;
  int quarantine;      /* --no-quarantine clears it, as for run */
  uint64_t max_ttl_ms; /* --max-ttl; 0: the library's default */
} doctor_opts_t;

/* doctor's own options (parse_options' take). */
static int take_doctor_option(void *ctx, int opt, const char *arg) {
  doctor_opts_t *o = ctx;
  switch (opt) {
  case OPT_TIMEOUT:
    if (parse_ms(arg, 1, 3600000, &o->timeout_ms) != 0)
      return usage_error("--timeout: expected 1 to 3600000 milliseconds, got '%s'", arg);
    return 0;
  case OPT_CLOCK_MS:
    if (parse_ms(arg, 0, DR_MAX_CLOCK_MS, &o->clock_ms) != 0)
      return usage_error("--clock-ms: expected 0 to %u milliseconds, got '%s'", DR_MAX_CLOCK_MS,
                         arg);
    return 0;
  case OPT_JSON:
    o->json = 1;
    return 0;
  case OPT_NO_QUARANTINE:
    o->quarantine = 0;
    return 0;
  case OPT_MAX_TTL:
    if (parse_ms(arg, 1, INT32_MAX, &o->max_ttl_ms) != 0)
      return usage_error("--max-ttl: expected 1 to %d milliseconds, got '%s'", INT32_MAX, arg);
    return 0;
  default:
    return OPT_NOT_MINE;
  }
}

/* 0, an exit status, or -1 after --help / --version. */
static int parse_doctor(int argc, char **argv, doctor_opts_t *o) {
  static const struct option longs[] = {{"timeout", required_argument, NULL, OPT_TIMEOUT},
                                        {"clock-ms", required_argument, NULL, OPT_CLOCK_MS},
                                        {"json", no_argument, NULL, OPT_JSON},
                                        {"no-quarantine", no_argument, NULL, OPT_NO_QUARANTINE},
                                        {"max-ttl", required_argument, NULL, OPT_MAX_TTL},
                                        {NULL, 0, NULL, 0}};
  static const struct option *const tables[] = {longs, NULL};
  const cmd_options_t opts = {
      .shorts = "", .longs = tables, .take = take_doctor_option, .ctx = o, .count_verbose = 1};
  int rc = parse_options(argc, argv, &o->conn, &opts);
  if (rc != 0)
    return rc;
  for (int i = optind; i < argc; i++) {
    if (argv[i][0] == '-')
      return usage_error("doctor: options go before the URIs ('%s')", argv[i]);
    if ((rc = nodes_add(&o->conn.nodes, argv[i], "URI")) != 0)
      return rc;
  }
  if (o->conn.prefix != NULL && strlen(o->conn.prefix) > REDLOCK_MAX_PREFIX_LEN)
    return usage_error("--key-prefix must be at most %d bytes", REDLOCK_MAX_PREFIX_LEN);
  const char *env = getenv("REDLOCK_NODES");
  if (o->conn.nodes.n == 0 && (env == NULL || strspn(env, " \t,") == strlen(env)))
    return usage_error("doctor: no voters: give their URIs (or --node, or REDLOCK_NODES)");
  return nodes_finish(&o->conn.nodes);
}

/* A sentinel voter: its master, asked of its sentinels in turn
 * (cli_conn_ask_sentinels).  0 with an ok check, or -1 with a FAIL check. */
static int ask_sentinels(dr_voter_t *v, const node_addr_t *a, uint64_t timeout_ms,
                         cli_sentinel_master_t *found) {
  char why[DR_DETAIL_MAX];
  if (cli_conn_ask_sentinels(a, timeout_ms, found, why, sizeof why) != 0) {
    dr_add(v, "sentinel", DR_FAIL, "%s", why);
    return -1;
  }
  dr_add(v, "sentinel", DR_OK, "%s names %s as the master of '%s'%s%s%s", found->sentinel,
         found->addr, a->master_name, found->tried[0] ? " (before it: " : "", found->tried,
         found->tried[0] ? ")" : "");
  return 0;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleeps until the monotonic clock reads deadline_ns. */
static void sleep_until(uint64_t deadline_ns) {
  for (uint64_t now = mono_ns(); now < deadline_ns; now = mono_ns()) {
    uint64_t left = deadline_ns - now;
    struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
    if (nanosleep(&ts, NULL) != 0 && errno != EINTR)
      return;
  }
}

/* Runs a master's checks, and moves *last_t0 to its clock's first sample
 * when that is later. */
static void check_master(dr_master_t *m, uint64_t *last_t0) {
  dr_master_check(m);
  if (m->up && m->has_t0 && m->t0_ns > *last_t0)
    *last_t0 = m->t0_ns;
}

/* "counts in 41 s, at 16:59:02" (local time): when a quarantine of left_ms
 * ends, for the person who waits for it. */
static void counts_when(uint64_t left_ms, char *buf, size_t size) {
  uint64_t secs = (left_ms + 999) / 1000;
  time_t at = time(NULL) + (time_t)secs;
  struct tm tm;
  char hms[16] = "?";
  if (localtime_r(&at, &tm) != NULL)
    strftime(hms, sizeof hms, "%H:%M:%S", &tm);
  snprintf(buf, size, "counts in %llu s, at %s", (unsigned long long)secs, hms);
}

/* The "quarantine" check of every voter that passed the others: whether the
 * library, with these options, counts its vote now (cli_quar.h: a client
 * of its own asks).  A cluster voter's primaries are judged one by one at
 * their first request, which the question does not make. */
static int check_quarantines(doctor_opts_t *o, dr_voter_t *voters) {
  const nodes_t *nodes = &o->conn.nodes;
  cli_quar_t q;
  int status = cli_quar_init(&q, nodes);
  if (status == 0 && o->quarantine)
    status = cli_quar_ask(&q, &o->conn, 1, o->max_ttl_ms, o->timeout_ms);
  for (size_t i = 0; status == 0 && i < nodes->n; i++) {
    dr_voter_t *v = &voters[i];
    if (!dr_can_vote(v))
      continue;
    char why[sizeof v->quarantine];
    if (!o->quarantine)
      dr_add(v, "quarantine", DR_SKIP,
             "off (--no-quarantine): restarts and failovers are not "
             "waited out");
    else if (nodes->addrs[i].voter == VOTER_KIND_CLUSTER)
      dr_add(v, "quarantine", DR_SKIP, "judged per primary at its first request (not asked here)");
    else if (cli_quar_why(&q, i, why, sizeof why)) {
      snprintf(v->quarantine, sizeof v->quarantine, "%s", why);
      char when[64];
      counts_when(cli_quar_left_ms(&q, i), when, sizeof when);
      dr_add(v, "quarantine", DR_WARN,
             "%s: %s; the library does not count its vote until then, as run would not "
             "(max TTL %llu ms; see --max-ttl, --no-quarantine)",
             why, when,
             (unsigned long long)(o->max_ttl_ms ? o->max_ttl_ms : LIBRARY_DEFAULT_MAX_TTL_MS));
    } else
      dr_add(v, "quarantine", DR_OK, "none: its vote counts now");
  }
  cli_quar_free(&q);
  return status;
}

/* Checks every voter and prints the report.  The exit status. */
static int diagnose(doctor_opts_t *o) {
  const nodes_t *nodes = &o->conn.nodes;
  dr_settings_t *set = calloc(1, sizeof *set);
  dr_voter_t *voters = calloc(nodes->n, sizeof *voters);
  dr_master_t *masters = calloc(nodes->n, sizeof *masters);
  cli_sentinel_master_t *resolved = calloc(nodes->n, sizeof *resolved);
  dr_cluster_t **clusters = calloc(nodes->n, sizeof *clusters);
  if (set == NULL || voters == NULL || masters == NULL || resolved == NULL || clusters == NULL) {
    free(set);
    free(voters);
    free(masters);
    free(resolved);
    free(clusters);
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  set->prefix = o->conn.prefix != NULL ? o->conn.prefix : "";
  set->timeout_ms = o->timeout_ms;
  set->clock_ms = o->clock_ms;
  dr_make_names(set);
  /* First every voter's checks, leaving each connection open after the
   * clock's first sample... */
  uint64_t last_t0 = 0;
  for (size_t i = 0; i < nodes->n; i++) {
    dr_voter_t *v = &voters[i];
    dr_master_t *m = &masters[i];
    const node_addr_t *a = &nodes->addrs[i];
    *v = (dr_voter_t){.addr = a, .replicas = -1, .rtt_us = -1, .slots_covered = -1, .slots = -1};
    *m = (dr_master_t){.v = v, .set = set};
    if (a->voter == VOTER_KIND_CLUSTER) {
      info_msg("checking %s", a->label);
      dr_cluster_open(v, a, set, &clusters[i]);
      size_t n_primaries = 0;
      dr_master_t *pm = clusters[i] != NULL ? dr_cluster_masters(clusters[i], &n_primaries) : NULL;
      for (size_t k = 0; k < n_primaries; k++) {
        info_msg("checking %s: primary %s", a->label, pm[k].v->address);
        check_master(&pm[k], &last_t0);
        dr_cluster_check_primary(&pm[k]);
      }
      continue;
    }
    if (a->voter == VOTER_KIND_SENTINEL) {
      if (ask_sentinels(v, a, o->timeout_ms, &resolved[i]) != 0)
        continue;
      m->addr = &resolved[i].master;
    } else {
      m->addr = a;
    }
    info_msg("checking %s", a->label);
    check_master(m, &last_t0);
  }
  /* ...then one interval for all of them, and the second samples. */
  if (last_t0 != 0) {
    info_msg("measuring the clocks' rates for %llu ms", (unsigned long long)o->clock_ms);
    sleep_until(last_t0 + o->clock_ms * 1000000u);
  }
  for (size_t i = 0; i < nodes->n; i++) {
    if (masters[i].addr != NULL)
      dr_master_finish(&masters[i]);
    size_t n_primaries = 0;
    dr_master_t *pm = clusters[i] != NULL ? dr_cluster_masters(clusters[i], &n_primaries) : NULL;
    for (size_t k = 0; k < n_primaries; k++)
      dr_master_finish(&pm[k]);
  }
  int status = check_quarantines(o, voters);
  if (status == 0)
    status = o->json ? dr_print_json(voters, nodes->n) : dr_print_table(voters, nodes->n);
  for (size_t i = 0; i < nodes->n; i++)
    dr_cluster_free(clusters[i]);
  free(clusters);
  free(set);
  free(voters);
  free(masters);
  free(resolved); /* borrowed strings only: nothing to clear */
  return status;
}

int cmd_doctor(int argc, char **argv) {
  doctor_opts_t o = {
      .timeout_ms = DEFAULT_STATUS_TIMEOUT_MS, .clock_ms = DR_DEFAULT_CLOCK_MS, .quarantine = 1};
  int status = parse_doctor(argc, argv, &o);
  if (status < 0) { /* --help, --version: exit 0 (main checks stdout) */
    nodes_free(&o.conn.nodes);
    return 0;
  }
  if (status == 0)
    status = tls_for_probes_from(&o.conn);
  if (status == 0)
    status = diagnose(&o);
  tls_for_probes_free();
  nodes_free(&o.conn.nodes);
  return status;
}
