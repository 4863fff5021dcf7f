#!/bin/bash
# ab-builds.sh: two builds of redlock-bench (say, before and after a change)
# measured side by side on the three figures issue 14 set targets for, run
# interleaved (A B, then B A, ...) so that a shared machine whose load drifts
# weighs on both alike.  Prints a markdown table: each side's median and the
# median of the in-pair ratios B / A (docs/performance.md, "Issue 14 from
# start to end").
#
#   bash bench/ab-builds.sh A/redlock-bench B/redlock-bench
#
# Per run and side:
#   --mode throughput --start 5 --duration D --warmup 1          async, C = 128
#   --mode throughput --start 5 --ab-api --threads 128 ...       blocking vs async, one client
#   --mode latency    --start 1 --ab-api ...                     blocking vs bare hiredis, C = 1
# Environment: RUNS (3), DURATION (4 s measured per run), OUT (directory for
# the raw JSON lines; default a new temp dir).  Needs jq.
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

a=${1:-}
b=${2:-}
if [ -z "$a" ] || [ -z "$b" ] || [ ! -x "$a" ] || [ ! -x "$b" ]; then
  echo "usage: $0 A/redlock-bench B/redlock-bench" >&2
  exit 2
fi
command -v jq >/dev/null 2>&1 || { echo "ab-builds.sh: needs jq (apt-get install -y jq)" >&2; exit 1; }

RUNS=${RUNS:-3}
DURATION=${DURATION:-4}
OUT=${OUT:-$(mktemp -d /tmp/redlock-ab-builds.XXXXXX)}
mkdir -p "$OUT"

# mode NAME: the benchmark's arguments for that measurement.
mode() {
  case $1 in
    async) echo "--mode throughput --start 5 --duration $DURATION --warmup 1 --json" ;;
    blocking) echo "--mode throughput --start 5 --ab-api --threads 128 --duration $DURATION --warmup 1 --json" ;;
    c1) echo "--mode latency --start 1 --ab-api --duration $DURATION --warmup 1 --json" ;;
  esac
}

for m in async blocking c1; do
  : >"$OUT/a-$m.jsonl"
  : >"$OUT/b-$m.jsonl"
done
i=1
while [ "$i" -le "$RUNS" ]; do
  for m in async blocking c1; do
    if [ $((i % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
    for side in $order; do
      if [ "$side" = a ]; then bin=$a; else bin=$b; fi
      echo "ab-builds: run $i/$RUNS, $m, $side" >&2
      # shellcheck disable=SC2046 # the arguments are meant to split
      "$bin" $(mode "$m") >>"$OUT/$side-$m.jsonl" 2>>"$OUT/stderr.log"
    done
  done
  i=$((i + 1))
done

# pair M EXPR: the median over runs of EXPR(B) / EXPR(A), run by run.
pair() {
  jq -n --slurpfile a "$OUT/a-$1.jsonl" --slurpfile b "$OUT/b-$1.jsonl" \
    "[range(0; \$a | length) | (\$b[.] | $2) / (\$a[.] | $2)] | sort | .[(length - 1) / 2 | floor]"
}
# row LABEL M EXPR FORMAT
row() {
  printf "| %s | $4 | $4 | %.2f |\n" "$1" "$(bench_median "$OUT/a-$2.jsonl" "$3")" \
    "$(bench_median "$OUT/b-$2.jsonl" "$3")" \
    "$(pair "$2" "$3")"
}

echo "| median of $RUNS runs | A | B | B / A, median of the in-pair ratios |"
echo "|---|---|---|---|"
row "async, N = 5, C = 128: cycles/s" async .cycles_per_s "%.0f"
row "async, N = 5, C = 128: client CPU µs / cycle" async .client_cpu_us_per_cycle "%.2f"
row "128 blocking threads, N = 5: client CPU µs / cycle" blocking .blocking.client_cpu_us_per_cycle "%.2f"
row "128 blocking threads, N = 5: cycles/s, blocking / async in the same run" blocking .pair_median_rate_ratio "%.2f"
row "C = 1, N = 1: blocking acquire p50 ms" c1 .blocking.acquire.p50 "%.4f"
row "C = 1, N = 1: blocking acquire p50 / bare hiredis SET p50, same run" c1 .acquire_p50_ratio "%.2f"
echo "raw JSON lines: $OUT" >&2
