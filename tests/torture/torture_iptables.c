/* torture_iptables.c: the torture driver's iptables DROP fault (see
 * torture_iptables.h).  Everything here runs from the signal handlers and
 * the watchdog too, so the rules are added and removed with fork + execv +
 * waitpid, never popen or stdio, except in the sweep and the probe at the
 * start. */
#define _GNU_SOURCE
#include "torture_iptables.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char ipt_path[256];
static int ipt_ok;
static char ipt_comment[64];
static char ipt_port[TORTURE_MASTERS][16];
static volatile sig_atomic_t ipt_active[TORTURE_MASTERS];

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
  char *argv[] = {ipt_path,  "-w",        "5",         (char *)op, "INPUT",      "-i",
                  "lo",      "-p",        "tcp",       "--dport",  (char *)port, "-m",
                  "comment", "--comment", ipt_comment, "-j",       "DROP",       NULL};
  return run_argv(argv, quiet);
}

int ipt_add(int m) {
  if (ipt_rule("-I", ipt_port[m], 0) != 0)
    return -1;
  ipt_active[m] = 1;
  return 0;
}

int ipt_del(int m) {
  int rc = ipt_rule("-D", ipt_port[m], 0);
  ipt_active[m] = 0;
  return rc == 0 ? 0 : -1;
}

void ipt_cleanup(void) {
  if (!ipt_ok)
    return;
  for (int m = 0; m < TORTURE_MASTERS; m++) {
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
unsigned long long proc_start_time(long pid) {
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

void ipt_probe(int disabled) {
  if (disabled) {
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

void ipt_init(const char *comment) { snprintf(ipt_comment, sizeof ipt_comment, "%s", comment); }

void ipt_set_port(int m, int port) { snprintf(ipt_port[m], sizeof ipt_port[m], "%d", port); }

int ipt_usable(void) { return ipt_ok; }

int ipt_is_active(int m) { return ipt_active[m] != 0; }
