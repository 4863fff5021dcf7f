#!/bin/sh
# scripts/check_layers.sh [SRC_DIR]: keeps the module graph of
# docs/architecture.md true.  Every module of src/ has a layer below; a file
# may include the headers of its own layer and of lower ones (and the public
# headers), never a higher layer's: calls go down, and what a lower module
# must tell a higher one goes up through a callback it was handed.  A module
# missing from the table fails too, so a new file gets a layer on purpose.
# Run by ctest as unit.layers; exits 1 and names each offending #include.
set -u
src=${1:-$(dirname "$0")/../src}

layer_of() {
  case "$1" in
  # 0: leaves (pure logic, data, small services, the OpenSSL wrapper): no
  #    connection or loop state of their own
  list | clock | timebase | backoff | random | strutil | log | why | forkguard | quorum | reply | resp | scripts | scripts_gen | \
    info | ptrset | pool | callmem | handle | names | resolve | uri | options | stats_core | errors | tls | \
    replypool) echo 0 ;;
  # 1: connections (hiredis on libuv: coalesced writes, reply caps, TLS hookup)
  conn) echo 1 ;;
  # 2: one connection's life cycle (resolve, connect, handshake, timeouts,
  #    backoff, reconnect) and one master's (its requests, on a link)
  link | node) echo 2 ;;
  # 3: rounds over the masters, release notifications, and the adapter that
  #    makes the nodes the rounds' transport
  round | notify | transport) echo 3 ;;
  # 4: the engine: calls, lock/primitive/election state machines, stats, and
  #    client.c, the composition root that hands the env down
  client | lock | prims | election | stats | calls | votes) echo 4 ;;
  # the public headers: anyone may include them
  redlock | redlock_uv) echo public ;;
  *) echo unknown ;;
  esac
}

status=0
for file in "$src"/*.c "$src"/*.h; do
  base=$(basename "$file")
  module=${base%.*}
  mine=$(layer_of "$module")
  if [ "$mine" = unknown ]; then
    echo "FAIL: $base: module '$module' has no layer in $0"
    status=1
    continue
  fi
  for inc in $(sed -n 's/^#include "\([a-z_0-9]*\)\.h".*/\1/p' "$file"); do
    theirs=$(layer_of "$inc")
    if [ "$theirs" = unknown ]; then
      echo "FAIL: $base includes $inc.h, which has no layer in $0"
      status=1
    elif [ "$theirs" != public ] && [ "$theirs" -gt "$mine" ]; then
      echo "FAIL: $base (layer $mine) includes $inc.h (layer $theirs): calls must only go down"
      status=1
    fi
  done
done
[ $status -eq 0 ] && echo "module layers: every #include in $src goes down or sideways"
exit $status
