'use strict';
// Interop with node-redlock 5 (npm `redlock`, over ioredis): both build the
// Redis key from the resource name alone (our key prefix is "" by default),
// so they contend on the same keys.  Mutual exclusion is checked both ways,
// with fencing on and off on our side, and for multi-resource locks; on
// Debian's redis-server (we release and extend with our Lua scripts) and, when
// REDLOCK_TEST_VALKEY9 names a Valkey >= 9.1, there too (we release with
// DELIFEQ and extend with SET IFEQ, node-redlock with its scripts).
const fs = require('node:fs');
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startMasters } = require('./masters');
const redlock = require('..');

let NodeRedlock;
let Redis;
try {
  NodeRedlock = require('redlock').default;
  Redis = require('ioredis');
} catch {
  NodeRedlock = null;
}

function interop(server, label) {
describe(`interop with node-redlock 5 (${label})`, { skip: NodeRedlock ? false : 'npm redlock/ioredis not installed (npm ci)' }, () => {
  let srv;
  let ours;
  let oursFenced;
  let redises;
  let theirs;

  before(async () => {
    srv = await startMasters(3, server);
    const base = { quarantine: false, retryCount: 0 };
    ours = await redlock.Client.open(srv.uris, base);
    oursFenced = await redlock.Client.open(srv.uris, { ...base, fencing: true });
    redises = srv.masters.map((m) => new Redis({ host: '127.0.0.1', port: m.port, lazyConnect: false }));
    theirs = new NodeRedlock(redises, { retryCount: 0, driftFactor: 0.01 });
    theirs.on('error', () => {}); // ResourceLockedError is expected
  });
  after(async () => {
    if (ours) await ours.close();
    if (oursFenced) await oursFenced.close();
    if (redises) await Promise.all(redises.map((r) => r.quit().catch(() => {})));
    if (srv) await srv.stop();
  });

  it('node-redlock holds: we are refused, then get it after its release', async () => {
    const theirLock = await theirs.acquire(['i:a'], 5000);
    // node-redlock needs a quorum (2 of 3): a master whose ioredis connection
    // was not ready yet under load may miss the key.
    const vals = await srv.all('GET', 'i:a');
    assert.ok(vals.filter((v) => v === theirLock.value).length >= 2, JSON.stringify(vals));
    await assert.rejects(ours.tryLock('i:a', { ttlMs: 5000 }), redlock.LockedError);
    await assert.rejects(oursFenced.tryLock('i:a', { ttlMs: 5000 }), redlock.LockedError);
    await theirLock.release();
    const lk = await ours.tryLock('i:a', { ttlMs: 5000 });
    await lk.unlock();
  });

  it('we hold: node-redlock is refused, then gets it after our release', async () => {
    for (const client of [ours, oursFenced]) {
      const lk = await client.tryLock('i:b', { ttlMs: 5000 });
      await assert.rejects(theirs.acquire(['i:b'], 5000), (err) => err.name === 'ExecutionError');
      await lk.unlock();
      const theirLock = await theirs.acquire(['i:b'], 5000);
      await theirLock.release();
    }
  });

  it('multi-resource locks exclude each other both ways', async () => {
    const theirLock = await theirs.acquire(['i:m2'], 5000);
    await assert.rejects(ours.lockMany(['i:m1', 'i:m2'], { ttlMs: 5000 }), redlock.LockedError);
    await theirLock.release();
    const lk = await ours.lockMany(['i:m1', 'i:m2'], { ttlMs: 5000 });
    await assert.rejects(theirs.acquire(['i:m1'], 5000), (err) => err.name === 'ExecutionError');
    await assert.rejects(theirs.acquire(['i:m0', 'i:m2'], 5000), (err) => err.name === 'ExecutionError');
    await lk.unlock();
    await (await theirs.acquire(['i:m1', 'i:m2'], 5000)).release();
  });

  it('a waiting lock of ours is granted when node-redlock releases', async () => {
    const theirLock = await theirs.acquire(['i:w'], 10000);
    setTimeout(() => theirLock.release(), 300);
    const t0 = Date.now();
    const lk = await ours.lockWait('i:w', { ttlMs: 5000, waitMs: 5000 });
    assert.ok(Date.now() - t0 >= 250);
    await lk.unlock();
  });

  if (server !== 'redis-server') {
    it('our releases went as DELIFEQ (no script of ours)', async () => {
      const stats = await srv.all('INFO', 'commandstats');
      assert.ok(stats.every((s) => /cmdstat_delifeq:calls=[1-9]/.test(s)), stats.join('\n'));
    });
  }
});
}

interop('redis-server', 'redis-server');
const valkey9 = process.env.REDLOCK_TEST_VALKEY9;
if (valkey9 && fs.existsSync(valkey9)) {
  interop(valkey9, 'Valkey 9.1: DELIFEQ and SET IFEQ on our side');
} else {
  it('interop with node-redlock 5 on Valkey 9.1', { skip: 'REDLOCK_TEST_VALKEY9 names no Valkey >= 9.1' }, () => {});
}
