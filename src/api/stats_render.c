/* stats_render.c: the text of redlock_stats(), Prometheus text exposition
 * or JSON, read from the figures stats.c collects.  The metric table below
 * is the one list of metric names: both renderings walk it, and
 * docs/observability.md describes it (a test checks that every name printed
 * is documented).  Reading runs on any thread with relaxed loads (stats.h). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "api/stats.h"
#include "util/strutil.h"

/* The text of each histogram bucket bound (stats.c keeps the bounds). */
static const char *const bound_text[STATS_N_BOUNDS] = {
    "0.000025", "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
    "0.005",    "0.01",    "0.025",  "0.05",    "0.1",    "0.25",  "0.5",
    "1",        "2.5",     "5",      "10",      "30",     "60"};

#define N_BOUNDS STATS_N_BOUNDS
#define N_WHY STATS_N_WHY

static const char *const mstate_names[] = {"connecting", "up", "quarantined", "down"};
#define N_MSTATES 4

typedef stats_master_t master_stats_t;
typedef stats_hist_t hist_t;
#define get stats_get

/* ---- the metric table ---------------------------------------------------------------
 * One row per metric family.  The JSON key is the name without "redlock_"
 * (client-wide) or "redlock_master_" (inside each entry of "masters"). */

typedef enum { MT_COUNTER, MT_GAUGE, MT_HISTOGRAM } mtype_t;
static const char *const mtype_names[] = {"counter", "gauge", "histogram"};

typedef enum {
  SH_INFO,       /* {version} 1 */
  SH_SCALAR,     /* stats-wide, no labels */
  SH_OP_OUTCOME, /* {op, outcome} */
  SH_OP_HIST,    /* histogram by {op} */
  SH_M_SCALAR,   /* {master} */
  SH_M_STATE,    /* {master, state}: 1 for the current state, 0 for the others */
  SH_M_VERDICT,  /* {master, verdict} */
  SH_M_HIST,     /* histogram by {master} */
  SH_P_SCALAR,   /* {master, primary}: a cluster voter's primaries */
  SH_P_HIST,     /* histogram by {master, primary} */
} mshape_t;

typedef enum {
  V_NONE = 0,
  V_LOCKS_LOST,
  V_WAKEUPS,
  V_HELD,
  V_WATCHED,
  V_WAITERS,
  V_ROUNDS,
  V_QUORUM,
  V_MASTERS,
  V_MASTERS_USABLE,
  V_M_REQUESTS,
  V_M_INFLIGHT,
  V_M_QUEUED,
  V_M_QUEUED_BYTES,
  V_M_RELEASES_KEPT,
  V_M_RELEASES_ABANDONED,
  V_M_RECONNECTS,
  V_M_CONNECT_FAILURES,
  V_M_DISCONNECTS,
  V_M_TLS_FAILURES,
  V_M_QUARANTINE_MS,
  V_P_REQUESTS,
  V_P_INFLIGHT,
} value_t;

typedef struct {
  const char *name;
  mtype_t type;
  mshape_t shape;
  value_t value;
  int millis; /* the value is in ms, printed in seconds */
  const char *help;
} metric_t;

#define PREFIX "redlock_"
#define MASTER_PREFIX "redlock_master_"
#define PRIMARY_PREFIX "redlock_primary_"

