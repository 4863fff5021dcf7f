#!/bin/sh
# build_pkgconfig.sh [OUT_DIR]: builds the examples basic.c and async_uv.c
# against an installed redlock-c with nothing but pkg-config and the compiler
# (no make, no CMake) -- the command lines an application would use.
# tests/install/install_test.sh runs it against a temporary install prefix.
#
#   PKG_CONFIG_PATH=/opt/redlock/lib/pkgconfig sh examples/consumer/build_pkgconfig.sh /tmp/out
#
# Environment: CC (default cc), CFLAGS (added to every line, e.g. sanitizer
# flags), PKG_CONFIG (default pkg-config), PKG_CONFIG_PATH (where redlock.pc
# is, when not in the default search path).
#
# The lines it runs, in short:
#   shared:  cc -std=c11 app.c $(pkg-config --cflags --libs redlock)
#   static:  cc -std=c11 -DREDLOCK_STATIC $(pkg-config --cflags --static redlock) app.c \
#              $(pkg-config --libs --static redlock | sed 's/-lredlock/-l:libredlock.a/')
# --static only adds the private dependencies (hiredis, threads); with both
# libraries installed, -lredlock still picks libredlock.so, so the static line
# names the archive (-l:NAME is understood by GNU ld, gold and lld).  A
# program started from a prefix outside the loader's path needs
# LD_LIBRARY_PATH (or -Wl,-rpath,$(pkg-config --variable=libdir redlock)).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
examples="$here/.."
out="${1:-.}"
cc="${CC:-cc}"
pkgconfig="${PKG_CONFIG:-pkg-config}"
cflags_extra="${CFLAGS:-}"
warn="-std=c11 -Wall -Wextra -Werror"

mkdir -p "$out"
shared_cflags=$($pkgconfig --cflags redlock)
shared_libs=$($pkgconfig --libs redlock)
static_cflags=$($pkgconfig --cflags --static redlock)
static_libs=$($pkgconfig --libs --static redlock | sed 's/\(^\| \)-lredlock\( \|$\)/\1-l:libredlock.a\2/')
case " $static_libs " in
  *" -l:libredlock.a "*) ;;
  *) echo "build_pkgconfig.sh: no -lredlock in: $static_libs" >&2; exit 1 ;;
esac

# Word splitting of the flags is intended.
# shellcheck disable=SC2086
for prog in basic async_uv; do
  set -x
  $cc $warn $cflags_extra $shared_cflags "$examples/$prog.c" -o "$out/$prog" $shared_libs
  $cc $warn $cflags_extra -DREDLOCK_STATIC $static_cflags "$examples/$prog.c" \
      -o "$out/$prog-static" $static_libs
  { set +x; } 2>/dev/null
done
