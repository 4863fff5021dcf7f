#!/bin/sh
# plot-perf.sh: the PNGs for docs/performance.md's tables that are written by
# hand (results, targets, blocking path, where the CPU goes, before/after
# comparisons, TLS next to plain), drawn from the figures copied into
# docs/data/perf-*.dat (each file names the table it comes from in its first
# comment line).  No benchmark is run: edit the .dat file when a table
# changes, then run this again.
#
#   sh bench/plot-perf.sh [DATA_DIR [IMAGES_DIR]]
#
# Defaults: docs/data and docs/images next to this script.  Writes
# perf-targets-14, perf-blocking-cpu, perf-blocking-ratios, perf-async-cpu,
# perf-session5, perf-alloc-instructions, perf-alloc-wallclock, perf-seams,
# perf-stats-ab, perf-hold-close, perf-targets-5, perf-clock-reads,
# perf-replypool-instructions, perf-replypool-wallclock, and for the result
# tables perf-throughput, perf-primitives, perf-contention, perf-slow-node,
# perf-tls-loaded, perf-tls-quiet and perf-tls-instructions, and perf-obuf and
# perf-issue14-ab (.png).  Needs gnuplot (apt-get install -y gnuplot-nox).
set -eu
here=$(dirname "$0")
data=${1:-$here/../docs/data}
img=${2:-$here/../docs/images}
command -v gnuplot >/dev/null 2>&1 || { echo "plot-perf.sh: needs gnuplot (apt-get install -y gnuplot-nox)" >&2; exit 1; }
[ -d "$data" ] || { echo "plot-perf.sh: no data dir $data" >&2; exit 2; }
mkdir -p "$img"

# gp NAME [WIDTH HEIGHT]: run the gnuplot program on stdin with $data/NAME.dat
# as `dat` and $img/NAME.png as the output.  The program is a quoted here-doc,
# so gnuplot's $1 columns need no escaping.  Shared: the terminal, the colours,
# nl() which turns "|" in a label into a new line (gnuplot does not expand
# "\n" read from a data file), th() which prints a count with a space between
# thousands as the doc does (134 269), and "-" as a missing value.
gp() {
  name=$1
  [ -r "$data/$name.dat" ] || { echo "plot-perf.sh: missing $data/$name.dat" >&2; exit 1; }
  { cat <<EOF
set terminal pngcairo size ${2:-1000},${3:-420} font "sans,10" noenhanced
set output "$img/$name.png"
dat = "$data/$name.dat"
EOF
    cat <<'EOF'
nl(s) = strstrt(s, "|") > 0 ? s[1:strstrt(s, "|") - 1] . "\n" . nl(s[strstrt(s, "|") + 1:]) : s
th(x) = x >= 1000 ? sprintf("%d %03d", int(x) / 1000, int(x) % 1000) : sprintf("%d", int(x))
set datafile missing "-"
c_before = 0x9e9e9e; c_after = 0x1f77b4; c_met = 0x2ca02c; c_missed = 0xd62728; c_run = 0x000000
set style fill solid 0.85 border -1
set grid ytics lc rgb 0xdddddd
EOF
    cat
  } | gnuplot
  echo "plot-perf.sh: wrote $img/$name.png"
}

# Client-cost and scale targets: every target as a factor on one log axis,
# oriented so that right of 1 is missed (a floor: target / measured; a
# ceiling: measured / target); the bar goes to the worse end of a measured
# range, the whisker shows the range.
gp perf-targets-14 1000 420 <<'GP'
set title "Client-cost and scale targets (measured 2026-11-23 to 2026-11-26, up to 0ea0e9b): each measurement as a multiple of its target"
worse(lo, hi, t, d) = d eq "ge" ? t / lo : hi / t
better(lo, hi, t, d) = d eq "ge" ? t / hi : lo / t
set logscale x
set xrange [0.1:20]
set xtics (0.1, 0.2, 0.5, 1, 2, 5, 10, 20)
set xlabel "times the target, log scale (for a floor: target / measured); left of 1 = met, right = missed"
set yrange [6.6:-0.6]
set ytics nomirror scale 0
set grid noytics xtics
set key bottom right box opaque
set arrow from 1, graph 0 to 1, graph 1 nohead dt 2 lw 2 lc rgb "black" front
plot dat using (strcol(5) eq "zero" ? NaN : worse($2, $3, $4, strcol(5))):0:(0.1):(worse($2, $3, $4, strcol(5))):($0 - 0.32):($0 + 0.32):(worse($2, $3, $4, strcol(5)) <= 1 ? c_met : c_missed):ytic(nl(strcol(1))) \
       with boxxyerror lc rgb variable notitle, \
     dat using (strcol(5) eq "zero" || $2 == $3 ? NaN : worse($2, $3, $4, strcol(5))):0:(better($2, $3, $4, strcol(5))):(worse($2, $3, $4, strcol(5))) \
       with xerrorbars pt 0 lw 2 lc rgb "black" notitle, \
     dat using (strcol(5) eq "zero" ? 0.11 : worse($2, $3, $4, strcol(5)) * 1.08):0:6 with labels left notitle, \
     NaN with boxes lc rgb c_met title "met", \
     NaN with boxes lc rgb c_missed title "missed", \
     NaN with lines dt 2 lw 2 lc rgb "black" title "at target (1)"
