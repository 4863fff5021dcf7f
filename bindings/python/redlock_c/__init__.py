"""redlock: Python binding (ctypes, standard library only) for redlock-c.

Redlock takes a lock on N independent Redis masters: the lock is held when a
majority of them accepted it and time is left on it.  This package wraps the C
library's public ABI (include/redlock.h) with ctypes; no compiler is needed.

The shared library is found through, in order: the environment variable
REDLOCK_LIBRARY (a path; if set, nothing else is tried), the copy the wheel
carries beside this file, ctypes.util.find_library("redlock"), then common
install paths (libredlock.so.0 in /usr/local/lib, /usr/lib, ...).  Call
load_library(path) before anything else to choose it explicitly.

Durations (TTLs, waits, timeouts): every *_ms argument is an int of
milliseconds, or a datetime.timedelta (which carries its unit).  A float is
refused with TypeError (4000 / 2 is a float: write 4000 // 2).

    import redlock
    with redlock_c.Client(["redis://127.0.0.1:7001", "redis://127.0.0.1:7002",
                         "redis://127.0.0.1:7003"]) as client:
        with client.lock("orders:42", ttl_ms=10000) as lk:
            ...  # work that must stop before lk.validity_ms reaches 0
        with client.semaphore_acquire("licences", limit=3, ttl_ms=10000, wait_ms=5000):
            ...  # at most 3 of these at once, across every client
        with client.rwlock_read("config", ttl_ms=10000, wait_ms=5000):
            ...  # shared with other readers, never with a writer

Threads.  A Client may be used from any number of threads at once.  Blocking
calls release the GIL while they wait.  The log callback, the watch's on_lost
callback and the completion of lock() run on the library's I/O thread: keep
them short; blocking calls made there raise WouldBlockError (Lock.unlock() is
the exception: there it starts the release without waiting).

Lifetime rules (see README.md):
  * Lock.unlock() twice is a no-op: the Lock remembers it was released.
  * A Lock garbage-collected while still held is released in the background
    (redlock_unlock_async, no waiting) if its client is still open, with a
    ResourceWarning; if the client is closed, its close already released it.
  * Client.close() releases every lock still held, invalidates all Lock
    objects of the client (they never touch freed C memory afterwards), and
    cancels lock() calls still waiting (CanceledError).  trylock(), lock_many(),
    extend() and unlock() calls already running are allowed to finish first
    (each is bounded by the retry policy / request timeout).  An unclosed
    Client is closed when it is garbage-collected and at interpreter exit.
"""

import atexit
import ctypes
import ctypes.util
import datetime
import json
import itertools
import operator
import os
import threading
import time
import warnings
import weakref

__all__ = [
    "Client", "Lock", "Election", "Event", "Leader", "Observer", "version", "strerror", "err_name",
    "load_library", "tls_supported",
    "RedlockError", "InvalidArgument", "NoMemoryError", "LockedError", "NoQuorumError",
    "ExpiredError", "LostError", "WaitTimeout", "CanceledError", "ClosedError",
    "WouldBlockError", "RedlockIOError", "NotSupportedError", "ForkedError",
    "LOG_DEBUG", "LOG_INFO", "LOG_WARN", "LOG_ERROR",
    "OK", "EINVAL", "ENOMEM", "ELOCKED", "ENOQUORUM", "EEXPIRED", "ELOST", "ETIMEDOUT",
    "ECANCELED", "ECLOSED", "EWOULDBLOCK", "EIO", "ENOTSUP", "EFORKED",
    "MAX_NODES", "MAX_RESOURCE_LEN", "MAX_PREFIX_LEN", "MAX_MANY", "MAX_SEM_LIMIT",
    "MAX_OWNER", "LOST_EXPIRED", "LOST_MAX_HOLD", "LEADER_NONE", "LEADER_HELD", "LEADER_UNKNOWN",
]

# ---- constants from redlock.h (part of the ABI) ---------------------------------
# Python needs these at import time, before the library is loaded (class
# attributes below, argument defaults), so they are written here; the
# library's own table is checked against them when it is loaded
# (_check_constants), so a drift fails at load time and in the tests.
# Names and messages are never copied: they come from the library.

LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR = 0, 1, 2, 3

OK = 0
EINVAL = -1
ENOMEM = -2
ELOCKED = -3
ENOQUORUM = -4
EEXPIRED = -5
ELOST = -6
ETIMEDOUT = -7
ECANCELED = -8
ECLOSED = -9
EWOULDBLOCK = -10
EIO = -11
ENOTSUP = -12
EFORKED = -13

MAX_NODES = 64
MAX_RESOURCE_LEN = 1024
MAX_PREFIX_LEN = 256
MAX_MANY = 64
MAX_SEM_LIMIT = 1024
MAX_OWNER = 64  # bytes in an owner label (Client(owner=...))

# Why a watch (or an election's term) ended, the reason its lost callback
# gets (Lock.lost_reason): LOST_EXPIRED (= ELOST) is a failure, the lock could
# not be extended in time; LOST_MAX_HOLD (positive, never an error code) is
# not: the hold reached the bound it was given (max_hold_ms) and the library
# released it on purpose.
LOST_EXPIRED = ELOST
LOST_MAX_HOLD = 1

# Who leads an election (Client.leader, Client.observe): a quorum holds no
# lease (nobody leads, or a hand-off is half done), a quorum holds the same
# lease, or fewer than a quorum of masters answered.
LEADER_NONE, LEADER_HELD, LEADER_UNKNOWN = 0, 1, 2

# Client.inspect's kinds, by the name it takes, to their REDLOCK_INSPECT_*
# macros (the values are asked of the library).
_INSPECT_KINDS = {"lock": "REDLOCK_INSPECT_LOCK", "semaphore": "REDLOCK_INSPECT_SEMAPHORE",
                  "rwlock": "REDLOCK_INSPECT_RWLOCK", "election": "REDLOCK_INSPECT_ELECTION"}

_ABI_MAJOR = "0"  # the SONAME major this binding was written for
_U32_MAX = 0xFFFFFFFF

# The module constants that mirror redlock.h, by their C names (for
# _check_constants and the tests).
_ERROR_CONSTANTS = ("OK", "EINVAL", "ENOMEM", "ELOCKED", "ENOQUORUM", "EEXPIRED", "ELOST",
                    "ETIMEDOUT", "ECANCELED", "ECLOSED", "EWOULDBLOCK", "EIO", "ENOTSUP",
                    "EFORKED")
_OTHER_CONSTANTS = ("LOG_DEBUG", "LOG_INFO", "LOG_WARN", "LOG_ERROR", "MAX_NODES",
                    "MAX_RESOURCE_LEN", "MAX_PREFIX_LEN", "MAX_MANY", "MAX_SEM_LIMIT",
                    "MAX_OWNER", "LOST_EXPIRED", "LOST_MAX_HOLD", "LEADER_NONE", "LEADER_HELD",
                    "LEADER_UNKNOWN")


# ---- exceptions -------------------------------------------------------------------

class RedlockError(Exception):
    """An error code from the library: .code (negative int), .name
    ("REDLOCK_ELOCKED"), .message (the library's text), .detail (extra
    context from the binding, or None) and .votes.

    .votes: for a failed acquisition, extension or unlock whose round was
    decided (LockedError, NoQuorumError, ExpiredError, LostError,
    WaitTimeout), the one-line summary of that call's own round
    (redlock_last_votes, read when the call completed: "lost (no quorum):
    127.0.0.1:7001=quarantined (restart quarantine: 41234 ms left) ...");
    None otherwise.  For diagnostics: do not parse it.  When the votes explain
    the failure (a NoQuorumError, or any master quarantined) they are also
    the .detail, and str() ends with them."""

    code = None

    def __init__(self, code, name=None, message=None, detail=None, votes=None):
        if name is None:
            name = err_name(code)
        if message is None:
            message = strerror(code)
        super().__init__(code, name, message)
        self.args = (code, name, message)  # OSError subclasses rewrite args
        self.code = code
        self.name = name
        self.message = message
        self.votes = votes
        if detail is None and _votes_explain(code, votes):
            detail = votes
        self.detail = detail
        if isinstance(self, OSError):
            self.errno, self.strerror, self.filename = None, message, None

    def __str__(self):
        text = "%s: %s" % (self.name, self.message)
        if not self.detail:
            return text
        if self.detail == self.votes:
            return "%s: %s" % (text, self.detail)
        return "%s (%s)" % (text, self.detail)

    def __reduce__(self):
        return (_make_error, (self.code, self.name, self.message, self.detail, self.votes))


class InvalidArgument(RedlockError, ValueError):
    """REDLOCK_EINVAL: bad argument, TTL above max, a released lock, ..."""
    code = EINVAL


class NoMemoryError(RedlockError, MemoryError):
    """REDLOCK_ENOMEM."""
    code = ENOMEM


class LockedError(RedlockError):
    """REDLOCK_ELOCKED: a quorum answered; someone else holds the resource."""
    code = ELOCKED


class NoQuorumError(RedlockError):
    """REDLOCK_ENOQUORUM: too few masters answered (down, timed out, errors);
    also how a wait (wait_ms=...) ends when its last attempt lacked a quorum."""
    code = ENOQUORUM


class ExpiredError(RedlockError):
    """REDLOCK_EEXPIRED: quorum won but no validity left."""
    code = EEXPIRED


class LostError(RedlockError):
    """REDLOCK_ELOST: the lock is no longer held on a quorum."""
    code = ELOST


class WaitTimeout(RedlockError, TimeoutError):
    """REDLOCK_ETIMEDOUT: a wait (wait_ms=...) spent its budget while another
    held the resource.  A wait whose last attempt could not reach a quorum
    raises NoQuorumError instead."""
    code = ETIMEDOUT


class CanceledError(RedlockError):
    """REDLOCK_ECANCELED: the client was closed during the call."""
    code = ECANCELED


class ClosedError(RedlockError):
    """REDLOCK_ECLOSED: the client is closing or closed."""
    code = ECLOSED


class WouldBlockError(RedlockError):
    """REDLOCK_EWOULDBLOCK: blocking call on the client's I/O thread (from a
    log / on_lost callback)."""
    code = EWOULDBLOCK


class RedlockIOError(RedlockError):
    """REDLOCK_EIO: loop, thread, semaphore or getrandom failure."""
    code = EIO


class NotSupportedError(RedlockError):
    """REDLOCK_ENOTSUP: not supported by this build (rediss:// or tls_* options
    without TLS: see tls_supported()), or by the masters (a semaphore,
    read-write lock or multi-resource lock where too many masters run no
    Lua scripts: the votes say "unsupported")."""
    code = ENOTSUP


class ForkedError(RedlockError):
    """REDLOCK_EFORKED: a client opened before fork() used in the child."""
    code = EFORKED


