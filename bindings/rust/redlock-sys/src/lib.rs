//! Raw declarations of redlock-c's public ABI (`include/redlock.h`), written
//! by hand (no bindgen): opaque handle types, constants and `extern "C"`
//! functions.  Everything here is `unsafe` to call; the `redlock` crate is the
//! safe layer.  Keep in sync with `include/redlock.h` (the ABI only grows
//! within a major version: SONAME `libredlock.so.0`).
#![allow(non_camel_case_types)]
#![no_std]

use core::ffi::{c_char, c_double, c_int, c_void};

/// Declares opaque handle types: never built or moved from Rust, only
/// pointed at (`!Send`, `!Sync` and `!Unpin` until the safe layer says so).
macro_rules! opaque {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
            _pin: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
        }
    )*};
}

opaque! {
    /// Settings for `redlock_open` (opaque).
    redlock_options_t;
    /// A client: N masters, their connections, a loop (opaque).
    redlock_t;
    /// One held lock (opaque).
    redlock_lock_t;
    /// A campaign for leadership (opaque).
    redlock_election_t;
    /// An observer of an election's leadership (opaque).
    redlock_observer_t;
}

pub const REDLOCK_VERSION_MAJOR: c_int = 0;
pub const REDLOCK_MAX_SEM_LIMIT: u32 = 1024;
pub const REDLOCK_STATS_PROMETHEUS: c_int = 1;
pub const REDLOCK_STATS_JSON: c_int = 2;
pub const REDLOCK_MAX_NODES: usize = 64;
pub const REDLOCK_MAX_RESOURCE_LEN: usize = 1024;
pub const REDLOCK_MAX_PREFIX_LEN: usize = 256;
pub const REDLOCK_MAX_MANY: usize = 64;
/// Bytes in an owner label (`redlock_options_set_owner`).
pub const REDLOCK_MAX_OWNER: usize = 64;

pub const REDLOCK_OK: c_int = 0;
pub const REDLOCK_EINVAL: c_int = -1;
pub const REDLOCK_ENOMEM: c_int = -2;
pub const REDLOCK_ELOCKED: c_int = -3;
pub const REDLOCK_ENOQUORUM: c_int = -4;
pub const REDLOCK_EEXPIRED: c_int = -5;
pub const REDLOCK_ELOST: c_int = -6;
pub const REDLOCK_ETIMEDOUT: c_int = -7;
pub const REDLOCK_ECANCELED: c_int = -8;
pub const REDLOCK_ECLOSED: c_int = -9;
pub const REDLOCK_EWOULDBLOCK: c_int = -10;
pub const REDLOCK_EIO: c_int = -11;
pub const REDLOCK_ENOTSUP: c_int = -12;
pub const REDLOCK_EFORKED: c_int = -13;

pub const REDLOCK_LOG_DEBUG: c_int = 0;
pub const REDLOCK_LOG_INFO: c_int = 1;
pub const REDLOCK_LOG_WARN: c_int = 2;
pub const REDLOCK_LOG_ERROR: c_int = 3;

pub const REDLOCK_LOST_EXPIRED: c_int = REDLOCK_ELOST;
/// Lost reason of a bounded hold that reached its bound (`redlock_watch_bounded`,
/// `redlock_elect_bounded`): released on purpose, not a failure; positive, so
/// never taken for a `REDLOCK_E*` code.
pub const REDLOCK_LOST_MAX_HOLD: c_int = 1;

/// States of a `redlock_leader_t` view.
pub const REDLOCK_LEADER_NONE: c_int = 0;
pub const REDLOCK_LEADER_HELD: c_int = 1;
pub const REDLOCK_LEADER_UNKNOWN: c_int = 2;

