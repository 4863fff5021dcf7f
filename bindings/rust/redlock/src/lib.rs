//! Safe Rust binding of redlock-c: Redlock, a distributed lock over N
//! independent Redis masters.  A lock is held when a majority (N/2 + 1) of
//! the masters accepted it and time is left on it.
//!
//! ```no_run
//! use std::time::Duration;
//! let client = redlock::Client::builder()
//!     .nodes(["redis://127.0.0.1:7001", "redis://127.0.0.1:7002", "redis://127.0.0.1:7003"])
//!     .open()?;
//! let lock = client.lock("orders:42", Duration::from_secs(10))?; // unlocked on drop
//! println!("fence {} valid for {} ms", lock.fence(), lock.validity_ms());
//! # Ok::<(), redlock::Error>(())
//! ```
//!
//! Threads: [`Client`] and [`Lock`] are `Send + Sync`; every blocking call
//! blocks the calling thread only.  The `*_async` acquisitions return an
//! [`Acquire`] future instead (any executor), which cancels its call when
//! dropped before it completed; [`Lock::extend_async`] and
//! [`Lock::unlock_async`] return a [`Round`] future, which blocks no thread
//! while the masters answer.  The C library runs its network I/O and callbacks on
//! its own thread; this crate's callbacks there never run user code, except
//! the optional logger.
use redlock_sys as sys;
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

mod acquire;
mod inspect;
mod json;
mod observe;
mod round;
pub mod testing;
mod votes;
pub use acquire::Acquire;
pub use inspect::{Holder, Inspection, Kind, MasterView};
pub use observe::{Leader, LeaderState, Observer};
pub use round::Round;
pub use votes::Vote;

// ---- errors ---------------------------------------------------------------------

/// What went wrong: one variant per library code (`REDLOCK_E*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `REDLOCK_EINVAL`: invalid argument (also: a NUL byte in a string).
    InvalidArgument,
    /// `REDLOCK_ENOMEM`.
    NoMemory,
    /// `REDLOCK_ELOCKED`: a quorum answered; someone else holds the resource.
    Locked,
    /// `REDLOCK_ENOQUORUM`: too few masters answered (for a wait: its last
    /// attempt did, when the wait ran out — an outage, not a busy lock).
    NoQuorum,
    /// `REDLOCK_EEXPIRED`: quorum won but no validity left.
    Expired,
    /// `REDLOCK_ELOST`: the lock is no longer held on a quorum.
    Lost,
    /// `REDLOCK_ETIMEDOUT`: the wait budget of `lock_wait` (or a semaphore's
    /// or read-write hold's wait) ran out while another held the resource.
    TimedOut,
    /// `REDLOCK_ECANCELED`.
    Canceled,
    /// `REDLOCK_ECLOSED`.
    Closed,
    /// `REDLOCK_EWOULDBLOCK`: a blocking call on the library's I/O thread (from the logger).
    WouldBlock,
    /// `REDLOCK_EIO`.
    Io,
    /// `REDLOCK_ENOTSUP` (e.g. `rediss://` without TLS support, or a semaphore
    /// where too many masters run no Lua scripts).
    NotSupported,
    /// `REDLOCK_EFORKED`: the client was opened by the parent process.
    Forked,
    /// Not a failure: a bounded hold ([`Lock::watch_bounded`],
    /// [`Client::elect_bounded`]) reached its bound and the library released
    /// it on purpose, as asked.  Its code is [`LOST_MAX_HOLD`] (positive:
    /// the lost callback's reason, never a `REDLOCK_E*` code).
    MaxHold,
    /// A code this version of the crate does not know.
    Other(i32),
}

impl ErrorKind {
    /// Maps a negative library code (0 is not an error).
    pub fn from_code(code: i32) -> ErrorKind {
        match code {
            sys::REDLOCK_EINVAL => ErrorKind::InvalidArgument,
            sys::REDLOCK_ENOMEM => ErrorKind::NoMemory,
            sys::REDLOCK_ELOCKED => ErrorKind::Locked,
            sys::REDLOCK_ENOQUORUM => ErrorKind::NoQuorum,
            sys::REDLOCK_EEXPIRED => ErrorKind::Expired,
            sys::REDLOCK_ELOST => ErrorKind::Lost,
            sys::REDLOCK_ETIMEDOUT => ErrorKind::TimedOut,
            sys::REDLOCK_ECANCELED => ErrorKind::Canceled,
            sys::REDLOCK_ECLOSED => ErrorKind::Closed,
            sys::REDLOCK_EWOULDBLOCK => ErrorKind::WouldBlock,
            sys::REDLOCK_EIO => ErrorKind::Io,
            sys::REDLOCK_ENOTSUP => ErrorKind::NotSupported,
            sys::REDLOCK_EFORKED => ErrorKind::Forked,
            sys::REDLOCK_LOST_MAX_HOLD => ErrorKind::MaxHold,
            other => ErrorKind::Other(other),
        }
    }

    /// The library's code (`REDLOCK_ELOCKED` = -3, ...).
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::InvalidArgument => sys::REDLOCK_EINVAL,
            ErrorKind::NoMemory => sys::REDLOCK_ENOMEM,
            ErrorKind::Locked => sys::REDLOCK_ELOCKED,
            ErrorKind::NoQuorum => sys::REDLOCK_ENOQUORUM,
            ErrorKind::Expired => sys::REDLOCK_EEXPIRED,
            ErrorKind::Lost => sys::REDLOCK_ELOST,
            ErrorKind::TimedOut => sys::REDLOCK_ETIMEDOUT,
            ErrorKind::Canceled => sys::REDLOCK_ECANCELED,
            ErrorKind::Closed => sys::REDLOCK_ECLOSED,
            ErrorKind::WouldBlock => sys::REDLOCK_EWOULDBLOCK,
            ErrorKind::Io => sys::REDLOCK_EIO,
            ErrorKind::NotSupported => sys::REDLOCK_ENOTSUP,
            ErrorKind::Forked => sys::REDLOCK_EFORKED,
            ErrorKind::MaxHold => sys::REDLOCK_LOST_MAX_HOLD,
            ErrorKind::Other(c) => c,
        }
    }

    /// The code's name, e.g. `"REDLOCK_ELOCKED"`.
    pub fn name(self) -> &'static str {
        if self == ErrorKind::MaxHold {
            return "REDLOCK_LOST_MAX_HOLD"; // a lost reason: not in the error table
        }
        // SAFETY: redlock_err_name returns a static NUL-terminated string, never NULL.
        unsafe { static_str(sys::redlock_err_name(self.code())) }
    }

    /// True when trying again later may succeed (held, no quorum, wait ran out, expired).
    pub fn is_temporary(self) -> bool {
        matches!(
            self,
            ErrorKind::Locked | ErrorKind::NoQuorum | ErrorKind::TimedOut | ErrorKind::Expired
        )
    }

    /// Whether the library returns this code only after a decided round:
    /// the failures that carry the round's votes.
    fn decided_a_round(self) -> bool {
        matches!(
            self,
            ErrorKind::Locked
                | ErrorKind::NoQuorum
                | ErrorKind::Expired
                | ErrorKind::Lost
                | ErrorKind::TimedOut
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = if *self == ErrorKind::MaxHold {
            "the hold reached its bound (max hold): released on purpose"
        } else {
            // SAFETY: redlock_strerror returns a static string, never NULL.
            unsafe { static_str(sys::redlock_strerror(self.code())) }
        };
        write!(f, "{} ({})", msg, self.name())
    }
}

/// A failed call: its [`ErrorKind`] and, for a call about a resource, the
/// operation and the resource; for a failure of a decided round
/// ([`ErrorKind::Locked`], `NoQuorum`, `Expired`, `Lost`, `TimedOut`), the
/// votes of that call's own round ([`Error::votes`]).
///
/// Compare it with a kind directly (`err == ErrorKind::Locked`) or match
/// on [`Error::kind`].  Its `Display` is `OP "RESOURCE": MESSAGE (NAME)`,
/// followed by `: VOTES` when the votes explain the failure: no quorum, or a
/// master in its restart quarantine (with the time it has left).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Error {
    kind: ErrorKind,
    call: Option<Box<Call>>,
}

