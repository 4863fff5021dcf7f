#!/usr/bin/env bash
# packaging/bundle_notices.sh DIR LICENSES_DIR: the license notices of the
# third-party shared libraries bundled in DIR (every lib*.so* there but
# libredlock's own: libhiredis, libuv), written into LICENSES_DIR as
# <library file>.copyright.  Each is the copyright file of the Debian package
# the library was copied from (dpkg -S), /usr/share/doc/<package>/copyright,
# taken at build time, so it is the notice of the very build that is shipped
# (libuv's also lists the code libuv itself bundles).  A header line names the
# library, the package and its version.
#
# Exits 1, saying which, when a library's package or copyright file cannot be
# found (not a Debian system, a library built by hand, or docs excluded by
# dpkg's path-exclude): an artifact must not ship without them.  Used by
# scripts/package.sh for the wheel and the npm tarball.
set -euo pipefail

if [ $# -ne 2 ] || [ ! -d "$1" ]; then
  echo "usage: packaging/bundle_notices.sh DIR LICENSES_DIR" >&2
  exit 2
fi
dir=$1
out=$2
command -v dpkg-query >/dev/null 2>&1 ||
  { echo "bundle_notices: dpkg-query not found: the notices come from Debian's copyright files" >&2; exit 1; }

mkdir -p "$out"
found=0
for lib in "$dir"/lib*.so*; do
  [ -f "$lib" ] || continue
  name=${lib##*/}
  case "$name" in libredlock.*) continue ;; esac
  # The installed copy it came from: the same file name under the loader's
  # directories (the bundle holds copies, which dpkg does not know).
  origin=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n && !found {print $NF; found = 1}')
  [ -n "$origin" ] || { echo "bundle_notices: $name: not found by ldconfig -p" >&2; exit 1; }
  pkg=$(dpkg-query -S "$(readlink -f "$origin")" 2>/dev/null | sed -n 1p | cut -d: -f1) ||
    true
  [ -n "$pkg" ] || pkg=$(dpkg-query -S "$origin" 2>/dev/null | sed -n 1p | cut -d: -f1) || true
  [ -n "$pkg" ] ||
    { echo "bundle_notices: $name ($origin): no Debian package owns it" >&2; exit 1; }
  copyright="/usr/share/doc/$pkg/copyright"
  [ -s "$copyright" ] ||
    { echo "bundle_notices: $name: $copyright is missing (package $pkg)" >&2; exit 1; }
  version=$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null | sed -n 1p)
  {
    echo "$name is bundled from the Debian package $pkg $version; its copyright file"
    echo "($copyright) follows."
    echo
    cat "$copyright"
  } >"$out/$name.copyright"
  echo "    notice: LICENSES/$name.copyright ($pkg $version)"
  found=$((found + 1))
done
[ "$found" -gt 0 ] || { echo "bundle_notices: no third-party library in $dir" >&2; exit 1; }
