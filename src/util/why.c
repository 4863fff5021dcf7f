/* why.c: the names of vote_why_t (see why.h). */
#include "util/why.h"

static const char *const why_names[] = {
    [WHY_NONE] = "pending",
    [WHY_OK] = "OK",
    [WHY_REFUSED] = "refused",
    [WHY_DOWN] = "down",
    [WHY_BUSY] = "busy",
    [WHY_TIMEOUT] = "timeout",
    [WHY_DISCONNECTED] = "disconnected",
    [WHY_ERROR] = "error",
    [WHY_QUARANTINED] = "quarantined",
    [WHY_BADREPLY] = "bad-reply",
    [WHY_DUPLICATE] = "duplicate",
    [WHY_UNACKED] = "unacked",
    [WHY_NOTSUP] = "unsupported",
};

const char *why_name(unsigned why) {
  return why < sizeof why_names / sizeof why_names[0] ? why_names[why] : "?";
}
