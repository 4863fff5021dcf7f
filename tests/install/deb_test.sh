#!/usr/bin/env bash
# deb_test.sh DIST_DIR SOURCE_DIR: the Debian packages that scripts/package.sh
# wrote into DIST_DIR work once installed, the way a user gets them.
# `scripts/package.sh --check` runs it (scripts/test.sh, pass 6).
#
# It installs them system-wide with `dpkg -i`: run it as root on a disposable
# machine (CI's container) only.  They are removed again with `dpkg --purge` on
# every exit, failures included.  It refuses to start when one of them is
# installed already, or when a file they hold exists outside any package
# (removing the packages would delete it).  One run at a time on a machine
# (flock on /tmp/redlock-deb-test.lock).
#
#  1. The packages themselves: names, Depends, no RPATH/RUNPATH in any ELF
#     file, SONAME libredlock.so.0, a copyright file in each.
#  2. dpkg -i of the three; ldconfig knows libredlock.so.0; `redlock
#     --version` says the version; the man pages are installed (`man -w`:
#     redlock(1), and redlock_lock(3) of the API reference), and so are the
#     -dev package's guides, HTML reference and examples.
#  3. Consumers built against the installed files, from SOURCE_DIR (the
#     unpacked source tarball): tests/install/deb_consumer with pkg-config
#     (shared and static) and with find_package(redlock) (shared and static),
#     and examples/consumer (find_package) and its build_pkgconfig.sh, built
#     only (their programs keep the restart quarantine: they would need a
#     master up for a minute).
#  4. Against a redis-server started here on a free loopback port: each
#     deb_consumer build takes and releases a lock, and so does `redlock run
#     --no-quarantine`.
#  5. dpkg --purge of the three; none of their files is left, dpkg forgets them.
# Environment: REDLOCK_TEST_SERVER (the server program; default redis-server).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 DIST_DIR SOURCE_DIR" >&2
  exit 2
fi
dist=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
server="${REDLOCK_TEST_SERVER:-redis-server}"
packages=(libredlock0 libredlock-dev redlock-tools)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }

[ "$(id -u)" -eq 0 ] || fail "must run as root (dpkg -i); on a disposable machine only"
command -v dpkg >/dev/null || fail "dpkg not found: not a Debian system"

exec 9>/tmp/redlock-deb-test.lock
flock -w 600 9 || fail "another deb_test.sh holds /tmp/redlock-deb-test.lock"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/redlock-deb.XXXXXX")
redis_pid=""
port=""
installed=0

installed_state() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true; }

remove_packages() {
  [ $installed = 1 ] || return 0
  installed=0
  # --purge: dpkg -r, then the package's record too (libredlock0's ldconfig
  # scripts would otherwise leave it in state config-files).
  step "dpkg --purge ${packages[*]}"
  dpkg --purge "${packages[@]}" >"$tmp/remove.log" 2>&1 || { cat "$tmp/remove.log" >&2; return 1; }
}

stop_redis() {
  [ -n "$redis_pid" ] || return 0
  kill "$redis_pid" 2>/dev/null || true
  local i=0
  while kill -0 "$redis_pid" 2>/dev/null && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -0 "$redis_pid" 2>/dev/null && kill -9 "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
}

