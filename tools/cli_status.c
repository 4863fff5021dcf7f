/* cli_status.c: `redlock status [OPTIONS] RESOURCE`: per master (for a
 * sentinel voter, the master its sentinels name; for a cluster voter, the
 * primary that owns the key's hash slot), whether it answers, the value
 * holding the key, its PTTL, the fence counter, the master's uptime and the
 * path its releases and extensions take (cli_probe.c), then a verdict
 * (locked on a quorum, set on too few masters, free, unknown), as a table
 * or as one JSON object, and which masters the library keeps in a
 * quarantine now, until when (cli_quar.h).
 * The exit status says whether a quorum of masters answered. */
#define _GNU_SOURCE /* getopt_long */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_probe.h"
#include "cli_quar.h"

/* What the reports add up to; the table and the JSON say the same. */
typedef struct {
  size_t quorum, reachable;
  size_t held;      /* masters where the key is set */
  const char *best; /* the value held on the most masters, NULL when none */
  size_t best_n;    /* on how many */
} verdict_t;

static verdict_t tally(const nodes_t *nodes, const master_report_t *reps) {
  verdict_t v = {.quorum = nodes->n / 2 + 1};
  for (size_t i = 0; i < nodes->n; i++) {
    v.reachable += reps[i].up;
    if (reps[i].value == NULL)
      continue;
    v.held++;
    size_t n = 0;
    for (size_t j = 0; j < nodes->n; j++)
      n += reps[j].value != NULL && strcmp(reps[j].value, reps[i].value) == 0;
    if (n > v.best_n) {
      v.best_n = n;
      v.best = reps[i].value;
    }
  }
  return v;
}

/* A string field's value, or null when empty. */
static void json_str_or_null(const char *s) {
  if (s[0])
    json_str(s);
  else
    printf("null");
}

/* A cluster voter's own fields: the key's slot, the primary that owns it
 * (null when the map has none) and the seed that gave the map. */
static void print_cluster_json(const master_report_t *m) {
  printf(",\"slot\":%d,\"resolved\":", m->slot);
  json_str_or_null(m->master);
  printf(",\"seed\":");
  json_str_or_null(m->seed);
}

/* status --json: the same report as the table, as one JSON object.  The exit
 * status is the table's. */
static int print_status_json(const nodes_t *nodes, const char *key, const master_report_t *reps) {
  verdict_t v = tally(nodes, reps);
  const char *verdict = v.best != NULL && v.best_n >= v.quorum ? "locked"
                        : v.best != NULL                       ? "not_locked_on_quorum"
                        : v.reachable == 0                     ? "unknown"
                                                               : "free";
  char *esc_key = escape_value(key, strlen(key));
  printf("{\"key\":");
  json_str(esc_key ? esc_key : key);
  free(esc_key);
  printf(",\"masters_total\":%zu,\"quorum\":%zu,\"answered\":%zu,\"status\":\"%s\",", nodes->n,
         v.quorum, v.reachable, verdict);
  printf("\"holder\":");
  if (v.best != NULL)
    json_str(v.best);
  else
    printf("null");
  printf(",\"held_on\":%zu,\"set_on\":%zu,\"masters\":[", v.best_n, v.held);
  for (size_t i = 0; i < nodes->n; i++) {
    const master_report_t *m = &reps[i];
    printf("%s{\"master\":", i ? "," : "");
    json_str(nodes->addrs[i].label);
    if (nodes->addrs[i].voter == VOTER_KIND_CLUSTER)
      print_cluster_json(m);
    if (nodes->addrs[i].voter == VOTER_KIND_SENTINEL) {
      /* Which master the sentinels named (null when none did). */
      printf(",\"master_name\":");
      json_str(nodes->addrs[i].master_name);
      printf(",\"resolved\":");
      if (m->master[0])
        json_str(m->master);
      else
        printf("null");
      printf(",\"sentinel\":");
      if (m->sentinel[0])
        json_str(m->sentinel);
      else
        printf("null");
    }
    printf(",\"up\":%s,\"state\":", m->up ? "true" : "false");
    json_str(m->state);
    printf(",\"value\":");
    if (m->value != NULL)
      json_str(m->value);
    else
      printf("null");
    if (m->value != NULL && m->pttl >= 0)
      printf(",\"pttl_ms\":%lld", m->pttl);
    else
      printf(",\"pttl_ms\":null");
    printf(",\"fence\":");
    if (m->fence[0])
      json_str(m->fence);
    else
      printf("null");
    if (m->uptime_s >= 0)
      printf(",\"uptime_s\":%lld", m->uptime_s);
    else
      printf(",\"uptime_s\":null");
    printf(",\"path\":");
    json_str_or_null(m->path);
    printf(",\"quarantine\":");
    if (m->quarantine[0])
      json_str(m->quarantine);
    else
      printf("null");
    printf("}");
  }
  printf("]}\n");
  return v.reachable < v.quorum ? EXIT_NOQUORUM : 0;
}

