#!/bin/sh
# tests/docs/docs_reference.sh SOURCE_DIR: the API reference as a reader gets
# it.  Runs scripts/docs.sh into a scratch directory, then:
#   - opens index.html in headless Chromium (Debian's `chromium`) and reads
#     the rendered DOM: it must have rendered (its heading is there), and
#     every public function of each header -- listed here with a grep of
#     the header, not by the generator -- and every type and error code
#     must have a link in it whose target page, rendered in turn, has the
#     link's anchor;
#   - renders every man page (man -l, and groff with every warning on:
#     none may be printed), one per function and redlock(3).
# Without chromium: exit 77 (ctest: skipped) with a SKIP line, or a failure
# when REDLOCK_REQUIRE_TOOLCHAINS=1 (scripts/test.sh, as CI runs it).
set -eu
src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

sh "$src/scripts/docs.sh" "$tmp/html" "$tmp/man"
[ -s "$tmp/html/index.html" ] || fail "scripts/docs.sh wrote no index.html"

# The public functions: every REDLOCK_EXPORT declaration names its function
# on the same line, before the first "(".
headers="redlock.h redlock_uv.h"
[ -f "$src/include/redlock_testing.h" ] && headers="$headers redlock_testing.h"
for h in $headers; do
  sed -n 's/^REDLOCK_EXPORT [^(]*[ *]\(redlock_[a-z0-9_]*\)(.*/\1/p' "$src/include/$h" |
    sed "s/^/$h /"
done >"$tmp/functions"
n=$(grep -c '^redlock.h ' "$tmp/functions") || true
[ "$n" -ge 80 ] || fail "only $n functions found in redlock.h: the grep is broken"
echo "functions: $(wc -l <"$tmp/functions") ($n in redlock.h)"
# The types (typedef NAME; / } NAME; / a callback's (*NAME)) and the error
# codes (REDLOCK_ERRNO_MAP's XX(EINVAL, ...) is REDLOCK_EINVAL): their entries
# are checked in the HTML as the functions' are.
for h in $headers; do
  sed -n -e 's/^typedef [^(]*[ *]\(redlock_[a-z0-9_]*\);.*/\1/p' \
    -e 's/^typedef [^(]*(\*\(redlock_[a-z0-9_]*\))(.*/\1/p' \
    -e 's/^} *\(redlock_[a-z0-9_]*\);.*/\1/p' "$src/include/$h" | sed "s/^/$h /"
done >"$tmp/types"
sed -n 's/^ *XX(\(E[A-Z]*\), .*/REDLOCK_\1/p' "$src/include/redlock.h" | sed 's/^/redlock.h /' \
  >"$tmp/errors"
[ "$(wc -l <"$tmp/types")" -ge 15 ] || fail "only $(wc -l <"$tmp/types") types found: the grep is broken"
[ "$(wc -l <"$tmp/errors")" -ge 10 ] || fail "only $(wc -l <"$tmp/errors") error codes found"
echo "types: $(wc -l <"$tmp/types"), error codes: $(wc -l <"$tmp/errors")"

# ---- man pages ----
export LC_ALL=C.UTF-8 MANWIDTH=100
for name in redlock $(cut -d' ' -f2 "$tmp/functions"); do
  page="$tmp/man/man3/$name.3"
  [ -f "$page" ] || fail "no man page $name(3)"
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $name.3: $warnings"
  [ -z "$warnings" ] || fail "groff warns about $name.3: $warnings"
  man -l "$page" 2>"$tmp/man.err" | grep "^NAME" >/dev/null || fail "man -l $name.3: $(cat "$tmp/man.err")"
  [ ! -s "$tmp/man.err" ] || fail "man -l $name.3 printed: $(cat "$tmp/man.err")"
done
echo "man pages: $(ls "$tmp/man/man3" | wc -l) render without a warning"

# ---- the HTML, in a real browser ----
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  if [ "${REDLOCK_REQUIRE_TOOLCHAINS:-0}" = 1 ]; then
    fail "chromium not installed, and REDLOCK_REQUIRE_TOOLCHAINS=1 (scripts/deps.sh installs it)"
  fi
  echo "SKIP: chromium not installed (apt-get install chromium; scripts/deps.sh installs it):" \
    "the HTML reference was made but not opened in a browser"
  exit 77
fi
dump() { # FILE OUT: the DOM of file FILE once Chromium has loaded and rendered it
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$tmp/profile" --dump-dom "file://$1" >"$2" 2>"$tmp/chromium.err" ||
    fail "chromium could not render $1: $(tail -5 "$tmp/chromium.err")"
}
dump "$tmp/html/index.html" "$tmp/index.dom"
for page in $(sed -n 's/.*href="\([^"#]*\.html\)#.*/\1/p' "$tmp/index.dom" | sort -u); do
  dump "$tmp/html/$page" "$tmp/$page.dom"
done
python3 - "$tmp" <<'PY'
import html.parser, os, sys
tmp = sys.argv[1]

class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids, self.h1 = {}, set(), ""
        self._in_h1 = False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self._href = a["href"]
            self._text = ""
        self._in_h1 = tag == "h1"
    def handle_data(self, data):
        if self._in_h1:
            self.h1 += data
        if getattr(self, "_href", None) is not None:
            self._text += data
    def handle_endtag(self, tag):
        if tag == "h1":
            self._in_h1 = False
        if tag == "a" and getattr(self, "_href", None) is not None:
            self.links.setdefault(self._text.strip(), self._href)
            self._href = None

def parse(path):
    d = Dom()
    with open(path, encoding="utf-8") as f:
        d.feed(f.read())
    return d

index = parse(os.path.join(tmp, "index.dom"))
if index.h1.strip() != "redlock-c API reference":
    sys.exit("FAIL: the rendered index has no heading (got %r)" % index.h1)
pages = {}
bad = []
functions = []
for kind in ("functions", "types", "errors"):
    with open(os.path.join(tmp, kind)) as f:
        functions += [line.split() for line in f]
for header, name in functions:
    href = index.links.get(name)
    if href is None:
        bad.append("%s (%s): no link in the index" % (name, header))
        continue
    page, _, anchor = href.partition("#")
    if page not in pages:
        pages[page] = parse(os.path.join(tmp, page + ".dom"))
    if anchor != name or anchor not in pages[page].ids:
        bad.append("%s (%s): the index links %s, not an entry of the rendered page" % (name, header, href))
if bad:
    sys.exit("FAIL: " + "\n  ".join(["entries not reachable from the index:"] + bad))
print("html: %d functions, types and error codes reachable from the rendered index (%d pages)"
      % (len(functions), len(pages)))
PY
