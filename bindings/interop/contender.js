'use strict';
// Interop contender (Node): see bindings/interop/README.md for the protocol.
//   node contender.js try  RESOURCE TTL_MS HOLD_MS   (HOLD_MS "stdin": until a line or EOF)
//   node contender.js wait RESOURCE TTL_MS HOLD_MS WAIT_MS
// Masters from REDLOCK_NODES (comma-separated); fencing on, quarantine off.
const redlock = require('../node');

async function main() {
  const [mode, resource, ttl, hold, wait] = process.argv.slice(2);
  const nodes = (process.env.REDLOCK_NODES || '').split(',').map((s) => s.trim()).filter(Boolean);
  const client = await redlock.Client.open(nodes, { fencing: true, quarantine: false });
  let code = 0;
  try {
    const opts = { ttlMs: Number(ttl) };
    const lk = mode === 'wait'
      ? await client.lockWait(resource, { ...opts, waitMs: Number(wait) })
      : await client.tryLock(resource, opts);
    console.log(`ACQUIRED ${lk.fence} ${Date.now()}`);
    if (hold === 'stdin') {
      // Hold until a line (or EOF) arrives on standard input.
      await new Promise((r) => { process.stdin.once('data', r); process.stdin.once('end', r); });
      process.stdin.pause();
    } else {
      await new Promise((r) => setTimeout(r, Number(hold)));
    }
    console.log(`RELEASING ${Date.now()}`);
    await lk.unlock();
  } catch (e) {
    if (e instanceof redlock.LockedError || e instanceof redlock.WaitTimeoutError) {
      console.log('LOCKED');
      code = 75;
    } else {
      console.log(`ERROR ${e.code || e.message}`);
      code = 1;
    }
  }
  await client.close();
  process.exitCode = code;
}
main();
