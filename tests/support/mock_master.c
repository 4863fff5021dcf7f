/* mock_master.c: the in-process scriptable Redis master (see mock_master.h).
 * Requests are parsed with hiredis' own reader (a command is a RESP array of
 * bulk strings, which the reply parser reads as well), and SCRIPT LOAD is
 * answered with the SHA1 of the embedded script of the same body
 * (scripts.h), so no RESP parser or SHA1 of its own. */
#include "mock_master.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/scripts.h"

typedef struct rule {
  struct rule *next;
  char name[32];
  mock_action_t action;
  char *reply; /* NULL: the default answer */
  unsigned left;
  int always;
} rule_t;

typedef struct mconn {
  uv_tcp_t tcp;
  struct mconn *next;
  mock_master_t *m;
  unsigned id;
  redisReader *reader;
  int closing;
  int holding; /* a held reply is queued: later ones wait behind it */
  char *held;
  size_t held_len, held_cap;
  unsigned n_held;
  char **channels; /* subscriptions */
  size_t n_channels;
} mconn_t;

struct mock_master {
  uv_loop_t *loop;
  uv_tcp_t *listener; /* NULL while not listening */
  int port;
  char run_id[41];
  long long uptime;
  char role[16];
  char replid[41], replid2[41];
  long replicas;
  rule_t *rules;
  int close_on_accept;
  mconn_t *conns;
  mock_cmd_t *cmds;
  size_t n_cmds, cap_cmds;
  unsigned accepted, open;
  unsigned handles;        /* uv handles not yet closed */
  uv_timer_t *delay_timer; /* MOCK_DELAY's, made on first use */
  unsigned delay_ms;
  int closing;
  char uri[256];
};

/* A growing byte buffer (the replies of one command, a held queue). */
typedef struct {
  char *data;
  size_t len, cap;
} buf_t;

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  if (q == NULL)
    abort(); /* a test support file: out of memory ends the test */
  return q;
}

static void buf_add(buf_t *b, const void *data, size_t len) {
  if (b->len + len > b->cap) {
    b->cap = (b->len + len) * 2 + 64;
    b->data = xrealloc(b->data, b->cap);
  }
  memcpy(b->data + b->len, data, len);
  b->len += len;
}

static void buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(buf_t *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0)
    buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void buf_bulk(buf_t *b, const char *s, size_t len) {
  buf_printf(b, "$%zu\r\n", len);
  buf_add(b, s, len);
  buf_add(b, "\r\n", 2);
}

static void maybe_free_master(mock_master_t *m) {
  if (!m->closing || m->handles > 0)
    return;
  while (m->rules != NULL) {
    rule_t *r = m->rules;
    m->rules = r->next;
    free(r->reply);
    free(r);
  }
  for (size_t i = 0; i < m->n_cmds; i++) {
    for (int a = 0; a < m->cmds[i].argc; a++)
      free(m->cmds[i].argv[a]);
    free(m->cmds[i].argv);
    free(m->cmds[i].lens);
  }
  free(m->cmds);
  free(m);
}

/* ---- connections ------------------------------------------------------------------ */

typedef struct {
  uv_write_t req;
  uv_buf_t buf;
} write_t;

static void write_done(uv_write_t *req, int status) {
  (void)status; /* a peer gone mid-write is what some tests do */
  write_t *w = (write_t *)req;
  free(w->buf.base);
  free(w);
}

static void conn_write(mconn_t *c, const char *data, size_t len) {
  if (c->closing || len == 0)
    return;
  write_t *w = xrealloc(NULL, sizeof *w);
  w->buf = uv_buf_init(xrealloc(NULL, len), (unsigned)len);
  memcpy(w->buf.base, data, len);
  /* uv_write copies the buffer array; a local copy also keeps GCC 12's
   * -Wstringop-overread (a false positive in the ThreadSanitizer build) quiet. */
  uv_buf_t buf = w->buf;
  if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, write_done) != 0) {
    free(w->buf.base);
    free(w);
  }
}

