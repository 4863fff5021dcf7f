/* fake_transport.c: fake masters with ordered outstanding requests (see
 * fake_transport.h). */
#include "fake_transport.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/keyslot.h"
#include "redlock.h"

static void fail(const char *what) {
  fprintf(stderr, "fake_transport: %s\n", what);
  abort();
}

static fake_master_t *master(void *arg, unsigned i) {
  fake_transport_t *f = arg;
  if (i >= f->n)
    fail("no such master");
  return &f->m[i];
}

/* Master m's k-th outstanding request (0: oldest). */
static fake_out_t *slot(fake_master_t *m, unsigned k) { return &m->out[m->head + k]; }

/* The argument at index `at` of a formatted command: *len, returns it (or
 * NULL when the command has fewer). */
static const char *cmd_arg(const char *cmd, size_t len, int at, size_t *arg_len) {
  const char *p = cmd, *end = cmd + len;
  if (p >= end || *p != '*' || atoi(p + 1) <= at)
    return NULL;
  p = memchr(p, '\n', (size_t)(end - p)) + 1;
  for (int k = 0;; k++) {
    size_t n = (size_t)atol(p + 1);
    p = memchr(p, '\n', (size_t)(end - p)) + 1;
    if (k == at) {
      *arg_len = n;
      return p;
    }
    p += n + 2;
  }
}

/* What a cluster voter relies on (keyname.h): a request carries the hash
 * slot of the key its command is about (the SET's key, a script's first
 * key), and a script's fence counters hash with their lock keys (the second
 * half of a fenced script's keys). */
static void check_slot(const node_req_t *req) {
  size_t len0 = 0, n_len = 0, key_len = 0;
  const char *name = cmd_arg(req->cmd, req->len, 0, &len0);
  if (name == NULL)
    return;
  int script =
      (len0 == 7 && memcmp(name, "EVALSHA", 7) == 0) || (len0 == 4 && memcmp(name, "EVAL", 4) == 0);
  int set = len0 == 3 && memcmp(name, "SET", 3) == 0;
  if (!script && !set)
    return;
  const char *key = cmd_arg(req->cmd, req->len, script ? 3 : 1, &key_len);
  if (key == NULL)
    return; /* a script without keys */
  if (keyslot(key, key_len) != req->slot)
    fail("a request does not carry its key's slot");
  if (!script)
    return;
  int n_keys = atoi(cmd_arg(req->cmd, req->len, 2, &n_len));
  for (int k = 0; k < n_keys; k++) {
    size_t fence_len = 0, lock_len = 0;
    const char *fence = cmd_arg(req->cmd, req->len, 3 + k, &fence_len);
    if (fence_len < sizeof REDLOCK_FENCE_KEY_PREFIX - 1 ||
        memcmp(fence, REDLOCK_FENCE_KEY_PREFIX, sizeof REDLOCK_FENCE_KEY_PREFIX - 1) != 0 ||
        k < n_keys / 2)
      continue;
    const char *lock = cmd_arg(req->cmd, req->len, 3 + k - n_keys / 2, &lock_len);
    /* a permit's or a read-write lock's counter comes alone, after its keys */
    if (n_keys % 2 == 0 && keyslot(fence, fence_len) != keyslot(lock, lock_len))
      fail("a fence counter does not hash with its lock key");
    if (keyslot(fence, fence_len) != keyslot(key, key_len) && n_keys % 2 != 0)
      fail("a fence counter does not hash with its lock's keys");
  }
}

/* 1 when req is a script (EVALSHA or EVAL). */
static int is_script(const node_req_t *req) {
  size_t len0 = 0;
  const char *name = cmd_arg(req->cmd, req->len, 0, &len0);
  return name != NULL && ((len0 == 7 && memcmp(name, "EVALSHA", 7) == 0) ||
                          (len0 == 4 && memcmp(name, "EVAL", 4) == 0));
}

