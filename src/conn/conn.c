/* conn.c: hiredis async connections on a libuv loop (see conn.h). */
#include "conn/conn.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/alloc.h"
#include "util/pool.h"

/* Event state of one hiredis context. */
typedef struct conn_events {
  redisAsyncContext *ac; /* NULL once hiredis has let go of it */
  conn_flusher_t *flusher;
  const timebase_t *tb; /* the owner's clock: read_ns */
  uv_poll_t poll;
  int events;     /* UV_READABLE | UV_WRITABLE being polled for */
  int want_write; /* hiredis has unsent output */
  list_node_t dirty_link;
  /* The reader's own object functions, which ours wrap (reader->privdata
   * points back here, and hiredis hands it to every read task), and the
   * reader's table: a copy of those with the capped ones replaced, so that a
   * function a later hiredis adds keeps its default. */
  redisReplyObjectFunctions *reply_fns;
  redisReplyObjectFunctions capped_fns;
  reply_pool_t *replies;   /* the answers to our commands (pool.h) */
  const conn_caps_t *caps; /* the replies' (conn_set_caps) */
  const char *violation;   /* the cap a reply broke, for conn_error() */
  size_t reply_values;     /* values of the reply being read, announced so far */
  size_t reply_bytes;      /* bytes of its strings read so far */
  void *ssl;               /* rediss://: the SSL (hiredis frees it), for conn_error() */
  int got_reply;           /* a reply (part) arrived: TLS is set up end to end */
  uint64_t read_ns;        /* when the socket was last read (conn_read_ns) */
  unsigned long writes;    /* writes that took output bytes (conn_writes) */
  char tls_why[256];       /* conn_error()'s TLS explanation */
  int broken;              /* libuv refused to watch or flush it: the flush drops it */
  char io_why[96];         /* why, for conn_error() */
  /* The owner's, set by conn_before_write (loop thread): run before each
   * write of the output (before_write). */
  conn_before_write_fn *before_write_fn;
  void *before_write_arg;
} conn_events_t;

/* ---- reply caps ------------------------------------------------------------------
 * Our object functions check each aggregate's size and depth before hiredis
 * allocates it, and count every object against the caps of its whole reply
 * (conn.h), then build it with the reader's defaults.  Returning NULL makes
 * the reader fail, and hiredis drops the connection.  hiredis reads one
 * reply at a time and makes its objects in order, the root first (an
 * aggregate's before its elements), so a root object starts the count. */

#define TOO_DEEP "protocol error: reply nested too deeply (more than 8 levels)"
_Static_assert(CONN_MAX_REPLY_DEPTH == 8, "TOO_DEEP names the cap");

const conn_caps_t conn_caps_reply = {
    .elements = CONN_MAX_REPLY_ELEMENTS,
    .values = CONN_MAX_REPLY_VALUES,
    .bytes = CONN_MAX_REPLY_BYTES,
    .too_many_elements =
        "protocol error: reply has too many elements (more than 1024 in an aggregate)",
    .too_many_values = "protocol error: reply has too many values (more than 4096 in all)",
    .too_long = "protocol error: reply longer than 1 MiB",
};
_Static_assert(CONN_MAX_REPLY_ELEMENTS == 1024, "too_many_elements names the cap");
_Static_assert(CONN_MAX_REPLY_VALUES == 4096, "too_many_values names the cap");
_Static_assert(CONN_MAX_REPLY_BYTES == 1024 * 1024, "too_long names the cap");

const conn_caps_t conn_caps_map = {
    .elements = CONN_MAP_REPLY_ELEMENTS,
    .values = CONN_MAP_REPLY_VALUES,
    .bytes = CONN_MAP_REPLY_BYTES,
    .too_many_elements =
        "protocol error: slot map has too many elements (more than 32768 in an aggregate)",
    .too_many_values = "protocol error: slot map has too many values (more than 524288 in all)",
    .too_long = "protocol error: slot map longer than 8 MiB",
};
_Static_assert(CONN_MAP_REPLY_ELEMENTS == 32768, "too_many_elements names the cap");
_Static_assert(CONN_MAP_REPLY_VALUES == 524288, "too_many_values names the cap");
_Static_assert(CONN_MAP_REPLY_BYTES == 8 * 1024 * 1024, "too_long names the cap");

#if HIREDIS_MAJOR >= 1
typedef size_t conn_elements_t;
#else
typedef int conn_elements_t;
#endif

