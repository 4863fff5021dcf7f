#!/bin/bash
# script-free-cost.sh: what a lock + unlock cycle costs the masters when the
# release is DELIFEQ (+ PUBLISH beside it) instead of the release script
# (EVALSHA), on the same server version.  Starts two sets of N masters on
# loopback: set S with DELIFEQ renamed away (--rename-command DELIFEQ ""), so
# that the handshake's COMMAND INFO finds no DELIFEQ and the client releases
# with the script; set D plain, so that it releases with DELIFEQ.  Then, in ONE
# run, RUNS rounds per mode of redlock-bench's throughput mode (C in flight,
# async API):
#   throughput  a process per set, in ABBA order (round 1 S then D, round 2 D
#               then S, ...) so that the machine's load drifts over both alike;
#   ab          both sets in ONE process (--ab-node), in alternating 0.5 s
#               segments, which a noisy machine disturbs least.
#
# Masters' CPU per cycle: INFO cpu (used_cpu_sys + used_cpu_user) summed over
# the set's masters before and after the bench process, divided by the cycles
# the masters saw in that time (CONFIG RESETSTAT before; commandstats' release
# calls per master after: every cycle releases on every master, while a SET
# still queued when the acquisition has its quorum is withdrawn unsent).
# That counts warm-up and handshake alike for both sets; in throughput mode
# redlock-bench's own figure (/proc/PID/stat over the measured window,
# --server-pids) is printed beside it.  Client CPU per cycle: redlock-bench's
# getrusage figure (ab: per side, over its segments).
#
# Prints per mode and set the medians over the rounds, the median over the
# rounds of each round's D / S, whether the masters' CPU per cycle D / S is
# <= 0.75 (the target), and the commands each set's masters ran per cycle;
# fails (status 1) when set S did not release with EVALSHA or set D not with
# DELIFEQ, or when the target is missed (docs/performance.md, "Script-free
# releases (DELIFEQ) vs the release script").
#
#   bench/script-free-cost.sh [--server PATH] path/to/redlock-bench
#
# --server: a valkey-server with DELIFEQ (Valkey >= 9.0) and Lua; default
# build-extra/sid/bin/valkey-server.  Environment: RUNS (3), DURATION (5 s
# measured), WARMUP (1 s), N (5), C (128), MODES ("throughput ab"),
# REQUEST_TIMEOUT (1000 ms: with the library's 100 ms a loaded machine times
# requests out and the retried releases are counted as the cycle's work), OUT
# (raw files; default a temp dir).  Every server is stopped by PID on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_server=$here/../build-extra/sid/bin/valkey-server
# shellcheck source=bench/servers.sh
. "$here/servers.sh"

bench_args "$@"
bench_need script-free-cost.sh jq awk redis-cli ss "$bench_server"

RUNS=${RUNS:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
N=${N:-5}
C=${C:-128}
MODES=${MODES:-"throughput ab"}
REQUEST_TIMEOUT=${REQUEST_TIMEOUT:-1000}
OUT=${OUT:-$(mktemp -d /tmp/redlock-script-free.XXXXXX)}
mkdir -p "$OUT"

bench_start_masters "$N" "$OUT" --rename-command DELIFEQ ""
bench_start_masters "$N" "$OUT"
s_ports=("${bench_ports[@]:0:N}")
s_pids=("${bench_pids[@]:0:N}")
d_ports=("${bench_ports[@]:N:N}")
d_pids=("${bench_pids[@]:N:N}")

# A set that still has DELIFEQ would take the script-free path in both runs
# and the comparison would measure nothing.
for p in "${s_ports[@]}"; do
  if redis-cli -h 127.0.0.1 -p "$p" command info delifeq | grep -i delifeq >/dev/null; then
    echo "script-free-cost.sh: DELIFEQ still present on set S's master $p" >&2
    exit 1
  fi
done
if ! redis-cli -h 127.0.0.1 -p "${d_ports[0]}" command info delifeq | grep -i delifeq >/dev/null; then
  echo "script-free-cost.sh: $bench_server has no DELIFEQ (needs Valkey >= 9.0)" >&2
  exit 1
fi

ports_of() { if [ "$1" = S ]; then echo "${s_ports[@]}"; else echo "${d_ports[@]}"; fi; }
pids_of() { if [ "$1" = S ]; then echo "${s_pids[@]}"; else echo "${d_pids[@]}"; fi; }

nodes_for() { # S|D [OPTION] -> the --node (or OPTION) options
  local p opt=${2:---node}
  for p in $(ports_of "$1"); do printf ' %s redis://127.0.0.1:%s' "$opt" "$p"; done
}
cmd_for() { # mode [S|D] -> the command line
  local common="--no-quarantine --request-timeout $REQUEST_TIMEOUT --duration $DURATION"
  common="$common --warmup $WARMUP --json"
  case $1 in
  throughput)
    echo "$bench --mode throughput --concurrency $C$(nodes_for "$2")" \
      "--server-pids $(pids_of "$2" | tr ' ' ,) $common" ;;
  ab) # one process, both sets in alternating segments
    echo "$bench --mode throughput --concurrency $C$(nodes_for S)$(nodes_for D --ab-node) $common" ;;
  esac
}

