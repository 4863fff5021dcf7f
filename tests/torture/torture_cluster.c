/* torture_cluster.c: the torture driver's cluster voter and its faults (see
 * torture_cluster.h; the schedule of them is torture_schedule.c's).
 *
 * Shard s (0..2) is nodes s and s + 3 of the harness (primary s as started,
 * its replica): roles swap with failovers, so a shard's primary is asked
 * (ROLE) each time.  Faults, one at a time (the schedule spaces them):
 *  - reshard: `CLI --cluster reshard` moves a primary's lowest slots first,
 *    so moving (slots below the lock key's) + 1 + a few hundred carries the
 *    slot of lock key r<i> (and its held key, by MIGRATE, with its TTL) to
 *    another primary, while the workers lock through MOVED and ASK;
 *  - cluster-failover: CLUSTER FAILOVER on the shard's replica (graceful:
 *    no write lost); the promoted replica is a new master for the clients'
 *    failover quarantine all the same;
 *  - primary-kill: SIGKILL of the shard's primary.  Alone, the cluster
 *    promotes the replica by itself after the node timeout.  After a
 *    replica cut (the replica SIGSTOPped and its link killed on the
 *    primary, so that it misses what the primary granted meanwhile) the
 *    replica is resumed and promoted at once with CLUSTER FAILOVER
 *    TAKEOVER, as an operator would: it lacks keys (the log says how many)
 *    while grants resting on them are still valid, and only the failover
 *    quarantine keeps a second holder out.  At the end the old primary
 *    restarts empty with its node config and rejoins as the new primary's
 *    replica;
 *  - script-flush, client-kill, client-kill-pubsub: on a shard's primary
 *    (client-kill is skipped during a reshard: it would kill the cli's
 *    connections and leave a slot half-moved). */
#define _GNU_SOURCE
#include "torture_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <hiredis/hiredis.h>

#include "cluster_harness.h"
#include "fixture.h"
#include "torture_common.h"

#define SHARDS 3
#define RESHARD_MAX_SLOTS 800u /* 3 ms a slot on Redis 7.0, 11 ms on Redis 8 and Valkey: under 9 s */
#define RESHARD_WAIT_MS 90000
#define SETTLE_MS 20000
#define SNAP_MAX 128

/* The driver's thread only (the schedule loop). */
static ch_cluster_t *cl;
static tcl_log_fn flog;
static int n_resources;
static tcl_stats_t stats;
static int reshard_pid = -1;  /* the cli's child while a reshard runs */
static int cut_node = -1;     /* the replica SIGSTOPped by a replica cut */
static uint64_t cut_until_ns; /* when the cut has lasted its planned length */
static int killed_node = -1;  /* the primary killed, until it restarts */
static int heir_node = -1;    /* its replica, promoted (or to be) */

static void warn(const char *what) {
  stats.warnings++;
  flog("WARNING: could not inject %s on the cluster", what);
  fprintf(stderr, "torture: warning: could not inject %s on the cluster\n", what);
}

/* The shard's primary (ROLE), or -1.  A SIGSTOPped replica is not asked:
 * it would not answer before the harness's 2 s timeout. */
static int primary_of(int shard) {
  for (int node = shard; node < 2 * SHARDS; node += SHARDS)
    if (node != cut_node && ch_is_master(cl, (unsigned)node))
      return node;
  return -1;
}

static int other_node(int node) { return node < SHARDS ? node + SHARDS : node - SHARDS; }

/* ---- slots --------------------------------------------------------------------------- */

static int key_slot(int r) {
  char buf[64];
  for (unsigned i = 0; i < ch_count(cl); i++)
    if (rh_server_pid(ch_node(cl, i)) != 0 &&
        rh_server_command(ch_node(cl, i), buf, sizeof buf, "CLUSTER KEYSLOT %sr%d",
                          TORTURE_KEY_PREFIX, r) == 0)
      return atoi(buf);
  return -1;
}

typedef struct {
  int slot;
  unsigned below, total;
} own_t;

static void count_range(long a, long b, void *arg) {
  own_t *o = arg;
  o->total += (unsigned)(b - a + 1);
  if (a < o->slot)
    o->below += (unsigned)((b < o->slot ? b : o->slot - 1) - a + 1);
}

