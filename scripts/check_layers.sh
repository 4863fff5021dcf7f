#!/bin/sh
# scripts/check_layers.sh SRC_DIR [OBJ_DIR]: keeps the module graph of
# docs/architecture.md true.  Every module of src/ has a layer below (the one
# table both checks read); a module missing from it fails, so a new file gets
# a layer on purpose.
#
# Folders: src/ has one folder per role, and the folders are the layers'
# bands (folder_layers below): util/ and proto/ hold leaves, conn/ the
# connection, voters/ the masters, engine/ the rounds and the lock state
# machines, api/ the composition root and the public calls.  A module's
# layer must lie in its folder's band, so reading src/ top to bottom by
# folder is reading the library from the bottom up.
#
# Includes (always): a file may include the headers of its own layer and of
# lower ones (and the public headers), never a higher layer's; and, by
# folder, only headers of its own folder and of the folders before it in
# folder_order (util, proto, conn, voters, engine, api, testing), so that an
# interface lives in the folder of the layer that implements it (the
# rounds' transport is declared in voters/, not beside the rounds in
# engine/) and no two folders include each other.
#
# Calls (with OBJ_DIR, the library's object files, e.g.
# build/CMakeFiles/redlock_objects.dir/src): nm maps every global symbol an
# object defines to its module; for every undefined symbol of an object that
# another object defines, the definer's layer must be at or below the user's,
# and no two modules may reach each other, directly or through others, even
# within one layer: calls go down, and what a lower module must tell a higher
# one goes up through a callback it was handed.  The public API (redlock_*)
# defined in a layer-4 module or above stands above the whole library
# (layer PUBLIC_LAYER): nothing inside calls back into it.
#
#   check_layers.sh --layer MODULE   prints MODULE's layer (for the self-test)
#
# A module of several files counts as one in the call check: the node
# module's files (node.c, node_pipe.c, ...) call each other both ways
# through node_int.h, as the functions of one file would, and so do the
# client module's (client.c, client_loop.c, client_close.c) through
# client.h.
#
# Run by ctest as unit.layers (includes) and unit.layers_calls (both); exits
# 1 and names each offending #include, call and pair.
set -u

# set_layer MODULE: lay=its layer (no subshell: the include check asks it
# for every #include).
set_layer() {
  case "$1" in
  # 0: leaves (pure logic, data, small services, the OpenSSL wrapper): no
  #    connection or loop state of their own
  list | alloc | timebase | backoff | status | random | strutil | log | why | quorum | reply | resp | scripts | scripts_gen | keyname | \
    info | idmap | pool | handle | names | resolve | uri | options | stats_core | errors | tls | \
    keyslot | sightings | sentinel_reply | cluster_map | caps | direct) lay=0 ;;
  # 1: connections (hiredis on libuv: coalesced writes, reply caps, TLS hookup)
  conn) lay=1 ;;
  # 2: one connection's life cycle (resolve, connect, handshake, timeouts,
  #    backoff, reconnect) and one master's (its requests, on a link: the
  #    node module, one file per concept and node_int.h between them; and
  #    whether its votes count: the restart and failover quarantine)
  link | node | node_int | node_pipe | node_handshake | node_replay | node_acks | node_hung | node_why | \
    quarantine) lay=2 ;;
  # 3: rounds over the masters, release notifications, and the voters: the
  #    voter interface, its kinds (standalone: one node; sentinel: a node that
  #    follows the sentinels, and links to them; cluster: a node per primary
  #    and a link to the seeds) and the client's set of
  #    voters, which is the rounds' transport
  round | notify | transport | voter | voter_standalone | voter_sentinel | voter_cluster | voter_cluster_route | \
    voter_cluster_nodes | voter_cluster_disc | voters) lay=3 ;;
  # 4: the engine (engine.h): the lock, extend, release and watch state
  #    machines, the lock kinds and their keys and scripts, elections; it gets
  #    everything from the env client.c hands down
  engine | op | lock | prims | election | kind | kind_mutex | kind_sem | kind_rw | inspect | revoke | observe) \
    lay=4 ;;
  # 5: the composition root (client.c), the public calls and the stats above the engine
  client | client_loop | client_close | calls | calls_election | stats | stats_render) lay=5 ;;
  # 6: the test kit (include/redlock_testing.h): fake masters, their
  #    keyspace, commands and the library's scripts run natively, and the
  #    servers around them; above the public API, which a kit's user calls
  fake_out | fake_db | fake_scripts | fake_exec | fake_server | kit) lay=6 ;;
  # the public headers: anyone may include them
  redlock | redlock_uv) lay=public ;;
  *) lay=unknown ;;
  esac
}
layer_of() {
  set_layer "$1"
  echo "$lay"
}
# The layers a folder of src/ may hold (its band).
folder_layers() {
  case "$1" in
  util | proto) echo 0 ;; # leaves: data, pure logic, small services (addresses, resolve, the
                          # OpenSSL wrapper, options); the Redis protocol and names
  conn) echo 1 2 ;;       # a connection: hiredis on libuv, its life cycle
  voters) echo 2 3 ;;     # a master's requests and quarantine, the voter interface and its
                          # kinds, release notifications, the rounds' transport
  engine) echo 3 4 ;;     # rounds, notifications, the lock state machines and kinds
  api) echo 5 ;;          # the composition root, the public calls, stats
  testing) echo 6 ;;      # the test kit: fake masters
  *) echo none ;;
  esac
}
# The folders bottom-up: a file includes headers of its own folder and of
# earlier ones only.
folder_order="util proto conn voters engine api testing"
# set_rank FOLDER: rank=its place in folder_order (none: not a folder of it).
set_rank() {
  rank=none
  _r=0
  for _f in $folder_order; do
    [ "$_f" = "$1" ] && rank=$_r
    _r=$((_r + 1))
  done
}
# The layer of the public API's definitions in the call check: above all.
PUBLIC_LAYER=5

