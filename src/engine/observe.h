/* observe.h: who leads an election (observe.c): redlock_election_leader's
 * op (one read round, inspect.c's) and the observers of
 * redlock_election_observe.  The public calls (calls.c,
 * calls_election.c) check their arguments and the client's state and queue
 * the ops made here; everything else runs on the loop thread. */
#ifndef REDLOCK_OBSERVE_H
#define REDLOCK_OBSERVE_H

#include <stdint.h>
#include <uv.h>

#include "engine/engine.h"
#include "engine/op.h"
#include "redlock.h"
#include "util/status.h"

/* redlock_election_leader's op: *out is written on the loop before
 * cb(status, arg) runs.  ST_OK or ST_ENOMEM (nothing queued). */
status_t leader_op_new(op_t **out, engine_t *engine, const char *name, redlock_leader_t *view,
                       redlock_done_cb cb, void *arg);

/* A new observer (any thread; arguments already checked): not yet known to
 * the loop.  poll_ms 0: the client's retry delay.  ST_OK or ST_ENOMEM. */
status_t observer_new(engine_t *engine, const char *name, uint32_t poll_ms,
                      redlock_leader_cb on_change, void *arg, redlock_observer_t **out);
/* Frees an observer the loop never took (its submission was refused). */
void observer_free(redlock_observer_t *o);
/* Its start op, to queue once. */
op_t *observer_start_op(redlock_observer_t *o);
/* Its stop op, to queue once, under the client's mutex.  done: posted when
 * the loop has taken it (a caller off the loop thread waits on it); NULL on
 * the loop thread, where no callback of the observer runs from now on. */
op_t *observer_stop_op(redlock_observer_t *o, uv_sem_t *done);
/* Close: every observer stops (no callback runs any more) and is freed,
 * at once or when its read in flight is decided. */
void observer_close_all(engine_t *engine);

#endif
