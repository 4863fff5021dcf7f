/* node_hung.c: the hung-master judgement (see node.h).  A master that has
 * requests out but sends no reply for NODE_HUNG_REQUEST_TIMEOUTS request
 * timeouts is dropped and reconnected by its link.  The watch's clock
 * (node_t.hung) is stamped by node_pipe.c: by each reply, and by the first
 * send after an idle spell; node_write_late restarts it when that send
 * could only be written late. */
#include "voters/node_int.h"

#include "conn/conn.h"

void node_write_late(node_t *node) {
  if (node->state != NODE_READY)
    return;
  /* Only the wait that began with a send still unwritten starts again: a
   * master already sitting on written requests is not let off by newer ones
   * (timers due together run before any flush, each with fresh output; and
   * a turn's own flush may have written the first send long ago). */
  int first_unwritten =
      node->hung.progress_unwritten && conn_writes(node->link.ac) == node->hung.progress_writes;
  if (conn_write_now(node->link.ac) && first_unwritten)
    node->hung.progress_ns = node_now_ns(node);
  node->hung.progress_unwritten = 0;
}

static uint64_t node_hung_limit_ns(const node_t *node) {
  return (uint64_t)NODE_HUNG_REQUEST_TIMEOUTS * node->env->request_timeout_ms * 1000000u;
}

uint64_t node_replays_due_ns(const node_t *node) {
  return node_owes_releases(node) ? node->hung.progress_ns + node_hung_limit_ns(node) : 0;
}

void node_drop_if_hung(node_t *node) {
  if (node->state == NODE_READY)
    (void)link_drop_if_silent(&node->link, node->hung.progress_ns, node_hung_limit_ns(node),
                              node->pipe.inflight);
}
