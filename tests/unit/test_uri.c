/* test_uri.c: unit tests for src/util/uri.c, the parser of master addresses.
 *  - accepted forms: redis://host, :port, /db, :password@, user:password@,
 *    %XX decoding (also at the very end of a field), [IPv6]:port,
 *    unix:///abs/path, length boundaries (URI and unix path);
 *  - the label never contains the password, nor does an error message;
 *  - uri_redact hides the password and sentinel_password whatever their
 *    characters, with snprintf's size contract;
 *  - rejections with REDLOCK_EINVAL and a reason: empty, NULL, wrong scheme,
 *    rediss://, missing host, bad port, bad db, userinfo without ':', empty
 *    password, bad % escape, %00, control characters, relative or too long
 *    unix path, over-long URI, text after ']'; a rejected parse leaves *out
 *    zeroed (no half-filled fields, no leak);
 *  - node_addr_copy / node_addr_clear round trip;
 *  - voter URIs (docs/api.md): redis-sentinel:// and redis-cluster:// with
 *    their host lists, master name and db, and PARAMS (wait=, waitaof=,
 *    wait_ms=, sentinel_user=, sentinel_password=), each with its
 *    rejections. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "redlock.h"
#include "util/uri.h"

static void assert_addr_zero(const node_addr_t *a) {
  assert_int_equal(a->kind, 0);
  assert_null(a->host);
  assert_null(a->path);
  assert_null(a->user);
  assert_null(a->password);
  assert_null(a->label);
  assert_int_equal(a->port, 0);
  assert_int_equal(a->db, 0);
  assert_null(a->seeds);
  assert_int_equal(a->n_seeds, 0);
  assert_null(a->master_name);
  assert_null(a->sentinel_user);
  assert_null(a->sentinel_password);
  assert_int_equal(a->ack.mode, ACK_NONE);
  assert_int_equal(a->voter, VOTER_KIND_STANDALONE);
}

/* Parses a URI that must be accepted; the caller clears *a. */
static void parse_ok(const char *uri, node_addr_t *a) {
  char why[128];
  int rc = uri_parse(uri, a, why, sizeof why);
  if (rc != 0)
    fail_msg("uri_parse(\"%s\") = %d (%s), expected 0", uri, rc, why);
  assert_non_null(a->label);
  if (a->password != NULL && a->password[0] != '\0')
    assert_null(strstr(a->label, a->password));
}

static void assert_rejected(const char *uri) {
  node_addr_t a;
  char why[160];
  memset(&a, 0xAB, sizeof a); /* must be reset, not left as garbage */
  memset(why, 0, sizeof why);
  int rc = uri_parse(uri, &a, why, sizeof why);
  if (rc != REDLOCK_EINVAL)
    fail_msg("uri_parse(\"%s\") = %d, expected REDLOCK_EINVAL", uri != NULL ? uri : "(null)", rc);
  assert_true(why[0] != '\0'); /* a reason is given */
  if (uri != NULL)
    assert_addr_zero(&a);
}

/* ---- accepted ------------------------------------------------------------------- */

static void test_plain_host(void **state) {
  (void)state;
  node_addr_t a;
  parse_ok("redis://localhost", &a);
  assert_int_equal(a.kind, NODE_ADDR_TCP);
  assert_string_equal(a.host, "localhost");
  assert_int_equal(a.port, 6379);
  assert_int_equal(a.db, 0);
  assert_null(a.user);
  assert_null(a.password);
  assert_null(a.path);
  assert_string_equal(a.label, "localhost:6379");
  node_addr_clear(&a);
  assert_addr_zero(&a);

  parse_ok("redis://127.0.0.1", &a);
  assert_string_equal(a.host, "127.0.0.1");
  assert_string_equal(a.label, "127.0.0.1:6379");
  node_addr_clear(&a);
}

static void test_port_and_db(void **state) {
  (void)state;
  node_addr_t a;
  parse_ok("redis://10.0.0.7:6380", &a);
  assert_string_equal(a.host, "10.0.0.7");
  assert_int_equal(a.port, 6380);
  assert_int_equal(a.db, 0);
  assert_string_equal(a.label, "10.0.0.7:6380");
  node_addr_clear(&a);

  parse_ok("redis://h/3", &a);
  assert_string_equal(a.host, "h");
  assert_int_equal(a.port, 6379);
  assert_int_equal(a.db, 3);
  node_addr_clear(&a);

  parse_ok("redis://h:1/15", &a);
  assert_int_equal(a.port, 1);
  assert_int_equal(a.db, 15);
  node_addr_clear(&a);

  parse_ok("redis://h:65535/1000000", &a);
  assert_int_equal(a.port, 65535);
  assert_int_equal(a.db, URI_MAX_DB);
  assert_string_equal(a.label, "h:65535");
  node_addr_clear(&a);
}

