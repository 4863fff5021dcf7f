/* test_forkguard.c: a forked child is told apart from the process that
 * opened the client (the fork guard, api/client.h), through the wiped page and through
 * the pid fallback of kernels without MADV_WIPEONFORK. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/client.h"
#include "unit_support.h"

/* What fork_guard_forked says in a child: its exit status. */
static int forked_in_child(const fork_guard_t *g) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    _exit(fork_guard_forked(g));
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static void test_guard(void **state) {
  (void)state;
  fork_guard_t g;
  fork_guard_init(&g);
  assert_int_equal(fork_guard_forked(&g), 0);
  assert_int_equal(forked_in_child(&g), 1);
  assert_int_equal(fork_guard_forked(&g), 0); /* the owner's page is untouched */
  fork_guard_free(&g);
}

/* Without the advice: the pid it was made in. */
static void test_pid_fallback(void **state) {
  (void)state;
  fork_guard_t g = {.page = NULL, .len = 0, .pid = getpid()};
  assert_int_equal(fork_guard_forked(&g), 0);
  assert_int_equal(forked_in_child(&g), 1);
  fork_guard_free(&g);
}

UNIT_MAIN(cmocka_unit_test(test_guard), cmocka_unit_test(test_pid_fallback))
