"""Run by wheel_test.sh with a venv's interpreter, away from the source tree:
the installed redlock_c loads the libredlock it carries (no environment
variable), and takes and releases a real lock, blocking and with asyncio,
on the redis-server at 127.0.0.1:PORT; then the test kit a user's tests get
from the wheel: FakeMasters (two clients exclude each other, two fakes
killed give NoQuorumError) and the pytest fixture's entry point.

    python wheel_check.py PORT [bundled|any]

bundled (the default): the library must be the package's own copy.
"""

import asyncio
import datetime
import os
import socket
import sys


def redis_exists(port, key):
    """EXISTS key over a raw connection: the number of keys (0 or 1)."""
    k = key.encode()
    req = b"*2\r\n$6\r\nEXISTS\r\n$%d\r\n%s\r\n" % (len(k), k)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(req)
        reply = s.makefile("rb").readline()
    assert reply.startswith(b":"), reply
    return int(reply[1:])


def check_test_kit(where):
    """The test kit as installed: its stubs, the pytest11 entry point that
    gives pytest the fake_masters fixture, and FakeMasters itself."""
    import importlib.metadata
    import redlock_c
    from redlock_c.testing import FakeMasters

    for name in ("testing.pyi", "pytest_plugin.py"):
        assert os.path.isfile(os.path.join(where, name)), name
    eps = importlib.metadata.entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    plugins = {ep.name: ep.value for ep in group}
    assert plugins.get("redlock_c") == "redlock_c.pytest_plugin", plugins
    with FakeMasters(3) as fakes:
        kw = dict(quarantine=False, retry_count=0)
        with redlock_c.Client(fakes.nodes, **kw) as a, redlock_c.Client(fakes.nodes, **kw) as b:
            held = a.lock("wheel-kit", 10000)
            try:
                b.trylock("wheel-kit", 10000)
                raise AssertionError("the second client got a held lock")
            except redlock_c.LockedError:
                pass
            held.unlock()
            fakes.kill(0)
            fakes.kill(1)
            try:
                b.lock("wheel-kit", 10000)
                raise AssertionError("a lock with two fakes of three down")
            except redlock_c.NoQuorumError:
                pass


def main():
    port = int(sys.argv[1])
    want = sys.argv[2] if len(sys.argv) > 2 else "bundled"
    assert sys.version_info >= (3, 8), sys.version
    assert "REDLOCK_LIBRARY" not in os.environ
    import redlock_c
    import redlock_c.aio

    where = os.path.dirname(os.path.abspath(redlock_c.__file__))
    assert "site-packages" in where, where
    for name in ("py.typed", "__init__.pyi", "aio.pyi"):
        assert os.path.isfile(os.path.join(where, name)), name
    lib = redlock_c.load_library()
    if want == "bundled":
        assert lib._name == os.path.join(where, "libredlock.so.0"), lib._name
    nodes = ["redis://127.0.0.1:%d" % port]
    key = "wheel-check-%d-%d" % (sys.version_info[0], sys.version_info[1])

    with redlock_c.Client(nodes, quarantine=False, fencing=True) as client:
        with client.lock(key, 5000) as lk:  # an int: milliseconds
            assert lk.owned() and lk.fence > 0, lk
            assert redis_exists(port, key) == 1
            lk.extend(datetime.timedelta(seconds=10))
            assert lk.validity_ms > 5000, lk.validity_ms
        assert not lk.owned()
        assert redis_exists(port, key) == 0  # one master: the unlock waited for it

    async def run_async():
        async with redlock_c.aio.AsyncClient.open(nodes, quarantine=False) as aclient:
            async with aclient.lock(key, 10000) as alk:
                assert alk.owned()
                assert redis_exists(port, key) == 1
            assert redis_exists(port, key) == 0

    asyncio.run(run_async())
    check_test_kit(where)
    print("OK %s: %s, libredlock %s from %s" % (sys.executable, sys.version.split()[0],
                                              redlock_c.version(), lib._name))


if __name__ == "__main__":
    main()
