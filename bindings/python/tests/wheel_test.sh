#!/usr/bin/env bash
# bindings/python/tests/wheel_test.sh [--sdist] DIST WORKDIR
# The wheel in DIST (scripts/package.sh writes it) installs with
# `pip install --no-index` into a fresh venv of each CPython on this machine
# that the package supports (pyenv's 3.8, 3.12 and 3.13, Debian's
# /usr/bin/python3; REDLOCK_WHEEL_PYTHONS="PY ..." chooses others) and, with
# no environment variable, loads the libredlock it carries and takes and
# releases a real lock (tests/wheel_check.py) against a redis-server this
# script starts on loopback and stops by PID.
# --sdist: also builds the sdist with pip (CMake: cmake, a C compiler,
# pkg-config, libhiredis-dev, libuv1-dev) into a venv of the first Python
# that passed, and runs the same check on it.
# A Python that is not there is skipped with a line saying so; one that is
# there and fails fails the test.  None at all: a skip, except under CI=true,
# where it fails.  Called by scripts/package.sh --check.
set -euo pipefail
sdist=0
if [ "${1:-}" = "--sdist" ]; then sdist=1; shift; fi
[ $# -eq 2 ] || { echo "usage: wheel_test.sh [--sdist] DIST WORKDIR" >&2; exit 2; }
dist=$(cd "$1" && pwd) work=$2
here=$(cd "$(dirname "$0")" && pwd)

wheels=("$dist"/redlock_c-*-py3-none-manylinux_*.whl)
[ -f "${wheels[0]}" ] || { echo "FAIL: no redlock_c manylinux wheel in $dist" >&2; exit 1; }
[ ${#wheels[@]} -eq 1 ] || { echo "FAIL: more than one wheel in $dist" >&2; exit 1; }
wheel=${wheels[0]}
command -v redis-server >/dev/null 2>&1 || { echo "FAIL: redis-server not found" >&2; exit 1; }

pythons=()
if [ -n "${REDLOCK_WHEEL_PYTHONS:-}" ]; then
  read -r -a pythons <<<"$REDLOCK_WHEEL_PYTHONS"
else
  pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
  for minor in 3.8 3.12 3.13; do
    # The newest patch release of each minor version pyenv has.
    found=$(ls -d "$pyenv_root"/versions/"$minor".* 2>/dev/null | sort -V | tail -n1 || true)
    if [ -n "$found" ] && [ -x "$found/bin/python" ]; then
      pythons+=("$found/bin/python")
    else
      echo "SKIP: no pyenv Python $minor in $pyenv_root/versions"
    fi
  done
  pythons+=(/usr/bin/python3)
fi

rm -rf "$work"
mkdir -p "$work"
cleanup() {
  if [ -n "${redis_pid:-}" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

# One redis-server on a free loopback port (retried if the port is taken
# before it binds), ready when it answers PING; 10 s per try.
start_redis() {
  local try port deadline
  for try in 1 2 3 4 5; do
    port=$(/usr/bin/env python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      >"$work/redis.log" 2>&1 &
    redis_pid=$!
    deadline=$((SECONDS + 10))
    while [ $SECONDS -lt $deadline ] && kill -0 "$redis_pid" 2>/dev/null; do
      if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
        redis_port=$port
        return 0
      fi
      sleep 0.1
    done
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=
  done
  echo "FAIL: redis-server did not start" >&2
  cat "$work/redis.log" >&2
  exit 1
}
start_redis

# check PY VENV-NAME SOURCE: a venv of PY, SOURCE installed offline, the check.
check() {
  local py=$1 venv=$work/$2 src=$3
  rm -rf "$venv"
  "$py" -m venv "$venv" >"$venv.log" 2>&1 || { cat "$venv.log" >&2; return 1; }
  "$venv/bin/python" -m pip install -q --no-index --disable-pip-version-check "$src" \
    >>"$venv.log" 2>&1 || { cat "$venv.log" >&2; return 1; }
  (cd "$work" && env -u REDLOCK_LIBRARY -u LD_LIBRARY_PATH -u PYTHONPATH \
    "$venv/bin/python" "$here/wheel_check.py" "$redis_port")
}

passed=0 failed=0 first=
for py in "${pythons[@]}"; do
  if ! [ -x "$py" ]; then
    echo "SKIP: $py not found"
    continue
  fi
  if ! "$py" -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then
    echo "SKIP: $py is older than 3.8 or has no venv/ensurepip (Debian: python3-venv)"
    continue
  fi
  name=venv-$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  echo "==> ${wheel##*/} on $py"
  if check "$py" "$name" "$wheel"; then
    passed=$((passed + 1))
    first=${first:-$py}
  else
    echo "FAIL: the wheel on $py" >&2
    failed=$((failed + 1))
  fi
done

if [ $sdist = 1 ] && [ -n "$first" ]; then
  sdists=("$dist"/redlock_c-*.tar.gz)
  [ -f "${sdists[0]}" ] || { echo "FAIL: no redlock_c sdist in $dist" >&2; exit 1; }
  echo "==> ${sdists[0]##*/} built by pip (CMake) on $first"
  if check "$first" venv-sdist "${sdists[0]}"; then
    passed=$((passed + 1))
  else
    echo "FAIL: the sdist on $first" >&2
    failed=$((failed + 1))
  fi
fi

echo "wheel_test: $passed passed, $failed failed"
[ $failed = 0 ] || exit 1
if [ $passed = 0 ]; then
  if [ "${CI:-}" = true ]; then
    echo "FAIL: no Python could test the wheel (CI)" >&2
    exit 1
  fi
  echo "SKIP: no Python could test the wheel"
fi
