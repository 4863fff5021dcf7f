"""Taking a lock back from a stuck holder, with a fenced store that then
refuses the old holder's writes.

    python3 revoke_fenced.py redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...

A revoke ends the hold on a quorum and, with fencing, raises the resource's
fence counter above the holder's token: the store is told the new fence and
refuses every token below it, so a holder that has not noticed yet (a paused
process, a slow watch) cannot write any more.  Without fencing a revoke can
only end the hold; nothing stops a write already on its way.

Type-checked with mypy --strict (ctest python_mypy).
"""

import sys
import threading
from typing import List

import redlock_c


class FencedStore:
    """A store that checks fencing tokens (as examples/fencing_store.c):
    a write carries its lock's token and is refused below the highest token
    seen, or below the floor an administrator set after a revoke."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._floor = 0
        self.value = ""

    def write(self, token: int, value: str) -> bool:
        with self._mutex:
            if token < self._floor:
                return False
            self._floor = token
            self.value = value
            return True

    def refuse_below(self, fence: int) -> None:
        with self._mutex:
            self._floor = max(self._floor, fence)


def main(nodes: List[str]) -> int:
    store = FencedStore()
    with redlock_c.Client(nodes, owner="stuck-worker", fencing=True, quarantine=False) as holder, \
            redlock_c.Client(nodes, owner="admin", fencing=True, quarantine=False) as admin:
        lost = threading.Event()
        lk = holder.lock("ledger", 5_000)
        lk.watch(lambda _lock: lost.set())
        print("holder writes with token", lk.fence, "->", store.write(lk.fence, "from the holder"))

        fence = admin.revoke("ledger")  # NoQuorumError: too few masters did it
        store.refuse_below(fence)
        print("revoked: new fence", fence, "above the holder's", lk.fence)
        print("stale write refused:", not store.write(lk.fence, "stale"))

        if lost.wait(10.0):  # the holder's next renewal fails
            print("holder told: lost (reason", lk.lost_reason, "= LOST_EXPIRED)")
        try:
            lk.unlock()
        except redlock_c.LostError:
            pass  # it was no longer ours

        with admin.lock("ledger", 5_000) as nxt:
            print("next holder's token", nxt.fence, "->", store.write(nxt.fence, "after revoke"))
    return 0 if lost.is_set() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["redis://127.0.0.1:6379"]))
