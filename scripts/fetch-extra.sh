#!/usr/bin/env bash
# scripts/fetch-extra.sh: fetches what Debian 12 lacks and the test suite runs
# against, without installing anything system-wide:
#   - hiredis 1.2.0 (libhiredis-dev + libhiredis1.1.0) from Debian's trixie suite
#   - valkey-server 8 from Debian's bookworm-backports suite
# Each package is fetched with `apt-get download` through a private sources
# list and state directory (the system's apt configuration is not touched) and
# unpacked with `dpkg -x` under the prefix given (default build-extra/).  The
# mirror is the one the system's own sources already use (exit status 3 when
# they name no Debian mirror: not a Debian system).
#
#   scripts/fetch-extra.sh [PREFIX]
# Prints nothing but progress; afterwards:
#   PREFIX/hiredis/lib/pkgconfig/hiredis.pc   (and hiredis_ssl.pc) fixed up
#   PREFIX/valkey/usr/bin/valkey-server
# Idempotent: what is already there is not fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(realpath -m "${1:-build-extra}")
mkdir -p "$prefix"

# The Debian mirror the system already uses (deb822 or one-line format).
mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
  grep -E '/debian/?( |$)' | sed -E 's/^URIs: *//; s/^deb (\[[^]]*\] )?//; s/ .*//' | head -n1 || true)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# fetch SUITE DEST PACKAGE...: download into DEST/debs and unpack into DEST/root.
fetch() {
  local suite=$1 dest=$2
  shift 2
  # Not a Debian system (e.g. Ubuntu): nothing to fetch from.  Exit status 3
  # tells scripts/test.sh to skip the passes that need these packages.
  if [ -z "$mirror" ] || [ ! -f "$keyring" ]; then
    echo "fetch-extra: no Debian mirror in the system's apt sources, or no $keyring:" \
      "$* cannot be fetched on this system" >&2
    exit 3
  fi
  local apt="$dest/apt"
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$dest/debs" "$dest/root"
  echo "deb [signed-by=$keyring] $mirror $suite main" >"$apt/sources.list"
  local opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::lists=$apt/lists" -o "Dir::Cache=$apt" -o "Dir::Cache::archives=$apt/archives"
    -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1" -qq)
  echo "==> fetching $* from $suite"
  apt-get "${opts[@]}" update
  # As root, apt warns that its _apt user cannot write here; the download is fine.
  (cd "$dest/debs" && apt-get "${opts[@]}" download "$@" 2>&1 | grep -v "unsandboxed as root" >&2 || true)
  ls "$dest"/debs/*.deb >/dev/null
  local deb
  for deb in "$dest"/debs/*.deb; do dpkg -x "$deb" "$dest/root"; done
}

# hiredis 1.2.0 (with hiredis_ssl).
hi="$prefix/hiredis"
if [ ! -f "$hi/lib/pkgconfig/hiredis.pc" ]; then
  rm -rf "$hi"
  fetch trixie "$hi" libhiredis-dev libhiredis1.1.0
  multi=$(ls -d "$hi"/root/usr/lib/*-linux-gnu | head -n1)
  mkdir -p "$hi/lib/pkgconfig"
  ln -sfn "$hi/root/usr/include" "$hi/include"
  for so in "$multi"/libhiredis*; do ln -sfn "$so" "$hi/lib/"; done
  # The .pc files name /usr; point them at the unpacked tree.
  for pc in "$multi"/pkgconfig/hiredis*.pc; do
    sed -E "s|^prefix=.*|prefix=$hi|; s|^libdir=.*|libdir=\${prefix}/lib|; s|^includedir=.*|includedir=\${prefix}/include|; s|^pkgincludedir=.*|pkgincludedir=\${includedir}/hiredis|" \
      "$pc" >"$hi/lib/pkgconfig/$(basename "$pc")"
  done
fi

# valkey-server 8 (its libraries are those redis-server already pulled in).
vk="$prefix/valkey"
if [ ! -x "$vk/usr/bin/valkey-server" ]; then
  rm -rf "$vk"
  fetch bookworm-backports "$vk" valkey-server valkey-tools
  ln -sfn "$vk/root/usr" "$vk/usr"
fi
echo "==> extra packages under $prefix"
