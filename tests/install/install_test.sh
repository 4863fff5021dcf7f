#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR [SANITIZE]: the installed package works
# out of tree, the way an application consumes it.
#
#  1. `cmake --install BUILD_DIR --prefix TMP` into a fresh temporary prefix.
#  2. The installed files: headers (identical to include/), libredlock.so* with
#     SONAME libredlock.so.0 and no RPATH into the build tree, libredlock.a
#     whose global symbols all start with redlock_, redlock.pc (its version is
#     the header's), the CMake package (Config, ConfigVersion, Targets; no
#     build- or source-tree paths), and, when the build installs the
#     command-line tool (its cmake_install.cmake names redlock.1), bin/redlock
#     (runs --version as installed, no LD_LIBRARY_PATH) and
#     share/man/man1/redlock.1.
#  3. examples/basic.c and examples/async_uv.c built with pkg-config alone,
#     against the shared and against the static library, by
#     examples/consumer/build_pkgconfig.sh (cc -std=c11 -Wall -Wextra -Werror).
#  4. examples/consumer built with CMake: find_package(redlock) from
#     -DCMAKE_PREFIX_PATH=TMP, redlock::redlock and redlock::redlock_static.
#  5. Every program built above runs against a redis-server this script
#     starts on a free loopback port (LD_LIBRARY_PATH=TMP/lib) and exits 0.
#     A fresh master is in restart quarantine for the default max TTL (60 s),
#     so the server is started first and the programs run once it has been
#     up for 62 s; the steps before overlap with that wait.
#
# SANITIZE (1/0; CMake passes $<BOOL:${REDLOCK_SANITIZE_ADDRESS}>): the installed
# libraries are built with ASan + UBSan, so the programs are compiled and
# linked with the same -fsanitize flags (also switched on when the installed
# libredlock.so references the ASan runtime) and run under the sanitizers.
# Environment: CC (the compiler the library was built with; default cc),
# CMAKE_COMMAND (default cmake), REDLOCK_TEST_SERVER (the server program, a
# name on PATH or a path; default redis-server), and REDLOCK_DEP_LIBDIRS
# (colon-separated directories of dependencies outside the system's library
# paths, e.g. hiredis 1.2.0 from scripts/fetch-extra.sh: the installed
# programs are run with them on LD_LIBRARY_PATH; CMake sets it, together with
# PKG_CONFIG_PATH, when the build found such a hiredis).  Everything lives in
# one temporary directory, removed on exit together with the redis-server
# started here (by its PID).
set -eu

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR [SANITIZE]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
sanitize="${3:-0}"
cc="${CC:-cc}"
cmake="${CMAKE_COMMAND:-cmake}"
server="${REDLOCK_TEST_SERVER:-redis-server}"
# Absolute, but not through symbolic links: valkey-server is a link to
# valkey-check-rdb, which chooses what to be by the name it is run as.
case "$server" in /*) ;; */*) server="$(pwd)/$server" ;; esac
dep_libdirs="${REDLOCK_DEP_LIBDIRS:-}"
if [ -n "$dep_libdirs" ]; then
  # The linker looks for libredlock.so's own dependencies there too.
  LD_LIBRARY_PATH="$dep_libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/redlock-install.XXXXXX")
prefix="$tmp/prefix"
redis_pid=""
port=""

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }

# Stops the redis-server started here, if any, by the PID this script got
# when it started it.
stop_redis() {
  [ -n "$redis_pid" ] || return 0
  if kill -0 "$redis_pid" 2>/dev/null; then
    kill "$redis_pid" 2>/dev/null || true
    i=0
    while kill -0 "$redis_pid" 2>/dev/null && [ $i -lt 100 ]; do
      sleep 0.1
      i=$((i + 1))
    done
    kill -0 "$redis_pid" 2>/dev/null && kill -9 "$redis_pid" 2>/dev/null || true
  fi
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
}

