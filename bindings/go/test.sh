#!/usr/bin/env bash
# bindings/go/test.sh: go vet + go test of the cgo package against real
# redis-server masters, then the same with -tags redlock_static (libredlock.a
# linked in: the test binary must not need libredlock.so.0).  The package
# finds the library by pkg-config: PKG_CONFIG_PATH names the build directory
# (its redlock-uninstalled.pc).  Prints "SKIP: go: ..." and exits 0 without
# a Go toolchain (Debian: apt-get install golang-go).  REDLOCK_GO_RACE=1 adds
# -race.  --build-only compiles the package and its tests into Go's build
# cache and runs nothing (scripts/test.sh does it in the background while
# the C tests run, so that this script's own compiles are cache hits).
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
if [ "${1:-}" = --build-only ]; then
  echo "==> go vet + go test -exec true (bindings/go: compiled, not run)"
  go vet ./...
  go test -count=1 -run '^$' -exec true ./...
  go vet -tags redlock_static ./...
  exit 0
fi
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
if readelf -d "$bin/redlock.test" | grep 'NEEDED.*libredlock' >/dev/null; then
  echo "FAIL: go: the redlock_static build still needs libredlock.so:"
  readelf -d "$bin/redlock.test" | grep NEEDED
  exit 1
fi
echo "    no libredlock.so in its NEEDED entries"
"$bin/redlock.test" -test.count=1 -test.v -test.run 'TestLockUnlock|TestConstantsMatchLibrary|TestCancel'

# The README's code, as a user would take it: each of its ```sh install
# blocks is run in a new module (REDLOCK_SRC pointed at this checkout)
# whose main.go is the README's whole program, and every other ```go block
# (a function body) is compiled in that module, in a function given the
# names the README says it has.
echo "==> README.md: the install blocks and every Go block build"
readme=$here/README.md
blocks=$(mktemp -d /tmp/redlock-go-readme.XXXXXX)
trap 'rm -rf "$bin" "$blocks"' EXIT
awk -v dir="$blocks" '
  /^ *```(sh|go) *$/ { lang = $0; sub(/^ *```/, "", lang); sub(/ *$/, "", lang);
                      indent = match($0, /[^ ]/) - 1; n++; f = sprintf("%s/%02d.%s", dir, n, lang); next }
  /^ *``` *$/ && f != "" { close(f); f = ""; next }
  f != "" { print substr($0, indent + 1) > f }
' "$readme"
main=$(grep -l '^package main' "$blocks"/*.go | sed -n 1p)
[ -n "$main" ] || { echo "FAIL: README.md has no whole Go program" >&2; exit 1; }
installs=0
for sh in $(grep -l 'REDLOCK_SRC=' "$blocks"/*.sh); do
  installs=$((installs + 1))
  mod=$blocks/mod-$(basename "$sh" .sh)
  mkdir -p "$mod"
  cp "$main" "$mod/main.go"
  {
    echo 'package main'
    echo 'import ("context"; "errors"; "fmt"; "log"; "time"; "redlock-c.invalid/redlock")'
    echo 'var _, _, _, _, _ = context.Background, errors.Is, fmt.Sprint, log.Print, time.Second'
    echo 'var _ = redlock.Open'
    i=0
    for g in "$blocks"/*.go; do
      [ "$g" = "$main" ] && continue
      grep -q '^func Test' "$g" && continue # a test of the user's (below)
      i=$((i + 1))
      echo "func readme$i(nodes []string, workDone <-chan struct{}, client *redlock.Client, ctx context.Context, stopWork func()) error {"
      cat "$g"
      echo "}"
    done
  } >"$mod/fragments.go"
  # Blocks that are a user's test functions (the test kit's examples) go
  # into a _test.go file of the same package, vetted with it.
  {
    echo 'package main'
    echo 'import ("context"; "errors"; "testing"; "time"; "redlock-c.invalid/redlock"; "redlock-c.invalid/redlock/redlocktest")'
    echo 'var _, _, _ = errors.Is, time.Second, testing.Short'
    echo 'var _ = redlock.Open'
    echo 'var _ = redlocktest.Start'
    echo 'var ctx = context.Background()'
    for g in "$blocks"/*.go; do
      grep -q '^func Test' "$g" && cat "$g"
    done
  } >"$mod/readme_test.go"
  (
    cd "$mod"
    go mod init example.com/readme >/dev/null 2>&1
    sed "s|^REDLOCK_SRC=.*|REDLOCK_SRC=$REDLOCK_ROOT|" "$sh" >install.sh
    bash -euo pipefail install.sh
    go vet ./...
  ) || { echo "FAIL: go: README.md's install block $(basename "$sh") does not build:" >&2; cat "$sh" >&2; exit 1; }
  echo "    $(basename "$sh"): $(grep -c '' "$sh") lines, then go vet: ok"
done
[ "$installs" -ge 2 ] || { echo "FAIL: go: README.md's install blocks (go.mod, go.work) not found" >&2; exit 1; }