/* A master's name in the table: its label, and for a sentinel voter
 * ("MASTER-NAME@first sentinel") the master its sentinels named, for a
 * cluster voter ("cluster@first seed") the primary of the key's slot. */
static const char *row_label(const nodes_t *nodes, const master_report_t *reps, size_t i, char *buf,
                             size_t size) {
  if (reps[i].master[0] == '\0')
    return nodes->addrs[i].label;
  snprintf(buf, size, "%s -> %s", nodes->addrs[i].label, reps[i].master);
  return buf;
}

/* The table: one line per master, then the verdict. */
static int print_status_table(const nodes_t *nodes, const char *key, const master_report_t *reps) {
  verdict_t v = tally(nodes, reps);
  int wlabel = (int)strlen("MASTER"), wvalue = (int)strlen("VALUE");
  char lbuf[1024];
  for (size_t i = 0; i < nodes->n; i++) {
    int l = (int)strlen(row_label(nodes, reps, i, lbuf, sizeof lbuf));
    if (l > wlabel)
      wlabel = l;
    if (reps[i].value != NULL && (int)strlen(reps[i].value) > wvalue)
      wvalue = (int)strlen(reps[i].value);
  }
  char *esc_key = escape_value(key, strlen(key));
  printf("key %s", esc_key ? esc_key : key);
  free(esc_key);
  for (size_t i = 0; i < nodes->n; i++)
    if (reps[i].slot >= 0) { /* the same key, so the same slot on every cluster voter */
      printf(" (hash slot %d)", reps[i].slot);
      break;
    }
  printf(", %zu masters, quorum %zu\n", nodes->n, v.quorum);
  printf("%-*s  %-5s  %-*s  %9s  %-20s  %-8s  %s\n", wlabel, "MASTER", "STATE", wvalue, "VALUE",
         "PTTL_MS", "FENCE", "UPTIME", "PATH");
  for (size_t i = 0; i < nodes->n; i++) {
    const master_report_t *m = &reps[i];
    if (!m->up) {
      printf("%-*s  %s\n", wlabel, row_label(nodes, reps, i, lbuf, sizeof lbuf), m->state);
      continue;
    }
    char pttl[32];
    if (m->value == NULL || m->pttl == -2)
      snprintf(pttl, sizeof pttl, "-");
    else if (m->pttl == -1)
      snprintf(pttl, sizeof pttl, "none");
    else
      snprintf(pttl, sizeof pttl, "%lld", m->pttl);
    printf("%-*s  %-5s  %-*s  %9s  %-20s  %-8s  %s\n", wlabel,
           row_label(nodes, reps, i, lbuf, sizeof lbuf), m->state, wvalue,
           m->value ? m->value : "-", pttl, m->fence[0] ? m->fence : "-",
           m->uptime[0] ? m->uptime : "-", m->path[0] ? m->path : "-");
  }
  if (v.best != NULL && v.best_n >= v.quorum)
    printf("locked: held by %s on %zu of %zu masters (quorum %zu)\n", v.best, v.best_n, nodes->n,
           v.quorum);
  else if (v.best != NULL)
    printf("not locked on a quorum: the key is set on %zu of %zu masters (%s on %zu; quorum "
           "%zu)\n",
           v.held, nodes->n, v.best, v.best_n, v.quorum);
  else if (v.reachable == 0)
    printf("unknown: no master answered\n");
  else
    printf("free: none of the %zu masters that answered has the key\n", v.reachable);
  size_t voting = v.reachable;
  char lbuf2[1024];
  for (size_t i = 0; i < nodes->n; i++)
    if (reps[i].up && reps[i].path[0] && reps[i].no_lua)
      printf("%s: no Lua engine (path %s): %s\n", row_label(nodes, reps, i, lbuf2, sizeof lbuf2),
             reps[i].path,
             strcmp(reps[i].path, "none") == 0
                 ? "only plain locks, not released before their TTL"
                 : "no vote there for semaphores, read-write locks and multi-resource locks "
                   "(unsupported)");
  for (size_t i = 0; i < nodes->n; i++)
    if (reps[i].up && reps[i].quarantine[0]) {
      printf("%s: quarantined (%s): its vote does not count until then\n",
             row_label(nodes, reps, i, lbuf2, sizeof lbuf2), reps[i].quarantine);
      voting--;
    }
  if (v.reachable < v.quorum) {
    printf("only %zu of %zu masters answered (quorum %zu)\n", v.reachable, nodes->n, v.quorum);
    return EXIT_NOQUORUM;
  }
  if (voting < v.reachable)
    printf("%zu of %zu masters vote now (quorum %zu)%s\n", voting, nodes->n, v.quorum,
           voting < v.quorum ? ": a lock cannot be taken until a quarantine ends" : "");
  return 0;
}

