/* observe.c: who leads an election, asked once (redlock_election_leader)
 * or followed (redlock_election_observe / redlock_observe_stop).
 *
 * The view.  Both read the election's key with inspect.c's read round
 * (inspect.lua on every master, decided once each has answered or timed
 * out) and judge the answers with inspect.c's quorum rule (inspect_agree):
 * HELD when a quorum stores the same value, NONE when a quorum answered and
 * none agrees, UNKNOWN when fewer than a quorum answered.  A master that
 * runs no scripts does not answer the read (as for redlock_inspect): with
 * too many of them the view is UNKNOWN.  The term is the least fence
 * counter of the masters that hold the leader's value: the grant's token is
 * the largest its quorum's masters gave, and the fence commit raises every
 * counter to it (acquire_fenced.lua, fence_commit.lua), so once the commit
 * reached them every holder's counter is at least the term and the master
 * that gave it has exactly it; a master whose yes came after the decision
 * may hold a larger one of its own.  A read between a grant and its
 * commit may find a holder's counter still below the term: an observer
 * that sees the holders' counters differ, or a new leader without every
 * master's answer (the one that drew the term may be missing, the others
 * lagging alike), reads once more before it tells (the commit was sent
 * with the grant, so it has landed by then unless a master is slow);
 * redlock_election_leader's one read says what it saw.
 *
 * An observer is a handle that lives on the loop thread, as an election
 * does (election.c): the caller's thread validates, allocates it and
 * queues its start op; a stop is queued too (preallocated in the handle:
 * stopping never fails for want of memory).  A stop off the loop thread
 * waits until the loop has taken it; on the loop thread it sets `stopped`
 * at once, which silences every later callback, and the handle is freed
 * when the queued op is taken, after the running callback has returned.
 * The start op is an acquisition's (acquires = 1): the first read waits for
 * the masters' first connection attempts, so the first view is not
 * UNKNOWN for want of a connection; a stop may then be taken before the
 * start, which frees the handle when it is taken (or failed by a close).
 *
 * Reads.  At most one read is out per observer.  A read starts when the
 * observer starts, when the release channel of the election's key carries
 * an announcement (a release, or a campaign's grant: election.c), when the
 * lease it saw should have ended, and at the latest poll_ms after the last
 * one; an announcement heard during a read asks for one more read after
 * it (`again`).  Each starts from the observer's timer (a delay of 0 for
 * an announcement), a clean stack frame rather than a hiredis callback,
 * and several announcements close together cost one read.  A read in
 * flight keeps the handle: a stop or close frees it at the read's
 * decision (the round's last call into it). */
#include "engine/observe.h"

#include <stdlib.h>
#include <string.h>

#include "engine/inspect.h"
#include "engine/prims.h"
#include "proto/keyname.h"
#include "util/alloc.h"
#include "util/quorum.h"

/* The lease's end is read this much after the ttl the view said: the
 * masters' own expiry has then passed on the one with the least ttl. */
#define OBSERVE_LEASE_END_SLACK_MS 1
/* Reads at most, after the first, before an unsettled view is told as it
 * is (a master that never takes the commit must not hold the news back
 * for ever). */
#define OBSERVE_SETTLE_READS 3

/* The leader view of one read's answers; *settled: 0 when the holders'
 * counters differ (a fence commit may be under way) or, for a HELD view,
 * when some master did not answer (the one whose counter is the term may
 * be that one). */
static void leader_view(const inspect_replies_t *r, redlock_leader_t *out, int *settled,
                        int *complete) {
  memset(out, 0, sizeof *out);
  inspect_agreed_t a;
  inspect_agree(r, &a);
  *settled = a.count == 0 || a.fence == a.fence_hi;
  *complete = a.answered == r->n;
  if (a.answered < quorum_size(r->n)) {
    out->state = REDLOCK_LEADER_UNKNOWN;
    return;
  }
  if (a.count == 0 || a.value == NULL) {
    out->state = REDLOCK_LEADER_NONE;
    return;
  }
  out->state = REDLOCK_LEADER_HELD;
  out->term = a.fence;
  out->ttl_ms = a.lo > 0 ? a.lo : 0;
  size_t owner_len = 0;
  const char *owner = inspect_value_owner(a.value->str, a.value->len, &owner_len);
  if (owner != NULL) {
    if (owner_len > REDLOCK_MAX_OWNER)
      owner_len = REDLOCK_MAX_OWNER;
    memcpy(out->owner, owner, owner_len);
    out->owner[owner_len] = '\0';
  }
}

/* ---- redlock_election_leader --------------------------------------------------- */