/// Which call failed, and its round's votes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Call {
    op: &'static str,
    resource: String,
    votes: Option<String>,
    /// Why the library refused the call, when it said (a node URI's reason).
    detail: Option<String>,
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of a library code (0 is not an error), without call details.
    pub fn from_code(code: i32) -> Error {
        ErrorKind::from_code(code).into()
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The library's code (`REDLOCK_ELOCKED` = -3, ...).
    pub fn code(&self) -> i32 {
        self.kind.code()
    }

    /// The code's name, e.g. `"REDLOCK_ELOCKED"`.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// True when trying again later may succeed (held, no quorum, wait ran out, expired).
    pub fn is_temporary(&self) -> bool {
        self.kind.is_temporary()
    }

    /// The call that failed (`"lock"`, `"try_lock"`, `"lock_wait"`,
    /// `"lock_many"`, `"semaphore"`, `"rwlock_read"`, `"rwlock_write"`,
    /// `"extend"`, `"unlock"`, `"inspect"`, `"revoke"`; `"add_node"` for a refused node URI, whose
    /// resource is the URI without its password), when known.
    pub fn op(&self) -> Option<&str> {
        self.call.as_ref().map(|c| c.op)
    }

    /// The resource of the call that failed (the first one for `lock_many`).
    pub fn resource(&self) -> Option<&str> {
        self.call.as_ref().map(|c| c.resource.as_str())
    }

    /// For a failure of a decided round, the one-line summary of that call's
    /// own round (`redlock_last_votes`, read on the calling thread right
    /// after the call: `"lost (no quorum): 127.0.0.1:7001=quarantined
    /// (restart quarantine: 41234 ms left) ..."`).  Diagnostics: do not
    /// parse it.
    pub fn votes(&self) -> Option<&str> {
        self.call.as_ref().and_then(|c| c.votes.as_deref())
    }

    /// The votes of [`Error::votes`], master by master (empty without
    /// votes).  For a program that reacts to why a round failed; the
    /// verdict names are the library's (see [`Vote::verdict`]).
    pub fn verdicts(&self) -> Vec<Vote> {
        self.votes().map(votes::parse).unwrap_or_default()
    }

    /// True when a master of the failed round did not vote because it was
    /// in its restart (or failover) quarantine: against freshly started
    /// masters, wait for the quarantine (max TTL) or turn it off
    /// ([`Builder::quarantine`]).
    pub fn is_quarantined(&self) -> bool {
        self.verdicts().iter().any(Vote::is_quarantined)
    }

    /// Whether the votes belong in the message: they are the reason of a
    /// no-quorum failure, and a quarantined master is what a program against
    /// freshly started masters must be told about.
    fn votes_explain(&self) -> Option<&str> {
        self.votes()
            .filter(|_| self.kind == ErrorKind::NoQuorum || self.is_quarantined())
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind, call: None }
    }
}

impl PartialEq<ErrorKind> for Error {
    fn eq(&self, other: &ErrorKind) -> bool {
        self.kind == *other
    }
}

impl PartialEq<Error> for ErrorKind {
    fn eq(&self, other: &Error) -> bool {
        *self == other.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = &self.call {
            write!(f, "{} {:?}: ", c.op, c.resource)?;
        }
        write!(f, "{}", self.kind)?;
        if let Some(d) = self.call.as_ref().and_then(|c| c.detail.as_deref()) {
            write!(f, ": {d}")?;
        }
        if let Some(v) = self.votes_explain() {
            write!(f, ": {v}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> std::io::Error {
        use std::io::ErrorKind as K;
        let kind = match e.kind {
            ErrorKind::InvalidArgument => K::InvalidInput,
            ErrorKind::NoMemory => K::OutOfMemory,
            ErrorKind::TimedOut => K::TimedOut,
            ErrorKind::Locked => K::WouldBlock,
            ErrorKind::NotSupported => K::Unsupported,
            _ => K::Other,
        };
        std::io::Error::new(kind, e)
    }
}

unsafe fn static_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    CStr::from_ptr(p).to_str().unwrap_or("")
}

fn check(rc: c_int) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::from_code(rc))
    }
}

/// The outcome of a blocking call about `resource` that returned `rc`, on
/// the thread that made it: a failure of a decided round carries the votes
/// the library kept for this thread, which are that call's.  `votes: false`
/// when the call is known to have decided no round.
fn call_result(
    client: *mut sys::redlock_t,
    rc: c_int,
    op: &'static str,
    resource: &str,
    votes: bool,
) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    let kind = ErrorKind::from_code(rc);
    let votes = if votes && kind.decided_a_round() {
        // SAFETY: a live client (the caller's), read on the calling thread.
        Some(unsafe { last_votes_of(client) })
    } else {
        None
    };
    Err(Error {
        kind,
        call: Some(Box::new(Call {
            op,
            resource: resource.to_owned(),
            votes,
            detail: None,
        })),
    })
}

/// redlock_last_votes as a String ("" on error).
unsafe fn last_votes_of(client: *mut sys::redlock_t) -> String {
    let mut buf = vec![0u8; 4096];
    let mut n = sys::redlock_last_votes(client, buf.as_mut_ptr() as *mut c_char, buf.len());
    if n >= 0 && n as usize >= buf.len() {
        // Longer: the same record again (this thread makes no call in between).
        buf = vec![0u8; n as usize + 1];
        n = sys::redlock_last_votes(client, buf.as_mut_ptr() as *mut c_char, buf.len());
    }
    if n < 0 {
        return String::new();
    }
    buf.truncate((n as usize).min(buf.len() - 1));
    String::from_utf8_lossy(&buf).into_owned()
}

/// A callback future's poll: the outcome the library's callback stored in
/// `state`, or, while there is none, `Pending` with the task registered for
/// the callback to wake (kept when it is the same task, so that repeated
/// polls do not clone the waker).  `fields` picks the outcome and waker out
/// of the future's own state type.
fn poll_outcome<S, T>(
    state: &Mutex<S>,
    cx: &Context<'_>,
    fields: impl FnOnce(&mut S) -> (&mut Option<T>, &mut Option<Waker>),
) -> Poll<T> {
    let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
    let (outcome, waker) = fields(&mut st);
    if let Some(o) = outcome.take() {
        return Poll::Ready(o);
    }
    match waker {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ => *waker = Some(cx.waker().clone()),
    }
    Poll::Pending
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| ErrorKind::InvalidArgument.into())
}

fn millis(d: Duration) -> Result<u32> {
    u32::try_from(d.as_millis()).map_err(|_| ErrorKind::InvalidArgument.into())
}

/// The C library's version string ("0.1.0").
pub fn version() -> &'static str {
    // SAFETY: static string.
    unsafe { static_str(sys::redlock_version()) }
}

/// True when the linked libredlock can connect to `rediss://` masters.
pub fn tls_supported() -> bool {
    // SAFETY: no arguments, any thread.
    unsafe { sys::redlock_tls_supported() != 0 }
}

/// The lost reason of a bounded hold that reached its bound
/// (`REDLOCK_LOST_MAX_HOLD`): the code of [`ErrorKind::MaxHold`], which the
/// watch receiver of [`Lock::watch_bounded`] and the [`ElectionEvent::Lost`]
/// of [`Client::elect_bounded`] carry.  Not a failure.
pub const LOST_MAX_HOLD: i32 = sys::REDLOCK_LOST_MAX_HOLD;

/// Bytes in an owner label ([`Builder::owner`]).
pub const MAX_OWNER: usize = sys::REDLOCK_MAX_OWNER;

/// Log levels for [`Builder::logger`].
pub mod log_level {
    pub const DEBUG: i32 = 0;
    pub const INFO: i32 = 1;
    pub const WARN: i32 = 2;
    pub const ERROR: i32 = 3;
}

