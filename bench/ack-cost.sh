#!/bin/bash
# ack-cost.sh: what a durability ack costs the client.  N masters, each with
# one replica, all started here on loopback; then, in ONE run, RUNS rounds
# that each benchmark lock + unlock cycles against the masters without an
# ack (redis://127.0.0.1:P) and with one (redis://127.0.0.1:P?wait=1), the
# two in ABBA order (round 1 none then wait=1, round 2 wait=1 then none, ...)
# so that the machine's load drifts over both alike.  Prints, per mode, the
# medians of each variant and the median over the rounds of wait=1 / none,
# and whether client CPU per cycle stays within 1.3x
# (docs/performance.md, "Durability acks (wait=1)").
#
#   bench/ack-cost.sh [--server redis|valkey|PATH] path/to/redlock-bench
#
# --server valkey runs build-extra/valkey's valkey-server (no system install
# needed).  Environment: RUNS (5), DURATION (3 s measured), WARMUP (1 s), N (3),
# MODES ("throughput latency ab-c1 ab-c128"), OUT (raw JSON directory; default
# a temp dir).  Modes: throughput (C = 128, async API) and latency (C = 1,
# blocking API) run each variant in its own process, ABBA over the rounds;
# ab-cC runs both in ONE process (--ab-node, async API, C in flight), in
# alternating 0.5 s segments, which a noisy machine disturbs least.
# Every server is stopped by PID on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
# shellcheck source=bench/servers.sh
. "$here/servers.sh"

bench_args "$@"
bench_need ack-cost.sh jq redis-cli ss "$bench_server"

RUNS=${RUNS:-5}
DURATION=${DURATION:-3}
WARMUP=${WARMUP:-1}
N=${N:-3}
MODES=${MODES:-"throughput latency ab-c1 ab-c128"}
OUT=${OUT:-$(mktemp -d /tmp/redlock-ack-cost.XXXXXX)}
mkdir -p "$OUT"

bench_start_masters "$N" "$OUT"
bench_start_replicas "$OUT"
pidlist=$(IFS=,; echo "${bench_pids[*]}") # masters and replicas: server CPU counts both

nodes_for() { # none|wait1 [OPTION] -> the --node (or OPTION) options
  local p q="" opt=${2:---node}
  [ "$1" = wait1 ] && q="?wait=1"
  for p in "${bench_ports[@]}"; do printf ' %s redis://127.0.0.1:%s%s' "$opt" "$p" "$q"; done
}
cmd_for() { # mode [none|wait1] -> the command line
  local common="--server-pids $pidlist --no-quarantine --duration $DURATION --warmup $WARMUP --json"
  case $1 in
  throughput | latency) echo "$bench --mode $1$(nodes_for "$2") $common" ;;
  ab-c*) # one process, both variants in alternating segments
    echo "$bench --mode throughput --concurrency ${1#ab-c}$(nodes_for none)$(nodes_for wait1 --ab-node) $common" ;;
  esac
}

for mode in $MODES; do
  case $mode in
  throughput | latency | ab-c[1-9]*) ;;
  *) echo "ack-cost.sh: unknown mode $mode (throughput, latency, ab-cC)" >&2; exit 2 ;;
  esac
done
for mode in $MODES; do
  for i in $(seq 1 "$RUNS"); do
    case $mode in
    ab-c*) order="ab" ;;
    *) if [ $((i % 2)) = 1 ]; then order="none wait1"; else order="wait1 none"; fi ;;
    esac
    for kind in $order; do
      echo "ack-cost: $mode round $i/$RUNS, $kind" >&2
      f="$OUT/$mode-$kind-$i.json"
      # shellcheck disable=SC2046,SC2091 # the command is built as a string, split on purpose
      if ! $(cmd_for "$mode" "$kind") >"$f" 2>>"$OUT/stderr.log"; then
        echo "ack-cost: $mode round $i $kind failed (see $OUT/stderr.log)" >&2
        : >"$f"
      fi
    done
  done
done