GP

# Blocking path, "Before and after": client CPU per cycle of every row of its
# four tables, before and after, with the 12 us target of the T = 128 row.
gp perf-blocking-cpu 1000 460 <<'GP'
set title "Blocking path: client CPU per lock + unlock cycle, before (4b804de) and after (9df43c3), N = 5 unless noted, medians"
set logscale y
set yrange [5:500]
set ylabel "client CPU, µs per cycle (log scale)"
set xrange [-0.6:9.6]
set bmargin 5
set key top left box opaque
w = 0.36
plot dat using ($0 - w/2):2:($0 - w):($0):(5):2:xtic(nl(strcol(1))) with boxxyerror lc rgb c_before title "before (rows marked *: the fork-check change alone)", \
     dat using ($0 + w/2):3:($0):($0 + w):(5):3 with boxxyerror lc rgb c_after title "after", \
     dat using ($0 - w/2):($2 * 1.12):2 with labels font ",8" notitle, \
     dat using ($0 + w/2):($3 * 1.12):3 with labels font ",8" notitle, \
     12 with lines dt 2 lw 2 lc rgb c_missed title "target for 128 blocking threads: 12 µs"
GP

# Blocking path, the two ratio targets: every in-run ratio (points) and the
# medians the doc gives (bars), with the target as a line.
gp perf-blocking-ratios 1000 440 <<'GP'
set multiplot layout 1,2 title "Blocking path: the in-run ratios against their targets (bars: medians as given in the doc; points: each run)"
set bmargin 4
set xrange [-0.6:5.6]
set xtics font ",9"
set key top right box opaque
w = 0.3
set title "N = 5: 128 blocking threads / async C = 128, cycles/s"
set ylabel "ratio in one run (higher is better)"
set yrange [0:1.4]
plot dat index 0 using 0:5:($0 - w):($0 + w):(0):5:(int($0) % 2 ? c_after : c_before):xtic(nl(strcol(1))) with boxxyerror lc rgb variable notitle, \
     dat index 0 using ($0 - 0.12):2 with points pt 7 ps 1 lc rgb c_run title "single runs", \
     dat index 0 using ($0):3 with points pt 7 ps 1 lc rgb c_run notitle, \
     dat index 0 using ($0 + 0.12):4 with points pt 7 ps 1 lc rgb c_run notitle, \
     0.8 with lines dt 2 lw 2 lc rgb c_missed title "target ≥ 0.8"
set xrange [-0.6:3.6]
set title "N = 1, C = 1: blocking acquire p50 / bare hiredis SET p50"
set ylabel "ratio in one run (lower is better)"
ymax = 2.5
set yrange [0:ymax]
set label "6.26 (off scale)" at 2.12, ymax * 0.96 left
set key top left
plot dat index 1 using 0:5:($0 - w):($0 + w):(0):5:(int($0) % 2 ? c_after : c_before):xtic(nl(strcol(1))) with boxxyerror lc rgb variable notitle, \
     dat index 1 using ($0 - 0.12):($2 > ymax ? ymax * 0.96 : $2) with points pt 7 ps 1 lc rgb c_run title "single runs", \
     dat index 1 using ($0):($3 > ymax ? ymax * 0.96 : $3) with points pt 7 ps 1 lc rgb c_run notitle, \
     dat index 1 using ($0 + 0.12):($4 > ymax ? ymax * 0.96 : $4) with points pt 7 ps 1 lc rgb c_run notitle, \
     1.3 with lines dt 2 lw 2 lc rgb c_missed title "target ≤ 1.3"
unset multiplot
GP

# Where the async client's CPU goes: the perf shares, and libc's inside.
gp perf-async-cpu 1000 420 <<'GP'
set multiplot layout 1,2 title "Where the async client's CPU goes (perf, N = 5, C = 128; the client took 32 % of all samples, the masters 68 %)"
set bmargin 4
set key off
set boxwidth 0.6
set title "the client process, by object"
set ylabel "share of the client's CPU, %"
set yrange [0:50]
plot dat index 0 using 0:2:xtic(nl(strcol(1))) with boxes lc rgb c_after, \
     dat index 0 using 0:($2 + 1.5):(sprintf("%g %%", $2)) with labels
set title "inside libc (the 37 %)"
set ylabel "share of libc's samples, %"
set yrange [0:70]
plot dat index 1 using 0:2:xtic(nl(strcol(1))) with boxes lc rgb c_before, \
     dat index 1 using 0:($2 + 2):(sprintf("%g %%", $2)) with labels
unset multiplot
GP

