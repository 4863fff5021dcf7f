#!/usr/bin/env bash
# scripts/fetch-extra.sh: fetches what Debian 12 lacks and the test suite runs
# against, without installing anything system-wide:
#   - hiredis 1.2.0 (libhiredis-dev + libhiredis1.1.0) from Debian's trixie suite
#   - valkey-server 8 from Debian's bookworm-backports suite
#   - valkey-server 9.1 and redis-server 8.0 from Debian's sid suite, with the
#     libraries they need down to sid's own glibc and dynamic loader (they
#     need a newer glibc than Debian 12's), all unpacked into one root
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
#   PREFIX/sid/bin/valkey-server, PREFIX/sid/bin/redis-server (and -cli):
#       scripts that exec sid's loader on the unpacked program (so the server
#       keeps the script's PID, and every argument is passed through)
# Idempotent: what is already there is not fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(realpath -m "${1:-build-extra}")
mkdir -p "$prefix"

# The Debian mirror the system already uses (deb822 or one-line format).
mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
  grep -E '/debian/?( |$)' | sed -E 's/^URIs: *//; s/^deb (\[[^]]*\] )?//; s/ .*//' | sed -n 1p || true)
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
  multi=$(ls -d "$hi"/root/usr/lib/*-linux-gnu | sed -n 1p)
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
# valkey-server 9.1 and redis-server 8.0 from sid.  The binaries need sid's
# glibc: they run under sid's dynamic loader with the unpacked libraries
# (never the system's, which are too old), through the wrappers below.
sid="$prefix/sid"
if [ ! -x "$sid/root/usr/bin/valkey-check-rdb" ] || [ ! -x "$sid/root/usr/bin/redis-check-rdb" ]; then
  rm -rf "$sid"
  fetch sid "$sid" valkey-server valkey-tools redis-server redis-tools libc6 libssl3t64 \
    libsystemd0 libjemalloc2 liblzf1 libatomic1 libcap2 libgcc-s1 libzstd1 liblz4-1 liblzma5 \
    libgcrypt20 libgpg-error0 libstdc++6
fi
loader=$(ls "$sid"/root/usr/lib/*-linux-gnu/ld-linux*.so.* 2>/dev/null | sed -n 1p || true)
if [ -z "$loader" ]; then
  echo "fetch-extra: no dynamic loader under $sid/root (libc6 not unpacked)" >&2
  exit 1
fi
mkdir -p "$sid/bin"
# valkey-server and redis-server are links to *-check-rdb, which chooses its
# role by the base name of argv[0]: --argv0 gives it the wrapper's own path
# (named like the server), so INFO's executable is the path the server was
# started by, as with a real binary.  The clis sit beside the servers, where
# the tests look for them (tests/support/cluster_harness: --cluster reshard).
# Written on every run (cheap), so they always name this prefix.
for prog in valkey-server redis-server valkey-cli redis-cli; do
  case $prog in
    *-server) target=${prog%-server}-check-rdb ;;
    *) target=$prog ;;
  esac
  cat >"$sid/bin/$prog.tmp" <<WRAPPER
#!/bin/sh
# $prog from Debian sid under sid's own loader and libraries
# (scripts/fetch-extra.sh).  exec: the program keeps this script's PID.
exec "$loader" --library-path "$(dirname "$loader")" \\
  --argv0 "\$0" "$sid/root/usr/bin/$target" "\$@"
WRAPPER
  chmod +x "$sid/bin/$prog.tmp"
  mv -f "$sid/bin/$prog.tmp" "$sid/bin/$prog"
  if ! "$sid/bin/$prog" --version >/dev/null; then
    echo "fetch-extra: $sid/bin/$prog --version fails" >&2
    exit 1
  fi
done
echo "==> extra packages under $prefix"
