'use strict';
// examples/*.js, run as a user runs them (node examples/NAME.js URI...)
// against real redis-server masters: each must exit 0 and print what it
// promises.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { startMasters } = require('./masters');

const examples = path.join(__dirname, '..', 'examples');

// What each example must print (regular expressions).
const EXPECTED = {
  'basic.js': [/worker-a locked orders:42, valid for \d+ ms/, /worker-b refused while held: LockedError/,
    /worker-b locked it after the release \(owner worker-b\)/],
  'fenced_write.js': [/next-worker writes: accepted/, /slow-worker's late write with token \d+: refused/],
  'election.js': [/scheduler-a leads, term \d+/, /leader as the masters see it: scheduler-a/,
    /scheduler-b elected, term \d+/, /watched lock after 1500 ms of a 1000 ms TTL: held/],
};

function run(name, uris) {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(examples, name), ...uris], { timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, out: stdout + stderr }));
  });
}

describe('examples/', () => {
  let srv;
  before(async () => { srv = await startMasters(3); });
  after(async () => { if (srv) await srv.stop(); });

  for (const [name, wants] of Object.entries(EXPECTED)) {
    it(name, async () => {
      const { code, out } = await run(name, srv.uris);
      assert.equal(code, 0, out);
      for (const want of wants) assert.match(out, want);
    });
  }
});
