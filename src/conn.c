/* conn.c: hiredis async connections on a libuv loop (see conn.h). */
#include "conn.h"

#include <hiredis/hiredis.h>
#include <stdio.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <hiredis/adapters/libuv.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

redisAsyncContext *conn_open(const node_addr_t *addr, uv_loop_t *loop, void *data,
                             redisConnectCallback *on_connect,
                             redisDisconnectCallback *on_disconnect, char *err, size_t err_len) {
  redisAsyncContext *ac = addr->kind == NODE_ADDR_UNIX ? redisAsyncConnectUnix(addr->path)
                                                       : redisAsyncConnect(addr->host, addr->port);
  if (ac == NULL) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  if (ac->err) {
    snprintf(err, err_len, "%s", ac->errstr);
    redisAsyncFree(ac);
    return NULL;
  }
  if (redisLibuvAttach(ac, loop) != REDIS_OK) {
    snprintf(err, err_len, "cannot attach to the libuv loop");
    redisAsyncFree(ac);
    return NULL;
  }
  ac->data = data;
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
  return ac;
}

int conn_queue_auth(redisAsyncContext *ac, const node_addr_t *addr, redisCallbackFn *cb,
                    void *privdata) {
  if (addr->password == NULL)
    return 0;
  int rc = addr->user != NULL
               ? redisAsyncCommand(ac, cb, privdata, "AUTH %s %s", addr->user, addr->password)
               : redisAsyncCommand(ac, cb, privdata, "AUTH %s", addr->password);
  return rc == REDIS_OK ? 1 : -1;
}

void conn_close(redisAsyncContext *ac) {
  if (ac == NULL)
    return;
  ac->data = NULL; /* our disconnect callbacks ignore it from now on */
  redisAsyncFree(ac);
}
