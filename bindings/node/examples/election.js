'use strict';
// Leader election: two nodes campaign, the leader's lease is watched (kept
// extended) while it leads, and it hands over by resigning; the next leader's
// term is larger, so a store that checks terms (as fenced_write.js checks
// tokens) refuses the old leader.  Then a lock kept by a watch past its TTL.
//
//   node examples/election.js redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
//
// Run by test/examples.test.js.
const { Client } = require('redlock-c');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(nodes) {
  // quarantine: false only because test masters are seconds old.
  const a = await Client.open(nodes, { quarantine: false, owner: 'scheduler-a' });
  const b = await Client.open(nodes, { quarantine: false, owner: 'scheduler-b' });
  try {
    const first = a.elect('scheduler', { ttlMs: 2000 });
    const termA = await first.elected();
    console.log(`scheduler-a leads, term ${termA}`);

    const second = b.elect('scheduler', { ttlMs: 2000 });
    second.on('elected', (term) => console.log(`scheduler-b elected, term ${term}`));
    const view = await a.leader('scheduler');
    console.log(`leader as the masters see it: ${view.owner}, term ${view.term}`);

    await first.resign(); // hand-over: b's campaign is woken by the release
    const termB = await second.elected();
    await second.resign();

    // A watched lock outlives its TTL: the watch extends it until unlock().
    let lost = null;
    const lock = await a.lock('report', { ttlMs: 1000 });
    lock.watch((err) => { lost = err; });
    await sleep(1500); // the work: longer than the TTL
    console.log(`watched lock after 1500 ms of a 1000 ms TTL: ${lock.lost ? 'lost' : 'held'}`);
    await lock.unlock();
    return termB > termA && lost === null ? 0 : 1;
  } finally {
    await b.close();
    await a.close();
  }
}

main(process.argv.slice(2).length ? process.argv.slice(2) : ['redis://127.0.0.1:6379'])
  .then((code) => { process.exitCode = code; }, (e) => { console.error(e); process.exitCode = 1; });
