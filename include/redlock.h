/* redlock.h: the public API of redlock-c, a Redlock client for C.
 *
 * Redlock takes a lock on N independent Redis masters: a lock is held when a
 * majority (N/2 + 1) of them accepted `SET key value NX PX ttl` and time is left
 * on it.  This header is the whole contract; it has no libuv or hiredis types.
 * redlock_uv.h adds the calls that attach a client to a caller's libuv loop.
 *
 * Conventions (as in libuv and c-ares):
 *  - Handles are opaque.  Every call that can fail returns int: 0 (REDLOCK_OK)
 *    or a negative REDLOCK_E* code; constructors return NULL on failure.
 *  - A call that returns an error never runs its callback.  A call that
 *    returns 0 runs its callback exactly once, on the client's loop thread.
 *  - Blocking calls are safe from any number of threads at once, but not from
 *    the client's own loop thread (they return REDLOCK_EWOULDBLOCK there).
 *  - Strings passed in are copied; strings returned are owned by the library.
 *
 * ABI policy: see docs/api.md.  Within a major version (the SONAME) functions
 * are only added, never changed or removed; error codes keep their values.
 */
#ifndef REDLOCK_H
#define REDLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(REDLOCK_STATIC)
#define REDLOCK_EXPORT
#elif defined(_WIN32)
#ifdef REDLOCK_BUILDING
#define REDLOCK_EXPORT __declspec(dllexport)
#else
#define REDLOCK_EXPORT __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define REDLOCK_EXPORT __attribute__((visibility("default")))
#else
#define REDLOCK_EXPORT
#endif

#define REDLOCK_VERSION_MAJOR 0
#define REDLOCK_VERSION_MINOR 1
#define REDLOCK_VERSION_PATCH 0
#define REDLOCK_VERSION_STRING "0.1.0"

/* Limits on input; longer or out-of-range input is refused with REDLOCK_EINVAL. */
#define REDLOCK_MAX_NODES 64          /* masters per client */
#define REDLOCK_MAX_RESOURCE_LEN 1024 /* bytes in a resource name, at least 1 */
#define REDLOCK_MAX_PREFIX_LEN 256    /* bytes in the key prefix */
#define REDLOCK_MAX_MANY 64           /* resources in one redlock_lock_many() */
#define REDLOCK_MAX_OWNER 64          /* bytes in an owner label */

/* Names the library uses on the masters besides the lock keys (a wire
 * contract: other clients that share the keys use the same names).  The
 * lock key itself is key prefix + resource, as every Redlock client's.  Its
 * other names hash to the lock key's Redis Cluster slot: with tagged(key) =
 * key when the key has a hash tag (a '{', then a '}' after at least one
 * byte), else "{" + key + "}",
 *   - a release PUBLISHes on REDLOCK_RELEASE_CHANNEL_PREFIX + tagged(key),
 *     which is what wakes redlock_lock_wait;
 *   - with fencing, the key's fencing counter is the key
 *     REDLOCK_FENCE_KEY_PREFIX + tagged(key).
 * E.g. "orders:42": "__redlock_fence__:{orders:42}"; "{user7}:cart":
 * "__redlock_fence__:{user7}:cart".  (A key with no tag that contains a '}',
 * "a}b", cannot share its slot: its names are built the same way, and only a
 * cluster voter minds.) */
#define REDLOCK_RELEASE_CHANNEL_PREFIX "__redlock_release__:"
#define REDLOCK_FENCE_KEY_PREFIX "__redlock_fence__:"
/* Every name above starts with REDLOCK_RESERVED_PREFIX: a lock key (key
 * prefix + resource, name or election name) that starts with it is refused
 * with REDLOCK_EINVAL (and a WARN log line saying why), since a fenced lock
 * on another resource would overwrite it.  So is a lock key that is one of
 * a semaphore's or read-write lock's keys (below: a key with a hash tag
 * that ends in ":sem:" + a slot number below REDLOCK_MAX_SEM_LIMIT,
 * ":sem:limit", ":rw:write", ":rw:read" or ":rw:intent").  Resources "x"
 * and "{x}" share every derived name (tagged(key) is the same) but not the
 * lock key: docs/api.md "Keys on the masters". */
#define REDLOCK_RESERVED_PREFIX "__redlock_"

/* Error codes.  XX(name, value, message).  The values are part of the ABI. */
#define REDLOCK_ERRNO_MAP(XX)                                                                      \
  XX(EINVAL, -1, "invalid argument")                                                               \
  XX(ENOMEM, -2, "out of memory")                                                                  \
  XX(ELOCKED, -3, "resource is locked by another holder on a quorum of masters")                   \
  XX(ENOQUORUM, -4, "too few Redis masters answered (down, timed out or errors)")                  \
  XX(EEXPIRED, -5, "quorum won but no validity left (the round took too long)")                    \
  XX(ELOST, -6, "lock is no longer held on a quorum of masters")                                   \
  XX(ETIMEDOUT, -7, "wait budget spent while the lock was held by another")                        \
  XX(ECANCELED, -8, "operation canceled")                                                          \
  XX(ECLOSED, -9, "client is closing or closed")                                                   \
  XX(EWOULDBLOCK, -10, "blocking call on the client's loop thread")                                \
  XX(EIO, -11, "I/O or system error")                                                              \
  XX(ENOTSUP, -12,                                                                                 \
     "not supported by this build or these masters (e.g. rediss:// without TLS support, a "        \
     "semaphore on masters that run no scripts)")                                                  \
  XX(EFORKED, -13, "client used in a forked child: open a new client in the child")

typedef enum {
  REDLOCK_OK = 0,
#define REDLOCK__ERR_ENUM(name, value, msg) REDLOCK_##name = (value),
  REDLOCK_ERRNO_MAP(REDLOCK__ERR_ENUM)
#undef REDLOCK__ERR_ENUM
} redlock_errno_t;

/* Log levels for redlock_options_set_log(). */
#define REDLOCK_LOG_DEBUG 0
#define REDLOCK_LOG_INFO 1
#define REDLOCK_LOG_WARN 2
#define REDLOCK_LOG_ERROR 3

/* Reasons passed to a redlock_watch() lost callback. */
#define REDLOCK_LOST_EXPIRED REDLOCK_ELOST /* validity ran out before an extension */

typedef struct redlock_options redlock_options_t;
typedef struct redlock redlock_t;           /* a client: N masters, connections, loop */
typedef struct redlock_lock redlock_lock_t; /* one held lock */

/* Callback types of redlock_options_set_log() and redlock_watch().  Named so
 * that callers and bindings can spell them once; the functions' types are
 * exactly those declared below (a typedef is not a new type). */
typedef void (*redlock_log_cb)(int level, const char *msg, void *arg);
typedef void (*redlock_lost_cb)(redlock_lock_t *lock, int reason, void *arg);

