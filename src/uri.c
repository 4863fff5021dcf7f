/* uri.c: master address parsing (see uri.h). */
#include "uri.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redlock.h"
#include "resolve.h"
#include "status.h"
#include "strutil.h"
#include "tls.h"

static int fail(char *err_msg, size_t err_len, const char *fmt, ...) {
  if (err_msg != NULL && err_len > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, err_len, fmt, ap);
    va_end(ap);
  }
  return REDLOCK_EINVAL;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Copies [s, s+len) decoding %XX escapes.  NULL on a bad escape or an encoded
 * NUL (*nomem == 0), or when out of memory (*nomem == 1). */
static char *percent_decode(const char *s, size_t len, int *nomem) {
  char *out = malloc(len + 1);
  size_t o = 0;
  *nomem = out == NULL;
  if (out == NULL)
    return NULL;
  for (size_t i = 0; i < len; i++) {
    if (s[i] != '%') {
      out[o++] = s[i];
      continue;
    }
    int hi = i + 2 < len ? hex_digit(s[i + 1]) : -1;
    int lo = i + 2 < len ? hex_digit(s[i + 2]) : -1;
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
      free(out);
      return NULL;
    }
    out[o++] = (char)(hi * 16 + lo);
    i += 2;
  }
  out[o] = '\0';
  return out;
}

/* Parses a decimal in [min, max] from [s, s+len): ST_OK, or ST_EINVAL. */
static status_t parse_uint(const char *s, size_t len, long min, long max, long *out) {
  long v = 0;
  if (len == 0 || len > 9)
    return ST_EINVAL;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return ST_EINVAL;
    v = v * 10 + (s[i] - '0');
  }
  if (v < min || v > max)
    return ST_EINVAL;
  *out = v;
  return ST_OK;
}

static int parse_unix(const char *rest, node_addr_t *out, char *err_msg, size_t err_len) {
  size_t len = strlen(rest);
  if (len == 0 || rest[0] != '/')
    return fail(err_msg, err_len, "unix:// needs an absolute path (unix:///path/to/sock)");
  if (len >= 108)
    return fail(err_msg, err_len, "unix socket path is longer than 107 bytes");
  out->kind = NODE_ADDR_UNIX;
  out->path = str_dup(rest);
  out->label = str_dup(rest);
  if (out->path == NULL || out->label == NULL)
    return REDLOCK_ENOMEM;
  return 0;
}

static int parse_userinfo(const char *s, size_t len, node_addr_t *out, char *err_msg,
                          size_t err_len) {
  const char *colon = memchr(s, ':', len);
  int nomem = 0;
  if (colon == NULL)
    return fail(err_msg, err_len,
                "credentials need a ':' (redis://:password@host or redis://user:password@host)");
  size_t user_len = (size_t)(colon - s);
  size_t pass_len = len - user_len - 1;
  if (pass_len == 0)
    return fail(err_msg, err_len, "empty password in URI");
  if (user_len > 0) {
    out->user = percent_decode(s, user_len, &nomem);
    if (out->user == NULL)
      return nomem ? REDLOCK_ENOMEM : fail(err_msg, err_len, "bad %%-escape in user name");
  }
  out->password = percent_decode(colon + 1, pass_len, &nomem);
  if (out->password == NULL)
    return nomem ? REDLOCK_ENOMEM : fail(err_msg, err_len, "bad %%-escape in password");
  return 0;
}

static int parse_tcp(const char *rest, node_addr_t *out, char *err_msg, size_t err_len) {
  const char *end = rest + strlen(rest);
  const char *slash = strchr(rest, '/');
  const char *authority_end = slash != NULL ? slash : end;
  const char *at = NULL;
  for (const char *p = rest; p < authority_end; p++)
    if (*p == '@')
      at = p; /* the last '@': a password may contain one only escaped, but be lenient */
  const char *host_start = rest;
  int rc;

  if (at != NULL) {
    rc = parse_userinfo(rest, (size_t)(at - rest), out, err_msg, err_len);
    if (rc != 0)
      return rc;
    host_start = at + 1;
  }

  const char *host_end;
  const char *port_start = NULL;
  if (*host_start == '[') {
    const char *close = memchr(host_start, ']', (size_t)(authority_end - host_start));
    if (close == NULL)
      return fail(err_msg, err_len, "unterminated '[' in IPv6 host");
    host_end = close;
    host_start++;
    if (close + 1 < authority_end) {
      if (close[1] != ':')
        return fail(err_msg, err_len, "unexpected text after ']'");
      port_start = close + 2;
    }
  } else {
    const char *colon = memchr(host_start, ':', (size_t)(authority_end - host_start));
    host_end = colon != NULL ? colon : authority_end;
    if (colon != NULL)
      port_start = colon + 1;
  }
  if (host_end == host_start)
    return fail(err_msg, err_len, "missing host in URI");
  for (const char *p = host_start; p < host_end; p++) {
    unsigned char c = (unsigned char)*p;
    if (c <= ' ' || c == '@' || c == '[' || c == ']' || c == '/' || c == '?' || c == '#' ||
        c >= 0x7f)
      return fail(err_msg, err_len, "invalid character in host");
  }

  long port = 6379;
  if (port_start != NULL &&
      parse_uint(port_start, (size_t)(authority_end - port_start), 1, 65535, &port) != ST_OK)
    return fail(err_msg, err_len, "port must be a number from 1 to 65535");

  long db = 0;
  if (slash != NULL && slash + 1 < end) {
    if (parse_uint(slash + 1, (size_t)(end - slash - 1), 0, URI_MAX_DB, &db) != ST_OK)
      return fail(err_msg, err_len, "database must be a number from 0 to %d", URI_MAX_DB);
  }

  out->kind = NODE_ADDR_TCP;
  out->host = str_ndup(host_start, (size_t)(host_end - host_start));
  out->port = (int)port;
  out->db = (int)db;
  if (out->host == NULL)
    return REDLOCK_ENOMEM;
  int ipv6 = strchr(out->host, ':') != NULL;
  out->label = str_printf(ipv6 ? "[%s]:%d" : "%s:%d", out->host, out->port);
  if (out->label == NULL)
    return REDLOCK_ENOMEM;
  return 0;
}

