/* tls.c: TLS for rediss:// masters (see tls.h for why we build the SSL
 * objects ourselves instead of using hiredis' redisCreateSSLContext). */
#include "util/tls.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "redlock.h"
#include "util/alloc.h"
#include "util/options.h"
#include "util/resolve.h"
#include "util/strutil.h"

/* Files must be readable regular files and the directory a readable
 * directory; checked in any build, so that a mistyped path is named even
 * where TLS itself is missing. */
static status_t check_path(const char *what, const char *path, int want_dir, char *why,
                           size_t why_len) {
  struct stat st;
  if (path == NULL)
    return ST_OK;
  if (path[0] == '\0') {
    snprintf(why, why_len, "%s: empty path", what);
    return ST_EINVAL;
  }
  if (stat(path, &st) != 0) {
    snprintf(why, why_len, "%s %s: %s", what, path, strerror(errno));
    return ST_EINVAL;
  }
  if (want_dir) {
    DIR *d = S_ISDIR(st.st_mode) ? opendir(path) : NULL;
    if (d == NULL) {
      snprintf(why, why_len, "%s %s: %s", what, path,
               S_ISDIR(st.st_mode) ? strerror(errno) : "not a directory");
      return ST_EINVAL;
    }
    closedir(d);
    return ST_OK;
  }
  FILE *f = S_ISREG(st.st_mode) ? fopen(path, "r") : NULL;
  if (f == NULL) {
    snprintf(why, why_len, "%s %s: %s", what, path,
             S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
    return ST_EINVAL;
  }
  fclose(f);
  return ST_OK;
}

static status_t check_paths(const char *ca_file, const char *ca_dir, const char *cert_file,
                            const char *key_file, char *why, size_t why_len) {
  if ((cert_file == NULL) != (key_file == NULL)) {
    snprintf(why, why_len, "a client certificate needs both cert_file and key_file");
    return ST_EINVAL;
  }
  status_t rc = check_path("CA file", ca_file, 0, why, why_len);
  if (rc == ST_OK)
    rc = check_path("CA directory", ca_dir, 1, why, why_len);
  if (rc == ST_OK)
    rc = check_path("certificate file", cert_file, 0, why, why_len);
  if (rc == ST_OK)
    rc = check_path("key file", key_file, 0, why, why_len);
  return rc;
}

#ifdef REDLOCK_HAVE_TLS

#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct tls_client {
  SSL_CTX *ctx;
  char *server_name; /* NULL: each master's URI host */
  int verify;
};

const char *tls_unsupported_reason(void) { return NULL; }

void tls_clear_errors(void) { ERR_clear_error(); }

/* The most specific OpenSSL reason queued on this thread ("no start line",
 * "key values mismatch"), then the queue is emptied.  fallback when none. */
static const char *ssl_reason(char *buf, size_t len, const char *fallback) {
  unsigned long e = ERR_peek_last_error();
  const char *reason = e != 0 ? ERR_reason_error_string(e) : NULL;
  if (reason != NULL)
    snprintf(buf, len, "%s", reason);
  else if (e != 0)
    ERR_error_string_n(e, buf, len);
  else
    snprintf(buf, len, "%s", fallback);
  ERR_clear_error();
  return buf;
}

/* The passphrase callback of every SSL_CTX of ours.  OpenSSL's default
 * prompts on the terminal ("Enter PEM pass phrase:") and blocks the caller
 * (the loop thread, or redlock_open) until someone types; a library has no
 * terminal to ask.  So an encrypted key fails to load at once, and *arg (an
 * int, set by ctx_load while it loads the key) records why. */
static int refuse_passphrase(char *buf, int size, int rwflag, void *arg) {
  (void)buf;
  (void)size;
  (void)rwflag;
  if (arg != NULL)
    *(int *)arg = 1;
  return -1;
}