# The engine changes of 2026-11-23 (per-kind op structs, per-thread votes,
# the watch tick, the blocking hand-off, the fork guard, the lock-value pool),
# before and after: each run, the medians, and the
# ratios inside each interleaved run pair.
gp perf-session5 1000 420 <<'GP'
set multiplot layout 1,3 title "Engine changes of 2026-11-23: before (3dd16f1) and after, N = 5, C = 128, runs interleaved (bars: medians; points: each run)"
set bmargin 4
set key off
set xrange [-0.6:1.6]
w = 0.3
set title "lock + unlock cycles per second"
set ylabel "cycles/s"
set yrange [0:35000]
plot dat index 0 using 0:5:($0 - w):($0 + w):(0):5:($0 > 0 ? c_after : c_before):xtic(nl(strcol(1))) with boxxyerror lc rgb variable, \
     for [c=2:4] dat index 0 using ($0 + (c - 3) * 0.1):c with points pt 7 ps 1 lc rgb c_run
set title "client CPU per cycle"
set ylabel "µs per cycle"
set yrange [0:16]
plot dat index 1 using 0:5:($0 - w):($0 + w):(0):5:($0 > 0 ? c_after : c_before):xtic(nl(strcol(1))) with boxxyerror lc rgb variable, \
     for [c=2:4] dat index 1 using ($0 + (c - 3) * 0.1):c with points pt 7 ps 1 lc rgb c_run
set title "after / before in each run pair"
set ylabel "ratio (1 = no change)"
set yrange [0:1.8]
set xtics font ",9"
set key top right box opaque
plot dat index 2 using ($0 - 0.1):2:xtic(nl(strcol(1))) with points pt 7 ps 1.3 lc rgb c_run title "pair 1, 2, 3", \
     dat index 2 using ($0):3 with points pt 7 ps 1.3 lc rgb c_run notitle, \
     dat index 2 using ($0 + 0.1):4 with points pt 7 ps 1.3 lc rgb c_run notitle, \
     1 with lines dt 2 lw 2 lc rgb "black" title "no change"
unset multiplot
GP

# instr_pairs NAME TITLE BEFORE AFTER: callgrind instructions per cycle, two
# bars per row of NAME.dat ("label" before after "change as printed"), the
# change printed in bold above each pair.
instr_pairs() {
  {
    printf 'set title "%s; in bold: the change"\nt_before = "%s"; t_after = "%s"\n' "$2" "$3" "$4"
    cat <<'GP'
stats dat using 2 nooutput
n = STATS_records
stats dat using 3 nooutput
set ylabel "instructions per cycle"
set yrange [0:STATS_max * 1.2]
set xrange [-0.6:n - 0.4]
set bmargin 4
set key top left box opaque
w = 0.36
plot dat using ($0 - w/2):2:($0 - w):($0):(0):2:xtic(nl(strcol(1))) with boxxyerror lc rgb c_before title t_before, \
     dat using ($0 + w/2):3:($0):($0 + w):(0):3 with boxxyerror lc rgb c_after title t_after, \
     dat using ($0 - w/2):($2 + STATS_max * 0.03):(sprintf("%d", $2)) with labels font ",8" notitle, \
     dat using ($0 + w/2):($3 + STATS_max * 0.03):(sprintf("%d", $3)) with labels font ",8" notitle, \
     dat using 0:(($2 > $3 ? $2 : $3) + STATS_max * 0.075):4 with labels font "sans:Bold,10" notitle
GP
  } | gp "$1"
}

# Allocation-free cycle: callgrind instructions per cycle by component.
instr_pairs perf-alloc-instructions \
  "Allocation-free cycle: instructions per lock + unlock cycle, whole process (callgrind, N = 5, C = 128)" \
  "main (90b2933)" "wt-pools (free lists)"

# Allocation-free cycle: the wall-clock medians with their ranges.
gp perf-alloc-wallclock 1000 420 <<'GP'
set multiplot layout 1,2 title "Allocation-free cycle on the wall clock (N = 5, C = 128, six interleaved runs each; bar: median, whisker: min-max)"
set key off
set xrange [-0.6:1.6]
set boxwidth 0.5
set title "lock + unlock cycles per second"
set ylabel "cycles/s"
set yrange [0:60000]
plot dat using 0:2:($0 > 0 ? c_after : c_before):xtic(1) with boxes lc rgb variable, \
     dat using 0:2:3:4 with yerrorbars pt 0 lw 2 lc rgb c_run
set title "client CPU per cycle"
set ylabel "µs per cycle"
set yrange [0:14]
plot dat using 0:5:($0 > 0 ? c_after : c_before):xtic(1) with boxes lc rgb variable, \
     dat using 0:5:6:7 with yerrorbars pt 0 lw 2 lc rgb c_run
unset multiplot
GP

# The module seams: callgrind before/after, with the change.
instr_pairs perf-seams \
  "The module seams: instructions per lock + unlock cycle, before and after (callgrind, N = 5, C = 128)" \
  "before (7e75bc1)" "after"

# Holding 100 000 locks: what redlock_close() took and what it left, before
# and after the close was paced (7490ce4).
gp perf-hold-close 1000 420 <<'GP'
set multiplot layout 1,2 title "redlock_close() with 100 000 held locks (N = 3; s1, s2: before the close was paced; s6: after it, 7490ce4; request timeout; master 0 stopped)"
set bmargin 5
set xrange [-0.6:6.6]
set xtics font ",9"
set key top left box opaque
set boxwidth 0.6
set title "wall time of the close (median of 3)"
set ylabel "seconds"
set yrange [0:7.5]
plot dat using 0:2:($4 > 0 ? c_after : c_before):xtic(nl(strcol(1))) with boxes lc rgb variable notitle, \
     dat using 0:($2 + 0.25):(sprintf("%.2f", $2)) with labels font ",8" notitle, \
     NaN with boxes lc rgb c_before title "before", NaN with boxes lc rgb c_after title "after"
