/* revoke.h: redlock_revoke's op (revoke.c): ends the current hold of a lock
 * on a quorum whatever its value, and raises its fence counter above every
 * token granted so far. */
#ifndef REDLOCK_REVOKE_H
#define REDLOCK_REVOKE_H

#include <stdint.h>

#include "engine/engine.h"
#include "engine/op.h"
#include "redlock.h"

/* The op for resource (checked by the caller): *fence_out (may be NULL)
 * gets the raised fence, 0 when the key is not fenced, before cb(status,
 * arg) runs on the loop.  ST_OK or ST_ENOMEM (nothing queued). */
status_t revoke_op_new(op_t **out, engine_t *engine, const char *resource, uint64_t *fence_out,
                       redlock_done_cb cb, void *arg);

#endif
