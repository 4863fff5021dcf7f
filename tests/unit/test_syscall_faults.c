/* test_syscall_faults.c: what the library does when a system call it relies
 * on fails: random.c when getrandom() does (ST_EIO from every way to a lock
 * value), client.c's fork guard when madvise(MADV_WIPEONFORK) does (the guard falls
 * back to the pid).  Each case runs in a child that makes the call fail with
 * a seccomp filter (an errno, no signal) and exits with what it found; the
 * child exits normally, so a --coverage build keeps what it ran.  Where
 * seccomp filters cannot be installed the case is skipped. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/client.h"
#include "unit_support.h"
#include "util/random.h"

#define CHILD_NO_SECCOMP 77

/* From now on, system call nr fails with err in this process. */
static int deny(long nr, int err) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* Runs check() in a child where nr fails with err; its result (0: as
 * expected, else which check failed), or skips the test. */
static int in_child_denied(long nr, int err, int (*check)(void)) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    exit(deny(nr, err) != 0 ? CHILD_NO_SECCOMP : check());
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == CHILD_NO_SECCOMP)
    skip();
  return WEXITSTATUS(status);
}

static int random_fails(void) {
  unsigned char raw[8];
  char value[RANDOM_VALUE_LEN + 1];
  random_pool_t pool = {0};
  if (random_bytes(raw, sizeof raw) != ST_EIO)
    return 1;
  if (random_lock_value(value) != ST_EIO)
    return 2;
  if (random_pool_lock_value(&pool, value) != ST_EIO)
    return 3;
  return 0;
}

static void test_getrandom_fails(void **state) {
  (void)state;
  assert_int_equal(in_child_denied(SYS_getrandom, EIO, random_fails), 0);
}

static int guard_by_pid(void) {
  fork_guard_t g;
  fork_guard_init(&g);
  int result = g.page != NULL ? 1 : fork_guard_forked(&g) != 0 ? 2 : 0;
  fork_guard_free(&g);
  return result;
}

/* Sanitizers release memory with madvise themselves: not under them. */
static void test_madvise_fails(void **state) {
  (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  skip();
#endif
  assert_int_equal(in_child_denied(SYS_madvise, EINVAL, guard_by_pid), 0);
}

UNIT_MAIN(cmocka_unit_test(test_getrandom_fails), cmocka_unit_test(test_madvise_fails))
