'use strict';
/**
 * redlock-c/testing: fake Redis masters for your own tests, in your process.
 *
 * No redis-server is needed, and no port unless you ask for one: each fake
 * master is a small server on a thread of libredlock (include/redlock_testing.h)
 * that answers what the library sends as Redis does, over a Unix socket in a
 * private directory.  Its nodes are ordinary URIs:
 *
 *   const { Client, NoQuorumError } = require('redlock-c');
 *   const { FakeMasters } = require('redlock-c/testing');
 *   const fakes = new FakeMasters(3);
 *   const a = await Client.open(fakes.nodes, { quarantine: false });
 *   ...
 *   fakes.kill(0); fakes.kill(1);       // now a lock rejects with NoQuorumError
 *   await a.close(); fakes.stop();
 *
 * Every call here is synchronous and returns once the fault is in effect.
 * Faults: kill(i), restart(i) (back empty, uptime 0: use quarantine: false),
 * pause(i) / resume(i) (SIGSTOP / SIGCONT), slow(i, ms), dropKey(i, key),
 * clockJump(i, ms), failover(i, lagMs), mode(i, GRANT | REFUSE | NORMAL).
 * With { virtualTime: true } the fakes' clocks move only with advance(ms).
 */
const koffi = require('koffi');
const redlock = require('./index');

const NORMAL = 0;
const GRANT = 1;
const REFUSE = 2;
const ALL = 0xffffffff;
const TCP = 0x1;
const VIRTUAL_TIME = 0x2;

let K = null;
function kit() {
  if (K) return K;
  const lib = koffi.load(redlock.libraryPath());
  const f = (sig) => {
    try { return lib.func(sig); } catch (e) {
      throw new Error(`${redlock.libraryPath()} has no test kit: ${e.message}`);
    }
  };
  K = {
    start: f('int redlock_testing_start(uint32_t n, uint32_t flags, _Out_ void **out)'),
    stop: f('void redlock_testing_stop(void *kit)'),
    uri: f('const char *redlock_testing_uri(const void *kit, uint32_t i)'),
    kill: f('int redlock_testing_kill(void *kit, uint32_t i)'),
    restart: f('int redlock_testing_restart(void *kit, uint32_t i)'),
    pause: f('int redlock_testing_pause(void *kit, uint32_t i)'),
    resume: f('int redlock_testing_resume(void *kit, uint32_t i)'),
    slow: f('int redlock_testing_slow(void *kit, uint32_t i, uint32_t ms)'),
    dropKey: f('int redlock_testing_drop_key(void *kit, uint32_t i, const char *key)'),
    clockJump: f('int redlock_testing_clock_jump(void *kit, uint32_t i, uint64_t ms)'),
    failover: f('int redlock_testing_failover(void *kit, uint32_t i, uint64_t lag)'),
    setMode: f('int redlock_testing_set_mode(void *kit, uint32_t i, int mode)'),
    advance: f('int redlock_testing_advance(void *kit, uint64_t ms)'),
    hasKey: f('int redlock_testing_has_key(void *kit, uint32_t i, const char *key)'),
    keyCount: f('int redlock_testing_key_count(void *kit, const char *key)'),
    commands: f('long long redlock_testing_commands(void *kit, uint32_t i)'),
  };
  return K;
}

/** The binding's error object for a library code the kit returns. */
function makeError(code, detail) {
  const c = redlock.codes;
  const Cls = {
    [c.EINVAL]: redlock.InvalidArgumentError,
    [c.ENOMEM]: redlock.NoMemoryError,
    [c.EIO]: redlock.RedlockIOError,
  }[code] || redlock.RedlockError;
  return new Cls(code, redlock.strerror(code), detail);
}

/** A count or flag (>= 0) as is; an error code thrown as the library's error. */
function check(rc, detail) {
  if (typeof rc === 'bigint') rc = Number(rc);
  if (rc < 0) throw makeError(rc, detail);
  return rc;
}

function index(i, what) {
  if (!Number.isInteger(i) || i < 0 || i > 0xffffffff) {
    throw makeError(-1, `${what}: index must be an integer >= 0, got ${i}`);
  }
  return i;
}

// A FakeMasters the test forgot to stop (or whose test threw first) is
// stopped when it is collected, so that its thread and socket directory do
// not outlive the process's interest in it.
const finalizer = new FinalizationRegistry((ptr) => kit().stop(ptr));

class FakeMasters {
  /**
   * n fake masters (1..16), started now.  options.tcp: listen on 127.0.0.1
   * ports instead of Unix sockets; options.virtualTime: the fakes' clocks
   * move only with advance().
   */
  constructor(n = 3, options = {}) {
    const k = kit();
    const out = [null];
    const flags = (options.tcp ? TCP : 0) | (options.virtualTime ? VIRTUAL_TIME : 0);
    check(k.start(n, flags, out), `FakeMasters(${n}): 1 to 16 masters`);
    this._kit = out[0];
    finalizer.register(this, this._kit, this);
    /** The masters' URIs, for Client.open. */
    this.nodes = [];
    for (let i = 0; i < n; i++) this.nodes.push(k.uri(this._kit, i));
  }

  _live() {
    if (!this._kit) throw new Error('FakeMasters is stopped');
    return this._kit;
  }

  _on(name, i, ...args) {
    return check(kit()[name](this._live(), index(i, name), ...args),
      `${name}(${i}): index 0..${this.nodes.length - 1}, and a master that is up`);
  }

  /** Stops every fake (clients still open see them go down); idempotent. */
  stop() {
    if (this._kit) {
      finalizer.unregister(this);
      kit().stop(this._kit);
      this._kit = null;
    }
  }

  [Symbol.dispose]() { this.stop(); }

  /** Master i dies: its connections close, its keys are lost; down until restart(i). */
  kill(i) { this._on('kill', i); }
  /** Master i comes back empty, with a new run_id and uptime 0. */
  restart(i) { this._on('restart', i); }
  /** SIGSTOP: master i reads and answers nothing until resume(i). */
  pause(i) { this._on('pause', i); }
  /** SIGCONT: master i runs what waited, in order. */
  resume(i) { this._on('resume', i); }
  /** Every reply of master i comes ms late (0: on time again). */
  slow(i, ms) { this._on('slow', i, ms); }
  /** Master i loses key (the lock key is keyPrefix + resource): true if it existed. */
  dropKey(i, key) { return this._on('dropKey', i, String(key)) === 1; }
  /** Master i's clock jumps forward by ms: its keys expire that much sooner. */
  clockJump(i, ms) { this._on('clockJump', i, ms); }
  /** Master i is replaced by its replica lagMs behind (the last lagMs of writes are missing). */
  failover(i, lagMs = 0) { this._on('failover', i, lagMs); }
  /** NORMAL, GRANT or REFUSE, for master i or for all (ALL). */
  mode(i, mode) { check(kit().setMode(this._live(), i, mode), `mode(${i}, ${mode})`); }
  /** Every fake's clock moves forward by ms. */
  advance(ms) { check(kit().advance(this._live(), ms), `advance(${ms})`); }
  /** Whether master i holds key. */
  hasKey(i, key) { return this._on('hasKey', i, String(key)) === 1; }
  /** How many masters hold key. */
  keyCount(key) { return check(kit().keyCount(this._live(), String(key)), 'keyCount'); }
  /** Commands master i ran since it (re)started. */
  commands(i) { return this._on('commands', i); }
}

module.exports = { FakeMasters, NORMAL, GRANT, REFUSE, ALL };
