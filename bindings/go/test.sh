#!/usr/bin/env bash
# bindings/go/test.sh: go vet + go test of the cgo package against real
# redis-server masters.  Prints "SKIP: go: ..." and exits 0 without a Go
# toolchain (Debian: apt-get install golang-go).  REDLOCK_GO_RACE=1 adds -race.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"

command -v go >/dev/null 2>&1 || redlock_skip go "go toolchain not found (apt-get install golang-go)"
command -v cc >/dev/null 2>&1 || redlock_skip go "no C compiler for cgo (apt-get install build-essential)"
redlock_need_redis
redlock_ensure_library

export CGO_ENABLED=1
export CGO_CFLAGS="-I$REDLOCK_ROOT/include ${CGO_CFLAGS:-}"
export CGO_LDFLAGS="-L$REDLOCK_LIB_DIR -Wl,-rpath,$REDLOCK_LIB_DIR ${CGO_LDFLAGS:-}"
export GOPROXY=off GOTOOLCHAIN=local # no module downloads, ever
[ -n "${HOME:-}" ] || export GOCACHE=${GOCACHE:-/tmp/redlock-go-cache}

cd "$here"
echo "==> go vet + go test (bindings/go, $(go version | awk '{print $3}'))"
go vet ./...
race=()
[ "${REDLOCK_GO_RACE:-0}" = 1 ] && race=(-race)
go test -count=1 "${race[@]}" -v ./...
