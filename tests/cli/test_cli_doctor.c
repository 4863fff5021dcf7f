/* test_cli_doctor.c: black-box tests of `redlock doctor` (tools/cli_doctor*.c)
 * against real servers that the harness starts on loopback and stops by PID;
 * and of status on the voters doctor knows (through sentinels, with a
 * failover; a cluster voter's primary for the key's slot, after a slot
 * migration, with no primary for it).
 * Cluster voters: a three-primary cluster of cluster_harness, healthy, then
 * with slots unassigned, then with a primary stopped (Redis, and Valkey).
 *
 *   test_cli_doctor PATH-TO-redlock CASE       runs one case (ctest: cli.<case>)
 *
 * Each case starts the servers it needs (a healthy master, an ACL user
 * without EVALSHA, a replica, a server without Lua, a master with a replica
 * for wait=, Valkey with AOF for waitaof=), runs the built binary to its end
 * (stdout on a pipe, stderr in a file, a deadline on its exit: nothing
 * waits by sleeping) and checks its exit status and the verdict of each
 * check, in the table and in the JSON.  No check is about time: the clock
 * and round-trip lines are looked at, never their values.  A redlock built
 * with sanitizers fails a case if it reports anything on stderr.  Exit 77
 * (ctest: skipped) when a case's server is not available. */
#define _GNU_SOURCE
#include <ctype.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "cli_cases.h"
#include "cluster_harness.h"
#include "redis_harness.h"
#include "sentinel_harness.h"
#include "test_io.h"

#define DEADLINE_MS 60000 /* a doctor run takes well under a second, plus --clock-ms */
#define MAX_SERVERS 4
#define MAX_ARGS 24
#define EXIT_SKIP 77
#define PASSWORD "doctor-pw-0123"

static const char *g_redlock; /* the binary under test */
static const char *g_case = "?";
static char g_tmpdir[PATH_MAX];
static rh_server_t *g_servers[MAX_SERVERS];
static pid_t g_sentinel;        /* started by case_sentinel, stopped by PID */
static ch_cluster_t *g_cluster; /* the cluster cases' (cluster_harness, stopped by PID) */
#define N_SENTINELS 3
static sh_sentinel_t *g_sentinels[N_SENTINELS]; /* case_status_sentinel's (sentinel_harness) */

/* One finished run of the binary. */
typedef struct {
  char out[65536];
  size_t out_len;
  char *err; /* stderr, malloc'ed */
  int status;
  const char *what; /* for messages */
} run_t;

static run_t g_run;

static void stop_sentinel(void);

static void cleanup(void) {
  stop_sentinel();
  ch_stop(g_cluster);
  g_cluster = NULL;
  for (int i = 0; i < N_SENTINELS; i++) {
    sh_stop(g_sentinels[i]); /* by PID */
    g_sentinels[i] = NULL;
  }
  for (int i = 0; i < MAX_SERVERS; i++) {
    rh_server_free(g_servers[i]); /* stops it by PID */
    g_servers[i] = NULL;
  }
  free(g_run.err);
  g_run.err = NULL;
  if (g_tmpdir[0] != '\0') {
    rh_remove_dir(g_tmpdir);
    g_tmpdir[0] = '\0';
  }
}

__attribute__((noreturn, format(printf, 4, 5))) static void
fail_at(const char *file, int line, const char *cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL [%s] %s:%d: check failed: %s -- ", g_case, file, line, cond);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  if (g_run.what != NULL)
    fprintf(stderr, "  --- %s: exit %d, stdout ---\n%s\n  --- stderr ---\n%s\n  ---\n", g_run.what,
            g_run.status, g_run.out, g_run.err ? g_run.err : "");
  cleanup();
  exit(1);
}

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      fail_at(__FILE__, __LINE__, #cond, __VA_ARGS__);                                             \
  } while (0)

/* ================================================================================
 * running the binary
 * ================================================================================ */

typedef struct {
  pid_t pid;
  int out_fd;
  int exited, wstatus;
} child_t;

static void drain(child_t *c) {
  for (;;) {
    size_t room = sizeof g_run.out - 1 - g_run.out_len;
    if (room == 0)
      return;
    ssize_t n = read(c->out_fd, g_run.out + g_run.out_len, room);
    if (n <= 0)
      return; /* EOF or EAGAIN */
    g_run.out_len += (size_t)n;
    g_run.out[g_run.out_len] = '\0';
  }
}

static int pred_exited(void *arg) {
  child_t *c = arg;
  drain(c);
  if (waitpid(c->pid, &c->wstatus, WNOHANG) == c->pid) {
    c->exited = 1;
    drain(c);
  }
  return c->exited;
}

/* Runs `redlock ARGS...` to its end, with REDLOCK_NODES = nodes (NULL:
 * unset); the result is in g_run. */
