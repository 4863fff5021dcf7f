/* stats.c: the figures behind redlock_stats() and the events behind
 * redlock_options_set_event_cb() (see stats.h for the threading and the
 * cost).  The metric table below is the one list of metric names: the
 * Prometheus and the JSON renderings both walk it, and docs/observability.md
 * describes it (a test checks that every name printed is documented). */
#include "api/stats.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/lock.h"
#include "util/alloc.h"

/* Histogram bucket bounds, copied into each client's stats (stats_render.c
 * prints them). */
static const uint64_t bound_ns[STATS_N_BOUNDS] = {
    25000u,      50000u,      100000u,     250000u,      500000u,      1000000u,    2500000u,
    5000000u,    10000000u,   25000000u,   50000000u,    100000000u,   250000000u,  500000000u,
    1000000000u, 2500000000u, 5000000000u, 10000000000u, 30000000000u, 60000000000u};
#define N_BOUNDS STATS_N_BOUNDS
#define N_WHY STATS_N_WHY

typedef stats_master_t master_stats_t;
typedef stats_hist_t hist_t;
#define bump stats_bump
#define get stats_get

const char *stats_label(const struct stats *stats, unsigned i) {
  return stats->env->label(stats->env->label_arg, i);
}

status_t stats_new(const stats_env_t *env, struct stats **out) {
  *out = NULL;
  if (env->opts->stats_off && env->opts->event_cb == NULL)
    return ST_OK;
  unsigned n = env->n_masters;
  struct stats *stats = rl_calloc(1, sizeof *stats + n * sizeof stats->masters[0]);
  if (stats == NULL)
    return ST_ENOMEM;
  /* A duration of bit length b is at least 2^(b-1) ns: no bucket below the
   * first whose bound reaches that can hold it. */
  memcpy(stats->bound_ns, bound_ns, sizeof bound_ns);
  stats->bound_ns[N_BOUNDS] = UINT64_MAX; /* +Inf: the bucket search needs no index check */
  for (unsigned b = 0; b <= 64; b++) {
    uint64_t low = b == 0 ? 0 : (uint64_t)1 << (b - 1);
    unsigned i = 0;
    while (i < N_BOUNDS && low > bound_ns[i])
      i++;
    stats->first_bucket[b] = (uint8_t)i;
  }
  stats->n_masters = n;
  stats->env = env;
  /* A cluster voter's primaries are counted apart too, when stats are on
   * (events alone name the primary in their detail). */
  for (unsigned i = 0; i < n && !env->opts->stats_off; i++) {
    if (i >= env->opts->n_nodes || env->opts->nodes[i].voter != VOTER_KIND_CLUSTER)
      continue;
    stats->masters[i].primaries = rl_calloc(STATS_MAX_PRIMARIES, sizeof(stats_primary_t));
    if (stats->masters[i].primaries == NULL) {
      stats_free(stats);
      return ST_ENOMEM;
    }
  }
  uint64_t now = tb_now_ns(env->tb);
  for (unsigned i = 0; i < n; i++) {
    atomic_init(&stats->masters[i].state, STATS_MSTATE_CONNECTING);
    stats->masters[i].since_ns = now;
  }
  *out = stats;
  return ST_OK;
}

void stats_free(struct stats *stats) {
  for (unsigned i = 0; stats != NULL && i < stats->n_masters; i++)
    rl_free(stats->masters[i].primaries);
  rl_free(stats);
}

stats_outcome_t stats_outcome(int status) {
  switch (status) {
  case REDLOCK_OK:
    return STATS_OUTCOME_OK;
  case REDLOCK_ELOCKED:
    return STATS_OUTCOME_LOCKED;
  case REDLOCK_ENOQUORUM:
    return STATS_OUTCOME_NOQUORUM;
  case REDLOCK_EEXPIRED:
    return STATS_OUTCOME_EXPIRED;
  case REDLOCK_ELOST:
    return STATS_OUTCOME_LOST;
  case REDLOCK_ETIMEDOUT:
    return STATS_OUTCOME_TIMEOUT;
  case REDLOCK_ECANCELED:
  case REDLOCK_ECLOSED:
    return STATS_OUTCOME_CANCELED;
  default:
    return STATS_OUTCOME_OTHER;
  }
}

/* ---- events ------------------------------------------------------------------------ */