static status_t t_send(void *arg, unsigned i, node_req_t *req) {
  fake_transport_t *f = arg;
  fake_master_t *m = master(arg, i);
  m->sends++;
  if (f->check_slots)
    check_slot(req);
  if (m->mode == FAKE_SEND_NOLUA && is_script(req))
    return ST_ENOTSUP;
  if (m->mode == FAKE_SEND_DOWN)
    return ST_DOWN;
  if (m->mode == FAKE_SEND_BUSY)
    return ST_BUSY;
  if (m->n_out == FAKE_OUT_MAX)
    fail("too many requests outstanding");
  if (m->head + m->n_out == FAKE_OUT_MAX) { /* answered ones take the front: move down */
    memmove(m->out, slot(m, 0), m->n_out * sizeof m->out[0]);
    m->head = 0;
  }
  int queued = m->mode == FAKE_SEND_QUEUED || m->mode == FAKE_SEND_BATCHED;
  req->sent_ns = queued ? 0 : f->now_ns();
  req->batched = m->mode == FAKE_SEND_BATCHED;
  *slot(m, m->n_out++) = (fake_out_t){.req = req, .queued = queued};
  return ST_OK;
}

/* Where req is outstanding: its master and its place there, or -1. */
static int find(fake_transport_t *f, const node_req_t *req, fake_master_t **owner) {
  for (unsigned i = 0; i < f->n; i++)
    for (unsigned k = 0; k < f->m[i].n_out; k++)
      if (slot(&f->m[i], k)->req == req) {
        *owner = &f->m[i];
        return (int)k;
      }
  return -1;
}

/* Takes the k-th of master m's outstanding requests, keeping their order. */
static node_req_t *take(fake_master_t *m, unsigned k) {
  node_req_t *req = slot(m, k)->req;
  if (k == 0) {
    m->head++; /* the oldest: the common case, no copy */
  } else {
    memmove(slot(m, k), slot(m, k + 1), (m->n_out - k - 1) * sizeof m->out[0]);
  }
  if (--m->n_out == 0)
    m->head = 0;
  return req;
}

static int t_queued(void *arg, unsigned i, const node_req_t *req) {
  (void)i; /* found wherever it is: a request sent elsewhere would be a bug */
  fake_master_t *m;
  int k = find(arg, req, &m);
  return k >= 0 && slot(m, (unsigned)k)->queued;
}

static void t_cancel(void *arg, unsigned i, node_req_t *req) {
  (void)i;
  fake_master_t *m;
  int k = find(arg, req, &m);
  if (k < 0 || !slot(m, (unsigned)k)->queued)
    fail("cancel of a request that is not queued");
  take(m, (unsigned)k);
  m->cancels++;
}

static uint64_t t_progress(void *arg, unsigned i) { return master(arg, i)->progress_ns; }

static int t_quarantined(void *arg, unsigned i) { return master(arg, i)->quarantined; }
static int t_duplicate(void *arg, unsigned i, node_req_t *req) {
  (void)req;
  return master(arg, i)->duplicate;
}

static void t_defer(void *arg, unsigned i, const char *cmd, size_t len) {
  if (cmd == NULL || len == 0)
    fail("empty release deferred");
  fake_master_t *m = master(arg, i);
  m->defers++;
  m->deferred_len = len < sizeof m->deferred ? len : sizeof m->deferred;
  memcpy(m->deferred, cmd, m->deferred_len);
}

static void t_warn(void *arg, unsigned i, const char *what, const char *detail) {
  (void)what;
  (void)detail;
  master(arg, i)->warns++;
}

static const char *t_label(void *arg, unsigned i) {
  static const char *const labels[FAKE_MASTERS_MAX] = {"m0", "m1", "m2", "m3",
                                                       "m4", "m5", "m6", "m7"};
  (void)master(arg, i);
  return labels[i];
}

const round_transport_t fake_transport = {
    .send = t_send,
    .queued = t_queued,
    .cancel = t_cancel,
    .progress_ns = t_progress,
    .quarantined = t_quarantined,
    .duplicate = t_duplicate,
    .defer_release = t_defer,
    .warn = t_warn,
    .label = t_label,
};

/* ---- the fake masters as voters ----------------------------------------------------- */

static fake_master_t *of(const voter_t *v) { return (fake_master_t *)v; }

static status_t v_send(voter_t *v, node_req_t *req) { return t_send(of(v)->f, v->index, req); }
static int v_queued(voter_t *v, const node_req_t *req) { return t_queued(of(v)->f, v->index, req); }
static void v_cancel(voter_t *v, node_req_t *req) { t_cancel(of(v)->f, v->index, req); }
static uint64_t v_progress(voter_t *v) { return of(v)->progress_ns; }
static int v_quarantined(voter_t *v) { return of(v)->quarantined; }