static run_t *run_argv(const char *nodes, const char *const *args) {
  const char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = g_redlock;
  for (int i = 0; args[i] != NULL && argc < MAX_ARGS; i++)
    argv[argc++] = args[i];
  argv[argc] = NULL;
  free(g_run.err);
  memset(&g_run, 0, sizeof g_run);
  g_run.what = args[0] != NULL ? args[0] : "redlock";
  char err_path[PATH_MAX + 16];
  snprintf(err_path, sizeof err_path, "%s/stderr", g_tmpdir);
  int out_pipe[2];
  CHECK(pipe2(out_pipe, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
  int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CHECK(err_fd >= 0, "open %s: %s", err_path, strerror(errno));
  fflush(NULL);
  child_t c = {.pid = fork(), .out_fd = out_pipe[0]};
  CHECK(c.pid >= 0, "fork: %s", strerror(errno));
  if (c.pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a crashed driver leaks no redlock */
    dup2(out_pipe[1], 1);
    dup2(err_fd, 2);
    if (nodes != NULL)
      setenv("REDLOCK_NODES", nodes, 1);
    else
      unsetenv("REDLOCK_NODES");
    signal(SIGPIPE, SIG_DFL);
    execv(g_redlock, (char *const *)argv);
    _exit(99);
  }
  close(out_pipe[1]);
  close(err_fd);
  fcntl(c.out_fd, F_SETFL, fcntl(c.out_fd, F_GETFL) | O_NONBLOCK);
  int done = rh_wait_until(pred_exited, &c, DEADLINE_MS);
  if (!done) {
    kill(c.pid, SIGKILL);
    waitpid(c.pid, &c.wstatus, 0);
  }
  close(c.out_fd);
  size_t len;
  g_run.err = tio_read_file(err_path, &len);
  unlink(err_path);
  CHECK(done, "redlock still running after %d ms", DEADLINE_MS);
  g_run.status = WIFEXITED(c.wstatus) ? WEXITSTATUS(c.wstatus) : 128 + WTERMSIG(c.wstatus);
  CHECK(g_run.err != NULL, "stderr unreadable");
  CHECK(strstr(g_run.err, "Sanitizer") == NULL && strstr(g_run.err, "runtime error") == NULL,
        "sanitizer report from redlock");
  return &g_run;
}

/* The servers are fresh: the cases that are not about the quarantine turn
 * it off (as every `run` of test_cli does); DOCTOR_Q keeps it on. */
#define DOCTOR(nodes, ...)                                                                         \
  run_argv((nodes), (const char *const[]){"doctor", "--no-quarantine", __VA_ARGS__, NULL})
#define DOCTOR_Q(nodes, ...) run_argv((nodes), (const char *const[]){"doctor", __VA_ARGS__, NULL})
#define REDLOCK(...) run_argv(NULL, (const char *const[]){__VA_ARGS__, NULL})

/* ================================================================================
 * reading the report
 * ================================================================================ */

/* The line of check `name` in the block of voter `label` ("  STATUS  NAME
 * DETAIL"): its status word into status and its detail into detail.  0 when
 * there is none. */
static int check_line(const run_t *r, const char *label, const char *name, char *status,
                      char *detail, size_t detail_size) {
  char header[300];
  snprintf(header, sizeof header, "VOTER %s: ", label);
  const char *p = strstr(r->out, header);
  if (p == NULL)
    return 0;
  for (p = strchr(p, '\n'); p != NULL && p[1] == ' '; p = strchr(p + 1, '\n')) {
    const char *line = p + 1;
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buf[4096];
    snprintf(buf, sizeof buf, "%.*s", (int)len, line);
    char st[16], nm[64];
    int off = 0;
    if (sscanf(buf, " %15s %63s %n", st, nm, &off) == 2 && strcmp(nm, name) == 0) {
      snprintf(status, 16, "%s", st);
      snprintf(detail, detail_size, "%s", buf + off);
      return 1;
    }
  }
  return 0;
}

/* Checks that voter label's check `name` has status want (and, unless NULL,
 * a detail that contains needle). */
static void expect_check_at(int line, const char *label, const char *name, const char *want,
                            const char *needle) {
  char st[16] = "", de[4096] = "";
  if (!check_line(&g_run, label, name, st, de, sizeof de))
    fail_at(__FILE__, line, "check_line", "no %s line for %s", name, label);
  if (strcmp(st, want) != 0)
    fail_at(__FILE__, line, "status", "%s of %s: %s, expected %s (%s)", name, label, st, want, de);
  if (needle != NULL && strstr(de, needle) == NULL)
    fail_at(__FILE__, line, "detail", "%s of %s: '%s' lacks '%s'", name, label, de, needle);
}

#define EXPECT_CHECK(label, name, want, needle)                                                    \
  expect_check_at(__LINE__, (label), (name), (want), (needle))

/* The same for a cluster primary's line in voter label's block: "  STATUS
 * HOST:PORT NAME  DETAIL". */
static void expect_primary_at(int line, const char *label, const char *primary, const char *name,
                              const char *want, const char *needle) {
  char header[300];
  snprintf(header, sizeof header, "VOTER %s: ", label);
  const char *p = strstr(g_run.out, header);
  if (p == NULL)
    fail_at(__FILE__, line, "header", "no block for %s", label);
  for (p = strchr(p, '\n'); p != NULL && p[1] == ' '; p = strchr(p + 1, '\n')) {
    const char *l = p + 1;
    const char *end = strchr(l, '\n');
    char buf[4096], st[16], at[300], nm[64];
    snprintf(buf, sizeof buf, "%.*s", (int)(end ? (size_t)(end - l) : strlen(l)), l);
    int off = 0;
    if (sscanf(buf, " %15s %299s %63s %n", st, at, nm, &off) != 3 || strcmp(at, primary) != 0 ||
        strcmp(nm, name) != 0)
      continue;
    if (strcmp(st, want) != 0)
      fail_at(__FILE__, line, "status", "%s of %s on %s: %s, expected %s (%s)", name, primary,
              label, st, want, buf + off);
    if (needle != NULL && strstr(buf + off, needle) == NULL)
      fail_at(__FILE__, line, "detail", "%s of %s on %s: '%s' lacks '%s'", name, primary, label,
              buf + off, needle);
    return;
  }
  fail_at(__FILE__, line, "primary line", "no %s line for primary %s of %s", name, primary, label);
}

#define EXPECT_PRIMARY(label, primary, name, want, needle)                                         \
  expect_primary_at(__LINE__, (label), (primary), (name), (want), (needle))

static int has(const char *needle) { return strstr(g_run.out, needle) != NULL; }

/* ---- a JSON syntax check: RFC 8259 values, nothing else ------------------------------- */

static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
    p++;
  return p;
}

static const char *json_string(const char *p) {
  if (*p++ != '"')
    return NULL;
  while (*p != '"') {
    if ((unsigned char)*p < 0x20)
      return NULL;
    if (*p == '\\') {
      p++;
      if (*p == 'u') {
        for (int i = 1; i <= 4; i++)
          if (!isxdigit((unsigned char)p[i]))
            return NULL;
        p += 4;
      } else if (strchr("\"\\/bfnrt", *p) == NULL || *p == '\0') {
        return NULL;
      }
    }
    p++;
  }
  return p + 1;
}

static const char *json_number(const char *p) {
  if (*p == '-')
    p++;
  if (!isdigit((unsigned char)*p))
    return NULL;
  if (*p == '0')
    p++;
  else
    while (isdigit((unsigned char)*p))
      p++;
  if (*p == '.') {
    p++;
    if (!isdigit((unsigned char)*p))
      return NULL;
    while (isdigit((unsigned char)*p))
      p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-')
      p++;
    if (!isdigit((unsigned char)*p))
      return NULL;
    while (isdigit((unsigned char)*p))
      p++;
  }
  return p;
}

/* Objects and arrays: members (object: "key": value) separated by ','. */
static const char *json_container(const char *p, int depth, char close, int object) {
  p = json_ws(p + 1);
  if (*p == close)
    return p + 1;
  for (;;) {
    if (object) {
      if ((p = json_string(json_ws(p))) == NULL || *(p = json_ws(p)) != ':')
        return NULL;
      p++;
    }
    if ((p = json_value(p, depth + 1)) == NULL)
      return NULL;
    p = json_ws(p);
    if (*p == close)
      return p + 1;
    if (*p++ != ',')
      return NULL;
  }
}

static const char *json_value(const char *p, int depth) {
  if (depth > 32)
    return NULL;
  p = json_ws(p);
  if (*p == '{')
    return json_container(p, depth, '}', 1);
  if (*p == '[')
    return json_container(p, depth, ']', 0);
  if (*p == '"')
    return json_string(p);
  static const char *const words[] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++)
    if (strncmp(p, words[i], strlen(words[i])) == 0)
      return p + strlen(words[i]);
  return json_number(p);
}

/* 1 when status's row of master label contains needle. */
static int status_row_has(const char *label, const char *needle) {
  char start[64];
  snprintf(start, sizeof start, "\n%s ", label);
  const char *p = strstr(g_run.out, start);
  if (p == NULL)
    return 0;
  const char *eol = strchr(p + 1, '\n');
  const char *n = strstr(p, needle);
  return n != NULL && (eol == NULL || n < eol);
}

/* 1 when s is one JSON value (and a trailing newline). */
static int json_valid(const char *s) {
  const char *end = json_value(s, 0);
  return end != NULL && *json_ws(end) == '\0';
}

/* ================================================================================
 * servers
 * ================================================================================ */

static rh_server_t *start_server(const rh_options_t *opts) {
  int slot = -1;
  for (int i = 0; i < MAX_SERVERS && slot < 0; i++)
    if (g_servers[i] == NULL)
      slot = i;
  CHECK(slot >= 0, "too many servers");
  CHECK(rh_server_start(&g_servers[slot], opts) == 0, "cannot start %s", rh_server_name());
  return g_servers[slot];
}

static const char *label_of(const rh_server_t *s) {
  static char buf[4][32];
  static int next;
  char *l = buf[next++ % 4];
  snprintf(l, sizeof buf[0], "127.0.0.1:%d", rh_server_port(s));
  return l;
}

/* The server's URI with a query ("?wait=1"), in one of a few buffers. */
static const char *uri_with(const rh_server_t *s, const char *query) {
  static char buf[4][600];
  static int next;
  char *u = buf[next++ % 4];
  snprintf(u, sizeof buf[0], "%s%s", rh_server_uri(s), query);
  return u;
}

/* The value of `field:` in the server's INFO (all sections), or "". */
static void info_field(rh_server_t *s, const char *field, char *out, size_t size) {
  char info[16384];
  out[0] = '\0';
  CHECK(rh_server_command(s, info, sizeof info, "INFO") == 0, "INFO");
  char pat[64];
  snprintf(pat, sizeof pat, "\n%s:", field);
  const char *p = strstr(info, pat);
  if (p != NULL)
    snprintf(out, size, "%.*s", (int)strcspn(p + strlen(pat), "\r\n"), p + strlen(pat));
}

/* 1 when the server has WAITAOF: Valkey, or Redis 7.2 and later. */
static int has_waitaof(rh_server_t *s) {
  char name[32], version[32];
  info_field(s, "server_name", name, sizeof name);
  info_field(s, "redis_version", version, sizeof version);
  int major = 0, minor = 0;
  sscanf(version, "%d.%d", &major, &minor);
  return strcmp(name, "valkey") == 0 || major > 7 || (major == 7 && minor >= 2);
}

/* 1 when the server is Redis 7 (Debian's redis-server): no DELIFEQ / DELEX,
 * no SET IFEQ, so its path is "scripts". */
static int is_redis7(rh_server_t *s) {
  char name[32], version[32];
  info_field(s, "server_name", name, sizeof name);
  info_field(s, "redis_version", version, sizeof version);
  return strcmp(name, "valkey") != 0 && strncmp(version, "7.", 2) == 0;
}

static int pred_replica_online(void *arg) {
  char state[256];
  info_field(arg, "slave0", state, sizeof state);
  return strstr(state, "state=online") != NULL;
}

/* ---- a sentinel ------------------------------------------------------------------------
 * Started here rather than by the harness: a sentinel runs from a config
 * file of its own (which it rewrites).  One at a time, stopped by PID. */

#define SENTINEL_PASSWORD "sentinel-pw-9876"

static void stop_sentinel(void) {
  if (g_sentinel <= 0)
    return;
  kill(g_sentinel, SIGKILL);
  waitpid(g_sentinel, NULL, 0);
  g_sentinel = 0;
}

typedef struct {
  int port;
  int died;
} sentinel_wait_t;

/* Our sentinel answers PING (with its password), or has exited. */
static int pred_sentinel_up(void *arg) {
  sentinel_wait_t *w = arg;
  if (waitpid(g_sentinel, NULL, WNOHANG) == g_sentinel) {
    g_sentinel = 0;
    w->died = 1;
    return 1;
  }
  struct timeval tv = {0, 200000};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", w->port, tv);
  int up = 0;
  if (c != NULL && !c->err) {
    redisSetTimeout(c, tv);
    redisReply *r = redisCommand(c, "AUTH %s", SENTINEL_PASSWORD);
    if (r != NULL)
      freeReplyObject(r);
    r = redisCommand(c, "PING");
    up = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (r != NULL)
      freeReplyObject(r);
  }
  if (c != NULL)
    redisFree(c);
  return up;
}

