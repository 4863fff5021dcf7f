"""Tests of the redlock Python binding against real redis-server processes.

Each test class starts its own redis-server processes on free loopback ports
(`redis-server --port P --bind 127.0.0.1 --save '' --appendonly no`), waits
until they answer PING (raw socket, with a deadline) and stops them by PID.
Clients use quarantine=False because the servers are fresh.  Checks that
could crash the interpreter (garbage collection of held locks, use after
close, close racing other threads, exit with open clients) run in a
subprocess.  Needs libredlock (REDLOCK_LIBRARY) and redis-server on PATH, or
the server program named by REDLOCK_TEST_SERVER (a name on PATH or a path,
e.g. valkey-server), as the C tests' harness does.

Run: REDLOCK_LIBRARY=/path/libredlock.so PYTHONPATH=bindings/python \
     python3 -m unittest discover -s bindings/python/tests -v
"""

import ctypes
import gc
import os
import pickle
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
if PKG_ROOT not in sys.path:
    sys.path.insert(0, PKG_ROOT)

import redlock_c  # noqa: E402

# The library's names on the masters (redlock.h), asked of the library.
RELEASE_CHANNEL_PREFIX = redlock_c.load_library().redlock_constant_string(
    b"REDLOCK_RELEASE_CHANNEL_PREFIX").decode()
FENCE_KEY_PREFIX = redlock_c.load_library().redlock_constant_string(
    b"REDLOCK_FENCE_KEY_PREFIX").decode()

def _server_program():
    """REDLOCK_TEST_SERVER (a name on PATH or a path), else redis-server.
    A server asked for by name that is missing is an error, not a skip."""
    name = os.environ.get("REDLOCK_TEST_SERVER")
    if not name:
        return shutil.which("redis-server")
    path = os.path.abspath(name) if os.sep in name else shutil.which(name)
    if path is None or not os.access(path, os.X_OK):
        raise RuntimeError("REDLOCK_TEST_SERVER=%s: not found or not executable" % name)
    return path


REDIS_SERVER = _server_program()
START_DEADLINE = 30.0  # the machine may be loaded: generous
SUBPROCESS_TIMEOUT = 180


