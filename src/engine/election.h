/* election.h: leader election on the lock engine (election.c).  The public
 * calls (calls_election.c) check their arguments and the client's state and
 * queue the ops made here; everything else runs on the loop thread. */
#ifndef REDLOCK_ELECTION_H
#define REDLOCK_ELECTION_H

#include <stdint.h>
#include <uv.h>

#include "engine/engine.h"
#include "engine/op.h"
#include "redlock.h"
#include "util/status.h"

/* A new election handle (any thread; arguments already checked): not yet
 * known to the loop.  ST_OK or ST_ENOMEM. */
status_t election_new(engine_t *engine, const char *name, uint32_t ttl_ms,
                      redlock_elected_cb on_elected, redlock_election_lost_cb on_lost, void *arg,
                      redlock_election_t **out);
/* Frees a handle the loop never took (its submission was refused). */
void election_free(redlock_election_t *e);
/* Its OP_ELECT, to queue once. */
op_t *election_start_op(redlock_election_t *e);
/* Its OP_RESIGN, to queue once, under the client's mutex.  done: posted when
 * the loop has taken it (a caller off the loop thread waits on it); NULL on
 * the loop thread, where no callback of the election runs from now on. */
op_t *election_resign_op(redlock_election_t *e, uv_sem_t *done);
/* Close: every election stops (no callback runs any more), leaders release. */
void election_close_all(engine_t *engine);
/* Bounds every term of a new handle (before its start op is queued):
 * max_hold_ms after a term's grant its lease is released and on_lost runs
 * with REDLOCK_LOST_MAX_HOLD; 0: unbounded. */
void election_set_max_hold(redlock_election_t *e, uint32_t max_hold_ms);

#endif
