'use strict';
/*
 * redlock-c for Node.js: a Promise API over the C library's callback API
 * (include/redlock.h), through koffi (an FFI package with prebuilt binaries).
 *
 * Thread rules this binding upholds (see README.md, "Threads"):
 *  - The C library calls back on its own I/O thread.  koffi queues every such
 *    call to the JS main thread (the I/O thread waits until the JS function has
 *    run), so all JS callbacks and promise settlements happen on the JS thread.
 *  - Hence the JS thread must never block in a C call that waits for the I/O
 *    thread: it would deadlock.  The blocking C calls this binding uses run
 *    elsewhere: redlock_open, redlock_close, redlock_resign, redlock_inspect,
 *    redlock_revoke, redlock_election_leader and redlock_observe_stop on
 *    koffi's thread pool (`.async`), redlock_trylock
 *    on worker threads (blocking.js: there a failed call's votes are read
 *    on its own thread); everything
 *    else is either a callback form (lock, lockMany, the primitives, extend,
 *    unlock) or returns at once (watch, redlock_cancel, redlock_elect,
 *    redlock_election_observe, accessors).
 *  - Every acquisition that can wait is an _ex callback form: an AbortSignal
 *    cancels it through redlock_cancel and the call's id.
 *  - A failed call's votes (redlock_last_votes: the library keeps them per
 *    calling thread) are read in its callback, on the JS thread: the JS
 *    thread made the call, and the I/O thread, which decides rounds, waits
 *    while the callback runs, so the JS thread's record is that call's
 *    round.
 *  - koffi's cross-thread callbacks do not keep Node's event loop alive, and a
 *    callback arriving after Node tore down its environment crashes the
 *    process.  So an open Client holds a ref'd timer: like a socket, it keeps
 *    the process alive until close().
 */

const koffi = require('koffi');
const fs = require('fs');
const path = require('path');
const { BlockingPool } = require('./blocking');

const ABI_MAJOR = '0';

// ---- constants of redlock.h ----------------------------------------------------
// Exported at require() time, before the library is loaded (and typed as
// literals in index.d.ts), so the values are written here once; loadLibrary()
// compares each with the library's (redlock_constant) and refuses a library
// that disagrees.  Names and messages of errors, defaults and the stats
// format codes are never copied: they are asked of the library.

const CODES = {
  EINVAL: -1, ENOMEM: -2, ELOCKED: -3, ENOQUORUM: -4, EEXPIRED: -5, ELOST: -6,
  ETIMEDOUT: -7, ECANCELED: -8, ECLOSED: -9, EWOULDBLOCK: -10, EIO: -11, ENOTSUP: -12,
  EFORKED: -13,
};
const LOGS = { LOG_DEBUG: 0, LOG_INFO: 1, LOG_WARN: 2, LOG_ERROR: 3 };
const LIMITS = { MAX_NODES: 64, MAX_RESOURCE_LEN: 1024, MAX_PREFIX_LEN: 256, MAX_MANY: 64, MAX_SEM_LIMIT: 1024, MAX_OWNER: 64 };
// Why a watch (or an election's term) ended, the reason its lost callback
// gets: LOST_EXPIRED (= ELOST) is a failure, the lock could not be extended
// in time (or was revoked); LOST_MAX_HOLD (positive, never an error code) is
// not: the hold reached the bound it was given (maxHoldMs) and the library
// released it on purpose.
const LOST = { LOST_EXPIRED: CODES.ELOST, LOST_MAX_HOLD: 1 };
// Who leads an election (Client.leader, Client.observe): a quorum holds no
// lease (nobody leads, or a hand-off is half done), a quorum holds the same
// lease, or fewer than a quorum of masters answered.
const LEADER = { LEADER_NONE: 0, LEADER_HELD: 1, LEADER_UNKNOWN: 2 };
// Client.inspect's kinds, to their REDLOCK_INSPECT_* macros (the values are
// asked of the library).
const INSPECT_KINDS = { lock: 'LOCK', semaphore: 'SEMAPHORE', rwlock: 'RWLOCK', election: 'ELECTION' };
// redlock_cancel's "too late" return (internal: compared with the library's too).
const CANCEL_LATE = 1;

// The method `await using` calls.  Node 18.18+/20.4+ define
// Symbol.asyncDispose; on older ones the method sits under Node's own
// registry key, so nothing is polyfilled globally.
const kAsyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');

// ---- errors -------------------------------------------------------------------

// The codes the library returns only after a decided round: their errors
// carry the round's votes.
const ROUND_CODES = new Set([CODES.ELOCKED, CODES.ENOQUORUM, CODES.EEXPIRED, CODES.ELOST,
  CODES.ETIMEDOUT]);

// Whether the votes belong in the message: they are the reason of a
// no-quorum failure, and a quarantined master is what a program against
// freshly started masters must be told about (it has ms left).
function votesExplain(errno, votes) {
  return Boolean(votes) && (errno === CODES.ENOQUORUM || votes.includes('=quarantined'));
}

class RedlockError extends Error {
  constructor(errno, message, detail, votes) {
    let name;
    try { name = load().redlock_err_name(errno); } catch { name = 'REDLOCK_E' + errno; }
    let text = detail ? `${message} (${detail})` : message;
    if (votesExplain(errno, votes)) text += `: ${votes}`;
    super(text);
    this.errno = errno;            // negative C code, e.g. -3
    this.code = name;              // 'REDLOCK_ELOCKED'
    if (detail !== undefined) this.detail = detail;
    // A decided round's votes (redlock_last_votes of that call); diagnostics.
    if (votes !== undefined) this.votes = votes;
  }
  get name() { return this.constructor.name; }
}
class InvalidArgumentError extends RedlockError {}
class NoMemoryError extends RedlockError {}
class LockedError extends RedlockError {}
class NoQuorumError extends RedlockError {}
class ExpiredError extends RedlockError {}
class LostError extends RedlockError {}
class WaitTimeoutError extends RedlockError {}
class CanceledError extends RedlockError {}
class ClosedError extends RedlockError {}
class WouldBlockError extends RedlockError {}
class RedlockIOError extends RedlockError {}
class NotSupportedError extends RedlockError {}
class ForkedError extends RedlockError {}

const CLASSES = {
  [CODES.EINVAL]: InvalidArgumentError, [CODES.ENOMEM]: NoMemoryError,
  [CODES.ELOCKED]: LockedError, [CODES.ENOQUORUM]: NoQuorumError,
  [CODES.EEXPIRED]: ExpiredError, [CODES.ELOST]: LostError, [CODES.ETIMEDOUT]: WaitTimeoutError,
  [CODES.ECANCELED]: CanceledError, [CODES.ECLOSED]: ClosedError,
  [CODES.EWOULDBLOCK]: WouldBlockError, [CODES.EIO]: RedlockIOError,
  [CODES.ENOTSUP]: NotSupportedError, [CODES.EFORKED]: ForkedError,
};

function makeError(errno, detail, votes) {
  const Cls = CLASSES[errno] || RedlockError;
  let message;
  try { message = load().redlock_strerror(errno); } catch { message = 'error ' + errno; }
  return new Cls(errno, message, detail, votes);
}

/** redlock_last_votes of this thread ('' on error). */
function votesOf(ptr) {
  let buf = Buffer.alloc(4096);
  let n = F.redlock_last_votes(ptr, buf, buf.length);
  if (n >= buf.length) { // the same record again: this thread makes no call in between
    buf = Buffer.alloc(n + 1);
    n = F.redlock_last_votes(ptr, buf, buf.length);
  }
  return n < 0 ? '' : buf.subarray(0, Math.min(n, buf.length - 1)).toString('utf8');
}

/**
 * The votes of a failed call, read inside its callback (see the header):
 * undefined when its status says no round was decided.
 */
function callbackVotes(ptr, status) {
  return ROUND_CODES.has(status) ? votesOf(ptr) : undefined;
}

/**
 * The error an aborted call rejects with: a DOMException named 'AbortError'
 * (as fetch's, and what `err.name === 'AbortError'` checks expect), the
 * signal's reason as its `cause`.
 */
function abortError(signal) {
  const reason = signal ? signal.reason : undefined;
  return new DOMException('The operation was aborted', { name: 'AbortError', cause: reason });
}

/** Checks an optional `signal` option (an AbortSignal, or anything shaped like one). */
function signalArg(signal) {
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal !== 'object' || typeof signal.addEventListener !== 'function'
    || typeof signal.aborted !== 'boolean') {
    throw new TypeError('signal must be an AbortSignal');
  }
  return signal;
}

// ---- library loading ----------------------------------------------------------

let F = null; // the bound functions
let loadedFrom = null; // the file F came from (the blocking workers load it too)
let pool = null; // blocking.js's workers, made at the first tryLock

