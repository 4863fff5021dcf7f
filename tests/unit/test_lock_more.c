/* test_lock_more.c: placeholder */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine_fixture.h"

static void test_nothing(void **state) { (void)state; }

int main(void) {
  const struct CMUnitTest tests[] = {ENGINE_TEST(test_nothing)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
