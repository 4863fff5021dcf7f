/* resp.h: formatting commands in the Redis protocol (RESP arrays of bulk
 * strings), the same bytes as hiredis's redisFormatCommandArgv but without a
 * sprintf per argument or an allocation of its own: the caller sizes the
 * buffer first, so a round keeps its command in its own allocation. */
#ifndef REDLOCK_RESP_H
#define REDLOCK_RESP_H

#include <stddef.h>
#include <stdint.h>

/* Bytes needed for the command (no terminating NUL). */
size_t resp_command_len(int argc, const size_t *argv_len);
/* Writes exactly resp_command_len(argc, argv_len) bytes to out. */
void resp_write_command(char *out, int argc, const char *const *argv, const size_t *argv_len);

/* Decimal text of v into buf (at least 21 bytes), NUL-terminated; returns
 * its length. */
size_t resp_u64_to_dec(uint64_t v, char *buf);

#endif
