/* sentinel_reply.c: reading what Redis Sentinel answers (see sentinel_reply.h). */
#include "proto/sentinel_reply.h"
#include "util/strutil.h"

#include <stdio.h>
#include <string.h>

/* A host as a sentinel gives it: 1..SENTINEL_HOST_LEN-1 bytes, printable,
 * no space (it goes into logs and into the connection's address). */
static int host_ok(const char *s, size_t len) { return str_host_ok(s, len, SENTINEL_HOST_LEN); }

/* An IPv6 address may come bracketed ("[::1]", as a host announces itself
 * in a URI's form): the brackets are not part of the address, which is
 * connected to without them and bracketed once when shown with its port. */
static void unbracket(const char **s, size_t *len) {
  if (*len >= 4 && (*s)[0] == '[' && (*s)[*len - 1] == ']' && memchr(*s + 1, ':', *len - 2)) {
    (*s)++;
    *len -= 2;
  }
}

/* Copies a host given as [s, s+len) into host (SENTINEL_HOST_LEN bytes),
 * unbracketed; 0 when it is not usable. */
static int take_host(char *host, const char *s, size_t len) {
  unbracket(&s, &len);
  if (!host_ok(s, len))
    return 0;
  memcpy(host, s, len);
  host[len] = '\0';
  return 1;
}

/* Copies len bytes of s into why, non-printable bytes as '?'. */
static void printable(const char *s, size_t len, char *why, size_t size) {
  if (size == 0)
    return;
  size_t n = len < size - 1 ? len : size - 1;
  for (size_t i = 0; i < n; i++)
    why[i] = (unsigned char)s[i] < ' ' || (unsigned char)s[i] >= 0x7f ? '?' : s[i];
  why[n] = '\0';
}

static int is_string(const redisReply *r) {
  return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

sentinel_addr_t sentinel_parse_addr(const redisReply *reply, char *host, int *port, char *why,
                                    size_t why_size) {
  if (reply == NULL) {
    snprintf(why, why_size, "no reply");
    return SENTINEL_ADDR_BAD;
  }
  if (reply->type == REDIS_REPLY_NIL)
    return SENTINEL_ADDR_UNKNOWN;
  if (reply->type == REDIS_REPLY_ERROR) {
    printable(reply->str, reply->len, why, why_size);
    return SENTINEL_ADDR_BAD;
  }
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 || !is_string(reply->element[0]) ||
      !is_string(reply->element[1])) {
    snprintf(why, why_size, "an answer that is not [ip, port]");
    return SENTINEL_ADDR_BAD;
  }
  const redisReply *h = reply->element[0], *p = reply->element[1];
  int v = 0;
  if (str_port(p->str, p->len, &v) != ST_OK || !take_host(host, h->str, h->len)) {
    char shown[64];
    printable(h->str, h->len < 48 ? h->len : 48, shown, sizeof shown);
    snprintf(why, why_size, "an unusable address '%s' port '%.*s'", shown,
             (int)(p->len < 8 ? p->len : 8), p->str);
    return SENTINEL_ADDR_BAD;
  }
  *port = v;
  return SENTINEL_ADDR_KNOWN;
}

/* 1 when the space-separated flags hold `flag`. */
static int has_flag(const char *flags, size_t len, const char *flag) {
  size_t fl = strlen(flag);
  for (size_t i = 0; i < len;) {
    size_t j = i;
    while (j < len && flags[j] != ',')
      j++;
    if (j - i == fl && memcmp(flags + i, flag, fl) == 0)
      return 1;
    i = j + 1;
  }
  return 0;
}

/* A decimal of up to 18 digits; -1 otherwise. */
static int64_t u64_of(const char *s, size_t len) {
  int64_t v = 0;
  if (len == 0 || len > 18)
    return -1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

static int field_is(const redisReply *k, const char *name) {
  return strlen(name) == k->len && memcmp(k->str, name, k->len) == 0;
}

status_t sentinel_parse_master(const redisReply *reply, sentinel_master_t *out) {
  memset(out, 0, sizeof *out);
  if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0)
    return ST_EINVAL;
  int have_ip = 0, have_port = 0, have_age = 0, flags_ok = 0, role_master = 0;
  for (size_t i = 0; i + 1 < reply->elements; i += 2) {
    const redisReply *k = reply->element[i], *v = reply->element[i + 1];
    if (!is_string(k) || !is_string(v))
      continue; /* a field of another type: not one we read */
    if (field_is(k, "ip") && take_host(out->ip, v->str, v->len)) {
      have_ip = 1;
    } else if (field_is(k, "port")) {
      have_port = str_port(v->str, v->len, &out->port) == ST_OK;
    } else if (field_is(k, "runid")) {
      if (v->len == INFO_RUN_ID_LEN) {
        memcpy(out->run_id, v->str, v->len);
        out->run_id[v->len] = '\0';
      }
    } else if (field_is(k, "flags")) {
      flags_ok = has_flag(v->str, v->len, "master") && !has_flag(v->str, v->len, "s_down") &&
                 !has_flag(v->str, v->len, "o_down") &&
                 !has_flag(v->str, v->len, "failover_in_progress") &&
                 !has_flag(v->str, v->len, "disconnected");
    } else if (field_is(k, "role-reported")) {
      role_master = v->len == 6 && memcmp(v->str, "master", 6) == 0;
    } else if (field_is(k, "role-reported-time")) {
      int64_t age = u64_of(v->str, v->len);
      have_age = age >= 0;
      out->role_age_ms = have_age ? (uint64_t)age : 0;
    }
  }
  if (!have_ip || !have_port || !have_age) {
    memset(out, 0, sizeof *out);
    return ST_EINVAL;
  }
  out->settled = flags_ok && role_master;
  return ST_OK;
}

/* The next space-separated word of [*s, end): its start and length, or 0
 * when there is none. */
static int next_word(const char **s, const char *end, const char **word, size_t *len) {
  while (*s < end && **s == ' ')
    (*s)++;
  if (*s >= end)
    return 0;
  *word = *s;
  while (*s < end && **s != ' ')
    (*s)++;
  *len = (size_t)(*s - *word);
  return 1;
}

status_t sentinel_parse_switch(const char *payload, size_t len, const char *name, char *host,
                               int *port, int *ours) {
  *ours = 0;
  const char *s = payload, *end = payload + len;
  const char *w[5];
  size_t wl[5];
  for (int i = 0; i < 5; i++)
    if (!next_word(&s, end, &w[i], &wl[i]))
      return ST_EINVAL;
  const char *extra;
  size_t extra_len;
  if (next_word(&s, end, &extra, &extra_len))
    return ST_EINVAL;
  int old_port = 0, new_port = 0;
  char new_host[SENTINEL_HOST_LEN];
  if (!host_ok(w[1], wl[1]) || str_port(w[2], wl[2], &old_port) != ST_OK ||
      !take_host(new_host, w[3], wl[3]) || str_port(w[4], wl[4], &new_port) != ST_OK)
    return ST_EINVAL;
  if (strlen(name) != wl[0] || memcmp(name, w[0], wl[0]) != 0)
    return ST_OK;
  memcpy(host, new_host, strlen(new_host) + 1);
  *port = new_port;
  *ours = 1;
  return ST_OK;
}

void sentinel_host_port(char *buf, size_t size, const char *host, int port) {
  int bracket = host[0] != '[' && strchr(host, ':') != NULL;
  snprintf(buf, size, bracket ? "[%s]:%d" : "%s:%d", host, port);
}