static const metric_t metrics[] = {
    {"redlock_build_info", MT_GAUGE, SH_INFO, V_NONE, 0, "Library version (value 1)."},
    {"redlock_operations_total", MT_COUNTER, SH_OP_OUTCOME, V_NONE, 0,
     "Finished operations by kind and outcome."},
    {"redlock_operation_duration_seconds", MT_HISTOGRAM, SH_OP_HIST, V_NONE, 0,
     "Time from an operation's first round to its outcome."},
    {"redlock_locks_lost_total", MT_COUNTER, SH_SCALAR, V_LOCKS_LOST, 0,
     "Held locks found lost (validity ran out, or a quorum no longer had them)."},
    {"redlock_wait_wakeups_total", MT_COUNTER, SH_SCALAR, V_WAKEUPS, 0,
     "Waiting calls woken by an announced release (the others retry on their timer)."},
    {"redlock_held_locks", MT_GAUGE, SH_SCALAR, V_HELD, 0,
     "Locks held by this client (acquired, not yet released)."},
    {"redlock_watched_locks", MT_GAUGE, SH_SCALAR, V_WATCHED, 0,
     "Held locks kept alive by redlock_watch."},
    {"redlock_waiters", MT_GAUGE, SH_SCALAR, V_WAITERS, 0, "lock_wait calls in progress."},
    {"redlock_rounds_in_flight", MT_GAUGE, SH_SCALAR, V_ROUNDS, 0,
     "Quorum rounds sent and not yet decided."},
    {"redlock_quorum", MT_GAUGE, SH_SCALAR, V_QUORUM, 0,
     "Masters that must agree for a lock (N/2 + 1)."},
    {"redlock_masters", MT_GAUGE, SH_SCALAR, V_MASTERS, 0, "Masters configured (N)."},
    {"redlock_masters_usable", MT_GAUGE, SH_SCALAR, V_MASTERS_USABLE, 0,
     "Masters connected and out of restart quarantine: whose votes count now."},
    {"redlock_master_state", MT_GAUGE, SH_M_STATE, V_NONE, 0,
     "1 for the master's current state (connecting, up, quarantined, down), 0 for the others."},
    {"redlock_master_votes_total", MT_COUNTER, SH_M_VERDICT, V_NONE, 0,
     "Votes of the master by verdict (as in redlock_last_votes)."},
    {"redlock_master_request_duration_seconds", MT_HISTOGRAM, SH_M_HIST, V_NONE, 0,
     "Time from writing a request to the master to its reply."},
    {"redlock_master_requests_total", MT_COUNTER, SH_M_SCALAR, V_M_REQUESTS, 0,
     "Requests written to the master."},
    {"redlock_master_requests_in_flight", MT_GAUGE, SH_M_SCALAR, V_M_INFLIGHT, 0,
     "Requests written to the master and not yet answered."},
    {"redlock_master_queued_requests", MT_GAUGE, SH_M_SCALAR, V_M_QUEUED, 0,
     "Requests in the master's queue: in flight or waiting to be written (bounded)."},
    {"redlock_master_queued_bytes", MT_GAUGE, SH_M_SCALAR, V_M_QUEUED_BYTES, 0,
     "Bytes of the commands in the master's queue (bounded)."},
    {"redlock_master_releases_kept", MT_GAUGE, SH_M_SCALAR, V_M_RELEASES_KEPT, 0,
     "Releases kept for the master (down, hung or queue full when sent), to send later."},
    {"redlock_master_releases_abandoned_total", MT_COUNTER, SH_M_SCALAR, V_M_RELEASES_ABANDONED, 0,
     "Releases the master never got: dropped past the bound, or given up at close (keys expire "
     "at their TTL)."},
    {"redlock_master_reconnects_total", MT_COUNTER, SH_M_SCALAR, V_M_RECONNECTS, 0,
     "Connections to the master established after the first one."},
    {"redlock_master_connect_failures_total", MT_COUNTER, SH_M_SCALAR, V_M_CONNECT_FAILURES, 0,
     "Connection attempts that failed (refused, timed out, lookup or handshake error)."},
    {"redlock_master_disconnects_total", MT_COUNTER, SH_M_SCALAR, V_M_DISCONNECTS, 0,
     "Established connections that were lost or dropped (hung master)."},
    {"redlock_master_tls_handshake_failures_total", MT_COUNTER, SH_M_SCALAR, V_M_TLS_FAILURES, 0,
     "TLS handshakes with the master that failed."},
    {"redlock_master_quarantine_remaining_seconds", MT_GAUGE, SH_M_SCALAR, V_M_QUARANTINE_MS, 1,
     "Time until the master's restart quarantine ends (0 when not quarantined)."},
    {"redlock_primary_requests_total", MT_COUNTER, SH_P_SCALAR, V_P_REQUESTS, 0,
     "Requests written to a primary of a cluster voter (also counted in the voter's "
     "redlock_master_requests_total)."},
    {"redlock_primary_requests_in_flight", MT_GAUGE, SH_P_SCALAR, V_P_INFLIGHT, 0,
     "Requests written to a primary of a cluster voter and not yet answered."},
    {"redlock_primary_request_duration_seconds", MT_HISTOGRAM, SH_P_HIST, V_NONE, 0,
     "Time from writing a request to a primary of a cluster voter to its reply."},
};
#define N_METRICS (sizeof metrics / sizeof metrics[0])

static const char *const outcome_names[STATS_OUTCOME_COUNT] = {
#define STATS__OUTCOME_NAME(name, label) label,
    STATS_OUTCOME_MAP(STATS__OUTCOME_NAME)
#undef STATS__OUTCOME_NAME
};

