"""Tests of redlock_c.aio (the asyncio API) against real redis-server processes.

Reuses the server harness of test_redlock.py (its own redis-server processes
on free loopback ports, stopped by PID).  Every wait has a deadline
(asyncio.wait_for); nothing sleeps to "see what happens".
"""

import asyncio
import os
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import redlock_c  # noqa: E402
import redlock_c.aio  # noqa: E402
from test_redlock import (REDIS_SERVER, client_kwargs, redis_cmd, start_servers,  # noqa: E402
                          unique, wait_until)

DEADLINE = 30.0


@unittest.skipIf(REDIS_SERVER is None, "redis-server not found")
class TestAsyncClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.servers = start_servers(3)
        cls.nodes = [s.uri for s in cls.servers]

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.stop()

    def run_async(self, coro):
        return asyncio.run(asyncio.wait_for(coro, DEADLINE))

    def keys_on_masters(self, resource):
        return sum(redis_cmd(s.port, "EXISTS", resource) for s in self.servers)

    def wait_keys_gone(self, resource):
        """An unlock returns once a quorum released; the last master's
        release may still be on its way."""
        wait_until(lambda: self.keys_on_masters(resource) == 0, timeout=DEADLINE,
                   what="%s released on every master" % resource)

    def test_lock_extend_unlock(self):
        res = unique("aio")

        async def main():
            async with await redlock_c.aio.AsyncClient.open(self.nodes,
                                                          **client_kwargs()) as client:
                lk = await client.lock(res, 10000)
                self.assertEqual(lk.resource, res)
                self.assertGreater(lk.validity_ms, 0)
                self.assertEqual(self.keys_on_masters(res), 3)
                with self.assertRaises(redlock_c.LockedError) as cm:
                    await client.trylock(res, 10000)
                self.assertIn("=refused", cm.exception.votes)
                with self.assertRaises(redlock_c.LockedError) as cm:
                    await client.lock(res, 10000)  # callback form
                self.assertIn("=refused", cm.exception.votes)
                await lk.extend(20000)
                pttl = redis_cmd(self.servers[0].port, "PTTL", res)
                self.assertGreater(pttl, 10000)  # the extension reached the master
                await lk.unlock()
                self.assertTrue(lk.released)
                await lk.unlock()  # a second unlock is a no-op
                self.wait_keys_gone(res)
                with self.assertRaises(redlock_c.InvalidArgument):
                    await lk.extend(1000)

        self.run_async(main())

    def test_semaphore_and_rwlock(self):
        name = unique("aio-prims")

        async def main():
            async with await redlock_c.aio.AsyncClient.open(self.nodes,
                                                          **client_kwargs()) as client:
                permits = [await client.semaphore_acquire(name, 2, 10000) for _ in range(2)]
                self.assertNotEqual(permits[0].resource, permits[1].resource)
                self.assertTrue(permits[0].resource.startswith(name + ":sem:"))
                with self.assertRaises(redlock_c.LockedError):
                    await client.semaphore_acquire(name, 2, 10000)
                # A waiter gets the permit another task releases.
                waiter = asyncio.ensure_future(
                    client.semaphore_acquire(name, 2, 10000, wait_ms=20000))
                await asyncio.sleep(0)  # the task starts its call
                self.assertFalse(waiter.done())  # full: it can only wait
                await permits[0].unlock()
                third = await asyncio.wait_for(waiter, 15)
                await third.unlock()
                await permits[1].unlock()

                readers = [await client.rwlock_read(name, 10000) for _ in range(2)]
                self.assertEqual(readers[0].resource, name)
                with self.assertRaises(redlock_c.LockedError):
                    await client.rwlock_write(name, 10000)
                for r in readers:
                    await r.unlock()
                w = await client.rwlock_write(name, 10000, wait_ms=1000)
                with self.assertRaises(redlock_c.WaitTimeout):
                    await client.rwlock_read(name, 10000, wait_ms=200)
                await w.unlock()

        self.run_async(main())

    def test_concurrent_waits_on_one_thread(self):
        """Many acquisitions wait at once with no thread per call: the event
        loop's thread count stays small while 50 waits are outstanding."""
        res = unique("aio-wait")

        async def main():
            client = await redlock_c.aio.AsyncClient.open(self.nodes, **client_kwargs())
            try:
                holder = await client.lock(res, 30000)
                before = threading.active_count()
                waits = [asyncio.ensure_future(client.lock(res, 5000, wait_ms=20000))
                         for _ in range(50)]
                await asyncio.sleep(0)  # let every wait start (not a wait for an event)
                self.assertLessEqual(threading.active_count(), before + 1)
                self.assertFalse(any(w.done() for w in waits))
                await holder.unlock()
                # Each grant is released in turn: all 50 get it, one at a time.
                got = 0
                fences = []
                for fut in asyncio.as_completed(waits):
                    lk = await fut
                    fences.append(lk.value)
                    got += 1
                    await lk.unlock()
                self.assertEqual(got, 50)
                self.assertEqual(len(set(fences)), 50)
            finally:
                await client.aclose()

        self.run_async(main())

    def test_wait_timeout_and_cancel(self):
        res = unique("aio-cancel")

        async def main():
            async with redlock_c.aio.AsyncClient(self.nodes, **client_kwargs()) as client:
                holder = await client.lock(res, 30000)
                with self.assertRaises(redlock_c.WaitTimeout):
                    await client.lock(res, 5000, wait_ms=300)
                # A cancelled wait never hands out the lock, even when the
                # grant arrives after the cancellation.
                task = asyncio.ensure_future(client.lock(res, 60000, wait_ms=20000))
                await asyncio.sleep(0)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                await holder.unlock()
                # The abandoned attempt (60 s TTL) may win and is released at
                # once: a fresh waiter gets the lock long before that TTL.
                lk = await client.lock(res, 5000, wait_ms=10000)
                await lk.unlock()
                self.wait_keys_gone(res)

        self.run_async(main())

    def test_close_cancels_waiters(self):
        res = unique("aio-close")

        async def main():
            client = await redlock_c.aio.AsyncClient.open(self.nodes, **client_kwargs())
            holder = await client.lock(res, 30000)
            waiter = asyncio.ensure_future(client.lock(res, 5000, wait_ms=25000))
            await asyncio.sleep(0)
            await client.aclose()
            with self.assertRaises(redlock_c.CanceledError):
                await waiter
            self.assertTrue(client.closed)
            self.assertTrue(holder.released)  # close released it
            with self.assertRaises(redlock_c.ClosedError):
                await client.lock(res, 1000)
            self.assertEqual(self.keys_on_masters(res), 0)

        self.run_async(main())

    def test_watch_lost_runs_on_event_loop(self):
        res = unique("aio-lost")

        async def main():
            async with redlock_c.aio.AsyncClient(self.nodes, **client_kwargs()) as client:
                loop = asyncio.get_running_loop()
                lost = loop.create_future()
                lk = await client.lock(res, 1000)

                def on_lost(alk):
                    # On the event loop's own thread, with the AsyncLock.
                    lost.set_result((alk, threading.get_ident()))

                lk.watch(on_lost)
                for s in self.servers:  # someone else's value: renewals fail
                    redis_cmd(s.port, "SET", res, "intruder", "PX", 60000)
                alk, ident = await lost
                self.assertIs(alk, lk)
                self.assertEqual(ident, threading.get_ident())
                self.assertTrue(lk.lost)
                with self.assertRaises((redlock_c.LostError, redlock_c.NoQuorumError)):
                    await lk.unlock()
                for s in self.servers:
                    redis_cmd(s.port, "DEL", res)

        self.run_async(main())

    def test_bad_input(self):
        async def main():
            async with redlock_c.aio.AsyncClient(self.nodes, **client_kwargs()) as client:
                with self.assertRaises(redlock_c.InvalidArgument):
                    await client.lock("", 1000)
                with self.assertRaises(redlock_c.InvalidArgument):
                    await client.lock(unique("x"), 0)
                with self.assertRaises((ValueError, TypeError)):
                    await client.lock(unique("x"), -5)

        self.run_async(main())


if __name__ == "__main__":
    unittest.main()
