/* torture_clockjump.c: the honest limit of Redlock, demonstrated and asserted
 * (docs/safety.md §4 and §6.2): a master whose wall clock jumps forward
 * expires keys early, which can let two holders overlap; fencing tokens still
 * order them, and a resource that checks tokens rejects the stale writer.
 *
 *   torture_clockjump [--shim PATH/clockshift.so] [--jump-ms MS]
 *
 * Three masters, all fresh; client A and client B (two redlock_t, as two
 * processes would have), fencing on.  The masters are the fixture's
 * (tests/support/fixture.h), started and stopped by PID; M0 runs with
 * LD_PRELOAD=clockshift.so (tests/support/clockshift.c, through the harness'
 * env option), whose wall clock the test moves by writing an offset into a
 * file.  The restart quarantine is off, explicitly: every master is fresh
 * and none restarts in this scenario, so it has nothing to protect (and a
 * master whose clock jumped forward would not be quarantined anyway: its
 * uptime jumps too).
 *
 *  1. A foreign value is put on M2, so that A can win only with M0 + M1.
 *     A takes the lock (ttl 3000 ms) and writes to the fenced store with its
 *     token tA: accepted.
 *  2. The foreign value is removed.  B tries: refused (ELOCKED), since A's
 *     value is on M0 and M1: mutual exclusion holds while clocks behave.
 *  3. M0's wall clock jumps forward by --jump-ms (10 s, more than the ttl).
 *     The test checks that M0's TIME is now ahead of M1's by the jump (the
 *     shim is in effect).  M0 has expired A's key.
 *  4. B tries again and wins, on M0 + M2 (a master A never had).  Now both
 *     hold the lock: A's validity (on its own monotonic clock) is still
 *     positive, and B's has begun: the hold windows overlap, which is
 *     asserted.  B's token tB > tA (M0's counter had A's write-back; its
 *     TIME floor is ahead, too).
 *  5. B writes with tB: accepted.  A, still within its validity, writes with
 *     tA: rejected by the store as stale.  Asserted.
 *  6. A's extension finds its value gone on a quorum (ELOST); A's unlock
 *     returns ELOST; B's unlock returns OK.
 * Exit status: 0 when exactly that happened; 1 when an assertion failed; 2 on
 * a set-up error (no redis-server, the shim not in effect).  If the machine
 * stalled for so long that A's validity ran out before B's grant (no overlap
 * to show), the scenario is run again on a new resource, at most 3 times,
 * saying so. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "redlock.h"
#include "torture_common.h"

#define TTL_MS 3000u
#define MAX_TTL_MS 10000u
#define REQUEST_MS 500u
#define CONNECT_MS 2000u

static int failures;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      printf("FAILED: %s:%d: %s: ", __FILE__, __LINE__, #cond);                                    \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
    }                                                                                              \
  } while (0)

/* ---- the masters: M0 under the clock shim, M1 and M2 plain -------------------------- */

static fx_t fx; /* fx.servers[0] is M0 */
static struct {
  char offset_file[PATH_MAX];
  int offset_fd;
} shift = {.offset_fd = -1};

static int set_offset_ms(int64_t ms) {
  int64_t ns = ms * 1000000LL;
  return pwrite(shift.offset_fd, &ns, sizeof ns, 0) == (ssize_t)sizeof ns ? 0 : -1;
}

/* The offset file (0 ms), then M0 with the shim preloaded (the harness'
 * program, REDLOCK_TEST_SERVER or redis-server, started and later stopped by
 * PID like any other), then M1 and M2. */