static void test_password_only(void **state) {
  (void)state;
  node_addr_t a;
  parse_ok("redis://:s3cr3t-pw@db.example:7000/2", &a);
  assert_null(a.user);
  assert_string_equal(a.password, "s3cr3t-pw");
  assert_string_equal(a.host, "db.example");
  assert_int_equal(a.port, 7000);
  assert_int_equal(a.db, 2);
  assert_string_equal(a.label, "db.example:7000");
  node_addr_clear(&a);
}

static void test_user_and_password(void **state) {
  (void)state;
  node_addr_t a;
  parse_ok("redis://alice:hunter2@cache1", &a);
  assert_string_equal(a.user, "alice");
  assert_string_equal(a.password, "hunter2");
  assert_string_equal(a.host, "cache1");
  assert_int_equal(a.port, 6379);
  assert_null(strstr(a.label, "hunter2"));
  assert_null(strstr(a.label, "alice"));
  node_addr_clear(&a);

  /* A second ':' belongs to the password. */
  parse_ok("redis://bob:pa:ss@h", &a);
  assert_string_equal(a.user, "bob");
  assert_string_equal(a.password, "pa:ss");
  node_addr_clear(&a);
}

static void test_percent_decoding(void **state) {
  (void)state;
  node_addr_t a;
  parse_ok("redis://al%69ce:p%40ss%3Aw%2fd%25@h:6390", &a);
  assert_string_equal(a.user, "alice");
  assert_string_equal(a.password, "p@ss:w/d%");
  assert_string_equal(a.host, "h");
  assert_int_equal(a.port, 6390);
  assert_string_equal(a.label, "h:6390");
  node_addr_clear(&a);

  /* An escape that ends the field exactly (no off-by-one at the end). */
  parse_ok("redis://:ab%41@h", &a);
  assert_string_equal(a.password, "abA");
  node_addr_clear(&a);
  parse_ok("redis://:%41@h", &a);
  assert_string_equal(a.password, "A");
  node_addr_clear(&a);
  parse_ok("redis://u%5A:x@h", &a);
  assert_string_equal(a.user, "uZ");
  node_addr_clear(&a);
}

static void test_ipv6(void **state) {
  (void)state;
  node_addr_t a;
  parse_ok("redis://[::1]:6380", &a);
  assert_int_equal(a.kind, NODE_ADDR_TCP);
  assert_string_equal(a.host, "::1");
  assert_int_equal(a.port, 6380);
  assert_string_equal(a.label, "[::1]:6380");
  node_addr_clear(&a);

  parse_ok("redis://[fe80::1:2]", &a);
  assert_string_equal(a.host, "fe80::1:2");
  assert_int_equal(a.port, 6379);
  assert_string_equal(a.label, "[fe80::1:2]:6379");
  node_addr_clear(&a);

  parse_ok("redis://:pw@[::1]:7001/4", &a);
  assert_string_equal(a.host, "::1");
  assert_string_equal(a.password, "pw");
  assert_int_equal(a.port, 7001);
  assert_int_equal(a.db, 4);
  node_addr_clear(&a);
}

static void test_unix(void **state) {
  (void)state;
  node_addr_t a;
  parse_ok("unix:///tmp/x.sock", &a);
  assert_int_equal(a.kind, NODE_ADDR_UNIX);
  assert_string_equal(a.path, "/tmp/x.sock");
  assert_string_equal(a.label, "/tmp/x.sock");
  assert_null(a.host);
  assert_null(a.password);
  assert_int_equal(a.db, 0);
  node_addr_clear(&a);

  /* 107 bytes is the longest path a sockaddr_un holds with its NUL. */
  char uri[7 + 200];
  memcpy(uri, "unix://", 7);
  uri[7] = '/';
  memset(uri + 8, 'p', 106);
  uri[7 + 107] = '\0';
  parse_ok(uri, &a);
  assert_int_equal(strlen(a.path), 107);
  node_addr_clear(&a);
}

static void test_max_length_uri(void **state) {
  (void)state;
  /* Exactly URI_MAX_LEN bytes is accepted. */
  char *uri = malloc(URI_MAX_LEN + 2);
  assert_non_null(uri);
  memcpy(uri, "redis://", 8);
  memset(uri + 8, 'a', URI_MAX_LEN - 8);
  uri[URI_MAX_LEN] = '\0';
  node_addr_t a;
  parse_ok(uri, &a);
  assert_int_equal(strlen(a.host), URI_MAX_LEN - 8);
  node_addr_clear(&a);
  free(uri);
}

static void test_label_never_has_password(void **state) {
  (void)state;
  static const char *const uris[] = {
      "redis://:TOPSECRET@h",
      "redis://user:TOPSECRET@h:1",
      "redis://TOPSECRETUSER:TOPSECRET@[::1]:2/3",
      "redis://:TOP%53ECRET@h",
  };
  for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
    node_addr_t a;
    parse_ok(uris[i], &a);
    assert_non_null(a.password);
    assert_string_equal(a.password, "TOPSECRET");
    assert_null(strstr(a.label, "TOPSECRET"));
    assert_null(strstr(a.label, "@"));
    node_addr_clear(&a);
  }
}

