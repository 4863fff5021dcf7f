/* options.c: redlock_options_* setters (see redlock.h for their contract). */
#include "util/options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/sightings.h" /* SIGHTINGS_DIR_MAX */
#include "util/strutil.h"
#include "util/tls.h"

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
  opts->tls_verify = 1;
}

redlock_options_t *redlock_options_new(void) {
  redlock_options_t *opts = rl_malloc(sizeof *opts);
  if (opts == NULL)
    return NULL;
  options_set_defaults(opts);
  opts->key_prefix = str_dup("");
  if (opts->key_prefix == NULL) {
    rl_free(opts);
    return NULL;
  }
  return opts;
}

void options_clear(struct redlock_options *opts) {
  for (size_t i = 0; i < opts->n_nodes; i++)
    node_addr_clear(&opts->nodes[i]);
  rl_free(opts->nodes);
  rl_free(opts->key_prefix);
  rl_free(opts->state_dir);
  rl_free(opts->tls_ca_file);
  rl_free(opts->tls_ca_dir);
  rl_free(opts->tls_cert_file);
  rl_free(opts->tls_key_file);
  rl_free(opts->tls_server_name);
  for (size_t i = 0; i < opts->n_allow_discovered; i++)
    rl_free(opts->allow_discovered[i]);
  rl_free(opts->allow_discovered);
  opts->allow_discovered = NULL;
  opts->n_allow_discovered = 0;
  opts->nodes = NULL;
  opts->n_nodes = 0;
  opts->key_prefix = NULL;
  opts->state_dir = NULL;
  opts->tls_ca_file = opts->tls_ca_dir = opts->tls_cert_file = opts->tls_key_file = NULL;
  opts->tls_server_name = NULL;
}

/* *dst = a copy of src (NULL stays NULL); ST_OK or ST_ENOMEM. */
static status_t dup_opt(char **dst, const char *src) {
  *dst = NULL;
  if (src == NULL)
    return ST_OK;
  *dst = str_dup(src);
  return *dst != NULL ? ST_OK : ST_ENOMEM;
}

void redlock_options_free(redlock_options_t *opts) {
  if (opts == NULL)
    return;
  options_clear(opts);
  rl_free(opts);
}

status_t options_copy(struct redlock_options *dst, const struct redlock_options *src) {
  *dst = *src;
  dst->nodes = NULL;
  dst->n_nodes = 0;
  dst->tls_ca_file = dst->tls_ca_dir = dst->tls_cert_file = dst->tls_key_file = NULL;
  dst->tls_server_name = NULL;
  dst->state_dir = NULL;
  dst->allow_discovered = NULL;
  dst->n_allow_discovered = 0;
  dst->key_prefix = str_ndup(src->key_prefix, src->key_prefix_len);
  if (dst->key_prefix == NULL || dup_opt(&dst->state_dir, src->state_dir) != ST_OK ||
      dup_opt(&dst->tls_ca_file, src->tls_ca_file) != ST_OK ||
      dup_opt(&dst->tls_ca_dir, src->tls_ca_dir) != ST_OK ||
      dup_opt(&dst->tls_cert_file, src->tls_cert_file) != ST_OK ||
      dup_opt(&dst->tls_key_file, src->tls_key_file) != ST_OK ||
      dup_opt(&dst->tls_server_name, src->tls_server_name) != ST_OK) {
    options_clear(dst);
    return ST_ENOMEM;
  }
  if (src->n_allow_discovered > 0) {
    dst->allow_discovered = rl_calloc(src->n_allow_discovered, sizeof *dst->allow_discovered);
    if (dst->allow_discovered == NULL) {
      options_clear(dst);
      return ST_ENOMEM;
    }
    for (; dst->n_allow_discovered < src->n_allow_discovered; dst->n_allow_discovered++) {
      size_t i = dst->n_allow_discovered;
      if ((dst->allow_discovered[i] = str_dup(src->allow_discovered[i])) == NULL) {
        options_clear(dst);
        return ST_ENOMEM;
      }
    }
  }
  if (src->n_nodes > 0) {
    dst->nodes = rl_calloc(src->n_nodes, sizeof *dst->nodes);
    if (dst->nodes == NULL) {
      options_clear(dst);
      return ST_ENOMEM;
    }
  }
  for (size_t i = 0; i < src->n_nodes; i++) {
    if (node_addr_copy(&dst->nodes[i], &src->nodes[i]) != ST_OK) {
      options_clear(dst);
      return ST_ENOMEM;
    }
    dst->n_nodes++;
  }
  return ST_OK;
}

