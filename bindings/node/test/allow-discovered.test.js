'use strict';
// allowDiscovered (redlock_options_allow_discovered) against real servers:
// invalid patterns are refused naming the option; standalone masters lock
// whatever the patterns (the URIs' own addresses are never checked); on a
// Redis Cluster (./cluster.js, everything on 127.0.0.1) seeded by one node,
// only "10.*" allowed, a resource owned by another primary, which only the
// slot map names, fails with NoQuorumError whose votes say "not allowed".
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const redlock = require('..');
const { startMasters } = require('./masters');
const { startCluster } = require('./cluster');

const { Client, InvalidArgumentError, NoQuorumError } = redlock;
const base = { quarantine: false, retryCount: 0 };
let seq = 0;
const unique = (name) => `${name}-${process.pid}-${++seq}`;

describe('allowDiscovered on standalone masters', () => {
  let srv;
  before(async () => { srv = await startMasters(3); });
  after(async () => { if (srv) await srv.stop(); });

  it('refuses invalid patterns, naming the option', async () => {
    for (const bad of ['', 'x'.repeat(300)]) {
      await assert.rejects(Client.open(srv.uris, { ...base, allowDiscovered: ['10.*', bad] }), (e) => {
        assert.ok(e instanceof InvalidArgumentError, `${e}`);
        assert.match(e.message, /allowDiscovered\[1\]/);
        return true;
      });
    }
    await assert.rejects(Client.open(srv.uris, { ...base, allowDiscovered: Array(65).fill('10.*') }),
      (e) => e instanceof InvalidArgumentError && /at most 64/.test(e.message));
    await assert.rejects(Client.open(srv.uris, { ...base, allowDiscovered: ['a\0b'] }), InvalidArgumentError);
    // A string would otherwise be one pattern per character.
    await assert.rejects(Client.open(srv.uris, { ...base, allowDiscovered: '10.*' }), TypeError);
    await assert.rejects(Client.open(srv.uris, { ...base, allowDiscovered: [42] }), TypeError);
  });

  it('still locks the configured masters, which are never checked', async () => {
    for (const allowDiscovered of [['10.0.0.*', '*.redis.internal'], []]) {
      const c = await Client.open(srv.uris, { ...base, allowDiscovered });
      try {
        const lk = await c.lock(unique('disc'), { ttlMs: 5000 });
        await lk.unlock();
      } finally {
        await c.close();
      }
    }
  });
});

describe('allowDiscovered on a Redis Cluster', () => {
  let cl;
  before(async () => { cl = await startCluster(3); });
  after(async () => { if (cl) await cl.stop(); });

  it('does not follow the slot map to a primary outside the patterns', async () => {
    let res;
    for (let i = 0; !res; i++) {
      const name = unique(`disc-other-${i}`);
      if (await cl.owner(name) !== 0) res = name;
    }
    const c = await Client.open([`redis-cluster://127.0.0.1:${cl.nodes[0].port}`],
      { ...base, allowDiscovered: ['10.*'] });
    try {
      // The first rounds may come before the slot map is read.
      let last;
      const deadline = Date.now() + 10000;
      for (;;) {
        const err = await c.tryLock(res, { ttlMs: 5000 }).then(
          async (lk) => { await lk.unlock(); assert.fail(`${res} was granted`); },
          (e) => e);
        last = err;
        if (err instanceof NoQuorumError && /not allowed/.test(err.votes || '')) break;
        if (Date.now() > deadline) assert.fail(`no "not allowed" vote: ${last}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.match(last.message, /discovered address 127\.0\.0\.1:\d+ not allowed/);
      assert.deepEqual((await cl.sizes()).map(Number), [0, 0, 0]);
    } finally {
      await c.close();
    }
  });
});
