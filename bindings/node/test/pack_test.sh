#!/usr/bin/env bash
# bindings/node/test/pack_test.sh TGZ: installs the npm tarball that
# scripts/package.sh writes (dist/redlock-c-<ver>.tgz) as a new user would,
# and takes a lock with it against a local redis-server, with no environment
# variable: the library must be the package's prebuilt copy, and its hiredis
# and libuv the copies beside it.  Three installs, each checked the same way:
#   1. `npm install TGZ` in a fresh project;
#   2. a later plain `npm install` in that project (an `--install-links`
#      install of a folder became a symlink there, without koffi);
#   3. `npm ci` from that project's lockfile, in a copy without node_modules.
# Needs node, npm (and the npm registry, for koffi) and redis-server.  npm's
# cache is a throwaway one under the test's directory unless npm_config_cache
# is set.  Called by `scripts/package.sh --check`.
set -euo pipefail

[ $# = 1 ] && [ -f "$1" ] || { echo "usage: pack_test.sh dist/redlock-c-<ver>.tgz" >&2; exit 2; }
tgz=$(realpath "$1")
for tool in node npm redis-server; do
  command -v "$tool" >/dev/null 2>&1 || { echo "FAIL: pack_test: $tool not found" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/redlock-npm-pack.XXXXXX)
redis_pid=""
cleanup() {
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# One master on a Unix socket: no port to race for.
sock="$tmp/redis.sock"
redis-server --port 0 --unixsocket "$sock" --save '' --appendonly no --dir "$tmp" \
  --daemonize no >"$tmp/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 100); do
  [ -S "$sock" ] && redis-cli -s "$sock" ping >/dev/null 2>&1 && break
  kill -0 "$redis_pid" 2>/dev/null || { cat "$tmp/redis.log" >&2; echo "FAIL: pack_test: redis-server exited" >&2; exit 1; }
  sleep 0.05
done
redis-cli -s "$sock" ping >/dev/null || { echo "FAIL: pack_test: redis-server not answering on $sock" >&2; exit 1; }

export npm_config_cache=${npm_config_cache:-$tmp/npm-cache}
npm_quiet=(--no-audit --no-fund --loglevel=error)

# The user's program: a lock and its release, plus the checks that it ran
# on what the tarball carries.
cat >"$tmp/use.js" <<'EOF'
'use strict';
const fs = require('fs');
const path = require('path');
const { Client, libraryPath } = require('redlock-c');

(async () => {
  const pkg = path.dirname(require.resolve('redlock-c/package.json'));
  if (fs.lstatSync(path.join(process.cwd(), 'node_modules', 'redlock-c')).isSymbolicLink()) {
    throw new Error('node_modules/redlock-c is a symlink');
  }
  const prebuilt = path.join(pkg, 'prebuilt', `${process.platform}-${process.arch}`);
  if (libraryPath() !== path.join(prebuilt, 'libredlock.so.0')) {
    throw new Error(`loaded ${libraryPath()}, not the prebuilt copy in ${prebuilt}`);
  }
  const client = await Client.open([`unix://${process.argv[2]}`], { quarantine: false });
  const lock = await client.lock('pack:test', { ttlMs: 5000 });
  const value = lock.value;
  await lock.unlock();
  await client.close();
  // hiredis and libuv come from beside libredlock (its RUNPATH is $ORIGIN).
  const maps = fs.readFileSync('/proc/self/maps', 'utf8');
  for (const lib of ['libredlock.so', 'libhiredis.so', 'libuv.so']) {
    const from = [...new Set(maps.split('\n').filter((l) => l.includes('/' + lib)).map((l) => l.split(/\s+/).pop()))];
    if (from.length !== 1 || path.dirname(from[0]) !== prebuilt) {
      throw new Error(`${lib} mapped from ${JSON.stringify(from)}, not ${prebuilt}`);
    }
  }
  console.log(`    locked pack:test (value ${value}) with ${path.relative(process.cwd(), libraryPath())}`);
})().catch((e) => { console.error('FAIL:', e.message); process.exit(1); });
EOF

# The same user as an ES module: named imports of a CommonJS package work
# only for the names Node can read from its module.exports literal.
cat >"$tmp/use.mjs" <<'EOF'
import { Client, LockedError, NoQuorumError, WaitTimeoutError, codes } from 'redlock-c';

const client = await Client.open([`unix://${process.argv[2]}`], { quarantine: false });
const lock = await client.lock('pack:test:esm', { ttlMs: 5000 });
const other = await Client.open([`unix://${process.argv[2]}`], { quarantine: false, retryCount: 0 });
try {
  await other.tryLock('pack:test:esm', { ttlMs: 5000 });
  throw new Error('tryLock of a held lock succeeded');
} catch (e) {
  if (!(e instanceof LockedError) || e.errno !== codes.ELOCKED) throw e;
} finally {
  await other.close();
}
await lock.unlock();
await client.close();
if (typeof NoQuorumError !== 'function' || typeof WaitTimeoutError !== 'function') {
  throw new Error('error classes missing from the ES exports');
}
console.log("    ES module: import { LockedError } from 'redlock-c' works");
EOF

# The same user's test, on the test kit the tarball carries
# (redlock-c/testing: fake masters in the process, no server).
cat >"$tmp/kit.js" <<'EOF'
'use strict';
const { Client, LockedError, NoQuorumError } = require('redlock-c');
const { FakeMasters } = require('redlock-c/testing');

(async () => {
  const fakes = new FakeMasters(3);
  const opts = { quarantine: false, retryCount: 0 };
  const a = await Client.open(fakes.nodes, opts);
  const b = await Client.open(fakes.nodes, opts);
  try {
    const held = await a.lock('pack:kit', { ttlMs: 10000 });
    await b.tryLock('pack:kit', { ttlMs: 10000 }).then(
      () => { throw new Error('a held lock was granted twice'); },
      (e) => { if (!(e instanceof LockedError)) throw e; });
    await held.unlock();
    fakes.kill(0);
    fakes.kill(1);
    await b.lock('pack:kit', { ttlMs: 10000 }).then(
      () => { throw new Error('granted with two fakes of three down'); },
      (e) => { if (!(e instanceof NoQuorumError)) throw e; });
  } finally {
    await a.close();
    await b.close();
    fakes.stop();
  }
  console.log("    test kit: require('redlock-c/testing') works");
})().catch((e) => { console.error('FAIL:', e.message); process.exit(1); });
EOF

run() { # DIR: the program, in the project, with no variable that could point at a library
  cp "$tmp/use.js" "$1/use.js"
  cp "$tmp/use.mjs" "$1/use.mjs"
  cp "$tmp/kit.js" "$1/kit.js"
  (cd "$1" && env -u REDLOCK_LIBRARY -u REDLOCK_LIB_DIR -u LD_LIBRARY_PATH -u NODE_PATH \
    node use.js "$sock")
  (cd "$1" && env -u REDLOCK_LIBRARY -u REDLOCK_LIB_DIR -u LD_LIBRARY_PATH -u NODE_PATH \
    node use.mjs "$sock")
  (cd "$1" && env -u REDLOCK_LIBRARY -u REDLOCK_LIB_DIR -u LD_LIBRARY_PATH -u NODE_PATH \
    node kit.js)
}

echo "==> pack_test: npm install $(basename "$tgz") in a fresh project"
mkdir "$tmp/app"
(cd "$tmp/app" && npm init -y >/dev/null && npm install "${npm_quiet[@]}" "$tgz")
grep -q '"redlock-c": "file:' "$tmp/app/package.json" ||
  { echo "FAIL: pack_test: package.json does not record the tarball" >&2; exit 1; }
run "$tmp/app"

echo "==> pack_test: a later plain npm install"
(cd "$tmp/app" && npm install "${npm_quiet[@]}")
run "$tmp/app"

echo "==> pack_test: npm ci from the lockfile, in a copy without node_modules"
mkdir "$tmp/app2"
cp "$tmp/app/package.json" "$tmp/app/package-lock.json" "$tmp/app2/"
# The dependency is recorded relative to the project: the copy sits beside it.
(cd "$tmp/app2" && npm ci "${npm_quiet[@]}")
run "$tmp/app2"

echo "pack_test: 3 passed, 0 failed"