/* Starts a sentinel (with a password) that monitors master as "mymaster",
 * whose password is master_password.  Returns its port. */
static int start_sentinel(const rh_server_t *master, const char *master_password) {
  const char *exe = rh_server_executable();
  CHECK(exe != NULL, "no %s", rh_server_name());
  char conf[PATH_MAX + 32];
  snprintf(conf, sizeof conf, "%s/sentinel.conf", g_tmpdir);
  for (int attempt = 0; attempt < 5; attempt++) {
    int port = rh_free_port();
    CHECK(port > 0, "no free port");
    FILE *f = fopen(conf, "w");
    CHECK(f != NULL, "%s: %s", conf, strerror(errno));
    fprintf(f,
            "port %d\nbind 127.0.0.1\ndir %s\nlogfile %s/sentinel.log\nrequirepass %s\n"
            "sentinel monitor mymaster 127.0.0.1 %d 1\nsentinel auth-pass mymaster %s\n",
            port, g_tmpdir, g_tmpdir, SENTINEL_PASSWORD, rh_server_port(master), master_password);
    CHECK(fclose(f) == 0, "write %s", conf);
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
      if (rh_child_init(parent) != 0)
        _exit(127);
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execl(exe, exe, conf, "--sentinel", (char *)NULL);
      _exit(127);
    }
    g_sentinel = pid;
    sentinel_wait_t w = {.port = port};
    CHECK(rh_wait_until(pred_sentinel_up, &w, DEADLINE_MS), "the sentinel answers");
    if (!w.died)
      return port;
  }
  fail_at(__FILE__, __LINE__, "start_sentinel", "could not start a sentinel");
}

/* ================================================================================
 * cases
 * ================================================================================ */

/* A healthy master (with a password): every check passes, exit 0, the JSON
 * parses; the doctor's own keys are gone afterwards; no password shown. */
static void case_healthy(void) {
  rh_server_t *m = start_server(&(rh_options_t){.password = PASSWORD});
  const char *label = label_of(m);
  run_t *r = DOCTOR(NULL, "--clock-ms", "200", rh_server_uri(m));
  CHECK(r->status == 0, "a healthy master can vote: exit %d", r->status);
  char header[64];
  snprintf(header, sizeof header, "VOTER %s: can vote\n", label);
  CHECK(has(header), "header line");
  EXPECT_CHECK(label, "connect", "ok", "over TCP");
  EXPECT_CHECK(label, "auth", "ok", "default user");
  EXPECT_CHECK(label, "server", "ok", NULL);
  EXPECT_CHECK(label, "role", "ok", "master");
  EXPECT_CHECK(label, "topology", "ok", "0 connected replicas");
  EXPECT_CHECK(label, "info", "ok", "run_id");
  EXPECT_CHECK(label, "persistence", "ok", "appendonly no");
  EXPECT_CHECK(label, "acl", "ok", "user 'default' may run all");
  EXPECT_CHECK(label, "scripts", "ok", NULL);
  EXPECT_CHECK(label, "evalsha", "ok", NULL);
  EXPECT_CHECK(label, "eval", "ok", NULL);
  EXPECT_CHECK(label, "time-in-script", "ok", "fencing token");
  EXPECT_CHECK(label, "publish", "ok", NULL);
  EXPECT_CHECK(label, "subscribe", "ok", NULL);
  EXPECT_CHECK(label, "ack", "skip", "none asked");
  EXPECT_CHECK(label, "rtt", "ok", " us (median of 10 PINGs");
  EXPECT_CHECK(label, "path", "ok", NULL);
  if (is_redis7(m)) {
    EXPECT_CHECK(label, "path", "ok", "scripts: no script-free commands; Lua scripts");
    EXPECT_CHECK(label, "direct", "skip", "no script-free commands");
  }
  CHECK(!has("  limits  ") && !has("fenced-tx"), "no limits and no transactions with Lua");
  char st[16], de[1024];
  CHECK(check_line(r, label, "clock", st, de, sizeof de) && strstr(de, "ppm") != NULL,
        "a clock line with the drift");
  CHECK(!has(PASSWORD) && strstr(r->err, PASSWORD) == NULL, "no password shown");
  char dbsize[32];
  CHECK(rh_server_command(m, dbsize, sizeof dbsize, "DBSIZE") == 0 && strcmp(dbsize, "0") == 0,
        "the doctor's keys are deleted: DBSIZE %s", dbsize);

  r = DOCTOR(NULL, "--json", "--clock-ms", "0", rh_server_uri(m));
  CHECK(r->status == 0, "--json: exit %d", r->status);
  CHECK(json_valid(r->out), "--json prints one JSON value");
  CHECK(has("\"all_can_vote\":true") && has("\"can_vote\":true"), "all can vote");
  CHECK(has("{\"name\":\"evalsha\",\"status\":\"ok\","), "the evalsha check");
  CHECK(has("\"role\":\"master\"") && has("\"kind\":\"standalone\""), "role and kind");
  CHECK(has("{\"name\":\"clock\",\"status\":\"skip\","), "--clock-ms 0: no clock measure");
  CHECK(has("\"limited\":false") && has("\"limited_voters\":0}"), "not limited");
  if (is_redis7(m))
    CHECK(has("\"path\":\"scripts\""), "the path in the JSON");
  CHECK(!has(PASSWORD), "no password in the JSON");

  /* The voters from REDLOCK_NODES; a cluster voter whose seed does not
   * answer cannot vote, and says so. */
  r = DOCTOR(rh_server_uri(m), "--clock-ms", "0");
  CHECK(r->status == 0 && has(header), "REDLOCK_NODES: exit %d", r->status);
  r = DOCTOR(NULL, "--clock-ms", "0", rh_server_uri(m), "redis-cluster://127.0.0.1:1");
  CHECK(r->status == 1, "a cluster voter: exit %d", r->status);
  EXPECT_CHECK("cluster@127.0.0.1:1", "slot-map", "FAIL",
               "no seed gave the slot map: 127.0.0.1:1: Connection refused");
  CHECK(has("1 of 2 voters can vote"), "the summary");

  /* status shows the path too. */
  r = REDLOCK("status", "--no-quarantine", "--node", rh_server_uri(m), "healthy-res");
  CHECK(r->status == 0 && has("PATH"), "status: exit %d", r->status);
  if (is_redis7(m))
    CHECK(status_row_has(label, "scripts"), "status: path scripts");
}

/* An ACL user without EVALSHA cannot vote, and the reasons name EVALSHA. */
static void case_acl(void) {
  rh_server_t *m = start_server(NULL);
  char reply[256];
  CHECK(rh_server_command(m, reply, sizeof reply,
                          "ACL SETUSER noevalsha on >pw ~* &* +@all -evalsha") == 0 &&
            strcmp(reply, "OK") == 0,
        "ACL SETUSER: %s", reply);
  char uri[128];
  snprintf(uri, sizeof uri, "redis://noevalsha:pw@127.0.0.1:%d", rh_server_port(m));
  const char *label = label_of(m);
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", uri);
  CHECK(r->status == 1, "cannot vote: exit %d", r->status);
  char header[64];
  snprintf(header, sizeof header, "VOTER %s: cannot vote\n", label);
  CHECK(has(header), "header line");
  EXPECT_CHECK(label, "auth", "ok", "user 'noevalsha'");
  EXPECT_CHECK(label, "acl", "FAIL", "EVALSHA");
  EXPECT_CHECK(label, "evalsha", "FAIL", "EVALSHA");
  EXPECT_CHECK(label, "eval", "ok", NULL);
  r = DOCTOR(NULL, "--json", "--clock-ms", "0", uri);
  CHECK(r->status == 1 && json_valid(r->out), "--json: exit %d", r->status);
  CHECK(has("\"all_can_vote\":false") && has("\"can_vote\":false"), "cannot vote");
  CHECK(has("{\"name\":\"evalsha\",\"status\":\"fail\","), "the evalsha check fails");
  CHECK(!has(":pw@"), "no password");
}

/* waitaof= against a server without WAITAOF (Redis before 7.2): a clear
 * refusal.  On a server that has it (REDLOCK_TEST_SERVER=valkey-server),
 * the same URI meets AOF off. */
static void case_waitaof_old(void) {
  rh_server_t *m = start_server(NULL);
  const char *label = label_of(m);
  int has_it = has_waitaof(m);
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", uri_with(m, "?waitaof=1,0"));
  CHECK(r->status == 1, "cannot vote: exit %d", r->status);
  if (has_it)
    EXPECT_CHECK(label, "ack", "FAIL", "AOF is off (appendonly no)");
  else
    EXPECT_CHECK(label, "ack", "FAIL", "WAITAOF needs Redis >= 7.2 or Valkey");
}

