/* fault_proxy.c: the loopback TCP fault-injection proxy (API and contract in
 * fault_proxy.h).
 *
 * Shape: one libuv loop on a private thread.  Each accepted client gets a
 * connection to the upstream; bytes flow through two directions (client ->
 * upstream, upstream -> client), each a FIFO of chunks stamped with their
 * arrival time and drained by pump().  Faults are decisions pump() and the
 * read callback make:
 *  - delay: a chunk leaves at arrival + delay; the head of the FIFO waits on
 *    a per-direction timer (never a sleep), so order is kept and a delay
 *    change applies to what is already queued;
 *  - stall: pump() sends nothing, reads go on (the proxy buffers, as the
 *    kernel would for a stopped peer), bounded by the buffer cap;
 *  - pace (client -> upstream only): what the client sends is cut into
 *    chunks at the end of each command (a RESP framing tracker, fp_resp_t),
 *    and a chunk that starts a command leaves no sooner than pace after the
 *    chunk that ended the command before it: the server gets, and answers,
 *    one command per pace;
 *  - blackhole: read bytes are freed, the FIFO is emptied of data;
 *  - a peer's FIN travels as a marker at the end of the FIFO so it is never
 *    delivered before the data it followed (and obeys stall and delay);
 *  - a peer's RST, or any error, resets both sides: the other end sees the
 *    abortive close it would have seen without the proxy;
 *  - upstream change (a virtual IP moving to another server): the address
 *    new connections go to is part of the published settings, and the same
 *    change resets every open connection, so none outlives it.
 *
 * Memory is bounded per connection: bytes held on purpose (queued) plus
 * bytes being written past the cap reset the connection; a destination that
 * is merely slow stops the source being read (backpressure) long before.
 *
 * Controls reach the loop through one uv_async: the caller publishes the
 * wanted settings under a mutex, bumps a sequence number and waits on a
 * condition variable until the loop has applied that sequence.  Waiting
 * makes the controls race-free for tests ("stall, then send" really stalls).
 *
 * Signals are blocked on the proxy thread: a write to a reset socket then
 * fails with EPIPE instead of raising a process-killing SIGPIPE, and
 * SIGINT/SIGTERM go to the application's threads. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define FP_READ_SIZE 65536 /* one read; shrunk to its length when much smaller */
#define FP_BACKLOG 128
/* Backpressure when a destination is slow for real (its socket buffer is
 * full): stop reading the source above HIGH bytes being written, resume
 * below LOW, as TCP end to end would.  Bytes held back on purpose (delay,
 * stall) are not "being written" and are bounded by the buffer cap instead. */
#define FP_INFLIGHT_HIGH ((size_t)4 * 1024 * 1024)
#define FP_INFLIGHT_LOW ((size_t)1024 * 1024)

typedef struct fp_conn fp_conn_t;
typedef struct fp_dir fp_dir_t;

typedef struct fp_chunk {
  struct fp_chunk *next;
  fp_dir_t *dir;
  uint64_t arrival_ns; /* uv_hrtime(): ms-truncated loop time could undercut the delay */
  size_t len;
  int eof;     /* the source's FIN: forwarded as a shutdown once what preceded it is out */
  int cmd_end; /* pace: the chunk ends a command */
  uv_write_t req;
  char data[];
} fp_chunk_t;

/* Where a stream of RESP commands is: enough to find where each ends. */
enum { RS_START = 0, RS_INLINE, RS_ARRAY_LEN, RS_BULK_HDR, RS_BULK_LEN, RS_BULK_DATA };
typedef struct {
  int state;
  uint64_t num;   /* the length being read */
  uint64_t bulks; /* bulk strings left in the command */
  uint64_t skip;  /* bytes left of the bulk string and its CRLF */
} fp_resp_t;

struct fp_dir {
  fp_conn_t *conn;
  uv_stream_t *src, *dst;
  fp_chunk_t *head, *tail;
  size_t queued;   /* data bytes in the FIFO */
  size_t inflight; /* bytes handed to uv_write and not written yet */
  uv_timer_t timer;
  uv_shutdown_t shutdown_req;
  int src_eof;          /* src sent its FIN: libuv stopped reading it for good */
  int shut;             /* the FIN went out */
  int read_paused;      /* src not read: dst is slow (FP_INFLIGHT_HIGH) */
  fp_resp_t resp;       /* pace: the commands' framing (client -> upstream) */
  uint64_t pace_due_ns; /* pace: the next command may leave then */
};

