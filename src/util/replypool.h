/* replypool.h: hiredis reply objects for the answers to our commands, kept on
 * a per-connection free list.  hiredis allocates every reply, and
 * a status or bulk string's bytes apart: ten replies and fifteen malloc/free
 * pairs per lock + unlock cycle at N = 5.  The answers we send commands for
 * are top-level scalars (+OK, an integer, nil, a short error), so conn.c's
 * reader object functions build those here, in blocks that return to the
 * pool when hiredis frees them; anything else (aggregates and what is in
 * them, long strings, RESP3 types) is hiredis' own object.
 *
 * A pooled reply is a plain redisReply to every reader.  It is told apart by
 * its `element` field, which hiredis never reads for a scalar and leaves NULL
 * in its own: there it points to the pool the block returns to, so the one
 * free function (reply_pool_free, the reader's freeObject) needs no context.
 * A pool outlives its connection until its last reply is back.
 *
 * Loop thread only, like the connection.  Under AddressSanitizer a kept block
 * is poisoned: a reply used after hiredis freed it is reported until the
 * block serves another reply, which (reuse is LIFO) can be the very next one
 * read.  No reply outlives its callback in our code: callbacks copy what they
 * keep (round.c's reply_classify), and hiredis frees the reply after. */
#ifndef REDLOCK_REPLYPOOL_H
#define REDLOCK_REPLYPOOL_H

#include <stddef.h>

#define REPLY_POOL_STR_MAX 47 /* longer strings are hiredis' own objects */
#define REPLY_POOL_KEEP 256   /* blocks kept per connection at most */

typedef struct reply_pool reply_pool_t;

/* NULL when out of memory. */
reply_pool_t *reply_pool_new(void);
/* The connection is gone: the pool is freed now, or with its last reply. */
void reply_pool_release(reply_pool_t *pool);

/* Top-level scalar replies from the pool; NULL when the reply does not fit
 * (a string longer than REPLY_POOL_STR_MAX, a type other than STRING, STATUS
 * or ERROR) or memory is short: the caller builds it the usual way. */
void *reply_pool_integer(reply_pool_t *pool, long long value);
void *reply_pool_nil(reply_pool_t *pool);
void *reply_pool_string(reply_pool_t *pool, int type, const char *str, size_t len);

/* Frees any reply object: a pooled one goes back to its pool, any other to
 * hiredis' freeReplyObject. */
void reply_pool_free(void *reply);

/* Replies the pool has served, and blocks it keeps free (for the tests). */
unsigned long reply_pool_served(const reply_pool_t *pool);
unsigned reply_pool_kept(const reply_pool_t *pool);

#endif
