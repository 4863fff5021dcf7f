/* fixture_call.c: a blocking acquisition made in a thread of its own (see
 * fixture.h), for tests where the main thread must act (release, pause a
 * master) while a waiter waits: the thread records when the call started
 * and returned and posts an event the test waits on with a deadline. */
#include "fixture.h"

#include <string.h>

static void *call_main(void *arg) {
  fx_call_t *c = arg;
  c->t_start = rh_now_ms();
  fx_event_post(&c->started);
  c->rc = c->fn(c);
  c->t_done = rh_now_ms();
  fx_event_post(&c->done);
  return NULL;
}

void fx_call_start(fx_call_t *c) {
  c->rc = 1;
  c->lock = NULL;
  c->t_start = c->t_done = 0;
  fx_event_init(&c->started);
  fx_event_init(&c->done);
  assert_int_equal(pthread_create(&c->thread, NULL, call_main, c), 0);
  assert_true(fx_event_wait(&c->started, 5000));
}

int fx_call_join(fx_call_t *c, int timeout_ms) {
  int done = fx_event_wait(&c->done, timeout_ms);
  /* It ends by its wait budget at the latest: let it, before any failure
   * unwinds the frame the thread writes into. */
  if (!done)
    fx_event_wait(&c->done, (int)c->wait_ms + 10000);
  pthread_join(c->thread, NULL);
  fx_event_destroy(&c->started);
  fx_event_destroy(&c->done);
  return done;
}

int fx_call_lock_wait(fx_call_t *c) {
  return redlock_lock_wait(c->client, c->name, c->ttl_ms, c->wait_ms, &c->lock);
}

int fx_call_semaphore(fx_call_t *c) {
  return redlock_semaphore_acquire(c->client, c->name, c->limit, c->ttl_ms, c->wait_ms, &c->lock);
}

int fx_call_rwlock(fx_call_t *c) {
  return c->write ? redlock_rwlock_write(c->client, c->name, c->ttl_ms, c->wait_ms, &c->lock)
                  : redlock_rwlock_read(c->client, c->name, c->ttl_ms, c->wait_ms, &c->lock);
}
