#!/usr/bin/env bash
# scripts/test.sh: the README's second command, and what CI runs (.ci/run).
# Installs what is missing (scripts/deps.sh), fetches hiredis 1.2.0,
# valkey-server 8 (bookworm-backports), valkey-server 9.1 and redis-server 8.0
# (sid) into build-extra/ without installing them (scripts/fetch-extra.sh),
# then runs, each build with -Werror:
#   1. build/          against the system's hiredis (0.14.1 on Debian 12) and
#                      redis-server (7.0): the whole suite;
#  1b. bindings/run-all.sh: the Node.js, Go and Rust bindings' tests and the
#      cross-language interop test, against build/ (a missing toolchain fails);
#   2. build-hiredis1/ against hiredis 1.2.0, with TLS, and every server it
#                      starts is valkey-server 9.1 (REDLOCK_TEST_SERVER): the
#                      whole suite but the tests of the test (label mutation),
#                      the documentation tests (label docs: pass 1 only) and
#                      the failover tortures (label failover; the
#                      integration tests of failovers run on Valkey here);
#   4. build-asan/     AddressSanitizer + UndefinedBehaviorSanitizer, leaks
#                      included, against redis-server 8.0: the whole suite but
#                      the tests of the test, the failover torture
#                      (test_sentinel and test_failover run the same code under
#                      ASan) and the install tests (they build consumers; no
#                      library code of their own);
#  4b. build-asan-h1/  the same against hiredis 1.2.0 and valkey-server 9.1:
#                      the out-of-memory tests (tests/integration/test_oom.c,
#                      tests/unit/test_client_oom.c, tests/unit/test_kit_oom.c)
#                      only, which pass 2 leaves to it (the same hiredis and
#                      server, under ASan);
#  4c. build-tsan/     ThreadSanitizer, against valkey-server 8: the unit, API
#                      and integration tests (not safety or torture), no
#                      suppressions;
#      Passes 1, 2, 4 and 4c are a diagonal, not the full product of hiredis
#      versions and servers: pass 1 and 2 cover both hiredis versions, and the
#      four servers (Redis 7.0 and 8.0, Valkey 8 and 9.1) each have a pass of
#      their own.  What differs between the hiredis versions is the client
#      side, what differs between the servers is the server side, and nothing
#      in between depends on the pair.  Without build-extra/ (not Debian:
#      fetch-extra.sh exits 3) pass 2 is skipped and passes 4 and 4c run
#      against the system's redis-server;
#   5. a short libFuzzer smoke run (tests/fuzz/run.sh), last in the background
#      queue and waited for after pass 6 (it runs beside pass 6's checks);
#   6. the packages: scripts/package.sh builds dist/ (the .debs, the source
#      tarball, the wheel, the npm tarball) in build-package/ in the
#      background, then scripts/package.sh --check-built checks
#      the shipped binaries' hardening (RELRO, BIND_NOW, stack protector,
#      FORTIFY), the .debs' hiredis floor and the bundled libraries' notices
#      (tests/install/dist_check.sh), installs the .debs with dpkg, builds
#      and runs consumers against them, and removes them (Debian, as root).
# docs/compatibility.md says what this covers.  Tests start their own servers
# on free loopback ports and stop them by PID.  Prints the time of each pass.
#
# What shortens the run on 2 cores (docs/testing.md says where the time goes):
#   * The builds of passes 2, 4, 4b, 4c and 6 and the fuzz run (pass 5) run in
#     the background at the lowest CPU and I/O priority (nice 19, ionice
#     idle) while pass 1's tests and pass 1b run: those tests spend most of
#     their time waiting on servers, TTLs and timeouts, so the cores they
#     leave idle build the other trees.  A test never waits for the CPU behind
#     a nice-19 compiler (the scheduler gives nice 0 about 70 times its
#     share), so no test sees a loaded machine it would not see anyway.
#     Each later pass waits for its tree; a failed build fails its pass, with
#     the build's log.
#   * Tests that load the machine run alone or one at a time, long test
#     files run as shards, and ctest starts the longest tests first
#     (tests/CMakeLists.txt).
#   * On 4 cores or more (REDLOCK_TEST_SIDE_BY_SIDE=1 or 0 chooses), pass 2
#     runs beside passes 1 and 1b (from when its tree is built), and pass 4c
#     beside passes 4 and 4b; a background pass's output is printed when the
#     run waits for it.
#   * The torture runs a build repeats (torture_short, torture_prims_short,
#     torture_tls_short: the same seeds and faults) run at full length in
#     pass 1 and at a third of it in passes 2 and 4
#     (-DREDLOCK_TORTURE_SHORT=ON); the tests of the test and the failover
#     tortures run in pass 1 only, as before, and so does python_mypy (it
#     reads Python sources only).
#   ./scripts/test.sh            everything above (about 15 min on a 2-core machine)
#   ./scripts/test.sh --quick    pass 1 only
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
quick=0
case "${1:-}" in
  "") ;;
  --quick) quick=1 ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
source scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
# Most of a test's time is spent waiting for servers, TTLs and timeouts;
# the ones that load the machine run alone or one at a time, and the install
# tests take PROCESSORS 2 (tests/CMakeLists.txt says which).  Pass 1 runs
# two tests per core and one more, beside the other passes' builds (nice
# 19); the later passes, when nothing else runs, three per core (on 2 cores
# at -j6 they leave 20 to 30 % of the CPU idle, under the sanitizers too).
test_jobs=$((jobs * 2 + 1))
# Side by side (pass 2 beside passes 1 and 1b, pass 4c beside passes 4 and
# 4b) on 4 cores or more, one pass after the other below that:
# REDLOCK_TEST_SIDE_BY_SIDE=1 or 0 chooses.  On 2 cores two passes at once
# keep the cores too busy for the cluster reshards of test_cluster_faults
# and the ASan runs to finish within their timeouts.  A pass beside another
# runs one test per core and one more.
side_by_side=${REDLOCK_TEST_SIDE_BY_SIDE:-$([ "$jobs" -ge 4 ] && echo 1 || echo 0)}
pass_jobs=$((jobs * 3))
if [ "$side_by_side" = 1 ]; then pass_jobs=$((jobs + 1)); fi
# Each build chooses its hiredis explicitly (pass 2 sets its own path); a
# REDLOCK_TEST_SERVER from the caller's shell would run passes 1 and 2
# against another server.
unset PKG_CONFIG_PATH REDLOCK_TEST_SERVER

timings=()
started=$SECONDS
step_start=0
begin() {
  step_start=$SECONDS
  echo "==> $*"
}
took() { # LABEL: records how long the pass took
  local t=$((SECONDS - step_start))
  timings+=("$(printf '%-50s %3d:%02d' "$1" $((t / 60)) $((t % 60)))")
}

configure_build() { # DIR ARGS...: configure (-Werror) and build
  local dir=$1
  shift
  echo "==> configure $dir ($*)"
  local log
  if ! log=$(cmake -S . -B "$dir" -DREDLOCK_WERROR=ON "$@" 2>&1); then
    printf '%s\n' "$log" >&2
    return 1
  fi
  printf '%s\n' "$log" | sed -n 's/^-- redlock: /    /p' # which hiredis
  echo "==> build $dir"
  cmake --build "$dir" -j"$jobs" >/dev/null
}

run_ctest() { # DIR CTEST-ARGS...
  local dir=$1
  shift
  echo "==> test $dir ${REDLOCK_TEST_SERVER:+(server $REDLOCK_TEST_SERVER) }$*"
  (cd "$dir" && ctest --output-on-failure --timeout 300 -j"$test_jobs" "$@")
}

# The hiredis a binary loads at run time: "SONAME => PATH".
loaded_hiredis() {
  ldd "$1" | sed -n 's/^[[:space:]]*\(libhiredis\.so[^ ]*\) => \([^ ]*\).*/\1 => \2/p'
}

# Which hiredis version a build directory was configured with.
configured_hiredis() {
  sed -n 's/^HIREDIS_VERSION:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null || true
}

# DIR WANT: forgets DIR's configuration when it was made against another
# hiredis than WANT.
reconfigure_if_other_hiredis() {
  if [ -f "$1/CMakeCache.txt" ] && [ "$(configured_hiredis "$1")" != "$2" ]; then
    rm -rf "$1/CMakeCache.txt" "$1/CMakeFiles"
  fi
}

