/* fake_db.h: a fake master's keyspace, inside the test kit (fake_exec.c
 * and fake_scripts.c read and write it; fake_exec.h has what the server
 * sees of it).  Strings and sorted sets, each key with an optional expiry
 * in milliseconds of the master's clock, expired lazily when a command
 * touches it (as Redis does) and a few buckets at a time by fdb_sweep;
 * each key also keeps when it was last written, for a failover's lagging
 * replica (fake_db_forget_since).  The operations are the ones the
 * commands need, with Redis's rules; their errors are fdb_err_t values
 * whose texts are Redis's (fdb_err_text). */
#ifndef REDLOCK_FAKE_DB_H
#define REDLOCK_FAKE_DB_H

#include <stddef.h>
#include <stdint.h>

#include "testing/fake_exec.h"

/* A command's time: one reading of the master's clock per command, so that
 * every key it touches expires by the same instant (Redis's command time
 * snapshot; a script's whole run sees one time). */
typedef struct {
  uint64_t us;
  int64_t ms;
} fdb_now_t;

/* What a command can meet, as Redis words it (fdb_err_text). */
typedef enum {
  FDB_OK = 0,
  FDB_WRONGTYPE,       /* a string command on a sorted set, or the reverse */
  FDB_NOT_INT,         /* "value is not an integer or out of range" */
  FDB_NOT_FLOAT,       /* "value is not a valid float" */
  FDB_RANGE_NOT_FLOAT, /* "min or max is not a float" */
  FDB_SYNTAX,          /* "syntax error" */
  FDB_BAD_EXPIRE_SET,  /* "invalid expire time in 'set' command" */
  FDB_BAD_EXPIRE_PEXPIRE,
  FDB_BAD_EXPIRE_PEXPIREAT,
  FDB_NOMEM, /* an allocation failed: nothing changed */
} fdb_err_t;

/* The error reply's text (no "-", no CRLF) of err (not FDB_OK). */
const char *fdb_err_text(fdb_err_t err);

typedef enum { FDB_STRING = 1, FDB_ZSET } fdb_type_t;

typedef struct {
  double score;
  char *member;
  size_t len;
} fdb_zmember_t;

/* One key.  A sorted set's members are kept in Redis's order: by score,
 * then by member bytes. */
typedef struct fdb_entry {
  struct fdb_entry *next; /* the bucket's chain */
  char *key;
  size_t key_len;
  uint64_t hash;
  fdb_type_t type;
  char *str; /* FDB_STRING */
  size_t str_len;
  fdb_zmember_t *z; /* FDB_ZSET: zn members, room for zcap */
  size_t zn, zcap;
  int64_t expire_ms;   /* -1: none */
  uint64_t written_us; /* the last write (fake_db_forget_since) */
} fdb_entry_t;

/* Whether the library's script id is in the master's script cache (SCRIPT
 * LOAD or EVAL put it there; a restart and SCRIPT FLUSH empty it). */
int fdb_script_loaded(const fake_db_t *db, unsigned id);
void fdb_script_set_loaded(fake_db_t *db, unsigned id, int loaded);

/* Deletes the keys whose time is up in a few buckets (the next ones in
 * turn), so that keys nobody touches again do not stay forever. */
void fdb_sweep(fake_db_t *db, fdb_now_t now);

/* The key, or NULL when absent; an expired key is deleted here first. */
fdb_entry_t *fdb_find(fake_db_t *db, fdb_now_t now, const char *key, size_t len);
/* Deletes key; 1 when it existed (unexpired). */
int fdb_del(fake_db_t *db, fdb_now_t now, const char *key, size_t len);

/* GET: *val NULL when absent.  FDB_WRONGTYPE on a sorted set. */
fdb_err_t fdb_get(fake_db_t *db, fdb_now_t now, const char *key, size_t len, const char **val,
                  size_t *val_len);
/* SET: key becomes the string val (whatever it was), expiring at
 * expire_ms (-1: never), or keeping its expiry with keep_ttl.  FDB_NOMEM
 * leaves the key as it was. */
fdb_err_t fdb_set(fake_db_t *db, fdb_now_t now, const char *key, size_t len, const char *val,
                  size_t val_len, int64_t expire_ms, int keep_ttl);
