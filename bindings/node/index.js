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
 *    thread: it would deadlock.  The blocking C calls this binding uses
 *    (redlock_open, redlock_trylock, redlock_lock_many, redlock_close) run on
 *    libuv's thread pool through koffi's `.async`; everything else is either
 *    a callback form (lock, extend, unlock) or returns at once (watch,
 *    accessors).
 *  - koffi's cross-thread callbacks do not keep Node's event loop alive, and a
 *    callback arriving after Node tore down its environment crashes the
 *    process.  So an open Client holds a ref'd timer: like a socket, it keeps
 *    the process alive until close().
 */

const koffi = require('koffi');
const fs = require('fs');
const path = require('path');

const ABI_MAJOR = '0';

// ---- errors -------------------------------------------------------------------

const CODES = {
  EINVAL: -1, ENOMEM: -2, ELOCKED: -3, ENOQUORUM: -4, EEXPIRED: -5, ELOST: -6,
  ETIMEDOUT: -7, ECANCELED: -8, ECLOSED: -9, EWOULDBLOCK: -10, EIO: -11, ENOTSUP: -12,
  EFORKED: -13,
};

class RedlockError extends Error {
  constructor(errno, message, detail) {
    const name = NAMES[errno] || 'REDLOCK_E' + errno;
    super(detail ? `${message} (${detail})` : message);
    this.errno = errno;            // negative C code, e.g. -3
    this.code = name;              // 'REDLOCK_ELOCKED'
    if (detail !== undefined) this.detail = detail;
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
  [-1]: InvalidArgumentError, [-2]: NoMemoryError, [-3]: LockedError, [-4]: NoQuorumError,
  [-5]: ExpiredError, [-6]: LostError, [-7]: WaitTimeoutError, [-8]: CanceledError,
  [-9]: ClosedError, [-10]: WouldBlockError, [-11]: RedlockIOError, [-12]: NotSupportedError,
  [-13]: ForkedError,
};
const NAMES = {};
for (const [k, v] of Object.entries(CODES)) NAMES[v] = 'REDLOCK_' + k;

function makeError(errno, detail) {
  const Cls = CLASSES[errno] || RedlockError;
  let message;
  try { message = load().redlock_strerror(errno); } catch { message = 'error ' + errno; }
  return new Cls(errno, message, detail);
}

/** The error Node's own APIs reject with when an AbortSignal fires. */
function abortError(signal) {
  const err = new Error('The operation was aborted', { cause: signal && signal.reason });
  err.name = 'AbortError';
  err.code = 'ABORT_ERR';
  return err;
}

// ---- library loading ----------------------------------------------------------

let F = null; // the bound functions

function candidates() {
  if (process.env.REDLOCK_LIBRARY) return [process.env.REDLOCK_LIBRARY];
  const list = ['libredlock.so.0'];
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
  // `void *arg` is declared as intptr_t: the binding passes small integer ids,
  // never JS objects, through the C library.  Same registers on every ABI.
  const LockCb = koffi.proto('void redlock_node_lock_cb(int status, redlock_lock_t *lock, intptr_t arg)');
  const DoneCb = koffi.proto('void redlock_node_done_cb(int status, intptr_t arg)');
  const LostCb = koffi.proto('void redlock_node_lost_cb(redlock_lock_t *lock, int reason, intptr_t arg)');
  const LogCb = koffi.proto('void redlock_node_log_cb(int level, const char *msg, intptr_t arg)');
  const f = (sig) => lib.func(sig);
  return {
    LockCb, DoneCb, LostCb, LogCb,
    redlock_version: f('const char *redlock_version(void)'),
    redlock_strerror: f('const char *redlock_strerror(int err)'),
    redlock_err_name: f('const char *redlock_err_name(int err)'),
    redlock_options_new: f('redlock_options_t *redlock_options_new(void)'),
    redlock_options_free: f('void redlock_options_free(redlock_options_t *o)'),
    redlock_options_add_node: f('int redlock_options_add_node(redlock_options_t *o, const char *uri)'),
    redlock_options_set_retry: f('int redlock_options_set_retry(redlock_options_t *o, int n, uint32_t delay, uint32_t jitter)'),
    redlock_options_set_drift_factor: f('int redlock_options_set_drift_factor(redlock_options_t *o, double f)'),
    redlock_options_set_timeouts: f('int redlock_options_set_timeouts(redlock_options_t *o, uint32_t c, uint32_t r)'),
    redlock_options_set_max_ttl: f('int redlock_options_set_max_ttl(redlock_options_t *o, uint32_t t)'),
    redlock_options_set_quarantine: f('int redlock_options_set_quarantine(redlock_options_t *o, int on)'),
    redlock_options_set_fencing: f('int redlock_options_set_fencing(redlock_options_t *o, int on)'),
    redlock_options_set_key_prefix: f('int redlock_options_set_key_prefix(redlock_options_t *o, const char *p)'),
    redlock_options_set_log: f('int redlock_options_set_log(redlock_options_t *o, int lvl, redlock_node_log_cb *cb, intptr_t arg)'),
    redlock_open: f('int redlock_open(_Out_ redlock_t **out, const redlock_options_t *o)'),
    redlock_close: f('void redlock_close(redlock_t *c)'),
    redlock_trylock: f('int redlock_trylock(redlock_t *c, const char *res, uint32_t ttl, _Out_ redlock_lock_t **out)'),
    redlock_lock_many: f('int redlock_lock_many(redlock_t *c, const char **res, size_t n, uint32_t ttl, _Out_ redlock_lock_t **out)'),
    redlock_lock_async: f('int redlock_lock_async(redlock_t *c, const char *res, uint32_t ttl, uint32_t wait, redlock_node_lock_cb *cb, intptr_t arg)'),
    redlock_extend_async: f('int redlock_extend_async(redlock_t *c, redlock_lock_t *l, uint32_t ttl, redlock_node_done_cb *cb, intptr_t arg)'),
    redlock_unlock_async: f('int redlock_unlock_async(redlock_t *c, redlock_lock_t *l, redlock_node_done_cb *cb, intptr_t arg)'),
    redlock_watch: f('int redlock_watch(redlock_t *c, redlock_lock_t *l, redlock_node_lost_cb *cb, intptr_t arg)'),
    redlock_lock_validity_ms: f('int64_t redlock_lock_validity_ms(const redlock_lock_t *l)'),
    redlock_lock_fence: f('uint64_t redlock_lock_fence(const redlock_lock_t *l)'),
    redlock_lock_resource: f('const char *redlock_lock_resource(const redlock_lock_t *l)'),
    redlock_lock_value: f('const char *redlock_lock_value(const redlock_lock_t *l)'),
    redlock_lock_is_lost: f('int redlock_lock_is_lost(const redlock_lock_t *l)'),
    redlock_last_votes: f('int redlock_last_votes(redlock_t *c, void *buf, size_t size)'),
  };
}

/**
 * Loads libredlock (once).  `file` overrides the search: REDLOCK_LIBRARY, then
 * libredlock.so.0 through the dynamic loader, common install directories, and
 * an in-tree build (../../build).
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
    F = fns;
    registerTrampolines();
    return F;
  }
  throw new Error('cannot load libredlock (set REDLOCK_LIBRARY to its path): ' + errors.join('; '));
}
const load = () => F || loadLibrary();

// ---- callbacks: one registered trampoline per type, ids through `arg` -----------

let nextId = 1;
const pending = new Map(); // id -> function(status, lockPtr) run on the JS thread
const watchers = new Map(); // id -> function(reason)
const loggers = new Map(); // id -> function(level, msg)
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
  if (r.length === 0 || r.includes('\0') || Buffer.byteLength(r) > 1024) {
    throw makeError(CODES.EINVAL, 'resource must be 1..1024 bytes without NUL');
  }
  return r;
}
function check(rc, detail) {
  if (rc !== 0) throw makeError(rc, detail);
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
      u32('ttlMs', ttlMs, { min: 1 });
      const id = newId();
      pending.set(id, (status) => {
        if (status === 0) resolve();
        else reject(makeError(status, `extend ${this.resource}`));
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
   * its validity ends, `onLost(err)` is called once (on the JS thread) with a
   * LostError, and the lock's 'lost' promise (`lock.lostPromise`) resolves.
   */
  watch(onLost) {
    const ptr = this._live('watch');
    if (onLost !== undefined && typeof onLost !== 'function') throw new TypeError('onLost must be a function');
    if (this._watchId) watchers.delete(this._watchId);
    const id = newId();
    watchers.set(id, (reason) => {
      const err = makeError(reason === 0 ? CODES.ELOST : reason, `lock on ${this.resource} lost`);
      this._lostReason = reason || CODES.ELOST;
      this._lostError = err;
      if (this._resolveLost) this._resolveLost(err);
      if (onLost) {
        try { onLost(err); } catch (e) { process.nextTick(() => { throw e; }); }
      }
    });
    const rc = F.redlock_watch(this.client._ptr, ptr, T.lost, id);
    if (rc !== 0) {
      watchers.delete(id);
      throw makeError(rc, `watch ${this.resource}`);
    }
    this._watchId = id;
    return this;
  }

