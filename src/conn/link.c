/* link.c: one Redis connection's life cycle (see link.h).
 *
 *   DOWN --link_connect / backoff over--> CONNECTING --handshake done--> UP
 *    ^                                        |                          |
 *    +------- link_fail (DOWN, RETRY) --------+--------------------------+
 *   any state --link_abandon / link_shutdown--> CLOSED */
#include "conn/link.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "redlock.h"
#include "util/backoff.h"

#define LINK_MAX_FAILURES                                                                          \
  32 /* the backoff's exponent stops growing there (it is capped long before) */

static void link_open_next(link_t *link);

static void link_report(link_t *link, link_event_t ev, int level, const char *what,
                        const char *detail) {
  link->cfg.event(link->cfg.arg, link, ev, level, what, detail);
}

static const char *link_role(const link_t *link) {
  return link->cfg.role != NULL ? link->cfg.role : "master";
}

void link_init(link_t *link, const link_cfg_t *cfg) {
  memset(link, 0, sizeof *link);
  link->cfg = *cfg;
  link->state = LINK_DOWN;
}

status_t link_attach(link_t *link, const link_io_t *io) {
  link->io = *io;
  if (link->attached)
    return ST_OK;
  int rc = tb_timer_init(link->cfg.tb, &link->timer, link);
  if (rc != 0) {
    log_write(link->cfg.log, REDLOCK_LOG_ERROR, "%s %s: cannot make its timer: %s", link_role(link),
              link->cfg.addr->label, uv_strerror(rc));
    return ST_EIO;
  }
  link->attached = 1;
  return ST_OK;
}

int link_idle(const link_t *link) {
  return link->state == LINK_DOWN && !(link->attached && tb_timer_active(&link->timer));
}

/* Stops waiting for a name lookup under way (it goes on: the next attempt
 * waits for it), detaches and frees the hiredis context (its pending
 * callbacks get NULL replies now, or after the running callback when called
 * from one). */
static void link_release_context(link_t *link) {
  link->awaiting_lookup = 0;
  redisAsyncContext *ac = link->ac;
  link->ac = NULL;
  conn_close(ac);
}

static void backoff_timer_cb(tb_timer_t *timer) {
  link_t *link = timer->data;
  if (link->state == LINK_DOWN &&
      (link->cfg.want_retry == NULL || link->cfg.want_retry(link->cfg.arg)))
    link_connect(link);
}

static void link_schedule_retry(link_t *link) {
  link->state = LINK_DOWN;
  link->steps_left = 0;
  uint64_t delay = backoff_ms(link->failures, link->cfg.backoff_base_ms, link->cfg.backoff_cap_ms,
                              jitter_rng_next(link->io.rng));
  if (link->failures < LINK_MAX_FAILURES)
    link->failures++;
  tb_timer_stop(&link->timer);
  int rc = tb_timer_start(&link->timer, backoff_timer_cb, delay);
  if (rc != 0)
    log_write(link->cfg.log, REDLOCK_LOG_ERROR,
              "%s %s: cannot start the reconnect timer (%s): it stays down", link_role(link),
              link->cfg.addr->label, uv_strerror(rc));
  else
    log_write(link->cfg.log, REDLOCK_LOG_DEBUG, "%s %s: reconnecting in %llu ms", link_role(link),
              link->cfg.addr->label, (unsigned long long)delay);
}

void link_fail(link_t *link, int level, const char *what, const char *detail) {
  if (link->state == LINK_CLOSED)
    return;
  if (link->state == LINK_UP &&
      tb_now_ns(link->cfg.tb) - link->up_ns >= (uint64_t)link->cfg.stable_ms * 1000000u)
    link->failures = 0; /* it was up long enough: not part of a flapping streak */
  link_report(link, LINK_EV_DOWN, level, what, detail);
  link_release_context(link);
  link_schedule_retry(link);
  /* Order matters: the link is DOWN before the owner runs what may send. */
  link_report(link, LINK_EV_RETRY, level, what, detail);
}

/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6) of the address being tried. */
static void link_addr_port(const link_t *link, char *buf, size_t len) {
  snprintf(buf, len, strchr(link->ip, ':') != NULL ? "[%s]:%d" : "%s:%d", link->ip,
           link->cfg.addr->port);
}

/* detail, after the addresses of this attempt that failed before it and
 * prefixed with the address being tried when the host is a name:
 * "10.0.0.2:6379: Connection refused; 10.0.0.1:6379: <detail>". */
static void link_attempt_detail(const link_t *link, const char *detail, char *buf, size_t len) {
  if (!link->named) {
    snprintf(buf, len, "%s", detail);
    return;
  }
  char where[RESOLVE_ADDR_LEN + 16];
  link_addr_port(link, where, sizeof where);
  /* A detail longer than buf is cut: it is for logs and votes. */
  if (snprintf(buf, len, "%s%s%s: %s", link->addr_errs, link->addr_errs[0] != '\0' ? "; " : "",
               where, detail) >= (int)len)
    return;
}

