/* hostile_server.c: a fake Redis master that misbehaves on purpose, for
 * tests/integration/test_hostile.c.
 *
 *   hostile_server --mode MODE [--port PORT]
 *
 * It listens on 127.0.0.1 only (PORT 0 or absent = a free port), answers the
 * handshake our client sends on every (re)connect plausibly enough that the
 * master comes READY (PING, AUTH, SELECT, CLIENT, SCRIPT LOAD with the real
 * SHA1 of the body, INFO server with run_id and uptime, INFO replication
 * with role master, SUBSCRIBE), and then
 * answers every other command, i.e. the lock commands (SET, EVALSHA, ...),
 * according to MODE:
 *
 *   ok                    a plausible answer (+OK, :numkeys): the control case
 *   huge-array            `*2147483647\r\n` and nothing more
 *   many-elements         `*1000000\r\n`, then the elements streamed (64-byte bulks)
 *   huge-bulk             `$2147483647\r\n`, then bytes as fast as the socket takes them
 *   endless-bulk          `$104857600\r\n` (100 MB), then 4 KiB every 20 ms, forever
 *   deep-nesting          `*1\r\n` 100,000 times, then `:1\r\n`
 *   nested-stream         `*1024` of `*1024` of `*1024` of `:1`, streamed (a billion
 *                         leaves: every array within the per-aggregate caps)
 *   million-leaves        `*1024` of `*1024` of `:1`, complete (1,049,601 values, 4 MiB)
 *   many-bulks            `*1024` of 2 KiB bulks, complete (2 MiB of strings in all),
 *                         to the first lock command of a connection; `ok` after
 *   bulk-over-cap         a bulk of 1 MiB + 1 byte (`$1048577`), complete, to the
 *                         first lock command of a connection; `ok` after
 *   bulk-at-cap           a bulk of exactly 1 MiB (`$1048576`), likewise
 *   bulk-header-over-cap  `$1048577\r\n` and nothing more
 *   close-mid-reply       half a bulk reply, then the connection is closed
 *   wrong-types           in turn: an integer, an array, a double, a map, an
 *                         attribute, a boolean, a big number, a verbatim
 *                         string, a set, a push (where a status is expected);
 *                         acquisitions (SET) and other commands each run
 *                         through the list from its start on every connection
 *   close-after-handshake closes every connection right after answering INFO
 *   silent                never answers a lock command (a master that hangs
 *                         after the handshake, without closing)
 *
 * Output (stdout, each line flushed as it is written), so that a
 * test reading the pipe can measure reconnect rates:
 *   port P                  first line, once listening
 *   accept N T              the N-th accepted connection, T = CLOCK_MONOTONIC ms
 *                           (the same clock as the test process's)
 *   accepted N              on SIGUSR1: the count so far
 *   closed N B              connection N is closed, after B bytes were written to it
 * It runs until SIGTERM/SIGINT.  Exit status 2 on bad usage, 1 on a set-up
 * error.  Single-threaded, ppoll(2); no dependency beyond libc, so a test can
 * exec it from any build. */
#define _GNU_SOURCE /* accept4, ppoll */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli_args.h"
#include "sha1.h"

#define MAX_CONNS 256
#define MAX_ARGS 64
#define MAX_ARG_LEN (4 * 1024 * 1024) /* the largest thing we accept is SCRIPT LOAD's body */
#define MAX_INPUT (64 * 1024 * 1024)  /* buffered client input before we stop reading */
#define STREAM_CHUNK (64 * 1024)      /* output generated ahead of the socket */
#define TRICKLE_BYTES 4096
#define TRICKLE_MS 20
#define NEST_WIDTH 1024  /* the per-aggregate cap of the client: each array is within it */
#define NEST_MAX_DEPTH 4 /* arrays nested at most (nested-stream: 3) */
#define MANY_BULK_LEN 2048
#define REPLY_CAP (1024 * 1024) /* the client's cap on the strings of one reply */

typedef enum {
  MODE_OK,
  MODE_HUGE_ARRAY,
  MODE_MANY_ELEMENTS,
  MODE_HUGE_BULK,
  MODE_ENDLESS_BULK,
  MODE_DEEP_NESTING,
  MODE_NESTED_STREAM,
  MODE_MILLION_LEAVES,
  MODE_MANY_BULKS,
  MODE_BULK_OVER_CAP,
  MODE_BULK_AT_CAP,
  MODE_BULK_HEADER_OVER_CAP,
  MODE_CLOSE_MID_REPLY,
  MODE_WRONG_TYPES,
  MODE_CLOSE_AFTER_HANDSHAKE,
  MODE_SILENT,
} hostile_mode_t;

