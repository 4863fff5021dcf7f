/* fake_db.c: a fake master's keyspace (fake_db.h): a hash table of keys,
 * strings and sorted sets, with Redis's expiry and number rules. */
#include "testing/fake_db.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

#define FDB_MIN_BUCKETS 64
/* Buckets fdb_sweep looks at per command. */
#define FDB_SWEEP_BUCKETS 8

struct fake_db {
  fdb_entry_t **buckets;
  size_t nbuckets, count;
  size_t sweep_at;       /* the next bucket fdb_sweep looks at */
  unsigned long scripts; /* the script cache: a bit per library script id */
};

static const char *const err_texts[] = {
    [FDB_WRONGTYPE] = "WRONGTYPE Operation against a key holding the wrong kind of value",
    [FDB_NOT_INT] = "ERR value is not an integer or out of range",
    [FDB_NOT_FLOAT] = "ERR value is not a valid float",
    [FDB_RANGE_NOT_FLOAT] = "ERR min or max is not a float",
    [FDB_SYNTAX] = "ERR syntax error",
    [FDB_BAD_EXPIRE_SET] = "ERR invalid expire time in 'set' command",
    [FDB_BAD_EXPIRE_PEXPIRE] = "ERR invalid expire time in 'pexpire' command",
    [FDB_BAD_EXPIRE_PEXPIREAT] = "ERR invalid expire time in 'pexpireat' command",
    /* what Redis answers a write past maxmemory */
    [FDB_NOMEM] = "OOM command not allowed when used memory > 'maxmemory'.",
};

const char *fdb_err_text(fdb_err_t err) {
  return (unsigned)err < sizeof err_texts / sizeof err_texts[0] && err_texts[err] != NULL
             ? err_texts[err]
             : "ERR";
}

/* ---- the table ----------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

fake_db_t *fake_db_new(void) {
  fake_db_t *db = rl_calloc(1, sizeof *db);
  if (db == NULL)
    return NULL;
  db->buckets = rl_calloc(FDB_MIN_BUCKETS, sizeof *db->buckets);
  if (db->buckets == NULL) {
    rl_free(db);
    return NULL;
  }
  db->nbuckets = FDB_MIN_BUCKETS;
  return db;
}

static void entry_free_value(fdb_entry_t *e) {
  rl_free(e->str);
  e->str = NULL;
  e->str_len = 0;
  for (size_t i = 0; i < e->zn; i++)
    rl_free(e->z[i].member);
  rl_free(e->z);
  e->z = NULL;
  e->zn = e->zcap = 0;
}

static void entry_free(fdb_entry_t *e) {
  entry_free_value(e);
  rl_free(e->key);
  rl_free(e);
}

void fake_db_clear(fake_db_t *db) {
  if (db == NULL)
    return;
  for (size_t b = 0; b < db->nbuckets; b++) {
    for (fdb_entry_t *e = db->buckets[b], *next; e != NULL; e = next) {
      next = e->next;
      entry_free(e);
    }
    db->buckets[b] = NULL;
  }
  db->count = 0;
  db->scripts = 0;
}

void fake_db_free(fake_db_t *db) {
  if (db == NULL)
    return;
  fake_db_clear(db);
  rl_free(db->buckets);
  rl_free(db);
}

int fdb_script_loaded(const fake_db_t *db, unsigned id) {
  return id < sizeof db->scripts * CHAR_BIT && (db->scripts >> id & 1ul) != 0;
}

void fdb_script_set_loaded(fake_db_t *db, unsigned id, int loaded) {
  if (id >= sizeof db->scripts * CHAR_BIT)
    return;
  if (loaded)
    db->scripts |= 1ul << id;
  else
    db->scripts &= ~(1ul << id);
}

/* Doubles the table when it is full; a failed allocation keeps the old
 * one (longer chains, nothing lost). */
static void maybe_grow(fake_db_t *db) {
  if (db->count < db->nbuckets)
    return;
  size_t n = db->nbuckets * 2;
  fdb_entry_t **nb = rl_calloc(n, sizeof *nb);
  if (nb == NULL)
    return;
  for (size_t b = 0; b < db->nbuckets; b++) {
    for (fdb_entry_t *e = db->buckets[b], *next; e != NULL; e = next) {
      next = e->next;
      e->next = nb[e->hash & (n - 1)];
      nb[e->hash & (n - 1)] = e;
    }
  }
  rl_free(db->buckets);
  db->buckets = nb;
  db->nbuckets = n;
  db->sweep_at = 0;
}

