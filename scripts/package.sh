#!/usr/bin/env bash
# scripts/package.sh: makes the release artifacts in dist/ from the commit
# checked out (HEAD), with a fresh Release build of its own (build-package/).
#
#   scripts/package.sh           writes dist/
#   scripts/package.sh --check   writes dist/, then tests/install/dist_check.sh
#                                (hardening, Depends, notices) and deb_test.sh:
#                                installs the .debs system-wide (root, a
#                                disposable machine), builds and runs consumers
#                                against them, removes them
#   scripts/package.sh --check-built
#                                the checks of --check alone, on the dist/ an
#                                earlier `scripts/package.sh` wrote from the
#                                same commit (scripts/test.sh builds it in the
#                                background, behind the test passes)
#
# dist/ holds:
#   libredlock0_<ver>-1_<arch>.deb     the shared library
#   libredlock-dev_<ver>-1_<arch>.deb  headers, static library, .pc, CMake package
#   redlock-tools_<ver>-1_<arch>.deb   the `redlock` CLI and its man page
#   redlock-c-<ver>.tar.gz             the source: `git archive` of HEAD
#   redlock_c-<ver>-py3-none-manylinux_X_Y_<arch>.whl
#                                      the Python binding with libredlock,
#                                      libhiredis and libuv inside
#   redlock_c-<ver>.tar.gz             the Python sdist (builds with CMake)
#   SHA256SUMS
# (docs/packaging.md says what is in each and how to install it.)
#
# The version is written in one place, project(VERSION) in CMakeLists.txt:
# it is read back here from the configured build (CPackConfig.cmake).
#
# How: HEAD is exported with `git archive` and unpacked into
# build-package/src; the packages are built from that tree, so building them
# is also the check that the source tarball (the same commit, exported once
# more with the prefix redlock-c-<ver>/) builds with CMake on its own.
# Uncommitted changes are therefore in no artifact: the script says so.
#
# Needs git, cmake/cpack, a C compiler, pkg-config, hiredis and libuv -dev
# packages, and dpkg-dev and file (CPack's DEB generator runs dpkg-shlibdeps
# to compute the Depends, and `file` to find what to strip).  Built against
# the system's hiredis: PKG_CONFIG_PATH is ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

check=0
build=1
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  --check-built) check=1 build=0 ;;
  *) echo "usage: scripts/package.sh [--check | --check-built]" >&2; exit 2 ;;
esac

work="$root/build-package"
dist="$root/dist"
jobs=$(nproc 2>/dev/null || echo 2)
unset PKG_CONFIG_PATH

for tool in git cmake cpack cc pkg-config dpkg-deb dpkg-shlibdeps file gzip tar sha256sum objdump python3; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "package.sh: $tool not found (scripts/deps.sh installs what is needed)" >&2; exit 1; }
done

commit=$(git rev-parse --verify -q HEAD) ||
  { echo "package.sh: needs a git checkout with a commit (it packages HEAD)" >&2; exit 1; }
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "==> note: uncommitted changes are not packaged: dist/ is made from HEAD ($commit)"
fi

started=$SECONDS

# ---- the checks ----------------------------------------------------------------
check_dist() {
  # The tarball holds exactly the tree the packages were built from.
  echo "==> dist/redlock-c-$version.tar.gz unpacks to the tree built above"
  rm -rf "$work/unpacked"
  mkdir -p "$work/unpacked"
  tar -xzf "$dist/redlock-c-$version.tar.gz" -C "$work/unpacked"
  [ "$(ls "$work/unpacked")" = "redlock-c-$version" ] ||
    { echo "package.sh: the tarball's top directory is not redlock-c-$version/" >&2; exit 1; }
  diff -r "$work/src" "$work/unpacked/redlock-c-$version" >/dev/null ||
    { echo "package.sh: the tarball differs from build-package/src" >&2; exit 1; }
  # What the artifacts are, before they are installed: the binaries'
  # hardening, the .debs' hiredis floor, the notices in the wheel and the
  # npm tarball.
  bash tests/install/dist_check.sh "$dist"
  bash tests/install/deb_test.sh "$dist" "$work/unpacked/redlock-c-$version"
  # The npm tarball installed into fresh projects (npm install, a later
  # plain npm install, npm ci), locking against a local redis-server.
  bash "$work/src/bindings/node/test/pack_test.sh" "$dist/redlock-c-$version.tgz"
  # The wheel in a venv of each Python there is, and the sdist built by pip.
  bash bindings/python/tests/wheel_test.sh --sdist "$dist" "$work/wheel-test"
}