// ---- builder ----------------------------------------------------------------------

type LogFn = Box<dyn Fn(i32, &str) + Send + Sync + 'static>;

/// Settings for [`Client`]; anything not set keeps the library default (retry
/// 3 times, 200 ms + up to 200 ms jitter; connect 1 s, request 100 ms; drift
/// 0.01; max TTL 60 s; quarantine on; fencing off; key prefix "").
#[derive(Default)]
pub struct Builder {
    nodes: Vec<String>,
    retry: Option<(i32, Duration, Duration)>,
    timeouts: Option<(Duration, Duration)>,
    drift: Option<f64>,
    max_ttl: Option<Duration>,
    quarantine: Option<bool>,
    fencing: Option<bool>,
    key_prefix: Option<String>,
    owner: Option<String>,
    logger: Option<(i32, LogFn)>,
    tls: Option<(Option<String>, Option<(String, String)>)>,
    tls_server_name: Option<String>,
    tls_verify: Option<bool>,
    allow_discovered: Vec<String>,
}

impl Builder {
    /// One master: `redis://[[user]:password@]host[:port][/db]` or `unix:///path`.
    pub fn node(mut self, uri: impl Into<String>) -> Self {
        self.nodes.push(uri.into());
        self
    }
    /// Several masters.
    pub fn nodes<I, S>(mut self, uris: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.nodes.extend(uris.into_iter().map(Into::into));
        self
    }
    /// `count` extra attempts after the first (-1 unbounded, 0 one try), each
    /// after `delay` plus a random 0..`jitter`.
    pub fn retry(mut self, count: i32, delay: Duration, jitter: Duration) -> Self {
        self.retry = Some((count, delay, jitter));
        self
    }
    /// Bounds on connecting to a master, and on each round of requests.
    pub fn timeouts(mut self, connect: Duration, request: Duration) -> Self {
        self.timeouts = Some((connect, request));
        self
    }
    /// 0 <= factor < 0.5.
    pub fn drift_factor(mut self, factor: f64) -> Self {
        self.drift = Some(factor);
        self
    }
    /// Largest TTL, and the length of the restart quarantine.
    pub fn max_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = Some(ttl);
        self
    }
    /// Restart quarantine (on by default): pass `false` against freshly started masters.
    pub fn quarantine(mut self, on: bool) -> Self {
        self.quarantine = Some(on);
        self
    }
    /// Fencing tokens ([`Lock::fence`]).
    pub fn fencing(mut self, on: bool) -> Self {
        self.fencing = Some(on);
        self
    }
    /// The Redis key is `prefix + resource`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = Some(prefix.into());
        self
    }
    /// The client's owner label: a name a person can read (`"host:pid"`,
    /// `"billing-worker-3"`) carried in the value of every lock, permit,
    /// read/write hold and election lease the client takes, so that
    /// [`Client::inspect`] (and anyone who reads the masters) can tell who
    /// holds a resource.  Anyone who can read the masters reads it: never
    /// put a secret in it.  1..=[`MAX_OWNER`] bytes of printable ASCII
    /// (0x21..=0x7e) except `~`; `""` sets none (the default).
    /// [`Builder::open`] fails with [`ErrorKind::InvalidArgument`] for
    /// anything else.  Other Redlock clients still exclude and are excluded:
    /// the value keeps its 128 random bits ([`Lock::value`] is those 32 hex
    /// digits, `~`, the label).
    pub fn owner(mut self, label: impl Into<String>) -> Self {
        self.owner = Some(label.into());
        self
    }
    /// Receives the library's log messages at `min_level` and above, on the
    /// library's I/O thread: keep it short; blocking calls made from it fail
    /// with [`ErrorKind::WouldBlock`].  A panic in it is caught and ignored.
    pub fn logger<F>(mut self, min_level: i32, f: F) -> Self
    where
        F: Fn(i32, &str) + Send + Sync + 'static,
    {
        self.logger = Some((min_level, Box::new(f)));
        self
    }

    /// TLS trust for `rediss://` masters: `ca` is a PEM bundle or an OpenSSL
    /// hashed directory of trusted authorities (`None`: the system's store).
    /// [`Builder::open`] fails with [`ErrorKind::NotSupported`] in a build without
    /// TLS ([`tls_supported`]), [`ErrorKind::InvalidArgument`] when a file is unusable.
    pub fn tls_ca(mut self, ca: impl Into<String>) -> Self {
        let cur = self.tls.take().unwrap_or((None, None));
        self.tls = Some((Some(ca.into()), cur.1));
        self
    }
    /// This client's certificate and private key (PEM files), for masters
    /// that require one (mutual TLS).
    pub fn tls_cert(mut self, cert: impl Into<String>, key: impl Into<String>) -> Self {
        let cur = self.tls.take().unwrap_or((None, None));
        self.tls = Some((cur.0, Some((cert.into(), key.into()))));
        self
    }
    /// The name the masters' certificates must carry (and the SNI), instead
    /// of each URI's host.
    pub fn tls_server_name(mut self, name: impl Into<String>) -> Self {
        self.tls_server_name = Some(name.into());
        self
    }
    /// `false` turns off the certificate and host name checks (tests only).
    pub fn tls_verify(mut self, on: bool) -> Self {
        self.tls_verify = Some(on);
        self
    }

    /// Adds a host pattern (fnmatch glob, ASCII case ignored: `"10.0.0.*"`,
    /// `"*.redis.internal"`) for the addresses that sentinels and cluster
    /// nodes name; call it once per pattern.  Once any is set, a discovered
    /// address whose host matches none is never connected to: that voter
    /// votes down ("discovered address HOST:PORT not allowed").  The URIs'
    /// own hosts are not checked.  [`Builder::open`] fails with
    /// [`ErrorKind::InvalidArgument`] for `""`, a pattern over 255 bytes or
    /// more than 64 patterns.
    pub fn allow_discovered(mut self, pattern: impl Into<String>) -> Self {
        self.allow_discovered.push(pattern.into());
        self
    }

    /// Opens the client: starts its I/O thread and connects to every master,
    /// returning within the connect timeout even when masters are down (they
    /// are retried in the background and vote "no" meanwhile).
    pub fn open(self) -> Result<Client> {
        if self.nodes.is_empty() {
            return Err(ErrorKind::InvalidArgument.into());
        }
        struct Opts(*mut sys::redlock_options_t);
        impl Drop for Opts {
            fn drop(&mut self) {
                // SAFETY: created by redlock_options_new, freed once.
                unsafe { sys::redlock_options_free(self.0) }
            }
        }
        // SAFETY: plain constructor.
        let raw = unsafe { sys::redlock_options_new() };
        if raw.is_null() {
            return Err(ErrorKind::NoMemory.into());
        }
        let o = Opts(raw);
        // SAFETY (all setters below): o.0 is a live options object used by
        // this thread only; strings are NUL-terminated and copied by the library.
        add_nodes(o.0, &self.nodes)?;
        if let Some((count, delay, jitter)) = self.retry {
            check(unsafe {
                sys::redlock_options_set_retry(o.0, count, millis(delay)?, millis(jitter)?)
            })?;
        }
        if let Some((c, r)) = self.timeouts {
            check(unsafe { sys::redlock_options_set_timeouts(o.0, millis(c)?, millis(r)?) })?;
        }
        if let Some(f) = self.drift {
            check(unsafe { sys::redlock_options_set_drift_factor(o.0, f) })?;
        }
        if let Some(t) = self.max_ttl {
            check(unsafe { sys::redlock_options_set_max_ttl(o.0, millis(t)?) })?;
        }
        if let Some(q) = self.quarantine {
            check(unsafe { sys::redlock_options_set_quarantine(o.0, q as c_int) })?;
        }
        if let Some(f) = self.fencing {
            check(unsafe { sys::redlock_options_set_fencing(o.0, f as c_int) })?;
        }
        if let Some(p) = &self.key_prefix {
            let c = cstring(p)?;
            check(unsafe { sys::redlock_options_set_key_prefix(o.0, c.as_ptr()) })?;
        }
        if let Some(label) = &self.owner {
            let c = cstring(label)?;
            check(unsafe { sys::redlock_options_set_owner(o.0, c.as_ptr()) })?;
        }
        if let Some((ca, cert)) = &self.tls {
            let (ca_file, ca_dir) = match ca {
                Some(p) if std::path::Path::new(p).is_dir() => (None, Some(cstring(p)?)),
                Some(p) => (Some(cstring(p)?), None),
                None => (None, None),
            };
            let (cf, kf) = match cert {
                Some((c, k)) => (Some(cstring(c)?), Some(cstring(k)?)),
                None => (None, None),
            };
            let p = |c: &Option<CString>| c.as_ref().map_or(ptr::null(), |c| c.as_ptr());
            check(unsafe {
                sys::redlock_options_set_tls(o.0, p(&ca_file), p(&ca_dir), p(&cf), p(&kf))
            })?;
        }
        if let Some(n) = &self.tls_server_name {
            let c = cstring(n)?;
            check(unsafe { sys::redlock_options_set_tls_server_name(o.0, c.as_ptr()) })?;
        }
        if let Some(v) = self.tls_verify {
            check(unsafe { sys::redlock_options_set_tls_verify(o.0, v as c_int) })?;
        }
        for p in &self.allow_discovered {
            let c = cstring(p)?;
            check(unsafe { sys::redlock_options_allow_discovered(o.0, c.as_ptr()) })?;
        }
        let mut log: Option<Box<LogFn>> = None;
        if let Some((level, f)) = self.logger {
            let boxed: Box<LogFn> = Box::new(f);
            let arg = &*boxed as *const LogFn as *mut c_void;
            check(unsafe { sys::redlock_options_set_log(o.0, level, Some(log_trampoline), arg) })?;
            log = Some(boxed);
        }
        let mut max_ttl_ms = 0u32;
        // SAFETY: o.0 is live; on failure max_ttl_ms stays 0 (unknown).
        unsafe { sys::redlock_options_get_max_ttl(o.0, &mut max_ttl_ms) };
        let mut client = ptr::null_mut();
        // SAFETY: o.0 is valid; the library snapshots it (the log closure,
        // whose address it keeps, lives in Inner until after redlock_close).
        check(unsafe { sys::redlock_open(&mut client, o.0) })?;
        Ok(Client {
            inner: Arc::new(Inner {
                ptr: client,
                _log: log,
                max_ttl_ms,
            }),
        })
    }
}

