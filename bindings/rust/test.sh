#!/usr/bin/env bash
# bindings/rust/test.sh: the Rust binding against real redis-server masters,
# offline (no crates registry):
#   1. cargo test of redlock-sys and redlock, linked through pkg-config: the
#      build directory's redlock-uninstalled.pc (PKG_CONFIG_PATH);
#   2. cargo package of both crates, each verified by building the packaged
#      sources;
#   3. a program outside the workspace that depends on the redlock crate
#      (linked statically, and shared with its own rpath from
#      DEP_REDLOCK_RPATH) takes a lock on a local master with no
#      LD_LIBRARY_PATH.
# REDLOCK_LIB_DIR, when set, overrides pkg-config (build.rs).  Prints
# "SKIP: rust: ..." and exits 0 without cargo.  --build-only compiles the
# workspace's tests (cargo test --no-run) and runs nothing (scripts/test.sh
# does it in the background while the C tests run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"

if ! command -v cargo >/dev/null 2>&1 && [ -x "${HOME:-/root}/.cargo/bin/cargo" ]; then
  export PATH="${HOME:-/root}/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || redlock_skip rust "cargo not found (rustup, or apt-get install cargo)"
command -v pkg-config >/dev/null 2>&1 || { echo "FAIL: pkg-config not found" >&2; exit 1; }
redlock_need_redis
user_lib_dir=${REDLOCK_LIB_DIR:-}
redlock_ensure_library
build=$REDLOCK_LIB_DIR
if [ ! -e "$build/redlock-uninstalled.pc" ]; then
  # A build directory configured before the file existed.
  cmake -S "$REDLOCK_ROOT" -B "$build" >/dev/null
fi
export PKG_CONFIG_PATH="$build${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[ -n "$user_lib_dir" ] || unset REDLOCK_LIB_DIR
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
echo "==> pkg-config redlock: $(pkg-config --path redlock)"

cd "$here"
if [ "${1:-}" = --build-only ]; then
  echo "==> cargo test --offline --no-run (bindings/rust: compiled, not run)"
  cargo test --offline --no-run
  exit 0
fi
echo "==> cargo test --offline (bindings/rust, $(cargo --version))"
cargo test --offline

echo "==> cargo package --offline --workspace (verified)"
# With a CARGO_HOME of its own: the verification extracts the packaged
# redlock-sys into CARGO_HOME/registry/src/<a hash of this workspace's
# path>/ and never extracts the same version there again, so with the
# user's CARGO_HOME a redlock that uses something new of redlock-sys would
# be verified against the redlock-sys of an earlier run from this directory.
pkg_home=$(mktemp -d /tmp/redlock-cargo-home.XXXXXX)
trap 'rm -rf "$pkg_home"' EXIT
CARGO_HOME=$pkg_home cargo package --offline --workspace --allow-dirty --quiet
rm -rf "$pkg_home"
for c in redlock-sys redlock; do
  f=target/package/$c-0.1.0.crate
  [ -s "$f" ] || { echo "FAIL: $f not written" >&2; exit 1; }
  echo "    $f: $(tar tzf "$f" | wc -l) files"
done

echo "==> a program depending on the redlock crate, run without LD_LIBRARY_PATH"
work=$(mktemp -d)
rpid=
cleanup() {
  [ -z "$rpid" ] || kill "$rpid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
rpid=$!
mkdir -p "$work/app/src"
cat >"$work/app/Cargo.toml" <<EOF
[package]
name = "redlock-consumer"
version = "0.0.0"
edition = "2021"
publish = false

[features]
static = ["redlock/static"]

[dependencies]
redlock = { path = "$here/redlock" }
# Only for DEP_REDLOCK_RPATH in build.rs (a shared libredlock outside the
# loader's path): Cargo gives a build script's metadata to direct dependents.
redlock-sys = { path = "$here/redlock-sys" }

[workspace]
EOF
cat >"$work/app/build.rs" <<'EOF'
fn main() {
    if let Ok(dirs) = std::env::var("DEP_REDLOCK_RPATH") {
        for d in dirs.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
        }
    }
}
EOF
cat >"$work/app/src/main.rs" <<'EOF'
use std::time::Duration;
fn main() -> Result<(), redlock::Error> {
    let uri = std::env::args().nth(1).expect("master URI");
    let client = redlock::Client::builder()
        .node(uri)
        .quarantine(false)
        .retry(50, Duration::from_millis(100), Duration::ZERO)
        .open()?;
    let lock = client.lock("consumer", Duration::from_secs(5))?;
    println!("locked {} (libredlock {})", lock.resource(), redlock::version());
    lock.unlock()
}
EOF
# static-syslibdir: the library's directory is a system one for pkg-config
# (PKG_CONFIG_SYSTEM_LIBRARY_PATH), which then prints no -L for it, as with
# the libredlock-dev package in /usr/lib/<multiarch>: build.rs must still
# find libredlock.a.
for mode in static static-syslibdir shared; do
  feat=()
  sys=()
  [ "$mode" = shared ] || feat=(--features static)
  if [ "$mode" = static-syslibdir ]; then
    sys=(PKG_CONFIG_SYSTEM_LIBRARY_PATH="$build")
    if env "${sys[@]}" pkg-config --libs redlock | grep -- "-L$build" >/dev/null; then
      echo "FAIL: pkg-config still prints -L$build with PKG_CONFIG_SYSTEM_LIBRARY_PATH" >&2
      exit 1
    fi
  fi
  (cd "$work/app" && env "${sys[@]}" cargo build --offline --quiet "${feat[@]}")
  bin=$work/app/target/debug/redlock-consumer
  if [ "$mode" != shared ] && readelf -d "$bin" | grep 'libredlock\.so' >/dev/null; then
    echo "FAIL: the static build loads libredlock.so" >&2
    exit 1
  fi
  echo -n "    $mode: "
  env -u LD_LIBRARY_PATH "$bin" "redis://127.0.0.1:$port"
  rm -f "$bin"
done
