#!/bin/sh
# check_exports.sh LIB INCLUDE_DIR [STATIC_LIB]: the shared library's exported
# (dynamic, defined) symbols all start with "redlock_", and every function the
# public headers declare with REDLOCK_EXPORT is among them.  With STATIC_LIB,
# the archive's global defined symbols must all start with "redlock_" too (its
# internal symbols are localized), so a static link cannot clash.
set -u
lib="$1"
incdir="$2"
static="${3:-}"
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
if [ -z "$syms" ]; then
  echo "FAIL: no exported symbols found in $lib"
  exit 1
fi
status=0
bad=$(printf '%s\n' "$syms" | grep -v '^redlock_')
if [ -n "$bad" ]; then
  echo "FAIL: exported symbols without the redlock_ prefix:"
  printf '  %s\n' $bad
  status=1
fi
declared=$(grep -h '^REDLOCK_EXPORT' "$incdir/redlock.h" "$incdir/redlock_uv.h" |
           grep -oE 'redlock_[a-z0-9_]+\(' | tr -d '(' | sort -u)
for f in $declared; do
  if ! printf '%s\n' "$syms" | grep -qx "$f"; then
    echo "FAIL: declared in the public headers but not exported: $f"
    status=1
  fi
done
echo "$(printf '%s\n' "$syms" | wc -l) exported symbols, $(printf '%s\n' "$declared" | wc -l) declared"
if [ -n "$static" ]; then
  globals=$(nm -g --defined-only "$static" | awk 'NF == 3 { print $3 }' | sort -u)
  bad=$(printf '%s\n' "$globals" | grep -v '^redlock_')
  if [ -n "$bad" ]; then
    echo "FAIL: global symbols without the redlock_ prefix in $static:"
    printf '  %s\n' $bad
    status=1
  fi
  for f in $declared; do
    if ! printf '%s\n' "$globals" | grep -qx "$f"; then
      echo "FAIL: declared in the public headers but missing from $static: $f"
      status=1
    fi
  done
  echo "$(printf '%s\n' "$globals" | wc -l) global symbols in the static archive"
fi
exit $status