/* ---- Allocator -----------------------------------------------------------
 * The heap functions the library allocates with, as hiredis'
 * hiredisSetAllocators and libuv's uv_replace_allocator: every allocation
 * the library makes (clients, options, locks, their pools and free lists)
 * goes through the table, and with hiredis 1.x so do hiredis' own (this
 * points hiredis' process-wide allocators at it; NULL resets them).  hiredis
 * 0.14 has no such hook and keeps libc's; libuv's is the program's
 * (uv_replace_allocator); OpenSSL's are not touched.
 *
 * The functions keep the C contracts of malloc, calloc, realloc and free
 * (realloc(NULL, n) allocates); free_fn never sees NULL.  They may be called
 * from any thread (the client's loop thread and every calling thread), at
 * once.
 *
 * Process-wide, the library's one global setting: call it before the first
 * redlock_options_new / redlock_open*, or while no client is open and no
 * options object made under the previous table is left, and not
 * concurrently with any other call of the library.  NULL restores libc's
 * allocator.  REDLOCK_EINVAL: a table with a NULL function, or a client is
 * open (the table in use is kept).  The table is copied. */
typedef struct {
  void *(*malloc_fn)(size_t size);
  void *(*calloc_fn)(size_t n, size_t size);
  void *(*realloc_fn)(void *p, size_t size);
  void (*free_fn)(void *p);
} redlock_allocator_t;
REDLOCK_EXPORT int redlock_set_allocator(const redlock_allocator_t *a);

/* ---- Options -------------------------------------------------------------
 * An options object is filled by setters and read by redlock_open(), which
 * takes a snapshot: the options may be changed or freed afterwards.  Setters
 * return REDLOCK_EINVAL for NULL or out-of-range values and leave the option
 * unchanged.  Not thread-safe: use one options object from one thread.
 *
 * Defaults: retry 3 times, 200 ms + up to 200 ms jitter; connect 1000 ms;
 * request 100 ms; drift factor 0.01; max TTL 60 s; quarantine on; fencing off;
 * key prefix "" (redlock_options_get_* below read them from a fresh object).
 * A program that starts its own masters must wait out the restart
 * quarantine, shorten it with set_max_ttl(), or turn it off. */
REDLOCK_EXPORT redlock_options_t *redlock_options_new(void);
REDLOCK_EXPORT void redlock_options_free(redlock_options_t *opts);

/* redis://[[user]:password@]host[:port][/db]   (host may be [IPv6]; %XX escapes
 * are decoded in user and password), unix:///path/to/sock, and
 * rediss://... (the same, over TLS; see the TLS block below).  A build
 * without TLS refuses rediss:// with REDLOCK_ENOTSUP and logs why through the
 * options' log callback, when one is set. */
REDLOCK_EXPORT int redlock_options_add_node(redlock_options_t *opts, const char *uri);

/* Writes uri into buf (size bytes, NUL-terminated, cut to fit) with its
 * secrets replaced by "***": the password of the userinfo (or the whole
 * userinfo when it has no ':'), and the value of sentinel_password=.  Any
 * string is accepted, a URI the parser refuses included: a password holding
 * an unescaped '/', '?' or '@' is still hidden (more than the password may
 * be hidden then, never less).  For messages and logs that show a URI.
 * Returns the length of the whole redacted text, as snprintf does (a return
 * >= size means buf was cut), or REDLOCK_EINVAL when uri is NULL or buf is
 * NULL with size > 0 (buf may be NULL with size 0, to learn the length).
 * Any thread; no client needed. */
REDLOCK_EXPORT int redlock_uri_redact(const char *uri, char *buf, size_t size);

/* retry_count: extra attempts after the first (-1 = unbounded, 0 = one try).
 * Each retry waits delay_ms plus a random 0..jitter_ms. */
REDLOCK_EXPORT int redlock_options_set_retry(redlock_options_t *opts, int retry_count,
                                             uint32_t delay_ms, uint32_t jitter_ms);
/* 0 <= factor < 0.5: drift = ttl * factor + 2 ms is taken off every validity. */
REDLOCK_EXPORT int redlock_options_set_drift_factor(redlock_options_t *opts, double factor);
/* Both > 0.  connect_ms bounds connect + handshake; request_ms bounds each round. */
REDLOCK_EXPORT int redlock_options_set_timeouts(redlock_options_t *opts, uint32_t connect_ms,
                                                uint32_t request_ms);
/* Largest TTL a lock may have (> 0); also the quarantines' length.  A call
 * with a longer ttl gets REDLOCK_EINVAL and a WARN log line naming both
 * numbers and this setter. */
REDLOCK_EXPORT int redlock_options_set_max_ttl(redlock_options_t *opts, uint32_t max_ttl_ms);
/* enabled = 0 turns off the restart and failover quarantines (a master that
 * restarted, was promoted from a replica, or was replaced behind its address
 * votes at once: docs/safety.md §5, §5b). */
REDLOCK_EXPORT int redlock_options_set_quarantine(redlock_options_t *opts, int enabled);
REDLOCK_EXPORT int redlock_options_set_fencing(redlock_options_t *opts, int enabled);
/* Reentrancy (off by default): a thread that already holds a resource through
 * this client and locks it again (redlock_lock, trylock, lock_wait,
 * lock_async) gets at once, without asking the masters, a new handle sharing
 * the held lock: validity, value, fence and extension are shared, and the
 * lock is released in Redis when the last of its handles is unlocked.  Only
 * for a lock that is still valid and not lost; not for redlock_lock_many. */
REDLOCK_EXPORT int redlock_options_set_reentrant(redlock_options_t *opts, int enabled);
/* Key in Redis = prefix + resource.  At most REDLOCK_MAX_PREFIX_LEN bytes. */
REDLOCK_EXPORT int redlock_options_set_key_prefix(redlock_options_t *opts, const char *prefix);
/* Owner label: a name a person can read ("host:pid", "billing-worker-3")
 * carried in the value of every lock, permit, read/write hold and election
 * lease the client takes, so that redlock_inspect() (and any client that
 * reads the keys) can tell who holds a resource.  Anyone who can read the
 * masters reads it: never put a secret in it.  The value becomes the 32 hex
 * digits of its 128 random bits, '~', then the label; its random part keeps
 * it unique, and other Redlock clients only ever compare values whole, so
 * they still exclude and are excluded.  1..REDLOCK_MAX_OWNER bytes of
 * printable ASCII (0x21..0x7e) except '~'; NULL or "" clears it (the
 * default: the value is the 32 hex digits alone).  Anything else:
 * REDLOCK_EINVAL, the option unchanged.  Per client: every acquisition of a
 * client opened with these options carries the label. */
REDLOCK_EXPORT int redlock_options_set_owner(redlock_options_t *opts, const char *label);
/* A directory (absolute path; created with mode 0700 if missing) where the
 * clients of this user on this machine record when they first saw each
 * master's replication history (its run_id and replication id).  A master
 * promoted from a replica (or restarted from its own RDB file: INFO cannot
 * tell them apart) at a time INFO does not give is quarantined for max TTL
 * from its first sighting by any client that shares the directory, instead
 * of from this client's own first sighting: short-lived clients (a CLI run
 * from cron) then see it vote once max TTL has passed.  NULL or "" (the
 * default): none.  Records are trusted only when owned by this user, in a
 * directory nobody else can write.  EINVAL for a relative path or one
 * longer than 3072 bytes. */
REDLOCK_EXPORT int redlock_options_set_state_dir(redlock_options_t *opts, const char *dir);
/* cb runs on the client's loop thread with a NUL-terminated message; it must
 * not call blocking redlock functions.  cb == NULL turns logging off. */
REDLOCK_EXPORT int redlock_options_set_log(redlock_options_t *opts, int min_level,
                                           redlock_log_cb cb, void *arg);

