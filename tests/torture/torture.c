/* torture.c: the fault-injection torture test of redlock-c.  It runs many
 * clients against 5 real masters while faults are injected, and then proves
 * from the recorded history that nothing unsafe happened: no two holders of
 * a resource overlapped, fencing tokens rose in grant order, every call
 * returned within its documented deadline, and every client process exited
 * cleanly with bounded memory.
 *
 *   torture [--duration S] [--seed N] [--workers K] [--threads T]
 *           [--resources R] [--request-ms MS] [--slack-ms MS]
 *           [--worker PATH] [--no-iptables] [--no-end-faults] [--keep]
 *           [--verbose] [--mutate-overhold-ms MS] [--tls-certs DIR]
 *           [--primitive lock|semaphore|rwlock|election|mixed] [--sem-limit L]
 *           [--mutate-sem-refused] [--failover] [--mutate-no-quarantine]
 *           [--no-kill] [--hold-ms MS] [--cluster] [--takeovers] [--proof-step]
 *   torture --selftest
 *
 * --tls-certs DIR (ca.crt, server.crt, server.key, as tests/tls/make_certs.sh
 * writes them): the masters speak TLS only and the workers use rediss://
 * through the proxies (which relay bytes); the driver's own commands go over
 * each master's private unix socket.
 *
 * Defaults: 60 s, seed 1, 4 workers x 3 threads, 3 resources, request
 * timeout 100 ms, deadline slack 2000 ms (5000 ms under ASan).  The fault
 * schedule is a pure function of --seed and --duration (and --failover,
 * --no-kill, --cluster, --takeovers; the replay options are printed at the start and the end), so a
 * failing run is replayed with the same options; the workers' own random
 * choices are seeded from it too, though thread scheduling is not
 * reproducible.
 *
 * Set-up: 5 redis-server processes from tests/support/redis_harness (no
 * persistence, DEBUG enabled for local connections), one fault proxy
 * (tests/support/fault_proxy) in front of each, and K worker processes
 * (torture_worker, fork + exec, dying with this process) that reach the
 * masters only through the proxies.  Workers use fencing, the restart
 * quarantine with a max TTL of 1500 ms (restarted masters rejoin during the
 * run), a lock TTL of 1000 ms, a short request timeout, and hold a lock at
 * most --hold-ms (40 ms; 200 with --failover or --cluster, so that a holder
 * outlasts a failover and the reconnects after it) and a quarter of its
 * validity.
 * --failover adds a replica per master (5 more redis-server, REPLICAOF their
 * master, linked before the run; all 10 with repl-diskless-sync-delay 0, so
 * that a full sync starts at once, and tls-replication with --tls-certs).
 *
 * Faults (seeded schedule; at most 2 masters faulted at a time, counting a
 * restarted master as faulted until its quarantine is surely over, except
 * for short windows with 3 faulted, when no quorum exists):
 *   kill        SIGKILL, down for up to 0.8 s, restart empty on the same port
 *   sigstop     SIGSTOP ... SIGCONT
 *   iptables    iptables -I INPUT -i lo -p tcp --dport <master's port> -j DROP,
 *               later -D (root only: probed at start, skipped with a message
 *               otherwise; every rule carries the comment
 *               "redlock-torture-<pid>" and is removed at exit, on a signal, by
 *               the watchdog, and, if a previous run was SIGKILLed, by the
 *               next run, which removes the rules of owners no longer alive;
 *               the comment is really "redlock-torture-<pid>-<start time>",
 *               so that a reused PID is not mistaken for the owner)
 *   client-pause  CLIENT PAUSE <ms>
 *   debug-sleep   DEBUG SLEEP 0.1 .. 0.6 (sent without waiting for the reply)
 *   proxy-delay / proxy-stall / proxy-blackhole / proxy-refuse (the proxy)
 *   and instant ones: script-flush (SCRIPT FLUSH), client-kill (CLIENT KILL
 *   TYPE normal), client-kill-pubsub (CLIENT KILL TYPE pubsub), proxy-reset.
 * With --failover (docs/safety.md §5b; a failed-over master counts as
 * faulted until its failover quarantine is surely over, like a restart):
 *   failover      SIGKILL of the master, REPLICAOF NO ONE on its replica,
 *                 the master's proxy retargeted to it (fault_proxy_set_upstream:
 *                 open connections reset, as a virtual IP moving); 0.1-0.8 s
 *                 later the old master restarts empty as the new one's
 *                 replica: roles swap.  The log says how many of the old
 *                 master's lock keys the promoted replica lacked.
 *   replica-cut   SIGSTOP of the replica + CLIENT KILL TYPE replica on the
 *                 master, later SIGCONT; alone, or ending in a failover that
 *                 promotes the replica before it could resync.
 *   foreign-hold  the driver, as a client that won a minority, holds every
 *                 lock key r<i> on a master (SET NX PX, retried every ms) and
 *                 releases them as the library does (compare-and-delete and
 *                 PUBLISH on the release channel).
 *   failover windows: a replica cut on one master and foreign holds on two
 *                 others for 0.4-1.2 s (the grants meanwhile rest on the cut
 *                 master and exactly two more), then the cut master fails
 *                 over and, 50 ms later, the holds are released: without the
 *                 failover quarantine a second holder wins on the promoted
 *                 replica and the two released masters.
 * With --cluster (torture_cluster.c; docs/deployments.md "Cluster voters"):
 * the voters are {master 0, master 1, a cluster}: a Redis Cluster of 3
 * primaries with a replica each takes master 2's place, and masters 3 and
 * 4 are not started.  The workers reach the cluster's nodes directly (a
 * cluster redirects to real addresses, which a proxy would not rewrite).
 * The classic schedule of the seed applies to masters 0 and 1; of its
 * events on master 2 the instant ones go to a primary of the cluster, and
 * the cluster has faults of its own, one at a time:
 *   reshard           `CLI --cluster reshard` (a child process) moves the
 *                     slot of a lock key, and the slots below it, to another
 *                     primary while the workers lock through MOVED and ASK;
 *   cluster-failover  CLUSTER FAILOVER on a shard's replica (graceful);
 *   primary-kill      SIGKILL of a shard's primary: the cluster promotes its
 *                     replica after the node timeout; or, after a
 *                     replica-cut of 0.3-1 s (the replica SIGSTOPped and its
 *                     link killed), the replica is resumed and promoted at
 *                     once (CLUSTER FAILOVER TAKEOVER) lacking the keys
 *                     granted meanwhile; later the old primary restarts
 *                     empty and rejoins as a replica.  During the cut the
 *                     driver holds every lock key on one of the two masters
 *                     (foreign-hold, released 50 ms after the takeover), so
 *                     that the grants meanwhile rest on the cut primary.
 * --takeovers (with --cluster; implied there by --mutate-no-quarantine):
 * the cluster's faults are all primary kills after a replica cut longer
 * than the max TTL (the replica then has no live lock key of before the
 * cut either), the old primary restarted 1 s after the kill, and masters 0
 * and 1 have no fault from 1 s before a cut to 600 ms after its release: a
 * schedule of takeovers lacking keys, 7 in 50 s, that only the failover
 * quarantine keeps safe (torture_schedule.h, SCHED_CLUSTER_TAKEOVERS).
 * Every fault of the main part ends by 1 s before the end; at the end, when
 * the workers stop starting calls, two masters are made unresponsive
 * (sigstop, proxy stall or blackhole, iptables) and stay so until every
 * worker has exited, so that the workers' last unlocks and their
 * redlock_close run against freshly hung masters.
 * Every fault is inside the safety model of docs/safety.md (no clock steps,
 * keys lost only by restarts and failovers, which the quarantine covers):
 * any violation found by the checker is a bug in the library (or in this
 * test).
 *
 * The checker (after the workers exited; record format in torture_common.h):
 *  1. Mutual exclusion: per resource, no two hold windows
 *     [grant, min(unlock start, validity end)] overlap.
 *  2. Fencing: per resource, the tokens of the non-empty hold windows
 *     strictly increase in grant-time order; and, for every pair of grants,
 *     a grant whose lock call started after another grant was seen has a
 *     larger token (docs/safety.md §6.2).  Grants whose validity had already
 *     ended when the worker read the clock (a thread descheduled right after
 *     the grant) have an empty window: they took part in nothing, and their
 *     recorded grant time is only an upper bound of the real one, so they
 *     are held to the second rule only.
 *  3. Deadlines: every call returned within its documented bound
 *     (torture_common.h) + slack; a late call is printed with the worker's
 *     worst scheduling stall, to tell a loaded machine from a slow library.
 *  4. Every worker exited with status 0 after writing its summary (it checks
 *     return codes, tokens, its max RSS and hangs itself), within a deadline.
 *  5. Progress: every resource was granted at least once.
 *
 * --primitive (default lock) chooses what the workers take (torture_worker.c;
 * record format in torture_common.h); each group of names is checked apart:
 *  - semaphore s<i> (--sem-limit L, default 2): never more than L permit
 *    windows [grant, min(unlock start, validity end)] at one instant
 *    (safety.md §11.1); a permit's token is its slot's, so no order check;
 *  - read-write lock rw<i>: no write window overlaps any other window, read
 *    or write (§11.2), and write tokens rise in grant order (§11.3);
 *  - election e<i>: a term's window runs from on_elected to min(on_lost or
 *    the resign, its last sampled validity end); no two overlap (§10.1), and
 *    terms rise in election order and above every term seen before the
 *    campaign round (§10.2): checks 1 and 2 with "term" for "token";
 *  - mixed: thread 0 of each worker campaigns on e0, the others take locks,
 *    permits and holds at random.
 * Progress then means every name of every group in use was granted.
 * Mutations (tests of the test): --mutate-overhold-ms makes every kind of
 * holder (and a leader, after on_lost or its resign) act MS past its
 * validity; --mutate-sem-refused makes a semaphore caller take a refused
 * permit as granted; --mutate-no-quarantine (with --failover or --cluster;
 * implies --no-kill, so that only a failover loses keys, and with --cluster
 * --takeovers) runs the workers without the quarantine (restart and
 * failover alike): mutual exclusion must break.  Each must make the
 * matching check fail; the ctest tests of the test (label "mutation") are
 * torture_prims_mutation (--mutate-overhold-ms), torture_failover_mutation
 * (--failover --mutate-no-quarantine) and torture_cluster_mutation
 * (--cluster --mutate-no-quarantine: 7 takeovers of replicas lacking keys
 * in 50 s, each a chance of two holders; a run names a few overlaps).
 * Chance is not a verdict: every mutation implies --proof-step, the
 * scripted step of torture_proof.h, run before the workers, in which the
 * mutation must give two holders at once whatever the load (a holder that
 * acts until another was granted; a grant resting on a server that fails
 * over to a replica lacking its key, then a second client granted within
 * its validity).  Its history (proof.hist, worker K) is checked with the
 * workers' and alone; the tests of the test require the violation in the
 * "proof step: VIOLATION: ..." lines of the latter.  --proof-step without
 * a mutation (with --failover or --cluster) is the control: the second
 * client must be refused.
 * It prints a summary (grants per resource, call outcomes, faults injected by
 * kind, failovers and how many promoted a replica lacking keys, workers'
 * memory, seed) and exits 1 on any violation, printing the
 * offending records; 2 on a set-up error; 4 from its own watchdog.  The run
 * directory (histories, worker logs, the fault log) is removed after a
 * passing run and kept, and named, after a failing one (--keep keeps it).
 *
 * Files: this one sets up the run, executes the faults and drives the
 * workers; torture_schedule.c makes the seeded fault schedule,
 * torture_iptables.c owns the iptables rules, torture_check.c is the checker
 * (pure: records in, violations out; unit-tested by test_torture_check.c)
 * and torture_cases.c holds the hand-made histories of --selftest. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "fault_proxy.h"
#include "fixture.h"
#include "redlock.h"
#include "torture_cases.h"
#include "torture_check.h"
#include "torture_cluster.h"
#include "torture_common.h"
#include "torture_iptables.h"
#include "torture_opts.h"
#include "torture_proof.h"
#include "torture_schedule.h"

#define N_MASTERS TORTURE_MASTERS
#define MAX_WORKERS 32

#if defined(__SANITIZE_ADDRESS__)
#define TORTURE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TORTURE_ASAN 1
#endif
#endif
#ifndef TORTURE_ASAN
#define TORTURE_ASAN 0
#endif

/* ---- options --------------------------------------------------------------------- */

