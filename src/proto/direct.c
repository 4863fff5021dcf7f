/* direct.c: the EXEC replies of script-free fenced locks (see direct.h).
 * Reads untrusted replies: every element's type and bounds are checked. */
#include "proto/direct.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/status.h"

/* Tokens stay below 2^53, where a sorted set's score (a double) is exact. */
#define TOKEN_MAX ((int64_t)1 << 53)

/* A decimal counter (GET) or score (ZSCORE) string, in [0, TOKEN_MAX); a
 * nil is 0.  ST_OK or ST_EINVAL. */
static status_t read_number(const redisReply *r, int64_t *out) {
  *out = 0;
  if (r->type == REDIS_REPLY_NIL)
    return ST_OK;
  if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 32)
    return ST_EINVAL;
  char buf[33];
  memcpy(buf, r->str, r->len);
  buf[r->len] = '\0';
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0 || v >= (double)TOKEN_MAX)
    return ST_EINVAL;
  *out = (int64_t)v;
  return ST_OK;
}

/* TIME's [seconds, microseconds] in microseconds; ST_OK or ST_EINVAL. */
static status_t read_time(const redisReply *r, int64_t *us) {
  int64_t s, u;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || read_number(r->element[0], &s) != ST_OK ||
      read_number(r->element[1], &u) != ST_OK || u >= 1000000 || s >= TOKEN_MAX / 1000000)
    return ST_EINVAL;
  *us = s * 1000000 + u;
  return ST_OK;
}

static int is_ok(const redisReply *r) {
  return r->type == REDIS_REPLY_STATUS && r->len == 2 && memcmp(r->str, "OK", 2) == 0;
}

const char *direct_tx_error(const redisReply *exec) {
  if (exec->type == REDIS_REPLY_ERROR)
    return exec->str;
  if (exec->type != REDIS_REPLY_ARRAY)
    return NULL;
  for (size_t i = 0; i < exec->elements; i++)
    if (exec->element[i] != NULL && exec->element[i]->type == REDIS_REPLY_ERROR)
      return exec->element[i]->str;
  return NULL;
}

static reply_verdict_t acquire(const redisReply *exec, int64_t *integer) {
  if (exec->elements != 4)
    return REPLY_UNEXPECTED;
  const redisReply *set = exec->element[0];
  if (set->type == REDIS_REPLY_NIL)
    return REPLY_REFUSED;
  int64_t counter, floor, now;
  if (!is_ok(set) || read_number(exec->element[1], &counter) != ST_OK ||
      read_number(exec->element[2], &floor) != ST_OK || read_time(exec->element[3], &now) != ST_OK)
    return REPLY_UNEXPECTED;
  int64_t token = now;
  if (counter + 1 > token)
    token = counter + 1;
  if (floor + 1 > token)
    token = floor + 1;
  *integer = token;
  return REPLY_YES;
}

static reply_verdict_t commit(const redisReply *exec, int64_t *integer) {
  if (exec->elements != 2 || exec->element[0]->type != REDIS_REPLY_INTEGER)
    return REPLY_UNEXPECTED;
  const redisReply *set = exec->element[1];
  if (set->type == REDIS_REPLY_NIL)
    return REPLY_REFUSED;
  if (!is_ok(set))
    return REPLY_UNEXPECTED;
  *integer = 1;
  return REPLY_YES;
}

/* [SET IFEQ, (ZADD,) SET NX]: the first took (extended), else the last
 * (re-installed), else neither (another holds it). */
static reply_verdict_t extend(const redisReply *exec, int64_t *integer) {
  if (exec->elements != 2 && exec->elements != 3)
    return REPLY_UNEXPECTED;
  const redisReply *ifeq = exec->element[0], *nx = exec->element[exec->elements - 1];
  if (exec->elements == 3 && exec->element[1]->type != REDIS_REPLY_INTEGER)
    return REPLY_UNEXPECTED;
  if ((!is_ok(ifeq) && ifeq->type != REDIS_REPLY_NIL) ||
      (!is_ok(nx) && nx->type != REDIS_REPLY_NIL))
    return REPLY_UNEXPECTED;
  if (is_ok(ifeq) && is_ok(nx))
    return REPLY_UNEXPECTED; /* the key cannot be absent right after the SET IFEQ */
  if (is_ok(ifeq) || is_ok(nx)) {
    *integer = is_ok(ifeq) ? 1 : DIRECT_REINSTALLED;
    return REPLY_YES;
  }
  return REPLY_REFUSED;
}

reply_verdict_t direct_tx_classify(int tx, const redisReply *exec, int64_t *integer) {
  *integer = 0;
  if (exec->type == REDIS_REPLY_ERROR)
    return REPLY_ERROR;
  if (exec->type != REDIS_REPLY_ARRAY)
    return REPLY_UNEXPECTED;
  for (size_t i = 0; i < exec->elements; i++)
    if (exec->element[i] == NULL)
      return REPLY_UNEXPECTED;
  if (direct_tx_error(exec) != NULL)
    return REPLY_ERROR;
  if (tx == DIRECT_TX_FENCED_ACQUIRE)
    return acquire(exec, integer);
  if (tx == DIRECT_TX_FENCE_COMMIT)
    return commit(exec, integer);
  if (tx == DIRECT_TX_EXTEND)
    return extend(exec, integer);
  return REPLY_UNEXPECTED;
}
