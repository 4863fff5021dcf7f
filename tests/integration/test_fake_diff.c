/* test_fake_diff.c: the test kit's fake master (src/testing/fake_exec.h)
 * against a real redis-server, command by command: each case is a sequence
 * of commands the library sends (its scripts by EVALSHA and EVAL with their
 * real bodies and realistic KEYS / ARGV, SET NX PX, GET, PTTL, ...) and the
 * commands around them, sent to both from an empty keyspace; every reply
 * must be the same, byte for byte once parsed (errors' texts included).
 * What comes from a clock is compared within a tolerance (a step's tol):
 * fencing tokens from TIME in microseconds, PTTLs and a reader's time left
 * in milliseconds, TIME itself; a later token must also be larger on both
 * (a step's gt).  Then the library's own traffic: clients take, extend
 * and release locks (fenced and not), semaphore permits and read-write
 * holds, inspect and revoke, against the real server while MONITOR records
 * every command; the data commands recorded are replayed, in order, to the
 * emptied server and to a fake, and their replies compared the same way.
 * This is what "the fakes answer exactly as Redis does" rests on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "proto/scripts.h"
#include "redis_harness.h"
#include "redlock.h"
#include "testing/fake_exec.h"

#define MAX_ARGS 16
#define MAX_STEPS 64

/* One command of a case.  Arguments are taken as they are, except:
 * "sha:NAME" / "body:NAME" (the library's script NAME's SHA1 / body),
 * "@N" (the reply of step N of this case, on the same side: a token),
 * "@ms-D" / "@ms+D" (the wall clock in ms, less / plus D). */
typedef struct {
  const char *argv[MAX_ARGS];
  long long tol; /* > 0: integers (and numeric strings) may differ by this much */
  int gt;        /* > 0: the reply (an integer) must exceed step gt's */
} step_t;

typedef struct {
  const char *name;
  step_t steps[MAX_STEPS];
} case_t;

#define S(...)                                                                                     \
  { {__VA_ARGS__, NULL}, 0, 0 }
#define TOL(t, ...)                                                                                \
  { {__VA_ARGS__, NULL}, t, 0 }
#define GT(n, t, ...)                                                                              \
  { {__VA_ARGS__, NULL}, t, n }
#define US 2000000 /* tokens: microseconds apart */
#define MS 1000    /* ttls: milliseconds apart */

/* Names as the library builds them (keyname.h, direct.h, prims.h). */
#define LK "app:orders:42"
#define LK2 "app:orders:43"
#define CTR "__redlock_fence__:{app:orders:42}"
#define FLOOR CTR ":floor"
#define CTR2 "__redlock_fence__:{app:orders:43}"
#define FLOOR2 CTR2 ":floor"
#define V1 "b1946ac92492d2347c6235b4d2611184"
#define V2 "591785b794601e212b260e25925636fd"
#define SLOT "app:pool"
#define LIMIT "__redlock_fence__:{app:pool}:limit"
#define SCTR "__redlock_fence__:"
#define RWW "__redlock_fence__:{app:doc}:write"
#define RWR "__redlock_fence__:{app:doc}:read"
#define RWI "__redlock_fence__:{app:doc}:intent"
#define RWC "__redlock_fence__:{app:doc}"
#define CHAN "__redlock_release__:{app:doc}:rw"