/* Written and not yet answered.  done is read first: a request answered
 * between the two loads can only make the difference larger, never
 * negative. */
static int64_t in_flight(const _Atomic uint64_t *sent, const _Atomic uint64_t *done) {
  uint64_t d = get(done);
  uint64_t s = get(sent);
  return s > d ? (int64_t)(s - d) : 0;
}

static int is_primary_shape(mshape_t shape) { return shape >= SH_P_SCALAR; }
static int is_master_shape(mshape_t shape) {
  return shape >= SH_M_SCALAR && !is_primary_shape(shape);
}

/* Entry p of master i's primaries, once named (NULL: none, or not yet). */
static const stats_primary_t *primary_at(const struct stats *stats, unsigned i, unsigned p) {
  const stats_primary_t *e = stats->masters[i].primaries;
  if (e == NULL || !atomic_load_explicit((_Atomic int *)&e[p].used, memory_order_acquire))
    return NULL;
  return &e[p];
}

static int64_t primary_scalar(const stats_primary_t *e, value_t v) {
  return v == V_P_REQUESTS ? (int64_t)get(&e->sent) : in_flight(&e->sent, &e->done);
}

/* ---- reading ------------------------------------------------------------------------ */

static stats_mstate_t master_state(const master_stats_t *m, uint64_t now) {
  stats_mstate_t state =
      (stats_mstate_t)atomic_load_explicit((_Atomic int *)&m->state, memory_order_relaxed);
  if (state == STATS_MSTATE_UP && now < get(&m->quarantine_until_ns))
    return STATS_MSTATE_QUARANTINED;
  return state;
}

static int64_t gauge(const struct stats *stats, stats_gauge_t g) {
  return atomic_load_explicit((_Atomic int64_t *)&stats->gauges[g], memory_order_relaxed);
}

static int64_t scalar(const struct stats *stats, value_t v, unsigned i, uint64_t now) {
  const master_stats_t *m = &stats->masters[i < stats->n_masters ? i : 0];
  switch (v) {
  case V_LOCKS_LOST:
    return (int64_t)get(&stats->locks_lost);
  case V_WAKEUPS:
    return (int64_t)get(&stats->wakeups);
  case V_HELD:
    return gauge(stats, STATS_GAUGE_HELD);
  case V_WATCHED:
    return gauge(stats, STATS_GAUGE_WATCHED);
  case V_WAITERS:
    return gauge(stats, STATS_GAUGE_WAITERS);
  case V_ROUNDS:
    return gauge(stats, STATS_GAUGE_ROUNDS);
  case V_QUORUM:
    return stats->env->quorum;
  case V_MASTERS:
    return stats->env->n_masters;
  case V_MASTERS_USABLE: {
    int64_t n = 0;
    for (unsigned k = 0; k < stats->n_masters; k++)
      n += master_state(&stats->masters[k], now) == STATS_MSTATE_UP;
    return n;
  }
  case V_M_REQUESTS:
    return (int64_t)get(&m->sent);
  case V_M_INFLIGHT:
    return in_flight(&m->sent, &m->done);
  case V_M_QUEUED:
    return (int64_t)get(&m->queued);
  case V_M_QUEUED_BYTES:
    return (int64_t)get(&m->queued_bytes);
  case V_M_RELEASES_KEPT:
    return (int64_t)get(&m->releases_kept);
  case V_M_RELEASES_ABANDONED:
    return (int64_t)get(&m->releases_abandoned);
  case V_M_RECONNECTS:
    return (int64_t)get(&m->reconnects);
  case V_M_CONNECT_FAILURES:
    return (int64_t)get(&m->connect_failures);
  case V_M_DISCONNECTS:
    return (int64_t)get(&m->disconnects);
  case V_M_TLS_FAILURES:
    return (int64_t)get(&m->tls_failures);
  case V_M_QUARANTINE_MS: {
    uint64_t until = get(&m->quarantine_until_ns);
    if (master_state(m, now) != STATS_MSTATE_QUARANTINED || until <= now)
      return 0;
    return (int64_t)((until - now + 999999u) / 1000000u);
  }
  case V_P_REQUESTS: /* primary_scalar */
  case V_P_INFLIGHT:
  case V_NONE:
    break;
  }
  return 0;
}

/* ---- output ---------------------------------------------------------------------------
 * snprintf semantics: everything is measured, what fits is written. */

typedef struct {
  char *buf;
  size_t size;
  size_t len;
  int json;
} out_t;

