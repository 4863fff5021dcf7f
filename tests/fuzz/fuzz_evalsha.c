/* fuzz_evalsha.c: fuzz target for script_evalsha_to_eval() (src/proto/scripts.c),
 * the rewrite of a formatted EVALSHA command into EVAL with the script body,
 * used when a master answers NOSCRIPT.  For every script of script_get():
 *
 * Raw mode: the input bytes (copied into a malloc of exactly their length) are
 * the command.
 *  - it is accepted exactly when it is "*<line>\n" followed by
 *    "$7\r\nEVALSHA\r\n$40\r\n<the script's sha1>\r\n";
 *  - when accepted, the output is the same first line, "$4\r\nEVAL\r\n$<n>\r\n",
 *    the n bytes of the body, "\r\n", then the input's remaining bytes;
 *  - when the input is, for hiredis's RESP reader, exactly one array whose
 *    first element is the bulk string "EVALSHA", the output is exactly one
 *    array of as many elements: "EVAL", the script body, then the input's
 *    other elements, byte for byte.
 * Structured mode: the input is split at NUL bytes into up to 32 arguments;
 * redisFormatCommandArgv("EVALSHA", sha1, args...) must be accepted and give
 * byte for byte redisFormatCommandArgv("EVAL", body, args...), and must be
 * refused for every other script (another sha1). */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "fuzz_targets.h"
#include "proto/scripts.h"

#define MAX_ARGS 32

static const char evalsha_prefix[] = "$7\r\nEVALSHA\r\n$40\r\n";

/* Parses buf as RESP: returns the reply when buf is exactly one complete array
 * reply (no bytes left over), NULL otherwise. */
static redisReply *parse_one_array(const char *buf, size_t len) {
  redisReader *reader = fuzz_reader_create();
  void *obj = NULL;
  if (redisReaderFeed(reader, buf, len) != REDIS_OK ||
      redisReaderGetReply(reader, &obj) != REDIS_OK || obj == NULL) {
    redisReaderFree(reader);
    return NULL;
  }
  redisReply *r = obj;
  if (r->type != REDIS_REPLY_ARRAY || reader->pos != reader->len) {
    freeReplyObject(r);
    r = NULL;
  }
  redisReaderFree(reader);
  return r;
}

static int same_reply(const redisReply *a, const redisReply *b) {
  if (a->type != b->type)
    return 0;
  switch (a->type) {
  case REDIS_REPLY_INTEGER:
    return a->integer == b->integer;
  case REDIS_REPLY_NIL:
    return 1;
  case REDIS_REPLY_ARRAY:
    if (a->elements != b->elements)
      return 0;
    for (size_t i = 0; i < a->elements; i++)
      if (!same_reply(a->element[i], b->element[i]))
        return 0;
    return 1;
  default:
    return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
  }
}

static int has_form(const char *cmd, size_t len, const script_t *s, size_t *header_len) {
  if (len < 4 || cmd[0] != '*')
    return 0;
  const char *nl = memchr(cmd, '\n', len);
  if (nl == NULL)
    return 0;
  size_t h = (size_t)(nl + 1 - cmd), p = sizeof evalsha_prefix - 1;
  if (len - h < p + 42 || memcmp(cmd + h, evalsha_prefix, p) != 0 ||
      memcmp(cmd + h + p, s->sha1, 40) != 0 || memcmp(cmd + h + p + 40, "\r\n", 2) != 0)
    return 0;
  *header_len = h;
  return 1;
}