cleanup() {
  status=$?
  set +e
  stop_redis
  rm -rf "$tmp"
  exit $status
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

redis_info_field() { # FIELD: a field of INFO server from our server, or nothing
  redis-cli -h 127.0.0.1 -p "$port" INFO server 2>/dev/null | tr -d '\r' |
    sed -n "s/^$1://p"
}

# Starts a redis-server ($server) on a free loopback port; retries on another
# port if the one picked is taken (other tests start servers concurrently).  The
# server runs in the background of this script (not daemonized, so it stays
# in the test's process group), and the server answering on the port must
# report its PID, so it is never someone else's.
start_redis() {
  command -v "$server" >/dev/null || fail "$server not found"
  command -v redis-cli >/dev/null || fail "redis-cli not found"
  attempt=0
  while [ $attempt -lt 20 ]; do
    attempt=$((attempt + 1))
    port=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 25000 + 30000 ))
    "$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
                 --daemonize no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
    redis_pid=$!
    i=0
    while [ $i -lt 50 ] && kill -0 "$redis_pid" 2>/dev/null; do
      if [ "$(redis_info_field process_id)" = "$redis_pid" ]; then
        echo "redis-server on 127.0.0.1:$port, pid $redis_pid"
        return 0
      fi
      sleep 0.1
      i=$((i + 1))
    done
    stop_redis
  done
  cat "$tmp/redis.log" >&2 2>/dev/null || true
  fail "could not start a redis-server on a free port"
}

# ---------------------------------------------------------------- 0. server
step "starting redis-server (it ages while the rest is built)"
start_redis

# ---------------------------------------------------------------- 1. install
step "cmake --install $build --prefix $prefix"
if ! "$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log" >&2
  fail "cmake --install failed"
fi

# ---------------------------------------------------------------- 2. files
step "installed files"
pcfile=""
for f in "$prefix"/lib*/pkgconfig/redlock.pc "$prefix"/lib/*/pkgconfig/redlock.pc; do
  if [ -f "$f" ]; then
    pcfile="$f"
    break
  fi
done
[ -n "$pcfile" ] || fail "no lib*/pkgconfig/redlock.pc under $prefix"
libdir=$(cd "$(dirname "$pcfile")/.." && pwd)
echo "libdir: $libdir"

for h in redlock.h redlock_uv.h; do
  [ -f "$prefix/include/$h" ] || fail "include/$h not installed"
  cmp -s "$prefix/include/$h" "$src/include/$h" || fail "include/$h differs from the source tree"
done

version=$(sed -n 's/^#define REDLOCK_VERSION_STRING "\(.*\)"$/\1/p' "$src/include/redlock.h")
major=$(sed -n 's/^#define REDLOCK_VERSION_MAJOR \([0-9]*\)$/\1/p' "$src/include/redlock.h")
[ -n "$version" ] && [ -n "$major" ] || fail "no version in include/redlock.h"

so="$libdir/libredlock.so"
[ -L "$so" ] || fail "lib/libredlock.so (the development symlink) not installed"
[ -e "$so.$major" ] || fail "lib/libredlock.so.$major not installed"
[ -f "$so.$version" ] && [ ! -L "$so.$version" ] || fail "lib/libredlock.so.$version not installed"
[ "$(readlink -f "$so")" = "$(readlink -f "$so.$version")" ] || fail "libredlock.so does not lead to libredlock.so.$version"
soname=$(readelf -d "$so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libredlock.so.$major" ] || fail "SONAME is '$soname', expected libredlock.so.$major"
if readelf -d "$so.$version" | grep -E '\((RPATH|RUNPATH)\)' | grep -qF -e "$build" -e "$src"; then
  fail "installed libredlock.so keeps an RPATH into the build tree"
fi
bad=$(nm -D --defined-only "$so.$version" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' |
      grep -v '^redlock_' || true)
[ -z "$bad" ] || fail "libredlock.so exports symbols without the redlock_ prefix: $bad"

ar_lib="$libdir/libredlock.a"
[ -f "$ar_lib" ] || fail "lib/libredlock.a not installed"
globals=$(nm -g --defined-only "$ar_lib" | awk 'NF == 3 { print $3 }' | sort -u)
printf '%s\n' "$globals" | grep -qx redlock_open || fail "libredlock.a does not define redlock_open"
bad=$(printf '%s\n' "$globals" | grep -v '^redlock_' || true)
[ -z "$bad" ] || fail "libredlock.a has global symbols without the redlock_ prefix: $bad"
echo "libredlock.so.$version (SONAME $soname), libredlock.a ($(printf '%s\n' "$globals" | wc -l) globals)"

cmakedir="$libdir/cmake/redlock"
for f in redlockConfig.cmake redlockConfigVersion.cmake redlockTargets.cmake; do
  [ -f "$cmakedir/$f" ] || fail "lib/cmake/redlock/$f not installed"
