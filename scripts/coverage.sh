#!/usr/bin/env bash
# scripts/coverage.sh: line coverage of every module of src/, and the files
# one lock call passes.  Builds with --coverage into BUILD_DIR (default
# build-cov; Debug, no tools, examples or benchmarks) and reads gcc's gcov
# only (gcovr, if installed, gives the same figures with more detail:
# gcovr -r . BUILD_DIR).
#
#   scripts/coverage.sh [--min PCT] [--integration] [BUILD_DIR]
#     Runs the unit tests (`ctest -L unit`, not the layer checks, which read
#     objects and run no code) and prints the line coverage of each module,
#     grouped as scripts/check_layers.sh groups them (the node module's
#     files, node.c and node_*.c, are one module).  Exits 1 naming each module
#     under PCT percent (default 90).
#     The unit tests are every test labelled "unit": the pure logic, the
#     engine through the public calls over fake masters and a stepped clock
#     (tests/unit/fake_transport.c), and the connection state machines over
#     the in-process mock master (tests/support/mock_master.c); none starts a
#     redis-server.  The api-labelled tests (tests/api) are not among them:
#     they run against real redis-server processes (tests/support's fixture).
#     A few modules are the glue to what only a real deployment has (Sentinel
#     groups, Redis Clusters, TLS servers, resolvers): integration_reason names
#     them and why.  Their unit figure is printed but not judged; with
#     --integration the integration suite runs too (`ctest -L integration`,
#     no tortures; needs redis-server, and takes a while) and they are judged
#     on the figure both suites give them.
#
#   scripts/coverage.sh --walk [BUILD_DIR]
#     The files one redlock_lock + redlock_unlock on a warm client passes:
#     tests/unit/test_walk.c (a client of its own I/O thread over three mock
#     masters) resets gcov's counters after its warm-up cycles and writes
#     them after one more, so the counters hold that cycle only.  Prints each
#     file of src/ with a line run in it (.c files, and headers whose inline
#     code ran), top layer first, and the count: the list
#     docs/architecture.md's "One lock call, top to bottom" walks.
set -euo pipefail
cd "$(dirname "$0")/.."

# integration_reason MODULE: why MODULE's coverage comes from the integration
# suite (empty: the unit tests must cover it).
integration_reason() {
  case $1 in
  voter_sentinel) echo "a Sentinel group's master: sentinels to ask, failovers to follow" ;;
  voter_cluster | voter_cluster_route | voter_cluster_nodes | voter_cluster_disc)
    echo "a Redis Cluster: slot maps read from live seeds, redirections, resharding"
    ;;
  tls) echo "OpenSSL contexts and handshakes against a TLS server" ;;
  resolve)
    echo "name lookups off the loop against a resolver that hangs, fails or answers several" \
      "addresses (integration/test_resolve: the getaddrinfo shim slowdns)"
    ;;
  *) ;;
  esac
}

# module_of FILE_BASENAME: the module a .c file belongs to, as check_layers.sh
# groups them.
module_of() {
  case $1 in
  node_*) echo node ;;
  *) echo "$1" ;;
  esac
}

min=90
dir=
mode=unit
while [ $# -gt 0 ]; do
  case $1 in
  --min)
    min=${2:-}
    if ! [[ $min =~ ^[0-9]+([.][0-9]+)?$ ]]; then
      echo "coverage.sh: --min needs a percentage, e.g. --min 90" >&2
      exit 2
    fi
    shift 2
    ;;
  --integration)
    mode=integration
    shift
    ;;
  --walk)
    mode=walk
    shift
    ;;
  -h | --help)
    sed -n '2,34p' "$0"
    exit 0
    ;;
  -*)
    echo "coverage.sh: unknown option $1 (--help)" >&2
    exit 2
    ;;
  *)
    dir=$1
    shift
    ;;
  esac
done
dir=${dir:-build-cov}

# hiredis >= 1.0 when scripts/fetch-extra.sh put it under build-extra/: the
# TLS code (util/tls.c, the options' TLS setters) is compiled, and so
# measured, only against it.  Otherwise the system's (Debian 12: 0.14.1),
# whose build leaves those lines out of the figures' reach (said below).
pc=$PWD/build-extra/hiredis/lib/pkgconfig
if [ -z "${PKG_CONFIG_PATH:-}" ] && [ -e "$pc/hiredis.pc" ]; then
  export PKG_CONFIG_PATH=$pc
fi
# A tree configured against another hiredis is configured again.
if [ -e "$dir/CMakeCache.txt" ] &&
  ! grep -qx "REDLOCK_COV_PKG_CONFIG_PATH:STRING=${PKG_CONFIG_PATH:-}" "$dir/CMakeCache.txt"; then
  rm -f "$dir/CMakeCache.txt"
fi
# -u: a program may reset and write the counters itself (test_walk does);
# a weak reference alone would not pull them from the libgcov archive.
cmake -S . -B "$dir" --no-warn-unused-cli -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=--coverage \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,-u,__gcov_reset,-u,__gcov_dump \
  "-DREDLOCK_COV_PKG_CONFIG_PATH:STRING=${PKG_CONFIG_PATH:-}" \
  -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_BUILD_TOOLS=OFF -DREDLOCK_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j2 >/dev/null
hiredis=$(pkg-config --modversion hiredis)
case $hiredis in
0.*) echo "coverage.sh: built in $dir against hiredis $hiredis: no TLS, its lines count as not run" ;;
*) echo "coverage.sh: built in $dir against hiredis $hiredis" ;;
esac
objdir="$dir/CMakeFiles/redlock_objects.dir/src"
find "$dir" -name '*.gcda' -delete

