#!/usr/bin/env bash
# tests/install/hardening_check.sh FILE...: checks that each ELF file (a
# shared library or an executable) was built with the flags of
# cmake/RedlockHardening.cmake:
#   RELRO      a GNU_RELRO segment                      (-Wl,-z,relro)
#   BIND_NOW   FLAGS BIND_NOW or FLAGS_1 NOW            (-Wl,-z,now)
#   stack      a reference to __stack_chk_fail          (-fstack-protector-strong)
#   fortify    a reference to at least one glibc *_chk  (-D_FORTIFY_SOURCE=2)
# Read from the dynamic section and the dynamic symbol table, so that it
# works on stripped files (the .debs' are).  The fortify check holds for
# redlock's binaries because their code calls snprintf/vsnprintf with
# destinations of known size; a file with no such call would need an
# exemption here.
#
# Prints one line per file, "ok" or what is missing, and exits 1 when any
# check failed (2 on bad usage or a missing tool).  Run by scripts/package.sh
# --check on the .deb's libredlock.so.0 and redlock, and the wheel's and the
# npm tarball's libredlock.so.0.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: tests/install/hardening_check.sh FILE..." >&2
  exit 2
fi
command -v readelf >/dev/null 2>&1 ||
  { echo "hardening_check: readelf not found (binutils)" >&2; exit 2; }

failed=0
for f in "$@"; do
  if [ ! -f "$f" ]; then
    echo "hardening_check: $f: no such file" >&2
    failed=1
    continue
  fi
  if ! header=$(LC_ALL=C readelf -h -W "$f" 2>&1); then
    echo "hardening_check: $f: not an ELF file: $header" >&2
    failed=1
    continue
  fi
  missing=()
  LC_ALL=C readelf -l -W "$f" 2>/dev/null | grep '^[[:space:]]*GNU_RELRO[[:space:]]' >/dev/null ||
    missing+=("RELRO (no GNU_RELRO segment: link with -Wl,-z,relro)")
  dynamic=$(LC_ALL=C readelf -d -W "$f" 2>/dev/null || true)
  grep -Eq '\(FLAGS\)[[:space:]].*BIND_NOW|\(FLAGS_1\)[[:space:]].*[[:space:]]NOW' <<<"$dynamic" ||
    missing+=("BIND_NOW (no FLAGS BIND_NOW nor FLAGS_1 NOW: link with -Wl,-z,now)")
  syms=$(LC_ALL=C readelf --dyn-syms -W "$f" 2>/dev/null | awk '{print $8}' | sed 's/@.*//' || true)
  grep -qx '__stack_chk_fail' <<<"$syms" ||
    missing+=("stack protector (no __stack_chk_fail: compile with -fstack-protector-strong)")
  chk=$(grep -E '^__[a-z0-9_]+_chk$' <<<"$syms" | grep -vx '__stack_chk_fail' | sort -u |
    tr '\n' ' ' || true)
  [ -n "$chk" ] ||
    missing+=("fortify (no __*_chk function: compile with -O2 -D_FORTIFY_SOURCE=2)")
  if [ ${#missing[@]} -eq 0 ]; then
    echo "hardening_check: $f: ok (RELRO, BIND_NOW, __stack_chk_fail, ${chk% })"
  else
    failed=1
    for m in "${missing[@]}"; do
      echo "hardening_check: $f: FAILED: $m" >&2
    done
  fi
done
exit $failed
