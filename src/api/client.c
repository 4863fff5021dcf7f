/* client.c: redlock_t, the composition root.  Opens a client: makes the
 * struct and the options snapshot, composes the modules below (what each
 * gets from the client, and the hooks through which it reports back), and
 * frees it all; and tells whether this process still owns it (the fork
 * guard, asked by every public call).  The loop side (thread, submit queue,
 * deadline timer) is in client_loop.c, the close in client_close.c. */
#define _DEFAULT_SOURCE /* madvise, MADV_WIPEONFORK, MAP_ANONYMOUS */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/client.h"
#include "api/stats.h"
#include "engine/lock.h"
#include "redlock_uv.h"
#include "util/alloc.h"
#include "util/status.h"

/* ---- small services ----------------------------------------------------------------- */

uint64_t client_now_ns(const redlock_t *client) { return tb_now_ns(&client->timebase); }

/* The fork guard (client.h says why this way). */
void fork_guard_init(fork_guard_t *g) {
  g->page = NULL;
  g->len = 0;
  g->pid = getpid();
#ifdef MADV_WIPEONFORK
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0)
    return;
  void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return;
  if (madvise(p, (size_t)page, MADV_WIPEONFORK) != 0) { /* kernel older than 4.14 */
    munmap(p, (size_t)page);
    return;
  }
  *(int *)p = 1;
  g->page = p;
  g->len = (size_t)page;
#endif
}

int fork_guard_forked(const fork_guard_t *g) {
  if (g->page != NULL)
    return *g->page == 0;
  return getpid() != g->pid;
}

void fork_guard_free(fork_guard_t *g) {
  if (g->page != NULL)
    munmap((void *)(uintptr_t)g->page, g->len);
  g->page = NULL;
}

status_t client_check_fork(const redlock_t *client) {
  return fork_guard_forked(&client->fork_guard) ? ST_EFORKED : ST_OK;
}

/* The struct's own memory, last: from here the allocator may change again
 * (once no other client is open). */
static void client_dealloc(redlock_t *client) {
  rl_free(client);
  alloc_release();
}

void client_free(redlock_t *client) {
  /* The client is closed (or was never handed out): no call enters any more.
   * Those still in (redlock_stats) leave before anything is freed; taking
   * the mutex also orders before the free whatever a call read before it
   * last took the mutex (the fork check, a refused call's arguments). */
  uv_mutex_lock(&client->mutex);
  while (client->queue.callers > 0)
    uv_cond_wait(&client->queue.callers_left, &client->mutex);
  uv_mutex_unlock(&client->mutex);
  notify_free(&client->notify);
  stats_free(client->stats);
  voters_free(&client->voters);
  votes_book_free(&client->votes);
  fork_guard_free(&client->fork_guard);
  tls_client_free(client->tls);
  engine_free(&client->engine);
  pool_clear(&client->round_pool);
  options_clear(&client->opts);
  uv_cond_destroy(&client->queue.callers_left);
  uv_mutex_destroy(&client->mutex);
  if (client->run.own_thread)
    uv_sem_destroy(&client->run.startup_sem);
  client_dealloc(client);
}

/* ---- composition: what the modules below get from the client ------------------------ */

/* voters_hooks_t.news: a voter's news, for stats and events. */
static void client_on_voter(void *arg, unsigned index, const voter_news_t *news) {
  redlock_t *client = arg;
  if (client->stats != NULL)
    stats_voter_news_(client->stats, index, news);
}

/* voters_hooks_t.started: every voter had its first connection attempt. */
static void client_voters_started(void *arg) { client_loop_started(arg); }

static void client_voters_arm(void *arg, uint64_t due_ns) { client_arm_deadline(arg, due_ns); }

/* Something settled (a voter, a round, an op): a draining close may go on.
 * Judged here, so that an open client's every op and round does not enter
 * the close's module. */
static void close_progress(redlock_t *client) {
  if (client->close.phase == CLOSE_DRAINING)
    client_maybe_finish_close(client);
}

static void client_voters_settled(void *arg) { close_progress(arg); }

static void client_voters_closed(void *arg) { client_module_closed(arg); }

static void rounds_arm_deadline(void *arg, uint64_t deadline_ns) {
  client_arm_deadline(arg, deadline_ns);
}

static void rounds_settled(void *arg) { close_progress(arg); }