/* Reading options back.  On a fresh object (redlock_options_new) they give
 * the library's defaults: bindings and programs that must fill in a partner
 * value of a setter (set_retry's delay when only the count is given, ...)
 * read it here instead of copying the default.  Each returns 0, or
 * REDLOCK_EINVAL for a NULL opts; a NULL out-pointer is skipped.  Same thread
 * rule as the setters (one thread per options object). */
REDLOCK_EXPORT int redlock_options_get_retry(const redlock_options_t *opts, int *retry_count,
                                             uint32_t *delay_ms, uint32_t *jitter_ms);
REDLOCK_EXPORT int redlock_options_get_drift_factor(const redlock_options_t *opts, double *factor);
REDLOCK_EXPORT int redlock_options_get_timeouts(const redlock_options_t *opts, uint32_t *connect_ms,
                                                uint32_t *request_ms);
REDLOCK_EXPORT int redlock_options_get_max_ttl(const redlock_options_t *opts, uint32_t *max_ttl_ms);
/* The three switches: *enabled = 1 or 0. */
REDLOCK_EXPORT int redlock_options_get_quarantine(const redlock_options_t *opts, int *enabled);
REDLOCK_EXPORT int redlock_options_get_fencing(const redlock_options_t *opts, int *enabled);
REDLOCK_EXPORT int redlock_options_get_reentrant(const redlock_options_t *opts, int *enabled);
/* *prefix points into opts (NUL-terminated, owned by opts): valid until the
 * next redlock_options_set_key_prefix() or redlock_options_free(). */
REDLOCK_EXPORT int redlock_options_get_key_prefix(const redlock_options_t *opts,
                                                  const char **prefix);
/* *label points into opts (NUL-terminated, owned by opts), "" when none:
 * valid until the next redlock_options_set_owner() or redlock_options_free(). */
REDLOCK_EXPORT int redlock_options_get_owner(const redlock_options_t *opts, const char **label);
/* *dir points into opts (owned by opts), NULL when none: valid until the next
 * redlock_options_set_state_dir() or redlock_options_free(). */
REDLOCK_EXPORT int redlock_options_get_state_dir(const redlock_options_t *opts, const char **dir);

/* ---- TLS (rediss:// masters) ------------------------------------------------
 * Built in when hiredis >= 1.0 with hiredis_ssl and OpenSSL were found (CMake
 * option REDLOCK_TLS=AUTO|ON|OFF).  Every client makes one OpenSSL context
 * (SSL_CTX) from these options at redlock_open() and one TLS session per
 * connection, command and subscriber connections alike; the handshake counts
 * against the connect timeout.  A master whose handshake fails is down, with
 * the reason ("certificate verify failed: hostname mismatch", ...) in the log
 * and in redlock_last_votes().  These setters follow the options rules above
 * (one thread; strings copied; a refused call leaves the option unchanged)
 * and only matter for rediss:// masters.  In a build without TLS the three
 * setters return REDLOCK_ENOTSUP. */

/* 1 when this build can connect to rediss:// masters, else 0.  Any thread. */
REDLOCK_EXPORT int redlock_tls_supported(void);
/* Trust and identity.  Any argument may be NULL.  ca_file (PEM bundle) and/or
 * ca_dir (OpenSSL hashed directory) are the certificate authorities trusted
 * for masters' certificates; both NULL = the system's default trust store.
 * cert_file + key_file (PEM, both or neither) are this client's certificate
 * (its chain may follow it in the file) and private key, for masters that
 * require one (mutual TLS).  Checked now: REDLOCK_EINVAL, with the reason
 * logged through the options' log callback, when a file or directory cannot
 * be read, a file holds no usable certificate or key, or the key does not
 * match the certificate.  A later call replaces all four. */
REDLOCK_EXPORT int redlock_options_set_tls(redlock_options_t *opts, const char *ca_file,
                                           const char *ca_dir, const char *cert_file,
                                           const char *key_file);
/* The name sent as SNI and that masters' certificates must carry, instead of
 * each URI's host (e.g. masters listed by IP address whose certificates name
 * a DNS name).  NULL restores the default.  At most 255 bytes; may be an IP
 * address, which is then checked against the certificates' IP entries. */
REDLOCK_EXPORT int redlock_options_set_tls_server_name(redlock_options_t *opts, const char *name);
/* verify != 0 (default): the chain must lead to a trusted authority AND the
 * certificate must be for the host name (or IP address).  0: neither is
 * checked (traffic is encrypted but anyone can pose as a master: for tests). */
REDLOCK_EXPORT int redlock_options_set_tls_verify(redlock_options_t *opts, int verify);

/* ---- Discovered addresses ------------------------------------------------
 * A Sentinel voter connects to the master address a sentinel names, and a
 * Cluster voter to the primaries its slot map and MOVED / ASK replies name,
 * with the URI's credentials and TLS settings (TLS checks the name the
 * reply gave, or the fixed set_tls_server_name).  Each call adds a host
 * pattern (fnmatch(3) glob, ASCII case ignored: "10.0.0.*",
 * "*.redis.internal", "127.0.0.1"); once any is set, a discovered address
 * whose host matches none is never connected to: the voter logs a WARN and
 * votes down with the detail "discovered address HOST:PORT not allowed".
 * None set (the default): any address is followed.  The addresses written
 * in the URIs (masters, sentinels, cluster seeds) are not discovered and
 * not checked; a cluster seed that its own slot map names under another
 * host is.  EINVAL for NULL, "" or a pattern longer than 255 bytes, or past
 * 64 patterns (logged through the options' log callback).  See
 * docs/deployments.md "Trust model for discovered addresses". */
REDLOCK_EXPORT int redlock_options_allow_discovered(redlock_options_t *opts, const char *pattern);

/* ---- Client ---------------------------------------------------------------
 * redlock_open() starts the client's own I/O thread and connects to every
 * master; it returns within the connect timeout even when masters are down
 * (they are retried in the background and vote "no" meanwhile).
 * redlock_close() cancels pending calls (ECANCELED; calls made after close
 * began get ECLOSED), releases every lock still held (best effort, bounded by
 * the request timeout), frees their handles and joins the I/O thread.  Its
 * bound, whatever the masters' speed (a slow master included): it waits at
 * most max(5 s, connect timeout + 3 x request timeout) from its start, then
 * drops every master's connection and leaves what was not sent or answered
 * to expire at its TTL (one WARN log line says so).  Called from one of the
 * client's own callbacks it returns at once and the client is freed when the
 * loop thread finishes. */
REDLOCK_EXPORT int redlock_open(redlock_t **out, const redlock_options_t *opts);
REDLOCK_EXPORT void redlock_close(redlock_t *client);

/* ---- Blocking calls: safe from any thread at once -------------------------
 * ttl_ms: 1..max TTL.  On success *out is a handle the caller owns until
 * redlock_unlock() (or redlock_close()) frees it.
 * redlock_lock:      retries by the options' retry policy.
 * redlock_trylock:   one attempt.
 * redlock_lock_wait: retries until wait_ms is spent, then REDLOCK_ETIMEDOUT
 *                    if its last attempt found the lock held, REDLOCK_ENOQUORUM
 *                    if too few masters answered it (an outage, not "busy").
 * redlock_lock_many: all resources or none.
 * A lost attempt returns REDLOCK_ELOCKED when a quorum answered and
 * REDLOCK_ENOQUORUM when fewer did. */