/* Loads the client's private key; ST_OK or ST_EINVAL with why. */
static status_t key_load(SSL_CTX *ctx, const char *cert_file, const char *key_file, char *why,
                         size_t why_len) {
  char reason[200];
  int encrypted = 0;
  SSL_CTX_set_default_passwd_cb_userdata(ctx, &encrypted);
  int ok = SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) == 1;
  SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL); /* &encrypted dies here */
  if (ok)
    return ST_OK;
  if (encrypted)
    snprintf(why, why_len,
             "the key in %s is encrypted: passphrases are not supported; decrypt it (openssl "
             "pkey -in KEY -out PLAIN_KEY) and protect the file by its permissions",
             key_file);
  /* OpenSSL checks the key against the certificate as it loads it. */
  else if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
    snprintf(why, why_len, "the key in %s does not match the certificate in %s", key_file,
             cert_file);
  else
    snprintf(why, why_len, "cannot load the key file %s: %s", key_file,
             ssl_reason(reason, sizeof reason, "no key"));
  ERR_clear_error();
  return ST_EINVAL;
}

/* Loads trust and identity into ctx; ST_OK or ST_EINVAL with why. */
static status_t ctx_load(SSL_CTX *ctx, const char *ca_file, const char *ca_dir,
                         const char *cert_file, const char *key_file, char *why, size_t why_len) {
  char reason[200];
  if (ca_file != NULL || ca_dir != NULL) {
    if (SSL_CTX_load_verify_locations(ctx, ca_file, ca_dir) != 1) {
      snprintf(why, why_len, "cannot load the CA %s %s: %s", ca_file ? "file" : "directory",
               ca_file ? ca_file : ca_dir, ssl_reason(reason, sizeof reason, "no certificate"));
      return ST_EINVAL;
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    snprintf(why, why_len, "cannot load the system's trust store: %s",
             ssl_reason(reason, sizeof reason, "unknown error"));
    return ST_EINVAL;
  }
  if (cert_file == NULL)
    return ST_OK;
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
    snprintf(why, why_len, "cannot load the certificate file %s: %s", cert_file,
             ssl_reason(reason, sizeof reason, "no certificate"));
    return ST_EINVAL;
  }
  status_t rc = key_load(ctx, cert_file, key_file, why, why_len);
  if (rc != ST_OK)
    return rc;
  if (SSL_CTX_check_private_key(ctx) != 1) {
    snprintf(why, why_len, "the key in %s does not match the certificate in %s: %s", key_file,
             cert_file, ssl_reason(reason, sizeof reason, "mismatch"));
    return ST_EINVAL;
  }
  return ST_OK;
}

/* A TLS client context with our defaults in *out; ST_ENOMEM with why. */
static status_t ctx_new(SSL_CTX **out, char *why, size_t why_len) {
  char reason[200];
  /* Explicit for OpenSSL 1.1.0 builds; a no-op once initialised, and
   * thread-safe, so no global flag of ours is needed. */
  OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL);
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == NULL) {
    snprintf(why, why_len, "cannot create a TLS context: %s",
             ssl_reason(reason, sizeof reason, "out of memory"));
    return ST_ENOMEM;
  }
  /* Redis supports TLS 1.2 and 1.3; older versions are broken. */
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_default_passwd_cb(ctx, refuse_passphrase);
  *out = ctx;
  return ST_OK;
}

status_t tls_check_files(const char *ca_file, const char *ca_dir, const char *cert_file,
                         const char *key_file, char *why, size_t why_len) {
  status_t rc = check_paths(ca_file, ca_dir, cert_file, key_file, why, why_len);
  if (rc != ST_OK)
    return rc;
  /* Parse them now into a scratch context: a bad PEM or a key that does not
   * match its certificate is a configuration error the caller should see
   * when setting the option, not as masters that never come up. */
  SSL_CTX *ctx = NULL;
  rc = ctx_new(&ctx, why, why_len);
  if (rc != ST_OK)
    return rc;
  if (ca_file != NULL || ca_dir != NULL || cert_file != NULL)
    rc = ctx_load(ctx, ca_file, ca_dir, cert_file, key_file, why, why_len);
  SSL_CTX_free(ctx);
  return rc;
}

