/* fake_server.c: one fake master as a server (fake_server.h): listening,
 * connections, request parsing, the connection-level commands, pub/sub and
 * the faults that act on the process rather than on the data.
 *
 * A connection reads requests with hiredis' reader (a request is a RESP
 * array of bulk strings, which the reader parses as it parses replies),
 * runs each one as it arrives, and queues its reply.  Replies leave in
 * order: each carries the loop time at which it may be written (now; now +
 * the slow delay; a WAIT's timeout), and the queue is written from its head
 * while the head is due, so a slow or blocked reply holds back the ones
 * behind it, as a blocked client does in Redis.
 *
 * A pause is a SIGSTOP: reading stops (requests wait in the socket), nothing
 * is accepted or written; a resume runs what waited, at the clock's time
 * then.  A kill closes the listener (a Unix socket's file goes with it) and
 * every connection and loses the keys; a restart listens again at the same
 * address. */
#define _POSIX_C_SOURCE 200809L
#include "testing/fake_server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/list.h"
#include "util/random.h"

#define FAKE_SUBS_MAX 64 /* channels one connection may subscribe to */
#define FAKE_DAY_US (86400ull * 1000000u)

/* A reply waiting to be written. */
typedef struct fake_pending {
  list_node_t link;
  uint64_t due_ms; /* loop time; UINT64_MAX: never (WAIT 0 with no replica) */
  size_t len;
  char bytes[];
} fake_pending_t;

/* A stream of either kind: Unix socket or TCP, as the master listens. */
typedef union {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_tcp_t tcp;
  uv_pipe_t pipe;
} fake_stream_t;

typedef struct fake_conn {
  list_node_t link; /* in the master's conns */
  fake_stream_t h;
  uv_timer_t timer;    /* writes the queue's head when it is due */
  fake_master_t *m;    /* NULL once detached (closing) */
  redisReader *reader; /* NULL when it could not be made */
  list_node_t queue;   /* fake_pending_t, oldest first */
  char *subs[FAKE_SUBS_MAX];
  size_t sub_lens[FAKE_SUBS_MAX];
  unsigned n_subs;
  int quitting; /* QUIT: close once the queue is written */
  int closing;
  int handles_open; /* 2 (stream, timer) while open */
} fake_conn_t;

struct fake_master {
  fake_where_t where;
  char path[108];
  int port;
  fake_stream_t *listener; /* NULL while down */
  list_node_t conns;
  fake_db_t *db;
  fake_env_t env;
  uint64_t jump_us;    /* this master's clock jumps, added to the kit's clock */
  uint64_t started_us; /* INFO uptime counts from here */
  char run_id[41];
  char replid[41];
  char replid2[41]; /* all zeros unless promoted */
  int down;
  int paused;
  int accept_pending; /* a connection arrived while paused, or while rejecting */
  /* A connection accepted with no memory for it is closed through this
   * handle (libuv stops the listener until a pending connection is taken). */
  fake_stream_t reject;
  int rejecting; /* reject is closing */
  int port_hold; /* TCP, while down: a socket bound to the port (not listening), or -1 */
  int promoted;  /* replid2 is set (a failover) */
  uint32_t slow_ms;
  long long commands;
  int closing;
  unsigned handles_open; /* the listener and the conns still closing */
};

static uint64_t master_now_us(void *arg) {
  fake_master_t *m = arg;
  return m->where.now_us(m->where.clock_arg) + m->jump_us;
}

/* 40 hex digits from the library's random source (a run_id, a replid),
 * different per master and per (re)start. */
static void make_id(char out[41]) {
  unsigned char raw[20] = {0};
  random_bytes(raw, sizeof raw); /* on failure, zeros: still a well-formed id */
  for (int i = 0; i < 20; i++) {
    out[2 * i] = "0123456789abcdef"[raw[i] >> 4];
    out[2 * i + 1] = "0123456789abcdef"[raw[i] & 15u];
  }
  out[40] = '\0';
}

