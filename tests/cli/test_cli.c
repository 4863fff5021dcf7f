/* test_cli.c: black-box tests of the `redlock` command (tools/main.c and tools/cli_*.c)
 * against real redis-server processes started by the harness.
 *
 *   test_cli PATH-TO-redlock CASE      runs one case (ctest: one test each)
 *   test_cli --helper MODE ...         the COMMAND the tests hand to redlock
 *
 * The driver runs the built `redlock` binary with fork + exec, its stdin and
 * stdout on pipes and its stderr in a file, and the command it runs is this
 * same program in helper mode: it reports its environment (fence token,
 * resource, value) and the signals it gets on stdout, and holds the lock until
 * the driver closes its stdin.  Nothing waits by sleeping: every wait polls an
 * observable condition (output, exit, keys on the masters) with a deadline
 * (rh_wait_until, poll()).  Deadlines are generous: other tests load the
 * machine.  Every redlock run uses --no-quarantine, because the masters are
 * fresh (no lock can have been held on them before).
 *
 * Exit statuses checked (docs/cli.md): COMMAND's own, 128+N, 64 usage,
 * 69 no quorum, 71 lost, 75 busy (or -E), 124 --max-hold, 126, 127.  A redlock built with
 * sanitizers fails a case if it reports anything on stderr (leaks included). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_cases.h"
#include "cluster_harness.h"
#include "fixture.h"
#include "redlock.h" /* REDLOCK_*_PREFIX: the names the CLI uses on the masters */
#include "test_io.h"

#define N_MASTERS 3
#define DEADLINE_MS 30000 /* for things that should take well under a second */
#define MAX_PROCS 128
#define MAX_ARGS 48

/* Options every run gets: fresh masters (no quarantine), and timeouts that
 * tolerate a loaded machine. */
#define RUN "run", "--no-quarantine", "--request-timeout", "500", "--connect-timeout", "3000"
#define ELECT "elect", "--no-quarantine", "--request-timeout", "500", "--connect-timeout", "3000"

static const char *g_redlock; /* the binary under test */
static char g_self[PATH_MAX]; /* this program, as COMMAND */
static const char *g_case = "?";
static fx_t g_fx;                     /* the masters (fx_servers_start) */
static ch_cluster_t *g_cluster;       /* the cluster cases' (cluster_harness, stopped by PID) */
static char g_nodes[N_MASTERS * 600]; /* REDLOCK_NODES for the masters */
static char g_tmpdir[PATH_MAX];

/* ================================================================================
 * helper mode: the COMMAND run under the lock
 * ================================================================================ */

static int g_stubborn;

static void put_str(const char *s) { (void)tio_write_all(1, s, strlen(s)); }

static void on_signal(int sig) {
  /* async-signal-safe: write(2) only */
  char buf[32] = "signal ";
  int i = 7;
  if (sig >= 10)
    buf[i++] = (char)('0' + sig / 10);
  buf[i++] = (char)('0' + sig % 10);
  buf[i++] = '\n';
  buf[i] = '\0';
  put_str(buf);
  if (!g_stubborn) {
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

static void print_env(const char *tag, const char *fence_var) {
  const char *fence = getenv(fence_var);
  const char *value = getenv("REDLOCK_VALUE");
  const char *resource = getenv("REDLOCK_RESOURCE");
  const char *term = getenv("REDLOCK_TERM"); /* redlock elect */
  char line[2048];
  snprintf(line, sizeof line, "%s fence=%s value=%s resource=%s%s%s\n", tag,
           fence ? fence : "(unset)", value ? value : "(unset)", resource ? resource : "(unset)",
           term ? " term=" : "", term ? term : "");
  put_str(line);
}

/* Number of open descriptors >= 3 that are sockets. */
static int count_sockets(void) {
  int n = 0;
  for (int fd = 3; fd < 1024; fd++) {
    char path[64], target[256];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(path, target, sizeof target - 1);
    if (len <= 0)
      continue;
    target[len] = '\0';
    n += strncmp(target, "socket:", 7) == 0;
  }
  return n;
}

/* --helper print [VAR] | environ | exit N | killself N | hold [stubborn] | sockets */
static int helper_main(int argc, char **argv) {
  if (argc < 3)
    return 100;
  const char *mode = argv[2];
  if (strcmp(mode, "environ") == 0) { /* the whole environment, one "environ NAME=VALUE" each */
    for (char **e = environ; *e != NULL; e++) {
      put_str("environ ");
      put_str(*e);
      put_str("\n");
    }
    return 0;
  }
  if (strcmp(mode, "sockets") == 0) {
    char line[64];
    snprintf(line, sizeof line, "sockets=%d\n", count_sockets());
    put_str(line);
    return 0;
  }
  if (strcmp(mode, "print") == 0) {
    print_env("env", argc > 3 ? argv[3] : "REDLOCK_FENCE");
    return 0;
  }
  if (strcmp(mode, "exit") == 0 && argc > 3)
    return atoi(argv[3]);
  if (strcmp(mode, "killself") == 0 && argc > 3) {
    int sig = atoi(argv[3]);
    signal(sig, SIG_DFL);
    raise(sig);
    return 101;
  }
  if (strcmp(mode, "hold") == 0) {
    g_stubborn = argc > 3 && strcmp(argv[3], "stubborn") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    print_env("ready", "REDLOCK_FENCE");
    char buf[256];
    for (;;) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n > 0 || (n < 0 && errno == EINTR))
        continue;
      break; /* EOF: the driver released us (or died) */
    }
    put_str("eof\n");
    return 0;
  }
  return 100;
}

/* ================================================================================
 * processes
 * ================================================================================ */

typedef struct {
  pid_t pid;
  int in_fd;  /* its stdin (write end), or -1 */
  int out_fd; /* its stdout (read end, non-blocking) */
  char out[16384];
  size_t out_len;
  int out_eof;
  char err_path[PATH_MAX + 32];
  int exited;
  int wstatus;
  uint64_t started_ms, exited_ms;
} proc_t;

static proc_t *g_procs[MAX_PROCS];

static void cleanup(void) {
  for (int i = 0; i < MAX_PROCS; i++) {
    proc_t *p = g_procs[i];
    if (p == NULL)
      continue;
    if (!p->exited && p->pid > 0) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, NULL, 0);
    }
    if (p->in_fd >= 0)
      close(p->in_fd);
    if (p->out_fd >= 0)
      close(p->out_fd);
    unlink(p->err_path);
    free(p);
    g_procs[i] = NULL;
  }
  if (g_fx.n > 0)
    fx_servers_stop(&g_fx); /* resumes first: never leaves a master stopped */
  ch_stop(g_cluster);
  g_cluster = NULL;
  if (g_tmpdir[0] != '\0') {
    rmdir(g_tmpdir);
    g_tmpdir[0] = '\0';
  }
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (buf == NULL) {
    fclose(f);
    return NULL;
  }
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len < 2) {
      char *p = realloc(buf, cap * 2);
      if (p == NULL)
        break;
      buf = p;
      cap *= 2;
    }
  }
  buf[len] = '\0';
  fclose(f);
  return buf;
}

static void dump_proc(const proc_t *p) {
  char *err = read_file(p->err_path);
  fprintf(stderr, "  --- pid %ld: stdout ---\n%.*s\n  --- stderr ---\n%s\n  ---\n", (long)p->pid,
          (int)p->out_len, p->out, err ? err : "(none)");
  free(err);
}

static proc_t *g_last; /* dumped on failure */

__attribute__((noreturn, format(printf, 4, 5))) static void
fail_at(const char *file, int line, const char *cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL [%s] %s:%d: check failed: %s -- ", g_case, file, line, cond);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  if (g_last != NULL)
    dump_proc(g_last);
  cleanup();
  exit(1);
}

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      fail_at(__FILE__, __LINE__, #cond, __VA_ARGS__);                                             \
  } while (0)

/* Starts `redlock ARGS...`.  nodes: REDLOCK_NODES for it (NULL: unset).
 * keep_stdin: keep a pipe to its stdin (the hold helper waits for EOF). */
static proc_t *start_argv(const char *nodes, int keep_stdin, const char *const *args) {
  proc_t *p = calloc(1, sizeof *p);
  CHECK(p != NULL, "out of memory");
  int slot = -1;
  for (int i = 0; i < MAX_PROCS; i++)
    if (g_procs[i] == NULL) {
      slot = i;
      break;
    }
  CHECK(slot >= 0, "too many processes");
  g_procs[slot] = p;
  p->in_fd = p->out_fd = -1;
  snprintf(p->err_path, sizeof p->err_path, "%s/stderr-%d", g_tmpdir, slot);

  const char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = g_redlock;
  for (int i = 0; args[i] != NULL && argc < MAX_ARGS; i++)
    argv[argc++] = args[i];
  argv[argc] = NULL;

  int in_pipe[2], out_pipe[2];
  /* O_CLOEXEC: no other child may hold these, or EOF would never come. */
  CHECK(pipe2(in_pipe, O_CLOEXEC) == 0 && pipe2(out_pipe, O_CLOEXEC) == 0, "pipe: %s",
        strerror(errno));
  int err_fd = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CHECK(err_fd >= 0, "open %s: %s", p->err_path, strerror(errno));
  fflush(NULL);
  p->started_ms = rh_now_ms();
  pid_t pid = fork();
  CHECK(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    /* A crashed driver leaks no redlock (its COMMAND then reads EOF). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_fd, 2);
    if (nodes != NULL)
      setenv("REDLOCK_NODES", nodes, 1);
    else
      unsetenv("REDLOCK_NODES");
    unsetenv("REDLOCK_FENCE");
    /* Whatever the driver inherited (a background job ignores SIGINT),
     * redlock starts with the default dispositions. */
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    execv(g_redlock, (char *const *)argv);
    _exit(99);
  }
  p->pid = pid;
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_fd);
  p->out_fd = out_pipe[0];
  fcntl(p->out_fd, F_SETFL, fcntl(p->out_fd, F_GETFL) | O_NONBLOCK);
  if (keep_stdin) {
    p->in_fd = in_pipe[1];
  } else {
    close(in_pipe[1]);
  }
  g_last = p;
  return p;
}

#define START(nodes, keep, ...)                                                                    \
  start_argv((nodes), (keep), (const char *const[]){__VA_ARGS__, NULL})

static void pump(proc_t *p) {
  while (!p->out_eof && p->out_len < sizeof p->out - 1) {
    ssize_t n = read(p->out_fd, p->out + p->out_len, sizeof p->out - 1 - p->out_len);
    if (n > 0) {
      p->out_len += (size_t)n;
      p->out[p->out_len] = '\0';
    } else if (n == 0) {
      p->out_eof = 1;
    } else {
      break; /* EAGAIN */
    }
  }
}

static int pred_exited(void *arg) {
  proc_t *p = arg;
  pump(p);
  if (p->exited)
    return 1;
  pid_t r = waitpid(p->pid, &p->wstatus, WNOHANG);
  if (r == p->pid) {
    p->exited = 1;
    p->exited_ms = rh_now_ms();
    pump(p);
    return 1;
  }
  return 0;
}

static void check_no_sanitizer_report(proc_t *p) {
  char *err = read_file(p->err_path);
  if (err != NULL) {
    g_last = p;
    CHECK(strstr(err, "Sanitizer") == NULL && strstr(err, "runtime error") == NULL,
          "sanitizer report from redlock");
  }
  free(err);
}

/* Waits for the exit and returns the exit status (128+N for signal N). */
static int wait_exit(proc_t *p, int timeout_ms) {
  g_last = p;
  CHECK(rh_wait_until(pred_exited, p, timeout_ms), "redlock (pid %ld) still running after %d ms",
        (long)p->pid, timeout_ms);
  check_no_sanitizer_report(p);
  if (WIFEXITED(p->wstatus))
    return WEXITSTATUS(p->wstatus);
  if (WIFSIGNALED(p->wstatus))
    return 128 + WTERMSIG(p->wstatus);
  return -1;
}

/* Runs redlock to completion; returns its exit status. */
#define RUN_TO_END(p) wait_exit((p), DEADLINE_MS)

typedef struct {
  proc_t *p;
  const char *needle;
} wait_out_t;

static int pred_output(void *arg) {
  wait_out_t *w = arg;
  pump(w->p);
  return strstr(w->p->out, w->needle) != NULL || (w->p->out_eof && w->p->exited);
}

/* Waits until its stdout contains needle. */
static void wait_output(proc_t *p, const char *needle, int timeout_ms) {
  wait_out_t w = {p, needle};
  g_last = p;
  int ok = rh_wait_until(pred_output, &w, timeout_ms);
  CHECK(ok && strstr(p->out, needle) != NULL, "no '%s' on stdout after %d ms", needle, timeout_ms);
}

static int pred_eof(void *arg) {
  proc_t *p = arg;
  pump(p);
  return p->out_eof;
}

/* Waits until nothing holds its stdout any more (it and its COMMAND are gone). */
static void wait_eof(proc_t *p, int timeout_ms) {
  g_last = p;
  CHECK(rh_wait_until(pred_eof, p, timeout_ms), "stdout still open after %d ms", timeout_ms);
}

typedef struct {
  proc_t *p;
  const char *needle;
} wait_err_t;

static int pred_stderr(void *arg) {
  wait_err_t *w = arg;
  char *err = read_file(w->p->err_path);
  int found = err != NULL && strstr(err, w->needle) != NULL;
  free(err);
  return found;
}

static void wait_stderr(proc_t *p, const char *needle, int timeout_ms) {
  wait_err_t w = {p, needle};
  g_last = p;
  CHECK(rh_wait_until(pred_stderr, &w, timeout_ms), "no '%s' on stderr after %d ms", needle,
        timeout_ms);
}

static int stderr_contains(proc_t *p, const char *needle) {
  wait_err_t w = {p, needle};
  return pred_stderr(&w);
}

