// An ES-module user of the binding: `import { X } from 'redlock-c'` must name
// every value index.d.ts declares.  Node finds the names of a CommonJS module
// by reading index.js's `module.exports = { ... }` literal, not by running
// it: a name it cannot see is a SyntaxError when this file is linked, before
// any test runs.  The static import below is that check for each name; the
// tests compare them with require()'s and with the declarations.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import {
  Client, Lock, Election, loadLibrary, libraryPath, version, tlsSupported, strerror, errName,
  RedlockError, InvalidArgumentError, NoMemoryError, LockedError, NoQuorumError, ExpiredError,
  LostError, WaitTimeoutError, CanceledError, ClosedError, WouldBlockError, RedlockIOError,
  NotSupportedError, ForkedError, codes, errorTable, constantString,
  LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR,
  MAX_NODES, MAX_RESOURCE_LEN, MAX_PREFIX_LEN, MAX_MANY, MAX_SEM_LIMIT, MAX_OWNER,
  LOST_EXPIRED, LOST_MAX_HOLD, LEADER_NONE, LEADER_HELD, LEADER_UNKNOWN, Observer,
} from '../index.js';
import * as namespace from '../index.js';
import defaultExport from '../index.js';

const require = createRequire(import.meta.url);
const cjs = require('../index.js');
const imported = {
  Client, Lock, Election, loadLibrary, libraryPath, version, tlsSupported, strerror, errName,
  RedlockError, InvalidArgumentError, NoMemoryError, LockedError, NoQuorumError, ExpiredError,
  LostError, WaitTimeoutError, CanceledError, ClosedError, WouldBlockError, RedlockIOError,
  NotSupportedError, ForkedError, codes, errorTable, constantString,
  LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR,
  MAX_NODES, MAX_RESOURCE_LEN, MAX_PREFIX_LEN, MAX_MANY, MAX_SEM_LIMIT, MAX_OWNER,
  LOST_EXPIRED, LOST_MAX_HOLD, LEADER_NONE, LEADER_HELD, LEADER_UNKNOWN, Observer,
};

/** The value names index.d.ts exports (classes, constants, functions). */
function declaredNames() {
  const dts = fs.readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8');
  return [...dts.matchAll(/^export declare (?:class|const|function) (\w+)/gm)].map((m) => m[1]);
}

describe('ES module consumer', () => {
  it('every name index.d.ts declares is a named export, the same value as require() gives', () => {
    const names = declaredNames();
    assert.ok(names.length >= 30, `found ${names.length} declarations`);
    for (const name of names) {
      assert.ok(Object.hasOwn(namespace, name), `${name} is not a named ES export`);
      assert.ok(Object.hasOwn(imported, name), `${name} is missing from this test's import list`);
      assert.equal(namespace[name], cjs[name], name);
      assert.equal(imported[name], cjs[name], name);
    }
  });

  it('the default export is module.exports, and nothing it has is hidden from import', () => {
    assert.equal(defaultExport, cjs);
    for (const name of Object.keys(cjs)) {
      assert.ok(Object.hasOwn(namespace, name), `${name} is not a named ES export`);
    }
  });

  it('the imported error classes are the ones the binding throws', () => {
    assert.ok(new LockedError(codes.ELOCKED, 'm') instanceof RedlockError);
    assert.equal(typeof version(), 'string');
    assert.equal(errName(codes.ENOQUORUM), 'REDLOCK_ENOQUORUM');
    assert.equal(LOG_WARN, 2);
    assert.equal(MAX_MANY, 64);
  });
});