/* ---- writing ------------------------------------------------------------- */

typedef struct {
  uv_write_t req;
  fake_pending_t *p;
} fake_write_t;

static void conn_close(fake_conn_t *c);

static void write_done(uv_write_t *req, int status) {
  (void)status;
  fake_write_t *w = (fake_write_t *)req;
  rl_free(w->p);
  rl_free(w);
}

static void conn_flush(fake_conn_t *c);

static void conn_timer_cb(uv_timer_t *t) { conn_flush(t->data); }

/* Writes the queue from its head while the head is due. */
static void conn_flush(fake_conn_t *c) {
  if (c->closing || c->m == NULL || c->m->paused)
    return;
  uint64_t now = uv_now(c->m->where.loop);
  while (!list_empty(&c->queue)) {
    fake_pending_t *p = list_entry(c->queue.next, fake_pending_t, link);
    if (p->due_ms > now) {
      if (p->due_ms != UINT64_MAX)
        uv_timer_start(&c->timer, conn_timer_cb, p->due_ms - now, 0);
      return;
    }
    list_remove(&p->link);
    fake_write_t *w = rl_malloc(sizeof *w);
    if (w == NULL) { /* no memory to write with: the connection drops, as Redis' would */
      rl_free(p);
      conn_close(c);
      return;
    }
    w->p = p;
    uv_buf_t buf = uv_buf_init(p->bytes, (unsigned)p->len);
    if (uv_write(&w->req, &c->h.stream, &buf, 1, write_done) != 0) {
      rl_free(p);
      rl_free(w);
      conn_close(c);
      return;
    }
  }
  if (c->quitting)
    conn_close(c);
}

/* Queues out's bytes, to go delay_ms from now (UINT64_MAX: never). */
static status_t conn_queue(fake_conn_t *c, const fake_out_t *out, uint64_t delay_ms) {
  if (out->len == 0)
    return ST_OK;
  fake_pending_t *p = rl_malloc(sizeof *p + out->len);
  if (p == NULL)
    return ST_ENOMEM;
  memcpy(p->bytes, out->buf, out->len);
  p->len = out->len;
  p->due_ms = delay_ms == UINT64_MAX ? UINT64_MAX : uv_now(c->m->where.loop) + delay_ms;
  list_insert_tail(&c->queue, &p->link);
  return ST_OK;
}

/* ---- connections --------------------------------------------------------- */

static void conn_free(fake_conn_t *c) {
  while (!list_empty(&c->queue)) {
    fake_pending_t *p = list_entry(c->queue.next, fake_pending_t, link);
    list_remove(&p->link);
    rl_free(p);
  }
  for (unsigned i = 0; i < c->n_subs; i++)
    rl_free(c->subs[i]);
  if (c->reader != NULL)
    redisReaderFree(c->reader);
  rl_free(c);
}

static void master_maybe_free(fake_master_t *m);

static void conn_closed(uv_handle_t *h) {
  fake_conn_t *c = h->data;
  if (--c->handles_open > 0)
    return;
  fake_master_t *m = c->m;
  conn_free(c);
  if (m != NULL) {
    m->handles_open--;
    master_maybe_free(m);
  }
}

static void conn_close(fake_conn_t *c) {
  if (c->closing)
    return;
  c->closing = 1;
  list_remove(&c->link);
  uv_close(&c->h.handle, conn_closed);
  uv_close((uv_handle_t *)&c->timer, conn_closed);
}

static int conn_subscribed(const fake_conn_t *c, const char *ch, size_t len) {
  for (unsigned i = 0; i < c->n_subs; i++)
    if (c->sub_lens[i] == len && memcmp(c->subs[i], ch, len) == 0)
      return (int)i;
  return -1;
}

/* PUBLISH, from a command or a script: to every connection of this master
 * subscribed to the channel. */
