/* torture_check.c: the torture test's checker (see torture_check.h).  It
 * keeps the records it is given, ties each extension (E) and unlock (U) to
 * its grant (G) once all are in, derives every hold window
 * [grant, min(unlock start, validity end)] and runs the checks, writing what
 * it finds into a report string instead of printing it. */
#define _GNU_SOURCE /* strdup under -std=c11 */
#include "torture_check.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "torture_common.h"

const char *const tc_grp_prefix[GRP_N] = {"r", "s", "rw", "e"};
const char *const tc_grp_title[GRP_N] = {"locks", "semaphore permits", "read-write holds",
                                         "election terms"};
const char *const tc_call_kinds[TC_N_CALL_KINDS] = {TK_OPEN,   TK_LOCK,   TK_TRYLOCK, TK_WAIT,
                                                    TK_EXTEND, TK_UNLOCK, TK_CLOSE,   TK_SEM,
                                                    TK_READ,   TK_WRITE,  TK_ELECT,   TK_RESIGN};

typedef struct {
  int wid, tid;
  unsigned seq;
  int grp, res;
  int write; /* GRP_RW: a write hold */
  uint64_t fence, call_start, grant, ve, unlock_start, end;
  int has_unlock, unlock_rc, extended;
  char *g_line, *u_line;
} grant_t;

typedef struct {
  int kind; /* index in tc_call_kinds */
  int wid, tid, rc;
  uint64_t start, end, bound_ms;
  char *line;
} call_t;

/* An E or U record: applied once every G record is known. */
typedef struct {
  char *line;
  char type;
} pending_t;

typedef struct {
  pid_t pid;
  int status, killed;
} worker_exit_t;

struct tc_history {
  tc_config_t cfg;
  grant_t *grants;
  size_t n_grants, cap_grants;
  call_t *calls;
  size_t n_calls, cap_calls;
  pending_t *pend;
  size_t n_pend, cap_pend;
  worker_exit_t exits[TC_MAX_WORKERS];
  unsigned violations;
  char *report; /* the violations, as printed */
  size_t report_len, report_cap;
  int oom;
  tc_stats_t stats;
};

/* ---- helpers -------------------------------------------------------------------------- */

/* Appends the record at elem (of size `size`) to the array *p of *n records
 * (room for *cap), growing it; out of memory: sets h->oom and drops it. */
static void append(tc_history_t *h, void **p, size_t *n, size_t *cap, const void *elem,
                   size_t size) {
  if (*n == *cap) {
    size_t cap2 = *cap ? 2 * *cap : 1024;
    void *q = realloc(*p, cap2 * size);
    if (q == NULL) {
      h->oom = 1;
      return;
    }
    *p = q;
    *cap = cap2;
  }
  memcpy((char *)*p + *n * size, elem, size);
  (*n)++;
}

static void vout(tc_history_t *h, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int len = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (len < 0 || h->oom)
    return;
  size_t need = h->report_len + (size_t)len + 1;
  if (need > h->report_cap) {
    size_t cap = h->report_cap ? h->report_cap : 4096;
    while (cap < need)
      cap *= 2;
    char *p = realloc(h->report, cap);
    if (p == NULL) {
      h->oom = 1;
      return;
    }
    h->report = p;
    h->report_cap = cap;
  }
  vsnprintf(h->report + h->report_len, (size_t)len + 1, fmt, ap);
  h->report_len += (size_t)len;
}

/* Appends to the report. */
__attribute__((format(printf, 2, 3))) static void out(tc_history_t *h, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vout(h, fmt, ap);
  va_end(ap);
}

__attribute__((format(printf, 2, 3))) static void violation(tc_history_t *h, const char *fmt, ...) {
  h->violations++;
  out(h, "VIOLATION: ");
  va_list ap;
  va_start(ap, fmt);
  vout(h, fmt, ap);
  va_end(ap);
  out(h, "\n");
}

static char *dup_line(tc_history_t *h, const char *line) {
  char *s = strdup(line);
  h->oom |= s == NULL;
  return s;
}

static double rel_s(const tc_history_t *h, uint64_t ns) {
  uint64_t t0 = h->cfg.t0_ns;
  return ns >= t0 ? (double)(ns - t0) / 1e9 : -(double)(t0 - ns) / 1e9;
}