struct fp_conn {
  struct fault_proxy *proxy;
  fp_conn_t *prev, *next;
  uv_tcp_t client, upstream;
  uv_connect_t connect_req;
  int connected; /* upstream connected: client -> upstream may flow */
  int closing;
  int open_handles; /* freed when the last of its four handles has closed */
  fp_dir_t dir[2];  /* [0] client -> upstream, [1] upstream -> client */
};

typedef struct {
  unsigned delay_ms, pace_ms;
  int stalled, blackhole, refuse;
  size_t max_buffer;
  uint64_t reset_seq;          /* bumped per reset_all; a change means "reset now" */
  struct sockaddr_in upstream; /* where new connections go */
} fp_config_t;

struct fault_proxy {
  uv_loop_t loop;
  uv_thread_t thread;
  uv_tcp_t listener;
  uv_async_t async;
  int port;
  atomic_uint connections;

  uv_mutex_t mutex; /* guards the fields down to 'stop' */
  uv_cond_t applied;
  fp_config_t wanted;
  uint64_t request_seq, applied_seq;
  int stop;

  /* Proxy thread only. */
  fp_config_t cfg;
  fp_conn_t *conns;
};

static void conn_close(fp_conn_t *c, int reset);
static void pump(fp_dir_t *d);

static fp_chunk_t *chunk_of(char *data) {
  return (fp_chunk_t *)(void *)(data - offsetof(fp_chunk_t, data));
}

static size_t conn_buffered(const fp_conn_t *c) {
  return c->dir[0].queued + c->dir[0].inflight + c->dir[1].queued + c->dir[1].inflight;
}

static void dir_push(fp_dir_t *d, fp_chunk_t *ch) {
  ch->next = NULL;
  ch->dir = d;
  if (d->tail != NULL)
    d->tail->next = ch;
  else
    d->head = ch;
  d->tail = ch;
  d->queued += ch->len;
}

/* Frees the queued data chunks, keeping FIN markers (see blackhole). */
static void dir_drop_data(fp_dir_t *d) {
  fp_chunk_t *keep = NULL, **link = &keep, *ch = d->head;
  d->tail = NULL;
  while (ch != NULL) {
    fp_chunk_t *next = ch->next;
    if (ch->eof) {
      *link = ch;
      link = &ch->next;
      d->tail = ch;
    } else {
      d->queued -= ch->len;
      free(ch);
    }
    ch = next;
  }
  *link = NULL;
  d->head = keep;
}

static void dir_free_all(fp_dir_t *d) {
  while (d->head != NULL) {
    fp_chunk_t *next = d->head->next;
    free(d->head);
    d->head = next;
  }
  d->tail = NULL;
  d->queued = 0;
}

/* ---- connection lifetime ------------------------------------------------------ */

static void conn_handle_closed(uv_handle_t *h) {
  fp_dir_t *d = h->data;
  fp_conn_t *c = d->conn;
  if (--c->open_handles > 0)
    return;
  /* Pending writes and the shutdown were cancelled (their callbacks ran)
   * before the streams' close callbacks: only the FIFOs are left. */
  dir_free_all(&c->dir[0]);
  dir_free_all(&c->dir[1]);
  free(c);
}

static void close_stream(uv_tcp_t *tcp, int reset) {
  /* close_reset refuses a socket with a shutdown pending or no fd yet;
   * a plain close still ends the connection then. */
  if (reset && uv_tcp_close_reset(tcp, conn_handle_closed) == 0)
    return;
  uv_close((uv_handle_t *)tcp, conn_handle_closed);
}

/* reset: RST both sides (abortive); otherwise a normal close. */
static void conn_close(fp_conn_t *c, int reset) {
  if (c->closing)
    return;
  c->closing = 1;
  struct fault_proxy *p = c->proxy;
  atomic_fetch_sub(&p->connections, 1u);
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    p->conns = c->next;
  if (c->next != NULL)
    c->next->prev = c->prev;
  c->prev = c->next = NULL;
  close_stream(&c->client, reset);
  close_stream(&c->upstream, reset);
  uv_close((uv_handle_t *)&c->dir[0].timer, conn_handle_closed);
  uv_close((uv_handle_t *)&c->dir[1].timer, conn_handle_closed);
}