/* round_env_t.decided: a caller's round was decided (redlock_last_votes):
 * the client's latest, and the calling thread's own. */
static void client_record_votes(void *arg, const round_t *round) {
  redlock_t *client = arg;
  votes_entry_t *latest = &client->votes.latest;
  uv_mutex_lock(&client->mutex);
  for (unsigned i = 0; i < round->n_votes; i++) {
    latest->why[i] = round->votes[i].why;
    /* A down master's vote carries why it is down (TLS and AUTH failures
     * are otherwise only in the log), a duplicate's whose it is. */
    voters_why(&client->voters, i, round->votes[i].why, &round->votes[i].req, latest->detail[i],
               VOTER_WHY_LEN);
  }
  latest->outcome = (int)round->outcome;
  if (round->has_caller)
    votes_book_copy_latest_to(&client->votes, &round->caller);
  uv_mutex_unlock(&client->mutex);
}

/* notify_t.wake: a release was announced for what a waiting call waits on. */
static void client_wake_waiter(void *arg, notify_waiter_t *w) {
  (void)arg;
  lock_wake(w);
}

/* Fills in what the modules get from the client (the loop comes with
 * client_loop_init, the stats after stats_new). */
static status_t client_compose(redlock_t *client, voter_t *const *fakes) {
  const redlock_options_t *opts = &client->opts;
  const voters_config_t cfg = {
      .tb = &client->timebase,
      .flusher = &client->run.flusher,
      .tls = client->tls,
      .log = &client->log,
      .rng = &client->random.rng,
      .mutex = &client->mutex,
      .connect_timeout_ms = opts->connect_timeout_ms,
      .request_timeout_ms = opts->request_timeout_ms,
      .max_ttl_ms = opts->max_ttl_ms,
      .quarantine = opts->quarantine,
      .state_dir = opts->state_dir,
      .allow = (const char *const *)opts->allow_discovered,
      .n_allow = opts->n_allow_discovered,
  };
  const voters_hooks_t hooks = {
      .started = client_voters_started,
      .news = client_on_voter,
      .arm = client_voters_arm,
      .settled = client_voters_settled,
      .closed = client_voters_closed,
      .arg = client,
  };
  int rc = voters_init(&client->voters, &cfg, &hooks, opts->nodes, (unsigned)opts->n_nodes, fakes);
  round_env_init(&client->rounds);
  client->rounds.n_masters = (unsigned)opts->n_nodes;
  client->rounds.request_timeout_ns = (uint64_t)opts->request_timeout_ms * 1000000u;
  client->rounds.transport = &voters_transport;
  client->rounds.transport_arg = &client->voters;
  client->rounds.log = &client->log;
  client->rounds.pool = &client->round_pool;
  client->rounds.skip_slots = rc == 0 && !voters_route_by_slot(&client->voters);
  client->rounds.caps_seen = &client->voters.caps_seen;
  client->rounds.arm_deadline = rounds_arm_deadline;
  client->rounds.settled = rounds_settled;
  client->rounds.decided = client_record_votes;
  client->rounds.owner_arg = client;
  client->rounds.tb = &client->timebase;
  voters_notify_init(&client->voters, &client->notify, client_wake_waiter, client);
  return rc;
}

/* engine_owner_t: what the engine asks of the client. */
static void engine_op_ended(void *arg) { close_progress(arg); }
static void engine_run(void *arg, op_t *op) { client_run_or_park(arg, op); }
static int engine_is_open(void *arg) {
  redlock_t *client = arg;
  uv_mutex_lock(&client->mutex);
  int open = client->queue.state == CLIENT_OPEN;
  uv_mutex_unlock(&client->mutex);
  return open;
}
static const engine_owner_t engine_owner = {
    .op_ended = engine_op_ended,
    .run = engine_run,
    .is_open = engine_is_open,
};

/* What the engine gets from the client (the stats and their hooks come
 * after stats_new, the clock with the loop). */
static void client_compose_engine(redlock_t *client) {
  engine_t *engine = &client->engine;
  engine->opts = &client->opts;
  engine->log = &client->log;
  engine->tb = &client->timebase;
  engine->rounds = &client->rounds;
  engine->notify = &client->notify;
  engine->owner = &engine_owner;
  engine->owner_arg = client;
  engine->rng = &client->random.rng;
  engine->values = &client->random.values;
  engine->mutex = &client->mutex;
}

