/* test_cli_sec.c: black-box tests of the `redlock` command's defences
 * against its surroundings, against real redis-server processes that the
 * harness starts on loopback and stops by PID:
 *
 *   sec_metrics_symlink   --metrics-file follows no symlink planted at the
 *                         old predictable temporary name or at the file
 *   sec_escape            a server's text (an ACL user name with ESC)
 *                         reaches the terminal escaped (doctor, status)
 *   sec_password_warning  a password on the command line is warned about
 *                         once; not with -q, REDLOCK_NO_AUTH_WARNING=1 or
 *                         REDLOCK_NODES
 *   sec_tls_insecure      REDLOCK_TLS_INSECURE=1 warns without -v (TLS
 *                         builds)
 *
 *   test_cli_sec PATH-TO-redlock CASE       runs one case (ctest: cli.<case>)
 *
 * The binary runs to its end (stdout and stderr in files, a deadline on its
 * exit: nothing waits by sleeping).  A redlock built with sanitizers fails
 * a case if it reports anything on stderr. */
#define _GNU_SOURCE
#include <dirent.h>
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
#include <unistd.h>

#include "cli_cases.h"
#include "redis_harness.h"
#include "test_io.h"

#define DEADLINE_MS 60000 /* each run takes well under a second */
#define MAX_SERVERS 2
#define MAX_ARGS 24
#define MAX_ENV 4
#define PASSWORD "sec-pw-0123"
#define WARNING "Warning: using a password on the command line may not be safe"
#define TLS_WARNING "Warning: TLS certificate verification is off"

static const char *g_redlock; /* the binary under test */
static const char *g_case = "?";
static char g_tmpdir[PATH_MAX];
static rh_server_t *g_servers[MAX_SERVERS];

/* One finished run of the binary. */
typedef struct {
  char *out, *err; /* malloc'ed */
  int status;
  const char *what;
} run_t;

static run_t g_run;

static void cleanup(void) {
  for (int i = 0; i < MAX_SERVERS; i++) {
    rh_server_free(g_servers[i]); /* stops it by PID */
    g_servers[i] = NULL;
  }
  free(g_run.out);
  free(g_run.err);
  g_run.out = g_run.err = NULL;
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
            g_run.status, g_run.out ? g_run.out : "", g_run.err ? g_run.err : "");
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
  int exited, wstatus;
} child_t;

static int pred_exited(void *arg) {
  child_t *c = arg;
  if (waitpid(c->pid, &c->wstatus, WNOHANG) == c->pid)
    c->exited = 1;
  return c->exited;
}

/* What the child does before exec (in the child: getpid() is redlock's). */
typedef void (*pre_exec_fn)(void *arg);

/* Runs `redlock ARGS...` to its end, with REDLOCK_NODES = nodes (NULL:
 * unset) and env ("NAME=VALUE", NULL-terminated, may be NULL) added; the
 * result is in g_run. */
static run_t *run_full(const char *nodes, const char *const *env, pre_exec_fn pre, void *pre_arg,
                       const char *const *args) {
  const char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = g_redlock;
  for (int i = 0; args[i] != NULL && argc < MAX_ARGS; i++)
    argv[argc++] = args[i];
  argv[argc] = NULL;
  free(g_run.out);
  free(g_run.err);
  memset(&g_run, 0, sizeof g_run);
  g_run.what = args[0] != NULL ? args[0] : "redlock";
  char out_path[PATH_MAX + 16], err_path[PATH_MAX + 16];
  snprintf(out_path, sizeof out_path, "%s/stdout", g_tmpdir);
  snprintf(err_path, sizeof err_path, "%s/stderr", g_tmpdir);
  int out_fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CHECK(out_fd >= 0 && err_fd >= 0, "open %s: %s", g_tmpdir, strerror(errno));
  fflush(NULL);
  child_t c = {.pid = fork()};
  CHECK(c.pid >= 0, "fork: %s", strerror(errno));
  if (c.pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a crashed driver leaks no redlock */
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (nodes != NULL)
      setenv("REDLOCK_NODES", nodes, 1);
    else
      unsetenv("REDLOCK_NODES");
    for (int i = 0; env != NULL && env[i] != NULL; i++)
      putenv((char *)env[i]);
    signal(SIGPIPE, SIG_DFL);
    if (pre != NULL)
      pre(pre_arg);
    execv(g_redlock, (char *const *)argv);
    _exit(99);
  }
  close(out_fd);
  close(err_fd);
  int done = rh_wait_until(pred_exited, &c, DEADLINE_MS);
  if (!done) {
    kill(c.pid, SIGKILL);
    waitpid(c.pid, &c.wstatus, 0);
  }
  size_t len;
  g_run.out = tio_read_file(out_path, &len);
  g_run.err = tio_read_file(err_path, &len);
  unlink(out_path);
  unlink(err_path);
  CHECK(done, "redlock still running after %d ms", DEADLINE_MS);
  g_run.status = WIFEXITED(c.wstatus) ? WEXITSTATUS(c.wstatus) : 128 + WTERMSIG(c.wstatus);
  CHECK(g_run.out != NULL && g_run.err != NULL, "output unreadable");
  CHECK(strstr(g_run.err, "Sanitizer") == NULL && strstr(g_run.err, "runtime error") == NULL,
        "sanitizer report from redlock");
  return &g_run;
}

