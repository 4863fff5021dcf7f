/* redlock_testing.h: fake Redis masters for the tests of programs that use
 * redlock-c, in the program's own process: no redis-server, and no port
 * unless asked for.
 *
 * A kit is N fake masters, each a small server on a thread of its own that
 * answers what this library sends as Redis does (SET NX PX, the library's
 * Lua scripts run natively, INFO, SUBSCRIBE and PUBLISH, ...), over a Unix
 * socket in a private directory (or 127.0.0.1, REDLOCK_TESTING_TCP).  Its
 * nodes are ordinary URIs: give them to redlock_options_add_node (or call
 * redlock_testing_add_nodes), and every primitive works on them: locks,
 * fencing, semaphores, read-write locks, elections, woken waits, inspect
 * and revoke.  Faults come on cue: kill, restart, pause, slow replies, a
 * lost key, a clock jump, a failover; and "always grant" / "always refuse"
 * modes for tests of the caller's own error paths.
 *
 *   redlock_testing_t *kit;
 *   redlock_testing_start(3, 0, &kit);
 *   redlock_options_t *opts = redlock_options_new();
 *   redlock_testing_add_nodes(kit, opts);
 *   ... open clients, lock ...
 *   redlock_testing_kill(kit, 0);
 *   redlock_testing_kill(kit, 1);          // now a lock gets REDLOCK_ENOQUORUM
 *   ...
 *   redlock_testing_stop(kit);
 *
 * Time.  Each fake master has a clock (key expiry, TIME, INFO's uptime):
 * real time, or with REDLOCK_TESTING_VIRTUAL_TIME a clock that moves only
 * with redlock_testing_advance, so a test of a 30 s lease's expiry takes
 * milliseconds.  The client's own clock is never faked: a holder's
 * validity still counts down in real time; what it sees of an advance is
 * what a real master's expiry would show it (its extension refused, its
 * watch reporting the loss, another client granted).
 *
 * What a fake is not: persistence, replication to real replicas, ACLs and
 * TLS are not emulated; commands the library never sends answer an error.
 * A fake's answers are checked against real redis-server's, command by
 * command, by the library's own tests.
 *
 * Threads: every call here is safe from any thread, except on a client's
 * loop thread or a kit call made from a client callback, which would wait
 * for the kit's thread while holding the client's (do faults from the
 * test's own thread).  A fault call returns once it is in effect: a killed
 * master's connections are closed, a paused one answers nothing more.
 * Error returns are REDLOCK_E* codes (redlock.h): REDLOCK_EINVAL for a NULL
 * kit or an index out of range, REDLOCK_ENOMEM, REDLOCK_EIO when a socket
 * cannot be made. */
#ifndef REDLOCK_TESTING_H
#define REDLOCK_TESTING_H

#include "redlock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct redlock_testing redlock_testing_t;

/* redlock_testing_start's flags. */
#define REDLOCK_TESTING_TCP 0x1u          /* listen on 127.0.0.1 (free ports), not Unix sockets */
#define REDLOCK_TESTING_VIRTUAL_TIME 0x2u /* the fakes' clocks move only with _advance */

/* The most fake masters in one kit. */
#define REDLOCK_TESTING_MAX 16

/* How a fake master answers (redlock_testing_set_mode). */
typedef enum {
  REDLOCK_TESTING_NORMAL = 0, /* as Redis does */
  REDLOCK_TESTING_GRANT,      /* every acquisition, extension and release succeeds: another
                               * holder's key is deleted before an acquisition or extension
                               * takes it (it stays deleted back in NORMAL), a release is
                               * answered as done; fence counters are kept, tokens rise */
  REDLOCK_TESTING_REFUSE,     /* every acquisition and extension is refused as if another
                               * holder had the key, and nothing is written; releases find
                               * nothing of ours */
} redlock_testing_mode_t;

/* Starts n fake masters (1 <= n <= REDLOCK_TESTING_MAX) and their thread.
 * They start as masters up for a day (no restart quarantine), empty. */
REDLOCK_EXPORT int redlock_testing_start(unsigned n, unsigned flags, redlock_testing_t **out);
/* Stops every fake master, closes their sockets and removes the kit's
 * directory; waits for the kit's thread.  Clients still connected see
 * their masters go down.  NULL is a no-op. */
REDLOCK_EXPORT void redlock_testing_stop(redlock_testing_t *kit);

