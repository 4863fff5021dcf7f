"""A watched lock with a bound on its whole hold: renewed while the work
runs, but released at the bound even if the worker hangs.

    python3 bounded_watch.py redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...

At the bound the library releases the lock on every master (waiters are
woken) and on_lost runs once with lost_reason LOST_MAX_HOLD: the hold ended
as asked, which is not an error.  A loss before the bound says LOST_EXPIRED.

Type-checked with mypy --strict (ctest python_mypy).
"""

import sys
import threading
from typing import List

import redlock_c


def main(nodes: List[str]) -> int:
    with redlock_c.Client(nodes, quarantine=False) as client, \
            redlock_c.Client(nodes, quarantine=False) as other:
        ended = threading.Event()

        def on_lost(lock: redlock_c.Lock) -> None:  # the library's I/O thread
            ended.set()

        lk = client.lock("nightly-batch", 2_000)
        # Renewed past its 2 s TTL, but held 4 s at most from the grant.
        lk.watch(on_lost, max_hold_ms=4_000)
        if not ended.wait(30.0):  # a hung worker would be here
            print("the bound did not end the hold")
            return 1
        if lk.lost_reason == redlock_c.LOST_MAX_HOLD:
            print("hold ended at its bound (not a failure)")
        else:
            print("lost before the bound:", lk.lost_reason)
            return 1
        lk.unlock()  # no error after the bound

        # Released on the masters: another client takes it at once.
        with other.lock("nightly-batch", 5_000, wait_ms=5_000) as nxt:
            print("next holder got it, validity", nxt.validity_ms > 0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["redis://127.0.0.1:6379"]))