REDLOCK_EXPORT int redlock_lock(redlock_t *client, const char *resource, uint32_t ttl_ms,
                                redlock_lock_t **out);
REDLOCK_EXPORT int redlock_trylock(redlock_t *client, const char *resource, uint32_t ttl_ms,
                                   redlock_lock_t **out);
REDLOCK_EXPORT int redlock_lock_wait(redlock_t *client, const char *resource, uint32_t ttl_ms,
                                     uint32_t wait_ms, redlock_lock_t **out);
REDLOCK_EXPORT int redlock_lock_many(redlock_t *client, const char *const *resources, size_t n,
                                     uint32_t ttl_ms, redlock_lock_t **out);
/* Sets the lock's TTL to ttl_ms from now on a quorum.  A lock whose local
 * validity has run out is not extended: REDLOCK_ELOST.  Shorter than what is
 * left is allowed; since every master that runs the extension keeps the new
 * TTL whatever the outcome, the lock's validity drops to what ttl_ms leaves
 * as soon as it is sent and stays there unless the call returns REDLOCK_OK:
 * after an error, check redlock_lock_validity_ms(), not only the status. */
REDLOCK_EXPORT int redlock_extend(redlock_t *client, redlock_lock_t *lock, uint32_t ttl_ms);
/* Releases on all masters and always frees the handle (even on error).  A
 * handle that is not live in this client (already unlocked, or another
 * client's) gets EINVAL, here and in redlock_extend, redlock_watch and their
 * async forms.  Handle values: a handle is an opaque value, not an address to
 * read through.  On 64-bit platforms a freed handle's value is not given to
 * another handle of the same client before that client made 524 288 (2^19)
 * more handles, so within that bound a stale handle is refused for certain
 * and never releases another lock.  On 32-bit platforms the bound is the
 * 16 freed handles held back before their memory is reused. */
REDLOCK_EXPORT int redlock_unlock(redlock_t *client, redlock_lock_t *lock);
/* Keeps extending the lock (by its last TTL) until it is unlocked; when it
 * cannot be extended before its validity ends, marks it lost and calls
 * lost_cb(lock, reason, arg) once on the loop thread.  lost_cb may be NULL. */
REDLOCK_EXPORT int redlock_watch(redlock_t *client, redlock_lock_t *lock, redlock_lost_cb lost_cb,
                                 void *arg);

/* ---- Lock accessors: any thread, for a live handle ------------------------ */
REDLOCK_EXPORT int64_t redlock_lock_validity_ms(const redlock_lock_t *lock); /* <= 0 expired */
REDLOCK_EXPORT uint64_t redlock_lock_fence(const redlock_lock_t *lock);      /* 0 without fencing */
REDLOCK_EXPORT const char *redlock_lock_resource(const redlock_lock_t *lock);
REDLOCK_EXPORT const char *redlock_lock_value(const redlock_lock_t *lock);
/* The owner label its value carries (redlock_options_set_owner), "" when
 * none; points into the handle, valid while it is. */
REDLOCK_EXPORT const char *redlock_lock_owner(const redlock_lock_t *lock);
REDLOCK_EXPORT int redlock_lock_is_lost(const redlock_lock_t *lock);

/* ---- Callback forms ---------------------------------------------------------
 * Callable from any thread; the callback runs exactly once, on the client's
 * loop thread, unless the call itself returns an error.
 * redlock_lock_async: wait_ms == 0 retries by the options' retry policy (as
 * redlock_lock); wait_ms > 0 waits up to wait_ms (as redlock_lock_wait).
 * redlock_unlock_async frees the handle after its callback returns.
 * cb must not be NULL for redlock_lock_async (the handle would be lost); it
 * may be NULL for extend/unlock, which then run without telling anyone. */
typedef void (*redlock_lock_cb)(int status, redlock_lock_t *lock, void *arg);
typedef void (*redlock_done_cb)(int status, void *arg);
REDLOCK_EXPORT int redlock_lock_async(redlock_t *client, const char *resource, uint32_t ttl_ms,
                                      uint32_t wait_ms, redlock_lock_cb cb, void *arg);
REDLOCK_EXPORT int redlock_extend_async(redlock_t *client, redlock_lock_t *lock, uint32_t ttl_ms,
                                        redlock_done_cb cb, void *arg);
REDLOCK_EXPORT int redlock_unlock_async(redlock_t *client, redlock_lock_t *lock, redlock_done_cb cb,
                                        void *arg);

/* ---- Leader election ---------------------------------------------------------
 * redlock_elect campaigns for leadership of `name` until redlock_resign (or
 * redlock_close).  The leader holds a lease on the key prefix + name (a lock:
 * a lock and an election on the same name exclude each other), always with a
 * fencing token, whatever redlock_options_set_fencing says.  While leader the
 * lease is watched (extended automatically).  Callbacks run on the loop
 * thread, at most one at a time per client:
 *   on_elected(e, term, arg): this client is leader.  term is the lease's
 *     fencing token: larger than every earlier term of `name` (docs/safety.md
 *     says under which assumptions).  Pass it to every resource the leader
 *     writes, which must reject terms smaller than the largest it has seen.
 *   on_lost(e, reason, arg): leadership of that term ended by itself; reason
 *     is REDLOCK_ELOST (the lease could not be extended before its validity
 *     ran out, or a quorum answered that it is gone).  The election then
 *     campaigns again after a back-off.
 * Per term, on_elected runs once, then on_lost at most once (never after a
 * resign or close).  ttl_ms: 1..max TTL, long enough to leave validity after
 * the drift (> 3 ms with the default drift factor).  name: as a resource.
 * Errors (no callback ever runs then): EINVAL (NULL client, name, callback or
 * out; bad name or ttl), ENOMEM, ECLOSED, EFORKED.  Callable from any thread;
 * *out is set before any callback can run. */
typedef struct redlock_election redlock_election_t;
typedef void (*redlock_elected_cb)(redlock_election_t *e, uint64_t term, void *arg);
typedef void (*redlock_election_lost_cb)(redlock_election_t *e, int reason, void *arg);
REDLOCK_EXPORT int redlock_elect(redlock_t *client, const char *name, uint32_t ttl_ms,
                                 redlock_elected_cb on_elected, redlock_election_lost_cb on_lost,
                                 void *arg, redlock_election_t **out);
/* Stops campaigning, releases the lease if leader (the release wakes the next
 * campaigner at once) and frees the handle.  No callback of the election runs
 * after this returns.  From any thread: off the loop thread it waits until
 * the loop has taken the resignation (not for the release's replies); on the
 * loop thread (inside on_elected / on_lost or any other callback of this
 * client) it never blocks, and the handle is freed after the running
 * callback returns.  On a redlock_open_uv client, call it on the loop's
 * thread.  0, EINVAL (NULL, or not a live election of this client: already
 * resigned), ECLOSED (the client is closing: the close releases and frees
 * it), EFORKED, EIO. */
REDLOCK_EXPORT int redlock_resign(redlock_t *client, redlock_election_t *e);
/* Milliseconds of leadership left in the current term (the lease's validity,
 * as redlock_lock_validity_ms); <= 0 when not leader (in on_lost: how long
 * ago the term's validity ended).  Any thread, for a live handle.  Work that
 * needs leadership should stop before this reaches 0. */
REDLOCK_EXPORT int64_t redlock_election_validity_ms(const redlock_election_t *e);

