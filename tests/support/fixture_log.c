/* fixture_log.c: per-client capture of the library's log (see fixture.h).
 * The callback runs on a client's loop thread while the test reads on the
 * main thread: a mutex guards each buffer.  The first FX_LOG_CAP bytes are
 * kept; what a test looks for (the first failure) is always early. */
#include "fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define FX_LOG_CAP (64 * 1024)

struct fx_log {
  pthread_mutex_t mu;
  size_t len;
  char buf[FX_LOG_CAP];
};

int fx_verbose(void) {
  return getenv("FX_VERBOSE") != NULL || getenv("SF_VERBOSE") != NULL ||
         getenv("IT_VERBOSE") != NULL;
}

void fx_log_cb(int level, const char *msg, void *arg) {
  fx_log_t *log = arg;
  static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  const char *name = level >= 0 && level <= 3 ? names[level] : "?";
  pthread_mutex_lock(&log->mu);
  size_t room = FX_LOG_CAP - log->len;
  if (room > 1) {
    int n = snprintf(log->buf + log->len, room, "[%s] %s\n", name, msg);
    if (n > 0)
      log->len += (size_t)n < room ? (size_t)n : room - 1;
  }
  pthread_mutex_unlock(&log->mu);
  if (fx_verbose())
    fprintf(stderr, "redlock[%p][%s] %s\n", arg, name, msg);
}

/* Runs fn on the log of slot (FX_ALL: of every slot that has one) with its
 * mutex held. */
static void each_log(fx_t *fx, int slot, void (*fn)(fx_log_t *log, void *arg), void *arg) {
  int first = slot == FX_ALL ? 0 : slot;
  int end = slot == FX_ALL ? FX_MAX_CLIENTS : slot + 1;
  for (int i = first; i < end; i++) {
    fx_log_t *log = fx->logs[i];
    if (log == NULL)
      continue;
    pthread_mutex_lock(&log->mu);
    fn(log, arg);
    pthread_mutex_unlock(&log->mu);
  }
}

typedef struct {
  const char *needle;
  unsigned count;
} count_arg_t;

static void count_in(fx_log_t *log, void *arg) {
  count_arg_t *c = arg;
  for (const char *p = strstr(log->buf, c->needle); p != NULL; p = strstr(p + 1, c->needle))
    c->count++;
}

unsigned fx_log_count(fx_t *fx, int slot, const char *needle) {
  count_arg_t c = {needle, 0};
  each_log(fx, slot, count_in, &c);
  return c.count;
}

int fx_log_contains(fx_t *fx, int slot, const char *needle) {
  return fx_log_count(fx, slot, needle) > 0;
}

static char text_copy[FX_MAX_CLIENTS * FX_LOG_CAP];
static size_t text_len;

static void append_text(fx_log_t *log, void *arg) {
  (void)arg;
  memcpy(text_copy + text_len, log->buf, log->len + 1);
  text_len += log->len;
}

const char *fx_log_text(fx_t *fx, int slot) {
  text_len = 0;
  text_copy[0] = '\0';
  each_log(fx, slot, append_text, NULL);
  return text_copy;
}

static void clear_log(fx_log_t *log, void *arg) {
  (void)arg;
  log->len = 0;
  log->buf[0] = '\0';
}

void fx_log_clear(fx_t *fx, int slot) { each_log(fx, slot, clear_log, NULL); }

typedef struct {
  fx_t *fx;
  int slot;
  const char *needle;
  unsigned count;
} log_wait_t;

static int log_pred(void *arg) {
  log_wait_t *w = arg;
  return fx_log_count(w->fx, w->slot, w->needle) >= w->count;
}

int fx_wait_log(fx_t *fx, int slot, const char *needle, int timeout_ms) {
  return fx_wait_log_count(fx, slot, needle, 1, timeout_ms);
}

int fx_wait_log_count(fx_t *fx, int slot, const char *needle, unsigned count, int timeout_ms) {
  log_wait_t w = {fx, slot, needle, count};
  return rh_wait_until(log_pred, &w, timeout_ms);
}

void fx_assert_saw_restart(fx_t *fx, int slot, size_t server, unsigned restarts) {
  char label[64], needle[96];
  fx_label(fx->servers[server], label, sizeof label);
  snprintf(needle, sizeof needle, "master %s restarted", label);
  if (!fx_wait_log_count(fx, slot, needle, restarts, 5000))
    fail_msg("client %d did not see restart %u of %s; log:\n%s", slot, restarts, label,
             fx_log_text(fx, slot));
}

int fx_log_master_troubled(fx_t *fx, int slot, rh_server_t *s) {
  static const char *const troubles[] = {"no reply", "master not answering", "connection",
                                         "cannot connect", "connect timed out"};
  char needle[128];
  for (size_t i = 0; i < sizeof troubles / sizeof troubles[0]; i++) {
    snprintf(needle, sizeof needle, "master 127.0.0.1:%d: %s", rh_server_port(s), troubles[i]);
    if (fx_log_contains(fx, slot, needle))
      return 1;
  }
  return 0;
}

/* Used by fixture_client.c, which owns the slots. */
fx_log_t *fx_log_new(void);
void fx_log_free(fx_log_t *log);

fx_log_t *fx_log_new(void) {
  fx_log_t *log = calloc(1, sizeof *log);
  if (log != NULL)
    pthread_mutex_init(&log->mu, NULL);
  return log;
}

void fx_log_free(fx_log_t *log) {
  if (log == NULL)
    return;
  pthread_mutex_destroy(&log->mu);
  free(log);
}
