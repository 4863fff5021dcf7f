/* cli_term.c: server text made safe for a terminal (cli_term.h). */
#include "cli_term.h"

#include <stdio.h>
#include <string.h>

void cli_term_escape(const char *s, size_t len, char *out, size_t size) {
  if (size == 0)
    return;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    int plain = ch == '\r' || ch == '\n' || (ch >= 0x20 && ch < 0x7f);
    if (o + (plain ? 1 : 4) >= size) /* room for it and the NUL */
      break;
    if (ch == '\r' || ch == '\n') {
      out[o++] = ' ';
    } else if (plain) {
      out[o++] = (char)ch;
    } else {
      snprintf(out + o, size - o, "\\x%02x", ch);
      o += 4;
    }
  }
  /* Servers end some errors with a space; the detail reads better without. */
  while (o > 0 && out[o - 1] == ' ')
    o--;
  out[o] = '\0';
}

const char *cli_term_str(const char *s, char *out, size_t size) {
  if (s == NULL)
    s = "";
  cli_term_escape(s, strlen(s), out, size);
  return out;
}

int cli_term_is_safe(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
    if (*p < 0x20 || *p >= 0x7f)
      return 0;
  return 1;
}