REDLOCK_EXPORT unsigned redlock_testing_count(const redlock_testing_t *kit);
/* Master i's URI ("unix:///tmp/redlock-testing-XXXXXX/i.sock" or
 * "redis://127.0.0.1:PORT"), owned by the kit, valid until _stop; the same
 * across kill, restart and failover.  NULL when i is out of range. */
REDLOCK_EXPORT const char *redlock_testing_uri(const redlock_testing_t *kit, unsigned i);
/* redlock_options_add_node for every master, in order. */
REDLOCK_EXPORT int redlock_testing_add_nodes(const redlock_testing_t *kit, redlock_options_t *opts);

/* ---- Faults ---------------------------------------------------------------
 * i is the master's index.  A fault on a master that is down (killed) is
 * REDLOCK_EINVAL, except restart and set_mode.  What the test set rather
 * than the process had (the slow delay, the clock's jumps, the mode)
 * survives a kill and a restart; a restart clears the keys and the pause. */

/* The process dies: its connections close, it refuses new ones, and every
 * key is lost.  It stays down until redlock_testing_restart. */
REDLOCK_EXPORT int redlock_testing_kill(redlock_testing_t *kit, unsigned i);
/* A restart (of a killed master, or a running one: killed first): it comes
 * back empty, with a new run_id and uptime 0, as a Redis without
 * persistence does; clients' restart quarantine applies to it. */
REDLOCK_EXPORT int redlock_testing_restart(redlock_testing_t *kit, unsigned i);
/* SIGSTOP / SIGCONT: while paused, master i reads nothing and answers
 * nothing (connections stay open; requests wait in the socket); on resume
 * it runs what waited, in order, at its clock's time then. */
REDLOCK_EXPORT int redlock_testing_pause(redlock_testing_t *kit, unsigned i);
REDLOCK_EXPORT int redlock_testing_resume(redlock_testing_t *kit, unsigned i);
/* Every reply of master i is written delay_ms after its command ran
 * (0: at once); replies keep their order. */
REDLOCK_EXPORT int redlock_testing_slow(redlock_testing_t *kit, unsigned i, uint32_t delay_ms);
/* Master i loses one key (e.g. the lock key, prefix + resource), as an
 * eviction or a FLUSH would.  Returns 1 when the key existed, 0 when not. */
REDLOCK_EXPORT int redlock_testing_drop_key(redlock_testing_t *kit, unsigned i, const char *key);
/* Master i's clock jumps forward by ms: its keys expire that much sooner
 * and its TIME moves on. */
REDLOCK_EXPORT int redlock_testing_clock_jump(redlock_testing_t *kit, unsigned i, uint64_t ms);
/* Failover to master i's replica, which lags lag_ms behind: the keys
 * written in the last lag_ms (of master i's clock) are missing on the
 * promoted copy, the rest are there.  Connections close; the promoted
 * master answers at the same URI with a new replication id and the old one
 * as its second (master_replid2), so clients' failover quarantine applies. */
REDLOCK_EXPORT int redlock_testing_failover(redlock_testing_t *kit, unsigned i, uint64_t lag_ms);
/* Sets master i's mode; i == REDLOCK_TESTING_ALL sets every master's. */
#define REDLOCK_TESTING_ALL 0xffffffffu
REDLOCK_EXPORT int redlock_testing_set_mode(redlock_testing_t *kit, unsigned i,
                                            redlock_testing_mode_t mode);

/* ---- Time ------------------------------------------------------------------ */

/* Every master's clock moves forward by ms (with or without
 * REDLOCK_TESTING_VIRTUAL_TIME); keys whose time is up expire. */
REDLOCK_EXPORT int redlock_testing_advance(redlock_testing_t *kit, uint64_t ms);

/* ---- Looking in ------------------------------------------------------------ */

/* 1 when master i holds key (unexpired), 0 when not, < 0 on error. */
REDLOCK_EXPORT int redlock_testing_has_key(redlock_testing_t *kit, unsigned i, const char *key);
/* How many masters hold key. */
REDLOCK_EXPORT int redlock_testing_key_count(redlock_testing_t *kit, const char *key);
/* Commands master i has run since it started (or restarted). */
REDLOCK_EXPORT long long redlock_testing_commands(redlock_testing_t *kit, unsigned i);

#ifdef __cplusplus
}
#endif

#endif