set title "keys left after it, worst of 3 runs (% of the 300 000 held)"
set ylabel "% of the keys"
set yrange [0:135]
set key top right
plot dat using 0:($3 / 3000.0):($4 > 0 ? c_after : c_before):xtic(nl(strcol(1))) with boxes lc rgb variable notitle, \
     dat using 0:($3 / 3000.0 + 4):(sprintf("%.0f %%", $3 / 3000.0)) with labels font ",8" notitle, \
     33.3 with lines dt 2 lw 1 lc rgb "black" title "one master's share (stopped: expire by TTL)"
unset multiplot
GP

# Stats on and off: the cost measured inside each --ab-stats run.
gp perf-stats-ab 1000 420 <<'GP'
set title "Stats on and off: their cost inside one --ab-stats run (N = 5, C = 128; 2026-11-23)"
set ylabel "cost of the stats, % (above 0: the stats cost)"
set yrange [-10:6]
set xrange [-0.6:4.6]
set bmargin 4
set key bottom right box opaque
set xzeroaxis lt -1
w = 0.36
plot dat using ($0 - w/2):4:($0 - w):($0):(0):4:xtic(nl(strcol(1))) with boxxyerror lc rgb c_before title "throughput cost (off / on - 1)", \
     dat using ($0 + w/2):7:($0):($0 + w):(0):7 with boxxyerror lc rgb c_after title "client CPU cost (on / off - 1)", \
     dat using ($0 - w/2):($4 + ($4 < 0 ? -0.5 : 0.5)):(sprintf("%+.1f %%", $4)) with labels font ",8" notitle, \
     dat using ($0 + w/2):($7 + ($7 < 0 ? -0.5 : 0.5)):(sprintf("%+.1f %%", $7)) with labels font ",8" notitle, \
     3 with lines dt 2 lw 2 lc rgb c_missed title "target: throughput cost ≤ 3 %"
GP

# Throughput (C = 128, async API): cycles/s, the latency percentiles and the
# CPU per cycle of client and masters, by N.
gp perf-throughput 1000 400 <<'GP'
set multiplot layout 1,3 title "Throughput, C = 128, async API, by number of masters N (2026-11-22; medians of 3 runs; no errors)"
set xrange [-0.6:2.6]
set bmargin 4
set title "lock + unlock cycles per second"
set ylabel "cycles/s"
set yrange [0:160000]
set format y "%.0f"
set boxwidth 0.6
set key off
plot dat using 0:2:xtic(sprintf("N = %d", $1)) with boxes lc rgb c_after, \
     dat using 0:($2 + 5000):(th($2)) with labels font ",9"
set title "latency, ms"
set ylabel "ms"
set yrange [0:4]
set format y "%g"
set key top left box opaque font ",8" maxrows 3
w = 0.15
plot dat using ($0 - 2*w):3:($0 - 2.5*w):($0 - 1.5*w):(0):3 with boxxyerror lc rgb 0x1f77b4 title "acquire p50", \
     dat using ($0 - w):4:($0 - 1.5*w):($0 - 0.5*w):(0):4 with boxxyerror lc rgb 0x6baed6 title "acquire p99", \
     dat using ($0):5:($0 - 0.5*w):($0 + 0.5*w):(0):5:xtic(sprintf("N = %d", $1)) with boxxyerror lc rgb 0xc6dbef title "acquire p99.9", \
     dat using ($0 + w):6:($0 + 0.5*w):($0 + 1.5*w):(0):6 with boxxyerror lc rgb 0xff7f0e title "cycle p50", \
     dat using ($0 + 2*w):7:($0 + 1.5*w):($0 + 2.5*w):(0):7 with boxxyerror lc rgb 0xfdae6b title "cycle p99"
set title "CPU per lock + unlock cycle"
set ylabel "µs per cycle"
set yrange [0:30]
set key top left box opaque font ",9" maxrows 2
w = 0.36
plot dat using 0:(1):(""):xtic(sprintf("N = %d", $1)) with labels notitle, \
     dat using ($0 - w/2):8:($0 - w):($0):(0):8 with boxxyerror lc rgb c_after title "client", \
     dat using ($0 + w/2):9:($0):($0 + w):(0):9 with boxxyerror lc rgb c_before title "masters (summed)", \
     dat using ($0 - w/2):($8 + 0.8):(sprintf("%.1f", $8)) with labels font ",8" notitle, \
     dat using ($0 + w/2):($9 + 0.8):(sprintf("%.1f", $9)) with labels font ",8" notitle
unset multiplot
GP