/* ---- Bounded holds ------------------------------------------------------------
 * A watch renews its lock for as long as the holder lives; a hung holder
 * then keeps it for ever.  A bound caps the whole hold: max_hold_ms after
 * the grant (the start of the round that won the lock, on the monotonic
 * clock, so never later than the grant itself) the watch stops, the lock is
 * released on every master (the release is announced: waiters, woken
 * waits and campaigns, are woken at once), and the lost callback runs once
 * with reason REDLOCK_LOST_MAX_HOLD.  That reason is not a failure: the
 * library ended the hold on purpose, as asked, and it is positive so that
 * it is never taken for a REDLOCK_E* code.  The lost event of the stats
 * (REDLOCK_EVENT_LOST) carries it as its status; the locks-lost counter
 * does not count it.  A watch that loses its lock before the bound reports
 * REDLOCK_LOST_EXPIRED, as an unbounded one. */
#define REDLOCK_LOST_MAX_HOLD 1 /* the hold reached its bound: released on purpose */

/* redlock_watch with a bound: max_hold_ms (> 0) counts from the lock's
 * grant, not from this call, so a bound already spent ends the hold at
 * once (the callback may run before this returns).  The handle stays the
 * caller's: after the bound it is lost (redlock_lock_is_lost), and
 * redlock_unlock still frees it.  A later redlock_watch or
 * redlock_watch_bounded of the same lock replaces the bound (redlock_watch:
 * none).  Errors as redlock_watch, and EINVAL for max_hold_ms == 0. */
REDLOCK_EXPORT int redlock_watch_bounded(redlock_t *client, redlock_lock_t *lock,
                                         uint32_t max_hold_ms, redlock_lost_cb lost_cb, void *arg);
/* redlock_elect with a bound on every term: max_hold_ms (> 0) after a term's
 * grant the leader resigns that term (its lease is released, the release
 * wakes the other campaigners), on_lost runs with REDLOCK_LOST_MAX_HOLD, and
 * the election campaigns again after its back-off, as after a loss: the
 * retry delay with jitter (a term that lasted a ttl resets the back-off's
 * exponent), which gives the others woken by the release a head start.
 * Errors as redlock_elect, and EINVAL for max_hold_ms == 0. */
REDLOCK_EXPORT int redlock_elect_bounded(redlock_t *client, const char *name, uint32_t ttl_ms,
                                         uint32_t max_hold_ms, redlock_elected_cb on_elected,
                                         redlock_election_lost_cb on_lost, void *arg,
                                         redlock_election_t **out);
/* ---- Who leads: asking and observing an election -------------------------------
 * The view of an election's leader, as a quorum of masters holds it (read like
 * redlock_inspect, nothing written):
 *   state: REDLOCK_LEADER_NONE (a quorum answered and no value is held by a
 *     quorum: nobody leads, or a hand-off is half done), REDLOCK_LEADER_HELD
 *     (a quorum holds the same lease), REDLOCK_LEADER_UNKNOWN (fewer than a
 *     quorum of masters answered);
 *   term: the leader's term (the fencing token its on_elected got), 0 unless
 *     HELD;
 *   ttl_ms: the lease's remaining time, the least over the masters of the
 *     quorum that hold it (so a lower bound of the leader's own view
 *     plus its drift), 0 unless HELD;
 *   owner: the leader's owner label (redlock_options_set_owner of its
 *     client), "" when it set none, or when not HELD.
 * The struct is part of the ABI: its layout changes only with the ABI major
 * version (docs/api.md, "ABI and versioning policy"). */
#define REDLOCK_LEADER_NONE 0
#define REDLOCK_LEADER_HELD 1
#define REDLOCK_LEADER_UNKNOWN 2
typedef struct redlock_leader {
  int state;                          /* REDLOCK_LEADER_* */
  uint64_t term;                      /* the leader's term, 0 unless HELD */
  int64_t ttl_ms;                     /* lease left, 0 unless HELD */
  char owner[REDLOCK_MAX_OWNER + 1];  /* the leader's label, NUL-terminated */
} redlock_leader_t;

/* Who leads `name` now: one read round, blocking as redlock_inspect (same
 * errors; EINVAL also for a NULL out).  Returns 0 with *out filled (state
 * UNKNOWN when too few masters answered: that is not an error; a master
 * that runs no Lua does not answer the read, as for redlock_inspect). */
REDLOCK_EXPORT int redlock_election_leader(redlock_t *client, const char *name,
                                           redlock_leader_t *out);

/* Follows the leadership of `name` without campaigning: on_change runs on
 * the loop thread first with the view of the first read, then whenever the
 * view changes (state, term or owner; never for the ttl alone): a new
 * leader, no leader, unknown.  It re-reads when a release of `name` is
 * announced (the same announcement that wakes waits and campaigns), when a
 * new term is announced (a campaign that wins announces on the same channel),
 * when the lease it saw should have ended (its ttl), and at least every
 * poll_ms (0: the client's retry delay) as the fallback for what no
 * announcement tells (a leader whose lease ran out, a master that lost its
 * keys).  So a hand-off by resign or release is seen within about one round
 * trip after the new leader's grant.  The view pointer is valid during the
 * callback only.  Errors (no callback ever runs then): EINVAL (NULL client,
 * name, callback or out; a bad name), ENOMEM, ECLOSED, EFORKED.  Callable
 * from any thread; *out is set before any callback can run. */
typedef struct redlock_observer redlock_observer_t;
typedef void (*redlock_leader_cb)(redlock_observer_t *obs, const redlock_leader_t *view,
                                  void *arg);
REDLOCK_EXPORT int redlock_election_observe(redlock_t *client, const char *name,
                                            uint32_t poll_ms, redlock_leader_cb on_change,
                                            void *arg, redlock_observer_t **out);
/* Stops an observer and frees it; no callback of it runs after this returns.
 * Thread rules as redlock_resign (on the loop thread, also from inside
 * on_change: never blocks, freed after the running callback).  The client's
 * close stops the observers left.  0, EINVAL (NULL, or not a live observer
 * of this client), ECLOSED (closing: the close frees it), EFORKED, EIO
 * (off the loop thread: no semaphore to wait on). */
REDLOCK_EXPORT int redlock_observe_stop(redlock_t *client, redlock_observer_t *obs);

/* ---- Coordination primitives: counting semaphore, read-write lock ------------
 * (docs/api.md "Semaphores and read-write locks"; proofs in docs/safety.md.)
 * A permit or a hold is a redlock_lock_t like any lock: redlock_unlock()
 * releases it (and wakes waiters), redlock_extend() / redlock_watch() extend
 * it, the accessors work on it (validity, value, fence when fencing is on),
 * redlock_close() releases it.  Reentrancy (set_reentrant) does not apply.
 * name: 1..REDLOCK_MAX_RESOURCE_LEN bytes; ttl_ms: 1..max TTL.
 * wait_ms: 0 = one try (a semaphore tries each slot once), REDLOCK_ELOCKED
 * when refused; > 0 = retry, woken by releases, until wait_ms is spent, then
 * REDLOCK_ETIMEDOUT, or REDLOCK_ENOQUORUM when too few masters answered the
 * last attempt (as redlock_lock_wait).
 * Keys used, all in the slot of the lock key K = key prefix + NAME (tagged(K)
 * as above: "{" + K + "}" unless K has a hash tag): tagged(K):sem:0 ..
 * tagged(K):sem:<limit-1>, tagged(K):sem:limit; tagged(K):rw:write,
 * tagged(K):rw:read, tagged(K):rw:intent.  Their release channels:
 * REDLOCK_RELEASE_CHANNEL_PREFIX + tagged(K) + ":sem" / ":rw"; fencing
 * counters: REDLOCK_FENCE_KEY_PREFIX + the slot key / the :rw:write key. */

