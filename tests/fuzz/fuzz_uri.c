/* fuzz_uri.c: fuzz target for uri_parse() (src/util/uri.c), the parser of the
 * voter addresses given to redlock_options_add_node().
 *
 * The input bytes, copied and NUL-terminated, are parsed four times: with a
 * 256-byte error buffer, with none, with a 1-byte one and with a buffer of
 * length 0 (which must stay untouched); all must agree.  Invariants checked:
 *  - the result is 0, REDLOCK_EINVAL, REDLOCK_ENOMEM, or REDLOCK_ENOTSUP for
 *    a rediss scheme in a build without TLS;
 *  - on failure *out is all zero bytes (it is pre-filled with garbage) and an
 *    EINVAL or ENOTSUP comes with a non-empty, NUL-terminated reason;
 *  - on success the error buffer is empty, the scheme gives the voter kind and
 *    TLS, and
 *    TCP:  host non-empty without blanks, controls, @ [ ] / ? # , or bytes >= 0x7f,
 * port 1..65535, db 0..URI_MAX_DB, no path, label exactly "host:port" (or "[host]:port" for an
 * IPv6 host), so it never holds the user name or password; credentials only when the authority
 * has an '@', and the host is found after that '@'; UNIX: path absolute, shorter than 108 bytes,
 * equal to the text before the PARAMS and to the label; no host, port, db or credentials;
 *    SENTINEL / CLUSTER: 1..URI_MAX_SEEDS seeds, each a valid host and port, the first one
 * copied to host and port; the label "MASTER-NAME@host:port" or "cluster@host:port"; a sentinel
 * voter has a master name without blanks or controls, a cluster voter neither name nor db;
 * sentinel credentials only on a sentinel voter;
 *    user and password are NULL or non-empty, a user only with a password; the ack is
 * consistent (no wait_ms without a mode, WAIT 1..URI_MAX_ACK_REPLICAS replicas, WAITAOF L 0/1
 * and R 0..URI_MAX_ACK_REPLICAS, not both 0);
 *  - formatting the result back into a URI (credentials, master name and sentinel credentials
 *    %-encoded, every seed, PARAMS) and parsing that gives the same fields
 *    (parse . format . parse == parse);
 *  - node_addr_copy() gives an equal deep copy, and node_addr_clear() zeroes
 *    both structs. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_targets.h"
#include "redlock.h"
#include "util/uri.h"

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
  if (!(a->voter == b->voter && a->kind == b->kind && a->port == b->port && a->db == b->db &&
        a->tls == b->tls && str_eq(a->host, b->host) && str_eq(a->path, b->path) &&
        str_eq(a->user, b->user) && str_eq(a->password, b->password) &&
        str_eq(a->label, b->label) && str_eq(a->master_name, b->master_name) &&
        str_eq(a->sentinel_user, b->sentinel_user) &&
        str_eq(a->sentinel_password, b->sentinel_password) && a->ack.mode == b->ack.mode &&
        a->ack.local == b->ack.local && a->ack.replicas == b->ack.replicas &&
        a->ack.timeout_ms == b->ack.timeout_ms && a->n_seeds == b->n_seeds))
    return 0;
  for (unsigned i = 0; i < a->n_seeds; i++)
    if (a->seeds[i].port != b->seeds[i].port || !str_eq(a->seeds[i].host, b->seeds[i].host))
      return 0;
  return 1;
}

static int nonempty_or_null(const char *s) { return s == NULL || s[0] != '\0'; }

static const char *scheme_for(const node_addr_t *a) {
  if (a->kind == NODE_ADDR_UNIX)
    return "unix://";
  const uri_scheme_t *s;
  for (size_t k = 0; (s = uri_scheme_at(k)) != NULL; k++)
    if (s->voter == a->voter && s->tls == a->tls && strcmp(s->scheme, "unix://") != 0)
      return s->scheme;
  FUZZ_CHECK(0);
  return NULL;
}

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

static void append_hostport(char *buf, size_t cap, size_t *o, const char *host, int port) {
  int ipv6 = strchr(host, ':') != NULL;
  *o += (size_t)snprintf(buf + *o, cap - *o, ipv6 ? "[%s]:%d" : "%s:%d", host, port);
}

static void append_params(char *buf, size_t cap, size_t *o, const node_addr_t *a) {
  char sep = '?';
  if (a->ack.mode == ACK_WAIT)
    *o += (size_t)snprintf(buf + *o, cap - *o, "%cwait=%d", sep, a->ack.replicas), sep = '&';
  if (a->ack.mode == ACK_WAITAOF)
    *o +=
        (size_t)snprintf(buf + *o, cap - *o, "%cwaitaof=%d,%d", sep, a->ack.local, a->ack.replicas),
        sep = '&';
  if (a->ack.timeout_ms != 0)
    *o += (size_t)snprintf(buf + *o, cap - *o, "%cwait_ms=%u", sep, a->ack.timeout_ms), sep = '&';
  if (a->sentinel_user != NULL) {
    *o += (size_t)snprintf(buf + *o, cap - *o, "%csentinel_user=", sep), sep = '&';
    append_encoded(buf, o, a->sentinel_user);
  }
  if (a->sentinel_password != NULL) {
    *o += (size_t)snprintf(buf + *o, cap - *o, "%csentinel_password=", sep), sep = '&';
    append_encoded(buf, o, a->sentinel_password);
  }
}

static void check_roundtrip(const node_addr_t *a) {
  /* Every field is at most the input length (<= URI_MAX_LEN), encoding
   * triples it at most, and each seed gains at most its brackets and port. */
  size_t cap = 3 * (URI_MAX_LEN + 1) * 4 + 16 * URI_MAX_SEEDS + 256;
  char *uri = malloc(cap);
  FUZZ_CHECK(uri != NULL);
  size_t o = (size_t)snprintf(uri, cap, "%s", scheme_for(a));
  if (a->kind == NODE_ADDR_UNIX) {
    memcpy(uri + o, a->path, strlen(a->path));
    o += strlen(a->path);
  } else {
    if (a->password != NULL) {
      if (a->user != NULL)
        append_encoded(uri, &o, a->user);
      uri[o++] = ':';
      append_encoded(uri, &o, a->password);
      uri[o++] = '@';
    }
    if (a->voter == VOTER_KIND_STANDALONE) {
      append_hostport(uri, cap, &o, a->host, a->port);
      o += (size_t)snprintf(uri + o, cap - o, "/%d", a->db);
    } else {
      for (unsigned i = 0; i < a->n_seeds; i++) {
        if (i > 0)
          uri[o++] = ',';
        append_hostport(uri, cap, &o, a->seeds[i].host, a->seeds[i].port);
      }
      if (a->voter == VOTER_KIND_SENTINEL) {
        uri[o++] = '/';
        append_encoded(uri, &o, a->master_name);
        o += (size_t)snprintf(uri + o, cap - o, "/%d", a->db);
      }
    }
  }
  append_params(uri, cap, &o, a);
  uri[o] = '\0';
  /* The reformatted URI may exceed URI_MAX_LEN (escapes, explicit port and
   * db): then it is refused, which says nothing about the parser. */
  if (o <= URI_MAX_LEN) {
    node_addr_t b;
    int rc = uri_parse(uri, &b, NULL, 0);
    if (rc != REDLOCK_ENOMEM) {
      if (rc != 0 || !addr_eq(a, &b))
        fprintf(stderr, "reformatted URI %s: %s\n", rc != 0 ? "refused" : "differs", uri);
      FUZZ_CHECK(rc == 0);
      FUZZ_CHECK(addr_eq(a, &b));
      node_addr_clear(&b);
    }
  }
  free(uri);
}

