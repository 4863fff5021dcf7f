#!/bin/bash
# compare.sh: redlock-c next to its peers against the SAME masters in the
# SAME session, medians of RUNS runs and ratios (ours / peer).
#
#   bench/compare.sh [path/to/redlock-bench]
#
# Peers:
#  * node-redlock 5 (npm redlock@5.0.0-beta.2 with ioredis, enableAutoPipelining
#    on), installed from bench/compare/package.json into $NODE_DIR (default
#    build-extra/compare-node; node_modules is never committed) and driven by
#    bench/compare/node-bench.js: the same lock + unlock cycles on distinct
#    resources as redlock-bench.
#  * redis-plus-plus's RedLock: not packaged in Debian 12 or trixie
#    (libredis++-dev), so it is skipped with a "SKIP redis-plus-plus" line.
#
# Modes, interleaved per run so that the machine's noise hits all alike:
#   throughput  C=128: redlock-bench --mode throughput (async API) vs node
#   latency     C=1:   redlock-bench --mode latency (blocking API, and the
#                      async API) vs node
# Environment: RUNS (3), N (5), DURATION (5 s measured), WARMUP (1 s),
# NODE_DIR, OUT (raw JSON directory; default a new temp dir), REPORT_ONLY=1
# (no runs: the tables again from the JSON already in OUT).
# It starts N redis-server processes on 127.0.0.1 itself (no persistence) and
# stops exactly those, by PID, on exit.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=bench/servers.sh
. "$(dirname "$0")/servers.sh"

here=$(cd "$(dirname "$0")" && pwd)
bench=${1:-$here/../build/bench/redlock-bench}
[ -x "$bench" ] || { echo "usage: $0 path/to/redlock-bench" >&2; exit 2; }
for c in jq node npm redis-server redis-cli ss; do
  command -v "$c" >/dev/null 2>&1 || { echo "compare.sh: needs $c" >&2; exit 1; }
done
RUNS=${RUNS:-3}
N=${N:-5}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
NODE_DIR=${NODE_DIR:-$here/../build-extra/compare-node}
OUT=${OUT:-$(mktemp -d /tmp/redlock-compare.XXXXXX)}
mkdir -p "$OUT" "$NODE_DIR"

if [ "${REPORT_ONLY:-0}" != 1 ]; then
# ---- node-redlock, installed under the build tree
if [ ! -d "$NODE_DIR/node_modules/redlock" ] || [ ! -d "$NODE_DIR/node_modules/ioredis" ] ||
   ! cmp -s "$here/compare/package.json" "$NODE_DIR/package.json"; then
  cp "$here/compare/package.json" "$NODE_DIR/package.json"
  (cd "$NODE_DIR" && npm install --no-save --no-audit --no-fund >&2)
fi
cp "$here/compare/node-bench.js" "$NODE_DIR/node-bench.js"

# ---- redis-plus-plus
if apt-cache policy libredis++-dev 2>/dev/null | grep 'Candidate: [0-9]' >/dev/null; then
  echo "SKIP redis-plus-plus: libredis++-dev is available here but compare.sh has no driver for it yet"
else
  echo "SKIP redis-plus-plus: not packaged in Debian (libredis++-dev has no candidate; checked Debian 12 and trixie)"
fi

# ---- the masters: N redis-server on free loopback ports, stopped by PID
bench_start_masters "$N" "$OUT"
pids=("${bench_pids[@]}")
ports=("${bench_ports[@]}")
pidlist=$(IFS=,; echo "${pids[*]}")
nodes=""
nport=""
for p in "${ports[@]}"; do nodes="$nodes --node redis://127.0.0.1:$p"; nport="$nport --node $p"; done

ours_thr="$bench --mode throughput$nodes --server-pids $pidlist --no-quarantine --duration $DURATION --warmup $WARMUP --json"
ours_lat="$bench --mode latency$nodes --server-pids $pidlist --no-quarantine --duration $DURATION --warmup $WARMUP --json"
ours_lat_async="$ours_lat --api async"
node_thr="node $NODE_DIR/node-bench.js --mode throughput --concurrency 128$nport --server-pids $pidlist --duration $DURATION --warmup $WARMUP"
node_lat="node $NODE_DIR/node-bench.js --mode latency --concurrency 1$nport --server-pids $pidlist --duration $DURATION --warmup $WARMUP"

for f in ours_thr node_thr ours_lat ours_lat_async node_lat; do : >"$OUT/$f.jsonl"; done
for i in $(seq 1 "$RUNS"); do
  for f in ours_thr node_thr ours_lat ours_lat_async node_lat; do
    echo "compare.sh: $f run $i/$RUNS" >&2
    # shellcheck disable=SC2086 # word splitting of the command is intended
    ${!f} >>"$OUT/$f.jsonl" 2>>"$OUT/stderr.log" || echo "compare.sh: $f run $i failed (see $OUT/stderr.log)" >&2
  done
done
fi

