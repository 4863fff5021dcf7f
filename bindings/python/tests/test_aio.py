"""Tests of redlock_c.aio (the asyncio API) against real redis-server processes.

Reuses the server harness of test_redlock.py (its own redis-server processes
on free loopback ports, stopped by PID).  Every wait has a deadline
(asyncio.wait_for); nothing sleeps to "see what happens".
"""

import asyncio
import datetime
import os
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import redlock_c  # noqa: E402
import redlock_c.aio  # noqa: E402
from test_redlock import (REDIS_SERVER, client_kwargs, free_port, redis_cmd,  # noqa: E402
                          start_servers, subprocess_env, unique, wait_until)

DEADLINE = 30.0
QUIET_S = 1.0  # how long the masters are watched for a stray command after a cancel


def redis_keys(test, resource):
    return test.keys_on_masters(resource)


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

    def lock_commands(self):
        """Lock commands the masters have run (INFO commandstats: SET, EVAL,
        EVALSHA; commands run by scripts count too)."""
        total = 0
        for s in self.servers:
            info = redis_cmd(s.port, "INFO", "commandstats")
            for name in ("cmdstat_set:calls=", "cmdstat_evalsha:calls=", "cmdstat_eval:calls="):
                at = info.find(name)
                if at >= 0:
                    total += int(info[at + len(name):].split(",", 1)[0])
        return total

    def assert_quiet(self, mark, what, window=QUIET_S):
        """No master runs a lock command for window seconds after mark (the
        window is the test: a stray retry or next attempt would land in it)."""
        deadline = time.monotonic() + window
        while time.monotonic() < deadline:
            now = self.lock_commands()
            self.assertEqual(now, mark, "%s: a master ran a lock command" % what)
            time.sleep(0.02)

    def test_cancel_sends_nothing_more_and_leaves_no_key(self):
        res = unique("aio-cancel-ex")
        events = []
        got = threading.Condition()

        def on_event(ev):  # the library's I/O thread
            with got:
                events.append(ev)
                got.notify_all()

        def canceled():
            return [e for e in events if e.resource == res and e.status == redlock_c.ECANCELED]

        async def main():
            holder_client = redlock_c.Client(self.nodes, **client_kwargs())
            holder = holder_client.lock(res, 30000)
            async with redlock_c.aio.AsyncClient.open(self.nodes, on_event=on_event,
                                                      **client_kwargs()) as client:
                before = self.lock_commands()
                task = asyncio.ensure_future(client.lock(res, 60000, wait_ms=25000))
                # Waiting: its first attempt reached every master and was refused.
                while self.lock_commands() < before + 3:
                    await asyncio.sleep(0.01)
                self.assertFalse(task.done())
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                # The library ended the call as canceled (counted once).
                with got:
                    self.assertTrue(got.wait_for(lambda: canceled(), DEADLINE))
                # The holder lets go: a wait still subscribed would be woken
                # by the release notice and try again.
                holder.unlock()
                self.wait_keys_gone(res)
                self.assert_quiet(self.lock_commands(), "canceled wait")
                self.assertEqual(self.keys_on_masters(res), 0)
                self.assertEqual(len(canceled()), 1)
                stats = client.stats()
                self.assertIsInstance(stats, dict)
            holder_client.close()

        self.run_async(main())

    def test_cancel_lock_many_while_waiting_on_retries(self):
        res = [unique("aio-many-a"), unique("aio-many-b")]

        async def main():
            holder_client = redlock_c.Client(self.nodes, **client_kwargs())
            holder = holder_client.lock(res[1], 30000)
            # Retries without end, 200 ms apart: only a cancel ends the call.
            async with redlock_c.aio.AsyncClient.open(
                    self.nodes, **client_kwargs(retry_count=-1, retry_delay_ms=200)) as client:
                before = self.lock_commands()
                task = asyncio.ensure_future(client.lock_many(res, 10000))
                while self.lock_commands() < before + 3:
                    await asyncio.sleep(0.01)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                # A round already out ends on its own (request timeout), and
                # what it set is released: wait for that, then nothing more.
                wait_until(lambda: redis_keys(self, res[0]) == 0, timeout=DEADLINE,
                           what="the canceled round's partial hold released")
                self.assert_quiet(self.lock_commands(), "canceled lock_many")
                self.assertEqual(self.keys_on_masters(res[0]), 0)
            holder.unlock()
            holder_client.close()

        self.run_async(main())

    def test_idioms(self):
        res = unique("aio-idioms")

        async def main():
            # open() and lock() are async context managers as written.
            async with redlock_c.aio.AsyncClient.open(self.nodes,
                                                      **client_kwargs()) as client:
                async with client.lock(res, datetime.timedelta(seconds=10)) as lk:
                    self.assertTrue(lk.owned())
                    self.assertTrue(lk.locked())
                    self.assertGreater(lk.validity_ms, 5000)  # a timedelta, not 10 ms
                    await lk.extend(20000)  # an int: milliseconds
                    self.assertGreater(lk.validity_ms, 15000)
                    self.assertEqual(self.keys_on_masters(res), 3)
                self.assertTrue(lk.released)
                self.assertFalse(lk.owned())
                self.wait_keys_gone(res)
                # Leaving by an exception releases too, and the exception passes.
                with self.assertRaises(KeyError):
                    async with client.lock_many([res, res + "-2"], 5000) as many:
                        self.assertEqual(many.resources, (res, res + "-2"))
                        raise KeyError("out")
                self.assertTrue(many.released)
                async with client.semaphore_acquire(res + "-sem", 2, 5000) as permit:
                    self.assertIn(":sem:", permit.resource)
                async with client.rwlock_read(res + "-rw", 5000):
                    pass
                async with client.trylock(res, 5000):
                    pass
                # A coroutine too: create_task, wait_for and gather take it.
                task = asyncio.create_task(client.lock(res, 5000))
                lk2 = await asyncio.wait_for(task, DEADLINE)
                await lk2.unlock()
                a, b = await asyncio.gather(client.lock(res + "-a", 5000),
                                            client.lock(res + "-b", 5000))
                await a.unlock()
                await b.unlock()
                # The whole API of Client: elect, stats, last_votes.
                terms = []
                election = await client.elect(res + "-leader", 2000,
                                              on_elected=lambda e, t: terms.append(t))
                async with election:
                    term = await election.wait_elected(timeout=DEADLINE)
                    self.assertIsNotNone(term)
                    self.assertTrue(election.leader)
                self.assertTrue(election.resigned)
                self.assertEqual(terms, [term])  # ran on the loop, before resign returned
                self.assertIn("redlock_", client.stats("prometheus"))
                self.assertIsInstance(client.last_votes(), str)
                with self.assertRaises(redlock_c.InvalidArgument):
                    await client.lock(res, -1)

        self.run_async(main())

    def test_no_quorum_error_carries_the_votes(self):
        async def main():
            down = ["redis://127.0.0.1:%d" % free_port() for _ in range(2)]
            async with redlock_c.aio.AsyncClient.open(
                    [self.nodes[0]] + down,
                    **client_kwargs(connect_timeout_ms=200, retry_count=0)) as client:
                with self.assertRaises(redlock_c.NoQuorumError) as cm:
                    await client.lock(unique("aio-noq"), 5000)
                exc = cm.exception
                self.assertIsNotNone(exc.votes)
                self.assertEqual(exc.detail, exc.votes)
                self.assertIn(exc.votes, str(exc))
                for uri in down:
                    self.assertIn(uri[len("redis://"):], exc.votes)

        self.run_async(main())

    def test_examples_run(self):
        """examples/*.py (type-checked by python_mypy) also work."""
        examples = os.path.join(os.path.dirname(HERE), "examples")
        for name, want in (("sync_lock.py", "leader with term"), ("async_lock.py", "term ")):
            proc = subprocess.run([sys.executable, os.path.join(examples, name)] + self.nodes,
                                  env=subprocess_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, universal_newlines=True,
                                  timeout=DEADLINE * 2)
            self.assertEqual(proc.returncode, 0, proc.stdout)
            self.assertIn(want, proc.stdout)
            self.assertIn("locked orders:42", proc.stdout)

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

    def test_owner_inspect_revoke_bounded_watch(self):
        res = unique("aio-who")
        bounded = unique("aio-bounded")

        async def main():
            async with await redlock_c.aio.AsyncClient.open(
                    self.nodes, **client_kwargs(owner="aio-worker", fencing=True)) as client:
                lk = await client.lock(res, 5000)
                self.assertEqual(lk.owner, "aio-worker")
                lost = asyncio.Event()
                lk.watch(lambda _lk: lost.set())
                view = await client.inspect(res)
                self.assertTrue(view["held"])
                self.assertEqual(view["owner"], "aio-worker")
                fence = await client.revoke(res)
                self.assertGreater(fence, lk.fence)
                await asyncio.wait_for(lost.wait(), DEADLINE)  # on the event loop
                self.assertEqual(lk.lost_reason, redlock_c.LOST_EXPIRED)
                self.assertFalse((await client.inspect(res))["held"])
                with self.assertRaises(redlock_c.LostError):
                    await lk.unlock()

                lk = await client.lock(bounded, 2000)
                ended = asyncio.Event()
                lk.watch(lambda _lk: ended.set(), max_hold_ms=3000)
                await asyncio.wait_for(ended.wait(), DEADLINE)
                self.assertEqual(lk.lost_reason, redlock_c.LOST_MAX_HOLD)
                await lk.unlock()  # no error: the bound ended it on purpose
                while (await client.inspect(bounded))["held"]:
                    await asyncio.sleep(0.01)  # bounded by run_async's deadline
                await (await client.trylock(bounded, 5000)).unlock()
                with self.assertRaises(redlock_c.InvalidArgument):
                    await client.inspect(res, "nope")

        self.run_async(main())

    def test_leader_and_observe_on_the_event_loop(self):
        name = unique("aio-observe")

        async def main():
            async with await redlock_c.aio.AsyncClient.open(
                    self.nodes, **client_kwargs(owner="aio-cand")) as client:
                loop_thread = threading.get_ident()
                views = asyncio.Queue()
                threads = set()

                def on_change(view):
                    threads.add(threading.get_ident())
                    views.put_nowait(view)

                async with client.observe(name, on_change) as obs:
                    election = await client.elect(name, 5000)
                    term = await election.wait_elected(timeout=DEADLINE)
                    while True:  # bounded by run_async's deadline
                        view = await views.get()
                        if view.owner == "aio-cand" and view.term == term:
                            break
                    self.assertEqual((await client.leader(name)).term, term)
                    await election.resign()
                    while (await views.get()).state != redlock_c.LEADER_NONE:
                        pass
                self.assertTrue(obs.stopped)
                self.assertEqual(threads, {loop_thread})

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
