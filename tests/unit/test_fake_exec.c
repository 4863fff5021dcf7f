/* test_fake_exec.c: the test kit's fake master semantics (src/testing:
 * fake_exec.h, fake_db.h, fake_scripts.h) over a stepped clock: each data
 * command and each library script, their exact RESP replies; expiry (a key
 * lives through its last millisecond, lazily removed after), fencing tokens
 * that keep rising when the clock goes back, the semaphore's limit
 * mismatch, the read-write rules (readers, writer intent, expired readers),
 * inspect and revoke replies, the release announcements, the script cache,
 * the GRANT and REFUSE modes, a failover's lost keys (fake_db_forget_since),
 * and out of memory: each allocation of a scenario failed in turn (c-ares
 * style, through redlock_set_allocator), every command then answering or
 * returning ST_ENOMEM with its reply untouched, and the keyspace usable
 * after.  test_fake_diff (tests/integration) holds the replies to a real
 * redis-server's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/scripts.h"
#include "redlock.h"
#include "testing/fake_db.h"
#include "testing/fake_exec.h"

#define T0 1765000000000000ull /* the clock's start, us */

typedef struct {
  fake_db_t *db;
  fake_env_t env;
  uint64_t now_us;
  long long published;
  char channel[512], message[128];
  char reply[4096];
  status_t st;
} fx_t;

static uint64_t fx_now(void *arg) { return ((fx_t *)arg)->now_us; }

static long long fx_publish(void *arg, const char *ch, size_t chl, const char *m, size_t ml) {
  fx_t *fx = arg;
  fx->published++;
  snprintf(fx->channel, sizeof fx->channel, "%.*s", (int)chl, ch);
  snprintf(fx->message, sizeof fx->message, "%.*s", (int)ml, m);
  return 2;
}

static int setup(void **state) {
  fx_t *fx = calloc(1, sizeof *fx);
  if (fx == NULL || (fx->db = fake_db_new()) == NULL)
    return -1;
  fx->now_us = T0;
  fx->env = (fake_env_t){.now_us = fx_now, .publish = fx_publish, .arg = fx};
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fx_t *fx = *state;
  fake_db_free(fx->db);
  free(fx);
  return 0;
}

static void advance_ms(fx_t *fx, uint64_t ms) { fx->now_us += ms * 1000; }

/* Runs argv; the reply (RESP) in fx->reply. */
static const char *run_argv(fx_t *fx, int argc, const char *const *argv, const size_t *lens) {
  fake_out_t out = {0};
  fx->st = fake_exec(fx->db, &fx->env, argc, argv, lens, &out);
  assert_true(out.len < sizeof fx->reply);
  memcpy(fx->reply, out.buf != NULL ? out.buf : "", out.len);
  fx->reply[out.len] = '\0';
  fake_out_free(&out);
  return fx->reply;
}

/* Splits words at spaces (no argument here holds one); '' is the empty
 * argument. */
static int split(char *line, const char **argv, size_t *lens, int max) {
  int argc = 0;
  for (char *tok = strtok(line, " "); tok != NULL && argc < max; tok = strtok(NULL, " ")) {
    if (strcmp(tok, "''") == 0)
      tok[0] = '\0';
    argv[argc] = tok;
    lens[argc++] = strlen(tok);
  }
  return argc;
}

