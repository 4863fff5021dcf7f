/* quarantine.h: whether, and until when, a master's votes must not count
 * because it may have lost keys it granted (docs/safety.md §5 and §8.4).
 * A judgement over what the handshake read (INFO server, INFO
 * replication) and what the voter remembers of the server it talked to
 * before, and the state it keeps for one master (quarantine_state_t: the
 * quarantine in force, that server, the owner's hint).  The node feeds it
 * what its handshake and its role check read (voters/node_handshake.c,
 * voters/node_acks.c), ticks the end on its link's timer and reports it;
 * the voters name it in their votes (quarantine_why).
 *
 *  - restart: a server younger than the max TTL may have lost, in its
 *    restart, keys granted before; quarantined until max TTL after its
 *    start.  Waived when every write this voter counts was fsynced to the
 *    AOF before it counted (waitaof=1,R), since then a restart loses none.
 *  - failover: a master that was a replica (promoted) may lack keys its old
 *    master granted; quarantined for max TTL from when we see the change:
 *    a replication id that changed under the same run_id, or, at first
 *    sight, a master_replid2 (it was promoted at a time INFO does not give).
 *    Waived when the voter's acks cover every replica (wait=R or
 *    waitaof=L,R with R >= its connected replicas): then each key granted
 *    was on every replica before it counted.
 *  - moved: another server answers at the same address (a virtual IP, a
 *    DNS name that moved): a new run_id from a server that was already up
 *    before we lost the old one; quarantined for max TTL from now, unless
 *    it is a promoted replica of the old one (its master_replid2 is the old
 *    replication id) and the acks cover every replica.
 *
 * The ack given here is the one that proves keys: a cluster primary's node
 * passes none, since a key migrates to another shard whose replicas and AOF
 * never acknowledged it (docs/safety.md §5b), so no ack waives anything there.
 *
 * A failover's or a move's quarantine runs max TTL from when it is seen,
 * unless the voter learned elsewhere (a Sentinel voter: the sentinels'
 * role-reported-time, docs/safety.md §5b) since when this very server (its
 * run_id) has been a master: then max TTL from then.  Not for a replication
 * id that changed under our eyes (same run_id): that change is news to
 * whoever gave the hint too. */
#ifndef REDLOCK_QUARANTINE_H
#define REDLOCK_QUARANTINE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/info.h"
#include "util/uri.h"

/* What a voter remembers of the server it last finished a handshake with. */
typedef struct {
  int seen;
  char run_id[INFO_RUN_ID_LEN + 1];
  char replid[INFO_RUN_ID_LEN + 1];
  uint64_t lost_ns; /* when that connection went down (0: unknown) */
} quarantine_past_t;

typedef enum {
  QUARANTINE_NONE = 0,
  QUARANTINE_RESTART,
  QUARANTINE_FAILOVER,
  QUARANTINE_MOVED,
} quarantine_kind_t;

typedef struct {
  quarantine_kind_t kind; /* the one that ends last */
  uint64_t until_ns;      /* 0 with QUARANTINE_NONE */
} quarantine_t;

/* What the voter learned elsewhere of the server's role: it has been a
 * master since master_since_ns (the client's clock) at the latest. */
typedef struct {
  char run_id[INFO_RUN_ID_LEN + 1]; /* the server it is about ("": not named) */
  uint64_t master_since_ns;         /* 0: no hint */
} quarantine_hint_t;

/* The judgement at a handshake: past (NULL fields when never seen), what
 * the server says now, a hint (NULL: none; ignored when it names another
 * run_id, or is older than the server's uptime allows), the clock,
 * the max TTL and the voter's ack. */
quarantine_t quarantine_judge(const quarantine_past_t *past, const info_server_t *server,
                              const info_replication_t *repl, const quarantine_hint_t *hint,
                              uint64_t now_ns, uint32_t max_ttl_ms, const ack_spec_t *ack);

/* The same server (run_id) seen with another replication id than before,
 * at a handshake or on a live connection (the check after a batch of
 * writes, voters/node_acks.c): it was made a replica and a master again, with a data
 * set taken from another master, at some time since it was last seen;
 * quarantined for max TTL from now, unless the acks cover every replica. */
