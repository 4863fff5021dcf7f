/* fuzz_uri.c: fuzz target for uri_parse() (src/uri.c), the parser of the
 * master addresses given to redlock_options_add_node().
 *
 * The input bytes, copied and NUL-terminated, are parsed four times: with a
 * 256-byte error buffer, with none, with a 1-byte one and with a buffer of
 * length 0 (which must stay untouched); all must agree.  Invariants checked:
 *  - the result is 0, REDLOCK_EINVAL, REDLOCK_ENOMEM, or REDLOCK_ENOTSUP for
 *    rediss:// in a build without TLS;
 *  - on failure *out is all zero bytes (it is pre-filled with garbage) and an
 *    EINVAL or ENOTSUP comes with a non-empty, NUL-terminated reason;
 *  - on success the error buffer is empty and
 *    TCP:  "redis://" (tls 0) or "rediss://" (tls 1) prefix, host non-empty without blanks,
 * controls, @ [ ] / ? # or bytes >= 0x7f, port 1..65535, db 0..URI_MAX_DB, no path, label exactly
 * "host:port" (or "[host]:port" for an IPv6 host), so it never holds the user name or password;
 * credentials only when the authority has an '@', and the host is found after that '@'; UNIX:
 * "unix://" prefix, path absolute, shorter than 108 bytes, equal to the rest of the input and to
 * the label; no host, port, db or credentials; user and password are NULL or non-empty, a user only
 * with a password;
 *  - formatting the result back into a URI (credentials %-encoded) and parsing
 *    that gives the same fields (parse . format . parse == parse);
 *  - node_addr_copy() gives an equal deep copy, and node_addr_clear() zeroes
 *    both structs. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_targets.h"
#include "redlock.h"
#include "uri.h"

static int is_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != 0)
      return 0;
  return 1;
}

static int str_eq(const char *a, const char *b) {
  if (a == NULL || b == NULL)
    return a == b;
  return strcmp(a, b) == 0;
}

static int addr_eq(const node_addr_t *a, const node_addr_t *b) {
  return a->kind == b->kind && a->port == b->port && a->db == b->db && a->tls == b->tls &&
         str_eq(a->host, b->host) && str_eq(a->path, b->path) && str_eq(a->user, b->user) &&
         str_eq(a->password, b->password) && str_eq(a->label, b->label);
}

static int nonempty_or_null(const char *s) { return s == NULL || s[0] != '\0'; }

/* Appends s to buf at *o, %-encoding every byte but [A-Za-z0-9]. */
static void append_encoded(char *buf, size_t *o, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (; *s != '\0'; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      buf[(*o)++] = (char)c;
    } else {
      buf[(*o)++] = '%';
      buf[(*o)++] = hex[c >> 4];
      buf[(*o)++] = hex[c & 15];
    }
  }
}

static void check_roundtrip(const node_addr_t *a) {
  /* Every field is at most the input length (<= URI_MAX_LEN) and encoding
   * triples it at most. */
  size_t cap = 3 * (URI_MAX_LEN + 1) * 2 + 64;
  char *uri = malloc(cap);
  FUZZ_CHECK(uri != NULL);
  size_t o = 0;
  if (a->kind == NODE_ADDR_UNIX) {
    memcpy(uri, "unix://", 7);
    o = 7;
    memcpy(uri + o, a->path, strlen(a->path));
    o += strlen(a->path);
  } else {
    o = (size_t)snprintf(uri, cap, "%s", a->tls ? "rediss://" : "redis://");
    if (a->password != NULL) {
      if (a->user != NULL)
        append_encoded(uri, &o, a->user);
      uri[o++] = ':';
      append_encoded(uri, &o, a->password);
      uri[o++] = '@';
    }
    int ipv6 = strchr(a->host, ':') != NULL;
    o += (size_t)snprintf(uri + o, cap - o, ipv6 ? "[%s]:%d/%d" : "%s:%d/%d", a->host, a->port,
                          a->db);
  }
  uri[o] = '\0';
  /* The reformatted URI may exceed URI_MAX_LEN (escapes, explicit port and
   * db): then it is refused, which says nothing about the parser. */
  if (o <= URI_MAX_LEN) {
    node_addr_t b;
    int rc = uri_parse(uri, &b, NULL, 0);
    if (rc != REDLOCK_ENOMEM) {
      if (rc != 0)
        fprintf(stderr, "reformatted URI refused: %s\n", uri);
      FUZZ_CHECK(rc == 0);
      FUZZ_CHECK(addr_eq(a, &b));
      node_addr_clear(&b);
    }
  }
  free(uri);
}

