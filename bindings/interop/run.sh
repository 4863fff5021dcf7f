#!/usr/bin/env bash
# bindings/interop/run.sh: cross-language interop test.  Starts 3 redis-server
# masters on free loopback ports (stopped by PID at exit), then, on shared
# resources, with C (the `redlock` CLI from the build), Node, Go, Rust and
# Python contenders (each one whose toolchain is present; the others print a
# SKIP line):
#   1. a C holder, whose value carries an owner label (--owner): every other
#      language is refused, and `redlock status` shows the label;
#   2. a holder in each language: every other language, C included, is refused,
#      and `redlock status` sees it held by a quorum with no owner label;
#   3. sequential acquisitions, two rounds over all languages: the fencing
#      tokens strictly increase across languages;
#   4. all languages (twice each) wait for one resource at once: the hold
#      intervals never overlap and the tokens increase in acquisition order.
# Contender protocol (contender.js, contender.py, Go cmd/interop-contender,
# Rust examples/interop_contender):  try|wait RESOURCE TTL_MS HOLD_MS [WAIT_MS]
# prints "ACQUIRED <fence> <unix ms>" then "RELEASING <unix ms>" (exit 0), or
# "LOCKED" (exit 75), or "ERROR <name>" (exit 1).  HOLD_MS "stdin": hold
# until a line or EOF on standard input.  Masters: REDLOCK_NODES.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"
redlock_need_redis
redlock_ensure_library

passed=0
failed=0
ok() { echo "  ok: $*"; passed=$((passed + 1)); }
bad() { echo "  FAIL: $*"; failed=$((failed + 1)); }

tmp=$(mktemp -d /tmp/redlock-interop.XXXXXX)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -CONT "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- masters ------------------------------------------------------------------------

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Succeeds once the server on port $1 is process $2: INFO's process_id, so a
# foreign server that took the port first is never mistaken for ours.
redis_is() {
  local line="" found=1
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'INFO server\r\n' >&3
  while read -r -t 1 line <&3; do
    [ "${line%$'\r'}" = "process_id:$2" ] && { found=0; break; }
    [ "${line%$'\r'}" = "" ] && break
  done
  exec 3>&-
  return $found
}

nodes=()
for i in 1 2 3; do
  started=""
  for _attempt in 1 2 3 4 5; do # the port can be taken before redis binds it
    for _ in $(seq 50); do
      port=$((20000 + RANDOM % 30000))
      port_in_use "$port" || break
    done
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
      >"$tmp/redis-$i.log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
      redis_is "$port" "$pid" 2>/dev/null && { started=1; break; }
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    [ -n "$started" ] && break
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  [ -n "$started" ] || { echo "FAIL: redis-server did not start (last port $port)"; cat "$tmp/redis-$i.log"; exit 1; }
  pids+=($pid)
  nodes+=("redis://127.0.0.1:$port")
done
REDLOCK_NODES=$(IFS=,; echo "${nodes[*]}")
export REDLOCK_NODES
echo "==> interop: masters $REDLOCK_NODES"

# ---- contenders ---------------------------------------------------------------------

langs=()
cli=$REDLOCK_LIB_DIR/tools/redlock
if [ -x "$cli" ]; then
  langs+=(c)
else
  echo "FAIL: $cli not found (build with -DREDLOCK_BUILD_TOOLS=ON)"
  exit 1
fi

if command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 18 ]; then
  if [ ! -d "$REDLOCK_ROOT/bindings/node/node_modules/koffi" ]; then
    (cd "$REDLOCK_ROOT/bindings/node" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  langs+=(node)
else
  echo "SKIP: interop: node contender: Node.js >= 18 not found"
fi

if command -v go >/dev/null 2>&1; then
  echo "==> building the Go contender"
  (redlock_pkg_config_path && redlock_go_cache_key && cd "$REDLOCK_ROOT/bindings/go" &&
    CGO_ENABLED=1 GOPROXY=off GOTOOLCHAIN=local \
    go build -o "$tmp/go-contender" ./cmd/interop-contender)
  langs+=(go)
else
  echo "SKIP: interop: go contender: go toolchain not found"
fi

if ! command -v cargo >/dev/null 2>&1 && [ -x "${HOME:-/root}/.cargo/bin/cargo" ]; then
  export PATH="${HOME:-/root}/.cargo/bin:$PATH"
fi
if command -v cargo >/dev/null 2>&1; then
  echo "==> building the Rust contender"
  (cd "$REDLOCK_ROOT/bindings/rust" && CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} \
    cargo build --offline --quiet -p redlock --example interop_contender)
  rust_bin=$REDLOCK_ROOT/bindings/rust/target/debug/examples/interop_contender
  langs+=(rust)