static void check_host(const char *host, int port) {
  FUZZ_CHECK(host != NULL && host[0] != '\0');
  for (const char *p = host; *p != '\0'; p++) {
    unsigned char c = (unsigned char)*p;
    FUZZ_CHECK(c > ' ' && c < 0x7f && strchr("@[]/?#,", c) == NULL);
  }
  FUZZ_CHECK(port >= 1 && port <= 65535);
}

static void check_label(const node_addr_t *a, const char *prefix) {
  char label[2 * URI_MAX_LEN + 64];
  int ipv6 = strchr(a->host, ':') != NULL;
  snprintf(label, sizeof label, ipv6 ? "%s[%s]:%d" : "%s%s:%d", prefix, a->host, a->port);
  FUZZ_CHECK(a->label != NULL && strcmp(a->label, label) == 0);
}

/* The credentials come from before the last '@' of the authority (which ends
 * at the first '/'), the host from after it.  body_end: where PARAMS start. */
static void check_authority(const char *body, const char *body_end, const node_addr_t *a) {
  const char *slash = memchr(body, '/', (size_t)(body_end - body));
  const char *authority_end = slash != NULL ? slash : body_end;
  const char *at = NULL;
  for (const char *p = body; p < authority_end; p++)
    if (*p == '@')
      at = p;
  if (at == NULL)
    FUZZ_CHECK(a->user == NULL && a->password == NULL);
  else
    FUZZ_CHECK(a->password != NULL && strlen(a->password) <= (size_t)(at - body));
  const char *hosts = at != NULL ? at + 1 : body;
  char *authority = malloc((size_t)(authority_end - hosts) + 1);
  FUZZ_CHECK(authority != NULL);
  memcpy(authority, hosts, (size_t)(authority_end - hosts));
  authority[authority_end - hosts] = '\0';
  FUZZ_CHECK(strstr(authority, a->host) != NULL);
  for (unsigned i = 0; i < a->n_seeds; i++)
    FUZZ_CHECK(strstr(authority, a->seeds[i].host) != NULL);
  free(authority);
}