/// The view of an election's leader that a quorum of masters holds
/// (`redlock_election_leader`, `redlock_election_observe`).  Part of the ABI:
/// its layout changes only with the ABI major version.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct redlock_leader_t {
    /// `REDLOCK_LEADER_*`.
    pub state: c_int,
    /// The leader's term, 0 unless held.
    pub term: u64,
    /// Lease left in ms, 0 unless held.
    pub ttl_ms: i64,
    /// The leader's owner label, NUL-terminated.
    pub owner: [c_char; REDLOCK_MAX_OWNER + 1],
}

/// Kinds of `redlock_inspect`.
pub const REDLOCK_INSPECT_LOCK: c_int = 1;
pub const REDLOCK_INSPECT_SEMAPHORE: c_int = 2;
pub const REDLOCK_INSPECT_RWLOCK: c_int = 3;
pub const REDLOCK_INSPECT_ELECTION: c_int = 4;

/// `redlock_cancel`: too late, the call's outcome was decided before.
pub const REDLOCK_CANCEL_LATE: c_int = 1;

pub type redlock_log_cb =
    Option<unsafe extern "C" fn(level: c_int, msg: *const c_char, arg: *mut c_void)>;
pub type redlock_lost_cb =
    Option<unsafe extern "C" fn(lock: *mut redlock_lock_t, reason: c_int, arg: *mut c_void)>;
pub type redlock_lock_cb =
    Option<unsafe extern "C" fn(status: c_int, lock: *mut redlock_lock_t, arg: *mut c_void)>;
pub type redlock_done_cb = Option<unsafe extern "C" fn(status: c_int, arg: *mut c_void)>;
pub type redlock_elected_cb =
    Option<unsafe extern "C" fn(e: *mut redlock_election_t, term: u64, arg: *mut c_void)>;
pub type redlock_election_lost_cb =
    Option<unsafe extern "C" fn(e: *mut redlock_election_t, reason: c_int, arg: *mut c_void)>;
pub type redlock_leader_cb = Option<
    unsafe extern "C" fn(
        obs: *mut redlock_observer_t,
        view: *const redlock_leader_t,
        arg: *mut c_void,
    ),
>;

// The constants above are written by hand (Rust needs them at compile time);
// the tests below compare every one with the library's own table
// (redlock_constant, redlock_err_code), so a drift fails `cargo test`.

