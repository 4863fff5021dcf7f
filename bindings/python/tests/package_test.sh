#!/usr/bin/env bash
# bindings/python/tests/package_test.sh PYTHON LIBREDLOCK WORKDIR
# `pip install ./bindings/python` works offline with an isolated build (the
# in-tree backend, buildsys/redlock_build.py, requires nothing: no index, no
# setuptools, no wheel) with PYTHON; the installed
# package carries its type information (py.typed and the stubs), and the
# installed copy, not the source tree, locks through libredlock.  Run by ctest
# as python_package.
set -euo pipefail
py=$1 lib=$2 work=$3
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work"
# Build from a copy of the repository's layout (the backend reads the
# version from the C project's CMakeLists.txt, two levels up).
mkdir -p "$work/tree/bindings"
cp "$src/../../CMakeLists.txt" "$work/tree/"
mkdir -p "$work/tree/src"
cp -r "$src" "$work/tree/bindings/python"
rm -rf "$work/tree/bindings/python/tests"
pythons=("$py")  # the one CMake found (pyenv's, here); wheel_test.sh covers the others
n=0
for p in "${pythons[@]}"; do
  n=$((n + 1))
  "$p" -m venv "$work/venv$n"
  "$work/venv$n/bin/python" -m pip install -q --no-index --disable-pip-version-check \
    "$work/tree/bindings/python"
done
cd "$work"  # away from the source tree, so only the installed copy imports
for i in $(seq 1 $n); do
REDLOCK_LIBRARY=$lib "$work/venv$i/bin/python" - <<'PY'
import os
import sys

import redlock_c
import redlock_c.aio

where = os.path.dirname(redlock_c.__file__)
assert "site-packages" in where, where
for name in ("py.typed", "__init__.pyi", "aio.pyi"):
    assert os.path.isfile(os.path.join(where, name)), name
assert redlock_c.version().startswith("0."), redlock_c.version()
import importlib.metadata
assert redlock_c.__version__ == importlib.metadata.version("redlock-c"), redlock_c.__version__
try:  # no masters: a clear error, not a crash
    redlock_c.Client(["redis://"], connect_timeout_ms=100)
except redlock_c.InvalidArgument as exc:
    print("InvalidArgument as expected:", exc)
else:
    sys.exit("a malformed URI was accepted")
assert redlock_c.load_library()._name == os.environ["REDLOCK_LIBRARY"]
# Built from the repository: a pure wheel, no library inside.
assert not os.path.exists(os.path.join(where, "libredlock.so.0"))
print("OK", sys.version.split()[0], "installed at", where)
PY
done
