#!/bin/sh
# scripts/docs.sh [HTML_DIR [MAN_DIR]]: the C API reference, made from the
# public headers' own comments by scripts/apiref.py (python3, nothing else):
#   HTML_DIR (default build/docs/html): index.html, which names and links
#     every entry, one page per header (redlock.h, redlock_uv.h and, when
#     present, redlock_testing.h) with an anchor per function, type, error
#     code and constant, grouped by the header's "---- Section ----" comments;
#   MAN_DIR (default build/docs/man): man3/, one page per public function
#     and redlock(3), the overview.
# The build runs it too (CMakeLists.txt, target redlock_docs) and installs the
# man pages and the HTML with libredlock-dev; the test docs_reference opens
# the HTML in headless Chromium (tests/docs).  docs/api.md says how to read it.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
html=${1:-$root/build/docs/html}
man=${2:-$root/build/docs/man}
version=$(sed -n 's/^#define REDLOCK_VERSION_STRING "\(.*\)"$/\1/p' "$root/include/redlock.h")
set -- "$root/include/redlock.h" "$root/include/redlock_uv.h"
if [ -f "$root/include/redlock_testing.h" ]; then
  set -- "$@" "$root/include/redlock_testing.h"
fi
"${PYTHON:-python3}" "$root/scripts/apiref.py" --html "$html" --man "$man" --version "$version" "$@"
echo "docs: $html/index.html, $man/man3/redlock.3"