/**
 * Where the npm tarball (scripts/package.sh) puts its prebuilt library for
 * this platform: libredlock.so.0 with a RUNPATH of $ORIGIN and the hiredis
 * and libuv it loads beside it.  Absent in a source checkout.
 */
function bundledLibrary() {
  return path.join(__dirname, 'prebuilt', `${process.platform}-${process.arch}`, 'libredlock.so.0');
}

function candidates() {
  // An explicit path wins over the bundled copy: it is how a program picks
  // another build (one with TLS, which the bundled copy lacks).
  if (process.env.REDLOCK_LIBRARY) return [process.env.REDLOCK_LIBRARY];
  const list = [];
  if (fs.existsSync(bundledLibrary())) list.push(bundledLibrary());
  list.push('libredlock.so.0');
  for (const dir of ['/usr/local/lib', '/usr/local/lib64', '/usr/lib', '/usr/lib64',
    `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`]) {
    list.push(path.join(dir, 'libredlock.so.0'));
  }
  // An in-tree build (bindings/node -> ../../build).
  list.push(path.join(__dirname, '..', '..', 'build', 'libredlock.so.0'));
  return list;
}

function declare(lib) {
  koffi.opaque('redlock_options_t');
  koffi.opaque('redlock_t');
  koffi.opaque('redlock_lock_t');
  koffi.opaque('redlock_election_t');
  koffi.opaque('redlock_observer_t');
  // redlock_leader_t (part of the ABI); owner is a NUL-terminated char array.
  const LeaderView = koffi.struct('redlock_leader_t', {
    state: 'int', term: 'uint64_t', ttl_ms: 'int64_t', owner: koffi.array('char', LIMITS.MAX_OWNER + 1, 'String'),
  });
  // `void *arg` is declared as intptr_t: the binding passes small integer ids,
  // never JS objects, through the C library.  Same registers on every ABI.
  const LockCb = koffi.proto('void redlock_node_lock_cb(int status, redlock_lock_t *lock, intptr_t arg)');
  const DoneCb = koffi.proto('void redlock_node_done_cb(int status, intptr_t arg)');
  const LostCb = koffi.proto('void redlock_node_lost_cb(redlock_lock_t *lock, int reason, intptr_t arg)');
  const LogCb = koffi.proto('void redlock_node_log_cb(int level, const char *msg, intptr_t arg)');
  const ElectedCb = koffi.proto('void redlock_node_elected_cb(redlock_election_t *e, uint64_t term, intptr_t arg)');
  const ElectionLostCb = koffi.proto('void redlock_node_election_lost_cb(redlock_election_t *e, int reason, intptr_t arg)');
  const LeaderCb = koffi.proto('void redlock_node_leader_cb(redlock_observer_t *obs, const redlock_leader_t *view, intptr_t arg)');
  const f = (sig) => lib.func(sig);
  // Added to the C API later: a library without it still loads, and the
  // option then rejects with NotSupportedError.
  const optional = (sig) => { try { return lib.func(sig); } catch { return null; } };
  return {
    LockCb, DoneCb, LostCb, LogCb, ElectedCb, ElectionLostCb, LeaderCb, LeaderView,
    redlock_version: f('const char *redlock_version(void)'),
    redlock_strerror: f('const char *redlock_strerror(int err)'),
    redlock_err_name: f('const char *redlock_err_name(int err)'),
    redlock_err_count: f('int redlock_err_count(void)'),
    redlock_err_code: f('int redlock_err_code(int index)'),
    redlock_constant: f('int redlock_constant(const char *name, _Out_ int64_t *value)'),
    redlock_constant_string: f('const char *redlock_constant_string(const char *name)'),
    redlock_options_get_retry: f('int redlock_options_get_retry(const redlock_options_t *o, _Out_ int *n, _Out_ uint32_t *delay, _Out_ uint32_t *jitter)'),
    redlock_options_get_timeouts: f('int redlock_options_get_timeouts(const redlock_options_t *o, _Out_ uint32_t *c, _Out_ uint32_t *r)'),
    redlock_options_new: f('redlock_options_t *redlock_options_new(void)'),
    redlock_options_free: f('void redlock_options_free(redlock_options_t *o)'),
    redlock_options_add_node: f('int redlock_options_add_node(redlock_options_t *o, const char *uri)'),
    redlock_options_set_retry: f('int redlock_options_set_retry(redlock_options_t *o, int n, uint32_t delay, uint32_t jitter)'),
    redlock_options_set_drift_factor: f('int redlock_options_set_drift_factor(redlock_options_t *o, double f)'),
    redlock_options_set_timeouts: f('int redlock_options_set_timeouts(redlock_options_t *o, uint32_t c, uint32_t r)'),
    redlock_options_set_max_ttl: f('int redlock_options_set_max_ttl(redlock_options_t *o, uint32_t t)'),
    redlock_options_get_max_ttl: f('int redlock_options_get_max_ttl(const redlock_options_t *o, _Out_ uint32_t *t)'),
    redlock_uri_redact: f('int redlock_uri_redact(const char *uri, void *buf, size_t size)'),
    redlock_options_set_quarantine: f('int redlock_options_set_quarantine(redlock_options_t *o, int on)'),
    redlock_options_set_fencing: f('int redlock_options_set_fencing(redlock_options_t *o, int on)'),
    redlock_options_set_key_prefix: f('int redlock_options_set_key_prefix(redlock_options_t *o, const char *p)'),
    redlock_options_set_log: f('int redlock_options_set_log(redlock_options_t *o, int lvl, redlock_node_log_cb *cb, intptr_t arg)'),
    redlock_open: f('int redlock_open(_Out_ redlock_t **out, const redlock_options_t *o)'),
    redlock_close: f('void redlock_close(redlock_t *c)'),
    redlock_trylock: f('int redlock_trylock(redlock_t *c, const char *res, uint32_t ttl, _Out_ redlock_lock_t **out)'),
    // The cancelable callback forms (_ex: *id is the call's id for redlock_cancel).
    redlock_cancel: f('int redlock_cancel(redlock_t *c, uint64_t id)'),
    redlock_lock_async_ex: f('int redlock_lock_async_ex(redlock_t *c, const char *res, uint32_t ttl, uint32_t wait, redlock_node_lock_cb *cb, intptr_t arg, _Out_ uint64_t *id)'),
    redlock_lock_many_async_ex: f('int redlock_lock_many_async_ex(redlock_t *c, const char **res, size_t n, uint32_t ttl, redlock_node_lock_cb *cb, intptr_t arg, _Out_ uint64_t *id)'),
    redlock_extend_async: f('int redlock_extend_async(redlock_t *c, redlock_lock_t *l, uint32_t ttl, redlock_node_done_cb *cb, intptr_t arg)'),
    redlock_unlock_async: f('int redlock_unlock_async(redlock_t *c, redlock_lock_t *l, redlock_node_done_cb *cb, intptr_t arg)'),
    redlock_watch: f('int redlock_watch(redlock_t *c, redlock_lock_t *l, redlock_node_lost_cb *cb, intptr_t arg)'),
    redlock_lock_validity_ms: f('int64_t redlock_lock_validity_ms(const redlock_lock_t *l)'),
    redlock_lock_fence: f('uint64_t redlock_lock_fence(const redlock_lock_t *l)'),
    redlock_lock_resource: f('const char *redlock_lock_resource(const redlock_lock_t *l)'),
    redlock_lock_value: f('const char *redlock_lock_value(const redlock_lock_t *l)'),
    redlock_lock_is_lost: f('int redlock_lock_is_lost(const redlock_lock_t *l)'),
    redlock_last_votes: f('int redlock_last_votes(redlock_t *c, void *buf, size_t size)'),
    // coordination primitives, leader election, stats, TLS.
    redlock_semaphore_acquire_async_ex: f('int redlock_semaphore_acquire_async_ex(redlock_t *c, const char *name, uint32_t limit, uint32_t ttl, uint32_t wait, redlock_node_lock_cb *cb, intptr_t arg, _Out_ uint64_t *id)'),
    redlock_rwlock_read_async_ex: f('int redlock_rwlock_read_async_ex(redlock_t *c, const char *name, uint32_t ttl, uint32_t wait, redlock_node_lock_cb *cb, intptr_t arg, _Out_ uint64_t *id)'),
    redlock_rwlock_write_async_ex: f('int redlock_rwlock_write_async_ex(redlock_t *c, const char *name, uint32_t ttl, uint32_t wait, redlock_node_lock_cb *cb, intptr_t arg, _Out_ uint64_t *id)'),
    redlock_elect: f('int redlock_elect(redlock_t *c, const char *name, uint32_t ttl, redlock_node_elected_cb *on_elected, redlock_node_election_lost_cb *on_lost, intptr_t arg, _Out_ redlock_election_t **out)'),
    redlock_resign: f('int redlock_resign(redlock_t *c, redlock_election_t *e)'),
    redlock_election_validity_ms: f('int64_t redlock_election_validity_ms(const redlock_election_t *e)'),
    redlock_stats: f('int redlock_stats(redlock_t *c, int format, void *buf, size_t size)'),
    redlock_tls_supported: f('int redlock_tls_supported(void)'),
    redlock_options_set_tls: f('int redlock_options_set_tls(redlock_options_t *o, const char *ca_file, const char *ca_dir, const char *cert, const char *key)'),
    redlock_options_set_tls_server_name: f('int redlock_options_set_tls_server_name(redlock_options_t *o, const char *name)'),
    redlock_options_set_tls_verify: f('int redlock_options_set_tls_verify(redlock_options_t *o, int verify)'),
    redlock_options_allow_discovered: optional('int redlock_options_allow_discovered(redlock_options_t *o, const char *pattern)'),
    // Who holds it, and taking it back; bounded holds.
    redlock_options_set_owner: optional('int redlock_options_set_owner(redlock_options_t *o, const char *label)'),
    redlock_options_get_owner: optional('int redlock_options_get_owner(const redlock_options_t *o, _Out_ const char **label)'),
    redlock_lock_owner: optional('const char *redlock_lock_owner(const redlock_lock_t *l)'),
    redlock_inspect: optional('int redlock_inspect(redlock_t *c, const char *name, int kind, void *buf, size_t size)'),
    redlock_revoke: optional('int redlock_revoke(redlock_t *c, const char *resource, _Out_ uint64_t *fence)'),
    redlock_watch_bounded: optional('int redlock_watch_bounded(redlock_t *c, redlock_lock_t *l, uint32_t max_hold, redlock_node_lost_cb *cb, intptr_t arg)'),
    redlock_election_leader: optional('int redlock_election_leader(redlock_t *c, const char *name, _Out_ redlock_leader_t *out)'),
    redlock_election_observe: optional('int redlock_election_observe(redlock_t *c, const char *name, uint32_t poll_ms, redlock_node_leader_cb *cb, intptr_t arg, _Out_ redlock_observer_t **out)'),
    redlock_observe_stop: optional('int redlock_observe_stop(redlock_t *c, redlock_observer_t *obs)'),
    redlock_elect_bounded: optional('int redlock_elect_bounded(redlock_t *c, const char *name, uint32_t ttl, uint32_t max_hold, redlock_node_elected_cb *on_elected, redlock_node_election_lost_cb *on_lost, intptr_t arg, _Out_ redlock_election_t **out)'),
  };
}

