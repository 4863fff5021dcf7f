"""redlock_c.pytest_plugin: a pytest fixture of fake masters.

Registered through the ``pytest11`` entry point, so an installed redlock-c
gives every test suite the ``fake_masters`` fixture: a
redlock_c.testing.FakeMasters(3), stopped after the test::

    def test_lock(fake_masters):
        with redlock_c.Client(fake_masters.nodes, quarantine=False) as c:
            c.lock("job", 10_000).unlock()

Without the installed package, add ``pytest_plugins = ["redlock_c.pytest_plugin"]``
to your conftest.py.  For another count or options, make your own fixture
around FakeMasters(n, tcp=..., virtual_time=...).
"""

import pytest

from .testing import FakeMasters


@pytest.fixture
def fake_masters():
    """Three fake masters (Unix sockets, real time), stopped after the test."""
    with FakeMasters(3) as fakes:
        yield fakes
