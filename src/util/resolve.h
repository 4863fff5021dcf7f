/* resolve.h: a master's host name looked up off the loop thread.
 *
 * hiredis resolves a host name inside redisAsyncConnect with a blocking
 * getaddrinfo(): one slow or dead resolver would stall the loop, and with it
 * every lock of the client, healthy masters included.  So names are looked
 * up first, and hiredis is handed numeric addresses.
 *
 * Each lookup runs getaddrinfo() on a detached thread of its own,
 * not on libuv's thread pool: that pool is 4 threads shared by the whole
 * process, of which lookups ("slow I/O") may hold 2, so two lookups hung on
 * a dead resolver would make every other lookup -- the healthy masters'
 * and the host program's own uv_getaddrinfo -- wait behind them.
 * getaddrinfo() keeps its usual semantics (/etc/hosts, nsswitch).  A lookup
 * cannot be interrupted once it runs: resolve_abandon only makes sure its
 * callback never runs and closes its loop handle at once; the thread frees
 * the request (reference-counted) when getaddrinfo() returns, however late,
 * and touches nothing else.  Threads are bounded by their callers (node.c
 * keeps one lookup per master) and, process-wide, by RESOLVE_MAX_THREADS. */
#ifndef REDLOCK_RESOLVE_H
#define REDLOCK_RESOLVE_H

#include <uv.h>

#include "util/status.h"

/* Long enough for any numeric IPv4 or IPv6 address. */
#define RESOLVE_ADDR_LEN 64

/* Addresses kept of one lookup, in getaddrinfo()'s order. */
#define RESOLVE_MAX_ADDRS 16
/* Lookup threads under way in the process (abandoned ones included) beyond
 * which a lookup is refused (the attempt fails and is retried). */
#define RESOLVE_MAX_THREADS 256

typedef struct {
  unsigned n;
  char addr[RESOLVE_MAX_ADDRS][RESOLVE_ADDR_LEN]; /* numeric: "10.0.0.1", "fe80::1" */
} resolve_list_t;

/* error NULL: list holds every address found (n >= 1, duplicates dropped);
 * else why the lookup failed (gai_strerror's words) and list is empty. */
typedef void (*resolve_cb)(void *arg, const char *error, const resolve_list_t *list);

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
 * 127.1, 2130706433, 0x7f.0.0.1).  ST_OK, or ST_EINVAL when host is not
 * numeric (a name, or an IPv6 address with a zone). */
status_t resolve_key(const char *host, int shorthand, resolve_key_t *key);
/* 1 when a and b are one address. */
int resolve_key_equal(const resolve_key_t *a, const resolve_key_t *b);

/* Starts looking host up (any address family, TCP) on a thread of its own.
 * cb runs once on the loop thread unless the request is abandoned first.
 * NULL when the lookup cannot start (out of memory, no thread, too many
 * lookups under way: err says which).  Loop thread. */
resolve_req_t *resolve_start(uv_loop_t *loop, const char *host, resolve_cb cb, void *arg, char *err,
                             size_t err_len);

/* The callback will not run; the request's loop handle is closed now, so
 * the loop can end without waiting for the lookup.  Only before the
 * callback ran.  Loop thread. */
void resolve_abandon(resolve_req_t *req);

#endif