/* A replica given as a master cannot vote. */
static void case_replica(void) {
  rh_server_t *m = start_server(NULL);
  char port[16];
  snprintf(port, sizeof port, "%d", rh_server_port(m));
  rh_server_t *rep = start_server(
      &(rh_options_t){.extra_args = (const char *const[]){"--replicaof", "127.0.0.1", port, NULL}});
  const char *mlabel = label_of(m), *rlabel = label_of(rep);
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", rh_server_uri(m), rh_server_uri(rep));
  CHECK(r->status == 1, "a replica cannot vote: exit %d", r->status);
  EXPECT_CHECK(mlabel, "role", "ok", "master");
  EXPECT_CHECK(rlabel, "role", "FAIL", "a replica cannot vote");
  char header[64];
  snprintf(header, sizeof header, "VOTER %s: cannot vote\n", rlabel);
  CHECK(has(header), "the replica's header");
  CHECK(has("1 of 2 voters can vote"), "the summary");
}

/* EVALSHA and EVAL renamed away on a server whose SCRIPT LOAD works: the
 * library's handshake takes it for one that runs scripts (path "scripts" on
 * Redis 7), whose EVALSHA then fails: it cannot vote. */
static void case_nolua(void) {
  rh_server_t *m = start_server(
      &(rh_options_t){.extra_args = (const char *const[]){"--rename-command", "EVALSHA", "",
                                                          "--rename-command", "EVAL", "", NULL}});
  const char *label = label_of(m);
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", rh_server_uri(m));
  CHECK(r->status == 1, "no Lua: exit %d", r->status);
  EXPECT_CHECK(label, "evalsha", "FAIL", "runs no Lua scripts");
  EXPECT_CHECK(label, "eval", "FAIL", "runs no Lua scripts");
  EXPECT_CHECK(label, "time-in-script", "skip", NULL);
  EXPECT_CHECK(label, "scripts", "ok", NULL);
  if (is_redis7(m))
    EXPECT_CHECK(label, "path", "ok", "scripts: no script-free commands; Lua scripts");
}

/* wait=1: a master with one replica can vote; one without cannot, and
 * says how many acknowledged. */
static void case_wait(void) {
  /* No delay before a full sync: the replica is online at once. */
  rh_server_t *m = start_server(&(rh_options_t){
      .extra_args = (const char *const[]){"--repl-diskless-sync-delay", "0", NULL}});
  char port[16];
  snprintf(port, sizeof port, "%d", rh_server_port(m));
  start_server(
      &(rh_options_t){.extra_args = (const char *const[]){"--replicaof", "127.0.0.1", port, NULL}});
  CHECK(rh_wait_until(pred_replica_online, m, DEADLINE_MS), "the replica comes online");
  const char *label = label_of(m);
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", uri_with(m, "?wait=1&wait_ms=10000"));
  CHECK(r->status == 0, "wait=1 with a replica: exit %d", r->status);
  EXPECT_CHECK(label, "ack", "ok", "1 of 1 replicas acknowledged");
  EXPECT_CHECK(label, "topology", "ok", "1 connected replica");

  rh_server_t *alone = start_server(NULL);
  const char *alone_label = label_of(alone);
  r = DOCTOR(NULL, "--clock-ms", "0", uri_with(alone, "?wait=1&wait_ms=100"));
  CHECK(r->status == 1, "wait=1 without a replica: exit %d", r->status);
  EXPECT_CHECK(alone_label, "ack", "FAIL", "0 of 1 replicas acknowledged");
}

/* waitaof=1,0 on Valkey 8 with AOF on can vote (skipped without Valkey). */
/* The servers started from here on are Valkey's: REDLOCK_TEST_SERVER when
 * it is Valkey, else REDLOCK_TEST_VALKEY; the case is skipped without. */
static void use_valkey(void) {
  const char *server = getenv("REDLOCK_TEST_SERVER");
  if (server == NULL || strstr(server, "valkey") == NULL) {
    const char *valkey = getenv("REDLOCK_TEST_VALKEY"); /* tests/cli/CMakeLists.txt */
    if (valkey == NULL || access(valkey, X_OK) != 0) {
      printf("skipped [%s]: no valkey-server (scripts/fetch-extra.sh puts it in build-extra/)\n",
             g_case);
      cleanup();
      exit(EXIT_SKIP);
    }
    setenv("REDLOCK_TEST_SERVER", valkey, 1);
  }
}

static void case_valkey_waitaof(void) {
  use_valkey();
  rh_server_t *m = start_server(
      &(rh_options_t){.extra_args = (const char *const[]){"--appendonly", "yes", NULL}});
  const char *label = label_of(m);
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", uri_with(m, "?waitaof=1,0&wait_ms=10000"));
  CHECK(r->status == 0, "waitaof=1,0 with AOF on: exit %d", r->status);
  EXPECT_CHECK(label, "server", "ok", "valkey");
  EXPECT_CHECK(label, "ack", "ok", "local fsync done");
  EXPECT_CHECK(label, "persistence", "ok", "appendonly yes");
}

/* The servers started from here on are Valkey 9.1's (REDLOCK_TEST_VALKEY9:
 * a Lua engine that can be unloaded, DELIFEQ, SET IFEQ); the case is
 * skipped without. */
static void use_valkey9(void) {
  const char *valkey = rh_valkey9_executable(); /* tests/cli/CMakeLists.txt */
  if (valkey == NULL) {
    printf("skipped [%s]: no Valkey 9.1 server (REDLOCK_TEST_VALKEY9)\n", g_case);
    cleanup();
    exit(EXIT_SKIP);
  }
  setenv("REDLOCK_TEST_SERVER", valkey, 1);
}

/* A Valkey 9.1 master whose Lua engine is unloaded (MODULE UNLOAD lua). */
static rh_server_t *start_valkey9_nolua(const char *const *more) {
  return start_server(&(rh_options_t){.no_lua = 1, .extra_args = more});
}

/* Valkey 9.1 without Lua: the path is the script-free commands, the master
 * can vote with limits (the Lua checks are skipped, the warn line says what
 * is refused there), and the script-free release, extension and fenced
 * transactions work; without DELIFEQ as well (renamed away) it cannot vote.
 * status shows the path. */
static void case_valkey9_nolua(void) {
  use_valkey9();
  rh_server_t *m = start_valkey9_nolua(NULL);
  const char *label = label_of(m);
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", rh_server_uri(m));
  CHECK(r->status == 0, "no Lua, script-free commands: can vote: exit %d", r->status);
  char header[160];
  snprintf(header, sizeof header, "VOTER %s: can vote, with limits (no Lua", label);
  CHECK(has(header), "header line");
  EXPECT_CHECK(label, "path", "ok", "script-free commands: DELIFEQ, SET IFEQ; no Lua engine");
  EXPECT_CHECK(label, "limits", "warn",
               "semaphores, read-write locks and multi-resource locks need Lua: refused here "
               "(unsupported)");
  EXPECT_CHECK(label, "scripts", "skip", "no Lua engine (SCRIPT LOAD: ERR Could not find");
  EXPECT_CHECK(label, "evalsha", "skip", "no Lua engine");
  EXPECT_CHECK(label, "eval", "skip", "no Lua engine");
  EXPECT_CHECK(label, "time-in-script", "skip", "no Lua engine");
  EXPECT_CHECK(label, "publish", "skip", "no Lua engine");
  EXPECT_CHECK(label, "direct", "ok", "SET IFEQ PX (an extension), DELIFEQ and PUBLISH");
  EXPECT_CHECK(label, "fenced-tx", "ok", "the acquisition");
  EXPECT_CHECK(label, "acl", "ok", "user 'default' may run all");
  CHECK(has("the 1 voter can vote; 1 of them with limits (no Lua"), "the summary");
  char dbsize[32];
  CHECK(rh_server_command(m, dbsize, sizeof dbsize, "DBSIZE") == 0 && strcmp(dbsize, "0") == 0,
        "the doctor's keys are deleted: DBSIZE %s", dbsize);

  r = DOCTOR(NULL, "--json", "--clock-ms", "0", rh_server_uri(m));
  CHECK(r->status == 0 && json_valid(r->out), "--json: exit %d", r->status);
  CHECK(has("\"path\":\"script-free commands\",\"limited\":true"), "path and limited");
  CHECK(has("\"all_can_vote\":true") && has("\"limited_voters\":1}"), "can vote, one limited");
  CHECK(has("{\"name\":\"limits\",\"status\":\"warn\","), "the limits line");

  r = REDLOCK("status", "--no-quarantine", "--node", rh_server_uri(m), "vk9-res");
  CHECK(r->status == 0, "status: exit %d", r->status);
  CHECK(has("PATH") && status_row_has(label, "script-free commands"), "status shows the path");
  CHECK(has("no Lua engine (path script-free commands): no vote there for semaphores"),
        "status says what is refused there");
  r = REDLOCK("status", "--json", "--no-quarantine", "--node", rh_server_uri(m), "vk9-res");
  CHECK(r->status == 0 && json_valid(r->out), "status --json: exit %d", r->status);
  CHECK(has("\"path\":\"script-free commands\""), "status --json has the path");

  /* Neither Lua nor DELIFEQ: a lock could not be released before its TTL. */
  rh_server_t *bare =
      start_valkey9_nolua((const char *const[]){"--rename-command", "DELIFEQ", "", NULL});
  const char *bare_label = label_of(bare);
  r = DOCTOR(NULL, "--clock-ms", "0", rh_server_uri(m), rh_server_uri(bare));
  CHECK(r->status == 1, "no Lua, no DELIFEQ: cannot vote: exit %d", r->status);
  EXPECT_CHECK(bare_label, "path", "FAIL", "none: SET IFEQ; no Lua engine");
  EXPECT_CHECK(bare_label, "direct", "skip", "no script-free commands");
  CHECK(has("1 of 2 voters can vote (a quorum is 2); 1 of them with limits"), "the summary");
  r = REDLOCK("status", "--no-quarantine", "--node", rh_server_uri(bare), "vk9-res");
  CHECK(status_row_has(bare_label, "none"), "status: path none");
  CHECK(has("only plain locks, not released before their TTL"), "status says why");
}

