/* redlock_uv.h: attach a redlock client to a caller's libuv loop.
 *
 * With redlock_open_uv() the client starts no thread: its connections, timers
 * and callbacks all run on the caller's loop, which the caller runs.  Blocking
 * calls (redlock_lock, redlock_unlock, ...) return REDLOCK_EWOULDBLOCK on such
 * a client; use the *_async forms.  The async calls may still be made from any
 * thread (they are handed to the loop through a uv_async_t).
 */
#ifndef REDLOCK_UV_H
#define REDLOCK_UV_H

#include <uv.h>

#include "redlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a client on `loop` and starts connecting.  Calls made before the
 * masters have answered wait (up to the connect timeout) for the first
 * connection attempts to finish.  The loop must outlive the client. */
REDLOCK_EXPORT int redlock_open_uv(redlock_t **out, const redlock_options_t *opts, uv_loop_t *loop);

/* Starts an orderly close: pending calls end with REDLOCK_ECANCELED, held
 * locks are released (bounded by the request timeout), every handle of the
 * client is closed, then closed(arg) runs on the loop and the client is freed.
 * Returns at once; call it from the loop's thread.  closed may be NULL. */
REDLOCK_EXPORT void redlock_close_uv(redlock_t *client, void (*closed)(void *arg), void *arg);

#ifdef __cplusplus
}
#endif
#endif /* REDLOCK_UV_H */