cleanup() {
  local status=$?
  set +e
  remove_packages || status=1
  stop_redis
  rm -rf "$tmp"
  exit $status
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- 1. the .debs
step "the packages in $dist"
declare -A deb
for p in "${packages[@]}"; do
  files=("$dist/${p}_"*.deb)
  [ ${#files[@]} -eq 1 ] && [ -f "${files[0]}" ] || fail "expected one ${p}_*.deb in $dist"
  deb[$p]=${files[0]}
  [ "$(dpkg-deb -f "${deb[$p]}" Package)" = "$p" ] || fail "${deb[$p]} is not package $p"
done
version=$(dpkg-deb -f "${deb[libredlock0]}" Version) # <upstream>-<revision>
upstream=${version%-*}
echo "version $version"
depends() { dpkg-deb -f "${deb[$1]}" Depends; }
has_dep() { # PACKAGE DEPENDENCY: Depends of PACKAGE lists DEPENDENCY (a name, or "name (op ver)")
  depends "$1" | tr ',' '\n' | sed 's/^ *//; s/ *$//' | grep -xF -- "$2" >/dev/null ||
    depends "$1" | tr ',' '\n' | sed 's/^ *//; s/ (.*//' | grep -xF -- "$2" >/dev/null
}
for d in libc6 libhiredis0.14 libuv1; do
  has_dep libredlock0 "$d" || fail "libredlock0 does not depend on $d: $(depends libredlock0)"
done
for d in "libredlock0 (= $version)" libhiredis-dev libuv1-dev; do
  has_dep libredlock-dev "$d" || fail "libredlock-dev does not depend on $d: $(depends libredlock-dev)"
done
has_dep redlock-tools "libredlock0 (= $version)" ||
  fail "redlock-tools does not depend on libredlock0 (= $version): $(depends redlock-tools)"
for p in "${packages[@]}"; do
  echo "$p: Depends: $(depends "$p")"
done

libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
for p in "${packages[@]}"; do
  x="$tmp/extract/$p"
  mkdir -p "$x"
  dpkg-deb -x "${deb[$p]}" "$x"
  [ -s "$x/usr/share/doc/$p/copyright" ] || fail "$p has no /usr/share/doc/$p/copyright"
  while IFS= read -r f; do
    if readelf -h "$f" >/dev/null 2>&1; then
      if readelf -d "$f" 2>/dev/null | grep -E '\((RPATH|RUNPATH)\)' >/dev/null; then
        fail "$p: ${f#"$x"} has an RPATH/RUNPATH: $(readelf -d "$f" | grep -E 'RPATH|RUNPATH')"
      fi
    fi
  done < <(find "$x" -type f)
done
# libredlock-dev: the API reference (man 3 and HTML), the guides, the examples.
x="$tmp/extract/libredlock-dev"
for f in usr/share/doc/libredlock-dev/html/index.html usr/share/doc/libredlock-dev/api.md \
  usr/share/doc/libredlock-dev/examples/basic.c; do
  [ -s "$x/$f" ] || fail "libredlock-dev has no /$f"
done
compgen -G "$x/usr/share/man/man3/redlock_lock.3*" >/dev/null ||
  fail "libredlock-dev has no man page redlock_lock(3)"
so="$tmp/extract/libredlock0$libdir/libredlock.so.$upstream"
[ -f "$so" ] || fail "libredlock0 has no $libdir/libredlock.so.$upstream"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libredlock.so.0" ] || fail "SONAME is '$soname', expected libredlock.so.0"
echo "no RPATH/RUNPATH in any ELF file; SONAME $soname; a copyright file in each"

# Nothing of theirs may be on the system already: dpkg --purge would delete it.
for p in "${packages[@]}"; do
  case "$(installed_state "$p")" in
    "" | "unknown ok not-installed" | "deinstall ok not-installed" | "purge ok not-installed") ;;
    "deinstall ok config-files") ;; # removed, no file left: the purge at the end forgets it
    *) fail "$p is already installed ($(installed_state "$p")): not touching it" ;;
  esac
  while IFS= read -r f; do
    [ -d "$tmp/extract/$p$f" ] && continue
    if [ -e "$f" ] || [ -L "$f" ]; then
      fail "$f exists already (not from these packages): not installing over it"
    fi
  done < <(cd "$tmp/extract/$p" && find . -mindepth 1 | sed 's|^\.||')
done