if [ $build = 0 ]; then
  # Only artifacts of this very commit are checked: build-package/commit is
  # written last, once dist/ is complete.
  built=$(cat "$work/commit" 2>/dev/null || true)
  [ "$built" = "$commit" ] ||
    { echo "package.sh: dist/ was not built from HEAD ($commit): run scripts/package.sh" >&2; exit 1; }
  version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$work/build/CPackConfig.cmake")
  echo "==> checking dist/ ($version, built from $commit)"
  check_dist
  exit 0
fi

# ---- the tree and the build --------------------------------------------------
echo "==> git archive $commit -> build-package/src"
rm -rf "$work"
mkdir -p "$work/src"
git archive --format=tar "$commit" | tar -x -C "$work/src"

# Release, installed under /usr (GNUInstallDirs then picks Debian's multiarch
# libdir).  No install RPATH: the library and the CLI live in the loader's
# own directories.  Neither tests nor examples nor benchmarks are packaged.
# -Werror is off here: the test builds (scripts/test.sh) hold the code to it,
# a packaging build must not fail on a diagnostic; the warnings are printed.
echo "==> configure build-package/build (Release, prefix /usr)"
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_SKIP_INSTALL_RPATH=ON -DREDLOCK_WERROR=OFF -DREDLOCK_TLS=OFF \
  -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_BUILD_BENCH=OFF \
  -DREDLOCK_BUILD_TOOLS=ON >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; exit 1; }
sed -n 's/^-- redlock: /    /p' "$work/configure.log"

version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$work/build/CPackConfig.cmake")
[ -n "$version" ] || { echo "package.sh: no CPACK_PACKAGE_VERSION in CPackConfig.cmake" >&2; exit 1; }
echo "==> version $version"

echo "==> build build-package/build"
if ! cmake --build "$work/build" -j"$jobs" >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  exit 1
fi
if grep -q 'warning:' "$work/build.log"; then
  echo "    warnings (build-package/build.log):"
  grep 'warning:' "$work/build.log" | sed "s|$work/src/||" | sort -u | sed 's/^/      /'
fi

rm -rf "$dist"
mkdir -p "$dist"

# ---- artifacts: one function each ---------------------------------------------

