/* metrics_http.c: a process that holds Redlock locks and serves its client's
 * stats at http://127.0.0.1:PORT/metrics (Prometheus text) and
 * /metrics.json, all on one libuv loop (redlock_open_uv: no thread of the
 * library's own, and no locking between the HTTP side and the client).
 *
 *   example-metrics-http [--port P] [--no-quarantine] URI [URI...]
 *
 * It takes "metrics_http:leader" and keeps it with redlock_watch, and every
 * 50 ms locks and unlocks one of four "metrics_http:job:N" resources, so the
 * counters move.  Every event is logged to stderr.  It prints
 * "listening on http://127.0.0.1:PORT/metrics" once ready (PORT 0 = any free
 * port) and exits 0 on SIGINT or SIGTERM after an orderly close.  Loopback
 * only: the endpoint has no authentication.
 *
 * The HTTP side is deliberately small: one request per connection
 * (Connection: close), GET only, the request read up to its blank line. */
#define _POSIX_C_SOURCE 200809L /* uv.h needs POSIX types under -std=c11 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "redlock.h"
#include "redlock_uv.h"

#define MAX_REQUEST 8192

typedef struct {
  uv_loop_t *loop;
  redlock_t *client;
  uv_tcp_t server;
  uv_timer_t jobs;
  uv_signal_t sigint, sigterm;
  redlock_lock_t *leader;
  unsigned job_seq;
  int job_busy;
  int stopping;
} app_t;

typedef struct {
  uv_tcp_t tcp;
  app_t *app;
  char req[MAX_REQUEST];
  size_t len;
  uv_write_t write;
  char *resp;
} http_conn_t;

/* ---- the locks ----------------------------------------------------------------------- */

static void on_event(const redlock_event_t *ev, void *arg) {
  (void)arg;
  int kind = redlock_event_kind(ev);
  const char *res = redlock_event_resource(ev);
  fprintf(stderr, "event %s %s%s%s (%lld us)", redlock_event_kind_name(kind),
          redlock_err_name(redlock_event_status(ev)), res ? " " : "", res ? res : "",
          (long long)redlock_event_duration_us(ev));
  for (int i = 0; i < redlock_event_node_count(ev); i++)
    fprintf(stderr, " %s=%s", redlock_event_node_addr(ev, i), redlock_event_node_verdict(ev, i));
  const char *detail = redlock_event_detail(ev);
  fprintf(stderr, "%s%s\n", detail ? ": " : "", detail ? detail : "");
}

static void leader_lost(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  app_t *app = arg;
  fprintf(stderr, "leader lock lost (%s)\n", redlock_err_name(reason));
  app->leader = NULL; /* the handle stays ours until unlocked: freed at close */
}

static void leader_locked(int status, redlock_lock_t *lock, void *arg) {
  app_t *app = arg;
  if (status != REDLOCK_OK) {
    fprintf(stderr, "leader lock not taken: %s\n", redlock_strerror(status));
    return;
  }
  app->leader = lock;
  redlock_watch(app->client, lock, leader_lost, app);
}

static void job_unlocked(int status, void *arg) {
  (void)status;
  app_t *app = arg;
  app->job_busy = 0;
}

static void job_locked(int status, redlock_lock_t *lock, void *arg) {
  app_t *app = arg;
  if (status != REDLOCK_OK || app->stopping) {
    app->job_busy = 0;
    return; /* a lock granted while stopping is released by the close */
  }
  /* The "work" is instant: release at once. */
  if (redlock_unlock_async(app->client, lock, job_unlocked, app) != 0)
    app->job_busy = 0;
}

static void jobs_tick(uv_timer_t *timer) {
  app_t *app = timer->data;
  if (app->job_busy || app->stopping)
    return;
  char resource[64];
  snprintf(resource, sizeof resource, "metrics_http:job:%u", app->job_seq++ % 4);
  app->job_busy = 1;
  if (redlock_lock_async(app->client, resource, 5000, 0, job_locked, app) != 0)
    app->job_busy = 0;
}

/* ---- HTTP ------------------------------------------------------------------------------ */