static struct {
  unsigned duration_s;
  uint64_t seed;
  int workers, threads, resources;
  unsigned ttl_ms, max_ttl_ms;
  torture_timing_t timing;
  unsigned slack_ms;
  const char *worker_path;
  int no_iptables, keep, verbose, selftest, no_end_faults;
  unsigned mutate_overhold_ms;
  int mutate_sem_refused;
  int failover;             /* replicas and failover faults */
  int mutate_no_quarantine; /* workers without the quarantine (--failover, --cluster) */
  int no_kill;              /* no kill faults (implied by --mutate-no-quarantine) */
  int cluster;              /* a cluster voter in master 2's place, masters 3 and 4 absent */
  int takeovers;            /* cluster faults: lossy takeovers only (implied by the mutation) */
  int proof_step;           /* the scripted step first (implied by every mutation) */
  unsigned hold_ms;         /* the workers' hold cap */
  int primitive;            /* PRIM_*: what the workers take */
  unsigned sem_limit;
  const char *tls_certs; /* TLS masters: ca.crt, server.crt, server.key */
} opt;

static void usage(void) {
  fprintf(stderr,
          "usage: torture [--duration S] [--seed N] [--workers K] [--threads T]\n"
          "               [--resources R] [--request-ms MS] [--slack-ms MS]\n"
          "               [--worker PATH] [--no-iptables] [--no-end-faults] [--keep]\n"
          "               [--verbose] [--mutate-overhold-ms MS] [--tls-certs DIR]\n"
          "               [--primitive lock|semaphore|rwlock|election|mixed] [--sem-limit L]\n"
          "               [--mutate-sem-refused] [--failover] [--mutate-no-quarantine]\n"
          "               [--no-kill] [--hold-ms MS] [--cluster] [--takeovers] [--proof-step]\n"
          "       torture --selftest   (the checker on hand-made histories)\n");
}

/* The workers' hold cap unless --hold-ms says: with failovers (--failover,
 * and the cluster's takeovers) long enough to outlast a failover and the
 * reconnects after it, so that a holder whose key the promoted replica
 * lacks is often still holding when the others can win a vote there: short
 * holds would be let go before, and a missing quarantine would go unseen. */
static unsigned default_hold_ms(void) {
  return opt.failover || opt.cluster ? TORTURE_FAILOVER_HOLD_MS : TORTURE_HOLD_MAX_MS;
}

static int parse_args(int argc, char **argv) {
  opt.duration_s = 60;
  opt.seed = 1;
  opt.workers = 4;
  opt.threads = 3;
  opt.resources = 3;
  torture_defaults(&opt.timing, &opt.ttl_ms, &opt.max_ttl_ms);
  opt.sem_limit = opt.timing.sem_limit;
  opt.slack_ms = TORTURE_ASAN ? 5000 : 2000;
  const torture_opt_t table[] = {
      {"--no-iptables", TO_FLAG, &opt.no_iptables},
      {"--keep", TO_FLAG, &opt.keep},
      {"--verbose", TO_FLAG, &opt.verbose},
      {"--no-end-faults", TO_FLAG, &opt.no_end_faults},
      {"--mutate-sem-refused", TO_FLAG, &opt.mutate_sem_refused},
      {"--failover", TO_FLAG, &opt.failover},
      {"--mutate-no-quarantine", TO_FLAG, &opt.mutate_no_quarantine},
      {"--no-kill", TO_FLAG, &opt.no_kill},
      {"--cluster", TO_FLAG, &opt.cluster},
      {"--takeovers", TO_FLAG, &opt.takeovers},
      {"--proof-step", TO_FLAG, &opt.proof_step},
      {"--hold-ms", TO_UNSIGNED, &opt.hold_ms},
      {"--selftest", TO_FLAG, &opt.selftest},
      {"--duration", TO_UNSIGNED, &opt.duration_s},
      {"--seed", TO_U64, &opt.seed},
      {"--workers", TO_INT, &opt.workers},
      {"--threads", TO_INT, &opt.threads},
      {"--resources", TO_INT, &opt.resources},
      {"--request-ms", TO_UNSIGNED, &opt.timing.request_ms},
      {"--slack-ms", TO_UNSIGNED, &opt.slack_ms},
      {"--worker", TO_STR, &opt.worker_path},
      {"--mutate-overhold-ms", TO_UNSIGNED, &opt.mutate_overhold_ms},
      {"--tls-certs", TO_STR, &opt.tls_certs},
      {"--sem-limit", TO_UNSIGNED, &opt.sem_limit},
      {"--primitive", TO_PRIM, &opt.primitive},
  };
  if (torture_parse_opts(argc, argv, table, sizeof table / sizeof table[0], "torture") != 0) {
    usage();
    return -1;
  }
  if (opt.duration_s < 5 || opt.workers < 1 || opt.workers > MAX_WORKERS || opt.threads < 1 ||
      opt.threads > 32 || opt.resources < 1 || opt.resources > 64 || opt.timing.request_ms < 1 ||
      opt.primitive < 0 || opt.sem_limit < 1 || opt.sem_limit > REDLOCK_MAX_SEM_LIMIT) {
    usage();
    return -1;
  }
  opt.timing.sem_limit = opt.sem_limit;
  if (opt.hold_ms == 0) /* not given */
    opt.hold_ms = default_hold_ms();
  if (opt.cluster && (opt.failover || opt.tls_certs != NULL)) {
    fprintf(stderr, "torture: --cluster goes with neither --failover nor --tls-certs\n");
    return -1;
  }
  if (opt.mutate_no_quarantine && !opt.failover && !opt.cluster) {
    fprintf(stderr, "torture: --mutate-no-quarantine is a test of the failover quarantine: it "
                    "needs --failover or --cluster\n");
    return -1;
  }
  if (opt.takeovers && !opt.cluster) {
    fprintf(stderr, "torture: --takeovers is a schedule of the cluster's faults: it needs "
                    "--cluster\n");
    return -1;
  }
  /* Without kills, only a failover loses keys: the mutation then shows that
   * the failover quarantine (not the restart one) is what keeps it safe.  On
   * a cluster it also takes the schedule of takeovers lacking keys, the
   * cluster's fault that only the failover quarantine covers. */
  if (opt.mutate_no_quarantine)
    opt.no_kill = 1;
  if (opt.mutate_no_quarantine && opt.cluster)
    opt.takeovers = 1;
  /* A test of the test rests on the scripted step (torture_proof.h): the
   * randomized run alone breaks exclusion only by chance. */
  if (opt.mutate_no_quarantine || opt.mutate_overhold_ms > 0)
    opt.proof_step = 1;
  if (opt.proof_step && opt.workers >= MAX_WORKERS) {
    fprintf(stderr, "torture: the scripted step is a worker of its own: at most %d workers\n",
            MAX_WORKERS - 1);
    return -1;
  }
  if (opt.proof_step && opt.mutate_overhold_ms == 0 && !opt.failover && !opt.cluster) {
    fprintf(stderr, "torture: --proof-step alone is the failover step's control: it needs "
                    "--failover or --cluster\n");
    return -1;
  }
  return 0;
}

