/* uri.c: master address parsing (see uri.h). */
#include "util/uri.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redlock.h"
#include "util/alloc.h"
#include "util/resolve.h"
#include "util/status.h"
#include "util/strutil.h"
#include "util/tls.h"

static status_t fail(char *err_msg, size_t err_len, const char *fmt, ...) {
  if (err_msg != NULL && err_len > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, err_len, fmt, ap);
    va_end(ap);
  }
  return ST_EINVAL;
}

/* 1 with *v when c is a hex digit. */
static int hex_digit(char c, int *v) {
  if (c >= '0' && c <= '9')
    *v = c - '0';
  else if (c >= 'a' && c <= 'f')
    *v = c - 'a' + 10;
  else if (c >= 'A' && c <= 'F')
    *v = c - 'A' + 10;
  else
    return 0;
  return 1;
}

/* *out: a heap copy of [s, s+len) with %XX escapes decoded.  ST_EINVAL on a
 * bad escape or an encoded NUL, ST_ENOMEM; *out is NULL then. */
static status_t percent_decode(const char *s, size_t len, char **out) {
  char *d = rl_malloc(len + 1);
  size_t o = 0;
  *out = NULL;
  if (d == NULL)
    return ST_ENOMEM;
  for (size_t i = 0; i < len; i++) {
    if (s[i] != '%') {
      d[o++] = s[i];
      continue;
    }
    int hi = 0, lo = 0;
    if (i + 2 >= len || !hex_digit(s[i + 1], &hi) || !hex_digit(s[i + 2], &lo) ||
        (hi == 0 && lo == 0)) {
      rl_free(d);
      return ST_EINVAL;
    }
    d[o++] = (char)(hi * 16 + lo);
    i += 2;
  }
  d[o] = '\0';
  *out = d;
  return ST_OK;
}

/* Parses a decimal in [min, max] from [s, s+len). */
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

static status_t parse_unix(const char *rest, node_addr_t *out, char *err_msg, size_t err_len) {
  size_t len = strlen(rest);
  if (len == 0 || rest[0] != '/')
    return fail(err_msg, err_len, "unix:// needs an absolute path (unix:///path/to/sock)");
  if (len >= 108)
    return fail(err_msg, err_len, "unix socket path is longer than 107 bytes");
  out->kind = NODE_ADDR_UNIX;
  out->path = str_dup(rest);
  out->label = str_dup(rest);
  if (out->path == NULL || out->label == NULL)
    return ST_ENOMEM;
  return ST_OK;
}

static status_t parse_userinfo(const char *s, size_t len, node_addr_t *out, char *err_msg,
                               size_t err_len) {
  const char *colon = memchr(s, ':', len);
  if (colon == NULL)
    return fail(err_msg, err_len,
                "credentials need a ':' (redis://:password@host or redis://user:password@host)");
  size_t user_len = (size_t)(colon - s);
  size_t pass_len = len - user_len - 1;
  if (pass_len == 0)
    return fail(err_msg, err_len, "empty password in URI");
  if (user_len > 0) {
    status_t st = percent_decode(s, user_len, &out->user);
    if (st != ST_OK)
      return st == ST_ENOMEM ? st : fail(err_msg, err_len, "bad %%-escape in user name");
  }
  status_t st = percent_decode(colon + 1, pass_len, &out->password);
  if (st != ST_OK)
    return st == ST_ENOMEM ? st : fail(err_msg, err_len, "bad %%-escape in password");
  return ST_OK;
}

/* host[:port] or [v6][:port] in [s, end): *host is a heap copy. */
static status_t parse_hostport(const char *s, const char *end, int default_port, char **host,
                               int *port, char *err_msg, size_t err_len) {
  const char *host_start = s;
  const char *host_end;
  const char *port_start = NULL;
  if (*host_start == '[') {
    const char *close = memchr(host_start, ']', (size_t)(end - host_start));
    if (close == NULL)
      return fail(err_msg, err_len, "unterminated '[' in IPv6 host");
    host_end = close;
    host_start++;
    if (close + 1 < end) {
      if (close[1] != ':')
        return fail(err_msg, err_len, "unexpected text after ']'");
      port_start = close + 2;
    }
  } else {
    const char *colon = memchr(host_start, ':', (size_t)(end - host_start));
    host_end = colon != NULL ? colon : end;
    if (colon != NULL)
      port_start = colon + 1;
  }
  if (host_end == host_start)
    return fail(err_msg, err_len, "missing host in URI");
  for (const char *p = host_start; p < host_end; p++) {
    unsigned char c = (unsigned char)*p;
    if (c <= ' ' || c == '@' || c == '[' || c == ']' || c == '/' || c == '?' || c == '#' ||
        c == ',' || c >= 0x7f)
      return fail(err_msg, err_len, "invalid character in host");
  }
  long v = default_port;
  if (port_start != NULL &&
      parse_uint(port_start, (size_t)(end - port_start), 1, 65535, &v) != ST_OK)
    return fail(err_msg, err_len, "port must be a number from 1 to 65535");
  *host = str_ndup(host_start, (size_t)(host_end - host_start));
  *port = (int)v;
  return *host == NULL ? ST_ENOMEM : ST_OK;
}