static const case_t cases[] = {
    {"strings",
     {
         S("SET", LK, V1, "NX", "PX", "10000"),
         S("SET", LK, V2, "NX", "PX", "10000"),
         S("GET", LK),
         TOL(MS, "PTTL", LK),
         S("SET", LK, V2, "XX", "GET"),
         S("GET", LK),
         S("PTTL", LK),
         S("SET", LK, V1, "PX", "10000", "KEEPTTL"),
         S("SET", LK, V1, "KEEPTTL"),
         S("PTTL", LK),
         S("SET", LK, V1, "PX", "0"),
         S("SET", LK, V1, "PX", "-5"),
         S("SET", LK, V1, "PX", "abc"),
         S("SET", LK, V1, "PX", "007"),
         S("SET", LK, V1, "NX", "XX"),
         S("SET", LK, V1, "EX", "10", "PX", "5"),
         S("SET", LK, V1, "PX"),
         S("SET", LK2, V1, "NX", "GET"),
         S("SET", LK2, V2, "NX", "GET"),
         S("EXISTS", LK, LK2, LK, "nope"),
         S("PEXPIRE", LK, "5000"),
         TOL(MS, "PTTL", LK),
         S("PEXPIRE", LK, "5000", "NX"),
         S("PEXPIRE", LK, "100", "GT"),
         S("PEXPIRE", LK, "9000", "GT"),
         S("PEXPIRE", LK, "9000", "LT"),
         S("PEXPIRE", LK, "100", "LT"),
         S("PEXPIRE", LK2, "100", "GT"),
         S("PEXPIRE", LK, "1", "foo"),
         S("PEXPIRE", LK, "1", "nx", "xx"),
         S("PEXPIRE", LK, "1", "gt", "lt"),
         S("PEXPIRE", LK, "x"),
         S("PEXPIRE", "missing", "100"),
         S("PEXPIRE", LK, "-1"),
         S("EXISTS", LK),
         S("PEXPIREAT", LK2, "@ms+20000"),
         TOL(MS, "PTTL", LK2),
         S("PEXPIREAT", LK2, "1"),
         S("GET", LK2),
         S("PTTL", "missing"),
         S("DEL", LK, LK2, "missing"),
         S("GET"),
         S("GET", LK, LK2),
         S("set", LK),
         S("pttl"),
         S("FOO", "a", "b"),
         S("foo"),
         TOL(US, "TIME"),
         S("TIME", "x"),
         S("PUBLISH", "ch", "msg"),
     }},
    {"sorted sets",
     {
         S("ZADD", RWR, "1", "a", "2", "b"),
         S("ZADD", RWR, "NX", "5", "a"),
         S("ZADD", RWR, "XX", "CH", "5", "a"),
         S("ZADD", RWR, "GT", "3", "a"),
         S("ZADD", RWR, "LT", "3", "a"),
         S("ZADD", RWR, "INCR", "1", "b"),
         S("ZADD", RWR, "NX", "INCR", "1", "b"),
         S("ZADD", RWR, "XX", "1", "c"),
         S("ZADD", "nokey", "XX", "1", "c"),
         S("EXISTS", "nokey"),
         S("ZSCORE", RWR, "b"),
         S("ZSCORE", RWR, "zz"),
         S("ZSCORE", "nokey", "zz"),
         S("ZRANGE", RWR, "0", "-1", "WITHSCORES"),
         S("ZRANGE", RWR, "-1", "-1", "withscores"),
         S("ZRANGE", RWR, "0", "-1", "REV"),
         S("ZRANGE", RWR, "5", "9"),
         S("ZRANGE", RWR, "x", "9"),
         S("ZRANGE", RWR, "0", "1", "bogus"),
         S("ZRANGE", "nokey", "0", "-1"),
         S("ZCARD", RWR),
         S("ZCARD", "nokey"),
         S("ZADD", RWR, "0.5", "m", "1733582023123", "t", "-inf", "lo"),
         S("ZRANGE", RWR, "0", "-1", "WITHSCORES"),
         S("ZADD", RWR, "0.1", "m"),
         S("ZSCORE", RWR, "m"),
         S("ZREMRANGEBYSCORE", RWR, "-inf", "(3"),
         S("ZREMRANGEBYSCORE", RWR, "x", "3"),
         S("ZRANGE", RWR, "0", "-1", "WITHSCORES"),
         S("ZREM", RWR, "a", "t", "nope"),
         S("EXISTS", RWR),
         S("ZADD", RWR, "x", "a"),
         S("ZADD", RWR, "1"),
         S("ZADD", RWR, "1", "a", "2"),
         S("ZADD", RWR, "nx", "xx", "1", "a"),
         S("ZADD", RWR, "gt", "lt", "1", "a"),
         S("ZADD", RWR, "incr", "1", "a", "2", "b"),
         S("SET", LK, V1),
         S("ZADD", LK, "1", "a"),
         S("ZSCORE", LK, "a"),
         S("ZADD", RWR, "1", "a"),
         S("GET", RWR),
         S("SET", RWR, V1, "GET"),
         S("ZCARD", LK),
     }},
    {"script cache",
     {
         S("EVALSHA", "sha:acquire_many", "1", LK, V1, "10000"),
         S("SCRIPT", "EXISTS", "sha:acquire_many", "sha:release"),
         S("SCRIPT", "LOAD", "body:acquire_many"),
         S("SCRIPT", "EXISTS", "sha:acquire_many", "sha:release"),
         S("EVALSHA", "sha:acquire_many", "1", LK, V1, "10000"),
         S("SCRIPT", "FLUSH"),
         S("EVALSHA", "sha:acquire_many", "1", LK, V1, "10000"),
         S("EVAL", "body:acquire_many", "1", LK, V2, "10000"),
         S("EVALSHA", "sha:acquire_many", "1", LK, V2, "10000"),
         S("EVALSHA", "SHA:acquire_many", "1", LK2, V2, "10000"),
         S("EVALSHA", "sha:acquire_many", "x", LK, V2, "10000"),
         S("EVALSHA", "sha:acquire_many", "5", LK, V2, "10000"),
         S("EVALSHA", "sha:acquire_many", "-1", LK, V2, "10000"),
         S("EVALSHA", "abc", "0"),
         S("EVALSHA", "sha:release"),
         S("SCRIPT", "LOAD"),
         S("SCRIPT", "FOO"),
         S("SCRIPT"),
         S("SCRIPT", "FLUSH", "ASYNC"),
         S("SCRIPT", "FLUSH", "bad"),
         S("SCRIPT", "EXISTS", "sha:acquire_many"),
     }},
    {"lock",
     {
         S("EVAL", "body:acquire_many", "2", LK, LK2, V1, "10000"),
         S("EVAL", "body:acquire_many", "2", LK, LK2, V2, "10000"),
         TOL(MS, "PTTL", LK2),
         S("EVAL", "body:extend", "2", LK, LK2, V1, "20000"),
         TOL(MS, "PTTL", LK),
         S("EVAL", "body:extend", "2", LK, LK2, V2, "20000"),
         S("DEL", LK2),
         S("EVAL", "body:extend", "2", LK, LK2, V1, "20000"),
         S("GET", LK2),
         TOL(MS, "PTTL", LK2),
         S("EVAL", "body:release", "2", LK, LK2, V2, "1"),
         S("EVAL", "body:release", "2", LK, LK2, V1, "1"),
         S("EVAL", "body:release", "2", LK, LK2, V1, "1"),
         S("EXISTS", LK, LK2),
         S("SET", LK, V1, "NX", "PX", "30000"),
         S("EVAL", "body:release", "1", LK, V1, "0"),
         S("SET", "a{tag}b", V1),
         S("EVAL", "body:release", "1", "a{tag}b", V1, "3"),
         S("SET", LK, V1),
         S("EVAL", "body:release", "1", LK, V1, "2"),
         S("EVAL", "body:acquire_many", "1", LK, V1, "abc"),
         S("EVAL", "body:acquire_many", "1", LK, V1, "0"),
         S("ZADD", LK, "1", "x"),
         S("EVAL", "body:release", "1", LK, V1, "1"),
         S("EVAL", "body:extend", "1", LK, V1, "1000"),
         S("EVAL", "body:acquire_many", "1", LK),
     }},
    {"fencing",
     {
         TOL(US, "EVAL", "body:acquire_fenced", "3", LK, CTR, FLOOR, V1, "10000"),
         S("EVAL", "body:acquire_fenced", "3", LK, CTR, FLOOR, V2, "10000"),
         S("EVAL", "body:fence_commit", "2", LK, CTR, V1, "@0"),
         S("EVAL", "body:fence_commit", "2", LK, CTR, V2, "@0"),
         TOL(US, "GET", CTR),
         S("EVAL", "body:extend", "2", LK, CTR, V1, "20000", "@0", ":floor"),
         S("DEL", LK),
         GT(0, US, "EVAL", "body:acquire_fenced", "3", LK, CTR, FLOOR, V2, "10000"),
         S("SET", CTR, "99999999999999999"),
         S("DEL", LK),
         S("EVAL", "body:acquire_fenced", "3", LK, CTR, FLOOR, V1, "10000"),
         S("DEL", LK),
         S("ZADD", FLOOR, "199999999999999999", "token"),
         S("EVAL", "body:acquire_fenced", "3", LK, CTR, FLOOR, V1, "10000"),
         S("GET", CTR),
         TOL(MS, "EVAL", "body:inspect", "3", LK, CTR, FLOOR, "l"),
         S("EVAL", "body:revoke", "3", LK, CTR, FLOOR, "299999999999999999", "rv"),
         S("ZSCORE", FLOOR, "revoked"),
         S("EXISTS", LK),
         S("EVAL", "body:extend", "2", LK, CTR, V1, "20000", "@13", ":floor"),
         S("EVAL", "body:extend", "2", LK, CTR, V1, "20000", "399999999999999999", ":floor"),
         S("GET", LK),
         S("EVAL", "body:revoke", "3", LK, CTR, FLOOR, "0", "rv"),
         S("GET", LK),
         TOL(MS, "PTTL", LK),
         S("EVAL", "body:revoke", "3", LK2, CTR2, FLOOR2, "0", "rv"),
         S("EXISTS", LK2),
         S("EVAL", "body:acquire_fenced", "6", LK, LK2, CTR, CTR2, FLOOR, FLOOR2, V1, "1000"),
         S("DEL", LK),
         S("EVAL", "body:acquire_fenced", "6", LK, LK2, CTR, CTR2, FLOOR, FLOOR2, V1, "1000"),
         TOL(US, "GET", CTR),
         TOL(US, "GET", CTR2),
         S("EVAL", "body:fence_commit", "4", LK, LK2, CTR, CTR2, V1, "abc"),
         S("SET", CTR2, "x"),
         S("DEL", LK, LK2),
         S("ZADD", CTR, "1", "x"),
         S("EVAL", "body:acquire_fenced", "3", LK, CTR, FLOOR, V1, "10000"),
         TOL(MS, "EVAL", "body:inspect", "3", LK, CTR, FLOOR, "l"), /* the holder's PTTL */
         S("EVAL", "body:inspect", "3", LK2, CTR2, FLOOR2, "l"),
     }},
    {"semaphore",
     {
         S("EVAL", "body:sem_acquire", "2", SLOT ":0", LIMIT, V1, "10000", "2"),
         S("EVAL", "body:sem_acquire", "2", SLOT ":0", LIMIT, V2, "10000", "2"),
         S("EVAL", "body:sem_acquire", "2", SLOT ":1", LIMIT, V2, "10000", "3"),
         TOL(US, "EVAL", "body:sem_acquire", "3", SLOT ":1", LIMIT, SCTR SLOT ":1", V2, "20000",
             "2"),
         TOL(MS, "PTTL", LIMIT),
         S("EVAL", "body:sem_extend", "2", SLOT ":0", LIMIT, V1, "30000", "2"),
         TOL(MS, "PTTL", LIMIT),
         S("DEL", SLOT ":0"),
         S("EVAL", "body:sem_extend", "2", SLOT ":0", LIMIT, V1, "30000", "2"),
         S("EVAL", "body:sem_extend", "2", SLOT ":0", LIMIT, V2, "30000", "2"),
         S("EVAL", "body:sem_extend", "3", SLOT ":1", LIMIT, SCTR SLOT ":1", V2, "30000", "2",
           "@3"),
         S("DEL", SLOT ":1"),
         S("EVAL", "body:sem_extend", "3", SLOT ":1", LIMIT, SCTR SLOT ":1", V2, "30000", "2",
           "999999999999999999"),
         S("GET", SCTR SLOT ":1"),
         TOL(MS, "EVAL", "body:inspect", "2", LIMIT, SLOT ":", "s", SCTR),
         S("EVAL", "body:sem_release", "1", SLOT ":0", V2, "ch", "1"),
         S("EVAL", "body:sem_release", "1", SLOT ":0", V1, "ch", "1"),
         S("EVAL", "body:sem_release", "1", SLOT ":0", V1, "ch", "1"),
         S("EVAL", "body:sem_release", "1", SLOT ":1", V2, "ch", "2"),
         S("SET", LIMIT, "1"),
         S("DEL", SLOT ":0"),
         S("EVAL", "body:sem_extend", "2", SLOT ":0", LIMIT, V1, "30000", "2"),
         S("SET", LIMIT, "-4"),
         S("EVAL", "body:sem_acquire", "2", SLOT ":0", LIMIT, V1, "10000", "2"),
         S("SET", LIMIT, "2.7"),
         S("EVAL", "body:sem_acquire", "2", SLOT ":0", LIMIT, V1, "10000", "2"),
         S("EVAL", "body:inspect", "2", LIMIT, SLOT ":", "s", SCTR),
         S("SET", LIMIT, "x"),
         S("EVAL", "body:sem_acquire", "2", SLOT ":0", LIMIT, V1, "10000", "2"),
         S("EVAL", "body:inspect", "2", LIMIT, SLOT ":", "s", SCTR),
         S("DEL", LIMIT),
         S("EVAL", "body:sem_acquire", "2", SLOT ":0", LIMIT, V1, "10000"),
     }},
    {"read-write",
     {
         S("EVAL", "body:rw_read", "3", RWW, RWR, RWI, V1, "10000"),
         S("EVAL", "body:rw_read", "3", RWW, RWR, RWI, V2, "20000"),
         TOL(MS, "PTTL", RWR),
         S("EVAL", "body:rw_write", "3", RWW, RWR, RWI, "W", "10000", "I", "5000"),
         S("GET", RWI),
         S("EVAL", "body:rw_write", "3", RWW, RWR, RWI, "W2", "10000", "I2", "5000"),
         S("GET", RWI),
         S("EVAL", "body:rw_read", "3", RWW, RWR, RWI, "V3", "10000"),
         TOL(MS, "EVAL", "body:inspect", "3", RWW, RWC, RWR, "r"),
         S("EVAL", "body:rw_extend", "2", RWW, RWR, V1, "30000", "r"),
         TOL(MS, "PTTL", RWR),
         S("ZREM", RWR, V1),
         S("EVAL", "body:rw_extend", "2", RWW, RWR, V1, "30000", "r"),
         S("EVAL", "body:rw_release", "3", RWW, RWR, RWI, V1, "", CHAN, "1"),
         S("EVAL", "body:rw_release", "3", RWW, RWR, RWI, V2, "", CHAN, "1"),
         S("EVAL", "body:rw_release", "3", RWW, RWR, RWI, V2, "", CHAN, "1"),
         S("EVAL", "body:rw_write", "3", RWW, RWR, RWI, "W", "10000", "I", "5000"),
         S("EXISTS", RWI, RWR),
         S("EVAL", "body:rw_read", "3", RWW, RWR, RWI, V1, "10000"),
         S("EVAL", "body:rw_extend", "2", RWW, RWR, "W", "20000", "w"),
         TOL(MS, "PTTL", RWW),
         S("EVAL", "body:rw_extend", "2", RWW, RWR, "X", "20000", "w"),
         S("EVAL", "body:rw_extend", "2", RWW, RWR, V1, "20000", "r"),
         S("EVAL", "body:rw_release", "3", RWW, RWR, RWI, "W", "I", CHAN, "2"),
         TOL(US, "EVAL", "body:rw_write", "4", RWW, RWR, RWI, RWC, "W", "10000", "I", "0"),
         S("EVAL", "body:rw_fence_commit", "3", RWW, RWR, RWC, "W", "@24"),
         S("EVAL", "body:rw_fence_commit", "3", RWW, RWR, RWC, "X", "@24"),
         S("EVAL", "body:rw_extend", "3", RWW, RWR, RWC, "W", "10000", "w", "@24"),
         S("DEL", RWW),
         S("EVAL", "body:rw_extend", "3", RWW, RWR, RWC, "W", "10000", "w", "@24"),
         S("EVAL", "body:rw_release", "3", RWW, RWR, RWI, "W", "", CHAN, "1"),
         TOL(US, "EVAL", "body:rw_read", "4", RWW, RWR, RWI, RWC, V1, "10000"),
         TOL(US, "GET", RWC),
         S("EVAL", "body:rw_fence_commit", "3", RWW, RWR, RWC, V1, "1"),
         S("EVAL", "body:rw_fence_commit", "3", RWW, RWR, RWC, V2, "1"),
         S("ZADD", RWR, "@ms-5000", "old"),
         S("EVAL", "body:rw_fence_commit", "3", RWW, RWR, RWC, "old", "1"),
         S("EVAL", "body:rw_release", "3", RWW, RWR, RWI, "old", "", CHAN, "1"),
         S("ZADD", RWR, "@ms-5000", "old"),
         S("EVAL", "body:rw_extend", "2", RWW, RWR, "old", "10000", "r"),
         S("EVAL", "body:rw_release", "3", RWW, RWR, RWI, V1, "", CHAN, "0"),
         S("EVAL", "body:rw_release", "3", RWW, RWR, RWI, "old", "", CHAN, "0"),
         S("ZADD", RWR, "@ms-5000", "gone"),
         TOL(US, "EVAL", "body:rw_write", "4", RWW, RWR, RWI, RWC, "W", "10000", "I", "5000"),
         S("EXISTS", RWR),
         S("DEL", RWC, RWW),
         TOL(US, "EVAL", "body:rw_read", "4", RWW, RWR, RWI, RWC, V1, "10000"),
         S("EVAL", "body:rw_read", "3", RWW, RWR, RWI, V1),
     }},
    {"edges",
     {
         TOL(US, "EVAL", "body:acquire_fenced", "2", LK, CTR, V1, "10000"),
         S("EXISTS", LK, CTR),
         S("EVAL", "body:acquire_fenced", "4", LK, LK2, CTR, CTR2, V1, "10000"),
         S("EVAL", "body:extend", "3", LK, LK2, CTR, V1, "10000", "5", ":floor"),
         S("SET", "x{t}y", V1),
         S("SET", "x{}y", V1),
         S("EVAL", "body:release", "2", "x{t}y", "x{}y", V1, "4"),
         S("EVAL", "body:release", "1", LK, V1),
         S("SET", LK, V1, "PXAT", "@ms+5000"),
         TOL(MS, "PTTL", LK),
         S("SET", LK, V1, "EXAT", "1"),
         S("EXISTS", LK),
         S("SET", LK, V1, "EX", "9223372036854775807"),
         S("SET", LK, V1, "PX", "9223372036854775807"),
         S("PEXPIRE", LK2, "9223372036854775807"),
         S("SET", LK2, V1),
         S("PEXPIRE", LK2, "100", "LT"),
         S("PEXPIRE", LK2, "100", "XX"),
         S("ZADD", RWR, "INCR", "0.5", "a"),
         S("ZADD", RWR, "INCR", "1", "a"),
         S("ZADD", RWR, "GT", "INCR", "-1", "a"),
         S("ZADD", RWR, "CH", "1.5", "a", "3", "b"),
         S("EVAL", "body:acquire_many", "01", LK, V1, "100"),
         S("EVAL", "body:acquire_many", " 1", LK, V1, "100"),
         S("SCRIPT", "LOAD", "body:release"),
         S("SCRIPT", "EXISTS", "SHA:release", "sha:release", "nope"),
         S("FOO\r\nBAR", "a\nb", "c"),
         S("NOPE", "0123456789012345678901234567890123456789012345678901234567890123456789",
           "0123456789012345678901234567890123456789012345678901234567890123456789", "x"),
         S("ZRANGE", RWR, "0", "-1", "BYSCORE", "LIMIT", "0"),
         S("ZRANGE", RWR, "0", "-1", "LIMIT", "0", "1"),
         S("ZREMRANGEBYSCORE", RWR, "", "(inf"),
         S("ZRANGE", RWR, "0", "-1"),
         S("EVAL", "body:inspect", "3", RWW, RWC, RWR, "x"),
         S("SET", RWW, "W", "PX", "5000"),
         S("SET", RWC, "77"),
         TOL(MS, "EVAL", "body:inspect", "3", RWW, RWC, RWR, "r"),
         S("EVAL", "body:revoke", "3", LK, CTR, FLOOR, "x", "rv"),
         S("EVAL", "body:rw_extend", "2", RWW, RWR, "W", "5000"),
         S("EVAL", "body:sem_extend", "2", SLOT ":0", LIMIT, V1, "1000"),
         S("EVAL", "body:rw_release", "3", RWW, RWR, RWI, "W"),
         S("EVAL", "body:sem_release", "1", SLOT ":0", V1),
     }},
};