static void check_raw(const char *cmd, size_t len, const script_t *s) {
  char *out = NULL;
  size_t out_len = 0, h = 0;
  status_t rc = script_evalsha_to_eval(cmd, len, s, &out, &out_len);
  FUZZ_CHECK(rc == ST_OK || rc == ST_EINVAL); /* (no allocation fails here) */
  int form = has_form(cmd, len, s, &h);
  FUZZ_CHECK((rc == ST_OK) == form);
  if (rc != ST_OK)
    return;

  char mid[64];
  int mid_len = snprintf(mid, sizeof mid, "$4\r\nEVAL\r\n$%zu\r\n", s->body_len);
  size_t tail_off = h + sizeof evalsha_prefix - 1 + 42, tail_len = len - tail_off;
  FUZZ_CHECK(out != NULL && out_len == h + (size_t)mid_len + s->body_len + 2 + tail_len);
  FUZZ_CHECK(memcmp(out, cmd, h) == 0);
  FUZZ_CHECK(memcmp(out + h, mid, (size_t)mid_len) == 0);
  FUZZ_CHECK(memcmp(out + h + mid_len, s->body, s->body_len) == 0);
  FUZZ_CHECK(memcmp(out + h + mid_len + s->body_len, "\r\n", 2) == 0);
  FUZZ_CHECK(memcmp(out + out_len - tail_len, cmd + tail_off, tail_len) == 0);

  redisReply *in = parse_one_array(cmd, len);
  if (in != NULL && in->elements >= 2 && in->element[0]->type == REDIS_REPLY_STRING &&
      in->element[0]->len == 7 && memcmp(in->element[0]->str, "EVALSHA", 7) == 0) {
    redisReply *o = parse_one_array(out, out_len);
    FUZZ_CHECK(o != NULL && o->elements == in->elements);
    FUZZ_CHECK(o->element[0]->type == REDIS_REPLY_STRING && o->element[0]->len == 4 &&
               memcmp(o->element[0]->str, "EVAL", 4) == 0);
    FUZZ_CHECK(o->element[1]->type == REDIS_REPLY_STRING && o->element[1]->len == s->body_len &&
               memcmp(o->element[1]->str, s->body, s->body_len) == 0);
    for (size_t i = 2; i < in->elements; i++)
      FUZZ_CHECK(same_reply(in->element[i], o->element[i]));
    freeReplyObject(o);
  }
  if (in != NULL)
    freeReplyObject(in);
  free(out);
}

static void check_structured(const uint8_t *data, size_t size) {
  const char *argv[MAX_ARGS + 2];
  size_t argvlen[MAX_ARGS + 2];
  int argc = 2;
  size_t start = 0;
  for (size_t i = 0; i <= size && argc < MAX_ARGS + 2; i++) {
    if (i == size || data[i] == 0) {
      argv[argc] = (const char *)data + start;
      argvlen[argc++] = i - start;
      start = i + 1;
    }
  }
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *s = script_get((script_id_t)id);
    char *evalsha = NULL, *eval = NULL, *out = NULL;
    size_t out_len = 0;
    argv[0] = "EVALSHA", argvlen[0] = 7;
    argv[1] = s->sha1, argvlen[1] = 40;
    int evalsha_len = redisFormatCommandArgv(&evalsha, argc, argv, argvlen);
    argv[0] = "EVAL", argvlen[0] = 4;
    argv[1] = s->body, argvlen[1] = s->body_len;
    int eval_len = redisFormatCommandArgv(&eval, argc, argv, argvlen);
    FUZZ_CHECK(evalsha_len > 0 && eval_len > 0);

    FUZZ_CHECK(script_evalsha_to_eval(evalsha, (size_t)evalsha_len, s, &out, &out_len) == ST_OK);
    FUZZ_CHECK(out_len == (size_t)eval_len && memcmp(out, eval, out_len) == 0);
    free(out);
    for (int other = 0; other < SCRIPT_COUNT; other++) {
      if (other == id)
        continue;
      out = NULL;
      FUZZ_CHECK(script_evalsha_to_eval(evalsha, (size_t)evalsha_len,
                                        script_get((script_id_t)other), &out,
                                        &out_len) == ST_EINVAL);
      FUZZ_CHECK(out == NULL);
    }
    free(evalsha);
    free(eval);
  }
}

int fuzz_one_evalsha(const uint8_t *data, size_t size) {
  char *copy = fuzz_copy(data, size);
  const char *cmd = copy;
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *s = script_get((script_id_t)id);
    FUZZ_CHECK(s != NULL && s->body != NULL && s->sha1 != NULL && strlen(s->sha1) == 40);
    check_raw(cmd, size, s);
  }
  FUZZ_CHECK(script_get(SCRIPT_COUNT) == NULL);
  free(copy);
  check_structured(data, size);
  return 0;
}