cpu_sum() { # S|D -> used_cpu_sys + used_cpu_user summed over the set's masters, seconds
  local p
  for p in $(ports_of "$1"); do
    redis-cli -h 127.0.0.1 -p "$p" info cpu | tr -d '\r'
  done | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f\n", s }'
}

# S|D -> one JSON object: command -> [calls, usec] summed over the set's masters
cmdstats() {
  local p
  for p in $(ports_of "$1"); do
    redis-cli -h 127.0.0.1 -p "$p" info commandstats | tr -d '\r'
  done | awk -F'[:,=]' '/^cmdstat_/ {
      name = substr($1, 9); calls[name] += $3; usec[name] += $5
    } END { for (n in calls) print n, calls[n], usec[n] }' |
    jq -R -s -c 'split("\n") | map(select(length > 0) | split(" "))
                 | map({key: .[0], value: [(.[1] | tonumber), (.[2] | tonumber)]}) | from_entries'
}

declare -A cpu_before
measure_begin() { # S|D: zero commandstats, note the masters' CPU
  local p
  for p in $(ports_of "$1"); do redis-cli -h 127.0.0.1 -p "$p" config resetstat >/dev/null; done
  cpu_before[$1]=$(cpu_sum "$1")
}
# S|D: the bench figures (JSON on stdin) plus the masters' since measure_begin.
# Cycles: release calls (EVALSHA or DELIFEQ) per master: a release goes to
# every master, while a SET NX PX still queued behind a full pipe when the
# acquisition has its quorum is withdrawn unsent (src/engine/round.c).
measure_end() {
  local after stats
  after=$(cpu_sum "$1")
  stats=$(cmdstats "$1")
  jq -c --argjson before "${cpu_before[$1]}" --argjson after "$after" --argjson stats "$stats" \
    --argjson n "$N" '
    ((($stats.evalsha // [0, 0])[0] + ($stats.delifeq // [0, 0])[0]) / $n) as $cycles |
    . + {masters_cycles: $cycles,
         masters_cpu_us_per_cycle:
           (if $cycles > 0 then ($after - $before) * 1e6 / $cycles else null end),
         commands_per_cycle:
           (if $cycles > 0 then ($stats | map_values(.[0] / $n / $cycles)) else {} end),
         command_us_per_cycle:
           (if $cycles > 0 then ($stats | map_values(.[1] / $cycles)) else {} end)}'
}

for mode in $MODES; do
  case $mode in
  throughput | ab) ;;
  *) echo "script-free-cost.sh: unknown mode $mode (throughput, ab)" >&2; exit 2 ;;
  esac
done
for mode in $MODES; do
  for i in $(seq 1 "$RUNS"); do
    if [ "$mode" = ab ]; then
      echo "script-free-cost: ab round $i/$RUNS, S and D in one process" >&2
      f="$OUT/ab-$i.json"
      measure_begin S
      measure_begin D
      # shellcheck disable=SC2046,SC2091 # the command is built as a string, split on purpose
      if ! $(cmd_for ab) >"$f" 2>>"$OUT/stderr.log"; then
        echo "script-free-cost: ab round $i failed (see $OUT/stderr.log)" >&2
        : >"$OUT/ab-S-$i.json"
        : >"$OUT/ab-D-$i.json"
        continue
      fi
      jq -c '.a + {errors}' "$f" | measure_end S >"$OUT/ab-S-$i.json"
      jq -c '.b + {errors}' "$f" | measure_end D >"$OUT/ab-D-$i.json"
      continue
    fi
    if [ $((i % 2)) = 1 ]; then order="S D"; else order="D S"; fi
    for kind in $order; do
      echo "script-free-cost: $mode round $i/$RUNS, set $kind" >&2
      f="$OUT/$mode-$kind-$i.json"
      measure_begin "$kind"
      # shellcheck disable=SC2046,SC2091 # the command is built as a string, split on purpose
      if ! $(cmd_for "$mode" "$kind") >"$f.bench" 2>>"$OUT/stderr.log"; then
        echo "script-free-cost: $mode round $i set $kind failed (see $OUT/stderr.log)" >&2
        : >"$f"
        continue
      fi
      measure_end "$kind" <"$f.bench" >"$f"
    done
  done
done

# Per mode: each set's runs as JSON lines, and one line of D / S ratios per
# round in which both ran (ab: client figures from the run's pair medians).
for mode in $MODES; do
  : >"$OUT/$mode-S.jsonl"
  : >"$OUT/$mode-D.jsonl"
  : >"$OUT/$mode-ratio.jsonl"
  for i in $(seq 1 "$RUNS"); do
    a="$OUT/$mode-S-$i.json"
    b="$OUT/$mode-D-$i.json"
    cat "$a" >>"$OUT/$mode-S.jsonl"
    cat "$b" >>"$OUT/$mode-D.jsonl"
    if [ ! -s "$a" ] || [ ! -s "$b" ]; then continue; fi
    jq -c -n --slurpfile a "$a" --slurpfile b "$b" '$a[0] as $x | $b[0] as $y |
      def r(f): if ($x | f) == null or ($y | f) == null or ($x | f) == 0 then null
                else ($y | f) / ($x | f) end;
      {cycles_per_s: r(.cycles_per_s), masters_cpu: r(.masters_cpu_us_per_cycle),
       server_cpu: r(.server_cpu_us_per_cycle), client_cpu: r(.client_cpu_us_per_cycle)}' \
      >"$OUT/$mode-ratio-$i.json"
    if [ "$mode" = ab ]; then # the pair medians: each 0.5 s S segment with its D neighbour
      jq -c --slurpfile r "$OUT/$mode-ratio-$i.json" \
        '$r[0] + {cycles_per_s: .pair_median_rate_ratio, client_cpu: .pair_median_cpu_ratio}' \
        "$OUT/ab-$i.json" >>"$OUT/$mode-ratio.jsonl"
    else
      cat "$OUT/$mode-ratio-$i.json" >>"$OUT/$mode-ratio.jsonl"
    fi
  done
done

med() { bench_median_fmt "$@"; } # file jq-expr format (bench/lib.sh)

echo "## Script-free releases (DELIFEQ) vs the release script"
echo
echo "$(bench_machine);"
echo "N = $N masters per set, C = $C in flight (throughput mode, async API), request timeout"
echo "$REQUEST_TIMEOUT ms; loopback, no persistence;"
echo "S: DELIFEQ renamed away (release script, EVALSHA); D: plain (DELIFEQ + PUBLISH)."
echo "$RUNS rounds per mode, each run $DURATION s measured after $WARMUP s warm-up."
echo "throughput: a process per set, ABBA over the rounds; ab: both sets in one process, in"
echo "alternating 0.5 s segments (--ab-node).  Ratio: median over the rounds of the round's D / S"
echo "(ab: cycles/s and client CPU from each run's pair medians).  CPU in µs per cycle; masters:"
echo "summed over the set's N masters, INFO = used_cpu_sys + used_cpu_user over the whole bench"
echo "process / release calls per master (EVALSHA or DELIFEQ: every cycle releases on every"
echo "master); /proc = redlock-bench's --server-pids figure over the measured window"
echo "(throughput only)."
echo
echo "| mode | set | release | cycles/s | masters CPU (INFO) | masters CPU (/proc) | client CPU | errors |"
echo "|---|---|---|---|---|---|---|---|"
for mode in $MODES; do
  for kind in S D; do
    f="$OUT/$mode-$kind.jsonl"
    label=$([ "$kind" = S ] && echo "script (EVALSHA)" || echo "DELIFEQ + PUBLISH")
    echo "| $mode | $kind | $label | $(med "$f" .cycles_per_s '%.0f') | $(med "$f" .masters_cpu_us_per_cycle '%.2f') | $(med "$f" .server_cpu_us_per_cycle '%.2f') | $(med "$f" .client_cpu_us_per_cycle '%.2f') | $(med "$f" .errors '%d') |"
  done
  r="$OUT/$mode-ratio.jsonl"
  echo "| $mode | D / S | **ratio** ($(wc -l <"$r") rounds) | $(med "$r" .cycles_per_s '%.3f') | **$(med "$r" .masters_cpu '%.3f')** | $(med "$r" .server_cpu '%.3f') | **$(med "$r" .client_cpu '%.3f')** | |"
done
echo
echo "Commands per cycle per master, and the masters' µs per cycle in them (commandstats"
echo "calls and usec, all modes' runs, median; EVALSHA's µs include the commands it runs):"
echo
# The commands of the cycles, not the handshake's or this script's (INFO, CONFIG).
mapfile -t cmds < <(for mode in $MODES; do cat "$OUT/$mode-S.jsonl" "$OUT/$mode-D.jsonl"; done |
  jq -r -s '[.[].commands_per_cycle | to_entries[] | select(.value >= 0.01) | .key] | unique | .[]')
echo "| set |$(printf ' %s |' "${cmds[@]}")"
echo "|---|$(printf -- '---|%.0s' "${cmds[@]}")"
for kind in S D; do
  all="$OUT/all-$kind.jsonl"
  for mode in $MODES; do cat "$OUT/$mode-$kind.jsonl"; done >"$all"
  row="| $kind |"
  for cmd in "${cmds[@]}"; do
    row="$row $(med "$all" "(.commands_per_cycle[\"$cmd\"] // 0)" '%.3f')"
    row="$row ($(med "$all" "(.command_us_per_cycle[\"$cmd\"] // 0)" '%.2f') µs) |"
  done
  echo "$row"
done
echo

status=0
# Every acquisition's SET is followed by a release on that master: S must
# have released with EVALSHA and never DELIFEQ, D with DELIFEQ and never
# EVALSHA (no fewer releases than SETs but for the cycles in flight when a
# run stops).
# shellcheck disable=SC2016 # jq's $-variables
wrong() { # S|D -> how many of the set's runs did not release as they should
  local ok bad
  if [ "$1" = S ]; then ok=evalsha bad=delifeq; else ok=delifeq bad=evalsha; fi
  jq -s -r --arg ok "$ok" --arg bad "$bad" '
    def c(k): .commands_per_cycle[k] // 0;
    if length == 0 then "all (no run)"
    else [.[] | select(c($ok) == 0 or c($ok) < 0.99 * c("set") or c($bad) > 0)]
         | length | tostring end' "$OUT/all-$1.jsonl"
}
ws=$(wrong S)
wd=$(wrong D)
if [ "$ws" = 0 ] && [ "$wd" = 0 ]; then
  echo "Release paths: every S run released with EVALSHA, every D run with DELIFEQ."
else
  echo "Release paths: WRONG (S runs not on EVALSHA: $ws; D runs not on DELIFEQ: $wd)"
  status=1
fi
for mode in $MODES; do
  r="$OUT/$mode-ratio.jsonl"
  each=$(jq -r '.masters_cpu | if . == null then "-" else (. * 1000 | round / 1000 | tostring) end' "$r" | tr '\n' ' ')
  m=$(bench_median "$r" .masters_cpu)
  if [ "$m" = null ]; then
    echo "$mode: masters' CPU per cycle, D / S: no round with both sets"
    status=1
  elif awk -v r="$m" 'BEGIN { exit !(r <= 0.75) }'; then
    printf "%s: masters' CPU per cycle, D / S = %.3f (rounds: %s): target <= 0.75 met\n" "$mode" "$m" "$each"
  else
    printf "%s: masters' CPU per cycle, D / S = %.3f (rounds: %s): target <= 0.75 NOT met\n" "$mode" "$m" "$each"
    status=1
  fi
  each=$(jq -r '.client_cpu | if . == null then "-" else (. * 1000 | round / 1000 | tostring) end' "$r" | tr '\n' ' ')
  m=$(bench_median "$r" .client_cpu)
  if [ "$m" != null ]; then
    printf "%s: client CPU per cycle, D / S = %.3f (rounds: %s)%s\n" "$mode" "$m" "$each" \
      "$(awk -v r="$m" 'BEGIN { if (r > 1) printf ": D costs the client %.1f%% more", (r - 1) * 100 }')"
  fi
done
echo
echo "Commands (each round; ports and PIDs of this run):"
echo
echo '```'
for mode in $MODES; do
  if [ "$mode" = ab ]; then
    cmd_for ab
  else
    cmd_for "$mode" S
    cmd_for "$mode" D
  fi
done
echo '```'
echo "Raw JSON: $OUT" >&2
exit $status
