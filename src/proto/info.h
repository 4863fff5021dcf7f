/* info.h: reading the fields we need out of `INFO server` and `INFO
 * replication` replies. */
#ifndef REDLOCK_INFO_H
#define REDLOCK_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define INFO_RUN_ID_LEN 40

typedef struct {
  char run_id[INFO_RUN_ID_LEN + 1]; /* "" when absent */
  int64_t uptime_s;                 /* -1 when absent */
  /* The server's version, packed as caps.h's CAPS_VERSION (valkey_version
   * for Valkey, whose redis_version stays 7.2.4; else redis_version); 0 when
   * absent or unreadable. */
  uint32_t version;
  int is_valkey; /* server_name:valkey */
} info_server_t;

/* What the quarantine needs from `INFO replication` (quarantine.h). */
typedef struct {
  int is_master;                     /* role:master */
  char role[16];                     /* as given ("master", "slave"), "" when absent */
  char replid[INFO_RUN_ID_LEN + 1];  /* master_replid, "" when absent */
  char replid2[INFO_RUN_ID_LEN + 1]; /* master_replid2, "" when absent or all zeros */
  long connected_replicas;           /* connected_slaves, -1 when absent */
} info_replication_t;

/* Parses an `INFO replication` reply.  ST_OK when role was found (older
 * servers may lack the replication ids: they stay ""), ST_EINVAL otherwise. */
status_t info_parse_replication(const char *text, size_t len, info_replication_t *out);

/* Parses "key:value\r\n" lines (any order, '#' sections ignored).  ST_OK
 * when both run_id and uptime_in_seconds were found, ST_EINVAL otherwise
 * (the version is optional). */
status_t info_parse_server(const char *text, size_t len, info_server_t *out);

#endif
