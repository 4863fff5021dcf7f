/* uri.h: parsing of master addresses.
 *   redis://[[user]:password@]host[:port][/db]   host: name, IPv4 or [IPv6]
 *   rediss://...                                 the same over TLS (default port 6379
 *                                                too, as redis-cli and hiredis use)
 *   unix:///absolute/path/to/socket
 * A build without TLS refuses rediss:// with REDLOCK_ENOTSUP. */
#ifndef REDLOCK_URI_H
#define REDLOCK_URI_H

#include <stddef.h>

typedef enum { NODE_ADDR_TCP = 1, NODE_ADDR_UNIX = 2 } node_addr_kind_t;

typedef struct {
  node_addr_kind_t kind;
  char *host;     /* TCP: name or address, without brackets */
  int port;       /* TCP: 1..65535, default 6379 */
  char *path;     /* UNIX: socket path */
  char *user;     /* NULL: no ACL user */
  char *password; /* NULL: no AUTH */
  int db;         /* 0: no SELECT */
  int tls;        /* rediss:// */
  char *label;    /* "host:port" or the path, for logs; never has secrets */
} node_addr_t;

#define URI_MAX_LEN 4096
#define URI_MAX_DB 1000000

/* Parses uri into *out (fields are heap strings).  Returns 0, REDLOCK_EINVAL
 * (with a reason in err_msg when given), REDLOCK_ENOTSUP (rediss:// in a
 * build without TLS, with the reason), or REDLOCK_ENOMEM. */
int uri_parse(const char *uri, node_addr_t *out, char *err_msg, size_t err_len);

/* Deep copy; 0 or REDLOCK_ENOMEM. */
int node_addr_copy(node_addr_t *dst, const node_addr_t *src);

/* 1 when a and b name the same server: the same unix socket path, or the
 * same port and host, whatever the credentials, db or TLS: numeric hosts
 * as addresses (127.0.0.1 = 127.1 = 2130706433 = ::ffff:127.0.0.1, ::1 =
 * 0:0::1), names letter case aside.  No lookup: a name and an address of
 * it (localhost vs 127.0.0.1) are told apart only once connected (the
 * client compares the resolved addresses and run_ids, client.c). */
int node_addr_same_master(const node_addr_t *a, const node_addr_t *b);

/* Frees the strings and zeroes the struct. */
void node_addr_clear(node_addr_t *addr);

#endif