static void leader_view_of(const inspect_replies_t *r, void *view) {
  int settled, complete; /* one read says what it saw */
  leader_view(r, view, &settled, &complete);
}

status_t leader_op_new(op_t **out, engine_t *engine, const char *name, redlock_leader_t *view,
                       redlock_done_cb cb, void *arg) {
  return inspect_view_op_new(out, engine, name, REDLOCK_INSPECT_ELECTION, leader_view_of, view, cb,
                             arg);
}

/* ---- observers ------------------------------------------------------------------- */

/* The stop: a caller off the loop thread waits on `done`. */
typedef struct {
  op_t op;
  uv_sem_t *done; /* mutex at submission, then loop: posted when taken; NULL = nobody waits */
} stop_op_t;

struct redlock_observer {
  engine_t *engine;            /* const */
  op_t start_op;               /* observe_start_ops (redlock_election_observe) */
  stop_op_t stop_op;           /* observe_stop_ops (redlock_observe_stop) */
  list_node_t link;            /* loop: engine->observers, from the start until the stop */
  char *name;                  /* const: as given, for log messages */
  inspect_keys_t keys;         /* const: what inspect.lua reads */
  char *channel;               /* const: the release channel of the election's key */
  size_t channel_len;          /* const */
  uint32_t poll_ms;            /* const: the longest time between two reads */
  redlock_leader_cb on_change; /* const */
  void *arg;                   /* const */
  /* loop */
  notify_watcher_t watcher; /* the channel's announcements */
  tb_timer_t *timer;        /* the next read */
  int timer_ready;          /* initialised on the loop */
  int started;              /* the start op was taken (dispatched or failed) */
  int stopped;              /* no callback may run any more */
  int done;                 /* the stop (or the close) was taken: freed once no read is out */
  int reading;              /* a read is out */
  int again;                /* an announcement came during the read: one more after it */
  int seen;                 /* on_change ran once: `view` is what it last said */
  unsigned settling;        /* reads in a row that found the view unsettled */
  redlock_leader_t view;
  inspect_replies_t r; /* each master's answer to the read out */
};

static void timer_closed(tb_timer_t *timer) { rl_free(timer); }

void observer_free(redlock_observer_t *o) {
  if (o->timer != NULL) {
    if (o->timer_ready)
      tb_timer_close(o->timer, timer_closed);
    else
      rl_free(o->timer);
  }
  inspect_replies_free(&o->r);
  inspect_keys_free(&o->keys);
  rl_free(o->channel);
  rl_free(o->name);
  rl_free(o);
}

/* Stops its timer and its announcements: nothing starts a read any more. */
static void observer_halt(redlock_observer_t *o) {
  o->stopped = 1;
  o->done = 1;
  if (o->timer_ready)
    tb_timer_stop(o->timer);
  notify_unwatch(o->engine->notify, &o->watcher);
  if (list_linked(&o->link))
    list_remove(&o->link);
}

/* Frees a halted observer now, unless a read is out (its decision does). */
static void observer_release(redlock_observer_t *o) {
  if (!o->reading)
    observer_free(o);
}

static void observer_read(redlock_observer_t *o);

static void read_timer_cb(tb_timer_t *timer) { observer_read(timer->data); }

/* The next read, ms from now. */
static void observer_schedule(redlock_observer_t *o, uint64_t ms) {
  if (tb_timer_start(o->timer, read_timer_cb, ms) != 0)
    engine_log(o->engine, REDLOCK_LOG_ERROR, "observer of %s: cannot start its timer", o->name);
}

/* An announcement on the channel (notify.c): read now, or once more after
 * the read that is out. */
static void observer_heard(notify_watcher_t *w) {
  redlock_observer_t *o = container_of(w, redlock_observer_t, watcher);
  if (o->done)
    return;
  if (o->reading)
    o->again = 1;
  else
    observer_schedule(o, 0);
}

static void on_observe_reply(void *ctx, unsigned index, const redisReply *reply) {
  redlock_observer_t *o = ctx;
  inspect_replies_keep(&o->r, index, reply);
}

/* When the next read is due without an announcement: the poll, or the end
 * of the lease seen, whichever comes first; after a read too few masters
 * answered (a slow or partitioned moment), the retry delay if sooner: an
 * announcement missed meanwhile would otherwise wait for the poll. */
static uint64_t observer_retry_ms(const redlock_observer_t *o) {
  return o->engine->opts->retry_delay_ms > 0 ? o->engine->opts->retry_delay_ms : 1;
}

