/* test_scripts.c: unit tests for src/proto/scripts.c, the embedded Lua scripts and
 * the EVALSHA -> EVAL rewrite used after a NOSCRIPT reply.
 *  - script_get for every id: name, non-empty body whose length matches,
 *    sha1 of 40 lowercase hex digits that really is SHA1(body) (what Redis
 *    computes for EVALSHA), body identical to src/lua/<name>.lua; ids out of
 *    range give NULL;
 *  - script_evalsha_to_eval: for several argument lists (none, keys and args,
 *    binary-safe args with CR/LF/NUL, more than 9 arguments) the rewrite of
 *    redisFormatCommandArgv(EVALSHA sha ...) equals redisFormatCommandArgv(EVAL
 *    body ...) byte for byte;
 *  - rejections: not EVALSHA, another script's sha, one wrong sha digit,
 *    every truncation before the sha is complete, garbage, no '*'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"
#include <hiredis/hiredis.h>

#include "../support/sha1.h"
#include "../support/test_io.h"
#include "proto/scripts.h"
#include "util/names.h"

#ifndef REDLOCK_LUA_DIR
#error "REDLOCK_LUA_DIR must name src/lua"
#endif

/* ---- SHA-1 (tests/support/sha1.h), to check the embedded digests ---------------- */