struct redlock_event {
  int kind;
  int status;
  const char *resource;
  int64_t duration_us;
  int attempts;
  const struct stats *stats;
  const round_t *round; /* operations: the last round waited on, or NULL */
  int master;           /* master events: its index, else -1 */
  const char *master_state;
  const char *detail;
  char *scratch; /* operations: redlock_event_node_detail's text (VOTER_WHY_LEN bytes) */
};

/* The names of the event kinds that are not operations; an operation's
 * event is named by its op label (STATS_OP_MAP), written once there. */
static const char *const event_kind_names[] = {
    [REDLOCK_EVENT_LOST] = "lost",
    [REDLOCK_EVENT_NODE_UP] = "node_up",
    [REDLOCK_EVENT_NODE_DOWN] = "node_down",
    [REDLOCK_EVENT_QUARANTINE_END] = "quarantine_end",
};

const char *const stats_op_names[STATS_OP_COUNT] = {
#define STATS__OP_NAME(name, label) label,
    STATS_OP_MAP(STATS__OP_NAME)
#undef STATS__OP_NAME
};

/* The event kind of each operation kind (the names agree with the op label). */
static const int op_event_kind[STATS_OP_COUNT] = {
    [STATS_OP_ACQUIRE] = REDLOCK_EVENT_ACQUIRE,
    [STATS_OP_WAIT] = REDLOCK_EVENT_WAIT,
    [STATS_OP_EXTEND] = REDLOCK_EVENT_EXTEND,
    [STATS_OP_RENEW] = REDLOCK_EVENT_RENEW,
    [STATS_OP_RELEASE] = REDLOCK_EVENT_RELEASE,
    [STATS_OP_SEMAPHORE] = REDLOCK_EVENT_SEMAPHORE,
    [STATS_OP_RWLOCK_READ] = REDLOCK_EVENT_RWLOCK_READ,
    [STATS_OP_RWLOCK_WRITE] = REDLOCK_EVENT_RWLOCK_WRITE,
    [STATS_OP_ELECTION] = REDLOCK_EVENT_ELECTED,
};

static void event_init(redlock_event_t *ev, const struct stats *stats, int kind, int status) {
  memset(ev, 0, sizeof *ev);
  ev->stats = stats;
  ev->kind = kind;
  ev->status = status;
  ev->master = -1;
}

static void event_emit(struct stats *stats, const redlock_event_t *ev) {
  stats->env->opts->event_cb(ev, stats->env->opts->event_arg);
}

int redlock_event_kind(const redlock_event_t *ev) { return ev != NULL ? ev->kind : 0; }

const char *redlock_event_kind_name(int kind) {
  for (int op = 0; op < STATS_OP_COUNT; op++) {
    if (op_event_kind[op] == kind)
      return stats_op_names[op];
  }
  if (kind <= 0 || (size_t)kind >= sizeof event_kind_names / sizeof event_kind_names[0] ||
      event_kind_names[kind] == NULL)
    return "unknown";
  return event_kind_names[kind];
}

int redlock_event_status(const redlock_event_t *ev) {
  return ev != NULL ? ev->status : REDLOCK_EINVAL;
}

const char *redlock_event_resource(const redlock_event_t *ev) {
  return ev != NULL ? ev->resource : NULL;
}

int64_t redlock_event_duration_us(const redlock_event_t *ev) {
  return ev != NULL ? ev->duration_us : 0;
}

int redlock_event_attempts(const redlock_event_t *ev) { return ev != NULL ? ev->attempts : 0; }

int redlock_event_node_count(const redlock_event_t *ev) {
  if (ev == NULL)
    return 0;
  if (ev->round != NULL)
    return (int)ev->round->n_votes;
  return ev->master >= 0 ? 1 : 0;
}

/* The master behind entry i of the event, or -1. */
static int event_master(const redlock_event_t *ev, int i) {
  if (ev == NULL || i < 0 || i >= redlock_event_node_count(ev))
    return -1;
  return ev->round != NULL ? i : ev->master;
}

const char *redlock_event_node_addr(const redlock_event_t *ev, int i) {
  int m = event_master(ev, i);
  return m < 0 ? NULL : stats_label(ev->stats, (unsigned)m);
}

const char *redlock_event_node_verdict(const redlock_event_t *ev, int i) {
  if (event_master(ev, i) < 0)
    return NULL;
  return ev->round != NULL ? why_name(ev->round->votes[i].why) : ev->master_state;
}