/* How many slots node owns (its own "myself" line of CLUSTER NODES), and
 * how many of them are below slot.  -1 when it cannot say. */
static int own_slots(int node, int slot, unsigned *below, unsigned *total) {
  static char nodes[32768];
  *below = *total = 0;
  if (rh_server_command(ch_node(cl, (unsigned)node), nodes, sizeof nodes, "CLUSTER NODES") != 0)
    return -1;
  char *line = ch_myself_line(nodes);
  if (line == NULL)
    return -1;
  own_t o = {slot, 0, 0};
  ch_line_ranges(line, count_range, &o);
  *below = o.below;
  *total = o.total;
  return 0;
}

static void reshard_start(const event_t *e) {
  if (!ch_wait_ok(cl, SETTLE_MS)) {
    warn("reshard (the cluster is not ok)");
    return;
  }
  /* The picked lock key, or the next one whose slot a reshard of at most
   * RESHARD_MAX_SLOTS can carry (a primary's lowest slots move first). */
  int r = -1, slot = -1, from = -1;
  unsigned below = 0, total = 0;
  for (int k = 0; k < n_resources; k++) {
    r = (int)((e->pick + (unsigned)k) % (unsigned)n_resources);
    slot = key_slot(r);
    from = slot >= 0 ? ch_owner(cl, 0, slot) : -1;
    if (from < 0 || own_slots(from, slot, &below, &total) != 0 || total < 2) {
      warn("reshard (no owner of the lock key's slot)");
      return;
    }
    if (below + 1 < total && below + 1 <= RESHARD_MAX_SLOTS)
      break;
  }
  int to_shard = (from % SHARDS + 1 + (int)((e->pick / 64u) % 2u)) % SHARDS;
  int to = primary_of(to_shard);
  /* Never every slot: a primary left without any turns replica of the new
   * owner (cluster-allow-replica-migration), and the shards would mix. */
  unsigned n = below + 1 + (e->pick / 128u) % 200u;
  if (n > total - 1)
    n = total - 1;
  if (n > RESHARD_MAX_SLOTS)
    n = RESHARD_MAX_SLOTS;
  if (to < 0) {
    warn("reshard (no primary to move to)");
    return;
  }
  reshard_pid = ch_reshard_start(cl, (unsigned)from, (unsigned)to, n);
  if (reshard_pid < 0) {
    warn("reshard (the cli did not start)");
    return;
  }
  int carries = n > below;
  stats.reshards++;
  stats.slots_moved += n;
  stats.lock_slot_moves += (unsigned)carries;
  flog("cluster: reshard of %u slots from node %d (port %d) to node %d (port %d) started; r%d's "
       "slot %d (%u of the source's slots below it) %s",
       n, from, ch_port(cl, (unsigned)from), to, ch_port(cl, (unsigned)to), r, slot, below,
       carries ? "moves with them" : "stays (too far up)");
}

static void reshard_end(void);

/* The reshard's end event: the cli's child is reaped if it is done, else
 * left to run (the next cluster fault, or tcl_heal, waits for it): the
 * driver goes on with the masters' faults meanwhile. */
