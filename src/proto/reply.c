/* reply.c: reading Redis replies (see reply.h). */
#include "proto/reply.h"
#include "util/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bytes_equal(const char *s, size_t len, const char *literal) {
  size_t n = strlen(literal);
  return len == n && memcmp(s, literal, n) == 0;
}

reply_verdict_t reply_classify(const redisReply *reply, int64_t expect, int64_t *integer) {
  *integer = reply->type == REDIS_REPLY_INTEGER ? (int64_t)reply->integer : 0;
  if (expect == REPLY_EXPECT_ANY)
    return reply->type == REDIS_REPLY_ERROR ? REPLY_ERROR : REPLY_YES;
  switch (reply->type) {
  case REDIS_REPLY_ERROR:
    return REPLY_ERROR;
  case REDIS_REPLY_NIL:
    return REPLY_REFUSED;
  case REDIS_REPLY_STATUS:
    return expect == REPLY_EXPECT_OK && bytes_equal(reply->str, reply->len, "OK")
               ? REPLY_YES
               : REPLY_UNEXPECTED;
  case REDIS_REPLY_INTEGER:
    if (expect == REPLY_EXPECT_POSITIVE)
      return reply->integer > 0 ? REPLY_YES : REPLY_UNEXPECTED;
    if (expect == REPLY_EXPECT_CODE)
      return reply->integer > 0 ? REPLY_YES : REPLY_REFUSED;
    if (expect > 0 && reply->integer == expect)
      return REPLY_YES;
    if (expect > 0 && reply->integer >= 0 && reply->integer < expect)
      return REPLY_REFUSED;
    return REPLY_UNEXPECTED;
  default:
    return REPLY_UNEXPECTED;
  }
}

int reply_is_noscript(const redisReply *reply) {
  return reply->type == REDIS_REPLY_ERROR && reply->len >= 8 &&
         memcmp(reply->str, "NOSCRIPT", 8) == 0;
}

int reply_pubsub_payload(const redisReply *reply, const char **data, size_t *len) {
  const char *name;
  size_t name_len;
  if (reply_pubsub(reply, &name, &name_len) != PUBSUB_MESSAGE)
    return 0;
  const redisReply *payload = reply->element[2];
  if (payload == NULL || payload->type != REDIS_REPLY_STRING)
    return 0;
  *data = payload->str;
  *len = payload->len;
  return 1;
}

pubsub_kind_t reply_pubsub(const redisReply *reply, const char **channel, size_t *channel_len) {
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3)
    return PUBSUB_OTHER;
  const redisReply *kind = reply->element[0], *name = reply->element[1];
  if (kind == NULL || name == NULL || kind->type != REDIS_REPLY_STRING ||
      name->type != REDIS_REPLY_STRING)
    return PUBSUB_OTHER;
  pubsub_kind_t result = PUBSUB_OTHER;
  if (bytes_equal(kind->str, kind->len, "message") || bytes_equal(kind->str, kind->len, "smessage"))
    result = PUBSUB_MESSAGE;
  else if (bytes_equal(kind->str, kind->len, "ssubscribe"))
    result = PUBSUB_SSUBSCRIBE;
  else if (bytes_equal(kind->str, kind->len, "sunsubscribe"))
    result = PUBSUB_SUNSUBSCRIBE;
  else if (bytes_equal(kind->str, kind->len, "subscribe"))
    result = PUBSUB_SUBSCRIBE;
  else if (bytes_equal(kind->str, kind->len, "unsubscribe"))
    result = PUBSUB_UNSUBSCRIBE;
  if (result != PUBSUB_OTHER) {
    *channel = name->str;
    *channel_len = name->len;
  }
  return result;
}

redisReply *reply_clone(const redisReply *reply) {
  redisReply *copy = rl_malloc(sizeof *copy);
  if (copy == NULL)
    return NULL;
  *copy = *reply; /* type, integer, len (and what later hiredis versions add) */
  copy->str = NULL;
  copy->element = NULL;
  copy->elements = 0;
  if (reply->str != NULL) {
    copy->str = rl_malloc(reply->len + 1);
    if (copy->str == NULL) {
      rl_free(copy);
      return NULL;
    }
    memcpy(copy->str, reply->str, reply->len);
    copy->str[reply->len] = '\0';
  }
  if (reply->element != NULL && reply->elements > 0) {
    copy->element = rl_calloc(reply->elements, sizeof *copy->element);
    if (copy->element == NULL) {
      reply_clone_free(copy);
      return NULL;
    }
    copy->elements = reply->elements;
    for (size_t i = 0; i < reply->elements; i++) {
      if (reply->element[i] != NULL &&
          (copy->element[i] = reply_clone(reply->element[i])) == NULL) {
        reply_clone_free(copy);
        return NULL;
      }
    }
  }
  return copy;
}

void reply_clone_free(redisReply *reply) {
  if (reply == NULL)
    return;
  for (size_t i = 0; i < reply->elements; i++)
    reply_clone_free(reply->element[i]);
  rl_free(reply->element);
  rl_free(reply->str);
  rl_free(reply);
}

int reply_ack_met(const redisReply *reply, int waitaof, int local, int replicas, char *why,
                  size_t why_len) {
  if (reply == NULL) {
    snprintf(why, why_len, "no reply to %s", waitaof ? "WAITAOF" : "WAIT");
    return 0;
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    snprintf(why, why_len, "%s: %.*s", waitaof ? "WAITAOF" : "WAIT",
             (int)(reply->len < 120 ? reply->len : 120), reply->str);
    return 0;
  }
  long long got_local = local, got = -1;
  if (!waitaof && reply->type == REDIS_REPLY_INTEGER) {
    got = reply->integer;
  } else if (waitaof && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
             reply->element[0] != NULL && reply->element[0]->type == REDIS_REPLY_INTEGER &&
             reply->element[1] != NULL && reply->element[1]->type == REDIS_REPLY_INTEGER) {
    got_local = reply->element[0]->integer;
    got = reply->element[1]->integer;
  } else {
    snprintf(why, why_len, "unexpected reply to %s", waitaof ? "WAITAOF" : "WAIT");
    return 0;
  }
  if (got_local < local) {
    snprintf(why, why_len, "WAITAOF: the local AOF fsync was not acknowledged in time");
    return 0;
  }
  if (got < replicas) {
    snprintf(why, why_len, "%s: %lld of %d replica%s acknowledged in time",
             waitaof ? "WAITAOF" : "WAIT", got, replicas, replicas == 1 ? "" : "s");
    return 0;
  }
  return 1;
}