const char *redlock_event_node_detail(const redlock_event_t *ev, int i) {
  if (event_master(ev, i) < 0 || ev->round == NULL || ev->scratch == NULL)
    return NULL;
  ev->scratch[0] = '\0';
  const stats_env_t *env = ev->stats->env;
  if (env->vote_detail != NULL)
    env->vote_detail(env->label_arg, (unsigned)i, ev->round->votes[i].why, &ev->round->votes[i].req,
                     ev->scratch, VOTER_WHY_LEN);
  return ev->scratch;
}

int64_t redlock_event_node_latency_us(const redlock_event_t *ev, int i) {
  if (event_master(ev, i) < 0 || ev->round == NULL)
    return -1;
  const node_req_t *req = &ev->round->votes[i].req;
  if (ev->round->votes[i].state == VOTE_PENDING || req->replied_ns == 0 || req->sent_ns == 0 ||
      req->replied_ns < req->sent_ns)
    return -1;
  return (int64_t)((req->replied_ns - req->sent_ns) / 1000u);
}

const char *redlock_event_detail(const redlock_event_t *ev) {
  return ev != NULL ? ev->detail : NULL;
}

/* ---- hooks ------------------------------------------------------------------------ */

/* Counts one finished operation; the event, when there is a callback. */
static inline void op_record(struct stats *stats, stats_op_t kind, int status, uint64_t ns) {
  stats_outcome_t outcome = status == REDLOCK_OK ? STATS_OUTCOME_OK : stats_outcome(status);
  bump(&stats->ops[kind][outcome], 1);
  stats_hist_observe(stats, &stats->op_latency[kind], ns);
}

static void op_event(struct stats *stats, stats_op_t kind, int status, uint64_t ns,
                     const char *resource, const round_t *round, int attempts) {
  redlock_event_t ev;
  char scratch[VOTER_WHY_LEN];
  event_init(&ev, stats, op_event_kind[kind], status);
  ev.scratch = scratch;
  ev.resource = resource;
  ev.duration_us = (int64_t)(ns / 1000u);
  ev.attempts = attempts;
  ev.round = round;
  event_emit(stats, &ev);
}

static void stats_call_finished_(void *arg, stats_op_t kind, int status, const void *ctx,
                                 uint64_t started_ns, const char *resource, int attempts) {
  struct stats *stats = arg;
  /* The round being decided is this call's when it ends inside its
   * callback (the usual case); calls that end elsewhere (canceled, timed out
   * between attempts, refused before any round) have none. */
  const round_t *round = stats->env->rounds->deciding;
  if (round != NULL && round->ctx != ctx)
    round = NULL;
  uint64_t end_ns = round != NULL ? round->decided_ns : tb_now_ns(stats->env->tb);
  uint64_t start_ns = started_ns != 0 ? started_ns : round != NULL ? round->started_ns : end_ns;
  uint64_t ns = end_ns > start_ns ? end_ns - start_ns : 0;
  op_record(stats, kind, status, ns);
  if (stats->env->opts->event_cb == NULL)
    return;
  op_event(stats, kind, status, ns, resource, round, attempts >= 0 ? attempts : round != NULL);
}

static void stats_op_done_(void *arg, stats_op_t kind, int status, uint64_t ns,
                           const char *resource, const round_t *round, int attempts) {
  struct stats *stats = arg;
  op_record(stats, kind, status, ns);
  if (stats->env->opts->event_cb != NULL)
    op_event(stats, kind, status, ns, resource, round, attempts);
}

static void stats_renewed_(void *arg, const redlock_lock_t *lock, const round_t *round,
                           int status) {
  stats_op_done_(arg, STATS_OP_RENEW, status, round->decided_ns - round->started_ns, lock->resource,
                 round, 1);
}

static void stats_lock_lost_(void *arg, const redlock_lock_t *lock, int reason) {
  struct stats *stats = arg;
  if (reason != REDLOCK_LOST_MAX_HOLD) /* a bound reached is no loss */
    bump(&stats->locks_lost, 1);
  if (stats->env->opts->event_cb == NULL)
    return;
  redlock_event_t ev;
  event_init(&ev, stats, REDLOCK_EVENT_LOST, reason);
  ev.resource = lock->resource;
  event_emit(stats, &ev);
}

