#!/bin/sh
# scale.sh: redlock-scale RUNS times per mode and the medians as markdown
# (for docs/performance.md, "Holding and watching many locks").
#
#   bench/scale.sh [path/to/redlock-scale]
#
# Environment: RUNS (3), NODES (3), LOCKS (100000), WATCHES (10000),
# WATCH_TTL (30000), DURATION (60), HOLD_TIMEOUTS ("0 2000": request
# timeouts for the hold runs, 0 = the library's default of 100 ms), HOLD_PAUSE
# ("0 1": 1 = master 0 SIGSTOPped during the close), SPREADS ("0 20": seconds over which the
# watched locks are acquired; 0 = as fast as possible), OUT (raw JSON dir).
# Every run starts its own redis-server processes on loopback and stops them.
set -eu
bin=${1:-./build/bench/redlock-scale}
[ -x "$bin" ] || { echo "usage: $0 path/to/redlock-scale" >&2; exit 2; }
command -v jq >/dev/null 2>&1 || { echo "scale.sh: needs jq" >&2; exit 1; }
RUNS=${RUNS:-3}
NODES=${NODES:-3}
LOCKS=${LOCKS:-100000}
WATCHES=${WATCHES:-10000}
WATCH_TTL=${WATCH_TTL:-30000}
DURATION=${DURATION:-60}
SPREADS=${SPREADS:-"0 20"}
HOLD_TIMEOUTS=${HOLD_TIMEOUTS:-"0 2000"}
HOLD_PAUSE=${HOLD_PAUSE:-"0 1"}
MODES=${MODES:-"hold watch"}
OUT=${OUT:-$(mktemp -d /tmp/redlock-scale.XXXXXX)}
mkdir -p "$OUT"

med() { # file jq-expr format
  jq -s "[.[] | $2] | sort | .[(length - 1) / 2 | floor]" "$1" | { read -r v; printf "$3" "$v"; }
}

hold="$bin --mode hold --nodes $NODES --locks $LOCKS --json"
case " $MODES " in *" hold "*)
for t in $HOLD_TIMEOUTS; do
  for p in $HOLD_PAUSE; do
    : >"$OUT/hold-$t-$p.jsonl"
    i=1
    while [ "$i" -le "$RUNS" ]; do
      echo "scale.sh: hold request-timeout $t pause $p run $i/$RUNS" >&2
      $hold --request-timeout "$t" $([ "$p" = 1 ] && echo --pause-master) >>"$OUT/hold-$t-$p.jsonl" ||
        echo "scale.sh: run $i incomplete (see its JSON)" >&2
      i=$((i + 1))
    done
  done
done ;;
esac
case " $MODES " in *" watch "*)
for s in $SPREADS; do
  : >"$OUT/watch-$s.jsonl"
  i=1
  while [ "$i" -le "$RUNS" ]; do
    echo "scale.sh: watch spread $s run $i/$RUNS" >&2
    $bin --mode watch --nodes "$NODES" --watches "$WATCHES" --watch-ttl "$WATCH_TTL" \
      --duration "$DURATION" --spread "$s" --json >>"$OUT/watch-$s.jsonl" ||
      echo "scale.sh: run $i incomplete (see its JSON)" >&2
    i=$((i + 1))
  done
done ;;
esac

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -srm), $(nproc) CPUs, median of $RUNS runs; raw JSON in $OUT"
echo
case " $MODES " in *" hold "*)
echo "Command: \`$hold --request-timeout T [--pause-master]\`"
echo
echo "| N | request timeout | master 0 during close | locks held | acquire/s | RSS before | RSS held | bytes per held lock | close (release all) | keys left after close (per run) | warnings during close (per run) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for t in $HOLD_TIMEOUTS; do
  for p in $HOLD_PAUSE; do
    f=$OUT/hold-$t-$p.jsonl
    echo "| $NODES | $([ "$t" = 0 ] && echo "100 ms (default)" || echo "$t ms") | $([ "$p" = 1 ] && echo "stopped (SIGSTOP)" || echo "up") | $(med "$f" .held %d) | $(med "$f" .acquire_per_s %.0f) | $(med "$f" '.rss_before / 1048576' '%.1f MiB') | $(med "$f" '.rss_held / 1048576' '%.1f MiB') | $(med "$f" .bytes_per_lock %.0f) | $(med "$f" .close_s '%.2f s') | $(jq -s -r 'map(.keys_on_masters_after_close | tostring) | join(", ")' "$f") | $(jq -s -r 'map(.close_warnings | tostring) | join(", ")' "$f") |"
  done
done ;;
esac
case " $MODES " in *" watch "*)
echo
echo "Command: \`$bin --mode watch --nodes $NODES --watches $WATCHES --watch-ttl $WATCH_TTL --duration $DURATION --spread S --json\`"
echo
echo "| spread S | watched | CPU s / $DURATION s | share of a core | µs per renewal | renewals | mean/s | even/s | peak/s | peak/mean | seconds with renewals | failed attempts (retried) | lost |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for s in $SPREADS; do
  f=$OUT/watch-$s.jsonl
  echo "| $s | $(med "$f" .held %d) | $(med "$f" .cpu_s %.3f) | $(med "$f" .core_share_pct '%.3f %%') | $(med "$f" .cpu_us_per_renewal %.1f) | $(med "$f" .renewals %d) | $(med "$f" .renew_per_s_mean %.0f) | $(med "$f" .renew_per_s_even %.0f) | $(med "$f" .renew_per_s_peak %d) | $(med "$f" .peak_over_mean %.1f) | $(med "$f" .seconds_with_renewals %d)/$DURATION | $(med "$f" .renew_failed %d) | $(med "$f" .lost %d) |"
done
echo
for s in $SPREADS; do
  echo "Renewals per second, spread $s, run 1: $(jq -c '.hist' "$OUT/watch-$s.jsonl" | head -1)"
done
;;
esac
