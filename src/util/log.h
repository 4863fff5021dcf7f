/* log.h: the log sink every module writes to.  The client builds one from
 * its options (callback, argument, level) and hands a pointer down to the
 * modules it composes (node, notify, round), so that none of them needs the
 * client to log.  Messages are formatted only when their level is enabled. */
#ifndef REDLOCK_LOG_H
#define REDLOCK_LOG_H

typedef struct log_sink {
  void (*cb)(int level, const char *msg, void *arg); /* NULL: logging off */
  void *arg;
  int level; /* the lowest REDLOCK_LOG_* level passed on */
} log_sink_t;

#define log_enabled(log, lvl) ((log)->cb != NULL && (lvl) >= (log)->level)

/* Formats (up to 511 bytes, truncated beyond) and passes the message on. */
void log_write(const log_sink_t *log, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
