'use strict';
// Why fencing tokens matter: a holder that stalled past its lock's expiry
// writes late, and the store refuses it because a newer holder's token is
// larger.  The lock alone cannot stop that write; the store's check can.
//
//   node examples/fenced_write.js redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
//
// Run by test/examples.test.js.
const { Client } = require('redlock-c');

// The protected resource: it remembers the largest token it accepted and
// refuses any write carrying a smaller one (a database row's version column,
// a conditional write, ...).
class FencedStore {
  constructor() { this.highest = 0n; this.value = null; }
  write(token, value) {
    if (token < this.highest) return false;
    this.highest = token;
    this.value = value;
    return true;
  }
}

async function main(nodes) {
  // fencing: every grant gets a token larger than every earlier one.
  // quarantine: false only because test masters are seconds old.
  const options = { fencing: true, quarantine: false };
  const slow = await Client.open(nodes, { ...options, owner: 'slow-worker' });
  const next = await Client.open(nodes, { ...options, owner: 'next-worker' });
  const store = new FencedStore();
  try {
    // A short lock that its holder neither extends nor watches: it stalls
    // (a GC pause, a swapped-out process) and the lock expires under it.
    const stale = await slow.lock('ledger', { ttlMs: 300 });
    console.log(`slow-worker holds ledger with token ${stale.fence}`);

    // The next worker waits for the expiry and gets a larger token.
    const fresh = await next.lock('ledger', { ttlMs: 10_000, waitMs: 5000 });
    console.log(`next-worker holds ledger with token ${fresh.fence}`);
    console.log(`next-worker writes: ${store.write(fresh.fence, 'from next-worker') ? 'accepted' : 'refused'}`);

    // The stalled holder wakes up and writes as if it still held the lock.
    const late = store.write(stale.fence, 'from slow-worker');
    console.log(`slow-worker's late write with token ${stale.fence}: ${late ? 'accepted' : 'refused'}`);
    await fresh.unlock();
    await stale.unlock().catch(() => {}); // long expired: nothing of ours is left
    return !late && fresh.fence > stale.fence && store.value === 'from next-worker' ? 0 : 1;
  } finally {
    await next.close();
    await slow.close();
  }
}

main(process.argv.slice(2).length ? process.argv.slice(2) : ['redis://127.0.0.1:6379'])
  .then((code) => { process.exitCode = code; }, (e) => { console.error(e); process.exitCode = 1; });
