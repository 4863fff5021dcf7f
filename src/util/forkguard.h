/* forkguard.h: does this process still own the client, or is it a child
 * forked after the client was opened?  Asked by every public call, so it
 * must be cheap: getpid() is a system call since glibc 2.25.  Each client
 * gets one page of its own that the kernel hands a forked child zeroed
 * (MADV_WIPEONFORK, Linux >= 4.14, as OpenSSL's and BoringSSL's RNGs use):
 * one memory read, and no process-wide state (no pthread_atfork counter).
 * Where the advice is not supported, the guard falls back to the pid. */
#ifndef REDLOCK_FORKGUARD_H
#define REDLOCK_FORKGUARD_H

#include <stddef.h>
#include <sys/types.h>

typedef struct fork_guard {
  volatile const int *page; /* 1 in the owner; 0 in a child (wiped); NULL: use pid */
  size_t len;
  pid_t pid;
} fork_guard_t;

/* In the process that opens the client. */
void fork_guard_init(fork_guard_t *g);
/* 1 when this process forked off the one that ran fork_guard_init. */
int fork_guard_forked(const fork_guard_t *g);
/* In the owner only (a child leaves the parent's client alone). */
void fork_guard_free(fork_guard_t *g);

#endif