/* ---- the two sides ------------------------------------------------------------ */

static rh_server_t *server;
static redisContext *real;
/* The fake answers as Redis 7.0 does (the server this suite runs by
 * default); other servers word some replies otherwise (Valkey 8 and Redis
 * >= 7.2 write scores in their shortest form, Valkey's NOSCRIPT is
 * shorter), so against them the cases are skipped, saying why. */
static char skip_why[256];

static uint64_t wall_us(void *arg) {
  (void)arg;
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

static long long published;
static long long count_publish(void *arg, const char *ch, size_t chl, const char *m, size_t ml) {
  (void)arg, (void)ch, (void)chl, (void)m, (void)ml;
  published++;
  return 0; /* no subscribers, as on the real server */
}

static int setup(void **state) {
  (void)state;
  if (rh_server_start(&server, NULL) != 0)
    return -1;
  real = redisConnect("127.0.0.1", rh_server_port(server));
  if (real == NULL || real->err != 0)
    return -1;
  redisReply *r = redisCommand(real, "INFO server");
  if (r == NULL || r->type != REDIS_REPLY_STRING)
    return -1;
  const char *v = strstr(r->str, "redis_version:");
  if (strstr(r->str, "valkey_version:") != NULL || v == NULL || strncmp(v + 14, "7.0.", 4) != 0)
    snprintf(skip_why, sizeof skip_why, "the fake answers as Redis 7.0 does, and %s is %.*s",
             rh_server_name(), v != NULL ? (int)strcspn(v, "\r\n") : 7, v != NULL ? v : "unknown");
  freeReplyObject(r);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (real != NULL)
    redisFree(real);
  rh_server_free(server);
  return 0;
}

static const script_t *script_named(const char *name) {
  for (unsigned id = 0; id < SCRIPT_COUNT; id++)
    if (strcmp(script_get((script_id_t)id)->name, name) == 0)
      return script_get((script_id_t)id);
  fail_msg("no script named %s", name);
  return NULL;
}

/* A reply as the text "@N" stands for. */
static void reply_arg(const redisReply *r, char *buf, size_t size) {
  if (r->type == REDIS_REPLY_INTEGER)
    snprintf(buf, size, "%lld", r->integer);
  else if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
    snprintf(buf, size, "%.*s", (int)r->len, r->str);
  else
    snprintf(buf, size, "none");
}

/* Expands a step's arguments (bufs keeps the texts). */
static int expand(const step_t *st, redisReply **replies, char bufs[][64], const char **argv,
                  size_t *lens) {
  int argc = 0;
  for (; st->argv[argc] != NULL; argc++) {
    const char *a = st->argv[argc];
    if (strncmp(a, "sha:", 4) == 0 || strncmp(a, "SHA:", 4) == 0) {
      const char *sha = script_named(a + 4)->sha1;
      if (a[0] == 'S') { /* upper case: EVALSHA takes any case */
        for (int i = 0; i < 40; i++)
          bufs[argc][i] = (char)(sha[i] >= 'a' ? sha[i] - 32 : sha[i]);
        bufs[argc][40] = '\0';
        argv[argc] = bufs[argc];
      } else {
        argv[argc] = sha;
      }
      lens[argc] = 40;
    } else if (strncmp(a, "body:", 5) == 0) {
      const script_t *s = script_named(a + 5);
      argv[argc] = s->body;
      lens[argc] = s->body_len;
    } else if (strncmp(a, "@ms", 3) == 0) {
      long long d = atoll(a + 4);
      long long ms = (long long)(wall_us(NULL) / 1000);
      snprintf(bufs[argc], 64, "%lld", a[3] == '-' ? ms - d : ms + d);
      argv[argc] = bufs[argc];
      lens[argc] = strlen(bufs[argc]);
    } else if (a[0] == '@') {
      reply_arg(replies[atoi(a + 1)], bufs[argc], 64);
      argv[argc] = bufs[argc];
      lens[argc] = strlen(bufs[argc]);
    } else {
      argv[argc] = a;
      lens[argc] = strlen(a);
    }
  }
  return argc;
}

static int as_ll(const redisReply *r, long long *v) {
  if (r->type == REDIS_REPLY_INTEGER) {
    *v = r->integer;
    return 1;
  }
  if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 20)
    return 0;
  char buf[24], *end;
  snprintf(buf, sizeof buf, "%.*s", (int)r->len, r->str);
  *v = strtoll(buf, &end, 10);
  return *end == '\0';
}

