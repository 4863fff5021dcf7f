# examples/topologies/common.sh: sourced by each topology's run.sh.  Starts
# servers on free loopback ports, waits for them with deadlines, and stops
# exactly the processes it started, by PID, when the script exits.
#   REDLOCK_TEST_SERVER  the server program (default: redis-server); its cli
#                        is the one beside it (valkey-server: valkey-cli),
#                        else redis-cli on PATH.
set -euo pipefail
topo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
topo_server=${REDLOCK_TEST_SERVER:-redis-server}
command -v "$topo_server" >/dev/null 2>&1 || {
  echo "FAIL: $topo_server not found (apt-get install redis-server)" >&2
  exit 1
}
topo_server=$(command -v "$topo_server")
topo_cli=${topo_server%-server}-cli
[ -x "$topo_cli" ] || topo_cli=$(command -v redis-cli) || {
  echo "FAIL: no cli beside $topo_server, and no redis-cli" >&2
  exit 1
}

# The example program: the script's first argument, else the build tree's.
topo_program() {
  local prog=${1:-$topo_root/build/examples/example-topology-lock}
  [ -x "$prog" ] || {
    echo "FAIL: $prog not built (cmake --build build --target example-topology-lock)" >&2
    exit 1
  }
  printf '%s\n' "$prog"
}

topo_work=$(mktemp -d /tmp/redlock-topology.XXXXXX)
topo_pids=()
topo_cleanup() {
  local pid
  for pid in "${topo_pids[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "${topo_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$topo_work"
}
trap topo_cleanup EXIT
trap 'exit 143' TERM INT HUP
# A script killed outright (SIGKILL: no trap runs) takes its servers with it
# where util-linux's setpriv can set their parent-death signal.
topo_launch=()
if setpriv --pdeathsig KILL true >/dev/null 2>&1; then
  topo_launch=(setpriv --pdeathsig KILL)
fi

# A port no one listens on now (the kernel's pick).  With "bus", one whose
# cluster bus port (port + 10000) is free too.  A server may still lose the
# port to another process before it binds: topo_start then tries another.
topo_free_port() {
  python3 - "${1:-}" <<'PY'
import socket, sys
def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return s
    except OSError:
        s.close()
        return None
while True:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    if sys.argv[1] != "bus":
        break
    bus = free(port + 10000) if port + 10000 <= 65535 else None
    if bus is not None:
        bus.close()
        break
    s.close()
s.close()
print(port)
PY
}

# topo_wait_until SECONDS WHAT COMMAND...: runs COMMAND until it succeeds;
# fails the script after SECONDS, saying WHAT it waited for.
topo_wait_until() {
  local seconds=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "FAIL: no $what within ${seconds}s" >&2
      exit 1
    fi
    sleep 0.05
  done
}

topo_cmd() { # PORT COMMAND...: one command to the server at PORT
  local port=$1
  shift
  "$topo_cli" -h 127.0.0.1 -p "$port" "$@"
}

# PORT answers PING and is the process PID (INFO's process_id), not another
# server that took the port first.
topo_is_ours() {
  topo_cmd "$1" INFO server | tr -d '\r' | grep -x "process_id:$2" >/dev/null
}

# PID is running (a child that exited stays a zombie until waited for).
topo_alive() {
  local stat
  stat=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${stat#Z}" = "$stat" ]
}

# topo_start KIND ARGS...: starts a server on a free port with ARGS and
# waits until it answers; sets topo_port.  KIND: "server",
# "cluster" (its bus port free too) or "sentinel" (ARGS: a config template
# in which PORT is replaced).  Another port is tried when the chosen one
# was taken before the server bound it.
topo_start() {
  local kind=$1 _attempt pid port conf
  shift
  for _attempt in 1 2 3 4 5; do
    port=$(topo_free_port "$([ "$kind" = cluster ] && echo bus)")
    if [ "$kind" = sentinel ]; then
      conf=$topo_work/sentinel-$port.conf
      printf '%s\n' "$@" | sed "s/PORT/$port/g" >"$conf"
      "${topo_launch[@]}" "$topo_server" "$conf" --sentinel >"$topo_work/sentinel-$port.log" 2>&1 &
    else
      "${topo_launch[@]}" "$topo_server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$topo_work" --logfile "$topo_work/server-$port.log" "$@" >/dev/null 2>&1 &
    fi
    pid=$!
    topo_pids+=("$pid")
    local deadline=$((SECONDS + 10))
    while topo_alive "$pid" && ! topo_is_ours "$port" "$pid" 2>/dev/null; do
      [ "$SECONDS" -lt "$deadline" ] || break
      sleep 0.05
    done
    if topo_is_ours "$port" "$pid" 2>/dev/null; then
      topo_port=$port
      return 0
    fi
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  echo "FAIL: could not start $topo_server ($kind)" >&2
  exit 1
}

# topo_run PROGRAM URI...: runs the example, prints its output, and fails
# the script when it fails; the output is in $topo_work/out.
topo_run() {
  echo "==> $*"
  local rc=0
  "$@" >"$topo_work/out" 2>&1 || rc=$?
  cat "$topo_work/out"
  [ "$rc" -eq 0 ] || { echo "FAIL: the example exited $rc" >&2; exit 1; }
}

# topo_expect REGEX WHY: the example's output has a line matching REGEX.
topo_expect() {
  grep -E -- "$1" "$topo_work/out" >/dev/null || {
    echo "FAIL: $2 (no line matching $1)" >&2
    exit 1
  }
}