static void check_ack(const ack_spec_t *ack) {
  FUZZ_CHECK(ack->timeout_ms <= URI_MAX_WAIT_MS);
  switch (ack->mode) {
  case ACK_NONE:
    FUZZ_CHECK(ack->local == 0 && ack->replicas == 0 && ack->timeout_ms == 0);
    break;
  case ACK_WAIT:
    FUZZ_CHECK(ack->local == 0 && ack->replicas >= 1 && ack->replicas <= URI_MAX_ACK_REPLICAS);
    break;
  case ACK_WAITAOF:
    FUZZ_CHECK((ack->local == 0 || ack->local == 1) && ack->replicas >= 0 &&
               ack->replicas <= URI_MAX_ACK_REPLICAS && ack->local + ack->replicas > 0);
    break;
  default:
    FUZZ_CHECK(0);
  }
}

static void check_parsed(const char *uri, const uri_scheme_t *scheme, const node_addr_t *a) {
  const char *body = uri + strlen(scheme->scheme);
  FUZZ_CHECK(a->voter == scheme->voter && a->tls == scheme->tls);
  FUZZ_CHECK(nonempty_or_null(a->user) && nonempty_or_null(a->password));
  FUZZ_CHECK(a->user == NULL || a->password != NULL);
  check_ack(&a->ack);
  if (a->voter != VOTER_KIND_SENTINEL)
    FUZZ_CHECK(a->master_name == NULL && a->sentinel_user == NULL && a->sentinel_password == NULL);
  FUZZ_CHECK(nonempty_or_null(a->sentinel_user) && nonempty_or_null(a->sentinel_password));

  if (strcmp(scheme->scheme, "unix://") == 0) {
    FUZZ_CHECK(a->kind == NODE_ADDR_UNIX);
    FUZZ_CHECK(a->path != NULL && a->path[0] == '/' && strlen(a->path) < 108);
    const char *q = strchr(body, '?');
    size_t path_len = q != NULL ? (size_t)(q - body) : strlen(body);
    FUZZ_CHECK(strlen(a->path) == path_len && memcmp(a->path, body, path_len) == 0);
    FUZZ_CHECK(a->label != NULL && strcmp(a->label, a->path) == 0);
    FUZZ_CHECK(a->host == NULL && a->user == NULL && a->password == NULL);
    FUZZ_CHECK(a->port == 0 && a->db == 0 && a->n_seeds == 0 && a->seeds == NULL);
    return;
  }
  FUZZ_CHECK(a->kind == NODE_ADDR_TCP && a->path == NULL);
  check_host(a->host, a->port);
  FUZZ_CHECK(a->db >= 0 && a->db <= URI_MAX_DB);
  /* PARAMS start at the first '?' after the credentials. */
  const char *slash = strchr(body, '/');
  const char *after_user = body;
  for (const char *p = body; *p != '\0' && p != slash; p++)
    if (*p == '@')
      after_user = p + 1;
  const char *q = strchr(after_user, '?');
  const char *body_end = q != NULL ? q : body + strlen(body);
  check_authority(body, body_end, a);

  if (a->voter == VOTER_KIND_STANDALONE) {
    FUZZ_CHECK(a->n_seeds == 0 && a->seeds == NULL);
    /* The label is made of host and port only: it cannot hold a secret. */
    check_label(a, "");
    FUZZ_CHECK(strchr(a->label, '@') == NULL);
    return;
  }
  FUZZ_CHECK(a->n_seeds >= 1 && a->n_seeds <= URI_MAX_SEEDS && a->seeds != NULL);
  for (unsigned i = 0; i < a->n_seeds; i++)
    check_host(a->seeds[i].host, a->seeds[i].port);
  FUZZ_CHECK(strcmp(a->host, a->seeds[0].host) == 0 && a->port == a->seeds[0].port);
  if (a->voter == VOTER_KIND_CLUSTER) {
    FUZZ_CHECK(a->db == 0);
    check_label(a, "cluster@");
    return;
  }
  FUZZ_CHECK(a->master_name != NULL && a->master_name[0] != '\0');
  for (const char *p = a->master_name; *p != '\0'; p++)
    FUZZ_CHECK((unsigned char)*p > ' ' && *p != 0x7f);
  char prefix[URI_MAX_LEN + 2];
  snprintf(prefix, sizeof prefix, "%s@", a->master_name);
  check_label(a, prefix);
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
  const uri_scheme_t *scheme = uri_scheme_of(uri);

  FUZZ_CHECK(rc == 0 || rc == REDLOCK_EINVAL || rc == REDLOCK_ENOMEM ||
             (rc == REDLOCK_ENOTSUP && scheme != NULL && scheme->tls));
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

  FUZZ_CHECK(scheme != NULL);
  FUZZ_CHECK(err[0] == '\0');
  FUZZ_CHECK(addr_eq(&a, &b) && addr_eq(&a, &c) && addr_eq(&a, &d));
  check_parsed(uri, scheme, &a);
  check_roundtrip(&a);

  node_addr_t copy;
  memset(&copy, 0xA5, sizeof copy);
  if (node_addr_copy(&copy, &a) == 0) {
    FUZZ_CHECK(addr_eq(&copy, &a));
    FUZZ_CHECK(copy.label != a.label && (a.host == NULL || copy.host != a.host) &&
               (a.password == NULL || copy.password != a.password) &&
               (a.seeds == NULL || copy.seeds != a.seeds));
    node_addr_clear(&copy);
    FUZZ_CHECK(is_zero(&copy, sizeof copy));
  } else {
    FUZZ_CHECK(is_zero(&copy, sizeof copy));
  }
  FUZZ_CHECK(node_addr_same_master(&a, &b));
  node_addr_clear(&a);
  node_addr_clear(&b);
  node_addr_clear(&c);
  node_addr_clear(&d);
  FUZZ_CHECK(is_zero(&a, sizeof a));
  free(uri);
  return 0;
}
