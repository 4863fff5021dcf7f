/* torture_cases.c: hand-made histories for the torture checker (see
 * torture_cases.h).  Times in ns; the bound of each call is in ms. */
#define _GNU_SOURCE /* clock_gettime in torture_common.h under -std=c11 */
#include "torture_cases.h"

#include <string.h>

#include "torture_common.h"

/* Two grants of r0 by worker 0: [1000, 2000] and [3000, 4000] unless a case
 * says otherwise. */
#define CALLS                                                                                      \
  "C lock 0 0 0 1000 0 980\nC unlock 0 0 2000 2100 0 100\n"                                        \
  "C lock 0 1 2500 3000 0 980\nC unlock 0 1 4000 4100 0 100\n"
#define SUMMARY "S 0 100 100 0 4 2 10 10 10 0\n"
#define G3(a, b, c)                                                                                \
  "G 0 0 0 " a "0 5 0 1000 900000\nU 0 0 0 2000 0\n"                                               \
  "G 0 1 0 " b "0 6 0 1500 900000\nU 0 1 0 2500 0\n"                                               \
  "G 0 2 0 " c "0 7 0 1800 900000\nU 0 2 0 3000 0\n"

const tc_case_t tc_cases[] = {
    {PRIM_LOCK, "clean: two holds in turn, rising tokens",
     CALLS "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n"
           "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
     0},
    {PRIM_LOCK, "clean: a late-recorded grant with an empty window",
     /* grant A read at 5000, its validity ended at 4000: empty
      * window; B's call began before A's grant was seen. */
     "C lock 0 0 0 5000 0 980\nC lock 0 1 4500 4600 0 980\n"
     "G 0 0 0 r0 10 0 5000 4000\nU 0 0 0 5100 0\n"
     "G 0 1 0 r0 11 4500 4600 900000\nU 0 1 0 4700 0\n" SUMMARY,
     0},
    {PRIM_LOCK, "caught: overlapping holds",
     CALLS "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 3500 0\n"
           "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
     1},
    {PRIM_LOCK, "caught: overlap through an extension",
     CALLS "G 0 0 0 r0 10 0 1000 2000\nE 0 0 0 900000\nU 0 0 0 3500 0\n"
           "G 0 1 0 r0 11 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
     1},
    {PRIM_LOCK, "caught: tokens falling in grant order",
     CALLS "G 0 0 0 r0 11 0 1000 900000\nU 0 0 0 2000 0\n"
           "G 0 1 0 r0 10 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
     1},
    {PRIM_LOCK, "caught: equal tokens",
     CALLS "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n"
           "G 0 1 0 r0 10 2500 3000 900000\nU 0 1 0 4000 0\n" SUMMARY,
     1},
    {PRIM_LOCK, "caught: call after a grant, smaller token (empty window)",
     "C lock 0 0 0 1000 0 980\nC lock 0 1 1500 1600 0 980\n"
     "G 0 0 0 r0 11 0 1000 900\nU 0 0 0 1100 0\n"
     "G 0 1 0 r0 10 1500 1600 900000\nU 0 1 0 1700 0\n" SUMMARY,
     1},
    {PRIM_LOCK, "caught: a call beyond its bound + slack",
     "C unlock 0 0 0 999000000000 0 100\n"
     "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n" SUMMARY,
     1},
    {PRIM_LOCK, "caught: a grant without a token",
     "G 0 0 0 r0 0 0 1000 900000\nU 0 0 0 2000 0\n" SUMMARY, 1},
    {PRIM_LOCK, "caught: no summary line (unclean exit)",
     "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\n", 1},
    {PRIM_LOCK, "caught: the worker's own failure report",
     "G 0 0 0 r0 10 0 1000 900000\nU 0 0 0 2000 0\nF 0 unexpected rc\n" SUMMARY, 1},
    {PRIM_LOCK, "caught: no grant at all (no progress)", SUMMARY, 1},
    /* The primitives: permits of s0 (limit 2), holds of rw0, terms of e0.
     * Three windows: [1000, 2000], [1500, 2500], [1800, 3000]. */
    {PRIM_SEMAPHORE, "clean: two permits at once, limit 2",
     "G 0 0 0 s0 5 0 1000 900000\nU 0 0 0 2000 0\n"
     "G 0 1 0 s0 5 0 1500 900000\nU 0 1 0 2500 0\n"
     "G 0 2 0 s0 3 0 2000 900000\nU 0 2 0 3000 0\n" SUMMARY,
     0},
    {PRIM_SEMAPHORE, "caught: three permits at once, limit 2", G3("s", "s", "s") SUMMARY, 1},
    {PRIM_SEMAPHORE, "caught: three permits through an extension",
     "G 0 0 0 s0 5 0 1000 1400\nE 0 0 0 900000\nU 0 0 0 2000 0\n"
     "G 0 1 0 s0 5 0 1500 900000\nU 0 1 0 2500 0\n"
     "G 0 2 0 s0 3 0 1800 900000\nU 0 2 0 3000 0\n" SUMMARY,
     1},
    {PRIM_RWLOCK, "clean: readers share, a writer after them",
     G3("R", "R", "R") "G 0 3 0 W0 9 0 3000 900000\nU 0 3 0 3500 0\n"
                       "G 0 3 1 R0 9 0 3500 900000\nU 0 3 1 3600 0\n" SUMMARY,
     0},
    {PRIM_RWLOCK, "caught: a writer overlapping a reader", G3("R", "W", "R") SUMMARY, 1},
    {PRIM_RWLOCK, "caught: two writers overlapping",
     "G 0 0 0 W0 5 0 1000 900000\nU 0 0 0 2000 0\n"
     "G 0 1 0 W0 6 0 1500 900000\nU 0 1 0 2500 0\n"
     "G 0 2 0 R0 6 0 2600 900000\nU 0 2 0 2700 0\n" SUMMARY,
     1},
    {PRIM_RWLOCK, "caught: write tokens not rising",
     "G 0 0 0 W0 6 0 1000 900000\nU 0 0 0 2000 0\n"
     "G 0 1 0 W0 6 0 2500 900000\nU 0 1 0 3000 0\n"
     "G 0 2 0 R0 6 0 3600 900000\nU 0 2 0 3700 0\n" SUMMARY,
     1},
    {PRIM_ELECTION, "clean: terms in turn, rising",
     "G 0 0 0 e0 5 0 1000 900000\nU 0 0 0 2000 0\n"
     "G 0 1 0 e0 6 0 2000 2900\nE 0 1 0 3100\nU 0 1 0 3500 -6\n"
     "G 0 0 1 e0 7 3500 4000 900000\nU 0 0 1 4500 0\n" SUMMARY,
     0},
    {PRIM_ELECTION, "caught: two leaders at once",
     "G 0 0 0 e0 5 0 1000 900000\nU 0 0 0 2000 0\n"
     "G 0 1 0 e0 6 0 1500 900000\nU 0 1 0 2500 0\n" SUMMARY,
     1},
    {PRIM_ELECTION, "caught: two leaders through a sampled validity",
     "G 0 0 0 e0 5 0 1000 1200\nE 0 0 0 1800\nU 0 0 0 2500 -6\n"
     "G 0 1 0 e0 6 1300 1500 900000\nU 0 1 0 2500 0\n" SUMMARY,
     1},
    {PRIM_ELECTION, "caught: a term not above the previous one",
     "G 0 0 0 e0 6 0 1000 900000\nU 0 0 0 2000 0\n"
     "G 0 1 0 e0 6 0 2500 900000\nU 0 1 0 3000 0\n" SUMMARY,
     1},
    {PRIM_ELECTION, "caught: no term at all (no progress)",
     "G 0 0 0 r0 5 0 1000 900000\nU 0 0 0 2000 0\n" SUMMARY, 1},
};
#undef G3
#undef CALLS
#undef SUMMARY

const size_t tc_n_cases = sizeof tc_cases / sizeof tc_cases[0];

tc_history_t *tc_case_run(const tc_case_t *c, unsigned slack_ms) {
  tc_config_t cfg = {.workers = 2,
                     .threads = 2,
                     .resources = 1,
                     .primitive = c->primitive,
                     .sem_limit = 2,
                     .slack_ms = slack_ms};
  tc_history_t *h = tc_new(&cfg);
  if (h == NULL)
    return NULL;
  /* Worker 0 has the case's records, worker 1 only a clean summary line;
   * both exited 0. */
  char line[1024];
  for (const char *p = c->history; *p != '\0';) {
    size_t len = strcspn(p, "\n");
    if (len >= sizeof line)
      len = sizeof line - 1;
    memcpy(line, p, len);
    line[len] = '\0';
    tc_add_record(h, 0, line);
    p += strcspn(p, "\n");
    p += *p == '\n';
  }
  tc_add_record(h, 1, "S 1 100 100 0 0 0 10 10 10 0");
  if (tc_check(h) < 0) {
    tc_free(h);
    return NULL;
  }
  return h;
}