static void conn_closed(uv_handle_t *handle) {
  mconn_t *c = handle->data;
  mock_master_t *m = c->m;
  for (mconn_t **p = &m->conns; *p != NULL; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  if (c->reader != NULL)
    redisReaderFree(c->reader);
  for (size_t i = 0; i < c->n_channels; i++)
    free(c->channels[i]);
  free(c->channels);
  free(c->held);
  free(c);
  m->handles--;
  maybe_free_master(m);
}

static void conn_close(mconn_t *c) {
  if (c->closing)
    return;
  c->closing = 1;
  c->m->open--;
  uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

/* A reply in turn: written now, or queued behind a held one. */
static void conn_emit(mconn_t *c, const char *data, size_t len, int hold) {
  if (hold)
    c->holding = 1;
  if (!c->holding) {
    conn_write(c, data, len);
    return;
  }
  buf_t b = {c->held, c->held_len, c->held_cap};
  buf_add(&b, data, len);
  c->held = b.data;
  c->held_len = b.len;
  c->held_cap = b.cap;
  c->n_held++;
}

static int conn_subscribed(const mconn_t *c, const char *channel, size_t len) {
  for (size_t i = 0; i < c->n_channels; i++)
    if (strlen(c->channels[i]) == len && memcmp(c->channels[i], channel, len) == 0)
      return (int)i;
  return -1;
}

/* ---- answers ---------------------------------------------------------------------- */

static void answer_script(const mock_cmd_t *cmd, buf_t *out) {
  if (cmd->argc >= 3 && strcasecmp(cmd->argv[1], "LOAD") == 0) {
    for (int id = 0; id < SCRIPT_COUNT; id++) {
      const script_t *s = script_get((script_id_t)id);
      if (s->body_len == cmd->lens[2] && memcmp(s->body, cmd->argv[2], s->body_len) == 0) {
        buf_bulk(out, s->sha1, 40);
        return;
      }
    }
    buf_printf(out, "-ERR mock: unknown script body\r\n");
    return;
  }
  buf_printf(out, "+OK\r\n");
}

/* SSUBSCRIBE / SUNSUBSCRIBE: the shard forms' confirmations, on the same
 * per-connection set as SUBSCRIBE (the client subscribes a shard channel
 * plainly first, notify.c says why; SUNSUBSCRIBE leaves the set to the
 * UNSUBSCRIBE that follows). */
static void answer_shard(mconn_t *c, const mock_cmd_t *cmd, int subscribe, buf_t *out) {
  for (int a = 1; a < cmd->argc; a++) {
    if (subscribe && conn_subscribed(c, cmd->argv[a], cmd->lens[a]) < 0) {
      c->channels = xrealloc(c->channels, (c->n_channels + 1) * sizeof *c->channels);
      c->channels[c->n_channels++] = strdup(cmd->argv[a]);
    }
    buf_printf(out, "*3\r\n");
    buf_bulk(out, subscribe ? "ssubscribe" : "sunsubscribe", subscribe ? 10 : 12);
    buf_bulk(out, cmd->argv[a], cmd->lens[a]);
    buf_printf(out, ":%zu\r\n", c->n_channels);
  }
}

static void answer_subscribe(mconn_t *c, const mock_cmd_t *cmd, int subscribe, buf_t *out) {
  for (int a = 1; a < cmd->argc; a++) {
    int at = conn_subscribed(c, cmd->argv[a], cmd->lens[a]);
    if (subscribe && at < 0) {
      c->channels = xrealloc(c->channels, (c->n_channels + 1) * sizeof *c->channels);
      c->channels[c->n_channels++] = strdup(cmd->argv[a]);
    } else if (!subscribe && at >= 0) {
      free(c->channels[at]);
      c->channels[at] = c->channels[--c->n_channels];
    }
    buf_printf(out, "*3\r\n");
    buf_bulk(out, subscribe ? "subscribe" : "unsubscribe", subscribe ? 9 : 11);
    buf_bulk(out, cmd->argv[a], cmd->lens[a]);
    buf_printf(out, ":%zu\r\n", c->n_channels);
  }
}

/* What a real master would answer (as far as our client is concerned). */
static void answer_default(mconn_t *c, const mock_cmd_t *cmd, buf_t *out) {
  const char *name = cmd->argv[0];
  if (strcasecmp(name, "PING") == 0) {
    buf_printf(out, "+PONG\r\n");
  } else if (strcasecmp(name, "SCRIPT") == 0) {
    answer_script(cmd, out);
  } else if (strcasecmp(name, "INFO") == 0) {
    char info[512]; /* every section asked for: the client's parsers skip the rest */
    int n = snprintf(info, sizeof info,
                     "# Server\r\nredis_version:7.2.0\r\nrun_id:%s\r\nuptime_in_seconds:%lld\r\n"
                     "# Replication\r\nrole:%s\r\nconnected_slaves:%ld\r\nmaster_replid:%s\r\n"
                     "master_replid2:%s\r\n",
                     c->m->run_id, c->m->uptime, c->m->role, c->m->replicas, c->m->replid,
                     c->m->replid2);
    buf_bulk(out, info, (size_t)n);
  } else if (strcasecmp(name, "SUBSCRIBE") == 0 || strcasecmp(name, "UNSUBSCRIBE") == 0) {
    answer_subscribe(c, cmd, strcasecmp(name, "SUBSCRIBE") == 0, out);
  } else if (strcasecmp(name, "SSUBSCRIBE") == 0 || strcasecmp(name, "SUNSUBSCRIBE") == 0) {
    answer_shard(c, cmd, strcasecmp(name, "SSUBSCRIBE") == 0, out);
  } else if (strcasecmp(name, "EVALSHA") == 0 || strcasecmp(name, "EVAL") == 0) {
    buf_printf(out, ":1\r\n");
  } else {
    buf_printf(out, "+OK\r\n"); /* AUTH, SELECT, CLIENT, SET, ... */
  }
}

static rule_t *rule_find(mock_master_t *m, const char *name) {
  for (rule_t *r = m->rules; r != NULL; r = r->next)
    if ((r->always || r->left > 0) &&
        (strcmp(r->name, "*") == 0 || strcasecmp(r->name, name) == 0)) {
      if (!r->always)
        r->left--;
      return r;
    }
  return NULL;
}

static const mock_cmd_t *record(mock_master_t *m, mconn_t *c, const redisReply *req) {
  if (m->n_cmds == m->cap_cmds) {
    m->cap_cmds = m->cap_cmds * 2 + 16;
    m->cmds = xrealloc(m->cmds, m->cap_cmds * sizeof *m->cmds);
  }
  mock_cmd_t *cmd = &m->cmds[m->n_cmds++];
  cmd->conn = c->id;
  cmd->argc = (int)req->elements;
  cmd->argv = xrealloc(NULL, req->elements * sizeof *cmd->argv);
  cmd->lens = xrealloc(NULL, req->elements * sizeof *cmd->lens);
  for (size_t i = 0; i < req->elements; i++) {
    const redisReply *e = req->element[i];
    cmd->lens[i] = e->len;
    cmd->argv[i] = xrealloc(NULL, e->len + 1);
    memcpy(cmd->argv[i], e->str, e->len);
    cmd->argv[i][e->len] = '\0';
  }
  return cmd;
}

static int is_command(const redisReply *req) {
  if (req->type != REDIS_REPLY_ARRAY || req->elements == 0)
    return 0;
  for (size_t i = 0; i < req->elements; i++)
    if (req->element[i]->type != REDIS_REPLY_STRING)
      return 0;
  return 1;
}

static void delay_over(uv_timer_t *timer) { mock_master_release(timer->data); }

/* MOCK_DELAY: the held replies go out once the delay is over. */
static void delay_start(mock_master_t *m) {
  if (m->delay_timer == NULL) {
    m->delay_timer = calloc(1, sizeof *m->delay_timer);
    if (m->delay_timer == NULL)
      abort();
    uv_timer_init(m->loop, m->delay_timer);
    m->delay_timer->data = m;
    m->handles++;
  }
  if (!uv_is_active((uv_handle_t *)m->delay_timer))
    uv_timer_start(m->delay_timer, delay_over, m->delay_ms, 0);
}

static void serve(mconn_t *c, const redisReply *req) {
  mock_master_t *m = c->m;
  if (!is_command(req)) {
    conn_close(c); /* Redis too drops a client that speaks no RESP */
    return;
  }
  const mock_cmd_t *cmd = record(m, c, req);
  rule_t *rule = rule_find(m, cmd->argv[0]);
  buf_t out = {0};
  if (rule != NULL && rule->reply != NULL)
    buf_add(&out, rule->reply, strlen(rule->reply));
  else
    answer_default(c, cmd, &out);
  mock_action_t action = rule != NULL ? rule->action : MOCK_REPLY;
  switch (action) {
  case MOCK_CLOSE:
    conn_close(c);
    break;
  case MOCK_CLOSE_MID:
    conn_write(c, out.data, out.len / 2);
    conn_close(c);
    break;
  case MOCK_DELAY:
    conn_emit(c, out.data, out.len, 1);
    delay_start(m);
    break;
  default:
    conn_emit(c, out.data, out.len, action == MOCK_HOLD);
    break;
  }
  free(out.data);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  (void)handle;
  buf->base = xrealloc(NULL, suggested);
  buf->len = suggested;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  mconn_t *c = stream->data;
  if (nread < 0) {
    conn_close(c);
  } else if (nread > 0 && !c->closing) {
    if (redisReaderFeed(c->reader, buf->base, (size_t)nread) != REDIS_OK) {
      conn_close(c);
    } else {
      void *req = NULL;
      while (!c->closing) {
        if (redisReaderGetReply(c->reader, &req) != REDIS_OK) {
          conn_close(c); /* not RESP: a TLS ClientHello, say */
          break;
        }
        if (req == NULL)
          break;
        serve(c, req);
        freeReplyObject(req);
      }
    }
  }
  free(buf->base);
}

static void on_connection(uv_stream_t *server, int status) {
  mock_master_t *m = server->data;
  if (status != 0)
    return;
  mconn_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    abort();
  c->m = m;
  uv_tcp_init(m->loop, &c->tcp);
  c->tcp.data = c;
  m->handles++;
  m->open++;
  c->next = m->conns;
  m->conns = c;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    conn_close(c);
    return;
  }
  c->id = ++m->accepted;
  c->reader = redisReaderCreate();
  if (c->reader == NULL)
    abort();
  if (m->close_on_accept)
    conn_close(c);
  else
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- the server ------------------------------------------------------------------ */

static void handle_closed(uv_handle_t *handle) {
  mock_master_t *m = handle->data;
  free(handle);
  m->handles--;
  maybe_free_master(m);
}

int mock_master_listen(mock_master_t *m) {
  if (m->listener != NULL)
    return 0;
  uv_tcp_t *l = calloc(1, sizeof *l);
  if (l == NULL)
    return UV_ENOMEM;
  uv_tcp_init(m->loop, l);
  l->data = m;
  m->handles++;
  struct sockaddr_in sa;
  uv_ip4_addr("127.0.0.1", m->port, &sa);
  int rc = uv_tcp_bind(l, (const struct sockaddr *)&sa, 0);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)l, 128, on_connection);
  if (rc != 0) {
    uv_close((uv_handle_t *)l, handle_closed);
    return rc;
  }
  if (m->port == 0) {
    struct sockaddr_in bound;
    int len = sizeof bound;
    uv_tcp_getsockname(l, (struct sockaddr *)&bound, &len);
    m->port = ntohs(bound.sin_port);
  }
  m->listener = l;
  return 0;
}

