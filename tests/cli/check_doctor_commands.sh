#!/bin/sh
# tests/cli/check_doctor_commands.sh [REPO-ROOT]: `redlock doctor` checks the
# ACL user's permission (ACL DRYRUN) for every command the library sends to
# a master, from the table LIB_COMMANDS in tools/cli_doctor_acl.c.  This
# test (ctest cli.doctor_commands) fails when that table and src/ disagree:
# a command src/ sends that the table lacks (doctor would pass a user the
# library then fails with), or one the table lists that src/ no longer
# sends (doctor would fail a user that is fine).
#
# What src/ sends is read from its source, not from a list kept by hand:
#   - every C string literal of src/*/*.c and src/*/*.h but src/testing/'s
#     (the test kit's fakes: what they answer, not what the library sends;
#     comments skipped) that
#     starts with an upper-case word of 3 letters or more: a format string
#     ("AUTH %s", "SCRIPT LOAD %b"), an argv word ("EVALSHA"), or a RESP
#     literal ("$4\r\nEVAL\r\n..."), whatever function sends it;
#   - every redis.call / redis.pcall of the Lua scripts in src/lua/.
# For the commands with subcommands (INFO server, SCRIPT LOAD, ...) the
# second word counts too.  Literals of the files that speak to sentinels,
# not to masters (SENTINEL_FILES), are left out: doctor's table is about
# masters.  Upper-case words in src/ that are not commands (error prefixes,
# message starts) are listed in NOT_COMMANDS; a new one makes this test fail
# until it is added there, which is the point: the test never guesses.
set -eu

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
table=$root/tools/cli_doctor_acl.c
SENTINEL_FILES="voter_sentinel.c sentinel_reply.c"
NOT_COMMANDS="ASK CA CLUSTERDOWN ERR FCALL IFEQ KEEPTTL LOADING MOVED NOSCRIPT NULL READONLY TLS TRYAGAIN URI"
CONTAINERS="ACL CLIENT CLUSTER COMMAND CONFIG FUNCTION INFO MEMORY OBJECT SCRIPT SENTINEL XINFO"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/redlock-doctor-commands.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# Every string literal of a C file, comments and char literals skipped:
# FILE<TAB>CONTENT, escapes as written.
literals() {
  awk 'BEGIN { RS = "\001" }
  {
    n = length($0); st = 0; lit = ""
    for (i = 1; i <= n; i++) {
      c = substr($0, i, 1)
      if (st == 0) {
        if (c == "/" && substr($0, i + 1, 1) == "*") { st = 1; i++ }
        else if (c == "/" && substr($0, i + 1, 1) == "/") st = 2
        else if (c == "\"") { st = 3; lit = "" }
        else if (c == "\047") st = 4
      } else if (st == 1) {
        if (c == "*" && substr($0, i + 1, 1) == "/") { st = 0; i++ }
      } else if (st == 2) {
        if (c == "\n") st = 0
      } else if (st == 3) {
        if (c == "\\") { lit = lit c substr($0, i + 1, 1); i++ }
        else if (c == "\"") { print FILENAME "\t" lit; st = 0 }
        else lit = lit c
      } else if (st == 4) {
        if (c == "\\") i++
        else if (c == "\047") st = 0
      }
    }
  }' "$@"
}

