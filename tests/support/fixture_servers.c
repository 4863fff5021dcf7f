/* fixture_servers.c: the masters of a fixture (see fixture.h): start, stop,
 * pause, and what is on every master, with waits.  Plain C on top of the
 * harness, without cmocka or redlock symbols, so that the CLI driver (which
 * links neither) can use it; failures are return values. */
#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fx_servers_start(fx_t *fx, size_t n, const rh_options_t *opts) {
  if (n > FX_MAX_SERVERS || (n > 0 && rh_cluster_start(fx->servers, n, opts) != 0)) {
    fprintf(stderr, "fixture: cannot start %zu %s processes\n", n, rh_server_name());
    return -1;
  }
  fx->n = n;
  return 0;
}

void fx_servers_stop(fx_t *fx) {
  /* Resume first: a stopped server delays its own SIGTERM, and a client
   * closing against it waits for its request deadlines. */
  for (size_t i = 0; i < FX_MAX_SERVERS; i++)
    if (fx->servers[i] != NULL && rh_server_pid(fx->servers[i]) != 0)
      rh_server_resume(fx->servers[i]);
  rh_cluster_free(fx->servers, FX_MAX_SERVERS);
  fx->n = 0;
}

int fx_pause(fx_t *fx, unsigned mask, int pause) {
  int rc = 0;
  for (size_t i = 0; i < fx->n; i++)
    if (mask & (1u << i))
      rc |= pause ? rh_server_pause(fx->servers[i]) : rh_server_resume(fx->servers[i]);
  return rc != 0 ? -1 : 0;
}

void fx_node_list(const fx_t *fx, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < fx->n && len < size; i++) {
    int w =
        snprintf(buf + len, size - len, "%s%s", i > 0 ? "," : "", rh_server_uri(fx->servers[i]));
    len += w > 0 ? (size_t)w : 0;
  }
}

int fx_run_example(const fx_t *fx, const char *path, char *out, size_t size) {
  char nodes[1024], cmd[2048];
  fx_node_list(fx, nodes, sizeof nodes);
  for (char *p = nodes; (p = strchr(p, ',')) != NULL;)
    *p = ' ';
  snprintf(cmd, sizeof cmd, "%s --no-quarantine %s 2>&1", path, nodes);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  size_t n = fread(out, 1, size - 1, f);
  out[n] = '\0';
  int st = pclose(f);
  if (st != 0 || fx_verbose())
    fprintf(stderr, "%s\n", out);
  return st;
}

void fx_copy_span(char *out, size_t size, const char *from, const char *stops) {
  size_t n = strcspn(from, stops);
  if (n >= size)
    n = size - 1;
  memcpy(out, from, n);
  out[n] = '\0';
}

void fx_label(const rh_server_t *s, char *buf, size_t size) {
  snprintf(buf, size, "127.0.0.1:%d", rh_server_port(s));
}

/* ---- values ------------------------------------------------------------------------ */

size_t fx_count_value(const fx_t *fx, size_t n, const char *key, const char *value) {
  size_t on = 0;
  char buf[2048];
  for (size_t i = 0; i < n; i++) {
    rh_server_t *s = fx->servers[i];
    /* A master that is down holds nothing (and would cost a connect). */
    if (rh_server_pid(s) != 0 && rh_server_command(s, buf, sizeof buf, "GET %s", key) == 0 &&
        strcmp(buf, value) == 0)
      on++;
  }
  return on;
}

/* One wait record for the predicates below. */
typedef struct {
  const fx_t *fx;
  size_t n;
  const char *key; /* or channel */
  const char *value;
  long long bound;
  int at_most;
} fx_wait_arg_t;

static int value_everywhere(void *arg) {
  const fx_wait_arg_t *w = arg;
  return fx_count_value(w->fx, w->fx->n, w->key, w->value) == w->fx->n;
}

int fx_wait_value_everywhere(const fx_t *fx, const char *key, const char *value, int timeout_ms) {
  fx_wait_arg_t w = {fx, fx->n, key, value, 0, 0};
  return rh_wait_until(value_everywhere, &w, timeout_ms);
}

int fx_wait_nil_everywhere(const fx_t *fx, const char *key, int timeout_ms) {
  return fx_wait_value_everywhere(fx, key, "(nil)", timeout_ms);
}

long long fx_pttl_try(rh_server_t *s, const char *key) {
  char buf[64];
  if (rh_server_command(s, buf, sizeof buf, "PTTL %s", key) != 0)
    return -100;
  return strtoll(buf, NULL, 10);
}

static int pttl_above(void *arg) {
  const fx_wait_arg_t *w = arg;
  for (size_t i = 0; i < w->fx->n; i++)
    if (fx_pttl_try(w->fx->servers[i], w->key) <= w->bound)
      return 0;
  return 1;
}

int fx_wait_pttl_above(const fx_t *fx, const char *key, long long min_pttl, int timeout_ms) {
  fx_wait_arg_t w = {fx, fx->n, key, NULL, min_pttl, 0};
  return rh_wait_until(pttl_above, &w, timeout_ms);
}

size_t fx_exists_on(const fx_t *fx, size_t n, const char *key) {
  size_t on = 0;
  char buf[64];
  for (size_t i = 0; i < n; i++)
    if (rh_server_command(fx->servers[i], buf, sizeof buf, "EXISTS %s", key) == 0 &&
        strcmp(buf, "1") == 0)
      on++;
  return on;
}

static int exists_enough(void *arg) {
  const fx_wait_arg_t *w = arg;
  return fx_exists_on(w->fx, w->n, w->key) >= (size_t)w->bound;
}

int fx_wait_exists_on(const fx_t *fx, size_t n, const char *key, size_t at_least, int timeout_ms) {
  fx_wait_arg_t w = {fx, n, key, NULL, (long long)at_least, 0};
  return rh_wait_until(exists_enough, &w, timeout_ms);
}

/* ---- subscribers ----------------------------------------------------------------------- */

long fx_numsub(rh_server_t *s, const char *channel) {
  char buf[512];
  if (rh_server_command(s, buf, sizeof buf, "PUBSUB NUMSUB %s", channel) != 0)
    return -1;
  const char *nl = strchr(buf, '\n'); /* "channel\nN" */
  return nl != NULL ? strtol(nl + 1, NULL, 10) : -1;
}

long fx_numsub_min(const fx_t *fx, const char *channel) {
  long fewest = -1;
  for (size_t i = 0; i < fx->n; i++) {
    long n = fx_numsub(fx->servers[i], channel);
    if (n < 0)
      return -1;
    if (fewest < 0 || n < fewest)
      fewest = n;
  }
  return fewest;
}

static int subscribed(void *arg) {
  const fx_wait_arg_t *w = arg;
  for (size_t i = 0; i < w->n; i++) {
    long subs = fx_numsub(w->fx->servers[i], w->key);
    if (subs < 0 || (w->at_most ? subs > w->bound : subs < w->bound))
      return 0;
  }
  return 1;
}

int fx_wait_subscribed(const fx_t *fx, size_t n, const char *channel, long at_least,
                       int timeout_ms) {
  fx_wait_arg_t w = {fx, n, channel, NULL, at_least, 0};
  return rh_wait_until(subscribed, &w, timeout_ms);
}

int fx_wait_subscribed_at_most(const fx_t *fx, size_t n, const char *channel, long at_most,
                               int timeout_ms) {
  fx_wait_arg_t w = {fx, n, channel, NULL, at_most, 1};
  return rh_wait_until(subscribed, &w, timeout_ms);
}
