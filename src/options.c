/* options.c: redlock_options_* setters (see redlock.h for their contract). */
#include "options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strutil.h"

void options_set_defaults(struct redlock_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->retry_count = OPTIONS_DEFAULT_RETRY_COUNT;
  opts->retry_delay_ms = OPTIONS_DEFAULT_RETRY_DELAY_MS;
  opts->retry_jitter_ms = OPTIONS_DEFAULT_RETRY_JITTER_MS;
  opts->drift_factor = OPTIONS_DEFAULT_DRIFT_FACTOR;
  opts->connect_timeout_ms = OPTIONS_DEFAULT_CONNECT_MS;
  opts->request_timeout_ms = OPTIONS_DEFAULT_REQUEST_MS;
  opts->max_ttl_ms = OPTIONS_DEFAULT_MAX_TTL_MS;
  opts->quarantine = 1;
  opts->fencing = 0;
  opts->log_level = REDLOCK_LOG_WARN;
}

redlock_options_t *redlock_options_new(void) {
  redlock_options_t *opts = malloc(sizeof *opts);
  if (opts == NULL)
    return NULL;
  options_set_defaults(opts);
  opts->key_prefix = str_dup("");
  if (opts->key_prefix == NULL) {
    free(opts);
    return NULL;
  }
  return opts;
}

void options_clear(struct redlock_options *opts) {
  for (size_t i = 0; i < opts->n_nodes; i++)
    node_addr_clear(&opts->nodes[i]);
  free(opts->nodes);
  free(opts->key_prefix);
  opts->nodes = NULL;
  opts->n_nodes = 0;
  opts->key_prefix = NULL;
}

void redlock_options_free(redlock_options_t *opts) {
  if (opts == NULL)
    return;
  options_clear(opts);
  free(opts);
}

int options_copy(struct redlock_options *dst, const struct redlock_options *src) {
  *dst = *src;
  dst->nodes = NULL;
  dst->n_nodes = 0;
  dst->key_prefix = str_ndup(src->key_prefix, src->key_prefix_len);
  if (dst->key_prefix == NULL)
    return REDLOCK_ENOMEM;
  if (src->n_nodes > 0) {
    dst->nodes = calloc(src->n_nodes, sizeof *dst->nodes);
    if (dst->nodes == NULL) {
      options_clear(dst);
      return REDLOCK_ENOMEM;
    }
  }
  for (size_t i = 0; i < src->n_nodes; i++) {
    if (node_addr_copy(&dst->nodes[i], &src->nodes[i]) != 0) {
      options_clear(dst);
      return REDLOCK_ENOMEM;
    }
    dst->n_nodes++;
  }
  return 0;
}

int redlock_options_add_node(redlock_options_t *opts, const char *uri) {
  if (opts == NULL || uri == NULL)
    return REDLOCK_EINVAL;
  if (opts->n_nodes >= REDLOCK_MAX_NODES)
    return REDLOCK_EINVAL;
  node_addr_t addr;
  char why[160];
  int rc = uri_parse(uri, &addr, why, sizeof why);
  if (rc != 0) {
    /* No client exists yet to log through; the options' log callback, when
     * already set, hears why the URI was refused. */
    if (opts->log_cb != NULL && rc == REDLOCK_EINVAL) {
      char msg[256];
      snprintf(msg, sizeof msg, "redlock_options_add_node: %s", why);
      opts->log_cb(REDLOCK_LOG_ERROR, msg, opts->log_arg);
    }
    return rc;
  }
  for (size_t i = 0; i < opts->n_nodes; i++) {
    if (node_addr_same_master(&opts->nodes[i], &addr)) {
      /* Two votes from one master would let it alone decide a quorum. */
      if (opts->log_cb != NULL) {
        char msg[256];
        snprintf(msg, sizeof msg, "redlock_options_add_node: master %s is already listed",
                 addr.label);
        opts->log_cb(REDLOCK_LOG_ERROR, msg, opts->log_arg);
      }
      node_addr_clear(&addr);
      return REDLOCK_EINVAL;
    }
  }
  node_addr_t *grown = realloc(opts->nodes, (opts->n_nodes + 1) * sizeof *grown);
  if (grown == NULL) {
    node_addr_clear(&addr);
    return REDLOCK_ENOMEM;
  }
  opts->nodes = grown;
  opts->nodes[opts->n_nodes++] = addr;
  return 0;
}

int redlock_options_set_retry(redlock_options_t *opts, int retry_count, uint32_t delay_ms,
                              uint32_t jitter_ms) {
  if (opts == NULL || retry_count < -1 || delay_ms > OPTIONS_MAX_TIMEOUT_MS ||
      jitter_ms > OPTIONS_MAX_TIMEOUT_MS)
    return REDLOCK_EINVAL;
  opts->retry_count = retry_count;
  opts->retry_delay_ms = delay_ms;
  opts->retry_jitter_ms = jitter_ms;
  return 0;
}

int redlock_options_set_drift_factor(redlock_options_t *opts, double factor) {
  if (opts == NULL || !isfinite(factor) || factor < 0.0 || factor >= 0.5)
    return REDLOCK_EINVAL;
  opts->drift_factor = factor;
  return 0;
}

int redlock_options_set_timeouts(redlock_options_t *opts, uint32_t connect_ms,
                                 uint32_t request_ms) {
  if (opts == NULL || connect_ms == 0 || request_ms == 0 || connect_ms > OPTIONS_MAX_TIMEOUT_MS ||
      request_ms > OPTIONS_MAX_TIMEOUT_MS)
    return REDLOCK_EINVAL;
  opts->connect_timeout_ms = connect_ms;
  opts->request_timeout_ms = request_ms;
  return 0;
}

int redlock_options_set_max_ttl(redlock_options_t *opts, uint32_t max_ttl_ms) {
  if (opts == NULL || max_ttl_ms == 0 || max_ttl_ms > OPTIONS_MAX_TTL_LIMIT_MS)
    return REDLOCK_EINVAL;
  opts->max_ttl_ms = max_ttl_ms;
  return 0;
}

int redlock_options_set_quarantine(redlock_options_t *opts, int enabled) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  opts->quarantine = enabled != 0;
  return 0;
}

int redlock_options_set_fencing(redlock_options_t *opts, int enabled) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  opts->fencing = enabled != 0;
  return 0;
}

int redlock_options_set_reentrant(redlock_options_t *opts, int enabled) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  opts->reentrant = enabled != 0;
  return 0;
}

int redlock_options_set_key_prefix(redlock_options_t *opts, const char *prefix) {
  if (opts == NULL || prefix == NULL)
    return REDLOCK_EINVAL;
  size_t len = strnlen(prefix, REDLOCK_MAX_PREFIX_LEN + 1);
  if (len > REDLOCK_MAX_PREFIX_LEN)
    return REDLOCK_EINVAL;
  char *copy = str_ndup(prefix, len);
  if (copy == NULL)
    return REDLOCK_ENOMEM;
  free(opts->key_prefix);
  opts->key_prefix = copy;
  opts->key_prefix_len = len;
  return 0;
}

int redlock_options_set_log(redlock_options_t *opts, int min_level,
                            void (*cb)(int level, const char *msg, void *arg), void *arg) {
  if (opts == NULL || min_level < REDLOCK_LOG_DEBUG || min_level > REDLOCK_LOG_ERROR)
    return REDLOCK_EINVAL;
  opts->log_level = min_level;
  opts->log_cb = cb;
  opts->log_arg = arg;
  return 0;
}