int redlock_uri_redact(const char *uri, char *buf, size_t size) {
  return uri_redact(uri, buf, size);
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
    if (opts->log_cb != NULL && (rc == REDLOCK_EINVAL || rc == REDLOCK_ENOTSUP)) {
      char msg[256];
      snprintf(msg, sizeof msg, "redlock_options_add_node: %s", why);
      opts->log_cb(REDLOCK_LOG_ERROR, msg, opts->log_arg);
    }
    return rc;
  }
  for (size_t i = 0; i < opts->n_nodes; i++) {
    if (node_addr_same_master(&opts->nodes[i], &addr)) {
      /* Two votes from one master would let it alone decide a quorum.
       * Names are compared here without a lookup; the client compares
       * what they resolve to, and run_ids, once connected. */
      if (opts->log_cb != NULL) {
        char msg[320];
        const char *listed = opts->nodes[i].label;
        if (strcmp(listed, addr.label) == 0)
          snprintf(msg, sizeof msg, "redlock_options_add_node: master %s is already listed",
                   addr.label);
        else
          snprintf(msg, sizeof msg, "redlock_options_add_node: master %s is already listed as %s",
                   addr.label, listed);
        opts->log_cb(REDLOCK_LOG_ERROR, msg, opts->log_arg);
      }
      node_addr_clear(&addr);
      return REDLOCK_EINVAL;
    }
  }
  node_addr_t *grown = rl_realloc(opts->nodes, (opts->n_nodes + 1) * sizeof *grown);
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
  rl_free(opts->key_prefix);
  opts->key_prefix = copy;
  opts->key_prefix_len = len;
  return 0;
}

int redlock_options_set_owner(redlock_options_t *opts, const char *label) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  size_t len = label != NULL ? strnlen(label, REDLOCK_MAX_OWNER + 1) : 0;
  if (len > REDLOCK_MAX_OWNER)
    return REDLOCK_EINVAL;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)label[i];
    if (c < 0x21 || c > 0x7e || c == OPTIONS_OWNER_SEP)
      return REDLOCK_EINVAL;
  }
  memcpy(opts->owner, len > 0 ? label : "", len);
  opts->owner[len] = '\0';
  opts->owner_len = len;
  return 0;
}

int redlock_options_set_state_dir(redlock_options_t *opts, const char *dir) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  char *copy = NULL;
  if (dir != NULL && dir[0] != '\0') {
    size_t len = strnlen(dir, SIGHTINGS_DIR_MAX + 1);
    if (len > SIGHTINGS_DIR_MAX || dir[0] != '/')
      return REDLOCK_EINVAL; /* relative: it would follow the process's working directory */
    copy = str_ndup(dir, len);
    if (copy == NULL)
      return REDLOCK_ENOMEM;
  }
  rl_free(opts->state_dir);
  opts->state_dir = copy;
  return 0;
}

static void options_log(const redlock_options_t *opts, const char *fn, const char *why);

int redlock_options_allow_discovered(redlock_options_t *opts, const char *pattern) {
  if (opts == NULL || pattern == NULL)
    return REDLOCK_EINVAL;
  size_t len = strnlen(pattern, OPTIONS_MAX_ALLOW_PATTERN_LEN + 1);
  if (len == 0 || len > OPTIONS_MAX_ALLOW_PATTERN_LEN) {
    options_log(opts, "redlock_options_allow_discovered",
                "a host pattern is 1 to 255 bytes ('10.0.0.*', '*.redis.internal')");
    return REDLOCK_EINVAL;
  }
  if (opts->n_allow_discovered >= OPTIONS_MAX_ALLOW_PATTERNS) {
    options_log(opts, "redlock_options_allow_discovered", "at most 64 host patterns");
    return REDLOCK_EINVAL;
  }
  char **grown = rl_realloc(opts->allow_discovered,
                            (opts->n_allow_discovered + 1) * sizeof *opts->allow_discovered);
  if (grown == NULL)
    return REDLOCK_ENOMEM;
  opts->allow_discovered = grown;
  char *copy = str_ndup(pattern, len);
  if (copy == NULL)
    return REDLOCK_ENOMEM;
  grown[opts->n_allow_discovered++] = copy;
  return 0;
}

int redlock_options_set_log(redlock_options_t *opts, int min_level, redlock_log_cb cb, void *arg) {
  if (opts == NULL || min_level < REDLOCK_LOG_DEBUG || min_level > REDLOCK_LOG_ERROR)
    return REDLOCK_EINVAL;
  opts->log_level = min_level;
  opts->log_cb = cb;
  opts->log_arg = arg;
  return 0;
}

/* ---- getters: the defaults' one source for bindings (redlock.h) ----------------------- */

int redlock_options_get_retry(const redlock_options_t *opts, int *retry_count, uint32_t *delay_ms,
                              uint32_t *jitter_ms) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  if (retry_count != NULL)
    *retry_count = opts->retry_count;
  if (delay_ms != NULL)
    *delay_ms = opts->retry_delay_ms;
  if (jitter_ms != NULL)
    *jitter_ms = opts->retry_jitter_ms;
  return 0;
}

int redlock_options_get_drift_factor(const redlock_options_t *opts, double *factor) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  if (factor != NULL)
    *factor = opts->drift_factor;
  return 0;
}

int redlock_options_get_timeouts(const redlock_options_t *opts, uint32_t *connect_ms,
                                 uint32_t *request_ms) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  if (connect_ms != NULL)
    *connect_ms = opts->connect_timeout_ms;
  if (request_ms != NULL)
    *request_ms = opts->request_timeout_ms;
  return 0;
}