# ---- background jobs -------------------------------------------------------------
# bg_run NAME COMMAND...: runs COMMAND in the background job's order, its
# output in $bg/NAME.log and its exit status in $bg/NAME.rc.  bg_wait NAME
# waits for it, prints the log and fails when COMMAND did.
bg=$(mktemp -d)
bg_pids=()
cleanup() {
  # Each job has its own process group (set -m below): the compilers and the
  # tests go with it.
  local pid
  for pid in "${bg_pids[@]}"; do kill -- -"$pid" 2>/dev/null || true; done
  rm -rf "$bg"
}
# start_job FUNCTION: runs FUNCTION in the background in a process group of
# its own (cleanup ends it).
start_job() {
  set -m
  "$1" &
  bg_pids+=($!)
  set +m
}
trap cleanup EXIT
bg_run() {
  local name=$1 rc=0
  shift
  local t0=$SECONDS
  # A subshell: a command that exits ends it, not the job before its .rc.
  ("$@") >"$bg/$name.log" 2>&1 || rc=$?
  local t=$((SECONDS - t0))
  printf '%-50s %3d:%02d\n' "background: $name" $((t / 60)) $((t % 60)) >>"$bg/times"
  echo "$rc" >"$bg/$name.rc"
}
bg_wait() {
  local name=$1 t0=$SECONDS
  while [ ! -f "$bg/$name.rc" ]; do sleep 1; done
  [ $((SECONDS - t0)) -lt 1 ] || echo "    (waited $((SECONDS - t0)) s for $name)"
  cat "$bg/$name.log"
  local rc
  rc=$(cat "$bg/$name.rc")
  if [ "$rc" -ne 0 ]; then
    echo "==> $name failed (exit $rc)" >&2
    exit "$rc"
  fi
}

# ---- fetch ---------------------------------------------------------------------------
# First: the background builds of passes 2 and 4b need build-extra's hiredis.
extra_rc=0
if [ $quick = 0 ]; then
  begin "fetching hiredis 1.2.0, valkey-server 8, valkey-server 9.1 and redis-server 8.0" \
    "into build-extra/"
  scripts/fetch-extra.sh build-extra || extra_rc=$?
  took "fetch (build-extra/)"
  if [ $extra_rc -ne 0 ] && [ $extra_rc -ne 3 ]; then exit $extra_rc; fi
fi
skipped=""
# The servers of passes 4 and 4c: the system's redis-server without build-extra/.
asan_server=redis-server
tsan_server=redis-server
extra=""
if [ $quick = 1 ]; then
  :
elif [ $extra_rc -eq 3 ]; then
  # Not a Debian system: the packages cannot be fetched (CI is Debian 12).
  skipped="pass 2 (hiredis 1.2.0, Valkey 9.1): SKIPPED, not a Debian system;"
  skipped="$skipped passes 4 and 4c ran against the system's redis-server"
  echo "==> $skipped"
else
  extra=$(cd build-extra && pwd -P)
  asan_server="$root/build-extra/sid/bin/redis-server"
  # A symbolic link to valkey-check-rdb, which picks its role by the name it
  # is run as: never resolved.
  tsan_server="$root/build-extra/valkey/usr/bin/valkey-server"
fi

# ---- 1. system hiredis, redis-server -----------------------------------------------
system_hiredis=$(pkg-config --modversion hiredis)
begin "pass 1: system hiredis $system_hiredis," \
  "$(redis-server --version | sed -n 's/.*\(v=[^ ]*\).*/redis-server \1/p')"
reconfigure_if_other_hiredis build "$system_hiredis"
configure_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "    libredlock.so loads $(loaded_hiredis build/libredlock.so)"