/// Adds the masters' URIs.  The library gives the reason for a refused URI
/// only through the options' log callback: one that keeps it is set around
/// these calls (open sets the real one afterwards), so that the error says
/// why.  The error's resource is the URI without its userinfo (a password).
fn add_nodes(o: *mut sys::redlock_options_t, nodes: &[String]) -> Result<()> {
    unsafe extern "C" fn keep(_level: c_int, msg: *const c_char, arg: *mut c_void) {
        // SAFETY: arg is add_nodes' `why`, alive during these synchronous calls.
        let why = &mut *(arg as *mut Option<String>);
        let text = CStr::from_ptr(msg).to_string_lossy();
        *why = Some(
            text.trim_start_matches("redlock_options_add_node: ")
                .to_owned(),
        );
    }
    let mut why: Option<String> = None;
    let arg = &mut why as *mut Option<String> as *mut c_void;
    // SAFETY: o is the caller's live options object; `why` outlives the
    // callback, which is removed before returning.
    check(unsafe { sys::redlock_options_set_log(o, sys::REDLOCK_LOG_ERROR, Some(keep), arg) })?;
    let mut result = Ok(());
    for n in nodes {
        let c = match cstring(n) {
            Ok(c) => c,
            Err(e) => {
                result = Err(e);
                break;
            }
        };
        // SAFETY: as above; the string is NUL-terminated and copied.
        let rc = unsafe { sys::redlock_options_add_node(o, c.as_ptr()) };
        if rc != 0 {
            result = Err(Error {
                kind: ErrorKind::from_code(rc),
                call: Some(Box::new(Call {
                    op: "add_node",
                    resource: redact(n),
                    votes: None,
                    // SAFETY: the callback ran (if at all) during the call above.
                    detail: unsafe { (*(arg as *mut Option<String>)).take() },
                })),
            });
            break;
        }
    }
    // SAFETY: o is live; no callback after this.
    unsafe { sys::redlock_options_set_log(o, sys::REDLOCK_LOG_WARN, None, ptr::null_mut()) };
    result
}

/// A node URI for messages, as the C parser reads it: its password and any
/// `sentinel_password` replaced by `***` (`redlock_uri_redact`), so a
/// password holding `/` or `@` is hidden too.
fn redact(uri: &str) -> String {
    let Ok(c) = CString::new(uri) else {
        return "(invalid URI)".to_owned();
    };
    // SAFETY: c is NUL-terminated; a NULL buffer of size 0 asks for the length.
    let n = unsafe { sys::redlock_uri_redact(c.as_ptr(), ptr::null_mut(), 0) };
    let Ok(len) = usize::try_from(n) else {
        return "(invalid URI)".to_owned();
    };
    let mut buf = vec![0u8; len + 1];
    // SAFETY: buf has len + 1 bytes, the size passed.
    let m =
        unsafe { sys::redlock_uri_redact(c.as_ptr(), buf.as_mut_ptr() as *mut c_char, buf.len()) };
    if m != n {
        return "(invalid URI)".to_owned();
    }
    buf.truncate(len);
    String::from_utf8_lossy(&buf).into_owned()
}

unsafe extern "C" fn log_trampoline(level: c_int, msg: *const c_char, arg: *mut c_void) {
    // SAFETY: arg is the Box<LogFn> kept alive by Inner until redlock_close returned.
    let f = &*(arg as *const LogFn);
    let text = CStr::from_ptr(msg).to_string_lossy();
    let _ = catch_unwind(AssertUnwindSafe(|| f(level, &text)));
}

// ---- client ---------------------------------------------------------------------

struct Inner {
    ptr: *mut sys::redlock_t,
    _log: Option<Box<LogFn>>,
    /// The largest TTL the library takes, in ms (0: unknown).
    max_ttl_ms: u32,
}

// SAFETY: the C client is made for concurrent use: every blocking call is safe
// from any number of threads at once, the callback forms from any thread, and
// redlock_close may run on any thread once no other call is in flight — which
// Arc guarantees, as Inner is dropped only after the last Client and Lock.
// The logger it may call is Send + Sync.
unsafe impl Send for Inner {}
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: last reference: no call is in flight and no Lock is left
        // (each Lock holds a Client).  Runs the close, joins the I/O thread;
        // after it no callback runs, so the logger box may go.
        unsafe { sys::redlock_close(self.ptr) }
    }
}

