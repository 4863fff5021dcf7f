'use strict';
// A lock and its release, and what a second client is told meanwhile.
//
//   node examples/basic.js redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
//
// Run by test/examples.test.js.
const { Client, LockedError, NoQuorumError } = require('redlock-c');

async function main(nodes) {
  // quarantine: false only because test masters start seconds before this
  // runs: keep the restart quarantine on against real masters.
  const options = { quarantine: false };
  const a = await Client.open(nodes, { ...options, owner: 'worker-a' });
  const b = await Client.open(nodes, { ...options, owner: 'worker-b' });
  try {
    const lock = await a.lock('orders:42', { ttlMs: 10_000 });
    console.log(`worker-a locked ${lock.resource}, valid for ${lock.validityMs} ms`);
    console.log(`  votes: ${a.lastVotes()}`);

    // One attempt while it is held: LockedError (a quorum refused), not
    // NoQuorumError (too few masters answered: an outage).
    try {
      await b.tryLock('orders:42', { ttlMs: 10_000 });
      console.log('worker-b got it while held: wrong');
      return 1;
    } catch (e) {
      if (!(e instanceof LockedError)) throw e;
      console.log(`worker-b refused while held: ${e.name}`);
    }

    await lock.unlock();
    // Released: worker-b waits up to 5 s for it (a release wakes it at once).
    const next = await b.lock('orders:42', { ttlMs: 10_000, waitMs: 5000 });
    console.log(`worker-b locked it after the release (owner ${next.owner})`);
    await next.unlock();
    return 0;
  } catch (e) {
    if (e instanceof NoQuorumError) console.log(`too few masters answered: ${e.message}`);
    throw e;
  } finally {
    await b.close();
    await a.close();
  }
}

main(process.argv.slice(2).length ? process.argv.slice(2) : ['redis://127.0.0.1:6379'])
  .then((code) => { process.exitCode = code; }, (e) => { console.error(e); process.exitCode = 1; });
