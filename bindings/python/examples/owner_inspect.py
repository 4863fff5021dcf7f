"""Who holds it: an owner label on a worker's locks, read by another client
with inspect (one read round; nothing is written).

    python3 owner_inspect.py redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...

Type-checked with mypy --strict (ctest python_mypy).
"""

import sys
from typing import Any, Dict, List

import redlock_c


def show(view: Dict[str, Any]) -> None:
    if not view["held"]:
        print(view["kind"], view["name"], "is free" if view["agreed"]
              else "is held by no quorum (the masters disagree)")
        return
    # Each hold a quorum agrees on (a semaphore's permits, a read-write
    # lock's readers: several), with its label; None for a holder without one.
    owners = sorted({h["owner"] or "(no label)" for h in view["holders"]})
    print(view["kind"], view["name"], "held by", ", ".join(owners),
          "for", view["ttl_ms_min"], "to", view["ttl_ms_max"], "ms more;",
          view["count"], "hold(s)")
    for m in view["masters"]:
        print("  ", m["addr"], m["state"], m["holds"], "hold(s)")


def main(nodes: List[str]) -> int:
    # The label goes into the value of every lock this client takes: any
    # client that can read the masters sees it, so it must name, not prove.
    with redlock_c.Client(nodes, owner="report-worker-7", quarantine=False) as worker, \
            redlock_c.Client(nodes, quarantine=False) as admin:
        with worker.lock("reports:daily", 10_000) as lk:
            print("locked", lk.resource, "as", lk.owner)
            show(admin.inspect("reports:daily"))
        show(admin.inspect("reports:daily"))

        permits = [worker.semaphore_acquire("exporters", limit=4, ttl_ms=10_000)
                   for _ in range(2)]
        show(admin.inspect("exporters", kind="semaphore"))
        for p in permits:
            p.unlock()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["redis://127.0.0.1:6379"]))