/* ---- small helpers ------------------------------------------------------------------- */

static uint64_t t0_ns; /* start of the run: schedule offsets are from here */

static double rel_s(uint64_t ns) {
  return ns >= t0_ns ? (double)(ns - t0_ns) / 1e9 : -(double)(t0_ns - ns) / 1e9;
}

/* Writes what the signal handlers may write: no stdio. */
static void say(const char *s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

/* ---- signals, watchdog ------------------------------------------------------------ */

static void on_fatal_signal(int sig) {
  say("torture: signal received: removing iptables rules and exiting\n");
  ipt_cleanup();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void on_watchdog(int sig) {
  (void)sig;
  say("torture: WATCHDOG: the run exceeded its time budget; removing iptables rules and "
      "exiting (workers and servers die with this process)\n");
  ipt_cleanup();
  _exit(4);
}

static void install_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_fatal_signal;
  int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    sigaction(sigs[i], &sa, NULL);
  sa.sa_handler = on_watchdog;
  sigaction(SIGALRM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  atexit(ipt_cleanup);
}

/* ---- masters, proxies ------------------------------------------------------------- */

static fx_t fx; /* the first masters (fixture.h), stopped by PID */
/* --failover: the replica of each master, started by the driver; a failover
 * swaps the two roles.  pair[m][cur[m]] is master m, the other its replica
 * (NULL without --failover). */
static rh_server_t *replicas[N_MASTERS];
static rh_server_t *pair[N_MASTERS][2];
static int cur[N_MASTERS];
static fault_proxy_t *proxies[N_MASTERS];
static redisContext *sleeping[N_MASTERS]; /* DEBUG SLEEP connections awaiting the reply */
static FILE *fault_log;
/* The masters started: all of them, or, with --cluster, those before the
 * cluster's index. */
static int n_masters = N_MASTERS;

static void flog(const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  uint64_t now = torture_now_ns();
  if (fault_log != NULL) {
    fprintf(fault_log, "%9.3f  %" PRIu64 "  %s\n", rel_s(now), now, msg);
    fflush(fault_log);
  }
  if (opt.verbose)
    printf("torture: %9.3f  %s\n", rel_s(now), msg);
}

static rh_server_t *master_of(int m) { return pair[m][cur[m]]; }
static rh_server_t *replica_of(int m) { return pair[m][cur[m] ^ 1]; }

/* The driver's own connection to a server (1 s timeouts), or NULL. */
static redisContext *driver_connect(rh_server_t *s) {
  struct timeval tv = {.tv_sec = 1, .tv_usec = 0};
  /* A TLS master's port speaks TLS only: use its plain unix socket. */
  const char *unix_path = opt.tls_certs != NULL ? rh_server_unix_path(s) : NULL;
  redisContext *c = unix_path != NULL ? redisConnectUnixWithTimeout(unix_path, tv)
                                      : redisConnectWithTimeout("127.0.0.1", rh_server_port(s), tv);
  if (c != NULL && (c->err || redisSetTimeout(c, tv) != REDIS_OK)) {
    redisFree(c);
    c = NULL;
  }
  return c;
}

/* Sends one command and does not wait for its reply (DEBUG SLEEP blocks the
 * server; the driver must not). */
static redisContext *send_no_wait(rh_server_t *s, const char *cmd) {
  redisContext *c = driver_connect(s);
  if (c == NULL)
    return NULL;
  if (redisAppendCommand(c, cmd) != REDIS_OK) {
    redisFree(c);
    return NULL;
  }
  int done = 0;
  while (!done) {
    if (redisBufferWrite(c, &done) != REDIS_OK) {
      redisFree(c);
      return NULL;
    }
  }
  return c;
}

/* Reads the reply of send_no_wait's command and closes: 0 for a reply that
 * is not an error. */
static int collect_reply(redisContext *c) {
  struct timeval tv = {.tv_sec = 3, .tv_usec = 0};
  redisSetTimeout(c, tv);
  void *reply = NULL;
  int ok = redisGetReply(c, &reply) == REDIS_OK && reply != NULL &&
           ((redisReply *)reply)->type != REDIS_REPLY_ERROR;
  if (reply != NULL)
    freeReplyObject(reply);
  redisFree(c);
  return ok ? 0 : -1;
}

/* ---- executing faults ---------------------------------------------------------------- */

static unsigned fault_count[F_N_KINDS];
static unsigned fault_errors;
static int paused[N_MASTERS], down[N_MASTERS];
static event_t final_faults[8]; /* the end-of-run faults, for the summary */
static int n_final_faults;

static void inj_error(const char *what, int m) {
  fault_errors++;
  flog("WARNING: could not inject %s on master %d", what, m);
  fprintf(stderr, "torture: warning: could not inject %s on master %d (port %d)\n", what, m,
          rh_server_port(master_of(m)));
}

/* A persistent fault's start: *active when it took (rc 0), else a warning. */
static void injected(int m, int rc, const char *what, int *active) {
  if (rc != 0)
    inj_error(what, m);
  else
    *active = 1;
}

/* The result of an rh_server_command: the command must have reached the
 * server and not been refused. */
static void command_result(int m, const char *what, int rc, const char *reply) {
  if (rc != 0 || strncmp(reply, "ERR", 3) == 0)
    inj_error(what, m);
}

/* Sends a fixed command (no % in it: it is hiredis' format, whose words are
 * the arguments) to master m; a failure is an injection error. */
static void master_command(int m, rh_server_t *s, const char *cmd) {
  char buf[256];
  int rc = rh_server_command(s, buf, sizeof buf, cmd);
  command_result(m, cmd, rc, buf);
}

/* ---- failover faults (--failover) ------------------------------------------------------ */

static int replica_paused[N_MASTERS]; /* replica-cut in force: the replica is SIGSTOPped */
static int old_down[N_MASTERS];       /* failed over: the old master is down until it rejoins */
static unsigned fo_done, fo_lacking, fo_lacking_keys;
static unsigned foreign_keys_held; /* lock keys the foreign holds took, over the run */

/* The lock keys a master holds (string keys under the prefix with more than
 * 100 ms to live) and their values: what a failover's promoted replica is
 * compared with, for the summary. */
#define SNAP_MAX 64
typedef struct {
  int n;
  char key[SNAP_MAX][64], val[SNAP_MAX][96];
} key_snapshot_t;

static const char snapshot_script[] =
    "local r = {} "
    "for _, k in ipairs(redis.call('keys', ARGV[1])) do "
    "  if redis.call('type', k).ok == 'string' and redis.call('pttl', k) > 100 then "
    "    r[#r + 1] = k; r[#r + 1] = redis.call('get', k) "
    "  end "
    "end "
    "return r";

static void take_snapshot(rh_server_t *s, key_snapshot_t *snap) {
  snap->n = 0;
  redisContext *c = driver_connect(s);
  if (c == NULL)
    return;
  redisReply *r = redisCommand(c, "EVAL %s 0 %s", snapshot_script, TORTURE_KEY_PREFIX "*");
  if (r != NULL && r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i + 1 < r->elements && snap->n < SNAP_MAX; i += 2) {
      if (r->element[i]->type != REDIS_REPLY_STRING ||
          r->element[i + 1]->type != REDIS_REPLY_STRING)
        continue;
      snprintf(snap->key[snap->n], sizeof snap->key[0], "%s", r->element[i]->str);
      snprintf(snap->val[snap->n], sizeof snap->val[0], "%s", r->element[i + 1]->str);
      snap->n++;
    }
  }
  if (r != NULL)
    freeReplyObject(r);
  redisFree(c);
}

/* How many of the snapshot's keys s lacks (absent, or another value); -1
 * when it cannot be asked. */
static int count_lacking(rh_server_t *s, const key_snapshot_t *snap) {
  redisContext *c = driver_connect(s);
  if (c == NULL)
    return -1;
  int lacking = 0;
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

/* REPLICAOF NO ONE, retried for a while (a replica still loading its first
 * data set refuses it). */
static int promote(rh_server_t *r) {
  for (int i = 0; i < 40; i++) {
    char buf[128];
    if (rh_server_command(r, buf, sizeof buf, "REPLICAOF NO ONE") == 0 && strcmp(buf, "OK") == 0)
      return 0;
    fx_sleep_ms(25);
  }
  return -1;
}

/* The master dies, its replica is promoted and takes its address (the
 * proxy, as a virtual IP would move): every client sees a reconnect to
 * another server, which lacks what the replica had not received. */
static void failover_start(int m) {
  rh_server_t *old = master_of(m), *rep = replica_of(m);
  key_snapshot_t snap;
  take_snapshot(old, &snap);
  int old_port = rh_server_port(old);
  if (rh_server_kill(old) != 0) {
    inj_error("failover (SIGKILL of the master)", m);
    return;
  }
  old_down[m] = 1;
  /* After the kill: a replica cut now is not healed by a resync. */
  if (replica_paused[m]) {
    rh_server_resume(rep);
    replica_paused[m] = 0;
  }
  if (promote(rep) != 0 ||
      fault_proxy_set_upstream(proxies[m], "127.0.0.1", rh_server_port(rep)) != 0) {
    fprintf(stderr, "torture: set-up error: master %d's replica (port %d) could not be promoted\n",
            m, rh_server_port(rep));
    exit(2);
  }
  cur[m] ^= 1;
  ipt_set_port(m, rh_server_port(rep));
  int lacking = count_lacking(rep, &snap);
  fo_done++;
  if (lacking > 0) {
    fo_lacking++;
    fo_lacking_keys += (unsigned)lacking;
  }
  flog("master %d: failed over: the master (port %d) killed, its replica (port %d, pid %d) "
       "promoted and behind the proxy; it lacks %d of the %d lock keys the old master held",
       m, old_port, rh_server_port(rep), (int)rh_server_pid(rep), lacking, snap.n);
}

/* The old master comes back empty, as the new master's replica. */
static void failover_end(int m) {
  if (!old_down[m])
    return;
  rh_server_t *old = replica_of(m);
  if (rh_server_restart(old) != 0) {
    fprintf(stderr, "torture: set-up error: master %d's old master could not be restarted\n", m);
    exit(2);
  }
  old_down[m] = 0;
  char buf[256];
  int rc = rh_server_command(old, buf, sizeof buf, "REPLICAOF 127.0.0.1 %d",
                             rh_server_port(master_of(m)));
  command_result(m, "REPLICAOF (the old master, restarted)", rc, buf);
  flog("master %d: the old master restarted empty (port %d, pid %d) as the replica of port %d", m,
       rh_server_port(old), (int)rh_server_pid(old), rh_server_port(master_of(m)));
}

/* The replica stops hearing from its master: SIGSTOP, then its link is
 * killed on the master (a stopped replica would otherwise resync from the
 * backlog when it resumes, and lose nothing). */
static void replica_cut_start(int m) {
  injected(m, rh_server_pause(replica_of(m)), "replica-cut (SIGSTOP of the replica)",
           &replica_paused[m]);
  master_command(m, master_of(m), "CLIENT KILL TYPE replica");
}

static void replica_cut_end(int m) {
  if (replica_paused[m]) {
    rh_server_resume(replica_of(m));
    replica_paused[m] = 0;
  }
}

/* Foreign holds: the lock keys r<i> taken by the driver on a master. */
typedef struct {
  int active;
  uint64_t taken; /* bit i: r<i> is ours */
  unsigned px;
  char value[64];
  redisContext *c; /* kept open while active: the keys are tried every tick */
  uint64_t start_ns;
  unsigned tries;
} foreign_t;
static foreign_t foreign[N_MASTERS];

/* Takes what is not taken yet; a key a worker holds now is tried again on
 * the next tick.  Returns whether some key is still wanted (the schedule's
 * loop then ticks every millisecond: the workers take a released key within
 * a few, so a slower tick would seldom win it). */
static int foreign_tick(void) {
  int wanted = 0;
  for (int m = 0; m < N_MASTERS; m++) {
    foreign_t *f = &foreign[m];
    if (!f->active)
      continue;
    if (f->c == NULL)
      f->c = driver_connect(master_of(m));
    for (int r = 0; f->c != NULL && r < opt.resources; r++) {
      if (f->taken & (1ull << r))
        continue;
      redisReply *rep =
          redisCommand(f->c, "SET %sr%d %s NX PX %u", TORTURE_KEY_PREFIX, r, f->value, f->px);
      f->tries++;
      if (rep != NULL && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0) {
        f->taken |= 1ull << r;
        foreign_keys_held++;
        flog("master %d: foreign hold took r%d after %.1f ms (%u tries so far)", m, r,
             (double)(torture_now_ns() - f->start_ns) / 1e6, f->tries);
      }
      if (rep != NULL) {
        freeReplyObject(rep);
      } else {
        redisFree(f->c); /* tried again on the next tick */
        f->c = NULL;
      }
    }
    wanted |= f->taken != (opt.resources >= 64 ? ~0ull : (1ull << opt.resources) - 1);
  }
  return wanted;
}

static void foreign_start(int m, unsigned ms) {
  foreign_t *f = &foreign[m];
  static unsigned serial;
  snprintf(f->value, sizeof f->value, "torture-driver-%d-%u", (int)getpid(), ++serial);
  f->px = ms + 3000; /* outlives the hold: it is released at its end */
  f->taken = 0;
  f->tries = 0;
  f->start_ns = torture_now_ns();
  f->active = 1;
  foreign_tick();
}

static void foreign_end(int m) {
  foreign_t *f = &foreign[m];
  if (!f->active)
    return;
  int n = 0;
  for (int r = 0; r < opt.resources; r++) {
    if (!(f->taken & (1ull << r)))
      continue;
    char buf[64];
    /* As the library's release does (src/lua/release.lua): compare and
     * delete, and wake the waiters on the key's release channel (redlock.h:
     * the prefix, then the key in braces, as it has no hash tag). */
    int rc = rh_server_command(
        master_of(m), buf, sizeof buf, "EVAL %s 1 %sr%d %s %s",
        "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) "
        "redis.call('publish', ARGV[2] .. '{' .. KEYS[1] .. '}', '') return 1 end return 0",
        TORTURE_KEY_PREFIX, r, f->value, REDLOCK_RELEASE_CHANNEL_PREFIX);
    command_result(m, "foreign-hold release", rc, buf);
    n++;
  }
  f->active = 0;
  if (f->c != NULL)
    redisFree(f->c);
  f->c = NULL;
  flog("master %d: foreign hold released (%d of the %d lock keys were held)", m, n, opt.resources);
}

static void execute(const event_t *e) {
  int m = e->master;
  rh_server_t *s = master_of(m);
  fault_proxy_t *p = proxies[m];
  if (!e->end) {
    fault_count[e->kind]++;
    if (e->window == 2) {
      flog("master %d (port %d, proxy %d): %s start [end of run: held until every worker has "
           "exited]",
           m, rh_server_port(s), fault_proxy_port(p), fault_names[e->kind]);
      final_faults[n_final_faults++] = *e;
    } else {
      flog("master %d (port %d, proxy %d): %s%s start, %u ms%s", m, rh_server_port(s),
           fault_proxy_port(p), fault_names[e->kind],
           e->window == 3 ? " [failover window]"
           : e->window    ? " [no-quorum window]"
                          : "",
           e->param,
           e->kind == F_PROXY_DELAY ? " delay"
           : e->kind == F_FAILOVER  ? " before the old master rejoins"
                                    : "");
    }
  } else {
    flog("master %d: %s end", m, fault_names[e->kind]);
  }
  switch (e->kind) {
  case F_KILL:
    if (!e->end) {
      injected(m, rh_server_kill(s), "kill", &down[m]);
    } else {
      if (rh_server_restart(s) != 0) {
        fprintf(stderr, "torture: set-up error: master %d could not be restarted\n", m);
        exit(2);
      }
      down[m] = 0;
      flog("master %d restarted (pid %d)", m, (int)rh_server_pid(s));
    }
    break;
  case F_SIGSTOP:
    if (!e->end) {
      injected(m, rh_server_pause(s), "sigstop", &paused[m]);
    } else if (paused[m]) {
      rh_server_resume(s);
      paused[m] = 0;
    }
    break;
  case F_IPTABLES:
    if (!e->end) {
      if (ipt_add(m) != 0)
        inj_error("iptables DROP", m);
    } else if (ipt_is_active(m) && ipt_del(m) != 0) {
      inj_error("iptables rule removal", m);
    }
    break;
  case F_CLIENT_PAUSE:
    if (!e->end) {
      char buf[256];
      int rc = rh_server_command(s, buf, sizeof buf, "CLIENT PAUSE %u", e->param);
      command_result(m, "CLIENT PAUSE", rc, buf);
    }
    break;
  case F_DEBUG_SLEEP:
    if (!e->end) {
      char cmd[64];
      snprintf(cmd, sizeof cmd, "DEBUG SLEEP %u.%03u", e->param / 1000, e->param % 1000);
      sleeping[m] = send_no_wait(s, cmd);
      if (sleeping[m] == NULL)
        inj_error("DEBUG SLEEP", m);
    } else if (sleeping[m] != NULL) {
      if (collect_reply(sleeping[m]) != 0)
        inj_error("DEBUG SLEEP (its reply)", m);
      sleeping[m] = NULL;
    }
    break;
  case F_PROXY_DELAY:
    fault_proxy_set_delay(p, e->end ? 0 : e->param);
    break;
  case F_PROXY_STALL:
    fault_proxy_set_stall(p, !e->end);
    break;
  case F_PROXY_BLACKHOLE:
    fault_proxy_set_blackhole(p, !e->end);
    break;
  case F_PROXY_REFUSE:
    if (!e->end)
      fault_proxy_reset_all(p);
    fault_proxy_set_refuse(p, !e->end);
    break;
  case F_SCRIPT_FLUSH:
    master_command(m, s, "SCRIPT FLUSH");
    break;
  case F_CLIENT_KILL:
    /* Every normal connection but this one (SKIPME yes is the default). */
    master_command(m, s, "CLIENT KILL TYPE normal");
    break;
  case F_CLIENT_KILL_PUBSUB:
    master_command(m, s, "CLIENT KILL TYPE pubsub");
    break;
  case F_PROXY_RESET:
    fault_proxy_reset_all(p);
    break;
  case F_FAILOVER:
    if (!e->end)
      failover_start(m);
    else
      failover_end(m);
    break;
  case F_REPLICA_CUT:
    if (!e->end)
      replica_cut_start(m);
    else
      replica_cut_end(m);
    break;
  case F_FOREIGN_HOLD:
    if (!e->end)
      foreign_start(m, e->param);
    else
      foreign_end(m);
    break;
  }
}

/* Ends every fault still in force (the schedule's own end events normally
 * did already). */
static void heal_all(void) {
  for (int m = 0; m < n_masters; m++) {
    if (paused[m]) {
      rh_server_resume(master_of(m));
      paused[m] = 0;
    }
    if (down[m]) {
      if (rh_server_restart(master_of(m)) != 0)
        fprintf(stderr, "torture: master %d could not be restarted\n", m);
      down[m] = 0;
    }
    if (ipt_is_active(m))
      ipt_del(m);
    if (sleeping[m] != NULL) {
      collect_reply(sleeping[m]);
      sleeping[m] = NULL;
    }
    replica_cut_end(m);
    failover_end(m);
    foreign_end(m);
    if (proxies[m] != NULL) {
      fault_proxy_set_delay(proxies[m], 0);
      fault_proxy_set_stall(proxies[m], 0);
      fault_proxy_set_blackhole(proxies[m], 0);
      fault_proxy_set_refuse(proxies[m], 0);
    }
  }
}

static char run_dir[400];

/* ---- the scripted step (torture_proof.h) ---------------------------------------------- */

/* Whether the server that fails over in the step lacks H's key now. */
static int lacks_r0(rh_server_t *s) {
  char buf[128];
  return rh_server_command(s, buf, sizeof buf, "EXISTS %sr0", TORTURE_KEY_PREFIX) == 0 &&
         strcmp(buf, "0") == 0;
}

/* The failover step: H's grant of r0 rests on one server whose replica is
 * cut off (master 0 with --failover, the cluster's shard of r0 with
 * --cluster) and on servers whose keys stay; every other voter is held by
 * the driver (foreign holds: masters 3 and 4, or master 1).  That server
 * fails over to its replica, which lacks H's key; the holds are released,
 * and a fresh client G tries r0 until H's validity ends.  Without the
 * quarantine G's grant is certain (the promoted replica and the released
 * masters are a majority, none with a key) and the checker must see two
 * holders; with it G must be refused. */
static void proof_failover(void) {
  int quarantine = !opt.mutate_no_quarantine;
  int held[2] = {3, 4}, n_held = 2;
  if (opt.cluster) {
    held[0] = 1;
    n_held = 1;
  }
  flog("proof step: the failover schedule (quarantine %s)", quarantine ? "on" : "off");
  for (int i = 0; i < n_held; i++)
    foreign_start(held[i], PROOF_WAIT_MS + PROOF_TTL_MS);
  uint64_t until = torture_now_ns() + 5000000000ull;
  while (foreign_tick() && torture_now_ns() < until)
    fx_sleep_ms(1);
  if (opt.cluster) {
    event_t cut = {.kind = F_REPLICA_CUT, .master = TORTURE_CLUSTER_VOTER, .pick = 0};
    tcl_execute(&cut);
  } else {
    replica_cut_start(0);
  }
  redlock_t *h = tp_open(quarantine, PROOF_TTL_MS), *g = NULL;
  tp_grant_t gh = {0}, gg = {0};
  /* With the quarantine on, H may wait out the restart quarantine of the
   * servers just started. */
  uint64_t deadline = torture_now_ns() + (uint64_t)(PROOF_WAIT_MS + PROOF_TTL_MS) * 1000000u;
  int rc = h != NULL ? tp_lock_until(h, "r0", PROOF_TTL_MS, deadline, 0, &gh) : -1;
  if (rc != 0) {
    if (h != NULL)
      tp_fail("H was not granted r0 (last: %s)", redlock_err_name(rc));
  } else {
    flog("proof step: H granted r0, %.0f ms of validity", (double)(gh.ve - gh.grant) / 1e6);
    unsigned lacking_before = opt.cluster ? tcl_stats()->lacking : fo_lacking;
    if (opt.cluster) {
      event_t kill = {.kind = F_PRIMARY_KILL, .master = TORTURE_CLUSTER_VOTER, .pick = 0};
      tcl_execute(&kill);
    } else {
      failover_start(0);
    }
    int lacking = (opt.cluster ? tcl_stats()->lacking : fo_lacking) > lacking_before;
    if (!opt.cluster)
      lacking = lacking && lacks_r0(master_of(0));
    if (!lacking)
      tp_fail("the promoted replica was not shown to lack H's key");
    for (int i = 0; i < n_held; i++)
      foreign_end(held[i]);
    g = tp_open(quarantine, PROOF_TTL_MS);
    rc = g != NULL ? tp_lock_until(g, "r0", PROOF_TTL_MS, gh.ve, 1, &gg) : -1;
    if (rc == 0)
      flog("proof step: G granted r0 %.0f ms before H's validity ends",
           ((double)gh.ve - (double)gg.grant) / 1e6);
    else
      flog("proof step: G refused r0 until H's validity ended (last: %s)", redlock_err_name(rc));
    if (!quarantine && rc != 0)
      tp_fail("without the quarantine G was not granted r0 within H's validity (last: %s)",
              redlock_err_name(rc));
    else if (!quarantine && gg.grant >= gh.ve)
      tp_fail("without the quarantine G was granted r0 only after H's validity ended");
    if (rc == 0)
      fx_sleep_ms(50); /* both hold a while: the report's overlap is not a sliver */
    tp_release(g, &gg);
    tp_release(h, &gh);
  }
  for (int i = 0; i < n_held; i++)
    foreign_end(held[i]);
  if (g != NULL)
    redlock_close(g);
  if (h != NULL)
    redlock_close(h);
  /* Back to the run's starting state: the old master (primary) rejoins as
   * the replica, linked before the workers start. */
  if (opt.cluster) {
    event_t end = {.kind = F_PRIMARY_KILL, .master = TORTURE_CLUSTER_VOTER, .end = 1};
    tcl_execute(&end);
    event_t cut_end = {.kind = F_REPLICA_CUT, .master = TORTURE_CLUSTER_VOTER, .end = 1};
    tcl_execute(&cut_end);
  } else {
    replica_cut_end(0);
    failover_end(0);
    if (!rh_wait_replica_linked(master_of(0), replica_of(0), 10000))
      tp_fail("master 0's old master did not link as its replica in 10 s");
  }
}

/* Runs the scripted step before the workers start, as worker opt.workers
 * (its history is checked with theirs). */
static void proof_step(void) {
  static char uris[N_MASTERS + 1][64];
  static const char *nodes[N_MASTERS + 1];
  static char tls_ca[600];
  int n = 0;
  for (int m = 0; m < n_masters; m++) {
    snprintf(uris[m], sizeof uris[m], "%s://127.0.0.1:%d", opt.tls_certs ? "rediss" : "redis",
             fault_proxy_port(proxies[m]));
    nodes[n++] = uris[m];
  }
  if (opt.cluster)
    nodes[n++] = tcl_uri();
  if (opt.tls_certs != NULL)
    snprintf(tls_ca, sizeof tls_ca, "%s/ca.crt", opt.tls_certs);
  tp_config_t c = {.nodes = nodes,
                   .n_nodes = n,
                   .tls_ca = opt.tls_certs != NULL ? tls_ca : NULL,
                   .timing = opt.timing};
  if (tp_begin(run_dir, opt.workers, &c) != 0)
    exit(2);
  if (opt.mutate_overhold_ms > 0) {
    int built = tp_overhold(opt.primitive, opt.sem_limit, opt.ttl_ms, opt.max_ttl_ms);
    flog("proof step: the overhold schedule built two holders at once in %d group(s)", built);
  }
  if (opt.failover || opt.cluster)
    proof_failover();
  tp_end();
  flog("proof step done");
}

/* --failover: one replica per master (REPLICAOF it), linked before the run
 * starts.  0, or -1 with a message (nothing of them left running). */
static int start_replicas(const rh_options_t *ropts) {
  if (rh_cluster_start(replicas, N_MASTERS, ropts) != 0) {
    fprintf(stderr, "torture: set-up error: could not start %d replicas\n", N_MASTERS);
    return -1;
  }
  for (int m = 0; m < N_MASTERS; m++) {
    pair[m][1] = replicas[m];
    char buf[128];
    int rc = rh_server_command(replicas[m], buf, sizeof buf, "REPLICAOF 127.0.0.1 %d",
                               rh_server_port(fx.servers[m]));
    if (rc != 0 || strcmp(buf, "OK") != 0) {
      fprintf(stderr, "torture: set-up error: REPLICAOF on replica %d: %s\n", m,
              rc != 0 ? "unreachable" : buf);
      rh_cluster_free(replicas, N_MASTERS);
      return -1;
    }
  }
  for (int m = 0; m < N_MASTERS; m++) {
    if (!rh_wait_replica_linked(fx.servers[m], replicas[m], 10000)) {
      fprintf(stderr, "torture: set-up error: replica %d did not link to its master in 10 s\n", m);
      rh_cluster_free(replicas, N_MASTERS);
      return -1;
    }
  }
  return 0;
}

/* ---- workers -------------------------------------------------------------------------- */

typedef struct {
  pid_t pid;
  int done, status, killed;
  char hist[600], log[600];
} worker_t;

static worker_t workers[MAX_WORKERS];

static int spawn_worker(int id, uint64_t until_ns) {
  worker_t *w = &workers[id];
  snprintf(w->hist, sizeof w->hist, "%s/worker-%d.hist", run_dir, id);
  snprintf(w->log, sizeof w->log, "%s/worker-%d.log", run_dir, id);
  /* Everything is built before fork: the child only execs. */
  char s_id[16], s_until[32], s_threads[16], s_res[16], s_seed[32], s_ttl[16], s_max[16], s_req[16],
      s_conn[16], s_retry[16], s_delay[16], s_jitter[16], s_wait[16], s_mutate[16], s_sem[16],
      s_hold[16];
  snprintf(s_id, sizeof s_id, "%d", id);
  snprintf(s_until, sizeof s_until, "%" PRIu64, until_ns);
  snprintf(s_threads, sizeof s_threads, "%d", opt.threads);
  snprintf(s_res, sizeof s_res, "%d", opt.resources);
  snprintf(s_seed, sizeof s_seed, "%" PRIu64, opt.seed);
  snprintf(s_ttl, sizeof s_ttl, "%u", opt.ttl_ms);
  snprintf(s_max, sizeof s_max, "%u", opt.max_ttl_ms);
  snprintf(s_req, sizeof s_req, "%u", opt.timing.request_ms);
  snprintf(s_conn, sizeof s_conn, "%u", opt.timing.connect_ms);
  snprintf(s_retry, sizeof s_retry, "%d", opt.timing.retry);
  snprintf(s_delay, sizeof s_delay, "%u", opt.timing.retry_delay_ms);
  snprintf(s_jitter, sizeof s_jitter, "%u", opt.timing.retry_jitter_ms);
  snprintf(s_wait, sizeof s_wait, "%u", opt.timing.wait_ms);
  snprintf(s_mutate, sizeof s_mutate, "%u", opt.mutate_overhold_ms);
  snprintf(s_sem, sizeof s_sem, "%u", opt.sem_limit);
  snprintf(s_hold, sizeof s_hold, "%u", opt.hold_ms);
  char uris[N_MASTERS][64];
  char tls_ca[600];
  const char *argv[80];
  int argc = 0;
  argv[argc++] = opt.worker_path;
#define ARG(name, value)                                                                           \
  do {                                                                                             \
    argv[argc++] = name;                                                                           \
    argv[argc++] = value;                                                                          \
  } while (0)
  ARG("--id", s_id);
  ARG("--out", w->hist);
  ARG("--log", w->log);
  ARG("--until-ns", s_until);
  ARG("--threads", s_threads);
  ARG("--resources", s_res);
  ARG("--seed", s_seed);
  ARG("--ttl", s_ttl);
  ARG("--max-ttl", s_max);
  ARG("--request-ms", s_req);
  ARG("--connect-ms", s_conn);
  ARG("--retry", s_retry);
  ARG("--retry-delay", s_delay);
  ARG("--retry-jitter", s_jitter);
  ARG("--wait-ms", s_wait);
  if (opt.mutate_overhold_ms > 0)
    ARG("--mutate-overhold-ms", s_mutate);
  ARG("--primitive", torture_prim_names[opt.primitive]);
  ARG("--sem-limit", s_sem);
  if (opt.mutate_sem_refused)
    ARG("--mutate-sem-refused", "1");
  if (opt.mutate_no_quarantine)
    ARG("--mutate-no-quarantine", "1");
  ARG("--hold-max-ms", s_hold);
  for (int m = 0; m < n_masters; m++) {
    snprintf(uris[m], sizeof uris[m], "%s://127.0.0.1:%d", opt.tls_certs ? "rediss" : "redis",
             fault_proxy_port(proxies[m]));
    ARG("--node", uris[m]);
  }
  if (opt.cluster)
    ARG("--node", tcl_uri());
  if (opt.tls_certs != NULL) {
    snprintf(tls_ca, sizeof tls_ca, "%s/ca.crt", opt.tls_certs);
    ARG("--tls-ca", tls_ca);
  }
#undef ARG
  argv[argc] = NULL;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    /* Die with the driver; start from a clean signal state. */
    if (rh_child_init(parent) != 0)
      _exit(127);
    execv(opt.worker_path, (char *const *)argv);
    _exit(127);
  }
  w->pid = pid;
  return 0;
}

/* Reaps the workers that exited; returns how many are still running. */
static int poll_workers(void) {
  int running = 0;
  for (int i = 0; i < opt.workers; i++) {
    worker_t *w = &workers[i];
    if (w->done || w->pid <= 0)
      continue;
    int status;
    pid_t r = waitpid(w->pid, &status, WNOHANG);
    if (r == w->pid) {
      w->done = 1;
      w->status = status;
      if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        flog("worker %d (pid %d) ended early or badly: status 0x%x", i, (int)w->pid, status);
    } else {
      running++;
    }
  }
  return running;
}

/* ---- the check (torture_check.c) ------------------------------------------------------ */

/* Feeds one worker's history file to the checker. */
static void read_file(tc_history_t *h, int id, const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    tc_no_history(h, id, path);
    return;
  }
  char line[1024];
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    tc_add_record(h, id, line);
  }
  fclose(f);
}