/* ---- forwarding ---------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void on_write(uv_write_t *req, int status) {
  fp_chunk_t *ch = (fp_chunk_t *)(void *)((char *)req - offsetof(fp_chunk_t, req));
  fp_dir_t *d = ch->dir;
  d->inflight -= ch->len;
  free(ch);
  if (d->conn->closing)
    return;
  if (status < 0) {
    conn_close(d->conn, 1);
    return;
  }
  if (d->read_paused && d->inflight <= FP_INFLIGHT_LOW) {
    d->read_paused = 0;
    if (uv_read_start(d->src, on_alloc, on_read) != 0)
      conn_close(d->conn, 1);
  }
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  fp_dir_t *d = req->data;
  fp_conn_t *c = d->conn;
  if (status == UV_ECANCELED)
    return;
  if (status < 0) {
    conn_close(c, 1);
    return;
  }
  d->shut = 1;
  if (c->dir[0].shut && c->dir[1].shut)
    conn_close(c, 0); /* both sides said goodbye: nothing more can flow */
}

static void on_timer(uv_timer_t *t) { pump(t->data); }

/* Sends whatever is due from the FIFO, in order; arms the timer for the rest. */
static void pump(fp_dir_t *d) {
  fp_conn_t *c = d->conn;
  struct fault_proxy *p = c->proxy;
  if (c->closing)
    return;
  if (p->cfg.stalled || (d == &c->dir[0] && !c->connected)) {
    uv_timer_stop(&d->timer);
    return;
  }
  uint64_t delay_ns = (uint64_t)p->cfg.delay_ms * 1000000u;
  uint64_t pace_ns = d == &c->dir[0] ? (uint64_t)p->cfg.pace_ms * 1000000u : 0;
  fp_chunk_t *ch;
  while ((ch = d->head) != NULL) {
    if (delay_ns > 0 || (pace_ns > 0 && !ch->eof)) {
      uint64_t now = uv_hrtime(), due = ch->arrival_ns + delay_ns;
      if (pace_ns > 0 && !ch->eof && d->pace_due_ns > due)
        due = d->pace_due_ns;
      if (due > now) {
        /* Rounded up: a timer may fire up to 1 ms early in real time, in
         * which case the check above re-arms it rather than send early. */
        uv_timer_start(&d->timer, on_timer, (due - now + 999999u) / 1000000u, 0);
        return;
      }
    }
    d->head = ch->next;
    if (d->head == NULL)
      d->tail = NULL;
    if (ch->eof) {
      free(ch);
      d->shutdown_req.data = d;
      if (uv_shutdown(&d->shutdown_req, d->dst, on_shutdown) != 0) {
        conn_close(c, 1);
        return;
      }
      continue;
    }
    d->queued -= ch->len;
    d->inflight += ch->len;
    if (pace_ns > 0 && ch->cmd_end)
      d->pace_due_ns = uv_hrtime() + pace_ns;
    uv_buf_t buf = uv_buf_init(ch->data, (unsigned)ch->len);
    if (uv_write(&ch->req, d->dst, &buf, 1, on_write) != 0) {
      d->inflight -= ch->len;
      free(ch);
      conn_close(c, 1);
      return;
    }
    if (d->inflight > FP_INFLIGHT_HIGH && !d->read_paused && !d->src_eof) {
      d->read_paused = 1;
      uv_read_stop(d->src);
    }
  }
  uv_timer_stop(&d->timer);
}

/* Consumes bytes of a command stream up to the end of the current command
 * (*end = 1 then) or to n.  Returns how many it consumed. */