/* Every object the reader makes comes through here: note that the
 * connection carried a reply (conn_error tells a TLS set-up failure by its
 * absence). */
static conn_events_t *task_events(const redisReadTask *task) {
  conn_events_t *ev = task->privdata;
  ev->got_reply = 1;
  return ev;
}

/* Counts an object against the caps of its reply: `values` more values
 * (the elements an aggregate announces; the root itself counts as one) and
 * `bytes` more bytes of strings.  0 when that passes a cap. */
static int reply_count(conn_events_t *ev, const redisReadTask *task, size_t values, size_t bytes) {
  if (task->parent == NULL) {
    ev->reply_values = 1;
    ev->reply_bytes = 0;
  }
  if (values > ev->caps->values - ev->reply_values) {
    ev->violation = ev->caps->too_many_values;
    return 0;
  }
  if (bytes > ev->caps->bytes - ev->reply_bytes) {
    ev->violation = ev->caps->too_long;
    return 0;
  }
  ev->reply_values += values;
  ev->reply_bytes += bytes;
  return 1;
}

static void *reply_create_array(const redisReadTask *task, conn_elements_t elements) {
  conn_events_t *ev = task_events(task);
  unsigned depth = 0;
  for (const redisReadTask *t = task->parent; t != NULL; t = t->parent)
    depth++;
  if ((size_t)elements > ev->caps->elements) {
    ev->violation = ev->caps->too_many_elements;
    return NULL;
  }
  if (depth >= CONN_MAX_REPLY_DEPTH) {
    ev->violation = TOO_DEEP;
    return NULL;
  }
  if (!reply_count(ev, task, (size_t)elements, 0))
    return NULL;
  return ev->reply_fns->createArray(task, elements);
}

/* A top-level scalar (the answer to a command of ours) comes from the
 * connection's pool when it fits; everything else is hiredis' own. */
static void *reply_create_string(const redisReadTask *task, char *str, size_t len) {
  conn_events_t *ev = task_events(task);
  if (!reply_count(ev, task, 0, len))
    return NULL;
  void *r = task->parent == NULL ? reply_pool_string(ev->replies, task->type, str, len) : NULL;
  return r != NULL ? r : ev->reply_fns->createString(task, str, len);
}

static void *reply_create_integer(const redisReadTask *task, long long value) {
  conn_events_t *ev = task_events(task);
  reply_count(ev, task, 0, 0); /* within the caps: its value was counted */
  void *r = task->parent == NULL ? reply_pool_integer(ev->replies, value) : NULL;
  return r != NULL ? r : ev->reply_fns->createInteger(task, value);
}

static void *reply_create_nil(const redisReadTask *task) {
  conn_events_t *ev = task_events(task);
  reply_count(ev, task, 0, 0);
  void *r = task->parent == NULL ? reply_pool_nil(ev->replies) : NULL;
  return r != NULL ? r : ev->reply_fns->createNil(task);
}

#if HIREDIS_MAJOR >= 1
/* A double's text is at most 325 bytes (hiredis refuses longer). */
static void *reply_create_double(const redisReadTask *task, double value, char *str, size_t len) {
  conn_events_t *ev = task_events(task);
  reply_count(ev, task, 0, 0);
  return ev->reply_fns->createDouble(task, value, str, len);
}

static void *reply_create_bool(const redisReadTask *task, int value) {
  conn_events_t *ev = task_events(task);
  reply_count(ev, task, 0, 0);
  return ev->reply_fns->createBool(task, value);
}
#endif

/* Our table: the reader's own, with the capped functions put in (and
 * reply_pool_free, which gives a pooled object back and any other to hiredis). */
static void capped_fns_init(conn_events_t *ev, const redisReplyObjectFunctions *defaults) {
  ev->capped_fns = *defaults;
  ev->capped_fns.createString = reply_create_string;
  ev->capped_fns.createArray = reply_create_array;
  ev->capped_fns.createInteger = reply_create_integer;
#if HIREDIS_MAJOR >= 1
  ev->capped_fns.createDouble = reply_create_double;
  ev->capped_fns.createBool = reply_create_bool;
#endif
  ev->capped_fns.createNil = reply_create_nil;
  ev->capped_fns.freeObject = reply_pool_free;
}

/* The type of the item the reader is in the middle of, -1 when none.  The
 * task stack is a public field of redisReader in both hiredis 0.14 and 1.x,
 * laid out differently. */
