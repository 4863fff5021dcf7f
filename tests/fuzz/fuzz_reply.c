/* fuzz_reply.c: fuzz target for src/proto/reply.c, where every reply a master sends
 * is interpreted (reply_classify, reply_is_noscript, reply_pubsub), and for
 * info_parse_server() on string replies.
 *
 * The input is fed to hiredis's own RESP reader (the one the library's
 * connections use), and each reply it yields, and each element of an array
 * reply, is given to:
 *  - reply_classify with expect = REPLY_EXPECT_OK, REPLY_EXPECT_POSITIVE,
 *    REPLY_EXPECT_CODE, 1 and 3: the verdict is one of the four, errors are
 *    REPLY_ERROR and nils REPLY_REFUSED for every expect, REPLY_YES means +OK /
 *    an integer > 0 / exactly k, REPLY_REFUSED on an integer means 0 <= i < k
 *    (EXPECT_CODE: i <= 0, and every integer is YES or REFUSED), *integer is the
 *    integer of an integer reply and 0 for the others;
 *  - reply_is_noscript: only error replies starting with "NOSCRIPT";
 *  - reply_pubsub_payload: only for a "message" push with a string third
 *    element, which it returns;
 *  - reply_pubsub: the kind is one of six; for a known kind the reply is an
 *    array of >= 3 whose first element names the kind ("smessage" is a
 *    PUBSUB_MESSAGE) and *channel, *len are
 *    exactly the second element's bytes (inside the reply);
 *  - info_parse_server on the bytes of string / status / error replies, copied
 *    to an exact-length buffer;
 *  - direct_tx_classify (an EXEC's reply, for each transaction): one of the
 *    four verdicts, yes and no only for arrays, a yes's token in (0, 2^53]
 *    (a commit's 1), an error exactly when direct_tx_error finds one;
 *    caps_from_command_info: only DELIFEQ / DELEX, only from an array of two.
 * The reader refuses arrays of more than FUZZ_MAX_ELEMENTS (see
 * fuzz_targets.h).  The input is fed in two pieces, split where its first
 * byte says, so that replies arriving across reads are covered too. */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "fuzz_targets.h"
#include "proto/caps.h"
#include "proto/direct.h"
#include "proto/info.h"
#include "proto/reply.h"