# ---- redis-server harness ----------------------------------------------------------------

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        return RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode("utf-8", "replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise ValueError("bad reply %r" % line)


def redis_cmd(port, *args, timeout=10.0):
    """One command over a fresh raw connection; returns the parsed reply."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"".join(parts))
        with s.makefile("rb") as f:
            return _read_reply(f)


class RedisServer:
    """One redis-server process on a free loopback port."""

    def __init__(self):
        self.proc = None
        self.port = None

    def start(self):
        last = None
        for _ in range(5):  # a free port can be taken before redis binds it
            port = free_port()
            proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_ping(proc, port):
                self.proc, self.port = proc, port
                return self
            last = port
            self._stop(proc)
        raise RuntimeError("redis-server did not start (last port %s)" % last)

    @staticmethod
    def _wait_ping(proc, port):
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            try:
                # ours, not a foreign server that took the port first
                info = redis_cmd(port, "INFO", "server", timeout=2.0)
                if isinstance(info, str) and ("process_id:%d\r\n" % proc.pid) in info:
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.02)  # poll interval
        return False

    @staticmethod
    def _stop(proc):
        if proc.poll() is None:
            proc.terminate()  # by PID (Popen), never by name
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)

    def stop(self):
        if self.proc is not None:
            self._stop(self.proc)
            self.proc = None

    @property
    def uri(self):
        return "redis://127.0.0.1:%d" % self.port


def start_servers(n):
    servers = []
    try:
        for _ in range(n):
            servers.append(RedisServer().start())
    except BaseException:
        for s in servers:
            s.stop()
        raise
    return servers


def wait_until(pred, timeout=20.0, interval=0.01, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(interval)


def unique(name):
    return "%s-%s" % (name, uuid.uuid4().hex[:12])


def client_kwargs(**extra):
    kw = dict(quarantine=False, retry_count=2, retry_delay_ms=50, retry_jitter_ms=50,
              connect_timeout_ms=3000, request_timeout_ms=1000)
    kw.update(extra)
    return kw


def subprocess_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_ROOT + (os.pathsep + env["PYTHONPATH"]
                                    if env.get("PYTHONPATH") else "")
    if redlock_c._lib is not None:
        env["REDLOCK_LIBRARY"] = redlock_c._lib._name
    return env


def run_script(test, body, *args):
    """Runs body in a fresh interpreter; it must print OK and exit 0."""
    script = textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", script] + [str(a) for a in args],
                          env=subprocess_env(), capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT)
    msg = "exit %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, proc.stdout, proc.stderr)
    test.assertEqual(proc.returncode, 0, msg)
    test.assertIn("OK", proc.stdout, msg)
    return proc


# ---- tests that need no server ----------------------------------------------------------------

class TestModule(unittest.TestCase):
    def test_version(self):
        v = redlock_c.version()
        self.assertRegex(v, r"^0\.\d+\.\d+")

    def test_error_names(self):
        self.assertEqual(redlock_c.err_name(redlock_c.ELOCKED), "REDLOCK_ELOCKED")
        self.assertEqual(redlock_c.err_name(-1000), "REDLOCK_UNKNOWN")
        self.assertIn("invalid", redlock_c.strerror(redlock_c.EINVAL))

    def test_error_mapping(self):
        cases = {
            redlock_c.EINVAL: redlock_c.InvalidArgument, redlock_c.ENOMEM: redlock_c.NoMemoryError,
            redlock_c.ELOCKED: redlock_c.LockedError, redlock_c.ENOQUORUM: redlock_c.NoQuorumError,
            redlock_c.EEXPIRED: redlock_c.ExpiredError, redlock_c.ELOST: redlock_c.LostError,
            redlock_c.ETIMEDOUT: redlock_c.WaitTimeout, redlock_c.ECANCELED: redlock_c.CanceledError,
            redlock_c.ECLOSED: redlock_c.ClosedError, redlock_c.EWOULDBLOCK: redlock_c.WouldBlockError,
            redlock_c.EIO: redlock_c.RedlockIOError, redlock_c.ENOTSUP: redlock_c.NotSupportedError,
            redlock_c.EFORKED: redlock_c.ForkedError,
        }
        for code, cls in cases.items():
            err = redlock_c._make_error(code)
            self.assertIs(type(err), cls)
            self.assertIsInstance(err, redlock_c.RedlockError)
            self.assertEqual(err.code, code)
            self.assertEqual(err.name, redlock_c.err_name(code))
            self.assertEqual(err.message, redlock_c.strerror(code))
            self.assertEqual(err.args, (code, err.name, err.message))
            self.assertIn(err.name, str(err))
        self.assertIs(type(redlock_c._make_error(-99)), redlock_c.RedlockError)
        self.assertIsNone(redlock_c._make_error(redlock_c.ENOQUORUM).votes)
        self.assertIsInstance(redlock_c.InvalidArgument(redlock_c.EINVAL), ValueError)

    def test_votes_in_message(self):
        held = "lost (held): 127.0.0.1:7001=refused 127.0.0.1:7002=refused"
        err = redlock_c._make_error(redlock_c.ELOCKED, votes=held)
        self.assertEqual(err.votes, held)
        self.assertIsNone(err.detail)  # short: the refusals say nothing new
        self.assertNotIn("refused", str(err))
        down = "lost (no quorum): 127.0.0.1:7001=down 127.0.0.1:7002=OK"
        err = redlock_c._make_error(redlock_c.ENOQUORUM, votes=down)
        self.assertEqual(err.detail, down)
        self.assertTrue(str(err).endswith(": " + down), str(err))
        quarantined = ("lost (held): 127.0.0.1:7001=quarantined (restart quarantine: 4 ms left)"
                       " 127.0.0.1:7002=refused 127.0.0.1:7003=refused")
        err = redlock_c._make_error(redlock_c.ELOCKED, votes=quarantined)
        self.assertIn("ms left", str(err))
        copy = pickle.loads(pickle.dumps(err))
        self.assertIs(type(copy), redlock_c.LockedError)
        self.assertEqual((copy.votes, str(copy)), (quarantined, str(err)))
        self.assertIsInstance(redlock_c.WaitTimeout(redlock_c.ETIMEDOUT), TimeoutError)

    def test_constants_match_library(self):
        # The module's constants are written in Python (needed at import);
        # the library's table is the source they must agree with.
        lib = redlock_c.load_library()
        self.assertEqual(redlock_c._check_constants(lib), "")
        for k in redlock_c._ERROR_CONSTANTS + redlock_c._OTHER_CONSTANTS:
            self.assertIn(k, redlock_c.__all__)
            self.assertEqual(getattr(redlock_c, k), redlock_c._lib_constant(lib, "REDLOCK_" + k), k)

    def test_error_table_from_library(self):
        # Every code the library has is a module constant with its own
        # exception class, and name/message are the library's.
        table = redlock_c._error_table()
        self.assertEqual(len(table), redlock_c.load_library().redlock_err_count())
        error_constants = {getattr(redlock_c, k): k for k in redlock_c._ERROR_CONSTANTS if k != "OK"}
        self.assertEqual(sorted(code for code, _, _ in table), sorted(error_constants))
        classes = set()
        for code, name, message in table:
            self.assertEqual(name, "REDLOCK_" + error_constants[code])
            err = redlock_c._make_error(code)
            self.assertIsNot(type(err), redlock_c.RedlockError, name)
            self.assertEqual(type(err).code, code)
            classes.add(type(err))
            self.assertEqual((err.name, err.message), (name, message))
            self.assertEqual(redlock_c.strerror(code), message)
        self.assertEqual(len(classes), len(table))

    def test_defaults_from_library(self):
        # A setter's partner values left out keep the library's defaults:
        # the binding reads them from a fresh options object.
        lib = redlock_c.load_library()
        opts = lib.redlock_options_new()
        try:
            c, d, j = ctypes.c_int(-5), ctypes.c_uint32(), ctypes.c_uint32()
            self.assertEqual(lib.redlock_options_get_retry(opts, ctypes.byref(c), ctypes.byref(d),
                                                           ctypes.byref(j)), 0)
            self.assertGreaterEqual(c.value, 0)
            self.assertGreater(d.value, 0)
            ct, rt = ctypes.c_uint32(), ctypes.c_uint32()
            self.assertEqual(lib.redlock_options_get_timeouts(opts, ctypes.byref(ct),
                                                              ctypes.byref(rt)), 0)
            self.assertGreater(ct.value, 0)
            self.assertGreater(rt.value, 0)
        finally:
            lib.redlock_options_free(opts)
        for kwargs in ({"retry_count": 0}, {"retry_delay_ms": 5}, {"connect_timeout_ms": 50},
                       {"request_timeout_ms": 50}):
            with redlock_c.Client(["redis://127.0.0.1:1"], quarantine=False, **kwargs) as client:
                self.assertFalse(client.closed)

    def test_bad_client_arguments(self):
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client([])
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client(["http://127.0.0.1:1"])
        if not redlock_c.tls_supported():
            with self.assertRaises(redlock_c.NotSupportedError):
                redlock_c.Client(["rediss://127.0.0.1:1"])
            with self.assertRaises(redlock_c.NotSupportedError):
                redlock_c.Client(["redis://127.0.0.1:1"], tls_verify=False)
        with self.assertRaises(TypeError):
            redlock_c.Client("redis://127.0.0.1:1")
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client(["redis://127.0.0.1:1"], drift_factor=0.6)
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client(["redis://127.0.0.1:1"], request_timeout_ms=0)
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client(["redis://127.0.0.1:1"], retry_count=-2)
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client(["redis://127.0.0.1:1"], key_prefix="x" * 300)
        with self.assertRaises(ValueError):  # InvalidArgument is a ValueError
            redlock_c.Client(["redis://127.0.0.1:1"], max_ttl_ms=-5)

    def test_voter_uris(self):
        """Sentinel and cluster voters and durability acks (docs/deployments.md) are
        accepted at construction (masters that do not answer are retried in
        the background); a sentinel URI without the master's name is
        refused, saying so."""
        for uri in ("redis-sentinel://127.0.0.1:26379/mymaster?wait=1&sentinel_user=u"
                    "&sentinel_password=p",
                    "redis-cluster://127.0.0.1:7000,127.0.0.1:7001?wait=1",
                    "redis://127.0.0.1:6379/0?waitaof=1,0&wait_ms=100"):
            with redlock_c.Client([uri], quarantine=False, connect_timeout_ms=50) as client:
                self.assertFalse(client.closed)
        with self.assertRaises(redlock_c.InvalidArgument) as cm:
            redlock_c.Client(["redis-sentinel://h/"])
        self.assertIn("needs the master's name", str(cm.exception))
        with self.assertRaises(redlock_c.InvalidArgument) as cm:
            redlock_c.Client(["redis-sentinel://u:secret-pw@h/"])
        self.assertNotIn("secret-pw", str(cm.exception))

    def test_bad_uri_reported_to_log(self):
        seen = []
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client(["redis://127.0.0.1:99999"], log=lambda lvl, msg: seen.append(msg))
        self.assertTrue(seen, "the reason for a refused URI goes to the log callback")


# ---- TLS (rediss://) -------------------------------------------------------------------------

MAKE_CERTS = os.path.join(PKG_ROOT, "..", "..", "tests", "tls", "make_certs.sh")


class TlsRedisServer(RedisServer):
    """redis-server with a TLS port for the client and a plain one for the
    test's own checks (readiness, reading keys)."""

    def __init__(self, certs, auth_clients):
        super().__init__()
        self.certs, self.auth_clients, self.tls_port = certs, auth_clients, None

    def start(self):
        last = None
        for _ in range(5):
            port, tls_port = free_port(), free_port()
            c = lambda name: os.path.join(self.certs, name)  # noqa: E731
            proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(port), "--tls-port", str(tls_port),
                 "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--tls-cert-file", c("server.crt"), "--tls-key-file", c("server.key"),
                 "--tls-ca-cert-file", c("ca.crt"),
                 "--tls-auth-clients", "yes" if self.auth_clients else "no"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_ping(proc, port):
                self.proc, self.port, self.tls_port = proc, port, tls_port
                return self
            last = port
            self._stop(proc)
        raise RuntimeError("redis-server did not start (last port %s)" % last)

    @property
    def uri(self):
        return "rediss://127.0.0.1:%d" % self.tls_port


class TestTLS(unittest.TestCase):
    """tls_* keyword arguments against masters that speak TLS (certificates
    made by tests/tls/make_certs.sh for 127.0.0.1 and localhost)."""
    N = 3
    AUTH_CLIENTS = True  # mutual TLS: a client certificate is required

    @classmethod
    def setUpClass(cls):
        if REDIS_SERVER is None:
            raise unittest.SkipTest("redis-server not found on PATH")
        if not redlock_c.tls_supported():
            raise unittest.SkipTest("libredlock built without TLS")
        if shutil.which("openssl") is None or not os.path.exists(MAKE_CERTS):
            raise unittest.SkipTest("openssl or tests/tls/make_certs.sh missing")
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="redlock-py-tls-")
        subprocess.run(["sh", MAKE_CERTS, cls.tmp], check=True, timeout=120)
        cls.servers = []
        try:
            for _ in range(cls.N):
                cls.servers.append(TlsRedisServer(cls.tmp, cls.AUTH_CLIENTS).start())
        except BaseException:
            cls.tearDownClass()
            raise
        cls.uris = [s.uri for s in cls.servers]

    @classmethod
    def tearDownClass(cls):
        for s in getattr(cls, "servers", []):
            s.stop()
        shutil.rmtree(getattr(cls, "tmp", ""), ignore_errors=True)

    def cert(self, name):
        return os.path.join(self.tmp, name)

    def client(self, **extra):
        kw = dict(tls_ca=self.cert("ca.crt"), tls_cert=self.cert("client.crt"),
                  tls_key=self.cert("client.key"))
        kw.update(extra)
        c = redlock_c.Client(self.uris, **client_kwargs(**kw))
        self.addCleanup(c.close)
        return c

    def test_lock_over_tls(self):
        c = self.client()
        res = unique("tls")
        with c.lock(res, 5000) as lock:
            for s in self.servers:
                self.assertEqual(redis_cmd(s.port, "GET", res), lock.value)
        for s in self.servers:
            self.assertIsNone(redis_cmd(s.port, "GET", res))

    def test_ca_directory_and_pathlike(self):
        import pathlib
        # An OpenSSL hashed directory: "<subject hash>.0" -> the CA.
        h = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", self.cert("ca.crt")],
                           check=True, capture_output=True, text=True).stdout.strip()
        d = os.path.join(self.tmp, "cadir")
        os.makedirs(d, exist_ok=True)
        shutil.copy(self.cert("ca.crt"), os.path.join(d, h + ".0"))
        c = self.client(tls_ca=pathlib.Path(d), tls_cert=pathlib.Path(self.cert("client.crt")))
        c.lock(unique("tls-dir"), 5000).unlock()

    def test_no_client_certificate(self):
        c = self.client(tls_cert=None, tls_key=None)
        with self.assertRaises(redlock_c.NoQuorumError):
            c.trylock(unique("tls-anon"), 5000)
        votes = c.last_votes()
        self.assertTrue("certificate required" in votes or "client certificate" in votes, votes)

    def test_server_name_and_verify(self):
        c = self.client(tls_server_name="wrong.example")
        with self.assertRaises(redlock_c.NoQuorumError):
            c.trylock(unique("tls-name"), 5000)
        self.assertIn("hostname mismatch", c.last_votes())
        self.client(tls_server_name="localhost").lock(unique("tls-localhost"), 5000).unlock()
        # Neither chain nor name checked: an untrusted CA and a wrong name work.
        c = self.client(tls_ca=self.cert("wrongca.crt"), tls_server_name="wrong.example",
                        tls_verify=False)
        c.lock(unique("tls-noverify"), 5000).unlock()
        c = self.client(tls_ca=self.cert("wrongca.crt"))
        with self.assertRaises(redlock_c.NoQuorumError):
            c.trylock(unique("tls-wrongca"), 5000)
        self.assertIn("certificate verify failed", c.last_votes())

    def test_bad_tls_arguments(self):
        with self.assertRaises(redlock_c.InvalidArgument) as cm:
            redlock_c.Client(self.uris, tls_ca=self.cert("nothere.crt"))
        self.assertIn("nothere.crt", str(cm.exception))
        with self.assertRaises(redlock_c.InvalidArgument) as cm:
            redlock_c.Client(self.uris, tls_ca=self.cert("ca.crt"), tls_cert=self.cert("client.crt"),
                           tls_key=self.cert("server.key"))
        self.assertIn("does not match", str(cm.exception))
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client(self.uris, tls_cert=self.cert("client.crt"))  # no key
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client(self.uris, tls_server_name="")
        with self.assertRaises(TypeError):
            redlock_c.Client(self.uris, tls_ca=42)