/* PTTL: -2 absent, -1 no expiry, else the ms left (0 at the last ms). */
long long fdb_pttl(fake_db_t *db, fdb_now_t now, const char *key, size_t len);

/* PEXPIREAT's options (Redis 7: NX XX GT LT). */
#define FDB_EXPIRE_NX 0x1
#define FDB_EXPIRE_XX 0x2
#define FDB_EXPIRE_GT 0x4
#define FDB_EXPIRE_LT 0x8
/* Sets key's expiry to when_ms (a time at or before now deletes it);
 * returns 1 when done, 0 when the key is absent or an option said no. */
int fdb_pexpireat(fake_db_t *db, fdb_now_t now, const char *key, size_t len, int64_t when_ms,
                  int flags);

/* Redis's number parsers: string2ll (strict: no sign '+', no spaces, no
 * leading zeros), getDoubleFromObject (strtod of the whole string, no
 * leading space, not NaN), and a score range's end ('(' exclusive,
 * strtod up to the first NUL). 1 when parsed. */
int fdb_parse_ll(const char *s, size_t len, long long *out);
int fdb_parse_double(const char *s, size_t len, double *out);
int fdb_parse_range_end(const char *s, size_t len, double *out, int *exclusive);

/* SET's expiry argument: s in units of unit_ms (1000 for EX and EXAT, 1
 * for PX and PXAT), from now unless absolute; *when_ms the time it
 * expires.  FDB_NOT_INT, or FDB_BAD_EXPIRE_SET for a time <= 0 or out of
 * range. */
fdb_err_t fdb_set_expiry(fdb_now_t now, const char *s, size_t len, int64_t unit_ms, int absolute,
                         int64_t *when_ms);
/* PEXPIRE's (relative) or PEXPIREAT's argument: FDB_NOT_INT, or bad (the
 * command's FDB_BAD_EXPIRE_*) when it is out of range. */
fdb_err_t fdb_pexpire_arg(fdb_now_t now, const char *s, size_t len, int relative, fdb_err_t bad,
                          int64_t *when_ms);

/* How Redis 7.0 writes a score in a reply ("1733582023123", "0.5",
 * "0.10000000000000001", "inf"): into buf (at least 32 bytes), returns the
 * length. */
size_t fdb_format_score(char *buf, double score);

/* ZSCORE: *found 0 when key or member is absent. */
fdb_err_t fdb_zscore(fake_db_t *db, fdb_now_t now, const char *key, size_t len, const char *member,
                     size_t member_len, int *found, double *score);
/* ZADD's options (FDB_ZADD_*) for one member.  *changed: 1 added, 2
 * updated (score changed), 0 the same score, -1 an option kept it from
 * acting (Redis's NOP); *result the member's score after
 * (with INCR: the sum).  FDB_NOT_FLOAT: an INCR gave NaN
 * (fdb_zadd_nan). */
#define FDB_ZADD_NX 0x1
#define FDB_ZADD_XX 0x2
#define FDB_ZADD_GT 0x4
#define FDB_ZADD_LT 0x8
#define FDB_ZADD_INCR 0x10
fdb_err_t fdb_zadd(fake_db_t *db, fdb_now_t now, const char *key, size_t len, double score,
                   const char *member, size_t member_len, int flags, int *changed, double *result);
/* ZREM of one member: *removed 1 or 0.  The key goes with its last member. */
fdb_err_t fdb_zrem(fake_db_t *db, fdb_now_t now, const char *key, size_t len, const char *member,
                   size_t member_len, int *removed);
/* ZCARD. */
fdb_err_t fdb_zcard(fake_db_t *db, fdb_now_t now, const char *key, size_t len, long long *count);
/* ZREMRANGEBYSCORE over [min, max] (each end exclusive when asked). */
fdb_err_t fdb_zremrangebyscore(fake_db_t *db, fdb_now_t now, const char *key, size_t len,
                               double min, int min_ex, double max, int max_ex, long long *removed);
/* The sorted set's members (NULL, 0 when absent) for ZRANGE; valid until
 * the next write. */
fdb_err_t fdb_zmembers(fake_db_t *db, fdb_now_t now, const char *key, size_t len,
                       const fdb_zmember_t **members, size_t *n);

#endif