/// A Redlock client on N masters, with its own I/O thread.  Cloning is cheap
/// (a reference count); the C client is closed when the last `Client` clone
/// and the last [`Lock`] taken through it are dropped.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// Settings for a new client.
    pub fn builder() -> Builder {
        Builder::default()
    }

    fn raw(&self) -> *mut sys::redlock_t {
        self.inner.ptr
    }

    /// A TTL checked as the library would (1 ms .. the max TTL), so that a
    /// refusal says the limit and the builder option that raises it.
    fn ttl_ms(&self, op: &'static str, resource: &str, ttl: Duration) -> Result<u32> {
        let refuse = |detail: String| Error {
            kind: ErrorKind::InvalidArgument,
            call: Some(Box::new(Call {
                op,
                resource: resource.to_owned(),
                votes: None,
                detail: Some(detail),
            })),
        };
        let max = self.inner.max_ttl_ms;
        match u32::try_from(ttl.as_millis()) {
            Ok(0) => Err(refuse("the TTL must be at least 1 ms".to_owned())),
            Ok(t) if max == 0 || t <= max => Ok(t),
            _ => Err(refuse(format!(
                "TTL {:?} is above the client's max TTL ({:?}); raise it with Builder::max_ttl",
                ttl,
                Duration::from_millis(u64::from(max))
            ))),
        }
    }

    /// Acquires `resource`, retrying by the retry policy.
    pub fn lock(&self, resource: &str, ttl: Duration) -> Result<Lock> {
        let r = cstring(resource)?;
        let ttl = self.ttl_ms("lock", resource, ttl)?;
        let mut out = ptr::null_mut();
        // SAFETY: live client, NUL-terminated resource, out is written on success.
        let rc = unsafe { sys::redlock_lock(self.raw(), r.as_ptr(), ttl, &mut out) };
        call_result(self.raw(), rc, "lock", resource, true)?;
        Ok(self.adopt(out, vec![resource.to_owned()]))
    }

    /// One attempt ([`ErrorKind::Locked`] when held elsewhere).
    pub fn try_lock(&self, resource: &str, ttl: Duration) -> Result<Lock> {
        let r = cstring(resource)?;
        let ttl = self.ttl_ms("try_lock", resource, ttl)?;
        let mut out = ptr::null_mut();
        // SAFETY: as in lock().
        let rc = unsafe { sys::redlock_trylock(self.raw(), r.as_ptr(), ttl, &mut out) };
        call_result(self.raw(), rc, "try_lock", resource, true)?;
        Ok(self.adopt(out, vec![resource.to_owned()]))
    }

    /// Waits up to `wait` for the holder to release (woken by the release);
    /// [`ErrorKind::TimedOut`] when `wait` runs out.
    pub fn lock_wait(&self, resource: &str, ttl: Duration, wait: Duration) -> Result<Lock> {
        let r = cstring(resource)?;
        let (ttl, wait) = (self.ttl_ms("lock_wait", resource, ttl)?, millis(wait)?);
        let mut out = ptr::null_mut();
        // SAFETY: as in lock().
        let rc = unsafe { sys::redlock_lock_wait(self.raw(), r.as_ptr(), ttl, wait, &mut out) };
        call_result(self.raw(), rc, "lock_wait", resource, true)?;
        Ok(self.adopt(out, vec![resource.to_owned()]))
    }

    /// All resources (1..64, distinct) or none, as one lock.
    pub fn lock_many<I, S>(&self, resources: I, ttl: Duration) -> Result<Lock>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let names: Vec<String> = resources
            .into_iter()
            .map(|s| s.as_ref().to_owned())
            .collect();
        let cs = names
            .iter()
            .map(|s| cstring(s))
            .collect::<Result<Vec<_>>>()?;
        let ptrs: Vec<*const c_char> = cs.iter().map(|c| c.as_ptr()).collect();
        let first = names.first().map_or("", |s| s.as_str());
        let ttl = self.ttl_ms("lock_many", first, ttl)?;
        let mut out = ptr::null_mut();
        // SAFETY: ptrs holds ptrs.len() NUL-terminated strings alive for the call.
        let rc =
            unsafe { sys::redlock_lock_many(self.raw(), ptrs.as_ptr(), ptrs.len(), ttl, &mut out) };
        call_result(self.raw(), rc, "lock_many", first, true)?;
        Ok(self.adopt(out, names))
    }

    /// A permit of the counting semaphore `name`: at most `limit`
    /// (1..=1024, the same for every client) held at once.  `wait` zero: one
    /// try ([`ErrorKind::Locked`] when every permit is taken); otherwise wait for
    /// a release up to `wait` ([`ErrorKind::TimedOut`]).  The permit is a [`Lock`]
    /// (released on drop; `extend`, `watch`); its `resource()` names the
    /// slot (`"NAME:sem:3"`).
    pub fn semaphore(&self, name: &str, limit: u32, ttl: Duration, wait: Duration) -> Result<Lock> {
        let n = cstring(name)?;
        let (ttl, wait) = (self.ttl_ms("semaphore", name, ttl)?, millis(wait)?);
        let mut out = ptr::null_mut();
        // SAFETY: as in lock().
        let rc = unsafe {
            sys::redlock_semaphore_acquire(self.raw(), n.as_ptr(), limit, ttl, wait, &mut out)
        };
        call_result(self.raw(), rc, "semaphore", name, true)?;
        Ok(self.adopt(out, vec![name.to_owned()]))
    }

    /// A read hold of the read-write lock `name` (shared with readers,
    /// excluded by a writer).  `wait` as in [`Client::semaphore`].
    pub fn rwlock_read(&self, name: &str, ttl: Duration, wait: Duration) -> Result<Lock> {
        let n = cstring(name)?;
        let (ttl, wait) = (self.ttl_ms("rwlock_read", name, ttl)?, millis(wait)?);
        let mut out = ptr::null_mut();
        // SAFETY: as in lock().
        let rc = unsafe { sys::redlock_rwlock_read(self.raw(), n.as_ptr(), ttl, wait, &mut out) };
        call_result(self.raw(), rc, "rwlock_read", name, true)?;
        Ok(self.adopt(out, vec![name.to_owned()]))
    }

    /// The write hold of the read-write lock `name` (excludes readers and
    /// writers).  `wait` as in [`Client::semaphore`].
    pub fn rwlock_write(&self, name: &str, ttl: Duration, wait: Duration) -> Result<Lock> {
        let n = cstring(name)?;
        let (ttl, wait) = (self.ttl_ms("rwlock_write", name, ttl)?, millis(wait)?);
        let mut out = ptr::null_mut();
        // SAFETY: as in lock().
        let rc = unsafe { sys::redlock_rwlock_write(self.raw(), n.as_ptr(), ttl, wait, &mut out) };
        call_result(self.raw(), rc, "rwlock_write", name, true)?;
        Ok(self.adopt(out, vec![name.to_owned()]))
    }

    // ---- futures: cancelable acquisitions ---------------------------------------

    /// [`Client::lock`] as a future ([`Acquire`], any executor).  Dropping
    /// the future before it completed cancels the call.
    pub fn lock_async(&self, resource: &str, ttl: Duration) -> Acquire {
        self.acquire_one(
            "lock",
            resource,
            ttl,
            Duration::ZERO,
            |c, r, t, w, cb, arg, id| {
                // SAFETY: live client, NUL-terminated resource; arg as Acquire::submit says.
                unsafe { sys::redlock_lock_async_ex(c, r, t, w, cb, arg, id) }
            },
        )
    }

    /// [`Client::lock_wait`] as a future: waits up to `wait` for the holder
    /// to release (a zero `wait` is [`Client::lock_async`]).  Dropping the
    /// future stops the wait: no further attempt is made.
    pub fn lock_wait_async(&self, resource: &str, ttl: Duration, wait: Duration) -> Acquire {
        self.acquire_one(
            "lock_wait",
            resource,
            ttl,
            wait,
            |c, r, t, w, cb, arg, id| {
                // SAFETY: as in lock_async.
                unsafe { sys::redlock_lock_async_ex(c, r, t, w, cb, arg, id) }
            },
        )
    }

    /// [`Client::lock_many`] as a future.
    pub fn lock_many_async<I, S>(&self, resources: I, ttl: Duration) -> Acquire
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let (names, cs) = acquire::names(resources);
        let first = names.first().map_or("", |s| s.as_str());
        let (cs, ttl) = match (cs, self.ttl_ms("lock_many", first, ttl)) {
            (Ok(cs), Ok(ttl)) => (cs, ttl),
            (Err(e), _) | (_, Err(e)) => return Acquire::failed(self, "lock_many", names, e),
        };
        let ptrs: Vec<*const c_char> = cs.iter().map(|c| c.as_ptr()).collect();
        Acquire::submit(self, "lock_many", names, |cb, arg, id| {
            // SAFETY: ptrs holds ptrs.len() NUL-terminated strings alive for
            // the call (the library copies them).
            unsafe {
                sys::redlock_lock_many_async_ex(
                    self.raw(),
                    ptrs.as_ptr(),
                    ptrs.len(),
                    ttl,
                    cb,
                    arg,
                    id,
                )
            }
        })
    }

    /// [`Client::semaphore`] as a future; dropping it stops a wait for a permit.
    pub fn semaphore_async(
        &self,
        name: &str,
        limit: u32,
        ttl: Duration,
        wait: Duration,
    ) -> Acquire {
        self.acquire_one("semaphore", name, ttl, wait, |c, n, t, w, cb, arg, id| {
            // SAFETY: as in lock_async.
            unsafe { sys::redlock_semaphore_acquire_async_ex(c, n, limit, t, w, cb, arg, id) }
        })
    }

    /// [`Client::rwlock_read`] as a future.
    pub fn rwlock_read_async(&self, name: &str, ttl: Duration, wait: Duration) -> Acquire {
        self.acquire_one("rwlock_read", name, ttl, wait, |c, n, t, w, cb, arg, id| {
            // SAFETY: as in lock_async.
            unsafe { sys::redlock_rwlock_read_async_ex(c, n, t, w, cb, arg, id) }
        })
    }

    /// [`Client::rwlock_write`] as a future; dropping it withdraws the
    /// waiting writer's intent.
    pub fn rwlock_write_async(&self, name: &str, ttl: Duration, wait: Duration) -> Acquire {
        self.acquire_one(
            "rwlock_write",
            name,
            ttl,
            wait,
            |c, n, t, w, cb, arg, id| {
                // SAFETY: as in lock_async.
                unsafe { sys::redlock_rwlock_write_async_ex(c, n, t, w, cb, arg, id) }
            },
        )
    }

    /// One named acquisition through an `_ex` callback form `f(client,
    /// name, ttl_ms, wait_ms, cb, arg, id)`.
    fn acquire_one<F>(
        &self,
        op: &'static str,
        name: &str,
        ttl: Duration,
        wait: Duration,
        f: F,
    ) -> Acquire
    where
        F: FnOnce(
            *mut sys::redlock_t,
            *const c_char,
            u32,
            u32,
            sys::redlock_lock_cb,
            *mut c_void,
            *mut u64,
        ) -> c_int,
    {
        let names = vec![name.to_owned()];
        let (n, ttl, wait) = match (cstring(name), self.ttl_ms(op, name, ttl), millis(wait)) {
            (Ok(n), Ok(t), Ok(w)) => (n, t, w),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                return Acquire::failed(self, op, names, e)
            }
        };
        Acquire::submit(self, op, names, |cb, arg, id| {
            f(self.raw(), n.as_ptr(), ttl, wait, cb, arg, id)
        })
    }

    /// Campaigns for leadership of `name` with a lease of `ttl` (extended
    /// automatically while leader), until [`Election::resign`] or the
    /// Election is dropped.  The receiver gets an [`ElectionEvent`] per term
    /// won and per term lost; it disconnects after the resignation.
    pub fn elect(
        &self,
        name: &str,
        ttl: Duration,
    ) -> Result<(Election, mpsc::Receiver<ElectionEvent>)> {
        self.elect_with(name, ttl, None)
    }

    /// [`Client::elect`] with a bound on every term: `max_hold` after a
    /// term's grant the leader resigns that term (its lease is released,
    /// which wakes the other campaigners), the receiver gets
    /// [`ElectionEvent::Lost`] with an error of kind [`ErrorKind::MaxHold`]
    /// (not a failure), and the election campaigns again after its back-off,
    /// which gives the others a head start.  `max_hold`: at least 1 ms.
    pub fn elect_bounded(
        &self,
        name: &str,
        ttl: Duration,
        max_hold: Duration,
    ) -> Result<(Election, mpsc::Receiver<ElectionEvent>)> {
        match millis(max_hold)? {
            0 => Err(ErrorKind::InvalidArgument.into()),
            b => self.elect_with(name, ttl, Some(b)),
        }
    }

    fn elect_with(
        &self,
        name: &str,
        ttl: Duration,
        bound: Option<u32>,
    ) -> Result<(Election, mpsc::Receiver<ElectionEvent>)> {
        let n = cstring(name)?;
        let ttl = self.ttl_ms("elect", name, ttl)?;
        let (tx, rx) = mpsc::channel();
        let st = Box::into_raw(Box::new(ElectionState {
            tx: Mutex::new(tx),
            term: AtomicU64::new(0),
            leader: AtomicBool::new(false),
        }));
        let mut out = ptr::null_mut();
        let (el, lo): (sys::redlock_elected_cb, sys::redlock_election_lost_cb) =
            (Some(elected_trampoline), Some(election_lost_trampoline));
        let (c, np, arg) = (self.raw(), n.as_ptr(), st as *mut c_void);
        // SAFETY: live client; st stays allocated until the resignation
        // returned (no callback after it) or, on failure, is freed here.
        let rc = unsafe {
            match bound {
                Some(b) => sys::redlock_elect_bounded(c, np, ttl, b, el, lo, arg, &mut out),
                None => sys::redlock_elect(c, np, ttl, el, lo, arg, &mut out),
            }
        };
        if rc != 0 {
            // SAFETY: refused: no callback ever runs with st.
            drop(unsafe { Box::from_raw(st) });
            return Err(Error::from_code(rc));
        }
        let h = NonNull::new(out).expect("redlock: elect succeeded without a handle");
        Ok((
            Election {
                client: self.clone(),
                handle: Some(h),
                state: st,
                name: name.to_owned(),
            },
            rx,
        ))
    }

    /// The client's counters, gauges and latency histograms
    /// (`redlock_stats`) as one JSON object (text: parse it with the JSON
    /// library of your choice).  [`ErrorKind::NotSupported`] with stats off.
    pub fn stats(&self) -> Result<String> {
        self.stats_format(sys::REDLOCK_STATS_JSON)
    }

    /// The same figures as Prometheus text exposition (format 0.0.4).
    pub fn stats_prometheus(&self) -> Result<String> {
        self.stats_format(sys::REDLOCK_STATS_PROMETHEUS)
    }

    fn stats_format(&self, format: c_int) -> Result<String> {
        // SAFETY: size 0 with a NULL buffer only measures.
        let mut n = unsafe { sys::redlock_stats(self.raw(), format, ptr::null_mut(), 0) };
        loop {
            if n < 0 {
                return Err(Error::from_code(n));
            }
            let size = n as usize + 4096; // counters may grow in between
            let mut buf = vec![0u8; size];
            // SAFETY: buf is writable for size bytes.
            n = unsafe {
                sys::redlock_stats(self.raw(), format, buf.as_mut_ptr() as *mut c_char, size)
            };
            if n >= 0 && (n as usize) < size {
                buf.truncate(n as usize);
                return Ok(String::from_utf8_lossy(&buf).into_owned());
            }
        }
    }

    fn adopt(&self, h: *mut sys::redlock_lock_t, resources: Vec<String>) -> Lock {
        let h = NonNull::new(h).expect("redlock: success without a lock handle");
        // SAFETY: a live handle; the strings are owned by it, copied here.
        let (resource, value, owner, fence) = unsafe {
            (
                CStr::from_ptr(sys::redlock_lock_resource(h.as_ptr()))
                    .to_string_lossy()
                    .into_owned(),
                CStr::from_ptr(sys::redlock_lock_value(h.as_ptr()))
                    .to_string_lossy()
                    .into_owned(),
                CStr::from_ptr(sys::redlock_lock_owner(h.as_ptr()))
                    .to_string_lossy()
                    .into_owned(),
                sys::redlock_lock_fence(h.as_ptr()),
            )
        };
        Lock {
            client: self.clone(),
            handle: Some(h),
            resource,
            resources,
            value,
            owner,
            fence,
            watch: Mutex::new(None),
        }
    }

    /// One-line summary of the latest round a call of this thread waited
    /// on (diagnostics; do not parse).  A failed call's own is also in its
    /// error ([`Error::votes`]).
    pub fn last_votes(&self) -> String {
        // SAFETY: live client.
        unsafe { last_votes_of(self.raw()) }
    }
}

