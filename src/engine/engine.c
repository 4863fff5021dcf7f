/* engine.c: the engine's own state (engine.h) and its close: elections
 * and observers, then acquisitions and watches, then the held locks, a window at a time. */
#include "engine/engine.h"

#include "engine/election.h"
#include "engine/lock.h"
#include "engine/observe.h"

status_t engine_init(engine_t *engine) {
  list_init(&engine->ops_in_flight);
  list_init(&engine->held_locks);
  list_init(&engine->reentrant_leases);
  list_init(&engine->elections);
  ptrset_init(&engine->live_locks);
  ptrset_init(&engine->live_elections);
  list_init(&engine->observers);
  ptrset_init(&engine->live_observers);
  idmap_init(&engine->calls);
  engine->last_call_id = 0;
  list_init(&engine->cancels);
  engine->closing = 0;
  return callmem_init(&engine->callmem, sizeof(struct redlock_lock));
}

void engine_free(engine_t *engine) {
  ptrset_free(&engine->live_locks);
  ptrset_free(&engine->live_elections);
  ptrset_free(&engine->live_observers);
  idmap_free(&engine->calls);
  callmem_free(&engine->callmem);
}

void engine_begin_close(engine_t *engine) {
  engine->closing = 1;
  /* Elections first: their campaigns are canceled without a callback and
   * their leases released before the generic clean-up below sees them. */
  election_close_all(engine);
  observer_close_all(engine); /* no callback of theirs runs any more */
  lock_cancel_all(engine);
}

void engine_run_cancels(engine_t *engine) { lock_run_cancels(engine); }

int engine_release_held(engine_t *engine) { return lock_release_held(engine); }

int engine_busy(const engine_t *engine) { return !list_empty(&engine->ops_in_flight); }