static const char *const mode_names[] = {
    [MODE_OK] = "ok",
    [MODE_HUGE_ARRAY] = "huge-array",
    [MODE_MANY_ELEMENTS] = "many-elements",
    [MODE_HUGE_BULK] = "huge-bulk",
    [MODE_ENDLESS_BULK] = "endless-bulk",
    [MODE_DEEP_NESTING] = "deep-nesting",
    [MODE_NESTED_STREAM] = "nested-stream",
    [MODE_MILLION_LEAVES] = "million-leaves",
    [MODE_MANY_BULKS] = "many-bulks",
    [MODE_BULK_OVER_CAP] = "bulk-over-cap",
    [MODE_BULK_AT_CAP] = "bulk-at-cap",
    [MODE_BULK_HEADER_OVER_CAP] = "bulk-header-over-cap",
    [MODE_CLOSE_MID_REPLY] = "close-mid-reply",
    [MODE_WRONG_TYPES] = "wrong-types",
    [MODE_CLOSE_AFTER_HANDSHAKE] = "close-after-handshake",
    [MODE_SILENT] = "silent",
};
#define MODE_COUNT (sizeof mode_names / sizeof mode_names[0])

/* What a connection is streaming: output produced on demand, as the socket
 * drains, so that a 2 GB reply never sits in our memory. */
typedef enum {
  STREAM_NONE,
  STREAM_ELEMENTS, /* stream_left elements of `element` */
  STREAM_BYTES,    /* stream_left bytes of a bulk, then its \r\n */
  STREAM_TRICKLE,  /* the same, 4 KiB every 20 ms */
  STREAM_NESTED,   /* nested arrays of NEST_WIDTH, nest_depth deep, of `:1` */
} stream_t;

typedef struct {
  int fd;
  char *in;
  size_t in_len, in_cap;
  char *out;
  size_t out_off, out_len, out_cap;
  int close_after_flush;
  stream_t stream;
  uint64_t stream_left; /* elements or bytes still to send */
  const char *element;  /* STREAM_ELEMENTS: what each element is */
  size_t element_len;
  /* STREAM_NESTED: nest_left[l] = children still to send of the open array
   * at level l; nest_cur = the innermost open one (-1: done). */
  int nest_depth, nest_cur;
  uint32_t nest_left[NEST_MAX_DEPTH];
  unsigned long number; /* the accept count when it was accepted */
  uint64_t sent;        /* bytes written to it */
  uint64_t next_trickle_ms;
  unsigned lock_commands; /* lock commands answered on this connection */
  /* wrong-types: which type comes next, counted apart for acquisitions
   * (SET) and everything else, so that a connection's first acquisition
   * always gets the first type even when replayed releases go first. */
  unsigned wrong_acquire, wrong_other;
} conn_t;

static hostile_mode_t mode;
static conn_t conns[MAX_CONNS];
static unsigned long accepted;
static char run_id[41];
static volatile sig_atomic_t report_requested;

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- output ------------------------------------------------------------------------------ */

/* Appends to the connection's output; exits on no memory (a test helper
 * has nothing better to do, and the test sees the master vanish). */
static void out_append(conn_t *c, const void *data, size_t len) {
  if (c->out_off > 0 && c->out_off == c->out_len)
    c->out_off = c->out_len = 0;
  if (c->out_len + len > c->out_cap) {
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + len)
      cap *= 2;
    char *p = realloc(c->out, cap);
    if (p == NULL) {
      fprintf(stderr, "hostile_server: out of memory\n");
      exit(1);
    }
    c->out = p;
    c->out_cap = cap;
  }
  memcpy(c->out + c->out_len, data, len);
  c->out_len += len;
}

static void out_str(conn_t *c, const char *s) { out_append(c, s, strlen(s)); }

static void out_bulk(conn_t *c, const char *s, size_t len) {
  char head[32];
  snprintf(head, sizeof head, "$%zu\r\n", len);
  out_str(c, head);
  out_append(c, s, len);
  out_str(c, "\r\n");
}

