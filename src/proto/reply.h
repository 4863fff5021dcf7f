/* reply.h: reading Redis replies.  Pure functions over hiredis reply objects
 * (no I/O, no state), so that every byte a master sends back is interpreted
 * in one place that unit tests and fuzzers can reach. */
#ifndef REDLOCK_REPLY_H
#define REDLOCK_REPLY_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#define REPLY_EXPECT_OK 0        /* yes = +OK, refused = nil (SET NX) */
#define REPLY_EXPECT_POSITIVE -1 /* yes = any integer > 0 (a fencing token), refused = nil */
/* yes = any integer > 0 (1 or a fencing token); refused = nil or an integer
 * <= 0, which says why (a script's reason code, kept in *integer): the
 * acquisitions and extensions of the semaphore and read-write lock scripts
 * (kind_sem.c, kind_rw.c), and extend.lua's (kind_mutex.c: 1 or 2, refused 0). */
#define REPLY_EXPECT_CODE -2
/* yes = any reply but an error (a read's: what it reads is the caller's to
 * judge, through round_params_t.on_reply). */
#define REPLY_EXPECT_ANY -3

typedef enum {
  REPLY_YES = 1,    /* the master did what we asked */
  REPLY_REFUSED,    /* it answered no: key held elsewhere, or our value absent */
  REPLY_ERROR,      /* an error reply (-READONLY, -OOM, -NOSCRIPT, ...) */
  REPLY_UNEXPECTED, /* a reply of a type the command cannot give */
} reply_verdict_t;

/* expect: REPLY_EXPECT_OK, REPLY_EXPECT_POSITIVE, REPLY_EXPECT_CODE, REPLY_EXPECT_ANY, or k > 0
 * (yes = integer k, refused = nil or an integer in [0, k)).  *integer gets an integer reply's value
 * (0 otherwise). */
reply_verdict_t reply_classify(const redisReply *reply, int64_t expect, int64_t *integer);

/* An error reply saying the master does not have the script (NOSCRIPT). */
int reply_is_noscript(const redisReply *reply);

typedef enum {
  PUBSUB_OTHER = 0,
  PUBSUB_MESSAGE,
  PUBSUB_SUBSCRIBE,
  PUBSUB_UNSUBSCRIBE,
  PUBSUB_SSUBSCRIBE,   /* a shard channel's subscription confirmed */
  PUBSUB_SUNSUBSCRIBE, /* a shard channel's subscription ended (asked, or its slot moved) */
} pubsub_kind_t;

/* A pub/sub push: ["message"|"subscribe"|"unsubscribe", channel, ...], or
 * a shard channel's ["smessage"|"ssubscribe"|"sunsubscribe", channel, ...]
 * ("smessage" is a PUBSUB_MESSAGE).  Sets *channel / *channel_len for the
 * kinds it knows. */
pubsub_kind_t reply_pubsub(const redisReply *reply, const char **channel, size_t *channel_len);
/* The payload of a "message" push (its third element, a string): 1 and
 * *data / *len set, or 0 for anything else. */
int reply_pubsub_payload(const redisReply *reply, const char **data, size_t *len);

/* A deep copy of reply, allocated here (not by the reader that made reply),
 * to keep past its callback; NULL when out of memory.  Freed by
 * reply_clone_free (NULL is fine). */
redisReply *reply_clone(const redisReply *reply);
void reply_clone_free(redisReply *reply);

/* Whether the reply to `WAIT replicas T` (waitaof == 0) or `WAITAOF local
 * replicas T` (waitaof == 1) reached what was asked.  1, or 0 with why set
 * ("0 of 1 replicas acknowledged", "ERR unknown command ...", "no reply"). */
int reply_ack_met(const redisReply *reply, int waitaof, int local, int replicas, char *why,
                  size_t why_len);

#endif