/* Most permits a semaphore may have. */
#define REDLOCK_MAX_SEM_LIMIT 1024

/* Counting semaphore: at most `limit` (1..REDLOCK_MAX_SEM_LIMIT) permits of
 * `name` are held at once, across every client of the same masters.  Each
 * permit is one of `limit` slots won like a lock, with its own value, lease
 * and fence (the slot's); redlock_lock_resource() names the slot
 * ("NAME:sem:3").  Every client must pass the same limit for a name: a
 * master that holds another limit for it makes the call fail with
 * REDLOCK_EINVAL (and log why), until the old limit's permits are gone. */
REDLOCK_EXPORT int redlock_semaphore_acquire(redlock_t *client, const char *name, uint32_t limit,
                                             uint32_t ttl_ms, uint32_t wait_ms,
                                             redlock_lock_t **out);

/* Read-write lock: any number of read holds, or one write hold, never both.
 * A writer that waits (wait_ms > 0) leaves an intent that refuses new
 * readers, so a stream of readers cannot starve it; the intent has its own
 * short lease, so a writer that dies while waiting blocks readers only
 * briefly.  No upgrade from read to write: release the read hold first.
 * With fencing, a write hold's fence is larger than every earlier hold's; a
 * read hold's is the write epoch (docs/safety.md). */
REDLOCK_EXPORT int redlock_rwlock_read(redlock_t *client, const char *name, uint32_t ttl_ms,
                                       uint32_t wait_ms, redlock_lock_t **out);
REDLOCK_EXPORT int redlock_rwlock_write(redlock_t *client, const char *name, uint32_t ttl_ms,
                                        uint32_t wait_ms, redlock_lock_t **out);

/* Callback forms (as redlock_lock_async; cb must not be NULL).  Here wait_ms
 * == 0 means one try, as in the blocking forms. */
REDLOCK_EXPORT int redlock_semaphore_acquire_async(redlock_t *client, const char *name,
                                                   uint32_t limit, uint32_t ttl_ms,
                                                   uint32_t wait_ms, redlock_lock_cb cb, void *arg);
REDLOCK_EXPORT int redlock_rwlock_read_async(redlock_t *client, const char *name, uint32_t ttl_ms,
                                             uint32_t wait_ms, redlock_lock_cb cb, void *arg);
REDLOCK_EXPORT int redlock_rwlock_write_async(redlock_t *client, const char *name, uint32_t ttl_ms,
                                              uint32_t wait_ms, redlock_lock_cb cb, void *arg);

/* ---- Cancellation ------------------------------------------------------------
 * An acquisition made with an _ex form can be canceled from any thread by
 * its id (docs/api.md "Cancellation").  Each _ex form is its plain form
 * (same arguments, checks, errors and callback) plus `id`: when the call
 * returns 0, *id holds the call's id, written before any callback can run;
 * when it returns an error, *id is 0.  id may be NULL (then it is the plain
 * form).  Ids are the client's, nonzero, counted up from 1 and never reused
 * (below 2^53 in practice: a JavaScript number holds them).  An id is a
 * value, not a handle: nothing is to be freed, and a late or stray id can
 * never touch another call.
 *
 * redlock_cancel(client, id), from any thread, the client's callbacks
 * included, any number of times:
 *   0                   the call's outcome is REDLOCK_ECANCELED: its callback
 *                       runs exactly once with it (and a NULL lock), soon:
 *                       within the loop turn that takes the cancel (for a
 *                       call still queued, when the loop takes it).
 *                       Cancels asked again before the call ended also
 *                       return 0 and change nothing;
 *   REDLOCK_CANCEL_LATE the call's outcome was decided before (granted,
 *                       refused, timed out, or an earlier cancel's once the
 *                       call ended; its callback ran or is about to run
 *                       with that outcome): nothing is done.  A lock
 *                       granted that way is the caller's, as always;
 *   REDLOCK_EINVAL      NULL client, or no call of this client had that id
 *                       (0, or larger than any it gave);
 *   REDLOCK_ECLOSED     the client is closing: the close ends every call
 *                       (those still waiting with REDLOCK_ECANCELED);
 *   REDLOCK_EFORKED.
 * A cancel that returns 0 is certain to be the outcome, even when it races
 * with the call's completion on the loop thread: the decision is taken
 * under the client's lock, once.  After it, nothing more is sent for the
 * call: no retry, no next attempt or semaphore slot, no fencing write-back;
 * a wait's subscription to release notices is dropped at once.  A round
 * that was already out when the cancel came ends on its own (within the
 * request timeout); whatever it set on the masters (a quorum won after the
 * cancel, a partial SET) is released, as after a failed attempt, and never
 * handed to anyone.  The events and stats count the call once, as canceled.
 *
 * Lifetimes: the callback's arg must stay valid until the callback ran
 * (a 0 from redlock_cancel does not mean it ran yet).  No cancel may be made
 * once redlock_close / redlock_close_uv may have finished (the id is then
 * meaningless and the client freed).
 *
 * Not cancelable: extend, unlock and watch (one round each, and an
 * extension cannot be taken back once sent); the blocking calls (a thread
 * that wants a cancelable blocking wait uses an _ex form and waits on its
 * own condition variable for the callback); a reentrant acquisition that
 * was granted at submission (its cancel is too late at once); elections
 * (redlock_resign). */
#define REDLOCK_CANCEL_LATE 1
REDLOCK_EXPORT int redlock_cancel(redlock_t *client, uint64_t id);
REDLOCK_EXPORT int redlock_lock_async_ex(redlock_t *client, const char *resource, uint32_t ttl_ms,
                                         uint32_t wait_ms, redlock_lock_cb cb, void *arg,
                                         uint64_t *id);
/* All resources or none (as redlock_lock_many: 1..REDLOCK_MAX_MANY distinct
 * names, the options' retry policy), as a callback form. */
REDLOCK_EXPORT int redlock_lock_many_async(redlock_t *client, const char *const *resources,
                                           size_t n, uint32_t ttl_ms, redlock_lock_cb cb,
                                           void *arg);
REDLOCK_EXPORT int redlock_lock_many_async_ex(redlock_t *client, const char *const *resources,
                                              size_t n, uint32_t ttl_ms, redlock_lock_cb cb,
                                              void *arg, uint64_t *id);
REDLOCK_EXPORT int redlock_semaphore_acquire_async_ex(redlock_t *client, const char *name,
                                                      uint32_t limit, uint32_t ttl_ms,
                                                      uint32_t wait_ms, redlock_lock_cb cb,
                                                      void *arg, uint64_t *id);
REDLOCK_EXPORT int redlock_rwlock_read_async_ex(redlock_t *client, const char *name,
                                                uint32_t ttl_ms, uint32_t wait_ms,
                                                redlock_lock_cb cb, void *arg, uint64_t *id);
REDLOCK_EXPORT int redlock_rwlock_write_async_ex(redlock_t *client, const char *name,
                                                 uint32_t ttl_ms, uint32_t wait_ms,
                                                 redlock_lock_cb cb, void *arg, uint64_t *id);

