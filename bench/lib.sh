# bench/lib.sh: what the benchmark scripts share (sourced; POSIX sh, so that
# the #!/bin/sh scripts can source it too):
#   bench_median FILE JQ-EXPR            median over the JSON lines of FILE ("null": none)
#   bench_median_fmt FILE JQ-EXPR FORMAT the same, printf-formatted ("-": none)
#   bench_machine                        "date, kernel, CPUs, SERVER VERSION" for a result
#                                        header (SERVER: $bench_server, default redis-server)
# Starting servers (bash arrays) is bench/servers.sh.
# shellcheck shell=sh

bench_median() {
  jq -s "[.[] | $2 | select(. != null)] | sort | if length == 0 then null else .[(length - 1) / 2 | floor] end" "$1"
}

bench_median_fmt() {
  # shellcheck disable=SC2059 # the format is the caller's
  bench_median "$1" "$2" | { read -r v; if [ "$v" = null ]; then echo "-"; else printf "$3" "$v"; fi; }
}

bench_machine() {
  _s=${bench_server:-redis-server}
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -srm), $(nproc) CPUs, $(basename "$_s") $("$_s" --version 2>/dev/null | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
}
