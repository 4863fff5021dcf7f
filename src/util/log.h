/* log.h: the log sink every module writes to.  The client builds one from
 * its options (callback, argument, level) and hands a pointer down to the
 * modules it composes (node, notify, round), so that none of them needs the
 * client to log.  Messages are formatted only when their level is enabled.
 *
 * A message that can repeat as fast as requests come (a storm of errors,
 * redirections, failed connects) goes through a log_limit_t: one line per
 * LOG_LIMIT_PERIOD_NS at its level, the ones between at DEBUG, and the next
 * line written says how many it stands for. */
#ifndef REDLOCK_LOG_H
#define REDLOCK_LOG_H

#include <stdint.h>

typedef struct log_sink {
  void (*cb)(int level, const char *msg, void *arg); /* NULL: logging off */
  void *arg;
  int level; /* the lowest REDLOCK_LOG_* level passed on */
} log_sink_t;

#define log_enabled(log, lvl) ((log)->cb != NULL && (lvl) >= (log)->level)

/* Formats (up to 511 bytes, truncated beyond) and passes the message on. */
void log_write(const log_sink_t *log, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The state of one rate-limited message (zeroed: nothing written yet). */
typedef struct log_limit {
  uint64_t last_ns;  /* when a line was last written at its level (0: never) */
  unsigned left_out; /* lines written at DEBUG since */
} log_limit_t;

#define LOG_LIMIT_PERIOD_NS 1000000000u /* one line a second at its level */

/* Writes the message at `level` when the last one was written at least a
 * period before now_ns (or never), with " (N more like this in the last S
 * s)" when N were left out since; else at DEBUG, counted.  Returns 1 when it
 * went at `level`. */
int log_limited(const log_sink_t *log, log_limit_t *limit, uint64_t now_ns, int level,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
