/* node_replay.c: releases a master did not get (down, hung, overloaded when
 * they were sent), kept for it within NODE_MAX_MISSED_RELEASES /
 * NODE_MAX_MISSED_BYTES and replayed once it is READY and has room (see
 * node.h).  A replayed release belongs to no round: close waits for its
 * reply (node_owes_releases), and the hung-master judgement covers it
 * (node_hung.c, NODE_EV_REPLAYS_DUE). */
#include "voters/node_int.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"
#include "util/alloc.h"

/* A replayed release came back.  Without a reply it is kept again for the
 * next connection (node_defer_release ignores it once the client closes). */
static void replay_done(node_req_t *req, const redisReply *reply) {
  missed_release_t *missed = container_of(req, missed_release_t, req);
  node_t *node = req->node;
  node->replay.replays_out--;
  if (reply == NULL)
    node_defer_release(node, missed->cmd, missed->len);
  else if (reply->type == REDIS_REPLY_ERROR && node->env->replay_error != NULL)
    node->env->replay_error(node->env->arg, node, missed->cmd, missed->len, reply);
  rl_free(missed);
  if (node->replay.replays_out == 0)
    node_report(node, NODE_EV_SETTLED, NULL, NULL);
}

/* Releases this master missed while it was unreachable go out now: a SET
 * that was still in its socket buffer (or applied after we gave up on it)
 * would otherwise hold the key for a whole TTL.  Compare-and-delete is safe
 * to repeat at any time: it only deletes our own value. */
void node_replay_releases(node_t *node) {
  unsigned sent = 0;
  while (!list_empty(&node->replay.missed_releases)) {
    missed_release_t *missed =
        list_entry(node->replay.missed_releases.next, missed_release_t, link);
    missed->req.cmd = missed->cmd;
    missed->req.len = missed->len;
    missed->req.fn = replay_done;
    missed->req.keep = 1;
    missed->req.sent_ns = 0; /* node_send reads the clock */
    /* Full (busy), or the connection is going (down): the rest stay kept,
     * in order, until it has drained or is back. */
    if (node_send(node, &missed->req) != 0)
      break;
    list_remove(&missed->link);
    node->replay.n_missed_releases--;
    node->replay.missed_bytes -= missed->len;
    node->replay.replays_out++;
    sent++;
  }
  stats_master_kept(node->stats, node->index, node->replay.n_missed_releases);
  if (sent > 0)
    log_write(node->env->log, REDLOCK_LOG_INFO, "master %s: replaying %u release(s) it missed",
              node->addr.label, sent);
  /* Close waits for these replies: a master that never sends them must
   * still be dropped, even when no round is running to fire a deadline. */
  if (node->replay.replays_out > 0)
    node_report(node, NODE_EV_REPLAYS_DUE, NULL, NULL);
}

/* Drops the oldest kept release: its key expires at its TTL. */
void node_drop_oldest_kept(node_t *node) {
  missed_release_t *oldest = list_entry(node->replay.missed_releases.next, missed_release_t, link);
  list_remove(&oldest->link);
  node->replay.n_missed_releases--;
  node->replay.missed_bytes -= oldest->len;
  rl_free(oldest);
  stats_master_abandoned(node->stats, node->index, 1);
}

void node_defer_release(node_t *node, const char *cmd, size_t len) {
  if (node->state == NODE_CLOSED) {
    stats_master_abandoned(node->stats, node->index, 1); /* the client is closing */
    return;
  }
  while (node->replay.n_missed_releases > 0 &&
         (node->replay.n_missed_releases >= NODE_MAX_MISSED_RELEASES ||
          node->replay.missed_bytes + len > NODE_MAX_MISSED_BYTES))
    node_drop_oldest_kept(node);
  missed_release_t *missed = rl_calloc(1, sizeof *missed + len);
  if (missed == NULL) {
    /* best effort: the key expires at its TTL anyway */
    stats_master_abandoned(node->stats, node->index, 1);
    return;
  }
  missed->len = len;
  memcpy(missed->cmd, cmd, len);
  list_insert_tail(&node->replay.missed_releases, &missed->link);
  node->replay.n_missed_releases++;
  node->replay.missed_bytes += len;
  stats_master_kept(node->stats, node->index, node->replay.n_missed_releases);
}

void node_take_kept(node_t *node, void (*fn)(void *arg, const char *cmd, size_t len), void *arg) {
  list_node_t batch;
  list_move_all(&node->replay.missed_releases, &batch);
  node->replay.n_missed_releases = 0;
  node->replay.missed_bytes = 0;
  stats_master_kept(node->stats, node->index, 0);
  while (!list_empty(&batch)) {
    missed_release_t *missed = list_entry(batch.next, missed_release_t, link);
    list_remove(&missed->link);
    fn(arg, missed->cmd, missed->len);
    rl_free(missed);
  }
}

unsigned node_releases_owed(const node_t *node) {
  return node->pipe.releases_queued + node->replay.n_missed_releases;
}

int node_owes_releases(const node_t *node) {
  return node_can_write(node) && node->replay.replays_out > 0;
}
