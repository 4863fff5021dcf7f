#!/usr/bin/env bash
# examples/topologies/sentinel/run.sh [PROGRAM]: three voters, each a master
# with a replica that Redis Sentinel watches and fails over
# (redis-sentinel://SENTINELS/NAME), asked for wait=1: a vote counts once the
# replica has the key, so a promoted replica holds every lock granted.  Starts
# three master + replica pairs and three sentinels that monitor all three
# names on free loopback ports (sentinels: redis-server FILE --sentinel), runs
# the example (default: build/examples/example-topology-lock), fails one
# master over to its replica (SENTINEL FAILOVER) and runs it again: the voter
# follows the master its sentinels name.  Stops the servers by PID.
source "$(dirname "$0")/../common.sh"
prog=$(topo_program "${1:-}")

names=(orders-a orders-b orders-c)
masters=()
replicas=()
monitors=()
for name in "${names[@]}"; do
  # No 5 s wait before a diskless sync (the default) for a replica; the
  # replica is a master after a failover.
  topo_start server --repl-diskless-sync-delay 0
  master=$topo_port
  topo_start server --repl-diskless-sync-delay 0 --replicaof 127.0.0.1 "$master"
  masters+=("$master")
  replicas+=("$topo_port")
  # Quorum 2 of the 3 sentinels agree that a master is down before a failover.
  monitors+=("sentinel monitor $name 127.0.0.1 $master 2"
    "sentinel down-after-milliseconds $name 5000"
    "sentinel failover-timeout $name 60000")
done
# PORT's replica at REPLICA is online (wait=1 needs it linked).
replica_online() {
  topo_cmd "$1" INFO replication | grep "^slave0:.*port=$2,state=online" >/dev/null
}
for i in 0 1 2; do
  topo_wait_until 20 "replica ${replicas[i]} online at master ${masters[i]}" \
    replica_online "${masters[i]}" "${replicas[i]}"
done

sentinels=()
for _ in 1 2 3; do
  topo_start sentinel "port PORT" "bind 127.0.0.1" "dir $topo_work" "${monitors[@]}"
  sentinels+=("127.0.0.1:$topo_port")
done
list=$(IFS=,; echo "${sentinels[*]}")
# Each sentinel names every master (from its configuration at once; an
# unknown name is a nil reply, which the cli prints as nothing).
names_a_master() { [ -n "$(topo_cmd "${1#*:}" SENTINEL GET-MASTER-ADDR-BY-NAME "$2")" ]; }
for s in "${sentinels[@]}"; do
  for name in "${names[@]}"; do
    topo_wait_until 10 "master $name known to sentinel $s" names_a_master "$s" "$name"
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

# A failover: orders-a's replica becomes its master, the old master its
# replica.  The sentinels must have found the replica (from the master's
# INFO) before they can promote it.
knows_replica() { topo_cmd "${sentinels[0]#*:}" SENTINEL REPLICAS orders-a | grep -x "$1" >/dev/null; }
topo_wait_until 20 "replica ${replicas[0]} known to sentinel ${sentinels[0]}" knows_replica "${replicas[0]}"
echo "==> SENTINEL FAILOVER orders-a: ${masters[0]} -> ${replicas[0]}"
reply=$(topo_cmd "${sentinels[0]#*:}" SENTINEL FAILOVER orders-a)
[ "$reply" = OK ] || { echo "FAIL: SENTINEL FAILOVER orders-a: $reply" >&2; exit 1; }
names_master() {
  topo_cmd "${1#*:}" SENTINEL GET-MASTER-ADDR-BY-NAME orders-a | grep -x "$2" >/dev/null
}
for s in "${sentinels[@]}"; do
  topo_wait_until 30 "sentinel $s naming ${replicas[0]} as orders-a's master" \
    names_master "$s" "${replicas[0]}"
done
# The old master rejoins as the new one's replica when a sentinel next reads
# its INFO (up to 10 s): until then the new master's WAIT 1 finds no replica,
# so orders-a's votes do not count ("pending" while the WAIT runs, "unacked"
# once it ends) and orders-b and orders-c make the quorum.  The run does not
# wait for it: the locks are granted either way.
topo_run "$prog" "${uris[@]}"
topo_expect "worker-b while held: REDLOCK_ELOCKED" "the second client refused while held"
# The same URIs reached the new master: our writes' WAIT 1 went there (no
# one else sends WAIT; it was a replica until the failover).
waits=$(topo_cmd "${replicas[0]}" INFO commandstats | tr -d '\r' |
  sed -n 's/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p')
[ "${waits:-0}" -gt 0 ] || { echo "FAIL: no WAIT reached the new master ${replicas[0]}" >&2; exit 1; }
echo "    orders-a's voter sent $waits WAIT to its new master ${replicas[0]}"
echo "sentinel: ok"