static long long master_publish(void *arg, const char *ch, size_t ch_len, const char *msg,
                                size_t msg_len) {
  fake_master_t *m = arg;
  long long receivers = 0;
  for (list_node_t *pos = m->conns.next, *next; pos != &m->conns; pos = next) {
    next = pos->next; /* a connection whose reply cannot be written closes */
    fake_conn_t *c = list_entry(pos, fake_conn_t, link);
    if (conn_subscribed(c, ch, ch_len) < 0)
      continue;
    fake_out_t out = {0};
    if (fake_out_array(&out, 3) == ST_OK && fake_out_bulk(&out, "message", 7) == ST_OK &&
        fake_out_bulk(&out, ch, ch_len) == ST_OK && fake_out_bulk(&out, msg, msg_len) == ST_OK &&
        conn_queue(c, &out, m->slow_ms) == ST_OK) {
      receivers++;
      conn_flush(c);
    }
    fake_out_free(&out);
  }
  return receivers;
}

/* ---- the connection-level commands --------------------------------------- */

static int is(const char *arg, size_t len, const char *name) {
  return strlen(name) == len && strncasecmp(arg, name, len) == 0;
}

/* SUBSCRIBE / SSUBSCRIBE, UNSUBSCRIBE / SUNSUBSCRIBE: one confirmation per
 * channel, each with the connection's count after it. */
static status_t cmd_subscribe(fake_conn_t *c, int sub, const char *kind, int argc,
                              const char *const *argv, const size_t *lens, fake_out_t *out) {
  size_t kind_len = strlen(kind);
  if (sub) {
    for (int i = 1; i < argc; i++) {
      if (conn_subscribed(c, argv[i], lens[i]) < 0) {
        if (c->n_subs == FAKE_SUBS_MAX)
          return fake_out_error(out, "ERR fake master: too many channels on one connection");
        char *copy = rl_malloc(lens[i] + 1);
        if (copy == NULL)
          return ST_ENOMEM;
        memcpy(copy, argv[i], lens[i]);
        copy[lens[i]] = '\0';
        c->subs[c->n_subs] = copy;
        c->sub_lens[c->n_subs++] = lens[i];
      }
      status_t st = fake_out_array(out, 3);
      if (st == ST_OK)
        st = fake_out_bulk(out, kind, kind_len);
      if (st == ST_OK)
        st = fake_out_bulk(out, argv[i], lens[i]);
      if (st == ST_OK)
        st = fake_out_int(out, c->n_subs);
      if (st != ST_OK)
        return st;
    }
    return ST_OK;
  }
  if (argc == 1 && c->n_subs == 0) {
    status_t st = fake_out_array(out, 3);
    if (st == ST_OK)
      st = fake_out_bulk(out, kind, kind_len);
    if (st == ST_OK)
      st = fake_out_nil(out);
    return st == ST_OK ? fake_out_int(out, 0) : st;
  }
  /* With no channel named: every one, newest last as Redis lists them. */
  int all = argc == 1;
  int n = all ? (int)c->n_subs : argc - 1;
  for (int k = 0; k < n; k++) {
    const char *ch = all ? c->subs[0] : argv[k + 1];
    size_t len = all ? c->sub_lens[0] : lens[k + 1];
    status_t st = fake_out_array(out, 3);
    if (st == ST_OK)
      st = fake_out_bulk(out, kind, kind_len);
    if (st == ST_OK)
      st = fake_out_bulk(out, ch, len);
    int at = conn_subscribed(c, ch, len);
    if (at >= 0) {
      rl_free(c->subs[at]);
      for (unsigned j = (unsigned)at; j + 1 < c->n_subs; j++) {
        c->subs[j] = c->subs[j + 1];
        c->sub_lens[j] = c->sub_lens[j + 1];
      }
      c->n_subs--;
    }
    if (st == ST_OK)
      st = fake_out_int(out, c->n_subs);
    if (st != ST_OK)
      return st;
  }
  return ST_OK;
}

