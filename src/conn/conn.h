/* conn.h: hiredis async connections on a libuv loop, shared by the command
 * connection (node.c) and the release-notification subscriber (notify.c).
 *
 * The event hooks are our own rather than hiredis's adapters/libuv.h, for two
 * reasons.  Writes are coalesced: a command queued on a connected context
 * does not ask the poller for writability; the context joins a dirty list
 * that one uv_prepare handle flushes right before the loop blocks, so all
 * commands of a loop turn go out in one write() per master.  And socket
 * errors are not dropped: hiredis 0.14's adapter ignores a poll error, so a
 * refused connect or a reset connection would only be noticed at a timeout. */
#ifndef REDLOCK_CONN_H
#define REDLOCK_CONN_H

#include <hiredis/async.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "util/list.h"
#include "util/status.h"
#include "util/timebase.h"
#include "util/tls.h"
#include "util/uri.h"

/* What one reply may be: the one place these caps are set (docs/api.md,
 * "Hostile masters", states them).  Our replies are small: the largest is
 * INFO server (a bulk of a few KiB), the widest a pub/sub message (an array
 * of 3 bulks, 4 values), the rest are integers, statuses, errors and short
 * bulks.  Anything far larger is a broken or hostile master.  Without caps
 * hiredis allocates an aggregate's element table from its header alone
 * (`*2147483647` makes a 16 GiB table that freeing then walks, freezing the
 * loop), buffers a bulk of any announced length, and builds a reply of any
 * number of values: `*1024` of `*1024` of `*1024`, each array within the
 * width and depth caps, is a billion objects.  A reply over a cap is a
 * protocol error: the connection is dropped (and reconnected with backoff),
 * the other masters are not affected.
 *
 * The caps are checked as hiredis parses (conn.c's reader object functions,
 * and the reader's buffer after each read), so a reply is refused as soon as
 * it passes one, not once it is complete.  One reply then costs at most
 * 1 MiB of strings, 4096 reply objects (about 64 bytes each) and their
 * element tables (8 bytes a value), and the reader's buffer the strings are
 * copied from (1 MiB + a 16 KiB read, in an sds that may have doubled). */
#define CONN_MAX_REPLY_ELEMENTS 1024 /* elements of one aggregate (a map's keys and values) */
#define CONN_MAX_REPLY_DEPTH 8       /* nesting of aggregates */
/* Values in one reply, in all: the reply itself and everything nested in it.
 * An aggregate's elements count when its header announces them (its element
 * table is allocated then), so a stream is refused at the header that passes
 * the cap: `*1024` of `*1024` ... at its fourth `*1024` (1 + 4 x 1024).
 * 1000 times our widest reply, and room for one aggregate at the width cap. */
#define CONN_MAX_REPLY_VALUES 4096
/* Bytes of the strings of one reply (bulk, simple and error strings,
 * verbatim strings, big numbers), all of them together.  Exact: a bulk of
 * 1 MiB is a reply, of 1 MiB + 1 byte a protocol error, refused as soon as
 * its header `$1048577` is read.  The framing (type bytes, lengths, CRLFs,
 * integers) is not counted: CONN_MAX_REPLY_VALUES bounds it.  No part of a
 * reply is buffered beyond what is left of this cap (+ CONN_REPLY_LINE_MAX). */
#define CONN_MAX_REPLY_BYTES (1024 * 1024)

/* The one larger reply: a cluster's slot map (CLUSTER SHARDS, CLUSTER SLOTS)
 * on a cluster voter's discovery connection, which sends nothing else.  Its
 * size follows the cluster's, and the caps fit the largest cluster Redis
 * supports (16384 slots, about 1000 nodes) in any fragmentation:
 *  - CLUSTER SHARDS lists each shard's slot ranges as flat start/end pairs
 *    and each node once (about 20 values): every slot a range of its own
 *    over 1000 nodes is 1 + 2 x 16384 + ~20 x 1000 values, ~60 000, and
 *    some 250 KiB of strings;
 *  - CLUSTER SLOTS (servers before 7.0) repeats a shard's nodes for each of
 *    its ranges: 16384 single-slot ranges are 16384 x (3 + 4 per node)
 *    values, within the cap up to 7 nodes a shard (a primary and 6
 *    replicas), and ~55 bytes of strings a node (6.3 MiB at 7).
 * Widest aggregate: a shard's slots (at most 8192 ranges, 16384 integers) or
 * CLUSTER SLOTS' ranges (at most 16384); the cap is twice that.  Depth: 4.
 * A hostile reply still costs at most 8 MiB of strings and 512 Ki reply
 * objects (~45 MiB with their tables), once: there is one such connection
 * per cluster voter, and a reply over a cap drops it like a master's. */
#define CONN_MAP_REPLY_ELEMENTS 32768
#define CONN_MAP_REPLY_VALUES (512 * 1024)
#define CONN_MAP_REPLY_BYTES (8 * 1024 * 1024)

/* A set of caps (the depth is CONN_MAX_REPLY_DEPTH for all), with the
 * message that names each. */
typedef struct conn_caps {
  size_t elements, values, bytes;
  const char *too_many_elements, *too_many_values, *too_long;
} conn_caps_t;
/* CONN_MAX_REPLY_*: every connection's unless it says otherwise. */
extern const conn_caps_t conn_caps_reply;
/* CONN_MAP_REPLY_*: a connection that reads slot maps. */
extern const conn_caps_t conn_caps_map;