void mock_master_stop_listening(mock_master_t *m) {
  if (m->listener == NULL)
    return;
  uv_close((uv_handle_t *)m->listener, handle_closed); /* the socket is closed now */
  m->listener = NULL;
}

mock_master_t *mock_master_start(uv_loop_t *loop) {
  /* A reply written after the client hung up (tests drop connections with
   * replies on their way) must fail with EPIPE, not kill the test. */
  signal(SIGPIPE, SIG_IGN);
  mock_master_t *m = calloc(1, sizeof *m);
  if (m == NULL)
    return NULL;
  m->loop = loop;
  memset(m->run_id, 'a', 40);
  m->uptime = 3600;
  strcpy(m->role, "master");
  memset(m->replid, 'b', 40);
  memset(m->replid2, '0', 40);
  m->delay_ms = 50;
  if (mock_master_listen(m) != 0) {
    m->closing = 1;
    if (m->handles == 0)
      maybe_free_master(m);
    return NULL; /* (freed once the listener's handle closes) */
  }
  return m;
}

int mock_master_port(const mock_master_t *m) { return m->port; }

const char *mock_master_uri(mock_master_t *m, const char *userinfo, const char *suffix) {
  snprintf(m->uri, sizeof m->uri, "redis://%s%s127.0.0.1:%d%s", userinfo ? userinfo : "",
           userinfo ? "@" : "", m->port, suffix ? suffix : "");
  return m->uri;
}

