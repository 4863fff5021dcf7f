"""redlock_c.testing: fake Redis masters for your own tests, in your process.

No redis-server is needed, and no port unless you ask for one: each fake
master is a small server on a thread of libredlock (include/redlock_testing.h)
that answers what the library sends as Redis does, over a Unix socket in a
private directory.  Its nodes are ordinary URIs, so your code under test
takes them as it takes real ones::

    import pytest
    from redlock_c import Client, LockedError, NoQuorumError
    from redlock_c.testing import FakeMasters

    def test_two_workers_exclude_each_other():
        with FakeMasters(3) as fakes:
            with Client(fakes.nodes, quarantine=False, retry_count=0) as a, \\
                 Client(fakes.nodes, quarantine=False, retry_count=0) as b:
                held = a.lock("report", 10_000)
                with pytest.raises(LockedError):
                    b.trylock("report", 10_000)
                fakes.kill(0)
                fakes.kill(1)
                with pytest.raises(NoQuorumError):
                    b.lock("other", 10_000)

With pytest, the ``fake_masters`` fixture (redlock_c.pytest_plugin, loaded
automatically once the package is installed) gives a FakeMasters(3) per
test.

Faults come on cue: kill(i) (the process dies, its keys are lost),
restart(i) (back empty, uptime 0: a client with quarantine on keeps it out
for max TTL), pause(i) / resume(i) (SIGSTOP / SIGCONT), slow(i, ms),
drop_key(i, key), clock_jump(i, ms), failover(i, lag_ms) (the promoted
replica lacks the last lag_ms of writes), and mode(i, GRANT / REFUSE /
NORMAL) for tests of your own error paths.  With virtual_time=True the
fakes' clocks move only with advance(ms), so a test of a 30 s lease's
expiry takes milliseconds (the client's own validity clock stays real).
"""

import ctypes

from . import _make_error, load_library

NORMAL = 0
GRANT = 1
REFUSE = 2
ALL = 0xFFFFFFFF

_TCP = 0x1
_VIRTUAL_TIME = 0x2

_declared = set()


def _lib():
    lib = load_library()
    if id(lib) in _declared:
        return lib
    c_int, c_uint, c_u32, c_u64, c_vp, c_cp = (ctypes.c_int, ctypes.c_uint, ctypes.c_uint32,
                                               ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p)
    decl = {
        "redlock_testing_start": (c_int, [c_uint, c_uint, ctypes.POINTER(c_vp)]),
        "redlock_testing_stop": (None, [c_vp]),
        "redlock_testing_count": (c_uint, [c_vp]),
        "redlock_testing_uri": (c_cp, [c_vp, c_uint]),
        "redlock_testing_kill": (c_int, [c_vp, c_uint]),
        "redlock_testing_restart": (c_int, [c_vp, c_uint]),
        "redlock_testing_pause": (c_int, [c_vp, c_uint]),
        "redlock_testing_resume": (c_int, [c_vp, c_uint]),
        "redlock_testing_slow": (c_int, [c_vp, c_uint, c_u32]),
        "redlock_testing_drop_key": (c_int, [c_vp, c_uint, c_cp]),
        "redlock_testing_clock_jump": (c_int, [c_vp, c_uint, c_u64]),
        "redlock_testing_failover": (c_int, [c_vp, c_uint, c_u64]),
        "redlock_testing_set_mode": (c_int, [c_vp, c_uint, c_int]),
        "redlock_testing_advance": (c_int, [c_vp, c_u64]),
        "redlock_testing_has_key": (c_int, [c_vp, c_uint, c_cp]),
        "redlock_testing_key_count": (c_int, [c_vp, c_cp]),
        "redlock_testing_commands": (ctypes.c_longlong, [c_vp, c_uint]),
    }
    for name, (restype, argtypes) in decl.items():
        fn = getattr(lib, name, None)
        if fn is None:
            raise OSError("%s has no test kit (%s): rebuild it with the kit (0.1 or later)"
                          % (lib._name, name))
        fn.restype = restype
        fn.argtypes = argtypes
    _declared.add(id(lib))
    return lib


