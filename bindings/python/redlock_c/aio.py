"""redlock_c.aio: the asyncio face of the binding.

    import asyncio, redlock_c.aio

    async def main():
        async with redlock_c.aio.AsyncClient.open(NODES) as client:
            async with client.lock("orders:42", ttl_ms=10000, wait_ms=5000) as lk:
                ...  # lk.fence, lk.validity_ms

AsyncClient.open() and every acquisition return an object that is both
awaitable (``lk = await client.lock(...)``) and an async context manager
(``async with client.lock(...) as lk``: acquired on entry, released on exit).

Acquisitions (lock, lock_many, semaphore_acquire, rwlock_*), extend and
unlock run on the C library's callback API (redlock_lock_async_ex, ...): the
library's I/O thread finishes them and hands the result to the event loop
with loop.call_soon_threadsafe, so no thread is blocked per call and any
number of acquisitions can wait at once.  Opening and closing a client,
trylock() and resign() have no callback form in the C API; they run in the
loop's default executor (each is bounded: connect timeout, request timeout,
retry policy), and so do inspect(), revoke(), leader() and an observer's
stop(), which are blocking C calls too.

Cancelling the task that awaits an acquisition cancels the C call
(redlock_cancel with the id its _ex form gave): nothing more is sent for
it, whatever its last round set on the masters is released by the library,
and a grant decided just before the cancel is released at once, never handed
to anyone.  The await ends with CancelledError.

Watch and election callbacks (on_lost, on_elected) run on the event loop,
not on the library's thread.  Everything else (errors, properties, close
semantics) is as in the blocking API of the redlock_c package.
"""

import asyncio
import collections.abc
import ctypes
import itertools
import threading

from . import (_DONE_CB, EINVAL, ELOST, ECLOSED, LOST_MAX_HOLD, Client, ClosedError,
               InvalidArgument, _bytes_arg, _make_error, _ms, _round_votes, _ttl_arg, _u32)

__all__ = ["AsyncClient", "AsyncLock", "AsyncElection", "AsyncObserver"]