med() { bench_median "$@"; } # file jq-expr -> median (raw number; bench/lib.sh)
fmt() { if [ "$2" = null ]; then echo "-"; else printf "$1" "$2"; fi; }
ratio() { if [ "$1" = null ] || [ "$2" = null ]; then echo "-"; else jq -n "$1 / $2" | xargs printf '%.2f'; fi; }
row() { # label file
  echo "| $1 | $(fmt %.0f "$(med "$2" .cycles_per_s)") | $(fmt %.3f "$(med "$2" .acquire.p50)") | $(fmt %.3f "$(med "$2" .cycle.p50)") | $(fmt %.3f "$(med "$2" .cycle.p99)") | $(fmt %.1f "$(med "$2" .client_cpu_us_per_cycle)") | $(fmt %.1f "$(med "$2" .server_cpu_us_per_cycle)") | $(fmt %d "$(med "$2" .errors)") |"
}
prratio() { # ours node jq-field -> median over runs i of ours[i] / node[i]
  jq -n --slurpfile a "$1" --slurpfile b "$2" \
    "[range(0; [(\$a | length), (\$b | length)] | min) | select(\$a[.]$3 != null and \$b[.]$3 != null) | \$a[.]$3 / \$b[.]$3] | sort | if length == 0 then null else .[(length - 1) / 2 | floor] end" |
    { read -r v; fmt %.2f "$v"; }
}
prratios() { # label ours node
  echo "| $1 | $(prratio "$2" "$3" .cycles_per_s) | $(prratio "$2" "$3" .cycle.p50) | $(prratio "$2" "$3" .cycle.p99) | $(prratio "$2" "$3" .client_cpu_us_per_cycle) | $(prratio "$2" "$3" .server_cpu_us_per_cycle) |"
}
ratios() { # label ours node
  echo "| $1 | $(ratio "$(med "$2" .cycles_per_s)" "$(med "$3" .cycles_per_s)") | $(ratio "$(med "$2" .cycle.p50)" "$(med "$3" .cycle.p50)") | $(ratio "$(med "$2" .cycle.p99)" "$(med "$3" .cycle.p99)") | $(ratio "$(med "$2" .client_cpu_us_per_cycle)" "$(med "$3" .client_cpu_us_per_cycle)") | $(ratio "$(med "$2" .server_cpu_us_per_cycle)" "$(med "$3" .server_cpu_us_per_cycle)") |"
}

nv=$(jq -r '"node-redlock \(.redlock), ioredis \(.ioredis), node \(.node)"' "$OUT/node_thr.jsonl" | sed -n 1p)
echo
echo "## redlock-c vs node-redlock, N=$N"
echo
echo "$(bench_machine), $nv;"
echo "median of $RUNS interleaved runs per cell, $DURATION s measured after $WARMUP s warm-up, the same $N masters for all; raw JSON in $OUT."
echo "Latencies in ms; CPU in µs per lock + unlock cycle (server: all masters summed)."
echo
echo "| client | cycles/s | acquire p50 | cycle p50 | cycle p99 | client CPU µs | server CPU µs | errors |"
echo "|---|---|---|---|---|---|---|---|"
row "redlock-c async, C=128" "$OUT/ours_thr.jsonl"
row "node-redlock, C=128" "$OUT/node_thr.jsonl"
row "redlock-c blocking, C=1" "$OUT/ours_lat.jsonl"
row "redlock-c async, C=1" "$OUT/ours_lat_async.jsonl"
row "node-redlock, C=1" "$OUT/node_lat.jsonl"
echo
echo "Ratios, redlock-c / node-redlock (of the medians above; > 1 is better for cycles/s, < 1 better for latency and CPU):"
echo
echo "| pair | cycles/s | cycle p50 | cycle p99 | client CPU | server CPU |"
echo "|---|---|---|---|---|---|"
ratios "C=128: async / node" "$OUT/ours_thr.jsonl" "$OUT/node_thr.jsonl"
ratios "C=1: blocking / node" "$OUT/ours_lat.jsonl" "$OUT/node_lat.jsonl"
ratios "C=1: async / node" "$OUT/ours_lat_async.jsonl" "$OUT/node_lat.jsonl"
echo
echo "Ratios within each run (run i of ours / run i of node-redlock, the two measured back to back), median over the $RUNS runs:"
echo
echo "| pair | cycles/s | cycle p50 | cycle p99 | client CPU | server CPU |"
echo "|---|---|---|---|---|---|"
prratios "C=128: async / node" "$OUT/ours_thr.jsonl" "$OUT/node_thr.jsonl"
prratios "C=1: blocking / node" "$OUT/ours_lat.jsonl" "$OUT/node_lat.jsonl"
prratios "C=1: async / node" "$OUT/ours_lat_async.jsonl" "$OUT/node_lat.jsonl"
echo
[ "${REPORT_ONLY:-0}" = 1 ] && exit 0
echo "Commands (PORTS and PIDS: the masters this script started):"
echo
echo '```'
echo "$ours_thr" | sed "s#$bench#redlock-bench#"
echo "$node_thr" | sed "s#$NODE_DIR/##"
echo "$ours_lat" | sed "s#$bench#redlock-bench#"
echo "$ours_lat_async" | sed "s#$bench#redlock-bench#"
echo "$node_lat" | sed "s#$NODE_DIR/##"
echo '```'