_ERROR_CLASSES = {cls.code: cls for cls in (
    InvalidArgument, NoMemoryError, LockedError, NoQuorumError, ExpiredError, LostError,
    WaitTimeout, CanceledError, ClosedError, WouldBlockError, RedlockIOError,
    NotSupportedError, ForkedError)}

# Names for the codes when the library cannot be loaded (so that errors can
# still print), derived from the constants above; messages only the library has.
_FALLBACK_NAMES = {globals()[k]: "REDLOCK_" + k for k in _ERROR_CONSTANTS}


def _make_error(code, name=None, message=None, detail=None, votes=None):
    """The exception for a library error code (RedlockError for unknown codes)."""
    return _ERROR_CLASSES.get(code, RedlockError)(code, name, message, detail, votes)


def _check(rc, detail=None, votes=None):
    if rc != 0:
        raise _make_error(rc, detail=detail, votes=votes)


# The codes that only a decided round returns: their errors carry its votes.
_ROUND_CODES = frozenset((ELOCKED, ENOQUORUM, EEXPIRED, ELOST, ETIMEDOUT))


def _votes_explain(code, votes):
    """Whether the votes belong in the error's message: they are the reason
    of a no-quorum failure, and a quarantined master is what a program
    against freshly started masters must be told about (it has ms left)."""
    return bool(votes) and (code == ENOQUORUM or "=quarantined" in votes)


def _round_votes(lib, ptr, rc):
    """redlock_last_votes after a call that returned rc, read on the thread
    that made the call (or, in a callback, on the I/O thread): that call's
    own round.  None when rc says no round was decided."""
    if rc not in _ROUND_CODES:
        return None
    buf = ctypes.create_string_buffer(4096)
    need = lib.redlock_last_votes(ptr, buf, len(buf))
    if need < 0:
        return None
    if need >= len(buf):  # the same record again: this thread makes no call in between
        buf = ctypes.create_string_buffer(need + 1)
        if lib.redlock_last_votes(ptr, buf, need + 1) < 0:
            return None
    return _decode(buf.value)


# ---- loading the library ------------------------------------------------------------

_LOG_CB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_LOST_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
_LOCK_CB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_DONE_CB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p)
# Leader election: on_elected(election, term, arg), on_lost(election, reason, arg).
_ELECTED_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p)
_ELECTION_LOST_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
_EVENT_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class _LeaderView(ctypes.Structure):
    """redlock_leader_t (part of the ABI: its layout changes only with the
    ABI major version)."""
    _fields_ = [("state", ctypes.c_int), ("term", ctypes.c_uint64), ("ttl_ms", ctypes.c_int64),
                ("owner", ctypes.c_char * (MAX_OWNER + 1))]


# An observer's on_change(observer, view, arg).
_LEADER_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(_LeaderView), ctypes.c_void_p)

_lib = None
_lib_lock = threading.Lock()


# The wheel carries libredlock.so.0 (RUNPATH $ORIGIN) with the hiredis and
# libuv it loads, beside this file.
_BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libredlock.so.0")


def _candidates():
    env = os.environ.get("REDLOCK_LIBRARY")
    if env:
        return [env]
    names = []
    if os.path.isfile(_BUNDLED):
        names.append(_BUNDLED)
    found = ctypes.util.find_library("redlock")
    if found:
        names.append(found)
    for d in ("/usr/local/lib", "/usr/local/lib64", "/usr/lib", "/usr/lib64",
              "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/opt/homebrew/lib"):
        for f in ("libredlock.so.0", "libredlock.so", "libredlock.0.dylib", "libredlock.dylib"):
            names.append(os.path.join(d, f))
    names += ["libredlock.so.0", "libredlock.so"]
    return names