class TestNoQuorum(unittest.TestCase):
    """Masters that are down: ENOQUORUM, and the diagnostics say why."""

    def test_all_masters_down(self):
        ports = [free_port() for _ in range(3)]  # nothing listens there
        with redlock_c.Client(["redis://127.0.0.1:%d" % p for p in ports],
                            **client_kwargs(connect_timeout_ms=500, retry_count=0)) as c:
            with self.assertRaises(redlock_c.NoQuorumError) as cm:
                c.trylock(unique("down"), 1000)
            self.assertEqual(cm.exception.code, redlock_c.ENOQUORUM)
            self.assertEqual(cm.exception.name, "REDLOCK_ENOQUORUM")
            self.assertIn("no quorum", c.last_votes())
            # The error carries its round's votes, and says why in its message.
            self.assertIn("=down", cm.exception.votes)
            self.assertIn("=down", str(cm.exception))
            with self.assertRaises(redlock_c.NoQuorumError) as cm:
                c.lock(unique("down"), 1000)
            self.assertIn("=down", cm.exception.votes)
            with self.assertRaises(redlock_c.NoQuorumError) as cm:
                c.lock_many([unique("a"), unique("b")], 1000)
            self.assertIn("=down", cm.exception.votes)


class TestQuarantineSaysSo(unittest.TestCase):
    """Freshly started masters with the restart quarantine on (the default):
    a program's first locks fail, and the error says it is the quarantine
    and how long it has left."""

    @classmethod
    def setUpClass(cls):
        if REDIS_SERVER is None:
            raise unittest.SkipTest("redis-server not found on PATH (or REDLOCK_TEST_SERVER)")
        cls.servers = start_servers(3)
        cls.uris = [s.uri for s in cls.servers]

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.stop()

    def assert_says_quarantined(self, err):
        self.assertIsInstance(err, redlock_c.NoQuorumError)
        self.assertIsNotNone(err.votes)
        self.assertIn("=quarantined (restart quarantine: ", err.votes)
        self.assertEqual(err.detail, err.votes)
        self.assertIn("quarantined", str(err))
        self.assertIn("ms left", str(err))

    def test_fresh_masters_are_quarantined(self):
        # quarantine left at its default (on); a max TTL of 10 minutes makes
        # the quarantine outlast the test however slow the machine.
        kw = client_kwargs(retry_count=0, max_ttl_ms=600000)
        del kw["quarantine"]
        with redlock_c.Client(self.uris, **kw) as c:
            with self.assertRaises(redlock_c.NoQuorumError) as cm:
                c.trylock(unique("fresh"), 1000)  # blocking: read on this thread
            self.assert_says_quarantined(cm.exception)
            with self.assertRaises(redlock_c.NoQuorumError) as cm:
                c.lock(unique("fresh"), 1000)  # callback form: read on the I/O thread
            self.assert_says_quarantined(cm.exception)
            with self.assertRaises(redlock_c.NoQuorumError) as cm:
                c.lock_many([unique("a"), unique("b")], 1000)
            self.assert_says_quarantined(cm.exception)
            with self.assertRaises(redlock_c.NoQuorumError) as cm:
                c.semaphore_acquire(unique("sem"), 2, 1000)
            self.assert_says_quarantined(cm.exception)


# ---- tests against a shared set of three masters -------------------------------------------

class ServerTestCase(unittest.TestCase):
    N = 3

    @classmethod
    def setUpClass(cls):
        if REDIS_SERVER is None:
            raise unittest.SkipTest("redis-server not found on PATH (or REDLOCK_TEST_SERVER)")
        cls.servers = start_servers(cls.N)
        cls.uris = [s.uri for s in cls.servers]

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.stop()

    def client(self, **extra):
        c = redlock_c.Client(self.uris, **client_kwargs(**extra))
        self.addCleanup(c.close)
        return c

    def on_all(self, *cmd):
        return [redis_cmd(s.port, *cmd) for s in self.servers]


