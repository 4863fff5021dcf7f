"""Testing code that takes locks, with no Redis: the test kit's fake masters.

    python3 fake_masters.py

run_job() is the code under test: it runs a job only while it holds the
job's lock, and says why it did not run otherwise.  The checks below are
what a unit test of it asserts (with pytest, the fake_masters fixture gives
the FakeMasters(3)): a second worker is kept out, an outage is told apart
from a busy lock, and a lease lapses when its holder stops renewing it —
in virtual time, so a 30 s lease takes no time at all.

Type-checked with mypy --strict (ctest python_mypy).
"""

import sys
from typing import List

import redlock_c
from redlock_c.testing import FakeMasters


def run_job(client: redlock_c.Client, job: str, done: List[str]) -> str:
    """The code under test."""
    try:
        lock = client.trylock("job:" + job, 30_000)
    except redlock_c.LockedError:
        return "busy"
    except redlock_c.NoQuorumError:
        return "outage"
    try:
        done.append(job)
        return "ran"
    finally:
        try:
            lock.unlock()
        except redlock_c.RedlockError:
            pass


def main() -> int:
    done: List[str] = []
    with FakeMasters(3, virtual_time=True) as fakes:
        with redlock_c.Client(fakes.nodes, quarantine=False, retry_count=0) as a, \
                redlock_c.Client(fakes.nodes, quarantine=False, retry_count=0) as b:
            print("first worker:", run_job(a, "report", done))
            held = a.trylock("job:report", 30_000)  # a worker that hangs, holding it
            print("while another holds it:", run_job(b, "report", done))
            fakes.advance(30_001)  # its lease runs out on the masters
            print("after its lease ran out:", run_job(b, "report", done))
            del held
            fakes.kill(0)
            fakes.kill(1)
            print("two masters of three down:", run_job(b, "report", done))
    print("jobs run:", len(done))
    return 0 if done == ["report", "report"] else 1


if __name__ == "__main__":
    sys.exit(main())