static void close_stdin(proc_t *p) {
  if (p->in_fd >= 0) {
    close(p->in_fd);
    p->in_fd = -1;
  }
}

/* "key=VALUE" from a helper line "TAG fence=.. value=.. resource=.." that
 * starts with tag.  out gets "" when absent. */
static void field(const proc_t *p, const char *tag, const char *key, char *out, size_t size) {
  out[0] = '\0';
  const char *line = p->out;
  size_t tlen = strlen(tag);
  while (line != NULL && *line) {
    if (strncmp(line, tag, tlen) == 0 && line[tlen] == ' ') {
      char pat[64];
      snprintf(pat, sizeof pat, " %s=", key);
      const char *end = strchr(line, '\n');
      const char *f = strstr(line, pat);
      if (f != NULL && (end == NULL || f < end)) {
        fx_copy_span(out, size, f + strlen(pat), " \n");
      }
      return;
    }
    line = strchr(line, '\n');
    if (line != NULL)
      line++;
  }
}

static uint64_t field_u64(const proc_t *p, const char *tag, const char *key) {
  char buf[64];
  field(p, tag, key, buf, sizeof buf);
  if (!isdigit((unsigned char)buf[0]))
    return 0;
  return strtoull(buf, NULL, 10);
}

/* ================================================================================
 * masters
 * ================================================================================ */

static void start_masters_with(const rh_options_t *opts) {
  CHECK(fx_servers_start(&g_fx, N_MASTERS, opts) == 0, "cannot start %d redis-servers", N_MASTERS);
  fx_node_list(&g_fx, g_nodes, sizeof g_nodes);
}

static void start_masters(void) { start_masters_with(NULL); }

/* How many masters hold key with this value ("(nil)" for none). */
static int count_value(const char *key, const char *value) {
  return (int)fx_count_value(&g_fx, N_MASTERS, key, value);
}

static void wait_key_gone(const char *key) {
  CHECK(fx_wait_nil_everywhere(&g_fx, key, DEADLINE_MS), "key '%s' still present on a master", key);
}

/* Starts `redlock run RESOURCE -- helper hold` and waits until it holds. */
static proc_t *start_holder(const char *const *extra, const char *resource, int stubborn) {
  const char *args[MAX_ARGS];
  int n = 0;
  const char *base[] = {RUN};
  for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
    args[n++] = base[i];
  for (int i = 0; extra != NULL && extra[i] != NULL; i++)
    args[n++] = extra[i];
  args[n++] = resource;
  args[n++] = "--";
  args[n++] = g_self;
  args[n++] = "--helper";
  args[n++] = "hold";
  if (stubborn)
    args[n++] = "stubborn";
  args[n] = NULL;
  proc_t *p = start_argv(g_nodes, 1, args);
  wait_output(p, "ready ", DEADLINE_MS);
  return p;
}

/* ================================================================================
 * cases
 * ================================================================================ */

/* run returns COMMAND's exit status; 128+N for a signal; 126/127. */
static void case_exit_status(void) {
  start_masters();
  static const char *const codes[] = {"0", "3", "42", "255"};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    proc_t *p = START(g_nodes, 0, RUN, "exit-res", "--", g_self, "--helper", "exit", codes[i]);
    CHECK(RUN_TO_END(p) == atoi(codes[i]), "exit %s", codes[i]);
    wait_key_gone("exit-res");
  }
  char sig[16];
  snprintf(sig, sizeof sig, "%d", SIGUSR1);
  proc_t *p = START(g_nodes, 0, RUN, "exit-res", "--", g_self, "--helper", "killself", sig);
  CHECK(RUN_TO_END(p) == 128 + SIGUSR1, "killed by SIGUSR1 -> 128+%d", SIGUSR1);
  wait_key_gone("exit-res");

  p = START(g_nodes, 0, RUN, "exit-res", "--", "redlock-test-no-such-command-xyz");
  CHECK(RUN_TO_END(p) == 127, "command not found -> 127");
  CHECK(stderr_contains(p, "cannot run"), "message");
  wait_key_gone("exit-res");

  /* Found but not executable (a directory). */
  p = START(g_nodes, 0, RUN, "exit-res", "--", g_tmpdir);
  CHECK(RUN_TO_END(p) == 126, "not executable -> 126");
  wait_key_gone("exit-res");

  /* redlock's own connections to the masters are not passed on. */
  p = START(g_nodes, 0, RUN, "exit-res", "--", g_self, "--helper", "sockets");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "sockets=0\n") != NULL,
        "no socket descriptors in COMMAND: %s", p->out);

  /* Without --: COMMAND right after RESOURCE. */
  p = START(g_nodes, 0, RUN, "exit-res", g_self, "--helper", "exit", "5");
  CHECK(RUN_TO_END(p) == 5, "without --");
}

/* The fence token is in the environment and grows from one run to the next. */
/* Valkey 9.1 with its Lua engine unloaded (REDLOCK_TEST_VALKEY9; skipped
 * without, exit 77): `redlock run` takes a fenced lock (transactions),
 * keeps it past its TTL (the watch's SET IFEQ) and releases it (DELIFEQ),
 * leaving no lock key; a read-write hold (-x) needs Lua: exit 69, with each
 * master's vote. */
static void case_run_nolua(void) {
  const char *valkey = rh_valkey9_executable(); /* tests/cli/CMakeLists.txt */
  if (valkey == NULL) {
    printf("skipped [%s]: no Valkey 9.1 server (REDLOCK_TEST_VALKEY9)\n", g_case);
    cleanup();
    exit(77);
  }
  setenv("REDLOCK_TEST_SERVER", valkey, 1);
  start_masters_with(&(rh_options_t){.no_lua = 1});
  /* A 1 s TTL, held for 2.5 s: kept by the watch. */
  proc_t *a = START(g_nodes, 0, RUN, "--ttl", "1s", "nolua-res", "--", "sh", "-c",
                    "echo fence=$REDLOCK_FENCE; sleep 2.5");
  CHECK(RUN_TO_END(a) == 0, "run without Lua, past its TTL");
  CHECK(!stderr_contains(a, "lost"), "the lock was kept");
  wait_key_gone("nolua-res");
  proc_t *b = START(g_nodes, 0, RUN, "nolua-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(b) == 0, "a second run");
  CHECK(field_u64(b, "env", "fence") > 0, "REDLOCK_FENCE set");
  wait_key_gone("nolua-res");
  proc_t *c = START(g_nodes, 0, RUN, "-x", "nolua-rw", "--", "true");
  CHECK(RUN_TO_END(c) == 69, "a write hold needs Lua: exit 69");
  CHECK(stderr_contains(c, "unsupported (no Lua engine"), "the votes say why");
}

static void case_fence(void) {
  start_masters();
  proc_t *a = START(g_nodes, 0, RUN, "fence-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(a) == 0, "first run");
  uint64_t f1 = field_u64(a, "env", "fence");
  char value[128], resource[128];
  field(a, "env", "value", value, sizeof value);
  field(a, "env", "resource", resource, sizeof resource);
  CHECK(f1 > 0, "REDLOCK_FENCE set");
  /* The default owner label is "%h:%p": the run's host name and pid. */
  const char *colon = strrchr(value, ':');
  CHECK(strspn(value, "0123456789abcdef") == 32 && value[32] == '~' && colon != NULL &&
            colon > value + 33 && strtol(colon + 1, NULL, 10) > 0,
        "REDLOCK_VALUE is 32 hex characters, '~' and host:pid: '%s'", value);
  CHECK(strcmp(resource, "fence-res") == 0, "REDLOCK_RESOURCE: '%s'", resource);

  proc_t *b = START(g_nodes, 0, RUN, "fence-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(b) == 0, "second run");
  uint64_t f2 = field_u64(b, "env", "fence");
  char value2[128];
  field(b, "env", "value", value2, sizeof value2);
  CHECK(f2 > f1, "fence grows: %" PRIu64 " then %" PRIu64, f1, f2);
  CHECK(strcmp(value, value2) != 0, "a new value per acquisition");

  /* The counter on the masters is at least the token (the write-back). */
  int at_least = 0;
  for (int i = 0; i < N_MASTERS; i++) {
    char buf[64];
    if (rh_server_command(g_fx.servers[i], buf, sizeof buf,
                          "GET " REDLOCK_FENCE_KEY_PREFIX "{fence-res}") == 0 &&
        strtoull(buf, NULL, 10) >= f2)
      at_least++;
  }
  CHECK(at_least >= N_MASTERS / 2 + 1, "fence counter >= token on a quorum (%d)", at_least);

  /* --fence-env NAME. */
  proc_t *c = START(g_nodes, 0, RUN, "--fence-env", "MY_TOKEN", "fence-res", "--", g_self,
                    "--helper", "print", "MY_TOKEN");
  CHECK(RUN_TO_END(c) == 0, "--fence-env run");
  uint64_t f3 = field_u64(c, "env", "fence");
  CHECK(f3 > f2, "MY_TOKEN set and larger: %" PRIu64, f3);
}

/* Held while COMMAND runs (others get the busy status), released after. */
static void case_busy(void) {
  start_masters();
  proc_t *h = start_holder(NULL, "busy-res", 0);
  char value[128];
  field(h, "ready", "value", value, sizeof value);
  CHECK(count_value("busy-res", value) >= N_MASTERS / 2 + 1, "key holds our value on a quorum");

  proc_t *b = START(g_nodes, 0, RUN, "--wait", "0", "busy-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(b) == 75, "busy -> 75");
  CHECK(b->out_len == 0, "COMMAND did not run");
  CHECK(stderr_contains(b, "locked by another holder"), "message says why");

  proc_t *e = START(g_nodes, 0, RUN, "-E", "9", "busy-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(e) == 9, "--conflict-exit-code 9");
  CHECK(e->out_len == 0, "COMMAND did not run");

  proc_t *q = START(g_nodes, 0, RUN, "--quiet", "busy-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(q) == 75, "quiet busy -> 75");
  char *err = read_file(q->err_path);
  CHECK(err != NULL && err[0] == '\0', "--quiet prints nothing: '%s'", err ? err : "");
  free(err);

  /* Still held, then released when COMMAND exits. */
  CHECK(count_value("busy-res", value) >= N_MASTERS / 2 + 1, "still held");
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder exits with COMMAND's status");
  CHECK(strstr(h->out, "eof") != NULL, "COMMAND ran to its end");
  wait_key_gone("busy-res");

  proc_t *again = START(g_nodes, 0, RUN, "busy-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(again) == 0, "free again");
}

/* --wait waits for the holder's release; a wait that runs out is "busy". */
static void case_wait(void) {
  start_masters();
  proc_t *h = start_holder(NULL, "wait-res", 0);
  uint64_t f_holder = field_u64(h, "ready", "fence");
  proc_t *w =
      START(g_nodes, 0, RUN, "-v", "--wait", "60", "wait-res", "--", g_self, "--helper", "print");
  wait_stderr(w, "waiting up to 60000 ms", DEADLINE_MS);
  CHECK(!pred_exited(w) && w->out_len == 0, "the waiter waits");
  uint64_t released = rh_now_ms();
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  CHECK(RUN_TO_END(w) == 0, "waiter got the lock after the release");
  CHECK(w->exited_ms >= released, "not before the release");
  uint64_t f_waiter = field_u64(w, "env", "fence");
  CHECK(f_waiter > f_holder, "waiter's fence %" PRIu64 " > holder's %" PRIu64, f_waiter, f_holder);

  /* A wait that runs out. */
  proc_t *h2 = start_holder(NULL, "wait-res", 0);
  proc_t *t =
      START(g_nodes, 0, RUN, "--wait", "0.7", "wait-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(t) == 75, "wait ran out -> 75");
  CHECK(t->exited_ms - t->started_ms >= 700, "waited the whole budget (%" PRIu64 " ms)",
        t->exited_ms - t->started_ms);
  CHECK(t->out_len == 0, "COMMAND did not run");
  close_stdin(h2);
  CHECK(RUN_TO_END(h2) == 0, "second holder done");
  wait_key_gone("wait-res");
}

/* Masters down: no quorum. */
static void case_noquorum(void) {
  start_masters();
  CHECK(rh_server_kill(g_fx.servers[0]) == 0 && rh_server_kill(g_fx.servers[1]) == 0,
        "kill 2 masters");
  proc_t *p = START(g_nodes, 0, RUN, "nq-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 69, "2 of 3 down -> 69");
  CHECK(p->out_len == 0, "COMMAND did not run");
  CHECK(stderr_contains(p, "too few Redis masters"), "message says why");
  CHECK(stderr_contains(p, ": down ("), "per-master diagnosis");

  p = START(g_nodes, 0, RUN, "--wait", "0.6", "nq-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 69, "2 of 3 down, with --wait -> 69 (not busy)");
  CHECK(p->out_len == 0, "COMMAND did not run");
  /* The cron idiom's -E 0 is for a busy lock only: an outage still fails. */
  p = START(g_nodes, 0, RUN, "-E", "0", "-w", "0.6", "nq-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 69, "2 of 3 down, -E 0 --wait -> 69, not 0");
  CHECK(p->out_len == 0 && stderr_contains(p, "too few Redis masters"), "not run, and why");

  CHECK(rh_server_kill(g_fx.servers[2]) == 0, "kill the last master");
  p = START(g_nodes, 0, RUN, "nq-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 69, "all down -> 69");

  /* Fresh masters with the quarantine on (the default): no quorum either. */
  for (int i = 0; i < N_MASTERS; i++)
    CHECK(rh_server_restart(g_fx.servers[i]) == 0, "restart");
  p = START(g_nodes, 0, "run", "--request-timeout", "500", "nq-res", "--", g_self, "--helper",
            "print");
  CHECK(RUN_TO_END(p) == 69, "quarantined masters -> 69");
  CHECK(stderr_contains(p, "restart quarantine") && stderr_contains(p, "--no-quarantine"),
        "hint at the quarantine");
  /* Each master named with the quarantine the client kept it in, and its
   * end (the default max TTL: 60 s, so whole seconds are left). */
  for (int i = 0; i < N_MASTERS; i++) {
    char line[128];
    snprintf(line, sizeof line,
             "127.0.0.1:%d: quarantined (restart quarantine: ", rh_server_port(g_fx.servers[i]));
    CHECK(stderr_contains(p, line), "master %d's diagnosis names its quarantine", i);
  }
  CHECK(stderr_contains(p, " s left)"), "and when it ends");
  /* status says the same of each master, and that none votes now. */
  proc_t *s = START(g_nodes, 0, "status", "nq-res");
  CHECK(RUN_TO_END(s) == 0, "status -> 0 (every master answered)");
  for (int i = 0; i < N_MASTERS; i++) {
    char line[128];
    snprintf(line, sizeof line,
             "127.0.0.1:%d: quarantined (restart quarantine: ", rh_server_port(g_fx.servers[i]));
    CHECK(strstr(s->out, line) != NULL, "status names master %d's quarantine", i);
  }
  CHECK(strstr(s->out, " s left)") != NULL && strstr(s->out, "0 of 3 masters vote now") != NULL,
        "status: its end, and no vote now");
  s = START(g_nodes, 0, "status", "--json", "nq-res");
  CHECK(RUN_TO_END(s) == 0 && strstr(s->out, "\"quarantine\":\"restart quarantine: ") != NULL,
        "status --json: the quarantine");
  s = START(g_nodes, 0, "status", "--no-quarantine", "nq-res");
  CHECK(RUN_TO_END(s) == 0 && strstr(s->out, "quarantined") == NULL,
        "status --no-quarantine: none");
  p = START(g_nodes, 0, RUN, "nq-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 0, "--no-quarantine -> 0");
}

/* Bad command lines: 64, and COMMAND never runs. */
static void case_usage(void) {
  const char *nodes = "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3";
  char many[64 * 40] = "";
  for (int i = 0; i < 65; i++) {
    char one[40];
    snprintf(one, sizeof one, "%sredis://127.0.0.1:%d", i ? "," : "", 1000 + i);
    strcat(many, one);
  }
  struct {
    const char *env;
    const char *args[12];
  } bad[] = {
      {nodes, {NULL}},
      {nodes, {"frobnicate"}},
      {nodes, {"run"}},
      {nodes, {"run", "r"}},
      {nodes, {"run", "r", "--"}},
      {nodes, {"run", "--ttl", "abc", "r", "--", g_self}},
      {nodes, {"run", "--ttl", "0", "r", "--", g_self}},
      {nodes, {"run", "--ttl", "70000", "--max-ttl", "60s", "r", "--", g_self}},
      {nodes, {"run", "--wait", "1.5x", "r", "--", g_self}},
      {nodes, {"run", "-w", ".", "r", "--", g_self}},
      {nodes, {"run", "--wait", "1.", "r", "--", g_self}},
      {nodes, {"run", "-s", "-x", "r", "--", g_self}},
      {nodes, {"run", "r", "-c"}},
      {nodes, {"run", "r", "-c", ""}},
      {nodes, {"run", "r", "-c", "true", "extra"}},
      {nodes, {"run", "-c", "true", "r", "--", g_self}},
      {nodes, {"elect", "-n", "r", "--", g_self}},
      {nodes, {"status", "-n", "x", "r"}},
      {nodes, {"run", "--ttl", "2m", "--max-ttl", "90s", "r", "--", g_self}},
      {nodes, {"run", "--wait", "-1", "r", "--", g_self}},
      {nodes, {"run", "--wait", "5x", "r", "--", g_self}},
      {nodes, {"run", "--frobnicate", "r", "--", g_self}},
      {nodes, {"run", "-Z", "r", "--", g_self}},
      {nodes, {"run", "--ttl"}},
      {nodes, {"run", "-E", "256", "r", "--", g_self}},
      {nodes, {"run", "--fence-env", "A=B", "r", "--", g_self}},
      {nodes, {"run", "--fence-env", "", "r", "--", g_self}},
      {nodes, {"run", "--fence-env", "REDLOCK_VALUE", "r", "--", g_self}},
      {nodes, {"run", "r", "--ttl", "5", g_self}},
      {nodes, {"run", "", "--", g_self}},
      {NULL, {"run", "r", "--", g_self}},
      {"", {"run", "r", "--", g_self}},
      {"http://127.0.0.1:1", {"run", "r", "--", g_self}},
      {many, {"run", "r", "--", g_self}},
      {NULL,
       {"run", "--node", "redis://127.0.0.1:1", "--node", "redis://127.0.0.1:1", "r", "--",
        g_self}},
      /* Without TLS the URI is refused; with it, a certificate without a key. */
      {NULL,
       {"run", "--node", "rediss://127.0.0.1:1", "--tls-cert", "/nonexistent", "r", "--", g_self}},
      {nodes, {"status"}},
      {nodes, {"status", "a", "b"}},
      {nodes, {"status", "--timeout", "0", "a"}},
      {NULL, {"status", "a"}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    proc_t *p = start_argv(bad[i].env, 0, bad[i].args);
    int rc = RUN_TO_END(p);
    CHECK(rc == 64, "bad command line #%zu (%s %s ...) -> 64, got %d", i,
          bad[i].args[0] ? bad[i].args[0] : "",
          bad[i].args[0] && bad[i].args[1] ? bad[i].args[1] : "", rc);
    CHECK(p->out_len == 0, "nothing on stdout, COMMAND did not run (#%zu)", i);
    CHECK(stderr_contains(p, "--help"), "points at --help (#%zu)", i);
  }
  /* The password never appears in a message about a bad URI. */
  proc_t *p = START("redis://user:s3cr3tpw@127.0.0.1:99999", 0, "run", "r", "--", g_self);
  CHECK(RUN_TO_END(p) == 64, "bad port");
  CHECK(!stderr_contains(p, "s3cr3tpw"), "no password in messages");

  p = START(NULL, 0, "--help");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "Usage: redlock run") != NULL, "--help");
  p = START(NULL, 0, "run", "--help");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "--wait") != NULL, "run --help");
  /* Each subcommand's --help lists its own options and points to the man
   * page (which the packages install). */
  CHECK(strstr(p->out, "--nonblock") != NULL && strstr(p->out, "--clock-ms") == NULL &&
            strstr(p->out, "--json") == NULL && strstr(p->out, "man redlock") != NULL &&
            strstr(p->out, "docs/cli.md") == NULL,
        "run --help: run's options only");
  p = START(NULL, 0, "help", "run");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "--nonblock") != NULL, "help run");
  p = START(NULL, 0, "help", "frobnicate");
  CHECK(RUN_TO_END(p) == 64, "help of an unknown command");
  p = START(NULL, 0, "--help");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "--nonblock") == NULL &&
            strstr(p->out, "redlock run --help") == NULL &&
            strstr(p->out, "'redlock SUBCOMMAND --help'") != NULL,
        "--help: the subcommands, not every option");
  p = START(NULL, 0, "status", "--help");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "Usage: redlock status") != NULL &&
            strstr(p->out, "--wait") == NULL && strstr(p->out, "--json") != NULL,
        "status --help: status's options only");
  p = START(NULL, 0, "doctor", "--help");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "--clock-ms") != NULL &&
            strstr(p->out, "--wait") == NULL,
        "doctor --help");
  p = START(NULL, 0, "elect", "--help");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "Usage: redlock elect") != NULL &&
            strstr(p->out, "--nonblock") == NULL && strstr(p->out, "--ttl") != NULL &&
            strstr(p->out, "with --observe: stop after DURATION") != NULL,
        "elect --help: elect's options (--wait only with --observe)");
  p = START(NULL, 0, "--version");
  CHECK(RUN_TO_END(p) == 0 && strncmp(p->out, "redlock 0.", 10) == 0, "--version: '%s'", p->out);
}

