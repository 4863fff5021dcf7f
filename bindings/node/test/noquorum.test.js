'use strict';
// A wait that ends because too few masters answer rejects with
// NoQuorumError, never WaitTimeoutError: a program that skips its work while
// the lock is busy must not take an outage for a busy lock.  Against real
// redis-server masters; the two that never answer are ports nothing listens on.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const redlock = require('..');
const { startMasters } = require('./masters');

const { Client, NoQuorumError, WaitTimeoutError } = redlock;
const base = { quarantine: false, retryCount: 2, retryDelayMs: 20, retryJitterMs: 20 };
let seq = 0;
const unique = (name) => `${name}-${process.pid}-${++seq}`;

/** A loopback port nothing listens on (taken, then closed). */
function deadPort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

describe('a wait that ends: busy or no quorum', () => {
  let srv;
  before(async () => { srv = await startMasters(3); });
  after(async () => { if (srv) await srv.stop(); });

  it('held by another: WaitTimeoutError; two masters of three down: NoQuorumError with the votes', async () => {
    const a = await Client.open(srv.uris, base);
    const b = await Client.open(srv.uris, base);
    try {
      const res = unique('busy');
      const lk = await a.lock(res, { ttlMs: 10000 });
      await assert.rejects(b.lock(res, { ttlMs: 1000, waitMs: 300 }), (e) => {
        assert.ok(e instanceof WaitTimeoutError, `${e}`);
        assert.ok(!(e instanceof NoQuorumError));
        return true;
      });
      await lk.unlock();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    const uris = [srv.uris[0], `redis://127.0.0.1:${await deadPort()}`,
      `redis://127.0.0.1:${await deadPort()}`];
    const c = await Client.open(uris, { ...base, connectTimeoutMs: 200, requestTimeoutMs: 200 });
    try {
      const waits = [
        () => c.lock(unique('nq'), { ttlMs: 1000, waitMs: 400 }),
        () => c.lockWait(unique('nq'), { ttlMs: 1000, waitMs: 400 }),
        () => c.semaphoreAcquire(unique('nq'), { limit: 2, ttlMs: 1000, waitMs: 400 }),
        () => c.rwlockRead(unique('nq'), { ttlMs: 1000, waitMs: 400 }),
        () => c.rwlockWrite(unique('nq'), { ttlMs: 1000, waitMs: 400 }),
      ];
      for (const call of waits) {
        await assert.rejects(call(), (e) => {
          assert.ok(e instanceof NoQuorumError, `${e}`);
          assert.ok(!(e instanceof WaitTimeoutError));
          assert.equal(e.code, 'REDLOCK_ENOQUORUM');
          assert.ok(e.votes, 'carries the votes');
          return true;
        });
      }
    } finally {
      await c.close();
    }
  });
});
