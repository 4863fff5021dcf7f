#!/usr/bin/env bash
# tests/install/dist_check.sh DIST: checks what scripts/package.sh wrote in
# DIST before anything is installed (scripts/package.sh --check runs it; it
# needs no root):
#   - hardening (tests/install/hardening_check.sh: RELRO, BIND_NOW, stack
#     protector, fortified calls) of the .deb's libredlock.so.0 and
#     /usr/bin/redlock, the wheel's and the npm tarball's libredlock.so.0;
#   - the .debs depend on libhiredis0.14 (>= 0.14.1-2), the CVE-2021-32765
#     fix, when they depend on libhiredis0.14 at all, and never on a lower
#     version (dpkg-shlibdeps' default is >= 0.14.0);
#   - the wheel and the npm tarball carry LICENSES/ with the notice of each
#     bundled third-party library (libhiredis, libuv).
# Exits 1 with the reasons when a check fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: tests/install/dist_check.sh DIST" >&2
  exit 2
fi
dist=$(cd "$1" && pwd)
for tool in dpkg-deb readelf python3 tar; do
  command -v "$tool" >/dev/null 2>&1 || { echo "dist_check: $tool not found" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
  echo "dist_check: FAILED: $*" >&2
  fail=1
}
one() { # one GLOB: the single file of DIST matching it
  local matches=("$dist"/$1)
  if [ ${#matches[@]} -ne 1 ] || [ ! -f "${matches[0]}" ]; then
    echo "dist_check: expected one $1 in $dist, found: ${matches[*]}" >&2
    exit 1
  fi
  echo "${matches[0]}"
}

runtime=$(one 'libredlock0_*.deb')
tools=$(one 'redlock-tools_*.deb')
dev=$(one 'libredlock-dev_*.deb')
wheel=$(one 'redlock_c-*-manylinux_*.whl')
npm=$(one 'redlock-c-*.tgz')

# ---- the .debs' hiredis floor -------------------------------------------------
floor="0.14.1-2"
for deb in "$runtime" "$tools" "$dev"; do
  depends=$(dpkg-deb -f "$deb" Depends)
  echo "==> ${deb##*/}: Depends: $depends"
  # Each libhiredis0.14 / libhiredis-dev relation must carry ">= 0.14.1-2".
  rels=$(tr ',' '\n' <<<"$depends" | sed 's/^ *//; s/ *$//' | grep -E '^libhiredis(0\.14|-dev)( |$)' ||
    true)
  while IFS= read -r rel; do
    [ -n "$rel" ] || continue
    [ "$rel" = "${rel%% *} (>= $floor)" ] ||
      bad "${deb##*/}: '$rel': the hiredis relation must be '(>= $floor)' (CVE-2021-32765)"
  done <<<"$rels"
done

# ---- hardening ---------------------------------------------------------------
echo "==> hardening of the shipped binaries"
dpkg-deb -x "$runtime" "$tmp/runtime"
dpkg-deb -x "$tools" "$tmp/tools"
lib=$(find "$tmp/runtime" -name 'libredlock.so.0' | sed -n 1p)
cli="$tmp/tools/usr/bin/redlock"
[ -n "$lib" ] || bad "${runtime##*/} holds no libredlock.so.0"
[ -f "$cli" ] || bad "${tools##*/} holds no usr/bin/redlock"
mkdir -p "$tmp/wheel" "$tmp/npm"
python3 - "$wheel" "$tmp/wheel" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
tar -xzf "$npm" -C "$tmp/npm"
wheel_lib=$(find "$tmp/wheel" -name 'libredlock.so.0' | sed -n 1p)
npm_lib=$(find "$tmp/npm" -name 'libredlock.so.0' | sed -n 1p)
[ -n "$wheel_lib" ] || bad "${wheel##*/} holds no libredlock.so.0"
[ -n "$npm_lib" ] || bad "${npm##*/} holds no libredlock.so.0"
files=()
for f in "$lib" "$cli" "$wheel_lib" "$npm_lib"; do
  [ -n "$f" ] && [ -f "$f" ] && files+=("$f")
done
if [ ${#files[@]} -gt 0 ]; then
  bash "$here/hardening_check.sh" "${files[@]}" 2>&1 | sed "s|$tmp/||" ||
    bad "a shipped binary lacks a hardening flag (above)"
fi

# ---- the bundled libraries' notices ------------------------------------------
echo "==> license notices of the bundled libraries"
check_notices() { # NAME LIBDIR LICENSESDIR
  local name=$1 libdir=$2 licenses=$3 lib base found=0
  for lib in "$libdir"/lib*.so*; do
    base=${lib##*/}
    case "$base" in libredlock.*) continue ;; esac
    found=1
    if [ -s "$licenses/$base.copyright" ]; then
      echo "    $name: LICENSES/$base.copyright ($(grep -m1 -o 'License: .*' \
        "$licenses/$base.copyright" || echo 'no License: field'))"
    else
      bad "$name bundles $base but has no LICENSES/$base.copyright"
    fi
  done
  [ $found = 1 ] || bad "$name bundles no third-party library: nothing to check in $libdir"
}
if [ -n "$wheel_lib" ]; then
  check_notices "${wheel##*/}" "$(dirname "$wheel_lib")" \
    "$(find "$tmp/wheel" -maxdepth 1 -name '*.dist-info')/licenses/LICENSES"
fi
if [ -n "$npm_lib" ]; then
  check_notices "${npm##*/}" "$(dirname "$npm_lib")" "$tmp/npm/package/LICENSES"
fi

if [ $fail = 0 ]; then
  echo "==> dist_check: ok"
fi
exit $fail