/* Valkey 9.1 with its Lua engine: both paths (releases and extensions of
 * one key without scripts, the rest by scripts), no limits. */
static void case_valkey9_lua(void) {
  use_valkey9();
  rh_server_t *m = start_server(NULL);
  const char *label = label_of(m);
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", rh_server_uri(m));
  CHECK(r->status == 0, "can vote: exit %d", r->status);
  char header[96];
  snprintf(header, sizeof header, "VOTER %s: can vote\n", label);
  CHECK(has(header), "header line");
  EXPECT_CHECK(label, "path", "ok", "both: DELIFEQ, SET IFEQ; Lua scripts");
  EXPECT_CHECK(label, "scripts", "ok", NULL);
  EXPECT_CHECK(label, "evalsha", "ok", NULL);
  EXPECT_CHECK(label, "time-in-script", "ok", "fencing token");
  EXPECT_CHECK(label, "direct", "ok", "DELIFEQ");
  CHECK(!has("  limits  ") && !has("fenced-tx"), "no limits, no transactions");
  r = DOCTOR(NULL, "--json", "--clock-ms", "0", rh_server_uri(m));
  CHECK(r->status == 0 && json_valid(r->out), "--json: exit %d", r->status);
  CHECK(has("\"path\":\"both\",\"limited\":false"), "path in the JSON");
  r = REDLOCK("status", "--no-quarantine", "--node", rh_server_uri(m), "vk9-res");
  CHECK(r->status == 0 && status_row_has(label, "both"), "status shows the path: exit %d",
        r->status);
  CHECK(!has("no Lua engine"), "no limits said");
}

/* A sentinel voter: its master is asked of the sentinels in turn (the first
 * is down) with their password, then checked with the URI's credentials;
 * an unknown master name, and a sentinel given as a master, cannot vote. */
static void case_sentinel(void) {
  rh_server_t *m = start_server(&(rh_options_t){.password = PASSWORD});
  int port = start_sentinel(m, PASSWORD);
  char uri[256], expect[128];
  snprintf(uri, sizeof uri,
           "redis-sentinel://:" PASSWORD
           "@127.0.0.1:1,127.0.0.1:%d/mymaster?sentinel_password=" SENTINEL_PASSWORD,
           port);
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", uri);
  CHECK(r->status == 0, "the sentinels' master can vote: exit %d", r->status);
  snprintf(expect, sizeof expect, "127.0.0.1:%d names 127.0.0.1:%d as the master of 'mymaster'",
           port, rh_server_port(m));
  EXPECT_CHECK("mymaster@127.0.0.1:1", "sentinel", "ok", expect);
  EXPECT_CHECK("mymaster@127.0.0.1:1", "sentinel", "ok", "127.0.0.1:1: Connection refused");
  EXPECT_CHECK("mymaster@127.0.0.1:1", "auth", "ok", "default user");
  EXPECT_CHECK("mymaster@127.0.0.1:1", "role", "ok", "master");
  CHECK(!has(PASSWORD) && !has(SENTINEL_PASSWORD) && strstr(r->err, SENTINEL_PASSWORD) == NULL,
        "no password shown");
  r = DOCTOR(NULL, "--json", "--clock-ms", "0", uri);
  CHECK(r->status == 0 && json_valid(r->out) && has("\"kind\":\"sentinel\""), "--json");

  snprintf(uri, sizeof uri,
           "redis-sentinel://127.0.0.1:%d/nosuch?sentinel_password=" SENTINEL_PASSWORD, port);
  r = DOCTOR(NULL, "--clock-ms", "0", uri);
  CHECK(r->status == 1, "an unknown master name: exit %d", r->status);
  snprintf(expect, sizeof expect, "nosuch@127.0.0.1:%d", port);
  EXPECT_CHECK(expect, "sentinel", "FAIL", "does not know 'nosuch'");

  snprintf(uri, sizeof uri, "redis://:" SENTINEL_PASSWORD "@127.0.0.1:%d", port);
  r = DOCTOR(NULL, "--clock-ms", "0", uri);
  CHECK(r->status == 1, "a sentinel given as a master: exit %d", r->status);
  snprintf(expect, sizeof expect, "127.0.0.1:%d", port);
  EXPECT_CHECK(expect, "role", "FAIL", "a sentinel, not a master");
}

/* ---- cluster voters --------------------------------------------------------------------
 * Three primaries of cluster_harness, no replicas (a case stops one). */

#define CLUSTER_STATE_MS 30000 /* node timeout 2 s, then the failure report's majority */

typedef struct {
  rh_server_t *node;
  const char *state;
} state_wait_t;

/* The node says cluster_state:<state>. */
static int pred_cluster_state(void *arg) {
  state_wait_t *w = arg;
  char info[4096], want[64];
  snprintf(want, sizeof want, "cluster_state:%s", w->state);
  return rh_server_command(w->node, info, sizeof info, "CLUSTER INFO") == 0 &&
         strstr(info, want) != NULL;
}

/* "127.0.0.1:PORT" of node i. */
static const char *node_at(unsigned i) {
  static char buf[CH_MAX_NODES][32];
  snprintf(buf[i], sizeof buf[i], "127.0.0.1:%d", ch_port(g_cluster, i));
  return buf[i];
}

/* A FAIL line in voter label's block names `what`. */
static int fail_line_names(const char *label, const char *what) {
  char header[300];
  snprintf(header, sizeof header, "VOTER %s: ", label);
  const char *p = strstr(g_run.out, header);
  for (p = p ? strchr(p, '\n') : NULL; p != NULL && p[1] == ' '; p = strchr(p + 1, '\n')) {
    const char *end = strchr(p + 1, '\n');
    size_t len = end ? (size_t)(end - p - 1) : strlen(p + 1);
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)len, p + 1);
    if (strncmp(line, "  FAIL", 6) == 0 && strstr(line, what) != NULL)
      return 1;
  }
  return 0;
}

static size_t count_of(const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(g_run.out, needle); p != NULL; p = strstr(p + 1, needle))
    n++;
  return n;
}

/* A healthy cluster can vote (the map from the second seed, every primary's
 * checks, their keys gone); 100 slots unassigned, then a primary stopped:
 * it cannot, and the report says which slots and which primary. */
