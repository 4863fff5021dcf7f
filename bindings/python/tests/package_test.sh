#!/usr/bin/env bash
# bindings/python/tests/package_test.sh PYTHON LIBREDLOCK WORKDIR
# The package installs offline into a fresh venv (pip install
# --no-build-isolation: the setuptools already there, nothing fetched), carries
# its type information (py.typed and the stubs), and the installed copy, not
# the source tree, locks through libredlock.  Run by ctest as python_package.
set -euo pipefail
py=$1 lib=$2 work=$3
src=$(cd "$(dirname "$0")/.." && pwd)
# The build backend must be there already (no network): setuptools and wheel,
# Debian's python3-setuptools and python3-wheel.  A Python without them (say a
# pyenv build) gives way to the system's.
for cand in "$py" /usr/bin/python3; do
  if "$cand" -c 'import setuptools, wheel, ensurepip' 2>/dev/null; then py=$cand; break; fi
done
"$py" -c 'import setuptools, wheel, ensurepip' ||
  { echo "no Python with setuptools, wheel and venv (python3-setuptools python3-wheel python3-venv)" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
# Build from a copy: pip writes build/ and *.egg-info next to the sources.
cp -r "$src/pyproject.toml" "$src/README.md" "$src/redlock" "$work/"
"$py" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-build-isolation --no-index "$work"
cd "$work/venv"  # away from the source tree, so only the installed copy imports
REDLOCK_LIBRARY=$lib "$work/venv/bin/python" - <<'PY'
import importlib.resources as res
import os
import sys

import redlock
import redlock.aio

where = os.path.dirname(redlock.__file__)
assert "site-packages" in where, where
for name in ("py.typed", "__init__.pyi", "aio.pyi"):
    assert os.path.isfile(os.path.join(where, name)), name
assert redlock.version().startswith("0."), redlock.version()
try:  # no masters: a clear error, not a crash
    redlock.Client(["redis://"], connect_timeout_ms=100)
except redlock.InvalidArgument as exc:
    print("InvalidArgument as expected:", exc)
else:
    sys.exit("a malformed URI was accepted")
print("OK installed at", where)
PY