/* ---- records -------------------------------------------------------------------------- */

tc_history_t *tc_new(const tc_config_t *cfg) {
  tc_history_t *h = calloc(1, sizeof *h);
  if (h == NULL)
    return NULL;
  h->cfg = *cfg;
  h->stats.worst_kind = -1;
  return h;
}

void tc_free(tc_history_t *h) {
  if (h == NULL)
    return;
  for (size_t i = 0; i < h->n_grants; i++) {
    free(h->grants[i].g_line);
    free(h->grants[i].u_line);
  }
  free(h->grants);
  for (size_t i = 0; i < h->n_calls; i++)
    free(h->calls[i].line);
  free(h->calls);
  for (size_t i = 0; i < h->n_pend; i++)
    free(h->pend[i].line);
  free(h->pend);
  free(h->report);
  free(h);
}

void tc_no_history(tc_history_t *h, int worker, const char *where) {
  violation(h, "worker %d wrote no history (%s)", worker, where);
}

void tc_worker_exit(tc_history_t *h, int worker, pid_t pid, int wait_status, int killed) {
  if (worker < 0 || worker >= TC_MAX_WORKERS)
    return;
  h->exits[worker] = (worker_exit_t){pid, wait_status, killed};
}

static void add_call(tc_history_t *h, int id, const char *line) {
  char kind[16];
  call_t c = {0};
  if (sscanf(line, "C %15s %d %d %" SCNu64 " %" SCNu64 " %d %" SCNu64, kind, &c.wid, &c.tid,
             &c.start, &c.end, &c.rc, &c.bound_ms) != 7) {
    violation(h, "worker %d: unreadable record: %s", id, line);
    return;
  }
  c.kind = -1;
  for (int k = 0; k < TC_N_CALL_KINDS; k++)
    if (strcmp(kind, tc_call_kinds[k]) == 0)
      c.kind = k;
  c.line = dup_line(h, line);
  append(h, (void **)&h->calls, &h->n_calls, &h->cap_calls, &c, sizeof c);
}

static void add_grant(tc_history_t *h, int id, const char *line) {
  grant_t g = {0};
  char res[32];
  if (sscanf(line, "G %d %d %u %31s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &g.wid, &g.tid,
             &g.seq, res, &g.fence, &g.call_start, &g.grant, &g.ve) != 8 ||
      strchr("rsRWe", res[0]) == NULL || res[0] == '\0') {
    violation(h, "worker %d: unreadable record: %s", id, line);
    return;
  }
  g.grp = res[0] == 'r' ? GRP_LOCK : res[0] == 's' ? GRP_SEM : res[0] == 'e' ? GRP_ELECT : GRP_RW;
  g.write = res[0] == 'W';
  g.res = atoi(res + 1);
  if (g.res < 0 || g.res >= h->cfg.resources || g.res >= TC_MAX_RESOURCES) {
    violation(h, "worker %d: unknown resource: %s", id, line);
    return;
  }
  g.g_line = dup_line(h, line);
  append(h, (void **)&h->grants, &h->n_grants, &h->cap_grants, &g, sizeof g);
}

static void add_summary(tc_history_t *h, int id, const char *line) {
  if (id < 0 || id >= TC_MAX_WORKERS)
    return;
  tc_worker_summary_t *s = &h->stats.workers[id];
  int wid;
  if (sscanf(line, "S %d %ld %ld %u %" SCNu64 " %" SCNu64 " %ld %ld %ld %" SCNu64, &wid,
             &s->rss_warm, &s->rss_end, &s->stall_ms, &s->calls, &s->grants, &s->heap_warm,
             &s->heap_late, &s->heap_max, &s->replayed) == 10)
    s->present = 1;
}

void tc_add_record(tc_history_t *h, int id, const char *line) {
  switch (line[0]) {
  case 'C':
    add_call(h, id, line);
    break;
  case 'G':
    add_grant(h, id, line);
    break;
  case 'E':
  case 'U': {
    pending_t pend = {dup_line(h, line), line[0]};
    append(h, (void **)&h->pend, &h->n_pend, &h->cap_pend, &pend, sizeof pend);
    break;
  }
  case 'S':
    add_summary(h, id, line);
    break;
  case 'F': {
    const char *text = line + 1;
    while (*text == ' ')
      text++;
    while (*text >= '0' && *text <= '9') /* the worker id */
      text++;
    violation(h, "worker %d reported: %s", id, text + (*text == ' '));
    break;
  }
  default:
    if (line[0] != '\0')
      violation(h, "worker %d: unreadable record: %s", id, line);
  }
}