# Coordination primitives (N = 5, C = 128): cycles/s labelled with the ratio
# to a plain lock ("vs lock"), acquire p50 / p99, and the CPU per cycle.
gp perf-primitives 1100 420 <<'GP'
set multiplot layout 1,3 title "Coordination primitives, N = 5, C = 128, uncontended (one later session, busier machine; medians of 3 runs)"
v(c) = real(strcol(c))
set xrange [-0.6:3.6]
set bmargin 4
set xtics font ",9"
set title "cycles per second; in bold: vs lock"
set ylabel "cycles/s"
set yrange [0:42000]
set boxwidth 0.6
set key off
plot dat using 0:2:($0 > 0 ? c_after : c_before):xtic(nl(strcol(1))) with boxes lc rgb variable, \
     dat using 0:($2 + 1200):(th($2)) with labels font ",8", \
     dat using 0:($2 + 3600):(strcol(3) . " ×") with labels font "sans:Bold,10"
set title "acquire latency, ms"
set ylabel "ms"
set yrange [0:36]
set key top left box opaque reverse Left
w = 0.36
plot dat using 0:(1):(""):xtic(nl(strcol(1))) with labels notitle, \
     dat using ($0 - w/2):(v(4)):($0 - w):($0):(0):(v(4)) with boxxyerror lc rgb c_after title "p50", \
     dat using ($0 + w/2):(v(5)):($0):($0 + w):(0):(v(5)) with boxxyerror lc rgb 0x6baed6 title "p99", \
     dat using ($0 - w/2):(v(4) + 1):4 with labels font ",8" notitle, \
     dat using ($0 + w/2):(v(5) + 1):5 with labels font ",8" notitle
set title "CPU per cycle"
set ylabel "µs per cycle"
set yrange [0:115]
plot dat using 0:(1):(""):xtic(nl(strcol(1))) with labels notitle, \
     dat using ($0 - w/2):(v(6)):($0 - w):($0):(0):(v(6)) with boxxyerror lc rgb c_after title "client", \
     dat using ($0 + w/2):(v(7)):($0):($0 + w):(0):(v(7)) with boxxyerror lc rgb c_before title "masters (summed)", \
     dat using ($0 - w/2):(v(6) + 2.5):6 with labels font ",8" notitle, \
     dat using ($0 + w/2):(v(7) + 2.5):7 with labels font ",8" notitle
unset multiplot
GP

# Contention (8 threads on one resource, hold 1 ms): acquisitions/s with the
# fairness, the hand-off and lock_wait percentiles (log scale), and each
# worker's acquisitions as the min-max range the table gives.
gp perf-contention 1000 420 <<'GP'
set multiplot layout 1,3 title "Contention: 8 threads on one resource, hold 1 ms, redlock_lock_wait, by number of masters N (medians of 3 runs; no give-ups)"
set xrange [-0.6:2.6]
set bmargin 4
set key off
set title "acquisitions per second; in bold: fairness max/min"
set ylabel "acquisitions/s"
set yrange [0:1000]
set boxwidth 0.6
plot dat using 0:2:xtic(sprintf("N = %d", $1)) with boxes lc rgb c_after, \
     dat using 0:($2 + 25):(sprintf("%d", $2)) with labels font ",9", \
     dat using 0:($2 + 80):(sprintf("%.2f", $9)) with labels font "sans:Bold,10"
set title "hand-off and lock_wait, ms (log scale)"
set ylabel "ms (log scale)"
set logscale y
set yrange [0.01:1000]
set key top left box opaque reverse Left font ",8" maxcols 1
w = 0.2
plot dat using 0:(1):(""):xtic(sprintf("N = %d", $1)) with labels notitle, \
     dat using ($0 - 1.5*w):3:($0 - 2*w):($0 - w):(0.001):3 with boxxyerror lc rgb 0x1f77b4 title "hand-off p50", \
     dat using ($0 - 0.5*w):4:($0 - w):($0):(0.001):4 with boxxyerror lc rgb 0x6baed6 title "hand-off p99", \
     dat using ($0 + 0.5*w):5:($0):($0 + w):(0.001):5 with boxxyerror lc rgb 0xff7f0e title "lock_wait p50", \
     dat using ($0 + 1.5*w):6:($0 + w):($0 + 2*w):(0.001):6 with boxxyerror lc rgb 0xfdae6b title "lock_wait p99"
unset logscale y
set title "acquisitions per worker: min-max of the 8"
set errorbars 6
set ylabel "acquisitions"
set yrange [0:350]
set key off
plot dat using 0:(($7 + $8)/2.0):7:8:xtic(sprintf("N = %d", $1)) with yerrorbars pt 7 ps 0.01 lw 2 lc rgb c_after, \
     dat using 0:7:(0):($8 - $7) with vectors nohead lw 2 lc rgb c_after, \
     dat using 0:($8 + 12):(sprintf("%d-%d", $7, $8)) with labels font ",9"
unset multiplot
GP