def _check(rc, detail=None):
    """rc itself when it is a count or a flag (>= 0); the error for a code."""
    if rc < 0:
        raise _make_error(rc, detail=detail)
    return rc


def _key(key):
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, bytes) or b"\0" in key:
        raise TypeError("key must be str or bytes without NUL")
    return key


class FakeMasters:
    """n fake masters (1..16), started at once; use as a context manager or
    call stop().  tcp=True listens on 127.0.0.1 ports instead of Unix
    sockets; virtual_time=True freezes the fakes' clocks but for advance()."""

    def __init__(self, n=3, *, tcp=False, virtual_time=False):
        lib = _lib()
        self._lib = lib
        self._kit = None
        kit = ctypes.c_void_p()
        flags = (_TCP if tcp else 0) | (_VIRTUAL_TIME if virtual_time else 0)
        _check(lib.redlock_testing_start(int(n), flags, ctypes.byref(kit)),
               "FakeMasters(%r): 1 to 16 masters" % (n,))
        self._kit = kit
        self.nodes = [lib.redlock_testing_uri(kit, i).decode() for i in range(int(n))]

    def __len__(self):
        return len(self.nodes)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __del__(self):
        self.stop()

    def stop(self):
        """Stops every fake (clients still open see them go down).  Idempotent."""
        kit, self._kit = getattr(self, "_kit", None), None
        if kit:
            self._lib.redlock_testing_stop(kit)

    def _live(self):
        if not self._kit:
            raise ValueError("FakeMasters is stopped")
        return self._kit

    def _call(self, name, i, *args):
        return _check(getattr(self._lib, name)(self._live(), int(i), *args),
                      "%s(%r): index 0..%d, and a master that is up" % (
                          name.replace("redlock_testing_", ""), i, len(self.nodes) - 1))

    def kill(self, i):
        """Master i dies: its connections close, its keys are lost; down until restart(i)."""
        self._call("redlock_testing_kill", i)

    def restart(self, i):
        """Master i comes back empty, with a new run_id and uptime 0."""
        self._call("redlock_testing_restart", i)

    def pause(self, i):
        """SIGSTOP: master i reads and answers nothing until resume(i)."""
        self._call("redlock_testing_pause", i)

    def resume(self, i):
        """SIGCONT: master i runs what waited, in order."""
        self._call("redlock_testing_resume", i)

    def slow(self, i, delay_ms):
        """Every reply of master i comes delay_ms late (0: on time again)."""
        self._call("redlock_testing_slow", i, int(delay_ms))

    def drop_key(self, i, key):
        """Master i loses key (the lock key is key_prefix + resource); True if it existed."""
        return self._call("redlock_testing_drop_key", i, _key(key)) == 1

    def clock_jump(self, i, ms):
        """Master i's clock jumps forward by ms: its keys expire that much sooner."""
        self._call("redlock_testing_clock_jump", i, int(ms))

    def failover(self, i, lag_ms=0):
        """Master i is replaced by its replica, lag_ms behind: the keys written
        in the last lag_ms are missing; clients' failover quarantine applies."""
        self._call("redlock_testing_failover", i, int(lag_ms))

    def mode(self, i, mode):
        """NORMAL, GRANT (every acquisition wins) or REFUSE (every one is
        refused) for master i, or for all with i=ALL."""
        _check(self._lib.redlock_testing_set_mode(self._live(), int(i), int(mode)),
               "mode(%r, %r)" % (i, mode))

    def advance(self, ms):
        """Every fake's clock moves forward by ms; keys whose time is up expire."""
        _check(self._lib.redlock_testing_advance(self._live(), int(ms)))

    def has_key(self, i, key):
        """Whether master i holds key (unexpired)."""
        return self._call("redlock_testing_has_key", i, _key(key)) == 1

    def key_count(self, key):
        """How many masters hold key."""
        return _check(self._lib.redlock_testing_key_count(self._live(), _key(key)))

    def commands(self, i):
        """Commands master i ran since it (re)started."""
        return _check(self._lib.redlock_testing_commands(self._live(), int(i)),
                      "commands(%r)" % (i,))
