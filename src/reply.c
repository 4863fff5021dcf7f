/* reply.c: reading Redis replies (see reply.h). */
#include "reply.h"

#include <string.h>

static int bytes_equal(const char *s, size_t len, const char *literal) {
  size_t n = strlen(literal);
  return len == n && memcmp(s, literal, n) == 0;
}

reply_verdict_t reply_classify(const redisReply *reply, int64_t expect, int64_t *integer) {
  *integer = reply->type == REDIS_REPLY_INTEGER ? (int64_t)reply->integer : 0;
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
  if (bytes_equal(kind->str, kind->len, "message"))
    result = PUBSUB_MESSAGE;
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
