#!/usr/bin/env bash
# bindings/run-all.sh: every binding's tests (bindings/{node,go,rust}/test.sh)
# and the cross-language interop test (bindings/interop/run.sh), against real
# redis-server masters that each of them starts and stops by PID.  Builds
# libredlock into <repo>/build first when it is missing (REDLOCK_LIB_DIR
# overrides the directory).  A missing toolchain makes its script print
# "SKIP: <lang>: ..." and count as skipped; with REDLOCK_REQUIRE_TOOLCHAINS=1
# (CI) a skip is a failure.  The Python binding's tests run under ctest
# (python_binding).  Exits non-zero when anything failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
redlock_ensure_library

passed=0
failed=0
skipped=0
summary=()
run() {
  local name=$1 script=$2 log rc start
  log=$(mktemp /tmp/redlock-bindings.XXXXXX)
  start=$SECONDS
  echo "==> $name ($script)"
  "$script" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local took=$((SECONDS - start))
  if [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
    summary+=("FAIL  $name (exit $rc, ${took}s)")
  elif grep -q '^SKIP:' "$log"; then
    if [ "${REDLOCK_REQUIRE_TOOLCHAINS:-0}" = 1 ]; then
      failed=$((failed + 1))
      summary+=("FAIL  $name: skipped, but REDLOCK_REQUIRE_TOOLCHAINS=1: $(grep '^SKIP:' "$log" | sed -n 1p)")
    else
      skipped=$((skipped + 1))
      summary+=("SKIP  $name: $(grep '^SKIP:' "$log" | sed -n 1p)")
    fi
  else
    passed=$((passed + 1))
    summary+=("ok    $name (${took}s)")
  fi
  rm -f "$log"
}

run node "$here/node/test.sh"
run go "$here/go/test.sh"
run rust "$here/rust/test.sh"
run interop "$here/interop/run.sh"

echo "==> bindings summary"
printf '  %s\n' "${summary[@]}"
echo "bindings: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
