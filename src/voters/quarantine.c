/* quarantine.c: the quarantine judgement, and one master's quarantine state
 * that applies it (see quarantine.h). */
#include "voters/quarantine.h"

#include <stdio.h>
#include <string.h>

#define NS_PER_S 1000000000ull

const char *quarantine_name(quarantine_kind_t kind) {
  switch (kind) {
  case QUARANTINE_RESTART:
    return "restart quarantine";
  case QUARANTINE_FAILOVER:
    return "failover quarantine";
  case QUARANTINE_MOVED:
    return "quarantine (another server at this address)";
  case QUARANTINE_NONE:
    break;
  }
  return "";
}

/* The quarantine that ends last; on a tie the one judged later, which is
 * the more specific (a failover or a move over a restart). */
static void later(quarantine_t *q, quarantine_kind_t kind, uint64_t until_ns) {
  if (until_ns >= q->until_ns) {
    q->until_ns = until_ns;
    q->kind = kind;
  }
}

/* Every replica acknowledges every counted write (wait=R / waitaof=L,R with
 * R at least the replicas the master has now). */
static int acks_cover_replicas(const ack_spec_t *ack, const info_replication_t *repl) {
  return ack->mode != ACK_NONE && ack->replicas >= 1 && repl->connected_replicas >= 0 &&
         ack->replicas >= repl->connected_replicas;
}

/* When a failover's or a move's quarantine starts: now, or the time the
 * hint gives for this server.  A role cannot be older than the process:
 * a hint that says so (uptime taken one second longer, for its rounding) is
 * about another server (one that restarted since) and is ignored; so is one
 * that names another run_id. */
static uint64_t change_seen_ns(const quarantine_hint_t *hint, const info_server_t *server,
                               uint64_t now_ns) {
  if (hint == NULL || hint->master_since_ns == 0 || hint->master_since_ns >= now_ns ||
      (hint->run_id[0] != '\0' && strcmp(hint->run_id, server->run_id) != 0) ||
      server->uptime_s < 0)
    return now_ns;
  uint64_t up_hi = (uint64_t)(server->uptime_s + 1) * NS_PER_S;
  if (now_ns - hint->master_since_ns > up_hi)
    return now_ns;
  return hint->master_since_ns;
}

quarantine_t quarantine_new_replid(const info_replication_t *repl, uint64_t now_ns,
                                   uint32_t max_ttl_ms, const ack_spec_t *ack) {
  if (acks_cover_replicas(ack, repl))
    return (quarantine_t){QUARANTINE_NONE, 0};
  return (quarantine_t){QUARANTINE_FAILOVER, now_ns + (uint64_t)max_ttl_ms * 1000000u};
}

quarantine_t quarantine_judge(const quarantine_past_t *past, const info_server_t *server,
                              const info_replication_t *repl, const quarantine_hint_t *hint,
                              uint64_t now_ns, uint32_t max_ttl_ms, const ack_spec_t *ack) {
  quarantine_t q = {QUARANTINE_NONE, 0};
  uint64_t max_ns = (uint64_t)max_ttl_ms * 1000000u;
  /* Redis reports uptime as a difference of whole wall-clock seconds: a
   * master 0.2 s old can say 1.  Its age is taken one second shorter, so
   * that a quarantine can only come out longer. */
  uint64_t up_lo = server->uptime_s > 0 ? (uint64_t)(server->uptime_s - 1) * NS_PER_S : 0;
  int persisted = ack->mode == ACK_WAITAOF && ack->local == 1;
  int covered = acks_cover_replicas(ack, repl);
  uint64_t since = change_seen_ns(hint, server, now_ns);

  int new_server = past->seen && strcmp(past->run_id, server->run_id) != 0;
  /* A new run_id from a server that may have started after we lost the
   * old one is taken for a restart: its restart quarantine then ends at
   * least max TTL after the loss (start + max TTL, the start taken as late
   * as the rounded uptime allows), which is when every key the old one
   * granted has expired.  One that was up before the loss is another
   * server. */
  int restarted = new_server && past->lost_ns != 0 && now_ns >= past->lost_ns &&
                  up_lo <= now_ns - past->lost_ns;
  if (!persisted && up_lo < max_ns)
    later(&q, QUARANTINE_RESTART, now_ns + (max_ns - up_lo));

  if (!past->seen || (new_server && restarted)) {
    /* Nothing known of this server's past: promoted since it started, it
     * may lack keys, and INFO does not say since when (a hint may). */
    if (repl->replid2[0] != '\0' && !covered)
      later(&q, QUARANTINE_FAILOVER, since + max_ns);
  } else if (new_server && !restarted) {
    int promoted_from_old = past->replid[0] != '\0' && strcmp(repl->replid2, past->replid) == 0;
    if (!(promoted_from_old && covered))
      later(&q, QUARANTINE_MOVED, since + max_ns);
  } else if (!new_server && past->replid[0] != '\0' && repl->replid[0] != '\0' &&
             strcmp(past->replid, repl->replid) != 0) {
    /* Seen here first-hand: the sentinels may not know of it yet. */
    quarantine_t r = quarantine_new_replid(repl, now_ns, max_ttl_ms, ack);
    later(&q, r.kind, r.until_ns);
  }
  if (q.until_ns <= now_ns) /* a change the hint dates more than max TTL back */
    q = (quarantine_t){QUARANTINE_NONE, 0};
  return q;
}

