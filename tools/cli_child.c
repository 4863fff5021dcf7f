/* cli_child.c: starting and watching COMMAND for `run` and `elect` (see
 * cli_child.h for the threads, signals and descriptors involved). */
#define _GNU_SOURCE /* SI_KERNEL, environ */

#include "cli_child.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- signals and wake-ups ------------------------------------------------------------ */

/* Signals passed on to COMMAND (and that abort a wait for the lock). */
static const int FORWARDED[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define N_FORWARDED (sizeof FORWARDED / sizeof FORWARDED[0])

static pthread_t g_main_thread;
static sigset_t g_waitset;   /* blocked on the main thread and waited for */
static sigset_t g_orig_mask; /* restored for COMMAND */
static sigset_t g_child_dfl; /* dispositions reset to default for COMMAND */

void wake_main(void) { pthread_kill(g_main_thread, SIGCHLD); }

/* Blocks SIGCHLD and the forwarded signals (those not ignored at start: a
 * `nohup` or a background job keeps ignoring them, and so does COMMAND).
 * SIGPIPE is ignored by redlock (a closed stderr must not kill it while it
 * holds a lock) and reset for COMMAND.  0 or -1. */
static int setup_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sigemptyset(&g_waitset);
  sigemptyset(&g_child_dfl);
  /* SIGCHLD must not be SIG_IGN (children would be reaped for us). */
  sa.sa_handler = SIG_DFL;
  if (sigaction(SIGCHLD, &sa, NULL) != 0)
    return -1;
  sigaddset(&g_waitset, SIGCHLD);
  for (size_t i = 0; i < N_FORWARDED; i++) {
    struct sigaction old;
    if (sigaction(FORWARDED[i], NULL, &old) != 0)
      return -1;
    if (old.sa_handler != SIG_IGN)
      sigaddset(&g_waitset, FORWARDED[i]);
  }
  struct sigaction old_pipe;
  if (sigaction(SIGPIPE, NULL, &old_pipe) != 0)
    return -1;
  if (old_pipe.sa_handler == SIG_DFL) {
    sa.sa_handler = SIG_IGN;
    if (sigaction(SIGPIPE, &sa, NULL) != 0)
      return -1;
    sigaddset(&g_child_dfl, SIGPIPE);
  }
  g_main_thread = pthread_self();
  /* Before redlock_open: threads started later inherit the mask. */
  return pthread_sigmask(SIG_BLOCK, &g_waitset, &g_orig_mask) == 0 ? 0 : -1;
}

uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int wait_signal(int64_t timeout_ms, siginfo_t *info) {
  for (;;) {
    int sig;
    if (timeout_ms < 0) {
      sig = sigwaitinfo(&g_waitset, info);
    } else {
      struct timespec ts = {(time_t)(timeout_ms / 1000), (long)(timeout_ms % 1000) * 1000000L};
      sig = sigtimedwait(&g_waitset, info, &ts);
    }
    if (sig > 0)
      return sig;
    if (errno == EAGAIN)
      return 0;
    if (errno != EINTR)
      return 0; /* should not happen; the caller re-checks its state */
  }
}

int is_forwarded(int sig) {
  for (size_t i = 0; i < N_FORWARDED; i++)
    if (FORWARDED[i] == sig)
      return 1;
  return 0;
}

const char *sig_name(int sig) {
  switch (sig) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  case SIGQUIT:
    return "SIGQUIT";
  case SIGUSR1:
    return "SIGUSR1";
  case SIGUSR2:
    return "SIGUSR2";
  case SIGKILL:
    return "SIGKILL";
  default:
    return "a signal";
  }
}

/* ---- descriptors passed to COMMAND ------------------------------------------------ */

static int fdset_add(fdset_t *set, int fd) {
  if (set->n == set->cap) {
    size_t cap = set->cap ? set->cap * 2 : 16;
    int *p = realloc(set->fds, cap * sizeof *p);
    if (p == NULL)
      return -1;
    set->fds = p;
    set->cap = cap;
  }
  set->fds[set->n++] = fd;
  return 0;
}