# ---------------------------------------------------------------- server
# Started before the install: nothing else waits on it.
start_redis() {
  command -v "$server" >/dev/null || fail "$server not found"
  command -v redis-cli >/dev/null || fail "redis-cli not found"
  local attempt=0 i
  while [ $attempt -lt 20 ]; do
    attempt=$((attempt + 1))
    port=$(($(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 25000 + 30000))
    "$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --daemonize no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
    redis_pid=$!
    i=0
    while [ $i -lt 50 ] && kill -0 "$redis_pid" 2>/dev/null; do
      # The server on the port must be ours (its PID), never someone else's.
      if [ "$(redis-cli -h 127.0.0.1 -p "$port" INFO server 2>/dev/null | tr -d '\r' |
        sed -n 's/^process_id://p')" = "$redis_pid" ]; then
        echo "redis-server on 127.0.0.1:$port, pid $redis_pid"
        return 0
      fi
      sleep 0.1
      i=$((i + 1))
    done
    stop_redis
  done
  cat "$tmp/redis.log" >&2 || true
  fail "could not start a redis-server on a free port"
}
step "starting redis-server"
start_redis

# ---------------------------------------------------------------- 2. install
step "dpkg -i ${deb[*]##*/}"
installed=1 # from here on, the trap removes them (a half-installed one too)
if ! dpkg -i "${deb[@]}" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log" >&2
  fail "dpkg -i failed (are libhiredis-dev, libuv1-dev and pkg-config installed?)"
fi
for p in "${packages[@]}"; do
  [ "$(installed_state "$p")" = "install ok installed" ] || fail "$p: $(installed_state "$p")"
done
ldconfig -p | grep -F "libredlock.so.0 (" >/dev/null || fail "ldconfig does not know libredlock.so.0"
[ "$(command -v redlock)" = /usr/bin/redlock ] || fail "redlock is not /usr/bin/redlock"
cli_version=$(env -u LD_LIBRARY_PATH redlock --version 2>&1) || fail "redlock --version: $cli_version"
case "$cli_version" in
  *"$upstream"*) echo "redlock --version: $cli_version" ;;
  *) fail "redlock --version says '$cli_version', expected $upstream" ;;
esac
if command -v man >/dev/null 2>&1; then
  man_path=$(man -w redlock) || fail "man -w redlock found no page"
  echo "man -w redlock: $man_path"
  man_path=$(man -w 3 redlock_lock) || fail "man -w 3 redlock_lock found no page"
  echo "man -w 3 redlock_lock: $man_path"
else
  [ -f /usr/share/man/man1/redlock.1 ] || fail "/usr/share/man/man1/redlock.1 not installed"
  echo "/usr/share/man/man1/redlock.1 installed (no man here)"
fi

# ---------------------------------------------------------------- 3. consumers
step "consumers built against the installed packages"
echo "pkg-config --cflags --libs redlock: $(pkg-config --cflags --libs redlock)"
[ "$(pkg-config --modversion redlock)" = "$upstream" ] ||
  fail "redlock.pc says $(pkg-config --modversion redlock), expected $upstream"
out="$tmp/pkgconfig"
mkdir -p "$out"
warn="-std=c11 -Wall -Wextra -Werror"
consumer="$src/tests/install/deb_consumer/consumer.c"
# shellcheck disable=SC2046,SC2086 # the flags are meant to be split
cc $warn $(pkg-config --cflags redlock) "$consumer" -o "$out/deb-consumer" \
  $(pkg-config --libs redlock) || fail "pkg-config build (shared)"
# shellcheck disable=SC2046,SC2086
cc $warn -DREDLOCK_STATIC $(pkg-config --cflags --static redlock) "$consumer" \
  -o "$out/deb-consumer-static" \
  $(pkg-config --libs --static redlock | sed 's/\(^\| \)-lredlock\( \|$\)/\1-l:libredlock.a\2/') ||
  fail "pkg-config build (static)"

