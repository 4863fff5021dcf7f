#!/usr/bin/env bash
# scripts/test.sh: the README's second command, and what CI runs.  Installs
# what is missing, then builds and runs the whole test suite twice: a normal
# build (-Werror) and an AddressSanitizer + UndefinedBehaviorSanitizer build
# that must be clean, leaks included, then a short libFuzzer smoke run.  Tests
# start their own redis-server processes on free loopback ports and stop them
# by PID.
#   ./scripts/test.sh            both builds and the fuzz smoke run
#   ./scripts/test.sh --quick    the normal build only
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)

run_suite() {
  local dir=$1; shift
  echo "==> configure $dir ($*)"
  cmake -S . -B "$dir" -DREDLOCK_WERROR=ON "$@" >/dev/null
  echo "==> build $dir"
  cmake --build "$dir" -j"$jobs" >/dev/null
  echo "==> test $dir"
  (cd "$dir" && ctest --output-on-failure --timeout 300 -j"$jobs")
}

run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${1:-}" != "--quick" ]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=ON
  echo "==> fuzz smoke run (libFuzzer, clang)"
  tests/fuzz/run.sh 40
fi
echo "==> all tests passed"
