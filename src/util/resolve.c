/* resolve.c: host names looked up on threads of their own (see resolve.h). */
#define _DEFAULT_SOURCE /* inet_aton */
#include "util/resolve.h"
#include "util/alloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct resolve_req {
  uv_async_t async; /* the thread's answer, to the loop */
  resolve_cb cb;
  void *arg;
  uv_mutex_t mutex; /* guards what follows */
  int refs;         /* the thread's and the loop side's (its async handle's) */
  int abandoned;    /* the loop side is gone: the thread must not signal */
  int done;         /* the thread has answered */
  char error[128];  /* "" on success */
  resolve_list_t list;
  char host[]; /* the thread's own copy */
};

/* Lookup threads running in the process, abandoned ones included. */
static atomic_uint threads_running;
int resolve_is_numeric(const char *host) {
  unsigned char buf[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

status_t resolve_key(const char *host, int shorthand, resolve_key_t *key) {
  static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  memset(key, 0, sizeof *key);
  struct in_addr v4;
  struct in6_addr v6;
  if (inet_pton(AF_INET, host, &v4) == 1 || (shorthand && inet_aton(host, &v4) != 0)) {
    key->family = AF_INET;
    memcpy(key->bytes, &v4, 4);
    return ST_OK;
  }
  if (inet_pton(AF_INET6, host, &v6) != 1)
    return ST_EINVAL;
  if (memcmp(v6.s6_addr, v4_mapped, sizeof v4_mapped) == 0) {
    key->family = AF_INET;
    memcpy(key->bytes, v6.s6_addr + 12, 4);
  } else {
    key->family = AF_INET6;
    memcpy(key->bytes, v6.s6_addr, 16);
  }
  return ST_OK;
}

int resolve_key_equal(const resolve_key_t *a, const resolve_key_t *b) {
  return a->family == b->family && memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0;
}

/* Drops one reference; the last one frees the request. */
static void req_unref(resolve_req_t *req) {
  uv_mutex_lock(&req->mutex);
  int last = --req->refs == 0;
  uv_mutex_unlock(&req->mutex);
  if (last) {
    uv_mutex_destroy(&req->mutex);
    rl_free(req);
  }
}

static void on_async_closed(uv_handle_t *handle) { req_unref(handle->data); }

/* Every distinct address of res, in order, up to RESOLVE_MAX_ADDRS. */
static void list_fill(resolve_list_t *list, const struct addrinfo *res) {
  list->n = 0;
  for (const struct addrinfo *ai = res; ai != NULL && list->n < RESOLVE_MAX_ADDRS;
       ai = ai->ai_next) {
    char *out = list->addr[list->n];
    const void *bytes;
    if (ai->ai_family == AF_INET)
      bytes = &((const struct sockaddr_in *)(const void *)ai->ai_addr)->sin_addr;
    else if (ai->ai_family == AF_INET6)
      bytes = &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr;
    else
      continue;
    if (inet_ntop(ai->ai_family, bytes, out, RESOLVE_ADDR_LEN) == NULL)
      continue;
    unsigned i = 0;
    while (i < list->n && strcmp(list->addr[i], out) != 0)
      i++;
    if (i == list->n)
      list->n++;
  }
}

static void *lookup_thread(void *arg) {
  resolve_req_t *req = arg;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  int rc = getaddrinfo(req->host, NULL, &hints, &res);
  int sys_errno = errno;
  resolve_list_t list;
  list.n = 0;
  char error[sizeof req->error] = "";
  if (rc == 0) {
    list_fill(&list, res);
    freeaddrinfo(res);
    if (list.n == 0)
      snprintf(error, sizeof error, "no IPv4 or IPv6 address");
  } else {
    snprintf(error, sizeof error, "%s", rc == EAI_SYSTEM ? strerror(sys_errno) : gai_strerror(rc));
  }
  uv_mutex_lock(&req->mutex);
  req->list = list;
  memcpy(req->error, error, sizeof error);
  req->done = 1;
  if (!req->abandoned)
    /* Cannot fail: it fails only for a handle that is not an open async
     * one, and this one stays open until the loop side abandons it (under
     * the mutex: then we do not get here).  The link's connect timeout
     * bounds the attempt whatever happens. */
    (void)uv_async_send(&req->async);
  uv_mutex_unlock(&req->mutex);
  req_unref(req);
  atomic_fetch_sub(&threads_running, 1);
  return NULL;
}

static void on_answer(uv_async_t *async) {
  resolve_req_t *req = async->data;
  resolve_list_t list;
  char error[sizeof req->error];
  uv_mutex_lock(&req->mutex);
  int done = req->done;
  if (done) {
    list = req->list;
    memcpy(error, req->error, sizeof error);
    req->abandoned = 1; /* nothing more to say */
  }
  uv_mutex_unlock(&req->mutex);
  if (!done)
    return;
  resolve_cb cb = req->cb;
  void *cb_arg = req->arg;
  uv_close((uv_handle_t *)&req->async, on_async_closed);
  cb(cb_arg, error[0] != '\0' ? error : NULL, &list);
}

status_t resolve_start(resolve_req_t **out, uv_loop_t *loop, const char *host, resolve_cb cb,
                       void *arg, char *err, size_t err_len) {
  *out = NULL;
  size_t host_len = strlen(host);
  resolve_req_t *req = rl_calloc(1, sizeof *req + host_len + 1);
  if (req == NULL || uv_mutex_init(&req->mutex) != 0) {
    rl_free(req);
    snprintf(err, err_len, "out of memory");
    return ST_ENOMEM;
  }
  memcpy(req->host, host, host_len + 1);
  req->cb = cb;
  req->arg = arg;
  req->refs = 1; /* the loop side's; the thread's is added when it starts */
  if (uv_async_init(loop, &req->async, on_answer) != 0) {
    uv_mutex_destroy(&req->mutex);
    rl_free(req);
    snprintf(err, err_len, "cannot set up the lookup");
    return ST_EIO;
  }
  req->async.data = req;
  int rc = EAGAIN;
  if (atomic_fetch_add(&threads_running, 1) < RESOLVE_MAX_THREADS) {
    req->refs = 2;
    pthread_attr_t attr;
    rc = pthread_attr_init(&attr);
    if (rc == 0) {
      pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
      /* The host program's signals are not delivered to lookup threads. */
      sigset_t all, old;
      sigfillset(&all);
      pthread_sigmask(SIG_SETMASK, &all, &old);
      pthread_t thread;
      rc = pthread_create(&thread, &attr, lookup_thread, req);
      pthread_sigmask(SIG_SETMASK, &old, NULL);
      pthread_attr_destroy(&attr);
    }
    if (rc == 0) {
      *out = req;
      return ST_OK;
    }
    req->refs = 1;
    snprintf(err, err_len, "cannot start a lookup thread: %s", strerror(rc));
  } else {
    snprintf(err, err_len, "too many name lookups under way (%u)", RESOLVE_MAX_THREADS);
  }
  atomic_fetch_sub(&threads_running, 1);
  req->abandoned = 1;
  uv_close((uv_handle_t *)&req->async, on_async_closed);
  return ST_EIO;
}

void resolve_abandon(resolve_req_t *req) {
  uv_mutex_lock(&req->mutex);
  req->abandoned = 1;
  uv_mutex_unlock(&req->mutex);
  uv_close((uv_handle_t *)&req->async, on_async_closed);
}
