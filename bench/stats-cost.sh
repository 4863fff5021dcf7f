#!/bin/sh
# stats-cost.sh: what the client's stats cost.  Runs redlock-bench in
# throughput mode (N masters, C cycles in flight) with stats on and with
# --no-stats, RUNS times each, interleaved (on, off, on, off, ...) so that a
# shared machine whose load drifts weighs on both alike, then prints the
# medians and the cost as a ratio (docs/performance.md, "Stats on and off").
#
#   bench/stats-cost.sh path/to/redlock-bench
#
# Environment: RUNS (3), DURATION (3 s measured per run), WARMUP (1 s), N (5),
# C (128), OUT (directory for the raw JSON; default a new temp dir).
set -eu

bench=${1:-}
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
  echo "usage: $0 path/to/redlock-bench" >&2
  exit 2
fi
command -v jq >/dev/null 2>&1 || { echo "stats-cost.sh: needs jq (apt-get install -y jq)" >&2; exit 1; }

RUNS=${RUNS:-3}
DURATION=${DURATION:-3}
WARMUP=${WARMUP:-1}
N=${N:-5}
C=${C:-128}
OUT=${OUT:-$(mktemp -d /tmp/redlock-stats-cost.XXXXXX)}
mkdir -p "$OUT"
cmd="$bench --mode throughput --start $N --concurrency $C --duration $DURATION --warmup $WARMUP --json"
: >"$OUT/on.jsonl"
: >"$OUT/off.jsonl"
i=1
while [ "$i" -le "$RUNS" ]; do
  echo "stats-cost: run $i/$RUNS, stats on" >&2
  $cmd >>"$OUT/on.jsonl" 2>>"$OUT/stderr.log"
  echo "stats-cost: run $i/$RUNS, stats off" >&2
  $cmd --no-stats >>"$OUT/off.jsonl" 2>>"$OUT/stderr.log"
  i=$((i + 1))
done

med() { # file jq-path -> median
  jq -s "[.[] | $2] | sort | .[(length - 1) / 2 | floor]" "$1"
}
# Per pair (run i on vs run i off, back to back): throughput off / on.
pair_ratio_med() {
  jq -s -n --slurpfile on "$OUT/on.jsonl" --slurpfile off "$OUT/off.jsonl" \
    '[range(0; $on | length) | $off[.].cycles_per_s / $on[.].cycles_per_s] | sort | .[(length - 1) / 2 | floor]'
}

on_tp=$(med "$OUT/on.jsonl" .cycles_per_s)
off_tp=$(med "$OUT/off.jsonl" .cycles_per_s)
on_cpu=$(med "$OUT/on.jsonl" .client_cpu_us_per_cycle)
off_cpu=$(med "$OUT/off.jsonl" .client_cpu_us_per_cycle)
on_p50=$(med "$OUT/on.jsonl" .acquire.p50)
off_p50=$(med "$OUT/off.jsonl" .acquire.p50)
pair=$(pair_ratio_med)

echo "| stats | cycles/s | client CPU µs/cycle | acquire p50 ms |"
echo "|---|---|---|---|"
printf "| on | %.0f | %.2f | %.3f |\n" "$on_tp" "$on_cpu" "$on_p50"
printf "| off | %.0f | %.2f | %.3f |\n" "$off_tp" "$off_cpu" "$off_p50"
echo
awk -v on="$on_tp" -v off="$off_tp" -v con="$on_cpu" -v coff="$off_cpu" -v pair="$pair" 'BEGIN {
  printf "throughput cost (medians): %.2f%% (off/on = %.4f)\n", (off / on - 1) * 100, off / on
  printf "throughput cost (median of the %s back-to-back pairs): %.2f%%\n", "'"$RUNS"'", (pair - 1) * 100
  printf "client CPU per cycle cost (medians): %.2f%%\n", (con / coff - 1) * 100
}'
echo
echo "command: $cmd [--no-stats]; $RUNS runs each, interleaved; raw JSON in $OUT"
