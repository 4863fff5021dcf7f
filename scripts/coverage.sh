#!/usr/bin/env bash
# scripts/coverage.sh [BUILD_DIR]: line coverage of the engine's modules from
# the unit tests alone (no server): builds with --coverage into BUILD_DIR
# (default build-cov), runs `ctest -L unit`, and prints gcov's line figure
# for each module below.  Uses gcc's gcov only (gcovr, if installed, gives
# the same figures with more detail: gcovr -r . BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-cov}
modules=(round lock client notify node link conn backoff quorum reply resp scripts uri info)
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=--coverage \
  -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_BUILD_TOOLS=OFF -DREDLOCK_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j2 >/dev/null
find "$dir" -name '*.gcda' -delete
(cd "$dir" && ctest -L unit -j2 --output-on-failure >/dev/null)
objdir="$dir/CMakeFiles/redlock_objects.dir/src"
printf '%-10s %s\n' module "lines executed (unit tests only)"
for m in "${modules[@]}"; do
  line=$(cd "$objdir" && gcov -n "$m.c.gcda" 2>/dev/null |
         awk -v f="/src/$m.c'" 'index($0, f) { getline; print; exit }')
  printf '%-10s %s\n' "$m.c" "${line#Lines executed:}"
done
