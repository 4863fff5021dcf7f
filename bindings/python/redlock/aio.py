"""redlock.aio: the asyncio face of the binding.

    import asyncio, redlock.aio

    async def main():
        async with await redlock.aio.AsyncClient.open(NODES) as client:
            async with await client.lock("orders:42", ttl_ms=10000, wait_ms=5000) as lk:
                ...  # lk.fence, lk.validity_ms

Acquire, extend and unlock run on the C library's callback API
(redlock_lock_async / _extend_async / _unlock_async): the library's I/O
thread finishes them and hands the result to the event loop with
loop.call_soon_threadsafe, so no thread is blocked per call and any number of
acquisitions can wait at once.  Opening and closing a client, trylock() and
lock_many() have no callback form in the C API; they run in the loop's default
executor (each is bounded: connect timeout, request timeout, retry policy).

Cancelling the task that awaits lock() abandons the acquisition: if the
library grants it afterwards, the lock is released at once in the background,
never handed to anyone.  (The C API has no cancel for one call, so the
attempt itself runs on until its wait budget or grant.)

An AsyncLock's watch callback (on_lost) runs on the event loop, not on the
library's thread.  Everything else (errors, properties, close semantics) is
as in the blocking API of the redlock package.
"""

import asyncio
import ctypes
import itertools
import threading

from . import (_DONE_CB, EINVAL, ELOST, ECLOSED, Client, ClosedError, InvalidArgument,
               _bytes_arg, _make_error, _round_votes, _u32)

__all__ = ["AsyncClient", "AsyncLock"]


def _declare_async(lib):
    """The callback forms the blocking binding does not use itself."""
    c_int, c_u32, c_vp = ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p
    fn = lib.redlock_extend_async
    fn.restype, fn.argtypes = c_int, [c_vp, c_vp, c_u32, _DONE_CB, c_vp]


def _resolve(fut, status, value, votes=None):
    """On the event loop: completes fut unless its awaiter went away.  votes:
    a failure's, read in the library's callback."""
    if fut.done():
        return
    if status != 0:
        fut.set_exception(_make_error(status, votes=votes))
    else:
        fut.set_result(value)


class _AsyncPending:
    """A lock() in flight, as the blocking binding's pending-table entry
    (_Core._on_lock_done fills status/handle under mutex and calls
    event.set()), whose 'event' completes an asyncio future instead."""
    __slots__ = ("event", "mutex", "status", "handle", "votes", "done", "abandoned", "_loop",
                 "_fut", "_release")

    def __init__(self, loop, fut, release):
        self.mutex = threading.Lock()
        self._release = release
        self.status = None
        self.handle = None
        self.votes = None
        self.done = False
        self.abandoned = False
        self._loop = loop
        self._fut = fut
        self.event = self  # _on_lock_done calls op.event.set()

    def set(self):
        try:
            self._loop.call_soon_threadsafe(_resolve, self._fut, self.status, self.handle,
                                            self.votes)
        except RuntimeError:
            # The event loop is closed: nobody can take the lock any more.
            # We are on the I/O thread, where a release only starts.
            if self.status == 0 and self.handle:
                self._release(self.handle)


