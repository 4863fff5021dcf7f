#!/bin/sh
# check_status.sh: keeps src/ on one status convention (util/status.h).
# Fails on a function that returns -1 / -2 as an error, or one that returns
# int yet carries a REDLOCK_E* code, unless it is listed below.  The public
# API (redlock_*) keeps its int returns: the status values equal the public
# codes, and they convert at that boundary.
#
# usage: check_status.sh SRC_DIR
set -eu
src=${1:?usage: check_status.sh SRC_DIR}

# Functions whose -1 is a value, not a status: "index or -1 when none"
# lookups, and callbacks whose -1 is a foreign contract.
#   cluster_map_owner, cluster_map_find, cluster_cmd_slot, slot_of: a slot
#       or primary index, -1 when there is none;
#   entry_index, dup_verdict, channel_seen, conn_subscribed: an index, -1
#       when not found;
#   reader_item_type: hiredis' reply type, -1 when the reader is idle;
#   refuse_passphrase: OpenSSL's pem_password_cb contract;
#   resp_number, u64_of: a parsed number, -1 when the text is not one;
#   event_master: an event's entry's master, -1 when there is none;
#   redlock_event_node_latency_us: the public contract (-1: no latency);
#   fdb_pttl: the test kit's PTTL, whose -2 (no key) and -1 (no expiry) are
#       Redis's answers;
#   fake_script_by_body, fake_script_by_sha: a script's index, -1 when the
#       fake runs no such script.
allow_minus1='cluster_map_owner cluster_map_find cluster_cmd_slot slot_of entry_index dup_verdict
channel_seen conn_subscribed reader_item_type refuse_passphrase resp_number u64_of event_master
redlock_event_node_latency_us fdb_pttl fake_script_by_body fake_script_by_sha'

# int returns that carry a length or a public code by contract:
#   uri_redact: snprintf's contract for redlock_uri_redact (a length, or
#       REDLOCK_EINVAL), returned by it unchanged.
allow_int='uri_redact'

find "$src" -name '*.c' -o -name '*.h' | sort | xargs awk -v allow="$allow_minus1" -v allow_int="$allow_int" '
BEGIN {
  n = split(allow, a, /[ \n]+/); for (i = 1; i <= n; i++) ok[a[i]] = 1
  n = split(allow_int, a, /[ \n]+/); for (i = 1; i <= n; i++) ok_int[a[i]] = 1
  bad = 0
}
FNR == 1 { fn = ""; rtype = "" }
/^[A-Za-z_].*[A-Za-z_0-9]+\(/ && !/;[ \t]*$/ && !/^#/ {
  line = $0
  sub(/\(.*/, "", line)
  name = line; sub(/.*[ *]/, "", name)
  rtype = line; sub(/[A-Za-z_0-9]+$/, "", rtype)
  gsub(/static|inline|[ \t]/, "", rtype)
  fn = name
}
/^}/ { fn = "" }
fn != "" && /return([^;]*[?:])?[ \t]*-[0-9]+;/ && !(fn in ok) {
  printf "%s:%d: %s returns %s (return a status_t, or list it in check_status.sh)\n", FILENAME, FNR, fn, $0
  bad = 1
}
fn != "" && rtype == "int" && fn !~ /^redlock_/ && !(fn in ok_int) && /return REDLOCK_E[A-Z]+/ {
  printf "%s:%d: %s returns int carrying a REDLOCK_E* code: return status_t\n", FILENAME, FNR, fn
  bad = 1
}
END { exit bad }
'
