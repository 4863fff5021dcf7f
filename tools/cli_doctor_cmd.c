/* cli_doctor_cmd.c: commands on the synchronous connection to one master
 * under check, for every file of `redlock doctor` that asks the master
 * something: a lost connection becomes the voter's FAIL "connection" line
 * once, and the commands after it are not sent.  Also the reading of one
 * INFO field. */
#define _GNU_SOURCE

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <string.h>

#include "cli_doctor.h"

static void lost(dr_master_t *m) {
  if (!m->up)
    return;
  m->up = 0;
  dr_add(m->v, "connection", DR_FAIL, "lost: %s", cli_conn_io_why(&m->cc));
}

redisReply *dr_command(dr_master_t *m, const char *fmt, ...) {
  if (!m->up)
    return NULL;
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = redisvCommand(m->cc.c, fmt, ap);
  va_end(ap);
  if (r == NULL)
    lost(m);
  else
    m->cc.got_reply = 1;
  return r;
}

redisReply *dr_command_argv(dr_master_t *m, int argc, const char **argv, const size_t *lens) {
  if (!m->up)
    return NULL;
  redisReply *r = redisCommandArgv(m->cc.c, argc, argv, lens);
  if (r == NULL)
    lost(m);
  else
    m->cc.got_reply = 1;
  return r;
}

int dr_info_field(const char *info, const char *field, char *out, size_t size) {
  size_t flen = strlen(field);
  for (const char *p = info; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
      const char *v = p + flen + 1;
      size_t len = strcspn(v, "\r\n");
      cli_term_escape(v, len, out, size);
      return 1;
    }
  }
  return 0;
}