typedef struct {
  conn_opts_t conn; /* masters, key prefix, TLS */
  const char *resource;
  uint64_t timeout_ms;
  int json;
  int quarantine;      /* --no-quarantine clears it, as for run */
  uint64_t max_ttl_ms; /* --max-ttl; 0: the library's default */
} status_opts_t;

/* status's own options (parse_options' take). */
static int take_status_option(void *ctx, int opt, const char *arg) {
  status_opts_t *o = ctx;
  switch (opt) {
  case OPT_TIMEOUT:
    if (parse_ms(arg, 1, 3600000, &o->timeout_ms) != 0)
      return usage_error("--timeout: expected 1 to 3600000 milliseconds, got '%s'", arg);
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
static int parse_status(int argc, char **argv, status_opts_t *o) {
  static const struct option longs[] = {{"timeout", required_argument, NULL, OPT_TIMEOUT},
                                        {"json", no_argument, NULL, OPT_JSON},
                                        {"no-quarantine", no_argument, NULL, OPT_NO_QUARANTINE},
                                        {"max-ttl", required_argument, NULL, OPT_MAX_TTL},
                                        {NULL, 0, NULL, 0}};
  static const struct option *const tables[] = {longs, NULL};
  const cmd_options_t opts = {.shorts = "", .longs = tables, .take = take_status_option, .ctx = o};
  int rc = parse_options(argc, argv, &o->conn, &opts);
  if (rc != 0)
    return rc;
  if (optind >= argc)
    return usage_error("status: missing RESOURCE");
  if (optind + 1 < argc)
    return usage_error("status: unexpected argument '%s'", argv[optind + 1]);
  o->resource = argv[optind];
  return conn_finish(&o->conn, o->resource);
}

/* Which voters the library keeps in a quarantine now, with these options
 * (a cluster voter's primaries are judged at their first request: not
 * asked). */
static int ask_quarantines(status_opts_t *o, master_report_t *reps) {
  if (!o->quarantine)
    return 0;
  cli_quar_t q;
  int status = cli_quar_init(&q, &o->conn.nodes);
  if (status == 0)
    status = cli_quar_ask(&q, &o->conn, 1, o->max_ttl_ms, o->timeout_ms);
  for (size_t i = 0; status == 0 && i < o->conn.nodes.n; i++)
    if (o->conn.nodes.addrs[i].voter != VOTER_KIND_CLUSTER)
      cli_quar_why(&q, i, reps[i].quarantine, sizeof reps[i].quarantine);
  cli_quar_free(&q);
  return status;
}

/* Probes every master and prints the report.  The exit status. */
static int report(status_opts_t *o) {
  char *key, *fence_key;
  const nodes_t *nodes = &o->conn.nodes;
  master_report_t *reps = calloc(nodes->n, sizeof *reps);
  if (reps == NULL || probe_keys(o->conn.prefix, o->resource, &key, &fence_key) != 0) {
    free(reps);
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  for (size_t i = 0; i < nodes->n; i++)
    probe_master(&nodes->addrs[i], key, fence_key, o->timeout_ms, &reps[i]);
  int status = ask_quarantines(o, reps);
  if (status == 0)
    status = o->json ? print_status_json(nodes, key, reps) : print_status_table(nodes, key, reps);
  for (size_t i = 0; i < nodes->n; i++)
    free(reps[i].value);
  free(reps);
  free(key);
  free(fence_key);
  return status;
}

int cmd_status(int argc, char **argv) {
  status_opts_t o = {.timeout_ms = DEFAULT_STATUS_TIMEOUT_MS, .quarantine = 1};
  int status = parse_status(argc, argv, &o);
  if (status < 0) { /* --help, --version: exit 0 (main checks stdout) */
    nodes_free(&o.conn.nodes);
    return 0;
  }
  if (status == 0)
    status = tls_for_probes_from(&o.conn);
  if (status == 0)
    status = report(&o);
  tls_for_probes_free();
  nodes_free(&o.conn.nodes);
  return status;
}