static void out_write(out_t *o, const char *s, size_t n) {
  str_measured_put(o->buf, o->size, &o->len, s, n);
}

static void out_puts(out_t *o, const char *s) { out_write(o, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void out_printf(out_t *o, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0)
    out_write(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t left) {
  size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
  if (n == 0 || s[0] >= 0xf8 || n > left)
    return 0;
  for (size_t k = 1; k < n; k++)
    if ((s[k] & 0xc0) != 0x80)
      return 0;
  return n;
}

/* A label value (Prometheus: \\ \" \n escaped) or a JSON string's contents;
 * bytes that are not UTF-8 become '?' (both formats require UTF-8). */
static void out_escaped(out_t *o, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t left = strlen(s);
  while (left > 0) {
    unsigned char c = *p;
    if (c >= 0x80) {
      size_t n = utf8_seq(p, left);
      if (n == 0) {
        out_write(o, "?", 1);
        n = 1;
      } else {
        out_write(o, (const char *)p, n);
      }
      p += n;
      left -= n;
      continue;
    }
    if (c == '\\')
      out_write(o, "\\\\", 2);
    else if (c == '"')
      out_write(o, "\\\"", 2);
    else if (c == '\n')
      out_write(o, "\\n", 2);
    else if (c < 0x20 && o->json)
      out_printf(o, "\\u%04x", c);
    else
      out_write(o, (const char *)p, 1);
    p++;
    left--;
  }
}

static void out_value(out_t *o, const metric_t *m, int64_t v) {
  if (m->millis)
    out_printf(o, "%lld.%03lld", (long long)(v / 1000), (long long)(v % 1000));
  else
    out_printf(o, "%lld", (long long)v);
}

static void out_seconds(out_t *o, uint64_t ns) {
  out_printf(o, "%llu.%09llu", (unsigned long long)(ns / 1000000000u),
             (unsigned long long)(ns % 1000000000u));
}

/* ---- Prometheus text exposition ---------------------------------------------------- */

/* `name{master="..",k="v"` (the brace left open when labels follow). */
static void prom_series(out_t *o, const char *name, const char *suffix, const struct stats *stats,
                        int master, const char *k1, const char *v1, const char *k2,
                        const char *v2) {
  out_puts(o, name);
  out_puts(o, suffix);
  int any = 0;
  if (master >= 0 || k1 != NULL) {
    out_write(o, "{", 1);
    if (master >= 0) {
      out_puts(o, "master=\"");
      out_escaped(o, stats_label(stats, (unsigned)master));
      out_write(o, "\"", 1);
      any = 1;
    }
    const char *keys[2] = {k1, k2}, *vals[2] = {v1, v2};
    for (int k = 0; k < 2; k++) {
      if (keys[k] == NULL)
        continue;
      if (any)
        out_write(o, ",", 1);
      out_puts(o, keys[k]);
      out_puts(o, "=\"");
      out_escaped(o, vals[k]);
      out_write(o, "\"", 1);
      any = 1;
    }
    out_write(o, "}", 1);
  }
  out_write(o, " ", 1);
}

static void prom_hist(out_t *o, const char *name, const struct stats *stats, int master,
                      const char *k, const char *v, const hist_t *h) {
  uint64_t cumulative = 0;
  for (unsigned b = 0; b <= N_BOUNDS; b++) {
    cumulative += get(&h->bucket[b]);
    prom_series(o, name, "_bucket", stats, master, k, v, "le",
                b < N_BOUNDS ? bound_text[b] : "+Inf");
    out_printf(o, "%llu\n", (unsigned long long)cumulative);
  }
  prom_series(o, name, "_sum", stats, master, k, v, NULL, NULL);
  out_seconds(o, get(&h->sum_ns));
  out_write(o, "\n", 1);
  prom_series(o, name, "_count", stats, master, k, v, NULL, NULL);
  out_printf(o, "%llu\n", (unsigned long long)cumulative);
}

/* A per-primary metric: a series per named primary of every cluster voter. */
static void prom_primaries(out_t *o, const struct stats *stats, const metric_t *m) {
  for (unsigned i = 0; i < stats->n_masters; i++)
    for (unsigned p = 0; p < STATS_MAX_PRIMARIES; p++) {
      const stats_primary_t *e = primary_at(stats, i, p);
      if (e == NULL)
        continue;
      if (m->shape == SH_P_HIST) {
        prom_hist(o, m->name, stats, (int)i, "primary", e->label, &e->latency);
      } else {
        prom_series(o, m->name, "", stats, (int)i, "primary", e->label, NULL, NULL);
        out_value(o, m, primary_scalar(e, m->value));
        out_write(o, "\n", 1);
      }
    }
}

static void prom_metric(out_t *o, const struct stats *stats, const metric_t *m, uint64_t now) {
  out_printf(o, "# HELP %s ", m->name);
  out_puts(o, m->help);
  out_printf(o, "\n# TYPE %s %s\n", m->name, mtype_names[m->type]);
  if (is_primary_shape(m->shape)) {
    prom_primaries(o, stats, m);
    return;
  }
  unsigned n_rows = is_master_shape(m->shape) ? stats->n_masters : 1;
  for (unsigned i = 0; i < n_rows; i++) {
    int master = is_master_shape(m->shape) ? (int)i : -1;
    switch (m->shape) {
    case SH_INFO:
      prom_series(o, m->name, "", stats, -1, "version", redlock_version(), NULL, NULL);
      out_puts(o, "1\n");
      break;
    case SH_SCALAR:
    case SH_M_SCALAR:
      prom_series(o, m->name, "", stats, master, NULL, NULL, NULL, NULL);
      out_value(o, m, scalar(stats, m->value, i, now));
      out_write(o, "\n", 1);
      break;
    case SH_OP_OUTCOME:
      for (unsigned op = 0; op < STATS_OP_COUNT; op++)
        for (unsigned oc = 0; oc < STATS_OUTCOME_COUNT; oc++) {
          prom_series(o, m->name, "", stats, -1, "op", stats_op_names[op], "outcome",
                      outcome_names[oc]);
          out_printf(o, "%llu\n", (unsigned long long)get(&stats->ops[op][oc]));
        }
      break;
    case SH_OP_HIST:
      for (unsigned op = 0; op < STATS_OP_COUNT; op++)
        prom_hist(o, m->name, stats, -1, "op", stats_op_names[op], &stats->op_latency[op]);
      break;
    case SH_M_STATE: {
      stats_mstate_t state = master_state(&stats->masters[i], now);
      for (unsigned s = 0; s < N_MSTATES; s++) {
        prom_series(o, m->name, "", stats, master, "state", mstate_names[s], NULL, NULL);
        out_puts(o, s == state ? "1\n" : "0\n");
      }
      break;
    }
    case SH_M_VERDICT:
      for (unsigned w = WHY_NONE + 1; w < N_WHY; w++) {
        prom_series(o, m->name, "", stats, master, "verdict", why_name(w), NULL, NULL);
        out_printf(o, "%llu\n", (unsigned long long)get(&stats->masters[i].votes[w]));
      }
      break;
    case SH_M_HIST:
      prom_hist(o, m->name, stats, master, NULL, NULL, &stats->masters[i].latency);
      break;
    case SH_P_SCALAR:
    case SH_P_HIST:
      break; /* prom_primaries */
    }
  }
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_key(out_t *o, const char *key, int *first) {
  if (!*first)
    out_write(o, ",", 1);
  *first = 0;
  out_write(o, "\"", 1);
  out_escaped(o, key);
  out_write(o, "\":", 2);
}

static void json_hist(out_t *o, const hist_t *h) {
  uint64_t cumulative = 0;
  out_puts(o, "{\"buckets\":{");
  for (unsigned b = 0; b <= N_BOUNDS; b++) {
    cumulative += get(&h->bucket[b]);
    out_printf(o, "%s\"%s\":%llu", b ? "," : "", b < N_BOUNDS ? bound_text[b] : "+Inf",
               (unsigned long long)cumulative);
  }
  out_puts(o, "},\"sum\":");
  out_seconds(o, get(&h->sum_ns));
  out_printf(o, ",\"count\":%llu}", (unsigned long long)cumulative);
}

static void json_metric(out_t *o, const struct stats *stats, const metric_t *m, unsigned i,
                        uint64_t now, int *first) {
  json_key(o, m->name + (is_master_shape(m->shape) ? strlen(MASTER_PREFIX) : strlen(PREFIX)),
           first);
  switch (m->shape) {
  case SH_INFO:
    out_puts(o, "{\"version\":\"");
    out_escaped(o, redlock_version());
    out_puts(o, "\"}");
    break;
  case SH_SCALAR:
  case SH_M_SCALAR:
    out_value(o, m, scalar(stats, m->value, i, now));
    break;
  case SH_OP_OUTCOME:
    out_write(o, "{", 1);
    for (unsigned op = 0; op < STATS_OP_COUNT; op++) {
      out_printf(o, "%s\"%s\":{", op ? "," : "", stats_op_names[op]);
      for (unsigned oc = 0; oc < STATS_OUTCOME_COUNT; oc++)
        out_printf(o, "%s\"%s\":%llu", oc ? "," : "", outcome_names[oc],
                   (unsigned long long)get(&stats->ops[op][oc]));
      out_write(o, "}", 1);
    }
    out_write(o, "}", 1);
    break;
  case SH_OP_HIST:
    out_write(o, "{", 1);
    for (unsigned op = 0; op < STATS_OP_COUNT; op++) {
      out_printf(o, "%s\"%s\":", op ? "," : "", stats_op_names[op]);
      json_hist(o, &stats->op_latency[op]);
    }
    out_write(o, "}", 1);
    break;
  case SH_M_STATE:
    out_printf(o, "\"%s\"", mstate_names[master_state(&stats->masters[i], now)]);
    break;
  case SH_M_VERDICT:
    out_write(o, "{", 1);
    for (unsigned w = WHY_NONE + 1; w < N_WHY; w++)
      out_printf(o, "%s\"%s\":%llu", w > WHY_NONE + 1 ? "," : "", why_name(w),
                 (unsigned long long)get(&stats->masters[i].votes[w]));
    out_write(o, "}", 1);
    break;
  case SH_M_HIST:
    json_hist(o, &stats->masters[i].latency);
    break;
  case SH_P_SCALAR:
  case SH_P_HIST:
    break; /* json_primaries */
  }
}

/* A cluster voter's "primaries": one object per named primary. */
static void json_primaries(out_t *o, const struct stats *stats, unsigned i, int *first) {
  json_key(o, "primaries", first);
  out_write(o, "[", 1);
  int any = 0;
  for (unsigned p = 0; p < STATS_MAX_PRIMARIES; p++) {
    const stats_primary_t *e = primary_at(stats, i, p);
    if (e == NULL)
      continue;
    int pfirst = 1;
    out_write(o, any ? ",{" : "{", any ? 2 : 1);
    any = 1;
    json_key(o, "primary", &pfirst);
    out_write(o, "\"", 1);
    out_escaped(o, e->label);
    out_write(o, "\"", 1);
    for (size_t k = 0; k < N_METRICS; k++) {
      const metric_t *m = &metrics[k];
      if (!is_primary_shape(m->shape))
        continue;
      json_key(o, m->name + strlen(PRIMARY_PREFIX), &pfirst);
      if (m->shape == SH_P_HIST)
        json_hist(o, &e->latency);
      else
        out_value(o, m, primary_scalar(e, m->value));
    }
    out_write(o, "}", 1);
  }
  out_write(o, "]", 1);
}

static void json_render(out_t *o, const struct stats *stats, uint64_t now) {
  int first = 1;
  out_write(o, "{", 1);
  for (size_t k = 0; k < N_METRICS; k++)
    if (!is_master_shape(metrics[k].shape) && !is_primary_shape(metrics[k].shape))
      json_metric(o, stats, &metrics[k], 0, now, &first);
  json_key(o, "masters", &first);
  out_write(o, "[", 1);
  for (unsigned i = 0; i < stats->n_masters; i++) {
    int mfirst = 1;
    out_write(o, i ? ",{" : "{", i ? 2 : 1);
    json_key(o, "master", &mfirst);
    out_write(o, "\"", 1);
    out_escaped(o, stats_label(stats, i));
    out_write(o, "\"", 1);
    for (size_t k = 0; k < N_METRICS; k++)
      if (is_master_shape(metrics[k].shape))
        json_metric(o, stats, &metrics[k], i, now, &mfirst);
    if (stats->masters[i].primaries != NULL)
      json_primaries(o, stats, i, &mfirst);
    out_write(o, "}", 1);
  }
  out_puts(o, "]}\n");
}

int stats_render(const struct stats *stats, int format, char *buf, size_t size) {
  out_t o = {buf, size, 0, format == REDLOCK_STATS_JSON};
  uint64_t now = tb_now_ns(stats->env->tb);
  if (o.json) {
    json_render(&o, stats, now);
  } else {
    for (size_t k = 0; k < N_METRICS; k++)
      prom_metric(&o, stats, &metrics[k], now);
  }
  if (size > 0)
    buf[o.len < size ? o.len : size - 1] = '\0';
  return o.len > (size_t)INT32_MAX ? REDLOCK_ENOMEM : (int)o.len;
}