void mock_master_set_run_id(mock_master_t *m, const char *run_id) {
  snprintf(m->run_id, sizeof m->run_id, "%s", run_id);
}

void mock_master_set_uptime(mock_master_t *m, long long seconds) { m->uptime = seconds; }

void mock_master_set_replication(mock_master_t *m, const char *role, const char *replid,
                                 const char *replid2, long replicas) {
  snprintf(m->role, sizeof m->role, "%s", role);
  snprintf(m->replid, sizeof m->replid, "%s", replid);
  snprintf(m->replid2, sizeof m->replid2, "%s", replid2);
  m->replicas = replicas;
}

void mock_master_on(mock_master_t *m, const char *command, mock_action_t action, const char *reply,
                    unsigned times) {
  rule_t *r = calloc(1, sizeof *r);
  if (r == NULL)
    abort();
  snprintf(r->name, sizeof r->name, "%s", command);
  r->action = action;
  r->reply = reply != NULL ? strdup(reply) : NULL;
  r->left = times;
  r->always = times == 0;
  rule_t **tail = &m->rules;
  while (*tail != NULL)
    tail = &(*tail)->next;
  *tail = r;
}

void mock_master_clear_rules(mock_master_t *m) {
  while (m->rules != NULL) {
    rule_t *r = m->rules;
    m->rules = r->next;
    free(r->reply);
    free(r);
  }
}