static fdb_entry_t **slot_of(fake_db_t *db, const char *key, size_t len, uint64_t h) {
  fdb_entry_t **p = &db->buckets[h & (db->nbuckets - 1)];
  while (*p != NULL &&
         ((*p)->hash != h || (*p)->key_len != len || memcmp((*p)->key, key, len) != 0))
    p = &(*p)->next;
  return p;
}

static int expired(const fdb_entry_t *e, fdb_now_t now) {
  /* Redis: a key is expired once the time is past its expiry */
  return e->expire_ms >= 0 && now.ms > e->expire_ms;
}

static void unlink_entry(fake_db_t *db, fdb_entry_t **p) {
  fdb_entry_t *e = *p;
  *p = e->next;
  entry_free(e);
  db->count--;
}

fdb_entry_t *fdb_find(fake_db_t *db, fdb_now_t now, const char *key, size_t len) {
  fdb_entry_t **p = slot_of(db, key, len, hash_bytes(key, len));
  if (*p == NULL)
    return NULL;
  if (expired(*p, now)) {
    unlink_entry(db, p);
    return NULL;
  }
  return *p;
}

void fdb_sweep(fake_db_t *db, fdb_now_t now) {
  for (int i = 0; i < FDB_SWEEP_BUCKETS; i++) {
    fdb_entry_t **p = &db->buckets[db->sweep_at];
    while (*p != NULL) {
      if (expired(*p, now))
        unlink_entry(db, p);
      else
        p = &(*p)->next;
    }
    db->sweep_at = (db->sweep_at + 1) & (db->nbuckets - 1);
  }
}

/* A new empty key of type (the caller has checked it is absent). */
static fdb_entry_t *create(fake_db_t *db, const char *key, size_t len, fdb_type_t type,
                           fdb_now_t now) {
  fdb_entry_t *e = rl_calloc(1, sizeof *e);
  if (e == NULL)
    return NULL;
  e->key = rl_malloc(len ? len : 1);
  if (e->key == NULL) {
    rl_free(e);
    return NULL;
  }
  memcpy(e->key, key, len);
  e->key_len = len;
  e->hash = hash_bytes(key, len);
  e->type = type;
  e->expire_ms = -1;
  e->written_us = now.us;
  fdb_entry_t **p = &db->buckets[e->hash & (db->nbuckets - 1)];
  e->next = *p;
  *p = e;
  db->count++;
  maybe_grow(db);
  return e;
}

int fdb_del(fake_db_t *db, fdb_now_t now, const char *key, size_t len) {
  if (fdb_find(db, now, key, len) == NULL)
    return 0;
  unlink_entry(db, slot_of(db, key, len, hash_bytes(key, len)));
  return 1;
}

/* ---- what fake_exec.h offers the server ---------------------------------- */

static fdb_now_t now_of(const fake_env_t *env) {
  uint64_t us = env->now_us(env->arg);
  return (fdb_now_t){us, (int64_t)(us / 1000)};
}

int fake_db_drop(fake_db_t *db, const fake_env_t *env, const char *key, size_t len) {
  return fdb_del(db, now_of(env), key, len);
}

int fake_db_has(fake_db_t *db, const fake_env_t *env, const char *key, size_t len) {
  return fdb_find(db, now_of(env), key, len) != NULL;
}

void fake_db_forget_since(fake_db_t *db, uint64_t since_us) {
  for (size_t b = 0; b < db->nbuckets; b++) {
    fdb_entry_t **p = &db->buckets[b];
    while (*p != NULL) {
      if ((*p)->written_us >= since_us)
        unlink_entry(db, p);
      else
        p = &(*p)->next;
    }
  }
}

/* ---- strings ------------------------------------------------------------- */

fdb_err_t fdb_get(fake_db_t *db, fdb_now_t now, const char *key, size_t len, const char **val,
                  size_t *val_len) {
  fdb_entry_t *e = fdb_find(db, now, key, len);
  *val = NULL;
  *val_len = 0;
  if (e == NULL)
    return FDB_OK;
  if (e->type != FDB_STRING)
    return FDB_WRONGTYPE;
  *val = e->str;
  *val_len = e->str_len;
  return FDB_OK;
}

