/* caps.c: a master's capabilities from its handshake replies (see caps.h). */
#include "proto/caps.h"

#include <hiredis/hiredis.h>
#include <string.h>

unsigned caps_from_version(int is_valkey, uint32_t version) {
  uint32_t set_ifeq_since = is_valkey ? CAPS_VERSION(8, 1, 0) : CAPS_VERSION(8, 4, 0);
  return version >= set_ifeq_since ? CAP_SET_IFEQ : 0u;
}

/* One entry of COMMAND INFO's reply: a description (an array whose first
 * element names the command), or nil / an empty array for a command the
 * server lacks. */
static int described(const redisReply *entry) {
  return entry != NULL && entry->type == REDIS_REPLY_ARRAY && entry->elements > 0;
}

unsigned caps_from_command_info(const redisReply *reply) {
  if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2)
    return 0;
  return (described(reply->element[0]) ? CAP_DELIFEQ : 0u) |
         (described(reply->element[1]) ? CAP_DELEX : 0u);
}

static int starts_with(const char *s, size_t len, const char *lit) {
  size_t n = strlen(lit);
  return len >= n && memcmp(s, lit, n) == 0;
}

int caps_no_scripts_error(const char *msg, size_t len) {
  return msg != NULL && (starts_with(msg, len, "ERR Could not find scripting engine") ||
                         starts_with(msg, len, "ERR unknown command"));
}

const char *caps_path(unsigned caps) {
  int direct = (caps & CAPS_RELEASE) != 0 && (caps & CAP_SET_IFEQ) != 0;
  if (caps & CAP_LUA)
    return direct ? "both" : "scripts";
  return direct ? "script-free commands" : "none";
}
