#!/usr/bin/env python3
"""wait-coalesce.py: what a master with one replica does with pipelined WAITs.

On one connection, batches of K pipelined writes (SET key v PX 10000), either
each followed by its own WAIT 1 100 ("per-write", as the library sends acks)
or all followed by one WAIT 1 100 ("coalesced": WAIT covers every earlier
write of its connection).  WAIT blocks its client, and the server reads no
more of a blocked client's pipeline until the WAIT returns, so per-write WAITs
let the master execute one write per replica round trip.  Prints writes/s and
the client's socket reads per write (its wake-ups) for each K and form.

    python3 bench/wait-coalesce.py PORT [K ...]     (default K: 1 8 128)

PORT: a master on 127.0.0.1 with one replica linked (bench/servers.sh starts
both).  Each form runs for 2 s.
"""
import socket
import sys
import time


def command(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def run(port, k, form, seconds=2.0):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    writes = [command(b"SET", b"wait-coalesce:%d" % i, b"v", b"PX", b"10000") for i in range(k)]
    wait = command(b"WAIT", b"1", b"100")
    if form == "per-write":
        batch, replies = b"".join(w + wait for w in writes), 2 * k
    else:
        batch, replies = b"".join(writes) + wait, k + 1
    done = reads = 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        sock.sendall(batch)
        buf = b""
        while buf.count(b"\r\n") < replies:  # +OK and :1, one line each
            chunk = sock.recv(65536)
            if not chunk:
                sys.exit("wait-coalesce: connection closed")
            buf += chunk
            reads += 1
        if b":0\r\n" in buf:
            sys.exit("wait-coalesce: a WAIT timed out (is a replica linked?)")
        done += k
    elapsed = time.monotonic() - start
    sock.close()
    return done / elapsed, reads / done


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    port = int(sys.argv[1])
    ks = [int(a) for a in sys.argv[2:]] or [1, 8, 128]
    print("| K | form | writes/s | socket reads per write |")
    print("|---|---|---|---|")
    for k in ks:
        for form in ("per-write", "coalesced"):
            rate, reads = run(port, k, form)
            print(f"| {k} | {form} | {rate:.0f} | {reads:.3f} |")


if __name__ == "__main__":
    main()