static void read_history(tc_history_t *h, int id) { read_file(h, id, workers[id].hist); }

/* The options besides --duration and --seed that make the schedule (and
 * the primitive, a hold cap that is not the default), for the replay line. */
static const char *replay_extra(void) {
  static char buf[240];
  char hold[32] = "";
  if (opt.hold_ms != default_hold_ms())
    snprintf(hold, sizeof hold, " --hold-ms %u", opt.hold_ms);
  snprintf(buf, sizeof buf, "%s%s%s%s%s%s%s%s", opt.primitive == PRIM_LOCK ? "" : " --primitive ",
           opt.primitive == PRIM_LOCK ? "" : torture_prim_names[opt.primitive],
           opt.failover ? " --failover" : "", opt.cluster ? " --cluster" : "",
           opt.mutate_no_quarantine ? " --mutate-no-quarantine"
           : opt.no_kill            ? " --no-kill"
                                    : "",
           opt.takeovers && !opt.mutate_no_quarantine ? " --takeovers" : "", hold,
           opt.proof_step && !opt.mutate_no_quarantine && opt.mutate_overhold_ms == 0
               ? " --proof-step"
               : "");
  return buf;
}

/* The summary after a run: the checker's counts, the faults, the workers. */
static void print_summary(const tc_history_t *h, const schedule_t *sched) {
  const tc_stats_t *st = tc_stats(h);
  unsigned n = tc_violations(h);
  printf("\n==== torture summary (seed %" PRIu64 ", %u s) ====\n", opt.seed, opt.duration_s);
  printf("config: %s%s, %d workers x %d threads, %d resources, ttl "
         "%u ms, max TTL (quarantine) %u ms, request %u ms, retry %d x (%u + %u) ms, wait %u ms, "
         "hold <= %u ms, fencing on, quarantine %s\n",
         opt.cluster ? "2 masters behind fault proxies and a cluster (3 primaries with a replica "
                       "each, reached directly)"
                     : "5 masters behind fault proxies",
         opt.failover ? " (each with a replica)" : "", opt.workers, opt.threads, opt.resources,
         opt.ttl_ms, opt.max_ttl_ms, opt.timing.request_ms, opt.timing.retry,
         opt.timing.retry_delay_ms, opt.timing.retry_jitter_ms, opt.timing.wait_ms, opt.hold_ms,
         opt.mutate_no_quarantine ? "OFF (--mutate-no-quarantine: the run must fail)" : "on");
  printf("primitive: %s\n", torture_prim_names[opt.primitive]);
  if (opt.primitive == PRIM_SEMAPHORE || opt.primitive == PRIM_MIXED)
    printf("semaphore limit: %u\n", opt.sem_limit);
  printf("grants: %zu (%u with a non-empty hold window, %u extended)\n", st->grants, st->nonempty,
         st->extended);
  for (int grp = 0; grp < GRP_N; grp++)
    for (int r = 0; r < opt.resources; r++) {
      if (st->grants_per_res[grp][r] == 0)
        continue;
      printf("  %s%d: %u %s, %u non-empty windows", tc_grp_prefix[grp], r,
             st->grants_per_res[grp][r], tc_grp_title[grp], st->nonempty_per_res[grp][r]);
      if (grp == GRP_SEM)
        printf(", at most %u held at once", st->sem_peak[r]);
      if (grp == GRP_RW)
        printf(" (%u write, %u read)", st->rw_writes[r],
               st->grants_per_res[grp][r] - st->rw_writes[r]);
      if (grp == GRP_ELECT) /* how many terms a fault ended (on_lost) rather than a resign */
        printf(", %u ended by on_lost", st->terms_lost[r]);
      printf("\n");
    }
  printf("calls (return codes):\n");
  for (int k = 0; k < TC_N_CALL_KINDS; k++) {
    unsigned total = 0;
    for (int x = 0; x < TC_N_RC; x++)
      total += st->rc_counts[k][x];
    if (total == 0)
      continue;
    printf("  %-8s %6u:", tc_call_kinds[k], total);
    for (int x = 0; x < TC_N_RC; x++)
      if (st->rc_counts[k][x] > 0)
        printf(" %s=%u",
               x == TC_N_RC - 1 ? "other"
               : x == 0         ? "OK"
                                : redlock_err_name(-x) + 8,
               st->rc_counts[k][x]);
    printf("\n");
  }
  if (st->worst_kind >= 0)
    printf("slowest call relative to its bound: %s %.1f ms against %" PRIu64
           " ms (%+.1f ms; slack %u ms)\n",
           tc_call_kinds[st->worst_kind], st->worst_ms, st->worst_bound_ms, st->worst_over,
           opt.slack_ms);
  printf("faults injected:");
  unsigned total_faults = 0;
  for (int k = 0; k < F_N_KINDS; k++) {
    int applies = k < F_N_CLASSIC || (opt.failover && k < F_FIRST_CLUSTER) ||
                  (opt.cluster && (k >= F_FIRST_CLUSTER || k == F_REPLICA_CUT));
    if (!applies)
      continue;
    printf(" %s=%u", fault_names[k], fault_count[k]);
    total_faults += fault_count[k];
  }
  printf("\n  total %u, no-quorum windows (3 masters faulted) %u, injection warnings %u%s\n",
         total_faults, sched->windows, fault_errors + (opt.cluster ? tcl_stats()->warnings : 0),
         ipt_usable() ? "" : " (iptables fault skipped: unavailable)");
  if (opt.failover)
    printf("  failovers %u: %u promoted a replica lacking lock keys its old master held (%u keys "
           "in all); failover windows (replica cut + foreign holds on two others, then the "
           "failover) %u, lock keys taken by foreign holds %u%s\n",
           fo_done, fo_lacking, fo_lacking_keys, sched->fo_windows, foreign_keys_held,
           opt.no_kill ? "; no kill faults" : "");
  if (opt.cluster) {
    const tcl_stats_t *cs = tcl_stats();
    printf(
        "  cluster: %u reshards (%u failed) moved %u slots, %u of them carrying a lock key's "
        "slot; %u graceful failovers; %u primary kills, %u of them after a replica cut and "
        "taken over at once (%u promoted a replica lacking lock keys, %u keys in all); %u "
        "faults skipped, %u injection warnings; lock keys taken by foreign holds during the cuts "
        "%u\n",
        cs->reshards, cs->reshards_failed, cs->slots_moved, cs->lock_slot_moves, cs->failovers,
        cs->kills, cs->takeovers, cs->lacking, cs->lacking_keys, cs->skipped, cs->warnings,
        foreign_keys_held);
  }
  printf("  end of run (held through the workers' last calls and redlock_close):");
  for (int i = 0; i < n_final_faults; i++)
    printf(" master %d %s;", final_faults[i].master, fault_names[final_faults[i].kind]);
  printf("%s\n", n_final_faults > 0  ? ""
                 : opt.no_end_faults ? " none (--no-end-faults)"
                                     : " none (the seed's fell on masters this run lacks)");
  printf("workers:\n");
  for (int i = 0; i < opt.workers; i++) {
    const tc_worker_summary_t *s = &st->workers[i];
    if (!s->present) {
      printf("  %d: pid %d, %s, no summary line\n", i, (int)workers[i].pid,
             workers[i].killed ? "killed (hang)" : "did not finish");
      continue;
    }
    printf("  %d: pid %d, %s, max RSS %ld kB after warm-up, %ld kB at the end; heap in use "
           "%ld kB after warm-up, %ld kB near the end, %ld kB at most; worst stall %u ms, %" PRIu64
           " calls, %" PRIu64 " grants, %" PRIu64 " missed releases replayed\n",
           i, (int)workers[i].pid,
           workers[i].killed ? "killed (hang)"
           : WIFEXITED(workers[i].status)
               ? (WEXITSTATUS(workers[i].status) == 0 ? "exit 0" : "exit != 0")
               : "signaled",
           s->rss_warm, s->rss_end, s->heap_warm, s->heap_late, s->heap_max, s->stall_ms, s->calls,
           s->grants, s->replayed);
  }
  printf("result: %s (%u violation%s); replay: torture --duration %u --seed %" PRIu64 "%s\n",
         n == 0 ? "PASS" : "FAIL", n, n == 1 ? "" : "s", opt.duration_s, opt.seed, replay_extra());
}

