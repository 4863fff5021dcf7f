/* errors.c: error names and messages, generated from REDLOCK_ERRNO_MAP, and
 * the run-time view of the header's constants (redlock_constant*), so that
 * bindings read them from the library instead of copying them. */
#include <stddef.h>
#include <string.h>

#include "redlock.h"

const char *redlock_strerror(int err) {
  switch (err) {
  case REDLOCK_OK:
    return "success";
#define REDLOCK__STRERROR(name, value, msg)                                                        \
  case REDLOCK_##name:                                                                             \
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
#define REDLOCK__ERRNAME(name, value, msg)                                                         \
  case REDLOCK_##name:                                                                             \
    return "REDLOCK_" #name;
    REDLOCK_ERRNO_MAP(REDLOCK__ERRNAME)
#undef REDLOCK__ERRNAME
  default:
    return "REDLOCK_UNKNOWN";
  }
}

/* The codes in map order: the table bindings iterate. */
static const int err_codes[] = {
#define REDLOCK__ERRCODE(name, value, msg) REDLOCK_##name,
    REDLOCK_ERRNO_MAP(REDLOCK__ERRCODE)
#undef REDLOCK__ERRCODE
};
#define N_ERR_CODES ((int)(sizeof err_codes / sizeof err_codes[0]))

int redlock_err_count(void) { return N_ERR_CODES; }

int redlock_err_code(int index) {
  return index >= 0 && index < N_ERR_CODES ? err_codes[index] : REDLOCK_OK;
}

const char *redlock_version(void) { return REDLOCK_VERSION_STRING; }

/* ---- constants by name ---------------------------------------------------------------- */

/* Each entry spells its macro once: the name is the stringized token, so the
 * table cannot name one constant and hold another's value.  (The empty
 * comments keep clang-format from packing the entries onto one line.) */
typedef struct {
  const char *name;
  int64_t value;
} int_const_t;

#define REDLOCK__CONST(macro) {#macro, (int64_t)(macro)},
#define REDLOCK__ERRCONST(name, value, msg) {"REDLOCK_" #name, (int64_t)REDLOCK_##name},
static const int_const_t int_consts[] = {
    REDLOCK__CONST(REDLOCK_VERSION_MAJOR)        /* */
    REDLOCK__CONST(REDLOCK_VERSION_MINOR)        /* */
    REDLOCK__CONST(REDLOCK_VERSION_PATCH)        /* */
    REDLOCK__CONST(REDLOCK_MAX_NODES)            /* */
    REDLOCK__CONST(REDLOCK_MAX_RESOURCE_LEN)     /* */
    REDLOCK__CONST(REDLOCK_MAX_PREFIX_LEN)       /* */
    REDLOCK__CONST(REDLOCK_MAX_MANY)             /* */
    REDLOCK__CONST(REDLOCK_MAX_SEM_LIMIT)        /* */
    REDLOCK__CONST(REDLOCK_MAX_OWNER)            /* */
    REDLOCK__CONST(REDLOCK_INSPECT_LOCK)         /* */
    REDLOCK__CONST(REDLOCK_INSPECT_SEMAPHORE)    /* */
    REDLOCK__CONST(REDLOCK_INSPECT_RWLOCK)       /* */
    REDLOCK__CONST(REDLOCK_INSPECT_ELECTION)     /* */
    REDLOCK__CONST(REDLOCK_OK)                   /* */
    REDLOCK_ERRNO_MAP(REDLOCK__ERRCONST)         /* */
    REDLOCK__CONST(REDLOCK_LOG_DEBUG)            /* */
    REDLOCK__CONST(REDLOCK_LOG_INFO)             /* */
    REDLOCK__CONST(REDLOCK_LOG_WARN)             /* */
    REDLOCK__CONST(REDLOCK_LOG_ERROR)            /* */
    REDLOCK__CONST(REDLOCK_LOST_EXPIRED)         /* */
    REDLOCK__CONST(REDLOCK_LOST_MAX_HOLD)        /* */
    REDLOCK__CONST(REDLOCK_LEADER_NONE)          /* */
    REDLOCK__CONST(REDLOCK_LEADER_HELD)          /* */
    REDLOCK__CONST(REDLOCK_LEADER_UNKNOWN)       /* */
    REDLOCK__CONST(REDLOCK_STATS_PROMETHEUS)     /* */
    REDLOCK__CONST(REDLOCK_STATS_JSON)           /* */
    REDLOCK__CONST(REDLOCK_CANCEL_LATE)          /* */
    REDLOCK__CONST(REDLOCK_EVENT_ACQUIRE)        /* */
    REDLOCK__CONST(REDLOCK_EVENT_WAIT)           /* */
    REDLOCK__CONST(REDLOCK_EVENT_EXTEND)         /* */
    REDLOCK__CONST(REDLOCK_EVENT_RENEW)          /* */
    REDLOCK__CONST(REDLOCK_EVENT_RELEASE)        /* */
    REDLOCK__CONST(REDLOCK_EVENT_LOST)           /* */
    REDLOCK__CONST(REDLOCK_EVENT_NODE_UP)        /* */
    REDLOCK__CONST(REDLOCK_EVENT_NODE_DOWN)      /* */
    REDLOCK__CONST(REDLOCK_EVENT_QUARANTINE_END) /* */
    REDLOCK__CONST(REDLOCK_EVENT_SEMAPHORE)      /* */
    REDLOCK__CONST(REDLOCK_EVENT_RWLOCK_READ)    /* */
    REDLOCK__CONST(REDLOCK_EVENT_RWLOCK_WRITE)   /* */
    REDLOCK__CONST(REDLOCK_EVENT_ELECTED)        /* */
};
#undef REDLOCK__ERRCONST
#undef REDLOCK__CONST

typedef struct {
  const char *name;
  const char *value;
} str_const_t;

#define REDLOCK__SCONST(macro) {#macro, macro},
static const str_const_t str_consts[] = {
    REDLOCK__SCONST(REDLOCK_RELEASE_CHANNEL_PREFIX) /* */
    REDLOCK__SCONST(REDLOCK_FENCE_KEY_PREFIX)       /* */
    REDLOCK__SCONST(REDLOCK_RESERVED_PREFIX)        /* */
    REDLOCK__SCONST(REDLOCK_VERSION_STRING)         /* */
};
#undef REDLOCK__SCONST

int redlock_constant(const char *name, int64_t *value) {
  if (name == NULL || value == NULL)
    return REDLOCK_EINVAL;
  for (size_t i = 0; i < sizeof int_consts / sizeof int_consts[0]; i++) {
    if (strcmp(int_consts[i].name, name) == 0) {
      *value = int_consts[i].value;
      return 0;
    }
  }
  return REDLOCK_EINVAL;
}

const char *redlock_constant_string(const char *name) {
  if (name == NULL)
    return NULL;
  for (size_t i = 0; i < sizeof str_consts / sizeof str_consts[0]; i++) {
    if (strcmp(str_consts[i].name, name) == 0)
      return str_consts[i].value;
  }
  return NULL;
}
