'use strict';
/*
 * blocking.js: runs the library's blocking acquisition that has no callback
 * form (redlock_trylock) on worker threads, and reads a failed call's votes
 * (redlock_last_votes) on the same thread right after it.
 *
 * Why not koffi's `.async`: the library keeps the votes per calling thread,
 * and koffi gives no way to make a second call on the pool thread that ran
 * the first.  A worker thread runs both calls synchronously, one after the
 * other, so the votes it reads are its call's own.  The JS thread never
 * blocks (see index.js: the I/O thread may be waiting for it).
 *
 * The pool grows on demand up to POOL_MAX workers (more calls wait in a
 * queue) and keeps them for later calls; a worker keeps the process alive
 * only while it runs a call (it is ref'd then, unref'd when idle).  Pointers
 * are koffi 3 BigInts, so they cross to the workers as plain values.  If a
 * worker cannot start (no worker support), calls fall back to koffi's
 * `.async`, without votes.
 */
const os = require('os');
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

const MARK = 'redlock-c blocking worker';

// ---- the worker side --------------------------------------------------------

function serve() {
  const koffi = require('koffi');
  const lib = koffi.load(workerData.library);
  const trylock = lib.func('int redlock_trylock(void *c, const char *res, uint32_t ttl, _Out_ void **out)');
  const lastVotes = lib.func('int redlock_last_votes(void *c, void *buf, size_t size)');
  const roundCodes = new Set(workerData.roundCodes);
  const votesOf = (client) => {
    let buf = Buffer.alloc(4096);
    let n = lastVotes(client, buf, buf.length);
    if (n >= buf.length) { // the same record again: this thread makes no call in between
      buf = Buffer.alloc(n + 1);
      n = lastVotes(client, buf, buf.length);
    }
    return n < 0 ? undefined : buf.subarray(0, Math.min(n, buf.length - 1)).toString('utf8');
  };
  parentPort.on('message', ({ client, args }) => {
    const out = [null];
    const rc = trylock(client, ...args, out);
    // Here, on the thread that made the call: its own round.
    const votes = roundCodes.has(rc) ? votesOf(client) : undefined;
    parentPort.postMessage({ rc, out: out[0], votes });
  });
  parentPort.postMessage({ ready: true });
}

if (!isMainThread && workerData && workerData.mark === MARK) serve();

// ---- the JS thread's side ---------------------------------------------------

const POOL_MAX = Math.max(4, typeof os.availableParallelism === 'function'
  ? os.availableParallelism() : os.cpus().length);

class BlockingPool {
  /**
   * library: the path libredlock was loaded from; roundCodes: the codes
   * after which the votes are read; fallback(client, args, out): the
   * same C call through koffi's `.async` (a Promise of its return code).
   */
  constructor(library, roundCodes, fallback) {
    this._library = library;
    this._roundCodes = [...roundCodes];
    this._fallback = fallback;
    this._idle = [];   // ready workers without a call
    this._count = 0;   // workers started and not dead
    this._queue = [];  // { client, args, resolve, reject } not yet given to a worker
    this._broken = false;
  }

  /** Resolves with { rc, out, votes } (votes: a failed round's, or undefined). */
  run(client, args) {
    return new Promise((resolve, reject) => {
      this._queue.push({ client, args, resolve, reject });
      this._pump();
    });
  }

  _pump() {
    while (this._queue.length > 0) {
      if (this._broken) {
        const job = this._queue.shift();
        const out = [null];
        this._fallback(job.client, job.args, out)
          .then((rc) => job.resolve({ rc, out: out[0], votes: undefined }), job.reject);
      } else if (this._idle.length > 0) {
        this._give(this._idle.pop(), this._queue.shift());
      } else if (this._count < POOL_MAX) {
        this._spawn();
        return; // its 'ready' pumps again
      } else {
        return; // a busy worker pumps when it is done
      }
    }
  }

  _give(w, job) {
    w.job = job;
    w.worker.ref();
    w.worker.postMessage({ client: job.client, args: job.args });
  }

  _spawn() {
    this._count++;
    let worker;
    try {
      worker = new Worker(__filename, {
        workerData: { mark: MARK, library: this._library, roundCodes: this._roundCodes },
      });
    } catch (e) {
      this._count--;
      this._broken = true;
      this._pump();
      return;
    }
    const w = { worker, job: null, ready: false };
    worker.on('message', (m) => {
      if (m.ready) {
        w.ready = true;
        this._idle.push(w);
        this._pump();
        if (!w.job) worker.unref();
        return;
      }
      const job = w.job;
      w.job = null;
      worker.unref();
      this._idle.push(w);
      if (job) job.resolve(m);
      this._pump();
    });
    const dead = (err) => {
      if (w.dead) return;
      w.dead = true;
      this._count--;
      this._idle = this._idle.filter((x) => x !== w);
      // A worker that never got ready ran no call: its failure means none
      // can start, and the queued calls take the fallback.
      if (!w.ready) this._broken = true;
      if (w.job) {
        // The call may or may not have run: report it.
        w.job.reject(err instanceof Error ? err : new Error(`redlock worker exited (${err})`));
        w.job = null;
      }
      this._pump();
    };
    worker.on('error', dead);
    worker.on('exit', dead);
    // Ref'd (by its 'message' listener) until it is ready: it was started
    // for a call.
  }
}

module.exports = { BlockingPool };
