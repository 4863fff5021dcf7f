/* sentinel_reply.h: reading what Redis Sentinel answers, for the Sentinel
 * voter (voter_sentinel.c).  Pure functions over hiredis replies and message
 * payloads, so that every byte a sentinel sends is interpreted in one place
 * that unit tests reach:
 *   SENTINEL GET-MASTER-ADDR-BY-NAME name   -> [ip, port], or nil
 *   SENTINEL MASTER name                    -> field/value pairs (RESP2)
 *   +switch-master message                  -> "name old-ip old-port new-ip new-port" */
#ifndef REDLOCK_SENTINEL_REPLY_H
#define REDLOCK_SENTINEL_REPLY_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/info.h" /* INFO_RUN_ID_LEN */
#include "util/status.h"

/* A host a sentinel names: an IP, or a name with announce-hostnames. */
#define SENTINEL_HOST_LEN 256

typedef enum {
  SENTINEL_ADDR_KNOWN = 1, /* host and port set */
  SENTINEL_ADDR_UNKNOWN,   /* nil: this sentinel monitors no master of that name */
  SENTINEL_ADDR_BAD,       /* an error or an answer we cannot use: why says which */
} sentinel_addr_t;

/* The answer to SENTINEL GET-MASTER-ADDR-BY-NAME: host (SENTINEL_HOST_LEN
 * bytes) and *port, or why (printable, truncated to why_size). */
sentinel_addr_t sentinel_parse_addr(const redisReply *reply, char *host, int *port, char *why,
                                    size_t why_size);

/* What SENTINEL MASTER says of the master, for the failover quarantine
 * (docs/safety.md §5b, "Sentinel voters"). */
typedef struct {
  char ip[SENTINEL_HOST_LEN];
  int port;
  char run_id[INFO_RUN_ID_LEN + 1]; /* "" when the sentinel has none yet */
  /* 1 when the sentinel sees it as a sound master: flags "master" without
   * s_down, o_down, failover_in_progress or disconnected, and role-reported
   * "master".  Only then does role_age_ms mean anything. */
  int settled;
  /* role-reported-time: ms since this sentinel last saw the server's role
   * change, or reset its record of the master (a failover, a restart of
   * the sentinel): the server has been master at least this long. */
  uint64_t role_age_ms;
} sentinel_master_t;

/* Parses SENTINEL MASTER's field/value array.  ST_OK when ip, port and
 * role-reported-time were found (settled says whether they can be used),
 * ST_EINVAL otherwise (an error reply, a map we cannot read). */
status_t sentinel_parse_master(const redisReply *reply, sentinel_master_t *out);

/* A +switch-master message's payload: ST_OK with *ours 1 when it is about
 * master `name` (host, SENTINEL_HOST_LEN bytes, and *port: its new
 * address), *ours 0 when it is about another master; ST_EINVAL when it is
 * malformed. */
status_t sentinel_parse_switch(const char *payload, size_t len, const char *name, char *host,
                               int *port, int *ours);

/* host:port as logs and votes show it: "127.0.0.1:6379", "[::1]:6379" (an
 * IPv6 address bracketed once, also when host already is). */
void sentinel_host_port(char *buf, size_t size, const char *host, int port);

#endif
