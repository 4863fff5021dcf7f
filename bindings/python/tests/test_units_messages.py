"""Units of the *_ms arguments, __version__, and what errors say: the max-TTL
refusal names the limit and the option that raises it, a refused URI never
shows its password, and a wait that ends without a quorum is told apart from
one that ends on a lock held by another.

Against real redis-server processes (the harness of test_redlock.py).
"""

import asyncio
import datetime
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from test_redlock import client_kwargs, free_port, start_servers, unique  # noqa: E402

import redlock_c  # noqa: E402
import redlock_c.aio  # noqa: E402


class TestUnits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.servers = start_servers(3)
        cls.nodes = [s.uri for s in cls.servers]

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.stop()

    def setUp(self):
        self.client = redlock_c.Client(self.nodes, **client_kwargs())
        self.addCleanup(self.client.close)

    def test_float_ms_is_refused_naming_the_parameter(self):
        # 4000 / 2 is 2000.0: once read as 2000 seconds.
        c, res = self.client, unique("units")
        calls = {
            "ttl_ms": [lambda: c.lock(res, 1500.0), lambda: c.trylock(res, 10.0),
                       lambda: c.lock_many([res], 2.5), lambda: c.rwlock_read(res, 1.0),
                       lambda: c.rwlock_write(res, 1.0),
                       lambda: c.semaphore_acquire(res, 2, 1.0), lambda: c.elect(res, 5.0)],
            "wait_ms": [lambda: c.lock(res, 1000, wait_ms=4000 / 2),
                        lambda: c.semaphore_acquire(res, 2, 1000, wait_ms=0.5),
                        lambda: c.rwlock_read(res, 1000, wait_ms=1.0)],
        }
        for name, fns in calls.items():
            for fn in fns:
                with self.assertRaises(TypeError) as cm:
                    fn()
                self.assertIn(name, str(cm.exception))
                self.assertIn("milliseconds", str(cm.exception))
        for kw in ("retry_delay_ms", "retry_jitter_ms", "connect_timeout_ms",
                   "request_timeout_ms", "max_ttl_ms"):
            with self.assertRaises(TypeError) as cm:
                redlock_c.Client(self.nodes, **{kw: 100.0})
            self.assertIn(kw, str(cm.exception))
        lk = c.lock(res, 5000)
        try:
            with self.assertRaises(TypeError) as cm:
                lk.extend(20.0)
            self.assertIn("ttl_ms", str(cm.exception))
            self.assertTrue(lk.owned())
            # An int is milliseconds; a timedelta carries its unit.
            self.assertLessEqual(lk.validity_ms, 5000)
            lk.extend(datetime.timedelta(seconds=20))
            self.assertGreater(lk.validity_ms, 15000)
        finally:
            lk.unlock()
        with c.lock(res, datetime.timedelta(milliseconds=2500), wait_ms=4000 // 2) as lk:
            self.assertGreater(lk.validity_ms, 1000)
            self.assertLessEqual(lk.validity_ms, 2500)

    def test_async_client_refuses_floats_too(self):
        async def main():
            async with redlock_c.aio.AsyncClient.open(self.nodes, **client_kwargs()) as ac:
                res = unique("units-aio")
                with self.assertRaises(TypeError) as cm:
                    await ac.lock(res, 1000, wait_ms=4000 / 2)
                self.assertIn("wait_ms", str(cm.exception))
                async with ac.lock(res, 2000) as lk:
                    with self.assertRaises(TypeError):
                        await lk.extend(20.0)
        asyncio.run(asyncio.wait_for(main(), 60))

    def test_version(self):
        v = redlock_c.__version__
        self.assertIsInstance(v, str)
        self.assertRegex(v, r"^\d+\.\d+\.\d+")
        # A source tree's package is the C library's version.
        self.assertEqual(v, redlock_c.version())
        from redlock_c import __version__
        self.assertEqual(__version__, v)


class TestMaxTtlMessage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.servers = start_servers(3)
        cls.nodes = [s.uri for s in cls.servers]

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.stop()

    def check_message(self, exc, ttl, limit):
        text = str(exc)
        self.assertIsInstance(exc, redlock_c.InvalidArgument)
        self.assertIsInstance(exc, ValueError)
        self.assertIn("%d ms is above the max TTL %d ms" % (ttl, limit), text)
        self.assertIn("max_ttl_ms=", text)

    def test_default_max_ttl(self):
        with redlock_c.Client(self.nodes, **client_kwargs()) as c:
            for fn in (lambda: c.lock(unique("ttl"), 120000),
                       lambda: c.trylock(unique("ttl"), 120000),
                       lambda: c.lock_many([unique("ttl")], 120000),
                       lambda: c.semaphore_acquire(unique("ttl"), 2, 120000),
                       lambda: c.rwlock_write(unique("ttl"), 120000),
                       lambda: c.elect(unique("ttl"), 120000)):
                with self.assertRaises(redlock_c.InvalidArgument) as cm:
                    fn()
                self.check_message(cm.exception, 120000, 60000)

    def test_raised_max_ttl_and_extend(self):
        with redlock_c.Client(self.nodes, **client_kwargs(max_ttl_ms=30000)) as c:
            with c.lock(unique("ttl"), 30000) as lk:  # the limit itself is allowed
                with self.assertRaises(redlock_c.InvalidArgument) as cm:
                    lk.extend(30001)
                self.check_message(cm.exception, 30001, 30000)
                self.assertTrue(lk.owned())
        with redlock_c.Client(self.nodes, **client_kwargs(max_ttl_ms=180000)) as c:
            with c.lock(unique("ttl"), 120000) as lk:
                self.assertGreater(lk.validity_ms, 60000)

    def test_async_client(self):
        async def main():
            async with redlock_c.aio.AsyncClient.open(self.nodes, **client_kwargs()) as ac:
                with self.assertRaises(redlock_c.InvalidArgument) as cm:
                    await ac.lock(unique("ttl"), 90000)
                self.check_message(cm.exception, 90000, 60000)
        asyncio.run(asyncio.wait_for(main(), 60))


class TestRefusedUriRedaction(unittest.TestCase):
    SECRETS = ("s3cr/et@x", "pa@ss/w0rd", "sentpw/@z")

    def refused(self, uri):
        with self.assertRaises(redlock_c.InvalidArgument) as cm:
            redlock_c.Client([uri], quarantine=False)
        text = str(cm.exception) + repr(cm.exception) + repr(cm.exception.args)
        for secret in self.SECRETS:
            for part in re.split(r"[/@]", secret):
                if len(part) >= 3:
                    self.assertNotIn(part, text, "%r shows the password: %s" % (uri, text))
        self.assertIn("***", text)
        return text

    def test_password_with_slash_and_at(self):
        text = self.refused("redis://user:s3cr/et@x@127.0.0.1:notaport")
        self.assertIn("127.0.0.1", text)
        self.refused("redis://:pa@ss/w0rd@127.0.0.1:6379?bogus_param=1")

    def test_sentinel_password(self):
        text = self.refused("redis-sentinel://127.0.0.1:1/mymaster?sentinel_password=sentpw/@z"
                            "&bogus_param=1")
        self.assertIn("sentinel_password=***", text)


class TestNoQuorumWait(unittest.TestCase):
    """A wait that ends because too few masters answer is a NoQuorumError,
    never a WaitTimeout: a program that skips its work while the lock is busy
    must not take an outage for a busy lock."""

    @classmethod
    def setUpClass(cls):
        cls.servers = start_servers(3)
        cls.nodes = [s.uri for s in cls.servers]

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.stop()

    def test_busy_is_wait_timeout_and_masters_down_is_no_quorum(self):
        res = unique("held")
        kw = client_kwargs(retry_delay_ms=20, retry_jitter_ms=20)
        with redlock_c.Client(self.nodes, **kw) as a, redlock_c.Client(self.nodes, **kw) as b:
            with a.lock(res, 10000):
                with self.assertRaises(redlock_c.WaitTimeout) as cm:
                    b.lock(res, 1000, wait_ms=300)
                self.assertNotIsInstance(cm.exception, redlock_c.NoQuorumError)

        # One master of three answers: no quorum for as long as the wait runs.
        nodes = [self.nodes[0], "redis://127.0.0.1:%d" % free_port(),
                 "redis://127.0.0.1:%d" % free_port()]
        kw = client_kwargs(retry_delay_ms=20, retry_jitter_ms=20, connect_timeout_ms=200,
                           request_timeout_ms=200)
        with redlock_c.Client(nodes, **kw) as c:
            for fn in (lambda: c.lock(unique("nq"), 1000, wait_ms=400),
                       lambda: c.semaphore_acquire(unique("nq"), 2, 1000, wait_ms=400),
                       lambda: c.rwlock_read(unique("nq"), 1000, wait_ms=400),
                       lambda: c.rwlock_write(unique("nq"), 1000, wait_ms=400)):
                with self.assertRaises(redlock_c.NoQuorumError) as cm:
                    fn()
                self.assertNotIsInstance(cm.exception, redlock_c.WaitTimeout)
                self.assertTrue(cm.exception.votes)

        async def main():
            async with redlock_c.aio.AsyncClient.open(nodes, **kw) as ac:
                with self.assertRaises(redlock_c.NoQuorumError):
                    await ac.lock(unique("nq"), 1000, wait_ms=400)
        asyncio.run(asyncio.wait_for(main(), 60))


if __name__ == "__main__":
    unittest.main()
