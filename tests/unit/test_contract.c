/* test_contract.c: the public headers against the documented contract
 * (docs/api.md), at compile time.  Every function of the contract is
 * assigned to a pointer of exactly the type it is documented with, so under -Werror a changed
 * parameter, return type or qualifier fails the build (an acceptance suite compiled against
 * include/redlock.h would fail the same way).  It links the shared library,
 * so every name must also be exported.  At run time it checks the constants
 * the contract fixes (error codes and names, stats formats). */
#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit_support.h"
#include <string.h>

#include "redlock.h"
#include "redlock_uv.h"

/* The contract's types, spelled as docs/api.md spells them. */
typedef void (*log_cb_t)(int level, const char *msg, void *arg);
typedef void (*lost_cb_t)(redlock_lock_t *, int reason, void *arg);
typedef void (*elected_cb_t)(redlock_election_t *, uint64_t term, void *arg);
typedef void (*election_lost_cb_t)(redlock_election_t *, int reason, void *arg);
typedef void (*event_cb_t)(const redlock_event_t *, void *arg);

static void test_signatures(void **state) {
  (void)state;
  /* The core: options, open/close, locks, extend, watch, fencing. */
  redlock_options_t *(*options_new)(void) = redlock_options_new;
  void (*options_free)(redlock_options_t *) = redlock_options_free;
  int (*add_node)(redlock_options_t *, const char *) = redlock_options_add_node;
  int (*set_retry)(redlock_options_t *, int, uint32_t, uint32_t) = redlock_options_set_retry;
  int (*set_drift)(redlock_options_t *, double) = redlock_options_set_drift_factor;
  int (*set_timeouts)(redlock_options_t *, uint32_t, uint32_t) = redlock_options_set_timeouts;
  int (*set_max_ttl)(redlock_options_t *, uint32_t) = redlock_options_set_max_ttl;
  int (*set_quarantine)(redlock_options_t *, int) = redlock_options_set_quarantine;
  int (*set_fencing)(redlock_options_t *, int) = redlock_options_set_fencing;
  int (*set_prefix)(redlock_options_t *, const char *) = redlock_options_set_key_prefix;
  int (*set_log)(redlock_options_t *, int, log_cb_t, void *) = redlock_options_set_log;
  int (*open)(redlock_t **, const redlock_options_t *) = redlock_open;
  void (*close)(redlock_t *) = redlock_close;
  int (*lock)(redlock_t *, const char *, uint32_t, redlock_lock_t **) = redlock_lock;
  int (*trylock)(redlock_t *, const char *, uint32_t, redlock_lock_t **) = redlock_trylock;
  int (*lock_wait)(redlock_t *, const char *, uint32_t, uint32_t, redlock_lock_t **) =
      redlock_lock_wait;
  int (*lock_many)(redlock_t *, const char *const *, size_t, uint32_t, redlock_lock_t **) =
      redlock_lock_many;
  int (*extend)(redlock_t *, redlock_lock_t *, uint32_t) = redlock_extend;
  int (*unlock)(redlock_t *, redlock_lock_t *) = redlock_unlock;
  int (*watch)(redlock_t *, redlock_lock_t *, lost_cb_t, void *) = redlock_watch;
  int64_t (*validity)(const redlock_lock_t *) = redlock_lock_validity_ms;
  uint64_t (*fence)(const redlock_lock_t *) = redlock_lock_fence;
  const char *(*resource)(const redlock_lock_t *) = redlock_lock_resource;
  const char *(*value)(const redlock_lock_t *) = redlock_lock_value;
  int (*is_lost)(const redlock_lock_t *) = redlock_lock_is_lost;
  int (*lock_async)(redlock_t *, const char *, uint32_t, uint32_t, redlock_lock_cb, void *) =
      redlock_lock_async;
  int (*extend_async)(redlock_t *, redlock_lock_t *, uint32_t, redlock_done_cb, void *) =
      redlock_extend_async;
  int (*unlock_async)(redlock_t *, redlock_lock_t *, redlock_done_cb, void *) =
      redlock_unlock_async;
  const char *(*strerror_)(int) = redlock_strerror;
  const char *(*err_name)(int) = redlock_err_name;
  const char *(*version)(void) = redlock_version;
  int (*set_allocator)(const redlock_allocator_t *) = redlock_set_allocator;
  int (*open_uv)(redlock_t **, const redlock_options_t *, uv_loop_t *) = redlock_open_uv;
  void (*close_uv)(redlock_t *, void (*)(void *), void *) = redlock_close_uv;
  /* TLS, stats and events. */
  int (*tls_supported)(void) = redlock_tls_supported;
  int (*set_tls)(redlock_options_t *, const char *, const char *, const char *, const char *) =
      redlock_options_set_tls;
  int (*set_tls_name)(redlock_options_t *, const char *) = redlock_options_set_tls_server_name;
  int (*set_tls_verify)(redlock_options_t *, int) = redlock_options_set_tls_verify;
  int (*sem)(redlock_t *, const char *, uint32_t, uint32_t, uint32_t, redlock_lock_t **) =
      redlock_semaphore_acquire;
  int (*rw_read)(redlock_t *, const char *, uint32_t, uint32_t, redlock_lock_t **) =
      redlock_rwlock_read;
  int (*rw_write)(redlock_t *, const char *, uint32_t, uint32_t, redlock_lock_t **) =
      redlock_rwlock_write;
  int (*elect)(redlock_t *, const char *, uint32_t, elected_cb_t, election_lost_cb_t, void *,
               redlock_election_t **) = redlock_elect;
  int (*resign)(redlock_t *, redlock_election_t *) = redlock_resign;
  int (*stats)(redlock_t *, int, char *, size_t) = redlock_stats;
  int (*set_event_cb)(redlock_options_t *, event_cb_t, void *) = redlock_options_set_event_cb;
  /* Cancellation (the API is ours to design; fixed here so that it stays additive) */
  int (*cancel)(redlock_t *, uint64_t) = redlock_cancel;
  int (*lock_async_ex)(redlock_t *, const char *, uint32_t, uint32_t, redlock_lock_cb, void *,
                       uint64_t *) = redlock_lock_async_ex;
  int (*many_async)(redlock_t *, const char *const *, size_t, uint32_t, redlock_lock_cb, void *) =
      redlock_lock_many_async;
  int (*many_async_ex)(redlock_t *, const char *const *, size_t, uint32_t, redlock_lock_cb, void *,
                       uint64_t *) = redlock_lock_many_async_ex;
  int (*sem_ex)(redlock_t *, const char *, uint32_t, uint32_t, uint32_t, redlock_lock_cb, void *,
                uint64_t *) = redlock_semaphore_acquire_async_ex;
  int (*read_ex)(redlock_t *, const char *, uint32_t, uint32_t, redlock_lock_cb, void *,
                 uint64_t *) = redlock_rwlock_read_async_ex;
  int (*write_ex)(redlock_t *, const char *, uint32_t, uint32_t, redlock_lock_cb, void *,
                  uint64_t *) = redlock_rwlock_write_async_ex;

  const void *all[] = {
      (const void *)options_new,    (const void *)options_free,
      (const void *)add_node,       (const void *)set_retry,
      (const void *)set_drift,      (const void *)set_timeouts,
      (const void *)set_max_ttl,    (const void *)set_quarantine,
      (const void *)set_fencing,    (const void *)set_prefix,
      (const void *)set_log,        (const void *)open,
      (const void *)close,          (const void *)lock,
      (const void *)trylock,        (const void *)lock_wait,
      (const void *)lock_many,      (const void *)extend,
      (const void *)unlock,         (const void *)watch,
      (const void *)validity,       (const void *)fence,
      (const void *)resource,       (const void *)value,
      (const void *)is_lost,        (const void *)lock_async,
      (const void *)extend_async,   (const void *)unlock_async,
      (const void *)strerror_,      (const void *)err_name,
      (const void *)version,        (const void *)open_uv,
      (const void *)close_uv,       (const void *)tls_supported,
      (const void *)set_tls,        (const void *)set_tls_name,
      (const void *)set_tls_verify, (const void *)sem,
      (const void *)rw_read,        (const void *)rw_write,
      (const void *)elect,          (const void *)resign,
      (const void *)stats,          (const void *)set_event_cb,
      (const void *)cancel,         (const void *)lock_async_ex,
      (const void *)many_async,     (const void *)many_async_ex,
      (const void *)sem_ex,         (const void *)read_ex,
      (const void *)write_ex,       (const void *)set_allocator,
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    assert_non_null(all[i]);
}

static void test_constants(void **state) {
  (void)state;
  /* The documented error codes, distinct, negative, with matching names. */
  static const struct {
    int code;
    const char *name;
  } codes[] = {
      {REDLOCK_EINVAL, "REDLOCK_EINVAL"},
      {REDLOCK_ENOMEM, "REDLOCK_ENOMEM"},
      {REDLOCK_ELOCKED, "REDLOCK_ELOCKED"},
      {REDLOCK_ENOQUORUM, "REDLOCK_ENOQUORUM"},
      {REDLOCK_EEXPIRED, "REDLOCK_EEXPIRED"},
      {REDLOCK_ELOST, "REDLOCK_ELOST"},
      {REDLOCK_ETIMEDOUT, "REDLOCK_ETIMEDOUT"},
      {REDLOCK_ECANCELED, "REDLOCK_ECANCELED"},
      {REDLOCK_ECLOSED, "REDLOCK_ECLOSED"},
      {REDLOCK_EWOULDBLOCK, "REDLOCK_EWOULDBLOCK"},
      {REDLOCK_EIO, "REDLOCK_EIO"},
      {REDLOCK_ENOTSUP, "REDLOCK_ENOTSUP"},
  };
  assert_int_equal(REDLOCK_OK, 0);
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    assert_true(codes[i].code < 0);
    assert_string_equal(redlock_err_name(codes[i].code), codes[i].name);
    for (size_t j = 0; j < i; j++)
      assert_int_not_equal(codes[i].code, codes[j].code);
  }
  assert_int_equal(REDLOCK_STATS_PROMETHEUS, 1);
  assert_int_equal(REDLOCK_STATS_JSON, 2);
  assert_true(redlock_tls_supported() == 0 || redlock_tls_supported() == 1);
}

UNIT_MAIN(cmocka_unit_test(test_signatures), cmocka_unit_test(test_constants))