static void conn_closed(uv_handle_t *handle) {
  http_conn_t *conn = handle->data;
  free(conn->resp);
  free(conn);
}

static void written(uv_write_t *req, int status) {
  (void)status;
  http_conn_t *conn = req->data;
  uv_close((uv_handle_t *)&conn->tcp, conn_closed);
}

/* Builds "HTTP/1.1 <status>" headers + body into conn->resp and writes it. */
static void respond(http_conn_t *conn, const char *status, const char *type, const char *body,
                    size_t body_len) {
  char head[256];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n",
                   status, type, body_len);
  conn->resp = malloc((size_t)n + body_len);
  if (conn->resp == NULL) {
    uv_close((uv_handle_t *)&conn->tcp, conn_closed);
    return;
  }
  memcpy(conn->resp, head, (size_t)n);
  memcpy(conn->resp + n, body, body_len);
  uv_buf_t buf = uv_buf_init(conn->resp, (unsigned)((size_t)n + body_len));
  conn->write.data = conn;
  if (uv_write(&conn->write, (uv_stream_t *)&conn->tcp, &buf, 1, written) != 0)
    uv_close((uv_handle_t *)&conn->tcp, conn_closed);
}

/* The stats in a malloc'ed buffer (measured, then rendered until it fits). */
static char *render_stats(redlock_t *client, int format, int *len) {
  int need = redlock_stats(client, format, NULL, 0);
  while (need >= 0) {
    size_t size = (size_t)need + 4096; /* room for counters that grow meanwhile */
    char *buf = malloc(size);
    if (buf == NULL) {
      *len = REDLOCK_ENOMEM;
      return NULL;
    }
    int got = redlock_stats(client, format, buf, size);
    if (got >= 0 && (size_t)got < size) {
      *len = got;
      return buf;
    }
    free(buf);
    need = got;
  }
  *len = need;
  return NULL;
}

