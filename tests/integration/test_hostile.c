/* test_hostile.c: one hostile or broken master must neither freeze the
 * client nor eat its memory, and a master that drops every connection right
 * after the handshake must be reconnected with a growing backoff, not in a
 * storm; replies within the per-aggregate caps that are still huge in all
 * (a stream of nested arrays, a million leaves, 2 MiB of short bulks), and
 * the 1 MiB cap exact (1 MiB + 1 byte refused, 1 MiB a reply).
 *
 * Each test runs two real redis-server masters and one fake master,
 * tests/support/hostile_server (its path is argv[1]), as a child process:
 * N = 3, so the two healthy masters are a quorum.  For every hostile mode the
 * client takes and releases locks on distinct resources one after another
 * while the fake master misbehaves, and the test asserts that
 *  - every lock is granted, and within a normal deadline (a frozen loop
 *    thread completes nothing: the test then fails at once instead of
 *    hanging in redlock_close);
 *  - redlock_last_votes never counts the fake master as OK and shows it as
 *    down, disconnected, error, bad-reply, timeout or busy;
 *  - the log gives the reason (the cap that was hit);
 *  - the process's RSS (/proc/self/statm, sampled while waiting) grows by
 *    less than 64 MB;
 *  - for the modes that make the client drop the connection, the fake master
 *    saw at least three connections: two episodes were survived;
 *  - for a stream, the fake master wrote to a dropped connection no more
 *    than the client reads up to a cap plus what the kernel buffers (its
 *    `closed N BYTES` lines);
 *  - for a reply within the caps, the connection is kept and no protocol
 *    error is logged.
 * The storm test counts the fake master's accepted connections over 4.5 s and
 * checks that they are few and ever further apart.  The last test checks that
 * redlock_close returns although releases are owed to a master that answers
 * its handshake and then nothing (a bug this file found).
 *
 * Nothing here sleeps to wait: every wait is for an event (a callback, a line
 * from the fake master) with a deadline. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

/* Under ASan, freed memory sits in a quarantine (256 MB by default) before
 * it is reused, which would count as growth here; a small one keeps RSS
 * meaningful (use-after-free is still caught within it).  ASAN_OPTIONS given
 * at run time still win.  Default visibility: the project builds with hidden
 * symbols, and the runtime looks this one up by name. */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((visibility("default"))) const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=4"; }
#endif

#define MAX_RSS_GROWTH (64u * 1024u * 1024u)
/* A lock call must finish within its normal bound: the request timeout, two
 * retries of up to 40 ms, plus slack for a loaded machine (or ASan). */
#define LOCK_DEADLINE_MS (FX_IT_REQUEST_MS * 3u + 80u + 3000u)
#define MIN_GRANTS 30         /* locks granted per mode, at least */
#define MODE_BUDGET_MS 20000u /* a mode that has not shown what it must by then fails */
#define STORM_WINDOW_MS 4500u
#define MAX_ACCEPTS 4096

static const char *hostile_path;

/* ---- the fake master as a child process ---------------------------------------------- */

typedef struct {
  pid_t pid;
  int out_fd; /* its stdout, non-blocking */
  int port;
  char uri[64];
  char label[32]; /* "127.0.0.1:PORT", as the client names it */
  char line[256];
  size_t line_len;
  uint64_t accept_ms[MAX_ACCEPTS]; /* CLOCK_MONOTONIC, as rh_now_ms() */
  size_t n_accepts;
  size_t n_closed;        /* connections it reported closed */
  uint64_t max_sent;      /* the most bytes it wrote to one of them */
  unsigned long max_conn; /* which one that was */
} hostile_t;

/* The fake master of the running test, stopped by the teardown even when an
 * assertion failed halfway. */
static hostile_t the_hs;

static void hs_parse_line(hostile_t *hs, const char *line) {
  unsigned long n;
  unsigned long long t;
  int port;
  if (sscanf(line, "accept %lu %llu", &n, &t) == 2) {
    if (hs->n_accepts < MAX_ACCEPTS)
      hs->accept_ms[hs->n_accepts] = t;
    hs->n_accepts++;
  } else if (sscanf(line, "closed %lu %llu", &n, &t) == 2) {
    hs->n_closed++;
    if (t > hs->max_sent) {
      hs->max_sent = t;
      hs->max_conn = n;
    }
  } else if (sscanf(line, "port %d", &port) == 1) {
    hs->port = port;
  }
}

