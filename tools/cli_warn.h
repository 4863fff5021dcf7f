/* cli_warn.h: the warnings the tool gives whatever the verbosity, about
 * how it was asked to connect: a password on the command line (other
 * local users see argv in ps(1) and /proc; the shell keeps it in its
 * history), and TLS with verification off. */
#ifndef REDLOCK_CLI_WARN_H
#define REDLOCK_CLI_WARN_H

#include "cli_common.h"

/* Once, on stderr, when one of the n first URIs of nodes (those from the
 * command line) has a password or a sentinel_password; not with -q or
 * REDLOCK_NO_AUTH_WARNING=1. */
void cli_warn_argv_password(const nodes_t *nodes, size_t n);

/* On stderr, even with -q: any server can then pose as a master. */
void cli_warn_tls_insecure(void);

#endif