static void cluster_cases(const char *server_word) {
  CHECK(ch_start(&g_cluster, &(ch_options_t){.primaries = 3}) == 0, "the cluster starts");
  char uri[1024], want[256];
  /* a seed nobody listens on first: any one seed that answers is enough */
  snprintf(uri, sizeof uri, "redis-cluster://127.0.0.1:1,%s",
           ch_uri(g_cluster, 0) + strlen("redis-cluster://"));
  const char *label = "cluster@127.0.0.1:1";
  run_t *r = DOCTOR(NULL, "--clock-ms", "0", uri);
  CHECK(r->status == 0, "a healthy cluster can vote: exit %d", r->status);
  snprintf(want, sizeof want, "%s answered CLUSTER SHARDS: 3 primaries", node_at(0));
  EXPECT_CHECK(label, "slot-map", "ok", want);
  EXPECT_CHECK(label, "slot-map", "ok", "127.0.0.1:1: Connection refused");
  EXPECT_CHECK(label, "coverage", "ok", "all 16384 slots have a primary");
  EXPECT_CHECK(label, "cluster-state", "ok", "ok, as");
  snprintf(want, sizeof want, "%s ", server_word);
  for (unsigned i = 0; i < 3; i++) {
    const char *p = node_at(i);
    EXPECT_CHECK(label, "coverage", "ok", p);
    EXPECT_PRIMARY(label, p, "slots", "ok", " slots: ");
    EXPECT_PRIMARY(label, p, "connect", "ok", "over TCP");
    EXPECT_PRIMARY(label, p, "server", "ok", want);
    EXPECT_PRIMARY(label, p, "server", "ok", ", cluster");
    EXPECT_PRIMARY(label, p, "role", "ok", "master");
    EXPECT_PRIMARY(label, p, "topology", "ok", "cluster_enabled 1");
    EXPECT_PRIMARY(label, p, "acl", "ok", "may run all");
    EXPECT_PRIMARY(label, p, "scripts", "ok", NULL);
    EXPECT_PRIMARY(label, p, "evalsha", "ok", NULL);
    EXPECT_PRIMARY(label, p, "time-in-script", "ok", NULL);
    EXPECT_PRIMARY(label, p, "publish", "ok", NULL);
    EXPECT_PRIMARY(label, p, "subscribe", "ok", NULL);
    EXPECT_PRIMARY(label, p, "persistence", "ok", NULL);
    EXPECT_PRIMARY(label, p, "cluster-state", "ok", "ok, as it says");
    char n[64];
    CHECK(rh_server_command(ch_node(g_cluster, i), n, sizeof n, "DBSIZE") == 0 &&
              strcmp(n, "0") == 0,
          "the doctor's keys are gone from %s (DBSIZE %s)", p, n);
  }
  r = DOCTOR(NULL, "--json", "--clock-ms", "20", uri);
  CHECK(r->status == 0 && json_valid(r->out), "--json: exit %d, valid JSON", r->status);
  CHECK(has("\"kind\":\"cluster\"") && has("\"slots_covered\":16384") &&
            count_of("\"ranges\":") == 3 && count_of("\"role\":\"master\"") == 3,
        "--json: the coverage and the three primaries");

  /* A hash tag in the prefix puts every key in one slot: the primaries that
   * do not own it skip the checks that write a key, and the cluster can
   * still vote. */
  r = DOCTOR(NULL, "--clock-ms", "0", "--key-prefix", "{doctor-tag}:", uri);
  CHECK(r->status == 0, "a hash-tagged prefix: exit %d", r->status);
  CHECK(count_of("no doctor's key hashes to this primary's slots") == 2 &&
            count_of("the release script's PUBLISH on") == 1,
        "two primaries skip the key's checks, the tag's owner runs them");

  /* 100 slots without a primary: every node forgets them. */
  char buf[256];
  for (unsigned i = 0; i < 3; i++)
    CHECK(rh_server_command_slow(ch_node(g_cluster, i), buf, sizeof buf,
                                 "CLUSTER DELSLOTSRANGE 0 99") == 0 &&
              strcmp(buf, "OK") == 0,
          "DELSLOTSRANGE on node %u: %s", i, buf);
  state_wait_t w = {ch_node(g_cluster, 0), "fail"};
  CHECK(rh_wait_until(pred_cluster_state, &w, CLUSTER_STATE_MS), "cluster_state:fail");
  r = DOCTOR(NULL, "--clock-ms", "0", uri);
  CHECK(r->status == 1, "slots without a primary: exit %d", r->status);
  EXPECT_CHECK(label, "coverage", "FAIL", "100 of 16384 slots have no primary: 0-99:");
  EXPECT_CHECK(label, "cluster-state", "FAIL", "fail, as");

  /* Back to whole, then a primary stopped. */
  int owner = ch_owner(g_cluster, 0, 100);
  CHECK(owner >= 0 &&
            rh_server_command_slow(ch_node(g_cluster, (unsigned)owner), buf, sizeof buf,
                                   "CLUSTER ADDSLOTSRANGE 0 99") == 0 &&
            strcmp(buf, "OK") == 0,
        "ADDSLOTSRANGE: %s", buf);
  CHECK(ch_wait_ok(g_cluster, CLUSTER_STATE_MS), "cluster_state:ok again");
  const char *stopped = node_at(2);
  CHECK(rh_server_kill(ch_node(g_cluster, 2)) == 0, "stop a primary");
  /* Before the cluster marks it failed, its connection fails; after, its
   * slots have no primary: either way a FAIL line names it. */
  r = DOCTOR(NULL, "--clock-ms", "0", uri);
  CHECK(r->status == 1, "a primary stopped: exit %d", r->status);
  CHECK(fail_line_names(label, stopped), "a FAIL line names the stopped primary %s", stopped);
  CHECK(rh_wait_until(pred_cluster_state, &w, CLUSTER_STATE_MS), "cluster_state:fail");
  r = DOCTOR(NULL, "--clock-ms", "0", uri);
  CHECK(r->status == 1, "a primary marked failed: exit %d", r->status);
  snprintf(want, sizeof want, "the cluster marks failed: %s", stopped);
  EXPECT_CHECK(label, "coverage", "FAIL", want);
  /* With its shard's slots when CLUSTER SHARDS lists them (Redis 7.0,
   * Valkey), else the address alone (Redis 8.0 lists none). */
  char st[16], de[4096];
  CHECK(check_line(&g_run, label, "coverage", st, de, sizeof de), "the coverage line");
  const char *after = strstr(de, want) + strlen(want);
  CHECK(strncmp(after, " (slots ", 8) == 0 || strncmp(after, ": ", 2) == 0,
        "the failed primary, then its slots or the end of the list: %s", de);
  EXPECT_CHECK(label, "cluster-state", "FAIL", "fail, as");
}

/* The default server's name as its INFO says it: REDLOCK_TEST_SERVER may
 * name Valkey (test.sh's pass 2). */
static void case_cluster(void) {
  const char *server = getenv("REDLOCK_TEST_SERVER");
  cluster_cases(server != NULL && strstr(server, "valkey") != NULL ? "valkey" : "redis");
}

static void case_cluster_valkey(void) {
  use_valkey();
  cluster_cases("valkey");
}

