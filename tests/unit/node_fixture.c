/* node_fixture.c: the loop, env, node and mock master of the node.c unit
 * tests (see node_fixture.h). */
#include "node_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/resp.h"
#include "redlock.h"

static void on_report(void *arg, node_t *node, node_event_t ev, const char *what,
                      const char *detail) {
  nf_t *f = arg;
  assert_ptr_equal(node, &f->node);
  if (ev == NODE_EV_CLOSED)
    f->closed = 1;
  if (f->n_events == NF_MAX_EVENTS)
    return;
  nf_event_t *e = &f->events[f->n_events++];
  e->ev = ev;
  e->state = node->state;
  snprintf(e->what, sizeof e->what, "%s", what ? what : "");
  snprintf(e->detail, sizeof e->detail, "%s", detail ? detail : "");
  e->has_context = node->link.ac != NULL;
  e->timer_active = ev != NODE_EV_CLOSED && tb_timer_active(&node->link.timer);
  e->failures = node->failures;
  snprintf(e->down_why, sizeof e->down_why, "%s", node->down_why); /* loop thread: no lock */
}

static void on_log(int level, const char *msg, void *arg) {
  nf_t *f = arg;
  (void)level;
  int n = snprintf(f->logbuf + f->log_len, sizeof f->logbuf - f->log_len, "%s\n", msg);
  if (n > 0)
    f->log_len += (size_t)n;
  if (f->log_len >= sizeof f->logbuf)
    f->log_len = sizeof f->logbuf - 1;
}

void nf_address(nf_t *f, const char *userinfo, const char *suffix, int tls) {
  node_addr_clear(&f->addr);
  char err[128];
  assert_int_equal(uri_parse(mock_master_uri(f->mock, userinfo, suffix), &f->addr, err, sizeof err),
                   0);
  f->addr.tls = tls; /* set by hand: a build without TLS refuses to parse rediss:// */
}

int nf_setup(void **state) {
  nf_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  assert_int_equal(uv_loop_init(&f->loop), 0);
  timebase_uv_init(&f->tb, &f->loop);
  assert_int_equal(conn_flusher_init(&f->flusher, &f->loop), 0);
  assert_int_equal(uv_mutex_init(&f->mutex), 0);
  jitter_rng_seed(&f->rng, 42);
  f->log.cb = on_log;
  f->log.arg = f;
  f->log.level = REDLOCK_LOG_DEBUG;
  f->env.tb = &f->tb;
  f->env.loop = &f->loop;
  f->env.flusher = &f->flusher;
  f->env.log = &f->log;
  f->env.rng = &f->rng;
  f->env.mutex = &f->mutex;
  f->env.connect_timeout_ms = NF_WAIT_MS; /* a test that wants a timeout sets its own */
  f->env.request_timeout_ms = 60000;
  f->env.max_ttl_ms = 30000;
  f->env.report = on_report;
  f->env.arg = f;
  f->mock = mock_master_start(&f->loop);
  assert_non_null(f->mock);
  nf_address(f, NULL, NULL, 0);
  *state = f;
  return 0;
}

static int nf_closed(void *arg) { return ((nf_t *)arg)->closed; }

void nf_shutdown(nf_t *f) {
  node_shutdown(&f->node);
  assert_true(mock_run_until(&f->loop, nf_closed, f, NF_WAIT_MS));
}

int nf_teardown(void **state) {
  nf_t *f = *state;
  if (f->started) {
    if (!f->closed)
      nf_shutdown(f);
    node_free(&f->node);
  }
  mock_master_close(f->mock);
  conn_flusher_close(&f->flusher, NULL);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  uv_mutex_destroy(&f->mutex);
  node_addr_clear(&f->addr);
  free(f);
  return 0;
}

void nf_start(nf_t *f) {
  assert_int_equal(node_init(&f->node, &f->env, 0, &f->addr), 0);
  f->started = 1;
  node_start(&f->node);
}

unsigned nf_count(const nf_t *f, node_event_t ev) {
  unsigned n = 0;
  for (unsigned i = 0; i < f->n_events; i++)
    n += f->events[i].ev == ev;
  return n;
}

int nf_index(const nf_t *f, node_event_t ev, unsigned nth) {
  for (unsigned i = 0; i < f->n_events; i++)
    if (f->events[i].ev == ev && --nth == 0)
      return (int)i;
  return -1;
}

const nf_event_t *nf_last(const nf_t *f, node_event_t ev) {
  for (unsigned i = f->n_events; i-- > 0;)
    if (f->events[i].ev == ev)
      return &f->events[i];
  fail_msg("event %d was never reported", (int)ev);
  return NULL;
}

typedef struct {
  nf_t *f;
  mock_master_t *mock; /* saw_command's */
  node_event_t ev;
  unsigned count;
  const char *command;
  nf_req_t *req;
} wait_t;

