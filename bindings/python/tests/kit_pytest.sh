#!/bin/sh
# tests/kit_pytest.sh PYTHON: runs kit_pytest.py under pytest with the
# fake_masters fixture's plugin, with the first of PYTHON and Debian's
# python3 that has pytest (scripts/deps.sh installs python3-pytest).
# Exits 77 (skipped) when neither has it.
here=$(cd "$(dirname "$0")" && pwd)
for py in "$1" /usr/bin/python3; do
  if [ -x "$py" ] && "$py" -c 'import pytest' 2>/dev/null; then
    exec "$py" -m pytest -q -p no:cacheprovider -p redlock_c.pytest_plugin "$here/kit_pytest.py"
  fi
done
echo "SKIP: no python3 with pytest (apt-get install python3-pytest)"
exit 77