/* The scripted step's history checked alone (one worker, name 0 of each
 * group): its verdict, printed as "proof step: VIOLATION: ..." lines, is
 * what a test of the test requires (CMakeLists.txt): a violation found only
 * by the randomized part would be found by chance. */
static void check_proof_alone(void) {
  tc_config_t cfg = {.workers = 1,
                     .threads = opt.threads,
                     .resources = 1,
                     .primitive = opt.primitive,
                     .sem_limit = opt.sem_limit,
                     .slack_ms = opt.slack_ms,
                     .t0_ns = t0_ns};
  tc_history_t *h = tc_new(&cfg);
  if (h != NULL)
    read_file(h, 0, tp_history_path());
  if (h == NULL || tc_check(h) < 0) {
    fprintf(stderr, "torture: out of memory\n");
    exit(2);
  }
  printf("proof step: %u violation%s in the scripted step alone\n", tc_violations(h),
         tc_violations(h) == 1 ? "" : "s");
  const char *r = tc_report(h);
  while (*r != '\0') {
    size_t n = strcspn(r, "\n");
    if (strncmp(r, "VIOLATION", 9) == 0)
      printf("proof step: %.*s\n", (int)n, r);
    r += n + (r[n] == '\n');
  }
  tc_free(h);
}

/* Runs every check over the workers' histories, prints the offending
 * records and the summary.  0 when nothing was wrong. */
