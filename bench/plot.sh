#!/bin/sh
# plot.sh: PNG of a latency distribution written by redlock-bench --latency-hist.
#
#   bench/plot.sh HIST.dat [OUT.png] [TITLE]
#
# HIST.dat has two columns, "latency_ms count" (log-spaced buckets, 40 per
# decade); '#' lines are comments.  The plot shows the histogram (left axis,
# log x) and the cumulative share of samples (right axis, %).  Needs gnuplot:
# installed with `apt-get install -y gnuplot-nox` when missing and root.
set -eu

if [ $# -lt 1 ] || [ ! -r "$1" ]; then
  echo "usage: $0 HIST.dat [OUT.png] [TITLE]" >&2
  exit 2
fi
in=$1
out=${2:-${in%.*}.png}
title=${3:-$(sed -n 's/^# redlock-bench acquire latency histogram: //p' "$in" | head -n 1)}
[ -n "$title" ] || title=$in

if ! command -v gnuplot >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "plot.sh: installing gnuplot-nox" >&2
    apt-get install -y gnuplot-nox >/dev/null || { apt-get update >/dev/null && apt-get install -y gnuplot-nox >/dev/null; }
  else
    echo "plot.sh: gnuplot not found (apt-get install -y gnuplot-nox)" >&2
    exit 1
  fi
fi

if ! grep -qv '^#' "$in"; then
  echo "plot.sh: $in has no samples" >&2
  exit 1
fi

# pngcairo when the build has it, else the libgd png terminal.
if gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo; then
  term="pngcairo size 1000,600 enhanced font 'sans,10'"
else
  term="png size 1000,600"
fi

# Escape the title for a gnuplot double-quoted string.
title_esc=$(printf '%s' "$title" | sed 's/\\/\\\\/g; s/"/\\"/g')

gnuplot <<GP
set terminal $term
set output "$out"
stats "$in" using 2 nooutput
total = STATS_sum
set title "redlock-bench acquire latency: $title_esc (" . sprintf("%d", total) . " samples)" noenhanced
set logscale x
set format x "%g"
set xlabel "acquire latency (ms, log scale)"
set ylabel "samples per bucket"
set y2label "cumulative share (%)"
set y2range [0:100]
set y2tics 10
set ytics nomirror
set grid xtics y2tics
set key top left
set style fill solid 0.6 noborder
# Bucket i spans 10^(i/40) .. 10^((i+1)/40); the file gives its geometric centre.
w(x) = x * (10**(0.5/40.0) - 10**(-0.5/40.0))
plot "$in" using 1:2:(w(\$1)) with boxes lc rgb "#4477aa" title "histogram", \
     "$in" using 1:(100.0*\$2/total) smooth cumulative axes x1y2 with lines lw 2 lc rgb "#cc3311" title "cumulative"
GP
echo "$out"