static int bytes_are(const char *s, size_t len, const char *lit) {
  return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

static void check_classify(const redisReply *r, int64_t expect) {
  int64_t integer = 0x5A5A5A5A;
  reply_verdict_t v = reply_classify(r, expect, &integer);
  FUZZ_CHECK(v == REPLY_YES || v == REPLY_REFUSED || v == REPLY_ERROR || v == REPLY_UNEXPECTED);
  FUZZ_CHECK(integer == (r->type == REDIS_REPLY_INTEGER ? (int64_t)r->integer : 0));
  if (r->type == REDIS_REPLY_ERROR)
    FUZZ_CHECK(v == REPLY_ERROR);
  if (r->type == REDIS_REPLY_NIL)
    FUZZ_CHECK(v == REPLY_REFUSED);
  if (r->type == REDIS_REPLY_ARRAY || r->type == REDIS_REPLY_STRING)
    FUZZ_CHECK(v == REPLY_UNEXPECTED);
  if (v == REPLY_ERROR)
    FUZZ_CHECK(r->type == REDIS_REPLY_ERROR);
  if (v == REPLY_YES) {
    if (expect == REPLY_EXPECT_OK)
      FUZZ_CHECK(r->type == REDIS_REPLY_STATUS && bytes_are(r->str, r->len, "OK"));
    else if (expect == REPLY_EXPECT_POSITIVE || expect == REPLY_EXPECT_CODE)
      FUZZ_CHECK(r->type == REDIS_REPLY_INTEGER && r->integer > 0);
    else
      FUZZ_CHECK(r->type == REDIS_REPLY_INTEGER && r->integer == expect);
  }
  if (v == REPLY_REFUSED && r->type == REDIS_REPLY_INTEGER)
    FUZZ_CHECK((expect > 0 && r->integer >= 0 && r->integer < expect) ||
               (expect == REPLY_EXPECT_CODE && r->integer <= 0));
  if (r->type == REDIS_REPLY_INTEGER && expect == REPLY_EXPECT_CODE)
    FUZZ_CHECK(v == (r->integer > 0 ? REPLY_YES : REPLY_REFUSED));
  if (r->type == REDIS_REPLY_STATUS && expect == REPLY_EXPECT_OK && bytes_are(r->str, r->len, "OK"))
    FUZZ_CHECK(v == REPLY_YES);
  if (r->type == REDIS_REPLY_INTEGER && expect > 0 && r->integer == expect)
    FUZZ_CHECK(v == REPLY_YES);
}

static void check_info(const redisReply *r) {
  char *copy = malloc(r->len > 0 ? r->len : 1);
  FUZZ_CHECK(copy != NULL);
  memcpy(copy, r->str, r->len);
  info_server_t info;
  int rc = info_parse_server(copy, r->len, &info);
  FUZZ_CHECK(rc == 0 || rc == -1);
  FUZZ_CHECK(info.uptime_s >= -1);
  FUZZ_CHECK(info.run_id[0] == '\0' || strlen(info.run_id) == INFO_RUN_ID_LEN);
  free(copy);
}

/* What a master without scripts answers (direct.h) and what the handshake
 * reads its capabilities from (caps.h). */
static void check_direct(const redisReply *r) {
  for (int tx = DIRECT_TX_NONE; tx <= DIRECT_TX_FENCE_COMMIT; tx++) {
    int64_t n = 0x5A5A5A5A;
    reply_verdict_t v = direct_tx_classify(tx, r, &n);
    FUZZ_CHECK(v == REPLY_YES || v == REPLY_REFUSED || v == REPLY_ERROR || v == REPLY_UNEXPECTED);
    FUZZ_CHECK(v == REPLY_YES ? n > 0 && n <= ((int64_t)1 << 53) : n == 0);
    if (v == REPLY_YES || v == REPLY_REFUSED)
      FUZZ_CHECK(r->type == REDIS_REPLY_ARRAY && tx != DIRECT_TX_NONE);
    if (v == REPLY_YES && tx == DIRECT_TX_FENCE_COMMIT)
      FUZZ_CHECK(n == 1);
    FUZZ_CHECK((v == REPLY_ERROR) == (direct_tx_error(r) != NULL) || tx == DIRECT_TX_NONE);
  }
  unsigned caps = caps_from_command_info(r);
  FUZZ_CHECK((caps & ~(unsigned)CAPS_RELEASE) == 0);
  if (caps != 0)
    FUZZ_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
  if (r->type == REDIS_REPLY_ERROR) {
    int none = caps_no_scripts_error(r->str, r->len);
    FUZZ_CHECK(none == 0 || none == 1);
  }
}

static void check_reply(const redisReply *r) {
  FUZZ_CHECK(r != NULL);
  check_classify(r, REPLY_EXPECT_OK);
  check_classify(r, REPLY_EXPECT_POSITIVE);
  check_classify(r, REPLY_EXPECT_CODE);
  check_classify(r, 1);
  check_classify(r, 3);

  int noscript = reply_is_noscript(r);
  FUZZ_CHECK(noscript == 0 || noscript == 1);
  FUZZ_CHECK(noscript ==
             (r->type == REDIS_REPLY_ERROR && r->len >= 8 && memcmp(r->str, "NOSCRIPT", 8) == 0));

  const char *channel = NULL;
  size_t channel_len = (size_t)-1;
  pubsub_kind_t kind = reply_pubsub(r, &channel, &channel_len);
  FUZZ_CHECK(kind == PUBSUB_OTHER || kind == PUBSUB_MESSAGE || kind == PUBSUB_SUBSCRIBE ||
             kind == PUBSUB_UNSUBSCRIBE || kind == PUBSUB_SSUBSCRIBE ||
             kind == PUBSUB_SUNSUBSCRIBE);
  if (kind == PUBSUB_OTHER) {
    FUZZ_CHECK(channel == NULL && channel_len == (size_t)-1);
  } else {
    /* "smessage" (a shard channel's message) is a PUBSUB_MESSAGE too. */
    static const char *const names[] = {NULL,          "message",    "subscribe",
                                        "unsubscribe", "ssubscribe", "sunsubscribe"};
    FUZZ_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements >= 3);
    const redisReply *k = r->element[0], *name = r->element[1];
    FUZZ_CHECK(k->type == REDIS_REPLY_STRING &&
               (bytes_are(k->str, k->len, names[kind]) ||
                (kind == PUBSUB_MESSAGE && bytes_are(k->str, k->len, "smessage"))));
    FUZZ_CHECK(name->type == REDIS_REPLY_STRING);
    FUZZ_CHECK(channel == name->str && channel_len == name->len);
  }
  const char *payload = NULL;
  size_t payload_len = (size_t)-1;
  int has_payload = reply_pubsub_payload(r, &payload, &payload_len);
  FUZZ_CHECK(has_payload == 0 || has_payload == 1);
  if (has_payload) {
    FUZZ_CHECK(kind == PUBSUB_MESSAGE && r->element[2] != NULL &&
               r->element[2]->type == REDIS_REPLY_STRING);
    FUZZ_CHECK(payload == r->element[2]->str && payload_len == r->element[2]->len);
  } else {
    FUZZ_CHECK(payload == NULL && payload_len == (size_t)-1);
  }

  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
      r->type == REDIS_REPLY_ERROR)
    check_info(r);
  check_direct(r);
}

int fuzz_one_reply(const uint8_t *data, size_t size) {
  redisReader *reader = fuzz_reader_create();
  size_t split = size > 0 ? data[0] % (size + 1) : 0;
  int rc = redisReaderFeed(reader, (const char *)data, split);
  FUZZ_CHECK(rc == REDIS_OK);
  int fed_all = 0;
  for (int replies = 0; replies < 100000; replies++) {
    void *obj = NULL;
    if (redisReaderGetReply(reader, &obj) != REDIS_OK) {
      FUZZ_CHECK(obj == NULL && reader->err != 0);
      break;
    }
    if (obj == NULL) {
      if (fed_all)
        break;
      fed_all = 1;
      FUZZ_CHECK(redisReaderFeed(reader, (const char *)data + split, size - split) == REDIS_OK);
      continue;
    }
    redisReply *r = obj;
    check_reply(r);
    if (r->type == REDIS_REPLY_ARRAY)
      for (size_t i = 0; i < r->elements; i++)
        check_reply(r->element[i]);
    freeReplyObject(r);
  }
  redisReaderFree(reader);
  return 0;
}
