"""The test kit as a pytest user meets it: the fake_masters fixture
(redlock_c.pytest_plugin) and FakeMasters, with no redis-server.  Run by
tests/kit_pytest.sh (ctest python_kit_pytest) under pytest, not unittest.
"""

import pytest

import redlock_c
from redlock_c.testing import FakeMasters


def _client(nodes):
    return redlock_c.Client(nodes, quarantine=False, retry_count=0)


def test_fixture_two_clients_exclude_each_other(fake_masters):
    assert len(fake_masters.nodes) == 3
    with _client(fake_masters.nodes) as a, _client(fake_masters.nodes) as b:
        held = a.lock("job", 10_000)
        with pytest.raises(redlock_c.LockedError):
            b.trylock("job", 10_000)
        fake_masters.kill(0)
        fake_masters.kill(1)
        with pytest.raises(redlock_c.NoQuorumError):
            b.lock("other", 10_000)
        with pytest.raises(redlock_c.RedlockError):
            held.unlock()


def test_fixture_is_fresh_per_test(fake_masters):
    # The previous test killed two masters of its own kit: this one's are up and empty.
    assert fake_masters.key_count("job") == 0
    with _client(fake_masters.nodes) as a:
        a.lock("job", 10_000).unlock()


def test_virtual_time_lease():
    with FakeMasters(3, virtual_time=True) as fakes:
        with _client(fakes.nodes) as a, _client(fakes.nodes) as b:
            a.lock("lease", 30_000)
            fakes.advance(30_001)
            b.trylock("lease", 30_000).unlock()