static void test_err_msg_optional_and_truncated(void **state) {
  (void)state;
  node_addr_t a;
  /* No message buffer at all. */
  assert_int_equal(uri_parse("http://h", &a, NULL, 0), REDLOCK_EINVAL);
  assert_int_equal(uri_parse("redis://h", &a, NULL, 0), 0);
  node_addr_clear(&a);
  /* A tiny buffer is filled and NUL-terminated, never overrun. */
  char small[6];
  memset(small, 'X', sizeof small);
  assert_int_equal(uri_parse("http://h", &a, small, 4), REDLOCK_EINVAL);
  assert_true(strlen(small) <= 3);
  assert_int_equal(small[4], 'X');
  assert_int_equal(small[5], 'X');
  /* Success clears a stale message. */
  char why[64];
  strcpy(why, "stale");
  assert_int_equal(uri_parse("redis://h", &a, why, sizeof why), 0);
  assert_string_equal(why, "");
  node_addr_clear(&a);
}

static void test_err_msg_never_has_password(void **state) {
  (void)state;
  static const char *const uris[] = {
      "redis://:SECRETPW@h:0",
      "redis://:SECRETPW@h:99999",
      "redis://:SECRETPW@h/x",
      "redis://:SECRETPW@",
      "redis://u:SECRETPW%zz@h",
      "redis://:SECRETPW@[::1]x",
      "redis://:SECRETPW@h o",
      "rediss://:SECRETPW@h:0",
      /* a '/' or '?' in the password cuts the authority short: what follows
       * reads as a path or a parameter */
      "redis://:a/b?SECRETPW@h",
      "redis://:a?SECRETPW/@h",
  };
  for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
    node_addr_t a;
    char why[256];
    int rc = uri_parse(uris[i], &a, why, sizeof why);
    /* rediss:// in a build without TLS: ENOTSUP, before the port is read. */
    assert_true(rc == REDLOCK_EINVAL || (rc == REDLOCK_ENOTSUP && !redlock_tls_supported()));
    assert_true(why[0] != '\0');
    assert_null(strstr(why, "SECRETPW"));
    assert_addr_zero(&a);
  }
}

/* ---- redaction ---------------------------------------------------------------- */

static void assert_redacts(const char *uri, const char *want) {
  char buf[256];
  int n = uri_redact(uri, buf, sizeof buf);
  assert_string_equal(buf, want);
  assert_int_equal(n, (int)strlen(want));
}

static void test_redact(void **state) {
  (void)state;
  assert_redacts("redis://h:1", "redis://h:1");
  assert_redacts("redis://u:pw@h:1/2", "redis://u:***@h:1/2");
  assert_redacts("redis://:pw@h", "redis://:***@h");
  /* unescaped '/', '@', '?' in the password: still hidden */
  assert_redacts("redis://u:pa/ss@host:1", "redis://u:***@host:1");
  assert_redacts("redis://:p@ss@host:1", "redis://:***@host:1");
  assert_redacts("redis://:a?b/c@h", "redis://:***@h");
  /* no ':': the whole userinfo may be a password */
  assert_redacts("redis://secret@host", "redis://***@host");
  assert_redacts("redis-sentinel://h:1/m?sentinel_password=s3",
                 "redis-sentinel://h:1/m?sentinel_password=***");
  /* an '@' or '&' inside the sentinel password's value */
  assert_redacts("redis-sentinel://h:1/m?sentinel_password=a@b&c",
                 "redis-sentinel://h:1/m?sentinel_password=***");
  assert_redacts("redis-sentinel://u:p@h:1/m?sentinel_password=x&wait=1&sentinel_user=s",
                 "redis-sentinel://u:***@h:1/m?sentinel_password=***&wait=1&sentinel_user=s");
  /* no scheme, not a URI at all: still no secret */
  assert_redacts("user:pw@h", "user:***@h");
  assert_redacts("", "");
}

static void test_redact_sizes(void **state) {
  (void)state;
  const char *uri = "redis://u:secret@host:6379";
  const char *want = "redis://u:***@host:6379";
  assert_int_equal(uri_redact(uri, NULL, 0), (int)strlen(want));
  char small[12];
  memset(small, 'X', sizeof small);
  assert_int_equal(uri_redact(uri, small, sizeof small), (int)strlen(want));
  assert_int_equal(strlen(small), sizeof small - 1);
  assert_memory_equal(small, want, sizeof small - 1);
  /* a cut in the middle of the mask shows no secret either */
  char tiny[1] = {'X'};
  assert_int_equal(uri_redact(uri, tiny, 1), (int)strlen(want));
  assert_int_equal(tiny[0], '\0');
  assert_int_equal(uri_redact(NULL, small, sizeof small), REDLOCK_EINVAL);
  assert_int_equal(uri_redact(uri, NULL, 4), REDLOCK_EINVAL);
}