static uint64_t grant_key(int wid, int tid, unsigned seq) {
  return ((uint64_t)(unsigned)wid << 48) | ((uint64_t)(unsigned)tid << 32) | seq;
}

static int grant_key_cmp(const void *a, const void *b) {
  const grant_t *x = a, *y = b;
  uint64_t kx = grant_key(x->wid, x->tid, x->seq), ky = grant_key(y->wid, y->tid, y->seq);
  return kx < ky ? -1 : kx > ky;
}

static grant_t *find_grant(tc_history_t *h, int wid, int tid, unsigned seq) {
  if (h->n_grants == 0)
    return NULL;
  grant_t key = {.wid = wid, .tid = tid, .seq = seq};
  return bsearch(&key, h->grants, h->n_grants, sizeof *h->grants, grant_key_cmp);
}

static void apply_pending(tc_history_t *h) {
  for (size_t i = 0; i < h->n_pend; i++) {
    const char *line = h->pend[i].line;
    int wid, tid, rc;
    unsigned seq;
    uint64_t t;
    const int ext = h->pend[i].type == 'E';
    if (ext ? sscanf(line, "E %d %d %u %" SCNu64, &wid, &tid, &seq, &t) != 4
            : sscanf(line, "U %d %d %u %" SCNu64 " %d", &wid, &tid, &seq, &t, &rc) != 5) {
      violation(h, "unreadable record: %s", line);
      continue;
    }
    grant_t *g = find_grant(h, wid, tid, seq);
    if (g == NULL) {
      violation(h, "%s of an unknown grant: %s", ext ? "extension" : "unlock", line);
      continue;
    }
    if (ext) {
      g->ve = t; /* the extension's validity end replaces the grant's */
      g->extended = 1;
    } else {
      g->unlock_start = t;
      g->has_unlock = 1;
      g->unlock_rc = rc;
      g->u_line = dup_line(h, line);
    }
  }
}

static void print_grant(tc_history_t *h, const char *label, const grant_t *g) {
  out(h,
      "    %s: worker %d thread %d seq %u, %s%d%s, %s %" PRIu64
      ", call start %+.6f s, grant %+.6f s, validity end %+.6f s%s, %s %+.6f s -> window "
      "[%+.6f, %+.6f] s\n",
      label, g->wid, g->tid, g->seq, tc_grp_prefix[g->grp], g->res,
      g->grp == GRP_RW ? (g->write ? " write" : " read") : "",
      g->grp == GRP_ELECT ? "term" : "fence", g->fence, rel_s(h, g->call_start), rel_s(h, g->grant),
      rel_s(h, g->ve), g->extended ? " (extended)" : "",
      g->has_unlock ? "unlock start" : "no unlock record", rel_s(h, g->unlock_start),
      rel_s(h, g->grant), rel_s(h, g->end));
  out(h, "      %s\n", g->g_line);
  if (g->u_line != NULL)
    out(h, "      %s\n", g->u_line);
}

/* The two grants of a violation, the earlier first. */
static void print_pair(tc_history_t *h, const grant_t *earlier, const grant_t *later) {
  print_grant(h, "earlier", earlier);
  print_grant(h, "later  ", later);
}

static int by_res_grant(const void *a, const void *b) {
  const grant_t *const *x = a, *const *y = b;
  if ((*x)->grant != (*y)->grant)
    return (*x)->grant < (*y)->grant ? -1 : 1;
  return 0;
}

static int by_res_call_start(const void *a, const void *b) {
  const grant_t *const *x = a, *const *y = b;
  if ((*x)->call_start != (*y)->call_start)
    return (*x)->call_start < (*y)->call_start ? -1 : 1;
  return 0;
}

static int by_end(const void *a, const void *b) {
  const grant_t *const *x = a, *const *y = b;
  if ((*x)->end != (*y)->end)
    return (*x)->end < (*y)->end ? -1 : 1;
  return 0;
}

/* Semaphore: never more than `limit` permit windows at one instant.  A
 * sweep over the non-empty windows in grant order; `ends` holds the windows
 * still open (half-open: one ending at t does not meet one starting at t). */
