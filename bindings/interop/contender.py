"""Interop contender (Python): see bindings/interop/README.md for the protocol.
    python3 contender.py try  RESOURCE TTL_MS HOLD_MS   (HOLD_MS "stdin": until a line or EOF)
    python3 contender.py wait RESOURCE TTL_MS HOLD_MS WAIT_MS
Masters from REDLOCK_NODES; fencing on, quarantine off."""
import os
import sys
import time

import redlock_c


def main():
    mode, resource, ttl, hold = sys.argv[1:5]
    nodes = [n.strip() for n in os.environ.get("REDLOCK_NODES", "").split(",") if n.strip()]
    with redlock_c.Client(nodes, fencing=True, quarantine=False) as client:
        try:
            if mode == "wait":
                lk = client.lock(resource, int(ttl), wait_ms=int(sys.argv[5]))
            else:
                lk = client.trylock(resource, int(ttl))
        except (redlock_c.LockedError, redlock_c.WaitTimeout):
            print("LOCKED", flush=True)
            return 75
        except redlock_c.RedlockError as exc:
            print("ERROR", exc.name, flush=True)
            return 1
        print("ACQUIRED %d %d" % (lk.fence, int(time.time() * 1000)), flush=True)
        if hold == "stdin":
            sys.stdin.readline()  # hold until a line or EOF
        else:
            time.sleep(int(hold) / 1000)
        print("RELEASING %d" % int(time.time() * 1000), flush=True)
        lk.unlock()
    return 0


if __name__ == "__main__":
    sys.exit(main())
