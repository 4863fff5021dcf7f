#!/bin/bash
# ab-builds.sh: two builds of redlock-bench (say, before and after a change)
# measured side by side, run interleaved (A B, then B A, ...) so that a
# shared machine whose load drifts weighs on both alike.  Prints a markdown
# table: each side's median and the median of the in-pair ratios B / A
# (docs/performance.md), then the targets a refactor must keep: cycles/s and
# client CPU per cycle within 3 %, callgrind instructions per cycle within 2 %.
#
#   bash bench/ab-builds.sh A/redlock-bench B/redlock-bench
#   bash bench/ab-builds.sh --rev REV [B/redlock-bench]
#
# --rev REV builds A from the git revision REV: a temporary worktree of REV
# (git worktree add), with this tree's bench/ laid over it so that both
# sides run the same benchmark program and only the library differs, and a
# Release build of redlock-bench alone.  B is the given binary, or else this
# tree (uncommitted changes included) built the same way.  Both builds and
# the worktree live in OUT; the worktree is removed at the end.
#
# Per run and side:
#   --mode throughput --start 5 --duration D --warmup 1          async, C = 128
#   --mode throughput --start 5 --ab-api --threads 128 ...       blocking vs async, one client
#   --mode latency    --start 1 --ab-api ...                     blocking vs bare hiredis, C = 1
#   valgrind --tool=callgrind redlock-bench $CG_ARGS --cycles N  twice, N = CG_CYCLES and
#       CG_BASE: instructions per cycle = (Ir - Ir') / (cycles - cycles'), the start-up
#       and shut-down the two runs share cancelled out
# Client CPU per cycle is the bench's own figure: getrusage(RUSAGE_SELF)
# user + system over the measured window, divided by its cycles.
# Environment: RUNS (3), DURATION (4 s measured per run), OUT (directory for
# the raw JSON lines and builds; default a new temp dir), CALLGRIND (1; 0
# skips it), CG_CYCLES (20000), CG_BASE (2000), CG_ARGS ("--mode throughput
# --start 3 --concurrency 32": 32 in flight batch alike from run to run, to
# 0.3 %).  Needs jq, and valgrind for the callgrind figure.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
  echo "usage: $0 A/redlock-bench B/redlock-bench" >&2
  echo "       $0 --rev REV [B/redlock-bench]" >&2
  exit 2
}
command -v jq >/dev/null 2>&1 || { echo "ab-builds.sh: needs jq (apt-get install -y jq)" >&2; exit 1; }