static size_t out_pending(const conn_t *c) { return c->out_len - c->out_off; }

static const char element64[] = "$64\r\n"
                                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                                "\r\n";

/* Starts an array of NEST_WIDTH at level `level` of a nested stream. */
static void nest_open(conn_t *c, int level) {
  char head[32];
  snprintf(head, sizeof head, "*%d\r\n", NEST_WIDTH);
  out_str(c, head);
  c->nest_left[level] = NEST_WIDTH;
  c->nest_cur = level;
}

/* Tops up a nested stream: headers as arrays open, leaves in batches. */
static void nested_fill(conn_t *c) {
  while (c->nest_cur >= 0 && out_pending(c) < STREAM_CHUNK) {
    int l = c->nest_cur;
    if (c->nest_left[l] == 0) {
      c->nest_cur--; /* this array is complete */
    } else if (l == c->nest_depth - 1) {
      for (; c->nest_left[l] > 0 && out_pending(c) < STREAM_CHUNK; c->nest_left[l]--)
        out_str(c, ":1\r\n");
    } else {
      c->nest_left[l]--;
      nest_open(c, l + 1);
    }
  }
  if (c->nest_cur < 0)
    c->stream_left = 0;
}

/* Starts a reply of nested arrays, `depth` deep. */
static void nested_start(conn_t *c, int depth) {
  c->stream = STREAM_NESTED;
  c->stream_left = 1; /* until nested_fill finds it complete */
  c->nest_depth = depth;
  nest_open(c, 0);
}

/* Starts a bulk of `len` bytes, streamed. */
static void bulk_start(conn_t *c, uint64_t len) {
  char head[32];
  snprintf(head, sizeof head, "$%llu\r\n", (unsigned long long)len);
  out_str(c, head);
  c->stream = STREAM_BYTES;
  c->stream_left = len;
}

/* Starts an array of `n` copies of `element`, streamed. */
static void elements_start(conn_t *c, uint64_t n, const char *element, size_t len) {
  char head[32];
  snprintf(head, sizeof head, "*%llu\r\n", (unsigned long long)n);
  out_str(c, head);
  c->stream = STREAM_ELEMENTS;
  c->stream_left = n;
  c->element = element;
  c->element_len = len;
}

/* Tops up a streaming reply while little output is pending. */
static void stream_fill(conn_t *c, uint64_t now) {
  static char bytes[STREAM_CHUNK];
  if (bytes[0] == '\0')
    memset(bytes, 'x', sizeof bytes);
  switch (c->stream) {
  case STREAM_NONE:
    return;
  case STREAM_ELEMENTS:
    while (c->stream_left > 0 && out_pending(c) < STREAM_CHUNK) {
      out_append(c, c->element, c->element_len);
      c->stream_left--;
    }
    break;
  case STREAM_NESTED:
    nested_fill(c);
    break;
  case STREAM_BYTES:
    if (out_pending(c) < STREAM_CHUNK && c->stream_left > 0) {
      size_t n = c->stream_left < sizeof bytes ? (size_t)c->stream_left : sizeof bytes;
      out_append(c, bytes, n);
      c->stream_left -= n;
      if (c->stream_left == 0)
        out_str(c, "\r\n");
    }
    break;
  case STREAM_TRICKLE:
    if (now >= c->next_trickle_ms && out_pending(c) < STREAM_CHUNK) {
      size_t n = c->stream_left < TRICKLE_BYTES ? (size_t)c->stream_left : TRICKLE_BYTES;
      out_append(c, bytes, n);
      c->stream_left -= n;
      if (c->stream_left == 0)
        out_str(c, "\r\n");
      c->next_trickle_ms = now + TRICKLE_MS;
    }
    break;
  }
  if (c->stream_left == 0)
    c->stream = STREAM_NONE;
}

/* ---- replies ----------------------------------------------------------------------------- */

static void reply_info(conn_t *c) {
  char text[768];
  int n =
      snprintf(text, sizeof text,
               "# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\n"
               "process_id:%ld\r\nrun_id:%s\r\ntcp_port:0\r\nuptime_in_seconds:3600\r\n"
               "uptime_in_days:0\r\n# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
               "master_replid:%s\r\nmaster_replid2:0000000000000000000000000000000000000000\r\n",
               (long)getpid(), run_id, run_id);
  out_bulk(c, text, (size_t)n);
}