def _declare(lib):
    c_int, c_u32, c_vp, c_cp = ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_char_p
    pp = ctypes.POINTER(ctypes.c_void_p)
    sigs = {
        "redlock_options_new": (c_vp, []),
        "redlock_options_free": (None, [c_vp]),
        "redlock_options_add_node": (c_int, [c_vp, c_cp]),
        "redlock_options_set_retry": (c_int, [c_vp, c_int, c_u32, c_u32]),
        "redlock_options_set_drift_factor": (c_int, [c_vp, ctypes.c_double]),
        "redlock_options_set_timeouts": (c_int, [c_vp, c_u32, c_u32]),
        "redlock_options_set_max_ttl": (c_int, [c_vp, c_u32]),
        "redlock_options_set_quarantine": (c_int, [c_vp, c_int]),
        "redlock_options_set_fencing": (c_int, [c_vp, c_int]),
        "redlock_options_set_reentrant": (c_int, [c_vp, c_int]),
        "redlock_options_set_key_prefix": (c_int, [c_vp, c_cp]),
        "redlock_options_set_log": (c_int, [c_vp, c_int, _LOG_CB, c_vp]),
        "redlock_open": (c_int, [pp, c_vp]),
        "redlock_close": (None, [c_vp]),
        "redlock_trylock": (c_int, [c_vp, c_cp, c_u32, pp]),
        "redlock_lock_many": (c_int, [c_vp, ctypes.POINTER(c_cp), ctypes.c_size_t, c_u32, pp]),
        "redlock_extend": (c_int, [c_vp, c_vp, c_u32]),
        "redlock_unlock": (c_int, [c_vp, c_vp]),
        "redlock_watch": (c_int, [c_vp, c_vp, _LOST_CB, c_vp]),
        "redlock_lock_validity_ms": (ctypes.c_int64, [c_vp]),
        "redlock_lock_fence": (ctypes.c_uint64, [c_vp]),
        "redlock_lock_resource": (c_cp, [c_vp]),
        "redlock_lock_value": (c_cp, [c_vp]),
        "redlock_lock_is_lost": (c_int, [c_vp]),
        "redlock_lock_async": (c_int, [c_vp, c_cp, c_u32, c_u32, _LOCK_CB, c_vp]),
        "redlock_unlock_async": (c_int, [c_vp, c_vp, _DONE_CB, c_vp]),
        "redlock_last_votes": (c_int, [c_vp, c_cp, ctypes.c_size_t]),
        # leader election
        "redlock_elect": (c_int, [c_vp, c_cp, c_u32, _ELECTED_CB, _ELECTION_LOST_CB, c_vp, pp]),
        "redlock_resign": (c_int, [c_vp, c_vp]),
        "redlock_election_validity_ms": (ctypes.c_int64, [c_vp]),
        # observability (docs/observability.md)
        "redlock_stats": (c_int, [c_vp, c_int, c_cp, ctypes.c_size_t]),
        "redlock_options_set_stats": (c_int, [c_vp, c_int]),
        "redlock_options_set_event_cb": (c_int, [c_vp, _EVENT_CB, c_vp]),
        "redlock_event_kind": (c_int, [c_vp]),
        "redlock_event_kind_name": (c_cp, [c_int]),
        "redlock_event_status": (c_int, [c_vp]),
        "redlock_event_resource": (c_cp, [c_vp]),
        "redlock_event_duration_us": (ctypes.c_int64, [c_vp]),
        "redlock_event_attempts": (c_int, [c_vp]),
        "redlock_event_node_count": (c_int, [c_vp]),
        "redlock_event_node_addr": (c_cp, [c_vp, c_int]),
        "redlock_event_node_verdict": (c_cp, [c_vp, c_int]),
        "redlock_event_node_latency_us": (ctypes.c_int64, [c_vp, c_int]),
        "redlock_event_detail": (c_cp, [c_vp]),
        "redlock_strerror": (c_cp, [c_int]),
        "redlock_err_name": (c_cp, [c_int]),
        "redlock_version": (c_cp, []),
        "redlock_tls_supported": (c_int, []),
        # the library's own tables and defaults (one source of truth)
        "redlock_err_count": (c_int, []),
        "redlock_err_code": (c_int, [c_int]),
        "redlock_constant": (c_int, [c_cp, ctypes.POINTER(ctypes.c_int64)]),
        "redlock_constant_string": (c_cp, [c_cp]),
        "redlock_options_get_retry": (c_int, [c_vp, ctypes.POINTER(c_int),
                                              ctypes.POINTER(c_u32), ctypes.POINTER(c_u32)]),
        "redlock_options_get_timeouts": (c_int, [c_vp, ctypes.POINTER(c_u32),
                                                 ctypes.POINTER(c_u32)]),
        "redlock_options_set_tls": (c_int, [c_vp, c_cp, c_cp, c_cp, c_cp]),
        "redlock_options_set_tls_server_name": (c_int, [c_vp, c_cp]),
        "redlock_options_set_tls_verify": (c_int, [c_vp, c_int]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    u64p = ctypes.POINTER(ctypes.c_uint64)
    # Added later to the ABI (coordination primitives, cancellation): optional, so that this
    # binding still loads an older library (the methods then raise
    # NotSupportedError).
    optional = {
        "redlock_semaphore_acquire_async": (c_int, [c_vp, c_cp, c_u32, c_u32, c_u32, _LOCK_CB,
                                                    c_vp]),
        "redlock_rwlock_read_async": (c_int, [c_vp, c_cp, c_u32, c_u32, _LOCK_CB, c_vp]),
        "redlock_rwlock_write_async": (c_int, [c_vp, c_cp, c_u32, c_u32, _LOCK_CB, c_vp]),
        # cancellation (redlock.h "Cancellation"): the _ex forms give the id
        "redlock_cancel": (c_int, [c_vp, ctypes.c_uint64]),
        "redlock_lock_async_ex": (c_int, [c_vp, c_cp, c_u32, c_u32, _LOCK_CB, c_vp, u64p]),
        "redlock_lock_many_async_ex": (c_int, [c_vp, ctypes.POINTER(c_cp), ctypes.c_size_t,
                                               c_u32, _LOCK_CB, c_vp, u64p]),
        "redlock_semaphore_acquire_async_ex": (c_int, [c_vp, c_cp, c_u32, c_u32, c_u32,
                                                       _LOCK_CB, c_vp, u64p]),
        "redlock_rwlock_read_async_ex": (c_int, [c_vp, c_cp, c_u32, c_u32, _LOCK_CB, c_vp,
                                                 u64p]),
        "redlock_rwlock_write_async_ex": (c_int, [c_vp, c_cp, c_u32, c_u32, _LOCK_CB, c_vp,
                                                  u64p]),
        "redlock_uri_redact": (c_int, [c_cp, c_cp, ctypes.c_size_t]),
        "redlock_options_get_max_ttl": (c_int, [c_vp, ctypes.POINTER(c_u32)]),
        "redlock_options_allow_discovered": (c_int, [c_vp, c_cp]),
        # who holds it, and taking it back; bounded holds
        "redlock_options_set_owner": (c_int, [c_vp, c_cp]),
        "redlock_options_get_owner": (c_int, [c_vp, ctypes.POINTER(c_cp)]),
        "redlock_lock_owner": (c_cp, [c_vp]),
        "redlock_inspect": (c_int, [c_vp, c_cp, c_int, c_cp, ctypes.c_size_t]),
        "redlock_revoke": (c_int, [c_vp, c_cp, u64p]),
        "redlock_watch_bounded": (c_int, [c_vp, c_vp, c_u32, _LOST_CB, c_vp]),
        "redlock_elect_bounded": (c_int, [c_vp, c_cp, c_u32, c_u32, _ELECTED_CB,
                                          _ELECTION_LOST_CB, c_vp, pp]),
        # who leads: asking and observing an election
        "redlock_election_leader": (c_int, [c_vp, c_cp, ctypes.POINTER(_LeaderView)]),
        "redlock_election_observe": (c_int, [c_vp, c_cp, c_u32, _LEADER_CB, c_vp, pp]),
        "redlock_observe_stop": (c_int, [c_vp, c_vp]),
    }
    for name, (restype, argtypes) in optional.items():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = restype
            fn.argtypes = argtypes


def load_library(path=None):
    """Loads (once) and returns the ctypes handle of libredlock.  path, if given,
    is used instead of the search; a second call with another path raises."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            if path is not None and path != _lib._name:
                raise RuntimeError("libredlock is already loaded from %r" % _lib._name)
            return _lib
        errors = []
        for cand in ([path] if path is not None else _candidates()):
            try:
                lib = ctypes.CDLL(cand)
            except OSError as exc:
                errors.append("%s: %s" % (cand, exc))
                continue
            try:
                _declare(lib)
            except AttributeError as exc:
                errors.append("%s: missing symbol (%s)" % (cand, exc))
                continue
            ver = lib.redlock_version().decode("ascii", "replace")
            if ver.split(".")[0] != _ABI_MAJOR:
                errors.append("%s: version %s, this binding needs %s.x" % (cand, ver, _ABI_MAJOR))
                continue
            drift = _check_constants(lib)
            if drift:
                errors.append("%s: constants differ from this binding's: %s" % (cand, drift))
                continue
            _lib = lib
            return lib
        tried = "; ".join(errors[:4]) + ("; ..." if len(errors) > 4 else "")
        raise OSError("cannot load libredlock (set REDLOCK_LIBRARY to its path): " + tried)


def _lib_constant(lib, cname):
    """A redlock.h integer constant as the library has it, or None."""
    v = ctypes.c_int64()
    return v.value if lib.redlock_constant(cname.encode("ascii"), ctypes.byref(v)) == 0 else None


def _check_constants(lib):
    """The module constants that the library also knows, compared with it:
    a description of the differences ("" when none)."""
    bad = []
    for k in _ERROR_CONSTANTS + _OTHER_CONSTANTS:
        have = _lib_constant(lib, "REDLOCK_" + k)
        if have != globals()[k]:
            bad.append("%s is %r here, %r in the library" % (k, globals()[k], have))
    return "; ".join(bad)


def _error_table(lib=None):
    """The library's error table: [(code, name, message)] in its order."""
    lib = lib or load_library()
    table = []
    for i in range(lib.redlock_err_count()):
        code = lib.redlock_err_code(i)
        table.append((code, lib.redlock_err_name(code).decode("utf-8", "replace"),
                      lib.redlock_strerror(code).decode("utf-8", "replace")))
    return table


def tls_supported():
    """True when the loaded library can connect to rediss:// masters (built
    with TLS); otherwise rediss:// and the tls_* options raise
    NotSupportedError."""
    return bool(load_library().redlock_tls_supported())


def _path_arg(value, what):
    """A file-system path (str, bytes or os.PathLike) as bytes, or None."""
    if value is None:
        return None
    try:
        data = os.fsencode(value)
    except TypeError:
        raise TypeError("%s must be a path (str, bytes or os.PathLike), not %s"
                        % (what, type(value).__name__)) from None
    if b"\0" in data:
        raise InvalidArgument(EINVAL, detail="%s contains a NUL byte" % what)
    return data


class _Refusals:
    """The library says why it refuses a setting only through the options'
    log callback: within this block one that captures the reason is
    installed, and check() raises with it (Client sets the real callback
    after)."""

    def __init__(self, lib, opts):
        self.lib, self.opts, self.reasons = lib, opts, []

    def __enter__(self):
        def capture(level, msg, arg):  # runs on this thread, during the setters
            self.reasons.append(msg.decode("utf-8", "replace"))

        self.cb = _LOG_CB(capture)
        self.lib.redlock_options_set_log(self.opts, LOG_DEBUG, self.cb, None)
        return self

    def __exit__(self, *exc):
        self.lib.redlock_options_set_log(self.opts, LOG_WARN, _LOG_CB(), None)

    def check(self, rc, what):
        if rc != 0:
            raise _make_error(rc, detail="%s: %s" % (what, "; ".join(self.reasons) or
                                                     "refused"))


def _set_tls(lib, opts, tls_ca, tls_cert, tls_key, tls_server_name, tls_verify):
    """Applies the tls_* arguments to opts."""
    if (tls_ca, tls_cert, tls_key, tls_server_name, tls_verify) == (None,) * 5:
        return
    with _Refusals(lib, opts) as refusals:
        check = refusals.check
        if (tls_ca, tls_cert, tls_key) != (None, None, None):
            ca = _path_arg(tls_ca, "tls_ca")
            # tls_ca names a PEM bundle or an OpenSSL hashed directory.
            ca_dir = ca if ca is not None and os.path.isdir(ca) else None
            check(lib.redlock_options_set_tls(opts, None if ca_dir else ca, ca_dir,
                                              _path_arg(tls_cert, "tls_cert"),
                                              _path_arg(tls_key, "tls_key")), "tls options")
        if tls_server_name is not None:
            check(lib.redlock_options_set_tls_server_name(
                opts, _bytes_arg(tls_server_name, "tls_server_name")), "tls_server_name")
        if tls_verify is not None:
            check(lib.redlock_options_set_tls_verify(opts, 1 if tls_verify else 0),
                  "tls_verify")


def _set_allow_discovered(lib, opts, patterns):
    """Applies allow_discovered (host patterns, see Client) to opts."""
    if patterns is None:
        return
    # A bare string is itself iterable: each character would become a pattern.
    if isinstance(patterns, (str, bytes, bytearray)):
        raise TypeError("allow_discovered must be a sequence of host patterns, not a single "
                        "string")
    try:
        patterns = list(patterns)
    except TypeError:
        raise TypeError("allow_discovered must be a sequence of host patterns, not %s"
                        % type(patterns).__name__) from None
    encoded = [_bytes_arg(p, "allow_discovered pattern") for p in patterns]
    if not encoded:
        return
    if getattr(lib, "redlock_options_allow_discovered", None) is None or \
            lib.redlock_options_allow_discovered.argtypes is None:
        raise NotSupportedError(ENOTSUP, detail="allow_discovered: "
                                "redlock_options_allow_discovered is not in this libredlock")
    with _Refusals(lib, opts) as refusals:
        for i, data in enumerate(encoded):
            refusals.check(lib.redlock_options_allow_discovered(opts, data),
                           "allow_discovered[%d]" % i)


def _set_owner(lib, opts, owner):
    """Applies the owner label (see Client) to opts; returns it as the
    options hold it ("" for none)."""
    data = b"" if owner is None else _bytes_arg(owner, "owner")
    if getattr(lib, "redlock_options_set_owner", None) is None or \
            lib.redlock_options_set_owner.argtypes is None:
        raise NotSupportedError(ENOTSUP, detail="owner: redlock_options_set_owner is not in "
                                "this libredlock")
    # The library refuses without saying why (no log message): the rule is
    # given here.
    _check(lib.redlock_options_set_owner(opts, data),
           "owner %r: 1..%d bytes of printable ASCII (0x21..0x7e) except '~'"
           % (owner, MAX_OWNER))
    got = ctypes.c_char_p()
    _check(lib.redlock_options_get_owner(opts, ctypes.byref(got)))
    return _decode(got.value) or ""


def version():
    """The library's version string at run time ("0.1.0")."""
    return load_library().redlock_version().decode("ascii", "replace")


def _package_version():
    """This package's version: the installed distribution's, when this file
    is the one it installed, else (a source tree on sys.path) the C
    library's, whose version the package takes at build time."""
    try:
        import importlib.metadata as metadata
        dist = metadata.distribution("redlock-c")
        here = os.path.realpath(os.path.abspath(__file__))
        if os.path.realpath(str(dist.locate_file("redlock_c/__init__.py"))) == here:
            return dist.version
    except Exception:  # no metadata, or an unrelated installation
        pass
    return version()


def __getattr__(name):
    # __version__ is computed on first use: importing the package must not
    # load libredlock (load_library(path) may still choose it).
    if name == "__version__":
        value = _package_version()
        globals()["__version__"] = value
        return value
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def strerror(code):
    """The library's message for an error code (never fails)."""
    try:
        return load_library().redlock_strerror(int(code)).decode("utf-8", "replace")
    except OSError:
        return "unknown error (libredlock could not be loaded to say)"


def err_name(code):
    """The library's name for an error code ("REDLOCK_ELOCKED")."""
    try:
        return load_library().redlock_err_name(int(code)).decode("utf-8", "replace")
    except OSError:
        return _FALLBACK_NAMES.get(code, "REDLOCK_UNKNOWN")


# ---- argument helpers ------------------------------------------------------------------

def _u32(value, what, minimum=0):
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__)) from None
    if v < minimum or v > _U32_MAX:
        raise InvalidArgument(EINVAL, detail="%s out of range: %r" % (what, value))
    return v


def _ms(value, what, minimum=0):
    """A *_ms argument as uint32 milliseconds: an int.  A float is refused,
    fraction or not: this binding once read a float as seconds, and taking
    10.0 as 10 ms now would let a program written for that lose its lock at
    once, without an error.  A datetime.timedelta carries its unit (rounded
    up to whole ms, so that a positive duration never becomes 0)."""
    if isinstance(value, datetime.timedelta):
        secs = value.total_seconds()
        if secs < 0 or secs * 1000.0 > _U32_MAX:
            raise InvalidArgument(EINVAL, detail="%s out of range: %r" % (what, value))
        ms = int(secs * 1000.0)
        if ms < secs * 1000.0:
            ms += 1
        return _u32(ms, what, minimum)
    if isinstance(value, float):
        raise TypeError("%s takes an int of milliseconds, not the float %r (use // or int() "
                        "for milliseconds, datetime.timedelta(seconds=...) for seconds)"
                        % (what, value))
    return _u32(value, what, minimum)