static void connect_timer_cb(tb_timer_t *timer) {
  link_t *link = timer->data;
  if (link->state != LINK_CONNECTING)
    return;
  uint32_t timeout_ms = *link->cfg.connect_timeout_ms;
  if (link->awaiting_lookup) {
    /* The lookup goes on; the next attempt waits for it. */
    char what[64];
    snprintf(what, sizeof what, "name lookup timed out after %u ms", timeout_ms);
    link_fail(link, REDLOCK_LOG_WARN, what, NULL);
    return;
  }
  char no_answer[64], detail[sizeof link->addr_errs + 96];
  snprintf(no_answer, sizeof no_answer, "no answer within %u ms", timeout_ms);
  link_attempt_detail(link, no_answer, detail, sizeof detail);
  /* A server that took the TCP connection but never finished TLS is a
   * failed handshake, counted as one, not a connect that timed out. */
  int tls_stalled = link->ac != NULL && conn_tls_handshaking(link->ac);
  if (tls_stalled)
    link_report(link, LINK_EV_TLS_FAILURE, 0, NULL, NULL);
  link_fail(link, REDLOCK_LOG_WARN, tls_stalled ? "TLS handshake timed out" : "connect timed out",
            detail);
}

/* The address being tried failed to connect (why): on to the next one of
 * the name's, if any is left.  1 when another is being tried. */
static int link_try_next(link_t *link, const char *why) {
  if (link->addr_next >= link->addrs.n)
    return 0;
  char detail[sizeof link->addr_errs];
  link_attempt_detail(link, why, detail, sizeof detail);
  memcpy(link->addr_errs, detail, sizeof detail);
  log_write(link->cfg.log, link->failures == 0 ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
            "%s %s: cannot connect: %s; trying its next address", link_role(link),
            link->cfg.addr->label, detail);
  link_open_next(link);
  return 1;
}

static void on_connect(const redisAsyncContext *ac, int status) {
  link_t *link = ac->data;
  if (link == NULL || link->ac != ac || status == REDIS_OK)
    return;
  /* hiredis frees the context after this callback returns. */
  char why[256], detail[sizeof why + sizeof link->addr_errs];
  snprintf(why, sizeof why, "%s", conn_error(ac));
  int tls_failed = conn_tls_unfinished(ac);
  if (tls_failed)
    link_report(link, LINK_EV_TLS_FAILURE, 0, NULL, NULL);
  ((redisAsyncContext *)ac)->data = NULL;
  link->ac = NULL;
  if (!tls_failed && link_try_next(link, why))
    return;
  link_attempt_detail(link, why, detail, sizeof detail);
  link_fail(link, REDLOCK_LOG_WARN, "cannot connect", detail);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  link_t *link = ac->data;
  (void)status;
  if (link == NULL || link->ac != ac)
    return;
  /* hiredis frees the context after this callback returns. */
  char detail[256];
  snprintf(detail, sizeof detail, "%s", conn_error(ac));
  if (link->state != LINK_UP && conn_tls_unfinished(ac))
    link_report(link, LINK_EV_TLS_FAILURE, 0, NULL, NULL);
  link->ac = NULL;
  link_fail(link, REDLOCK_LOG_WARN,
            link->state == LINK_UP ? "connection lost" : "connection closed during handshake",
            detail);
}

static void link_up(link_t *link) {
  tb_timer_stop(&link->timer);
  link->state = LINK_UP;
  link->up_ns = tb_now_ns(link->cfg.tb);
  link_report(link, LINK_EV_UP, 0, NULL, NULL);
}

void link_replied(link_t *link) {
  if (link->state == LINK_CONNECTING && link->ac != NULL && link->steps_left == 0)
    link_up(link);
}

/* Every handshake reply: it belongs to the current attempt only if it came
 * on the current context; an error reply or a failed check fails the
 * attempt (wrong credentials or a misconfigured server will not fix
 * themselves: ERROR). */
static void step_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  link_step_t *step = privdata;
  link_t *link = step->link;
  const redisReply *reply = r;
  if (link->ac != ac || link->state != LINK_CONNECTING || reply == NULL)
    return;
  const char *why = NULL;
  if (reply->type != REDIS_REPLY_ERROR || step->check_errors)
    why = step->check != NULL ? step->check(link->cfg.arg, reply) : NULL;
  if (reply->type == REDIS_REPLY_ERROR && (why != NULL || !step->check_errors)) {
    char what[64];
    snprintf(what, sizeof what, "%s refused", step->name);
    link_fail(link, REDLOCK_LOG_ERROR, what, reply->str);
    return;
  }
  if (why != NULL) {
    link_fail(link, REDLOCK_LOG_ERROR, why, NULL);
    return;
  }
  if (--link->steps_left == 0)
    link_up(link);
}

