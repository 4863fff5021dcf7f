/* oom_alloc.h: a failing allocator for the c-ares style out-of-memory tests
 * (tests/integration/test_oom.c, tests/unit/test_client_oom.c): armed with
 * k, it lets k - 1 allocations through and fails the k-th, so that a test
 * can fail each allocation of a call in turn.
 *
 * What it fails:
 *  - the library's own allocations, through its allocator table
 *    (redlock_set_allocator, in oom_install);
 *  - libuv's, through uv_replace_allocator (oom_install), except its
 *    realloc: libuv grows its table of watched descriptors with it
 *    (uv__io_start) and aborts when that fails (docs/api.md, "Out of
 *    memory"), so those are counted apart (oom_uv_reallocs) and never
 *    failed;
 *  - hiredis 1.x's, through hiredisSetAllocators, except while the calling
 *    thread's oom_spared is set: those are counted apart
 *    (oom_spared_allocs).  hiredis 0.14 allocates with plain malloc from its
 *    shared library: those cannot be failed.
 *
 * Counted: every allocation made while armed, on any thread whose
 * oom_exempt is 0.  oom_install exempts the calling thread (the test's):
 * OOM_CALL clears that around the call under test, so that the test's own
 * allocations never count, the library's on any of its threads always do.
 * A thread of the test sets its own oom_exempt. */
#ifndef REDLOCK_TEST_OOM_ALLOC_H
#define REDLOCK_TEST_OOM_ALLOC_H

/* Set on a thread: its allocations are neither counted nor failed. */
extern _Thread_local int oom_exempt;
/* Set on a thread: hiredis 1.x's allocations are not failed (counted in
 * oom_spared_allocs while armed). */
extern _Thread_local int oom_spared;

/* Replaces the library's, libuv's and hiredis 1.x's allocators (before any
 * client or loop exists) and exempts the calling thread.  alarm_s > 0: a call still armed after
 * that many seconds ends the process (exit status 3) with the `where` of
 * its oom_arm, so that a hang names its case. */
void oom_install(unsigned alarm_s);

/* Arms: the k-th counted allocation from now fails (k >= 1), and every
 * counter restarts.  where: the case, for the alarm's message. */
void oom_arm(unsigned k, const char *where);
/* Disarms; 1 when an allocation was failed since oom_arm. */
int oom_disarm(void);

/* Since the last oom_arm: allocations counted (the failed one included),
 * libuv reallocs let through, hiredis allocations spared. */
unsigned long oom_counted(void);
unsigned long oom_uv_reallocs(void);
unsigned long oom_spared_allocs(void);

/* The library call under test, its allocations on this thread counted. */
#define OOM_CALL(expr)                                                                             \
  do {                                                                                             \
    oom_exempt = 0;                                                                                \
    expr;                                                                                          \
    oom_exempt = 1;                                                                                \
  } while (0)

#endif