# Slow node (master 0 +20 ms each way): acquire percentiles and cycles/s on a
# log scale, next to the same N without a slow master (the Latency table, as
# the doc's text compares them), with the ratio slow / without in bold.
gp perf-slow-node 1000 480 <<'GP'
set multiplot layout 1,2 title "Slow node: master 0 behind the fault proxy (+20 ms each way), C = 1 blocking,\nnext to the Latency table (no slow master); quorum 1, 2, 3 of N = 1, 3, 5"
set xrange [-0.6:2.6]
set logscale y
set key below vertical box maxrows 2 font ",9" width -2
rt(r) = r < 0.01 ? sprintf("%.2g ×", r) : r >= 100 ? sprintf("%.0f ×", r) : sprintf("%.2f ×", r)
xl(n, q) = sprintf("N = %d", n)
set title "acquire latency, ms; in bold: p50 slow / without"
set ylabel "ms (log scale)"
set yrange [0.01:1000]
w = 0.2
plot dat using 0:(1):(""):xtic(xl($1, $2)) with labels notitle, \
     dat using ($0 - 1.5*w):7:($0 - 2*w):($0 - w):(0.001):7 with boxxyerror lc rgb c_before title "p50, no slow master", \
     dat using ($0 - 0.5*w):3:($0 - w):($0):(0.001):3 with boxxyerror lc rgb c_after title "p50, slow master", \
     dat using ($0 + 0.5*w):4:($0):($0 + w):(0.001):4 with boxxyerror lc rgb 0x6baed6 title "p99, slow master", \
     dat using ($0 + 1.5*w):5:($0 + w):($0 + 2*w):(0.001):5 with boxxyerror lc rgb 0xc6dbef title "p99.9, slow master", \
     dat using ($0 - 1.5*w):($7 * 1.15):(sprintf("%.3f", $7)) with labels rotate by 90 left font ",7" notitle, \
     dat using ($0 - 0.5*w):($3 * 1.15):(sprintf("%.3f", $3)) with labels rotate by 90 left font ",7" notitle, \
     dat using ($0 + 0.5*w):($4 * 1.15):(sprintf("%.3f", $4)) with labels rotate by 90 left font ",7" notitle, \
     dat using ($0 + 1.5*w):($5 * 1.15):(sprintf("%.3f", $5)) with labels rotate by 90 left font ",7" notitle, \
     dat using 0:(500):(rt($3 / $7)) with labels font "sans:Bold,10" notitle
set title "lock + unlock cycles per second; in bold: slow / without"
set ylabel "cycles/s (log scale)"
set yrange [1:1000000]
set format y "%.0f"
w = 0.36
plot dat using 0:(1):(""):xtic(xl($1, $2)) with labels notitle, \
     dat using ($0 - w/2):8:($0 - w):($0):(1):8 with boxxyerror lc rgb c_before title "no slow master", \
     dat using ($0 + w/2):6:($0):($0 + w):(1):6 with boxxyerror lc rgb c_after title "slow master", \
     dat using ($0 - w/2):($8 * 1.4):(th($8)) with labels font ",8" notitle, \
     dat using ($0 + w/2):($6 * 1.4):(th($6)) with labels font ",8" notitle, \
     dat using 0:(300000):(rt($6 / $8)) with labels font "sans:Bold,10" notitle
unset multiplot
GP

# tls_pair NAME TITLE: a "TLS next to plain" wall-clock table, one line per
# (mode, N) with plain and TLS side by side for each column: cycles/s of both,
# and TLS / plain for every column (the ratio is computed here from the two
# medians the table gives, and printed at the foot of its bar).
tls_pair() {
  {
    printf 'set multiplot title "%s"\n' "$2"
    cat <<'GP'
stats dat using 2 nooutput
n = STATS_records
set xrange [-0.6:n - 0.4]
set bmargin 7
set xtics font ",9"
set logscale y
set origin 0, 0
set size 0.4, 0.94
set title "cycles per second; in bold: TLS / plain"
set ylabel "cycles/s (log scale)"
set yrange [1000:300000]
set format y "%.0f"
set key below vertical maxrows 2 box font ",9"
w = 0.36
plot dat using 0:(1):(""):xtic(nl(strcol(1))) with labels notitle, \
     dat using ($0 - w/2):2:($0 - w):($0):(1):2 with boxxyerror lc rgb c_before title "plain", \
     dat using ($0 + w/2):3:($0):($0 + w):(1):3 with boxxyerror lc rgb c_after title "TLS", \
     dat using ($0 - w/2):($2 * 1.08):(th($2)) with labels rotate by 90 left font ",8" notitle, \
     dat using ($0 + w/2):($3 * 1.08):(th($3)) with labels rotate by 90 left font ",8" notitle, \
     dat using 0:(($2 > $3 ? $2 : $3) * 2.6):(sprintf("%.2f ×", $3 / $2)) with labels font "sans:Bold,10" notitle
set origin 0.4, 0
set size 0.6, 0.94
set title "TLS / plain, every column (log scale; above 1: TLS higher); the ratio at the foot of each bar"
set ylabel "TLS / plain"
set yrange [0.25:5]
set ytics (0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4)
set format y "%g"
set key below horizontal maxrows 2 box font ",9"
m = 7
w = 0.8 / m
array cname[7] = ["cycles/s", "acquire p50", "acquire p99", "cycle p50", "cycle p99", "client CPU", "server CPU"]
array ccol[7] = [0x1f77b4, 0xff7f0e, 0xfdae6b, 0x9467bd, 0xc5b0d5, 0x8c564b, 0xc49c94]
plot 1 with lines dt 2 lw 2 lc rgb "black" title "equal", \
     dat using 0:(1):(""):xtic(nl(strcol(1))) with labels notitle, \
     for [k=1:m] dat using ($0 + (k - 4) * w):(column(2*k + 1) / column(2*k)):($0 + (k - 4.5) * w):($0 + (k - 3.5) * w):(0.01):(column(2*k + 1) / column(2*k)) \
       with boxxyerror lc rgb ccol[k] title cname[k], \
     for [k=1:m] dat using ($0 + (k - 4) * w):(0.27):(sprintf("%.2f", column(2*k + 1) / column(2*k))) \
       with labels rotate by 90 left font ",8" notitle
unset multiplot
GP
  } | gp "$1" 1200 500
}

