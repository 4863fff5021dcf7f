/* fake_transport.h: fake masters, for the engine's unit tests: as voters
 * (voter.h: test_lock_*.c through engine_fixture, whose client gets them as
 * its voter set) or behind a round_transport_t (test_round.c on a bare
 * round_env_t).  Each master keeps the requests sent to it in order,
 * as a connection would, and answers only when the test says so (oldest
 * first, or a chosen one), with a hand-built hiredis reply or none
 * (connection lost).  What each master does with a send (take it, queue it
 * unsent, refuse it as down or busy), whether it is in restart quarantine or a duplicate,
 * and what the rounds asked of it (sends, cancels, deferred releases and the
 * last one's command, warnings) are the test's to set and read. */
#ifndef REDLOCK_TEST_FAKE_TRANSPORT_H
#define REDLOCK_TEST_FAKE_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/round.h"
#include "voters/voter.h"

#define FAKE_MASTERS_MAX 8
#define FAKE_OUT_MAX 8192     /* requests outstanding per master (a close's release window) */
#define FAKE_DEFERRED_MAX 512 /* bytes kept of the last deferred release */

typedef enum {
  FAKE_SEND_OK = 0,  /* written: sent_ns = now */
  FAKE_SEND_QUEUED,  /* taken but waiting unsent in a backlog: sent_ns = 0 */
  FAKE_SEND_BATCHED, /* the same, waiting for its connection's next batch (req->batched) */
  FAKE_SEND_DOWN,    /* refused: ST_DOWN */
  FAKE_SEND_BUSY,    /* refused: ST_BUSY */
  FAKE_SEND_NOLUA,   /* a master that runs no scripts: an EVALSHA or EVAL refused (ST_ENOTSUP),
                      * anything else taken as FAKE_SEND_OK */
} fake_send_mode_t;

typedef struct {
  node_req_t *req;
  int queued;
} fake_out_t;

struct fake_transport;

typedef struct {
  voter_t voter;            /* first: the voter ops get it; the client's voter i */
  struct fake_transport *f; /* its set */
  fake_send_mode_t mode;
  int quarantined;
  int duplicate; /* the same server as a lower-numbered master: not a voter */
  uint64_t progress_ns;
  fake_out_t out[FAKE_OUT_MAX]; /* outstanding, oldest first: out[head .. head + n_out) */
  unsigned head, n_out;
  unsigned sends, cancels, defers, warns;
  char deferred[FAKE_DEFERRED_MAX]; /* the last deferred release's first bytes */
  size_t deferred_len;              /* how many of them are kept */
} fake_master_t;

typedef struct fake_transport {
  unsigned n;
  /* 1: every SET and script sent must carry its key's hash slot and keep
   * fence counters with their lock keys (the engine's rounds); 0 (after
   * init): rounds a test builds by hand need not. */
  int check_slots;
  uint64_t (*now_ns)(void);
  fake_master_t m[FAKE_MASTERS_MAX];
  voter_t *voters[FAKE_MASTERS_MAX]; /* &m[i].voter: a client's voter set */
} fake_transport_t;

extern const round_transport_t fake_transport;
/* The fake masters as voters: sends and what the rounds ask go to the
 * master as through fake_transport.  Start reports the first attempt over
 * at once; shutdown drops the master's outstanding requests (NULL replies,
 * as a real connection's teardown does) and reports it closed at once; no
 * replays are owed, abandon leaves the requests to shutdown. */
extern const voter_ops_t fake_voter_ops;

void fake_transport_init(fake_transport_t *f, unsigned n, uint64_t (*now_ns)(void));
/* Requests master i has not answered yet. */
unsigned fake_outstanding(const fake_transport_t *f, unsigned i);
/* Requests outstanding on every master together. */
unsigned fake_outstanding_all(const fake_transport_t *f);
/* 1 when master i's k-th outstanding request (0: oldest) contains `text`. */
int fake_cmd_has(const fake_transport_t *f, unsigned i, unsigned k, const char *text);
/* 1 when master i's k-th outstanding request waits unsent (FAKE_SEND_QUEUED). */
int fake_queued(const fake_transport_t *f, unsigned i, unsigned k);
/* 1 when the last release deferred for master i contains `text` (within its
 * first FAKE_DEFERRED_MAX bytes). */
int fake_deferred_has(const fake_transport_t *f, unsigned i, const char *text);

/* Answers master i's oldest outstanding request. */
void fake_reply_ok(fake_transport_t *f, unsigned i); /* +OK */
void fake_reply_status(fake_transport_t *f, unsigned i, const char *text);
void fake_reply_nil(fake_transport_t *f, unsigned i);
void fake_reply_int(fake_transport_t *f, unsigned i, long long value);
void fake_reply_error(fake_transport_t *f, unsigned i, const char *text);
void fake_reply_none(fake_transport_t *f, unsigned i); /* lost on the way (NULL) */
/* inspect.lua's answer (what redlock_inspect, redlock_revoke's read and the
 * leader views read), as Redis sends a Lua table: the fence counter (a
 * string of digits; NULL: false, a nil), the semaphore's limit (< 0: false),
 * then per hold its tag, its value and its ttl in ms. */
typedef struct {
  const char *tag; /* "" a lock's or an election's key, a slot's number, "w", "r" */
  const char *value;
  long long ttl_ms;
} fake_hold_t;
void fake_reply_holds(fake_transport_t *f, unsigned i, const char *counter, long long limit,
                      const fake_hold_t *holds, unsigned n_holds);
/* Answers master i's k-th outstanding request (0: oldest) out of turn, as
 * when a test has a later round's request answered before an earlier one's. */
void fake_reply_ok_at(fake_transport_t *f, unsigned i, unsigned k);
/* Master i's connection drops: every outstanding request gets NULL. */
void fake_drop(fake_transport_t *f, unsigned i);
/* Answers the oldest outstanding request of every master that has one,
 * master 0 first, with an integer (an EVALSHA's) or +OK. */
void fake_reply_int_all(fake_transport_t *f, long long value);
void fake_reply_ok_all(fake_transport_t *f);
/* Every master refuses (nil) its oldest request; each must have one out. */
void fake_reply_nil_each(fake_transport_t *f);

#endif