fdb_err_t fdb_set(fake_db_t *db, fdb_now_t now, const char *key, size_t len, const char *val,
                  size_t val_len, int64_t expire_ms, int keep_ttl) {
  char *copy = rl_malloc(val_len ? val_len : 1);
  if (copy == NULL)
    return FDB_NOMEM;
  memcpy(copy, val, val_len);
  fdb_entry_t *e = fdb_find(db, now, key, len);
  if (e == NULL) {
    e = create(db, key, len, FDB_STRING, now);
    if (e == NULL) {
      rl_free(copy);
      return FDB_NOMEM;
    }
    keep_ttl = 0;
  }
  entry_free_value(e);
  e->type = FDB_STRING;
  e->str = copy;
  e->str_len = val_len;
  if (!keep_ttl)
    e->expire_ms = expire_ms;
  e->written_us = now.us;
  return FDB_OK;
}

long long fdb_pttl(fake_db_t *db, fdb_now_t now, const char *key, size_t len) {
  fdb_entry_t *e = fdb_find(db, now, key, len);
  if (e == NULL)
    return -2;
  if (e->expire_ms < 0)
    return -1;
  long long left = e->expire_ms - now.ms;
  return left < 0 ? 0 : left;
}

int fdb_pexpireat(fake_db_t *db, fdb_now_t now, const char *key, size_t len, int64_t when_ms,
                  int flags) {
  fdb_entry_t *e = fdb_find(db, now, key, len);
  if (e == NULL)
    return 0;
  int64_t cur = e->expire_ms;
  if ((flags & FDB_EXPIRE_NX) && cur != -1)
    return 0;
  if ((flags & FDB_EXPIRE_XX) && cur == -1)
    return 0;
  /* GT: no expiry counts as infinite, so nothing is greater */
  if ((flags & FDB_EXPIRE_GT) && (cur == -1 || when_ms <= cur))
    return 0;
  if ((flags & FDB_EXPIRE_LT) && cur != -1 && when_ms >= cur)
    return 0;
  if (when_ms <= now.ms) {
    fdb_del(db, now, key, len);
    return 1;
  }
  e->expire_ms = when_ms;
  e->written_us = now.us;
  return 1;
}

/* ---- numbers ------------------------------------------------------------- */

int fdb_parse_ll(const char *s, size_t len, long long *out) {
  /* Redis's string2ll */
  if (len == 0 || len >= 21)
    return 0;
  if (len == 1 && s[0] == '0') {
    *out = 0;
    return 1;
  }
  size_t i = 0;
  int neg = 0;
  if (s[0] == '-') {
    neg = 1;
    i = 1;
    if (len == 1)
      return 0;
  }
  if (s[i] < '1' || s[i] > '9')
    return 0;
  unsigned long long v = 0;
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return 0;
    if (v > (ULLONG_MAX - (unsigned)(s[i] - '0')) / 10)
      return 0;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  if (neg) {
    if (v > (unsigned long long)LLONG_MAX + 1)
      return 0;
    *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
  } else {
    if (v > LLONG_MAX)
      return 0;
    *out = (long long)v;
  }
  return 1;
}

fdb_err_t fdb_set_expiry(fdb_now_t now, const char *s, size_t len, int64_t unit_ms, int absolute,
                         int64_t *when_ms) {
  long long v;
  if (!fdb_parse_ll(s, len, &v))
    return FDB_NOT_INT;
  if (v <= 0 || v > LLONG_MAX / unit_ms)
    return FDB_BAD_EXPIRE_SET;
  v *= unit_ms;
  if (!absolute) {
    if (v > LLONG_MAX - now.ms)
      return FDB_BAD_EXPIRE_SET;
    v += now.ms;
  }
  *when_ms = v;
  return FDB_OK;
}

fdb_err_t fdb_pexpire_arg(fdb_now_t now, const char *s, size_t len, int relative, fdb_err_t bad,
                          int64_t *when_ms) {
  long long v;
  if (!fdb_parse_ll(s, len, &v))
    return FDB_NOT_INT;
  int64_t base = relative ? now.ms : 0;
  if (v > LLONG_MAX - base)
    return bad;
  *when_ms = v + base;
  return FDB_OK;
}

/* A NUL-terminated copy of s for strtod, in buf (size bytes); 0 when it
 * does not fit (a number that long is not one the library sends). */
static int c_copy(char *buf, size_t size, const char *s, size_t len) {
  if (len >= size)
    return 0;
  memcpy(buf, s, len);
  buf[len] = '\0';
  return 1;
}