static int masters_start(const char *shim) {
  const char *tmp = getenv("TMPDIR");
  snprintf(shift.offset_file, sizeof shift.offset_file, "%s/redlock-clockjump-%d-XXXXXX",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", (int)getpid());
  shift.offset_fd = mkstemp(shift.offset_file);
  if (shift.offset_fd < 0) {
    shift.offset_file[0] = '\0';
    return -1;
  }
  if (set_offset_ms(0) != 0)
    return -1;
  char env_preload[PATH_MAX + 32], env_file[PATH_MAX + 32];
  snprintf(env_preload, sizeof env_preload, "LD_PRELOAD=%s", shim);
  snprintf(env_file, sizeof env_file, "CLOCKSHIFT_FILE=%s", shift.offset_file);
  const char *const env[] = {env_preload, env_file, NULL};
  const rh_options_t shifted = {.env = env};
  if (rh_server_start(&fx.servers[0], &shifted) != 0)
    return -1;
  fx.n = 1;
  if (rh_cluster_start(&fx.servers[1], 2, NULL) != 0)
    return -1;
  fx.n = 3;
  return 0;
}

static void masters_stop(void) {
  fx_servers_stop(&fx);
  if (shift.offset_fd >= 0)
    close(shift.offset_fd);
  shift.offset_fd = -1;
  if (shift.offset_file[0] != '\0')
    unlink(shift.offset_file);
}

/* TIME on master m ("seconds\nmicroseconds"), in microseconds; 0 on error. */
static uint64_t server_time_us(int m) {
  char buf[64], *end;
  if (rh_server_command(fx.servers[m], buf, sizeof buf, "TIME") != 0)
    return 0;
  uint64_t s = strtoull(buf, &end, 10);
  return *end == '\n' ? s * 1000000u + strtoull(end + 1, NULL, 10) : 0;
}

/* How long after the offset is written M0's TIME must show it. */
#define SHIM_SEEN_MS 2000

typedef struct {
  int64_t want_ms; /* the offset written */
  uint64_t m0, m1; /* TIME on M0 and M1, µs (0: no answer) */
  double ahead_ms; /* M0 - M1 */
} jump_seen_t;

/* M0's TIME is ahead of M1's by about the offset (within 1 s). */
static int jump_seen(void *arg) {
  jump_seen_t *j = arg;
  j->m0 = server_time_us(0);
  j->m1 = server_time_us(1);
  j->ahead_ms = ((double)j->m0 - (double)j->m1) / 1000.0;
  return j->m0 != 0 && j->m1 != 0 && j->ahead_ms >= (double)j->want_ms - 1000.0 &&
         j->ahead_ms <= (double)j->want_ms + 1000.0;
}

/* GET key on master m, into buf ("(nil)" when absent, "" unanswered). */
static void server_get(int m, const char *key, char *buf, size_t size) {
  rh_server_command(fx.servers[m], buf, size, "GET %s", key);
}

/* ---- the fenced store (docs/safety.md §7, as examples/fencing_store.c) ------------- */

typedef struct {
  uint64_t max_token;
  char max_holder[64];
  char data[64];
  unsigned accepted, rejected;
} store_t;

/* Larger token: accepted, becomes the largest.  Equal token: only from the
 * holder that brought it.  Smaller, or no token: rejected.  (Single-threaded
 * here, so no mutex is needed around check-and-write.) */
static int store_write(store_t *s, uint64_t token, const char *holder, const char *data) {
  if (token == 0 || token < s->max_token ||
      (token == s->max_token && strcmp(holder, s->max_holder) != 0)) {
    s->rejected++;
    return -1;
  }
  s->max_token = token;
  snprintf(s->max_holder, sizeof s->max_holder, "%s", holder);
  snprintf(s->data, sizeof s->data, "%s", data);
  s->accepted++;
  return 0;
}

/* ---- clients ---------------------------------------------------------------------- */

static void log_cb(int level, const char *msg, void *arg) {
  if (level >= REDLOCK_LOG_WARN)
    printf("  [client %s] %s\n", (const char *)arg, msg);
}

static redlock_t *open_client(const char *name) {
  redlock_options_t *o = redlock_options_new();
  if (o == NULL)
    return NULL;
  int rc = 0;
  for (size_t i = 0; i < fx.n && rc == 0; i++)
    rc = redlock_options_add_node(o, rh_server_uri(fx.servers[i]));
  if (rc == 0)
    rc = redlock_options_set_fencing(o, 1);
  if (rc == 0) /* fresh masters, none restarts here: see the header */
    rc = redlock_options_set_quarantine(o, 0);
  if (rc == 0)
    rc = redlock_options_set_max_ttl(o, MAX_TTL_MS);
  if (rc == 0)
    rc = redlock_options_set_timeouts(o, CONNECT_MS, REQUEST_MS);
  if (rc == 0)
    rc = redlock_options_set_retry(o, 0, 0, 0);
  if (rc == 0)
    rc = redlock_options_set_log(o, REDLOCK_LOG_WARN, log_cb, (void *)name);
  redlock_t *c = NULL;
  if (rc == 0)
    rc = redlock_open(&c, o);
  redlock_options_free(o);
  if (rc != 0) {
    fprintf(stderr, "clockjump: client %s: %s\n", name, redlock_err_name(rc));
    return NULL;
  }
  return c;
}

static double ms_since(uint64_t from, uint64_t t) { return ((double)t - (double)from) / 1e6; }

/* One run of the scenario on `res`.  Returns 1 when it ran to the end, 0 when
 * A's validity ran out before B's grant (a stalled machine: run again), -1
 * on a set-up error. */
static int scenario(redlock_t *a, redlock_t *b, const char *res, int64_t *offset_ms,
                    int64_t jump_ms) {
  char buf[128];
  uint64_t t0 = torture_now_ns();
  printf("\n-- scenario on resource %s --\n", res);

  /* 1. A can win only with M0 + M1. */
  if (rh_server_command(fx.servers[2], buf, sizeof buf, "SET %s %s PX 60000", res,
                        "foreign-value") != 0 ||
      strcmp(buf, "OK") != 0) {
    fprintf(stderr, "clockjump: set-up error: SET on M2 failed\n");
    return -1;
  }
  redlock_lock_t *la = NULL;
  int rc = redlock_trylock(a, res, TTL_MS, &la);
  uint64_t ga = torture_now_ns();
  int64_t va = rc == REDLOCK_OK ? redlock_lock_validity_ms(la) : 0;
  uint64_t vea = ga + (uint64_t)(va > 0 ? va : 0) * 1000000u;
  CHECK(rc == REDLOCK_OK, "A's lock: %s", redlock_err_name(rc));
  if (rc != REDLOCK_OK)
    return -1;
  uint64_t ta = redlock_lock_fence(la);
  const char *value_a = redlock_lock_value(la);
  printf("1. A holds %s: token %" PRIu64 ", validity %" PRId64 " ms (window [%.1f, %.1f] ms)\n",
         res, ta, va, ms_since(t0, ga), ms_since(t0, vea));
  server_get(0, res, buf, sizeof buf);
  CHECK(strcmp(buf, value_a) == 0, "M0 holds %s, not A's value", buf);
  server_get(1, res, buf, sizeof buf);
  CHECK(strcmp(buf, value_a) == 0, "M1 holds %s, not A's value", buf);
  server_get(2, res, buf, sizeof buf);
  CHECK(strcmp(buf, "foreign-value") == 0, "M2 holds %s, not the foreign value", buf);

  store_t store = {0};
  CHECK(store_write(&store, ta, value_a, "written by A") == 0, "A's first write was rejected");
  printf("   A writes with token %" PRIu64 ": accepted\n", ta);

  /* 2. While clocks behave, B is refused. */
  if (rh_server_command(fx.servers[2], buf, sizeof buf, "DEL %s", res) != 0 ||
      strcmp(buf, "1") != 0) {
    fprintf(stderr, "clockjump: set-up error: DEL on M2 failed\n");
    return -1;
  }
  redlock_lock_t *lb = NULL;
  rc = redlock_trylock(b, res, TTL_MS, &lb);
  CHECK(rc == REDLOCK_ELOCKED, "B's first try returned %s, expected REDLOCK_ELOCKED",
        redlock_err_name(rc));
  if (rc == REDLOCK_OK) {
    redlock_unlock(b, lb);
    lb = NULL;
  }
  printf("2. foreign value removed from M2; B tries: %s (A's value is on M0 and M1)\n",
         redlock_err_name(rc));

  /* 3. M0's wall clock jumps forward past the ttl. */
  uint64_t before_m0 = server_time_us(0), before_m1 = server_time_us(1);
  *offset_ms += jump_ms;
  if (set_offset_ms(*offset_ms) != 0) {
    fprintf(stderr, "clockjump: set-up error: cannot write the offset file\n");
    return -1;
  }
  /* Valkey answers TIME (and judges expiry) with the time it cached before
   * it last slept: the jump shows from the command after the one that woke
   * it.  Asked until it shows, within SHIM_SEEN_MS. */
  jump_seen_t seen = {.want_ms = *offset_ms};
  (void)rh_wait_until(jump_seen, &seen, SHIM_SEEN_MS);
  uint64_t after_m0 = seen.m0, after_m1 = seen.m1;
  double ahead_ms = seen.ahead_ms;
  double before_ms = ((double)before_m0 - (double)before_m1) / 1000.0;
  printf("3. M0's wall clock jumps forward by %" PRId64 " ms: M0 - M1 was %.0f ms, is now %.0f "
         "ms\n",
         jump_ms, before_ms, ahead_ms);
  if (after_m0 == 0 || after_m1 == 0 || ahead_ms < (double)*offset_ms - 1000.0 ||
      ahead_ms > (double)*offset_ms + 1000.0) {
    fprintf(stderr,
            "clockjump: set-up error: the clock shim is not in effect on M0 (TIME "
            "difference %.0f ms, expected about %" PRId64 " ms)\n",
            ahead_ms, *offset_ms);
    return -1;
  }

  /* 4. B wins on M0 (A's key expired there) + M2. */
  rc = redlock_trylock(b, res, TTL_MS, &lb);
  uint64_t gb = torture_now_ns();
  int64_t vb = rc == REDLOCK_OK ? redlock_lock_validity_ms(lb) : 0;
  uint64_t veb = gb + (uint64_t)(vb > 0 ? vb : 0) * 1000000u;
  int64_t va_now = redlock_lock_validity_ms(la);
  CHECK(rc == REDLOCK_OK, "B's second try: %s (expected a grant on M0 + M2)", redlock_err_name(rc));
  if (rc != REDLOCK_OK) {
    redlock_unlock(a, la);
    return 1;
  }
  if (va_now <= 0 || gb >= vea) {
    printf("   A's validity ran out (%" PRId64 " ms left) before B's grant: the machine stalled "
           "for seconds; no overlap to show, running again\n",
           va_now);
    redlock_unlock(b, lb);
    redlock_unlock(a, la);
    return 0;
  }
  uint64_t tb = redlock_lock_fence(lb);
  const char *value_b = redlock_lock_value(lb);
  printf("4. B holds %s too: token %" PRIu64 ", validity %" PRId64 " ms (window [%.1f, %.1f] "
         "ms); A still has %" PRId64 " ms of validity\n",
         res, tb, vb, ms_since(t0, gb), ms_since(t0, veb), va_now);
  server_get(0, res, buf, sizeof buf);
  CHECK(strcmp(buf, value_b) == 0, "M0 holds %s, not B's value", buf);
  server_get(1, res, buf, sizeof buf);
  CHECK(strcmp(buf, value_a) == 0, "M1 holds %s, not A's value", buf);
  server_get(2, res, buf, sizeof buf);
  CHECK(strcmp(buf, value_b) == 0, "M2 holds %s, not B's value", buf);
  /* The overlap: both hold windows contain [gb, min(vea, veb)]. */
  CHECK(gb < vea && ga < veb, "no overlap: A [%.1f, %.1f] ms, B [%.1f, %.1f] ms", ms_since(t0, ga),
        ms_since(t0, vea), ms_since(t0, gb), ms_since(t0, veb));
  printf("   OVERLAP: A and B both hold %s for %.1f ms (mutual exclusion is broken by the "
         "clock jump, as docs/safety.md §4 says it can be)\n",
         res, ms_since(gb, vea < veb ? vea : veb));
  CHECK(tb > ta, "B's token %" PRIu64 " is not above A's %" PRIu64, tb, ta);

  /* 5. The fenced store orders them. */
  CHECK(store_write(&store, tb, value_b, "written by B") == 0, "B's write was rejected");
  printf("5. B writes with token %" PRIu64 ": accepted\n", tb);
  va_now = redlock_lock_validity_ms(la);
  CHECK(va_now > 0, "A's validity ran out before its stale write (%" PRId64 " ms)", va_now);
  int stale = store_write(&store, ta, value_a, "stale write by A");
  CHECK(stale != 0, "A's stale write with token %" PRIu64 " was accepted after B's %" PRIu64, ta,
        tb);
  printf("   A (still %" PRId64 " ms of validity) writes with token %" PRIu64 ": %s\n", va_now, ta,
         stale != 0 ? "REJECTED (stale token)" : "accepted (!)");
  CHECK(strcmp(store.data, "written by B") == 0, "the store holds \"%s\"", store.data);

  /* 6. A learns it lost the lock; B releases normally. */
  rc = redlock_extend(a, la, TTL_MS);
  CHECK(rc == REDLOCK_ELOST, "A's extension returned %s, expected REDLOCK_ELOST",
        redlock_err_name(rc));
  CHECK(redlock_lock_is_lost(la), "A's lock is not marked lost");
  printf("6. A's extension: %s; ", redlock_err_name(rc));
  rc = redlock_unlock(a, la);
  CHECK(rc == REDLOCK_ELOST, "A's unlock returned %s, expected REDLOCK_ELOST",
        redlock_err_name(rc));
  printf("A's unlock: %s; ", redlock_err_name(rc));
  rc = redlock_unlock(b, lb);
  CHECK(rc == REDLOCK_OK, "B's unlock returned %s", redlock_err_name(rc));
  printf("B's unlock: %s\n", redlock_err_name(rc));
  printf("   store: %u accepted, %u rejected, largest token %" PRIu64 ", data \"%s\"\n",
         store.accepted, store.rejected, store.max_token, store.data);
  return 1;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  char shim[PATH_MAX] = "";
  int64_t jump_ms = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--shim") == 0)
      snprintf(shim, sizeof shim, "%s", argv[i + 1]);
    else if (strcmp(argv[i], "--jump-ms") == 0)
      jump_ms = strtoll(argv[i + 1], NULL, 10);
  }
  if (shim[0] == '\0') /* default: beside this executable */
    fx_beside_self(shim, sizeof shim, "clockshift.so");
  if (access(shim, R_OK) != 0 || jump_ms <= (int64_t)TTL_MS) {
    fprintf(stderr,
            "usage: torture_clockjump [--shim PATH/clockshift.so] [--jump-ms MS > %u]\n"
            "(shim %s: %s)\n",
            TTL_MS, shim, strerror(errno));
    return 2;
  }

  if (masters_start(shim) != 0) {
    fprintf(stderr, "clockjump: set-up error: could not start the masters (M0 under %s)\n", shim);
    masters_stop();
    return 2;
  }
  printf("masters: M0 127.0.0.1:%d (pid %d, wall clock shifted by %s), M1 :%d, M2 :%d\n",
         rh_server_port(fx.servers[0]), (int)rh_server_pid(fx.servers[0]), shim,
         rh_server_port(fx.servers[1]), rh_server_port(fx.servers[2]));

  int result = 2;
  redlock_t *a = open_client("A");
  redlock_t *b = a != NULL ? open_client("B") : NULL;
  if (a != NULL && b != NULL) {
    int64_t offset_ms = 0;
    int rc = 0;
    for (int attempt = 0; attempt < 3 && rc == 0; attempt++) {
      char res[64];
      snprintf(res, sizeof res, "clockjump:%d:%d", (int)getpid(), attempt);
      rc = scenario(a, b, res, &offset_ms, jump_ms);
    }
    if (rc == 1)
      result = failures == 0 ? 0 : 1;
    else if (rc == 0) {
      printf("FAILED: the machine stalled for seconds in each of 3 runs; nothing was shown\n");
      result = 1;
    }
  }
  redlock_close(b);
  redlock_close(a);
  masters_stop();
  printf("\nresult: %s\n", result == 0   ? "PASS: the clock jump let A and B overlap, and the "
                                           "fenced store rejected A's stale write"
                           : result == 1 ? "FAIL"
                                         : "SET-UP ERROR");
  return result;
}
