#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS]: the fuzzing smoke run (CI) and the way to fuzz
# by hand.  Builds the libFuzzer targets of tests/fuzz with clang in a build
# directory of their own and runs each for its share of SECONDS (default 30 in
# all, split evenly across the targets), starting from a temporary copy of the
# seed corpus (tests/fuzz/corpus is never modified).
#
# Exits 0 when no target crashed, 1 when one did: its crash input is copied to
# tests/fuzz/regressions/<target>/ (printed), where ctest "fuzz_corpus"
# replays it in every build until the bug is fixed.  When clang with libFuzzer
# is missing it is installed with apt-get (clang, libclang-rt-<ver>-dev); when
# that is impossible (no apt-get, not root and no sudo) the run is "skipped"
# and exits 0.
#
# Environment:
#   FUZZ_BUILD_DIR   build directory (default build-fuzz, ignored by git)
#   FUZZ_TARGETS     targets to run (default "uri info reply evalsha")
#   FUZZ_ARGS        extra libFuzzer flags, e.g. "-jobs=2 -workers=2"
#   FUZZ_KEEP=DIR    keep the grown corpora in DIR/<target>/ (to merge by hand)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

total=${1:-30}
case "$total" in '' | *[!0-9]*) echo "usage: tests/fuzz/run.sh [SECONDS]" >&2; exit 2 ;; esac
read -r -a targets <<<"${FUZZ_TARGETS:-uri info reply evalsha}"
per=$((total / ${#targets[@]}))
[ "$per" -ge 1 ] || per=1
build=${FUZZ_BUILD_DIR:-build-fuzz}

skip() {
  echo "==> fuzz: skipped: $*"
  exit 0
}

# ---- clang with libFuzzer -----------------------------------------------------
probe_dir=$(mktemp -d)
work=""
cleanup() { rm -rf "$probe_dir" ${work:+"$work"}; }
trap cleanup EXIT

fuzzer_works() {
  command -v clang >/dev/null 2>&1 || return 1
  printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\n%s\n' \
    'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
    >"$probe_dir/probe.c"
  clang -fsanitize=fuzzer,address,undefined "$probe_dir/probe.c" -o "$probe_dir/probe" \
    >/dev/null 2>&1
}

apt_install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      skip "clang/libFuzzer missing and not root (no sudo) to install: $*"
    fi
  fi
  echo "==> fuzz: installing $*"
  export DEBIAN_FRONTEND=noninteractive
  if [ -z "${apt_updated:-}" ]; then
    $sudo apt-get update -qq
    apt_updated=1
  fi
  $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! fuzzer_works; then
  command -v apt-get >/dev/null 2>&1 ||
    skip "clang with libFuzzer not found and apt-get not available (install clang and its compiler-rt)"
  command -v clang >/dev/null 2>&1 || apt_install clang
  if ! fuzzer_works; then
    major=$(clang -dumpversion | cut -d. -f1)
    apt_install "libclang-rt-$major-dev"
  fi
  fuzzer_works || { echo "==> fuzz: clang cannot link -fsanitize=fuzzer even after installing" >&2; exit 1; }
fi

# ---- build -------------------------------------------------------------------------
jobs=$(nproc 2>/dev/null || echo 2)
echo "==> fuzz: configure $build (clang, REDLOCK_FUZZ=ON)"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DREDLOCK_FUZZ=ON -DREDLOCK_WERROR=OFF -DREDLOCK_BUILD_EXAMPLES=OFF \
  -DREDLOCK_BUILD_TOOLS=OFF -DREDLOCK_BUILD_BENCH=OFF >"$probe_dir/configure.log" 2>&1 ||
  { cat "$probe_dir/configure.log" >&2; exit 1; }
echo "==> fuzz: build ${targets[*]}"
build_targets=()
for t in "${targets[@]}"; do build_targets+=("fuzz_$t"); done
cmake --build "$build" -j"$jobs" --target "${build_targets[@]}" >"$probe_dir/build.log" 2>&1 ||
  { tail -n 60 "$probe_dir/build.log" >&2; exit 1; }

# ---- run -----------------------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
work=$(mktemp -d)
failed=()
echo "==> fuzz: ${per}s per target (${targets[*]})"
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/fuzz_$t"
  mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
  cp -R "tests/fuzz/corpus/$t/." "$work/corpus/$t/"
  dict=()
  [ -f "tests/fuzz/dict/$t.dict" ] && dict=("-dict=tests/fuzz/dict/$t.dict")
  rc=0
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  "$bin" -max_total_time="$per" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$t/" "${dict[@]}" ${FUZZ_ARGS:-} "$work/corpus/$t" \
    >"$work/$t.log" 2>&1 || rc=$?
  stats=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$work/$t.log" | tail -n 1 |
    sed -E 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+/runs: \1 /; s/ MS:.*//' || true)
  artifacts=$(find "$work/artifacts/$t" -type f | sort)
  if [ "$rc" -eq 0 ] && [ -z "$artifacts" ]; then
    echo "    $t: ok   ${stats:-no stats}"
  else
    failed+=("$t")
    echo "    $t: CRASH (exit $rc)   ${stats:-}"
    grep -E 'ERROR: |SUMMARY: |fuzz invariant failed|runtime error' "$work/$t.log" | sed -n 1,8p | sed 's/^/      /'
    mkdir -p "tests/fuzz/regressions/$t"
    for a in $artifacts; do
      dest="tests/fuzz/regressions/$t/$(basename "$a")"
      cp "$a" "$dest"
      echo "      crash input saved: $root/$dest"
    done
    cp "$work/$t.log" "$build/fuzz_$t.log"
    echo "      full log: $root/$build/fuzz_$t.log"
    echo "      reproduce: $build/tests/fuzz/fuzz_$t tests/fuzz/regressions/$t/<file>"
  fi
  if [ -n "${FUZZ_KEEP:-}" ]; then
    mkdir -p "$FUZZ_KEEP/$t"
    cp -R "$work/corpus/$t/." "$FUZZ_KEEP/$t/"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "==> fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "==> fuzz: no crash in ${targets[*]}"
