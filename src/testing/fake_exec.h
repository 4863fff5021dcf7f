/* fake_exec.h: what a fake master (redlock_testing.h) does with one data
 * command: its keyspace (strings and sorted sets with expiry, on the
 * master's clock) and the commands that read and write it, the library's
 * Lua scripts included (run natively, as Redis would run them), each
 * answered in RESP exactly as Redis answers it.  The server around it
 * (fake_server.c) handles the connection-level commands (PING, INFO,
 * SUBSCRIBE, CLIENT, SELECT, AUTH, COMMAND, WAIT, WAITAOF) itself. */
#ifndef REDLOCK_FAKE_EXEC_H
#define REDLOCK_FAKE_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef struct fake_db fake_db_t;

/* A reply being written: RESP bytes from the library's allocator. */
typedef struct {
  char *buf;
  size_t len, cap;
} fake_out_t;

/* How the master answers (redlock_testing_mode_t's values). */
typedef enum {
  FAKE_MODE_NORMAL = 0,
  FAKE_MODE_GRANT,  /* each command runs on an empty keyspace: every acquisition is won */
  FAKE_MODE_REFUSE, /* each acquisition and extension gets the answer a held key gets */
} fake_mode_t;

/* What a command needs from its master. */
typedef struct {
  /* The master's clock: microseconds since the Unix epoch (TIME, expiry). */
  uint64_t (*now_us)(void *arg);
  /* PUBLISH (and a script's): delivers message to channel's subscribers,
   * returns how many received it. */
  long long (*publish)(void *arg, const char *channel, size_t channel_len, const char *message,
                       size_t message_len);
  void *arg;
  fake_mode_t mode;
} fake_env_t;

fake_db_t *fake_db_new(void);
void fake_db_free(fake_db_t *db);
/* Every key gone (a restart without persistence). */
void fake_db_clear(fake_db_t *db);
/* Drops key: 1 when it existed (unexpired), 0 when not. */
int fake_db_drop(fake_db_t *db, const fake_env_t *env, const char *key, size_t len);
/* 1 when key exists (unexpired), 0 when not. */
int fake_db_has(fake_db_t *db, const fake_env_t *env, const char *key, size_t len);
/* A promoted replica's view: drops every key last written at or after
 * since_us (of the master's clock). */
void fake_db_forget_since(fake_db_t *db, uint64_t since_us);

/* Runs one command (argv[0] its name, any case) and appends its RESP reply
 * to out.  Data commands: GET SET (NX XX PX EX KEEPTTL GET) DEL EXISTS
 * PEXPIRE PEXPIREAT PTTL TIME PUBLISH ZADD ZSCORE ZREM ZRANGE ZCARD
 * ZREMRANGEBYSCORE, and EVAL / EVALSHA of the library's scripts (the ones
 * scripts.h lists: any other script is an error, as a script the fake
 * cannot run) and SCRIPT LOAD / EXISTS / FLUSH.  Anything else appends
 * Redis's "ERR unknown command" error.  The replies are Redis 7.0's
 * (tests/integration/test_fake_diff.c holds them to a real server's).  An
 * allocation that fails while the command runs is answered as Redis
 * answers a write past maxmemory ("-OOM ...", a script keeping what it
 * wrote before); ST_ENOMEM when even that reply could not be written (out
 * is then as before).  A db is used by one thread at a time (the kit's:
 * nothing here locks). */
status_t fake_exec(fake_db_t *db, const fake_env_t *env, int argc, const char *const *argv,
                   const size_t *lens, fake_out_t *out);

/* Reply writers (the server's own replies use them too); ST_ENOMEM leaves
 * out as it was. */
status_t fake_out_raw(fake_out_t *out, const char *bytes, size_t len);
status_t fake_out_status(fake_out_t *out, const char *text);
status_t fake_out_error(fake_out_t *out, const char *text);
/* Redis's "wrong number of arguments for 'name' command", name lowered
 * (the first 40 bytes). */
status_t fake_out_arity_error(fake_out_t *out, const char *name, size_t len);
status_t fake_out_int(fake_out_t *out, long long v);
status_t fake_out_bulk(fake_out_t *out, const char *s, size_t len);
status_t fake_out_nil(fake_out_t *out);
status_t fake_out_array(fake_out_t *out, long long n);
void fake_out_free(fake_out_t *out);

#endif
