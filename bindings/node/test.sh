#!/usr/bin/env bash
# bindings/node/test.sh: the Node.js binding's tests (node:test) against real
# redis-server masters, and the interop test with node-redlock 5.  Prints
# "SKIP: node: ..." and exits 0 when Node.js >= 18 or npm is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"

command -v node >/dev/null 2>&1 || redlock_skip node "node not found (apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || redlock_skip node "npm not found (apt-get install npm)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || redlock_skip node "Node.js >= 18 needed, found $(node --version)"
redlock_need_redis
redlock_ensure_library

cd "$here"
if [ ! -e node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "==> npm ci (bindings/node)"
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "==> node --test (bindings/node, $(node --version), library $REDLOCK_LIBRARY)"
if [ -x node_modules/.bin/tsc ]; then
  node_modules/.bin/tsc -p test/tsconfig.json
  echo "==> index.d.ts type-checks (tsc --strict)"
fi
# The node-redlock interop runs on Valkey 9.1 too (our script-free path)
# when scripts/fetch-extra.sh fetched it.
valkey9="$here/../../build-extra/sid/bin/valkey-server"
if [ -z "${REDLOCK_TEST_VALKEY9:-}" ] && [ -x "$valkey9" ]; then
  export REDLOCK_TEST_VALKEY9="$valkey9"
fi
# test/*.test.mjs: the binding used from ES modules (named imports).
node --test test/*.test.js test/*.test.mjs
