#!/usr/bin/env bash
# bindings/go/test.sh: go vet + go test of the cgo package against real
# redis-server masters, then the same with -tags redlock_static (libredlock.a
# linked in: the test binary must not need libredlock.so.0).  The package
# finds the library by pkg-config: PKG_CONFIG_PATH names the build directory
# (its redlock-uninstalled.pc).  Prints "SKIP: go: ..." and exits 0 without
# a Go toolchain (Debian: apt-get install golang-go).  REDLOCK_GO_RACE=1 adds
# -race.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"

command -v go >/dev/null 2>&1 || redlock_skip go "go toolchain not found (apt-get install golang-go)"
command -v cc >/dev/null 2>&1 || redlock_skip go "no C compiler for cgo (apt-get install build-essential)"
redlock_need_redis
redlock_ensure_library

redlock_pkg_config_path # cgo's `#cgo pkg-config: redlock` finds this build's library
redlock_go_cache_key

export CGO_ENABLED=1
export GOPROXY=off GOTOOLCHAIN=local # no module downloads, ever
[ -n "${HOME:-}" ] || export GOCACHE=${GOCACHE:-/tmp/redlock-go-cache}

cd "$here"
echo "==> go vet + go test (bindings/go, $(go version | awk '{print $3}'))"
go vet ./...
race=()
[ "${REDLOCK_GO_RACE:-0}" = 1 ] && race=(-race)
go test -count=1 "${race[@]}" -v ./...

echo "==> -tags redlock_static: libredlock.a linked into the test binary"
go vet -tags redlock_static ./...
bin=$(mktemp -d /tmp/redlock-go-static.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go test -tags redlock_static -c -o "$bin/redlock.test" .
if readelf -d "$bin/redlock.test" | grep -q 'NEEDED.*libredlock'; then
  echo "FAIL: go: the redlock_static build still needs libredlock.so:"
  readelf -d "$bin/redlock.test" | grep NEEDED
  exit 1
fi
echo "    no libredlock.so in its NEEDED entries"
"$bin/redlock.test" -test.count=1 -test.v -test.run 'TestLockUnlock|TestConstantsMatchLibrary|TestCancel'
