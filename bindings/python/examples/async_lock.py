"""The same with asyncio: `async with` on the acquisition itself, a
cancelled wait, an election.

    python3 async_lock.py redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...

Type-checked with mypy --strict (ctest python_mypy).
"""

import asyncio
import datetime
import sys
from typing import List

import redlock_c
import redlock_c.aio


async def main(nodes: List[str]) -> int:
    async with redlock_c.aio.AsyncClient.open(nodes, fencing=True, quarantine=False) as client:
        async with client.lock("orders:42", datetime.timedelta(seconds=10)) as lk:
            print("locked", lk.resource, "fence", lk.fence)
            await lk.extend(datetime.timedelta(seconds=20))

            # A second acquisition waits for the first; cancelling its task
            # cancels the call in the library: nothing more is sent for it.
            waiter = asyncio.create_task(client.lock("orders:42", 10000, wait_ms=30000))
            await asyncio.sleep(0.1)
            waiter.cancel()
            try:
                await waiter
            except asyncio.CancelledError:
                print("the waiting acquisition was cancelled")

        try:
            many = await client.lock_many(["a", "b", "c"], 5000)
        except redlock_c.RedlockError as exc:
            print("lock_many failed:", exc, exc.votes)
            return 1
        await many.unlock()

        def elected(election: redlock_c.aio.AsyncElection, term: int) -> None:
            print("elected for term", term)  # on the event loop

        election = await client.elect("scheduler", 5000, on_elected=elected)
        async with election:
            print("term", await election.wait_elected(timeout=5.0))
        print("stats:", client.stats("prometheus").count("\n"), "lines")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:] or ["redis://127.0.0.1:6379"])))