/* same()'s tolerance for the library's traffic, where no step says which
 * integers the clock shapes: those that are large (a token in us, a ttl in
 * ms); a count or a flag must be equal. */
#define TRAFFIC (-1)

/* 1 when fake's reply is real's (numbers within tol, or TRAFFIC's). */
static int same(const redisReply *a, const redisReply *b, long long tol) {
  long long x, y;
  if (tol != 0 && as_ll(a, &x) && as_ll(b, &y) && a->type == b->type) {
    if (tol == TRAFFIC)
      tol = x < 100 || y < 100 ? 0 : x >= 1000000000000ll ? US : MS;
    return (x < 0) == (y < 0) && llabs(x - y) <= tol;
  }
  if (a->type != b->type)
    return 0;
  switch (a->type) {
  case REDIS_REPLY_INTEGER:
    return a->integer == b->integer;
  case REDIS_REPLY_NIL:
    return 1;
  case REDIS_REPLY_ARRAY:
    if (a->elements != b->elements)
      return 0;
    for (size_t i = 0; i < a->elements; i++)
      if (!same(a->element[i], b->element[i], tol))
        return 0;
    return 1;
  default:
    return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
  }
}

static void show(const char *side, const redisReply *r) {
  char buf[2048];
  rh_reply_text(r, buf, sizeof buf);
  print_message("    %s (type %d): %s\n", side, r->type, buf);
}