/* ---- Diagnostics ------------------------------------------------------------
 * Writes a one-line summary of the most recently decided round that a call of
 * the calling thread waited on: on any application thread, that thread's own
 * last call (a concurrent call on another thread does not overwrite it); on
 * the client's I/O thread (inside a callback), the round of the call whose
 * callback runs; a thread with no call on record (the client remembers 32
 * threads) gets the client's most recent.  Not the background release after
 * a lost attempt, nor a watch's renewals (no thread waits on those).  Always
 * NUL-terminated: the outcome ("won:", "lost (held):", "lost (no
 * quorum):", or "none:" before any round) and one "host:port=WHY" per master,
 * WHY being OK, refused (nil/0: held elsewhere or value gone), down, busy,
 * timeout, disconnected, error, quarantined ("quarantined (restart quarantine:
 * N ms left)"), unacked (a yes whose wait= / waitaof= ack fell short, and
 * why), duplicate, bad-reply, unsupported (a call that needs a Lua script,
 * not sent to a master that runs none: "unsupported (no Lua engine: ERR
 * ...)") or pending (still out when the round was decided).  Returns the
 * length it needed (like snprintf), or REDLOCK_EINVAL. */
REDLOCK_EXPORT int redlock_last_votes(redlock_t *client, char *buf, size_t size);

/* ---- Who holds it, and taking it back (docs/api.md, "Inspect and revoke") -----
 * redlock_inspect(): the masters' view of one resource, read with one round
 * to every master (a read-only script; nothing is written), as one JSON
 * object written into buf like redlock_stats(): it returns the length of the
 * whole text (excluding the NUL), writes at most size bytes including a NUL,
 * and with size 0 (buf may then be NULL) only measures.  The round waits for
 * every master's answer or its request timeout.  The object:
 *   {"name", "kind" ("lock", "semaphore", "rwlock", "election"),
 *    "held": true when a quorum of masters hold the same value (semaphore,
 *      read-write lock: some hold does), "agreed": false when the masters
 *      that answered are fewer than a quorum or do not all show the same
 *      holds (held on a minority, say: then held is false),
 *    "owner", "value": the one hold a quorum agrees on (its owner label,
 *      null when none or when the value is another client's), or null,
 *    "ttl_ms_min", "ttl_ms_max": over the holds a quorum agrees on, on the
 *      masters that hold them (null when none),
 *    "fence": the largest fence counter a master reports (an election's
 *      term), or null, "quorum", "count": the holds a quorum agrees on,
 *    "holders": [{"value", "owner", "ttl_ms_min", "ttl_ms_max", and
 *      "slot" (a semaphore's) or "mode" ("read" / "write")}],
 *    "masters": [{"addr", "state" ("holds", "free", "other": holds what no
 *      quorum agrees on, or why it gave no answer: "down", "timeout",
 *      "unsupported" (runs no Lua), ...), "value", "owner", "ttl_ms" (its
 *      one hold, or null), "holds": its count}]}
 * kind: REDLOCK_INSPECT_*.  name: as the kind's calls take it.  Blocking, as
 * redlock_lock (EWOULDBLOCK on the loop thread or a redlock_open_uv
 * client).  Errors: EINVAL (NULL client or name, a bad name or kind, NULL buf
 * with size > 0), ENOMEM, ECLOSED, EFORKED, EWOULDBLOCK. */
#define REDLOCK_INSPECT_LOCK 1
#define REDLOCK_INSPECT_SEMAPHORE 2
#define REDLOCK_INSPECT_RWLOCK 3
#define REDLOCK_INSPECT_ELECTION 4
REDLOCK_EXPORT int redlock_inspect(redlock_t *client, const char *name, int kind, char *buf,
                                   size_t size);
/* An administrator's revoke of a lock (or an election: its key is a lock
 * key), whoever holds it.  With fencing on the key (a master reports its
 * counter): the counter is raised on every master reached to one value above
 * every counter a master reports, so above the holder's token, and the key
 * is deleted, in one script per master; *fence_out (may be NULL) gets that
 * value.  A store that checks tokens and has been told it refuses the old
 * holder from then on, and the next grant's token is above it.  Without
 * fencing (*fence_out = 0) the key keeps its remaining TTL under a value of
 * the revoker's: nobody is granted the lock before the old lease would have
 * ended.  Either way the holder's next extension (its watch's too) fails and
 * the lock is lost (REDLOCK_ELOST; the lost callback once).  Returns 0 when a
 * quorum of masters did it, REDLOCK_ENOQUORUM otherwise (some may have),
 * REDLOCK_ENOTSUP when too many masters run no Lua.  Blocking, as
 * redlock_lock.  Errors besides: EINVAL (NULL client, bad resource), ENOMEM,
 * ECLOSED, EFORKED, EWOULDBLOCK.  docs/safety.md says what it guarantees. */
REDLOCK_EXPORT int redlock_revoke(redlock_t *client, const char *resource, uint64_t *fence_out);

/* ---- Observability: stats and events (docs/observability.md) ------------------
 * Every client counts its operations by kind and outcome, times them in
 * latency histograms, keeps gauges (held locks, watches, waiters, rounds in
 * flight) and per-master figures (state, votes by verdict, request latency,
 * reconnects, requests in flight).  Stats are on by default; the counting
 * runs on the loop thread and costs a few relaxed atomic stores per request.
 *
 * redlock_stats() renders them as Prometheus text exposition (format 0.0.4)
 * or as one JSON object, from any thread (also from callbacks), into buf:
 * like snprintf it returns the length of the whole text (excluding the NUL),
 * writes at most size bytes including a terminating NUL, and with size 0
 * (buf may then be NULL) only measures.  REDLOCK_EINVAL for a NULL client, a
 * NULL buf with size > 0 or an unknown format; REDLOCK_ENOTSUP when stats
 * were turned off with redlock_options_set_stats(opts, 0).  With a close, as
 * the other calls: a call made once redlock_close / redlock_close_uv has
 * begun (from another thread, or from a callback during the close) returns
 * REDLOCK_ECLOSED and writes nothing; a call already in progress when the
 * close begins renders in full, and the close waits for it to return before
 * it frees the client.  No call may start once the close may have finished. */
#define REDLOCK_STATS_PROMETHEUS 1
#define REDLOCK_STATS_JSON 2
REDLOCK_EXPORT int redlock_stats(redlock_t *client, int format, char *buf, size_t size);
/* enabled = 0 turns the counting off (for the last percent of throughput);
 * events, if set, still work.  Default 1. */
REDLOCK_EXPORT int redlock_options_set_stats(redlock_options_t *opts, int enabled);

/* One event per finished operation (acquire, wait, extend, watch renewal,
 * release), per lock lost, and per master state change (up, down, end of the
 * restart quarantine).  cb runs on the client's loop thread, before the
 * operation's own callback; the event and every string read from it are
 * valid only during the call.  cb must be short and must not block: it may
 * call the async functions, redlock_stats() and the accessors below, but no
 * blocking call on the same client (they return REDLOCK_EWOULDBLOCK there)
 * and nothing that waits for this client's loop.  cb == NULL turns events
 * off. */
