/* resolve.h: a master's host name looked up off the loop thread.
 *
 * hiredis resolves a host name inside redisAsyncConnect with a blocking
 * getaddrinfo(): one slow or dead resolver would stall the loop, and with it
 * every lock of the client, healthy masters included.  So names go through
 * libuv's thread pool (uv_getaddrinfo) first, and hiredis is handed the
 * numeric address.  A lookup cannot be interrupted once it runs: abandoning
 * one only makes sure its callback never runs; the request frees itself when
 * the lookup returns. */
#ifndef REDLOCK_RESOLVE_H
#define REDLOCK_RESOLVE_H

#include <uv.h>

/* Long enough for any numeric IPv4 or IPv6 address. */
#define RESOLVE_ADDR_LEN 64

/* status 0: addr holds the first address found, numeric ("10.0.0.1",
 * "fe80::1"); else a libuv error code (uv_strerror says why). */
typedef void (*resolve_cb)(void *arg, int status, const char *addr);

typedef struct resolve_req resolve_req_t;

/* 1 when host is already a numeric IPv4 or IPv6 address (no lookup needed). */
int resolve_is_numeric(const char *host);

/* A numeric address in one form, to tell whether two spellings are one
 * address: IPv4 (also when written as an IPv4-mapped IPv6 address,
 * ::ffff:a.b.c.d) as 4 bytes, IPv6 as 16. */
typedef struct {
  int family; /* AF_INET or AF_INET6 */
  unsigned char bytes[16];
} resolve_key_t;

/* Fills *key from a numeric host: inet_pton's IPv4 and IPv6 forms, and with
 * `shorthand` also the IPv4 forms getaddrinfo() takes as numbers (inet_aton:
 * 127.1, 2130706433, 0x7f.0.0.1).  0, or -1 when host is not numeric (a
 * name, or an IPv6 address with a zone). */
int resolve_key(const char *host, int shorthand, resolve_key_t *key);
/* 1 when a and b are one address. */
int resolve_key_equal(const resolve_key_t *a, const resolve_key_t *b);

/* Starts looking host up (any address family, TCP).  cb runs once on the
 * loop thread unless the request is abandoned first.  NULL when the lookup
 * cannot start (out of memory, or libuv refused it: *err is its code). */
resolve_req_t *resolve_start(uv_loop_t *loop, const char *host, resolve_cb cb, void *arg, int *err);

/* The callback will not run.  Loop thread. */
void resolve_abandon(resolve_req_t *req);

#endif