/* flock(1)'s options: -E 0 (busy exits 0, COMMAND not run), -n, -w in
 * seconds with fractions, durations with units, -c through sh -c, and -s /
 * -x on the read-write lock of the name. */
static void case_flock(void) {
  start_masters();
  proc_t *h = start_holder(NULL, "fl-res", 0);

  proc_t *p = START(g_nodes, 0, RUN, "-E", "0", "fl-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 0, "busy with -E 0 -> 0");
  CHECK(p->out_len == 0, "COMMAND did not run");
  CHECK(!stderr_contains(p, "cannot keep"), "no internal error");
  p = START(g_nodes, 0, RUN, "-E", "9", "fl-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 9 && p->out_len == 0, "busy with -E 9 -> 9");
  p = START(g_nodes, 0, RUN, "-n", "fl-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 75 && p->out_len == 0, "-n: one try, busy -> 75");
  p = START(g_nodes, 0, RUN, "--nonblock", "-E", "0", "fl-res", "-c", "echo ran");
  CHECK(RUN_TO_END(p) == 0 && p->out_len == 0, "--nonblock -E 0 with -c: 0, not run");

  /* -w takes seconds (flock), fractions allowed; units everywhere. */
  p = START(g_nodes, 0, RUN, "-w", "0.8", "fl-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 75 && p->out_len == 0, "-w 0.8: ran out -> 75");
  CHECK(p->exited_ms - p->started_ms >= 800, "-w 0.8 waited 800 ms (%" PRIu64 " ms)",
        p->exited_ms - p->started_ms);
  p = START(g_nodes, 0, RUN, "--wait", "500ms", "fl-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 75, "--wait 500ms -> 75");
  CHECK(p->exited_ms - p->started_ms >= 500, "--wait 500ms waited");
  p = START(g_nodes, 0, RUN, "-w", "1.5s", "-E", "0", "fl-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 0 && p->out_len == 0, "-w 1.5s -E 0 -> 0, not run");
  CHECK(p->exited_ms - p->started_ms >= 1500, "-w 1.5s waited 1500 ms");
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  wait_key_gone("fl-res");

  /* -c: through sh -c, with the lock's environment; both of flock's orders. */
  p = START(g_nodes, 0, RUN, "--ttl", "1.5s", "fl-res", "-c",
            "echo \"shell $REDLOCK_RESOURCE\" | tr a-z A-Z; exit 3");
  CHECK(RUN_TO_END(p) == 3, "-c: the shell's status");
  CHECK(strstr(p->out, "SHELL FL-RES") != NULL, "-c ran through sh: '%s'", p->out);
  p = START(g_nodes, 0, RUN, "-c", "test -n \"$REDLOCK_FENCE\" && echo fenced", "fl-res");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "fenced") != NULL, "-c before RESOURCE");

  /* -s: any number of readers at once; -x: excludes them and is excluded. */
  const char *shared[] = {"-s", NULL};
  const char *exclusive[] = {"-x", NULL};
  proc_t *r1 = start_holder(shared, "rw-res", 0);
  proc_t *r2 = start_holder(shared, "rw-res", 0);
  p = START(g_nodes, 0, RUN, "-x", "rw-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 75 && p->out_len == 0, "-x while read-held -> 75");
  p = START(g_nodes, 0, RUN, "rw-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "without -s/-x: the plain lock, another key");
  close_stdin(r1);
  close_stdin(r2);
  CHECK(RUN_TO_END(r1) == 0 && RUN_TO_END(r2) == 0, "readers done");
  proc_t *w = start_holder(exclusive, "rw-res", 0);
  p = START(g_nodes, 0, RUN, "--shared", "rw-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 75 && p->out_len == 0, "-s while write-held -> 75");
  p = START(g_nodes, 0, RUN, "--exclusive", "-E", "0", "rw-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 0 && p->out_len == 0, "-x while write-held, -E 0 -> 0");
  uint64_t f_writer = field_u64(w, "ready", "fence");
  close_stdin(w);
  CHECK(RUN_TO_END(w) == 0, "writer done");
  p = START(g_nodes, 0, RUN, "-s", "-w", "10", "rw-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 0, "-s once the writer left");
  CHECK(field_u64(p, "env", "fence") >= f_writer, "a read hold's fence: the write epoch");
}

/* Finds the first line of path that starts with prefix (after leading
 * spaces) and contains needle; copies it into out.  0 when found. */
static int find_line(const char *path, const char *prefix, const char *needle, char *out,
                     size_t size) {
  char *text = read_file(path);
  CHECK(text != NULL, "cannot read %s", path);
  int found = -1;
  for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    line += strspn(line, " ");
    if (strncmp(line, prefix, strlen(prefix)) == 0 && strstr(line, needle) != NULL) {
      snprintf(out, size, "%s", line);
      found = 0;
      break;
    }
  }
  free(text);
  return found;
}

/* The cron example of docs/cli.md (and the man page's, the same line) runs
 * as written: busy -> 0 without running COMMAND, free -> COMMAND runs.  The
 * masters are fresh, so --no-quarantine goes after "run"; COMMAND (after
 * "--") is the helper. */
static void case_cron_doc(void) {
  char line[1024], man[1024];
  CHECK(find_line(REDLOCK_SOURCE_DIR "/docs/cli.md", "redlock run", "-E 0", line, sizeof line) == 0,
        "no 'redlock run ... -E 0' line in docs/cli.md");
  CHECK(find_line(REDLOCK_SOURCE_DIR "/docs/redlock.1", "redlock run", "\\-E 0", man, sizeof man) ==
            0,
        "no cron line in docs/redlock.1");
  /* The man page escapes '-' as "\-". */
  char unescaped[1024];
  size_t j = 0;
  for (size_t i = 0; man[i] != '\0' && j + 1 < sizeof unescaped; i++)
    if (!(man[i] == '\\' && man[i + 1] == '-'))
      unescaped[j++] = man[i];
  unescaped[j] = '\0';
  CHECK(strcmp(line, unescaped) == 0, "man page's cron line '%s' differs from cli.md's '%s'",
        unescaped, line);

  const char *args[MAX_ARGS];
  int n = 0, dashes = 0;
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", line);
  for (char *w = strtok(copy, " "); w != NULL && n < MAX_ARGS - 8; w = strtok(NULL, " ")) {
    if (n == 0 && strcmp(w, "redlock") == 0)
      continue; /* start_argv puts the binary first */
    if (dashes)
      continue; /* COMMAND: replaced by the helper */
    args[n++] = w;
    if (strcmp(w, "run") == 0)
      args[n++] = "--no-quarantine";
    if (strcmp(w, "--") == 0)
      dashes = 1;
  }
  CHECK(dashes && n >= 4, "cron line '%s' has RESOURCE -- COMMAND", line);
  const char *resource = args[n - 2];
  args[n++] = g_self;
  args[n++] = "--helper";
  args[n++] = "print";
  args[n] = NULL;

  start_masters();
  proc_t *p = start_argv(g_nodes, 0, args);
  CHECK(RUN_TO_END(p) == 0, "cron line, lock free -> 0: '%s'", line);
  CHECK(strstr(p->out, "env fence=") != NULL, "COMMAND ran");
  wait_key_gone(resource);

  proc_t *h = start_holder(NULL, resource, 0);
  p = start_argv(g_nodes, 0, args);
  CHECK(RUN_TO_END(p) == 0, "cron line, lock busy -> 0");
  CHECK(p->out_len == 0, "COMMAND did not run");
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");

  /* Unreachable masters still give 69. */
  for (int i = 0; i < N_MASTERS; i++)
    CHECK(rh_server_kill(g_fx.servers[i]) == 0, "kill");
  p = start_argv(g_nodes, 0, args);
  CHECK(RUN_TO_END(p) == 69 && p->out_len == 0, "cron line, masters down -> 69");
}

/* A long --wait says every 5 s that it is still waiting, when stderr is a
 * terminal (a pty here); nothing when it is not. */
typedef struct {
  int fd;
  char buf[16384];
  size_t len;
  const char *needle;
} pty_read_t;

static int pred_pty(void *arg) {
  pty_read_t *r = arg;
  for (;;) {
    if (r->len >= sizeof r->buf - 1)
      break;
    ssize_t n = read(r->fd, r->buf + r->len, sizeof r->buf - 1 - r->len);
    if (n <= 0)
      break; /* EAGAIN, or EIO once every slave end is closed */
    r->len += (size_t)n;
    r->buf[r->len] = '\0';
  }
  return strstr(r->buf, r->needle) != NULL;
}

static void case_progress(void) {
  start_masters();
  proc_t *h = start_holder(NULL, "pg-res", 0);

  /* Not a terminal: no progress line, however long the wait. */
  proc_t *quiet = START(g_nodes, 0, RUN, "-w", "6", "pg-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(quiet) == 75, "wait ran out -> 75");
  CHECK(quiet->exited_ms - quiet->started_ms >= 6000, "waited 6 s");
  CHECK(!stderr_contains(quiet, "waiting for"), "no progress line when stderr is a file");

  int master = -1;
  fflush(NULL);
  pid_t pid = forkpty(&master, NULL, NULL, NULL);
  CHECK(pid >= 0, "forkpty: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setenv("REDLOCK_NODES", g_nodes, 1);
    execl(g_redlock, g_redlock, RUN, "-w", "60", "pg-res", "--", g_self, "--helper", "print",
          (char *)NULL);
    _exit(99);
  }
  fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
  pty_read_t r = {.fd = master, .needle = "waiting for 'pg-res': held by another, "};
  int seen = rh_wait_until(pred_pty, &r, DEADLINE_MS);
  if (!seen) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  CHECK(seen, "no progress line on the terminal: '%s'", r.buf);
  CHECK(strstr(r.buf, " of 60 s") != NULL, "the line says the budget: '%s'", r.buf);
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  r.needle = "env fence=";
  CHECK(rh_wait_until(pred_pty, &r, DEADLINE_MS), "the waiter ran COMMAND: '%s'", r.buf);
  int wstatus = 0;
  CHECK(waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
        "the waiter exits 0");
  close(master);

  /* Masters down: the line says so, and the wait ends with 69, not busy. */
  CHECK(rh_server_kill(g_fx.servers[0]) == 0 && rh_server_kill(g_fx.servers[1]) == 0,
        "kill 2 masters");
  fflush(NULL);
  pid = forkpty(&master, NULL, NULL, NULL);
  CHECK(pid >= 0, "forkpty: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setenv("REDLOCK_NODES", g_nodes, 1);
    execl(g_redlock, g_redlock, RUN, "-E", "0", "-w", "6", "pg-res", "--", g_self, "--helper",
          "print", (char *)NULL);
    _exit(99);
  }
  fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
  pty_read_t r2 = {.fd = master, .needle = "waiting for 'pg-res': too few masters answer, "};
  seen = rh_wait_until(pred_pty, &r2, DEADLINE_MS);
  CHECK(waitpid(pid, &wstatus, 0) == pid, "waitpid");
  close(master);
  CHECK(seen, "no 'too few masters' progress line: '%s'", r2.buf);
  CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 69, "no quorum after the wait -> 69");
  CHECK(strstr(r2.buf, "env fence=") == NULL, "COMMAND did not run");
}

/* Lost lock: COMMAND gets SIGTERM (then SIGKILL), redlock exits 71. */
static void pause_all(void) { CHECK(fx_pause(&g_fx, FX_EVERY_MASTER, 1) == 0, "pause"); }

static void resume_all(void) { CHECK(fx_pause(&g_fx, FX_EVERY_MASTER, 0) == 0, "resume"); }

static void case_lost(void) {
  start_masters();
  char term[32];
  snprintf(term, sizeof term, "signal %d\n", SIGTERM);

  /* COMMAND that stops on SIGTERM. */
  const char *const opts[] = {"--ttl", "1500", "--grace", "20000", NULL};
  proc_t *p = start_holder(opts, "lost-res", 0);
  pause_all();
  int rc = wait_exit(p, 60000);
  resume_all();
  CHECK(rc == 71, "lost -> 71, got %d", rc);
  CHECK(strstr(p->out, term) != NULL, "COMMAND got SIGTERM");
  CHECK(strstr(p->out, "eof") == NULL, "COMMAND did not run to its end");
  CHECK(stderr_contains(p, "lost"), "message says the lock was lost");

  /* COMMAND that ignores SIGTERM: SIGKILL after --grace. */
  const char *const opts2[] = {"--ttl", "1500", "--grace", "300", NULL};
  p = start_holder(opts2, "lost-res2", 1);
  pause_all();
  rc = wait_exit(p, 60000);
  resume_all();
  CHECK(rc == 71, "lost (stubborn COMMAND) -> 71, got %d", rc);
  CHECK(strstr(p->out, term) != NULL, "COMMAND got SIGTERM");
  CHECK(stderr_contains(p, "SIGKILL"), "then SIGKILL");
  wait_eof(p, DEADLINE_MS); /* COMMAND is dead: nothing holds its stdout any more */

  /* --process-group: a COMMAND's children get the signal too. */
  char script[PATH_MAX + 64];
  snprintf(script, sizeof script, "\"$0\" --helper hold; echo after");
  p = START(g_nodes, 1, RUN, "--process-group", "--ttl", "1500", "lost-res3", "--", "/bin/sh", "-c",
            script, g_self);
  wait_output(p, "ready ", DEADLINE_MS);
  pause_all();
  rc = wait_exit(p, 60000);
  resume_all();
  CHECK(rc == 71, "lost (process group) -> 71, got %d", rc);
  CHECK(strstr(p->out, term) != NULL, "the grandchild got SIGTERM");
  CHECK(strstr(p->out, "after") == NULL, "the shell was stopped too");
}

/* --max-hold: at the bound the lock is released (a waiting run gets it),
 * COMMAND gets SIGTERM and redlock exits 124; a COMMAND that ends before the
 * bound keeps its own status; a bound of 0 is a usage error. */
static void case_max_hold(void) {
  start_masters();
  char term[32];
  snprintf(term, sizeof term, "signal %d\n", SIGTERM);
  const char *const opts[] = {"--ttl", "1000", "--max-hold", "2500", "--grace", "20000", NULL};
  uint64_t t0 = rh_now_ms();
  proc_t *p = start_holder(opts, "mh-res", 0);
  proc_t *w = START(g_nodes, 0, RUN, "-w", "60", "mh-res", "--", g_self, "--helper", "exit", "0");
  int rc = wait_exit(p, 60000);
  CHECK(rh_now_ms() - t0 >= 2500, "not before the bound");
  CHECK(rc == 124, "--max-hold -> 124, got %d", rc);
  CHECK(strstr(p->out, term) != NULL, "COMMAND got SIGTERM");
  CHECK(strstr(p->out, "eof") == NULL, "COMMAND did not run to its end");
  CHECK(stderr_contains(p, "--max-hold"), "message names the bound");
  CHECK(RUN_TO_END(w) == 0, "the waiting run got the lock");
  wait_key_gone("mh-res");

  p = START(g_nodes, 0, RUN, "--max-hold", "30s", "mh-res2", "--", g_self, "--helper", "exit", "3");
  CHECK(RUN_TO_END(p) == 3, "COMMAND done before the bound: its status");
  wait_key_gone("mh-res2");
  p = START(g_nodes, 0, RUN, "--max-hold", "0", "mh-res3", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 64, "--max-hold 0 -> 64");
}

/* SIGTERM/SIGINT/SIGHUP sent to redlock reach COMMAND; the lock is released. */
static void case_signals(void) {
  start_masters();
  const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    proc_t *p = start_holder(NULL, "sig-res", 0);
    CHECK(kill(p->pid, sigs[i]) == 0, "kill");
    char line[32];
    snprintf(line, sizeof line, "signal %d\n", sigs[i]);
    wait_output(p, line, DEADLINE_MS);
    int rc = RUN_TO_END(p);
    CHECK(rc == 128 + sigs[i], "redlock exits with COMMAND's 128+%d, got %d", sigs[i], rc);
    wait_key_gone("sig-res");
  }

  /* A signal while waiting for the lock: give up at once, COMMAND never runs. */
  proc_t *h = start_holder(NULL, "sig-res", 0);
  proc_t *w =
      START(g_nodes, 0, RUN, "-v", "--wait", "120", "sig-res", "--", g_self, "--helper", "print");
  wait_stderr(w, "waiting up to", DEADLINE_MS);
  CHECK(kill(w->pid, SIGTERM) == 0, "kill waiter");
  CHECK(RUN_TO_END(w) == 128 + SIGTERM, "waiter exits 128+SIGTERM");
  CHECK(w->out_len == 0, "COMMAND did not run");
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  wait_key_gone("sig-res");
}

/* status: the holder's value, PTTL and fence; down masters; no quorum. */
static void case_status(void) {
  start_masters();
  const char *const opts[] = {"--key-prefix", "app:", "--ttl", "20000", NULL};
  proc_t *h = start_holder(opts, "st-res", 0);
  char value[128];
  field(h, "ready", "value", value, sizeof value);
  uint64_t fence = field_u64(h, "ready", "fence");

  proc_t *s = START(g_nodes, 0, "status", "--key-prefix", "app:", "st-res");
  CHECK(RUN_TO_END(s) == 0, "status -> 0");
  CHECK(strstr(s->out, "key app:st-res") != NULL, "names the key");
  CHECK(strstr(s->out, "locked: held by ") != NULL && strstr(s->out, value) != NULL,
        "shows the holder");
  /* Each master line holding our value: PTTL in (0, ttl], fence >= token. */
  int lines = 0;
  for (const char *l = s->out; (l = strstr(l, value)) != NULL; l += strlen(value)) {
    const char *eol = strchr(l, '\n');
    if (eol == NULL || strncmp(l - strlen("held by "), "held by ", 8) == 0)
      continue;
    long long pttl = 0;
    unsigned long long f = 0;
    CHECK(sscanf(l + strlen(value), " %lld %llu", &pttl, &f) == 2, "parse '%.*s'", (int)(eol - l),
          l);
    CHECK(pttl > 0 && pttl <= 20000, "PTTL %lld", pttl);
    CHECK(f >= fence, "fence counter %llu >= token %" PRIu64, f, fence);
    lines++;
  }
  CHECK(lines >= N_MASTERS / 2 + 1, "value on a quorum of lines (%d)", lines);

  /* Without the prefix: another key, free. */
  s = START(g_nodes, 0, "status", "st-res");
  CHECK(RUN_TO_END(s) == 0 && strstr(s->out, "free:") != NULL, "other key is free");

  /* --node instead of REDLOCK_NODES. */
  s = START(NULL, 0, "status", "--node", rh_server_uri(g_fx.servers[0]), "--node",
            rh_server_uri(g_fx.servers[1]), "--node", rh_server_uri(g_fx.servers[2]), "-p",
            "app:", "st-res");
  CHECK(RUN_TO_END(s) == 0 && strstr(s->out, value) != NULL, "--node");

  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  wait_key_gone("app:st-res");
  s = START(g_nodes, 0, "status", "-p", "app:", "st-res");
  CHECK(RUN_TO_END(s) == 0 && strstr(s->out, "free:") != NULL, "free after release");
  CHECK(strstr(s->out, value) == NULL, "value gone");

  /* Masters down. */
  CHECK(rh_server_kill(g_fx.servers[0]) == 0, "kill");
  s = START(g_nodes, 0, "status", "--timeout", "2000", "st-res");
  CHECK(RUN_TO_END(s) == 0, "one down: still a quorum -> 0");
  char label[64];
  snprintf(label, sizeof label, "127.0.0.1:%d", rh_server_port(g_fx.servers[0]));
  const char *line = strstr(s->out, label);
  CHECK(line != NULL && strncmp(strchr(line, ' ') + strspn(strchr(line, ' '), " "), "down", 4) == 0,
        "the dead master is shown down");
  CHECK(rh_server_kill(g_fx.servers[1]) == 0, "kill");
  s = START(g_nodes, 0, "status", "--timeout", "2000", "st-res");
  CHECK(RUN_TO_END(s) == 69, "two down -> 69");
}

/* --owner: the label in the holder's value; status's view (the table's
 * "view:" line, status --json's "inspect"); revoke: the fence it prints is
 * above the holder's token, the revoked run exits 71, the next holder's
 * token is above the fence; usage errors; revoke without a quorum: 69. */
static void case_owner(void) {
  start_masters();
  const char *const opts[] = {"--owner", "worker-9@%h", "--ttl", "3000", NULL};
  proc_t *h = start_holder(opts, "own-res", 0);
  char value[160];
  field(h, "ready", "value", value, sizeof value);
  CHECK(strspn(value, "0123456789abcdef") == 32 && strncmp(value + 32, "~worker-9@", 10) == 0,
        "the value carries the label: '%s'", value);
  uint64_t token = field_u64(h, "ready", "fence");

  proc_t *s = START(g_nodes, 0, "status", "own-res");
  CHECK(RUN_TO_END(s) == 0, "status -> 0");
  CHECK(strstr(s->out, "view: held by a quorum, every master that answered agrees; owner "
                       "worker-9@") != NULL,
        "status shows the owner: %s", s->out);
  CHECK(strstr(s->out, "; fence ") != NULL && strstr(s->out, " ms; fence ") != NULL,
        "and the TTL range and fence");
  s = START(g_nodes, 0, "status", "--json", "own-res");
  CHECK(RUN_TO_END(s) == 0, "status --json -> 0");
  CHECK(strstr(s->out, "\"inspect\":{\"name\":\"own-res\",\"kind\":\"lock\",\"held\":true,"
                       "\"agreed\":true") != NULL &&
            strstr(s->out, "\"owner\":\"worker-9@") != NULL,
        "status --json: the view: %s", s->out);
  s = START(g_nodes, 0, "status", "--kind", "semaphore", "own-res");
  CHECK(RUN_TO_END(s) == 0 && strstr(s->out, "view: not held by a quorum") != NULL &&
            strstr(s->out, "; 0 holders") != NULL,
        "status --kind semaphore: %s", s->out);

  proc_t *r = START(g_nodes, 0, "revoke", "--owner", "admin", "own-res");
  CHECK(RUN_TO_END(r) == 0, "revoke -> 0");
  const char *f = strstr(r->out, "revoked own-res: fence ");
  unsigned long long raised = 0;
  CHECK(f != NULL && sscanf(f, "revoked own-res: fence %llu", &raised) == 1, "revoke says: %s",
        r->out);
  CHECK(raised > token, "the fence %llu is above the holder's token %" PRIu64, raised, token);
  int rc = wait_exit(h, 60000);
  CHECK(rc == 71, "the revoked run -> 71, got %d", rc);
  CHECK(stderr_contains(h, "lost"), "it says the lock was lost");
  proc_t *b = START(g_nodes, 0, RUN, "own-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(b) == 0, "the next run");
  CHECK(field_u64(b, "env", "fence") > raised, "its token is above the fence");
  wait_key_gone("own-res");
  proc_t *bare =
      START(g_nodes, 0, RUN, "--owner", "", "own-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(bare) == 0, "a run with --owner \"\"");
  field(bare, "env", "value", value, sizeof value);
  CHECK(strlen(value) == 32 && strspn(value, "0123456789abcdef") == 32,
        "--owner \"\": the value is the 32 hex digits alone: '%s'", value);
  wait_key_gone("own-res");

  static const char *const bad[][12] = {
      {RUN, "--owner", "a b", "r", "--", "true"},
      {"status", "--owner", "has~tilde", "r"},
      {"status", "--kind", "mutex", "r"},
      {"revoke"},
      {"revoke", "a", "b"},
      {"revoke", "--timeout", "0", "r"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *args[16];
    int n = 0;
    for (int j = 0; j < 12 && bad[i][j] != NULL; j++)
      args[n++] = bad[i][j];
    args[n] = NULL;
    proc_t *u = start_argv(g_nodes, 0, args);
    CHECK(RUN_TO_END(u) == 64, "usage error %zu (%s %s) -> 64", i, args[0], args[1]);
  }
  proc_t *help = START(NULL, 0, "revoke", "--help");
  CHECK(RUN_TO_END(help) == 0 && strstr(help->out, "Usage: redlock revoke") != NULL,
        "revoke --help");

  CHECK(rh_server_kill(g_fx.servers[0]) == 0 && rh_server_kill(g_fx.servers[1]) == 0,
        "kill two masters");
  r = START(g_nodes, 0, "revoke", "--timeout", "500", "own-res");
  CHECK(RUN_TO_END(r) == 69, "revoke without a quorum -> 69");
}

/* Masters from --node and REDLOCK_NODES. */
static void case_nodes(void) {
  start_masters();
  proc_t *p = START(NULL, 0, RUN, "--node", rh_server_uri(g_fx.servers[0]), "-N",
                    rh_server_uri(g_fx.servers[1]), "--node", rh_server_uri(g_fx.servers[2]),
                    "nodes-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "--node x3");
  /* --node wins over REDLOCK_NODES (which points nowhere here). */
  p = START("redis://127.0.0.1:1", 0, RUN, "--node", rh_server_uri(g_fx.servers[0]), "--node",
            rh_server_uri(g_fx.servers[1]), "--node", rh_server_uri(g_fx.servers[2]), "nodes-res",
            "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "--node overrides REDLOCK_NODES");
  /* Spaces and empty items in REDLOCK_NODES. */
  char env[sizeof g_nodes + 64];
  snprintf(env, sizeof env, " %s , %s,,%s, ", rh_server_uri(g_fx.servers[0]),
           rh_server_uri(g_fx.servers[1]), rh_server_uri(g_fx.servers[2]));
  p = START(env, 0, RUN, "nodes-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "REDLOCK_NODES with spaces");
  /* An item without :// continues the URI before it (a sentinel or cluster
   * voter's seeds, waitaof=L,R): "HOST:PORT" after a redis:// URI is part
   * of master #1, which is then invalid, not a master #2 of its own. */
  snprintf(env, sizeof env, "%s,127.0.0.1:9,%s", rh_server_uri(g_fx.servers[0]),
           rh_server_uri(g_fx.servers[1]));
  p = START(env, 0, RUN, "nodes-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 64, "a seed list on a redis:// URI -> 64");
  wait_stderr(p, "invalid master URI (REDLOCK_NODES #1)", DEADLINE_MS);
  /* ... and a URI after it starts a voter of its own: all three counted. */
  snprintf(env, sizeof env, "%s,%s,%s,%s", rh_server_uri(g_fx.servers[0]),
           rh_server_uri(g_fx.servers[1]), rh_server_uri(g_fx.servers[2]),
           rh_server_uri(g_fx.servers[0]));
  p = START(env, 0, RUN, "nodes-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 64, "a master given twice in REDLOCK_NODES -> 64");
  wait_stderr(p, "given twice", DEADLINE_MS);
  /* A small --max-ttl caps the default TTL (30 s) instead of refusing it. */
  p = START(g_nodes, 0, RUN, "--max-ttl", "5s", "nodes-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "--max-ttl 5s without --ttl");
  /* One master down of three: still a quorum. */
  CHECK(rh_server_kill(g_fx.servers[2]) == 0, "kill");
  p = START(g_nodes, 0, RUN, "nodes-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "2 of 3 up");
}

/* Masters with a password: right and wrong credentials; no secret in output. */
static void case_auth(void) {
  rh_options_t opts = {.password = "pw-0123456789"};
  start_masters_with(&opts);
  CHECK(strstr(g_nodes, "pw-0123456789") != NULL, "URIs carry the password: %s", g_nodes);
  proc_t *p = START(g_nodes, 0, RUN, "auth-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "right password");
  CHECK(!stderr_contains(p, "pw-0123456789"), "no password on stderr");

  proc_t *h = start_holder(NULL, "auth-res", 0);
  char value[128];
  field(h, "ready", "value", value, sizeof value);
  proc_t *s = START(g_nodes, 0, "status", "auth-res");
  CHECK(RUN_TO_END(s) == 0 && strstr(s->out, value) != NULL, "status with the password");
  CHECK(strstr(s->out, "pw-0123456789") == NULL, "no password in status");
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");

  /* The same masters with a wrong password. */
  char wrong[sizeof g_nodes];
  snprintf(wrong, sizeof wrong, "%s", g_nodes);
  for (char *w = wrong; (w = strstr(w, "pw-0123456789")) != NULL; w++)
    memcpy(w, "xx", 2);
  p = START(wrong, 0, RUN, "auth-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 69, "wrong password -> no quorum");
  CHECK(p->out_len == 0, "COMMAND did not run");
  CHECK(stderr_contains(p, "AUTH"), "the reason is shown");
  CHECK(!stderr_contains(p, "xx-0123456789"), "no password on stderr");
  s = START(wrong, 0, "status", "auth-res");
  CHECK(RUN_TO_END(s) == 69, "status with a wrong password -> 69");
  CHECK(strstr(s->out, "error (AUTH") != NULL, "status says AUTH failed");
  CHECK(strstr(s->out, "xx-0123456789") == NULL, "no password in status");

  /* COMMAND's environment has no REDLOCK_NODES, hence no password: under
   * run and under elect. */
  p = START(g_nodes, 0, RUN, "auth-res", "--", g_self, "--helper", "environ");
  CHECK(RUN_TO_END(p) == 0, "run environ");
  CHECK(strstr(p->out, "environ PATH=") != NULL, "COMMAND printed its environment");
  CHECK(strstr(p->out, "pw-0123456789") == NULL, "no password in COMMAND's environment");
  CHECK(strstr(p->out, "environ REDLOCK_NODES=") == NULL, "no REDLOCK_NODES under run");
  p = START(g_nodes, 0, ELECT, "auth-res", "--", g_self, "--helper", "environ");
  CHECK(RUN_TO_END(p) == 0, "elect environ");
  CHECK(strstr(p->out, "environ REDLOCK_TERM=") != NULL, "COMMAND printed its environment");
  CHECK(strstr(p->out, "pw-0123456789") == NULL, "no password in COMMAND's environment");
  CHECK(strstr(p->out, "environ REDLOCK_NODES=") == NULL, "no REDLOCK_NODES under elect");
}

/* ================================================================================
 * elect: leadership, hand-over, loss and re-election, signals, usage
 * ================================================================================ */

/* key=VALUE of the n-th (0-based) helper line that starts with tag; 0 when
 * there is none (yet). */
static uint64_t nth_field_u64(const proc_t *p, const char *tag, const char *key, int n) {
  size_t tlen = strlen(tag);
  for (const char *line = p->out; line != NULL && *line;) {
    const char *end = strchr(line, '\n');
    if (end == NULL)
      break; /* a line still being written */
    if (strncmp(line, tag, tlen) == 0 && line[tlen] == ' ' && n-- == 0) {
      char pat[64];
      snprintf(pat, sizeof pat, " %s=", key);
      const char *f = strstr(line, pat);
      if (f == NULL || f > end)
        return 0;
      return strtoull(f + strlen(pat), NULL, 10);
    }
    line = end + 1;
  }
  return 0;
}

typedef struct {
  proc_t *p;
  const char *tag;
  int n;
} nth_wait_t;

static int pred_nth_line(void *arg) {
  nth_wait_t *w = arg;
  pump(w->p);
  return nth_field_u64(w->p, w->tag, "term", w->n - 1) != 0;
}

/* Waits until the n-th (1-based) "tag ..." line with a term has come. */
static void wait_nth_line(proc_t *p, const char *tag, int n, int timeout_ms) {
  nth_wait_t w = {p, tag, n};
  g_last = p;
  CHECK(rh_wait_until(pred_nth_line, &w, timeout_ms), "no '%s' line #%d after %d ms", tag, n,
        timeout_ms);
}

/* Campaigners waiting for releases of key, on the master that has fewest. */
static long campaigners(const char *key) {
  char channel[256];
  snprintf(channel, sizeof channel, REDLOCK_RELEASE_CHANNEL_PREFIX "{%s}", key); /* no tag */
  return fx_numsub_min(&g_fx, channel);
}

static int pred_campaigning(void *arg) { return campaigners(arg) >= 1; }

/* One leader runs COMMAND; its exit hands over to the next campaigner, whose
 * term is larger; COMMAND's status is redlock's. */
static void case_elect(void) {
  start_masters();
  proc_t *a = START(g_nodes, 1, ELECT, "-v", "el-res", "--", g_self, "--helper", "hold");
  wait_nth_line(a, "ready", 1, DEADLINE_MS);
  uint64_t term_a = nth_field_u64(a, "ready", "term", 0);
  CHECK(term_a > 0, "REDLOCK_TERM set");
  CHECK(nth_field_u64(a, "ready", "fence", 0) == term_a, "REDLOCK_FENCE = REDLOCK_TERM");
  char resource[64];
  field(a, "ready", "resource", resource, sizeof resource);
  CHECK(strcmp(resource, "el-res") == 0, "REDLOCK_RESOURCE = NAME, got '%s'", resource);
  CHECK(stderr_contains(a, "elected leader of 'el-res'"), "says it was elected");

  proc_t *b = START(g_nodes, 1, ELECT, "el-res", "--", g_self, "--helper", "hold");
  CHECK(rh_wait_until(pred_campaigning, (void *)"el-res", DEADLINE_MS), "b campaigns");
  pump(b);
  CHECK(b->out_len == 0, "one leader at a time: b's COMMAND does not run");

  close_stdin(a); /* a's COMMAND exits by itself: a resigns and exits with its status */
  CHECK(RUN_TO_END(a) == 0, "a exits with COMMAND's status");
  wait_nth_line(b, "ready", 1, DEADLINE_MS);
  uint64_t term_b = nth_field_u64(b, "ready", "term", 0);
  CHECK(term_b > term_a, "term %" PRIu64 " after %" PRIu64, term_b, term_a);

  proc_t *c = START(g_nodes, 0, ELECT, "el-res2", "--", g_self, "--helper", "exit", "42");
  CHECK(RUN_TO_END(c) == 42, "COMMAND's exit status");
  c = START(g_nodes, 0, ELECT, "el-res2", "--", "redlock-test-no-such-command-xyz");
  CHECK(RUN_TO_END(c) == 127, "COMMAND not found -> 127");
  wait_key_gone("el-res2"); /* resigned */

  close_stdin(b);
  CHECK(RUN_TO_END(b) == 0, "b exits with COMMAND's status");
  wait_key_gone("el-res");
}

/* Lost leadership (masters stopped): COMMAND gets SIGTERM (SIGKILL after
 * --grace), redlock campaigns again and, re-elected, runs COMMAND anew with a
 * larger term. */
static void case_elect_lost(void) {
  start_masters();
  char term_line[32];
  snprintf(term_line, sizeof term_line, "signal %d\n", SIGTERM);
  for (int stubborn = 0; stubborn <= 1; stubborn++) {
    const char *res = stubborn ? "el-lost2" : "el-lost";
    proc_t *p = stubborn ? START(g_nodes, 1, ELECT, "--ttl", "1500", "--grace", "300", res, "--",
                                 g_self, "--helper", "hold", "stubborn")
                         : START(g_nodes, 1, ELECT, "--ttl", "1500", "--grace", "20000", res, "--",
                                 g_self, "--helper", "hold");
    wait_nth_line(p, "ready", 1, DEADLINE_MS);
    uint64_t t1 = nth_field_u64(p, "ready", "term", 0);
    pause_all();
    wait_output(p, term_line, 60000);
    if (stubborn)
      wait_stderr(p, "SIGKILL", 60000);
    resume_all();
    wait_nth_line(p, "ready", 2, 60000);
    uint64_t t2 = nth_field_u64(p, "ready", "term", 1);
    CHECK(t2 > t1, "re-elected with a larger term (%" PRIu64 " after %" PRIu64 ")", t2, t1);
    CHECK(stderr_contains(p, "leadership of '"), "says leadership was lost");
    CHECK(!p->exited, "redlock stayed, campaigning");
    close_stdin(p); /* the second COMMAND exits by itself */
    CHECK(RUN_TO_END(p) == 0, "exit with the second COMMAND's status");
    wait_key_gone(res);
  }
}

/* --max-hold under elect: the term ends at its bound (COMMAND gets SIGTERM,
 * redlock stays), and redlock is elected again with a larger term. */
static void case_elect_max_hold(void) {
  start_masters();
  char term_line[32];
  snprintf(term_line, sizeof term_line, "signal %d\n", SIGTERM);
  proc_t *p = START(g_nodes, 1, ELECT, "--ttl", "1000", "--max-hold", "2000", "--grace", "20000",
                    "el-mh", "--", g_self, "--helper", "hold");
  wait_nth_line(p, "ready", 1, DEADLINE_MS);
  uint64_t t1 = nth_field_u64(p, "ready", "term", 0);
  wait_output(p, term_line, 60000);
  CHECK(stderr_contains(p, "--max-hold"), "message names the bound");
  wait_nth_line(p, "ready", 2, 60000);
  uint64_t t2 = nth_field_u64(p, "ready", "term", 1);
  CHECK(t2 > t1, "elected again with a larger term (%" PRIu64 " after %" PRIu64 ")", t2, t1);
  CHECK(!p->exited, "redlock stayed, campaigning");
  close_stdin(p);
  CHECK(RUN_TO_END(p) == 0, "exit with COMMAND's status");
  wait_key_gone("el-mh");
}

/* Signals: passed on to a running COMMAND (redlock exits with its status);
 * while campaigning, redlock gives up with 128+N and COMMAND never runs. */
static void case_elect_signals(void) {
  start_masters();
  proc_t *p = START(g_nodes, 1, ELECT, "el-sig", "--", g_self, "--helper", "hold");
  wait_nth_line(p, "ready", 1, DEADLINE_MS);
  CHECK(kill(p->pid, SIGTERM) == 0, "kill");
  char line[32];
  snprintf(line, sizeof line, "signal %d\n", SIGTERM);
  wait_output(p, line, DEADLINE_MS);
  CHECK(RUN_TO_END(p) == 128 + SIGTERM, "COMMAND's 128+SIGTERM");
  wait_key_gone("el-sig");

  proc_t *h = START(g_nodes, 1, ELECT, "el-sig", "--", g_self, "--helper", "hold");
  wait_nth_line(h, "ready", 1, DEADLINE_MS);
  proc_t *w = START(g_nodes, 0, ELECT, "-v", "el-sig", "--", g_self, "--helper", "print");
  wait_stderr(w, "campaigning for", DEADLINE_MS);
  CHECK(kill(w->pid, SIGINT) == 0, "kill campaigner");
  CHECK(RUN_TO_END(w) == 128 + SIGINT, "campaigner exits 128+SIGINT");
  CHECK(w->out_len == 0, "COMMAND did not run");
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "leader done");
  wait_key_gone("el-sig");
}

typedef struct {
  proc_t *p;
  const char *first, *then;
} after_wait_t;

static int pred_after(void *arg) {
  after_wait_t *w = arg;
  pump(w->p);
  const char *at = strstr(w->p->out, w->first);
  return at != NULL && strstr(at + strlen(w->first), w->then) != NULL;
}

/* elect --observe: one line per change as it happens (a poll of 60 s: the
 * announcements tell it): none, the leader a with its label and term, none
 * again once a resigns; SIGINT ends it with 0.  --json: one object per
 * line; -w ends it with 0. */
static void case_elect_observe(void) {
  start_masters();
  proc_t *o = START(g_nodes, 0, "elect", "--observe", "el-obs", "--poll", "60s");
  wait_output(o, "none\n", DEADLINE_MS);
  proc_t *a =
      START(g_nodes, 1, ELECT, "--owner", "obs-a", "el-obs", "--", g_self, "--helper", "hold");
  wait_nth_line(a, "ready", 1, DEADLINE_MS);
  uint64_t term = nth_field_u64(a, "ready", "term", 0);
  char line[128];
  snprintf(line, sizeof line, "leader obs-a term %" PRIu64 " ttl ", term);
  wait_output(o, line, DEADLINE_MS);

  char json[160];
  snprintf(json, sizeof json, "{\"state\":\"held\",\"owner\":\"obs-a\",\"term\":%" PRIu64 ",",
           term);
  proc_t *j = START(g_nodes, 0, "elect", "--observe", "el-obs", "--json", "-w", "1s");
  CHECK(RUN_TO_END(j) == 0, "--observe -w ends with 0");
  CHECK(strncmp(j->out, json, strlen(json)) == 0, "--json: %s", j->out);

  close_stdin(a); /* a resigns */
  CHECK(RUN_TO_END(a) == 0, "a exits with COMMAND's status");
  after_wait_t w = {o, line, "\nnone\n"};
  g_last = o;
  CHECK(rh_wait_until(pred_after, &w, DEADLINE_MS), "no 'none' after the leader: %s", o->out);
  CHECK(kill(o->pid, SIGINT) == 0, "kill observer");
  CHECK(RUN_TO_END(o) == 0, "SIGINT ends --observe with 0");
  CHECK(strncmp(o->out, "none\nleader obs-a term ", strlen("none\nleader obs-a term ")) == 0,
        "one line per change: %s", o->out);
}

/* Bad command lines: 64, and COMMAND never runs. */
static void case_elect_usage(void) {
  const char *nodes = "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3";
  struct {
    const char *env;
    const char *args[12];
  } bad[] = {
      {nodes, {"elect"}},
      {nodes, {"elect", "n"}},
      {nodes, {"elect", "n", "--"}},
      {nodes, {"elect", "", "--", g_self}},
      {nodes, {"elect", "--ttl", "0", "n", "--", g_self}},
      {nodes, {"elect", "--ttl", "5", "n", "--", g_self}},
      {nodes, {"elect", "--ttl", "70000", "--max-ttl", "1m", "n", "--", g_self}},
      {nodes, {"elect", "-n", "n", "--", g_self}},
      {nodes, {"elect", "-c", "true", "n"}},
      {nodes, {"elect", "-s", "n", "--", g_self}},
      {nodes, {"elect", "--wait", "5", "n", "--", g_self}},
      {nodes, {"elect", "-E", "3", "n", "--", g_self}},
      {nodes, {"elect", "--fence-env", "REDLOCK_TERM", "n", "--", g_self}},
      {nodes, {"elect", "--grace", "x", "n", "--", g_self}},
      {nodes, {"elect", "n", "--ttl", "5", g_self}},
      {nodes, {"elect", "--observe"}},
      {nodes, {"elect", "--observe", "n", "extra"}},
      {nodes, {"elect", "--observe", "n", "--wait", "x"}},
      {NULL, {"elect", "n", "--", g_self}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    proc_t *p = start_argv(bad[i].env, 0, bad[i].args);
    int rc = RUN_TO_END(p);
    CHECK(rc == 64, "bad command line #%zu -> 64, got %d", i, rc);
    CHECK(p->out_len == 0, "nothing on stdout, COMMAND did not run (#%zu)", i);
    CHECK(stderr_contains(p, "--help"), "points at --help (#%zu)", i);
  }
  proc_t *p = START(NULL, 0, "elect", "--help");
  CHECK(RUN_TO_END(p) == 0 && strstr(p->out, "redlock elect") != NULL, "elect --help");
}

/* status and elect take the same --tls-* options and REDLOCK_TLS_*
 * variables as run (one option table, cli_common.c): masters that require
 * client certificates are reached with them, and refused without. */
static void tls_status_and_elect(const char *ca, const char *crt, const char *key) {
  proc_t *h =
      start_holder((const char *const[]){"--tls-ca", ca, "--tls-cert", crt, "--tls-key", key, NULL},
                   "tls-both", 0);
  char value[128];
  field(h, "ready", "value", value, sizeof value);
  proc_t *st =
      START(g_nodes, 0, "status", "--tls-ca", ca, "--tls-cert", crt, "--tls-key", key, "tls-both");
  CHECK(RUN_TO_END(st) == 0 && strstr(st->out, value) != NULL, "status --tls-*: %s", st->out);
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  wait_key_gone("tls-both");

  proc_t *e = START(g_nodes, 0, ELECT, "--tls-ca", ca, "--tls-cert", crt, "--tls-key", key,
                    "tls-el", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(e) == 0, "elect over TLS with --tls-*");
  CHECK(nth_field_u64(e, "env", "term", 0) > 0, "elected with a term: %s", e->out);
  e = START(g_nodes, 0, ELECT, "--tls-ca", "/nonexistent/ca.crt", "tls-el", "--", g_self);
  CHECK(RUN_TO_END(e) == 64, "elect checks --tls-ca");
  CHECK(stderr_contains(e, "/nonexistent/ca.crt"), "names the bad CA file");

  setenv("REDLOCK_TLS_CA", ca, 1);
  setenv("REDLOCK_TLS_CERT", crt, 1);
  setenv("REDLOCK_TLS_KEY", key, 1);
  e = START(g_nodes, 0, ELECT, "tls-el", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(e) == 0, "elect with REDLOCK_TLS_*");
  CHECK(nth_field_u64(e, "env", "term", 0) > 0, "elected with a term: %s", e->out);
  /* elect never gives up for want of a quorum: it says why it campaigns on. */
  setenv("REDLOCK_TLS_SERVER_NAME", "wrong.example", 1);
  e = START(g_nodes, 0, ELECT, "-v", "tls-el", "--", g_self, "--helper", "print");
  wait_stderr(e, "hostname mismatch", DEADLINE_MS);
  CHECK(kill(e->pid, SIGINT) == 0, "kill");
  CHECK(RUN_TO_END(e) == 128 + SIGINT && e->out_len == 0, "not elected with the wrong name");
  unsetenv("REDLOCK_TLS_SERVER_NAME");
  setenv("REDLOCK_TLS_INSECURE", "1", 1);
  e = START(g_nodes, 0, ELECT, "--tls-server-name", "wrong.example", "tls-el", "--", g_self,
            "--helper", "exit", "0");
  CHECK(RUN_TO_END(e) == 0, "elect with REDLOCK_TLS_INSECURE=1");
  unsetenv("REDLOCK_TLS_INSECURE");
  unsetenv("REDLOCK_TLS_CERT");
  unsetenv("REDLOCK_TLS_KEY");
  unsetenv("REDLOCK_TLS_CA");
}

/* doctor takes the same --tls-* options: every check over TLS; a failed
 * handshake is the connect check's FAIL, with the reason. */
static void tls_doctor(const char *ca, const char *crt, const char *key, const char *wrongca) {
  /* (--no-quarantine: the masters are new; doctor would exit 2 until their
   * restart quarantine ends) */
  proc_t *d = START(g_nodes, 0, "doctor", "--no-quarantine", "--clock-ms", "0", "--tls-ca", ca,
                    "--tls-cert", crt, "--tls-key", key);
  CHECK(RUN_TO_END(d) == 0, "doctor over TLS");
  CHECK(strstr(d->out, " over TLS\n") != NULL && strstr(d->out, "all 3 voters can vote") != NULL,
        "every voter over TLS can vote: %s", d->out);
  d = START(g_nodes, 0, "doctor", "--no-quarantine", "--clock-ms", "0", "--tls-ca", wrongca,
            "--tls-cert", crt, "--tls-key", key);
  CHECK(RUN_TO_END(d) == 1, "doctor with an untrusted CA -> 1");
  CHECK(strstr(d->out, "certificate verify failed") != NULL, "the failed check is shown: %s",
        d->out);
}

/* An encrypted client key: every subcommand refuses it at once (64), saying
 * that passphrases are not supported; nothing asks for one. */
static void tls_encrypted_key(const char *ca, const char *crt, const char *dir) {
  char enc[PATH_MAX + 32];
  snprintf(enc, sizeof enc, "%s/encrypted.key", dir);
  const char *const cmds[][12] = {
      {"run", "--tls-ca", ca, "--tls-cert", crt, "--tls-key", enc, "tls-enc", "--", g_self},
      {"elect", "--tls-ca", ca, "--tls-cert", crt, "--tls-key", enc, "tls-enc", "--", g_self},
      {"status", "--tls-ca", ca, "--tls-cert", crt, "--tls-key", enc, "tls-enc"},
      {"doctor", "--tls-ca", ca, "--tls-cert", crt, "--tls-key", enc}};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    proc_t *p = start_argv(g_nodes, 0, cmds[i]);
    CHECK(RUN_TO_END(p) == 64, "%s with an encrypted key -> 64", cmds[i][0]);
    CHECK(stderr_contains(p, "encrypted: passphrases are not supported"), "%s says why",
          cmds[i][0]);
    CHECK(!stderr_contains(p, "pass phrase"), "%s asked for no passphrase", cmds[i][0]);
  }
}

/* rediss:// masters requiring client certificates (built with TLS only:
 * CMake registers this case then, with REDLOCK_TEST_MAKE_CERTS set to
 * tests/tls/make_certs.sh).  The --tls-* options and their REDLOCK_TLS_*
 * variables, for run, status and elect; failures say why. */
/* The test certificates (REDLOCK_TEST_MAKE_CERTS) made in g_tmpdir/certs,
 * whose path goes to dir (PATH_MAX + 16 bytes). */
static void make_certs(char *dir) {
  const char *script = getenv("REDLOCK_TEST_MAKE_CERTS");
  CHECK(script != NULL, "REDLOCK_TEST_MAKE_CERTS is not set");
  char cmd[3 * PATH_MAX];
  snprintf(dir, PATH_MAX + 16, "%s/certs", g_tmpdir);
  CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
  snprintf(cmd, sizeof cmd, "sh '%s' '%s'", script, dir);
  CHECK(system(cmd) == 0, "%s", cmd);
}

static void case_tls(void) {
  char dir[PATH_MAX + 16], ca[PATH_MAX + 32], crt[PATH_MAX + 32], key[PATH_MAX + 32],
      wrongca[PATH_MAX + 32], srv_crt[PATH_MAX + 32], srv_key[PATH_MAX + 32];
  make_certs(dir);
  snprintf(ca, sizeof ca, "%s/ca.crt", dir);
  snprintf(wrongca, sizeof wrongca, "%s/wrongca.crt", dir);
  snprintf(crt, sizeof crt, "%s/client.crt", dir);
  snprintf(key, sizeof key, "%s/client.key", dir);
  snprintf(srv_crt, sizeof srv_crt, "%s/server.crt", dir);
  snprintf(srv_key, sizeof srv_key, "%s/server.key", dir);
  rh_options_t opts = {.tls_cert_file = srv_crt,
                       .tls_key_file = srv_key,
                       .tls_ca_cert_file = ca,
                       .tls_auth_clients = 1};
  start_masters_with(&opts);
  CHECK(strncmp(g_nodes, "rediss://", 9) == 0, "TLS URIs: %s", g_nodes);

  proc_t *p = START(g_nodes, 0, RUN, "--tls-ca", ca, "--tls-cert", crt, "--tls-key", key, "tls-res",
                    "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 0, "run over TLS with a client certificate");
  CHECK(field_u64(p, "env", "fence") > 0, "COMMAND ran with a fencing token");

  /* The masters require a client certificate. */
  p = START(g_nodes, 0, RUN, "--tls-ca", ca, "tls-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 69, "no client certificate -> no quorum");
  CHECK(p->out_len == 0, "COMMAND did not run");
  CHECK(stderr_contains(p, "certificate required") || stderr_contains(p, "client certificate"),
        "the reason is shown");

  /* A name the certificates lack; an untrusted CA, then --tls-insecure. */
  p = START(g_nodes, 0, RUN, "--tls-ca", ca, "--tls-cert", crt, "--tls-key", key,
            "--tls-server-name", "wrong.example", "tls-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 69, "wrong server name -> no quorum");
  CHECK(stderr_contains(p, "hostname mismatch"), "the mismatch is shown");
  p = START(g_nodes, 0, RUN, "--tls-ca", wrongca, "--tls-cert", crt, "--tls-key", key, "tls-res",
            "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 69, "untrusted CA -> no quorum");
  CHECK(stderr_contains(p, "certificate verify failed"), "the failed check is shown");
  p = START(g_nodes, 0, RUN, "--tls-ca", wrongca, "--tls-insecure", "--tls-cert", crt, "--tls-key",
            key, "tls-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "--tls-insecure connects anyway");

  /* The same from the environment. */
  setenv("REDLOCK_TLS_CA", ca, 1);
  setenv("REDLOCK_TLS_CERT", crt, 1);
  setenv("REDLOCK_TLS_KEY", key, 1);
  p = START(g_nodes, 0, RUN, "tls-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "REDLOCK_TLS_* variables");
  setenv("REDLOCK_TLS_SERVER_NAME", "wrong.example", 1);
  p = START(g_nodes, 0, RUN, "tls-res", "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 69, "REDLOCK_TLS_SERVER_NAME is used");
  p = START(g_nodes, 0, RUN, "--tls-server-name", "localhost", "tls-res", "--", g_self, "--helper",
            "exit", "0");
  CHECK(RUN_TO_END(p) == 0, "an option wins over its variable");
  unsetenv("REDLOCK_TLS_SERVER_NAME");

  /* status over TLS, holder's value shown. */
  proc_t *h = start_holder(NULL, "tls-res", 0);
  char value[128];
  field(h, "ready", "value", value, sizeof value);
  proc_t *st = START(g_nodes, 0, "status", "tls-res");
  CHECK(RUN_TO_END(st) == 0 && strstr(st->out, value) != NULL, "status over TLS: %s", st->out);
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  unsetenv("REDLOCK_TLS_CERT");
  unsetenv("REDLOCK_TLS_KEY");
  st = START(g_nodes, 0, "status", "tls-res");
  CHECK(RUN_TO_END(st) == 69, "status without a client certificate -> 69");
  unsetenv("REDLOCK_TLS_CA");

  /* A key that is not the certificate's: a usage error, said at once. */
  p = START(g_nodes, 0, RUN, "--tls-ca", ca, "--tls-cert", crt, "--tls-key", srv_key, "tls-res",
            "--", g_self, "--helper", "exit", "0");
  CHECK(RUN_TO_END(p) == 64, "mismatched key -> 64");
  CHECK(stderr_contains(p, "does not match"), "the mismatch is named");

  tls_status_and_elect(ca, crt, key);
  tls_doctor(ca, crt, key, wrongca);
  tls_encrypted_key(ca, crt, dir);
}

/* --metrics-file writes the client's stats when COMMAND exits (Prometheus
 * text that promtool accepts, or JSON), also when the lock was busy; status
 * --json is one JSON object with the table's facts. */
static int file_has(const char *path, const char *needle) {
  char *text = read_file(path);
  int found = text != NULL && strstr(text, needle) != NULL;
  free(text);
  return found;
}

static int shell_ok(const char *fmt, const char *arg) {
  char cmd[PATH_MAX * 2 + 512];
  snprintf(cmd, sizeof cmd, fmt, arg);
  int st = system(cmd);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void case_metrics(void) {
  start_masters();
  char prom[PATH_MAX + 32], json[PATH_MAX + 32], out[PATH_MAX + 32];
  snprintf(prom, sizeof prom, "%s/metrics.prom", g_tmpdir);
  snprintf(json, sizeof json, "%s/metrics.json", g_tmpdir);
  snprintf(out, sizeof out, "%s/status.json", g_tmpdir);

  proc_t *p = START(g_nodes, 0, RUN, "--metrics-file", prom, "met-res", "--", g_self, "--helper",
                    "exit", "3");
  CHECK(RUN_TO_END(p) == 3, "COMMAND's status is kept");
  CHECK(file_has(prom, "\nredlock_operations_total{op=\"acquire\",outcome=\"ok\"} 1\n"),
        "acquire ok counted");
  CHECK(file_has(prom, "\nredlock_operations_total{op=\"release\",outcome=\"ok\"} 1\n"),
        "release ok counted");
  if (shell_ok("command -v promtool >/dev/null 2>&1", ""))
    CHECK(shell_ok("promtool check metrics < '%s'", prom), "promtool accepts %s", prom);
  else
    printf("SKIP: promtool not installed: --metrics-file output not linted\n");

  /* Busy: COMMAND does not run, the stats still say why. */
  proc_t *h = start_holder(NULL, "met-res", 0);
  p = START(g_nodes, 0, RUN, "--metrics-format", "json", "--metrics-file", json, "met-res", "--",
            g_self, "--helper", "print");
  CHECK(RUN_TO_END(p) == 75, "busy -> 75");
  CHECK(file_has(json, "\"acquire\":{\"ok\":0,\"locked\":1,"), "acquire locked counted");
  if (shell_ok("command -v python3 >/dev/null 2>&1", ""))
    CHECK(shell_ok("python3 -m json.tool '%s' >/dev/null", json), "valid JSON");

  /* status --json while held. */
  char value[128];
  field(h, "ready", "value", value, sizeof value);
  proc_t *s = START(g_nodes, 0, "status", "--json", "met-res");
  CHECK(RUN_TO_END(s) == 0, "status --json -> 0");
  FILE *f = fopen(out, "w");
  CHECK(f != NULL && fwrite(s->out, 1, s->out_len, f) == s->out_len && fclose(f) == 0, "write %s",
        out);
  if (shell_ok("command -v python3 >/dev/null 2>&1", ""))
    CHECK(shell_ok("python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                   "assert d[\"status\"] == \"locked\" and d[\"quorum\"] == 2 and "
                   "d[\"answered\"] == 3 and d[\"held_on\"] >= 2 and "
                   "len(d[\"masters\"]) == 3 and d[\"masters\"][0][\"up\"]' '%s'",
                   out),
          "status JSON: %s", s->out);
  CHECK(strstr(s->out, "\"status\":\"locked\"") != NULL && strstr(s->out, value) != NULL,
        "holder in the JSON");

  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  wait_key_gone("met-res");
  CHECK(rh_server_kill(g_fx.servers[0]) == 0 && rh_server_kill(g_fx.servers[1]) == 0, "kill");
  s = START(g_nodes, 0, "status", "--json", "--timeout", "2000", "met-res");
  CHECK(RUN_TO_END(s) == 69, "two down -> 69");
  CHECK(strstr(s->out, "\"up\":false") != NULL && strstr(s->out, "\"answered\":1,") != NULL,
        "the dead masters are shown down: %s", s->out);

  p = START(g_nodes, 0, RUN, "--metrics-format", "xml", "met-res", "--", g_self);
  CHECK(RUN_TO_END(p) == 64, "bad --metrics-format -> 64");
}

/* ---- cluster voters ----------------------------------------------------------------------
 * A three-primary cluster of cluster_harness (no replicas) is one voter,
 * redis-cluster://: the library routes a key to the primary that owns its
 * slot, and status asks that primary.  Where a key lives is asked of the
 * cluster itself (CLUSTER KEYSLOT, then the slot's owner), not computed
 * here. */

#define CLUSTER_PRIMARIES 3

/* Starts the cluster; REDLOCK_NODES is then the cluster voter alone. */
static void start_cluster(void) {
  CHECK(ch_start(&g_cluster, &(ch_options_t){.primaries = CLUSTER_PRIMARIES}) == 0,
        "the cluster starts");
  snprintf(g_nodes, sizeof g_nodes, "%s", ch_uri(g_cluster, 0));
}

/* The index of the primary that owns key's slot, and the slot. */
static int cluster_owner(const char *key, int *slot) {
  char buf[64];
  CHECK(rh_server_command(ch_node(g_cluster, 0), buf, sizeof buf, "CLUSTER KEYSLOT %s", key) == 0,
        "CLUSTER KEYSLOT %s", key);
  *slot = atoi(buf);
  int owner = ch_owner(g_cluster, 0, *slot);
  CHECK(owner >= 0, "slot %d has an owner", *slot);
  return owner;
}

/* key's value on the primary that owns it ("(nil)" when none), into out. */
static void cluster_get(const char *key, char *out, size_t size) {
  int slot;
  int owner = cluster_owner(key, &slot);
  CHECK(rh_server_command(ch_node(g_cluster, (unsigned)owner), out, size, "GET %s", key) == 0,
        "GET %s", key);
}

typedef struct {
  const char *key, *value;
} cluster_value_t;

static int pred_cluster_value(void *arg) {
  const cluster_value_t *w = arg;
  char buf[256];
  cluster_get(w->key, buf, sizeof buf);
  return strcmp(buf, w->value) == 0;
}

static int pred_cluster_key_gone(void *arg) {
  return pred_cluster_value(&(cluster_value_t){arg, "(nil)"});
}

static void wait_cluster_key_gone(const char *key) {
  CHECK(rh_wait_until(pred_cluster_key_gone, (void *)key, DEADLINE_MS),
        "key '%s' still on the cluster", key);
}

/* status names the primary that owns key's slot (its TLS port when tls),
 * the slot, and (unless NULL) value on that line. */
static void expect_status_owner(proc_t *s, const char *key, const char *value, int tls) {
  int (*port)(const ch_cluster_t *, unsigned) = tls ? ch_tls_port : ch_port;
  int slot;
  int owner = cluster_owner(key, &slot);
  char want[320];
  snprintf(want, sizeof want, "(hash slot %d)", slot);
  CHECK(strstr(s->out, want) != NULL, "status names the slot: %s", want);
  snprintf(want, sizeof want, "cluster@127.0.0.1:%d -> 127.0.0.1:%d ", port(g_cluster, 0),
           port(g_cluster, (unsigned)owner));
  const char *line = strstr(s->out, want);
  CHECK(line != NULL, "status names the owner: '%s'", want);
  const char *eol = strchr(line, '\n');
  const char *v = strstr(line, value != NULL ? value : "  up  ");
  CHECK(v != NULL && (eol == NULL || v < eol), "the owner's line is up and shows the value %s",
        value != NULL ? value : "(any)");
}

/* run on a cluster voter: COMMAND runs under the lock, held on the primary
 * that owns the key's slot; a second run is refused (busy), a third waits
 * for the release and gets a larger fence; status shows the owner. */
static void case_run_cluster(void) {
  start_cluster();
  proc_t *h = start_holder(NULL, "cl-res", 0);
  char value[128], got[256];
  field(h, "ready", "value", value, sizeof value);
  uint64_t f_holder = field_u64(h, "ready", "fence");
  CHECK(f_holder > 0, "a fencing token");
  cluster_get("cl-res", got, sizeof got);
  CHECK(strcmp(got, value) == 0, "the slot's primary holds our value (%s, got %s)", value, got);

  proc_t *b = START(g_nodes, 0, RUN, "--wait", "0", "cl-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(b) == 75, "busy -> 75");
  CHECK(b->out_len == 0, "COMMAND did not run");
  CHECK(stderr_contains(b, "locked by another holder"), "message says why");

  proc_t *s = START(g_nodes, 0, "status", "cl-res");
  CHECK(RUN_TO_END(s) == 0, "status -> 0");
  expect_status_owner(s, "cl-res", value, 0);
  CHECK(strstr(s->out, "locked: held by ") != NULL && strstr(s->out, "on 1 of 1 masters") != NULL,
        "status: locked");
  s = START(g_nodes, 0, "status", "--json", "cl-res");
  CHECK(RUN_TO_END(s) == 0 && strstr(s->out, "\"slot\":") != NULL &&
            strstr(s->out, "\"resolved\":\"127.0.0.1:") != NULL &&
            strstr(s->out, "\"status\":\"locked\"") != NULL,
        "status --json: the slot and the owner");

  proc_t *w =
      START(g_nodes, 0, RUN, "-v", "--wait", "60", "cl-res", "--", g_self, "--helper", "print");
  wait_stderr(w, "waiting up to 60000 ms", DEADLINE_MS);
  CHECK(!pred_exited(w) && w->out_len == 0, "the waiter waits");
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder exits with COMMAND's status");
  CHECK(RUN_TO_END(w) == 0, "waiter got the lock after the release");
  uint64_t f_waiter = field_u64(w, "env", "fence");
  CHECK(f_waiter > f_holder, "waiter's fence %" PRIu64 " > holder's %" PRIu64, f_waiter, f_holder);
  wait_cluster_key_gone("cl-res");

  /* A seed that is down first: the next one gives the map. */
  char uri[1024];
  snprintf(uri, sizeof uri, "redis-cluster://127.0.0.1:1,%s",
           ch_uri(g_cluster, 0) + strlen("redis-cluster://"));
  proc_t *e = START(NULL, 0, RUN, "--node", uri, "cl-res", "--", g_self, "--helper", "exit", "7");
  CHECK(RUN_TO_END(e) == 7, "COMMAND's exit status, the first seed down");

  /* --allow-discovered: with one seed, a key whose slot another primary
   * owns is reached at an address the slot map names (127.0.0.1): refused
   * under 10.*, neither the lock's client nor status connects there. */
  char key[32];
  int slot;
  for (int i = 0;; i++) {
    snprintf(key, sizeof key, "ad-%d", i);
    if (cluster_owner(key, &slot) != 0)
      break;
  }
  snprintf(uri, sizeof uri, "redis-cluster://127.0.0.1:%d", ch_port(g_cluster, 0));
  proc_t *d = START(NULL, 0, RUN, "--node", uri, "--allow-discovered", "10.*", key, "--", g_self,
                    "--helper", "print");
  CHECK(RUN_TO_END(d) == 69, "a discovered primary not allowed -> 69");
  CHECK(d->out_len == 0, "COMMAND did not run");
  CHECK(stderr_contains(d, "not allowed"), "the message says the address is not allowed");
  setenv("REDLOCK_ALLOW_DISCOVERED", "10.*", 1);
  s = START(NULL, 0, "status", "--node", uri, key);
  RUN_TO_END(s);
  unsetenv("REDLOCK_ALLOW_DISCOVERED");
  CHECK(strstr(s->out, "not allowed by --allow-discovered") != NULL,
        "status does not connect to it either (REDLOCK_ALLOW_DISCOVERED)");
  d = START(NULL, 0, RUN, "--node", uri, "--allow-discovered", "10.*", "--allow-discovered",
            "127.0.0.*", key, "--", g_self, "--helper", "exit", "7");
  CHECK(RUN_TO_END(d) == 7, "allowed by the second pattern: COMMAND ran");
}

/* Campaigners waiting on key's release channel at the slot's primary (a
 * cluster voter waits on a shard channel; SUBSCRIBE counted too). */
static long cluster_campaigners(const char *key) {
  int slot;
  unsigned owner = (unsigned)cluster_owner(key, &slot);
  char channel[256], buf[256];
  snprintf(channel, sizeof channel, REDLOCK_RELEASE_CHANNEL_PREFIX "{%s}", key); /* no tag */
  long n = 0;
  static const char *const how[] = {"PUBSUB SHARDNUMSUB %s", "PUBSUB NUMSUB %s"};
  for (int i = 0; i < 2; i++) {
    if (rh_server_command(ch_node(g_cluster, owner), buf, sizeof buf, how[i], channel) != 0)
      continue;
    const char *nl = strchr(buf, '\n'); /* "channel\nN" */
    n += nl != NULL ? atol(nl + 1) : 0;
  }
  return n;
}

static int pred_cluster_campaigning(void *arg) { return cluster_campaigners(arg) >= 1; }

/* elect on a cluster voter: one leader at a time; its exit hands over to
 * the campaigner, whose term is larger. */
static void case_elect_cluster(void) {
  start_cluster();
  proc_t *a = START(g_nodes, 1, ELECT, "-v", "el-cl", "--", g_self, "--helper", "hold");
  wait_nth_line(a, "ready", 1, DEADLINE_MS);
  uint64_t term_a = nth_field_u64(a, "ready", "term", 0);
  CHECK(term_a > 0, "REDLOCK_TERM set");
  CHECK(stderr_contains(a, "elected leader of 'el-cl'"), "says it was elected");

  proc_t *b = START(g_nodes, 1, ELECT, "el-cl", "--", g_self, "--helper", "hold");
  CHECK(rh_wait_until(pred_cluster_campaigning, (void *)"el-cl", DEADLINE_MS), "b campaigns");
  pump(b);
  CHECK(b->out_len == 0, "one leader at a time: b's COMMAND does not run");

  close_stdin(a);
  CHECK(RUN_TO_END(a) == 0, "a exits with COMMAND's status");
  wait_nth_line(b, "ready", 1, DEADLINE_MS);
  uint64_t term_b = nth_field_u64(b, "ready", "term", 0);
  CHECK(term_b > term_a, "term %" PRIu64 " after %" PRIu64, term_b, term_a);
  close_stdin(b);
  CHECK(RUN_TO_END(b) == 0, "b exits with COMMAND's status");
  wait_cluster_key_gone("el-cl");
}

/* Voters of two kinds: the cluster and two standalone masters, quorum 2. */
static void case_mixed_cluster(void) {
  start_cluster();
  CHECK(fx_servers_start(&g_fx, 2, NULL) == 0, "two masters start");
  snprintf(g_nodes, sizeof g_nodes, "%s,%s,%s", ch_uri(g_cluster, 0),
           rh_server_uri(g_fx.servers[0]), rh_server_uri(g_fx.servers[1]));
  proc_t *h = start_holder(NULL, "mix-res", 0);
  char value[128];
  field(h, "ready", "value", value, sizeof value);
  /* Held once a quorum accepted it: the two masters may outrun the cluster
   * voter, still reading its slot map when a fresh client's first attempt
   * goes out (its vote then comes with the first extension). */
  CHECK(fx_wait_value_everywhere(&g_fx, "mix-res", value, DEADLINE_MS), "both masters hold it");

  proc_t *b = START(g_nodes, 0, RUN, "mix-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(b) == 75 && b->out_len == 0, "busy -> 75");
  proc_t *s = START(g_nodes, 0, "status", "mix-res");
  CHECK(RUN_TO_END(s) == 0, "status -> 0");
  CHECK(strstr(s->out, "3 masters, quorum 2") != NULL && strstr(s->out, "locked: held by ") != NULL,
        "locked on a quorum of the three voters");
  expect_status_owner(s, "mix-res", NULL, 0);

  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  wait_cluster_key_gone("mix-res");
  CHECK(fx_wait_nil_everywhere(&g_fx, "mix-res", DEADLINE_MS), "released on the masters");
}

/* rediss-cluster://: the cluster of cluster_harness with TLS ports and a
 * TLS bus (a client certificate shown, not required); run, status and
 * elect reach the slot's primary on its TLS port. */
static void case_tls_cluster(void) {
  char dir[PATH_MAX + 16], ca[PATH_MAX + 32], crt[PATH_MAX + 32], key[PATH_MAX + 32],
      srv_crt[PATH_MAX + 32], srv_key[PATH_MAX + 32];
  make_certs(dir);
  snprintf(ca, sizeof ca, "%s/ca.crt", dir);
  snprintf(crt, sizeof crt, "%s/client.crt", dir);
  snprintf(key, sizeof key, "%s/client.key", dir);
  snprintf(srv_crt, sizeof srv_crt, "%s/server.crt", dir);
  snprintf(srv_key, sizeof srv_key, "%s/server.key", dir);
  ch_options_t co = {.primaries = CLUSTER_PRIMARIES,
                     .tls_cert_file = srv_crt,
                     .tls_key_file = srv_key,
                     .tls_client_cert_file = crt,
                     .tls_client_key_file = key,
                     .tls_ca_cert_file = ca};
  CHECK(ch_start(&g_cluster, &co) == 0, "the TLS cluster starts");
  snprintf(g_nodes, sizeof g_nodes, "%s", ch_uri_tls(g_cluster, 0));
  setenv("REDLOCK_TLS_CA", ca, 1);
  setenv("REDLOCK_TLS_CERT", crt, 1);
  setenv("REDLOCK_TLS_KEY", key, 1);

  proc_t *h = start_holder(NULL, "tls-cl-res", 0);
  char value[128], got[256];
  field(h, "ready", "value", value, sizeof value);
  cluster_get("tls-cl-res", got, sizeof got);
  CHECK(strcmp(got, value) == 0, "the slot's primary holds our value (%s, got %s)", value, got);
  proc_t *b = START(g_nodes, 0, RUN, "tls-cl-res", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(b) == 75 && b->out_len == 0, "busy over TLS -> 75");
  proc_t *s = START(g_nodes, 0, "status", "tls-cl-res");
  CHECK(RUN_TO_END(s) == 0, "status over TLS -> 0");
  expect_status_owner(s, "tls-cl-res", value, 1);
  close_stdin(h);
  CHECK(RUN_TO_END(h) == 0, "holder done");
  wait_cluster_key_gone("tls-cl-res");

  proc_t *e = START(g_nodes, 0, ELECT, "tls-cl-el", "--", g_self, "--helper", "print");
  CHECK(RUN_TO_END(e) == 0, "elect over TLS");
  CHECK(nth_field_u64(e, "env", "term", 0) > 0, "elected with a term: %s", e->out);

  /* The certificates are checked on the seeds' connections too: an
   * untrusted CA, and no map. */
  char wrongca[PATH_MAX + 32];
  snprintf(wrongca, sizeof wrongca, "%s/wrongca.crt", dir);
  s = START(g_nodes, 0, "status", "--tls-ca", wrongca, "tls-cl-res");
  CHECK(RUN_TO_END(s) == 69 && strstr(s->out, "no seed gave the slot map") != NULL &&
            strstr(s->out, "certificate verify failed") != NULL,
        "status with an untrusted CA -> 69, and why");
  unsetenv("REDLOCK_TLS_CERT");
  unsetenv("REDLOCK_TLS_KEY");
  unsetenv("REDLOCK_TLS_CA");
}

/* ================================================================================ */

static const cli_case_t CASES[] = {
    {"exit_status", case_exit_status},
    {"fence", case_fence},
    {"run_nolua", case_run_nolua},
    {"busy", case_busy},
    {"wait", case_wait},
    {"noquorum", case_noquorum},
    {"usage", case_usage},
    {"flock", case_flock},
    {"cron_doc", case_cron_doc},
    {"progress", case_progress},
    {"lost", case_lost},
    {"max_hold", case_max_hold},
    {"signals", case_signals},
    {"status", case_status},
    {"owner", case_owner},
    {"nodes", case_nodes},
    {"auth", case_auth},
    {"elect", case_elect},
    {"elect_lost", case_elect_lost},
    {"elect_max_hold", case_elect_max_hold},
    {"elect_signals", case_elect_signals},
    {"elect_usage", case_elect_usage},
    {"elect_observe", case_elect_observe},
    {"tls", case_tls},
    {"metrics", case_metrics},
    {"run_cluster", case_run_cluster},
    {"elect_cluster", case_elect_cluster},
    {"mixed_cluster", case_mixed_cluster},
    {"tls_cluster", case_tls_cluster},
};

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--helper") == 0)
    return helper_main(argc, argv);
  ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  if (n <= 0) {
    fprintf(stderr, "readlink /proc/self/exe: %s\n", strerror(errno));
    return 2;
  }
  g_self[n] = '\0';
  return cli_cases_main(argc, argv, CASES, sizeof CASES / sizeof CASES[0], "redlock-cli-test",
                        cleanup, &g_redlock, &g_case, g_tmpdir, sizeof g_tmpdir);
}
