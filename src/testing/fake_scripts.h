/* fake_scripts.h: the library's Lua scripts (src/lua, proto/scripts.h) run
 * natively by a fake master, one C function per script, each following its
 * Lua line by line: Lua 5.1's numbers (doubles, tonumber, "%.0f", "%.14g"),
 * and Redis's conversion of the result (a number to an integer, truncated;
 * false / nil to a nil bulk; a string to a bulk; a table to an array).  An
 * error a redis.call meets ends the script as in Redis 7.0 ("<error>
 * script: <sha>, on @user_script:<line>."), keeping what it wrote before.
 *
 * Modes (fake_env_t.mode): GRANT removes, before the script runs, the keys
 * of other holders that would refuse an acquisition or an extension (fence
 * counters and floors stay, so tokens keep rising); REFUSE answers every
 * acquisition and extension as a key held by another would be, and every
 * release as one that finds nothing of ours, writing nothing.  Each
 * script's function says what it does in each. */
#ifndef REDLOCK_FAKE_SCRIPTS_H
#define REDLOCK_FAKE_SCRIPTS_H

#include "proto/scripts.h"
#include "testing/fake_db.h"

/* One run: the keys and arguments of the EVAL / EVALSHA. */
typedef struct {
  fake_db_t *db;
  const fake_env_t *env;
  fdb_now_t now;
  int nkeys, nargs;
  const char *const *keys, *const *args;
  const size_t *key_lens, *arg_lens;
  fake_out_t *out;
} fscript_run_t;

/* The library's script whose body is body (script_get's), or -1. */
int fake_script_by_body(const char *body, size_t len);
/* The one whose SHA1 is sha (40 hex digits, any case), or -1. */
int fake_script_by_sha(const char *sha, size_t len);

/* Runs script id; its reply (a script error included) is appended to
 * run->out.  ST_ENOMEM when an allocation failed (the reply then is not
 * written; writes before it stay, as a script's that fails midway). */
status_t fake_script_run(script_id_t id, const fscript_run_t *run);

#endif