static void reply_subscribe(conn_t *c, const char *kind, const char *channel, size_t len) {
  char head[64];
  snprintf(head, sizeof head, "*3\r\n$%zu\r\n%s\r\n", strlen(kind), kind);
  out_str(c, head);
  out_bulk(c, channel, len);
  out_str(c, ":1\r\n");
}

/* What a real master would answer to a lock command. */
static void reply_plausible(conn_t *c, int argc, char **argv) {
  if (argc >= 3 && (strcasecmp(argv[0], "EVALSHA") == 0 || strcasecmp(argv[0], "EVAL") == 0)) {
    /* Our scripts answer with the number of keys they handled. */
    char head[32];
    snprintf(head, sizeof head, ":%ld\r\n", strtol(argv[2], NULL, 10));
    out_str(c, head);
  } else {
    out_str(c, "+OK\r\n");
  }
}

/* A lock command (anything that is not handshake): the hostile part. */
static void reply_lock_command(conn_t *c, int argc, char **argv, size_t *lens) {
  static const char *const wrong[] = {
      ":1\r\n",                                        /* integer where +OK is expected */
      "*2\r\n$2\r\nOK\r\n$2\r\nOK\r\n",                /* an array of two OKs */
      ",3.14\r\n",                                     /* RESP3 double */
      "%1\r\n+OK\r\n+OK\r\n",                          /* RESP3 map */
      "|1\r\n+ttl\r\n:1\r\n+OK\r\n",                   /* RESP3 attribute, then the reply */
      "#t\r\n",                                        /* RESP3 boolean */
      "(12345678901234567890123\r\n",                  /* RESP3 big number */
      "=6\r\ntxt:OK\r\n",                              /* RESP3 verbatim string */
      "~1\r\n+OK\r\n",                                 /* RESP3 set */
      ">3\r\n$7\r\nmessage\r\n$1\r\nx\r\n$1\r\ny\r\n", /* RESP3 push */
  };
  /* The modes that misbehave once per connection: the reply after it
   * shows whether the client still reads the connection as before. */
  int first = c->lock_commands == 0;
  switch (mode) {
  case MODE_OK:
  case MODE_CLOSE_AFTER_HANDSHAKE:
    reply_plausible(c, argc, argv);
    break;
  case MODE_HUGE_ARRAY:
    out_str(c, "*2147483647\r\n");
    break;
  case MODE_MANY_ELEMENTS:
    elements_start(c, 1000000, element64, sizeof element64 - 1);
    break;
  case MODE_HUGE_BULK:
    bulk_start(c, 2147483647u);
    break;
  case MODE_NESTED_STREAM:
    nested_start(c, 3);
    break;
  case MODE_MILLION_LEAVES:
    nested_start(c, 2);
    break;
  case MODE_MANY_BULKS: {
    if (!first) {
      reply_plausible(c, argc, argv);
      break;
    }
    static char bulk[MANY_BULK_LEN + 16];
    static size_t bulk_len;
    if (bulk_len == 0) {
      bulk_len = (size_t)snprintf(bulk, sizeof bulk, "$%d\r\n", MANY_BULK_LEN);
      memset(bulk + bulk_len, 'b', MANY_BULK_LEN);
      bulk_len += MANY_BULK_LEN;
      memcpy(bulk + bulk_len, "\r\n", 2);
      bulk_len += 2;
    }
    elements_start(c, NEST_WIDTH, bulk, bulk_len);
    break;
  }
  case MODE_BULK_OVER_CAP:
  case MODE_BULK_AT_CAP:
    if (first)
      bulk_start(c, mode == MODE_BULK_AT_CAP ? REPLY_CAP : REPLY_CAP + 1);
    else
      reply_plausible(c, argc, argv);
    break;
  case MODE_BULK_HEADER_OVER_CAP:
    out_str(c, "$1048577\r\n");
    break;
  case MODE_ENDLESS_BULK:
    out_str(c, "$104857600\r\n");
    c->stream = STREAM_TRICKLE;
    c->stream_left = 104857600u;
    c->next_trickle_ms = 0;
    break;
  case MODE_DEEP_NESTING: {
    /* Built once: replayed releases can ask for hundreds of these. */
    static char nest[100000 * 4 + 4];
    if (nest[0] == '\0') {
      for (int i = 0; i < 100000; i++)
        memcpy(nest + 4 * i, "*1\r\n", 4);
      memcpy(nest + 400000, ":1\r\n", 4);
    }
    out_append(c, nest, sizeof nest);
    break;
  }
  case MODE_CLOSE_MID_REPLY:
    out_str(c, "$32\r\n0123456789abcdef");
    c->close_after_flush = 1;
    break;
  case MODE_WRONG_TYPES: {
    unsigned *next = strcasecmp(argv[0], "SET") == 0 ? &c->wrong_acquire : &c->wrong_other;
    out_str(c, wrong[(*next)++ % (sizeof wrong / sizeof wrong[0])]);
    break;
  }
  case MODE_SILENT:
    break;
  }
  (void)lens;
  c->lock_commands++;
}