extern "C" {
    // Options
    pub fn redlock_options_new() -> *mut redlock_options_t;
    pub fn redlock_options_free(opts: *mut redlock_options_t);
    pub fn redlock_options_add_node(opts: *mut redlock_options_t, uri: *const c_char) -> c_int;
    pub fn redlock_uri_redact(uri: *const c_char, buf: *mut c_char, size: usize) -> c_int;
    pub fn redlock_options_set_retry(
        opts: *mut redlock_options_t,
        retry_count: c_int,
        delay_ms: u32,
        jitter_ms: u32,
    ) -> c_int;
    pub fn redlock_options_set_drift_factor(
        opts: *mut redlock_options_t,
        factor: c_double,
    ) -> c_int;
    pub fn redlock_options_set_timeouts(
        opts: *mut redlock_options_t,
        connect_ms: u32,
        request_ms: u32,
    ) -> c_int;
    pub fn redlock_options_set_max_ttl(opts: *mut redlock_options_t, max_ttl_ms: u32) -> c_int;
    pub fn redlock_options_set_quarantine(opts: *mut redlock_options_t, enabled: c_int) -> c_int;
    pub fn redlock_options_set_fencing(opts: *mut redlock_options_t, enabled: c_int) -> c_int;
    pub fn redlock_options_set_reentrant(opts: *mut redlock_options_t, enabled: c_int) -> c_int;
    pub fn redlock_options_set_key_prefix(
        opts: *mut redlock_options_t,
        prefix: *const c_char,
    ) -> c_int;
    pub fn redlock_options_set_log(
        opts: *mut redlock_options_t,
        min_level: c_int,
        cb: redlock_log_cb,
        arg: *mut c_void,
    ) -> c_int;
    pub fn redlock_options_set_owner(opts: *mut redlock_options_t, label: *const c_char) -> c_int;

    // Client
    pub fn redlock_open(out: *mut *mut redlock_t, opts: *const redlock_options_t) -> c_int;
    pub fn redlock_close(client: *mut redlock_t);

    // Blocking calls
    pub fn redlock_lock(
        client: *mut redlock_t,
        resource: *const c_char,
        ttl_ms: u32,
        out: *mut *mut redlock_lock_t,
    ) -> c_int;
    pub fn redlock_trylock(
        client: *mut redlock_t,
        resource: *const c_char,
        ttl_ms: u32,
        out: *mut *mut redlock_lock_t,
    ) -> c_int;
    pub fn redlock_lock_wait(
        client: *mut redlock_t,
        resource: *const c_char,
        ttl_ms: u32,
        wait_ms: u32,
        out: *mut *mut redlock_lock_t,
    ) -> c_int;
    pub fn redlock_lock_many(
        client: *mut redlock_t,
        resources: *const *const c_char,
        n: usize,
        ttl_ms: u32,
        out: *mut *mut redlock_lock_t,
    ) -> c_int;
    pub fn redlock_extend(client: *mut redlock_t, lock: *mut redlock_lock_t, ttl_ms: u32) -> c_int;
    pub fn redlock_unlock(client: *mut redlock_t, lock: *mut redlock_lock_t) -> c_int;
    pub fn redlock_watch(
        client: *mut redlock_t,
        lock: *mut redlock_lock_t,
        lost_cb: redlock_lost_cb,
        arg: *mut c_void,
    ) -> c_int;

    // Lock accessors
    pub fn redlock_lock_validity_ms(lock: *const redlock_lock_t) -> i64;
    pub fn redlock_lock_fence(lock: *const redlock_lock_t) -> u64;
    pub fn redlock_lock_resource(lock: *const redlock_lock_t) -> *const c_char;
    pub fn redlock_lock_value(lock: *const redlock_lock_t) -> *const c_char;
    pub fn redlock_lock_owner(lock: *const redlock_lock_t) -> *const c_char;
    pub fn redlock_lock_is_lost(lock: *const redlock_lock_t) -> c_int;

    // Callback forms
    pub fn redlock_lock_async(
        client: *mut redlock_t,
        resource: *const c_char,
        ttl_ms: u32,
        wait_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
    ) -> c_int;
    pub fn redlock_extend_async(
        client: *mut redlock_t,
        lock: *mut redlock_lock_t,
        ttl_ms: u32,
        cb: redlock_done_cb,
        arg: *mut c_void,
    ) -> c_int;
    pub fn redlock_unlock_async(
        client: *mut redlock_t,
        lock: *mut redlock_lock_t,
        cb: redlock_done_cb,
        arg: *mut c_void,
    ) -> c_int;

    // TLS
    pub fn redlock_tls_supported() -> c_int;
    pub fn redlock_options_set_tls(
        opts: *mut redlock_options_t,
        ca_file: *const c_char,
        ca_dir: *const c_char,
        cert_file: *const c_char,
        key_file: *const c_char,
    ) -> c_int;
    pub fn redlock_options_set_tls_server_name(
        opts: *mut redlock_options_t,
        name: *const c_char,
    ) -> c_int;
    pub fn redlock_options_set_tls_verify(opts: *mut redlock_options_t, verify: c_int) -> c_int;

    // discovered addresses (sentinel masters, cluster primaries)
    pub fn redlock_options_allow_discovered(
        opts: *mut redlock_options_t,
        pattern: *const c_char,
    ) -> c_int;

    // coordination primitives: counting semaphore, read-write lock, leader election
    pub fn redlock_semaphore_acquire(
        client: *mut redlock_t,
        name: *const c_char,
        limit: u32,
        ttl_ms: u32,
        wait_ms: u32,
        out: *mut *mut redlock_lock_t,
    ) -> c_int;
    pub fn redlock_rwlock_read(
        client: *mut redlock_t,
        name: *const c_char,
        ttl_ms: u32,
        wait_ms: u32,
        out: *mut *mut redlock_lock_t,
    ) -> c_int;
    pub fn redlock_rwlock_write(
        client: *mut redlock_t,
        name: *const c_char,
        ttl_ms: u32,
        wait_ms: u32,
        out: *mut *mut redlock_lock_t,
    ) -> c_int;
    pub fn redlock_semaphore_acquire_async(
        client: *mut redlock_t,
        name: *const c_char,
        limit: u32,
        ttl_ms: u32,
        wait_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
    ) -> c_int;
    pub fn redlock_rwlock_read_async(
        client: *mut redlock_t,
        name: *const c_char,
        ttl_ms: u32,
        wait_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
    ) -> c_int;
    pub fn redlock_rwlock_write_async(
        client: *mut redlock_t,
        name: *const c_char,
        ttl_ms: u32,
        wait_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
    ) -> c_int;
    pub fn redlock_elect(
        client: *mut redlock_t,
        name: *const c_char,
        ttl_ms: u32,
        on_elected: redlock_elected_cb,
        on_lost: redlock_election_lost_cb,
        arg: *mut c_void,
        out: *mut *mut redlock_election_t,
    ) -> c_int;
    pub fn redlock_resign(client: *mut redlock_t, e: *mut redlock_election_t) -> c_int;

    // Bounded holds: the lost callback's reason is REDLOCK_LOST_MAX_HOLD at the bound
    pub fn redlock_watch_bounded(
        client: *mut redlock_t,
        lock: *mut redlock_lock_t,
        max_hold_ms: u32,
        lost_cb: redlock_lost_cb,
        arg: *mut c_void,
    ) -> c_int;
    pub fn redlock_elect_bounded(
        client: *mut redlock_t,
        name: *const c_char,
        ttl_ms: u32,
        max_hold_ms: u32,
        on_elected: redlock_elected_cb,
        on_lost: redlock_election_lost_cb,
        arg: *mut c_void,
        out: *mut *mut redlock_election_t,
    ) -> c_int;

    // Who leads: asking and observing an election
    pub fn redlock_election_leader(
        client: *mut redlock_t,
        name: *const c_char,
        out: *mut redlock_leader_t,
    ) -> c_int;
    pub fn redlock_election_observe(
        client: *mut redlock_t,
        name: *const c_char,
        poll_ms: u32,
        on_change: redlock_leader_cb,
        arg: *mut c_void,
        out: *mut *mut redlock_observer_t,
    ) -> c_int;
    pub fn redlock_observe_stop(client: *mut redlock_t, obs: *mut redlock_observer_t) -> c_int;

    // Who holds it, and taking it back
    pub fn redlock_inspect(
        client: *mut redlock_t,
        name: *const c_char,
        kind: c_int,
        buf: *mut c_char,
        size: usize,
    ) -> c_int;
    pub fn redlock_revoke(
        client: *mut redlock_t,
        resource: *const c_char,
        fence_out: *mut u64,
    ) -> c_int;

    // Cancellation (docs/api.md "Cancellation"): each _ex form is its plain
    // callback form plus `id`, the call's id for redlock_cancel.
    pub fn redlock_cancel(client: *mut redlock_t, id: u64) -> c_int;
    pub fn redlock_lock_async_ex(
        client: *mut redlock_t,
        resource: *const c_char,
        ttl_ms: u32,
        wait_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
        id: *mut u64,
    ) -> c_int;
    pub fn redlock_lock_many_async(
        client: *mut redlock_t,
        resources: *const *const c_char,
        n: usize,
        ttl_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
    ) -> c_int;
    pub fn redlock_lock_many_async_ex(
        client: *mut redlock_t,
        resources: *const *const c_char,
        n: usize,
        ttl_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
        id: *mut u64,
    ) -> c_int;
    pub fn redlock_semaphore_acquire_async_ex(
        client: *mut redlock_t,
        name: *const c_char,
        limit: u32,
        ttl_ms: u32,
        wait_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
        id: *mut u64,
    ) -> c_int;
    pub fn redlock_rwlock_read_async_ex(
        client: *mut redlock_t,
        name: *const c_char,
        ttl_ms: u32,
        wait_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
        id: *mut u64,
    ) -> c_int;
    pub fn redlock_rwlock_write_async_ex(
        client: *mut redlock_t,
        name: *const c_char,
        ttl_ms: u32,
        wait_ms: u32,
        cb: redlock_lock_cb,
        arg: *mut c_void,
        id: *mut u64,
    ) -> c_int;
    pub fn redlock_election_validity_ms(e: *const redlock_election_t) -> i64;

    // Observability
    pub fn redlock_stats(
        client: *mut redlock_t,
        format: c_int,
        buf: *mut c_char,
        size: usize,
    ) -> c_int;
    pub fn redlock_options_set_stats(opts: *mut redlock_options_t, enabled: c_int) -> c_int;

    // Diagnostics, errors, version
    pub fn redlock_last_votes(client: *mut redlock_t, buf: *mut c_char, size: usize) -> c_int;
    pub fn redlock_strerror(err: c_int) -> *const c_char;
    pub fn redlock_err_name(err: c_int) -> *const c_char;
    pub fn redlock_version() -> *const c_char;

    // The library's tables, read at run time (one source of truth)
    pub fn redlock_err_count() -> c_int;
    pub fn redlock_err_code(index: c_int) -> c_int;
    pub fn redlock_constant(name: *const c_char, value: *mut i64) -> c_int;
    pub fn redlock_constant_string(name: *const c_char) -> *const c_char;
    pub fn redlock_options_get_retry(
        opts: *const redlock_options_t,
        retry_count: *mut c_int,
        delay_ms: *mut u32,
        jitter_ms: *mut u32,
    ) -> c_int;
    pub fn redlock_options_get_drift_factor(
        opts: *const redlock_options_t,
        factor: *mut c_double,
    ) -> c_int;
    pub fn redlock_options_get_timeouts(
        opts: *const redlock_options_t,
        connect_ms: *mut u32,
        request_ms: *mut u32,
    ) -> c_int;
    pub fn redlock_options_get_max_ttl(
        opts: *const redlock_options_t,
        max_ttl_ms: *mut u32,
    ) -> c_int;
    pub fn redlock_options_get_quarantine(
        opts: *const redlock_options_t,
        enabled: *mut c_int,
    ) -> c_int;
    pub fn redlock_options_get_fencing(
        opts: *const redlock_options_t,
        enabled: *mut c_int,
    ) -> c_int;
    pub fn redlock_options_get_reentrant(
        opts: *const redlock_options_t,
        enabled: *mut c_int,
    ) -> c_int;
    pub fn redlock_options_get_key_prefix(
        opts: *const redlock_options_t,
        prefix: *mut *const c_char,
    ) -> c_int;
    pub fn redlock_options_get_owner(
        opts: *const redlock_options_t,
        label: *mut *const c_char,
    ) -> c_int;
}

