#!/bin/sh
# tests/unit/check_layers_selftest.sh CHECK SRC_DIR OBJ_DIR CC: proves that
# scripts/check_layers.sh (CHECK) fails where it must, so that its passing
# on the real tree means something.  Run by ctest as unit.layers_selftest.
#
#   1. calls: fake objects only (an empty source dir): a downward call
#      (a module above layer 0 calling a layer-0 one) passes; the reverse,
#      a layer-0 object calling up, fails naming the call; two layer-0
#      objects calling each other fail naming both directions and their
#      symbols.
#   2. calls: copies of the real objects (OBJ_DIR) plus a fake layer-0
#      object calling the public API and an engine function (layer 4 or
#      above): the check names those calls, whatever else it reports on
#      the real objects.
#   3. includes: a copy of SRC_DIR where a layer-0 file includes a header
#      of layer 4 or above: the check names that #include.
#   4. folders: a copy of SRC_DIR with a layer-4 header moved into util/,
#      and one with a file directly in src/: the check names each.
#   5. folder order: a copy of SRC_DIR where a util/ file includes a proto/
#      header (both layer 0, so only the folder rule can catch it): the
#      check names that #include.
# The layers come from CHECK --layer, the one table.
set -u
check=$1
src=$2
objs=$3
cc=$4

tmp=$(mktemp -d "${TMPDIR:-/tmp}/layers-selftest.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
  echo "SELFTEST FAIL: $*"
  fails=$((fails + 1))
}

# run NAME SRC OBJ: runs the check, keeps its output in $tmp/NAME.out and
# its exit status in $rc.
run() {
  sh "$check" "$2" "${3:-}" >"$tmp/$1.out" 2>&1
  rc=$?
}

# expect_line NAME PATTERN...: some line of NAME's output has every pattern.
expect_line() {
  name=$1
  shift
  awk -v pats="$*" 'BEGIN { n = split(pats, p, " ") }
    { ok = 1; for (i = 1; i <= n; i++) if (index($0, p[i]) == 0) ok = 0; if (ok) found = 1 }
    END { exit found ? 0 : 1 }' "$tmp/$name.out" ||
    fail "$name: no line naming '$*' in:
$(cat "$tmp/$name.out")"
}

# object MODULE DIR CODE: compiles CODE into DIR/MODULE.c.o.
object() {
  printf '%s\n' "$3" >"$tmp/$1.c"
  "$cc" -c -o "$2/$1.c.o" "$tmp/$1.c" || { echo "cannot compile $1.c"; exit 1; }
}

if [ "$(sh "$check" --layer list)" != 0 ] || [ "$(sh "$check" --layer names)" != 0 ]; then
  echo "selftest expects list and names (headers only) in layer 0"
  exit 1
fi
# A module above layer 0, for the fake downward and upward calls.
upper=
for m in conn link node round notify transport; do
  case $(sh "$check" --layer $m) in [1-9]*) upper=$m && break ;; esac
done
[ -n "$upper" ] || { echo "selftest: none of conn link node round notify transport has a layer"; exit 1; }
mkdir "$tmp/empty" "$tmp/down" "$tmp/up" "$tmp/pair" "$tmp/real" "$tmp/src"

# ---- 1. fake objects only -----------------------------------------------------
object names "$tmp/down" 'int names_probe(void) { return 1; }'
object "$upper" "$tmp/down" 'int names_probe(void); int high_probe(void) { return names_probe(); }'
run down "$tmp/empty" "$tmp/down"
[ $rc -eq 0 ] || fail "a downward call ($upper -> names) failed the check:
$(cat "$tmp/down.out")"

cp "$tmp/down/$upper.c.o" "$tmp/up/"
object list "$tmp/up" 'int high_probe(void); int list_probe(void) { return high_probe(); }'
run up "$tmp/empty" "$tmp/up"
[ $rc -eq 1 ] || fail "an upward call (list -> $upper) exited $rc, not 1"
expect_line up upward list.o "$upper.o" high_probe

object names "$tmp/pair" 'int list_probe(void); int names_probe(void) { return list_probe(); }'
object list "$tmp/pair" 'int names_probe(void); int list_probe(void) { return names_probe(); }'
run pair "$tmp/empty" "$tmp/pair"
[ $rc -eq 1 ] || fail "two layer-0 objects calling each other exited $rc, not 1"
expect_line pair list.o names.o "list -> names [names_probe]" "names -> list [list_probe]"