static redisReply *parse(const fake_out_t *out) {
  redisReader *rd = redisReaderCreate();
  void *reply = NULL;
  assert_non_null(rd);
  assert_int_equal(redisReaderFeed(rd, out->buf, out->len), REDIS_OK);
  assert_int_equal(redisReaderGetReply(rd, &reply), REDIS_OK);
  redisReaderFree(rd);
  return reply;
}

static void run_case(const case_t *c) {
  if (skip_why[0] != '\0') {
    print_message("skipped: %s\n", skip_why);
    skip();
  }
  redisReply *rreal[MAX_STEPS] = {0}, *rfake[MAX_STEPS] = {0};
  fake_db_t *db = fake_db_new();
  fake_env_t env = {.now_us = wall_us, .publish = count_publish};
  int bad = 0;
  assert_non_null(db);
  redisReply *r = redisCommand(real, "FLUSHALL");
  assert_non_null(r);
  freeReplyObject(r);
  r = redisCommand(real, "SCRIPT FLUSH");
  assert_non_null(r);
  freeReplyObject(r);
  for (int i = 0; i < MAX_STEPS && c->steps[i].argv[0] != NULL; i++) {
    const step_t *st = &c->steps[i];
    const char *argv[MAX_ARGS];
    size_t lens[MAX_ARGS];
    char bufs[MAX_ARGS][64];
    int argc = expand(st, rreal, bufs, argv, lens);
    rreal[i] = redisCommandArgv(real, argc, argv, lens);
    assert_non_null(rreal[i]);
    argc = expand(st, rfake, bufs, argv, lens);
    fake_out_t out = {0};
    assert_int_equal(fake_exec(db, &env, argc, argv, lens, &out), ST_OK);
    rfake[i] = parse(&out);
    fake_out_free(&out);
    int ok = same(rreal[i], rfake[i], st->tol);
    if (ok && st->gt > 0) {
      long long a, b, pa, pb;
      ok = as_ll(rreal[i], &a) && as_ll(rfake[i], &b) && as_ll(rreal[st->gt - 1], &pa) &&
           as_ll(rfake[st->gt - 1], &pb) && a > pa && b > pb;
    }
    if (!ok) {
      print_message("  %s, step %d (%s %s ...): the replies differ\n", c->name, i, argv[0],
                    argc > 1 && lens[1] < 64 ? argv[1] : "");
      show("redis", rreal[i]);
      show("fake ", rfake[i]);
      bad++;
    }
  }
  for (int i = 0; i < MAX_STEPS; i++) {
    if (rreal[i] != NULL)
      freeReplyObject(rreal[i]);
    if (rfake[i] != NULL)
      freeReplyObject(rfake[i]);
  }
  fake_db_free(db);
  assert_int_equal(bad, 0);
}

