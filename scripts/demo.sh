#!/usr/bin/env bash
# scripts/demo.sh: the README's first command.  Installs what is missing,
# builds, and runs examples/demo.c: 5 local Redis masters (started and stopped
# by the demo itself), workers incrementing a counter under the lock, masters
# killed mid-run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs" --target redlock-demo >/dev/null
exec ./build/examples/redlock-demo "$@"