# ---- 2. the real objects plus an injected upward call --------------------------
cp "$objs"/*/*.o "$tmp/real/" || { echo "no objects in $objs/*/"; exit 1; }
# An engine function: a global function of an object in layer 4 or above.
engine=
for o in "$tmp"/real/*.o; do
  m=$(basename "$o")
  m=${m%%.*}
  case $(sh "$check" --layer "$m") in [4-9]) ;; *) continue ;; esac
  engine=$(nm -P -g --defined-only "$o" | awk '$2 == "T" && $1 !~ /^redlock_/ { print $1; exit }')
  [ -n "$engine" ] && break
done
[ -n "$engine" ] || { echo "selftest: no function of layer 4 or above in $objs"; exit 1; }
nm -P -g --defined-only "$tmp"/real/*.o 2>/dev/null | grep -q '^redlock_open T' ||
  { echo "selftest: redlock_open is not defined in $objs"; exit 1; }
[ ! -e "$tmp/real/list.c.o" ] || { echo "selftest: list.c.o exists: pick another fake"; exit 1; }
object list "$tmp/real" "void redlock_open(void); void $engine(void);
void list_probe(void) { redlock_open(); $engine(); }"
run real "$tmp/empty" "$tmp/real"
[ $rc -eq 1 ] || fail "the injected upward call exited $rc, not 1"
expect_line real upward list.o redlock_open "public API"
expect_line real upward list.o "$engine"

# ---- 3. an injected upward #include ----------------------------------------------
cp -R "$src"/. "$tmp/src/" || exit 1
low=
for f in "$tmp"/src/*/*.c; do
  m=$(basename "$f" .c)
  [ "$(sh "$check" --layer "$m")" = 0 ] && { low=$f; break; }
done
high=
for f in "$tmp"/src/*/*.h; do
  m=$(basename "$f" .h)
  case $(sh "$check" --layer "$m") in [4-9]) high=$f && break ;; esac
done
[ -n "$low" ] && [ -n "$high" ] || { echo "selftest: no layer-0 .c or layer-4+ .h in $src/*/"; exit 1; }
hdir=${high%/*}
hinc="${hdir##*/}/${high##*/}"
lbase=${low##*/}
printf '#include "%s"\n' "$hinc" >>"$low"
run inc "$tmp/src"
[ $rc -eq 1 ] || fail "the injected #include \"$hinc\" in $lbase exited $rc, not 1"
expect_line inc "$lbase" "includes ${high##*/}"

# ---- 4. a module in the wrong folder, a file outside the folders ----------------
rm -rf "$tmp/src" && mkdir "$tmp/src" && cp -R "$src"/. "$tmp/src/" || exit 1
mkdir -p "$tmp/src/util"
mv "$tmp/src/${hinc}" "$tmp/src/util/"
run folder "$tmp/src"
[ $rc -eq 1 ] || fail "${high##*/} moved into util/ exited $rc, not 1"
expect_line folder "util/${high##*/}" "is in util/"
rm -rf "$tmp/src" && mkdir "$tmp/src" && cp -R "$src"/. "$tmp/src/" || exit 1
cp "$tmp/src/$hinc" "$tmp/src/"
run flat "$tmp/src"
[ $rc -eq 1 ] || fail "${high##*/} directly in src/ exited $rc, not 1"
expect_line flat "${high##*/}" "directly in"

# ---- 5. an #include of a later folder's header, within one layer --------------
rm -rf "$tmp/src" && mkdir "$tmp/src" && cp -R "$src"/. "$tmp/src/" || exit 1
ufile=
for f in "$tmp"/src/util/*.c; do
  [ "$(sh "$check" --layer "$(basename "$f" .c)")" = 0 ] && { ufile=$f; break; }
done
pheader=
for f in "$tmp"/src/proto/*.h; do
  [ "$(sh "$check" --layer "$(basename "$f" .h)")" = 0 ] && { pheader=${f##*/}; break; }
done
[ -n "$ufile" ] && [ -n "$pheader" ] || { echo "selftest: no layer-0 util/*.c or proto/*.h"; exit 1; }
printf '#include "proto/%s"\n' "$pheader" >>"$ufile"
run order "$tmp/src"
[ $rc -eq 1 ] || fail "util/${ufile##*/} including proto/$pheader exited $rc, not 1"
expect_line order "util/${ufile##*/}" "proto/" "folder order"

if [ $fails -eq 0 ]; then
  echo "check_layers.sh self-test: fails on an upward call, a pair calling each other, an upward #include, an #include of a later folder and a module outside its folder"
  exit 0
fi
exit 1
