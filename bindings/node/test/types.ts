// Type-checked by test.sh (tsc --noEmit --strict) against index.d.ts; never run.
import * as redlock from '..';
import { Client, Lock, LockedError, RedlockError } from '..';

async function example(nodes: string[]): Promise<bigint> {
  const client: Client = await Client.open(nodes, { fencing: true, quarantine: false, retryCount: 1 });
  const ac = new AbortController();
  const lock: Lock = await client.lock('orders:42', { ttlMs: 10_000, waitMs: 5_000, signal: ac.signal });
  lock.watch((err) => console.log(err.code, err.errno));
  await lock.extend(5_000);
  const fence: bigint = lock.fence;
  const left: number = lock.validityMs;
  await lock.unlock();
  try {
    await client.tryLock('x', { ttlMs: 100 });
    await client.lockMany(['a', 'b'], { ttlMs: 100, watch: true });
    await client.lockWait('x', { ttlMs: 100, waitMs: 100 });
  } catch (e) {
    if (e instanceof LockedError) console.log(e.code === 'REDLOCK_ELOCKED', e.errno === redlock.codes.ELOCKED);
    if (e instanceof RedlockError) console.log(e.detail, e.votes?.length);
  }
  const n: number = await client.using('r', { ttlMs: 100 }, async (l) => l.validityMs + left);
  console.log(n, client.lastVotes(), redlock.version(), redlock.LOG_WARN);
  const permit: Lock = await client.semaphoreAcquire('pool', { limit: 3, ttlMs: 1000, waitMs: 100 });
  const r: Lock = await client.rwlockRead('doc', { ttlMs: 1000 });
  const w: Lock = await client.rwlockWrite('doc', { ttlMs: 1000, waitMs: 100 });
  await Promise.all([permit.unlock(), r.unlock(), w.unlock()]);
  const el: redlock.Election = client.elect('leader', { ttlMs: 2000 });
  el.on('elected', (term: bigint) => console.log(term)).on('lost', (err) => console.log(err?.code));
  const term: bigint = await el.elected();
  await el.resign();
  const st: Record<string, any> = client.stats();
  const prom: string = client.stats('prometheus');
  console.log(term, st, prom, redlock.tlsSupported());
  await Client.open(nodes, { tlsCa: '/ca.pem', tlsCert: '/c.pem', tlsKey: '/k.pem', tlsServerName: 'h', tlsVerify: true });
  await Client.open(nodes, { allowDiscovered: ['10.0.0.*', '*.redis.internal'] });
  // Who holds it, and taking it back; bounded holds.
  const labelled: Client = await Client.open(nodes, { owner: 'worker-3', fencing: true });
  const held: Lock = await labelled.lock('orders:43', { ttlMs: 1000 });
  const who: string = held.owner + labelled.owner;
  const view: redlock.Inspection = await client.inspect('orders:43');
  const sem: redlock.Inspection = await client.inspect('pool', 'semaphore');
  console.log(who, view.held, view.owner ?? '-', view.masters[0].state, sem.holders.length);
  const revoked: bigint = await client.revoke('orders:43');
  held.watch((err, reason) => console.log(err === null, reason === redlock.LOST_MAX_HOLD), { maxHoldMs: 60_000 });
  const reason: redlock.LostReason | 0 = held.lostReason;
  const bounded = client.elect('cron', { ttlMs: 2000, maxHoldMs: 60_000, onLost: (e, why) => console.log(e?.code, why) });
  console.log(revoked, reason, bounded.lostReason, redlock.LOST_EXPIRED, redlock.MAX_OWNER);
  const now: redlock.LeaderView = await client.leader('cron');
  const observer: redlock.Observer = client.observe('cron', (v) => console.log(v.state === redlock.LEADER_HELD, v.term, v.ttlMs, v.owner), { pollMs: 500 });
  console.log(now.term > 0n, observer.last?.owner, observer.stopped);
  await observer.stop();
  await client.close();
  return fence;
}
void example;

// `await using` (TypeScript >= 5.2): each is disposed at the end of the
// block, in reverse order: unlock, unlock, resign, close.
async function disposable(nodes: string[]): Promise<string[]> {
  await using client = await Client.open(nodes);
  await using lock = await client.lock('r', { ttlMs: 1000, signal: AbortSignal.timeout(100) });
  await using many = await client.lock(['a', 'b'], { ttlMs: 1000, signal: new AbortController().signal });
  await using election = client.elect('leader', { ttlMs: 1000 });
  const again: Lock = await client.lockMany(['c', 'd'], { ttlMs: 1000, signal: AbortSignal.abort() });
  // @ts-expect-error: a lock of several resources cannot wait
  await client.lock(['a', 'b'], { ttlMs: 1000, waitMs: 100 });
  // @ts-expect-error: a signal is an AbortSignal
  await client.lock('r', { ttlMs: 1000, signal: 'now' });
  const n: number = await client.using(['e', 'f'], { ttlMs: 1000 }, (l) => l.resources.length);
  console.log(lock.fence, election.term, redlock.libraryPath(), n);
  return [...many.resources, ...again.resources];
}
void disposable;