static void check_semaphore(tc_history_t *h, int r, grant_t **by_grant, size_t n) {
  grant_t **open_w = malloc((n ? n : 1) * sizeof *open_w);
  if (open_w == NULL) {
    h->oom = 1;
    return;
  }
  size_t n_open = 0;
  unsigned reported = 0;
  for (size_t i = 0; i < n; i++) {
    grant_t *g = by_grant[i];
    if (g->end <= g->grant)
      continue;
    size_t k = 0; /* drop the windows that ended by this grant */
    for (size_t j = 0; j < n_open; j++)
      if (open_w[j]->end > g->grant)
        open_w[k++] = open_w[j];
    n_open = k;
    open_w[n_open++] = g;
    if (n_open > h->stats.sem_peak[r])
      h->stats.sem_peak[r] = (unsigned)n_open;
    if (n_open > h->cfg.sem_limit) {
      violation(h, "s%d: %zu permit holders at once, limit %u (semaphore limit broken)", r, n_open,
                h->cfg.sem_limit);
      if (reported++ < 3) {
        qsort(open_w, n_open, sizeof *open_w, by_end);
        for (size_t j = 0; j < n_open; j++)
          print_grant(h, "holder", open_w[j]);
      } else if (reported == 4) {
        out(h, "    (further holders of s%d not printed)\n", r);
      }
    }
  }
  free(open_w);
}

/* Read-write lock: no write window overlaps any other window (read or
 * write) of the same name; and the tokens of the write holds rise in grant
 * order (a write hold's token is above every earlier hold's, safety.md
 * §11.3; read holds carry the write epoch, which may repeat). */
static void check_rwlock(tc_history_t *h, int r, grant_t **by_grant, size_t n) {
  unsigned reported = 0;
  const grant_t *prev_w = NULL;
  for (size_t i = 0; i < n; i++) {
    const grant_t *g = by_grant[i];
    if (g->end <= g->grant)
      continue;
    for (size_t j = i + 1; j < n && by_grant[j]->grant < g->end; j++) {
      const grant_t *o = by_grant[j];
      if (o->end <= o->grant || !(g->write || o->write))
        continue;
      violation(h, "rw%d: a write hold overlaps %s hold for %.3f ms (read-write exclusion broken)",
                r, g->write && o->write ? "another write" : "a read",
                (double)((g->end < o->end ? g->end : o->end) - o->grant) / 1e6);
      if (reported++ < 5) {
        print_pair(h, g, o);
      }
    }
    if (g->write) {
      if (prev_w != NULL && g->fence <= prev_w->fence) {
        violation(h,
                  "rw%d: fencing token %" PRIu64 " of a later write hold is not above %" PRIu64
                  " of the write hold before it",
                  r, g->fence, prev_w->fence);
        print_pair(h, prev_w, g);
      }
      prev_w = g;
    }
  }
}