# The later passes' builds and the fuzz run, one after the other, behind
# pass 1's tests and pass 1b (the header says why that loads no test).
build_hiredis1() {
  local pc="$extra/hiredis/lib/pkgconfig"
  reconfigure_if_other_hiredis build-hiredis1 "$(PKG_CONFIG_PATH=$pc pkg-config --modversion hiredis)"
  # TLS needs hiredis 1.x: this is the build that tests it, so it must not be
  # left out quietly (REDLOCK_TLS=ON fails the configure without hiredis_ssl
  # or OpenSSL; docs/compatibility.md).
  PKG_CONFIG_PATH=$pc configure_build build-hiredis1 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DREDLOCK_TLS=ON -DREDLOCK_TORTURE_SHORT=ON
}
build_asan_h1() {
  local pc="$extra/hiredis/lib/pkgconfig"
  reconfigure_if_other_hiredis build-asan-h1 "$(PKG_CONFIG_PATH=$pc pkg-config --modversion hiredis)"
  echo "==> configure and build build-asan-h1 (test_oom, test_client_oom, test_kit_oom)"
  PKG_CONFIG_PATH=$pc cmake -S . -B build-asan-h1 -DREDLOCK_WERROR=ON \
    -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=ON -DREDLOCK_TLS=ON >/dev/null
  cmake --build build-asan-h1 -j"$jobs" --target test_oom test_client_oom test_kit_oom >/dev/null
}
# Pass 1b's Go and Rust compiles, into Go's build cache and the Rust
# workspace's target/, so that pass 1b's own are mostly cache hits (20 s of
# its 2 min), first in the queue: the later builds have until pass 1b ends
# or later.  Nothing waits for it: a failure here shows in pass 1b.
warm_bindings() {
  REDLOCK_LIB_DIR="$root/build" bindings/go/test.sh --build-only
  REDLOCK_LIB_DIR="$root/build" bindings/rust/test.sh --build-only
}
background() {
  renice -n 19 -p "$BASHPID" >/dev/null
  ionice -c 3 -p "$BASHPID" 2>/dev/null || true
  bg_run bindings-warm warm_bindings
  if [ -n "$extra" ]; then bg_run build-hiredis1 build_hiredis1; fi
  bg_run build-asan configure_build build-asan -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=ON \
    -DREDLOCK_TORTURE_SHORT=ON
  if [ -n "$extra" ]; then bg_run build-asan-h1 build_asan_h1; fi
  bg_run build-tsan configure_build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DREDLOCK_SANITIZE=thread
  # Pass 6's artifacts (dist/): builds only; its checks, which start servers
  # and install packages, run in the foreground (package.sh --check-built).
  if [ "$packages" = 1 ]; then bg_run package scripts/package.sh; fi
  # Last: libFuzzer stops each target after its time, not after a number of
  # runs, so it may run beside pass 6's checks (the run waits for it after
  # them); at nice 19 beside waiting tests it gets about a core, as alone.
  bg_run fuzz tests/fuzz/run.sh 40
}
# Pass 6 runs where it can install the .debs: Debian's dpkg, as root.
packages=0
if command -v dpkg >/dev/null 2>&1 && [ -f /etc/debian_version ] && [ "$(id -u)" -eq 0 ]; then
  packages=1
fi
# Tests that no build or server changes, run by pass 1 only: python_mypy
# (mypy --strict on the examples and the stubs: Python sources alone, and
# 30 s to 2 min of CPU per pass), the layer checks (which file calls and
# includes which: the sources' structure, read from the objects; 5 to 35 s
# of CPU per pass) and the pipeline check of the scripts.  The topology
# examples (examples.topology.*, label example) run in pass 1 only too: they
# show how a deployment is started and used, which the integration tests
# already check under every server, hiredis and sanitizer.
# The out-of-memory tests: under ASan against hiredis 1.2.0 and Valkey 9.1
# in pass 4b, so not in pass 2.
oom='^(integration\.test_oom\.[0-9]of[0-9]|unit\.test_client_oom|unit\.test_kit_oom)$'
once='^(python_mypy|unit\.layers|unit\.layers_calls|unit\.layers_selftest|unit\.pipes|examples\.topology\..*)$'

# "Valkey server v=9.1.2" or "Redis server v=8.0.6" from PROGRAM --version.
server_version() { "$1" --version | sed -n 's/^\(\(Valkey\|Redis\) server v=[^ ]*\).*/\1/p'; }

