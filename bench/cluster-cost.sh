#!/bin/bash
# cluster-cost.sh: what a cluster voter (redis-cluster://, a whole Redis
# Cluster as one voter) costs the client next to a standalone voter
# (redis://), and how it spreads the commands over the cluster's primaries.
# One standalone master and one cluster of PRIMARIES primaries (no
# replicas; 3, or 1 for the cluster voter's own cost alone), all
# started here on loopback; then, in ONE run, RUNS rounds of lock + unlock
# cycles over --resources R names (10000) with ONE voter: the standalone
# master, or the cluster.
#
#   bench/cluster-cost.sh [--server redis|valkey|PATH] path/to/redlock-bench
#
# Modes: throughput (C = 128, async API: each variant in its own process,
# ABBA over the rounds; --server-pids are that variant's servers, so the
# server CPU per cycle is the standalone master's, or the three primaries'
# summed) and ab-cC (both in ONE process, --ab-node, alternating 0.5 s
# segments, which a noisy machine disturbs least).  Spread: each primary's
# EVALSHA calls (INFO commandstats) over the whole run, as a share of the
# three; within +-15 % of a third each is the goal.  Per-primary load: each
# primary's CPU (/proc) per cycle of the throughput runs.
# Prints the medians, the ratios (cluster / standalone), and whether client
# CPU per cycle stays within 1.2x (docs/performance.md, "Cluster voters").
# Environment: RUNS (5), DURATION (3 s measured), WARMUP (1 s), RESOURCES
# (10000), MODES ("throughput ab-c128"), PRIMARIES (3; 1: one primary owns
# every slot, so that the client talks to one server either way and the
# ratio is the cluster voter's code: routing, slot map, redirections), OUT
# (raw JSON directory; default a temp dir).  Every server is stopped by PID on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
# shellcheck source=bench/servers.sh
. "$here/servers.sh"

bench_args "$@"
cli=redis-cli
case $(basename "$bench_server") in valkey-server) cli=$(dirname "$bench_server")/valkey-cli ;; esac
bench_need cluster-cost.sh jq ss "$cli" "$bench_server"

RUNS=${RUNS:-5}
DURATION=${DURATION:-3}
WARMUP=${WARMUP:-1}
RESOURCES=${RESOURCES:-10000}
MODES=${MODES:-"throughput ab-c128"}
PRIMARIES=${PRIMARIES:-3}
case $PRIMARIES in 1 | 3) ;; *) echo "cluster-cost.sh: PRIMARIES is 1 or 3" >&2; exit 2 ;; esac
OUT=${OUT:-$(mktemp -d /tmp/redlock-cluster-cost.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

bench_start_masters 1 "$OUT"
standalone_port=${bench_ports[0]}
standalone_pid=${bench_pids[0]}

# The cluster: PRIMARIES primaries with a bus port each, joined by the cli
# (three), or one that takes every slot itself.
cluster_ports=() cluster_pids=()
port=$(bench_free_port "$standalone_port")
for i in $(seq 1 "$PRIMARIES"); do
  port=$(bench_free_port "$port")
  bus=$(bench_free_port "$port")
  "$bench_server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$OUT" \
    --cluster-enabled yes --cluster-config-file "$OUT/nodes-$port.conf" --cluster-port "$bus" \
    --loglevel warning --logfile "$OUT/server-$port.log" &
  bench_pids+=("$!")
  cluster_pids+=("$!")
  cluster_ports+=("$port")
  port=$bus
done
for i in "${!cluster_ports[@]}"; do bench_wait_ours "${cluster_ports[$i]}" "${cluster_pids[$i]}"; done
if [ "$PRIMARIES" = 1 ]; then
  "$cli" -p "${cluster_ports[0]}" cluster addslotsrange 0 16383 >"$OUT/create.log" 2>&1 ||
    { cat "$OUT/create.log" >&2; exit 1; }
else
  "$cli" --cluster create $(for p in "${cluster_ports[@]}"; do printf '127.0.0.1:%s ' "$p"; done) \
    --cluster-yes >"$OUT/create.log" 2>&1 || { cat "$OUT/create.log" >&2; exit 1; }
fi
deadline=$((SECONDS + 30))
for p in "${cluster_ports[@]}"; do
  until "$cli" -p "$p" cluster info | grep 'cluster_state:ok' >/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "cluster-cost.sh: cluster not ok" >&2; exit 1; }
    sleep 0.1
  done
done
cluster_uri="redis-cluster://$(IFS=,; for p in "${cluster_ports[@]}"; do printf '127.0.0.1:%s,' "$p"; done | sed 's/,$//')"
cluster_pidlist=$(IFS=,; echo "${cluster_pids[*]}")

evalsha_calls() { # port -> EVALSHA calls so far
  "$cli" -p "$1" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\).*/\1/p' | grep . || echo 0
}
cpu_ticks() { # pid -> utime + stime (clock ticks)
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}