static int check_and_report(const schedule_t *sched) {
  tc_config_t cfg = {.workers = opt.workers + (opt.proof_step ? 1 : 0),
                     .threads = opt.threads,
                     .resources = opt.resources,
                     .primitive = opt.primitive,
                     .sem_limit = opt.sem_limit,
                     .slack_ms = opt.slack_ms,
                     .t0_ns = t0_ns};
  tc_history_t *h = tc_new(&cfg);
  for (int i = 0; h != NULL && i < opt.workers; i++) {
    read_history(h, i);
    tc_worker_exit(h, i, workers[i].pid, workers[i].status, workers[i].killed);
  }
  if (h != NULL && opt.proof_step) /* the scripted step's pseudo-worker */
    read_file(h, opt.workers, tp_history_path());
  if (h == NULL || tc_check(h) < 0) {
    fprintf(stderr, "torture: out of memory\n");
    exit(2);
  }
  fputs(tc_report(h), stdout);
  if (opt.proof_step)
    check_proof_alone();
  print_summary(h, sched);
  int rc = tc_violations(h) == 0 ? 0 : 1;
  tc_free(h);
  return rc;
}

/* torture --selftest: the checker on the hand-made histories of
 * torture_cases.c (test_torture_check runs them too). */
static int selftest(void) {
  int bad = 0;
  printf("torture --selftest: the checker on hand-made histories\n");
  for (size_t i = 0; i < tc_n_cases; i++) {
    const tc_case_t *c = &tc_cases[i];
    tc_history_t *h = tc_case_run(c, opt.slack_ms);
    if (h == NULL) {
      fprintf(stderr, "torture: out of memory\n");
      return 2;
    }
    unsigned n = tc_violations(h);
    int ok = (n != 0) == c->must_fail;
    printf("  %-58s %s (%u violation%s)\n", c->name, ok ? "ok" : "WRONG", n, n == 1 ? "" : "s");
    bad |= !ok;
    tc_free(h);
  }
  printf("torture --selftest: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}

/* ---- run directory ------------------------------------------------------------------------ */

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  if (parse_args(argc, argv) != 0)
    return 2;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (opt.selftest)
    return selftest();
  static char worker_path[PATH_MAX + 32];
  if (opt.worker_path == NULL) {
    fx_beside_self(worker_path, sizeof worker_path, "torture_worker");
    opt.worker_path = worker_path;
  }
  if (access(opt.worker_path, X_OK) != 0) {
    fprintf(stderr, "torture: worker binary %s: %s\n", opt.worker_path, strerror(errno));
    return 2;
  }
  char comment[64];
  snprintf(comment, sizeof comment, "redlock-torture-%d-%llu", (int)getpid(),
           proc_start_time((long)getpid()));
  ipt_init(comment);
  install_handlers();
  /* The whole run's budget: the run, the drain (each worker's last calls end
   * within their bounds, or its own hang watchdog aborts it) and the check.
   * It must fire before ctest's TIMEOUT (tests/torture/CMakeLists.txt), so
   * that the iptables rules are removed even then. */
  alarm(opt.duration_s + 150);

  printf("torture: seed %" PRIu64 ", duration %u s, %d workers x %d threads, %d resources; "
         "replay with: torture --duration %u --seed %" PRIu64 "%s\n",
         opt.seed, opt.duration_s, opt.workers, opt.threads, opt.resources, opt.duration_s,
         opt.seed, replay_extra());

  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0')
    tmp = "/tmp";
  snprintf(run_dir, sizeof run_dir, "%s/redlock-torture-%d-XXXXXX", tmp, (int)getpid());
  if (mkdtemp(run_dir) == NULL) {
    fprintf(stderr, "torture: mkdtemp: %s\n", strerror(errno));
    return 2;
  }
  char path[600];
  snprintf(path, sizeof path, "%s/faults.log", run_dir);
  fault_log = fopen(path, "w");

  if (opt.cluster)
    n_masters = TORTURE_CLUSTER_VOTER;
  rh_options_t ropts = {.enable_debug = 1};
  char tls_files[3][600];
  if (opt.tls_certs != NULL) {
    snprintf(tls_files[0], sizeof tls_files[0], "%s/server.crt", opt.tls_certs);
    snprintf(tls_files[1], sizeof tls_files[1], "%s/server.key", opt.tls_certs);
    snprintf(tls_files[2], sizeof tls_files[2], "%s/ca.crt", opt.tls_certs);
    ropts.tls_cert_file = tls_files[0];
    ropts.tls_key_file = tls_files[1];
    ropts.tls_ca_cert_file = tls_files[2];
  }
  /* --failover: roles swap, so every server is set up to be either: a
   * full sync starts at once (not after the diskless delay of 5 s), and over
   * TLS when the masters speak only TLS. */
  const char *repl_args[] = {"--repl-diskless-sync-delay", "0", "--tls-replication", "yes", NULL};
  if (opt.failover) {
    if (opt.tls_certs == NULL)
      repl_args[2] = NULL;
    ropts.extra_args = repl_args;
  }
  if (fx_servers_start(&fx, n_masters, &ropts) != 0) {
    fprintf(stderr, "torture: set-up error: could not start %d redis-server\n", n_masters);
    return 2;
  }
  for (int m = 0; m < n_masters; m++)
    pair[m][0] = fx.servers[m];
  if (opt.failover && start_replicas(&ropts) != 0) {
    fx_servers_stop(&fx);
    return 2;
  }
  for (int m = 0; m < n_masters; m++) {
    ipt_set_port(m, rh_server_port(fx.servers[m]));
    if (fault_proxy_start(&proxies[m], "127.0.0.1", rh_server_port(fx.servers[m])) != 0) {
      fprintf(stderr, "torture: set-up error: could not start a fault proxy\n");
      for (int k = 0; k < m; k++)
        fault_proxy_stop(proxies[k]);
      fx_servers_stop(&fx);
      rh_cluster_free(replicas, N_MASTERS);
      return 2;
    }
  }
  ipt_probe(opt.no_iptables);
  if (opt.cluster && tcl_start(flog, opt.resources) != 0)
    return 2; /* the masters die with us (PDEATHSIG) */

  if (opt.proof_step) {
    t0_ns = torture_now_ns(); /* the step's log lines: relative to its start */
    proof_step();
  }

  schedule_t sched = {0};
  make_schedule(
      &sched, opt.seed, opt.duration_s * 1000u, ipt_usable(), opt.max_ttl_ms, !opt.no_end_faults,
      (opt.failover ? SCHED_FAILOVER : 0) | (opt.no_kill ? SCHED_NO_KILL : 0) |
          (opt.cluster ? SCHED_CLUSTER : 0) | (opt.takeovers ? SCHED_CLUSTER_TAKEOVERS : 0));
  for (int m = 0; m < n_masters; m++) {
    flog("master %d: redis port %d (pid %d), proxy port %d", m, rh_server_port(fx.servers[m]),
         (int)rh_server_pid(fx.servers[m]), fault_proxy_port(proxies[m]));
    if (replicas[m] != NULL)
      flog("master %d: replica port %d (pid %d)", m, rh_server_port(replicas[m]),
           (int)rh_server_pid(replicas[m]));
  }

  t0_ns = torture_now_ns();
  uint64_t until_ns = t0_ns + (uint64_t)opt.duration_s * 1000000000u;
  for (int i = 0; i < opt.workers; i++) {
    if (spawn_worker(i, until_ns) != 0) {
      fprintf(stderr, "torture: set-up error: fork failed\n");
      return 2; /* workers and servers die with us (PDEATHSIG) */
    }
  }
  flog("run starts: %d workers, %zu scheduled events", opt.workers, sched.n);

  /* The fault schedule. */
  for (size_t i = 0; i < sched.n; i++) {
    const event_t *e = &sched.ev[i];
    uint64_t at = t0_ns + e->at_ms * 1000000u;
    for (;;) {
      poll_workers();
      unsigned tick = foreign_tick() ? 1 : 20;
      uint64_t now = torture_now_ns();
      if (now >= at)
        break;
      uint64_t left = (at - now) / 1000000u;
      fx_sleep_ms(left > tick ? tick : (unsigned)(left > 0 ? left : 1));
    }
    if (opt.cluster && e->master == TORTURE_CLUSTER_VOTER) {
      if (!e->end)
        fault_count[e->kind]++;
      tcl_execute(e);
    } else {
      execute(e);
    }
  }
  flog("schedule done; the end-of-run faults stay until every worker has exited");

  /* Drain: each worker stops starting calls at until_ns; its last calls end
   * within their bounds (+ its own hang watchdog); then it closes. */
  uint64_t drain_deadline = until_ns + 90ull * 1000000000u;
  while (poll_workers() > 0) {
    if (torture_now_ns() >= drain_deadline) {
      for (int i = 0; i < opt.workers; i++) {
        worker_t *w = &workers[i];
        if (!w->done && w->pid > 0) {
          fprintf(stderr,
                  "torture: worker %d (pid %d) is still running 90 s after the end: "
                  "killing it\n",
                  i, (int)w->pid);
          kill(w->pid, SIGKILL);
          int status;
          waitpid(w->pid, &status, 0);
          w->done = 1;
          w->killed = 1;
          w->status = status;
        }
      }
      break;
    }
    fx_sleep_ms(20);
  }
  flog("all workers ended");
  heal_all();
  if (opt.cluster)
    tcl_heal();
  flog("every fault healed");

  for (int m = 0; m < n_masters; m++)
    fault_proxy_stop(proxies[m]);
  fx_servers_stop(&fx);
  rh_cluster_free(replicas, N_MASTERS);
  if (opt.cluster)
    tcl_stop();
  ipt_cleanup();

  int rc = check_and_report(&sched);
  free(sched.ev);
  if (fault_log != NULL)
    fclose(fault_log);
  if (rc == 0 && !opt.keep) {
    rh_remove_dir(run_dir);
  } else {
    printf("run directory kept: %s (worker-N.hist: histories, worker-N.log: client logs, "
           "faults.log: the fault timeline, times relative to the start)\n",
           run_dir);
  }
  alarm(0);
  return rc;
}