/* ---- the library's own traffic -------------------------------------------------- */

#define MAX_RECORDED 4096

typedef struct {
  int argc;
  char *argv[64];
  size_t lens[64];
} recorded_t;

static int hexval(char ch) {
  return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch - 'A' + 10;
}

/* One MONITOR line ('TIME [DB ADDR] "ARG" "ARG" ...', each argument as
 * sdscatrepr writes it) into rec; 0 for a command a script ran ("lua"), or
 * one the fake leaves to its server. */
static int parse_monitor(const char *line, recorded_t *rec) {
  static const char *const data[] = {
      "get",       "set",     "del",    "exists",  "pexpire",
      "pexpireat", "pttl",    "time",   "publish", "zadd",
      "zscore",    "zrem",    "zrange", "zcard",   "zremrangebyscore",
      "eval",      "evalsha", "script"};
  const char *p = strchr(line, '[');
  const char *close = p != NULL ? strchr(p, ']') : NULL;
  if (close == NULL || (close - p >= 4 && strncmp(close - 3, "lua", 3) == 0))
    return 0;
  rec->argc = 0;
  for (p = close + 1; *p != '\0' && rec->argc < 64;) {
    while (*p == ' ')
      p++;
    if (*p != '"')
      break;
    char *arg = malloc(strlen(p) + 1);
    size_t n = 0;
    assert_non_null(arg);
    for (p++; *p != '\0' && *p != '"'; p++) {
      if (*p != '\\') {
        arg[n++] = *p;
        continue;
      }
      p++;
      switch (*p) {
      case 'n':
        arg[n++] = '\n';
        break;
      case 'r':
        arg[n++] = '\r';
        break;
      case 't':
        arg[n++] = '\t';
        break;
      case 'a':
        arg[n++] = '\a';
        break;
      case 'b':
        arg[n++] = '\b';
        break;
      case 'x':
        arg[n++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
        p += 2;
        break;
      default:
        arg[n++] = *p;
        break;
      }
    }
    if (*p == '"')
      p++;
    rec->argv[rec->argc] = arg;
    rec->lens[rec->argc++] = n;
  }
  for (size_t i = 0; rec->argc > 0 && i < sizeof data / sizeof data[0]; i++)
    if (rec->lens[0] == strlen(data[i]) && strncasecmp(rec->argv[0], data[i], rec->lens[0]) == 0)
      return 1;
  for (int i = 0; i < rec->argc; i++)
    free(rec->argv[i]);
  return 0;
}

/* What an application does with the library, recorded. */
static void library_run(void) {
  char buf[4096];
  redlock_options_t *opts = redlock_options_new();
  redlock_t *plain = NULL, *fenced = NULL;
  redlock_lock_t *l1, *l2, *p1, *p2, *r1, *w1;
  assert_non_null(opts);
  assert_int_equal(redlock_options_add_node(opts, rh_server_uri(server)), 0);
  /* the server just started: no restart quarantine for it */
  assert_int_equal(redlock_options_set_quarantine(opts, 0), 0);
  assert_int_equal(redlock_open(&plain, opts), 0);
  assert_int_equal(redlock_options_set_fencing(opts, 1), 0);
  assert_int_equal(redlock_open(&fenced, opts), 0);
  redlock_options_free(opts);
  assert_int_equal(redlock_lock(plain, "orders:1", 10000, &l1), 0);
  assert_int_equal(redlock_trylock(fenced, "orders:1", 10000, &l2), REDLOCK_ELOCKED);
  assert_int_equal(redlock_extend(plain, l1, 20000), 0);
  assert_true(redlock_inspect(plain, "orders:1", REDLOCK_INSPECT_LOCK, buf, sizeof buf) >= 0);
  assert_int_equal(redlock_unlock(plain, l1), 0);
  const char *many[] = {"orders:3", "orders:4"};
  assert_int_equal(redlock_lock_many(plain, many, 2, 10000, &l1), 0);
  assert_int_equal(redlock_lock_many(fenced, many, 2, 10000, &l2), REDLOCK_ELOCKED);
  assert_int_equal(redlock_extend(plain, l1, 20000), 0);
  assert_int_equal(redlock_unlock(plain, l1), 0);
  assert_int_equal(redlock_lock(fenced, "orders:2", 10000, &l2), 0);
  assert_true(redlock_lock_fence(l2) > 0);
  assert_int_equal(redlock_extend(fenced, l2, 20000), 0);
  assert_true(redlock_inspect(fenced, "orders:2", REDLOCK_INSPECT_LOCK, buf, sizeof buf) >= 0);
  uint64_t fence = 0;
  assert_int_equal(redlock_revoke(fenced, "orders:2", &fence), 0);
  assert_true(fence > redlock_lock_fence(l2));
  assert_int_equal(redlock_extend(fenced, l2, 20000), REDLOCK_ELOST);
  redlock_unlock(fenced, l2);
  assert_int_equal(redlock_semaphore_acquire(plain, "pool", 2, 10000, 0, &p1), 0);
  assert_int_equal(redlock_semaphore_acquire(fenced, "pool", 2, 10000, 0, &p2), 0);
  assert_int_equal(redlock_extend(plain, p1, 20000), 0);
  assert_true(redlock_inspect(plain, "pool", REDLOCK_INSPECT_SEMAPHORE, buf, sizeof buf) >= 0);
  assert_int_equal(redlock_unlock(plain, p1), 0);
  assert_int_equal(redlock_unlock(fenced, p2), 0);
  assert_int_equal(redlock_rwlock_read(plain, "doc", 10000, 0, &r1), 0);
  assert_int_equal(redlock_rwlock_write(fenced, "doc", 10000, 0, &w1), REDLOCK_ELOCKED);
  assert_int_equal(redlock_extend(plain, r1, 20000), 0);
  assert_true(redlock_inspect(plain, "doc", REDLOCK_INSPECT_RWLOCK, buf, sizeof buf) >= 0);
  assert_int_equal(redlock_unlock(plain, r1), 0);
  assert_int_equal(redlock_rwlock_write(fenced, "doc", 10000, 0, &w1), 0);
  assert_int_equal(redlock_extend(fenced, w1, 20000), 0);
  assert_int_equal(redlock_unlock(fenced, w1), 0);
  assert_int_equal(redlock_rwlock_read(fenced, "doc", 10000, 0, &r1), 0);
  assert_int_equal(redlock_unlock(fenced, r1), 0);
  redlock_close(plain);
  redlock_close(fenced);
}

static void test_library_traffic(void **state) {
  (void)state;
  if (skip_why[0] != '\0') {
    print_message("skipped: %s\n", skip_why);
    skip();
  }
  static recorded_t rec[MAX_RECORDED];
  int nrec = 0;
  redisContext *mon = redisConnect("127.0.0.1", rh_server_port(server));
  assert_true(mon != NULL && mon->err == 0);
  redisReply *r = redisCommand(real, "FLUSHALL");
  freeReplyObject(r);
  r = redisCommand(real, "SCRIPT FLUSH");
  freeReplyObject(r);
  r = redisCommand(mon, "MONITOR");
  assert_non_null(r);
  freeReplyObject(r);
  library_run();
  /* the end of the run: a command MONITOR shows after every one of it */
  r = redisCommand(real, "ECHO end-of-library-run");
  freeReplyObject(r);
  struct timeval tv = {10, 0}; /* a deadline for each line, never a wait for nothing */
  redisSetTimeout(mon, tv);
  for (;;) {
    void *line = NULL;
    assert_int_equal(redisGetReply(mon, &line), REDIS_OK);
    redisReply *m = line;
    int end = m->type == REDIS_REPLY_STATUS && strstr(m->str, "end-of-library-run") != NULL;
    if (!end && m->type == REDIS_REPLY_STATUS && nrec < MAX_RECORDED &&
        parse_monitor(m->str, &rec[nrec]))
      nrec++;
    freeReplyObject(m);
    if (end)
      break;
  }
  redisFree(mon);
  print_message("  the library sent %d data commands; replaying them\n", nrec);
  assert_true(nrec > 20);
  r = redisCommand(real, "FLUSHALL");
  freeReplyObject(r);
  r = redisCommand(real, "SCRIPT FLUSH");
  freeReplyObject(r);
  fake_db_t *db = fake_db_new();
  fake_env_t env = {.now_us = wall_us, .publish = count_publish};
  int bad = 0, scripts = 0;
  assert_non_null(db);
  for (int i = 0; i < nrec; i++) {
    redisReply *a = redisCommandArgv(real, rec[i].argc, (const char **)rec[i].argv, rec[i].lens);
    fake_out_t out = {0};
    assert_non_null(a);
    assert_int_equal(
        fake_exec(db, &env, rec[i].argc, (const char *const *)rec[i].argv, rec[i].lens, &out),
        ST_OK);
    redisReply *b = parse(&out);
    fake_out_free(&out);
    scripts += strncasecmp(rec[i].argv[0], "eval", 4) == 0;
    if (getenv("FAKE_DIFF_VERBOSE") != NULL) {
      const script_t *sc = NULL;
      for (unsigned id = 0; id < SCRIPT_COUNT && rec[i].argc > 1; id++)
        if (rec[i].lens[1] == 40 &&
            memcmp(script_get((script_id_t)id)->sha1, rec[i].argv[1], 40) == 0)
          sc = script_get((script_id_t)id);
      print_message("  %d: %.*s %s\n", i, (int)rec[i].lens[0], rec[i].argv[0],
                    sc != NULL                               ? sc->name
                    : rec[i].argc > 1 && rec[i].lens[1] < 60 ? rec[i].argv[1]
                                                             : "");
    }
    if (!same(a, b, TRAFFIC)) {
      print_message("  recorded command %d (%.*s): the replies differ\n", i, (int)rec[i].lens[0],
                    rec[i].argv[0]);
      show("redis", a);
      show("fake ", b);
      bad++;
    }
    freeReplyObject(a);
    freeReplyObject(b);
    for (int k = 0; k < rec[i].argc; k++)
      free(rec[i].argv[k]);
  }
  fake_db_free(db);
  assert_true(scripts > 10); /* the library's scripts were among them */
  assert_int_equal(bad, 0);
}

static void test_strings(void **s) { (void)s, run_case(&cases[0]); }
static void test_zsets(void **s) { (void)s, run_case(&cases[1]); }
static void test_script_cache(void **s) { (void)s, run_case(&cases[2]); }
static void test_lock(void **s) { (void)s, run_case(&cases[3]); }
static void test_fencing(void **s) { (void)s, run_case(&cases[4]); }
static void test_semaphore(void **s) { (void)s, run_case(&cases[5]); }
static void test_edges(void **s) { (void)s, run_case(&cases[7]); }
static void test_rw(void **s) {
  (void)s;
  run_case(&cases[6]);
  assert_true(published > 0); /* the releases announced, through env.publish */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strings),
      cmocka_unit_test(test_zsets),
      cmocka_unit_test(test_script_cache),
      cmocka_unit_test(test_lock),
      cmocka_unit_test(test_fencing),
      cmocka_unit_test(test_semaphore),
      cmocka_unit_test(test_rw),
      cmocka_unit_test(test_edges),
      cmocka_unit_test(test_library_traffic),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
