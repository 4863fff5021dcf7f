/* cli_admin.c: what an administrator asks of the masters through the
 * library: the client `redlock status` reads its inspect view with, and
 * `redlock revoke [OPTIONS] RESOURCE` (cli_admin.h), which takes a lock
 * back from whoever holds it and prints the fence it raised.  Exit status:
 * 0 revoked on a quorum, 69 too few masters answered (or ran no Lua), 70 an
 * internal error, 64 usage. */
#define _GNU_SOURCE /* getopt_long */

#include "cli_admin.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_conn.h" /* conn_open_client */

int admin_open(conn_opts_t *conn, uint64_t timeout_ms, redlock_t **client) {
  *client = NULL;
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL) {
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  int rc = redlock_options_set_log(opts, g_verbosity >= 1 ? REDLOCK_LOG_INFO : REDLOCK_LOG_ERROR,
                                   log_cb, NULL);
  for (size_t i = 0; rc == 0 && i < conn->nodes.n; i++)
    rc = redlock_options_add_node(opts, conn->nodes.uris[i]);
  if (rc == 0 && conn->prefix != NULL)
    rc = redlock_options_set_key_prefix(opts, conn->prefix);
  if (rc == 0)
    rc = redlock_options_set_timeouts(opts, (uint32_t)timeout_ms, (uint32_t)timeout_ms);
  return conn_open_client(conn, opts, rc, client);
}

int admin_inspect(redlock_t *client, const char *name, int kind, char **json) {
  *json = NULL;
  int n = redlock_inspect(client, name, kind, NULL, 0);
  if (n < 0)
    return n;
  char *buf = malloc((size_t)n + 1);
  if (buf == NULL)
    return REDLOCK_ENOMEM;
  /* The masters may have changed between the two reads: the second's length
   * is what counts, and a longer view is read again. */
  int m = redlock_inspect(client, name, kind, buf, (size_t)n + 1);
  if (m > n) {
    free(buf);
    return admin_inspect(client, name, kind, json);
  }
  if (m < 0) {
    free(buf);
    return m;
  }
  *json = buf;
  return 0;
}

int admin_kind(const char *word) {
  static const struct {
    const char *word;
    int kind;
  } kinds[] = {{"lock", REDLOCK_INSPECT_LOCK},
               {"semaphore", REDLOCK_INSPECT_SEMAPHORE},
               {"rwlock", REDLOCK_INSPECT_RWLOCK},
               {"election", REDLOCK_INSPECT_ELECTION}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(word, kinds[i].word) == 0)
      return kinds[i].kind;
  return 0;
}

/* ---- redlock revoke ------------------------------------------------------------------ */

typedef struct {
  conn_opts_t conn;
  const char *resource;
  uint64_t timeout_ms;
} revoke_opts_t;

static int take_revoke_option(void *ctx, int opt, const char *arg) {
  revoke_opts_t *o = ctx;
  if (opt != OPT_TIMEOUT)
    return OPT_NOT_MINE;
  if (parse_ms(arg, 1, 3600000, &o->timeout_ms) != 0)
    return usage_error("--timeout: expected 1 to 3600000 milliseconds, got '%s'", arg);
  return 0;
}

int cmd_revoke(int argc, char **argv) {
  revoke_opts_t o = {.timeout_ms = DEFAULT_STATUS_TIMEOUT_MS};
  static const struct option longs[] = {{"timeout", required_argument, NULL, OPT_TIMEOUT},
                                        {NULL, 0, NULL, 0}};
  static const struct option *const tables[] = {longs, NULL};
  const cmd_options_t opts = {.shorts = "", .longs = tables, .take = take_revoke_option, .ctx = &o};
  int status = parse_options(argc, argv, &o.conn, &opts);
  if (status == 0 && optind >= argc)
    status = usage_error("revoke: missing RESOURCE");
  if (status == 0 && optind + 1 < argc)
    status = usage_error("revoke: unexpected argument '%s'", argv[optind + 1]);
  if (status == 0) {
    o.resource = argv[optind];
    status = conn_finish(&o.conn, o.resource);
  }
  redlock_t *client = NULL;
  if (status == 0)
    status = admin_open(&o.conn, o.timeout_ms, &client);
  if (status == 0) {
    uint64_t fence = 0;
    int rc = redlock_revoke(client, o.resource, &fence);
    if (rc == 0 && fence > 0)
      printf("revoked %s: fence %" PRIu64 "\n", o.resource, fence);
    else if (rc == 0)
      printf("revoked %s: fence 0 (no fencing on the key: nobody gets it before the old lease "
             "ends)\n",
             o.resource);
    else
      err_msg("revoke %s: %s", o.resource, redlock_strerror(rc));
    status = rc == 0                                            ? 0
             : rc == REDLOCK_ENOQUORUM || rc == REDLOCK_ENOTSUP ? EXIT_NOQUORUM
                                                                : EXIT_INTERNAL;
  }
  redlock_close(client);
  nodes_free(&o.conn.nodes);
  return status < 0 ? -1 : status;
}