/* The next free step, for `name` (NULL when the attempt has as many as it may). */
static link_step_t *link_next_step(link_t *link, const char *name, link_step_fn check) {
  if (link->n_steps == LINK_MAX_STEPS)
    return NULL;
  link_step_t *step = &link->steps[link->n_steps];
  *step = (link_step_t){.link = link, .name = name, .check = check};
  return step;
}

static status_t link_vstep(link_t *link, const char *name, link_step_fn check, int check_errors,
                           const char *fmt, va_list ap) {
  if (link->ac == NULL)
    return ST_EIO;
  link_step_t *step = link_next_step(link, name, check);
  if (step == NULL)
    return ST_EINVAL;
  step->check_errors = check_errors;
  if (redisvAsyncCommand(link->ac, step_reply_cb, step, fmt, ap) != REDIS_OK)
    return ST_EIO;
  link->n_steps++;
  link->steps_left++;
  return ST_OK;
}

status_t link_step(link_t *link, const char *name, link_step_fn check, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  status_t st = link_vstep(link, name, check, 0, fmt, ap);
  va_end(ap);
  return st;
}

status_t link_step_any(link_t *link, const char *name, link_step_fn check, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  status_t st = link_vstep(link, name, check, 1, fmt, ap);
  va_end(ap);
  return st;
}

/* The handshake is pipelined behind the TCP connect: one round trip. */
static status_t link_queue_handshake(link_t *link) {
  const node_addr_t *addr = link->cfg.addr;
  link_step_t *auth = link_next_step(link, "AUTH", NULL);
  unsigned queued = 0; /* 0 when it fails */
  status_t st =
      auth != NULL ? conn_queue_auth(link->ac, addr, step_reply_cb, auth, &queued) : ST_EINVAL;
  link->n_steps += queued;
  link->steps_left += queued;
  if (st == ST_OK && link->cfg.select_db && addr->db != 0)
    st = link_step(link, "SELECT", NULL, "SELECT %d", addr->db);
  if (st == ST_OK && link->cfg.handshake != NULL)
    st = link->cfg.handshake(link, link->cfg.arg);
  return st;
}

/* Looked up (or numeric from the start): connect to the next address of
 * link->addrs, queue the handshake. */
static void link_open_next(link_t *link) {
  char err[256], detail[sizeof err + sizeof link->addr_errs];
  int tls_failed;
  link->n_steps = 0;
  link->steps_left = 0;
  snprintf(link->ip, sizeof link->ip, "%s", link->addrs.addr[link->addr_next++]);
  link->has_ip_key =
      link->cfg.addr->kind == NODE_ADDR_TCP && resolve_key(link->ip, 0, &link->ip_key) == ST_OK;
  redisAsyncContext *ac = NULL;
  if (conn_open(&ac, link->cfg.addr, link->ip, link->io.tls, link->io.loop, link->io.flusher,
                link->cfg.tb, link, on_connect, on_disconnect, err, sizeof err,
                &tls_failed) != ST_OK) {
    if (tls_failed)
      link_report(link, LINK_EV_TLS_FAILURE, 0, NULL, NULL);
    else if (link_try_next(link, err))
      return;
    link_attempt_detail(link, err, detail, sizeof detail);
    link_fail(link, REDLOCK_LOG_WARN, "cannot connect", detail);
    return;
  }
  link->ac = ac;
  if (link->cfg.reply_caps != NULL)
    conn_set_caps(ac, link->cfg.reply_caps);
  if (link_queue_handshake(link) != ST_OK) {
    if (link->ac == ac && link->state == LINK_CONNECTING)
      link_fail(link, REDLOCK_LOG_ERROR, "cannot connect", "cannot queue the handshake");
    return;
  }
  /* (An owner with no step of its own is up at its first reply: link_replied.) */
}

static void on_resolved(void *arg, const char *error, const resolve_list_t *list) {
  link_t *link = arg;
  link->resolving = NULL;
  /* An answer that comes between attempts is dropped: the next attempt
   * looks the name up afresh. */
  if (link->state != LINK_CONNECTING || !link->awaiting_lookup)
    return;
  link->awaiting_lookup = 0;
  if (error != NULL) {
    link_fail(link, REDLOCK_LOG_WARN, "cannot resolve its host name", error);
    return;
  }
  link->addrs = *list;
  link_open_next(link);
}

/* One connection attempt: name lookup (every time: a server may come back
 * at a new address; a lookup still under way from an earlier attempt is
 * waited for instead), connect to each address in turn and handshake, all
 * within the connect timeout. */