#define REDLOCK(nodes, env, ...)                                                                   \
  run_full((nodes), (env), NULL, NULL, (const char *const[]){__VA_ARGS__, NULL})

/* How many times needle occurs in s. */
static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

/* A byte below 0x20 other than LF, or DEL, in s: raw control text. */
static int has_control(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
    if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
      return 1;
  return 0;
}

static rh_server_t *start_server(const rh_options_t *opts) {
  int slot = -1;
  for (int i = 0; i < MAX_SERVERS && slot < 0; i++)
    if (g_servers[i] == NULL)
      slot = i;
  CHECK(slot >= 0, "too many servers");
  CHECK(rh_server_start(&g_servers[slot], opts) == 0, "cannot start %s", rh_server_name());
  return g_servers[slot];
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL && fputs(text, f) >= 0 && fclose(f) == 0, "write %s: %s", path, strerror(errno));
}

static int file_is(const char *path, const char *text) {
  size_t len;
  char *got = tio_read_file(path, &len);
  int same = got != NULL && strcmp(got, text) == 0;
  free(got);
  return same;
}

/* ================================================================================
 * the cases
 * ================================================================================ */

typedef struct {
  const char *metrics; /* PATH */
  const char *victim;
} plant_t;

/* In the child, before exec: a symlink at the name the temporary file
 * used to have (PATH.tmp.PID, PID being redlock's). */
static void plant_tmp_link(void *arg) {
  const plant_t *p = arg;
  char link[PATH_MAX + 64];
  snprintf(link, sizeof link, "%s.tmp.%ld", p->metrics, (long)getpid());
  if (symlink(p->victim, link) != 0)
    _exit(98);
}

/* --metrics-file PATH: another local user who can write PATH's directory
 * (a shared textfile-collector directory, say) plants symlinks at the
 * temporary file's name and at PATH; the files they point at keep their
 * content, PATH becomes a regular file with the metrics, and no temporary
 * file is left behind. */