cmd_for() { # mode [standalone|cluster] -> the command line
  local common="--no-quarantine --resources $RESOURCES --duration $DURATION --warmup $WARMUP --json"
  case $1 in
  throughput)
    if [ "$2" = cluster ]; then
      echo "$bench --mode throughput --node $cluster_uri --server-pids $cluster_pidlist $common"
    else
      echo "$bench --mode throughput --node redis://127.0.0.1:$standalone_port --server-pids $standalone_pid $common"
    fi
    ;;
  ab-c*)
    echo "$bench --mode throughput --concurrency ${1#ab-c} --node redis://127.0.0.1:$standalone_port --ab-node $cluster_uri --server-pids $standalone_pid,$cluster_pidlist $common"
    ;;
  esac
}

: >"$OUT/spread.jsonl"
: >"$OUT/primary-cpu.jsonl"
for mode in $MODES; do
  case $mode in
  throughput | ab-c[1-9]*) ;;
  *) echo "cluster-cost.sh: unknown mode $mode (throughput, ab-cC)" >&2; exit 2 ;;
  esac
done
for mode in $MODES; do
  for i in $(seq 1 "$RUNS"); do
    case $mode in
    ab-c*) order="ab" ;;
    *) if [ $((i % 2)) = 1 ]; then order="standalone cluster"; else order="cluster standalone"; fi ;;
    esac
    for kind in $order; do
      echo "cluster-cost: $mode round $i/$RUNS, $kind" >&2
      f="$OUT/$mode-$kind-$i.json"
      calls0=() ticks0=()
      for k in "${!cluster_ports[@]}"; do
        calls0+=("$(evalsha_calls "${cluster_ports[$k]}")")
        ticks0+=("$(cpu_ticks "${cluster_pids[$k]}")")
      done
      # shellcheck disable=SC2046,SC2091 # the command is built as a string, split on purpose
      if ! $(cmd_for "$mode" "$kind") >"$f" 2>>"$OUT/stderr.log"; then
        echo "cluster-cost: $mode round $i $kind failed (see $OUT/stderr.log)" >&2
        : >"$f"
        continue
      fi
      [ "$kind" = standalone ] && continue
      calls=() ticks=()
      for k in "${!cluster_ports[@]}"; do
        calls+=($(($(evalsha_calls "${cluster_ports[$k]}") - calls0[k])))
        ticks+=($(($(cpu_ticks "${cluster_pids[$k]}") - ticks0[k])))
      done
      jq -c -n --argjson c "[$(IFS=,; echo "${calls[*]}")]" '
        ($c | add) as $t | {calls: $c, shares: [$c[] / $t * ($c | length)]}' >>"$OUT/spread.jsonl"
      if [ "$mode" = throughput ]; then
        # Each primary's CPU per cycle of this run (whole run, warm-up included:
        # cycles scaled by the run's length over the measured window).
        hz=$(getconf CLK_TCK)
        jq -c --argjson t "[$(IFS=,; echo "${ticks[*]}")]" --argjson hz "$hz" \
          --argjson w "$WARMUP" --argjson d "$DURATION" '
          (.cycles_per_s * ($w + $d)) as $n |
          {primary_cpu_us_per_cycle: [$t[] / $hz * 1e6 / $n]}' "$f" >>"$OUT/primary-cpu.jsonl"
      fi
    done
  done
done

for mode in $MODES; do
  : >"$OUT/$mode-standalone.jsonl"
  : >"$OUT/$mode-cluster.jsonl"
  : >"$OUT/$mode-ratio.jsonl"
  for i in $(seq 1 "$RUNS"); do
    case $mode in
    ab-c*)
      f="$OUT/$mode-ab-$i.json"
      [ -s "$f" ] || continue
      jq -c '.a + {errors}' "$f" >>"$OUT/$mode-standalone.jsonl"
      jq -c '.b + {errors}' "$f" >>"$OUT/$mode-cluster.jsonl"
      jq -c '{cycles_per_s: .pair_median_rate_ratio, client_cpu: .pair_median_cpu_ratio}' "$f" \
        >>"$OUT/$mode-ratio.jsonl"
      ;;
    *)
      a="$OUT/$mode-standalone-$i.json"
      b="$OUT/$mode-cluster-$i.json"
      [ -s "$a" ] && cat "$a" >>"$OUT/$mode-standalone.jsonl"
      [ -s "$b" ] && cat "$b" >>"$OUT/$mode-cluster.jsonl"
      if [ -s "$a" ] && [ -s "$b" ]; then
        jq -c -n --slurpfile a "$a" --slurpfile b "$b" '$a[0] as $x | $b[0] as $y |
          def r(f): if ($x | f) == null or ($y | f) == null or ($x | f) == 0 then null
                    else ($y | f) / ($x | f) end;
          {cycles_per_s: r(.cycles_per_s), client_cpu: r(.client_cpu_us_per_cycle),
           client_user: (if ($x.client_sys_us_per_cycle == null) or ($y.client_sys_us_per_cycle == null) then null
                         else ($y.client_cpu_us_per_cycle - $y.client_sys_us_per_cycle) /
                              ($x.client_cpu_us_per_cycle - $x.client_sys_us_per_cycle) end),
           client_sys: r(.client_sys_us_per_cycle), client_switches: r(.client_switches_per_cycle),
           server_cpu: r(.server_cpu_us_per_cycle), cycle_p50: r(.cycle.p50)}' >>"$OUT/$mode-ratio.jsonl"
      fi
      ;;
    esac
  done