if [ "${1:-}" = --layer ]; then
  layer_of "${2:-}"
  exit 0
fi
src=${1:-$(dirname "$0")/../src}
obj=${2:-}

status=0
for file in "$src"/*.c "$src"/*.h; do
  [ -e "$file" ] || continue
  echo "FAIL: ${file##*/} is directly in $src: every module lives in its role's folder"
  status=1
done
for file in "$src"/*/*.c "$src"/*/*.h; do
  [ -e "$file" ] || continue
  base=${file##*/}
  module=${base%.*}
  dir=${file%/*}
  folder=${dir##*/}
  set_layer "$module"
  mine=$lay
  if [ "$mine" = unknown ]; then
    echo "FAIL: $folder/$base: module '$module' has no layer in $0"
    status=1
    continue
  fi
  band=$(folder_layers "$folder")
  case " $band " in
  *" $mine "*) ;;
  *)
    echo "FAIL: $folder/$base (layer $mine) is in $folder/, whose layers are: $band"
    status=1
    ;;
  esac
  set_rank "$folder"
  mine_rank=$rank
  for incdir in $(sed -n 's/^#include "\([a-z_]*\)\/[a-z_0-9]*\.h".*/\1/p' "$file"); do
    set_rank "$incdir"
    if [ "$rank" = none ] || [ "$mine_rank" = none ] || [ "$rank" -gt "$mine_rank" ]; then
      echo "FAIL: $folder/$base includes a header of $incdir/, a folder after $folder/ (folder order: $folder_order)"
      status=1
    fi
  done
  for inc in $(sed -n 's/^#include "\([a-z_]*\/\)\{0,1\}\([a-z_0-9]*\)\.h".*/\2/p' "$file"); do
    set_layer "$inc"
    theirs=$lay
    if [ "$theirs" = unknown ]; then
      echo "FAIL: $folder/$base includes $inc.h, which has no layer in $0"
      status=1
    elif [ "$theirs" != public ] && [ "$theirs" -gt "$mine" ]; then
      echo "FAIL: $folder/$base (layer $mine) includes $inc.h (layer $theirs): calls must only go down"
      status=1
    fi
  done
done
[ $status -eq 0 ] && echo "module layers: every #include in $src goes down or sideways, and to its own or an earlier folder"
[ -n "$obj" ] || exit $status

# ---- calls between object files --------------------------------------------
tmp=$(mktemp "${TMPDIR:-/tmp}/check_layers.XXXXXX") || exit 1
trap 'rm -f "$tmp" "$tmp.nm"' EXIT
# The layer of each object's module ("module layer" lines), then one nm over
# them all (nm starts slowly).
found=0
set --
# Objects sit in their folder's directory (redlock_objects.dir/src/util/...),
# or all in one directory (the self-test's fakes).
for o in "$obj"/*.o "$obj"/*/*.o; do
  [ -e "$o" ] || continue
  found=1
  base=${o##*/}
  module=${base%%.*}
  case $module in node_*) module=node ;; client_*) module=client ;; esac # one module's files as one
  mine=$(layer_of "$module")
  if [ "$mine" = unknown ] || [ "$mine" = public ]; then
    echo "FAIL: $base: module '$module' has no layer in $0"
    status=1
    continue
  fi
  echo "$module $mine" >>"$tmp"
  set -- "$@" "$o"
done
if [ $found -eq 0 ]; then
  echo "FAIL: no object files (*.o) in $obj"
  exit 1