static void reply_command(conn_t *c, int argc, char **argv, size_t *lens) {
  if (argc == 0)
    return;
  const char *cmd = argv[0];
  if (strcasecmp(cmd, "PING") == 0) {
    out_str(c, "+PONG\r\n");
  } else if (strcasecmp(cmd, "AUTH") == 0 || strcasecmp(cmd, "SELECT") == 0 ||
             strcasecmp(cmd, "CLIENT") == 0 || strcasecmp(cmd, "READONLY") == 0) {
    out_str(c, "+OK\r\n");
  } else if (strcasecmp(cmd, "HELLO") == 0) {
    out_str(c, "-ERR unknown command 'HELLO'\r\n"); /* a RESP2-only server */
  } else if (strcasecmp(cmd, "COMMAND") == 0) {
    out_str(c, "*0\r\n");
  } else if (strcasecmp(cmd, "SCRIPT") == 0) {
    if (argc >= 3 && strcasecmp(argv[1], "LOAD") == 0) {
      char hex[41];
      sha1_hex(argv[2], lens[2], hex);
      out_bulk(c, hex, 40);
    } else {
      out_str(c, "+OK\r\n");
    }
  } else if (strcasecmp(cmd, "INFO") == 0) {
    reply_info(c);
    /* the handshake ends with INFO replication */
    if (mode == MODE_CLOSE_AFTER_HANDSHAKE && (argc < 2 || strcasecmp(argv[1], "server") != 0))
      c->close_after_flush = 1;
  } else if (strcasecmp(cmd, "SUBSCRIBE") == 0 || strcasecmp(cmd, "UNSUBSCRIBE") == 0) {
    const char *kind = strcasecmp(cmd, "SUBSCRIBE") == 0 ? "subscribe" : "unsubscribe";
    for (int i = 1; i < argc; i++)
      reply_subscribe(c, kind, argv[i], lens[i]);
  } else {
    reply_lock_command(c, argc, argv, lens);
  }
}

/* ---- input ------------------------------------------------------------------------------- */

/* Reads the header "<type><n>\r\n" at *p (0 <= n <= max) and steps past it:
 * n, HEADER_INCOMPLETE when more bytes are needed, or -1 when it is bad. */
#define HEADER_INCOMPLETE (-2)
static long read_header(char **p, char *end, char type, long max) {
  if (*p >= end)
    return HEADER_INCOMPLETE;
  if (**p != type)
    return -1;
  char *nl = memchr(*p, '\n', (size_t)(end - *p));
  if (nl == NULL)
    return HEADER_INCOMPLETE;
  long n = strtol(*p + 1, NULL, 10);
  if (n < 0 || n > max)
    return -1;
  *p = nl + 1;
  return n;
}

/* Parses one command at c->in; returns the bytes it used, 0 when incomplete,
 * -1 on a protocol error.  Arguments point into the buffer, NUL-terminated in
 * place (each is followed by \r\n, so the \r is overwritten). */