static char *host_label(const char *prefix, const char *host, int port) {
  int ipv6 = strchr(host, ':') != NULL;
  return str_printf(ipv6 ? "%s[%s]:%d" : "%s%s:%d", prefix, host, port);
}

/* The parts of [userinfo@]HOSTS[/PATH] (the body of a TCP, sentinel or
 * cluster URI, which ends at end). */
typedef struct {
  const char *hosts, *hosts_end; /* after the userinfo, up to the path */
  const char *path;              /* the '/' that starts it, or NULL */
} uri_authority_t;

/* Splits the body at its path and parses the userinfo into out: the last
 * '@' before the path ends it (a password may contain one only escaped, but
 * be lenient). */
static status_t parse_authority(const char *rest, const char *end, node_addr_t *out,
                                uri_authority_t *a, char *err_msg, size_t err_len) {
  a->path = memchr(rest, '/', (size_t)(end - rest));
  a->hosts_end = a->path != NULL ? a->path : end;
  const char *at = NULL;
  for (const char *p = rest; p < a->hosts_end; p++)
    if (*p == '@')
      at = p;
  a->hosts = at != NULL ? at + 1 : rest;
  return at != NULL ? parse_userinfo(rest, (size_t)(at - rest), out, err_msg, err_len) : ST_OK;
}

static status_t parse_tcp(const char *rest, const char *end, node_addr_t *out, char *err_msg,
                          size_t err_len) {
  uri_authority_t a;
  status_t rc = parse_authority(rest, end, out, &a, err_msg, err_len);
  if (rc != ST_OK)
    return rc;
  long db = 0;
  if (a.path != NULL && a.path + 1 < end) {
    if (parse_uint(a.path + 1, (size_t)(end - a.path - 1), 0, URI_MAX_DB, &db) != ST_OK)
      return fail(err_msg, err_len, "database must be a number from 0 to %d", URI_MAX_DB);
  }
  out->kind = NODE_ADDR_TCP;
  out->db = (int)db;
  rc = parse_hostport(a.hosts, a.hosts_end, URI_REDIS_PORT, &out->host, &out->port, err_msg,
                      err_len);
  if (rc != ST_OK)
    return rc;
  out->label = host_label("", out->host, out->port);
  return out->label == NULL ? ST_ENOMEM : ST_OK;
}

/* The HOST:PORT,... list of a sentinel or cluster URI. */
static status_t parse_seeds(const char *s, const char *end, int default_port, node_addr_t *out,
                            char *err_msg, size_t err_len) {
  unsigned n = 1;
  for (const char *p = s; p < end; p++)
    n += *p == ',';
  if (n > URI_MAX_SEEDS)
    return fail(err_msg, err_len, "more than %d hosts in URI", URI_MAX_SEEDS);
  out->seeds = rl_calloc(n, sizeof *out->seeds);
  if (out->seeds == NULL)
    return ST_ENOMEM;
  while (out->n_seeds < n) {
    const char *comma = memchr(s, ',', (size_t)(end - s));
    const char *item_end = comma != NULL ? comma : end;
    uri_seed_t *seed = &out->seeds[out->n_seeds];
    status_t rc =
        parse_hostport(s, item_end, default_port, &seed->host, &seed->port, err_msg, err_len);
    if (rc != ST_OK)
      return rc;
    out->n_seeds++;
    s = item_end + 1;
  }
  out->kind = NODE_ADDR_TCP;
  out->port = out->seeds[0].port;
  out->host = str_dup(out->seeds[0].host);
  return out->host == NULL ? ST_ENOMEM : ST_OK;
}