const char *client_master_label(void *arg, unsigned master) {
  redlock_t *client = arg;
  return voters_label(&client->voters, master);
}

/* On the loop thread, the only writer of what a voter's detail reads: no
 * lock is needed (and the event callback may take the client's). */
static void client_vote_detail(void *arg, unsigned master, int why, const node_req_t *req,
                               char *buf, size_t size) {
  redlock_t *client = arg;
  voters_why(&client->voters, master, why, req, buf, size);
}

/* What the stats read (their figures come after the nodes, in client_new). */
static void client_compose_stats(redlock_t *client) {
  client->stats_env = (stats_env_t){
      .opts = &client->opts,
      .rounds = &client->rounds,
      .tb = &client->timebase,
      .n_masters = (unsigned)client->opts.n_nodes,
      .quorum = quorum_size((unsigned)client->opts.n_nodes),
      .label = client_master_label,
      .vote_detail = client_vote_detail,
      .label_arg = client,
  };
}

/* ---- open ----------------------------------------------------------------------------- */

/* The struct and what even its free needs: the mutex, the callers'
 * condition and the options' snapshot.  The allocator is held from here
 * until client_dealloc.  ST_OK or ST_ENOMEM (nothing left behind). */
static status_t client_alloc(redlock_t **out, const redlock_options_t *opts) {
  alloc_hold();
  redlock_t *client = rl_calloc(1, sizeof *client);
  if (client == NULL) {
    alloc_release();
    return ST_ENOMEM;
  }
  if (uv_cond_init(&client->queue.callers_left) != 0) {
    client_dealloc(client);
    return ST_ENOMEM;
  }
  if (uv_mutex_init(&client->mutex) != 0) {
    uv_cond_destroy(&client->queue.callers_left);
    client_dealloc(client);
    return ST_ENOMEM;
  }
  if (options_copy(&client->opts, opts) != ST_OK) {
    uv_mutex_destroy(&client->mutex);
    uv_cond_destroy(&client->queue.callers_left);
    client_dealloc(client);
    return ST_ENOMEM;
  }
  *out = client;
  return ST_OK;
}

/* What cannot fail: the clock, the log, the fork guard, the empty queues and
 * pools, and the envs of the engine and the stats. */
static void client_init_basics(redlock_t *client, uv_loop_t *loop, const timebase_t *tb) {
  const redlock_options_t *opts = &client->opts;
  if (tb != NULL)
    client->timebase = *tb;
  else
    timebase_uv_init(&client->timebase, loop != NULL ? loop : &client->run.own_loop);
  client->log = (log_sink_t){.cb = opts->log_cb, .arg = opts->log_arg, .level = opts->log_level};
  fork_guard_init(&client->fork_guard);
  pool_init(&client->round_pool);
  list_init(&client->queue.ops);
  list_init(&client->queue.parked);
  list_init(&client->run.wakes);
  client_compose_engine(client);
  client_compose_stats(client);
}

/* One SSL_CTX for the client when a master is rediss://: trust store and
 * client key loaded once, shared by every TLS connection (all on the loop
 * thread).  ST_OK (also with no TLS master), or tls_client_new's status. */
static status_t client_open_tls(redlock_t *client) {
  for (size_t i = 0; i < client->opts.n_nodes; i++) {
    if (!client->opts.nodes[i].tls)
      continue;
    char why[384];
    status_t rc = tls_client_new(&client->tls, &client->opts, why, sizeof why);
    if (rc != ST_OK)
      client_log(client, REDLOCK_LOG_ERROR, "redlock_open: TLS: %s", why);
    else if (!client->opts.tls_verify)
      /* Once per client, here: a per-connection warning would repeat on
       * every reconnect and drown the log. */
      client_log(client, REDLOCK_LOG_WARN,
                 "redlock_open: TLS certificate verification is off "
                 "(redlock_options_set_tls_verify 0): rediss:// connections are encrypted but "
                 "any server can pose as a master");
    return rc;
  }
  return ST_OK;
}

/* The stats (NULL when off), and the modules that count into them. */
static status_t client_attach_stats(redlock_t *client) {
  status_t rc = stats_new(&client->stats_env, &client->stats);
  if (rc == ST_OK && client->stats != NULL) {
    client->rounds.stats = client->stats;
    client->engine.stats = client->stats;
    client->engine.hooks = &stats_engine_hooks;
    client->engine.hooks_arg = client->stats;
    voters_set_stats(&client->voters, client->stats);
  }
  return rc;
}