opaque! {
    /// A test kit: fake masters in this process (`include/redlock_testing.h`, opaque).
    redlock_testing_t;
}

pub const REDLOCK_TESTING_TCP: u32 = 0x1;
pub const REDLOCK_TESTING_VIRTUAL_TIME: u32 = 0x2;
pub const REDLOCK_TESTING_MAX: u32 = 16;
pub const REDLOCK_TESTING_ALL: u32 = 0xffff_ffff;
pub const REDLOCK_TESTING_NORMAL: c_int = 0;
pub const REDLOCK_TESTING_GRANT: c_int = 1;
pub const REDLOCK_TESTING_REFUSE: c_int = 2;

// The test kit (include/redlock_testing.h).
extern "C" {
    pub fn redlock_testing_start(n: u32, flags: u32, out: *mut *mut redlock_testing_t) -> c_int;
    pub fn redlock_testing_stop(kit: *mut redlock_testing_t);
    pub fn redlock_testing_count(kit: *const redlock_testing_t) -> u32;
    pub fn redlock_testing_uri(kit: *const redlock_testing_t, i: u32) -> *const c_char;
    pub fn redlock_testing_add_nodes(
        kit: *const redlock_testing_t,
        opts: *mut redlock_options_t,
    ) -> c_int;
    pub fn redlock_testing_kill(kit: *mut redlock_testing_t, i: u32) -> c_int;
    pub fn redlock_testing_restart(kit: *mut redlock_testing_t, i: u32) -> c_int;
    pub fn redlock_testing_pause(kit: *mut redlock_testing_t, i: u32) -> c_int;
    pub fn redlock_testing_resume(kit: *mut redlock_testing_t, i: u32) -> c_int;
    pub fn redlock_testing_slow(kit: *mut redlock_testing_t, i: u32, delay_ms: u32) -> c_int;
    pub fn redlock_testing_drop_key(
        kit: *mut redlock_testing_t,
        i: u32,
        key: *const c_char,
    ) -> c_int;
    pub fn redlock_testing_clock_jump(kit: *mut redlock_testing_t, i: u32, ms: u64) -> c_int;
    pub fn redlock_testing_failover(kit: *mut redlock_testing_t, i: u32, lag_ms: u64) -> c_int;
    pub fn redlock_testing_set_mode(kit: *mut redlock_testing_t, i: u32, mode: c_int) -> c_int;
    pub fn redlock_testing_advance(kit: *mut redlock_testing_t, ms: u64) -> c_int;
    pub fn redlock_testing_has_key(
        kit: *mut redlock_testing_t,
        i: u32,
        key: *const c_char,
    ) -> c_int;
    pub fn redlock_testing_key_count(kit: *mut redlock_testing_t, key: *const c_char) -> c_int;
    pub fn redlock_testing_commands(kit: *mut redlock_testing_t, i: u32) -> i64;
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn links_and_reports_version() {
        let v = unsafe { CStr::from_ptr(redlock_version()) }
            .to_str()
            .unwrap();
        assert!(v.starts_with("0."), "{v}");
        let name = unsafe { CStr::from_ptr(redlock_err_name(REDLOCK_ELOCKED)) };
        assert_eq!(name.to_str().unwrap(), "REDLOCK_ELOCKED");
    }

    fn lib_constant(name: &CStr) -> Option<i64> {
        let mut v = 0i64;
        // SAFETY: NUL-terminated name, valid out-pointer.
        (unsafe { redlock_constant(name.as_ptr(), &mut v) } == 0).then_some(v)
    }

    /// Every hand-written constant of this crate, by its C name.
    fn written_here() -> std::vec::Vec<(&'static CStr, i64)> {
        std::vec![
            (c"REDLOCK_VERSION_MAJOR", REDLOCK_VERSION_MAJOR as i64),
            (c"REDLOCK_MAX_SEM_LIMIT", REDLOCK_MAX_SEM_LIMIT as i64),
            (c"REDLOCK_STATS_PROMETHEUS", REDLOCK_STATS_PROMETHEUS as i64),
            (c"REDLOCK_STATS_JSON", REDLOCK_STATS_JSON as i64),
            (c"REDLOCK_MAX_NODES", REDLOCK_MAX_NODES as i64),
            (c"REDLOCK_MAX_RESOURCE_LEN", REDLOCK_MAX_RESOURCE_LEN as i64),
            (c"REDLOCK_MAX_PREFIX_LEN", REDLOCK_MAX_PREFIX_LEN as i64),
            (c"REDLOCK_MAX_MANY", REDLOCK_MAX_MANY as i64),
            (c"REDLOCK_MAX_OWNER", REDLOCK_MAX_OWNER as i64),
            (c"REDLOCK_LOST_MAX_HOLD", REDLOCK_LOST_MAX_HOLD as i64),
            (c"REDLOCK_INSPECT_LOCK", REDLOCK_INSPECT_LOCK as i64),
            (c"REDLOCK_LEADER_NONE", REDLOCK_LEADER_NONE as i64),
            (c"REDLOCK_LEADER_HELD", REDLOCK_LEADER_HELD as i64),
            (c"REDLOCK_LEADER_UNKNOWN", REDLOCK_LEADER_UNKNOWN as i64),
            (
                c"REDLOCK_INSPECT_SEMAPHORE",
                REDLOCK_INSPECT_SEMAPHORE as i64
            ),
            (c"REDLOCK_INSPECT_RWLOCK", REDLOCK_INSPECT_RWLOCK as i64),
            (c"REDLOCK_INSPECT_ELECTION", REDLOCK_INSPECT_ELECTION as i64),
            (c"REDLOCK_OK", REDLOCK_OK as i64),
            (c"REDLOCK_EINVAL", REDLOCK_EINVAL as i64),
            (c"REDLOCK_ENOMEM", REDLOCK_ENOMEM as i64),
            (c"REDLOCK_ELOCKED", REDLOCK_ELOCKED as i64),
            (c"REDLOCK_ENOQUORUM", REDLOCK_ENOQUORUM as i64),
            (c"REDLOCK_EEXPIRED", REDLOCK_EEXPIRED as i64),
            (c"REDLOCK_ELOST", REDLOCK_ELOST as i64),
            (c"REDLOCK_ETIMEDOUT", REDLOCK_ETIMEDOUT as i64),
            (c"REDLOCK_ECANCELED", REDLOCK_ECANCELED as i64),
            (c"REDLOCK_ECLOSED", REDLOCK_ECLOSED as i64),
            (c"REDLOCK_EWOULDBLOCK", REDLOCK_EWOULDBLOCK as i64),
            (c"REDLOCK_EIO", REDLOCK_EIO as i64),
            (c"REDLOCK_ENOTSUP", REDLOCK_ENOTSUP as i64),
            (c"REDLOCK_EFORKED", REDLOCK_EFORKED as i64),
            (c"REDLOCK_LOG_DEBUG", REDLOCK_LOG_DEBUG as i64),
            (c"REDLOCK_LOG_INFO", REDLOCK_LOG_INFO as i64),
            (c"REDLOCK_LOG_WARN", REDLOCK_LOG_WARN as i64),
            (c"REDLOCK_LOG_ERROR", REDLOCK_LOG_ERROR as i64),
            (c"REDLOCK_LOST_EXPIRED", REDLOCK_LOST_EXPIRED as i64),
            (c"REDLOCK_CANCEL_LATE", REDLOCK_CANCEL_LATE as i64),
        ]
    }

    #[test]
    fn constants_match_the_library() {
        for (name, here) in written_here() {
            assert_eq!(lib_constant(name), Some(here), "{name:?}");
        }
        assert_eq!(lib_constant(c"REDLOCK_NO_SUCH"), None);
    }

    #[test]
    fn every_library_error_code_has_a_constant() {
        // SAFETY: plain queries of static data.
        let n = unsafe { redlock_err_count() };
        let consts: std::vec::Vec<i64> = written_here()
            .into_iter()
            .filter(|(name, v)| *v < 0 && name.to_bytes().starts_with(b"REDLOCK_E"))
            .map(|(_, v)| v)
            .collect();
        assert_eq!(n as usize, consts.len(), "library codes vs constants here");
        for i in 0..n {
            let code = unsafe { redlock_err_code(i) };
            assert!(consts.contains(&(code as i64)), "library code {code}");
            let name = unsafe { CStr::from_ptr(redlock_err_name(code)) };
            assert_eq!(lib_constant(name), Some(code as i64));
        }
        assert_eq!(unsafe { redlock_err_code(n) }, REDLOCK_OK);
    }
}