/* redis-sentinel://...@HOSTS/MASTER-NAME[/DB] and redis-cluster://...@HOSTS */
static status_t parse_group(const char *rest, const char *end, node_addr_t *out, char *err_msg,
                            size_t err_len) {
  int sentinel = out->voter == VOTER_KIND_SENTINEL;
  uri_authority_t a;
  status_t rc = parse_authority(rest, end, out, &a, err_msg, err_len);
  if (rc != ST_OK)
    return rc;
  rc = parse_seeds(a.hosts, a.hosts_end, sentinel ? URI_SENTINEL_PORT : URI_REDIS_PORT, out,
                   err_msg, err_len);
  if (rc != ST_OK)
    return rc;
  if (!sentinel) {
    if (a.path != NULL && a.path + 1 < end)
      return fail(err_msg, err_len, "a cluster URI has no path (a cluster has only database 0)");
    out->label = host_label("cluster@", out->host, out->port);
    return out->label == NULL ? ST_ENOMEM : ST_OK;
  }
  const char *name = a.path != NULL ? a.path + 1 : end;
  const char *name_end = memchr(name, '/', (size_t)(end - name));
  if (name_end == NULL)
    name_end = end;
  if (name_end == name)
    return fail(err_msg, err_len, "a sentinel URI needs the master's name: .../MASTER-NAME");
  status_t st = percent_decode(name, (size_t)(name_end - name), &out->master_name);
  if (st != ST_OK)
    return st == ST_ENOMEM ? st : fail(err_msg, err_len, "bad %%-escape in master name");
  for (const char *p = out->master_name; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == 0x7f)
      return fail(err_msg, err_len, "master name has a space or control character");
  long db = 0;
  if (name_end < end &&
      parse_uint(name_end + 1, (size_t)(end - name_end - 1), 0, URI_MAX_DB, &db) != ST_OK)
    return fail(err_msg, err_len, "database must be a number from 0 to %d", URI_MAX_DB);
  out->db = (int)db;
  char *at_host = host_label("@", out->host, out->port);
  out->label = at_host != NULL ? str_printf("%s%s", out->master_name, at_host) : NULL;
  rl_free(at_host);
  return out->label == NULL ? ST_ENOMEM : ST_OK;
}

/* One "name=value" of PARAMS. */
static status_t parse_param(const char *s, size_t len, node_addr_t *out, unsigned *seen,
                            char *err_msg, size_t err_len) {
  enum { P_WAIT = 1, P_WAITAOF = 2, P_WAIT_MS = 4, P_S_USER = 8, P_S_PASS = 16 };
  static const struct {
    const char *name;
    unsigned bit;
  } names[] = {{"wait", P_WAIT},
               {"waitaof", P_WAITAOF},
               {"wait_ms", P_WAIT_MS},
               {"sentinel_user", P_S_USER},
               {"sentinel_password", P_S_PASS}};
  const char *eq = memchr(s, '=', len);
  size_t name_len = eq != NULL ? (size_t)(eq - s) : len;
  unsigned bit = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strlen(names[i].name) == name_len && memcmp(names[i].name, s, name_len) == 0)
      bit = names[i].bit;
  /* The name is not echoed: in a URI whose password holds an unescaped '/'
   * or '?', what reads as a parameter is part of the password. */
  if (bit == 0)
    return fail(err_msg, err_len,
                "unknown URI parameter (known: wait, waitaof, wait_ms, sentinel_user, "
                "sentinel_password)");
  if (eq == NULL || eq + 1 == s + len)
    return fail(err_msg, err_len, "URI parameter %.*s needs a value", (int)name_len, s);
  if (*seen & bit)
    return fail(err_msg, err_len, "URI parameter %.*s given twice", (int)name_len, s);
  *seen |= bit;
  const char *v = eq + 1;
  size_t vlen = len - name_len - 1;
  long a, b;
  if (bit == P_WAIT) {
    if (parse_uint(v, vlen, 1, URI_MAX_ACK_REPLICAS, &a) != ST_OK)
      return fail(err_msg, err_len, "wait= must be a number of replicas from 1 to %d",
                  URI_MAX_ACK_REPLICAS);
    out->ack.mode = ACK_WAIT;
    out->ack.replicas = (int)a;
  } else if (bit == P_WAITAOF) {
    const char *comma = memchr(v, ',', vlen);
    if (comma == NULL || parse_uint(v, (size_t)(comma - v), 0, 1, &a) != ST_OK ||
        parse_uint(comma + 1, vlen - (size_t)(comma - v) - 1, 0, URI_MAX_ACK_REPLICAS, &b) != ST_OK)
      return fail(err_msg, err_len,
                  "waitaof= must be L,R: L local fsyncs (0 or 1), R replicas (0 to %d)",
                  URI_MAX_ACK_REPLICAS);
    if (a == 0 && b == 0)
      return fail(err_msg, err_len, "waitaof=0,0 asks for nothing");
    out->ack.mode = ACK_WAITAOF;
    out->ack.local = (int)a;
    out->ack.replicas = (int)b;
  } else if (bit == P_WAIT_MS) {
    if (parse_uint(v, vlen, 1, URI_MAX_WAIT_MS, &a) != ST_OK)
      return fail(err_msg, err_len, "wait_ms= must be a number of ms from 1 to %u",
                  URI_MAX_WAIT_MS);
    out->ack.timeout_ms = (uint32_t)a;
  } else {
    if (out->voter != VOTER_KIND_SENTINEL)
      return fail(err_msg, err_len, "%.*s= is for redis-sentinel:// URIs only", (int)name_len, s);
    char *d = NULL;
    status_t st = percent_decode(v, vlen, &d);
    if (st != ST_OK)
      return st == ST_ENOMEM ? st
                             : fail(err_msg, err_len, "bad %%-escape in %.*s", (int)name_len, s);
    *(bit == P_S_USER ? &out->sentinel_user : &out->sentinel_password) = d;
  }
  return ST_OK;
}