static size_t resp_feed(fp_resp_t *r, const char *p, size_t n, int *end) {
  *end = 0;
  size_t i = 0;
  while (i < n) {
    char ch = p[i];
    if (r->state == RS_BULK_DATA) {
      size_t take = n - i < r->skip ? n - i : (size_t)r->skip;
      i += take;
      r->skip -= take;
      if (r->skip == 0) {
        r->state = --r->bulks == 0 ? RS_START : RS_BULK_HDR;
        if (r->state == RS_START) {
          *end = 1;
          return i;
        }
      }
      continue;
    }
    i++;
    switch (r->state) {
    case RS_START:
      if (ch == '*') {
        r->state = RS_ARRAY_LEN;
        r->num = 0;
      } else if (ch != '\r' && ch != '\n') {
        r->state = RS_INLINE;
      }
      break;
    case RS_INLINE:
      if (ch == '\n') {
        r->state = RS_START;
        *end = 1;
        return i;
      }
      break;
    case RS_ARRAY_LEN:
    case RS_BULK_LEN:
      if (ch >= '0' && ch <= '9') {
        r->num = r->num * 10 + (uint64_t)(ch - '0');
      } else if (ch == '\n' && r->state == RS_ARRAY_LEN) {
        r->bulks = r->num;
        r->state = RS_BULK_HDR;
        if (r->bulks == 0) {
          r->state = RS_START;
          *end = 1;
          return i;
        }
      } else if (ch == '\n') {
        r->skip = r->num + 2;
        r->state = RS_BULK_DATA;
      }
      break;
    case RS_BULK_HDR:
      if (ch == '$') {
        r->state = RS_BULK_LEN;
        r->num = 0;
      }
      break;
    }
  }
  return i;
}

/* Pace: queues what was read as chunks that each end where a command ends
 * (or where the read ended).  0, or -1 out of memory. */
static int dir_push_commands(fp_dir_t *d, fp_chunk_t *ch) {
  size_t off = 0;
  while (off < ch->len) {
    int end;
    size_t n = resp_feed(&d->resp, ch->data + off, ch->len - off, &end);
    fp_chunk_t *piece;
    if (off == 0 && n == ch->len) {
      piece = ch; /* the whole read: no copy */
    } else {
      piece = malloc(sizeof *piece + n);
      if (piece == NULL) {
        free(ch);
        return -1;
      }
      memcpy(piece->data, ch->data + off, n);
      piece->len = n;
      piece->eof = 0;
      piece->arrival_ns = ch->arrival_ns;
    }
    piece->cmd_end = end;
    dir_push(d, piece);
    off += n;
    if (piece == ch)
      return 0;
  }
  free(ch);
  return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  (void)suggested;
  fp_chunk_t *ch = malloc(sizeof *ch + FP_READ_SIZE);
  /* A zero-length buffer makes libuv report UV_ENOBUFS to on_read. */
  *buf = ch != NULL ? uv_buf_init(ch->data, FP_READ_SIZE) : uv_buf_init(NULL, 0);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  fp_dir_t *d = stream->data; /* the direction this stream is the source of */
  fp_conn_t *c = d->conn;
  struct fault_proxy *p = c->proxy;
  fp_chunk_t *ch = buf->base != NULL ? chunk_of(buf->base) : NULL;

  if (nread <= 0 || p->cfg.blackhole) {
    free(ch);
    if (nread == UV_EOF) {
      d->src_eof = 1;
      fp_chunk_t *fin = calloc(1, sizeof *fin);
      if (fin == NULL) {
        conn_close(c, 1);
        return;
      }
      fin->eof = 1;
      fin->arrival_ns = uv_hrtime();
      dir_push(d, fin);
      pump(d);
    } else if (nread < 0) {
      conn_close(c, 1); /* RST or error from this side: pass it on as an RST */
    }
    return;
  }
  if ((size_t)nread < FP_READ_SIZE / 2) {
    /* Many small reads must not each pin 64 KiB while stalled or delayed. */
    fp_chunk_t *small = realloc(ch, sizeof *ch + (size_t)nread);
    if (small != NULL)
      ch = small;
  }
  ch->len = (size_t)nread;
  ch->eof = 0;
  ch->cmd_end = 0;
  ch->arrival_ns = uv_hrtime();
  if (d == &c->dir[0] && p->cfg.pace_ms > 0) {
    if (dir_push_commands(d, ch) != 0) {
      conn_close(c, 1);
      return;
    }
  } else {
    dir_push(d, ch);
  }
  if (conn_buffered(c) > p->cfg.max_buffer) {
    conn_close(c, 1);
    return;
  }
  pump(d);
}