void mock_master_set_delay(mock_master_t *m, unsigned ms) { m->delay_ms = ms; }

void mock_master_close_on_accept(mock_master_t *m, int on) { m->close_on_accept = on; }

void mock_master_drop_all(mock_master_t *m) {
  for (mconn_t *c = m->conns; c != NULL; c = c->next)
    conn_close(c);
}

unsigned mock_master_release(mock_master_t *m) {
  unsigned n = 0;
  for (mconn_t *c = m->conns; c != NULL; c = c->next) {
    if (c->closing || !c->holding)
      continue;
    conn_write(c, c->held, c->held_len);
    n += c->n_held;
    c->held_len = 0;
    c->n_held = 0;
    c->holding = 0;
  }
  return n;
}

unsigned mock_master_held(const mock_master_t *m) {
  unsigned n = 0;
  for (const mconn_t *c = m->conns; c != NULL; c = c->next)
    if (!c->closing)
      n += c->n_held;
  return n;
}

static unsigned publish_as(mock_master_t *m, const char *kind, const char *channel,
                           const char *payload) {
  unsigned n = 0;
  buf_t msg = {0};
  buf_printf(&msg, "*3\r\n");
  buf_bulk(&msg, kind, strlen(kind));
  buf_bulk(&msg, channel, strlen(channel));
  buf_bulk(&msg, payload, strlen(payload));
  for (mconn_t *c = m->conns; c != NULL; c = c->next)
    if (!c->closing && conn_subscribed(c, channel, strlen(channel)) >= 0) {
      conn_write(c, msg.data, msg.len); /* a push: never held */
      n++;
    }
  free(msg.data);
  return n;
}

unsigned mock_master_publish(mock_master_t *m, const char *channel, const char *payload) {
  return publish_as(m, "message", channel, payload);
}

unsigned mock_master_spublish(mock_master_t *m, const char *channel, const char *payload) {
  return publish_as(m, "smessage", channel, payload);
}

void mock_master_send_raw(mock_master_t *m, const char *raw) {
  for (mconn_t *c = m->conns; c != NULL; c = c->next)
    conn_write(c, raw, strlen(raw));
}

size_t mock_master_n_commands(const mock_master_t *m) { return m->n_cmds; }

const mock_cmd_t *mock_master_command(const mock_master_t *m, size_t i) {
  return i < m->n_cmds ? &m->cmds[i] : NULL;
}

unsigned mock_master_count(const mock_master_t *m, const char *command) {
  unsigned n = 0;
  for (size_t i = 0; i < m->n_cmds; i++)
    if (strcasecmp(m->cmds[i].argv[0], command) == 0)
      n++;
  return n;
}

const mock_cmd_t *mock_master_last(const mock_master_t *m, const char *command) {
  for (size_t i = m->n_cmds; i-- > 0;)
    if (strcasecmp(m->cmds[i].argv[0], command) == 0)
      return &m->cmds[i];
  return NULL;
}

unsigned mock_master_accepted(const mock_master_t *m) { return m->accepted; }

unsigned mock_master_open_conns(const mock_master_t *m) { return m->open; }

void mock_master_close(mock_master_t *m) {
  m->closing = 1;
  mock_master_stop_listening(m);
  mock_master_drop_all(m);
  if (m->delay_timer != NULL) {
    uv_close((uv_handle_t *)m->delay_timer, handle_closed);
    m->delay_timer = NULL;
  }
  maybe_free_master(m);
}

/* ---- waiting on the loop ------------------------------------------------------------ */

static void deadline_cb(uv_timer_t *timer) { *(int *)timer->data = 1; }

static void free_handle(uv_handle_t *handle) { free(handle); }

int mock_run_until(uv_loop_t *loop, int (*done)(void *arg), void *arg, unsigned timeout_ms) {
  int expired = 0;
  uv_timer_t *timer = calloc(1, sizeof *timer);
  if (timer == NULL)
    abort();
  uv_timer_init(loop, timer);
  timer->data = &expired;
  uv_timer_start(timer, deadline_cb, timeout_ms, 0);
  while (!done(arg) && !expired)
    uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)timer, free_handle);
  return done(arg);
}