int fdb_parse_double(const char *s, size_t len, double *out) {
  char buf[512];
  if (len == 0 || isspace((unsigned char)s[0]) || !c_copy(buf, sizeof buf, s, len))
    return 0;
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if ((size_t)(end - buf) != len ||
      (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) ||
      isnan(v))
    return 0;
  *out = v;
  return 1;
}

int fdb_parse_range_end(const char *s, size_t len, double *out, int *exclusive) {
  char buf[512];
  *exclusive = len > 0 && s[0] == '(';
  if (*exclusive) {
    s++;
    len--;
  }
  if (!c_copy(buf, sizeof buf, s, len))
    return 0;
  char *end;
  double v = strtod(buf, &end);
  if (*end != '\0' || isnan(v))
    return 0;
  *out = v;
  return 1;
}

size_t fdb_format_score(char *buf, double score) {
  int n;
  if (isinf(score))
    n = snprintf(buf, 32, "%s", score > 0 ? "inf" : "-inf");
  else if (score > -9007199254740992.0 && score < 9007199254740992.0 &&
           (double)(long long)score == score) /* Redis 7.0's d2string */
    n = snprintf(buf, 32, "%lld", (long long)score);
  else
    n = snprintf(buf, 32, "%.17g", score);
  return n > 0 ? (size_t)n : 0;
}

/* ---- sorted sets --------------------------------------------------------- */

static int zcmp(double score, const char *m, size_t len, const fdb_zmember_t *z) {
  if (score != z->score)
    return score < z->score ? -1 : 1;
  size_t n = len < z->len ? len : z->len;
  int c = memcmp(m, z->member, n);
  if (c != 0)
    return c;
  return len < z->len ? -1 : len > z->len;
}

/* The index of member in e, or e->zn. */
static size_t zfind(const fdb_entry_t *e, const char *m, size_t len) {
  for (size_t i = 0; i < e->zn; i++)
    if (e->z[i].len == len && memcmp(e->z[i].member, m, len) == 0)
      return i;
  return e->zn;
}

static void zremove_at(fdb_entry_t *e, size_t i) {
  rl_free(e->z[i].member);
  memmove(&e->z[i], &e->z[i + 1], (e->zn - i - 1) * sizeof e->z[0]);
  e->zn--;
}

/* Puts z at its place in order (e has room). */
static void zinsert(fdb_entry_t *e, fdb_zmember_t z) {
  size_t at = 0;
  while (at < e->zn && zcmp(z.score, z.member, z.len, &e->z[at]) > 0)
    at++;
  memmove(&e->z[at + 1], &e->z[at], (e->zn - at) * sizeof e->z[0]);
  e->z[at] = z;
  e->zn++;
}

static fdb_err_t zset_of(fake_db_t *db, fdb_now_t now, const char *key, size_t len,
                         fdb_entry_t **out) {
  *out = fdb_find(db, now, key, len);
  return *out != NULL && (*out)->type != FDB_ZSET ? FDB_WRONGTYPE : FDB_OK;
}

/* The sorted set at key (*e NULL when absent) and member's index in it
 * (*i == (*e)->zn when absent). */
static fdb_err_t zmember_of(fake_db_t *db, fdb_now_t now, const char *key, size_t len,
                            const char *member, size_t member_len, fdb_entry_t **e, size_t *i) {
  fdb_err_t err = zset_of(db, now, key, len, e);
  *i = err == FDB_OK && *e != NULL ? zfind(*e, member, member_len) : 0;
  return err;
}

fdb_err_t fdb_zscore(fake_db_t *db, fdb_now_t now, const char *key, size_t len, const char *member,
                     size_t member_len, int *found, double *score) {
  fdb_entry_t *e;
  size_t i;
  fdb_err_t err = zmember_of(db, now, key, len, member, member_len, &e, &i);
  *found = 0;
  if (err == FDB_OK && e != NULL && i < e->zn) {
    *found = 1;
    *score = e->z[i].score;
  }
  return err;
}