done
ls "$cmakedir"/redlockTargets-*.cmake >/dev/null 2>&1 || fail "no per-configuration redlockTargets-*.cmake"
if grep -lF -e "$build" -e "$src" "$cmakedir"/*.cmake "$pcfile"; then
  fail "installed package files name the build or source tree (above)"
fi

# The command-line tool, when this build installs it (REDLOCK_BUILD_TOOLS).
if grep -q 'redlock\.1' "$build/cmake_install.cmake" || [ -e "$prefix/bin/redlock" ]; then
  [ -f "$prefix/bin/redlock" ] && [ -x "$prefix/bin/redlock" ] || fail "bin/redlock not installed"
  [ -f "$prefix/share/man/man1/redlock.1" ] || fail "share/man/man1/redlock.1 not installed"
  if readelf -d "$prefix/bin/redlock" | grep -E '\((RPATH|RUNPATH)\)' | grep -qF -e "$build" -e "$src"; then
    fail "installed bin/redlock keeps an RPATH into the build tree"
  fi
  # As installed, without LD_LIBRARY_PATH: it must find its library by itself
  # (dependencies outside the system's paths aside: REDLOCK_DEP_LIBDIRS).
  if [ -n "$dep_libdirs" ]; then
    cli_version=$(env LD_LIBRARY_PATH="$dep_libdirs" "$prefix/bin/redlock" --version 2>&1) ||
      fail "bin/redlock --version: $cli_version"
  else
    cli_version=$(env -u LD_LIBRARY_PATH "$prefix/bin/redlock" --version 2>&1) ||
      fail "bin/redlock --version: $cli_version"
  fi
  case "$cli_version" in
    *"$version"*) ;;
    *) fail "bin/redlock --version says '$cli_version', expected $version" ;;
  esac
  echo "bin/redlock ($cli_version) and share/man/man1/redlock.1 installed"
else
  echo "this build installs no command-line tool: bin/redlock not checked"
fi

# ---------------------------------------------------------------- flags
case "$sanitize" in
  1|ON|on|TRUE|true|YES|yes) sanitize=1 ;;
  *) sanitize=0 ;;
esac
if [ $sanitize = 0 ] && nm -D --undefined-only "$so.$version" | grep -q ' __asan_'; then
  echo "note: the installed libredlock.so is built with ASan: building with -fsanitize too"
  sanitize=1
fi
san_flags=""
if [ $sanitize = 1 ]; then
  san_flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
fi

# ---------------------------------------------------------------- 3. pkg-config
step "pkg-config builds (shared and static)"
PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
pkgconfig="pkg-config"
pc_version=$(pkg-config --modversion redlock)
[ "$pc_version" = "$version" ] || fail "redlock.pc says version $pc_version, redlock.h $version"
pc_prefix=$(pkg-config --variable=prefix redlock)
if [ "$( (cd "$pc_prefix" 2>/dev/null && pwd) || echo "$pc_prefix")" != "$prefix" ]; then
  # redlock.pc records the prefix given at configure time, not the one given
  # to `cmake --install --prefix`: make pkg-config derive it from the .pc's
  # location (pkgconf and pkg-config >= 0.29).  Anything else is a bug.
  configured=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$build/CMakeCache.txt")
  [ "$pc_prefix" = "$configured" ] ||
    fail "redlock.pc has prefix=$pc_prefix (installed under $prefix, configured for $configured)"
  echo "note: redlock.pc is not relocatable (prefix=$pc_prefix): using pkg-config --define-prefix"
  pkgconfig="pkg-config --define-prefix"
fi
canon() { (cd "$1" 2>/dev/null && pwd) || echo "$1"; }
[ "$(canon "$($pkgconfig --variable=libdir redlock)")" = "$libdir" ] ||
  fail "$pkgconfig: libdir=$($pkgconfig --variable=libdir redlock), expected $libdir"
[ "$(canon "$($pkgconfig --variable=includedir redlock)")" = "$prefix/include" ] ||
  fail "$pkgconfig: includedir=$($pkgconfig --variable=includedir redlock), expected $prefix/include"
echo "pkg-config --cflags --libs redlock: $($pkgconfig --cflags --libs redlock)"
echo "pkg-config --static --libs redlock: $($pkgconfig --static --libs redlock)"
pcout="$tmp/pkgconfig-build"
CC="$cc" CFLAGS="$san_flags" PKG_CONFIG="$pkgconfig" \
  sh "$src/examples/consumer/build_pkgconfig.sh" "$pcout" ||
  fail "building the examples with pkg-config"

# ---------------------------------------------------------------- 4. CMake
step "CMake consumer (find_package(redlock), examples/consumer)"
cbuild="$tmp/consumer-build"
if ! "$cmake" -S "$src/examples/consumer" -B "$cbuild" \
       -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
       -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
       -DCMAKE_C_FLAGS="$san_flags" -DCMAKE_EXE_LINKER_FLAGS="$san_flags" \
       >"$tmp/consumer-configure.log" 2>&1; then
  cat "$tmp/consumer-configure.log" >&2
  fail "configuring examples/consumer"
fi
grep 'Found redlock' "$tmp/consumer-configure.log" || true
found_dir=$(sed -n 's/^redlock_DIR:[A-Z]*=//p' "$cbuild/CMakeCache.txt")
[ "$(cd "$found_dir" && pwd)" = "$cmakedir" ] ||
  fail "find_package(redlock) found $found_dir, not $cmakedir"
if ! "$cmake" --build "$cbuild" -j2 >"$tmp/consumer-build.log" 2>&1; then
  cat "$tmp/consumer-build.log" >&2
  fail "building examples/consumer"
fi

# Shared builds need libredlock.so.N, static ones must not; every program
# loads one hiredis, the one the library was built with.
run_path="$libdir${dep_libdirs:+:$dep_libdirs}"
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
hiredis_of() { # the libhiredis SONAME(s) a program loads
  LD_LIBRARY_PATH="$run_path" ldd "$1" | sed -n 's/^[[:space:]]*\(libhiredis\.so[^ ]*\) => .*/\1/p' |
    sort -u
}
lib_hiredis=$(hiredis_of "$so.$version")
[ -n "$lib_hiredis" ] || fail "the installed libredlock.so does not load a libhiredis"
for b in "$pcout/basic" "$pcout/async_uv" "$cbuild/consumer-basic" "$cbuild/consumer-async-uv"; do
  needed "$b" | grep -qx "libredlock.so.$major" || fail "$b does not need libredlock.so.$major"
  LD_LIBRARY_PATH="$run_path" ldd "$b" | grep -qF "libredlock.so.$major => $libdir/" ||
    fail "$b does not load libredlock.so.$major from $libdir"