# TLS next to plain: the loaded session's table, then the quiet machine's.
tls_pair perf-tls-loaded "TLS next to plain, load average ~8.5 (2026-11-23; medians of 3 runs, plain and TLS interleaved; no errors)"
tls_pair perf-tls-quiet "TLS next to plain again on a quiet machine (load average 0.7, N = 5; medians of 3 interleaved runs)"

# TLS next to plain, counted: callgrind instructions per cycle of the client,
# plain and TLS, for each of the table's two measurements; in bold the ratio
# and the difference, computed here.
gp perf-tls-instructions 1000 420 <<'GP'
set title "TLS next to plain, counted: client instructions per lock + unlock cycle (callgrind, N = 3, C = 32); in bold: TLS / plain and the difference"
set ylabel "instructions per cycle"
set yrange [0:40000]
set xrange [-0.6:1.6]
set bmargin 4
set key top left box opaque
w = 0.3
plot dat using 0:(1):(""):xtic(1) with labels notitle, \
     dat using ($0 - w/2):2:($0 - w):($0):(0):2 with boxxyerror lc rgb c_before title "plain", \
     dat using ($0 + w/2):3:($0):($0 + w):(0):3 with boxxyerror lc rgb c_after title "TLS (TLS 1.3, AES-256-GCM)", \
     dat using ($0 - w/2):($2 + 700):(th($2)) with labels font ",9" notitle, \
     dat using ($0 + w/2):($3 + 700):(th($3)) with labels font ",9" notitle, \
     dat using 0:(($2 > $3 ? $2 : $3) + 3000):(sprintf("%.2f × (+%s)", $3 / $2, th($3 - $2))) with labels font "sans:Bold,10" notitle
GP

# Throughput and latency targets: as perf-targets-14, every target as a
# factor on one log axis, right of 1 missed (a floor: target / measured; a
# ceiling: measured / target).  Every cell is a single figure, so there are
# no whiskers.
gp perf-targets-5 1000 520 <<'GP'
set title "Throughput and latency targets (2026-11-22): each measurement as a multiple of its target"
worse(lo, hi, t, d) = d eq "ge" ? t / lo : hi / t
set logscale x
set xrange [0.03:30]
set xtics (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20)
set xlabel "times the target, log scale (for a floor: target / measured); left of 1 = met, right = missed"
set yrange [11.6:-0.6]
set ytics nomirror scale 0 font ",9"
set grid noytics xtics
set key top right box opaque
set style textbox opaque noborder margins 1, 1
set arrow from 1, graph 0 to 1, graph 1 nohead dt 2 lw 2 lc rgb "black" back
plot dat using (strcol(5) eq "zero" ? NaN : worse($2, $3, $4, strcol(5))):0:(0.01):(worse($2, $3, $4, strcol(5))):($0 - 0.32):($0 + 0.32):(worse($2, $3, $4, strcol(5)) <= 1 ? c_met : c_missed):ytic(nl(strcol(1))) \
       with boxxyerror lc rgb variable notitle, \
     dat using (strcol(5) eq "zero" ? 0.033 : worse($2, $3, $4, strcol(5)) * 1.08):0:6 with labels boxed left font ",9" notitle, \
     NaN with boxes lc rgb c_met title "met", \
     NaN with boxes lc rgb c_missed title "missed", \
     NaN with lines dt 2 lw 2 lc rgb "black" title "at target (1)"
GP

# ab_panels NAME TITLE BEFORE AFTER [WIDTH]: a wall-clock before/after table,
# one panel per row of NAME.dat ("metric" before after ratio), the two figures
# as bars and after / before in bold: the table's median of the in-pair ratios,
# or, where the table gives none ("none"), the two figures divided here.
ab_panels() {
  {
    printf 'title_all = "%s"\nt_before = "%s"; t_after = "%s"\n' "$2" "$3" "$4"
    cat <<'GP'
stats dat using 2 nooutput
n = STATS_records
set multiplot layout 1, n title title_all
set xrange [-0.6:1.6]
set boxwidth 0.6
set key off
set bmargin 3
set xtics (t_before 0, t_after 1)
lbl(x, s) = x >= 1000 ? th(x) : s
do for [i = 0:n - 1] {
  stats [*:*][*:*] dat every ::i::i using (lab = strcol(1), rg = strcol(4), $2) nooutput
  b = STATS_max
  stats [*:*][*:*] dat every ::i::i using 3 nooutput
  a = STATS_max
  top = a > b ? a : b
  set yrange [0:top * 1.45]
  set title nl(lab)
  set label 1 (rg eq "none" ? sprintf("after / before: %.2f\n(the two figures divided)", a / b) : "after / before: " . rg . "\n(median of the in-pair ratios)") \
    at graph 0.5, graph 0.92 center font "sans:Bold,9"
  plot dat every ::i::i using (0):2 with boxes lc rgb c_before, \
       dat every ::i::i using (1):3 with boxes lc rgb c_after, \
       dat every ::i::i using (0):($2 + top * 0.04):(lbl($2, strcol(2))) with labels font ",9", \
       dat every ::i::i using (1):($3 + top * 0.04):(lbl($3, strcol(3))) with labels font ",9"
}
unset multiplot
GP
  } | gp "$1" "${5:-1000}" 400
}

