# bindings/common.sh: sourced by bindings/*/test.sh, bindings/interop/run.sh
# and bindings/run-all.sh.  Finds (or builds) libredlock and checks for
# redis-server.  Never starts or stops anything by name.
#   REDLOCK_LIB_DIR  directory holding libredlock.so (default: <repo>/build,
#                    built there with CMake when missing)
REDLOCK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Sets REDLOCK_LIB_DIR and REDLOCK_LIBRARY (exported), building the library
# into <repo>/build when it is not there.
redlock_ensure_library() {
  local dir=${REDLOCK_LIB_DIR:-$REDLOCK_ROOT/build}
  if [ ! -e "$dir/libredlock.so" ]; then
    if [ -n "${REDLOCK_LIB_DIR:-}" ]; then
      echo "FAIL: REDLOCK_LIB_DIR=$REDLOCK_LIB_DIR has no libredlock.so" >&2
      exit 1
    fi
    command -v cmake >/dev/null 2>&1 || { echo "FAIL: libredlock not built and cmake not found" >&2; exit 1; }
    echo "==> building libredlock in $dir"
    cmake -S "$REDLOCK_ROOT" -B "$dir" -DREDLOCK_WERROR=ON -DREDLOCK_BUILD_TESTS=OFF \
      -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_BUILD_BENCH=OFF >/dev/null
    cmake --build "$dir" -j2 >/dev/null
  fi
  REDLOCK_LIB_DIR=$(cd "$dir" && pwd)
  REDLOCK_LIBRARY=$REDLOCK_LIB_DIR/libredlock.so
  export REDLOCK_LIB_DIR REDLOCK_LIBRARY
}

redlock_need_redis() {
  command -v redis-server >/dev/null 2>&1 || {
    echo "FAIL: redis-server not found (apt-get install redis-server)" >&2
    exit 1
  }
}

# A missing toolchain: one clear line, and success (never a silent pass).
redlock_skip() {
  echo "SKIP: $1: $2"
  exit 0
}

# Exports PKG_CONFIG_PATH so that `pkg-config redlock` names the library in
# REDLOCK_LIB_DIR (call redlock_ensure_library first): a CMake build directory
# holds redlock-uninstalled.pc (configured again when it predates that file),
# an installed libdir holds pkgconfig/redlock.pc.  A build against a hiredis
# outside the system's (build-extra's 1.2) also needs that hiredis.pc, whose
# directory the .pc records: Requires.private must resolve.
redlock_pkg_config_path() {
  local dir=$REDLOCK_LIB_DIR pcdir hiredis_pc
  if [ -f "$dir/CMakeCache.txt" ] && [ ! -f "$dir/redlock-uninstalled.pc" ]; then
    cmake "$dir" >/dev/null
  fi
  if [ -f "$dir/redlock-uninstalled.pc" ]; then
    pcdir=$dir
  elif [ -f "$dir/pkgconfig/redlock.pc" ]; then
    pcdir=$dir/pkgconfig
  else
    echo "FAIL: no redlock-uninstalled.pc nor pkgconfig/redlock.pc in $dir" >&2
    exit 1
  fi
  PKG_CONFIG_PATH=$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  hiredis_pc=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=hiredis_pcfiledir redlock 2>/dev/null || true)
  [ -n "$hiredis_pc" ] && PKG_CONFIG_PATH=$PKG_CONFIG_PATH:$hiredis_pc
  export PKG_CONFIG_PATH
}

# Go's build cache does not key on pkg-config's answer (golang/go#24544): a
# package built against one REDLOCK_LIB_DIR would be reused, stale, against
# another.  Its key does include CGO_CPPFLAGS: a define that names the answer
# (never read by any source) makes each library its own cache entry.
redlock_go_cache_key() {
  local sum
  sum=$(pkg-config --cflags --libs --static redlock | cksum | cut -d' ' -f1)
  export CGO_CPPFLAGS="${CGO_CPPFLAGS:-} -DREDLOCK_GO_PKG_CONFIG_$sum"
}