/* Reads what the fake master printed, waiting up to timeout_ms for the first
 * byte (0 = do not wait).  Returns -1 once its stdout is closed. */
static int hs_read(hostile_t *hs, int timeout_ms) {
  struct pollfd pfd = {.fd = hs->out_fd, .events = POLLIN};
  if (poll(&pfd, 1, timeout_ms) <= 0)
    return 0;
  for (;;) {
    char buf[4096];
    ssize_t n = read(hs->out_fd, buf, sizeof buf);
    if (n == 0)
      return -1;
    if (n < 0)
      return errno == EAGAIN || errno == EINTR ? 0 : -1;
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] == '\n') {
        hs->line[hs->line_len] = '\0';
        hs_parse_line(hs, hs->line);
        hs->line_len = 0;
      } else if (hs->line_len + 1 < sizeof hs->line) {
        hs->line[hs->line_len++] = buf[i];
      }
    }
  }
}

static void hs_start(hostile_t *hs, const char *mode) {
  memset(hs, 0, sizeof *hs);
  int fds[2];
  assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
  const char *argv[] = {hostile_path, "--mode", mode, "--port", "0", NULL};
  pid_t parent = getpid();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* Die with the test (a failed test must leak no server); only
     * async-signal-safe calls between fork and exec: the client's loop
     * thread exists in the parent. */
    if (rh_child_init(parent) != 0)
      _exit(127);
    dup2(fds[1], 1);
    execv(hostile_path, (char *const *)argv);
    _exit(127);
  }
  close(fds[1]);
  hs->pid = pid;
  hs->out_fd = fds[0];
  fcntl(hs->out_fd, F_SETFL, fcntl(hs->out_fd, F_GETFL) | O_NONBLOCK);
  uint64_t deadline = rh_now_ms() + 5000;
  while (hs->port == 0 && rh_now_ms() < deadline)
    if (hs_read(hs, 100) < 0)
      break;
  if (hs->port == 0)
    fail_msg("hostile_server %s (mode %s) did not report its port", hostile_path, mode);
  snprintf(hs->uri, sizeof hs->uri, "redis://127.0.0.1:%d", hs->port);
  snprintf(hs->label, sizeof hs->label, "127.0.0.1:%d", hs->port);
}

/* Stops it by PID (ours, never looked up by name) and reaps it. */
static void hs_stop(hostile_t *hs) {
  if (hs->pid > 0) {
    kill(hs->pid, SIGTERM);
    int status;
    while (waitpid(hs->pid, &status, 0) < 0 && errno == EINTR) {
    }
    hs->pid = 0;
  }
  if (hs->out_fd > 0)
    close(hs->out_fd);
  hs->out_fd = -1;
}

/* Waits (deadline timeout_ms) until *count, a counter of hs that its lines
 * advance, reaches n. */
static int hs_wait_count(hostile_t *hs, const size_t *count, size_t n, int timeout_ms) {
  uint64_t deadline = rh_now_ms() + (uint64_t)timeout_ms;
  for (;;) {
    hs_read(hs, 0);
    if (*count >= n)
      return 1;
    uint64_t now = rh_now_ms();
    if (now >= deadline)
      return 0;
    hs_read(hs, (int)(deadline - now));
  }
}

/* Waits (deadline timeout_ms) until n connections were accepted. */
static int hs_wait_accepts(hostile_t *hs, size_t n, int timeout_ms) {
  return hs_wait_count(hs, &hs->n_accepts, n, timeout_ms);
}

/* ---- memory ------------------------------------------------------------------------ */

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f != NULL) {
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
      resident = 0;
    fclose(f);
  }
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- async calls waited on with a deadline ---------------------------------------- */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  int status;
  redlock_lock_t *lock;
} waiter_t;

static void waiter_init(waiter_t *w) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, &attr);
  pthread_condattr_destroy(&attr);
  w->done = 0;
  w->lock = NULL;
}