/* Bad command lines: 64, nothing on stdout, a pointer to --help. */
static void case_usage(void) {
  struct {
    const char *env;
    const char *args[8];
  } bad[] = {
      {NULL, {"doctor"}},
      {NULL, {"doctor", "http://127.0.0.1:1"}},
      {NULL, {"doctor", "redis://127.0.0.1:99999"}},
      {NULL, {"doctor", "redis://127.0.0.1:1?wait=x"}},
      {NULL, {"doctor", "redis://127.0.0.1:1", "redis://127.0.0.1:1"}},
      {NULL, {"doctor", "--clock-ms", "abc", "redis://127.0.0.1:1"}},
      {NULL, {"doctor", "--clock-ms", "61000", "redis://127.0.0.1:1"}},
      {NULL, {"doctor", "--timeout", "0", "redis://127.0.0.1:1"}},
      {NULL, {"doctor", "redis://127.0.0.1:1", "--json"}},
      {NULL, {"doctor", "--frobnicate", "redis://127.0.0.1:1"}},
      {"not-a-uri", {"doctor"}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_t *r = run_argv(bad[i].env, bad[i].args);
    CHECK(r->status == 64, "bad command line #%zu -> 64, got %d", i, r->status);
    CHECK(r->out_len == 0, "nothing on stdout (#%zu)", i);
    CHECK(strstr(r->err, "--help") != NULL, "points at --help (#%zu)", i);
  }
  run_t *r = DOCTOR(NULL, "redis://user:s3cr3tpw@127.0.0.1:99999");
  CHECK(r->status == 64 && strstr(r->err, "s3cr3tpw") == NULL, "no password in messages");
  r = DOCTOR(NULL, "--help");
  CHECK(r->status == 0 && has("redlock doctor") && has("--clock-ms"), "doctor --help");
}

/* ---- status through sentinels ----------------------------------------------------------
 * `redlock status` resolves a sentinel voter as doctor does (cli_conn.c),
 * with three sentinels of the harness (sentinel_harness.h) watching a
 * master with one replica. */

#define SENT_NAME "mymaster"
#define SENT_PASSWORD "status-sentinel-pw-55"
#define FAILOVER_DEADLINE_MS                                                                       \
  60000 /* down-after 1 s, election, promotion; a failed election is tried                         \
         * again after 2 x failover-timeout */

typedef struct {
  rh_server_t *master, *replica;
} sent_pair_t;

static int replica_attached(void *arg) {
  sent_pair_t *p = arg;
  char info[4096];
  return rh_server_command(p->replica, info, sizeof info, "INFO replication") == 0 &&
         strstr(info, "master_link_status:up") != NULL &&
         rh_server_command(p->master, info, sizeof info, "INFO replication") == 0 &&
         strstr(info, "connected_slaves:1") != NULL;
}

/* Every sentinel knows the two others and the replica. */
static int sentinels_ready(void *arg) {
  (void)arg;
  for (int i = 0; i < N_SENTINELS; i++) {
    char others[32], replicas[32];
    if (sh_master_field(g_sentinels[i], SENT_NAME, "num-other-sentinels", others, sizeof others) !=
            0 ||
        sh_master_field(g_sentinels[i], SENT_NAME, "num-slaves", replicas, sizeof replicas) != 0 ||
        atoi(others) != N_SENTINELS - 1 || atoi(replicas) < 1)
      return 0;
  }
  return 1;
}

/* SENTINEL FAILOVER until a sentinel takes it (one that does not know the
 * replica well enough yet says NOGOODSLAVE). */
static int failover_taken(void *arg) {
  (void)arg;
  char buf[256];
  return sh_command(g_sentinels[0], buf, sizeof buf, "SENTINEL FAILOVER %s", SENT_NAME) == 0 &&
         strcmp(buf, "OK") == 0;
}

/* Every sentinel names the replica as the master, and it says it is one. */
static int switched_to_replica(void *arg) {
  sent_pair_t *p = arg;
  char want[64], got[128];
  snprintf(want, sizeof want, "127.0.0.1\n%d", rh_server_port(p->replica));
  for (int i = 0; i < N_SENTINELS; i++)
    if (sh_command(g_sentinels[i], got, sizeof got, "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                   SENT_NAME) != 0 ||
        strcmp(got, want) != 0)
      return 0;
  return rh_server_command(p->replica, got, sizeof got, "ROLE") == 0 &&
         strncmp(got, "master\n", 7) == 0;
}

/* The status table's line of the sentinel voter names `port` as the master
 * found, and it is up. */
static void expect_status_names(const char *label, int port) {
  char line[256];
  snprintf(line, sizeof line, "%s -> 127.0.0.1:%d ", label, port);
  const char *p = strstr(g_run.out, line);
  CHECK(p != NULL, "status names 127.0.0.1:%d as the master ('%s')", port, line);
  const char *eol = strchr(p, '\n');
  const char *up = strstr(p, "  up  ");
  CHECK(up != NULL && (eol == NULL || up < eol), "the master found is up");
  CHECK(strstr(g_run.out, "status-value-1") != NULL, "its value is shown");
}

static void case_status_sentinel(void) {
  rh_server_t *m = start_server(NULL);
  char port[16];
  snprintf(port, sizeof port, "%d", rh_server_port(m));
  rh_server_t *rep = start_server(
      &(rh_options_t){.extra_args = (const char *const[]){"--replicaof", "127.0.0.1", port, NULL}});
  sent_pair_t pair = {m, rep};
  CHECK(rh_wait_until(replica_attached, &pair, 10000), "the replica is attached");
  sh_options_t so = {.dir = g_tmpdir,
                     .master_name = SENT_NAME,
                     .master_port = rh_server_port(m),
                     .quorum = 2,
                     .down_after_ms = 1000,
                     .failover_timeout_ms = 5000,
                     .password = SENT_PASSWORD};
  for (int i = 0; i < N_SENTINELS; i++)
    CHECK(sh_start(&g_sentinels[i], &so) == 0, "sentinel %d starts", i);
  CHECK(rh_wait_until(sentinels_ready, NULL, 30000), "the sentinels know each other");
  char buf[64];
  CHECK(rh_server_command(m, buf, sizeof buf, "SET status-sentinel-res status-value-1") == 0,
        "SET on the master");

  /* The first sentinel listed is not there: the next ones are asked. */
  char uri[512];
  int used = snprintf(uri, sizeof uri, "redis-sentinel://127.0.0.1:1");
  for (int i = 0; i < N_SENTINELS; i++)
    used +=
        snprintf(uri + used, sizeof uri - (size_t)used, ",127.0.0.1:%d", sh_port(g_sentinels[i]));
  snprintf(uri + used, sizeof uri - (size_t)used,
           "/" SENT_NAME "?sentinel_password=" SENT_PASSWORD);
  const char *label = "mymaster@127.0.0.1:1";
  run_t *r = REDLOCK("status", "--node", uri, "status-sentinel-res");
  CHECK(r->status == 0, "status over the sentinels: exit %d", r->status);
  expect_status_names(label, rh_server_port(m));
  CHECK(!has(SENT_PASSWORD) && strstr(r->err, SENT_PASSWORD) == NULL, "no password shown");

  r = REDLOCK("status", "--json", "--node", uri, "status-sentinel-res");
  char want[128];
  snprintf(want, sizeof want, "\"resolved\":\"127.0.0.1:%d\",\"sentinel\":\"127.0.0.1:%d\"",
           rh_server_port(m), sh_port(g_sentinels[0]));
  CHECK(r->status == 0 && json_valid(r->out) && has("\"master_name\":\"" SENT_NAME "\"") &&
            has(want),
        "--json names the master (%s)", want);

  /* The sentinels' own password is what they check: a wrong one, and no
   * master is found, with each sentinel's answer and no password. */
  char bad[600];
  snprintf(bad, sizeof bad, "redis-sentinel://127.0.0.1:%d/" SENT_NAME "?sentinel_password=nope-77",
           sh_port(g_sentinels[0]));
  r = REDLOCK("status", "--node", bad, "status-sentinel-res");
  CHECK(r->status == 69, "no master found: exit %d", r->status);
  CHECK(has("no sentinel named the master of 'mymaster'") && has("AUTH") && !has("nope-77"),
        "says why, without the password");

  /* A failover: once the sentinels name the replica, so does status. */
  CHECK(rh_wait_until(failover_taken, NULL, FAILOVER_DEADLINE_MS), "SENTINEL FAILOVER taken");
  CHECK(rh_wait_until(switched_to_replica, &pair, FAILOVER_DEADLINE_MS),
        "the sentinels name the replica");
  r = REDLOCK("status", "--node", uri, "status-sentinel-res");
  CHECK(r->status == 0, "status after the failover: exit %d", r->status);
  expect_status_names(label, rh_server_port(rep));
}

/* ---- status on a cluster voter ----------------------------------------------------------
 * `redlock status` reads the slot map as doctor does (cli_cluster.c) and
 * asks the primary that owns the key's slot; which primary that is, is
 * asked of the cluster (CLUSTER KEYSLOT, then the slot's owner). */

#define STATUS_KEY "status-cluster-res"
#define STATUS_VALUE "status-cluster-value"

/* The status table's line of the cluster voter names node `owner` as the
 * primary asked, up, with STATUS_VALUE. */
static void expect_cluster_row(const char *label, unsigned owner) {
  char want[320];
  snprintf(want, sizeof want, "%s -> %s ", label, node_at(owner));
  const char *p = strstr(g_run.out, want);
  CHECK(p != NULL, "status names %s as the slot's primary ('%s')", node_at(owner), want);
  const char *eol = strchr(p, '\n');
  const char *up = strstr(p, "  up  "), *value = strstr(p, STATUS_VALUE);
  CHECK(up != NULL && (eol == NULL || up < eol), "the primary is up");
  CHECK(value != NULL && (eol == NULL || value < eol), "its value is shown");
}

static void case_status_cluster(void) {
  CHECK(ch_start(&g_cluster, &(ch_options_t){.primaries = 3}) == 0, "the cluster starts");
  char buf[256];
  CHECK(rh_server_command(ch_node(g_cluster, 0), buf, sizeof buf, "CLUSTER KEYSLOT " STATUS_KEY) ==
            0,
        "CLUSTER KEYSLOT");
  int slot = atoi(buf);
  int owner = ch_owner(g_cluster, 0, slot);
  CHECK(owner >= 0, "slot %d has a primary", slot);
  CHECK(rh_server_command(ch_node(g_cluster, (unsigned)owner), buf, sizeof buf,
                          "SET " STATUS_KEY " " STATUS_VALUE " PX 120000") == 0 &&
            strcmp(buf, "OK") == 0,
        "SET on the slot's primary: %s", buf);

  /* The first seed is not there: the next one gives the map. */
  char uri[1024];
  snprintf(uri, sizeof uri, "redis-cluster://127.0.0.1:1,%s",
           ch_uri(g_cluster, 0) + strlen("redis-cluster://"));
  const char *label = "cluster@127.0.0.1:1";
  run_t *r = REDLOCK("status", "--node", uri, STATUS_KEY);
  CHECK(r->status == 0, "status on the cluster voter: exit %d", r->status);
  char want[256];
  snprintf(want, sizeof want, "key " STATUS_KEY " (hash slot %d), 1 masters, quorum 1", slot);
  CHECK(has(want), "the header names the slot: '%s'", want);
  expect_cluster_row(label, (unsigned)owner);
  CHECK(has("locked: held by " STATUS_VALUE " on 1 of 1 masters"), "the verdict");

  r = REDLOCK("status", "--json", "--node", uri, STATUS_KEY);
  snprintf(want, sizeof want, "\"slot\":%d,\"resolved\":\"%s\",\"seed\":\"%s\"", slot,
           node_at((unsigned)owner), node_at(0));
  CHECK(r->status == 0 && json_valid(r->out) && has(want) && has("\"status\":\"locked\""),
        "--json names the slot, the primary and the seed (%s)", want);

  /* The slot (and its key) migrates to another primary: status follows. */
  unsigned to = ((unsigned)owner + 1) % 3;
  CHECK(ch_migrate_slot(g_cluster, slot, (unsigned)owner, to) == 0, "slot %d migrates", slot);
  r = REDLOCK("status", "--node", uri, STATUS_KEY);
  CHECK(r->status == 0, "status after the migration: exit %d", r->status);
  expect_cluster_row(label, to);

  /* Mid-migration: the slot migrates on to a third primary and its key has
   * already gone there, so its owner in the map answers -ASK: status asks
   * the importing primary (after ASKING) and shows the lock there. */
  unsigned next = (to + 1) % 3;
  CHECK(rh_server_command_slow(ch_node(g_cluster, next), buf, sizeof buf,
                               "CLUSTER SETSLOT %d IMPORTING %s", slot,
                               ch_id(g_cluster, to)) == 0 &&
            strcmp(buf, "OK") == 0,
        "SETSLOT IMPORTING: %s", buf);
  CHECK(rh_server_command_slow(ch_node(g_cluster, to), buf, sizeof buf,
                               "CLUSTER SETSLOT %d MIGRATING %s", slot,
                               ch_id(g_cluster, next)) == 0 &&
            strcmp(buf, "OK") == 0,
        "SETSLOT MIGRATING: %s", buf);
  CHECK(rh_server_command(ch_node(g_cluster, to), buf, sizeof buf,
                          "MIGRATE 127.0.0.1 %d " STATUS_KEY " 0 5000",
                          ch_port(g_cluster, next)) == 0 &&
            strcmp(buf, "OK") == 0,
        "MIGRATE: %s", buf);
  r = REDLOCK("status", "--node", uri, STATUS_KEY);
  CHECK(r->status == 0, "status mid-migration: exit %d", r->status);
  expect_cluster_row(label, next);
  CHECK(has("locked: held by " STATUS_VALUE " on 1 of 1 masters"), "the verdict mid-migration");
  for (unsigned i = 0; i < 3; i++)
    CHECK(rh_server_command_slow(ch_node(g_cluster, i), buf, sizeof buf,
                                 "CLUSTER SETSLOT %d NODE %s", slot, ch_id(g_cluster, next)) == 0 &&
              strcmp(buf, "OK") == 0,
          "SETSLOT NODE on node %u: %s", i, buf);

  /* No seed answers: the voter is down, with each seed's reason. */
  r = REDLOCK("status", "--node", "redis-cluster://127.0.0.1:1", STATUS_KEY);
  CHECK(r->status == 69, "no seed: exit %d", r->status);
  CHECK(has("down (no seed gave the slot map: 127.0.0.1:1: "), "says why");

  /* The slot has no primary any more: no vote for this key. */
  for (unsigned i = 0; i < 3; i++)
    CHECK(rh_server_command(ch_node(g_cluster, i), buf, sizeof buf, "CLUSTER DELSLOTS %d", slot) ==
                  0 &&
              strcmp(buf, "OK") == 0,
          "DELSLOTS on node %u: %s", i, buf);
  r = REDLOCK("status", "--node", uri, STATUS_KEY);
  snprintf(want, sizeof want, "slot %d has no primary", slot);
  CHECK(r->status == 69 && has(want), "no primary for the slot: exit %d", r->status);
}

/* The quarantine line of voter label says when its vote counts: "counts
 * in N s, at HH:MM:SS", N at most max_s, HH:MM:SS the local time then
 * (within a few seconds: the run took some). */
static void expect_counts_at(const char *label, unsigned max_s) {
  char st[16], de[4096];
  CHECK(check_line(&g_run, label, "quarantine", st, de, sizeof de), "no quarantine line");
  const char *p = strstr(de, "counts in ");
  unsigned secs = 0;
  int hh = -1, mm = -1, ss = -1;
  CHECK(p != NULL && sscanf(p, "counts in %u s, at %2d:%2d:%2d", &secs, &hh, &mm, &ss) == 4,
        "no \"counts in N s, at HH:MM:SS\": '%s'", de);
  CHECK(secs > 0 && secs <= max_s, "counts in %u s (at most %u)", secs, max_s);
  time_t at = time(NULL) + (time_t)secs;
  struct tm tm;
  CHECK(localtime_r(&at, &tm) != NULL, "localtime_r");
  long want = tm.tm_hour * 3600L + tm.tm_min * 60L + tm.tm_sec;
  long got = hh * 3600L + mm * 60L + ss;
  long diff = (want - got + 86400L) % 86400L;
  CHECK(diff <= 10 || diff >= 86400L - 10, "at %02d:%02d:%02d, expected about %02d:%02d:%02d", hh,
        mm, ss, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Masters the library keeps in a quarantine: doctor says which one and
 * when it ends, that the voter can vote only then, and exits 2; status says
 * the same.  A master just started is in its restart quarantine (a max TTL
 * of 600 s: it lasts the whole case on any machine); a replica promoted
 * (REPLICAOF NO ONE: master_replid2 set) in its failover quarantine. */
static void case_quarantine(void) {
  rh_server_t *m = start_server(&(rh_options_t){
      .extra_args = (const char *const[]){"--repl-diskless-sync-delay", "0", NULL}});
  const char *label = label_of(m);
  run_t *r = DOCTOR_Q(NULL, "--clock-ms", "0", "--max-ttl", "600000", rh_server_uri(m));
  CHECK(r->status == 2, "quarantined: exit %d", r->status);
  char header[128];
  snprintf(header, sizeof header,
           "VOTER %s: can vote once its quarantine ends (restart quarantine: ", label);
  CHECK(has(header) && has(" s left)\n"), "the header names the quarantine and its end");
  CHECK(!has(": can vote\n"), "not \"can vote\" now");
  EXPECT_CHECK(label, "quarantine", "warn", "restart quarantine: ");
  expect_counts_at(label, 600);
  CHECK(has("1 of them only once its quarantine ends (0 vote now)"), "the summary");
  r = DOCTOR_Q(NULL, "--json", "--clock-ms", "0", "--max-ttl", "600000", rh_server_uri(m));
  CHECK(r->status == 2 && json_valid(r->out), "--json: exit %d", r->status);
  CHECK(has("\"can_vote\":true,\"can_vote_now\":false,\"quarantine\":\"restart quarantine: ") &&
            has("\"all_can_vote_now\":false"),
        "the JSON names the quarantine");
  r = DOCTOR(NULL, "--clock-ms", "0", rh_server_uri(m));
  CHECK(r->status == 0, "--no-quarantine: exit %d", r->status);
  snprintf(header, sizeof header, "VOTER %s: can vote\n", label);
  CHECK(has(header), "--no-quarantine: can vote");
  EXPECT_CHECK(label, "quarantine", "skip", "--no-quarantine");

  r = REDLOCK("status", "--max-ttl", "600000", "--node", rh_server_uri(m), "q-res");
  char line[160];
  snprintf(line, sizeof line, "%s: quarantined (restart quarantine: ", label);
  CHECK(r->status == 0 && has(line) && has("0 of 1 masters vote now"), "status: exit %d",
        r->status);

  /* A promoted replica: its failover quarantine. */
  char port[16];
  snprintf(port, sizeof port, "%d", rh_server_port(m));
  rh_server_t *rep = start_server(
      &(rh_options_t){.extra_args = (const char *const[]){"--replicaof", "127.0.0.1", port, NULL}});
  CHECK(rh_wait_replica_linked(m, rep, DEADLINE_MS), "the replica linked");
  char reply[64];
  CHECK(rh_server_command(rep, reply, sizeof reply, "REPLICAOF NO ONE") == 0 &&
            strcmp(reply, "OK") == 0,
        "REPLICAOF NO ONE: %s", reply);
  const char *rlabel = label_of(rep);
  r = DOCTOR_Q(NULL, "--clock-ms", "0", "--max-ttl", "600000", rh_server_uri(rep));
  CHECK(r->status == 2, "promoted: exit %d", r->status);
  EXPECT_CHECK(rlabel, "quarantine", "warn", "failover quarantine: ");
  r = REDLOCK("status", "--max-ttl", "600000", "--node", rh_server_uri(rep), "q-res");
  snprintf(line, sizeof line, "%s: quarantined (failover quarantine: ", rlabel);
  CHECK(r->status == 0 && has(line), "status names the failover quarantine: exit %d", r->status);
}

static const cli_case_t CASES[] = {
    {"doctor_quarantine", case_quarantine},
    {"doctor_healthy", case_healthy},
    {"doctor_acl", case_acl},
    {"doctor_waitaof_old", case_waitaof_old},
    {"doctor_replica", case_replica},
    {"doctor_nolua", case_nolua},
    {"doctor_valkey9_nolua", case_valkey9_nolua},
    {"doctor_valkey9_lua", case_valkey9_lua},
    {"doctor_wait", case_wait},
    {"doctor_valkey_waitaof", case_valkey_waitaof},
    {"doctor_sentinel", case_sentinel},
    {"doctor_cluster", case_cluster},
    {"doctor_cluster_valkey", case_cluster_valkey},
    {"doctor_usage", case_usage},
    {"status_sentinel", case_status_sentinel},
    {"status_cluster", case_status_cluster},
};

int main(int argc, char **argv) {
  return cli_cases_main(argc, argv, CASES, sizeof CASES / sizeof CASES[0], "redlock-doctor-test",
                        cleanup, &g_redlock, &g_case, g_tmpdir, sizeof g_tmpdir);
}