const engine_hooks_t stats_engine_hooks = {
    .call_finished = stats_call_finished_,
    .op_done = stats_op_done_,
    .renewed = stats_renewed_,
    .lock_lost = stats_lock_lost_,
};

static void set_state(master_stats_t *m, stats_mstate_t state) {
  atomic_store_explicit(&m->state, (int)state, memory_order_relaxed);
}

/* A master event: one entry, the master, in its new state. */
static void master_event(struct stats *stats, unsigned index, int kind, int status,
                         const char *state, uint64_t ns, const char *detail) {
  redlock_event_t ev;
  event_init(&ev, stats, kind, status);
  ev.master = (int)index;
  ev.master_state = state;
  ev.duration_us = (int64_t)(ns / 1000u);
  ev.detail = detail;
  event_emit(stats, &ev);
}

static void voter_up(struct stats *stats, master_stats_t *m, unsigned index,
                     const voter_news_t *news) {
  uint64_t now = news->ready_ns != 0 ? news->ready_ns : tb_now_ns(stats->env->tb);
  atomic_store_explicit(&m->quarantine_until_ns, news->quarantine_until_ns, memory_order_relaxed);
  set_state(m, STATS_MSTATE_UP);
  if (m->ever_up)
    bump(&m->reconnects, 1);
  m->ever_up = 1;
  uint64_t down_ns = now - m->since_ns;
  m->since_ns = now;
  m->reported = STATS_MSTATE_UP;
  if (stats->env->opts->event_cb == NULL)
    return;
  int quarantined = news->quarantine_until_ns != 0 && now < news->quarantine_until_ns;
  int duplicate = news->duplicate_why != NULL;
  char detail[96 + VOTER_WHY_LEN];
  if (duplicate)
    snprintf(detail, sizeof detail, "connected; %s: not a voter", news->duplicate_why);
  else if (quarantined)
    snprintf(detail, sizeof detail, "connected; in %s for another %llu ms",
             news->quarantine_name != NULL && news->quarantine_name[0] != '\0'
                 ? news->quarantine_name
                 : "quarantine",
             (unsigned long long)((news->quarantine_until_ns - now) / 1000000u));
  else
    snprintf(detail, sizeof detail, "connected");
  master_event(stats, index, REDLOCK_EVENT_NODE_UP, REDLOCK_OK,
               duplicate     ? "duplicate"
               : quarantined ? "quarantined"
                             : "up",
               down_ns, detail);
}

static void voter_down(struct stats *stats, master_stats_t *m, unsigned index,
                       const voter_news_t *news) {
  uint64_t now = tb_now_ns(stats->env->tb);
  if (news->was_up)
    bump(&m->disconnects, 1);
  else
    bump(&m->connect_failures, 1);
  set_state(m, STATS_MSTATE_DOWN);
  if (m->reported == STATS_MSTATE_DOWN)
    return; /* still down: a failed reconnect is no news */
  int was_up = m->reported == STATS_MSTATE_UP;
  uint64_t up_ns = was_up ? now - m->since_ns : 0;
  m->since_ns = now;
  m->reported = STATS_MSTATE_DOWN;
  if (stats->env->opts->event_cb == NULL)
    return;
  char text[192];
  const char *what = news->what != NULL ? news->what : "";
  snprintf(text, sizeof text, "%s%s%s", what, news->detail ? ": " : "",
           news->detail ? news->detail : "");
  master_event(stats, index, REDLOCK_EVENT_NODE_DOWN, REDLOCK_EIO, "down", up_ns, text);
}

void stats_voter_news_(struct stats *stats, unsigned index, const voter_news_t *news) {
  master_stats_t *m = &stats->masters[index];
  switch (news->ev) {
  case VOTER_EV_CONNECTING:
    set_state(m, STATS_MSTATE_CONNECTING);
    break;
  case VOTER_EV_UP:
    voter_up(stats, m, index, news);
    break;
  case VOTER_EV_DOWN:
    voter_down(stats, m, index, news);
    break;
  case VOTER_EV_QUARANTINE_END:
    if (stats->env->opts->event_cb != NULL)
      master_event(stats, index, REDLOCK_EVENT_QUARANTINE_END, REDLOCK_OK, "up",
                   tb_now_ns(stats->env->tb) - news->ready_ns, "restart quarantine over");
    break;
  case VOTER_EV_TLS_FAILURE:
    bump(&m->tls_failures, 1);
    break;
  default:
    break;
  }
}