static int fdset_has(const fdset_t *set, int fd) {
  for (size_t i = 0; i < set->n; i++)
    if (set->fds[i] == fd)
      return 1;
  return 0;
}

/* Open descriptors >= 3 into set.  0 or -1. */
static int list_open_fds(fdset_t *set) {
  DIR *dir = opendir("/proc/self/fd");
  if (dir != NULL) {
    int self = dirfd(dir);
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(dir)) != NULL) {
      if (!isdigit((unsigned char)de->d_name[0]))
        continue;
      long fd = strtol(de->d_name, NULL, 10);
      if (fd >= 3 && fd != self && fd <= INT_MAX && fdset_add(set, (int)fd) != 0)
        rc = -1;
    }
    closedir(dir);
    return rc;
  }
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536)
    max = 65536;
  for (int fd = 3; fd < max; fd++)
    if (fcntl(fd, F_GETFD) != -1 && fdset_add(set, fd) != 0)
      return -1;
  return 0;
}

static void cloexec_new_fds(const fdset_t *inherited) {
  fdset_t now = {0};
  list_open_fds(&now);
  for (size_t i = 0; i < now.n; i++) {
    if (fdset_has(inherited, now.fds[i]))
      continue;
    int flags = fcntl(now.fds[i], F_GETFD);
    if (flags != -1 && !(flags & FD_CLOEXEC))
      fcntl(now.fds[i], F_SETFD, flags | FD_CLOEXEC);
  }
  free(now.fds);
}

int child_setup(fdset_t *inherited) {
  if (list_open_fds(inherited) != 0 || setup_signals() != 0) {
    err_msg("cannot set up: %s", strerror(errno));
    return EXIT_INTERNAL;
  }
  return 0;
}

/* ---- COMMAND's environment ------------------------------------------------------------ */

static int env_has_name(const char *entry, const char *name) {
  size_t len = strlen(name);
  return strncmp(entry, name, len) == 0 && entry[len] == '=';
}

static char *env_entry(const char *name, const char *value) {
  size_t len = strlen(name) + strlen(value) + 2;
  char *s = malloc(len);
  if (s != NULL)
    snprintf(s, len, "%s=%s", name, value);
  return s;
}

/* Never passed on to COMMAND: REDLOCK_NODES holds the masters' URIs, with
 * their passwords (docs/cli.md tells users to keep them there rather than on
 * command lines), and COMMAND needs no credentials of ours.  Removed rather
 * than passed with the passwords cut out: a URI without its password would
 * only make a nested redlock fail later, at AUTH, instead of saying at once
 * that no masters were given. */
static const char *const WITHHELD[] = {"REDLOCK_NODES"};
#define N_WITHHELD (sizeof WITHHELD / sizeof WITHHELD[0])

static int env_withheld(const char *entry, const char *const names[], size_t n) {
  for (size_t i = 0; i < n; i++)
    if (env_has_name(entry, names[i]))
      return 1;
  for (size_t i = 0; i < N_WITHHELD; i++)
    if (env_has_name(entry, WITHHELD[i]))
      return 1;
  return 0;
}

/* environ without names[0..n) and WITHHELD, then names[i]=values[i] for the
 * values given.  *owned (n entries) gets the malloc'ed ones.  NULL when out of
 * memory. */
