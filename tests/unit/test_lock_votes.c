/* test_lock_votes.c: redlock_last_votes describes the calling thread's own
 * last call, on a client over fake masters (engine_fixture.h).
 * Two application threads make calls in turn; the test thread runs the loop
 * and answers for the masters.  Each thread then reads its own call's votes,
 * not the other's, which was decided later; a thread that made no call reads
 * the client's latest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine_fixture.h"

#define TTL_MS 3000

/* A thread that runs one job at a time for the test thread and stays alive,
 * so that the two keep distinct thread identities (a joined thread's may be
 * reused by the next one). */
typedef struct worker {
  uv_thread_t thread;
  uv_sem_t go, done;
  void (*job)(struct worker *w);
  engine_fx_t *e;
  lock_result_t result;
  char votes[512];
  int quit;
} worker_t;

static void worker_main(void *arg) {
  worker_t *w = arg;
  for (;;) {
    uv_sem_wait(&w->go);
    if (w->quit)
      return;
    w->job(w);
    uv_sem_post(&w->done);
  }
}

static void worker_start(worker_t *w, engine_fx_t *e) {
  memset(w, 0, sizeof *w);
  w->e = e;
  assert_int_equal(uv_sem_init(&w->go, 0), 0);
  assert_int_equal(uv_sem_init(&w->done, 0), 0);
  assert_int_equal(uv_thread_create(&w->thread, worker_main, w), 0);
}

static void worker_run(worker_t *w, void (*job)(worker_t *w)) {
  w->job = job;
  uv_sem_post(&w->go);
  uv_sem_wait(&w->done);
}

static void worker_stop(worker_t *w) {
  w->quit = 1;
  uv_sem_post(&w->go);
  uv_thread_join(&w->thread);
  uv_sem_destroy(&w->go);
  uv_sem_destroy(&w->done);
}

static void job_lock(worker_t *w) {
  assert_int_equal(redlock_lock_async(w->e->client, "r", TTL_MS, 0, on_lock, &w->result), 0);
}

static void job_read_votes(worker_t *w) {
  assert_true(redlock_last_votes(w->e->client, w->votes, sizeof w->votes) > 0);
}

static int starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_votes_per_thread(void **state) {
  (void)state;
  engine_fx_t *e = engine_open_default();
  fake_transport_t *f = &e->fake;
  worker_t a, b;
  worker_start(&a, e);
  worker_start(&b, e);

  worker_run(&a, job_lock); /* a's call: won */
  fake_pump();
  fake_reply_ok_all(f);
  assert_int_equal(a.result.calls, 1);
  assert_int_equal(a.result.status, REDLOCK_OK);

  worker_run(&b, job_lock); /* b's call, later: held by a */
  fake_pump();
  for (unsigned i = 0; i < ENGINE_MASTERS; i++)
    fake_reply_nil(f, i);
  assert_int_equal(b.result.calls, 1);
  assert_int_equal(b.result.status, REDLOCK_ELOCKED);
  fake_reply_int_all(f, 0); /* b's clean-up release */
  assert_int_equal(fake_outstanding_all(f), 0);

  worker_run(&a, job_read_votes);
  worker_run(&b, job_read_votes);
  assert_true(starts_with(a.votes, "won:"));
  assert_true(starts_with(b.votes, "lost (held):"));
  assert_non_null(strstr(a.votes, "=OK"));
  assert_non_null(strstr(b.votes, "=refused"));

  /* The test thread made no call: the client's latest (b's). */
  char mine[512];
  assert_true(redlock_last_votes(e->client, mine, sizeof mine) > 0);
  assert_string_equal(mine, b.votes);

  worker_stop(&a);
  worker_stop(&b);
  engine_release(e, a.result.lock);
  engine_close(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_votes_per_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
