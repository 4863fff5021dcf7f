#!/bin/sh
# scripts/check_alloc.sh SRC_DIR: every allocation of the library goes through
# util/alloc.h (rl_malloc, rl_calloc, rl_realloc, rl_free, rl_strdup), so that
# redlock_set_allocator() sees it.  Fails, naming each line, when a file of
# SRC_DIR other than util/alloc.c calls libc's malloc, calloc, realloc, free,
# strdup or strndup (comments included: a comment that names a call names the
# wrong one).  hiredis' own release functions (freeReplyObject, sdsfree, ...)
# and fields named free (ops->free) are not libc's and pass.
#
#   check_alloc.sh --selftest SRC_DIR   also proves it fails on an injected call
#
# Run by ctest as unit.alloc.  The command that rewrote the calls is in the
# commit that introduced util/alloc.h (git log -S rl_malloc).
set -u

pattern='(^|[^A-Za-z0-9_.>])(malloc|calloc|realloc|free|strdup|strndup)\('

scan() {
  grep -rnE "$pattern" "$1" --include='*.c' --include='*.h' | grep -v "^$1/util/alloc\.c:"
}

if [ "${1:-}" = --selftest ]; then
  src="${2:?SRC_DIR}"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/util" "$tmp/conn"
  printf 'void *rl_malloc(unsigned long);\nvoid x(void) { rl_free(rl_malloc(1)); op->free(op); }\n' >"$tmp/conn/ok.c"
  printf 'void *malloc(unsigned long);\nvoid *y(void) { return malloc(1); }\n' >"$tmp/util/alloc.c"
  if ! sh "$0" "$tmp" >/dev/null; then
    echo "FAIL: the check refused clean files"
    exit 1
  fi
  printf 'void z(void *p) { free(p); }\n' >"$tmp/conn/bad.c"
  if sh "$0" "$tmp" >/dev/null; then
    echo "FAIL: the check passed a call of free()"
    exit 1
  fi
  exec sh "$0" "$src"
fi

src="${1:?SRC_DIR}"
found=$(scan "$src")
if [ -n "$found" ]; then
  echo "FAIL: libc's allocator called outside util/alloc.c (use rl_* from util/alloc.h):"
  printf '%s\n' "$found"
  exit 1
fi
echo "ok: every allocation of $src goes through util/alloc.h"
