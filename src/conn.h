/* conn.h: opening a hiredis async connection to a master on a libuv loop,
 * shared by the command connection (node.c) and the release-notification
 * subscriber (notify.c). */
#ifndef REDLOCK_CONN_H
#define REDLOCK_CONN_H

#include <hiredis/async.h>
#include <stddef.h>
#include <uv.h>

#include "uri.h"

/* Starts a non-blocking connect, attaches it to loop and sets the callbacks;
 * ac->data = data.  NULL on failure, with the reason in err. */
redisAsyncContext *conn_open(const node_addr_t *addr, uv_loop_t *loop, void *data,
                             redisConnectCallback *on_connect,
                             redisDisconnectCallback *on_disconnect, char *err, size_t err_len);

/* Queues AUTH when the address has credentials.  Returns the number of
 * commands queued (0 or 1), or -1. */
int conn_queue_auth(redisAsyncContext *ac, const node_addr_t *addr, redisCallbackFn *cb,
                    void *privdata);

/* Detaches `data` and frees the context (deferred by hiredis when called
 * from one of its callbacks); pending callbacks get NULL replies. */
void conn_close(redisAsyncContext *ac);

#endif