static int reader_item_type(const redisReader *r) {
  if (r->ridx < 0)
    return -1;
#if HIREDIS_MAJOR >= 1
  return r->task[r->ridx]->type;
#else
  return r->rstack[r->ridx].type;
#endif
}

/* The length announced by a bulk whose length line starts at p (the reader
 * has taken its `$`): 1 with *len set once the line is in and is decimal
 * digits, which hiredis reads as that number; else 0 (hiredis judges it).
 * Past `limit` the count stops: only whether the bulk is over it matters. */
static int bulk_length(const char *p, size_t avail, size_t limit, size_t *len) {
  size_t n = 0, i = 0;
  for (; i < avail && p[i] >= '0' && p[i] <= '9'; i++)
    if (n <= limit)
      n = n * 10 + (size_t)(p[i] - '0');
  if (i == 0 || i + 1 >= avail || p[i] != '\r' || p[i + 1] != '\n')
    return 0;
  *len = n;
  return 1;
}

/* hiredis buffers a bulk until its last byte arrives, and a line until its
 * CRLF: what the reader holds after a read (at most 16 KiB, after which it
 * parsed every complete item) is the item it is in the middle of.  A bulk
 * is refused as soon as its length line announces more than the reply has
 * left of CONN_MAX_REPLY_BYTES (its bytes would be refused when complete),
 * any other item once it is buffered past that. */
static int reply_too_long(conn_events_t *ev) {
  const redisReader *r = ev->ac->c.reader;
  if (r == NULL)
    return 0;
  /* Below the root, the counts are the reply's so far; a root item being
   * read has no object yet, and the counts are the previous reply's. */
  size_t left = ev->caps->bytes - (r->ridx > 0 ? ev->reply_bytes : 0);
  size_t buffered = r->len - r->pos, announced;
  int type = reader_item_type(r);
#if HIREDIS_MAJOR >= 1
  int bulk = type == REDIS_REPLY_STRING || type == REDIS_REPLY_VERB;
#else
  int bulk = type == REDIS_REPLY_STRING;
#endif
  if (bulk && bulk_length(r->buf + r->pos, buffered, left, &announced)) {
    if (announced <= left)
      return 0; /* buffered up to its length line, announced bytes and CRLF */
  } else if (buffered <= left + CONN_REPLY_LINE_MAX) {
    return 0;
  }
  ev->violation = ev->caps->too_long;
  return 1;
}

static int connected(const conn_events_t *ev) {
  return ev->ac != NULL && (ev->ac->c.flags & REDIS_CONNECTED) != 0;
}

static void on_poll(uv_poll_t *handle, int status, int events);
static void flush_dirty(uv_prepare_t *prepare);
static void write_output(conn_events_t *ev);
static void mark_dirty(conn_events_t *ev);

/* libuv refused (what, rc): inside hiredis' hooks the context cannot be
 * freed, so the flush drops it (the owner hears it as a connection error,
 * or, before the connect completed, as a connect timeout). */
static void io_failed(conn_events_t *ev, const char *what, int rc) {
  if (ev->broken)
    return;
  ev->broken = 1;
  snprintf(ev->io_why, sizeof ev->io_why, "%s: %s", what, uv_strerror(rc));
  ev->violation = ev->io_why;
  mark_dirty(ev);
}

static void poll_set(conn_events_t *ev, int events) {
  if (events == ev->events || ev->broken)
    return;
  ev->events = events;
  int rc = events != 0 ? uv_poll_start(&ev->poll, events, on_poll) : uv_poll_stop(&ev->poll);
  if (rc != 0)
    io_failed(ev, "cannot watch the socket", rc);
}

/* The owner's last word before a write (conn_before_write).  Called while
 * the connection is still on the flusher's list, or while it already polls
 * for writability, so that what it queues adds no work of its own: hiredis'
 * add-write hook then finds the connection marked either way. */
static void before_write(conn_events_t *ev) {
  if (ev->before_write_fn != NULL && connected(ev))
    ev->before_write_fn(ev->ac, ev->before_write_arg);
}