static status_t parse_params(const char *s, const char *end, node_addr_t *out, char *err_msg,
                             size_t err_len) {
  unsigned seen = 0;
  if (s == end)
    return fail(err_msg, err_len, "empty URI parameters after '?'");
  while (s < end) {
    const char *amp = memchr(s, '&', (size_t)(end - s));
    const char *item_end = amp != NULL ? amp : end;
    if (item_end == s)
      return fail(err_msg, err_len, "empty URI parameter");
    status_t rc = parse_param(s, (size_t)(item_end - s), out, &seen, err_msg, err_len);
    if (rc != ST_OK)
      return rc;
    s = amp != NULL ? amp + 1 : end;
    if (amp != NULL && s == end)
      return fail(err_msg, err_len, "empty URI parameter");
  }
  if ((seen & 3) == 3)
    return fail(err_msg, err_len,
                "wait= and waitaof= exclude each other (waitaof=L,R also waits for R replicas)");
  if ((seen & 4) && !(seen & 3))
    return fail(err_msg, err_len, "wait_ms= needs wait= or waitaof=");
  return ST_OK;
}

void uri_ack_describe(const ack_spec_t *ack, char *buf, size_t size) {
  int n = 0;
  if (ack->mode == ACK_WAIT)
    n = snprintf(buf, size, "wait=%d", ack->replicas);
  else if (ack->mode == ACK_WAITAOF)
    n = snprintf(buf, size, "waitaof=%d,%d", ack->local, ack->replicas);
  else if (size > 0)
    buf[0] = '\0';
  if (n > 0 && (size_t)n < size && ack->timeout_ms != 0)
    snprintf(buf + n, size - (size_t)n, " wait_ms=%u", ack->timeout_ms);
}

/* Each ends in "://", so none is a prefix of another. */
static const uri_scheme_t schemes[] = {
    {"redis://", VOTER_KIND_STANDALONE, 0},         {"rediss://", VOTER_KIND_STANDALONE, 1},
    {"unix://", VOTER_KIND_STANDALONE, 0},          {"redis-sentinel://", VOTER_KIND_SENTINEL, 0},
    {"rediss-sentinel://", VOTER_KIND_SENTINEL, 1}, {"redis-cluster://", VOTER_KIND_CLUSTER, 0},
    {"rediss-cluster://", VOTER_KIND_CLUSTER, 1},
};

const uri_scheme_t *uri_scheme_at(size_t i) {
  return i < sizeof schemes / sizeof schemes[0] ? &schemes[i] : NULL;
}

const uri_scheme_t *uri_scheme_of(const char *uri) {
  for (const uri_scheme_t *s = schemes; s < schemes + sizeof schemes / sizeof schemes[0]; s++)
    if (strncmp(uri, s->scheme, strlen(s->scheme)) == 0)
      return s;
  return NULL;
}

