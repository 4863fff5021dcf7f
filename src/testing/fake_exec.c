/* fake_exec.c: a fake master's data commands (fake_exec.h): the command
 * table (names, arities as Redis 7.0's), each command's argument rules and
 * reply, EVAL / EVALSHA / SCRIPT over the library's scripts
 * (fake_scripts.c), and the modes for SET NX.  Errors are Redis 7.0's words;
 * an allocation that fails while a command runs is answered as Redis
 * answers a write past maxmemory ("-OOM ..."). */
#include "testing/fake_exec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "testing/fake_db.h"
#include "testing/fake_scripts.h"

/* One command's call. */
typedef struct {
  fake_db_t *db;
  const fake_env_t *env;
  fdb_now_t now;
  int argc;
  const char *const *argv;
  const size_t *lens;
  fake_out_t *out;
} call_t;

typedef status_t (*cmd_fn_t)(const call_t *c);

typedef struct {
  const char *name; /* lower case, as Redis names it in errors */
  int arity;        /* Redis's: n exactly, -n at least n */
  cmd_fn_t fn;
} cmd_t;

/* What Redis answers EVAL of a script it does not have: here, any script
 * that is not the library's. */
#define NOT_OURS "ERR this fake master runs only redlock-c's own scripts (src/lua)"

static int is(const call_t *c, int i, const char *word) {
  size_t n = strlen(word);
  return c->lens[i] == n && strncasecmp(c->argv[i], word, n) == 0;
}

static status_t err(const call_t *c, fdb_err_t e) {
  return e == FDB_NOMEM ? ST_ENOMEM : fake_out_error(c->out, fdb_err_text(e));
}

