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
 *           [--mutate-sem-refused]
 *   torture --selftest
 *
 * --tls-certs DIR (ca.crt, server.crt, server.key, as tests/tls/make_certs.sh
 * writes them): the masters speak TLS only and the workers use rediss://
 * through the proxies (which relay bytes); the driver's own commands go over
 * each master's private unix socket.
 *
 * Defaults: 60 s, seed 1, 4 workers x 3 threads, 3 resources, request
 * timeout 100 ms, deadline slack 2000 ms (5000 ms under ASan).  The fault
 * schedule is a pure function of --seed and --duration (printed at the start
 * and the end), so a failing run is replayed with the same two options; the
 * workers' own random choices are seeded from it too, though thread
 * scheduling is not reproducible.
 *
 * Set-up: 5 redis-server processes from tests/support/redis_harness (no
 * persistence, DEBUG enabled for local connections), one fault proxy
 * (tests/support/fault_proxy) in front of each, and K worker processes
 * (torture_worker, fork + exec, dying with this process) that reach the
 * masters only through the proxies.  Workers use fencing, the restart
 * quarantine with a max TTL of 1500 ms (restarted masters rejoin during the
 * run), a lock TTL of 1000 ms and a short request timeout.
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
 * Every fault of the main part ends by 1 s before the end; at the end, when
 * the workers stop starting calls, two masters are made unresponsive
 * (sigstop, proxy stall or blackhole, iptables) and stay so until every
 * worker has exited, so that the workers' last unlocks and their
 * redlock_close run against freshly hung masters.
 * Every fault is inside the safety model of docs/safety.md (no clock steps,
 * keys lost only by restarts, which the quarantine covers): any violation
 * found by the checker is a bug in the library (or in this test).
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
 * permit as granted.  Each must make the matching check fail.
 * It prints a summary (grants per resource, call outcomes, faults injected by
 * kind, workers' memory, seed) and exits 1 on any violation, printing the
 * offending records; 2 on a set-up error; 4 from its own watchdog.  The run
 * directory (histories, worker logs, the fault log) is removed after a
 * passing run and kept, and named, after a failing one (--keep keeps it). */
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "fault_proxy.h"
#include "redis_harness.h"
#include "redlock.h"
#include "torture_common.h"

#define N_MASTERS 5
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
  int primitive; /* PRIM_*: what the workers take */
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
          "               [--mutate-sem-refused]\n"
          "       torture --selftest   (the checker on hand-made histories)\n");
}

static int parse_args(int argc, char **argv) {
  opt.duration_s = 60;
  opt.seed = 1;
  opt.workers = 4;
  opt.threads = 3;
  opt.resources = 3;
  opt.ttl_ms = TORTURE_TTL_MS;
  opt.max_ttl_ms = TORTURE_MAX_TTL_MS;
  opt.timing.request_ms = TORTURE_REQUEST_MS;
  opt.timing.connect_ms = TORTURE_CONNECT_MS;
  opt.timing.retry = TORTURE_RETRY;
  opt.timing.retry_delay_ms = TORTURE_RETRY_DELAY_MS;
  opt.timing.retry_jitter_ms = TORTURE_RETRY_JITTER_MS;
  opt.timing.wait_ms = TORTURE_WAIT_MS;
  opt.sem_limit = TORTURE_SEM_LIMIT;
  opt.slack_ms = TORTURE_ASAN ? 5000 : 2000;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--no-iptables") == 0) {
      opt.no_iptables = 1;
      continue;
    }
    if (strcmp(a, "--keep") == 0) {
      opt.keep = 1;
      continue;
    }
    if (strcmp(a, "--verbose") == 0) {
      opt.verbose = 1;
      continue;
    }
    if (strcmp(a, "--no-end-faults") == 0) {
      opt.no_end_faults = 1;
      continue;
    }
    if (strcmp(a, "--mutate-sem-refused") == 0) {
      opt.mutate_sem_refused = 1;
      continue;
    }
    if (strcmp(a, "--selftest") == 0) {
      opt.selftest = 1;
      continue;
    }
    if (strcmp(a, "--help") == 0 || i + 1 >= argc) {
      usage();
      return -1;
    }
    const char *v = argv[++i];
    if (strcmp(a, "--duration") == 0)
      opt.duration_s = (unsigned)strtoul(v, NULL, 10);
    else if (strcmp(a, "--seed") == 0)
      opt.seed = strtoull(v, NULL, 10);
    else if (strcmp(a, "--workers") == 0)
      opt.workers = atoi(v);
    else if (strcmp(a, "--threads") == 0)
      opt.threads = atoi(v);
    else if (strcmp(a, "--resources") == 0)
      opt.resources = atoi(v);
    else if (strcmp(a, "--request-ms") == 0)
      opt.timing.request_ms = (unsigned)strtoul(v, NULL, 10);
    else if (strcmp(a, "--slack-ms") == 0)
      opt.slack_ms = (unsigned)strtoul(v, NULL, 10);
    else if (strcmp(a, "--worker") == 0)
      opt.worker_path = v;
    else if (strcmp(a, "--mutate-overhold-ms") == 0)
      opt.mutate_overhold_ms = (unsigned)strtoul(v, NULL, 10);
    else if (strcmp(a, "--tls-certs") == 0)
      opt.tls_certs = v;
    else if (strcmp(a, "--sem-limit") == 0)
      opt.sem_limit = (unsigned)strtoul(v, NULL, 10);
    else if (strcmp(a, "--primitive") == 0) {
      opt.primitive = -1;
      for (int p = 0; p < PRIM_N; p++)
        if (strcmp(v, torture_prim_names[p]) == 0)
          opt.primitive = p;
    } else {
      usage();
      return -1;
    }
  }
  if (opt.duration_s < 5 || opt.workers < 1 || opt.workers > MAX_WORKERS || opt.threads < 1 ||
      opt.threads > 32 || opt.resources < 1 || opt.resources > 64 || opt.timing.request_ms < 1 ||
      opt.primitive < 0 || opt.sem_limit < 1 || opt.sem_limit > REDLOCK_MAX_SEM_LIMIT) {
    usage();
    return -1;
  }
  opt.timing.sem_limit = opt.sem_limit;
  return 0;
}

/* ---- small helpers ------------------------------------------------------------------- */

static uint64_t t0_ns; /* start of the run: schedule offsets are from here */

