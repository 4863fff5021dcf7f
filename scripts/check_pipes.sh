#!/bin/sh
# check_pipes.sh: no pipeline in a `set -o pipefail` script whose reader
# stops before its writer is done (`| grep -q`, `| head`, an awk that exits).
# The writer then dies of SIGPIPE whenever it writes after the reader left,
# which depends on timing and on how much it writes: under pipefail the
# pipeline's status becomes 141, and set -e ends the script there (a package
# build once stopped so after `ldconfig -p | awk '... exit'`).  Readers that
# read to the end instead: `grep PATTERN >/dev/null`, `sed -n 1p`, an awk
# with a flag.
#
# usage: check_pipes.sh REPO_DIR
set -eu
repo=${1:?usage: check_pipes.sh REPO_DIR}
cd "$repo"
bad=0
for f in $(git ls-files '*.sh' .ci/run 2>/dev/null || find . -name '*.sh' -not -path './build*'); do
  [ -f "$f" ] || continue
  grep -Eq '^[[:space:]]*set -[a-z]*o pipefail|set -o pipefail' "$f" || continue
  # Comments aside; a pipe into grep -q / -l / -m, head, or an awk with exit.
  hits=$(grep -nE '\|[[:space:]]*(grep[[:space:]]+-[a-zA-Z]*[qlm]|head([[:space:]]|$|\))|awk[[:space:]].*exit)' "$f" |
    grep -vE '^[0-9]+:[[:space:]]*#' || true)
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits" | sed "s|^|$f:|" >&2
    bad=1
  fi
done
if [ $bad = 1 ]; then
  echo "check_pipes: a pipefail script's reader stops early (SIGPIPE, status 141); read to the end instead" >&2
  exit 1
fi
echo "check_pipes: ok"
