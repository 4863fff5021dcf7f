/* redis_harness.h: starts and stops real redis-server processes on free
 * loopback ports for the integration tests and the demo, and injects faults
 * into them.  Every server is a child of this process, stopped by PID (never
 * by name); children get PR_SET_PDEATHSIG so a crashed test leaks none.
 * Loopback (127.0.0.1) only.
 *
 * The server program is taken from the environment variable
 * REDLOCK_TEST_SERVER (a name looked up on PATH, or a path to the binary,
 * best absolute: ctest runs each test in its own directory, and a relative
 * path is taken from there; e.g. $PWD/build-extra/valkey/usr/bin/valkey-server),
 * redis-server by default; rh_options_t.executable names another one for one
 * server.  Everything in tests/ that starts a server honours it. */
#ifndef REDIS_HARNESS_H
#define REDIS_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rh_server rh_server_t;

typedef struct {
  const char *password; /* requirepass, or NULL */
  const char *acl_user; /* with acl_password: "user NAME on >PASS ~* &* +@all" */
  const char *acl_password;
  int enable_debug;        /* --enable-debug-command local */
  const char *unix_socket; /* also listen on this unix socket path, or NULL */
  const char *bind_also;   /* also listen on this loopback address (e.g. "::1"), or NULL */
  /* TLS: with tls_cert_file set the server speaks TLS only (--port 0
   * --tls-port PORT), rh_server_uri() is "rediss://...", and the harness's
   * own connections (readiness, rh_server_command) go through a private
   * plain unix socket (or unix_socket when set), so it needs no TLS itself. */
  const char *tls_cert_file;    /* --tls-cert-file */
  const char *tls_key_file;     /* --tls-key-file */
  const char *tls_ca_cert_file; /* --tls-ca-cert-file (required by redis with TLS) */
  int tls_auth_clients;         /* --tls-auth-clients yes (1) or no (0) */
  /* "NAME=VALUE" entries (NULL-terminated, up to RH_MAX_ENV) set in the
   * server's environment, replacing the test's own NAME: e.g. an LD_PRELOAD
   * shim (tests/support/clockshift.c).  NULL: the test's environment. */
  const char *const *env;
  /* Arguments appended to the server's command line (NULL-terminated, up to
   * RH_MAX_EXTRA_ARGS), after the harness's own: a later value of a setting
   * wins, so {"--appendonly", "yes", NULL} turns AOF on, and
   * {"--replicaof", "127.0.0.1", "PORT", NULL} starts a replica.  NULL: none. */
  const char *const *extra_args;
  /* The server program, a path (best absolute), or NULL for
   * rh_server_executable()'s: e.g. rh_valkey9_executable(). */
  const char *executable;
  /* A server without Lua: started with --enable-module-command local, then
   * MODULE UNLOAD lua, and EVAL checked to fail.  Only Valkey >= 9.1 has Lua
   * as a module it can unload; rh_server_start and rh_server_restart return
   * RH_ERR_NO_LUA (and leave no server running) on any other server, so
   * that a test can skip. */
  int no_lua;
} rh_options_t;
/* rh_server_start / rh_server_restart: no_lua asked of a server that cannot
 * run without Lua (not Valkey >= 9.1). */
#define RH_ERR_NO_LUA (-2)
#define RH_MAX_ENV 8
#define RH_MAX_EXTRA_ARGS 32

/* The server program the harness runs (REDLOCK_TEST_SERVER, or
 * redis-server), as an absolute path, or NULL when it cannot be found.  For
 * tests that start a server of their own (e.g. under LD_PRELOAD). */
const char *rh_server_executable(void);
/* What REDLOCK_TEST_SERVER names (or "redis-server"), for messages. */
const char *rh_server_name(void);
/* Valkey 9.1 (Debian sid's, through scripts/fetch-extra.sh's wrapper), as
 * REDLOCK_TEST_VALKEY9 names it (CMake sets it for the integration and CLI
 * tests), or NULL when it is not there: for rh_options_t.executable. */
const char *rh_valkey9_executable(void);

/* Picks a free loopback port, spawns redis-server (no persistence), waits
 * (up to 5 s) until it answers PING.  opts may be NULL.  0, -1, or
 * RH_ERR_NO_LUA (see no_lua). */