status_t uri_parse(const char *uri, node_addr_t *out, char *err_msg, size_t err_len) {
  status_t rc;
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

  const uri_scheme_t *scheme = uri_scheme_of(uri);
  if (scheme == NULL)
    return fail(err_msg, err_len,
                "URI must start with redis://, rediss://, unix://, redis-sentinel://, "
                "rediss-sentinel://, redis-cluster:// or rediss-cluster://");
  if (scheme->tls && tls_unsupported_reason() != NULL) {
    fail(err_msg, err_len, "%s (TLS) is not supported: %s", scheme->scheme,
         tls_unsupported_reason());
    return ST_ENOTSUP;
  }
  int is_unix = strcmp(scheme->scheme, "unix://") == 0;
  out->voter = scheme->voter;
  const char *rest = uri + strlen(scheme->scheme);
  const char *end = uri + len;
  /* PARAMS start at the first '?' after the credentials (a password may
   * hold one) */
  const char *after_user = rest;
  if (!is_unix) {
    const char *slash = strchr(rest, '/');
    for (const char *p = rest; p < (slash != NULL ? slash : end); p++)
      if (*p == '@')
        after_user = p + 1;
  }
  const char *query = strchr(after_user, '?');
  const char *body_end = query != NULL ? query : end;
  if (is_unix) {
    char *path = str_ndup(rest, (size_t)(body_end - rest));
    rc = path == NULL ? ST_ENOMEM : parse_unix(path, out, err_msg, err_len);
    rl_free(path);
  } else if (scheme->voter == VOTER_KIND_STANDALONE) {
    rc = parse_tcp(rest, body_end, out, err_msg, err_len);
  } else {
    rc = parse_group(rest, body_end, out, err_msg, err_len);
  }
  if (rc == ST_OK && query != NULL)
    rc = parse_params(query + 1, end, out, err_msg, err_len);
  out->tls = scheme->tls;
  if (rc != ST_OK)
    node_addr_clear(out);
  return rc;
}

status_t node_addr_copy(node_addr_t *dst, const node_addr_t *src) {
  memset(dst, 0, sizeof *dst);
  dst->kind = src->kind;
  dst->port = src->port;
  dst->db = src->db;
  dst->tls = src->tls;
  dst->voter = src->voter;
  dst->ack = src->ack;
  if (src->n_seeds > 0) {
    dst->seeds = rl_calloc(src->n_seeds, sizeof *dst->seeds);
    if (dst->seeds == NULL)
      return ST_ENOMEM;
    for (; dst->n_seeds < src->n_seeds; dst->n_seeds++) {
      dst->seeds[dst->n_seeds].port = src->seeds[dst->n_seeds].port;
      if (!(dst->seeds[dst->n_seeds].host = str_dup(src->seeds[dst->n_seeds].host))) {
        node_addr_clear(dst);
        return ST_ENOMEM;
      }
    }
  }
  if ((src->master_name && !(dst->master_name = str_dup(src->master_name))) ||
      (src->sentinel_user && !(dst->sentinel_user = str_dup(src->sentinel_user))) ||
      (src->sentinel_password && !(dst->sentinel_password = str_dup(src->sentinel_password))) ||
      (src->host && !(dst->host = str_dup(src->host))) ||
      (src->path && !(dst->path = str_dup(src->path))) ||
      (src->user && !(dst->user = str_dup(src->user))) ||
      (src->password && !(dst->password = str_dup(src->password))) ||
      (src->label && !(dst->label = str_dup(src->label)))) {
    node_addr_clear(dst);
    return ST_ENOMEM;
  }
  return ST_OK;
}

void node_addr_clear(node_addr_t *addr) {
  rl_free(addr->host);
  rl_free(addr->path);
  rl_free(addr->user);
  if (addr->password != NULL) {
    memset(addr->password, 0, strlen(addr->password));
    rl_free(addr->password);
  }
  rl_free(addr->label);
  for (unsigned i = 0; i < addr->n_seeds; i++)
    rl_free(addr->seeds[i].host);
  rl_free(addr->seeds);
  rl_free(addr->master_name);
  rl_free(addr->sentinel_user);
  if (addr->sentinel_password != NULL) {
    memset(addr->sentinel_password, 0, strlen(addr->sentinel_password));
    rl_free(addr->sentinel_password);
  }
  memset(addr, 0, sizeof *addr);
}

static int same_host_port(const char *ha, int pa, const char *hb, int pb);