  /** A promise that resolves (with a LostError) when a watched lock is lost. */
  get lostPromise() {
    if (!this._lostPromise) {
      this._lostPromise = this._lostError ? Promise.resolve(this._lostError)
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
        if (status === 0) resolve();
        else reject(makeError(status, `unlock ${this.resource}`));
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

  async [Symbol.asyncDispose]() { await this.unlock(); }
}
if (!Symbol.asyncDispose) delete Lock.prototype[Symbol.asyncDispose];

// ---- Client -------------------------------------------------------------------

const OPTION_KEYS = new Set(['retryCount', 'retryDelayMs', 'retryJitterMs', 'driftFactor',
  'connectTimeoutMs', 'requestTimeoutMs', 'maxTtlMs', 'quarantine', 'fencing', 'keyPrefix',
  'log', 'logLevel']);

function buildOptions(nodes, o) {
  for (const k of Object.keys(o)) {
    if (!OPTION_KEYS.has(k)) throw new TypeError(`unknown option: ${k}`);
  }
  if (!Array.isArray(nodes) || nodes.length === 0) throw new TypeError('nodes must be a non-empty array of URIs');
  const opts = F.redlock_options_new();
  if (!opts) throw makeError(CODES.ENOMEM);
  try {
    for (const uri of nodes) {
      if (typeof uri !== 'string') throw new TypeError('each node must be a URI string');
      check(F.redlock_options_add_node(opts, uri), `node ${uri.replace(/\/\/[^@/]*@/, '//***@')}`);
    }
    if (o.retryCount !== undefined || o.retryDelayMs !== undefined || o.retryJitterMs !== undefined) {
      const n = o.retryCount ?? 3;
      if (!Number.isInteger(n) || n < -1 || n > 0x7fffffff) throw makeError(CODES.EINVAL, 'retryCount');
      check(F.redlock_options_set_retry(opts, n, u32('retryDelayMs', o.retryDelayMs ?? 200),
        u32('retryJitterMs', o.retryJitterMs ?? 200)), 'retry');
    }
    if (o.driftFactor !== undefined) check(F.redlock_options_set_drift_factor(opts, Number(o.driftFactor)), 'driftFactor');
    if (o.connectTimeoutMs !== undefined || o.requestTimeoutMs !== undefined) {
      check(F.redlock_options_set_timeouts(opts, u32('connectTimeoutMs', o.connectTimeoutMs ?? 1000),
        u32('requestTimeoutMs', o.requestTimeoutMs ?? 100)), 'timeouts');
    }
    if (o.maxTtlMs !== undefined) check(F.redlock_options_set_max_ttl(opts, u32('maxTtlMs', o.maxTtlMs)), 'maxTtlMs');
    if (o.quarantine !== undefined) check(F.redlock_options_set_quarantine(opts, o.quarantine ? 1 : 0));
    if (o.fencing !== undefined) check(F.redlock_options_set_fencing(opts, o.fencing ? 1 : 0));
    if (o.keyPrefix !== undefined) {
      if (typeof o.keyPrefix !== 'string') throw new TypeError('keyPrefix must be a string');
      check(F.redlock_options_set_key_prefix(opts, o.keyPrefix), 'keyPrefix');
    }
    return opts;
  } catch (e) {
    F.redlock_options_free(opts);
    throw e;
  }
}

class Client {
  /** Use `await Client.open(nodes, options)`. */
  constructor(ptr, logId) {
    this._ptr = ptr;
    this._logId = logId;
    this._closed = false;
    this._closing = null;
    this._locks = new Set();
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
        check(F.redlock_options_set_log(opts, options.logLevel ?? LOG_WARN, T.log, logId), 'logLevel');
      }
      const out = [null];
      // Blocking (up to the connect timeout), and it may log: on the thread pool.
      const rc = await callAsync(F.redlock_open, out, opts);
      check(rc, 'open');
      return new Client(out[0], logId);
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
   * Acquires `resource`.  Without `waitMs` (or 0) it retries by the retry
   * policy; with `waitMs > 0` it waits up to waitMs for a release
   * (WaitTimeoutError).  `signal` (AbortSignal) abandons the call: the promise
   * rejects with an AbortError at once and a lock granted afterwards is
   * released.  `watch: true` (or `onLost`) watches the lock (see Lock.watch).
   */
  lock(resource, { ttlMs, waitMs = 0, signal, watch = false, onLost } = {}) {
    return new Promise((resolve, reject) => {
      this._checkOpen();
      resourceArg(resource);
      u32('ttlMs', ttlMs, { min: 1 });
      u32('waitMs', waitMs);
      if (signal && signal.aborted) { reject(abortError(signal)); return; }
      const id = newId();
      let abandoned = false;
      const onAbort = () => {
        abandoned = true;
        reject(abortError(signal));
      };
      pending.set(id, (status, ptr) => {
        if (signal) signal.removeEventListener('abort', onAbort);
        if (abandoned) {
          // Late grant to an abandoned call: release it at once (a close
          // that has begun releases and frees it by itself).
          if (status === 0 && ptr && !this._closed) F.redlock_unlock_async(this._ptr, ptr, null, 0);
          return;
        }
        if (status !== 0) { reject(makeError(status, `lock ${resource}`)); return; }
        if (this._closed) {
          // Granted while close() was starting: the close frees the handle.
          reject(makeError(CODES.ECANCELED, `lock ${resource}: client closed`));
          return;
        }
        const lk = new Lock(this, ptr, [resource]);
        try {
          if (watch || onLost) lk.watch(onLost);
        } catch (e) { /* only fails if the client closes meanwhile */ }
        resolve(lk);
      });
      const rc = F.redlock_lock_async(this._ptr, resource, ttlMs, waitMs, T.lock, id);
      if (rc !== 0) {
        pending.delete(id);
        reject(makeError(rc, `lock ${resource}`));
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
    u32('ttlMs', ttlMs, { min: 1 });
    return this._blockingLock(F.redlock_trylock, [this._ptr, resource, ttlMs], [resource], watch, onLost);
  }

  /** All resources (1..64, distinct) or none, as one Lock. */
  async lockMany(resources, { ttlMs, watch = false, onLost } = {}) {
    this._checkOpen();
    if (!Array.isArray(resources)) throw new TypeError('resources must be an array');
    resources.forEach(resourceArg);
    u32('ttlMs', ttlMs, { min: 1 });
    return this._blockingLock(F.redlock_lock_many,
      [this._ptr, resources.slice(), resources.length, ttlMs], resources.slice(), watch, onLost);
  }

  async _blockingLock(fn, args, resources, watch, onLost) {
    const out = [null];
    // On the thread pool: the call waits for the I/O thread.  close() waits
    // for it, so the C client is never used after redlock_close.
    const call = callAsync(fn, ...args, out);
    this._inflight.add(call);
    let rc;
    try {
      rc = await call;
    } finally {
      this._inflight.delete(call);
    }
    if (rc !== 0) throw makeError(rc, `lock ${resources.join(',')}`);
    if (this._closed) throw makeError(CODES.ECLOSED, 'client closed during the call');
    const lk = new Lock(this, out[0], resources);
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

  /** One-line summary of the latest round (diagnostics; do not parse). */
  lastVotes() {
    if (this._closed) return '';
    const buf = Buffer.alloc(4096);
    const n = F.redlock_last_votes(this._ptr, buf, buf.length);
    return n < 0 ? '' : buf.subarray(0, Math.min(n, buf.length - 1)).toString('utf8');
  }

  /**
   * Closes the client: pending lock() calls reject with CanceledError, every
   * lock still held is released (best effort) and its Lock object invalidated.
   * tryLock()/lockMany() calls already running finish first (they reject with
   * ClosedError).  Idempotent; resolves when the library's thread has stopped.
   */
  close() {
    if (this._closing) return this._closing;
    this._closed = true;
    for (const lk of this._locks) lk._detach();
    this._closing = (async () => {
      // tryLock/lockMany calls already on the thread pool finish first (each
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

  async [Symbol.asyncDispose]() { await this.close(); }
}
if (!Symbol.asyncDispose) delete Client.prototype[Symbol.asyncDispose];

const LOG_DEBUG = 0; const LOG_INFO = 1; const LOG_WARN = 2; const LOG_ERROR = 3;

module.exports = {
  Client, Lock, loadLibrary,
  version: () => load().redlock_version(),
  strerror: (code) => load().redlock_strerror(code),
  errName: (code) => load().redlock_err_name(code),
  RedlockError, InvalidArgumentError, NoMemoryError, LockedError, NoQuorumError, ExpiredError,
  LostError, WaitTimeoutError, CanceledError, ClosedError, WouldBlockError, RedlockIOError,
  NotSupportedError, ForkedError,
  codes: Object.freeze({ ...CODES }),
  LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR,
  MAX_NODES: 64, MAX_RESOURCE_LEN: 1024, MAX_PREFIX_LEN: 256, MAX_MANY: 64,
};