static void sleep_ms(unsigned ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static double rel_s(uint64_t ns) { return ns >= t0_ns ? (double)(ns - t0_ns) / 1e9 : -(double)(t0_ns - ns) / 1e9; }

/* Writes what the signal handlers may write: no stdio. */
static void say(const char *s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

/* ---- iptables ------------------------------------------------------------------------ */

static char ipt_path[256];
static int ipt_ok;
static char ipt_comment[64];
static char ipt_port[N_MASTERS][16];
static volatile sig_atomic_t ipt_active[N_MASTERS];

/* fork + execv + waitpid: async-signal-safe, so the signal handlers can use
 * it.  Returns the exit status, or -1. */
static int run_argv(char *const argv[], int quiet) {
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    if (quiet) {
      int fd = open("/dev/null", O_WRONLY);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
    }
    execv(argv[0], argv);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* iptables -w 5 <-I|-D> INPUT -i lo -p tcp --dport P -m comment --comment C -j DROP */
static int ipt_rule(const char *op, const char *port, int quiet) {
  char *argv[] = {ipt_path, "-w", "5", (char *)op, "INPUT", "-i", "lo", "-p", "tcp", "--dport",
                  (char *)port, "-m", "comment", "--comment", ipt_comment, "-j", "DROP", NULL};
  return run_argv(argv, quiet);
}

static int ipt_add(int m) {
  if (ipt_rule("-I", ipt_port[m], 0) != 0)
    return -1;
  ipt_active[m] = 1;
  return 0;
}

static int ipt_del(int m) {
  int rc = ipt_rule("-D", ipt_port[m], 0);
  ipt_active[m] = 0;
  return rc == 0 ? 0 : -1;
}

/* Removes every rule this process may have added: async-signal-safe. */
static void ipt_cleanup(void) {
  if (!ipt_ok)
    return;
  for (int m = 0; m < N_MASTERS; m++) {
    if (!ipt_active[m])
      continue;
    /* Delete until it is gone (a rule can only be there once, but an
     * interrupted add may have left one behind without ipt_active). */
    for (int k = 0; k < 4 && ipt_rule("-D", ipt_port[m], 1) == 0; k++) {
    }
    ipt_active[m] = 0;
  }
}

static int find_iptables(void) {
  static const char *dirs[] = {"/usr/sbin", "/sbin", "/usr/bin", "/bin"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    snprintf(ipt_path, sizeof ipt_path, "%s/iptables", dirs[i]);
    if (access(ipt_path, X_OK) == 0)
      return 0;
  }
  return -1;
}

/* The start time of a process (field 22 of /proc/<pid>/stat, clock ticks
 * since boot), 0 when it does not exist or is a zombie.  With the PID it
 * names a process for good: a PID can be reused, the pair cannot. */
static unsigned long long proc_start_time(long pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
  if (p == NULL || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
    return 0;
  p += 2; /* field 3, the state */
  for (int field = 3; field < 22 && p != NULL; field++) {
    p = strchr(p, ' ');
    if (p != NULL)
      p++;
  }
  return p != NULL ? strtoull(p, NULL, 10) : 0;
}

/* Removes the rules a previous torture run left behind when it was killed
 * (SIGKILL cannot be caught).  Every rule carries the comment
 * "redlock-torture-<pid>-<start time>" of the run that added it; a rule
 * whose run no longer exists (no such process, a zombie, or a different
 * process that reuses the PID) is deleted.  Rules of live runs, and any
 * other rule, are left alone. */
static void ipt_sweep_stale(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "%s -w 5 -S INPUT 2>/dev/null", ipt_path);
  FILE *p = popen(cmd, "r");
  if (p == NULL)
    return;
  char line[512];
  char stale[16][512];
  int n_stale = 0;
  while (fgets(line, sizeof line, p) != NULL && n_stale < 16) {
    const char *c = strstr(line, "redlock-torture-");
    if (c == NULL || strncmp(line, "-A INPUT ", 9) != 0)
      continue;
    char *end;
    long owner = strtol(c + strlen("redlock-torture-"), &end, 10);
    unsigned long long started = *end == '-' ? strtoull(end + 1, NULL, 10) : 0;
    if (owner <= 0)
      continue;
    unsigned long long now_started = proc_start_time(owner);
    if (now_started != 0 && (started == 0 || started == now_started))
      continue; /* its run is alive */
    snprintf(stale[n_stale++], sizeof stale[0], "%s", line);
  }
  pclose(p);
  for (int i = 0; i < n_stale; i++) {
    char *argv[40];
    int argc = 0;
    argv[argc++] = ipt_path;
    argv[argc++] = "-w";
    argv[argc++] = "5";
    char *save = NULL;
    for (char *tok = strtok_r(stale[i], " \n", &save); tok != NULL && argc < 39;
         tok = strtok_r(NULL, " \n", &save))
      argv[argc++] = strcmp(tok, "-A") == 0 ? "-D" : tok;
    argv[argc] = NULL;
    int rc = run_argv(argv, 1);
    printf("torture: removed an iptables rule left by a run that no longer exists (%s)\n",
           rc == 0 ? "ok" : "failed");
  }
}

/* iptables works when we can add and remove a rule on a master's port. */
static void ipt_probe(void) {
  if (opt.no_iptables) {
    printf("torture: --no-iptables: skipping the iptables DROP fault\n");
    return;
  }
  if (geteuid() != 0 || find_iptables() != 0) {
    printf("torture: iptables is not usable here (needs root and iptables): skipping the "
           "iptables DROP fault\n");
    return;
  }
  ipt_ok = 1; /* for the cleanup of a half-done probe */
  ipt_sweep_stale();
  if (ipt_rule("-I", ipt_port[0], 1) != 0) {
    ipt_ok = 0;
    printf("torture: iptables refused a rule (no permission or no nf_tables here): skipping "
           "the iptables DROP fault\n");
    return;
  }
  ipt_active[0] = 1;
  if (ipt_del(0) != 0) {
    ipt_cleanup();
    ipt_ok = 0;
    printf("torture: iptables could not delete its probe rule: skipping the iptables DROP "
           "fault\n");
  }
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

static rh_server_t *masters[N_MASTERS];
static fault_proxy_t *proxies[N_MASTERS];
static redisContext *sleeping[N_MASTERS]; /* DEBUG SLEEP connections awaiting the reply */
static FILE *fault_log;

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

/* Sends one command and does not wait for its reply (DEBUG SLEEP blocks the
 * server; the driver must not). */
static redisContext *send_no_wait(rh_server_t *s, const char *cmd) {
  struct timeval tv = {.tv_sec = 1, .tv_usec = 0};
  /* A TLS master's port speaks TLS only: use its plain unix socket. */
  const char *unix_path = opt.tls_certs != NULL ? rh_server_unix_path(s) : NULL;
  redisContext *c = unix_path != NULL ? redisConnectUnixWithTimeout(unix_path, tv)
                                      : redisConnectWithTimeout("127.0.0.1", rh_server_port(s), tv);
  if (c == NULL)
    return NULL;
  if (c->err || redisSetTimeout(c, tv) != REDIS_OK || redisAppendCommand(c, cmd) != REDIS_OK) {
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

/* ---- the fault schedule ------------------------------------------------------------ */

enum {
  F_KILL,
  F_SIGSTOP,
  F_IPTABLES,
  F_CLIENT_PAUSE,
  F_DEBUG_SLEEP,
  F_PROXY_DELAY,
  F_PROXY_STALL,
  F_PROXY_BLACKHOLE,
  F_PROXY_REFUSE,
  F_N_PERSISTENT,
  F_SCRIPT_FLUSH = F_N_PERSISTENT,
  F_CLIENT_KILL,
  F_CLIENT_KILL_PUBSUB,
  F_PROXY_RESET,
  F_N_KINDS
};

static const char *const fault_names[F_N_KINDS] = {
    "kill",         "sigstop",          "iptables",           "client-pause",
    "debug-sleep",  "proxy-delay",      "proxy-stall",        "proxy-blackhole",
    "proxy-refuse", "script-flush",     "client-kill",        "client-kill-pubsub",
    "proxy-reset"};

typedef struct {
  uint64_t at_ms; /* offset from t0 */
  unsigned order; /* creation order: a stable tie-break */
  int master, kind, end;
  unsigned param; /* duration (ms), or the proxy delay */
  int window;     /* part of a no-quorum window */
} event_t;

typedef struct {
  event_t *ev;
  size_t n, cap;
  unsigned windows;
} schedule_t;

static void push(schedule_t *s, uint64_t at, int master, int kind, int end, unsigned param,
                 int window) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->ev = realloc(s->ev, s->cap * sizeof *s->ev);
    if (s->ev == NULL) {
      fprintf(stderr, "torture: out of memory\n");
      exit(2);
    }
  }
  s->ev[s->n] = (event_t){at, (unsigned)s->n, master, kind, end, param, window};
  s->n++;
}

static int event_cmp(const void *a, const void *b) {
  const event_t *x = a, *y = b;
  if (x->at_ms != y->at_ms)
    return x->at_ms < y->at_ms ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* A persistent fault's duration (ms) and parameter. */
static unsigned fault_duration(uint64_t *rng, int kind, unsigned *param) {
  *param = 0;
  switch (kind) {
  case F_KILL:
    return (unsigned)torture_range(rng, 0, 800); /* time down */
  case F_SIGSTOP:
    return (unsigned)torture_range(rng, 100, 1500);
  case F_IPTABLES:
    return (unsigned)torture_range(rng, 200, 1500);
  case F_CLIENT_PAUSE:
    return (unsigned)torture_range(rng, 100, 1000);
  case F_DEBUG_SLEEP:
    return (unsigned)torture_range(rng, 100, 600);
  case F_PROXY_DELAY:
    *param = (unsigned)torture_range(rng, 20, 250);
    return (unsigned)torture_range(rng, 500, 3000);
  case F_PROXY_STALL:
    return (unsigned)torture_range(rng, 100, 1500);
  case F_PROXY_BLACKHOLE:
    return (unsigned)torture_range(rng, 200, 1500);
  default: /* F_PROXY_REFUSE */
    return (unsigned)torture_range(rng, 200, 1000);
  }
}

/* The schedule is a pure function of (seed, duration, iptables usable): it
 * is simulated on its own virtual timeline, where a master counts as faulted
 * from a fault's start to its end, and a killed one until its restart
 * quarantine is surely over (restart + max TTL + 1 s of uptime rounding
 * + margin).  Every fault of the main part ends by duration - 1 s; then, at
 * the end (when the workers stop starting calls), two masters are made
 * unresponsive (SIGSTOP, a stalled or black-holed proxy, an iptables DROP)
 * and stay so until every worker has exited: the workers' last unlocks and
 * their redlock_close run with two masters hung, and must still return
 * within their bounds. */
static void make_schedule(schedule_t *s, uint64_t seed, unsigned duration_ms, int with_iptables) {
  uint64_t rng = seed ^ 0x746f727475726500ull;
  uint64_t busy_until[N_MASTERS] = {0};
  uint64_t t = 500;
  uint64_t t_final = duration_ms > 1000 ? duration_ms - 1000u : 0;
  uint64_t window_next = torture_range(&rng, 6000, 12000);
  static const int window_kinds[] = {F_SIGSTOP, F_IPTABLES, F_PROXY_BLACKHOLE, F_PROXY_STALL,
                                     F_CLIENT_PAUSE};
  static const int final_kinds[] = {F_SIGSTOP, F_IPTABLES, F_PROXY_BLACKHOLE, F_PROXY_STALL};
  while (t + 300 < duration_ms) {
    int free_m[N_MASTERS], n_free = 0;
    for (int m = 0; m < N_MASTERS; m++)
      if (busy_until[m] <= t)
        free_m[n_free++] = m;
    int busy = N_MASTERS - n_free;
    unsigned w = (unsigned)torture_range(&rng, 400, 1200);
    if (t >= window_next && busy < 3 && t + w <= t_final) {
      /* No-quorum window: 3 masters faulted at once for a short while. */
      for (int k = busy; k < 3; k++) {
        int pick = (int)torture_range(&rng, 0, (uint64_t)n_free - 1);
        int m = free_m[pick];
        free_m[pick] = free_m[--n_free];
        int kind;
        do
          kind = window_kinds[torture_range(&rng, 0, 4)];
        while (kind == F_IPTABLES && !with_iptables);
        push(s, t, m, kind, 0, w, 1);
        if (kind != F_CLIENT_PAUSE)
          push(s, t + w, m, kind, 1, w, 1);
        busy_until[m] = t + w;
      }
      s->windows++;
      window_next = t + torture_range(&rng, 10000, 18000);
      t += w + torture_range(&rng, 100, 400);
      continue;
    }
    unsigned r = (unsigned)torture_range(&rng, 0, 99);
    if (r < 30 && n_free > 0) {
      int m = free_m[torture_range(&rng, 0, (uint64_t)n_free - 1)];
      int kind = F_N_PERSISTENT + (int)torture_range(&rng, 0, F_N_KINDS - F_N_PERSISTENT - 1);
      push(s, t, m, kind, 0, 0, 0);
    } else if (busy < 2 && n_free > 0) {
      int m = free_m[torture_range(&rng, 0, (uint64_t)n_free - 1)];
      int kind;
      do
        kind = (int)torture_range(&rng, 0, F_N_PERSISTENT - 1);
      while (kind == F_IPTABLES && !with_iptables);
      unsigned param;
      unsigned dur = fault_duration(&rng, kind, &param);
      uint64_t busy_end = t + dur + (kind == F_KILL ? opt.max_ttl_ms + 1000u + 500u : 0u);
      if (busy_end <= t_final) {
        push(s, t, m, kind, 0, kind == F_PROXY_DELAY ? param : dur, 0);
        /* CLIENT PAUSE and DEBUG SLEEP end by themselves; their end event
         * only collects the reply / marks the time. */
        push(s, t + dur, m, kind, 1, kind == F_PROXY_DELAY ? param : dur, 0);
        busy_until[m] = busy_end;
      }
    }
    t += torture_range(&rng, 150, 700);
  }
  /* The end of the run: at the instant the workers stop starting calls, two
   * masters stop answering.  Every earlier fault ended by t_final (see the
   * clipping above), so these two are the only ones. */
  for (int k = 0; k < (opt.no_end_faults ? 0 : 2); k++) {
    int m;
    do
      m = (int)torture_range(&rng, 0, N_MASTERS - 1);
    while (busy_until[m] == UINT64_MAX);
    int kind;
    do
      kind = final_kinds[torture_range(&rng, 0, 3)];
    while (kind == F_IPTABLES && !with_iptables);
    push(s, duration_ms, m, kind, 0, 0, 2);
    busy_until[m] = UINT64_MAX;
  }
  qsort(s->ev, s->n, sizeof *s->ev, event_cmp);
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
          rh_server_port(masters[m]));
}

/* The result of an rh_server_command: the command must have reached the
 * server and not been refused. */
static void command_result(int m, const char *what, int rc, const char *reply) {
  if (rc != 0 || strncmp(reply, "ERR", 3) == 0)
    inj_error(what, m);
}

static void execute(const event_t *e) {
  int m = e->master;
  rh_server_t *s = masters[m];
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
           fault_proxy_port(p), fault_names[e->kind], e->window ? " [no-quorum window]" : "",
           e->param, e->kind == F_PROXY_DELAY ? " delay" : "");
    }
  } else {
    flog("master %d: %s end", m, fault_names[e->kind]);
  }
  switch (e->kind) {
  case F_KILL:
    if (!e->end) {
      if (rh_server_kill(s) != 0)
        inj_error("kill", m);
      else
        down[m] = 1;
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
      if (rh_server_pause(s) != 0)
        inj_error("sigstop", m);
      else
        paused[m] = 1;
    } else if (paused[m]) {
      rh_server_resume(s);
      paused[m] = 0;
    }
    break;
  case F_IPTABLES:
    if (!e->end) {
      if (ipt_add(m) != 0)
        inj_error("iptables DROP", m);
    } else if (ipt_active[m] && ipt_del(m) != 0) {
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
  case F_SCRIPT_FLUSH: {
    char buf[256];
    int rc = rh_server_command(s, buf, sizeof buf, "SCRIPT FLUSH");
    command_result(m, "SCRIPT FLUSH", rc, buf);
    break;
  }
  case F_CLIENT_KILL: {
    /* Every normal connection but this one (SKIPME yes is the default). */
    char buf[256];
    int rc = rh_server_command(s, buf, sizeof buf, "CLIENT KILL TYPE normal");
    command_result(m, "CLIENT KILL TYPE normal", rc, buf);
    break;
  }
  case F_CLIENT_KILL_PUBSUB: {
    char buf[256];
    int rc = rh_server_command(s, buf, sizeof buf, "CLIENT KILL TYPE pubsub");
    command_result(m, "CLIENT KILL TYPE pubsub", rc, buf);
    break;
  }
  case F_PROXY_RESET:
    fault_proxy_reset_all(p);
    break;
  }
}

/* Ends every fault still in force (the schedule's own end events normally
 * did already). */
static void heal_all(void) {
  for (int m = 0; m < N_MASTERS; m++) {
    if (paused[m]) {
      rh_server_resume(masters[m]);
      paused[m] = 0;
    }
    if (down[m]) {
      if (rh_server_restart(masters[m]) != 0)
        fprintf(stderr, "torture: master %d could not be restarted\n", m);
      down[m] = 0;
    }
    if (ipt_active[m])
      ipt_del(m);
    if (sleeping[m] != NULL) {
      collect_reply(sleeping[m]);
      sleeping[m] = NULL;
    }
    if (proxies[m] != NULL) {
      fault_proxy_set_delay(proxies[m], 0);
      fault_proxy_set_stall(proxies[m], 0);
      fault_proxy_set_blackhole(proxies[m], 0);
      fault_proxy_set_refuse(proxies[m], 0);
    }
  }
}

/* ---- workers -------------------------------------------------------------------------- */

typedef struct {
  pid_t pid;
  int done, status, killed;
  char hist[600], log[600];
} worker_t;

static worker_t workers[MAX_WORKERS];
static char run_dir[400];

static void default_worker_path(char *buf, size_t size) {
  char self[PATH_MAX - 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    snprintf(buf, size, "torture_worker");
    return;
  }
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (slash != NULL)
    *slash = '\0';
  snprintf(buf, size, "%s/torture_worker", self);
}

static int spawn_worker(int id, uint64_t until_ns) {
  worker_t *w = &workers[id];
  snprintf(w->hist, sizeof w->hist, "%s/worker-%d.hist", run_dir, id);
  snprintf(w->log, sizeof w->log, "%s/worker-%d.log", run_dir, id);
  /* Everything is built before fork: the child only execs. */
  char s_id[16], s_until[32], s_threads[16], s_res[16], s_seed[32], s_ttl[16], s_max[16], s_req[16],
      s_conn[16], s_retry[16], s_delay[16], s_jitter[16], s_wait[16], s_mutate[16], s_sem[16];
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
  char uris[N_MASTERS][64];
  char tls_ca[600];
  const char *argv[80];
  int argc = 0;
  argv[argc++] = opt.worker_path;
#define ARG(name, value)                                                                       \
  do {                                                                                         \
    argv[argc++] = name;                                                                       \
    argv[argc++] = value;                                                                      \
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
  for (int m = 0; m < N_MASTERS; m++) {
    snprintf(uris[m], sizeof uris[m], "%s://127.0.0.1:%d", opt.tls_certs ? "rediss" : "redis",
             fault_proxy_port(proxies[m]));
    ARG("--node", uris[m]);
  }
  if (opt.tls_certs != NULL) {
    snprintf(tls_ca, sizeof tls_ca, "%s/ca.crt", opt.tls_certs);
    ARG("--tls-ca", tls_ca);
  }
#undef ARG
  argv[argc] = NULL;
  pid_t parent = getpid();
  sigset_t none;
  sigemptyset(&none);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    /* Die with the driver; start from a clean signal state. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
      _exit(127);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
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

/* ---- the checker ---------------------------------------------------------------------- */

/* What a grant is of (the first letter of its resource, torture_common.h):
 * names of different groups are independent. */
enum { GRP_LOCK, GRP_SEM, GRP_RW, GRP_ELECT, GRP_N };
static const char *const grp_prefix[GRP_N] = {"r", "s", "rw", "e"};
static const char *const grp_title[GRP_N] = {"locks", "semaphore permits", "read-write holds",
                                             "election terms"};

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
  int kind; /* index in call_kinds */
  int wid, tid, rc;
  uint64_t start, end, bound_ms;
  char *line;
} call_t;

typedef struct {
  int present;
  long rss_warm, rss_end;
  unsigned stall_ms;
  uint64_t calls, grants;
  long heap_warm, heap_late, heap_max;
  uint64_t replayed;
} summary_t;

static const char *const call_kinds[] = {TK_OPEN,   TK_LOCK,   TK_TRYLOCK, TK_WAIT,
                                         TK_EXTEND, TK_UNLOCK, TK_CLOSE,   TK_SEM,
                                         TK_READ,   TK_WRITE,  TK_ELECT,   TK_RESIGN};
#define N_CALL_KINDS 12
#define N_RC 13 /* 0 .. -12 */

static grant_t *grants;
static size_t n_grants, cap_grants;
static call_t *calls;
static size_t n_calls, cap_calls;
static summary_t summaries[MAX_WORKERS];
static unsigned violations;

static void *grow(void *p, size_t *cap, size_t elem) {
  *cap = *cap ? 2 * *cap : 1024;
  void *q = realloc(p, *cap * elem);
  if (q == NULL) {
    fprintf(stderr, "torture: out of memory\n");
    exit(2);
  }
  return q;
}

static uint64_t grant_key(int wid, int tid, unsigned seq) {
  return ((uint64_t)(unsigned)wid << 48) | ((uint64_t)(unsigned)tid << 32) | seq;
}

static int grant_key_cmp(const void *a, const void *b) {
  const grant_t *x = a, *y = b;
  uint64_t kx = grant_key(x->wid, x->tid, x->seq), ky = grant_key(y->wid, y->tid, y->seq);
  return kx < ky ? -1 : kx > ky;
}

static grant_t *find_grant(int wid, int tid, unsigned seq) {
  if (n_grants == 0)
    return NULL;
  grant_t key = {.wid = wid, .tid = tid, .seq = seq};
  return bsearch(&key, grants, n_grants, sizeof *grants, grant_key_cmp);
}

static int checker_quiet; /* the self-test prints only its own verdicts */

static void violation(const char *fmt, ...) {
  violations++;
  if (checker_quiet)
    return;
  va_list ap;
  va_start(ap, fmt);
  printf("VIOLATION: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

typedef struct {
  char *line;
  char type;
} pending_t;

/* Reads one worker's history.  E and U lines are applied after every G line
 * is known (they refer to grants by (worker, thread, seq)). */
static void read_history(int id, pending_t **pend, size_t *n_pend, size_t *cap_pend) {
  FILE *f = fopen(workers[id].hist, "r");
  if (f == NULL) {
    violation("worker %d wrote no history (%s)", id, workers[id].hist);
    return;
  }
  char line[1024];
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    switch (line[0]) {
    case 'C': {
      char kind[16];
      call_t c = {0};
      if (sscanf(line, "C %15s %d %d %" SCNu64 " %" SCNu64 " %d %" SCNu64, kind, &c.wid, &c.tid,
                 &c.start, &c.end, &c.rc, &c.bound_ms) != 7) {
        violation("worker %d: unreadable record: %s", id, line);
        break;
      }
      c.kind = -1;
      for (int k = 0; k < N_CALL_KINDS; k++)
        if (strcmp(kind, call_kinds[k]) == 0)
          c.kind = k;
      c.line = strdup(line);
      if (n_calls == cap_calls)
        calls = grow(calls, &cap_calls, sizeof *calls);
      calls[n_calls++] = c;
      break;
    }
    case 'G': {
      grant_t g = {0};
      char res[32];
      if (sscanf(line, "G %d %d %u %31s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &g.wid,
                 &g.tid, &g.seq, res, &g.fence, &g.call_start, &g.grant, &g.ve) != 8 ||
          strchr("rsRWe", res[0]) == NULL || res[0] == '\0') {
        violation("worker %d: unreadable record: %s", id, line);
        break;
      }
      g.grp = res[0] == 'r'   ? GRP_LOCK
              : res[0] == 's' ? GRP_SEM
              : res[0] == 'e' ? GRP_ELECT
                              : GRP_RW;
      g.write = res[0] == 'W';
      g.res = atoi(res + 1);
      if (g.res < 0 || g.res >= opt.resources) {
        violation("worker %d: unknown resource: %s", id, line);
        break;
      }
      g.g_line = strdup(line);
      if (n_grants == cap_grants)
        grants = grow(grants, &cap_grants, sizeof *grants);
      grants[n_grants++] = g;
      break;
    }
    case 'E':
    case 'U':
      if (*n_pend == *cap_pend)
        *pend = grow(*pend, cap_pend, sizeof **pend);
      (*pend)[(*n_pend)++] = (pending_t){strdup(line), line[0]};
      break;
    case 'S': {
      summary_t *s = &summaries[id];
      int wid;
      if (sscanf(line, "S %d %ld %ld %u %" SCNu64 " %" SCNu64 " %ld %ld %ld %" SCNu64, &wid,
                 &s->rss_warm, &s->rss_end, &s->stall_ms, &s->calls, &s->grants, &s->heap_warm,
                 &s->heap_late, &s->heap_max, &s->replayed) == 10)
        s->present = 1;
      break;
    }
    case 'F': {
      const char *text = line + 1;
      while (*text == ' ')
        text++;
      while (*text >= '0' && *text <= '9') /* the worker id */
        text++;
      violation("worker %d reported: %s", id, text + (*text == ' '));
      break;
    }
    default:
      if (line[0] != '\0')
        violation("worker %d: unreadable record: %s", id, line);
    }
  }
  fclose(f);
}

static void apply_pending(pending_t *pend, size_t n_pend) {
  for (size_t i = 0; i < n_pend; i++) {
    const char *line = pend[i].line;
    int wid, tid, rc;
    unsigned seq;
    uint64_t t;
    if (pend[i].type == 'E') {
      if (sscanf(line, "E %d %d %u %" SCNu64, &wid, &tid, &seq, &t) != 4) {
        violation("unreadable record: %s", line);
        continue;
      }
      grant_t *g = find_grant(wid, tid, seq);
      if (g == NULL) {
        violation("extension of an unknown grant: %s", line);
        continue;
      }
      g->ve = t; /* the extension's validity end replaces the grant's */
      g->extended = 1;
    } else {
      if (sscanf(line, "U %d %d %u %" SCNu64 " %d", &wid, &tid, &seq, &t, &rc) != 5) {
        violation("unreadable record: %s", line);
        continue;
      }
      grant_t *g = find_grant(wid, tid, seq);
      if (g == NULL) {
        violation("unlock of an unknown grant: %s", line);
        continue;
      }
      g->unlock_start = t;
      g->has_unlock = 1;
      g->unlock_rc = rc;
      g->u_line = strdup(line);
    }
  }
}

static void print_grant(const char *label, const grant_t *g) {
  if (checker_quiet)
    return;
  printf("    %s: worker %d thread %d seq %u, %s%d%s, %s %" PRIu64
         ", call start %+.6f s, grant %+.6f s, validity end %+.6f s%s, %s %+.6f s -> window "
         "[%+.6f, %+.6f] s\n",
         label, g->wid, g->tid, g->seq, grp_prefix[g->grp], g->res,
         g->grp == GRP_RW ? (g->write ? " write" : " read") : "",
         g->grp == GRP_ELECT ? "term" : "fence", g->fence, rel_s(g->call_start), rel_s(g->grant),
         rel_s(g->ve), g->extended ? " (extended)" : "",
         g->has_unlock ? "unlock start" : "no unlock record", rel_s(g->unlock_start),
         rel_s(g->grant), rel_s(g->end));
  printf("      %s\n", g->g_line);
  if (g->u_line != NULL)
    printf("      %s\n", g->u_line);
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

static unsigned nonempty_total, extended_total;
static unsigned grants_per_res[GRP_N][64], nonempty_per_res[GRP_N][64];
static unsigned sem_peak[64]; /* most permits of a semaphore held at one instant */

static int by_end(const void *a, const void *b) {
  const grant_t *const *x = a, *const *y = b;
  if ((*x)->end != (*y)->end)
    return (*x)->end < (*y)->end ? -1 : 1;
  return 0;
}

/* Semaphore: never more than `limit` permit windows at one instant.  A
 * sweep over the non-empty windows in grant order; `ends` holds the windows
 * still open (half-open: one ending at t does not meet one starting at t). */
static void check_semaphore(int r, grant_t **by_grant, size_t n) {
  grant_t **open_w = malloc((n ? n : 1) * sizeof *open_w);
  if (open_w == NULL) {
    fprintf(stderr, "torture: out of memory\n");
    exit(2);
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
    if (n_open > sem_peak[r])
      sem_peak[r] = (unsigned)n_open;
    if (n_open > opt.sem_limit) {
      violation("s%d: %zu permit holders at once, limit %u (semaphore limit broken)", r, n_open,
                opt.sem_limit);
      if (reported++ < 3) {
        qsort(open_w, n_open, sizeof *open_w, by_end);
        for (size_t j = 0; j < n_open; j++)
          print_grant("holder", open_w[j]);
      } else if (reported == 4 && !checker_quiet) {
        printf("    (further holders of s%d not printed)\n", r);
      }
    }
  }
  free(open_w);
}

/* Read-write lock: no write window overlaps any other window (read or
 * write) of the same name; and the tokens of the write holds rise in grant
 * order (a write hold's token is above every earlier hold's, safety.md
 * §11.3; read holds carry the write epoch, which may repeat). */
static void check_rwlock(int r, grant_t **by_grant, size_t n) {
  unsigned reported = 0;
  const grant_t *prev_w = NULL;
  for (size_t i = 0; i < n; i++) {
    const grant_t *g = by_grant[i];
    if (g->end <= g->grant)
      continue;
    for (size_t j = i + 1; j < n && by_grant[j]->grant < g->end; j++) {
      const grant_t *h = by_grant[j];
      if (h->end <= h->grant || !(g->write || h->write))
        continue;
      violation("rw%d: a write hold overlaps %s hold for %.3f ms (read-write exclusion broken)", r,
                g->write && h->write ? "another write" : "a read",
                (double)((g->end < h->end ? g->end : h->end) - h->grant) / 1e6);
      if (reported++ < 5) {
        print_grant("earlier", g);
        print_grant("later  ", h);
      }
    }
    if (g->write) {
      if (prev_w != NULL && g->fence <= prev_w->fence) {
        violation("rw%d: fencing token %" PRIu64 " of a later write hold is not above %" PRIu64
                  " of the write hold before it",
                  r, g->fence, prev_w->fence);
        print_grant("earlier", prev_w);
        print_grant("later  ", g);
      }
      prev_w = g;
    }
  }
}

/* Checks 1 and 2 for one name of one group. */
static void check_resource(int grp, int r) {
  size_t n = 0;
  for (size_t i = 0; i < n_grants; i++)
    if (grants[i].grp == grp && grants[i].res == r)
      n++;
  grants_per_res[grp][r] = (unsigned)n;
  if (n == 0) {
    violation("%s%d (%s) was never granted: no progress, the run proves nothing", grp_prefix[grp],
              r, grp_title[grp]);
    return;
  }
  grant_t **by_grant = malloc(n * sizeof *by_grant);
  grant_t **by_start = malloc(n * sizeof *by_start);
  if (by_grant == NULL || by_start == NULL) {
    fprintf(stderr, "torture: out of memory\n");
    exit(2);
  }
  size_t k = 0;
  for (size_t i = 0; i < n_grants; i++)
    if (grants[i].grp == grp && grants[i].res == r) {
      by_grant[k] = &grants[i];
      by_start[k] = &grants[i];
      if (grants[i].end > grants[i].grant)
        nonempty_per_res[grp][r]++;
      k++;
    }
  qsort(by_grant, n, sizeof *by_grant, by_res_grant);
  qsort(by_start, n, sizeof *by_start, by_res_call_start);

  if (grp == GRP_SEM) {
    /* A permit's token is its slot's, not the name's: no order across
     * permits to check. */
    check_semaphore(r, by_grant, n);
    goto done;
  }
  if (grp == GRP_RW) {
    check_rwlock(r, by_grant, n);
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
        violation("e%d: two leaders at once for %.3f ms (election broken)", r,
                  (double)((g->end < reach->end ? g->end : reach->end) - g->grant) / 1e6);
      else
        violation("r%d: two holders overlap for %.3f ms (mutual exclusion broken)", r,
                  (double)((g->end < reach->end ? g->end : reach->end) - g->grant) / 1e6);
      print_grant("earlier", reach);
      print_grant("later  ", g);
    }
    if (prev != NULL && g->fence <= prev->fence) {
      if (el)
        violation("e%d: term %" PRIu64 " of a later leader is not above term %" PRIu64
                  " of the leader before it (terms not strictly increasing)",
                  r, g->fence, prev->fence);
      else
        violation("r%d: fencing token %" PRIu64 " of a later hold is not above %" PRIu64
                  " of the hold before it",
                  r, g->fence, prev->fence);
      print_grant("earlier", prev);
      print_grant("later  ", g);
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
        violation("e%d: a campaign that started after a term %" PRIu64
                  " was seen won the term %" PRIu64 " (terms not strictly increasing)",
                  r, max_seen->fence, g2->fence);
      else
        violation("r%d: a lock call that started after a grant with token %" PRIu64
                  " was granted the token %" PRIu64 ", not a larger one",
                  r, max_seen->fence, g2->fence);
      print_grant("granted first     ", max_seen);
      print_grant("called after it   ", g2);
    }
  }
done:
  free(by_grant);
  free(by_start);
}

/* The groups the workers' --primitive uses, and how many names of each. */
static int group_names(int grp) {
  int p = opt.primitive;
  switch (grp) {
  case GRP_LOCK:
    return p == PRIM_LOCK || p == PRIM_MIXED ? opt.resources : 0;
  case GRP_SEM:
    return p == PRIM_SEMAPHORE || p == PRIM_MIXED ? opt.resources : 0;
  case GRP_RW:
    return p == PRIM_RWLOCK || p == PRIM_MIXED ? opt.resources : 0;
  default:
    return p == PRIM_ELECTION || (p == PRIM_MIXED && opt.threads >= 2)
               ? torture_election_names(p, opt.resources)
               : 0;
  }
}

static int rc_index(int rc) { return rc <= 0 && rc > -N_RC ? -rc : N_RC - 1; }

/* Runs every check over the workers' histories, prints the offending
 * records and (with a schedule) the summary.  0 when nothing was wrong. */
static int check_and_report(const schedule_t *sched) {
  pending_t *pend = NULL;
  size_t n_pend = 0, cap_pend = 0;
  for (int i = 0; i < opt.workers; i++)
    read_history(i, &pend, &n_pend, &cap_pend);
  if (n_grants > 0) /* qsort and bsearch want a valid pointer, even for 0 items */
    qsort(grants, n_grants, sizeof *grants, grant_key_cmp);
  for (size_t i = 1; i < n_grants; i++)
    if (grant_key_cmp(&grants[i - 1], &grants[i]) == 0)
      violation("duplicate grant record: %s", grants[i].g_line);
  apply_pending(pend, n_pend);
  for (size_t i = 0; i < n_pend; i++)
    free(pend[i].line);
  free(pend);

  for (size_t i = 0; i < n_grants; i++) {
    grant_t *g = &grants[i];
    g->end = g->has_unlock && g->unlock_start < g->ve ? g->unlock_start : g->ve;
    if (g->end > g->grant)
      nonempty_total++;
    if (g->extended)
      extended_total++;
    if (g->fence == 0)
      violation("grant without a fencing token: %s", g->g_line);
  }
  for (int grp = 0; grp < GRP_N; grp++)
    for (int r = 0; r < opt.resources; r++) {
      int any = 0; /* names outside the mode are checked too, should any appear */
      for (size_t i = 0; i < n_grants && !any; i++)
        any = grants[i].grp == grp && grants[i].res == r;
      if (any || r < group_names(grp))
        check_resource(grp, r);
    }

  /* 3. Deadlines. */
  unsigned rc_counts[N_CALL_KINDS][N_RC];
  memset(rc_counts, 0, sizeof rc_counts);
  double worst_over = -1e18;
  const call_t *worst = NULL;
  for (size_t i = 0; i < n_calls; i++) {
    const call_t *c = &calls[i];
    if (c->kind < 0) {
      violation("unknown call kind: %s", c->line);
      continue;
    }
    rc_counts[c->kind][rc_index(c->rc)]++;
    double took_ms = (double)(c->end - c->start) / 1e6;
    double over = took_ms - (double)c->bound_ms;
    if (over > worst_over) {
      worst_over = over;
      worst = c;
    }
    if (c->end < c->start || over > (double)opt.slack_ms) {
      unsigned stall = c->wid >= 0 && c->wid < opt.workers ? summaries[c->wid].stall_ms : 0;
      violation("worker %d thread %d: %s took %.1f ms, beyond its documented bound of %" PRIu64
                " ms + %u ms slack (started %+.3f s; the worker's worst scheduling stall "
                "in the run was %u ms)\n      %s",
                c->wid, c->tid, call_kinds[c->kind], took_ms, c->bound_ms, opt.slack_ms,
                rel_s(c->start), stall, c->line);
    }
  }

  /* 4. Workers. */
  for (int i = 0; i < opt.workers; i++) {
    worker_t *w = &workers[i];
    if (w->killed)
      violation("worker %d (pid %d) did not exit in time and was killed: a hang", i, (int)w->pid);
    else if (!(WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0)) {
      if (WIFSIGNALED(w->status))
        violation("worker %d (pid %d) died of signal %d", i, (int)w->pid, WTERMSIG(w->status));
      else
        violation("worker %d (pid %d) exited with status %d", i, (int)w->pid,
                  WEXITSTATUS(w->status));
    }
    if (!summaries[i].present)
      violation("worker %d wrote no summary line (it did not finish)", i);
  }

  if (checker_quiet || sched == NULL)
    goto out;

  /* Summary. */
  printf("\n==== torture summary (seed %" PRIu64 ", %u s) ====\n", opt.seed, opt.duration_s);
  printf("config: 5 masters behind fault proxies, %d workers x %d threads, %d resources, ttl "
         "%u ms, max TTL (quarantine) %u ms, request %u ms, retry %d x (%u + %u) ms, wait %u ms, "
         "fencing on, quarantine on\n",
         opt.workers, opt.threads, opt.resources, opt.ttl_ms, opt.max_ttl_ms,
         opt.timing.request_ms, opt.timing.retry, opt.timing.retry_delay_ms,
         opt.timing.retry_jitter_ms, opt.timing.wait_ms);
  printf("primitive: %s\n", torture_prim_names[opt.primitive]);
  if (group_names(GRP_SEM) > 0)
    printf("semaphore limit: %u\n", opt.sem_limit);
  printf("grants: %zu (%u with a non-empty hold window, %u extended)\n", n_grants,
         nonempty_total, extended_total);
  for (int grp = 0; grp < GRP_N; grp++)
    for (int r = 0; r < opt.resources; r++) {
      if (grants_per_res[grp][r] == 0)
        continue;
      printf("  %s%d: %u %s, %u non-empty windows", grp_prefix[grp], r, grants_per_res[grp][r],
             grp_title[grp], nonempty_per_res[grp][r]);
      if (grp == GRP_SEM)
        printf(", at most %u held at once", sem_peak[r]);
      if (grp == GRP_RW) {
        unsigned w = 0;
        for (size_t i = 0; i < n_grants; i++)
          w += grants[i].grp == GRP_RW && grants[i].res == r && grants[i].write;
        printf(" (%u write, %u read)", w, grants_per_res[grp][r] - w);
      }
      if (grp == GRP_ELECT) {
        /* How many terms a fault ended (on_lost) rather than a resign. */
        unsigned lost = 0;
        for (size_t i = 0; i < n_grants; i++)
          lost += grants[i].grp == GRP_ELECT && grants[i].res == r && grants[i].has_unlock &&
                  grants[i].unlock_rc != 0;
        printf(", %u ended by on_lost", lost);
      }
      printf("\n");
    }
  printf("calls (return codes):\n");
  for (int k = 0; k < N_CALL_KINDS; k++) {
    unsigned total = 0;
    for (int x = 0; x < N_RC; x++)
      total += rc_counts[k][x];
    if (total == 0)
      continue;
    printf("  %-8s %6u:", call_kinds[k], total);
    for (int x = 0; x < N_RC; x++)
      if (rc_counts[k][x] > 0)
        printf(" %s=%u", x == N_RC - 1 ? "other" : x == 0 ? "OK" : redlock_err_name(-x) + 8,
               rc_counts[k][x]);
    printf("\n");
  }
  if (worst != NULL)
    printf("slowest call relative to its bound: %s %.1f ms against %" PRIu64
           " ms (%+.1f ms; slack %u ms)\n",
           call_kinds[worst->kind], (double)(worst->end - worst->start) / 1e6, worst->bound_ms,
           worst_over, opt.slack_ms);
  printf("faults injected:");
  unsigned total_faults = 0;
  for (int k = 0; k < F_N_KINDS; k++) {
    printf(" %s=%u", fault_names[k], fault_count[k]);
    total_faults += fault_count[k];
  }
  printf("\n  total %u, no-quorum windows (3 masters faulted) %u, injection warnings %u%s\n",
         total_faults, sched->windows, fault_errors,
         ipt_ok ? "" : " (iptables fault skipped: unavailable)");
  printf("  end of run (held through the workers' last calls and redlock_close):");
  for (int i = 0; i < n_final_faults; i++)
    printf(" master %d %s;", final_faults[i].master, fault_names[final_faults[i].kind]);
  printf("%s\n", n_final_faults == 0 ? " none (--no-end-faults)" : "");
  printf("workers:\n");
  for (int i = 0; i < opt.workers; i++) {
    const summary_t *s = &summaries[i];
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
           : WIFEXITED(workers[i].status) ? (WEXITSTATUS(workers[i].status) == 0 ? "exit 0"
                                                                                  : "exit != 0")
                                          : "signaled",
           s->rss_warm, s->rss_end, s->heap_warm, s->heap_late, s->heap_max, s->stall_ms, s->calls,
           s->grants, s->replayed);
  }
  printf("result: %s (%u violation%s); replay: torture --duration %u --seed %" PRIu64 "%s%s\n",
         violations == 0 ? "PASS" : "FAIL", violations, violations == 1 ? "" : "s", opt.duration_s,
         opt.seed, opt.primitive == PRIM_LOCK ? "" : " --primitive ",
         opt.primitive == PRIM_LOCK ? "" : torture_prim_names[opt.primitive]);

out:
  for (size_t i = 0; i < n_grants; i++) {
    free(grants[i].g_line);
    free(grants[i].u_line);
  }
  free(grants);
  for (size_t i = 0; i < n_calls; i++)
    free(calls[i].line);
  free(calls);
  grants = NULL;
  calls = NULL;
  n_grants = cap_grants = n_calls = cap_calls = 0;
  return violations == 0 ? 0 : 1;
}

/* ---- the checker's self-test ---------------------------------------------------------------
 * A checker that never fails proves nothing.  `torture --selftest` feeds it
 * small hand-made histories: clean ones that must pass, and one per rule
 * that must be caught. */

static void reset_checker(void) {
  violations = 0;
  nonempty_total = extended_total = 0;
  memset(grants_per_res, 0, sizeof grants_per_res);
  memset(nonempty_per_res, 0, sizeof nonempty_per_res);
  memset(sem_peak, 0, sizeof sem_peak);
  memset(summaries, 0, sizeof summaries);
}

/* Writes `text` as worker 0's history (worker 1 gets a clean one-liner),
 * runs the checker and compares: expect_fail = 1 when it must find a
 * violation. */
static int selftest_case_prim(int prim, const char *name, const char *text, int expect_fail) {
  reset_checker();
  opt.workers = 2;
  opt.resources = 1;
  opt.threads = 2;
  opt.primitive = prim;
  opt.sem_limit = 2;
  for (int i = 0; i < 2; i++) {
    snprintf(workers[i].hist, sizeof workers[i].hist, "%s/worker-%d.hist", run_dir, i);
    workers[i].pid = 0;
    workers[i].status = 0; /* "exited 0" */
    workers[i].killed = 0;
    FILE *f = fopen(workers[i].hist, "w");
    if (f == NULL)
      return -1;
    fputs(i == 0 ? text : "S 1 100 100 0 0 0 10 10 10 0\n", f);
    fclose(f);
  }
  checker_quiet = 1;
  int rc = check_and_report(NULL);
  checker_quiet = 0;
  int ok = (rc != 0) == expect_fail;
  printf("  %-58s %s (%u violation%s)\n", name, ok ? "ok" : "WRONG", violations,
         violations == 1 ? "" : "s");
  return ok ? 0 : -1;
}

static int selftest_case(const char *name, const char *text, int expect_fail) {
  return selftest_case_prim(PRIM_LOCK, name, text, expect_fail);
}

static int selftest(void) {
  /* Times in ns; the bound of each call is in ms.  Two grants of r0 by
   * worker 0: [1000, 2000] and [3000, 4000] unless a case says otherwise. */
#define CALLS "C lock 0 0 0 1000 0 980\nC unlock 0 0 2000 2100 0 100\n"                    \
              "C lock 0 1 2500 3000 0 980\nC unlock 0 1 4000 4100 0 100\n"
#define SUMMARY "S 0 100 100 0 4 2 10 10 10 0\n"
  int bad = 0;
  printf("torture --selftest: the checker on hand-made histories\n");
  bad |= selftest_case("clean: two holds in turn, rising tokens",
                       CALLS "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n"
                             "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
                       0);
  bad |= selftest_case("clean: a late-recorded grant with an empty window",
                       /* grant A read at 5000, its validity ended at 4000: empty
                        * window; B's call began before A's grant was seen. */
                       "C lock 0 0 0 5000 0 980\nC lock 0 1 4500 4600 0 980\n"
                       "G 0 0 0 r0 10 0 5000 4000\nU 0 0 0 5100 0\n"
                       "G 0 1 0 r0 11 4500 4600 900000\nU 0 1 0 4700 0\n" SUMMARY,
                       0);
  bad |= selftest_case("caught: overlapping holds",
                       CALLS "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 3500 0\n"
                             "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
                       1);
  bad |= selftest_case("caught: overlap through an extension",
                       CALLS "G 0 0 0 r0 10 0 1000 2000\nE 0 0 0 900000\nU 0 0 0 3500 0\n"
                             "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
                       1);
  bad |= selftest_case("caught: tokens falling in grant order",
                       CALLS "G 0 0 0 r0 11 0 1000 900000\nU 0 0 0 2000 0\n"
                             "G 0 1 0 r0 10 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
                       1);
  bad |= selftest_case("caught: equal tokens",
                       CALLS "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n"
                             "G 0 1 0 r0 10 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
                       1);
  bad |= selftest_case("caught: call after a grant, smaller token (empty window)",
                       "C lock 0 0 0 1000 0 980\nC lock 0 1 1500 1600 0 980\n"
                       "G 0 0 0 r0 11 0 1000 900\nU 0 0 0 1100 0\n"
                       "G 0 1 0 r0 10 1500 1600 900000\nU 0 1 0 1700 0\n" SUMMARY,
                       1);
  bad |= selftest_case("caught: a call beyond its bound + slack",
                       "C unlock 0 0 0 999000000000 0 100\n"
                       "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n" SUMMARY,
                       1);
  bad |= selftest_case("caught: a grant without a token",
                       "G 0 0 0 r0 0 0 1000 900000\nU 0 0 0 2000 0\n" SUMMARY, 1);
  bad |= selftest_case("caught: no summary line (unclean exit)",
                       "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n", 1);
  bad |= selftest_case("caught: the worker's own failure report",
                       "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\nF 0 unexpected rc\n" SUMMARY,
                       1);
  bad |= selftest_case("caught: no grant at all (no progress)", SUMMARY, 1);
  /* The primitives: permits of s0 (limit 2), holds of rw0, terms of e0.
   * Three windows: [1000, 2000], [1500, 2500], [1800, 3000]. */
#define G3(a, b, c)                                                                                \
  "G 0 0 0 " a "0 5 0 1000 900000\nU 0 0 0 2000 0\n"                                               \
  "G 0 1 0 " b "0 6 0 1500 900000\nU 0 1 0 2500 0\n"                                               \
  "G 0 2 0 " c "0 7 0 1800 900000\nU 0 2 0 3000 0\n"
  bad |= selftest_case_prim(PRIM_SEMAPHORE, "clean: two permits at once, limit 2",
                            "G 0 0 0 s0 5 0 1000 900000\nU 0 0 0 2000 0\n"
                            "G 0 1 0 s0 5 0 1500 900000\nU 0 1 0 2500 0\n"
                            "G 0 2 0 s0 3 0 2000 900000\nU 0 2 0 3000 0\n" SUMMARY,
                            0);
  bad |= selftest_case_prim(PRIM_SEMAPHORE, "caught: three permits at once, limit 2",
                            G3("s", "s", "s") SUMMARY, 1);
  bad |= selftest_case_prim(PRIM_SEMAPHORE, "caught: three permits through an extension",
                            "G 0 0 0 s0 5 0 1000 1400\nE 0 0 0 900000\nU 0 0 0 2000 0\n"
                            "G 0 1 0 s0 5 0 1500 900000\nU 0 1 0 2500 0\n"
                            "G 0 2 0 s0 3 0 1800 900000\nU 0 2 0 3000 0\n" SUMMARY,
                            1);
  bad |=
      selftest_case_prim(PRIM_RWLOCK, "clean: readers share, a writer after them",
                         G3("R", "R", "R") "G 0 3 0 W0 9 0 3000 900000\nU 0 3 0 3500 0\n"
                                           "G 0 3 1 R0 9 0 3500 900000\nU 0 3 1 3600 0\n" SUMMARY,
                         0);
  bad |= selftest_case_prim(PRIM_RWLOCK, "caught: a writer overlapping a reader",
                            G3("R", "W", "R") SUMMARY, 1);
  bad |= selftest_case_prim(PRIM_RWLOCK, "caught: two writers overlapping",
                            "G 0 0 0 W0 5 0 1000 900000\nU 0 0 0 2000 0\n"
                            "G 0 1 0 W0 6 0 1500 900000\nU 0 1 0 2500 0\n"
                            "G 0 2 0 R0 6 0 2600 900000\nU 0 2 0 2700 0\n" SUMMARY,
                            1);
  bad |= selftest_case_prim(PRIM_RWLOCK, "caught: write tokens not rising",
                            "G 0 0 0 W0 6 0 1000 900000\nU 0 0 0 2000 0\n"
                            "G 0 1 0 W0 6 0 2500 900000\nU 0 1 0 3000 0\n"
                            "G 0 2 0 R0 6 0 3600 900000\nU 0 2 0 3700 0\n" SUMMARY,
                            1);
  bad |= selftest_case_prim(PRIM_ELECTION, "clean: terms in turn, rising",
                            "G 0 0 0 e0 5 0 1000 900000\nU 0 0 0 2000 0\n"
                            "G 0 1 0 e0 6 0 2000 2900\nE 0 1 0 3100\nU 0 1 0 3500 -6\n"
                            "G 0 0 1 e0 7 3500 4000 900000\nU 0 0 1 4500 0\n" SUMMARY,
                            0);
  bad |= selftest_case_prim(PRIM_ELECTION, "caught: two leaders at once",
                            "G 0 0 0 e0 5 0 1000 900000\nU 0 0 0 2000 0\n"
                            "G 0 1 0 e0 6 0 1500 900000\nU 0 1 0 2500 0\n" SUMMARY,
                            1);
  bad |= selftest_case_prim(PRIM_ELECTION, "caught: two leaders through a sampled validity",
                            "G 0 0 0 e0 5 0 1000 1200\nE 0 0 0 1800\nU 0 0 0 2500 -6\n"
                            "G 0 1 0 e0 6 1300 1500 900000\nU 0 1 0 2500 0\n" SUMMARY,
                            1);
  bad |= selftest_case_prim(PRIM_ELECTION, "caught: a term not above the previous one",
                            "G 0 0 0 e0 6 0 1000 900000\nU 0 0 0 2000 0\n"
                            "G 0 1 0 e0 6 0 2500 900000\nU 0 1 0 3000 0\n" SUMMARY,
                            1);
  bad |= selftest_case_prim(PRIM_ELECTION, "caught: no term at all (no progress)",
                            "G 0 0 0 r0 5 0 1000 900000\nU 0 0 0 2000 0\n" SUMMARY, 1);
#undef G3
#undef CALLS
#undef SUMMARY
  printf("torture --selftest: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}

/* ---- run directory ------------------------------------------------------------------------ */

static void remove_run_dir(void) {
  DIR *d = opendir(run_dir);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char path[800];
    snprintf(path, sizeof path, "%s/%s", run_dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(run_dir);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  if (parse_args(argc, argv) != 0)
    return 2;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (opt.selftest) {
    const char *tmp = getenv("TMPDIR");
    snprintf(run_dir, sizeof run_dir, "%s/redlock-torture-selftest-%d-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", (int)getpid());
    if (mkdtemp(run_dir) == NULL) {
      fprintf(stderr, "torture: mkdtemp: %s\n", strerror(errno));
      return 2;
    }
    int rc = selftest();
    remove_run_dir();
    return rc;
  }
  static char worker_path[PATH_MAX + 32];
  if (opt.worker_path == NULL) {
    default_worker_path(worker_path, sizeof worker_path);
    opt.worker_path = worker_path;
  }
  if (access(opt.worker_path, X_OK) != 0) {
    fprintf(stderr, "torture: worker binary %s: %s\n", opt.worker_path, strerror(errno));
    return 2;
  }
  snprintf(ipt_comment, sizeof ipt_comment, "redlock-torture-%d-%llu", (int)getpid(),
           proc_start_time((long)getpid()));
  install_handlers();
  /* The whole run's budget: the run, the drain (each worker's last calls end
   * within their bounds, or its own hang watchdog aborts it) and the check.
   * It must fire before ctest's TIMEOUT (tests/torture/CMakeLists.txt), so
   * that the iptables rules are removed even then. */
  alarm(opt.duration_s + 150);

  printf("torture: seed %" PRIu64 ", duration %u s, %d workers x %d threads, %d resources; "
         "replay with: torture --duration %u --seed %" PRIu64 "%s%s\n",
         opt.seed, opt.duration_s, opt.workers, opt.threads, opt.resources, opt.duration_s,
         opt.seed, opt.primitive == PRIM_LOCK ? "" : " --primitive ",
         opt.primitive == PRIM_LOCK ? "" : torture_prim_names[opt.primitive]);

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
  if (rh_cluster_start(masters, N_MASTERS, &ropts) != 0) {
    fprintf(stderr, "torture: set-up error: could not start %d redis-server\n", N_MASTERS);
    return 2;
  }
  for (int m = 0; m < N_MASTERS; m++) {
    snprintf(ipt_port[m], sizeof ipt_port[m], "%d", rh_server_port(masters[m]));
    if (fault_proxy_start(&proxies[m], "127.0.0.1", rh_server_port(masters[m])) != 0) {
      fprintf(stderr, "torture: set-up error: could not start a fault proxy\n");
      for (int k = 0; k < m; k++)
        fault_proxy_stop(proxies[k]);
      rh_cluster_free(masters, N_MASTERS);
      return 2;
    }
  }
  ipt_probe();

  schedule_t sched = {0};
  make_schedule(&sched, opt.seed, opt.duration_s * 1000u, ipt_ok);
  for (int m = 0; m < N_MASTERS; m++)
    flog("master %d: redis port %d (pid %d), proxy port %d", m, rh_server_port(masters[m]),
         (int)rh_server_pid(masters[m]), fault_proxy_port(proxies[m]));

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
      uint64_t now = torture_now_ns();
      if (now >= at)
        break;
      uint64_t left = (at - now) / 1000000u;
      sleep_ms(left > 20 ? 20 : (unsigned)(left > 0 ? left : 1));
    }
    execute(e);
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
          fprintf(stderr, "torture: worker %d (pid %d) is still running 90 s after the end: "
                          "killing it\n", i, (int)w->pid);
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
    sleep_ms(20);
  }
  flog("all workers ended");
  heal_all();
  flog("every fault healed");

  for (int m = 0; m < N_MASTERS; m++)
    fault_proxy_stop(proxies[m]);
  rh_cluster_free(masters, N_MASTERS);
  ipt_cleanup();

  int rc = check_and_report(&sched);
  free(sched.ev);
  if (fault_log != NULL)
    fclose(fault_log);
  if (rc == 0 && !opt.keep) {
    remove_run_dir();
  } else {
    printf("run directory kept: %s (worker-N.hist: histories, worker-N.log: client logs, "
           "faults.log: the fault timeline, times relative to the start)\n",
           run_dir);
  }
  alarm(0);
  return rc;
}