done
for b in "$pcout/basic" "$pcout/async_uv" "$pcout/basic-static" "$pcout/async_uv-static" \
         "$cbuild/consumer-basic" "$cbuild/consumer-async-uv" "$cbuild/consumer-basic-static"; do
  loaded=$(hiredis_of "$b")
  [ "$loaded" = "$lib_hiredis" ] ||
    fail "$b loads hiredis '$(echo $loaded)', the library was built with $lib_hiredis"
done
echo "every program loads $lib_hiredis"
for b in "$pcout/basic-static" "$pcout/async_uv-static" "$cbuild/consumer-basic-static"; do
  if needed "$b" | grep -q '^libredlock'; then
    fail "$b is meant to be linked statically but needs $(needed "$b" | grep '^libredlock')"
  fi
done

# ---------------------------------------------------------------- 5. run
step "running the programs against redis://127.0.0.1:$port"
# The default restart quarantine is the max TTL (60 s), counted from the
# reported uptime minus one second: wait until the master votes.
waited=0
while :; do
  up=$(redis_info_field uptime_in_seconds)
  [ -n "$up" ] || fail "our redis-server on port $port stopped answering"
  [ "$up" -ge 62 ] && break
  [ $waited -lt 150 ] || fail "redis-server uptime stuck at $up s"
  sleep 1
  waited=$((waited + 1))
done
echo "redis-server up ${up} s (waited ${waited} s for the restart quarantine)"

for b in "$pcout/basic" "$pcout/async_uv" "$pcout/basic-static" "$pcout/async_uv-static" \
         "$cbuild/consumer-basic" "$cbuild/consumer-async-uv" "$cbuild/consumer-basic-static"; do
  log="$tmp/run.log"
  if LD_LIBRARY_PATH="$run_path" timeout 60 "$b" "redis://127.0.0.1:$port" >"$log" 2>&1; then
    rc=0
  else
    rc=$?
  fi
  if [ $rc -ne 0 ] || ! grep -q '^locked ' "$log"; then
    cat "$log" >&2
    fail "$b exited with $rc"
  fi
  echo "ok: $b"
done

echo "PASS: install to $prefix; pkg-config and CMake consumers built and ran"