status_t tls_client_new(tls_client_t **out, const struct redlock_options *opts, char *why,
                        size_t why_len) {
  *out = NULL;
  tls_client_t *tls = rl_calloc(1, sizeof *tls);
  if (tls == NULL) {
    snprintf(why, why_len, "out of memory");
    return ST_ENOMEM;
  }
  tls->verify = opts->tls_verify;
  if (opts->tls_server_name != NULL &&
      (tls->server_name = str_dup(opts->tls_server_name)) == NULL) {
    rl_free(tls);
    snprintf(why, why_len, "out of memory");
    return ST_ENOMEM;
  }
  status_t rc = ctx_new(&tls->ctx, why, why_len);
  if (rc == ST_OK)
    rc = ctx_load(tls->ctx, opts->tls_ca_file, opts->tls_ca_dir, opts->tls_cert_file,
                  opts->tls_key_file, why, why_len);
  if (rc != 0) {
    tls_client_free(tls);
    return rc;
  }
  /* The default for every SSL; tls_attach sets each one's mode and names. */
  SSL_CTX_set_verify(tls->ctx, tls->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
  *out = tls;
  return ST_OK;
}

void tls_client_free(tls_client_t *tls) {
  if (tls == NULL)
    return;
  SSL_CTX_free(tls->ctx);
  rl_free(tls->server_name);
  rl_free(tls);
}

status_t tls_attach(tls_client_t *tls, struct redisContext *c, const char *host, void **out,
                    char *why, size_t why_len) {
  char reason[200];
  *out = NULL;
  const char *name = tls->server_name != NULL ? tls->server_name : host;
  int is_ip = resolve_is_numeric(name);
  ERR_clear_error();
  SSL *ssl = SSL_new(tls->ctx);
  if (ssl == NULL) {
    snprintf(why, why_len, "cannot start TLS: %s", ssl_reason(reason, sizeof reason, "no memory"));
    return ST_ENOMEM;
  }
  int ok = 1;
  /* SNI carries host names only (RFC 6066: never an address). */
  if (!is_ip)
    ok = SSL_set_tlsext_host_name(ssl, name) == 1;
  if (ok && tls->verify) {
    if (is_ip) {
      ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1;
    } else {
      /* "*.example.com" matches one whole label, never "foo*.example.com".
       * The name must be in the subjectAltName: OpenSSL would otherwise fall
       * back to the subject's CN when a certificate has no DNS entry, which
       * RFC 6125 (6.4.4) and browsers gave up long ago; a CN is free text
       * that some CAs never checked as a host name. */
      SSL_set_hostflags(ssl,
                        X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
      ok = SSL_set1_host(ssl, name) == 1;
    }
  }
  if (!ok) {
    snprintf(why, why_len, "cannot set the TLS server name %s: %s", name,
             ssl_reason(reason, sizeof reason, "invalid name"));
    SSL_free(ssl);
    return ST_EINVAL;
  }
  /* The connect is still under way: hiredis starts the handshake, which
   * completes through the context's reads and writes on our loop. */
  if (redisInitiateSSL(c, ssl) != REDIS_OK) {
    /* A blocking context (the CLI's) did the whole handshake here: say what
     * failed in it, hiredis' errstr being vaguer. */
    if (!tls_explain(ssl, 1, c->errstr, why, why_len))
      snprintf(why, why_len, "cannot start TLS: %s", c->errstr[0] ? c->errstr : "unknown error");
    /* On failure hiredis did not take the SSL. */
    SSL_free(ssl);
    return ST_EIO;
  }
  *out = ssl;
  return ST_OK;
}

/* 1 when the master sent its certificate: the TCP connection was up and the
 * handshake under way. */
static int peer_answered(const SSL *ssl) {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  return SSL_get0_peer_certificate(ssl) != NULL;
#else
  X509 *cert = SSL_get_peer_certificate(ssl);
  X509_free(cert);
  return cert != NULL;
#endif
}

/* 1 when the master's certificate (which failed the name check) has no DNS
 * name in a subjectAltName: its name can only be in the CN, which we do not
 * read (X509_CHECK_FLAG_NEVER_CHECK_SUBJECT).  The peer chain, not the peer
 * certificate: OpenSSL records the latter only once verification passed. */
static int cn_only(const SSL *ssl) {
  STACK_OF(X509) *chain = SSL_get_peer_cert_chain(ssl);
  X509 *leaf = chain != NULL && sk_X509_num(chain) > 0 ? sk_X509_value(chain, 0) : NULL;
  if (leaf == NULL)
    return 0;
  GENERAL_NAMES *names = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
  int dns = 0;
  for (int i = 0; names != NULL && i < sk_GENERAL_NAME_num(names); i++)
    dns |= sk_GENERAL_NAME_value(names, i)->type == GEN_DNS;
  GENERAL_NAMES_free(names);
  return !dns;
}

int tls_handshaking(void *ssl_ptr) {
  SSL *ssl = ssl_ptr;
  return ssl != NULL && !SSL_in_before(ssl) && !SSL_is_init_finished(ssl);
}

int tls_explain(void *ssl_ptr, int setting_up, const char *io_error, char *why, size_t why_len) {
  SSL *ssl = ssl_ptr;
  char reason[200];
  if (ssl == NULL || SSL_in_before(ssl))
    return 0; /* no TLS byte went out: the TCP connect itself failed */
  long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    const char *name = verify == X509_V_ERR_HOSTNAME_MISMATCH
                           ? X509_VERIFY_PARAM_get0_host(SSL_get0_param(ssl), 0)
                           : NULL;
    snprintf(why, why_len, "certificate verify failed: %s%s%s%s%s",
             X509_verify_cert_error_string(verify), name ? " (the certificate is not for " : "",
             name ? name : "", name ? ")" : "",
             name && cn_only(ssl) ? "; it names no host in a subjectAltName, and a name in the "
                                    "subject's CN alone is not accepted"
                                  : "");
    ERR_clear_error();
    return 1;
  }
  if (ERR_peek_last_error() != 0) {
    snprintf(why, why_len, "TLS error: %s", ssl_reason(reason, sizeof reason, "unknown error"));
    return 1;
  }
  if (setting_up && peer_answered(ssl)) {
    /* A master that requires a client certificate (TLS 1.3) rejects a
     * missing or untrusted one after our side of the handshake is done; its
     * alert is lost when the reset that follows arrives first.  Only when
     * the master did answer the handshake: a connect refused or reset
     * before that is not a TLS matter. */
    snprintf(why, why_len,
             "%s while setting up TLS (a master that requires client certificates drops "
             "clients that send none or one it does not trust)",
             io_error != NULL && io_error[0] != '\0' ? io_error : "connection closed");
    return 1;
  }
  return 0;
}

#else /* !REDLOCK_HAVE_TLS */

const char *tls_unsupported_reason(void) {
#ifdef REDLOCK_TLS_MISSING
  return "this build has no TLS (" REDLOCK_TLS_MISSING ")";
#else
  return "this build has no TLS (built with REDLOCK_TLS=OFF)";
#endif
}

status_t tls_check_files(const char *ca_file, const char *ca_dir, const char *cert_file,
                         const char *key_file, char *why, size_t why_len) {
  status_t rc = check_paths(ca_file, ca_dir, cert_file, key_file, why, why_len);
  if (rc != ST_OK)
    return rc;
  snprintf(why, why_len, "%s", tls_unsupported_reason());
  return ST_ENOTSUP;
}

status_t tls_client_new(tls_client_t **out, const struct redlock_options *opts, char *why,
                        size_t why_len) {
  (void)opts;
  *out = NULL;
  snprintf(why, why_len, "%s", tls_unsupported_reason());
  return ST_ENOTSUP;
}

void tls_client_free(tls_client_t *tls) { (void)tls; }

status_t tls_attach(tls_client_t *tls, struct redisContext *c, const char *host, void **out,
                    char *why, size_t why_len) {
  (void)tls;
  (void)c;
  (void)host;
  *out = NULL;
  snprintf(why, why_len, "%s", tls_unsupported_reason());
  return ST_ENOTSUP;
}

void tls_clear_errors(void) {}

int tls_handshaking(void *ssl) {
  (void)ssl;
  return 0;
}

int tls_explain(void *ssl, int setting_up, const char *io_error, char *why, size_t why_len) {
  (void)ssl;
  (void)setting_up;
  (void)io_error;
  (void)why;
  (void)why_len;
  return 0;
}

#endif
