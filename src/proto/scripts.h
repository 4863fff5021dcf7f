/* scripts.h: the Lua scripts we run on the masters (the .lua files in src/lua, embedded
 * at build time with their SHA1s), and the EVALSHA -> EVAL rewrite used when a
 * master answers NOSCRIPT (its script cache was flushed or it restarted). */
#ifndef REDLOCK_SCRIPTS_H
#define REDLOCK_SCRIPTS_H

#include <stddef.h>

#include "util/status.h"

typedef enum {
  SCRIPT_RELEASE = 0,
  SCRIPT_EXTEND,
  SCRIPT_ACQUIRE_MANY,
  SCRIPT_ACQUIRE_FENCED,
  SCRIPT_FENCE_COMMIT,
  /* the semaphore's (kind_sem.c) and the read-write lock's (kind_rw.c), sent
   * with prims.c's command helpers */
  SCRIPT_SEM_ACQUIRE,
  SCRIPT_SEM_EXTEND,
  SCRIPT_SEM_RELEASE,
  SCRIPT_RW_READ,
  SCRIPT_RW_WRITE,
  SCRIPT_RW_EXTEND,
  SCRIPT_RW_RELEASE,
  SCRIPT_RW_FENCE_COMMIT,
  /* redlock_inspect's read and redlock_revoke's write (inspect.c, revoke.c) */
  SCRIPT_INSPECT,
  SCRIPT_REVOKE,
  SCRIPT_COUNT
} script_id_t;

typedef struct {
  const char *name;
  const char *body;
  size_t body_len;
  const char *sha1; /* 40 lowercase hex digits */
} script_t;

const script_t *script_get(script_id_t id);

/* Where a script's first key is in its command, EVALSHA <sha> <numkeys>
 * <key>... (and in its EVAL form): what a round names as the key it routes
 * by (round_params_t.key_arg). */
#define SCRIPT_FIRST_KEY_ARG 3

/* A release script's last argument says how it announces the release to
 * waiters: not at all (the clean-up after a failed attempt), with PUBLISH
 * (every voter but a cluster: subscribers use SUBSCRIBE), or with SPUBLISH
 * to the channel's shard (a cluster voter of Redis >= 7.0, whose
 * subscribers use SSUBSCRIBE at the slot's primary: a PUBLISH would cross
 * the cluster bus to every node).  The rounds send one command to every
 * voter, written with PUBLISH; a cluster voter rewrites that last byte. */
#define SCRIPT_ANNOUNCE_NONE "0"
#define SCRIPT_ANNOUNCE_PUBLISH "1"
/* release.lua only: PUBLISH, and some key contains a '{' (it may carry its
 * own hash tag, which decides its channel's name: the script looks); with
 * "1" no key has one, and the script names each channel without looking. */
#define SCRIPT_ANNOUNCE_PUBLISH_TAGGED "3"

/* The flag a cluster voter writes over a PUBLISH flag ("1" or "3"): "2" or
 * "4", the same announcement with SPUBLISH. */
static inline char script_announce_shard(char publish_flag) { return (char)(publish_flag + 1); }

/* The offset of a formatted release command's announce flag when it ends
 * with a PUBLISH flag as its last argument ("...$1\r\n1\r\n" or "3"),
 * else 0 (no announcement, or not such a command). */
size_t script_publish_flag_at(const char *cmd, size_t len);

/* Given a formatted EVALSHA command ("*N\r\n$7\r\nEVALSHA\r\n$40\r\n<sha>\r\n..."),
 * writes the same command as EVAL with the script body into a new malloc'ed
 * buffer (*out, *out_len; free with rl_free()).  ST_OK; ST_EINVAL when cmd is
 * not an EVALSHA of that script in that form; ST_ENOMEM. */
status_t script_evalsha_to_eval(const char *cmd, size_t len, const script_t *script, char **out,
                                size_t *out_len);

#endif