# The commands in literals (FILE<TAB>CONTENT lines) -> "COMMAND[ sub]<TAB>FILE".
commands_of_literals() {
  awk -F '\t' -v containers="$CONTAINERS" -v skip="$SENTINEL_FILES" '
  BEGIN {
    n = split(containers, c, " "); for (i = 1; i <= n; i++) cont[c[i]] = 1
    n = split(skip, s, " "); for (i = 1; i <= n; i++) skipped[s[i]] = 1
  }
  function name(words, nw,   k) {
    k = words[1]
    if (k in cont && nw >= 2 && words[2] ~ /^[A-Za-z][A-Za-z-]*$/) k = k " " words[2]
    return k
  }
  {
    file = $1; sub(/.*\//, "", file)
    if (file in skipped) next
    lit = $2
    if (lit ~ /\\r\\n/) { # RESP: the bulk strings that follow a "$N"
      gsub(/\\r\\n/, " ", lit)
      nw = split(lit, w, " ")
      for (i = 1; i < nw; i++)
        if (w[i] ~ /^\$[0-9]+$/ && w[i + 1] ~ /^[A-Z][A-Z-][A-Z-]+$/) {
          m = 0; for (j = i + 1; j <= nw; j += 2) words[++m] = w[j]
          print name(words, m) "\t" file
          break
        }
      next
    }
    if (lit !~ /^[A-Z][A-Z-][A-Z-]+([ %]|$)/) next
    nw = split(lit, words, /[ %]+/)
    print name(words, nw) "\t" file
  }'
}

# src/: C literals and the Lua scripts' calls.
# src/testing/ is the test kit's fake masters: it answers commands, sends none.
literals $(ls "$root"/src/*/*.c "$root"/src/*/*.h | grep -v '/src/testing/') |
  commands_of_literals >"$tmp/src.raw"
for f in "$root"/src/lua/*.lua; do
  grep -o "redis\.p\{0,1\}call( *[\"'][A-Za-z]*[\"']" "$f" |
    sed "s/.*[\"']\([A-Za-z]*\)[\"']/\1/" | tr 'a-z' 'A-Z' |
    sed "s|\$|	lua/$(basename "$f")|"
done >>"$tmp/src.raw"
for w in $NOT_COMMANDS; do
  printf '%s\n' "$w"
done >"$tmp/not"
awk -F '\t' 'NR == FNR { no[$1] = 1; next } !(($1) in no)' "$tmp/not" "$tmp/src.raw" \
  | sort -u >"$tmp/src.where"
cut -f1 "$tmp/src.where" | sort -u >"$tmp/src"

# The doctor's table: each entry's words, {"WORD", "WORD", ...}, as the
# command it stands for.
sed -n '/^static const lib_command_t LIB_COMMANDS\[\] = {/,/^};/p' "$table" |
  grep -o '{"[^{}]*", WHEN_[A-Z_]*, [0-2], {[^}]*}' |
  sed 's/.*, {\([^}]*\)}$/\1/' | tr -d '",' |
  awk -v containers="$CONTAINERS" '
  BEGIN { n = split(containers, c, " "); for (i = 1; i <= n; i++) cont[c[i]] = 1 }
  { k = $1; if (k in cont && NF >= 2) k = k " " $2; print k }' |
  sort -u >"$tmp/table"

if [ ! -s "$tmp/table" ]; then
  echo "FAIL: no entries read from LIB_COMMANDS in $table (its layout changed?)" >&2
  exit 1
fi
if [ ! -s "$tmp/src" ]; then
  echo "FAIL: no commands read from $root/src" >&2
  exit 1
fi

status=0
missing=$(comm -23 "$tmp/src" "$tmp/table")
extra=$(comm -13 "$tmp/src" "$tmp/table")
if [ -n "$missing" ]; then
  status=1
  echo "FAIL: src/ sends commands that doctor's table (LIB_COMMANDS, $table) lacks:" >&2
  printf '%s\n' "$missing" | while IFS= read -r cmd; do
    printf '  %s (in %s)\n' "$cmd" \
      "$(awk -F '\t' -v c="$cmd" '$1 == c { printf "%s%s", sep, $2; sep = ", " }' "$tmp/src.where")" >&2
  done
  echo "  add them to the table; a word that is not a command goes to NOT_COMMANDS in $0" >&2
fi
if [ -n "$extra" ]; then
  status=1
  echo "FAIL: doctor's table lists commands src/ no longer sends:" >&2
  printf '%s\n' "$extra" | sed 's/^/  /' >&2
fi
if [ "$status" -eq 0 ]; then
  echo "ok: doctor's table and src/ agree on the $(wc -l <"$tmp/src") commands sent to masters:"
  tr '\n' ',' <"$tmp/src" | sed 's/,$/\n/; s/,/, /g'
fi
exit "$status"
