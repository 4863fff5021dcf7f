#!/usr/bin/env bash
# scripts/deps.sh: installs, from Debian/Ubuntu packages, what is missing for
# one of two jobs.  Sourced:
#   REDLOCK_DEPS=demo source scripts/deps.sh   the demo (scripts/demo.sh): a
#       compiler, CMake, pkg-config, hiredis and libuv headers, redis-server
#   source scripts/deps.sh                     (REDLOCK_DEPS=test, the default)
#       scripts/test.sh and scripts/package.sh: the demo's, plus the tests',
#       the bindings' toolchains and the packaging tools
# README.md ("Dependencies") says why each package is needed.
set -euo pipefail

# What the demo needs: it builds the library and examples/demo.c (with the
# test harness's server launcher) and runs redis-server; nothing else.
redlock_missing_demo() {
  command -v cc >/dev/null 2>&1 || missing+=(build-essential)
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  [ -f /usr/include/hiredis/async.h ] || missing+=(libhiredis-dev)
  [ -f /usr/include/uv.h ] || missing+=(libuv1-dev)
}

# What the tests, the bindings' tests and the packages need on top.
redlock_missing_test() {
  redlock_missing_demo
  [ -f /usr/include/cmocka.h ] || missing+=(libcmocka-dev)
  # OpenSSL for TLS in the build against hiredis 1.2.0 (scripts/test.sh, pass 2).
  [ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
  command -v python3 >/dev/null 2>&1 || missing+=(python3) # the Python binding's tests
  # The Python package and wheel tests (venvs), and mypy --strict on the stubs.
  /usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
  /usr/bin/python3 -c 'import mypy' >/dev/null 2>&1 || missing+=(python3-mypy)
  # the test kit's pytest fixture (bindings/python/tests/kit_pytest.sh)
  /usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || missing+=(python3-pytest)
  # The Go, Node.js and Rust bindings' tests (bindings/run-all.sh).
  command -v go >/dev/null 2>&1 || missing+=(golang-go)
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  command -v cargo >/dev/null 2>&1 || [ -x "${HOME:-/root}/.cargo/bin/cargo" ] || missing+=(cargo)
  # promtool checks the Prometheus text of redlock_stats (tests/api/api_stats.c,
  # examples/metrics_http.c's test); Debian ships it in `prometheus` (the
  # server's service is not started by our tests).
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  command -v curl >/dev/null 2>&1 || missing+=(curl) # scrapes examples/metrics_http
  # The API reference (scripts/docs.sh) opened in headless Chromium, and its
  # man pages rendered with man and groff (tests/docs).
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v man >/dev/null 2>&1 || missing+=(man-db)
  # scripts/package.sh: CPack's DEB generator runs dpkg-shlibdeps for the
  # Depends and `file` to find what to strip.
  command -v dpkg-shlibdeps >/dev/null 2>&1 || missing+=(dpkg-dev)
  command -v file >/dev/null 2>&1 || missing+=(file)
}

redlock_need_packages() {
  local missing=()
  case "${REDLOCK_DEPS:-test}" in
    demo) redlock_missing_demo ;;
    test) redlock_missing_test ;;
    *) echo "scripts/deps.sh: REDLOCK_DEPS must be demo or test (got '$REDLOCK_DEPS')" >&2; exit 2 ;;
  esac
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "==> installing: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  # A redis-server package may try to start a system service; our tests and
  # demo start their own servers on free loopback ports and never use it.
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
redlock_need_packages

# CMake >= 3.25 is required (Debian 12 ships 3.25.1).
cmake_version=$(cmake --version | sed -n 1p | awk '{print $3}')
if [ "$(printf '%s\n3.25\n' "$cmake_version" | sort -V | sed -n 1p)" != "3.25" ]; then
  echo "CMake >= 3.25 is required (found $cmake_version)" >&2
  exit 1
fi