static void check_tcp(const char *uri, const node_addr_t *a) {
  size_t scheme_len = a->tls ? 9 : 8;
  FUZZ_CHECK(strncmp(uri, a->tls ? "rediss://" : "redis://", scheme_len) == 0);
  FUZZ_CHECK(a->host != NULL && a->host[0] != '\0');
  for (const char *p = a->host; *p != '\0'; p++) {
    unsigned char c = (unsigned char)*p;
    FUZZ_CHECK(c > ' ' && c < 0x7f && strchr("@[]/?#", c) == NULL);
  }
  FUZZ_CHECK(a->port >= 1 && a->port <= 65535);
  FUZZ_CHECK(a->db >= 0 && a->db <= URI_MAX_DB);
  FUZZ_CHECK(a->path == NULL);

  /* The label is made of host and port only: it cannot hold a secret. */
  char label[URI_MAX_LEN + 32];
  int ipv6 = strchr(a->host, ':') != NULL;
  snprintf(label, sizeof label, ipv6 ? "[%s]:%d" : "%s:%d", a->host, a->port);
  FUZZ_CHECK(a->label != NULL && strcmp(a->label, label) == 0);
  FUZZ_CHECK(strchr(a->label, '@') == NULL);

  /* Credentials come from before the last '@' of the authority, the host from after it. */
  const char *rest = uri + scheme_len;
  const char *slash = strchr(rest, '/');
  const char *authority_end = slash != NULL ? slash : rest + strlen(rest);
  const char *at = NULL;
  for (const char *p = rest; p < authority_end; p++)
    if (*p == '@')
      at = p;
  if (at == NULL)
    FUZZ_CHECK(a->user == NULL && a->password == NULL);
  else
    FUZZ_CHECK(a->password != NULL);
  const char *host_in_uri = strstr(at != NULL ? at + 1 : rest, a->host);
  FUZZ_CHECK(host_in_uri != NULL && host_in_uri < authority_end);
  if (a->password != NULL)
    FUZZ_CHECK(strlen(a->password) <= (size_t)(at - rest));
}

static void check_unix(const char *uri, const node_addr_t *a) {
  FUZZ_CHECK(strncmp(uri, "unix://", 7) == 0);
  FUZZ_CHECK(a->path != NULL && a->path[0] == '/' && strlen(a->path) < 108);
  FUZZ_CHECK(strcmp(a->path, uri + 7) == 0);
  FUZZ_CHECK(a->label != NULL && strcmp(a->label, a->path) == 0);
  FUZZ_CHECK(a->host == NULL && a->user == NULL && a->password == NULL);
  FUZZ_CHECK(a->port == 0 && a->db == 0 && a->tls == 0);
}

int fuzz_one_uri(const uint8_t *data, size_t size) {
  char *uri = malloc(size + 1);
  FUZZ_CHECK(uri != NULL);
  memcpy(uri, data, size);
  uri[size] = '\0';

  node_addr_t a, b, c, d;
  char err[256], err1[1] = {'x'}, err0[1] = {'x'};
  memset(&a, 0xA5, sizeof a);
  memset(&b, 0x5A, sizeof b);
  memset(&c, 0xA5, sizeof c);
  memset(&d, 0x5A, sizeof d);
  memset(err, 'x', sizeof err);
  int rc = uri_parse(uri, &a, err, sizeof err);
  int rc_nobuf = uri_parse(uri, &b, NULL, 0);
  int rc_tiny = uri_parse(uri, &c, err1, sizeof err1);
  int rc_zero = uri_parse(uri, &d, err0, 0);

  FUZZ_CHECK(rc == 0 || rc == REDLOCK_EINVAL || rc == REDLOCK_ENOMEM ||
             (rc == REDLOCK_ENOTSUP && strncmp(uri, "rediss://", 9) == 0));
  FUZZ_CHECK(rc_nobuf == rc && rc_tiny == rc && rc_zero == rc);
  FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL);
  FUZZ_CHECK(err1[0] == '\0');
  FUZZ_CHECK(err0[0] == 'x');

  if (rc != 0) {
    FUZZ_CHECK(is_zero(&a, sizeof a) && is_zero(&b, sizeof b) && is_zero(&c, sizeof c) &&
               is_zero(&d, sizeof d));
    if (rc == REDLOCK_EINVAL || rc == REDLOCK_ENOTSUP)
      FUZZ_CHECK(err[0] != '\0');
    free(uri);
    return 0;
  }

  FUZZ_CHECK(err[0] == '\0');
  FUZZ_CHECK(addr_eq(&a, &b) && addr_eq(&a, &c) && addr_eq(&a, &d));
  FUZZ_CHECK(nonempty_or_null(a.user) && nonempty_or_null(a.password));
  FUZZ_CHECK(a.user == NULL || a.password != NULL);
  if (a.kind == NODE_ADDR_TCP) {
    check_tcp(uri, &a);
  } else {
    FUZZ_CHECK(a.kind == NODE_ADDR_UNIX);
    check_unix(uri, &a);
  }
  check_roundtrip(&a);

  node_addr_t copy;
  memset(&copy, 0xA5, sizeof copy);
  if (node_addr_copy(&copy, &a) == 0) {
    FUZZ_CHECK(addr_eq(&copy, &a));
    FUZZ_CHECK(copy.label != a.label && (a.host == NULL || copy.host != a.host) &&
               (a.password == NULL || copy.password != a.password));
    node_addr_clear(&copy);
    FUZZ_CHECK(is_zero(&copy, sizeof copy));
  } else {
    FUZZ_CHECK(is_zero(&copy, sizeof copy));
  }
  node_addr_clear(&a);
  node_addr_clear(&b);
  node_addr_clear(&c);
  node_addr_clear(&d);
  FUZZ_CHECK(is_zero(&a, sizeof a));
  free(uri);
  return 0;
}
