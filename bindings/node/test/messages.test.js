'use strict';
// What errors say: a TTL above the max TTL names the limit and the option
// that raises it, and a refused URI never shows its password, whatever
// characters it holds.  Against real redis-server masters.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const redlock = require('..');
const { startMasters } = require('./masters');

const { Client, InvalidArgumentError } = redlock;
const base = { quarantine: false, retryCount: 2, retryDelayMs: 20, retryJitterMs: 20 };
let seq = 0;
const unique = (name) => `${name}-${process.pid}-${++seq}`;

function isMaxTtlRefusal(ttl, limit) {
  return (err) => {
    assert.ok(err instanceof InvalidArgumentError, `${err}`);
    assert.match(err.message, new RegExp(`ttlMs ${ttl} ms is above the max TTL ${limit} ms`));
    assert.match(err.message, /maxTtlMs/);
    return true;
  };
}

describe('max TTL refusal', () => {
  let srv;
  before(async () => { srv = await startMasters(3); });
  after(async () => { if (srv) await srv.stop(); });

  it('says the default limit and maxTtlMs, for every acquisition', async () => {
    const c = await Client.open(srv.uris, base);
    try {
      const refused = isMaxTtlRefusal(120000, 60000);
      await assert.rejects(c.lock(unique('ttl'), { ttlMs: 120000 }), refused);
      await assert.rejects(c.lock(unique('ttl'), { ttlMs: 120000, waitMs: 100 }), refused);
      await assert.rejects(c.tryLock(unique('ttl'), { ttlMs: 120000 }), refused);
      await assert.rejects(c.lockMany([unique('ttl')], { ttlMs: 120000 }), refused);
      await assert.rejects(c.semaphoreAcquire(unique('ttl'), { limit: 2, ttlMs: 120000 }), refused);
      await assert.rejects(c.rwlockRead(unique('ttl'), { ttlMs: 120000 }), refused);
      await assert.rejects(c.rwlockWrite(unique('ttl'), { ttlMs: 120000 }), refused);
      assert.throws(() => c.elect(unique('ttl'), { ttlMs: 120000 }), refused);
    } finally {
      await c.close();
    }
  });

  it('says a raised limit; extend is checked too; the limit itself is allowed', async () => {
    const c = await Client.open(srv.uris, { ...base, maxTtlMs: 30000 });
    try {
      const lk = await c.lock(unique('ttl'), { ttlMs: 30000 });
      await assert.rejects(lk.extend(30001), isMaxTtlRefusal(30001, 30000));
      assert.equal(lk.lost, false);
      await lk.unlock();
    } finally {
      await c.close();
    }
    const big = await Client.open(srv.uris, { ...base, maxTtlMs: 180000 });
    try {
      const lk = await big.lock(unique('ttl'), { ttlMs: 120000 });
      assert.ok(lk.validityMs > 60000, `validity ${lk.validityMs}`);
      await lk.unlock();
    } finally {
      await big.close();
    }
  });
});

describe('a refused URI', () => {
  const secrets = ['s3cr', 'et', 'pa', 'ss', 'w0rd', 'sentpw'];
  async function refused(uri) {
    let err;
    try {
      const c = await Client.open([uri], { quarantine: false });
      await c.close();
    } catch (e) { err = e; }
    assert.ok(err instanceof InvalidArgumentError, `${uri} was not refused: ${err}`);
    const text = `${err.message} ${err.detail ?? ''} ${err.stack}`;
    for (const s of secrets) {
      assert.ok(!new RegExp(`[:=/@]${s}[/@&]`).test(text) && !text.includes(`${s}@127`),
        `the message shows the password (${s}): ${text}`);
    }
    assert.match(text, /\*\*\*/);
    return text;
  }

  it('hides a password holding / and @', async () => {
    const text = await refused('redis://user:s3cr/et@x@127.0.0.1:notaport');
    assert.ok(!text.includes('s3cr/et'), text);
    assert.match(text, /127\.0\.0\.1/);
    const text2 = await refused('redis://:pa@ss/w0rd@127.0.0.1:6379?bogus_param=1');
    assert.ok(!text2.includes('w0rd'), text2);
  });

  it('hides sentinel_password', async () => {
    const text = await refused('redis-sentinel://127.0.0.1:1/mymaster?sentinel_password=sentpw/@z&bogus_param=1');
    assert.ok(!text.includes('sentpw'), text);
    assert.match(text, /sentinel_password=\*\*\*/);
  });
});
