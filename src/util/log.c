/* log.c: the log sink (see log.h). */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

#include "redlock.h"

void log_write(const log_sink_t *log, int level, const char *fmt, ...) {
  if (!log_enabled(log, level))
    return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  log->cb(level, msg, log->arg);
}

int log_limited(const log_sink_t *log, log_limit_t *limit, uint64_t now_ns, int level,
                const char *fmt, ...) {
  if (log->cb == NULL)
    return 0;
  int due = limit->last_ns == 0 || now_ns - limit->last_ns >= LOG_LIMIT_PERIOD_NS;
  int out = due ? level : REDLOCK_LOG_DEBUG;
  if (!log_enabled(log, out)) {
    if (!due)
      limit->left_out++;
    return 0;
  }
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (due && limit->left_out > 0 && n >= 0 && (size_t)n < sizeof msg) {
    /* Seconds since the last line at its level, to the nearest (at least 1). */
    unsigned long long secs = (now_ns - limit->last_ns + 500000000u) / 1000000000u;
    if (secs == 0)
      secs = 1;
    snprintf(msg + n, sizeof msg - (size_t)n, " (%u more like this in the last %llu s)",
             limit->left_out, secs);
  }
  if (due) {
    limit->last_ns = now_ns;
    limit->left_out = 0;
  } else {
    limit->left_out++;
  }
  log->cb(out, msg, log->arg);
  return due;
}
