"""Who leads, and being told when it changes: asking an election's leader
and observing it (without campaigning) through a hand-off.

    python3 observe_leader.py redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...

The observer is woken by the same release announcements as waits and
campaigns: a hand-off by resign is seen within about one round trip of the
new leader's grant.

Type-checked with mypy --strict (ctest python_mypy).
"""

import sys
import threading
from typing import List

import redlock_c


def describe(view: redlock_c.Leader) -> str:
    if view.state == redlock_c.LEADER_HELD:
        return "led by %s (term %d, %d ms left)" % (view.owner or "(no label)", view.term,
                                                   view.ttl_ms)
    if view.state == redlock_c.LEADER_NONE:
        return "nobody leads"
    return "unknown (too few masters answered)"


def main(nodes: List[str]) -> int:
    with redlock_c.Client(nodes, owner="scheduler-a", quarantine=False) as a, \
            redlock_c.Client(nodes, owner="scheduler-b", quarantine=False) as b, \
            redlock_c.Client(nodes, quarantine=False) as watcher:
        print("now:", describe(watcher.leader("scheduler")))
        changed = threading.Event()

        def on_change(view: redlock_c.Leader) -> None:  # the library's I/O thread
            print("change:", describe(view))
            changed.set()

        with watcher.observe("scheduler", on_change) as observer:
            with a.elect("scheduler", 5_000) as first:
                if first.wait_elected(timeout=10.0) is None:
                    return 1
                if observer.wait_for(lambda v: v.owner == "scheduler-a", 10.0) is None:
                    return 1
                second = b.elect("scheduler", 5_000)
            # Leaving the block resigned a: b takes over, the observer sees it.
            view = observer.wait_for(lambda v: v.owner == "scheduler-b", 10.0)
            if view is None:
                return 1
            print("handed over to", view.owner, "term", view.term, "> term", first.term)
            second.resign()
            observer.wait_for(lambda v: v.state == redlock_c.LEADER_NONE, 10.0)
    return 0 if changed.is_set() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["redis://127.0.0.1:6379"]))