static void case_metrics_symlink(void) {
  rh_server_t *m = start_server(NULL);
  char metrics[PATH_MAX + 16], victim[PATH_MAX + 16], victim2[PATH_MAX + 16];
  snprintf(metrics, sizeof metrics, "%s/m.prom", g_tmpdir);
  snprintf(victim, sizeof victim, "%s/victim", g_tmpdir);
  snprintf(victim2, sizeof victim2, "%s/victim2", g_tmpdir);
  write_file(victim, "not yours\n");
  write_file(victim2, "not yours either\n");
  CHECK(symlink(victim2, metrics) == 0, "symlink: %s", strerror(errno));
  plant_t plant = {metrics, victim};
  run_full(NULL, NULL, plant_tmp_link, &plant,
           (const char *const[]){"run", "--no-quarantine", "--node", rh_server_uri(m),
                                 "--metrics-file", metrics, "sec-res", "--", "true", NULL});
  CHECK(g_run.status == 0, "run: exit %d", g_run.status);
  CHECK(file_is(victim, "not yours\n"), "the file behind PATH.tmp.PID was written");
  CHECK(file_is(victim2, "not yours either\n"), "the file behind PATH was written");
  struct stat st;
  CHECK(lstat(metrics, &st) == 0 && S_ISREG(st.st_mode), "PATH is not a regular file now");
  CHECK((st.st_mode & 0777) == 0644, "PATH's mode is %o", (unsigned)(st.st_mode & 0777));
  size_t len;
  char *text = tio_read_file(metrics, &len);
  int ok = text != NULL && strstr(text, "redlock_operations_total") != NULL;
  free(text);
  CHECK(ok, "PATH has the metrics");
  /* Nothing but the test's own files (and the planted link) is left. */
  DIR *d = opendir(g_tmpdir);
  CHECK(d != NULL, "opendir: %s", strerror(errno));
  struct dirent *e;
  int others = 0;
  while ((e = readdir(d)) != NULL)
    others += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
              strcmp(e->d_name, "m.prom") != 0 && strcmp(e->d_name, "victim") != 0 &&
              strcmp(e->d_name, "victim2") != 0 && strncmp(e->d_name, "m.prom.tmp.", 11) != 0 &&
              strcmp(e->d_name, "stdout") != 0 && strcmp(e->d_name, "stderr") != 0;
  closedir(d);
  CHECK(others == 0, "%d temporary file(s) left in %s", others, g_tmpdir);

  /* A directory that does not exist: a clear message, COMMAND's status. */
  char missing[PATH_MAX + 16];
  snprintf(missing, sizeof missing, "%s/none/m.prom", g_tmpdir);
  REDLOCK(NULL, NULL, "run", "--no-quarantine", "--node", rh_server_uri(m), "--metrics-file",
          missing, "sec-res", "--", "true");
  CHECK(g_run.status == 0 && strstr(g_run.err, "cannot write the metrics to") != NULL &&
            strstr(g_run.err, "No such file or directory") != NULL,
        "a missing directory is reported: exit %d", g_run.status);
}

/* An ACL user whose name holds ESC [ 3 1 m (a colour change: any escape
 * sequence would do) and a DEL: doctor, authenticated as that user, shows
 * the name escaped, in its table and in its JSON; nothing the server says
 * reaches stdout or stderr raw. */
static void case_escape(void) {
  rh_server_t *m = start_server(NULL);
  char reply[256];
  CHECK(rh_server_command(m, reply, sizeof reply, "ACL SETUSER %s on >%s ~* &* +@all",
                          "esc\x1b[31mred\x7f", PASSWORD) == 0 &&
            strcmp(reply, "OK") == 0,
        "ACL SETUSER: %s", reply);
  char uri[256];
  snprintf(uri, sizeof uri, "redis://esc%%1B%%5B31mred%%7F:%s@127.0.0.1:%d", PASSWORD,
           rh_server_port(m));
  const char *const quiet[] = {"REDLOCK_NO_AUTH_WARNING=1", NULL};
  REDLOCK(NULL, quiet, "doctor", "--no-quarantine", "--clock-ms", "0", uri);
  CHECK(g_run.status == 0, "doctor: exit %d", g_run.status);
  CHECK(strstr(g_run.out, "user 'esc\\x1b[31mred\\x7f'") != NULL, "the user name, escaped");
  CHECK(!has_control(g_run.out) && !has_control(g_run.err), "raw control bytes in the output");
  REDLOCK(NULL, quiet, "doctor", "--no-quarantine", "--json", "--clock-ms", "0", uri);
  CHECK(g_run.status == 0 && !has_control(g_run.out) && !has_control(g_run.err),
        "--json: raw control bytes (exit %d)", g_run.status);

  /* status: the value and fence keys are the server's too. */
  CHECK(rh_server_command(m, reply, sizeof reply, "SET %s %s", "{sec-res}", "v\x1b]0;title\x07") ==
            0,
        "SET: %s", reply);
  REDLOCK(NULL, quiet, "status", "--node", uri, "sec-res");
  CHECK(!has_control(g_run.out) && !has_control(g_run.err), "status: raw control bytes (exit %d)",
        g_run.status);
}

/* A password in a URI on the command line: one warning on stderr, as
 * redis-cli gives; none with -q, REDLOCK_NO_AUTH_WARNING=1, the URIs in
 * REDLOCK_NODES, or no password. */
