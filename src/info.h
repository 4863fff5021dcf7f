/* info.h: reading the fields we need out of an `INFO server` reply. */
#ifndef REDLOCK_INFO_H
#define REDLOCK_INFO_H

#include <stddef.h>
#include <stdint.h>

#define INFO_RUN_ID_LEN 40

typedef struct {
  char run_id[INFO_RUN_ID_LEN + 1]; /* "" when absent */
  int64_t uptime_s;                 /* -1 when absent */
} info_server_t;

/* Parses "key:value\r\n" lines (any order, '#' sections ignored).  Returns 0
 * when both run_id and uptime_in_seconds were found, -1 otherwise. */
int info_parse_server(const char *text, size_t len, info_server_t *out);

#endif