static status_t cmd_info(fake_master_t *m, int argc, const char *const *argv, const size_t *lens,
                         fake_out_t *out) {
  int server = argc == 1, repl = argc == 1;
  for (int i = 1; i < argc; i++) {
    server |= is(argv[i], lens[i], "server") || is(argv[i], lens[i], "all") ||
              is(argv[i], lens[i], "everything") || is(argv[i], lens[i], "default");
    repl |= is(argv[i], lens[i], "replication") || is(argv[i], lens[i], "all") ||
            is(argv[i], lens[i], "everything") || is(argv[i], lens[i], "default");
  }
  char text[1024];
  size_t len = 0;
  uint64_t now = master_now_us(m);
  if (server)
    len += (size_t)snprintf(text + len, sizeof text - len,
                            "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n"
                            "process_id:%u\r\nrun_id:%s\r\nuptime_in_seconds:%llu\r\n",
                            m->where.index + 1, m->run_id,
                            (unsigned long long)((now - m->started_us) / 1000000u));
  if (server && repl)
    len += (size_t)snprintf(text + len, sizeof text - len, "\r\n");
  if (repl)
    len += (size_t)snprintf(text + len, sizeof text - len,
                            "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
                            "master_failover_state:no-failover\r\nmaster_replid:%s\r\n"
                            "master_replid2:%s\r\nmaster_repl_offset:0\r\n"
                            "second_repl_offset:%d\r\n",
                            m->replid, m->replid2, m->promoted ? 1 : -1);
  return fake_out_bulk(out, text, len);
}

/* COMMAND INFO: nil for each command, as Redis 7.2 answers for commands it
 * lacks (the fake has neither DELIFEQ nor DELEX). */
static status_t cmd_command(int argc, const char *const *argv, const size_t *lens,
                            fake_out_t *out) {
  if (argc < 2 || !is(argv[1], lens[1], "info"))
    return fake_out_error(out, "ERR fake master: only COMMAND INFO is answered");
  status_t st = fake_out_array(out, argc - 2);
  for (int i = 2; i < argc && st == ST_OK; i++)
    st = fake_out_raw(out, "*-1\r\n", 5);
  return st;
}

static long long parse_ll(const char *s, size_t len, int *ok) {
  char buf[32];
  *ok = 0;
  if (len == 0 || len >= sizeof buf)
    return 0;
  memcpy(buf, s, len);
  buf[len] = '\0';
  char *end;
  long long v = strtoll(buf, &end, 10);
  *ok = *end == '\0';
  return v;
}

/* WAIT numreplicas timeout: the fake has no replica, so it answers 0 at
 * once when none is asked for, else after the timeout (never for 0), as
 * Redis does; *delay_ms says when. */
static status_t cmd_wait(int aof, int argc, const char *const *argv, const size_t *lens,
                         fake_out_t *out, uint64_t *delay_ms) {
  int want = aof ? 4 : 3;
  if (argc != want)
    return fake_out_arity_error(out, argv[0], lens[0]);
  int ok1, ok2, ok3 = 1;
  long long local = aof ? parse_ll(argv[1], lens[1], &ok3) : 0;
  long long replicas = parse_ll(argv[want - 2], lens[want - 2], &ok1);
  long long timeout = parse_ll(argv[want - 1], lens[want - 1], &ok2);
  if (!ok1 || !ok3)
    return fake_out_error(out, "ERR value is not an integer or out of range");
  if (!ok2 || timeout < 0)
    return fake_out_error(out, "ERR timeout is not an integer or out of range");
  if (aof && local > 0)
    return fake_out_error(
        out, "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.");
  if (replicas > 0)
    *delay_ms = timeout == 0 ? UINT64_MAX : (uint64_t)timeout;
  if (!aof)
    return fake_out_int(out, 0);
  status_t st = fake_out_array(out, 2);
  if (st == ST_OK)
    st = fake_out_int(out, 0);
  return st == ST_OK ? fake_out_int(out, 0) : st;
}