# Fewer clock reads: before and after, with the ratios.
ab_panels perf-clock-reads \
  "Fewer clock reads: N = 5, C = 128, 10 interleaved pairs, load average < 2" \
  "before (530465f)" "after (df9c035)"

# hiredis' replies from a pool: the callgrind table, then the
# wall-clock one.
# (instr_pairs' look, with room for the before bars, which are the higher.)
gp perf-replypool-instructions 1000 420 <<'GP'
set title "hiredis' replies from a pool: instructions per lock + unlock cycle, whole client process\n(callgrind, N = 5, C = 128); in bold: the change"
set ylabel "instructions per cycle"
set yrange [0:38000]
set xrange [-0.6:1.6]
set bmargin 4
set key top right box opaque
w = 0.36
plot dat using 0:(1):(""):xtic(nl(strcol(1))) with labels notitle, \
     dat using ($0 - w/2):2:($0 - w):($0):(0):2 with boxxyerror lc rgb c_before title "before (05c2065)", \
     dat using ($0 + w/2):3:($0):($0 + w):(0):3 with boxxyerror lc rgb c_after title "after (16cab0a)", \
     dat using ($0 - w/2):($2 + 900):(th($2)) with labels font ",9" notitle, \
     dat using ($0 + w/2):($3 + 900):(th($3)) with labels font ",9" notitle, \
     dat using 0:(($2 > $3 ? $2 : $3) + 3000):4 with labels font "sans:Bold,10" notitle
GP
ab_panels perf-replypool-wallclock \
  "hiredis' replies from a pool on the wall clock: Release builds, 8 interleaved pairs, N = 5, C = 128, load average 0.4-4" \
  "before (05c2065)" "after (16cab0a)" 800

# hiredis' output buffer kept between flushes: both tables.
ab_panels perf-obuf \
  "hiredis' output buffer kept between flushes: N = 5, C = 128; callgrind, and 10 interleaved Release pairs" \
  "before (afdc1b4)" "after (0ea0e9b)"

# The client-cost work from start to end (bench/ab-builds.sh): before and
# after side by side, bars the medians, points each run; a target, where the
# data has one (last column), dashed over its row.
gp perf-issue14-ab 1200 440 <<'GP'
set multiplot layout 1,3 title "Client-cost work from start to end: before (4b804de) and after (0ea0e9b), N = 5 (C = 1 row: N = 1), Release builds, 3 interleaved runs (bars: medians; points: each run)"
set bmargin 4
set xrange [-0.6:1.6]
set xtics font ",9"
w = 0.18
mx(a, b, c) = a > b ? (a > c ? a : c) : (b > c ? b : c)
array ttl[3] = ["lock + unlock cycles per second", "client CPU per cycle (targets dashed: 4 and 12 µs)", "ratio targets, each measured in one run (dashed)"]
array ylab[3] = ["cycles/s", "µs per cycle", "ratio"]
array ytop[3] = [95000, 48, 2.6]
array keyleft[3] = [0, 1, 1]
val(k, x) = k == 1 ? th(x) : sprintf(k == 2 ? "%.1f" : "%.2f", x)
do for [k = 1:3] {
  set title ttl[k]
  set ylabel ylab[k]
  set yrange [0:ytop[k]]
  lift = ytop[k] * 0.04
  if (keyleft[k]) { set key top left box opaque font ",9" } else { set key top right box opaque font ",9" }
  plot dat index k-1 using ($0 - w):5:($0 - 2*w):($0):(0):5:xtic(nl(strcol(1))) with boxxyerror lc rgb c_before title "before", \
       dat index k-1 using ($0 + w):9:($0):($0 + 2*w):(0):9 with boxxyerror lc rgb c_after title "after", \
       for [c=2:4] dat index k-1 using ($0 - w):c with points pt 7 ps 0.8 lc rgb c_run notitle, \
       for [c=6:8] dat index k-1 using ($0 + w):c with points pt 7 ps 0.8 lc rgb c_run notitle, \
       dat index k-1 using ($0 - w):(mx($2, $3, $4) + lift):(val(k, $5)) with labels font ",8" notitle, \
       dat index k-1 using ($0 + w):(mx($6, $7, $8) + lift):(val(k, $9)) with labels font ",8" notitle, \
       dat index k-1 using ($0 - 0.5):(valid(10) ? $10 : -1):(1):(0) with vectors nohead dt 2 lw 2 lc rgb "black" notitle
}
unset multiplot
GP
