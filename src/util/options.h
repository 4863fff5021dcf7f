/* options.h: the options object behind redlock_options_t.  The client keeps
 * its own deep copy (options_copy), so the caller's may change or go. */
#ifndef REDLOCK_OPTIONS_H
#define REDLOCK_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "redlock.h"
#include "util/status.h"
#include "util/uri.h"

/* Between the random part of a lock value and its owner label. */
#define OPTIONS_OWNER_SEP '~'

#define OPTIONS_DEFAULT_RETRY_COUNT 3
#define OPTIONS_DEFAULT_RETRY_DELAY_MS 200
#define OPTIONS_DEFAULT_RETRY_JITTER_MS 200
#define OPTIONS_DEFAULT_DRIFT_FACTOR 0.01
#define OPTIONS_DEFAULT_CONNECT_MS 1000
#define OPTIONS_DEFAULT_REQUEST_MS 100
#define OPTIONS_DEFAULT_MAX_TTL_MS 60000
#define OPTIONS_MAX_TIMEOUT_MS 3600000u /* 1 h: anything longer is a mistake */
#define OPTIONS_MAX_TTL_LIMIT_MS 0x7fffffffu
#define OPTIONS_MAX_TLS_SERVER_NAME 255 /* a DNS name's limit */
#define OPTIONS_MAX_ALLOW_PATTERNS 64   /* redlock_options_allow_discovered calls */
#define OPTIONS_MAX_ALLOW_PATTERN_LEN 255

struct redlock_options {
  node_addr_t *nodes;
  size_t n_nodes;
  int retry_count; /* -1 = unbounded */
  uint32_t retry_delay_ms;
  uint32_t retry_jitter_ms;
  double drift_factor;
  uint32_t connect_timeout_ms;
  uint32_t request_timeout_ms;
  uint32_t max_ttl_ms;
  int quarantine;
  int fencing;
  int reentrant;
  char *state_dir;  /* first sightings shared between clients (sightings.h); NULL: none */
  char *key_prefix; /* never NULL */
  size_t key_prefix_len;
  /* Owner label carried in every lock value ("" none; printable, no
   * OPTIONS_OWNER_SEP): inline, so a copy needs no allocation. */
  char owner[REDLOCK_MAX_OWNER + 1];
  size_t owner_len;
  int log_level;
  redlock_log_cb log_cb;
  void *log_arg;
  /* TLS (rediss:// masters); NULL strings: not set. */
  char *tls_ca_file;
  char *tls_ca_dir;
  char *tls_cert_file;
  char *tls_key_file;
  char *tls_server_name; /* NULL: each URI's host */
  int tls_verify;        /* default 1 */
  /* Host patterns a discovered address must match (fnmatch); none: any. */
  char **allow_discovered;
  size_t n_allow_discovered;
  /* Observability (stats.c).  Zero by default: stats on, no event callback. */
  int stats_off;
  redlock_event_cb event_cb;
  void *event_arg;
};

void options_set_defaults(struct redlock_options *opts);
/* Deep copy; ST_OK or ST_ENOMEM. */
status_t options_copy(struct redlock_options *dst, const struct redlock_options *src);
void options_clear(struct redlock_options *opts);

#endif