static void waiter_destroy(waiter_t *w) {
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
}

static void waiter_signal(waiter_t *w, int status, redlock_lock_t *lock) {
  pthread_mutex_lock(&w->mu);
  w->status = status;
  w->lock = lock;
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void on_locked(int status, redlock_lock_t *lock, void *arg) {
  waiter_signal(arg, status, lock);
}

static void on_unlocked(int status, void *arg) { waiter_signal(arg, status, NULL); }

/* Waits for the callback until timeout_ms, sampling RSS every few ms into
 * *rss_max (a reply that bloats memory does so while we wait).  1 = done. */
static int waiter_wait(waiter_t *w, unsigned timeout_ms, size_t *rss_max) {
  uint64_t deadline = rh_now_ms() + timeout_ms;
  pthread_mutex_lock(&w->mu);
  while (!w->done) {
    uint64_t now = rh_now_ms();
    if (now >= deadline)
      break;
    uint64_t slice = deadline - now < 5 ? deadline - now : 5;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += (long)slice * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    pthread_mutex_unlock(&w->mu);
    size_t rss = rss_bytes();
    if (rss > *rss_max)
      *rss_max = rss;
    pthread_mutex_lock(&w->mu);
  }
  int done = w->done;
  pthread_mutex_unlock(&w->mu);
  return done;
}

/* The client's loop is stuck (the defect): redlock_close would hang too, so
 * report and leave at once.  The servers die with us (PDEATHSIG). */
static void die_stuck(fx_t *fx, redlock_t *client, hostile_t *hs, const char *what) {
  char votes[512] = "";
  redlock_last_votes(client, votes, sizeof votes);
  fprintf(stderr,
          "FAIL: %s did not complete within %u ms: the client's loop is stuck\n"
          "last votes: %s\nRSS %zu MB\nlog:\n%s\n",
          what, LOCK_DEADLINE_MS, votes, rss_bytes() >> 20, fx_log_text(fx, FX_ALL));
  hs_stop(hs);
  _exit(1);
}

/* The WHY the last votes give the fake master ("" when not found). */
static void hostile_vote(redlock_t *client, const hostile_t *hs, char *why, size_t size) {
  char votes[512];
  char needle[48];
  why[0] = '\0';
  redlock_last_votes(client, votes, sizeof votes);
  snprintf(needle, sizeof needle, " %s=", hs->label);
  const char *p = strstr(votes, needle);
  if (p == NULL)
    return;
  fx_copy_span(why, size, p + strlen(needle), " ");
}

static int hostile_teardown(void **state) {
  hs_stop(&the_hs);
  return fx_teardown(state);
}

static int why_is_failure(const char *why) {
  static const char *const bad[] = {"down",      "disconnected", "error",
                                    "bad-reply", "timeout",      "busy"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (strcmp(why, bad[i]) == 0)
      return 1;
  return 0;
}

/* What a mode must show. */
typedef struct {
  const char *mode;
  const char *log_reason;  /* text the client's log must contain, or NULL */
  const char *log_reason2; /* an alternative, or NULL */
  int drops_connection;    /* the client must drop (and redial) the fake master */
  const char *want_why;    /* a WHY that must be seen for the fake master, or NULL */
  int hostile_votes_ok;    /* the control: the fake master's OK votes must count */
  int keeps_connection;    /* its replies are within the caps: never dropped for them */
  int bounded_send;        /* the client hangs up long before the fake master is done */
} mode_spec_t;

static size_t rss_first; /* the first mode's baseline: growth across modes counts too */

/* The third figure of a /proc/sys/net/ipv4/tcp_[rw]mem file: the most a
 * socket's buffer grows to. */
static uint64_t tcp_mem_max(const char *path) {
  unsigned long long lo = 0, def = 0, max = 0;
  FILE *f = fopen(path, "r");
  if (f != NULL) {
    if (fscanf(f, "%llu %llu %llu", &lo, &def, &max) != 3)
      max = 0;
    fclose(f);
  }
  return max != 0 ? max : 64ull << 20;
}

/* The most a fake master can write to a connection that the client drops
 * at a cap: the client reads one reply up to a cap (1 MiB of strings, the
 * framing of at most 4096 values) plus the rest of its last 16 KiB read;
 * the client's receive buffer and the fake master's send buffer hold the
 * rest, each at most its tcp_[rw]mem maximum (which counts the kernel's
 * bookkeeping too; twice that here, as margin).  The nested stream is
 * 4 GiB: a client that reads on does not stay under this. */
static uint64_t send_bound(void) {
  return (2ull << 20) + 2 * tcp_mem_max("/proc/sys/net/ipv4/tcp_rmem") +
         2 * tcp_mem_max("/proc/sys/net/ipv4/tcp_wmem");
}

/* Starts the fake master in `mode` and opens client 0 over master 0, the
 * fake one and master 1 (the fake one in the middle of the list). */
static redlock_t *open_beside(fx_t *fx, hostile_t *hs, const char *mode, int log_level) {
  hs_start(hs, mode);
  const char *uris[3] = {rh_server_uri(fx->servers[0]), hs->uri, rh_server_uri(fx->servers[1])};
  return fx_open(fx, 0, fx_options_uris(fx, 0, uris, 3, log_level));
}

static void run_mode(fx_t *fx, const mode_spec_t *spec) {
  hostile_t *hs = &the_hs;
  redlock_t *client = open_beside(fx, hs, spec->mode, REDLOCK_LOG_WARN);
  /* redlock_open returned after every master's first attempt: the fake one
   * has been dialled (and, as the control shows, came READY). */
  assert_true(hs_wait_accepts(hs, 1, 5000));

  size_t rss0 = rss_bytes(), rss_max = rss0;
  if (rss_first == 0)
    rss_first = rss0;
  uint64_t start = rh_now_ms(), worst_ms = 0;
  unsigned granted = 0, failures_seen = 0, ok_seen = 0, want_seen = 0;
  char seen[256] = "";
  for (;;) {
    char resource[96];
    snprintf(resource, sizeof resource, "hostile:%s:%u", spec->mode, granted);
    waiter_t w;
    waiter_init(&w);
    uint64_t t0 = rh_now_ms();
    FX_ASSERT_RC(fx, client, redlock_lock_async(client, resource, 10000, 0, on_locked, &w),
                 REDLOCK_OK);
    if (!waiter_wait(&w, LOCK_DEADLINE_MS, &rss_max))
      die_stuck(fx, client, hs, "redlock_lock_async");
    uint64_t took = rh_now_ms() - t0;
    if (took > worst_ms)
      worst_ms = took;
    FX_ASSERT_RC(fx, client, w.status, REDLOCK_OK);
    char why[32];
    hostile_vote(client, hs, why, sizeof why);
    if (strcmp(why, "OK") == 0) {
      ok_seen++;
      if (!spec->hostile_votes_ok)
        fail_msg("mode %s: the fake master's vote counted as OK (after %u grants)\nlog:\n%s",
                 spec->mode, granted, fx_log_text(fx, FX_ALL));
    }
    if (why_is_failure(why)) {
      failures_seen++;
      if (strstr(seen, why) == NULL && strlen(seen) + strlen(why) + 2 < sizeof seen) {
        strcat(seen, " ");
        strcat(seen, why);
      }
    }
    if (spec->want_why != NULL && strcmp(why, spec->want_why) == 0)
      want_seen++;

    redlock_lock_t *lock = w.lock;
    waiter_destroy(&w);
    waiter_init(&w);
    FX_ASSERT_RC(fx, client, redlock_unlock_async(client, lock, on_unlocked, &w), REDLOCK_OK);
    if (!waiter_wait(&w, LOCK_DEADLINE_MS, &rss_max))
      die_stuck(fx, client, hs, "redlock_unlock_async");
    FX_ASSERT_RC(fx, client, w.status, REDLOCK_OK);
    waiter_destroy(&w);
    granted++;

    /* Checked as it goes, not only at the end: a client that buffers a
     * 2 GB reply must fail the test before it hurts the machine. */
    if (rss_max - rss0 >= MAX_RSS_GROWTH)
      fail_msg("mode %s: RSS grew by %zu MB after %u locks; the bound is %u MB", spec->mode,
               (rss_max - rss0) >> 20, granted, MAX_RSS_GROWTH >> 20);

    hs_read(hs, 0);
    int shown;
    if (spec->hostile_votes_ok) {
      shown = ok_seen >= MIN_GRANTS / 2;
    } else {
      shown = failures_seen > 0 && (!spec->drops_connection || hs->n_accepts >= 3) &&
              (spec->want_why == NULL || want_seen > 0) &&
              (spec->log_reason == NULL || fx_log_contains(fx, FX_ALL, spec->log_reason) ||
               (spec->log_reason2 != NULL && fx_log_contains(fx, FX_ALL, spec->log_reason2)));
    }
    if (granted >= MIN_GRANTS && shown)
      break;
    if (rh_now_ms() - start > MODE_BUDGET_MS) {
      char votes[512];
      redlock_last_votes(client, votes, sizeof votes);
      fail_msg("mode %s: after %u grants in %u ms the fake master has not shown its effect "
               "(accepts %zu, failure votes %u, OK votes %u, seen:%s)\nlast votes: %s\nlog:\n%s",
               spec->mode, granted, MODE_BUDGET_MS, hs->n_accepts, failures_seen, ok_seen, seen,
               votes, fx_log_text(fx, FX_ALL));
    }
  }
  size_t rss_end = rss_bytes();
  if (rss_end > rss_max)
    rss_max = rss_end;
  uint64_t elapsed = rh_now_ms() - start;

  /* The client dropped at least two connections (three accepts): the fake
   * master reports each when it notices, with what it managed to write. */
  uint64_t sent_bound = send_bound();
  if (spec->bounded_send && !hs_wait_count(hs, &hs->n_closed, 2, 5000))
    fail_msg("mode %s: the fake master did not report the dropped connections closed "
             "(accepts %zu, closed %zu)",
             spec->mode, hs->n_accepts, hs->n_closed);
  hs_read(hs, 0);
  uint64_t max_sent = hs->max_sent; /* before close ends the last connection */
  /* A reply within the caps is a reply: a wrong one, not a protocol error. */
  if (spec->keeps_connection &&
      (hs->n_accepts != 1 || fx_log_contains(fx, FX_ALL, "protocol error")))
    fail_msg("mode %s: a reply within the caps was refused (the fake master was dialled %zu "
             "times)\nlog:\n%s",
             spec->mode, hs->n_accepts, fx_log_text(fx, FX_ALL));

  uint64_t close_start = rh_now_ms();
  fx_close(fx, 0);
  uint64_t close_ms = rh_now_ms() - close_start;
  hs_read(hs, 0);
  printf("  %-16s %3u locks in %5llu ms (worst %4llu ms), fake master dialled %3zu times, "
         "its votes:%s%s, RSS +%zu KB (peak), close %llu ms, most written to a dropped "
         "connection %llu KB\n",
         spec->mode, granted, (unsigned long long)elapsed, (unsigned long long)worst_ms,
         hs->n_accepts, seen, ok_seen ? " OK" : "", (rss_max - rss0) >> 10,
         (unsigned long long)close_ms, (unsigned long long)(max_sent >> 10));
  hs_stop(hs);

  if (rss_max - rss0 >= MAX_RSS_GROWTH || rss_max - rss_first >= MAX_RSS_GROWTH)
    fail_msg("mode %s: RSS grew by %zu MB (%zu MB since the first mode); the bound is %u MB",
             spec->mode, (rss_max - rss0) >> 20, (rss_max - rss_first) >> 20, MAX_RSS_GROWTH >> 20);
  /* Close is bounded too: at worst it waits out the releases owed to a
   * master that stopped answering (NODE_HUNG_REQUEST_TIMEOUTS timeouts). */
  assert_true(close_ms < FX_IT_REQUEST_MS * 4u + 3000u);
  /* The client hung up once a reply passed a cap, not when it was over:
   * what the fake master wrote to a dropped connection is at most what the
   * client read (a cap and one read) plus what the kernel held between them. */
  if (spec->bounded_send && max_sent > sent_bound)
    fail_msg("mode %s: the fake master wrote %llu KB to connection %lu before the client hung "
             "up; a client that stops at the caps reads at most %llu KB of it",
             spec->mode, (unsigned long long)(max_sent >> 10), hs->max_conn,
             (unsigned long long)(sent_bound >> 10));
}

/* ---- one test per mode ------------------------------------------------------------- */

/* Each entry is one cmocka test (named by `test`) of run_mode. */
static const struct {
  const char *test;
  mode_spec_t spec;
} modes[] = {
    /* The control: the fake master answers like a real one, comes READY and
     * its votes count.  Without it, a fake master that never came READY
     * would make every hostile mode below pass for the wrong reason. */
    {"test_control_ok", {"ok", NULL, NULL, 0, NULL, 1}},
    {"test_huge_array", {"huge-array", "reply has too many elements", NULL, 1, NULL, 0}},
    {"test_many_elements", {"many-elements", "reply has too many elements", NULL, 1, NULL, 0}},
    {"test_huge_bulk", {"huge-bulk", "reply longer than 1 MiB", NULL, 1, NULL, 0}},
    /* 100 MB announced, trickled at 200 KB/s: dropped either as a master
     * that sends no reply (3 request timeouts) or at the 1 MiB cap,
     * whichever first. */
    {"test_endless_bulk",
     {"endless-bulk", "master not answering", "reply longer than 1 MiB", 1, NULL, 0}},
    /* Our cap says "nested too deeply"; hiredis 0.14's own (depth 7) says
     * "nested multi bulk replies": either way the connection is dropped. */
    {"test_deep_nesting", {"deep-nesting", "nested", NULL, 1, NULL, 0}},
    {"test_close_mid_reply", {"close-mid-reply", "connection lost", NULL, 1, NULL, 0}},
    /* An integer, an array, then RESP3 types where +OK is expected: a vote
     * that is neither yes nor no (bad-reply), or a protocol error for the
     * types the hiredis in use does not know. */
    {"test_wrong_types", {"wrong-types", NULL, NULL, 0, "bad-reply", 0}},
    /* Replies within the per-aggregate width and depth caps that still
     * cost hundreds of MB.  `*1024` of `*1024` of `*1024`, streamed:
     * refused once a reply holds more than 4096 values, not when it is over
     * (a billion leaves later). */
    {"test_nested_stream",
     {"nested-stream", "reply has too many values", NULL, 1, NULL, 0, .bounded_send = 1}},
    /* The same with two levels, complete: 1,049,601 values in 4 MiB. */
    {"test_million_leaves", {"million-leaves", "reply has too many values", NULL, 1, NULL, 0}},
    /* The next three answer the first lock command of a connection so, and
     * like a real master after: a client that took the reply counts the
     * fake master's next votes as OK.  1024 bulks of 2 KiB: every string
     * short, 2 MiB of them in one reply. */
    {"test_many_bulks", {"many-bulks", "reply longer than 1 MiB", NULL, 1, NULL, 0}},
    /* The 1 MiB cap is exact: one byte more is refused (it got through, and
     * up to about 16 KiB more did)... */
    {"test_bulk_over_cap", {"bulk-over-cap", "reply longer than 1 MiB", NULL, 1, NULL, 0}},
    /* ...and exactly 1 MiB is a reply (a wrong one), the connection kept:
     * the fake master's later votes count. */
    {"test_bulk_at_cap", {"bulk-at-cap", NULL, NULL, 0, NULL, 1, .keeps_connection = 1}},
    /* A bulk over the cap is refused at its length line, not once 1 MiB of
     * it is buffered: here nothing follows the line (the client used to
     * wait, and drop the master only as not answering). */
    {"test_bulk_header_over_cap",
     {"bulk-header-over-cap", "reply longer than 1 MiB", NULL, 1, NULL, 0}},
};

/* The mode of the running test: its setup gets the entry as cmocka's
 * initial state and replaces it with the fixture. */
static const mode_spec_t *current_mode;

static int mode_setup(void **state) {
  current_mode = *state;
  return fx_setup_2(state);
}

static void test_mode(void **state) { run_mode(*state, current_mode); }

/* One lock_async (no retry) that must succeed in time, then an unlock. */
static void lock_async_unlock(fx_t *fx, redlock_t *client, hostile_t *hs, const char *resource,
                              size_t *rss_max) {
  waiter_t w;
  waiter_init(&w);
  FX_ASSERT_RC(fx, client, redlock_lock_async(client, resource, 10000, 0, on_locked, &w),
               REDLOCK_OK);
  if (!waiter_wait(&w, LOCK_DEADLINE_MS, rss_max))
    die_stuck(fx, client, hs, "redlock_lock_async");
  FX_ASSERT_RC(fx, client, w.status, REDLOCK_OK);
  FX_ASSERT_RC(fx, client, redlock_unlock(client, w.lock), REDLOCK_OK);
  waiter_destroy(&w);
}

/* ---- reconnect storm ---------------------------------------------------------------- */

static void test_storm_backoff(void **state) {
  fx_t *fx = *state;
  hostile_t *hs = &the_hs;
  redlock_t *client = open_beside(fx, hs, "close-after-handshake", REDLOCK_LOG_WARN);
  assert_true(hs_wait_accepts(hs, 1, 5000));
  uint64_t first = hs->accept_ms[0], end = first + STORM_WINDOW_MS;

  /* Locks keep being granted by the healthy pair meanwhile; the loop also
   * reads the fake master's lines as they come, until the window ends. */
  size_t rss_max = 0;
  unsigned granted = 0;
  while (rh_now_ms() < end) {
    char resource[64];
    snprintf(resource, sizeof resource, "storm:%u", granted);
    lock_async_unlock(fx, client, hs, resource, &rss_max);
    granted++;
    uint64_t now = rh_now_ms();
    hs_read(hs, now < end ? (int)(end - now < 100 ? end - now : 100) : 0);
  }
  hs_read(hs, 0);
  size_t n = 0;
  while (n < hs->n_accepts && n < MAX_ACCEPTS && hs->accept_ms[n] <= end)
    n++;
  char gaps[1024] = "";
  size_t used = 0;
  for (size_t i = 1; i < n && used + 16 < sizeof gaps; i++)
    used += (size_t)snprintf(gaps + used, sizeof gaps - used, " %llu",
                             (unsigned long long)(hs->accept_ms[i] - hs->accept_ms[i - 1]));
  unsigned warnings = 0;
  const char *log = fx_log_text(fx, FX_ALL);
  for (const char *p = log; (p = strstr(p, hs->label)) != NULL; p++)
    warnings++;
  printf("  %zu connections in %u ms (%u locks granted meanwhile), gaps (ms):%s; "
         "%u log lines about it\n",
         n, STORM_WINDOW_MS, granted, gaps, warnings);
  fx_close(fx, 0);
  hs_stop(hs);

  /* Exponential backoff from 25 ms to its 1 s cap, with jitter, gives about
   * 8-10 connections in 4.5 s; the storm was about 46 a second. */
  if (n >= 15)
    fail_msg("%zu connections in %u ms: no backoff (gaps:%s)", n, STORM_WINDOW_MS, gaps);
  assert_true(n >= 4); /* enough gaps to compare */
  uint64_t first_gap = hs->accept_ms[1] - hs->accept_ms[0];
  uint64_t last_gap = hs->accept_ms[n - 1] - hs->accept_ms[n - 2];
  if (last_gap <= first_gap * 2)
    fail_msg("the gaps between connections do not grow:%s", gaps);
  /* Half the gaps against the other half: growth, not one lucky pair. */
  size_t gaps_n = n - 1, half = gaps_n / 2;
  uint64_t early = hs->accept_ms[half] - hs->accept_ms[0];
  uint64_t late = hs->accept_ms[n - 1] - hs->accept_ms[n - 1 - half];
  if (late <= early)
    fail_msg("the later gaps (%llu ms) are not longer than the earlier ones (%llu ms):%s",
             (unsigned long long)late, (unsigned long long)early, gaps);
  /* The log is not flooded either (it was about 110 lines a second). */
  assert_true(warnings < 10);
}

/* ---- close with releases owed to a master that stopped answering ------------------ */

typedef struct {
  fx_t *fx;
  waiter_t done;
} closer_t;

static void *close_thread(void *arg) {
  closer_t *c = arg;
  fx_close(c->fx, 0);
  waiter_signal(&c->done, 0, NULL);
  return NULL;
}

/* A master that answers the handshake and then nothing, without closing: the
 * releases it missed are replayed to it each time it comes back, and close
 * waits for the replies of replayed releases.  It must still return in
 * bounded time: the master is dropped once it has not answered for
 * NODE_HUNG_REQUEST_TIMEOUTS (3) request timeouts, as it would be while
 * rounds are running.  (Found by the endless-bulk mode above: close waited
 * until the 1 MiB cap dropped the trickling master, about 5 s; against a
 * silent one it never returned.) */
static void test_close_silent_replay(void **state) {
  fx_t *fx = *state;
  hostile_t *hs = &the_hs;
  redlock_t *client = open_beside(fx, hs, "silent", REDLOCK_LOG_INFO);
  assert_true(hs_wait_accepts(hs, 1, 5000));
  char replaying[96];
  snprintf(replaying, sizeof replaying, "master %.31s: replaying", hs->label);

  /* Locks and unlocks until the silent master was dropped as hung, dialled
   * again, and handed the releases it missed. */
  size_t rss_max = 0;
  unsigned granted = 0;
  uint64_t start = rh_now_ms();
  while (!(hs->n_accepts >= 2 && fx_log_contains(fx, FX_ALL, replaying))) {
    if (rh_now_ms() - start > MODE_BUDGET_MS)
      fail_msg("the silent master was not dialled again with releases to replay (accepts %zu)"
               "\nlog:\n%s",
               hs->n_accepts, fx_log_text(fx, FX_ALL));
    char resource[64];
    snprintf(resource, sizeof resource, "silent:%u", granted++);
    lock_async_unlock(fx, client, hs, resource, &rss_max);
    hs_read(hs, 20); /* also paces the loop: a line, or 20 ms */
  }

  /* Close from another thread, so that a hang is reported, not suffered. */
  closer_t closer = {.fx = fx};
  waiter_init(&closer.done);
  pthread_t thread;
  uint64_t t0 = rh_now_ms();
  assert_int_equal(pthread_create(&thread, NULL, close_thread, &closer), 0);
  unsigned bound = FX_IT_REQUEST_MS * 4u + 3000u;
  if (!waiter_wait(&closer.done, bound, &rss_max)) {
    fprintf(stderr,
            "FAIL: redlock_close did not return within %u ms with releases owed to a master "
            "that does not answer\nlog:\n%s\n",
            bound, fx_log_text(fx, FX_ALL));
    hs_stop(hs);
    _exit(1);
  }
  pthread_join(thread, NULL);
  waiter_destroy(&closer.done);
  printf("  %u locks, silent master dialled %zu times, close took %llu ms\n", granted,
         hs->n_accepts, (unsigned long long)(rh_now_ms() - t0));
}

int main(int argc, char **argv) {
  fx_use_profile(&fx_profile_integration);
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH/TO/hostile_server\n", argv[0]);
    return 2;
  }
  hostile_path = argv[1];
  /* e.g. HOSTILE_TEST='test_huge_*': run some of the tests only. */
  const char *only = getenv("HOSTILE_TEST");
  if (only != NULL && only[0] != '\0')
    cmocka_set_test_filter(only);
  enum { N_MODES = sizeof modes / sizeof modes[0] };
  struct CMUnitTest tests[N_MODES + 2] = {
      [N_MODES] = cmocka_unit_test_setup_teardown(test_storm_backoff, fx_setup_2, hostile_teardown),
      [N_MODES + 1] =
          cmocka_unit_test_setup_teardown(test_close_silent_replay, fx_setup_2, hostile_teardown),
  };
  for (size_t i = 0; i < N_MODES; i++)
    tests[i] = (struct CMUnitTest){modes[i].test, test_mode, mode_setup, hostile_teardown,
                                   (void *)&modes[i].spec};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