class TestLocking(ServerTestCase):
    def test_lock_unlock(self):
        c = self.client()
        res = unique("basic")
        lk = c.lock(res, 10000)
        self.assertIsInstance(lk, redlock_c.Lock)
        self.assertEqual(lk.resource, res)
        self.assertEqual(lk.resources, (res,))
        self.assertRegex(lk.value, r"^[0-9a-f]{32}$")
        self.assertEqual(lk.fence, 0)
        self.assertFalse(lk.lost)
        self.assertFalse(lk.released)
        self.assertGreater(lk.validity_ms, 0)
        self.assertLessEqual(lk.validity_ms, 10000)
        # The value is in Redis under the plain resource name (interoperable).
        self.assertEqual(self.on_all("GET", res), [lk.value] * 3)
        self.assertIn("won", c.last_votes())
        lk.unlock()
        self.assertTrue(lk.released)
        self.assertEqual(lk.validity_ms, 0)
        self.assertEqual(self.on_all("EXISTS", res), [0, 0, 0])
        lk2 = c.trylock(res, 1000)  # free again
        lk2.unlock()

    def test_context_manager(self):
        res = unique("ctx")
        with self.client() as c:
            with c.lock(res, 10000) as lk:
                self.assertEqual(self.on_all("GET", res), [lk.value] * 3)
            self.assertTrue(lk.released)
            self.assertEqual(self.on_all("EXISTS", res), [0, 0, 0])
            # The block's exception wins; the lock is still released.
            with self.assertRaises(KeyError):
                with c.lock(res, 10000):
                    raise KeyError("boom")
            self.assertEqual(self.on_all("EXISTS", res), [0, 0, 0])
        self.assertTrue(c.closed)
        with self.assertRaises(redlock_c.ClosedError):
            with c:
                pass

    def test_contention_raises_locked(self):
        a, b = self.client(), self.client(retry_count=1)
        res = unique("contended")
        with a.lock(res, 10000):
            with self.assertRaises(redlock_c.LockedError) as cm:
                b.trylock(res, 1000)
            self.assertEqual(cm.exception.code, redlock_c.ELOCKED)
            self.assertIn("held", b.last_votes())
            # This call's votes; the message stays short (nothing quarantined).
            self.assertIn("=refused", cm.exception.votes)
            self.assertNotIn("refused", str(cm.exception))
            self.assertIsNone(cm.exception.detail)
            with self.assertRaises(redlock_c.LockedError) as cm:
                b.lock(res, 1000)  # retries by the policy, then gives up
            self.assertIn("=refused", cm.exception.votes)
            with self.assertRaises(redlock_c.LockedError):
                a.trylock(res, 1000)  # not reentrant by default
        b.trylock(res, 1000).unlock()

    def test_extend_and_validity(self):
        c = self.client()
        res = unique("extend")
        lk = c.lock(res, 2000)
        self.assertLessEqual(lk.validity_ms, 2000)
        lk.extend(30000)
        self.assertGreater(lk.validity_ms, 2000)
        self.assertLessEqual(lk.validity_ms, 30000)
        pttls = self.on_all("PTTL", res)
        self.assertTrue(all(2000 < p <= 30000 for p in pttls), pttls)
        lk.unlock()
        with self.assertRaises(redlock_c.InvalidArgument):
            lk.extend(1000)  # released

    def test_extend_lost_after_takeover(self):
        c = self.client()
        res = unique("takeover")
        lk = c.lock(res, 10000)
        self.on_all("SET", res, "intruder")  # another value on every master: taken over
        with self.assertRaises(redlock_c.LostError) as cm:
            lk.extend(10000)
        self.assertIn("=refused", cm.exception.votes)
        self.assertTrue(lk.lost)
        with self.assertRaises(redlock_c.LostError) as cm:
            lk.extend(10000)  # lost before the call: no round, no votes
        self.assertIsNone(cm.exception.votes)
        with self.assertRaises(redlock_c.LostError) as cm:
            lk.unlock()
        self.assertIn("=refused", cm.exception.votes)
        self.assertTrue(lk.released)
        lk.unlock()  # no-op

    def test_fencing_tokens_increase(self):
        a, b = self.client(fencing=True), self.client(fencing=True)
        res = unique("fence")
        last = 0
        for client in (a, b, a, b):
            with client.lock(res, 5000) as lk:
                self.assertGreater(lk.fence, last)
                last = lk.fence
        self.assertEqual(lk.fence, last)  # kept after release
        many = a.lock_many([res, unique("fence2")], 5000)
        self.assertGreater(many.fence, last)
        many.unlock()

    def test_lock_many_all_or_nothing(self):
        a, b = self.client(), self.client(retry_count=0)
        r1, r2, r3 = unique("m1"), unique("m2"), unique("m3")
        held = a.lock(r2, 10000)
        with self.assertRaises(redlock_c.LockedError):
            b.lock_many([r1, r2, r3], 5000)
        # Nothing of the failed attempt stays behind.
        wait_until(lambda: self.on_all("EXISTS", r1) == [0, 0, 0] and
                   self.on_all("EXISTS", r3) == [0, 0, 0], what="cleanup of r1/r3")
        held.unlock()
        lk = b.lock_many([r1, r2, r3], 5000)
        self.assertEqual(lk.resource, r1)
        self.assertEqual(lk.resources, (r1, r2, r3))
        for r in (r1, r2, r3):
            self.assertEqual(self.on_all("GET", r), [lk.value] * 3)
            with self.assertRaises(redlock_c.LockedError):
                a.trylock(r, 1000)
        lk.unlock()
        for r in (r1, r2, r3):
            self.assertEqual(self.on_all("EXISTS", r), [0, 0, 0])

    def test_wait_for_release_from_another_thread(self):
        a, b = self.client(), self.client()
        res = unique("wait")
        held = a.lock(res, 20000)
        result = {}
        started = threading.Event()

        def waiter():
            started.set()
            t0 = time.monotonic()
            try:
                result["lock"] = b.lock(res, 5000, wait_ms=60000)
            except BaseException as exc:  # reported below
                result["error"] = exc
            result["elapsed"] = time.monotonic() - t0

        t = threading.Thread(target=waiter)
        t.start()
        self.assertTrue(started.wait(30))
        # While the lock is held, the waiter stays blocked.
        hold_until = time.monotonic() + 0.5
        while time.monotonic() < hold_until:
            self.assertNotIn("lock", result)
            self.assertNotIn("error", result)
            time.sleep(0.02)
        released_at = time.monotonic()
        held.unlock()
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertNotIn("error", result)
        lk = result["lock"]
        # Granted on a quorum: a master the release had not reached yet when
        # the woken attempt got there refused it, legitimately.
        values = self.on_all("GET", res)
        self.assertGreaterEqual(values.count(lk.value), 2, values)
        self.assertLess(time.monotonic() - released_at, 30)
        lk.unlock()

    def test_wait_timeout(self):
        a, b = self.client(), self.client()
        res = unique("wait-timeout")
        with a.lock(res, 20000):
            t0 = time.monotonic()
            with self.assertRaises(redlock_c.WaitTimeout) as cm:
                b.lock(res, 1000, wait_ms=300)
            self.assertGreaterEqual(time.monotonic() - t0, 0.25)
            self.assertIsInstance(cm.exception, TimeoutError)

    def test_mutual_exclusion_between_threads(self):
        c = self.client()
        res = unique("mutex")
        inside = [0]
        overlaps = []
        errors = []
        guard = threading.Lock()

        def worker():
            try:
                for _ in range(5):
                    with c.lock(res, 10000, wait_ms=60000):
                        with guard:
                            inside[0] += 1
                            if inside[0] != 1:
                                overlaps.append(inside[0])
                        with guard:
                            inside[0] -= 1
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertFalse(any(t.is_alive() for t in threads))
        self.assertEqual(errors, [])
        self.assertEqual(overlaps, [])

    def test_watch_keeps_lock_alive(self):
        c = self.client(request_timeout_ms=300)
        res = unique("watch")
        lost = threading.Event()
        lk = c.lock(res, 1500, watch=True, on_lost=lambda l: lost.set())
        end = time.monotonic() + 4.5  # three times the TTL
        while time.monotonic() < end:
            self.assertFalse(lk.lost)
            self.assertGreater(lk.validity_ms, 0)
            time.sleep(0.05)
        self.assertEqual(self.on_all("GET", res), [lk.value] * 3)
        self.assertFalse(lost.is_set())
        lk.unlock()
        self.assertEqual(self.on_all("EXISTS", res), [0, 0, 0])

    def test_watch_lost_callback_on_io_thread(self):
        c = self.client(request_timeout_ms=300)
        res = unique("watch-lost")
        seen = {}
        done = threading.Event()

        def on_lost(lock):
            seen["thread"] = threading.get_ident()
            seen["lost"] = lock.lost
            try:  # blocking calls are refused on the I/O thread...
                c.lock(unique("x"), 1000)
            except redlock_c.WouldBlockError as exc:
                seen["lock"] = exc
            try:
                c.trylock(unique("x"), 1000)
            except redlock_c.WouldBlockError as exc:
                seen["trylock"] = exc
            lock.unlock()  # ...but unlock starts the release and returns
            seen["released"] = lock.released
            done.set()

        lk = c.lock(res, 1000, watch=True, on_lost=on_lost)
        self.on_all("SET", res, "intruder")  # the next extension finds another value
        self.assertTrue(done.wait(30), "on_lost was not called")
        self.assertNotEqual(seen["thread"], threading.get_ident())
        self.assertTrue(seen["lost"])
        self.assertIsInstance(seen["lock"], redlock_c.WouldBlockError)
        self.assertIsInstance(seen["trylock"], redlock_c.WouldBlockError)
        self.assertTrue(seen["released"])
        self.assertTrue(lk.lost)
        lk.unlock()  # no-op

    def test_double_unlock_is_noop(self):
        c = self.client()
        lk = c.lock(unique("double"), 5000)
        self.assertIsNone(lk.unlock())
        self.assertIsNone(lk.unlock())
        with lk:
            pass  # exiting a released lock is fine too
        with self.assertRaises(redlock_c.InvalidArgument):
            lk.watch()

    def test_bad_lock_arguments(self):
        c = self.client(max_ttl_ms=30000)
        for bad in (0, 30001, -1, 2 ** 32):
            with self.assertRaises(redlock_c.InvalidArgument, msg=repr(bad)):
                c.lock(unique("bad"), bad)
            with self.assertRaises(redlock_c.InvalidArgument, msg=repr(bad)):
                c.trylock(unique("bad"), bad)
        for res in ("", "x" * (redlock_c.MAX_RESOURCE_LEN + 1), "a\0b"):
            with self.assertRaises(redlock_c.InvalidArgument):
                c.lock(res, 1000)
            with self.assertRaises(redlock_c.InvalidArgument):
                c.trylock(res, 1000)
        with self.assertRaises(TypeError):
            c.lock(123, 1000)
        with self.assertRaises(TypeError):
            c.lock("r", "1000")
        with self.assertRaises(redlock_c.InvalidArgument):
            c.lock("r", 1000, wait_ms=-1)
        with self.assertRaises(redlock_c.InvalidArgument):
            c.lock_many([], 1000)
        r = unique("dup")
        with self.assertRaises(redlock_c.InvalidArgument):
            c.lock_many([r, r], 1000)
        with self.assertRaises(redlock_c.InvalidArgument):
            c.lock_many([unique("m%d" % i) for i in range(redlock_c.MAX_MANY + 1)], 1000)
        with self.assertRaises(TypeError):
            c.lock_many("abc", 1000)
        lk = c.lock(unique("ok"), 1000)
        with self.assertRaises(redlock_c.InvalidArgument):
            lk.extend(0)
        with self.assertRaises(TypeError):
            lk.watch(on_lost=42)
        lk.unlock()
        # The largest TTL is accepted, bytes resources too.
        c.trylock(unique("max").encode(), 30000).unlock()

    def test_key_prefix(self):
        p1, p1b = self.client(key_prefix="app1:"), self.client(key_prefix="app1:")
        p2 = self.client(key_prefix="app2:")
        plain = self.client()
        res = unique("pref")
        lk = p1.lock(res, 10000)
        self.assertEqual(lk.resource, res)  # without the prefix
        self.assertEqual(self.on_all("GET", "app1:" + res), [lk.value] * 3)
        self.assertEqual(self.on_all("EXISTS", res), [0, 0, 0])
        with self.assertRaises(redlock_c.LockedError):
            p1b.trylock(res, 1000)
        p2.trylock(res, 1000).unlock()
        plain.trylock(res, 1000).unlock()
        lk.unlock()
        self.assertEqual(self.on_all("EXISTS", "app1:" + res), [0, 0, 0])

    def test_reentrant(self):
        c = self.client(reentrant=True)
        res = unique("reent")
        outer = c.lock(res, 10000)
        inner = c.trylock(res, 10000)
        self.assertEqual(inner.value, outer.value)
        inner.unlock()
        self.assertEqual(self.on_all("GET", res), [outer.value] * 3)  # still held
        outer.unlock()
        self.assertEqual(self.on_all("EXISTS", res), [0, 0, 0])

    def test_allow_discovered(self):
        """Patterns that match none of these masters: they still lock, since
        addresses written in the URIs are never checked.  Invalid patterns are
        refused, naming the option."""
        c = self.client(allow_discovered=["10.0.0.*", "*.redis.internal"])
        c.lock(unique("allow-disc"), 5000).unlock()
        self.client(allow_discovered=()).lock(unique("allow-disc-none"), 5000).unlock()
        for bad in ("", "x" * 300):
            with self.assertRaises(redlock_c.InvalidArgument) as cm:
                redlock_c.Client(self.uris, allow_discovered=["10.*", bad])
            self.assertIn("allow_discovered", str(cm.exception))
        with self.assertRaises(redlock_c.InvalidArgument) as cm:
            redlock_c.Client(self.uris, allow_discovered=["10.*"] * 65)
        self.assertIn("at most 64", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            redlock_c.Client(self.uris, allow_discovered="10.0.0.*")  # not one per character
        self.assertIn("allow_discovered", str(cm.exception))
        with self.assertRaises(TypeError):
            redlock_c.Client(self.uris, allow_discovered=[42])

    def test_log_callback(self):
        msgs = []
        guard = threading.Lock()

        def log(level, message):
            with guard:
                msgs.append((level, message, threading.get_ident()))

        c = self.client(log=log, log_level=redlock_c.LOG_DEBUG)
        wait_until(lambda: len([m for m in msgs if "connected" in m[1]]) >= 3,
                   what="3 connected messages")
        with guard:
            snapshot = list(msgs)
        for level, message, ident in snapshot:
            self.assertIn(level, (redlock_c.LOG_DEBUG, redlock_c.LOG_INFO, redlock_c.LOG_WARN,
                                  redlock_c.LOG_ERROR))
            self.assertIsInstance(message, str)
            self.assertNotEqual(ident, threading.get_ident())  # the I/O thread
        res = unique("logged")
        with c.lock(res, 5000):
            with self.assertRaises(redlock_c.LockedError):
                c.trylock(res, 1000)
        wait_until(lambda: any("failed" in m[1] or res in m[1] for m in msgs),
                   what="a message about the failed attempt")
        c.close()
        n = len(msgs)
        time.sleep(0.05)
        self.assertEqual(len(msgs), n, "no log callback after close()")

    def test_use_after_close(self):
        c = self.client()
        res = unique("closed")
        lk = c.lock(res, 30000)
        c.close()
        c.close()  # idempotent
        self.assertTrue(c.closed)
        self.assertTrue(lk.released)
        self.assertEqual(lk.validity_ms, 0)
        self.assertFalse(lk.lost)
        self.assertEqual(lk.resource, res)
        lk.unlock()  # no-op: the close released it
        with self.assertRaises(redlock_c.ClosedError):
            lk.extend(1000)
        with self.assertRaises(redlock_c.ClosedError):
            lk.watch()
        for call in (lambda: c.lock(res, 1000), lambda: c.trylock(res, 1000),
                     lambda: c.lock_many([res], 1000), c.last_votes):
            with self.assertRaises(redlock_c.ClosedError):
                call()
        # close() released the lock in Redis.
        wait_until(lambda: self.on_all("EXISTS", res) == [0, 0, 0], what="release on close")

    def test_close_cancels_waiting_lock(self):
        a, b = self.client(), self.client()
        res = unique("cancel")
        held = a.lock(res, 30000)
        result = {}
        started = threading.Event()

        def waiter():
            started.set()
            try:
                result["lock"] = b.lock(res, 5000, wait_ms=120000)
            except BaseException as exc:
                result["error"] = exc

        t = threading.Thread(target=waiter)
        t.start()
        self.assertTrue(started.wait(30))
        wait_until(lambda: b._core.pending, what="the waiter's pending call")
        b.close()
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertIsInstance(result.get("error"), (redlock_c.CanceledError, redlock_c.ClosedError),
                              result)
        held.unlock()

    def test_gc_of_held_lock_releases_it(self):
        c = self.client()
        res = unique("gc")
        lk = c.lock(res, 30000)
        value = lk.value
        self.assertEqual(self.on_all("GET", res), [value] * 3)
        with self.assertWarns(ResourceWarning):
            del lk
            gc.collect()
        wait_until(lambda: self.on_all("EXISTS", res) == [0, 0, 0], what="async release")
        c.trylock(res, 1000).unlock()


class TestStats(ServerTestCase):
    def test_stats_dict_and_prometheus(self):
        c = self.client()
        res = unique("stats")
        with c.lock(res, 5000):
            with self.assertRaises(redlock_c.LockedError):
                c.trylock(res, 1000)
        d = c.stats()
        self.assertEqual(d["operations_total"]["acquire"]["ok"], 1)
        self.assertEqual(d["operations_total"]["acquire"]["locked"], 1)
        self.assertEqual(d["operations_total"]["release"]["ok"], 1)
        self.assertEqual(d["operation_duration_seconds"]["acquire"]["count"], 2)
        self.assertEqual(d["quorum"], 2)
        self.assertEqual(d["masters_usable"], 3)
        self.assertEqual(d["held_locks"], 0)
        self.assertEqual(len(d["masters"]), 3)
        for m, s in zip(d["masters"], self.servers):
            self.assertEqual(m["master"], "127.0.0.1:%d" % s.port)
            self.assertEqual(m["state"], "up")
        text = c.stats("prometheus")
        self.assertIn("# TYPE redlock_operations_total counter\n", text)
        self.assertIn('redlock_operations_total{op="acquire",outcome="ok"} 1\n', text)
        self.assertTrue(c.stats("json").startswith("{"))
        with self.assertRaises(redlock_c.InvalidArgument):
            c.stats("xml")
        c.close()
        with self.assertRaises(redlock_c.ClosedError):
            c.stats()

    def test_stats_off(self):
        c = self.client(stats=False)
        with self.assertRaises(redlock_c.NotSupportedError):
            c.stats()

    def test_on_event(self):
        events = []
        guard = threading.Lock()

        def on_event(ev):
            with guard:
                events.append((ev, threading.get_ident()))

        c = self.client(on_event=on_event)
        wait_until(lambda: len([e for e, _ in events if e.kind == "node_up"]) >= 3,
                   what="3 node_up events")
        res = unique("events")
        lk = c.lock(res, 5000)
        lk.extend(5000)
        lk.unlock()
        with guard:
            mine = [(e, t) for e, t in events if e.resource == res]
        self.assertEqual([e.kind for e, _ in mine], ["acquire", "extend", "release"])
        for e, ident in mine:
            self.assertEqual(e.status, 0)
            self.assertIsNone(e.error)
            self.assertEqual(e.attempts, 1)
            self.assertGreaterEqual(e.duration_us, 0)
            self.assertEqual(len(e.nodes), 3)
            self.assertGreaterEqual(sum(1 for _, v, _ in e.nodes if v == "OK"), 2)
            for addr, verdict, latency in e.nodes:
                self.assertRegex(addr, r"^127\.0\.0\.1:\d+$")
                if verdict == "OK":
                    self.assertGreaterEqual(latency, 0)
            self.assertNotEqual(ident, threading.get_ident())  # the I/O thread
        self.assertIn("acquire", repr(mine[0][0]))


class TestPrimitives(ServerTestCase):
    """Counting semaphore and read-write lock (Client.semaphore_acquire,
    rwlock_read, rwlock_write): permits and holds are Locks."""

    def test_semaphore_admits_limit(self):
        a, b = self.client(), self.client()
        name = unique("sem")
        p1 = a.semaphore_acquire(name, 2, 10000)
        p2 = b.semaphore_acquire(name, 2, 10000, wait_ms=1000)
        for p in (p1, p2):
            self.assertIsInstance(p, redlock_c.Lock)
            self.assertRegex(p.resource, "^%s:sem:[01]$" % name)
            self.assertGreater(p.validity_ms, 0)
            # the slot's key: the name in braces (one hash slot, redlock.h)
            key = "{%s}:sem:%s" % (name, p.resource.rsplit(":", 1)[1])
            self.assertEqual(self.on_all("GET", key), [p.value] * 3)
        self.assertNotEqual(p1.resource, p2.resource)
        self.assertEqual(self.on_all("GET", "{%s}:sem:limit" % name), ["2"] * 3)
        with self.assertRaises(redlock_c.LockedError):
            a.semaphore_acquire(name, 2, 10000)
        with self.assertRaises(redlock_c.WaitTimeout):
            b.semaphore_acquire(name, 2, 10000, wait_ms=200)
        freed = p1.resource
        p1.extend(20000)
        p1.unlock()
        with b.semaphore_acquire(name, 2, 10000) as p3:
            self.assertEqual(p3.resource, freed)
        self.assertEqual(self.on_all("EXISTS", freed), [0, 0, 0])
        p2.unlock()

    def test_semaphore_waiter_woken_by_release(self):
        holder = self.client()
        waiter_client = self.client(retry_delay_ms=10000, retry_jitter_ms=0)
        name = unique("sem-wait")
        held = holder.semaphore_acquire(name, 1, 20000)
        result = {}

        def waiter():
            try:
                result["permit"] = waiter_client.semaphore_acquire(name, 1, 5000, wait_ms=30000)
            except BaseException as exc:  # reported below
                result["error"] = exc
            result["at"] = time.monotonic()

        t = threading.Thread(target=waiter)
        t.start()
        channel = RELEASE_CHANNEL_PREFIX + "{%s}:sem" % name
        wait_until(lambda: all(r[1] >= 1 for r in self.on_all("PUBSUB", "NUMSUB", channel)),
                   what="the waiter's subscription")
        released_at = time.monotonic()
        held.unlock()
        t.join(60)
        self.assertNotIn("error", result)
        # Woken by the release, well before its 10 s fallback retry.
        self.assertLess(result["at"] - released_at, 5.0)
        result["permit"].unlock()

    def test_semaphore_bad_arguments_and_mismatch(self):
        c = self.client()
        name = unique("sem-args")
        for limit in (0, redlock_c.MAX_SEM_LIMIT + 1):
            with self.assertRaises(redlock_c.InvalidArgument):
                c.semaphore_acquire(name, limit, 1000)
        with self.assertRaises(redlock_c.InvalidArgument):
            c.semaphore_acquire("", 2, 1000)
        with self.assertRaises(redlock_c.InvalidArgument):
            c.semaphore_acquire(name, 2, 0)
        with self.assertRaises(TypeError):
            c.semaphore_acquire(name, "2", 1000)
        with c.semaphore_acquire(name, 3, 5000):
            with self.assertRaises(redlock_c.InvalidArgument):  # another limit
                c.semaphore_acquire(name, 2, 5000, wait_ms=1000)

    def test_rwlock(self):
        a, b = self.client(), self.client()
        name = unique("rw")
        r1 = a.rwlock_read(name, 10000)
        r2 = b.rwlock_read(name, 10000, wait_ms=1000)
        self.assertEqual(r1.resource, name)
        # A hold is granted at a quorum; the last master may answer later.
        wait_until(lambda: self.on_all("ZCARD", "{%s}:rw:read" % name) == [2] * 3,
                   what="both readers on every master")
        with self.assertRaises(redlock_c.LockedError):
            b.rwlock_write(name, 10000)
        with self.assertRaises(redlock_c.WaitTimeout):
            b.rwlock_write(name, 10000, wait_ms=300)
        r1.extend(15000)
        r1.watch()
        r1.unlock()
        r2.unlock()
        # An unlock returns at a quorum: wait for the last master's release,
        # so the writer's key lands on every master.
        wait_until(lambda: self.on_all("ZCARD", "{%s}:rw:read" % name) == [0] * 3,
                   what="readers released on every master")
        with a.rwlock_write(name, 10000) as w:
            wait_until(lambda: self.on_all("GET", "{%s}:rw:write" % name) == [w.value] * 3,
                       what="the writer on every master")
            with self.assertRaises(redlock_c.LockedError):
                b.rwlock_read(name, 10000)
            with self.assertRaises(redlock_c.LockedError):
                b.rwlock_write(name, 10000)
        wait_until(lambda: self.on_all("EXISTS", "{%s}:rw:write" % name) == [0, 0, 0],
                   what="the writer released on every master")
        b.rwlock_read(name, 1000).unlock()

    def test_rwlock_fencing(self):
        c = self.client(fencing=True)
        name = unique("rw-fence")
        with c.rwlock_write(name, 5000) as w:
            token = w.fence
        self.assertGreater(token, 0)
        with c.rwlock_read(name, 5000) as r:
            self.assertGreaterEqual(r.fence, token)
            token = r.fence
        with c.rwlock_write(name, 5000) as w:
            self.assertGreater(w.fence, token)


class TestSubprocess(ServerTestCase):
    """Lifetime checks that would crash the interpreter if wrong."""

    def test_gc_and_use_after_close(self):
        run_script(self, """
            import gc, sys, warnings, redlock_c
            warnings.simplefilter("ignore", ResourceWarning)
            uris = sys.argv[1:]
            kw = dict(quarantine=False, connect_timeout_ms=3000, request_timeout_ms=1000)
            c = redlock_c.Client(uris, **kw)
            # A held lock collected while the client is open: released in the background.
            lk = c.lock("sp-gc", 30000)
            del lk; gc.collect()
            # Held locks, a watched one, then close; the Lock objects outlive it.
            locks = [c.lock("sp-%d" % i, 30000) for i in range(5)]
            w = c.lock("sp-w", 2000, watch=True, on_lost=lambda l: None)
            c.close()
            for l in locks + [w]:
                assert l.released and l.validity_ms == 0
                l.unlock()
                try:
                    l.extend(1000)
                except redlock_c.ClosedError:
                    pass
                else:
                    raise AssertionError("extend after close")
            del locks, w; gc.collect()
            # Client collected without close (closes itself), with a lock held.
            c2 = redlock_c.Client(uris, **kw)
            l2 = c2.lock("sp-c2", 30000)
            del c2; gc.collect()      # l2 keeps the client alive
            del l2; gc.collect()      # now both go: unlock_async, then close
            # Open clients with held, watched locks and a log callback at exit.
            c3 = redlock_c.Client(uris, log=lambda lvl, m: None, log_level=0, **kw)
            keep = [c3.lock("sp-exit", 30000, watch=True, on_lost=lambda l: None)]
            c4 = redlock_c.Client(uris, **kw)
            print("OK")
        """, *self.uris)

    def test_close_races_other_threads(self):
        run_script(self, """
            import sys, threading, redlock_c
            uris = sys.argv[1:]
            kw = dict(quarantine=False, connect_timeout_ms=3000, request_timeout_ms=1000,
                      retry_count=1, retry_delay_ms=5, retry_jitter_ms=5)
            for round_no in range(5):
                c = redlock_c.Client(uris, **kw)
                shared = c.lock("race-shared-%d" % round_no, 30000)
                stop = threading.Event()
                bad = []
                def worker(i):
                    n = 0
                    while not stop.is_set():
                        n += 1
                        try:
                            lk = c.trylock("race-%d-%d" % (i, n % 3), 5000)
                            lk.validity_ms; lk.lost
                            lk.extend(5000)
                            shared.validity_ms; shared.lost
                            lk.unlock()
                        except (redlock_c.ClosedError, redlock_c.CanceledError,
                                redlock_c.LockedError):
                            if c.closed:
                                return
                        except redlock_c.InvalidArgument:
                            pass  # extend of a lock the close took
                        except BaseException as exc:
                            bad.append(exc); return
                def waiter():
                    try:
                        c.lock("race-shared-%d" % round_no, 1000, wait_ms=60000)
                    except (redlock_c.CanceledError, redlock_c.ClosedError):
                        pass
                    except BaseException as exc:
                        bad.append(exc)
                threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
                threads.append(threading.Thread(target=waiter))
                for t in threads: t.start()
                # let them run until some work happened
                import time
                end = time.monotonic() + 0.3
                while time.monotonic() < end: time.sleep(0.01)
                c.close()
                stop.set()
                for t in threads: t.join(60)
                assert not any(t.is_alive() for t in threads), "thread stuck"
                assert not bad, bad
                assert shared.released
            print("OK")
        """, *self.uris)

    def test_interrupted_lock_releases_late_grant(self):
        # Ctrl-C while lock() waits: the call is abandoned, and the lock it is
        # granted later (when the holder releases) is let go, not leaked.
        run_script(self, """
            import os, signal, sys, threading, time, redlock_c
            uris = sys.argv[1:]
            kw = dict(quarantine=False, connect_timeout_ms=3000, request_timeout_ms=1000)
            holder = redlock_c.Client(uris, **kw)
            c = redlock_c.Client(uris, **kw)
            held = holder.lock("sigint-r", 30000)
            def interrupt():
                deadline = time.monotonic() + 30
                while not c._core.pending and time.monotonic() < deadline:
                    time.sleep(0.01)
                os.kill(os.getpid(), signal.SIGINT)
            threading.Thread(target=interrupt).start()
            try:
                c.lock("sigint-r", 5000, wait_ms=120000)
            except KeyboardInterrupt:
                pass
            else:
                raise AssertionError("not interrupted")
            held.unlock()
            # The abandoned call may still win the lock; it is released at once.
            deadline = time.monotonic() + 60
            while True:
                try:
                    holder.trylock("sigint-r", 1000).unlock()
                    break
                except redlock_c.LockedError:
                    assert time.monotonic() < deadline, "abandoned lock leaked"
                    time.sleep(0.02)
            c.close(); holder.close()
            print("OK")
        """, *self.uris)

    def test_close_from_callback(self):
        run_script(self, """
            import sys, threading, redlock_c
            uris = sys.argv[1:]
            port_cmd = None
            c = redlock_c.Client(uris, quarantine=False, request_timeout_ms=300)
            called = threading.Event()
            def on_lost(lock):
                c.close()          # returns at once on the I/O thread
                called.set()
            lk = c.lock("cb-close", 1000, watch=True, on_lost=on_lost)
            import socket
            for u in uris:         # another value everywhere: the watch loses it
                host, port = u[len("redis://"):].split(":")
                s = socket.create_connection((host, int(port)), timeout=10)
                s.sendall(b"*5\\r\\n$3\\r\\nSET\\r\\n$8\\r\\ncb-close\\r\\n$8\\r\\nintruder\\r\\n$2\\r\\nPX\\r\\n$5\\r\\n60000\\r\\n"); s.recv(64); s.close()
            assert called.wait(60), "on_lost not called"
            c.close()              # waits for the close finished by the helper thread
            assert c.closed and lk.released
            print("OK")
        """, *self.uris)


class TestElection(ServerTestCase):
    """Leader election (Client.elect / Election.resign)."""

    def test_one_leader_then_handover(self):
        name = unique("elect")
        clients = [self.client() for _ in range(3)]
        elections = [c.elect(name, 5000) for c in clients]
        wait_until(lambda: any(e.leader for e in elections), what="a leader")
        leaders = [e for e in elections if e.leader]
        self.assertEqual(len(leaders), 1)
        first = leaders[0]
        self.assertGreater(first.term, 0)
        self.assertGreater(first.validity_ms, 0)
        # The lease is a fenced lock on the name: its counter is the term.
        counters = self.on_all("GET", FENCE_KEY_PREFIX + "{%s}" % name)
        self.assertGreaterEqual(sum(int(v or 0) == first.term for v in counters), 2)
        first.resign()
        self.assertTrue(first.resigned)
        self.assertFalse(first.leader)
        self.assertEqual(first.validity_ms, 0)
        first.resign()  # idempotent
        rest = [e for e in elections if e is not first]
        wait_until(lambda: any(e.leader for e in rest), what="the next leader")
        nxt = [e for e in rest if e.leader][0]
        self.assertGreater(nxt.term, first.term)
        for e in rest:
            e.resign()
        wait_until(lambda: all(v is None for v in self.on_all("GET", name)),
                   what="the key released")

    def test_callbacks_on_io_thread_once_per_term(self):
        name = unique("elect-cb")
        c = self.client()
        events = []
        elected = threading.Event()

        def on_elected(election, term):
            events.append(("elected", term, threading.get_ident()))
            elected.set()

        def on_lost(election, reason):
            events.append(("lost", reason, threading.get_ident()))

        with c.elect(name, 3000, on_elected, on_lost) as e:
            self.assertTrue(elected.wait(30))
            self.assertEqual(e.wait_elected(30), e.term)
            self.assertTrue(e.leader)
        self.assertTrue(e.resigned)
        self.assertEqual(len(events), 1)
        kind, term, ident = events[0]
        self.assertEqual((kind, term), ("elected", e.term))
        self.assertNotEqual(ident, threading.get_ident())
        self.assertIn("resigned", repr(e))

    def test_resign_inside_on_elected(self):
        name = unique("elect-inside")
        c = self.client()
        took = []

        def on_elected(election, term):
            t0 = time.monotonic()
            election.resign()  # on the I/O thread: does not block
            took.append(time.monotonic() - t0)

        e = c.elect(name, 3000, on_elected)
        wait_until(lambda: took, what="on_elected")
        self.assertLess(took[0], 1.0)
        self.assertTrue(e.resigned)
        wait_until(lambda: all(v is None for v in self.on_all("GET", name)),
                   what="the key released")
        other = self.client().elect(name, 3000)
        self.assertIsNotNone(other.wait_elected(30))
        self.assertGreater(other.term, e.term)
        other.resign()

    def test_close_with_live_elections(self):
        name = unique("elect-close")
        c1 = redlock_c.Client(self.uris, **client_kwargs())
        e1 = c1.elect(name, 5000)
        self.assertIsNotNone(e1.wait_elected(30))
        e2 = self.client().elect(name, 5000)
        c1.close()  # releases the leadership, frees the handle
        self.assertTrue(e1.resigned)
        self.assertFalse(e1.leader)
        e1.resign()  # a no-op after close
        self.assertIsNotNone(e2.wait_elected(30))
        self.assertGreater(e2.term, e1.term)
        with self.assertRaises(redlock_c.ClosedError):
            c1.elect(name, 5000)
        e2.resign()

    def test_bad_election_arguments(self):
        c = self.client()
        with self.assertRaises(redlock_c.InvalidArgument):
            c.elect("", 1000)
        with self.assertRaises(redlock_c.InvalidArgument):
            c.elect("x" * (redlock_c.MAX_RESOURCE_LEN + 1), 1000)
        with self.assertRaises(redlock_c.InvalidArgument):
            c.elect("n", 0)
        with self.assertRaises(redlock_c.InvalidArgument):
            c.elect("n", 10 ** 9)
        with self.assertRaises(TypeError):
            c.elect("n", 1000, on_elected=42)
        self.assertEqual(c._core.elections, {})


class TestWhoHolds(ServerTestCase):
    """Owner labels, inspect, revoke and bounded holds."""

    DEADLINE = 20.0

    def test_owner_label_round_trip_and_seen_by_another_client(self):
        a = self.client(owner="worker-a")
        b = self.client()
        self.assertEqual(a.owner, "worker-a")
        self.assertEqual(b.owner, "")
        res = unique("owner")
        lk = a.lock(res, 10000)
        self.assertEqual(lk.owner, "worker-a")
        self.assertTrue(lk.value.endswith("~worker-a"), lk.value)
        self.assertEqual(self.on_all("GET", res), [lk.value] * 3)
        view = b.inspect(res)
        self.assertEqual((view["kind"], view["name"]), ("lock", res))
        self.assertTrue(view["held"])
        self.assertTrue(view["agreed"])
        self.assertEqual(view["owner"], "worker-a")
        self.assertEqual(view["value"], lk.value)
        self.assertGreater(view["ttl_ms_min"], 0)
        self.assertLessEqual(view["ttl_ms_max"], 10000)
        self.assertEqual([m["state"] for m in view["masters"]], ["holds"] * 3)
        self.assertEqual({m["owner"] for m in view["masters"]}, {"worker-a"})
        lk.unlock()
        # A client without a label: its value is the 32 hex digits alone.
        lk = b.lock(res, 10000)
        self.assertEqual(lk.owner, "")
        self.assertRegex(lk.value, r"^[0-9a-f]{32}$")
        view = a.inspect(res)
        self.assertTrue(view["held"])
        self.assertIsNone(view["owner"])
        self.assertEqual(view["value"], lk.value)
        lk.unlock()

    def test_bad_owner_labels(self):
        for bad in ("a~b", "two words", "x" * (redlock_c.MAX_OWNER + 1), "caf\u00e9", "tab\t"):
            with self.assertRaises(redlock_c.InvalidArgument, msg=repr(bad)) as cm:
                redlock_c.Client(self.uris, **client_kwargs(owner=bad))
            self.assertIn("printable ASCII", str(cm.exception))
        with self.assertRaises(redlock_c.InvalidArgument):
            redlock_c.Client(self.uris, **client_kwargs(owner="nul\0"))
        with self.assertRaises(TypeError):
            redlock_c.Client(self.uris, **client_kwargs(owner=42))
        self.assertEqual(self.client(owner="x" * redlock_c.MAX_OWNER).owner,
                         "x" * redlock_c.MAX_OWNER)
        self.assertEqual(self.client(owner="").owner, "")
        self.assertEqual(self.client(owner=b"bytes-label").owner, "bytes-label")

    def test_inspect_free_and_minority(self):
        c = self.client()
        res = unique("inspect-free")
        view = c.inspect(res)
        self.assertFalse(view["held"])
        self.assertTrue(view["agreed"])
        self.assertIsNone(view["owner"])
        self.assertIsNone(view["value"])
        self.assertEqual([m["state"] for m in view["masters"]], ["free"] * 3)
        # Held on one master of three: not held, and no quorum agrees.
        redis_cmd(self.servers[0].port, "SET", res, "0123456789abcdef0123456789abcdef~stray",
                  "PX", 60000)
        view = c.inspect(res)
        self.assertFalse(view["held"])
        self.assertFalse(view["agreed"])
        self.assertEqual(sorted(m["state"] for m in view["masters"]), ["free", "free", "other"])
        redis_cmd(self.servers[0].port, "DEL", res)
        with self.assertRaises(redlock_c.InvalidArgument):
            c.inspect(res, kind="mutex")
        with self.assertRaises(redlock_c.InvalidArgument):
            c.inspect("")
        with self.assertRaises(TypeError):
            c.inspect(None)

    def test_inspect_semaphore_rwlock_election(self):
        a = self.client(owner="sem-a")
        b = self.client(owner="sem-b")
        name = unique("inspect-sem")
        p1 = a.semaphore_acquire(name, limit=3, ttl_ms=10000)
        p2 = b.semaphore_acquire(name, limit=3, ttl_ms=10000)
        view = a.inspect(name, "semaphore")
        self.assertEqual(view["kind"], "semaphore")
        self.assertTrue(view["held"])
        self.assertEqual(view["count"], 2)
        self.assertEqual(sorted(h["owner"] for h in view["holders"]), ["sem-a", "sem-b"])
        p1.unlock()
        p2.unlock()
        self.assertFalse(a.inspect(name, "semaphore")["held"])

        name = unique("inspect-rw")
        r1 = a.rwlock_read(name, 10000)
        r2 = b.rwlock_read(name, 10000)
        view = b.inspect(name, "rwlock")
        self.assertTrue(view["held"])
        self.assertEqual(view["count"], 2)
        self.assertEqual({h["mode"] for h in view["holders"]}, {"read"})
        r1.unlock()
        r2.unlock()
        w = b.rwlock_write(name, 10000)
        view = a.inspect(name, "rwlock")
        self.assertEqual([(h["mode"], h["owner"]) for h in view["holders"]], [("write", "sem-b")])
        w.unlock()

        name = unique("inspect-elect")
        election = a.elect(name, 5000)
        term = election.wait_elected(timeout=self.DEADLINE)
        self.assertIsNotNone(term)
        view = b.inspect(name, "election")
        self.assertEqual(view["kind"], "election")
        self.assertTrue(view["held"])
        self.assertEqual(view["owner"], "sem-a")
        # The largest counter a master reports: the term, or above it on a
        # master outside the quorum that granted it.
        self.assertGreaterEqual(view["fence"], term)
        election.resign()
        wait_until(lambda: not b.inspect(name, "election")["held"], timeout=self.DEADLINE,
                   what="the lease released")

    def test_revoke_makes_the_holder_lose_and_raises_the_fence(self):
        holder = self.client(fencing=True, owner="stuck")
        admin = self.client(fencing=True)
        res = unique("revoke")
        lost = threading.Event()
        lk = holder.lock(res, 2000)
        lk.watch(lambda _lk: lost.set())
        fence = admin.revoke(res)
        self.assertGreater(fence, lk.fence)
        self.assertTrue(lost.wait(self.DEADLINE), "the watch reported no loss")
        self.assertTrue(lk.lost)
        self.assertEqual(lk.lost_reason, redlock_c.LOST_EXPIRED)
        self.assertFalse(admin.inspect(res)["held"])
        # The next grant's token is above the revoke's.
        nxt = admin.lock(res, 5000)
        self.assertGreater(nxt.fence, fence)
        nxt.unlock()
        with self.assertRaises(redlock_c.LostError):
            lk.unlock()
        with self.assertRaises(redlock_c.InvalidArgument):
            admin.revoke("")

    def test_revoke_without_fencing_returns_zero_and_keeps_the_lease(self):
        holder = self.client()
        admin = self.client()
        res = unique("revoke-nofence")
        lk = holder.lock(res, 5000)
        self.assertEqual(admin.revoke(res), 0)
        with self.assertRaises(redlock_c.LostError):
            lk.extend(5000)
        # The revoker's value keeps the rest of the old lease: nobody is
        # granted the lock before it would have ended.
        with self.assertRaises(redlock_c.LockedError):
            admin.trylock(res, 5000)
        with self.assertRaises(redlock_c.LostError):
            lk.unlock()

    def test_bounded_watch_ends_with_max_hold_and_frees_the_lock(self):
        c = self.client(owner="bounded")
        other = self.client()
        res = unique("bounded")
        done = threading.Event()
        reasons = []

        def on_lost(lock):  # the I/O thread: inspect would wait for it
            reasons.append(lock.lost_reason)
            try:
                c.inspect(res)
            except redlock_c.WouldBlockError:
                reasons.append("would block")
            done.set()

        lk = c.lock(res, 2000)
        # The bound is above the TTL: the watch must renew before the bound ends it.
        lk.watch(on_lost, max_hold_ms=3000)
        self.assertTrue(done.wait(self.DEADLINE), "the bound never ended the watch")
        self.assertEqual(reasons, [redlock_c.LOST_MAX_HOLD, "would block"])
        self.assertGreater(redlock_c.LOST_MAX_HOLD, 0)  # not an error code
        self.assertTrue(lk.lost)
        wait_until(lambda: not other.inspect(res)["held"], timeout=self.DEADLINE,
                   what="the lock released after the bound")
        other.trylock(res, 5000).unlock()
        lk.unlock()  # allowed after the bound, and no error: it ended on purpose
        self.assertTrue(lk.released)
        lk2 = c.lock(res, 5000)
        with self.assertRaises(redlock_c.InvalidArgument):
            lk2.watch(None, max_hold_ms=0)
        with self.assertRaises(TypeError):
            lk2.watch(None, max_hold_ms=1.5)
        lk2.unlock()

    def test_bounded_election(self):
        name = unique("elect-bounded")
        a = self.client(owner="cand-a")
        b = self.client(owner="cand-b")
        lost = []
        ended = threading.Event()

        def on_lost(_election, reason):
            lost.append(reason)
            ended.set()

        ea = a.elect(name, 2000, on_lost=on_lost, max_hold_ms=3000)
        first = ea.wait_elected(timeout=self.DEADLINE)
        self.assertIsNotNone(first)
        self.assertTrue(ended.wait(self.DEADLINE), "the bound never ended the term")
        self.assertEqual(lost[0], redlock_c.LOST_MAX_HOLD)
        # The release woke the others: b (or a again, after its back-off) wins a later term.
        eb = b.elect(name, 5000)
        wait_until(lambda: eb.leader or ea.term > first, timeout=self.DEADLINE,
                   what="a later term")
        self.assertGreater(max(eb.term, ea.term), first)
        ea.resign()
        eb.resign()
        with self.assertRaises(redlock_c.InvalidArgument):
            a.elect(name, 1000, max_hold_ms=0)


class TestLeaderObserve(ServerTestCase):
    """Client.leader and Client.observe (redlock_election_leader / _observe)."""

    DEADLINE = 20.0

    def test_leader_none_then_held_then_none(self):
        name = unique("leader")
        a = self.client(owner="cand-a")
        watcher = self.client()
        view = watcher.leader(name)
        self.assertEqual((view.state, view.term, view.ttl_ms, view.owner),
                         (redlock_c.LEADER_NONE, 0, 0, ""))
        self.assertFalse(view.held)
        e = a.elect(name, 5000)
        term = e.wait_elected(timeout=self.DEADLINE)
        self.assertIsNotNone(term)
        # One read says what it saw: a master the grant's fence commit has
        # not reached yet shows a counter below the term.
        wait_until(lambda: watcher.leader(name).term == term, timeout=self.DEADLINE,
                   what="the leader's term")
        view = watcher.leader(name)
        self.assertEqual(view.state, redlock_c.LEADER_HELD)
        self.assertEqual(view.term, term)
        self.assertEqual(view.owner, "cand-a")
        self.assertGreater(view.ttl_ms, 0)
        self.assertLessEqual(view.ttl_ms, 5000)
        e.resign()  # returns once the loop took it, not once the masters released
        wait_until(lambda: watcher.leader(name).state == redlock_c.LEADER_NONE,
                   timeout=self.DEADLINE, what="nobody leads")
        with self.assertRaises(redlock_c.InvalidArgument):
            watcher.leader("")

    def test_observe_sees_a_hand_off(self):
        name = unique("observe")
        a = self.client(owner="cand-a")
        b = self.client(owner="cand-b")
        watcher = self.client()
        views = []
        threads = set()

        def on_change(view):
            threads.add(threading.get_ident())
            views.append(view)

        obs = watcher.observe(name, on_change)
        self.assertIsNotNone(obs.wait_for(lambda v: True, self.DEADLINE), "no first view")
        ea = a.elect(name, 5000)
        first = ea.wait_elected(timeout=self.DEADLINE)
        # A read while the grant's fence is being committed may see the
        # leader's value before its term: the view that counts has both.
        seen = obs.wait_for(lambda v: v.owner == "cand-a" and v.term == first, self.DEADLINE)
        self.assertIsNotNone(seen, "the first leader was not seen: %r" % (views,))
        self.assertEqual(seen.state, redlock_c.LEADER_HELD)
        eb = b.elect(name, 5000)
        ea.resign()  # the release is announced: b takes over, the observer is woken
        second = eb.wait_elected(timeout=self.DEADLINE)
        self.assertGreater(second, first)
        seen = obs.wait_for(lambda v: v.owner == "cand-b" and v.term == second, self.DEADLINE)
        self.assertIsNotNone(seen, "the hand-off was not seen: %r" % (views,))
        # Only changes are reported: never the same view twice in a row.
        for before, after in zip(views, views[1:]):
            self.assertNotEqual(before, after, views)
        self.assertNotIn(threading.get_ident(), threads)  # the I/O thread
        obs.stop()
        self.assertTrue(obs.stopped)
        obs.stop()  # idempotent
        count = len(views)
        eb.resign()  # a change nobody is told about any more
        wait_until(lambda: watcher.leader(name).state == redlock_c.LEADER_NONE,
                   timeout=self.DEADLINE, what="nobody leads")
        self.assertEqual(len(views), count)

    def test_stop_from_the_callback(self):
        name = unique("observe-stop")
        c = self.client()
        box = []
        stopped = threading.Event()

        def on_change(view):
            if box and view.held:
                box[0].stop()  # on the I/O thread: returns at once
                stopped.set()

        obs = c.observe(name, on_change)
        box.append(obs)
        e = self.client().elect(name, 5000)  # a change after box is filled
        self.assertTrue(stopped.wait(self.DEADLINE), "the callback never stopped it")
        self.assertTrue(obs.stopped)
        e.resign()
        # The client still works after a stop from its loop.
        self.assertNotEqual(c.leader(name).state, redlock_c.LEADER_UNKNOWN)

    def test_observer_context_manager_close_and_bad_arguments(self):
        name = unique("observe-cm")
        c = redlock_c.Client(self.uris, **client_kwargs())
        try:
            with c.observe(name, lambda v: None, poll_ms=50) as obs:
                self.assertIsNotNone(obs.wait_for(lambda v: v.state == redlock_c.LEADER_NONE,
                                                  self.DEADLINE))
            self.assertTrue(obs.stopped)
            with self.assertRaises(TypeError):
                c.observe(name, None)
            with self.assertRaises(TypeError):
                c.observe(name, lambda v: None, poll_ms=0.5)
            with self.assertRaises(redlock_c.InvalidArgument):
                c.observe("", lambda v: None)
            left = c.observe(name, lambda v: None)
        finally:
            c.close()
        self.assertTrue(left.stopped)  # the close stopped it
        left.stop()  # a no-op after the close
        with self.assertRaises(redlock_c.ClosedError):
            c.observe(name, lambda v: None)


class TestWhoHoldsExamples(ServerTestCase):
    """examples/owner_inspect.py, revoke_fenced.py, bounded_watch.py (type-checked by
    python_mypy) run against real masters."""

    def run_example(self, name):
        path = os.path.join(PKG_ROOT, "examples", name)
        proc = subprocess.run([sys.executable, path] + self.uris, env=subprocess_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=SUBPROCESS_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        return proc.stdout

    # What each example must print (regular expressions).
    EXPECTED = {
        "owner_inspect.py": (r"lock reports:daily held by report-worker-7 ",
                             r"lock reports:daily is free",
                             r"semaphore exporters held by report-worker-7 "),
        "revoke_fenced.py": (r"stale write refused: True", r"holder told: lost",
                             r"next holder's token \d+ -> True"),
        "observe_leader.py": (r"now: nobody leads", r"change: led by scheduler-a",
                              r"handed over to scheduler-b"),
        "bounded_watch.py": (r"hold ended at its bound \(not a failure\)",
                             r"next holder got it, validity True"),
    }

    def test_examples(self):
        for name, wants in self.EXPECTED.items():
            with self.subTest(example=name):
                out = self.run_example(name)
                for want in wants:
                    self.assertRegex(out, want)


class TestMastersDying(unittest.TestCase):
    """Own servers: killed during the test."""

    def setUp(self):
        if REDIS_SERVER is None:
            self.skipTest("redis-server not found on PATH (or REDLOCK_TEST_SERVER)")
        self.servers = start_servers(3)
        for s in self.servers:
            self.addCleanup(s.stop)

    def test_watch_reports_lost_when_masters_die(self):
        msgs = []
        c = redlock_c.Client([s.uri for s in self.servers],
                           **client_kwargs(request_timeout_ms=300,
                                           log=lambda lvl, m: msgs.append(m)))
        self.addCleanup(c.close)
        lost = threading.Event()
        got = []

        def on_lost(lock):
            got.append(lock)
            lost.set()

        lk = c.lock(unique("dying"), 1500, watch=True, on_lost=on_lost)
        self.servers[0].stop()
        self.servers[1].stop()
        self.assertTrue(lost.wait(30), "on_lost not called after a quorum died")
        self.assertIs(got[0], lk)
        self.assertTrue(lk.lost)
        self.assertLessEqual(lk.validity_ms, 1500)
        with self.assertRaises(redlock_c.NoQuorumError):
            c.trylock(unique("after"), 1000)
        self.assertIn("no quorum", c.last_votes())
        with self.assertRaises((redlock_c.NoQuorumError, redlock_c.LostError)):
            lk.unlock()
        self.assertTrue(lk.released)
        wait_until(lambda: msgs, what="a warning in the log")


if __name__ == "__main__":
    unittest.main()
