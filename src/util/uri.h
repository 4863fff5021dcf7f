/* uri.h: parsing of voter addresses (docs/api.md, URIs).
 *   redis://[[user]:password@]host[:port][/db][?PARAMS]   host: name, IPv4 or [IPv6]
 *   rediss://...                     the same over TLS (default port 6379 too, as
 *                                    redis-cli and hiredis use)
 *   unix:///absolute/path/to/socket[?PARAMS]
 *   redis-sentinel://[user:pass@]HOST:PORT[,HOST:PORT...]/MASTER-NAME[/DB][?PARAMS]
 *   rediss-sentinel://...            TLS to the sentinels and to the master
 *   redis-cluster://[user:pass@]HOST:PORT[,HOST:PORT...][?PARAMS]
 *   rediss-cluster://...
 * PARAMS, '&'-separated: wait=R | waitaof=L,R, wait_ms=T; and for the
 * sentinel schemes sentinel_user=U, sentinel_password=P (%-escapes allowed).
 * A sentinel port defaults to 26379, any other to 6379.
 * A build without TLS refuses the rediss schemes with ST_ENOTSUP. */
#ifndef REDLOCK_URI_H
#define REDLOCK_URI_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef enum { NODE_ADDR_TCP = 1, NODE_ADDR_UNIX = 2 } node_addr_kind_t;

/* What kind of voter a URI names. */
typedef enum {
  VOTER_KIND_STANDALONE = 0, /* redis://, rediss://, unix://: one master */
  VOTER_KIND_SENTINEL,       /* the master of MASTER-NAME, as its sentinels report it */
  VOTER_KIND_CLUSTER,        /* a whole Redis Cluster */
} voter_kind_t;

/* The durability ack asked after each write (wait= / waitaof=). */
typedef enum { ACK_NONE = 0, ACK_WAIT, ACK_WAITAOF } ack_mode_t;

typedef struct {
  ack_mode_t mode;
  int local;           /* WAITAOF: numlocal (0 or 1) */
  int replicas;        /* WAIT / WAITAOF: replicas that must acknowledge */
  uint32_t timeout_ms; /* wait_ms=; 0: the request timeout */
} ack_spec_t;

#define URI_MAX_ACK_REPLICAS 1000
#define URI_MAX_WAIT_MS 3600000u
#define URI_MAX_SEEDS 32
#define URI_SENTINEL_PORT 26379
#define URI_REDIS_PORT 6379

/* One HOST:PORT of a sentinel or cluster URI. */
typedef struct {
  char *host; /* without brackets */
  int port;
} uri_seed_t;

typedef struct {
  voter_kind_t voter; /* what the URI names */
  node_addr_kind_t kind;
  char *host;     /* TCP: name or address, without brackets */
  int port;       /* TCP: 1..65535, default 6379 */
  char *path;     /* UNIX: socket path */
  char *user;     /* NULL: no ACL user */
  char *password; /* NULL: no AUTH */
  int db;         /* 0: no SELECT */
  int tls;        /* rediss:// */
  char *label;    /* "host:port" or the path, for logs; never has secrets; a sentinel
                   * voter: "MASTER-NAME@host:port" (its first sentinel), a cluster:
                   * "cluster@host:port" (its first seed) */
  ack_spec_t ack; /* wait= / waitaof= / wait_ms= */
  /* Sentinel and cluster voters: the sentinels or the seeds (host and port
   * above are the first of them); the master's name and the sentinels'
   * own credentials (NULL: none). */
  uri_seed_t *seeds;
  unsigned n_seeds;
  char *master_name;
  char *sentinel_user;
  char *sentinel_password;
} node_addr_t;

#define URI_MAX_LEN 4096
#define URI_MAX_DB 1000000

/* A scheme the parser takes ("redis://" ...), the voter it names and
 * whether it is TLS. */
typedef struct {
  const char *scheme;
  voter_kind_t voter;
  int tls;
} uri_scheme_t;

/* The scheme uri starts with, or NULL when it starts with none. */
const uri_scheme_t *uri_scheme_of(const char *uri);
/* The parser's schemes, i = 0, 1, ...; NULL past the last. */
const uri_scheme_t *uri_scheme_at(size_t i);

/* Parses uri into *out (fields are heap strings).  Returns ST_OK, ST_EINVAL
 * (with a reason in err_msg when given), ST_ENOTSUP (a rediss scheme in a
 * build without TLS, with the reason), or ST_ENOMEM. */
status_t uri_parse(const char *uri, node_addr_t *out, char *err_msg, size_t err_len);

/* Deep copy; ST_OK or ST_ENOMEM. */
status_t node_addr_copy(node_addr_t *dst, const node_addr_t *src);

/* "wait=1", "waitaof=1,0", "" (none), with ";wait_ms=T" when set: for logs. */
void uri_ack_describe(const ack_spec_t *ack, char *buf, size_t size);

/* 1 when a and b name the same server: the same unix socket path, or the
 * same port and host, whatever the credentials, db or TLS: numeric hosts
 * as addresses (127.0.0.1 = 127.1 = 2130706433 = ::ffff:127.0.0.1, ::1 =
 * 0:0::1), names letter case aside.  No lookup: a name and an address of
 * it (localhost vs 127.0.0.1) are told apart only once connected (the
 * client compares the resolved addresses and run_ids, client.c).  Two
 * sentinel voters are the same when they name one master name and share a
 * sentinel; two cluster voters when they share a seed. */
int node_addr_same_master(const node_addr_t *a, const node_addr_t *b);

/* uri with its secrets replaced by "***", whatever its characters, valid
 * URI or not (redlock_uri_redact, docs/api.md).  snprintf's contract: the
 * whole output's length, buf NUL-terminated when size > 0; REDLOCK_EINVAL
 * for a NULL uri, or a NULL buf with size > 0. */
int uri_redact(const char *uri, char *buf, size_t size);

/* Frees the strings and zeroes the struct. */
void node_addr_clear(node_addr_t *addr);

#endif