int redlock_options_get_max_ttl(const redlock_options_t *opts, uint32_t *max_ttl_ms) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  if (max_ttl_ms != NULL)
    *max_ttl_ms = opts->max_ttl_ms;
  return 0;
}

/* The setters store any int; the getters say 1 or 0, as documented. */
static status_t get_switch(const redlock_options_t *opts, int value, int *enabled) {
  if (opts == NULL)
    return ST_EINVAL;
  if (enabled != NULL)
    *enabled = value != 0;
  return ST_OK;
}

int redlock_options_get_quarantine(const redlock_options_t *opts, int *enabled) {
  return get_switch(opts, opts != NULL && opts->quarantine, enabled);
}

int redlock_options_get_fencing(const redlock_options_t *opts, int *enabled) {
  return get_switch(opts, opts != NULL && opts->fencing, enabled);
}

int redlock_options_get_reentrant(const redlock_options_t *opts, int *enabled) {
  return get_switch(opts, opts != NULL && opts->reentrant, enabled);
}

int redlock_options_get_state_dir(const redlock_options_t *opts, const char **dir) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  if (dir != NULL)
    *dir = opts->state_dir;
  return 0;
}

int redlock_options_get_owner(const redlock_options_t *opts, const char **label) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  if (label != NULL)
    *label = opts->owner;
  return 0;
}

int redlock_options_get_key_prefix(const redlock_options_t *opts, const char **prefix) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  if (prefix != NULL)
    *prefix = opts->key_prefix;
  return 0;
}

/* ---- TLS ------------------------------------------------------------------------------ */

/* Set-time refusals say why through the log callback, as add_node does: no
 * client exists yet whose log could carry it. */
static void options_log(const redlock_options_t *opts, const char *fn, const char *why) {
  if (opts->log_cb != NULL) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s: %s", fn, why);
    opts->log_cb(REDLOCK_LOG_ERROR, msg, opts->log_arg);
  }
}

int redlock_tls_supported(void) { return tls_unsupported_reason() == NULL; }

int redlock_options_set_tls(redlock_options_t *opts, const char *ca_file, const char *ca_dir,
                            const char *cert_file, const char *key_file) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  char why[384];
  int rc = tls_check_files(ca_file, ca_dir, cert_file, key_file, why, sizeof why);
  if (rc != 0) {
    options_log(opts, "redlock_options_set_tls", why);
    return rc;
  }
  char *copies[4];
  const char *const src[4] = {ca_file, ca_dir, cert_file, key_file};
  for (int i = 0; i < 4; i++) {
    if (dup_opt(&copies[i], src[i]) != ST_OK) {
      for (int j = 0; j < i; j++)
        rl_free(copies[j]);
      return REDLOCK_ENOMEM;
    }
  }
  rl_free(opts->tls_ca_file);
  rl_free(opts->tls_ca_dir);
  rl_free(opts->tls_cert_file);
  rl_free(opts->tls_key_file);
  opts->tls_ca_file = copies[0];
  opts->tls_ca_dir = copies[1];
  opts->tls_cert_file = copies[2];
  opts->tls_key_file = copies[3];
  return 0;
}

int redlock_options_set_tls_server_name(redlock_options_t *opts, const char *name) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  if (tls_unsupported_reason() != NULL) {
    options_log(opts, "redlock_options_set_tls_server_name", tls_unsupported_reason());
    return REDLOCK_ENOTSUP;
  }
  char *copy = NULL;
  if (name != NULL) {
    size_t len = strnlen(name, OPTIONS_MAX_TLS_SERVER_NAME + 1);
    int bad = len == 0 || len > OPTIONS_MAX_TLS_SERVER_NAME;
    for (size_t i = 0; i < len && !bad; i++)
      bad = (unsigned char)name[i] <= ' ' || (unsigned char)name[i] >= 0x7f;
    if (bad) {
      options_log(opts, "redlock_options_set_tls_server_name",
                  "the name must be 1 to 255 printable characters without spaces");
      return REDLOCK_EINVAL;
    }
    copy = str_ndup(name, len);
    if (copy == NULL)
      return REDLOCK_ENOMEM;
  }
  rl_free(opts->tls_server_name);
  opts->tls_server_name = copy;
  return 0;
}

int redlock_options_set_tls_verify(redlock_options_t *opts, int verify) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  if (tls_unsupported_reason() != NULL) {
    options_log(opts, "redlock_options_set_tls_verify", tls_unsupported_reason());
    return REDLOCK_ENOTSUP;
  }
  opts->tls_verify = verify != 0;
  return 0;
}

int redlock_options_set_stats(redlock_options_t *opts, int enabled) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  opts->stats_off = enabled == 0;
  return 0;
}

int redlock_options_set_event_cb(redlock_options_t *opts, redlock_event_cb cb, void *arg) {
  if (opts == NULL)
    return REDLOCK_EINVAL;
  opts->event_cb = cb;
  opts->event_arg = cb != NULL ? arg : NULL;
  return 0;
}