cmake_build() { # NAME SOURCE_DIR: configure (no prefix path: the system's) and build
  local b="$tmp/$1"
  if ! cmake -S "$2" -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$tmp/$1-configure.log" 2>&1; then
    cat "$tmp/$1-configure.log" >&2
    fail "configuring $2"
  fi
  local found
  found=$(sed -n 's/^redlock_DIR:[A-Z]*=//p' "$b/CMakeCache.txt")
  [ "$found" = "$libdir/cmake/redlock" ] || fail "$1: find_package(redlock) found $found"
  cmake --build "$b" -j2 >"$tmp/$1-build.log" 2>&1 ||
    { cat "$tmp/$1-build.log" >&2; fail "building $2"; }
  echo "$1: find_package(redlock) in $found, built"
}
cmake_build deb-consumer "$src/tests/install/deb_consumer"
cmake_build examples-consumer "$src/examples/consumer"
sh "$src/examples/consumer/build_pkgconfig.sh" "$tmp/examples-pkgconfig" >"$tmp/examples-pc.log" 2>&1 ||
  { cat "$tmp/examples-pc.log" >&2; fail "examples/consumer/build_pkgconfig.sh"; }
echo "examples/consumer/build_pkgconfig.sh: built"

shared=("$out/deb-consumer" "$tmp/deb-consumer/deb-consumer")
static=("$out/deb-consumer-static" "$tmp/deb-consumer/deb-consumer-static")
# (The loader may name it through /lib, the same directory on a merged-/usr system.)
want=$(readlink -f "$libdir/libredlock.so.0")
for b in "${shared[@]}" "$tmp/examples-consumer/consumer-basic" "$tmp/examples-pkgconfig/basic"; do
  loaded=$(env -u LD_LIBRARY_PATH ldd "$b" | sed -n 's/^[[:space:]]*libredlock\.so\.0 => \([^ ]*\).*/\1/p')
  [ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$want" ] ||
    fail "$b loads libredlock.so.0 from '$loaded', not the installed $want"
done
echo "the shared builds load $want; the static ones need no libredlock"
for b in "${static[@]}"; do
  if readelf -d "$b" | grep 'NEEDED.*libredlock' >/dev/null; then
    fail "$b is meant to be linked statically but needs libredlock"
  fi
done

# ---------------------------------------------------------------- 4. run
step "lock and unlock against redis://127.0.0.1:$port"
for b in "${shared[@]}" "${static[@]}"; do
  if ! env -u LD_LIBRARY_PATH timeout 30 "$b" "redis://127.0.0.1:$port" >"$tmp/run.log" 2>&1 ||
    ! grep -q '^locked ' "$tmp/run.log"; then
    cat "$tmp/run.log" >&2
    fail "$b"
  fi
  echo "ok: ${b#"$tmp/"}: $(head -n1 "$tmp/run.log")"
done
fence=$(env -u LD_LIBRARY_PATH timeout 30 redlock run --no-quarantine -N "redis://127.0.0.1:$port" \
  deb-test:cli -- sh -c 'echo "$REDLOCK_FENCE"' 2>"$tmp/cli.log") ||
  { cat "$tmp/cli.log" >&2; fail "redlock run"; }
[ -n "$fence" ] || fail "redlock run gave the command no fencing token"
echo "ok: redlock run --no-quarantine (fencing token $fence)"
keys=$(redis-cli -h 127.0.0.1 -p "$port" --scan --pattern 'deb-*' | wc -l)
[ "$keys" -eq 0 ] || fail "$keys lock key(s) left on the master after the unlocks"

# ---------------------------------------------------------------- 5. remove
remove_packages || fail "dpkg --purge failed"
for p in "${packages[@]}"; do
  case "$(installed_state "$p")" in
    "" | "unknown ok not-installed" | "purge ok not-installed") ;;
    *) fail "$p still known to dpkg after dpkg --purge: $(installed_state "$p")" ;;
  esac
  while IFS= read -r f; do
    [ -d "$tmp/extract/$p$f" ] && continue
    if [ -e "$f" ] || [ -L "$f" ]; then fail "$f left after dpkg --purge $p"; fi
  done < <(cd "$tmp/extract/$p" && find . -mindepth 1 | sed 's|^\.||')
done
echo "PASS: ${packages[*]} $version installed, consumers built and run, removed"