fi
# nm -A -P: "PATH: name type [value size]" per global symbol.
if [ $# -gt 0 ] && ! nm -A -P -g "$@" >"$tmp.nm"; then
  echo "FAIL: nm could not read the objects in $obj"
  rm -f "$tmp.nm"
  exit 1
fi
touch "$tmp.nm"

awk -v public_layer="$PUBLIC_LAYER" '
  FNR == NR { lay[$1] = $2 + 0; mod[$1] = 1; next }
  {
    # "dir/lock.c.o: name type ...": the module is "lock".
    m = $1
    sub(/:$/, "", m)
    sub(/.*\//, "", m)
    sub(/\..*/, "", m)
    sub(/^node_.*/, "node", m) # one module, as in the loop above
    sub(/^client_.*/, "client", m)
    if (!(m in mod) || NF < 3) next
    s = $2; t = $3
  }
  # Undefined: U, and weak undefined (w, v).  Everything else nm -g lists is
  # a definition.
  t == "U" || t == "w" || t == "v" { use[++nuse] = m " " s; next }
  {
    def[s] = m
    # The public API defined in the engine or above is the top of the graph.
    symlay[s] = (s ~ /^redlock_/ && lay[m] >= 4) ? public_layer : lay[m]
  }
  END {
    bad = 0
    for (i = 1; i <= nuse; i++) {
      split(use[i], f, " ")
      u = f[1]; s = f[2]
      if (!(s in def) || def[s] == u) continue
      d = def[s]
      k = u SUBSEP d
      if (!(k in syms)) { edge[k] = 1; syms[k] = s } else syms[k] = syms[k] " " s
      if (symlay[s] > lay[u] + 0) {
        if (k in up) up[k] = up[k] " " s
        else up[k] = s
      }
    }
    # Upward calls, one line per pair of modules.
    n = 0
    for (k in up) line[++n] = k
    sortlines(n)
    for (i = 1; i <= n; i++) {
      split(line[i], f, SUBSEP)
      printf "FAIL: upward call: %s.o (layer %d) calls %s.o (layer %d%s): %s\n", \
        f[1], lay[f[1]], f[2], lay[f[2]], publicnote(up[line[i]]), up[line[i]]
      bad = 1
    }
    # Reach: the transitive closure of the call edges.
    nm = 0
    for (m in mod) names[++nm] = m
    for (i = 1; i <= nm; i++) line[i] = names[i]
    sortlines(nm)
    for (i = 1; i <= nm; i++) names[i] = line[i]
    for (i = 1; i <= nm; i++)
      for (j = 1; j <= nm; j++)
        if ((names[i] SUBSEP names[j]) in edge) reach[i, j] = 1
    for (k = 1; k <= nm; k++)
      for (i = 1; i <= nm; i++) {
        if (!((i, k) in reach)) continue
        for (j = 1; j <= nm; j++)
          if ((k, j) in reach) reach[i, j] = 1
      }
    # Pairs that call each other directly, then each cycle (modules that
    # all reach one another) with every call inside it: the calls to cut.
    for (i = 1; i <= nm; i++)
      for (j = i + 1; j <= nm; j++) {
        a = names[i]; b = names[j]
        if (!((a SUBSEP b) in edge) || !((b SUBSEP a) in edge)) continue
        printf "FAIL: %s.o and %s.o call each other: %s -> %s [%s]; %s -> %s [%s]\n", \
          a, b, a, b, syms[a, b], b, a, syms[b, a]
        bad = 1
      }
    for (i = 1; i <= nm; i++) {
      if (i in done) continue
      members = names[i]; nmem = 1; done[i] = 1
      for (j = i + 1; j <= nm; j++)
        if (((i, j) in reach) && ((j, i) in reach)) {
          members = members " " names[j]; nmem++; done[j] = 1; in_scc[j] = i
        }
      in_scc[i] = i
      if (nmem < 2) continue
      bad = 1
      printf "FAIL: a cycle: %s reach each other; the calls inside it:\n", members
      for (a = 1; a <= nm; a++)
        for (b = 1; b <= nm; b++)
          if (in_scc[a] == i && in_scc[b] == i && ((names[a] SUBSEP names[b]) in edge))
            printf "  %s -> %s [%s]\n", names[a], names[b], syms[names[a], names[b]]
    }
    if (!bad)
      printf "module layers: every call between the %d objects goes down or sideways, no cycle\n", nm
    exit bad
  }
  function publicnote(list,   n, f, t, pub) {
    n = split(list, f, " ")
    for (t = 1; t <= n; t++) if (symlay[f[t]] == public_layer && f[t] ~ /^redlock_/) pub = 1
    return pub ? "; public API: layer " public_layer : ""
  }
  # Insertion sort of line[1..n]: the output is stable from run to run.
  function sortlines(n,   i, j, t) {
    for (i = 2; i <= n; i++) {
      t = line[i]
      for (j = i - 1; j >= 1 && line[j] > t; j--) line[j + 1] = line[j]
      line[j + 1] = t
    }
  }
' "$tmp" "$tmp.nm" || status=1
exit $status