void link_connect(link_t *link) {
  if (link->state != LINK_DOWN || !link->attached)
    return;
  const node_addr_t *addr = link->cfg.addr;
  link->state = LINK_CONNECTING;
  link->n_steps = 0;
  link->steps_left = 0;
  link->addrs.n = 0;
  link->addr_next = 0;
  link->addr_errs[0] = '\0';
  link->named = 0;
  link_report(link, LINK_EV_CONNECTING, 0, NULL, NULL);
  tb_timer_stop(&link->timer);
  int rc = tb_timer_start(&link->timer, connect_timer_cb, *link->cfg.connect_timeout_ms);
  if (rc != 0) {
    link_fail(link, REDLOCK_LOG_ERROR, "cannot start the connect timer", uv_strerror(rc));
    return;
  }
  if (addr->kind == NODE_ADDR_TCP && link->cfg.ip_from != NULL) {
    if (link->cfg.ip_from->ip[0] == '\0') {
      link_fail(link, REDLOCK_LOG_WARN, "cannot connect",
                "the master's host name is not resolved yet");
      return;
    }
    link->addrs.n = 1;
    snprintf(link->addrs.addr[0], sizeof link->addrs.addr[0], "%s", link->cfg.ip_from->ip);
    link_open_next(link);
    return;
  }
  link->named = addr->kind == NODE_ADDR_TCP && !resolve_is_numeric(addr->host);
  if (link->named) {
    link->awaiting_lookup = 1;
    if (link->resolving != NULL)
      return;
    char err[128];
    if (resolve_start(&link->resolving, link->io.loop, addr->host, on_resolved, link, err,
                      sizeof err) != ST_OK)
      link_fail(link, REDLOCK_LOG_WARN, "cannot resolve its host name", err);
    return;
  }
  link->addrs.n = 1;
  snprintf(link->addrs.addr[0], sizeof link->addrs.addr[0], "%s",
           addr->kind == NODE_ADDR_TCP ? addr->host : "");
  link_open_next(link);
}

static void owner_timer_cb(tb_timer_t *timer) {
  link_t *link = timer->data;
  if (link->state == LINK_UP)
    link_report(link, LINK_EV_TIMER, 0, NULL, NULL);
}

status_t link_arm(link_t *link, uint64_t ms) {
  if (link->state != LINK_UP)
    return ST_EINVAL;
  int rc = tb_timer_start(&link->timer, owner_timer_cb, ms);
  if (rc != 0) {
    log_write(link->cfg.log, REDLOCK_LOG_ERROR, "%s %s: cannot start its timer: %s",
              link_role(link), link->cfg.addr->label, uv_strerror(rc));
    return ST_EIO;
  }
  return ST_OK;
}

int link_drop_if_silent(link_t *link, uint64_t since_ns, uint64_t limit_ns, unsigned waiting) {
  uint64_t now_ns = tb_now_ns(link->cfg.tb); /* since_ns may have been set moments ago */
  if (link->state != LINK_UP || waiting == 0 || now_ns < since_ns || now_ns - since_ns < limit_ns)
    return 0;
  char detail[96];
  snprintf(detail, sizeof detail, "no reply for %llu ms with %u requests waiting",
           (unsigned long long)((now_ns - since_ns) / 1000000u), waiting);
  link_fail(link, REDLOCK_LOG_WARN, "master not answering; reconnecting", detail);
  return 1;
}

void link_forget_lookup(link_t *link) {
  if (link->resolving != NULL) {
    /* Not waited for: its thread frees the request whenever it returns. */
    resolve_abandon(link->resolving);
    link->resolving = NULL;
  }
  link->awaiting_lookup = 0;
}

void link_abandon(link_t *link) {
  if (link->state == LINK_CLOSED)
    return;
  link->state = LINK_CLOSED;
  if (link->resolving != NULL) {
    /* Not waited for: its thread frees the request whenever it returns. */
    resolve_abandon(link->resolving);
    link->resolving = NULL;
  }
  if (link->attached)
    tb_timer_stop(&link->timer);
  link_release_context(link);
}

static void link_timer_closed(tb_timer_t *timer) {
  link_t *link = timer->data;
  link_report(link, LINK_EV_CLOSED, 0, NULL, NULL);
}

void link_shutdown(link_t *link) {
  if (link->shut_down)
    return;
  link->shut_down = 1;
  link_abandon(link);
  /* A link never attached (its owner never started it) makes its timer now,
   * so that CLOSED still comes from the loop. */
  if (!link->attached) {
    if (tb_timer_init(link->cfg.tb, &link->timer, link) != 0) {
      link_report(link, LINK_EV_CLOSED, 0, NULL, NULL);
      return;
    }
    link->attached = 1;
  }
  tb_timer_close(&link->timer, link_timer_closed);
}