/* One request.  *delay_ms: how long its reply waits beyond the slow delay
 * (a WAIT's timeout; UINT64_MAX: for ever). */
static status_t conn_command(fake_conn_t *c, int argc, const char *const *argv, const size_t *lens,
                             fake_out_t *out, uint64_t *delay_ms) {
  fake_master_t *m = c->m;
  const char *name = argv[0];
  size_t len = lens[0];
  m->commands++;
  int sub = is(name, len, "subscribe"), ssub = is(name, len, "ssubscribe");
  int unsub = is(name, len, "unsubscribe"), sunsub = is(name, len, "sunsubscribe");
  if (sub || ssub || unsub || sunsub) {
    if ((sub || ssub) && argc < 2)
      return fake_out_arity_error(out, name, len);
    return cmd_subscribe(c, sub || ssub,
                         sub     ? "subscribe"
                         : ssub  ? "ssubscribe"
                         : unsub ? "unsubscribe"
                                 : "sunsubscribe",
                         argc, argv, lens, out);
  }
  if (is(name, len, "ping")) {
    if (c->n_subs > 0) { /* RESP2 in subscriber mode: a pong message */
      status_t st = fake_out_array(out, 2);
      if (st == ST_OK)
        st = fake_out_bulk(out, "pong", 4);
      return st == ST_OK ? fake_out_bulk(out, argc > 1 ? argv[1] : "", argc > 1 ? lens[1] : 0) : st;
    }
    return argc > 1 ? fake_out_bulk(out, argv[1], lens[1]) : fake_out_status(out, "PONG");
  }
  if (is(name, len, "quit")) {
    c->quitting = 1;
    return fake_out_status(out, "OK");
  }
  if (c->n_subs > 0) {
    char lower[33], text[160]; /* Redis names the command as its table does: lower case */
    size_t n = len < 32 ? len : 32;
    for (size_t i = 0; i < n; i++)
      lower[i] = (char)tolower((unsigned char)name[i]);
    lower[n] = '\0';
    snprintf(text, sizeof text,
             "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
             "RESET are allowed in this context",
             lower);
    return fake_out_error(out, text);
  }
  if (is(name, len, "info"))
    return cmd_info(m, argc, argv, lens, out);
  if (is(name, len, "auth") || is(name, len, "select") || is(name, len, "client") ||
      is(name, len, "readonly"))
    return argc < 2 && !is(name, len, "readonly") ? fake_out_arity_error(out, name, len)
                                                  : fake_out_status(out, "OK");
  if (is(name, len, "command"))
    return cmd_command(argc, argv, lens, out);
  if (is(name, len, "wait") || is(name, len, "waitaof"))
    return cmd_wait(is(name, len, "waitaof"), argc, argv, lens, out, delay_ms);
  return fake_exec(m->db, &m->env, argc, argv, lens, out);
}

/* Runs one parsed request and queues its reply. */
static void conn_request(fake_conn_t *c, const redisReply *r) {
  enum { ARGS_MAX = 256 };
  const char *argv[ARGS_MAX];
  size_t lens[ARGS_MAX];
  fake_out_t out = {0};
  status_t st = ST_OK;
  uint64_t delay_ms = 0;
  if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 || r->elements > ARGS_MAX) {
    st = fake_out_error(&out, "ERR fake master: a request must be an array of 1 to 256 strings");
  } else {
    for (size_t i = 0; i < r->elements; i++) {
      if (r->element[i]->type != REDIS_REPLY_STRING) {
        st = fake_out_error(&out, "ERR Protocol error: expected '$'");
        c->quitting = 1;
        break;
      }
      argv[i] = r->element[i]->str;
      lens[i] = r->element[i]->len;
    }
    if (out.len == 0)
      st = conn_command(c, (int)r->elements, argv, lens, &out, &delay_ms);
  }
  if (st == ST_OK)
    st = conn_queue(c, &out, delay_ms == UINT64_MAX ? delay_ms : delay_ms + c->m->slow_ms);
  fake_out_free(&out);
  if (st != ST_OK) /* out of memory: the connection drops, which the client survives */
    c->quitting = 1;
}

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  (void)suggested;
  enum { READ_CHUNK = 16384 };
  char *p = rl_malloc(READ_CHUNK);
  *buf = uv_buf_init(p, p == NULL ? 0 : READ_CHUNK);
}