static int saw_event(void *arg) {
  wait_t *w = arg;
  return nf_count(w->f, w->ev) >= w->count;
}

void nf_wait_event(nf_t *f, node_event_t ev, unsigned count) {
  wait_t w = {.f = f, .ev = ev, .count = count};
  if (!mock_run_until(&f->loop, saw_event, &w, NF_WAIT_MS))
    fail_msg("event %d: seen %u times, waited for %u", (int)ev, nf_count(f, ev), count);
}

static int in_state(void *arg) {
  wait_t *w = arg;
  return w->f->node.state == (node_state_t)w->count;
}

void nf_wait_state(nf_t *f, node_state_t state) {
  wait_t w = {.f = f, .count = state};
  if (!mock_run_until(&f->loop, in_state, &w, NF_WAIT_MS))
    fail_msg("node state %d, waited for %d", (int)f->node.state, (int)state);
}

static int saw_command(void *arg) {
  wait_t *w = arg;
  return mock_master_count(w->mock, w->command) >= w->count;
}

void nf_wait_received_at(nf_t *f, mock_master_t *m, const char *command, unsigned count,
                         const char *what) {
  wait_t w = {.f = f, .mock = m, .command = command, .count = count};
  if (!mock_run_until(&f->loop, saw_command, &w, NF_WAIT_MS))
    fail_msg("%s; log:\n%s", what, f->logbuf);
}

void nf_wait_received(nf_t *f, const char *command, unsigned count) {
  wait_t w = {.f = f, .mock = f->mock, .command = command, .count = count};
  if (!mock_run_until(&f->loop, saw_command, &w, NF_WAIT_MS))
    fail_msg("%s: received %u times, waited for %u", command, mock_master_count(f->mock, command),
             count);
}

static int req_done(void *arg) { return ((wait_t *)arg)->req->done; }

void nf_wait_req(nf_t *f, nf_req_t *r) {
  wait_t w = {.f = f, .req = r};
  assert_true(mock_run_until(&f->loop, req_done, &w, NF_WAIT_MS));
}

int nf_logged(const nf_t *f, const char *needle) { return strstr(f->logbuf, needle) != NULL; }

static void req_fn(node_req_t *req, const redisReply *reply) {
  nf_req_t *r = (nf_req_t *)req; /* req is the first member */
  assert_false(r->done);         /* exactly once */
  r->done = 1;
  r->got_reply = reply != NULL;
  if (reply == NULL)
    return;
  r->reply_type = reply->type;
  r->integer = reply->integer;
  if (reply->str != NULL)
    snprintf(r->str, sizeof r->str, "%.*s", (int)reply->len, reply->str);
}

static int nf_prepare(nf_t *f, nf_req_t *r, const char *words, int keep);

int nf_send(nf_t *f, nf_req_t *r, const char *words, int keep) {
  nf_prepare(f, r, words, keep);
  return node_send(&f->node, &r->req);
}

int nf_send_ack(nf_t *f, nf_req_t *r, const char *words) {
  nf_prepare(f, r, words, 0);
  r->req.ack = 1;
  return node_send(&f->node, &r->req);
}

static int nf_prepare(nf_t *f, nf_req_t *r, const char *words, int keep) {
  (void)f;
  char copy[128];
  const char *argv[8];
  size_t lens[8];
  int argc = 0;
  snprintf(copy, sizeof copy, "%s", words);
  for (char *save = NULL, *w = strtok_r(copy, " ", &save); w != NULL && argc < 8;
       w = strtok_r(NULL, " ", &save)) {
    argv[argc] = w;
    lens[argc] = strlen(w);
    argc++;
  }
  size_t len = resp_command_len(argc, lens);
  assert_true(len < sizeof r->cmd);
  memset(r, 0, offsetof(nf_req_t, cmd));
  resp_write_command(r->cmd, argc, argv, lens);
  r->req.cmd = r->cmd;
  r->req.len = len;
  r->req.fn = req_fn;
  r->req.keep = keep;
  return 0;
}

/* ---- a whole client on the loop ---------------------------------------------------- */

void nf_client_on_lock(int status, redlock_lock_t *lock, void *arg) {
  nf_client_t *r = arg;
  r->lock_done++;
  r->lock_status = status;
  r->lock = lock;
}

void nf_client_on_unlock(int status, void *arg) {
  nf_client_t *r = arg;
  r->unlock_done++;
  r->unlock_status = status;
}

void nf_client_on_closed(void *arg) { ((nf_client_t *)arg)->closed++; }

int nf_client_locked(void *arg) { return ((nf_client_t *)arg)->lock_done > 0; }
int nf_client_unlocked(void *arg) { return ((nf_client_t *)arg)->unlock_done > 0; }
int nf_client_closed(void *arg) { return ((nf_client_t *)arg)->closed > 0; }
