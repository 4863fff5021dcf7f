/* transport.c: the nodes as the rounds' transport (see transport.h).  Each
 * entry only picks node i and calls node.c. */
#include "transport.h"

static node_t *node_at(void *arg, unsigned master) { return &((node_t *)arg)[master]; }

static int t_send(void *arg, unsigned master, node_req_t *req) {
  return node_send(node_at(arg, master), req);
}

static int t_queued(void *arg, const node_req_t *req) {
  (void)arg;
  return node_req_queued(req);
}

static void t_cancel(void *arg, node_req_t *req) {
  (void)arg;
  node_cancel(req);
}

static uint64_t t_progress_ns(void *arg, unsigned master) {
  return node_at(arg, master)->progress_ns;
}

static int t_quarantined(void *arg, unsigned master) {
  return node_quarantined_now(node_at(arg, master));
}

static int t_duplicate(void *arg, unsigned master) { return node_at(arg, master)->dup_of >= 0; }

static void t_defer_release(void *arg, unsigned master, const char *cmd, size_t len) {
  node_defer_release(node_at(arg, master), cmd, len);
}

static void t_warn(void *arg, unsigned master, const char *what, const char *detail) {
  node_warn(node_at(arg, master), what, detail);
}

static const char *t_label(void *arg, unsigned master) { return node_at(arg, master)->addr.label; }

const round_transport_t transport_nodes = {
    .send = t_send,
    .queued = t_queued,
    .cancel = t_cancel,
    .progress_ns = t_progress_ns,
    .quarantined = t_quarantined,
    .duplicate = t_duplicate,
    .defer_release = t_defer_release,
    .warn = t_warn,
    .label = t_label,
};