done

med() { bench_median_fmt "$@"; } # file jq-expr format (bench/lib.sh)

echo "## Cluster voters: one cluster of $PRIMARIES primar$([ "$PRIMARIES" = 1 ] && echo y || echo ies) next to one standalone master"
echo
echo "$(bench_machine);"
echo "$(basename "$bench_server") on loopback, no persistence, no replicas; $RESOURCES resource names;"
echo "$RUNS rounds per mode, each run $DURATION s measured after $WARMUP s warm-up."
echo "throughput (C = 128, async API): a process per variant, ABBA over the rounds; server CPU:"
echo "the standalone master's, or the primaries' summed.  ab-cC: both in one process,"
echo "alternating 0.5 s segments.  Ratio: cluster / standalone.  CPU in µs per cycle; of the"
echo "client's, sys: in the kernel (throughput runs), and its context switches per cycle."
echo
echo "| mode | voter | cycles/s | cycle p50 (ms) | p99 | client CPU | of it sys | switches | server CPU | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for mode in $MODES; do
  for kind in standalone cluster; do
    f="$OUT/$mode-$kind.jsonl"
    echo "| $mode | $kind | $(med "$f" .cycles_per_s '%.0f') | $(med "$f" .cycle.p50 '%.3f') | $(med "$f" .cycle.p99 '%.3f') | $(med "$f" .client_cpu_us_per_cycle '%.2f') | $(med "$f" .client_sys_us_per_cycle '%.2f') | $(med "$f" .client_switches_per_cycle '%.4f') | $(med "$f" .server_cpu_us_per_cycle '%.2f') | $(med "$f" .errors '%d') |"
  done
  r="$OUT/$mode-ratio.jsonl"
  echo "| $mode | **ratio** ($(wc -l <"$r") rounds) | $(med "$r" .cycles_per_s '%.3f') | $(med "$r" .cycle_p50 '%.3f') | | **$(med "$r" .client_cpu '%.3f')** (user $(med "$r" .client_user '%.3f')) | $(med "$r" .client_sys '%.3f') | $(med "$r" .client_switches '%.2f') | $(med "$r" .server_cpu '%.3f') | |"
done
echo
if [ -s "$OUT/primary-cpu.jsonl" ]; then
  echo "Per primary (throughput runs, medians): server CPU per cycle of the whole run:" \
    "$(for k in "${!cluster_ports[@]}"; do med "$OUT/primary-cpu.jsonl" ".primary_cpu_us_per_cycle[$k]" '%.2f'; printf ' '; done)µs"
fi
status=0
worst=$(jq -s '[.[].shares[] | (. - 1) | fabs] | max' "$OUT/spread.jsonl")
if [ "$PRIMARIES" = 1 ]; then
  echo "Spread: one primary, none to measure"
else
  echo "Spread of EVALSHA over the 3 primaries, each run's shares x 3 (1 = a third):"
  jq -r '.shares | map(. * 1000 | round / 1000 | tostring) | join(" ")' "$OUT/spread.jsonl" | sed 's/^/  /'
fi
if [ "$PRIMARIES" = 1 ]; then
  :
elif awk -v w="$worst" 'BEGIN { exit !(w <= 0.15) }'; then
  printf 'spread: worst primary off a third by %.1f %%: within 15 %%\n' "$(awk -v w="$worst" 'BEGIN { print w * 100 }')"
else
  printf 'spread: worst primary off a third by %.1f %%: ABOVE 15 %%\n' "$(awk -v w="$worst" 'BEGIN { print w * 100 }')"
  status=1
fi
for mode in $MODES; do
  bench_cpu_ratio_check "$OUT/$mode-ratio.jsonl" "$mode: client CPU per cycle, cluster / standalone" 1.2 || status=1
done
echo
# shellcheck disable=SC2086 # MODES is a list
bench_commands standalone cluster $MODES
echo "Raw JSON: $OUT" >&2
exit $status