static uint64_t observer_next_ms(const redlock_observer_t *o) {
  uint64_t ms = o->poll_ms;
  uint64_t retry = observer_retry_ms(o);
  if (o->seen && o->view.state == REDLOCK_LEADER_UNKNOWN && retry < ms)
    ms = retry;
  if (o->seen && o->view.state == REDLOCK_LEADER_HELD &&
      (uint64_t)o->view.ttl_ms + OBSERVE_LEASE_END_SLACK_MS < ms)
    ms = (uint64_t)o->view.ttl_ms + OBSERVE_LEASE_END_SLACK_MS;
  return ms;
}

static int view_changed(const redlock_leader_t *a, const redlock_leader_t *b) {
  return a->state != b->state || a->term != b->term || strcmp(a->owner, b->owner) != 0;
}

static void on_observe_decided(round_t *round, quorum_outcome_t outcome, void *ctx) {
  (void)round;
  (void)outcome;
  redlock_observer_t *o = ctx;
  o->reading = 0;
  if (o->done) {
    observer_free(o); /* stopped or closed while the read was out */
    return;
  }
  if (!o->r.nomem) {
    redlock_leader_t view;
    int settled, complete;
    leader_view(&o->r, &view, &settled, &complete);
    /* A leader not seen before, read without every master's answer, is
     * read once more: the master that drew its term may be the one that did
     * not answer, and the others' counters may all lag the term alike (its
     * fence commit under way), which they alone do not show. */
    int fresh = view.state == REDLOCK_LEADER_HELD && (!o->seen || view_changed(&view, &o->view));
    if ((!settled || (fresh && !complete)) && o->settling < OBSERVE_SETTLE_READS && !o->stopped) {
      /* Again before telling: a commit may be under way.  At once the
       * first time; then after the retry delay, for a master slow to take
       * its commit. */
      observer_schedule(o, o->settling++ == 0 ? 0 : observer_retry_ms(o));
      inspect_replies_clear(&o->r);
      return;
    }
    o->settling = 0;
    int changed = !o->seen || view_changed(&view, &o->view);
    o->view = view; /* the ttl too: the lease's end is read from it */
    o->seen = 1;
    engine_t *engine = o->engine;
    if (changed && !o->stopped && engine->owner->is_open(engine->owner_arg))
      o->on_change(o, &o->view, o->arg);
  } else {
    engine_log(o->engine, REDLOCK_LOG_WARN,
               "observer of %s: out of memory for a read; reading again later", o->name);
  }
  inspect_replies_clear(&o->r);
  /* A stop from inside on_change is queued: its op frees the handle. */
  if (o->stopped || o->done)
    return;
  if (o->again) {
    o->again = 0;
    observer_schedule(o, 0);
  } else {
    observer_schedule(o, observer_next_ms(o));
  }
}

static void observer_read(redlock_observer_t *o) {
  if (o->done || o->stopped || o->reading)
    return;
  /* The channel, if a first read ran without it (out of memory then). */
  if (o->watcher.channel == NULL)
    (void)notify_watch(o->engine->notify, &o->watcher, o->channel, o->channel_len);
  round_t *round = NULL;
  if (inspect_round(o->engine, &o->keys, on_observe_decided, on_observe_reply, o, &round) !=
      ST_OK) {
    engine_log(o->engine, REDLOCK_LOG_WARN,
               "observer of %s: out of memory for a read; reading again later", o->name);
    observer_schedule(o, o->poll_ms);
    return;
  }
  o->reading = 1;
  o->again = 0;
  round_send(round); /* may decide at once (masters down) */
}

/* ---- loop side of the calls ------------------------------------------------------ */

static const op_ops_t observe_start_ops;
static const op_ops_t observe_stop_ops;

static void observe_start_dispatch(op_t *op) {
  engine_t *engine = op->engine;
  redlock_observer_t *o = OP_AS(redlock_observer_t, op, &observe_start_ops, start_op);
  o->started = 1;
  if (o->done) { /* its stop was taken first (this op was parked) */
    observer_free(o);
    return;
  }
  if (o->stopped) /* stopped on the loop thread: its stop op, queued, frees it */
    return;
  list_insert_tail(&engine->observers, &o->link);
  if (tb_timer_init(engine->tb, o->timer, o) != 0) {
    /* It never reads; a stop or the close frees it. */
    engine_log(engine, REDLOCK_LOG_ERROR, "observer of %s: cannot make its timer", o->name);
    o->stopped = 1;
    return;
  }
  o->timer_ready = 1;
  /* Out of memory the observer polls (observer_read tries again). */
  (void)notify_watch(engine->notify, &o->watcher, o->channel, o->channel_len);
  observer_read(o);
}