/* Checks 1 and 2 for one name of one group. */
static void check_resource(tc_history_t *h, int grp, int r) {
  size_t n = 0;
  for (size_t i = 0; i < h->n_grants; i++)
    if (h->grants[i].grp == grp && h->grants[i].res == r)
      n++;
  h->stats.grants_per_res[grp][r] = (unsigned)n;
  if (n == 0) {
    violation(h, "%s%d (%s) was never granted: no progress, the run proves nothing",
              tc_grp_prefix[grp], r, tc_grp_title[grp]);
    return;
  }
  grant_t **by_grant = malloc(n * sizeof *by_grant);
  grant_t **by_start = malloc(n * sizeof *by_start);
  if (by_grant == NULL || by_start == NULL) {
    free(by_grant);
    free(by_start);
    h->oom = 1;
    return;
  }
  size_t k = 0;
  for (size_t i = 0; i < h->n_grants; i++)
    if (h->grants[i].grp == grp && h->grants[i].res == r) {
      by_grant[k] = &h->grants[i];
      by_start[k] = &h->grants[i];
      if (h->grants[i].end > h->grants[i].grant)
        h->stats.nonempty_per_res[grp][r]++;
      k++;
    }
  qsort(by_grant, n, sizeof *by_grant, by_res_grant);
  qsort(by_start, n, sizeof *by_start, by_res_call_start);

  if (grp == GRP_SEM) {
    /* A permit's token is its slot's, not the name's: no order across
     * permits to check. */
    check_semaphore(h, r, by_grant, n);
    goto done;
  }
  if (grp == GRP_RW) {
    check_rwlock(h, r, by_grant, n);
    goto done;
  }

  /* Locks and elections (a term is a lease on one key, its token the term):
   * 1. Mutual exclusion / one leader at a time and 2a. token (term) order,
   * over the non-empty windows in grant order.  `reach` is the window (so
   * far) that ends last. */
  const int el = grp == GRP_ELECT;
  const grant_t *reach = NULL, *prev = NULL;
  for (size_t i = 0; i < n; i++) {
    const grant_t *g = by_grant[i];
    if (g->end <= g->grant)
      continue; /* empty window */
    if (reach != NULL && g->grant < reach->end) {
      if (el)
        violation(h, "e%d: two leaders at once for %.3f ms (election broken)", r,
                  (double)((g->end < reach->end ? g->end : reach->end) - g->grant) / 1e6);
      else
        violation(h, "r%d: two holders overlap for %.3f ms (mutual exclusion broken)", r,
                  (double)((g->end < reach->end ? g->end : reach->end) - g->grant) / 1e6);
      print_pair(h, reach, g);
    }
    if (prev != NULL && g->fence <= prev->fence) {
      if (el)
        violation(h,
                  "e%d: term %" PRIu64 " of a later leader is not above term %" PRIu64
                  " of the leader before it (terms not strictly increasing)",
                  r, g->fence, prev->fence);
      else
        violation(h,
                  "r%d: fencing token %" PRIu64 " of a later hold is not above %" PRIu64
                  " of the hold before it",
                  r, g->fence, prev->fence);
      print_pair(h, prev, g);
    }
    prev = g;
    if (reach == NULL || g->end > reach->end)
      reach = g;
  }

  /* 2b. A grant whose call started after another grant was seen has a
   * larger token (docs/safety.md §6.2, theorem; for terms §10.2): sweep the
   * grants in call-start order, folding in the grants seen before each
   * start. */
  const grant_t *max_seen = NULL;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    const grant_t *g2 = by_start[i];
    while (j < n && by_grant[j]->grant < g2->call_start) {
      if (max_seen == NULL || by_grant[j]->fence > max_seen->fence)
        max_seen = by_grant[j];
      j++;
    }
    if (max_seen != NULL && g2->fence <= max_seen->fence) {
      if (el)
        violation(h,
                  "e%d: a campaign that started after a term %" PRIu64
                  " was seen won the term %" PRIu64 " (terms not strictly increasing)",
                  r, max_seen->fence, g2->fence);
      else
        violation(h,
                  "r%d: a lock call that started after a grant with token %" PRIu64
                  " was granted the token %" PRIu64 ", not a larger one",
                  r, max_seen->fence, g2->fence);
      print_grant(h, "granted first     ", max_seen);
      print_grant(h, "called after it   ", g2);
    }
  }
done:
  free(by_grant);
  free(by_start);
}

/* The groups the workers' --primitive uses, and how many names of each. */
static int group_names(const tc_history_t *h, int grp) {
  int p = h->cfg.primitive;
  switch (grp) {
  case GRP_LOCK:
    return p == PRIM_LOCK || p == PRIM_MIXED ? h->cfg.resources : 0;
  case GRP_SEM:
    return p == PRIM_SEMAPHORE || p == PRIM_MIXED ? h->cfg.resources : 0;
  case GRP_RW:
    return p == PRIM_RWLOCK || p == PRIM_MIXED ? h->cfg.resources : 0;
  default:
    return p == PRIM_ELECTION || (p == PRIM_MIXED && h->cfg.threads >= 2)
               ? torture_election_names(p, h->cfg.resources)
               : 0;
  }
}

static int rc_index(int rc) { return rc <= 0 && rc > -TC_N_RC ? -rc : TC_N_RC - 1; }