static long parse_command(char *buf, size_t buf_len, int *argc, char **argv, size_t *lens) {
  char *p = buf, *end = buf + buf_len;
  *argc = 0;
  if (p == end)
    return 0;
  if (*p != '*') {
    /* Inline command (nc, telnet): words separated by spaces. */
    char *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL)
      return buf_len > MAX_ARG_LEN ? -1 : 0;
    long used = (long)(nl - p + 1);
    *nl = '\0';
    if (nl > p && nl[-1] == '\r')
      nl[-1] = '\0';
    char *save = NULL;
    for (char *w = strtok_r(p, " ", &save); w != NULL && *argc < MAX_ARGS;
         w = strtok_r(NULL, " ", &save)) {
      argv[*argc] = w;
      lens[(*argc)++] = strlen(w);
    }
    return used;
  }
  long n = read_header(&p, end, '*', MAX_ARGS);
  if (n < 0)
    return n == HEADER_INCOMPLETE ? 0 : -1;
  for (long i = 0; i < n; i++) {
    long len = read_header(&p, end, '$', MAX_ARG_LEN);
    if (len < 0)
      return len == HEADER_INCOMPLETE ? 0 : -1;
    if (end - p < len + 2)
      return 0;
    argv[i] = p;
    lens[i] = (size_t)len;
    p[len] = '\0';
    p += len + 2;
  }
  *argc = (int)n;
  return (long)(p - buf);
}

/* Answers every complete command buffered, unless a streaming reply is under
 * way: later replies must follow it, so their commands wait in the buffer. */
static int process_input(conn_t *c) {
  size_t off = 0;
  while (c->stream == STREAM_NONE && !c->close_after_flush && off < c->in_len) {
    int argc;
    char *argv[MAX_ARGS];
    size_t lens[MAX_ARGS];
    long used = parse_command(c->in + off, c->in_len - off, &argc, argv, lens);
    if (used < 0)
      return -1;
    if (used == 0)
      break;
    off += (size_t)used;
    reply_command(c, argc, argv, lens);
  }
  memmove(c->in, c->in + off, c->in_len - off);
  c->in_len -= off;
  return 0;
}

static void conn_close(conn_t *c) {
  printf("closed %lu %llu\n", c->number, (unsigned long long)c->sent);
  fflush(stdout);
  close(c->fd);
  free(c->in);
  free(c->out);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

/* Reads what is there; -1 when the connection is gone. */
static int conn_read(conn_t *c) {
  if (c->in_len >= MAX_INPUT)
    return 0; /* stop reading: the client's writes back up, as on a real server */
  if (c->in_cap - c->in_len < 16384) {
    size_t cap = c->in_cap ? c->in_cap * 2 : 65536;
    char *p = realloc(c->in, cap);
    if (p == NULL)
      return -1;
    c->in = p;
    c->in_cap = cap;
  }
  ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
  if (n == 0)
    return -1;
  if (n < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -1;
  c->in_len += (size_t)n;
  return process_input(c);
}

/* Writes what is pending; -1 when the connection is gone or done. */
static int conn_write(conn_t *c, uint64_t now) {
  for (;;) {
    stream_fill(c, now);
    if (out_pending(c) == 0)
      break;
    ssize_t n = write(c->fd, c->out + c->out_off, out_pending(c));
    if (n < 0)
      return errno == EAGAIN || errno == EINTR ? 0 : -1;
    c->out_off += (size_t)n;
    c->sent += (uint64_t)n;
  }
  if (c->close_after_flush)
    return -1;
  /* A stream that just ended lets the commands behind it be answered. */
  if (c->in_len > 0 && c->stream == STREAM_NONE)
    return process_input(c) < 0 ? -1 : (out_pending(c) > 0 ? conn_write(c, now) : 0);
  return 0;
}

static void on_sigusr1(int sig) {
  (void)sig;
  report_requested = 1;
}

static int listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* loopback only */
  addr.sin_port = htons((uint16_t)port);
  socklen_t len = sizeof addr;
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
    close(fd);
    return -1;
  }
  printf("port %d\n", ntohs(addr.sin_port));
  fflush(stdout);
  return fd;
}

static void accept_all(int lfd) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    accepted++;
    /* One line per connection, flushed: the test measures reconnect rates. */
    printf("accept %lu %llu\n", accepted, (unsigned long long)now_ms());
    fflush(stdout);
    conn_t *slot = NULL;
    for (int i = 0; i < MAX_CONNS && slot == NULL; i++)
      if (conns[i].fd < 0)
        slot = &conns[i];
    if (slot == NULL) {
      close(fd); /* full: the client sees a reset, which is fine for a test server */
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    slot->fd = fd;
    slot->number = accepted;
  }
}

static void usage(FILE *f) {
  fprintf(f, "usage: hostile_server --mode MODE [--port PORT]\nmodes:");
  for (size_t i = 0; i < MODE_COUNT; i++)
    fprintf(f, " %s", mode_names[i]);
  fprintf(f, "\n");
}