int uri_parse(const char *uri, node_addr_t *out, char *err_msg, size_t err_len) {
  int rc;
  if (err_msg != NULL && err_len > 0)
    err_msg[0] = '\0';
  if (uri == NULL || out == NULL)
    return fail(err_msg, err_len, "NULL URI");
  memset(out, 0, sizeof *out);
  size_t len = strnlen(uri, URI_MAX_LEN + 1);
  if (len == 0)
    return fail(err_msg, err_len, "empty URI");
  if (len > URI_MAX_LEN)
    return fail(err_msg, err_len, "URI longer than %d bytes", URI_MAX_LEN);
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)uri[i] < 0x20 || uri[i] == 0x7f)
      return fail(err_msg, err_len, "control character in URI");

  if (strncmp(uri, "redis://", 8) == 0)
    rc = parse_tcp(uri + 8, out, err_msg, err_len);
  else if (strncmp(uri, "unix://", 7) == 0)
    rc = parse_unix(uri + 7, out, err_msg, err_len);
  else if (strncmp(uri, "rediss://", 9) == 0 && tls_unsupported_reason() != NULL) {
    fail(err_msg, err_len, "rediss:// (TLS) is not supported: %s", tls_unsupported_reason());
    rc = REDLOCK_ENOTSUP;
  } else if (strncmp(uri, "rediss://", 9) == 0) {
    rc = parse_tcp(uri + 9, out, err_msg, err_len);
    out->tls = rc == 0;
  } else
    rc = fail(err_msg, err_len, "URI must start with redis://, rediss:// or unix://");
  if (rc != 0)
    node_addr_clear(out);
  return rc;
}

int node_addr_copy(node_addr_t *dst, const node_addr_t *src) {
  memset(dst, 0, sizeof *dst);
  dst->kind = src->kind;
  dst->port = src->port;
  dst->db = src->db;
  dst->tls = src->tls;
  if ((src->host && !(dst->host = str_dup(src->host))) ||
      (src->path && !(dst->path = str_dup(src->path))) ||
      (src->user && !(dst->user = str_dup(src->user))) ||
      (src->password && !(dst->password = str_dup(src->password))) ||
      (src->label && !(dst->label = str_dup(src->label)))) {
    node_addr_clear(dst);
    return REDLOCK_ENOMEM;
  }
  return 0;
}

void node_addr_clear(node_addr_t *addr) {
  free(addr->host);
  free(addr->path);
  free(addr->user);
  if (addr->password != NULL) {
    memset(addr->password, 0, strlen(addr->password));
    free(addr->password);
  }
  free(addr->label);
  memset(addr, 0, sizeof *addr);
}

int node_addr_same_master(const node_addr_t *a, const node_addr_t *b) {
  if (a->kind != b->kind)
    return 0;
  if (a->kind == NODE_ADDR_UNIX)
    return strcmp(a->path, b->path) == 0;
  if (a->port != b->port)
    return 0;
  /* Numbers are compared as addresses, in the forms the lookup takes as
   * numbers (127.1 and 2130706433 are 127.0.0.1, ::ffff:127.0.0.1 too);
   * names by their letters, without a lookup. */
  resolve_key_t ka, kb;
  int a_numeric = resolve_key(a->host, 1, &ka) == ST_OK;
  int b_numeric = resolve_key(b->host, 1, &kb) == ST_OK;
  if (a_numeric || b_numeric)
    return a_numeric && b_numeric && resolve_key_equal(&ka, &kb);
  return strcasecmp(a->host, b->host) == 0;
}
