#!/bin/sh
# watch-tick.sh: the renewal tick's before/after (docs/performance.md, "The
# renewal tick"): 10 000 watched locks, N = 3, ttl 30 s, spread 20 s and 0 s,
# two redlock-scale builds interleaved run by run.  Prints "== run R spread S
# before|after" and then redlock-scale's JSON line, for bench/plot-watch-tick.sh.
#
#   bench/watch-tick.sh BEFORE/redlock-scale AFTER/redlock-scale [RUNS] [DURATION] > OUT.log
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BEFORE_SCALE AFTER_SCALE [RUNS] [DURATION]" >&2; exit 2; }
runs=${3:-2}
duration=${4:-40}
run=1
while [ "$run" -le "$runs" ]; do
  for spread in 20 0; do
    for v in before after; do
      if [ "$v" = before ]; then b=$1; else b=$2; fi
      echo "== run $run spread $spread $v"
      "$b" --mode watch --nodes 3 --watches 10000 --watch-ttl 30000 --duration "$duration" \
        --spread "$spread" --json --hist
    done
  done
  run=$((run + 1))
done
