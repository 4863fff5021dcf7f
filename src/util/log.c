/* log.c: the log sink (see log.h). */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

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