/* 3. Deadlines; and the return codes and the slowest call, for the summary. */
static void check_calls(tc_history_t *h) {
  tc_stats_t *st = &h->stats;
  double worst_over = -1e18;
  for (size_t i = 0; i < h->n_calls; i++) {
    const call_t *c = &h->calls[i];
    if (c->kind < 0) {
      violation(h, "unknown call kind: %s", c->line);
      continue;
    }
    st->rc_counts[c->kind][rc_index(c->rc)]++;
    double took_ms = (double)(c->end - c->start) / 1e6;
    double over = took_ms - (double)c->bound_ms;
    if (over > worst_over) {
      worst_over = over;
      st->worst_kind = c->kind;
      st->worst_ms = took_ms;
      st->worst_bound_ms = c->bound_ms;
      st->worst_over = over;
    }
    if (c->end < c->start || over > (double)h->cfg.slack_ms) {
      unsigned stall = c->wid >= 0 && c->wid < h->cfg.workers && c->wid < TC_MAX_WORKERS
                           ? st->workers[c->wid].stall_ms
                           : 0;
      violation(h,
                "worker %d thread %d: %s took %.1f ms, beyond its documented bound of %" PRIu64
                " ms + %u ms slack (started %+.3f s; the worker's worst scheduling stall "
                "in the run was %u ms)\n      %s",
                c->wid, c->tid, tc_call_kinds[c->kind], took_ms, c->bound_ms, h->cfg.slack_ms,
                rel_s(h, c->start), stall, c->line);
    }
  }
}

/* 4. Every worker exited 0 after writing its summary. */
static void check_workers(tc_history_t *h) {
  for (int i = 0; i < h->cfg.workers && i < TC_MAX_WORKERS; i++) {
    const worker_exit_t *w = &h->exits[i];
    if (w->killed)
      violation(h, "worker %d (pid %d) did not exit in time and was killed: a hang", i,
                (int)w->pid);
    else if (!(WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0)) {
      if (WIFSIGNALED(w->status))
        violation(h, "worker %d (pid %d) died of signal %d", i, (int)w->pid, WTERMSIG(w->status));
      else
        violation(h, "worker %d (pid %d) exited with status %d", i, (int)w->pid,
                  WEXITSTATUS(w->status));
    }
    if (!h->stats.workers[i].present)
      violation(h, "worker %d wrote no summary line (it did not finish)", i);
  }
}

/* Ties the E and U records to their grants, derives the windows and counts
 * what the summary shows. */
static void derive_windows(tc_history_t *h) {
  tc_stats_t *st = &h->stats;
  if (h->n_grants > 0) /* qsort and bsearch want a valid pointer, even for 0 items */
    qsort(h->grants, h->n_grants, sizeof *h->grants, grant_key_cmp);
  for (size_t i = 1; i < h->n_grants; i++)
    if (grant_key_cmp(&h->grants[i - 1], &h->grants[i]) == 0)
      violation(h, "duplicate grant record: %s", h->grants[i].g_line);
  apply_pending(h);
  st->grants = h->n_grants;
  for (size_t i = 0; i < h->n_grants; i++) {
    grant_t *g = &h->grants[i];
    g->end = g->has_unlock && g->unlock_start < g->ve ? g->unlock_start : g->ve;
    if (g->end > g->grant)
      st->nonempty++;
    if (g->extended)
      st->extended++;
    if (g->fence == 0)
      violation(h, "grant without a fencing token: %s", g->g_line);
    if (g->grp == GRP_RW && g->write)
      st->rw_writes[g->res]++;
    if (g->grp == GRP_ELECT && g->has_unlock && g->unlock_rc != 0)
      st->terms_lost[g->res]++; /* ended by on_lost rather than a resign */
  }
}

int tc_check(tc_history_t *h) {
  derive_windows(h);
  for (int grp = 0; grp < GRP_N; grp++)
    for (int r = 0; r < h->cfg.resources && r < TC_MAX_RESOURCES; r++) {
      int any = 0; /* names outside the mode are checked too, should any appear */
      for (size_t i = 0; i < h->n_grants && !any; i++)
        any = h->grants[i].grp == grp && h->grants[i].res == r;
      if (any || r < group_names(h, grp))
        check_resource(h, grp, r);
    }
  check_calls(h);
  check_workers(h);
  return h->oom ? -1 : (int)h->violations;
}

unsigned tc_violations(const tc_history_t *h) { return h->violations; }

const char *tc_report(const tc_history_t *h) { return h->report != NULL ? h->report : ""; }

const tc_stats_t *tc_stats(const tc_history_t *h) { return &h->stats; }