static void v_defer(voter_t *v, const char *cmd, size_t len) {
  t_defer(of(v)->f, v->index, cmd, len);
}

static void v_warn(voter_t *v, const char *what, const char *detail) {
  t_warn(of(v)->f, v->index, what, detail);
}

static void v_start(voter_t *v) {
  voter_news_t news = {.ev = VOTER_EV_STARTED};
  voter_report(v, &news);
}

static void v_catch_up(voter_t *v) { (void)v; }

static uint64_t v_tick(voter_t *v) {
  (void)v;
  return 0;
}

static unsigned v_owed(const voter_t *v) {
  (void)v;
  return 0;
}

static int v_owes(const voter_t *v) {
  (void)v;
  return 0;
}

static void v_abandon(voter_t *v) { (void)v; }

static void v_shutdown(voter_t *v) {
  fake_drop(of(v)->f, v->index);
  voter_news_t news = {.ev = VOTER_EV_CLOSED};
  voter_report(v, &news);
}

static void v_free(voter_t *v) { (void)v; }

/* No server of theirs is judged a duplicate (the fakes' own flag says). */
static unsigned v_servers(const voter_t *v) {
  (void)v;
  return 0;
}

static const node_t *v_server(const voter_t *v, unsigned k) {
  (void)v;
  (void)k;
  return NULL;
}

static void v_why(const voter_t *v, int why, const node_req_t *req, char *buf, size_t size) {
  (void)v;
  (void)req;
  (void)why;
  if (size > 0)
    buf[0] = '\0';
}

static const char *v_label(const voter_t *v) { return t_label(of(v)->f, v->index); }

const voter_ops_t fake_voter_ops = {
    .kind = "fake",
    .send = v_send,
    .queued = v_queued,
    .cancel = v_cancel,
    .progress_ns = v_progress,
    .quarantined = v_quarantined,
    .defer_release = v_defer,
    .warn = v_warn,
    .start = v_start,
    .catch_up = v_catch_up,
    .tick = v_tick,
    .releases_owed = v_owed,
    .owes_releases = v_owes,
    .abandon = v_abandon,
    .shutdown = v_shutdown,
    .free = v_free,
    .servers = v_servers,
    .server = v_server,
    .why = v_why,
    .label = v_label,
};

void fake_transport_init(fake_transport_t *f, unsigned n, uint64_t (*now_ns)(void)) {
  if (n > FAKE_MASTERS_MAX)
    fail("too many masters");
  memset(f, 0, sizeof *f);
  f->n = n;
  f->now_ns = now_ns;
  for (unsigned i = 0; i < n; i++) {
    voter_base_init(&f->m[i].voter, &fake_voter_ops, i);
    f->m[i].f = f;
    f->voters[i] = &f->m[i].voter;
  }
}

unsigned fake_outstanding(const fake_transport_t *f, unsigned i) { return f->m[i].n_out; }

unsigned fake_outstanding_all(const fake_transport_t *f) {
  unsigned total = 0;
  for (unsigned i = 0; i < f->n; i++)
    total += f->m[i].n_out;
  return total;
}

/* 1 when the len bytes at buf contain `text`. */
static int contains(const char *buf, size_t len, const char *text) {
  size_t n = strlen(text);
  for (size_t at = 0; at + n <= len; at++)
    if (memcmp(buf + at, text, n) == 0)
      return 1;
  return 0;
}

int fake_cmd_has(const fake_transport_t *f, unsigned i, unsigned k, const char *text) {
  if (i >= f->n || k >= f->m[i].n_out)
    return 0;
  const node_req_t *req = f->m[i].out[f->m[i].head + k].req;
  return contains(req->cmd, req->len, text);
}

int fake_queued(const fake_transport_t *f, unsigned i, unsigned k) {
  if (i >= f->n || k >= f->m[i].n_out)
    return 0;
  return f->m[i].out[f->m[i].head + k].queued;
}

int fake_deferred_has(const fake_transport_t *f, unsigned i, const char *text) {
  if (i >= f->n)
    return 0;
  return contains(f->m[i].deferred, f->m[i].deferred_len, text);
}