# The three Debian packages (packaging/cpack.cmake).
package_debs() {
  echo "==> cpack -G DEB"
  if ! (cd "$work/build" && cpack -G DEB -B "$work/cpack") >"$work/cpack.log" 2>&1; then
    cat "$work/cpack.log" >&2
    exit 1
  fi
  mv "$work/cpack"/*.deb "$dist/"
}

# The source tarball: the commit the packages were built from, under
# redlock-c-<ver>/ (gzip -n: no name or time stamp, the same bytes each time).
package_source() {
  local name="redlock-c-$version"
  echo "==> git archive --prefix=$name/ -> dist/$name.tar.gz"
  git archive --format=tar --prefix="$name/" "$commit" | gzip -n -9 >"$dist/$name.tar.gz"
}

# ---- the prebuilt libraries the wheel and the npm tarball carry --------------
# bundle_libs DEST: libredlock.so.0 and the shared libraries it needs that a
# bare system may lack (hiredis, libuv), copied into DEST, as auditwheel
# does: libredlock's RUNPATH is $ORIGIN, so it finds them beside itself,
# whatever directory the package manager unpacked it into.  libc, libpthread
# and the other glibc libraries are the platform's (the platform tag says
# which glibc).  Built once, from the same tree as the .debs, into
# build-package/bundle-build; the copies are the ones ldd resolves.
bundled=""
notices=""
bundle_libs() {
  local dest=$1
  if [ -z "$bundled" ]; then
    echo "==> build build-package/bundle-build (Release, RUNPATH \$ORIGIN)"
    cmake -S "$work/src" -B "$work/bundle-build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN' \
      -DREDLOCK_WERROR=OFF -DREDLOCK_TLS=OFF -DREDLOCK_BUILD_TESTS=OFF \
      -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_BUILD_BENCH=OFF -DREDLOCK_BUILD_TOOLS=OFF \
      >"$work/bundle-configure.log" 2>&1 || { cat "$work/bundle-configure.log" >&2; exit 1; }
    cmake --build "$work/bundle-build" -j"$jobs" --target redlock >"$work/bundle-build.log" 2>&1 ||
      { cat "$work/bundle-build.log" >&2; exit 1; }
    bundled="$work/bundle"
    rm -rf "$bundled"
    mkdir -p "$bundled"
    cp -L "$work/bundle-build/libredlock.so.0" "$bundled/libredlock.so.0"
    local lib path
    while read -r lib path; do
      cp -L "$path" "$bundled/$lib"
    done < <(ldd "$bundled/libredlock.so.0" |
      sed -n 's/^[[:space:]]*\(lib\(hiredis\|uv\)[^ ]*\) => \([^ ]*\).*/\1 \3/p')
    [ -f "$bundled/libredlock.so.0" ] && ls "$bundled" | grep '^libhiredis' >/dev/null &&
      ls "$bundled" | grep '^libuv' >/dev/null ||
      { echo "package.sh: bundle lacks libredlock, libhiredis or libuv: $(ls "$bundled")" >&2; exit 1; }
    echo "    bundled: $(cd "$bundled" && echo *)"
    # Their license notices, from the system's Debian copyright files of the
    # very builds copied (packaging/bundle_notices.sh): LICENSES/ in the
    # wheel and the npm tarball.
    notices="$work/bundle-notices"
    rm -rf "$notices"
    bash "$work/src/packaging/bundle_notices.sh" "$bundled" "$notices"
  fi
  mkdir -p "$dest"
  cp -a "$bundled"/. "$dest"/
}

# ---- the Python wheel and sdist ------------------------------------------------
# bindings/python's own PEP 517 backend (buildsys/redlock_build.py: zipfile
# and tarfile, no setuptools) writes both, from the archived tree:
#   redlock_c-<ver>-py3-none-manylinux_X_Y_<arch>.whl  the binding with
#       bundle_libs' libraries inside the package directory and their
#       notices in <dist-info>/licenses/LICENSES/; X.Y is the
#       newest GLIBC_ symbol version they reference (objdump -T), as
#       auditwheel computes it
#   redlock_c-<ver>.tar.gz  the binding, the backend and the C sources
#       (csrc/): pip builds the wheel from it with CMake
# The backend reads the version from CMakeLists.txt too; it is checked
# against $version.
package_python() {
  local py=/usr/bin/python3
  [ -x "$py" ] || py=$(command -v python3)
  rm -rf "$work/python-libs"
  bundle_libs "$work/python-libs"
  echo "==> Python wheel and sdist (bindings/python/buildsys/redlock_build.py)"
  local out
  out=$(cd "$work/src/bindings/python" &&
    "$py" - "$dist" "$work/python-libs" "$work/src" "$notices" <<'PY'
import sys
sys.path.insert(0, "buildsys")
import redlock_build
dist, libs, tree, notices = sys.argv[1:]
print(redlock_build.build_wheel(dist, {"bundle-dir": libs, "licenses-dir": notices}))
print(redlock_build.build_sdist(dist, {"c-tree": tree}))
PY
  ) || exit 1
  local whl sdist
  whl=$(sed -n 1p <<<"$out")
  sdist=$(sed -n 2p <<<"$out")
  case "$whl" in
    redlock_c-"$version"-py3-none-manylinux_*.whl) ;;
    *) echo "package.sh: unexpected wheel $whl (version $version)" >&2; exit 1 ;;
  esac
  [ "$sdist" = "redlock_c-$version.tar.gz" ] ||
    { echo "package.sh: unexpected sdist $sdist (version $version)" >&2; exit 1; }
  echo "    $whl, $sdist"
}