/**
 * Loads libredlock (once).  `file` overrides the search: REDLOCK_LIBRARY, then
 * the package's prebuilt copy for this platform, libredlock.so.0 through the
 * dynamic loader, common install directories, and an in-tree build
 * (../../build).
 */
function loadLibrary(file) {
  if (F) return F;
  const errors = [];
  for (const cand of file ? [file] : candidates()) {
    if (cand.includes('/') && !fs.existsSync(cand)) { errors.push(`${cand}: not found`); continue; }
    let lib;
    try { lib = koffi.load(cand); } catch (e) { errors.push(`${cand}: ${e.message}`); continue; }
    let fns;
    try { fns = declare(lib); } catch (e) { errors.push(`${cand}: ${e.message}`); continue; }
    const ver = fns.redlock_version();
    if (ver.split('.')[0] !== ABI_MAJOR) { errors.push(`${cand}: version ${ver}, need ${ABI_MAJOR}.x`); continue; }
    const drift = constantDrift(fns);
    if (drift.length) { errors.push(`${cand}: constants differ from this binding's: ${drift.join('; ')}`); continue; }
    F = fns;
    loadedFrom = cand;
    registerTrampolines();
    return F;
  }
  throw new Error('cannot load libredlock (set REDLOCK_LIBRARY to its path): ' + errors.join('; '));
}
const load = () => F || loadLibrary();

/** A redlock.h integer constant as the library has it (undefined if unknown). */
function libConstant(fns, cname) {
  const out = [0];
  return fns.redlock_constant(cname, out) === 0 ? Number(out[0]) : undefined;
}

/** This binding's constants that differ from the library's: descriptions. */
function constantDrift(fns) {
  const bad = [];
  for (const [k, v] of Object.entries({ ...CODES, ...LOGS, ...LIMITS, ...LOST, ...LEADER, CANCEL_LATE })) {
    const lib = libConstant(fns, 'REDLOCK_' + k);
    if (lib !== v) bad.push(`${k} is ${v} here, ${lib} in the library`);
  }
  return bad;
}

/** The library's error table: [{ code, name, message }], in its order. */
function errorTable() {
  const f = load();
  const table = [];
  for (let i = 0; i < f.redlock_err_count(); i++) {
    const code = f.redlock_err_code(i);
    table.push({ code, name: f.redlock_err_name(code), message: f.redlock_strerror(code) });
  }
  return table;
}

// ---- callbacks: one registered trampoline per type, ids through `arg` -----------

let nextId = 1;
const pending = new Map(); // id -> function(status, lockPtr) run on the JS thread
const watchers = new Map(); // id -> function(reason)
const loggers = new Map(); // id -> function(level, msg)
const elections = new Map(); // id -> { elected(term), lost(reason) }
const observers = new Map(); // id -> Observer
const T = {};

function registerTrampolines() {
  T.lock = koffi.register((status, lockPtr, id) => {
    const fn = pending.get(id);
    pending.delete(id);
    if (fn) fn(status, lockPtr); // never throws: settles a promise
  }, koffi.pointer(F.LockCb));
  T.done = koffi.register((status, id) => {
    const fn = pending.get(id);
    pending.delete(id);
    if (fn) fn(status, null);
  }, koffi.pointer(F.DoneCb));
  T.lost = koffi.register((_lockPtr, reason, id) => {
    const fn = watchers.get(id);
    watchers.delete(id);
    if (fn) fn(reason);
  }, koffi.pointer(F.LostCb));
  T.log = koffi.register((level, msg, id) => {
    const fn = loggers.get(id);
    if (fn) {
      try { fn(level, msg); } catch (e) { process.nextTick(() => { throw e; }); }
    }
  }, koffi.pointer(F.LogCb));
  // Election callbacks: the I/O thread waits while these run on the JS
  // thread, so they only record and emit (listeners should be short).
  T.elected = koffi.register((_e, term, id) => {
    const el = elections.get(id);
    if (el) el._onElected(BigInt(term));
  }, koffi.pointer(F.ElectedCb));
  T.electionLost = koffi.register((_e, reason, id) => {
    const el = elections.get(id);
    if (el) el._onLost(reason);
  }, koffi.pointer(F.ElectionLostCb));
  // An observer's view is valid during the callback only: decoded here.
  T.leader = koffi.register((_obs, view, id) => {
    const ob = observers.get(id);
    if (ob) ob._onChange(leaderView(koffi.decode(view, F.LeaderView)));
  }, koffi.pointer(F.LeaderCb));
}

/** A redlock_leader_t as the binding gives it: { state, term (bigint), ttlMs, owner }. */
function leaderView(v) {
  return { state: v.state, term: BigInt(v.term), ttlMs: Number(v.ttl_ms), owner: v.owner || '' };
}

/**
 * redlock_inspect's JSON as a plain object, its fence a bigint as every
 * fence of this binding (read from the text: a JS number would round a
 * counter above 2^53).
 */
function inspection(text) {
  const obj = JSON.parse(text.replace(/("fence"\s*:\s*)(\d+)/, '$1"$2"'));
  if (obj.fence !== null && obj.fence !== undefined) obj.fence = BigInt(obj.fence);
  return obj;
}

function newId() {
  const id = nextId;
  nextId = nextId >= 0x3fffffff ? 1 : nextId + 1;
  return id;
}