# ---- 2. hiredis 1.2.0, valkey-server 9.1 ------------------------------------------
pass_hiredis1_valkey() {
  local pc="$extra/hiredis/lib/pkgconfig" want loaded bin
  # scripts/fetch-extra.sh's wrapper: sid's valkey-server under sid's loader.
  local valkey="$root/build-extra/sid/bin/valkey-server"
  want=$(PKG_CONFIG_PATH=$pc pkg-config --modversion hiredis)
  begin "pass 2: hiredis $want (build-extra/hiredis)," \
    "$(server_version "$valkey") (build-extra/sid)"
  bg_wait build-hiredis1
  # The shared library, the tool and a test (static library + hiredis) really
  # load it: the build tree's RUNPATH points at build-extra.
  for bin in libredlock.so tools/redlock tests/integration/test_lock_basic; do
    loaded=$(loaded_hiredis "build-hiredis1/$bin")
    echo "    $bin loads $loaded"
    case "$loaded" in
      "libhiredis.so.1.1.0 => $extra/hiredis/"*) ;;
      *) echo "build-hiredis1/$bin does not load build-extra's libhiredis.so.1.1.0" >&2; exit 1 ;;
    esac
  done
  # The tests of the test (label mutation) and the failover tortures (label
  # failover: 100 s of torture time) ran in pass 1; test_failover,
  # test_sentinel and test_cluster_faults fail Valkey over here.  The
  # out-of-memory tests run in pass 4b, against this hiredis and server
  # under ASan.
  # (|| return: the function may run where set -e does not reach, bg_run.)
  REDLOCK_TEST_SERVER=$valkey test_jobs=$pass_jobs run_ctest build-hiredis1 \
    -LE 'mutation|failover|docs' -E "$once|$oom" || return
  took "2. hiredis $want, Valkey 9.1 (whole suite)"
}
# Pass 2 as a background job (side by side): its output in $bg/pass-2.log,
# printed when the foreground waits for it (bg_pass pass-2), its time with
# the others.
pass_2_job() {
  bg_run pass-2 pass_2_timed
}
pass_2_timed() {
  pass_hiredis1_valkey || return
  printf '%s\n' "${timings[-1]}" >"$bg/pass-2.took"
}
if [ $quick = 0 ]; then start_job background; fi
# Side by side, pass 2 runs beside passes 1 and 1b from when its tree is built.
if [ $quick = 0 ] && [ -n "$extra" ] && [ "$side_by_side" = 1 ]; then start_job pass_2_job; fi

# REDLOCK_REQUIRE_TOOLCHAINS=1: the documentation tests (label docs) fail
# instead of skipping when chromium is missing (scripts/deps.sh installs it).
REDLOCK_REQUIRE_TOOLCHAINS=1 run_ctest build
took "1. system hiredis, Redis (whole suite)"

# ---- 1b. the Go, Node.js and Rust bindings and the cross-language interop -------
begin "pass 1b: bindings (Node.js, Go, Rust) and interop, against build/"
REDLOCK_REQUIRE_TOOLCHAINS=1 REDLOCK_LIB_DIR="$root/build" bindings/run-all.sh
took "1b. bindings + interop"

if [ $quick = 1 ]; then
  printf '%s\n' "${timings[@]}"
  echo "==> all tests passed (--quick: the normal build only)"
  exit 0
fi

# bg_pass NAME: waits for a pass run as a background job (its output, then
# its time among the others).
bg_pass() {
  bg_wait "$1"
  timings+=("$(cat "$bg/$1.took")")
}

if [ -n "$extra" ] && [ "$side_by_side" = 1 ]; then
  echo "==> pass 2 (ran beside passes 1 and 1b)"
  bg_pass pass-2
elif [ -n "$extra" ]; then
  pass_hiredis1_valkey
fi