// ---- lock -----------------------------------------------------------------------

/// State shared with the watch's lost callback.  Boxed, its address passed
/// as the callback's `arg`; freed only once no callback can come any more.
struct WatchState {
    tx: Mutex<Option<mpsc::Sender<Error>>>,
    lost: AtomicBool,
}

unsafe extern "C" fn lost_trampoline(
    _lock: *mut sys::redlock_lock_t,
    reason: c_int,
    arg: *mut c_void,
) {
    // SAFETY: arg is a live WatchState (see Lock::release).
    let st = &*(arg as *const WatchState);
    st.lost.store(true, Ordering::SeqCst);
    let tx = st.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(tx) = tx {
        let code = if reason == 0 {
            sys::REDLOCK_ELOST
        } else {
            reason
        };
        let _ = tx.send(Error::from_code(code)); // never blocks; then dropped: disconnects
    }
}

struct WatchPtr(*mut WatchState);
// SAFETY: WatchState is Sync (Mutex + AtomicBool); the pointer is only
// dereferenced by the lost callback and freed by the lock's release.
unsafe impl Send for WatchPtr {}

/// A held lock: a guard released on all masters when dropped (or by
/// [`Lock::unlock`], which reports the outcome).
///
/// `Send + Sync`: the C library allows every accessor, `extend` and `watch`
/// on a live handle from any thread at once; the only call that invalidates
/// the handle (unlock) needs `self` by value or `Drop`, which the borrow
/// checker makes exclusive.  The handle stays valid while the Lock lives
/// because the Lock keeps its Client (and so the C client) alive.
pub struct Lock {
    client: Client,
    handle: Option<NonNull<sys::redlock_lock_t>>,
    resource: String,
    resources: Vec<String>,
    value: String,
    owner: String,
    fence: u64,
    watch: Mutex<Option<WatchPtr>>,
}