/* Runs the requests the reader holds, in order, then writes what is due;
 * a pause stops it between two requests (the rest run on resume). */
static void conn_process(fake_conn_t *c) {
  while (!c->quitting && !c->closing && !c->m->paused) {
    void *reply = NULL;
    if (redisReaderGetReply(c->reader, &reply) != REDIS_OK) { /* not RESP: Redis closes too */
      conn_close(c);
      return;
    }
    if (reply == NULL)
      break;
    conn_request(c, reply);
    freeReplyObject(reply);
  }
  conn_flush(c);
}

static void conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  fake_conn_t *c = s->data;
  int fed = nread > 0 && redisReaderFeed(c->reader, buf->base, (size_t)nread) == REDIS_OK;
  rl_free(buf->base);
  if (nread == 0)
    return;
  if (!fed) { /* EOF, a read error, or no memory to keep the bytes: the connection ends */
    conn_close(c);
    return;
  }
  conn_process(c);
}

static void master_on_connection(uv_stream_t *server, int status);

static void master_accept(fake_master_t *m);

static void reject_closed(uv_handle_t *h) {
  fake_master_t *m = h->data;
  m->rejecting = 0;
  m->handles_open--;
  if (m->accept_pending && !m->paused && m->listener != NULL) {
    m->accept_pending = 0;
    master_accept(m);
  }
  master_maybe_free(m);
}

/* No memory for a connection: it is taken off the listener and closed (the
 * client sees it end, as when Redis refuses a client), so that the master
 * keeps accepting.  One at a time: another waits for this one's close. */
static void master_reject(fake_master_t *m) {
  if (m->rejecting || m->listener == NULL) {
    m->accept_pending = 1;
    return;
  }
  uv_loop_t *loop = m->where.loop;
  if (m->where.path != NULL)
    uv_pipe_init(loop, &m->reject.pipe, 0);
  else
    uv_tcp_init(loop, &m->reject.tcp);
  m->reject.handle.data = m;
  uv_accept(&m->listener->stream, &m->reject.stream);
  m->rejecting = 1;
  m->handles_open++;
  uv_close(&m->reject.handle, reject_closed);
}

static void master_accept(fake_master_t *m) {
  fake_conn_t *c = rl_calloc(1, sizeof *c);
  int rc = c == NULL ? UV_ENOMEM : 0;
  if (rc == 0)
    rc = m->where.path != NULL ? uv_pipe_init(m->where.loop, &c->h.pipe, 0)
                               : uv_tcp_init(m->where.loop, &c->h.tcp);
  if (rc != 0) {
    rl_free(c);
    master_reject(m);
    return;
  }
  c->h.handle.data = c;
  c->timer.data = c;
  uv_timer_init(m->where.loop, &c->timer);
  c->handles_open = 2;
  c->m = m;
  list_init(&c->queue);
  list_insert_tail(&m->conns, &c->link);
  m->handles_open++;
  c->reader = redisReaderCreate();
  if (uv_accept(m->listener ? &m->listener->stream : NULL, &c->h.stream) != 0 ||
      c->reader == NULL || uv_read_start(&c->h.stream, conn_alloc, conn_read) != 0)
    conn_close(c);
}

static void master_on_connection(uv_stream_t *server, int status) {
  fake_master_t *m = server->data;
  if (status != 0)
    return;
  if (m->paused) {
    m->accept_pending = 1; /* libuv holds the socket until we accept it */
    return;
  }
  master_accept(m);
}

