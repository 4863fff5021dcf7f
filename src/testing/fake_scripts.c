/* fake_scripts.c: the library's Lua scripts run natively by a fake master
 * (fake_scripts.h).  Each function follows its src/lua file line by line;
 * the numbers in TRY / NEED / lua_fail are the Lua lines, which Redis names
 * in a script's error. */
#include "testing/fake_scripts.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"

/* A Lua string, or nil / false (p NULL). */
typedef struct {
  const char *p;
  size_t len;
} lstr_t;

#define NIL ((lstr_t){NULL, 0})
#define LIT(s) ((lstr_t){s, sizeof s - 1})

typedef struct {
  const fscript_run_t *r;
  const char *sha;
} ctx_t;

int fake_script_by_body(const char *body, size_t len) {
  for (unsigned id = 0; id < SCRIPT_COUNT; id++) {
    const script_t *s = script_get((script_id_t)id);
    if (s->body_len == len && memcmp(s->body, body, len) == 0)
      return (int)id;
  }
  return -1;
}

int fake_script_by_sha(const char *sha, size_t len) {
  if (len != 40)
    return -1;
  for (unsigned id = 0; id < SCRIPT_COUNT; id++)
    if (strncasecmp(script_get((script_id_t)id)->sha1, sha, 40) == 0)
      return (int)id;
  return -1;
}

/* ---- errors: Redis 7.0's words --------------------------------------------- */

static status_t fail(const ctx_t *c, int line, const char *text) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s script: %s, on @user_script:%d.", text, c->sha, line);
  return fake_out_error(c->r->out, buf);
}

static status_t fail_db(const ctx_t *c, int line, fdb_err_t err) {
  return err == FDB_NOMEM ? ST_ENOMEM : fail(c, line, fdb_err_text(err));
}

/* A Lua runtime error (an operation on nil): "user_script:N: what". */
static status_t lua_fail(const ctx_t *c, int line, const char *what) {
  char buf[256];
  snprintf(buf, sizeof buf, "ERR user_script:%d: %s", line, what);
  return fail(c, line, buf);
}

#define TRY(line, expr)                                                                            \
  do {                                                                                             \
    fdb_err_t err_ = (expr);                                                                       \
    if (err_ != FDB_OK)                                                                            \
      return fail_db(c, line, err_);                                                               \
  } while (0)
/* redis.call with a nil argument */
#define NEED(line, v)                                                                              \
  do {                                                                                             \
    if ((v).p == NULL)                                                                             \
      return fail(c, line, "ERR Lua redis lib command arguments must be strings or integers");     \
  } while (0)
#define CMP_NIL "attempt to compare number with nil"
#define ARITH_NIL "attempt to perform arithmetic on a nil value"
#define CONCAT_NIL "attempt to concatenate field '?' (a nil value)"

/* ---- Lua's values ------------------------------------------------------------ */

/* KEYS[i] / ARGV[i] (i a Lua number: nil unless a whole index in range). */
static lstr_t at(int n, const char *const *v, const size_t *lens, double i) {
  if (!(i >= 1 && i <= n) || (double)(int)i != i)
    return NIL;
  return (lstr_t){v[(int)i - 1], lens[(int)i - 1]};
}
#define KEY(i) at(c->r->nkeys, c->r->keys, c->r->key_lens, (double)(i))
#define ARG(i) at(c->r->nargs, c->r->args, c->r->arg_lens, (double)(i))