// SAFETY: see the type's documentation.
unsafe impl Send for Lock {}
unsafe impl Sync for Lock {}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("resource", &self.resource)
            .field("fence", &self.fence)
            .field("validity_ms", &self.validity_ms())
            .finish()
    }
}

impl Lock {
    fn h(&self) -> *mut sys::redlock_lock_t {
        self.handle
            .expect("redlock: lock used after release")
            .as_ptr()
    }

    /// The (first) resource, without the key prefix.
    pub fn resource(&self) -> &str {
        &self.resource
    }
    /// Every resource of the lock (`lock_many`).
    pub fn resources(&self) -> &[String] {
        &self.resources
    }
    /// The value stored in Redis: 32 random hex digits, then `~` and the
    /// owner label when its client has one ([`Builder::owner`]).
    pub fn value(&self) -> &str {
        &self.value
    }
    /// The owner label the value carries, `""` when none.
    pub fn owner(&self) -> &str {
        &self.owner
    }
    /// Fencing token; 0 without [`Builder::fencing`].
    pub fn fence(&self) -> u64 {
        self.fence
    }
    /// Local estimate of the validity left, in ms (<= 0 once expired).
    pub fn validity_ms(&self) -> i64 {
        // SAFETY: live handle (see the type's documentation).
        unsafe { sys::redlock_lock_validity_ms(self.h()) }
    }
    /// True once the lock is known lost (watch, failed extension) or expired.
    pub fn is_lost(&self) -> bool {
        let watched_lost = self
            .watch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            // SAFETY: the state lives until release, which needs &mut self.
            .is_some_and(|w| unsafe { (*w.0).lost.load(Ordering::SeqCst) });
        // SAFETY: live handle.
        watched_lost || unsafe { sys::redlock_lock_is_lost(self.h()) != 0 }
    }

    /// Sets the TTL to `ttl` from now on a quorum ([`ErrorKind::Lost`] if lost or expired).
    pub fn extend(&self, ttl: Duration) -> Result<()> {
        let ttl = self.client.ttl_ms("extend", &self.resource, ttl)?;
        // SAFETY: live client and handle.
        let (lost_before, rc) = unsafe {
            (
                sys::redlock_lock_is_lost(self.h()) != 0,
                sys::redlock_extend(self.client.raw(), self.h(), ttl),
            )
        };
        // Lost already (or run out): ELOST without a round, so no votes.
        call_result(
            self.client.raw(),
            rc,
            "extend",
            &self.resource,
            !lost_before,
        )
    }

    /// [`Lock::extend`] as a future ([`Round`], any executor): the executor
    /// thread only submits the extension (`redlock_extend_async`); the
    /// library's I/O thread completes it.  Dropping the future stops waiting,
    /// not the round, which is already sent.
    pub fn extend_async(&self, ttl: Duration) -> Round<'_> {
        let ttl = match self.client.ttl_ms("extend", &self.resource, ttl) {
            Ok(t) => t,
            Err(e) => return Round::failed(&self.client, "extend", &self.resource, Some(e)),
        };
        let h = match self.handle {
            Some(h) => h.as_ptr(),
            None => {
                let e = Error::from(ErrorKind::InvalidArgument);
                return Round::failed(&self.client, "extend", &self.resource, Some(e));
            }
        };
        // SAFETY: live handle.
        let lost_before = unsafe { sys::redlock_lock_is_lost(h) != 0 };
        // Lost already (or run out): ELOST without a round, so no votes.
        Round::submit(
            &self.client,
            "extend",
            &self.resource,
            !lost_before,
            None,
            |cb, arg| {
                // SAFETY: live client and handle (borrowed by the future);
                // arg as Round::submit says.
                unsafe { sys::redlock_extend_async(self.client.raw(), h, ttl, cb, arg) }
            },
        )
    }

    /// [`Lock::unlock`] as a future ([`Round`], any executor): the release
    /// is sent at once (`redlock_unlock_async`) and the lock is released
    /// whatever the outcome; the future tells it without blocking the
    /// executor thread.
    pub fn unlock_async(mut self) -> Round<'static> {
        let client = self.client.clone();
        let resource = std::mem::take(&mut self.resource);
        let h = match self.handle.take() {
            Some(h) => h,
            None => return Round::failed(&client, "unlock", &resource, None),
        };
        let watch = self
            .watch
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        Round::submit(&client, "unlock", &resource, true, watch, |cb, arg| {
            // SAFETY: live client and handle, which the unlock frees after its
            // callback; arg as Round::submit says.
            unsafe { sys::redlock_unlock_async(client.raw(), h.as_ptr(), cb, arg) }
        })
    }

    /// Keeps the lock extended (by its last TTL) until it is released.  The
    /// receiver gets one [`ErrorKind::Lost`] error if the lock is lost, and is
    /// disconnected after that or when the lock is released.  A lock can be
    /// watched once ([`ErrorKind::InvalidArgument`] the second time).
    pub fn watch(&self) -> Result<mpsc::Receiver<Error>> {
        self.watch_with(None)
    }

    /// [`Lock::watch`] with a bound on the whole hold: `max_hold` after the
    /// lock's grant (not after this call: a bound already spent ends the
    /// hold at once) the watch stops, the lock is released on every master
    /// (waiters are woken), and the receiver gets one error of kind
    /// [`ErrorKind::MaxHold`] (code [`LOST_MAX_HOLD`]).  That is not a
    /// failure: the library ended the hold on purpose, as asked.  A lock
    /// lost before its bound reports [`ErrorKind::Lost`], as with `watch`.
    /// The Lock stays the caller's: [`Lock::is_lost`] is true after the
    /// bound, and [`Lock::unlock`] returns [`ErrorKind::Lost`] (nothing was
    /// left to release; dropping it ignores that).  `max_hold`: at
    /// least 1 ms.  A lock can be watched once.
    pub fn watch_bounded(&self, max_hold: Duration) -> Result<mpsc::Receiver<Error>> {
        match millis(max_hold)? {
            0 => Err(ErrorKind::InvalidArgument.into()),
            b => self.watch_with(Some(b)),
        }
    }

    fn watch_with(&self, bound: Option<u32>) -> Result<mpsc::Receiver<Error>> {
        let mut slot = self.watch.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return Err(ErrorKind::InvalidArgument.into());
        }
        let (tx, rx) = mpsc::channel();
        let st = Box::into_raw(Box::new(WatchState {
            tx: Mutex::new(Some(tx)),
            lost: AtomicBool::new(false),
        }));
        let cb: sys::redlock_lost_cb = Some(lost_trampoline);
        let (c, h, arg) = (self.client.raw(), self.h(), st as *mut c_void);
        // SAFETY: live client and handle; st stays allocated until release.
        let rc = unsafe {
            match bound {
                Some(b) => sys::redlock_watch_bounded(c, h, b, cb, arg),
                None => sys::redlock_watch(c, h, cb, arg),
            }
        };
        if rc != 0 {
            // SAFETY: the library refused it, so it never calls back with st.
            drop(unsafe { Box::from_raw(st) });
            return Err(Error::from_code(rc));
        }
        *slot = Some(WatchPtr(st));
        Ok(rx)
    }

    /// Releases the lock on every master and reports the outcome
    /// ([`ErrorKind::Lost`] or [`ErrorKind::NoQuorum`] when it was no longer held);
    /// the lock is released in any case.  Dropping a Lock does the same and
    /// ignores the outcome.
    pub fn unlock(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        let h = match self.handle.take() {
            Some(h) => h,
            None => return Ok(()),
        };
        let watch = self
            .watch
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let wp = watch.map_or(ptr::null_mut(), |w| w.0);
        // SAFETY: live client and handle; the unlock frees the handle.
        let rc = unsafe { sys::redlock_unlock(self.client.raw(), h.as_ptr()) };
        if rc == sys::REDLOCK_EWOULDBLOCK {
            // Dropped on the library's I/O thread (from the logger): the
            // library has queued the release without waiting.  A lost
            // callback may still come before it is processed, and nothing
            // tells us when it was, so the (small) watch state is leaked.
            return Ok(());
        }
        if !wp.is_null() {
            // SAFETY: redlock_unlock returned: the lock is gone from the loop,
            // so no lost callback can use wp any more.
            drop(unsafe { Box::from_raw(wp) });
        }
        call_result(self.client.raw(), rc, "unlock", &self.resource, true)
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

// ---- leader election -------------------------------------------------------------

/// What happened to an [`Election`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElectionEvent {
    /// This client is leader for this term: the lease's fencing token,
    /// larger than every earlier term of the name.  Pass it to the resources
    /// the leader writes.
    Elected(u64),
    /// The term ended: by itself ([`ErrorKind::Lost`]), or at the bound of
    /// [`Client::elect_bounded`] ([`ErrorKind::MaxHold`], not a failure).
    /// The election campaigns again.
    Lost(Error),
}

