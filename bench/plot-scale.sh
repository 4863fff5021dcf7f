#!/bin/sh
# plot-scale.sh: the PNGs for docs/performance.md's sections on watched locks
# and on node-redlock, from
# the raw JSON that bench/scale.sh and bench/compare.sh leave in their OUT dirs.
#
#   bench/plot-scale.sh SCALE_OUT COMPARE_OUT [IMAGES_DIR]
#
# Writes IMAGES_DIR/watch-renewals.png (renewals per second, run 1 of each
# spread, and the CPU share of a core per run next to the 2 % target) and
# IMAGES_DIR/compare-node.png (cycles/s and client CPU per cycle, every run,
# redlock-c and node-redlock).  Needs gnuplot (apt-get install -y gnuplot-nox)
# and jq.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 SCALE_OUT COMPARE_OUT [IMAGES_DIR]" >&2; exit 2; }
scale=$1
cmp=$2
img=${3:-$(dirname "$0")/../docs/images}
for c in gnuplot jq; do
  command -v "$c" >/dev/null 2>&1 || { echo "plot-scale.sh: needs $c" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/plot-scale.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

for s in 0 20; do
  f=$scale/watch-$s.jsonl
  [ -r "$f" ] || continue
  head -n 1 "$f" | jq -r '.hist | to_entries[] | "\(.key) \(.value)"' >"$tmp/hist-$s.dat"
  jq -r '.core_share_pct' "$f" | awk -v s="$s" '{ print s, NR, $1 }' >>"$tmp/share.dat"
done

gnuplot <<GP
set terminal pngcairo size 1000,420 font "sans,10" noenhanced
set output "$img/watch-renewals.png"
set multiplot layout 1,2 title "10 000 watched locks, N = 3, ttl 30 s (redlock-scale --mode watch)"
set title "renewals per second (run 1)"
set xlabel "second of the 60 s window"
set ylabel "REDLOCK_EVENT_RENEW per second"
set logscale y
set yrange [1:20000]
set key top left
plot "$tmp/hist-0.dat" using 1:(\$2 > 0 ? \$2 : 1/0) with impulses lw 3 title "acquired in a burst (spread 0)", \
     "$tmp/hist-20.dat" using 1:2 with steps lw 2 title "acquired over 20 s (spread 20)"
unset logscale y
set title "client CPU, share of one core (3 runs each)"
set xlabel "spread of the acquisitions (s)"
set ylabel "% of a core"
set yrange [0:8]
set xrange [-5:25]
set xtics (0, 20)
plot "$tmp/share.dat" using 1:3 with points pt 7 ps 1.5 title "runs", \
     2 with lines dt 2 lw 2 title "target 2 %"
unset multiplot
GP

n=0
for k in ours_thr node_thr ours_lat ours_lat_async node_lat; do
  n=$((n + 1))
  jq -r --arg k "$k" --argjson n "$n" '"\($n) \(.cycles_per_s) \(.client_cpu_us_per_cycle)"' "$cmp/$k.jsonl" >>"$tmp/cmp.dat"
done
gnuplot <<GP
set terminal pngcairo size 1000,460 font "sans,10" noenhanced
set output "$img/compare-node.png"
set bmargin 5
set multiplot layout 1,2 title "redlock-c and node-redlock 5 (ioredis, auto-pipelining) on the same 5 masters, each run"
set xtics ("ours\nasync\nC=128" 1, "node\nC=128" 2, "ours\nblocking\nC=1" 3, "ours\nasync\nC=1" 4, "node\nC=1" 5)
set xrange [0.5:5.5]
set key off
set logscale y
set title "lock + unlock cycles per second"
set ylabel "cycles/s (log)"
plot "$tmp/cmp.dat" using 1:2 with points pt 7 ps 1.5
set title "client CPU per cycle"
set ylabel "µs per cycle (log)"
plot "$tmp/cmp.dat" using 1:3 with points pt 7 ps 1.5
unset multiplot
GP
echo "plot-scale.sh: wrote $img/watch-renewals.png and $img/compare-node.png"