/* ---- accepting ------------------------------------------------------------------- */

static void on_connect(uv_connect_t *req, int status) {
  fp_conn_t *c = req->data;
  if (status == UV_ECANCELED || c->closing)
    return;
  if (status < 0) {
    conn_close(c, 1); /* upstream down: the client sees a reset, not a hang */
    return;
  }
  c->connected = 1;
  uv_tcp_nodelay(&c->upstream, 1);
  if (uv_read_start((uv_stream_t *)&c->upstream, on_alloc, on_read) != 0) {
    conn_close(c, 1);
    return;
  }
  pump(&c->dir[0]); /* what the client sent while we were connecting */
}

static void free_handle(uv_handle_t *h) { free(h); }

static void refuse_connection(uv_stream_t *server) {
  uv_tcp_t *t = malloc(sizeof *t);
  if (t == NULL || uv_tcp_init(server->loop, t) != 0) {
    free(t);
    return;
  }
  if (uv_accept(server, (uv_stream_t *)t) == 0 && uv_tcp_close_reset(t, free_handle) == 0)
    return;
  uv_close((uv_handle_t *)t, free_handle);
}

static void on_connection(uv_stream_t *server, int status) {
  struct fault_proxy *p = server->data;
  if (status < 0)
    return;
  if (p->cfg.refuse) {
    refuse_connection(server);
    return;
  }
  fp_conn_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    return;
  c->proxy = p;
  for (int i = 0; i < 2; i++) {
    c->dir[i].conn = c;
    uv_timer_init(&p->loop, &c->dir[i].timer);
    c->dir[i].timer.data = &c->dir[i];
  }
  uv_tcp_init(&p->loop, &c->client);
  uv_tcp_init(&p->loop, &c->upstream);
  c->client.data = &c->dir[0];
  c->upstream.data = &c->dir[1];
  c->dir[0].src = (uv_stream_t *)&c->client;
  c->dir[1].src = (uv_stream_t *)&c->upstream;
  c->dir[0].dst = (uv_stream_t *)&c->upstream;
  c->dir[1].dst = (uv_stream_t *)&c->client;
  c->open_handles = 4;
  c->connect_req.data = c;

  c->next = p->conns;
  if (p->conns != NULL)
    p->conns->prev = c;
  p->conns = c;
  atomic_fetch_add(&p->connections, 1u);

  if (uv_accept(server, (uv_stream_t *)&c->client) != 0) {
    conn_close(c, 0);
    return;
  }
  uv_tcp_nodelay(&c->client, 1);
  if (uv_tcp_connect(&c->connect_req, &c->upstream, (const struct sockaddr *)&p->cfg.upstream,
                     on_connect) != 0 ||
      uv_read_start((uv_stream_t *)&c->client, on_alloc, on_read) != 0)
    conn_close(c, 1);
}

/* ---- control --------------------------------------------------------------------- */

static void for_each_dir(struct fault_proxy *p, void (*fn)(fp_dir_t *)) {
  fp_conn_t *c = p->conns;
  while (c != NULL) {
    fp_conn_t *next = c->next; /* fn may close (and unlink) c */
    fn(&c->dir[0]);
    fn(&c->dir[1]);
    c = next;
  }
}

static void close_everything(struct fault_proxy *p) {
  while (p->conns != NULL)
    conn_close(p->conns, 0);
  uv_close((uv_handle_t *)&p->listener, NULL);
  uv_close((uv_handle_t *)&p->async, NULL);
}

static void on_async(uv_async_t *a) {
  struct fault_proxy *p = a->data;
  uv_mutex_lock(&p->mutex);
  fp_config_t cfg = p->wanted;
  uint64_t seq = p->request_seq;
  int stop = p->stop;
  uv_mutex_unlock(&p->mutex);

  if (stop) {
    close_everything(p);
    return; /* nobody waits on a stopping proxy */
  }
  fp_config_t old = p->cfg;
  p->cfg = cfg;
  if (cfg.reset_seq != old.reset_seq) {
    while (p->conns != NULL)
      conn_close(p->conns, 1);
  }
  if (cfg.blackhole && !old.blackhole)
    for_each_dir(p, dir_drop_data);
  if (cfg.delay_ms != old.delay_ms || cfg.pace_ms != old.pace_ms || cfg.stalled != old.stalled ||
      cfg.blackhole != old.blackhole)
    for_each_dir(p, pump);

  uv_mutex_lock(&p->mutex);
  p->applied_seq = seq;
  uv_cond_broadcast(&p->applied);
  uv_mutex_unlock(&p->mutex);
}