/// State shared with the election's callbacks (the library's I/O thread).
struct ElectionState {
    tx: Mutex<mpsc::Sender<ElectionEvent>>,
    term: AtomicU64,
    leader: AtomicBool,
}

unsafe extern "C" fn elected_trampoline(
    _e: *mut sys::redlock_election_t,
    term: u64,
    arg: *mut c_void,
) {
    // SAFETY: arg is a live ElectionState (freed only after the resignation).
    let st = &*(arg as *const ElectionState);
    st.term.store(term, Ordering::SeqCst);
    st.leader.store(true, Ordering::SeqCst);
    let tx = st.tx.lock().unwrap_or_else(|e| e.into_inner());
    let _ = tx.send(ElectionEvent::Elected(term)); // unbounded: never blocks
}

unsafe extern "C" fn election_lost_trampoline(
    _e: *mut sys::redlock_election_t,
    reason: c_int,
    arg: *mut c_void,
) {
    // SAFETY: as in elected_trampoline.
    let st = &*(arg as *const ElectionState);
    st.leader.store(false, Ordering::SeqCst);
    let code = if reason == 0 {
        sys::REDLOCK_ELOST
    } else {
        reason
    };
    let tx = st.tx.lock().unwrap_or_else(|e| e.into_inner());
    let _ = tx.send(ElectionEvent::Lost(Error::from_code(code)));
}

/// A campaign for leadership ([`Client::elect`]).  Resigns when dropped.
///
/// `Send + Sync`: the accessors are safe from any thread on a live handle;
/// the resignation (which frees it) takes `self` by value or runs in `Drop`.
pub struct Election {
    client: Client,
    handle: Option<NonNull<sys::redlock_election_t>>,
    state: *mut ElectionState,
    name: String,
}

// SAFETY: see the type's documentation; ElectionState is Sync (Mutex + atomics).
unsafe impl Send for Election {}
unsafe impl Sync for Election {}

impl fmt::Debug for Election {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Election")
            .field("name", &self.name)
            .field("term", &self.term())
            .field("leader", &self.is_leader())
            .finish()
    }
}

impl Election {
    /// The name campaigned for.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The latest term won (0 before any).
    pub fn term(&self) -> u64 {
        // SAFETY: state lives as long as self.
        unsafe { (*self.state).term.load(Ordering::SeqCst) }
    }
    /// True while this client is leader.
    pub fn is_leader(&self) -> bool {
        // SAFETY: as in term().
        unsafe { (*self.state).leader.load(Ordering::SeqCst) }
    }
    /// Milliseconds of leadership left in the current term (<= 0 when not leader).
    pub fn validity_ms(&self) -> i64 {
        match self.handle {
            // SAFETY: live handle.
            Some(h) => unsafe { sys::redlock_election_validity_ms(h.as_ptr()) },
            None => 0,
        }
    }

    /// Stops campaigning and releases the lease if leader (the next
    /// campaigner is woken at once).  The event receiver disconnects.
    pub fn resign(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        let h = match self.handle.take() {
            Some(h) => h,
            None => return Ok(()),
        };
        // SAFETY: live client and handle; the resignation frees the handle,
        // and no callback of the election runs after it returned (also on
        // the I/O thread, where it does not block).
        let rc = unsafe { sys::redlock_resign(self.client.raw(), h.as_ptr()) };
        if rc == 0 {
            // SAFETY: no callback can use the state any more.
            drop(unsafe { Box::from_raw(self.state) });
            self.state = ptr::null_mut();
        }
        // Otherwise (EIO) a callback might still come: the small state is leaked.
        check(rc)
    }
}

impl Drop for Election {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;

    /// The enum is written by hand (Rust needs its variants at compile time);
    /// the library's error table is the source it must agree with: every
    /// code the library has maps to a variant of its own (not `Other`) and
    /// back, with the library's name.
    #[test]
    fn error_enum_covers_the_library_table() {
        // SAFETY: plain queries of static data.
        let n = unsafe { sys::redlock_err_count() };
        assert!(n > 0);
        let mut seen = Vec::new();
        for i in 0..n {
            let code = unsafe { sys::redlock_err_code(i) };
            let e = ErrorKind::from_code(code);
            assert!(
                !matches!(e, ErrorKind::Other(_)),
                "library code {code} has no variant"
            );
            assert_eq!(e.code(), code);
            assert!(!seen.contains(&e), "two codes map to {e:?}");
            seen.push(e);
            let name = unsafe { static_str(sys::redlock_err_name(code)) };
            assert_eq!(e.name(), name);
            let mut v = 0i64;
            let cname = CString::new(name).unwrap();
            assert_eq!(unsafe { sys::redlock_constant(cname.as_ptr(), &mut v) }, 0);
            assert_eq!(v, code as i64);
        }
    }

    #[test]
    fn names_on_the_masters_come_from_the_library() {
        for name in [
            c"REDLOCK_RELEASE_CHANNEL_PREFIX",
            c"REDLOCK_FENCE_KEY_PREFIX",
        ] {
            // SAFETY: NUL-terminated name; the result is static or NULL.
            let s = unsafe { static_str(sys::redlock_constant_string(name.as_ptr())) };
            assert!(s.starts_with("__redlock_"), "{name:?} = {s:?}");
        }
    }
}
