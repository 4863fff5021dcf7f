#!/bin/sh
# plot-watch-tick.sh: docs/images/watch-tick.png from bench/watch-tick.sh's
# output: renewals per second of the burst case (spread 0, run 2) before and
# after the renewal tick, and the CPU share of a core of every run.
#
#   bench/plot-watch-tick.sh OUT.log [IMAGES_DIR]
#
# Needs gnuplot (apt-get install -y gnuplot-nox) and jq.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 OUT.log [IMAGES_DIR]" >&2; exit 2; }
log=$1
img=${2:-$(dirname "$0")/../docs/images}
for c in gnuplot jq; do
  command -v "$c" >/dev/null 2>&1 || { echo "plot-watch-tick.sh: needs $c" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/plot-watch-tick.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# One file per (run, spread, build): its JSON line.
awk -v dir="$tmp" '/^== run/ { f = dir "/" $3 "-" $5 "-" $6 ".json"; next }
                   /^\{/ && f != "" { print > f; f = "" }' "$log"
for v in before after; do
  jq -r '.hist | to_entries[] | "\(.key) \(.value)"' "$tmp/2-0-$v.json" >"$tmp/hist-$v.dat"
  for f in "$tmp"/*-"$v".json; do
    base=$(basename "$f" .json)
    run=${base%%-*}
    spread=$(echo "$base" | cut -d- -f2)
    echo "$spread $run $(jq -r '.core_share_pct' "$f")"
  done | sort -n >"$tmp/share-$v.dat"
done

gnuplot <<GP
set terminal pngcairo size 1000,420 font "sans,10" noenhanced
set output "$img/watch-tick.png"
set multiplot layout 1,2 title "10 000 watched locks, N = 3, ttl 30 s: before and after the renewal tick"
set title "renewals per second, locks taken in a burst (spread 0, run 2)"
set xlabel "second of the 40 s window"
set ylabel "REDLOCK_EVENT_RENEW per second"
set logscale y
set yrange [1:20000]
set xrange [0:40]
set key top left
plot "$tmp/hist-before.dat" using (\$1-0.2):(\$2 > 0 ? \$2 : 1/0) with impulses lw 3 title "before", \
     "$tmp/hist-after.dat" using (\$1+0.2):(\$2 > 0 ? \$2 : 1/0) with impulses lw 3 title "after"
unset logscale y
set title "client CPU, share of one core (each run)"
set xlabel "acquisitions spread over (s)"
set ylabel "% of a core"
set yrange [0:*]
set xrange [-5:25]
set xtics (0, 20)
plot "$tmp/share-before.dat" using (\$1-1):3 with points pt 7 ps 1.5 title "before", \
     "$tmp/share-after.dat" using (\$1+1):3 with points pt 5 ps 1.5 title "after", \
     2 with lines dt 2 title "target 2 %"
unset multiplot
GP
echo "wrote $img/watch-tick.png"