# ---- 4c. ThreadSanitizer (side by side: beside passes 4 and 4b) --------------------
# What threads share: the unit, API and integration tests (the safety suites
# and the torture run are left to the other passes: under TSan's slowdown
# their timing-bound faults would measure the sanitizer).  No suppressions.
# As many tests at once as the other passes: they too mostly wait (213 s at
# -j4 against 315 s at -j2 on 2 cores).
pass_4c() {
  begin "pass 4c: ThreadSanitizer, system hiredis, $(server_version "$tsan_server")" \
    "(unit, api, integration)"
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  bg_wait build-tsan
  # setarch -R (ASLR off, inherited by every test): a kernel that randomises
  # mappings more than GCC 12's TSan runtime expects aborts it at start.
  # test_cluster_faults (75 s alone: reshards and failovers of real clusters) is
  # left out: its client threads are those of every other integration test.
  echo "==> test build-tsan (setarch -R, server $tsan_server)" \
    "-L 'unit|api|integration' -LE 'torture|safety' -E 'test_cluster_faults|$once'"
  (cd build-tsan && REDLOCK_TEST_SERVER=$tsan_server setarch "$(uname -m)" -R ctest \
    --output-on-failure --timeout 300 -j"$pass_jobs" \
    -L 'unit|api|integration' -LE 'torture|safety' -E "test_cluster_faults|$once") || return
  unset TSAN_OPTIONS
  took "4c. ThreadSanitizer (unit, api, integration)"
  printf '%s\n' "${timings[-1]}" >"$bg/pass-4c.took"
}
pass_4c_job() { bg_run pass-4c pass_4c; }
if [ "$side_by_side" = 1 ]; then start_job pass_4c_job; fi

# ---- 4. sanitizers -----------------------------------------------------------------
begin "pass 4: AddressSanitizer + UndefinedBehaviorSanitizer, $(server_version "$asan_server")"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
bg_wait build-asan
REDLOCK_TEST_SERVER=$asan_server test_jobs=$pass_jobs run_ctest build-asan \
  -LE 'mutation|failover|install|docs' -E "$once"
took "4. ASan + UBSan, system hiredis, $(server_version "$asan_server" | sed 's/ server v=/ /')"

# ---- 4b. out of memory under the sanitizers, hiredis 1.2.0 -------------------------
# hiredis 1.x's allocations can be failed (hiredisSetAllocators), 0.14's cannot:
# test_oom fails ten times as many allocation points against it (test_client_oom
# fifteen times as many in redlock_open_uv), so their leaks and memory errors
# are checked here too (those two tests only).
if [ -n "$extra" ]; then
  begin "pass 4b: the out-of-memory tests, ASan + UBSan, hiredis 1.2.0," \
    "$(server_version "$root/build-extra/sid/bin/valkey-server")"
  bg_wait build-asan-h1
  REDLOCK_TEST_SERVER=$root/build-extra/sid/bin/valkey-server run_ctest build-asan-h1 -R "$oom"
  took "4b. the out-of-memory tests, ASan + UBSan, hiredis 1.2.0"
fi
unset ASAN_OPTIONS UBSAN_OPTIONS

if [ "$side_by_side" = 1 ]; then
  echo "==> pass 4c (ran beside passes 4 and 4b)"
  bg_pass pass-4c
else
  pass_4c
fi

# ---- 6. packages -------------------------------------------------------------------
# dpkg -i installs system-wide: CI's container is disposable, and
# tests/install/deb_test.sh removes the packages again, also on failure.
if [ "$packages" = 1 ]; then
  begin "pass 6: packages (built in the background; scripts/package.sh --check-built)"
  bg_wait package
  scripts/package.sh --check-built
  took "6. packages (.deb, source tarball)"
else
  skipped="${skipped:+$skipped; }pass 6 (packages): SKIPPED, needs Debian's dpkg and root"
  echo "==> pass 6 (packages): SKIPPED, needs Debian's dpkg and root"
fi

# ---- 5. fuzzing --------------------------------------------------------------------
# After pass 6: the fuzz run, last in the background queue, goes on beside
# pass 6's checks.
begin "pass 5: fuzz smoke run (libFuzzer, clang), ran in the background"
bg_wait fuzz
took "5. fuzz smoke run (what it added to the run)"

echo "==> times (a pass's time includes waiting for its background build)"
printf '    %s\n' "${timings[@]}"
t=$((SECONDS - started))
printf '    %-50s %3d:%02d\n' "total" $((t / 60)) $((t % 60))
echo "==> background builds (beside pass 1's tests and the passes after it)"
sed 's/^/    /' "$bg/times"
if [ -n "$skipped" ]; then
  echo "==> all tests passed, but $skipped"
else
  echo "==> all tests passed"
fi
