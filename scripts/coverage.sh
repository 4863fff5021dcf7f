#!/usr/bin/env bash
# scripts/coverage.sh [--min PCT] [BUILD_DIR]: line coverage of the engine's
# modules and of the layers under it, from the unit tests alone (no server):
# builds with --coverage into BUILD_DIR (default build-cov), runs
# `ctest -L unit` (not the layer checks, which read objects and run no code),
# and prints gcov's line figure for each module below.  With --min PCT it
# exits 1 naming each module under PCT percent.  Uses gcc's gcov only
# (gcovr, if installed, gives the same figures with more detail:
# gcovr -r . BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

# The modules measured, as src/NAME.c; shell globs allowed.  A name whose
# file does not exist (yet, or any more) is skipped.
#   the engine: state machines, the calls, the engine's env, lock kinds, op
#   tables, the composition root
engine_modules="lock prims election client calls calls_* engine kind_* op op_* ops"
#   under it: rounds, notifications, the voter transport, masters, the
#   connection life cycle
lower_modules="round notify voters voter_standalone node node_* link conn backoff"

min=
dir=
while [ $# -gt 0 ]; do
  case $1 in
  --min)
    min=${2:-}
    if ! [[ $min =~ ^[0-9]+([.][0-9]+)?$ ]]; then
      echo "coverage.sh: --min needs a percentage, e.g. --min 90" >&2
      exit 2
    fi
    shift 2
    ;;
  -h | --help)
    sed -n '2,9p' "$0"
    exit 0
    ;;
  *)
    dir=$1
    shift
    ;;
  esac
done
dir=${dir:-build-cov}

modules=()
for pattern in $engine_modules $lower_modules; do
  for f in src/*/$pattern.c; do
    [ -e "$f" ] || continue
    m=$(basename "$f" .c)
    d=${f%/*}
    case " ${modules[*]} " in *" ${d##*/}/$m "*) ;; *) modules+=("${d##*/}/$m") ;; esac
  done
done

cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=--coverage \
  -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_BUILD_TOOLS=OFF -DREDLOCK_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j2 >/dev/null
find "$dir" -name '*.gcda' -delete
log="$(cd "$dir" && pwd)/coverage-ctest.log"
if ! (cd "$dir" && ctest -L unit -LE layers -j2 --output-on-failure >"$log"); then
  echo "coverage.sh: a unit test failed: $log" >&2
  exit 1
fi
objdir="$dir/CMakeFiles/redlock_objects.dir/src"

printf '%-16s %8s %7s  %s\n' module "lines %" lines "(unit tests only)"
below=()
for m in "${modules[@]}"; do
  # m is FOLDER/MODULE.  gcov -n: "File '.../src/FOLDER/MODULE.c'" then
  # "Lines executed:P% of N".
  line=$(cd "$objdir/${m%/*}" && gcov -n "${m#*/}.c.gcda" 2>/dev/null |
    awk -v f="/src/$m.c'" 'index($0, f) { getline; print; exit }')
  pct=$(sed -n 's/^Lines executed:\([0-9.]*\)% of .*/\1/p' <<<"$line")
  total=$(sed -n 's/^Lines executed:[0-9.]*% of \([0-9]*\).*/\1/p' <<<"$line")
  if [ -z "$pct" ]; then
    pct=0
    total="?"
  fi
  mark=
  if [ -n "$min" ] && awk -v p="$pct" -v m="$min" 'BEGIN { exit !(p < m) }'; then
    mark="  < $min %"
    below+=("$m.c ($pct %)")
  fi
  printf '%-16s %8s %7s%s\n' "$m.c" "$pct" "$total" "$mark"
done

if [ ${#below[@]} -gt 0 ]; then
  echo "FAIL: under $min % line coverage: ${below[*]}"
  exit 1
fi