int rh_server_start(rh_server_t **out, const rh_options_t *opts);
/* Starts n servers; on failure stops the ones already started and returns
 * what rh_server_start returned. */
int rh_cluster_start(rh_server_t **servers, size_t n, const rh_options_t *opts);
void rh_cluster_free(rh_server_t **servers, size_t n);

int rh_server_port(const rh_server_t *server);
pid_t rh_server_pid(const rh_server_t *server); /* 0 while down */
/* "redis://127.0.0.1:PORT" (with credentials when the server has them). */
const char *rh_server_uri(const rh_server_t *server);
/* The plain unix socket the server also listens on (unix_socket, or a TLS
 * server's private one), or NULL: for plain connections to a TLS server. */
const char *rh_server_unix_path(const rh_server_t *server);

/* SIGKILL + reap: the server is down, its port kept for a restart. */
int rh_server_kill(rh_server_t *server);
/* Starts it again on the same port, empty (waits for PING), with the same
 * options (no_lua: Lua unloaded again).  0, -1 or RH_ERR_NO_LUA. */
int rh_server_restart(rh_server_t *server);
/* Unloads the Lua engine (a module since Valkey 9.1) of a server started
 * with `--enable-module-command local` (no_lua does both at start) and
 * checks that EVAL fails afterwards.  0, -1 when the server could not be
 * reached, or RH_ERR_NO_LUA when it has no Lua module to unload (Redis,
 * older Valkey) or still runs scripts without it. */
int rh_server_unload_lua(const rh_server_t *server);
/* SIGSTOP / SIGCONT. */
int rh_server_pause(rh_server_t *server);
int rh_server_resume(rh_server_t *server);

/* Runs one command synchronously on its own short-lived connection
 * (hiredis, 2 s timeout) and writes the reply as text into buf: status and
 * bulk strings as they are, integers in decimal, nil as "(nil)", errors as
 * "ERR ...".  Returns 0, or -1 when the server could not be reached.
 * Example: rh_server_command(s, buf, sizeof buf, "GET %s", key). */
int rh_server_command(rh_server_t *server, char *buf, size_t size, const char *fmt, ...);
/* The same with a 20 s timeout instead of 2 s, for commands that fsync a
 * file before they answer (CLUSTER ADDSLOTS and its kin save nodes.conf). */
int rh_server_command_slow(rh_server_t *server, char *buf, size_t size, const char *fmt, ...);

/* A reply as rh_server_command gives it: a string, status, error or
 * integer as text, nil as "(nil)", an array's elements one per line
 * (truncated to fit buf). */
struct redisReply;
void rh_reply_text(const struct redisReply *r, char *buf, size_t size);

/* A loopback port nobody listens on right now (the kernel's choice for
 * 127.0.0.1:0); -1 when none could be had. */
int rh_free_port(void);

/* Waits up to timeout_ms until `replica` reports its link to its master up
 * and `master` counts one connected replica (INFO replication on both): 1
 * when that came true, 0 on timeout. */
int rh_wait_replica_linked(rh_server_t *master, rh_server_t *replica, int timeout_ms);

/* Stops (SIGTERM, then SIGKILL after 2 s) and frees.  NULL is fine. */
void rh_server_free(rh_server_t *server);

/* For a child of the test between fork and exec (async-signal-safe): dies
 * with the thread that forked (PR_SET_PDEATHSIG: a crashed test leaks no
 * process) and starts from a clean signal state (the test may block or
 * ignore signals).  -1 when `parent` (getpid() before the fork) is already
 * gone: the child must _exit. */
int rh_child_init(pid_t parent);
/* Removes a directory and the files in it (one level). */
void rh_remove_dir(const char *dir);

/* Polls pred(arg) every millisecond until it returns nonzero or timeout_ms
 * passes: returns 1 when it came true, 0 on timeout.  For waiting on an event
 * with a deadline instead of sleeping. */
int rh_wait_until(int (*pred)(void *arg), void *arg, int timeout_ms);

/* Monotonic milliseconds. */
uint64_t rh_now_ms(void);

#endif