else
  echo "SKIP: interop: rust contender: cargo not found"
fi

if command -v python3 >/dev/null 2>&1; then
  langs+=(python)
else
  echo "SKIP: interop: python contender: python3 not found"
fi
echo "==> interop: languages ${langs[*]}"

ms_to_s() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }

# contend LANG try|wait RESOURCE TTL_MS HOLD_MS [WAIT_MS]
contend() {
  local lang=$1
  shift
  case $lang in
    c)
      local mode=$1 res=$2 ttl=$3 hold=$4 wait=${5:-0} rc=0
      local w=()
      [ "$mode" = wait ] && w=(--wait "${wait}ms")
      local hold_cmd="read -r _ || true"
      [ "$hold" = stdin ] || hold_cmd="sleep $(ms_to_s "$hold")"
      "$cli" run --no-quarantine -q --owner interop-c --ttl "${ttl}ms" "${w[@]}" "$res" -- sh -c \
        'echo "ACQUIRED $REDLOCK_FENCE $(date +%s%3N)"; '"$hold_cmd"'; echo "RELEASING $(date +%s%3N)"' || rc=$?
      [ "$rc" -eq 75 ] && echo LOCKED
      return "$rc"
      ;;
    node) node "$here/contender.js" "$@" ;;
    go) "$tmp/go-contender" "$@" ;;
    rust) "$rust_bin" "$@" ;;
    python) PYTHONPATH="$REDLOCK_ROOT/bindings/python" PYTHONDONTWRITEBYTECODE=1 python3 "$here/contender.py" "$@" ;;
  esac
}

# The holders do not extend their lock: its TTL must outlast the refusals of
# every other language, whose start-up (pyenv's python, node) takes seconds
# each on a loaded 2-core machine.  The holder is released explicitly, so a
# long TTL costs nothing.
holder_ttl_ms=60000

# Starts LANG holding RESOURCE in the background until release_holder (its
# standard input is a FIFO that we close); waits until it holds.  Sets
# holder_pid and holder_out.
start_holder() {
  local lang=$1 res=$2
  holder_out=$tmp/holder-$lang-$res.out
  rm -f "$tmp/hold.fifo"
  mkfifo "$tmp/hold.fifo"
  contend "$lang" try "$res" "$holder_ttl_ms" stdin <"$tmp/hold.fifo" >"$holder_out" 2>&1 &
  holder_pid=$!
  exec 7>"$tmp/hold.fifo" # the holder reads EOF when we close it
  for _ in $(seq 300); do
    grep -q '^ACQUIRED' "$holder_out" && return 0
    kill -0 "$holder_pid" 2>/dev/null || break
    sleep 0.05
  done
  exec 7>&-
  bad "$lang could not take $res: $(cat "$holder_out")"
  return 1
}

# Every language in "$@" but the holder must be refused while it holds.
expect_refused() {
  local holder=$1 res=$2
  shift 2
  local lang out rc
  for lang in "$@"; do
    [ "$lang" = "$holder" ] && continue
    rc=0
    out=$(contend "$lang" try "$res" 5000 0 2>&1) || rc=$?
    if grep -q '^RELEASING' "$holder_out"; then
      bad "$holder released $res before $lang was tried"
    elif [ "$rc" -eq 75 ] && [ "$out" = LOCKED ]; then
      ok "$holder holds $res: $lang refused"
    else
      # Say whether the holder's TTL had run out (a run too slow to judge)
      # or the lock was still valid (two holders).
      local held_ms got_ms
      held_ms=$(sed -n 's/^ACQUIRED [0-9]* \([0-9]*\)$/\1/p' "$holder_out")
      got_ms=$(printf '%s\n' "$out" | sed -n 's/^ACQUIRED [0-9]* \([0-9]*\)$/\1/p')
      if [ -n "$held_ms" ] && [ -n "$got_ms" ] && [ $((got_ms - held_ms)) -ge "$holder_ttl_ms" ]; then
        bad "$holder holds $res: $lang acquired $((got_ms - held_ms)) ms after it, past its TTL (too slow a run): $out"
      else
        bad "$holder holds $res: $lang got exit $rc: $out"
      fi
    fi
  done
}

