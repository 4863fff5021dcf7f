# bench/lib.sh: what the benchmark scripts share (sourced; POSIX sh, so that
# the #!/bin/sh scripts can source it too):
#   bench_median FILE JQ-EXPR            median over the JSON lines of FILE ("null": none)
#   bench_median_fmt FILE JQ-EXPR FORMAT the same, printf-formatted ("-": none)
#   bench_machine                        "date, kernel, CPUs, SERVER VERSION" for a result
#                                        header (SERVER: $bench_server, default redis-server)
#   bench_cpu_ratio_check FILE LABEL MAX one line: the median of FILE's per-round .client_cpu
#                                        ratios, each round's, and whether it is <= MAX
#                                        (status 1 when not, or when no round has one)
#   bench_commands A B MODES...          each mode's command lines, a ```-block: cmd_for MODE
#                                        for an ab-cC mode, else cmd_for MODE A and MODE B
#                                        (cmd_for: the calling script's)
#   bench_args "$@"                      the cost scripts' command line:
#                                        [--server redis|valkey|PATH] path/to/redlock-bench
#                                        sets bench_server and bench (usage: status 2)
#   bench_need NAME CMD...               status 1 with "NAME: needs CMD" when a CMD is missing
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

bench_cpu_ratio_check() {
  _cpu=$(bench_median "$1" .client_cpu)
  _each=$(jq -r '.client_cpu | if . == null then "-" else (. * 100 | round / 100 | tostring) end' "$1" | tr '\n' ' ')
  if [ "$_cpu" = null ]; then
    echo "$2: no round with both variants: no ratio"
    return 1
  fi
  if awk -v r="$_cpu" -v m="$3" 'BEGIN { exit !(r <= m) }'; then
    printf '%s = %.3f (rounds: %s): within %s\n' "$2" "$_cpu" "$_each" "$3"
  else
    printf '%s = %.3f (rounds: %s): ABOVE %s\n' "$2" "$_cpu" "$_each" "$3"
    return 1
  fi
}

bench_commands() {
  _a=$1
  _b=$2
  shift 2
  echo "Commands (each round; ports and PIDs of this run):"
  echo
  echo '```'
  for _mode in "$@"; do
    case $_mode in
    ab-c*) cmd_for "$_mode" ;;
    *)
      cmd_for "$_mode" "$_a"
      cmd_for "$_mode" "$_b"
      ;;
    esac
  done
  echo '```'
}

bench_usage() {
  echo "usage: $0 [--server redis|valkey|PATH] path/to/redlock-bench" >&2
  exit 2
}

# Sets bench_server (kept when --server is not given) and bench.  "valkey" is
# scripts/fetch-extra.sh's Valkey 8 (build-extra/, beside the bench folder).
bench_args() {
  bench=""
  _extra=$(dirname "$0")/../build-extra
  while [ $# -gt 0 ]; do
    case $1 in
    --server)
      [ $# -ge 2 ] || bench_usage
      case $2 in
      redis) bench_server=redis-server ;;
      valkey) bench_server=$_extra/valkey/usr/bin/valkey-server ;;
      *) bench_server=$2 ;;
      esac
      shift 2
      ;;
    -*) bench_usage ;;
    *)
      bench=$1
      shift
      ;;
    esac
  done
  if [ -z "$bench" ] || [ ! -x "$bench" ]; then bench_usage; fi
}

bench_need() {
  _who=$1
  shift
  for _c in "$@"; do
    command -v "$_c" >/dev/null 2>&1 || { echo "$_who: needs $_c" >&2; exit 1; }
  done
}
