# bench/servers.sh: the benchmark scripts' own servers (sourced, bash):
#   bench_server                     the server binary (default redis-server; valkey-server
#                                    works alike)
#   bench_start_masters N LOGDIR [ARG...]
#                                    N more servers on free loopback ports, each given the
#                                    extra ARGs (e.g. --rename-command X ""): appends to
#                                    bench_ports and bench_pids, waits until each answers as
#                                    the process started, and stops every server by PID on
#                                    exit (trap)
#   bench_start_replicas LOGDIR      one replica (--replicaof) of each of bench_ports: fills
#                                    bench_replica_ports and bench_replica_pids (their PIDs
#                                    are in bench_pids too, for the stop) and waits, with a
#                                    deadline, until each reports master_link_status:up
# A port that ss shows free may still be taken by someone else's server before ours binds
# it, so a server counts as up only when INFO's process_id is the PID we started; a
# master that finds its port taken is started again on another.
# shellcheck shell=bash

bench_server=${bench_server:-redis-server}
bench_pids=()
bench_ports=()
bench_replica_pids=()
bench_replica_ports=()

bench_stop_masters() {
  for p in "${bench_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${bench_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}

# The next port above $1 that nothing listens on.
bench_free_port() {
  local port=$1
  while :; do
    port=$((port + 1))
    ss -ltnH "sport = :$port" | grep -q . || { echo "$port"; return; }
  done
}

# Waits (10 s at most) until the server on port $1 answers as PID $2.  With a
# third argument, a server that exited (its port taken) returns 1 instead.
bench_wait_ours() {
  local port=$1 pid=$2 soft=${3:-} deadline=$((SECONDS + 10)) seen
  while :; do
    seen=$(redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | tr -d '\r' |
      sed -n 's/^process_id://p') || true # not up yet (callers may run with set -e)
    [ "$seen" = "$pid" ] && return 0
    if [ -n "$soft" ] && ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" 2>/dev/null || true
      return 1
    fi
    if ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      echo "bench: server $pid on port $port did not start (another process on the port?)" >&2
      exit 1
    fi
    sleep 0.05
  done
}

# Starts one server on port $1 (logs in $2, extra arguments after), in the background.
bench_spawn() {
  local port=$1 logdir=$2
  shift 2
  "$bench_server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$logdir" \
    --loglevel warning --logfile "$logdir/server-$port.log" "$@" &
}

# The ports start below the kernel's ephemeral range (32768 and up): a port
# ss shows free there may be a client connection's the moment a server binds.
# A server that still finds its port taken is started again on the next free
# one, up to 5 times.
bench_start_masters() {
  local n=$1 logdir port i tries first=${#bench_ports[@]}
  logdir=$(cd "$2" && pwd) # --dir below: the servers' files (a replica's synced RDB) go there
  shift 2
  trap bench_stop_masters EXIT
  port=$((20000 + $$ % 10000))
  [ "$first" -gt 0 ] && port=${bench_ports[-1]}
  while [ "${#bench_ports[@]}" -lt $((first + n)) ]; do
    port=$(bench_free_port "$port")
    bench_spawn "$port" "$logdir" "$@"
    bench_pids+=("$!")
    bench_ports+=("$port")
  done
  for ((i = first; i < ${#bench_ports[@]}; i++)); do
    tries=0
    until bench_wait_ours "${bench_ports[$i]}" "${bench_pids[$i]}" soft; do
      tries=$((tries + 1))
      if [ "$tries" -ge 5 ]; then
        echo "bench: no free port for a server after $tries tries (see $logdir)" >&2
        exit 1
      fi
      port=$(bench_free_port "$port") # above every port handed out so far
      bench_spawn "$port" "$logdir" "$@"
      bench_pids[i]=$!
      bench_ports[i]=$port
    done
  done
}

bench_start_replicas() {
  local logdir port m i deadline
  logdir=$(cd "$1" && pwd)
  port=${bench_ports[-1]}
  for m in "${bench_ports[@]}"; do
    port=$(bench_free_port "$port")
    "$bench_server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$logdir" \
      --replicaof 127.0.0.1 "$m" --loglevel warning --logfile "$logdir/server-$port.log" &
    bench_pids+=("$!")
    bench_replica_pids+=("$!")
    bench_replica_ports+=("$port")
  done
  for i in "${!bench_replica_ports[@]}"; do
    port=${bench_replica_ports[$i]}
    bench_wait_ours "$port" "${bench_replica_pids[$i]}"
    deadline=$((SECONDS + 20))
    until redis-cli -h 127.0.0.1 -p "$port" info replication 2>/dev/null | tr -d '\r' |
      grep -qx 'master_link_status:up'; do
      if [ "$SECONDS" -ge "$deadline" ]; then
        echo "bench: replica on $port never linked to master ${bench_ports[$i]} (see $logdir)" >&2
        exit 1
      fi
      sleep 0.05
    done
  done
}