def _ttl_arg(value, what, max_ttl_ms, option="max_ttl_ms"):
    """A TTL in ms, checked against the client's max TTL here, where the
    refusal can say the limit and the option that raises it (the library's
    answer is a bare EINVAL)."""
    ttl = _ms(value, what, 1)
    if max_ttl_ms is not None and ttl > max_ttl_ms:
        raise InvalidArgument(EINVAL, detail="%s %d ms is above the max TTL %d ms; raise it "
                              "with Client(..., %s=%d)" % (what, ttl, max_ttl_ms, option, ttl))
    return ttl


def _bytes_arg(value, what):
    if isinstance(value, str):
        data = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
    else:
        raise TypeError("%s must be str or bytes, not %s" % (what, type(value).__name__))
    if b"\0" in data:
        raise InvalidArgument(EINVAL, detail="%s contains a NUL byte" % what)
    return data


def _node_uri(node):
    if isinstance(node, tuple) and len(node) == 2:
        host, port = node
        host = str(host)
        if ":" in host and not host.startswith("["):
            host = "[%s]" % host
        return "redis://%s:%d" % (host, operator.index(port))
    if isinstance(node, (str, bytes)):
        return node
    raise TypeError("a node is a URI string or a (host, port) tuple, not %r" % (node,))


def _decode(raw):
    return None if raw is None else raw.decode("utf-8", "surrogateescape")


def _redact(lib, data):
    """A node URI (bytes) for messages, as the library shows URIs
    (redlock_uri_redact: the userinfo's password and any sentinel_password
    value become ***, whatever characters they hold).  A library without
    that call gets nothing of the URI shown."""
    fn = getattr(lib, "redlock_uri_redact", None)
    if fn is None:
        return "(URI not shown)"
    n = fn(data, None, 0)
    if n < 0:
        return "(URI not shown)"
    buf = ctypes.create_string_buffer(n + 1)
    fn(data, buf, n + 1)
    return _decode(buf.value)


def _add_node(lib, opts, uri):
    """redlock_options_add_node, raising the library's error with its reason
    (which the library gives only to a log callback: asked again on a
    scratch options object whose callback keeps it)."""
    data = _bytes_arg(uri, "node URI")
    rc = lib.redlock_options_add_node(opts, data)
    if rc == 0:
        return
    why = []
    cb = _LOG_CB(lambda _level, msg, _arg: why.append(_decode(msg) or ""))
    scratch = lib.redlock_options_new()
    if scratch:
        try:
            if lib.redlock_options_set_log(scratch, LOG_ERROR, cb, None) == 0:
                lib.redlock_options_add_node(scratch, data)
        finally:
            lib.redlock_options_free(scratch)
    reason = why[-1].replace("redlock_options_add_node: ", "", 1) if why else None
    detail = "node %r" % (_redact(lib, data),)
    raise _make_error(rc, detail=detail + (": " + reason if reason else ""))


# ---- the shared state of one client ---------------------------------------------------

_OPEN, _CLOSING, _CLOSED = "open", "closing", "closed"


class _Pending:
    """One lock() waiting for its redlock_lock_async callback.  mutex guards
    status/handle/votes/done/abandoned between the I/O thread (the callback)
    and the waiting thread; call_id (the _ex form's id, 0 without one) is
    written once, by the submitting thread, before anyone reads it."""
    __slots__ = ("event", "mutex", "status", "handle", "votes", "done", "abandoned", "call_id")

    def __init__(self):
        self.event = threading.Event()
        self.call_id = 0
        self.mutex = threading.Lock()
        self.status = None
        self.handle = None
        self.votes = None  # a failure's votes, read in the callback
        self.done = False
        self.abandoned = False


class Event:
    """One event of a client (redlock_options_set_event_cb), copied out of the
    C event while the callback runs, so it may be kept:

    kind         "acquire", "wait", "extend", "renew", "release", "semaphore",
                 "rwlock_read", "rwlock_write", "election", "lost", "node_up",
                 "node_down" or "quarantine_end"
    status       0 or a negative error code; error: its name ("REDLOCK_ELOCKED")
    resource     the resource, or None (master events)
    duration_us  the operation's duration (see docs/observability.md)
    attempts     acquisition attempts (1 for other rounds, 0 without a round)
    nodes        list of (address, verdict, latency_us or None) per master
    detail       what happened to a master (master events), else None"""

    __slots__ = ("kind", "status", "error", "resource", "duration_us", "attempts", "nodes",
                 "detail")

    def __init__(self, lib, ev):
        self.kind = _decode(lib.redlock_event_kind_name(lib.redlock_event_kind(ev)))
        self.status = lib.redlock_event_status(ev)
        self.error = None if self.status == 0 else err_name(self.status)
        self.resource = _decode(lib.redlock_event_resource(ev))
        self.duration_us = lib.redlock_event_duration_us(ev)
        self.attempts = lib.redlock_event_attempts(ev)
        nodes = []
        for i in range(lib.redlock_event_node_count(ev)):
            latency = lib.redlock_event_node_latency_us(ev, i)
            nodes.append((_decode(lib.redlock_event_node_addr(ev, i)),
                          _decode(lib.redlock_event_node_verdict(ev, i)),
                          None if latency < 0 else latency))
        self.nodes = nodes
        self.detail = _decode(lib.redlock_event_detail(ev))

    def __repr__(self):
        return "<redlock_c.Event %s %s%s %d us>" % (
            self.kind, self.error or "OK", " " + self.resource if self.resource else "",
            self.duration_us)


class _Core:
    """What a Client's C callbacks need: the C pointer, the ctypes callback
    objects (alive until the I/O thread has been joined), pending lock calls,
    watched locks, and the bookkeeping that makes close() safe:

    * mutex guards state, the Lock objects' handles, and non-blocking C calls
      that use a handle (accessors, watch, unlock_async);
    * active counts blocking C calls in progress (and about to start); close()
      first refuses new calls, then waits for active to drain before
      redlock_close(), so no thread can enter C with a freed pointer."""

    def __init__(self, lib):
        self.lib = lib
        self.ptr = None
        self.mutex = threading.RLock()
        self.cond = threading.Condition(self.mutex)
        self.state = _OPEN
        self.active = 0
        self.max_ttl_ms = None  # the client's max TTL, read from its options at open
        self.owner = ""  # the client's owner label, read back from its options at open
        self.locks = weakref.WeakSet()
        self.pending = {}
        self.watched = {}
        self.keys = itertools.count(1)
        self.loop_ident = None
        self.opened = False
        self.log_fn = None
        self.log_cb = None
        self.lock_cb = _LOCK_CB(self._on_lock_done)
        self.lost_cb = _LOST_CB(self._on_lost)
        # Elections: key -> Election, held (strongly) until resigned or closed:
        # a campaign goes on whether or not the program keeps the object.
        self.elections = {}
        self.elected_cb = _ELECTED_CB(self._on_elected)
        self.election_lost_cb = _ELECTION_LOST_CB(self._on_election_lost)
        self.event_fn = None
        self.event_cb = None
        # Observers: key -> Observer, held until stopped or closed (as elections).
        self.observers = {}
        self.leader_cb = _LEADER_CB(self._on_leader)

    # -- threads
    def on_loop_thread(self):
        return self.loop_ident is not None and threading.get_ident() == self.loop_ident

    def _mark_loop(self):
        if self.loop_ident is None:
            self.loop_ident = threading.get_ident()

    # -- callbacks (the library's I/O thread)
    def _on_log(self, level, msg, _arg):
        if self.opened:  # add_node() reports bad URIs on the caller's thread
            self._mark_loop()
        fn = self.log_fn
        if fn is not None:
            fn(level, _decode(msg) or "")

    def _on_event(self, ev, _arg):
        self._mark_loop()
        fn = self.event_fn
        if fn is not None:
            fn(Event(self.lib, ev))

    def _on_lock_done(self, status, handle, key):
        self._mark_loop()
        op = self.pending.pop(key, None)
        if op is not None:
            # Here, on the I/O thread, the votes are this call's round.
            votes = _round_votes(self.lib, self.ptr, status)
            with op.mutex:
                if not op.abandoned:
                    op.status, op.handle, op.votes, op.done = status, handle, votes, True
                    op.event.set()
                    return
        if status == 0 and handle:
            # Nobody waits for it any more (KeyboardInterrupt): let it go.  The
            # client cannot be freed while its loop thread runs this.
            self.lib.redlock_unlock_async(self.ptr, handle, _DONE_CB(), None)

    def _on_lost(self, _handle, reason, key):
        self._mark_loop()
        ref = self.watched.pop(key, None)
        lk = ref() if ref is not None else None
        if lk is None:
            return
        lk._lost = True
        lk._lost_reason = int(reason)
        cb = lk._on_lost
        if cb is not None:
            cb(lk)

    def _on_elected(self, handle, term, key):
        self._mark_loop()
        with self.mutex:
            election = self.elections.get(key)
            if election is not None and election._handle is None and not election._done:
                # elect() has not returned yet: the handle is known here first,
                # and a resign() from this callback must find it.
                election._handle = handle
        if election is not None:
            election._elected(int(term))

    def _on_election_lost(self, _handle, reason, key):
        self._mark_loop()
        election = self.elections.get(key)
        if election is not None:
            election._lost(int(reason))

    def _on_leader(self, handle, view, key):
        self._mark_loop()
        with self.mutex:
            observer = self.observers.get(key)
            if observer is not None and observer._handle is None and not observer._done:
                # observe() has not returned yet: a stop() from this callback
                # must find the handle.
                observer._handle = handle
        if observer is not None:
            observer._changed(Leader._of(view.contents))

    # -- calls
    def enter(self):
        """Counts a C call that uses the client pointer; raises if closed."""
        with self.mutex:
            if self.state != _OPEN:
                raise ClosedError(ECLOSED)
            self.active += 1

    def submit(self, symbol, args, key):
        """Starts an acquisition through its callback form, the _ex one when
        the library has it: symbol(ptr, *args, lock_cb, key[, &id]).  The
        caller holds enter().  Returns (rc, call id or 0)."""
        ex = getattr(self.lib, symbol + "_ex", None)
        if ex is not None and ex.argtypes is not None:
            call_id = ctypes.c_uint64()
            rc = ex(self.ptr, *args, self.lock_cb, key, ctypes.byref(call_id))
            return rc, call_id.value
        return getattr(self.lib, symbol)(self.ptr, *args, self.lock_cb, key), 0

    def start(self, op, symbol, args):
        """Registers op (its callback's state) under a new key and submits
        the acquisition (submit); raises the library's error, op then
        forgotten, when the call is refused (no callback will run)."""
        key = next(self.keys)
        self.enter()
        try:
            self.pending[key] = op
            rc, op.call_id = self.submit(symbol, args, key)
            if rc != 0:
                self.pending.pop(key, None)
                raise _make_error(rc)
        finally:
            self.leave()

    def cancel(self, call_id):
        """redlock_cancel for an acquisition nobody waits for any more: the
        library sends nothing more for it and releases what its last round
        set.  A no-op without an id, or once the client is closing (the close
        ends every call)."""
        if not call_id:
            return
        try:
            self.enter()
        except ClosedError:
            return
        try:
            self.lib.redlock_cancel(self.ptr, call_id)
        finally:
            self.leave()

    def end_handle(self, obj, stop, registry):
        """Ends an election or an observer (obj: its _handle, _done, _key)
        with stop(ptr, handle), redlock_resign or redlock_observe_stop, and
        forgets it in registry.  Returns stop's code, or None when there was
        nothing to end (ended already, or the close ends it)."""
        with self.mutex:
            handle = obj._handle
            if handle is None or obj._done or self.state != _OPEN:
                return None
            self.enter()
            obj._handle = None
            obj._done = True
        try:
            # Not under the mutex: off the I/O thread this waits for the
            # loop, whose callbacks may need the mutex.
            rc = stop(self.ptr, handle)
        finally:
            self.leave()
        with self.mutex:
            registry.pop(obj._key, None)
        return rc

    def leave(self):
        with self.cond:
            self.active -= 1
            if self.active == 0:
                self.cond.notify_all()

    def close(self, warn_stack=None):
        with self.cond:
            if self.state == _CLOSED:
                return
            if self.state == _CLOSING:
                if not self.on_loop_thread():
                    while self.state != _CLOSED:
                        self.cond.wait()
                return
            self.state = _CLOSING
            for lk in list(self.locks):
                lk._invalidate()
            self.locks = weakref.WeakSet()
            for election in list(self.elections.values()):
                election._invalidate()
            for observer in list(self.observers.values()):
                observer._invalidate()
        _OPEN_CORES.discard(self)
        if self.on_loop_thread():
            # From one of our callbacks: the blocking part cannot run on the
            # loop it would wait for.  A helper thread finishes the close.
            threading.Thread(target=self._finish_close, name="redlock-close").start()
        else:
            self._finish_close()

    def _finish_close(self):
        with self.cond:
            while self.active:
                self.cond.wait()
        ptr = self.ptr
        if ptr:
            # Cancels the lock() calls still waiting (their callbacks run
            # before this returns), releases and frees every handle, joins the
            # I/O thread: no callback runs after this.
            self.lib.redlock_close(ptr)
        with self.cond:
            self.ptr = None
            self.state = _CLOSED
            self.watched.clear()
            self.elections.clear()
            self.observers.clear()
            self.cond.notify_all()