quarantine_t quarantine_new_replid(const info_replication_t *repl, uint64_t now_ns,
                                   uint32_t max_ttl_ms, const ack_spec_t *ack);

/* "restart quarantine", "failover quarantine", "quarantine (another server at this
 * address)", "" for none. */
const char *quarantine_name(quarantine_kind_t kind);

/* Remembers the server a handshake judged (past->lost_ns is cleared). */
void quarantine_remember(quarantine_past_t *past, const info_server_t *server,
                         const info_replication_t *repl);

/* ---- one master's quarantine, as its node keeps it (loop thread) ---- */

/* The quarantine in force, the server it was judged over and the owner's
 * hint for the next judgement. */
typedef struct quarantine_state {
  uint64_t until_ns;      /* when the one in force ends (0: none) */
  quarantine_kind_t kind; /* which one, for logs and votes */
  quarantine_past_t past; /* the server of the last handshake */
  quarantine_hint_t hint; /* the owner's: since when a server is a master (quarantine_set_hint) */
} quarantine_state_t;

/* 1 while a quarantine runs at now_ns. */
int quarantine_active(const quarantine_state_t *qs, uint64_t now_ns);
/* What is left of it at now_ns in whole ms, rounded up (the loop's timers
 * run in whole ms); 0 when none runs. */
uint64_t quarantine_left_ms(const quarantine_state_t *qs, uint64_t now_ns);

/* What a handshake's judgement found. */
typedef struct {
  quarantine_t q; /* the quarantine in force from now (QUARANTINE_NONE: none) */
  int said;       /* a reconnect to the same server inside its quarantine */
  int new_run_id; /* another run_id than the last handshake's (a restart or a move) */
} quarantine_verdict_t;

/* The judgement at a handshake (quarantine_judge, when enabled; without it
 * no quarantine starts), applied to qs: a failover's or a move's
 * quarantine runs from when it was seen, which the server does not tell
 * again, so a reconnect to the same server keeps it; the server is then
 * remembered.  hint: the owner's (qs->hint) or a better one. */
quarantine_verdict_t quarantine_at_handshake(quarantine_state_t *qs, int enabled,
                                             const info_server_t *server,
                                             const info_replication_t *repl,
                                             const quarantine_hint_t *hint, uint64_t now_ns,
                                             uint32_t max_ttl_ms, const ack_spec_t *ack);

/* 1 when repl has the replication id of the last handshake (the role
 * check's verdict on a live connection). */
int quarantine_same_history(const quarantine_state_t *qs, const info_replication_t *repl);
/* The replication id changed on a live connection (quarantine_new_replid):
 * remembered, and the quarantine in force made longer when the new one
 * ends later.  1 when it was (then *q is the new one). */
int quarantine_replid_changed(quarantine_state_t *qs, const info_replication_t *repl,
                              uint64_t now_ns, uint32_t max_ttl_ms, const ack_spec_t *ack,
                              quarantine_t *q);

/* The server we knew was there until now_ns (its connection went down);
 * 0: no connection lived on, or the server we knew may live on, so a new
 * run_id is another server, whatever its uptime. */
void quarantine_lost(quarantine_state_t *qs, uint64_t now_ns);
/* The owner's hint: the server at the address (run_id, or NULL / "" when
 * not known) has been a master since master_since_ns at the latest;
 * master_since_ns 0 clears it. */
void quarantine_set_hint(quarantine_state_t *qs, const char *run_id, uint64_t master_since_ns);

/* How a voter names the quarantine in force: QUARANTINE_VIEW_AS_IS, or
 * QUARANTINE_VIEW_MOVE_IS_FAILOVER for a voter to which another server at
 * the address is a failover (a Sentinel voter: the sentinels named it). */
typedef enum { QUARANTINE_VIEW_AS_IS, QUARANTINE_VIEW_MOVE_IS_FAILOVER } quarantine_view_t;
/* quarantine_name of the one in force ("" for none). */
const char *quarantine_state_name(const quarantine_state_t *qs, quarantine_view_t view);
/* A vote's why: "restart quarantine: 41234 ms left" while one runs at
 * now_ns, else "". */
void quarantine_why(const quarantine_state_t *qs, quarantine_view_t view, uint64_t now_ns,
                    char *buf, size_t size);

#endif
