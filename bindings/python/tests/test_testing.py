"""Tests of redlock_c.testing (FakeMasters): the test kit, with no
redis-server.  Run by the python_binding ctest with the other binding tests.

Asserts: two clients exclude each other on FakeMasters(3); killing two
fakes gives NoQuorumError and restarted ones vote again; virtual time lets a
30 s lease lapse at once; pause/resume, slow, drop_key, failover and the
modes act as documented; fencing, semaphores and read-write locks work on
the fakes; bad indexes and a stopped kit raise clear errors.
"""

import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
if PKG_ROOT not in sys.path:
    sys.path.insert(0, PKG_ROOT)

import redlock_c  # noqa: E402
from redlock_c.testing import ALL, GRANT, NORMAL, REFUSE, FakeMasters  # noqa: E402

TTL = 10_000


def client(fakes, **kw):
    # A restarted fake is up 0 s: the restart quarantine would keep it out.
    kw.setdefault("quarantine", False)
    kw.setdefault("retry_count", 0)
    return redlock_c.Client(fakes.nodes, **kw)


class FakeMastersTest(unittest.TestCase):
    def test_exclusion_and_no_quorum(self):
        with FakeMasters(3) as fakes:
            self.assertEqual(len(fakes.nodes), 3)
            self.assertTrue(fakes.nodes[0].startswith("unix://"))
            with client(fakes) as a, client(fakes) as b:
                held = a.lock("job", TTL)
                self.assertEqual(fakes.key_count("job"), 3)
                with self.assertRaises(redlock_c.LockedError):
                    b.trylock("job", TTL)
                held.unlock()
                b.trylock("job", TTL).unlock()
                fakes.kill(0)
                fakes.kill(1)
                with self.assertRaises(redlock_c.NoQuorumError):
                    b.lock("job", TTL)
                fakes.restart(0)
                fakes.restart(1)
                # The client reconnects after its backoff: wait for it, with a deadline.
                deadline = time.monotonic() + 10
                while True:
                    try:
                        b.lock("job", TTL, wait_ms=200).unlock()
                        break
                    except redlock_c.NoQuorumError:
                        self.assertLess(time.monotonic(), deadline)

    def test_virtual_time(self):
        with FakeMasters(3, virtual_time=True) as fakes:
            with client(fakes) as a, client(fakes) as b:
                held = a.lock("lease", 30_000)
                fakes.advance(29_000)
                self.assertEqual(fakes.key_count("lease"), 3)
                fakes.advance(1_001)
                self.assertEqual(fakes.key_count("lease"), 0)
                other = b.trylock("lease", 30_000)
                with self.assertRaises(redlock_c.LostError):
                    held.extend(30_000)  # b holds it now
                other.unlock()

    def test_faults(self):
        with FakeMasters(3) as fakes:
            with client(fakes) as a:
                fakes.pause(2)
                held = a.lock("p", TTL)  # two of three decide
                self.assertTrue(fakes.has_key(0, "p"))
                self.assertFalse(fakes.has_key(2, "p"))
                fakes.resume(2)
                fakes.slow(1, 20)
                held.extend(TTL)
                fakes.slow(1, 0)
                self.assertTrue(fakes.drop_key(0, "p"))
                self.assertFalse(fakes.drop_key(0, "p"))
                self.assertEqual(fakes.key_count("p"), 2)
                fakes.failover(1, lag_ms=60_000)  # the replica lacks the key
                self.assertFalse(fakes.has_key(1, "p"))
                fakes.clock_jump(2, 3_600_000)  # its keys expire
                self.assertEqual(fakes.key_count("p"), 0)
                self.assertGreater(fakes.commands(0), 0)

    def test_modes(self):
        with FakeMasters(3, tcp=True) as fakes:
            self.assertTrue(fakes.nodes[0].startswith("redis://127.0.0.1:"))
            with client(fakes) as a, client(fakes) as b:
                fakes.mode(ALL, GRANT)
                first = a.lock("m", TTL)
                second = b.trylock("m", TTL)  # both hold it: the kit says so
                first.unlock()
                second.unlock()
                fakes.mode(ALL, REFUSE)
                with self.assertRaises(redlock_c.LockedError):
                    a.trylock("m", TTL)
                fakes.mode(ALL, NORMAL)
                a.trylock("m", TTL).unlock()

    def test_primitives(self):
        with FakeMasters(3) as fakes:
            with client(fakes, fencing=True) as a, client(fakes, fencing=True) as b:
                first = a.lock("f", TTL)
                f1 = first.fence
                first.unlock()
                second = b.lock("f", TTL)
                self.assertGreater(second.fence, f1)
                second.unlock()
                p1 = a.semaphore_acquire("pool", 2, TTL)
                p2 = b.semaphore_acquire("pool", 2, TTL)
                with self.assertRaises(redlock_c.LockedError):
                    b.semaphore_acquire("pool", 2, TTL)
                p1.unlock()
                p2.unlock()
                r = a.rwlock_read("rw", TTL)
                with self.assertRaises(redlock_c.LockedError):
                    b.rwlock_write("rw", TTL)
                r.unlock()
                b.rwlock_write("rw", TTL).unlock()

    def test_bad_input(self):
        with self.assertRaises(redlock_c.InvalidArgument):
            FakeMasters(0)
        with self.assertRaises(redlock_c.InvalidArgument):
            FakeMasters(17)
        fakes = FakeMasters(1)
        with self.assertRaises(redlock_c.InvalidArgument):
            fakes.kill(1)
        with self.assertRaises(TypeError):
            fakes.drop_key(0, 5)
        fakes.kill(0)
        with self.assertRaises(redlock_c.InvalidArgument):
            fakes.pause(0)  # down
        fakes.stop()
        fakes.stop()  # idempotent
        with self.assertRaises(ValueError):
            fakes.kill(0)


class FakeMastersExampleTest(unittest.TestCase):
    """examples/fake_masters.py (type-checked by python_mypy) runs and prints each outcome."""

    def test_example(self):
        import subprocess
        path = os.path.join(PKG_ROOT, "examples", "fake_masters.py")
        env = dict(os.environ, PYTHONPATH=PKG_ROOT)
        proc = subprocess.run([sys.executable, path], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        for want in ("first worker: ran", "while another holds it: busy",
                     "after its lease ran out: ran", "two masters of three down: outage",
                     "jobs run: 2"):
            self.assertIn(want, proc.stdout)


if __name__ == "__main__":
    unittest.main()
