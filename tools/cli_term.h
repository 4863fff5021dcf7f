/* cli_term.h: text from servers (replies, errors, ACL user names, INFO
 * fields) and from the library's log made safe for a terminal.  A reply
 * is the server's to choose: raw, an ESC byte in it would let whoever runs
 * (or poses as) a master move the cursor, rewrite earlier lines or set
 * the window title on the operator's terminal. */
#ifndef REDLOCK_CLI_TERM_H
#define REDLOCK_CLI_TERM_H

#include <stddef.h>

/* The len bytes of s into out (size bytes, NUL-terminated): CR and LF as
 * spaces, every other byte below 0x20, DEL and every byte above it as
 * \xNN; trailing spaces dropped.  What does not fit is cut off at a whole
 * character or escape. */
void cli_term_escape(const char *s, size_t len, char *out, size_t size);

/* The same for the NUL-terminated s (NULL: ""); returns out. */
const char *cli_term_str(const char *s, char *out, size_t size);

/* Non-zero when s (NUL-terminated) has nothing cli_term_escape changes. */
int cli_term_is_safe(const char *s);

#endif