typedef struct redlock_event redlock_event_t;
typedef enum {
  REDLOCK_EVENT_ACQUIRE = 1,        /* lock, trylock, lock_many, lock_async (wait 0) */
  REDLOCK_EVENT_WAIT = 2,           /* lock_wait, lock_async with wait_ms > 0 */
  REDLOCK_EVENT_EXTEND = 3,         /* extend, extend_async */
  REDLOCK_EVENT_RENEW = 4,          /* an automatic extension by redlock_watch */
  REDLOCK_EVENT_RELEASE = 5,        /* unlock, unlock_async */
  REDLOCK_EVENT_LOST = 6,           /* a held lock was found lost (status = reason) */
  REDLOCK_EVENT_NODE_UP = 7,        /* a master connected (and finished the handshake) */
  REDLOCK_EVENT_NODE_DOWN = 8,      /* a master went down (or its first attempt failed) */
  REDLOCK_EVENT_QUARANTINE_END = 9, /* a restarted master's votes count again */
  REDLOCK_EVENT_SEMAPHORE = 10,     /* redlock_semaphore_acquire (and its _async form) */
  REDLOCK_EVENT_RWLOCK_READ = 11,   /* redlock_rwlock_read */
  REDLOCK_EVENT_RWLOCK_WRITE = 12,  /* redlock_rwlock_write */
  REDLOCK_EVENT_ELECTED = 13        /* an election won a term (duration: its campaign) */
} redlock_event_kind_t;
/* The callback may run before redlock_open / redlock_open_uv has returned:
 * the first NODE_UP and NODE_DOWN events of each master come while open
 * waits for every master's first connection attempt, so arg must not be
 * something open's caller fills in with the client afterwards. */
typedef void (*redlock_event_cb)(const redlock_event_t *ev, void *arg);
REDLOCK_EXPORT int redlock_options_set_event_cb(redlock_options_t *opts, redlock_event_cb cb,
                                                void *arg);
/* Accessors; valid only inside the callback. */
REDLOCK_EXPORT int redlock_event_kind(const redlock_event_t *ev); /* REDLOCK_EVENT_* */
/* "acquire", "wait", "extend", "renew", "release", "lost", "node_up",
 * "node_down", "quarantine_end"; "unknown" otherwise.  Static strings. */
REDLOCK_EXPORT const char *redlock_event_kind_name(int kind);
/* The operation's status: REDLOCK_OK or a REDLOCK_E* code (LOST: the reason;
 * NODE_DOWN: REDLOCK_EIO; NODE_UP, QUARANTINE_END: REDLOCK_OK). */
REDLOCK_EXPORT int redlock_event_status(const redlock_event_t *ev);
/* The resource (without the key prefix); NULL for master events. */
REDLOCK_EXPORT const char *redlock_event_resource(const redlock_event_t *ev);
/* Operations: from the first attempt to the decision, in microseconds.
 * NODE_UP: how long the master was down; NODE_DOWN: how long it was up;
 * QUARANTINE_END: how long it was quarantined; LOST: 0. */
REDLOCK_EXPORT int64_t redlock_event_duration_us(const redlock_event_t *ev);
/* Acquisition attempts (rounds) the operation made; 1 for the others, 0 when
 * no master was asked (a reentrant hold, a canceled call). */
REDLOCK_EXPORT int redlock_event_attempts(const redlock_event_t *ev);
/* Masters the event describes: for an operation, every master of the last
 * round it waited on (0 when it asked none); for a master event, 1. */
REDLOCK_EXPORT int redlock_event_node_count(const redlock_event_t *ev);
/* Master i's "host:port" (or socket path); NULL when i is out of range. */
REDLOCK_EXPORT const char *redlock_event_node_addr(const redlock_event_t *ev, int i);
/* Operations: master i's vote, as in redlock_last_votes ("OK", "refused",
 * "down", "busy", "timeout", "disconnected", "error", "quarantined",
 * "unacked", "duplicate", "bad-reply", "unsupported", "pending" = not in when
 * the round was decided).  Master
 * events: its new state ("up", "quarantined", "down").  NULL out of range. */
REDLOCK_EXPORT const char *redlock_event_node_verdict(const redlock_event_t *ev, int i);
/* Operations: the detail of master i's vote, as redlock_last_votes gives it
 * in parentheses: why a master is down, busy, quarantined or unacked, whose
 * duplicate it is; for a cluster voter, the primary the request went to
 * ("primary 127.0.0.1:7001", then ": why" when there is one); "" when none.
 * NULL for master events and out of range.  Valid until the next call of
 * this function on the event, or the callback's return. */
REDLOCK_EXPORT const char *redlock_event_node_detail(const redlock_event_t *ev, int i);
/* Master i's reply time in the round, microseconds; -1 when it did not reply
 * before the decision (and for master events). */
REDLOCK_EXPORT int64_t redlock_event_node_latency_us(const redlock_event_t *ev, int i);
/* Master events: what happened ("connected", "connected; in restart
 * quarantine for another N ms" -- or failover quarantine, or quarantine
 * (another server at this address) --, "connection lost: ...", "restart
 * quarantine over"); NULL otherwise. */
REDLOCK_EXPORT const char *redlock_event_detail(const redlock_event_t *ev);

/* ---- Errors and version ------------------------------------------------------ */
REDLOCK_EXPORT const char *redlock_strerror(int err); /* static string, never NULL */
REDLOCK_EXPORT const char *redlock_err_name(int err); /* "REDLOCK_ELOCKED" */
REDLOCK_EXPORT const char *redlock_version(void);

/* The error table at run time, for bindings that build theirs from the
 * library instead of copying REDLOCK_ERRNO_MAP: redlock_err_code(i), for i in
 * 0 .. redlock_err_count() - 1, is the i-th code of the map (REDLOCK_OK is not
 * in it); redlock_err_name and redlock_strerror give its name and message.
 * redlock_err_code returns 0 (REDLOCK_OK) for an index out of range.  A later
 * minor release may append codes: iterate up to the count of the library
 * loaded, and treat codes a binding does not know as generic errors.  Static
 * data: any thread, any time (no client or init needed). */
REDLOCK_EXPORT int redlock_err_count(void);
REDLOCK_EXPORT int redlock_err_code(int index);

/* The value of one of this header's constants by its macro or enumerator
 * name, for bindings that cannot read the header: the limits
 * (REDLOCK_MAX_NODES, _RESOURCE_LEN, _PREFIX_LEN, _MANY, _SEM_LIMIT), the
 * error codes (REDLOCK_OK, REDLOCK_EINVAL, ...), REDLOCK_LOG_*,
 * REDLOCK_LOST_EXPIRED, REDLOCK_LOST_MAX_HOLD, REDLOCK_STATS_*, REDLOCK_EVENT_* and
 * REDLOCK_VERSION_MAJOR/_MINOR/_PATCH, as compiled into the library (list:
 * docs/api.md "Constants").  Returns 0 and sets *value, or REDLOCK_EINVAL for
 * a NULL argument or a name the library does not know.  Any thread. */
REDLOCK_EXPORT int redlock_constant(const char *name, int64_t *value);
/* The same for string constants: REDLOCK_RELEASE_CHANNEL_PREFIX,
 * REDLOCK_FENCE_KEY_PREFIX, REDLOCK_RESERVED_PREFIX, REDLOCK_VERSION_STRING.
 * A static string owned by the library, or NULL for NULL or an unknown
 * name.  Any thread. */
REDLOCK_EXPORT const char *redlock_constant_string(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* REDLOCK_H */
