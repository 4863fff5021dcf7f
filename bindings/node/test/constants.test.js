'use strict';
// The binding's constants against the library's own tables (one source of
// truth): the values index.js and index.d.ts write down for
// require() time and for TypeScript must be the library's, and everything
// else (error names, messages, defaults) comes from the library.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const redlock = require('..');

const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');

function libConstant(name) {
  const out = [0];
  const rc = redlock.loadLibrary().redlock_constant(name, out);
  return rc === 0 ? Number(out[0]) : undefined;
}

describe('constants from the library', () => {
  it('error table: every library code is in codes, with the library name and message', () => {
    const table = redlock.errorTable();
    assert.ok(table.length > 0);
    const byValue = new Map(Object.entries(redlock.codes).map(([k, v]) => [v, k]));
    assert.equal(table.length, byValue.size, 'codes has exactly the library\'s codes');
    for (const { code, name, message } of table) {
      const key = byValue.get(code);
      assert.ok(key, `library code ${code} (${name}) missing from codes`);
      assert.equal(name, 'REDLOCK_' + key);
      assert.equal(redlock.errName(code), name);
      assert.equal(redlock.strerror(code), message);
    }
  });

  it('codes, LOG_* and MAX_* equal the library\'s values', () => {
    for (const [k, v] of Object.entries(redlock.codes)) assert.equal(v, libConstant('REDLOCK_' + k), k);
    for (const k of ['LOG_DEBUG', 'LOG_INFO', 'LOG_WARN', 'LOG_ERROR', 'MAX_NODES', 'MAX_RESOURCE_LEN',
      'MAX_PREFIX_LEN', 'MAX_MANY', 'MAX_SEM_LIMIT', 'MAX_OWNER', 'LOST_EXPIRED', 'LOST_MAX_HOLD',
      'LEADER_NONE', 'LEADER_HELD', 'LEADER_UNKNOWN']) {
      assert.equal(redlock[k], libConstant('REDLOCK_' + k), k);
    }
  });

  it('index.d.ts literal types equal the library\'s values', () => {
    const block = dts.match(/export declare const codes: Readonly<\{([^}]*)\}>/);
    assert.ok(block, 'codes in index.d.ts');
    const typed = Object.fromEntries([...block[1].matchAll(/(E[A-Z]+): (-?\d+)/g)].map((m) => [m[1], Number(m[2])]));
    assert.deepEqual(typed, { ...redlock.codes });
    const seen = [];
    for (const m of dts.matchAll(/export declare const ((?:LOG|MAX|LOST|LEADER)_[A-Z_]+): (-?\d+);/g)) {
      assert.equal(Number(m[2]), libConstant('REDLOCK_' + m[1]), m[1]);
      seen.push(m[1]);
    }
    assert.ok(seen.includes('LOST_MAX_HOLD') && seen.includes('MAX_OWNER'), seen.join(' '));
  });

  it('string constants and unknown names', () => {
    assert.match(redlock.constantString('REDLOCK_FENCE_KEY_PREFIX'), /fence/);
    assert.match(redlock.constantString('REDLOCK_RELEASE_CHANNEL_PREFIX'), /release/);
    assert.equal(redlock.constantString('REDLOCK_NO_SUCH'), null);
    assert.equal(libConstant('REDLOCK_NO_SUCH'), undefined);
  });

  it('partner values left out keep the library defaults', async () => {
    // Each option alone: the other values of its setter come from the library.
    for (const o of [{ retryCount: 0 }, { retryDelayMs: 5 }, { connectTimeoutMs: 100 }, { requestTimeoutMs: 50 }]) {
      const c = await redlock.Client.open(['redis://127.0.0.1:1'], { quarantine: false, connectTimeoutMs: 100, ...o });
      await c.close();
    }
  });
});
