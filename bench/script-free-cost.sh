#!/bin/bash
# script-free-cost.sh: what a lock + unlock cycle costs the masters when the
# release is DELIFEQ (+ PUBLISH beside it) instead of the release script
# (EVALSHA), on the same server version.  Starts two sets of N masters on
# loopback: set S with DELIFEQ renamed away (--rename-command DELIFEQ ""), so
# that the handshake's COMMAND INFO finds no DELIFEQ and the client releases
# with the script; set D plain, so that it releases with DELIFEQ.  Then, in ONE
# run, RUNS rounds that each run redlock-bench's throughput mode (C in flight,
# async API) against S and against D, in ABBA order (round 1 S then D, round 2
# D then S, ...) so that the machine's load drifts over both alike.
#
# Masters' CPU per cycle: INFO cpu (used_cpu_sys + used_cpu_user) summed over
# the set's masters before and after the bench process, divided by the cycles
# the masters saw in that time (CONFIG RESETSTAT before; commandstats' SET
# calls per master after: every cycle sends one SET NX PX to each master).
# That counts warm-up and handshake alike for both sets; redlock-bench's own
# figure (/proc/PID/stat over the measured window, --server-pids) is printed
# beside it.  Client CPU per cycle: redlock-bench's getrusage figure.
#
# Prints per variant the medians over the rounds, the median over the rounds
# of each round's D / S, whether the masters' CPU per cycle D / S <= 0.75 (the
# target), and the commands each set's masters ran per cycle; fails (status 1)
# when set S did not release with EVALSHA or set D not with DELIFEQ, or when
# the target is missed (docs/performance.md, "Script-free releases (DELIFEQ)
# vs the release script").
#
#   bench/script-free-cost.sh [--server PATH] path/to/redlock-bench
#
# --server: a valkey-server with DELIFEQ (Valkey >= 9.0) and Lua; default
# build-extra/sid/bin/valkey-server.  Environment: RUNS (3), DURATION (5 s
# measured), WARMUP (1 s), N (5), C (128), OUT (raw files; default a temp
# dir).  Every server is stopped by PID on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_server=$here/../build-extra/sid/bin/valkey-server
# shellcheck source=bench/servers.sh
. "$here/servers.sh"

usage() {
  echo "usage: $0 [--server PATH] path/to/redlock-bench" >&2
  exit 2
}
bench=""
while [ $# -gt 0 ]; do
  case $1 in
  --server)
    [ $# -ge 2 ] || usage
    bench_server=$2
    shift 2
    ;;
  -*) usage ;;
  *)
    bench=$1
    shift
    ;;
  esac
done
if [ -z "$bench" ] || [ ! -x "$bench" ]; then usage; fi
for c in jq awk redis-cli ss "$bench_server"; do
  command -v "$c" >/dev/null 2>&1 || { echo "script-free-cost.sh: needs $c" >&2; exit 1; }
done

