/* cli_quar.c: each voter's quarantine as the library judges it, read from a
 * client's master events (cli_quar.h). */
#define _GNU_SOURCE

#include "cli_quar.h"

#include "cli_conn.h" /* conn_apply */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int cli_quar_init(cli_quar_t *q, const nodes_t *nodes) {
  memset(q, 0, sizeof *q);
  q->nodes = nodes;
  q->n = nodes->n;
  q->v = calloc(q->n ? q->n : 1, sizeof *q->v);
  if (q->v == NULL || pthread_mutex_init(&q->mu, NULL) != 0) {
    free(q->v);
    q->v = NULL;
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  return 0;
}

void cli_quar_free(cli_quar_t *q) {
  if (q->v == NULL)
    return;
  pthread_mutex_destroy(&q->mu);
  free(q->v);
  q->v = NULL;
}

/* The voter an event's master is: the library labels masters as the URI
 * parser does ("host:port", the path, "NAME@host:port", "cluster@..."). */
static cli_quar_voter_t *voter_of(cli_quar_t *q, const redlock_event_t *ev) {
  const char *label = redlock_event_node_addr(ev, 0);
  for (size_t i = 0; label != NULL && i < q->n; i++)
    if (q->nodes->addrs[i].label != NULL && strcmp(q->nodes->addrs[i].label, label) == 0)
      return &q->v[i];
  return NULL;
}

void cli_quar_event(const redlock_event_t *ev, void *arg) {
  cli_quar_t *q = arg;
  int kind = redlock_event_kind(ev);
  if (kind != REDLOCK_EVENT_NODE_UP && kind != REDLOCK_EVENT_NODE_DOWN &&
      kind != REDLOCK_EVENT_QUARANTINE_END)
    return;
  pthread_mutex_lock(&q->mu);
  cli_quar_voter_t *v = voter_of(q, ev);
  if (v != NULL) {
    v->seen = 1;
    v->quarantined = 0;
    const char *verdict = redlock_event_node_verdict(ev, 0);
    const char *detail = redlock_event_detail(ev);
    /* "connected; in failover quarantine for another 59000 ms" */
    const char *in = detail != NULL ? strstr(detail, "; in ") : NULL;
    const char *other = in != NULL ? strstr(in, " for another ") : NULL;
    if (kind == REDLOCK_EVENT_NODE_UP && verdict != NULL && strcmp(verdict, "quarantined") == 0 &&
        other != NULL) {
      size_t len = (size_t)(other - (in + 5));
      if (len >= sizeof v->name)
        len = sizeof v->name - 1;
      memcpy(v->name, in + 5, len);
      v->name[len] = '\0';
      uint64_t ms = strtoull(other + 13, NULL, 10);
      v->until_ns = now_ns() + ms * 1000000u;
      v->quarantined = 1;
    }
  }
  pthread_mutex_unlock(&q->mu);
}

uint64_t cli_quar_left_ms(cli_quar_t *q, size_t i) {
  if (q->v == NULL || i >= q->n)
    return 0;
  pthread_mutex_lock(&q->mu);
  uint64_t now = now_ns(), until = q->v[i].quarantined ? q->v[i].until_ns : 0;
  pthread_mutex_unlock(&q->mu);
  return until > now ? (until - now + 999999u) / 1000000u : 0;
}

int cli_quar_why(cli_quar_t *q, size_t i, char *buf, size_t size) {
  if (size > 0)
    buf[0] = '\0';
  uint64_t left = cli_quar_left_ms(q, i);
  if (left == 0)
    return 0;
  char name[sizeof q->v[0].name];
  pthread_mutex_lock(&q->mu);
  memcpy(name, q->v[i].name, sizeof name);
  pthread_mutex_unlock(&q->mu);
  /* Whole seconds, rounded up, from 10 s on: the end is what a person
   * waits for. */
  if (left >= 10000)
    snprintf(buf, size, "%s: %" PRIu64 " s left", name, (left + 999) / 1000);
  else
    snprintf(buf, size, "%s: %" PRIu64 " ms left", name, left);
  return 1;
}

/* The question's client logs nothing: its findings are the events. */
static void quiet_log(int level, const char *msg, void *arg) {
  (void)level;
  (void)msg;
  (void)arg;
}

int cli_quar_ask(cli_quar_t *q, conn_opts_t *conn, int quarantine, uint64_t max_ttl_ms,
                 uint64_t connect_ms) {
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL) {
    err_msg("out of memory");
    return EXIT_INTERNAL;
  }
  int rc =
      redlock_options_set_log(opts, REDLOCK_LOG_ERROR, g_verbosity >= 1 ? log_cb : quiet_log, NULL);
  for (size_t i = 0; rc == 0 && i < conn->nodes.n; i++)
    rc = redlock_options_add_node(opts, conn->nodes.uris[i]);
  if (rc == 0)
    rc = redlock_options_set_quarantine(opts, quarantine);
  if (rc == 0 && max_ttl_ms)
    rc = redlock_options_set_max_ttl(opts, (uint32_t)max_ttl_ms);
  if (rc == 0 && state_dir_apply(opts) != 0) {
    redlock_options_free(opts);
    return EXIT_USAGE;
  }
  if (rc == 0)
    rc = redlock_options_set_timeouts(opts, connect_ms ? (uint32_t)connect_ms : 1000, 100);
  if (rc == 0)
    rc = redlock_options_set_event_cb(opts, cli_quar_event, q);
  redlock_t *client = NULL;
  int status = conn_open_client(conn, opts, rc, &client);
  if (client != NULL)
    redlock_close(client);
  return status;
}