int node_addr_same_master(const node_addr_t *a, const node_addr_t *b) {
  if (a->kind != b->kind || a->voter != b->voter)
    return 0;
  if (a->kind == NODE_ADDR_UNIX)
    return strcmp(a->path, b->path) == 0;
  if (a->voter == VOTER_KIND_STANDALONE)
    return same_host_port(a->host, a->port, b->host, b->port);
  if (a->voter == VOTER_KIND_SENTINEL && strcmp(a->master_name, b->master_name) != 0)
    return 0;
  for (unsigned i = 0; i < a->n_seeds; i++)
    for (unsigned j = 0; j < b->n_seeds; j++)
      if (same_host_port(a->seeds[i].host, a->seeds[i].port, b->seeds[j].host, b->seeds[j].port))
        return 1;
  return 0;
}

static int same_host_port(const char *ha, int pa, const char *hb, int pb) {
  if (pa != pb)
    return 0;
  /* Numbers are compared as addresses, in the forms the lookup takes as
   * numbers (127.1 and 2130706433 are 127.0.0.1, ::ffff:127.0.0.1 too);
   * names by their letters, without a lookup. */
  resolve_key_t ka, kb;
  int a_numeric = resolve_key(ha, 1, &ka) == ST_OK;
  int b_numeric = resolve_key(hb, 1, &kb) == ST_OK;
  if (a_numeric || b_numeric)
    return a_numeric && b_numeric && resolve_key_equal(&ka, &kb);
  return strcasecmp(ha, hb) == 0;
}

/* Redaction.  It must hide a secret whatever the characters in it, so it
 * does not parse the URI: where the parser and it could disagree, it hides
 * more.  Hidden: the value of every sentinel_password= (up to an '&'
 * that starts a known parameter, or the end), and the userinfo's password
 * (from the first ':' after "://" to the last '@' outside those values), or
 * the whole userinfo when it has no ':'. */
static const char *const redact_param_names[] = {
    "wait=", "waitaof=", "wait_ms=", "sentinel_user=", "sentinel_password="};

#define REDACT_KEY "sentinel_password="
#define REDACT_MASK "***"

static int starts_known_param(const char *p) {
  for (size_t i = 0; i < sizeof redact_param_names / sizeof redact_param_names[0]; i++)
    if (strncmp(p, redact_param_names[i], strlen(redact_param_names[i])) == 0)
      return 1;
  return 0;
}

typedef struct {
  char *buf;
  size_t size;
  size_t len; /* what the whole output takes, written or not */
} redact_out_t;

static void redact_put(redact_out_t *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++, o->len++)
    if (o->len + 1 < o->size)
      o->buf[o->len] = s[i];
}

/* A sentinel_password value starts at uri + i: its end, else 0. */
static size_t secret_param_end(const char *uri, size_t len, size_t i) {
  size_t key_len = strlen(REDACT_KEY);
  if (i == 0 || (uri[i - 1] != '?' && uri[i - 1] != '&') || strncmp(uri + i, REDACT_KEY, key_len))
    return 0;
  size_t e = i + key_len;
  while (e < len && !(uri[e] == '&' && starts_known_param(uri + e + 1)))
    e++;
  return e;
}

int uri_redact(const char *uri, char *buf, size_t size) {
  if (uri == NULL || (buf == NULL && size > 0))
    return REDLOCK_EINVAL;
  size_t len = strlen(uri);
  const char *sep = strstr(uri, "://");
  size_t auth = sep != NULL ? (size_t)(sep - uri) + 3 : 0;
  size_t at = SIZE_MAX; /* the userinfo's '@' */
  for (size_t i = auth; i < len; i++) {
    size_t e = secret_param_end(uri, len, i);
    if (e != 0)
      i = e - 1;
    else if (uri[i] == '@')
      at = i;
  }
  redact_out_t o = {buf, size, 0};
  size_t i = 0;
  if (at != SIZE_MAX) {
    const char *colon = memchr(uri + auth, ':', at - auth);
    redact_put(&o, uri, colon != NULL ? (size_t)(colon - uri) + 1 : auth);
    redact_put(&o, REDACT_MASK, strlen(REDACT_MASK));
    i = at;
  }
  while (i < len) {
    size_t e = secret_param_end(uri, len, i);
    if (e != 0) {
      redact_put(&o, REDACT_KEY, strlen(REDACT_KEY));
      redact_put(&o, REDACT_MASK, strlen(REDACT_MASK));
      i = e;
    } else {
      redact_put(&o, uri + i++, 1);
    }
  }
  if (size > 0)
    buf[o.len < size ? o.len : size - 1] = '\0';
  return o.len > INT_MAX ? REDLOCK_EINVAL : (int)o.len;
}
