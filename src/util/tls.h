/* tls.h: TLS for rediss:// masters, on OpenSSL through hiredis_ssl.
 *
 * hiredis' own redisCreateSSLContext() only sets SNI: it never checks that
 * the master's certificate is for the host we meant to reach, so anyone with
 * any certificate from a trusted authority could pose as a master.  Hence we
 * make the SSL_CTX (one per client) and each connection's SSL ourselves, turn
 * on host-name (SSL_set1_host) or IP-address (X509_VERIFY_PARAM_set1_ip_asc)
 * checking, and hand the SSL to hiredis with redisInitiateSSL().
 *
 * Built with REDLOCK_HAVE_TLS (CMake: REDLOCK_TLS); without it every entry
 * point here reports that TLS is not supported.  Loop thread only, except
 * tls_check_files (any thread: it touches nothing shared). */
#ifndef REDLOCK_TLS_H
#define REDLOCK_TLS_H

#include <stddef.h>

struct redlock_options;
struct redisContext;

typedef struct tls_client tls_client_t;

/* Why TLS is unavailable in this build (for messages); NULL when it is. */
const char *tls_unsupported_reason(void);

/* Reads and parses the files the way tls_client_new will, so that bad paths
 * or contents are refused when they are set, not when a client opens.  0, or
 * REDLOCK_EINVAL / REDLOCK_ENOTSUP with the reason in why. */
int tls_check_files(const char *ca_file, const char *ca_dir, const char *cert_file,
                    const char *key_file, char *why, size_t why_len);

/* The client's SSL_CTX from its options: trust store, client certificate.
 * 0, or a REDLOCK_E* code with the reason in why. */
int tls_client_new(tls_client_t **out, const struct redlock_options *opts, char *why,
                   size_t why_len);
void tls_client_free(tls_client_t *tls);

/* Starts TLS on a connecting (non-blocking) context for a master whose URI
 * host is `host`: SNI and the name checked are the server-name option or
 * host.  On a blocking context (the CLI's status) the whole handshake runs
 * here.  Returns the SSL (owned by hiredis from now on, freed with the
 * context) for tls_explain, or NULL with the reason in why. */
void *tls_attach(tls_client_t *tls, struct redisContext *c, const char *host, char *why,
                 size_t why_len);

/* 1 while the TLS handshake on this SSL has begun (our hello went out) but
 * not finished; 0 otherwise, and always without TLS support. */
int tls_handshaking(void *ssl);

/* Forgets OpenSSL errors queued on this thread, so that an explanation found
 * after the next read or write belongs to this connection. */
void tls_clear_errors(void);

/* After a connection with this SSL failed: writes why, when TLS was the
 * cause ("certificate verify failed: hostname mismatch", "TLS error: tlsv13
 * alert certificate required", ...), and returns 1; returns 0 when TLS has
 * nothing to say (the TCP connect failed, or a plain I/O error on a
 * connection that worked).  setting_up: no reply came over the connection
 * yet; io_error: hiredis' description of the failure, used in the hint for
 * a connection that the master dropped while TLS was being set up. */
int tls_explain(void *ssl, int setting_up, const char *io_error, char *why, size_t why_len);

#endif
