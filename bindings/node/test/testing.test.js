'use strict';
// redlock-c/testing (FakeMasters): the test kit, with no redis-server.  Two
// clients exclude each other on three fakes; killing two gives
// NoQuorumError; virtual time lets a 30 s lease lapse at once; the modes,
// pause and failover act as documented; fencing and the primitives work.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { Client, LockedError, NoQuorumError, LostError, InvalidArgumentError } = require('..');
const { FakeMasters, ALL, GRANT, REFUSE, NORMAL } = require('../testing');

const opts = { quarantine: false, retryCount: 0 };
const TTL = 10000;

describe('FakeMasters', () => {
  it('two clients exclude each other; two fakes down: NoQuorumError', async () => {
    const fakes = new FakeMasters(3);
    const a = await Client.open(fakes.nodes, opts);
    const b = await Client.open(fakes.nodes, opts);
    try {
      assert.match(fakes.nodes[0], /^unix:\/\//);
      const held = await a.lock('job', { ttlMs: TTL });
      assert.equal(fakes.keyCount('job'), 3);
      await assert.rejects(b.tryLock('job', { ttlMs: TTL }), LockedError);
      await held.unlock();
      await (await b.tryLock('job', { ttlMs: TTL })).unlock();
      fakes.kill(0);
      fakes.kill(1);
      await assert.rejects(b.lock('job', { ttlMs: TTL }), NoQuorumError);
    } finally {
      await a.close();
      await b.close();
      fakes.stop();
    }
  });

  it('virtual time: a 30 s lease lapses after advance()', async () => {
    const fakes = new FakeMasters(3, { virtualTime: true });
    const a = await Client.open(fakes.nodes, opts);
    const b = await Client.open(fakes.nodes, opts);
    try {
      const held = await a.lock('lease', { ttlMs: 30000 });
      fakes.advance(30001);
      assert.equal(fakes.keyCount('lease'), 0);
      const other = await b.tryLock('lease', { ttlMs: 30000 });
      await assert.rejects(held.extend(30000), LostError); // b holds it now
      await other.unlock();
    } finally {
      await a.close();
      await b.close();
      fakes.stop();
    }
  });

  it('modes, pause, drop and failover', async () => {
    const fakes = new FakeMasters(3, { tcp: true });
    const a = await Client.open(fakes.nodes, opts);
    const b = await Client.open(fakes.nodes, opts);
    try {
      assert.match(fakes.nodes[0], /^redis:\/\/127\.0\.0\.1:/);
      fakes.mode(ALL, GRANT);
      const x = await a.lock('m', { ttlMs: TTL });
      const y = await b.tryLock('m', { ttlMs: TTL });
      await x.unlock();
      await y.unlock();
      fakes.mode(ALL, REFUSE);
      await assert.rejects(a.tryLock('m', { ttlMs: TTL }), LockedError);
      fakes.mode(ALL, NORMAL);
      fakes.pause(2);
      const held = await a.lock('p', { ttlMs: TTL });
      assert.equal(fakes.hasKey(2, 'p'), false);
      fakes.resume(2);
      assert.equal(fakes.dropKey(0, 'p'), true);
      fakes.failover(1, 60000);
      assert.equal(fakes.hasKey(1, 'p'), false);
      await held.unlock().catch(() => {});
      assert.ok(fakes.commands(0) > 0);
    } finally {
      await a.close();
      await b.close();
      fakes.stop();
    }
  });

  it('fencing tokens rise; semaphores and read-write locks work', async () => {
    const fakes = new FakeMasters(3);
    const a = await Client.open(fakes.nodes, { ...opts, fencing: true });
    try {
      const first = await a.lock('f', { ttlMs: TTL });
      const f1 = first.fence;
      await first.unlock();
      const second = await a.lock('f', { ttlMs: TTL });
      assert.ok(second.fence > f1);
      await second.unlock();
      const p = await a.semaphoreAcquire('pool', { limit: 1, ttlMs: TTL });
      await assert.rejects(a.semaphoreAcquire('pool', { limit: 1, ttlMs: TTL }), LockedError);
      await p.unlock();
      const r = await a.rwlockRead('rw', { ttlMs: TTL });
      await assert.rejects(a.rwlockWrite('rw', { ttlMs: TTL }), LockedError);
      await r.unlock();
    } finally {
      await a.close();
      fakes.stop();
    }
  });

  it('bad input', () => {
    assert.throws(() => new FakeMasters(0), InvalidArgumentError);
    const fakes = new FakeMasters(1);
    assert.throws(() => fakes.kill(1), InvalidArgumentError);
    assert.throws(() => fakes.kill(-1), InvalidArgumentError);
    fakes.stop();
    fakes.stop();
    assert.throws(() => fakes.kill(0), /stopped/);
  });
});