class AsyncClient:
    """A Redlock client for asyncio.  Build it with ``await AsyncClient.open(
    nodes, **options)`` (the open waits up to the connect timeout, off the
    event loop) or ``AsyncClient(nodes, **options)`` (blocks while opening).
    Options are those of redlock.Client."""

    def __init__(self, nodes, **options):
        self._client = Client(nodes, **options)
        core = self._client._core
        _declare_async(core.lib)
        self._keys = itertools.count(1)
        self._done = {}  # key -> (loop, future, votes?) for extend/unlock callbacks
        self._done_cb = _DONE_CB(self._on_done)

    @classmethod
    async def open(cls, nodes, **options):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: cls(nodes, **options))

    # -- life cycle
    @property
    def client(self):
        """The underlying blocking redlock.Client (same locks, same rules)."""
        return self._client

    @property
    def closed(self):
        return self._client.closed

    async def aclose(self):
        """Releases every lock still held, fails waiting lock() calls with
        CanceledError, stops the I/O thread.  Runs in the default executor."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._client.close)

    async def __aenter__(self):
        if self.closed:
            raise ClosedError(ECLOSED)
        return self

    async def __aexit__(self, *exc):
        await self.aclose()
        return False

    # -- acquisition
    async def lock(self, resource, ttl_ms, wait_ms=None, watch=False, on_lost=None):
        """Acquires resource (redlock_lock_async): wait_ms None/0 retries by
        the retry policy, wait_ms > 0 waits up to wait_ms, woken by releases.
        Returns an AsyncLock; raises as Client.lock."""
        res = _bytes_arg(resource, "resource")
        ttl = _u32(ttl_ms, "ttl_ms")
        wait = 0 if wait_ms is None else _u32(wait_ms, "wait_ms")
        return await self._acquire(
            lambda lib, ptr, cb, key: lib.redlock_lock_async(ptr, res, ttl, wait, cb, key),
            (resource,), watch, on_lost)

    async def semaphore_acquire(self, name, limit, ttl_ms, wait_ms=0, watch=False, on_lost=None):
        """A semaphore permit (redlock_semaphore_acquire_async), as
        Client.semaphore_acquire.  Returns an AsyncLock."""
        res = _bytes_arg(name, "name")
        lim = _u32(limit, "limit")
        ttl = _u32(ttl_ms, "ttl_ms")
        wait = _u32(wait_ms or 0, "wait_ms")
        fn = self._client._optional("redlock_semaphore_acquire_async")
        return await self._acquire(
            lambda lib, ptr, cb, key: fn(ptr, res, lim, ttl, wait, cb, key), None, watch, on_lost)

    async def rwlock_read(self, name, ttl_ms, wait_ms=0, watch=False, on_lost=None):
        """A read hold (redlock_rwlock_read_async), as Client.rwlock_read."""
        return await self._rwlock("redlock_rwlock_read_async", name, ttl_ms, wait_ms, watch,
                                  on_lost)

    async def rwlock_write(self, name, ttl_ms, wait_ms=0, watch=False, on_lost=None):
        """A write hold (redlock_rwlock_write_async), as Client.rwlock_write."""
        return await self._rwlock("redlock_rwlock_write_async", name, ttl_ms, wait_ms, watch,
                                  on_lost)

    async def _rwlock(self, symbol, name, ttl_ms, wait_ms, watch, on_lost):
        res = _bytes_arg(name, "name")
        ttl = _u32(ttl_ms, "ttl_ms")
        wait = _u32(wait_ms or 0, "wait_ms")
        fn = self._client._optional(symbol)
        return await self._acquire(lambda lib, ptr, cb, key: fn(ptr, res, ttl, wait, cb, key),
                                   (name,), watch, on_lost)

    async def _acquire(self, start, resources, watch, on_lost):
        """Runs an acquisition through its callback form; start(lib, ptr, cb,
        key) makes the C call.  resources None: a permit, named by its slot."""
        core = self._client._core
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        op = _AsyncPending(loop, fut, self._client._release_orphan)
        key = next(core.keys)
        core.enter()
        try:
            core.pending[key] = op
            rc = start(core.lib, core.ptr, core.lock_cb, key)
            if rc != 0:
                core.pending.pop(key, None)
                raise _make_error(rc)
        finally:
            core.leave()
        try:
            handle = await fut
        except asyncio.CancelledError:
            with op.mutex:
                if not op.done:
                    op.abandoned = True  # _on_lock_done releases a late grant
                    raise
            if op.status == 0 and op.handle:
                self._client._release_orphan(op.handle)
            raise
        lk = self._client._adopt(handle, resources)
        return await self._wrap(lk, watch, on_lost, loop)

    async def trylock(self, resource, ttl_ms, watch=False, on_lost=None):
        """One attempt (redlock_trylock), in the default executor."""
        loop = asyncio.get_running_loop()
        lk = await loop.run_in_executor(None, self._client.trylock, resource, ttl_ms)
        return await self._wrap(lk, watch, on_lost, loop)

    async def lock_many(self, resources, ttl_ms, watch=False, on_lost=None):
        """All resources or none (redlock_lock_many), in the default executor."""
        loop = asyncio.get_running_loop()
        lk = await loop.run_in_executor(None, self._client.lock_many, resources, ttl_ms)
        return await self._wrap(lk, watch, on_lost, loop)

    def last_votes(self):
        return self._client.last_votes()

    # -- internals
    async def _wrap(self, lk, watch, on_lost, loop):
        alk = AsyncLock(self, lk)
        if watch or on_lost is not None:
            try:
                alk.watch(on_lost)
            except BaseException:
                await alk.unlock()
                raise
        return alk

    def _on_done(self, status, key):
        """I/O thread: an extend/unlock callback."""
        entry = self._done.pop(key, None)
        if entry is None:
            return
        loop, fut, want_votes = entry
        core = self._client._core
        # Here, on the I/O thread, the votes are this call's round.
        votes = _round_votes(core.lib, core.ptr, status) if want_votes else None
        try:
            loop.call_soon_threadsafe(_resolve, fut, status, None, votes)
        except RuntimeError:
            pass  # the event loop is gone: nobody waits

    def _start(self, start, votes=True):
        """Registers a future, runs start(key) (a C call returning rc) and
        returns the future; a call that returns an error never calls back.
        votes=False: a failure decided no round (it carries no votes)."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        key = next(self._keys)
        self._done[key] = (loop, fut, votes)
        rc = start(key)
        if rc != 0:
            self._done.pop(key, None)
            raise _make_error(rc)
        return fut