static void on_poll(uv_poll_t *handle, int status, int events) {
  conn_events_t *ev = handle->data;
  if (ev->ac == NULL)
    return;
  if (ev->ssl != NULL)
    tls_clear_errors(); /* what OpenSSL queues next is this connection's */
  if (status < 0) {
    /* libuv stopped polling this socket: let hiredis find the error, in the
     * connect check while connecting, else in a read. */
    ev->events = 0;
    if (!connected(ev))
      redisAsyncHandleWrite(ev->ac);
    else
      redisAsyncHandleRead(ev->ac);
    return;
  }
  if (events & UV_READABLE) {
    ev->read_ns = tb_now_ns(ev->tb);
    redisAsyncHandleRead(ev->ac);
    /* (conn_read_now leaves this to the next poll: its callers cannot have
     * the connection freed under them, and it reads 16 KiB at most.) */
    if (ev->ac != NULL && reply_too_long(ev)) {
      /* The owner's disconnect callback runs, with conn_error() saying why. */
      redisAsyncFree(ev->ac);
      return;
    }
  }
  if (ev->ac != NULL && (events & UV_WRITABLE)) {
    before_write(ev);
    write_output(ev);
  }
}

static void hook_add_read(void *privdata) {
  conn_events_t *ev = privdata;
  poll_set(ev, ev->events | UV_READABLE);
}

static void hook_del_read(void *privdata) {
  conn_events_t *ev = privdata;
  poll_set(ev, ev->events & ~UV_READABLE);
}

static void hook_add_write(void *privdata) {
  conn_events_t *ev = privdata;
  if (!connected(ev) || ev->want_write) {
    /* Connecting (writability is how a connect completes), or a flush left
     * output behind (the socket buffer is full): wait for writability. */
    poll_set(ev, ev->events | UV_WRITABLE);
    return;
  }
  mark_dirty(ev);
}

/* Puts the connection on the flusher's list for this turn's flush. */
static void mark_dirty(conn_events_t *ev) {
  if (list_linked(&ev->dirty_link))
    return;
  if (list_empty(&ev->flusher->dirty)) {
    int rc = uv_prepare_start(&ev->flusher->prepare, flush_dirty);
    if (rc != 0) {
      /* No flush this turn: wait for writability instead (a broken
       * connection is left to its owner's timeouts). */
      if (!ev->broken)
        poll_set(ev, ev->events | UV_WRITABLE);
      return;
    }
  }
  list_insert_tail(&ev->flusher->dirty, &ev->dirty_link);
}

static void hook_del_write(void *privdata) {
  conn_events_t *ev = privdata;
  ev->want_write = 0;
  if (list_linked(&ev->dirty_link))
    list_remove(&ev->dirty_link);
  poll_set(ev, ev->events & ~UV_WRITABLE);
}

static void poll_closed(uv_handle_t *handle) {
  conn_events_t *ev = handle->data;
  reply_pool_release(ev->replies); /* freed with its last reply, if one is still out */
  rl_free(ev);
}

static void hook_cleanup(void *privdata) {
  conn_events_t *ev = privdata;
  ev->ac = NULL;
  if (list_linked(&ev->dirty_link))
    list_remove(&ev->dirty_link);
  uv_close((uv_handle_t *)&ev->poll, poll_closed);
}

/* hiredis frees its output buffer whenever a write takes all of it, and the
 * next turn's commands grow a new one from nothing: a realloc and a copy of
 * everything so far at each doubling (at C = 128, N = 5, about a tenth of the
 * client's instructions).  A fresh buffer is given room for what the last
 * write took instead: one allocation per write.  sdsMakeRoomFor doubles what
 * it is asked for below 1 MiB, so the room kept is up to twice
 * CONN_OUTPUT_RESERVE_MAX.  (obuf is a public field of redisContext in hiredis
 * 0.14 and 1.x; sdsMakeRoomFor allocates as hiredis frees, in its library.) */
static void reserve_output(redisAsyncContext *ac, size_t last_write) {
  sds obuf = ac->c.obuf; /* empty: write_output calls this once all was written */
  if (obuf == NULL || sdsavail(obuf) >= last_write)
    return;
  sds grown = sdsMakeRoomFor(obuf, last_write < CONN_OUTPUT_RESERVE_MAX ? last_write
                                                                        : CONN_OUTPUT_RESERVE_MAX);
  if (grown != NULL) /* else obuf is intact: it grows as hiredis would */
    ac->c.obuf = grown;
}

static size_t output_len(const redisAsyncContext *ac) {
  return ac->c.obuf != NULL ? sdslen(ac->c.obuf) : 0;
}

/* hiredis writes what it can of its output (or completes a connect).  A
 * write that took bytes is counted (conn_writes); one that took all of them
 * leaves room for the next turn's (reserve_output). */