/* The modules below, in order.  The voters and rounds are composed even
 * when an earlier step failed, so that client_free finds every module in a
 * state it can free. */
static status_t client_init_modules(redlock_t *client, voter_t *const *fakes) {
  status_t votes_rc = votes_book_init(&client->votes, (unsigned)client->opts.n_nodes);
  status_t mem_rc = engine_init(&client->engine);
  status_t rc = votes_rc == ST_OK && mem_rc == ST_OK ? ST_OK : ST_ENOMEM;
  if (rc == ST_OK)
    rc = client_open_tls(client);
  status_t compose_rc = client_compose(client, fakes);
  if (rc == ST_OK)
    rc = compose_rc;
  if (rc == ST_OK)
    rc = client_attach_stats(client);
  return rc;
}

/* The jitter generator, seeded from the system: ST_OK or random_bytes' status. */
static status_t client_seed_jitter(redlock_t *client) {
  uint64_t seed = 0;
  status_t rc = random_bytes(&seed, sizeof seed);
  if (rc == ST_OK)
    jitter_rng_seed(&client->random.rng, seed);
  return rc;
}

/* loop: the caller's (redlock_open_uv), or NULL for the client's own; tb:
 * the clock and timers, or NULL for libuv's on that loop; fakes: the unit
 * tests' voters, or NULL for the options' masters. */
static status_t client_new(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop,
                           const timebase_t *tb, voter_t *const *fakes) {
  if (out == NULL)
    return ST_EINVAL;
  *out = NULL;
  if (opts == NULL || opts->n_nodes == 0)
    return ST_EINVAL;
  redlock_t *client;
  status_t rc = client_alloc(&client, opts);
  if (rc != ST_OK)
    return rc;
  client_init_basics(client, loop, tb);
  rc = client_init_modules(client, fakes);
  if (rc == ST_OK)
    rc = client_seed_jitter(client);
  if (rc != ST_OK) {
    client_free(client);
    return rc;
  }
  *out = client;
  return ST_OK;
}

int redlock_open(redlock_t **out, const redlock_options_t *opts) {
  if (out == NULL)
    return REDLOCK_EINVAL;
  *out = NULL;
  redlock_t *client;
  int rc = client_new(&client, opts, NULL, NULL, NULL);
  if (rc != 0)
    return rc;
  client->run.own_thread = 1;
  if (uv_sem_init(&client->run.startup_sem, 0) != 0) {
    client->run.own_thread = 0;
    client_free(client);
    return REDLOCK_EIO;
  }
  /* libuv's allocation failing is ENOMEM; anything else (no descriptor
   * left for its pipes, ...) is EIO. */
  rc = uv_loop_init(&client->run.own_loop);
  if (rc != 0) {
    client_free(client);
    return rc == UV_ENOMEM ? REDLOCK_ENOMEM : REDLOCK_EIO;
  }
  if (client_loop_init(client, &client->run.own_loop) != 0) {
    uv_loop_close(&client->run.own_loop);
    client_free(client);
    return REDLOCK_EIO;
  }
  if (client_loop_start_thread(client) != ST_OK) {
    client_free(client);
    return REDLOCK_EIO;
  }
  /* Bounded by the connect timeout: every voter's first attempt has a timer. */
  uv_sem_wait(&client->run.startup_sem);
  *out = client;
  return 0;
}

int redlock_open_uv(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop) {
  if (out == NULL)
    return REDLOCK_EINVAL;
  *out = NULL;
  if (loop == NULL)
    return REDLOCK_EINVAL;
  redlock_t *client;
  int rc = client_new(&client, opts, loop, NULL, NULL);
  if (rc != 0)
    return rc;
  rc = client_loop_init(client, loop);
  if (rc != 0) {
    client_free(client);
    return rc;
  }
  voters_start(&client->voters);
  *out = client;
  return 0;
}

status_t client_open_for_test(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop,
                              voter_t *const *fakes, const timebase_t *tb) {
  redlock_t *client;
  if (fakes == NULL || tb == NULL)
    return ST_EINVAL;
  int rc = client_new(out, opts, loop, tb, fakes);
  if (rc != 0)
    return rc;
  client = *out;
  rc = client_loop_init(client, loop);
  if (rc != 0) {
    *out = NULL;
    client_free(client);
    return rc;
  }
  return ST_OK;
}