static int eq(lstr_t a, lstr_t b) {
  return a.p != NULL && b.p != NULL && a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

/* tonumber(s): Lua 5.1's luaO_str2d (strtod on the C string, a hex
 * constant, trailing spaces); 0 for nil or not a number. */
static int tonum(lstr_t s, double *out) {
  char buf[512];
  if (s.p == NULL)
    return 0;
  size_t len = strnlen(s.p, s.len); /* Lua reads the C string: up to a NUL */
  if (len >= sizeof buf)
    return 0;
  memcpy(buf, s.p, len);
  buf[len] = '\0';
  char *end;
  double v = strtod(buf, &end);
  if (end == buf)
    return 0;
  if (*end == 'x' || *end == 'X')
    v = (double)strtoul(buf, &end, 16);
  while (isspace((unsigned char)*end))
    end++;
  if (*end != '\0')
    return 0;
  *out = v;
  return 1;
}

/* string.format("%.0f", x) into buf (400 bytes: the largest double's). */
#define FMT_SIZE 400
static lstr_t fmt0(char *buf, double x) {
  int n = snprintf(buf, FMT_SIZE, "%.0f", x);
  return (lstr_t){buf, n > 0 ? (size_t)n : 0};
}

/* A number made a string (tostring, ..): LUAI_NUMFFORMAT "%.14g". */
static lstr_t fmt14(char *buf, double x) {
  int n = snprintf(buf, FMT_SIZE, "%.14g", x);
  return (lstr_t){buf, n > 0 ? (size_t)n : 0};
}

/* A Lua number in a reply: (long long) of it, as Redis casts (x86's value
 * for what does not fit). */
static long long lua_int(double x) {
  return x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? (long long)x : LLONG_MIN;
}

static status_t reply_num(const ctx_t *c, double x) { return fake_out_int(c->r->out, lua_int(x)); }

/* ---- redis.call ------------------------------------------------------------ */

static fdb_err_t r_get(const ctx_t *c, lstr_t k, lstr_t *v) {
  return fdb_get(c->r->db, c->r->now, k.p, k.len, &v->p, &v->len);
}

static int r_exists(const ctx_t *c, lstr_t k) {
  return fdb_find(c->r->db, c->r->now, k.p, k.len) != NULL;
}

/* SET k v [PX px] */
static fdb_err_t r_set(const ctx_t *c, lstr_t k, lstr_t v, lstr_t px) {
  int64_t when = -1;
  if (px.p != NULL) {
    fdb_err_t err = fdb_set_expiry(c->r->now, px.p, px.len, 1, 0, &when);
    if (err != FDB_OK)
      return err;
  }
  return fdb_set(c->r->db, c->r->now, k.p, k.len, v.p, v.len, when, 0);
}

static fdb_err_t r_pexpire(const ctx_t *c, lstr_t k, lstr_t ms, int relative) {
  int64_t when;
  fdb_err_t err =
      fdb_pexpire_arg(c->r->now, ms.p, ms.len, relative,
                      relative ? FDB_BAD_EXPIRE_PEXPIRE : FDB_BAD_EXPIRE_PEXPIREAT, &when);
  if (err == FDB_OK)
    fdb_pexpireat(c->r->db, c->r->now, k.p, k.len, when, 0);
  return err;
}

static long long r_pttl(const ctx_t *c, lstr_t k) {
  return fdb_pttl(c->r->db, c->r->now, k.p, k.len);
}

static void r_del(const ctx_t *c, lstr_t k) { fdb_del(c->r->db, c->r->now, k.p, k.len); }

/* ZSCORE: *found 0 for nil; *score what tonumber makes of the reply (the
 * reply's digits give the score back exactly). */
static fdb_err_t r_zscore(const ctx_t *c, lstr_t k, lstr_t m, int *found, double *score) {
  return fdb_zscore(c->r->db, c->r->now, k.p, k.len, m.p, m.len, found, score);
}

/* ZADD k [XX] score member */
static fdb_err_t r_zadd(const ctx_t *c, lstr_t k, lstr_t score, lstr_t m, int flags) {
  double d;
  if (!fdb_parse_double(score.p, score.len, &d))
    return FDB_NOT_FLOAT;
  int changed;
  double result;
  return fdb_zadd(c->r->db, c->r->now, k.p, k.len, d, m.p, m.len, flags, &changed, &result);
}

/* ZREMRANGEBYSCORE k -inf ("(" .. string.format("%.0f", now)): the readers
 * whose expiry is before now. */
static fdb_err_t r_zrem_expired(const ctx_t *c, lstr_t k, double now) {
  char buf[FMT_SIZE + 1];
  buf[0] = '(';
  lstr_t s = fmt0(buf + 1, now);
  double max;
  int ex;
  if (!fdb_parse_range_end(buf, s.len + 1, &max, &ex))
    return FDB_RANGE_NOT_FLOAT;
  long long removed;
  return fdb_zremrangebyscore(c->r->db, c->r->now, k.p, k.len, -INFINITY, 0, max, ex, &removed);
}

static fdb_err_t r_zcard(const ctx_t *c, lstr_t k, long long *n) {
  return fdb_zcard(c->r->db, c->r->now, k.p, k.len, n);
}

/* redis.call("zrange", k, -1, -1, "withscores")[2], through tonumber:
 * *found 0 when the set is empty (last[2] nil). */
static fdb_err_t r_zlast_score(const ctx_t *c, lstr_t k, int *found, double *score) {
  const fdb_zmember_t *z;
  size_t n;
  fdb_err_t err = fdb_zmembers(c->r->db, c->r->now, k.p, k.len, &z, &n);
  *found = 0;
  if (err == FDB_OK && n > 0) {
    char buf[32];
    size_t len = fdb_format_score(buf, z[n - 1].score);
    *found = tonum((lstr_t){buf, len}, score);
  }
  return err;
}

/* The time as the scripts read it: TIME's seconds * 1000000 + micros, and
 * seconds * 1000 + floor(micros / 1000). */
static double time_us(const ctx_t *c) { return (double)c->r->now.us; }
static double time_ms(const ctx_t *c) {
  /* whole numbers: floor is integer division (the library links no libm) */
  return (double)(c->r->now.us / 1000000 * 1000 + c->r->now.us % 1000000 / 1000);
}

static void r_publish(const ctx_t *c, lstr_t channel, lstr_t message) {
  const fake_env_t *env = c->r->env;
  if (env->publish != NULL)
    env->publish(env->arg, channel.p, channel.len, message.p, message.len);
}

/* redis.pcall("spublish", ...): Redis 7 has SPUBLISH, so the scripts never
 * fall back to PUBLISH; a fake has one namespace of channels. */
#define r_spublish r_publish

/* tonumber(redis.call("get", k) or "0") or 0: a fence counter. */
static fdb_err_t r_counter(const ctx_t *c, lstr_t k, double *counter) {
  lstr_t v;
  fdb_err_t err = r_get(c, k, &v);
  if (err == FDB_OK && !tonum(v.p ? v : LIT("0"), counter))
    *counter = 0;
  return err;
}

/* The scripts' raise of a counter to a token argument (raising is always
 * safe): counter = tonumber(redis.call("get", key) or "0") or 0 (Lua line
 * lines[0]); if counter < tonumber(token) (lines[1]) then
 * redis.call("set", key, token) (lines[2]).  *failed when the script ended
 * here, its error replied. */
static status_t raise_to(const ctx_t *c, lstr_t key, lstr_t token, const int lines[3],
                         int *failed) {
  double counter, t;
  *failed = 1;
  TRY(lines[0], r_counter(c, key, &counter));
  if (!tonum(token, &t))
    return lua_fail(c, lines[1], CMP_NIL);
  if (counter < t)
    TRY(lines[2], r_set(c, key, token, NIL));
  *failed = 0;
  return ST_OK;
}

/* A new token: TIME in us, or the counter + 1 when that is larger, written
 * to the counter (rw_write.lua's and sem_acquire.lua's; get and set at
 * lines line_get and line_set).  *failed as raise_to's. */
static status_t next_token(const ctx_t *c, lstr_t key, int line_get, int line_set, double *token,
                           int *failed) {
  double counter;
  char buf[FMT_SIZE];
  *failed = 1;
  *token = time_us(c);
  TRY(line_get, r_counter(c, key, &counter));
  if (counter + 1 > *token)
    *token = counter + 1;
  TRY(line_set, r_set(c, key, fmt0(buf, *token), NIL));
  *failed = 0;
  return ST_OK;
}

static fake_mode_t mode(const ctx_t *c) { return c->r->env->mode; }

/* A key k .. suffix, in buf (size bytes) or allocated (*heap, free it). */
static int concat(lstr_t a, lstr_t b, char *buf, size_t size, char **heap, lstr_t *out) {
  size_t n = a.len + b.len;
  char *p = buf;
  *heap = NULL;
  if (n > size) {
    p = *heap = rl_malloc(n);
    if (p == NULL)
      return 0;
  }
  if (a.len)
    memcpy(p, a.p, a.len);
  if (b.len)
    memcpy(p + a.len, b.p, b.len);
  *out = (lstr_t){p, n};
  return 1;
}

/* ---- acquire_many.lua ---------------------------------------------------------
 * GRANT: every key deleted first.  REFUSE: 0 (a key exists). */
static status_t acquire_many(const ctx_t *c) {
  int n = c->r->nkeys;
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  if (mode(c) == FAKE_MODE_GRANT)
    for (int i = 1; i <= n; i++)
      r_del(c, KEY(i));
  for (int i = 1; i <= n; i++)
    if (r_exists(c, KEY(i)))
      return fake_out_int(c->r->out, 0);
  for (int i = 1; i <= n; i++) {
    NEED(10, ARG(1));
    NEED(10, ARG(2));
    TRY(10, r_set(c, KEY(i), ARG(1), ARG(2)));
  }
  return fake_out_int(c->r->out, n);
}

/* ---- acquire_fenced.lua -------------------------------------------------------
 * GRANT: the lock keys (not their counters and floors) deleted first.
 * REFUSE: nil (a key exists). */
static status_t acquire_fenced(const ctx_t *c) {
  double n = c->r->nkeys / 3.0;
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_nil(c->r->out);
  if (mode(c) == FAKE_MODE_GRANT)
    for (double i = 1; i <= n; i++)
      r_del(c, KEY(i));
  for (double i = 1; i <= n; i++) {
    NEED(12, KEY(i));
    if (r_exists(c, KEY(i)))
      return fake_out_nil(c->r->out);
  }
  double token = time_us(c);
  for (double i = n + 1; i <= 2 * n; i++) {
    double counter, floor_ = 0, d;
    int found;
    NEED(19, KEY(i));
    TRY(19, r_counter(c, KEY(i), &counter));
    if (counter + 1 > token)
      token = counter + 1;
    NEED(23, KEY(n + i));
    TRY(23, r_zscore(c, KEY(n + i), LIT("token"), &found, &d));
    if (found)
      floor_ = d;
    if (floor_ + 1 > token)
      token = floor_ + 1;
  }
  char text[FMT_SIZE];
  lstr_t t = fmt0(text, token);
  for (double i = 1; i <= n; i++) {
    NEED(30, ARG(1));
    NEED(30, ARG(2));
    TRY(30, r_set(c, KEY(i), ARG(1), ARG(2)));
    NEED(31, KEY(n + i));
    TRY(31, r_set(c, KEY(n + i), t, NIL));
  }
  return reply_num(c, token);
}

/* ---- extend.lua -------------------------------------------------------------------
 * GRANT: a key holding another value is deleted first, and a revoke's
 * floor does not refuse (the extension succeeds).  REFUSE: 0. */

/* Its first loop: which keys are gone (gone[i - 1]); *failed when the
 * script ended there (refused, or its error), its reply written. */
static status_t extend_check(const ctx_t *c, double n, int fenced, unsigned char *gone,
                             int *failed) {
  *failed = 1;
  for (double i = 1; i <= n; i++) {
    lstr_t v;
    NEED(23, KEY(i));
    TRY(23, r_get(c, KEY(i), &v));
    if (v.p == NULL) {
      if (fenced && mode(c) != FAKE_MODE_GRANT) {
        char buf[256], *heap;
        lstr_t floor_key;
        double revoked, token;
        int found;
        if (KEY(n + i).p == NULL || ARG(4).p == NULL)
          return lua_fail(c, 26, CONCAT_NIL);
        if (!concat(KEY(n + i), ARG(4), buf, sizeof buf, &heap, &floor_key))
          return ST_ENOMEM;
        fdb_err_t err = r_zscore(c, floor_key, LIT("revoked"), &found, &revoked);
        rl_free(heap);
        TRY(26, err);
        if (found && !tonum(ARG(3), &token))
          return lua_fail(c, 27, CMP_NIL);
        if (found && revoked > token)
          return fake_out_int(c->r->out, 0);
      }
      gone[(size_t)i - 1] = 1;
    } else if (!eq(v, ARG(1))) {
      return fake_out_int(c->r->out, 0);
    }
  }
  *failed = 0;
  return ST_OK;
}

/* Its second loop: each key re-installed or given the new ttl. */
static status_t extend_apply(const ctx_t *c, double n, int fenced, const unsigned char *gone,
                             int *result, int *failed) {
  static const int counter_lines[3] = {41, 42, 43};
  *failed = 1;
  *result = 1;
  for (double i = 1; i <= n; i++) {
    if (gone[(size_t)i - 1]) {
      NEED(39, ARG(1));
      NEED(39, ARG(2));
      TRY(39, r_set(c, KEY(i), ARG(1), ARG(2)));
      if (fenced) {
        NEED(41, KEY(n + i));
        status_t st = raise_to(c, KEY(n + i), ARG(3), counter_lines, failed);
        if (st != ST_OK || *failed)
          return st;
        *failed = 1;
      }
      *result = 2;
    } else {
      NEED(48, ARG(2));
      TRY(48, r_pexpire(c, KEY(i), ARG(2), 1));
    }
  }
  *failed = 0;
  return ST_OK;
}

static status_t extend(const ctx_t *c) {
  double n = c->r->nkeys;
  int fenced = ARG(3).p != NULL;
  if (fenced)
    n = n / 2;
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  if (mode(c) == FAKE_MODE_GRANT) {
    for (double i = 1; i <= n; i++) {
      lstr_t v;
      if (KEY(i).p != NULL && r_get(c, KEY(i), &v) == FDB_OK && v.p != NULL && !eq(v, ARG(1)))
        r_del(c, KEY(i));
    }
  }
  unsigned char few[64] = {0}, *gone = few;
  size_t count = n >= 1 ? (size_t)n : 0;
  if (count > sizeof few && (gone = rl_calloc(count, 1)) == NULL)
    return ST_ENOMEM;
  int failed, result;
  status_t st = extend_check(c, n, fenced, gone, &failed);
  if (st == ST_OK && !failed)
    st = extend_apply(c, n, fenced, gone, &result, &failed);
  if (st == ST_OK && !failed)
    st = fake_out_int(c->r->out, result);
  if (gone != few)
    rl_free(gone);
  return st;
}

/* ---- fence_commit.lua --------------------------------------------------------
 * The same in every mode (it follows a grant). */
static status_t fence_commit(const ctx_t *c) {
  static const int counter_lines[3] = {8, 9, 10};
  double n = c->r->nkeys / 2.0;
  for (double i = n + 1; i <= 2 * n; i++) {
    int failed;
    NEED(8, KEY(i));
    status_t st = raise_to(c, KEY(i), ARG(2), counter_lines, &failed);
    if (st != ST_OK || failed)
      return st;
  }
  for (double i = 1; i <= n; i++) {
    lstr_t v;
    NEED(14, KEY(i));
    TRY(14, r_get(c, KEY(i), &v));
    if (!eq(v, ARG(1)))
      return fake_out_int(c->r->out, 0);
  }
  return fake_out_int(c->r->out, 1);
}

/* ---- inspect.lua ---------------------------------------------------------------
 * Read only: the same in every mode.  The holds go to a reply of their own
 * (holds, nholds) written after out[1] and out[2]. */
typedef struct {
  const ctx_t *c;
  fake_out_t holds;
  long long nholds;
  char counter[FMT_SIZE]; /* out[1], a string, when has_counter */
  int has_counter;
} inspect_t;

static status_t inspect_hold(inspect_t *in, lstr_t tag, lstr_t key, int *failed) {
  const ctx_t *c = in->c;
  lstr_t v;
  fdb_err_t err;
  *failed = 1;
  NEED(14, key);
  TRY(14, r_get(c, key, &v));
  if (v.p != NULL) {
    status_t st = fake_out_bulk(&in->holds, tag.p, tag.len);
    if (st == ST_OK)
      st = fake_out_bulk(&in->holds, v.p, v.len);
    if (st == ST_OK)
      st = fake_out_int(&in->holds, r_pttl(c, key));
    if (st != ST_OK)
      return st;
    in->nholds += 3;
  }
  (void)err;
  *failed = 0;
  return ST_OK;
}

static void inspect_raise(inspect_t *in, double v) {
  double cur;
  if (!in->has_counter || (tonum((lstr_t){in->counter, strlen(in->counter)}, &cur) && v > cur)) {
    fmt0(in->counter, v);
    in->has_counter = 1;
  }
}

static status_t inspect_counter(inspect_t *in, lstr_t key, int *failed) {
  const ctx_t *c = in->c;
  lstr_t v;
  double d;
  *failed = 1;
  NEED(22, key);
  TRY(22, r_get(c, key, &v));
  if (tonum(v.p ? v : LIT(""), &d))
    inspect_raise(in, d);
  *failed = 0;
  return ST_OK;
}

static status_t inspect_body(inspect_t *in, int *has_limit, double *limit, int *failed) {
  const ctx_t *c = in->c;
  status_t st;
  *failed = 1;
  if (eq(ARG(1), LIT("l"))) {
    int found;
    double floor_;
    if ((st = inspect_hold(in, LIT(""), KEY(1), failed)) != ST_OK || *failed)
      return st;
    if ((st = inspect_counter(in, KEY(2), failed)) != ST_OK || *failed)
      return st;
    *failed = 1;
    NEED(30, KEY(3));
    TRY(30, r_zscore(c, KEY(3), LIT("token"), &found, &floor_));
    if (found)
      inspect_raise(in, floor_);
  } else if (eq(ARG(1), LIT("s"))) {
    lstr_t v;
    NEED(35, KEY(1));
    TRY(35, r_get(c, KEY(1), &v));
    if (tonum(v.p ? v : LIT(""), limit)) {
      *has_limit = 1;
      for (double i = 0; i <= *limit - 1; i++) {
        char num[FMT_SIZE], buf[256], buf2[256], *heap, *heap2;
        lstr_t tag = fmt14(num, i), slot, counter;
        if (KEY(2).p == NULL)
          return lua_fail(c, 39, CONCAT_NIL);
        if (!concat(KEY(2), tag, buf, sizeof buf, &heap, &slot))
          return ST_ENOMEM;
        st = inspect_hold(in, tag, slot, failed);
        if (st == ST_OK && !*failed) {
          if (ARG(2).p == NULL) {
            st = lua_fail(c, 40, CONCAT_NIL);
          } else if (!concat(ARG(2), slot, buf2, sizeof buf2, &heap2, &counter)) {
            st = ST_ENOMEM;
          } else {
            st = inspect_counter(in, counter, failed);
            rl_free(heap2);
          }
          if (st != ST_OK)
            *failed = 1;
        }
        rl_free(heap);
        if (st != ST_OK || *failed)
          return st;
      }
    }
  } else {
    if ((st = inspect_hold(in, LIT("w"), KEY(1), failed)) != ST_OK || *failed)
      return st;
    if ((st = inspect_counter(in, KEY(2), failed)) != ST_OK || *failed)
      return st;
    *failed = 1;
    double now = time_ms(c);
    const fdb_zmember_t *z;
    size_t n;
    NEED(48, KEY(3));
    TRY(48, fdb_zmembers(c->r->db, c->r->now, KEY(3).p, KEY(3).len, &z, &n));
    for (size_t i = 0; i < n; i++) {
      char buf[32];
      double score;
      tonum((lstr_t){buf, fdb_format_score(buf, z[i].score)}, &score);
      double left = score - now;
      if (left > 0) {
        if ((st = fake_out_bulk(&in->holds, "r", 1)) != ST_OK ||
            (st = fake_out_bulk(&in->holds, z[i].member, z[i].len)) != ST_OK ||
            (st = fake_out_int(&in->holds, lua_int(left))) != ST_OK)
          return st;
        in->nholds += 3;
      }
    }
  }
  *failed = 0;
  return ST_OK;
}

static status_t inspect(const ctx_t *c) {
  inspect_t in = {.c = c};
  int has_limit = 0, failed = 0;
  double limit = 0;
  size_t at = c->r->out->len;
  status_t st = inspect_body(&in, &has_limit, &limit, &failed);
  if (st == ST_OK && !failed) {
    fake_out_t *out = c->r->out;
    st = fake_out_array(out, 2 + in.nholds);
    if (st == ST_OK)
      st = in.has_counter ? fake_out_bulk(out, in.counter, strlen(in.counter)) : fake_out_nil(out);
    if (st == ST_OK)
      st = has_limit ? fake_out_int(out, lua_int(limit)) : fake_out_nil(out);
    if (st == ST_OK)
      st = fake_out_raw(out, in.holds.buf, in.holds.len);
    if (st != ST_OK)
      out->len = at;
  }
  fake_out_free(&in.holds);
  return st;
}

/* ---- release.lua ------------------------------------------------------------------
 * REFUSE: 0, nothing deleted (the keys hold another's value).  GRANT: what
 * is ours goes as usual, and the answer says every key was (another
 * holder's key stays: in this mode everyone holds everything). */
static status_t release(const ctx_t *c) {
  lstr_t how = ARG(2);
  int shard = eq(how, LIT("2")) || eq(how, LIT("4"));
  int look = eq(how, LIT("3")) || eq(how, LIT("4"));
  long long deleted = 0;
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  for (int i = 1; i <= c->r->nkeys; i++) {
    lstr_t key = KEY(i), v;
    TRY(23, r_get(c, key, &v));
    if (!eq(v, ARG(1)))
      continue;
    r_del(c, key);
    if (!eq(how, LIT("0"))) {
      static const char prefix[] = REDLOCK_RELEASE_CHANNEL_PREFIX;
      const size_t plen = sizeof prefix - 1;
      int tagged = 0;
      if (look) {
        /* a tag: a '{', then the first '}' after it, at least one byte on */
        const char *open = memchr(key.p, '{', key.len);
        const char *close =
            open != NULL ? memchr(open + 1, '}', key.len - (size_t)(open + 1 - key.p)) : NULL;
        tagged = close != NULL && close > open + 1;
      }
      char buf[256];
      size_t n = plen + key.len + (tagged ? 0 : 2);
      char *ch = n <= sizeof buf ? buf : rl_malloc(n);
      if (ch == NULL)
        return ST_ENOMEM;
      memcpy(ch, prefix, plen);
      size_t at = plen;
      if (!tagged)
        ch[at++] = '{';
      memcpy(ch + at, key.p, key.len);
      at += key.len;
      if (!tagged)
        ch[at++] = '}';
      if (shard)
        r_spublish(c, (lstr_t){ch, at}, LIT(""));
      else
        r_publish(c, (lstr_t){ch, at}, LIT(""));
      if (ch != buf)
        rl_free(ch);
    }
    deleted++;
  }
  return fake_out_int(c->r->out, mode(c) == FAKE_MODE_GRANT ? c->r->nkeys : deleted);
}

/* ---- revoke.lua -------------------------------------------------------------------
 * An administrator's: the same in every mode. */
static status_t revoke(const ctx_t *c) {
  double fence;
  if (!tonum(ARG(1), &fence))
    return lua_fail(c, 15, CMP_NIL);
  if (fence > 0) {
    double cnt, revoked = 0, d;
    int found;
    NEED(16, KEY(2));
    TRY(16, r_counter(c, KEY(2), &cnt));
    if (cnt < fence) {
      TRY(18, r_set(c, KEY(2), ARG(1), NIL));
      cnt = fence;
    }
    NEED(21, KEY(3));
    TRY(21, r_zscore(c, KEY(3), LIT("revoked"), &found, &d));
    if (found)
      revoked = d;
    if (revoked < fence)
      TRY(23, r_zadd(c, KEY(3), ARG(1), LIT("revoked"), 0));
    NEED(25, KEY(1));
    r_del(c, KEY(1));
    return reply_num(c, cnt);
  }
  NEED(28, KEY(1));
  long long ttl = r_pttl(c, KEY(1));
  if (ttl > 0) {
    char num[FMT_SIZE];
    NEED(30, ARG(2));
    TRY(30, r_set(c, KEY(1), ARG(2), fmt14(num, (double)ttl)));
  }
  return fake_out_int(c->r->out, 1);
}

/* The readers set's expiry follows its latest member (rw_read.lua's and
 * rw_extend.lua's follow_latest_reader). */
static status_t follow_latest_reader(const ctx_t *c, int line_zrange, int line_pexpireat,
                                     int *failed) {
  int found;
  double last;
  char buf[FMT_SIZE];
  *failed = 1;
  TRY(line_zrange, r_zlast_score(c, KEY(2), &found, &last));
  if (!found)
    return lua_fail(c, line_pexpireat, "bad argument #1 to 'tonumber' (value expected)");
  TRY(line_pexpireat, r_pexpire(c, KEY(2), fmt0(buf, last), 0));
  *failed = 0;
  return ST_OK;
}

/* raise_counter(): with fencing (#KEYS == 3), the counter up to the hold's
 * token (rw_extend.lua). */
static status_t rw_raise_counter(const ctx_t *c, int *failed) {
  static const int counter_lines[3] = {22, 23, 24};
  *failed = 0;
  return c->r->nkeys == 3 ? raise_to(c, KEY(3), ARG(4), counter_lines, failed) : ST_OK;
}

/* ---- rw_read.lua -----------------------------------------------------------------
 * GRANT: the writer key and the writer intent deleted first.  REFUSE: 0
 * (a writer holds it). */
static status_t rw_read(const ctx_t *c) {
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  NEED(11, KEY(1));
  NEED(14, KEY(3));
  if (mode(c) == FAKE_MODE_GRANT) {
    r_del(c, KEY(1));
    r_del(c, KEY(3));
  }
  if (r_exists(c, KEY(1)))
    return fake_out_int(c->r->out, 0);
  if (r_exists(c, KEY(3)))
    return fake_out_int(c->r->out, -1);
  double now = time_ms(c), ttl;
  NEED(20, KEY(2));
  TRY(20, r_zrem_expired(c, KEY(2), now));
  if (!tonum(ARG(2), &ttl))
    return lua_fail(c, 21, ARITH_NIL);
  char buf[FMT_SIZE];
  NEED(21, ARG(1));
  TRY(21, r_zadd(c, KEY(2), fmt0(buf, now + ttl), ARG(1), 0));
  int failed;
  status_t st = follow_latest_reader(c, 22, 23, &failed);
  if (st != ST_OK || failed)
    return st;
  if (c->r->nkeys == 4) {
    lstr_t v;
    double token;
    TRY(27, r_get(c, KEY(4), &v));
    if (!tonum(v.p ? v : LIT(""), &token)) {
      token = time_us(c);
      TRY(30, r_set(c, KEY(4), fmt0(buf, token), NIL));
    }
    return reply_num(c, token);
  }
  return fake_out_int(c->r->out, 1);
}

/* ---- rw_write.lua ----------------------------------------------------------------
 * GRANT: the writer key, the readers and the intent deleted first.
 * REFUSE: 0 (another writer holds it). */
static status_t rw_write(const ctx_t *c) {
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  NEED(11, KEY(1));
  if (mode(c) == FAKE_MODE_GRANT)
    for (int i = 1; i <= 3; i++)
      if (KEY(i).p != NULL)
        r_del(c, KEY(i));
  if (r_exists(c, KEY(1)))
    return fake_out_int(c->r->out, 0);
  double now = time_ms(c);
  long long readers;
  NEED(16, KEY(2));
  TRY(16, r_zrem_expired(c, KEY(2), now));
  TRY(17, r_zcard(c, KEY(2), &readers));
  if (readers > 0) {
    if (!eq(ARG(4), LIT("0"))) {
      lstr_t intent;
      NEED(19, KEY(3));
      TRY(19, r_get(c, KEY(3), &intent));
      if (intent.p == NULL || eq(intent, ARG(3))) {
        NEED(21, ARG(3));
        NEED(21, ARG(4));
        TRY(21, r_set(c, KEY(3), ARG(3), ARG(4)));
      }
    }
    return fake_out_int(c->r->out, -1);
  }
  NEED(26, ARG(1));
  NEED(26, ARG(2));
  TRY(26, r_set(c, KEY(1), ARG(1), ARG(2)));
  lstr_t intent;
  NEED(27, KEY(3));
  TRY(27, r_get(c, KEY(3), &intent));
  if (eq(intent, ARG(3)))
    r_del(c, KEY(3));
  if (c->r->nkeys == 4) {
    double token;
    int failed;
    status_t st = next_token(c, KEY(4), 32, 36, &token, &failed);
    return st != ST_OK || failed ? st : reply_num(c, token);
  }
  return fake_out_int(c->r->out, 1);
}

/* ---- rw_extend.lua ---------------------------------------------------------------
 * GRANT: a writer key holding another value is deleted first, and for a
 * write hold the readers too.  REFUSE: 0. */
static status_t rw_extend(const ctx_t *c) {
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  NEED(19, KEY(1));
  NEED(29, KEY(2));
  int write = eq(ARG(3), LIT("w"));
  if (mode(c) == FAKE_MODE_GRANT) {
    lstr_t v;
    if (r_get(c, KEY(1), &v) == FDB_OK && v.p != NULL && !eq(v, ARG(1)))
      r_del(c, KEY(1));
    if (write && KEY(2).p != NULL)
      r_del(c, KEY(2));
  }
  double now = time_ms(c);
  lstr_t writer;
  TRY(19, r_get(c, KEY(1), &writer));
  int has_writer = writer.p != NULL, ours = eq(writer, ARG(1));
  int failed;
  status_t st;
  if (write) {
    if (ours) {
      NEED(34, ARG(2));
      TRY(34, r_pexpire(c, KEY(1), ARG(2), 1));
      return fake_out_int(c->r->out, 1);
    }
    if (has_writer)
      return fake_out_int(c->r->out, 0);
    long long readers;
    TRY(42, r_zrem_expired(c, KEY(2), now));
    TRY(43, r_zcard(c, KEY(2), &readers));
    if (readers > 0)
      return fake_out_int(c->r->out, 0);
    NEED(46, ARG(1));
    NEED(46, ARG(2));
    TRY(46, r_set(c, KEY(1), ARG(1), ARG(2)));
    if ((st = rw_raise_counter(c, &failed)) != ST_OK || failed)
      return st;
    return fake_out_int(c->r->out, 2);
  }
  double ttl, score;
  int found;
  char buf[FMT_SIZE];
  if (!tonum(ARG(2), &ttl))
    return lua_fail(c, 50, ARITH_NIL);
  lstr_t expiry = fmt0(buf, now + ttl);
  NEED(51, ARG(1));
  TRY(51, r_zscore(c, KEY(2), ARG(1), &found, &score));
  if (found && score >= now) {
    TRY(53, r_zadd(c, KEY(2), expiry, ARG(1), FDB_ZADD_XX));
    if ((st = follow_latest_reader(c, 29, 30, &failed)) != ST_OK || failed)
      return st;
    return fake_out_int(c->r->out, 1);
  }
  if (has_writer)
    return fake_out_int(c->r->out, 0);
  TRY(62, r_zrem_expired(c, KEY(2), now));
  TRY(63, r_zadd(c, KEY(2), expiry, ARG(1), 0));
  if ((st = follow_latest_reader(c, 29, 30, &failed)) != ST_OK || failed)
    return st;
  if ((st = rw_raise_counter(c, &failed)) != ST_OK || failed)
    return st;
  return fake_out_int(c->r->out, 2);
}

/* ---- rw_release.lua --------------------------------------------------------------
 * REFUSE: 0, nothing released or announced.  GRANT: as usual, answered 1. */
static status_t rw_release(const ctx_t *c) {
  int released = 0, changed = 0;
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  lstr_t v;
  NEED(13, KEY(1));
  TRY(13, r_get(c, KEY(1), &v));
  if (eq(v, ARG(1))) {
    r_del(c, KEY(1));
    released = 1;
  } else {
    int found, removed;
    double score;
    NEED(17, KEY(2));
    NEED(17, ARG(1));
    TRY(17, r_zscore(c, KEY(2), ARG(1), &found, &score));
    if (found) {
      TRY(19, fdb_zrem(c->r->db, c->r->now, KEY(2).p, KEY(2).len, ARG(1).p, ARG(1).len, &removed));
      if (score >= time_ms(c))
        released = 1;
    }
  }
  if (released)
    changed = 1;
  if (!eq(ARG(2), LIT(""))) {
    lstr_t intent;
    NEED(30, KEY(3));
    TRY(30, r_get(c, KEY(3), &intent));
    if (eq(intent, ARG(2))) {
      r_del(c, KEY(3));
      changed = 1;
    }
  }
  if (changed && !eq(ARG(4), LIT("0"))) {
    NEED(37, ARG(3));
    if (eq(ARG(4), LIT("2")))
      r_spublish(c, ARG(3), LIT(""));
    else
      r_publish(c, ARG(3), LIT(""));
  }
  return fake_out_int(c->r->out, mode(c) == FAKE_MODE_GRANT ? 1 : released);
}

/* ---- rw_fence_commit.lua ---------------------------------------------------------
 * The same in every mode (it follows a grant). */
static status_t rw_fence_commit(const ctx_t *c) {
  static const int counter_lines[3] = {6, 7, 8};
  lstr_t v;
  int failed;
  NEED(6, KEY(3));
  status_t st = raise_to(c, KEY(3), ARG(2), counter_lines, &failed);
  if (st != ST_OK || failed)
    return st;
  NEED(10, KEY(1));
  TRY(10, r_get(c, KEY(1), &v));
  if (eq(v, ARG(1)))
    return fake_out_int(c->r->out, 1);
  int found;
  double score;
  NEED(13, KEY(2));
  NEED(13, ARG(1));
  TRY(13, r_zscore(c, KEY(2), ARG(1), &found, &score));
  if (!found)
    return fake_out_int(c->r->out, 0);
  return fake_out_int(c->r->out, score < time_ms(c) ? 0 : 1);
}

/* ---- sem_acquire.lua -------------------------------------------------------------
 * GRANT: the slot deleted first, and a limit key that disagrees.  REFUSE:
 * 0 (the slot is held; the limit agrees). */
static status_t sem_acquire(const ctx_t *c) {
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  NEED(9, KEY(2));
  lstr_t limit;
  if (mode(c) == FAKE_MODE_GRANT) {
    if (KEY(1).p != NULL)
      r_del(c, KEY(1));
    if (r_get(c, KEY(2), &limit) == FDB_OK && limit.p != NULL && !eq(limit, ARG(3)))
      r_del(c, KEY(2));
  }
  TRY(9, r_get(c, KEY(2), &limit));
  int has_limit = limit.p != NULL;
  if (has_limit && !eq(limit, ARG(3))) {
    double other;
    if (!tonum(limit, &other))
      other = 1;
    if (other < 1)
      other = 1;
    return reply_num(c, -other);
  }
  NEED(17, KEY(1));
  if (r_exists(c, KEY(1)))
    return fake_out_int(c->r->out, 0);
  double result = 1;
  if (c->r->nkeys == 3) {
    int failed;
    status_t st = next_token(c, KEY(3), 24, 28, &result, &failed);
    if (st != ST_OK || failed)
      return st;
  }
  NEED(31, ARG(1));
  NEED(31, ARG(2));
  TRY(31, r_set(c, KEY(1), ARG(1), ARG(2)));
  if (!has_limit) {
    NEED(35, ARG(3));
    TRY(35, r_set(c, KEY(2), ARG(3), ARG(2)));
  } else {
    double ttl;
    long long left = r_pttl(c, KEY(2));
    if (!tonum(ARG(2), &ttl))
      return lua_fail(c, 36, CMP_NIL);
    if ((double)left < ttl)
      TRY(37, r_pexpire(c, KEY(2), ARG(2), 1));
  }
  return reply_num(c, result);
}

/* ---- sem_extend.lua --------------------------------------------------------------
 * GRANT: a slot holding another value is deleted first, and a limit key
 * that disagrees.  REFUSE: 0. */
static status_t sem_extend(const ctx_t *c) {
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  NEED(16, KEY(1));
  NEED(17, KEY(2));
  lstr_t slot, limit;
  if (mode(c) == FAKE_MODE_GRANT) {
    if (r_get(c, KEY(1), &slot) == FDB_OK && slot.p != NULL && !eq(slot, ARG(1)))
      r_del(c, KEY(1));
    if (r_get(c, KEY(2), &limit) == FDB_OK && limit.p != NULL && !eq(limit, ARG(3)))
      r_del(c, KEY(2));
  }
  TRY(16, r_get(c, KEY(1), &slot));
  int has_slot = slot.p != NULL, slot_ours = eq(slot, ARG(1));
  TRY(17, r_get(c, KEY(2), &limit));
  int has_limit = limit.p != NULL, limit_agrees = eq(limit, ARG(3));
  int result = 1;
  if (!has_slot) {
    if (has_limit && !limit_agrees)
      return fake_out_int(c->r->out, 0);
    NEED(23, ARG(1));
    NEED(23, ARG(2));
    TRY(23, r_set(c, KEY(1), ARG(1), ARG(2)));
    if (c->r->nkeys == 3) {
      static const int counter_lines[3] = {25, 26, 27};
      int failed;
      status_t st = raise_to(c, KEY(3), ARG(4), counter_lines, &failed);
      if (st != ST_OK || failed)
        return st;
    }
    result = 2;
  } else if (!slot_ours) {
    return fake_out_int(c->r->out, 0);
  } else {
    NEED(34, ARG(2));
    TRY(34, r_pexpire(c, KEY(1), ARG(2), 1));
  }
  if (!has_limit) {
    NEED(37, ARG(3));
    TRY(37, r_set(c, KEY(2), ARG(3), ARG(2)));
  } else if (limit_agrees) {
    double ttl;
    long long left = r_pttl(c, KEY(2));
    if (!tonum(ARG(2), &ttl))
      return lua_fail(c, 38, CMP_NIL);
    if ((double)left < ttl)
      TRY(39, r_pexpire(c, KEY(2), ARG(2), 1));
  }
  return fake_out_int(c->r->out, result);
}

/* ---- sem_release.lua -------------------------------------------------------------
 * REFUSE: 0, nothing deleted or announced.  GRANT: another's slot stays,
 * answered 1. */
static status_t sem_release(const ctx_t *c) {
  if (mode(c) == FAKE_MODE_REFUSE)
    return fake_out_int(c->r->out, 0);
  lstr_t v;
  NEED(12, KEY(1));
  TRY(12, r_get(c, KEY(1), &v));
  if (!eq(v, ARG(1)))
    return fake_out_int(c->r->out, mode(c) == FAKE_MODE_GRANT);
  r_del(c, KEY(1));
  if (!eq(ARG(3), LIT("0"))) {
    NEED(19, ARG(2));
    if (eq(ARG(3), LIT("2")))
      r_spublish(c, ARG(2), ARG(1));
    else
      r_publish(c, ARG(2), ARG(1));
  }
  return fake_out_int(c->r->out, 1);
}

typedef status_t (*script_fn_t)(const ctx_t *c);

static const script_fn_t script_fns[SCRIPT_COUNT] = {
    [SCRIPT_RELEASE] = release,
    [SCRIPT_EXTEND] = extend,
    [SCRIPT_ACQUIRE_MANY] = acquire_many,
    [SCRIPT_ACQUIRE_FENCED] = acquire_fenced,
    [SCRIPT_FENCE_COMMIT] = fence_commit,
    [SCRIPT_SEM_ACQUIRE] = sem_acquire,
    [SCRIPT_SEM_EXTEND] = sem_extend,
    [SCRIPT_SEM_RELEASE] = sem_release,
    [SCRIPT_RW_READ] = rw_read,
    [SCRIPT_RW_WRITE] = rw_write,
    [SCRIPT_RW_EXTEND] = rw_extend,
    [SCRIPT_RW_RELEASE] = rw_release,
    [SCRIPT_RW_FENCE_COMMIT] = rw_fence_commit,
    [SCRIPT_INSPECT] = inspect,
    [SCRIPT_REVOKE] = revoke,
};

status_t fake_script_run(script_id_t id, const fscript_run_t *run) {
  if ((unsigned)id >= SCRIPT_COUNT)
    return fake_out_error(run->out, "ERR unknown script");
  ctx_t c = {run, script_get(id)->sha1};
  size_t at = run->out->len;
  status_t st = script_fns[id](&c);
  if (st != ST_OK)
    run->out->len = at;
  return st;
}
