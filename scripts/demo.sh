#!/usr/bin/env bash
# scripts/demo.sh: the README's first command.  Installs what is missing for
# the demo alone (scripts/deps.sh, REDLOCK_DEPS=demo: compiler, CMake,
# pkg-config, hiredis and libuv headers, redis-server), builds the library and
# the demo in build-demo/ (no tests, tools or benchmarks: they need more), and
# runs examples/demo.c: 5 local Redis masters (started and stopped by the demo
# itself), workers incrementing a counter under the lock, masters killed
# mid-run.
set -euo pipefail
cd "$(dirname "$0")/.."
REDLOCK_DEPS=demo source scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREDLOCK_BUILD_TESTS=OFF \
  -DREDLOCK_BUILD_TOOLS=OFF -DREDLOCK_BUILD_BENCH=OFF -DREDLOCK_BUILD_EXAMPLES=ON >/dev/null
cmake --build build-demo -j"$jobs" --target redlock-demo >/dev/null
exec ./build-demo/examples/redlock-demo "$@"
