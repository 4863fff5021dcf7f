/* cli_status.c: `redlock status [OPTIONS] RESOURCE`: per master (for a
 * sentinel voter, the master its sentinels name; for a cluster voter, the
 * primary that owns the key's hash slot), whether it answers, the value
 * holding the key, its PTTL, the fence counter, the master's uptime and the
 * path its releases and extensions take (cli_probe.c), then a verdict
 * (locked on a quorum, set on too few masters, free, unknown), as a table
 * or as one JSON object, and which masters the library keeps in a
 * quarantine now, until when (cli_quar.h); then the library's view of the
 * resource (redlock_inspect, cli_admin.h: its holders' owner labels, their
 * TTL range, the fence counter, whether a quorum agrees), of the kind
 * --kind names (a lock by default).
 * The exit status says whether a quorum of masters answered. */
#define _GNU_SOURCE /* getopt_long */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_admin.h"
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
static int print_status_json(const nodes_t *nodes, const char *key, const master_report_t *reps,
                             const char *view) {
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
  /* The library's view, as redlock_inspect wrote it (null when it could not
   * be read). */
  printf("],\"inspect\":%s}\n", view != NULL ? view : "null");
  return v.reachable < v.quorum ? EXIT_NOQUORUM : 0;
}

/* ---- the library's view (redlock_inspect's JSON, read back for the table) ------ */

/* Where the value of the first field `name` starts in the view (the top
 * level's fields come before its arrays), or NULL. */
static const char *view_field(const char *view, const char *name) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", name);
  const char *at = strstr(view, pat);
  return at != NULL ? at + strlen(pat) : NULL;
}

/* A field's value as the view spells it: a number, true, false, null, or a
 * string's contents (escapes kept: the view escapes every byte a terminal
 * could act on).  "?" when absent. */
static const char *view_text(const char *at, char *buf, size_t size) {
  if (at == NULL)
    return "?";
  size_t n = 0;
  if (*at == '"') {
    for (at++; *at != '\0' && *at != '"' && n + 2 < size; at++) {
      if (*at == '\\' && at[1] != '\0')
        buf[n++] = *at++;
      buf[n++] = *at;
    }
  } else {
    while (*at != '\0' && *at != ',' && *at != '}' && *at != ']' && n + 1 < size)
      buf[n++] = *at++;
  }
  buf[n] = '\0';
  return buf;
}

static const char *view_get(const char *view, const char *name, char *buf, size_t size) {
  return view_text(view_field(view, name), buf, size);
}

/* The holders of a semaphore or read-write lock, one line each. */
static void print_holders(const char *view, int kind) {
  const char *h = view_field(view, "holders");
  const char *end = h != NULL ? strstr(h, "],\"masters\"") : NULL;
  while (h != NULL && (h = strstr(h, "{\"value\":")) != NULL && (end == NULL || h < end)) {
    char value[256], owner[128], lo[32], hi[32], tag[32];
    printf("  %s %s: %s, owner %s, ttl %s..%s ms\n",
           kind == REDLOCK_INSPECT_SEMAPHORE ? "slot" : "hold",
           view_get(h, kind == REDLOCK_INSPECT_SEMAPHORE ? "slot" : "mode", tag, sizeof tag),
           view_get(h, "value", value, sizeof value), view_get(h, "owner", owner, sizeof owner),
           view_get(h, "ttl_ms_min", lo, sizeof lo), view_get(h, "ttl_ms_max", hi, sizeof hi));
    h++;
  }
}

/* The view's summary under the table: whether a quorum holds the resource
 * and agrees, the holder's owner label (its value is in the table already),
 * the TTL range and the fence counter. */
static void print_view(const char *view, int kind) {
  if (view == NULL) {
    printf("view: unavailable (redlock_inspect failed)\n");
    return;
  }
  char held[8], agreed[8], owner[128], lo[32], hi[32], fence[32], count[16];
  int is_held = strcmp(view_get(view, "held", held, sizeof held), "true") == 0;
  int is_agreed = strcmp(view_get(view, "agreed", agreed, sizeof agreed), "true") == 0;
  printf("view: %s, %s", is_held ? "held by a quorum" : "not held by a quorum",
         is_agreed ? "every master that answered agrees" : "the masters disagree");
  if (is_held && kind != REDLOCK_INSPECT_SEMAPHORE && kind != REDLOCK_INSPECT_RWLOCK)
    printf("; owner %s", view_get(view, "owner", owner, sizeof owner));
  if (is_held)
    printf("; ttl %s..%s ms", view_get(view, "ttl_ms_min", lo, sizeof lo),
           view_get(view, "ttl_ms_max", hi, sizeof hi));
  printf("; %s %s", kind == REDLOCK_INSPECT_ELECTION ? "term" : "fence",
         view_get(view, "fence", fence, sizeof fence));
  if (kind == REDLOCK_INSPECT_SEMAPHORE || kind == REDLOCK_INSPECT_RWLOCK) {
    printf("; %s holders\n", view_get(view, "count", count, sizeof count));
    print_holders(view, kind);
    return;
  }
  printf("\n");
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
static int print_status_table(const nodes_t *nodes, const char *key, const master_report_t *reps,
                              const char *view, int kind) {
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
  print_view(view, kind);
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
  int kind; /* --kind: REDLOCK_INSPECT_* */
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
  case OPT_KIND:
    if ((o->kind = admin_kind(arg)) == 0)
      return usage_error("--kind: expected lock, semaphore, rwlock or election, got '%s'", arg);
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
                                        {"kind", required_argument, NULL, OPT_KIND},
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

/* The library's view of the resource (NULL, said, when the client cannot
 * read it: the probes' report stands).  0 or an exit status. */
static int read_view(status_opts_t *o, char **view) {
  redlock_t *client = NULL;
  int status = admin_open(&o->conn, o->timeout_ms, &client);
  if (status == 0) {
    int rc = admin_inspect(client, o->resource, o->kind, view);
    if (rc != 0)
      err_msg("inspect %s: %s", o->resource, redlock_strerror(rc));
  }
  redlock_close(client);
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
  char *view = NULL;
  if (status == 0)
    status = read_view(o, &view);
  if (status == 0)
    status = o->json ? print_status_json(nodes, key, reps, view)
                     : print_status_table(nodes, key, reps, view, o->kind);
  free(view);
  for (size_t i = 0; i < nodes->n; i++)
    free(reps[i].value);
  free(reps);
  free(key);
  free(fence_key);
  return status;
}

int cmd_status(int argc, char **argv) {
  status_opts_t o = {
      .timeout_ms = DEFAULT_STATUS_TIMEOUT_MS, .kind = REDLOCK_INSPECT_LOCK, .quarantine = 1};
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