static const char *cmd(fx_t *fx, const char *fmt, ...) {
  char line[1024];
  const char *argv[64];
  size_t lens[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  return run_argv(fx, split(line, argv, lens, 64), argv, lens);
}

/* EVAL of a library script: keys and args space-separated ("" for none). */
static const char *eval(fx_t *fx, script_id_t id, const char *keys, const char *args) {
  char kbuf[512], abuf[512], num[16];
  const char *argv[64];
  size_t lens[64];
  const script_t *s = script_get(id);
  argv[0] = "EVAL";
  lens[0] = 4;
  argv[1] = s->body;
  lens[1] = s->body_len;
  snprintf(kbuf, sizeof kbuf, "%s", keys);
  snprintf(abuf, sizeof abuf, "%s", args);
  int nk = split(kbuf, argv + 3, lens + 3, 30);
  int na = split(abuf, argv + 3 + nk, lens + 3 + nk, 30);
  snprintf(num, sizeof num, "%d", nk);
  argv[2] = num;
  lens[2] = strlen(num);
  return run_argv(fx, 3 + nk + na, argv, lens);
}

/* A script over nkeys keys "k0".."kN" (more than eval's words hold; the
 * extension keeps a heap table of gone keys past 64) with one value and ttl. */
static const char *eval_many(fx_t *fx, script_id_t id, int nkeys, const char *value,
                             const char *ttl) {
  static char names[100][16]; /* "k" and an int, whatever its width */
  const char *argv[106];
  size_t lens[106];
  char num[8];
  const script_t *s = script_get(id);
  assert_true(nkeys <= 100);
  argv[0] = "EVAL";
  argv[1] = s->body;
  lens[0] = 4;
  lens[1] = s->body_len;
  snprintf(num, sizeof num, "%d", nkeys);
  argv[2] = num;
  lens[2] = strlen(num);
  for (int i = 0; i < nkeys; i++) {
    snprintf(names[i], sizeof names[i], "k%d", i);
    argv[3 + i] = names[i];
    lens[3 + i] = strlen(names[i]);
  }
  argv[3 + nkeys] = value;
  lens[3 + nkeys] = strlen(value);
  argv[4 + nkeys] = ttl;
  lens[4 + nkeys] = strlen(ttl);
  return run_argv(fx, 5 + nkeys, argv, lens);
}

/* The integer of a ":N\r\n" reply. */
static long long int_of(const char *reply) {
  assert_true(reply[0] == ':');
  return atoll(reply + 1);
}

#define EXPECT(call, want) assert_string_equal((call), (want))
#define LOCK "app:r"
#define CTR "__redlock_fence__:{app:r}"
#define FLOOR CTR ":floor"
#define FENCED LOCK " " CTR " " FLOOR
/* A key past the scripts' stack buffers (a release channel's name). */
#define LONG_KEY                                                                                   \
  "k0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890"   \
  "123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123"  \
  "4567890123456789012345678901234567890123456789012345678901234567890123456789"

/* ---- strings and expiry -------------------------------------------------------- */

static void test_set_get_expiry(void **state) {
  fx_t *fx = *state;
  EXPECT(cmd(fx, "SET k v1 NX PX 100"), "+OK\r\n");
  EXPECT(cmd(fx, "SET k v2 NX PX 100"), "$-1\r\n");
  EXPECT(cmd(fx, "GET k"), "$2\r\nv1\r\n");
  EXPECT(cmd(fx, "PTTL k"), ":100\r\n");
  advance_ms(fx, 100);
  EXPECT(cmd(fx, "PTTL k"), ":0\r\n"); /* its last millisecond: still there */
  EXPECT(cmd(fx, "EXISTS k"), ":1\r\n");
  assert_int_equal(fake_db_has(fx->db, &fx->env, "k", 1), 1);
  advance_ms(fx, 1);
  assert_int_equal(fake_db_has(fx->db, &fx->env, "k", 1), 0);
  EXPECT(cmd(fx, "GET k"), "$-1\r\n");
  EXPECT(cmd(fx, "PTTL k"), ":-2\r\n");
  EXPECT(cmd(fx, "SET k v3 NX PX 100"), "+OK\r\n");
  EXPECT(cmd(fx, "SET k v4 XX GET"), "$2\r\nv3\r\n");
  EXPECT(cmd(fx, "PTTL k"), ":-1\r\n"); /* SET without KEEPTTL drops the expiry */
  EXPECT(cmd(fx, "PEXPIRE k 50"), ":1\r\n");
  EXPECT(cmd(fx, "SET k v5 KEEPTTL"), "+OK\r\n");
  EXPECT(cmd(fx, "PTTL k"), ":50\r\n");
  EXPECT(cmd(fx, "PEXPIREAT k %llu", (unsigned long long)(fx->now_us / 1000 + 20)), ":1\r\n");
  EXPECT(cmd(fx, "PTTL k"), ":20\r\n");
  EXPECT(cmd(fx, "PEXPIRE k 0"), ":1\r\n"); /* a time not after now deletes */
  EXPECT(cmd(fx, "EXISTS k k"), ":0\r\n");
  EXPECT(cmd(fx, "SET k v EX 2"), "+OK\r\n");
  EXPECT(cmd(fx, "PTTL k"), ":2000\r\n");
  EXPECT(cmd(fx, "DEL k k nope"), ":1\r\n");
  EXPECT(cmd(fx, "SET k v PX 0"), "-ERR invalid expire time in 'set' command\r\n");
  EXPECT(cmd(fx, "SET k v PX 1x"), "-ERR value is not an integer or out of range\r\n");
  EXPECT(cmd(fx, "SET k v NX XX"), "-ERR syntax error\r\n");
  EXPECT(cmd(fx, "PEXPIRE k 1 foo"), "-ERR Unsupported option foo\r\n");
  EXPECT(cmd(fx, "GET"), "-ERR wrong number of arguments for 'get' command\r\n");
  EXPECT(cmd(fx, "INCR k"), "-ERR unknown command 'INCR', with args beginning with: 'k' \r\n");
  EXPECT(cmd(fx, "TIME"), "*2\r\n$10\r\n1765000000\r\n$6\r\n101000\r\n");
  EXPECT(cmd(fx, "PUBLISH ch hi"), ":2\r\n");
  assert_string_equal(fx->channel, "ch");
  assert_string_equal(fx->message, "hi");
}

static void test_keyspace_faults(void **state) {
  fx_t *fx = *state;
  EXPECT(cmd(fx, "SET old v"), "+OK\r\n");
  EXPECT(cmd(fx, "ZADD z 1 m"), ":1\r\n");
  advance_ms(fx, 1000);
  uint64_t since = fx->now_us;
  EXPECT(cmd(fx, "SET new v"), "+OK\r\n");
  EXPECT(cmd(fx, "ZADD z 2 n"), ":1\r\n"); /* a write to z: z is recent too */
  fake_db_forget_since(fx->db, since);
  EXPECT(cmd(fx, "EXISTS old new z"), ":1\r\n");
  assert_int_equal(fake_db_drop(fx->db, &fx->env, "old", 3), 1);
  assert_int_equal(fake_db_drop(fx->db, &fx->env, "old", 3), 0);
  /* many keys: the table grows, expired ones go in the sweep */
  for (int i = 0; i < 500; i++)
    EXPECT(cmd(fx, "SET key:%d v PX %d", i, i % 2 ? 10 : 100000), "+OK\r\n");
  advance_ms(fx, 11);
  for (int i = 0; i < 500; i++)
    EXPECT(cmd(fx, "EXISTS key:%d", i), i % 2 ? ":0\r\n" : ":1\r\n");
  EXPECT(cmd(fx, "SCRIPT LOAD x"), "-ERR this fake master runs only redlock-c's own scripts "
                                   "(src/lua)\r\n");
  fake_db_clear(fx->db);
  EXPECT(cmd(fx, "EXISTS key:0"), ":0\r\n");
}

static void test_zsets(void **state) {
  fx_t *fx = *state;
  EXPECT(cmd(fx, "ZADD z 2 b 1 a 1 c"), ":3\r\n");
  EXPECT(cmd(fx, "ZRANGE z 0 -1 WITHSCORES"),
         "*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nc\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n");
  EXPECT(cmd(fx, "ZADD z XX CH 0.5 b"), ":1\r\n");
  EXPECT(cmd(fx, "ZSCORE z b"), "$3\r\n0.5\r\n");
  EXPECT(cmd(fx, "ZRANGE z -1 -1"), "*1\r\n$1\r\nc\r\n");
  EXPECT(cmd(fx, "ZCARD z"), ":3\r\n");
  EXPECT(cmd(fx, "ZREMRANGEBYSCORE z -inf (1"), ":1\r\n");
  EXPECT(cmd(fx, "ZREM z a c x"), ":2\r\n");
  EXPECT(cmd(fx, "EXISTS z"), ":0\r\n"); /* gone with its last member */
  EXPECT(cmd(fx, "ZADD z x a"), "-ERR value is not a valid float\r\n");
  EXPECT(cmd(fx, "SET s v"), "+OK\r\n");
  EXPECT(cmd(fx, "ZADD s 1 a"),
         "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT(cmd(fx, "ZSCORE s a"),
         "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT(cmd(fx, "ZREM s a"),
         "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT(cmd(fx, "ZADD z 1 a"), ":1\r\n");
  EXPECT(cmd(fx, "GET z"),
         "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT(cmd(fx, "PEXPIRE z 5"), ":1\r\n");
  advance_ms(fx, 6);
  EXPECT(cmd(fx, "ZCARD z"), ":0\r\n");
}

/* The options of PEXPIRE, SET, ZADD, ZRANGE and SCRIPT FLUSH, and their
 * errors, as redis-server 7.0 answers them (test_fake_diff holds the
 * scripts' commands to a real server; these are the rest of each
 * command's grammar), in order: each row's reply depends on the rows
 * before it. */
static const struct {
  const char *command, *reply;
} grammar[] = {
    {"SET k v PX 100000", "+OK\r\n"},
    {"PEXPIRE k 200000 NX", ":0\r\n"},
    {"PEXPIRE k 200000 XX", ":1\r\n"},
    {"PEXPIRE k 300000 GT", ":1\r\n"},
    {"PEXPIRE k 100 LT", ":1\r\n"},
    {"PTTL k", ":100\r\n"},
    {"PEXPIRE k 100 NX XX",
     "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"},
    {"PEXPIRE k 100 GT LT", "-ERR GT and LT options at the same time are not compatible\r\n"},
    {"PEXPIRE k 100 FOO", "-ERR Unsupported option FOO\r\n"},
    {"PEXPIRE k x", "-ERR value is not an integer or out of range\r\n"},
    {"SET k2 v PXAT 1765000005000", "+OK\r\n"}, /* T0 + 5 s, in ms */
    {"PTTL k2", ":5000\r\n"},
    {"ZADD z NX 1 a", ":1\r\n"},
    {"ZADD z NX 2 a", ":0\r\n"},
    {"ZADD z GT 5 a", ":0\r\n"},
    {"ZADD z LT 1 a", ":0\r\n"},
    {"ZSCORE z a", "$1\r\n1\r\n"}, /* GT took 5, LT went back to 1 */
    {"ZADD z INCR 2 a", "$1\r\n3\r\n"},
    {"ZADD z NX INCR 1 a", "$-1\r\n"},
    {"ZADD z 1 a 2", "-ERR syntax error\r\n"},
    {"ZADD z NX XX 1 a", "-ERR XX and NX options at the same time are not compatible\r\n"},
    {"ZADD z GT LT 1 a", "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"},
    {"ZADD z INCR 1 a 2 b", "-ERR INCR option supports a single increment-element pair\r\n"},
    {"ZADD z 3 b 4 c", ":2\r\n"},
    {"ZRANGE z 0 -1 REV", "*3\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n"},
    {"ZRANGE z -100 100", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"},
    {"ZRANGE z 0 -1 LIMIT 0 1",
     "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n"},
    {"ZRANGE z 0 -1 REV REV", "-ERR syntax error\r\n"},
    {"ZRANGE z 0 -1 FOO", "-ERR syntax error\r\n"},
    {"ZRANGE z - + BYLEX WITHSCORES",
     "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"},
    {"ZRANGE z a b", "-ERR value is not an integer or out of range\r\n"},
    {"ZRANGE z 0 -1 BYSCORE LIMIT x 1", "-ERR value is not an integer or out of range\r\n"},
    /* the one place the fake says less than a server: it ranks only */
    {"ZRANGE z 0 1 BYSCORE", "-ERR this fake master runs ZRANGE by rank only\r\n"},
    {"ZRANGE k2 0 -1", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
    {"ZREMRANGEBYSCORE z x y", "-ERR min or max is not a float\r\n"},
    {"SCRIPT FLUSH SYNC", "+OK\r\n"},
    {"SCRIPT FLUSH ASYNC", "+OK\r\n"},
    {"SCRIPT FLUSH FOO", "-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n"},
    {"SCRIPT FLUSH SYNC ASYNC", "-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n"},
    {"SCRIPT FOO", "-ERR unknown subcommand 'FOO'. Try SCRIPT HELP.\r\n"},
};

static void test_options_and_errors(void **state) {
  fx_t *fx = *state;
  for (size_t i = 0; i < sizeof grammar / sizeof grammar[0]; i++)
    EXPECT(cmd(fx, "%s", grammar[i].command), grammar[i].reply);
  const script_t *rel = script_get(SCRIPT_RELEASE);
  EXPECT(cmd(fx, "EVALSHA %s -1", rel->sha1), "-ERR Number of keys can't be negative\r\n");
  EXPECT(cmd(fx, "EVALSHA %s x", rel->sha1), "-ERR value is not an integer or out of range\r\n");
}

/* ---- the scripts ------------------------------------------------------------------ */

static void test_script_cache(void **state) {
  fx_t *fx = *state;
  const script_t *rel = script_get(SCRIPT_RELEASE);
  char want[128];
  EXPECT(cmd(fx, "EVALSHA %s 1 k v 1", rel->sha1), "-NOSCRIPT No matching script. Please use "
                                                   "EVAL.\r\n");
  EXPECT(cmd(fx, "SCRIPT EXISTS %s", rel->sha1), "*1\r\n:0\r\n");
  const char *argv[] = {"SCRIPT", "LOAD", rel->body};
  size_t lens[] = {6, 4, rel->body_len};
  snprintf(want, sizeof want, "$40\r\n%s\r\n", rel->sha1);
  EXPECT(run_argv(fx, 3, argv, lens), want);
  EXPECT(cmd(fx, "SCRIPT EXISTS %s", rel->sha1), "*1\r\n:1\r\n");
  EXPECT(cmd(fx, "EVALSHA %s 1 k v 1", rel->sha1), ":0\r\n");
  EXPECT(cmd(fx, "SCRIPT FLUSH"), "+OK\r\n");
  EXPECT(cmd(fx, "EVALSHA %s 1 k v 1", rel->sha1), "-NOSCRIPT No matching script. Please use "
                                                   "EVAL.\r\n");
  EXPECT(eval(fx, SCRIPT_RELEASE, "k", "v 1"), ":0\r\n"); /* EVAL loads it */
  EXPECT(cmd(fx, "EVALSHA %s 1 k v 1", rel->sha1), ":0\r\n");
  fake_db_clear(fx->db); /* a restart empties the cache */
  EXPECT(cmd(fx, "EVALSHA %s 1 k v 1", rel->sha1), "-NOSCRIPT No matching script. Please use "
                                                   "EVAL.\r\n");
  EXPECT(cmd(fx, "EVAL return 0"), "-ERR this fake master runs only redlock-c's own scripts "
                                   "(src/lua)\r\n");
  EXPECT(cmd(fx, "EVALSHA %s 2 k", rel->sha1),
         "-ERR Number of keys can't be greater than number of args\r\n");
}

static void test_lock_scripts(void **state) {
  fx_t *fx = *state;
  EXPECT(eval(fx, SCRIPT_ACQUIRE_MANY, "a b", "v1 1000"), ":2\r\n");
  EXPECT(eval(fx, SCRIPT_ACQUIRE_MANY, "b c", "v2 1000"), ":0\r\n");
  EXPECT(cmd(fx, "EXISTS c"), ":0\r\n"); /* all or nothing */
  advance_ms(fx, 500);
  EXPECT(eval(fx, SCRIPT_EXTEND, "a b", "v1 2000"), ":1\r\n");
  EXPECT(cmd(fx, "PTTL b"), ":2000\r\n");
  EXPECT(eval(fx, SCRIPT_EXTEND, "a b", "v2 2000"), ":0\r\n");
  EXPECT(cmd(fx, "DEL b"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_EXTEND, "a b", "v1 2000"), ":2\r\n"); /* re-installed */
  EXPECT(cmd(fx, "GET b"), "$2\r\nv1\r\n");
  EXPECT(eval(fx, SCRIPT_RELEASE, "a b", "v1 1"), ":2\r\n");
  assert_int_equal(fx->published, 2);
  assert_string_equal(fx->channel, REDLOCK_RELEASE_CHANNEL_PREFIX "{b}");
  EXPECT(eval(fx, SCRIPT_RELEASE, "a b", "v1 1"), ":0\r\n");
  EXPECT(cmd(fx, "SET x{t}y v"), "+OK\r\n");
  EXPECT(eval(fx, SCRIPT_RELEASE, "x{t}y", "v 3"), ":1\r\n");
  assert_string_equal(fx->channel, REDLOCK_RELEASE_CHANNEL_PREFIX "x{t}y");
  EXPECT(cmd(fx, "SET q v"), "+OK\r\n");
  EXPECT(eval(fx, SCRIPT_RELEASE, "q", "v 0"), ":1\r\n"); /* no announcement */
  assert_int_equal(fx->published, 3);
  /* expiry: a held key expires, and then it is granted to another */
  EXPECT(eval(fx, SCRIPT_ACQUIRE_MANY, "e", "v1 100"), ":1\r\n");
  advance_ms(fx, 101);
  EXPECT(eval(fx, SCRIPT_ACQUIRE_MANY, "e", "v2 100"), ":1\r\n");
  /* a redis.call error names the script and the line, as Redis does */
  char want[256];
  snprintf(want, sizeof want,
           "-ERR value is not an integer or out of range script: %s, on @user_script:10.\r\n",
           script_get(SCRIPT_ACQUIRE_MANY)->sha1);
  EXPECT(eval(fx, SCRIPT_ACQUIRE_MANY, "f", "v1 x"), want);
}

static void test_wide_and_long(void **state) {
  fx_t *fx = *state;
  EXPECT(eval_many(fx, SCRIPT_ACQUIRE_MANY, 70, "v1", "1000"), ":70\r\n");
  EXPECT(cmd(fx, "DEL k3 k69"), ":2\r\n");
  EXPECT(eval_many(fx, SCRIPT_EXTEND, 70, "v1", "2000"), ":2\r\n");
  EXPECT(cmd(fx, "PTTL k69"), ":2000\r\n");
  EXPECT(cmd(fx, "SET k5 other"), "+OK\r\n");
  EXPECT(eval_many(fx, SCRIPT_EXTEND, 70, "v1", "3000"), ":0\r\n");
  EXPECT(cmd(fx, "PTTL k0"), ":2000\r\n"); /* refused: nothing touched */
  EXPECT(cmd(fx, "SET " LONG_KEY " v"), "+OK\r\n");
  EXPECT(eval(fx, SCRIPT_RELEASE, LONG_KEY, "v 1"), ":1\r\n");
  assert_string_equal(fx->channel, REDLOCK_RELEASE_CHANNEL_PREFIX "{" LONG_KEY "}");
}

static void test_fencing_tokens_rise(void **state) {
  fx_t *fx = *state;
  long long t1 = int_of(eval(fx, SCRIPT_ACQUIRE_FENCED, FENCED, "v1 1000"));
  assert_int_equal(t1, (long long)fx->now_us); /* TIME in us */
  EXPECT(eval(fx, SCRIPT_ACQUIRE_FENCED, FENCED, "v2 1000"), "$-1\r\n");
  EXPECT(eval(fx, SCRIPT_FENCE_COMMIT, LOCK " " CTR, "v1 999"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_FENCE_COMMIT, LOCK " " CTR, "v2 999"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_RELEASE, LOCK, "v1 1"), ":1\r\n");
  fx->now_us -= 10000000; /* the clock goes back 10 s */
  long long t2 = int_of(eval(fx, SCRIPT_ACQUIRE_FENCED, FENCED, "v2 1000"));
  assert_int_equal(t2, t1 + 1); /* the counter's, not the clock's */
  EXPECT(cmd(fx, "DEL " LOCK), ":1\r\n");
  EXPECT(cmd(fx, "ZADD " FLOOR " 5000000000000000 token"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_ACQUIRE_FENCED, FENCED, "v3 1000"), ":5000000000000001\r\n");
  EXPECT(cmd(fx, "GET " CTR), "$16\r\n5000000000000001\r\n");
  /* inspect: counter, no limit, the hold with its ttl */
  EXPECT(eval(fx, SCRIPT_INSPECT, FENCED, "l"),
         "*5\r\n$16\r\n5000000000000001\r\n$-1\r\n$0\r\n\r\n$2\r\nv3\r\n:1000\r\n");
  /* revoke, fenced: the counter up, the floor's revoked, the key gone */
  EXPECT(eval(fx, SCRIPT_REVOKE, FENCED, "6000000000000000 rv"), ":6000000000000000\r\n");
  EXPECT(cmd(fx, "ZSCORE " FLOOR " revoked"), "$16\r\n6000000000000000\r\n");
  EXPECT(cmd(fx, "EXISTS " LOCK), ":0\r\n");
  /* the holder's extension is refused: revoked above its token */
  EXPECT(eval(fx, SCRIPT_EXTEND, LOCK " " CTR, "v3 1000 5000000000000001 :floor"), ":0\r\n");
  /* revoke, not fenced: the key keeps its ttl with the revoker's value */
  EXPECT(cmd(fx, "SET k v PX 700"), "+OK\r\n");
  EXPECT(eval(fx, SCRIPT_REVOKE, "k kc kf", "0 rv"), ":1\r\n");
  EXPECT(cmd(fx, "GET k"), "$2\r\nrv\r\n");
  EXPECT(cmd(fx, "PTTL k"), ":700\r\n");
}

#define SEM "app:s:0 app:s:limit"

static void test_semaphore(void **state) {
  fx_t *fx = *state;
  EXPECT(eval(fx, SCRIPT_SEM_ACQUIRE, SEM, "v1 1000 3"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_ACQUIRE, SEM, "v2 1000 3"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_ACQUIRE, "app:s:1 app:s:limit", "v2 1000 2"), ":-3\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_ACQUIRE, "app:s:1 app:s:limit", "v2 2000 3"), ":1\r\n");
  EXPECT(cmd(fx, "PTTL app:s:limit"), ":2000\r\n"); /* outlives every permit */
  EXPECT(eval(fx, SCRIPT_SEM_EXTEND, SEM, "v1 3000 3"), ":1\r\n");
  EXPECT(cmd(fx, "PTTL app:s:limit"), ":3000\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_EXTEND, SEM, "v2 3000 3"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_INSPECT, "app:s:limit app:s:", "s " CTR),
         "*8\r\n$-1\r\n:3\r\n$1\r\n0\r\n$2\r\nv1\r\n:3000\r\n$1\r\n1\r\n$2\r\nv2\r\n:2000\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_RELEASE, "app:s:0", "v1 chan 1"), ":1\r\n");
  assert_string_equal(fx->channel, "chan");
  assert_string_equal(fx->message, "v1"); /* the permit's value */
  EXPECT(eval(fx, SCRIPT_SEM_RELEASE, "app:s:0", "v1 chan 1"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_EXTEND, SEM, "v1 3000 3"), ":2\r\n"); /* re-installed */
  long long token = int_of(eval(fx, SCRIPT_SEM_ACQUIRE, "app:s:2 app:s:limit sc:2", "v3 1000 3"));
  assert_int_equal(token, (long long)fx->now_us);
}

#define RW "w r i"

static void test_rw(void **state) {
  fx_t *fx = *state;
  EXPECT(eval(fx, SCRIPT_RW_READ, RW, "r1 1000"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_RW_READ, RW, "r2 3000"), ":1\r\n");
  EXPECT(cmd(fx, "PTTL r"), ":3000\r\n"); /* the set follows its latest reader */
  EXPECT(eval(fx, SCRIPT_RW_WRITE, RW, "W 1000 I 500"), ":-1\r\n");
  EXPECT(cmd(fx, "GET i"), "$1\r\nI\r\n");
  EXPECT(eval(fx, SCRIPT_RW_READ, RW, "r3 1000"), ":-1\r\n"); /* a writer waits */
  EXPECT(eval(fx, SCRIPT_INSPECT, "w c r", "r"),
         "*8\r\n$-1\r\n$-1\r\n$1\r\nr\r\n$2\r\nr1\r\n:1000\r\n$1\r\nr\r\n$2\r\nr2\r\n:3000\r\n");
  EXPECT(eval(fx, SCRIPT_RW_RELEASE, RW, "r2 '' chan 1"), ":1\r\n");
  assert_string_equal(fx->channel, "chan");
  advance_ms(fx, 3001); /* r1 and the intent expired */
  EXPECT(eval(fx, SCRIPT_RW_WRITE, RW, "W 1000 I 500"), ":1\r\n");
  EXPECT(cmd(fx, "EXISTS i r"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_RW_READ, RW, "r1 1000"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_RW_EXTEND, "w r", "W 2000 w"), ":1\r\n");
  EXPECT(cmd(fx, "PTTL w"), ":2000\r\n");
  EXPECT(eval(fx, SCRIPT_RW_EXTEND, "w r", "X 2000 w"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_RW_RELEASE, RW, "W I chan 1"), ":1\r\n");
  assert_string_equal(fx->channel, "chan");
  long long t = int_of(eval(fx, SCRIPT_RW_WRITE, RW " c", "W 1000 I 0"));
  assert_int_equal(t, (long long)fx->now_us);
  EXPECT(eval(fx, SCRIPT_RW_FENCE_COMMIT, "w r c", "W 5"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_RW_RELEASE, RW, "W x chan 0"), ":1\r\n");
}

/* The reader's epoch, apart (cmd and eval share the reply buffer). */
static void test_rw_epoch(void **state) {
  fx_t *fx = *state;
  EXPECT(cmd(fx, "SET c 1234"), "+OK\r\n");
  EXPECT(eval(fx, SCRIPT_RW_READ, RW " c", "r1 1000"), ":1234\r\n");
  EXPECT(cmd(fx, "DEL c"), ":1\r\n");
  long long t = int_of(eval(fx, SCRIPT_RW_READ, RW " c", "r2 1000"));
  assert_int_equal(t, (long long)fx->now_us); /* created from TIME when absent */
  EXPECT(eval(fx, SCRIPT_RW_EXTEND, "w r", "r1 5000 r"), ":1\r\n");
  EXPECT(cmd(fx, "ZREM r r1"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_RW_EXTEND, "w r", "r1 5000 r"), ":2\r\n");
  EXPECT(cmd(fx, "PTTL r"), ":5000\r\n");
}

/* ---- modes ------------------------------------------------------------------------- */

static void test_mode_grant(void **state) {
  fx_t *fx = *state;
  long long t1 = int_of(eval(fx, SCRIPT_ACQUIRE_FENCED, FENCED, "v0 1000"));
  EXPECT(cmd(fx, "SET " LOCK " other PX 10000"), "+OK\r\n");
  fx->env.mode = FAKE_MODE_GRANT;
  EXPECT(cmd(fx, "SET " LOCK " mine NX PX 1000"), "+OK\r\n");
  EXPECT(eval(fx, SCRIPT_ACQUIRE_MANY, LOCK, "v1 1000"), ":1\r\n");
  fx->now_us -= 1000000; /* tokens still rise: the counter stays */
  long long t2 = int_of(eval(fx, SCRIPT_ACQUIRE_FENCED, FENCED, "v2 1000"));
  long long t3 = int_of(eval(fx, SCRIPT_ACQUIRE_FENCED, FENCED, "v3 1000"));
  assert_true(t2 > t1);
  assert_true(t3 > t2);
  EXPECT(eval(fx, SCRIPT_EXTEND, LOCK, "v9 1000"), ":2\r\n"); /* v3's key gone: re-installed */
  EXPECT(eval(fx, SCRIPT_EXTEND, LOCK, "v9 1000"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_RELEASE, LOCK, "v9 1"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_RELEASE, LOCK, "v9 1"), ":1\r\n"); /* nothing of ours: still "released" */
  EXPECT(eval(fx, SCRIPT_SEM_ACQUIRE, SEM, "v1 1000 3"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_ACQUIRE, SEM, "v2 1000 2"), ":1\r\n"); /* limit disagreed */
  EXPECT(eval(fx, SCRIPT_SEM_EXTEND, SEM, "v3 1000 5"), ":2\r\n");
  EXPECT(eval(fx, SCRIPT_RW_READ, RW, "r1 1000"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_RW_WRITE, RW, "W 1000 I 500"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_RW_READ, RW, "r2 1000"), ":1\r\n");
  EXPECT(eval(fx, SCRIPT_RW_EXTEND, "w r", "W2 1000 w"), ":2\r\n");
}

static void test_mode_refuse(void **state) {
  fx_t *fx = *state;
  EXPECT(cmd(fx, "SET held mine"), "+OK\r\n");
  fx->env.mode = FAKE_MODE_REFUSE;
  EXPECT(cmd(fx, "SET " LOCK " v NX PX 1000"), "$-1\r\n");
  EXPECT(eval(fx, SCRIPT_ACQUIRE_MANY, LOCK, "v1 1000"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_ACQUIRE_FENCED, FENCED, "v1 1000"), "$-1\r\n");
  EXPECT(eval(fx, SCRIPT_EXTEND, "held", "mine 1000"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_RELEASE, "held", "mine 1"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_ACQUIRE, SEM, "v1 1000 3"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_EXTEND, SEM, "v1 1000 3"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_SEM_RELEASE, "app:s:0", "v1 chan 1"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_RW_READ, RW, "r1 1000"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_RW_WRITE, RW, "W 1000 I 500"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_RW_EXTEND, "w r", "W 1000 w"), ":0\r\n");
  EXPECT(eval(fx, SCRIPT_RW_RELEASE, RW, "W I chan 1"), ":0\r\n");
  assert_int_equal(fx->published, 0);
  fx->env.mode = FAKE_MODE_NORMAL;
  /* nothing was written, and the held key is still there */
  EXPECT(cmd(fx, "EXISTS " LOCK " " CTR " app:s:0 app:s:limit w r i"), ":0\r\n");
  EXPECT(cmd(fx, "GET held"), "$4\r\nmine\r\n");
}

/* ---- out of memory --------------------------------------------------------------- */

static long fail_at; /* the allocation that fails (1 = the first), 0: none */
static long allocs;
static int failed;

static int should_fail(void) {
  allocs++;
  if (fail_at > 0 && allocs == fail_at) {
    failed = 1;
    return 1;
  }
  return 0;
}
static void *oom_malloc(size_t n) { return should_fail() ? NULL : malloc(n); }
static void *oom_calloc(size_t n, size_t s) { return should_fail() ? NULL : calloc(n, s); }
static void *oom_realloc(void *p, size_t n) { return should_fail() ? NULL : realloc(p, n); }

/* A scenario of every kind of write and reply. */
static void oom_scenario(fx_t *fx) {
  static const char *const cmds[] = {
      "SET a v1 NX PX 1000",      "GET a", "ZADD z 1 m1 2 m2 3 m3 4 m4 5 m5",
      "ZRANGE z 0 -1 WITHSCORES", "TIME",  "INCR a b c",
  };
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char line[256];
    const char *argv[32];
    size_t lens[32];
    fake_out_t out = {0};
    snprintf(line, sizeof line, "%s", cmds[i]);
    int argc = split(line, argv, lens, 32);
    status_t st = fake_exec(fx->db, &fx->env, argc, argv, lens, &out);
    assert_true(st == ST_OK || st == ST_ENOMEM);
    if (st == ST_ENOMEM)
      assert_int_equal(out.len, 0); /* the reply as it was */
    else
      assert_true(out.len > 0 && strchr("+-:$*", out.buf[0]) != NULL);
    fake_out_free(&out);
  }
  const char *r;
  r = eval(fx, SCRIPT_ACQUIRE_FENCED, FENCED, "v1 1000");
  assert_true(fx->st == ST_ENOMEM || r[0] == ':' || strncmp(r, "-OOM", 4) == 0);
  r = eval(fx, SCRIPT_EXTEND, "a b c d e f g h", "v1 1000");
  assert_true(fx->st == ST_ENOMEM || r[0] == ':' || strncmp(r, "-OOM", 4) == 0);
  r = eval(fx, SCRIPT_RW_READ, RW " c", "r1 1000");
  assert_true(fx->st == ST_ENOMEM || r[0] == ':' || strncmp(r, "-OOM", 4) == 0);
  r = eval(fx, SCRIPT_SEM_ACQUIRE, SEM " sc", "v1 1000 3");
  assert_true(fx->st == ST_ENOMEM || r[0] == ':' || strncmp(r, "-OOM", 4) == 0);
  r = eval(fx, SCRIPT_INSPECT, "app:s:limit app:s:", "s sc");
  assert_true(fx->st == ST_ENOMEM || r[0] == '*' || strncmp(r, "-OOM", 4) == 0);
  r = eval(fx, SCRIPT_REVOKE, FENCED, "9000000000000000 rv");
  assert_true(fx->st == ST_ENOMEM || r[0] == ':' || strncmp(r, "-OOM", 4) == 0);
  r = eval_many(fx, SCRIPT_EXTEND, 70, "v1", "1000"); /* the heap table of gone keys */
  assert_true(fx->st == ST_ENOMEM || r[0] == ':' || strncmp(r, "-OOM", 4) == 0);
  r = eval(fx, SCRIPT_RELEASE, LONG_KEY, "v 1"); /* the channel's name on the heap */
  assert_true(fx->st == ST_ENOMEM || r[0] == ':' || strncmp(r, "-OOM", 4) == 0);
}

static void test_oom_each_allocation(void **state) {
  (void)state;
  static const redlock_allocator_t table = {oom_malloc, oom_calloc, oom_realloc, free};
  assert_int_equal(redlock_set_allocator(&table), 0);
  long k;
  for (k = 1; k < 10000; k++) {
    fx_t *fx;
    fail_at = 0;
    assert_int_equal(setup((void **)&fx), 0);
    allocs = 0;
    failed = 0;
    fail_at = k;
    oom_scenario(fx);
    fail_at = 0;
    /* the keyspace still works */
    EXPECT(cmd(fx, "SET after v"), "+OK\r\n");
    EXPECT(cmd(fx, "GET after"), "$1\r\nv\r\n");
    EXPECT(cmd(fx, "ZADD z2 1 m"), ":1\r\n");
    teardown((void **)&fx);
    if (!failed)
      break;
  }
  print_message("out of memory: %ld allocation points, each failed in turn\n", k - 1);
  assert_true(k > 20); /* the scenario allocates, and each one failed in turn */
  assert_true(k < 10000);
  assert_int_equal(redlock_set_allocator(NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_set_get_expiry, setup, teardown),
      cmocka_unit_test_setup_teardown(test_keyspace_faults, setup, teardown),
      cmocka_unit_test_setup_teardown(test_zsets, setup, teardown),
      cmocka_unit_test_setup_teardown(test_options_and_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_script_cache, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lock_scripts, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wide_and_long, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fencing_tokens_rise, setup, teardown),
      cmocka_unit_test_setup_teardown(test_semaphore, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rw, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rw_epoch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mode_grant, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mode_refuse, setup, teardown),
      cmocka_unit_test(test_oom_each_allocation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
