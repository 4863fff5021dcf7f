#!/bin/sh
# subproject_test.sh SOURCE_DIR: the project embedded with add_subdirectory(),
# the way a service vendors it as a git submodule or with FetchContent.
#
#  - It configures with no options at all: the embedding project gets only the
#    library (no tests, examples, tools or bench targets; no -Werror) and the
#    redlock::redlock / redlock::redlock_static aliases.
#  - A program linked to each alias builds and reports the library's version.
# No server is needed.  Environment: CC, CMAKE_COMMAND (as install_test.sh).
set -eu
src=$(cd "$1" && pwd)
cmake=${CMAKE_COMMAND:-cmake}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redlock-subproject.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(embedder C)
add_subdirectory("$src" redlock)
add_executable(app_shared app.c)
target_link_libraries(app_shared PRIVATE redlock::redlock)
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE redlock::redlock_static)
foreach(t redlock-cli redlock-bench example-basic test_quorum torture)
  if(TARGET \${t})
    message(FATAL_ERROR "subproject build defines \${t}: only the library is wanted")
  endif()
endforeach()
if(REDLOCK_WERROR)
  message(FATAL_ERROR "subproject build turned REDLOCK_WERROR on")
endif()
CMAKE
cat >"$tmp/app.c" <<'C'
#include <redlock.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  if (strcmp(redlock_version(), REDLOCK_VERSION_STRING) != 0) return 1;
  printf("%s\n", redlock_version());
  return 0;
}
C
"$cmake" -S "$tmp" -B "$tmp/build" ${CC:+-DCMAKE_C_COMPILER="$CC"} >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; echo "FAIL: configure as a subproject"; exit 1; }
"$cmake" --build "$tmp/build" -j 2 >"$tmp/build.log" 2>&1 ||
  { tail -40 "$tmp/build.log"; echo "FAIL: build as a subproject"; exit 1; }
for app in app_shared app_static; do
  out=$("$tmp/build/$app") || { echo "FAIL: $app exited $?"; exit 1; }
  echo "ok: $app (redlock $out) built as a subproject"
done