class _Awaitable(collections.abc.Coroutine):
    """What AsyncClient.open() and the acquisitions return: a coroutine (so
    await, asyncio.create_task, wait_for and gather take it) that is also an
    async context manager (enters with the coroutine's result, which must be
    an async context manager itself, and leaves through it)."""
    __slots__ = ("_coro", "_value")

    def __init__(self, coro):
        self._coro = coro
        self._value = None

    def __await__(self):
        return self._coro.__await__()

    def send(self, value):
        return self._coro.send(value)

    def throw(self, *exc_info):
        return self._coro.throw(*exc_info)

    def close(self):
        return self._coro.close()

    async def __aenter__(self):
        self._value = await self._coro
        return self._value

    async def __aexit__(self, exc_type, exc, tb):
        await self._value.__aexit__(exc_type, exc, tb)


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
    __slots__ = ("event", "mutex", "status", "handle", "votes", "done", "abandoned", "call_id",
                 "_loop", "_fut", "_release")

    def __init__(self, loop, fut, release):
        self.call_id = 0
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
    """A Redlock client for asyncio, with the whole API of redlock_c.Client.
    Build it with ``await AsyncClient.open(nodes, **options)`` or ``async
    with AsyncClient.open(nodes, **options) as client`` (the open waits up to
    the connect timeout, off the event loop), or ``AsyncClient(nodes,
    **options)`` (blocks while opening).  Options are those of
    redlock_c.Client."""

    def __init__(self, nodes, **options):
        self._client = Client(nodes, **options)
        core = self._client._core
        _declare_async(core.lib)
        self._keys = itertools.count(1)
        self._done = {}  # key -> (loop, future, votes?) for extend/unlock callbacks
        self._done_cb = _DONE_CB(self._on_done)

    @classmethod
    def open(cls, nodes, **options):
        """Opens a client in the default executor: await it, or use it with
        ``async with`` (closed on exit)."""
        async def opening():
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, lambda: cls(nodes, **options))
        return _Awaitable(opening())

    # -- life cycle
    @property
    def client(self):
        """The underlying blocking redlock_c.Client (same locks, same rules)."""
        return self._client

    @property
    def closed(self):
        return self._client.closed

    async def aclose(self):
        """Releases every lock still held, fails waiting lock() calls with
        CanceledError, stops the I/O thread.  Runs in the default executor."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._client.close)

    async def close(self):
        """The same as aclose()."""
        await self.aclose()

    async def __aenter__(self):
        if self.closed:
            raise ClosedError(ECLOSED)
        return self

    async def __aexit__(self, exc_type, exc, tb):
        await self.aclose()

    # -- acquisition: each returns an awaitable async context manager
    def lock(self, resource, ttl_ms, wait_ms=None, watch=False, on_lost=None):
        """Acquires resource (redlock_lock_async_ex): wait_ms None/0 retries
        by the retry policy, wait_ms > 0 waits up to wait_ms, woken by
        releases.  Gives an AsyncLock; raises as Client.lock."""
        async def acquire():
            res = _bytes_arg(resource, "resource")
            ttl = self._client._ttl(ttl_ms)
            wait = 0 if wait_ms is None else _ms(wait_ms, "wait_ms")
            return await self._acquire("redlock_lock_async", (res, ttl, wait), (resource,),
                                       watch, on_lost)
        return _Awaitable(acquire())

    def semaphore_acquire(self, name, limit, ttl_ms, wait_ms=0, watch=False, on_lost=None):
        """A semaphore permit (redlock_semaphore_acquire_async_ex), as
        Client.semaphore_acquire.  Gives an AsyncLock."""
        async def acquire():
            res = _bytes_arg(name, "name")
            lim = _u32(limit, "limit")
            ttl = self._client._ttl(ttl_ms)
            wait = _ms(wait_ms or 0, "wait_ms")
            self._client._optional("redlock_semaphore_acquire_async")
            return await self._acquire("redlock_semaphore_acquire_async", (res, lim, ttl, wait),
                                       None, watch, on_lost)
        return _Awaitable(acquire())

    def rwlock_read(self, name, ttl_ms, wait_ms=0, watch=False, on_lost=None):
        """A read hold (redlock_rwlock_read_async_ex), as Client.rwlock_read."""
        return _Awaitable(self._rwlock("redlock_rwlock_read_async", name, ttl_ms, wait_ms, watch,
                                       on_lost))

    def rwlock_write(self, name, ttl_ms, wait_ms=0, watch=False, on_lost=None):
        """A write hold (redlock_rwlock_write_async_ex), as Client.rwlock_write."""
        return _Awaitable(self._rwlock("redlock_rwlock_write_async", name, ttl_ms, wait_ms, watch,
                                       on_lost))

    async def _rwlock(self, symbol, name, ttl_ms, wait_ms, watch, on_lost):
        res = _bytes_arg(name, "name")
        ttl = self._client._ttl(ttl_ms)
        wait = _ms(wait_ms or 0, "wait_ms")
        self._client._optional(symbol)
        return await self._acquire(symbol, (res, ttl, wait), (name,), watch, on_lost)

    def lock_many(self, resources, ttl_ms, watch=False, on_lost=None):
        """All resources or none (redlock_lock_many_async_ex; in the default
        executor with a library that lacks it), as Client.lock_many."""
        async def acquire():
            if isinstance(resources, (str, bytes)):
                raise TypeError("resources must be a list, not a single string")
            names = tuple(resources)
            encoded = [_bytes_arg(r, "resource") for r in names]
            ttl = self._client._ttl(ttl_ms)
            if getattr(self._client._core.lib, "redlock_lock_many_async_ex", None) is None:
                loop = asyncio.get_running_loop()
                lk = await loop.run_in_executor(None, self._client.lock_many, names, ttl)
                return await self._wrap(lk, watch, on_lost, loop)
            arr = (ctypes.c_char_p * max(1, len(encoded)))(*encoded)
            # arr stays referenced by this frame until the call has returned:
            # the library copies the names at submission.
            return await self._acquire("redlock_lock_many_async", (arr, len(encoded), ttl),
                                       names, watch, on_lost)
        return _Awaitable(acquire())

    async def _acquire(self, symbol, args, resources, watch, on_lost):
        """Runs an acquisition through its callback form (_Core.submit).
        resources None: a permit, named by its slot.  Cancelled while
        waiting: redlock_cancel, and a grant decided before is released."""
        core = self._client._core
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        op = _AsyncPending(loop, fut, self._client._release_orphan)
        core.start(op, symbol, args)
        try:
            handle = await fut
        except asyncio.CancelledError:
            with op.mutex:
                abandoned = not op.done
                op.abandoned = abandoned  # _on_lock_done releases a late grant
            if abandoned:
                core.cancel(op.call_id)
            elif op.status == 0 and op.handle:
                self._client._release_orphan(op.handle)
            raise
        lk = self._client._adopt(handle, resources)
        return await self._wrap(lk, watch, on_lost, loop)

    def trylock(self, resource, ttl_ms, watch=False, on_lost=None):
        """One attempt (redlock_trylock), in the default executor."""
        async def acquire():
            loop = asyncio.get_running_loop()
            lk = await loop.run_in_executor(None, self._client.trylock, resource, ttl_ms)
            return await self._wrap(lk, watch, on_lost, loop)
        return _Awaitable(acquire())

    # -- leader election
    async def elect(self, name, ttl_ms, on_elected=None, on_lost=None, max_hold_ms=None):
        """Campaigns for leadership of name (redlock_elect), as Client.elect
        (max_hold_ms bounds every term, reason LOST_MAX_HOLD); returns an
        AsyncElection at once.  on_elected(election, term) and
        on_lost(election, reason) run on the event loop."""
        for fn, what in ((on_elected, "on_elected"), (on_lost, "on_lost")):
            if fn is not None and not callable(fn):
                raise TypeError("%s must be callable" % what)
        loop = asyncio.get_running_loop()
        aelection = AsyncElection(loop, on_elected, on_lost)

        def elected(_election, term):  # the library's I/O thread
            aelection._relay(aelection._on_elected_cb, term)

        def lost(_election, reason):
            aelection._relay(aelection._on_lost_cb, reason)

        aelection._election = self._client.elect(name, ttl_ms, elected, lost,
                                                 max_hold_ms=max_hold_ms)
        return aelection

    # -- who holds it, and taking it back
    async def inspect(self, name, kind="lock"):
        """As Client.inspect (a dict), in the default executor: the round
        blocks its thread up to the request timeout."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self._client.inspect, name, kind)

    async def revoke(self, resource):
        """As Client.revoke (the new fence), in the default executor."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self._client.revoke, resource)

    # -- who leads
    async def leader(self, name):
        """As Client.leader (a redlock_c.Leader), in the default executor."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self._client.leader, name)

    def observe(self, name, callback, poll_ms=0):
        """As Client.observe, with callback(leader) run on the event loop;
        returns an AsyncObserver (await stop(), or ``async with``)."""
        if not callable(callback):
            raise InvalidArgument(EINVAL, detail="callback must be callable")
        loop = asyncio.get_running_loop()
        aobserver = AsyncObserver(loop, callback)

        def relay(leader):  # the library's I/O thread
            try:
                loop.call_soon_threadsafe(callback, leader)
            except RuntimeError:
                pass  # the event loop is gone

        aobserver._observer = self._client.observe(name, relay, poll_ms)
        return aobserver

    # -- diagnostics
    def last_votes(self):
        """As Client.last_votes (does not block)."""
        return self._client.last_votes()

    def stats(self, format=None):
        """As Client.stats (does not block: a copy of the counters)."""
        return self._client.stats(format)

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
    """One held lock, as redlock_c.Lock, with awaitable extend() and unlock().
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
    owner = property(lambda self: self._lock.owner)
    lost_reason = property(lambda self: self._lock.lost_reason)
    validity_ms = property(lambda self: self._lock.validity_ms)
    lost = property(lambda self: self._lock.lost)
    released = property(lambda self: self._lock.released)

    @property
    def lock(self):
        """The underlying blocking redlock_c.Lock."""
        return self._lock

    async def extend(self, ttl_ms):
        """redlock_extend_async: LostError if the lock was lost."""
        lk = self._lock
        core = lk._core
        ttl = _ttl_arg(ttl_ms, "ttl_ms", core.max_ttl_ms)
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
                if lk._lost_reason == LOST_MAX_HOLD:
                    return  # released by the library at the bound, as asked
                lk._lost = True
            raise

    def watch(self, on_lost=None, max_hold_ms=None):
        """Keeps extending the lock until unlock; on_lost(async_lock) runs on
        the event loop once if it is lost, or once the hold reached
        max_hold_ms (as Lock.watch: .lost_reason says which)."""
        if on_lost is not None and not callable(on_lost):
            raise InvalidArgument(EINVAL, detail="on_lost must be callable")
        if on_lost is None:
            self._lock.watch(None, max_hold_ms=max_hold_ms)
            return
        loop = asyncio.get_running_loop()

        def relay(_lock):  # the library's I/O thread
            try:
                loop.call_soon_threadsafe(on_lost, self)
            except RuntimeError:
                pass  # the event loop is gone

        self._lock.watch(relay, max_hold_ms=max_hold_ms)

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

    def owned(self):
        """As Lock.owned(): held, not lost, validity left (local estimate)."""
        return self._lock.owned()

    def locked(self):
        """As Lock.locked()."""
        return self._lock.locked()

    def __repr__(self):
        return "<redlock_c.aio.AsyncLock %r>" % (self._lock,)


class AsyncElection:
    """One campaign (AsyncClient.elect), as redlock_c.Election with
    awaitable wait_elected() and resign().  Its callbacks run on the event
    loop.  ``async with`` resigns on exit."""

    def __init__(self, loop, on_elected, on_lost):
        self._loop = loop
        self._election = None  # set by AsyncClient.elect once redlock_elect returned
        self._on_elected_cb = on_elected
        self._on_lost_cb = on_lost
        self._waiters = []  # futures woken on each change; the event loop's only

    def _relay(self, fn, arg):
        """I/O thread: hands a term change to the event loop."""
        def run():
            for fut in self._waiters:
                if not fut.done():
                    fut.set_result(None)
            self._waiters = []
            if fn is not None:
                fn(self, arg)
        try:
            self._loop.call_soon_threadsafe(run)
        except RuntimeError:
            pass  # the event loop is gone

    name = property(lambda self: self._election.name)
    term = property(lambda self: self._election.term)
    leader = property(lambda self: self._election.leader)
    validity_ms = property(lambda self: self._election.validity_ms)
    resigned = property(lambda self: self._election.resigned)

    @property
    def election(self):
        """The underlying redlock_c.Election."""
        return self._election

    async def wait_elected(self, timeout=None, after_term=0):
        """Waits until this campaign holds a term larger than after_term
        (timeout in seconds); the term, or None on timeout or once resigned."""
        deadline = None if timeout is None else self._loop.time() + timeout
        while True:
            e = self._election
            if e.leader and e.term > after_term:
                return e.term
            if e.resigned:
                return None
            left = None if deadline is None else deadline - self._loop.time()
            if left is not None and left <= 0:
                return None
            fut = self._loop.create_future()
            self._waiters.append(fut)
            # A change that landed before fut was registered is seen by the
            # check above on the next turn: poll at least every 100 ms.
            step = 0.1 if left is None else min(left, 0.1)
            try:
                await asyncio.wait_for(asyncio.shield(fut), step)
            except asyncio.TimeoutError:
                pass

    async def resign(self):
        """As Election.resign(), in the default executor (it waits for the
        library's loop)."""
        await self._loop.run_in_executor(None, self._election.resign)

    async def __aenter__(self):
        return self

    async def __aexit__(self, exc_type, exc, tb):
        await self.resign()

    def __repr__(self):
        return "<redlock_c.aio.AsyncElection %r>" % (self._election,)



class AsyncObserver:
    """A follower of an election's leadership (AsyncClient.observe), as
    redlock_c.Observer, with awaitable stop().  ``async with`` stops it on
    exit."""

    def __init__(self, loop, callback):
        self._loop = loop
        self._callback = callback
        self._observer = None  # set by AsyncClient.observe

    name = property(lambda self: self._observer.name)
    last = property(lambda self: self._observer.last)
    stopped = property(lambda self: self._observer.stopped)

    @property
    def observer(self):
        """The underlying redlock_c.Observer."""
        return self._observer

    async def stop(self):
        """As Observer.stop(), in the default executor (it waits for the
        library's loop)."""
        await self._loop.run_in_executor(None, self._observer.stop)

    async def __aenter__(self):
        return self

    async def __aexit__(self, exc_type, exc, tb):
        await self.stop()

    def __repr__(self):
        return "<redlock_c.aio.AsyncObserver %r>" % (self._observer,)