/* The framing of the item being read, beyond its strings' bytes: a bulk's
 * length line and CRLFs ("1048576\r\n...\r\n" is 11 bytes), an integer line. */
#define CONN_REPLY_LINE_MAX 64
#define CONN_OUTPUT_RESERVE_MAX (32 * 1024) /* asked for the next turn's output (conn.c) */

/* One per client: flushes the connections written to during a loop turn. */
typedef struct conn_flusher {
  uv_prepare_t prepare;
  list_node_t dirty;
} conn_flusher_t;

/* 0, or a libuv error (the flusher must then not be used). */
int conn_flusher_init(conn_flusher_t *flusher, uv_loop_t *loop);
/* Closes the prepare handle; `closed` runs when it is closed. */
void conn_flusher_close(conn_flusher_t *flusher, uv_close_cb closed);

/* Starts a non-blocking connect, hooks it to the loop and sets the
 * callbacks; ac->data = data.  A TCP address is connected to at ip, a
 * numeric address (resolve.h: hiredis would block on a name).  A rediss://
 * address starts TLS with tls (the client's; may be NULL otherwise), its
 * certificate checked against the URI host, not ip.  The connect callback
 * reports the TCP connect only: the TLS handshake goes on with the first
 * reads and writes, so it is over when the first reply arrives.  ST_OK
 * with *out; on failure ST_ENOMEM, ST_EIO, ST_EINVAL (TLS wanted without
 * tls) or tls_attach's status, with the reason in err; *tls_failed (when not NULL) says whether
 * it was the TLS set-up that failed: on loopback the TCP connect can be done
 * at once and the handshake then runs, and fails, inside this call.  tb: the
 * clock that stamps reads (conn_read_ns); it outlives the context. */
status_t conn_open(redisAsyncContext **out, const node_addr_t *addr, const char *ip,
                   tls_client_t *tls, uv_loop_t *loop, conn_flusher_t *flusher,
                   const timebase_t *tb, void *data, redisConnectCallback *on_connect,
                   redisDisconnectCallback *on_disconnect, char *err, size_t err_len,
                   int *tls_failed);
/* The caps of ac's replies from now on (conn_caps_reply until then). */
void conn_set_caps(redisAsyncContext *ac, const conn_caps_t *caps);

/* Queues AUTH when the address has credentials; *queued: the number of
 * commands queued (0 or 1).  ST_OK, or ST_EIO when hiredis will not queue it
 * (out of memory, or the context going away: it does not say which). */
status_t conn_queue_auth(redisAsyncContext *ac, const node_addr_t *addr, redisCallbackFn *cb,
                         void *privdata, unsigned *queued);

/* Reads whatever replies already wait on the socket, without blocking (their
 * callbacks run now).  Used before declaring requests timed out, so that a
 * loop that was itself late does not blame the master. */
void conn_read_now(redisAsyncContext *ac);
/* Writes now what waits for this turn's flush; 1 when there was any.  The
 * flush comes after the turn's callbacks, so a callback that kept the loop
 * busy leaves requests handed over but never written: the hung-master watch
 * must not count that time against the master (node_write_late). */
int conn_write_now(redisAsyncContext *ac);
/* Has fn(ac, arg) called right before each write of this connection's
 * output (the turn's flush, conn_write_now, or a write on writability once
 * the socket had no room): the last moment to queue a command that must
 * follow everything queued so far, and whose reply covers it (a durability
 * ack).  A command it queues goes out with that write.  fn NULL: none. */
typedef void conn_before_write_fn(redisAsyncContext *ac, void *arg);
void conn_before_write(redisAsyncContext *ac, conn_before_write_fn *fn, void *arg);
/* 1 while output handed to hiredis waits to be written (this turn's flush,
 * or what a full socket did not take): a command queued now goes out with
 * it. */
int conn_output_pending(const redisAsyncContext *ac);
/* How many writes took bytes of this connection's output: a caller that
 * noted the count when it handed a request over knows, seeing it unchanged,
 * that the request has not been written yet. */
unsigned long conn_writes(const redisAsyncContext *ac);
/* When the replies now being processed were read off the socket: one clock
 * reading serves every reply of a read (on this VM a clock read costs about
 * 50 ns, and a loaded read brings hundreds of replies).  ac: a live context
 * (the one a reply callback was handed). */
uint64_t conn_read_ns(const redisAsyncContext *ac);
/* How many replies on this connection came from its reply pool (pool.h;
 * for the tests). */
unsigned long conn_replies_pooled(const redisAsyncContext *ac);

/* Why the connection failed: the cap a reply broke, else for TLS what the
 * handshake or certificate check said, else hiredis' errstr, else
 * "connection closed by the server"; never NULL.  Valid inside the connect
 * and disconnect callbacks, until the next call for this context. */
const char *conn_error(const redisAsyncContext *ac);
/* 1 when ac is a TLS connection that failed before any reply came through it:
 * the TLS set-up (handshake, certificate checks) is what failed. */
int conn_tls_unfinished(const redisAsyncContext *ac);
/* 1 while a rediss:// connection's TLS handshake is under way: TCP is up,
 * our hello went out, the handshake has not finished. */
int conn_tls_handshaking(const redisAsyncContext *ac);

/* Detaches `data` and frees the context (deferred by hiredis when called
 * from one of its callbacks); pending callbacks get NULL replies. */
void conn_close(redisAsyncContext *ac);

#endif