fdb_err_t fdb_zadd(fake_db_t *db, fdb_now_t now, const char *key, size_t len, double score,
                   const char *member, size_t member_len, int flags, int *changed, double *result) {
  fdb_entry_t *e;
  size_t i;
  fdb_err_t err = zmember_of(db, now, key, len, member, member_len, &e, &i);
  *changed = -1;
  if (err != FDB_OK)
    return err;
  if (e != NULL && i < e->zn) {
    double cur = e->z[i].score;
    *result = cur;
    if (flags & FDB_ZADD_NX)
      return FDB_OK;
    *changed = 0;
    if (flags & FDB_ZADD_INCR) {
      score += cur;
      if (isnan(score))
        return FDB_NOT_FLOAT;
    }
    if (((flags & FDB_ZADD_GT) && score <= cur) || ((flags & FDB_ZADD_LT) && score >= cur)) {
      *changed = -1;
      return FDB_OK;
    }
    *result = score;
    if (score != cur) {
      fdb_zmember_t z = e->z[i];
      memmove(&e->z[i], &e->z[i + 1], (e->zn - i - 1) * sizeof e->z[0]);
      e->zn--;
      z.score = score;
      zinsert(e, z);
      e->written_us = now.us;
      *changed = 2;
    }
    return FDB_OK;
  }
  if (flags & FDB_ZADD_XX)
    return FDB_OK;
  fdb_zmember_t z = {score, rl_malloc(member_len ? member_len : 1), member_len};
  if (z.member == NULL)
    return FDB_NOMEM;
  memcpy(z.member, member, member_len);
  int made = 0;
  if (e == NULL) {
    e = create(db, key, len, FDB_ZSET, now);
    if (e == NULL) {
      rl_free(z.member);
      return FDB_NOMEM;
    }
    made = 1;
  }
  if (e->zn == e->zcap) {
    size_t cap = e->zcap ? e->zcap * 2 : 4;
    fdb_zmember_t *nz = rl_realloc(e->z, cap * sizeof *nz);
    if (nz == NULL) {
      rl_free(z.member);
      if (made) /* an empty sorted set does not exist */
        fdb_del(db, now, key, len);
      return FDB_NOMEM;
    }
    e->z = nz;
    e->zcap = cap;
  }
  zinsert(e, z);
  e->written_us = now.us;
  *result = score;
  *changed = 1;
  return FDB_OK;
}

/* The key goes with its last member, as in Redis. */
static void drop_if_empty(fake_db_t *db, fdb_now_t now, fdb_entry_t *e) {
  if (e->zn == 0)
    fdb_del(db, now, e->key, e->key_len);
  else
    e->written_us = now.us;
}

fdb_err_t fdb_zrem(fake_db_t *db, fdb_now_t now, const char *key, size_t len, const char *member,
                   size_t member_len, int *removed) {
  fdb_entry_t *e;
  size_t i;
  fdb_err_t err = zmember_of(db, now, key, len, member, member_len, &e, &i);
  *removed = 0;
  if (err == FDB_OK && e != NULL && i < e->zn) {
    zremove_at(e, i);
    *removed = 1;
    drop_if_empty(db, now, e);
  }
  return err;
}

fdb_err_t fdb_zcard(fake_db_t *db, fdb_now_t now, const char *key, size_t len, long long *count) {
  fdb_entry_t *e;
  fdb_err_t err = zset_of(db, now, key, len, &e);
  *count = err == FDB_OK && e != NULL ? (long long)e->zn : 0;
  return err;
}

fdb_err_t fdb_zremrangebyscore(fake_db_t *db, fdb_now_t now, const char *key, size_t len,
                               double min, int min_ex, double max, int max_ex, long long *removed) {
  fdb_entry_t *e;
  fdb_err_t err = zset_of(db, now, key, len, &e);
  *removed = 0;
  if (err != FDB_OK || e == NULL)
    return err;
  size_t i = 0;
  while (i < e->zn) {
    double s = e->z[i].score;
    int in = (min_ex ? s > min : s >= min) && (max_ex ? s < max : s <= max);
    if (in) {
      zremove_at(e, i);
      (*removed)++;
    } else {
      i++;
    }
  }
  if (*removed > 0)
    drop_if_empty(db, now, e);
  return FDB_OK;
}

fdb_err_t fdb_zmembers(fake_db_t *db, fdb_now_t now, const char *key, size_t len,
                       const fdb_zmember_t **members, size_t *n) {
  fdb_entry_t *e;
  fdb_err_t err = zset_of(db, now, key, len, &e);
  *members = NULL;
  *n = 0;
  if (err == FDB_OK && e != NULL) {
    *members = e->z;
    *n = e->zn;
  }
  return err;
}