_OPEN_CORES = set()


@atexit.register
def _close_all_at_exit():
    # An open client's I/O thread must not call into a finalizing interpreter.
    for core in list(_OPEN_CORES):
        try:
            core.close()
        except Exception:  # pragma: no cover - best effort at exit
            pass


# ---- Client -----------------------------------------------------------------------------------

class Client:
    """A Redlock client over N Redis masters (redlock_open).

    nodes: URIs ("redis://[[user]:password@]host[:port][/db]", the same with
    "rediss://" for TLS, "unix:///path") or (host, port) tuples.  Every other option left at None
    keeps the library default (retry 3 times, 200 ms + up to 200 ms jitter;
    connect 1000 ms, request 100 ms; drift 0.01; max TTL 60 s; quarantine on;
    fencing off; prefix ""; reentrant off; stats on).  log: callable(level,
    message), called on the library's I/O thread for messages at log_level
    and above.  on_event: callable(Event), called on the I/O thread once per
    finished operation and per master state change (keep it short; blocking
    calls there raise WouldBlockError).  stats=False turns the counting
    behind stats() off.

    owner: a label a person can read ("billing-worker-3", "host:pid")
    carried in the value of every lock, permit, read/write hold and election
    lease the client takes, so that inspect() (from any client) tells who
    holds a resource; Lock.owner reads it back.  1..MAX_OWNER bytes of
    printable ASCII (0x21..0x7e) except '~' (InvalidArgument otherwise); None
    or "" for none (the default).  Anyone who can read the masters reads it:
    never put a secret in it.

    TLS (rediss:// masters; NotSupportedError when tls_supported() is False):
    tls_ca: CA certificates trusted for the masters' certificates, a PEM file
    or an OpenSSL hashed directory (default: the system's store); tls_cert +
    tls_key: this client's certificate and key (PEM), for masters that
    require one; tls_server_name: the name the certificates must carry (and
    SNI) instead of each URI's host; tls_verify=False: check neither chain nor
    name (encrypted but not authenticated: tests only).  Bad files raise
    InvalidArgument with the reason.

    allow_discovered: host patterns (a sequence of str: fnmatch globs, ASCII
    case ignored, "10.0.0.*", "*.redis.internal"); when given, a master
    address that a sentinel or a cluster node names outside them is never
    connected to (its vote is down, "discovered address HOST:PORT not
    allowed").  The addresses in the URIs are not checked.  At most 64
    patterns of 1 to 255 bytes (InvalidArgument otherwise); a bare str raises
    TypeError.  See docs/deployments.md "Trust model for discovered addresses".

    Opening blocks up to the connect timeout; masters that are down are
    retried in the background.  Use as a context manager or call close()."""

    def __init__(self, nodes, *, retry_count=None, retry_delay_ms=None, retry_jitter_ms=None,
                 drift_factor=None, connect_timeout_ms=None, request_timeout_ms=None,
                 max_ttl_ms=None, quarantine=None, fencing=None, key_prefix=None,
                 reentrant=None, log=None, log_level=LOG_WARN, tls_ca=None, tls_cert=None,
                 tls_key=None, tls_server_name=None, tls_verify=None, allow_discovered=None,
                 stats=None, on_event=None, owner=None):
        self._core = None
        lib = load_library()
        if isinstance(nodes, (str, bytes)):
            raise TypeError("nodes must be a list of URIs, not a single string")
        uris = [_node_uri(n) for n in nodes]
        if not uris:
            raise InvalidArgument(EINVAL, detail="at least one node is needed")
        if log is not None and not callable(log):
            raise TypeError("log must be callable(level, message)")
        if on_event is not None and not callable(on_event):
            raise TypeError("on_event must be callable(event)")
        core = _Core(lib)
        opts = lib.redlock_options_new()
        if not opts:
            raise NoMemoryError(ENOMEM)
        try:
            _set_tls(lib, opts, tls_ca, tls_cert, tls_key, tls_server_name, tls_verify)
            _set_allow_discovered(lib, opts, allow_discovered)
            if log is not None:
                core.log_fn = log
                core.log_cb = _LOG_CB(core._on_log)
                _check(lib.redlock_options_set_log(opts, operator.index(log_level), core.log_cb,
                                                   None), "log_level %r" % (log_level,))
            for uri in uris:
                _add_node(lib, opts, uri)
            if (retry_count, retry_delay_ms, retry_jitter_ms) != (None, None, None):
                # The values not given keep the library's defaults, read
                # from the fresh options object.
                dc, dd, dj = ctypes.c_int(), ctypes.c_uint32(), ctypes.c_uint32()
                _check(lib.redlock_options_get_retry(opts, ctypes.byref(dc), ctypes.byref(dd),
                                                     ctypes.byref(dj)))
                count = dc.value if retry_count is None else operator.index(retry_count)
                if not -1 <= count <= 0x7FFFFFFF:
                    raise InvalidArgument(EINVAL, detail="retry_count out of range: %r" % count)
                delay = dd.value if retry_delay_ms is None else retry_delay_ms
                jitter = dj.value if retry_jitter_ms is None else retry_jitter_ms
                _check(lib.redlock_options_set_retry(
                    opts, count, _ms(delay, "retry_delay_ms"), _ms(jitter, "retry_jitter_ms")),
                    "retry options")
            if drift_factor is not None:
                _check(lib.redlock_options_set_drift_factor(opts, float(drift_factor)),
                       "drift_factor %r" % (drift_factor,))
            if (connect_timeout_ms, request_timeout_ms) != (None, None):
                dc, dr = ctypes.c_uint32(), ctypes.c_uint32()
                _check(lib.redlock_options_get_timeouts(opts, ctypes.byref(dc), ctypes.byref(dr)))
                conn = dc.value if connect_timeout_ms is None else connect_timeout_ms
                req = dr.value if request_timeout_ms is None else request_timeout_ms
                _check(lib.redlock_options_set_timeouts(
                    opts, _ms(conn, "connect_timeout_ms"), _ms(req, "request_timeout_ms")),
                    "timeouts")
            if max_ttl_ms is not None:
                _check(lib.redlock_options_set_max_ttl(opts, _ms(max_ttl_ms, "max_ttl_ms")),
                       "max_ttl_ms %r" % (max_ttl_ms,))
            if quarantine is not None:
                _check(lib.redlock_options_set_quarantine(opts, 1 if quarantine else 0))
            if fencing is not None:
                _check(lib.redlock_options_set_fencing(opts, 1 if fencing else 0))
            if reentrant is not None:
                _check(lib.redlock_options_set_reentrant(opts, 1 if reentrant else 0))
            if stats is not None:
                _check(lib.redlock_options_set_stats(opts, 1 if stats else 0))
            if on_event is not None:
                core.event_fn = on_event
                core.event_cb = _EVENT_CB(core._on_event)
                _check(lib.redlock_options_set_event_cb(opts, core.event_cb, None))
            if key_prefix is not None:
                _check(lib.redlock_options_set_key_prefix(opts, _bytes_arg(key_prefix,
                                                                           "key_prefix")),
                       "key_prefix")
            if owner is not None:
                core.owner = _set_owner(lib, opts, owner)
            if getattr(lib, "redlock_options_get_max_ttl", None) is not None:
                mt = ctypes.c_uint32()
                if lib.redlock_options_get_max_ttl(opts, ctypes.byref(mt)) == 0:
                    core.max_ttl_ms = mt.value
            core.opened = True  # from now on the log callback runs on the I/O thread
            out = ctypes.c_void_p()
            _check(lib.redlock_open(ctypes.byref(out), opts))
        finally:
            lib.redlock_options_free(opts)
        core.ptr = out.value
        self._core = core
        _OPEN_CORES.add(core)

    # -- life cycle
    def close(self):
        """Releases every lock still held (best effort, bounded by the request
        timeout), invalidates this client's Lock objects, cancels waiting
        lock() calls and stops the I/O thread.  Idempotent.  From a callback
        (I/O thread) it returns at once and finishes on a helper thread."""
        if self._core is not None:
            self._core.close()

    @property
    def closed(self):
        return self._core is None or self._core.state != _OPEN

    @property
    def owner(self):
        """The client's owner label (Client(owner=...)), "" when none."""
        return self._core.owner if self._core is not None else ""

    def __enter__(self):
        if self.closed:
            raise ClosedError(ECLOSED)
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        core = getattr(self, "_core", None)
        if core is not None and core.state == _OPEN:
            try:
                warnings.warn("redlock_c.Client was not closed", ResourceWarning, source=self)
            except Exception:  # pragma: no cover - interpreter shutdown
                pass
            core.close()

    def __repr__(self):
        return "<redlock_c.Client %s>" % ("closed" if self.closed else "open")

    def _ttl(self, ttl_ms, what="ttl_ms"):
        return _ttl_arg(ttl_ms, what, getattr(self._core, "max_ttl_ms", None))

    # -- locking
    def lock(self, resource, ttl_ms, wait_ms=None, watch=False, on_lost=None):
        """Acquires resource for ttl_ms.  wait_ms None (or 0): retry by the
        client's retry policy (redlock_lock); wait_ms > 0: keep trying until
        wait_ms is spent, woken early by releases (redlock_lock_wait; then
        WaitTimeout).  watch=True keeps extending the lock until it is unlocked
        (see Lock.watch).  Returns a Lock; raises LockedError, NoQuorumError,
        ExpiredError, WaitTimeout, CanceledError (client closed meanwhile), ..."""
        res = _bytes_arg(resource, "resource")
        ttl = self._ttl(ttl_ms)
        wait = 0 if wait_ms is None else _ms(wait_ms, "wait_ms")
        handle = self._acquire_async("lock()", "redlock_lock_async", (res, ttl, wait))
        lk = self._adopt(handle, (resource,))
        return self._maybe_watch(lk, watch, on_lost)

    # -- coordination primitives
    def semaphore_acquire(self, name, limit, ttl_ms, wait_ms=0, watch=False, on_lost=None):
        """A permit of the counting semaphore `name`: at most `limit`
        (1..MAX_SEM_LIMIT) permits are held at once across every client
        (redlock_semaphore_acquire).  Every client must pass the same limit
        (InvalidArgument otherwise, with the reason in the log).  wait_ms 0:
        one try (LockedError when all are taken); > 0: wait, woken by
        releases (WaitTimeout).  Returns a Lock: unlock, extend and watch it
        like a lock; its .resource names its slot ("NAME:sem:3")."""
        res = _bytes_arg(name, "name")
        lim = _u32(limit, "limit")
        ttl = self._ttl(ttl_ms)
        wait = _ms(wait_ms or 0, "wait_ms")
        self._optional("redlock_semaphore_acquire_async")
        handle = self._acquire_async("semaphore_acquire()", "redlock_semaphore_acquire_async",
                                     (res, lim, ttl, wait))
        return self._maybe_watch(self._adopt(handle, None), watch, on_lost)

    def rwlock_read(self, name, ttl_ms, wait_ms=0, watch=False, on_lost=None):
        """A read hold of the read-write lock `name` (redlock_rwlock_read):
        shared with other readers, never with a writer; refused while a
        writer waits.  wait_ms as in semaphore_acquire.  Returns a Lock."""
        return self._rwlock("redlock_rwlock_read_async", "rwlock_read()", name, ttl_ms, wait_ms,
                            watch, on_lost)

    def rwlock_write(self, name, ttl_ms, wait_ms=0, watch=False, on_lost=None):
        """A write hold of the read-write lock `name` (redlock_rwlock_write):
        excludes readers and writers.  While it waits (wait_ms > 0) new
        readers are refused.  There is no upgrade from a read hold: release
        it first.  Returns a Lock."""
        return self._rwlock("redlock_rwlock_write_async", "rwlock_write()", name, ttl_ms, wait_ms,
                            watch, on_lost)

    def _rwlock(self, symbol, what, name, ttl_ms, wait_ms, watch, on_lost):
        res = _bytes_arg(name, "name")
        ttl = self._ttl(ttl_ms)
        wait = _ms(wait_ms or 0, "wait_ms")
        self._optional(symbol)
        handle = self._acquire_async(what, symbol, (res, ttl, wait))
        return self._maybe_watch(self._adopt(handle, (name,)), watch, on_lost)

    def _optional(self, symbol):
        fn = getattr(self._core.lib, symbol, None)
        if fn is None or fn.argtypes is None:
            raise NotSupportedError(ENOTSUP, detail="%s is not in this libredlock" % symbol)
        return fn

    def _acquire_async(self, what, symbol, args):
        """Runs an acquisition through its callback form (symbol, see
        _Core.submit) and waits for it.  Interruptible (Ctrl-C): the call is
        canceled (redlock_cancel) and a grant nobody waits for any more is
        released.  Returns the handle."""
        core = self._core
        if core.on_loop_thread():
            raise WouldBlockError(EWOULDBLOCK, detail="%s from a redlock callback" % what)
        op = _Pending()
        core.start(op, symbol, args)
        try:
            op.event.wait()
        except BaseException:
            with op.mutex:
                abandoned = not op.done
                op.abandoned = abandoned  # the callback releases what it gets
            if abandoned:
                core.cancel(op.call_id)
                raise
            if op.status == 0 and op.handle:
                self._release_orphan(op.handle)
            raise
        if op.status != 0:
            raise _make_error(op.status, votes=op.votes)
        return op.handle

    def trylock(self, resource, ttl_ms, watch=False, on_lost=None):
        """One attempt (redlock_trylock).  Raises LockedError when held."""
        core = self._core
        res = _bytes_arg(resource, "resource")
        ttl = self._ttl(ttl_ms)
        out = ctypes.c_void_p()
        core.enter()
        try:
            rc = core.lib.redlock_trylock(core.ptr, res, ttl, ctypes.byref(out))
            votes = _round_votes(core.lib, core.ptr, rc)  # this thread: this call's
        finally:
            core.leave()
        _check(rc, votes=votes)
        lk = self._adopt(out.value, (resource,))
        return self._maybe_watch(lk, watch, on_lost)

    def lock_many(self, resources, ttl_ms, watch=False, on_lost=None):
        """All of resources (1..MAX_MANY, no duplicates) or none, as one Lock
        (redlock_lock_many), retrying by the client's retry policy."""
        core = self._core
        if isinstance(resources, (str, bytes)):
            raise TypeError("resources must be a list, not a single string")
        resources = tuple(resources)
        encoded = [_bytes_arg(r, "resource") for r in resources]
        ttl = self._ttl(ttl_ms)
        arr = (ctypes.c_char_p * max(1, len(encoded)))(*encoded)
        out = ctypes.c_void_p()
        core.enter()
        try:
            rc = core.lib.redlock_lock_many(core.ptr, arr, len(encoded), ttl, ctypes.byref(out))
            votes = _round_votes(core.lib, core.ptr, rc)
        finally:
            core.leave()
        _check(rc, votes=votes)
        lk = self._adopt(out.value, resources)
        return self._maybe_watch(lk, watch, on_lost)

    def elect(self, name, ttl_ms, on_elected=None, on_lost=None, max_hold_ms=None):
        """Campaigns for leadership of name (redlock_elect) until resign() or
        close(); returns an Election at once.  The lease (ttl_ms, watched while
        leader) is always fenced: the term is its fencing token, larger than
        every earlier term of name.  on_elected(election, term) and
        on_lost(election, reason) run on the library's I/O thread, once per
        term each (on_lost only if the term ends by itself, never after
        resign() or close()); keep them short.  reason is LOST_EXPIRED (the
        lease could not be renewed in time) or LOST_MAX_HOLD.

        max_hold_ms (> 0; redlock_elect_bounded): every term ends that long
        after its grant: the leader resigns it (the release wakes the other
        campaigners), on_lost gets LOST_MAX_HOLD (not a failure: the bound
        was reached), and the campaign goes on after its back-off.  Raises
        InvalidArgument (bad name, ttl or bound), ClosedError, ..."""
        for fn, what in ((on_elected, "on_elected"), (on_lost, "on_lost")):
            if fn is not None and not callable(fn):
                raise TypeError("%s must be callable" % what)
        core = self._core
        raw = _bytes_arg(name, "name")
        ttl = self._ttl(ttl_ms)
        bound = None if max_hold_ms is None else _ms(max_hold_ms, "max_hold_ms", 1)
        if bound is not None:
            self._optional("redlock_elect_bounded")
        election = Election(self, name, on_elected, on_lost)
        out = ctypes.c_void_p()
        with core.mutex:
            if core.state != _OPEN:
                raise ClosedError(ECLOSED)
            key = next(core.keys)
            election._key = key
            # Registered before the call: on_elected may run before it returns.
            core.elections[key] = election
            if bound is None:
                rc = core.lib.redlock_elect(core.ptr, raw, ttl, core.elected_cb,
                                            core.election_lost_cb, key, ctypes.byref(out))
            else:
                rc = core.lib.redlock_elect_bounded(core.ptr, raw, ttl, bound, core.elected_cb,
                                                    core.election_lost_cb, key,
                                                    ctypes.byref(out))
            if rc != 0:
                core.elections.pop(key, None)
            elif not election._done:
                election._handle = out.value
        _check(rc)
        return election

    # -- who holds it, and taking it back
    def inspect(self, name, kind="lock"):
        """The masters' view of one resource (redlock_inspect), read with one
        round to every master (nothing is written), as a dict: "held" (a
        quorum holds the same value; for a semaphore or read-write lock, some
        hold), "agreed" (False when fewer than a quorum answered or they do
        not all show the same holds), "owner" and "value" of the hold a
        quorum agrees on (owner None when that holder set no label),
        "ttl_ms_min"/"ttl_ms_max", "fence" (an election's term), "count",
        "holders" and per-master "masters"; docs/api.md "Inspect and revoke"
        lists every field.  kind: "lock", "semaphore", "rwlock" or
        "election"; name as that kind's calls take it.  Blocking (up to the
        request timeout); WouldBlockError from a callback."""
        macro = _INSPECT_KINDS.get(kind) if isinstance(kind, str) else None
        if macro is None:
            raise InvalidArgument(EINVAL, detail="kind must be one of %s, not %r"
                                  % (", ".join(map(repr, _INSPECT_KINDS)), kind))
        raw = _bytes_arg(name, "name")
        fn = self._optional("redlock_inspect")
        core = self._core
        code = _lib_constant(core.lib, macro)  # the kind codes are the library's
        core.enter()
        try:
            need = fn(core.ptr, raw, code, None, 0)
            while True:
                _check(min(need, 0), "inspect %r" % (name,))
                # Every call is a round of its own: the view may have grown since.
                size = need + 1024
                buf = ctypes.create_string_buffer(size)
                got = fn(core.ptr, raw, code, buf, size)
                _check(min(got, 0), "inspect %r" % (name,))
                if got < size:
                    break
                need = got
        finally:
            core.leave()
        return json.loads(buf.value.decode("utf-8"))

    def revoke(self, resource):
        """An administrator's revoke of the lock on resource (or of an
        election's lease: name it as elect does), whoever holds it
        (redlock_revoke).  With fencing on the key, the fence counter is
        raised above the holder's token on a quorum and the key deleted:
        returns that new fence, which a store that checks tokens should be
        told so that it refuses the old holder from then on.  Without
        fencing, returns 0: the key keeps its remaining TTL under the
        revoker's value, so nobody gets the lock before the old lease would
        have ended.  Either way the holder's next extension (its watch's
        too) fails: its Lock is lost, its on_lost runs once.  Raises
        NoQuorumError (too few masters did it; some may have),
        NotSupportedError (too many masters run no Lua), ...  Blocking."""
        res = _bytes_arg(resource, "resource")
        fn = self._optional("redlock_revoke")
        core = self._core
        fence = ctypes.c_uint64()
        core.enter()
        try:
            rc = fn(core.ptr, res, ctypes.byref(fence))
        finally:
            core.leave()
        _check(rc, "revoke %r" % (resource,))
        return int(fence.value)

    # -- who leads
    def leader(self, name):
        """Who leads the election `name` now (redlock_election_leader): one
        read round (nothing written), blocking up to the request timeout.
        Returns a Leader: state LEADER_HELD with term, ttl_ms (a lower
        bound of the lease left) and owner (the leader's label, "" when it
        set none); LEADER_NONE (nobody leads, or a hand-off is half done);
        LEADER_UNKNOWN (fewer than a quorum of masters answered: not an
        error)."""
        raw = _bytes_arg(name, "name")
        fn = self._optional("redlock_election_leader")
        core = self._core
        view = _LeaderView()
        core.enter()
        try:
            rc = fn(core.ptr, raw, ctypes.byref(view))
        finally:
            core.leave()
        _check(rc, "leader %r" % (name,))
        return Leader._of(view)

    def observe(self, name, callback, poll_ms=0):
        """Follows the leadership of the election `name` without
        campaigning (redlock_election_observe): callback(leader) runs on the
        library's I/O thread first with the view of the first read, then
        whenever it changes (state, term or owner; never for the ttl alone):
        a new leader, no leader, unknown.  It re-reads when a release or a
        new term of `name` is announced (a hand-off is seen within about one
        round trip of the new grant), when the lease it saw should have
        ended, and at least every poll_ms (0: the client's retry delay).
        Returns an Observer: stop() it (or use it as a context manager);
        close() stops it too.  Keep the callback short."""
        if not callable(callback):
            raise TypeError("callback must be callable(leader)")
        raw = _bytes_arg(name, "name")
        poll = _ms(poll_ms, "poll_ms")
        fn = self._optional("redlock_election_observe")
        core = self._core
        observer = Observer(self, name, callback)
        out = ctypes.c_void_p()
        with core.mutex:
            if core.state != _OPEN:
                raise ClosedError(ECLOSED)
            key = next(core.keys)
            observer._key = key
            # Registered before the call: the first view may come before it returns.
            core.observers[key] = observer
            rc = fn(core.ptr, raw, poll, core.leader_cb, key, ctypes.byref(out))
            if rc != 0:
                core.observers.pop(key, None)
            elif not observer._done:
                observer._handle = out.value
        _check(rc, "observe %r" % (name,))
        return observer

    def last_votes(self):
        """One-line summary of the client's most recently decided round
        (redlock_last_votes); for diagnostics only: do not parse it."""
        core = self._core
        with core.mutex:
            if core.state != _OPEN:
                raise ClosedError(ECLOSED)
            need = core.lib.redlock_last_votes(core.ptr, None, 0)
            _check(min(need, 0))
            buf = ctypes.create_string_buffer(need + 1)
            core.lib.redlock_last_votes(core.ptr, buf, need + 1)
        return _decode(buf.value)

    def stats(self, format=None):
        """The client's counters, gauges and latency histograms
        (redlock_stats): a dict (the JSON rendering, parsed) by default, or
        the text itself with format="prometheus" or "json".  Any thread, also
        from callbacks.  NotSupportedError when the client has stats=False."""
        macro = {None: "REDLOCK_STATS_JSON", "dict": "REDLOCK_STATS_JSON",
                 "json": "REDLOCK_STATS_JSON", "prometheus": "REDLOCK_STATS_PROMETHEUS"}.get(format)
        if macro is None:
            raise InvalidArgument(EINVAL, detail="format must be None, 'json' or 'prometheus'")
        core = self._core
        fmt = _lib_constant(core.lib, macro)  # the format codes are the library's
        with core.mutex:
            if core.state != _OPEN:
                raise ClosedError(ECLOSED)
            need = core.lib.redlock_stats(core.ptr, fmt, None, 0)
            while True:
                _check(min(need, 0))
                size = need + 4096  # counters may grow in between
                buf = ctypes.create_string_buffer(size)
                got = core.lib.redlock_stats(core.ptr, fmt, buf, size)
                _check(min(got, 0))
                if got < size:
                    break
                need = got
        text = buf.value.decode("utf-8")
        return json.loads(text) if format in (None, "dict") else text

    # -- internals
    def _adopt(self, handle, resources):
        core = self._core
        with core.mutex:
            if core.state != _OPEN or not handle:
                # The close in progress (or done) releases and frees the handle.
                raise CanceledError(ECANCELED, detail="client closed while locking")
            if resources is None:  # a permit: named by its slot
                resources = (_decode(core.lib.redlock_lock_resource(handle)),)
            lk = Lock(self, handle, resources)
            core.locks.add(lk)
            return lk

    def _maybe_watch(self, lk, watch, on_lost):
        if watch or on_lost is not None:
            try:
                lk.watch(on_lost)
            except BaseException:
                try:
                    lk.unlock()
                except RedlockError:
                    pass
                raise
        return lk

    def _release_orphan(self, handle):
        core = self._core
        with core.mutex:
            if core.state == _OPEN:
                core.lib.redlock_unlock_async(core.ptr, handle, _DONE_CB(), None)


