/* cli_admin.h: the library client of `redlock status` (its redlock_inspect
 * view) and `redlock revoke` (cli_admin.c), with the connection options of
 * every subcommand, and the revoke subcommand itself (cmd_revoke,
 * cli_common.h). */
#ifndef REDLOCK_CLI_ADMIN_H
#define REDLOCK_CLI_ADMIN_H

#include <stdint.h>

#include "cli_common.h"

/* A client over conn's masters (key prefix, owner, TLS), each round bounded
 * by timeout_ms.  0, or an exit status (said). */
int admin_open(conn_opts_t *conn, uint64_t timeout_ms, redlock_t **client);

/* redlock_inspect of name as kind (REDLOCK_INSPECT_*), in *json (malloc'ed,
 * NUL-terminated).  0, or the library's error (*json NULL). */
int admin_inspect(redlock_t *client, const char *name, int kind, char **json);

/* "lock", "semaphore", "rwlock" or "election" -> REDLOCK_INSPECT_*; 0 for
 * another word. */
int admin_kind(const char *word);

#endif