function callAsync(fn, ...args) {
  return new Promise((resolve, reject) => {
    fn.async(...args, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

// ---- argument checks ----------------------------------------------------------

function u32(name, v, { min = 0 } = {}) {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new TypeError(`${name} must be an integer`);
  if (v < min || v > 0xffffffff) throw makeError(CODES.EINVAL, `${name} out of range: ${v}`);
  return v;
}
function resourceArg(r) {
  if (typeof r !== 'string') throw new TypeError('resource must be a string');
  if (r.length === 0 || r.includes('\0') || Buffer.byteLength(r) > LIMITS.MAX_RESOURCE_LEN) {
    throw makeError(CODES.EINVAL, `resource must be 1..${LIMITS.MAX_RESOURCE_LEN} bytes without NUL`);
  }
  return r;
}
function check(rc, detail) {
  if (rc !== 0) throw makeError(rc, detail);
}
/** A function the C API gained later: NotSupportedError when this library lacks it. */
function optionalFn(name) {
  const fn = F[name];
  if (!fn) throw makeError(CODES.ENOTSUP, `${name} is not in this libredlock`);
  return fn;
}
/**
 * A TTL, checked against the client's max TTL here, where the refusal can
 * say the limit and the option that raises it (the library's answer is a
 * bare EINVAL).
 */
function ttlArg(ttlMs, maxTtlMs) {
  u32('ttlMs', ttlMs, { min: 1 });
  if (maxTtlMs !== undefined && ttlMs > maxTtlMs) {
    throw makeError(CODES.EINVAL, `ttlMs ${ttlMs} ms is above the max TTL ${maxTtlMs} ms; `
      + `raise it with Client.open(nodes, { maxTtlMs: ${ttlMs} })`);
  }
  return ttlMs;
}
/**
 * A URI as the library shows URIs (redlock_uri_redact): the userinfo's
 * password and any sentinel_password value become ***, whatever characters
 * they hold.
 */
function redactUri(uri) {
  const n = F.redlock_uri_redact(uri, null, 0);
  if (n < 0) return '(URI not shown)';
  const buf = Buffer.alloc(n + 1);
  F.redlock_uri_redact(uri, buf, buf.length);
  return buf.subarray(0, n).toString('utf8');
}

// ---- Lock ---------------------------------------------------------------------

const kPtr = Symbol('ptr');

class Lock {
  constructor(client, ptr, resources) {
    this[kPtr] = ptr;
    this.client = client;
    this.resources = resources;
    // Read once: valid as long as the handle, kept after release.
    this.resource = F.redlock_lock_resource(ptr);
    this.value = F.redlock_lock_value(ptr);
    this.fence = BigInt(F.redlock_lock_fence(ptr));
    // The owner label its value carries (the client's `owner`), '' when none.
    this.owner = F.redlock_lock_owner ? F.redlock_lock_owner(ptr) : '';
    this._lostReason = 0;
    this._watchId = 0;
    client._locks.add(this);
  }

  /** True after unlock() (even a failed one) or the client's close. */
  get released() { return this[kPtr] === null; }

  /** Milliseconds of validity left (local estimate); 0 once released. */
  get validityMs() {
    return this[kPtr] === null ? 0 : Number(F.redlock_lock_validity_ms(this[kPtr]));
  }

  /**
   * Why the watch ended, once its onLost has run: LOST_EXPIRED (a failure:
   * not extended in time, or revoked) or LOST_MAX_HOLD (not a failure: the
   * watch's maxHoldMs was reached and the lock released on purpose); 0 before.
   */
  get lostReason() { return this._lostReason; }

  /** True once the lock is known lost (watch, failed extension) or expired. */
  get lost() {
    if (this._lostReason) return true;
    return this[kPtr] === null ? false : F.redlock_lock_is_lost(this[kPtr]) !== 0;
  }

  _live(op) {
    if (this[kPtr] === null) {
      throw this.client._closed ? makeError(CODES.ECLOSED, `${op} after close`)
        : makeError(CODES.EINVAL, `${op} on a released lock`);
    }
    return this[kPtr];
  }

  /** Sets the TTL to ttlMs from now on a quorum.  Rejects with LostError if lost. */
  extend(ttlMs) {
    return new Promise((resolve, reject) => {
      const ptr = this._live('extend');
      ttlArg(ttlMs, this.client._maxTtlMs);
      const id = newId();
      // Lost already (or run out): ELOST without a round, so no votes.
      const lostBefore = F.redlock_lock_is_lost(ptr) !== 0;
      pending.set(id, (status) => {
        if (status === 0) resolve();
        else {
          reject(makeError(status, `extend ${this.resource}`,
            lostBefore ? undefined : callbackVotes(this.client._ptr, status)));
        }
      });
      const rc = F.redlock_extend_async(this.client._ptr, ptr, ttlMs, T.done, id);
      if (rc !== 0) {
        pending.delete(id);
        reject(makeError(rc, `extend ${this.resource}`));
      }
    });
  }

  /**
   * Keeps the lock extended until unlock().  If it cannot be extended before
   * its validity ends, `onLost(err, reason)` is called once (on the JS
   * thread) with a LostError and LOST_EXPIRED, and the lock's 'lost' promise
   * (`lock.lostPromise`) resolves with that error.
   *
   * `maxHoldMs` (> 0; redlock_watch_bounded) caps the whole hold: that long
   * after the grant (not after this call) the watch stops, the lock is
   * released on every master (waiters are woken), and `onLost(null,
   * LOST_MAX_HOLD)` runs once: not a failure, so no error (lostPromise
   * resolves with null).  unlock() then resolves.  A second watch replaces
   * onLost and the bound.
   */
  watch(onLost, { maxHoldMs } = {}) {
    const ptr = this._live('watch');
    if (onLost !== undefined && onLost !== null && typeof onLost !== 'function') throw new TypeError('onLost must be a function');
    if (maxHoldMs !== undefined) {
      u32('maxHoldMs', maxHoldMs, { min: 1 });
      optionalFn('redlock_watch_bounded');
    }
    if (this._watchId) watchers.delete(this._watchId);
    const id = newId();
    watchers.set(id, (reason) => {
      const bound = reason === LOST.LOST_MAX_HOLD;
      const err = bound ? null : makeError(reason === 0 ? CODES.ELOST : reason, `lock on ${this.resource} lost`);
      this._lostReason = reason || CODES.ELOST;
      this._lostError = err;
      this._lostSettled = true;
      if (this._resolveLost) this._resolveLost(err);
      if (onLost) {
        try { onLost(err, this._lostReason); } catch (e) { process.nextTick(() => { throw e; }); }
      }
    });
    const rc = maxHoldMs === undefined ? F.redlock_watch(this.client._ptr, ptr, T.lost, id)
      : F.redlock_watch_bounded(this.client._ptr, ptr, maxHoldMs, T.lost, id);
    if (rc !== 0) {
      watchers.delete(id);
      throw makeError(rc, `watch ${this.resource}`);
    }
    this._watchId = id;
    return this;
  }

  /**
   * A promise that resolves when a watched lock is lost (with a LostError),
   * or reached its bound (with null).
   */
  get lostPromise() {
    if (!this._lostPromise) {
      this._lostPromise = this._lostSettled ? Promise.resolve(this._lostError)
        : new Promise((res) => { this._resolveLost = res; });
    }
    return this._lostPromise;
  }

  /**
   * Releases the lock on every master.  The Lock is released (its handle
   * freed) even when this rejects (LostError, NoQuorumError).  A second
   * unlock() resolves at once.
   */
  unlock() {
    return new Promise((resolve, reject) => {
      const ptr = this[kPtr];
      if (ptr === null) { resolve(); return; }
      this._detach();
      const id = newId();
      const client = this.client;
      pending.set(id, (status) => {
        // After the bound the library released it, as asked: not a failure.
        if (status === 0 || (status === CODES.ELOST && this._lostReason === LOST.LOST_MAX_HOLD)) resolve();
        else reject(makeError(status, `unlock ${this.resource}`, callbackVotes(client._ptr, status)));
      });
      const rc = F.redlock_unlock_async(client._ptr, ptr, T.done, id);
      if (rc !== 0) {
        pending.delete(id);
        reject(makeError(rc, `unlock ${this.resource}`));
      }
    });
  }

  _detach() {
    this[kPtr] = null;
    if (this._watchId) { watchers.delete(this._watchId); this._watchId = 0; }
    this.client._locks.delete(this);
  }

  /** `await using lock = await client.lock(...)`: unlocks at the end of the block. */
  async [kAsyncDispose]() { await this.unlock(); }
}

// ---- Observer -----------------------------------------------------------------

/** A follower of one election's leadership (Client.observe). */
class Observer {
  constructor(client, name, callback) {
    this.client = client;
    this.name = name;
    this._callback = callback;
    this._ptr = null;
    this._id = 0;
    this.stopped = false;
    this.last = null; // the latest view reported
  }

  _onChange(view) {
    if (this.stopped) return;
    this.last = view;
    try { this._callback(view); } catch (e) { process.nextTick(() => { throw e; }); }
  }

  /**
   * Stops observing and frees the C observer; no callback runs after the
   * promise resolves.  Idempotent.  Runs on the thread pool:
   * redlock_observe_stop waits for the I/O thread, which may be waiting for
   * this thread to run a callback.
   */
  stop() {
    if (this._stopping) return this._stopping;
    this._stopping = (async () => {
      const ptr = this._ptr;
      this._detach();
      if (ptr === null || this.client._closed) return;
      const rc = await this.client._blocking(F.redlock_observe_stop, this.client._ptr, ptr)
        .catch((e) => (e instanceof ClosedError ? CODES.ECLOSED : Promise.reject(e)));
      if (rc !== 0 && rc !== CODES.ECLOSED) throw makeError(rc, `stop observing ${this.name}`);
    })();
    return this._stopping;
  }

  _detach() {
    this.stopped = true;
    this._ptr = null;
    if (this._id) { observers.delete(this._id); this._id = 0; }
    this.client._observers.delete(this);
  }

  /** stop(): `await using observer = client.observe(...)`. */
  async [kAsyncDispose]() { await this.stop(); }
}

// ---- Client -------------------------------------------------------------------

const OPTION_KEYS = new Set(['retryCount', 'retryDelayMs', 'retryJitterMs', 'driftFactor',
  'connectTimeoutMs', 'requestTimeoutMs', 'maxTtlMs', 'quarantine', 'fencing', 'keyPrefix',
  'log', 'logLevel', 'tlsCa', 'tlsCert', 'tlsKey', 'tlsServerName', 'tlsVerify',
  'allowDiscovered', 'owner']);

/*
 * The masters' URIs.  As for the TLS options (setTls), the library gives the
 * reason for a refused URI only through the options' log callback: a
 * capturing one is set around these calls, so that the error says why.
 */
function addNodes(opts, nodes) {
  const reasons = [];
  const logId = newId();
  loggers.set(logId, (_lvl, msg) => reasons.push(msg.replace(/^redlock_options_add_node: /, '')));
  F.redlock_options_set_log(opts, LOGS.LOG_DEBUG, T.log, logId);
  try {
    for (const uri of nodes) {
      if (typeof uri !== 'string') throw new TypeError('each node must be a URI string');
      reasons.length = 0;
      const rc = F.redlock_options_add_node(opts, uri);
      const shown = rc === 0 ? '' : redactUri(uri);
      check(rc, reasons.length ? `node ${shown}: ${reasons.join('; ')}` : `node ${shown}`);
    }
  } finally {
    F.redlock_options_set_log(opts, LOGS.LOG_WARN, null, 0);
    loggers.delete(logId);
  }
}

function buildOptions(nodes, o) {
  for (const k of Object.keys(o)) {
    if (!OPTION_KEYS.has(k)) throw new TypeError(`unknown option: ${k}`);
  }
  if (!Array.isArray(nodes) || nodes.length === 0) throw new TypeError('nodes must be a non-empty array of URIs');
  const opts = F.redlock_options_new();
  if (!opts) throw makeError(CODES.ENOMEM);
  try {
    addNodes(opts, nodes);
    if (o.retryCount !== undefined || o.retryDelayMs !== undefined || o.retryJitterMs !== undefined) {
      // Values not given keep the library's defaults, read from the fresh options.
      const dn = [0]; const dd = [0]; const dj = [0];
      check(F.redlock_options_get_retry(opts, dn, dd, dj), 'retry');
      const n = o.retryCount ?? dn[0];
      if (!Number.isInteger(n) || n < -1 || n > 0x7fffffff) throw makeError(CODES.EINVAL, 'retryCount');
      check(F.redlock_options_set_retry(opts, n, u32('retryDelayMs', o.retryDelayMs ?? dd[0]),
        u32('retryJitterMs', o.retryJitterMs ?? dj[0])), 'retry');
    }
    if (o.driftFactor !== undefined) check(F.redlock_options_set_drift_factor(opts, Number(o.driftFactor)), 'driftFactor');
    if (o.connectTimeoutMs !== undefined || o.requestTimeoutMs !== undefined) {
      const dc = [0]; const dr = [0];
      check(F.redlock_options_get_timeouts(opts, dc, dr), 'timeouts');
      check(F.redlock_options_set_timeouts(opts, u32('connectTimeoutMs', o.connectTimeoutMs ?? dc[0]),
        u32('requestTimeoutMs', o.requestTimeoutMs ?? dr[0])), 'timeouts');
    }
    if (o.maxTtlMs !== undefined) check(F.redlock_options_set_max_ttl(opts, u32('maxTtlMs', o.maxTtlMs)), 'maxTtlMs');
    if (o.quarantine !== undefined) check(F.redlock_options_set_quarantine(opts, o.quarantine ? 1 : 0));
    if (o.fencing !== undefined) check(F.redlock_options_set_fencing(opts, o.fencing ? 1 : 0));
    if (o.keyPrefix !== undefined) {
      if (typeof o.keyPrefix !== 'string') throw new TypeError('keyPrefix must be a string');
      check(F.redlock_options_set_key_prefix(opts, o.keyPrefix), 'keyPrefix');
    }
    if (o.owner !== undefined && o.owner !== null) {
      if (typeof o.owner !== 'string') throw new TypeError('owner must be a string');
      // The library refuses without saying why (no log message): the rule is given here.
      check(optionalFn('redlock_options_set_owner')(opts, o.owner),
        `owner ${JSON.stringify(o.owner)}: 1..${LIMITS.MAX_OWNER} bytes of printable ASCII (0x21..0x7e) except '~'`);
    }
    setTls(opts, o);
    setAllowDiscovered(opts, o.allowDiscovered);
    return opts;
  } catch (e) {
    F.redlock_options_free(opts);
    throw e;
  }
}

/**
 * TLS options (rediss:// masters).  The library gives the reason for a
 * refusal only through the options' log callback, so a capturing one is set
 * around these calls (Client.open sets the real one afterwards).  Builds
 * without TLS refuse them with NotSupportedError.
 */
function setTls(opts, o) {
  const { tlsCa, tlsCert, tlsKey, tlsServerName, tlsVerify } = o;
  if ([tlsCa, tlsCert, tlsKey, tlsServerName, tlsVerify].every((v) => v === undefined)) return;
  for (const [k, v] of Object.entries({ tlsCa, tlsCert, tlsKey, tlsServerName })) {
    if (v !== undefined && v !== null && typeof v !== 'string') throw new TypeError(`${k} must be a string`);
  }
  const reasons = [];
  const logId = newId();
  loggers.set(logId, (_lvl, msg) => reasons.push(msg));
  // The setters run on this thread: koffi calls the callback synchronously.
  F.redlock_options_set_log(opts, LOGS.LOG_DEBUG, T.log, logId);
  const ok = (rc, what) => check(rc, `${what}: ${reasons.join('; ') || 'refused'}`);
  try {
    if (tlsCa != null || tlsCert != null || tlsKey != null) {
      // tlsCa names a PEM bundle or an OpenSSL hashed directory.
      let isDir = false;
      try { isDir = tlsCa != null && fs.statSync(tlsCa).isDirectory(); } catch { /* the library says why */ }
      ok(F.redlock_options_set_tls(opts, isDir ? null : (tlsCa ?? null), isDir ? tlsCa : null,
        tlsCert ?? null, tlsKey ?? null), 'tls options');
    }
    if (tlsServerName !== undefined) ok(F.redlock_options_set_tls_server_name(opts, tlsServerName), 'tlsServerName');
    if (tlsVerify !== undefined) ok(F.redlock_options_set_tls_verify(opts, tlsVerify ? 1 : 0), 'tlsVerify');
  } finally {
    F.redlock_options_set_log(opts, LOGS.LOG_WARN, null, 0);
    loggers.delete(logId);
  }
}

/**
 * allowDiscovered: host patterns (fnmatch globs, ASCII case ignored) outside
 * which an address a sentinel or a cluster node names is never connected to.
 * The reason for a refused pattern comes through the log callback, as in
 * setTls.
 */
function setAllowDiscovered(opts, patterns) {
  if (patterns === undefined || patterns === null) return;
  // A string is iterable too: refused rather than taken one character per pattern.
  if (!Array.isArray(patterns)) throw new TypeError('allowDiscovered must be an array of host patterns');
  for (const p of patterns) {
    if (typeof p !== 'string') throw new TypeError('allowDiscovered must be an array of strings');
  }
  if (patterns.length === 0) return;
  if (!F.redlock_options_allow_discovered) {
    throw makeError(CODES.ENOTSUP, 'allowDiscovered: redlock_options_allow_discovered is not in this libredlock');
  }
  const reasons = [];
  const logId = newId();
  loggers.set(logId, (_lvl, msg) => reasons.push(msg));
  F.redlock_options_set_log(opts, LOGS.LOG_DEBUG, T.log, logId);
  try {
    patterns.forEach((p, i) => {
      // A NUL would cut the pattern short on its way to C.
      if (p.includes('\0')) throw makeError(CODES.EINVAL, `allowDiscovered[${i}] contains a NUL character`);
      check(F.redlock_options_allow_discovered(opts, p), `allowDiscovered[${i}]: ${reasons.join('; ') || 'refused'}`);
    });
  } finally {
    F.redlock_options_set_log(opts, LOGS.LOG_WARN, null, 0);
    loggers.delete(logId);
  }
}

// ---- Election -----------------------------------------------------------------

const EventEmitter = require('events');

/**
 * A campaign for leadership of `name` (Client.elect).  Events, on the JS
 * thread: 'elected' (term: bigint, larger than every earlier term of the
 * name) and 'lost' (err: LostError; the election campaigns again).
 * `elected()` resolves with the next term won (or the current one).
 */
class Election extends EventEmitter {
  constructor(client, name) {
    super();
    this.client = client;
    this.name = name;
    this._ptr = null;
    this._id = 0;
    this.term = 0n;          // latest term won, 0n before any
    this.leader = false;
    this.resigned = false;
    this.lostReason = 0;     // why the last term ended (LOST_*), 0 before
    this._waiters = [];
  }

  _onElected(term) {
    this.term = term;
    this.leader = true;
    const ws = this._waiters;
    this._waiters = ws.filter((w) => term <= w.after);
    for (const w of ws) if (term > w.after) w.resolve(term);
    this.emit('elected', term);
  }

  /*
   * 'lost' gets (err, reason): a LostError and LOST_EXPIRED when the term
   * ended by itself, null and LOST_MAX_HOLD when it reached the election's
   * maxHoldMs (not a failure).
   */
  _onLost(reason) {
    this.leader = false;
    this.lostReason = reason || CODES.ELOST;
    const err = reason === LOST.LOST_MAX_HOLD ? null
      : makeError(reason || CODES.ELOST, `leadership of ${this.name} lost`);
    if (this.listenerCount('lost') > 0) this.emit('lost', err, this.lostReason);
  }

  /** Milliseconds of leadership left in the current term; <= 0 when not leader. */
  get validityMs() {
    return this._ptr === null || !this.leader ? 0 : Number(F.redlock_election_validity_ms(this._ptr));
  }

  /**
   * Resolves with the term once this client is leader (at once if it is).
   * `afterTerm`: wait for a term larger than it.  Rejects with ClosedError or
   * CanceledError after resign()/close(), or AbortError on `signal`.
   */
  elected({ afterTerm = 0n, signal } = {}) {
    const after = BigInt(afterTerm);
    if (this.leader && this.term > after) return Promise.resolve(this.term);
    if (this.resigned) return Promise.reject(makeError(CODES.ECANCELED, `election ${this.name} resigned`));
    return new Promise((resolve, reject) => {
      if (signal && signal.aborted) { reject(abortError(signal)); return; }
      const onAbort = () => { this._waiters = this._waiters.filter((x) => x !== w); reject(abortError(signal)); };
      const done = () => { if (signal) signal.removeEventListener('abort', onAbort); };
      const w = {
        after,
        resolve: (t) => { done(); resolve(t); },
        reject: (e) => { done(); reject(e); },
      };
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      this._waiters.push(w);
    });
  }

  /**
   * Stops campaigning and releases the lease if leader (the next campaigner
   * is woken at once).  No event is emitted afterwards.  Idempotent.  Runs
   * on the thread pool: redlock_resign waits for the I/O thread, which may
   * be waiting for this thread to run a callback.
   */
  resign() {
    if (this._resigning) return this._resigning;
    this._resigning = (async () => {
      const ptr = this._ptr;
      this._detach(makeError(CODES.ECANCELED, `election ${this.name} resigned`));
      if (ptr === null || this.client._closed) return;
      const call = callAsync(F.redlock_resign, this.client._ptr, ptr);
      this.client._inflight.add(call);
      let rc;
      try { rc = await call; } finally { this.client._inflight.delete(call); }
      if (rc !== 0 && rc !== CODES.ECLOSED) throw makeError(rc, `resign ${this.name}`);
    })();
    return this._resigning;
  }

  _detach(err) {
    this.resigned = true;
    this.leader = false;
    this._ptr = null;
    if (this._id) { elections.delete(this._id); this._id = 0; }
    this.client._elections.delete(this);
    const ws = this._waiters; this._waiters = [];
    for (const w of ws) w.reject(err);
  }

  async [kAsyncDispose]() { await this.resign(); }
}

class Client {
  /** Use `await Client.open(nodes, options)`. */
  constructor(ptr, logId, maxTtlMs) {
    this._ptr = ptr;
    this._logId = logId;
    this._maxTtlMs = maxTtlMs; // the options' max TTL (undefined: left to the library)
    this.owner = ''; // the `owner` option as the library took it, '' when none
    this._closed = false;
    this._closing = null;
    this._locks = new Set();
    this._elections = new Set();
    this._observers = new Set();
    this._inflight = new Set(); // blocking calls running on the thread pool
    // Keeps the event loop alive while the client is open (see the header).
    this._keepAlive = setInterval(() => {}, 0x7fffffff);
  }

  /**
   * Opens a client on the given masters (redis://host:port URIs).  Resolves
   * once every master was tried (bounded by the connect timeout); masters that
   * are down are retried in the background.
   */
  static async open(nodes, options = {}) {
    load();
    const opts = buildOptions(nodes, options);
    let logId = 0;
    try {
      if (options.log !== undefined) {
        if (typeof options.log !== 'function') throw new TypeError('log must be a function');
        logId = newId();
        loggers.set(logId, options.log);
        check(F.redlock_options_set_log(opts, options.logLevel ?? LOGS.LOG_WARN, T.log, logId), 'logLevel');
      }
      const maxTtl = [0];
      const maxTtlMs = F.redlock_options_get_max_ttl(opts, maxTtl) === 0 ? maxTtl[0] : undefined;
      const label = [null];
      const owner = F.redlock_options_get_owner && F.redlock_options_get_owner(opts, label) === 0
        ? label[0] || '' : '';
      const out = [null];
      // Blocking (up to the connect timeout), and it may log: on the thread pool.
      const rc = await callAsync(F.redlock_open, out, opts);
      check(rc, 'open');
      const client = new Client(out[0], logId, maxTtlMs);
      client.owner = owner;
      return client;
    } catch (e) {
      if (logId) loggers.delete(logId);
      throw e;
    } finally {
      F.redlock_options_free(opts);
    }
  }

  get closed() { return this._closed; }

  _checkOpen() {
    if (this._closed) throw makeError(CODES.ECLOSED, 'client is closed');
  }

  /**
   * Acquires `resource`, or every resource of an array (all or none, as
   * lockMany).  Without `waitMs` (or 0) it retries by the retry policy; with
   * `waitMs > 0` it waits up to waitMs for a release (one resource only):
   * WaitTimeoutError when the budget runs out with the resource held by
   * another, NoQuorumError when the last attempt could not reach a quorum.
   * `signal` (AbortSignal) cancels the call (redlock_cancel): see
   * _asyncLock.  `watch: true` (or `onLost`) watches the lock (see
   * Lock.watch).
   */
  lock(resource, { ttlMs, waitMs = 0, signal, watch = false, onLost } = {}) {
    if (Array.isArray(resource)) {
      return this._lockMany(resource, { ttlMs, waitMs, signal, watch, onLost });
    }
    return this._asyncLock('lock', (out) => {
      resourceArg(resource);
      ttlArg(ttlMs, this._maxTtlMs);
      u32('waitMs', waitMs);
      return (id) => F.redlock_lock_async_ex(this._ptr, resource, ttlMs, waitMs, T.lock, id, out);
    }, [resource], { signal, watch, onLost });
  }

  /**
   * A permit of the counting semaphore `name`: at most `limit` (1..1024,
   * the same for every client) held at once.  waitMs 0 (default): one try
   * (LockedError when all permits are taken); > 0: wait for a release
   * (WaitTimeoutError).  Resolves with a Lock (unlock/extend/watch; its
   * resource names the slot, "NAME:sem:3").
   */
  semaphoreAcquire(name, { limit, ttlMs, waitMs = 0, signal, watch = false, onLost } = {}) {
    return this._asyncLock('semaphore', (out) => {
      resourceArg(name);
      u32('limit', limit, { min: 1 });
      ttlArg(ttlMs, this._maxTtlMs);
      u32('waitMs', waitMs);
      return (id) => F.redlock_semaphore_acquire_async_ex(this._ptr, name, limit, ttlMs, waitMs, T.lock, id, out);
    }, [name], { signal, watch, onLost });
  }

  /** A read hold of the read-write lock `name` (shared with other readers). */
  rwlockRead(name, { ttlMs, waitMs = 0, signal, watch = false, onLost } = {}) {
    return this._asyncLock('rwlock read', (out) => {
      resourceArg(name);
      ttlArg(ttlMs, this._maxTtlMs);
      u32('waitMs', waitMs);
      return (id) => F.redlock_rwlock_read_async_ex(this._ptr, name, ttlMs, waitMs, T.lock, id, out);
    }, [name], { signal, watch, onLost });
  }

  /** The write hold of the read-write lock `name` (excludes readers and writers). */
  rwlockWrite(name, { ttlMs, waitMs = 0, signal, watch = false, onLost } = {}) {
    return this._asyncLock('rwlock write', (out) => {
      resourceArg(name);
      ttlArg(ttlMs, this._maxTtlMs);
      u32('waitMs', waitMs);
      return (id) => F.redlock_rwlock_write_async_ex(this._ptr, name, ttlMs, waitMs, T.lock, id, out);
    }, [name], { signal, watch, onLost });
  }

  /**
   * Campaigns for leadership of `name` (a lease of ttlMs, watched while
   * leader).  Returns an Election (EventEmitter: 'elected', 'lost';
   * `await election.elected()`; `await election.resign()`).
   * `maxHoldMs` (> 0; redlock_elect_bounded): every term ends that long
   * after its grant: the leader resigns it (the release wakes the other
   * campaigners), 'lost' gets (null, LOST_MAX_HOLD) (not a failure), and the
   * campaign goes on after its back-off.
   */
  elect(name, { ttlMs, maxHoldMs, onElected, onLost } = {}) {
    this._checkOpen();
    resourceArg(name);
    ttlArg(ttlMs, this._maxTtlMs);
    if (maxHoldMs !== undefined) {
      u32('maxHoldMs', maxHoldMs, { min: 1 });
      optionalFn('redlock_elect_bounded');
    }
    const el = new Election(this, name);
    if (onElected) el.on('elected', onElected);
    if (onLost) el.on('lost', onLost);
    const id = newId();
    elections.set(id, el);
    const out = [null];
    // Returns at once; *out is set before any callback can run, and the
    // callbacks are queued to this thread, so they run after this returns.
    const rc = maxHoldMs === undefined
      ? F.redlock_elect(this._ptr, name, ttlMs, T.elected, T.electionLost, id, out)
      : F.redlock_elect_bounded(this._ptr, name, ttlMs, maxHoldMs, T.elected, T.electionLost, id, out);
    if (rc !== 0) {
      elections.delete(id);
      throw makeError(rc, `elect ${name}`);
    }
    el._ptr = out[0];
    el._id = id;
    this._elections.add(el);
    return el;
  }

  /**
   * The masters' view of one resource (redlock_inspect), read with one
   * round to every master (nothing is written): resolves with a plain
   * object: `held` (a quorum holds the same value; for a semaphore or
   * read-write lock, some hold), `agreed` (false when fewer than a quorum
   * answered or they do not all show the same holds), `owner` and `value`
   * of the hold a quorum agrees on (owner null when that holder set no
   * label), `ttl_ms_min`/`ttl_ms_max`, `fence` (an election's term),
   * `count`, `holders` and per-master `masters` (docs/api.md "Inspect and
   * revoke").  `kind`: 'lock', 'semaphore', 'rwlock' or 'election'.  The
   * call blocks its thread up to the request timeout: it runs on koffi's
   * thread pool, never on the JS thread.
   */
  async inspect(name, kind = 'lock') {
    this._checkOpen();
    resourceArg(name);
    const macro = typeof kind === 'string' && Object.hasOwn(INSPECT_KINDS, kind) ? INSPECT_KINDS[kind] : undefined;
    if (macro === undefined) {
      throw makeError(CODES.EINVAL, `kind must be one of ${Object.keys(INSPECT_KINDS).join(', ')}, not ${kind}`);
    }
    const fn = optionalFn('redlock_inspect');
    const code = libConstant(F, 'REDLOCK_INSPECT_' + macro); // the kind codes are the library's
    let need = await this._blocking(fn, this._ptr, name, code, null, 0);
    for (;;) {
      if (need < 0) throw makeError(need, `inspect ${name}`);
      // Every call is a round of its own: the view may have grown since.
      const size = need + 1024;
      const buf = Buffer.alloc(size);
      const got = await this._blocking(fn, this._ptr, name, code, buf, size);
      if (got < 0) throw makeError(got, `inspect ${name}`);
      if (got < size) return inspection(buf.subarray(0, got).toString('utf8'));
      need = got;
    }
  }

  /**
   * An administrator's revoke of the lock on `resource` (or of an
   * election's lease: name it as elect does), whoever holds it
   * (redlock_revoke).  With fencing on the key, the fence counter is raised
   * above the holder's token on a quorum and the key deleted: resolves with
   * that new fence (a bigint), which a store that checks tokens should be
   * told, so that it refuses the old holder from then on.  Without fencing,
   * 0n: the key keeps its remaining TTL under the revoker's value.  Either
   * way the holder's next extension (its watch's too) fails: its Lock is
   * lost, its onLost runs once.  Rejects with NoQuorumError (too few masters
   * did it; some may have), NotSupportedError (too many run no Lua), ...
   * Runs on koffi's thread pool.
   */
  async revoke(resource) {
    this._checkOpen();
    resourceArg(resource);
    const fn = optionalFn('redlock_revoke');
    const out = [0];
    const rc = await this._blocking(fn, this._ptr, resource, out);
    check(rc, `revoke ${resource}`);
    return BigInt(out[0]);
  }

  /**
   * Who leads the election `name` now (redlock_election_leader): one read
   * round (nothing written), on koffi's thread pool.  Resolves with
   * { state, term, ttlMs, owner }: state LEADER_HELD with the leader's term
   * (a bigint), the lease left (a lower bound) and its owner label ('' when
   * it set none); LEADER_NONE (nobody leads, or a hand-off is half done);
   * LEADER_UNKNOWN (fewer than a quorum of masters answered: not an error).
   */
  async leader(name) {
    this._checkOpen();
    resourceArg(name);
    const fn = optionalFn('redlock_election_leader');
    const out = {};
    const rc = await this._blocking(fn, this._ptr, name, out);
    check(rc, `leader ${name}`);
    return leaderView(out);
  }

  /**
   * Follows the leadership of the election `name` without campaigning
   * (redlock_election_observe): `callback({ state, term, ttlMs, owner })`
   * runs on the JS thread first with the view of the first read, then
   * whenever it changes (state, term or owner; never for the ttl alone).
   * It re-reads when a release or a new term of `name` is announced (a
   * hand-off is seen within about one round trip of the new grant), when
   * the lease it saw should have ended, and at least every `pollMs` (0: the
   * client's retry delay).  Returns an Observer: `await observer.stop()`;
   * close() stops it too.
   */
  observe(name, callback, { pollMs = 0 } = {}) {
    this._checkOpen();
    resourceArg(name);
    if (typeof callback !== 'function') throw new TypeError('callback must be a function');
    u32('pollMs', pollMs);
    const fn = optionalFn('redlock_election_observe');
    const ob = new Observer(this, name, callback);
    const id = newId();
    observers.set(id, ob);
    const out = [null];
    // Returns at once; *out is set before any callback can run, and the
    // callbacks are queued to this thread, so they run after this returns.
    const rc = fn(this._ptr, name, pollMs, T.leader, id, out);
    if (rc !== 0) {
      observers.delete(id);
      throw makeError(rc, `observe ${name}`);
    }
    ob._ptr = out[0];
    ob._id = id;
    this._observers.add(ob);
    return ob;
  }

  /*
   * A blocking C call on koffi's thread pool (`.async`): the JS thread must
   * never wait for the I/O thread (see the header).  close() waits for it,
   * so the C client is never used after redlock_close.
   */
  async _blocking(fn, ...args) {
    this._checkOpen();
    const call = callAsync(fn, ...args);
    this._inflight.add(call);
    try {
      return await call;
    } finally {
      this._inflight.delete(call);
    }
  }

  /**
   * The client's counters, gauges and latency histograms (redlock_stats):
   * an object (the JSON rendering, parsed), or the text with
   * format 'json' or 'prometheus'.  NotSupportedError with stats off.
   */
  stats(format) {
    const macro = { undefined: 'JSON', object: 'JSON', json: 'JSON', prometheus: 'PROMETHEUS' }[format];
    if (macro === undefined) throw makeError(CODES.EINVAL, "format must be undefined, 'json' or 'prometheus'");
    this._checkOpen();
    const fmt = libConstant(F, 'REDLOCK_STATS_' + macro); // the format codes are the library's
    let size = 0;
    let n = F.redlock_stats(this._ptr, fmt, null, 0);
    for (;;) {
      if (n < 0) throw makeError(n, 'stats');
      size = n + 4096; // counters may grow in between
      const buf = Buffer.alloc(size);
      n = F.redlock_stats(this._ptr, fmt, buf, size);
      if (n < 0) throw makeError(n, 'stats');
      if (n < size) {
        const text = buf.subarray(0, n).toString('utf8');
        return macro === 'JSON' && format !== 'json' ? JSON.parse(text) : text;
      }
    }
  }

  /*
   * A cancelable callback-form acquisition.  setup(out) checks the arguments
   * and returns start(id), the C call (an _ex form, writing the call's id
   * to out[0]); the lock callback settles the promise on the JS thread.
   *
   * `signal` aborting calls redlock_cancel(call id).  0: the call's outcome
   * is ECANCELED (its callback comes, and is ignored), nothing more is sent
   * for it, and the library releases whatever a round already out wins: the
   * promise rejects with an AbortError at once.  REDLOCK_CANCEL_LATE: the
   * outcome was decided first and its callback is queued to this thread
   * (it has not run: it removes this listener): that outcome settles the
   * promise, a granted lock included, as for any API whose result arrived
   * before the abort.  ECLOSED: the close ends the call (ECANCELED); the
   * promise rejects with the AbortError, which came first.
   */
  _asyncLock(what, setup, resources, { signal, watch, onLost }) {
    return new Promise((resolve, reject) => {
      this._checkOpen();
      const out = [0];
      const start = setup(out);
      signal = signalArg(signal);
      const label = `${what} ${resources.join(',')}`;
      if (signal && signal.aborted) { reject(abortError(signal)); return; }
      const id = newId();
      let aborted = false;
      const onAbort = () => {
        // Never after redlock_close may have run: the id means nothing then.
        if (!this._closed && F.redlock_cancel(this._ptr, out[0]) === CANCEL_LATE) return;
        aborted = true;
        reject(abortError(signal));
      };
      pending.set(id, (status, ptr) => {
        if (signal) signal.removeEventListener('abort', onAbort);
        if (aborted) {
          // The library's contract: a canceled call completes with ECANCELED
          // and a NULL lock.  Should a lock come anyway, it is released.
          if (status === 0 && ptr && !this._closed) F.redlock_unlock_async(this._ptr, ptr, null, 0);
          return;
        }
        if (status !== 0) {
          reject(makeError(status, label, callbackVotes(this._ptr, status)));
          return;
        }
        if (this._closed) {
          // Granted while close() was starting: the close frees the handle.
          reject(makeError(CODES.ECANCELED, `${label}: client closed`));
          return;
        }
        const lk = new Lock(this, ptr, resources.slice());
        try {
          if (watch || onLost) lk.watch(onLost);
        } catch (e) { /* only fails if the client closes meanwhile */ }
        resolve(lk);
      });
      const rc = start(id);
      if (rc !== 0) {
        pending.delete(id);
        reject(makeError(rc, label));
        return;
      }
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Alias of lock(resource, { ttlMs, waitMs, ... }) with waitMs required. */
  async lockWait(resource, { waitMs, ...rest } = {}) {
    u32('waitMs', waitMs, { min: 1 });
    return this.lock(resource, { waitMs, ...rest });
  }

  /** One attempt (LockedError when held elsewhere). */
  async tryLock(resource, { ttlMs, watch = false, onLost } = {}) {
    this._checkOpen();
    resourceArg(resource);
    ttlArg(ttlMs, this._maxTtlMs);
    return this._blockingLock([resource, ttlMs], [resource], watch, onLost);
  }

  /**
   * All resources (1..64, distinct) or none, as one Lock, by the retry
   * policy (redlock_lock_many_async_ex: cancelable with `signal`).
   */
  lockMany(resources, { ttlMs, signal, watch = false, onLost } = {}) {
    return this._lockMany(resources, { ttlMs, waitMs: 0, signal, watch, onLost });
  }

  _lockMany(resources, { ttlMs, waitMs, signal, watch, onLost }) {
    return this._asyncLock('lockMany', (out) => {
      if (!Array.isArray(resources)) throw new TypeError('resources must be an array');
      resources.forEach(resourceArg);
      ttlArg(ttlMs, this._maxTtlMs);
      // The library's multi-resource acquisition retries; it has no wait.
      if (waitMs !== 0) throw makeError(CODES.EINVAL, 'waitMs: a lock of several resources cannot wait (retry policy only)');
      const names = resources.slice(); // koffi copies them for the call; the library copies them too
      return (id) => F.redlock_lock_many_async_ex(this._ptr, names, names.length, ttlMs, T.lock, id, out);
    }, Array.isArray(resources) ? resources.slice() : [], { signal, watch, onLost });
  }

  async _blockingLock(args, resources, watch, onLost) {
    if (!pool) {
      pool = new BlockingPool(loadedFrom, ROUND_CODES, (client, fargs, out) =>
        callAsync(F.redlock_trylock, client, ...fargs, out));
    }
    // On a worker thread: the call waits for the I/O thread.  close() waits
    // for it, so the C client is never used after redlock_close.
    const call = pool.run(this._ptr, args);
    this._inflight.add(call);
    let r;
    try {
      r = await call;
    } finally {
      this._inflight.delete(call);
    }
    if (r.rc !== 0) throw makeError(r.rc, `tryLock ${resources.join(',')}`, r.votes);
    if (this._closed) throw makeError(CODES.ECLOSED, 'client closed during the call');
    const lk = new Lock(this, r.out, resources);
    if (watch || onLost) lk.watch(onLost);
    return lk;
  }

  /** Runs `fn(lock)` under the lock and unlocks afterwards (even if it throws). */
  async using(resource, options, fn) {
    const lk = await this.lock(resource, options);
    try {
      return await fn(lk);
    } finally {
      await lk.unlock().catch(() => {});
    }
  }

  /**
   * One-line summary of the latest round a call made from the JS thread
   * waited on (diagnostics; do not parse).  A failed call's own votes are
   * on its error (`err.votes`).
   */
  lastVotes() {
    if (this._closed) return '';
    return votesOf(this._ptr);
  }

  /**
   * Closes the client: pending lock() calls reject with CanceledError, every
   * lock still held is released (best effort) and its Lock object invalidated.
   * tryLock() calls already running finish first (they reject with
   * ClosedError).  Idempotent; resolves when the library's thread has stopped.
   */
  close() {
    if (this._closing) return this._closing;
    this._closed = true;
    for (const lk of this._locks) lk._detach();
    for (const el of [...this._elections]) el._detach(makeError(CODES.ECLOSED, `election ${el.name}: client closed`));
    for (const ob of [...this._observers]) ob._detach(); // the close stops and frees them
    this._closing = (async () => {
      // tryLock calls already on the worker threads finish first (each
      // bounded by the retry policy): none may start after redlock_close.
      await Promise.allSettled([...this._inflight]);
      // Blocking, and it runs callbacks (ECANCELED) that koffi queues to this
      // thread: so it must run on the thread pool.
      await callAsync(F.redlock_close, this._ptr);
      if (this._logId) loggers.delete(this._logId);
      clearInterval(this._keepAlive);
    })();
    return this._closing;
  }

  async [kAsyncDispose]() { await this.close(); }
}

// The exports are named one by one, each `name` or `name: identifier`, and
// never spread or computed: Node's ES-module loader finds a CommonJS module's
// names by reading this literal (cjs-module-lexer), so `import { LockedError }
// from 'redlock-c'` works only for the names it can see here.

/** The file libredlock was loaded from (loading it if need be). */
function libraryPath() { load(); return loadedFrom; }
function version() { return load().redlock_version(); }
/** True when this build of libredlock can connect to rediss:// masters. */
function tlsSupported() { return load().redlock_tls_supported() !== 0; }
function strerror(code) { return load().redlock_strerror(code); }
function errName(code) { return load().redlock_err_name(code); }
/** A string constant of redlock.h, e.g. 'REDLOCK_FENCE_KEY_PREFIX' (null if unknown). */
function constantString(name) { return load().redlock_constant_string(name); }
const codes = Object.freeze({ ...CODES });
const { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } = LOGS;
const { MAX_NODES, MAX_RESOURCE_LEN, MAX_PREFIX_LEN, MAX_MANY, MAX_SEM_LIMIT, MAX_OWNER } = LIMITS;
const { LOST_EXPIRED, LOST_MAX_HOLD } = LOST;
const { LEADER_NONE, LEADER_HELD, LEADER_UNKNOWN } = LEADER;

module.exports = {
  Client,
  Lock,
  Election,
  loadLibrary,
  libraryPath,
  version,
  tlsSupported,
  strerror,
  errName,
  RedlockError,
  InvalidArgumentError,
  NoMemoryError,
  LockedError,
  NoQuorumError,
  ExpiredError,
  LostError,
  WaitTimeoutError,
  CanceledError,
  ClosedError,
  WouldBlockError,
  RedlockIOError,
  NotSupportedError,
  ForkedError,
  codes,
  /** The library's error table, [{ code, name, message }] (redlock_err_code). */
  errorTable,
  constantString,
  LOG_DEBUG,
  LOG_INFO,
  LOG_WARN,
  LOG_ERROR,
  MAX_NODES,
  MAX_RESOURCE_LEN,
  MAX_PREFIX_LEN,
  MAX_MANY,
  MAX_SEM_LIMIT,
  MAX_OWNER,
  LOST_EXPIRED,
  LOST_MAX_HOLD,
  LEADER_NONE,
  LEADER_HELD,
  LEADER_UNKNOWN,
  Observer,
};
