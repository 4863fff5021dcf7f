"""A lock, a semaphore permit and a leader election with the blocking API.

    python3 sync_lock.py redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...

Type-checked with mypy --strict (ctest python_mypy).
"""

import datetime
import sys
import threading
from typing import List

import redlock_c


def main(nodes: List[str]) -> int:
    with redlock_c.Client(nodes, fencing=True, quarantine=False,
                          request_timeout_ms=datetime.timedelta(milliseconds=200)) as client:
        try:
            # *_ms: an int is milliseconds; a timedelta carries its unit.
            with client.lock("orders:42", datetime.timedelta(seconds=10), wait_ms=5000) as lk:
                print("locked", lk.resource, "fence", lk.fence, "owned", lk.owned())
                lk.extend(datetime.timedelta(seconds=20))
        except redlock_c.LockedError as exc:
            print("held by someone else:", exc.votes)
            return 1
        except redlock_c.NoQuorumError as exc:
            print("too few masters answered:", exc.votes)  # which, and why
            return 1

        stop = threading.Event()

        def lost(lock: redlock_c.Lock) -> None:  # the library's I/O thread
            stop.set()

        with client.semaphore_acquire("licences", limit=3, ttl_ms=2000, wait_ms=5000,
                                      watch=True, on_lost=lost) as permit:
            print("permit", permit.resource, "validity", permit.validity_ms, "ms")

        with client.elect("scheduler", 5000) as election:
            term = election.wait_elected(timeout=5.0)
            print("leader with term", term)

        counters = client.stats()
        print("operations:", counters.get("operations_total"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["redis://127.0.0.1:6379"]))
