/* cli_child.h: starting and watching COMMAND, for `run` and `elect`.
 *
 * Threads and signals: the main thread blocks SIGCHLD and the signals it
 * forwards, and waits for them with sigtimedwait(); the library's I/O thread
 * (which blocks every signal) wakes it with wake_main() (pthread_kill
 * SIGCHLD) after it has set a flag (lock granted, lock lost, elected).
 * COMMAND is started with posix_spawnp() (no fork in a threaded process)
 * with the original signal mask, in our process group (or its own with
 * --process-group).
 *
 * Descriptors open when redlock started belong to COMMAND (as with
 * flock(1), `redlock run ... 3>file` works); those the library opened since
 * (hiredis sockets) are marked close-on-exec before COMMAND starts. */
#ifndef REDLOCK_CLI_CHILD_H
#define REDLOCK_CLI_CHILD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli_hold.h"

/* ---- signals and wake-ups ---------------------------------------------------------- */

/* Wakes the main thread from wait_signal (any thread). */
void wake_main(void);
/* Waits for a signal of the set child_setup blocked, at most timeout_ms
 * (< 0: no limit).  Returns the signal, or 0 on timeout. */
int wait_signal(int64_t timeout_ms, siginfo_t *info);
/* 1 for a signal passed on to COMMAND (and that aborts a wait). */
int is_forwarded(int sig);
const char *sig_name(int sig);
uint64_t now_ms(void);

/* ---- descriptors ------------------------------------------------------------------------ */

typedef struct fdset {
  int *fds;
  size_t n, cap;
} fdset_t;

/* Before redlock_open: records the descriptors COMMAND inherits and blocks
 * the signals (threads started later inherit the mask).  0, or
 * EXIT_INTERNAL with a message. */
int child_setup(fdset_t *inherited);

/* ---- COMMAND ------------------------------------------------------------------------------ */

/* Starts o->command with environ minus the variables names[0..n) and
 * REDLOCK_NODES (it may hold passwords: COMMAND never sees it), plus
 * names[i]=values[i] for each values[i] that is not NULL (in that order).
 * Descriptors opened since child_setup are closed for it.  0, or an exit
 * status with a message (EXIT_INTERNAL, EXIT_NOT_FOUND, EXIT_CANNOT_EXEC). */
int command_start(const hold_opts_t *o, const char *const names[], const char *const values[],
                  size_t n, const fdset_t *inherited, pid_t *pid);

/* Sends sig to COMMAND (its whole group with --process-group). */
void command_signal(const hold_opts_t *o, pid_t pid, int sig);
/* Passes a forwarded signal on to COMMAND unless it reached it already
 * (see should_forward in cli_child.c). */
void command_forward(const hold_opts_t *o, pid_t pid, int sig, const siginfo_t *info);

/* SIGTERM, then SIGKILL after --grace: the end of a COMMAND that lost its
 * lock or its term. */
typedef struct {
  int term_sent, kill_sent;
  uint64_t kill_at;
} stopper_t;

/* Sends SIGTERM now (the caller said why). */
void stopper_term(stopper_t *s, const hold_opts_t *o, pid_t pid);
/* Sends SIGKILL when the grace ran out.  Returns how long wait_signal may
 * wait before the next check: ms, or -1 (nothing pending). */
int64_t stopper_tick(stopper_t *s, const hold_opts_t *o, pid_t pid);

/* The exit status that tells COMMAND's end (128+N for signal N). */
int exit_status_of(int wstatus);

#endif