static void case_password_warning(void) {
  rh_options_t opts = {.password = PASSWORD};
  rh_server_t *m = start_server(&opts);
  const char *uri = rh_server_uri(m);
  CHECK(strstr(uri, PASSWORD) != NULL, "the harness's URI has the password: %s", uri);
  char plain[64];
  snprintf(plain, sizeof plain, "redis://127.0.0.1:%d", rh_server_port(m));

  REDLOCK(NULL, NULL, "status", "--node", uri, "sec-res");
  CHECK(g_run.status == 0 && count(g_run.err, WARNING) == 1, "--node: one warning (exit %d)",
        g_run.status);
  CHECK(strstr(g_run.err, "REDLOCK_NODES") != NULL, "the warning says the safe way");
  CHECK(strstr(g_run.err, PASSWORD) == NULL, "the password is not echoed");
  REDLOCK(NULL, NULL, "run", "--no-quarantine", "--node", uri, "sec-res", "--", "true");
  CHECK(g_run.status == 0 && count(g_run.err, WARNING) == 1, "run --node: one warning (exit %d)",
        g_run.status);
  REDLOCK(NULL, NULL, "doctor", "--no-quarantine", "--clock-ms", "0", uri);
  CHECK(g_run.status == 0 && count(g_run.err, WARNING) == 1, "doctor URI: one warning (exit %d)",
        g_run.status);

  REDLOCK(NULL, NULL, "status", "-q", "--node", uri, "sec-res");
  CHECK(g_run.status == 0 && count(g_run.err, WARNING) == 0, "-q: no warning (exit %d)",
        g_run.status);
  const char *const off[] = {"REDLOCK_NO_AUTH_WARNING=1", NULL};
  REDLOCK(NULL, off, "status", "--node", uri, "sec-res");
  CHECK(g_run.status == 0 && count(g_run.err, WARNING) == 0,
        "REDLOCK_NO_AUTH_WARNING=1: no warning (exit %d)", g_run.status);
  REDLOCK(uri, NULL, "status", "sec-res");
  CHECK(g_run.status == 0 && count(g_run.err, WARNING) == 0, "REDLOCK_NODES: no warning (exit %d)",
        g_run.status);
  REDLOCK(NULL, NULL, "status", "--node", plain, "sec-res");
  CHECK(count(g_run.err, WARNING) == 0, "no password: no warning (exit %d)", g_run.status);
}

/* REDLOCK_TLS_INSECURE=1 with a rediss:// master: the warning comes without
 * -v, with -q too, once, even when no master answers. */
static void case_tls_insecure(void) {
  char uri[64];
  snprintf(uri, sizeof uri, "rediss://127.0.0.1:%d", rh_free_port());
  const char *const env[] = {"REDLOCK_TLS_INSECURE=1", NULL};
  REDLOCK(NULL, env, "status", "--timeout", "500", "--node", uri, "sec-res");
  CHECK(count(g_run.err, TLS_WARNING) == 1, "one warning (exit %d)", g_run.status);
  REDLOCK(NULL, env, "status", "-q", "--timeout", "500", "--node", uri, "sec-res");
  CHECK(count(g_run.err, TLS_WARNING) == 1, "-q: one warning (exit %d)", g_run.status);
  REDLOCK(NULL, NULL, "status", "--tls-insecure", "--timeout", "500", "--node", uri, "sec-res");
  CHECK(count(g_run.err, TLS_WARNING) == 1, "--tls-insecure: one warning (exit %d)", g_run.status);
  REDLOCK(NULL, NULL, "status", "--timeout", "500", "--node", uri, "sec-res");
  CHECK(count(g_run.err, TLS_WARNING) == 0, "verification on: no warning (exit %d)", g_run.status);
}

static const cli_case_t CASES[] = {
    {"sec_metrics_symlink", case_metrics_symlink},
    {"sec_escape", case_escape},
    {"sec_password_warning", case_password_warning},
    {"sec_tls_insecure", case_tls_insecure},
};

int main(int argc, char **argv) {
  /* The cases count the warnings: none may be turned off from outside. */
  unsetenv("REDLOCK_NO_AUTH_WARNING");
  unsetenv("REDLOCK_TLS_INSECURE");
  return cli_cases_main(argc, argv, CASES, sizeof CASES / sizeof CASES[0], "redlock-sec-test",
                        cleanup, &g_redlock, &g_case, g_tmpdir, sizeof g_tmpdir);
}