void quarantine_remember(quarantine_past_t *past, const info_server_t *server,
                         const info_replication_t *repl) {
  past->seen = 1;
  memcpy(past->run_id, server->run_id, sizeof past->run_id);
  memcpy(past->replid, repl->replid, sizeof past->replid);
  past->lost_ns = 0;
}

int quarantine_active(const quarantine_state_t *qs, uint64_t now_ns) {
  return qs->until_ns != 0 && now_ns < qs->until_ns;
}

uint64_t quarantine_left_ms(const quarantine_state_t *qs, uint64_t now_ns) {
  if (!quarantine_active(qs, now_ns))
    return 0;
  return (qs->until_ns - now_ns + 999999u) / 1000000u;
}

quarantine_verdict_t quarantine_at_handshake(quarantine_state_t *qs, int enabled,
                                             const info_server_t *server,
                                             const info_replication_t *repl,
                                             const quarantine_hint_t *hint, uint64_t now_ns,
                                             uint32_t max_ttl_ms, const ack_spec_t *ack) {
  quarantine_verdict_t v = {.q = {QUARANTINE_NONE, 0}};
  int same_run_id = qs->past.seen && strcmp(qs->past.run_id, server->run_id) == 0;
  v.new_run_id = qs->past.seen && !same_run_id;
  v.said = same_run_id && qs->until_ns > now_ns;
  if (enabled)
    v.q = quarantine_judge(&qs->past, server, repl, hint, now_ns, max_ttl_ms, ack);
  /* A restart's is judged anew from the uptime, which gives the same end. */
  if (v.said && qs->kind != QUARANTINE_RESTART && v.q.until_ns < qs->until_ns)
    v.q = (quarantine_t){qs->kind, qs->until_ns};
  quarantine_remember(&qs->past, server, repl);
  qs->until_ns = v.q.until_ns;
  qs->kind = v.q.kind;
  return v;
}

int quarantine_same_history(const quarantine_state_t *qs, const info_replication_t *repl) {
  return strcmp(repl->replid, qs->past.replid) == 0;
}

int quarantine_replid_changed(quarantine_state_t *qs, const info_replication_t *repl,
                              uint64_t now_ns, uint32_t max_ttl_ms, const ack_spec_t *ack,
                              quarantine_t *q) {
  *q = quarantine_new_replid(repl, now_ns, max_ttl_ms, ack);
  memcpy(qs->past.replid, repl->replid, sizeof qs->past.replid);
  if (q->kind == QUARANTINE_NONE || q->until_ns <= qs->until_ns)
    return 0;
  qs->until_ns = q->until_ns;
  qs->kind = q->kind;
  return 1;
}

void quarantine_lost(quarantine_state_t *qs, uint64_t now_ns) { qs->past.lost_ns = now_ns; }

void quarantine_set_hint(quarantine_state_t *qs, const char *run_id, uint64_t master_since_ns) {
  memset(&qs->hint, 0, sizeof qs->hint);
  if (run_id != NULL && strlen(run_id) == INFO_RUN_ID_LEN)
    memcpy(qs->hint.run_id, run_id, INFO_RUN_ID_LEN);
  qs->hint.master_since_ns = master_since_ns;
}

const char *quarantine_state_name(const quarantine_state_t *qs, quarantine_view_t view) {
  if (view == QUARANTINE_VIEW_MOVE_IS_FAILOVER && qs->kind == QUARANTINE_MOVED)
    return quarantine_name(QUARANTINE_FAILOVER);
  return quarantine_name(qs->kind);
}

void quarantine_why(const quarantine_state_t *qs, quarantine_view_t view, uint64_t now_ns,
                    char *buf, size_t size) {
  if (quarantine_active(qs, now_ns))
    snprintf(buf, size, "%s: %llu ms left", quarantine_state_name(qs, view),
             (unsigned long long)quarantine_left_ms(qs, now_ns));
  else if (size > 0)
    buf[0] = '\0';
}
