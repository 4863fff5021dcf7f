/* node_pipe.c: a master's request pipe (see node.h).  node_send picks the
 * form the master runs (node_pick_form), writes it to hiredis while fewer
 * than NODE_MAX_INFLIGHT are out (node_write) or queues it in the backlog
 * within the queue's bounds (node_queue_admits, "overloaded"); each reply
 * (node_req_reply_cb) settles its request, announces a script-free release
 * that deleted (node_announce), fills the pipe again from the backlog and
 * stamps the hung-master watch (node_t.hung).  Whether an answer counts as a
 * vote now (node_quarantined_now) is asked here too, on the same path. */
#include "voters/node_int.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "conn/conn.h"
#include "proto/caps.h"
#include "redlock.h"

/* A request leaves the queue (answered, failed or taken back). */
static void node_dequeued(node_t *node, const node_req_t *req) {
  node->pipe.queued_bytes -=
      req->len <= node->pipe.queued_bytes ? req->len : node->pipe.queued_bytes;
  if (req->keep && node->pipe.releases_queued > 0)
    node->pipe.releases_queued--;
}

/* ac: the context the reply came on (NULL: none came). */
void node_request_done(node_t *node, node_req_t *req, const redisAsyncContext *ac) {
  int got_reply = ac != NULL;
  if (node->pipe.inflight > 0)
    node->pipe.inflight--;
  node_dequeued(node, req);
  /* The read's time serves both the hung-master watch and the stats. */
  uint64_t now = 0;
  if (got_reply && (node->pipe.inflight > 0 || node->stats != NULL))
    now = conn_read_ns(ac);
  if (got_reply && node->pipe.inflight > 0) {
    node->hung.progress_ns = now;
    node->hung.progress_unwritten = 0;
  }
  if (node->stats != NULL) {
    if (got_reply)
      req->replied_ns = now; /* for the event of the round it belongs to */
    stats_master_done(node->stats, node->index, req->sent_ns, got_reply, now);
    stats_primary_done(node->stats, node->index, node->primary.stats_primary, req->sent_ns,
                       got_reply, now);
  }
}

/* Half of each bound free again: an overloaded master votes again. */
static int node_caught_up(const node_t *node) {
  return node->pipe.inflight + node->pipe.backlog_len <= NODE_MAX_QUEUED / 2 &&
         node->pipe.queued_bytes <= NODE_MAX_QUEUED_BYTES / 2;
}

/* The form of req this master runs (node_forms_t): the first script-free
 * one it has the commands for, else the script (or plain command) itself. */
static node_form_t node_pick_form(const node_t *node, const node_req_t *req) {
  const node_forms_t *f = req->forms;
  if (f == NULL || !(node->server.caps & (CAPS_RELEASE | CAP_SET_IFEQ)))
    return NODE_FORM_SCRIPT;
  static const unsigned needs[NODE_FORM_COUNT] = {
      [NODE_FORM_DELIFEQ] = CAP_DELIFEQ,
      [NODE_FORM_DELEX] = CAP_DELEX,
      [NODE_FORM_SET_IFEQ] = CAP_SET_IFEQ,
      [NODE_FORM_TX] = CAP_SET_IFEQ, /* a fence commit's SET IFEQ KEEPTTL */
  };
  int lua = (node->server.caps & CAP_LUA) != 0;
  for (int form = NODE_FORM_SCRIPT + 1; form < NODE_FORM_COUNT; form++) {
    /* A cluster primary answers a key whose slot moved with -MOVED / -ASK,
     * which a transaction hides behind EXECABORT (the queued command's
     * reply is not read): where Lua runs, its script keeps redirections
     * working.  Without Lua, a transaction during a migration fails its
     * vote (docs/api.md, Masters without Lua). */
    int transaction = form == NODE_FORM_SET_IFEQ || form == NODE_FORM_TX;
    if (f->form[form].cmd != NULL && (node->server.caps & needs[form]) == needs[form] &&
        !(lua && (f->nolua_only >> form & 1u)) && !(lua && transaction && node->primary.sharded))
      return (node_form_t)form;
  }
  return NODE_FORM_SCRIPT;
}

/* Commands written ahead of a script-free form, replies unread (a NULL
 * callback: hiredis skips each reply in order). */
static void node_write_unread(node_t *node, const node_cmd_t *cmds, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    (void)redisAsyncFormattedCommand(node->link.ac, NULL, NULL, cmds[i].cmd, cmds[i].len);
}

/* A script-free release that deleted our key announces it, as the script
 * does (and only then: a release that found the key gone or another's
 * wakes nobody). */