/* Answers master i's k-th outstanding request with r (NULL: lost). */
static void reply_at(fake_transport_t *f, unsigned i, unsigned k, const redisReply *r) {
  fake_master_t *m = master(f, i);
  if (k >= m->n_out)
    fail("reply with no such request outstanding");
  node_req_t *req = take(m, k);
  if (r != NULL)
    m->progress_ns = f->now_ns();
  req->fn(req, r);
}

static void reply(fake_transport_t *f, unsigned i, const redisReply *r) { reply_at(f, i, 0, r); }

static void status_at(fake_transport_t *f, unsigned i, unsigned k, const char *text) {
  redisReply r = {.type = REDIS_REPLY_STATUS, .str = (char *)text, .len = strlen(text)};
  reply_at(f, i, k, &r);
}

void fake_reply_ok(fake_transport_t *f, unsigned i) { status_at(f, i, 0, "OK"); }

void fake_reply_status(fake_transport_t *f, unsigned i, const char *text) {
  status_at(f, i, 0, text);
}

void fake_reply_ok_at(fake_transport_t *f, unsigned i, unsigned k) { status_at(f, i, k, "OK"); }

void fake_reply_nil(fake_transport_t *f, unsigned i) {
  redisReply r = {.type = REDIS_REPLY_NIL};
  reply(f, i, &r);
}

void fake_reply_int(fake_transport_t *f, unsigned i, long long value) {
  redisReply r = {.type = REDIS_REPLY_INTEGER, .integer = value};
  reply(f, i, &r);
}

void fake_reply_error(fake_transport_t *f, unsigned i, const char *text) {
  redisReply r = {.type = REDIS_REPLY_ERROR, .str = (char *)text, .len = strlen(text)};
  reply(f, i, &r);
}

void fake_reply_none(fake_transport_t *f, unsigned i) { reply(f, i, NULL); }

void fake_reply_holds(fake_transport_t *f, unsigned i, const char *counter, long long limit,
                      const fake_hold_t *holds, unsigned n_holds) {
  enum { MAX_HOLDS = 8 };
  if (n_holds > MAX_HOLDS)
    fail("too many holds");
  redisReply el[2 + 3 * MAX_HOLDS], *elp[2 + 3 * MAX_HOLDS];
  size_t n = 0;
  el[n++] =
      counter != NULL
          ? (redisReply){.type = REDIS_REPLY_STRING, .str = (char *)counter, .len = strlen(counter)}
          : (redisReply){.type = REDIS_REPLY_NIL};
  el[n++] = limit >= 0 ? (redisReply){.type = REDIS_REPLY_INTEGER, .integer = limit}
                       : (redisReply){.type = REDIS_REPLY_NIL};
  for (unsigned h = 0; h < n_holds; h++) {
    el[n++] = (redisReply){
        .type = REDIS_REPLY_STRING, .str = (char *)holds[h].tag, .len = strlen(holds[h].tag)};
    el[n++] = (redisReply){
        .type = REDIS_REPLY_STRING, .str = (char *)holds[h].value, .len = strlen(holds[h].value)};
    el[n++] = (redisReply){.type = REDIS_REPLY_INTEGER, .integer = holds[h].ttl_ms};
  }
  for (size_t k = 0; k < n; k++)
    elp[k] = &el[k];
  redisReply r = {.type = REDIS_REPLY_ARRAY, .elements = n, .element = elp};
  reply(f, i, &r);
}

void fake_drop(fake_transport_t *f, unsigned i) {
  while (f->m[i].n_out > 0)
    fake_reply_none(f, i);
}

void fake_reply_int_all(fake_transport_t *f, long long value) {
  for (unsigned i = 0; i < f->n; i++)
    if (f->m[i].n_out > 0)
      fake_reply_int(f, i, value);
}

void fake_reply_ok_all(fake_transport_t *f) {
  for (unsigned i = 0; i < f->n; i++)
    if (f->m[i].n_out > 0)
      fake_reply_ok(f, i);
}

void fake_reply_nil_each(fake_transport_t *f) {
  for (unsigned i = 0; i < f->n; i++)
    fake_reply_nil(f, i);
}