static void handle_request(http_conn_t *conn) {
  char method[8], path[256];
  if (conn->app->stopping) { /* the client may be gone already */
    respond(conn, "503 Service Unavailable", "text/plain", "stopping\n", 9);
    return;
  }
  if (sscanf(conn->req, "%7s %255s", method, path) != 2) {
    respond(conn, "400 Bad Request", "text/plain", "bad request\n", 12);
    return;
  }
  if (strcmp(method, "GET") != 0) {
    respond(conn, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
    return;
  }
  int format = strcmp(path, "/metrics") == 0        ? REDLOCK_STATS_PROMETHEUS
               : strcmp(path, "/metrics.json") == 0 ? REDLOCK_STATS_JSON
                                                    : 0;
  if (format == 0) {
    respond(conn, "404 Not Found", "text/plain", "try /metrics\n", 13);
    return;
  }
  int len = 0;
  char *text = render_stats(conn->app->client, format, &len);
  if (text == NULL) {
    const char *why = redlock_strerror(len);
    respond(conn, "500 Internal Server Error", "text/plain", why, strlen(why));
    return;
  }
  respond(conn, "200 OK",
          format == REDLOCK_STATS_JSON ? "application/json"
                                       : "text/plain; version=0.0.4; charset=utf-8",
          text, (size_t)len);
  free(text);
}

static void alloc_cb(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  http_conn_t *conn = handle->data;
  size_t room = sizeof conn->req - 1 - conn->len;
  *buf = uv_buf_init(conn->req + conn->len, (unsigned)room);
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  http_conn_t *conn = stream->data;
  if (nread < 0 || (nread == 0 && conn->len == sizeof conn->req - 1)) {
    uv_close((uv_handle_t *)stream, conn_closed); /* closed early, or a request too large */
    return;
  }
  conn->len += (size_t)nread;
  conn->req[conn->len] = '\0';
  if (strstr(conn->req, "\r\n\r\n") == NULL && strstr(conn->req, "\n\n") == NULL) {
    if (conn->len == sizeof conn->req - 1)
      uv_close((uv_handle_t *)stream, conn_closed);
    return;
  }
  uv_read_stop(stream);
  handle_request(conn);
}

static void on_connection(uv_stream_t *server, int status) {
  app_t *app = server->data;
  if (status != 0)
    return;
  http_conn_t *conn = calloc(1, sizeof *conn);
  if (conn == NULL)
    return;
  conn->app = app;
  uv_tcp_init(app->loop, &conn->tcp);
  conn->tcp.data = conn;
  if (uv_accept(server, (uv_stream_t *)&conn->tcp) != 0 ||
      uv_read_start((uv_stream_t *)&conn->tcp, alloc_cb, read_cb) != 0)
    uv_close((uv_handle_t *)&conn->tcp, conn_closed);
}

/* ---- start and stop ------------------------------------------------------------------- */

static void on_signal(uv_signal_t *sig, int signum) {
  app_t *app = sig->data;
  (void)signum;
  if (app->stopping)
    return;
  app->stopping = 1;
  fprintf(stderr, "stopping\n");
  uv_timer_stop(&app->jobs);
  uv_close((uv_handle_t *)&app->jobs, NULL);
  uv_close((uv_handle_t *)&app->server, NULL);
  uv_close((uv_handle_t *)&app->sigint, NULL);
  uv_close((uv_handle_t *)&app->sigterm, NULL);
  /* Releases the leader lock (and a job lock in flight) and frees the client;
   * the loop ends when its last handle is closed. */
  redlock_close_uv(app->client, NULL, NULL);
}

static int usage(void) {
  fprintf(stderr, "usage: example-metrics-http [--port P] [--no-quarantine] URI [URI...]\n");
  return 64;
}

int main(int argc, char **argv) {
  int port = 9464, quarantine = 1;
  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return 70;
  int nodes = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
      port = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--no-quarantine") == 0) {
      quarantine = 0;
    } else if (redlock_options_add_node(opts, argv[i]) == 0) {
      nodes++;
    } else {
      fprintf(stderr, "example-metrics-http: bad master URI or option: %s\n", argv[i]);
      redlock_options_free(opts);
      return usage();
    }
  }
  if (nodes == 0 || port < 0 || port > 65535) {
    redlock_options_free(opts);
    return usage();
  }
  redlock_options_set_quarantine(opts, quarantine);
  redlock_options_set_event_cb(opts, on_event, NULL);

  app_t app;
  memset(&app, 0, sizeof app);
  app.loop = uv_default_loop();
  int rc = redlock_open_uv(&app.client, opts, app.loop);
  redlock_options_free(opts);
  if (rc != 0) {
    fprintf(stderr, "example-metrics-http: %s\n", redlock_strerror(rc));
    return 70;
  }

  struct sockaddr_in addr;
  uv_ip4_addr("127.0.0.1", port, &addr);
  uv_tcp_init(app.loop, &app.server);
  app.server.data = &app;
  rc = uv_tcp_bind(&app.server, (const struct sockaddr *)&addr, 0);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&app.server, 64, on_connection);
  if (rc != 0) {
    fprintf(stderr, "example-metrics-http: cannot listen on 127.0.0.1:%d: %s\n", port,
            uv_strerror(rc));
    return 70; /* exiting frees everything; nothing is held yet */
  }
  struct sockaddr_storage bound;
  int bound_len = sizeof bound;
  uv_tcp_getsockname(&app.server, (struct sockaddr *)&bound, &bound_len);
  port = ntohs(((struct sockaddr_in *)&bound)->sin_port);

  uv_signal_init(app.loop, &app.sigint);
  uv_signal_init(app.loop, &app.sigterm);
  app.sigint.data = app.sigterm.data = &app;
  uv_signal_start(&app.sigint, on_signal, SIGINT);
  uv_signal_start(&app.sigterm, on_signal, SIGTERM);
  uv_timer_init(app.loop, &app.jobs);
  app.jobs.data = &app;
  uv_timer_start(&app.jobs, jobs_tick, 50, 50);
  redlock_lock_async(app.client, "metrics_http:leader", 10000, 0, leader_locked, &app);

  printf("listening on http://127.0.0.1:%d/metrics\n", port);
  fflush(stdout);
  uv_run(app.loop, UV_RUN_DEFAULT);
  uv_loop_close(app.loop);
  return 0;
}