static void reshard_poll(void) {
  siginfo_t info = {0};
  if (reshard_pid >= 0 &&
      waitid(P_PID, (id_t)reshard_pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0)
    flog("cluster: the reshard still runs: the next cluster fault waits for it");
  else
    reshard_end();
}

static void reshard_end(void) {
  if (reshard_pid < 0)
    return;
  uint64_t t0 = torture_now_ns();
  int rc = ch_reshard_wait(cl, reshard_pid, RESHARD_WAIT_MS);
  reshard_pid = -1;
  if (rc != 0) {
    stats.reshards_failed++;
    warn("reshard (the cli failed: its output is on stderr)");
  }
  flog("cluster: reshard %s (waited %.0f ms for the cli)", rc == 0 ? "done" : "FAILED",
       (double)(torture_now_ns() - t0) / 1e6);
}

/* ---- lock keys on a primary and on its replica -------------------------------------- */

typedef struct {
  int n;
  char key[SNAP_MAX][64], val[SNAP_MAX][96];
} snapshot_t;

static redisContext *connect_node(int node) {
  struct timeval tv = {.tv_sec = 1, .tv_usec = 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", ch_port(cl, (unsigned)node), tv);
  if (c != NULL && (c->err || redisSetTimeout(c, tv) != REDIS_OK)) {
    redisFree(c);
    c = NULL;
  }
  return c;
}

/* The lock keys (string keys under the prefix with more than 100 ms to
 * live) the primary holds and their values. */
static void take_snapshot(int node, snapshot_t *snap) {
  snap->n = 0;
  redisContext *c = connect_node(node);
  if (c == NULL)
    return;
  redisReply *keys = redisCommand(c, "KEYS %s*", TORTURE_KEY_PREFIX);
  for (size_t i = 0;
       keys != NULL && keys->type == REDIS_REPLY_ARRAY && i < keys->elements && snap->n < SNAP_MAX;
       i++) {
    const char *k = keys->element[i]->str;
    redisReply *v = redisCommand(c, "GET %s", k);
    redisReply *t = redisCommand(c, "PTTL %s", k);
    if (v != NULL && v->type == REDIS_REPLY_STRING && t != NULL && t->type == REDIS_REPLY_INTEGER &&
        t->integer > 100) {
      snprintf(snap->key[snap->n], sizeof snap->key[0], "%s", k);
      snprintf(snap->val[snap->n], sizeof snap->val[0], "%s", v->str);
      snap->n++;
    }
    if (v != NULL)
      freeReplyObject(v);
    if (t != NULL)
      freeReplyObject(t);
  }
  if (keys != NULL)
    freeReplyObject(keys);
  redisFree(c);
}

/* How many of the snapshot's keys the replica lacks (READONLY reads); -1
 * when it cannot be asked. */
static int count_lacking(int node, const snapshot_t *snap) {
  redisContext *c = connect_node(node);
  if (c == NULL)
    return -1;
  redisReply *ro = redisCommand(c, "READONLY");
  int lacking = ro != NULL ? 0 : -1;
  if (ro != NULL)
    freeReplyObject(ro);
  for (int i = 0; i < snap->n && lacking >= 0; i++) {
    redisReply *r = redisCommand(c, "GET %s", snap->key[i]);
    if (r == NULL)
      lacking = -1;
    else if (r->type != REDIS_REPLY_STRING || strcmp(r->str, snap->val[i]) != 0)
      lacking++;
    if (r != NULL)
      freeReplyObject(r);
  }
  redisFree(c);
  return lacking;
}

/* ---- failovers and kills ----------------------------------------------------------- */

/* The shard whose primary holds lock key r<pick % R> (so that a failover or
 * a kill touches granted keys); pick % 3 when no owner is known. */
static int shard_of_pick(unsigned pick) {
  int slot = key_slot((int)(pick % (unsigned)n_resources));
  int owner = slot >= 0 ? ch_owner(cl, 0, slot) : -1;
  return owner >= 0 ? owner % SHARDS : (int)(pick % SHARDS);
}

/* Full syncs start at once (the restarted primary rejoins as a replica:
 * its first sync must not wait out the 5 s diskless delay). */
static void no_sync_delay(int node) {
  char buf[128];
  if (rh_server_command(ch_node(cl, (unsigned)node), buf, sizeof buf,
                        "CONFIG SET repl-diskless-sync-delay 0") != 0 ||
      strcmp(buf, "OK") != 0)
    warn("CONFIG SET repl-diskless-sync-delay 0");
}

static void failover(const event_t *e) {
  reshard_end();
  int shard = shard_of_pick(e->pick), p = primary_of(shard);
  if (p < 0 || !ch_wait_ok(cl, SETTLE_MS)) {
    warn("cluster-failover (the shard has no primary, or the cluster is not ok)");
    return;
  }
  int rep = other_node(p);
  uint64_t t0 = torture_now_ns();
  if (ch_failover(cl, (unsigned)rep, NULL, SETTLE_MS) != 0) {
    warn("cluster-failover");
    return;
  }
  stats.failovers++;
  flog("cluster: shard %d failed over: node %d (port %d) is its primary now, node %d its "
       "replica (%.0f ms until every node agreed)",
       shard, rep, ch_port(cl, (unsigned)rep), p, (double)(torture_now_ns() - t0) / 1e6);
}

static void cut_start(const event_t *e) {
  reshard_end();
  int p = primary_of(shard_of_pick(e->pick));
  if (p < 0) {
    warn("replica-cut (the shard has no primary)");
    return;
  }
  int rep = other_node(p);
  char buf[128];
  if (rh_server_pause(ch_node(cl, (unsigned)rep)) != 0) {
    warn("replica-cut (SIGSTOP of the replica)");
    return;
  }
  cut_node = rep;
  cut_until_ns = torture_now_ns() + (uint64_t)e->param * 1000000u;
  if (rh_server_command(ch_node(cl, (unsigned)p), buf, sizeof buf, "CLIENT KILL TYPE replica") != 0)
    warn("replica-cut (CLIENT KILL TYPE replica)");
  flog("cluster: replica cut: node %d (port %d) stopped, its link to node %d killed", rep,
       ch_port(cl, (unsigned)rep), p);
}

static void cut_end(void) {
  if (cut_node < 0)
    return;
  rh_server_resume(ch_node(cl, (unsigned)cut_node));
  cut_node = -1;
}

static void kill_start(const event_t *e) {
  reshard_end();
  /* After a cut: the cut replica's shard. */
  int shard = cut_node >= 0 ? cut_node % SHARDS : shard_of_pick(e->pick), p = primary_of(shard);
  if (p < 0) {
    warn("primary-kill (the shard has no primary)");
    return;
  }
  int rep = other_node(p), cut = cut_node == rep;
  /* A cut started late (it waited for a reshard) still lasts its length:
   * it is what makes the replica miss grants. */
  while (cut && torture_now_ns() < cut_until_ns)
    fx_sleep_ms((unsigned)((cut_until_ns - torture_now_ns()) / 1000000u) + 1);
  snapshot_t snap;
  if (cut)
    take_snapshot(p, &snap);
  if (rh_server_kill(ch_node(cl, (unsigned)p)) != 0) {
    warn("primary-kill (SIGKILL)");
    return;
  }
  killed_node = p;
  heir_node = rep;
  stats.kills++;
  if (!cut) {
    flog("cluster: node %d (port %d), shard %d's primary, killed; the cluster is to promote node "
         "%d",
         p, ch_port(cl, (unsigned)p), shard, rep);
    return;
  }
  /* Killed first: resumed now, the replica has no master to resync from. */
  cut_end();
  int lacking = count_lacking(rep, &snap);
  char buf[128];
  if (rh_server_command(ch_node(cl, (unsigned)rep), buf, sizeof buf, "CLUSTER FAILOVER TAKEOVER") !=
          0 ||
      strcmp(buf, "OK") != 0) {
    warn("primary-kill (CLUSTER FAILOVER TAKEOVER)");
    return;
  }
  stats.takeovers++;
  if (lacking > 0) {
    stats.lacking++;
    stats.lacking_keys += (unsigned)lacking;
  }
  flog("cluster: node %d (port %d), shard %d's primary, killed after a replica cut; node %d "
       "(port %d) takes over; it lacks %d of the %d lock keys the primary held",
       p, ch_port(cl, (unsigned)p), shard, rep, ch_port(cl, (unsigned)rep), lacking, snap.n);
}

typedef struct {
  int node;
} linked_t;

/* The restarted node is a replica whose link to its primary is up. */
static int replica_linked(void *arg) {
  linked_t *l = arg;
  char info[4096];
  return rh_server_command(ch_node(cl, (unsigned)l->node), info, sizeof info, "INFO replication") ==
             0 &&
         strstr(info, "role:slave") != NULL && strstr(info, "master_link_status:up") != NULL;
}

static void kill_end(void) {
  if (killed_node < 0)
    return;
  int p = killed_node;
  uint64_t t0 = torture_now_ns();
  if (ch_wait_master(cl, (unsigned)heir_node, SETTLE_MS) != 0)
    warn("primary-kill (the replica was not promoted)");
  double promoted_ms = (double)(torture_now_ns() - t0) / 1e6;
  if (rh_server_restart(ch_node(cl, (unsigned)p)) != 0) {
    fprintf(stderr, "torture: set-up error: cluster node %d could not be restarted\n", p);
    exit(2);
  }
  no_sync_delay(p);
  killed_node = heir_node = -1;
  linked_t l = {p};
  if (!rh_wait_until(replica_linked, &l, SETTLE_MS) || !ch_wait_ok(cl, SETTLE_MS))
    warn("primary-kill (the old primary did not rejoin as a replica)");
  flog("cluster: node %d restarted empty (port %d, pid %d) and rejoined as a replica (promotion "
       "awaited %.0f ms, rejoin %.0f ms)",
       p, ch_port(cl, (unsigned)p), (int)rh_server_pid(ch_node(cl, (unsigned)p)), promoted_ms,
       (double)(torture_now_ns() - t0) / 1e6 - promoted_ms);
}

/* ---- the classic instant faults ------------------------------------------------------ */

static void instant(const event_t *e, const char *cmd) {
  int p = primary_of((int)(e->order % SHARDS));
  if (e->kind == F_CLIENT_KILL && reshard_pid >= 0) {
    stats.skipped++;
    flog("cluster: %s skipped (a reshard runs: its cli's connections must live)", cmd);
    return;
  }
  char buf[256];
  if (p < 0 || rh_server_command(ch_node(cl, (unsigned)p), buf, sizeof buf, cmd) != 0 ||
      strncmp(buf, "ERR", 3) == 0) {
    warn(cmd);
    return;
  }
  flog("cluster: %s on node %d (port %d)", cmd, p, ch_port(cl, (unsigned)p));
}

/* ---- the interface -------------------------------------------------------------------- */

void tcl_execute(const event_t *e) {
  switch (e->kind) {
  case F_RESHARD:
    if (!e->end) {
      reshard_end();
      reshard_start(e);
    } else {
      reshard_poll();
    }
    break;
  case F_CLUSTER_FAILOVER:
    failover(e);
    break;
  case F_REPLICA_CUT:
    if (!e->end)
      cut_start(e);
    else
      cut_end();
    break;
  case F_PRIMARY_KILL:
    if (!e->end)
      kill_start(e);
    else
      kill_end();
    break;
  case F_SCRIPT_FLUSH:
    instant(e, "SCRIPT FLUSH");
    break;
  case F_CLIENT_KILL:
    instant(e, "CLIENT KILL TYPE normal");
    break;
  case F_CLIENT_KILL_PUBSUB:
    instant(e, "CLIENT KILL TYPE pubsub");
    break;
  default:
    stats.skipped++;
    flog("cluster: %s does not apply to the cluster: skipped", fault_names[e->kind]);
    break;
  }
}

void tcl_heal(void) {
  reshard_end();
  cut_end();
  kill_end();
}

int tcl_start(tcl_log_fn log, int resources) {
  flog = log;
  n_resources = resources;
  if (ch_cli() == NULL) {
    fprintf(stderr,
            "torture: set-up error: --cluster reshards with the cli beside %s, which "
            "is missing\n",
            rh_server_name());
    return -1;
  }
  ch_options_t o = {.primaries = SHARDS, .replicas_per_primary = 1};
  if (ch_start(&cl, &o) != 0) {
    fprintf(stderr, "torture: set-up error: could not start the cluster\n");
    return -1;
  }
  for (unsigned i = 0; i < ch_count(cl); i++)
    no_sync_delay((int)i);
  for (unsigned i = 0; i < ch_count(cl); i++)
    flog("cluster node %u: port %d (pid %d), %s of shard %u", i, ch_port(cl, i),
         (int)rh_server_pid(ch_node(cl, i)), i < SHARDS ? "primary" : "replica", i % SHARDS);
  for (int r = 0; r < resources; r++) {
    int slot = key_slot(r);
    flog("cluster: lock key %sr%d: slot %d, node %d", TORTURE_KEY_PREFIX, r, slot,
         ch_owner(cl, 0, slot));
  }
  return 0;
}

const char *tcl_uri(void) { return ch_uri(cl, 0); }

void tcl_stop(void) {
  for (unsigned i = 0; cl != NULL && i < ch_count(cl); i++)
    (void)rh_server_resume(ch_node(cl, i));
  ch_stop(cl);
  cl = NULL;
}

const tcl_stats_t *tcl_stats(void) { return &stats; }