static void test_sha1_self_check(void **state) {
  (void)state;
  char hex[41];
  sha1_hex("", 0, hex);
  assert_string_equal(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  sha1_hex("abc", 3, hex);
  assert_string_equal(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
  static const char two_blocks[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  sha1_hex(two_blocks, sizeof two_blocks - 1, hex);
  assert_string_equal(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

/* ---- script_get ---------------------------------------------------------------- */

static void test_script_get_all(void **state) {
  (void)state;
  const char *seen_sha[SCRIPT_COUNT];
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *s = script_get((script_id_t)id);
    assert_non_null(s);
    assert_non_null(s->name);
    assert_true(s->name[0] != '\0');
    assert_non_null(s->body);
    assert_true(s->body_len > 0);
    assert_int_equal(strlen(s->body), s->body_len);
    assert_non_null(s->sha1);
    assert_int_equal(strlen(s->sha1), 40);
    for (int i = 0; i < 40; i++)
      if (!((s->sha1[i] >= '0' && s->sha1[i] <= '9') || (s->sha1[i] >= 'a' && s->sha1[i] <= 'f')))
        fail_msg("script %s: sha1 \"%s\" is not lowercase hex", s->name, s->sha1);
    /* Redis's EVALSHA key is SHA1 of the exact body bytes. */
    char hex[41];
    sha1_hex(s->body, s->body_len, hex);
    if (strcmp(hex, s->sha1) != 0)
      fail_msg("script %s: embedded sha1 %s but SHA1(body) = %s", s->name, s->sha1, hex);
    for (int j = 0; j < id; j++)
      assert_string_not_equal(seen_sha[j], s->sha1);
    seen_sha[id] = s->sha1;
    /* Same pointer every time (static table). */
    assert_ptr_equal(script_get((script_id_t)id), s);
  }
  assert_string_equal(script_get(SCRIPT_RELEASE)->name, "release");
  assert_string_equal(script_get(SCRIPT_EXTEND)->name, "extend");
  assert_string_equal(script_get(SCRIPT_ACQUIRE_MANY)->name, "acquire_many");
}

/* Replaces each "@NAME@" of `from` in file (len bytes, malloc'd) by `to`, as
 * CMake does when it embeds the scripts; returns the new file. */
static char *substitute(char *file, size_t *len, const char *from, const char *to) {
  size_t from_len = strlen(from), to_len = strlen(to);
  char *out = malloc(*len * (to_len > from_len ? to_len / from_len + 2 : 1) + 1);
  assert_non_null(out);
  size_t o = 0;
  for (size_t i = 0; i < *len;) {
    if (i + from_len <= *len && memcmp(file + i, from, from_len) == 0) {
      memcpy(out + o, to, to_len);
      o += to_len;
      i += from_len;
    } else {
      out[o++] = file[i++];
    }
  }
  out[o] = '\0';
  free(file);
  *len = o;
  return out;
}

static void test_script_body_matches_lua_file(void **state) {
  (void)state;
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *s = script_get((script_id_t)id);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.lua", REDLOCK_LUA_DIR, s->name);
    size_t len = 0;
    char *file = tio_read_file(path, &len);
    if (file == NULL)
      fail_msg("cannot read %s", path);
    file =
        substitute(file, &len, "@REDLOCK_RELEASE_CHANNEL_PREFIX@", REDLOCK_RELEASE_CHANNEL_PREFIX);
    file = substitute(file, &len, "@REDLOCK_FENCE_KEY_PREFIX@", REDLOCK_FENCE_KEY_PREFIX);
    if (len != s->body_len || memcmp(file, s->body, len) != 0) {
      free(file);
      fail_msg("embedded body of %s differs from %s", s->name, path);
    }
    free(file);
  }
}

/* No script spells a name of its own: every key comes in KEYS and every
 * channel in ARGV, named by the client (keyname.h, in the key's hash slot:
 * a cluster refuses a script that touches an undeclared key, and the rule
 * is written once).  One exception: release.lua names its keys' release
 * channels by keyname.h's rule (a channel is no key: nothing to declare),
 * to keep the hottest command short; test_release_publish checks against
 * real servers that they are the channels keyname_build names.  No
 * placeholder is left unreplaced either. */
static void test_scripts_spell_no_names(void **state) {
  (void)state;
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *s = script_get((script_id_t)id);
    /* release.lua's channels, the one name allowed, taken out of the check */
    const char *body = s->body;
    char *masked = NULL;
    if (id == SCRIPT_RELEASE) {
      masked = strdup(s->body);
      assert_non_null(masked);
      for (char *c = strstr(masked, NOTIFY_CHANNEL_PREFIX); c != NULL;
           c = strstr(c, NOTIFY_CHANNEL_PREFIX))
        memset(c, '-', strlen(NOTIFY_CHANNEL_PREFIX));
      body = masked;
    }
    int spelled = strstr(body, "__redlock_") != NULL ||
                  strstr(body, NOTIFY_CHANNEL_PREFIX) != NULL ||
                  strstr(body, FENCE_KEY_PREFIX) != NULL;
    free(masked);
    if (spelled)
      fail_msg("script %s spells a name (pass it in KEYS or ARGV)", s->name);
    if (id == SCRIPT_RELEASE && strstr(s->body, NOTIFY_CHANNEL_PREFIX) == NULL)
      fail_msg("release.lua names no release channel: test_release_publish must say so");
    if (strstr(s->body, "@REDLOCK_") != NULL)
      fail_msg("script %s keeps a placeholder", s->name);
    /* every key a redis.call names is one of KEYS (or a loop's key over
     * them), never a string built in Lua */
    for (const char *p = strstr(s->body, "redis.call("); p != NULL;
         p = strstr(p + 1, "redis.call(")) {
      const char *arg = strchr(p, ',');
      const char *end = strchr(p, ')');
      if (arg == NULL || end == NULL || arg > end)
        continue; /* no key: redis.call("time") */
      arg++;
      while (*arg == ' ')
        arg++;
      const char *cmd = p + strlen("redis.call(");
      if (strncmp(cmd, "\"publish\"", 9) == 0)
        continue; /* a channel, not a key */
      if (strncmp(arg, "KEYS[", 5) != 0 && strncmp(arg, "key,", 4) != 0 &&
          strncmp(arg, "key)", 4) != 0)
        fail_msg("script %s: redis.call with a key that is not in KEYS: %.40s", s->name, p);
    }
  }
}

static void test_script_get_out_of_range(void **state) {
  (void)state;
  assert_null(script_get(SCRIPT_COUNT));
  assert_null(script_get((script_id_t)(SCRIPT_COUNT + 1)));
  assert_null(script_get((script_id_t)-1));
}

/* ---- EVALSHA -> EVAL ----------------------------------------------------------- */

typedef struct {
  char *cmd;
  size_t len;
} formatted_t;

/* Formats verb + script (sha or body) + the rest of argv. */
static formatted_t format_with(const char *verb, const char *script, size_t script_len, int argc,
                               const char **argv, const size_t *argvlen) {
  const char *all[32];
  size_t lens[32];
  assert_true(argc + 2 <= 32);
  all[0] = verb;
  lens[0] = strlen(verb);
  all[1] = script;
  lens[1] = script_len;
  for (int i = 0; i < argc; i++) {
    all[2 + i] = argv[i];
    lens[2 + i] = argvlen[i];
  }
  formatted_t f;
  int n = redisFormatCommandArgv(&f.cmd, argc + 2, all, lens);
  assert_true(n > 0);
  f.len = (size_t)n;
  return f;
}

static void check_rewrite(const script_t *s, int argc, const char **argv, const size_t *argvlen) {
  formatted_t evalsha = format_with("EVALSHA", s->sha1, 40, argc, argv, argvlen);
  formatted_t eval = format_with("EVAL", s->body, s->body_len, argc, argv, argvlen);
  char *out = NULL;
  size_t out_len = 0;
  assert_int_equal(script_evalsha_to_eval(evalsha.cmd, evalsha.len, s, &out, &out_len), ST_OK);
  assert_non_null(out);
  if (out_len != eval.len || memcmp(out, eval.cmd, out_len) != 0)
    fail_msg("script %s, %d args: rewrite (%zu bytes) differs from EVAL form (%zu bytes)", s->name,
             argc, out_len, eval.len);
  free(out);
  redisFreeCommand(evalsha.cmd);
  redisFreeCommand(eval.cmd);
}

static void test_rewrite_equals_eval(void **state) {
  (void)state;
  for (int id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *s = script_get((script_id_t)id);
    /* numkeys only */
    {
      const char *argv[] = {"0"};
      const size_t lens[] = {1};
      check_rewrite(s, 1, argv, lens);
    }
    /* a typical release/extend: 1 key, value, ttl */
    {
      const char *argv[] = {"1", "lock:orders", "9f86d081884c7d659a2feaa0c55ad015", "30000"};
      size_t lens[4];
      for (int i = 0; i < 4; i++)
        lens[i] = strlen(argv[i]);
      check_rewrite(s, 4, argv, lens);
    }
    /* binary-safe arguments, including CR, LF, NUL and an empty one */
    {
      static const char weird[] = "a\r\nb\0c$3\r\n*2";
      const char *argv[] = {"2", weird, "", "v"};
      const size_t lens[] = {1, sizeof weird - 1, 0, 1};
      check_rewrite(s, 4, argv, lens);
    }
    /* many arguments: the "*N" header has two digits */
    {
      const char *argv[20];
      size_t lens[20];
      char bufs[20][16];
      argv[0] = "18";
      lens[0] = 2;
      for (int i = 1; i < 20; i++) {
        snprintf(bufs[i], sizeof bufs[i], "key-%d", i);
        argv[i] = bufs[i];
        lens[i] = strlen(bufs[i]);
      }
      check_rewrite(s, 20, argv, lens);
    }
  }
}

static void test_rewrite_rejects(void **state) {
  (void)state;
  const script_t *release = script_get(SCRIPT_RELEASE);
  const script_t *extend = script_get(SCRIPT_EXTEND);
  const char *argv[] = {"1", "k", "v"};
  const size_t lens[] = {1, 1, 1};
  char *out = NULL;
  size_t out_len = 0;

  /* EVAL (already rewritten) is not EVALSHA. */
  formatted_t eval = format_with("EVAL", release->body, release->body_len, 3, argv, lens);
  assert_int_equal(script_evalsha_to_eval(eval.cmd, eval.len, release, &out, &out_len), ST_EINVAL);
  redisFreeCommand(eval.cmd);

  /* Some other command. */
  {
    const char *set[] = {"SET", "k", "v", "NX", "PX", "1000"};
    const size_t set_lens[] = {3, 1, 1, 2, 2, 4};
    char *cmd;
    int n = redisFormatCommandArgv(&cmd, 6, set, set_lens);
    assert_int_equal(script_evalsha_to_eval(cmd, (size_t)n, release, &out, &out_len), ST_EINVAL);
    redisFreeCommand(cmd);
  }

  /* Lowercase verb: not the form we produce. */
  formatted_t lower = format_with("evalsha", release->sha1, 40, 3, argv, lens);
  assert_int_equal(script_evalsha_to_eval(lower.cmd, lower.len, release, &out, &out_len),
                   ST_EINVAL);
  redisFreeCommand(lower.cmd);

  /* EVALSHA of another script. */
  formatted_t other = format_with("EVALSHA", extend->sha1, 40, 3, argv, lens);
  assert_int_equal(script_evalsha_to_eval(other.cmd, other.len, release, &out, &out_len),
                   ST_EINVAL);
  redisFreeCommand(other.cmd);

  /* One digit of the sha changed. */
  char sha[41];
  memcpy(sha, release->sha1, 41);
  sha[39] = sha[39] == '0' ? '1' : '0';
  formatted_t wrong = format_with("EVALSHA", sha, 40, 3, argv, lens);
  assert_int_equal(script_evalsha_to_eval(wrong.cmd, wrong.len, release, &out, &out_len),
                   ST_EINVAL);
  redisFreeCommand(wrong.cmd);

  /* A sha argument of the wrong length (41 bytes, then 39). */
  char sha41[42];
  memcpy(sha41, release->sha1, 40);
  sha41[40] = 'a';
  sha41[41] = '\0';
  formatted_t long_sha = format_with("EVALSHA", sha41, 41, 3, argv, lens);
  assert_int_equal(script_evalsha_to_eval(long_sha.cmd, long_sha.len, release, &out, &out_len),
                   ST_EINVAL);
  redisFreeCommand(long_sha.cmd);
  formatted_t short_sha = format_with("EVALSHA", release->sha1, 39, 3, argv, lens);
  assert_int_equal(script_evalsha_to_eval(short_sha.cmd, short_sha.len, release, &out, &out_len),
                   ST_EINVAL);
  redisFreeCommand(short_sha.cmd);

  /* Truncated anywhere before the sha's CRLF is complete: every prefix is
   * refused, and (ASan) nothing past the given length is read. */
  formatted_t good = format_with("EVALSHA", release->sha1, 40, 3, argv, lens);
  const char *sha_at = strstr(good.cmd, release->sha1);
  assert_non_null(sha_at);
  size_t must_have = (size_t)(sha_at - good.cmd) + 40 + 2;
  for (size_t cut = 0; cut < must_have; cut++) {
    char *copy = malloc(cut > 0 ? cut : 1);
    assert_non_null(copy);
    memcpy(copy, good.cmd, cut);
    if (script_evalsha_to_eval(copy, cut, release, &out, &out_len) != ST_EINVAL)
      fail_msg("accepted an EVALSHA cut to %zu of %zu bytes", cut, good.len);
    free(copy);
  }
  /* The full command is accepted (sanity check for the loop above). */
  char *ok = NULL;
  size_t ok_len = 0;
  assert_int_equal(script_evalsha_to_eval(good.cmd, good.len, release, &ok, &ok_len), ST_OK);
  assert_true(ok_len > good.len);
  free(ok);
  redisFreeCommand(good.cmd);

  /* Garbage. */
  static const char *const junk[] = {
      "", "*", "*3", "*3\r\n", "PING\r\n", "$7\r\nEVALSHA\r\n", "*3\r\n$7\r\nEVALSHX\r\n$40\r\n"};
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
    assert_int_equal(script_evalsha_to_eval(junk[i], strlen(junk[i]), release, &out, &out_len),
                     ST_EINVAL);
  /* Nothing was allocated by any of the refusals above. */
  assert_null(out);
}

UNIT_MAIN(cmocka_unit_test(test_sha1_self_check), cmocka_unit_test(test_script_get_all),
          cmocka_unit_test(test_script_body_matches_lua_file),
          cmocka_unit_test(test_scripts_spell_no_names),
          cmocka_unit_test(test_script_get_out_of_range),
          cmocka_unit_test(test_rewrite_equals_eval), cmocka_unit_test(test_rewrite_rejects))
