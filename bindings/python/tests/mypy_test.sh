#!/usr/bin/env bash
# bindings/python/tests/mypy_test.sh: the stubs (redlock_c/*.pyi) pass
# `mypy --strict` on the examples (examples/*.py), and still reject what they
# must: an unknown option of AsyncClient.open and a TTL given as a string.
# Run by ctest as python_mypy; exit 77 (a skip) when no mypy is installed
# (Debian: python3-mypy, which scripts/deps.sh installs).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
mypy=()
for py in /usr/bin/python3 python3; do
  if "$py" -m mypy --version >/dev/null 2>&1; then mypy=("$py" -m mypy); break; fi
done
if [ ${#mypy[@]} -eq 0 ]; then
  echo "SKIP: mypy not found (apt-get install python3-mypy)"
  exit 77
fi
"${mypy[@]}" --version
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export MYPYPATH=$src
"${mypy[@]}" --strict --cache-dir "$cache" "$src/examples"

# Negative checks: the stubs are not so loose that anything passes.
cat >"$cache/wrong.py" <<'PY'
import redlock_c.aio
async def f() -> None:
    async with redlock_c.aio.AsyncClient.open(["redis://"], no_such_option=1) as c:
        async with c.lock("x", "ten seconds"):
            pass
PY
if out=$("${mypy[@]}" --strict --cache-dir "$cache" "$cache/wrong.py" 2>&1); then
  echo "FAIL: mypy accepted an unknown option and a str TTL" >&2
  exit 1
fi
for want in 'Unexpected keyword argument "no_such_option"' 'incompatible type "str"'; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: mypy did not say: $want" >&2; echo "$out" >&2; exit 1; }
done
echo "mypy --strict: examples pass, wrong uses are rejected"
