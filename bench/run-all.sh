#!/bin/sh
# run-all.sh: every redlock-bench mode, RUNS times each at N = 1, 3, 5, and the
# medians as markdown tables (for docs/performance.md), with the exact commands.
#
#   bench/run-all.sh [path/to/redlock-bench]
#
# Environment: RUNS (3), DURATION (5 s measured per run), WARMUP (1 s),
# NODES ("1 3 5"), MODES ("throughput latency contention slow-node"),
# OUT (directory for the raw JSON, one line per run; default a new temp dir),
# EXTRA (more redlock-bench options for every run).
# Every run starts its own redis-server processes (quarantine off) on
# loopback and stops them.  Medians are taken per column, independently.
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

bench=${1:-}
if [ -z "$bench" ]; then
  for b in ./build/bench/redlock-bench /tmp/build-bench/bench/redlock-bench \
           "$(dirname "$0")/../build/bench/redlock-bench"; do
    if [ -x "$b" ]; then bench=$b; break; fi
  done
fi
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
  echo "usage: $0 path/to/redlock-bench   (build it first: cmake --build BUILD --target redlock-bench)" >&2
  exit 2
fi
command -v jq >/dev/null 2>&1 || { echo "run-all.sh: needs jq (apt-get install -y jq)" >&2; exit 1; }

RUNS=${RUNS:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
NODES=${NODES:-"1 3 5"}
MODES=${MODES:-"throughput latency contention slow-node"}
EXTRA=${EXTRA:-}
OUT=${OUT:-$(mktemp -d /tmp/redlock-bench.XXXXXX)}
mkdir -p "$OUT"

cmd_for() { # mode n -> the command line
  echo "$bench --mode $1 --start $2 --duration $DURATION --warmup $WARMUP --json${EXTRA:+ $EXTRA}"
}

for mode in $MODES; do
  for n in $NODES; do
    f="$OUT/$mode-N$n.jsonl"
    : >"$f"
    i=1
    while [ "$i" -le "$RUNS" ]; do
      echo "run-all: $mode N=$n run $i/$RUNS" >&2
      # shellcheck disable=SC2046 # word splitting of the command is intended
      if ! $(cmd_for "$mode" "$n") >>"$f" 2>>"$OUT/stderr.log"; then
        echo "run-all: $mode N=$n run $i failed (see $OUT/stderr.log)" >&2
      fi
      i=$((i + 1))
    done
  done
done

# median of a jq path over the runs of one file; "-" when absent.
med() { bench_median_fmt "$@"; } # file jq-expr format (bench/lib.sh)

echo "## redlock-bench results"
echo
echo "$(bench_machine),"
echo "median of $RUNS runs per cell (each column separately), $DURATION s measured after $WARMUP s warm-up."
echo "Masters: N redis-server processes on loopback started by the benchmark (restart quarantine off)."
echo "Latencies in ms; CPU in µs per lock+unlock cycle (server CPU: all masters summed)."
echo

for mode in $MODES; do
  echo "### $mode"
  echo
  case $mode in
  throughput | latency)
    echo "| N | C | cycles/s | acquire p50 | p99 | p99.9 | cycle p50 | p99 | p99.9 | client CPU µs | server CPU µs | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    ;;
  contention)
    echo "| N | workers | acq/s | hand-off p50 | p99 | lock_wait p50 | p99 | per worker min | max | fairness | give-ups | client CPU µs | server CPU µs | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    ;;
  slow-node)
    echo "| N | quorum | delay on master 0 | acquire p50 | p99 | p99.9 | cycle p50 | p99 | cycles/s | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    ;;
  esac
  for n in $NODES; do
    f="$OUT/$mode-N$n.jsonl"
    if [ ! -s "$f" ]; then
      echo "| $n | (no result) |"
      continue
    fi
    case $mode in
    throughput | latency)
      echo "| $n | $(med "$f" .C %d) | $(med "$f" .cycles_per_s %.0f) | $(med "$f" .acquire.p50 %.3f) | $(med "$f" .acquire.p99 %.3f) | $(med "$f" .acquire.p999 %.3f) | $(med "$f" .cycle.p50 %.3f) | $(med "$f" .cycle.p99 %.3f) | $(med "$f" .cycle.p999 %.3f) | $(med "$f" .client_cpu_us_per_cycle %.1f) | $(med "$f" .server_cpu_us_per_cycle %.1f) | $(med "$f" .errors %d) |"
      ;;
    contention)
      echo "| $n | $(med "$f" .workers %d) | $(med "$f" .acquisitions_per_s %.0f) | $(med "$f" .handoff.p50 %.3f) | $(med "$f" .handoff.p99 %.3f) | $(med "$f" .acquire.p50 %.2f) | $(med "$f" .acquire.p99 %.2f) | $(med "$f" .per_worker_min %d) | $(med "$f" .per_worker_max %d) | $(med "$f" .fairness %.2f) | $(med "$f" .give_ups %d) | $(med "$f" .client_cpu_us_per_cycle %.1f) | $(med "$f" .server_cpu_us_per_cycle %.1f) | $(med "$f" .errors %d) |"
      ;;
    slow-node)
      echo "| $n | $(med "$f" .quorum %d) | +$(med "$f" .delay_ms %d) ms | $(med "$f" .acquire.p50 %.3f) | $(med "$f" .acquire.p99 %.3f) | $(med "$f" .acquire.p999 %.3f) | $(med "$f" .cycle.p50 %.3f) | $(med "$f" .cycle.p99 %.3f) | $(med "$f" .cycles_per_s %.0f) | $(med "$f" .errors %d) |"
      ;;
    esac
  done
  echo
done

echo "Commands (each run $RUNS times; N = $NODES):"
echo
echo '```'
for mode in $MODES; do
  cmd_for "$mode" N
done
echo '```'
echo
echo "Raw JSON (one object per run): $OUT"