/* Runs under the mutex: edit p->wanted. */
typedef void (*fp_edit_fn)(fp_config_t *cfg, size_t value);

static int control(fault_proxy_t *p, fp_edit_fn edit, size_t value) {
  if (p == NULL)
    return UV_EINVAL;
  uv_thread_t self = uv_thread_self();
  if (uv_thread_equal(&self, &p->thread))
    return UV_EINVAL; /* it would wait for itself forever */
  uv_mutex_lock(&p->mutex);
  edit(&p->wanted, value);
  uint64_t seq = ++p->request_seq;
  uv_mutex_unlock(&p->mutex);
  int rc = uv_async_send(&p->async);
  if (rc != 0)
    return rc;
  uv_mutex_lock(&p->mutex);
  while (p->applied_seq < seq)
    uv_cond_wait(&p->applied, &p->mutex);
  uv_mutex_unlock(&p->mutex);
  return 0;
}

static void edit_delay(fp_config_t *cfg, size_t v) { cfg->delay_ms = (unsigned)v; }
static void edit_pace(fp_config_t *cfg, size_t v) { cfg->pace_ms = (unsigned)v; }
static void edit_stall(fp_config_t *cfg, size_t v) { cfg->stalled = v != 0; }
static void edit_blackhole(fp_config_t *cfg, size_t v) { cfg->blackhole = v != 0; }
static void edit_refuse(fp_config_t *cfg, size_t v) { cfg->refuse = v != 0; }
static void edit_reset(fp_config_t *cfg, size_t v) {
  (void)v;
  cfg->reset_seq++;
}
static void edit_max_buffer(fp_config_t *cfg, size_t v) {
  cfg->max_buffer = v != 0 ? v : FAULT_PROXY_DEFAULT_MAX_BUFFER;
}
/* v: the new upstream (a struct sockaddr_in * of the caller's, read under
 * the mutex, before control() returns).  Existing connections are reset: a
 * reset_all in the same change, so that none is left talking to the old one. */
static void edit_upstream(fp_config_t *cfg, size_t v) {
  cfg->upstream = *(const struct sockaddr_in *)(uintptr_t)v;
  cfg->reset_seq++;
}

int fault_proxy_set_delay(fault_proxy_t *p, unsigned delay_ms) {
  return control(p, edit_delay, delay_ms);
}
int fault_proxy_set_pace(fault_proxy_t *p, unsigned pace_ms) {
  return control(p, edit_pace, pace_ms);
}
int fault_proxy_set_stall(fault_proxy_t *p, int stalled) {
  return control(p, edit_stall, stalled != 0);
}
int fault_proxy_set_blackhole(fault_proxy_t *p, int on) {
  return control(p, edit_blackhole, on != 0);
}
int fault_proxy_reset_all(fault_proxy_t *p) { return control(p, edit_reset, 0); }
int fault_proxy_set_refuse(fault_proxy_t *p, int on) { return control(p, edit_refuse, on != 0); }
int fault_proxy_set_max_buffer(fault_proxy_t *p, size_t bytes) {
  return control(p, edit_max_buffer, bytes);
}

static int parse_upstream(struct sockaddr_in *addr, const char *host, int port);

int fault_proxy_set_upstream(fault_proxy_t *p, const char *host, int port) {
  struct sockaddr_in addr;
  int rc = parse_upstream(&addr, host, port);
  if (rc != 0)
    return rc;
  return control(p, edit_upstream, (size_t)(uintptr_t)&addr);
}

int fault_proxy_port(const fault_proxy_t *p) { return p != NULL ? p->port : -1; }

unsigned fault_proxy_connections(const fault_proxy_t *p) {
  return p != NULL ? atomic_load(&p->connections) : 0u;
}

