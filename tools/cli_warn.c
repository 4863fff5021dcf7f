/* cli_warn.c: warnings about how the tool connects (cli_warn.h). */
#include "cli_warn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_warn_argv_password(const nodes_t *nodes, size_t n) {
  const char *off = getenv("REDLOCK_NO_AUTH_WARNING");
  if (g_verbosity < 0 || (off != NULL && strcmp(off, "1") == 0))
    return;
  for (size_t i = 0; i < n && i < nodes->n; i++) {
    const node_addr_t *a = &nodes->addrs[i];
    if (a->password != NULL || a->sentinel_password != NULL) {
      /* redis-cli's wording, with this tool's safe ways. */
      fprintf(stderr, "Warning: using a password on the command line may not be safe; "
                      "use REDLOCK_NODES or a nodes file (REDLOCK_NODES=\"$(cat FILE)\"). "
                      "REDLOCK_NO_AUTH_WARNING=1 silences this.\n");
      return;
    }
  }
}

void cli_warn_tls_insecure(void) {
  fprintf(stderr, "Warning: TLS certificate verification is off (--tls-insecure or "
                  "REDLOCK_TLS_INSECURE=1): connections are encrypted, but any server can pose "
                  "as a master and read the passwords sent to it.\n");
}