# ---- Election --------------------------------------------------------------------------------

class Election:
    """One campaign for leadership (redlock_election_t), made by Client.elect.

    .leader is True between on_elected and on_lost (or resign); .term is the
    current (or last) term, 0 before the first; .validity_ms is the time left
    in the current term (<= 0 when not leader): check it before acting, as
    on_lost comes after the fact.  wait_elected(timeout) waits for a term.
    resign() stops the campaign, hands over at once if leader and frees the C
    handle; no callback runs after it returns (from a callback it returns at
    once).  As a context manager, leaving the block resigns."""

    def __init__(self, client, name, on_elected, on_lost):
        self._client = client
        self._core = client._core
        self._name = name if isinstance(name, str) else _decode(bytes(name))
        self._on_elected = on_elected
        self._on_lost = on_lost
        self._handle = None
        self._key = None
        self._done = False  # resigned, or its client closed
        self._closed = False
        self._state = threading.Condition()
        self._term = 0
        self._terms = 0
        self._leader = False

    # -- callbacks (I/O thread)
    def _elected(self, term):
        with self._state:
            self._term = term
            self._terms += 1
            self._leader = True
            self._state.notify_all()
        if self._on_elected is not None:
            self._on_elected(self, term)

    def _lost(self, reason):
        with self._state:
            self._leader = False
            self._state.notify_all()
        if self._on_lost is not None:
            self._on_lost(self, reason)

    # -- properties
    @property
    def name(self):
        return self._name

    @property
    def term(self):
        """The current or last term (0 before the first election)."""
        return self._term

    @property
    def leader(self):
        """True between on_elected and on_lost; False once resigned or closed."""
        return self._leader and not self._done

    @property
    def validity_ms(self):
        """Milliseconds left in the current term; <= 0 when not leader."""
        core = self._core
        with core.mutex:
            if self._handle is None:
                return 0
            return int(core.lib.redlock_election_validity_ms(self._handle))

    @property
    def resigned(self):
        """True after resign() or after the client was closed."""
        return self._done

    @property
    def client(self):
        return self._client

    # -- operations
    def wait_elected(self, timeout=None, after_term=0):
        """Waits until this campaign holds a term larger than after_term;
        returns that term, or None on timeout or once resigned."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._state:
            while not (self._leader and self._term > after_term):
                if self._done:
                    return None
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._state.wait(left)
            return self._term

    def resign(self):
        """Stops campaigning, releases the leadership if held (the next
        campaigner is woken at once) and frees the handle (redlock_resign).
        Idempotent; a no-op after the client was closed."""
        core = self._core
        rc = core.end_handle(self, core.lib.redlock_resign, core.elections)
        if rc is None:
            return  # resigned already, or the close resigns it
        with self._state:
            self._leader = False
            self._state.notify_all()
        if rc == ECLOSED:
            return  # the close in progress resigns it
        _check(rc)

    # -- internals
    def _invalidate(self):
        """Called by close() under the core mutex: the handle is the close's."""
        self._done = True
        if self._handle is not None:
            self._handle = None
            self._closed = True
        with self._state:
            self._leader = False
            self._state.notify_all()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.resign()
        return False

    def __repr__(self):
        state = ("resigned" if self._done
                 else "leader" if self._leader else "campaigning")
        return "<redlock_c.Election %r %s term=%d>" % (self._name, state, self._term)


