/* status.h: the one status type the library's modules return to each other.
 * It holds every public error code (REDLOCK_ERRNO_MAP, with the same
 * values, so that a status reaches the application unchanged) and the few
 * that never leave the library: a voter that cannot take a request now (down,
 * or its queue full), which a round turns into that voter's verdict. */
#ifndef REDLOCK_STATUS_H
#define REDLOCK_STATUS_H

#include "redlock.h"

#define STATUS__ENUM(name, value, msg) ST_##name = value,
typedef enum {
  ST_OK = 0,
  REDLOCK_ERRNO_MAP(STATUS__ENUM)
  /* internal only */
  ST_DOWN = -100, /* a voter: not connected (or its handshake not done) */
  ST_BUSY = -101, /* a voter: its queue is full */
  /* not an error: a lost reason (the watch's bound reached) */
  ST_MAX_HOLD = REDLOCK_LOST_MAX_HOLD,
} status_t;
#undef STATUS__ENUM

#endif