/* ---- rejected ------------------------------------------------------------------ */

static void test_reject_empty_null(void **state) {
  (void)state;
  assert_rejected("");
  assert_rejected(NULL);
  /* NULL output. */
  char why[64];
  assert_int_equal(uri_parse("redis://h", NULL, why, sizeof why), REDLOCK_EINVAL);
  assert_true(why[0] != '\0');
}

static void test_reject_scheme(void **state) {
  (void)state;
  assert_rejected("http://localhost");
  assert_rejected("localhost:6379");
  assert_rejected("redis:/localhost");
  assert_rejected("redis:localhost");
  assert_rejected("redis//localhost");
  assert_rejected("tcp://localhost");
  assert_rejected("unix:/tmp/x.sock");
  assert_rejected("redisss://localhost");
  assert_rejected("rediss:/localhost");
}

/* rediss:// parses like redis:// (same defaults) with tls set; a build
 * without TLS refuses it with ENOTSUP and says why, never with the password. */
static void test_rediss(void **state) {
  (void)state;
  node_addr_t a;
  char why[256];
  int rc = uri_parse("rediss://u:SECRETPW@h.example", &a, why, sizeof why);
  if (!redlock_tls_supported()) {
    assert_int_equal(rc, REDLOCK_ENOTSUP);
    assert_non_null(strstr(why, "TLS"));
    assert_null(strstr(why, "SECRETPW"));
    assert_addr_zero(&a);
    return;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(a.kind, NODE_ADDR_TCP);
  assert_int_equal(a.tls, 1);
  assert_string_equal(a.host, "h.example");
  assert_int_equal(a.port, 6379);
  assert_string_equal(a.user, "u");
  assert_string_equal(a.password, "SECRETPW");
  assert_string_equal(a.label, "h.example:6379");
  node_addr_t copy;
  assert_int_equal(node_addr_copy(&copy, &a), 0);
  assert_int_equal(copy.tls, 1);
  node_addr_clear(&copy);
  node_addr_clear(&a);
  assert_int_equal(uri_parse("rediss://[::1]:6380/2", &a, why, sizeof why), 0);
  assert_int_equal(a.tls, 1);
  assert_int_equal(a.port, 6380);
  assert_int_equal(a.db, 2);
  node_addr_clear(&a);
  assert_int_equal(uri_parse("redis://h", &a, why, sizeof why), 0);
  assert_int_equal(a.tls, 0);
  node_addr_clear(&a);
  /* Same host and port over TLS and plain: one master. */
  node_addr_t b;
  assert_int_equal(uri_parse("rediss://h:1", &a, why, sizeof why), 0);
  assert_int_equal(uri_parse("redis://h:1", &b, why, sizeof why), 0);
  assert_true(node_addr_same_master(&a, &b));
  node_addr_clear(&a);
  node_addr_clear(&b);
}

static void test_reject_missing_host(void **state) {
  (void)state;
  assert_rejected("redis://");
  assert_rejected("redis://:6379");
  assert_rejected("redis:///0");
  assert_rejected("redis://:pw@");
  assert_rejected("redis://:pw@:6379");
  assert_rejected("redis://u:pw@/2");
  assert_rejected("redis://[]:6379");
  assert_rejected("redis://[]");
}

static void test_reject_port(void **state) {
  (void)state;
  assert_rejected("redis://h:0");
  assert_rejected("redis://h:65536");
  assert_rejected("redis://h:99999");
  assert_rejected("redis://h:9999999999");
  assert_rejected("redis://h:abc");
  assert_rejected("redis://h:");
  assert_rejected("redis://h:-1");
  assert_rejected("redis://h:+80");
  assert_rejected("redis://h:63 79");
  assert_rejected("redis://h:6379x");
  assert_rejected("redis://h:6379:6380");
  assert_rejected("redis://[::1]:0");
  assert_rejected("redis://[::1]:");
  assert_rejected("redis://[::1]:70000");
}

static void test_reject_db(void **state) {
  (void)state;
  assert_rejected("redis://h/abc");
  assert_rejected("redis://h/-1");
  assert_rejected("redis://h/1x");
  assert_rejected("redis://h/1000001");
  assert_rejected("redis://h/99999999999");
  assert_rejected("redis://h:6379/0/");
  assert_rejected("redis://h/0?x=1");
}

static void test_reject_userinfo(void **state) {
  (void)state;
  /* No ':' in the credentials. */
  assert_rejected("redis://alice@h");
  assert_rejected("redis://secret@h:6379");
  /* Empty password. */
  assert_rejected("redis://alice:@h");
  assert_rejected("redis://:@h");
  assert_rejected("redis://@h");
}

static void test_reject_percent(void **state) {
  (void)state;
  assert_rejected("redis://:p%4@h");
  assert_rejected("redis://:p%@h");
  assert_rejected("redis://:%@h");
  assert_rejected("redis://:p%zz@h");
  assert_rejected("redis://:p%g1@h");
  assert_rejected("redis://:p%1g@h");
  assert_rejected("redis://:ab%4@h"); /* escape cut at the end of the field */
  assert_rejected("redis://u%4:pw@h");
  assert_rejected("redis://u%xy:pw@h");
  /* An encoded NUL would silently truncate the credential. */
  assert_rejected("redis://:pw%00x@h");
  assert_rejected("redis://u%00:pw@h");
}

static void test_reject_control_chars(void **state) {
  (void)state;
  assert_rejected("redis://ho\nst");
  assert_rejected("redis://host\r\n");
  assert_rejected("redis://host\t");
  assert_rejected("redis://:p\x01w@host");
  assert_rejected("redis://host\x7f");
  assert_rejected("unix:///tmp/x\n.sock");
  assert_rejected("\x1bredis://host");
}

static void test_reject_bad_host_chars(void **state) {
  (void)state;
  assert_rejected("redis://ho st");
  assert_rejected("redis://host?db=1");
  assert_rejected("redis://host#frag");
  assert_rejected("redis://ho[st");
  assert_rejected("redis://h\xc3\xa9");
}

static void test_reject_unix(void **state) {
  (void)state;
  assert_rejected("unix://");
  assert_rejected("unix://tmp/x.sock");
  assert_rejected("unix://./x.sock");
  /* 108 bytes does not fit in sockaddr_un.sun_path with its NUL. */
  char uri[7 + 300];
  memcpy(uri, "unix://", 7);
  uri[7] = '/';
  memset(uri + 8, 'p', 107);
  uri[7 + 108] = '\0';
  assert_rejected(uri);
  memset(uri + 8, 'p', 250);
  uri[7 + 251] = '\0';
  assert_rejected(uri);
}

static void test_reject_overlong(void **state) {
  (void)state;
  /* URI_MAX_LEN + 1 bytes. */
  char *uri = malloc(URI_MAX_LEN + 2);
  assert_non_null(uri);
  memcpy(uri, "redis://", 8);
  memset(uri + 8, 'a', URI_MAX_LEN + 1 - 8);
  uri[URI_MAX_LEN + 1] = '\0';
  assert_rejected(uri);
  free(uri);
  /* Much longer: strnlen must stop, and it is still refused. */
  size_t big = 1 << 20;
  uri = malloc(big + 1);
  assert_non_null(uri);
  memcpy(uri, "redis://", 8);
  memset(uri + 8, 'a', big - 8);
  uri[big] = '\0';
  assert_rejected(uri);
  free(uri);
}

static void test_reject_after_bracket(void **state) {
  (void)state;
  assert_rejected("redis://[::1]x");
  assert_rejected("redis://[::1]x:6379");
  assert_rejected("redis://[::1]6379");
  assert_rejected("redis://[::1]]:6379");
  assert_rejected("redis://[::1");
  assert_rejected("redis://[::1:6379");
  assert_rejected("redis://[::1]:6379x");
}

static void test_reject_clears_partial(void **state) {
  (void)state;
  /* The credentials are parsed before the bad port is seen: they must be
   * freed and the struct zeroed (ASan reports a leak otherwise). */
  node_addr_t a;
  assert_int_equal(uri_parse("redis://user:pw@h:0", &a, NULL, 0), REDLOCK_EINVAL);
  assert_addr_zero(&a);
  assert_int_equal(uri_parse("redis://user:pw@h/zz", &a, NULL, 0), REDLOCK_EINVAL);
  assert_addr_zero(&a);
  assert_int_equal(uri_parse("redis://user:pw@[::1]x", &a, NULL, 0), REDLOCK_EINVAL);
  assert_addr_zero(&a);
}

/* ---- copy / clear ---------------------------------------------------------------- */

static void assert_addr_equal_distinct(const node_addr_t *x, const node_addr_t *y) {
  assert_int_equal(x->kind, y->kind);
  assert_int_equal(x->port, y->port);
  assert_int_equal(x->db, y->db);
#define SAME_STR(field)                                                                            \
  do {                                                                                             \
    if (x->field == NULL) {                                                                        \
      assert_null(y->field);                                                                       \
    } else {                                                                                       \
      assert_non_null(y->field);                                                                   \
      assert_string_equal(x->field, y->field);                                                     \
      assert_ptr_not_equal(x->field, y->field);                                                    \
    }                                                                                              \
  } while (0)
  SAME_STR(host);
  SAME_STR(path);
  SAME_STR(user);
  SAME_STR(password);
  SAME_STR(label);
  SAME_STR(master_name);
  SAME_STR(sentinel_user);
  SAME_STR(sentinel_password);
  assert_int_equal(x->voter, y->voter);
  assert_memory_equal(&x->ack, &y->ack, sizeof x->ack);
  assert_int_equal(x->n_seeds, y->n_seeds);
  for (unsigned i = 0; i < x->n_seeds; i++) {
    assert_string_equal(x->seeds[i].host, y->seeds[i].host);
    assert_ptr_not_equal(x->seeds[i].host, y->seeds[i].host);
    assert_int_equal(x->seeds[i].port, y->seeds[i].port);
  }
#undef SAME_STR
}

static void test_copy_clear_round_trip(void **state) {
  (void)state;
  static const char *const uris[] = {
      "redis://alice:pw%21@[::1]:6380/7",
      "redis://h",
      "redis://:only@h:1",
      "unix:///var/run/redis.sock",
      "redis-sentinel://u:p@a:1,[::1]:2,c/mymaster/3?wait=1&sentinel_user=s&sentinel_password=t",
      "redis-cluster://a,b:7001?waitaof=1,1&wait_ms=50",
  };
  for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
    node_addr_t src, dst, again;
    parse_ok(uris[i], &src);
    assert_int_equal(node_addr_copy(&dst, &src), 0);
    assert_addr_equal_distinct(&src, &dst);
    /* The copy outlives the original. */
    node_addr_t keep;
    assert_int_equal(node_addr_copy(&keep, &src), 0);
    node_addr_clear(&src);
    assert_addr_zero(&src);
    assert_addr_equal_distinct(&keep, &dst);
    /* Copying a copy gives the same again. */
    assert_int_equal(node_addr_copy(&again, &dst), 0);
    assert_addr_equal_distinct(&dst, &again);
    node_addr_clear(&again);
    node_addr_clear(&keep);
    node_addr_clear(&dst);
    assert_addr_zero(&dst);
    /* Clearing twice is harmless. */
    node_addr_clear(&dst);
    assert_addr_zero(&dst);
  }
  /* The password survives the copy exactly. */
  node_addr_t a, b;
  parse_ok("redis://alice:pw%21@h", &a);
  assert_int_equal(node_addr_copy(&b, &a), 0);
  assert_string_equal(b.password, "pw!");
  assert_string_equal(b.user, "alice");
  node_addr_clear(&a);
  node_addr_clear(&b);
}

