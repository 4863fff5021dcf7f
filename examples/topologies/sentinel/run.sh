#!/usr/bin/env bash
# examples/topologies/sentinel/run.sh [PROGRAM]: three voters, each a master
# with a replica that Redis Sentinel watches and fails over
# (redis-sentinel://SENTINELS/NAME), asked for wait=1: a vote counts once the
# replica has the key, so a promoted replica holds every lock granted.  Starts
# three master + replica pairs and three sentinels that monitor all three
# names on free loopback ports (sentinels: redis-server FILE --sentinel), runs
# the example (default: build/examples/example-topology-lock), and stops
# them by PID.
source "$(dirname "$0")/../common.sh"
prog=$(topo_program "${1:-}")

names=(orders-a orders-b orders-c)
masters=()
monitors=()
for name in "${names[@]}"; do
  # No 5 s wait before a diskless sync (the default) for the replica.
  topo_start server --repl-diskless-sync-delay 0
  master=$topo_port
  topo_start server --replicaof 127.0.0.1 "$master"
  masters+=("$master")
  # Quorum 2 of the 3 sentinels agree that a master is down before a failover.
  monitors+=("sentinel monitor $name 127.0.0.1 $master 2"
    "sentinel down-after-milliseconds $name 5000"
    "sentinel failover-timeout $name 60000")
done
# wait=1 needs the replica linked: each master reports it online.
for master in "${masters[@]}"; do
  topo_wait_until 20 "replica online at master $master" \
    sh -c "'$topo_cli' -h 127.0.0.1 -p $master INFO replication | grep 'slave0:.*state=online'"
done

sentinels=()
for i in 1 2 3; do
  topo_start sentinel "port PORT" "bind 127.0.0.1" "dir $topo_work" "${monitors[@]}"
  sentinels+=("127.0.0.1:$topo_port")
done
list=$(IFS=,; echo "${sentinels[*]}")
# Each sentinel names every master (from its configuration at once).
for s in "${sentinels[@]}"; do
  for name in "${names[@]}"; do
    topo_wait_until 10 "master $name known to sentinel $s" \
      topo_cmd "${s#*:}" SENTINEL GET-MASTER-ADDR-BY-NAME "$name"
  done
done

uris=()
for name in "${names[@]}"; do
  uris+=("redis-sentinel://$list/$name?wait=1")
done
topo_run "$prog" "${uris[@]}"
# Each voter is named NAME@FIRST-SENTINEL, whichever master its sentinels
# name now.
topo_expect "won: orders-a@${sentinels[0]}=[A-Za-z]+ orders-b@${sentinels[0]}=[A-Za-z]+ orders-c@${sentinels[0]}=[A-Za-z]+$" \
  "votes from the three Sentinel voters"
topo_expect "won: .*=OK .*=OK" "a lock granted by a quorum of the voters"
topo_expect "worker-b while held: REDLOCK_ELOCKED" "the second client refused while held"
echo "sentinel: ok"