/* Redis's addReplyErrorFormat: the text with CR and LF made spaces. */
static status_t errorf(const call_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static status_t errorf(const call_t *c, const char *fmt, ...) {
  char buf[640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  for (char *p = buf; *p != '\0'; p++)
    if (*p == '\r' || *p == '\n')
      *p = ' ';
  return fake_out_error(c->out, buf);
}

/* A copy of argument i as a C string (cut at a NUL, as Redis's %s is). */
static const char *cstr(const call_t *c, int i, char *buf, size_t size) {
  size_t n = strnlen(c->argv[i], c->lens[i]);
  if (n >= size)
    n = size - 1;
  memcpy(buf, c->argv[i], n);
  buf[n] = '\0';
  return buf;
}

#define KEY(c, i) (c)->argv[i], (c)->lens[i]

/* ---- strings ------------------------------------------------------------------ */

static status_t cmd_get(const call_t *c) {
  const char *v;
  size_t n;
  fdb_err_t e = fdb_get(c->db, c->now, KEY(c, 1), &v, &n);
  if (e != FDB_OK)
    return err(c, e);
  return v != NULL ? fake_out_bulk(c->out, v, n) : fake_out_nil(c->out);
}

#define SET_NX 0x1
#define SET_XX 0x2
#define SET_GET 0x4
#define SET_KEEPTTL 0x8
#define SET_EX 0x10
#define SET_PX 0x20
#define SET_EXAT 0x40
#define SET_PXAT 0x80
#define SET_EXPIRY (SET_EX | SET_PX | SET_EXAT | SET_PXAT)

static status_t cmd_set(const call_t *c) {
  int flags = 0, expire_at = 0;
  /* Redis 7.0's parseExtendedStringArgumentsOrReply */
  for (int j = 3; j < c->argc; j++) {
    int has_next = j + 1 < c->argc;
    if (is(c, j, "nx") && !(flags & SET_XX)) {
      flags |= SET_NX;
    } else if (is(c, j, "xx") && !(flags & SET_NX)) {
      flags |= SET_XX;
    } else if (is(c, j, "get")) {
      flags |= SET_GET;
    } else if (is(c, j, "keepttl") && !(flags & SET_EXPIRY)) {
      flags |= SET_KEEPTTL;
    } else if (!(flags & (SET_EXPIRY | SET_KEEPTTL)) && has_next &&
               (is(c, j, "ex") || is(c, j, "px") || is(c, j, "exat") || is(c, j, "pxat"))) {
      flags |= is(c, j, "ex")     ? SET_EX
               : is(c, j, "px")   ? SET_PX
               : is(c, j, "exat") ? SET_EXAT
                                  : SET_PXAT;
      expire_at = ++j;
    } else {
      return err(c, FDB_SYNTAX);
    }
  }
  int64_t when = -1;
  if (expire_at) {
    int64_t unit = flags & (SET_EX | SET_EXAT) ? 1000 : 1;
    fdb_err_t e = fdb_set_expiry(c->now, KEY(c, expire_at), unit,
                                 (flags & (SET_EXAT | SET_PXAT)) != 0, &when);
    if (e != FDB_OK)
      return err(c, e);
  }
  /* the modes: an acquisition's SET NX meets no holder, or one */
  if ((flags & SET_NX) && c->env->mode == FAKE_MODE_REFUSE)
    return fake_out_nil(c->out);
  if ((flags & SET_NX) && c->env->mode == FAKE_MODE_GRANT)
    fdb_del(c->db, c->now, KEY(c, 1));
  if (flags & SET_GET) {
    /* the old value is the reply (WRONGTYPE: nothing set) */
    const char *v;
    size_t n;
    fdb_err_t e = fdb_get(c->db, c->now, KEY(c, 1), &v, &n);
    if (e != FDB_OK)
      return err(c, e);
    status_t st = v != NULL ? fake_out_bulk(c->out, v, n) : fake_out_nil(c->out);
    if (st != ST_OK)
      return st;
  }
  int found = fdb_find(c->db, c->now, KEY(c, 1)) != NULL;
  if (((flags & SET_NX) && found) || ((flags & SET_XX) && !found))
    return flags & SET_GET ? ST_OK : fake_out_nil(c->out);
  fdb_err_t e = fdb_set(c->db, c->now, KEY(c, 1), KEY(c, 2), when, (flags & SET_KEEPTTL) != 0);
  if (e != FDB_OK)
    return err(c, e);
  return flags & SET_GET ? ST_OK : fake_out_status(c->out, "OK");
}

static status_t cmd_del(const call_t *c) {
  long long n = 0;
  for (int i = 1; i < c->argc; i++)
    n += fdb_del(c->db, c->now, KEY(c, i));
  return fake_out_int(c->out, n);
}

static status_t cmd_exists(const call_t *c) {
  long long n = 0;
  for (int i = 1; i < c->argc; i++)
    n += fdb_find(c->db, c->now, KEY(c, i)) != NULL;
  return fake_out_int(c->out, n);
}

static status_t pexpire(const call_t *c, int relative) {
  int flags = 0;
  char buf[160];
  for (int j = 3; j < c->argc; j++) {
    if (is(c, j, "nx"))
      flags |= FDB_EXPIRE_NX;
    else if (is(c, j, "xx"))
      flags |= FDB_EXPIRE_XX;
    else if (is(c, j, "gt"))
      flags |= FDB_EXPIRE_GT;
    else if (is(c, j, "lt"))
      flags |= FDB_EXPIRE_LT;
    else
      return errorf(c, "ERR Unsupported option %s", cstr(c, j, buf, sizeof buf));
  }
  if ((flags & FDB_EXPIRE_NX) && (flags & (FDB_EXPIRE_XX | FDB_EXPIRE_GT | FDB_EXPIRE_LT)))
    return fake_out_error(c->out,
                          "ERR NX and XX, GT or LT options at the same time are not compatible");
  if ((flags & FDB_EXPIRE_GT) && (flags & FDB_EXPIRE_LT))
    return fake_out_error(c->out, "ERR GT and LT options at the same time are not compatible");
  int64_t when;
  fdb_err_t e =
      fdb_pexpire_arg(c->now, KEY(c, 2), relative,
                      relative ? FDB_BAD_EXPIRE_PEXPIRE : FDB_BAD_EXPIRE_PEXPIREAT, &when);
  if (e != FDB_OK)
    return err(c, e);
  return fake_out_int(c->out, fdb_pexpireat(c->db, c->now, KEY(c, 1), when, flags));
}

static status_t cmd_pexpire(const call_t *c) { return pexpire(c, 1); }
static status_t cmd_pexpireat(const call_t *c) { return pexpire(c, 0); }

static status_t cmd_pttl(const call_t *c) {
  return fake_out_int(c->out, fdb_pttl(c->db, c->now, KEY(c, 1)));
}

static status_t cmd_time(const call_t *c) {
  char s[24], us[24];
  int ns = snprintf(s, sizeof s, "%llu", (unsigned long long)(c->now.us / 1000000));
  int nus = snprintf(us, sizeof us, "%llu", (unsigned long long)(c->now.us % 1000000));
  size_t at = c->out->len;
  status_t st = fake_out_array(c->out, 2);
  if (st == ST_OK)
    st = fake_out_bulk(c->out, s, (size_t)ns);
  if (st == ST_OK)
    st = fake_out_bulk(c->out, us, (size_t)nus);
  if (st != ST_OK)
    c->out->len = at;
  return st;
}

static status_t cmd_publish(const call_t *c) {
  long long n = c->env->publish != NULL ? c->env->publish(c->env->arg, KEY(c, 1), KEY(c, 2)) : 0;
  return fake_out_int(c->out, n);
}

/* ---- sorted sets -------------------------------------------------------------- */

static status_t score_reply(const call_t *c, double score) {
  char buf[32];
  return fake_out_bulk(c->out, buf, fdb_format_score(buf, score));
}

static status_t cmd_zadd(const call_t *c) {
  int flags = 0, ch = 0, j = 2;
  for (; j < c->argc; j++) {
    if (is(c, j, "nx"))
      flags |= FDB_ZADD_NX;
    else if (is(c, j, "xx"))
      flags |= FDB_ZADD_XX;
    else if (is(c, j, "gt"))
      flags |= FDB_ZADD_GT;
    else if (is(c, j, "lt"))
      flags |= FDB_ZADD_LT;
    else if (is(c, j, "ch"))
      ch = 1;
    else if (is(c, j, "incr"))
      flags |= FDB_ZADD_INCR;
    else
      break;
  }
  int elements = c->argc - j;
  if (elements % 2 != 0 || elements == 0)
    return err(c, FDB_SYNTAX);
  elements /= 2;
  if ((flags & FDB_ZADD_NX) && (flags & FDB_ZADD_XX))
    return fake_out_error(c->out, "ERR XX and NX options at the same time are not compatible");
  if (((flags & FDB_ZADD_GT) && (flags & FDB_ZADD_NX)) ||
      ((flags & FDB_ZADD_LT) && (flags & FDB_ZADD_NX)) ||
      ((flags & FDB_ZADD_GT) && (flags & FDB_ZADD_LT)))
    return fake_out_error(c->out,
                          "ERR GT, LT, and/or NX options at the same time are not compatible");
  if ((flags & FDB_ZADD_INCR) && elements > 1)
    return fake_out_error(c->out, "ERR INCR option supports a single increment-element pair");
  /* every score is parsed before anything is added */
  for (int i = 0; i < elements; i++) {
    double d;
    if (!fdb_parse_double(KEY(c, j + 2 * i), &d))
      return err(c, FDB_NOT_FLOAT);
  }
  long long added = 0, updated = 0;
  int processed = 0;
  double result = 0;
  for (int i = 0; i < elements; i++) {
    double d;
    int changed;
    fdb_parse_double(KEY(c, j + 2 * i), &d);
    fdb_err_t e =
        fdb_zadd(c->db, c->now, KEY(c, 1), d, KEY(c, j + 2 * i + 1), flags, &changed, &result);
    if (e == FDB_NOT_FLOAT)
      return fake_out_error(c->out, "ERR resulting score is not a number (NaN)");
    if (e != FDB_OK)
      return err(c, e);
    added += changed == 1;
    updated += changed == 2;
    processed += changed >= 0;
  }
  if (flags & FDB_ZADD_INCR)
    return processed ? score_reply(c, result) : fake_out_nil(c->out);
  return fake_out_int(c->out, ch ? added + updated : added);
}

static status_t cmd_zscore(const call_t *c) {
  int found;
  double score;
  fdb_err_t e = fdb_zscore(c->db, c->now, KEY(c, 1), KEY(c, 2), &found, &score);
  if (e != FDB_OK)
    return err(c, e);
  return found ? score_reply(c, score) : fake_out_nil(c->out);
}

static status_t cmd_zrem(const call_t *c) {
  long long n = 0;
  for (int i = 2; i < c->argc; i++) {
    int removed;
    fdb_err_t e = fdb_zrem(c->db, c->now, KEY(c, 1), KEY(c, i), &removed);
    if (e != FDB_OK)
      return err(c, e);
    n += removed;
  }
  return fake_out_int(c->out, n);
}

static status_t cmd_zcard(const call_t *c) {
  long long n;
  fdb_err_t e = fdb_zcard(c->db, c->now, KEY(c, 1), &n);
  return e != FDB_OK ? err(c, e) : fake_out_int(c->out, n);
}

static status_t cmd_zremrangebyscore(const call_t *c) {
  double min, max;
  int min_ex, max_ex;
  if (!fdb_parse_range_end(KEY(c, 2), &min, &min_ex) ||
      !fdb_parse_range_end(KEY(c, 3), &max, &max_ex))
    return err(c, FDB_RANGE_NOT_FLOAT);
  long long n;
  fdb_err_t e = fdb_zremrangebyscore(c->db, c->now, KEY(c, 1), min, min_ex, max, max_ex, &n);
  return e != FDB_OK ? err(c, e) : fake_out_int(c->out, n);
}

/* ZRANGE key start stop [REV] [WITHSCORES]: by rank (what the scripts
 * use); BYSCORE, BYLEX and LIMIT are not run by the fake. */
static status_t cmd_zrange(const call_t *c) {
  int withscores = 0, rev = 0, bylex = 0, byscore = 0;
  long long offset = 0, count = -1;
  /* Redis 7.0's zrangeGenericCommand's options */
  for (int j = 4; j < c->argc; j++) {
    if (is(c, j, "withscores")) {
      withscores = 1;
    } else if (is(c, j, "limit") && c->argc - j - 1 >= 2) {
      if (!fdb_parse_ll(KEY(c, j + 1), &offset) || !fdb_parse_ll(KEY(c, j + 2), &count))
        return err(c, FDB_NOT_INT);
      j += 2;
    } else if (is(c, j, "rev") && !rev) {
      rev = 1;
    } else if (is(c, j, "bylex") && !bylex && !byscore) {
      bylex = 1;
    } else if (is(c, j, "byscore") && !bylex && !byscore) {
      byscore = 1;
    } else {
      return err(c, FDB_SYNTAX);
    }
  }
  if ((offset != 0 || count != -1) && !bylex && !byscore)
    return fake_out_error(c->out, "ERR syntax error, LIMIT is only supported in combination with "
                                  "either BYSCORE or BYLEX");
  if (withscores && bylex)
    return fake_out_error(c->out,
                          "ERR syntax error, WITHSCORES not supported in combination with BYLEX");
  if (bylex || byscore)
    return fake_out_error(c->out, "ERR this fake master runs ZRANGE by rank only");
  long long start, end;
  if (!fdb_parse_ll(KEY(c, 2), &start) || !fdb_parse_ll(KEY(c, 3), &end))
    return err(c, FDB_NOT_INT);
  const fdb_zmember_t *z;
  size_t zn;
  fdb_err_t e = fdb_zmembers(c->db, c->now, KEY(c, 1), &z, &zn);
  if (e != FDB_OK)
    return err(c, e);
  long long len = (long long)zn;
  if (start < 0)
    start += len;
  if (end < 0)
    end += len;
  if (start < 0)
    start = 0;
  if (start > end || start >= len)
    return fake_out_array(c->out, 0);
  if (end >= len)
    end = len - 1;
  size_t at = c->out->len;
  status_t st = fake_out_array(c->out, (end - start + 1) * (withscores ? 2 : 1));
  for (long long r = start; r <= end && st == ST_OK; r++) {
    const fdb_zmember_t *m = &z[rev ? len - 1 - r : r];
    st = fake_out_bulk(c->out, m->member, m->len);
    if (st == ST_OK && withscores)
      st = score_reply(c, m->score);
  }
  if (st != ST_OK)
    c->out->len = at;
  return st;
}

/* ---- scripts --------------------------------------------------------------------- */

static status_t run_script(const call_t *c, int id) {
  long long numkeys;
  if (!fdb_parse_ll(KEY(c, 2), &numkeys))
    return err(c, FDB_NOT_INT);
  if (numkeys > c->argc - 3)
    return fake_out_error(c->out, "ERR Number of keys can't be greater than number of args");
  if (numkeys < 0)
    return fake_out_error(c->out, "ERR Number of keys can't be negative");
  int eval = c->lens[0] == 4;
  if (eval && id < 0)
    return fake_out_error(c->out, NOT_OURS);
  if (!eval && (id < 0 || !fdb_script_loaded(c->db, (unsigned)id)))
    return fake_out_error(c->out, "NOSCRIPT No matching script. Please use EVAL.");
  fdb_script_set_loaded(c->db, (unsigned)id, 1);
  int k = (int)numkeys;
  fscript_run_t run = {
      .db = c->db,
      .env = c->env,
      .now = c->now,
      .nkeys = k,
      .nargs = c->argc - 3 - k,
      .keys = c->argv + 3,
      .args = c->argv + 3 + k,
      .key_lens = c->lens + 3,
      .arg_lens = c->lens + 3 + k,
      .out = c->out,
  };
  return fake_script_run((script_id_t)id, &run);
}

static status_t cmd_eval(const call_t *c) { return run_script(c, fake_script_by_body(KEY(c, 1))); }

static status_t cmd_evalsha(const call_t *c) {
  return run_script(c, fake_script_by_sha(KEY(c, 1)));
}

static status_t cmd_script_load(const call_t *c) {
  int id = fake_script_by_body(KEY(c, 2));
  if (id < 0)
    return fake_out_error(c->out, NOT_OURS);
  fdb_script_set_loaded(c->db, (unsigned)id, 1);
  return fake_out_bulk(c->out, script_get((script_id_t)id)->sha1, 40);
}

static status_t cmd_script_exists(const call_t *c) {
  size_t at = c->out->len;
  status_t st = fake_out_array(c->out, c->argc - 2);
  for (int i = 2; i < c->argc && st == ST_OK; i++) {
    int id = fake_script_by_sha(KEY(c, i)); /* any case, as EVALSHA */
    int yes = id >= 0 && fdb_script_loaded(c->db, (unsigned)id);
    st = fake_out_int(c->out, yes);
  }
  if (st != ST_OK)
    c->out->len = at;
  return st;
}

static status_t cmd_script_flush(const call_t *c) {
  if (c->argc == 3 && !is(c, 2, "sync") && !is(c, 2, "async"))
    return fake_out_error(c->out, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
  if (c->argc > 3)
    return fake_out_error(c->out, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
  for (unsigned id = 0; id < SCRIPT_COUNT; id++)
    fdb_script_set_loaded(c->db, id, 0);
  return fake_out_status(c->out, "OK");
}

static const cmd_t script_subcommands[] = {
    {"script|load", 3, cmd_script_load},
    {"script|exists", -3, cmd_script_exists},
    {"script|flush", -2, cmd_script_flush},
};

static status_t arity_error(const call_t *c, const char *name) {
  return fake_out_arity_error(c->out, name, strlen(name));
}

static int arity_ok(const cmd_t *cmd, int argc) {
  return cmd->arity > 0 ? argc == cmd->arity : argc >= -cmd->arity;
}

static status_t cmd_script(const call_t *c) {
  for (size_t i = 0; i < sizeof script_subcommands / sizeof script_subcommands[0]; i++) {
    const cmd_t *sub = &script_subcommands[i];
    if (is(c, 1, sub->name + sizeof "script|" - 1))
      return arity_ok(sub, c->argc) ? sub->fn(c) : arity_error(c, sub->name);
  }
  char buf[160];
  return errorf(c, "ERR unknown subcommand '%.128s'. Try SCRIPT HELP.",
                cstr(c, 1, buf, sizeof buf));
}

static const cmd_t commands[] = {
    {"get", 2, cmd_get},
    {"set", -3, cmd_set},
    {"del", -2, cmd_del},
    {"exists", -2, cmd_exists},
    {"pexpire", -3, cmd_pexpire},
    {"pexpireat", -3, cmd_pexpireat},
    {"pttl", 2, cmd_pttl},
    {"time", 1, cmd_time},
    {"publish", 3, cmd_publish},
    {"zadd", -4, cmd_zadd},
    {"zscore", 3, cmd_zscore},
    {"zrem", -3, cmd_zrem},
    {"zrange", -4, cmd_zrange},
    {"zcard", 2, cmd_zcard},
    {"zremrangebyscore", 4, cmd_zremrangebyscore},
    {"eval", -3, cmd_eval},
    {"evalsha", -3, cmd_evalsha},
    {"script", -2, cmd_script},
};

static status_t unknown(const call_t *c) {
  /* Redis 7.0: the name, then the arguments quoted while under 128 bytes */
  char args[400], name[160];
  size_t n = 0;
  args[0] = '\0';
  for (int i = 1; i < c->argc && n < 128; i++) {
    char arg[160];
    int w =
        snprintf(args + n, sizeof args - n, "'%.*s' ", (int)(128 - n), cstr(c, i, arg, sizeof arg));
    if (w > 0)
      n += (size_t)w;
  }
  return errorf(c, "ERR unknown command '%.128s', with args beginning with: %s",
                cstr(c, 0, name, sizeof name), args);
}

status_t fake_exec(fake_db_t *db, const fake_env_t *env, int argc, const char *const *argv,
                   const size_t *lens, fake_out_t *out) {
  uint64_t us = env->now_us(env->arg);
  call_t c = {db, env, {us, (int64_t)(us / 1000)}, argc, argv, lens, out};
  size_t at = out->len;
  if (argc < 1)
    return ST_OK;
  fdb_sweep(db, c.now);
  const cmd_t *cmd = NULL;
  for (size_t i = 0; i < sizeof commands / sizeof commands[0] && cmd == NULL; i++)
    if (is(&c, 0, commands[i].name))
      cmd = &commands[i];
  status_t st;
  if (cmd == NULL)
    st = unknown(&c);
  else if (!arity_ok(cmd, argc))
    st = arity_error(&c, cmd->name);
  else
    st = cmd->fn(&c);
  if (st == ST_ENOMEM) {
    /* the command could not finish (or its reply be written) */
    out->len = at;
    st = fake_out_error(out, fdb_err_text(FDB_NOMEM));
  }
  return st;
}