# ---- Leader, Observer -------------------------------------------------------------------------

class Leader:
    """Who leads an election, as a quorum of masters holds it (a copy of
    redlock_leader_t): state (LEADER_NONE, LEADER_HELD, LEADER_UNKNOWN),
    term (the leader's term, its fencing token; 0 unless held), ttl_ms (the
    lease left, the least over the quorum that holds it; 0 unless held) and
    owner (the leader's owner label; "" when it set none or nobody leads).
    Equal when state, term and owner are (the ttl is left out, as the
    observer leaves it out of "a change")."""

    __slots__ = ("state", "term", "ttl_ms", "owner")

    def __init__(self, state, term, ttl_ms, owner):
        self.state, self.term, self.ttl_ms, self.owner = state, term, ttl_ms, owner

    @classmethod
    def _of(cls, view):
        return cls(int(view.state), int(view.term), int(view.ttl_ms), _decode(view.owner) or "")

    @property
    def held(self):
        """True when a quorum holds the same lease (state LEADER_HELD)."""
        return self.state == LEADER_HELD

    def __eq__(self, other):
        if not isinstance(other, Leader):
            return NotImplemented
        return (self.state, self.term, self.owner) == (other.state, other.term, other.owner)

    def __hash__(self):
        return hash((self.state, self.term, self.owner))

    def __repr__(self):
        name = {LEADER_NONE: "none", LEADER_HELD: "held", LEADER_UNKNOWN: "unknown"}.get(
            self.state, str(self.state))
        return "<redlock_c.Leader %s term=%d ttl_ms=%d owner=%r>" % (name, self.term, self.ttl_ms,
                                                                   self.owner)