static void write_output(conn_events_t *ev) {
  size_t before = output_len(ev->ac);
  redisAsyncHandleWrite(ev->ac);
  if (ev->ac == NULL) /* the write failed and hiredis let go of the context */
    return;
  size_t left = output_len(ev->ac);
  if (left < before)
    ev->writes++;
  if (left == 0)
    reserve_output(ev->ac, before);
}

/* Writes one connection's output taken off the flusher's list. */
static void flush_one(conn_events_t *ev) {
  if (ev->broken) {
    list_remove(&ev->dirty_link);
    redisAsyncFree(ev->ac); /* the owner's disconnect callback runs, conn_error() says why */
    return;
  }
  before_write(ev);
  list_remove(&ev->dirty_link);
  /* While flushing, a request to write more means the socket took only
   * part: from then on hook_add_write polls for writability. */
  ev->want_write = 1;
  if (ev->ssl != NULL)
    tls_clear_errors();
  write_output(ev);
}

static void flush_dirty(uv_prepare_t *prepare) {
  conn_flusher_t *flusher = prepare->data;
  while (!list_empty(&flusher->dirty))
    flush_one(list_entry(flusher->dirty.next, conn_events_t, dirty_link));
  (void)uv_prepare_stop(prepare); /* cannot fail on an initialised handle */
}

int conn_flusher_init(conn_flusher_t *flusher, uv_loop_t *loop) {
  flusher->prepare.data = flusher;
  list_init(&flusher->dirty);
  return uv_prepare_init(loop, &flusher->prepare);
}

void conn_flusher_close(conn_flusher_t *flusher, uv_close_cb closed) {
  (void)uv_prepare_stop(&flusher->prepare); /* cannot fail on an initialised handle */
  uv_close((uv_handle_t *)&flusher->prepare, closed);
}

status_t conn_open(redisAsyncContext **out, const node_addr_t *addr, const char *ip,
                   tls_client_t *tls, uv_loop_t *loop, conn_flusher_t *flusher,
                   const timebase_t *tb, void *data, redisConnectCallback *on_connect,
                   redisDisconnectCallback *on_disconnect, char *err, size_t err_len,
                   int *tls_failed) {
  *out = NULL;
  if (tls_failed != NULL)
    *tls_failed = 0;
  redisAsyncContext *ac = addr->kind == NODE_ADDR_UNIX ? redisAsyncConnectUnix(addr->path)
                                                       : redisAsyncConnect(ip, addr->port);
  if (ac == NULL) {
    snprintf(err, err_len, "out of memory");
    return ST_ENOMEM;
  }
  if (ac->err) {
    snprintf(err, err_len, "%s", ac->errstr);
    redisAsyncFree(ac);
    return ST_EIO;
  }
  /* A program that forks and execs must not hand our sockets to the child. */
  int flags = fcntl(ac->c.fd, F_GETFD);
  if (flags >= 0)
    fcntl(ac->c.fd, F_SETFD, flags | FD_CLOEXEC);
  void *ssl = NULL;
  if (addr->tls) {
    if (tls == NULL) {
      snprintf(err, err_len, "TLS is not set up for this client");
      redisAsyncFree(ac);
      return ST_EINVAL;
    }
    status_t st = tls_attach(tls, &ac->c, addr->host, &ssl, err, err_len);
    if (st != ST_OK) {
      if (tls_failed != NULL)
        *tls_failed = 1;
      redisAsyncFree(ac);
      return st;
    }
  }
  /* Pooled replies (pool.h) return to their pool when hiredis frees
   * them after their callback: a context made with hiredis 1.x's
   * REDIS_OPT_NO_AUTO_FREE_REPLIES would keep them.  redisAsyncConnect never
   * sets it; a change to how contexts are made must keep it off. */
  conn_events_t *ev = rl_calloc(1, sizeof *ev);
  reply_pool_t *replies = reply_pool_new();
  if (ev == NULL || replies == NULL || uv_poll_init(loop, &ev->poll, ac->c.fd) != 0) {
    snprintf(err, err_len,
             ev == NULL || replies == NULL ? "out of memory" : "cannot watch the socket");
    status_t st = ev == NULL || replies == NULL ? ST_ENOMEM : ST_EIO;
    reply_pool_release(replies);
    rl_free(ev);
    redisAsyncFree(ac);
    return st;
  }
  ev->replies = replies;
  ev->caps = &conn_caps_reply;
  ev->ssl = ssl;
  ev->ac = ac;
  ev->flusher = flusher;
  ev->tb = tb;
  ev->poll.data = ev;
  list_init(&ev->dirty_link);
  ac->ev.data = ev;
  ac->ev.addRead = hook_add_read;
  ac->ev.delRead = hook_del_read;
  ac->ev.addWrite = hook_add_write;
  ac->ev.delWrite = hook_del_write;
  ac->ev.cleanup = hook_cleanup;
  ev->reply_fns = ac->c.reader->fn;
  capped_fns_init(ev, ev->reply_fns);
  ac->c.reader->fn = &ev->capped_fns;
  ac->c.reader->privdata = ev;
  ac->data = data;
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
  *out = ac;
  return ST_OK;
}