# gcov_lines: one line per source file of the library's objects that gcov
# reports (.c files and the headers they include): "PATH PCT LINES", PATH
# relative to the repository (src/FOLDER/FILE), PCT the lines run, in percent
# of LINES.  A header is reported once per object that includes it.
gcov_lines() {
  local folder
  for folder in "$objdir"/*/; do
    (cd "$folder" && gcov -n ./*.c.gcno 2>/dev/null) |
      awk '/^File / { f = $2; gsub(/\047/, "", f); next }
           /^Lines executed:/ {
             if (f != "") { split($2, a, ":"); p = a[2]; sub(/%/, "", p); print f, p, $4 }
             f = ""
           }' |
      sed -n 's|^.*/\(src/[a-z_]*/[a-z_0-9]*\.[ch] \)|\1|p; s|^.*/\(include/[a-z_]*\.h \)|\1|p'
  done
}

# ---- --walk ---------------------------------------------------------------------------
if [ $mode = walk ]; then
  if ! (cd "$dir/tests/unit" && REDLOCK_WALK_GCOV=1 ./test_walk >/dev/null); then
    echo "coverage.sh: tests/unit/test_walk failed" >&2
    exit 1
  fi
  # Every file with a line run, once; top layer first, then by folder and name.
  gcov_lines | awk '$2 > 0 { print $1 }' | sort -u | while read -r path; do
    base=${path##*/}
    layer=$(sh scripts/check_layers.sh --layer "${base%.*}")
    [ "$layer" = public ] && layer=6
    printf '%s %s\n' "$layer" "$path"
  done | sort -k1,1nr -k2,2 | awk '
    { path = $2; if (path ~ /\.c$/) { c++; kind = "" } else { h++; kind = "(inline code)" }
      printf "  layer %s  %-32s %s\n", ($1 == 6 ? "-" : $1), path, kind }
    END { printf "%d files: %d .c, %d headers with inline code\n", c + h, c, h }'
  exit 0
fi

# ---- unit (and integration) coverage per module ---------------------------------------
# A failed test leaves the figures short: they are printed all the same,
# and the script fails.
failed=0
log="$(cd "$dir" && pwd)/coverage-ctest.log"
if ! (cd "$dir" && ctest -L unit -LE layers -j2 --output-on-failure >"$log"); then
  echo "coverage.sh: a unit test failed (the figures below miss what it did not run):" >&2
  grep -E '^[[:space:]]+[0-9]+ - ' "$log" >&2 || true
  failed=1
fi

# module_table: "MODULE LAYER PCT LINES FILES" per module, from gcov_lines'
# .c files (the lines of a module's files summed).
module_table() {
  gcov_lines | awk '$1 ~ /^src\/.*\.c$/' | sort -u | while read -r path pct lines; do
    base=${path##*/}
    printf '%s %s %s %s\n' "$(module_of "${base%.c}")" "$pct" "$lines" "${path#src/}"
  done | awk '{ run[$1] += $2 * $3 / 100; n[$1] += $3; files[$1] = files[$1] (files[$1] ? "," : "") $4 }
              END { for (m in n) printf "%s %.2f %d %s\n", m, n[m] ? 100 * run[m] / n[m] : 100, n[m], files[m] }' |
    while read -r m pct lines files; do
      printf '%s %s %s %s %s\n' "$m" "$(sh scripts/check_layers.sh --layer "$m")" "$pct" "$lines" "$files"
    done | sort -k2,2n -k1,1
}

unit_table=$(module_table)
both_table=
if [ $mode = integration ]; then
  ilog="$(cd "$dir" && pwd)/coverage-ctest-integration.log"
  if ! (cd "$dir" && ctest -L integration -LE torture -j4 --output-on-failure >"$ilog"); then
    echo "coverage.sh: an integration test failed (the figures below miss what it did not run):" >&2
    grep -E '^[[:space:]]+[0-9]+ - ' "$ilog" >&2 || true
    failed=1
  fi
  both_table=$(module_table)
fi

printf '%-22s %5s %8s %6s  %s\n' module layer "lines %" lines "judged on"
below=()
while read -r m layer pct lines files; do
  reason=$(integration_reason "$m")
  judged=unit
  note=
  if [ -n "$reason" ]; then
    if [ $mode = integration ]; then
      pct=$(awk -v m="$m" '$1 == m { print $3 }' <<<"$both_table")
      judged="unit+integration"
    else
      judged="not judged (unit figure; --integration judges it)"
    fi
    note="    integration: $reason"
  fi
  mark=
  if [ "$judged" != "${judged#not}" ]; then
    :
  elif awk -v p="$pct" -v m="$min" 'BEGIN { exit !(p < m) }'; then
    mark="  < $min %"
    below+=("$m ($pct %)")
  fi
  printf '%-22s %5s %8s %6s  %s%s\n' "$m" "$layer" "$pct" "$lines" "$judged" "$mark"
  case $files in *,*) printf '%-22s %s\n' "" "files: ${files//,/ }" ;; esac
  [ -z "$note" ] || echo "$note"
done <<<"$unit_table"

if [ ${#below[@]} -gt 0 ]; then
  echo "FAIL: under $min % line coverage: ${below[*]}"
  exit 1
fi
if [ $failed = 1 ]; then
  echo "FAIL: a test failed (above)"
  exit 1
fi
echo "every judged module has at least $min % line coverage"