# Per mode: each variant's runs as JSON lines, and one line of wait1 / none
# ratios per round in which both ran (ab-cC: the run's own pair medians).
for mode in $MODES; do
  : >"$OUT/$mode-none.jsonl"
  : >"$OUT/$mode-wait1.jsonl"
  : >"$OUT/$mode-ratio.jsonl"
  for i in $(seq 1 "$RUNS"); do
    case $mode in
    ab-c*)
      f="$OUT/$mode-ab-$i.json"
      [ -s "$f" ] || continue
      jq -c '.a + {errors}' "$f" >>"$OUT/$mode-none.jsonl"
      jq -c '.b + {errors}' "$f" >>"$OUT/$mode-wait1.jsonl"
      jq -c '{cycles_per_s: .pair_median_rate_ratio, client_cpu: .pair_median_cpu_ratio}' "$f" \
        >>"$OUT/$mode-ratio.jsonl"
      ;;
    *)
      a="$OUT/$mode-none-$i.json"
      b="$OUT/$mode-wait1-$i.json"
      cat "$a" >>"$OUT/$mode-none.jsonl"
      cat "$b" >>"$OUT/$mode-wait1.jsonl"
      if [ -s "$a" ] && [ -s "$b" ]; then
        jq -c -n --slurpfile a "$a" --slurpfile b "$b" '$a[0] as $x | $b[0] as $y |
          def r(f): if ($x | f) == null or ($y | f) == null or ($x | f) == 0 then null
                    else ($y | f) / ($x | f) end;
          {cycles_per_s: r(.cycles_per_s), client_cpu: r(.client_cpu_us_per_cycle),
           server_cpu: r(.server_cpu_us_per_cycle), acquire_p50: r(.acquire.p50),
           cycle_p50: r(.cycle.p50)}' >>"$OUT/$mode-ratio.jsonl"
      fi
      ;;
    esac
  done
done

med() { bench_median_fmt "$@"; } # file jq-expr format (bench/lib.sh)

echo "## Durability acks: wait=1 next to none"
echo
echo "$(bench_machine);"
echo "N = $N masters, each with one replica ($(basename "$bench_server") on loopback, no persistence);"
echo "$RUNS rounds per mode, each run $DURATION s measured after $WARMUP s warm-up."
echo "throughput (C = 128, async API) and latency (C = 1, blocking API): a process per variant,"
echo "ABBA over the rounds; ratio: median over the rounds of the round's wait=1 / none."
echo "ab-cC (async API, C in flight): both variants in one process, alternating 0.5 s"
echo "segments (ABBA, --ab-node); ratio: median over the rounds of each run's pair median."
echo "Server CPU: the masters and their replicas, summed. Latencies in ms, CPU in µs per cycle."
echo
echo "| mode | acks | cycles/s | acquire p50 | p99 | cycle p50 | p99 | client CPU | server CPU | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for mode in $MODES; do
  for kind in none wait1; do
    f="$OUT/$mode-$kind.jsonl"
    label=$([ "$kind" = wait1 ] && echo "wait=1" || echo "none")
    echo "| $mode | $label | $(med "$f" .cycles_per_s '%.0f') | $(med "$f" .acquire.p50 '%.3f') | $(med "$f" .acquire.p99 '%.3f') | $(med "$f" .cycle.p50 '%.3f') | $(med "$f" .cycle.p99 '%.3f') | $(med "$f" .client_cpu_us_per_cycle '%.2f') | $(med "$f" .server_cpu_us_per_cycle '%.2f') | $(med "$f" .errors '%d') |"
  done
  r="$OUT/$mode-ratio.jsonl"
  echo "| $mode | **ratio** ($(wc -l <"$r") rounds) | $(med "$r" .cycles_per_s '%.3f') | $(med "$r" .acquire_p50 '%.3f') | | $(med "$r" .cycle_p50 '%.3f') | | **$(med "$r" .client_cpu '%.3f')** | $(med "$r" .server_cpu '%.3f') | |"
done
echo
status=0
for mode in $MODES; do
  bench_cpu_ratio_check "$OUT/$mode-ratio.jsonl" "$mode: client CPU per cycle, wait=1 / none" 1.3 || status=1
done
echo
# shellcheck disable=SC2086 # MODES is a list
bench_commands none wait1 $MODES
echo "Raw JSON: $OUT" >&2
exit $status