status_t conn_queue_auth(redisAsyncContext *ac, const node_addr_t *addr, redisCallbackFn *cb,
                         void *privdata, unsigned *queued) {
  *queued = 0;
  if (addr->password == NULL)
    return ST_OK;
  int rc = addr->user != NULL
               ? redisAsyncCommand(ac, cb, privdata, "AUTH %s %s", addr->user, addr->password)
               : redisAsyncCommand(ac, cb, privdata, "AUTH %s", addr->password);
  if (rc != REDIS_OK)
    return ST_EIO;
  *queued = 1;
  return ST_OK;
}

void conn_read_now(redisAsyncContext *ac) {
  conn_events_t *ev = ac != NULL ? ac->ev.data : NULL;
  if (ev != NULL && connected(ev)) {
    if (ev->ssl != NULL)
      tls_clear_errors();
    ev->read_ns = tb_now_ns(ev->tb);
    redisAsyncHandleRead(ac);
  }
}

unsigned long conn_replies_pooled(const redisAsyncContext *ac) {
  const conn_events_t *ev = ac != NULL ? ac->ev.data : NULL;
  return ev != NULL ? reply_pool_served(ev->replies) : 0;
}

uint64_t conn_read_ns(const redisAsyncContext *ac) {
  const conn_events_t *ev = ac->ev.data;
  return ev->read_ns != 0 ? ev->read_ns : tb_now_ns(ev->tb);
}

void conn_before_write(redisAsyncContext *ac, conn_before_write_fn *fn, void *arg) {
  conn_events_t *ev = ac->ev.data;
  ev->before_write_fn = fn;
  ev->before_write_arg = arg;
}

unsigned long conn_writes(const redisAsyncContext *ac) {
  const conn_events_t *ev = ac != NULL ? ac->ev.data : NULL;
  return ev != NULL ? ev->writes : 0;
}

int conn_output_pending(const redisAsyncContext *ac) { return output_len(ac) != 0; }

int conn_write_now(redisAsyncContext *ac) {
  conn_events_t *ev = ac != NULL ? ac->ev.data : NULL;
  if (ev == NULL || !list_linked(&ev->dirty_link))
    return 0;
  flush_one(ev); /* the prepare handle stops itself once the list is empty */
  return 1;
}

void conn_set_caps(redisAsyncContext *ac, const conn_caps_t *caps) {
  conn_events_t *ev = ac->ev.data;
  if (ev != NULL)
    ev->caps = caps;
}

const char *conn_error(const redisAsyncContext *ac) {
  conn_events_t *ev = ac->ev.data;
  if (ev != NULL && ev->violation != NULL)
    return ev->violation;
  /* hiredis reports a failed TLS read or write as strerror(errno), which
   * says nothing (often "Success"); OpenSSL knows what went wrong. */
  if (ev != NULL && ev->ssl != NULL &&
      tls_explain(ev->ssl, !ev->got_reply, ac->errstr, ev->tls_why, sizeof ev->tls_why))
    return ev->tls_why;
  return ac->errstr[0] != '\0' ? ac->errstr : "connection closed by the server";
}

int conn_tls_unfinished(const redisAsyncContext *ac) {
  const conn_events_t *ev = ac->ev.data;
  return ev != NULL && ev->ssl != NULL && !ev->got_reply;
}

int conn_tls_handshaking(const redisAsyncContext *ac) {
  const conn_events_t *ev = ac->ev.data;
  /* REDIS_CONNECTED: the TCP connect completed (hiredis sets it then, before
   * any TLS byte is answered); without it, the connect itself is stuck. */
  return ev != NULL && (ac->c.flags & REDIS_CONNECTED) != 0 && tls_handshaking(ev->ssl);
}

void conn_close(redisAsyncContext *ac) {
  if (ac == NULL)
    return;
  ac->data = NULL; /* our disconnect callbacks ignore it from now on */
  redisAsyncFree(ac);
}
