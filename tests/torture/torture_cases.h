/* torture_cases.h: hand-made histories for the torture checker
 * (torture_check.h), clean ones that must pass and one per rule that must be
 * caught.  A checker that never fails proves nothing: `torture --selftest`
 * (ctest torture_selftest) and the unit test test_torture_check both run
 * them. */
#ifndef TORTURE_CASES_H
#define TORTURE_CASES_H

#include <stddef.h>

#include "torture_check.h"

typedef struct {
  int primitive;       /* PRIM_*: the run's --primitive */
  const char *name;    /* "clean: ..." or "caught: ..." */
  const char *history; /* worker 0's records, one a line */
  int must_fail;       /* 1: the checker must find a violation */
} tc_case_t;

extern const tc_case_t tc_cases[];
extern const size_t tc_n_cases;

/* Checks one case: 2 workers x 2 threads, 1 resource, semaphore limit 2;
 * worker 0 wrote c->history, worker 1 only a clean summary line, and both
 * exited 0.  Returns the checker after tc_check (tc_free it), or NULL when
 * out of memory. */
tc_history_t *tc_case_run(const tc_case_t *c, unsigned slack_ms);

#endif