int main(int argc, char **argv) {
  int port = 0, have_mode = 0;
  for (int i = 1; i < argc; i++) {
    const char *val = cli_value(argc, argv, &i, usage);
    if (strcmp(argv[i - 1], "--port") == 0) {
      char *end;
      long p = strtol(val, &end, 10);
      if (*val == '\0' || *end != '\0' || p < 0 || p > 65535) {
        usage(stderr);
        return 2;
      }
      port = (int)p;
    } else if (strcmp(argv[i - 1], "--mode") == 0) {
      for (size_t m = 0; m < MODE_COUNT; m++)
        if (strcmp(val, mode_names[m]) == 0) {
          mode = (hostile_mode_t)m;
          have_mode = 1;
        }
      if (!have_mode) {
        usage(stderr);
        return 2;
      }
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (!have_mode) {
    usage(stderr);
    return 2;
  }
  /* A peer that resets while we write must not kill us. */
  signal(SIGPIPE, SIG_IGN);
  /* SIGUSR1 is blocked except inside ppoll, so a report request can never
   * slip in between the check and the wait. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  sigset_t usr1, waitmask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, &waitmask);
  sigdelset(&waitmask, SIGUSR1);
  /* Not a real run_id, but the form the client checks: 40 hex digits. */
  char seed[64];
  snprintf(seed, sizeof seed, "%ld-%llu", (long)getpid(), (unsigned long long)now_ms());
  sha1_hex(seed, strlen(seed), run_id);

  for (int i = 0; i < MAX_CONNS; i++)
    conns[i].fd = -1;
  int lfd = listen_on(port);
  if (lfd < 0) {
    fprintf(stderr, "hostile_server: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
    return 1;
  }

  struct pollfd pfds[MAX_CONNS + 1];
  int idx[MAX_CONNS + 1];
  for (;;) {
    if (report_requested) {
      report_requested = 0;
      printf("accepted %lu\n", accepted);
      fflush(stdout);
    }
    uint64_t now = now_ms();
    int n = 0, timeout = -1;
    pfds[n].fd = lfd;
    pfds[n].events = POLLIN;
    idx[n++] = -1;
    for (int i = 0; i < MAX_CONNS; i++) {
      conn_t *c = &conns[i];
      if (c->fd < 0)
        continue;
      short events = c->in_len < MAX_INPUT ? POLLIN : 0;
      int trickle_wait = c->stream == STREAM_TRICKLE && out_pending(c) == 0;
      if (trickle_wait) {
        uint64_t wait = c->next_trickle_ms > now ? c->next_trickle_ms - now : 0;
        if (timeout < 0 || (int)wait < timeout)
          timeout = (int)wait;
      } else if (out_pending(c) > 0 || c->stream != STREAM_NONE || c->close_after_flush) {
        events |= POLLOUT;
      }
      pfds[n].fd = c->fd;
      pfds[n].events = events;
      idx[n++] = i;
    }
    struct timespec ts = {.tv_sec = timeout / 1000, .tv_nsec = (long)(timeout % 1000) * 1000000L};
    int rc = ppoll(pfds, (nfds_t)n, timeout < 0 ? NULL : &ts, &waitmask);
    if (rc < 0) {
      if (errno == EINTR)
        continue;
      perror("hostile_server: poll");
      return 1;
    }
    now = now_ms();
    for (int k = 0; k < n; k++) {
      if (idx[k] < 0) {
        if (pfds[k].revents & POLLIN)
          accept_all(lfd);
        continue;
      }
      conn_t *c = &conns[idx[k]];
      short re = pfds[k].revents;
      int gone = 0;
      if (re & (POLLIN | POLLHUP | POLLERR))
        gone = conn_read(c) < 0;
      /* Not reading (input full) or not writing (trickle pause): an error or
       * hang-up would otherwise be reported again on every poll. */
      if (!gone && (re & (POLLHUP | POLLERR)) && c->in_len >= MAX_INPUT)
        gone = 1;
      /* Trickling connections are written when their time comes, not when
       * the socket is writable (it nearly always is). */
      if (!gone && ((re & POLLOUT) || (c->stream == STREAM_TRICKLE && now >= c->next_trickle_ms) ||
                    (out_pending(c) > 0 && !(pfds[k].events & POLLOUT))))
        gone = conn_write(c, now) < 0;
      if (gone)
        conn_close(c);
    }
  }
}
