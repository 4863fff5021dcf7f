/* cli_probe.h: what one master says about a key, asked over a plain
 * synchronous hiredis connection (cli_conn.h): whether it answers, the key's value and PTTL,
 * the fence counter, the master's uptime and the path its releases and
 * extensions take (caps.h).  A sentinel voter's master is
 * first asked of its sentinels, a cluster voter's primary for the key of
 * its slot map (cli_cluster.h).  Used by `status`, and by `run` to explain a
 * "no quorum". */
#ifndef REDLOCK_CLI_PROBE_H
#define REDLOCK_CLI_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "cli_common.h"
#include "cli_conn.h" /* tls_for_probes: the probes' connections */

typedef struct {
  char state[1400]; /* "up", or why not */
  int up;
  char *value; /* NULL: no key (escape_value'd: printable) */
  long long pttl;
  char fence[32];     /* "" when no counter */
  char uptime[32];    /* "" when unknown */
  long long uptime_s; /* -1 when unknown */
  /* A sentinel voter: the master its sentinels named ("host:port") and the
   * sentinel that named it; "" for other voters, or when none did. */
  char master[300];
  char sentinel[300];
  /* A cluster voter: the key's hash slot, and the seed that gave the slot
   * map (master is then the primary that owns the slot); -1 and "" for
   * other voters. */
  int slot;
  char seed[300];
  /* How the library releases and extends there (caps.h's caps_path(): its
   * handshake's SCRIPT LOAD, COMMAND INFO DELIFEQ DELEX and version); ""
   * when not learnt (down, or SCRIPT LOAD refused to this user).  no_lua:
   * the master runs no scripts. */
  char path[32];
  int no_lua;
  /* Filled by status, not by the probe: the quarantine the library keeps
   * this voter in now ("restart quarantine: 41 s left", cli_quar.h), "" when
   * none. */
  char quarantine[160];
} master_report_t;

/* A printable copy of s (len bytes): other bytes and '\\' as \xNN.  NULL
 * when out of memory. */
char *escape_value(const char *s, size_t len);

/* The key (prefix + resource) and its fence counter's key
 * (REDLOCK_FENCE_KEY_PREFIX + key, the key in braces unless it has a hash
 * tag: keyname.h), malloc'ed.  0, or -1 when out of memory
 * (both NULL). */
int probe_keys(const char *prefix, const char *resource, char **key, char **fence_key);

/* Asks one master about key and fence_key, each step bounded by timeout_ms;
 * for a sentinel voter, the master its sentinels name, which must say it is
 * a master (ROLE), as the library requires; for a cluster voter, the primary
 * that owns the key's slot (fence_key is in the same slot: keyname.h).  rep->value is malloc'ed (or
 * NULL). */
void probe_master(const node_addr_t *addr, const char *key, const char *fence_key,
                  uint64_t timeout_ms, master_report_t *rep);

#endif