static char **build_env(const char *const names[], const char *const values[], size_t n,
                        char *owned[]) {
  size_t count = 0;
  for (char **e = environ; *e != NULL; e++)
    count++;
  char **env = calloc(count + n + 1, sizeof *env);
  if (env == NULL)
    return NULL;
  size_t k = 0;
  for (char **e = environ; *e != NULL; e++)
    if (!env_withheld(*e, names, n))
      env[k++] = *e;
  int ok = 1;
  for (size_t i = 0; i < n; i++) {
    owned[i] = values[i] != NULL ? env_entry(names[i], values[i]) : NULL;
    ok &= values[i] == NULL || owned[i] != NULL;
  }
  if (!ok) {
    for (size_t i = 0; i < n; i++) {
      free(owned[i]);
      owned[i] = NULL;
    }
    free(env);
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    if (owned[i] != NULL)
      env[k++] = owned[i];
  env[k] = NULL;
  return env;
}

/* ---- COMMAND ------------------------------------------------------------------------------ */

static int spawn_command(const hold_opts_t *o, char **env, pid_t *pid) {
  posix_spawnattr_t attr;
  int rc = posix_spawnattr_init(&attr);
  if (rc != 0)
    return rc;
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (o->process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);
  posix_spawnattr_setsigmask(&attr, &g_orig_mask);
  sigset_t dfl = g_child_dfl;
  sigaddset(&dfl, SIGCHLD);
  posix_spawnattr_setsigdefault(&attr, &dfl);
  rc = posix_spawnp(pid, o->command[0], NULL, &attr, o->command, env);
  posix_spawnattr_destroy(&attr);
  return rc;
}

void command_signal(const hold_opts_t *o, pid_t pid, int sig) {
  if (o->process_group)
    kill(-pid, sig); /* the group, whose id is COMMAND's pid */
  else
    kill(pid, sig);
}

/* A signal the kernel sent to our whole process group (the terminal's ^C,
 * ^\, or SIGHUP when the session ends: SI_KERNEL) reached COMMAND too when it
 * shares our group, so it is not sent twice.  A session leader's SIGHUP on
 * hangup is its alone: passed on. */
static int should_forward(const hold_opts_t *o, const siginfo_t *info) {
  if (o->process_group)
    return 1;
#ifdef SI_KERNEL
  if (info->si_code == SI_KERNEL && !(info->si_signo == SIGHUP && getsid(0) == getpid()))
    return 0;
#else
  (void)info;
#endif
  return 1;
}

int command_start(const hold_opts_t *o, const char *const names[], const char *const values[],
                  size_t n, const fdset_t *inherited, pid_t *pid) {
  char *owned[8] = {NULL};
  char **env = n <= 8 ? build_env(names, values, n, owned) : NULL;
  if (env == NULL) {
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  cloexec_new_fds(inherited); /* reconnects may have opened new sockets */
  int rc = spawn_command(o, env, pid);
  for (size_t i = 0; i < n; i++)
    free(owned[i]);
  free(env);
  if (rc != 0) {
    err_msg("cannot run '%s': %s", o->command[0], strerror(rc));
    return rc == ENOENT || rc == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
  }
  return 0;
}

void command_forward(const hold_opts_t *o, pid_t pid, int sig, const siginfo_t *info) {
  if (should_forward(o, info)) {
    info_msg("passing %s on to '%s'", sig_name(sig), o->command[0]);
    command_signal(o, pid, sig);
  }
}

void stopper_term(stopper_t *s, const hold_opts_t *o, pid_t pid) {
  command_signal(o, pid, SIGTERM);
  s->term_sent = 1;
  s->kill_at = now_ms() + o->grace_ms;
}

int64_t stopper_tick(stopper_t *s, const hold_opts_t *o, pid_t pid) {
  if (!s->term_sent || s->kill_sent)
    return -1;
  uint64_t now = now_ms();
  if (now < s->kill_at)
    return (int64_t)(s->kill_at - now);
  err_msg("'%s' (pid %ld) still running %" PRIu64 " ms after SIGTERM; sending SIGKILL",
          o->command[0], (long)pid, o->grace_ms);
  command_signal(o, pid, SIGKILL);
  s->kill_sent = 1;
  return -1;
}

int exit_status_of(int wstatus) {
  if (WIFEXITED(wstatus))
    return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus))
    return 128 + WTERMSIG(wstatus);
  return EXIT_INTERNAL;
}
