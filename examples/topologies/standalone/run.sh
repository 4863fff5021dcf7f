#!/usr/bin/env bash
# examples/topologies/standalone/run.sh [PROGRAM]: Redlock as designed --
# three independent masters, no replicas, each one voter (redis://).  Starts
# them on free loopback ports, runs the example (default:
# build/examples/example-topology-lock), and stops them by PID.
source "$(dirname "$0")/../common.sh"
prog=$(topo_program "${1:-}")

uris=()
for _ in 1 2 3; do
  topo_start server
  uris+=("redis://127.0.0.1:$topo_port")
done

topo_run "$prog" "${uris[@]}"
# A quorum (2 of 3) granted it; the round is decided then, so the third
# vote may still be out ("pending").
topo_expect "won: 127\.0\.0\.1:[0-9]+=[A-Za-z]+ 127\.0\.0\.1:[0-9]+=[A-Za-z]+ 127\.0\.0\.1:[0-9]+=[A-Za-z]+$" \
  "votes from three masters"
topo_expect "won: .*=OK .*=OK" "a lock granted by a quorum of the masters"
topo_expect "worker-b while held: REDLOCK_ELOCKED" "the second client refused while held"
echo "standalone: ok"