RUNS=${RUNS:-3}
DURATION=${DURATION:-4}
CALLGRIND=${CALLGRIND:-1}
CG_CYCLES=${CG_CYCLES:-20000}
CG_BASE=${CG_BASE:-2000}
CG_ARGS=${CG_ARGS:---mode throughput --start 3 --concurrency 32}
OUT=${OUT:-$(mktemp -d /tmp/redlock-ab-builds.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# build_bench SRC BUILD: a Release build of redlock-bench alone.
build_bench() {
  echo "ab-builds: building redlock-bench from $1 in $2" >&2
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DREDLOCK_WERROR=OFF \
    -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_BUILD_TOOLS=OFF \
    -DREDLOCK_BUILD_BENCH=ON >"$2.log" 2>&1 &&
    cmake --build "$2" -j2 --target redlock-bench >>"$2.log" 2>&1 ||
    { echo "ab-builds: the build failed: $2.log" >&2; exit 1; }
}

rev=
if [ "${1:-}" = --rev ]; then
  rev=${2:-}
  [ -n "$rev" ] || usage
  shift 2
  rev_src="$OUT/rev-src"
  git -C "$root" rev-parse --verify --quiet "$rev^{commit}" >/dev/null ||
    { echo "ab-builds: $rev is not a revision of $root" >&2; exit 2; }
  remove_worktree() { git -C "$root" worktree remove --force "$rev_src" 2>/dev/null || true; }
  trap remove_worktree EXIT
  git -C "$root" worktree add --detach "$rev_src" "$rev" >/dev/null 2>&1 ||
    { echo "ab-builds: git worktree add $rev_src $rev failed" >&2; exit 1; }
  # The same benchmark program on both sides: only the library is REV's.
  cp "$root"/bench/*.c "$root"/bench/*.h "$root"/bench/CMakeLists.txt "$rev_src/bench/"
  build_bench "$rev_src" "$OUT/build-a"
  a="$OUT/build-a/bench/redlock-bench"
  if [ -n "${1:-}" ]; then
    b=$1
  else
    build_bench "$root" "$OUT/build-b"
    b="$OUT/build-b/bench/redlock-bench"
  fi
else
  a=${1:-}
  b=${2:-}
fi
if [ -z "$a" ] || [ -z "$b" ] || [ ! -x "$a" ] || [ ! -x "$b" ]; then
  usage
fi
if [ "$CALLGRIND" = 1 ] && ! command -v valgrind >/dev/null 2>&1; then
  echo "ab-builds: valgrind not found: no callgrind figure (apt-get install -y valgrind)" >&2
  CALLGRIND=0
fi
for bin in "$a" "$b"; do
  if [ "$CALLGRIND" = 1 ] && ! "$bin" --help | grep -q -- --cycles; then
    echo "ab-builds: $bin has no --cycles: no callgrind figure (--rev lays this bench/ over REV)" >&2
    CALLGRIND=0
  fi
done

# mode NAME: the benchmark's arguments for that measurement.
mode() {
  case $1 in
    async) echo "--mode throughput --start 5 --duration $DURATION --warmup 1 --json" ;;
    blocking) echo "--mode throughput --start 5 --ab-api --threads 128 --duration $DURATION --warmup 1 --json" ;;
    c1) echo "--mode latency --start 1 --ab-api --duration $DURATION --warmup 1 --json" ;;
  esac
}

# callgrind BIN CYCLES: "Ir cycles" of one run of CG_ARGS --cycles CYCLES
# (the redis-server children run natively: valgrind follows no exec).
callgrind() {
  local dir
  dir=$(mktemp -d "$OUT/cg.XXXXXX")
  # shellcheck disable=SC2086 # CG_ARGS is meant to split
  valgrind --tool=callgrind --callgrind-out-file="$dir/out.%p" "$1" $CG_ARGS --cycles "$2" \
    --json >"$dir/bench.json" 2>>"$OUT/stderr.log" || { echo "ab-builds: callgrind run failed" >&2; exit 1; }
  # The largest total: a child between fork and exec may leave a file too.
  echo "$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$dir"/out.* | sort -n | tail -1)" \
    "$(jq .cycles "$dir/bench.json")"
  rm -rf "$dir"
}

# cg_line BIN: one JSON line: both runs and the instructions per cycle.
cg_line() {
  local big small
  big=$(callgrind "$1" "$CG_CYCLES")
  small=$(callgrind "$1" "$CG_BASE")
  # shellcheck disable=SC2086 # "Ir cycles" pairs
  set -- $big $small
  jq -nc --argjson ir "$1" --argjson c "$2" --argjson ir0 "$3" --argjson c0 "$4" \
    '{ir: $ir, cycles: $c, ir_base: $ir0, cycles_base: $c0, ir_per_cycle: (($ir - $ir0) / ($c - $c0))}'
}

modes="async blocking c1"
[ "$CALLGRIND" = 1 ] && modes="$modes cg"
for m in $modes; do
  : >"$OUT/a-$m.jsonl"
  : >"$OUT/b-$m.jsonl"
done
i=1
while [ "$i" -le "$RUNS" ]; do
  for m in $modes; do
    if [ $((i % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
    for side in $order; do
      if [ "$side" = a ]; then bin=$a; else bin=$b; fi
      echo "ab-builds: run $i/$RUNS, $m, $side" >&2
      if [ "$m" = cg ]; then
        cg_line "$bin" >>"$OUT/$side-$m.jsonl"
      else
        # shellcheck disable=SC2046 # the arguments are meant to split
        "$bin" $(mode "$m") >>"$OUT/$side-$m.jsonl" 2>>"$OUT/stderr.log"
      fi
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
  printf "| %s | $4 | $4 | %.3f |\n" "$1" "$(bench_median "$OUT/a-$2.jsonl" "$3")" \
    "$(bench_median "$OUT/b-$2.jsonl" "$3")" \
    "$(pair "$2" "$3")"
}
# target LABEL M EXPR PCT: whether the in-pair ratio is within PCT % of 1.
target() {
  local r
  r=$(pair "$2" "$3")
  awk -v r="$r" -v p="$4" -v l="$1" 'BEGIN {
    d = (r - 1) * 100
    printf "- %s: B / A = %.4f (%+.2f %%): %s\n", l, r, d, (d <= p && d >= -p) ? "within " p " %" : "NOT within " p " %"
  }'
}

if [ -n "$rev" ]; then
  echo "A: $rev ($(git -C "$root" rev-parse --short "$rev")), B: $b; Release builds, interleaved"
fi
echo "| median of $RUNS runs | A | B | B / A, median of the in-pair ratios |"
echo "|---|---|---|---|"
row "async, N = 5, C = 128: cycles/s" async .cycles_per_s "%.0f"
row "async, N = 5, C = 128: client CPU µs / cycle" async .client_cpu_us_per_cycle "%.2f"
row "128 blocking threads, N = 5: client CPU µs / cycle" blocking .blocking.client_cpu_us_per_cycle "%.2f"
row "128 blocking threads, N = 5: cycles/s, blocking / async in the same run" blocking .pair_median_rate_ratio "%.2f"
row "C = 1, N = 1: blocking acquire p50 ms" c1 .blocking.acquire.p50 "%.4f"
row "C = 1, N = 1: blocking acquire p50 / bare hiredis SET p50, same run" c1 .acquire_p50_ratio "%.2f"
if [ "$CALLGRIND" = 1 ]; then
  row "callgrind ($CG_ARGS): instructions / cycle" cg .ir_per_cycle "%.0f"
fi
echo
echo "Targets (in-pair ratios):"
target "async cycles/s" async .cycles_per_s 3
target "async client CPU per cycle" async .client_cpu_us_per_cycle 3
if [ "$CALLGRIND" = 1 ]; then
  target "callgrind instructions per cycle" cg .ir_per_cycle 2
fi
echo "raw JSON lines: $OUT" >&2