static void node_announce(node_t *node, const node_req_t *req, const redisReply *reply) {
  const node_forms_t *f = req->forms;
  if (reply->type != REDIS_REPLY_INTEGER || reply->integer != 1 || f->announce.cmd == NULL ||
      node->link.ac == NULL)
    return;
  node_write_unread(
      node, req->shard && f->announce_shard.cmd != NULL ? &f->announce_shard : &f->announce, 1);
}

/* Hands req to hiredis; now_ns: the time to stamp it with. */
static inline status_t node_write(node_t *node, node_req_t *req, uint64_t now_ns) {
  req->unacked = 0;
  req->nomem = 0;
  const char *cmd = req->cmd;
  size_t len = req->len;
  if (req->form != NODE_FORM_SCRIPT) {
    cmd = req->forms->form[req->form].cmd;
    len = req->forms->form[req->form].len;
    node_write_unread(node, req->forms->before, req->forms->n_before);
  }
  if (req->ack && node_acks(node)) {
    if (redisAsyncFormattedCommand(node->link.ac, node_ack_write_cb, req, cmd, len) != REDIS_OK)
      return ST_DOWN;              /* hiredis is tearing the connection down */
    req->ack_state = REQ_ACK_OPEN; /* its ack follows at the write (node_queue_ack) */
    list_insert_tail(&node->acks.acks_waiting, &req->link);
  } else if (redisAsyncFormattedCommand(node->link.ac, node_req_reply_cb, req, cmd, len) !=
             REDIS_OK) {
    return ST_DOWN; /* hiredis is tearing the connection down */
  }
  req->sent_ns = now_ns;
  stats_master_sent(node->stats, node->index);
  stats_primary_sent(node->stats, node->index, node->primary.stats_primary, node->addr.label);
  if (node->pipe.inflight++ == 0) {
    node->hung.progress_ns = req->sent_ns; /* idle until now: the wait starts here */
    node->hung.progress_unwritten = 1;
    node->hung.progress_writes = conn_writes(node->link.ac);
  }
  return ST_OK;
}

/* Whether a request may be written now (the connection can write): fewer
 * than NODE_MAX_INFLIGHT are out and, for a node writing in batches, none
 * is, or this turn's output is still unwritten (the request joins it). */
static inline int node_pipe_open(const node_t *node) {
  if (node->pipe.inflight >= NODE_MAX_INFLIGHT)
    return 0;
  return !node->primary.batch_writes || node->pipe.inflight == 0 ||
         conn_output_pending(node->link.ac);
}

static void node_drain_backlog(node_t *node) {
  uint64_t now_ns = 0; /* read once, for every request written here */
  while (!list_empty(&node->pipe.backlog) && node_can_write(node) && node_pipe_open(node)) {
    node_req_t *req = list_entry(node->pipe.backlog.next, node_req_t, link);
    list_remove(&req->link);
    node->pipe.backlog_len--;
    if (now_ns == 0)
      now_ns = node_now_ns(node);
    if (node_write(node, req, now_ns) != ST_OK) {
      /* hiredis is tearing the connection down: the link will fail it. */
      list_insert_head(&node->pipe.backlog, &req->link);
      node->pipe.backlog_len++;
      return;
    }
  }
}

/* After a request came back: fill the pipe from the backlog; a master that
 * was overloaded and has caught up votes again, and, after a reply (not on
 * a connection going down), what was kept for it goes out first. */
void node_after_reply_work(node_t *node, int got_reply) {
  node_drain_backlog(node);
  if (node->pipe.overloaded && node_caught_up(node)) {
    node->pipe.overloaded = 0;
    log_write(node->env->log, REDLOCK_LOG_INFO,
              "master %s: caught up (%u requests, %zu bytes queued): it votes again",
              node->addr.label, node->pipe.inflight + node->pipe.backlog_len,
              node->pipe.queued_bytes);
  }
  if (got_reply && !node->pipe.overloaded && node->replay.n_missed_releases > 0 &&
      node_can_write(node))
    node_replay_releases(node);
}

/* A reply saying the server no longer takes writes as a master (-READONLY:
 * it was made a replica; -LOADING: it restarted and loads its data): told to
 * the owner once per connection (a Sentinel voter asks its sentinels where
 * the master went).  The vote itself is an error either way. */
void node_check_role_error(node_t *node, const redisReply *reply) {
  if (reply == NULL || reply->type != REDIS_REPLY_ERROR || reply->str == NULL ||
      node->not_master_said || node->state != NODE_READY)
    return;
  if (!(reply->len >= 8 && memcmp(reply->str, "READONLY", 8) == 0) &&
      !(reply->len >= 7 && memcmp(reply->str, "LOADING", 7) == 0))
    return;
  node->not_master_said = 1;
  node_report(node, NODE_EV_NOT_MASTER, "it answers as no master", reply->str);
}

