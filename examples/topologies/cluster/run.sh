#!/usr/bin/env bash
# examples/topologies/cluster/run.sh [PROGRAM]: a Redis Cluster of three
# primaries as one voter (redis-cluster://SEEDS): each lock goes to the
# primary that owns its key's hash slot.  Starts the nodes on free loopback
# ports (each with its cluster bus port, port + 10000, free), joins them with
# `redis-cli --cluster create`, runs the example (default:
# build/examples/example-topology-lock) with the cluster as the only voter,
# then again with two independent masters beside it ({cluster, master,
# master}: a quorum of 2 of 3 voters), and stops them by PID.
source "$(dirname "$0")/../common.sh"
prog=$(topo_program "${1:-}")

nodes=()
for i in 1 2 3; do
  topo_start cluster --cluster-enabled yes --cluster-config-file "nodes-$i.conf" \
    --cluster-node-timeout 5000
  nodes+=("127.0.0.1:$topo_port")
done
# Three primaries, no replicas: the slots split in three ranges.
"$topo_cli" --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes \
  >"$topo_work/create.log" 2>&1 || { cat "$topo_work/create.log" >&2; exit 1; }
for node in "${nodes[@]}"; do
  topo_wait_until 20 "cluster_state:ok at $node" \
    sh -c "'$topo_cli' -h 127.0.0.1 -p ${node#*:} CLUSTER INFO | grep cluster_state:ok"
done

# Any node is a seed; two are listed so that one down at start is no outage.
topo_run "$prog" "redis-cluster://${nodes[0]},${nodes[1]}"
# One voter, named after its first seed; its vote names the primary that
# owns the key's slot, and the resources land on more than one of them.
topo_expect "won: cluster@${nodes[0]}=OK \(primary 127\.0\.0\.1:[0-9]+\)$" \
  "a vote from the primary of the key's slot"
primaries=$(sed -n 's/.*=OK (primary \(127\.0\.0\.1:[0-9]*\)).*/\1/p' "$topo_work/out" | sort -u | wc -l)
[ "$primaries" -ge 2 ] || { echo "FAIL: every lock on one primary ($primaries)" >&2; exit 1; }
echo "    the locks were on $primaries of the 3 primaries"
topo_expect "worker-b while held: REDLOCK_ELOCKED" "the second client refused while held"

# Alone, the cluster is a quorum of one: a lock rests on the one primary of
# its slot.  Beside two masters it is one voter of three, and any one of
# them may fail.
masters=()
for _ in 1 2; do
  topo_start server
  masters+=("redis://127.0.0.1:$topo_port")
done
topo_run "$prog" "redis-cluster://${nodes[0]},${nodes[1]}" "${masters[@]}"
topo_expect "won: cluster@${nodes[0]}=[A-Za-z]+.* 127\.0\.0\.1:[0-9]+=[A-Za-z]+ 127\.0\.0\.1:[0-9]+=[A-Za-z]+$" \
  "votes from the cluster and the two masters"
topo_expect "won: .*=OK.* .*=OK" "a lock granted by a quorum of the voters"
topo_expect "worker-b while held: REDLOCK_ELOCKED" "the second client refused while held"
echo "cluster: ok"