/* A close before the masters' first attempts: the start is failed. */
static void observe_start_fail(op_t *op, status_t status) {
  (void)status;
  redlock_observer_t *o = OP_AS(redlock_observer_t, op, &observe_start_ops, start_op);
  if (list_linked(&op->link))
    list_remove(&op->link); /* the close put it among the ops in flight */
  o->started = 1;
  o->stopped = 1;
  o->done = 1;
  observer_free(o);
}

/* The stop.  FIFO: a close comes after it. */
static void observe_stop_dispatch(op_t *op) {
  redlock_observer_t *o = OP_AS(redlock_observer_t, op, &observe_stop_ops, stop_op.op);
  uv_sem_t *done = o->stop_op.done;
  observer_halt(o);
  if (o->started)
    observer_release(o);
  /* Else its start op, parked, frees it when it is taken. */
  if (done != NULL)
    uv_sem_post(done);
}

/* The stop op lives in the handle and is no acquisition: never failed nor
 * freed by anyone else (a call here is a bug of the library). */
static void observe_op_abort(op_t *op, status_t status) {
  (void)op;
  (void)status;
  abort();
}

static void observe_op_free(op_t *op) {
  (void)op;
  abort();
}

static const op_ops_t observe_start_ops = {.name = "observe",
                                           .acquires = 1,
                                           .dispatch = observe_start_dispatch,
                                           .fail = observe_start_fail,
                                           .free = observe_op_free};
static const op_ops_t observe_stop_ops = {.name = "observe_stop",
                                          .acquires = 0,
                                          .dispatch = observe_stop_dispatch,
                                          .fail = observe_op_abort,
                                          .free = observe_op_free};

void observer_close_all(engine_t *engine) {
  uv_mutex_lock(engine->mutex);
  ptrset_free(&engine->live_observers); /* stop now gets ECLOSED */
  ptrset_init(&engine->live_observers);
  uv_mutex_unlock(engine->mutex);
  while (!list_empty(&engine->observers)) {
    redlock_observer_t *o = list_entry(engine->observers.next, redlock_observer_t, link);
    observer_halt(o);
    observer_release(o);
  }
}

/* ---- what the public calls (calls_election.c) build on ------------------------- */

status_t observer_new(engine_t *engine, const char *name, uint32_t poll_ms,
                      redlock_leader_cb on_change, void *arg, redlock_observer_t **out) {
  redlock_observer_t *o = rl_calloc(1, sizeof *o);
  if (o == NULL)
    return ST_ENOMEM;
  list_init(&o->link);
  size_t name_len = strlen(name);
  const char *prefix = engine->opts->key_prefix;
  size_t prefix_len = engine->opts->key_prefix_len, key_len = prefix_len + name_len;
  o->name = rl_malloc(name_len + 1);
  o->timer = rl_malloc(sizeof *o->timer);
  /* The key, then its channel (keyname.h: the key with its tag added). */
  o->channel = rl_malloc(key_len + 1 + sizeof NOTIFY_CHANNEL_PREFIX + key_len + KEYNAME_TAG_LEN);
  if (o->name == NULL || o->timer == NULL || o->channel == NULL ||
      inspect_keys_make(engine, name, REDLOCK_INSPECT_ELECTION, &o->keys) != ST_OK ||
      inspect_replies_init(&o->r, engine->rounds->n_masters) != ST_OK) {
    observer_free(o);
    return ST_ENOMEM;
  }
  memcpy(o->name, name, name_len + 1);
  char *key = o->channel + sizeof NOTIFY_CHANNEL_PREFIX + key_len + KEYNAME_TAG_LEN;
  memcpy(key, prefix, prefix_len);
  memcpy(key + prefix_len, name, name_len + 1);
  o->channel_len = keyname_build(o->channel, PRIM_LIT(NOTIFY_CHANNEL_PREFIX), key, key_len, "", 0);
  o->engine = engine;
  o->poll_ms = poll_ms != 0 ? poll_ms : engine->opts->retry_delay_ms;
  if (o->poll_ms == 0)
    o->poll_ms = 1;
  o->on_change = on_change;
  o->arg = arg;
  o->watcher.heard = observer_heard;
  o->start_op.ops = &observe_start_ops;
  o->start_op.engine = engine;
  o->stop_op.op.ops = &observe_stop_ops;
  o->stop_op.op.engine = engine;
  *out = o;
  return ST_OK;
}

op_t *observer_start_op(redlock_observer_t *o) { return &o->start_op; }

op_t *observer_stop_op(redlock_observer_t *o, uv_sem_t *done) {
  if (done != NULL)
    o->stop_op.done = done;
  else
    o->stopped = 1; /* we are the loop: no callback of this observer runs from now on */
  return &o->stop_op.op;
}
