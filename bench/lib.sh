# bench/lib.sh: what the benchmark scripts share (sourced, bash):
#   bench_median FILE JQ-EXPR            median over the JSON lines of FILE ("null": none)
#   bench_median_fmt FILE JQ-EXPR FORMAT the same, printf-formatted ("-": none)
#   bench_machine                        "date, kernel, CPUs, redis-server VERSION" for a
#                                        result header
#   bench_start_masters N LOGDIR         N redis-server on free loopback ports: fills the
#                                        arrays bench_ports and bench_pids, waits for PING,
#                                        and stops them by PID on exit (trap)

bench_median() {
  jq -s "[.[] | $2 | select(. != null)] | sort | if length == 0 then null else .[(length - 1) / 2 | floor] end" "$1"
}

bench_median_fmt() {
  bench_median "$1" "$2" | { read -r v; if [ "$v" = null ]; then echo "-"; else printf "$3" "$v"; fi; }
}

bench_machine() {
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -srm), $(nproc) CPUs, redis-server $(redis-server --version 2>/dev/null | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
}

bench_pids=()
bench_ports=()
bench_stop_masters() {
  for p in "${bench_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${bench_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}

bench_start_masters() {
  local n=$1 logdir=$2 port p i
  trap bench_stop_masters EXIT
  port=$((20000 + $$ % 20000))
  while [ "${#bench_ports[@]}" -lt "$n" ]; do
    port=$((port + 1))
    if ss -ltnH "sport = :$port" | grep -q .; then continue; fi
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --loglevel warning --logfile "$logdir/redis-$port.log" &
    bench_pids+=("$!")
    bench_ports+=("$port")
  done
  for p in "${bench_ports[@]}"; do
    i=0
    until redis-cli -h 127.0.0.1 -p "$p" ping >/dev/null 2>&1; do
      i=$((i + 1))
      [ "$i" -lt 100 ] || { echo "bench: master on $p did not start" >&2; exit 1; }
      sleep 0.05
    done
  done
}