/* ---- the master ---------------------------------------------------------- */

static void listener_closed(uv_handle_t *h) {
  fake_master_t *m = h->data;
  rl_free(h);
  m->handles_open--;
  master_maybe_free(m);
}

/* A TCP master that is down keeps its port: a socket bound to it, not
 * listening (connections are refused, as by a dead process), so that
 * neither another program's free port nor a reconnecting client's own
 * source port takes it before the restart.  Best effort: without it the
 * restart may find the port taken (REDLOCK_EIO). */
static void port_hold(fake_master_t *m) {
  if (m->where.path != NULL || m->port == 0 || m->port_hold >= 0)
    return;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return;
  int one = 1; /* beside the closed connections' TIME_WAIT on this port */
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)m->port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, (const struct sockaddr *)&addr, sizeof addr) != 0) {
    close(fd);
    return;
  }
  m->port_hold = fd;
}

static void port_release(fake_master_t *m) {
  if (m->port_hold >= 0)
    close(m->port_hold);
  m->port_hold = -1;
}

static status_t master_listen(fake_master_t *m) {
  m->listener = rl_calloc(1, sizeof *m->listener);
  if (m->listener == NULL)
    return ST_ENOMEM;
  uv_loop_t *loop = m->where.loop;
  int rc;
  if (m->where.path != NULL) {
    rc = uv_pipe_init(loop, &m->listener->pipe, 0);
    if (rc == 0)
      rc = uv_pipe_bind(&m->listener->pipe, m->path);
  } else {
    port_release(m);
    rc = uv_tcp_init(loop, &m->listener->tcp);
    struct sockaddr_in addr;
    if (rc == 0)
      rc = uv_ip4_addr("127.0.0.1", m->port, &addr);
    if (rc == 0)
      rc = uv_tcp_bind(&m->listener->tcp, (const struct sockaddr *)&addr, 0);
    if (rc == 0 && m->port == 0) {
      struct sockaddr_in got;
      int len = sizeof got;
      rc = uv_tcp_getsockname(&m->listener->tcp, (struct sockaddr *)&got, &len);
      if (rc == 0)
        m->port = ntohs(got.sin_port);
    }
  }
  m->listener->handle.data = m;
  if (rc == 0)
    rc = uv_listen(&m->listener->stream, 128, master_on_connection);
  if (rc != 0) {
    /* Both inits only fill the struct (they cannot fail on Linux), so the
     * handle is one to close. */
    m->handles_open++;
    uv_close(&m->listener->handle, listener_closed);
    m->listener = NULL;
    m->down = 1; /* as killed: a restart may listen again */
    return rc == UV_ENOMEM ? ST_ENOMEM : ST_EIO;
  }
  m->handles_open++;
  m->down = 0;
  return ST_OK;
}

/* A new process at this address: ids, uptime, no keys. */
static void master_new_process(fake_master_t *m, uint64_t uptime_us) {
  make_id(m->run_id);
  m->started_us = master_now_us(m) - uptime_us;
}

status_t fake_master_new(const fake_where_t *where, fake_master_t **out) {
  fake_master_t *m = rl_calloc(1, sizeof *m);
  if (m == NULL)
    return ST_ENOMEM;
  m->where = *where;
  m->port_hold = -1;
  if (where->path != NULL) {
    if (strlen(where->path) >= sizeof m->path) {
      rl_free(m);
      return ST_EINVAL;
    }
    strcpy(m->path, where->path);
    m->where.path = m->path;
  }
  m->port = where->port;
  list_init(&m->conns);
  m->db = fake_db_new();
  if (m->db == NULL) {
    rl_free(m);
    return ST_ENOMEM;
  }
  m->env.now_us = master_now_us;
  m->env.publish = master_publish;
  m->env.arg = m;
  master_new_process(m, FAKE_DAY_US);
  make_id(m->replid);
  memset(m->replid2, '0', 40);
  status_t st = master_listen(m);
  if (st != ST_OK) { /* freed once the listener it made is closed */
    m->closing = 1;
    master_maybe_free(m);
    return st;
  }
  *out = m;
  return ST_OK;
}

