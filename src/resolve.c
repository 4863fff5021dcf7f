/* resolve.c: host names looked up on libuv's thread pool (see resolve.h). */
#define _DEFAULT_SOURCE /* inet_aton */
#include "resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct resolve_req {
  uv_getaddrinfo_t req;
  resolve_cb cb; /* NULL once abandoned */
  void *arg;
};

int resolve_is_numeric(const char *host) {
  unsigned char buf[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

int resolve_key(const char *host, int shorthand, resolve_key_t *key) {
  static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  memset(key, 0, sizeof *key);
  struct in_addr v4;
  struct in6_addr v6;
  if (inet_pton(AF_INET, host, &v4) == 1 || (shorthand && inet_aton(host, &v4) != 0)) {
    key->family = AF_INET;
    memcpy(key->bytes, &v4, 4);
    return 0;
  }
  if (inet_pton(AF_INET6, host, &v6) != 1)
    return -1;
  if (memcmp(v6.s6_addr, v4_mapped, sizeof v4_mapped) == 0) {
    key->family = AF_INET;
    memcpy(key->bytes, v6.s6_addr + 12, 4);
  } else {
    key->family = AF_INET6;
    memcpy(key->bytes, v6.s6_addr, 16);
  }
  return 0;
}

int resolve_key_equal(const resolve_key_t *a, const resolve_key_t *b) {
  return a->family == b->family && memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0;
}

static void on_resolved(uv_getaddrinfo_t *handle, int status, struct addrinfo *res) {
  resolve_req_t *req = handle->data;
  char addr[RESOLVE_ADDR_LEN] = "";
  if (status == 0 && res == NULL)
    status = UV_EAI_NONAME;
  if (status == 0) {
    status = res->ai_family == AF_INET6
                 ? uv_ip6_name((const struct sockaddr_in6 *)(void *)res->ai_addr, addr, sizeof addr)
                 : uv_ip4_name((const struct sockaddr_in *)(void *)res->ai_addr, addr, sizeof addr);
  }
  uv_freeaddrinfo(res);
  if (req->cb != NULL)
    req->cb(req->arg, status, addr);
  free(req);
}

resolve_req_t *resolve_start(uv_loop_t *loop, const char *host, resolve_cb cb, void *arg,
                             int *err) {
  *err = UV_ENOMEM;
  resolve_req_t *req = calloc(1, sizeof *req);
  if (req == NULL)
    return NULL;
  req->cb = cb;
  req->arg = arg;
  req->req.data = req;
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  *err = uv_getaddrinfo(loop, &req->req, on_resolved, host, NULL, &hints);
  if (*err != 0) {
    free(req);
    return NULL;
  }
  return req;
}

void resolve_abandon(resolve_req_t *req) {
  req->cb = NULL;
  /* Succeeds only while the lookup waits for a pool thread; the callback
   * then runs with UV_ECANCELED and frees the request. */
  uv_cancel((uv_req_t *)&req->req);
}