/* hiredis' callback for every request node_send wrote. */
void node_req_reply_cb(redisAsyncContext *ac, void *reply, void *privdata) {
  node_req_t *req = privdata;
  node_t *node = req->node;
  node_request_done(node, req, reply != NULL ? ac : NULL);
  if (reply != NULL && (req->form == NODE_FORM_DELIFEQ || req->form == NODE_FORM_DELEX))
    node_announce(node, req, reply);
  req->fn(req, reply); /* may free req, or send it again (NOSCRIPT) */
  node_after_reply(node, reply != NULL);
  node_check_role_error(node, reply);
}

/* The connection is gone: queued requests will never be written. */
void node_fail_backlog(node_t *node) {
  node->pipe.overloaded = 0; /* what is queued is about to go */
  while (!list_empty(&node->pipe.backlog)) {
    node_req_t *req = list_entry(node->pipe.backlog.next, node_req_t, link);
    list_remove(&req->link);
    node->pipe.backlog_len--;
    node_dequeued(node, req);
    req->fn(req, NULL);
  }
  node_queue_changed(node);
}

/* Whether req fits in the queue (see NODE_MAX_QUEUED).  An empty queue takes
 * any one request, however long. */
static int node_queue_admits(node_t *node, const node_req_t *req) {
  if (node->pipe.overloaded && !req->keep)
    return 0;
  unsigned queued = node->pipe.inflight + node->pipe.backlog_len;
  if (queued == 0 ||
      (queued < NODE_MAX_QUEUED && node->pipe.queued_bytes + req->len <= NODE_MAX_QUEUED_BYTES))
    return 1;
  if (!node->pipe.overloaded) {
    node->pipe.overloaded = 1;
    char detail[128];
    snprintf(detail, sizeof detail, "%u requests, %zu bytes queued (bound: %u, %zu)", queued,
             node->pipe.queued_bytes, (unsigned)NODE_MAX_QUEUED, NODE_MAX_QUEUED_BYTES);
    log_write(node->env->log, REDLOCK_LOG_WARN,
              "master %s: queue full (%s): it answers more slowly than it is sent work; it "
              "votes busy on new rounds until half of that is answered, releases are kept for "
              "it meanwhile",
              node->addr.label, detail);
  }
  return 0;
}

status_t node_send(node_t *node, node_req_t *req) {
  uint64_t stamp = req->sent_ns; /* the sender's clock reading, or 0 */
  req->sent_ns = 0;              /* not written (yet) */
  if (!node_can_write(node))
    return ST_DOWN;
  req->form = (uint8_t)node_pick_form(node, req);
  if (req->script && req->form == NODE_FORM_SCRIPT && !(node->server.caps & CAP_LUA))
    return ST_ENOTSUP; /* votes "unsupported", with noscripts_why */
  /* Past the queue's bound, or overloaded, a request is refused and counts
   * as a "busy" vote: back-pressure the caller sees.  A release is refused
   * only past the bound itself; the round keeps it for this master
   * (node_defer_release) until it has caught up. */
  if (!node_queue_admits(node, req))
    return ST_BUSY;
  req->node = node;
  req->replied_ns = 0;
  list_init(&req->link);
  node->pipe.queued_bytes += req->len;
  node->pipe.releases_queued += req->keep != 0;
  if (list_empty(&node->pipe.backlog) && node_pipe_open(node)) {
    status_t rc = node_write(node, req, stamp != 0 ? stamp : node_now_ns(node));
    if (rc != ST_OK)
      node_dequeued(node, req);
    node_queue_changed(node);
    return rc;
  }
  /* The pipe is full, or a batch is out: wait in order behind it. */
  req->batched = node->pipe.inflight < NODE_MAX_INFLIGHT;
  list_insert_tail(&node->pipe.backlog, &req->link);
  node->pipe.backlog_len++;
  node_queue_changed(node);
  return ST_OK;
}

int node_req_queued(const node_req_t *req) { return req->sent_ns == 0 && list_linked(&req->link); }

void node_cancel(node_req_t *req) {
  list_remove(&req->link);
  req->node->pipe.backlog_len--;
  node_dequeued(req->node, req);
  node_queue_changed(req->node);
}

void node_read_pending(node_t *node) {
  if (node->state == NODE_READY && node->pipe.inflight > 0)
    conn_read_now(node->link.ac);
}

/* Asked for every answer to an acquisition (voter_ops_t.quarantined): the
 * clock is read only for a master that has a quarantine, which the
 * handshake judged (node_handshake.c). */
int node_quarantined_now(const node_t *node) {
  return node->server.quarantine.until_ns != 0 && node_is_quarantined(node, node_now_ns(node));
}