static void test_same_master(void **state) {
  (void)state;
  static const struct {
    const char *a, *b;
    int same;
  } cases[] = {
      {"redis://h:1", "redis://h:1", 1},
      {"redis://h:1", "redis://u:p@H:1/4", 1},
      {"redis://h", "redis://h:6379", 1},
      {"redis://h:1", "redis://h:2", 0},
      {"redis://h:1", "redis://g:1", 0},
      {"redis://[::1]:1", "redis://[::1]:1", 1},
      {"unix:///a/s", "unix:///a/s", 1},
      {"unix:///a/s", "unix:///a/t", 0},
      {"unix:///a/s", "redis://a:1", 0},
      /* Numeric hosts as addresses, in every form a lookup takes as a
       * number; names by their letters only. */
      {"redis://127.0.0.1:1", "redis://127.1:1", 1},
      {"redis://127.0.0.1:1", "redis://2130706433:1", 1},
      {"redis://127.0.0.1:1", "redis://0x7f.0.0.1:1", 1},
      {"redis://127.0.0.1:1", "redis://0177.0.0.1:1", 1},
      {"redis://127.0.0.1:1", "redis://[::ffff:127.0.0.1]:1", 1},
      {"redis://127.0.0.1:1", "redis://[::FFFF:7f00:1]:1", 1},
      {"redis://[::1]:1", "redis://[0:0::1]:1", 1},
      {"redis://[::1]:1", "redis://[0000:0000:0000:0000:0000:0000:0000:0001]:1", 1},
      {"redis://[2001:db8::a]:1", "redis://[2001:DB8:0::A]:1", 1},
      {"redis://localhost:1", "redis://LOCALHOST:1", 1},
      {"redis://127.0.0.1:1", "redis://127.1:2", 0},
      {"redis://127.0.0.1:1", "redis://127.0.0.2:1", 0},
      {"redis://127.0.0.1:1", "redis://[::1]:1", 0},
      {"redis://[::1]:1", "redis://[::ffff:0:1]:1", 0},
      {"redis://localhost:1", "redis://127.0.0.1:1", 0},
      {"redis://1.2.3.4.5:1", "redis://1.2.3.4:1", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    node_addr_t a, b;
    assert_int_equal(uri_parse(cases[i].a, &a, NULL, 0), 0);
    assert_int_equal(uri_parse(cases[i].b, &b, NULL, 0), 0);
    assert_int_equal(node_addr_same_master(&a, &b), cases[i].same);
    assert_int_equal(node_addr_same_master(&b, &a), cases[i].same);
    node_addr_clear(&a);
    node_addr_clear(&b);
  }
}

/* ---- voter URIs and PARAMS --------------------------------------------------------- */

static void test_sentinel(void **state) {
  (void)state;
  node_addr_t a;
  parse_ok("redis-sentinel://u:p%40w@10.0.0.1,[::1]:26380,s3:1/my%2Dm/5", &a);
  assert_int_equal(a.voter, VOTER_KIND_SENTINEL);
  assert_int_equal(a.n_seeds, 3);
  assert_string_equal(a.seeds[0].host, "10.0.0.1");
  assert_int_equal(a.seeds[0].port, URI_SENTINEL_PORT);
  assert_string_equal(a.seeds[1].host, "::1");
  assert_int_equal(a.seeds[1].port, 26380);
  assert_string_equal(a.seeds[2].host, "s3");
  assert_int_equal(a.seeds[2].port, 1);
  assert_string_equal(a.host, "10.0.0.1"); /* the first sentinel */
  assert_int_equal(a.port, URI_SENTINEL_PORT);
  assert_string_equal(a.master_name, "my-m");
  assert_int_equal(a.db, 5);
  assert_string_equal(a.user, "u"); /* the master's */
  assert_string_equal(a.password, "p@w");
  assert_null(a.sentinel_user);
  assert_string_equal(a.label, "my-m@10.0.0.1:26379");
  assert_int_equal(a.tls, 0);
  node_addr_clear(&a);
  parse_ok("redis-sentinel://h/m?sentinel_user=su&sentinel_password=s%26p", &a);
  assert_string_equal(a.sentinel_user, "su");
  assert_string_equal(a.sentinel_password, "s&p");
  assert_null(a.user);
  assert_int_equal(a.db, 0);
  node_addr_clear(&a);
  /* a '?' inside the credentials is not the start of PARAMS */
  parse_ok("redis-sentinel://:p?q@h/m", &a);
  assert_string_equal(a.password, "p?q");
  node_addr_clear(&a);
  assert_rejected("redis-sentinel://h");
  assert_rejected("redis-sentinel://h/");
  assert_rejected("redis-sentinel://h//2");
  assert_rejected("redis-sentinel://h/m/x");
  assert_rejected("redis-sentinel://h,/m");
  assert_rejected("redis-sentinel://,h/m");
  assert_rejected("redis-sentinel://h:0/m");
  assert_rejected("redis-sentinel://h/m%00");
  assert_rejected("redis-sentinel://h/m%20");
  assert_rejected("redis-sentinel://h/m?wait=x");
}

static void test_cluster(void **state) {
  (void)state;
  node_addr_t a;
  parse_ok("redis-cluster://:pw@n1:7000,n2:7001,n3", &a);
  assert_int_equal(a.voter, VOTER_KIND_CLUSTER);
  assert_int_equal(a.n_seeds, 3);
  assert_int_equal(a.seeds[2].port, URI_REDIS_PORT);
  assert_string_equal(a.label, "cluster@n1:7000");
  assert_string_equal(a.password, "pw");
  assert_null(a.master_name);
  node_addr_clear(&a);
  assert_rejected("redis-cluster://n1/3");
  assert_rejected("redis-cluster://n1?sentinel_user=x");
  char many[512] = "redis-cluster://";
  for (int i = 0; i <= URI_MAX_SEEDS; i++)
    strcat(many, i ? ",h" : "h");
  assert_rejected(many);
}

static void test_params(void **state) {
  (void)state;
  node_addr_t a;
  char buf[64];
  parse_ok("redis://h:1/2?wait=2", &a);
  assert_int_equal(a.ack.mode, ACK_WAIT);
  assert_int_equal(a.ack.replicas, 2);
  assert_int_equal(a.ack.timeout_ms, 0);
  assert_int_equal(a.db, 2);
  uri_ack_describe(&a.ack, buf, sizeof buf);
  assert_string_equal(buf, "wait=2");
  node_addr_clear(&a);
  parse_ok("redis://h?waitaof=1,0&wait_ms=250", &a);
  assert_int_equal(a.ack.mode, ACK_WAITAOF);
  assert_int_equal(a.ack.local, 1);
  assert_int_equal(a.ack.replicas, 0);
  assert_int_equal(a.ack.timeout_ms, 250);
  assert_string_equal(a.label, "h:6379");
  uri_ack_describe(&a.ack, buf, sizeof buf);
  assert_string_equal(buf, "waitaof=1,0 wait_ms=250");
  node_addr_clear(&a);
  parse_ok("unix:///tmp/r.sock?waitaof=0,1", &a);
  assert_string_equal(a.path, "/tmp/r.sock");
  assert_int_equal(a.ack.replicas, 1);
  node_addr_clear(&a);
  parse_ok("redis://h", &a);
  uri_ack_describe(&a.ack, buf, sizeof buf);
  assert_string_equal(buf, "");
  node_addr_clear(&a);
  static const char *const bad[] = {
      "redis://h?",
      "redis://h?wait",
      "redis://h?wait=",
      "redis://h?wait=0",
      "redis://h?wait=-1",
      "redis://h?wait=1001",
      "redis://h?wait=1&wait=2",
      "redis://h?wait=1&",
      "redis://h?&wait=1",
      "redis://h?waitaof=1",
      "redis://h?waitaof=2,0",
      "redis://h?waitaof=0,0",
      "redis://h?waitaof=1,",
      "redis://h?waitaof=,1",
      "redis://h?wait=1&waitaof=1,0",
      "redis://h?wait_ms=5",
      "redis://h?wait=1&wait_ms=0",
      "redis://h?wait=1&wait_ms=3600001",
      "redis://h?nope=1",
      "redis://h?sentinel_user=x",
      "unix:///s?x=1",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_rejected(bad[i]);
}

static void test_group_same_master(void **state) {
  (void)state;
  static const struct {
    const char *a, *b;
    int same;
  } cases[] = {
      {"redis-sentinel://a,b/m", "redis-sentinel://c,B/m", 1},
      {"redis-sentinel://a,b/m", "redis-sentinel://a/n", 0},
      {"redis-sentinel://a,b/m", "redis-sentinel://c/m", 0},
      {"redis-sentinel://a:26379/m", "redis://a:26379", 0},
      {"redis-cluster://a:1,b:2", "redis-cluster://b:2", 1},
      {"redis-cluster://a:1", "redis-cluster://a:2", 0},
      {"redis-cluster://a:1", "redis://a:1", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    node_addr_t a, b;
    assert_int_equal(uri_parse(cases[i].a, &a, NULL, 0), 0);
    assert_int_equal(uri_parse(cases[i].b, &b, NULL, 0), 0);
    assert_int_equal(node_addr_same_master(&a, &b), cases[i].same);
    assert_int_equal(node_addr_same_master(&b, &a), cases[i].same);
    node_addr_clear(&a);
    node_addr_clear(&b);
  }
}

/* The scheme table the parser uses, as uri_scheme_of / uri_scheme_at show
 * it: every scheme once, each found by itself, and nothing else. */
static void test_scheme_table(void **state) {
  (void)state;
  size_t n = 0;
  for (const uri_scheme_t *s; (s = uri_scheme_at(n)) != NULL; n++) {
    assert_ptr_equal(uri_scheme_of(s->scheme), s);
    char uri[64];
    snprintf(uri, sizeof uri, "%shost", s->scheme);
    assert_ptr_equal(uri_scheme_of(uri), s);
  }
  assert_int_equal(n, 7);
  assert_int_equal(uri_scheme_of("rediss-cluster://h")->voter, VOTER_KIND_CLUSTER);
  assert_true(uri_scheme_of("rediss-cluster://h")->tls);
  assert_null(uri_scheme_of("http://h"));
  assert_null(uri_scheme_of("redis:/h"));
  assert_null(uri_scheme_of(""));
}

UNIT_MAIN(cmocka_unit_test(test_plain_host), cmocka_unit_test(test_port_and_db),
          cmocka_unit_test(test_password_only), cmocka_unit_test(test_user_and_password),
          cmocka_unit_test(test_percent_decoding), cmocka_unit_test(test_ipv6),
          cmocka_unit_test(test_unix), cmocka_unit_test(test_max_length_uri),
          cmocka_unit_test(test_label_never_has_password),
          cmocka_unit_test(test_err_msg_optional_and_truncated),
          cmocka_unit_test(test_err_msg_never_has_password), cmocka_unit_test(test_redact),
          cmocka_unit_test(test_redact_sizes), cmocka_unit_test(test_reject_empty_null),
          cmocka_unit_test(test_reject_scheme), cmocka_unit_test(test_reject_missing_host),
          cmocka_unit_test(test_reject_port), cmocka_unit_test(test_reject_db),
          cmocka_unit_test(test_reject_userinfo), cmocka_unit_test(test_reject_percent),
          cmocka_unit_test(test_reject_control_chars), cmocka_unit_test(test_reject_bad_host_chars),
          cmocka_unit_test(test_reject_unix), cmocka_unit_test(test_reject_overlong),
          cmocka_unit_test(test_rediss), cmocka_unit_test(test_reject_after_bracket),
          cmocka_unit_test(test_reject_clears_partial),
          cmocka_unit_test(test_copy_clear_round_trip), cmocka_unit_test(test_same_master),
          cmocka_unit_test(test_sentinel), cmocka_unit_test(test_cluster),
          cmocka_unit_test(test_params), cmocka_unit_test(test_group_same_master),
          cmocka_unit_test(test_scheme_table))