int fake_master_port(const fake_master_t *m) { return m->port; }
int fake_master_is_down(const fake_master_t *m) { return m->down; }
long long fake_master_commands(const fake_master_t *m) { return m->commands; }

static void master_drop_conns(fake_master_t *m) {
  while (!list_empty(&m->conns))
    conn_close(list_entry(m->conns.next, fake_conn_t, link));
}

static void master_stop_listening(fake_master_t *m) {
  if (m->listener != NULL) {
    uv_close(&m->listener->handle, listener_closed);
    m->listener = NULL;
    port_hold(m);
  }
  m->accept_pending = 0;
}

void fake_master_kill(fake_master_t *m) {
  master_stop_listening(m);
  master_drop_conns(m);
  fake_db_clear(m->db);
  m->paused = 0;
  m->down = 1;
}

status_t fake_master_restart(fake_master_t *m) {
  if (!m->down)
    fake_master_kill(m);
  fake_db_clear(m->db); /* also after a failover that could not listen */
  m->promoted = 0;
  master_new_process(m, 0);
  make_id(m->replid);
  memset(m->replid2, '0', 40);
  m->commands = 0;
  return master_listen(m);
}

void fake_master_pause(fake_master_t *m, int paused) {
  if (m->down || m->paused == paused)
    return;
  m->paused = paused;
  for (list_node_t *pos = m->conns.next, *next; pos != &m->conns; pos = next) {
    next = pos->next;
    fake_conn_t *c = list_entry(pos, fake_conn_t, link);
    if (paused) {
      uv_read_stop(&c->h.stream);
      uv_timer_stop(&c->timer);
    } else if (uv_read_start(&c->h.stream, conn_alloc, conn_read) != 0) {
      conn_close(c);
    } else {
      conn_process(c); /* what was read before the pause, and the replies held */
    }
  }
  if (!paused && m->accept_pending) {
    m->accept_pending = 0;
    master_accept(m);
  }
}

void fake_master_slow(fake_master_t *m, uint32_t delay_ms) { m->slow_ms = delay_ms; }

void fake_master_clock_jump(fake_master_t *m, uint64_t ms) { m->jump_us += ms * 1000u; }

status_t fake_master_failover(fake_master_t *m, uint64_t lag_ms) {
  uint64_t now = master_now_us(m);
  uint64_t lag_us = lag_ms * 1000u;
  fake_db_forget_since(m->db, now > lag_us ? now - lag_us : 0);
  master_stop_listening(m);
  master_drop_conns(m);
  m->paused = 0;
  /* The replica ran as long as the master did, under its own run_id. */
  uint64_t uptime = now - m->started_us;
  master_new_process(m, uptime);
  memcpy(m->replid2, m->replid, sizeof m->replid2);
  m->promoted = 1;
  make_id(m->replid);
  return master_listen(m);
}

void fake_master_set_mode(fake_master_t *m, fake_mode_t mode) { m->env.mode = mode; }

int fake_master_drop_key(fake_master_t *m, const char *key, size_t len) {
  return fake_db_drop(m->db, &m->env, key, len);
}

int fake_master_has_key(fake_master_t *m, const char *key, size_t len) {
  return fake_db_has(m->db, &m->env, key, len);
}

static void master_maybe_free(fake_master_t *m) {
  if (!m->closing || m->handles_open > 0)
    return;
  fake_db_free(m->db);
  rl_free(m);
}

void fake_master_close(fake_master_t *m) {
  m->closing = 1;
  master_stop_listening(m);
  port_release(m);
  master_drop_conns(m);
  m->down = 1;
  master_maybe_free(m);
}
