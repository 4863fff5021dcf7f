#!/usr/bin/env bash
# bindings/rust/test.sh: cargo test --offline of redlock-sys and redlock
# against real redis-server masters.  Prints "SKIP: rust: ..." and exits 0
# without cargo.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"

if ! command -v cargo >/dev/null 2>&1 && [ -x "${HOME:-/root}/.cargo/bin/cargo" ]; then
  export PATH="${HOME:-/root}/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || redlock_skip rust "cargo not found (rustup, or apt-get install cargo)"
redlock_need_redis
redlock_ensure_library

cd "$here"
echo "==> cargo test --offline (bindings/rust, $(cargo --version))"
CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} cargo test --offline