class Observer:
    """A follower of one election's leadership (Client.observe).  stop()
    ends it: no callback runs after it returns (from inside the callback it
    returns at once).  As a context manager, leaving the block stops it.
    .last is the latest view it reported (None before the first)."""

    def __init__(self, client, name, callback):
        self._client = client
        self._core = client._core
        self._name = name if isinstance(name, str) else _decode(bytes(name))
        self._callback = callback
        self._handle = None
        self._key = None
        self._done = False
        self._cond = threading.Condition()
        self._last = None
        self._changes = 0

    def _changed(self, leader):  # the I/O thread
        with self._cond:
            self._last = leader
            self._changes += 1
            self._cond.notify_all()
        self._callback(leader)

    @property
    def name(self):
        return self._name

    @property
    def last(self):
        """The latest view reported (a Leader), or None before the first."""
        return self._last

    @property
    def stopped(self):
        """True after stop() or after the client was closed."""
        return self._done

    def wait_for(self, predicate, timeout=None):
        """Waits until predicate(leader) holds for a reported view (the
        latest first); returns that view, or None on timeout or once stopped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            seen = -1
            while True:
                if self._changes != seen:
                    seen = self._changes
                    if self._last is not None and predicate(self._last):
                        return self._last
                if self._done:
                    return None
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(left)

    def stop(self):
        """Stops observing and frees the C observer (redlock_observe_stop).
        Idempotent; a no-op after the client was closed."""
        core = self._core
        rc = core.end_handle(self, core.lib.redlock_observe_stop, core.observers)
        if rc is None:
            return  # stopped already, or the close stops it
        with self._cond:
            self._cond.notify_all()
        if rc == ECLOSED:
            return  # the close in progress stops it
        _check(rc)

    def _invalidate(self):
        """Called by close() under the core mutex: the C observer is the close's."""
        self._done = True
        self._handle = None
        with self._cond:
            self._cond.notify_all()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        return "<redlock_c.Observer %r %s last=%r>" % (
            self._name, "stopped" if self._done else "observing", self._last)


# ---- Lock ------------------------------------------------------------------------------------

class Lock:
    """One held lock (redlock_lock_t).  Made by Client.lock/trylock/lock_many,
    and, for a semaphore permit or a read-write hold, by
    Client.semaphore_acquire/rwlock_read/rwlock_write.

    As a context manager, leaving the block unlocks it (acquisition already
    happened in the call that returned it).  If the block raised, an error
    from the unlock is suppressed so that the block's exception propagates;
    otherwise it is raised (LostError: the lock was lost meanwhile).

    After unlock(), or after the client is closed, the Lock is released:
    unlock() is a no-op, extend()/watch() raise (InvalidArgument, or
    ClosedError if the client was closed), validity_ms is 0, and resource,
    resources, value and fence keep their values."""

    def __init__(self, client, handle, resources):
        self._core = None
        lib = client._core.lib
        self._client = client
        self._handle = handle
        self._resources = tuple(r if isinstance(r, str) else _decode(bytes(r))
                                for r in resources)
        self._value = _decode(lib.redlock_lock_value(handle))
        self._fence = int(lib.redlock_lock_fence(handle))
        owner_fn = getattr(lib, "redlock_lock_owner", None)
        self._owner = (_decode(owner_fn(handle)) or "") if owner_fn is not None and \
            owner_fn.argtypes is not None else ""
        self._lost = False
        self._lost_reason = None
        self._closed = False
        self._on_lost = None
        self._watch_key = None
        self._core = client._core

    # -- properties
    @property
    def resource(self):
        """The resource (the first one for lock_many), without the key prefix."""
        return self._resources[0]

    @property
    def resources(self):
        """All resources of the lock (a tuple)."""
        return self._resources

    @property
    def value(self):
        """The random value stored in Redis (32 hex characters)."""
        return self._value

    @property
    def fence(self):
        """The fencing token (0 unless the client has fencing=True)."""
        return self._fence

    @property
    def owner(self):
        """The owner label its value carries (the client's owner=), "" when
        none."""
        return self._owner

    @property
    def lost_reason(self):
        """Why the watch ended, once its on_lost has run: LOST_EXPIRED (a
        failure: it could not be extended in time, or was revoked) or
        LOST_MAX_HOLD (not a failure: the watch's max_hold_ms was reached and
        the lock released on purpose); None before."""
        return self._lost_reason

    @property
    def validity_ms(self):
        """Milliseconds of validity left (local estimate); <= 0 once expired,
        0 after release."""
        core = self._core
        with core.mutex:
            if self._handle is None:
                return 0
            return int(core.lib.redlock_lock_validity_ms(self._handle))

    @property
    def lost(self):
        """True once the lock was reported lost (watch, failed extension) or
        its validity ran out."""
        core = self._core
        with core.mutex:
            if self._handle is None:
                return self._lost
            return self._lost or bool(core.lib.redlock_lock_is_lost(self._handle))

    @property
    def released(self):
        """True after unlock() or after the client was closed."""
        return self._handle is None

    @property
    def client(self):
        return self._client

    # -- queries (as redis-py's Lock)
    def owned(self):
        """True while this Lock holds its resource: not released, not lost,
        validity left (the local estimate, no round trip)."""
        core = self._core
        with core.mutex:
            handle = self._handle
            if handle is None or self._lost:
                return False
            return (not core.lib.redlock_lock_is_lost(handle)
                    and core.lib.redlock_lock_validity_ms(handle) > 0)

    def locked(self):
        """Whether the resource is locked, as far as this Lock can tell
        without a round: True while it owns it.  Whether another holder has
        it is a question only an acquisition answers (trylock)."""
        return self.owned()

    # -- operations
    def _gone(self):
        if self._closed:
            return ClosedError(ECLOSED, detail="the client of this lock is closed")
        return InvalidArgument(EINVAL, detail="lock already released")

    def extend(self, ttl_ms):
        """Sets the lock's TTL to ttl_ms from now on a quorum (redlock_extend).
        LostError if it was lost (or its validity had run out); NoQuorumError
        leaves it unchanged (may be retried)."""
        core = self._core
        ttl = _ttl_arg(ttl_ms, "ttl_ms", core.max_ttl_ms)
        with core.mutex:
            handle = self._handle
            if handle is None:
                raise self._gone()
            core.enter()
        try:
            # Lost already (or run out): ELOST without a round, so no votes.
            lost_before = core.lib.redlock_lock_is_lost(handle) != 0
            rc = core.lib.redlock_extend(core.ptr, handle, ttl)
            votes = None if lost_before else _round_votes(core.lib, core.ptr, rc)
        finally:
            core.leave()
        if rc == ELOST:
            self._lost = True
        _check(rc, votes=votes)

    def unlock(self):
        """Releases the lock on all masters (redlock_unlock).  A second call
        (or a call after the client was closed) is a no-op.  The Lock is
        released even when this raises LostError (a quorum no longer had our
        value) or NoQuorumError.  From a callback on the I/O thread it starts
        the release without waiting and returns."""
        core = self._core
        with core.mutex:
            handle = self._handle
            if handle is None:
                return
            core.enter()
            self._handle = None
        rc = ENOMEM
        votes = None
        try:
            rc = core.lib.redlock_unlock(core.ptr, handle)
            if rc != EWOULDBLOCK:
                votes = _round_votes(core.lib, core.ptr, rc)
            if rc in (ENOMEM, EIO):
                with core.mutex:  # not queued: the handle stays live
                    if core.state == _OPEN:
                        self._handle = handle
        finally:
            core.leave()
        if self._handle is None:
            self._forget_watch()
        if rc == ELOST:
            if self._lost_reason == LOST_MAX_HOLD:
                return  # the library released it at the bound, as asked: not a failure
            self._lost = True
        if rc == EWOULDBLOCK:
            return  # on the loop thread: release started, handle freed
        _check(rc, votes=votes)

    def watch(self, on_lost=None, max_hold_ms=None):
        """Keeps extending the lock (by its last TTL) until unlock
        (redlock_watch).  If it cannot be extended before its validity ends,
        .lost becomes True and on_lost(lock) is called once, on the library's
        I/O thread (it may call lock.unlock(), which does not block there),
        with .lost_reason LOST_EXPIRED.  A second watch replaces on_lost (and
        the bound).

        max_hold_ms (> 0; redlock_watch_bounded) caps the whole hold: that
        long after the grant (not after this call) the watch stops, the lock
        is released on every master (waiters are woken) and on_lost runs
        once with .lost_reason LOST_MAX_HOLD, which is not a failure.  The
        Lock is then lost; unlock() (and leaving a with block) frees it
        without raising."""
        if on_lost is not None and not callable(on_lost):
            raise TypeError("on_lost must be callable(lock)")
        bound = None if max_hold_ms is None else _ms(max_hold_ms, "max_hold_ms", 1)
        if bound is not None:
            self._client._optional("redlock_watch_bounded")
        core = self._core
        with core.mutex:
            if self._handle is None:
                raise self._gone()
            if self._watch_key is None:
                self._watch_key = next(core.keys)
            self._on_lost = on_lost
            core.watched[self._watch_key] = weakref.ref(self)
            if bound is None:
                rc = core.lib.redlock_watch(core.ptr, self._handle, core.lost_cb,
                                            self._watch_key)
            else:
                rc = core.lib.redlock_watch_bounded(core.ptr, self._handle, bound, core.lost_cb,
                                                    self._watch_key)
            if rc != 0:
                core.watched.pop(self._watch_key, None)
        _check(rc)

    # -- internals
    def _forget_watch(self):
        key = self._watch_key
        if key is not None:
            self._core.watched.pop(key, None)

    def _invalidate(self):
        """Called by close() under the core mutex: the C handle is the close's."""
        if self._handle is not None:
            self._handle = None
            self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.unlock()
        else:
            try:
                self.unlock()
            except RedlockError:
                pass
        return False

    def __del__(self):
        core = getattr(self, "_core", None)
        if core is None or self._handle is None:
            return
        with core.mutex:
            handle = self._handle
            if handle is None or core.state != _OPEN:
                return
            self._handle = None
            # Not blocking: fine from any thread, the I/O thread included.
            core.lib.redlock_unlock_async(core.ptr, handle, _DONE_CB(), None)
        try:
            self._forget_watch()
            warnings.warn("redlock_c.Lock on %r garbage-collected while held; released"
                          % (self._resources[0],), ResourceWarning)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self):
        state = "released" if self._handle is None else ("lost" if self._lost else "held")
        return "<redlock_c.Lock %r %s fence=%d>" % (self._resources[0], state, self._fence)
