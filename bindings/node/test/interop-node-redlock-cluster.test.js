'use strict';
// Interop with node-redlock 5 (npm `redlock`) over an ioredis Cluster, and our
// redis-cluster:// voter, on the same real Redis Cluster (3 primaries,
// started by ./cluster.js): both name the key after the resource alone (our
// key prefix is "" by default), so they contend on the same keys, whichever
// primary owns their slot.  node-redlock sees the cluster as one client
// (quorum 1 of 1), we as one voter.  Mutual exclusion is checked both ways,
// with fencing on and off on our side (the fence counter is named into the
// lock key's slot), for names spread over every primary and for a
// multi-resource lock whose names share a hash tag (one slot: node-redlock
// sends all of its keys in one script, which a cluster refuses with
// CROSSSLOT across slots).  Each side's compare-and-delete leaves the
// other's key alone: a release removes only its own value.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startCluster } = require('./cluster');
const redlock = require('..');

let NodeRedlock;
let Redis;
try {
  NodeRedlock = require('redlock').default;
  Redis = require('ioredis');
} catch {
  NodeRedlock = null;
}

const NAMES = 12; // spread over the 3 primaries (checked)

describe('interop with node-redlock 5 on a Redis Cluster', { skip: NodeRedlock ? false : 'npm redlock/ioredis not installed (npm ci)' }, () => {
  let cl;
  let ours;
  let oursFenced;
  let ioCluster;
  let theirs;

  before(async () => {
    cl = await startCluster(3);
    const base = { quarantine: false, retryCount: 0 };
    ours = await redlock.Client.open([cl.uri], base);
    oursFenced = await redlock.Client.open([cl.uri], { ...base, fencing: true });
    ioCluster = new Redis.Cluster(cl.nodes.map((m) => ({ host: '127.0.0.1', port: m.port })));
    await new Promise((resolve, reject) => {
      ioCluster.once('ready', resolve);
      ioCluster.once('error', reject);
    });
    theirs = new NodeRedlock([ioCluster], { retryCount: 0, driftFactor: 0.01 });
    theirs.on('error', () => {}); // ResourceLockedError is expected
  });
  after(async () => {
    if (ours) await ours.close();
    if (oursFenced) await oursFenced.close();
    if (ioCluster) await ioCluster.quit().catch(() => {});
    if (cl) await cl.stop();
  });

  // Our first call on a primary opens its connection (lazily): a lock taken
  // and released on every name warms up both of our clients.
  async function names(prefix) {
    const out = [];
    const owners = new Set();
    for (let i = 0; i < NAMES; i++) {
      const name = `${prefix}-${i}`;
      out.push(name);
      owners.add(await cl.owner(name));
    }
    assert.equal(owners.size, 3, `${prefix}: names on every primary`);
    return out;
  }

  async function tryUntil(client, name, ms) {
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        return await client.tryLock(name, { ttlMs: 5000 });
      } catch (err) {
        if (Date.now() >= deadline) throw err;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  it('node-redlock holds keys on every primary: we are refused, then get them after its release', async () => {
    const res = await names('ci:a');
    for (const client of [ours, oursFenced]) {
      for (const name of res) await (await tryUntil(client, name, 5000)).unlock();
    }
    const held = [];
    for (const name of res) held.push(await theirs.acquire([name], 10000));
    for (let i = 0; i < res.length; i++) {
      // The key is the resource name, on its slot's primary, with node-redlock's value.
      assert.equal(await cl.command(await cl.owner(res[i]), 'GET', res[i]), held[i].value);
      await assert.rejects(ours.tryLock(res[i], { ttlMs: 5000 }), redlock.LockedError);
      await assert.rejects(oursFenced.tryLock(res[i], { ttlMs: 5000 }), redlock.LockedError);
      // Our refused attempt left node-redlock's key as it was.
      assert.equal(await cl.command(await cl.owner(res[i]), 'GET', res[i]), held[i].value);
    }
    for (const lk of held) await lk.release();
    for (const name of res) {
      assert.equal(await cl.command(await cl.owner(name), 'EXISTS', name), 0);
      const lk = await oursFenced.tryLock(name, { ttlMs: 5000 });
      await lk.unlock();
    }
  });

  it('we hold keys on every primary: node-redlock is refused, then gets them after our release', async () => {
    const res = await names('ci:b');
    for (const client of [ours, oursFenced]) {
      const held = [];
      for (const name of res) held.push(await tryUntil(client, name, 5000));
      for (const name of res) {
        assert.equal(await cl.command(await cl.owner(name), 'EXISTS', name), 1);
        await assert.rejects(theirs.acquire([name], 5000), (err) => err.name === 'ExecutionError');
      }
      for (const lk of held) await lk.unlock();
      for (const name of res) {
        assert.equal(await cl.command(await cl.owner(name), 'EXISTS', name), 0);
        const theirLock = await theirs.acquire([name], 5000);
        await theirLock.release();
      }
    }
  });

  it('multi-resource locks in one hash slot exclude each other both ways', async () => {
    const m = (i) => `{ci:m}${i}`;
    await (await tryUntil(ours, m(0), 5000)).unlock();
    const theirLock = await theirs.acquire([m(1), m(2)], 5000);
    await assert.rejects(ours.lockMany([m(2), m(3)], { ttlMs: 5000 }), redlock.LockedError);
    await assert.rejects(ours.tryLock(m(1), { ttlMs: 5000 }), redlock.LockedError);
    await theirLock.release();
    const lk = await ours.lockMany([m(1), m(2)], { ttlMs: 5000 });
    await assert.rejects(theirs.acquire([m(1)], 5000), (err) => err.name === 'ExecutionError');
    await assert.rejects(theirs.acquire([m(0), m(2)], 5000), (err) => err.name === 'ExecutionError');
    await lk.unlock();
    await (await theirs.acquire([m(1), m(2)], 5000)).release();
  });

  it('a waiting lock of ours is granted when node-redlock releases', async () => {
    const name = 'ci:w';
    await (await tryUntil(ours, name, 5000)).unlock();
    const theirLock = await theirs.acquire([name], 10000);
    setTimeout(() => theirLock.release(), 300);
    const t0 = Date.now();
    const lk = await ours.lockWait(name, { ttlMs: 5000, waitMs: 5000 });
    assert.ok(Date.now() - t0 >= 250);
    await lk.unlock();
  });
});
