/* errors.c: error names and messages, generated from REDLOCK_ERRNO_MAP. */
#include "redlock.h"

const char *redlock_strerror(int err) {
  switch (err) {
  case REDLOCK_OK:
    return "success";
#define REDLOCK__STRERROR(name, value, msg)                                                   \
  case REDLOCK_##name:                                                                        \
    return msg;
    REDLOCK_ERRNO_MAP(REDLOCK__STRERROR)
#undef REDLOCK__STRERROR
  default:
    return "unknown error";
  }
}

const char *redlock_err_name(int err) {
  switch (err) {
  case REDLOCK_OK:
    return "REDLOCK_OK";
#define REDLOCK__ERRNAME(name, value, msg)                                                    \
  case REDLOCK_##name:                                                                        \
    return "REDLOCK_" #name;
    REDLOCK_ERRNO_MAP(REDLOCK__ERRNAME)
#undef REDLOCK__ERRNAME
  default:
    return "REDLOCK_UNKNOWN";
  }
}

const char *redlock_version(void) { return REDLOCK_VERSION_STRING; }