/* ---- start / stop ---------------------------------------------------------------- */

static void thread_main(void *arg) {
  struct fault_proxy *p = arg;
  uv_run(&p->loop, UV_RUN_DEFAULT); /* returns once stop has closed every handle */
}

static int parse_upstream(struct sockaddr_in *addr, const char *host, int port) {
  if (host == NULL || port <= 0 || port > 65535)
    return UV_EINVAL;
  if (strcmp(host, "localhost") == 0)
    host = "127.0.0.1";
  memset(addr, 0, sizeof *addr);
  if (inet_pton(AF_INET, host, &addr->sin_addr) != 1)
    return UV_EINVAL;
  /* Loopback only: this tool must never aim faults at a real network. */
  if ((ntohl(addr->sin_addr.s_addr) >> 24) != 127)
    return UV_EINVAL;
  addr->sin_family = AF_INET;
  addr->sin_port = htons((uint16_t)port);
  return 0;
}

int fault_proxy_start_on(fault_proxy_t **out, int listen_port, const char *upstream_host,
                         int upstream_port) {
  if (out == NULL)
    return UV_EINVAL;
  *out = NULL;
  if (listen_port < 0 || listen_port > 65535)
    return UV_EINVAL;
  struct fault_proxy *p = calloc(1, sizeof *p);
  if (p == NULL)
    return UV_ENOMEM;
  int rc = parse_upstream(&p->cfg.upstream, upstream_host, upstream_port);
  if (rc != 0) {
    free(p);
    return rc;
  }
  p->cfg.max_buffer = FAULT_PROXY_DEFAULT_MAX_BUFFER;
  p->wanted = p->cfg;
  atomic_init(&p->connections, 0u);

  if ((rc = uv_loop_init(&p->loop)) != 0) {
    free(p);
    return rc;
  }
  if ((rc = uv_mutex_init(&p->mutex)) != 0)
    goto fail_loop;
  if ((rc = uv_cond_init(&p->applied)) != 0)
    goto fail_mutex;
  /* Handles are set up here, before the thread exists; from then on only
   * the proxy thread touches them (thread creation orders the two). */
  uv_async_init(&p->loop, &p->async, on_async);
  p->async.data = p;
  uv_tcp_init(&p->loop, &p->listener);
  p->listener.data = p;
  struct sockaddr_in addr;
  struct sockaddr_storage bound;
  int len = (int)sizeof bound;
  if ((rc = uv_ip4_addr("127.0.0.1", listen_port, &addr)) != 0 ||
      (rc = uv_tcp_bind(&p->listener, (const struct sockaddr *)&addr, 0)) != 0 ||
      (rc = uv_listen((uv_stream_t *)&p->listener, FP_BACKLOG, on_connection)) != 0 ||
      (rc = uv_tcp_getsockname(&p->listener, (struct sockaddr *)&bound, &len)) != 0)
    goto fail_handles;
  p->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);

  /* The thread inherits a full signal mask (see the header comment). */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = uv_thread_create(&p->thread, thread_main, p);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0)
    goto fail_handles;
  *out = p;
  return 0;

fail_handles:
  uv_close((uv_handle_t *)&p->listener, NULL);
  uv_close((uv_handle_t *)&p->async, NULL);
  uv_run(&p->loop, UV_RUN_DEFAULT);
  uv_cond_destroy(&p->applied);
fail_mutex:
  uv_mutex_destroy(&p->mutex);
fail_loop:
  uv_loop_close(&p->loop);
  free(p);
  return rc;
}

int fault_proxy_start(fault_proxy_t **out, const char *upstream_host, int upstream_port) {
  return fault_proxy_start_on(out, 0, upstream_host, upstream_port);
}

void fault_proxy_stop(fault_proxy_t *p) {
  if (p == NULL)
    return;
  uv_mutex_lock(&p->mutex);
  p->stop = 1;
  uv_mutex_unlock(&p->mutex);
  uv_async_send(&p->async);
  uv_thread_join(&p->thread);
  uv_loop_close(&p->loop);
  uv_cond_destroy(&p->applied);
  uv_mutex_destroy(&p->mutex);
  free(p);
}