# The view `redlock status --json` reads (redlock_inspect) of a held RESOURCE
# says it is held by a quorum, with owner OWNER ("null": none).
expect_view() {
  local holder=$1 res=$2 owner=$3 out
  out=$("$cli" status --json "$res" 2>&1) || true
  if printf '%s' "$out" | grep "\"inspect\":{[^}]*\"held\":true,\"agreed\":true,\"value\":\"[^\"]*\",\"owner\":$owner," >/dev/null; then
    ok "$holder holds $res: status sees it held, owner $owner"
  else
    bad "$holder holds $res: status --json does not show it held with owner $owner: $out"
  fi
}

finish_holder() {
  local lang=$1 rc=0
  exec 7>&-
  wait "$holder_pid" || rc=$?
  if [ "$rc" -eq 0 ] && grep -q '^RELEASING' "$holder_out"; then
    ok "$lang holder released"
  else
    bad "$lang holder exited $rc: $(cat "$holder_out")"
  fi
}

SECONDS=0
echo "==> 1. a C holder; every other language is refused"
if start_holder c interop:c-holds; then
  expect_refused c interop:c-holds "${langs[@]}"
  expect_view c interop:c-holds '"interop-c"'
  finish_holder c
fi

echo "==> 2. a holder in each language; every other language (C included) is refused"
for holder in "${langs[@]}"; do
  [ "$holder" = c ] && continue
  if start_holder "$holder" "interop:$holder-holds"; then
    expect_refused "$holder" "interop:$holder-holds" "${langs[@]}"
    expect_view "$holder" "interop:$holder-holds" null
    finish_holder "$holder"
  fi
done

echo "==> 3. sequential acquisitions: fencing tokens strictly increase across languages"
last=0
seq_ok=1
for round in 1 2; do
  for lang in "${langs[@]}"; do
    rc=0
    out=$(contend "$lang" try interop:sequence 5000 0 2>&1) || rc=$?
    fence=$(printf '%s\n' "$out" | awk '/^ACQUIRED/ {print $2}')
    if [ "$rc" -ne 0 ] || [ -z "$fence" ]; then
      bad "round $round: $lang could not take a free lock: exit $rc: $out"
      seq_ok=0
    elif [ "$(printf '%s\n%s\n' "$last" "$fence" | sort -n | tail -n1)" != "$fence" ] || [ "$fence" = "$last" ]; then
      bad "round $round: $lang got fence $fence after $last"
      seq_ok=0
    else
      echo "     $lang: fence $fence"
      last=$fence
    fi
  done
done
[ "$seq_ok" = 1 ] && ok "fence tokens strictly increased over $((2 * ${#langs[@]})) acquisitions"

echo "==> 4. every language twice at once, waiting for one resource: no overlap, tokens in order"
cpids=()
n=0
for rep in 1 2; do
  for lang in "${langs[@]}"; do
    n=$((n + 1))
    contend "$lang" wait interop:race 5000 150 20000 >"$tmp/race-$n-$lang.out" 2>&1 &
    cpids+=($!)
  done
done
race_rc=0
for pid in "${cpids[@]}"; do
  wait "$pid" || race_rc=1
done
if [ "$race_rc" -ne 0 ]; then
  bad "a waiting contender failed: $(grep -L '^RELEASING' "$tmp"/race-*.out | xargs -r cat)"
fi
# lang fence start end, sorted by start
for f in "$tmp"/race-*.out; do
  lang=${f##*-}
  lang=${lang%.out}
  awk -v l="$lang" '/^ACQUIRED/ {fe=$2; s=$3} /^RELEASING/ {e=$2} END {if (s != "") print l, fe, s, e}' "$f"
done | sort -k3,3n >"$tmp/race.tsv"
if [ "$(wc -l <"$tmp/race.tsv")" -ne "$n" ]; then
  bad "only $(wc -l <"$tmp/race.tsv") of $n contenders acquired"
fi
if awk '
  NR > 1 && ($3 < prev_end) { printf "  overlap: %s took it at %d, %s released at %d\n", $1, $3, prev_lang, prev_end; bad = 1 }
  NR > 1 && ($2 + 0 <= prev_fence + 0) { printf "  fence %s (%s) after %s (%s)\n", $2, $1, prev_fence, prev_lang; bad = 1 }
  { prev_end = $4; prev_fence = $2; prev_lang = $1 }
  END { exit bad }' "$tmp/race.tsv"; then
  ok "$n concurrent holders in $(sort -u -k1,1 "$tmp/race.tsv" | wc -l) languages never overlapped; fences increased in order"
else
  bad "concurrent holders overlapped or fences out of order"
  cat "$tmp/race.tsv"
fi

echo "==> interop: phases took ${SECONDS}s"
echo "interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