RUNS=${RUNS:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
N=${N:-5}
C=${C:-128}
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
  if redis-cli -h 127.0.0.1 -p "$p" command info delifeq | grep -qi delifeq; then
    echo "script-free-cost.sh: DELIFEQ still present on set S's master $p" >&2
    exit 1
  fi
done
if ! redis-cli -h 127.0.0.1 -p "${d_ports[0]}" command info delifeq | grep -qi delifeq; then
  echo "script-free-cost.sh: $bench_server has no DELIFEQ (needs Valkey >= 9.0)" >&2
  exit 1
fi

ports_of() { if [ "$1" = S ]; then echo "${s_ports[@]}"; else echo "${d_ports[@]}"; fi; }
pids_of() { if [ "$1" = S ]; then echo "${s_pids[@]}"; else echo "${d_pids[@]}"; fi; }

cmd_for() { # S|D -> the command line
  local p nodes="" pids
  for p in $(ports_of "$1"); do nodes="$nodes --node redis://127.0.0.1:$p"; done
  pids=$(pids_of "$1" | tr ' ' ,)
  echo "$bench --mode throughput --concurrency $C$nodes --server-pids $pids --no-quarantine" \
    "--duration $DURATION --warmup $WARMUP --json"
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

reset_stats() {
  local p
  for p in $(ports_of "$1"); do redis-cli -h 127.0.0.1 -p "$p" config resetstat >/dev/null; done
}

for i in $(seq 1 "$RUNS"); do
  if [ $((i % 2)) = 1 ]; then order="S D"; else order="D S"; fi
  for kind in $order; do
    echo "script-free-cost: round $i/$RUNS, set $kind" >&2
    f="$OUT/$kind-$i.json"
    reset_stats "$kind"
    before=$(cpu_sum "$kind")
    # shellcheck disable=SC2046,SC2091 # the command is built as a string, split on purpose
    if ! $(cmd_for "$kind") >"$f.bench" 2>>"$OUT/stderr.log"; then
      echo "script-free-cost: round $i set $kind failed (see $OUT/stderr.log)" >&2
      : >"$f"
      continue
    fi
    after=$(cpu_sum "$kind")
    stats=$(cmdstats "$kind")
    # cycles: SET calls per master (one SET NX PX per master per cycle).
    jq -c --argjson before "$before" --argjson after "$after" --argjson stats "$stats" \
      --argjson n "$N" '
      (($stats.set // [0, 0])[0] / $n) as $cycles |
      . + {masters_cycles: $cycles,
           masters_cpu_us_per_cycle:
             (if $cycles > 0 then ($after - $before) * 1e6 / $cycles else null end),
           masters_cmd_us_per_cycle:
             (if $cycles > 0 then ([$stats[][1]] | add) / $cycles else null end),
           commands_per_cycle:
             (if $cycles > 0 then ($stats | map_values(.[0] / $n / $cycles)) else {} end)}' \
      "$f.bench" >"$f"
  done
done

# Each variant's runs as JSON lines, and one line of D / S ratios per round in
# which both ran.
: >"$OUT/S.jsonl"
: >"$OUT/D.jsonl"
: >"$OUT/ratio.jsonl"
for i in $(seq 1 "$RUNS"); do
  a="$OUT/S-$i.json"
  b="$OUT/D-$i.json"
  cat "$a" >>"$OUT/S.jsonl"
  cat "$b" >>"$OUT/D.jsonl"
  if [ -s "$a" ] && [ -s "$b" ]; then
    jq -c -n --slurpfile a "$a" --slurpfile b "$b" '$a[0] as $x | $b[0] as $y |
      def r(f): if ($x | f) == null or ($y | f) == null or ($x | f) == 0 then null
                else ($y | f) / ($x | f) end;
      {cycles_per_s: r(.cycles_per_s), masters_cpu: r(.masters_cpu_us_per_cycle),
       masters_cmd: r(.masters_cmd_us_per_cycle), server_cpu: r(.server_cpu_us_per_cycle),
       client_cpu: r(.client_cpu_us_per_cycle)}' >>"$OUT/ratio.jsonl"
  fi
done

med() { bench_median_fmt "$@"; } # file jq-expr format (bench/lib.sh)

echo "## Script-free releases (DELIFEQ) vs the release script"
echo
echo "$(bench_machine);"
echo "N = $N masters per set, C = $C in flight (throughput mode, async API), loopback, no persistence;"
echo "S: DELIFEQ renamed away (release script, EVALSHA); D: plain (DELIFEQ + PUBLISH)."
echo "$RUNS rounds, ABBA, each run $DURATION s measured after $WARMUP s warm-up;"
echo "ratio: median over the rounds of the round's D / S.  CPU in µs per cycle, summed over the"
echo "N masters: INFO = used_cpu_sys + used_cpu_user over the whole bench process / SET calls"
echo "per master; commands = commandstats' usec (command execution only); /proc = redlock-bench's"
echo "--server-pids figure over the measured window."
echo
echo "| set | release | cycles/s | masters CPU (INFO) | masters commands | masters CPU (/proc) | client CPU | errors |"
echo "|---|---|---|---|---|---|---|---|"
for kind in S D; do
  f="$OUT/$kind.jsonl"
  label=$([ "$kind" = S ] && echo "script (EVALSHA)" || echo "DELIFEQ + PUBLISH")
  echo "| $kind | $label | $(med "$f" .cycles_per_s '%.0f') | $(med "$f" .masters_cpu_us_per_cycle '%.2f') | $(med "$f" .masters_cmd_us_per_cycle '%.2f') | $(med "$f" .server_cpu_us_per_cycle '%.2f') | $(med "$f" .client_cpu_us_per_cycle '%.2f') | $(med "$f" .errors '%d') |"
done
r="$OUT/ratio.jsonl"
echo "| D / S | **ratio** ($(wc -l <"$r") rounds) | $(med "$r" .cycles_per_s '%.3f') | **$(med "$r" .masters_cpu '%.3f')** | $(med "$r" .masters_cmd '%.3f') | $(med "$r" .server_cpu '%.3f') | **$(med "$r" .client_cpu '%.3f')** | |"
echo
echo "Commands per cycle per master (median over the rounds; commandstats calls / cycles):"
echo
# The commands of the cycles, not the handshake's or this script's (INFO, CONFIG).
mapfile -t cmds < <(jq -r -s '[.[].commands_per_cycle | to_entries[] | select(.value >= 0.01) | .key]
                              | unique | .[]' "$OUT/S.jsonl" "$OUT/D.jsonl")
echo "| set |$(printf ' %s |' "${cmds[@]}")"
echo "|---|$(printf -- '---|%.0s' "${cmds[@]}")"
for kind in S D; do
  row="| $kind |"
  for cmd in "${cmds[@]}"; do
    row="$row $(med "$OUT/$kind.jsonl" "(.commands_per_cycle[\"$cmd\"] // 0)" '%.3f') |"
  done
  echo "$row"
done
echo

status=0
# Every cycle releases once per master: S must have done it with EVALSHA and
# never DELIFEQ, D with DELIFEQ and never EVALSHA (0.9: the cycles still in
# flight when a run stops, and a failed release, do not count).
paths_ok=$(jq -s -r '
  def c(k): .commands_per_cycle[k] // 0;
  if length == 0 then "no run" else
    [.[] | select(c("evalsha") < 0.9 or c("delifeq") > 0)] | length | tostring end' "$OUT/S.jsonl")
paths_ok_d=$(jq -s -r '
  def c(k): .commands_per_cycle[k] // 0;
  if length == 0 then "no run" else
    [.[] | select(c("delifeq") < 0.9 or c("evalsha") > 0)] | length | tostring end' "$OUT/D.jsonl")
if [ "$paths_ok" = 0 ] && [ "$paths_ok_d" = 0 ]; then
  echo "Release paths: every S run released with EVALSHA, every D run with DELIFEQ."
else
  echo "Release paths: WRONG (S runs not on EVALSHA: $paths_ok; D runs not on DELIFEQ: $paths_ok_d)"
  status=1
fi

each=$(jq -r '.masters_cpu | if . == null then "-" else (. * 1000 | round / 1000 | tostring) end' "$r" | tr '\n' ' ')
m=$(bench_median "$r" .masters_cpu)
if [ "$m" = null ]; then
  echo "Masters' CPU per cycle, D / S: no round with both sets"
  status=1
elif awk -v r="$m" 'BEGIN { exit !(r <= 0.75) }'; then
  printf "Masters' CPU per cycle, D / S = %.3f (rounds: %s): target <= 0.75 met\n" "$m" "$each"
else
  printf "Masters' CPU per cycle, D / S = %.3f (rounds: %s): target <= 0.75 NOT met\n" "$m" "$each"
  status=1
fi
each=$(jq -r '.client_cpu | if . == null then "-" else (. * 1000 | round / 1000 | tostring) end' "$r" | tr '\n' ' ')
m=$(bench_median "$r" .client_cpu)
if [ "$m" != null ]; then
  printf "Client CPU per cycle, D / S = %.3f (rounds: %s)%s\n" "$m" "$each" \
    "$(awk -v r="$m" 'BEGIN { if (r > 1) printf ": D costs the client %.1f%% more", (r - 1) * 100 }')"
fi
echo
echo "Commands (each round; ports and PIDs of this run):"
echo
echo '```'
cmd_for S
cmd_for D
echo '```'
echo "Raw JSON: $OUT" >&2
exit $status