# ---- the npm tarball ---------------------------------------------------------
# redlock-c-<ver>.tgz (npm pack of bindings/node): index.js, blocking.js,
# index.d.ts, README.md, LICENSE, prebuilt/<platform>-<arch>/ (bundle_libs:
# libredlock.so.0 with RUNPATH $ORIGIN, libhiredis, libuv) and LICENSES/ (the
# notices of libhiredis and libuv), koffi its only
# dependency (from the npm registry at install time).  index.js loads the
# prebuilt library unless REDLOCK_LIBRARY names another.  A tarball, not a
# folder, is what npm copies: `npm install ./dist/redlock-c-<ver>.tgz`
# installs its dependencies, and a later `npm install` keeps it a copy.
# With --check: bindings/node/test/pack_test.sh installs and runs it.
package_npm() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
    { echo "package.sh: node and npm are needed for the npm tarball (scripts/deps.sh installs them)" >&2; exit 1; }
  # The directory name index.js looks in: process.platform-process.arch.
  local plat stage="$work/npm/package"
  plat=$(node -p 'process.platform + "-" + process.arch')
  echo "==> npm pack -> dist/redlock-c-$version.tgz (prebuilt/$plat)"
  rm -rf "$work/npm"
  mkdir -p "$work/npm"
  cp -a "$work/src/bindings/node" "$stage"
  cp "$work/src/LICENSE" "$stage/LICENSE"
  bundle_libs "$stage/prebuilt/$plat"
  rm -rf "$stage/LICENSES"
  cp -a "$notices" "$stage/LICENSES"
  # The version is CMake's; the package ships its prebuilt libraries; an
  # installed package never needs the binding's test tools.
  (
    cd "$stage"
    npm pkg set "version=$version" 'files[]=prebuilt/' 'files[]=LICENSE' 'files[]=LICENSES/'
    npm pkg delete devDependencies scripts
    rm -f package-lock.json
  )
  local tgz
  tgz=$(cd "$stage" && npm pack --pack-destination "$dist" --loglevel=error --json |
    node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s)[0].filename))')
  [ -f "$dist/$tgz" ] || { echo "package.sh: npm pack wrote no $dist/$tgz" >&2; exit 1; }
  local listing
  listing=$(tar -tzf "$dist/$tgz")
  grep -qx "package/prebuilt/$plat/libredlock.so.0" <<<"$listing" ||
    { echo "package.sh: $tgz lacks prebuilt/$plat/libredlock.so.0" >&2; exit 1; }
  grep -q "^package/LICENSES/libhiredis" <<<"$listing" ||
    { echo "package.sh: $tgz lacks LICENSES/ (the bundled libraries' notices)" >&2; exit 1; }
  [ "$tgz" = "redlock-c-$version.tgz" ] ||
    { echo "package.sh: unexpected npm tarball $tgz (version $version)" >&2; exit 1; }
}

package_debs
package_source
package_python
package_npm

(cd "$dist" && sha256sum -- * >SHA256SUMS)
echo "==> dist/ ($version, from $commit, $((SECONDS - started)) s)"
for f in "$dist"/*; do
  printf '    %9d  %s\n' "$(stat -c %s "$f")" "${f##*/}"
done

echo "$commit" >"$work/commit"

if [ $check = 1 ]; then
  check_dist
fi
