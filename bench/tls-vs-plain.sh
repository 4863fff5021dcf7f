#!/bin/sh
# tls-vs-plain.sh: the cost of TLS, measured next to plain TCP in one session:
# for each N in NODES and each mode in MODES, RUNS rounds that each run the
# plain benchmark and then the TLS one (interleaved, so that the machine's
# load drifts over both alike), then prints the medians as a markdown table
# with the exact commands (docs/performance.md, "TLS").
#
#   bench/tls-vs-plain.sh path/to/redlock-bench
#
# Environment: RUNS (3), DURATION (3 s measured), WARMUP (1 s), NODES ("3 5"),
# MODES ("throughput latency"), OUT (raw JSON directory; default a temp dir).
# Certificates are made fresh by tests/tls/make_certs.sh (EC P-256 keys) in
# OUT/certs.  Every run starts and stops its own masters (by PID).
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

bench=${1:-}
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
  echo "usage: $0 path/to/redlock-bench (a build with TLS: REDLOCK_TLS=ON)" >&2
  exit 2
fi
command -v jq >/dev/null 2>&1 || { echo "tls-vs-plain.sh: needs jq (apt-get install -y jq)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
RUNS=${RUNS:-3}
DURATION=${DURATION:-3}
WARMUP=${WARMUP:-1}
NODES=${NODES:-"3 5"}
MODES=${MODES:-"throughput latency"}
OUT=${OUT:-$(mktemp -d /tmp/redlock-tls-bench.XXXXXX)}
mkdir -p "$OUT/certs"
sh "$here/../tests/tls/make_certs.sh" "$OUT/certs"

cmd_for() { # mode n plain|tls
  c="$bench --mode $1 --start $2 --duration $DURATION --warmup $WARMUP --json"
  [ "$3" = tls ] && c="$c --tls --tls-certs $OUT/certs"
  echo "$c"
}

for mode in $MODES; do
  for n in $NODES; do
    : >"$OUT/$mode-N$n-plain.jsonl"
    : >"$OUT/$mode-N$n-tls.jsonl"
    i=1
    while [ "$i" -le "$RUNS" ]; do
      for kind in plain tls; do
        echo "tls-vs-plain: $mode N=$n $kind run $i/$RUNS" >&2
        # shellcheck disable=SC2046 # word splitting of the command is intended
        if ! $(cmd_for "$mode" "$n" "$kind") >>"$OUT/$mode-N$n-$kind.jsonl" 2>>"$OUT/stderr.log"; then
          echo "tls-vs-plain: $mode N=$n $kind run $i failed (see $OUT/stderr.log)" >&2
        fi
      done
      i=$((i + 1))
    done
  done
done

med() { bench_median_fmt "$@"; } # file jq-expr format (bench/lib.sh)

echo "## TLS vs plain"
echo
echo "$(bench_machine), $(openssl version | cut -d' ' -f1-2);"
echo "median of $RUNS interleaved runs per cell, $DURATION s measured after $WARMUP s warm-up."
echo
echo "| mode | N | transport | cycles/s | acquire p50 ms | p99 | cycle p50 ms | p99 | client CPU µs/cycle | server CPU µs/cycle | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for mode in $MODES; do
  for n in $NODES; do
    for kind in plain tls; do
      f="$OUT/$mode-N$n-$kind.jsonl"
      echo "| $mode | $n | $kind | $(med "$f" .cycles_per_s '%.0f') | $(med "$f" .acquire.p50 '%.3f') | $(med "$f" .acquire.p99 '%.3f') | $(med "$f" .cycle.p50 '%.3f') | $(med "$f" .cycle.p99 '%.3f') | $(med "$f" .client_cpu_us_per_cycle '%.1f') | $(med "$f" .server_cpu_us_per_cycle '%.1f') | $(med "$f" .errors '%d') |"
    done
  done
done
echo
echo "Commands (each run; plain, then TLS):"
echo
echo '```'
for mode in $MODES; do
  for n in $NODES; do
    cmd_for "$mode" "$n" plain | sed "s|$OUT|\$OUT|g"
    cmd_for "$mode" "$n" tls | sed "s|$OUT|\$OUT|g"
  done
done
echo '```'
echo "Raw JSON: $OUT" >&2
