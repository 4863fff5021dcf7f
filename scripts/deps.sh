#!/usr/bin/env bash
# scripts/deps.sh: installs what building and testing redlock-c needs, from
# Debian/Ubuntu packages, when it is missing.  Sourced by demo.sh and test.sh.
set -euo pipefail

redlock_need_packages() {
  local missing=()
  command -v cc >/dev/null 2>&1 || missing+=(build-essential)
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  [ -f /usr/include/hiredis/async.h ] || missing+=(libhiredis-dev)
  [ -f /usr/include/uv.h ] || missing+=(libuv1-dev)
  [ -f /usr/include/cmocka.h ] || missing+=(libcmocka-dev)
  command -v python3 >/dev/null 2>&1 || missing+=(python3) # the Python binding's tests
  # The Python package test: pip install --no-build-isolation into a venv.
  /usr/bin/python3 -c 'import setuptools, wheel, ensurepip' >/dev/null 2>&1 ||
    missing+=(python3-setuptools python3-wheel python3-venv)
  # The Go, Node.js and Rust bindings' tests (bindings/run-all.sh).
  command -v go >/dev/null 2>&1 || missing+=(golang-go)
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  command -v cargo >/dev/null 2>&1 || [ -x "${HOME:-/root}/.cargo/bin/cargo" ] || missing+=(cargo)
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
cmake_version=$(cmake --version | head -n1 | awk '{print $3}')
if [ "$(printf '%s\n3.25\n' "$cmake_version" | sort -V | head -n1)" != "3.25" ]; then
  echo "CMake >= 3.25 is required (found $cmake_version)" >&2
  exit 1
fi