class AsyncLock:
    """One held lock, as redlock.Lock, with awaitable extend() and unlock().
    ``async with`` unlocks on exit (errors of that unlock are suppressed when
    the block raised)."""

    def __init__(self, aclient, lock):
        self._aclient = aclient
        self._lock = lock

    # Properties are those of the blocking Lock.
    resource = property(lambda self: self._lock.resource)
    resources = property(lambda self: self._lock.resources)
    value = property(lambda self: self._lock.value)
    fence = property(lambda self: self._lock.fence)
    validity_ms = property(lambda self: self._lock.validity_ms)
    lost = property(lambda self: self._lock.lost)
    released = property(lambda self: self._lock.released)

    @property
    def lock(self):
        """The underlying blocking redlock.Lock."""
        return self._lock

    async def extend(self, ttl_ms):
        """redlock_extend_async: LostError if the lock was lost."""
        lk = self._lock
        core = lk._core
        ttl = _u32(ttl_ms, "ttl_ms")
        with core.mutex:
            handle = lk._handle
            if handle is None:
                raise lk._gone()
            core.enter()
        try:
            # Lost already (or run out): ELOST without a round, so no votes.
            lost_before = core.lib.redlock_lock_is_lost(handle) != 0
            fut = self._aclient._start(lambda key: core.lib.redlock_extend_async(
                core.ptr, handle, ttl, self._aclient._done_cb, key), votes=not lost_before)
        finally:
            core.leave()
        try:
            await fut
        except Exception as exc:
            if getattr(exc, "code", None) == ELOST:
                lk._lost = True
            raise

    async def unlock(self):
        """redlock_unlock_async: releases on all masters; a second call is a
        no-op.  The lock is released even when this raises (LostError: a
        quorum no longer had our value)."""
        lk = self._lock
        core = lk._core
        with core.mutex:
            handle = lk._handle
            if handle is None:
                return
            core.enter()
            lk._handle = None
        try:
            fut = self._aclient._start(lambda key: core.lib.redlock_unlock_async(
                core.ptr, handle, self._aclient._done_cb, key))
        except BaseException:
            with core.mutex:  # not queued: the handle stays live
                if core.state == "open":
                    lk._handle = handle
            raise
        finally:
            core.leave()
        lk._forget_watch()
        try:
            await fut
        except Exception as exc:
            if getattr(exc, "code", None) == ELOST:
                lk._lost = True
            raise

    def watch(self, on_lost=None):
        """Keeps extending the lock until unlock; on_lost(async_lock) runs on
        the event loop once if it is lost."""
        if on_lost is not None and not callable(on_lost):
            raise InvalidArgument(EINVAL, detail="on_lost must be callable")
        if on_lost is None:
            self._lock.watch(None)
            return
        loop = asyncio.get_running_loop()

        def relay(_lock):  # the library's I/O thread
            try:
                loop.call_soon_threadsafe(on_lost, self)
            except RuntimeError:
                pass  # the event loop is gone

        self._lock.watch(relay)

    async def __aenter__(self):
        return self

    async def __aexit__(self, exc_type, exc, tb):
        if exc_type is None:
            await self.unlock()
        else:
            try:
                await self.unlock()
            except Exception:
                pass
        return False

    def __repr__(self):
        return "<redlock.aio.AsyncLock %r>" % (self._lock,)

